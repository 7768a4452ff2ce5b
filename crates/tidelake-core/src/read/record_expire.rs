//! Record-level expiry (Java `RecordLevelExpire`, primary-key tables with
//! `record-level.expire-time` and `record-level.time-field`): compaction drops the rows whose
//! time is older than now minus the expire time. It lives with the reads (data layer) because
//! the reads of a rewrite apply it and the first write checks its options; compaction, above,
//! decides which files to rewrite.
//!
//! Rules, as Java 1.3.1:
//! - a row's time in seconds: INT as is; BIGINT as is below 10^12, else milliseconds / 1000;
//!   TIMESTAMP / TIMESTAMP_LTZ its epoch milliseconds / 1000 (truncated). A row is kept when
//!   its time is null or `now <= time + expire` (seconds);
//! - rows are dropped as each data file a compaction rewrite reads is opened, before any merge
//!   ([`crate::read::split_read::ReadContext::with_record_expire`], "now" read at that open),
//!   and the rows a lookup compaction finds below its output are not found when expired (not
//!   for first-row tables, whose lookup reads keys only); plain reads and the merges of reads
//!   still see expired rows until a compaction rewrites them;
//! - a file whose value statistics say its oldest time is expired ([`RecordExpire::file_expired`]:
//!   `now - expire > min`, statistics mapped into the latest schema by field id; no statistics
//!   or no column: not expired) is rewritten rather than upgraded, at its own level too, and a
//!   full compaction of a bucket that is one max-level run rewrites such files one by one;
//! - append tables ignore the options (Java builds the expiry only in its key-value writer).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use arrow_select::filter::filter_record_batch;
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::DataFileMeta;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataField;

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
    /// The expiry `schema`'s options ask for (`None` without `record-level.expire-time`);
    /// [`Error::Invalid`] naming the option when the time field is missing, not a column or
    /// of another type (Java refuses to start a key-value writer then).
    pub fn of(schema: &TableSchema) -> Result<Option<Arc<RecordExpire>>> {
        let Some(expiry) = schema
            .options()
            .record_level_expiry()
            .map_err(|e| Error::from_spec("table options", e))?
        else {
            return Ok(None);
        };
        let name = expiry.time_field;
        let field = schema
            .record_time_field(&name)
            .map_err(|e| Error::from_spec("table options", e))?;
        Ok(Some(Arc::new(RecordExpire {
            field_id: field.id,
            name,
            expire_secs: expiry.expire_secs,
        })))
    }

    /// Whether a row of time `secs` (null: never expires) is kept at `now_secs`.
    fn keeps(&self, secs: Option<i64>, now_secs: i64) -> bool {
        secs.is_none_or(|s| now_secs <= s.saturating_add(self.expire_secs))
    }

    fn column<'a>(&self, batch: &'a RecordBatch) -> Result<&'a ArrayRef> {
        batch.column_by_name(&self.name).ok_or_else(|| {
            Error::Internal(format!(
                "record-level expiry: rows without column '{}'",
                self.name
            ))
        })
    }

    /// The rows of `batch` (columns named as the latest schema's) not expired at `now_secs`.
    pub fn retain(&self, batch: RecordBatch, now_secs: i64) -> Result<RecordBatch> {
        let column = self.column(&batch)?;
        let keep = (0..batch.num_rows())
            .map(|i| Ok(Some(self.keeps(time_secs(column, i)?, now_secs))))
            .collect::<Result<BooleanArray>>()?;
        if keep.true_count() == batch.num_rows() {
            return Ok(batch);
        }
        filter_record_batch(&batch, &keep).map_err(|e| Error::arrow("record-level expiry", e))
    }

    /// Whether row `row` of `batch` (as for [`Self::retain`]) has expired at `now_secs`.
    pub fn row_expired(&self, batch: &RecordBatch, row: usize, now_secs: i64) -> Result<bool> {
        Ok(!self.keeps(time_secs(self.column(batch)?, row)?, now_secs))
    }

    /// Whether `file` (written with `file_schema`) holds expired rows by its value statistics:
    /// its minimum time is older than `now_secs` minus the expire time (Java `isExpireFile`).
    /// Files without the column or its minimum are not.
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

/// The time of row `i` of `column` in seconds (see the module docs); `None` when null.
fn time_secs(column: &ArrayRef, i: usize) -> Result<Option<i64>> {
    if column.is_null(i) {
        return Ok(None);
    }
    // Java: the timestamp's epoch milliseconds (floored), then / 1000 (truncated)
    let millis_secs = |millis: i64| millis / 1000;
    Ok(Some(match column.data_type() {
        ArrowType::Int32 => i64::from(column.as_primitive::<Int32Type>().value(i)),
        ArrowType::Int64 => bigint_secs(column.as_primitive::<Int64Type>().value(i)),
        ArrowType::Timestamp(TimeUnit::Second, _) => {
            column.as_primitive::<TimestampSecondType>().value(i)
        }
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
            millis_secs(column.as_primitive::<TimestampMillisecondType>().value(i))
        }
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => millis_secs(
            column
                .as_primitive::<TimestampMicrosecondType>()
                .value(i)
                .div_euclid(1_000),
        ),
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => millis_secs(
            column
                .as_primitive::<TimestampNanosecondType>()
                .value(i)
                .div_euclid(1_000_000),
        ),
        other => {
            return Err(Error::Internal(format!(
                "record-level expiry: a time column of arrow type {other}"
            )))
        }
    }))
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int32Array, Int64Array, TimestampMicrosecondArray};
    use arrow_schema::{Field, Schema};
    use tidelake_spec::binary_row::encode_framed;
    use tidelake_spec::options::{Options, RECORD_LEVEL_EXPIRE_TIME, RECORD_LEVEL_TIME_FIELD};
    use tidelake_spec::types::{DataType, TypeKind};

    use super::*;
    use crate::commit::tests::pk_file;

    fn one_column(array: ArrayRef) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new(
                "t",
                array.data_type().clone(),
                true,
            )])),
            vec![array],
        )
        .unwrap()
    }

    fn expire(secs: i64) -> RecordExpire {
        RecordExpire {
            name: "t".into(),
            field_id: 1,
            expire_secs: secs,
        }
    }

    #[test]
    fn bigint_times_are_seconds_or_millis_and_nulls_stay() {
        let batch = one_column(Arc::new(Int64Array::from(vec![
            Some(100),
            Some(89),
            None,
            Some(1_000_000_000_000),
            Some(1_000_000_000_000 - 10_001),
        ])));
        // now = 10^9 s, expire 10 s: 100 and 89 (seconds) are far older; 10^12 ms is now;
        // 10^12 - 10_001 is below 10^12, so seconds, far in the future
        let out = expire(10).retain(batch, 1_000_000_000).unwrap();
        let kept = out.column(0).as_primitive::<Int64Type>();
        assert_eq!(
            kept.iter().collect::<Vec<_>>(),
            [
                None,
                Some(1_000_000_000_000),
                Some(1_000_000_000_000 - 10_001)
            ]
        );
    }

    #[test]
    fn the_boundary_is_kept() {
        let e = expire(10);
        let ints = one_column(Arc::new(Int32Array::from(vec![90, 89, 120])));
        assert_eq!(e.retain(ints, 100).unwrap().num_rows(), 2);
        let micros = |s: i64| s * 1_000_000;
        let ts = one_column(Arc::new(TimestampMicrosecondArray::from(vec![
            micros(90),
            micros(89),
            micros(120),
            micros(90) - 1,
        ])));
        assert!(!e.row_expired(&ts, 0, 100).unwrap());
        assert!(e.row_expired(&ts, 1, 100).unwrap());
        assert!(e.row_expired(&ts, 3, 100).unwrap());
        assert_eq!(e.retain(ts, 100).unwrap().num_rows(), 2);
    }

    #[test]
    fn files_are_picked_by_their_minimum_time_in_their_own_schema() {
        // the file's schema had "t" (id 1) after a dropped column; the latest is "t" alone
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(5, "old", DataType::new(TypeKind::Int)),
            DataField::new(1, "t", DataType::new(TypeKind::Int)),
        ];
        let options: Options = [
            (RECORD_LEVEL_EXPIRE_TIME.to_string(), "10 s".to_string()),
            (RECORD_LEVEL_TIME_FIELD.to_string(), "t".to_string()),
        ]
        .into_iter()
        .collect();
        let schema = TableSchema::new(0, fields, vec![], vec!["id".into()], options).unwrap();
        let e = RecordExpire::of(&schema).unwrap().unwrap();
        let types: Vec<DataType> = schema.fields.iter().map(|f| f.data_type.clone()).collect();
        let file = |min_t: Option<i32>, cols: Option<Vec<String>>| {
            let mut meta = pk_file("f", 5, 1, 1);
            let (mins, types): (Vec<Datum>, Vec<DataType>) = match &cols {
                None => (
                    vec![
                        Datum::BigInt(1),
                        Datum::Int(0),
                        min_t.map_or(Datum::Null, Datum::Int),
                    ],
                    types.clone(),
                ),
                Some(_) => (
                    vec![min_t.map_or(Datum::Null, Datum::Int)],
                    vec![types[2].clone()],
                ),
            };
            meta.value_stats.min_values = encode_framed(&mins, &types).unwrap();
            meta.value_stats_cols = cols;
            meta
        };
        // now 100: expired below 90 (strictly: the boundary 90 is kept)
        assert!(e.file_expired(&file(Some(89), None), &schema, 100));
        assert!(!e.file_expired(&file(Some(90), None), &schema, 100));
        assert!(!e.file_expired(&file(None, None), &schema, 100));
        let dense = Some(vec!["t".to_string()]);
        assert!(e.file_expired(&file(Some(0), dense.clone()), &schema, 100));
        assert!(!e.file_expired(&file(Some(95), dense), &schema, 100));
        // no statistics for the column: not expired
        assert!(!e.file_expired(&file(Some(0), Some(vec![])), &schema, 100));
    }

    #[test]
    fn a_bad_time_field_names_the_option() {
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(1, "t", DataType::new(TypeKind::Int)),
        ];
        let schema = |pairs: &[(&str, &str)]| {
            let options: Options = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            TableSchema::new(0, fields.clone(), vec![], vec!["id".into()], options).unwrap()
        };
        assert!(RecordExpire::of(&schema(&[])).unwrap().is_none());
        let missing = RecordExpire::of(&schema(&[(RECORD_LEVEL_EXPIRE_TIME, "1 d")])).unwrap_err();
        assert!(
            missing.to_string().contains(RECORD_LEVEL_TIME_FIELD),
            "{missing}"
        );
    }
}
