//! Table maintenance: snapshot expiration, orphan-file removal, tags, rollback, consumers,
//! partition expiration and system tables.
//!
//! Modules (each documents the Java classes it mirrors and its invariants):
//! * [`expire`]: snapshot expiration (`ExpireSnapshotsImpl`, `SnapshotDeletion`);
//! * [`orphans`]: orphan files (`OrphanFilesClean`, `LocalOrphanFilesClean`);
//! * [`tags`]: create/delete/rename/replace/expire tags (`TagManager`, `TagDeletion`,
//!   `TagTimeExpire`);
//! * `success_file`: `_SUCCESS` markers of partitions and tags (`SuccessFile`);
//! * [`auto_tags`]: tags created after commits (`TagAutoCreation`, `TagBatchCreation`), in
//!   the time zones of [`zone`];
//! * [`branches`]: create/delete/fast-forward branches (`BranchManager`);
//! * [`rollback`]: rollback to a snapshot or tag (`RollbackHelper`);
//! * [`consumers`]: consumer files (`ConsumerManager`, `Consumer`);
//! * [`partitions`]: partition expiration and dropping (`PartitionExpire`,
//!   `PartitionValuesTimeExpireStrategy`, `PartitionTimeExtractor` in [`time_format`]);
//! * [`system_tables`], [`file_tables`], [`audit_log`], `data_tables`: `$snapshots`, `$files`,
//!   `$ro`, ... as Arrow; [`global_tables`]: a catalog's `sys.tables`, `sys.partitions`, ...;
//! * [`history`]: what each live snapshot's commit changed (files, rows, bytes);
//! * [`damage`]: undecodable snapshots and missing files, and the last good snapshot;
//! * [`verify`]: the consistency check replaying the snapshot chain (`doctor --verify`);
//! * `refs`: what roots reference and deleting what nothing references.
//!
//! Invariants shared by everything that deletes:
//! * a file is deleted only when no retained snapshot or tag of the operation's branch, and no
//!   snapshot, tag or changelog of any other branch, references it (data and metadata files
//!   are shared by branches; other branches are listed after the operation deleted its own
//!   snapshot or tag files, see [`branches`]), the reference set being built before any
//!   file is deleted; a root whose metadata cannot be read aborts the operation instead;
//! * metadata roots go before the files they reference (snapshot files oldest first, hints
//!   written first), so a crash leaves unreferenced files, never dangling references;
//! * `schema/` files are never deleted.

pub mod audit_log;
pub mod auto_tags;
pub mod branches;
pub mod changelog_expire;
pub mod consumers;
pub mod damage;
mod data_tables;
pub mod expire;
pub mod file_tables;
pub mod global_tables;
pub mod history;
pub mod orphans;
pub mod partitions;
mod refs;
pub mod rollback;
pub(crate) mod success_file;
pub mod system_tables;
pub mod tags;
pub mod time_format;
pub mod verify;
pub mod zone;

pub use expire::{
    expire_snapshots, plan_expiration, ChangelogRetention, ExpireConfig, ExpireResult,
};
pub use orphans::remove_orphan_files;
pub use refs::DeletedFiles;
pub use rollback::{rollback_to, RollbackTarget};

use crate::error::Result;
use crate::table::Table;

/// What [`maintain`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintainResult {
    pub expired_tags: Vec<String>,
    /// Tags created by `tag.automatic-creation`.
    pub created_tags: Vec<String>,
    /// Dropped partitions as (key, value) pairs.
    pub expired_partitions: Vec<Vec<(String, String)>>,
    pub expired_consumers: Vec<String>,
    pub snapshots: ExpireResult,
}

/// `Ok(None)` for a step whose configuration tidelake does not support: maintenance after a
/// commit skips it rather than failing a commit that already succeeded.
fn unless_unsupported<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == crate::ErrorKind::Unsupported => Ok(None),
        Err(e) => Err(e),
    }
}

/// The maintenance a committer runs after a commit that created snapshots `ids` (Java
/// `TableCommitImpl.maintain`): expire tags past their retention, expire partitions
/// (`partition.expiration-time`), expire consumers (`consumer.expiration-time`), expire
/// snapshots, then create automatic tags ([`auto_tags`], after expiry as in Java, which tags
/// from the earliest remaining snapshot when older ones expired). Nothing happens for `write-only` tables (`None`); steps whose configuration is
/// unsupported here (a text field in `partition.timestamp-formatter`) are skipped. Java checks partitions once per
/// `partition.expiration-check-interval` of a long-lived committer; committers here live for
/// one commit, so partitions are checked after every commit.
pub async fn maintain(table: &Table, ids: &[i64]) -> Result<Option<MaintainResult>> {
    let opts = table.schema().options();
    let spec = |e| crate::Error::from_spec("table options", e);
    if opts.write_only().map_err(spec)? {
        return Ok(None);
    }
    let now_local = table.env().local_now();
    let expired_tags = tags::expire_tags(table, now_local).await?;
    let expired_partitions =
        match unless_unsupported(partitions::PartitionExpireConfig::from_options(opts, None))? {
            Some(Some(config)) => partitions::expire_partitions(table, &config, now_local).await?,
            _ => Vec::new(),
        };
    let expired_consumers = match opts.consumer_expiration_time().map_err(spec)? {
        Some(d) => {
            let cutoff = table
                .env()
                .now_millis()
                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            consumers::expire_consumers(table.branch_io(), cutoff).await?
        }
        None => Vec::new(),
    };
    let snapshots = match unless_unsupported(ExpireConfig::of_table(table))? {
        Some(config) => expire_snapshots(table, &config).await?,
        None => ExpireResult::default(),
    };
    let created_tags = auto_tags::create_auto_tags(table, ids).await?;
    Ok(Some(MaintainResult {
        expired_tags,
        created_tags,
        expired_partitions,
        expired_consumers,
        snapshots,
    }))
}
