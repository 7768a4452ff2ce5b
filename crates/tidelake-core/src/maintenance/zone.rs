//! The time zones automatic tags name times in (Java `CoreOptions.sinkProcessTimeZone`,
//! `sinkWatermarkTimeZone`, parsed by `java.time.ZoneId.of`).
//!
//! * `sink.process-time-zone` (unset: the JVM's default zone, here the local zone of the
//!   engine's clock) turns a snapshot's commit time into the local date-time of
//!   `process-time` and `batch` tags; `sink.watermark-time-zone` (default `UTC`) does so for
//!   the watermark of `watermark` tags. Nothing else in Java 1.3.1 reads them.
//! * A value parses as `ZoneId.of` parses it: `Z`, an offset `+h`, `+hh`, `+hhmm`, `+hh:mm`,
//!   `+hhmmss`, `+hh:mm:ss` (at most 18 hours), `UTC`/`GMT`/`UT` alone or followed by such an
//!   offset, or an IANA region id, case-sensitive (`Asia/Shanghai`, `Etc/GMT-8`, `GMT0`); IANA
//!   rules come from `chrono-tz`. Anything else is [`Error::Invalid`] naming the option.

use std::str::FromStr;

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

use crate::error::{Error, Result};
use crate::table::Table;

/// A zone local date-times are taken in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// The local zone of the engine's clock (Java `ZoneId.systemDefault()`).
    Local,
    /// A fixed offset from UTC.
    Fixed(FixedOffset),
    /// An IANA region.
    Region(Tz),
}

impl Zone {
    /// `value` of option `option` as Java's `ZoneId.of` reads it; see the module docs.
    pub fn parse(option: &str, value: &str) -> Result<Zone> {
        let invalid = || {
            Error::invalid(format!(
                "option '{option}' = '{value}' is not a time zone: use a region such as \
                 'Asia/Shanghai', 'UTC', or an offset such as 'GMT+08:00' or '+08:00'"
            ))
        };
        let prefixed = ["UTC", "GMT", "UT"]
            .into_iter()
            .find_map(|p| value.strip_prefix(p));
        let zone = if value.len() <= 1 || value.starts_with(['+', '-']) {
            offset(value).map(Zone::Fixed)
        } else if let Some(rest) = prefixed.filter(|r| r.starts_with(['+', '-'])) {
            offset(rest).map(Zone::Fixed)
        } else if matches!(value, "UTC" | "GMT" | "UT") {
            Some(Zone::Fixed(FixedOffset::east_opt(0).ok_or_else(invalid)?))
        } else {
            Tz::from_str(value).ok().map(Zone::Region)
        };
        zone.ok_or_else(invalid)
    }

    /// The local date-time of epoch milliseconds `epoch_ms` in this zone (`None` out of range).
    pub fn local(&self, table: &Table, epoch_ms: i64) -> Option<NaiveDateTime> {
        let utc = DateTime::from_timestamp_millis(epoch_ms)?;
        match self {
            Zone::Local => table.env().to_local(epoch_ms),
            Zone::Fixed(offset) => Some(offset.from_utc_datetime(&utc.naive_utc()).naive_local()),
            Zone::Region(tz) => Some(tz.from_utc_datetime(&utc.naive_utc()).naive_local()),
        }
    }
}

/// Java `ZoneOffset.of`: `Z`, or a sign and `h`, `hh`, `hhmm`, `hh:mm`, `hhmmss`, `hh:mm:ss`
/// within ±18:00.
fn offset(text: &str) -> Option<FixedOffset> {
    if text == "Z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match text.split_at_checked(1)? {
        ("+", rest) => (1, rest),
        ("-", rest) => (-1, rest),
        _ => return None,
    };
    let number = |s: &str| -> Option<i32> {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (h, m, s) = match rest.len() {
        1 | 2 => (number(rest)?, 0, 0),
        4 => (number(&rest[..2])?, number(&rest[2..])?, 0),
        5 if &rest[2..3] == ":" => (number(&rest[..2])?, number(&rest[3..])?, 0),
        6 => (
            number(&rest[..2])?,
            number(&rest[2..4])?,
            number(&rest[4..])?,
        ),
        8 if &rest[2..3] == ":" && &rest[5..6] == ":" => (
            number(&rest[..2])?,
            number(&rest[3..5])?,
            number(&rest[6..])?,
        ),
        _ => return None,
    };
    let seconds = h * 3600 + m * 60 + s;
    if h > 18 || m > 59 || s > 59 || seconds > 18 * 3600 {
        return None;
    }
    FixedOffset::east_opt(sign * seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(seconds: i32) -> Zone {
        Zone::Fixed(FixedOffset::east_opt(seconds).unwrap())
    }

    #[test]
    fn zones_parse_as_java_zone_id_of() {
        for (text, zone) in [
            ("Z", fixed(0)),
            ("UTC", fixed(0)),
            ("GMT", fixed(0)),
            ("UT", fixed(0)),
            ("+8", fixed(8 * 3600)),
            ("-08", fixed(-8 * 3600)),
            ("+0530", fixed(5 * 3600 + 1800)),
            ("GMT+08:00", fixed(8 * 3600)),
            ("UTC-03:30", fixed(-(3 * 3600 + 1800))),
            ("UT+1", fixed(3600)),
            ("+18:00", fixed(18 * 3600)),
            ("+01:02:03", fixed(3723)),
            ("Asia/Shanghai", Zone::Region(Tz::Asia__Shanghai)),
            ("Etc/GMT-8", Zone::Region(Tz::Etc__GMTMinus8)),
            ("GMT0", Zone::Region(Tz::GMT0)),
        ] {
            assert_eq!(Zone::parse("o", text).unwrap(), zone, "{text}");
        }
        for text in [
            "",
            "utc",
            "asia/shanghai",
            "Mars/Olympus",
            "+19",
            "+18:01",
            "+8:00",
            "GMT+",
            "UTCX",
            "PST",
            "+1:2",
            "08:00",
        ] {
            let err = Zone::parse("sink.process-time-zone", text).unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(m) if m.contains("'sink.process-time-zone'")),
                "{text}: {err:?}"
            );
        }
    }
}
