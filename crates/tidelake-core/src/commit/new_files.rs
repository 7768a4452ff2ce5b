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
//! * in a primary-key table a write never lands ordered before an already-committed write to
//!   the same bucket: every new file's smallest sequence number is above every sequence number
//!   committed to its bucket since the base, else [`Error::CommitConflict`] (the write must be
//!   done again by a new writer, which restores the current numbers);
//! * a file is added at most once in a table's life: when every new file was already committed,
//!   the attempt is [`Verdict::Landed`] (a retry after an ambiguous failure, or the same
//!   messages committed again); when only some were, the commit is refused.

use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::manifest::{FileKind, ManifestEntry};
use tidelake_spec::snapshot::Snapshot;

use crate::commit::conflict::partition_display;
use crate::commit::scan::{live_entries_of, PartitionSet};
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::scan::plan::{read_list, read_manifests};
use crate::table::Table;

/// Beyond this many snapshots since the base, the live files are read instead of the deltas.
const MAX_DELTAS: i64 = 64;
/// How many files are checked for existence at once.
const PARALLEL_CHECKS: usize = 16;

/// (partition, bucket).
type BucketId = (Vec<u8>, i32);

/// What the commits since the base did to the touched buckets.
#[derive(Debug, Default)]
pub(crate) struct CommittedSince {
    /// Largest sequence number of the data files added per bucket.
    max_sequence: HashMap<BucketId, i64>,
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
    let buckets: HashSet<BucketId> = new.iter().map(|e| (e.partition.clone(), e.bucket)).collect();
    let partitions = PartitionSet::new(layout, new.iter().map(|e| e.partition.as_slice()));
    let mut since = CommittedSince::default();
    if let Some(base) = base.filter(|b| *b >= 0 && latest.id - b <= MAX_DELTAS) {
        if let Some(deltas) = read_deltas(table, latest, base, &partitions).await? {
            for (id, entries) in deltas {
                for e in entries {
                    if e.kind == FileKind::Add && buckets.contains(&(e.partition.clone(), e.bucket)) {
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
                Err(e) if e.kind() == crate::error::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
        };
        let metas = match read_list(table, &snapshot.delta_manifest_list).await {
            Ok(m) => m,
            Err(e) if e.kind() == crate::error::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let metas: Vec<_> = metas.into_iter().filter(|m| partitions.may_be_in(m)).collect();
        let entries = match read_manifests(table, &metas).await {
            Ok(e) => e,
            Err(e) if e.kind() == crate::error::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        out.push((id, entries));
    }
    Ok(Some(out))
}

impl CommittedSince {
    fn record(&mut self, e: &ManifestEntry, snapshot: Option<i64>) {
        let max = self.max_sequence.entry((e.partition.clone(), e.bucket)).or_insert(i64::MIN);
        *max = (*max).max(e.file.max_sequence_number);
        self.added.entry(e.file.file_name.clone()).or_insert(snapshot);
    }

    /// True when the new files' existence must be verified before they are published: the
    /// deltas were not read, so a file of this write committed and compacted away since would
    /// not be recognised.
    pub(crate) fn exact(&self) -> bool {
        self.exact
    }
}

/// The checks of the module docs for the ADD entries in `new`; `sequence_order` for
/// primary-key tables whose writers' base is known. `conflict` builds the error naming the snapshot checked against.
pub(crate) fn check(
    layout: &TableLayout,
    since: &CommittedSince,
    base: Option<i64>,
    new: &[ManifestEntry],
    sequence_order: bool,
    conflict: impl Fn(String) -> Error,
) -> Result<Verdict> {
    let added: Vec<&ManifestEntry> = new.iter().filter(|e| e.kind == FileKind::Add).collect();
    let already: Vec<&ManifestEntry> =
        added.iter().copied().filter(|e| since.added.contains_key(&e.file.file_name)).collect();
    if !added.is_empty() && already.len() == added.len() {
        let snapshot = already.iter().filter_map(|e| since.added[&e.file.file_name]).max();
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
    if !sequence_order {
        return Ok(Verdict::New);
    }
    let mut min_new: HashMap<(&[u8], i32), i64> = HashMap::new();
    for e in &added {
        let min = min_new.entry((e.partition.as_slice(), e.bucket)).or_insert(i64::MAX);
        *min = (*min).min(e.file.min_sequence_number);
    }
    for ((partition, bucket), min) in min_new {
        let Some(&max) = since.max_sequence.get(&(partition.to_vec(), bucket)) else {
            continue;
        };
        if min <= max {
            return Err(conflict(format!(
                "the rows of this write in bucket {bucket} of {} have sequence numbers from {min}, but a commit \
                 since its writer opened{} holds sequence numbers up to {max}: landing now, this write would \
                 be ordered before an older one; write again (a new writer continues from the committed numbers)",
                partition_display(layout, partition),
                base.map_or(String::new(), |b| format!(" (at snapshot {b})")),
            )));
        }
    }
    Ok(Verdict::New)
}

/// Those of `paths` (relative to the table root, or external) that no longer exist.
pub(crate) async fn missing_files(table: &Table, paths: Vec<String>) -> Result<Vec<String>> {
    let io = table.io();
    stream::iter(paths.into_iter().map(|p| async move {
        Ok::<_, Error>((!io.exists(&p).await?).then_some(p))
    }))
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
        .map(|e| match &e.file.external_path {
            Some(p) => Ok(p.clone()),
            None => Ok(format!(
                "{}/{}",
                layout.bucket_path(&layout.decode_partition(&e.partition)?, e.bucket)?,
                e.file.file_name
            )),
        })
        .collect()
}
