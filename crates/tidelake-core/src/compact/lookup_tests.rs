//! Lookup compaction of level 0 above untouched deeper levels, for every merge engine: older
//! copies merged, marked or diffed; deeper files outside the keys sought not read.

use super::*;

/// Commit `file` of the only bucket again at `level` (as a compaction upgrade).
async fn move_to_level(table: &Table, file: &str, level: i32) {
    let b = buckets(table).await.remove(0);
    let meta = b
        .files
        .iter()
        .find(|f| f.meta.file_name == file)
        .unwrap()
        .meta
        .clone();
    let mut m = CommitMessage::new(b.partition.clone(), b.bucket, b.total_buckets);
    m.compact_after = vec![DataFileMeta {
        level,
        ..meta.clone()
    }];
    m.compact_before = vec![meta];
    FileStoreCommit::new(table.clone(), "mover")
        .unwrap()
        .commit(vec![m], BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap();
}

/// The only level-0 file of the only bucket.
async fn level0_file(table: &Table) -> String {
    let files: Vec<String> = buckets(table).await[0]
        .files
        .iter()
        .filter(|f| f.meta.level == 0)
        .map(|f| f.meta.file_name.clone())
        .collect();
    assert_eq!(files.len(), 1);
    files[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_tables_merge_level0_with_only_the_newest_higher_record() {
    // Java's lookup compaction leaves complete values at shallow levels above stale copies:
    // level 5 holds sum 5, level 4 the complete sum 8, level 0 a new +1. Java's
    // LookupMergeFunction reads 8 + 1 = 9 (a plain merge would say 14).
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[
            ("bucket", "1"),
            ("merge-engine", "aggregation"),
            ("fields.v.aggregate-function", "sum"),
            ("changelog-producer", "lookup"),
        ],
    )
    .await;
    for (v, level) in [(5, Some(5)), (8, Some(4)), (1, None)] {
        write(&table, &rows("a", &[(1, Some(v))]), INSERT).await;
        if let Some(level) = level {
            let name = level0_file(&table).await;
            move_to_level(&table, &name, level).await;
        }
    }
    assert_eq!(read(&table, &[]).await, rows("a", &[(1, Some(9))]));
    let before = table.snapshot_manager().latest_id().await.unwrap().unwrap();
    compact(&table, true).await;
    assert_eq!(read(&table, &[]).await, rows("a", &[(1, Some(9))]));
    // the changelog diffs against the newest higher record, 8
    let changes: Vec<(String, Option<i64>)> = change_rows(&table, before)
        .await
        .into_iter()
        .map(|(k, _, v)| (k, v))
        .collect();
    assert_eq!(
        changes,
        vec![("-U".to_string(), Some(8)), ("+U".to_string(), Some(9))]
    );
}

/// `(_row_kind, id, v)` of the changes committed after snapshot `start`.
async fn change_rows(table: &Table, start: i64) -> Vec<(String, i64, Option<i64>)> {
    let plan = plan_changes(table, start, None, None).await.unwrap();
    let ctx = Arc::new(
        ReadContext::of(table.clone(), &plan.schema)
            .batch_size(7)
            .with_row_kind(true)
            .build()
            .unwrap(),
    );
    let batches: Vec<RecordBatch> = read_splits(ctx, plan.splits, None)
        .try_collect()
        .await
        .unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let kind = b
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone();
            let (id, v) = (int64_column(b, "id"), int64_column(b, "v"));
            (0..b.num_rows()).map(move |i| {
                (
                    kind.value(i).to_string(),
                    id.value(i),
                    v.is_valid(i).then(|| v.value(i)),
                )
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_row_compacts_with_lookup_into_deeper_levels() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[
            ("bucket", "1"),
            ("merge-engine", "first-row"),
            ("changelog-producer", "lookup"),
        ],
    )
    .await;
    let base: Vec<Row> = (0..200).map(|id| ("a".to_string(), id, Some(1))).collect();
    write(&table, &base, INSERT).await;
    compact(&table, true).await;
    let start = table.snapshot_manager().latest_id().await.unwrap().unwrap();
    write(
        &table,
        &rows(
            "a",
            &[
                (198, Some(2)),
                (199, Some(2)),
                (200, Some(2)),
                (201, Some(2)),
            ],
        ),
        INSERT,
    )
    .await;
    let report = compact(&table, false).await;
    // level 0 goes to level 4 above the big level-5 run, which is looked up, not rewritten
    assert_eq!(report.buckets[0].output_level, 4);
    let files = buckets(&table).await.remove(0).files;
    let level4: i64 = files
        .iter()
        .filter(|f| f.meta.level == 4)
        .map(|f| f.meta.row_count)
        .sum();
    assert_eq!(level4, 2, "the new records of keys 198 and 199 are dropped");
    assert_eq!(files.iter().filter(|f| f.meta.level == 5).count(), 1);
    let mut expected = base.clone();
    expected.extend(rows("a", &[(200, Some(2)), (201, Some(2))]));
    assert_eq!(read(&table, &[]).await, expected);
    assert_eq!(
        change_rows(&table, start).await,
        vec![
            ("+I".to_string(), 200, Some(2)),
            ("+I".to_string(), 201, Some(2))
        ]
    );
}

/// A one-bucket table with `options` holding keys 0..200 (`v = id`) compacted to level 5,
/// then `update` written and compacted minor. The unit goes to level 4 and looks the level-5
/// file up instead of rewriting it (its name survives; on deletion-vector tables the
/// positions of the updated keys are marked in its vector); reads equal the base with
/// `merged` applied, after the unit and after a full compaction. Returns the table (and its
/// directory) and the snapshot before the update.
async fn check_lookup_unit(
    options: &[(&str, &str)],
    update: &[(i64, Option<i64>)],
    merged: &[(i64, Option<i64>)],
) -> (tempfile::TempDir, Table, i64) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = vec![("bucket", "1")];
    opts.extend_from_slice(options);
    let table = create_table(dir.path(), &opts).await;
    let base: Vec<(i64, Option<i64>)> = (0..200).map(|id| (id, Some(id))).collect();
    write(&table, &rows("a", &base), INSERT).await;
    compact(&table, true).await;
    let deep = buckets(&table).await.remove(0).files;
    assert_eq!(deep.len(), 1);
    let deep = deep[0].meta.file_name.clone();
    let start = table.snapshot_manager().latest_id().await.unwrap().unwrap();
    write(&table, &rows("a", update), INSERT).await;
    let report = compact(&table, false).await;
    assert_eq!(
        report.buckets[0].output_level, 4,
        "a minor unit above the max level"
    );
    let files = buckets(&table).await.remove(0).files;
    assert!(
        files
            .iter()
            .any(|f| f.meta.level == 5 && f.meta.file_name == deep),
        "the deeper file is not rewritten"
    );
    assert_eq!(files.iter().filter(|f| f.meta.level == 5).count(), 1);
    if options.contains(&("deletion-vectors.enabled", "true")) {
        let old: Vec<u64> = update
            .iter()
            .filter(|(id, _)| (0..200).contains(id))
            .map(|(id, _)| *id as u64)
            .collect();
        assert_eq!(
            deleted_positions(&table).await,
            BTreeMap::from([(deep, old)])
        );
    }
    let mut model: BTreeMap<i64, Option<i64>> = base.into_iter().collect();
    model.extend(merged.iter().copied());
    let expected: Vec<Row> = model
        .iter()
        .map(|(id, v)| ("a".to_string(), *id, *v))
        .collect();
    assert_eq!(read(&table, &[]).await, expected);
    compact(&table, true).await;
    assert_eq!(read(&table, &[]).await, expected);
    (dir, table, start)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_update_units_fill_nulls_from_the_deeper_copy() {
    let options = [
        ("merge-engine", "partial-update"),
        ("deletion-vectors.enabled", "true"),
    ];
    check_lookup_unit(
        &options,
        &[(1, None), (2, Some(20)), (500, Some(5))],
        &[(2, Some(20)), (500, Some(5))],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregation_units_accumulate_onto_the_deeper_copy() {
    let options = [
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "sum"),
        ("deletion-vectors.enabled", "true"),
    ];
    check_lookup_unit(
        &options,
        &[(2, Some(5)), (7, None), (500, Some(5))],
        &[(2, Some(7)), (500, Some(5))],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequence_field_units_compare_with_the_deeper_copy() {
    // v is the sequence field: the older copy of 2 (v = 2) beats the new write v = 1
    let options = [
        ("sequence.field", "v"),
        ("deletion-vectors.enabled", "true"),
    ];
    check_lookup_unit(
        &options,
        &[(2, Some(1)), (3, Some(30)), (500, Some(5))],
        &[(3, Some(30)), (500, Some(5))],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_changelog_units_diff_against_the_deeper_copy() {
    let options = [
        ("merge-engine", "aggregation"),
        ("fields.v.aggregate-function", "sum"),
        ("changelog-producer", "lookup"),
    ];
    let (_dir, table, start) = check_lookup_unit(
        &options,
        &[(2, Some(5)), (500, Some(5))],
        &[(2, Some(7)), (500, Some(5))],
    )
    .await;
    let changes: Vec<(String, i64, Option<i64>)> = change_rows(&table, start).await;
    let row = |k: &str, id, v| (k.to_string(), id, Some(v));
    assert_eq!(
        changes,
        vec![row("-U", 2, 2), row("+U", 2, 7), row("+I", 500, 5)],
        "the minor unit's changelog"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_skips_deeper_files_outside_the_keys_sought() {
    // level 5 holds three files by key range; keys sought only in the middle one
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        &[("bucket", "1"), ("deletion-vectors.enabled", "true")],
    )
    .await;
    for range in [0..100, 100..200, 200..300] {
        let base: Vec<(i64, Option<i64>)> = range.map(|id| (id, Some(id))).collect();
        write(&table, &rows("a", &base), INSERT).await;
        let name = level0_file(&table).await;
        move_to_level(&table, &name, 5).await;
    }
    let mut deeper = buckets(&table).await.remove(0).files;
    deeper.sort_by_key(|f| key_of(&f.meta.min_key));
    // files that cannot match are never opened: a missing one would fail the lookup
    for i in [0, 2] {
        deeper[i].path = format!("{}.missing", deeper[i].path);
    }
    let schema = table.schema().clone();
    let reader = Arc::new(
        ReadContext::of(table.clone(), &schema)
            .batch_size(7)
            .build()
            .unwrap(),
    );
    let key_types = vec![DataType::not_null(TypeKind::BigInt)];
    let mut lookup = lookup::DeeperLookup::new(reader, vec![0], key_types, &deeper, true).unwrap();
    let sought = |ids: &[i64]| {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("id", ArrowType::Int64, false),
            Field::new("dt", ArrowType::Utf8, false),
            Field::new("v", ArrowType::Int64, true),
        ]));
        let n = ids.len();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![1000; n])),
            Arc::new(arrow_array::Int8Array::from(vec![0; n])),
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(vec!["a"; n])),
            Arc::new(Int64Array::from(vec![0; n])),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    };
    let found = lookup.lookup(&sought(&[120, 150])).await.unwrap().unwrap();
    let ids = found
        .column(2)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(ids.values().to_vec(), vec![120, 150]);
    assert!(lookup.lookup(&sought(&[199])).await.unwrap().is_some());
    assert_eq!(lookup.opened(), 1);
    let marked: Vec<(String, Vec<u64>)> = lookup
        .into_marked()
        .into_iter()
        .map(|(f, dv)| (f, dv.iter().collect()))
        .collect();
    assert_eq!(
        marked,
        vec![(deeper[1].meta.file_name.clone(), vec![20, 50, 99])]
    );
}
