//! [`TableCommit`]: one user's commits of written files (append, overwrite, truncate, row-level
//! changes), each made visible, fully compacted when the table's `full-compaction.delta-commits`
//! says so ([`super::full_compaction`]) and followed by the commit's hooks ([`super::after_commit`]),
//! then, for batch commits (Java's batch identifier), by marking the partitions written done
//! when the table asks for it ([`super::mark_written_done`]). Every verb returns what it
//! [`Committed`]: the snapshots it created, each with the metrics of the data-file entries the
//! commit wrote to its delta (none when the transaction was already committed or there was
//! nothing to commit).

use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::commit::{CommitMessage, Committed, FileStoreCommit, OverwriteScope};
use crate::compact::commit_visible_with;
use crate::error::{Error, ErrorKind, Result};
use crate::maintenance::auto_tags::check_options as check_auto_tag_options;
use crate::scan::Split;
use crate::table::Table;
use crate::write::resequence::resequence;
use crate::write::rewrite::removal_messages;
use crate::write::table_write::TableWrite;

use std::collections::BTreeSet;

use super::{
    after_commit, check_written_done, full_compaction, mark_written_done, written_partitions,
};

/// How many times one append is re-sequenced before its conflict is returned.
pub const MAX_RESEQUENCES: u32 = 3;

/// Commits of `commit_user` to a table. Built with [`TableCommit::new`]; the transaction's
/// identifier (exactly-once across retries of one user) defaults to Java's identifier for
/// batch commits ([`BATCH_COMMIT_IDENTIFIER`]), and its snapshot properties to none.
pub struct TableCommit {
    table: Table,
    commit_user: String,
    identifier: i64,
    properties: Vec<(String, String)>,
    read_at: Option<i64>,
}

impl TableCommit {
    pub fn new(table: Table, commit_user: impl Into<String>) -> TableCommit {
        TableCommit {
            table,
            commit_user: commit_user.into(),
            identifier: BATCH_COMMIT_IDENTIFIER,
            properties: Vec::new(),
            read_at: None,
        }
    }

    /// The transaction's identifier (a stream writer's checkpoint, for exactly-once).
    pub fn identifier(mut self, identifier: i64) -> TableCommit {
        self.identifier = identifier;
        self
    }

    /// Properties recorded in the snapshot (appends only).
    pub fn properties(mut self, properties: Vec<(String, String)>) -> TableCommit {
        self.properties = properties;
        self
    }

    /// Overwrites replace what was read at `snapshot`: refused when the overwritten partitions
    /// changed since ([`FileStoreCommit::overwrite_of_read`]).
    pub fn overwriting_read_at(mut self, snapshot: i64) -> TableCommit {
        self.read_at = Some(snapshot);
        self
    }

    /// The committer of a transaction; a table whose automatic-tag options do not parse, or
    /// whose batch commits would mark partitions done by actions that cannot run, is refused
    /// before anything is committed (the tags and marks follow the commits).
    fn committer(&self) -> Result<FileStoreCommit> {
        check_auto_tag_options(self.table.schema().options())?;
        if self.identifier == BATCH_COMMIT_IDENTIFIER {
            check_written_done(&self.table)?;
        }
        let committer = FileStoreCommit::new(self.table.clone(), self.commit_user.clone())?;
        Ok(match self.read_at {
            Some(snapshot) => committer.overwrite_of_read(snapshot),
            None => committer,
        })
    }

    /// The full compaction the table asks writers for after this commit
    /// ([`full_compaction::after_write`]), then the hooks of the commits made (that wrote to
    /// partitions `written`); a failed compaction is returned after the hooks ran.
    async fn finish(
        &self,
        mut committed: Committed,
        written: BTreeSet<Vec<u8>>,
    ) -> Result<Committed> {
        let compacted =
            full_compaction::after_write(&self.table, self.identifier, &committed).await;
        if let Ok(compacted) = &compacted {
            committed.extend(compacted.clone());
        }
        after_commit(&self.table, &committed.ids()).await?;
        if self.identifier == BATCH_COMMIT_IDENTIFIER {
            mark_written_done(&self.table, &written).await?;
        }
        compacted?;
        Ok(committed)
    }

    /// Append `messages`, visible when this returns ([`commit_visible_with`]); every snapshot
    /// created. A write refused only because another writer committed overlapping keys to its
    /// buckets since its writer opened is re-sequenced and committed after it (see
    /// [`Self::append_resequencing`]); its original files are then left to orphan cleaning, as
    /// the caller may still hold their messages.
    pub async fn append(&self, messages: Vec<CommitMessage>) -> Result<Committed> {
        let written = written_partitions(&messages);
        let (committed, _originals) = self.append_resequencing(messages).await?;
        self.finish(committed, written).await
    }

    /// Commit `messages` as an append, re-sequencing them when the only conflict is sequence
    /// order (`FileStoreCommit::stale_sequences`, [`crate::write::resequence`]), at most
    /// [`MAX_RESEQUENCES`] times: the new snapshots, and the paths of the files the committed
    /// ones replace. Files re-sequencing wrote that were not committed are deleted.
    async fn append_resequencing(
        &self,
        messages: Vec<CommitMessage>,
    ) -> Result<(Committed, Vec<String>)> {
        let mut current = messages;
        // the caller's files that were rewritten; files rewritten here, and those of them
        // rewritten again
        let (mut originals, mut written, mut superseded) = (Vec::new(), Vec::new(), Vec::new());
        let mut round = 0;
        let error = loop {
            let committed = commit_visible_with(
                &self.table,
                self.committer()?,
                current.clone(),
                self.identifier,
                &self.properties,
            )
            .await;
            let error = match committed {
                Ok(committed) => {
                    self.delete_quietly(&superseded).await;
                    return Ok((committed, originals));
                }
                Err(e) if e.kind() == ErrorKind::CommitConflict && round < MAX_RESEQUENCES => e,
                Err(e) => break e,
            };
            // refused: nothing landed, so a failure from here on leaves `written` garbage
            let stale = match self.committer()?.stale_sequences(&current).await {
                Ok(Some(stale)) => stale,
                Ok(None) => break error,
                Err(e) => break Error::CommitConflict(format!("{error} (re-sequencing: {e})")),
            };
            let done = match resequence(&self.table, current.clone(), &stale.1, stale.0).await {
                Ok(done) => done,
                Err(e) => break Error::CommitConflict(format!("{error} (re-sequencing: {e})")),
            };
            log::info!(target: "tidelake.commit", "{}: re-sequenced {} files above commits made since their writer opened", self.table.location(), done.written.len());
            match round {
                0 => originals = done.replaced,
                _ => superseded.extend(done.replaced),
            }
            written.extend(done.written);
            current = done.messages;
            round += 1;
        };
        if error.kind() == ErrorKind::CommitConflict {
            // nothing landed: what re-sequencing wrote is garbage (the originals are the caller's)
            self.delete_quietly(&written).await;
        }
        Err(error)
    }

    /// Delete `paths` (relative to the table root), leaving what fails to orphan cleaning.
    async fn delete_quietly(&self, paths: &[String]) {
        for path in paths {
            if let Err(e) = self.table.io().delete(path).await {
                log::warn!(target: "tidelake.commit", "{}: could not delete {path}: {e}", self.table.location());
            }
        }
    }

    /// Flush `write` and [`Self::append`] what it wrote as one transaction (a one-shot write).
    /// When the commit fails and the transaction is not in the table, its files are deleted
    /// before the error returns: a failed one-shot write leaves nothing behind; when it was
    /// re-sequenced, the files it replaced are deleted too.
    pub async fn append_written(&self, write: &mut TableWrite) -> Result<Committed> {
        let messages = write.prepare_commit().await?;
        let error = match self.append_resequencing(messages.clone()).await {
            Ok((committed, originals)) => {
                self.delete_quietly(&originals).await;
                return self.finish(committed, written_partitions(&messages)).await;
            }
            Err(e) => e,
        };
        self.discard_unless_landed(&messages).await;
        Err(error)
    }

    /// After a failed commit of `messages`: delete their files unless the transaction is in
    /// the table (it landed and something after it failed) or that cannot be told.
    pub(crate) async fn discard_unless_landed(&self, messages: &[CommitMessage]) {
        if self.landed().await == Some(false) {
            self.discard(messages).await;
        }
    }

    /// After a failed commit: whether its transaction is in the table anyway (it landed and
    /// something after it failed); `None` when that cannot be told.
    pub(crate) async fn landed(&self) -> Option<bool> {
        // not `committer()`: its checks may be what refused the commit
        let committer = FileStoreCommit::new(self.table.clone(), self.commit_user.clone()).ok()?;
        let pending = committer.filter_committed(&[self.identifier]).await.ok()?;
        Some(pending.is_empty())
    }

    /// Delete the files of `messages`, which were never committed (logged when that fails:
    /// they are left to orphan cleaning).
    pub(crate) async fn discard(&self, messages: &[CommitMessage]) {
        let discarded = match FileStoreCommit::new(self.table.clone(), self.commit_user.clone()) {
            Ok(committer) => committer.discard(messages).await,
            Err(e) => Err(e),
        };
        if let Err(e) = discarded {
            log::warn!(target: "tidelake.commit", "{}: could not delete the files of a failed write: {e}", self.table.location());
        }
    }

    /// Replace what `scope` selects with the files of `messages`.
    pub async fn overwrite(
        &self,
        scope: OverwriteScope,
        messages: Vec<CommitMessage>,
    ) -> Result<Committed> {
        let written = written_partitions(&messages);
        let committed = self
            .committer()?
            .overwrite(scope, messages, self.identifier, &[])
            .await?;
        self.finish(committed, written).await
    }

    /// Remove every row (an OVERWRITE snapshot with no files).
    pub async fn truncate(&self) -> Result<Committed> {
        let committed = self.committer()?.truncate_table(self.identifier).await?;
        self.finish(committed, BTreeSet::new()).await
    }

    /// A row-level change read at `read_snapshot` (`None`: the table was empty): remove the
    /// files of `rewritten` and add those of `messages`, refused if a commit since removed or
    /// changed what was read ([`FileStoreCommit::validate_reads`]).
    pub async fn row_level(
        &self,
        mut messages: Vec<CommitMessage>,
        rewritten: &[Split],
        read_snapshot: Option<i64>,
    ) -> Result<Committed> {
        // an empty table read (no snapshot): everything committed since counts
        let read = read_snapshot.unwrap_or(0);
        for m in &mut messages {
            m.base_snapshot = Some(m.base_snapshot.map_or(read, |b| b.min(read)));
        }
        let commit = self.committer()?.validate_reads();
        // the removals' new deletion-vector index files are this call's to delete on failure
        let removals = removal_messages(&self.table, rewritten).await?;
        messages.extend(removals.iter().cloned());
        let written = written_partitions(&messages);
        match commit_visible_with(&self.table, commit, messages, self.identifier, &[]).await {
            Ok(committed) => self.finish(committed, written).await,
            Err(e) => {
                self.discard_unless_landed(&removals).await;
                Err(e)
            }
        }
    }
}
