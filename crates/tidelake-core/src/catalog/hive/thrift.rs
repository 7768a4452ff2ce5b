//! Thrift's binary protocol, strict and unframed (the Hive Metastore's default transport), over
//! a dynamic value tree: the few HMS calls tidelake makes are encoded from, and decoded into,
//! [`Struct`]s of numbered fields rather than generated types.
//!
//! Invariants: a decoded struct keeps every field the server sent, those tidelake never reads
//! included, in their order, so a struct read, changed and sent back (an altered table or
//! database) loses nothing a newer metastore added; decoding never trusts a length beyond the
//! bytes received (a short buffer is [`Decoded::Incomplete`], a malformed one an error, never a
//! panic or a huge allocation) and never nests deeper than [`MAX_DEPTH`].

use std::collections::BTreeMap;

/// Thrift's wire types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool = 2,
    Byte = 3,
    Double = 4,
    I16 = 6,
    I32 = 8,
    I64 = 10,
    Binary = 11,
    Struct = 12,
    Map = 13,
    Set = 14,
    List = 15,
}

impl Kind {
    fn of(code: u8) -> Option<Kind> {
        Some(match code {
            2 => Kind::Bool,
            3 => Kind::Byte,
            4 => Kind::Double,
            6 => Kind::I16,
            8 => Kind::I32,
            10 => Kind::I64,
            11 => Kind::Binary,
            12 => Kind::Struct,
            13 => Kind::Map,
            14 => Kind::Set,
            15 => Kind::List,
            _ => return None,
        })
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

/// `TBinaryProtocol`'s strict message header: version 1 in the high bytes, the type below.
const VERSION_1: u32 = 0x8001_0000;
const VERSION_MASK: u32 = 0xffff_0000;
const CALL: u8 = 1;
const REPLY: u8 = 2;
const EXCEPTION: u8 = 3;
const STOP: u8 = 0;

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    put_i32(out, i32::try_from(n).unwrap_or(i32::MAX));
}

fn put_binary(out: &mut Vec<u8>, b: &[u8]) {
    put_len(out, b.len());
    out.extend_from_slice(b);
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Byte(b) => out.extend_from_slice(&b.to_be_bytes()),
        Value::Double(d) => out.extend_from_slice(&d.to_be_bytes()),
        Value::I16(i) => out.extend_from_slice(&i.to_be_bytes()),
        Value::I32(i) => put_i32(out, *i),
        Value::I64(i) => out.extend_from_slice(&i.to_be_bytes()),
        Value::Binary(b) => put_binary(out, b),
        Value::Struct(s) => put_struct(out, s),
        Value::Map(k, v, entries) => {
            out.push(*k as u8);
            out.push(*v as u8);
            put_len(out, entries.len());
            for (key, value) in entries {
                put_value(out, key);
                put_value(out, value);
            }
        }
        Value::Set(kind, items) | Value::List(kind, items) => {
            out.push(*kind as u8);
            put_len(out, items.len());
            for item in items {
                put_value(out, item);
            }
        }
    }
}

fn put_struct(out: &mut Vec<u8>, s: &Struct) {
    for (id, value) in &s.0 {
        out.push(value.kind() as u8);
        out.extend_from_slice(&id.to_be_bytes());
        put_value(out, value);
    }
    out.push(STOP);
}

fn encode_message(kind: u8, method: &str, seq: i32, body: &Struct) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&(VERSION_1 | u32::from(kind)).to_be_bytes());
    put_binary(&mut out, method.as_bytes());
    put_i32(&mut out, seq);
    put_struct(&mut out, body);
    out
}

/// The bytes of a call of `method` with `args` (the arguments struct, fields numbered as in
/// the IDL).
pub(crate) fn encode_call(method: &str, seq: i32, args: &Struct) -> Vec<u8> {
    encode_message(CALL, method, seq, args)
}

/// The bytes of a reply (a server's, for tests).
#[cfg(test)]
pub(crate) fn encode_reply(method: &str, seq: i32, result: &Struct) -> Vec<u8> {
    encode_message(REPLY, method, seq, result)
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

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Why decoding stopped: the buffer ended, or the bytes are not Thrift.
enum Stop {
    Short,
    Malformed(String),
}

type Read<T> = std::result::Result<T, Stop>;

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Read<&[u8]> {
        let end = self.pos.checked_add(n).ok_or(Stop::Short)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Stop::Short)?;
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Read<[u8; N]> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Read<u8> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Read<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    /// A collection size: never more items than bytes left (each takes at least one).
    fn size(&mut self) -> Read<usize> {
        let n = self.i32()?;
        let n = usize::try_from(n).map_err(|_| Stop::Malformed(format!("negative size {n}")))?;
        if n > self.buf.len() - self.pos {
            return Err(Stop::Short);
        }
        Ok(n)
    }

    fn kind(&mut self) -> Read<Kind> {
        let code = self.u8()?;
        Kind::of(code).ok_or_else(|| Stop::Malformed(format!("unknown Thrift type {code}")))
    }

    fn binary(&mut self) -> Read<Vec<u8>> {
        let n = self.size()?;
        Ok(self.take(n)?.to_vec())
    }

    fn value(&mut self, kind: Kind, depth: usize) -> Read<Value> {
        if depth > MAX_DEPTH {
            return Err(Stop::Malformed(format!(
                "values nested deeper than {MAX_DEPTH}"
            )));
        }
        Ok(match kind {
            Kind::Bool => Value::Bool(self.u8()? != 0),
            Kind::Byte => Value::Byte(i8::from_be_bytes(self.array()?)),
            Kind::Double => Value::Double(f64::from_be_bytes(self.array()?)),
            Kind::I16 => Value::I16(i16::from_be_bytes(self.array()?)),
            Kind::I32 => Value::I32(self.i32()?),
            Kind::I64 => Value::I64(i64::from_be_bytes(self.array()?)),
            Kind::Binary => Value::Binary(self.binary()?),
            Kind::Struct => Value::Struct(self.structure(depth + 1)?),
            Kind::Map => {
                let (k, v) = (self.kind()?, self.kind()?);
                let n = self.size()?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((self.value(k, depth + 1)?, self.value(v, depth + 1)?));
                }
                Value::Map(k, v, entries)
            }
            Kind::Set | Kind::List => {
                let element = self.kind()?;
                let n = self.size()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(element, depth + 1)?);
                }
                match kind {
                    Kind::Set => Value::Set(element, items),
                    _ => Value::List(element, items),
                }
            }
        })
    }

    fn structure(&mut self, depth: usize) -> Read<Struct> {
        let mut fields = Vec::new();
        loop {
            let code = self.u8()?;
            if code == STOP {
                return Ok(Struct(fields));
            }
            let kind = Kind::of(code)
                .ok_or_else(|| Stop::Malformed(format!("unknown Thrift type {code}")))?;
            let id = i16::from_be_bytes(self.array()?);
            fields.push((id, self.value(kind, depth)?));
        }
    }
}

/// One message: its type, method name, sequence number and body.
struct Message {
    kind: u8,
    name: Vec<u8>,
    seq: i32,
    body: Struct,
}

/// Decode the message at the start of `buf`: `None` if it is not all there yet.
fn decode_message(buf: &[u8]) -> Result<Option<(Message, usize)>, String> {
    let mut r = Reader { buf, pos: 0 };
    let read = (|| -> Read<Message> {
        let header = u32::from_be_bytes(r.array()?);
        if header & VERSION_MASK != VERSION_1 {
            return Err(Stop::Malformed(format!(
                "not a strict binary-protocol message (header {header:#x})"
            )));
        }
        Ok(Message {
            kind: (header & 0xff) as u8,
            name: r.binary()?,
            seq: r.i32()?,
            body: r.structure(0)?,
        })
    })();
    match read {
        Ok(message) => Ok(Some((message, r.pos))),
        Err(Stop::Short) => Ok(None),
        Err(Stop::Malformed(m)) => Err(m),
    }
}

/// Decode the reply to call `seq` of `method` from the start of `buf`; `Err` when the bytes
/// are not such a reply.
pub(crate) fn decode_reply(buf: &[u8], method: &str, seq: i32) -> Result<Decoded, String> {
    let Some((message, used)) = decode_message(buf)? else {
        return Ok(Decoded::Incomplete);
    };
    if message.name != method.as_bytes() || message.seq != seq {
        return Err(format!(
            "a reply to '{}' #{}, expected '{method}' #{seq}",
            String::from_utf8_lossy(&message.name),
            message.seq
        ));
    }
    let reply = match message.kind {
        REPLY => Reply::Result(message.body),
        // TApplicationException: 1: message, 2: type
        EXCEPTION => Reply::Failed(message.body.text(1).unwrap_or_default()),
        other => return Err(format!("message type {other} in a reply")),
    };
    Ok(Decoded::Done(reply, used))
}

/// Decode a call at the start of `buf` (a server's view, for tests): its method, sequence
/// number, arguments and length; `None` if it is not all there yet.
#[cfg(test)]
pub(crate) fn decode_call(buf: &[u8]) -> Option<(String, i32, Struct, usize)> {
    let (m, used) = decode_message(buf).ok()??;
    (m.kind == CALL).then(|| {
        (
            String::from_utf8_lossy(&m.name).into_owned(),
            m.seq,
            m.body,
            used,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(message_type: u8, body: &Struct) -> Vec<u8> {
        encode_message(message_type, "get_table_req", 7, body)
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
        let bytes = reply(REPLY, &body);
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
        let bytes = reply(REPLY, &body);
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
        let mut huge = reply(REPLY, &Struct::default());
        huge.truncate(huge.len() - 1);
        huge.extend_from_slice(&[11, 0, 0, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(
            decode_reply(&huge, "get_table_req", 7),
            Ok(Decoded::Incomplete)
        );
        let mut deep = reply(REPLY, &Struct::default());
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
        let bytes = reply(EXCEPTION, &body);
        assert_eq!(
            decode_reply(&bytes, "get_table_req", 7),
            Ok(Decoded::Done(
                Reply::Failed("Invalid method name: 'get_table_req'".into()),
                bytes.len()
            ))
        );
    }
}
