//! Checks of the files a write adds against what was committed since its writer opened:
//! sequence order, files committed twice, files that vanished (tidelake's own; Java trusts one
//! writer per bucket and relies on exactly-once identifiers).
//!
//! A writer restores each bucket's largest sequence number from its base snapshot
//! ([`CommitMessage::base_snapshot`](crate::commit::CommitMessage::base_snapshot)) and numbers
//! its rows above it. Only commits after the base can hold larger numbers in the bucket, or
//! the writer's own files (a message committed twice), so [`committed_since`] reads the deltas
//! of the snapshots in `(base, latest]`, pruned to the touched partitions and buckets. When the
//! base is unknown, expired or too far behind, it reads the live files of the touched
//! partitions instead (files committed and compacted away since are then unknown, so the new
//! files' existence is verified too, see [`missing_files`]).
//!
//! Invariants (checked by [`check`] before anything is written):
//! * in a primary-key table a write never lands ordered before an already-committed write of
//!   the same key: a new file whose key range overlaps a file committed to its bucket since the
//!   base must hold only sequence numbers above that file's, else [`Error::CommitConflict`]
//!   (the write must be done again by a new writer, which restores the current numbers);
//!   writers of disjoint key ranges never conflict; files of the postpone bucket are exempt
//!   (unsorted, sequence -1: their order is their creation time, see `crate::write::postpone`),
//!   so postpone writers never conflict, as in Java;
//! * a file is added at most once in a table's life: when every new file was already committed,
//!   the attempt is [`Verdict::Landed`] (a retry after an ambiguous failure, or the same
//!   messages committed again); when only some were, the commit is refused.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DataFileMeta, FileKind, ManifestEntry};
use tidelake_spec::snapshot::Snapshot;
use tidelake_spec::types::DataType;

use crate::commit::conflict::partition_display;
use crate::commit::scan::live_entries_of;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::lsm::key::compare_keys;
use crate::state::PartitionSet;
use crate::state::{read_list, read_manifests};
use crate::table::Table;
pub(crate) use crate::write::message::BucketId;
use crate::write::postpone::POSTPONE_BUCKET;

/// Beyond this many snapshots since the base, the live files are read instead of the deltas.
const MAX_DELTAS: i64 = 64;
/// How many files are checked for existence at once.
const PARALLEL_CHECKS: usize = 16;

/// What the commits since the base did to the touched buckets.
#[derive(Debug, Default)]
pub(crate) struct CommittedSince {
    /// The data files added per bucket.
    files: HashMap<BucketId, Vec<DataFileMeta>>,
    /// Data files added, by name, with the snapshot that added them (`None`: live at latest,
    /// snapshot unknown).
    added: HashMap<String, Option<i64>>,
    /// Read from the deltas (every file added since the base is known).
    exact: bool,
}

/// The outcome of [`check`] when no check failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing of the write is committed yet.
    New,
    /// Every new file was already committed, by the snapshot given when known.
    Landed(Option<i64>),
}

/// The smallest base of the messages behind `new` (`None` when any is unknown).
pub(crate) fn common_base(bases: impl Iterator<Item = Option<i64>>) -> Option<i64> {
    let mut min: Option<i64> = None;
    for b in bases {
        let b = b?;
        min = Some(min.map_or(b, |m| m.min(b)));
    }
    min
}

/// Read what was committed to the buckets of `new` after snapshot `base` up to `latest`.
pub(crate) async fn committed_since(
    table: &Table,
    layout: &TableLayout,
    latest: &Snapshot,
    base: Option<i64>,
    new: &[ManifestEntry],
) -> Result<CommittedSince> {
    let buckets: HashSet<BucketId> = new
        .iter()
        .map(|e| (e.partition.clone(), e.bucket))
        .collect();
    let partitions = PartitionSet::new(layout, new.iter().map(|e| e.partition.as_slice()));
    let mut since = CommittedSince::default();
    if let Some(base) = base.filter(|b| *b >= 0 && latest.id - b <= MAX_DELTAS) {
        if let Some(deltas) = read_deltas(table, latest, base, &partitions).await? {
            for (id, entries) in deltas {
                for e in entries {
                    if e.kind == FileKind::Add && buckets.contains(&(e.partition.clone(), e.bucket))
                    {
                        since.record(&e, Some(id));
                    }
                }
            }
            since.exact = true;
            return Ok(since);
        }
    }
    for e in live_entries_of(table, latest, &partitions).await? {
        if buckets.contains(&(e.partition.clone(), e.bucket)) {
            since.record(&e, None);
        }
    }
    Ok(since)
}

/// The delta entries of snapshots `base+1..=latest` in the touched partitions, or `None` when
/// one of those snapshots (or its delta) is gone.
async fn read_deltas(
    table: &Table,
    latest: &Snapshot,
    base: i64,
    partitions: &PartitionSet,
) -> Result<Option<Vec<(i64, Vec<ManifestEntry>)>>> {
    let sm = table.snapshot_manager();
    let mut out = Vec::new();
    for id in (base + 1)..=latest.id {
        let snapshot = if id == latest.id {
            latest.clone()
        } else {
            match sm.snapshot(id).await {
                Ok(s) => s,
                Err(e) if e.is_missing() => return Ok(None),
                Err(e) => return Err(e),
            }
        };
        let metas = match read_list(table, &snapshot.delta_manifest_list).await {
            Ok(m) => m,
            Err(e) if e.is_missing() => return Ok(None),
            Err(e) => return Err(e),
        };
        let metas: Vec<_> = metas
            .into_iter()
            .filter(|m| partitions.may_be_in(m))
            .collect();
        let entries = match read_manifests(table, &metas).await {
            Ok(e) => e,
            Err(e) if e.is_missing() => return Ok(None),
            Err(e) => return Err(e),
        };
        out.push((id, entries));
    }
    Ok(Some(out))
}

impl CommittedSince {
    fn record(&mut self, e: &ManifestEntry, snapshot: Option<i64>) {
        self.files
            .entry((e.partition.clone(), e.bucket))
            .or_default()
            .push(e.file.clone());
        self.added
            .entry(e.file.file_name.clone())
            .or_insert(snapshot);
    }

    /// A file at level >= 1 of a bucket of `own` that a commit since the base added and `own`
    /// does not name (without the deltas: any such live file): on deletion-vector tables a
    /// compaction planned before it may leave a key visible twice.
    pub(crate) fn newer_sorted_file(
        &self,
        own: &[ManifestEntry],
    ) -> Option<(&BucketId, &DataFileMeta)> {
        let named: HashSet<&str> = own.iter().map(|e| e.file.file_name.as_str()).collect();
        let buckets: HashSet<(&[u8], i32)> = own
            .iter()
            .map(|e| (e.partition.as_slice(), e.bucket))
            .collect();
        self.files
            .iter()
            .filter(|((p, b), _)| buckets.contains(&(p.as_slice(), *b)))
            .flat_map(|(bucket, files)| files.iter().map(move |f| (bucket, f)))
            .find(|(_, f)| f.level >= 1 && !named.contains(f.file_name.as_str()))
    }

    /// The first file committed to the bucket of `e` since the base whose key range overlaps
    /// `e`'s and that `e` would land ordered before (any overlapping one with `validate_reads`).
    fn overlapping(
        &self,
        e: &ManifestEntry,
        key_types: &[DataType],
        validate_reads: bool,
    ) -> Result<Option<&DataFileMeta>> {
        let Some(committed) = self.files.get(&(e.partition.clone(), e.bucket)) else {
            return Ok(None);
        };
        let ours = key_range(&e.file, key_types)?;
        for other in committed
            .iter()
            .filter(|o| validate_reads || o.max_sequence_number >= e.file.min_sequence_number)
        {
            let theirs = key_range(other, key_types)?;
            if compare_keys(&ours.0, &theirs.1) != Ordering::Greater
                && compare_keys(&theirs.0, &ours.1) != Ordering::Greater
            {
                return Ok(Some(other));
            }
        }
        Ok(None)
    }

    /// Whether a commit since the base added one of the files of `new`.
    pub(crate) fn holds_any(&self, new: &[ManifestEntry]) -> bool {
        new.iter()
            .any(|e| self.added.contains_key(&e.file.file_name))
    }

    /// True when the new files' existence must be verified before they are published: the
    /// deltas were not read, so a file of this write committed and compacted away since would
    /// not be recognised.
    pub(crate) fn exact(&self) -> bool {
        self.exact
    }
}

/// The checks of the module docs for the ADD entries in `new`; `key_types` (the trimmed
/// primary key) for primary-key tables whose writers' base is known, which are checked for
/// sequence order. `validate_reads` (row-level DML computed from the base snapshot): any
/// overlapping file committed since the base is a conflict, whatever its sequence numbers, and
/// so is not knowing what was committed since. `conflict` builds the error naming the snapshot
/// checked against.
pub(crate) fn check(
    layout: &TableLayout,
    since: &CommittedSince,
    base: Option<i64>,
    new: &[ManifestEntry],
    key_types: Option<&[DataType]>,
    validate_reads: bool,
    conflict: impl Fn(String) -> Error,
) -> Result<Verdict> {
    let added: Vec<&ManifestEntry> = new.iter().filter(|e| e.kind == FileKind::Add).collect();
    let already: Vec<&ManifestEntry> = added
        .iter()
        .copied()
        .filter(|e| since.added.contains_key(&e.file.file_name))
        .collect();
    if !added.is_empty() && already.len() == added.len() {
        let snapshot = already
            .iter()
            .filter_map(|e| since.added[&e.file.file_name])
            .max();
        return Ok(Verdict::Landed(snapshot));
    }
    if let Some(e) = already.first() {
        return Err(Error::invalid(format!(
            "file {} of bucket {} of {} is already committed{}, but {} other files of this commit are not: \
             the commit messages were partly committed before; a message can be committed once",
            e.file.file_name,
            e.bucket,
            partition_display(layout, &e.partition),
            since.added[&e.file.file_name].map_or(String::new(), |id| format!(" (snapshot {id})")),
            added.len() - already.len()
        )));
    }
    let Some(key_types) = key_types else {
        return Ok(Verdict::New);
    };
    if validate_reads && !since.exact {
        return Err(conflict(format!(
            "this row-level change was computed from snapshot {}, and the commits since then could not all be \
             read (expired, or too many): run it again on the latest snapshot",
            base.map_or("(unknown)".to_string(), |b| b.to_string())
        )));
    }
    for e in added.iter().filter(|e| e.bucket != POSTPONE_BUCKET) {
        let Some(other) = since.overlapping(e, key_types, validate_reads)? else {
            continue;
        };
        if validate_reads {
            return Err(conflict(format!(
                "file {} committed to bucket {} of {} after snapshot {}, which this row-level change \
                 was computed from, holds keys in the range it changes: run it again on the latest \
                 snapshot",
                other.file_name,
                e.bucket,
                partition_display(layout, &e.partition),
                base.map_or("(unknown)".to_string(), |b| b.to_string()),
            )));
        }
        return Err(conflict(format!(
            "the rows of this write in bucket {} of {} have sequence numbers from {}, but file {} committed \
             since its writer opened{} holds keys of the same range with sequence numbers up to {}: landing \
             now, this write would be ordered before an older one; write again (a new writer continues from \
             the committed numbers)",
            e.bucket,
            partition_display(layout, &e.partition),
            e.file.min_sequence_number,
            other.file_name,
            base.map_or(String::new(), |b| format!(" (at snapshot {b})")),
            other.max_sequence_number,
        )));
    }
    Ok(Verdict::New)
}

/// Per bucket where an ADD entry of `new` would land ordered before a file committed since the
/// base (the sequence-order conflict of [`check`]): the largest sequence number committed to
/// the bucket since (of its live files, when the deltas were not read).
pub(crate) fn stale_buckets(
    since: &CommittedSince,
    new: &[ManifestEntry],
    key_types: &[DataType],
) -> Result<HashMap<BucketId, i64>> {
    let mut out = HashMap::new();
    for e in new
        .iter()
        .filter(|e| e.kind == FileKind::Add && e.bucket != POSTPONE_BUCKET)
    {
        let id = (e.partition.clone(), e.bucket);
        if out.contains_key(&id) || since.overlapping(e, key_types, false)?.is_none() {
            continue;
        }
        let max = since.files[&id]
            .iter()
            .map(|f| f.max_sequence_number)
            .max()
            .unwrap_or(i64::MIN);
        out.insert(id, max);
    }
    Ok(out)
}

/// A data file's decoded (min key, max key).
fn key_range(file: &DataFileMeta, key_types: &[DataType]) -> Result<(Vec<Datum>, Vec<Datum>)> {
    let decode = |bytes: &[u8]| {
        decode_framed(bytes, key_types).map_err(|err| {
            Error::corrupt(
                format!("metadata of data file {}", file.file_name),
                format!("cannot decode its key range: {err}"),
            )
        })
    };
    Ok((decode(&file.min_key)?, decode(&file.max_key)?))
}

/// Those of `paths` (relative to the table root, or external) that no longer exist.
pub(crate) async fn missing_files(table: &Table, paths: Vec<String>) -> Result<Vec<String>> {
    let io = table.io();
    stream::iter(
        paths
            .into_iter()
            .map(|p| async move { Ok::<_, Error>((!io.exists(&p).await?).then_some(p)) }),
    )
    .buffer_unordered(PARALLEL_CHECKS)
    .try_filter_map(|p| async move { Ok(p) })
    .try_collect()
    .await
}

/// Paths of the files the ADD entries of `entries` reference, relative to the table root
/// (external paths as written).
pub(crate) fn added_paths(layout: &TableLayout, entries: &[ManifestEntry]) -> Result<Vec<String>> {
    entries
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(|e| {
            Ok(e.file
                .path(&layout.bucket_path(&layout.decode_partition(&e.partition)?, e.bucket)?))
        })
        .collect()
}
