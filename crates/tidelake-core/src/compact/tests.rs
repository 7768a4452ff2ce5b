//! End-to-end compaction tests on temporary tables written by [`TableWrite`]: reads are
//! identical before and after minor and full compactions for every merge engine; the LSM
//! layout after compaction (levels, key ranges); retracts kept below older data; lost races;
//! deletion vectors; partition selection; lookup units of every engine above untouched deeper
//! levels (older copies merged, marked, diffed; deeper files skipped by key range); random
//! histories of every engine with and without deletion vectors and lookup changelog (property
//! test).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::TryStreamExt;
use proptest::prelude::*;
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::manifest::{
    DataFileMeta, DeletionVectorMeta, IndexFileMeta, DELETION_VECTORS_INDEX,
};
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::job::{Bucket, CompactReport, Done};
use super::rewriter::UnitTask;
use super::*;
use crate::commit::{CommitMessage, FileStoreCommit};
use crate::error::ErrorKind;
use crate::maintenance::{expire_snapshots, ExpireConfig};
use crate::read::deletion_vector::{write_deletion_vector_file, DeletionVector};
use crate::read::split_read::{read_splits, ReadContext};
use crate::scan::plan::plan_changes;
use crate::table::Table;
use crate::test_support::{
    int64_column, read_table, string_column, table_with_schema, write_and_commit,
};
use crate::write::input::RowKinds;
use crate::write::table_write::TableWrite;

const INSERT: i8 = 0;
const DELETE: i8 = 3;

/// One row: (dt, id, v).
type Row = (String, i64, Option<i64>);

/// A table `id BIGINT NOT NULL, dt STRING NOT NULL, v BIGINT`, primary key `(id, dt)`,
/// partitioned by `dt`, 2 buckets, writers that never compact, plus `options`.
async fn create_table(dir: &Path, options: &[(&str, &str)]) -> Table {
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(1, "dt", DataType::string().with_nullable(false)),
        DataField::new(2, "v", DataType::new(TypeKind::BigInt)),
    ];
    let mut opts = Options::new();
    let defaults = [
        ("bucket", "2"),
        ("write-only", "true"),
        ("commit.min-retry-wait", "1 ms"),
        ("commit.max-retry-wait", "20 ms"),
    ];
    for (k, v) in defaults.iter().chain(options) {
        opts.set(*k, *v);
    }
    let schema = TableSchema::new(
        0,
        fields,
        vec!["dt".into()],
        vec!["id".into(), "dt".into()],
        opts,
    )
    .expect("valid schema");
    table_with_schema(dir, &schema).await
}

/// Write `rows` with row kind `kind` and commit them (one APPEND snapshot).
async fn write(table: &Table, rows: &[Row], kind: i8) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("dt", ArrowType::Utf8, false),
        Field::new("v", ArrowType::Int64, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.0.as_str()),
        )),
        Arc::new(Int64Array::from(
            rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        )),
    ];
    let batch = RecordBatch::try_new(schema, columns).unwrap();
    write_and_commit(table, &batch, kind, "writer").await;
}

/// Every row of the latest snapshot, sorted; `options` override table options for the read.
async fn read(table: &Table, options: &[(&str, &str)]) -> Vec<Row> {
    let mut rows = read_in_order(table, options).await;
    rows.sort_unstable();
    rows
}

/// Every row of the latest snapshot in read order (splits, then files, as planned).
async fn read_in_order(table: &Table, options: &[(&str, &str)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in read_table(table, options, 7).await {
        let (id, dt, v) = (
            int64_column(&b, "id"),
            string_column(&b, "dt"),
            int64_column(&b, "v"),
        );
        for i in 0..b.num_rows() {
            rows.push((
                dt.value(i).to_string(),
                id.value(i),
                v.is_valid(i).then(|| v.value(i)),
            ));
        }
    }
    rows
}

/// The live files of every bucket, level 0 included.
async fn buckets(table: &Table) -> Vec<Bucket> {
    let snap = table.snapshot_manager().latest().await.unwrap().unwrap();
    Compactor::new(table.clone())
        .unwrap()
        .live_buckets(&snap)
        .await
        .unwrap()
}

async fn compact(table: &Table, full: bool) -> CompactReport {
    let request = CompactRequest {
        full,
        partitions: None,
    };
    Compactor::new(table.clone())
        .unwrap()
        .compact(&request)
        .await
        .unwrap()
}

fn key_of(framed: &[u8]) -> i64 {
    match decode_framed(framed, &[DataType::not_null(TypeKind::BigInt)])
        .unwrap()
        .as_slice()
    {
        [tidelake_spec::datum::Datum::BigInt(k)] => *k,
        other => panic!("unexpected key {other:?}"),
    }
}

/// Every level >= 1 of every bucket is one sorted run: files sorted by min key don't overlap.
async fn assert_levels_are_runs(table: &Table) {
    for b in buckets(table).await {
        let mut by_level: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
        for f in &b.files {
            by_level
                .entry(f.meta.level)
                .or_default()
                .push((key_of(&f.meta.min_key), key_of(&f.meta.max_key)));
        }
        for (level, mut ranges) in by_level.into_iter().filter(|(l, _)| *l > 0) {
            ranges.sort_unstable();
            for w in ranges.windows(2) {
                assert_eq!(
                    w[0].1.cmp(&w[1].0),
                    Ordering::Less,
                    "level {level} of bucket {} overlaps",
                    b.bucket
                );
            }
        }
    }
}

/// After a full compaction: no level 0, one level (the max) per bucket.
async fn assert_fully_compacted(table: &Table, max_level: i32) {
    for b in buckets(table).await {
        for f in &b.files {
            assert_eq!(
                f.meta.level, max_level,
                "{} of bucket {} is not at the max level",
                f.meta.file_name, b.bucket
            );
        }
    }
    assert_levels_are_runs(table).await;
}

fn rows(dt: &str, pairs: &[(i64, Option<i64>)]) -> Vec<Row> {
    pairs
        .iter()
        .map(|&(id, v)| (dt.to_string(), id, v))
        .collect()
}

/// Overlapping commits: upserts over two partitions, nulls, and (unless `no_deletes`) deletes.
async fn history(table: &Table, no_deletes: bool) {
    for round in 0..6i64 {
        let upserts: Vec<Row> = ["a", "b"]
            .iter()
            .flat_map(|dt| {
                (round..round + 12)
                    .map(move |id| (dt.to_string(), id, (id % 3 != 0).then_some(id * 10 + round)))
            })
            .collect();
        write(table, &upserts, INSERT).await;
        if !no_deletes && round % 2 == 1 {
            write(
                table,
                &rows("a", &[(round + 1, None), (round + 4, None), (100, None)]),
                DELETE,
            )
            .await;
        }
    }
}

async fn check_engine(options: &[(&str, &str)], no_deletes: bool) {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), options).await;
    history(&table, no_deletes).await;
    let before = read(&table, &[]).await;
    assert!(!before.is_empty());

    let minor = compact(&table, false).await;
    assert!(
        minor.snapshot_id.is_some(),
        "more runs than the trigger: minor compaction picks"
    );
    assert_eq!(
        read(&table, &[]).await,
        before,
        "minor compaction changed the rows"
    );
    assert_levels_are_runs(&table).await;
    // more overlapping writes on top of the compacted levels
    history(&table, no_deletes).await;
    let before = read(&table, &[]).await;

    let full = compact(&table, true).await;
    let id = full.snapshot_id.expect("full compaction commits");
    let snap = table.snapshot_manager().snapshot(id).await.unwrap();
    assert_eq!(snap.commit_kind, CommitKind::Compact);
    assert_eq!(
        read(&table, &[]).await,
        before,
        "full compaction changed the rows"
    );
    // num-levels defaults to the trigger + 1
    let max_level = table.schema().options().num_levels().unwrap() - 1;
    assert_eq!(
        full.buckets.iter().map(|b| b.output_level).max(),
        Some(max_level)
    );
    assert_fully_compacted(&table, max_level).await;
    // full compaction of a fully compacted table: nothing to do
    assert_eq!(compact(&table, true).await.snapshot_id, None);
    // and the writer continues from there
    write(&table, &rows("a", &[(0, Some(-1))]), INSERT).await;
    let after = read(&table, &[]).await;
    assert!(after.contains(&("a".into(), 0, Some(-1))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deduplicate_reads_identically_after_compaction() {
    check_engine(&[("num-sorted-run.compaction-trigger", "3")], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_update_reads_identically_after_compaction() {
    check_engine(
        &[
            ("merge-engine", "partial-update"),
            ("partial-update.remove-record-on-delete", "true"),
            ("num-sorted-run.compaction-trigger", "3"),
        ],
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregation_reads_identically_after_compaction() {
    // No deletes: the batch read of an aggregation table whose primary key has a partition
    // column fails on retracts (its merge is keyed by the trimmed key; not compaction's).
    check_engine(
        &[
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
            ("num-sorted-run.compaction-trigger", "3"),
        ],
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_row_compaction_shows_level0_content() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[("merge-engine", "first-row")]).await;
    history(&table, true).await;
    // batch reads hide level 0 of first-row tables: empty before compaction
    assert!(read(&table, &[]).await.is_empty());
    let logical = {
        // the logical content: the first write of each key
        let mut first: BTreeMap<(String, i64), Option<i64>> = BTreeMap::new();
        for round in 0..6i64 {
            for dt in ["a", "b"] {
                for id in round..round + 12 {
                    first
                        .entry((dt.to_string(), id))
                        .or_insert((id % 3 != 0).then_some(id * 10 + round));
                }
            }
        }
        first
            .into_iter()
            .map(|((dt, id), v)| (dt, id, v))
            .collect::<Vec<_>>()
    };
    // a minor compaction of a lookup table takes every level-0 file: here all runs, to the max level
    compact(&table, false).await.snapshot_id.expect("compacts");
    assert_fully_compacted(&table, 5).await;
    assert_eq!(read(&table, &[]).await, logical);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retracts_survive_below_older_data() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[("compaction.force-up-level-0", "true"), ("bucket", "1")],
    )
    .await;
    // Big enough to stay more than 1 % larger than the two small level-0 files together
    // whatever the encoding (`compaction.size-ratio`), so the pick stops below it.
    let base: Vec<Row> = (0..5000)
        .map(|id| ("a".to_string(), id, Some(id)))
        .collect();
    write(&table, &base, INSERT).await;
    compact(&table, true)
        .await
        .snapshot_id
        .expect("to the max level");
    write(&table, &rows("a", &[(1, None), (2, None)]), DELETE).await;
    write(&table, &rows("a", &[(3, Some(33))]), INSERT).await;
    let before = read(&table, &[]).await;
    let report = compact(&table, false).await;
    assert!(report.snapshot_id.is_some());
    // level 0 went below the big level-5 run, keeping its -D rows
    assert_eq!(report.buckets[0].output_level, 4);
    let level4: Vec<_> = buckets(&table)
        .await
        .into_iter()
        .flat_map(|b| b.files)
        .filter(|f| f.meta.level == 4)
        .collect();
    assert_eq!(
        level4
            .iter()
            .map(|f| f.meta.delete_row_count.unwrap_or(0))
            .sum::<i64>(),
        2
    );
    assert_eq!(read(&table, &[]).await, before);
    // a full compaction then drops them
    compact(&table, true).await;
    assert_eq!(read(&table, &[]).await, before);
    let deletes: i64 = buckets(&table)
        .await
        .iter()
        .flat_map(|b| &b.files)
        .map(|f| f.meta.delete_row_count.unwrap_or(0))
        .sum();
    assert_eq!(deletes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_files_are_upgraded_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    // every file is "large" (>= 0.7 × target): non-overlapping ones move by metadata only
    let table = create_table(dir.path(), &[("target-file-size", "1 b"), ("bucket", "1")]).await;
    write(&table, &rows("a", &[(1, Some(1)), (2, Some(2))]), INSERT).await;
    write(&table, &rows("a", &[(5, Some(5))]), INSERT).await;
    let names: Vec<String> = buckets(&table).await[0]
        .files
        .iter()
        .map(|f| f.meta.file_name.clone())
        .collect();
    let report = compact(&table, true).await;
    assert_eq!(report.buckets[0].upgraded, 2);
    let after = &buckets(&table).await[0].files;
    assert!(after
        .iter()
        .all(|f| f.meta.level == 5 && names.contains(&f.meta.file_name)));
    assert_eq!(
        read(&table, &[]).await,
        rows("a", &[(1, Some(1)), (2, Some(2)), (5, Some(5))])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_race_deletes_outputs_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let before = read(&table, &[]).await;
    let slow = Compactor::new(table.clone()).unwrap();
    let done = slow
        .rewrite_all(plan_full(&slow, &table).await, None)
        .await
        .unwrap();
    let written: Vec<String> = done
        .iter()
        .flat_map(|d| {
            d.result
                .written
                .iter()
                .map(move |f| format!("{}/{}", d.bucket.bucket_dir, f.file_name))
        })
        .collect();
    assert!(!written.is_empty());
    for path in &written {
        assert!(table.io().exists(path).await.unwrap());
    }
    // another compaction removes the inputs first
    compact(&table, true)
        .await
        .snapshot_id
        .expect("the fast one commits");
    let err = slow
        .commit(done.iter().map(Done::message).collect())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CommitConflict, "{err}");
    for path in &written {
        assert!(
            !table.io().exists(path).await.unwrap(),
            "{path} was left behind"
        );
    }
    assert_eq!(read(&table, &[]).await, before);
}

/// Expire every snapshot but the latest (and the files only they used).
async fn expire_all_but_latest(table: &Table) {
    let config = ExpireConfig {
        retain_min: 1,
        retain_max: 1,
        older_than_ms: i64::MAX,
        max_deletes: 1000,
        changelog: None,
    };
    expire_snapshots(table, &config).await.unwrap();
}

/// The buckets of `slow`'s plan of the latest snapshot, with their full-compaction units.
async fn plan_full(slow: &Compactor, table: &Table) -> Vec<(Bucket, UnitTask)> {
    let snap = table.snapshot_manager().latest().await.unwrap().unwrap();
    let mut work = Vec::new();
    for b in slow.live_buckets(&snap).await.unwrap() {
        if let Some(task) = slow.pick(&b.files, true).unwrap() {
            work.push((b, task));
        }
    }
    work
}

/// A compaction whose inputs were compacted by another job and then expired with the snapshot
/// it was planned on conflicts (nothing committed, the table unchanged), rather than failing
/// as a missing file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_expired_with_the_planned_snapshot_are_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let slow = Compactor::new(table.clone()).unwrap();
    let work = plan_full(&slow, &table).await;
    assert!(!work.is_empty());
    compact(&table, true)
        .await
        .snapshot_id
        .expect("the fast one commits");
    write(&table, &rows("b", &[(1, Some(-5))]), INSERT).await;
    expire_all_but_latest(&table).await;
    let before = read(&table, &[]).await;
    let snapshots = table.snapshot_manager().latest().await.unwrap().unwrap().id;
    let Err(err) = slow.rewrite_all(work, None).await else {
        panic!("the rewrite of vanished inputs succeeded")
    };
    assert_eq!(err.kind(), ErrorKind::CommitConflict, "{err}");
    assert_eq!(read(&table, &[]).await, before);
    assert_eq!(
        table.snapshot_manager().latest().await.unwrap().unwrap().id,
        snapshots
    );
}

/// Planning the latest snapshot starts again on the new latest when that snapshot expires
/// while it is read (its manifests deleted under the planner).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_restarts_on_the_new_latest_when_the_latest_expires() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let compactor = Compactor::new(table.clone()).unwrap();
    let first = table.snapshot_manager().latest().await.unwrap().unwrap().id;
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let (read_from, planned) = table
        .snapshot_manager()
        .read_latest(|snap| {
            let (table, compactor, calls) = (&table, &compactor, &calls);
            async move {
                if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    compact(table, true).await;
                    write(table, &rows("b", &[(1, Some(-5))]), INSERT).await;
                    expire_all_but_latest(table).await;
                }
                compactor.live_buckets(&snap).await
            }
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(calls.into_inner(), 2);
    let latest = table.snapshot_manager().latest().await.unwrap().unwrap().id;
    assert!(
        read_from.id == latest && latest > first,
        "planned {} of {first}..{latest}",
        read_from.id
    );
    assert_eq!(planned.len(), buckets(&table).await.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_are_rebased() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let slow = Compactor::new(table.clone()).unwrap();
    let done = slow
        .rewrite_all(plan_full(&slow, &table).await, None)
        .await
        .unwrap();
    // a writer commits new level-0 files meanwhile: the inputs stay live
    write(&table, &rows("b", &[(1, Some(-5))]), INSERT).await;
    let before = read(&table, &[]).await;
    slow.commit(done.iter().map(Done::message).collect())
        .await
        .unwrap()
        .last_id()
        .expect("commits on top of the append");
    assert_eq!(read(&table, &[]).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_can_be_selected() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let before = read(&table, &[]).await;
    let filter = crate::scan::predicate::Predicate::from_json(
        &serde_json::json!({"op": "eq", "field": "dt", "value": "b"}),
    )
    .unwrap();
    let report = Compactor::new(table.clone())
        .unwrap()
        .compact(&CompactRequest {
            full: true,
            partitions: Some(filter),
        })
        .await
        .unwrap();
    assert!(report.snapshot_id.is_some());
    assert!(report
        .buckets
        .iter()
        .all(|b| b.partition == vec![("dt".to_string(), "b".to_string())]));
    let layout = crate::layout::TableLayout::new(table.schema()).unwrap();
    for b in buckets(&table).await {
        let dt = layout
            .partition_spec(&layout.decode_partition(&b.partition).unwrap())
            .unwrap();
        let compacted = b.files.iter().all(|f| f.meta.level == 5);
        assert_eq!(compacted, dt[0].1 == "b", "only dt=b is compacted");
    }
    assert_eq!(read(&table, &[]).await, before);
    let bad = crate::scan::predicate::Predicate::from_json(
        &serde_json::json!({"op": "eq", "field": "v", "value": 1}),
    )
    .unwrap();
    let err = Compactor::new(table.clone())
        .unwrap()
        .compact(&CompactRequest {
            full: true,
            partitions: Some(bad),
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_vectors_are_applied_and_their_index_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[("deletion-vectors.enabled", "true"), ("bucket", "1")],
    )
    .await;
    write(
        &table,
        &rows("a", &[(1, Some(1)), (2, Some(2)), (3, Some(3))]),
        INSERT,
    )
    .await;
    // level 0 is invisible to batch reads of deletion-vector tables
    assert!(read(&table, &[]).await.is_empty());
    compact(&table, false)
        .await
        .snapshot_id
        .expect("lookup tables compact level 0 fully");
    assert_eq!(
        read(&table, &[]).await,
        rows("a", &[(1, Some(1)), (2, Some(2)), (3, Some(3))])
    );

    // mark row 1 (id 2) of the max-level file deleted, as a Java lookup compaction would
    let bucket = buckets(&table).await.remove(0);
    let file = bucket.files[0].meta.file_name.clone();
    commit_deletion_vector(&table, &bucket, &file, 1).await;
    let before = read(&table, &[]).await;
    assert_eq!(before, rows("a", &[(1, Some(1)), (3, Some(3))]));

    // one run at the max level: a full compaction rewrites just the file with a vector
    let report = compact(&table, true).await;
    assert_eq!(report.buckets.len(), 1);
    assert_eq!(report.buckets[0].files_before, 1);
    assert_eq!(read(&table, &[]).await, before);
    assert!(
        buckets(&table).await[0].dv_index.is_empty(),
        "the index file is dropped"
    );
    let snap = table.snapshot_manager().latest().await.unwrap().unwrap();
    assert!(crate::state::live_index_entries(&table, &snap)
        .await
        .unwrap()
        .is_empty());
}

/// Mark row `position` of `file` in `bucket` deleted by a new deletion-vector index file, committed
/// as Java's writers would (an APPEND snapshot carrying the index file).
async fn commit_deletion_vector(table: &Table, bucket: &Bucket, file: &str, position: u64) {
    let mut dv = DeletionVector::new();
    dv.insert(position);
    let (bytes, ranges) = write_deletion_vector_file(&[(file.to_string(), dv)]);
    let index_name = format!("index-test-dv-{}", table.env().uuid());
    table
        .io()
        .write(&format!("index/{index_name}"), bytes.clone())
        .await
        .unwrap();
    let (name, offset, length, cardinality) = ranges[0].clone();
    let mut m = CommitMessage::new(
        bucket.partition.clone(),
        bucket.bucket,
        bucket.total_buckets,
    );
    m.new_index_files.push(IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_string(),
        file_name: index_name,
        file_size: i64::try_from(bytes.len()).unwrap(),
        row_count: 1,
        dv_ranges: Some(vec![DeletionVectorMeta {
            data_file_name: name,
            offset: i32::try_from(offset).unwrap(),
            length: i32::try_from(length).unwrap(),
            cardinality: Some(i64::try_from(cardinality).unwrap()),
        }]),
        external_path: None,
        global_index: None,
    });
    FileStoreCommit::new(table.clone(), "dv")
        .unwrap()
        .commit(vec![m], BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap();
}

/// The deleted positions of each data file of the only bucket, by file name.
async fn deleted_positions(table: &Table) -> BTreeMap<String, Vec<u64>> {
    let snap = table.snapshot_manager().latest().await.unwrap().unwrap();
    let mut out = BTreeMap::new();
    for e in crate::state::live_index_entries(table, &snap)
        .await
        .unwrap()
    {
        let bytes = table
            .io()
            .read(&format!("index/{}", e.index_file.file_name))
            .await
            .unwrap();
        for r in e.index_file.dv_ranges.iter().flatten() {
            let dv = crate::read::deletion_vector::read_deletion_vector(
                &bytes,
                r.offset as u64,
                r.length as u64,
            )
            .unwrap();
            out.insert(r.data_file_name.clone(), dv.iter().collect());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_vectors_hide_older_copies_below_a_middle_level() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[("deletion-vectors.enabled", "true"), ("bucket", "1")],
    )
    .await;
    let base: Vec<(i64, Option<i64>)> = (0..400).map(|id| (id, Some(id))).collect();
    write(&table, &rows("a", &base), INSERT).await;
    assert_eq!(compact(&table, false).await.buckets[0].output_level, 5);
    let top = buckets(&table).await.remove(0).files;
    assert_eq!(top.len(), 1);
    let top = top[0].meta.file_name.clone();

    // level 0: updates of 3 and 17, a new key 450, a delete of 11 (one retract)
    write(
        &table,
        &rows("a", &[(3, Some(300)), (17, Some(1700)), (450, Some(4500))]),
        INSERT,
    )
    .await;
    write(&table, &rows("a", &[(11, None)]), DELETE).await;
    let report = compact(&table, false).await;
    assert_eq!(
        report.buckets[0].output_level, 4,
        "level 0 goes above the max level, not fully"
    );
    let files = buckets(&table).await.remove(0).files;
    let level4: i64 = files
        .iter()
        .filter(|f| f.meta.level == 4)
        .map(|f| f.meta.row_count)
        .sum();
    assert_eq!(
        level4, 3,
        "the delete of 11 is applied by its deletion vector, not kept"
    );
    assert!(
        files
            .iter()
            .any(|f| f.meta.level == 5 && f.meta.file_name == top),
        "the top file is not rewritten"
    );
    assert_eq!(
        deleted_positions(&table).await,
        BTreeMap::from([(top.clone(), vec![3, 11, 17])])
    );
    let mut model: BTreeMap<i64, Option<i64>> = base.into_iter().collect();
    model.extend([(3, Some(300)), (17, Some(1700)), (450, Some(4500))]);
    model.remove(&11);
    let expected = |m: &BTreeMap<i64, Option<i64>>| {
        m.iter()
            .map(|(id, v)| ("a".to_string(), *id, *v))
            .collect::<Vec<Row>>()
    };
    assert_eq!(read(&table, &[]).await, expected(&model));

    // a second unit: 17 lives at level 4 now, 20 still at level 5 (whose vector grows)
    write(
        &table,
        &rows("a", &[(17, Some(17_000)), (20, None)]),
        INSERT,
    )
    .await;
    let report = compact(&table, false).await;
    assert!(report.buckets[0].output_level < 5);
    model.extend([(17, Some(17_000)), (20, None)]);
    assert_eq!(read(&table, &[]).await, expected(&model));
    let deleted = deleted_positions(&table).await;
    assert_eq!(deleted[&top], vec![3, 11, 17, 20]);
    assert_eq!(
        deleted.len(),
        1 + usize::from(report.buckets[0].output_level == 3),
        "{deleted:?}"
    );
    assert_levels_are_runs(&table).await;

    // a full compaction applies every vector and drops the index
    compact(&table, true).await;
    assert_eq!(read(&table, &[]).await, expected(&model));
    assert!(deleted_positions(&table).await.is_empty());
}

#[path = "append_tests.rs"]
mod append_tests;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_tables_with_row_tracking_are_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let fields = vec![DataField::new(0, "id", DataType::new(TypeKind::BigInt))];
    let mut options = Options::new();
    options.set("row-tracking.enabled", "true");
    let schema = TableSchema::new(0, fields, Vec::new(), Vec::new(), options).unwrap();
    let table = table_with_schema(dir.path(), &schema).await;
    assert_eq!(
        Compactor::new(table).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_compact_past_the_trigger_after_their_append() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[
            ("write-only", "false"),
            ("bucket", "1"),
            ("num-sorted-run.compaction-trigger", "3"),
        ],
    )
    .await;
    let mut model = BTreeMap::new();
    for round in 0..7i64 {
        let pairs: Vec<(i64, Option<i64>)> = (round..round + 5)
            .map(|i| (i, Some(i * 10 + round)))
            .collect();
        for (id, v) in &pairs {
            model.insert(*id, *v);
        }
        write(&table, &rows("a", &pairs), INSERT).await;
        let expected: Vec<Row> = model
            .iter()
            .map(|(id, v)| ("a".to_string(), *id, *v))
            .collect();
        assert_eq!(read(&table, &[]).await, expected);
        assert_levels_are_runs(&table).await;
        // never more sorted runs than the trigger after a commit
        let files = &buckets(&table).await[0].files;
        let level0 = files.iter().filter(|f| f.meta.level == 0).count();
        let levels: std::collections::BTreeSet<i32> = files
            .iter()
            .filter(|f| f.meta.level > 0)
            .map(|f| f.meta.level)
            .collect();
        assert!(
            level0 + levels.len() < 3,
            "round {round}: {level0} level-0 files, levels {levels:?}"
        );
    }
    let kinds: Vec<CommitKind> = {
        let sm = table.snapshot_manager();
        let latest = sm.latest_id().await.unwrap().unwrap();
        let mut kinds = Vec::new();
        for id in 1..=latest {
            kinds.push(sm.snapshot(id).await.unwrap().commit_kind);
        }
        kinds
    };
    // the third write reaches the trigger: its APPEND, then its COMPACT
    assert_eq!(
        &kinds[..4],
        &[
            CommitKind::Append,
            CommitKind::Append,
            CommitKind::Append,
            CommitKind::Compact
        ]
    );

    // write-only writers never compact
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[("bucket", "1"), ("num-sorted-run.compaction-trigger", "2")],
    )
    .await;
    for round in 0..4i64 {
        write(&table, &rows("a", &[(round, Some(round))]), INSERT).await;
    }
    assert_eq!(
        buckets(&table).await[0]
            .files
            .iter()
            .filter(|f| f.meta.level == 0)
            .count(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_stall_at_the_stop_trigger_between_commits() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[
            ("write-only", "false"),
            ("bucket", "1"),
            ("write-buffer-size", "1 b"),
            ("num-sorted-run.compaction-trigger", "2"),
            ("num-sorted-run.stop-trigger", "3"),
        ],
    )
    .await;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("dt", ArrowType::Utf8, false),
        Field::new("v", ArrowType::Int64, true),
    ]));
    let mut w = TableWrite::new(table.clone(), inline_compaction)
        .await
        .unwrap();
    w.set_wait_compaction(false);
    let mut model = BTreeMap::new();
    let mut flushed = 0;
    for cycle in 0..3i64 {
        for round in 0..10i64 {
            let ids: Vec<i64> = (round * 3..round * 3 + 8).collect();
            let v = cycle * 100 + round;
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(ids.clone())),
                Arc::new(StringArray::from_iter_values(ids.iter().map(|_| "a"))),
                Arc::new(Int64Array::from(vec![v; ids.len()])),
            ];
            w.write(
                &RecordBatch::try_new(schema.clone(), columns).unwrap(),
                RowKinds::Fixed(INSERT),
            )
            .await
            .unwrap();
            model.extend(ids.iter().map(|id| (*id, Some(v))));
            // every write spills (a 1-byte buffer); the stall keeps the runs bounded
            let runs = w.view_sorted_runs();
            assert!(
                runs.iter().all(|&r| r <= 3),
                "cycle {cycle} round {round}: {runs:?}"
            );
        }
        let messages = w.prepare_commit().await.unwrap();
        flushed += messages.iter().map(|m| m.new_files.len()).sum::<usize>();
        FileStoreCommit::new(table.clone(), "stream")
            .unwrap()
            .commit(messages, cycle, &[])
            .await
            .unwrap();
        let expected: Vec<Row> = model
            .iter()
            .map(|(id, v)| ("a".to_string(), *id, *v))
            .collect();
        assert_eq!(read(&table, &[]).await, expected, "cycle {cycle}");
        assert_levels_are_runs(&table).await;
    }
    assert!(flushed >= 30, "{flushed} level-0 files");
    w.abort().await.unwrap();
}

#[path = "lookup_tests.rs"]
mod lookup_tests;

/// One step of a random history.
#[derive(Debug, Clone)]
enum Step {
    Upsert(Vec<(i64, Option<i64>)>),
    Delete(Vec<i64>),
    Compact { full: bool },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec((0i64..40, prop::option::of(0i64..1000)), 1..25).prop_map(Step::Upsert),
        2 => prop::collection::vec(0i64..40, 1..8).prop_map(Step::Delete),
        2 => any::<bool>().prop_map(|full| Step::Compact { full }),
    ]
}

/// The merge engines of random histories (deletes only with deduplicate).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Engine {
    Deduplicate,
    PartialUpdate,
    /// `sum` of `v`.
    Aggregation,
}

impl Engine {
    fn options(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Engine::Deduplicate => &[],
            Engine::PartialUpdate => &[("merge-engine", "partial-update")],
            Engine::Aggregation => &[
                ("merge-engine", "aggregation"),
                ("fields.v.aggregate-function", "sum"),
            ],
        }
    }

    /// The value of a key after writing `v` over `old` (`None`: a new key).
    fn merged(self, old: Option<Option<i64>>, v: Option<i64>) -> Option<i64> {
        match (self, old) {
            (Engine::Deduplicate, _) | (_, None) => v,
            (Engine::PartialUpdate, Some(old)) => v.or(old),
            (Engine::Aggregation, Some(old)) => match (old, v) {
                (Some(o), Some(n)) => Some(o + n),
                (o, n) => n.or(o),
            },
        }
    }
}

/// The model: each write merges into the key's value as `engine` does; deletes remove it.
fn apply(model: &mut BTreeMap<i64, Option<i64>>, step: &Step, engine: Engine) {
    match step {
        Step::Upsert(rows) => {
            for (id, v) in rows {
                let merged = engine.merged(model.get(id).copied(), *v);
                model.insert(*id, merged);
            }
        }
        Step::Delete(ids) => {
            for id in ids {
                model.remove(id);
            }
        }
        Step::Compact { .. } => {}
    }
}

/// Replay `steps` on a one-bucket table of `engine` with `options` over a compacted base of
/// 300 keys (big enough that later compactions stop at middle levels, above older data, so
/// tables that need lookup compact level 0 with lookup): reads equal the model after every
/// step, or, with `level0_hidden` (deletion-vector tables, whose batch reads skip level 0), the
/// model as of the last compaction, which takes every level-0 file. A minor compaction ends
/// the history.
async fn check_history(
    steps: &[Step],
    engine: Engine,
    options: &[(&str, &str)],
    level0_hidden: bool,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options.to_vec();
    options.extend_from_slice(engine.options());
    let table = create_table(dir.path(), &options).await;
    let base: Vec<(i64, Option<i64>)> = (0..300).map(|id| (id, Some(id))).collect();
    write(&table, &rows("a", &base), INSERT).await;
    compact(&table, true).await;
    let mut model: BTreeMap<i64, Option<i64>> = base.into_iter().collect();
    let mut visible = model.clone();
    // a last minor compaction takes whatever level 0 is left
    for step in steps.iter().chain([&Step::Compact { full: false }]) {
        match step {
            Step::Upsert(r) => {
                // unique keys per commit keep the model's "last wins" unambiguous
                let mut seen = BTreeMap::new();
                for (id, v) in r {
                    seen.insert(*id, *v);
                }
                let batch: Vec<(i64, Option<i64>)> = seen.into_iter().collect();
                apply(&mut model, &Step::Upsert(batch.clone()), engine);
                write(&table, &rows("a", &batch), INSERT).await
            }
            Step::Delete(_) if engine != Engine::Deduplicate => continue,
            Step::Delete(ids) => {
                apply(&mut model, step, engine);
                let mut ids = ids.clone();
                ids.sort_unstable();
                ids.dedup();
                let batch: Vec<(i64, Option<i64>)> = ids.into_iter().map(|i| (i, None)).collect();
                write(&table, &rows("a", &batch), DELETE).await
            }
            Step::Compact { full } => {
                let before = read(&table, &[]).await;
                compact(&table, *full).await;
                if level0_hidden {
                    visible = model.clone();
                } else {
                    assert_eq!(read(&table, &[]).await, before);
                }
                assert_levels_are_runs(&table).await;
            }
        }
        let shown = if level0_hidden { &visible } else { &model };
        let expected: Vec<Row> = shown
            .iter()
            .map(|(id, v)| ("a".to_string(), *id, *v))
            .collect();
        assert_eq!(read(&table, &[]).await, expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_histories_read_the_same_after_each_compaction(
        steps in prop::collection::vec(step(), 1..14),
        trigger in 2usize..5,
        engine in prop_oneof![Just(Engine::Deduplicate), Just(Engine::PartialUpdate), Just(Engine::Aggregation)],
        deletion_vectors in any::<bool>(),
        lookup_changelog in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let trigger = trigger.to_string();
        let dv = if deletion_vectors { "true" } else { "false" };
        let producer = if lookup_changelog { "lookup" } else { "none" };
        let options = [
            ("num-sorted-run.compaction-trigger", trigger.as_str()),
            ("bucket", "1"),
            ("deletion-vectors.enabled", dv),
            ("changelog-producer", producer),
        ];
        runtime.block_on(check_history(&steps, engine, &options, deletion_vectors));
    }
}

#[path = "plan_tests.rs"]
mod plan_tests;
