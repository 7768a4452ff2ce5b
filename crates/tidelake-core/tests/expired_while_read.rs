//! Readers of a snapshot's delta that expiration removes between their read of the snapshot
//! file and of its manifest lists: a cross-partition writer moving its base past its own
//! commit, and a plan of changes. Both must take this as "expired" (the writer's base stays
//! put and its commit is refused as a conflict; the plan fails naming the expired snapshot),
//! not as a damaged table.
//!
//! The race is run for real: the reader's storage answers its read of the snapshot file
//! 1.5 s late (test-only fault injection), and an expiration on another handle runs meanwhile.

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

fn snapshot_ids(dir: &std::path::Path) -> Vec<i64> {
    let mut ids: Vec<i64> = std::fs::read_dir(dir.join("snapshot"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .to_str()?
                .strip_prefix("snapshot-")?
                .parse()
                .ok()
        })
        .collect();
    ids.sort();
    ids
}

/// The table at `location`, its storage answering its first read of snapshot `id` 1.5 s late.
async fn slow_to_read_snapshot(location: &str, id: i64) -> Table {
    let path = format!("snapshot/snapshot-{id}");
    let slow: StorageOptions = [
        ("op", "get"),
        ("path", path.as_str()),
        ("when", "after"),
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

/// Expire all snapshots but the latest, 300 ms from now (while a slow read waits): how many.
fn expire_soon(table: &Table) -> tokio::task::JoinHandle<u64> {
    let table = table.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let keep_one = ExpireConfig {
            retain_min: 1,
            retain_max: 1,
            older_than_ms: i64::MAX,
            max_deletes: i64::MAX,
        };
        expire_snapshots(&table, &keep_one).await.unwrap().snapshots
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_commit_expiring_while_its_delta_is_read_is_a_conflict_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let spec = TableSpec {
        primary_keys: vec!["id".into()],
        partition_keys: vec!["dt".into()],
        bucket: Some(-1),
        options: vec![("write-only".into(), "true".into())],
        comment: None,
    };
    create_table(FileIO::open(location).unwrap(), &schema(), &spec)
        .await
        .unwrap();
    let plain = Table::open_io(FileIO::open(location).unwrap())
        .await
        .unwrap();
    let mut other = plain.new_write().build().await.unwrap();
    other
        .write(&row(1, "a", 1), RowKinds::Fixed(0))
        .await
        .unwrap();
    assert_eq!(commit(&plain, &mut other, 1).await.unwrap(), vec![1]);

    // The writer: its storage answers its first read of snapshot 2 1.5 s late.
    let slow_table = slow_to_read_snapshot(location, 2).await;
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
    let expire = expire_soon(&plain);
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
    let spec = TableSpec {
        primary_keys: vec!["id".into(), "dt".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: vec![("write-only".into(), "true".into())],
        comment: None,
    };
    create_table(FileIO::open(location).unwrap(), &schema(), &spec)
        .await
        .unwrap();
    let plain = Table::open_io(FileIO::open(location).unwrap())
        .await
        .unwrap();
    for ident in 1..=3 {
        let mut write = plain.new_write().build().await.unwrap();
        write
            .write(&row(ident, "a", ident), RowKinds::Fixed(0))
            .await
            .unwrap();
        assert_eq!(
            commit(&plain, &mut write, ident).await.unwrap(),
            vec![ident]
        );
    }
    let slow_table = slow_to_read_snapshot(location, 2).await;
    let expire = expire_soon(&plain);
    let planned = plan_changes(&slow_table, 1, None, None).await;
    assert_eq!(expire.await.unwrap(), 2);
    let failed = planned.expect_err("snapshot 2 expired while it was read");
    assert_eq!(failed.kind(), ErrorKind::SnapshotExpired, "{failed}");
    assert!(
        failed.to_string().contains("snapshot 2 expired"),
        "{failed}"
    );
}
