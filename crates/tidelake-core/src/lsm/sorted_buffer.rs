//! The sort of a bucket's write buffer: the order in which its rows go to a level-0 file.
//!
//! The buffer is the list of `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]` batches a bucket
//! writer collected, in input order. Sequence numbers ascend with input order, so sorting by
//! key alone and breaking ties by buffer position is the (key, sequence) order the merge and
//! Java's `SortBufferWriteBuffer` use. Nothing is copied while sorting: [`SortedBuffer`] holds
//! positions into the buffered batches, and rows are gathered once, chunk by chunk, as the file
//! writer asks for them.
//!
//! Keys compare as their [`KeyCodec`] rows (Java's key order, the merge's). A key of one
//! non-null integer, date or timestamp column sorts as plain `i64`s instead, the same order at
//! a fraction of the cost.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::DataType as ArrowType;
use arrow_select::interleave::interleave_record_batch;
use futures::stream::{self, BoxStream, StreamExt};

use crate::datum_arrow::is_signed_integer_backed;
use crate::error::{Error, Result};
use crate::lsm::key::KeyCodec;

/// A bucket buffer in (key, sequence) order.
pub(crate) struct SortedBuffer {
    batches: Arc<Vec<RecordBatch>>,
    /// Rows in order, as `(batch << 32) | row`.
    order: Vec<u64>,
    /// Per sorted position: the key equals the previous position's key.
    repeats: Vec<bool>,
}

/// `batch << 32 | row`.
fn position(batch: usize, row: usize) -> u64 {
    ((batch as u64) << 32) | row as u64
}

impl SortedBuffer {
    /// Sort `batches` by their key columns (`key_columns`: positions within each batch).
    pub fn new(batches: Vec<RecordBatch>, key_columns: &[usize]) -> Result<SortedBuffer> {
        let keys = |b: &RecordBatch| -> Vec<ArrayRef> {
            key_columns.iter().map(|&i| b.column(i).clone()).collect()
        };
        let (order, repeats) = match int_keys(&batches, key_columns)? {
            Some(mut pairs) => {
                // Ties broken by buffer position: the sequence order.
                pairs.sort_unstable();
                let repeats = (0..pairs.len())
                    .map(|i| i > 0 && pairs[i].0 == pairs[i - 1].0)
                    .collect();
                (pairs.into_iter().map(|(_, p)| p).collect(), repeats)
            }
            None => {
                let first = batches.first().map(keys).unwrap_or_default();
                let codec = KeyCodec::new(first.iter().map(|c| c.data_type().clone()).collect())?;
                let total: usize = batches.iter().map(RecordBatch::num_rows).sum();
                let mut rows = codec.empty_rows(total);
                let mut positions = Vec::with_capacity(total);
                for (b, batch) in batches.iter().enumerate() {
                    codec.append(&mut rows, &keys(batch))?;
                    positions.extend((0..batch.num_rows()).map(|r| position(b, r)));
                }
                let mut sorted: Vec<u32> = (0..total as u32).collect();
                // Stable: equal keys keep buffer (= sequence) order.
                sorted.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
                let repeats = (0..total)
                    .map(|i| {
                        i > 0 && rows.row(sorted[i] as usize) == rows.row(sorted[i - 1] as usize)
                    })
                    .collect();
                (
                    sorted.into_iter().map(|i| positions[i as usize]).collect(),
                    repeats,
                )
            }
        };
        Ok(SortedBuffer {
            batches: Arc::new(batches),
            order,
            repeats,
        })
    }

    /// Whether some key occurs more than once.
    pub fn has_repeats(&self) -> bool {
        self.repeats.contains(&true)
    }

    /// Every row, in order, in batches of at most `chunk` rows.
    pub fn rows(&self, chunk: usize) -> BoxStream<'static, Result<RecordBatch>> {
        gather_stream(self.batches.clone(), self.order.clone(), chunk)
    }

    /// The rows split into runs with strictly ascending keys: the i-th occurrence of every key
    /// goes to run i, so the runs merged by (key, sequence) give back this order.
    pub fn runs(self, chunk: usize) -> Vec<BoxStream<'static, Result<RecordBatch>>> {
        let mut runs: Vec<Vec<u64>> = Vec::new();
        let mut occurrence = 0;
        for (p, repeat) in self.order.into_iter().zip(self.repeats) {
            occurrence = if repeat { occurrence + 1 } else { 0 };
            if runs.len() <= occurrence {
                runs.push(Vec::new());
            }
            runs[occurrence].push(p);
        }
        runs.into_iter()
            .map(|run| gather_stream(self.batches.clone(), run, chunk))
            .collect()
    }
}

/// The rows at `order`, gathered `chunk` at a time.
fn gather_stream(
    batches: Arc<Vec<RecordBatch>>,
    order: Vec<u64>,
    chunk: usize,
) -> BoxStream<'static, Result<RecordBatch>> {
    let starts = (0..order.len()).step_by(chunk.max(1));
    stream::iter(starts)
        .map(move |start| {
            let refs: Vec<&RecordBatch> = batches.iter().collect();
            let indices: Vec<(usize, usize)> = order[start..(start + chunk).min(order.len())]
                .iter()
                .map(|&p| ((p >> 32) as usize, (p & u64::from(u32::MAX)) as usize))
                .collect();
            interleave_record_batch(&refs, &indices)
                .map_err(|e| Error::arrow("gathering sorted rows", e))
        })
        .boxed()
}

/// `(key, position)` pairs when the key is one null-free column whose values order as `i64`
/// ([`is_signed_integer_backed`]); `None` otherwise.
fn int_keys(batches: &[RecordBatch], key_columns: &[usize]) -> Result<Option<Vec<(i64, u64)>>> {
    let [column] = key_columns else {
        return Ok(None);
    };
    let mut pairs = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    for (b, batch) in batches.iter().enumerate() {
        let keys = batch.column(*column);
        if !is_signed_integer_backed(keys.data_type()) || keys.null_count() > 0 {
            return Ok(None);
        }
        let wide = arrow_cast::cast(keys, &ArrowType::Int64)
            .map_err(|e| Error::arrow("key encoding", e))?;
        let values = wide.as_primitive::<Int64Type>().values();
        pairs.extend(values.iter().enumerate().map(|(r, &k)| (k, position(b, r))));
    }
    Ok(Some(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use futures::TryStreamExt;
    use proptest::prelude::*;

    fn batch(keys: Vec<i32>, first_seq: i64) -> RecordBatch {
        let n = keys.len() as i64;
        let text: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("seq", ArrowType::Int64, false),
                Field::new("k", ArrowType::Int32, false),
                Field::new("s", ArrowType::Utf8, false),
            ])),
            vec![
                Arc::new(Int64Array::from_iter_values(first_seq..first_seq + n)),
                Arc::new(Int32Array::from(keys)),
                Arc::new(StringArray::from(text)),
            ],
        )
        .unwrap()
    }

    /// (key as string, seq) of every row, and the runs' (run, key string) pairs.
    fn read(sorted: SortedBuffer, key: usize) -> (Vec<(String, i64)>, bool, Vec<Vec<String>>) {
        let rows: Vec<RecordBatch> =
            futures::executor::block_on(sorted.rows(3).try_collect()).unwrap();
        let rows = rows
            .iter()
            .flat_map(|b| {
                let seq = b.column(0).as_primitive::<Int64Type>().clone();
                let k = arrow_cast::cast(b.column(key), &ArrowType::Utf8).unwrap();
                let k = k.as_string::<i32>().clone();
                (0..b.num_rows()).map(move |i| (k.value(i).to_string(), seq.value(i)))
            })
            .collect();
        let repeats = sorted.has_repeats();
        let runs = sorted
            .runs(2)
            .into_iter()
            .map(|run| {
                let batches: Vec<RecordBatch> =
                    futures::executor::block_on(run.try_collect()).unwrap();
                batches
                    .iter()
                    .flat_map(|b| {
                        let k = arrow_cast::cast(b.column(key), &ArrowType::Utf8).unwrap();
                        let k = k.as_string::<i32>().clone();
                        (0..b.num_rows()).map(move |i| k.value(i).to_string())
                    })
                    .collect()
            })
            .collect();
        (rows, repeats, runs)
    }

    proptest! {
        /// Both key paths give (key, sequence) order, and runs hold the i-th occurrences.
        #[test]
        fn sorts_by_key_then_sequence(parts in prop::collection::vec(prop::collection::vec(-20i32..20, 0..12), 0..4)) {
            let mut batches = Vec::new();
            let mut seq = 0;
            for keys in parts {
                let n = keys.len() as i64;
                batches.push(batch(keys, seq));
                seq += n;
            }
            for (key, as_int) in [(1usize, true), (2, false)] {
                let mut expected: Vec<(i32, String, i64)> = batches
                    .iter()
                    .flat_map(|b| {
                        let seq = b.column(0).as_primitive::<Int64Type>().clone();
                        let ints = b.column(1).as_primitive::<arrow_array::types::Int32Type>().clone();
                        let text = b.column(2).as_string::<i32>().clone();
                        (0..b.num_rows()).map(move |i| (ints.value(i), text.value(i).to_string(), seq.value(i)))
                    })
                    .collect();
                if as_int {
                    expected.sort_by_key(|(i, _, s)| (*i, *s));
                } else {
                    expected.sort_by(|a, b| (a.1.as_bytes(), a.2).cmp(&(b.1.as_bytes(), b.2)));
                }
                if !batches.is_empty() {
                    prop_assert_eq!(int_keys(&batches, &[key]).unwrap().is_some(), as_int);
                }
                let (rows, repeats, runs) = read(SortedBuffer::new(batches.clone(), &[key]).unwrap(), key);
                let want: Vec<(String, i64)> = expected.iter().map(|(_, t, s)| (t.clone(), *s)).collect();
                prop_assert_eq!(&rows, &want);
                let mut distinct = want.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
                distinct.dedup();
                prop_assert_eq!(repeats, distinct.len() < want.len());
                let mut want_runs: Vec<Vec<String>> = Vec::new();
                let mut occurrence = 0;
                for (i, (t, _)) in want.iter().enumerate() {
                    occurrence = if i > 0 && want[i - 1].0 == *t { occurrence + 1 } else { 0 };
                    if want_runs.len() <= occurrence {
                        want_runs.push(Vec::new());
                    }
                    want_runs[occurrence].push(t.clone());
                }
                prop_assert_eq!(runs, want_runs);
            }
        }
    }

    /// Floats sort as Java's `Double.compare`: NaNs of either sign after every number, and as
    /// one key (the buffer used to put a NaN with the sign bit set first).
    #[test]
    fn nan_keys_sort_last_as_one_key() {
        let keys = vec![1.0, -f64::NAN, -1.0, f64::NAN];
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("seq", ArrowType::Int64, false),
                Field::new("k", ArrowType::Float64, false),
            ])),
            vec![
                Arc::new(Int64Array::from_iter_values(0..4)),
                Arc::new(arrow_array::Float64Array::from(keys)),
            ],
        )
        .unwrap();
        let sorted = SortedBuffer::new(vec![batch], &[1]).unwrap();
        assert!(sorted.has_repeats());
        let rows: Vec<RecordBatch> =
            futures::executor::block_on(sorted.rows(10).try_collect()).unwrap();
        let seqs: Vec<i64> = rows[0]
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        assert_eq!(seqs, vec![2, 0, 1, 3]);
    }
}
