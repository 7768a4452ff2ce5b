//! Partition directory names, as Java `InternalRowPartitionComputer` + `PartitionPathUtils`.
//!
//! A partition path is `escape(name)=escape(value)` per partition key, joined by `/` (no trailing
//! slash; empty for an unpartitioned table). Readers recompute it from the partition BinaryRow, so
//! every string here must match Java exactly.
//!
//! Value → string:
//! * null, empty or whitespace-only (Java `Character.isWhitespace`) → `partition.default-name`;
//! * `partition.legacy-name = true` (default): Java `toString()` of the internal value — DATE and
//!   TIME as integers, TIMESTAMP as `LocalDateTime.toString()`, DECIMAL as
//!   `BigDecimal.toPlainString()`, FLOAT/DOUBLE as `Float/Double.toString()` (JDK 19+ shortest
//!   round-trip digits); BINARY would print a Java object id and is unsupported;
//! * `partition.legacy-name = false`: Paimon's `CAST(x AS STRING)` — DATE `yyyy-MM-dd`, TIME
//!   `HH:mm:ss[.fff]`, TIMESTAMP `yyyy-MM-dd HH:mm:ss[.fraction]` (trailing zeros trimmed down to
//!   the type precision), BINARY as its UTF-8 text. Java formats TIMESTAMP WITH LOCAL TIME ZONE in
//!   the JVM's default zone; this implementation uses UTC.
//!
//! Escaping (Java `escapePathName`): chars 0x00–0x1F, 0x7F and `" # % ' * / : = ? \ { } [ ] ^`
//! become `%XX` (uppercase hex); everything else, space and non-ASCII included, is kept.
//! Invariant: since `/`, NUL and `=` are always escaped and each segment contains the literal `=`,
//! no produced segment contains `/` or NUL, and none can be `.` or `..`; no deviation from Java is
//! needed for the `name=value` layout.

use crate::binary_row::datum_name;
use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::types::{DataType, TypeKind};

/// Default of `partition.default-name`.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";

const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_MILLI: i32 = 1_000_000;
const NANOS_PER_SECOND: i64 = 1_000_000_000;
/// Julian day number of 1970-01-01 (Java `DateTimeUtils.EPOCH_JULIAN`).
const EPOCH_JULIAN: i32 = 2_440_588;

/// Computes partition directory names and display specs from partition values.
#[derive(Debug, Clone)]
pub struct PartitionComputer {
    names: Vec<String>,
    types: Vec<DataType>,
    default_name: String,
    legacy: bool,
}

impl PartitionComputer {
    /// `names`/`types` are the partition keys in order; `default_name` is `partition.default-name`
    /// and `legacy` is `partition.legacy-name`.
    pub fn new(
        names: Vec<String>,
        types: Vec<DataType>,
        default_name: impl Into<String>,
        legacy: bool,
    ) -> Result<Self> {
        let default_name = default_name.into();
        if names.len() != types.len() {
            return Err(Error::Invalid(format!(
                "{} partition keys but {} types",
                names.len(),
                types.len()
            )));
        }
        if names.iter().any(String::is_empty) || default_name.is_empty() {
            return Err(Error::Invalid(
                "partition key names and partition.default-name must not be empty".to_string(),
            ));
        }
        Ok(PartitionComputer {
            names,
            types,
            default_name,
            legacy,
        })
    }

    /// `(name, value)` strings before escaping, nulls and blanks replaced by the default name.
    pub fn partition_spec(&self, values: &[Datum]) -> Result<Vec<(String, String)>> {
        if values.len() != self.types.len() {
            return Err(Error::Invalid(format!(
                "{} partition values for {} partition keys",
                values.len(),
                self.types.len()
            )));
        }
        let mut spec = Vec::with_capacity(values.len());
        for ((name, ty), value) in self.names.iter().zip(&self.types).zip(values) {
            let text = self.value_string(value, ty)?.filter(|s| !is_blank(s));
            spec.push((
                name.clone(),
                text.unwrap_or_else(|| self.default_name.clone()),
            ));
        }
        Ok(spec)
    }

    /// The relative directory, e.g. `dt=2024-05-14/hr=3`; empty without partition keys.
    pub fn partition_path(&self, values: &[Datum]) -> Result<String> {
        Ok(spec_path(&self.partition_spec(values)?))
    }

    /// The string of one non-default value; `None` for null.
    fn value_string(&self, value: &Datum, ty: &DataType) -> Result<Option<String>> {
        let text = match (&ty.kind, value) {
            (_, Datum::Null) => return Ok(None),
            (TypeKind::Char(_) | TypeKind::VarChar(_), Datum::String(s)) => s.clone(),
            (TypeKind::Boolean, Datum::Boolean(v)) => v.to_string(),
            (TypeKind::TinyInt, Datum::TinyInt(v)) => v.to_string(),
            (TypeKind::SmallInt, Datum::SmallInt(v)) => v.to_string(),
            (TypeKind::Int, Datum::Int(v)) => v.to_string(),
            (TypeKind::BigInt, Datum::BigInt(v)) => v.to_string(),
            (TypeKind::Float, Datum::Float(v)) => java_float_to_string(*v),
            (TypeKind::Double, Datum::Double(v)) => java_double_to_string(*v),
            (TypeKind::Decimal { scale, .. }, Datum::Decimal(v)) => plain_decimal(*v, *scale),
            (TypeKind::Date, Datum::Date(days)) if self.legacy => days.to_string(),
            (TypeKind::Date, Datum::Date(days)) => sql_date(*days),
            (TypeKind::Time(_), Datum::Time(millis)) if self.legacy => millis.to_string(),
            (TypeKind::Time(p), Datum::Time(millis)) => sql_time(*millis, *p),
            (
                TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
                Datum::Timestamp { millis, nanos },
            ) => {
                let ts = JavaDateTime::from_timestamp(*millis, *nanos)?;
                if self.legacy {
                    ts.local_date_time_string()
                } else {
                    ts.sql_string(*p)
                }
            }
            (TypeKind::Binary(_) | TypeKind::VarBinary(_), Datum::Bytes(bytes)) => {
                self.binary_string(bytes)?
            }
            (
                TypeKind::Array(_)
                | TypeKind::Map(..)
                | TypeKind::Multiset(_)
                | TypeKind::Row(_)
                | TypeKind::Variant
                | TypeKind::Blob,
                _,
            ) => {
                return Err(Error::Unsupported(format!(
                    "partition key of type {:?}",
                    ty.kind
                )))
            }
            _ => {
                return Err(Error::Invalid(format!(
                    "{} value for a partition key of type {:?}",
                    datum_name(value),
                    ty.kind
                )))
            }
        };
        Ok(Some(text))
    }

    /// Non-legacy BINARY partitions are their UTF-8 text; legacy ones print a Java object id.
    fn binary_string(&self, bytes: &[u8]) -> Result<String> {
        if self.legacy {
            return Err(Error::Unsupported(
                "BINARY partition keys with partition.legacy-name=true".to_string(),
            ));
        }
        String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::Unsupported("BINARY partition value that is not valid UTF-8".to_string())
        })
    }
}

// ------------------------------------------------------------------------------------------
// Escaping
// ------------------------------------------------------------------------------------------

fn needs_escaping(c: char) -> bool {
    matches!(
        c,
        '\u{0}'
            ..='\u{1f}'
                | '\u{7f}'
                | '"'
                | '#'
                | '%'
                | '\''
                | '*'
                | '/'
                | ':'
                | '='
                | '?'
                | '\\'
                | '{'
                | '}'
                | '['
                | ']'
                | '^'
    )
}

/// The relative directory of a partition spec (Java `PartitionPathUtils.generatePartitionPath`):
/// `k=v` segments, names and values escaped, joined by `/`.
pub fn spec_path(spec: &[(String, String)]) -> String {
    let segments: Vec<String> = spec
        .iter()
        .map(|(name, value)| format!("{}={}", escape_path_name(name), escape_path_name(value)))
        .collect();
    segments.join("/")
}

/// Java `PartitionPathUtils.escapePathName` (Java rejects the empty string; here it stays empty).
pub fn escape_path_name(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if needs_escaping(c) {
            out.push_str(&format!("%{:02X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Java `PartitionPathUtils.unescapePathName`: `%` followed by two characters that Java's
/// `Integer.parseInt(_, 16)` reads as a non-negative number becomes that char (so `%+A` is
/// `\n` and `%-0` is NUL, as in Java); anything else is kept. Unlike Java, only ASCII hex digits
/// are digits (Java also accepts other Unicode digits).
pub fn unescape_path_name(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let code = match chars.get(i..i + 3) {
            Some(['%', a, b]) => parse_java_hex_pair(*a, *b),
            _ => None,
        };
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                i += 3;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// Java `Integer.parseInt(a + b, 16)` when the result is non-negative.
fn parse_java_hex_pair(a: char, b: char) -> Option<u8> {
    let low = b.to_digit(16)?;
    let value = match a {
        '+' => low,
        '-' if low == 0 => 0,
        _ => a.to_digit(16)? * 16 + low,
    };
    // At most 0xff, so lossless.
    Some(value as u8)
}

// ------------------------------------------------------------------------------------------
// Java string forms of values
// ------------------------------------------------------------------------------------------

/// Java `StringUtils.isNullOrWhitespaceOnly` for a non-null string.
fn is_blank(s: &str) -> bool {
    s.chars().all(is_java_whitespace)
}

/// Java `Character.isWhitespace`: space/line/paragraph separators except no-break spaces, plus
/// the ASCII controls TAB..CR and FS..US.
fn is_java_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | '\u{1c}'..='\u{20}'
            | '\u{1680}'
            | '\u{2000}'..='\u{2006}'
            | '\u{2008}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `BigDecimal.toPlainString()` of `unscaled × 10^-scale`.
fn plain_decimal(unscaled: i128, scale: u32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// Java `Double.toString` (JDK 19+ algorithm).
fn java_double_to_string(v: f64) -> String {
    if v.is_nan() || v.is_infinite() || v == 0.0 {
        return java_special(v.is_nan(), v.is_sign_negative(), v == 0.0);
    }
    let abs = v.abs();
    let shortest = format!("{abs:e}");
    let two_digits = format!("{abs:.1e}");
    let exact = two_digits.parse::<f64>().is_ok_and(|x| x == abs);
    java_layout(
        v < 0.0,
        &shortest,
        &two_digits,
        exact,
        (1e-3..1e7).contains(&abs),
    )
}

/// Java `Float.toString` (JDK 19+ algorithm).
fn java_float_to_string(v: f32) -> String {
    if v.is_nan() || v.is_infinite() || v == 0.0 {
        return java_special(v.is_nan(), v.is_sign_negative(), v == 0.0);
    }
    let abs = v.abs();
    let shortest = format!("{abs:e}");
    let two_digits = format!("{abs:.1e}");
    let exact = two_digits.parse::<f32>().is_ok_and(|x| x == abs);
    java_layout(
        v < 0.0,
        &shortest,
        &two_digits,
        exact,
        (1e-3..1e7).contains(&abs),
    )
}

fn java_special(nan: bool, negative: bool, zero: bool) -> String {
    let text = match (nan, negative, zero) {
        (true, _, _) => "NaN",
        (_, false, true) => "0.0",
        (_, true, true) => "-0.0",
        (_, false, false) => "Infinity",
        (_, true, false) => "-Infinity",
    };
    text.to_string()
}

/// Lays out Rust's shortest `d.ddde±x` digits the way Java does.
///
/// When the shortest form has a single digit, Java picks the closest decimal of one or two
/// digits that still reads back as the value (e.g. `4.9E-324`, not `5E-324`): that is the
/// correctly rounded two-digit form whenever it round-trips (`two_digits_exact`).
fn java_layout(
    negative: bool,
    shortest: &str,
    two_digits: &str,
    two_digits_exact: bool,
    plain: bool,
) -> String {
    let (mut digits, mut exp) = split_scientific(shortest);
    if digits.len() == 1 && two_digits_exact {
        (digits, exp) = split_scientific(two_digits);
    }
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let sign = if negative { "-" } else { "" };
    if plain {
        format!("{sign}{}", plain_digits(digits, exp))
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

/// Digits (without the point) and decimal exponent of Rust's `{:e}` output, e.g. `1.5e-3`.
fn split_scientific(s: &str) -> (String, i32) {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// `d.ddd × 10^exp` in positional notation with at least one fractional digit.
fn plain_digits(digits: &str, exp: i32) -> String {
    if exp < 0 {
        let zeros = "0".repeat(exp.unsigned_abs() as usize - 1);
        return format!("0.{zeros}{digits}");
    }
    let int_len = exp.unsigned_abs() as usize + 1;
    if digits.len() <= int_len {
        format!("{digits:0<int_len$}.0")
    } else {
        let (int, frac) = digits.split_at(int_len);
        format!("{int}.{frac}")
    }
}

/// A timestamp split the way Java `Timestamp.toLocalDateTime()` does.
struct JavaDateTime {
    year: i32,
    month: u32,
    day: u32,
    hour: i64,
    minute: i64,
    second: i64,
    nano: i64,
}

impl JavaDateTime {
    fn from_timestamp(millis: i64, nanos: i32) -> Result<Self> {
        if !(0..NANOS_PER_MILLI).contains(&nanos) {
            return Err(Error::Invalid(format!(
                "nano-of-millisecond {nanos} is not in 0..999999"
            )));
        }
        // Java narrows the day and millisecond counts to int.
        let mut date = (millis / MILLIS_PER_DAY) as i32;
        let mut time = (millis % MILLIS_PER_DAY) as i32;
        if time < 0 {
            date = date.wrapping_sub(1);
            time += MILLIS_PER_DAY as i32;
        }
        let nano_of_day = i64::from(time) * i64::from(NANOS_PER_MILLI) + i64::from(nanos);
        let (year, month, day) = civil_from_days(i64::from(date));
        let second_of_day = nano_of_day / NANOS_PER_SECOND;
        Ok(JavaDateTime {
            year,
            month,
            day,
            hour: second_of_day / 3600,
            minute: second_of_day / 60 % 60,
            second: second_of_day % 60,
            nano: nano_of_day % NANOS_PER_SECOND,
        })
    }

    /// Java `LocalDateTime.toString()`.
    fn local_date_time_string(&self) -> String {
        let mut out = format!(
            "{}-{:02}-{:02}T{:02}:{:02}",
            java_year(self.year),
            self.month,
            self.day,
            self.hour,
            self.minute
        );
        if self.second > 0 || self.nano > 0 {
            out.push_str(&format!(":{:02}", self.second));
        }
        if self.nano > 0 {
            out.push_str(&local_time_fraction(self.nano));
        }
        out
    }

    /// Java `DateTimeUtils.formatTimestamp(ts, precision)` (CAST to STRING).
    fn sql_string(&self, precision: u32) -> String {
        let mut fraction = format!("{:09}", self.nano);
        while fraction.len() > precision as usize && fraction.ends_with('0') {
            fraction.pop();
        }
        let mut out = String::new();
        push_int4(&mut out, self.year);
        out.push('-');
        // Month and day are below 32, hours below 24, minutes and seconds below 60.
        push_int2(&mut out, self.month as i32);
        out.push('-');
        push_int2(&mut out, self.day as i32);
        out.push(' ');
        push_int2(&mut out, self.hour as i32);
        out.push(':');
        push_int2(&mut out, self.minute as i32);
        out.push(':');
        push_int2(&mut out, self.second as i32);
        if !fraction.is_empty() {
            out.push('.');
            out.push_str(&fraction);
        }
        out
    }
}

/// Java `LocalTime.toString()` fraction of a positive nano-of-second: 3, 6 or 9 digits.
fn local_time_fraction(nano: i64) -> String {
    if nano % 1_000_000 == 0 {
        format!(".{:03}", nano / 1_000_000)
    } else if nano % 1000 == 0 {
        format!(".{:06}", nano / 1000)
    } else {
        format!(".{nano:09}")
    }
}

/// Year as Java `LocalDate.toString()` prints it: at least 4 digits, `+` above 9999.
fn java_year(year: i32) -> String {
    if year.unsigned_abs() < 1000 {
        let sign = if year < 0 { "-" } else { "" };
        format!("{sign}{:04}", year.unsigned_abs())
    } else if year > 9999 {
        format!("+{year}")
    } else {
        year.to_string()
    }
}

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    // |days| < 2^31, so the year fits an i32; day and month are small positives.
    (year as i32, month as u32, day as u32)
}

/// Java `DateTimeUtils.formatDate` (Julian-day arithmetic on Java ints).
fn sql_date(days: i32) -> String {
    let julian = days.wrapping_add(EPOCH_JULIAN);
    let j = julian.wrapping_add(32_044);
    let g = j / 146_097;
    let dg = j % 146_097;
    let c = (dg / 36_524 + 1) * 3 / 4;
    let dc = dg - c * 36_524;
    let b = dc / 1461;
    let db = dc % 1461;
    let a = (db / 365 + 1) * 3 / 4;
    let da = db - a * 365;
    let y = g.wrapping_mul(400).wrapping_add(c * 100 + b * 4 + a);
    let m = (da * 5 + 308) / 153 - 2;
    let d = da - (m + 4) * 153 / 5 + 122;
    let year = y.wrapping_sub(4800).wrapping_add((m + 2) / 12);
    let mut out = String::with_capacity(10);
    push_int4(&mut out, year);
    out.push('-');
    push_int2(&mut out, (m + 2) % 12 + 1);
    out.push('-');
    push_int2(&mut out, d + 1);
    out
}

/// Java `DateTimeUtils.formatTimestampMillis(time, precision)` (CAST of TIME to STRING).
fn sql_time(millis: i32, precision: u32) -> String {
    let time = if millis < 0 {
        millis.rem_euclid(MILLIS_PER_DAY as i32)
    } else {
        millis
    };
    let mut out = String::new();
    push_int2(&mut out, time / 3_600_000);
    out.push(':');
    push_int2(&mut out, time % 3_600_000 / 60_000);
    out.push(':');
    push_int2(&mut out, time % 60_000 / 1000);
    if precision > 0 {
        out.push('.');
        let mut ms = time % 1000;
        for _ in 0..precision {
            push_java_digit(&mut out, ms / 100);
            ms = ms % 100 * 10;
            if ms == 0 {
                break;
            }
        }
    }
    out
}

/// Java's `int4`: the last four decimal digits, computed with truncating division.
fn push_int4(out: &mut String, v: i32) {
    for divisor in [1000, 100, 10, 1] {
        push_java_digit(out, v / divisor % 10);
    }
}

/// Java's `int2`: the last two decimal digits.
fn push_int2(out: &mut String, v: i32) {
    push_java_digit(out, v / 10 % 10);
    push_java_digit(out, v % 10);
}

/// `(char) ('0' + d)` for `d` in -9..=9 (negative years print characters below `0`, as in Java).
fn push_java_digit(out: &mut String, d: i32) {
    // -9..=9 keeps the code point within ASCII 39..=57.
    out.push(char::from((i32::from(b'0') + d) as u8));
}

#[cfg(test)]
mod tests;
