//! Static descriptions of the manifest record types ([`Field`], [`Ty`]) and the machinery
//! that reads and writes them: by-name resolution against a file's writer schema, an
//! untyped intermediate value ([`AvroValue`]), Java's writer schema JSON and the encoder.
//!
//! Reading mirrors Java's `FieldReaderFactory.RowReader`: writer fields are matched to ours
//! by name, unknown writer fields are skipped, fields the writer lacks read as null (a
//! required one is an error). The resolution is compiled once per file into a
//! [`RecordPlan`], so decoding a record does no name lookups.
//!
//! Writing mirrors Java's `AvroSchemaConverter`: root record
//! `org.apache.paimon.avro.generated.record`, a nested record named `<parent>_<field>`,
//! array items named like their field, nullable = `["null", T]` with `"default": null`.

use serde_json::{json, Value as Json};

use super::avro::{put_bytes, put_long, Container, ContainerWriter, Cursor};
use super::writer_schema::{Node, NodeId, WriterSchema, MAX_DEPTH};
use crate::error::{Error, Result};

/// An Avro type of a manifest field (nullability is on [`Field`] / array items).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    Int,
    Long,
    /// `long` with logical type `timestamp-millis`.
    TimestampMillis,
    String,
    Bytes,
    Array {
        item: &'static Ty,
        nullable_items: bool,
    },
    Record(&'static [Field]),
}

impl Ty {
    /// The Avro type name, for error messages.
    fn type_name(&self) -> &'static str {
        match self {
            Ty::Int => "int",
            Ty::Long | Ty::TimestampMillis => "long",
            Ty::String => "string",
            Ty::Bytes => "bytes",
            Ty::Array { .. } => "array",
            Ty::Record(_) => "record",
        }
    }
}

/// One field of a manifest record, in Java's writer order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    pub(crate) nullable: bool,
}

impl Field {
    pub(crate) const fn required(name: &'static str, ty: Ty) -> Field {
        Field {
            name,
            ty,
            nullable: false,
        }
    }
    pub(crate) const fn nullable(name: &'static str, ty: Ty) -> Field {
        Field {
            name,
            ty,
            nullable: true,
        }
    }
}

/// A decoded (or to-be-encoded) value, untyped; records hold their fields in [`Field`] order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AvroValue {
    Null,
    Int(i32),
    Long(i64),
    String(String),
    Bytes(Vec<u8>),
    Array(Vec<AvroValue>),
    Record(Vec<AvroValue>),
}

/// A Rust struct stored as an Avro record.
pub(crate) trait AvroRecord: Sized {
    /// The record's fields, in writer order.
    const FIELDS: &'static [Field];
    /// Builds the struct from its fields (consumed in [`Self::FIELDS`] order).
    fn from_fields(f: &mut Fields) -> Result<Self>;
    /// The values of [`Self::FIELDS`], in order.
    fn to_fields(&self) -> Vec<AvroValue>;
}

/// Most items reserved ahead from a count read from input (a forged count must not
/// trigger a huge allocation; vectors still grow as needed).
const RESERVE_LIMIT: usize = 1024;

/// How to read one writer value into an [`AvroValue`].
#[derive(Debug)]
enum Read {
    Int,
    Long,
    IntAsLong,
    String,
    Bytes,
    /// Writer union: `None` marks the null branch.
    Union(Vec<Option<Read>>),
    Array(Box<Read>),
    Record(RecordPlan),
}

#[derive(Debug)]
enum Step {
    /// Read writer field `node` into `slot`.
    Read {
        slot: usize,
        read: Read,
        node: NodeId,
    },
    Skip(NodeId),
}

/// A writer record resolved against one of our [`Field`] lists.
#[derive(Debug)]
struct RecordPlan {
    steps: Vec<Step>,
    slots: usize,
}

struct Compiler<'s> {
    schema: &'s WriterSchema,
    what: &'static str,
}

impl Compiler<'_> {
    fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(self.what, reason)
    }

    fn record(
        &self,
        node: NodeId,
        fields: &'static [Field],
        path: &str,
        depth: usize,
    ) -> Result<RecordPlan> {
        let Node::Record(writer_fields) = &self.schema.nodes[node] else {
            return Err(self.corrupt(format_args!("{path}: writer type is not a record")));
        };
        let mut seen = vec![false; fields.len()];
        let mut steps = Vec::with_capacity(writer_fields.len());
        for (name, wnode) in writer_fields {
            match fields.iter().position(|f| f.name == name) {
                Some(slot) => {
                    if std::mem::replace(&mut seen[slot], true) {
                        return Err(
                            self.corrupt(format_args!("{path}: field {name} appears twice"))
                        );
                    }
                    let read = self.value(
                        *wnode,
                        &fields[slot].ty,
                        &format!("{path}.{name}"),
                        depth + 1,
                    )?;
                    steps.push(Step::Read {
                        slot,
                        read,
                        node: *wnode,
                    });
                }
                None => steps.push(Step::Skip(*wnode)),
            }
        }
        for (f, seen) in fields.iter().zip(&seen) {
            if !seen && !f.nullable {
                return Err(self.corrupt(format_args!(
                    "{path}: writer schema lacks required field {}",
                    f.name
                )));
            }
        }
        Ok(RecordPlan {
            steps,
            slots: fields.len(),
        })
    }

    fn value(&self, node: NodeId, ty: &Ty, path: &str, depth: usize) -> Result<Read> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt(format_args!("{path}: schema nested too deeply")));
        }
        let wnode = &self.schema.nodes[node];
        if let Node::Union(branches) = wnode {
            let reads = branches
                .iter()
                .map(|b| match self.schema.nodes[*b] {
                    Node::Null => Ok(None),
                    _ => self.value(*b, ty, path, depth + 1).map(Some),
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Read::Union(reads));
        }
        let read = match (ty, wnode) {
            (Ty::Int, Node::Int) => Read::Int,
            (Ty::Long | Ty::TimestampMillis, Node::Long) => Read::Long,
            (Ty::Long | Ty::TimestampMillis, Node::Int) => Read::IntAsLong,
            (Ty::String, Node::String | Node::Bytes) => Read::String,
            (Ty::Bytes, Node::Bytes | Node::String) => Read::Bytes,
            (Ty::Array { item, .. }, Node::Array(witem)) => {
                Read::Array(Box::new(self.value(*witem, item, path, depth + 1)?))
            }
            (Ty::Record(fields), Node::Record(_)) => {
                Read::Record(self.record(node, fields, path, depth + 1)?)
            }
            _ => {
                return Err(self.corrupt(format_args!(
                    "{path}: writer type {} cannot be read as {}",
                    wnode.type_name(),
                    ty.type_name()
                )));
            }
        };
        Ok(read)
    }
}

impl RecordPlan {
    fn decode(
        &self,
        schema: &WriterSchema,
        cur: &mut Cursor<'_>,
        depth: usize,
    ) -> Result<Vec<AvroValue>> {
        let mut out = Vec::with_capacity(self.slots);
        out.resize_with(self.slots, || AvroValue::Null);
        for step in &self.steps {
            match step {
                Step::Read { slot, read, .. } => {
                    out[*slot] = read.decode(schema, cur, depth + 1)?
                }
                Step::Skip(node) => schema.skip(*node, cur, depth + 1)?,
            }
        }
        Ok(out)
    }

    /// [`Self::decode`], asking `probe` once the writer fields of every slot in
    /// `probe.slots` are read (or at the end, for those the writer lacks): `None` when it
    /// rejects the record, whose remaining fields are then skipped undecoded.
    fn decode_probed(
        &self,
        schema: &WriterSchema,
        cur: &mut Cursor<'_>,
        depth: usize,
        probe: &mut Probe<'_>,
    ) -> Result<Option<Vec<AvroValue>>> {
        let mut out = Vec::with_capacity(self.slots);
        out.resize_with(self.slots, || AvroValue::Null);
        let mut pending = probe.slots.len();
        let mut rejected = false;
        for step in &self.steps {
            match step {
                Step::Read { node, .. } if rejected => schema.skip(*node, cur, depth + 1)?,
                Step::Read { slot, read, .. } => {
                    let nested = probe.nested.as_mut().filter(|n| n.slot == *slot);
                    match (nested, read) {
                        (Some(nested), Read::Record(plan)) => {
                            match plan.decode_probed(schema, cur, depth + 2, &mut nested.probe)? {
                                Some(values) => out[*slot] = AvroValue::Record(values),
                                None => rejected = true,
                            }
                        }
                        _ => out[*slot] = read.decode(schema, cur, depth + 1)?,
                    }
                    if probe.slots.contains(slot) {
                        pending -= 1;
                        rejected = rejected || (pending == 0 && !(probe.keep)(&out));
                    }
                }
                Step::Skip(node) => schema.skip(*node, cur, depth + 1)?,
            }
        }
        if pending > 0 && !rejected {
            rejected = !(probe.keep)(&out);
        }
        Ok((!rejected).then_some(out))
    }
}

/// A test of some fields of a record ([`read_records_probed`]), asked before the rest is
/// decoded.
pub(crate) struct Probe<'a> {
    /// The slots (indexes into the record's [`Field`]s) the test looks at.
    pub(crate) slots: &'static [usize],
    /// Whether the record is kept, given its values so far (fields not read yet are null).
    pub(crate) keep: &'a mut dyn FnMut(&[AvroValue]) -> bool,
    /// A probe of one nested record field, asked while that field is decoded: when it rejects
    /// the nested record, the record holding it is rejected too.
    pub(crate) nested: Option<NestedProbe<'a>>,
}

/// The [`Probe`] of the nested record in slot `slot` of a record.
pub(crate) struct NestedProbe<'a> {
    pub(crate) slot: usize,
    pub(crate) probe: Box<Probe<'a>>,
}

impl Read {
    /// The plan of a root read as a record, directly or as the record branch of a nullable
    /// root (`["null", record]`).
    fn root_record(&self) -> Option<&RecordPlan> {
        match self {
            Read::Record(plan) => Some(plan),
            Read::Union(branches) => match branches.as_slice() {
                [None, Some(Read::Record(plan))] | [Some(Read::Record(plan)), None] => Some(plan),
                _ => None,
            },
            _ => None,
        }
    }

    /// Reads what precedes a root record's fields (a nullable root's union index): whether a
    /// record follows (false: a null root).
    fn enter_root(&self, cur: &mut Cursor<'_>) -> Result<bool> {
        let Read::Union(branches) = self else {
            return Ok(true);
        };
        let i = cur.long()?;
        match usize::try_from(i).ok().and_then(|i| branches.get(i)) {
            Some(branch) => Ok(branch.is_some()),
            None => Err(cur.corrupt(format_args!("union index {i} out of range"))),
        }
    }

    fn decode(
        &self,
        schema: &WriterSchema,
        cur: &mut Cursor<'_>,
        depth: usize,
    ) -> Result<AvroValue> {
        Ok(match self {
            Read::Int => AvroValue::Int(cur.int()?),
            Read::Long => AvroValue::Long(cur.long()?),
            Read::IntAsLong => AvroValue::Long(i64::from(cur.int()?)),
            Read::String => AvroValue::String(cur.string()?),
            Read::Bytes => AvroValue::Bytes(cur.bytes()?.to_vec()),
            Read::Union(branches) => {
                let i = cur.long()?;
                match usize::try_from(i).ok().and_then(|i| branches.get(i)) {
                    Some(None) => AvroValue::Null,
                    Some(Some(read)) => read.decode(schema, cur, depth + 1)?,
                    None => return Err(cur.corrupt(format_args!("union index {i} out of range"))),
                }
            }
            Read::Array(item) => {
                let mut items = Vec::new();
                loop {
                    let n = cur.block_count()?;
                    if n == 0 {
                        break;
                    }
                    items.reserve(n.min(RESERVE_LIMIT));
                    for _ in 0..n {
                        let before = cur.position();
                        items.push(item.decode(schema, cur, depth + 1)?);
                        if cur.position() == before {
                            return Err(cur.corrupt("array item occupies no bytes"));
                        }
                    }
                }
                AvroValue::Array(items)
            }
            Read::Record(plan) => AvroValue::Record(plan.decode(schema, cur, depth + 1)?),
        })
    }
}

/// Decodes every record of a container whose records are `T`s.
pub(crate) fn read_records<T: AvroRecord>(bytes: &[u8], what: &'static str) -> Result<Vec<T>> {
    read_records_probed(bytes, what, None)
}

/// [`read_records`] of the records `probe` keeps: a rejected record's other fields are
/// skipped, not decoded (they are still checked to be well formed).
pub(crate) fn read_records_probed<T: AvroRecord>(
    bytes: &[u8],
    what: &'static str,
    mut probe: Option<Probe<'_>>,
) -> Result<Vec<T>> {
    let mut container = Container::open(bytes, what)?;
    let schema = WriterSchema::parse(container.schema, what)?;
    // Older Java writers made the root a nullable record (`["null", record]`); a union
    // root is resolved like any other union.
    let root = Compiler {
        schema: &schema,
        what,
    }
    .value(schema.root, &Ty::Record(T::FIELDS), "record", 0)?;
    let mut out = Vec::new();
    while let Some((count, data)) = container.next_block()? {
        let mut cur = Cursor::new(&data, what);
        out.reserve(count.min(RESERVE_LIMIT));
        for _ in 0..count {
            let values = match (&mut probe, root.root_record()) {
                (Some(probe), Some(plan)) => match root.enter_root(&mut cur)? {
                    false => None,
                    true => match plan.decode_probed(&schema, &mut cur, 1, probe)? {
                        Some(values) => Some(values),
                        None => continue,
                    },
                },
                _ => match root.decode(&schema, &mut cur, 0)? {
                    AvroValue::Record(values) => Some(values),
                    _ => None,
                },
            };
            let Some(values) = values else {
                return Err(cur.corrupt("null where a record is required"));
            };
            out.push(T::from_fields(&mut Fields::new(T::FIELDS, values, what))?);
        }
        if cur.remaining() != 0 {
            return Err(cur.corrupt("trailing bytes after the block's records"));
        }
    }
    Ok(out)
}

/// Encodes `records` with the writer schema of `fields` (a prefix of `T::FIELDS`; the
/// values of the omitted fields must be null).
pub(crate) fn write_records<T: AvroRecord>(
    records: &[T],
    fields: &'static [Field],
    codec: super::Codec,
) -> Result<Vec<u8>> {
    let mut w = ContainerWriter::new(&schema_json(fields), codec);
    for r in records {
        encode_record(w.record_buf(), fields, &r.to_fields())?;
        w.record_done()?;
    }
    w.finish()
}

fn encode_record(out: &mut Vec<u8>, fields: &[Field], values: &[AvroValue]) -> Result<()> {
    let (head, rest) = values.split_at(fields.len().min(values.len()));
    if head.len() != fields.len() || rest.iter().any(|v| *v != AvroValue::Null) {
        return Err(Error::Invalid(
            "record values do not match the writer schema".into(),
        ));
    }
    for (f, v) in fields.iter().zip(head) {
        encode_value(out, f.name, &f.ty, f.nullable, v)?;
    }
    Ok(())
}

fn encode_value(
    out: &mut Vec<u8>,
    name: &str,
    ty: &Ty,
    nullable: bool,
    v: &AvroValue,
) -> Result<()> {
    if nullable {
        if *v == AvroValue::Null {
            put_long(out, 0);
            return Ok(());
        }
        put_long(out, 1);
    }
    match (ty, v) {
        (Ty::Int, AvroValue::Int(i)) => put_long(out, i64::from(*i)),
        (Ty::Long | Ty::TimestampMillis, AvroValue::Long(l)) => put_long(out, *l),
        (Ty::String, AvroValue::String(s)) => put_bytes(out, s.as_bytes()),
        (Ty::Bytes, AvroValue::Bytes(b)) => put_bytes(out, b),
        (
            Ty::Array {
                item,
                nullable_items,
            },
            AvroValue::Array(items),
        ) => {
            if !items.is_empty() {
                put_long(out, items.len() as i64);
                for it in items {
                    encode_value(out, name, item, *nullable_items, it)?;
                }
            }
            put_long(out, 0);
        }
        (Ty::Record(fields), AvroValue::Record(values)) => encode_record(out, fields, values)?,
        _ => {
            return Err(Error::Invalid(format!(
                "value of {name} does not match its Avro type {}",
                ty.type_name()
            )))
        }
    }
    Ok(())
}

/// Java's writer schema JSON for a root record with `fields`.
pub(crate) fn schema_json(fields: &[Field]) -> String {
    json!({
        "type": "record",
        "name": "record",
        "namespace": "org.apache.paimon.avro.generated",
        "fields": fields_json(fields, "record"),
    })
    .to_string()
}

fn fields_json(fields: &[Field], row_name: &str) -> Json {
    Json::Array(
        fields
            .iter()
            .map(|f| {
                let ty = type_json(&f.ty, f.nullable, &format!("{row_name}_{}", f.name));
                if f.nullable {
                    json!({"name": f.name, "type": ty, "default": null})
                } else {
                    json!({"name": f.name, "type": ty})
                }
            })
            .collect(),
    )
}

fn type_json(ty: &Ty, nullable: bool, row_name: &str) -> Json {
    let plain = match ty {
        Ty::Int => json!("int"),
        Ty::Long => json!("long"),
        Ty::TimestampMillis => json!({"type": "long", "logicalType": "timestamp-millis"}),
        Ty::String => json!("string"),
        Ty::Bytes => json!("bytes"),
        Ty::Array {
            item,
            nullable_items,
        } => {
            json!({"type": "array", "items": type_json(item, *nullable_items, row_name)})
        }
        Ty::Record(fields) => {
            json!({"type": "record", "name": row_name, "fields": fields_json(fields, row_name)})
        }
    };
    if nullable {
        json!(["null", plain])
    } else {
        plain
    }
}

/// The fields of one decoded record, consumed in order by [`AvroRecord::from_fields`].
pub(crate) struct Fields {
    fields: &'static [Field],
    values: std::vec::IntoIter<AvroValue>,
    index: usize,
    what: &'static str,
}

impl Fields {
    fn new(fields: &'static [Field], values: Vec<AvroValue>, what: &'static str) -> Self {
        Fields {
            fields,
            values: values.into_iter(),
            index: 0,
            what,
        }
    }

    fn bad(&self, reason: impl std::fmt::Display) -> Error {
        let name = self
            .fields
            .get(self.index.saturating_sub(1))
            .map_or("?", |f| f.name);
        Error::corrupt(self.what, format_args!("field {name}: {reason}"))
    }

    fn next(&mut self) -> Result<AvroValue> {
        self.index += 1;
        self.values.next().ok_or_else(|| self.bad("missing value"))
    }

    /// The next field, converted; a null is an error unless `T` is an `Option`.
    pub(crate) fn get<T: FromAvro>(&mut self) -> Result<T> {
        let v = self.next()?;
        T::from_avro(v, self.what).map_err(|reason| self.bad(reason))
    }

    /// The next field as bytes.
    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>> {
        match self.next()? {
            AvroValue::Bytes(b) => Ok(b),
            other => Err(self.bad(format_args!("expected bytes, got {other:?}"))),
        }
    }

    /// The next field as nullable bytes.
    pub(crate) fn opt_bytes(&mut self) -> Result<Option<Vec<u8>>> {
        match self.next()? {
            AvroValue::Null => Ok(None),
            AvroValue::Bytes(b) => Ok(Some(b)),
            other => Err(self.bad(format_args!("expected bytes, got {other:?}"))),
        }
    }
}

/// Conversion of a decoded value into a field type (errors are reasons, given context by
/// [`Fields::get`]).
pub(crate) trait FromAvro: Sized {
    fn from_avro(v: AvroValue, what: &'static str) -> std::result::Result<Self, String>;
}

/// Conversion of a field value into an encodable value.
pub(crate) trait ToAvro {
    fn to_avro(&self) -> AvroValue;
}

macro_rules! scalar_avro {
    ($t:ty, $variant:ident) => {
        impl FromAvro for $t {
            fn from_avro(v: AvroValue, _: &'static str) -> std::result::Result<Self, String> {
                match v {
                    AvroValue::$variant(x) => Ok(x),
                    AvroValue::Null => Err("null in a non-nullable position".into()),
                    other => Err(format!("expected {}, got {other:?}", stringify!($variant))),
                }
            }
        }
        impl ToAvro for $t {
            fn to_avro(&self) -> AvroValue {
                AvroValue::$variant(self.clone())
            }
        }
    };
}
scalar_avro!(i32, Int);
scalar_avro!(i64, Long);
scalar_avro!(String, String);

impl<T: FromAvro> FromAvro for Option<T> {
    fn from_avro(v: AvroValue, what: &'static str) -> std::result::Result<Self, String> {
        match v {
            AvroValue::Null => Ok(None),
            v => T::from_avro(v, what).map(Some),
        }
    }
}

impl<T: ToAvro> ToAvro for Option<T> {
    fn to_avro(&self) -> AvroValue {
        self.as_ref().map_or(AvroValue::Null, T::to_avro)
    }
}

impl<T: FromAvro> FromAvro for Vec<T> {
    fn from_avro(v: AvroValue, what: &'static str) -> std::result::Result<Self, String> {
        match v {
            AvroValue::Array(items) => items.into_iter().map(|i| T::from_avro(i, what)).collect(),
            AvroValue::Null => Err("null in a non-nullable position".into()),
            other => Err(format!("expected an array, got {other:?}")),
        }
    }
}

impl<T: ToAvro> ToAvro for Vec<T> {
    fn to_avro(&self) -> AvroValue {
        AvroValue::Array(self.iter().map(T::to_avro).collect())
    }
}

/// Implements [`FromAvro`]/[`ToAvro`] for an [`AvroRecord`] so it can nest.
macro_rules! nested_record {
    ($t:ty) => {
        impl $crate::manifest::record::FromAvro for $t {
            fn from_avro(
                v: $crate::manifest::record::AvroValue,
                what: &'static str,
            ) -> std::result::Result<Self, String> {
                $crate::manifest::record::record_from_avro(v, what)
            }
        }
        impl $crate::manifest::record::ToAvro for $t {
            fn to_avro(&self) -> $crate::manifest::record::AvroValue {
                $crate::manifest::record::AvroValue::Record(
                    $crate::manifest::record::AvroRecord::to_fields(self),
                )
            }
        }
    };
}
pub(crate) use nested_record;

/// Decodes a nested record value as `T`.
pub(crate) fn record_from_avro<T: AvroRecord>(
    v: AvroValue,
    what: &'static str,
) -> std::result::Result<T, String> {
    match v {
        AvroValue::Record(values) => T::from_fields(&mut Fields::new(T::FIELDS, values, what))
            .map_err(|e| match e {
                Error::Corrupt { reason, .. } => reason,
                other => other.to_string(),
            }),
        AvroValue::Null => Err("null in a non-nullable position".into()),
        other => Err(format!("expected a record, got {other:?}")),
    }
}
