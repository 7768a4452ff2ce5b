//! What the crate's tests share: the golden fixtures, temporary tables, Arrow batches written
//! and committed through the real write path, a table read back, typed columns.
//!
//! Test code only: compiled for the crate's unit tests and, through the `test-support`
//! feature (a dev-dependency of the crate on itself), for its integration tests; never part
//! of the library its users get. Helpers panic on failure, as tests do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use serde_json::Value as Json;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::{parse_snapshot_file_name, BATCH_COMMIT_IDENTIFIER};

use crate::commit::FileStoreCommit;
use crate::compact::inline_compaction;
use crate::io::FileIO;
use crate::ops::Read;
use crate::schema_change::{create_table, TableSpec};
use crate::table::Table;
use crate::write::input::RowKinds;
use crate::write::table_write::TableWrite;

/// The golden fixtures (`tests/fixtures/paimon-v1` of the repository, or `$TIDELAKE_FIXTURES`), canonical
/// (`FileIO` takes paths without `..` segments).
pub fn fixtures() -> PathBuf {
    let dir = std::env::var_os("TIDELAKE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/paimon-v1")
        });
    assert!(
        dir.join("fixtures.json").is_file(),
        "fixtures not found at {}",
        dir.display()
    );
    std::fs::canonicalize(&dir).unwrap()
}

/// The table entries of `fixtures.json`.
pub fn fixture_tables() -> Vec<Json> {
    let json: Json =
        serde_json::from_slice(&std::fs::read(fixtures().join("fixtures.json")).unwrap()).unwrap();
    json["tables"].as_array().unwrap().clone()
}

/// The directory of a `fixtures.json` table entry.
pub fn fixture_table_dir(table: &Json) -> PathBuf {
    fixtures().join(table["path"].as_str().unwrap())
}

/// The rows of an Arrow IPC file (the fixtures' expected values) as one batch.
pub fn read_arrow_file(path: &Path) -> RecordBatch {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = arrow_ipc::reader::FileReader::try_new(file, None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// The files below `dir` (recursively), as sorted `/`-separated paths relative to it.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_string_lossy();
                out.push(rel.replace(std::path::MAIN_SEPARATOR, "/"));
            }
        }
    }
    out.sort();
    out
}

/// The ids of the snapshot files of the table at `dir`, ascending.
pub fn snapshot_ids(dir: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = std::fs::read_dir(dir.join("snapshot"))
        .unwrap()
        .filter_map(|e| parse_snapshot_file_name(e.unwrap().file_name().to_str()?))
        .collect();
    ids.sort_unstable();
    ids
}

/// A table at `dir` with `schema` as its `schema-0`, written as it is (no validation beyond
/// the schema's own).
pub async fn table_with_schema(dir: &Path, schema: &TableSchema) -> Table {
    let io = FileIO::open(dir.to_str().expect("utf-8 temp dir")).expect("local dir");
    io.write("schema/schema-0", schema.to_json())
        .await
        .expect("schema written");
    Table::open_io(io).await.expect("table opens")
}

/// Write `batch` with row kind `kind` through [`TableWrite`] and commit it as `user` (batch
/// identifier); returns the snapshot ids created.
pub async fn write_and_commit(
    table: &Table,
    batch: &RecordBatch,
    kind: i8,
    user: &str,
) -> Vec<i64> {
    let mut write = TableWrite::new(table.clone(), inline_compaction)
        .await
        .unwrap();
    write.write(batch, RowKinds::Fixed(kind)).await.unwrap();
    let messages = write.prepare_commit().await.unwrap();
    FileStoreCommit::new(table.clone(), user)
        .unwrap()
        .commit(messages, BATCH_COMMIT_IDENTIFIER, &[])
        .await
        .unwrap()
}

/// A primary-key table at `dir` (`k`, `v` BIGINT, one bucket, `write-only` so only the test
/// maintains it, plus `options`) with `commits` one-row commits: commit `c` has identifier `c`,
/// creates snapshot `c` and writes the row `(c % keys, c)`.
pub async fn one_row_commits(
    dir: &Path,
    options: &[(&str, &str)],
    keys: i64,
    commits: i64,
) -> Table {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let mut opts = vec![("write-only".to_string(), "true".to_string())];
    opts.extend(options.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let spec = TableSpec {
        primary_keys: vec!["k".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: opts,
        comment: None,
    };
    let io = FileIO::open(dir.to_str().expect("utf-8 temp dir")).expect("local dir");
    create_table(io.clone(), &schema, &spec)
        .await
        .expect("table created");
    let table = Table::open_io(io).await.expect("table opens");
    for commit in 1..=commits {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![commit % keys])),
                Arc::new(Int64Array::from(vec![commit])),
            ],
        )
        .expect("batch");
        let mut write = TableWrite::new(table.clone(), inline_compaction)
            .await
            .unwrap();
        write.write(&batch, RowKinds::Fixed(0)).await.unwrap();
        let messages = write.prepare_commit().await.unwrap();
        let ids = FileStoreCommit::new(table.clone(), "test")
            .unwrap()
            .commit(messages, commit, &[])
            .await
            .unwrap();
        assert_eq!(
            ids,
            vec![commit],
            "commit {commit} creates snapshot {commit}"
        );
    }
    table
}

/// The batches of the latest snapshot with `options` overriding table options, in read order
/// (splits, then files, as planned), `batch_size` rows at most each.
pub async fn read_table(
    table: &Table,
    options: &[(&str, &str)],
    batch_size: usize,
) -> Vec<RecordBatch> {
    let options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let read = Read::new(table)
        .options(options)
        .batch_size(batch_size)
        .plan()
        .await
        .unwrap();
    read.reader
        .stream(read.plan.splits, None)
        .try_collect()
        .await
        .unwrap()
}

/// Column `name` of `batch` as BIGINT.
pub fn int64_column<'a>(batch: &'a RecordBatch, name: &str) -> &'a Int64Array {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap_or_else(|| panic!("{name} is not BIGINT"))
}

/// Column `name` of `batch` as STRING.
pub fn string_column<'a>(batch: &'a RecordBatch, name: &str) -> &'a StringArray {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap_or_else(|| panic!("{name} is not STRING"))
}
