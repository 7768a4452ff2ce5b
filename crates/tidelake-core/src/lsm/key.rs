//! Paimon's key order, in one place: Java's key comparator (`RecordComparator` over the
//! primary key) on decoded keys ([`compare_keys`]) and on Arrow key columns ([`KeyCodec`]).
//!
//! Key columns are encoded as `arrow_row` rows (ascending, nulls first) after every NaN is
//! made the canonical positive NaN, so comparing row bytes is Java's comparator: integers,
//! decimals, dates and timestamps by value, strings and binaries unsigned byte-wise with
//! shorter prefixes first, booleans false first, floats as `Float.compare` (-0.0 < 0.0, NaN
//! greatest, all NaNs equal). User `sequence.field` columns use the same codec, ascending or
//! descending but nulls first either way, as Java's generated comparator.
//!
//! Fast path: keys of fixed-width columns only (integers, floats, decimals, dates, times,
//! timestamps, booleans) encode to rows of one length; up to 16 bytes they are also kept as
//! big-endian `u128`s, whose integer order is the byte order of equal-length rows
//! ([`KeyCodec::encode_packed`]). Integer-backed keys without nulls (the usual primary key) are
//! packed straight from their values, the same integers without building the row encoding
//! first ([`pack_integer_keys`]).
//!
//! Every sort, merge and key-range check of the engine goes through this module, so the
//! write buffer, the files it writes, the merge that reads them and the conflict checks on
//! their key ranges agree on one order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_row::{OwnedRow, RowConverter, Rows, SortField};
use arrow_schema::{DataType as ArrowType, SortOptions};
use tidelake_spec::datum::Datum;
use tidelake_spec::types::DataType;

use crate::datum_arrow::{compare_datums, datums_to_array, is_signed_integer_backed};
use crate::error::{Error, Result};

/// Lexicographic comparison of decoded keys with Java's comparator (nulls first); a shorter
/// key that is a prefix of a longer one is smaller.
pub fn compare_keys(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match compare_datums(x, y).unwrap_or(Ordering::Equal) {
            Ordering::Equal => {}
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// Encodes key columns of fixed Arrow types into rows in Java's key order (module docs).
pub(crate) struct KeyCodec {
    converter: RowConverter,
    types: Vec<ArrowType>,
    /// Encoded row length when every column is fixed-width and the rows fit a `u128`.
    packed_len: Option<usize>,
}

impl KeyCodec {
    /// Ascending keys of `types`.
    pub fn new(types: Vec<ArrowType>) -> Result<KeyCodec> {
        KeyCodec::with_order(types, false)
    }

    /// Keys of `types`, descending if asked; nulls first either way.
    pub fn with_order(types: Vec<ArrowType>, descending: bool) -> Result<KeyCodec> {
        let fields = types
            .iter()
            .map(|t| {
                SortField::new_with_options(
                    t.clone(),
                    SortOptions {
                        descending,
                        nulls_first: true,
                    },
                )
            })
            .collect();
        let converter = RowConverter::new(fields).map_err(|e| Error::arrow("key encoding", e))?;
        // arrow_row: one null byte plus the value's bytes per fixed-width column.
        let packed_len = types
            .iter()
            .map(|t| match t {
                ArrowType::Boolean => Some(2),
                t if t.is_primitive() => t.primitive_width().map(|w| w + 1),
                _ => None,
            })
            .sum::<Option<usize>>()
            .filter(|&len| (1..=16).contains(&len));
        Ok(KeyCodec {
            converter,
            types,
            packed_len,
        })
    }

    /// Whether [`KeyCodec::encode_packed`] always returns packed keys.
    pub fn packs_keys(&self) -> bool {
        self.packed_len.is_some()
    }

    /// The keys of `columns` (one array per key column) as rows.
    pub fn encode(&self, columns: &[ArrayRef]) -> Result<Rows> {
        let columns: Vec<ArrayRef> = columns.iter().map(canonical_nan).collect();
        self.converter
            .convert_columns(&columns)
            .map_err(|e| Error::arrow("key encoding", e))
    }

    /// No rows yet, room for `rows` of them.
    pub fn empty_rows(&self, rows: usize) -> Rows {
        self.converter.empty_rows(rows, 0)
    }

    /// Append the keys of `columns` to `rows` (made by this codec).
    pub fn append(&self, rows: &mut Rows, columns: &[ArrayRef]) -> Result<()> {
        let columns: Vec<ArrayRef> = columns.iter().map(canonical_nan).collect();
        self.converter
            .append(rows, &columns)
            .map_err(|e| Error::arrow("key encoding", e))
    }

    /// The keys of `columns` as rows and as packed integers (module docs): `(None, Some)`
    /// when packed straight from the values, `(Some, None)` when the key does not pack.
    pub fn encode_packed(&self, columns: &[ArrayRef]) -> Result<(Option<Rows>, Option<Vec<u128>>)> {
        if let Some(packed) = self
            .packed_len
            .and_then(|len| pack_integer_keys(columns, len))
        {
            return Ok((None, Some(packed)));
        }
        let rows = self.encode(columns)?;
        let packed = self.packed_len.map(|len| pack_keys(&rows, len));
        Ok((Some(rows), packed))
    }

    /// Encode one key given as values of `types` (a file's min or max key).
    pub fn encode_datums(&self, key: &[Datum], types: &[DataType]) -> Result<OwnedRow> {
        if key.len() != self.types.len() || types.len() != self.types.len() {
            return Err(Error::invalid(format!(
                "a key range of {} columns against keys of {}",
                key.len(),
                self.types.len()
            )));
        }
        let columns = key
            .iter()
            .zip(types)
            .zip(&self.types)
            .map(|((datum, ty), arrow_type)| {
                let array = datums_to_array(std::slice::from_ref(datum), ty)?;
                arrow_cast::cast(&array, arrow_type).map_err(|e| Error::arrow("key range", e))
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(self.encode(&columns)?.row(0).owned())
    }
}

/// The key columns of `[system columns.., v0..vn]` batches, encoded with a [`KeyCodec`] built
/// from the first batch it sees.
pub(crate) struct KeyEncoder {
    key_indices: Vec<usize>,
    codec: Option<KeyCodec>,
}

impl KeyEncoder {
    /// Keys at the value columns `key_indices`.
    pub(crate) fn new(key_indices: Vec<usize>) -> KeyEncoder {
        KeyEncoder {
            key_indices,
            codec: None,
        }
    }

    /// Encode the keys of `batch` (key columns after `offset` system columns).
    pub(crate) fn encode(&mut self, batch: &RecordBatch, offset: usize) -> Result<Rows> {
        let columns = self
            .key_indices
            .iter()
            .map(|&i| {
                batch.columns().get(i + offset).cloned().ok_or_else(|| {
                    Error::invalid(format!("merge input has no key column at {}", i + offset))
                })
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        if self.codec.is_none() {
            self.codec = Some(KeyCodec::new(
                columns.iter().map(|c| c.data_type().clone()).collect(),
            )?);
        }
        self.codec()?.encode(&columns)
    }

    /// Encode one key given as values of `types` (a file's min or max key), in the order of
    /// the keys [`KeyEncoder::encode`] returned (it must have been called before).
    pub(crate) fn encode_datums(&self, key: &[Datum], types: &[DataType]) -> Result<OwnedRow> {
        self.codec()?.encode_datums(key, types)
    }

    fn codec(&self) -> Result<&KeyCodec> {
        self.codec
            .as_ref()
            .ok_or_else(|| Error::invalid("key converter used before any key was encoded"))
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
            1 => fill(
                &mut packed,
                &data.buffer::<u8>(0)[..rows],
                valid,
                shift,
                sign,
            ),
            2 => fill(
                &mut packed,
                &data.buffer::<u16>(0)[..rows],
                valid,
                shift,
                sign,
            ),
            4 => fill(
                &mut packed,
                &data.buffer::<u32>(0)[..rows],
                valid,
                shift,
                sign,
            ),
            8 => fill(
                &mut packed,
                &data.buffer::<u64>(0)[..rows],
                valid,
                shift,
                sign,
            ),
            _ => return None,
        }
        used += 1 + width;
    }
    Some(packed)
}

/// Add one column's bytes to each packed key: its validity byte (`valid`) and its value, sign
/// bit flipped by `sign`, `shift` bits up.
fn fill<T: Copy + Into<u64>>(
    packed: &mut [u128],
    values: &[T],
    valid: u128,
    shift: usize,
    sign: u64,
) {
    for (p, &v) in packed.iter_mut().zip(values) {
        *p |= valid | (u128::from(v.into() ^ sign) << shift);
    }
}

/// Replace every NaN by the canonical positive NaN (Java compares all NaNs equal).
pub(crate) fn canonical_nan(column: &ArrayRef) -> ArrayRef {
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
    use arrow_array::types::{
        Date32Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, UInt32Type,
    };
    use arrow_array::PrimitiveArray;
    use proptest::prelude::*;

    use super::*;

    /// What the merge did before packing straight from values: row-encode, then pack.
    fn via_rows(columns: &[ArrayRef]) -> (usize, Vec<u128>) {
        let codec = KeyCodec::new(columns.iter().map(|c| c.data_type().clone()).collect()).unwrap();
        let rows = codec.encode(columns).unwrap();
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
        let wide: Vec<ArrayRef> = vec![
            array::<Int64Type>(vec![1, 2, 3]),
            array::<Int64Type>(vec![1, 2, 3]),
        ];
        assert_eq!(pack_integer_keys(&wide, 18), None);
    }

    /// A nullable double, with both signs of zero and of NaN among the values.
    fn double() -> impl Strategy<Value = Datum> {
        prop_oneof![
            Just(Datum::Null),
            Just(Datum::Double(f64::NAN)),
            Just(Datum::Double(-f64::NAN)),
            Just(Datum::Double(0.0)),
            Just(Datum::Double(-0.0)),
            any::<f64>().prop_map(Datum::Double),
        ]
    }

    fn string() -> impl Strategy<Value = Datum> {
        prop_oneof![Just(Datum::Null), "[a-c]{0,3}".prop_map(Datum::String)]
    }

    proptest! {
        /// The encoded rows order keys exactly as `compare_keys` on their values.
        #[test]
        fn rows_order_as_decoded_keys(keys in prop::collection::vec((double(), string(), any::<i32>()), 2..30)) {
            use tidelake_spec::types::TypeKind;
            let types = [DataType::new(TypeKind::Double), DataType::new(TypeKind::VarChar(tidelake_spec::types::MAX_LENGTH)), DataType::not_null(TypeKind::Int)];
            let arrow_types: Vec<ArrowType> = types.iter().map(|t| crate::datum_arrow::arrow_type_of(t).unwrap()).collect();
            let codec = KeyCodec::new(arrow_types).unwrap();
            let keys: Vec<Vec<Datum>> = keys.into_iter().map(|(d, s, i)| vec![d, s, Datum::Int(i)]).collect();
            let rows: Vec<OwnedRow> = keys.iter().map(|k| codec.encode_datums(k, &types).unwrap()).collect();
            for (a, ra) in keys.iter().zip(&rows) {
                for (b, rb) in keys.iter().zip(&rows) {
                    prop_assert_eq!(ra.row().cmp(&rb.row()), compare_keys(a, b), "{:?} vs {:?}", a, b);
                }
            }
        }
    }

    #[test]
    fn nans_of_either_sign_are_one_key_above_every_number() {
        let column: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            -f64::NAN,
            f64::INFINITY,
            f64::NAN,
        ]));
        let rows = KeyCodec::new(vec![ArrowType::Float64])
            .unwrap()
            .encode(&[column])
            .unwrap();
        assert_eq!(rows.row(0), rows.row(2));
        assert!(rows.row(1) < rows.row(0));
    }
}
