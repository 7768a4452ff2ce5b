//! Record-level expiry (Java `RecordLevelExpire`, primary-key tables with
//! `record-level.expire-time` and `record-level.time-field`): compaction drops the rows whose
//! time field is older than now minus the expire time.
//!
//! As Java 1.3.1: the time field is INT (epoch seconds), BIGINT (epoch seconds, or epoch
//! milliseconds from 10^12 on) or TIMESTAMP / TIMESTAMP_LTZ (its epoch milliseconds); any other
//! type, a missing field or a missing `record-level.time-field` is an error. A row is kept when
//! its time is null or `now <= time + expire` (seconds). Only compaction rewrites filter (every
//! data file a rewrite reads, before the merge); reads and lookups see expired rows until a
//! compaction rewrites them. A file whose statistics say its oldest time is expired
//! ([`RecordExpire::file_expired`]: `now - expire > min`) is rewritten rather than upgraded, and
//! a full compaction of a bucket that is one max-level run rewrites such files. "Now" is the
//! table's [`crate::io::Env`] clock, read when a rewrite or pick starts.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampSecondType};
use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use arrow_select::filter::filter_record_batch;
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::DataFileMeta;
use tidelake_spec::options::{RECORD_LEVEL_EXPIRE_TIME, RECORD_LEVEL_TIME_FIELD};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, TypeKind};

use crate::error::{Error, Result};

/// BIGINT times from here on are epoch milliseconds (Java's rule).
const MILLIS_FROM: i64 = 1_000_000_000_000;

/// The expiry of a table's records (see the module docs).
#[derive(Debug, Clone)]
pub struct RecordExpire {
    /// The time field's name in the latest schema (rewrites read files into it).
    name: String,
    /// Its id (statistics of files of older schemas are found by it).
    field_id: i32,
    expire_secs: i64,
}

impl RecordExpire {
    /// The expiry `schema`'s options ask for (`None` without `record-level.expire-time`).
    pub fn of(schema: &TableSchema) -> Result<Option<Arc<RecordExpire>>> {
        let opts = schema.options();
        let Some(expire) = opts
            .record_level_expire_time()
            .map_err(|e| Error::from_spec("table options", e))?
        else {
            return Ok(None);
        };
        let name = opts.record_level_time_field().ok_or_else(|| {
            Error::invalid(format!(
                "option '{RECORD_LEVEL_EXPIRE_TIME}' needs '{RECORD_LEVEL_TIME_FIELD}', the \
                 column whose time expires a row"
            ))
        })?;
        let field = schema.field(name).ok_or_else(|| {
            Error::invalid(format!(
                "option '{RECORD_LEVEL_TIME_FIELD}' names '{name}', which is not a column"
            ))
        })?;
        if !matches!(
            field.data_type.kind,
            TypeKind::Int
                | TypeKind::BigInt
                | TypeKind::Timestamp(_)
                | TypeKind::LocalZonedTimestamp(_)
        ) {
            return Err(Error::invalid(format!(
                "option '{RECORD_LEVEL_TIME_FIELD}': column '{name}' must be INT, BIGINT or \
                 TIMESTAMP, not {:?}",
                field.data_type.kind
            )));
        }
        Ok(Some(Arc::new(RecordExpire {
            name: name.to_string(),
            field_id: field.id,
            expire_secs: i64::try_from(expire.as_secs()).unwrap_or(i64::MAX),
        })))
    }

    /// Whether a row of time `secs` is kept at `now_secs`.
    fn keeps(&self, secs: i64, now_secs: i64) -> bool {
        now_secs <= secs.saturating_add(self.expire_secs)
    }

    /// The rows of `batch` (columns named as the latest schema's) that have not expired.
    pub fn retain(&self, batch: RecordBatch, now_secs: i64) -> Result<RecordBatch> {
        let column = batch.column_by_name(&self.name).ok_or_else(|| {
            Error::invalid(format!("record-level expiry: no column '{}'", self.name))
        })?;
        let secs: Vec<Option<i64>> = match column.data_type() {
            ArrowType::Int32 => column
                .as_primitive::<Int32Type>()
                .iter()
                .map(|v| v.map(i64::from))
                .collect(),
            ArrowType::Int64 => column
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.map(bigint_secs))
                .collect(),
            ArrowType::Timestamp(_, tz) => {
                let target = ArrowType::Timestamp(TimeUnit::Second, tz.clone());
                let cast = arrow_cast::cast(column, &target)
                    .map_err(|e| Error::arrow("record-level expiry", e))?;
                cast.as_primitive::<TimestampSecondType>().iter().collect()
            }
            other => {
                return Err(Error::invalid(format!(
                    "record-level expiry: column '{}' is {other}",
                    self.name
                )))
            }
        };
        if secs.iter().flatten().all(|s| self.keeps(*s, now_secs)) {
            return Ok(batch);
        }
        let keep: BooleanArray = secs
            .iter()
            .map(|s| Some(s.is_none_or(|s| self.keeps(s, now_secs))))
            .collect();
        filter_record_batch(&batch, &keep).map_err(|e| Error::arrow("record-level expiry", e))
    }

    /// Whether `file` (written with `file_schema`) holds expired rows by its value statistics:
    /// its minimum time is older than `now_secs` minus the expire time. Files without the
    /// column or its statistics are not.
    pub fn file_expired(
        &self,
        file: &DataFileMeta,
        file_schema: &TableSchema,
        now_secs: i64,
    ) -> bool {
        let fields: Vec<&DataField> = match &file.value_stats_cols {
            None => file_schema.fields.iter().collect(),
            Some(names) => names.iter().filter_map(|n| file_schema.field(n)).collect(),
        };
        let Some(at) = fields.iter().position(|f| f.id == self.field_id) else {
            return false;
        };
        let types: Vec<_> = fields.iter().map(|f| f.data_type.clone()).collect();
        let Ok(mins) = decode_framed(&file.value_stats.min_values, &types) else {
            return false;
        };
        let min = match mins.get(at) {
            Some(Datum::Int(v)) => i64::from(*v),
            Some(Datum::BigInt(v)) => bigint_secs(*v),
            Some(Datum::Timestamp { millis, .. }) => millis / 1000,
            _ => return false,
        };
        now_secs.saturating_sub(self.expire_secs) > min
    }
}

/// A BIGINT time in seconds (epoch milliseconds from [`MILLIS_FROM`] on).
fn bigint_secs(v: i64) -> i64 {
    if v >= MILLIS_FROM {
        v / 1000
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, TimestampMicrosecondArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn expire(secs: i64) -> RecordExpire {
        RecordExpire {
            name: "t".into(),
            field_id: 0,
            expire_secs: secs,
        }
    }

    #[test]
    fn bigint_times_are_seconds_or_millis_and_nulls_stay() {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("t", ArrowType::Int64, true)])),
            vec![Arc::new(Int64Array::from(vec![
                Some(100),
                Some(89),
                None,
                Some(1_000_000_000_000),
                Some(1_000_000_000_000 - 10_001),
            ]))],
        )
        .unwrap();
        // now = 1_000_000_000 s, expire 10 s: 100 and 89 are far older; millis 10^12 is now
        let out = expire(10).retain(batch, 1_000_000_000).unwrap();
        let kept = out.column(0).as_primitive::<Int64Type>();
        assert_eq!(
            kept.iter().collect::<Vec<_>>(),
            [None, Some(1_000_000_000_000)]
        );
    }

    #[test]
    fn the_boundary_is_kept() {
        let micros = |s: i64| s * 1_000_000;
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "t",
                ArrowType::Timestamp(TimeUnit::Microsecond, None),
                true,
            )])),
            vec![Arc::new(TimestampMicrosecondArray::from(vec![
                micros(90),
                micros(89),
                micros(120),
            ]))],
        )
        .unwrap();
        let out = expire(10).retain(batch, 100).unwrap();
        assert_eq!(out.num_rows(), 2);
    }
}
