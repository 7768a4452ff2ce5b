//! Purging a table (Java `FileStoreTable.purgeFiles`, the `purge_files` procedure): every row,
//! every branch, tag, consumer and long-lived changelog goes, and with them every file no longer
//! needed; the table (schema, options) stays, empty, at one OVERWRITE snapshot.
//!
//! Java's steps, in Java's order: drop every branch; delete every tag (with the files only it
//! kept); delete every consumer; truncate (one OVERWRITE snapshot removing every file, followed
//! by the commit's hooks); delete `changelog/`; expire every snapshot but that one; remove every
//! orphan file older than now.
//!
//! Invariants: only the main branch is purged (a table opened on another branch is refused,
//! before anything changes, as is a table whose `scan.fallback-branch` names a branch that
//! purging would drop). The truncation is acknowledged before any file goes, so a purge cut
//! short leaves a readable, empty table whose remaining files the next purge (or orphan
//! cleaning) removes; nothing outside the table directory is touched.

use crate::branch::{list_branches, MAIN_BRANCH, SCAN_FALLBACK_BRANCH};
use crate::changelogs::CHANGELOG_DIR;
use crate::commit::Committed;
use crate::error::{Error, Result};
use crate::maintenance::consumers::{consumers, delete_consumer};
use crate::maintenance::orphans::OrphanFile;
use crate::maintenance::{
    branches::delete_branch, expire_snapshots, remove_orphan_files, tags::delete_tag, ExpireConfig,
    ExpireResult,
};
use crate::table::Table;

use super::TableCommit;

/// What [`purge_files`] removed.
#[derive(Debug, Default)]
pub struct Purged {
    /// The branches dropped, by name.
    pub branches: Vec<String>,
    /// The tags deleted, by name.
    pub tags: Vec<String>,
    /// The consumers deleted, by id.
    pub consumers: Vec<String>,
    /// The OVERWRITE snapshot that emptied the table (none when it had no snapshot).
    pub truncated: Committed,
    /// The expiry of every snapshot before it.
    pub expired: ExpireResult,
    /// The files no snapshot referenced any more.
    pub orphans: Vec<OrphanFile>,
}

/// Purge `table`; see the module docs.
pub async fn purge_files(table: &Table) -> Result<Purged> {
    if table.branch() != MAIN_BRANCH {
        return Err(Error::invalid(format!(
            "purge_files purges a table from its main branch, not from branch '{}'",
            table.branch()
        )));
    }
    let io = table.io();
    let branches = list_branches(io).await?;
    if let Some(fallback) = table.schema().options().get(SCAN_FALLBACK_BRANCH) {
        if branches.iter().any(|b| b == fallback) {
            return Err(Error::invalid(format!(
                "purge_files would drop the fallback branch '{fallback}': \
                 reset '{SCAN_FALLBACK_BRANCH}' first"
            )));
        }
    }
    for name in &branches {
        delete_branch(table, name).await?;
    }
    let tags = table.snapshot_manager().tag_names().await?;
    for name in &tags {
        delete_tag(table, name).await?;
    }
    let consumers: Vec<String> = consumers(io).await?.into_iter().map(|(id, _)| id).collect();
    for id in &consumers {
        delete_consumer(table, id).await?;
    }
    let truncated = TableCommit::new(table.clone(), table.env().uuid_string())
        .truncate()
        .await?;
    io.delete_dir(CHANGELOG_DIR).await?;
    let now = table.env().now_millis();
    let keep_one = ExpireConfig {
        retain_min: 1,
        retain_max: 1,
        older_than_ms: now,
        max_deletes: i64::from(i32::MAX),
        changelog: None,
    };
    let expired = expire_snapshots(table, &keep_one).await?;
    let orphans = remove_orphan_files(table, now, false).await?;
    Ok(Purged {
        branches,
        tags,
        consumers,
        truncated,
        expired,
        orphans,
    })
}
