//! Compaction inside writers (Java `MergeTreeWriter` with `MergeTreeCompactManager`): the
//! [`WriterCompaction`] that [`inline_compaction`] builds for the callers that open writers
//! (`TableWrite::new` takes it; the writer never builds its own).
//!
//! Each bucket a primary-key writer flushes to keeps its own view of the bucket's LSM tree
//! ([`BucketCompaction`]): the latest snapshot's live files when the writer first flushes to
//! it, plus every level-0 file the writer flushes, with the results of its own compactions
//! applied. After each flush (Java `flushWriteBuffer`):
//!
//! 1. a finished background compaction is collected;
//! 2. **write stall**: while the bucket has more sorted runs than
//!    `num-sorted-run.stop-trigger`, the writer awaits the running compaction (starting one
//!    when none runs), so a writer that spills many times before `prepare_commit` never piles
//!    up level-0 files past the stop trigger;
//! 3. when no compaction runs and the table's pick (as [`Compactor::compact`] without
//!    `full`) finds a unit, it is started as a tokio task while the writer keeps buffering.
//!
//! `prepare_commit` (Java `prepareCommit(waitCompaction)`): one-shot batch writers
//! (`wait = true`: `Table.write`/`upsert`/`delete`, Spark write tasks; Java `BatchTableWrite`)
//! await the running compaction, start the one the final flush calls for and await it too;
//! long-lived writers (`Table.writer()`; Java `StreamTableWrite`) only collect a finished
//! one, and an unfinished compaction joins a later `prepare_commit` — except on tables that
//! need lookup (deletion vectors, first-row, `changelog-producer=lookup`, `force-lookup`),
//! whose writers always wait unless `lookup-wait=false` (Java
//! `prepareCommitWaitCompaction`: their level-0 rows are not read). What compaction did
//! since the last `prepare_commit` goes into the bucket's message as its `CompactIncrement`
//! (Java `updateCompactResult`): inputs that were outputs of an earlier, still uncommitted
//! compaction of the same increment leave `compact_after` and are deleted at once (unless
//! they were only upgraded); other inputs, this writer's new files included, are
//! `compact_before`. Committing a message lands its new files first (APPEND), then the
//! compaction (COMPACT); a compaction that lost its inputs to a concurrent commit is dropped by
//! the commit while the write stays landed.
//!
//! Failure: compaction in a writer is best effort. A failed compaction deleted what it wrote
//! (the rewriter does) and changes nothing, so it never fails or loses a write; the next flush
//! or commit tries again. A bucket whose live files cannot be listed is not compacted by this
//! writer. `abort` (and `close`) wait for the running rewrite, then delete its files and every
//! compaction output not handed out yet.
//!
//! Invariants: at most one compaction per bucket runs at a time, and only it changes the
//! bucket's files above level 0, so its result applies to the view it started from plus the
//! level-0 files flushed meanwhile; the view assumes this writer is the bucket's only
//! compacting writer (as Java's): a concurrent compaction by someone else makes this writer's
//! compactions conflict at commit (dropped) until a new writer is opened.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use tidelake_spec::manifest::DataFileMeta;
use tokio::task::JoinHandle;

use super::job::{delete_written, joined, Bucket, Compactor, Done};
use super::rewriter::delete_files;
use crate::commit::CommitMessage;
use crate::error::Result;
use crate::lsm::levels::LevelFile;
use crate::state::index_file_refs;
use crate::table::Table;
use crate::write::compaction::{BucketRef, WriterCompaction};

/// The compaction of a new writer of `table`, waiting at `prepare_commit` until told otherwise
/// (a [`crate::write::compaction::CompactionFactory`]).
pub fn inline_compaction(table: &Table) -> Result<Box<dyn WriterCompaction>> {
    Ok(Box::new(InlineCompaction::new(Compactor::new(
        table.clone(),
    )?)?))
}

/// Compaction of one writer: the table's compactor, its lazily listed live buckets and the
/// state of each bucket it flushed to.
struct InlineCompaction {
    compactor: Compactor,
    /// Await compaction at `prepare_commit` (batch writers).
    wait: bool,
    /// Tables that need lookup wait at `prepare_commit` whatever `wait` says.
    lookup_wait: bool,
    /// The latest snapshot's buckets, listed once per `prepare_commit` cycle on first need.
    live: Option<HashMap<(Vec<u8>, i32), Bucket>>,
    /// Per (partition, bucket) flushed to since the writer opened or last aborted it.
    slots: HashMap<(Vec<u8>, i32), Slot>,
}

/// The compaction state of one writer's bucket.
enum Slot {
    /// Not flushed to yet.
    Unloaded,
    /// Its live files could not be listed: this writer does not compact it.
    Off,
    On(Box<BucketCompaction>),
}

/// One bucket's LSM view, running compaction and uncommitted compaction increment.
struct BucketCompaction {
    bucket: Bucket,
    running: Option<JoinHandle<Result<Done>>>,
    /// Only the `compact_*` fields are used.
    pending: CommitMessage,
}

impl InlineCompaction {
    fn new(compactor: Compactor) -> Result<InlineCompaction> {
        Ok(InlineCompaction {
            lookup_wait: compactor.lookup_wait()?,
            compactor,
            wait: true,
            live: None,
            slots: HashMap::new(),
        })
    }

    /// Collect, stall, trigger (see the module docs).
    async fn settle(compactor: &Compactor, slot: &mut Slot) {
        let Slot::On(b) = slot else { return };
        let c = compactor;
        b.collect_finished(c).await;
        // Write stall: never leave the bucket past the stop trigger while compaction helps.
        while b.runs(c) > c.stop_trigger() {
            if b.running.is_none() && !b.trigger(c) {
                break;
            }
            if !b.wait(c).await {
                break;
            }
        }
        b.trigger(c);
    }

    /// The view of the bucket `target` from the latest snapshot's live files.
    async fn load(
        compactor: &Compactor,
        live: &mut Option<HashMap<(Vec<u8>, i32), Bucket>>,
        target: BucketRef<'_>,
    ) -> Result<Bucket> {
        if live.is_none() {
            let listed = compactor.latest_buckets().await?.unwrap_or_default();
            *live = Some(
                listed
                    .into_iter()
                    .map(|b| ((b.partition.clone(), b.bucket), b))
                    .collect(),
            );
        }
        match live
            .as_mut()
            .and_then(|l| l.remove(&(target.partition.to_vec(), target.bucket)))
        {
            Some(b) => Ok(b),
            None => compactor.empty_bucket(target.partition, target.bucket, target.total_buckets),
        }
    }
}

#[async_trait]
impl WriterCompaction for InlineCompaction {
    async fn after_flush(
        &mut self,
        target: BucketRef<'_>,
        flushed: &[DataFileMeta],
        unlisted: &[DataFileMeta],
    ) {
        let slot = self
            .slots
            .entry((target.partition.to_vec(), target.bucket))
            .or_insert(Slot::Unloaded);
        let added = match slot {
            Slot::Unloaded => {
                *slot = match InlineCompaction::load(&self.compactor, &mut self.live, target).await
                {
                    Ok(bucket) => Slot::On(Box::new(BucketCompaction {
                        pending: CommitMessage::new(
                            bucket.partition.clone(),
                            bucket.bucket,
                            bucket.total_buckets,
                        ),
                        bucket,
                        running: None,
                    })),
                    Err(_) => Slot::Off,
                };
                unlisted
            }
            _ => flushed,
        };
        if let Slot::On(b) = slot {
            let added: Vec<LevelFile> = added.iter().map(|f| level_file(&b.bucket, f)).collect();
            b.bucket.files.extend(added);
        }
        InlineCompaction::settle(&self.compactor, slot).await
    }

    async fn prepare(&mut self, message: &mut CommitMessage) {
        let Some(Slot::On(b)) = self
            .slots
            .get_mut(&(message.partition.clone(), message.bucket))
        else {
            return;
        };
        let c = &self.compactor;
        if self.wait || self.lookup_wait {
            b.wait(c).await;
            if b.trigger(c) {
                b.wait(c).await;
            }
        } else {
            b.collect_finished(c).await;
            b.trigger(c);
        }
        let p = &mut b.pending;
        message.compact_before = std::mem::take(&mut p.compact_before);
        message.compact_after = std::mem::take(&mut p.compact_after);
        message.compact_changelog = std::mem::take(&mut p.compact_changelog);
        message.compact_new_index_files = std::mem::take(&mut p.compact_new_index_files);
        message.compact_deleted_index_files = std::mem::take(&mut p.compact_deleted_index_files);
    }

    /// A new `prepare_commit` cycle lists the live buckets afresh.
    fn end_cycle(&mut self) {
        self.live = None;
    }

    /// Wait for the running compaction of the bucket, delete its files and every compaction
    /// output not handed out yet; the bucket's view is loaded again on its next flush.
    async fn abort(&mut self, partition: &[u8], bucket: i32) -> Result<()> {
        let Some(Slot::On(mut b)) = self.slots.remove(&(partition.to_vec(), bucket)) else {
            return Ok(());
        };
        let table = self.compactor.table();
        if let Some(handle) = b.running.take() {
            if let Ok(done) = joined(handle).await {
                delete_written(&self.compactor, std::slice::from_ref(&done)).await?;
            }
        }
        let p = &b.pending;
        let inputs: HashSet<&str> = p
            .compact_before
            .iter()
            .map(|f| f.file_name.as_str())
            .collect();
        let outputs: Vec<DataFileMeta> = p
            .compact_after
            .iter()
            .filter(|f| !inputs.contains(f.file_name.as_str()))
            .chain(&p.compact_changelog)
            .cloned()
            .collect();
        delete_files(table, &b.bucket.bucket_dir, &outputs).await?;
        for index in &p.compact_new_index_files {
            let path = self
                .compactor
                .index_paths()
                .path(&b.bucket.bucket_dir, index);
            table.io().delete(&path).await?;
        }
        Ok(())
    }

    fn set_wait(&mut self, wait: bool) {
        self.wait = wait;
    }

    #[cfg(test)]
    fn sorted_runs(&self) -> Vec<usize> {
        self.slots
            .values()
            .filter_map(|slot| match slot {
                Slot::On(b) => Some(b.runs(&self.compactor)),
                _ => None,
            })
            .collect()
    }
}

impl BucketCompaction {
    fn runs(&self, c: &Compactor) -> usize {
        c.sorted_runs(&self.bucket.files).unwrap_or(0)
    }

    /// Start a compaction when none runs and the bucket needs one; whether one runs now.
    fn trigger(&mut self, c: &Compactor) -> bool {
        if self.running.is_some() {
            return true;
        }
        // the postpone bucket (-2) is never compacted here
        if self.bucket.bucket == -2 {
            return false;
        }
        match c.pick(&self.bucket.files, false) {
            Ok(Some(task)) => {
                self.running = Some(c.spawn_unit(self.bucket.clone(), task));
                true
            }
            _ => false,
        }
    }

    async fn collect_finished(&mut self, c: &Compactor) {
        if self.running.as_ref().is_some_and(JoinHandle::is_finished) {
            self.wait(c).await;
        }
    }

    /// Await the running compaction, if any, and apply its result; false when it failed.
    async fn wait(&mut self, c: &Compactor) -> bool {
        let Some(handle) = self.running.take() else {
            return true;
        };
        match joined(handle).await {
            Ok(done) => {
                self.apply(c, &done).await;
                true
            }
            // Best effort: the rewriter deleted what it wrote; nothing changed.
            Err(_) => false,
        }
    }

    /// Java `updateCompactResult`, plus the bucket view's update.
    async fn apply(&mut self, c: &Compactor, done: &Done) {
        let m = done.message();
        let table = c.table();
        let p = &mut self.pending;
        let outputs: HashSet<&str> = m
            .compact_after
            .iter()
            .map(|f| f.file_name.as_str())
            .collect();
        let mut discard = Vec::new();
        for f in &m.compact_before {
            let earlier = p
                .compact_after
                .iter()
                .position(|a| a.file_name == f.file_name && a.level == f.level);
            match earlier {
                Some(at) => {
                    let f = p.compact_after.remove(at);
                    // an intermediate output nobody committed: gone, unless it lives on
                    // (upgraded again) or was itself only an upgraded input
                    let input = p.compact_before.iter().any(|b| b.file_name == f.file_name);
                    if !input && !outputs.contains(f.file_name.as_str()) {
                        discard.push(f);
                    }
                }
                None => p.compact_before.push(f.clone()),
            }
        }
        p.compact_after.extend(m.compact_after.iter().cloned());
        p.compact_changelog
            .extend(m.compact_changelog.iter().cloned());
        for index in &m.compact_deleted_index_files {
            match p
                .compact_new_index_files
                .iter()
                .position(|n| n.file_name == index.file_name)
            {
                Some(at) => {
                    p.compact_new_index_files.remove(at);
                    // Unreferenced either way: a failed delete only leaves an orphan.
                    let path = c.index_paths().path(&self.bucket.bucket_dir, index);
                    let _ = table.io().delete(&path).await;
                }
                None => p.compact_deleted_index_files.push(index.clone()),
            }
        }
        p.compact_new_index_files
            .extend(m.compact_new_index_files.iter().cloned());
        // Unreferenced either way: a failed delete only leaves an orphan.
        let _ = delete_files(table, &self.bucket.bucket_dir, &discard).await;

        // the view: inputs out, outputs in at their level, deletion vectors from the new index
        let b = &mut self.bucket;
        let gone: HashSet<(&str, i32)> = m
            .compact_before
            .iter()
            .map(|f| (f.file_name.as_str(), f.level))
            .collect();
        let paths: HashMap<String, String> = b
            .files
            .iter()
            .map(|f| (f.meta.file_name.clone(), f.path.clone()))
            .collect();
        b.files
            .retain(|f| !gone.contains(&(f.meta.file_name.as_str(), f.meta.level)));
        for f in &m.compact_after {
            let mut added = level_file(b, f);
            if let Some(path) = paths.get(&f.file_name) {
                added.path = path.clone();
            }
            b.files.push(added);
        }
        let deleted: HashSet<&str> = m
            .compact_deleted_index_files
            .iter()
            .map(|i| i.file_name.as_str())
            .collect();
        b.dv_index
            .retain(|i| !deleted.contains(i.file_name.as_str()));
        b.dv_index.extend(m.compact_new_index_files.iter().cloned());
        if let Some(index) = m.compact_new_index_files.first() {
            // the new index holds every live vector of the bucket
            let path = c.index_paths().path(&b.bucket_dir, index);
            let refs: HashMap<String, _> = index_file_refs(index, &path)
                .unwrap_or_default()
                .into_iter()
                .collect();
            for f in &mut b.files {
                f.deletion = refs.get(&f.meta.file_name).cloned();
            }
        }
    }
}

impl Drop for BucketCompaction {
    fn drop(&mut self) {
        // A writer dropped without abort: stop the rewrite (its partial files are orphans
        // that `remove_orphan_files` collects).
        if let Some(handle) = &self.running {
            handle.abort();
        }
    }
}

/// `meta`, a file of `bucket` written by this writer or its compactions.
fn level_file(bucket: &Bucket, meta: &DataFileMeta) -> LevelFile {
    LevelFile {
        path: meta.path(&bucket.bucket_dir),
        meta: meta.clone(),
        deletion: None,
    }
}
