//! How a table's snapshot and schema files come to exist, as its catalog decides: the one seam
//! between a commit (which decides *what* snapshot N holds) and the catalog a table was opened
//! through (which decides *how* N is created). Java `SnapshotCommit`, `RenamingSnapshotCommit`,
//! `CatalogSnapshotCommit`, `CatalogEnvironment.snapshotCommit` and `Lock.fromCatalog`.
//!
//! A table opened by path, or through a catalog without a lock, creates files with the
//! create-if-absent put alone ([`FileIO::put_if_absent`]): tidelake writers never overwrite one
//! another. A catalog with a commit lock (Paimon's JDBC lock) wraps that put in the lock Java
//! takes around its own snapshot commit; a catalog that versions tables itself (Paimon's REST
//! catalog) takes the snapshot instead ([`SnapshotCommit`]). A catalog that mirrors tables in a
//! metastore (Paimon's Hive catalog) is told of schema changes and commits afterwards
//! ([`MetastoreSync`]).
//!
//! Invariants:
//! * [`CatalogEnvironment::commit_snapshot`] returns `Ok(true)` only when snapshot N now holds
//!   this commit (created by this call), `Ok(false)` only when N provably belonged to someone
//!   else and nothing was written; an [`Error::CommitConflict`] means nothing was created (the
//!   lock was not free in time; the commit fails); any other error leaves the outcome unknown (the
//!   committer then looks for its own snapshot, see [`crate::commit`]);
//! * under a [`TableLock`] the put happens while the lock is held, as Java's
//!   `RenamingSnapshotCommit` checks existence and writes under it: a Java writer taking the same
//!   lock can neither overwrite a file tidelake created nor have its own overwritten;
//! * the environment travels with the [`Table`](crate::table::Table) (re-opening keeps it), so
//!   every commit and schema change of a table opened through a catalog goes through it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;
use tidelake_spec::manifest::ManifestEntry;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::Snapshot;

use crate::error::Result;
use crate::io::FileIO;
use crate::layout::TableLayout;
use crate::snapshots::snapshot_path;

/// A lock shared with other engines around the creation of a table's snapshot and schema files
/// (Java `CatalogLock` bound to one table by `Lock.fromCatalog`).
#[async_trait]
pub trait TableLock: Send + Sync + fmt::Debug {
    /// Run `section` while holding the table's lock; the lock is released whatever the
    /// section returns. Failing to take the lock in time is an error (the section did not run).
    async fn run_locked<'a>(&'a self, section: BoxFuture<'a, Result<()>>) -> Result<()>;

    /// The lock of branch `branch` of the same table (`main`: the table's).
    fn for_branch(&self, branch: &str) -> Arc<dyn TableLock>;
}

/// A metastore that mirrors a table (Java `HiveCatalog`): it learns of the table's changes after
/// they happened in its files, which stay the truth.
#[async_trait]
pub trait MetastoreSync: Send + Sync + fmt::Debug {
    /// `schema` became the latest schema of branch `branch`, `removed_options` removed by the
    /// change (Java `alterTableImpl`). An error means the metastore refused it: the caller
    /// deletes the schema file, and the change did not happen (as in Java).
    async fn schema_changed(
        &self,
        branch: &str,
        schema: &TableSchema,
        removed_options: &[String],
    ) -> Result<()>;

    /// Partitions (`(key, value)` specs, in partition-key order) received files in a commit
    /// (Java `Catalog.createPartitions`, from `AddPartitionCommitCallback`); some may be known.
    async fn add_partitions(&self, partitions: &[PartitionSpec]) -> Result<()>;

    /// Partitions were dropped and no branch has them any more (Java `Catalog.dropPartitions`).
    async fn drop_partitions(&self, partitions: &[PartitionSpec]) -> Result<()>;

    /// Partitions are done: a load-done event for each (Java `Catalog.markDonePartitions`, the
    /// `mark-event` action); a partition the metastore does not know is skipped, as in Java.
    async fn mark_partitions_done(&self, partitions: &[PartitionSpec]) -> Result<()>;
}

/// A partition as `(key, value)` pairs in partition-key order, values as in paths (the
/// default partition name for nulls), unescaped.
pub type PartitionSpec = Vec<(String, String)>;

/// One snapshot to create (the arguments of Java `SnapshotCommit.commit`).
pub struct SnapshotCommitRequest<'a> {
    /// The branch the snapshot belongs to.
    pub branch: &'a str,
    /// The branch's root (its `snapshot/` directory).
    pub branch_io: &'a FileIO,
    pub snapshot: &'a Snapshot,
    /// The data-file changes of the commit (per-partition statistics for a catalog).
    pub delta: &'a [ManifestEntry],
    /// The layout of the delta's partitions.
    pub layout: &'a TableLayout,
}

/// A catalog that creates snapshots and schemas itself (Java `CatalogSnapshotCommit`: the REST
/// catalog's commit endpoint, where the server arbitrates between committers, and its
/// alter-table endpoint).
#[async_trait]
pub trait SnapshotCommit: Send + Sync + fmt::Debug {
    /// `Ok(true)`: the snapshot is now snapshot `request.snapshot.id`; `Ok(false)`: that id was
    /// taken by another commit; an error: unknown.
    async fn commit(&self, request: SnapshotCommitRequest<'_>) -> Result<bool>;

    /// Apply schema changes to branch `branch` (Java `SchemaChange`s as JSON); the catalog
    /// writes the new schema.
    async fn alter_schema(&self, branch: &str, changes: &[Value]) -> Result<()>;

    /// Create, drop or fast-forward a branch of the table; the catalog writes its files.
    async fn change_branch(&self, change: BranchChange<'_>) -> Result<()>;

    /// Roll branch `branch` back to `target` (Java `Catalog.rollbackTo`); the catalog removes
    /// the newer snapshots and tags and their files.
    async fn rollback(&self, branch: &str, target: &RollbackTarget) -> Result<()>;

    /// Partitions are done (Java `Catalog.markDonePartitions`, the `mark-event` action); a
    /// catalog that does not implement it is not told, as in Java.
    async fn mark_partitions_done(&self, partitions: &[PartitionSpec]) -> Result<()>;
}

/// What to roll a table back to (Java `Instant`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RollbackTarget {
    Snapshot(i64),
    Tag(String),
}

/// A change of a table's branches made by its catalog (Java `Catalog.createBranch`,
/// `dropBranch`, `fastForward`).
#[derive(Clone, Copy, Debug)]
pub enum BranchChange<'a> {
    /// A new branch: empty (the latest schema only) or from a tag of the main branch.
    Create {
        name: &'a str,
        from_tag: Option<&'a str>,
    },
    Drop(&'a str),
    /// The main branch fast-forwarded to the branch.
    FastForward(&'a str),
}

/// What a table's catalog adds to its commits (Java `CatalogEnvironment`): nothing for a table
/// opened by path.
#[derive(Clone, Debug, Default)]
pub struct CatalogEnvironment {
    snapshot_commit: Option<Arc<dyn SnapshotCommit>>,
    lock: Option<Arc<dyn TableLock>>,
    metastore: Option<Arc<dyn MetastoreSync>>,
    /// The catalog's database and table name (Java `CatalogEnvironment.identifier`, whose
    /// catalog loader gives a `PartitionHandler`); none for a table opened by path.
    name: Option<(String, String)>,
}

impl CatalogEnvironment {
    /// Table `database.table` of a catalog, which takes no part in its commits until told
    /// ([`Self::locked`], [`Self::committing`], [`Self::mirrored_in`]).
    pub fn in_catalog(database: &str, table: &str) -> CatalogEnvironment {
        CatalogEnvironment {
            name: Some((database.to_string(), table.to_string())),
            ..CatalogEnvironment::default()
        }
    }

    /// The same environment, files created under `lock` (Java `RenamingSnapshotCommit` with
    /// a catalog lock).
    pub fn locked(self, lock: Arc<dyn TableLock>) -> CatalogEnvironment {
        CatalogEnvironment {
            lock: Some(lock),
            ..self
        }
    }

    /// The same environment, snapshots created by `commit` (Java `CatalogSnapshotCommit`).
    pub fn committing(self, commit: Arc<dyn SnapshotCommit>) -> CatalogEnvironment {
        CatalogEnvironment {
            snapshot_commit: Some(commit),
            ..self
        }
    }

    /// The same environment, with a metastore that mirrors the table.
    pub fn mirrored_in(self, metastore: Arc<dyn MetastoreSync>) -> CatalogEnvironment {
        CatalogEnvironment {
            metastore: Some(metastore),
            ..self
        }
    }

    /// The environment of branch `branch` of the same table (Java binds locks to the
    /// identifier, `table$branch_<b>`).
    pub fn for_branch(&self, branch: &str) -> CatalogEnvironment {
        CatalogEnvironment {
            snapshot_commit: self.snapshot_commit.clone(),
            lock: self.lock.as_ref().map(|l| l.for_branch(branch)),
            metastore: self.metastore.clone(),
            name: self.name.clone(),
        }
    }

    /// The catalog's `(database, table)` name of the table; `None` for a table opened by
    /// path. A table of a catalog marks partitions done for the `done-partition` and
    /// `mark-event` actions (or ignores them, as Java's filesystem and JDBC catalogs do).
    pub fn name(&self) -> Option<(&str, &str)> {
        self.name.as_ref().map(|(d, t)| (d.as_str(), t.as_str()))
    }

    /// Tell the table's catalog that `partitions` are done (Java `markDonePartitions`): its
    /// metastore or REST server; other catalogs ignore it (Java `AbstractCatalog`).
    pub async fn mark_partitions_done(&self, partitions: &[PartitionSpec]) -> Result<()> {
        if let Some(metastore) = &self.metastore {
            metastore.mark_partitions_done(partitions).await
        } else if let Some(commit) = &self.snapshot_commit {
            commit.mark_partitions_done(partitions).await
        } else {
            Ok(())
        }
    }

    /// Whether the table's catalog takes part in its commits (a lock, a commit endpoint, or a
    /// metastore that learns of them).
    pub fn commits_through_catalog(&self) -> bool {
        self.lock.is_some() || self.snapshot_commit.is_some() || self.metastore.is_some()
    }

    /// The catalog that creates the table's snapshots and schemas, if it does.
    pub fn snapshot_commit(&self) -> Option<&Arc<dyn SnapshotCommit>> {
        self.snapshot_commit.as_ref()
    }

    /// The table's lock, if its catalog has one.
    pub fn lock(&self) -> Option<&Arc<dyn TableLock>> {
        self.lock.as_ref()
    }

    /// The metastore that mirrors the table, if its catalog keeps one.
    pub fn metastore(&self) -> Option<&Arc<dyn MetastoreSync>> {
        self.metastore.as_ref()
    }

    /// Create snapshot `request.snapshot.id` (see the module invariants).
    pub async fn commit_snapshot(&self, request: SnapshotCommitRequest<'_>) -> Result<bool> {
        match &self.snapshot_commit {
            Some(commit) => commit.commit(request).await,
            None => {
                let rel = snapshot_path(request.snapshot.id);
                self.put_if_absent(request.branch_io, &rel, request.snapshot.to_json())
                    .await
            }
        }
    }

    /// [`FileIO::put_if_absent`] under the table's lock, if any: for snapshot and schema files.
    pub async fn put_if_absent(&self, io: &FileIO, rel: &str, data: String) -> Result<bool> {
        let Some(lock) = &self.lock else {
            return io.put_if_absent(rel, data).await;
        };
        let mut created = false;
        lock.run_locked(Box::pin(async {
            created = io.put_if_absent(rel, data).await?;
            Ok(())
        }))
        .await?;
        Ok(created)
    }
}
