//! Storage requests per operation, counted by the instrumented store wrapper over a local
//! directory (each counted operation is one request on S3-like stores: GET, HEAD, PUT, DELETE,
//! one LIST page). The bounds below are what `benches/README.md` reports; a change that makes
//! commits or planning chattier on object stores fails here.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use tidelake_core::api::commit::FileStoreCommit;
use tidelake_core::api::ops::{PlannedRead, Read};
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{FileIO, Table};
use tidelake_core::io::instrumented::{InstrumentedStore, OpKind};

/// Bounds (see `benches/README.md`): a commit issues at most this many requests plus one GET
/// per manifest of its base (which `manifest.merge-min-count` keeps small); opening the table
/// and planning the latest snapshot at most this many plus one GET per manifest. Two of a
/// commit's GETs verify that its base snapshot is unchanged before and after the new snapshot
/// is created (a snapshot id is never used twice, even when expiry races the commit).
const COMMIT_REQUESTS: u64 = 22;
const PLAN_REQUESTS: u64 = 8;
/// Reading a (small) Parquet data file: its size (HEAD), footer with offset index, the pages.
const FILE_READ_REQUESTS: u64 = 3;

/// `k` (the key), `dt`, `v`.
fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("dt", DataType::Utf8, false),
        Field::new("v", DataType::Int64, true),
    ]))
}

fn batch(schema: &Arc<Schema>, commit: i64) -> RecordBatch {
    let keys: Vec<i64> = (0..100).map(|i| i + commit * 50).collect();
    let days: Vec<&str> = keys
        .iter()
        .map(|k| if k % 2 == 0 { "a" } else { "b" })
        .collect();
    RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(keys.clone())),
            Arc::new(StringArray::from(days)),
            Arc::new(Int64Array::from(vec![commit; keys.len()])),
        ],
    )
    .unwrap()
}

/// The number of rows a planned read gives.
async fn rows_of(read: PlannedRead) -> usize {
    let batches = read.reader.collect(read.plan.splits, None).await.unwrap();
    batches.iter().map(|b| b.num_rows()).sum()
}

fn counts(store: &InstrumentedStore) -> String {
    store
        .counts()
        .by_kind()
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn requests_per_commit_and_scan_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::from_absolute_path(dir.path()).unwrap();
    let schema = schema();
    let spec = TableSpec {
        primary_keys: vec!["k".into(), "dt".into()],
        partition_keys: vec!["dt".into()],
        bucket: Some(2),
        options: vec![("write-only".into(), "true".into())],
        comment: None,
    };
    let setup = FileIO::from_store(Arc::new(LocalFileSystem::new()), root.clone(), "local");
    create_table(setup, &schema, &spec).await.unwrap();

    let mut report = Vec::new();
    let mut per_commit = Vec::new();
    for commit in 1..=5i64 {
        let store = InstrumentedStore::counting(Arc::new(LocalFileSystem::new()));
        let io = FileIO::from_store(Arc::new(store.clone()), root.clone(), "counted");
        let table = Table::open_io(io).await.unwrap();
        let mut write = table.new_write().build().await.unwrap();
        write
            .write(&batch(&schema, commit), RowKinds::Fixed(0))
            .await
            .unwrap();
        let messages = write.prepare_commit().await.unwrap();
        let before = store.counts().by_kind();
        let ids = FileStoreCommit::new(table, "counter")
            .unwrap()
            .commit(messages, commit, &[])
            .await
            .unwrap();
        assert_eq!(ids, vec![commit]);
        let delta: Vec<String> = store
            .counts()
            .by_kind()
            .iter()
            .zip(&before)
            .map(|((k, n), (_, b))| format!("{k}={}", n - b))
            .collect();
        let commit_requests = store.counts().total() - before.iter().map(|(_, n)| n).sum::<u64>();
        per_commit.push(commit_requests);
        report.push(format!(
            "commit {commit}: open + write + commit {} ({}); the commit alone {commit_requests} ({})",
            store.counts().total(),
            counts(&store),
            delta.join(" ")
        ));
    }

    println!("{}", report.join("\n"));
    // Commit i has i - 1 base manifests (one delta manifest per earlier commit, none merged yet).
    for (i, n) in per_commit.iter().enumerate() {
        assert!(*n <= COMMIT_REQUESTS + i as u64, "{report:?}");
    }

    let store = InstrumentedStore::counting(Arc::new(LocalFileSystem::new()));
    let io = FileIO::from_store(Arc::new(store.clone()), root.clone(), "counted");
    let table = Table::open_io(io).await.unwrap();
    let read = Read::new(&table).plan().await.unwrap();
    let plan = &read.plan;
    assert_eq!(plan.splits.len(), 4);
    report.push(format!("open + plan after 5 commits: {}", counts(&store)));
    println!("{}", report.last().unwrap());
    assert_eq!(
        store.counts().get(OpKind::List),
        1,
        "only the schema directory is listed: {report:?}"
    );
    assert!(store.counts().total() <= PLAN_REQUESTS + 5, "{report:?}");

    let before = store.counts().total();
    let files: u64 = plan.splits.iter().map(|s| s.files.len() as u64).sum();
    let rows = rows_of(read).await;
    assert_eq!(rows, 300, "keys 0..300 after 5 overlapping commits");
    let reads = store.counts().total() - before;
    println!("read {files} data files: {reads} requests");
    assert!(
        reads <= FILE_READ_REQUESTS * files,
        "{reads} requests for {files} files: {report:?}"
    );
}

/// Batch reads of a deletion-vector table hide level 0, so planning skips the manifests that
/// hold level-0 files only (their `_MAX_LEVEL` is 0): after three appends, a full compaction and
/// one more append, only the compaction's manifest is read.
#[tokio::test]
async fn planning_skips_manifests_of_level0_files_where_reads_hide_them() {
    use tidelake_core::api::compact::{CompactRequest, Compactor};

    let dir = tempfile::tempdir().unwrap();
    let root = Path::from_absolute_path(dir.path()).unwrap();
    let schema = schema();
    let spec = TableSpec {
        primary_keys: vec!["k".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: vec![
            ("deletion-vectors.enabled".into(), "true".into()),
            ("write-only".into(), "true".into()),
        ],
        comment: None,
    };
    let io = FileIO::from_store(Arc::new(LocalFileSystem::new()), root.clone(), "local");
    create_table(io.clone(), &schema, &spec).await.unwrap();
    let table = Table::open_io(io.clone()).await.unwrap();
    let append = |commit: i64| {
        let (table, schema) = (table.clone(), schema.clone());
        async move {
            let mut write = table.new_write().build().await.unwrap();
            write
                .write(&batch(&schema, commit), RowKinds::Fixed(0))
                .await
                .unwrap();
            let messages = write.prepare_commit().await.unwrap();
            FileStoreCommit::new(table, "appender")
                .unwrap()
                .commit(messages, commit, &[])
                .await
                .unwrap();
        }
    };
    for commit in 1..=3 {
        append(commit).await;
    }
    let compactor = Compactor::new(Table::open_io(io.clone()).await.unwrap()).unwrap();
    compactor
        .compact(&CompactRequest {
            full: true,
            ..CompactRequest::default()
        })
        .await
        .unwrap();
    append(4).await;

    let store = InstrumentedStore::recording(Arc::new(LocalFileSystem::new()));
    let table = Table::open_io(FileIO::from_store(
        Arc::new(store.clone()),
        root,
        "recorded",
    ))
    .await
    .unwrap();
    let read = Read::new(&table).plan().await.unwrap();
    let plan = &read.plan;
    let manifests: Vec<String> = store
        .requests()
        .into_iter()
        .filter(|(kind, path)| {
            *kind == OpKind::Get
                && path.contains("/manifest/manifest-")
                && !path.contains("manifest-list")
        })
        .map(|(_, path)| path)
        .collect();
    assert_eq!(
        manifests.len(),
        1,
        "only the compaction's manifest is read: {manifests:?}"
    );
    assert!(plan
        .splits
        .iter()
        .flat_map(|s| &s.files)
        .all(|f| f.level > 0));
    let rows = rows_of(read).await;
    assert_eq!(
        rows, 200,
        "keys 50..250 as compacted after 3 appends; the 4th is level 0, unread"
    );
}
