//! Every commit made through `api::ops` runs the hooks Java's committer runs after each commit,
//! whatever its kind: with `snapshot.num-retained.max = 2`, appends, an overwrite, a truncate
//! and compactions (in place, and planned then committed) each leave at most two snapshots.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tidelake_core::api::commit::OverwriteScope;
use tidelake_core::api::compact::{CompactRequest, Compactor};
use tidelake_core::api::ops::{self, TableCommit};
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{FileIO, Table};
use tidelake_core::test_support::snapshot_ids;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

async fn retaining_two(dir: &std::path::Path) -> Table {
    let spec = TableSpec {
        primary_keys: vec!["k".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: vec![
            ("snapshot.num-retained.min".into(), "1".into()),
            ("snapshot.num-retained.max".into(), "2".into()),
        ],
        comment: None,
    };
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    create_table(io.clone(), &schema(), &spec).await.unwrap();
    Table::open_io(io).await.unwrap()
}

async fn messages(table: &Table, k: i64) -> Vec<tidelake_core::api::commit::CommitMessage> {
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(vec![k])),
            Arc::new(Int64Array::from(vec![k * 10])),
        ],
    )
    .unwrap();
    let mut write = table
        .new_write()
        .wait_compaction(false)
        .build()
        .await
        .unwrap();
    write.write(&batch, RowKinds::Fixed(0)).await.unwrap();
    write.prepare_commit().await.unwrap()
}

#[tokio::test]
async fn every_commit_kind_runs_the_maintenance() {
    let dir = tempfile::tempdir().unwrap();
    let table = retaining_two(dir.path()).await;
    let commit = TableCommit::new(table.clone(), "ops-test");
    for k in 0..4 {
        commit.append(messages(&table, k).await).await.unwrap();
        assert!(snapshot_ids(dir.path()).len() <= 2, "after append {k}");
    }
    let report = ops::compact(
        &table,
        &CompactRequest {
            full: true,
            partitions: None,
        },
        None,
    )
    .await
    .unwrap();
    let compacted = report.snapshot_id.expect("a compaction snapshot");
    assert_eq!(snapshot_ids(dir.path()), vec![compacted - 1, compacted]);

    commit.append(messages(&table, 9).await).await.unwrap();
    let compactor = Compactor::on_latest_schema(&table).await.unwrap();
    let plan = compactor
        .plan(&CompactRequest {
            full: true,
            partitions: None,
        })
        .await
        .unwrap();
    let mut results = Vec::new();
    for task in &plan.tasks {
        results.push(compactor.run_task(task).await.unwrap());
    }
    let id = ops::commit_compaction(&table, &plan, results)
        .await
        .unwrap()
        .last_id()
        .expect("a compaction snapshot");
    assert_eq!(snapshot_ids(dir.path()), vec![id - 1, id]);

    let ids = commit
        .overwrite(OverwriteScope::Static(None), messages(&table, 5).await)
        .await
        .unwrap()
        .ids();
    assert_eq!(snapshot_ids(dir.path()), vec![ids[0] - 1, ids[0]]);
    let ids = commit.truncate().await.unwrap().ids();
    assert_eq!(snapshot_ids(dir.path()), vec![ids[0] - 1, ids[0]]);
}
