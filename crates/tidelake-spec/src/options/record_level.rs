//! Record-level expiry options (Java `CoreOptions.RECORD_LEVEL_EXPIRE_TIME` and
//! `RECORD_LEVEL_TIME_FIELD`), parsed once into [`RecordLevelExpiry`].
//!
//! Java 1.3.1 rules kept here: the expiry exists only with `record-level.expire-time`, which
//! then requires `record-level.time-field` (checked when a primary-key table is written or
//! compacted, Java `RecordLevelExpire.create`); a time field, whenever it is set, names a
//! column of type INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ (Java `SchemaValidation`, checked at
//! create and alter by [`crate::schema::TableSchema::validate`]). The expire time counts in
//! whole seconds (Java `Duration.getSeconds`).

use super::Options;
use crate::error::{Error, Result};
use crate::types::TypeKind;

pub const RECORD_LEVEL_EXPIRE_TIME: &str = "record-level.expire-time";
pub const RECORD_LEVEL_TIME_FIELD: &str = "record-level.time-field";

/// What `record-level.expire-time` with `record-level.time-field` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLevelExpiry {
    /// The column whose time expires a row.
    pub time_field: String,
    /// Rows older than now minus this many seconds expire.
    pub expire_secs: i64,
}

impl Options {
    /// The record-level expiry these options ask for: `None` without
    /// `record-level.expire-time`; [`Error::Invalid`] naming the option when the duration does
    /// not parse or `record-level.time-field` is missing.
    pub fn record_level_expiry(&self) -> Result<Option<RecordLevelExpiry>> {
        let Some(expire) = self.get_duration(RECORD_LEVEL_EXPIRE_TIME)? else {
            return Ok(None);
        };
        let time_field = self.record_level_time_field().ok_or_else(|| {
            Error::Invalid(format!(
                "option '{RECORD_LEVEL_EXPIRE_TIME}' needs '{RECORD_LEVEL_TIME_FIELD}', the \
                 column whose time expires a row"
            ))
        })?;
        Ok(Some(RecordLevelExpiry {
            time_field: time_field.to_string(),
            expire_secs: i64::try_from(expire.as_secs()).unwrap_or(i64::MAX),
        }))
    }

    /// `record-level.time-field`, if set.
    pub fn record_level_time_field(&self) -> Option<&str> {
        self.get(RECORD_LEVEL_TIME_FIELD)
    }
}

/// Whether a column of type `kind` can be the record-level time field: INT (epoch seconds),
/// BIGINT (epoch seconds, or milliseconds from 10^12 on), TIMESTAMP or TIMESTAMP_LTZ.
pub fn is_record_time_type(kind: &TypeKind) -> bool {
    matches!(
        kind,
        TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Timestamp(_)
            | TypeKind::LocalZonedTimestamp(_)
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::opts;
    use super::*;

    #[test]
    fn record_level_expiry_is_parsed_once_with_its_field() {
        assert_eq!(opts(&[]).record_level_expiry().unwrap(), None);
        assert_eq!(
            opts(&[(RECORD_LEVEL_TIME_FIELD, "ts")])
                .record_level_expiry()
                .unwrap(),
            None
        );
        assert_eq!(
            opts(&[
                (RECORD_LEVEL_EXPIRE_TIME, "1 d"),
                (RECORD_LEVEL_TIME_FIELD, "ts")
            ])
            .record_level_expiry()
            .unwrap(),
            Some(RecordLevelExpiry {
                time_field: "ts".into(),
                expire_secs: 86_400
            })
        );
        // whole seconds, as Java's Duration.getSeconds
        let ms = opts(&[
            (RECORD_LEVEL_EXPIRE_TIME, "1500 ms"),
            (RECORD_LEVEL_TIME_FIELD, "ts"),
        ]);
        assert_eq!(ms.record_level_expiry().unwrap().unwrap().expire_secs, 1);
        for bad in [
            opts(&[(RECORD_LEVEL_EXPIRE_TIME, "1 d")]),
            opts(&[
                (RECORD_LEVEL_EXPIRE_TIME, "soon"),
                (RECORD_LEVEL_TIME_FIELD, "ts"),
            ]),
        ] {
            let err = bad.record_level_expiry().unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(m) if m.contains(RECORD_LEVEL_EXPIRE_TIME)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn time_field_types() {
        for ok in [
            TypeKind::Int,
            TypeKind::BigInt,
            TypeKind::Timestamp(3),
            TypeKind::LocalZonedTimestamp(6),
        ] {
            assert!(is_record_time_type(&ok), "{ok:?}");
        }
        for bad in [TypeKind::SmallInt, TypeKind::Date, TypeKind::VarChar(10)] {
            assert!(!is_record_time_type(&bad), "{bad:?}");
        }
    }
}
