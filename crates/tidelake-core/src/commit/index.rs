//! The index manifest of a new snapshot (Java `IndexManifestFileHandler`): the complete set of
//! live index files, i.e. the previous snapshot's entries minus the deleted ones plus the new
//! ones, never just this commit's changes.
//!
//! Combining rules per index type, as in Java:
//! * `HASH` indexes, and `DELETION_VECTORS` of bucketed tables: one file per (partition,
//!   bucket, type); a new file replaces the old one of its bucket (`BucketedCombiner`);
//! * `DELETION_VECTORS` of bucket-unaware tables: files are keyed by name; adding an existing
//!   file, deleting a missing one, or giving a data file a second deletion vector is a conflict
//!   (`GlobalCombiner`);
//! * any other (global) index type: keyed by file name; deleting a missing file is a conflict
//!   (`GlobalIndexCombiner`).
//!
//! Deletions are applied before additions (Java collects deleted index files first and its
//! combiners process deletions first). Previous entries keep their order; new ones follow.
//!
//! Stricter than Java for bucketed files: a commit may only replace the bucket's *live* file
//! (the one its writer loaded), and may only create the file of a bucket that has none.
//! Otherwise a concurrent writer replaced or created it first, and taking its place would drop
//! that writer's keys from the index (`HASH`: they would later be assigned a second bucket and
//! be duplicated) or its deleted rows (`DELETION_VECTORS`: older copies of keys would show
//! again): that is a [`Error::CommitConflict`]. Java assumes one writer per bucket and
//! silently drops them.

use std::collections::HashSet;

use tidelake_spec::manifest::{FileKind, IndexManifestEntry, DELETION_VECTORS_INDEX, HASH_INDEX};

use crate::error::{Error, Result};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// One file per (partition, bucket, type).
    Bucketed,
    /// Deletion vectors of bucket-unaware tables, keyed by file name.
    GlobalDeletionVectors,
    /// Global indexes, keyed by file name.
    ByFileName,
}

fn combine_rule(index_type: &str, bucket_unaware: bool) -> Combine {
    match index_type {
        HASH_INDEX => Combine::Bucketed,
        DELETION_VECTORS_INDEX if bucket_unaware => Combine::GlobalDeletionVectors,
        DELETION_VECTORS_INDEX => Combine::Bucketed,
        _ => Combine::ByFileName,
    }
}

fn same_bucket(a: &IndexManifestEntry, b: &IndexManifestEntry) -> bool {
    a.partition == b.partition
        && a.bucket == b.bucket
        && a.index_file.index_type == b.index_file.index_type
}

fn same_file(a: &IndexManifestEntry, b: &IndexManifestEntry) -> bool {
    a.index_file.file_name == b.index_file.file_name
        && a.index_file.index_type == b.index_file.index_type
}

fn dv_data_files(entry: &IndexManifestEntry) -> impl Iterator<Item = &str> {
    entry
        .index_file
        .dv_ranges
        .iter()
        .flatten()
        .map(|r| r.data_file_name.as_str())
}

/// Apply `changes` to the live index entries `previous` (see the module docs).
pub(crate) fn combine_index_entries(
    previous: Vec<IndexManifestEntry>,
    changes: &[IndexManifestEntry],
    bucket_unaware: bool,
) -> Result<Vec<IndexManifestEntry>> {
    if let Some(bad) = previous.iter().find(|e| e.kind != FileKind::Add) {
        return Err(Error::corrupt(
            "index manifest",
            format!(
                "previous index manifest holds a DELETE entry for {}",
                bad.index_file.file_name
            ),
        ));
    }
    let conflict = |msg: String| Error::CommitConflict(msg);
    let mut live = previous;
    let mut deleted_bucketed: HashSet<&str> = HashSet::new();
    for change in changes.iter().filter(|c| c.kind == FileKind::Delete) {
        let before = live.len();
        match combine_rule(&change.index_file.index_type, bucket_unaware) {
            Combine::Bucketed => {
                live.retain(|l| !(same_bucket(l, change) && same_file(l, change)));
                // (an overwrite may delete a file its own writer also replaces)
                if live.len() == before
                    && !deleted_bucketed.contains(change.index_file.file_name.as_str())
                {
                    return Err(conflict(format!(
                        "{} index file {} of bucket {} was replaced by a concurrent commit",
                        change.index_file.index_type, change.index_file.file_name, change.bucket
                    )));
                }
                deleted_bucketed.insert(change.index_file.file_name.as_str());
            }
            Combine::GlobalDeletionVectors | Combine::ByFileName => {
                live.retain(|l| !same_file(l, change));
                if live.len() == before {
                    return Err(conflict(format!(
                        "trying to delete index file {} which does not exist",
                        change.index_file.file_name
                    )));
                }
            }
        }
    }
    let mut dv_files: HashSet<String> = live
        .iter()
        .filter(|l| {
            combine_rule(&l.index_file.index_type, bucket_unaware) == Combine::GlobalDeletionVectors
        })
        .flat_map(dv_data_files)
        .map(str::to_string)
        .collect();
    for change in changes.iter().filter(|c| c.kind == FileKind::Add) {
        match combine_rule(&change.index_file.index_type, bucket_unaware) {
            Combine::Bucketed => {
                if let Some(other) = live.iter().find(|l| same_bucket(l, change)) {
                    return Err(conflict(format!(
                        "bucket {} already has {} index file {} (written by a concurrent commit)",
                        change.bucket, change.index_file.index_type, other.index_file.file_name
                    )));
                }
            }
            Combine::ByFileName => live.retain(|l| !same_file(l, change)),
            Combine::GlobalDeletionVectors => {
                if live.iter().any(|l| same_file(l, change)) {
                    return Err(conflict(format!(
                        "trying to add index file {} which is already added",
                        change.index_file.file_name
                    )));
                }
                for data_file in dv_data_files(change) {
                    if !dv_files.insert(data_file.to_string()) {
                        return Err(conflict(format!(
                            "trying to add a deletion vector for data file {data_file} which already has one"
                        )));
                    }
                }
            }
        }
        live.push(change.clone());
    }
    Ok(live)
}
