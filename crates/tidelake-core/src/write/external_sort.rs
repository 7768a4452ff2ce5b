//! [`ExternalSorter`]: the rows of one (partition, bucket) of a write put in a [`RowOrder`]
//! with bounded memory, for clustered writes and sort compaction (Java sorts them with Spark's
//! range partitioning or Flink's external `SortOperator`).
//!
//! ```text
//!  batches ─► key per row (RowOrder) ─► in-memory run
//!        ─► the owner asks for a spill (its buffers over `write-buffer-size`):
//!           run sorted ─► Arrow IPC file in a temporary local directory
//!  finish ─► no spill: the run sorted in memory
//!          ─► spills: the run spilled too; while more runs than the fan-in
//!             (`local-sort.max-num-file-handles`), the oldest fan-in runs merged into one;
//!             then a k-way merge of the runs, streamed
//! ```
//!
//! Memory bound: the unsorted run (its owner spills it when the write's buffers pass
//! `write-buffer-size`) plus, while merging, one batch of [`SORTED_BATCH_ROWS`] rows per run
//! merged (at most the fan-in) and one output batch. Disk: the rows of the (partition, bucket)
//! once, plus one intermediate run while runs are merged down to the fan-in.
//!
//! Invariants: every row pushed comes out exactly once, in key order; rows with equal keys keep
//! their input order (a stable sort, and merges that prefer the older run). The temporary
//! directory lives as long as the sorter or its [`sorted`] stream and is removed when they
//! are dropped, whether they finished or failed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{BinaryArray, RecordBatch};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use arrow_select::interleave::interleave_record_batch;
use futures::stream::{BoxStream, StreamExt};
use tempfile::TempDir;

use super::sort_key::{with_keys, RowOrder};
use crate::error::{Error, Result};

/// Rows per batch of sorted output, of spilled runs and of merges.
pub(crate) const SORTED_BATCH_ROWS: usize = 8192;

/// The rows of one (partition, bucket) of a write, sorted with bounded memory.
pub(crate) struct ExternalSorter {
    order: Arc<RowOrder>,
    /// Most runs merged at once (at least 2).
    fan_in: usize,
    /// Rows with their key column, unsorted.
    run: Vec<RecordBatch>,
    run_bytes: usize,
    spills: Spills,
}

/// The sorted runs spilled to local files.
#[derive(Default)]
struct Spills {
    dir: Option<TempDir>,
    runs: Vec<PathBuf>,
    next: usize,
}

impl ExternalSorter {
    pub(crate) fn new(order: Arc<RowOrder>, fan_in: usize) -> ExternalSorter {
        ExternalSorter {
            order,
            fan_in: fan_in.max(2),
            run: Vec::new(),
            run_bytes: 0,
            spills: Spills::default(),
        }
    }

    /// Add `batch` (rows of the table's schema) to the run; the bytes it added.
    pub(crate) fn push(&mut self, batch: &RecordBatch) -> Result<usize> {
        if batch.num_rows() == 0 {
            return Ok(0);
        }
        let keyed = with_keys(batch, self.order.keys(batch)?)?;
        let bytes = keyed.get_array_memory_size();
        self.run.push(keyed);
        self.run_bytes += bytes;
        Ok(bytes)
    }

    /// Bytes of the unsorted run in memory.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.run_bytes
    }

    /// Sort the run and write it to a local file (blocking I/O: call it off the async
    /// runtime's threads).
    pub(crate) fn spill(&mut self) -> Result<()> {
        if self.run.is_empty() {
            return Ok(());
        }
        let run = std::mem::take(&mut self.run);
        self.run_bytes = 0;
        let schema = run[0].schema();
        let sorted = SortedRun::new(run);
        self.spills.write(&schema, sorted)
    }

    /// The sorted rows (without the key column), `SORTED_BATCH_ROWS` at most per batch
    /// (blocking I/O when runs were spilled: iterate off the async runtime's threads).
    pub(crate) fn finish(mut self) -> Result<Sorted> {
        if self.spills.runs.is_empty() {
            return Ok(Sorted::Memory(SortedRun::new(std::mem::take(
                &mut self.run,
            ))));
        }
        self.spill()?;
        while self.spills.runs.len() > self.fan_in {
            let oldest: Vec<PathBuf> = self.spills.runs.drain(..self.fan_in).collect();
            let mut merge = Merge::open(&oldest)?;
            let schema = merge.schema.clone();
            let merged = std::iter::from_fn(|| merge.next_batch().transpose());
            self.spills.write_batches(&schema, merged)?;
            for path in &oldest {
                std::fs::remove_file(path).map_err(|e| local_error(path, e))?;
            }
            // the merged run holds the oldest rows: it goes first, for stability
            let merged = self.spills.runs.pop().expect("a merged run was written");
            self.spills.runs.insert(0, merged);
        }
        let merge = Merge::open(&self.spills.runs)?;
        Ok(Sorted::Merged {
            merge,
            _dir: self.spills.dir.take(),
        })
    }
}

/// The sorted rows of an [`ExternalSorter`].
pub(crate) enum Sorted {
    Memory(SortedRun),
    Merged {
        merge: Merge,
        /// Keeps the spilled runs until the merge is dropped.
        _dir: Option<TempDir>,
    },
}

impl Iterator for Sorted {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let keyed = match self {
            Sorted::Memory(run) => run.next_batch().transpose(),
            Sorted::Merged { merge, .. } => merge.next_batch().transpose(),
        }?;
        Some(keyed.and_then(|b| without_keys(&b)))
    }
}

/// `sorter`'s rows as a stream; the sorting and merging run on a blocking thread, one batch
/// ahead of the consumer. Dropping the stream stops them and removes the spilled runs.
pub(crate) fn sorted(sorter: ExternalSorter) -> BoxStream<'static, Result<RecordBatch>> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tokio::task::spawn_blocking(move || {
        let sorted = match sorter.finish() {
            Ok(sorted) => sorted,
            Err(e) => {
                // the receiver gone: nobody wants the error either
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        for batch in sorted {
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                return;
            }
        }
    });
    tokio_stream_of(rx)
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
) -> BoxStream<'static, Result<RecordBatch>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// `batch` without its trailing key column.
fn without_keys(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns: Vec<usize> = (0..batch.num_columns() - 1).collect();
    batch
        .project(&columns)
        .map_err(|e| Error::arrow("dropping sort keys", e))
}

/// The key column of a keyed batch.
fn keys(batch: &RecordBatch) -> &BinaryArray {
    batch.column(batch.num_columns() - 1).as_binary::<i32>()
}

/// An in-memory run with its rows' sorted positions, yielded in batches.
pub(crate) struct SortedRun {
    batches: Vec<RecordBatch>,
    /// (batch, row) in key order.
    order: Vec<(usize, usize)>,
    next: usize,
}

impl SortedRun {
    fn new(batches: Vec<RecordBatch>) -> SortedRun {
        let mut order: Vec<(usize, usize)> = batches
            .iter()
            .enumerate()
            .flat_map(|(b, batch)| (0..batch.num_rows()).map(move |r| (b, r)))
            .collect();
        let keys: Vec<&BinaryArray> = batches.iter().map(keys).collect();
        // stable: equal keys keep their input order
        order.sort_by(|&(b1, r1), &(b2, r2)| keys[b1].value(r1).cmp(keys[b2].value(r2)));
        SortedRun {
            batches,
            order,
            next: 0,
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.next >= self.order.len() {
            return Ok(None);
        }
        let end = (self.next + SORTED_BATCH_ROWS).min(self.order.len());
        let refs: Vec<&RecordBatch> = self.batches.iter().collect();
        let batch = interleave_record_batch(&refs, &self.order[self.next..end])
            .map_err(|e| Error::arrow("sorting rows", e))?;
        self.next = end;
        Ok(Some(batch))
    }
}

impl Spills {
    /// Write `run` as a new spilled run.
    fn write(&mut self, schema: &SchemaRef, mut run: SortedRun) -> Result<()> {
        self.write_batches(schema, std::iter::from_fn(|| run.next_batch().transpose()))
    }

    /// Write the keyed `batches` (in key order) as a new spilled run, appended to the runs.
    fn write_batches(
        &mut self,
        schema: &SchemaRef,
        batches: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<()> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("tidelake-sort-")
                .tempdir()
                .map_err(|e| local_error(&std::env::temp_dir(), e))?;
            self.dir = Some(dir);
        }
        let dir = self.dir.as_ref().expect("created above").path();
        let path = dir.join(format!("run-{}.arrows", self.next));
        self.next += 1;
        let file = File::create(&path).map_err(|e| local_error(&path, e))?;
        let mut writer = StreamWriter::try_new(BufWriter::new(file), schema)
            .map_err(|e| Error::arrow("spilling sorted rows", e))?;
        for batch in batches {
            writer
                .write(&batch?)
                .map_err(|e| Error::arrow("spilling sorted rows", e))?;
        }
        writer
            .finish()
            .map_err(|e| Error::arrow("spilling sorted rows", e))?;
        self.runs.push(path);
        Ok(())
    }
}

/// A k-way merge of spilled runs (keyed batches), ties to the earliest run.
pub(crate) struct Merge {
    schema: SchemaRef,
    runs: Vec<RunCursor>,
    /// (key, run) of each run's current row.
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
}

struct RunCursor {
    reader: StreamReader<BufReader<File>>,
    batch: RecordBatch,
    row: usize,
}

impl RunCursor {
    /// The next batch of the run, `None` at its end.
    fn advance(&mut self) -> Result<bool> {
        loop {
            match self.reader.next() {
                None => return Ok(false),
                Some(Err(e)) => return Err(Error::arrow("reading spilled rows", e)),
                Some(Ok(b)) if b.num_rows() == 0 => continue,
                Some(Ok(b)) => {
                    self.batch = b;
                    self.row = 0;
                    return Ok(true);
                }
            }
        }
    }

    fn key(&self) -> Vec<u8> {
        keys(&self.batch).value(self.row).to_vec()
    }
}

impl Merge {
    fn open(paths: &[PathBuf]) -> Result<Merge> {
        let mut runs = Vec::with_capacity(paths.len());
        let mut heap = BinaryHeap::new();
        let mut schema = None;
        for path in paths {
            let file = File::open(path).map_err(|e| local_error(path, e))?;
            let reader = StreamReader::try_new(BufReader::new(file), None)
                .map_err(|e| Error::arrow("reading spilled rows", e))?;
            schema.get_or_insert_with(|| reader.schema());
            let mut cursor = RunCursor {
                batch: RecordBatch::new_empty(reader.schema()),
                reader,
                row: 0,
            };
            if cursor.advance()? {
                heap.push(Reverse((cursor.key(), runs.len())));
            }
            runs.push(cursor);
        }
        let schema = schema.ok_or_else(|| Error::Internal("a merge of no runs".into()))?;
        Ok(Merge { schema, runs, heap })
    }

    /// The next [`SORTED_BATCH_ROWS`] rows (keyed) in key order; `None` at the end.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        // batches the output rows come from: each run's current one, and those it finished
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut source_of: Vec<Option<usize>> = vec![None; self.runs.len()];
        let mut picked: Vec<(usize, usize)> = Vec::with_capacity(SORTED_BATCH_ROWS);
        while picked.len() < SORTED_BATCH_ROWS {
            let Some(Reverse((_, r))) = self.heap.pop() else {
                break;
            };
            let cursor = &mut self.runs[r];
            let source = *source_of[r].get_or_insert_with(|| {
                sources.push(cursor.batch.clone());
                sources.len() - 1
            });
            picked.push((source, cursor.row));
            cursor.row += 1;
            if cursor.row == cursor.batch.num_rows() {
                source_of[r] = None;
                if !cursor.advance()? {
                    continue;
                }
            }
            self.heap.push(Reverse((cursor.key(), r)));
        }
        if picked.is_empty() {
            return Ok(None);
        }
        let refs: Vec<&RecordBatch> = sources.iter().collect();
        interleave_record_batch(&refs, &picked)
            .map(Some)
            .map_err(|e| Error::arrow("merging sorted rows", e))
    }
}

/// A local file error as a storage error on `path`.
fn local_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source: object_store::Error::Generic {
            store: "local temporary files",
            source: Box::new(e),
        },
    }
}

#[cfg(test)]
#[path = "external_sort_tests.rs"]
mod tests;
