//! Bucket routing and partition grouping against the Paimon fixtures
//! (`tests/fixtures/paimon-v1`, written by pypaimon 2.1.0): `expected/<table>/buckets.arrow`
//! records the bucket of every key, the manifests the `_PARTITION` bytes of every partition.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::RecordBatch;
use serde_json::Value as Json;
use tidelake_core::test_support::{fixture_table_dir, fixture_tables, fixtures, read_arrow_file};
use tidelake_core::write::bucket::{bucket_ids, group_by_partition};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::manifest::read_manifest;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

fn schema(table: &Json) -> TableSchema {
    TableSchema::from_json(
        &std::fs::read(fixture_table_dir(table).join("schema/schema-0")).unwrap(),
    )
    .unwrap()
}

/// Indices and types of `names` in `batch`, typed by the table schema.
fn columns_of(
    batch: &RecordBatch,
    schema: &TableSchema,
    names: &[String],
) -> (Vec<usize>, Vec<DataType>) {
    names
        .iter()
        .map(|n| {
            let index = batch.schema().index_of(n).unwrap();
            (index, schema.field(n).unwrap().data_type.clone())
        })
        .unzip()
}

#[test]
fn bucket_ids_reproduce_observed_buckets() {
    let mut checked = 0;
    for table in fixture_tables() {
        let observed = &table["expected"]["observed_buckets"];
        if observed.is_null() {
            continue;
        }
        let total: i32 = observed["total_buckets"].as_str().unwrap().parse().unwrap();
        if total <= 0 {
            continue; // dynamic bucket mode: buckets come from the hash index, not the key
        }
        let schema = schema(&table);
        let batch = read_arrow_file(&fixtures().join(observed["file"].as_str().unwrap()));
        let (columns, types) = columns_of(&batch, &schema, &schema.bucket_keys());
        let buckets = bucket_ids(&batch, &columns, &types, total).unwrap();
        let expected = batch
            .column_by_name("_bucket")
            .unwrap()
            .as_primitive::<Int32Type>();
        assert_eq!(
            buckets,
            expected.values().to_vec(),
            "table {}",
            table["name"]
        );
        checked += batch.num_rows();
    }
    assert!(checked > 50, "only {checked} rows checked");
}

/// Every `_PARTITION` of every manifest of a table.
fn manifest_partitions(table: &Json) -> HashSet<Vec<u8>> {
    let mut out = HashSet::new();
    for entry in std::fs::read_dir(fixture_table_dir(table).join("manifest")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("manifest-") && !name.starts_with("manifest-list-") {
            for e in read_manifest(&std::fs::read(&path).unwrap()).unwrap() {
                out.insert(e.partition);
            }
        }
    }
    out
}

#[test]
fn partition_bytes_equal_manifest_partitions() {
    let mut checked = 0;
    for table in fixture_tables() {
        let schema = schema(&table);
        if schema.partition_keys.is_empty() {
            continue;
        }
        let expected = manifest_partitions(&table);
        let name = table["name"].as_str().unwrap();
        let batch = read_arrow_file(&fixtures().join(format!("expected/{name}/latest.arrow")));
        let (columns, types) = columns_of(&batch, &schema, &schema.partition_keys);
        let groups = group_by_partition(&batch, &columns, &types).unwrap();
        assert!(!groups.is_empty());
        for group in &groups {
            assert!(
                expected.contains(&group.partition),
                "table {}: partition {:?} ({:02x?}) not in the manifests",
                table["name"],
                group.values,
                group.partition
            );
            assert_eq!(
                decode_framed(&group.partition, &types).unwrap(),
                group.values
            );
            checked += 1;
        }
        let rows: usize = groups.iter().map(|g| g.rows.len()).sum();
        assert_eq!(rows, batch.num_rows());
    }
    assert!(checked >= 6, "only {checked} partitions checked");
}
