//! Bucket assignment of the Paimon fixtures (`tests/fixtures/paimon-v1`, written by
//! pypaimon 2.1.0), checked at the spec level: for every table in `fixtures.json` with
//! `expected.observed_buckets`, each key recorded in `buckets.arrow` is converted to datums with
//! [`datum_at`] (typed by the table's latest `schema/schema-N`) and
//!
//! * fixed buckets (`total_buckets > 0`): `bucket_of(bucket key)` must equal the observed
//!   `_bucket`. The bucket key is `bucket-key`, else the primary key minus partition keys.
//! * dynamic buckets (`total_buckets == -1`): the key's hash (`hash_row(encode_row(trimmed
//!   primary key))`) must be in the HASH index file of its observed bucket and partition, and
//!   in no other bucket's, where the index files are those the latest snapshot's index
//!   manifest lists (each file is a sequence of big-endian int32 hashes).
//!
//! `tests/write_bucket.rs` checks the writer's routing (`write::bucket`) on the same data; this
//! file checks the format-level functions it is built on, plus the dynamic-bucket index.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::RecordBatch;
use serde_json::Value as Json;
use tidelake_core::datum_arrow::datum_at;
use tidelake_core::test_support::{fixture_table_dir, fixture_tables, fixtures, read_arrow_file};
use tidelake_spec::binary_row::{decode_framed, encode_row};
use tidelake_spec::bucket::{bucket_of, hash_row};
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{read_index_manifest, FileKind, HASH_INDEX};
use tidelake_spec::schema::{parse_schema_file_name, TableSchema};
use tidelake_spec::snapshot::{parse_snapshot_file_name, Snapshot};
use tidelake_spec::types::DataType;

/// Tables of fixtures.json that record observed buckets, with their total bucket count.
fn bucketed_tables() -> Vec<(Json, i32)> {
    fixture_tables()
        .iter()
        .filter_map(|t| {
            let observed = &t["expected"]["observed_buckets"];
            if observed.is_null() {
                return None;
            }
            let total = match &observed["total_buckets"] {
                Json::String(s) => s.parse().unwrap(),
                other => other.as_i64().unwrap() as i32,
            };
            Some((t.clone(), total))
        })
        .collect()
}

fn name(table: &Json) -> &str {
    table["name"].as_str().unwrap()
}

/// The file with the highest id among `dir`'s files named by `parse`.
fn latest_file(dir: &Path, parse: impl Fn(&str) -> Option<i64>) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| parse(p.file_name()?.to_str()?).map(|id| (id, p)))
        .max_by_key(|(id, _)| *id)
        .unwrap_or_else(|| panic!("no files in {}", dir.display()))
        .1
}

fn latest_schema(table: &Json) -> TableSchema {
    let path = latest_file(
        &fixture_table_dir(table).join("schema"),
        parse_schema_file_name,
    );
    TableSchema::from_json(&std::fs::read(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The values of columns `names` in row `row`, as datums of the schema's types.
fn row_datums(
    batch: &RecordBatch,
    schema: &TableSchema,
    names: &[String],
    row: usize,
) -> (Vec<Datum>, Vec<DataType>) {
    names
        .iter()
        .map(|n| {
            let ty = schema
                .field(n)
                .unwrap_or_else(|| panic!("no column {n}"))
                .data_type
                .clone();
            let column = batch
                .column_by_name(n)
                .unwrap_or_else(|| panic!("buckets.arrow has no column {n}"));
            (datum_at(column.as_ref(), row, &ty).unwrap(), ty)
        })
        .unzip()
}

fn observed(table: &Json) -> RecordBatch {
    let file = table["expected"]["observed_buckets"]["file"]
        .as_str()
        .unwrap();
    let batch = read_arrow_file(&fixtures().join(file));
    assert!(batch.num_rows() > 0, "{}: empty buckets.arrow", name(table));
    batch
}

fn observed_bucket(batch: &RecordBatch, row: usize) -> i32 {
    batch
        .column_by_name("_bucket")
        .expect("buckets.arrow has a _bucket column")
        .as_primitive::<Int32Type>()
        .value(row)
}

#[test]
fn fixed_buckets_reproduce_observed_buckets() {
    let mut tables = 0;
    let mut rows = 0;
    for (table, total) in bucketed_tables() {
        if total <= 0 {
            continue;
        }
        let schema = latest_schema(&table);
        let keys = schema.bucket_keys();
        assert!(!keys.is_empty(), "{}: no bucket key", name(&table));
        let batch = observed(&table);
        let mut seen = HashSet::new();
        for row in 0..batch.num_rows() {
            let (values, types) = row_datums(&batch, &schema, &keys, row);
            let got = bucket_of(&values, &types, total).unwrap();
            let expected = observed_bucket(&batch, row);
            assert_eq!(
                got,
                expected,
                "table {}: key {values:?} hashes to bucket {got}, pypaimon wrote it to {expected}",
                name(&table)
            );
            seen.insert(got);
        }
        // A check that cannot notice a constant bucket would be weak: the data spans buckets.
        assert!(
            seen.len() > 1,
            "{}: every key is in one bucket",
            name(&table)
        );
        tables += 1;
        rows += batch.num_rows();
    }
    assert!(
        tables >= 3 && rows > 50,
        "only {tables} tables / {rows} keys checked"
    );
}

/// Hashes per (partition values, bucket) in the HASH index files live at the latest snapshot.
fn hash_index(table: &Json, partition_types: &[DataType]) -> HashMap<(String, i32), HashSet<i32>> {
    let dir = fixture_table_dir(table);
    let snapshot_path = latest_file(&dir.join("snapshot"), parse_snapshot_file_name);
    let snapshot = Snapshot::from_json(&std::fs::read(&snapshot_path).unwrap()).unwrap();
    let index_manifest = snapshot
        .index_manifest
        .unwrap_or_else(|| panic!("{}: the latest snapshot has no index manifest", name(table)));
    let entries =
        read_index_manifest(&std::fs::read(dir.join("manifest").join(&index_manifest)).unwrap())
            .unwrap();
    let deleted: HashSet<String> = entries
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(|e| e.index_file.file_name.clone())
        .collect();
    let mut out: HashMap<(String, i32), HashSet<i32>> = HashMap::new();
    for e in entries.iter().filter(|e| {
        e.kind == FileKind::Add
            && e.index_file.index_type == HASH_INDEX
            && !deleted.contains(&e.index_file.file_name)
    }) {
        let bytes = std::fs::read(dir.join("index").join(&e.index_file.file_name)).unwrap();
        assert_eq!(
            bytes.len() % 4,
            0,
            "{}: ragged hash index file",
            e.index_file.file_name
        );
        assert_eq!(
            (bytes.len() / 4) as i64,
            e.index_file.row_count,
            "{}: row count",
            e.index_file.file_name
        );
        let partition = decode_framed(&e.partition, partition_types).unwrap();
        let hashes = out.entry((format!("{partition:?}"), e.bucket)).or_default();
        for word in bytes.chunks_exact(4) {
            hashes.insert(i32::from_be_bytes([word[0], word[1], word[2], word[3]]));
        }
    }
    out
}

#[test]
fn dynamic_bucket_keys_are_in_their_buckets_hash_index() {
    let mut tables = 0;
    for (table, total) in bucketed_tables() {
        if total != -1 {
            continue;
        }
        let schema = latest_schema(&table);
        let keys = schema.trimmed_primary_keys();
        let partition_keys = schema.partition_keys.clone();
        let partition_types: Vec<DataType> = partition_keys
            .iter()
            .map(|k| schema.field(k).unwrap().data_type.clone())
            .collect();
        let index = hash_index(&table, &partition_types);
        assert!(
            index.len() > 1,
            "{}: expected several buckets with a HASH index",
            name(&table)
        );
        let batch = observed(&table);
        for row in 0..batch.num_rows() {
            let (values, types) = row_datums(&batch, &schema, &keys, row);
            let hash = hash_row(&encode_row(&values, &types).unwrap());
            let (partition, _) = row_datums(&batch, &schema, &partition_keys, row);
            let partition = format!("{partition:?}");
            let bucket = observed_bucket(&batch, row);
            let hashes = index.get(&(partition.clone(), bucket)).unwrap_or_else(|| {
                panic!(
                    "{}: no HASH index for partition {partition} bucket {bucket}",
                    name(&table)
                )
            });
            assert!(
                hashes.contains(&hash),
                "{}: key {values:?} (hash {hash}) is not in the HASH index of bucket {bucket}",
                name(&table)
            );
            for ((p, b), other) in &index {
                if *p == partition && *b != bucket {
                    assert!(
                        !other.contains(&hash),
                        "{}: key {values:?} (hash {hash}) is also indexed in bucket {b}",
                        name(&table)
                    );
                }
            }
        }
        tables += 1;
    }
    assert!(tables >= 1, "no dynamic-bucket table in fixtures.json");
}
