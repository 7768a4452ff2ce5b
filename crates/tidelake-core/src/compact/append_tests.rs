//! Append-table compaction ([`super::super::append`]): file counts as Java's rules pick them,
//! rows and their order kept, deletion vectors applied and their index dropped; deletion
//! vectors of row-level changes (positions read with the rows) merged with existing ones.

use tidelake_spec::manifest::FileSource;

use super::*;
use crate::scan::{plan_scan, ScanRequest};

/// An append table `id BIGINT NOT NULL, dt STRING NOT NULL, v BIGINT` partitioned by `dt`
/// with `bucket` (`-1`: unaware) and `options`, written by `commits` one-row-batch commits of
/// 3 rows each into partition `a` (one file per commit and bucket).
async fn append_table(dir: &Path, bucket: &str, options: &[(&str, &str)], commits: i64) -> Table {
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(1, "dt", DataType::string().with_nullable(false)),
        DataField::new(2, "v", DataType::new(TypeKind::BigInt)),
    ];
    let mut opts = Options::new();
    opts.set("bucket", bucket);
    opts.set("write-only", "true");
    if bucket != "-1" {
        opts.set("bucket-key", "id");
    }
    for (k, v) in options {
        opts.set(*k, *v);
    }
    let schema = TableSchema::new(0, fields, vec!["dt".into()], Vec::new(), opts).unwrap();
    let table = table_with_schema(dir, &schema).await;
    for c in 0..commits {
        let rows: Vec<Row> = (0..3)
            .map(|i| ("a".to_string(), c * 3 + i, Some(c)))
            .collect();
        write(&table, &rows, INSERT).await;
    }
    table
}

/// The name of the bucket's first written file.
fn oldest_file(bucket: &Bucket) -> String {
    let oldest = bucket
        .files
        .iter()
        .min_by_key(|f| f.meta.min_sequence_number);
    oldest.unwrap().meta.file_name.clone()
}

fn file_count(buckets: &[Bucket]) -> usize {
    buckets.iter().map(|b| b.files.len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucketed_append_compacts_a_window_of_min_file_num_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = append_table(dir.path(), "1", &[], 7).await;
    let before = read_in_order(&table, &[]).await;
    assert_eq!(file_count(&buckets(&table).await), 7);
    // compaction.min.file-num (5): the five oldest files become one, the two newest stay
    let report = compact(&table, false).await;
    assert_eq!(
        (
            report.buckets[0].files_before,
            report.buckets[0].files_after
        ),
        (5, 1)
    );
    assert_eq!(file_count(&buckets(&table).await), 3);
    assert_eq!(
        read_in_order(&table, &[]).await,
        before,
        "rows and their order kept"
    );
    // three files left: below the window, nothing to do
    assert_eq!(compact(&table, false).await.snapshot_id, None);
    // full: more small files than large ones, at least 3
    compact(&table, true)
        .await
        .snapshot_id
        .expect("full compaction");
    let files = buckets(&table).await;
    assert_eq!(file_count(&files), 1);
    assert!(files[0]
        .files
        .iter()
        .all(|f| f.meta.level == 0 && f.meta.file_source == Some(FileSource::Compact)));
    assert_eq!(files[0].files[0].meta.min_sequence_number, 0);
    assert_eq!(read_in_order(&table, &[]).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucketed_append_full_skips_leading_large_files() {
    let dir = tempfile::tempdir().unwrap();
    // every file is "large" against a 1-byte target: nothing to gain
    let table = append_table(dir.path(), "1", &[("target-file-size", "1 b")], 4).await;
    assert_eq!(compact(&table, true).await.snapshot_id, None);
    assert_eq!(
        compact(&table, false).await.snapshot_id,
        None,
        "windows shrink below min.file-num"
    );
    assert_eq!(file_count(&buckets(&table).await), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unaware_append_packs_small_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = append_table(dir.path(), "-1", &[], 4).await;
    let before = read(&table, &[]).await;
    // four small files: fewer than compaction.min.file-num, and far from 2 x target size
    assert_eq!(compact(&table, false).await.snapshot_id, None);
    write(&table, &rows("a", &[(100, Some(1))]), INSERT).await;
    let before_5 = read(&table, &[]).await;
    assert_eq!(before_5.len(), before.len() + 1);
    compact(&table, false)
        .await
        .snapshot_id
        .expect("five small files compact");
    assert_eq!(file_count(&buckets(&table).await), 1);
    assert_eq!(read(&table, &[]).await, before_5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_compaction_applies_deletion_vectors_and_drops_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let table = append_table(dir.path(), "1", &[("deletion-vectors.enabled", "true")], 2).await;
    // delete row 1 of the oldest file, as Java's append DELETE would
    let bucket = buckets(&table).await.remove(0);
    let file = oldest_file(&bucket);
    commit_deletion_vector(&table, &bucket, &file, 1).await;
    let before = read_in_order(&table, &[]).await;
    assert_eq!(before.len(), 5, "one of six rows deleted");
    // with deletion vectors a full compaction always runs (Java), here on both files
    let report = compact(&table, true).await;
    assert_eq!(report.buckets[0].files_before, 2);
    assert_eq!(read_in_order(&table, &[]).await, before);
    let after = buckets(&table).await.remove(0);
    assert!(after.dv_index.is_empty(), "the index file is dropped");
    assert_eq!(
        after.files.iter().map(|f| f.meta.row_count).sum::<i64>(),
        5,
        "deleted rows are gone from the files"
    );
}

#[tokio::test]
async fn dml_deletion_vectors_merge_with_existing_ones_then_compact_away() {
    use crate::read::split_read::{FILE_INDEX_COLUMN, ROW_POSITION_COLUMN};
    use crate::write::deletion::deletion_messages;

    let dir = tempfile::tempdir().unwrap();
    let table = append_table(dir.path(), "1", &[("deletion-vectors.enabled", "true")], 2).await;
    let bucket = buckets(&table).await.remove(0);
    let oldest = oldest_file(&bucket);
    commit_deletion_vector(&table, &bucket, &oldest, 1).await; // row id 1 (v = 0)
    let plan = plan_scan(&table, &ScanRequest::default()).await.unwrap();
    let split = plan.splits[0].clone();
    let ctx = Arc::new(
        ReadContext::of(table.clone(), &plan.schema)
            .batch_size(2)
            .build()
            .unwrap(),
    );
    let batches: Vec<RecordBatch> = ctx
        .read_positioned(&split)
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    // (file, position) of every live row with v = 0: the oldest file's rows 0 and 2
    let mut places = Vec::new();
    for b in &batches {
        let v = b
            .column_by_name("v")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let file = b.column_by_name(FILE_INDEX_COLUMN).unwrap();
        let file = file
            .as_any()
            .downcast_ref::<arrow_array::Int32Array>()
            .unwrap();
        let pos = b.column_by_name(ROW_POSITION_COLUMN).unwrap();
        let pos = pos.as_any().downcast_ref::<Int64Array>().unwrap();
        for i in 0..b.num_rows() {
            if v.value(i) == 0 {
                places.push((file.value(i) as usize, pos.value(i) as u64));
            }
        }
    }
    let index = places[0].0;
    assert_eq!(split.files[index].file_name, oldest);
    assert_eq!(
        places,
        vec![(index, 0), (index, 2)],
        "the deleted row 1 is not read"
    );

    let too_far = deletion_messages(&table, vec![(split.clone(), vec![(index, vec![3])])]).await;
    assert!(
        matches!(too_far, Err(crate::Error::Invalid(_))),
        "{too_far:?}"
    );
    let messages = deletion_messages(&table, vec![(split.clone(), vec![(index, vec![0, 2])])])
        .await
        .unwrap();
    assert_eq!(messages.len(), 1);
    let m = &messages[0];
    assert_eq!(
        m.deleted_index_files.len(),
        1,
        "the bucket's index file is replaced"
    );
    let ranges = m.new_index_files[0].dv_ranges.as_ref().unwrap();
    assert_eq!(ranges.len(), 1);
    assert_eq!(
        ranges[0].cardinality,
        Some(3),
        "the existing vector is merged"
    );
    FileStoreCommit::new(table.clone(), "dml")
        .unwrap()
        .commit(messages, BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap();
    let rows = read_in_order(&table, &[]).await;
    assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), vec![3, 4, 5]);
    compact(&table, true).await;
    assert_eq!(read_in_order(&table, &[]).await, rows);
}

#[tokio::test]
async fn rewritten_files_take_their_deletion_vectors_with_them() {
    use crate::write::deletion::deletion_messages;
    use crate::write::rewrite::removal_messages;

    let dir = tempfile::tempdir().unwrap();
    let table = append_table(dir.path(), "1", &[("deletion-vectors.enabled", "true")], 3).await;
    let plan = plan_scan(&table, &ScanRequest::default()).await.unwrap();
    let mut split = plan.splits[0].clone();
    assert_eq!(split.files.len(), 3);
    // in commit order: file c holds v = c
    split.files.sort_by_key(|f| f.min_sequence_number);
    // one deleted row in each of the first two files: one index file of the bucket holds both
    let marks = vec![(split.clone(), vec![(0, vec![1]), (1, vec![0])])];
    let messages = deletion_messages(&table, marks).await.unwrap();
    FileStoreCommit::new(table.clone(), "dml")
        .unwrap()
        .commit(messages, BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap();
    let plan = plan_scan(&table, &ScanRequest::default()).await.unwrap();
    let mut gone = plan.splits[0].clone();
    gone.files.sort_by_key(|f| f.min_sequence_number);
    let kept = gone.files[1].file_name.clone();
    gone.files.truncate(1);
    assert!(gone.files[0].deletion.is_some());
    let before: Vec<Row> = read_in_order(&table, &[]).await;

    // the first file removed (its surviving rows would be written again by the caller)
    let removal = removal_messages(&table, std::slice::from_ref(&gone))
        .await
        .unwrap();
    assert_eq!(removal[0].deleted_index_files.len(), 1, "{removal:?}");
    FileStoreCommit::new(table.clone(), "rewrite")
        .unwrap()
        .validate_reads()
        .commit(removal, BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap();
    let after = buckets(&table).await.remove(0);
    let named: Vec<&str> = after
        .dv_index
        .iter()
        .flat_map(|i| i.dv_ranges.iter().flatten())
        .map(|r| r.data_file_name.as_str())
        .collect();
    assert_eq!(
        named,
        vec![kept.as_str()],
        "only the staying file keeps its vector"
    );
    let expected: Vec<Row> = before.into_iter().filter(|r| r.2 != Some(0)).collect();
    assert_eq!(read_in_order(&table, &[]).await, expected);

    // the same removal again, from the same read: its index file replaces one that is gone
    let again = removal_messages(&table, &[gone]).await.unwrap();
    let refused = FileStoreCommit::new(table.clone(), "rewrite-again")
        .unwrap()
        .validate_reads()
        .commit(again, BATCH_COMMIT_IDENTIFIER, &[])
        .await;
    assert!(refused.is_err(), "{refused:?}");
}

/// Incremental clustering ([`super::super::cluster`]): the picked runs' rows sorted by the
/// clustering column into the output level; with a partition filter, an idle partition left
/// out (a history partition) is clustered fully too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_clustering_sorts_picked_runs_into_the_output_level() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        ("clustering.incremental", "true"),
        ("clustering.columns", "v"),
        ("num-sorted-run.compaction-trigger", "3"),
        ("clustering.history-partition.idle-to-full-sort", "1 ms"),
    ];
    let table = append_table(dir.path(), "-1", &options, 0).await;
    for c in 0..4i64 {
        let pairs: Vec<(i64, Option<i64>)> =
            (0..3).map(|i| (c * 3 + i, Some(100 - c * 3 - i))).collect();
        write(&table, &rows("a", &pairs), INSERT).await;
    }
    let before = read(&table, &[]).await;
    // four level-0 runs, trigger 3: size amplification takes all into the max level (3)
    let report = compact(&table, false).await;
    assert_eq!(report.buckets.len(), 1);
    assert_eq!(report.buckets[0].output_level, 3);
    assert_eq!(read(&table, &[]).await, before);
    let values: Vec<Option<i64>> = read_in_order(&table, &[])
        .await
        .iter()
        .map(|r| r.2)
        .collect();
    let mut sorted = values.clone();
    sorted.sort_unstable();
    assert_eq!(values, sorted, "the clustered file holds the rows by v");
    // one run: nothing more to cluster
    assert!(compact(&table, false).await.snapshot_id.is_none());
    // dt=b, idle since its writes, is clustered fully when only dt=a is selected
    write(&table, &rows("b", &[(1, Some(2)), (2, Some(1))]), INSERT).await;
    write(&table, &rows("b", &[(3, Some(0))]), INSERT).await;
    table
        .env()
        .sleep(std::time::Duration::from_millis(20))
        .await;
    let only_a = crate::scan::predicate::Predicate::from_json(
        &serde_json::json!({"op": "eq", "field": "dt", "value": "a"}),
    )
    .unwrap();
    let report = Compactor::new(table.clone())
        .unwrap()
        .compact(&CompactRequest {
            full: false,
            partitions: Some(only_a),
        })
        .await
        .unwrap();
    assert_eq!(report.buckets.len(), 1);
    assert_eq!(
        report.buckets[0].partition,
        vec![("dt".to_string(), "b".to_string())]
    );
    assert!(buckets(&table)
        .await
        .iter()
        .all(|b| b.files.iter().all(|f| f.meta.level == 3)));
}
