//! Planning with a partition filter on a table whose manifests each hold a few partitions:
//! manifests whose partition statistics exclude the filter are never read, entries of other
//! partitions in the manifests read are skipped, and the plan equals the unfiltered plan
//! restricted to the filter's partitions.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use serde_json::json;
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::scan::predicate::Predicate;
use crate::scan::{plan_scan, ScanRequest};
use crate::state::{data_manifests, read_entries};
use crate::table::Table;
use crate::test_support::{table_with_schema, write_and_commit};

/// `+I`.
const INSERT: i8 = 0;
const PARTITIONS: i32 = 8;

/// A primary-key table `(id BIGINT, p INT, v STRING)` partitioned by `p` with two buckets,
/// written by one commit per pair of partitions (so each delta manifest covers two).
async fn table(dir: &std::path::Path) -> Table {
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(1, "p", DataType::not_null(TypeKind::Int)),
        DataField::new(2, "v", DataType::string()),
    ];
    let mut opts = Options::new();
    opts.set("bucket", "2");
    opts.set("write-only", "true");
    let keys = vec!["id".to_string(), "p".to_string()];
    let schema = TableSchema::new(0, fields, vec!["p".into()], keys, opts).unwrap();
    let table = table_with_schema(dir, &schema).await;
    let arrow = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("p", ArrowType::Int32, false),
        Field::new("v", ArrowType::Utf8, true),
    ]));
    for pair in 0..PARTITIONS / 2 {
        let ids: Vec<i64> = (0..20).map(|i| i64::from(pair) * 100 + i).collect();
        let parts: Vec<i32> = (0..20).map(|i| pair * 2 + i % 2).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Int32Array::from(parts)),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("v{i}")),
            )),
        ];
        let batch = RecordBatch::try_new(arrow.clone(), columns).unwrap();
        write_and_commit(&table, &batch, INSERT, "writer").await;
    }
    table
}

/// The (partition, bucket, files) of a plan, sorted.
type Layout = BTreeSet<(Vec<u8>, i32, Vec<String>)>;

async fn plan(table: &Table, filter: Option<serde_json::Value>) -> crate::Result<Layout> {
    let request = ScanRequest {
        filter: filter.map(|f| Predicate::from_json(&f).unwrap()),
        ..ScanRequest::default()
    };
    let plan = plan_scan(table, &request).await?;
    Ok(plan
        .splits
        .into_iter()
        .map(|s| {
            let files = s.files.into_iter().map(|f| f.file_name).collect();
            (s.partition, s.bucket, files)
        })
        .collect())
}

fn partition_of(p: i32) -> Vec<u8> {
    let row = [tidelake_spec::datum::Datum::Int(p)];
    tidelake_spec::binary_row::encode_framed(&row, &[DataType::not_null(TypeKind::Int)]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_outside_the_filter_are_not_read_and_the_plan_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path()).await;
    let full = plan(&table, None).await.unwrap();
    assert_eq!(
        full.iter().map(|s| &s.0).collect::<BTreeSet<_>>().len(),
        PARTITIONS as usize
    );
    let wanted = [partition_of(2), partition_of(3)];
    let expected: Layout = full.iter().filter(|s| s.0 == wanted[0]).cloned().collect();
    assert!(!expected.is_empty());

    // remove every manifest without an entry of partition 2: a plan that opened one fails
    let snap = table.snapshot_manager().latest().await.unwrap().unwrap();
    let mut removed = 0;
    for meta in data_manifests(&table, &snap).await.unwrap() {
        let entries = read_entries(&table, &meta.file_name).await.unwrap();
        if entries.iter().all(|e| e.partition != wanted[0]) {
            std::fs::remove_file(dir.path().join("manifest").join(&meta.file_name)).unwrap();
            removed += 1;
        }
    }
    assert_eq!(removed, PARTITIONS as usize / 2 - 1);
    assert!(
        plan(&table, None).await.is_err(),
        "the removed manifests are needed"
    );

    // the manifest read also holds partition 3, whose entries are skipped undecoded
    let eq = json!({"op": "eq", "field": "p", "value": 2});
    assert_eq!(plan(&table, Some(eq)).await.unwrap(), expected);
    let both = json!({"op": "in", "field": "p", "values": [2, 3]});
    let expected_both: Layout = full
        .iter()
        .filter(|s| wanted.contains(&s.0))
        .cloned()
        .collect();
    assert_eq!(plan(&table, Some(both)).await.unwrap(), expected_both);
}

/// (partition, bucket, [(file, min key, max key)]) of every split of a plan.
async fn key_ranges(table: &Table, filter: Option<serde_json::Value>) -> KeyLayout {
    let request = ScanRequest {
        filter: filter.map(|f| Predicate::from_json(&f).unwrap()),
        ..ScanRequest::default()
    };
    let key = [DataType::not_null(TypeKind::BigInt)];
    let id = |framed: &[u8]| match tidelake_spec::binary_row::decode_framed(framed, &key)
        .unwrap()
        .remove(0)
    {
        tidelake_spec::datum::Datum::BigInt(v) => v,
        other => panic!("key {other:?}"),
    };
    let plan = plan_scan(table, &request).await.unwrap();
    plan.splits
        .into_iter()
        .map(|s| {
            let files = s
                .files
                .iter()
                .map(|f| (f.file_name.clone(), id(&f.min_key), id(&f.max_key)))
                .collect();
            (s.partition, s.bucket, files)
        })
        .collect()
}

type KeyLayout = BTreeSet<(Vec<u8>, i32, Vec<(String, i64, i64)>)>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_filters_skip_entries_by_key_stats_and_the_plan_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path()).await;
    // a full compaction of partitions 0..3: DELETE entries for their files (level 0), ADDs at
    // the top level
    let lt4 = json!({"op": "lt", "field": "p", "value": 4});
    let request = crate::compact::CompactRequest {
        full: true,
        partitions: Some(Predicate::from_json(&lt4).unwrap()),
    };
    crate::ops::compact(&table, &request, None).await.unwrap();
    let full = key_ranges(&table, None).await;
    let partitions: BTreeSet<&Vec<u8>> = full.iter().map(|s| &s.0).collect();
    assert_eq!(partitions.len(), PARTITIONS as usize);
    for k in [0, 7, 19, 100, 113, 205, 301, 319, 999] {
        let eq = json!({"op": "eq", "field": "id", "value": k});
        // the files whose key range holds k, as the planner prunes files after decoding them
        let expected: KeyLayout = full
            .iter()
            .map(|(p, b, files)| {
                let kept = files
                    .iter()
                    .filter(|(_, lo, hi)| (*lo..=*hi).contains(&k))
                    .cloned()
                    .collect::<Vec<_>>();
                (p.clone(), *b, kept)
            })
            .filter(|s| !s.2.is_empty())
            .collect();
        // the key's bucket is pinned too (fixed buckets by the hash of `id`): the planned
        // buckets are one bucket, and there the files are exactly those holding k
        let planned = key_ranges(&table, Some(eq)).await;
        let buckets: BTreeSet<i32> = planned.iter().map(|s| s.1).collect();
        assert!(buckets.len() <= 1, "id = {k}: buckets {buckets:?}");
        let expected: KeyLayout = expected
            .into_iter()
            .filter(|s| buckets.contains(&s.1))
            .collect();
        assert_eq!(planned, expected, "id = {k}");
        assert_eq!(planned.is_empty(), k == 999, "id = {k}");
    }
}
