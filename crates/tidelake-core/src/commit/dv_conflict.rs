//! Deletion-vector conflicts of bucketed tables (tidelake's own; Java relies on one writer or
//! compactor per bucket and checks only file deletions and level overlaps).
//!
//! A deletion vector hides the older copy of a key in a deeper file, so two compactions of one
//! bucket racing each other can leave a key visible twice:
//! 1. a commit adds deletion vectors for a data file that a concurrent compaction already
//!    rewrote: the rewrite (without those rows deleted) is live and the vector hides nothing;
//! 2. a compaction rewrites a data file whose deletion vector changed after the compaction
//!    was planned: its output holds rows the new vector deleted.
//!
//! Both are [`Error::CommitConflict`](crate::error::Error::CommitConflict)s, checked against the latest snapshot before anything is
//! written: every data file the commit's new deletion vectors name must be live after the
//! commit, and no deletion vector live after the commit may name a file the commit removes
//! unless it was already live at the commit's base snapshot (the compaction saw it: it is a
//! leftover entry of a removed file, not a newer deletion).

use std::collections::HashSet;

use tidelake_spec::manifest::{
    FileKind, IndexManifestEntry, ManifestEntry, DELETION_VECTORS_INDEX,
};
use tidelake_spec::snapshot::Snapshot;

use crate::commit::conflict::{partition_display, ConflictChecker};
use crate::error::Result;
use crate::state::live_index_entries;
use crate::table::Table;

/// A data file by (partition, bucket, file name).
type FileKey = (Vec<u8>, i32, String);

/// (partition, bucket, data file name).
type FileId<'a> = (&'a [u8], i32, &'a str);

fn is_dv(e: &IndexManifestEntry) -> bool {
    e.index_file.index_type == DELETION_VECTORS_INDEX
}

fn named_files(e: &IndexManifestEntry) -> impl Iterator<Item = FileId<'_>> {
    e.index_file
        .dv_ranges
        .iter()
        .flatten()
        .map(move |r| (e.partition.as_slice(), e.bucket, r.data_file_name.as_str()))
}

/// Check the rules of the module docs. `base` holds the live data files of the touched
/// partitions in `latest`, `table` and `index` the commit's data-file and index changes,
/// `base_snapshot` the snapshot the commit's compactions were planned on.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn check_deletion_vectors(
    table: &Table,
    checker: &ConflictChecker<'_>,
    latest: &Snapshot,
    base: &[ManifestEntry],
    changes: &[ManifestEntry],
    index: &[IndexManifestEntry],
    base_snapshot: Option<i64>,
) -> Result<()> {
    let id = |e: &ManifestEntry| (e.partition.clone(), e.bucket, e.file.file_name.clone());
    let added: HashSet<_> = changes
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(id)
        .collect();
    let removed: HashSet<_> = changes
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(id)
        .filter(|f| !added.contains(f))
        .collect();
    let mut live_after: HashSet<_> = base
        .iter()
        .map(id)
        .filter(|f| !removed.contains(f))
        .collect();
    live_after.extend(added);
    let owned = |(p, b, n): FileId<'_>| (p.to_vec(), b, n.to_string());
    for e in index.iter().filter(|e| e.kind == FileKind::Add && is_dv(e)) {
        if let Some(gone) = named_files(e).map(owned).find(|f| !live_after.contains(f)) {
            return Err(checker.conflict(
                latest,
                format!(
                    "deletion vectors for data file {} (bucket {}, {}), which a concurrent commit removed",
                    gone.2,
                    gone.1,
                    partition_display(checker.layout, &gone.0)
                ),
            ));
        }
    }
    if removed.is_empty() {
        return Ok(());
    }
    let dropped: HashSet<&str> = index
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(|e| e.index_file.file_name.as_str())
        .collect();
    let live_index = live_index_entries(table, latest).await?;
    let covering: Vec<(&IndexManifestEntry, FileKey)> = live_index
        .iter()
        .filter(|e| is_dv(e) && !dropped.contains(e.index_file.file_name.as_str()))
        .flat_map(|e| {
            named_files(e)
                .map(owned)
                .filter(|f| removed.contains(f))
                .map(move |f| (e, f))
        })
        .collect();
    if covering.is_empty() {
        return Ok(());
    }
    let seen: HashSet<String> = match base_snapshot {
        Some(b) if b == latest.id => return Ok(()),
        // a base that expired (before or while it is read) counts as having seen nothing
        Some(b) => match index_file_names(table, b).await {
            Ok(names) => names,
            Err(e) if e.is_missing() => HashSet::new(),
            Err(e) => return Err(e),
        },
        None => HashSet::new(),
    };
    match covering.iter().find(|(e, _)| !seen.contains(&e.index_file.file_name)) {
        None => Ok(()),
        Some((_, f)) => Err(checker.conflict(
            latest,
            format!(
                "data file {} (bucket {}, {}) got new deletion vectors after this compaction was planned{}: \
                 its rewrite would show deleted rows again",
                f.2,
                f.1,
                partition_display(checker.layout, &f.0),
                base_snapshot.map_or(String::new(), |b| format!(" (at snapshot {b})")),
            ),
        )),
    }
}

/// The names of the index files live in snapshot `id`.
async fn index_file_names(table: &Table, id: i64) -> Result<HashSet<String>> {
    let snap = table.snapshot_manager().snapshot(id).await?;
    Ok(live_index_entries(table, &snap)
        .await?
        .into_iter()
        .map(|e| e.index_file.file_name)
        .collect())
}
