//! Diff reads (`incremental-between-scan-mode` = `diff`, Java `IncrementalDiffSplitRead`): the
//! rows of one bucket at the end snapshot against its rows at the start snapshot
//! ([`crate::scan::plan::plan_diff`] says which files each side has).
//!
//! * Primary-key tables: each side's files (the whole bucket) are merged as a batch read
//!   merges them (retracts dropped) into a key-ordered stream, and the two streams are walked
//!   together. A key only
//!   the start has is `-D` with the start's row (only when row kinds are read, as Java's
//!   `keepDelete`); a key only the end has is the end's row with its kind; a key both have is
//!   the end's row when the rows differ and nothing when they are equal. Rows are compared on
//!   every column read, which for change reads is every column (see [`ReadContext::of`]).
//! * Append tables: the rows of the files only the end has are `+I`, those of the files only
//!   the start has `-D`.
//!
//! Output batches are `[_SEQUENCE_NUMBER (0), _VALUE_KIND, read columns...]`, finished like
//! any other read. Memory: one decoded batch per side, plus the batches the pending output
//! points into (flushed at the batch size or when they pile up).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow_row::Rows;
use arrow_schema::{DataType as ArrowType, Field, Schema};
use arrow_select::interleave::interleave_record_batch;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::{SEQUENCE_NUMBER, VALUE_KIND};

use super::data_file::SystemColumns;
use super::split_read::ReadContext;
use crate::error::{Error, Result};
use crate::lsm::key::KeyEncoder;
use crate::scan::split::{Split, SplitFile};

/// Batches the pending output may point into before it is flushed.
const MAX_SOURCES: usize = 8;

impl ReadContext {
    /// The rows of a diff split (`before` are the start's files, `split.files` the end's), as
    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, read columns...]`.
    pub(super) fn diff_rows(
        self: &Arc<Self>,
        split: &Split,
        before: Vec<SplitFile>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let keep_deletes = self.with_row_kind();
        let Some(config) = self.merge_config() else {
            let added =
                self.chain_files(split.files.clone(), SystemColumns::None, self.batch_size());
            let added = added.and_then(|b| futures::future::ready(with_kind(&b, RowKind::Insert)));
            if !keep_deletes {
                return Ok(added.boxed());
            }
            let gone = self.chain_files(before, SystemColumns::None, self.batch_size());
            let gone = gone.and_then(|b| futures::future::ready(with_kind(&b, RowKind::Delete)));
            return Ok(added.chain(gone).boxed());
        };
        let side = |files: Vec<SplitFile>| -> Result<Side> {
            let only = Split {
                files,
                before_files: None,
                ..split.clone()
            };
            Ok(Side::new(self.merge_split(&only, config.clone())?))
        };
        let walk = Walk {
            before: side(before)?,
            after: side(split.files.clone())?,
            keys: KeyEncoder::new(config.key_indices.clone()),
            keep_deletes,
            batch_size: self.batch_size(),
            sources: Vec::new(),
            picks: Vec::new(),
            kinds: Vec::new(),
        };
        Ok(stream::try_unfold(walk, |mut walk| async move {
            Ok(walk.next_batch().await?.map(|b| (b, walk)))
        })
        .boxed())
    }
}

/// `batch` (values only) with a leading `_SEQUENCE_NUMBER` of 0 and `_VALUE_KIND` of `kind`.
fn with_kind(batch: &RecordBatch, kind: RowKind) -> Result<RecordBatch> {
    let n = batch.num_rows();
    system_columns(batch, Arc::new(Int8Array::from(vec![kind.code(); n])))
}

fn system_columns(values: &RecordBatch, kinds: ArrayRef) -> Result<RecordBatch> {
    let n = values.num_rows();
    let mut fields = vec![
        Arc::new(Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false)),
        Arc::new(Field::new(VALUE_KIND, ArrowType::Int8, false)),
    ];
    fields.extend(values.schema().fields().iter().cloned());
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![0i64; n])), kinds];
    columns.extend(values.columns().iter().cloned());
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("assembling diff rows", e))
}

/// One side of a primary-key diff: a merged, key-ordered stream of `[_VALUE_KIND, values...]`
/// and its current batch.
struct Side {
    rows: BoxStream<'static, Result<RecordBatch>>,
    current: Option<Current>,
    done: bool,
}

struct Current {
    values: RecordBatch,
    kinds: Int8Array,
    keys: Rows,
    pos: usize,
    /// Index of `values` among the walk's output sources.
    source: usize,
}

impl Side {
    fn new(rows: BoxStream<'static, Result<RecordBatch>>) -> Side {
        Side {
            rows,
            current: None,
            done: false,
        }
    }

    fn row(&self) -> Option<&Current> {
        self.current
            .as_ref()
            .filter(|c| c.pos < c.values.num_rows())
    }

    fn advance(&mut self) {
        if let Some(c) = &mut self.current {
            c.pos += 1;
        }
    }
}

/// The walk over both sides of a primary-key diff and the output it has picked so far.
struct Walk {
    before: Side,
    after: Side,
    keys: KeyEncoder,
    keep_deletes: bool,
    batch_size: usize,
    /// Batches the pending picks point into.
    sources: Vec<RecordBatch>,
    /// Pending output rows: (source, row).
    picks: Vec<(usize, usize)>,
    kinds: Vec<i8>,
}

impl Walk {
    /// The next output batch; `None` once both sides are exhausted.
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            for after in [false, true] {
                if !self.load(after).await? {
                    // the pending rows point into the batch being replaced
                    return self.flush().map(Some);
                }
            }
            let (b, a) = (self.before.row(), self.after.row());
            match (b, a) {
                (None, None) => return self.finish(),
                (Some(_), None) => self.pick_before(),
                (None, Some(_)) => self.pick_after(),
                (Some(b), Some(a)) => match b.keys.row(b.pos).cmp(&a.keys.row(a.pos)) {
                    Ordering::Less => self.pick_before(),
                    Ordering::Greater => self.pick_after(),
                    Ordering::Equal => {
                        if !same_values(&b.values, b.pos, &a.values, a.pos) {
                            self.pick_after();
                        } else {
                            self.after.advance();
                        }
                        self.before.advance();
                    }
                },
            }
            if self.picks.len() >= self.batch_size || self.sources.len() >= MAX_SOURCES {
                if !self.picks.is_empty() {
                    return self.flush().map(Some);
                }
                self.sources.clear();
                self.register_current();
            }
        }
    }

    /// The last output batch, if rows are pending.
    fn finish(&mut self) -> Result<Option<RecordBatch>> {
        if self.picks.is_empty() {
            return Ok(None);
        }
        self.flush().map(Some)
    }

    fn pick_before(&mut self) {
        let c = self.before.row().expect("a before row");
        if self.keep_deletes {
            self.picks.push((c.source, c.pos));
            self.kinds.push(RowKind::Delete.code());
        }
        self.before.advance();
    }

    fn pick_after(&mut self) {
        let c = self.after.row().expect("an after row");
        self.picks.push((c.source, c.pos));
        self.kinds.push(c.kinds.value(c.pos));
        self.after.advance();
    }

    /// Make sure the side has a current row unless it is exhausted. Returns false (loading
    /// nothing) when a new batch is due while pending picks still point into the old one.
    async fn load(&mut self, after: bool) -> Result<bool> {
        let side = if after {
            &mut self.after
        } else {
            &mut self.before
        };
        while side.row().is_none() && !side.done {
            if side.current.is_some() && !self.picks.is_empty() {
                return Ok(false);
            }
            let Some(batch) = side.rows.try_next().await? else {
                side.done = true;
                side.current = None;
                break;
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let kinds = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int8Array>()
                .ok_or_else(|| Error::invalid("merged rows lack a TINYINT _VALUE_KIND"))?
                .clone();
            let values = batch
                .project(&(1..batch.num_columns()).collect::<Vec<_>>())
                .map_err(|e| Error::arrow("projecting merged rows", e))?;
            let keys = self.keys.encode(&values, 0)?;
            self.sources.push(values.clone());
            side.current = Some(Current {
                values,
                kinds,
                keys,
                pos: 0,
                source: self.sources.len() - 1,
            });
        }
        Ok(true)
    }

    /// Build the pending rows into a batch; afterwards only the current batches are sources.
    fn flush(&mut self) -> Result<RecordBatch> {
        let sources: Vec<&RecordBatch> = self.sources.iter().collect();
        let values = interleave_record_batch(&sources, &self.picks)
            .map_err(|e| Error::arrow("gathering diff rows", e))?;
        let kinds: ArrayRef = Arc::new(Int8Array::from(std::mem::take(&mut self.kinds)));
        self.picks.clear();
        self.sources.clear();
        self.register_current();
        system_columns(&values, kinds)
    }

    fn register_current(&mut self) {
        for side in [&mut self.before, &mut self.after] {
            if let Some(c) = &mut side.current {
                self.sources.push(c.values.clone());
                c.source = self.sources.len() - 1;
            }
        }
    }
}

/// Whether row `i` of `a` and row `j` of `b` hold the same values (same schema).
fn same_values(a: &RecordBatch, i: usize, b: &RecordBatch, j: usize) -> bool {
    a.columns()
        .iter()
        .zip(b.columns())
        .all(|(x, y)| x.slice(i, 1).to_data() == y.slice(j, 1).to_data())
}
