//! Column values of decoded change messages and the Arrow types they are stored as.
//!
//! A format parser turns each JSON value into a [`Cell`] already normalised to its column's
//! Arrow type (dates as days, times and timestamps as nanoseconds, decimals as unscaled
//! integers with their scale), so a value that does not fit is found while its message is
//! parsed and blamed on that message. Columns of one source table seen in several messages get
//! the narrowest type that holds all of them ([`merge_types`]); types that cannot be merged
//! (a string column that becomes an integer) are a problem of the message that brought the
//! second type.
//!
//! Invariants: [`build_column`] only meets cells that [`merge_types`] admitted for its type,
//! and converts every value exactly (no rounding, no truncation) except times, which Paimon
//! stores as milliseconds of the day.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder,
    Time32MillisecondBuilder,
};
use arrow_array::types::{
    Date32Type, Decimal128Type, Time64NanosecondType, TimestampNanosecondType,
};
use arrow_array::{ArrayRef, PrimitiveArray};
use arrow_cast::parse::{parse_decimal, string_to_datetime, Parser};
use arrow_schema::{DataType as ArrowType, TimeUnit};

/// One decoded value, normalised for its column's Arrow type.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Unscaled value and scale.
    Decimal(i128, i8),
    Str(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Nanoseconds of the day.
    Time(i64),
    /// Nanoseconds since the epoch, as wall-clock time in UTC.
    Timestamp(i64),
}

/// Largest decimal precision Paimon stores.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

fn int_rank(t: &ArrowType) -> Option<u8> {
    match t {
        ArrowType::Int8 => Some(1),
        ArrowType::Int16 => Some(2),
        ArrowType::Int32 => Some(3),
        ArrowType::Int64 => Some(4),
        _ => None,
    }
}

fn unit_rank(u: &TimeUnit) -> u8 {
    match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }
}

/// The narrowest type holding every value of `a` and of `b` (`Null` is "no value seen yet"),
/// or `None` when no such type keeps them all exactly.
pub fn merge_types(a: &ArrowType, b: &ArrowType) -> Option<ArrowType> {
    use ArrowType::*;
    match (a, b) {
        (x, y) if x == y => Some(x.clone()),
        (Null, x) | (x, Null) => Some(x.clone()),
        (x, y) if int_rank(x).is_some() && int_rank(y).is_some() => {
            Some(if int_rank(x) > int_rank(y) { x } else { y }.clone())
        }
        (Float32, Int8 | Int16) | (Int8 | Int16, Float32) => Some(Float32),
        (Float32 | Float64, Int8 | Int16 | Int32 | Int64)
        | (Int8 | Int16 | Int32 | Int64, Float32 | Float64)
        | (Float32, Float64)
        | (Float64, Float32) => Some(Float64),
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            let scale = (*s1).max(*s2);
            let digits = (*p1 as i16 - *s1 as i16).max(*p2 as i16 - *s2 as i16);
            let precision = digits + scale as i16;
            (precision <= MAX_DECIMAL_PRECISION as i16)
                .then_some(Decimal128(precision as u8, scale))
        }
        (Timestamp(u1, z1), Timestamp(u2, z2)) if z1 == z2 => Some(Timestamp(
            if unit_rank(u1) >= unit_rank(u2) {
                *u1
            } else {
                *u2
            },
            z1.clone(),
        )),
        _ => None,
    }
}

/// The Arrow type of a value that came without a declared type (schemaless JSON).
pub fn inferred(value: &serde_json::Value) -> (ArrowType, Cell) {
    use serde_json::Value;
    match value {
        Value::Null => (ArrowType::Null, Cell::Null),
        Value::Bool(b) => (ArrowType::Boolean, Cell::Bool(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => (ArrowType::Int64, Cell::Int(i)),
            None => match n.as_f64() {
                Some(f) if n.is_f64() => (ArrowType::Float64, Cell::Float(f)),
                // an unsigned integer above i64::MAX
                _ => (
                    ArrowType::Decimal128(20, 0),
                    Cell::Decimal(n.as_u64().unwrap_or(0) as i128, 0),
                ),
            },
        },
        Value::String(s) => (ArrowType::Utf8, Cell::Str(s.clone())),
        // nested values are kept as their JSON text
        other => (ArrowType::Utf8, Cell::Str(other.to_string())),
    }
}

/// The text of a decimal (Debezium's VariableScaleDecimal, whose scale varies per value).
pub fn decimal_to_string(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale.max(0) as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// Parse `text` as a value of `target` (formats that send every value as a string: Canal).
pub fn parse_text(text: &str, target: &ArrowType) -> Result<Cell, String> {
    let bad = || format!("{text:?} is not a valid {target}");
    Ok(match target {
        ArrowType::Utf8 | ArrowType::Null => Cell::Str(text.to_string()),
        ArrowType::Boolean => match text.trim() {
            "1" | "true" | "TRUE" | "t" => Cell::Bool(true),
            "0" | "false" | "FALSE" | "f" => Cell::Bool(false),
            _ => return Err(bad()),
        },
        t if int_rank(t).is_some() => Cell::Int(text.trim().parse().map_err(|_| bad())?),
        ArrowType::Float32 | ArrowType::Float64 => {
            Cell::Float(text.trim().parse().map_err(|_| bad())?)
        }
        ArrowType::Decimal128(p, s) => Cell::Decimal(
            parse_decimal::<Decimal128Type>(text.trim(), *p, *s).map_err(|_| bad())?,
            *s,
        ),
        ArrowType::Date32 => Cell::Date(Date32Type::parse(text.trim()).ok_or_else(bad)?),
        ArrowType::Time32(_) | ArrowType::Time64(_) => {
            Cell::Time(Time64NanosecondType::parse(text.trim()).ok_or_else(bad)?)
        }
        ArrowType::Timestamp(_, None) => {
            Cell::Timestamp(TimestampNanosecondType::parse(text.trim()).ok_or_else(bad)?)
        }
        ArrowType::Timestamp(_, Some(_)) => Cell::Timestamp(
            string_to_datetime(&chrono::Utc, text.trim())
                .map_err(|_| bad())?
                .timestamp_nanos_opt()
                .ok_or_else(bad)?,
        ),
        // binary columns arrive as ISO-8859-1 text, one character per byte
        ArrowType::Binary => Cell::Bytes(
            text.chars()
                .map(|c| u8::try_from(u32::from(c)).map_err(|_| bad()))
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(format!("unsupported column type {other}")),
    })
}

const NANOS_PER_MILLI: i64 = 1_000_000;

fn unit_nanos(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => NANOS_PER_MILLI,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// The Arrow column of `cells` as `target` (a type [`merge_types`] produced for them).
pub fn build_column(cells: &[Cell], target: &ArrowType) -> Result<ArrayRef, String> {
    macro_rules! build {
        ($builder:expr, $conv:expr) => {{
            let mut b = $builder;
            for cell in cells {
                match cell {
                    Cell::Null => b.append_null(),
                    c => b.append_value($conv(c).ok_or_else(|| mismatch(c, target))?),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    let int = |c: &Cell| match c {
        Cell::Int(i) => Some(*i),
        _ => None,
    };
    Ok(match target {
        ArrowType::Null => arrow_array::new_null_array(target, cells.len()),
        ArrowType::Utf8 => build!(StringBuilder::new(), |c: &Cell| match c {
            Cell::Str(s) => Some(s.clone()),
            _ => None,
        }),
        ArrowType::Boolean => build!(BooleanBuilder::new(), |c: &Cell| match c {
            Cell::Bool(b) => Some(*b),
            _ => None,
        }),
        ArrowType::Int8 => build!(Int8Builder::new(), |c| int(c)
            .and_then(|i| i8::try_from(i).ok())),
        ArrowType::Int16 => build!(Int16Builder::new(), |c| int(c)
            .and_then(|i| i16::try_from(i).ok())),
        ArrowType::Int32 => build!(Int32Builder::new(), |c| int(c)
            .and_then(|i| i32::try_from(i).ok())),
        ArrowType::Int64 => build!(Int64Builder::new(), int),
        ArrowType::Float32 => build!(Float32Builder::new(), |c: &Cell| match c {
            Cell::Float(f) => Some(*f as f32),
            Cell::Int(i) => Some(*i as f32),
            _ => None,
        }),
        ArrowType::Float64 => build!(Float64Builder::new(), |c: &Cell| match c {
            Cell::Float(f) => Some(*f),
            Cell::Int(i) => Some(*i as f64),
            _ => None,
        }),
        ArrowType::Decimal128(p, s) => {
            let column = build!(Decimal128Builder::new(), |c: &Cell| match c {
                Cell::Decimal(v, scale) if scale <= s => 10i128
                    .checked_pow((s - scale) as u32)
                    .and_then(|f| v.checked_mul(f)),
                Cell::Int(i) => 10i128
                    .checked_pow(*s as u32)
                    .and_then(|f| (*i as i128).checked_mul(f)),
                _ => None,
            });
            let decimals = column
                .as_any()
                .downcast_ref::<PrimitiveArray<Decimal128Type>>()
                .expect("built as decimals")
                .clone()
                .with_precision_and_scale(*p, *s)
                .map_err(|e| e.to_string())?;
            decimals
                .validate_decimal_precision(*p)
                .map_err(|e| e.to_string())?;
            Arc::new(decimals)
        }
        ArrowType::Binary => build!(BinaryBuilder::new(), |c: &Cell| match c {
            Cell::Bytes(b) => Some(b.clone()),
            _ => None,
        }),
        ArrowType::Date32 => build!(Date32Builder::new(), |c: &Cell| match c {
            Cell::Date(d) => Some(*d),
            _ => None,
        }),
        ArrowType::Time32(TimeUnit::Millisecond) => {
            build!(Time32MillisecondBuilder::new(), |c: &Cell| match c {
                Cell::Time(n) => i32::try_from(n / NANOS_PER_MILLI).ok(),
                _ => None,
            })
        }
        ArrowType::Timestamp(unit, zone) => {
            let per = unit_nanos(unit);
            let values: Vec<Option<i64>> = cells
                .iter()
                .map(|c| match c {
                    Cell::Null => Ok(None),
                    Cell::Timestamp(n) if n % per == 0 => Ok(Some(n / per)),
                    c => Err(mismatch(c, target)),
                })
                .collect::<Result<_, _>>()?;
            let array: ArrayRef = match unit {
                TimeUnit::Second => Arc::new(arrow_array::TimestampSecondArray::from(values)),
                TimeUnit::Millisecond => {
                    Arc::new(arrow_array::TimestampMillisecondArray::from(values))
                }
                TimeUnit::Microsecond => {
                    Arc::new(arrow_array::TimestampMicrosecondArray::from(values))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(arrow_array::TimestampNanosecondArray::from(values))
                }
            };
            match zone {
                None => array,
                Some(z) => arrow_cast::cast(&array, &ArrowType::Timestamp(*unit, Some(z.clone())))
                    .map_err(|e| e.to_string())?,
            }
        }
        other => return Err(format!("unsupported column type {other}")),
    })
}

fn mismatch(cell: &Cell, target: &ArrowType) -> String {
    format!("value {cell:?} does not fit column type {target}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn types_merge_to_the_narrowest_exact_type() {
        use ArrowType::*;
        assert_eq!(merge_types(&Int32, &Int64), Some(Int64));
        assert_eq!(merge_types(&Null, &Utf8), Some(Utf8));
        assert_eq!(merge_types(&Int64, &Float32), Some(Float64));
        assert_eq!(
            merge_types(&Decimal128(10, 2), &Decimal128(12, 6)),
            Some(Decimal128(14, 6))
        );
        assert_eq!(merge_types(&Decimal128(38, 0), &Decimal128(38, 2)), None);
        assert_eq!(merge_types(&Utf8, &Int64), None);
        assert_eq!(
            merge_types(
                &Timestamp(TimeUnit::Millisecond, None),
                &Timestamp(TimeUnit::Microsecond, None)
            ),
            Some(Timestamp(TimeUnit::Microsecond, None))
        );
    }

    #[test]
    fn text_parses_by_column_type() {
        assert_eq!(
            parse_text("12.5", &ArrowType::Decimal128(5, 2)),
            Ok(Cell::Decimal(1250, 2))
        );
        assert_eq!(
            parse_text("2024-02-29", &ArrowType::Date32),
            Ok(Cell::Date(19782))
        );
        assert_eq!(
            parse_text(
                "2024-02-29 01:02:03.5",
                &ArrowType::Timestamp(TimeUnit::Millisecond, None)
            ),
            Ok(Cell::Timestamp(1_709_168_523_500_000_000))
        );
        assert_eq!(
            parse_text("01:00:00", &ArrowType::Time32(TimeUnit::Millisecond)),
            Ok(Cell::Time(3_600_000_000_000))
        );
        assert!(parse_text("x1", &ArrowType::Int32).is_err());
        assert!(parse_text("2", &ArrowType::Boolean).is_err());
    }

    #[test]
    fn decimals_rescale_exactly_and_print() {
        let column = build_column(
            &[Cell::Decimal(125, 2), Cell::Int(3), Cell::Null],
            &ArrowType::Decimal128(6, 3),
        )
        .unwrap();
        let d = column
            .as_any()
            .downcast_ref::<PrimitiveArray<Decimal128Type>>()
            .unwrap();
        assert_eq!(d.value(0), 1250);
        assert_eq!(d.value(1), 3000);
        assert!(d.is_null(2));
        assert_eq!(decimal_to_string(-5, 3), "-0.005");
        assert_eq!(decimal_to_string(123456, 2), "1234.56");
        assert!(build_column(&[Cell::Decimal(1, 4)], &ArrowType::Decimal128(6, 3)).is_err());
    }
}
