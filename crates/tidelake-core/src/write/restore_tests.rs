//! A writer reads the state of the partitions it writes, and only theirs, until it has read
//! as many manifests as the table has.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use tidelake_spec::datum::Datum;

use super::Restore;
use crate::commit::FileStoreCommit;
use crate::compact::inline_compaction;
use crate::io::FileIO;
use crate::layout::TableLayout;
use crate::schema_change::{create_table, TableSpec};
use crate::state::{data_manifests, LiveFiles, Pruning};
use crate::table::Table;
use crate::test_support::write_and_commit;
use crate::write::input::RowKinds;
use crate::write::table_write::TableWrite;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", ArrowType::Int64, false),
        Field::new("dt", ArrowType::Utf8, false),
        Field::new("v", ArrowType::Int64, true),
    ]))
}

/// A primary-key table partitioned by `dt` with 2 buckets; only the test compacts it.
async fn table(dir: &Path) -> Table {
    let spec = TableSpec {
        primary_keys: vec!["id".into(), "dt".into()],
        partition_keys: vec!["dt".into()],
        bucket: Some(2),
        options: vec![("write-only".into(), "true".into())],
        comment: None,
    };
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    create_table(io, &schema(), &spec).await.unwrap()
}

fn rows(ids: std::ops::Range<i64>, dt: &str) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids.clone())),
            Arc::new(StringArray::from_iter_values(ids.clone().map(|_| dt))),
            Arc::new(Int64Array::from_iter_values(ids)),
        ],
    )
    .unwrap()
}

/// Per partition value, per bucket: the largest sequence number of its live files now.
async fn max_sequences(table: &Table) -> HashMap<(String, i32), i64> {
    let layout = TableLayout::new(table.schema()).unwrap();
    let (_, live) = LiveFiles::read_latest(table, Pruning::all)
        .await
        .unwrap()
        .unwrap();
    live.into_buckets()
        .into_iter()
        .map(|b| {
            let Datum::String(dt) = &layout.decode_partition(&b.partition).unwrap()[0] else {
                panic!("a string partition")
            };
            let max = b.files.iter().map(|e| e.file.max_sequence_number).max();
            ((dt.clone(), b.bucket), max.unwrap())
        })
        .collect()
}

fn framed(layout: &TableLayout, dt: &str) -> Vec<u8> {
    tidelake_spec::binary_row::encode_framed(&[Datum::String(dt.into())], &layout.partition_types)
        .unwrap()
}

#[tokio::test]
async fn a_write_reads_only_the_manifests_of_the_partitions_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path()).await;
    write_and_commit(&table, &rows(0..50, "a"), 0, "w").await;
    write_and_commit(&table, &rows(0..50, "b"), 0, "w").await;
    let before = max_sequences(&table).await;
    // partition a's only manifest is gone: reading it would fail
    let layout = TableLayout::new(table.schema()).unwrap();
    let a = framed(&layout, "a");
    let latest = table.snapshot_manager().latest().await.unwrap().unwrap();
    let manifests = data_manifests(&table, &latest).await.unwrap();
    let only_a: Vec<_> = manifests
        .iter()
        .filter(|m| m.partition_stats.min_values == a && m.partition_stats.max_values == a)
        .collect();
    assert_eq!(only_a.len(), 1, "{manifests:?}");
    std::fs::remove_file(dir.path().join("manifest").join(&only_a[0].file_name)).unwrap();

    let mut write = TableWrite::new(table.clone(), inline_compaction)
        .await
        .unwrap();
    write
        .write(&rows(0..50, "b"), RowKinds::Fixed(0))
        .await
        .unwrap();
    let messages = write.prepare_commit().await.unwrap();
    assert_eq!(messages.len(), 2);
    for m in &messages {
        let restored = before[&("b".to_string(), m.bucket)];
        let first = m.new_files.iter().map(|f| f.min_sequence_number).min();
        assert_eq!(first, Some(restored + 1), "bucket {}", m.bucket);
        assert_eq!(m.base_snapshot, Some(latest.id));
    }
    FileStoreCommit::new(table.clone(), "w")
        .unwrap()
        .commit(messages, 3, &[])
        .await
        .unwrap();
}

#[tokio::test]
async fn restores_every_partition_once_partition_reads_add_up_to_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = table(dir.path()).await;
    // every manifest holds every partition, so each partition read reads them all
    for round in 0..3 {
        let mut batch = Vec::new();
        for dt in ["a", "b", "c", "d"] {
            batch.push(rows(round * 10..round * 10 + 10, dt));
        }
        let batch = arrow_select::concat::concat_batches(&schema(), &batch).unwrap();
        write_and_commit(&table, &batch, 0, "w").await;
    }
    let layout = TableLayout::new(table.schema()).unwrap();
    let at_first = max_sequences(&table).await;
    let mut restore = Restore::on_demand();
    let a = framed(&layout, "a");
    let read = restore
        .partitions(&table, &layout, [a.as_slice()])
        .await
        .unwrap();
    assert_eq!(read, Some(3));
    assert!(!restore.complete);
    assert_eq!(restore.manifests_read, restore.manifests_total);
    // a restored partition keeps the state it was restored with
    write_and_commit(&table, &rows(100..150, "a"), 0, "w").await;
    let b = framed(&layout, "b");
    let read = restore
        .partitions(&table, &layout, [b.as_slice()])
        .await
        .unwrap();
    assert_eq!(read, Some(4));
    assert!(restore.complete, "the second read restores everything");
    let now = max_sequences(&table).await;
    for bucket in 0..2 {
        let a_state = restore.bucket(&a, bucket).unwrap().max_sequence;
        assert_eq!(a_state, at_first[&("a".to_string(), bucket)]);
        assert!(now[&("a".to_string(), bucket)] > a_state);
        for dt in ["b", "c", "d"] {
            let state = restore.bucket(&framed(&layout, dt), bucket).unwrap();
            assert_eq!(state.max_sequence, now[&(dt.to_string(), bucket)]);
        }
        assert_eq!(restore.bucket_count(&framed(&layout, "c")), Some(2));
    }
    let e = framed(&layout, "e");
    assert_eq!(
        restore
            .partitions(&table, &layout, [e.as_slice()])
            .await
            .unwrap(),
        None
    );
    assert!(restore.bucket(&e, 0).is_none());
}
