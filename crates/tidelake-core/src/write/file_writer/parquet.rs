//! The Parquet side of data-file writing: Java's Parquet schema, the Arrow batches fed to the
//! encoder and the streaming upload to the object store.
//!
//! Schema (Java `ParquetSchemaConverter`): message `paimon_schema`; every field carries its
//! Paimon field id (`_KEY_<k>`: id + 1073741823, `_SEQUENCE_NUMBER` 2147483646, `_VALUE_KIND`
//! 2147483645); nullable → OPTIONAL, NOT NULL → REQUIRED; TINYINT/SMALLINT → INT32 with
//! INT(8/16, signed); DATE → INT32 DATE; TIME → INT32 TIME(MILLIS, UTC-adjusted as Java);
//! DECIMAL p ≤ 9 → INT32, p ≤ 18 → INT64, else FIXED_LEN_BYTE_ARRAY of the minimal length;
//! CHAR/VARCHAR → BINARY STRING; BINARY/VARBINARY/BLOB → BINARY; TIMESTAMP(p) p ≤ 3 → INT64
//! TIMESTAMP(MILLIS), p ≤ 6 → MICROS, LTZ with `isAdjustedToUTC`; ARRAY → 3-level LIST with a
//! `list`/`element` group; MAP and MULTISET → MAP with `key_value`/`key` (always REQUIRED)/
//! `value`; element/key/value ids are derived from the parent id and nesting depth as
//! Java `SpecialFields` does (`536870911 ± 1024·id ± depth`, Java int arithmetic); VARIANT →
//! group of REQUIRED BINARY `value` (id 0) and `metadata` (id 1).
//!
//! TIMESTAMP(p > 6), with or without local time zone, is INT96 as Java writes it (Julian day
//! and nanoseconds of the day, `ParquetSchemaConverter.createTimestampWithLogicalType`):
//! Java 1.3 reads an INT64 column of such a type as milliseconds whatever its unit
//! (`ParquetVectorUpdaterFactory.LongTimestampUpdater`), i.e. garbage. arrow-rs cannot encode
//! INT96, so files with such columns ([`PhysicalSchema::int96_leaves`]) are encoded column by
//! column ([`ChunkedWriter`]): the INT96 leaves as FIXED_LEN_BYTE_ARRAY(12) holding the INT96
//! bytes (PLAIN and dictionary pages of the two are byte-identical), whose chunk metadata is
//! then re-labelled INT96 (no statistics: INT96 has no defined order; Java ignores them).
//!
//! No `ARROW:schema` footer entry is written: the Parquet logical types carry every type
//! (pyarrow maps them back to the same Arrow types, Java ignores the entry), so files look
//! like Java's.
//!
//! Invariants: the Arrow schema fed to the encoder ([`PhysicalSchema::arrow`]) has the same
//! leaves, in the same order and with the same nullability, as the Parquet schema, so
//! definition levels always agree; bytes leave memory one row group at a time
//! (`sink::ObjectSink` streams them into a multipart upload).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use arrow_array::builder::FixedSizeBinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::TimestampNanosecondType;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StructArray};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema, SchemaRef, TimeUnit};
use bytes::Bytes;
use futures::future::BoxFuture;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory, ArrowWriterOptions,
};
use parquet::arrow::async_writer::{AsyncArrowWriter, AsyncFileWriter};
use parquet::basic::{
    Compression, GzipLevel, LogicalType, Repetition, TimeUnit as ParquetTimeUnit,
    Type as PhysicalType, ZstdLevel,
};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::properties::{
    EnabledStatistics, WriterProperties, DEFAULT_MAX_ROW_GROUP_ROW_COUNT,
};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescPtr, ColumnPath, SchemaDescriptor, Type, TypePtr};
use tidelake_spec::arrow::to_arrow_type;
use tidelake_spec::types::{element_id, map_key_id, DataType, TypeKind};

use super::sink::ObjectSink;
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Root name of Java's Parquet message.
const MESSAGE_NAME: &str = "paimon_schema";

/// Bytes of an INT96 timestamp.
const INT96_BYTES: i32 = 12;
/// The Julian day number of 1970-01-01 (INT96 timestamps count Julian days).
const JULIAN_DAY_OF_UNIX_EPOCH: i64 = 2_440_588;
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// One column of a data file as Parquet sees it.
pub(super) struct PhysicalColumn {
    pub name: String,
    pub field_id: i32,
    pub data_type: DataType,
    /// Every value is distinct within a file (`_SEQUENCE_NUMBER`, a single-column key): a
    /// dictionary could never shrink it, so the column is written PLAIN.
    pub unique: bool,
}

/// The Parquet schema of a data file and the Arrow schema its batches are encoded from.
pub(super) struct PhysicalSchema {
    descriptor: SchemaDescriptor,
    /// The schema the encoder writes when there are INT96 leaves: `descriptor` with each INT96
    /// leaf as FIXED_LEN_BYTE_ARRAY(12).
    encoded: Option<SchemaDescriptor>,
    arrow: SchemaRef,
    /// Per column: the input's Arrow type when it must be cast to the encoder's type.
    casts: Vec<Option<ArrowType>>,
    /// Top-level primitive columns written without a dictionary ([`PhysicalColumn::unique`]).
    plain_columns: Vec<ColumnPath>,
}

impl PhysicalSchema {
    pub(super) fn new(columns: &[PhysicalColumn]) -> Result<PhysicalSchema> {
        let mut parquet_fields = Vec::with_capacity(columns.len());
        let mut arrow_fields = Vec::with_capacity(columns.len());
        let mut casts = Vec::with_capacity(columns.len());
        let mut plain_columns = Vec::new();
        for column in columns {
            if column.unique {
                plain_columns.push(ColumnPath::from(column.name.as_str()));
            }
            parquet_fields.push(parquet_type(
                &column.name,
                &column.data_type,
                column.field_id,
                column.field_id,
                0,
            )?);
            let logical = to_arrow_type(&column.data_type)
                .map_err(|e| Error::from_spec("data file schema", e))?;
            let physical = encoder_type(&logical);
            casts.push((physical != logical).then(|| logical.clone()));
            arrow_fields.push(Field::new(
                &column.name,
                physical,
                column.data_type.nullable,
            ));
        }
        let root = Arc::new(
            Type::group_type_builder(MESSAGE_NAME)
                .with_fields(parquet_fields)
                .build()
                .map_err(|e| Error::parquet("building the Parquet schema", e))?,
        );
        let descriptor = SchemaDescriptor::new(root.clone());
        let encoded = if descriptor
            .columns()
            .iter()
            .any(|c| c.physical_type() == PhysicalType::INT96)
        {
            Some(SchemaDescriptor::new(int96_as_fixed(&root)?))
        } else {
            None
        };
        Ok(PhysicalSchema {
            descriptor,
            encoded,
            arrow: Arc::new(Schema::new(arrow_fields)),
            casts,
            plain_columns,
        })
    }

    /// Columns in file order, as the encoder wants them (`columns` hold the canonical
    /// `tidelake_spec::arrow` types).
    pub(super) fn batch(&self, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
        let strict = CastOptions {
            safe: false,
            ..Default::default()
        };
        let columns = columns
            .into_iter()
            .zip(self.arrow.fields().iter().zip(&self.casts))
            .map(|(column, (field, cast))| match cast {
                Some(logical) => {
                    let err = |e| Error::arrow(format!("encoding column '{}'", field.name()), e);
                    let column = if has_nanos(logical) {
                        int96_values(&column).map_err(err)?
                    } else {
                        column
                    };
                    cast_with_options(&column, field.data_type(), &strict).map_err(err)
                }
                None => Ok(column),
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(self.arrow.clone(), columns)
            .map_err(|e| Error::arrow("assembling a data-file batch", e))
    }

    /// Paths of the INT96 leaves (in leaf order), with their leaf index.
    fn int96_leaves(&self) -> Vec<(usize, ColumnDescPtr)> {
        self.descriptor
            .columns()
            .iter()
            .enumerate()
            .filter(|(_, c)| c.physical_type() == PhysicalType::INT96)
            .map(|(i, c)| (i, c.clone()))
            .collect()
    }
}

/// `node` with every INT96 leaf turned into a FIXED_LEN_BYTE_ARRAY(12) of the same name,
/// repetition and id.
fn int96_as_fixed(node: &TypePtr) -> Result<TypePtr> {
    let err = |e| Error::parquet("building the Parquet schema", e);
    let info = node.get_basic_info();
    let id = info.has_id().then(|| info.id());
    let built = if node.is_group() {
        let fields = node
            .get_fields()
            .iter()
            .map(int96_as_fixed)
            .collect::<Result<Vec<_>>>()?;
        let mut group = Type::group_type_builder(info.name())
            .with_logical_type(info.logical_type_ref().cloned())
            .with_fields(fields)
            .with_id(id);
        if info.has_repetition() {
            group = group.with_repetition(info.repetition());
        }
        group.build().map_err(err)?
    } else if node.get_physical_type() == PhysicalType::INT96 {
        Type::primitive_type_builder(info.name(), PhysicalType::FIXED_LEN_BYTE_ARRAY)
            .with_repetition(info.repetition())
            .with_length(INT96_BYTES)
            .with_id(id)
            .build()
            .map_err(err)?
    } else {
        return Ok(node.clone());
    };
    Ok(Arc::new(built))
}

/// Whether an Arrow type holds nanosecond timestamps (TIMESTAMP(7..9), written as INT96).
fn has_nanos(t: &ArrowType) -> bool {
    match t {
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => true,
        ArrowType::List(f) => has_nanos(f.data_type()),
        ArrowType::Map(f, _) => has_nanos(f.data_type()),
        ArrowType::Struct(fields) => fields.iter().any(|f| has_nanos(f.data_type())),
        _ => false,
    }
}

/// The INT96 bytes of a timestamp in nanoseconds since the epoch: nanoseconds of the day
/// (little-endian i64), then the Julian day (little-endian i32), as Java's
/// `ParquetRowDataWriter.timestampToInt96` writes them.
fn int96_bytes(nanos: i64) -> [u8; 12] {
    let day = nanos.div_euclid(NANOS_PER_DAY) + JULIAN_DAY_OF_UNIX_EPOCH;
    let of_day = nanos.rem_euclid(NANOS_PER_DAY);
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&of_day.to_le_bytes());
    // Nanosecond timestamps span years 1677..2262: the Julian day always fits an i32.
    out[8..].copy_from_slice(&(day as i32).to_le_bytes());
    out
}

/// `array` with every nanosecond timestamp replaced by its INT96 bytes (FixedSizeBinary(12)),
/// also inside lists, maps and structs.
fn int96_values(array: &ArrayRef) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    if !has_nanos(array.data_type()) {
        return Ok(array.clone());
    }
    let retyped = |f: &Arc<Field>, child: &ArrayRef| {
        Arc::new(f.as_ref().clone().with_data_type(child.data_type().clone()))
    };
    Ok(match array.data_type() {
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
            let values = array.as_primitive::<TimestampNanosecondType>();
            let mut out = FixedSizeBinaryBuilder::with_capacity(values.len(), INT96_BYTES);
            for v in values {
                match v {
                    Some(nanos) => out.append_value(int96_bytes(nanos))?,
                    None => out.append_null(),
                }
            }
            Arc::new(out.finish())
        }
        ArrowType::List(field) => {
            let list = array.as_list::<i32>();
            let values = int96_values(list.values())?;
            Arc::new(ListArray::try_new(
                retyped(field, &values),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        ArrowType::Struct(fields) => {
            let st = array.as_struct();
            let columns = st
                .columns()
                .iter()
                .map(int96_values)
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let fields: Fields = fields
                .iter()
                .zip(&columns)
                .map(|(f, c)| retyped(f, c))
                .collect();
            Arc::new(StructArray::try_new(fields, columns, st.nulls().cloned())?)
        }
        ArrowType::Map(field, sorted) => {
            let map = array.as_map();
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = int96_values(&entries)?;
            Arc::new(MapArray::try_new(
                retyped(field, &entries),
                map.offsets().clone(),
                entries.as_struct().clone(),
                map.nulls().cloned(),
                *sorted,
            )?)
        }
        _ => array.clone(),
    })
}

/// The Arrow type the encoder is fed for a column of Arrow type `logical`: Parquet has no
/// fixed-size BINARY(n) in Java's layout (BINARY), no seconds unit (MILLIS) and nanosecond
/// timestamps are INT96 (their bytes, see [`int96_values`]).
fn encoder_type(logical: &ArrowType) -> ArrowType {
    let field = |f: &Field| {
        Field::new(f.name(), encoder_type(f.data_type()), f.is_nullable())
            .with_metadata(f.metadata().clone())
    };
    match logical {
        ArrowType::FixedSizeBinary(_) => ArrowType::Binary,
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => ArrowType::FixedSizeBinary(INT96_BYTES),
        ArrowType::Timestamp(TimeUnit::Second, zone) => {
            ArrowType::Timestamp(TimeUnit::Millisecond, zone.clone())
        }
        ArrowType::List(element) => ArrowType::List(Arc::new(field(element))),
        ArrowType::Map(entries, sorted) => ArrowType::Map(Arc::new(field(entries)), *sorted),
        ArrowType::Struct(fields) => {
            ArrowType::Struct(fields.iter().map(|f| field(f)).collect::<Fields>())
        }
        other => other.clone(),
    }
}

/// Java `ParquetSchemaConverter.convertToParquetType(name, type, fieldId, depth)` followed by
/// `withId(id)`: `id` is this node's own id, `base` the id of the enclosing top-level (or ROW)
/// field from which Java derives every nested element/key/value id.
fn parquet_type(name: &str, ty: &DataType, id: i32, base: i32, depth: i32) -> Result<TypePtr> {
    let repetition = if ty.nullable {
        Repetition::OPTIONAL
    } else {
        Repetition::REQUIRED
    };
    let primitive = |physical: PhysicalType, logical: Option<LogicalType>| {
        Type::primitive_type_builder(name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_id(Some(id))
            .build()
    };
    let timestamp = |precision: u32, utc: bool| {
        let unit = match precision {
            0..=3 => ParquetTimeUnit::MILLIS,
            4..=6 => ParquetTimeUnit::MICROS,
            _ => return primitive(PhysicalType::INT96, None),
        };
        primitive(PhysicalType::INT64, Some(LogicalType::timestamp(utc, unit)))
    };
    let group = |logical: Option<LogicalType>, fields: Vec<TypePtr>| {
        Type::group_type_builder(name)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_fields(fields)
            .with_id(Some(id))
            .build()
    };
    let map = |key: &DataType, value: &DataType| -> Result<Type> {
        let key = parquet_type(
            "key",
            &key.with_nullable(false),
            map_key_id(base, depth + 1),
            base,
            depth + 1,
        )?;
        let value = parquet_type("value", value, element_id(base, depth + 1), base, depth + 1)?;
        let entries = Type::group_type_builder("key_value")
            .with_repetition(Repetition::REPEATED)
            .with_fields(vec![key, value])
            .build()
            .map_err(|e| Error::parquet("building the Parquet schema", e))?;
        group(Some(LogicalType::Map), vec![Arc::new(entries)])
            .map_err(|e| Error::parquet("building the Parquet schema", e))
    };
    let built = match &ty.kind {
        TypeKind::Char(_) | TypeKind::VarChar(_) => {
            primitive(PhysicalType::BYTE_ARRAY, Some(LogicalType::String))
        }
        TypeKind::Boolean => primitive(PhysicalType::BOOLEAN, None),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) | TypeKind::Blob => {
            primitive(PhysicalType::BYTE_ARRAY, None)
        }
        TypeKind::Decimal { precision, scale } => {
            let (p, s) = match (i32::try_from(*precision), i32::try_from(*scale)) {
                (Ok(p), Ok(s)) => (p, s),
                _ => return Err(Error::invalid(format!("invalid type {ty}"))),
            };
            let physical = match precision {
                0..=9 => PhysicalType::INT32,
                10..=18 => PhysicalType::INT64,
                _ => PhysicalType::FIXED_LEN_BYTE_ARRAY,
            };
            Type::primitive_type_builder(name, physical)
                .with_repetition(repetition)
                .with_logical_type(Some(LogicalType::decimal(s, p)))
                .with_precision(p)
                .with_scale(s)
                .with_length(decimal_bytes(*precision))
                .with_id(Some(id))
                .build()
        }
        TypeKind::TinyInt => primitive(PhysicalType::INT32, Some(LogicalType::integer(8, true))),
        TypeKind::SmallInt => primitive(PhysicalType::INT32, Some(LogicalType::integer(16, true))),
        TypeKind::Int => primitive(PhysicalType::INT32, None),
        TypeKind::BigInt => primitive(PhysicalType::INT64, None),
        TypeKind::Float => primitive(PhysicalType::FLOAT, None),
        TypeKind::Double => primitive(PhysicalType::DOUBLE, None),
        TypeKind::Date => primitive(PhysicalType::INT32, Some(LogicalType::Date)),
        TypeKind::Time(_) => primitive(
            PhysicalType::INT32,
            Some(LogicalType::time(true, ParquetTimeUnit::MILLIS)),
        ),
        TypeKind::Timestamp(p) => timestamp(*p, false),
        TypeKind::LocalZonedTimestamp(p) => timestamp(*p, true),
        TypeKind::Array(element) => {
            let element = parquet_type(
                "element",
                element,
                element_id(base, depth + 1),
                base,
                depth + 1,
            )?;
            let list = Type::group_type_builder("list")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![element])
                .build()
                .map_err(|e| Error::parquet("building the Parquet schema", e))?;
            group(Some(LogicalType::List), vec![Arc::new(list)])
        }
        TypeKind::Map(key, value) => return map(key, value).map(Arc::new),
        TypeKind::Multiset(element) => {
            return map(element, &DataType::not_null(TypeKind::Int)).map(Arc::new)
        }
        TypeKind::Row(fields) => {
            let children = fields
                .iter()
                .map(|f| parquet_type(&f.name, &f.data_type, f.id, f.id, 0))
                .collect::<Result<Vec<_>>>()?;
            group(None, children)
        }
        TypeKind::Variant => {
            let part = |part: &str, part_id: i32| {
                Type::primitive_type_builder(part, PhysicalType::BYTE_ARRAY)
                    .with_repetition(Repetition::REQUIRED)
                    .with_id(Some(part_id))
                    .build()
                    .map(Arc::new)
                    .map_err(|e| Error::parquet("building the Parquet schema", e))
            };
            group(None, vec![part("value", 0)?, part("metadata", 1)?])
        }
    };
    built
        .map(Arc::new)
        .map_err(|e| Error::parquet(format!("Parquet type of column '{name}'"), e))
}

/// Bytes of a FIXED_LEN_BYTE_ARRAY decimal: the smallest n with 2^(8n-1) ≥ 10^precision (Java
/// `computeMinBytesForDecimalPrecision`, which arrow-rs's encoder agrees with for 1..=38);
/// -1 (unset) for INT32/INT64 decimals.
fn decimal_bytes(precision: u32) -> i32 {
    if precision <= 18 {
        return -1;
    }
    let limit = 10f64.powi(i32::try_from(precision).unwrap_or(i32::MAX));
    let mut bytes = 1;
    while 2f64.powi(8 * bytes - 1) < limit {
        bytes += 1;
    }
    bytes
}

/// Encoder settings of one writer.
#[derive(Debug, Clone)]
pub(super) struct ParquetOptions {
    pub compression: Compression,
    /// Row groups are cut at this many encoded bytes (Java `parquet.block.size`).
    pub row_group_bytes: usize,
    /// Dictionary encoding (Java `parquet.enable.dictionary`, default on); columns whose
    /// values are all distinct never get one.
    pub dictionary: bool,
    /// Data pages end at this many bytes (Java `parquet.page.size`)...
    pub page_bytes: usize,
    /// ...or rows (Java `parquet.page.row.count.limit`).
    pub page_rows: usize,
}

impl ParquetOptions {
    /// `file.compression` (Java codec names, any case; `none` = uncompressed) at
    /// `file.compression.zstd-level`.
    pub(super) fn new(
        compression: &str,
        zstd_level: i32,
        row_group_bytes: u64,
        dictionary: bool,
        (page_bytes, page_rows): (usize, usize),
    ) -> Result<Self> {
        let codec =
            match compression.to_ascii_lowercase().as_str() {
                "none" | "uncompressed" => Compression::UNCOMPRESSED,
                "zstd" => Compression::ZSTD(
                    ZstdLevel::try_new(zstd_level)
                        .map_err(|e| Error::parquet("file.compression.zstd-level", e))?,
                ),
                "snappy" => Compression::SNAPPY,
                "gzip" => Compression::GZIP(GzipLevel::default()),
                "lz4" => Compression::LZ4,
                "lz4_raw" => Compression::LZ4_RAW,
                // Java Paimon's Parquet reader finds no Brotli codec in the Hadoop client it ships
                // with (`BrotliCodec was not found`): such files would be unreadable there.
                "brotli" => return Err(Error::Unsupported(
                    "file.compression 'brotli' for Parquet files: Java Paimon cannot read Brotli \
                     Parquet files (no Brotli codec in its Hadoop client); use zstd, snappy, gzip, \
                     lz4, lz4_raw or none"
                        .into(),
                )),
                other => {
                    return Err(Error::Unsupported(format!(
                    "file.compression '{other}' for Parquet files (supported: none, zstd, snappy, \
                     gzip, lz4, lz4_raw)"
                )))
                }
            };
        let row_group_bytes = usize::try_from(row_group_bytes.max(1)).unwrap_or(usize::MAX);
        Ok(ParquetOptions {
            compression: codec,
            row_group_bytes,
            dictionary,
            page_bytes,
            page_rows,
        })
    }

    /// Row groups end at `row_group_bytes` (estimated encoded size, like Java's
    /// `parquet.block.size`) or at arrow-rs's default of 1M rows, whichever comes first; input
    /// batch boundaries never cut a row group.
    ///
    /// Dictionaries: columns of `schema` whose values are unique get none, nor do columns whose
    /// dictionary does not pay on `first` (the file's first rows, laid out as `schema.arrow`),
    /// the decision Java's parquet-mr takes after a column's first page
    /// (`DictionaryValuesWriter.isCompressionSatisfying`). Otherwise arrow-rs would intern
    /// every value until the dictionary reaches its page limit (1 MiB) and only then fall back
    /// to PLAIN: the largest encoding cost of files with unique columns.
    fn properties(&self, schema: &PhysicalSchema, first: &RecordBatch) -> WriterProperties {
        let mut builder = WriterProperties::builder()
            .set_compression(self.compression)
            .set_max_row_group_bytes(Some(self.row_group_bytes))
            .set_max_row_group_row_count(Some(DEFAULT_MAX_ROW_GROUP_ROW_COUNT))
            .set_data_page_size_limit(self.page_bytes)
            .set_data_page_row_count_limit(self.page_rows)
            .set_dictionary_enabled(self.dictionary);
        for (_, leaf) in schema.int96_leaves() {
            builder =
                builder.set_column_statistics_enabled(leaf.path().clone(), EnabledStatistics::None);
        }
        if !self.dictionary {
            return builder.build();
        }
        let mut plain = schema.plain_columns.clone();
        for (field, column) in schema.arrow.fields().iter().zip(first.columns()) {
            if !dictionary_pays(column) {
                plain.push(ColumnPath::from(field.name().as_str()));
            }
        }
        for column in plain {
            builder = builder.set_column_dictionary_enabled(column, false);
        }
        builder.build()
    }
}

/// Whether dictionary-encoding `column` (a top-level column) would be smaller than PLAIN:
/// distinct values plus bit-packed indices against every value (Java parquet-mr's
/// `isCompressionSatisfying`). Only byte-array and fixed-width primitive columns are judged;
/// others keep their dictionary.
///
/// It runs on the first batch of every file written, so it is kept cheap: values up to 16
/// bytes are counted as integers, every set is sized once and hashed with foldhash, unkeyed
/// (the values are a file's own: no flooding to defend against; std's SipHash made this check
/// cost more than encoding a compaction's small output file), and counting stops once the
/// dictionary cannot pay whatever the values left.
fn dictionary_pays(column: &ArrayRef) -> bool {
    /// `values` (each with its PLAIN size) of `count` values taking `plain` bytes in all.
    fn judge<K: Hash + Eq>(
        values: impl Iterator<Item = (K, usize)>,
        count: usize,
        plain: usize,
    ) -> bool {
        let mut distinct: HashSet<K, foldhash::fast::FixedState> =
            HashSet::with_capacity_and_hasher(count, foldhash::fast::FixedState::default());
        let mut dictionary = 0usize;
        // dictionary bytes and index bits only grow with the values seen: once they reach the
        // PLAIN size the answer is no
        let loses = |dictionary: usize, distinct: usize| {
            let index_bits = (usize::BITS - distinct.leading_zeros()) as usize;
            dictionary + (count * index_bits).div_ceil(8) >= plain
        };
        for (v, size) in values {
            if distinct.insert(v) {
                dictionary += size;
                if loses(dictionary, distinct.len()) {
                    return false;
                }
            }
        }
        count == 0 || !loses(dictionary, distinct.len())
    }
    fn judge_bytes<'a>(values: impl Iterator<Item = &'a [u8]> + Clone) -> bool {
        const LENGTH_PREFIX: usize = 4;
        let (count, plain) = values.clone().fold((0, 0), |(n, bytes), v| {
            (n + 1, bytes + v.len() + LENGTH_PREFIX)
        });
        judge(values.map(|v| (v, v.len() + LENGTH_PREFIX)), count, plain)
    }
    let count = column.len() - column.null_count();
    let valid = move |i: usize| column.is_valid(i);
    match column.data_type() {
        ArrowType::Utf8 => judge_bytes(
            column
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::as_bytes),
        ),
        ArrowType::LargeUtf8 => judge_bytes(
            column
                .as_string::<i64>()
                .iter()
                .flatten()
                .map(str::as_bytes),
        ),
        ArrowType::Binary => judge_bytes(column.as_binary::<i32>().iter().flatten()),
        ArrowType::LargeBinary => judge_bytes(column.as_binary::<i64>().iter().flatten()),
        t if t.is_primitive() => {
            let Some(width) = t.primitive_width() else {
                return true;
            };
            let data = column.to_data();
            let start = data.offset() * width;
            let values = data.buffers()[0].as_slice()[start..start + data.len() * width]
                .chunks_exact(width)
                .enumerate()
                .filter(move |(i, _)| valid(*i))
                .map(|(_, v)| v);
            let plain = count * width;
            if width <= 16 {
                let as_int = |v: &[u8]| {
                    let mut bytes = [0u8; 16];
                    bytes[..v.len()].copy_from_slice(v);
                    (u128::from_le_bytes(bytes), v.len())
                };
                judge(values.map(as_int), count, plain)
            } else {
                judge(values.map(|v| (v, v.len())), count, plain)
            }
        }
        _ => true,
    }
}

impl AsyncFileWriter for ObjectSink {
    fn write(&mut self, bytes: Bytes) -> BoxFuture<'_, parquet::errors::Result<()>> {
        Box::pin(async move {
            self.put(bytes)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        })
    }

    fn complete(&mut self) -> BoxFuture<'_, parquet::errors::Result<()>> {
        Box::pin(async move {
            ObjectSink::complete(self)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        })
    }
}

/// One Parquet file being written.
pub(super) struct ParquetFile {
    writer: Encoder,
    display: String,
}

enum Encoder {
    Arrow(Box<AsyncArrowWriter<ObjectSink>>),
    Chunked(Box<ChunkedWriter>),
}

/// Encodes files with INT96 leaves column by column (see the module doc): arrow-rs column
/// writers over [`PhysicalSchema::encoded`], chunks spliced into a [`SerializedFileWriter`] of
/// the real schema, each row group's bytes streamed to the sink once it is complete.
struct ChunkedWriter {
    file: SerializedFileWriter<Vec<u8>>,
    sink: ObjectSink,
    /// Column writers of the encoded schema (INT96 leaves as FIXED_LEN_BYTE_ARRAY(12)).
    factory: ArrowRowGroupWriterFactory,
    arrow: SchemaRef,
    int96_leaves: Vec<(usize, ColumnDescPtr)>,
    columns: Vec<ArrowColumnWriter>,
    rows: usize,
    row_group_bytes: usize,
}

impl ChunkedWriter {
    fn new(
        sink: ObjectSink,
        schema: &PhysicalSchema,
        encoded: &SchemaDescriptor,
        props: WriterProperties,
        row_group_bytes: usize,
    ) -> parquet::errors::Result<ChunkedWriter> {
        let props = Arc::new(props);
        let file = SerializedFileWriter::new(
            Vec::new(),
            schema.descriptor.root_schema_ptr(),
            props.clone(),
        )?;
        // Only its schema and properties are used: the factory's writers encode, `file` stores.
        let encoding =
            SerializedFileWriter::new(std::io::sink(), encoded.root_schema_ptr(), props)?;
        let factory = ArrowRowGroupWriterFactory::new(&encoding, schema.arrow.clone());
        let columns = factory.create_column_writers(0)?;
        Ok(ChunkedWriter {
            file,
            sink,
            factory,
            arrow: schema.arrow.clone(),
            int96_leaves: schema.int96_leaves(),
            columns,
            rows: 0,
            row_group_bytes,
        })
    }

    fn in_progress_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(ArrowColumnWriter::get_estimated_total_bytes)
            .sum()
    }

    async fn write(&mut self, batch: &RecordBatch) -> parquet::errors::Result<()> {
        let mut leaf = 0;
        for (field, column) in self.arrow.fields().iter().zip(batch.columns()) {
            for leaf_column in compute_leaves(field, column)? {
                let writer = self.columns.get_mut(leaf).ok_or_else(|| {
                    ParquetError::General(format!("no column writer for leaf {leaf}"))
                })?;
                writer.write(&leaf_column)?;
                leaf += 1;
            }
        }
        self.rows += batch.num_rows();
        if self.in_progress_bytes() >= self.row_group_bytes
            || self.rows >= DEFAULT_MAX_ROW_GROUP_ROW_COUNT
        {
            self.flush_row_group().await?;
        }
        Ok(())
    }

    async fn flush_row_group(&mut self) -> parquet::errors::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let fresh = self
            .factory
            .create_column_writers(self.file.flushed_row_groups().len() + 1)?;
        let columns = std::mem::replace(&mut self.columns, fresh);
        let mut row_group = self.file.next_row_group()?;
        for (i, column) in columns.into_iter().enumerate() {
            let mut chunk = column.close()?;
            if let Some((_, descr)) = self.int96_leaves.iter().find(|(leaf, _)| *leaf == i) {
                as_int96(chunk.close_mut(), descr)?;
            }
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.rows = 0;
        self.drain().await
    }

    /// Hands the bytes encoded so far to the sink.
    async fn drain(&mut self) -> parquet::errors::Result<()> {
        let bytes = std::mem::take(self.file.inner_mut());
        if bytes.is_empty() {
            return Ok(());
        }
        self.sink.write(Bytes::from(bytes)).await
    }

    async fn finish(&mut self) -> parquet::errors::Result<()> {
        self.flush_row_group().await?;
        self.file.finish()?;
        self.drain().await?;
        AsyncFileWriter::complete(&mut self.sink).await
    }
}

/// Re-labels a FIXED_LEN_BYTE_ARRAY(12) chunk holding INT96 bytes as the INT96 column `descr`
/// (the same pages; statistics and the column index dropped).
fn as_int96(close: &mut ColumnCloseResult, descr: &ColumnDescPtr) -> parquet::errors::Result<()> {
    let m = &close.metadata;
    let mut builder = ColumnChunkMetaData::builder(descr.clone())
        .set_compression_codec(m.compression_codec())
        .set_encodings_mask(*m.encodings_mask())
        .set_total_compressed_size(m.compressed_size())
        .set_total_uncompressed_size(m.uncompressed_size())
        .set_num_values(m.num_values())
        .set_data_page_offset(m.data_page_offset())
        .set_dictionary_page_offset(m.dictionary_page_offset())
        .set_repetition_level_histogram(m.repetition_level_histogram().cloned())
        .set_definition_level_histogram(m.definition_level_histogram().cloned());
    if let Some(stats) = m.page_encoding_stats() {
        builder = builder.set_page_encoding_stats(stats.clone());
    }
    close.metadata = builder.build()?;
    close.column_index = None;
    Ok(())
}

impl ParquetFile {
    /// A file for batches shaped as `schema`, whose first rows will be `first` (they tune the
    /// encodings, see [`ParquetOptions::properties`]).
    pub(super) fn create(
        io: &FileIO,
        rel_path: &str,
        schema: &PhysicalSchema,
        options: &ParquetOptions,
        first: &RecordBatch,
    ) -> Result<ParquetFile> {
        let display = io.display(rel_path);
        let sink = ObjectSink::new(io, rel_path)?;
        let properties = options.properties(schema, first);
        let writer = match &schema.encoded {
            Some(encoded) => {
                ChunkedWriter::new(sink, schema, encoded, properties, options.row_group_bytes)
                    .map(|w| Encoder::Chunked(Box::new(w)))
            }
            None => {
                let writer_options = ArrowWriterOptions::new()
                    .with_properties(properties)
                    .with_skip_arrow_metadata(true)
                    .with_parquet_schema(schema.descriptor.clone());
                AsyncArrowWriter::try_new_with_options(sink, schema.arrow.clone(), writer_options)
                    .map(|w| Encoder::Arrow(Box::new(w)))
            }
        }
        .map_err(|e| Error::parquet(format!("creating {display}"), e))?;
        Ok(ParquetFile { writer, display })
    }

    pub(super) async fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.writer {
            Encoder::Arrow(w) => w.write(batch).await,
            Encoder::Chunked(w) => w.write(batch).await,
        }
        .map_err(|e| Error::parquet(format!("writing {}", self.display), e))
    }

    /// Bytes written so far plus the anticipated encoded size of the open row group (what
    /// Java's `ParquetWriter.getDataSize` estimates).
    pub(super) fn estimated_size(&self) -> u64 {
        let bytes = match &self.writer {
            Encoder::Arrow(w) => w.bytes_written() + w.in_progress_size(),
            Encoder::Chunked(w) => w.file.bytes_written() + w.in_progress_bytes(),
        };
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    /// Flush, write the footer and complete the upload; returns the file size in bytes.
    pub(super) async fn finish(mut self) -> Result<u64> {
        let closing = |e| Error::parquet(format!("closing {}", self.display), e);
        let bytes = match &mut self.writer {
            Encoder::Arrow(w) => {
                w.finish().await.map_err(closing)?;
                w.bytes_written()
            }
            Encoder::Chunked(w) => {
                w.finish().await.map_err(closing)?;
                w.file.bytes_written()
            }
        };
        Ok(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// Abandon the file: abort a started multipart upload. The caller deletes the path.
    pub(super) async fn abort(self) -> Result<()> {
        let sink = match self.writer {
            Encoder::Arrow(w) => w.into_inner(),
            Encoder::Chunked(w) => w.sink,
        };
        sink.abort(self.display).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidelake_spec::types::{DataField, MAX_LENGTH};

    #[test]
    fn dictionaries_only_where_they_pay() {
        use arrow_array::{Float64Array, Int32Array, StringArray};
        let unique: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..1000).map(|i| format!("note-{i}")),
        ));
        let few: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..1000).map(|i| format!("cat-{}", i % 8)),
        ));
        let prices: ArrayRef = Arc::new(Float64Array::from_iter_values(
            (0..1000).map(|i| i as f64 * 0.5),
        ));
        let small: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..1000).map(|i| (i % 3 != 0).then_some(i % 50)),
        ));
        assert!(!dictionary_pays(&unique));
        assert!(dictionary_pays(&few));
        assert!(!dictionary_pays(&prices));
        assert!(dictionary_pays(&small));
        // A slice is judged on its own rows.
        let repeated: ArrayRef = Arc::new(Int32Array::from_iter_values((0..1000).map(|i| {
            if i < 500 {
                i
            } else {
                7
            }
        })));
        assert!(!dictionary_pays(&repeated.slice(0, 500)));
        assert!(dictionary_pays(&repeated.slice(500, 500)));
    }

    /// The fast check (integer keys, early exit) decides exactly as the rule it implements,
    /// counted here the plain way: fixed-width and string columns, with nulls and offsets,
    /// from all-equal to all-distinct.
    #[test]
    fn dictionary_check_follows_the_rule() {
        use arrow_array::{Decimal128Array, Int64Array, Int8Array, StringArray};
        fn rule(values: Vec<Vec<u8>>, length_prefix: usize) -> bool {
            let count = values.len();
            let plain: usize = values.iter().map(|v| v.len() + length_prefix).sum();
            let distinct: std::collections::BTreeSet<Vec<u8>> = values.into_iter().collect();
            let dictionary: usize = distinct.iter().map(|v| v.len() + length_prefix).sum();
            let index_bits = (usize::BITS - distinct.len().leading_zeros()) as usize;
            count == 0 || dictionary + (count * index_bits).div_ceil(8) < plain
        }
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut paid, mut refused) = (0, 0);
        for len in [0usize, 1, 2, 7, 64, 300, 1000, 4096] {
            for range in [1u64, 2, 3, 50, 255, 1000, 1 << 20, u64::MAX] {
                for nulls in [0u64, 2, 7] {
                    let v: Vec<Option<u64>> = (0..len)
                        .map(|_| {
                            let x = next();
                            (nulls == 0 || x % nulls != 0).then_some(next() % range)
                        })
                        .collect();
                    let ints: ArrayRef =
                        Arc::new(Int64Array::from_iter(v.iter().map(|x| x.map(|x| x as i64))));
                    let bytes: ArrayRef =
                        Arc::new(Int8Array::from_iter(v.iter().map(|x| x.map(|x| x as i8))));
                    let decimals: ArrayRef = Arc::new(
                        Decimal128Array::from_iter(v.iter().map(|x| x.map(i128::from)))
                            .with_precision_and_scale(38, 2)
                            .unwrap(),
                    );
                    let strings: ArrayRef = Arc::new(StringArray::from_iter(
                        v.iter().map(|x| x.map(|x| format!("s{x}"))),
                    ));
                    let offset = len.min(3);
                    for (column, width, prefix) in [
                        (ints, 8, 0),
                        (bytes, 1, 0),
                        (decimals, 16, 0),
                        (strings, 0, 4),
                    ] {
                        for column in [column.clone(), column.slice(offset, len - offset)] {
                            let start = if column.len() == len { 0 } else { offset };
                            let values: Vec<Vec<u8>> = v[start..]
                                .iter()
                                .flatten()
                                .map(|&x| match width {
                                    0 => format!("s{x}").into_bytes(),
                                    1 => vec![x as i8 as u8],
                                    8 => x.to_le_bytes().to_vec(),
                                    _ => i128::from(x).to_le_bytes().to_vec(),
                                })
                                .collect();
                            let expected = rule(values, prefix);
                            assert_eq!(
                                dictionary_pays(&column),
                                expected,
                                "{:?} of {len} values below {range}",
                                column.data_type()
                            );
                            if expected {
                                paid += 1;
                            } else {
                                refused += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(paid > 50 && refused > 50, "{paid} paid, {refused} refused");
    }

    #[test]
    fn int96_is_julian_day_and_nanos_of_day() {
        let bytes = |nanos| {
            let b = int96_bytes(nanos);
            let of_day = i64::from_le_bytes(b[..8].try_into().unwrap());
            let day = i32::from_le_bytes(b[8..].try_into().unwrap());
            (day, of_day)
        };
        assert_eq!(bytes(0), (2_440_588, 0));
        // 2024-03-09T16:00:00.124456788 (the value Java 1.3.1 misread as INT64).
        let nanos = 1_710_000_000_124_456_788;
        assert_eq!(bytes(nanos), (2_440_588 + 19_791, 57_600_124_456_788));
        // One nanosecond before the epoch: the previous day's last nanosecond.
        assert_eq!(bytes(-1), (2_440_587, NANOS_PER_DAY - 1));
    }

    #[test]
    fn nanosecond_timestamps_are_int96_encoded_as_fixed_bytes() {
        let ts9 = DataType::new(TypeKind::Timestamp(9));
        let ltz7 = DataType::new(TypeKind::LocalZonedTimestamp(7));
        let nested = DataType::new(TypeKind::Array(Box::new(ts9.clone())));
        let columns: Vec<PhysicalColumn> = [
            ("a", ts9),
            ("b", ltz7),
            ("c", nested),
            ("d", DataType::new(TypeKind::Timestamp(6))),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (name, data_type))| PhysicalColumn {
            name: name.into(),
            field_id: i as i32,
            data_type,
            unique: false,
        })
        .collect();
        let schema = PhysicalSchema::new(&columns).unwrap();
        let physical: Vec<PhysicalType> = schema
            .descriptor
            .columns()
            .iter()
            .map(|c| c.physical_type())
            .collect();
        assert_eq!(
            physical,
            [
                PhysicalType::INT96,
                PhysicalType::INT96,
                PhysicalType::INT96,
                PhysicalType::INT64
            ]
        );
        assert_eq!(
            schema
                .int96_leaves()
                .iter()
                .map(|(i, _)| *i)
                .collect::<Vec<_>>(),
            [0, 1, 2]
        );
        let encoded = schema.encoded.as_ref().unwrap();
        for (file, enc) in schema.descriptor.columns().iter().zip(encoded.columns()) {
            assert_eq!(file.path(), enc.path());
            if file.physical_type() == PhysicalType::INT96 {
                assert_eq!(
                    (enc.physical_type(), enc.type_length()),
                    (PhysicalType::FIXED_LEN_BYTE_ARRAY, 12)
                );
            } else {
                assert_eq!(enc.physical_type(), file.physical_type());
            }
        }
        // Field ids survive the re-labelling (readers match columns by id).
        let ids = |d: &SchemaDescriptor| {
            d.root_schema()
                .get_fields()
                .iter()
                .map(|f| f.get_basic_info().id())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&schema.descriptor), ids(encoded));
        let batch = schema
            .batch(vec![
                Arc::new(arrow_array::TimestampNanosecondArray::from(vec![
                    Some(-1),
                    None,
                ])),
                Arc::new(
                    arrow_array::TimestampNanosecondArray::from(vec![Some(0), Some(1)])
                        .with_timezone("UTC"),
                ),
                Arc::new(ListArray::from_iter_primitive::<
                    TimestampNanosecondType,
                    _,
                    _,
                >(vec![Some(vec![Some(0)]), None])),
                Arc::new(arrow_array::TimestampMicrosecondArray::from(vec![
                    Some(1),
                    Some(2),
                ])),
            ])
            .unwrap();
        let a = batch.column(0).as_fixed_size_binary();
        assert_eq!(a.value(0), int96_bytes(-1));
        assert!(a.is_null(1));
        assert_eq!(
            batch
                .column(2)
                .as_list::<i32>()
                .value(0)
                .as_fixed_size_binary()
                .value(0),
            int96_bytes(0)
        );
    }

    #[test]
    fn decimal_lengths_match_java() {
        let expected = [(19, 9), (20, 9), (27, 12), (28, 12), (29, 13), (38, 16)];
        for (precision, bytes) in expected {
            assert_eq!(decimal_bytes(precision), bytes, "precision {precision}");
        }
        assert_eq!(decimal_bytes(18), -1);
    }

    #[test]
    fn derived_ids_follow_special_fields() {
        // The example of Java's SpecialFields javadoc: ARRAY(MAP(INT, ARRAY(INT))), id 10.
        assert_eq!(element_id(10, 1), 536_870_911 + 1024 * 10 + 1);
        assert_eq!(map_key_id(10, 2), 536_870_911 - 1024 * 10 - 2);
        assert_eq!(element_id(10, 3), 536_870_911 + 1024 * 10 + 3);
        let ty = DataType::new(TypeKind::Array(Box::new(DataType::new(TypeKind::Map(
            Box::new(DataType::new(TypeKind::Int)),
            Box::new(DataType::new(TypeKind::Array(Box::new(DataType::new(
                TypeKind::Int,
            ))))),
        )))));
        let schema = PhysicalSchema::new(&[PhysicalColumn {
            name: "a".into(),
            field_id: 10,
            data_type: ty,
            unique: false,
        }])
        .unwrap();
        let ids: Vec<(String, i32)> = schema
            .descriptor
            .columns()
            .iter()
            .flat_map(|c| {
                let mut out = Vec::new();
                let mut node = schema.descriptor.root_schema().get_fields().to_vec();
                for part in c.path().parts() {
                    let found = node.iter().find(|t| t.name() == part).unwrap().clone();
                    let info = found.get_basic_info();
                    if info.has_id() {
                        out.push((part.clone(), info.id()));
                    }
                    node = if found.is_group() {
                        found.get_fields().to_vec()
                    } else {
                        Vec::new()
                    };
                }
                out
            })
            .collect();
        assert!(ids.contains(&("element".to_string(), 536_870_911 + 10_241)));
        assert!(ids.contains(&("key".to_string(), 536_870_911 - 10_242)));
        assert!(ids.contains(&("value".to_string(), 536_870_911 + 10_242)));
        assert!(ids.contains(&("element".to_string(), 536_870_911 + 10_243)));
    }

    #[test]
    fn row_fields_keep_their_own_ids() {
        let row = DataType::new(TypeKind::Row(vec![
            DataField::new(5, "x", DataType::not_null(TypeKind::Int)),
            DataField::new(6, "y", DataType::new(TypeKind::VarChar(MAX_LENGTH))),
        ]));
        let t = parquet_type("st", &row, 4, 4, 0).unwrap();
        assert_eq!(t.get_basic_info().id(), 4);
        let ids: Vec<i32> = t
            .get_fields()
            .iter()
            .map(|f| f.get_basic_info().id())
            .collect();
        assert_eq!(ids, vec![5, 6]);
        assert_eq!(
            t.get_fields()[0].get_basic_info().repetition(),
            Repetition::REQUIRED
        );
    }
}
