//! Binding filter literals: JSON values converted to [`Datum`]s of a column's type, with
//! errors that name the column, the literal and the type.

use serde_json::Value;
use tidelake_spec::datum::Datum;
use tidelake_spec::types::{DataField, TypeKind};

use crate::error::{Error, Result};

use super::{MILLIS_PER_DAY, NANOS_PER_MILLI, NAN_F32, NAN_F64};

// ---- binding -------------------------------------------------------------------------------

pub(super) fn resolve<'a>(fields: &'a [DataField], name: &str) -> Result<&'a DataField> {
    fields.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        Error::invalid(format!(
            "unknown column '{name}' in filter; columns are {}",
            names.join(", ")
        ))
    })
}

/// The field named `name`, which must have an atomic (orderable) type for `op`.
pub(super) fn comparable<'a>(
    fields: &'a [DataField],
    name: &str,
    op: &str,
) -> Result<&'a DataField> {
    let field = resolve(fields, name)?;
    match field.data_type.kind {
        TypeKind::Array(_)
        | TypeKind::Multiset(_)
        | TypeKind::Map(_, _)
        | TypeKind::Row(_)
        | TypeKind::Variant
        | TypeKind::Blob => Err(Error::invalid(format!(
            "cannot apply '{op}' to column '{name}' of type {}: only is_null and is_not_null \
             apply to this type",
            field.data_type
        ))),
        _ => Ok(field),
    }
}

pub(super) fn invalid_literal(value: &Value, field: &DataField, reason: &str) -> Error {
    Error::invalid(format!(
        "invalid literal {value} for column '{}' of type {}: {reason}",
        field.name, field.data_type
    ))
}

pub(super) fn non_null_literal(value: &Value, field: &DataField, op: &str) -> Result<Datum> {
    if value.is_null() {
        return Err(Error::invalid(format!(
            "'{op}' on column '{}' has a null literal, which never matches; use is_null or \
             is_not_null",
            field.name
        )));
    }
    literal(value, field)
}

/// The JSON literal `value` as a datum of `field`'s type (JSON null → [`Datum::Null`]).
pub(super) fn literal(value: &Value, field: &DataField) -> Result<Datum> {
    if value.is_null() {
        return Ok(Datum::Null);
    }
    convert_literal(value, &field.data_type.kind)
        .map_err(|reason| invalid_literal(value, field, &reason))
}

fn convert_literal(value: &Value, kind: &TypeKind) -> std::result::Result<Datum, String> {
    let range = || "out of range for the column type".to_string();
    let datum = match (kind, value) {
        (TypeKind::Boolean, Value::Bool(b)) => Datum::Boolean(*b),
        (TypeKind::TinyInt, Value::Number(n)) => {
            Datum::TinyInt(i8::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::SmallInt, Value::Number(n)) => {
            Datum::SmallInt(i16::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Int, Value::Number(n)) => {
            Datum::Int(i32::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::BigInt, Value::Number(n)) => {
            Datum::BigInt(i64::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Float, Value::Number(_) | Value::String(_)) => {
            let wide = float_literal(value)?;
            // `as` rounds to the nearest f32; only finite values that overflow are rejected.
            let narrow = wide as f32;
            if wide.is_finite() && narrow.is_infinite() {
                return Err(range());
            }
            Datum::Float(if narrow.is_nan() { NAN_F32 } else { narrow })
        }
        (TypeKind::Double, Value::Number(_) | Value::String(_)) => {
            let wide = float_literal(value)?;
            Datum::Double(if wide.is_nan() { NAN_F64 } else { wide })
        }
        (TypeKind::Decimal { precision, scale }, Value::Number(n)) => {
            // Integers are exact; a JSON float is taken at its shortest round-trip digits.
            let text = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => i.to_string(),
                (None, Some(u), _) => u.to_string(),
                (None, None, Some(f)) => format!("{f}"),
                _ => return Err("expected a decimal number".to_string()),
            };
            Datum::Decimal(parse_decimal(&text, *precision, *scale)?)
        }
        (TypeKind::Decimal { precision, scale }, Value::String(text)) => {
            Datum::Decimal(parse_decimal(text, *precision, *scale)?)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), Value::String(s)) => Datum::String(s.clone()),
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Value::String(hex)) => {
            Datum::Bytes(parse_hex(hex)?)
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Value::Array(items)) => {
            let bytes = items
                .iter()
                .map(|item| item.as_u64().and_then(|b| u8::try_from(b).ok()));
            Datum::Bytes(
                bytes
                    .collect::<Option<Vec<u8>>>()
                    .ok_or("byte arrays must hold integers 0..=255")?,
            )
        }
        (TypeKind::Date, Value::String(s)) => Datum::Date(parse_date(s)?),
        (TypeKind::Date, Value::Number(n)) => {
            Datum::Date(i32::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Time(_), Value::String(s)) => {
            let (millis, sub_milli) = parse_time(s)?;
            if sub_milli != 0 {
                return Err("TIME values have millisecond precision".to_string());
            }
            Datum::Time(millis)
        }
        (TypeKind::Time(_), Value::Number(n)) => {
            let millis = integral(n)?;
            if !(0..i128::from(MILLIS_PER_DAY)).contains(&millis) {
                return Err("milliseconds of day must be in 0..86400000".to_string());
            }
            Datum::Time(i32::try_from(millis).map_err(|_| range())?)
        }
        (TypeKind::Timestamp(_), Value::String(s)) => parse_timestamp(s, false)?,
        (TypeKind::LocalZonedTimestamp(_), Value::String(s)) => parse_timestamp(s, true)?,
        (TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_), Value::Number(n)) => {
            Datum::Timestamp {
                millis: i64::try_from(integral(n)?).map_err(|_| range())?,
                nanos: 0,
            }
        }
        _ => return Err(format!("expected {}", expected_shape(kind))),
    };
    Ok(datum)
}

/// What a literal of `kind` looks like, for error messages.
fn expected_shape(kind: &TypeKind) -> &'static str {
    match kind {
        TypeKind::Boolean => "true or false",
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int | TypeKind::BigInt => {
            "an integer number"
        }
        TypeKind::Float | TypeKind::Double => "a number or \"NaN\", \"Infinity\", \"-Infinity\"",
        TypeKind::Decimal { .. } => "a number or a decimal string like \"12.34\"",
        TypeKind::Char(_) | TypeKind::VarChar(_) => "a JSON string",
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
            "a hex string like \"0aff\" or an array of byte values"
        }
        TypeKind::Date => "a date string \"YYYY-MM-DD\" or days since 1970-01-01",
        TypeKind::Time(_) => "a time string \"HH:MM:SS[.fff]\" or milliseconds of day",
        TypeKind::Timestamp(_) => {
            "a timestamp string \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]]\" or epoch milliseconds"
        }
        TypeKind::LocalZonedTimestamp(_) => {
            "a timestamp string \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM]\" (no zone = UTC) \
             or epoch milliseconds"
        }
        _ => "no literal (only is_null and is_not_null apply)",
    }
}

/// An integral JSON number (`5` or `5.0`; not `5.5`).
fn integral(n: &serde_json::Number) -> std::result::Result<i128, String> {
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e38 => Ok(f as i128),
        Some(f) if f.is_finite() && f.fract() == 0.0 => {
            Err("out of range for the column type".to_string())
        }
        _ => Err("expected an integer number".to_string()),
    }
}

fn float_literal(value: &Value) -> std::result::Result<f64, String> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| "expected a number".to_string()),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "nan" => Ok(NAN_F64),
            "inf" | "+inf" | "infinity" | "+infinity" => Ok(f64::INFINITY),
            "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
            _ => Err("expected a number or \"NaN\", \"Infinity\", \"-Infinity\"".to_string()),
        },
        _ => Err("expected a number".to_string()),
    }
}

/// The unscaled value of decimal text (`[+-]digits[.digits][e[+-]digits]`) at `scale`,
/// exactly: digits beyond the scale must be zeros and the value must fit `precision`.
fn parse_decimal(text: &str, precision: u32, scale: u32) -> std::result::Result<i128, String> {
    let malformed = || "expected a decimal number like \"-12.345\"".to_string();
    let out_of_range = || format!("out of range for DECIMAL({precision}, {scale})");
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (
            &unsigned[..at],
            unsigned[at + 1..].parse::<i64>().map_err(|_| malformed())?,
        ),
        None => (unsigned, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(malformed());
    }
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|b| b - b'0')
        .collect();
    let frac_len = i64::try_from(frac_part.len()).map_err(|_| malformed())?;
    // unscaled = digits * 10^shift
    let shift = exponent
        .saturating_sub(frac_len)
        .saturating_add(i64::from(scale));
    let (kept, dropped) = if shift >= 0 {
        (digits.as_slice(), &[][..])
    } else {
        let drop = usize::try_from(shift.unsigned_abs()).unwrap_or(usize::MAX);
        digits.split_at(digits.len().saturating_sub(drop))
    };
    if dropped.iter().any(|&d| d != 0) {
        return Err(format!(
            "more than {scale} fractional digits for DECIMAL({precision}, {scale})"
        ));
    }
    let limit = 10i128.checked_pow(precision).ok_or_else(out_of_range)?;
    let mut unscaled: i128 = 0;
    let push = |value: i128, digit: u8| {
        value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(digit)))
            .filter(|v| *v < limit)
    };
    for &digit in kept {
        unscaled = push(unscaled, digit).ok_or_else(out_of_range)?;
    }
    if unscaled != 0 {
        for _ in 0..shift.max(0) {
            unscaled = push(unscaled, 0).ok_or_else(out_of_range)?;
        }
    }
    Ok(if negative { -unscaled } else { unscaled })
}

fn parse_hex(text: &str) -> std::result::Result<Vec<u8>, String> {
    let malformed = || "expected an even number of hex digits".to_string();
    let pairs = text.as_bytes().chunks(2);
    pairs
        .map(|pair| match pair {
            [high, low] => Some((hex_digit(*high)? << 4) | hex_digit(*low)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(malformed)
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Parse exactly `width` ASCII digits.
fn digits(text: &str, width: usize) -> Option<u32> {
    (text.len() == width && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok())?
}

/// `YYYY-MM-DD` as days since 1970-01-01.
fn parse_date(text: &str) -> std::result::Result<i32, String> {
    let malformed = || "expected a date \"YYYY-MM-DD\"".to_string();
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(malformed());
    };
    let (year, month, day) = (
        digits(year, 4).ok_or_else(malformed)?,
        digits(month, 2).ok_or_else(malformed)?,
        digits(day, 2).ok_or_else(malformed)?,
    );
    let year = i32::try_from(year).map_err(|_| malformed())?;
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| format!("{text} is not a calendar date"))?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(malformed)?;
    i32::try_from(date.signed_duration_since(epoch).num_days()).map_err(|_| malformed())
}

/// `HH:MM[:SS[.fffffffff]]` as (millis of day, nano-of-milli).
fn parse_time(text: &str) -> std::result::Result<(i32, u32), String> {
    let malformed = || "expected a time \"HH:MM[:SS[.fffffffff]]\"".to_string();
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let (hour, minute, second) = match (parts.as_slice(), fraction) {
        ([h, m], None) => (digits(h, 2), digits(m, 2), Some(0)),
        ([h, m, s], _) => (digits(h, 2), digits(m, 2), digits(s, 2)),
        _ => return Err(malformed()),
    };
    let (hour, minute, second) = (
        hour.filter(|h| *h < 24).ok_or_else(malformed)?,
        minute.filter(|m| *m < 60).ok_or_else(malformed)?,
        second.filter(|s| *s < 60).ok_or_else(malformed)?,
    );
    let nanos = match fraction {
        None => 0,
        Some(f) if f.len() > 9 => return Err("at most 9 fractional digits".to_string()),
        Some(f) => {
            let value = digits(f, f.len())
                .filter(|_| !f.is_empty())
                .ok_or_else(malformed)?;
            // len <= 9 was checked, so the exponent is in 0..=8.
            value * 10u32.pow(9 - f.len() as u32)
        }
    };
    let millis = (hour * 3600 + minute * 60 + second) * 1000 + nanos / NANOS_PER_MILLI;
    let millis = i32::try_from(millis).map_err(|_| malformed())?;
    Ok((millis, nanos % NANOS_PER_MILLI))
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS[.f{1,9}]]][Z|±HH[:MM]]` as a timestamp datum. Without a zone
/// the text is the wall clock (TIMESTAMP) or UTC (TIMESTAMP WITH LOCAL TIME ZONE); a zone is
/// only allowed when `zoned`.
fn parse_timestamp(text: &str, zoned: bool) -> std::result::Result<Datum, String> {
    let malformed = || {
        "expected a timestamp \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]]\"".to_string()
            + if zoned {
                " with optional Z or ±HH:MM"
            } else {
                ""
            }
    };
    let (date, rest) = text.split_at_checked(10).ok_or_else(malformed)?;
    let days = i64::from(parse_date(date)?);
    let (millis_of_day, nanos, offset_seconds) = if rest.is_empty() {
        (0, 0, 0)
    } else {
        let rest = rest.strip_prefix(['T', 't', ' ']).ok_or_else(malformed)?;
        let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
        let (clock, zone) = rest.split_at(zone_at);
        let (millis, nanos) = parse_time(clock)?;
        if !zone.is_empty() && !zoned {
            return Err(
                "TIMESTAMP literals take no zone offset; give the local date-time".to_string(),
            );
        }
        (millis, nanos, parse_offset(zone).ok_or_else(malformed)?)
    };
    let millis = days * MILLIS_PER_DAY + i64::from(millis_of_day) - offset_seconds * 1000;
    let nanos = i32::try_from(nanos).map_err(|_| malformed())?;
    Ok(Datum::Timestamp { millis, nanos })
}

/// `""`, `Z`, `±HH`, `±HHMM` or `±HH:MM` as seconds east of UTC.
fn parse_offset(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body = zone.get(1..)?;
    let (hours, minutes) = match body.len() {
        2 => (body, "00"),
        4 => body.split_at_checked(2)?,
        5 if body.as_bytes()[2] == b':' => (body.get(..2)?, body.get(3..)?),
        _ => return None,
    };
    let (hours, minutes) = (digits(hours, 2)?, digits(minutes, 2)?);
    (hours <= 18 && minutes < 60).then(|| sign * i64::from(hours * 3600 + minutes * 60))
}
