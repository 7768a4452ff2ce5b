//! Iceberg manifests and manifest lists (Iceberg spec "Manifests", "Manifest Lists"; Java
//! `IcebergManifestFile`, `IcebergManifestList`, `IcebergDataFileMeta`), as Avro containers.
//!
//! Invariants:
//! * every Avro field carries its Iceberg `field-id`, int-keyed maps are arrays of key/value
//!   records with `logicalType: map` (Iceberg's Avro form), and the header keeps that schema
//!   verbatim ([`ContainerWriter`]); records are encoded by apache-avro against the same
//!   schema;
//! * reading resolves fields by name and accepts what Java Paimon writes for the same
//!   structures, so metadata either side wrote can be the base of the next commit's;
//! * partition values are the Paimon partition values, one Avro field per partition column
//!   with field ids from [`FIRST_PARTITION_FIELD_ID`].

use apache_avro::types::Value;
use apache_avro::Schema;
use serde_json::{json, Value as Json};
use tidelake_spec::datum::Datum;
use tidelake_spec::iceberg::{
    compare_bounds, decimal_from_be_bytes, partition_avro_type, to_bound, FIRST_PARTITION_FIELD_ID,
};
use tidelake_spec::manifest::{Codec, ContainerWriter};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::error::{Error, Result};

/// A manifest entry's status (Iceberg `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Existing = 0,
    Added = 1,
    Deleted = 2,
}

/// Iceberg `data_file.content` / `manifest_file.content` of data.
pub const CONTENT_DATA: i32 = 0;
/// Iceberg `data_file.content` of position deletes (deletion vectors), and
/// `manifest_file.content` of a manifest of deletes.
pub const CONTENT_DELETES: i32 = 1;

/// An Iceberg `data_file` (the fields Java Paimon writes).
#[derive(Clone, Debug, PartialEq)]
pub struct DataFile {
    pub content: i32,
    pub file_path: String,
    pub file_format: String,
    /// One value per partition column (`Datum::Null` for null).
    pub partition: Vec<Datum>,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub null_value_counts: Vec<(i32, i64)>,
    pub lower_bounds: Vec<(i32, Vec<u8>)>,
    pub upper_bounds: Vec<(i32, Vec<u8>)>,
    /// Deletion vectors: the data file they delete from, and their blob in the Puffin file.
    pub referenced_data_file: Option<String>,
    pub content_offset: Option<i64>,
    pub content_size_in_bytes: Option<i64>,
}

/// An Iceberg `manifest_entry`.
#[derive(Clone, Debug, PartialEq)]
pub struct ManifestEntry {
    pub status: Status,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub file_sequence_number: i64,
    pub data_file: DataFile,
}

impl ManifestEntry {
    /// Added or existing (not deleted).
    pub fn is_live(&self) -> bool {
        self.status != Status::Deleted
    }
}

/// Iceberg `field_summary` of one partition field over a manifest's entries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
}

/// An Iceberg `manifest_file` (an entry of a manifest list).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ManifestFile {
    pub manifest_path: String,
    pub manifest_length: i64,
    pub content: i32,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files_count: i32,
    pub existing_files_count: i32,
    pub deleted_files_count: i32,
    pub added_rows_count: i64,
    pub existing_rows_count: i64,
    pub deleted_rows_count: i64,
    pub partitions: Vec<FieldSummary>,
}

impl ManifestFile {
    /// The file name (last path segment) of the manifest.
    pub fn file_name(&self) -> &str {
        file_name(&self.manifest_path)
    }
}

/// The last segment of a path.
pub fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

fn corrupt(what: &str, reason: impl std::fmt::Display) -> Error {
    Error::corrupt(what, reason)
}

fn avro_err(what: &str, e: apache_avro::Error) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

// ---- schemas ---------------------------------------------------------------------------------

fn field(name: &str, ty: Json, id: i32) -> Json {
    json!({"name": name, "type": ty, "field-id": id})
}

fn optional(name: &str, ty: Json, id: i32) -> Json {
    json!({"name": name, "type": ["null", ty], "default": null, "field-id": id})
}

/// An int-keyed map in Iceberg's Avro form.
fn int_map(record: &str, key_id: i32, value_id: i32, value: Json) -> Json {
    json!({
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": record,
            "fields": [field("key", json!("int"), key_id), field("value", value, value_id)],
        },
    })
}

/// An Avro name for a column name (Iceberg `AvroSchemaUtil.makeCompatibleName`): readers
/// match partition fields by id, so the name only has to be valid.
fn avro_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.chars().enumerate() {
        let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
        if ok {
            out.push(c);
        } else if c.is_ascii_digit() {
            out.push('_');
            out.push(c);
        } else {
            out.push_str(&format!("_x{:X}", u32::from(c)));
        }
    }
    out
}

/// The schema of a manifest of a table partitioned by `partition`.
fn manifest_schema(partition: &[DataField]) -> Result<Json> {
    let mut fields = Vec::with_capacity(partition.len());
    for (f, id) in partition.iter().zip(FIRST_PARTITION_FIELD_ID..) {
        let ty = partition_avro_type(&f.data_type).ok_or_else(|| {
            Error::Unsupported(format!(
                "Iceberg partition column '{}' of this type",
                f.name
            ))
        })?;
        let mut field = json!({"name": avro_name(&f.name), "type": ty, "field-id": id});
        if f.data_type.nullable {
            field["default"] = Json::Null;
        }
        fields.push(field);
    }
    let data_file = json!({
        "type": "record",
        "name": "r2",
        "fields": [
            field("content", json!("int"), 134),
            field("file_path", json!("string"), 100),
            field("file_format", json!("string"), 101),
            field("partition", json!({"type": "record", "name": "r102", "fields": fields}), 102),
            field("record_count", json!("long"), 103),
            field("file_size_in_bytes", json!("long"), 104),
            optional("null_value_counts", int_map("k121_v122", 121, 122, json!("long")), 110),
            optional("lower_bounds", int_map("k126_v127", 126, 127, json!("bytes")), 125),
            optional("upper_bounds", int_map("k129_v130", 129, 130, json!("bytes")), 128),
            optional("referenced_data_file", json!("string"), 143),
            optional("content_offset", json!("long"), 144),
            optional("content_size_in_bytes", json!("long"), 145),
        ],
    });
    Ok(json!({
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            field("status", json!("int"), 0),
            optional("snapshot_id", json!("long"), 1),
            optional("sequence_number", json!("long"), 3),
            optional("file_sequence_number", json!("long"), 4),
            field("data_file", data_file, 2),
        ],
    }))
}

/// The schema of a manifest list; `legacy`: Iceberg 1.4's field names.
fn manifest_list_schema(legacy: bool) -> Json {
    let count = |kind: &str| match legacy {
        true => format!("{kind}_data_files_count"),
        false => format!("{kind}_files_count"),
    };
    let summary = json!({
        "type": "record",
        "name": "r508",
        "fields": [
            field("contains_null", json!("boolean"), 509),
            optional("contains_nan", json!("boolean"), 518),
            optional("lower_bound", json!("bytes"), 510),
            optional("upper_bound", json!("bytes"), 511),
        ],
    });
    json!({
        "type": "record",
        "name": "manifest_file",
        "fields": [
            field("manifest_path", json!("string"), 500),
            field("manifest_length", json!("long"), 501),
            field("partition_spec_id", json!("int"), 502),
            field("content", json!("int"), 517),
            field("sequence_number", json!("long"), 515),
            field("min_sequence_number", json!("long"), 516),
            field("added_snapshot_id", json!("long"), 503),
            field(&count("added"), json!("int"), 504),
            field(&count("existing"), json!("int"), 505),
            field(&count("deleted"), json!("int"), 506),
            field("added_rows_count", json!("long"), 512),
            field("existing_rows_count", json!("long"), 513),
            field("deleted_rows_count", json!("long"), 514),
            optional(
                "partitions",
                json!({"type": "array", "element-id": 508, "items": summary}),
                507
            ),
        ],
    })
}

// ---- values ----------------------------------------------------------------------------------

fn union(v: Option<Value>) -> Value {
    match v {
        None => Value::Union(0, Box::new(Value::Null)),
        Some(v) => Value::Union(1, Box::new(v)),
    }
}

fn datum_value(d: &Datum, ty: &DataType) -> Value {
    let v = match d {
        Datum::Null => return Value::Union(0, Box::new(Value::Null)),
        Datum::Boolean(b) => Value::Boolean(*b),
        Datum::TinyInt(v) => Value::Int((*v).into()),
        Datum::SmallInt(v) => Value::Int((*v).into()),
        Datum::Int(v) => Value::Int(*v),
        Datum::Date(v) => Value::Date(*v),
        Datum::BigInt(v) => Value::Long(*v),
        Datum::Float(v) => Value::Float(*v),
        Datum::Double(v) => Value::Double(*v),
        Datum::String(s) => Value::String(s.clone()),
        Datum::Bytes(b) => Value::Bytes(b.clone()),
        Datum::Decimal(unscaled) => Value::Decimal(unscaled.to_be_bytes().into()),
        Datum::Timestamp { millis, nanos } => Value::TimestampMicros(
            millis
                .saturating_mul(1000)
                .saturating_add(i64::from(*nanos / 1000)),
        ),
        // checked by `partition_avro_type` before any entry is written
        _ => Value::Null,
    };
    if ty.nullable {
        Value::Union(1, Box::new(v))
    } else {
        v
    }
}

fn pairs<V: Clone>(items: &[(i32, V)], to: impl Fn(V) -> Value) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(k, v)| {
                Value::Record(vec![
                    ("key".into(), Value::Int(*k)),
                    ("value".into(), to(v.clone())),
                ])
            })
            .collect(),
    )
}

fn entry_value(e: &ManifestEntry, partition: &[DataField]) -> Value {
    let f = &e.data_file;
    let part = partition
        .iter()
        .zip(&f.partition)
        .map(|(field, d)| (avro_name(&field.name), datum_value(d, &field.data_type)))
        .collect();
    let data_file = Value::Record(vec![
        ("content".into(), Value::Int(f.content)),
        ("file_path".into(), Value::String(f.file_path.clone())),
        ("file_format".into(), Value::String(f.file_format.clone())),
        ("partition".into(), Value::Record(part)),
        ("record_count".into(), Value::Long(f.record_count)),
        (
            "file_size_in_bytes".into(),
            Value::Long(f.file_size_in_bytes),
        ),
        (
            "null_value_counts".into(),
            union(Some(pairs(&f.null_value_counts, Value::Long))),
        ),
        (
            "lower_bounds".into(),
            union(Some(pairs(&f.lower_bounds, Value::Bytes))),
        ),
        (
            "upper_bounds".into(),
            union(Some(pairs(&f.upper_bounds, Value::Bytes))),
        ),
        (
            "referenced_data_file".into(),
            union(f.referenced_data_file.clone().map(Value::String)),
        ),
        (
            "content_offset".into(),
            union(f.content_offset.map(Value::Long)),
        ),
        (
            "content_size_in_bytes".into(),
            union(f.content_size_in_bytes.map(Value::Long)),
        ),
    ]);
    Value::Record(vec![
        ("status".into(), Value::Int(e.status as i32)),
        (
            "snapshot_id".into(),
            union(Some(Value::Long(e.snapshot_id))),
        ),
        (
            "sequence_number".into(),
            union(Some(Value::Long(e.sequence_number))),
        ),
        (
            "file_sequence_number".into(),
            union(Some(Value::Long(e.file_sequence_number))),
        ),
        ("data_file".into(), data_file),
    ])
}

fn manifest_file_value(m: &ManifestFile, legacy: bool) -> Value {
    let count = |kind: &str| match legacy {
        true => format!("{kind}_data_files_count"),
        false => format!("{kind}_files_count"),
    };
    let bytes = |b: &Option<Vec<u8>>| union(b.clone().map(Value::Bytes));
    let partitions = m
        .partitions
        .iter()
        .map(|p| {
            Value::Record(vec![
                ("contains_null".into(), Value::Boolean(p.contains_null)),
                ("contains_nan".into(), union(Some(Value::Boolean(false)))),
                ("lower_bound".into(), bytes(&p.lower_bound)),
                ("upper_bound".into(), bytes(&p.upper_bound)),
            ])
        })
        .collect();
    Value::Record(vec![
        (
            "manifest_path".into(),
            Value::String(m.manifest_path.clone()),
        ),
        ("manifest_length".into(), Value::Long(m.manifest_length)),
        ("partition_spec_id".into(), Value::Int(0)),
        ("content".into(), Value::Int(m.content)),
        ("sequence_number".into(), Value::Long(m.sequence_number)),
        (
            "min_sequence_number".into(),
            Value::Long(m.min_sequence_number),
        ),
        ("added_snapshot_id".into(), Value::Long(m.added_snapshot_id)),
        (count("added"), Value::Int(m.added_files_count)),
        (count("existing"), Value::Int(m.existing_files_count)),
        (count("deleted"), Value::Int(m.deleted_files_count)),
        ("added_rows_count".into(), Value::Long(m.added_rows_count)),
        (
            "existing_rows_count".into(),
            Value::Long(m.existing_rows_count),
        ),
        (
            "deleted_rows_count".into(),
            Value::Long(m.deleted_rows_count),
        ),
        ("partitions".into(), union(Some(Value::Array(partitions)))),
    ])
}

/// Encodes `values` into a container whose header is `schema` verbatim.
fn write_container(
    schema: &Json,
    values: impl IntoIterator<Item = Value>,
    codec: Codec,
) -> Result<Vec<u8>> {
    let text = schema.to_string();
    let parsed = Schema::parse_str(&text).map_err(|e| avro_err("Iceberg Avro schema", e))?;
    let encoder = apache_avro::writer::datum::GenericDatumWriter::builder(&parsed)
        .build()
        .map_err(|e| avro_err("Iceberg Avro schema", e))?;
    let mut w = ContainerWriter::new(&text, codec);
    for v in values {
        encoder
            .write_value(w.record_buf(), v)
            .map_err(|e| avro_err("Iceberg manifest record", e))?;
        w.record_done()
            .map_err(|e| Error::from_spec("Iceberg manifest", e))?;
    }
    w.finish()
        .map_err(|e| Error::from_spec("Iceberg manifest", e))
}

/// Encodes a manifest of a table partitioned by `partition`.
pub fn write_manifest(
    entries: &[ManifestEntry],
    partition: &[DataField],
    codec: Codec,
) -> Result<Vec<u8>> {
    let schema = manifest_schema(partition)?;
    write_container(
        &schema,
        entries.iter().map(|e| entry_value(e, partition)),
        codec,
    )
}

/// Encodes a manifest list.
pub fn write_manifest_list(files: &[ManifestFile], legacy: bool, codec: Codec) -> Result<Vec<u8>> {
    let schema = manifest_list_schema(legacy);
    write_container(
        &schema,
        files.iter().map(|m| manifest_file_value(m, legacy)),
        codec,
    )
}

/// The summary of `entries`' partition values (Java `IcebergManifestEntryWriter.result`).
pub fn summarize(entries: &[ManifestEntry], partition: &[DataField]) -> Vec<FieldSummary> {
    partition
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut s = FieldSummary {
                contains_null: false,
                lower_bound: None,
                upper_bound: None,
            };
            for e in entries {
                let value = e.data_file.partition.get(i).unwrap_or(&Datum::Null);
                let Some(bound) = to_bound(&f.data_type, value) else {
                    s.contains_null = true;
                    continue;
                };
                let less = |a: &[u8], b: &[u8]| {
                    compare_bounds(&f.data_type, a, b) == Some(std::cmp::Ordering::Less)
                };
                if s.lower_bound.as_deref().is_none_or(|lo| less(&bound, lo)) {
                    s.lower_bound = Some(bound.clone());
                }
                if s.upper_bound.as_deref().is_none_or(|hi| less(hi, &bound)) {
                    s.upper_bound = Some(bound);
                }
            }
            s
        })
        .collect()
}

// ---- reading ---------------------------------------------------------------------------------

type Fields = Vec<(String, Value)>;

fn records(bytes: &[u8], what: &str) -> Result<Vec<Fields>> {
    let reader = apache_avro::Reader::new(bytes).map_err(|e| corrupt(what, e))?;
    let mut out = Vec::new();
    for v in reader {
        match v.map_err(|e| corrupt(what, e))? {
            Value::Record(fields) => out.push(fields),
            other => return Err(corrupt(what, format_args!("a {other:?} is not a record"))),
        }
    }
    Ok(out)
}

fn plain(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => plain(inner),
        v => v,
    }
}

fn get<'a>(fields: &'a Fields, name: &str) -> Option<&'a Value> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| plain(v))
        .filter(|v| !matches!(v, Value::Null))
}

struct Rec<'a> {
    fields: &'a Fields,
    what: &'a str,
}

impl<'a> Rec<'a> {
    fn req(&self, name: &str) -> Result<&'a Value> {
        get(self.fields, name).ok_or_else(|| corrupt(self.what, format_args!("no '{name}'")))
    }
    fn long(&self, name: &str) -> Result<i64> {
        match self.req(name)? {
            Value::Long(v) => Ok(*v),
            Value::Int(v) => Ok((*v).into()),
            other => Err(corrupt(self.what, format_args!("'{name}' is {other:?}"))),
        }
    }
    fn int(&self, name: &str) -> Result<i32> {
        let v = self.long(name)?;
        i32::try_from(v).map_err(|_| corrupt(self.what, format_args!("'{name}' = {v}")))
    }
    fn string(&self, name: &str) -> Result<String> {
        match self.req(name)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(corrupt(self.what, format_args!("'{name}' is {other:?}"))),
        }
    }
    fn record(&self, name: &str) -> Result<Rec<'a>> {
        match self.req(name)? {
            Value::Record(fields) => Ok(Rec {
                fields,
                what: self.what,
            }),
            other => Err(corrupt(self.what, format_args!("'{name}' is {other:?}"))),
        }
    }
    /// An int-keyed map, as Iceberg's key/value array (or an Avro map with numeric keys).
    fn int_map(&self, name: &str) -> Result<Vec<(i32, &'a Value)>> {
        let bad = |why: &dyn std::fmt::Display| corrupt(self.what, format_args!("'{name}': {why}"));
        match get(self.fields, name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::Record(kv) => {
                        let r = Rec {
                            fields: kv,
                            what: self.what,
                        };
                        Ok((r.int("key")?, r.req("value")?))
                    }
                    other => Err(bad(&format_args!("{other:?}"))),
                })
                .collect(),
            Some(Value::Map(m)) => m
                .iter()
                .map(|(k, v)| Ok((k.parse().map_err(|_| bad(&k))?, plain(v))))
                .collect(),
            Some(other) => Err(bad(&format_args!("{other:?}"))),
        }
    }
}

fn to_datum(v: Option<&Value>, ty: &DataType) -> Datum {
    let Some(v) = v else { return Datum::Null };
    match (v, &ty.kind) {
        (Value::Boolean(b), _) => Datum::Boolean(*b),
        (Value::Int(v), TypeKind::TinyInt) => i8::try_from(*v).map_or(Datum::Null, Datum::TinyInt),
        (Value::Int(v), TypeKind::SmallInt) => {
            i16::try_from(*v).map_or(Datum::Null, Datum::SmallInt)
        }
        (Value::Int(v) | Value::Date(v), TypeKind::Date) => Datum::Date(*v),
        (
            Value::Long(v) | Value::TimestampMicros(v) | Value::LocalTimestampMicros(v),
            TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_),
        ) => Datum::Timestamp {
            millis: v.div_euclid(1000),
            nanos: i32::try_from(v.rem_euclid(1000) * 1000).unwrap_or(0),
        },
        (Value::Decimal(d), TypeKind::Decimal { .. }) => Vec::<u8>::try_from(d)
            .ok()
            .and_then(|b| decimal_from_be_bytes(&b))
            .map_or(Datum::Null, Datum::Decimal),
        (Value::Fixed(_, b) | Value::Bytes(b), TypeKind::Decimal { .. }) => {
            decimal_from_be_bytes(b).map_or(Datum::Null, Datum::Decimal)
        }
        (Value::Int(v), _) => Datum::Int(*v),
        (Value::Long(v), _) => Datum::BigInt(*v),
        (Value::Float(v), _) => Datum::Float(*v),
        (Value::Double(v), _) => Datum::Double(*v),
        (Value::String(s), _) => Datum::String(s.clone()),
        (Value::Bytes(b), _) => Datum::Bytes(b.clone()),
        _ => Datum::Null,
    }
}

/// Decodes a manifest of a table partitioned by `partition`.
pub fn read_manifest(
    bytes: &[u8],
    partition: &[DataField],
    what: &str,
) -> Result<Vec<ManifestEntry>> {
    records(bytes, what)?
        .iter()
        .map(|fields| {
            let r = Rec { fields, what };
            let status = match r.int("status")? {
                0 => Status::Existing,
                1 => Status::Added,
                2 => Status::Deleted,
                s => return Err(corrupt(what, format_args!("status {s}"))),
            };
            let f = r.record("data_file")?;
            let p = f.record("partition")?;
            let partition = partition
                .iter()
                .zip(p.fields)
                .map(|(field, (_, v))| {
                    to_datum(
                        Some(plain(v)).filter(|v| !matches!(v, Value::Null)),
                        &field.data_type,
                    )
                })
                .collect();
            let longs = |name| -> Result<Vec<(i32, i64)>> {
                f.int_map(name)?
                    .into_iter()
                    .map(|(k, v)| match v {
                        Value::Long(n) => Ok((k, *n)),
                        other => Err(corrupt(what, format_args!("{name}: {other:?}"))),
                    })
                    .collect()
            };
            let bytes = |name| -> Result<Vec<(i32, Vec<u8>)>> {
                f.int_map(name)?
                    .into_iter()
                    .map(|(k, v)| match v {
                        Value::Bytes(b) | Value::Fixed(_, b) => Ok((k, b.clone())),
                        other => Err(corrupt(what, format_args!("{name}: {other:?}"))),
                    })
                    .collect()
            };
            let snapshot_id = r.long("snapshot_id")?;
            Ok(ManifestEntry {
                status,
                snapshot_id,
                sequence_number: r.long("sequence_number")?,
                file_sequence_number: r.long("file_sequence_number")?,
                data_file: DataFile {
                    content: f.int("content")?,
                    file_path: f.string("file_path")?,
                    file_format: f.string("file_format")?,
                    partition,
                    record_count: f.long("record_count")?,
                    file_size_in_bytes: f.long("file_size_in_bytes")?,
                    null_value_counts: longs("null_value_counts")?,
                    lower_bounds: bytes("lower_bounds")?,
                    upper_bounds: bytes("upper_bounds")?,
                    referenced_data_file: f.string("referenced_data_file").ok(),
                    content_offset: f.long("content_offset").ok(),
                    content_size_in_bytes: f.long("content_size_in_bytes").ok(),
                },
            })
        })
        .collect()
}

/// Decodes a manifest list (either generation of field names).
pub fn read_manifest_list(bytes: &[u8], what: &str) -> Result<Vec<ManifestFile>> {
    records(bytes, what)?
        .iter()
        .map(|fields| {
            let r = Rec { fields, what };
            let count = |kind: &str| {
                r.int(&format!("{kind}_files_count"))
                    .or_else(|_| r.int(&format!("{kind}_data_files_count")))
            };
            let partitions = match get(fields, "partitions") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|item| match plain(item) {
                        Value::Record(fields) => {
                            let s = Rec { fields, what };
                            let bytes = |name| match get(fields, name) {
                                Some(Value::Bytes(b)) => Some(b.clone()),
                                _ => None,
                            };
                            Ok(FieldSummary {
                                contains_null: matches!(
                                    s.req("contains_null")?,
                                    Value::Boolean(true)
                                ),
                                lower_bound: bytes("lower_bound"),
                                upper_bound: bytes("upper_bound"),
                            })
                        }
                        other => Err(corrupt(what, format_args!("partitions: {other:?}"))),
                    })
                    .collect::<Result<_>>()?,
                Some(other) => return Err(corrupt(what, format_args!("partitions: {other:?}"))),
            };
            Ok(ManifestFile {
                manifest_path: r.string("manifest_path")?,
                manifest_length: r.long("manifest_length")?,
                content: r.int("content")?,
                sequence_number: r.long("sequence_number")?,
                min_sequence_number: r.long("min_sequence_number")?,
                added_snapshot_id: r.long("added_snapshot_id")?,
                added_files_count: count("added")?,
                existing_files_count: count("existing")?,
                deleted_files_count: count("deleted")?,
                added_rows_count: r.long("added_rows_count")?,
                existing_rows_count: r.long("existing_rows_count")?,
                deleted_rows_count: r.long("deleted_rows_count")?,
                partitions,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part() -> Vec<DataField> {
        vec![DataField {
            id: 3,
            name: "day-of".into(),
            data_type: DataType::new(TypeKind::Int),
            description: None,
            default_value: None,
        }]
    }

    fn entry(path: &str, day: i32) -> ManifestEntry {
        ManifestEntry {
            status: Status::Added,
            snapshot_id: 4,
            sequence_number: 4,
            file_sequence_number: 4,
            data_file: DataFile {
                content: CONTENT_DATA,
                file_path: path.into(),
                file_format: "parquet".into(),
                partition: vec![Datum::Int(day)],
                record_count: 10,
                file_size_in_bytes: 100,
                null_value_counts: vec![(1, 0)],
                lower_bounds: vec![(1, vec![1, 0, 0, 0])],
                upper_bounds: vec![(1, vec![9, 0, 0, 0])],
                referenced_data_file: None,
                content_offset: None,
                content_size_in_bytes: None,
            },
        }
    }

    #[test]
    fn manifests_round_trip_with_iceberg_ids_in_the_header() {
        let mut dv = entry("s3://b/t/metadata/dv.puffin", -1);
        dv.data_file.content = CONTENT_DELETES;
        dv.data_file.referenced_data_file = Some("s3://b/t/b.parquet".into());
        dv.data_file.content_offset = Some(4);
        dv.data_file.content_size_in_bytes = Some(40);
        let entries = vec![
            entry("s3://b/t/a.parquet", 2),
            entry("s3://b/t/b.parquet", -1),
            dv,
        ];
        let bytes = write_manifest(&entries, &part(), Codec::Snappy).unwrap();
        assert_eq!(read_manifest(&bytes, &part(), "m").unwrap(), entries);
        let header = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_string();
        assert!(header.contains(r#""logicalType":"map""#), "{header}");
        assert!(header.contains(r#""field-id":1000"#), "{header}");
        assert!(header.contains(r#""name":"day_x2Dof""#), "{header}");
        let summary = summarize(&entries, &part());
        assert_eq!(summary[0].lower_bound, Some((-1i32).to_le_bytes().to_vec()));
        assert_eq!(summary[0].upper_bound, Some(2i32.to_le_bytes().to_vec()));
        assert!(!summary[0].contains_null);
    }

    #[test]
    fn decimal_and_timestamp_partitions_round_trip_in_iceberg_avro_forms() {
        let field = |id, name: &str, kind| DataField {
            id,
            name: name.into(),
            data_type: DataType::new(kind),
            description: None,
            default_value: None,
        };
        let part = vec![
            field(
                1,
                "d",
                TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            field(2, "ts", TypeKind::Timestamp(6)),
        ];
        let values = [
            (-12345, -1_500, 250_000),
            (9_999_999_999, 1_700_000_000_123, 456_000),
        ];
        let entries: Vec<ManifestEntry> = values
            .iter()
            .map(|&(d, millis, nanos)| {
                let mut e = entry("s3://b/t/a.parquet", 0);
                e.data_file.partition = vec![Datum::Decimal(d), Datum::Timestamp { millis, nanos }];
                e
            })
            .collect();
        let bytes = write_manifest(&entries, &part, Codec::Null).unwrap();
        assert_eq!(read_manifest(&bytes, &part, "m").unwrap(), entries);
        let header = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_string();
        assert!(
            header.contains(r#""type":"fixed""#) && header.contains(r#""size":5"#),
            "{header}"
        );
        assert!(
            header.contains(r#""logicalType":"timestamp-micros""#),
            "{header}"
        );
        let s = summarize(&entries, &part);
        assert_eq!(
            s[0].lower_bound,
            to_bound(&part[0].data_type, &Datum::Decimal(-12345))
        );
        assert_eq!(
            s[1].upper_bound,
            Some(1_700_000_000_123_456i64.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn manifest_lists_round_trip_in_both_generations() {
        let m = ManifestFile {
            manifest_path: "/t/metadata/x-m1.avro".into(),
            manifest_length: 10,
            content: CONTENT_DATA,
            sequence_number: 3,
            min_sequence_number: 1,
            added_snapshot_id: 3,
            added_files_count: 1,
            existing_files_count: 2,
            deleted_files_count: 0,
            added_rows_count: 5,
            existing_rows_count: 6,
            deleted_rows_count: 0,
            partitions: vec![FieldSummary {
                contains_null: true,
                lower_bound: Some(vec![1]),
                upper_bound: None,
            }],
        };
        for legacy in [false, true] {
            let bytes = write_manifest_list(std::slice::from_ref(&m), legacy, Codec::Null).unwrap();
            assert_eq!(read_manifest_list(&bytes, "l").unwrap(), vec![m.clone()]);
        }
        assert_eq!(m.file_name(), "x-m1.avro");
    }
}
