//! A bucket flush that fails while other buckets flush beside it (`TableWrite` flushes
//! independent buckets concurrently): the failed bucket leaves no file behind (not even the
//! changelog file it had finished), the others' files stay recorded, and `abort` deletes them.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{FileIO, StorageOptions, Table};
use tidelake_core::test_support::files_under;

/// Parquet files below `dir`, as paths relative to it.
fn parquet_files(dir: &Path) -> Vec<String> {
    let mut files = files_under(dir);
    files.retain(|f| f.ends_with(".parquet"));
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_bucket_flush_deletes_its_files_and_abort_deletes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let spec = TableSpec {
        primary_keys: vec!["k".into()],
        partition_keys: vec![],
        bucket: Some(4),
        options: vec![
            ("write-only".into(), "true".into()),
            ("changelog-producer".into(), "input".into()),
        ],
        comment: None,
    };
    create_table(FileIO::open(location).unwrap(), &schema, &spec)
        .await
        .unwrap();
    // The first data-file put of bucket 2 fails, after its changelog file was written.
    let fault: StorageOptions = [("op", "put"), ("path", "bucket-2/data-"), ("nth", "1")]
        .into_iter()
        .map(|(k, v)| (format!("tidelake.fault.{k}"), v.to_string()))
        .collect();
    let table = Table::open_io(FileIO::open_with(location, &fault).unwrap())
        .await
        .unwrap();
    let mut write = table.new_write().build().await.unwrap();
    let keys: Vec<i64> = (0..4000).collect();
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(keys.clone())),
            Arc::new(Int64Array::from(keys)),
        ],
    )
    .unwrap();
    write.write(&batch, RowKinds::Fixed(0)).await.unwrap();

    let err = write.prepare_commit().await.unwrap_err();
    assert!(err.to_string().contains("injected fault on put"), "{err}");
    let left = parquet_files(dir.path());
    assert!(
        !left.iter().any(|f| f.starts_with("bucket-2/")),
        "the failed flush left {left:?}"
    );
    for b in [0, 1, 3] {
        for kind in ["data-", "changelog-"] {
            let prefix = format!("bucket-{b}/{kind}");
            assert!(
                left.iter().any(|f| f.starts_with(&prefix)),
                "bucket {b} flushed no {kind} file: {left:?}"
            );
        }
    }

    write.abort().await.unwrap();
    assert_eq!(parquet_files(dir.path()), Vec::<String>::new());
    assert!(
        !dir.path().join("snapshot").exists()
            || std::fs::read_dir(dir.path().join("snapshot"))
                .unwrap()
                .next()
                .is_none()
    );
}
