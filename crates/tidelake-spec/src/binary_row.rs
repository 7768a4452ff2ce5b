//! Paimon `BinaryRow` codec, with nested `BinaryArray`, `BinaryMap` and nested rows,
//! byte-identical to Java's `BinaryRowWriter`, `BinaryArrayWriter` and the internal serializers.
//!
//! Layouts (every integer little-endian; offsets are relative to the start of the enclosing
//! row or array, never to its variable area):
//!
//! * **Row**: `[header + null bits: W][one 8-byte slot per field][variable area]` with
//!   `W = ((arity + 63 + 8) / 64) * 8`. Byte 0 is the row kind (0 `+I`, 1 `-U`, 2 `+U`, 3 `-D`);
//!   the null bit of field `i` is bit `i + 8` of the header. Variable chunks are appended in
//!   field order, each padded with zeros to a multiple of 8 bytes.
//! * **Array**: `[i32 count][null bits rounded up to 4-byte words][count fixed-width elements]`
//!   padded to 8 bytes, then variable chunks. Elements are 1 byte (BOOLEAN, TINYINT), 2 (SMALLINT),
//!   4 (INT, FLOAT, DATE, TIME) or 8 bytes (everything else). The null bit of element `i` is bit
//!   `i` after the count.
//! * **Map**: `[i32 byte size of the key array][key array][value array]`.
//! * **MULTISET<T>** is stored, as in Java, as `MAP<T, INT NOT NULL>` from element to count; its
//!   [`Datum`] is therefore a [`Datum::Map`] whose values are [`Datum::Int`] counts.
//!
//! Slot contents: fixed-width values in place; strings and binaries of at most 7 bytes inline
//! (data in bytes 0..len, byte 7 = `0x80 | len`); longer ones, arrays, maps and rows as
//! `(offset << 32) | size`. DECIMAL with precision ≤ 18 and TIMESTAMP with precision ≤ 3 are
//! "compact" (unscaled `i64` / epoch millis in the slot). Wider decimals keep a 16-byte chunk
//! holding the minimal big-endian two's complement of the unscaled value (Java
//! `BigInteger.toByteArray`); wider timestamps keep an 8-byte chunk with the epoch millis and put
//! the nano-of-millisecond in the slot's low half.
//!
//! Java quirks reproduced on purpose (byte equality matters: Java compares and hashes partitions
//! and keys by their bytes):
//! * in a row, a null non-compact DECIMAL/TIMESTAMP still reserves its 16/8 zero bytes and the
//!   slot keeps `offset << 32` (arrays do not reserve anything for null elements);
//! * array elements canonicalise NaN (`Float.NaN` / `Double.NaN`), row fields keep the raw bits;
//! * a compact TIMESTAMP (precision ≤ 3) silently drops the nano-of-millisecond.
//!
//! Invariants: encoding is deterministic and validates each [`Datum`] against its type
//! ([`Error::Invalid`] on mismatch); decoding never panics, bounds-checks every offset and length,
//! allocates at most in proportion to the input length, and reports [`Error::Corrupt`]. VARIANT
//! and BLOB values are [`Error::Unsupported`]. Nullability of the types is not enforced (Java's
//! writers do not either).

use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::types::{DataField, DataType, TypeKind};

/// Bits of the row header that precede the field null bits (the row-kind byte).
const HEADER_BITS: usize = 8;
/// Longest string/binary stored inline in its slot.
const MAX_INLINE_LEN: usize = 7;
/// Marks an inline string/binary in the last byte of its slot.
const INLINE_MARK: u8 = 0x80;
const MAX_COMPACT_DECIMAL_PRECISION: u32 = 18;
const MAX_DECIMAL_PRECISION: u32 = 38;
const MAX_COMPACT_TIMESTAMP_PRECISION: u32 = 3;
/// Bytes always reserved for a non-compact decimal.
const DECIMAL_CHUNK: usize = 16;
const MAX_ROW_KIND: u8 = 3;
const NANOS_PER_MILLI: i32 = 1_000_000;
/// Bytes of the length prefix of the framed form.
const FRAME_PREFIX: usize = 4;
const WHAT: &str = "BinaryRow";

/// Width in bytes of a row's header plus null bitset (Java `calculateBitSetWidthInBytes`).
pub fn null_bits_width(arity: usize) -> usize {
    (arity + 63 + HEADER_BITS) / 64 * 8
}

/// Size of a row's header, null bits and fixed slots: the smallest valid row of this arity.
pub fn fixed_part_size(arity: usize) -> usize {
    null_bits_width(arity) + 8 * arity
}

/// Encodes `values` as a BinaryRow of row kind 0 (`+I`), without the arity prefix.
pub fn encode_row(values: &[Datum], types: &[DataType]) -> Result<Vec<u8>> {
    encode_row_with_kind(values, types, 0)
}

/// Encodes `values` as a BinaryRow with the given row kind byte (0..=3).
pub fn encode_row_with_kind(values: &[Datum], types: &[DataType], row_kind: u8) -> Result<Vec<u8>> {
    if row_kind > MAX_ROW_KIND {
        return Err(Error::Invalid(format!(
            "row kind {row_kind} is not one of 0..=3"
        )));
    }
    encode_row_body(values, &types.iter().collect::<Vec<_>>(), row_kind)
}

/// Decodes a BinaryRow (no arity prefix) whose arity is `types.len()`.
pub fn decode_row(bytes: &[u8], types: &[DataType]) -> Result<Vec<Datum>> {
    decode_row_with_kind(bytes, types).map(|(_, values)| values)
}

/// Decodes a BinaryRow and returns its row kind byte along with the values.
pub fn decode_row_with_kind(bytes: &[u8], types: &[DataType]) -> Result<(u8, Vec<Datum>)> {
    decode_row_body(bytes, &types.iter().collect::<Vec<_>>())
}

/// Prefixes raw row bytes with the arity as a 4-byte big-endian int, as stored in Avro `bytes`.
///
/// A BinaryRow's arity is a Java `int`; larger values are clamped to `i32::MAX`.
pub fn serialize_framed(row_bytes: &[u8], arity: usize) -> Vec<u8> {
    let arity = i32::try_from(arity).unwrap_or(i32::MAX);
    let mut out = Vec::with_capacity(FRAME_PREFIX + row_bytes.len());
    out.extend_from_slice(&arity.to_be_bytes());
    out.extend_from_slice(row_bytes);
    out
}

/// Splits the framed form into its arity and the raw row bytes.
pub fn split_framed(bytes: &[u8]) -> Result<(usize, &[u8])> {
    let prefix = read_array::<FRAME_PREFIX>(bytes, 0)?;
    let arity = i32::from_be_bytes(prefix);
    let arity = usize::try_from(arity)
        .map_err(|_| Error::corrupt(WHAT, format!("negative arity {arity} in the frame")))?;
    Ok((arity, &bytes[FRAME_PREFIX..]))
}

/// Encodes `values` as a row of kind 0 and frames it with its arity.
pub fn encode_framed(values: &[Datum], types: &[DataType]) -> Result<Vec<u8>> {
    Ok(serialize_framed(&encode_row(values, types)?, types.len()))
}

/// Decodes a framed row, checking that its arity is `types.len()`.
pub fn decode_framed(bytes: &[u8], types: &[DataType]) -> Result<Vec<Datum>> {
    let (arity, row) = split_framed(bytes)?;
    if arity != types.len() {
        return Err(Error::corrupt(
            WHAT,
            format!("frame arity {arity} but {} types expected", types.len()),
        ));
    }
    decode_row(row, types)
}

// ------------------------------------------------------------------------------------------
// Shared type facts
// ------------------------------------------------------------------------------------------

/// Whether the structure a value lives in is a row or an array: they differ in null handling
/// and NaN canonicalisation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Row,
    Array,
}

fn is_compact_decimal(precision: u32) -> bool {
    precision <= MAX_COMPACT_DECIMAL_PRECISION
}

fn is_compact_timestamp(precision: u32) -> bool {
    precision <= MAX_COMPACT_TIMESTAMP_PRECISION
}

/// Width of one element in a BinaryArray (Java `calculateFixLengthPartSize`).
fn element_width(ty: &DataType) -> usize {
    match ty.kind {
        TypeKind::Boolean | TypeKind::TinyInt => 1,
        TypeKind::SmallInt => 2,
        TypeKind::Int | TypeKind::Float | TypeKind::Date | TypeKind::Time(_) => 4,
        _ => 8,
    }
}

/// Bytes of an array's count plus null bits (Java `BinaryArray.calculateHeaderInBytes`).
fn array_header_size(count: usize) -> usize {
    4 + count.div_ceil(32) * 4
}

fn round_to_word(size: usize) -> usize {
    size.div_ceil(8) * 8
}

/// Value type of the map that stores a MULTISET.
fn multiset_count_type() -> DataType {
    DataType::not_null(TypeKind::Int)
}

fn field_types(fields: &[DataField]) -> Vec<&DataType> {
    fields.iter().map(|f| &f.data_type).collect()
}

fn unsupported(ty: &DataType) -> Error {
    Error::Unsupported(format!("{:?} values in a BinaryRow", ty.kind))
}

// ------------------------------------------------------------------------------------------
// Encoding
// ------------------------------------------------------------------------------------------

fn encode_row_body(values: &[Datum], types: &[&DataType], row_kind: u8) -> Result<Vec<u8>> {
    if values.len() != types.len() {
        return Err(Error::Invalid(format!(
            "{} values for a row of {} fields",
            values.len(),
            types.len()
        )));
    }
    let width = null_bits_width(types.len());
    let mut buf = vec![0u8; fixed_part_size(types.len())];
    buf[0] = row_kind;
    for (i, (value, ty)) in values.iter().zip(types).enumerate() {
        let slot = width + 8 * i;
        if value.is_null() {
            write_row_null(&mut buf, i, slot, ty)?;
        } else {
            write_value(&mut buf, slot, value, ty, Container::Row)?;
        }
    }
    Ok(buf)
}

/// Marks field `index` null; non-compact decimals and timestamps keep their zeroed chunk.
fn write_row_null(buf: &mut Vec<u8>, index: usize, slot: usize, ty: &DataType) -> Result<()> {
    set_bit(buf, 0, index + HEADER_BITS);
    let reserved = match ty.kind {
        TypeKind::Decimal { precision, .. } if !is_compact_decimal(precision) => DECIMAL_CHUNK,
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) if !is_compact_timestamp(p) => 8,
        _ => return Ok(()),
    };
    let offset = buf.len();
    buf.resize(offset + reserved, 0);
    put_u64(buf, slot, offset_and_size(offset, 0)?);
    Ok(())
}

fn encode_array<'a>(
    items: impl ExactSizeIterator<Item = &'a Datum>,
    elem: &DataType,
) -> Result<Vec<u8>> {
    let count = items.len();
    let count_i32 = i32::try_from(count)
        .map_err(|_| Error::Invalid(format!("array of {count} elements is too large")))?;
    let header = array_header_size(count);
    let width = element_width(elem);
    let mut buf = vec![0u8; round_to_word(header + width * count)];
    put(&mut buf, 0, &count_i32.to_le_bytes());
    for (i, item) in items.enumerate() {
        if item.is_null() {
            set_bit(&mut buf, 4, i);
        } else {
            write_value(&mut buf, header + width * i, item, elem, Container::Array)?;
        }
    }
    Ok(buf)
}

fn encode_map(entries: &[(Datum, Datum)], key: &DataType, value: &DataType) -> Result<Vec<u8>> {
    let keys = encode_array(entries.iter().map(|(k, _)| k), key)?;
    let values = encode_array(entries.iter().map(|(_, v)| v), value)?;
    let key_size = i32::try_from(keys.len())
        .map_err(|_| Error::Invalid("map key array is too large".to_string()))?;
    let mut out = Vec::with_capacity(4 + keys.len() + values.len());
    out.extend_from_slice(&key_size.to_le_bytes());
    out.extend_from_slice(&keys);
    out.extend_from_slice(&values);
    Ok(out)
}

/// Writes a non-null value whose fixed part starts at `slot`.
fn write_value(
    buf: &mut Vec<u8>,
    slot: usize,
    value: &Datum,
    ty: &DataType,
    container: Container,
) -> Result<()> {
    match (&ty.kind, value) {
        (TypeKind::Boolean, Datum::Boolean(v)) => write_fixed(buf, slot, &[u8::from(*v)]),
        (TypeKind::TinyInt, Datum::TinyInt(v)) => write_fixed(buf, slot, &v.to_le_bytes()),
        (TypeKind::SmallInt, Datum::SmallInt(v)) => write_fixed(buf, slot, &v.to_le_bytes()),
        (TypeKind::Int, Datum::Int(v))
        | (TypeKind::Date, Datum::Date(v))
        | (TypeKind::Time(_), Datum::Time(v)) => write_fixed(buf, slot, &v.to_le_bytes()),
        (TypeKind::BigInt, Datum::BigInt(v)) => write_fixed(buf, slot, &v.to_le_bytes()),
        (TypeKind::Float, Datum::Float(v)) => {
            let v = if container == Container::Array && v.is_nan() {
                f32::NAN
            } else {
                *v
            };
            write_fixed(buf, slot, &v.to_bits().to_le_bytes())
        }
        (TypeKind::Double, Datum::Double(v)) => {
            let v = if container == Container::Array && v.is_nan() {
                f64::NAN
            } else {
                *v
            };
            write_fixed(buf, slot, &v.to_bits().to_le_bytes())
        }
        (TypeKind::Decimal { precision, .. }, Datum::Decimal(v)) => {
            write_decimal(buf, slot, *v, *precision)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), Datum::String(s)) => {
            write_bytes(buf, slot, s.as_bytes())
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Datum::Bytes(b)) => {
            write_bytes(buf, slot, b)
        }
        (
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
            Datum::Timestamp { millis, nanos },
        ) => write_timestamp(buf, slot, *millis, *nanos, *p),
        (TypeKind::Array(elem), Datum::Array(items)) => {
            append_var(buf, slot, &encode_array(items.iter(), elem)?)
        }
        (TypeKind::Map(k, v), Datum::Map(entries)) => {
            append_var(buf, slot, &encode_map(entries, k, v)?)
        }
        (TypeKind::Multiset(elem), Datum::Map(entries)) => append_var(
            buf,
            slot,
            &encode_map(entries, elem, &multiset_count_type())?,
        ),
        (TypeKind::Row(fields), Datum::Row(values)) => append_var(
            buf,
            slot,
            &encode_row_body(values, &field_types(fields), 0)?,
        ),
        (TypeKind::Variant | TypeKind::Blob, _) => Err(unsupported(ty)),
        _ => Err(mismatch(value, ty)),
    }
}

fn mismatch(value: &Datum, ty: &DataType) -> Error {
    Error::Invalid(format!(
        "{} value for a column of type {:?}",
        datum_name(value),
        ty.kind
    ))
}

/// Short name of a datum's variant, for error messages (values themselves may be huge).
pub(crate) fn datum_name(value: &Datum) -> &'static str {
    match value {
        Datum::Null => "NULL",
        Datum::Boolean(_) => "BOOLEAN",
        Datum::TinyInt(_) => "TINYINT",
        Datum::SmallInt(_) => "SMALLINT",
        Datum::Int(_) => "INT",
        Datum::BigInt(_) => "BIGINT",
        Datum::Float(_) => "FLOAT",
        Datum::Double(_) => "DOUBLE",
        Datum::Decimal(_) => "DECIMAL",
        Datum::String(_) => "STRING",
        Datum::Bytes(_) => "BYTES",
        Datum::Date(_) => "DATE",
        Datum::Time(_) => "TIME",
        Datum::Timestamp { .. } => "TIMESTAMP",
        Datum::Array(_) => "ARRAY",
        Datum::Map(_) => "MAP",
        Datum::Row(_) => "ROW",
    }
}

/// Strings and binaries: inline when at most 7 bytes, else a variable chunk.
fn write_bytes(buf: &mut Vec<u8>, slot: usize, data: &[u8]) -> Result<()> {
    if data.len() > MAX_INLINE_LEN {
        return append_var(buf, slot, data);
    }
    let mut word = [0u8; 8];
    word[..data.len()].copy_from_slice(data);
    // Lossless: data.len() <= 7.
    word[7] = INLINE_MARK | data.len() as u8;
    write_fixed(buf, slot, &word)
}

fn write_decimal(buf: &mut Vec<u8>, slot: usize, unscaled: i128, precision: u32) -> Result<()> {
    check_decimal_fits(unscaled, precision)?;
    if is_compact_decimal(precision) {
        let v = i64::try_from(unscaled)
            .map_err(|_| Error::Invalid(format!("decimal {unscaled} exceeds a long")))?;
        return write_fixed(buf, slot, &v.to_le_bytes());
    }
    let bytes = unscaled_bytes(unscaled);
    let offset = buf.len();
    buf.resize(offset + DECIMAL_CHUNK, 0);
    put(buf, offset, &bytes);
    put_u64(buf, slot, offset_and_size(offset, bytes.len())?);
    Ok(())
}

/// Rejects precisions outside 1..=38 and unscaled values with more than `precision` digits.
fn check_decimal_fits(unscaled: i128, precision: u32) -> Result<()> {
    if !(1..=MAX_DECIMAL_PRECISION).contains(&precision) {
        return Err(Error::Invalid(format!(
            "decimal precision {precision} is not in 1..=38"
        )));
    }
    if unscaled.unsigned_abs() >= 10u128.pow(precision) {
        return Err(Error::Invalid(format!(
            "unscaled decimal {unscaled} has more than {precision} digits"
        )));
    }
    Ok(())
}

/// Minimal big-endian two's complement of `v` (Java `BigInteger.toByteArray`).
fn unscaled_bytes(v: i128) -> Vec<u8> {
    let magnitude_bits = if v < 0 {
        128 - (!v).leading_zeros()
    } else {
        128 - v.leading_zeros()
    };
    let len = magnitude_bits as usize / 8 + 1;
    v.to_be_bytes()[16 - len..].to_vec()
}

fn write_timestamp(
    buf: &mut Vec<u8>,
    slot: usize,
    millis: i64,
    nanos: i32,
    precision: u32,
) -> Result<()> {
    if !(0..NANOS_PER_MILLI).contains(&nanos) {
        return Err(Error::Invalid(format!(
            "nano-of-millisecond {nanos} is not in 0..999999"
        )));
    }
    if is_compact_timestamp(precision) {
        return write_fixed(buf, slot, &millis.to_le_bytes());
    }
    let offset = buf.len();
    buf.extend_from_slice(&millis.to_le_bytes());
    // Lossless: nanos is in 0..1_000_000.
    put_u64(buf, slot, offset_and_size(offset, nanos as usize)?);
    Ok(())
}

/// Appends `data` as a word-aligned chunk and points `slot` at it.
fn append_var(buf: &mut Vec<u8>, slot: usize, data: &[u8]) -> Result<()> {
    let offset = buf.len();
    let word = offset_and_size(offset, data.len())?;
    buf.extend_from_slice(data);
    buf.resize(round_to_word(buf.len()), 0);
    put_u64(buf, slot, word);
    Ok(())
}

/// `(offset << 32) | size`; both are Java ints.
fn offset_and_size(offset: usize, size: usize) -> Result<u64> {
    let too_large = || {
        Error::Invalid(format!(
            "BinaryRow section too large (offset {offset}, size {size})"
        ))
    };
    let offset = i32::try_from(offset).map_err(|_| too_large())?;
    let size = i32::try_from(size).map_err(|_| too_large())?;
    // Both are non-negative, so the casts are lossless.
    Ok(((offset as u64) << 32) | size as u64)
}

/// Writes a fixed-width value into its (zeroed) slot.
fn write_fixed(buf: &mut [u8], slot: usize, data: &[u8]) -> Result<()> {
    put(buf, slot, data);
    Ok(())
}

fn put(buf: &mut [u8], pos: usize, data: &[u8]) {
    buf[pos..pos + data.len()].copy_from_slice(data);
}

fn put_u64(buf: &mut [u8], pos: usize, v: u64) {
    put(buf, pos, &v.to_le_bytes());
}

fn set_bit(buf: &mut [u8], base: usize, index: usize) {
    buf[base + index / 8] |= 1 << (index % 8);
}

// ------------------------------------------------------------------------------------------
// Decoding
// ------------------------------------------------------------------------------------------

fn decode_row_body(bytes: &[u8], types: &[&DataType]) -> Result<(u8, Vec<Datum>)> {
    let fixed = fixed_part_size(types.len());
    if bytes.len() < fixed {
        return Err(Error::corrupt(
            WHAT,
            format!(
                "row of arity {} needs {fixed} bytes, got {}",
                types.len(),
                bytes.len()
            ),
        ));
    }
    let [row_kind] = read_array::<1>(bytes, 0)?;
    if row_kind > MAX_ROW_KIND {
        return Err(Error::corrupt(WHAT, format!("unknown row kind {row_kind}")));
    }
    let width = null_bits_width(types.len());
    let mut values = Vec::with_capacity(types.len());
    for (i, ty) in types.iter().enumerate() {
        let value = if bit_is_set(bytes, 0, i + HEADER_BITS)? {
            Datum::Null
        } else {
            read_value(bytes, width + 8 * i, ty)?
        };
        values.push(value);
    }
    Ok((row_kind, values))
}

fn decode_array(region: &[u8], elem: &DataType) -> Result<Vec<Datum>> {
    let count = i32::from_le_bytes(read_array::<4>(region, 0)?);
    let count = usize::try_from(count)
        .map_err(|_| Error::corrupt(WHAT, format!("negative array size {count}")))?;
    let header = array_header_size(count);
    let width = element_width(elem);
    let fixed_end = count.checked_mul(width).and_then(|n| n.checked_add(header));
    if fixed_end.is_none_or(|end| end > region.len()) {
        return Err(Error::corrupt(
            WHAT,
            format!(
                "array of {count} elements does not fit in {} bytes",
                region.len()
            ),
        ));
    }
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        let item = if bit_is_set(region, 4, i)? {
            Datum::Null
        } else {
            read_value(region, header + width * i, elem)?
        };
        items.push(item);
    }
    Ok(items)
}

fn decode_map(region: &[u8], key: &DataType, value: &DataType) -> Result<Vec<(Datum, Datum)>> {
    let key_size = i32::from_le_bytes(read_array::<4>(region, 0)?);
    let keys_end = usize::try_from(key_size)
        .ok()
        .and_then(|size| size.checked_add(4))
        .filter(|end| *end <= region.len())
        .ok_or_else(|| {
            Error::corrupt(WHAT, format!("map key array size {key_size} out of range"))
        })?;
    let keys = decode_array(&region[4..keys_end], key)?;
    let values = decode_array(&region[keys_end..], value)?;
    if keys.len() != values.len() {
        return Err(Error::corrupt(
            WHAT,
            format!("map has {} keys but {} values", keys.len(), values.len()),
        ));
    }
    Ok(keys.into_iter().zip(values).collect())
}

/// Reads the non-null value whose fixed part starts at `slot` of `section` (a row or array).
fn read_value(section: &[u8], slot: usize, ty: &DataType) -> Result<Datum> {
    Ok(match &ty.kind {
        TypeKind::Boolean => Datum::Boolean(read_array::<1>(section, slot)?[0] != 0),
        TypeKind::TinyInt => Datum::TinyInt(i8::from_le_bytes(read_array(section, slot)?)),
        TypeKind::SmallInt => Datum::SmallInt(i16::from_le_bytes(read_array(section, slot)?)),
        TypeKind::Int => Datum::Int(read_i32(section, slot)?),
        TypeKind::Date => Datum::Date(read_i32(section, slot)?),
        TypeKind::Time(_) => Datum::Time(read_i32(section, slot)?),
        TypeKind::BigInt => Datum::BigInt(read_i64(section, slot)?),
        TypeKind::Float => Datum::Float(f32::from_le_bytes(read_array(section, slot)?)),
        TypeKind::Double => Datum::Double(f64::from_le_bytes(read_array(section, slot)?)),
        TypeKind::Decimal { precision, .. } => read_decimal(section, slot, *precision)?,
        TypeKind::Char(_) | TypeKind::VarChar(_) => {
            let bytes = read_bytes(section, slot)?;
            let s = std::str::from_utf8(bytes)
                .map_err(|e| Error::corrupt(WHAT, format!("string is not UTF-8: {e}")))?;
            Datum::String(s.to_owned())
        }
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
            Datum::Bytes(read_bytes(section, slot)?.to_vec())
        }
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => {
            read_timestamp(section, slot, *p)?
        }
        TypeKind::Array(elem) => Datum::Array(decode_array(var_region(section, slot)?, elem)?),
        TypeKind::Map(k, v) => Datum::Map(decode_map(var_region(section, slot)?, k, v)?),
        TypeKind::Multiset(elem) => Datum::Map(decode_map(
            var_region(section, slot)?,
            elem,
            &multiset_count_type(),
        )?),
        TypeKind::Row(fields) => {
            Datum::Row(decode_row_body(var_region(section, slot)?, &field_types(fields))?.1)
        }
        TypeKind::Variant | TypeKind::Blob => return Err(unsupported(ty)),
    })
}

fn read_decimal(section: &[u8], slot: usize, precision: u32) -> Result<Datum> {
    if is_compact_decimal(precision) {
        return Ok(Datum::Decimal(i128::from(read_i64(section, slot)?)));
    }
    let bytes = var_region(section, slot)?;
    let Some(&first) = bytes.first() else {
        return Err(Error::corrupt(WHAT, "empty decimal bytes"));
    };
    if bytes.len() > DECIMAL_CHUNK {
        return Err(Error::corrupt(
            WHAT,
            format!("decimal of {} bytes", bytes.len()),
        ));
    }
    let fill = if first & 0x80 != 0 { 0xff } else { 0 };
    let mut word = [fill; DECIMAL_CHUNK];
    word[DECIMAL_CHUNK - bytes.len()..].copy_from_slice(bytes);
    Ok(Datum::Decimal(i128::from_be_bytes(word)))
}

fn read_timestamp(section: &[u8], slot: usize, precision: u32) -> Result<Datum> {
    if is_compact_timestamp(precision) {
        return Ok(Datum::Timestamp {
            millis: read_i64(section, slot)?,
            nanos: 0,
        });
    }
    let word = read_u64(section, slot)?;
    let nanos = i32::try_from(word & 0xffff_ffff)
        .ok()
        .filter(|n| (0..NANOS_PER_MILLI).contains(n))
        .ok_or_else(|| {
            Error::corrupt(WHAT, format!("nano-of-millisecond {}", word & 0xffff_ffff))
        })?;
    let millis = read_i64(section, offset_of(word)?)?;
    Ok(Datum::Timestamp { millis, nanos })
}

/// Bytes of a string/binary: inline in the slot or in the variable area.
fn read_bytes(section: &[u8], slot: usize) -> Result<&[u8]> {
    let word = read_u64(section, slot)?;
    if word >> 63 == 0 {
        return var_region(section, slot);
    }
    // Masked to 7 bits, so the cast is lossless.
    let len = ((word >> 56) & 0x7f) as usize;
    if len > MAX_INLINE_LEN {
        return Err(Error::corrupt(
            WHAT,
            format!("inline length {len} exceeds 7"),
        ));
    }
    slice(section, slot, len)
}

/// The chunk a `(offset << 32) | size` slot points to.
fn var_region(section: &[u8], slot: usize) -> Result<&[u8]> {
    let word = read_u64(section, slot)?;
    let size = usize::try_from(word & 0xffff_ffff)
        .map_err(|_| Error::corrupt(WHAT, "size exceeds the address space"))?;
    slice(section, offset_of(word)?, size)
}

fn offset_of(word: u64) -> Result<usize> {
    usize::try_from(word >> 32)
        .map_err(|_| Error::corrupt(WHAT, "offset exceeds the address space"))
}

fn slice(bytes: &[u8], offset: usize, len: usize) -> Result<&[u8]> {
    offset
        .checked_add(len)
        .and_then(|end| bytes.get(offset..end))
        .ok_or_else(|| {
            Error::corrupt(
                WHAT,
                format!(
                    "{len} bytes at offset {offset} exceed a section of {} bytes",
                    bytes.len()
                ),
            )
        })
}

fn read_array<const N: usize>(bytes: &[u8], pos: usize) -> Result<[u8; N]> {
    let mut out = [0u8; N];
    out.copy_from_slice(slice(bytes, pos, N)?);
    Ok(out)
}

fn read_i32(bytes: &[u8], pos: usize) -> Result<i32> {
    read_array(bytes, pos).map(i32::from_le_bytes)
}

fn read_i64(bytes: &[u8], pos: usize) -> Result<i64> {
    read_array(bytes, pos).map(i64::from_le_bytes)
}

fn read_u64(bytes: &[u8], pos: usize) -> Result<u64> {
    read_array(bytes, pos).map(u64::from_le_bytes)
}

fn bit_is_set(bytes: &[u8], base: usize, index: usize) -> Result<bool> {
    let [byte] = read_array::<1>(bytes, base + index / 8)?;
    Ok(byte & (1 << (index % 8)) != 0)
}

#[cfg(test)]
mod tests;
