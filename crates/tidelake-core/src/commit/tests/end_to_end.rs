//! End to end: Parquet data files written by hand, committed, planned and read back.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER as BATCH;

use super::*;
use crate::test_support::{int64_column, read_table};

/// Write `columns` as a Parquet file at `rel`; returns its size.
async fn write_parquet(table: &Table, rel: &str, columns: Vec<(&str, ArrayRef)>) -> i64 {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), a.null_count() > 0))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let size = i64::try_from(buf.len()).unwrap();
    table.io().write(rel, buf).await.unwrap();
    size
}

/// Every row of the latest snapshot as (id, v), sorted.
async fn read_rows(table: &Table) -> Vec<(i64, Option<i64>)> {
    let mut rows = Vec::new();
    for b in read_table(table, &[], 1024).await {
        let (id, v) = (int64_column(&b, "id"), int64_column(&b, "v"));
        rows.extend((0..b.num_rows()).map(|i| (id.value(i), v.is_valid(i).then(|| v.value(i)))));
    }
    rows.sort_unstable();
    rows
}

fn longs(values: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_parquet_files_are_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let dt: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None, Some("z")]));
    let size = write_parquet(
        &table,
        "bucket-0/data-e2e-0.parquet",
        vec![
            ("id", longs(&[1, 2, 3])),
            ("dt", dt),
            ("v", longs(&[10, 20, 30])),
        ],
    )
    .await;
    let meta = DataFileMeta {
        file_size: size,
        ..file("data-e2e-0.parquet", 3)
    };
    committer(&table, "u")
        .commit(vec![add(no_part(), -1, vec![meta])], BATCH, &[])
        .await
        .unwrap();
    assert_eq!(
        read_rows(&table).await,
        vec![(1, Some(10)), (2, Some(20)), (3, Some(30))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_primary_key_files_merge_on_read_and_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    // Key-value layout: _KEY_id, _SEQUENCE_NUMBER, _VALUE_KIND, then the value columns.
    let kv_file = |ids: &[i64], seqs: &[i64], vs: &[i64]| {
        let dt: ArrayRef = Arc::new(StringArray::from(vec![Some("d"); ids.len()]));
        let kinds: ArrayRef = Arc::new(Int8Array::from(vec![0i8; ids.len()]));
        vec![
            ("_KEY_id", longs(ids)),
            ("_SEQUENCE_NUMBER", longs(seqs)),
            ("_VALUE_KIND", kinds),
            ("id", longs(ids)),
            ("dt", dt),
            ("v", longs(vs)),
        ]
    };
    let size_a = write_parquet(
        &table,
        "bucket-0/data-a.parquet",
        kv_file(&[1, 2, 3], &[0, 1, 2], &[10, 20, 30]),
    )
    .await;
    let size_b = write_parquet(
        &table,
        "bucket-0/data-b.parquet",
        kv_file(&[2, 4], &[3, 4], &[200, 400]),
    )
    .await;
    let meta = |name: &str, size: i64, min: i64, max: i64, seq: (i64, i64)| DataFileMeta {
        file_size: size,
        min_sequence_number: seq.0,
        max_sequence_number: seq.1,
        ..pk_file(name, 0, min, max)
    };
    let c = committer(&table, "u");
    c.commit(
        vec![add(
            no_part(),
            1,
            vec![meta("data-a.parquet", size_a, 1, 3, (0, 2))],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    c.commit(
        vec![add(
            no_part(),
            1,
            vec![meta("data-b.parquet", size_b, 2, 4, (3, 4))],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let merged = vec![(1, Some(10)), (2, Some(200)), (3, Some(30)), (4, Some(400))];
    assert_eq!(read_rows(&table).await, merged);

    // A compaction into one level-5 file replaces both and reads the same.
    let size_c = write_parquet(
        &table,
        "bucket-0/data-c.parquet",
        kv_file(&[1, 2, 3, 4], &[0, 3, 2, 4], &[10, 200, 30, 400]),
    )
    .await;
    let before = vec![
        meta("data-a.parquet", size_a, 1, 3, (0, 2)),
        meta("data-b.parquet", size_b, 2, 4, (3, 4)),
    ];
    let after = vec![DataFileMeta {
        level: 5,
        ..meta("data-c.parquet", size_c, 1, 4, (0, 4))
    }];
    c.commit(vec![compact(no_part(), 0, 1, before, after)], BATCH, &[])
        .await
        .unwrap();
    assert_eq!(live_names(&table).await, names(["data-c.parquet"]));
    assert_eq!(read_rows(&table).await, merged);
}
