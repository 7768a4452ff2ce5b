//! Tests of the commit path on temporary tables with fabricated data-file metadata (commit
//! logic never opens data files), plus one end-to-end test with a real Parquet file.
//!
//! Shared helpers: table creation from a schema, file/partition/key fabrication, reading back
//! the live file set through `plan_scan` and the raw metadata files.

mod basic;
mod concurrency;
mod conflicts;
mod deterministic;
mod end_to_end;
mod manifests;
mod overwrite;
mod safety;

use std::collections::BTreeSet;
use std::path::Path;

use tidelake_spec::binary_row::encode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{
    read_manifest, read_manifest_list, DataFileMeta, FileSource, ManifestEntry, ManifestFileMeta,
    SimpleStats, EMPTY_ROW,
};
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::Snapshot;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::commit::{CommitMessage, FileStoreCommit};
use crate::io::FileIO;
use crate::scan::{plan_scan, ScanRequest};
use crate::table::Table;
use crate::test_support::table_with_schema;

/// Options that keep retries fast in tests.
const FAST_RETRIES: [(&str, &str); 3] = [
    ("commit.min-retry-wait", "1 ms"),
    ("commit.max-retry-wait", "20 ms"),
    ("commit.max-retries", "200"),
];

fn bigint() -> DataType {
    DataType::new(TypeKind::BigInt)
}

/// Create a table at `dir`: columns `id BIGINT NOT NULL, dt STRING, v BIGINT`, partitioned by
/// `dt` when `partitioned`, primary key `(id[, dt])` when `pk`, plus `options`.
async fn create_table(dir: &Path, partitioned: bool, pk: bool, options: &[(&str, &str)]) -> Table {
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(
            1,
            "dt",
            DataType::string().with_nullable(!pk || !partitioned),
        ),
        DataField::new(2, "v", bigint()),
    ];
    let partition_keys: Vec<String> = if partitioned {
        vec!["dt".into()]
    } else {
        Vec::new()
    };
    let primary_keys: Vec<String> = match (pk, partitioned) {
        (false, _) => Vec::new(),
        (true, false) => vec!["id".into()],
        (true, true) => vec!["id".into(), "dt".into()],
    };
    let mut opts = Options::new();
    for (k, v) in FAST_RETRIES.iter().chain(options) {
        opts.set(*k, *v);
    }
    let schema =
        TableSchema::new(0, fields, partition_keys, primary_keys, opts).expect("valid schema");
    table_with_schema(dir, &schema).await
}

fn committer(table: &Table, user: &str) -> FileStoreCommit {
    FileStoreCommit::new(table.clone(), user).expect("committer")
}

/// Framed partition row of `dt`.
fn part(dt: &str) -> Vec<u8> {
    encode_framed(&[Datum::String(dt.into())], &[DataType::string()]).expect("partition encodes")
}

/// The framed empty row of unpartitioned tables.
fn no_part() -> Vec<u8> {
    EMPTY_ROW.to_vec()
}

/// Framed key row `(id)`.
fn key(id: i64) -> Vec<u8> {
    encode_framed(&[Datum::BigInt(id)], &[bigint()]).expect("key encodes")
}

/// A data file of `rows` rows at level 0 without key range.
fn file(name: &str, rows: i64) -> DataFileMeta {
    DataFileMeta {
        file_name: name.to_string(),
        file_size: 1000 + rows,
        row_count: rows,
        min_key: EMPTY_ROW.to_vec(),
        max_key: EMPTY_ROW.to_vec(),
        key_stats: SimpleStats::empty(),
        value_stats: SimpleStats::empty(),
        min_sequence_number: 0,
        max_sequence_number: rows.max(1) - 1,
        schema_id: 0,
        level: 0,
        extra_files: Vec::new(),
        creation_time: Some(1_700_000_000_000),
        delete_row_count: Some(0),
        embedded_index: None,
        file_source: Some(FileSource::Append),
        value_stats_cols: Some(Vec::new()),
        external_path: None,
        first_row_id: None,
        write_cols: None,
        write_cols_sequences: None,
    }
}

/// [`file`] `name` of one row, created (empty) in `bucket-0` of `partition_dir` (`""` when
/// unpartitioned): commits that retry verify that their files exist.
async fn written(table: &Table, partition_dir: &str, name: &str) -> DataFileMeta {
    let dir = if partition_dir.is_empty() {
        String::new()
    } else {
        format!("{partition_dir}/")
    };
    table
        .io()
        .write(&format!("{dir}bucket-0/{name}"), "")
        .await
        .expect("file written");
    file(name, 1)
}

/// A primary-key data file at `level` holding keys `min..=max` (BIGINT keys; shared with
/// other modules' tests).
pub(crate) fn pk_file(name: &str, level: i32, min: i64, max: i64) -> DataFileMeta {
    DataFileMeta {
        level,
        min_key: key(min),
        max_key: key(max),
        ..file(name, max - min + 1)
    }
}

/// A message adding `files` to (partition, bucket 0) of a table with `total` buckets.
fn add(partition: Vec<u8>, total: i32, files: Vec<DataFileMeta>) -> CommitMessage {
    CommitMessage {
        new_files: files,
        ..CommitMessage::new(partition, 0, total)
    }
}

/// A compaction of (partition, `bucket`): `before` replaced by `after`.
fn compact(
    partition: Vec<u8>,
    bucket: i32,
    total: i32,
    before: Vec<DataFileMeta>,
    after: Vec<DataFileMeta>,
) -> CommitMessage {
    CommitMessage {
        compact_before: before,
        compact_after: after,
        ..CommitMessage::new(partition, bucket, total)
    }
}

/// Names of the live files, via `plan_scan` of the latest snapshot.
async fn live_names(table: &Table) -> BTreeSet<String> {
    let plan = plan_scan(table, &ScanRequest::default())
        .await
        .expect("plan");
    plan.splits
        .iter()
        .flat_map(|s| s.files.iter().map(|f| f.file_name.clone()))
        .collect()
}

fn names<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn snapshot(table: &Table, id: i64) -> Snapshot {
    table
        .snapshot_manager()
        .snapshot(id)
        .await
        .expect("snapshot exists")
}

async fn latest(table: &Table) -> Snapshot {
    table
        .snapshot_manager()
        .latest()
        .await
        .expect("readable")
        .expect("a snapshot")
}

async fn list(table: &Table, name: &str) -> Vec<ManifestFileMeta> {
    let bytes = table
        .io()
        .read(&format!("manifest/{name}"))
        .await
        .expect("list exists");
    read_manifest_list(&bytes).expect("list decodes")
}

async fn entries(table: &Table, metas: &[ManifestFileMeta]) -> Vec<ManifestEntry> {
    let mut out = Vec::new();
    for m in metas {
        let bytes = table
            .io()
            .read(&format!("manifest/{}", m.file_name))
            .await
            .expect("manifest exists");
        out.extend(read_manifest(&bytes).expect("manifest decodes"));
    }
    out
}

/// Number of files in `manifest/`.
async fn manifest_dir_size(table: &Table) -> usize {
    table
        .io()
        .list_dir("manifest")
        .await
        .expect("listable")
        .len()
}
