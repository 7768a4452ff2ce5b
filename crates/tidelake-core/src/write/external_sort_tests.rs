//! Spilling and merging keep every row exactly once, in key order, stably, and leave no
//! temporary files behind.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use futures::TryStreamExt;
use tidelake_spec::options::OrderType;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::*;

fn schema() -> TableSchema {
    let fields = vec![
        DataField::new(0, "k", DataType::new(TypeKind::BigInt)),
        DataField::new(1, "seq", DataType::new(TypeKind::BigInt)),
    ];
    TableSchema::new(0, fields, vec![], vec![], Default::default()).unwrap()
}

/// Rows `(k, seq)` with `k` = a pseudo-random value in 0..100 (many repeats) and `seq` the
/// input position.
fn input(rows: i64, per_batch: i64) -> Vec<RecordBatch> {
    let s = schema();
    let arrow = Arc::new(tidelake_spec::arrow::to_arrow_schema(&s.fields).unwrap());
    (0..rows)
        .step_by(per_batch as usize)
        .map(|start| {
            let seq: Vec<i64> = (start..(start + per_batch).min(rows)).collect();
            let k: Vec<i64> = seq.iter().map(|i| (i * 7919 + 13) % 100).collect();
            RecordBatch::try_new(
                arrow.clone(),
                vec![
                    Arc::new(Int64Array::from(k)),
                    Arc::new(Int64Array::from(seq)),
                ],
            )
            .unwrap()
        })
        .collect()
}

fn sorter(fan_in: usize) -> ExternalSorter {
    let order = RowOrder::new(&schema(), &["k".to_string()], OrderType::Order).unwrap();
    ExternalSorter::new(Arc::new(order), fan_in)
}

/// `(k, seq)` of every output row, checking it is sorted by k then (stability) by seq.
fn check_sorted(batches: &[RecordBatch], rows: i64) {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for b in batches {
        assert!(b.num_rows() <= SORTED_BATCH_ROWS);
        assert_eq!(b.num_columns(), 2, "the key column is dropped");
        let k = b.column(0).as_primitive::<Int64Type>();
        let s = b.column(1).as_primitive::<Int64Type>();
        out.extend(k.values().iter().copied().zip(s.values().iter().copied()));
    }
    assert!(
        out.windows(2).all(|w| w[0] < w[1]),
        "sorted, equal keys in input order"
    );
    let mut seqs: Vec<i64> = out.iter().map(|(_, s)| *s).collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (0..rows).collect::<Vec<_>>(),
        "every row exactly once"
    );
}

#[test]
fn in_memory_sort_keeps_every_row_once() {
    let mut s = sorter(4);
    for b in input(20_000, 3_000) {
        s.push(&b).unwrap();
    }
    assert!(s.buffered_bytes() > 0);
    let out: Vec<RecordBatch> = s.finish().unwrap().collect::<Result<_>>().unwrap();
    check_sorted(&out, 20_000);
}

#[test]
fn spilled_runs_merge_in_several_passes_and_leave_nothing_behind() {
    let mut s = sorter(2);
    for b in input(30_000, 2_500) {
        s.push(&b).unwrap();
        // a spill after every batch: 12 runs, merged 2 at a time down to 2, then merged
        s.spill().unwrap();
        assert_eq!(s.buffered_bytes(), 0);
    }
    let dir = s.spills.dir.as_ref().unwrap().path().to_path_buf();
    assert_eq!(s.spills.runs.len(), 12);
    let sorted = s.finish().unwrap();
    let out: Vec<RecordBatch> = sorted.collect::<Result<_>>().unwrap();
    check_sorted(&out, 30_000);
    assert!(!dir.exists(), "the spill directory is removed");
}

#[test]
fn a_dropped_sorter_removes_its_spills() {
    let mut s = sorter(8);
    for b in input(1_000, 100) {
        s.push(&b).unwrap();
    }
    s.spill().unwrap();
    let dir = s.spills.dir.as_ref().unwrap().path().to_path_buf();
    assert!(dir.exists());
    drop(s);
    assert!(!dir.exists());
    // a merge dropped half-way too
    let mut s = sorter(8);
    for b in input(40_000, 5_000) {
        s.push(&b).unwrap();
        s.spill().unwrap();
    }
    let dir = s.spills.dir.as_ref().unwrap().path().to_path_buf();
    let mut sorted = s.finish().unwrap();
    assert!(sorted.next().unwrap().is_ok());
    drop(sorted);
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sorted_stream_runs_off_the_runtime() {
    let mut s = sorter(3);
    for b in input(25_000, 5_000) {
        s.push(&b).unwrap();
        s.spill().unwrap();
    }
    s.push(&input(10, 10)[0]).unwrap();
    let out: Vec<RecordBatch> = sorted(s).try_collect().await.unwrap();
    let total: usize = out.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(total, 25_010);
}
