//! Writes with an injected clock and id generator ([`crate::io::env`]) are deterministic: the
//! same rows committed the same way give byte-identical tables, and the stored times are the
//! clock's.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::*;
use crate::io::env::{Env, ManualClock, SequentialIds};
use crate::schema_change::{create_table as create, TableSpec};
use crate::test_support::{files_under, write_and_commit};

const T0: i64 = 1_750_000_000_000;

/// A primary-key table with 2 buckets partitioned by `dt`, at `dir`, written with `clock`
/// and fresh [`SequentialIds`].
async fn pk_table(dir: &Path, clock: Arc<ManualClock>) -> Table {
    let env = Env::new(clock, Arc::new(SequentialIds::default()));
    let io = FileIO::open(dir.to_str().unwrap()).unwrap().with_env(env);
    let schema = Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("dt", ArrowType::Utf8, false),
        Field::new("v", ArrowType::Int64, true),
    ]);
    let spec = TableSpec {
        primary_keys: vec!["id".into(), "dt".into()],
        partition_keys: vec!["dt".into()],
        bucket: Some(2),
        options: vec![],
        comment: None,
    };
    create(io, &schema, &spec).await.unwrap()
}

/// Commit rows `(id, dt, v)`; returns the snapshot id.
async fn commit(table: &Table, rows: &[(i64, &str, i64)]) -> i64 {
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", ArrowType::Int64, false),
            Field::new("dt", ArrowType::Utf8, false),
            Field::new("v", ArrowType::Int64, true),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ],
    )
    .unwrap();
    let ids = write_and_commit(table, &batch, 0, "deterministic").await;
    *ids.last().expect("a snapshot")
}

/// Every file under `dir` (relative path → bytes).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect()
}

/// Two commits, the clock advancing in between.
async fn two_commits(dir: &Path) -> Table {
    let clock = Arc::new(ManualClock::new(T0));
    let table = pk_table(dir, clock.clone()).await;
    let rows: Vec<(i64, &str, i64)> = (0..40)
        .map(|i| (i, if i % 3 == 0 { "a" } else { "b" }, i * 10))
        .collect();
    commit(&table, &rows).await;
    clock.set(T0 + 1000);
    commit(&table, &[(1, "b", -1), (100, "c", 7)]).await;
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_commits_with_the_same_clock_and_ids_give_identical_files() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    two_commits(a.path()).await;
    two_commits(b.path()).await;
    let (a, b) = (tree(a.path()), tree(b.path()));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same file names"
    );
    for dir in ["schema/", "snapshot/snapshot-", "manifest/", "dt=a/bucket-"] {
        assert!(a.keys().any(|k| k.starts_with(dir)), "some {dir}* file");
    }
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_times_come_from_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let table = two_commits(dir.path()).await;
    assert_eq!(snapshot(&table, 1).await.time_millis, T0);
    assert_eq!(snapshot(&table, 2).await.time_millis, T0 + 1000);
    assert_eq!(table.schema().time_millis, T0);
    let latest = latest(&table).await;
    let files = entries(&table, &list(&table, &latest.delta_manifest_list).await).await;
    assert!(!files.is_empty());
    for e in files {
        assert_eq!(
            e.file.creation_time,
            Some(T0 + 1000),
            "{}",
            e.file.file_name
        );
    }
    // The ids are the generator's: the first one names the first manifest writer's files.
    assert!(latest
        .uuid
        .is_some_and(|u| u.starts_with("00000000-0000-0000-0000-")));
}
