//! Conflict detection between this commit's changes and the latest snapshot (Java
//! `ConflictDetection`, `PrimaryKeyConflictDetection`, `AppendConflictDetection`).
//!
//! Run for COMPACT and OVERWRITE commits (and APPENDs that delete files, which become
//! OVERWRITE): the live files of the touched partitions ("base") are merged with the delta:
//! 1. total buckets of a partition must not change (except in an OVERWRITE);
//! 2. the delta alone must replay cleanly (never add an identifier twice);
//! 3. base + delta must replay cleanly: no ADD of a file already live;
//! 4. no DELETE may remain: "Trying to delete file ... which is not previously added", i.e.
//!    another writer already removed or compacted it;
//! 5. primary-key tables: in every (partition, bucket, level >= 1) the files sorted by min key
//!    must not overlap (`max_key(a) < min_key(b)` with the key comparator).
//!
//! APPENDs to fixed-bucket tables only check that a partition keeps its bucket count.
//! Every detected conflict is [`Error::CommitConflict`] naming the snapshot it was found
//! against; it is final (retrying cannot resolve it).

use std::collections::HashMap;

use tidelake_spec::manifest::{FileKind, ManifestEntry};
use tidelake_spec::snapshot::{CommitKind, Snapshot};
use tidelake_spec::types::DataType;

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::lsm::levels::overlapping_files;
use crate::state::merge_entries;

/// What the checks need to know about the table and the attempt.
pub(crate) struct ConflictChecker<'a> {
    pub layout: &'a TableLayout,
    /// Trimmed primary-key types when the LSM check applies (primary-key tables without
    /// `pk-clustering-override`).
    pub lsm_key_types: Option<&'a [DataType]>,
    pub commit_user: &'a str,
    pub table_location: &'a str,
}

/// `k1=v1/k2=v2` of a framed partition for messages (`table` when unpartitioned).
pub(crate) fn partition_display(layout: &TableLayout, framed: &[u8]) -> String {
    if layout.partition_fields.is_empty() {
        return "the table".to_string();
    }
    match layout
        .decode_partition(framed)
        .and_then(|v| layout.partition_spec(&v))
    {
        Ok(spec) => {
            let parts: Vec<String> = spec.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("partition {{{}}}", parts.join(", "))
        }
        Err(_) => "an undecodable partition".to_string(),
    }
}

/// Bucket count per partition among the ADD entries with a positive count; two different
/// counts for one partition are an error built by `mismatch(partition, new, previous)`
/// (Java `collectBucketPartitions`).
pub(crate) fn bucket_counts(
    entries: &[ManifestEntry],
    mismatch: impl Fn(&[u8], i32, i32) -> Error,
) -> Result<HashMap<Vec<u8>, i32>> {
    let mut counts: HashMap<Vec<u8>, i32> = HashMap::new();
    for e in entries
        .iter()
        .filter(|e| e.kind == FileKind::Add && e.total_buckets > 0)
    {
        match counts.get(&e.partition) {
            Some(&previous) if previous != e.total_buckets => {
                return Err(mismatch(&e.partition, e.total_buckets, previous));
            }
            Some(_) => {}
            None => {
                counts.insert(e.partition.clone(), e.total_buckets);
            }
        }
    }
    Ok(counts)
}

impl ConflictChecker<'_> {
    pub(crate) fn conflict(&self, latest: &Snapshot, reason: impl std::fmt::Display) -> Error {
        Error::CommitConflict(format!(
            "{reason} (checked against snapshot {} of {}, committed by '{}'; this committer is '{}')",
            latest.id, self.table_location, latest.commit_user, self.commit_user
        ))
    }

    /// The bucket-count error of Java `bucketNumMismatch`.
    pub(crate) fn bucket_mismatch(&self, partition: &[u8], new: i32, previous: i32) -> String {
        format!(
            "trying to write {} with a new bucket number {new}, but the previous bucket number is {previous}; \
             rescale with an overwrite first",
            partition_display(self.layout, partition)
        )
    }

    /// APPEND to a fixed-bucket table: every partition keeps its bucket count. `expected` are
    /// the delta's counts, `live` the partitions' live files in `latest`.
    pub(crate) fn check_fixed_buckets(
        &self,
        latest: &Snapshot,
        expected: &HashMap<Vec<u8>, i32>,
        live: &[ManifestEntry],
    ) -> Result<()> {
        for e in live.iter().filter(|e| e.total_buckets > 0) {
            if let Some(&new) = expected.get(&e.partition) {
                if new != e.total_buckets {
                    return Err(self.conflict(
                        latest,
                        self.bucket_mismatch(&e.partition, new, e.total_buckets),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks 1-5 of the module docs; `base` holds the live files of the touched partitions.
    pub(crate) fn check(
        &self,
        latest: &Snapshot,
        base: Vec<ManifestEntry>,
        delta: &[ManifestEntry],
        kind: CommitKind,
    ) -> Result<()> {
        if kind != CommitKind::Overwrite {
            let mut counts: HashMap<&[u8], i32> = HashMap::new();
            for e in base.iter().chain(delta).filter(|e| e.total_buckets > 0) {
                let old = *counts
                    .entry(e.partition.as_slice())
                    .or_insert(e.total_buckets);
                if old != e.total_buckets {
                    return Err(self.conflict(
                        latest,
                        format!(
                            "total buckets of {} changed from {old} to {} without overwrite",
                            partition_display(self.layout, &e.partition),
                            e.total_buckets
                        ),
                    ));
                }
            }
        }
        merge_entries(delta.iter().cloned())
            .map_err(|e| self.conflict(latest, format!("the commit adds a file twice: {e}")))?;
        let merged = merge_entries(base.into_iter().chain(delta.iter().cloned())).map_err(|e| {
            self.conflict(
                latest,
                format!("file deletion conflicts detected, a file would be live twice: {e}"),
            )
        })?;
        if let Some(orphan) = merged.iter().find(|e| e.kind == FileKind::Delete) {
            return Err(self.conflict(
                latest,
                format!(
                    "trying to delete file {} (bucket {}, level {}, {}) which is not previously added",
                    orphan.file.file_name,
                    orphan.bucket,
                    orphan.file.level,
                    partition_display(self.layout, &orphan.partition)
                ),
            ));
        }
        match self.lsm_key_types {
            Some(key_types) => self.check_lsm(latest, &merged, key_types),
            None => Ok(()),
        }
    }

    /// Check 5: no two files of one sorted run (level >= 1) overlap.
    fn check_lsm(
        &self,
        latest: &Snapshot,
        merged: &[ManifestEntry],
        key_types: &[DataType],
    ) -> Result<()> {
        if let Some((a, b)) = overlapping_files(merged, key_types)?.into_iter().next() {
            return Err(self.conflict(
                latest,
                format!(
                    "LSM conflicts detected: files {} and {} overlap in level {} of bucket {} of {}",
                    a.file.file_name,
                    b.file.file_name,
                    a.file.level,
                    a.bucket,
                    partition_display(self.layout, &a.partition)
                ),
            ));
        }
        Ok(())
    }
}
