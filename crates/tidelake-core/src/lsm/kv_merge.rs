//! The sorted-run merge for writers: like [`merge_sorted_runs`], but the output keeps
//! `_SEQUENCE_NUMBER`, so merged rows can be written back into key-value files (Java's
//! `KeyValue` carries its sequence number through the merge function).
//!
//! Input: sorted runs of `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]` batches, each run strictly
//! ascending by key. Output: `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]` in key order, one row
//! per merged key, with the sequence number of the key's winning record: the oldest (smallest)
//! for `first-row`, the newest (largest) for the other engines — Java's deduplicate and
//! first-row keep the winner's number, partial-update and aggregation the latest record's.
//! (With `sequence.field` or `ignore-delete` Java's winner can carry a smaller number than the
//! newest record; any number of the key's own records keeps its order against older and newer
//! data, since LSM runs are split by write time.)
//!
//! How: every input batch is tapped on its way into the merge and its (key, sequence) pairs are
//! queued per run; each merged row then consumes the queued pairs of its key. The merge reads a
//! key's records before it emits the key, so the queues hold only rows of batches the merge has
//! loaded and not yet passed: memory stays at O(runs × batch), like the merge itself. Keys are
//! compared as [`KeyEncoder`] rows, the merge's own key order.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_row::{Row, Rows};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use tidelake_spec::schema::SEQUENCE_NUMBER;

use crate::error::{Error, Result};
use crate::lsm::key::KeyEncoder;
use crate::lsm::merge::{merge_sorted_runs, MergeConfig};
use crate::lsm::merge_fn::MergeEngineConfig;

/// Input columns before the value columns (`_SEQUENCE_NUMBER`, `_VALUE_KIND`).
const INPUT_VALUE_OFFSET: usize = 2;
/// Merge-output columns before the value columns (`_VALUE_KIND`).
const MERGED_VALUE_OFFSET: usize = 1;

/// Merge `runs` with `config`, keeping each key's sequence number (see the module docs).
pub(crate) fn merge_keeping_sequence(
    runs: Vec<BoxStream<'static, Result<RecordBatch>>>,
    config: Arc<MergeConfig>,
    batch_size: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    let tracker = Arc::new(Mutex::new(Tracker {
        keys: KeyEncoder::new(config.key_indices.clone()),
        oldest_wins: config.engine == MergeEngineConfig::FirstRow,
        queues: runs.iter().map(|_| VecDeque::new()).collect(),
    }));
    let tapped = runs
        .into_iter()
        .enumerate()
        .map(|(run, stream)| {
            let tracker = tracker.clone();
            stream
                .and_then(move |batch| {
                    let pushed = lock(&tracker).and_then(|mut t| t.push(run, &batch));
                    futures::future::ready(pushed.map(|()| batch))
                })
                .boxed()
        })
        .collect();
    merge_sorted_runs(tapped, config, batch_size)
        .and_then(move |merged| {
            let out = lock(&tracker)
                .and_then(|mut t| t.sequences(&merged))
                .and_then(|seqs| with_sequence(merged, seqs));
            futures::future::ready(out)
        })
        .boxed()
}

fn lock(tracker: &Mutex<Tracker>) -> Result<std::sync::MutexGuard<'_, Tracker>> {
    tracker
        .lock()
        .map_err(|_| Error::invalid("sequence tracker poisoned by an earlier panic"))
}

/// `[_SEQUENCE_NUMBER] + merged` columns.
fn with_sequence(merged: RecordBatch, seqs: Int64Array) -> Result<RecordBatch> {
    let mut fields = vec![Arc::new(Field::new(
        SEQUENCE_NUMBER,
        ArrowType::Int64,
        false,
    ))];
    fields.extend(merged.schema().fields().iter().cloned());
    let mut columns: Vec<ArrayRef> = vec![Arc::new(seqs)];
    columns.extend(merged.columns().iter().cloned());
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("merged rows with sequence numbers", e))
}

/// The (key, sequence) pairs of one input batch not yet consumed.
#[derive(Debug)]
struct Pending {
    keys: Rows,
    seqs: ScalarBuffer<i64>,
    pos: usize,
}

struct Tracker {
    keys: KeyEncoder,
    oldest_wins: bool,
    /// Per run, its tapped batches in order.
    queues: Vec<VecDeque<Pending>>,
}

impl Tracker {
    fn push(&mut self, run: usize, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let seqs = batch
            .column(0)
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| Error::invalid(format!("{SEQUENCE_NUMBER} is not BIGINT")))?
            .values()
            .clone();
        let keys = self.keys.encode(batch, INPUT_VALUE_OFFSET)?;
        self.queues[run].push_back(Pending { keys, seqs, pos: 0 });
        Ok(())
    }

    /// The sequence number of every row of a merged batch, consuming the queued pairs up to
    /// and including each row's key.
    fn sequences(&mut self, merged: &RecordBatch) -> Result<Int64Array> {
        let keys = self.keys.encode(merged, MERGED_VALUE_OFFSET)?;
        let mut out = Vec::with_capacity(merged.num_rows());
        for row in keys.iter() {
            let mut found: Option<i64> = None;
            for queue in &mut self.queues {
                if let Some(seq) = take_key(queue, row) {
                    found = Some(match found {
                        None => seq,
                        Some(f) if self.oldest_wins => f.min(seq),
                        Some(f) => f.max(seq),
                    });
                }
            }
            out.push(found.ok_or_else(|| {
                Error::invalid("a merged key has no input record (key order mismatch)")
            })?);
        }
        Ok(Int64Array::from(out))
    }
}

/// Drop the queued pairs below `key`; take the one equal to it, if any (keys are unique per
/// run).
fn take_key(queue: &mut VecDeque<Pending>, key: Row<'_>) -> Option<i64> {
    while let Some(front) = queue.front_mut() {
        while front.pos < front.keys.num_rows() && front.keys.row(front.pos) < key {
            front.pos += 1;
        }
        if front.pos == front.keys.num_rows() {
            queue.pop_front();
            continue;
        }
        if front.keys.row(front.pos) == key {
            let seq = front.seqs[front.pos];
            front.pos += 1;
            return Some(seq);
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int8Array, StringArray};
    use futures::stream;

    use super::*;

    fn run(rows: &[(i64, i8, i32, &str)]) -> BoxStream<'static, Result<RecordBatch>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false),
            Field::new("_VALUE_KIND", ArrowType::Int8, false),
            Field::new("k", ArrowType::Int32, false),
            Field::new("v", ArrowType::Utf8, true),
        ]));
        // one batch per row, to exercise the queues across batches
        let batches: Vec<Result<RecordBatch>> = rows
            .iter()
            .map(|&(seq, kind, k, v)| {
                Ok(RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int64Array::from(vec![seq])),
                        Arc::new(Int8Array::from(vec![kind])),
                        Arc::new(arrow_array::Int32Array::from(vec![k])),
                        Arc::new(StringArray::from(vec![v])),
                    ],
                )
                .unwrap())
            })
            .collect();
        stream::iter(batches).boxed()
    }

    fn config(engine: MergeEngineConfig, keep_retracts: bool) -> Arc<MergeConfig> {
        Arc::new(MergeConfig {
            key_indices: vec![0],
            sequence_indices: Vec::new(),
            sequence_descending: false,
            engine,
            ignore_delete: false,
            keep_retracts,
        })
    }

    async fn merged(
        runs: Vec<BoxStream<'static, Result<RecordBatch>>>,
        config: Arc<MergeConfig>,
    ) -> Vec<(i64, i8, i32, String)> {
        let batches: Vec<RecordBatch> = merge_keeping_sequence(runs, config, 2)
            .try_collect()
            .await
            .unwrap();
        let mut out = Vec::new();
        for b in batches {
            let seq = b.column(0).as_primitive::<Int64Type>();
            let kind = b.column(1).as_primitive::<arrow_array::types::Int8Type>();
            let k = b.column(2).as_primitive::<arrow_array::types::Int32Type>();
            let v = b.column(3).as_string::<i32>();
            for i in 0..b.num_rows() {
                out.push((
                    seq.value(i),
                    kind.value(i),
                    k.value(i),
                    v.value(i).to_string(),
                ));
            }
        }
        out
    }

    #[tokio::test]
    async fn deduplicate_keeps_the_newest_sequence() {
        let old = run(&[(1, 0, 1, "a"), (2, 0, 2, "b"), (3, 0, 4, "d")]);
        let new = run(&[(10, 0, 2, "B"), (11, 3, 3, "x"), (12, 3, 4, "D")]);
        let rows = merged(vec![new, old], config(MergeEngineConfig::Deduplicate, true)).await;
        assert_eq!(
            rows,
            vec![
                (1, 0, 1, "a".into()),
                (10, 0, 2, "B".into()),
                (11, 3, 3, "x".into()),
                (12, 3, 4, "D".into()),
            ]
        );
        // dropping retracts skips their keys in the queues
        let old = run(&[(1, 0, 1, "a"), (2, 0, 2, "b"), (3, 0, 4, "d")]);
        let new = run(&[(10, 0, 2, "B"), (11, 3, 3, "x"), (12, 3, 4, "D")]);
        let rows = merged(
            vec![new, old],
            config(MergeEngineConfig::Deduplicate, false),
        )
        .await;
        assert_eq!(rows, vec![(1, 0, 1, "a".into()), (10, 0, 2, "B".into())]);
    }

    #[tokio::test]
    async fn first_row_keeps_the_oldest_sequence() {
        let old = run(&[(1, 0, 1, "a"), (2, 0, 2, "b")]);
        let new = run(&[(10, 0, 2, "B"), (11, 0, 5, "e")]);
        let rows = merged(vec![old, new], config(MergeEngineConfig::FirstRow, false)).await;
        assert_eq!(
            rows,
            vec![
                (1, 0, 1, "a".into()),
                (2, 0, 2, "b".into()),
                (11, 0, 5, "e".into())
            ]
        );
    }
}
