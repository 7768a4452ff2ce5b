//! Compaction of primary-key tables: keeping each bucket's LSM tree shallow (paimon-format.md
//! §6.6, §10, §10.5; Java `org.apache.paimon.mergetree.compact`).
//!
//! ```text
//!  latest snapshot ─► live files per (partition, bucket), level 0 included   [job]
//!        ─► Levels: level-0 files newest first, one run per level >= 1         [levels]
//!        ─► pick: universal / force-up-level-0 / full → prefix of runs + level [picker]
//!        ─► rewrite: sections → merge (sequence numbers kept) → rolling files  [rewriter, kv_merge]
//!           at the output level, or upgrade large non-overlapping files
//!           (deletion-vector tables: older copies below the output marked)  [dv_maintain]
//!        ─► CommitMessage.compact_before/after (+ new / dropped DV index files)
//!        ─► FileStoreCommit: one COMPACT snapshot (conflict checks, retries)
//! ```
//!
//! Modules:
//! * [`picker`]: pure strategy (Java `UniversalCompaction`, `ForceUpLevel0Compaction`,
//!   `CompactStrategy.pickFullCompaction`), property-tested;
//! * [`levels`]: the runs of one bucket (Java `Levels`);
//! * [`rewriter`]: one unit of one bucket (Java `MergeTreeCompactTask`,
//!   `MergeTreeCompactRewriter`);
//! * `kv_merge`: the sorted-run merge that keeps `_SEQUENCE_NUMBER`, shared with the writer;
//! * [`changelog`]: the changelog of `changelog-producer=full-compaction`/`lookup` (Java
//!   `ChangelogMergeTreeRewriter` and its merge-function wrappers);
//! * `dv_maintain`: deletion vectors of the levels below a unit's output (Java
//!   `BucketedDvMaintainer`, `DeletionVectorsIndexFile`);
//! * [`job`]: compacting a table ([`Compactor`]);
//! * `inline`: compaction inside writers, in the background after flushes, with the write
//!   stall at `num-sorted-run.stop-trigger` (Java `MergeTreeWriter`, `MergeTreeCompactManager`).
//!
//! Invariants: level 0 is never an output; after a unit the output level is still one sorted
//! run (the unit holds every run at or below it); retract rows are dropped only when nothing
//! older than the output remains above it (Java `dropDelete`); memory is bounded per bucket
//! by (runs × batch); a compaction that fails or loses its inputs to a concurrent commit
//! deletes everything it wrote, changelog included.
//!
//! Not implemented: deletion vectors written by compaction for other deletion-vector tables than
//! deduplicate ones without `sequence.field` and compaction-fed changelog (Java
//! `LookupMergeTreeCompactRewriter` with `BucketedDvMaintainer` for every engine), append-table
//! compaction, the postpone bucket, record-level expiry, `EarlyFullCompaction`/off-peak ratios
//! and `full-compaction.delta-commits`. Those other tables that need lookup (deletion vectors,
//! `changelog-producer=lookup`, `force-lookup`; not first-row, which compacts with lookup)
//! are fully compacted instead (see [`job`]);
//! their merges follow Java's `LookupMergeFunction` (level-0 records merge with only the
//! newest record above level 0; not first-row), in compaction as in reads.

pub mod changelog;
mod dv_maintain;
mod inline;
pub mod job;
mod kv_merge;
pub mod levels;
pub mod picker;
pub mod rewriter;
#[cfg(test)]
mod tests;

pub use job::{BucketReport, CompactReport, CompactRequest, Compactor, Progress};
pub(crate) use inline::{InlineCompaction, Slot};
pub(crate) use kv_merge::merge_keeping_sequence;
