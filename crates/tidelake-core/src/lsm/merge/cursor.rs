//! Run cursors: the current batch of each sorted run with its keys encoded for comparison.
//!
//! Keys are encoded with one shared `arrow_row::RowConverter` (ascending, nulls first), so
//! comparing key bytes is Java's key comparator: integers, decimals, dates and timestamps by
//! value, strings and binaries unsigned byte-wise with shorter prefixes first, booleans false
//! first, floats by IEEE total order after every NaN is made the canonical positive NaN — which
//! is `Float.compare` (-0.0 < 0.0, NaN greatest). User `sequence.field` columns get a second
//! converter: ascending or descending, but nulls first either way, as in Java's generated
//! `RecordComparator` (null short-circuits before the order is applied).
//!
//! A batch is validated when loaded: `_SEQUENCE_NUMBER` Int64 and `_VALUE_KIND` Int8 without
//! nulls, kinds in 0..=3, and the same column types as the first batch of the merge.
//!
//! Keys of fixed-width columns only (integers, floats, decimals, dates, times, timestamps,
//! booleans) encode to rows of one length; up to 16 bytes they are also kept as big-endian
//! `u128`s, whose integer order is the byte order of equal-length rows. Comparing those is a
//! couple of instructions instead of a `memcmp` call per comparison, and the merge keeps each
//! cursor's current one in a flat array for the loser tree (see [`compare`]). Integer-backed
//! keys without nulls (the usual primary key) are packed straight from their values, the same
//! integers without building the row encoding first ([`pack_integer_keys`]).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType as ArrowType, SchemaRef, SortOptions};
use futures::stream::BoxStream;

use crate::datum_arrow::is_signed_integer_backed;
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{Rec, RowKind, VALUE_OFFSET};

/// One sorted run and its position.
pub(super) struct Cursor {
    pub stream: BoxStream<'static, Result<RecordBatch>>,
    /// `None` once the run is exhausted.
    pub head: Option<Head>,
}

/// The batch a cursor is on.
pub(super) struct Head {
    pub slot: u32,
    pub pos: usize,
    pub len: usize,
    /// The row-encoded keys; `None` when they were packed straight from the values.
    pub keys: Option<Rows>,
    /// The keys as integers (see the module docs), when the key is fixed-width and short.
    pub packed: Option<Vec<u128>>,
    pub seq_keys: Option<Rows>,
    pub seq: ScalarBuffer<i64>,
    pub kinds: ScalarBuffer<i8>,
}

impl Head {
    /// Order of the key at `pos` against `other`'s key at `other_pos`.
    #[inline]
    pub fn key_cmp(&self, pos: usize, other: &Head, other_pos: usize) -> Ordering {
        match (&self.packed, &other.packed) {
            (Some(a), Some(b)) => a[pos].cmp(&b[other_pos]),
            _ => self.key_row(pos).cmp(other.key_row(other_pos)),
        }
    }

    /// Whether the current key is `key`.
    pub fn key_is(&self, key: &OwnedKey) -> bool {
        match (&self.packed, key.packed) {
            (Some(a), Some(b)) => a[self.pos] == b,
            _ => self.key_row(self.pos) == key.bytes.as_slice(),
        }
    }

    /// The row-encoded key at `pos` (heads without packed keys always have them).
    fn key_row(&self, pos: usize) -> &[u8] {
        self.keys.as_ref().expect("keys that do not pack are row-encoded").row(pos).data()
    }

    pub fn rec(&self) -> Rec {
        Rec {
            slot: self.slot,
            row: u32::try_from(self.pos).expect("batch rows fit in u32"),
            kind: RowKind::from_code(self.kinds[self.pos]).expect("kinds validated on load"),
        }
    }

    fn is_add(&self) -> bool {
        matches!(self.kinds[self.pos], 0 | 2)
    }
}

/// A copy of one key, kept while its cursor moves on.
#[derive(Default)]
pub(super) struct OwnedKey {
    bytes: Vec<u8>,
    packed: Option<u128>,
}

impl OwnedKey {
    /// Become the current key of `head`.
    pub fn set(&mut self, head: &Head) {
        self.bytes.clear();
        if let Some(keys) = &head.keys {
            self.bytes.extend_from_slice(keys.row(head.pos).data());
        }
        self.packed = head.packed.as_ref().map(|p| p[head.pos]);
    }
}

/// Merge order of two cursors (Java `SortMergeReaderWithMinHeap`'s comparator): key, user
/// sequence fields, `_SEQUENCE_NUMBER`, retracts before adds; exhausted cursors last; ties by
/// run index so the order is total.
///
/// `current` is empty, or holds each cursor's current packed key ([`EXHAUSTED`] once it is
/// exhausted): then distinct keys are ordered from that flat array alone, without touching
/// the cursors (the tree's hot path), and only equal ones take the full comparison.
#[inline]
pub(super) fn compare(cursors: &[Cursor], current: &[u128], a: usize, b: usize) -> Ordering {
    if let (Some(x), Some(y)) = (current.get(a), current.get(b)) {
        if x != y {
            return x.cmp(y);
        }
    }
    compare_heads(cursors, a, b)
}

/// The packed key [`compare`] sees for an exhausted cursor: no smaller than any real key, and
/// a real key equal to it falls through to the full comparison, which puts exhausted last.
pub(super) const EXHAUSTED: u128 = u128::MAX;

/// [`compare`] from the cursors themselves.
fn compare_heads(cursors: &[Cursor], a: usize, b: usize) -> Ordering {
    match (&cursors[a].head, &cursors[b].head) {
        (Some(x), Some(y)) => x
            .key_cmp(x.pos, y, y.pos)
            .then_with(|| match (&x.seq_keys, &y.seq_keys) {
                (Some(sx), Some(sy)) => sx.row(x.pos).cmp(&sy.row(y.pos)),
                _ => Ordering::Equal,
            })
            .then_with(|| x.seq[x.pos].cmp(&y.seq[y.pos]))
            .then_with(|| x.is_add().cmp(&y.is_add()))
            .then(a.cmp(&b)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(&b),
    }
}

/// Turns input batches into [`Head`]s.
pub(super) struct Encoder {
    input_schema: SchemaRef,
    key_indices: Vec<usize>,
    sequence_indices: Vec<usize>,
    keys: RowConverter,
    /// Encoded key length when every key column is fixed-width and the rows fit a `u128`.
    packed_len: Option<usize>,
    sequence: Option<RowConverter>,
}

impl Encoder {
    /// An encoder for batches shaped like `input_schema`.
    pub fn new(
        input_schema: SchemaRef,
        key_indices: &[usize],
        sequence_indices: &[usize],
        sequence_descending: bool,
    ) -> Result<Self> {
        let value_columns = input_schema.fields().len().saturating_sub(VALUE_OFFSET);
        let sort_fields = |indices: &[usize], descending: bool| -> Result<Vec<SortField>> {
            indices
                .iter()
                .map(|&i| {
                    if i >= value_columns {
                        return Err(Error::invalid(format!(
                            "merge config: column {i} out of range, the runs have {value_columns} value columns"
                        )));
                    }
                    let data_type = input_schema.field(i + VALUE_OFFSET).data_type().clone();
                    Ok(SortField::new_with_options(
                        data_type,
                        SortOptions { descending, nulls_first: true },
                    ))
                })
                .collect()
        };
        let converter = |fields| {
            RowConverter::new(fields).map_err(|e| Error::arrow("key columns of the merge", e))
        };
        let key_fields = sort_fields(key_indices, false)?;
        // arrow_row: one null byte plus the value's bytes per fixed-width column.
        let packed_len = key_indices
            .iter()
            .map(|&i| match input_schema.field(i + VALUE_OFFSET).data_type() {
                ArrowType::Boolean => Some(2),
                t if t.is_primitive() => t.primitive_width().map(|w| w + 1),
                _ => None,
            })
            .sum::<Option<usize>>()
            .filter(|&len| (1..=16).contains(&len));
        let keys = converter(key_fields)?;
        let sequence = if sequence_indices.is_empty() {
            None
        } else {
            Some(converter(sort_fields(
                sequence_indices,
                sequence_descending,
            )?)?)
        };
        Ok(Encoder {
            input_schema,
            key_indices: key_indices.to_vec(),
            sequence_indices: sequence_indices.to_vec(),
            keys,
            packed_len,
            sequence,
        })
    }

    /// Whether every [`Head`] this encoder makes has packed keys ([`Head::packed`]).
    pub fn packs_keys(&self) -> bool {
        self.packed_len.is_some()
    }

    /// Validate `batch` and encode its keys; `slot` is where the pool will keep it.
    pub fn head(&self, batch: &RecordBatch, slot: u32) -> Result<Head> {
        self.validate(batch)?;
        let columns = |indices: &[usize]| -> Vec<ArrayRef> {
            indices
                .iter()
                .map(|&i| canonical_nan(batch.column(i + VALUE_OFFSET)))
                .collect()
        };
        let key_columns = columns(&self.key_indices);
        let direct = self.packed_len.and_then(|len| pack_integer_keys(&key_columns, len));
        let (keys, packed) = match direct {
            Some(packed) => (None, Some(packed)),
            None => {
                let keys = self
                    .keys
                    .convert_columns(&key_columns)
                    .map_err(|e| Error::arrow("encoding merge keys", e))?;
                let packed = self.packed_len.map(|len| pack_keys(&keys, len));
                (Some(keys), packed)
            }
        };
        let seq_keys = match &self.sequence {
            None => None,
            Some(c) => Some(
                c.convert_columns(&columns(&self.sequence_indices))
                    .map_err(|e| Error::arrow("encoding sequence fields", e))?,
            ),
        };
        Ok(Head {
            slot,
            pos: 0,
            len: batch.num_rows(),
            keys,
            packed,
            seq_keys,
            seq: batch.column(0).as_primitive::<Int64Type>().values().clone(),
            kinds: batch.column(1).as_primitive::<Int8Type>().values().clone(),
        })
    }

    fn validate(&self, batch: &RecordBatch) -> Result<()> {
        let expected = self.input_schema.fields();
        let actual = batch.schema();
        let same_shape = actual.fields().len() == expected.len()
            && actual
                .fields()
                .iter()
                .zip(expected.iter())
                .all(|(a, e)| a.data_type() == e.data_type());
        if !same_shape {
            return Err(Error::invalid(format!(
                "sorted runs disagree on columns: expected {expected:?}, got {:?}",
                actual.fields()
            )));
        }
        let seq = batch.column(0);
        let kinds = batch.column(1);
        if seq.null_count() > 0 || kinds.null_count() > 0 {
            return Err(Error::invalid(
                "_SEQUENCE_NUMBER and _VALUE_KIND must not be null",
            ));
        }
        if let Some(bad) = kinds
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .find(|k| !(0..=3).contains(*k))
        {
            return Err(Error::invalid(format!("invalid _VALUE_KIND {bad}")));
        }
        Ok(())
    }
}

/// The rows of `keys`, each `len` bytes, as big-endian integers left-aligned in a `u128`.
/// Every row has that length: arrow_row encodes a fixed-width column (nulls included) to one
/// byte plus its width.
fn pack_keys(keys: &Rows, len: usize) -> Vec<u128> {
    (0..keys.num_rows())
        .map(|i| {
            let mut bytes = [0u8; 16];
            bytes[..len].copy_from_slice(keys.row(i).data());
            u128::from_be_bytes(bytes)
        })
        .collect()
}

/// What [`pack_keys`] makes of the row encoding of `columns`, computed from the values: per
/// column a validity byte 0x01, then the value big-endian with the sign bit of signed types
/// flipped (arrow_row's encoding, ascending, for non-null values). Only for columns whose
/// values are integers (integers, dates, times, timestamps, durations) without nulls, and
/// `len` bytes in all; `None` for anything else.
fn pack_integer_keys(columns: &[ArrayRef], len: usize) -> Option<Vec<u128>> {
    // (width, signed) per column, before anything is allocated
    let mut layout = Vec::with_capacity(columns.len());
    for column in columns {
        let signed = match column.data_type() {
            t if is_signed_integer_backed(t) => true,
            ArrowType::UInt8 | ArrowType::UInt16 | ArrowType::UInt32 | ArrowType::UInt64 => false,
            _ => return None,
        };
        if column.null_count() > 0 {
            return None;
        }
        layout.push((column.data_type().primitive_width()?, signed));
    }
    if layout.iter().map(|(width, _)| 1 + width).sum::<usize>() != len || len > 16 {
        return None;
    }
    let rows = columns.first()?.len();
    let mut packed = vec![0u128; rows];
    let mut used = 0;
    for (column, &(width, signed)) in columns.iter().zip(&layout) {
        let valid = 1u128 << (8 * (15 - used));
        let shift = 8 * (16 - (used + 1 + width));
        let sign = if signed { 1u64 << (8 * width - 1) } else { 0 };
        let data = column.to_data();
        match width {
            1 => fill(&mut packed, &data.buffer::<u8>(0)[..rows], valid, shift, sign),
            2 => fill(&mut packed, &data.buffer::<u16>(0)[..rows], valid, shift, sign),
            4 => fill(&mut packed, &data.buffer::<u32>(0)[..rows], valid, shift, sign),
            8 => fill(&mut packed, &data.buffer::<u64>(0)[..rows], valid, shift, sign),
            _ => return None,
        }
        used += 1 + width;
    }
    Some(packed)
}

/// Add one column's bytes to each packed key: its validity byte (`valid`) and its value, sign
/// bit flipped by `sign`, `shift` bits up.
fn fill<T: Copy + Into<u64>>(packed: &mut [u128], values: &[T], valid: u128, shift: usize, sign: u64) {
    for (p, &v) in packed.iter_mut().zip(values) {
        *p |= valid | (u128::from(v.into() ^ sign) << shift);
    }
}

/// Check the system columns of the first batch, which fixes the shape of all others.
pub(super) fn check_input_schema(schema: &SchemaRef) -> Result<()> {
    let fields = schema.fields();
    if fields.len() < VALUE_OFFSET
        || fields[0].data_type() != &ArrowType::Int64
        || fields[1].data_type() != &ArrowType::Int8
    {
        return Err(Error::invalid(format!(
            "sorted-run batches must start with _SEQUENCE_NUMBER (Int64) and _VALUE_KIND (Int8), got {fields:?}"
        )));
    }
    Ok(())
}

/// Replace every NaN by the canonical positive NaN (Java compares all NaNs equal).
fn canonical_nan(column: &ArrayRef) -> ArrayRef {
    match column.data_type() {
        ArrowType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                Arc::new(a.unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v }))
            } else {
                column.clone()
            }
        }
        ArrowType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            if a.values().iter().any(|v| v.is_nan()) {
                Arc::new(a.unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v }))
            } else {
                column.clone()
            }
        }
        _ => column.clone(),
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::types::{Date32Type, Int16Type, Int32Type, Int8Type, TimestampMicrosecondType, UInt32Type};
    use arrow_array::PrimitiveArray;
    use proptest::prelude::*;

    use super::*;

    /// What the merge did before packing straight from values: row-encode, then pack.
    fn via_rows(columns: &[ArrayRef]) -> (usize, Vec<u128>) {
        let fields = columns
            .iter()
            .map(|c| SortField::new_with_options(c.data_type().clone(), SortOptions { descending: false, nulls_first: true }))
            .collect();
        let rows = RowConverter::new(fields).unwrap().convert_columns(columns).unwrap();
        let len = rows.row(0).data().len();
        (len, pack_keys(&rows, len))
    }

    fn array<T: arrow_array::ArrowPrimitiveType>(values: Vec<T::Native>) -> ArrayRef {
        // sliced by one, so the values start at an offset into their buffer
        let a = PrimitiveArray::<T>::from_iter_values(values);
        let n = a.len();
        Arc::new(a.slice(1, n - 1))
    }

    proptest! {
        #[test]
        fn integer_keys_pack_as_their_row_encoding(
            a in prop::collection::vec(any::<i64>(), 2..40),
            b in prop::collection::vec(any::<i32>(), 40),
            c in prop::collection::vec(any::<i16>(), 40),
            d in prop::collection::vec(any::<i8>(), 40),
            e in prop::collection::vec(any::<u32>(), 40),
        ) {
            let n = a.len();
            let cases: Vec<Vec<ArrayRef>> = vec![
                vec![array::<Int64Type>(a.clone())],
                vec![array::<TimestampMicrosecondType>(a.clone())],
                vec![array::<Date32Type>(b[..n].to_vec())],
                vec![array::<Int32Type>(b[..n].to_vec()), array::<Int64Type>(a.clone())],
                vec![array::<Int16Type>(c[..n].to_vec()), array::<Int8Type>(d[..n].to_vec()), array::<UInt32Type>(e[..n].to_vec())],
            ];
            for columns in cases {
                let (len, expected) = via_rows(&columns);
                prop_assert_eq!(pack_integer_keys(&columns, len), Some(expected));
            }
        }
    }

    #[test]
    fn other_keys_are_not_packed_from_values() {
        let with_null: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(1), None]));
        assert_eq!(pack_integer_keys(&[with_null], 9), None);
        let float: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0]));
        assert_eq!(pack_integer_keys(&[float], 9), None);
        let wide: Vec<ArrayRef> = vec![array::<Int64Type>(vec![1, 2, 3]), array::<Int64Type>(vec![1, 2, 3])];
        assert_eq!(pack_integer_keys(&wide, 18), None);
    }
}
