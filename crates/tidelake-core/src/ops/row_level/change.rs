//! [`RowLevelChange`]: what a row-level change does to the rows of its tasks, accumulated and
//! turned into a [`PreparedChange`] (versioned bytes); [`commit_row_level`] commits the
//! prepared changes of one plan as one transaction.
//!
//! The caller reads a task's rows ([`RowLevelChange::read`]), evaluates its conditions on them
//! and says what happens: [`RowLevelChange::remove`] (append tables: the masked rows of the
//! last read go, as deletion-vector entries or by rewriting their splits without them),
//! [`RowLevelChange::update`] / [`RowLevelChange::insert`] (rows written), and
//! [`RowLevelChange::delete_keys`] (primary-key tables: `-D` records).
//!
//! Invariants: rows removed on an append table are counted deleted unless their new version
//! is given to `update` (an update removes the old row and writes the new one, so deleted =
//! removed - updated there); every read of one change is of the change's snapshot and table;
//! a [`PreparedChange`] that [`PreparedChange::to_bytes`] returned has its files written but
//! not committed, and [`commit_row_level`] deletes them when the commit is refused.

use std::collections::BTreeMap;

use arrow_array::{Array, BooleanArray, Int32Array, Int64Array, RecordBatch};
use arrow_schema::SchemaRef;
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use tidelake_spec::row_kind::RowKind;

use super::plan::RowLevelStrategy;
use super::task::RowLevelTask;
use crate::commit::{CommitMessage, Committed, FileStoreCommit};
use crate::compact::inline_compaction;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::{Read, TableCommit};
use crate::read::split_read::{FILE_INDEX_COLUMN, ROW_POSITION_COLUMN};
use crate::scan::predicate::Predicate;
use crate::scan::Split;
use crate::table::Table;
use crate::write::deletion::deletion_messages;
use crate::write::input::RowKinds;
use crate::write::message::{from_hex, to_hex};
use crate::write::table_write::TableWrite;

/// Version of the byte form written by [`PreparedChange::to_bytes`].
pub const PREPARED_CHANGE_VERSION: u32 = 1;

/// A row-level change with its files written but not committed: what one task (or a whole
/// one-process change) returns to the committer.
#[derive(Clone, Debug)]
pub struct PreparedChange {
    /// The snapshot its rows were read from (`None`: the table had none).
    pub read_snapshot: Option<i64>,
    pub messages: Vec<CommitMessage>,
    /// Splits whose files the change rewrote (append tables without deletion vectors).
    pub rewritten: Vec<Split>,
    pub rows_inserted: u64,
    pub rows_updated: u64,
    pub rows_deleted: u64,
}

/// The byte form of a [`PreparedChange`]: commit messages as the hex of their own versioned
/// bytes.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    version: u32,
    read_snapshot: Option<i64>,
    messages: Vec<String>,
    rewritten: Vec<Split>,
    rows_inserted: u64,
    rows_updated: u64,
    rows_deleted: u64,
}

impl PreparedChange {
    /// The versioned byte form.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let envelope = Envelope {
            version: PREPARED_CHANGE_VERSION,
            read_snapshot: self.read_snapshot,
            messages: self
                .messages
                .iter()
                .map(|m| m.to_bytes().map(|b| to_hex(&b)))
                .collect::<Result<_>>()?,
            rewritten: self.rewritten.clone(),
            rows_inserted: self.rows_inserted,
            rows_updated: self.rows_updated,
            rows_deleted: self.rows_deleted,
        };
        crate::versioned::encode(&envelope, "prepared change")
    }

    /// Decode [`PreparedChange::to_bytes`] output; another version or malformed input is
    /// [`Error::Invalid`].
    pub fn from_bytes(bytes: &[u8]) -> Result<PreparedChange> {
        let invalid =
            |reason: String| Error::invalid(format!("not a tidelake prepared change: {reason}"));
        let e: Envelope =
            crate::versioned::decode(bytes, "prepared change", PREPARED_CHANGE_VERSION)?;
        let messages = e
            .messages
            .iter()
            .map(|hex| {
                let bytes = from_hex(hex).ok_or_else(|| invalid("bad message hex".to_string()))?;
                CommitMessage::from_bytes(&bytes)
            })
            .collect::<Result<_>>()?;
        Ok(PreparedChange {
            read_snapshot: e.read_snapshot,
            messages,
            rewritten: e.rewritten,
            rows_inserted: e.rows_inserted,
            rows_updated: e.rows_updated,
            rows_deleted: e.rows_deleted,
        })
    }
}

/// The rows of one split a change read from an append table, and which of them go.
struct SplitRows {
    split: Split,
    batches: Vec<RecordBatch>,
    removed: Vec<bool>,
}

/// The rows of the last [`RowLevelChange::read`]: its strategy and, for append tables, each
/// split's rows.
struct LastRead {
    strategy: RowLevelStrategy,
    splits: Vec<SplitRows>,
}

/// A row-level change being computed from snapshot `read_snapshot` of `table`; see the module
/// docs.
pub struct RowLevelChange {
    table: Table,
    read_snapshot: Option<i64>,
    write: Option<TableWrite>,
    /// Every append split read so far (their removed rows are applied at `finish`).
    read: Vec<SplitRows>,
    last: Option<LastRead>,
    inserted: u64,
    updated: u64,
    keys_deleted: u64,
}

impl RowLevelChange {
    /// A change of `table` computed from snapshot `read_snapshot` (`None`: the table had none;
    /// such a change only inserts).
    pub fn new(table: Table, read_snapshot: Option<i64>) -> RowLevelChange {
        RowLevelChange {
            table,
            read_snapshot,
            write: None,
            read: Vec::new(),
            last: None,
            inserted: 0,
            updated: 0,
            keys_deleted: 0,
        }
    }

    /// The rows `task` gives to evaluate, and their schema: primary-key tables the merged rows
    /// the plan's filter keeps; append tables with deletion vectors every live row of its
    /// splits with `_FILE_INDEX` and `_ROW_POSITION`; other append tables every live row of
    /// its splits. [`Self::remove`] then applies to these rows.
    pub async fn read(&mut self, task: &RowLevelTask) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        task.check_table(&self.table)?;
        if task
            .snapshot_id()
            .is_some_and(|id| Some(id) != self.read_snapshot)
        {
            return Err(Error::invalid(format!(
                "a task of snapshot {:?} read by a change of snapshot {:?}",
                task.snapshot_id(),
                self.read_snapshot
            )));
        }
        self.flush_last();
        let mut read = Read::new(&self.table);
        if task.strategy == RowLevelStrategy::RowKinds {
            if let Some(filter) = &task.filter {
                read = read.filter(Predicate::from_json(filter)?);
            }
        }
        let reader = read.split_reader(task.schema_id).await?;
        let mut last = LastRead {
            strategy: task.strategy,
            splits: Vec::new(),
        };
        let (schema, batches) = match task.strategy {
            RowLevelStrategy::RowKinds => {
                let rows = reader
                    .stream(task.splits.clone(), None)
                    .try_collect()
                    .await?;
                (reader.output_schema(), rows)
            }
            strategy => {
                let positioned = strategy == RowLevelStrategy::DeletionVectors;
                let mut all = Vec::new();
                for split in &task.splits {
                    let batches: Vec<RecordBatch> = if positioned {
                        reader.read_positioned(split)?.try_collect().await?
                    } else {
                        reader
                            .stream(vec![split.clone()], None)
                            .try_collect()
                            .await?
                    };
                    let rows = batches.iter().map(RecordBatch::num_rows).sum();
                    all.extend(batches.iter().cloned());
                    last.splits.push(SplitRows {
                        split: split.clone(),
                        batches,
                        removed: vec![false; rows],
                    });
                }
                let schema = if positioned {
                    reader.positioned_schema()
                } else {
                    reader.output_schema()
                };
                (schema, all)
            }
        };
        self.last = Some(last);
        Ok((schema, batches))
    }

    /// The table changed.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Append tables: remove the rows of the last [`Self::read`] where `mask` holds (null:
    /// keeps the row); `mask` has one value per row read.
    pub fn remove(&mut self, mask: &BooleanArray) -> Result<()> {
        let last = self
            .last
            .as_mut()
            .ok_or_else(|| Error::invalid("remove before any read"))?;
        if last.strategy == RowLevelStrategy::RowKinds {
            return Err(Error::invalid(
                "a primary-key table's rows are removed with delete_keys, not remove",
            ));
        }
        let rows: usize = last.splits.iter().map(|s| s.removed.len()).sum();
        if mask.len() != rows {
            return Err(Error::invalid(format!(
                "remove mask has {} values for {rows} rows read",
                mask.len()
            )));
        }
        let mut at = 0;
        for split in &mut last.splits {
            for removed in &mut split.removed {
                *removed |= mask.is_valid(at) && mask.value(at);
                at += 1;
            }
        }
        Ok(())
    }

    async fn writer(&mut self) -> Result<&mut TableWrite> {
        if self.write.is_none() {
            crate::iceberg::check_table(&self.table)?;
            let write = TableWrite::new(self.table.clone(), inline_compaction).await?;
            self.write = Some(write);
        }
        Ok(self.write.as_mut().expect("opened above"))
    }

    async fn write(&mut self, rows: &RecordBatch, kind: RowKind) -> Result<()> {
        if rows.num_rows() > 0 {
            self.writer()
                .await?
                .write(rows, RowKinds::Fixed(kind.code()))
                .await?;
        }
        Ok(())
    }

    /// Write new rows (a merge's inserts).
    pub async fn insert(&mut self, rows: &RecordBatch) -> Result<()> {
        self.write(rows, RowKind::Insert).await?;
        self.inserted += rows.num_rows() as u64;
        Ok(())
    }

    /// Write the new version of updated rows (append tables: their old rows are
    /// [`Self::remove`]d).
    pub async fn update(&mut self, rows: &RecordBatch) -> Result<()> {
        self.write(rows, RowKind::Insert).await?;
        self.updated += rows.num_rows() as u64;
        Ok(())
    }

    /// Primary-key tables: delete the rows with these keys (`-D` records; whole rows, so that
    /// NOT NULL value columns are filled).
    pub async fn delete_keys(&mut self, rows: &RecordBatch) -> Result<()> {
        if !self.table.schema().primary_keys.is_empty() {
            self.write(rows, RowKind::Delete).await?;
            self.keys_deleted += rows.num_rows() as u64;
            return Ok(());
        }
        Err(Error::invalid(
            "an append table's rows are removed with remove, not delete_keys",
        ))
    }

    /// Keep the last read's splits that lose rows, drop the others.
    fn flush_last(&mut self) {
        if let Some(last) = self.last.take() {
            let touched = last
                .splits
                .into_iter()
                .filter(|s| s.removed.contains(&true));
            self.read.extend(touched);
        }
    }

    /// Drop the change, deleting the files it wrote.
    pub async fn abort(mut self) -> Result<()> {
        match self.write.as_mut() {
            Some(write) => write.abort().await,
            None => Ok(()),
        }
    }

    /// Write what the change does and return it uncommitted. On an error nothing it wrote is
    /// left behind (the writer is aborted, written deletion-vector files deleted).
    pub async fn finish(mut self) -> Result<PreparedChange> {
        let result = self.prepare().await;
        if result.is_err() {
            if let Some(write) = self.write.as_mut() {
                if let Err(e) = write.abort().await {
                    log::warn!(target: "tidelake.commit", "{}: could not delete the files of a failed row-level change: {e}", self.table.location());
                }
            }
        }
        result
    }

    async fn prepare(&mut self) -> Result<PreparedChange> {
        self.flush_last();
        let touched = std::mem::take(&mut self.read);
        let removed: u64 = touched
            .iter()
            .map(|s| s.removed.iter().filter(|r| **r).count() as u64)
            .sum();
        let mut rewritten = Vec::new();
        let mut deletes = Vec::new();
        for split in touched {
            if split
                .batches
                .first()
                .and_then(|b| b.column_by_name(ROW_POSITION_COLUMN))
                .is_some()
            {
                deletes.push((split.split.clone(), positions(&split)?));
                continue;
            }
            let mut at = 0;
            for batch in &split.batches {
                let keep: BooleanArray = split.removed[at..at + batch.num_rows()]
                    .iter()
                    .map(|r| Some(!r))
                    .collect();
                at += batch.num_rows();
                let kept = arrow_select::filter::filter_record_batch(batch, &keep)
                    .map_err(|e| Error::arrow("keeping the rows of a rewritten split", e))?;
                self.write(&kept, RowKind::Insert).await?;
            }
            rewritten.push(split.split);
        }
        let mut messages = deletion_messages(&self.table, deletes).await?;
        if let Some(write) = self.write.as_mut() {
            match write.prepare_commit().await {
                Ok(written) => messages.extend(written),
                Err(e) => {
                    discard(&self.table, &messages).await;
                    return Err(e);
                }
            }
        }
        Ok(PreparedChange {
            read_snapshot: self.read_snapshot,
            messages,
            rewritten,
            rows_inserted: self.inserted,
            rows_updated: self.updated,
            rows_deleted: self.keys_deleted + removed.saturating_sub(self.updated),
        })
    }
}

/// Per file of a split read with positions, the positions of its removed rows.
fn positions(split: &SplitRows) -> Result<Vec<(usize, Vec<u64>)>> {
    let mut out: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    let mut at = 0;
    for batch in &split.batches {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| Error::invalid(format!("a positioned read without {name}")))
        };
        let files = column(FILE_INDEX_COLUMN)?;
        let rows = column(ROW_POSITION_COLUMN)?;
        let (Some(files), Some(rows)) = (
            files.as_any().downcast_ref::<Int32Array>(),
            rows.as_any().downcast_ref::<Int64Array>(),
        ) else {
            return Err(Error::invalid(
                "a positioned read of unexpected column types",
            ));
        };
        for i in 0..batch.num_rows() {
            if split.removed[at + i] {
                out.entry(files.value(i) as usize)
                    .or_default()
                    .push(rows.value(i) as u64);
            }
        }
        at += batch.num_rows();
    }
    Ok(out.into_iter().collect())
}

/// Delete the files `messages` add, leaving what fails to orphan cleaning.
async fn discard(table: &Table, messages: &[CommitMessage]) {
    let result = match FileStoreCommit::new(table.clone(), "discard") {
        Ok(commit) => commit.discard(messages).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        log::warn!(target: "tidelake.commit", "{}: could not delete the files of a refused row-level change: {e}", table.location());
    }
}

/// Commit the prepared changes of one plan (all read from one snapshot) as one transaction of
/// `commit_user` with `identifier` ([`TableCommit::row_level`]: refused when a commit since
/// the snapshot conflicts). When it is refused ([`Error::CommitConflict`]) or the snapshot
/// expired, their files are deleted before the error returns. Returns the snapshot ids.
/// Where `task`'s filter holds on `rows` (rows a [`RowLevelChange::read`] of that task gave,
/// without the position columns): the engine's predicate, as a read of `table` with the same
/// filter keeps rows (every row when the task has no filter), so a change selects exactly the
/// rows a read selects, nulls, NaN and casts included.
pub async fn matching(
    table: &Table,
    task: &RowLevelTask,
    rows: &RecordBatch,
) -> Result<BooleanArray> {
    let Some(filter) = &task.filter else {
        return Ok(BooleanArray::from(vec![true; rows.num_rows()]));
    };
    let schema = table.schema_by_id(task.schema_id).await?;
    Predicate::from_json(filter)?
        .bind(&schema.fields)?
        .evaluate(rows)
}

pub async fn commit_row_level(
    table: &Table,
    commit_user: &str,
    identifier: i64,
    changes: Vec<PreparedChange>,
) -> Result<Committed> {
    let Some(read_snapshot) = changes.first().map(|c| c.read_snapshot) else {
        return Ok(Committed::default());
    };
    if changes.iter().any(|c| c.read_snapshot != read_snapshot) {
        let mut snapshots: Vec<String> = changes
            .iter()
            .map(|c| {
                c.read_snapshot
                    .map_or("none".to_string(), |s| s.to_string())
            })
            .collect();
        snapshots.sort();
        snapshots.dedup();
        return Err(Error::invalid(format!(
            "the changes were prepared from different snapshots [{}]",
            snapshots.join(", ")
        )));
    }
    let mut messages = Vec::new();
    let mut rewritten = Vec::new();
    for change in changes {
        messages.extend(change.messages);
        rewritten.extend(change.rewritten);
    }
    let commit = TableCommit::new(table.clone(), commit_user).identifier(identifier);
    let result = commit
        .row_level(messages.clone(), &rewritten, read_snapshot)
        .await;
    if let Err(e) = &result {
        if matches!(
            e.kind(),
            ErrorKind::CommitConflict | ErrorKind::SnapshotExpired
        ) {
            discard(table, &messages).await; // nothing landed: the files are garbage
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_change_bytes_round_trip_and_refuse_other_versions() {
        let change = PreparedChange {
            read_snapshot: Some(7),
            messages: Vec::new(),
            rewritten: Vec::new(),
            rows_inserted: 1,
            rows_updated: 2,
            rows_deleted: 3,
        };
        let back = PreparedChange::from_bytes(&change.to_bytes().unwrap()).unwrap();
        assert_eq!(back.read_snapshot, Some(7));
        assert_eq!(
            (back.rows_inserted, back.rows_updated, back.rows_deleted),
            (1, 2, 3)
        );
        let mut value: serde_json::Value =
            serde_json::from_slice(&change.to_bytes().unwrap()).unwrap();
        value["version"] = serde_json::json!(99);
        let err = PreparedChange::from_bytes(&serde_json::to_vec(&value).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("prepared change version 99 is not supported"),
            "{err}"
        );
    }
}
