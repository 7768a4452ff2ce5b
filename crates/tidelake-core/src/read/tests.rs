//! Point scans read through the key path: a filter pinning every primary-key column decodes
//! the other columns only at the rows of its keys.

use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
use serde_json::json;
use tidelake_spec::options::Options;
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::error::Result;
use crate::read::split_read::{collect_splits, ReadContext};
use crate::scan::predicate::Predicate;
use crate::scan::{plan_scan, ScanRequest};
use crate::table::Table;
use crate::test_support::write_and_commit;
use crate::test_support::{files_under, int64_column, string_column, table_with_schema};

const ROWS: i64 = 2_000;

fn blob(id: i64) -> String {
    format!("{id:0400}")
}

/// The rows `filter` (filter JSON) selects from the latest snapshot.
async fn scan(table: &Table, filter: serde_json::Value) -> Result<Vec<RecordBatch>> {
    let filter = Predicate::from_json(&filter)?;
    let request = ScanRequest {
        filter: Some(filter.clone()),
        ..ScanRequest::default()
    };
    let plan = plan_scan(table, &request).await?;
    let ctx = ReadContext::of(table.clone(), &plan.schema)
        .filter(Some(&filter))
        .build()?;
    collect_splits(Arc::new(ctx), plan.splits, None).await
}

/// Every page of the `blob` column but the one holding row `keep` is overwritten with garbage:
/// a point scan of that row's key still answers, as it decodes `blob` at that row only, while
/// a range filter over the same key (not pinning it) decodes the key's whole `id` page, and so
/// several `blob` pages, and fails.
#[tokio::test]
async fn a_point_scan_decodes_non_key_columns_only_at_its_keys_rows() {
    let dir = tempfile::tempdir().unwrap();
    let fields = vec![
        DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
        DataField::new(1, "blob", DataType::string()),
    ];
    let mut opts = Options::new();
    // 400-byte blobs in 4 KiB pages: about 10 rows per `blob` page, 512 per `id` page
    for (k, v) in [
        ("bucket", "1"),
        ("write-only", "true"),
        ("file.compression", "none"),
        ("parquet.page.size", "4096"),
    ] {
        opts.set(k, v);
    }
    let schema = TableSchema::new(0, fields, Vec::new(), vec!["id".into()], opts).unwrap();
    let table = table_with_schema(dir.path(), &schema).await;
    let arrow = Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("blob", ArrowType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        arrow,
        vec![
            Arc::new(Int64Array::from_iter_values(0..ROWS)) as ArrayRef,
            Arc::new(StringArray::from_iter_values((0..ROWS).map(blob))),
        ],
    )
    .unwrap();
    write_and_commit(&table, &batch, RowKind::Insert.code(), "writer").await;

    let files: Vec<String> = files_under(dir.path())
        .into_iter()
        .filter(|f| f.ends_with(".parquet"))
        .collect();
    let [file] = files.as_slice() else {
        panic!("one data file expected: {files:?}")
    };
    let path = dir.path().join(file);
    let metadata = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Required)
        .parse_and_finish(&std::fs::File::open(&path).unwrap())
        .unwrap();
    let leaf = metadata
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == "blob")
        .unwrap();
    let pages = metadata.offset_index().unwrap()[0][leaf].page_locations();
    assert!(pages.len() > 50, "{} blob pages", pages.len());
    let key = 1_234; // rows are in key order: the key's row is row `key`
    let mut out = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for (i, page) in pages.iter().enumerate() {
        let end = pages.get(i + 1).map_or(ROWS, |p| p.first_row_index);
        if (page.first_row_index..end).contains(&key) {
            continue;
        }
        out.seek(SeekFrom::Start(page.offset as u64)).unwrap();
        out.write_all(&vec![0xFF; page.compressed_page_size as usize])
            .unwrap();
    }
    drop(out);

    for filter in [
        json!({"op": "eq", "field": "id", "value": key}),
        json!({"op": "in", "field": "id", "values": [key, ROWS + 5, key]}),
        json!({"op": "and", "args": [
            {"op": "eq", "field": "id", "value": key},
            {"op": "startswith", "field": "blob", "value": "0"},
        ]}),
    ] {
        let batches = scan(&table, filter.clone()).await.unwrap();
        let rows: Vec<(i64, String)> = batches
            .iter()
            .flat_map(|b| {
                let (ids, blobs) = (int64_column(b, "id"), string_column(b, "blob"));
                (0..b.num_rows()).map(move |i| (ids.value(i), blobs.value(i).to_string()))
            })
            .collect();
        assert_eq!(rows, vec![(key, blob(key))], "{filter}");
    }
    let range = json!({"op": "between", "field": "id", "lower": key, "upper": key});
    assert!(
        scan(&table, range).await.is_err(),
        "the corrupted pages are read"
    );
}
