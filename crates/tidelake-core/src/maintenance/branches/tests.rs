//! Branches end to end on local storage: layout, reads and writes, creation, deletion,
//! fast-forward, `scan.fallback-branch`, and maintenance that must not delete what a branch
//! still references.

use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::*;
use crate::commit::FileStoreCommit;
use crate::error::ErrorKind;
use crate::maintenance::expire::{expire_snapshots, ExpireConfig};
use crate::maintenance::orphans::remove_orphan_files;
use crate::maintenance::rollback::{rollback_to, RollbackTarget};
use crate::maintenance::tags::{create_tag, delete_tag};
use crate::ops::Read;
use crate::scan::{plan_scan, ScanRequest};
use crate::schema_change::{alter_table, create_table, SchemaChange, TableSpec};
use crate::test_support::write_and_commit;

fn arrow_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("p", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]))
}

/// An append table partitioned by `p`, at `dir`.
async fn new_table(dir: &std::path::Path) -> Table {
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    let spec = TableSpec {
        primary_keys: vec![],
        partition_keys: vec!["p".into()],
        bucket: None,
        options: vec![],
        comment: None,
    };
    create_table(io, &arrow_schema(), &spec).await.unwrap()
}

/// Commit rows `(p, v)` to `table`'s branch; returns the snapshot id.
async fn append(table: &Table, rows: &[(i64, i64)]) -> i64 {
    let p: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let v: Vec<i64> = rows.iter().map(|r| r.1).collect();
    let batch = RecordBatch::try_new(
        arrow_schema(),
        vec![Arc::new(Int64Array::from(p)), Arc::new(Int64Array::from(v))],
    )
    .unwrap();
    let ids = write_and_commit(table, &batch, 0, &table.env().uuid_string()).await;
    *ids.last().unwrap()
}

/// Every `(p, v)` of the latest snapshot, sorted.
async fn rows(table: &Table) -> Vec<(i64, i64)> {
    let read = Read::new(table).batch_size(1024).plan().await.unwrap();
    let mut out = Vec::new();
    for b in read.reader.collect(read.plan.splits, None).await.unwrap() {
        let col = |n: &str| {
            b.column_by_name(n)
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let (p, v) = (col("p"), col("v"));
        out.extend((0..b.num_rows()).map(|i| (p.value(i), v.value(i))));
    }
    out.sort_unstable();
    out
}

async fn branch(table: &Table, name: &str) -> Table {
    Table::open_branch(table.io().clone(), name).await.unwrap()
}

fn keep_one() -> ExpireConfig {
    ExpireConfig {
        retain_min: 1,
        retain_max: 1,
        older_than_ms: i64::MAX,
        max_deletes: i64::MAX,
        changelog: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_from_a_snapshot_is_read_and_written_apart_from_main() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    append(&main, &[(1, 2)]).await;
    create_branch(&main, "b", &BranchStart::Snapshot(1))
        .await
        .unwrap();
    let root = dir.path().join("branch/branch-b");
    assert!(root.join("schema/schema-0").is_file() && root.join("snapshot/snapshot-1").is_file());
    assert!(!root.join("snapshot/snapshot-2").exists());

    let b = branch(&main, "b").await;
    assert_eq!(b.branch(), "b");
    assert_eq!(rows(&b).await, vec![(1, 1)]);
    assert_eq!(append(&b, &[(2, 10)]).await, 2);
    assert!(root.join("snapshot/snapshot-2").is_file());
    assert_eq!(rows(&b).await, vec![(1, 1), (2, 10)]);
    assert_eq!(rows(&main).await, vec![(1, 1), (1, 2)]);
    assert_eq!(
        list_branches(main.io()).await.unwrap(),
        vec!["b".to_string()]
    );

    // A schema change on the branch stays on the branch.
    let b = alter_table(
        &b,
        &[SchemaChange::SetOption {
            key: "snapshot.num-retained.min".into(),
            value: "3".into(),
        }],
    )
    .await
    .unwrap();
    assert_eq!(b.schema().id, 1);
    assert!(root.join("schema/schema-1").is_file() && !dir.path().join("schema/schema-1").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_from_a_tag_and_empty_and_their_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    create_tag(&main, "t1", Some(1), None).await.unwrap();
    append(&main, &[(1, 2)]).await;
    create_branch(&main, "from-tag", &BranchStart::Tag("t1".into()))
        .await
        .unwrap();
    assert!(dir
        .path()
        .join("branch/branch-from-tag/tag/tag-t1")
        .is_file());
    let from_tag = branch(&main, "from-tag").await;
    assert_eq!(rows(&from_tag).await, vec![(1, 1)]);
    assert_eq!(
        from_tag.snapshot_manager().tag_names().await.unwrap(),
        vec!["t1".to_string()]
    );

    create_branch(&main, "empty", &BranchStart::Empty)
        .await
        .unwrap();
    let empty = branch(&main, "empty").await;
    assert_eq!(rows(&empty).await, vec![]);
    assert_eq!(append(&empty, &[(3, 3)]).await, 1);
    assert_eq!(rows(&empty).await, vec![(3, 3)]);

    for bad in ["main", "", " ", "123", "a/b"] {
        let err = create_branch(&main, bad, &BranchStart::Empty)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Invalid, "{bad:?}: {err}");
    }
    let err = create_branch(&main, "empty", &BranchStart::Empty)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    let err = create_branch(&main, "x", &BranchStart::Tag("nope".into()))
        .await
        .unwrap_err();
    assert!(
        err.kind() == ErrorKind::NotFound && err.to_string().contains("nope"),
        "{err}"
    );
    let err = create_branch(&main, "x", &BranchStart::Snapshot(9))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(!dir.path().join("branch/branch-x").exists());

    let err = Table::open_branch(main.io().clone(), "nope")
        .await
        .unwrap_err();
    assert!(
        err.kind() == ErrorKind::NotFound && err.to_string().contains("branch 'nope'"),
        "{err}"
    );

    delete_branch(&main, "empty").await.unwrap();
    assert_eq!(
        list_branches(main.io()).await.unwrap(),
        vec!["from-tag".to_string()]
    );
    let err = delete_branch(&main, "empty").await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::NotFound && err.to_string().contains("'empty'"),
        "{err}"
    );
    assert_eq!(
        delete_branch(&main, "main").await.unwrap_err().kind(),
        ErrorKind::Invalid
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_forward_replaces_main_from_the_branch_point() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    create_tag(&main, "t1", Some(1), None).await.unwrap();
    append(&main, &[(1, 2)]).await;
    create_tag(&main, "t2", Some(2), None).await.unwrap();
    create_branch(&main, "b", &BranchStart::Tag("t1".into()))
        .await
        .unwrap();
    let b = branch(&main, "b").await;
    append(&b, &[(2, 20)]).await;
    append(&b, &[(3, 30)]).await;

    assert_eq!(
        fast_forward(&b, "b").await.unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(
        fast_forward(&main, "main").await.unwrap_err().kind(),
        ErrorKind::Invalid
    );
    assert_eq!(
        fast_forward(&main, "nope").await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    create_branch(&main, "empty", &BranchStart::Empty)
        .await
        .unwrap();
    let err = fast_forward(&main, "empty").await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::Invalid && err.to_string().contains("no snapshot"),
        "{err}"
    );

    fast_forward(&main, "b").await.unwrap();
    let main = main.reopen().await.unwrap();
    assert_eq!(rows(&main).await, vec![(1, 1), (2, 20), (3, 30)]);
    assert_eq!(
        main.snapshot_manager().list_ids().await.unwrap(),
        vec![1, 2, 3]
    );
    // Main's tag of its replaced snapshot 2 is gone, the branch's tag came over.
    assert_eq!(
        main.snapshot_manager().tag_names().await.unwrap(),
        vec!["t1".to_string()]
    );
    // Main goes on from the branch's history.
    assert_eq!(append(&main, &[(4, 40)]).await, 4);
    assert_eq!(rows(&b).await, vec![(1, 1), (2, 20), (3, 30)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_missing_from_a_branch_are_read_from_its_fallback_branch() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    create_branch(&main, "fb", &BranchStart::Empty)
        .await
        .unwrap();
    let fb = branch(&main, "fb").await;
    append(&fb, &[(1, 100), (2, 200)]).await;
    append(&main, &[(1, 1)]).await;
    let err = alter_table(
        &main,
        &[SchemaChange::SetOption {
            key: SCAN_FALLBACK_BRANCH.into(),
            value: "nope".into(),
        }],
    )
    .await
    .unwrap_err();
    assert!(
        err.kind() == ErrorKind::Invalid && err.to_string().contains("nope"),
        "{err}"
    );
    let main = alter_table(
        &main,
        &[SchemaChange::SetOption {
            key: SCAN_FALLBACK_BRANCH.into(),
            value: "fb".into(),
        }],
    )
    .await
    .unwrap();
    // Partition 1 from main, partition 2 (absent from main) from the fallback branch.
    assert_eq!(rows(&main).await, vec![(1, 1), (2, 200)]);
    // Splits shipped elsewhere carry their branch.
    let plan = plan_scan(&main, &ScanRequest::default()).await.unwrap();
    let branches: Vec<Option<String>> = plan.splits.iter().map(|s| s.branch.clone()).collect();
    assert!(
        branches.contains(&None) && branches.contains(&Some("fb".to_string())),
        "{branches:?}"
    );
    let err = delete_branch(&main, "fb").await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::Invalid && err.to_string().contains(SCAN_FALLBACK_BRANCH),
        "{err}"
    );
}

/// Main empties its only partition and expires everything but its latest snapshot: the files
/// a branch created from the first snapshot still reads must survive that, tag deletion,
/// rollback and orphan cleaning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_on_main_keeps_what_a_branch_references() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    create_tag(&main, "t1", Some(1), None).await.unwrap();
    create_branch(&main, "b", &BranchStart::Snapshot(1))
        .await
        .unwrap();
    create_branch(&main, "c", &BranchStart::Tag("t1".into()))
        .await
        .unwrap();
    let b = branch(&main, "b").await;
    append(&b, &[(2, 2)]).await;
    FileStoreCommit::new(main.clone(), "t")
        .unwrap()
        .truncate_table(2)
        .await
        .unwrap();
    append(&main, &[(3, 3)]).await;

    let expired = expire_snapshots(&main, &keep_one()).await.unwrap();
    assert_eq!(expired.snapshots, 2);
    // The tag's snapshot is expired: deleting the tag cleans the files only it kept on main.
    delete_tag(&main, "t1").await.unwrap();
    assert_eq!(rows(&main).await, vec![(3, 3)]);
    assert_eq!(rows(&b).await, vec![(1, 1), (2, 2)]);
    assert_eq!(rows(&branch(&main, "c").await).await, vec![(1, 1)]);
    let orphans = remove_orphan_files(&main, i64::MAX, false).await.unwrap();
    assert!(orphans.is_empty(), "{orphans:?}");
    assert_eq!(rows(&b).await, vec![(1, 1), (2, 2)]);

    // Once the branch is gone, the files only it referenced are orphans.
    delete_branch(&main, "b").await.unwrap();
    let orphans = remove_orphan_files(&main, i64::MAX, false).await.unwrap();
    assert!(
        orphans.iter().any(|f| f.path.starts_with("p=2/")),
        "{orphans:?}"
    );
    assert_eq!(rows(&branch(&main, "c").await).await, vec![(1, 1)]);
    assert_eq!(rows(&main).await, vec![(3, 3)]);
}

/// The other way round: expiring a branch keeps what main references.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiring_a_branch_keeps_what_main_references() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    create_branch(&main, "b", &BranchStart::Snapshot(1))
        .await
        .unwrap();
    let b = branch(&main, "b").await;
    FileStoreCommit::new(b.clone(), "t")
        .unwrap()
        .truncate_table(2)
        .await
        .unwrap();
    append(&b, &[(2, 2)]).await;
    let expired = expire_snapshots(&b, &keep_one()).await.unwrap();
    assert_eq!(expired.snapshots, 2);
    assert_eq!(rows(&b).await, vec![(2, 2)]);
    assert_eq!(rows(&main).await, vec![(1, 1)]);
    assert!(dir.path().join("snapshot/snapshot-1").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_opens_a_branch_by_its_paimon_identifier() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("db.db")).unwrap();
    let main = new_table(&dir.path().join("db.db/t")).await;
    append(&main, &[(1, 1)]).await;
    create_branch(&main, "dev", &BranchStart::Empty)
        .await
        .unwrap();
    append(&branch(&main, "dev").await, &[(2, 2)]).await;
    let catalog = crate::catalog::Catalog::new(FileIO::open(dir.path().to_str().unwrap()).unwrap());
    let dev = catalog.get_table("db.t$branch_dev").await.unwrap();
    assert_eq!(dev.branch(), "dev");
    assert_eq!(rows(&dev).await, vec![(2, 2)]);
    assert_eq!(
        rows(&catalog.get_table("db.t").await.unwrap()).await,
        vec![(1, 1)]
    );
    let err = catalog.get_table("db.t$branch_nope").await.unwrap_err();
    assert!(
        err.kind() == ErrorKind::NotFound && err.to_string().contains("branch 'nope'"),
        "{err}"
    );
}

/// Rolling main back deletes what its newer snapshots added, except what a branch created from
/// one of them still reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_main_back_keeps_what_a_branch_references() {
    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    append(&main, &[(2, 2)]).await;
    append(&main, &[(3, 3)]).await;
    create_branch(&main, "b", &BranchStart::Snapshot(2))
        .await
        .unwrap();
    let result = rollback_to(&main, &RollbackTarget::Snapshot(1))
        .await
        .unwrap();
    assert_eq!(result.snapshots, 2);
    assert_eq!(
        result.deleted.data_files, 1,
        "only the file of snapshot 3 goes"
    );
    assert_eq!(rows(&main).await, vec![(1, 1)]);
    assert_eq!(rows(&branch(&main, "b").await).await, vec![(1, 1), (2, 2)]);
}

// ---- publishing a stage (`ops::publish_branch`) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_a_branch_is_one_snapshot_refused_once_main_moved() {
    use crate::ops::publish_branch;

    let dir = tempfile::tempdir().unwrap();
    let main = new_table(dir.path()).await;
    append(&main, &[(1, 1)]).await;
    create_branch(&main, "s", &BranchStart::Snapshot(1))
        .await
        .unwrap();
    let s = branch(&main, "s").await;
    append(&s, &[(2, 2)]).await;
    append(&s, &[(3, 3)]).await;
    let committed = publish_branch(&main, "s").await.unwrap();
    assert_eq!(committed.last_id(), Some(2));
    assert_eq!(
        (
            committed.metrics().files_added,
            committed.metrics().rows_added
        ),
        (2, 2)
    );
    assert_eq!(rows(&main).await, vec![(1, 1), (2, 2), (3, 3)]);
    let published = main.snapshot_manager().snapshot(2).await.unwrap();
    assert_eq!(published.delta_record_count, 2);
    // publishing again (the branch was not deleted) answers the same snapshot and metrics
    assert_eq!(publish_branch(&main, "s").await.unwrap(), committed);
    assert_eq!(main.snapshot_manager().latest_id().await.unwrap(), Some(2));

    create_branch(&main, "t", &BranchStart::Snapshot(2))
        .await
        .unwrap();
    append(&branch(&main, "t").await, &[(4, 4)]).await;
    append(&main, &[(5, 5)]).await;
    let err = publish_branch(&main, "t").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CommitConflict, "{err}");
    assert!(err.to_string().contains("kept for inspection"), "{err}");
    assert_eq!(rows(&main).await, vec![(1, 1), (2, 2), (3, 3), (5, 5)]);
    assert!(list_branches(main.io())
        .await
        .unwrap()
        .contains(&"t".to_string()));
}
