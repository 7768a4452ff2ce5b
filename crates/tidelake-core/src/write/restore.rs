//! What a writer continues from: per (partition, bucket) the largest sequence number of the
//! bucket's live files (every level: Java restores from all files), and per partition its
//! bucket count, read from the table when the writer first writes into the partition (Java
//! restores each bucket when it creates the bucket's writer,
//! `AbstractFileStoreWrite#createWriterContainer`). A write costs what the partitions it writes
//! hold, not what the table holds.
//!
//! Invariants:
//! * a partition is restored once, from one snapshot (the latest when it is first written),
//!   and its state never changes afterwards: rows already routed by its bucket count and
//!   numbered from its sequence numbers stay consistent;
//! * every state comes from a snapshot at least as new as the writer's base (the latest at
//!   open) unless the table was rolled back meanwhile; the writer reports the oldest snapshot
//!   it restored from as its base, so the commit's checks of what was committed since the base
//!   (`crate::commit::new_files`) see everything a restore may have missed;
//! * partitions are restored in batches (all new partitions of one input batch in one read,
//!   manifests pruned by their partition statistics); once such reads have together read as
//!   many manifests as the table has, the next restores every remaining partition at once, so
//!   a write that reaches new partitions batch after batch reads the manifests about twice at
//!   most;
//! * cross-partition-upsert writers restore every partition at open: their key index needs
//!   every bucket's newest creation time ([`Restore::with_index`]).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{ErrorKind, Result};
use crate::layout::TableLayout;
use crate::state::{LiveFiles, PartitionSet, Pruning};
use crate::table::Table;
use crate::write::cross_partition::CrossPartitionAssigner;
use crate::write::postpone::POSTPONE_BUCKET;

/// How often a cross-partition writer restores again when the snapshot it restored expired
/// while its keys were read.
const INDEX_BOOTSTRAP_ATTEMPTS: usize = 5;

/// What a snapshot says about one bucket.
#[derive(Debug, Clone, Copy)]
pub(super) struct Restored {
    pub(super) max_sequence: i64,
    /// The newest `creation_time` of the bucket's live files.
    pub(super) newest_creation: Option<i64>,
}

/// The restored state of the partitions a writer wrote so far (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Restore {
    buckets: HashMap<(Vec<u8>, i32), Restored>,
    /// Per partition its bucket count (of its real buckets: the postpone bucket has none).
    bucket_counts: HashMap<Vec<u8>, i32>,
    /// The partitions restored, with or without files.
    done: HashSet<Vec<u8>>,
    /// Every partition is restored: one not in `done` has no live files.
    complete: bool,
    /// Manifests read by partition restores so far.
    manifests_read: usize,
    /// The table's manifest count at the last partition restore.
    manifests_total: usize,
}

impl Restore {
    /// Nothing to restore (overwrite writers, whose output replaces what they overwrite).
    pub(super) fn nothing() -> Restore {
        Restore {
            complete: true,
            ..Restore::default()
        }
    }

    /// Nothing restored yet: each partition is restored when first written
    /// ([`Restore::partitions`]).
    pub(super) fn on_demand() -> Restore {
        Restore::default()
    }

    /// Every partition of the latest snapshot, and the key index of the same snapshot (read
    /// again from the new latest when that snapshot expires meanwhile); with the snapshot's id
    /// (0 when the table has none).
    pub(super) async fn with_index(
        table: &Table,
    ) -> Result<(Restore, i64, CrossPartitionAssigner)> {
        let mut attempt = 1;
        loop {
            let mut restore = Restore::on_demand();
            let base = restore.read(table, None).await?.unwrap_or(0);
            restore.complete = true;
            let newest_creation = |partition: &[u8], bucket: i32| {
                restore
                    .bucket(partition, bucket)
                    .and_then(|r| r.newest_creation)
            };
            match CrossPartitionAssigner::bootstrap(table, base, newest_creation).await {
                Ok(index) => return Ok((restore, base, index)),
                Err(e)
                    if attempt < INDEX_BOOTSTRAP_ATTEMPTS
                        && matches!(e.kind(), ErrorKind::NotFound | ErrorKind::SnapshotExpired)
                        && !table.snapshot_manager().exists(base).await? =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Restore those of `partitions` (framed BinaryRows) not restored yet, from the latest
    /// snapshot, in one read; the id of the snapshot read (`None`: nothing was read, or the table
    /// has no snapshot).
    pub(super) async fn partitions<'a>(
        &mut self,
        table: &Table,
        layout: &TableLayout,
        partitions: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Option<i64>> {
        if self.complete {
            return Ok(None);
        }
        let new: Vec<&[u8]> = partitions
            .into_iter()
            .filter(|p| !self.done.contains(*p))
            .collect();
        if new.is_empty() {
            return Ok(None);
        }
        if self.manifests_total > 0 && self.manifests_read >= self.manifests_total {
            let snapshot = self.read(table, None).await?;
            self.complete = true;
            return Ok(snapshot);
        }
        let set = PartitionSet::new(layout, new.iter().copied());
        let snapshot = self.read(table, Some(&set)).await?;
        self.done.extend(new.into_iter().map(<[u8]>::to_vec));
        Ok(snapshot)
    }

    /// The state of (`partition`, `bucket`); `None` when it has no live files or was not restored.
    pub(super) fn bucket(&self, partition: &[u8], bucket: i32) -> Option<Restored> {
        // a borrowed lookup would need a key type of its own; restores are rare next to rows
        self.buckets.get(&(partition.to_vec(), bucket)).copied()
    }

    /// The bucket count of `partition`'s live files; `None` when it has none or was not restored.
    pub(super) fn bucket_count(&self, partition: &[u8]) -> Option<i32> {
        self.bucket_counts.get(partition).copied()
    }

    /// Read the live files of the latest snapshot (those of `only` when given) into the state
    /// of partitions not restored before; the snapshot's id (`None`: the table has none).
    async fn read(&mut self, table: &Table, only: Option<&PartitionSet>) -> Result<Option<i64>> {
        let total = AtomicUsize::new(0);
        let kept = AtomicUsize::new(0);
        // partition reads count the manifests they read and the table has (see the module docs)
        let pruning = || match only {
            Some(set) => {
                total.store(0, Ordering::Relaxed);
                kept.store(0, Ordering::Relaxed);
                Pruning::all()
                    .manifests(|m| {
                        let keep = set.may_be_in(m);
                        total.fetch_add(1, Ordering::Relaxed);
                        kept.fetch_add(usize::from(keep), Ordering::Relaxed);
                        keep
                    })
                    .partitions(|p| Ok(set.contains(p)))
            }
            None => Pruning::all(),
        };
        let Some((snap, live)) = LiveFiles::read_latest(table, pruning).await? else {
            return Ok(None);
        };
        if only.is_some() {
            self.manifests_read += kept.load(Ordering::Relaxed);
            self.manifests_total = total.load(Ordering::Relaxed);
        }
        for b in live.into_buckets() {
            if self.done.contains(&b.partition) {
                continue;
            }
            if b.bucket != POSTPONE_BUCKET {
                self.bucket_counts
                    .insert(b.partition.clone(), b.total_buckets);
            }
            let max_sequence = b
                .files
                .iter()
                .map(|e| e.file.max_sequence_number)
                .max()
                .unwrap_or(-1);
            let newest_creation = b.files.iter().filter_map(|e| e.file.creation_time).max();
            self.buckets.insert(
                (b.partition, b.bucket),
                Restored {
                    max_sequence,
                    newest_creation,
                },
            );
        }
        Ok(Some(snap.id))
    }
}

#[cfg(test)]
#[path = "restore_tests.rs"]
mod tests;
