//! The metrics every verb of `api::ops` returns are those of the snapshots it created: for an
//! APPEND, an APPEND followed by the COMPACT of its writer's compaction, an OVERWRITE, a
//! TRUNCATE, a row-level change, compactions (in place, and planned then committed) and an
//! already committed transaction (nothing), the returned snapshot ids are the new ones and each
//! one's metrics equal the ADD/DELETE data-file entries of its delta manifests, decoded here
//! from the files with the spec's readers.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use tidelake_core::api::commit::{CommitMessage, OverwriteScope};
use tidelake_core::api::compact::{CompactRequest, Compactor};
use tidelake_core::api::ops::{
    self, CommitMetrics, Committed, CommittedSnapshot, Read, TableCommit,
};
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{FileIO, Table};
use tidelake_core::test_support::snapshot_ids;
use tidelake_spec::manifest::{read_manifest, read_manifest_list, FileKind};
use tidelake_spec::snapshot::{snapshot_file_name, Snapshot};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

async fn table(dir: &Path, primary_keys: &[&str], options: &[(&str, &str)]) -> Table {
    let spec = TableSpec {
        primary_keys: primary_keys.iter().map(|k| k.to_string()).collect(),
        partition_keys: vec![],
        // append tables: bucket-unaware
        bucket: Some(if primary_keys.is_empty() { -1 } else { 1 }),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        comment: None,
    };
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    create_table(io.clone(), &schema(), &spec).await.unwrap();
    Table::open_io(io).await.unwrap()
}

/// The messages of a writer of rows `keys` (`wait_compaction`: the writer compacts first).
async fn messages(table: &Table, keys: &[i64], wait_compaction: bool) -> Vec<CommitMessage> {
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(keys.to_vec())),
            Arc::new(Int64Array::from(
                keys.iter().map(|k| k * 10).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap();
    let mut write = table
        .new_write()
        .wait_compaction(wait_compaction)
        .build()
        .await
        .unwrap();
    write.write(&batch, RowKinds::Fixed(0)).await.unwrap();
    write.prepare_commit().await.unwrap()
}

/// What snapshot `id`'s delta manifests say, counted from the files.
fn delta_of(dir: &Path, id: i64) -> CommitMetrics {
    let read = |rel: &str| std::fs::read(dir.join(rel)).unwrap();
    let snapshot =
        Snapshot::from_json(&read(&format!("snapshot/{}", snapshot_file_name(id)))).unwrap();
    let mut m = CommitMetrics::default();
    let list = read(&format!("manifest/{}", snapshot.delta_manifest_list));
    for meta in read_manifest_list(&list).unwrap() {
        for e in read_manifest(&read(&format!("manifest/{}", meta.file_name))).unwrap() {
            let (files, rows, bytes) = match e.kind {
                FileKind::Add => (&mut m.files_added, &mut m.rows_added, &mut m.bytes_added),
                FileKind::Delete => (
                    &mut m.files_removed,
                    &mut m.rows_removed,
                    &mut m.bytes_removed,
                ),
            };
            *files += 1;
            *rows += e.file.row_count;
            *bytes += e.file.file_size;
        }
    }
    m
}

/// `committed` holds exactly the snapshots created since `before` (the latest id then), each
/// with the metrics its delta manifests hold; returns the summed metrics.
fn check(dir: &Path, before: Option<i64>, committed: &Committed) -> CommitMetrics {
    let created: Vec<i64> = snapshot_ids(dir)
        .into_iter()
        .filter(|id| Some(*id) > before)
        .collect();
    assert_eq!(committed.ids(), created);
    let mut sum = CommitMetrics::default();
    for s in &committed.snapshots {
        let expected = delta_of(dir, s.id);
        assert_eq!(s.metrics, expected, "snapshot {}", s.id);
        sum.files_added += expected.files_added;
        sum.files_removed += expected.files_removed;
        sum.rows_added += expected.rows_added;
        sum.rows_removed += expected.rows_removed;
        sum.bytes_added += expected.bytes_added;
        sum.bytes_removed += expected.bytes_removed;
    }
    assert_eq!(committed.metrics(), sum);
    sum
}

fn latest(dir: &Path) -> Option<i64> {
    snapshot_ids(dir).last().copied()
}

#[tokio::test]
async fn append_overwrite_truncate_and_row_level_metrics_are_their_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let t = table(dir, &[], &[]).await;
    let commit = TableCommit::new(t.clone(), "metrics-test");

    let appended = commit
        .append(messages(&t, &[1, 2, 3], true).await)
        .await
        .unwrap();
    let m = check(dir, None, &appended);
    assert_eq!((m.files_added, m.rows_added, m.files_removed), (1, 3, 0));
    assert!(m.bytes_added > 0);
    let before = latest(dir);
    let second = commit
        .append(messages(&t, &[4, 5], true).await)
        .await
        .unwrap();
    assert_eq!(check(dir, before, &second).rows_added, 2);

    // a row-level change rewriting the first file: removes it, adds the rows kept
    let read_at = latest(dir);
    let planned = Read::new(&t).plan().await.unwrap();
    let first_file: Vec<_> = planned
        .plan
        .splits
        .into_iter()
        .map(|mut s| {
            s.files.retain(|f| f.row_count == 3);
            s
        })
        .filter(|s| !s.files.is_empty())
        .collect();
    assert_eq!(first_file.iter().map(|s| s.files.len()).sum::<usize>(), 1);
    let changed = commit
        .row_level(messages(&t, &[1, 3], true).await, &first_file, read_at)
        .await
        .unwrap();
    let m = check(dir, read_at, &changed);
    assert_eq!(
        (m.files_added, m.rows_added, m.files_removed, m.rows_removed),
        (1, 2, 1, 3)
    );

    let before = latest(dir);
    let overwritten = commit
        .overwrite(OverwriteScope::Static(None), messages(&t, &[7], true).await)
        .await
        .unwrap();
    let m = check(dir, before, &overwritten);
    assert_eq!(
        (m.files_added, m.rows_added, m.files_removed, m.rows_removed),
        (1, 1, 2, 4)
    );

    let before = latest(dir);
    let truncated = commit.truncate().await.unwrap();
    let m = check(dir, before, &truncated);
    assert_eq!((m.files_added, m.files_removed, m.rows_removed), (0, 1, 1));

    // the same transaction of a user again: already committed, nothing created or counted
    let once = TableCommit::new(t.clone(), "exactly-once").identifier(7);
    let before = latest(dir);
    let first = once.append(messages(&t, &[8], true).await).await.unwrap();
    assert_eq!(check(dir, before, &first).rows_added, 1);
    let again = once.append(messages(&t, &[8], true).await).await.unwrap();
    assert_eq!(again, Committed::default());
    assert_eq!(again.metrics(), CommitMetrics::default());
}

#[tokio::test]
async fn compactions_report_the_metrics_of_their_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // deletion vectors: a writer compacts its level-0 files before committing (APPEND + COMPACT)
    let t = table(dir, &["k"], &[("deletion-vectors.enabled", "true")]).await;
    let commit = TableCommit::new(t.clone(), "metrics-test");
    let mut before = None;
    for keys in [[1, 2], [2, 3]] {
        let pair = commit
            .append(messages(&t, &keys, true).await)
            .await
            .unwrap();
        assert_eq!(pair.snapshots.len(), 2, "an APPEND and its COMPACT");
        check(dir, before, &pair);
        before = latest(dir);
    }

    // compactions of a plain primary-key table, whose writers leave their files at level 0
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let t = table(dir, &["k"], &[]).await;
    let idle = TableCommit::new(t.clone(), "idle");
    for k in 4..7 {
        idle.append(messages(&t, &[k], false).await).await.unwrap();
    }
    let before = latest(dir);
    let full = CompactRequest {
        full: true,
        partitions: None,
    };
    let report = ops::compact(&t, &full, None).await.unwrap();
    assert!(report.snapshot_id.is_some());
    let compacted = Committed {
        snapshots: report
            .snapshot_id
            .map(|id| CommittedSnapshot {
                id,
                metrics: report.metrics,
            })
            .into_iter()
            .collect(),
    };
    let m = check(dir, before, &compacted);
    assert!(m.files_removed > 1 && m.rows_added > 0, "{m:?}");

    idle.append(messages(&t, &[9], false).await).await.unwrap();
    let before = latest(dir);
    let compactor = Compactor::on_latest_schema(&t).await.unwrap();
    let plan = compactor.plan(&full).await.unwrap();
    let mut results = Vec::new();
    for task in &plan.tasks {
        results.push(compactor.run_task(task).await.unwrap());
    }
    let committed = ops::commit_compaction(&t, &plan, results).await.unwrap();
    let m = check(dir, before, &committed);
    assert!(m.files_removed > 1 && m.rows_added > 0, "{m:?}");
}
