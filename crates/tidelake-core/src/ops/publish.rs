//! Publishing a branch into the branch a table is opened on as ONE new snapshot
//! (write-audit-publish: Python's `Table.stage`). Not Paimon's `fast_forward` (kept as is in
//! [`crate::maintenance::branches`]), which copies the branch's snapshot files one by one.
//!
//! Invariants:
//! * the branch forked from the target's latest snapshot: its earliest snapshot is the target's
//!   snapshot of that id (same manifest lists) and nothing was committed to the target since,
//!   or the target had no snapshot and still has none; otherwise publishing is refused with
//!   [`Error::CommitConflict`] and the branch is left as it is, to be inspected;
//! * the new snapshot holds exactly the branch's latest live data and index files (the same
//!   files: branches share the table root's data directory); its delta removes the fork's files
//!   the branch no longer has and adds the branch's new ones, so the target's incremental
//!   readers see what the stage changed;
//! * it is created by the normal commit ([`FileStoreCommit::commit_on_top_of`]): `put_if_absent`
//!   of the next snapshot id, refused when another writer took it or anything was committed
//!   after the fork. A crash therefore leaves the target as before or exactly as the branch,
//!   and a writer racing the publish either loses (its commit retries on top of the published
//!   snapshot, with its usual conflict checks) or makes the publish fail;
//! * the branch's schema files must be the target's: a stage that altered the schema is refused
//!   ([`Error::Unsupported`]);
//! * publishing again what was published (a publish that crashed before returning, or before
//!   its caller deleted the branch) answers the snapshot it created: the snapshot after the
//!   fork records the branch and the branch's snapshot it holds (properties `tidelake.stage.*`);
//! * changelog files of the branch are not published (their rows are in the published data).

use std::collections::HashSet;

use tidelake_spec::manifest::{FileKind, IndexManifestEntry, ManifestEntry};
use tidelake_spec::snapshot::Snapshot;

use super::after_commit;
use crate::branch::list_branches;
use crate::commit::{Committed, CommittedSnapshot, FileStoreCommit};
use crate::error::{Error, ErrorKind, Result};
use crate::maintenance::history::delta_of;
use crate::state::{live_index_entries, LiveFiles, Pruning};
use crate::table::{list_schema_ids, schema_path, Table};

/// Snapshot properties of a published snapshot: the branch published, and its snapshot.
const STAGE_BRANCH: &str = "tidelake.stage.branch";
const STAGE_SNAPSHOT: &str = "tidelake.stage.snapshot";

/// Publish branch `name` into the branch `table` is opened on (see the module docs): the
/// snapshot created with its metrics (what the stage changed), none when the branch committed
/// nothing since its fork. Publishing again what was published answers the snapshot created
/// then, with the metrics of its delta (read back: this call wrote nothing).
pub async fn publish_branch(table: &Table, name: &str) -> Result<Committed> {
    let io = table.io();
    if name == table.branch() || !list_branches(io).await?.iter().any(|b| b == name) {
        return Err(Error::not_found(
            "branch",
            format!("branch '{name}' of table {} to publish", io.location()),
        ));
    }
    let stage = table.open_other_branch(name).await?;
    let kept = |reason: String| {
        Error::CommitConflict(format!(
            "cannot publish branch '{name}' into '{}': {reason}; nothing was published and the \
             branch is kept for inspection (discard it, or stage again from the new latest snapshot)",
            table.branch()
        ))
    };
    let (ssm, sm) = (stage.snapshot_manager(), table.snapshot_manager());
    let Some(latest) = ssm.latest().await? else {
        return Ok(Committed::default());
    };
    let fork = fork_of(table, &stage).await?;
    let marker = vec![
        (STAGE_BRANCH.to_string(), name.to_string()),
        (STAGE_SNAPSHOT.to_string(), latest.id.to_string()),
    ];
    let next = fork.map_or(1, |f| f.saturating_add(1));
    if sm.exists(next).await? {
        let published = sm.snapshot(next).await?;
        if published.properties.as_ref() == Some(&marker) {
            // published before, by a publish that stopped before returning
            return Ok(CommittedSnapshot {
                id: next,
                metrics: delta_of(table, &published).await?.unwrap_or_default(),
            }
            .into());
        }
    }
    let base = match fork {
        Some(id) => Some(sm.snapshot(id).await?),
        None if sm.latest_id().await?.is_none() => None,
        None => {
            return Err(kept(
                "it does not start from a snapshot of the target, which moved since the branch was created"
                    .into(),
            ))
        }
    };
    if base.as_ref().map(|b| b.id) == Some(latest.id) {
        return Ok(Committed::default());
    }
    check_same_schemas(table, &stage, name).await?;
    let (table_changes, index_changes) = diff(table, base.as_ref(), &stage, &latest).await?;
    let user = format!("tidelake-publish-{}", table.env().uuid());
    let committed = FileStoreCommit::new(table.clone(), user)?
        .commit_on_top_of(fork, table_changes, index_changes, &marker)
        .await;
    let published = match committed {
        Ok(published) => published,
        Err(e) if e.kind() == ErrorKind::CommitConflict => return Err(kept(e.to_string())),
        Err(e) => return Err(e),
    };
    after_commit(table, &[published.id]).await?;
    Ok(published.into())
}

/// The snapshot id `stage` forked from: its earliest snapshot when `table` holds the same
/// snapshot under that id, else `None`.
async fn fork_of(table: &Table, stage: &Table) -> Result<Option<i64>> {
    let Some(earliest) = stage.snapshot_manager().earliest_id().await? else {
        return Ok(None);
    };
    if !table.snapshot_manager().exists(earliest).await? {
        return Ok(None);
    }
    let (ours, theirs) = (
        stage.snapshot_manager().snapshot(earliest).await?,
        table.snapshot_manager().snapshot(earliest).await?,
    );
    let same = ours.base_manifest_list == theirs.base_manifest_list
        && ours.delta_manifest_list == theirs.delta_manifest_list;
    Ok(same.then_some(earliest))
}

/// Refuse a branch whose schema files are not all the target's (a stage that altered the
/// schema, or a target altered the same way meanwhile).
async fn check_same_schemas(table: &Table, stage: &Table, name: &str) -> Result<()> {
    for id in list_schema_ids(stage.branch_io()).await? {
        let path = schema_path(id);
        let ours = stage.branch_io().read(&path).await?;
        if table.branch_io().read_opt(&path).await?.as_ref() != Some(&ours) {
            return Err(Error::Unsupported(format!(
                "publishing branch '{name}': its schema {id} is not the schema {id} of '{}' (the \
                 stage altered the schema); publish only data changes, or alter the target first \
                 and stage again",
                table.branch()
            )));
        }
    }
    Ok(())
}

/// The data-file and index-file entries turning `base`'s live files (of `table`) into
/// `latest`'s (of `stage`): DELETE for the files gone, ADD for the new ones.
async fn diff(
    table: &Table,
    base: Option<&Snapshot>,
    stage: &Table,
    latest: &Snapshot,
) -> Result<(Vec<ManifestEntry>, Vec<IndexManifestEntry>)> {
    let (before, before_index) = match base {
        Some(b) => (
            LiveFiles::read(table, b, Pruning::all())
                .await?
                .into_entries(),
            live_index_entries(table, b).await?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let after = LiveFiles::read(stage, latest, Pruning::all())
        .await?
        .into_entries();
    let after_index = live_index_entries(stage, latest).await?;
    let key = |e: &ManifestEntry| (e.partition.clone(), e.bucket, e.file.file_name.clone());
    let index_key = |e: &IndexManifestEntry| {
        (
            e.partition.clone(),
            e.bucket,
            e.index_file.file_name.clone(),
        )
    };
    let kept: HashSet<_> = after.iter().map(key).collect();
    let had: HashSet<_> = before.iter().map(key).collect();
    let mut changes: Vec<ManifestEntry> = before
        .into_iter()
        .filter(|e| !kept.contains(&key(e)))
        .map(|e| ManifestEntry {
            kind: FileKind::Delete,
            ..e
        })
        .collect();
    changes.extend(after.into_iter().filter(|e| !had.contains(&key(e))));
    let kept: HashSet<_> = after_index.iter().map(index_key).collect();
    let had: HashSet<_> = before_index.iter().map(index_key).collect();
    let mut index: Vec<IndexManifestEntry> = before_index
        .into_iter()
        .filter(|e| !kept.contains(&index_key(e)))
        .map(|e| IndexManifestEntry {
            kind: FileKind::Delete,
            ..e
        })
        .collect();
    index.extend(
        after_index
            .into_iter()
            .filter(|e| !had.contains(&index_key(e))),
    );
    Ok((changes, index))
}
