//! Partition time extraction (Java `PartitionTimeExtractor`): partition values → a local
//! date-time, through `partition.timestamp-pattern` and `partition.timestamp-formatter`.
//!
//! * Pattern: `$key` is replaced by that partition value (longest key first); without a
//!   pattern the first partition value is used.
//! * Without a formatter: Java's default `y-M-d[ H:m:s[.fraction]]` (year 1–10 digits, the
//!   others 1–2, fraction 1–9), else a date at midnight.
//! * With a formatter: the `DateTimeFormatter.ofPattern` subset `u`/`y` (year), `M`, `d`,
//!   `H`, `m`, `s`, `S` (fraction), quoted `'text'` and other literal characters; a numeric
//!   field of one letter takes 1–2 digits (year: up to 10), of n ≥ 2 letters exactly n, and a
//!   field directly followed by another numeric field always exactly n (Java's adjacent value
//!   parsing). Missing time fields are zero (Java falls back to the date at midnight). Text
//!   fields (`MMM`, `E`, `a`...) are [`Error::Unsupported`].
//!
//! Deviation: Java's default formatter resolves leniently (month 13 rolls over); here invalid
//! dates do not parse, so such partitions never expire.

use chrono::{NaiveDate, NaiveDateTime};

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    Fraction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Literal(String),
    Number {
        field: Field,
        min: usize,
        max: usize,
    },
}

/// A parsed `partition.timestamp-formatter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Formatter {
    items: Vec<Item>,
}

impl Formatter {
    /// Compile a Java `DateTimeFormatter` pattern (the subset in the module docs).
    pub fn new(pattern: &str) -> Result<Formatter> {
        let unsupported = |c: char| {
            Error::Unsupported(format!(
                "pattern letter '{c}' in partition.timestamp-formatter '{pattern}'"
            ))
        };
        let chars: Vec<char> = pattern.chars().collect();
        let mut items = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                let close = chars[i + 1..]
                    .iter()
                    .position(|x| *x == '\'')
                    .map(|p| p + i + 1)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "unterminated quote in partition.timestamp-formatter '{pattern}'"
                        ))
                    })?;
                let text: String = if close == i + 1 {
                    "'".into()
                } else {
                    chars[i + 1..close].iter().collect()
                };
                items.push(Item::Literal(text));
                i = close + 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|x| **x == c).count();
            if c.is_ascii_alphabetic() {
                let field = match c {
                    'y' | 'u' => Field::Year,
                    'M' | 'L' if run <= 2 => Field::Month,
                    'd' => Field::Day,
                    'H' => Field::Hour,
                    'm' => Field::Minute,
                    's' => Field::Second,
                    'S' => Field::Fraction,
                    other => return Err(unsupported(other)),
                };
                let (min, max) = match (field, run) {
                    (Field::Fraction, n) => (n, n),
                    (Field::Year, 1) => (1, 10),
                    (Field::Year, 2) => return Err(unsupported(c)),
                    (_, 1) => (1, 2),
                    (_, n) => (n, n),
                };
                items.push(Item::Number { field, min, max });
            } else {
                items.push(Item::Literal(chars[i..i + run].iter().collect()));
            }
            i += run;
        }
        // Adjacent value parsing: a field followed by a numeric field has a fixed width.
        for k in 0..items.len().saturating_sub(1) {
            if matches!(items[k + 1], Item::Number { .. }) {
                if let Item::Number { min, max, .. } = &mut items[k] {
                    *max = *min;
                }
            }
        }
        Ok(Formatter { items })
    }

    /// Parse the whole of `text`.
    pub fn parse(&self, text: &str) -> Option<NaiveDateTime> {
        let mut values = Values::default();
        let mut rest = text;
        for item in &self.items {
            match item {
                Item::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Item::Number { field, min, max } => {
                    let digits = rest
                        .bytes()
                        .take(*max)
                        .take_while(u8::is_ascii_digit)
                        .count();
                    if digits < *min {
                        return None;
                    }
                    values.set(*field, &rest[..digits])?;
                    rest = &rest[digits..];
                }
            }
        }
        if rest.is_empty() {
            values.build()
        } else {
            None
        }
    }
}

#[derive(Default)]
struct Values {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    hour: u32,
    minute: u32,
    second: u32,
    nano: u32,
}

impl Values {
    fn set(&mut self, field: Field, digits: &str) -> Option<()> {
        let number = || digits.parse::<u32>().ok();
        match field {
            Field::Year => self.year = Some(digits.parse().ok()?),
            Field::Month => self.month = Some(number()?),
            Field::Day => self.day = Some(number()?),
            Field::Hour => self.hour = number()?,
            Field::Minute => self.minute = number()?,
            Field::Second => self.second = number()?,
            Field::Fraction => self.nano = format!("{digits:0<9}").get(..9)?.parse().ok()?,
        }
        Some(())
    }

    fn build(&self) -> Option<NaiveDateTime> {
        NaiveDate::from_ymd_opt(self.year?, self.month?, self.day?)?.and_hms_nano_opt(
            self.hour,
            self.minute,
            self.second,
            self.nano,
        )
    }
}

/// Java `TIMESTAMP_FORMATTER` then `DATE_FORMATTER`.
fn parse_default(text: &str) -> Option<NaiveDateTime> {
    let number = |field, min, max| Item::Number { field, min, max };
    let lit = |s: &str| Item::Literal(s.to_string());
    let date = vec![
        number(Field::Year, 1, 10),
        lit("-"),
        number(Field::Month, 1, 2),
        lit("-"),
        number(Field::Day, 1, 2),
    ];
    let mut time = date.clone();
    time.extend([
        lit(" "),
        number(Field::Hour, 1, 2),
        lit(":"),
        number(Field::Minute, 1, 2),
        lit(":"),
        number(Field::Second, 1, 2),
    ]);
    let mut fraction = time.clone();
    fraction.extend([lit("."), number(Field::Fraction, 1, 9)]);
    [fraction, time, date]
        .into_iter()
        .find_map(|items| Formatter { items }.parse(text))
}

/// Java `PartitionTimeExtractor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionTimeExtractor {
    pattern: Option<String>,
    formatter: Option<Formatter>,
}

impl PartitionTimeExtractor {
    pub fn new(pattern: Option<&str>, formatter: Option<&str>) -> Result<PartitionTimeExtractor> {
        Ok(PartitionTimeExtractor {
            pattern: pattern.map(str::to_string),
            formatter: formatter.map(Formatter::new).transpose()?,
        })
    }

    /// The time of a partition given its keys and value strings; `None` when it does not
    /// parse (Java logs and keeps such partitions).
    pub fn extract(&self, keys: &[String], values: &[String]) -> Option<NaiveDateTime> {
        let text = match &self.pattern {
            None => values.first()?.clone(),
            Some(p) => replace_pattern(p, keys, values),
        };
        match &self.formatter {
            None => parse_default(&text),
            Some(f) => f.parse(&text),
        }
    }
}

/// Replace `$key` by the key's value, preferring longer keys (Java `replacePattern`).
fn replace_pattern(pattern: &str, keys: &[String], values: &[String]) -> String {
    let mut order: Vec<usize> = (0..keys.len().min(values.len())).collect();
    order.sort_by_key(|i| std::cmp::Reverse(keys[*i].len()));
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '$' {
            if let Some(&i) = order
                .iter()
                .find(|i| rest[1..].starts_with(keys[**i].as_str()))
            {
                out.push_str(&values[i]);
                rest = &rest[1 + keys[i].len()..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|x| x.and_hms_opt(h, mi, s))
            .expect("valid")
    }

    #[test]
    fn default_formats() {
        assert_eq!(parse_default("2024-05-14"), Some(at(2024, 5, 14, 0, 0, 0)));
        assert_eq!(
            parse_default("2024-5-4 3:04:05"),
            Some(at(2024, 5, 4, 3, 4, 5))
        );
        assert!(parse_default("2024-05-14 01:02:03.5").is_some());
        assert_eq!(parse_default("20240514"), None);
        assert_eq!(parse_default("__DEFAULT_PARTITION__"), None);
    }

    #[test]
    fn formatter_patterns() {
        let f = Formatter::new("yyyyMMdd").expect("valid");
        assert_eq!(f.parse("20240514"), Some(at(2024, 5, 14, 0, 0, 0)));
        assert_eq!(f.parse("2024051"), None);
        let f = Formatter::new("yyyy-MM-dd HH").expect("valid");
        assert_eq!(f.parse("2024-05-14 07"), Some(at(2024, 5, 14, 7, 0, 0)));
        let f = Formatter::new("yyyy/MM/dd'T'HH:mm").expect("valid");
        assert_eq!(f.parse("2024/05/14T07:08"), Some(at(2024, 5, 14, 7, 8, 0)));
        assert!(Formatter::new("yyyy-MMM-dd").is_err());
    }

    #[test]
    fn patterns_substitute_longest_keys_first() {
        let keys = vec!["dt".to_string(), "dt1".to_string(), "hour".to_string()];
        let values = vec!["2024-05-14".to_string(), "X".to_string(), "07".to_string()];
        assert_eq!(
            replace_pattern("$dt $hour:00:00/$dt1", &keys, &values),
            "2024-05-14 07:00:00/X"
        );
        let e = PartitionTimeExtractor::new(Some("$dt $hour:00:00"), None).expect("valid");
        assert_eq!(e.extract(&keys, &values), Some(at(2024, 5, 14, 7, 0, 0)));
    }
}
