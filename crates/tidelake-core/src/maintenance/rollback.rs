//! Rolling a table back to a snapshot or tag (Java `AbstractFileStoreTable.rollbackTo`,
//! `RollbackHelper`; file cleanup as Java did before 1.2, `updateLatestAndCleanLargerThan`).
//!
//! Steps, in Java's order:
//! 1. resolve the target: a snapshot id (when that snapshot has expired, the tag holding it)
//!    or a tag;
//! 2. write the `LATEST` hint = target, delete every newer snapshot file newest first, then
//!    every tag of a newer snapshot;
//! 3. rolling back to a tag whose snapshot expired: write `snapshot-<id>` from the tag and the
//!    `EARLIEST` hint (Java `createSnapshotFileIfNeeded`);
//! 4. delete the files the removed snapshots added (delta and changelog manifests; all live
//!    files of the oldest one, which covers files of expired snapshots in between), the live
//!    files of the removed tags and all their metadata, except what the target references.
//!    Tags that remain are older than the target, so by file-history continuity they can only
//!    reference such files if the target does too; other branches' references are kept
//!    (unlike Java), as they may share any file.
//!
//! A newer snapshot whose file is damaged (it does not decode) is removed too, so a table
//! whose newest snapshot was damaged is recovered by rolling back past it; files that only it
//! named are left to orphan-file cleaning.
//!
//! Everything is read before anything is deleted. Like Java, this is not safe against
//! concurrent writers: stop them first.
//!
//! A table whose catalog versions its snapshots (REST) is rolled back by the catalog (Java
//! `RESTCatalog.rollbackTo`): the target is resolved here first, so the result names the same
//! snapshots and tags, and the server removes them and their files (not counted here).

use std::sync::Arc;

use tidelake_spec::manifest::FileKind;
use tidelake_spec::snapshot::{Snapshot, Tag};

use crate::error::{Error, ErrorKind, Result};
use crate::layout::TableLayout;
use crate::maintenance::refs::{
    data_files, delete_unreferenced, metadata_files, or_missing, protect_other_branches, DataScope,
    DeletedFiles, FileCategory, MetaCache, References,
};
pub use crate::snapshot_commit::RollbackTarget;
use crate::snapshots::{snapshot_path, tag_path, write_hint, EARLIEST_HINT_PATH, LATEST_HINT_PATH};
use crate::table::Table;

/// What a rollback did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RollbackResult {
    /// The snapshot the table is now at.
    pub snapshot_id: i64,
    /// Snapshot files deleted.
    pub snapshots: u64,
    /// Tags deleted (newer than the target), sorted.
    pub tags: Vec<String>,
    /// Files deleted here (none when the catalog rolled back).
    pub deleted: DeletedFiles,
}

/// The target snapshot, and whether it comes from a tag (its file may need recreating).
async fn resolve(table: &Table, target: &RollbackTarget) -> Result<(Snapshot, bool)> {
    let sm = table.snapshot_manager();
    match target {
        RollbackTarget::Tag(name) => Ok((sm.tag(name).await?.snapshot, true)),
        RollbackTarget::Snapshot(id) => match sm.snapshot(*id).await {
            Ok(s) => Ok((s, false)),
            Err(e) if e.is_missing() => {
                let tags = sm.tags().await?;
                match tags.into_iter().find(|(_, t)| t.snapshot.id == *id) {
                    Some((_, t)) => Ok((t.snapshot.clone(), true)),
                    None => Err(Error::not_found(
                        "snapshot",
                        format!("rollback snapshot {id} of {} doesn't exist (neither as a snapshot nor as a tag)", table.location()),
                    )),
                }
            }
            Err(e) => Err(e),
        },
    }
}

/// Roll `table` back to `target`; see the module docs.
pub async fn rollback_to(table: &Table, target: &RollbackTarget) -> Result<RollbackResult> {
    let (snap, from_tag) = resolve(table, target).await?;
    let sm = table.snapshot_manager();
    let io = table.branch_io();
    let newer_ids: Vec<i64> = sm
        .list_ids()
        .await?
        .into_iter()
        .filter(|id| *id > snap.id)
        .collect();
    let mut newer = Vec::with_capacity(newer_ids.len());
    for id in &newer_ids {
        match sm.snapshot(*id).await {
            Ok(s) => newer.push(s),
            Err(e) if e.is_missing() => {}
            // A damaged snapshot file is removed like the others; the files only it named are
            // left to orphan-file cleaning.
            Err(e) if e.kind() == ErrorKind::Corrupt => {
                log::warn!(target: "tidelake.rollback", "{}: removing damaged snapshot {id}: {e}", table.location());
            }
            Err(e) => return Err(e),
        }
    }
    let newer_tags: Vec<(String, Arc<Tag>)> = sm
        .tags()
        .await?
        .into_iter()
        .filter(|(_, t)| t.snapshot.id > snap.id)
        .collect();
    let mut tags: Vec<String> = newer_tags.iter().map(|(name, _)| name.clone()).collect();
    tags.sort();
    if let Some(catalog) = table.environment().snapshot_commit() {
        catalog.rollback(table.branch(), target).await?;
        return Ok(RollbackResult {
            snapshot_id: snap.id,
            snapshots: newer_ids.len() as u64,
            tags,
            deleted: DeletedFiles::default(),
        });
    }

    let layout = TableLayout::new(table.schema())?;
    let mut cache = MetaCache::new(table);
    let mut candidates = Vec::new();
    for (i, s) in newer.iter().enumerate() {
        // The oldest removed snapshot contributes all its live files: when snapshots between
        // the target and it have expired, files they added are live in it.
        let added: Vec<_> = if i == 0 {
            or_missing(cache.live_entries(s).await)?
        } else {
            or_missing(cache.list_entries(&s.delta_manifest_list).await)?
                .into_iter()
                .filter(|e| e.kind == FileKind::Add)
                .collect()
        };
        candidates.extend(data_files(&layout, &added, FileCategory::Data)?);
        candidates.extend(data_files(
            &layout,
            &or_missing(cache.changelog_entries(s).await)?,
            FileCategory::Changelog,
        )?);
        candidates.extend(metadata_files(&mut cache, s, true).await?);
    }
    for (_, tag) in &newer_tags {
        let s = &tag.snapshot;
        candidates.extend(data_files(
            &layout,
            &or_missing(cache.live_entries(s).await)?,
            FileCategory::Data,
        )?);
        candidates.extend(data_files(
            &layout,
            &or_missing(cache.changelog_entries(s).await)?,
            FileCategory::Changelog,
        )?);
        candidates.extend(metadata_files(&mut cache, s, true).await?);
    }
    let mut refs = References::default();
    refs.add(&mut cache, &snap, DataScope::Live).await?;

    write_hint(io, LATEST_HINT_PATH, snap.id).await?;
    for id in newer_ids.iter().rev() {
        io.delete(&snapshot_path(*id)).await?;
    }
    for name in &tags {
        io.delete(&tag_path(name)).await?;
    }
    if from_tag && !io.exists(&snapshot_path(snap.id)).await? {
        io.put_if_absent(&snapshot_path(snap.id), snap.to_json().into_bytes())
            .await?;
        write_hint(io, EARLIEST_HINT_PATH, snap.id).await?;
    }
    protect_other_branches(&mut cache, &mut refs, table).await?;
    let deleted = delete_unreferenced(table.io(), candidates, &refs).await?;
    Ok(RollbackResult {
        snapshot_id: snap.id,
        snapshots: newer_ids.len() as u64,
        tags,
        deleted,
    })
}
