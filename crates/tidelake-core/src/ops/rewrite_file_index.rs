//! Rewriting data-file indexes ([`RewriteFileIndex`]; Java `RewriteFileIndexAction`, Flink's
//! `CALL sys.rewrite_file_index(table, partitions)`): after `file-index.<type>.columns` options
//! are added, changed or removed, the live data files of the latest snapshot (every partition,
//! or those selected) get the indexes the options now ask for, without rewriting their rows.
//!
//! ```text
//!  latest snapshot S ─► each live data file of the selected partitions (append or primary key,
//!        every level and bucket) read whole, in file order, in the schema it was written with
//!        ─► the indexes of the table's current `file-index.*` options (the writers' builders)
//!        ─► embedded in the entry when at most `file-index.in-manifest-threshold` bytes, else a
//!           new `.index` file next to the data file
//!        ─► one COMPACT snapshot: per changed file, DELETE of its entry and ADD of the same
//!           data file with the new index (conflict-checked as compactions are)
//! ```
//!
//! Rules (Java's `RewriteFileIndexSink.FileIndexProcessor`): columns are found by field id, so a
//! file written before a column was renamed is indexed under the name it has in the file, and a
//! column it lacks is not indexed; rows are indexed by their position in the file (deletion
//! vectors are not applied: reads apply them after the index); a new index file never
//! overwrites one a snapshot refers to ([`next_index_file_name`]). Without a snapshot nothing is
//! done.
//!
//! Where tidelake differs from Java 1.3.1 (whose readers read both forms alike):
//! * the file's index afterwards is exactly what the options ask for, byte for byte what a
//!   writer would have produced: Java also keeps index types of a still-indexed column that
//!   are no longer configured (its clean-up loop compares a map with itself);
//! * the index is stored one way: Java keeps a previous embedded index when it writes an index
//!   file (and its readers then keep reading the stale embedded one), and keeps the previous
//!   index file in the entry when it embeds; here the previous form is dropped. With no index
//!   configured, a file's index is removed (Java drops index files but keeps embedded bytes);
//! * files whose index would not change (same bytes, stored the same way) are left out of the
//!   commit, and nothing is committed when no file changes: Java commits every file and writes
//!   every index file again, and a file whose entry comes out identical (no index configured,
//!   or the same embedded index) gets a DELETE and an ADD of the identical entry, which Java's
//!   readers read as the file gone (checked against Java 1.3.1 in
//!   test_interop_java_rewrite_file_index.py).
//!
//! Invariants: data files are never written; a file deleted or changed by another commit since
//! S (a compaction, an overwrite, another rewrite) refuses the commit with
//! [`Error::CommitConflict`], and the index files written for it are deleted (also on any other
//! failure before the commit lands), so a refused rewrite leaves nothing behind; files other
//! commits add meanwhile are not touched (they keep the indexes their writers built, or none
//! if written before the options). Index files
//! the rewrite replaces stay for older snapshots and go when those expire
//! ([`crate::maintenance`]'s expiry; Java's leaves them to orphan cleaning).

use std::collections::HashMap;
use std::sync::Arc;

use futures::TryStreamExt;
use tidelake_spec::file_index::{
    column_indexes, in_manifest_threshold, next_index_file_name, ColumnIndex, INDEX_FILE_SUFFIX,
};
use tidelake_spec::manifest::DataFileMeta;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::commit::{CommitMessage, Committed, FileStoreCommit, PartitionFilter, PartitionMatcher};
use crate::error::{Error, Result};
use crate::io::failpoint;
use crate::layout::TableLayout;
use crate::read::data_file::{read_data_file, FileFormat, SystemColumns};
use crate::scan::predicate::Predicate;
use crate::state::{LiveFiles, Pruning};
use crate::table::Table;
use crate::write::file_writer::file_index::IndexPlan;

use super::after_commit;

/// Rows per batch when a data file is read for its indexes.
const BATCH_ROWS: usize = 4096;

/// The rewrite of the file indexes of a table's live data files, every partition or those
/// [`RewriteFileIndex::partitions`] selects.
#[derive(Debug, Clone)]
pub struct RewriteFileIndex {
    table: Table,
    partitions: Option<Predicate>,
}

impl RewriteFileIndex {
    pub fn new(table: &Table) -> RewriteFileIndex {
        RewriteFileIndex {
            table: table.clone(),
            partitions: None,
        }
    }

    /// Only the partitions `filter` (on partition columns) selects.
    pub fn partitions(mut self, filter: Predicate) -> RewriteFileIndex {
        self.partitions = Some(filter);
        self
    }

    /// Rebuild, store and commit (see the module docs): the COMPACT snapshot, none when no
    /// file's index changes.
    pub async fn run(self) -> Result<Committed> {
        let table = self.table.reopen().await?;
        let layout = TableLayout::new(table.schema())?;
        let mut selected = match &self.partitions {
            Some(filter) => Some(PartitionMatcher::new(
                &layout,
                &PartitionFilter::Predicate(filter.clone()),
            )?),
            None => None,
        };
        let Some((snapshot, live)) = LiveFiles::read_latest(&table, Pruning::all).await? else {
            return Ok(Committed::default());
        };
        let mut rewrite = Rewrite::new(&table)?;
        let built = async {
            let mut messages = Vec::new();
            for bucket in live.buckets() {
                if let Some(m) = selected.as_mut() {
                    if !m.matches(&layout, &bucket.partition)? {
                        continue;
                    }
                }
                let values = layout.decode_partition(&bucket.partition)?;
                let dir = layout.bucket_path(&values, bucket.bucket)?;
                let mut message = CommitMessage::new(
                    bucket.partition.clone(),
                    bucket.bucket,
                    bucket.total_buckets,
                );
                message.base_snapshot = Some(snapshot.id);
                for e in &bucket.files {
                    if let Some(indexed) = rewrite.file(&dir, &e.file).await? {
                        message.compact_before.push(e.file.clone());
                        message.compact_after.push(indexed);
                    }
                }
                if !message.compact_after.is_empty() {
                    messages.push(message);
                }
            }
            Ok::<_, Error>(messages)
        }
        .await;
        let messages = match built {
            Ok(messages) if messages.is_empty() => return Ok(Committed::default()),
            Ok(messages) => messages,
            Err(e) => {
                rewrite.discard().await;
                return Err(e);
            }
        };
        if let Err(e) = before_commit() {
            rewrite.discard().await;
            return Err(e);
        }
        let committer = FileStoreCommit::new(
            table.clone(),
            format!("tidelake-rewrite-file-index-{}", table.env().uuid()),
        )?;
        let committed = match committer
            .commit_reporting(messages, BATCH_COMMIT_IDENTIFIER, &[])
            .await
        {
            Ok(outcome) => outcome.committed,
            Err(e) => {
                // nothing landed (or it cannot be told: then the files are kept)
                if let Ok(pending) = committer.filter_committed(&[BATCH_COMMIT_IDENTIFIER]).await {
                    if !pending.is_empty() {
                        rewrite.discard().await;
                    }
                }
                return Err(e);
            }
        };
        log::info!(
            target: "tidelake.compact",
            "{}: rewrote the file indexes of {} data file(s) into snapshot {:?}",
            table.location(),
            rewrite.changed,
            committed.last_id()
        );
        after_commit(&table, &committed.ids()).await?;
        Ok(committed)
    }
}

/// Where tests pause or fail a rewrite: its index files written, its commit not begun.
fn before_commit() -> Result<()> {
    failpoint!("rewrite-file-index-before-commit");
    Ok(())
}

/// The state of one rewrite: what the options ask for, the schemas files were written with,
/// and the index files written so far.
struct Rewrite<'t> {
    table: &'t Table,
    indexes: Vec<ColumnIndex>,
    threshold: u64,
    primary_key: bool,
    /// Per schema id: the schema and the index plan of its files.
    plans: HashMap<i64, (Arc<TableSchema>, IndexPlan)>,
    /// Index files written (root-relative paths).
    created: Vec<String>,
    changed: usize,
}

impl<'t> Rewrite<'t> {
    fn new(table: &'t Table) -> Result<Rewrite<'t>> {
        let options = table.schema().options();
        let spec = |e| Error::from_spec("table options", e);
        Ok(Rewrite {
            table,
            indexes: column_indexes(options).map_err(spec)?,
            threshold: in_manifest_threshold(options).map_err(spec)?,
            primary_key: !table.schema().primary_keys.is_empty(),
            plans: HashMap::new(),
            created: Vec::new(),
            changed: 0,
        })
    }

    /// The schema `file` was written with and the plan of its indexes.
    async fn plan(&mut self, schema_id: i64) -> Result<(Arc<TableSchema>, IndexPlan)> {
        if let Some(p) = self.plans.get(&schema_id) {
            return Ok(p.clone());
        }
        let schema = self.table.schema_by_id(schema_id).await?;
        let plan =
            IndexPlan::for_file(self.table.schema(), &schema, &self.indexes, self.threshold)?;
        self.plans.insert(schema_id, (schema.clone(), plan.clone()));
        Ok((schema, plan))
    }

    /// `file` (of bucket directory `dir`) with the indexes the options ask for; `None` when
    /// they are what it has.
    async fn file(&mut self, dir: &str, file: &DataFileMeta) -> Result<Option<DataFileMeta>> {
        let (schema, plan) = self.plan(file.schema_id).await?;
        let io = self.table.io();
        let bytes = match plan.start()? {
            None => None,
            Some(mut indexes) => {
                let system = match self.primary_key {
                    true => SystemColumns::KeyValue,
                    false => SystemColumns::None,
                };
                let offset = match system {
                    SystemColumns::KeyValue => 2,
                    SystemColumns::None => 0,
                };
                let mut rows = read_data_file(
                    io,
                    &file.path(dir),
                    FileFormat::from_file_name(&file.file_name)?,
                    &schema.fields,
                    &schema.fields,
                    system,
                    None,
                    BATCH_ROWS,
                    None,
                )
                .await?;
                while let Some(batch) = rows.try_next().await? {
                    indexes.update(&batch.columns()[offset..])?;
                }
                Some(indexes.encode()?)
            }
        };
        let (index_files, mut extras): (Vec<String>, Vec<String>) = file
            .extra_files
            .iter()
            .cloned()
            .partition(|f| f.ends_with(INDEX_FILE_SUFFIX));
        let mut out = file.clone();
        match bytes {
            None => out.embedded_index = None,
            Some(bytes) if bytes.len() as u64 <= plan.threshold() => {
                out.embedded_index = Some(bytes)
            }
            Some(bytes) => {
                out.embedded_index = None;
                let kept = match index_files.as_slice() {
                    [name] => io.read(&file.aligned_path(dir, name)).await? == bytes,
                    _ => false,
                };
                if kept {
                    extras = file.extra_files.clone();
                } else {
                    extras.push(self.store(dir, file, index_files.first(), bytes).await?);
                }
            }
        }
        out.extra_files = extras;
        if out == *file {
            return Ok(None);
        }
        self.changed += 1;
        Ok(Some(out))
    }

    /// Write `bytes` as the next index file of `file` after `previous` (see
    /// [`next_index_file_name`]), skipping names taken: an index file the entry no longer
    /// names may still be one an older snapshot reads. Its name.
    async fn store(
        &mut self,
        dir: &str,
        file: &DataFileMeta,
        previous: Option<&String>,
        bytes: Vec<u8>,
    ) -> Result<String> {
        let io = self.table.io();
        let mut name = next_index_file_name(&file.file_name, previous.map(String::as_str));
        while io.exists(&file.aligned_path(dir, &name)).await? {
            name = next_index_file_name(&file.file_name, Some(&name));
        }
        let path = file.aligned_path(dir, &name);
        self.created.push(path.clone());
        io.write(&path, bytes).await?;
        Ok(name)
    }

    /// Delete the index files written (the rewrite failed before its commit landed); what
    /// cannot be deleted is left to orphan cleaning.
    async fn discard(&self) {
        for path in &self.created {
            if let Err(e) = self.table.io().delete(path).await {
                log::warn!(target: "tidelake.compact", "{}: could not delete {path}: {e}", self.table.location());
            }
        }
    }
}
