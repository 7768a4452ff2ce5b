//! Changelog produced by compaction, for `changelog-producer=full-compaction` and `lookup`
//! (Java `ChangelogMergeTreeRewriter`, `FullChangelogMergeFunctionWrapper`,
//! `LookupChangelogMergeFunctionWrapper`, `FirstRowMergeFunctionWrapper`).
//!
//! When (Java `rewriteChangelog` / `upgradeChangelog`):
//! * full-compaction: a rewrite or an upgrade whose output level is the max level;
//! * lookup: a rewrite to a level above 0 that holds a level-0 file, or the upgrade of a
//!   level-0 file (upgrades that produce changelog rewrite the file).
//!
//! How: the merged rows of a rewrite (`[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]`, retracts
//! kept) are joined by key with the *before* rows of the same section: the section's files at
//! the max level (full-compaction: Java's `topLevelKv`) or at any level above 0 (lookup: the
//! newest of them is Java's `highLevel`), merged by deduplication so each key has its newest
//! record. Both streams are in key order, so the join holds one batch of each.
//!
//! Per key, with `after` the merged row and `before` the joined row, if any:
//! * full-compaction: no `before` → `+I after` when `after` is an add; `before` is the key's
//!   only record (`after` carries its sequence number) → nothing; else `-D before` when
//!   `after` is a retract, otherwise `-U before, +U after`;
//! * lookup: the key has no level-0 record (`after` is not newer than `before`) → nothing;
//!   else as full-compaction, a retract `before` counting as none;
//! * lookup on first-row tables: `+I after` only when no level above 0 holds the key.
//!
//! With `changelog-producer.row-deduplicate`, `-U/+U` pairs whose values are equal are not
//! emitted. Sequence numbers identify the key's only record because records of one key are
//! numbered in write order and higher levels hold older records. tidelake compacts lookup
//! tables fully (see `job`), so Java's lookup into levels below the output never finds a
//! record and is not needed.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, Int8Array, RecordBatch};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_select::interleave::interleave;
use futures::stream::{BoxStream, TryStreamExt};
use tidelake_spec::options::{ChangelogProducer, MergeEngine, Options};

use crate::error::{Error, Result};
use crate::read::split_read::{
    ROW_KIND_DELETE, ROW_KIND_INSERT, ROW_KIND_UPDATE_AFTER, ROW_KIND_UPDATE_BEFORE,
};

/// Columns before the value columns in merged rows (`_SEQUENCE_NUMBER`, `_VALUE_KIND`).
const VALUE_OFFSET: usize = 2;

/// How a table's compactions produce changelog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangelogMode {
    /// `changelog-producer=full-compaction`.
    FullCompaction,
    /// `changelog-producer=lookup`, other merge engines than first-row.
    Lookup,
    /// `changelog-producer=lookup` with `merge-engine=first-row`.
    FirstRowLookup,
}

/// The changelog settings of a table's compactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangelogSpec {
    pub mode: ChangelogMode,
    /// `changelog-producer.row-deduplicate`.
    pub row_deduplicate: bool,
}

impl ChangelogSpec {
    /// The spec of a table, `None` when its compactions produce no changelog. First-row tables
    /// support only `none` and `lookup` (Java's schema validation).
    pub fn from_options(opts: &Options) -> Result<Option<ChangelogSpec>> {
        let spec = |e| Error::from_spec("table options", e);
        let first_row = opts.merge_engine().map_err(spec)? == MergeEngine::FirstRow;
        let mode = match opts.changelog_producer().map_err(spec)? {
            ChangelogProducer::FullCompaction if first_row => {
                return Err(Error::invalid(
                    "merge-engine=first-row supports only changelog-producer none or lookup, not full-compaction",
                ))
            }
            ChangelogProducer::FullCompaction => ChangelogMode::FullCompaction,
            ChangelogProducer::Lookup if first_row => ChangelogMode::FirstRowLookup,
            ChangelogProducer::Lookup => ChangelogMode::Lookup,
            _ => return Ok(None),
        };
        Ok(Some(ChangelogSpec {
            mode,
            row_deduplicate: opts.changelog_producer_row_deduplicate().map_err(spec)?,
        }))
    }

    /// Java `rewriteChangelog`: does rewriting files of `levels` into `output_level` produce
    /// changelog?
    pub fn on_rewrite(&self, output_level: i32, max_level: i32, mut levels: impl Iterator<Item = i32>) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => output_level == max_level,
            _ => output_level != 0 && levels.any(|l| l == 0),
        }
    }

    /// Java `upgradeChangelog`: does moving a file of `level` to `output_level` produce
    /// changelog (and so rewrite the file)?
    pub fn on_upgrade(&self, output_level: i32, max_level: i32, level: i32) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => output_level == max_level,
            _ => level == 0,
        }
    }

    /// Whether a file of `level` holds *before* records (see the module docs).
    pub fn is_before_level(&self, level: i32, max_level: i32) -> bool {
        match self.mode {
            ChangelogMode::FullCompaction => level == max_level,
            _ => level > 0,
        }
    }
}

/// The *before* rows of a section, with the current batch and its encoded keys.
pub struct ChangelogJoin {
    spec: ChangelogSpec,
    key_indices: Vec<usize>,
    converter: Option<RowConverter>,
    before: BoxStream<'static, Result<RecordBatch>>,
    /// Current before batch, its keys and the next row to look at.
    head: Option<(RecordBatch, Rows, usize)>,
    exhausted: bool,
}

/// A changelog row: the source batch (an index into the before batches, `usize::MAX`: the
/// merged batch), row, kind.
type Pick = (usize, usize, i8);

/// The before record of a key.
#[derive(Clone, Copy)]
struct Before {
    src: usize,
    pos: usize,
    seq: i64,
    add: bool,
}

impl ChangelogJoin {
    /// Join merged rows with `before` (newest before record per key, in key order, as
    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]`); keys are the value columns `key_indices`.
    pub fn new(
        spec: ChangelogSpec,
        key_indices: Vec<usize>,
        before: BoxStream<'static, Result<RecordBatch>>,
    ) -> ChangelogJoin {
        ChangelogJoin {
            spec,
            key_indices,
            converter: None,
            before,
            head: None,
            exhausted: false,
        }
    }

    /// The changelog rows of one merged batch (retracts kept), `None` when there are none.
    pub async fn changes(&mut self, merged: &RecordBatch) -> Result<Option<RecordBatch>> {
        let keys = self.encode(merged)?;
        let seqs = sequences(merged)?;
        // before batches this merged batch joined with, in order
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut picks: Vec<Pick> = Vec::new();
        for row in 0..merged.num_rows() {
            let after_add = is_add(kind_at(merged, row)?);
            let after = |kind| (usize::MAX, row, kind);
            let before = match self.seek(&keys, row, &mut sources).await? {
                Some((src, pos)) => Some(Before {
                    src,
                    pos,
                    seq: sequences(&sources[src])?.value(pos),
                    add: is_add(kind_at(&sources[src], pos)?),
                }),
                None => None,
            };
            let before = match (self.spec.mode, before) {
                (ChangelogMode::FirstRowLookup, Some(_)) => continue,
                // the key's only record (full) / no level-0 record (lookup)
                (_, Some(b)) if seqs.value(row) <= b.seq => continue,
                (ChangelogMode::Lookup, Some(b)) if !b.add => None,
                (_, b) => b,
            };
            match before {
                None if after_add => picks.push(after(ROW_KIND_INSERT)),
                None => {}
                Some(b) if !after_add => picks.push((b.src, b.pos, ROW_KIND_DELETE)),
                Some(b) if self.spec.row_deduplicate && same_values(&sources[b.src], b.pos, merged, row) => {}
                Some(b) => {
                    picks.push((b.src, b.pos, ROW_KIND_UPDATE_BEFORE));
                    picks.push(after(ROW_KIND_UPDATE_AFTER));
                }
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        build(&sources, merged, &picks).map(Some)
    }

    /// Move to `keys[row]` in the before rows; the (source, row) holding it, if any.
    async fn seek(
        &mut self,
        keys: &Rows,
        row: usize,
        sources: &mut Vec<RecordBatch>,
    ) -> Result<Option<(usize, usize)>> {
        let key = keys.row(row);
        loop {
            if self.head.is_none() {
                if self.exhausted {
                    return Ok(None);
                }
                match self.before.try_next().await? {
                    None => {
                        self.exhausted = true;
                        return Ok(None);
                    }
                    Some(batch) if batch.num_rows() == 0 => continue,
                    Some(batch) => {
                        let rows = self.encode(&batch)?;
                        self.head = Some((batch, rows, 0));
                    }
                }
            }
            let (batch, rows, pos) = self.head.as_mut().expect("head loaded above");
            while *pos < rows.num_rows() && rows.row(*pos) < key {
                *pos += 1;
            }
            if *pos == rows.num_rows() {
                self.head = None;
                continue;
            }
            if rows.row(*pos) != key {
                return Ok(None);
            }
            let found = *pos;
            *pos += 1;
            if !sources.last().is_some_and(|s| same_batch(s, batch)) {
                sources.push(batch.clone());
            }
            return Ok(Some((sources.len() - 1, found)));
        }
    }

    /// Encode the key columns of a `[_SEQUENCE_NUMBER, _VALUE_KIND, v0..vn]` batch.
    fn encode(&mut self, batch: &RecordBatch) -> Result<Rows> {
        let columns = self
            .key_indices
            .iter()
            .map(|&i| {
                batch.columns().get(i + VALUE_OFFSET).cloned().ok_or_else(|| {
                    Error::invalid(format!("changelog input has no key column at {}", i + VALUE_OFFSET))
                })
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        if self.converter.is_none() {
            let fields = columns.iter().map(|c| SortField::new(c.data_type().clone())).collect();
            self.converter = Some(RowConverter::new(fields).map_err(|e| Error::arrow("key encoding", e))?);
        }
        self.converter
            .as_ref()
            .expect("converter created above")
            .convert_columns(&columns)
            .map_err(|e| Error::arrow("key encoding", e))
    }
}

fn is_add(kind: i8) -> bool {
    kind == ROW_KIND_INSERT || kind == ROW_KIND_UPDATE_AFTER
}

fn kind_at(batch: &RecordBatch, row: usize) -> Result<i8> {
    batch
        .column(1)
        .as_primitive_opt::<Int8Type>()
        .map(|k| k.value(row))
        .ok_or_else(|| Error::invalid("_VALUE_KIND is not TINYINT"))
}

fn sequences(batch: &RecordBatch) -> Result<&arrow_array::Int64Array> {
    batch
        .column(0)
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| Error::invalid("_SEQUENCE_NUMBER is not BIGINT"))
}

fn same_batch(a: &RecordBatch, b: &RecordBatch) -> bool {
    a.num_rows() == b.num_rows()
        && a.columns().iter().zip(b.columns()).all(|(x, y)| Arc::ptr_eq(x, y))
}

/// Java's value comparison: every value column equal (nulls equal nulls).
fn same_values(a: &RecordBatch, i: usize, b: &RecordBatch, j: usize) -> bool {
    a.columns()
        .iter()
        .zip(b.columns())
        .skip(VALUE_OFFSET)
        .all(|(x, y)| x.slice(i, 1).to_data() == y.slice(j, 1).to_data())
}

/// The picked rows as one batch shaped like `merged`, `_VALUE_KIND` replaced.
fn build(sources: &[RecordBatch], merged: &RecordBatch, picks: &[Pick]) -> Result<RecordBatch> {
    let merged_source = sources.len();
    let indices: Vec<(usize, usize)> = picks
        .iter()
        .map(|&(src, row, _)| (if src == usize::MAX { merged_source } else { src }, row))
        .collect();
    let mut columns = Vec::with_capacity(merged.num_columns());
    for c in 0..merged.num_columns() {
        if c == 1 {
            let kinds: Int8Array = picks.iter().map(|&(_, _, k)| Some(k)).collect();
            columns.push(Arc::new(kinds) as ArrayRef);
            continue;
        }
        let arrays: Vec<&dyn Array> = sources
            .iter()
            .chain(std::iter::once(merged))
            .map(|b| b.column(c).as_ref())
            .collect();
        columns.push(interleave(&arrays, &indices).map_err(|e| Error::arrow("changelog rows", e))?);
    }
    RecordBatch::try_new(merged.schema(), columns).map_err(|e| Error::arrow("changelog rows", e))
}
