//! Table maintenance: snapshot expiration, orphan-file removal, tags, rollback, consumers,
//! partition expiration and system tables.
//!
//! Modules (each documents the Java classes it mirrors and its invariants):
//! * [`expire`]: snapshot expiration (`ExpireSnapshotsImpl`, `SnapshotDeletion`);
//! * [`orphans`]: orphan files (`OrphanFilesClean`, `LocalOrphanFilesClean`);
//! * [`tags`]: create/delete/expire tags (`TagManager`, `TagDeletion`, `TagTimeExpire`);
//! * [`rollback`]: rollback to a snapshot or tag (`RollbackHelper`);
//! * [`consumers`]: consumer files (`ConsumerManager`, `Consumer`);
//! * [`partitions`]: partition expiration and dropping (`PartitionExpire`,
//!   `PartitionValuesTimeExpireStrategy`, `PartitionTimeExtractor` in [`time_format`]);
//! * [`system_tables`], [`file_tables`], [`audit_log`]: `$snapshots`, `$files`, ... as Arrow;
//! * `refs`: what roots reference and deleting what nothing references.
//!
//! Invariants shared by everything that deletes:
//! * a file is deleted only when no retained snapshot, tag (or, for orphans, branch root)
//!   references it, the reference set being built from every retained root before any
//!   deletion; a root whose metadata cannot be read aborts the operation instead;
//! * metadata roots go before the files they reference (snapshot files oldest first, hints
//!   written first), so a crash leaves unreferenced files, never dangling references;
//! * `schema/` files are never deleted.

pub mod audit_log;
pub mod consumers;
pub mod expire;
pub mod file_tables;
pub mod orphans;
pub mod partitions;
mod refs;
pub mod rollback;
pub mod system_tables;
pub mod tags;
pub mod time_format;

pub use expire::{expire_snapshots, ExpireConfig, ExpireResult};
pub use orphans::{remove_orphan_files, OrphanFile};
pub use refs::DeletedFiles;
pub use rollback::{rollback_to, RollbackResult, RollbackTarget};

use crate::error::Result;
use crate::io::FileIO;
use crate::table::Table;

pub(crate) const LATEST_HINT_PATH: &str = "snapshot/LATEST";
pub(crate) const EARLIEST_HINT_PATH: &str = "snapshot/EARLIEST";

/// Wall-clock time, epoch milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Local wall-clock time (Java `LocalDateTime.now()`).
pub fn local_now() -> chrono::NaiveDateTime {
    chrono::Local::now().naive_local()
}

/// `snapshot/snapshot-<id>`.
pub(crate) fn snapshot_path(id: i64) -> String {
    format!("snapshot/{}", tidelake_spec::snapshot::snapshot_file_name(id))
}

/// `tag/tag-<name>`.
pub(crate) fn tag_path(name: &str) -> String {
    format!("tag/{}", tidelake_spec::snapshot::tag_file_name(name))
}

/// Write a `LATEST`/`EARLIEST` hint (decimal id, no newline, as Java).
pub(crate) async fn write_hint(io: &FileIO, rel: &str, id: i64) -> Result<()> {
    io.write(rel, id.to_string().into_bytes()).await
}

/// What [`maintain`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintainResult {
    pub expired_tags: Vec<String>,
    /// Dropped partitions as (key, value) pairs.
    pub expired_partitions: Vec<Vec<(String, String)>>,
    pub expired_consumers: Vec<String>,
    pub snapshots: ExpireResult,
}

/// The maintenance a committer runs after each commit (Java `TableCommitImpl.maintain`), in
/// Java's order: expire tags past their retention, expire partitions
/// (`partition.expiration-time`), expire consumers (`consumer.expiration-time`), expire
/// snapshots. Nothing happens for `write-only` tables (`None`). Java checks partitions once
/// per `partition.expiration-check-interval` of a long-lived committer; committers here live
/// for one commit, so partitions are checked after every commit.
pub async fn maintain(table: &Table) -> Result<Option<MaintainResult>> {
    let opts = table.schema().options();
    let spec = |e| crate::Error::from_spec("table options", e);
    if opts.write_only().map_err(spec)? {
        return Ok(None);
    }
    let now_local = local_now();
    let expired_tags = tags::expire_tags(table, now_local).await?;
    let expired_partitions = match partitions::PartitionExpireConfig::from_options(opts, None)? {
        Some(config) => partitions::expire_partitions(table, &config, now_local).await?,
        None => Vec::new(),
    };
    let expired_consumers = match opts.get_duration("consumer.expiration-time").map_err(spec)? {
        Some(d) => {
            let cutoff = now_ms().saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            consumers::expire_consumers(table.io(), cutoff).await?
        }
        None => Vec::new(),
    };
    let snapshots = expire_snapshots(table, &ExpireConfig::of_table(table)?).await?;
    Ok(Some(MaintainResult { expired_tags, expired_partitions, expired_consumers, snapshots }))
}
