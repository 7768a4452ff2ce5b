//! The Avro side of data-file writing (arrow-avro's Object Container File writer, fed the
//! Avro schema Java writes so that readers resolve it exactly as Java's own files).
//!
//! Schema (Java `AvroSchemaConverter.convertToSchema`): a record named
//! `org.apache.paimon.avro.generated.record` whose fields are the file's columns; a nested ROW
//! is a record named `<enclosing record>_<field>`; nullable types are `["null", T]` unions and
//! nullable record fields default to null. BOOLEAN → boolean; TINYINT, SMALLINT, INT → int;
//! BIGINT → long; FLOAT, DOUBLE; CHAR/VARCHAR → string; BINARY/VARBINARY → bytes; DATE → int
//! `date`; TIME(p ≤ 3) → int `time-millis`; DECIMAL → bytes `decimal` (precision, scale);
//! TIMESTAMP(p) → long `timestamp-millis` (p ≤ 3) / `timestamp-micros` (p ≤ 6); TIMESTAMP
//! WITH LOCAL TIME ZONE → `local-timestamp-millis` / `-micros` (Java's choice); ARRAY →
//! array; MAP and MULTISET (value: nullable int count) with a CHAR/VARCHAR key → map,
//! otherwise an array of `{key, value}` records (named after the enclosing record) tagged
//! `logicalType: map`.
//!
//! Types Java's Avro format refuses are refused here too ([`Error::Unsupported`] naming the
//! column): TIMESTAMP(p > 6) with or without zone, TIME(p > 3), VARIANT, BLOB.
//!
//! Codecs: `avro.codec` if set, else `file.compression` (Java `CodecFactory.fromString`, with
//! `zstd` meaning zstandard): null, deflate, snappy, zstd/zstandard, bzip2 (xz is refused:
//! Java Paimon's bundle cannot decompress it). Every batch
//! handed to [`AvroFile::write`] becomes one Avro block, so a file's estimated size is its
//! bytes so far.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray};
use arrow_avro::compression::CompressionCodec;
use arrow_avro::schema::SCHEMA_METADATA_KEY;
use arrow_avro::writer::format::AvroOcfFormat;
use arrow_avro::writer::{Writer, WriterBuilder};
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema, SchemaRef, TimeUnit};
use serde_json::{json, Value};
use tidelake_spec::arrow::LTZ_TIME_ZONE;
use tidelake_spec::types::{DataType, TypeKind};

use super::encoding::strict_cast;
use super::parquet::PhysicalColumn;
use super::sink::{BufferedUpload, SharedBuffer};
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Java's name of the top-level record.
const RECORD_NAME: &str = "org.apache.paimon.avro.generated.record";

/// Encoder settings of one writer.
#[derive(Debug, Clone)]
pub(super) struct AvroOptions {
    codec: Option<CompressionCodec>,
}

impl AvroOptions {
    /// `avro_codec` is the `avro.codec` option, which wins over `compression`.
    pub(super) fn new(compression: &str, avro_codec: Option<&str>) -> Result<AvroOptions> {
        let name = avro_codec.unwrap_or(compression).to_ascii_lowercase();
        let codec = match name.as_str() {
            "null" => None,
            "deflate" => Some(CompressionCodec::Deflate),
            "snappy" => Some(CompressionCodec::Snappy),
            "zstd" | "zstandard" => Some(CompressionCodec::ZStandard),
            "bzip2" => Some(CompressionCodec::Bzip2),
            // Java Paimon's bundle lacks the XZ library its Avro codec loads
            // (org.tukaani.xz): such files would be unreadable there.
            "xz" => {
                return Err(Error::Unsupported(
                    "compression 'xz' for Avro files: Java Paimon cannot read XZ Avro files \
                     (its bundle has no org.tukaani.xz); use null, deflate, snappy, zstd or bzip2"
                        .into(),
                ))
            }
            other => {
                return Err(Error::Unsupported(format!(
                    "compression '{other}' for Avro files (Java's Avro codecs: null, deflate, \
                     snappy, zstd, bzip2)"
                )))
            }
        };
        Ok(AvroOptions { codec })
    }
}

/// A file's Avro schema and the Arrow schema its batches are encoded from.
pub(super) struct AvroSchema {
    arrow: SchemaRef,
    types: Vec<DataType>,
}

impl AvroSchema {
    pub(super) fn new(columns: &[PhysicalColumn]) -> Result<AvroSchema> {
        let mut avro_fields = Vec::with_capacity(columns.len());
        let mut arrow_fields = Vec::with_capacity(columns.len());
        for column in columns {
            let name = format!("{RECORD_NAME}_{}", column.name);
            let (avro, arrow) = avro_type(&column.data_type, &name, &column.name)?;
            avro_fields.push(record_field(&column.name, avro, column.data_type.nullable));
            arrow_fields.push(Field::new(&column.name, arrow, column.data_type.nullable));
        }
        let record = json!({"type": "record", "name": RECORD_NAME, "fields": avro_fields});
        let metadata = HashMap::from([(SCHEMA_METADATA_KEY.to_string(), record.to_string())]);
        Ok(AvroSchema {
            arrow: Arc::new(Schema::new_with_metadata(arrow_fields, metadata)),
            types: columns.iter().map(|c| c.data_type.clone()).collect(),
        })
    }

    /// Columns in file order (canonical `tidelake_spec::arrow` types) as the encoder wants them.
    pub(super) fn batch(&self, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
        let columns = columns
            .iter()
            .zip(self.arrow.fields().iter().zip(&self.types))
            .map(|(column, (field, ty))| {
                to_avro_array(column, ty, field.data_type()).map_err(|e| {
                    Error::arrow(format!("encoding Avro column '{}'", field.name()), e)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(self.arrow.clone(), columns)
            .map_err(|e| Error::arrow("assembling an Avro batch", e))
    }
}

fn record_field(name: &str, avro: Value, nullable: bool) -> Value {
    if nullable {
        json!({"name": name, "type": avro, "default": null})
    } else {
        json!({"name": name, "type": avro})
    }
}

/// Whether a MAP / MULTISET key type is written as a native Avro map (string keys).
fn native_map_key(key: &DataType) -> bool {
    matches!(key.kind, TypeKind::Char(_) | TypeKind::VarChar(_))
}

/// The key and value types of a MAP or MULTISET (Java `extractKeyTypeToAvroMap` / `Value…`).
fn map_parts(ty: &DataType) -> Option<(DataType, DataType)> {
    match &ty.kind {
        TypeKind::Map(k, v) => Some((k.as_ref().clone(), v.as_ref().clone())),
        TypeKind::Multiset(e) => Some((e.as_ref().clone(), DataType::new(TypeKind::Int))),
        _ => None,
    }
}

/// The Avro schema of `ty` (Java `convertToSchema(ty, row_name)`) and the Arrow type the
/// encoder is fed for it.
fn avro_type(ty: &DataType, row_name: &str, column: &str) -> Result<(Value, ArrowType)> {
    let unsupported = |why: &str| {
        Error::Unsupported(format!(
            "writing column '{column}' of type {ty} to an Avro file: {why}; use \
             file.format=parquet"
        ))
    };
    let logical = |base: &str, logical: &str| json!({"type": base, "logicalType": logical});
    let (avro, arrow) = match &ty.kind {
        TypeKind::Boolean => (json!("boolean"), ArrowType::Boolean),
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int => (json!("int"), ArrowType::Int32),
        TypeKind::BigInt => (json!("long"), ArrowType::Int64),
        TypeKind::Float => (json!("float"), ArrowType::Float32),
        TypeKind::Double => (json!("double"), ArrowType::Float64),
        TypeKind::Char(_) | TypeKind::VarChar(_) => (json!("string"), ArrowType::Utf8),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => (json!("bytes"), ArrowType::Binary),
        TypeKind::Date => (logical("int", "date"), ArrowType::Date32),
        TypeKind::Time(p) if *p <= 3 => (
            logical("int", "time-millis"),
            ArrowType::Time32(TimeUnit::Millisecond),
        ),
        TypeKind::Decimal { precision, scale } => {
            let (p, s) = match (u8::try_from(*precision), i8::try_from(*scale)) {
                (Ok(p), Ok(s)) => (p, s),
                _ => return Err(Error::invalid(format!("invalid type {ty}"))),
            };
            (
                json!({"type": "bytes", "logicalType": "decimal", "precision": precision,
                       "scale": scale}),
                ArrowType::Decimal128(p, s),
            )
        }
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) if *p <= 6 => {
            let ltz = matches!(ty.kind, TypeKind::LocalZonedTimestamp(_));
            let (unit, name) = if *p <= 3 {
                (TimeUnit::Millisecond, "millis")
            } else {
                (TimeUnit::Microsecond, "micros")
            };
            let prefix = if ltz { "local-timestamp" } else { "timestamp" };
            let zone = ltz.then(|| Arc::from(LTZ_TIME_ZONE));
            (
                logical("long", &format!("{prefix}-{name}")),
                ArrowType::Timestamp(unit, zone),
            )
        }
        TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_) => {
            return Err(unsupported(
                "Java's Avro format supports timestamp precisions up to 6",
            ))
        }
        TypeKind::Time(_) => {
            return Err(unsupported(
                "Java's Avro format supports TIME precisions up to 3",
            ))
        }
        TypeKind::Variant | TypeKind::Blob => {
            return Err(unsupported(
                "Java's Avro format has no schema for this type",
            ))
        }
        TypeKind::Row(fields) => {
            let mut avro_fields = Vec::with_capacity(fields.len());
            let mut arrow_fields = Vec::with_capacity(fields.len());
            for f in fields {
                let child_name = format!("{row_name}_{}", f.name);
                let (a, t) = avro_type(&f.data_type, &child_name, column)?;
                avro_fields.push(record_field(&f.name, a, f.data_type.nullable));
                arrow_fields.push(Field::new(&f.name, t, f.data_type.nullable));
            }
            (
                json!({"type": "record", "name": row_name, "fields": avro_fields}),
                ArrowType::Struct(Fields::from(arrow_fields)),
            )
        }
        TypeKind::Array(element) => {
            let (a, t) = avro_type(element, row_name, column)?;
            (
                json!({"type": "array", "items": a}),
                ArrowType::List(Arc::new(Field::new_list_field(t, element.nullable))),
            )
        }
        TypeKind::Map(..) | TypeKind::Multiset(_) => {
            let (key, value) = map_parts(ty).ok_or_else(|| Error::invalid("not a map"))?;
            if native_map_key(&key) {
                let (a, t) = avro_type(&value, row_name, column)?;
                let entries = Fields::from(vec![
                    Field::new("key", ArrowType::Utf8, false),
                    Field::new("value", t, value.nullable),
                ]);
                (
                    json!({"type": "map", "values": a}),
                    ArrowType::Map(
                        Arc::new(Field::new("entries", ArrowType::Struct(entries), false)),
                        false,
                    ),
                )
            } else {
                let key = key.with_nullable(false);
                let (ka, kt) = avro_type(&key, &format!("{row_name}_key"), column)?;
                let (va, vt) = avro_type(&value, &format!("{row_name}_value"), column)?;
                let entry = json!({"type": "record", "name": row_name, "fields": [
                    record_field("key", ka, false),
                    record_field("value", va, value.nullable),
                ]});
                let entry_fields = Fields::from(vec![
                    Field::new("key", kt, false),
                    Field::new("value", vt, value.nullable),
                ]);
                (
                    json!({"type": "array", "items": entry, "logicalType": "map"}),
                    ArrowType::List(Arc::new(Field::new_list_field(
                        ArrowType::Struct(entry_fields),
                        false,
                    ))),
                )
            }
        }
    };
    let avro = if ty.nullable {
        json!(["null", avro])
    } else {
        avro
    };
    Ok((avro, arrow))
}

/// `array` (canonical Arrow type of `ty`) as Arrow type `target` ([`avro_type`]): maps with
/// non-string keys become lists of key/value structs, leaves are cast.
fn to_avro_array(
    array: &ArrayRef,
    ty: &DataType,
    target: &ArrowType,
) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    Ok(match (&ty.kind, target) {
        (TypeKind::Row(fields), ArrowType::Struct(target_fields)) => {
            let st = array.as_struct();
            let columns = st
                .columns()
                .iter()
                .zip(fields.iter().zip(target_fields.iter()))
                .map(|(c, (f, t))| to_avro_array(c, &f.data_type, t.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new(
                target_fields.clone(),
                columns,
                st.nulls().cloned(),
            )?)
        }
        (TypeKind::Array(element), ArrowType::List(item)) => {
            let list = array.as_list::<i32>();
            let values = to_avro_array(list.values(), element, item.data_type())?;
            Arc::new(ListArray::try_new(
                item.clone(),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        (TypeKind::Map(..) | TypeKind::Multiset(_), _) => {
            let (key, value) = map_parts(ty).ok_or_else(|| {
                arrow_schema::ArrowError::InvalidArgumentError("not a map".into())
            })?;
            let map = array.as_map();
            let (entry_field, entry_fields) = match target {
                ArrowType::Map(f, _) | ArrowType::List(f) => match f.data_type() {
                    ArrowType::Struct(fields) => (f.clone(), fields.clone()),
                    _ => return strict_cast(array, target),
                },
                _ => return strict_cast(array, target),
            };
            let keys = to_avro_array(map.keys(), &key, entry_fields[0].data_type())?;
            let values = to_avro_array(map.values(), &value, entry_fields[1].data_type())?;
            let entries = StructArray::try_new(entry_fields, vec![keys, values], None)?;
            match target {
                ArrowType::Map(_, sorted) => Arc::new(MapArray::try_new(
                    entry_field,
                    map.offsets().clone(),
                    entries,
                    map.nulls().cloned(),
                    *sorted,
                )?),
                _ => Arc::new(ListArray::try_new(
                    entry_field,
                    map.offsets().clone(),
                    Arc::new(entries),
                    map.nulls().cloned(),
                )?),
            }
        }
        _ => strict_cast(array, target)?,
    })
}

/// One Avro file being written.
pub(super) struct AvroFile {
    writer: Writer<SharedBuffer, AvroOcfFormat>,
    upload: BufferedUpload,
}

impl AvroFile {
    pub(super) fn create(
        io: &FileIO,
        rel_path: &str,
        schema: &AvroSchema,
        options: &AvroOptions,
    ) -> Result<AvroFile> {
        let (upload, buffer) = BufferedUpload::new(io, rel_path)?;
        let writer = WriterBuilder::new(schema.arrow.as_ref().clone())
            .with_compression(options.codec)
            .build::<_, AvroOcfFormat>(buffer)
            .map_err(|e| Error::invalid(format!("creating Avro file {}: {e}", upload.display)))?;
        Ok(AvroFile { writer, upload })
    }

    /// Write `batch` as one Avro block.
    pub(super) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer.write(batch).map_err(|e| {
            Error::invalid(format!("writing Avro file {}: {e}", self.upload.display))
        })?;
        self.upload.drain().await
    }

    pub(super) fn estimated_size(&self) -> u64 {
        self.upload.bytes_written()
    }

    /// Complete the upload; returns the file size.
    pub(super) async fn finish(mut self) -> Result<u64> {
        self.writer.finish().map_err(|e| {
            Error::invalid(format!("closing Avro file {}: {e}", self.upload.display))
        })?;
        self.upload.finish().await
    }

    pub(super) async fn abort(self) -> Result<()> {
        self.upload.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidelake_spec::types::DataField;

    #[test]
    fn schema_is_javas() {
        let int = DataType::new(TypeKind::Int);
        let columns = [
            PhysicalColumn {
                name: "_VALUE_KIND".into(),
                field_id: 0,
                data_type: DataType::not_null(TypeKind::TinyInt),
                unique: false,
            },
            PhysicalColumn {
                name: "st".into(),
                field_id: 1,
                data_type: DataType::new(TypeKind::Row(vec![
                    DataField::new(2, "ltz", DataType::new(TypeKind::LocalZonedTimestamp(3))),
                    DataField::new(
                        3,
                        "m",
                        DataType::not_null(TypeKind::Map(
                            Box::new(DataType::not_null(TypeKind::Int)),
                            Box::new(int.clone()),
                        )),
                    ),
                ])),
                unique: false,
            },
        ];
        let schema = AvroSchema::new(&columns).unwrap();
        let json: Value =
            serde_json::from_str(&schema.arrow.metadata()[SCHEMA_METADATA_KEY]).unwrap();
        let nested = "org.apache.paimon.avro.generated.record_st";
        let expected = json!({"type": "record", "name": RECORD_NAME, "fields": [
            {"name": "_VALUE_KIND", "type": "int"},
            {"name": "st", "default": null, "type": ["null", {"type": "record", "name": nested,
                "fields": [
                    {"name": "ltz", "default": null,
                     "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}]},
                    {"name": "m", "type": {"type": "array", "logicalType": "map", "items": {
                        "type": "record", "name": format!("{nested}_m"), "fields": [
                            {"name": "key", "type": "int"},
                            {"name": "value", "default": null, "type": ["null", "int"]}]}}}]}]}
        ]});
        assert_eq!(json, expected);
    }
}
