//! [`TableCommit`]: one user's commits of written files (append, overwrite, truncate, row-level
//! changes), each made visible and followed by the commit's hooks ([`super::after_commit`]).

use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::commit::{CommitMessage, FileStoreCommit, OverwriteScope};
use crate::compact::commit_visible_with;
use crate::error::Result;
use crate::scan::Split;
use crate::table::Table;
use crate::write::rewrite::removal_messages;

use super::after_commit;

/// Commits of `commit_user` to a table. Built with [`TableCommit::new`]; the transaction's
/// identifier (exactly-once across retries of one user) defaults to Java's identifier for
/// batch commits ([`BATCH_COMMIT_IDENTIFIER`]), and its snapshot properties to none.
pub struct TableCommit {
    table: Table,
    commit_user: String,
    identifier: i64,
    properties: Vec<(String, String)>,
}

impl TableCommit {
    pub fn new(table: Table, commit_user: impl Into<String>) -> TableCommit {
        TableCommit {
            table,
            commit_user: commit_user.into(),
            identifier: BATCH_COMMIT_IDENTIFIER,
            properties: Vec::new(),
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

    fn committer(&self) -> Result<FileStoreCommit> {
        FileStoreCommit::new(self.table.clone(), self.commit_user.clone())
    }

    async fn finish(&self, ids: Vec<i64>) -> Result<Vec<i64>> {
        after_commit(&self.table, &ids).await?;
        Ok(ids)
    }

    /// Append `messages`, visible when this returns ([`commit_visible_with`]); every snapshot
    /// created.
    pub async fn append(&self, messages: Vec<CommitMessage>) -> Result<Vec<i64>> {
        let ids = commit_visible_with(
            &self.table,
            self.committer()?,
            messages,
            self.identifier,
            &self.properties,
        )
        .await?;
        self.finish(ids).await
    }

    /// Replace what `scope` selects with the files of `messages`.
    pub async fn overwrite(
        &self,
        scope: OverwriteScope,
        messages: Vec<CommitMessage>,
    ) -> Result<Vec<i64>> {
        let ids = self
            .committer()?
            .overwrite(scope, messages, self.identifier, &[])
            .await?;
        self.finish(ids).await
    }

    /// Remove every row (an OVERWRITE snapshot with no files).
    pub async fn truncate(&self) -> Result<Vec<i64>> {
        let ids = self.committer()?.truncate_table(self.identifier).await?;
        self.finish(ids).await
    }

    /// A row-level change read at `read_snapshot` (`None`: the table was empty): remove the
    /// files of `rewritten` and add those of `messages`, refused if a commit since removed or
    /// changed what was read ([`FileStoreCommit::validate_reads`]).
    pub async fn row_level(
        &self,
        mut messages: Vec<CommitMessage>,
        rewritten: &[Split],
        read_snapshot: Option<i64>,
    ) -> Result<Vec<i64>> {
        // an empty table read (no snapshot): everything committed since counts
        let read = read_snapshot.unwrap_or(0);
        for m in &mut messages {
            m.base_snapshot = Some(m.base_snapshot.map_or(read, |b| b.min(read)));
        }
        messages.extend(removal_messages(&self.table, rewritten).await?);
        let commit = self.committer()?.validate_reads();
        let ids = commit_visible_with(&self.table, commit, messages, self.identifier, &[]).await?;
        self.finish(ids).await
    }
}
