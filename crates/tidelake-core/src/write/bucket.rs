//! Routing Arrow batches: partition grouping, fixed-bucket ids and key hashes, computed on
//! columns without materialising rows (Java `FixedBucketRowKeyExtractor`,
//! `DefaultBucketFunction`, `PartitionKeyExtractor`).
//!
//! A key or partition is the BinaryRow of its column values (row kind 0, no arity prefix);
//! its hash is Java `BinaryRow.hashCode` (murmur3 x86_32, seed 42) and its fixed bucket
//! `abs(hash % n)`. Rows whose columns are all of "compact" types (BOOLEAN, integers, FLOAT,
//! DOUBLE, DATE, TIME, DECIMAL p ≤ 18, TIMESTAMP p ≤ 3, strings, binaries) in their canonical
//! Arrow encoding are encoded straight from the arrays into one reused buffer; anything else
//! goes through `datum_at` + `encode_row`.
//!
//! Invariant: both paths produce exactly `tidelake_spec::binary_row::encode_row`'s bytes, so
//! buckets equal `tidelake_spec::bucket::bucket_of` and partitions are byte-identical to
//! Java's (including the null quirks of non-compact types, which take the generic path).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMillisecondType,
};
use arrow_array::{Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use arrow_select::take::take_record_batch;
use tidelake_spec::binary_row::{encode_row, null_bits_width, serialize_framed};
use tidelake_spec::bucket::{bucket_of_hash, hash_row};
use tidelake_spec::datum::Datum;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataType, TypeKind};

use crate::datum_arrow::datum_at;
use crate::error::{Error, Result};

/// Longest string/binary stored inside its slot.
const MAX_INLINE_LEN: usize = 7;
const INLINE_MARK: u8 = 0x80;
/// Decimals up to this precision are stored in the slot.
const MAX_COMPACT_DECIMAL_PRECISION: u32 = 18;
/// Timestamps up to this precision are stored in the slot.
const MAX_COMPACT_TIMESTAMP_PRECISION: u32 = 3;

/// The rows of a batch that belong to one partition.
#[derive(Debug, Clone)]
pub struct PartitionGroup {
    /// Framed BinaryRow of the partition values, as stored in manifests (`_PARTITION`).
    pub partition: Vec<u8>,
    /// The partition values.
    pub values: Vec<Datum>,
    /// Row indices into the batch, ascending.
    pub rows: UInt32Array,
}

/// Java's fixed bucket of every row: `abs(hash(key row) % num_buckets)`.
pub fn bucket_ids(
    batch: &RecordBatch,
    key_columns: &[usize],
    key_types: &[DataType],
    num_buckets: i32,
) -> Result<Vec<i32>> {
    if num_buckets <= 0 {
        return Err(Error::invalid(format!(
            "bucket count {num_buckets} must be positive"
        )));
    }
    let hashes = key_hashes(batch, key_columns, key_types)?;
    Ok(hashes
        .into_iter()
        .map(|h| bucket_of_hash(h, num_buckets))
        .collect())
}

/// Java `BinaryRow.hashCode` of every row's key (the value stored in dynamic-bucket `HASH`
/// index files).
pub fn key_hashes(
    batch: &RecordBatch,
    key_columns: &[usize],
    key_types: &[DataType],
) -> Result<Vec<i32>> {
    let encoder = RowEncoder::new(batch, key_columns, key_types)?;
    let mut buf = Vec::new();
    (0..batch.num_rows())
        .map(|row| {
            encoder.encode(row, &mut buf)?;
            Ok(hash_row(&buf))
        })
        .collect()
}

/// The BinaryRow (no arity prefix) of every row's `key_columns`: keys as Java compares and
/// stores them (e.g. in the cross-partition key index).
pub fn key_rows(
    batch: &RecordBatch,
    key_columns: &[usize],
    key_types: &[DataType],
) -> Result<Vec<Vec<u8>>> {
    let encoder = RowEncoder::new(batch, key_columns, key_types)?;
    let mut buf = Vec::new();
    (0..batch.num_rows())
        .map(|row| {
            encoder.encode(row, &mut buf)?;
            Ok(buf.clone())
        })
        .collect()
}

/// Where each row of `batch` lives in a table of `schema`: the framed BinaryRow of its
/// partition and its fixed bucket (`-1` when the table's buckets are not fixed: dynamic,
/// bucket-unaware or postpone; or when `batch` lacks a bucket-key column), for routing rows
/// next to the table's (partition, bucket) in a distributed job. `batch` holds (at least) the
/// partition columns, by name and of the table's types; partitions rescaled to another bucket
/// count are not known here.
pub fn row_places(schema: &TableSchema, batch: &RecordBatch) -> Result<Vec<(Vec<u8>, i32)>> {
    let columns = |names: &[String]| -> Result<(Vec<usize>, Vec<DataType>)> {
        names
            .iter()
            .map(|n| {
                let field = schema
                    .field(n)
                    .ok_or_else(|| Error::invalid(format!("the table has no column {n:?}")))?;
                let index = batch.schema().index_of(n).map_err(|_| {
                    Error::invalid(format!("routing rows needs column {n:?} of the table"))
                })?;
                Ok((index, field.data_type.clone()))
            })
            .collect::<Result<Vec<_>>>()
            .map(|v| v.into_iter().unzip())
    };
    let (partition_columns, partition_types) = columns(&schema.partition_keys)?;
    let buckets = schema
        .options()
        .bucket()
        .map_err(|e| Error::invalid(e.to_string()))?;
    let bucket_keys = schema.bucket_keys();
    let fixed = if buckets > 0
        && bucket_keys
            .iter()
            .all(|k| batch.schema().index_of(k).is_ok())
    {
        Some(columns(&bucket_keys)?)
    } else {
        None
    };
    let mut out = vec![(Vec::new(), -1); batch.num_rows()];
    for group in group_by_partition(batch, &partition_columns, &partition_types)? {
        let ids = match &fixed {
            Some((key_columns, key_types)) => {
                let rows = take_record_batch(batch, &group.rows)
                    .map_err(|e| Error::arrow("routing rows", e))?;
                bucket_ids(&rows, key_columns, key_types, buckets)?
            }
            None => vec![-1; group.rows.len()],
        };
        for (&row, bucket) in group.rows.values().iter().zip(ids) {
            out[row as usize] = (group.partition.clone(), bucket);
        }
    }
    Ok(out)
}

/// Split a batch by partition, groups in order of first appearance. An unpartitioned table
/// (no partition columns) gets one group with the empty row; an empty batch no group.
pub fn group_by_partition(
    batch: &RecordBatch,
    partition_columns: &[usize],
    partition_types: &[DataType],
) -> Result<Vec<PartitionGroup>> {
    let rows = batch.num_rows();
    let row_count = u32::try_from(rows)
        .map_err(|_| Error::invalid(format!("a batch of {rows} rows is too large to group")))?;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let encoder = RowEncoder::new(batch, partition_columns, partition_types)?;
    if partition_columns.is_empty() {
        let mut empty = Vec::new();
        encoder.encode(0, &mut empty)?;
        return Ok(vec![PartitionGroup {
            partition: serialize_framed(&empty, 0),
            values: Vec::new(),
            rows: UInt32Array::from_iter_values(0..row_count),
        }]);
    }
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut groups: Vec<(Vec<u8>, Vec<u32>)> = Vec::new();
    let mut buf = Vec::new();
    for row in 0..row_count {
        encoder.encode(row as usize, &mut buf)?;
        match index.get(buf.as_slice()) {
            Some(&g) => groups[g].1.push(row),
            None => {
                index.insert(buf.clone(), groups.len());
                groups.push((buf.clone(), vec![row]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(bytes, rows)| {
            let first = rows[0] as usize;
            let values = encoder.datums(first)?;
            Ok(PartitionGroup {
                partition: serialize_framed(&bytes, partition_columns.len()),
                values,
                rows: UInt32Array::from(rows),
            })
        })
        .collect()
}

/// Slot contents of a field read straight from its array.
enum Slot<'a> {
    /// A fixed-width value: its 8-byte little-endian slot.
    Fixed(Box<dyn Fn(usize) -> u64 + 'a>),
    /// A string or binary value: its bytes.
    Var(Box<dyn Fn(usize) -> &'a [u8] + 'a>),
}

/// Encodes the BinaryRow of some columns of a batch, row by row.
struct RowEncoder<'a> {
    columns: Vec<&'a dyn Array>,
    types: &'a [DataType],
    /// Direct slot readers when every column has one.
    fast: Option<Vec<Slot<'a>>>,
}

impl<'a> RowEncoder<'a> {
    fn new(batch: &'a RecordBatch, indices: &[usize], types: &'a [DataType]) -> Result<Self> {
        if indices.len() != types.len() {
            return Err(Error::invalid(format!(
                "{} key columns but {} key types",
                indices.len(),
                types.len()
            )));
        }
        let columns = indices
            .iter()
            .map(|&i| {
                if i < batch.num_columns() {
                    Ok(batch.column(i).as_ref())
                } else {
                    Err(Error::invalid(format!(
                        "column index {i} out of range for a batch of {} columns",
                        batch.num_columns()
                    )))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let fast = columns
            .iter()
            .zip(types)
            .map(|(array, ty)| slot_reader(*array, ty))
            .collect();
        Ok(RowEncoder {
            columns,
            types,
            fast,
        })
    }

    /// The values of `row`.
    fn datums(&self, row: usize) -> Result<Vec<Datum>> {
        self.columns
            .iter()
            .zip(self.types)
            .map(|(array, ty)| datum_at(*array, row, ty))
            .collect()
    }

    /// Replace `buf` with the BinaryRow of `row` (no arity prefix).
    fn encode(&self, row: usize, buf: &mut Vec<u8>) -> Result<()> {
        let Some(slots) = &self.fast else {
            *buf = encode_row(&self.datums(row)?, self.types)
                .map_err(|e| Error::from_spec("key row", e))?;
            return Ok(());
        };
        let width = null_bits_width(slots.len());
        buf.clear();
        buf.resize(width + 8 * slots.len(), 0);
        for (i, (slot, array)) in slots.iter().zip(&self.columns).enumerate() {
            let at = width + 8 * i;
            if array.is_null(row) {
                // Null bit of field i is bit i + 8 of the header; the slot stays zero.
                buf[1 + i / 8] |= 1 << (i % 8);
                continue;
            }
            match slot {
                Slot::Fixed(value) => buf[at..at + 8].copy_from_slice(&value(row).to_le_bytes()),
                Slot::Var(value) => write_var(buf, at, value(row))?,
            }
        }
        Ok(())
    }
}

/// Store `bytes` inline (≤ 7 bytes: data, then `0x80 | len` in the slot's last byte) or in the
/// 8-byte aligned variable part (`offset << 32 | len` in the slot).
fn write_var(buf: &mut Vec<u8>, slot: usize, bytes: &[u8]) -> Result<()> {
    if bytes.len() <= MAX_INLINE_LEN {
        buf[slot..slot + bytes.len()].copy_from_slice(bytes);
        // A length of at most 7 always fits the mark's low bits.
        buf[slot + 7] = INLINE_MARK | bytes.len() as u8;
        return Ok(());
    }
    let offset = buf.len();
    let too_large = || Error::invalid(format!("a key value of {} bytes is too large", bytes.len()));
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|l| *l <= i32::MAX as u32)
        .ok_or_else(too_large)?;
    let off = u32::try_from(offset)
        .ok()
        .filter(|o| *o <= i32::MAX as u32)
        .ok_or_else(too_large)?;
    buf.extend_from_slice(bytes);
    buf.resize(buf.len().div_ceil(8) * 8, 0);
    let word = (u64::from(off) << 32) | u64::from(len);
    buf[slot..slot + 8].copy_from_slice(&word.to_le_bytes());
    Ok(())
}

/// A direct slot reader for `array` as Paimon type `ty`, if its encoding is compact and the
/// array is in the canonical Arrow type (anything else uses the generic path).
fn slot_reader<'a>(array: &'a dyn Array, ty: &DataType) -> Option<Slot<'a>> {
    fn fixed<'a>(f: impl Fn(usize) -> u64 + 'a) -> Option<Slot<'a>> {
        Some(Slot::Fixed(Box::new(f)))
    }
    fn var<'a>(f: impl Fn(usize) -> &'a [u8] + 'a) -> Option<Slot<'a>> {
        Some(Slot::Var(Box::new(f)))
    }
    match (&ty.kind, array.data_type()) {
        (TypeKind::Boolean, ArrowType::Boolean) => {
            let a = array.as_boolean();
            fixed(move |i| u64::from(a.value(i)))
        }
        (TypeKind::TinyInt, ArrowType::Int8) => {
            let v = array.as_primitive::<Int8Type>().values();
            fixed(move |i| u64::from(v[i] as u8))
        }
        (TypeKind::SmallInt, ArrowType::Int16) => {
            let v = array.as_primitive::<Int16Type>().values();
            fixed(move |i| u64::from(v[i] as u16))
        }
        (TypeKind::Int, ArrowType::Int32) => {
            let v = array.as_primitive::<Int32Type>().values();
            fixed(move |i| u64::from(v[i] as u32))
        }
        (TypeKind::Date, ArrowType::Date32) => {
            let v = array.as_primitive::<Date32Type>().values();
            fixed(move |i| u64::from(v[i] as u32))
        }
        (TypeKind::Time(_), ArrowType::Time32(TimeUnit::Millisecond)) => {
            let v = array.as_primitive::<Time32MillisecondType>().values();
            fixed(move |i| u64::from(v[i] as u32))
        }
        (TypeKind::BigInt, ArrowType::Int64) => {
            let v = array.as_primitive::<Int64Type>().values();
            fixed(move |i| v[i] as u64)
        }
        (TypeKind::Float, ArrowType::Float32) => {
            let v = array.as_primitive::<Float32Type>().values();
            fixed(move |i| u64::from(v[i].to_bits()))
        }
        (TypeKind::Double, ArrowType::Float64) => {
            let v = array.as_primitive::<Float64Type>().values();
            fixed(move |i| v[i].to_bits())
        }
        (TypeKind::Decimal { precision, scale }, ArrowType::Decimal128(_, s))
            if *precision <= MAX_COMPACT_DECIMAL_PRECISION
                && i64::from(*s) == i64::from(*scale) =>
        {
            let a = array.as_primitive::<Decimal128Type>();
            // Only if every value fits the slot; otherwise the generic path reports it.
            let fits = (0..a.len()).all(|i| a.is_null(i) || i64::try_from(a.value(i)).is_ok());
            let v = a.values();
            fits.then(|| Slot::Fixed(Box::new(move |i: usize| v[i] as i64 as u64)))
        }
        (
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
            ArrowType::Timestamp(TimeUnit::Millisecond, _),
        ) if *p <= MAX_COMPACT_TIMESTAMP_PRECISION => {
            let v = array.as_primitive::<TimestampMillisecondType>().values();
            fixed(move |i| v[i] as u64)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8) => {
            let a = array.as_string::<i32>();
            var(move |i| a.value(i).as_bytes())
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::LargeUtf8) => {
            let a = array.as_string::<i64>();
            var(move |i| a.value(i).as_bytes())
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8View) => {
            let a = array.as_string_view();
            var(move |i| a.value(i).as_bytes())
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::Binary) => {
            let a = array.as_binary::<i32>();
            var(move |i| a.value(i))
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::LargeBinary) => {
            let a = array.as_binary::<i64>();
            var(move |i| a.value(i))
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::BinaryView) => {
            let a = array.as_binary_view();
            var(move |i| a.value(i))
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), ArrowType::FixedSizeBinary(_)) => {
            let a = array.as_fixed_size_binary();
            var(move |i| a.value(i))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::ArrayRef;
    use arrow_schema::{Field, Schema};
    use proptest::prelude::*;
    use tidelake_spec::binary_row::encode_framed;
    use tidelake_spec::bucket::bucket_of;
    use tidelake_spec::types::{DataField, MAX_LENGTH};

    use super::*;
    use crate::datum_arrow::datums_to_array;

    fn batch_of(columns: Vec<(Vec<Datum>, DataType)>) -> RecordBatch {
        let fields: Vec<Field> = columns
            .iter()
            .enumerate()
            .map(|(i, (_, ty))| {
                Field::new(
                    format!("c{i}"),
                    tidelake_spec::arrow::to_arrow_type(ty).unwrap(),
                    true,
                )
            })
            .collect();
        let arrays: Vec<ArrayRef> = columns
            .iter()
            .map(|(values, ty)| datums_to_array(values, ty).unwrap())
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    /// Types with a fast path, and some without (they must still agree).
    fn key_types() -> Vec<DataType> {
        vec![
            t(TypeKind::Boolean),
            t(TypeKind::TinyInt),
            t(TypeKind::SmallInt),
            t(TypeKind::Int),
            t(TypeKind::BigInt),
            t(TypeKind::Float),
            t(TypeKind::Double),
            t(TypeKind::Decimal {
                precision: 10,
                scale: 2,
            }),
            t(TypeKind::Decimal {
                precision: 30,
                scale: 3,
            }),
            t(TypeKind::VarChar(MAX_LENGTH)),
            t(TypeKind::Char(5)),
            t(TypeKind::VarBinary(MAX_LENGTH)),
            t(TypeKind::Binary(3)),
            t(TypeKind::Date),
            t(TypeKind::Time(3)),
            t(TypeKind::Timestamp(3)),
            t(TypeKind::Timestamp(0)),
            t(TypeKind::Timestamp(6)),
            t(TypeKind::LocalZonedTimestamp(9)),
            t(TypeKind::Array(Box::new(t(TypeKind::Int)))),
            t(TypeKind::Row(vec![
                DataField::new(100, "x", t(TypeKind::Int)),
                DataField::new(101, "y", t(TypeKind::VarChar(MAX_LENGTH))),
            ])),
        ]
    }

    fn datum_strategy(ty: &DataType) -> BoxedStrategy<Datum> {
        let value: BoxedStrategy<Datum> = match &ty.kind {
            TypeKind::Boolean => any::<bool>().prop_map(Datum::Boolean).boxed(),
            TypeKind::TinyInt => any::<i8>().prop_map(Datum::TinyInt).boxed(),
            TypeKind::SmallInt => any::<i16>().prop_map(Datum::SmallInt).boxed(),
            TypeKind::Int => any::<i32>().prop_map(Datum::Int).boxed(),
            TypeKind::BigInt => any::<i64>().prop_map(Datum::BigInt).boxed(),
            TypeKind::Float => any::<f32>().prop_map(Datum::Float).boxed(),
            TypeKind::Double => any::<f64>().prop_map(Datum::Double).boxed(),
            TypeKind::Decimal { precision, .. } => {
                let max = 10i128.pow(*precision) - 1;
                (-max..=max).prop_map(Datum::Decimal).boxed()
            }
            TypeKind::Char(_) | TypeKind::VarChar(_) => {
                "\\PC{0,20}".prop_map(Datum::String).boxed()
            }
            TypeKind::Binary(n) => proptest::collection::vec(any::<u8>(), *n as usize)
                .prop_map(Datum::Bytes)
                .boxed(),
            TypeKind::VarBinary(_) => proptest::collection::vec(any::<u8>(), 0..20)
                .prop_map(Datum::Bytes)
                .boxed(),
            TypeKind::Date => (-100_000i32..100_000).prop_map(Datum::Date).boxed(),
            TypeKind::Time(_) => (0i32..86_400_000).prop_map(Datum::Time).boxed(),
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => {
                let step = 10i32.pow(9 - (*p).min(9)).max(1);
                let nanos_steps = 1_000_000 / step.min(1_000_000);
                let seconds = *p == 0;
                (
                    -4_000_000_000_000i64..4_000_000_000_000,
                    0..nanos_steps.max(1),
                )
                    .prop_map(move |(millis, n)| {
                        let millis = if seconds {
                            millis / 1000 * 1000
                        } else {
                            millis
                        };
                        let nanos = if step >= 1_000_000 { 0 } else { n * step };
                        Datum::Timestamp { millis, nanos }
                    })
                    .boxed()
            }
            TypeKind::Array(e) => proptest::collection::vec(datum_strategy(e), 0..4)
                .prop_map(Datum::Array)
                .boxed(),
            TypeKind::Row(fields) => fields
                .iter()
                .map(|f| datum_strategy(&f.data_type))
                .collect::<Vec<_>>()
                .prop_map(Datum::Row)
                .boxed(),
            other => panic!("no strategy for {other:?}"),
        };
        prop_oneof![1 => Just(Datum::Null), 5 => value].boxed()
    }

    fn rows_strategy() -> impl Strategy<Value = (Vec<usize>, Vec<Vec<Datum>>)> {
        let types = key_types();
        proptest::collection::vec(0..types.len(), 1..4).prop_flat_map(move |picked| {
            let row = picked
                .iter()
                .map(|&i| datum_strategy(&types[i]))
                .collect::<Vec<_>>();
            (Just(picked), proptest::collection::vec(row, 1..12))
        })
    }

    proptest! {
        #[test]
        fn matches_the_spec_encoder((picked, rows) in rows_strategy(), n in 1i32..50) {
            let all = key_types();
            let types: Vec<DataType> = picked.iter().map(|&i| all[i].clone()).collect();
            let columns = (0..types.len())
                .map(|c| (rows.iter().map(|r| r[c].clone()).collect(), types[c].clone()))
                .collect();
            let batch = batch_of(columns);
            let indices: Vec<usize> = (0..types.len()).collect();
            let buckets = bucket_ids(&batch, &indices, &types, n).unwrap();
            let hashes = key_hashes(&batch, &indices, &types).unwrap();
            let groups = group_by_partition(&batch, &indices, &types).unwrap();
            for (r, values) in rows.iter().enumerate() {
                let bytes = encode_row(values, &types).unwrap();
                prop_assert_eq!(hashes[r], hash_row(&bytes));
                prop_assert_eq!(buckets[r], bucket_of(values, &types, n).unwrap());
                let framed = encode_framed(values, &types).unwrap();
                let group = groups.iter().find(|g| g.rows.values().contains(&(r as u32))).unwrap();
                prop_assert_eq!(&group.partition, &framed);
            }
            let total: usize = groups.iter().map(|g| g.rows.len()).sum();
            prop_assert_eq!(total, rows.len());
        }
    }

    #[test]
    fn doc_examples() {
        let string = DataType::string();
        let batch = batch_of(vec![
            (
                vec![Datum::Int(1), Datum::Int(3), Datum::Null],
                t(TypeKind::Int),
            ),
            (
                vec![
                    Datum::String("hello".into()),
                    Datum::String("hello world!".into()),
                    Datum::String("a".into()),
                ],
                string.clone(),
            ),
        ]);
        let int = [t(TypeKind::Int)];
        assert_eq!(bucket_ids(&batch, &[0], &int, 4).unwrap(), vec![2, 1, 0]);
        assert_eq!(
            key_hashes(&batch, &[1], std::slice::from_ref(&string)).unwrap(),
            vec![0x0E86_E932, 0x2458_F823, 0x3839_545E]
        );
        assert_eq!(
            key_hashes(&batch, &[0, 1], &[t(TypeKind::Int), string]).unwrap()[0] as u32,
            0xB5D6_BE46
        );
        assert!(bucket_ids(&batch, &[0], &int, 0).is_err());
        assert!(bucket_ids(&batch, &[5], &int, 2).is_err());
    }

    #[test]
    fn groups_keep_first_appearance_order() {
        let batch = batch_of(vec![(
            vec![
                Datum::String("b".into()),
                Datum::Null,
                Datum::String("b".into()),
                Datum::String("a".into()),
            ],
            DataType::string(),
        )]);
        let groups = group_by_partition(&batch, &[0], &[DataType::string()]).unwrap();
        let summary: Vec<(Vec<Datum>, Vec<u32>)> = groups
            .iter()
            .map(|g| (g.values.clone(), g.rows.values().to_vec()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (vec![Datum::String("b".into())], vec![0, 2]),
                (vec![Datum::Null], vec![1]),
                (vec![Datum::String("a".into())], vec![3]),
            ]
        );
        let unpartitioned = group_by_partition(&batch, &[], &[]).unwrap();
        assert_eq!(unpartitioned.len(), 1);
        assert_eq!(unpartitioned[0].partition, vec![0u8; 12]);
        assert_eq!(unpartitioned[0].rows.len(), 4);
        assert!(
            group_by_partition(&batch.slice(0, 0), &[0], &[DataType::string()])
                .unwrap()
                .is_empty()
        );
    }
}
