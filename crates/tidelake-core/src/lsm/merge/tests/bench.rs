//! Throughput check (ignored by default; run in release):
//! `cargo test --release -p tidelake-core merge_throughput -- --ignored --nocapture`.
//! Merges 10 runs × 1M rows of (i64 key, i64, f64, string) with the deduplicate engine and
//! reports input rows per second for overlapping and for disjoint key ranges.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::executor::block_on;
use futures::stream::StreamExt;
use tidelake_spec::types::TypeKind;

use super::{config, field, run, string};
use crate::lsm::merge::merge_sorted_runs;

const RUNS: usize = 10;
const ROWS: usize = 1_000_000;
const BATCH: usize = 8192;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("_SEQUENCE_NUMBER", ArrowType::Int64, false),
        Field::new("_VALUE_KIND", ArrowType::Int8, false),
        Field::new("k", ArrowType::Int64, false),
        Field::new("a", ArrowType::Int64, true),
        Field::new("b", ArrowType::Float64, true),
        Field::new("c", ArrowType::Utf8, true),
    ]))
}

/// Run `r`'s batches; `key(r, i)` must increase with `i`.
fn make_run(r: usize, key: impl Fn(usize, usize) -> i64) -> Vec<RecordBatch> {
    let schema = schema();
    (0..ROWS)
        .step_by(BATCH)
        .map(|start| {
            let rows = start..(start + BATCH).min(ROWS);
            let keys: Vec<i64> = rows.clone().map(|i| key(r, i)).collect();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from_iter_values(
                    rows.clone().map(|i| (i * RUNS + r) as i64),
                )),
                Arc::new(Int8Array::from(vec![0i8; rows.len()])),
                Arc::new(Int64Array::from(keys.clone())),
                Arc::new(Int64Array::from_iter_values(keys.iter().map(|k| k * 3))),
                Arc::new(Float64Array::from_iter_values(
                    keys.iter().map(|k| *k as f64 * 0.5),
                )),
                Arc::new(StringArray::from_iter_values(
                    rows.map(|i| format!("v{}", i % 1000)),
                )),
            ];
            RecordBatch::try_new(schema.clone(), columns).expect("valid bench batch")
        })
        .collect()
}

#[allow(clippy::disallowed_methods)] // a throughput check times in real time
fn measure(name: &str, key: impl Fn(usize, usize) -> i64 + Copy) -> f64 {
    let fields = vec![
        field("k", TypeKind::BigInt, false),
        field("a", TypeKind::BigInt, true),
        field("b", TypeKind::Double, true),
        field("c", string(), true),
    ];
    let c = Arc::new(config(&fields, &["k"], &[]).expect("valid config"));
    let runs: Vec<Vec<RecordBatch>> = (0..RUNS).map(|r| make_run(r, key)).collect();
    let start = Instant::now();
    let streams = runs.into_iter().map(run).collect();
    let out_rows = block_on(
        merge_sorted_runs(streams, c, BATCH).fold(0usize, |n, b| async move {
            n + b.expect("merge succeeds").num_rows()
        }),
    );
    let secs = start.elapsed().as_secs_f64();
    let rate = (RUNS * ROWS) as f64 / secs;
    println!(
        "{name}: {} input rows -> {out_rows} rows in {secs:.3}s = {:.1}M rows/s",
        RUNS * ROWS,
        rate / 1e6
    );
    rate
}

#[test]
#[ignore = "throughput check; run in release with --ignored --nocapture"]
fn merge_throughput() {
    // overlapping: run r holds key 5i + h(r, i) — random-looking overlaps between runs
    let overlapping = measure("dedup overlapping keys", |r, i| {
        (i * 5 + ((i.wrapping_mul(2_654_435_761) ^ r.wrapping_mul(40_503)) >> 7) % 5) as i64
    });
    // interleaved: every key in exactly one run, runs alternate key by key (no fast ranges)
    let interleaved = measure("dedup interleaved keys", |r, i| (i * RUNS + r) as i64);
    // disjoint ranges: whole batches pass through the fast path
    let disjoint = measure("dedup disjoint ranges", |r, i| (r * ROWS + i) as i64);
    assert!(overlapping.min(interleaved).min(disjoint) > 0.0);
}
