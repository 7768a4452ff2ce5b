//! Readers outpaced by expiration: a snapshot found, then removed (with its manifest lists)
//! before the reader reads its file or its lists. The latest snapshot found and gone before
//! it is read gives the new latest (what commits and scans start from); a cross-partition
//! writer moving its base past its own commit stops there (its commit is refused as a
//! conflict); a plan of changes fails naming the expired snapshot. None of them is taken for
//! a damaged table.
//!
//! The races are run for real: the reader's storage answers its read of the snapshot file
//! 1.5 s late (test-only fault injection), and commits and an expiration on another handle run
//! meanwhile.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tidelake_core::api::commit::FileStoreCommit;
use tidelake_core::api::compact::{CompactRequest, Compactor};
use tidelake_core::api::maintenance::{expire_snapshots, ExpireConfig};
use tidelake_core::api::scan::plan_changes;
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{ErrorKind, FileIO, StorageOptions, Table};
use tidelake_core::test_support::snapshot_ids;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("dt", DataType::Utf8, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn row(id: i64, dt: &str, v: i64) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(vec![id])),
            Arc::new(StringArray::from(vec![dt])),
            Arc::new(Int64Array::from(vec![v])),
        ],
    )
    .unwrap()
}

async fn commit(
    table: &Table,
    write: &mut tidelake_core::api::write::TableWrite,
    ident: i64,
) -> tidelake_core::api::Result<Vec<i64>> {
    let messages = write.prepare_commit().await?;
    FileStoreCommit::new(table.clone(), "test")?
        .commit(messages, ident, &[])
        .await
}

/// A one-row commit by a writer of its own (key: the snapshot id it creates).
async fn commit_rows(table: &Table) -> i64 {
    let next = table
        .snapshot_manager()
        .latest_id()
        .await
        .unwrap()
        .unwrap_or(0)
        + 1;
    let mut write = table.new_write().build().await.unwrap();
    write
        .write(&row(next, "a", next), RowKinds::Fixed(0))
        .await
        .unwrap();
    let ids = commit(table, &mut write, next).await.unwrap();
    assert_eq!(ids, vec![next]);
    next
}

/// A new table of [`schema`] at `location` with these keys and buckets, maintenance off
/// (`write-only`: only the tests compact and expire).
async fn new_table(location: &str, primary: &[&str], partition: &[&str], bucket: i32) -> Table {
    let names = |cols: &[&str]| cols.iter().map(|c| c.to_string()).collect();
    let spec = TableSpec {
        primary_keys: names(primary),
        partition_keys: names(partition),
        bucket: Some(bucket),
        options: vec![("write-only".into(), "true".into())],
        comment: None,
    };
    create_table(FileIO::open(location).unwrap(), &schema(), &spec)
        .await
        .unwrap();
    Table::open_io(FileIO::open(location).unwrap())
        .await
        .unwrap()
}

/// A table of [`schema`] keyed by `id` and `dt` in one bucket at `location`, maintenance off,
/// with `commits` one-row commits (snapshots `1..=commits`).
async fn keyed_table(location: &str, commits: i64) -> Table {
    let table = new_table(location, &["id", "dt"], &[], 1).await;
    for _ in 0..commits {
        commit_rows(&table).await;
    }
    table
}

/// The table at `location`, its storage answering its first read of snapshot `id` 1.5 s late:
/// `when` "after" the file was opened (its content as it was), or "before" (as it is then).
async fn slow_to_read_snapshot(location: &str, id: i64, when: &str) -> Table {
    let path = format!("snapshot/snapshot-{id}");
    let slow: StorageOptions = [
        ("op", "get"),
        ("path", path.as_str()),
        ("when", when),
        ("action", "delay:1500"),
        ("nth", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (format!("tidelake.fault.{k}"), v.to_string()))
    .collect();
    Table::open_io(FileIO::open_with(location, &slow).unwrap())
        .await
        .unwrap()
}

/// 300 ms from now (while a slow read waits), commit `commits` more rows, then expire all
/// snapshots but the latest: how many expired.
fn expire_soon(table: &Table, commits: i64) -> tokio::task::JoinHandle<u64> {
    let table = table.clone();
    tokio::spawn(async move {
        tidelake_core::io::Env::default()
            .sleep(Duration::from_millis(300))
            .await;
        for _ in 0..commits {
            commit_rows(&table).await;
        }
        let keep_one = ExpireConfig {
            retain_min: 1,
            retain_max: 1,
            older_than_ms: i64::MAX,
            max_deletes: i64::MAX,
            changelog: None,
        };
        expire_snapshots(&table, &keep_one).await.unwrap().snapshots
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_commit_expiring_while_its_delta_is_read_is_a_conflict_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let plain = new_table(location, &["id"], &["dt"], -1).await;
    let mut other = plain.new_write().build().await.unwrap();
    other
        .write(&row(1, "a", 1), RowKinds::Fixed(0))
        .await
        .unwrap();
    assert_eq!(commit(&plain, &mut other, 1).await.unwrap(), vec![1]);

    // The writer: its storage answers its first read of snapshot 2 1.5 s late.
    let slow_table = slow_to_read_snapshot(location, 2, "after").await;
    let mut writer = slow_table.new_write().build().await.unwrap();
    writer
        .write(&row(2, "a", 2), RowKinds::Fixed(0))
        .await
        .unwrap();
    assert_eq!(commit(&plain, &mut writer, 2).await.unwrap(), vec![2]);
    Compactor::new(plain.clone())
        .unwrap()
        .compact(&CompactRequest {
            full: true,
            ..CompactRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(snapshot_ids(dir.path()), vec![1, 2, 3]);

    // Writing again moves the writer's base past snapshot 2 (its own) and 3 (a compaction);
    // while it waits for snapshot 2's file, expiration removes snapshots 1 and 2.
    let expire = expire_soon(&plain, 0);
    let written = writer.write(&row(1, "b", 3), RowKinds::Fixed(0)).await;
    assert_eq!(expire.await.unwrap(), 2);
    assert_eq!(snapshot_ids(dir.path()), vec![3]);
    written.expect("an own commit that expired meanwhile is not a damaged table");

    // Key 1's move from `a` to `b` was routed without knowing whether snapshot 2 was this
    // writer's alone: refused, and the table keeps both keys once.
    let refused = commit(&plain, &mut writer, 3).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::CommitConflict, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("expired before it could be checked"),
        "{refused}"
    );
    assert_eq!(snapshot_ids(dir.path()), vec![3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_plan_whose_snapshot_expires_while_its_delta_is_read_names_the_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let plain = keyed_table(location, 3).await;
    let slow_table = slow_to_read_snapshot(location, 2, "after").await;
    let expire = expire_soon(&plain, 0);
    let planned = plan_changes(&slow_table, 1, None, None).await;
    assert_eq!(expire.await.unwrap(), 2);
    let failed = planned.expect_err("snapshot 2 expired while it was read");
    assert_eq!(failed.kind(), ErrorKind::SnapshotExpired, "{failed}");
    assert!(
        failed.to_string().contains("snapshot 2 has expired"),
        "{failed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_latest_snapshot_expiring_before_it_is_read_gives_the_new_latest() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let plain = keyed_table(location, 3).await;
    // snapshot 3 is the latest when it is found; before its file is read, two more commits
    // land and expiration removes everything but the newest (what commits and scans start from)
    let slow_table = slow_to_read_snapshot(location, 3, "before").await;
    let expire = expire_soon(&plain, 2);
    let latest = slow_table.snapshot_manager().latest().await;
    assert_eq!(expire.await.unwrap(), 4);
    assert_eq!(snapshot_ids(dir.path()), vec![5]);
    assert_eq!(
        latest.expect("the new latest is read").map(|s| s.id),
        Some(5)
    );
}
