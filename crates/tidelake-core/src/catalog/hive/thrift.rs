//! Thrift's binary protocol, strict and unframed (the Hive Metastore's default transport), over
//! a dynamic value tree: the few HMS calls tidelake makes are encoded from, and decoded into,
//! [`Struct`]s of numbered fields rather than generated types. The wire encoding is the `thrift`
//! crate's (`TBinaryOutputProtocol` and `TBinaryInputProtocol`, strict, over in-memory buffers);
//! this module walks the tree onto its writes and builds the tree from its reads.
//!
//! Invariants: a decoded struct keeps every field the server sent, those tidelake never reads
//! included, in their order, so a struct read, changed and sent back (an altered table or
//! database) loses nothing a newer metastore added; decoding never trusts a length beyond the
//! bytes received (a short buffer is [`Decoded::Incomplete`], a malformed one an error, never a
//! panic or a huge allocation: the protocol's string and container limits are the buffer's
//! length, so a length past them, like the end of the buffer, means more bytes are needed) and
//! never nests deeper than [`MAX_DEPTH`].

use std::collections::BTreeMap;

use thrift::protocol::{
    field_id, TBinaryInputProtocol, TBinaryOutputProtocol, TFieldIdentifier, TInputProtocol,
    TListIdentifier, TMapIdentifier, TMessageIdentifier, TMessageType, TOutputProtocol,
    TSetIdentifier, TStructIdentifier, TType,
};
use thrift::{ProtocolError, ProtocolErrorKind, TConfiguration, TransportErrorKind};

/// Thrift's wire types, those a value can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Byte,
    Double,
    I16,
    I32,
    I64,
    Binary,
    Struct,
    Map,
    Set,
    List,
}

impl Kind {
    /// The kind of a wire type: an error for those no value has here (`uuid`, which HMS does not
    /// use, stop, void, utf7).
    fn of(ty: TType) -> thrift::Result<Kind> {
        Ok(match ty {
            TType::Bool => Kind::Bool,
            TType::I08 => Kind::Byte,
            TType::Double => Kind::Double,
            TType::I16 => Kind::I16,
            TType::I32 => Kind::I32,
            TType::I64 => Kind::I64,
            TType::String => Kind::Binary,
            TType::Struct => Kind::Struct,
            TType::Map => Kind::Map,
            TType::Set => Kind::Set,
            TType::List => Kind::List,
            other => {
                return Err(malformed(
                    ProtocolErrorKind::NotImplemented,
                    format!("a value of Thrift type {other}"),
                ))
            }
        })
    }
}

impl From<Kind> for TType {
    fn from(kind: Kind) -> TType {
        match kind {
            Kind::Bool => TType::Bool,
            Kind::Byte => TType::I08,
            Kind::Double => TType::Double,
            Kind::I16 => TType::I16,
            Kind::I32 => TType::I32,
            Kind::I64 => TType::I64,
            Kind::Binary => TType::String,
            Kind::Struct => TType::Struct,
            Kind::Map => TType::Map,
            Kind::Set => TType::Set,
            Kind::List => TType::List,
        }
    }
}

/// One Thrift value (strings are `Binary`: Thrift does not tell them apart on the wire).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Bool(bool),
    Byte(i8),
    Double(f64),
    I16(i16),
    I32(i32),
    I64(i64),
    Binary(Vec<u8>),
    Struct(Struct),
    Map(Kind, Kind, Vec<(Value, Value)>),
    Set(Kind, Vec<Value>),
    List(Kind, Vec<Value>),
}

impl Value {
    pub(crate) fn text(s: &str) -> Value {
        Value::Binary(s.as_bytes().to_vec())
    }

    pub(crate) fn texts<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
        Value::List(
            Kind::Binary,
            items.into_iter().map(|s| Value::text(s.as_ref())).collect(),
        )
    }

    pub(crate) fn text_map(map: &BTreeMap<String, String>) -> Value {
        Value::Map(
            Kind::Binary,
            Kind::Binary,
            map.iter()
                .map(|(k, v)| (Value::text(k), Value::text(v)))
                .collect(),
        )
    }

    pub(crate) fn structs(items: impl IntoIterator<Item = Struct>) -> Value {
        Value::List(Kind::Struct, items.into_iter().map(Value::Struct).collect())
    }

    fn kind(&self) -> Kind {
        match self {
            Value::Bool(_) => Kind::Bool,
            Value::Byte(_) => Kind::Byte,
            Value::Double(_) => Kind::Double,
            Value::I16(_) => Kind::I16,
            Value::I32(_) => Kind::I32,
            Value::I64(_) => Kind::I64,
            Value::Binary(_) => Kind::Binary,
            Value::Struct(_) => Kind::Struct,
            Value::Map(..) => Kind::Map,
            Value::Set(..) => Kind::Set,
            Value::List(..) => Kind::List,
        }
    }

    /// The strings of a `list<string>` (or set); empty for anything else.
    pub(crate) fn to_texts(&self) -> Vec<String> {
        match self {
            Value::List(_, items) | Value::Set(_, items) => {
                items.iter().filter_map(Value::as_text).collect()
            }
            _ => Vec::new(),
        }
    }

    fn as_text(&self) -> Option<String> {
        match self {
            Value::Binary(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// A Thrift struct: its fields by id, in the order they were set or received.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Struct(Vec<(i16, Value)>);

impl Struct {
    /// The struct of fields 1, 2, ... holding `values` in order (an argument list, or a request
    /// whose fields are all set).
    pub(crate) fn of(values: impl IntoIterator<Item = Value>) -> Struct {
        Struct(values.into_iter().zip(1..).map(|(v, id)| (id, v)).collect())
    }

    /// The struct with field `id` set to `value` (builder).
    pub(crate) fn with(mut self, id: i16, value: Value) -> Struct {
        self.set(id, value);
        self
    }

    pub(crate) fn set(&mut self, id: i16, value: Value) {
        match self.0.iter_mut().find(|(i, _)| *i == id) {
            Some(field) => field.1 = value,
            None => self.0.push((id, value)),
        }
    }

    /// The fields, by id.
    pub(crate) fn into_fields(self) -> Vec<(i16, Value)> {
        self.0
    }

    pub(crate) fn get(&self, id: i16) -> Option<&Value> {
        self.0.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }

    pub(crate) fn text(&self, id: i16) -> Option<String> {
        self.get(id).and_then(Value::as_text)
    }

    pub(crate) fn i32(&self, id: i16) -> Option<i32> {
        match self.get(id) {
            Some(Value::I32(v)) => Some(*v),
            _ => None,
        }
    }

    pub(crate) fn i64(&self, id: i16) -> Option<i64> {
        match self.get(id) {
            Some(Value::I64(v)) => Some(*v),
            _ => None,
        }
    }

    /// A `map<string,string>` field (empty when absent).
    pub(crate) fn text_map(&self, id: i16) -> BTreeMap<String, String> {
        match self.get(id) {
            Some(Value::Map(_, _, entries)) => entries
                .iter()
                .filter_map(|(k, v)| Some((k.as_text()?, v.as_text()?)))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    pub(crate) fn child(&self, id: i16) -> Option<&Struct> {
        match self.get(id) {
            Some(Value::Struct(s)) => Some(s),
            _ => None,
        }
    }

    /// A `list<struct>` field (empty when absent).
    pub(crate) fn children(&self, id: i16) -> Vec<&Struct> {
        match self.get(id) {
            Some(Value::List(_, items)) => items
                .iter()
                .filter_map(|v| match v {
                    Value::Struct(s) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

// ---- encoding --------------------------------------------------------------------------------

type Output = TBinaryOutputProtocol<Vec<u8>>;

/// A collection's size on the wire (no collection in memory has 2^31 items).
fn wire_size(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn write_value(out: &mut Output, v: &Value) -> thrift::Result<()> {
    match v {
        Value::Bool(b) => out.write_bool(*b),
        Value::Byte(b) => out.write_i8(*b),
        Value::Double(d) => out.write_double(*d),
        Value::I16(i) => out.write_i16(*i),
        Value::I32(i) => out.write_i32(*i),
        Value::I64(i) => out.write_i64(*i),
        Value::Binary(b) => out.write_bytes(b),
        Value::Struct(s) => write_struct(out, s),
        Value::Map(k, v, entries) => {
            let size = wire_size(entries.len());
            out.write_map_begin(&TMapIdentifier::new(TType::from(*k), TType::from(*v), size))?;
            for (key, value) in entries {
                write_value(out, key)?;
                write_value(out, value)?;
            }
            out.write_map_end()
        }
        Value::Set(kind, items) => {
            out.write_set_begin(&TSetIdentifier::new((*kind).into(), wire_size(items.len())))?;
            items.iter().try_for_each(|item| write_value(out, item))?;
            out.write_set_end()
        }
        Value::List(kind, items) => {
            out.write_list_begin(&TListIdentifier::new(
                (*kind).into(),
                wire_size(items.len()),
            ))?;
            items.iter().try_for_each(|item| write_value(out, item))?;
            out.write_list_end()
        }
    }
}

fn write_struct(out: &mut Output, s: &Struct) -> thrift::Result<()> {
    // the binary protocol writes no struct or field names
    out.write_struct_begin(&TStructIdentifier::new(""))?;
    for (id, value) in &s.0 {
        out.write_field_begin(&TFieldIdentifier::new::<_, String, _>(
            None,
            value.kind().into(),
            *id,
        ))?;
        write_value(out, value)?;
        out.write_field_end()?;
    }
    out.write_field_stop()?;
    out.write_struct_end()
}

fn encode_message(kind: TMessageType, method: &str, seq: i32, body: &Struct) -> Vec<u8> {
    let mut out = TBinaryOutputProtocol::with_config(
        Vec::with_capacity(256),
        true,
        TConfiguration::no_limits(),
    );
    out.write_message_begin(&TMessageIdentifier::new(method, kind, seq))
        .and_then(|()| write_struct(&mut out, body))
        .and_then(|()| out.write_message_end())
        // a `Vec` takes every byte, and without limits the protocol refuses only a field without
        // an id or a map without key and value types, which `write_struct` and `write_value`
        // always give
        .expect("encoding into memory without limits cannot fail");
    out.transport
}

/// The bytes of a call of `method` with `args` (the arguments struct, fields numbered as in
/// the IDL).
pub(crate) fn encode_call(method: &str, seq: i32, args: &Struct) -> Vec<u8> {
    encode_message(TMessageType::Call, method, seq, args)
}

/// The bytes of a reply (a server's, for tests).
#[cfg(test)]
pub(crate) fn encode_reply(method: &str, seq: i32, result: &Struct) -> Vec<u8> {
    encode_message(TMessageType::Reply, method, seq, result)
}

// ---- decoding --------------------------------------------------------------------------------

/// Nesting limit of decoded values (HMS structs nest a handful deep).
pub(crate) const MAX_DEPTH: usize = 64;

/// What the server answered to a call.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    /// The result struct: field 0 is the return value, any other field a declared exception.
    Result(Struct),
    /// A `TApplicationException` (unknown method, internal error): its message.
    Failed(String),
}

/// The outcome of decoding a buffer that may hold only the start of a reply.
#[derive(Debug, PartialEq)]
pub(crate) enum Decoded {
    /// The reply and how many bytes it took.
    Done(Reply, usize),
    /// More bytes are needed.
    Incomplete,
}

/// The protocol reading a buffer; its transport is what is left of the buffer.
type Input<'a> = TBinaryInputProtocol<&'a [u8]>;

fn malformed(kind: ProtocolErrorKind, message: String) -> thrift::Error {
    thrift::Error::Protocol(ProtocolError::new(kind, message))
}

/// Whether `e` means the buffer ends before the message does: a read past its end, or a string
/// or collection longer than the whole buffer (the protocol's limits, set to its length).
fn is_short(e: &thrift::Error) -> bool {
    match e {
        thrift::Error::Transport(e) => e.kind == TransportErrorKind::EndOfFile,
        thrift::Error::Protocol(e) => e.kind == ProtocolErrorKind::SizeLimit,
        _ => false,
    }
}

/// The elements of a set or list, and their kind.
fn read_items(
    input: &mut Input,
    ty: TType,
    size: i32,
    depth: usize,
) -> thrift::Result<(Kind, Vec<Value>)> {
    let kind = Kind::of(ty)?;
    // the protocol checked that `size` items could fit in the buffer
    let mut items = Vec::with_capacity(usize::try_from(size).unwrap_or_default());
    for _ in 0..size {
        items.push(read_value(input, kind, depth + 1)?);
    }
    Ok((kind, items))
}

fn read_value(input: &mut Input, kind: Kind, depth: usize) -> thrift::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(malformed(
            ProtocolErrorKind::DepthLimit,
            format!("values nested deeper than {MAX_DEPTH}"),
        ));
    }
    Ok(match kind {
        Kind::Bool => Value::Bool(input.read_bool()?),
        Kind::Byte => Value::Byte(input.read_i8()?),
        Kind::Double => Value::Double(input.read_double()?),
        Kind::I16 => Value::I16(input.read_i16()?),
        Kind::I32 => Value::I32(input.read_i32()?),
        Kind::I64 => Value::I64(input.read_i64()?),
        Kind::Binary => Value::Binary(input.read_bytes()?),
        Kind::Struct => Value::Struct(read_struct(input, depth + 1)?),
        Kind::Map => {
            let map = input.read_map_begin()?;
            // the binary protocol always reads both types
            let k = Kind::of(map.key_type.unwrap_or(TType::Void))?;
            let v = Kind::of(map.value_type.unwrap_or(TType::Void))?;
            let mut entries = Vec::with_capacity(usize::try_from(map.size).unwrap_or_default());
            for _ in 0..map.size {
                entries.push((
                    read_value(input, k, depth + 1)?,
                    read_value(input, v, depth + 1)?,
                ));
            }
            input.read_map_end()?;
            Value::Map(k, v, entries)
        }
        Kind::Set => {
            let set = input.read_set_begin()?;
            let (kind, items) = read_items(input, set.element_type, set.size, depth)?;
            input.read_set_end()?;
            Value::Set(kind, items)
        }
        Kind::List => {
            let list = input.read_list_begin()?;
            let (kind, items) = read_items(input, list.element_type, list.size, depth)?;
            input.read_list_end()?;
            Value::List(kind, items)
        }
    })
}

fn read_struct(input: &mut Input, depth: usize) -> thrift::Result<Struct> {
    input.read_struct_begin()?;
    let mut fields = Vec::new();
    loop {
        let field = input.read_field_begin()?;
        if field.field_type == TType::Stop {
            break;
        }
        let kind = Kind::of(field.field_type)?;
        fields.push((field_id(&field)?, read_value(input, kind, depth)?));
        input.read_field_end()?;
    }
    input.read_struct_end()?;
    Ok(Struct(fields))
}

/// Decode the message at the start of `buf`: its header, body and length; `None` if it is not
/// all there yet.
fn decode_message(buf: &[u8]) -> Result<Option<(TMessageIdentifier, Struct, usize)>, String> {
    let read = |input: &mut Input| -> thrift::Result<(TMessageIdentifier, Struct)> {
        let header = input.read_message_begin()?;
        let body = read_struct(input, 0)?;
        input.read_message_end()?;
        Ok((header, body))
    };
    // no string or collection is longer than the bytes received; nesting is limited by
    // `read_value`, over every collection and not only structs
    let limits = TConfiguration::builder()
        .max_message_size(Some(buf.len()))
        .max_string_size(Some(buf.len()))
        .max_frame_size(None)
        .max_recursion_depth(None)
        .build()
        .map_err(|e| e.to_string())?;
    let mut input = TBinaryInputProtocol::with_config(buf, true, limits);
    match read(&mut input) {
        Ok((header, body)) => Ok(Some((header, body, buf.len() - input.transport.len()))),
        Err(e) if is_short(&e) => Ok(None),
        Err(e) => Err(format!("a malformed Thrift message: {e}")),
    }
}

/// Decode the reply to call `seq` of `method` from the start of `buf`; `Err` when the bytes
/// are not such a reply.
pub(crate) fn decode_reply(buf: &[u8], method: &str, seq: i32) -> Result<Decoded, String> {
    let Some((header, body, used)) = decode_message(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    if header.name != method || header.sequence_number != seq {
        return Err(format!(
            "a reply to '{}' #{}, expected '{method}' #{seq}",
            header.name, header.sequence_number
        ));
    }
    let reply = match header.message_type {
        TMessageType::Reply => Reply::Result(body),
        // TApplicationException: 1: message, 2: type
        TMessageType::Exception => Reply::Failed(body.text(1).unwrap_or_default()),
        other => return Err(format!("a {other} message in a reply")),
    };
    Ok(Decoded::Done(reply, used))
}

/// Decode a call at the start of `buf` (a server's view, for tests): its method, sequence
/// number, arguments and length; `None` if it is not all there yet.
#[cfg(test)]
pub(crate) fn decode_call(buf: &[u8]) -> Option<(String, i32, Struct, usize)> {
    let (header, body, used) = decode_message(buf).ok()??;
    (header.message_type == TMessageType::Call).then_some((
        header.name,
        header.sequence_number,
        body,
        used,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(message_type: TMessageType, body: &Struct) -> Vec<u8> {
        encode_message(message_type, "get_table_req", 7, body)
    }

    /// A reply to `get_table_req` #7 written with the `thrift` crate's own protocol, not this
    /// module, holding values of every kind, and the result struct it holds.
    fn crate_written_reply() -> (Vec<u8>, Struct) {
        let mut out = TBinaryOutputProtocol::new(Vec::new(), true);
        let o: &mut dyn TOutputProtocol = &mut out;
        let field = |o: &mut dyn TOutputProtocol, ty, id| {
            o.write_field_begin(&TFieldIdentifier::new("f", ty, id))
        };
        let header = TMessageIdentifier::new("get_table_req", TMessageType::Reply, 7);
        (|| -> thrift::Result<()> {
            o.write_message_begin(&header)?;
            o.write_struct_begin(&TStructIdentifier::new("get_table_req_result"))?;
            field(o, TType::Struct, 0)?;
            o.write_struct_begin(&TStructIdentifier::new("Table"))?;
            field(o, TType::String, 1)?;
            o.write_string("t")?;
            field(o, TType::I32, 4)?;
            o.write_i32(-4)?;
            field(o, TType::Map, 9)?;
            o.write_map_begin(&TMapIdentifier::new(TType::String, TType::List, 1))?;
            o.write_string("k")?;
            o.write_list_begin(&TListIdentifier::new(TType::Double, 1))?;
            o.write_double(2.5)?;
            field(o, TType::Set, 99)?;
            o.write_set_begin(&TSetIdentifier::new(TType::Struct, 1))?;
            o.write_struct_begin(&TStructIdentifier::new("Unknown"))?;
            field(o, TType::Bool, 1)?;
            o.write_bool(true)?;
            field(o, TType::I08, 2)?;
            o.write_i8(-8)?;
            field(o, TType::I16, 3)?;
            o.write_i16(300)?;
            field(o, TType::I64, 4)?;
            o.write_i64(i64::MAX)?;
            o.write_field_stop()?;
            o.write_field_stop()?;
            o.write_field_stop()?;
            o.write_message_end()
        })()
        .unwrap();
        let unknown = Struct::default()
            .with(1, Value::Bool(true))
            .with(2, Value::Byte(-8))
            .with(3, Value::I16(300))
            .with(4, Value::I64(i64::MAX));
        let list = Value::List(Kind::Double, vec![Value::Double(2.5)]);
        let table = Struct::default()
            .with(1, Value::text("t"))
            .with(4, Value::I32(-4))
            .with(
                9,
                Value::Map(Kind::Binary, Kind::List, vec![(Value::text("k"), list)]),
            )
            .with(99, Value::Set(Kind::Struct, vec![Value::Struct(unknown)]));
        (
            out.transport,
            Struct::default().with(0, Value::Struct(table)),
        )
    }

    #[test]
    fn messages_of_the_thrift_crate_round_trip() {
        let (bytes, result) = crate_written_reply();
        assert_eq!(
            decode_reply(&bytes, "get_table_req", 7),
            Ok(Decoded::Done(Reply::Result(result.clone()), bytes.len()))
        );
        assert_eq!(encode_reply("get_table_req", 7, &result), bytes);
        // and the crate reads the calls this module writes
        let call = encode_call("get_all_tables", 3, &Struct::of([Value::text("db")]));
        let mut input = TBinaryInputProtocol::new(&call[..], true);
        let header = input.read_message_begin().unwrap();
        assert_eq!(
            header,
            TMessageIdentifier::new("get_all_tables", TMessageType::Call, 3)
        );
        input.read_struct_begin().unwrap();
        let field = input.read_field_begin().unwrap();
        assert_eq!((field.field_type, field.id), (TType::String, Some(1)));
        assert_eq!(input.read_string().unwrap(), "db");
    }

    #[test]
    fn a_truncated_message_is_incomplete() {
        let (bytes, _) = crate_written_reply();
        for cut in 0..bytes.len() {
            assert_eq!(
                decode_reply(&bytes[..cut], "get_table_req", 7),
                Ok(Decoded::Incomplete),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn structs_round_trip_with_every_field_kept() {
        let nested = Struct::default()
            .with(1, Value::text("cols"))
            .with(2, Value::Double(1.5))
            .with(3, Value::I16(-3))
            .with(4, Value::Byte(-1));
        let table = Struct::default()
            .with(1, Value::text("t"))
            .with(4, Value::I32(1_700_000_000))
            .with(7, Value::Struct(nested.clone()))
            .with(8, Value::structs([nested.clone(), Struct::default()]))
            .with(
                9,
                Value::text_map(&BTreeMap::from([("k".into(), "v".into())])),
            )
            .with(14, Value::Bool(true))
            .with(20, Value::Set(Kind::I64, vec![Value::I64(i64::MIN)]))
            .with(21, Value::texts(["a", "b"]));
        let body = Struct::default().with(0, Value::Struct(table.clone()));
        let bytes = reply(TMessageType::Reply, &body);
        let Ok(Decoded::Done(Reply::Result(got), used)) = decode_reply(&bytes, "get_table_req", 7)
        else {
            panic!("not decoded");
        };
        assert_eq!(used, bytes.len());
        assert_eq!(got, body);
        let t = got.child(0).unwrap();
        assert_eq!(t.text(1).as_deref(), Some("t"));
        assert_eq!(t.i32(4), Some(1_700_000_000));
        assert_eq!(t.get(21).unwrap().to_texts(), ["a", "b"]);
        assert_eq!(t.text_map(9)["k"], "v");
        assert_eq!(t.children(8).len(), 2);
        assert_eq!(t.child(7), Some(&nested));
        // changed and sent back: the fields tidelake does not read are still there
        let mut changed = t.clone();
        let mut sd = changed.child(7).cloned().unwrap_or_default();
        sd.set(1, Value::text("other"));
        changed.set(7, Value::Struct(sd));
        changed.set(14, Value::Bool(false));
        assert_eq!(changed.get(20), t.get(20));
        assert_eq!(changed.child(7).unwrap().get(2), nested.get(2));
    }

    #[test]
    fn short_and_malformed_replies_are_told_apart() {
        let body = Struct::default().with(0, Value::texts(["db1", "db2"]));
        let bytes = reply(TMessageType::Reply, &body);
        for cut in 0..bytes.len() {
            assert_eq!(
                decode_reply(&bytes[..cut], "get_table_req", 7),
                Ok(Decoded::Incomplete),
                "cut at {cut}"
            );
        }
        assert!(decode_reply(&bytes, "get_all_tables", 7).is_err());
        assert!(decode_reply(&bytes, "get_table_req", 8).is_err());
        assert!(decode_reply(b"HTTP/1.1 400 Bad Request\r\n", "x", 1).is_err());
        // a size beyond the bytes received waits for more rather than allocating it
        let mut huge = reply(TMessageType::Reply, &Struct::default());
        huge.truncate(huge.len() - 1);
        huge.extend_from_slice(&[11, 0, 0, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(
            decode_reply(&huge, "get_table_req", 7),
            Ok(Decoded::Incomplete)
        );
        // a negative size, an unknown type
        for bad in [&[11, 0, 0, 0xff, 0xff, 0xff, 0xff][..], &[42, 0, 0]] {
            let mut malformed = reply(TMessageType::Reply, &Struct::default());
            malformed.truncate(malformed.len() - 1);
            malformed.extend_from_slice(bad);
            assert!(decode_reply(&malformed, "get_table_req", 7).is_err());
        }
        let mut deep = reply(TMessageType::Reply, &Struct::default());
        deep.truncate(deep.len() - 1);
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend_from_slice(&[12, 0, 1]);
        }
        assert!(decode_reply(&deep, "get_table_req", 7).is_err());
    }

    #[test]
    fn application_exceptions_carry_their_message() {
        let body = Struct::default()
            .with(1, Value::text("Invalid method name: 'get_table_req'"))
            .with(2, Value::I32(1));
        let bytes = reply(TMessageType::Exception, &body);
        assert_eq!(
            decode_reply(&bytes, "get_table_req", 7),
            Ok(Decoded::Done(
                Reply::Failed("Invalid method name: 'get_table_req'".into()),
                bytes.len()
            ))
        );
    }
}
