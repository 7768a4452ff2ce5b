//! System tables as Arrow (Java `org.apache.paimon.table.system.*Table`): `snapshots`,
//! `schemas`, `options`, `tags`, `consumers`, `branches`, `aggregation_fields`, `statistics`
//! here; `files`, `file_key_ranges`, `manifests`, `partitions`, `buckets`, `table_indexes` in
//! [`super::file_tables`]; `audit_log` in [`super::audit_log`]; `ro` and `binlog` in
//! [`super::data_tables`].
//!
//! Column names, order and nullability follow Java's. Java `TIMESTAMP(3)` columns hold local
//! wall-clock times (`LocalDateTime` in the JVM's zone); here they are Arrow
//! `Timestamp(ms, no zone)` holding the same local wall-clock time. Java strings built from
//! rows follow Java's casts (`{v1, v2}` for rows, `[k1, k2]` for keys). A branch's
//! `create_time` is when its first schema file was written (Java: its directory's modification
//! time, which object stores do not have).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use serde_json::Value;

use crate::branch::{all_branch_ios, MAIN_BRANCH};
use crate::error::{Error, Result};
use crate::io::local_wall_ms;
use crate::maintenance::consumers::consumers;
use crate::maintenance::refs::STATISTICS_DIR;
use crate::maintenance::tags::local_date_time_millis;
use crate::maintenance::{audit_log, data_tables, file_tables};
use crate::table::{Table, SCHEMA_DIR};

/// Names of the system tables [`system_table`] serves.
pub const SYSTEM_TABLES: &[&str] = &[
    "snapshots",
    "schemas",
    "options",
    "files",
    "file_key_ranges",
    "manifests",
    "partitions",
    "buckets",
    "tags",
    "consumers",
    "branches",
    "audit_log",
    "ro",
    "binlog",
    "aggregation_fields",
    "statistics",
    "table_indexes",
];

/// A system table's rows.
#[derive(Debug, Clone)]
pub struct SystemTable {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

/// Read system table `name` of `table` (as of its latest snapshot).
pub async fn system_table(table: &Table, name: &str) -> Result<SystemTable> {
    match name {
        "snapshots" => snapshots(table).await,
        "schemas" => schemas(table).await,
        "options" => options(table),
        "tags" => tags(table).await,
        "consumers" => consumer_table(table).await,
        "branches" => branches(table).await,
        "files" => file_tables::files(table).await,
        "file_key_ranges" => file_tables::file_key_ranges(table).await,
        "manifests" => file_tables::manifests(table).await,
        "partitions" => file_tables::partitions(table).await,
        "buckets" => file_tables::buckets(table).await,
        "audit_log" => audit_log::audit_log(table).await,
        "ro" => data_tables::read_optimized(table).await,
        "binlog" => data_tables::binlog(table).await,
        "aggregation_fields" => aggregation_fields(table),
        "statistics" => statistics(table).await,
        "table_indexes" => file_tables::table_indexes(table).await,
        other => Err(Error::not_found(
            "system table",
            format!("'{other}'; system tables are: {}", SYSTEM_TABLES.join(", ")),
        )),
    }
}

/// One column under construction.
pub(crate) struct Column {
    field: Field,
    array: ArrayRef,
}

pub(crate) fn strings(name: &str, nullable: bool, values: Vec<Option<String>>) -> Column {
    Column {
        field: Field::new(name, ArrowType::Utf8, nullable),
        array: Arc::new(StringArray::from(values)),
    }
}

pub(crate) fn longs(name: &str, nullable: bool, values: Vec<Option<i64>>) -> Column {
    Column {
        field: Field::new(name, ArrowType::Int64, nullable),
        array: Arc::new(Int64Array::from(values)),
    }
}

pub(crate) fn ints(name: &str, nullable: bool, values: Vec<Option<i32>>) -> Column {
    Column {
        field: Field::new(name, ArrowType::Int32, nullable),
        array: Arc::new(Int32Array::from(values)),
    }
}

/// Local wall-clock timestamps (milliseconds).
pub(crate) fn timestamps(name: &str, nullable: bool, values: Vec<Option<i64>>) -> Column {
    Column {
        field: Field::new(
            name,
            ArrowType::Timestamp(TimeUnit::Millisecond, None),
            nullable,
        ),
        array: Arc::new(TimestampMillisecondArray::from(values)),
    }
}

impl Column {
    pub(crate) fn new(field: Field, array: ArrayRef) -> Column {
        Column { field, array }
    }

    pub(crate) fn name(&self) -> &str {
        self.field.name()
    }
}

pub(crate) fn booleans(name: &str, nullable: bool, values: Vec<Option<bool>>) -> Column {
    Column {
        field: Field::new(name, ArrowType::Boolean, nullable),
        array: Arc::new(BooleanArray::from(values)),
    }
}

/// One batch of `columns`.
pub(crate) fn table_of(columns: Vec<Column>) -> Result<SystemTable> {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
        columns.into_iter().map(|c| (c.field, c.array)).unzip();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays)
        .map_err(|e| Error::arrow("building a system table", e))?;
    Ok(SystemTable {
        schema,
        batches: vec![batch],
    })
}

/// Java `Duration.toString()`: `PT8H6M12.345S`, `PT0S`.
pub(crate) fn java_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (hours, minutes, seconds, nanos) =
        (secs / 3600, (secs / 60) % 60, secs % 60, d.subsec_nanos());
    let mut out = String::from("PT");
    if hours > 0 {
        out.push_str(&format!("{hours}H"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}M"));
    }
    if seconds > 0 || nanos > 0 || out.len() == 2 {
        out.push_str(&seconds.to_string());
        if nanos > 0 {
            let fraction = format!("{nanos:09}");
            out.push('.');
            out.push_str(fraction.trim_end_matches('0'));
        }
        out.push('S');
    }
    out
}

async fn snapshots(table: &Table) -> Result<SystemTable> {
    let all = table.snapshot_manager().all().await?;
    let text = |f: &dyn Fn(&tidelake_spec::snapshot::Snapshot) -> Option<String>| {
        all.iter().map(f).collect()
    };
    let long =
        |f: &dyn Fn(&tidelake_spec::snapshot::Snapshot) -> Option<i64>| all.iter().map(f).collect();
    table_of(vec![
        longs("snapshot_id", false, long(&|s| Some(s.id))),
        longs("schema_id", false, long(&|s| Some(s.schema_id))),
        strings("commit_user", false, text(&|s| Some(s.commit_user.clone()))),
        longs(
            "commit_identifier",
            false,
            long(&|s| Some(s.commit_identifier)),
        ),
        strings(
            "commit_kind",
            false,
            text(&|s| Some(s.commit_kind.to_string())),
        ),
        timestamps(
            "commit_time",
            false,
            long(&|s| local_wall_ms(s.time_millis)),
        ),
        strings(
            "base_manifest_list",
            false,
            text(&|s| Some(s.base_manifest_list.clone())),
        ),
        strings(
            "delta_manifest_list",
            false,
            text(&|s| Some(s.delta_manifest_list.clone())),
        ),
        strings(
            "changelog_manifest_list",
            true,
            text(&|s| s.changelog_manifest_list.clone()),
        ),
        longs(
            "total_record_count",
            true,
            long(&|s| Some(s.total_record_count)),
        ),
        longs(
            "delta_record_count",
            true,
            long(&|s| Some(s.delta_record_count)),
        ),
        longs(
            "changelog_record_count",
            true,
            long(&|s| s.changelog_record_count),
        ),
        longs("watermark", true, long(&|s| s.watermark)),
        longs("next_row_id", true, long(&|s| s.next_row_id)),
        strings("operation", true, text(&|s| s.operation.clone())),
        strings("writer_version", true, text(&|s| s.writer_version.clone())),
    ])
}

async fn schemas(table: &Table) -> Result<SystemTable> {
    let all = table.schemas().await?;
    let mut json = Vec::with_capacity(all.len());
    for s in &all {
        let value: Value = serde_json::from_str(&s.to_json())
            .map_err(|e| Error::corrupt(format!("schema-{}", s.id), e))?;
        json.push(value);
    }
    let member = |key: &str| -> Vec<Option<String>> {
        json.iter()
            .map(|v| v.get(key).map(Value::to_string))
            .collect()
    };
    table_of(vec![
        longs("schema_id", false, all.iter().map(|s| Some(s.id)).collect()),
        strings("fields", false, member("fields")),
        strings("partition_keys", false, member("partitionKeys")),
        strings("primary_keys", false, member("primaryKeys")),
        strings("options", false, member("options")),
        strings(
            "comment",
            true,
            all.iter().map(|s| s.comment.clone()).collect(),
        ),
        timestamps(
            "update_time",
            false,
            all.iter().map(|s| local_wall_ms(s.time_millis)).collect(),
        ),
    ])
}

fn options(table: &Table) -> Result<SystemTable> {
    let opts = table.schema().options();
    table_of(vec![
        strings(
            "key",
            false,
            opts.iter().map(|(k, _)| Some(k.to_string())).collect(),
        ),
        strings(
            "value",
            false,
            opts.iter().map(|(_, v)| Some(v.to_string())).collect(),
        ),
    ])
}

/// Java `BranchesTable`: every branch but `main`, by name.
async fn branches(table: &Table) -> Result<SystemTable> {
    let mut names = Vec::new();
    let mut created = Vec::new();
    for (name, io) in all_branch_ios(table.io())
        .await?
        .into_iter()
        .filter(|(n, _)| n != MAIN_BRANCH)
    {
        let first = io
            .list_dir(SCHEMA_DIR)
            .await?
            .iter()
            .map(|f| f.last_modified_ms)
            .min();
        names.push(Some(name));
        created.push(first.and_then(local_wall_ms));
    }
    table_of(vec![
        strings("branch_name", false, names),
        timestamps("create_time", false, created),
    ])
}

async fn tags(table: &Table) -> Result<SystemTable> {
    let all = table.snapshot_manager().tags().await?;
    table_of(vec![
        strings(
            "tag_name",
            false,
            all.iter().map(|(n, _)| Some(n.clone())).collect(),
        ),
        longs(
            "snapshot_id",
            false,
            all.iter().map(|(_, t)| Some(t.snapshot.id)).collect(),
        ),
        longs(
            "schema_id",
            false,
            all.iter()
                .map(|(_, t)| Some(t.snapshot.schema_id))
                .collect(),
        ),
        timestamps(
            "commit_time",
            false,
            all.iter()
                .map(|(_, t)| local_wall_ms(t.snapshot.time_millis))
                .collect(),
        ),
        longs(
            "record_count",
            true,
            all.iter()
                .map(|(_, t)| Some(t.snapshot.total_record_count))
                .collect(),
        ),
        timestamps(
            "create_time",
            true,
            all.iter()
                .map(|(_, t)| t.tag_create_time.as_ref().and_then(local_date_time_millis))
                .collect(),
        ),
        strings(
            "time_retained",
            true,
            all.iter()
                .map(|(_, t)| t.tag_time_retained.map(java_duration))
                .collect(),
        ),
    ])
}

/// Java `AggregationFieldsTable`: per column of the latest schema its type, and the values
/// (`function`) and keys (`function_options`) of its `fields.<column>.*` options, printed as
/// Java prints a list (`[sum]`, `[]`).
fn aggregation_fields(table: &Table) -> Result<SystemTable> {
    let schema = table.schema();
    let of_field = |name: &str, pick: &dyn Fn(&str, &str) -> String| -> Option<String> {
        let picked: Vec<String> = schema
            .options()
            .iter()
            .filter(|(k, _)| {
                let parts: Vec<&str> = k.split('.').collect();
                parts.len() > 2 && parts[0] == "fields" && parts[1] == name
            })
            .map(|(k, v)| pick(k, v))
            .collect();
        Some(format!("[{}]", picked.join(", ")))
    };
    let fields = &schema.fields;
    table_of(vec![
        strings(
            "field_name",
            false,
            fields.iter().map(|f| Some(f.name.clone())).collect(),
        ),
        strings(
            "field_type",
            false,
            fields
                .iter()
                .map(|f| Some(f.data_type.to_string()))
                .collect(),
        ),
        strings(
            "function",
            true,
            fields
                .iter()
                .map(|f| of_field(&f.name, &|_, v| v.to_string()))
                .collect(),
        ),
        strings(
            "function_options",
            true,
            fields
                .iter()
                .map(|f| of_field(&f.name, &|k, _| k.to_string()))
                .collect(),
        ),
        strings(
            "comment",
            true,
            fields.iter().map(|f| f.description.clone()).collect(),
        ),
    ])
}

/// Java `StatisticTable`: the statistics file of the latest snapshot (`ANALYZE`), one row, or
/// none when that snapshot has none; `colstat` is its `colStats` as Java prints JSON.
async fn statistics(table: &Table) -> Result<SystemTable> {
    let latest = table.snapshot_manager().latest().await?;
    let stats = match latest.and_then(|s| s.statistics) {
        Some(name) => {
            let path = format!("{STATISTICS_DIR}/{name}");
            let bytes = table.io().read(&path).await?;
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|e| Error::corrupt(table.io().display(&path), e))?;
            vec![value]
        }
        None => Vec::new(),
    };
    let long = |key: &str| {
        stats
            .iter()
            .map(|v| v.get(key).and_then(Value::as_i64))
            .collect()
    };
    table_of(vec![
        longs("snapshot_id", false, long("snapshotId")),
        longs("schema_id", false, long("schemaId")),
        longs("mergedRecordCount", true, long("mergedRecordCount")),
        longs("mergedRecordSize", true, long("mergedRecordSize")),
        strings(
            "colstat",
            true,
            stats
                .iter()
                .map(|v| v.get("colStats").map(jackson_pretty))
                .collect(),
        ),
    ])
}

/// `value` as Jackson's default pretty printer writes it (Java `JsonSerdeUtil.toJson`):
/// two-space indents, `"key" : value`, `{ }` for an empty object, arrays on one line.
pub(crate) fn jackson_pretty(value: &Value) -> String {
    fn write(value: &Value, indent: usize, out: &mut String) {
        match value {
            Value::Object(members) if members.is_empty() => out.push_str("{ }"),
            Value::Object(members) => {
                out.push('{');
                for (i, (key, member)) in members.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&"  ".repeat(indent + 1));
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push_str(" : ");
                    write(member, indent + 1, out);
                }
                out.push('\n');
                out.push_str(&"  ".repeat(indent));
                out.push('}');
            }
            Value::Array(items) if items.is_empty() => out.push_str("[ ]"),
            Value::Array(items) => {
                out.push_str("[ ");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write(item, indent, out);
                }
                out.push_str(" ]");
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, 0, &mut out);
    out
}

async fn consumer_table(table: &Table) -> Result<SystemTable> {
    let all = consumers(table.branch_io()).await?;
    table_of(vec![
        strings(
            "consumer_id",
            false,
            all.iter().map(|(id, _)| Some(id.clone())).collect(),
        ),
        longs(
            "next_snapshot_id",
            false,
            all.iter().map(|(_, n)| Some(*n)).collect(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_prints_like_jackson() {
        let value: Value =
            serde_json::from_str(r#"{"a": {"colId": 0, "min": "1", "e": {}}, "b": [1, 2]}"#)
                .unwrap();
        assert_eq!(
            jackson_pretty(&value),
            "{\n  \"a\" : {\n    \"colId\" : 0,\n    \"min\" : \"1\",\n    \"e\" : { }\n  },\n  \"b\" : [ 1, 2 ]\n}"
        );
        assert_eq!(jackson_pretty(&Value::Object(Default::default())), "{ }");
    }

    #[test]
    fn durations_print_like_java() {
        assert_eq!(java_duration(Duration::from_secs(0)), "PT0S");
        assert_eq!(java_duration(Duration::from_secs(86400)), "PT24H");
        assert_eq!(
            java_duration(Duration::from_millis(3_723_500)),
            "PT1H2M3.5S"
        );
        assert_eq!(java_duration(Duration::from_secs(60)), "PT1M");
    }
}
