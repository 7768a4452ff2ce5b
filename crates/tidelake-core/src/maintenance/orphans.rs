//! Removing orphan files: files no snapshot, tag or branch references, left by failed or
//! killed writers and by interrupted maintenance (Java `OrphanFilesClean`,
//! `LocalOrphanFilesClean`).
//!
//! Candidates, found by listing (Java `listPaimonFileDirs`): files directly in `manifest/`,
//! `index/` and `statistics/`; files directly in a bucket directory
//! (`<k=v>/…/bucket-<n>/`, as many `k=v` levels as partition keys); stray files in
//! `changelog/` (anything but `changelog-<N>` and the hints). Never: `schema/`, `snapshot/`,
//! `tag/`, `consumer/`, `branch/`, other directories, or files modified at or after the
//! cutoff — a writer's uncommitted files are protected by their age only.
//!
//! Referenced: every file name any manifest of any root names (added or deleted, data files
//! and extra files), every manifest list, manifest, index manifest, index file and statistics
//! file. Roots: all snapshots, tags and decoupled changelogs (`changelog/changelog-<N>`) of the
//! main branch and of every branch under `branch/branch-<name>/` (manifests and data are
//! shared by branches). Consumers only protect snapshots, which are roots anyway. Roots are
//! listed again after the scan so that a commit landing meanwhile protects its files.
//!
//! Deviation: Java refuses a cutoff in the future; it is accepted here (useful to clean right
//! after killing writers). Empty directories are left in place.

use std::collections::HashSet;

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::snapshot::Snapshot;

use crate::error::{Error, Result};
use crate::io::{FileIO, FileStatus};
use crate::maintenance::refs::{
    DataScope, MetaCache, References, INDEX_DIR, MANIFEST_DIR, STATISTICS_DIR,
};
use crate::maintenance::snapshot_path;
use crate::snapshots::SnapshotManager;
use crate::table::Table;

const BRANCH_DIR: &str = "branch";
const CHANGELOG_DIR: &str = "changelog";

/// One orphan file, found (and deleted unless it was a dry run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanFile {
    /// Path relative to the table root.
    pub path: String,
    pub size: u64,
}

/// Whether `path` (relative to the table root) is a file orphan cleaning may consider.
fn is_candidate_path(path: &str, partition_levels: usize) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let Some((name, dirs)) = parts.split_last() else {
        return false;
    };
    match dirs {
        [dir] if [MANIFEST_DIR, INDEX_DIR, STATISTICS_DIR].contains(dir) => true,
        [dir] if *dir == CHANGELOG_DIR => {
            changelog_id(name).is_none() && *name != "EARLIEST" && *name != "LATEST"
        }
        _ => {
            dirs.len() == partition_levels + 1
                && dirs[..partition_levels].iter().all(|d| d.contains('='))
                && dirs[partition_levels].starts_with("bucket-")
                && !name.is_empty()
        }
    }
}

/// The id of a decoupled changelog file `changelog-<N>`.
fn changelog_id(name: &str) -> Option<i64> {
    let digits = name.strip_prefix("changelog-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Snapshot-format roots under `io` (a table or branch directory): snapshots, tags and
/// decoupled changelogs. Files deleted while listing (concurrent expiration) are skipped.
async fn roots_of(io: &FileIO) -> Result<Vec<Snapshot>> {
    let sm = SnapshotManager::new(io.clone());
    let mut paths: Vec<String> = sm
        .list_ids()
        .await?
        .into_iter()
        .map(snapshot_path)
        .collect();
    for f in io.list_dir(CHANGELOG_DIR).await? {
        if let Some(id) = f.path.rsplit('/').next().and_then(changelog_id) {
            paths.push(format!("{CHANGELOG_DIR}/changelog-{id}"));
        }
    }
    let mut roots: Vec<Snapshot> = stream::iter(paths)
        .map(|rel| async move {
            match io.read_opt(&rel).await? {
                Some(bytes) => Snapshot::from_json(&bytes)
                    .map(Some)
                    .map_err(|e| Error::from_spec(io.display(&rel), e)),
                None => Ok(None),
            }
        })
        .buffered(16)
        .try_collect::<Vec<Option<Snapshot>>>()
        .await?
        .into_iter()
        .flatten()
        .collect();
    roots.extend(
        sm.tags()
            .await?
            .into_iter()
            .map(|(_, t)| t.snapshot.clone()),
    );
    Ok(roots)
}

/// Every root of the main branch and of all branches.
async fn all_roots(table: &Table) -> Result<Vec<Snapshot>> {
    let io = table.io();
    let mut roots = roots_of(io).await?;
    for dir in io.list_subdirs(BRANCH_DIR).await? {
        if dir.starts_with("branch-") {
            roots.extend(roots_of(&io.child(&format!("{BRANCH_DIR}/{dir}"))).await?);
        }
    }
    Ok(roots)
}

/// Find (and unless `dry_run` delete) every orphan file last modified before `older_than_ms`.
pub async fn remove_orphan_files(
    table: &Table,
    older_than_ms: i64,
    dry_run: bool,
) -> Result<Vec<OrphanFile>> {
    let partition_levels = table.schema().partition_keys.len();
    let candidates: Vec<FileStatus> = table
        .io()
        .list_recursive("")
        .await?
        .into_iter()
        .filter(|f| {
            f.last_modified_ms < older_than_ms && is_candidate_path(&f.path, partition_levels)
        })
        .collect();
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut cache = MetaCache::new(table);
    let mut refs = References::default();
    let mut done: HashSet<(i64, String)> = HashSet::new();
    // Twice: the second pass adds roots committed while the first one ran.
    for _ in 0..2 {
        for root in all_roots(table).await? {
            if done.insert((root.id, root.base_manifest_list.clone())) {
                refs.add(&mut cache, &root, DataScope::All).await?;
            }
        }
    }
    let orphans: Vec<OrphanFile> = candidates
        .into_iter()
        .filter(|f| {
            f.path
                .rsplit('/')
                .next()
                .is_some_and(|name| !refs.contains(name))
        })
        .map(|f| OrphanFile {
            path: f.path,
            size: f.size,
        })
        .collect();
    if !dry_run {
        let io = table.io();
        let paths: Vec<String> = orphans.iter().map(|f| f.path.clone()).collect();
        stream::iter(paths)
            .map(|path| async move { io.delete(&path).await })
            .buffer_unordered(16)
            .try_collect::<Vec<()>>()
            .await?;
    }
    Ok(orphans)
}

#[cfg(test)]
mod tests {
    use super::is_candidate_path;

    #[test]
    fn only_data_and_metadata_directories_are_candidates() {
        assert!(is_candidate_path("manifest/manifest-abc-0", 1));
        assert!(is_candidate_path("index/index-abc-0", 0));
        assert!(is_candidate_path("statistics/stat-abc-0", 0));
        assert!(is_candidate_path("dt=1/bucket-0/data-abc-0.parquet", 1));
        assert!(is_candidate_path("bucket-postpone/data-x.avro", 0));
        assert!(is_candidate_path("changelog/.changelog-3.tmp", 0));
        assert!(!is_candidate_path("changelog/changelog-3", 0));
        assert!(!is_candidate_path("changelog/LATEST", 0));
        assert!(!is_candidate_path("bucket-0/data-abc-0.parquet", 1));
        assert!(!is_candidate_path("dt=1/bucket-0/data-abc-0.parquet", 0));
        assert!(!is_candidate_path("snapshot/snapshot-1", 0));
        assert!(!is_candidate_path("schema/schema-0", 0));
        assert!(!is_candidate_path("tag/tag-a", 0));
        assert!(!is_candidate_path("consumer/consumer-a", 0));
        assert!(!is_candidate_path("branch/branch-b/snapshot/snapshot-1", 0));
        assert!(!is_candidate_path("README", 0));
        assert!(!is_candidate_path("manifest/sub/x", 0));
    }
}
