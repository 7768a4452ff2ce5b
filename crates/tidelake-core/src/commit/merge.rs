//! Manifest merging for the new base list (Java `ManifestFileMerger` with its legacy strategy,
//! `ManifestFileLegacyMerger`): the previous snapshot's base + delta manifests are rewritten
//! so the number of manifests stays bounded.
//!
//! * Full compaction, tried first: when the manifests that must change (those with DELETE
//!   entries or smaller than `manifest.target-file-size`) add up to at least
//!   `manifest.full-compaction-threshold-size`, every DELETE entry is applied. Manifests
//!   neither small nor holding deletes, whose partition statistics exclude every partition a
//!   DELETE touches, are kept; the others are read and their surviving ADD entries rewritten
//!   (a read manifest that loses nothing and need not change is kept as is). The result holds
//!   no DELETE entry, so its order is free: the rewritten entries are sorted by partition
//!   (typed, natural order) then bucket before the manifests roll, so each new manifest's
//!   partition statistics are narrow and a plan of a few partitions skips the others
//!   (the replay order of a snapshot's live ADDs changes nothing: no two share an identifier).
//! * Minor compaction otherwise: walking the manifests in order, a run whose sizes reach the
//!   target size is merged; the trailing run is merged only when it has at least
//!   `manifest.merge-min-count` manifests. Merging replays the run's entries (an ADD and a
//!   DELETE of the same file seen together cancel out, a DELETE whose ADD is outside the run is
//!   kept) and writes the rest in order, in place of the run.
//!
//! Invariant: the live file set described by the output equals that of the input, and the
//! output never references a manifest this attempt did not write or the input did not hold.
//! Java's default block-aware merger (`manifest.merge-optimize.enabled`) is a layout
//! optimisation of the same contract and is not reproduced; manifests that commits left in
//! commit order become partition-sorted through the manifest compaction
//! ([`super::manifest_compaction`], [`MergeOptions::rewrite_all`]).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::manifest::{FileIdentifier, FileKind, ManifestEntry, ManifestFileMeta};

use crate::commit::manifest_writer::{CreatedFiles, MetaWriter};
use crate::datum_arrow::compare_datums;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::state::PartitionSet;
use crate::state::{merge_entries, read_entries, read_manifests};
use crate::table::Table;

/// The options that drive merging.
#[derive(Debug, Clone)]
pub(crate) struct MergeOptions {
    pub target_size: u64,
    pub min_count: usize,
    pub full_compaction_threshold: u64,
    /// Every manifest must change (the manifest compaction of a table whose manifests are not
    /// partition-sorted, [`partition_sorted`]): a full compaction rewrites them all.
    pub rewrite_all: bool,
}

/// Everything merging needs besides its input.
pub(crate) struct Merger<'a> {
    pub table: &'a Table,
    pub layout: &'a TableLayout,
    pub writer: &'a MetaWriter,
    pub options: &'a MergeOptions,
    /// Schema id recorded for manifests without entries.
    pub schema_id: i64,
}

fn size_of(meta: &ManifestFileMeta) -> u64 {
    u64::try_from(meta.file_size).unwrap_or(0)
}

/// Sort ADD `entries` by partition (decoded, compared value by value as Java compares them)
/// then bucket, stably (a bucket's files keep their order).
fn sort_by_partition_and_bucket(layout: &TableLayout, entries: &mut [ManifestEntry]) -> Result<()> {
    let mut decoded: HashMap<&[u8], Vec<_>> = HashMap::new();
    for e in entries.iter() {
        if !decoded.contains_key(e.partition.as_slice()) {
            decoded.insert(
                e.partition.as_slice(),
                layout.decode_partition(&e.partition)?,
            );
        }
    }
    let mut ranked: Vec<&[u8]> = decoded.keys().copied().collect();
    ranked.sort_by(|a, b| {
        let (a, b) = (&decoded[a], &decoded[b]);
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| compare_datums(x, y).unwrap_or(Ordering::Equal))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.len().cmp(&b.len()))
    });
    let rank: HashMap<Vec<u8>, usize> = ranked
        .into_iter()
        .enumerate()
        .map(|(i, p)| (p.to_vec(), i))
        .collect();
    entries.sort_by_key(|e| (rank[e.partition.as_slice()], e.bucket));
    Ok(())
}

/// Whether `metas` are partition-sorted, as a full rewrite leaves them: no DELETE entry, and
/// the ranges of the first partition column in order (each manifest's lowest value not below
/// the previous one's highest). Unpartitioned tables are always sorted.
pub(crate) fn partition_sorted(layout: &TableLayout, metas: &[ManifestFileMeta]) -> bool {
    if metas.iter().any(|m| m.num_deleted_files > 0) {
        return false;
    }
    if layout.partition_types.is_empty() {
        return true;
    }
    // the statistics rows hold every partition column; the first one is compared
    let first_of = |framed: &[u8]| {
        decode_framed(framed, &layout.partition_types)
            .ok()?
            .into_iter()
            .next()
    };
    let mut previous_max = None;
    for m in metas {
        let (Some(min), Some(max)) = (
            first_of(&m.partition_stats.min_values),
            first_of(&m.partition_stats.max_values),
        ) else {
            return false;
        };
        let overlaps = |prev: &_| compare_datums(prev, &min).is_none_or(Ordering::is_gt);
        if previous_max.as_ref().is_some_and(overlaps) {
            return false;
        }
        previous_max = Some(max);
    }
    true
}

impl Merger<'_> {
    /// Merge `input` (see the module docs); new manifests are recorded in `created`.
    pub(crate) async fn merge(
        &self,
        input: Vec<ManifestFileMeta>,
        created: &mut CreatedFiles,
    ) -> Result<Vec<ManifestFileMeta>> {
        if self.options.full_compaction_threshold == 0 {
            return Err(Error::invalid(
                "manifest.full-compaction-threshold-size must be positive",
            ));
        }
        match self.try_full_compaction(&input, created).await? {
            Some(result) => Ok(result),
            None => self.compact_minor(input, created).await,
        }
    }

    fn must_change(&self, meta: &ManifestFileMeta) -> bool {
        self.options.rewrite_all
            || meta.num_deleted_files > 0
            || size_of(meta) < self.options.target_size
    }

    async fn try_full_compaction(
        &self,
        input: &[ManifestFileMeta],
        created: &mut CreatedFiles,
    ) -> Result<Option<Vec<ManifestFileMeta>>> {
        let delta_size: u64 = input
            .iter()
            .filter(|m| self.must_change(m))
            .map(size_of)
            .sum();
        if delta_size < self.options.full_compaction_threshold {
            return Ok(None);
        }
        let with_deletes: Vec<ManifestFileMeta> = input
            .iter()
            .filter(|m| m.num_deleted_files > 0)
            .cloned()
            .collect();
        let deleted: HashSet<FileIdentifier> = read_manifests(self.table, &with_deletes)
            .await?
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(ManifestEntry::identifier)
            .collect();
        let delete_partitions = PartitionSet::new(
            self.layout,
            deleted.iter().map(|id| id.partition.as_slice()),
        );
        let mut result = Vec::new();
        let mut to_merge = Vec::new();
        for meta in input {
            if self.must_change(meta) || (!deleted.is_empty() && delete_partitions.may_be_in(meta))
            {
                to_merge.push(meta.clone());
            } else {
                result.push(meta.clone());
            }
        }
        if to_merge.len() <= 1 {
            return Ok(None);
        }
        let mut rewritten = Vec::new();
        for meta in to_merge {
            let entries = read_entries(self.table, &meta.file_name).await?;
            let mut require_change = self.must_change(&meta);
            let mut survivors = Vec::with_capacity(entries.len());
            for entry in entries.into_iter().filter(|e| e.kind == FileKind::Add) {
                if deleted.contains(&entry.identifier()) {
                    require_change = true;
                } else {
                    survivors.push(entry);
                }
            }
            if require_change {
                rewritten.extend(survivors);
            } else {
                result.push(meta);
            }
        }
        sort_by_partition_and_bucket(self.layout, &mut rewritten)?;
        result.extend(
            self.writer
                .write_manifests(&rewritten, self.schema_id, created)
                .await?,
        );
        Ok(Some(result))
    }

    async fn compact_minor(
        &self,
        input: Vec<ManifestFileMeta>,
        created: &mut CreatedFiles,
    ) -> Result<Vec<ManifestFileMeta>> {
        let mut result = Vec::new();
        let mut candidates = Vec::new();
        let mut total = 0u64;
        for meta in input {
            total = total.saturating_add(size_of(&meta));
            candidates.push(meta);
            if total >= self.options.target_size {
                self.merge_candidates(std::mem::take(&mut candidates), &mut result, created)
                    .await?;
                total = 0;
            }
        }
        if candidates.len() >= self.options.min_count {
            self.merge_candidates(candidates, &mut result, created)
                .await?;
        } else {
            result.extend(candidates);
        }
        Ok(result)
    }

    async fn merge_candidates(
        &self,
        candidates: Vec<ManifestFileMeta>,
        result: &mut Vec<ManifestFileMeta>,
        created: &mut CreatedFiles,
    ) -> Result<()> {
        if candidates.len() <= 1 {
            result.extend(candidates);
            return Ok(());
        }
        let entries = merge_entries(read_manifests(self.table, &candidates).await?)?;
        if !entries.is_empty() {
            result.extend(
                self.writer
                    .write_manifests(&entries, self.schema_id, created)
                    .await?,
            );
        }
        Ok(())
    }
}
