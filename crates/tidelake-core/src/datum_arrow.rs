//! Conversions between Arrow arrays and [`Datum`] values, and Paimon's order on values.
//!
//! Role: the bridge wherever single values meet columnar data: predicate literals (as
//! one-row arrays for Arrow kernels), partition values, statistics and keys.
//!
//! Invariants:
//! * [`datums_to_array`] produces exactly `to_arrow_type(ty)` and never rounds: a value that
//!   the Arrow type cannot hold exactly (a sub-unit timestamp or time, a FIXED_SIZE_BINARY of
//!   the wrong length, a decimal beyond its precision) is an error, as is a datum of the wrong
//!   kind for `ty`.
//! * [`datum_at`] accepts every Arrow encoding a reader may produce for a Paimon type (any
//!   timestamp unit and zone, the string/binary/list flavours, dictionaries, any decimal width
//!   and a scale that rescales exactly) and returns the canonical datum: TIMESTAMP as
//!   (epoch millis, nano-of-milli) floored so that nanos is in `0..1_000_000` also before
//!   1970; TIME as millis of day; DECIMAL as the unscaled value at the Paimon type's scale.
//! * [`default_value`] is Java's conversion of a column's default value text.
//! * [`compare_datums`] is Java Paimon's order (`CompareUtils.compareLiteral`, i.e. the
//!   values' `compareTo`): nulls first; FLOAT/DOUBLE as `Float.compare`/`Double.compare`
//!   (-0.0 < 0.0, every NaN equal to every NaN and above +inf); strings and bytes unsigned
//!   byte-wise, a prefix first; timestamps by (millis, nanos). Decimals compare their unscaled
//!   values, so both sides must carry the same scale.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, Time32MillisecondType,
    Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Decimal128Array,
    FixedSizeBinaryArray, Float32Array, Float64Array, GenericListArray, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeBinaryArray, LargeStringArray, MapArray, OffsetSizeTrait,
    StringArray, StringViewArray, StructArray, Time32MillisecondArray, Time32SecondArray,
    Time64MicrosecondArray, Time64NanosecondArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType as ArrowType, FieldRef, TimeUnit};
use tidelake_spec::arrow::to_arrow_type;
use tidelake_spec::datum::Datum;
use tidelake_spec::types::{DataType, TypeKind};

use crate::error::{Error, Result};

const NANOS_PER_MILLI: i64 = 1_000_000;
const MILLIS_PER_DAY: i64 = 86_400_000;

/// The value at `row` of `array`, read as Paimon type `ty`.
///
/// Errors if `row` is out of bounds or the array's Arrow type cannot encode `ty`.
pub fn datum_at(array: &dyn Array, row: usize, ty: &DataType) -> Result<Datum> {
    if row >= array.len() {
        return Err(Error::invalid(format!(
            "row {row} is out of bounds for an array of {} rows",
            array.len()
        )));
    }
    if let ArrowType::Dictionary(key, _) = array.data_type() {
        return dictionary_datum_at(array, key, row, ty);
    }
    if array.is_null(row) || *array.data_type() == ArrowType::Null {
        return Ok(Datum::Null);
    }
    let dt = array.data_type();
    let datum = match (&ty.kind, dt) {
        (TypeKind::Boolean, ArrowType::Boolean) => Datum::Boolean(array.as_boolean().value(row)),
        (TypeKind::TinyInt, ArrowType::Int8) => {
            Datum::TinyInt(array.as_primitive::<Int8Type>().value(row))
        }
        (TypeKind::SmallInt, ArrowType::Int16) => {
            Datum::SmallInt(array.as_primitive::<Int16Type>().value(row))
        }
        (TypeKind::Int, ArrowType::Int32) => {
            Datum::Int(array.as_primitive::<Int32Type>().value(row))
        }
        (TypeKind::BigInt, ArrowType::Int64) => {
            Datum::BigInt(array.as_primitive::<Int64Type>().value(row))
        }
        (TypeKind::Float, ArrowType::Float32) => {
            Datum::Float(array.as_primitive::<Float32Type>().value(row))
        }
        (TypeKind::Double, ArrowType::Float64) => {
            Datum::Double(array.as_primitive::<Float64Type>().value(row))
        }
        (TypeKind::Decimal { scale, .. }, _) => {
            let (unscaled, arrow_scale) = match dt {
                ArrowType::Decimal32(_, s) => (
                    i128::from(array.as_primitive::<Decimal32Type>().value(row)),
                    *s,
                ),
                ArrowType::Decimal64(_, s) => (
                    i128::from(array.as_primitive::<Decimal64Type>().value(row)),
                    *s,
                ),
                ArrowType::Decimal128(_, s) => {
                    (array.as_primitive::<Decimal128Type>().value(row), *s)
                }
                ArrowType::Decimal256(_, s) => {
                    let wide = array.as_primitive::<Decimal256Type>().value(row);
                    let narrow = wide.to_i128().ok_or_else(|| {
                        Error::invalid(format!("decimal {wide} does not fit 38 digits"))
                    })?;
                    (narrow, *s)
                }
                _ => return Err(mismatch(ty, dt)),
            };
            let target = i32::try_from(*scale).map_err(|_| mismatch(ty, dt))?;
            Datum::Decimal(rescale(unscaled, i32::from(arrow_scale), target).ok_or_else(|| {
                Error::invalid(format!(
                    "decimal with unscaled value {unscaled} at scale {arrow_scale} is not exact at scale {scale}"
                ))
            })?)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8) => {
            Datum::String(array.as_string::<i32>().value(row).to_string())
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::LargeUtf8) => {
            Datum::String(array.as_string::<i64>().value(row).to_string())
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), ArrowType::Utf8View) => {
            Datum::String(array.as_string_view().value(row).to_string())
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_) | TypeKind::Blob, _) => match dt {
            ArrowType::Binary => Datum::Bytes(array.as_binary::<i32>().value(row).to_vec()),
            ArrowType::LargeBinary => Datum::Bytes(array.as_binary::<i64>().value(row).to_vec()),
            ArrowType::BinaryView => Datum::Bytes(array.as_binary_view().value(row).to_vec()),
            ArrowType::FixedSizeBinary(_) => {
                Datum::Bytes(array.as_fixed_size_binary().value(row).to_vec())
            }
            _ => return Err(mismatch(ty, dt)),
        },
        (TypeKind::Date, ArrowType::Date32) => {
            Datum::Date(array.as_primitive::<Date32Type>().value(row))
        }
        (TypeKind::Date, ArrowType::Date64) => {
            let days = array
                .as_primitive::<Date64Type>()
                .value(row)
                .div_euclid(MILLIS_PER_DAY);
            Datum::Date(i32::try_from(days).map_err(|_| out_of_range("date", days))?)
        }
        (TypeKind::Time(_), _) => {
            let millis = match dt {
                ArrowType::Time32(TimeUnit::Second) => {
                    i64::from(array.as_primitive::<Time32SecondType>().value(row)) * 1000
                }
                ArrowType::Time32(TimeUnit::Millisecond) => {
                    i64::from(array.as_primitive::<Time32MillisecondType>().value(row))
                }
                ArrowType::Time64(TimeUnit::Microsecond) => array
                    .as_primitive::<Time64MicrosecondType>()
                    .value(row)
                    .div_euclid(1000),
                ArrowType::Time64(TimeUnit::Nanosecond) => array
                    .as_primitive::<Time64NanosecondType>()
                    .value(row)
                    .div_euclid(NANOS_PER_MILLI),
                _ => return Err(mismatch(ty, dt)),
            };
            Datum::Time(i32::try_from(millis).map_err(|_| out_of_range("time", millis))?)
        }
        (
            TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_),
            ArrowType::Timestamp(unit, _),
        ) => {
            let value = match unit {
                TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().value(row)
                }
                TimeUnit::Microsecond => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
            };
            timestamp_from_unit(value, *unit)?
        }
        (TypeKind::Array(element), ArrowType::List(_)) => {
            list_datum(&array.as_list::<i32>().value(row), element)?
        }
        (TypeKind::Array(element), ArrowType::LargeList(_)) => {
            list_datum(&array.as_list::<i64>().value(row), element)?
        }
        (TypeKind::Array(element), ArrowType::FixedSizeList(_, _)) => {
            list_datum(&array.as_fixed_size_list().value(row), element)?
        }
        (TypeKind::Array(element), ArrowType::ListView(_)) => {
            list_datum(&array.as_list_view::<i32>().value(row), element)?
        }
        (TypeKind::Array(element), ArrowType::LargeListView(_)) => {
            list_datum(&array.as_list_view::<i64>().value(row), element)?
        }
        (TypeKind::Map(key, value), ArrowType::Map(_, _)) => {
            map_datum(&array.as_map().value(row), key, value)?
        }
        (TypeKind::Multiset(element), ArrowType::Map(_, _)) => {
            map_datum(&array.as_map().value(row), element, &multiset_count_type())?
        }
        (TypeKind::Row(fields), ArrowType::Struct(_)) => {
            let row_array = array.as_struct();
            if row_array.num_columns() != fields.len() {
                return Err(mismatch(ty, dt));
            }
            let values = fields
                .iter()
                .zip(row_array.columns())
                .map(|(field, column)| datum_at(column.as_ref(), row, &field.data_type))
                .collect::<Result<Vec<_>>>()?;
            Datum::Row(values)
        }
        _ => return Err(mismatch(ty, dt)),
    };
    Ok(datum)
}

/// An array of Arrow type `to_arrow_type(ty)` holding `values` (each a datum of `ty` or Null).
pub fn datums_to_array(values: &[Datum], ty: &DataType) -> Result<ArrayRef> {
    let arrow_type = arrow_type_of(ty)?;
    let refs: Vec<&Datum> = values.iter().collect();
    build_array(&refs, ty, &arrow_type)
}

/// Java Paimon's comparison of two values (see the module docs); `None` when the kinds are
/// not comparable. Integers of different widths compare by value, as do FLOAT and DOUBLE;
/// arrays and rows compare element-wise (lexicographically); maps are not comparable.
pub fn compare_datums(a: &Datum, b: &Datum) -> Option<Ordering> {
    use Datum as D;
    let ordering = match (a, b) {
        (D::Null, D::Null) => Ordering::Equal,
        (D::Null, _) => Ordering::Less,
        (_, D::Null) => Ordering::Greater,
        (D::Boolean(x), D::Boolean(y)) => x.cmp(y),
        (D::Float(_) | D::Double(_), D::Float(_) | D::Double(_)) => {
            java_float_cmp(float_of(a)?, float_of(b)?)
        }
        (D::Decimal(x), D::Decimal(y)) => x.cmp(y),
        (D::String(x), D::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (D::Bytes(x), D::Bytes(y)) => x.as_slice().cmp(y.as_slice()),
        (D::Date(x), D::Date(y)) | (D::Time(x), D::Time(y)) => x.cmp(y),
        (
            D::Timestamp {
                millis: m1,
                nanos: n1,
            },
            D::Timestamp {
                millis: m2,
                nanos: n2,
            },
        ) => (m1, n1).cmp(&(m2, n2)),
        (D::Array(x), D::Array(y)) | (D::Row(x), D::Row(y)) => {
            for (left, right) in x.iter().zip(y) {
                match compare_datums(left, right)? {
                    Ordering::Equal => {}
                    other => return Some(other),
                }
            }
            x.len().cmp(&y.len())
        }
        _ => integer_of(a)?.cmp(&integer_of(b)?),
    };
    Some(ordering)
}

/// `Float.compare` / `Double.compare`: NaN equals NaN and is above everything; -0.0 < 0.0.
fn java_float_cmp(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.total_cmp(&y),
    }
}

fn float_of(d: &Datum) -> Option<f64> {
    match d {
        Datum::Float(v) => Some(f64::from(*v)),
        Datum::Double(v) => Some(*v),
        _ => None,
    }
}

fn integer_of(d: &Datum) -> Option<i64> {
    match d {
        Datum::TinyInt(v) => Some(i64::from(*v)),
        Datum::SmallInt(v) => Some(i64::from(*v)),
        Datum::Int(v) => Some(i64::from(*v)),
        Datum::BigInt(v) => Some(*v),
        _ => None,
    }
}

/// Whether values of `ty` are signed integers that order as such: the signed integer types,
/// dates, times, timestamps and durations (the fast paths for integer keys use this).
pub(crate) fn is_signed_integer_backed(ty: &ArrowType) -> bool {
    matches!(
        ty,
        ArrowType::Int8
            | ArrowType::Int16
            | ArrowType::Int32
            | ArrowType::Int64
            | ArrowType::Date32
            | ArrowType::Date64
            | ArrowType::Time32(_)
            | ArrowType::Time64(_)
            | ArrowType::Timestamp(_, _)
            | ArrowType::Duration(_)
    )
}

/// The Arrow type of `ty`, with the spec crate's error turned into an engine error.
pub(crate) fn arrow_type_of(ty: &DataType) -> Result<ArrowType> {
    to_arrow_type(ty).map_err(|e| match e {
        tidelake_spec::Error::Unsupported(message) => Error::Unsupported(message),
        other => Error::invalid(other),
    })
}

/// The value type of a MULTISET's Arrow map: the element count.
fn multiset_count_type() -> DataType {
    DataType::not_null(TypeKind::Int)
}

fn mismatch(ty: &DataType, arrow_type: &ArrowType) -> Error {
    Error::SchemaMismatch(format!(
        "Arrow type {arrow_type} cannot hold Paimon type {ty}"
    ))
}

fn out_of_range(what: &str, value: impl std::fmt::Display) -> Error {
    Error::invalid(format!("{what} value {value} is out of range"))
}

fn dictionary_datum_at(
    array: &dyn Array,
    key: &ArrowType,
    row: usize,
    ty: &DataType,
) -> Result<Datum> {
    macro_rules! lookup {
        ($key_type:ty) => {{
            let dict = array.as_dictionary::<$key_type>();
            if dict.is_null(row) {
                return Ok(Datum::Null);
            }
            let index = usize::try_from(dict.keys().value(row))
                .map_err(|_| Error::invalid("negative dictionary key"))?;
            datum_at(dict.values().as_ref(), index, ty)
        }};
    }
    match key {
        ArrowType::Int8 => lookup!(Int8Type),
        ArrowType::Int16 => lookup!(Int16Type),
        ArrowType::Int32 => lookup!(Int32Type),
        ArrowType::Int64 => lookup!(Int64Type),
        ArrowType::UInt8 => lookup!(UInt8Type),
        ArrowType::UInt16 => lookup!(UInt16Type),
        ArrowType::UInt32 => lookup!(UInt32Type),
        ArrowType::UInt64 => lookup!(UInt64Type),
        other => Err(Error::SchemaMismatch(format!(
            "unsupported dictionary key type {other}"
        ))),
    }
}

fn list_datum(elements: &ArrayRef, element_type: &DataType) -> Result<Datum> {
    let values = (0..elements.len())
        .map(|i| datum_at(elements.as_ref(), i, element_type))
        .collect::<Result<Vec<_>>>()?;
    Ok(Datum::Array(values))
}

fn map_datum(entries: &StructArray, key_type: &DataType, value_type: &DataType) -> Result<Datum> {
    if entries.num_columns() != 2 {
        return Err(Error::SchemaMismatch(format!(
            "map entries have {} columns instead of 2",
            entries.num_columns()
        )));
    }
    let keys = entries.column(0);
    let values = entries.column(1);
    let pairs = (0..entries.len())
        .map(|i| {
            Ok((
                datum_at(keys.as_ref(), i, key_type)?,
                datum_at(values.as_ref(), i, value_type)?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Datum::Map(pairs))
}

/// `unscaled * 10^(to - from)`, or `None` if that is not an exact i128.
fn rescale(unscaled: i128, from: i32, to: i32) -> Option<i128> {
    let diff = to - from;
    let factor = 10i128.checked_pow(diff.unsigned_abs())?;
    if diff >= 0 {
        unscaled.checked_mul(factor)
    } else if unscaled % factor == 0 {
        Some(unscaled / factor)
    } else {
        None
    }
}

/// An Arrow timestamp value of `unit` as (epoch millis, nano-of-milli), floored.
fn timestamp_from_unit(value: i64, unit: TimeUnit) -> Result<Datum> {
    let (millis, nanos) = match unit {
        TimeUnit::Second => (
            value
                .checked_mul(1000)
                .ok_or_else(|| out_of_range("timestamp", value))?,
            0,
        ),
        TimeUnit::Millisecond => (value, 0),
        TimeUnit::Microsecond => (value.div_euclid(1000), value.rem_euclid(1000) * 1000),
        TimeUnit::Nanosecond => (
            value.div_euclid(NANOS_PER_MILLI),
            value.rem_euclid(NANOS_PER_MILLI),
        ),
    };
    let nanos = i32::try_from(nanos).map_err(|_| out_of_range("timestamp", value))?;
    Ok(Datum::Timestamp { millis, nanos })
}

/// (epoch millis, nano-of-milli) as an Arrow timestamp value of `unit`, if exact and in range.
fn timestamp_to_unit(millis: i64, nanos: i32, unit: TimeUnit) -> Result<i64> {
    let describe = || format!("timestamp (millis {millis}, nanos {nanos})");
    if !(0..NANOS_PER_MILLI).contains(&i64::from(nanos)) {
        return Err(Error::invalid(format!(
            "{}: nano-of-milli out of range",
            describe()
        )));
    }
    let nanos = i64::from(nanos);
    let converted = match unit {
        TimeUnit::Second if nanos == 0 && millis % 1000 == 0 => Some(millis / 1000),
        TimeUnit::Millisecond if nanos == 0 => Some(millis),
        TimeUnit::Microsecond if nanos % 1000 == 0 => millis
            .checked_mul(1000)
            .and_then(|v| v.checked_add(nanos / 1000)),
        TimeUnit::Nanosecond => millis
            .checked_mul(NANOS_PER_MILLI)
            .and_then(|v| v.checked_add(nanos)),
        _ => {
            return Err(Error::invalid(format!(
                "{} is not exact in unit {unit:?}",
                describe()
            )))
        }
    };
    converted.ok_or_else(|| Error::invalid(format!("{} overflows unit {unit:?}", describe())))
}

fn time_to_unit(millis: i32, unit: TimeUnit) -> Result<i64> {
    let millis = i64::from(millis);
    match unit {
        TimeUnit::Second if millis % 1000 == 0 => Ok(millis / 1000),
        TimeUnit::Millisecond => Ok(millis),
        TimeUnit::Microsecond => Ok(millis * 1000),
        TimeUnit::Nanosecond => Ok(millis * NANOS_PER_MILLI),
        TimeUnit::Second => Err(Error::invalid(format!(
            "time {millis} ms is not exact in seconds"
        ))),
    }
}

fn wrong_kind(ty: &DataType, datum: &Datum) -> Error {
    Error::invalid(format!("value {datum:?} is not of type {ty}"))
}

/// Collect `f(datum)` for each non-null datum, `None` for nulls.
fn map_values<'a, T>(
    values: &[&'a Datum],
    mut f: impl FnMut(&'a Datum) -> Result<T>,
) -> Result<Vec<Option<T>>> {
    values
        .iter()
        .map(|d| match d {
            Datum::Null => Ok(None),
            other => f(other).map(Some),
        })
        .collect()
}

fn nulls_of(values: &[&Datum]) -> Option<NullBuffer> {
    let nulls = NullBuffer::from_iter(values.iter().map(|d| !d.is_null()));
    (nulls.null_count() > 0).then_some(nulls)
}

fn build_array(values: &[&Datum], ty: &DataType, arrow_type: &ArrowType) -> Result<ArrayRef> {
    let wrong = |d: &Datum| wrong_kind(ty, d);
    let array: ArrayRef = match (&ty.kind, arrow_type) {
        (TypeKind::Boolean, ArrowType::Boolean) => {
            Arc::new(BooleanArray::from(map_values(values, |d| match d {
                Datum::Boolean(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::TinyInt, ArrowType::Int8) => {
            Arc::new(Int8Array::from(map_values(values, |d| match d {
                Datum::TinyInt(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::SmallInt, ArrowType::Int16) => {
            Arc::new(Int16Array::from(map_values(values, |d| match d {
                Datum::SmallInt(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::Int, ArrowType::Int32) => {
            Arc::new(Int32Array::from(map_values(values, |d| match d {
                Datum::Int(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::BigInt, ArrowType::Int64) => {
            Arc::new(Int64Array::from(map_values(values, |d| match d {
                Datum::BigInt(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::Float, ArrowType::Float32) => {
            Arc::new(Float32Array::from(map_values(values, |d| match d {
                Datum::Float(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::Double, ArrowType::Float64) => {
            Arc::new(Float64Array::from(map_values(values, |d| match d {
                Datum::Double(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::Decimal { scale, .. }, ArrowType::Decimal128(precision, arrow_scale)) => {
            let from = i32::try_from(*scale).map_err(|_| mismatch(ty, arrow_type))?;
            let limit = 10i128
                .checked_pow(u32::from(*precision))
                .ok_or_else(|| mismatch(ty, arrow_type))?;
            let unscaled = map_values(values, |d| {
                match d {
                Datum::Decimal(v) => rescale(*v, from, i32::from(*arrow_scale))
                    .filter(|r| r.unsigned_abs() < limit.unsigned_abs())
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "decimal with unscaled value {v} does not fit DECIMAL({precision}, {arrow_scale})"
                        ))
                    }),
                other => Err(wrong(other)),
            }
            })?;
            let array = Decimal128Array::from(unscaled)
                .with_precision_and_scale(*precision, *arrow_scale)
                .map_err(|e| Error::arrow("building a decimal array", e))?;
            Arc::new(array)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), _) => {
            let strings = map_values(values, |d| match d {
                Datum::String(s) => Ok(s.as_str()),
                other => Err(wrong(other)),
            })?;
            match arrow_type {
                ArrowType::Utf8 => Arc::new(StringArray::from(strings)),
                ArrowType::LargeUtf8 => Arc::new(LargeStringArray::from(strings)),
                ArrowType::Utf8View => Arc::new(StringViewArray::from(strings)),
                _ => return Err(mismatch(ty, arrow_type)),
            }
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_) | TypeKind::Blob, _) => {
            let bytes = map_values(values, |d| match d {
                Datum::Bytes(b) => Ok(b.as_slice()),
                other => Err(wrong(other)),
            })?;
            match arrow_type {
                ArrowType::Binary => Arc::new(BinaryArray::from(bytes)),
                ArrowType::LargeBinary => Arc::new(LargeBinaryArray::from(bytes)),
                ArrowType::BinaryView => Arc::new(BinaryViewArray::from(bytes)),
                ArrowType::FixedSizeBinary(width) => {
                    let expected = usize::try_from(*width).map_err(|_| mismatch(ty, arrow_type))?;
                    if let Some(bad) = bytes.iter().flatten().find(|b| b.len() != expected) {
                        return Err(Error::invalid(format!(
                            "{} bytes do not fit BINARY({width})",
                            bad.len()
                        )));
                    }
                    let array = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                        bytes.into_iter(),
                        *width,
                    )
                    .map_err(|e| Error::arrow("building a fixed-size binary array", e))?;
                    Arc::new(array)
                }
                _ => return Err(mismatch(ty, arrow_type)),
            }
        }
        (TypeKind::Date, ArrowType::Date32) => {
            Arc::new(Date32Array::from(map_values(values, |d| match d {
                Datum::Date(v) => Ok(*v),
                other => Err(wrong(other)),
            })?))
        }
        (TypeKind::Time(_), ArrowType::Time32(unit) | ArrowType::Time64(unit)) => {
            let ticks = map_values(values, |d| match d {
                Datum::Time(ms) => time_to_unit(*ms, *unit),
                other => Err(wrong(other)),
            })?;
            let narrow = || {
                ticks
                    .iter()
                    .map(|t| t.map(i32::try_from).transpose())
                    .collect::<std::result::Result<Vec<Option<i32>>, _>>()
                    .map_err(|_| out_of_range("time", "(beyond 32 bits)"))
            };
            match arrow_type {
                ArrowType::Time32(TimeUnit::Second) => Arc::new(Time32SecondArray::from(narrow()?)),
                ArrowType::Time32(TimeUnit::Millisecond) => {
                    Arc::new(Time32MillisecondArray::from(narrow()?))
                }
                ArrowType::Time64(TimeUnit::Microsecond) => {
                    Arc::new(Time64MicrosecondArray::from(ticks))
                }
                ArrowType::Time64(TimeUnit::Nanosecond) => {
                    Arc::new(Time64NanosecondArray::from(ticks))
                }
                _ => return Err(mismatch(ty, arrow_type)),
            }
        }
        (
            TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_),
            ArrowType::Timestamp(unit, tz),
        ) => {
            let ticks = map_values(values, |d| match d {
                Datum::Timestamp { millis, nanos } => timestamp_to_unit(*millis, *nanos, *unit),
                other => Err(wrong(other)),
            })?;
            let tz = tz.clone();
            match unit {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from(ticks).with_timezone_opt(tz))
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from(ticks).with_timezone_opt(tz))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from(ticks).with_timezone_opt(tz))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from(ticks).with_timezone_opt(tz))
                }
            }
        }
        (TypeKind::Array(element), ArrowType::List(field)) => {
            build_list::<i32>(values, ty, element, field)?
        }
        (TypeKind::Array(element), ArrowType::LargeList(field)) => {
            build_list::<i64>(values, ty, element, field)?
        }
        (TypeKind::Map(key, value), ArrowType::Map(entries, ordered)) => {
            build_map(values, ty, key, value, entries, *ordered)?
        }
        (TypeKind::Multiset(element), ArrowType::Map(entries, ordered)) => build_map(
            values,
            ty,
            element,
            &multiset_count_type(),
            entries,
            *ordered,
        )?,
        (TypeKind::Row(fields), ArrowType::Struct(arrow_fields))
            if fields.len() == arrow_fields.len() =>
        {
            let mut children: Vec<Vec<&Datum>> =
                vec![Vec::with_capacity(values.len()); fields.len()];
            for datum in values {
                match datum {
                    Datum::Null => children.iter_mut().for_each(|c| c.push(&Datum::Null)),
                    Datum::Row(items) if items.len() == fields.len() => {
                        children
                            .iter_mut()
                            .zip(items)
                            .for_each(|(c, item)| c.push(item));
                    }
                    other => return Err(wrong(other)),
                }
            }
            let arrays = fields
                .iter()
                .zip(arrow_fields.iter())
                .zip(&children)
                .map(|((field, arrow_field), child)| {
                    build_array(child, &field.data_type, arrow_field.data_type())
                })
                .collect::<Result<Vec<_>>>()?;
            let array = StructArray::try_new_with_length(
                arrow_fields.clone(),
                arrays,
                nulls_of(values),
                values.len(),
            )
            .map_err(|e| Error::arrow("building a struct array", e))?;
            Arc::new(array)
        }
        _ => return Err(mismatch(ty, arrow_type)),
    };
    Ok(array)
}

/// Offsets for nested values of `lengths` (None = null entry, length 0).
fn offsets_of<O: OffsetSizeTrait>(lengths: impl Iterator<Item = usize>) -> Result<OffsetBuffer<O>> {
    let mut offsets = Vec::new();
    let mut end = 0usize;
    offsets.push(O::usize_as(0));
    for len in lengths {
        end += len;
        offsets.push(
            O::from_usize(end).ok_or_else(|| Error::invalid("nested values overflow offsets"))?,
        );
    }
    Ok(OffsetBuffer::new(offsets.into()))
}

fn build_list<O: OffsetSizeTrait>(
    values: &[&Datum],
    ty: &DataType,
    element: &DataType,
    field: &FieldRef,
) -> Result<ArrayRef> {
    let mut elements = Vec::new();
    let mut lengths = Vec::with_capacity(values.len());
    for datum in values {
        match datum {
            Datum::Null => lengths.push(0),
            Datum::Array(items) => {
                lengths.push(items.len());
                elements.extend(items.iter());
            }
            other => return Err(wrong_kind(ty, other)),
        }
    }
    let child = build_array(&elements, element, field.data_type())?;
    let offsets = offsets_of::<O>(lengths.into_iter())?;
    let array = GenericListArray::<O>::try_new(field.clone(), offsets, child, nulls_of(values))
        .map_err(|e| Error::arrow("building a list array", e))?;
    Ok(Arc::new(array))
}

fn build_map(
    values: &[&Datum],
    ty: &DataType,
    key_type: &DataType,
    value_type: &DataType,
    entries_field: &FieldRef,
    ordered: bool,
) -> Result<ArrayRef> {
    let ArrowType::Struct(entry_fields) = entries_field.data_type() else {
        return Err(mismatch(ty, entries_field.data_type()));
    };
    if entry_fields.len() != 2 {
        return Err(mismatch(ty, entries_field.data_type()));
    }
    let mut keys = Vec::new();
    let mut items = Vec::new();
    let mut lengths = Vec::with_capacity(values.len());
    for datum in values {
        match datum {
            Datum::Null => lengths.push(0),
            Datum::Map(pairs) => {
                lengths.push(pairs.len());
                for (k, v) in pairs {
                    keys.push(k);
                    items.push(v);
                }
            }
            other => return Err(wrong_kind(ty, other)),
        }
    }
    let key_array = build_array(&keys, key_type, entry_fields[0].data_type())?;
    let value_array = build_array(&items, value_type, entry_fields[1].data_type())?;
    let entries = StructArray::try_new(entry_fields.clone(), vec![key_array, value_array], None)
        .map_err(|e| Error::arrow("building map entries", e))?;
    let offsets = offsets_of::<i32>(lengths.into_iter())?;
    let array = MapArray::try_new(
        entries_field.clone(),
        offsets,
        entries,
        nulls_of(values),
        ordered,
    )
    .map_err(|e| Error::arrow("building a map array", e))?;
    Ok(Arc::new(array))
}

/// The default value `text` of `column` as a one-element array of type `to` (Java
/// `DefaultValueUtils.convertDefaultValue`: the text without surrounding single quotes, cast
/// from a string).
pub(crate) fn default_value(text: &str, to: &ArrowType, column: &str) -> Result<ArrayRef> {
    let unquoted = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .unwrap_or(text);
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let parsed = cast_with_options(&StringArray::from(vec![unquoted]), to, &strict)
        .ok()
        .filter(|a| a.null_count() == 0);
    parsed.ok_or_else(|| {
        Error::SchemaMismatch(format!(
            "default value `{text}` of column '{column}' is not a {to}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int32Type as KeyInt32;
    use arrow_array::{Date64Array, Decimal256Array, DictionaryArray, LargeListArray};
    use arrow_buffer::i256;
    use tidelake_spec::types::{DataField, MAX_LENGTH};

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn ts(millis: i64, nanos: i32) -> Datum {
        Datum::Timestamp { millis, nanos }
    }

    /// datums → array → datums is the identity, and the array has `to_arrow_type(ty)`.
    fn round_trip(ty: &DataType, values: Vec<Datum>) {
        let array = datums_to_array(&values, ty).unwrap();
        assert_eq!(array.data_type(), &to_arrow_type(ty).unwrap(), "{ty}");
        assert_eq!(array.len(), values.len());
        for (row, expected) in values.iter().enumerate() {
            let got = datum_at(array.as_ref(), row, ty).unwrap();
            // Maps are not ordered; everything else must compare equal (NaN included).
            let same = match compare_datums(&got, expected) {
                Some(ordering) => ordering == Ordering::Equal,
                None => got == *expected,
            };
            assert!(same, "{ty} row {row}: {got:?} != {expected:?}");
            if let (Datum::Double(a), Datum::Double(b)) = (&got, expected) {
                assert_eq!(a.to_bits(), b.to_bits(), "{ty} row {row}: bits differ");
            }
        }
    }

    #[test]
    fn atomic_types_round_trip() {
        round_trip(
            &t(TypeKind::Boolean),
            vec![Datum::Boolean(true), Datum::Null, Datum::Boolean(false)],
        );
        round_trip(
            &t(TypeKind::TinyInt),
            vec![
                Datum::TinyInt(i8::MIN),
                Datum::TinyInt(i8::MAX),
                Datum::Null,
            ],
        );
        round_trip(
            &t(TypeKind::SmallInt),
            vec![Datum::SmallInt(i16::MIN), Datum::SmallInt(i16::MAX)],
        );
        round_trip(
            &t(TypeKind::Int),
            vec![Datum::Int(i32::MIN), Datum::Null, Datum::Int(i32::MAX)],
        );
        round_trip(
            &t(TypeKind::BigInt),
            vec![Datum::BigInt(i64::MIN), Datum::BigInt(i64::MAX)],
        );
        round_trip(
            &t(TypeKind::Float),
            vec![
                Datum::Float(f32::NAN),
                Datum::Float(-0.0),
                Datum::Float(f32::INFINITY),
                Datum::Float(f32::MIN),
            ],
        );
        round_trip(
            &t(TypeKind::Double),
            vec![
                Datum::Double(-0.0),
                Datum::Double(0.0),
                Datum::Double(f64::NEG_INFINITY),
                Datum::Null,
            ],
        );
        let max38 = 10i128.pow(38) - 1;
        round_trip(
            &t(TypeKind::Decimal {
                precision: 38,
                scale: 10,
            }),
            vec![
                Datum::Decimal(max38),
                Datum::Decimal(-max38),
                Datum::Decimal(0),
                Datum::Null,
            ],
        );
        round_trip(
            &t(TypeKind::Decimal {
                precision: 5,
                scale: 2,
            }),
            vec![Datum::Decimal(-99_999), Datum::Decimal(1)],
        );
        round_trip(
            &t(TypeKind::Char(3)),
            vec![Datum::String("abc".into()), Datum::Null],
        );
        round_trip(
            &DataType::string(),
            vec![
                Datum::String(String::new()),
                Datum::String("žluťoučký 🐎".into()),
            ],
        );
        round_trip(
            &t(TypeKind::Binary(3)),
            vec![Datum::Bytes(vec![0, 255, 7]), Datum::Null],
        );
        round_trip(
            &DataType::bytes(),
            vec![Datum::Bytes(vec![]), Datum::Bytes(vec![0x80, 0x7f])],
        );
        round_trip(
            &t(TypeKind::Date),
            vec![
                Datum::Date(-719_162),
                Datum::Date(0),
                Datum::Date(2_932_896),
            ],
        );
        round_trip(
            &t(TypeKind::Time(3)),
            vec![Datum::Time(0), Datum::Time(86_399_999), Datum::Null],
        );
        round_trip(&t(TypeKind::Time(0)), vec![Datum::Time(1_000)]);
    }

    #[test]
    fn timestamps_round_trip_at_every_precision() {
        round_trip(
            &t(TypeKind::Timestamp(0)),
            vec![ts(-1_000, 0), ts(0, 0), ts(1_700_000_000_000, 0)],
        );
        round_trip(
            &t(TypeKind::Timestamp(3)),
            vec![ts(-1, 0), ts(-62_135_596_800_000, 0), Datum::Null],
        );
        round_trip(
            &t(TypeKind::Timestamp(6)),
            vec![ts(-1, 999_000), ts(-2, 1_000), ts(5, 0)],
        );
        round_trip(
            &t(TypeKind::Timestamp(9)),
            vec![ts(-1, 999_999), ts(1, 1), ts(i64::MAX / 1_000_000, 0)],
        );
        round_trip(
            &t(TypeKind::LocalZonedTimestamp(6)),
            vec![ts(-1, 999_000), ts(1_000, 123_000)],
        );
        round_trip(
            &t(TypeKind::LocalZonedTimestamp(9)),
            vec![ts(-86_400_001, 1)],
        );
    }

    #[test]
    fn nested_types_round_trip() {
        let int = t(TypeKind::Int);
        round_trip(
            &t(TypeKind::Array(Box::new(int.clone()))),
            vec![
                Datum::Array(vec![Datum::Int(1), Datum::Null, Datum::Int(3)]),
                Datum::Null,
                Datum::Array(vec![]),
            ],
        );
        round_trip(
            &t(TypeKind::Map(
                Box::new(DataType::string().with_nullable(false)),
                Box::new(int.clone()),
            )),
            vec![
                Datum::Map(vec![
                    (Datum::String("a".into()), Datum::Int(1)),
                    (Datum::String("b".into()), Datum::Null),
                ]),
                Datum::Null,
                Datum::Map(vec![]),
            ],
        );
        round_trip(
            &t(TypeKind::Multiset(Box::new(DataType::string()))),
            vec![Datum::Map(vec![(Datum::String("x".into()), Datum::Int(2))])],
        );
        let row = t(TypeKind::Row(vec![
            DataField::new(1, "a", int.clone()),
            DataField::new(2, "b", t(TypeKind::Timestamp(9))),
        ]));
        round_trip(
            &row,
            vec![
                Datum::Row(vec![Datum::Int(1), ts(-1, 5)]),
                Datum::Null,
                Datum::Row(vec![Datum::Null, Datum::Null]),
            ],
        );
        round_trip(
            &t(TypeKind::Array(Box::new(row.clone()))),
            vec![
                Datum::Array(vec![Datum::Row(vec![Datum::Int(7), ts(0, 0)]), Datum::Null]),
                Datum::Null,
            ],
        );
    }

    #[test]
    fn building_never_rounds_or_coerces() {
        let err = |values: Vec<Datum>, ty: DataType| {
            datums_to_array(&values, &ty).unwrap_err().to_string()
        };
        assert!(err(vec![ts(0, 1)], t(TypeKind::Timestamp(3))).contains("not exact"));
        assert!(err(vec![ts(1, 0)], t(TypeKind::Timestamp(0))).contains("not exact"));
        assert!(err(vec![ts(0, 1_000_000)], t(TypeKind::Timestamp(9))).contains("nano-of-milli"));
        assert!(err(vec![ts(i64::MAX, 0)], t(TypeKind::Timestamp(9))).contains("overflows"));
        assert!(err(
            vec![Datum::Decimal(100_000)],
            t(TypeKind::Decimal {
                precision: 5,
                scale: 2
            })
        )
        .contains("does not fit"));
        assert!(err(vec![Datum::Bytes(vec![1, 2])], t(TypeKind::Binary(3))).contains("BINARY(3)"));
        assert!(err(vec![Datum::BigInt(1)], t(TypeKind::Int)).contains("is not of type INT"));
        assert!(err(vec![Datum::String("x".into())], DataType::bytes()).contains("BYTES"));
        let not_null_elements = t(TypeKind::Array(Box::new(DataType::not_null(TypeKind::Int))));
        assert!(datums_to_array(&[Datum::Array(vec![Datum::Null])], &not_null_elements).is_err());
    }

    #[test]
    fn reading_floors_timestamps_of_every_unit() {
        let ty = t(TypeKind::Timestamp(9));
        let cases: Vec<(ArrayRef, Datum)> = vec![
            (
                Arc::new(TimestampSecondArray::from(vec![-1])),
                ts(-1_000, 0),
            ),
            (
                Arc::new(TimestampMillisecondArray::from(vec![-1])),
                ts(-1, 0),
            ),
            (
                Arc::new(TimestampMicrosecondArray::from(vec![-1])),
                ts(-1, 999_000),
            ),
            (
                Arc::new(TimestampMicrosecondArray::from(vec![-1_001])),
                ts(-2, 999_000),
            ),
            (
                Arc::new(TimestampNanosecondArray::from(vec![-1])),
                ts(-1, 999_999),
            ),
            (
                Arc::new(TimestampNanosecondArray::from(vec![1_500_001])),
                ts(1, 500_001),
            ),
            (
                Arc::new(TimestampMicrosecondArray::from(vec![2_000]).with_timezone("+01:00")),
                ts(2, 0),
            ),
        ];
        for (array, expected) in cases {
            assert_eq!(
                datum_at(array.as_ref(), 0, &ty).unwrap(),
                expected,
                "{}",
                array.data_type()
            );
        }
    }

    #[test]
    fn reading_accepts_every_reader_encoding() {
        let string = DataType::string();
        let expect_string = Datum::String("hé".into());
        let strings: Vec<ArrayRef> = vec![
            Arc::new(LargeStringArray::from(vec!["hé"])),
            Arc::new(StringViewArray::from(vec!["hé"])),
            Arc::new(DictionaryArray::<KeyInt32>::from_iter(["hé"])),
        ];
        for array in strings {
            assert_eq!(datum_at(array.as_ref(), 0, &string).unwrap(), expect_string);
        }
        let bytes = DataType::bytes();
        let binaries: Vec<ArrayRef> = vec![
            Arc::new(LargeBinaryArray::from(vec![&b"\x00\xff"[..]])),
            Arc::new(BinaryViewArray::from(vec![&b"\x00\xff"[..]])),
            Arc::new(FixedSizeBinaryArray::try_from_iter([[0u8, 255]].into_iter()).unwrap()),
        ];
        for array in binaries {
            assert_eq!(
                datum_at(array.as_ref(), 0, &bytes).unwrap(),
                Datum::Bytes(vec![0, 255])
            );
        }
        let dec = t(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        let scale4: ArrayRef = Arc::new(
            Decimal128Array::from(vec![12_300, 12_345])
                .with_precision_and_scale(12, 4)
                .unwrap(),
        );
        assert_eq!(
            datum_at(scale4.as_ref(), 0, &dec).unwrap(),
            Datum::Decimal(123)
        );
        assert!(datum_at(scale4.as_ref(), 1, &dec)
            .unwrap_err()
            .to_string()
            .contains("not exact"));
        let scale0: ArrayRef = Arc::new(
            Decimal128Array::from(vec![-5])
                .with_precision_and_scale(10, 0)
                .unwrap(),
        );
        assert_eq!(
            datum_at(scale0.as_ref(), 0, &dec).unwrap(),
            Datum::Decimal(-500)
        );
        let wide: ArrayRef = Arc::new(
            Decimal256Array::from(vec![i256::from_i128(-7), i256::MAX])
                .with_precision_and_scale(76, 2)
                .unwrap(),
        );
        assert_eq!(
            datum_at(wide.as_ref(), 0, &dec).unwrap(),
            Datum::Decimal(-7)
        );
        assert!(datum_at(wide.as_ref(), 1, &dec).is_err());
        let time = t(TypeKind::Time(6));
        let times: Vec<ArrayRef> = vec![
            Arc::new(Time32SecondArray::from(vec![3])),
            Arc::new(Time64MicrosecondArray::from(vec![3_000_999])),
            Arc::new(Time64NanosecondArray::from(vec![3_000_999_999])),
        ];
        for array in times {
            assert_eq!(
                datum_at(array.as_ref(), 0, &time).unwrap(),
                Datum::Time(3_000)
            );
        }
        let date64: ArrayRef = Arc::new(Date64Array::from(vec![-1]));
        assert_eq!(
            datum_at(date64.as_ref(), 0, &t(TypeKind::Date)).unwrap(),
            Datum::Date(-1)
        );
        let large_list: ArrayRef =
            Arc::new(LargeListArray::from_iter_primitive::<Int32Type, _, _>(
                vec![Some(vec![Some(1), None]), None],
            ));
        let list_type = t(TypeKind::Array(Box::new(t(TypeKind::Int))));
        assert_eq!(
            datum_at(large_list.as_ref(), 0, &list_type).unwrap(),
            Datum::Array(vec![Datum::Int(1), Datum::Null])
        );
        assert_eq!(
            datum_at(large_list.as_ref(), 1, &list_type).unwrap(),
            Datum::Null
        );
    }

    #[test]
    fn reading_rejects_mismatches() {
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        let err = datum_at(ints.as_ref(), 0, &t(TypeKind::Int)).unwrap_err();
        assert!(matches!(err, Error::SchemaMismatch(_)), "{err}");
        assert!(datum_at(ints.as_ref(), 1, &t(TypeKind::BigInt))
            .unwrap_err()
            .to_string()
            .contains("out of bounds"));
        let text: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        assert!(datum_at(text.as_ref(), 0, &t(TypeKind::VarBinary(MAX_LENGTH))).is_err());
    }

    #[test]
    fn compare_follows_java_paimon() {
        use Ordering::{Equal, Greater, Less};
        let c = |a: Datum, b: Datum| compare_datums(&a, &b);
        assert_eq!(c(Datum::Null, Datum::Int(i32::MIN)), Some(Less));
        assert_eq!(c(Datum::Int(0), Datum::Null), Some(Greater));
        assert_eq!(c(Datum::Null, Datum::Null), Some(Equal));
        // Float.compare: NaN == NaN (any payload/sign), NaN > +inf, -0.0 < 0.0.
        assert_eq!(
            c(Datum::Double(f64::NAN), Datum::Double(-f64::NAN)),
            Some(Equal)
        );
        assert_eq!(
            c(Datum::Double(-f64::NAN), Datum::Double(f64::INFINITY)),
            Some(Greater)
        );
        assert_eq!(c(Datum::Double(-0.0), Datum::Double(0.0)), Some(Less));
        assert_eq!(
            c(Datum::Float(f32::NAN), Datum::Float(f32::NAN)),
            Some(Equal)
        );
        assert_eq!(c(Datum::Float(-1.5), Datum::Double(-1.5)), Some(Equal));
        // 0.1f32 is 0.100000001490116...: FLOAT and DOUBLE compare exactly.
        assert_eq!(c(Datum::Float(0.1), Datum::Double(0.1)), Some(Greater));
        assert_eq!(c(Datum::TinyInt(-1), Datum::BigInt(0)), Some(Less));
        assert_eq!(
            c(Datum::Decimal(i128::MIN), Datum::Decimal(i128::MAX)),
            Some(Less)
        );
        // Unsigned byte order: 'a' (0x61) < 'ä' (0xc3 0xa4); a prefix sorts first.
        assert_eq!(
            c(Datum::String("a".into()), Datum::String("ä".into())),
            Some(Less)
        );
        assert_eq!(
            c(Datum::String("ab".into()), Datum::String("a".into())),
            Some(Greater)
        );
        assert_eq!(
            c(Datum::Bytes(vec![0x7f]), Datum::Bytes(vec![0x80])),
            Some(Less)
        );
        assert_eq!(c(Datum::Bytes(vec![]), Datum::Bytes(vec![0])), Some(Less));
        assert_eq!(c(ts(-1, 999_999), ts(0, 0)), Some(Less));
        assert_eq!(c(ts(5, 1), ts(5, 0)), Some(Greater));
        assert_eq!(c(Datum::Date(-1), Datum::Date(0)), Some(Less));
        assert_eq!(c(Datum::Boolean(false), Datum::Boolean(true)), Some(Less));
        assert_eq!(
            c(
                Datum::Array(vec![Datum::Int(1)]),
                Datum::Array(vec![Datum::Int(1), Datum::Null])
            ),
            Some(Less)
        );
        assert_eq!(
            c(
                Datum::Row(vec![Datum::Null]),
                Datum::Row(vec![Datum::Int(0)])
            ),
            Some(Less)
        );
        // Incomparable kinds.
        assert_eq!(c(Datum::Int(1), Datum::Double(1.0)), None);
        assert_eq!(c(Datum::String("1".into()), Datum::Bytes(vec![b'1'])), None);
        assert_eq!(c(Datum::Date(0), ts(0, 0)), None);
        assert_eq!(c(Datum::Decimal(1), Datum::Int(1)), None);
        assert_eq!(c(Datum::Map(vec![]), Datum::Map(vec![])), None);
        assert_eq!(
            c(
                Datum::Array(vec![Datum::Int(1)]),
                Datum::Array(vec![Datum::String("1".into())])
            ),
            None
        );
    }
}
