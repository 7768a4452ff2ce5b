//! [`RowOrder`]: the order sort compaction and clustered writes put the rows of an append table
//! in, as one byte key per row compared as unsigned bytes (memcmp): the columns themselves
//! (`order`), their Z-order curve (`zorder`, Java `ZIndexer`) or their Hilbert curve
//! (`hilbert`, Java `HilbertIndexer`).
//!
//! * `order`: the Arrow row format of the columns, ascending with nulls first (Spark's default
//!   order, which Java's `OrderSorter` sorts by).
//! * `zorder`: byte for byte Java's `ZIndexer.index`: each column to 8 order-preserving bytes
//!   (`ZOrderByteUtils`: integers, dates, times and timestamps in epoch milliseconds with the
//!   sign bit flipped; floats through Java's `floatToOrderedBytes`, whose shift by 31 instead of
//!   63 is kept; booleans `0x81`/`0x00`; decimals their unscaled two's-complement bytes,
//!   truncated or zero-filled to 8), strings and binaries their first
//!   `zorder.var-length-contribution` bytes zero-filled, nulls all zeros; then the columns'
//!   bits interleaved (`ZOrderByteUtils.interleaveBits`).
//! * `hilbert`: each column to Java's long form (`HilbertIndexer`: integers as longs, tinyints
//!   as their unsigned byte, floats their IEEE bits, decimals their integral part, timestamps
//!   epoch milliseconds, strings and binaries their first 8 bytes as a big-endian number with
//!   shorter values zero-padded on the left, booleans `Long.MAX_VALUE`/0, nulls
//!   `Long.MAX_VALUE`), then the position on the 63-bit-per-dimension Hilbert curve through
//!   Skilling's transform ("Programming the Hilbert curve", AIP 2004; the one of the
//!   davidmoten `hilbert-curve` library Java uses), as big-endian bytes of
//!   `ceil(63 × columns / 8)` bytes. Java truncates that index to 63 bytes (more than eight
//!   columns); tidelake keeps it whole, which only refines the order.
//!
//! Invariants: every key of one [`RowOrder`] has the same length for `zorder` and `hilbert`;
//! columns of types Java cannot order by (arrays, maps, rows, variants, blobs) are refused
//! when the order is built, never per row. File order is not part of Paimon's format: these
//! orders only decide which rows share a file, for data skipping.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, BinaryArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as ArrowType, SortOptions, TimeUnit};
use tidelake_spec::options::OrderType;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataType, TypeKind};

use crate::error::{Error, Result};

/// Bytes of a fixed-width column in a Z-order key (Java `ZOrderByteUtils.PRIMITIVE_BUFFER_SIZE`).
const Z_PRIMITIVE_BYTES: usize = 8;

/// Bits per dimension of the Hilbert curve (Java `HilbertIndexer.BITS_NUM`).
const HILBERT_BITS: u32 = 63;

/// Java `HilbertIndexer.PRIMITIVE_EMPTY`: the long form of nulls and of `true`.
const HILBERT_EMPTY: i64 = i64::MAX;

/// Java `Double.doubleToLongBits` of NaN (every NaN is this one).
const CANONICAL_NAN_BITS: i64 = 0x7ff8_0000_0000_0000;

/// An order of the rows of one table by some of its columns.
#[derive(Debug)]
pub struct RowOrder {
    order: OrderType,
    /// Positions of the columns in the table's fields, with their types.
    columns: Vec<(usize, DataType)>,
    /// Bytes of a CHAR, VARCHAR, BINARY or VARBINARY column in a Z-order key.
    var_length: usize,
    /// `order`: the converter to the Arrow row format.
    rows: Option<RowConverter>,
}

impl RowOrder {
    /// The order of `schema`'s rows by `columns` (names) as `order` says, with
    /// `zorder.var-length-contribution` from the schema's options. Unknown columns, none, a
    /// Hilbert order of one column (Java needs two) and columns of types that cannot be
    /// ordered by are [`Error::Invalid`].
    pub fn new(schema: &TableSchema, columns: &[String], order: OrderType) -> Result<RowOrder> {
        if columns.is_empty() {
            return Err(Error::invalid("order column could not be empty"));
        }
        if order == OrderType::Hilbert && columns.len() < 2 {
            return Err(Error::invalid(
                "Hilbert sort needs at least two columns (use order for one)",
            ));
        }
        let names = || {
            schema
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        let columns = columns
            .iter()
            .map(|name| {
                let position = schema
                    .fields
                    .iter()
                    .position(|f| &f.name == name)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "Can't find column {name} in table columns. Possible columns are [{}]",
                            names()
                        ))
                    })?;
                let data_type = schema.fields[position].data_type.clone();
                if !orderable(&data_type) {
                    return Err(Error::invalid(format!(
                        "cannot {order} rows by column {name} of type {data_type}"
                    )));
                }
                Ok((position, data_type))
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = match order {
            OrderType::Order => {
                let fields = columns
                    .iter()
                    .map(|(_, t)| {
                        let arrow = tidelake_spec::arrow::to_arrow_type(t)
                            .map_err(|e| Error::from_spec("sort columns", e))?;
                        Ok(SortField::new_with_options(
                            arrow,
                            SortOptions {
                                descending: false,
                                nulls_first: true,
                            },
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Some(
                    RowConverter::new(fields)
                        .map_err(|e| Error::arrow("ordering rows by their columns", e))?,
                )
            }
            OrderType::ZOrder | OrderType::Hilbert => None,
        };
        let var_length = schema
            .options()
            .zorder_var_length_contribution()
            .map_err(|e| Error::from_spec("table options", e))?;
        Ok(RowOrder {
            order,
            columns,
            var_length,
            rows,
        })
    }

    /// The order of `schema`'s rows by its `clustering.columns` and `clustering.strategy`, when
    /// its batch writes sort (bucket-unaware append tables without `clustering.incremental`,
    /// as Java's Spark and Flink batch writes); `None` otherwise.
    pub fn clustering(schema: &TableSchema) -> Result<Option<RowOrder>> {
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let columns = opts.clustering_columns();
        if columns.is_empty()
            || !schema.primary_keys.is_empty()
            || opts.bucket().map_err(spec)? != -1
            || opts.clustering_incremental().map_err(spec)?
        {
            return Ok(None);
        }
        match opts.clustering_strategy(columns.len()).map_err(spec)? {
            Some(order) => RowOrder::new(schema, &columns, order).map(Some),
            None => Ok(None),
        }
    }

    /// The sort key of every row of `batch` (rows of the table's schema).
    pub fn keys(&self, batch: &RecordBatch) -> Result<BinaryArray> {
        let columns = self
            .columns
            .iter()
            .map(|(i, t)| canonical(batch.column(*i), t))
            .collect::<Result<Vec<_>>>()?;
        let rows = batch.num_rows();
        match (&self.rows, self.order) {
            (Some(converter), _) => {
                let converted = converter
                    .convert_columns(&columns)
                    .map_err(|e| Error::arrow("ordering rows by their columns", e))?;
                Ok(BinaryArray::from_iter_values(converted.iter()))
            }
            (None, OrderType::Hilbert) => {
                let longs = self
                    .columns
                    .iter()
                    .zip(&columns)
                    .map(|((_, t), c)| hilbert_longs(c, t))
                    .collect::<Result<Vec<_>>>()?;
                let mut point = vec![0i64; longs.len()];
                Ok(BinaryArray::from_iter_values((0..rows).map(|r| {
                    for (p, column) in point.iter_mut().zip(&longs) {
                        *p = column[r];
                    }
                    hilbert_index(&point)
                })))
            }
            (None, _) => {
                let widths: Vec<usize> = self
                    .columns
                    .iter()
                    .map(|(_, t)| z_width(t, self.var_length))
                    .collect();
                let bytes = self
                    .columns
                    .iter()
                    .zip(&columns)
                    .zip(&widths)
                    .map(|(((_, t), c), &w)| z_bytes(c, t, w))
                    .collect::<Result<Vec<_>>>()?;
                let total = widths.iter().sum();
                Ok(BinaryArray::from_iter_values((0..rows).map(|r| {
                    let row: Vec<&[u8]> = bytes
                        .iter()
                        .zip(&widths)
                        .map(|(b, &w)| &b[r * w..(r + 1) * w])
                        .collect();
                    interleave_bits(&row, total)
                })))
            }
        }
    }
}

/// Whether Java's indexers order by a column of `data_type`.
fn orderable(data_type: &DataType) -> bool {
    !matches!(
        data_type.kind,
        TypeKind::Array(_)
            | TypeKind::Multiset(_)
            | TypeKind::Map(..)
            | TypeKind::Row(_)
            | TypeKind::Variant
            | TypeKind::Blob
    )
}

/// `column` in the table's Arrow type of `data_type` (batches read back may use other
/// encodings of the same values, e.g. views or dictionaries).
fn canonical(column: &ArrayRef, data_type: &DataType) -> Result<ArrayRef> {
    let arrow = tidelake_spec::arrow::to_arrow_type(data_type)
        .map_err(|e| Error::from_spec("sort columns", e))?;
    if column.data_type() == &arrow {
        return Ok(column.clone());
    }
    arrow_cast::cast(column, &arrow).map_err(|e| Error::arrow("reading a sort column", e))
}

/// Whether `data_type` contributes `zorder.var-length-contribution` bytes to a Z-order key
/// (Java `ZIndexer.isVarType`).
fn is_var_type(data_type: &DataType) -> bool {
    matches!(
        data_type.kind,
        TypeKind::Char(_) | TypeKind::VarChar(_) | TypeKind::Binary(_) | TypeKind::VarBinary(_)
    )
}

fn z_width(data_type: &DataType, var_length: usize) -> usize {
    if is_var_type(data_type) {
        var_length
    } else {
        Z_PRIMITIVE_BYTES
    }
}

/// Epoch milliseconds (Java `Timestamp.getMillisecond`, floored) of every row of a timestamp
/// column; `None` for nulls.
fn timestamp_millis(column: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let floor = |v: Option<i64>, per_ms: i64| v.map(|v| v.div_euclid(per_ms));
    Ok(match column.data_type() {
        ArrowType::Timestamp(TimeUnit::Second, _) => column
            .as_primitive::<TimestampSecondType>()
            .iter()
            .map(|v| v.map(|s| s.saturating_mul(1000)))
            .collect(),
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => column
            .as_primitive::<TimestampMillisecondType>()
            .iter()
            .collect(),
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => column
            .as_primitive::<TimestampMicrosecondType>()
            .iter()
            .map(|v| floor(v, 1000))
            .collect(),
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => column
            .as_primitive::<TimestampNanosecondType>()
            .iter()
            .map(|v| floor(v, 1_000_000))
            .collect(),
        other => return Err(Error::Internal(format!("{other} is not a timestamp"))),
    })
}

/// Every value of a primitive column widened to a long (`None`: null).
fn widened<T>(column: &ArrayRef) -> Vec<Option<i64>>
where
    T: ArrowPrimitiveType,
    T::Native: Into<i64>,
{
    column
        .as_primitive::<T>()
        .iter()
        .map(|v| v.map(Into::into))
        .collect()
}

/// The long Java's integral indexers start from, for every row (`None`: null), of the integer,
/// date, time and timestamp columns; `None` for other types.
fn integral_longs(column: &ArrayRef, data_type: &DataType) -> Result<Option<Vec<Option<i64>>>> {
    Ok(Some(match data_type.kind {
        TypeKind::TinyInt => widened::<Int8Type>(column),
        TypeKind::SmallInt => widened::<Int16Type>(column),
        TypeKind::Int => widened::<Int32Type>(column),
        TypeKind::BigInt => widened::<Int64Type>(column),
        TypeKind::Date => widened::<Date32Type>(column),
        TypeKind::Time(_) => widened::<Time32MillisecondType>(column),
        TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_) => timestamp_millis(column)?,
        _ => return Ok(None),
    }))
}

/// Java `Double.doubleToLongBits`.
fn double_bits(v: f64) -> i64 {
    if v.is_nan() {
        CANONICAL_NAN_BITS
    } else {
        v.to_bits() as i64
    }
}

/// The float and double columns as Java's `doubleToLongBits` of every row.
fn float_bits(column: &ArrayRef, data_type: &DataType) -> Option<Vec<Option<i64>>> {
    match data_type.kind {
        TypeKind::Float => Some(
            column
                .as_primitive::<Float32Type>()
                .iter()
                .map(|v| v.map(|f| double_bits(f64::from(f))))
                .collect(),
        ),
        TypeKind::Double => Some(
            column
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(double_bits))
                .collect(),
        ),
        _ => None,
    }
}

/// The bytes of every row of a string or binary column (`None`: null).
fn var_bytes(column: &ArrayRef) -> Result<Vec<Option<&[u8]>>> {
    Ok(match column.data_type() {
        ArrowType::Utf8 => column
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        ArrowType::Binary => column.as_binary::<i32>().iter().collect(),
        ArrowType::FixedSizeBinary(_) => column.as_fixed_size_binary().iter().collect(),
        other => {
            return Err(Error::Internal(format!(
                "{other} is not a string or binary"
            )))
        }
    })
}

/// Java `BigInteger.toByteArray` of an unscaled decimal: minimal big-endian two's complement.
fn unscaled_bytes(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    // drop a leading byte while the next one keeps the sign
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    bytes[start..].to_vec()
}

/// Java `ZOrderByteUtils.byteTruncateOrFill`: the first `width` bytes, zero-filled on the right.
fn truncate_or_fill(bytes: &[u8], width: usize, out: &mut Vec<u8>) {
    let n = bytes.len().min(width);
    out.extend_from_slice(&bytes[..n]);
    out.resize(out.len() + width - n, 0);
}

/// Java `ZOrderByteUtils.longToOrderedBytes` (and the int, short and tinyint forms, which
/// widen to long first).
fn ordered_long(v: i64) -> [u8; 8] {
    (v ^ i64::MIN).to_be_bytes()
}

/// Java `ZOrderByteUtils.floatToOrderedBytes` / `doubleToOrderedBytes` of `doubleToLongBits`
/// (Java shifts by `Integer.SIZE - 1`, so negative values only get their low bits flipped
/// partly; reproduced as is).
fn ordered_double_bits(bits: i64) -> [u8; 8] {
    (bits ^ ((bits >> 31) | i64::MIN)).to_be_bytes()
}

/// Every row's Z-order bytes of one column (`width` bytes per row; Java's `ZIndexer` type
/// visitor), concatenated.
fn z_bytes(column: &ArrayRef, data_type: &DataType, width: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(column.len() * width);
    let null = |out: &mut Vec<u8>| out.resize(out.len() + width, 0);
    if let Some(longs) = integral_longs(column, data_type)? {
        for v in longs {
            match v {
                Some(v) => out.extend_from_slice(&ordered_long(v)),
                None => null(&mut out),
            }
        }
    } else if let Some(bits) = float_bits(column, data_type) {
        for v in bits {
            match v {
                Some(b) => out.extend_from_slice(&ordered_double_bits(b)),
                None => null(&mut out),
            }
        }
    } else {
        match data_type.kind {
            TypeKind::Boolean => {
                for v in column.as_boolean().iter() {
                    // Java puts (byte) -127 for true at index 0 of a zeroed buffer
                    out.push(if v == Some(true) { 0x81 } else { 0 });
                    out.resize(out.len() + width - 1, 0);
                }
            }
            TypeKind::Decimal { .. } => {
                for v in column.as_primitive::<Decimal128Type>().iter() {
                    match v {
                        Some(v) => truncate_or_fill(&unscaled_bytes(v), width, &mut out),
                        None => null(&mut out),
                    }
                }
            }
            _ => {
                for v in var_bytes(column)? {
                    match v {
                        Some(b) => truncate_or_fill(b, width, &mut out),
                        None => null(&mut out),
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Java `ZOrderByteUtils.interleaveBits`: the bits of `columns` interleaved, most significant
/// first, one bit of each column in turn; a column out of bytes is skipped; `total` bytes.
pub(crate) fn interleave_bits(columns: &[&[u8]], total: usize) -> Vec<u8> {
    let mut out = vec![0u8; total];
    if columns.iter().all(|c| c.is_empty()) {
        return out;
    }
    let (mut column, mut byte, mut bit) = (0usize, 0usize, 7u32);
    let (mut out_byte, mut out_bit) = (0usize, 7u32);
    while out_byte < total {
        let b = (columns[column][byte] >> bit) & 1;
        out[out_byte] |= b << out_bit;
        if out_bit == 0 {
            out_byte += 1;
            out_bit = 7;
        } else {
            out_bit -= 1;
        }
        if out_byte == total {
            break;
        }
        loop {
            column += 1;
            if column == columns.len() {
                column = 0;
                if bit == 0 {
                    byte += 1;
                    bit = 7;
                } else {
                    bit -= 1;
                }
            }
            if columns[column].len() > byte {
                break;
            }
        }
    }
    out
}

/// Java `ConvertBinaryUtil.convertBytesToLong`: the first 8 bytes as a big-endian number,
/// shorter values zero-padded on the left.
fn bytes_to_long(bytes: &[u8]) -> i64 {
    let n = bytes.len().min(8);
    let mut padded = [0u8; 8];
    padded[8 - n..].copy_from_slice(&bytes[..n]);
    i64::from_be_bytes(padded)
}

/// Every row's long form of one column (Java `HilbertIndexer`'s type visitor).
fn hilbert_longs(column: &ArrayRef, data_type: &DataType) -> Result<Vec<i64>> {
    let or_empty = |v: Option<i64>| v.unwrap_or(HILBERT_EMPTY);
    if data_type.kind == TypeKind::TinyInt {
        // Java pads the single byte: its unsigned value
        return Ok(column
            .as_primitive::<Int8Type>()
            .iter()
            .map(|v| or_empty(v.map(|b| i64::from(b as u8))))
            .collect());
    }
    if let Some(longs) = integral_longs(column, data_type)? {
        return Ok(longs.into_iter().map(or_empty).collect());
    }
    if let Some(bits) = float_bits(column, data_type) {
        return Ok(bits.into_iter().map(or_empty).collect());
    }
    Ok(match data_type.kind {
        TypeKind::Boolean => column
            .as_boolean()
            .iter()
            .map(|v| match v {
                Some(false) => 0,
                _ => HILBERT_EMPTY,
            })
            .collect(),
        TypeKind::Decimal { scale, .. } => {
            let divisor = 10i128.pow(scale);
            column
                .as_primitive::<Decimal128Type>()
                .iter()
                // BigDecimal.longValue: the integral part, its low 64 bits
                .map(|v| or_empty(v.map(|u| (u / divisor) as i64)))
                .collect()
        }
        _ => var_bytes(column)?
            .into_iter()
            .map(|v| or_empty(v.map(bytes_to_long)))
            .collect(),
    })
}

/// The position of `point` on the Hilbert curve of [`HILBERT_BITS`] bits per dimension
/// (Skilling's `AxestoTranspose`, then the transposed bits interleaved most significant
/// first, dimension 0 first), as big-endian bytes with leading zero bits to a whole byte.
/// Bit 63 of each coordinate is ignored, as in Java.
pub(crate) fn hilbert_index(point: &[i64]) -> Vec<u8> {
    let n = point.len();
    let top: u64 = 1 << (HILBERT_BITS - 1);
    let mut x: Vec<u64> = point.iter().map(|&v| v as u64).collect();
    // inverse undo
    let mut q = top;
    while q > 1 {
        let p = q - 1;
        for i in 0..n {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q = top;
    while q > 1 {
        if x[n - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in &mut x {
        *v ^= t;
    }
    let bits = HILBERT_BITS as usize * n;
    let bytes = bits.div_ceil(8);
    let mut out = vec![0u8; bytes];
    let mut position = bytes * 8 - bits;
    for level in (0..HILBERT_BITS).rev() {
        for v in &x {
            if (v >> level) & 1 == 1 {
                out[position / 8] |= 0x80 >> (position % 8);
            }
            position += 1;
        }
    }
    out
}

/// A key column (`_SORT_KEY`) appended to sorted batches.
pub(crate) fn with_keys(batch: &RecordBatch, keys: BinaryArray) -> Result<RecordBatch> {
    let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
    fields.push(Arc::new(arrow_schema::Field::new(
        SORT_KEY,
        ArrowType::Binary,
        false,
    )));
    let mut columns = batch.columns().to_vec();
    columns.push(Arc::new(keys));
    RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("keying rows to sort", e))
}

/// The name of the key column of [`with_keys`].
pub(crate) const SORT_KEY: &str = "_SORT_KEY";

#[cfg(test)]
#[path = "sort_key_tests.rs"]
mod tests;
