//! [`LiveFiles`]: the live data files of one snapshot, grouped by (partition, bucket), with the
//! deletion vectors of each bucket, read with partition/bucket/level pruning ([`Pruning`]).
//!
//! Built from the snapshot's base then delta manifest list: manifests the pruning rejects by
//! their partition statistics are not read; entries it rejects by partition or bucket are
//! skipped without decoding their file metadata, as are those whose key statistics it
//! rejects (the same verdict for an ADD and its DELETE); entries it rejects by partition, bucket or
//! level are dropped *before* the ADD/DELETE replay, which is exact because a file's
//! identifier holds its partition, bucket and level (an ADD and its DELETE are kept or dropped
//! together).
//!
//! Invariants:
//! * Only ADDs survive the replay; buckets appear in the order of their first live file, and
//!   files in replay order within their bucket (what scan, compaction and restore rely on).
//! * A bucket's `total_buckets` is that of its first live file.
//! * Index files (deletion vectors and dynamic-bucket `HASH` index files) are attached only when
//!   asked for ([`Pruning::with_index_files`]), and only to buckets that have live files; the
//!   index manifest is then read concurrently with the manifests, so no read is added to the
//!   path of a reader that needs them.

use std::collections::HashMap;

use tidelake_spec::bucket::POSTPONE_BUCKET;
use tidelake_spec::manifest::{
    FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats,
    DELETION_VECTORS_INDEX, HASH_INDEX,
};
use tidelake_spec::snapshot::Snapshot;

use super::deletion::{index_file_refs, DeletionFileRef};
use super::index_paths::IndexPaths;
use super::manifests::{
    data_manifests, live_index_entries, merge_sourced, read_manifest_chunks_where, sourced,
    EntryFilters, KeyStatsFilter,
};
use crate::error::Result;
use crate::table::Table;

/// Widest bucket range of a manifest whose buckets are checked one by one.
const MAX_BUCKET_RANGE: i64 = 1024;

type ManifestFilter<'a> = Box<dyn Fn(&ManifestFileMeta) -> bool + Send + 'a>;
type PartitionFilter<'a> = Box<dyn FnMut(&[u8]) -> Result<bool> + Send + 'a>;
type BucketFilter<'a> = Box<dyn Fn(i32) -> bool + Send + 'a>;
type KeyFilter<'a> = Box<KeyStatsFilter<'a>>;

/// Which of a snapshot's files [`LiveFiles`] keeps (everything by default).
#[derive(Default)]
pub(crate) struct Pruning<'a> {
    manifests: Option<ManifestFilter<'a>>,
    partitions: Option<PartitionFilter<'a>>,
    buckets: Option<BucketFilter<'a>>,
    key_stats: Option<KeyFilter<'a>>,
    skip_postpone: bool,
    skip_level0: bool,
    index_files: bool,
}

impl<'a> Pruning<'a> {
    /// Every live file, without index files.
    pub(crate) fn all() -> Self {
        Pruning::default()
    }

    /// Read only the manifests `keep` accepts (typically by their partition statistics); it
    /// must accept every manifest that may hold a kept partition.
    pub(crate) fn manifests(
        mut self,
        keep: impl Fn(&ManifestFileMeta) -> bool + Send + 'a,
    ) -> Self {
        self.manifests = Some(Box::new(keep));
        self
    }

    /// Keep the files of the partitions (framed BinaryRows) `keep` accepts; it is asked once
    /// per distinct partition.
    pub(crate) fn partitions(
        mut self,
        keep: impl FnMut(&[u8]) -> Result<bool> + Send + 'a,
    ) -> Self {
        self.partitions = Some(Box::new(keep));
        self
    }

    /// Keep the files of the buckets `keep` accepts.
    pub(crate) fn buckets(mut self, keep: impl Fn(i32) -> bool + Send + 'a) -> Self {
        self.buckets = Some(Box::new(keep));
        self
    }

    /// Keep only the files whose key statistics (`_KEY_STATS`, with the file's row count)
    /// `keep` accepts, asked before the rest of their metadata is decoded, ADDs and DELETEs
    /// alike. `keep` must look at nothing else, so that a file's ADD and DELETE (which carry
    /// the same statistics, or none) get the same verdict, or the DELETE is kept.
    pub(crate) fn key_stats(
        mut self,
        keep: impl FnMut(&SimpleStats, i64) -> bool + Send + 'a,
    ) -> Self {
        self.key_stats = Some(Box::new(keep));
        self
    }

    /// Drop the files of the postpone bucket ([`POSTPONE_BUCKET`]).
    pub(crate) fn skip_postpone(mut self) -> Self {
        self.skip_postpone = true;
        self
    }

    /// Drop level-0 files when `skip` (batch reads of deletion-vector and first-row tables).
    pub(crate) fn skip_level0(mut self, skip: bool) -> Self {
        self.skip_level0 = skip;
        self
    }

    /// Attach each bucket's index files from the snapshot's index manifest: its deletion
    /// vectors (by data file, and the deletion-vector index files holding them) and its
    /// dynamic-bucket `HASH` index files.
    pub(crate) fn with_index_files(mut self) -> Self {
        self.index_files = true;
        self
    }

    /// Whether manifest `meta` may hold a kept entry: besides the caller's filter, its bucket
    /// and level ranges (`_MIN_BUCKET`..`_MAX_BUCKET`, `_MAX_LEVEL`, which cover its ADD and
    /// DELETE entries alike) are checked against the bucket, postpone and level-0 pruning, so
    /// that skipping it drops exactly the entries [`Self::keep_entry`] would drop.
    pub(super) fn keep_manifest(&self, meta: &ManifestFileMeta) -> bool {
        if self.skip_level0 && meta.max_level == Some(0) {
            return false;
        }
        if let (Some(lo), Some(hi)) = (meta.min_bucket, meta.max_bucket) {
            if self.skip_postpone && lo == POSTPONE_BUCKET && hi == POSTPONE_BUCKET {
                return false;
            }
            let small = i64::from(hi) - i64::from(lo) < MAX_BUCKET_RANGE;
            if let Some(keep) = &self.buckets {
                if small && !(lo..=hi).any(keep) {
                    return false;
                }
            }
        }
        self.manifests.as_ref().is_none_or(|keep| keep(meta))
    }

    /// Whether `e` is kept; looks only at fields of its identifier (partition, bucket, level).
    fn keep_entry(
        &mut self,
        e: &ManifestEntry,
        verdicts: &mut HashMap<Vec<u8>, bool>,
    ) -> Result<bool> {
        if self.skip_level0 && e.file.level == 0 {
            return Ok(false);
        }
        self.keep_bucket_of(&e.partition, e.bucket, verdicts)
    }

    /// Whether the entries of (`partition`, `bucket`) may be kept: [`Self::keep_entry`]
    /// without the level, which an entry's file metadata holds (asked before it is decoded).
    fn keep_bucket_of(
        &mut self,
        partition: &[u8],
        bucket: i32,
        verdicts: &mut HashMap<Vec<u8>, bool>,
    ) -> Result<bool> {
        if self.skip_postpone && bucket == POSTPONE_BUCKET {
            return Ok(false);
        }
        if self.buckets.as_ref().is_some_and(|keep| !keep(bucket)) {
            return Ok(false);
        }
        let Some(keep) = self.partitions.as_mut() else {
            return Ok(true);
        };
        if let Some(verdict) = verdicts.get(partition) {
            return Ok(*verdict);
        }
        let verdict = keep(partition)?;
        verdicts.insert(partition.to_vec(), verdict);
        Ok(verdict)
    }
}

/// The live files of one (partition, bucket).
#[derive(Clone, Debug)]
pub(crate) struct BucketFiles {
    /// Framed BinaryRow of the partition values.
    pub(crate) partition: Vec<u8>,
    pub(crate) bucket: i32,
    /// The bucket count its first live file was written with.
    pub(crate) total_buckets: i32,
    /// The live files, in replay order.
    pub(crate) files: Vec<ManifestEntry>,
    /// Deletion vectors by data file name (when asked for).
    pub(crate) deletion_vectors: HashMap<String, DeletionFileRef>,
    /// The deletion-vector index files of the bucket (when asked for).
    pub(crate) dv_index: Vec<IndexFileMeta>,
    /// The dynamic-bucket `HASH` index files of the bucket (when asked for).
    pub(crate) hash_index: Vec<IndexFileMeta>,
}

impl BucketFiles {
    /// The deletion vector of data file `file_name`, if any.
    pub(crate) fn deletion_vector(&self, file_name: &str) -> Option<&DeletionFileRef> {
        self.deletion_vectors.get(file_name)
    }
}

/// The live data files of a snapshot, per (partition, bucket) (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct LiveFiles {
    buckets: Vec<BucketFiles>,
    slots: HashMap<(Vec<u8>, i32), usize>,
}

impl LiveFiles {
    /// The live files of `snap` that `pruning` keeps.
    pub(crate) async fn read(
        table: &Table,
        snap: &Snapshot,
        mut pruning: Pruning<'_>,
    ) -> Result<LiveFiles> {
        let metas: Vec<ManifestFileMeta> = data_manifests(table, snap)
            .await?
            .into_iter()
            .filter(|m| pruning.keep_manifest(m))
            .collect();
        let index_files = pruning.index_files;
        let index = async {
            match index_files {
                true => live_index_entries(table, snap).await,
                false => Ok(Vec::new()),
            }
        };
        // entries of pruned partitions and buckets are dropped before their files are decoded
        let mut key_stats = pruning.key_stats.take();
        let mut verdicts = HashMap::new();
        let mut failed = None;
        let mut keep = |partition: &[u8], bucket: i32| match pruning.keep_bucket_of(
            partition,
            bucket,
            &mut verdicts,
        ) {
            Ok(keep) => keep,
            Err(e) => {
                failed.get_or_insert(e);
                true
            }
        };
        let mut filters = EntryFilters {
            partition_bucket: &mut keep,
            key_stats: key_stats.as_deref_mut(),
        };
        let chunks = read_manifest_chunks_where(table, &metas, &mut filters);
        let (chunks, index) = futures::try_join!(chunks, index)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let mut live = LiveFiles::from_entries(sourced(&metas, chunks), &mut pruning)?;
        if index_files {
            live.attach_index(&IndexPaths::new(table.schema())?, index)?;
        }
        Ok(live)
    }

    /// [`Self::read`] of the latest snapshot (`None` when the table has none); a snapshot that
    /// expires while it is read is replaced by the new latest
    /// ([`crate::snapshots::SnapshotManager::read_latest`]).
    pub(crate) async fn read_latest<'p>(
        table: &Table,
        pruning: impl Fn() -> Pruning<'p>,
    ) -> Result<Option<(Snapshot, LiveFiles)>> {
        let read = |snap: Snapshot| {
            let pruning = pruning();
            async move { LiveFiles::read(table, &snap, pruning).await }
        };
        table.snapshot_manager().read_latest(read).await
    }

    /// Replay `entries` (tagged with their manifest's name, in replay order) into live files,
    /// dropping those `pruning` rejects. Deletion vectors are left to [`Self::attach_index`].
    pub(crate) fn from_entries<'m>(
        entries: impl IntoIterator<Item = (Option<&'m str>, ManifestEntry)>,
        pruning: &mut Pruning<'_>,
    ) -> Result<LiveFiles> {
        let mut verdicts = HashMap::new();
        let mut kept = Vec::new();
        for (manifest, e) in entries {
            if pruning.keep_entry(&e, &mut verdicts)? {
                kept.push((manifest, e));
            }
        }
        let mut live = LiveFiles::default();
        for e in merge_sourced(kept)? {
            if e.kind == FileKind::Add {
                live.push(e);
            }
        }
        Ok(live)
    }

    fn push(&mut self, e: ManifestEntry) {
        let key = (e.partition.clone(), e.bucket);
        let slot = match self.slots.get(&key) {
            Some(&slot) => slot,
            None => {
                self.buckets.push(BucketFiles {
                    partition: e.partition.clone(),
                    bucket: e.bucket,
                    total_buckets: e.total_buckets,
                    files: Vec::new(),
                    deletion_vectors: HashMap::new(),
                    dv_index: Vec::new(),
                    hash_index: Vec::new(),
                });
                self.slots.insert(key, self.buckets.len() - 1);
                self.buckets.len() - 1
            }
        };
        self.buckets[slot].files.push(e);
    }

    /// Attach the deletion-vector and `HASH` index files among the live index `entries` (located
    /// by `paths`) to the buckets they belong to (other index types and buckets without live
    /// files are ignored).
    pub(crate) fn attach_index(
        &mut self,
        paths: &IndexPaths,
        entries: impl IntoIterator<Item = IndexManifestEntry>,
    ) -> Result<()> {
        for e in entries {
            let Some(&slot) = self.slots.get(&(e.partition.clone(), e.bucket)) else {
                continue;
            };
            let bucket = &mut self.buckets[slot];
            if e.index_file.index_type == HASH_INDEX {
                bucket.hash_index.push(e.index_file);
                continue;
            }
            if e.index_file.index_type != DELETION_VECTORS_INDEX {
                continue;
            }
            let path = paths.entry_path(&e)?;
            bucket
                .deletion_vectors
                .extend(index_file_refs(&e.index_file, &path)?);
            bucket.dv_index.push(e.index_file);
        }
        Ok(())
    }

    /// The buckets, in the order of their first live file.
    pub(crate) fn buckets(&self) -> &[BucketFiles] {
        &self.buckets
    }

    pub(crate) fn into_buckets(self) -> Vec<BucketFiles> {
        self.buckets
    }

    /// Every live file, bucket by bucket.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.buckets.iter().flat_map(|b| &b.files)
    }

    /// Every live file, bucket by bucket.
    pub(crate) fn into_entries(self) -> Vec<ManifestEntry> {
        self.buckets.into_iter().flat_map(|b| b.files).collect()
    }
}
