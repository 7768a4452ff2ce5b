//! Replaying manifest entries into the files they leave live (Java `FileEntry.mergeEntries`
//! for data files; index manifests likewise by index file name).
//!
//! Invariants:
//! * Entries are replayed in the order given (a snapshot's base list, then its delta list,
//!   each in list order, each manifest in file order).
//! * An ADD must not repeat an identifier ([`FileIdentifier`]) already added and not deleted:
//!   that is [`Error::Corrupt`] naming the file, its bucket and, when known, the manifests.
//! * A DELETE cancels the ADD with an equal identifier; a DELETE whose ADD is not among the
//!   entries (it lives in an older manifest) is kept, in place, so that merging a delta and then
//!   merging the result after its base gives the same answer as merging everything at once.
//! * Because an identifier holds the partition, bucket and level of its file, dropping entries
//!   by partition, bucket or level *before* the replay gives the same live files as dropping
//!   them after it.

use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use super::entry::{FileIdentifier, FileKind, ManifestEntry};
use super::index::IndexManifestEntry;
use crate::error::{Error, Result};

/// Replays `entries` (see the module docs).
pub fn merge_entries(
    entries: impl IntoIterator<Item = ManifestEntry>,
) -> Result<Vec<ManifestEntry>> {
    merge_entries_from(entries.into_iter().map(|e| (None, e)))
}

/// The fields of an entry's [`FileIdentifier`], borrowed (hashed and compared without a copy).
#[derive(PartialEq, Eq, Hash)]
struct IdRef<'e> {
    partition: &'e [u8],
    bucket: i32,
    level: i32,
    file_name: &'e str,
    extra_files: &'e [String],
    embedded_index: Option<&'e [u8]>,
    external_path: Option<&'e str>,
}

fn id_ref(e: &ManifestEntry) -> IdRef<'_> {
    IdRef {
        partition: &e.partition,
        bucket: e.bucket,
        level: e.file.level,
        file_name: &e.file.file_name,
        extra_files: &e.file.extra_files,
        embedded_index: e.file.embedded_index.as_deref(),
        external_path: e.file.external_path.as_deref(),
    }
}

/// A hasher of keys that already are hashes.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The slots of the entries added and not (yet) deleted, by identifier: by the identifier's
/// hash, and, for an identifier whose hash another one holds, by the identifier itself (so a
/// file's identifier is copied only on a hash collision).
struct LiveIndex {
    state: RandomState,
    by_hash: HashMap<u64, usize, BuildHasherDefault<Prehashed>>,
    collided: HashMap<FileIdentifier, usize>,
}

/// Where [`LiveIndex::find`] found an identifier.
enum Found {
    Hashed(u64),
    Collided,
}

impl LiveIndex {
    fn hash(&self, e: &ManifestEntry) -> u64 {
        self.state.hash_one(id_ref(e))
    }

    /// The slot of the live entry with `e`'s identifier (`slots` as [`merge_entries_from`]
    /// keeps them).
    fn find(
        &self,
        e: &ManifestEntry,
        hash: u64,
        slots: &[Option<(Option<&str>, ManifestEntry)>],
    ) -> Option<(Found, usize)> {
        if let Some(&pos) = self.by_hash.get(&hash) {
            if slots[pos]
                .as_ref()
                .is_some_and(|(_, live)| id_ref(live) == id_ref(e))
            {
                return Some((Found::Hashed(hash), pos));
            }
        }
        if self.collided.is_empty() {
            return None;
        }
        self.collided
            .get(&e.identifier())
            .map(|&pos| (Found::Collided, pos))
    }

    fn insert(&mut self, e: &ManifestEntry, hash: u64, pos: usize) {
        match self.by_hash.entry(hash) {
            Entry::Occupied(_) => {
                self.collided.insert(e.identifier(), pos);
            }
            Entry::Vacant(slot) => {
                slot.insert(pos);
            }
        }
    }

    fn remove(&mut self, found: Found, e: &ManifestEntry) {
        match found {
            Found::Hashed(hash) => self.by_hash.remove(&hash),
            Found::Collided => self.collided.remove(&e.identifier()),
        };
    }
}

/// [`merge_entries`] over entries tagged with the name of the manifest file they come from,
/// which the "added twice" error then names (as `manifest/<name>`).
pub fn merge_entries_from<'a>(
    entries: impl IntoIterator<Item = (Option<&'a str>, ManifestEntry)>,
) -> Result<Vec<ManifestEntry>> {
    let mut slots: Vec<Option<(Option<&'a str>, ManifestEntry)>> = Vec::new();
    let mut index = LiveIndex {
        state: RandomState::new(),
        by_hash: HashMap::default(),
        collided: HashMap::new(),
    };
    for (manifest, entry) in entries {
        let hash = index.hash(&entry);
        let found = index.find(&entry, hash, &slots);
        match (entry.kind, found) {
            (FileKind::Add, Some((_, pos))) => {
                let first = slots[pos].as_ref().and_then(|(m, _)| *m);
                let by = match (first, manifest) {
                    (Some(a), Some(b)) if a == b => {
                        format!(" (both by manifest manifest/{a})")
                    }
                    (Some(a), Some(b)) => {
                        format!(" (by manifests manifest/{a} and manifest/{b})")
                    }
                    _ => String::new(),
                };
                return Err(Error::corrupt(
                    "manifest",
                    format_args!(
                        "file {} is added twice in bucket {}{by}",
                        entry.file.file_name, entry.bucket
                    ),
                ));
            }
            (FileKind::Delete, Some((found, pos))) => {
                index.remove(found, &entry);
                slots[pos] = None;
            }
            (FileKind::Add | FileKind::Delete, None) => {
                index.insert(&entry, hash, slots.len());
                slots.push(Some((manifest, entry)));
            }
        }
    }
    Ok(slots.into_iter().flatten().map(|(_, e)| e).collect())
}

/// The live index files of an index manifest: a DELETE cancels the earlier ADDs of the same
/// index file name; ADDs keep their order.
pub fn merge_index_entries(
    entries: impl IntoIterator<Item = IndexManifestEntry>,
) -> Vec<IndexManifestEntry> {
    let mut live: Vec<IndexManifestEntry> = Vec::new();
    for e in entries {
        match e.kind {
            FileKind::Add => live.push(e),
            FileKind::Delete => live.retain(|l| l.index_file.file_name != e.index_file.file_name),
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{DataFileMeta, IndexFileMeta, SimpleStats};

    fn file(name: &str, level: i32) -> DataFileMeta {
        let stats = SimpleStats {
            min_values: Vec::new(),
            max_values: Vec::new(),
            null_counts: None,
        };
        DataFileMeta {
            file_name: name.to_string(),
            file_size: 1,
            row_count: 1,
            min_key: Vec::new(),
            max_key: Vec::new(),
            key_stats: stats.clone(),
            value_stats: stats,
            min_sequence_number: 0,
            max_sequence_number: 0,
            schema_id: 0,
            level,
            extra_files: Vec::new(),
            creation_time: None,
            delete_row_count: None,
            embedded_index: None,
            file_source: None,
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
            write_cols_sequences: None,
        }
    }

    fn entry(kind: FileKind, partition: u8, bucket: i32, name: &str, level: i32) -> ManifestEntry {
        ManifestEntry {
            kind,
            partition: vec![partition],
            bucket,
            total_buckets: 2,
            file: file(name, level),
        }
    }

    fn names(entries: &[ManifestEntry]) -> Vec<(FileKind, &str)> {
        entries
            .iter()
            .map(|e| (e.kind, e.file.file_name.as_str()))
            .collect()
    }

    #[test]
    fn delete_cancels_add_and_keeps_order() {
        let merged = merge_entries([
            entry(FileKind::Add, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "b", 0),
            entry(FileKind::Add, 0, 1, "c", 0),
            entry(FileKind::Delete, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "d", 1),
        ])
        .unwrap();
        assert_eq!(
            names(&merged),
            [
                (FileKind::Add, "b"),
                (FileKind::Add, "c"),
                (FileKind::Add, "d")
            ]
        );
    }

    #[test]
    fn delete_matches_only_the_same_identifier() {
        // Same name, other level / bucket / partition: not the same file.
        let merged = merge_entries([
            entry(FileKind::Add, 0, 0, "a", 0),
            entry(FileKind::Delete, 0, 0, "a", 1),
            entry(FileKind::Delete, 0, 1, "a", 0),
            entry(FileKind::Delete, 1, 0, "a", 0),
        ])
        .unwrap();
        assert_eq!(merged.len(), 4);
        assert_eq!(merged[0].kind, FileKind::Add);
    }

    #[test]
    fn unmatched_delete_is_kept_and_merging_is_associative() {
        let base = vec![
            entry(FileKind::Add, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "b", 0),
        ];
        let delta = vec![
            entry(FileKind::Delete, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "c", 0),
        ];
        let merged_delta = merge_entries(delta.clone()).unwrap();
        assert_eq!(
            names(&merged_delta),
            [(FileKind::Delete, "a"), (FileKind::Add, "c")]
        );
        let in_two = merge_entries(base.iter().cloned().chain(merged_delta)).unwrap();
        let at_once = merge_entries(base.into_iter().chain(delta)).unwrap();
        assert_eq!(in_two, at_once);
        assert_eq!(
            names(&at_once),
            [(FileKind::Add, "b"), (FileKind::Add, "c")]
        );
    }

    #[test]
    fn re_add_after_delete_is_allowed() {
        let merged = merge_entries([
            entry(FileKind::Add, 0, 0, "a", 0),
            entry(FileKind::Delete, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "a", 0),
        ])
        .unwrap();
        assert_eq!(names(&merged), [(FileKind::Add, "a")]);
    }

    #[test]
    fn added_twice_is_corrupt_and_names_the_manifests() {
        let err = merge_entries_from([
            (Some("m-1"), entry(FileKind::Add, 0, 3, "a", 0)),
            (Some("m-2"), entry(FileKind::Add, 0, 3, "a", 0)),
        ])
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Corrupt { .. }), "{text}");
        assert!(
            text.contains(
                "file a is added twice in bucket 3 (by manifests manifest/m-1 and manifest/m-2)"
            ),
            "{text}"
        );
        let err = merge_entries([
            entry(FileKind::Add, 0, 0, "a", 0),
            entry(FileKind::Add, 0, 0, "a", 0),
        ])
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("file a is added twice in bucket 0"),
            "{err}"
        );
    }

    fn index_entry(kind: FileKind, name: &str) -> IndexManifestEntry {
        IndexManifestEntry {
            kind,
            partition: Vec::new(),
            bucket: 0,
            index_file: IndexFileMeta {
                index_type: "DELETION_VECTORS".to_string(),
                file_name: name.to_string(),
                file_size: 1,
                row_count: 1,
                dv_ranges: None,
                external_path: None,
                global_index: None,
            },
        }
    }

    #[test]
    fn index_delete_cancels_earlier_adds_by_name() {
        let live = merge_index_entries([
            index_entry(FileKind::Add, "i1"),
            index_entry(FileKind::Add, "i2"),
            index_entry(FileKind::Delete, "i1"),
            index_entry(FileKind::Add, "i3"),
        ]);
        let names: Vec<&str> = live
            .iter()
            .map(|e| e.index_file.file_name.as_str())
            .collect();
        assert_eq!(names, ["i2", "i3"]);
    }
}
