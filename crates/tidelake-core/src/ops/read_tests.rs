//! The read builders on a local primary-key table: selectors resolved to the snapshot they
//! name, conflicting or missing selectors refused as invalid before any planning, and change
//! ranges by id, timestamp and tag (diff, or by snapshots with
//! `incremental-between-tag-to-snapshot`).

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use serde_json::json;

use super::{Changes, PlannedRead, Read};
use crate::error::ErrorKind;
use crate::io::FileIO;
use crate::maintenance::tags::create_tag;
use crate::scan::predicate::Predicate;
use crate::schema_change::{create_table, TableSpec};
use crate::table::Table;
use crate::test_support::write_and_commit;

fn arrow_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]))
}

/// A primary-key table at `dir` with `options`, and 3 commits: ids 1, 2 (v = 1), then id 2
/// again (v = 2); tags `one` and `three` on snapshots 1 and 3.
async fn table(dir: &std::path::Path, options: &[(&str, &str)]) -> Table {
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    let spec = TableSpec {
        primary_keys: vec!["id".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        comment: None,
    };
    let table = create_table(io, &arrow_schema(), &spec).await.unwrap();
    for (id, v) in [(1, 1), (2, 1), (2, 2)] {
        let batch = RecordBatch::try_new(
            arrow_schema(),
            vec![
                Arc::new(Int64Array::from(vec![id])),
                Arc::new(Int64Array::from(vec![v])),
            ],
        )
        .unwrap();
        write_and_commit(&table, &batch, 0, "u").await;
    }
    create_tag(&table, "one", Some(1), None).await.unwrap();
    create_tag(&table, "three", Some(3), None).await.unwrap();
    table
}

/// The rows read, as strings `[kind:]id=v` sorted.
async fn rows(read: PlannedRead) -> Vec<String> {
    let batches = read.reader.collect(read.plan.splits, None).await.unwrap();
    let mut out = Vec::new();
    for b in batches {
        let col = |name: &str| b.column(b.schema().index_of(name).unwrap()).clone();
        let kinds = b
            .schema()
            .index_of("_row_kind")
            .ok()
            .map(|i| b.column(i).clone());
        for r in 0..b.num_rows() {
            let mut row = String::new();
            if let Some(k) = &kinds {
                let k = k.as_any().downcast_ref::<StringArray>().unwrap();
                row.push_str(&format!("{}:", k.value(r)));
            }
            let id = col("id");
            let id = id.as_any().downcast_ref::<Int64Array>().unwrap().value(r);
            match b.schema().index_of("v") {
                Ok(_) => {
                    let v = col("v");
                    let v = v.as_any().downcast_ref::<Int64Array>().unwrap().value(r);
                    row.push_str(&format!("{id}={v}"));
                }
                Err(_) => row.push_str(&id.to_string()),
            }
            out.push(row);
        }
    }
    out.sort();
    out
}

fn invalid<T>(result: crate::error::Result<T>, says: &str) {
    match result {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
        Ok(_) => panic!("accepted; expected an error saying {says:?}"),
    }
}

#[tokio::test]
async fn reads_select_one_snapshot_columns_and_rows() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[]).await;
    assert_eq!(
        rows(Read::new(&t).plan().await.unwrap()).await,
        ["1=1", "2=2"]
    );
    let at_two = Read::new(&t).snapshot_id(2).plan().await.unwrap();
    assert_eq!(at_two.plan.snapshot.as_ref().unwrap().id, 2);
    assert_eq!(rows(at_two).await, ["1=1", "2=1"]);
    assert_eq!(
        rows(Read::new(&t).tag("one").plan().await.unwrap()).await,
        ["1=1"]
    );
    let second = t.snapshot_manager().snapshot(2).await.unwrap();
    let by_time = Read::new(&t).timestamp_ms(second.time_millis);
    assert_eq!(rows(by_time.plan().await.unwrap()).await, ["1=1", "2=1"]);

    let filter = Predicate::from_json(&json!({"op": "eq", "field": "v", "value": 2})).unwrap();
    let read = Read::new(&t)
        .columns(vec!["id".into()])
        .filter(filter)
        .batch_size(1);
    assert_eq!(rows(read.plan().await.unwrap()).await, ["2"]);
    invalid(
        Read::new(&t).columns(vec!["nope".into()]).plan().await,
        "unknown column 'nope'",
    );
}

#[tokio::test]
async fn more_than_one_snapshot_selector_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[]).await;
    let says = "at most one of snapshot_id, tag and timestamp_ms";
    invalid(Read::new(&t).snapshot_id(1).tag("one").plan().await, says);
    invalid(
        Read::new(&t).snapshot_id(1).timestamp_ms(0).plan().await,
        says,
    );
    invalid(Read::new(&t).tag("one").timestamp_ms(0).plan().await, says);
    // a selector given twice is the last one, as any builder setting
    let twice = Read::new(&t).snapshot_id(3).snapshot_id(1);
    assert_eq!(rows(twice.plan().await.unwrap()).await, ["1=1"]);
}

#[tokio::test]
async fn change_ranges_by_id_timestamp_and_tag() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[]).await;
    let between = Changes::new(&t).between_ids(1, Some(2));
    assert_eq!(rows(between.plan().await.unwrap()).await, ["+I:2=1"]);
    let to_latest = Changes::new(&t).between_ids(0, None);
    assert_eq!(
        rows(to_latest.plan().await.unwrap()).await,
        ["+I:1=1", "+I:2=1", "+I:2=2"]
    );

    let sm = t.snapshot_manager();
    let (first, second) = (sm.snapshot(1).await.unwrap(), sm.snapshot(2).await.unwrap());
    let by_time = Changes::new(&t).between_timestamps(first.time_millis, Some(second.time_millis));
    assert_eq!(rows(by_time.plan().await.unwrap()).await, ["+I:2=1"]);
    // before every snapshot: from the first one on
    let before = Changes::new(&t)
        .start_timestamp_ms(first.time_millis - 1)
        .end_snapshot(1);
    assert_eq!(rows(before.plan().await.unwrap()).await, ["+I:1=1"]);

    // between tags: a diff of the two snapshots' rows by default
    let diff = Changes::new(&t).between_tags("one", "three");
    assert_eq!(rows(diff.plan().await.unwrap()).await, ["+I:2=2"]);
    let delta = Changes::new(&t)
        .between_tags("one", "three")
        .mode("delta".parse().unwrap());
    assert_eq!(
        rows(delta.plan().await.unwrap()).await,
        ["+I:2=1", "+I:2=2"]
    );
    invalid(
        Changes::new(&t).between_tags("three", "one").plan().await,
        "older than the start tag's",
    );
    let missing = Changes::new(&t).between_tags("one", "nope").plan().await;
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn tags_to_snapshot_read_the_snapshots_between() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(
        dir.path(),
        &[("incremental-between-tag-to-snapshot", "true")],
    )
    .await;
    let between = Changes::new(&t).between_tags("one", "three");
    assert_eq!(
        rows(between.plan().await.unwrap()).await,
        ["+I:2=1", "+I:2=2"]
    );
}

#[tokio::test]
async fn conflicting_or_missing_change_ranges_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[]).await;
    let cases: Vec<(Changes, &str)> = vec![
        (
            Changes::new(&t),
            "changes need start_snapshot, start_timestamp or start_tag",
        ),
        (
            Changes::new(&t).end_snapshot(2),
            "changes need start_snapshot",
        ),
        (
            Changes::new(&t).start_tag("one"),
            "give both start_tag and end_tag",
        ),
        (
            Changes::new(&t).start_snapshot(1).end_tag("three"),
            "give both start_tag and end_tag",
        ),
        (
            Changes::new(&t)
                .start_snapshot(1)
                .between_tags("one", "three"),
            "give tags or snapshots/timestamps, not both",
        ),
        (
            Changes::new(&t)
                .between_tags("one", "three")
                .end_timestamp_ms(0),
            "give tags or snapshots/timestamps, not both",
        ),
        (
            Changes::new(&t).start_snapshot(1).start_timestamp_ms(0),
            "give start_snapshot or start_timestamp, not both",
        ),
        (
            Changes::new(&t)
                .start_snapshot(1)
                .end_snapshot(2)
                .end_timestamp_ms(0),
            "give end_snapshot or end_timestamp, not both",
        ),
        (
            Changes::new(&t).start_snapshot(-1),
            "start_snapshot must be >= 0, got -1",
        ),
        (
            Changes::new(&t).between_ids(2, Some(1)),
            "outside the table's snapshots",
        ),
    ];
    for (changes, says) in cases {
        invalid(changes.plan().await, says);
    }
}

#[tokio::test]
async fn split_readers_read_splits_planned_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path(), &[]).await;
    let planned = Changes::new(&t).between_ids(1, None).plan().await.unwrap();
    let schema_id = planned.plan.schema.id;
    let reader = Changes::new(&t)
        .columns(vec!["id".into()])
        .split_reader(schema_id)
        .await
        .unwrap();
    let names: Vec<String> = reader
        .output_schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["_row_kind", "id"]);
    let batches = reader.collect(planned.plan.splits, None).await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);

    let reader = Read::new(&t).split_reader(schema_id).await.unwrap();
    assert_eq!(reader.output_schema().fields().len(), 2);
    assert!(Read::new(&t).split_reader(99).await.is_err());
}
