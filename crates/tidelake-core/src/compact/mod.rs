//! Compaction: keeping each bucket's LSM tree shallow on primary-key tables (paimon-format.md
//! §6.6, §10, §10.5; Java `org.apache.paimon.mergetree.compact`).
//!
//! ```text
//!  latest snapshot ─► live files per (partition, bucket), level 0 included   [job]
//!        ─► Levels: level-0 files newest first, one run per level >= 1    [lsm::levels]
//!        ─► pick: universal / force-up-level-0 / full → prefix of runs + level [lsm::picker]
//!        ─► rewrite: sections → merge (sequence numbers kept) → rolling files  [rewriter, lsm::kv_merge]
//!           at the output level, or upgrade large non-overlapping files
//!           (lookup tables: older copies below the output merged, marked)   [lookup]
//!        ─► CommitMessage.compact_before/after (+ new / dropped DV index files)
//!        ─► FileStoreCommit: one COMPACT snapshot (conflict checks, retries)
//! ```
//!
//! Modules:
//! * [`crate::lsm::picker`] (pure strategy) and [`crate::lsm::levels`] (the runs of one
//!   bucket) live in the LSM layer;
//! * [`rewriter`]: one unit of one bucket (Java `MergeTreeCompactTask`,
//!   `MergeTreeCompactRewriter`);
//! * [`changelog`]: the changelog of `changelog-producer=full-compaction`/`lookup` (Java
//!   `ChangelogMergeTreeRewriter` and its merge-function wrappers);
//! * `lookup`: the newest older copy of level-0 keys in the levels below a unit's output,
//!   and the deletion vectors that hide it (Java `LookupLevels`, `BucketedDvMaintainer`,
//!   `DeletionVectorsIndexFile`);
//! * `append`: compaction of append tables: small files merged per bucket, deletion vectors
//!   applied (Java `BucketedAppendCompactManager`, `AppendCompactCoordinator`);
//! * [`job`]: compacting a table ([`Compactor`]);
//! * [`plan`]: compaction as plan -> task -> commit: serialisable per-bucket
//!   [`CompactionTask`]s that run in any process and one commit of their messages
//!   ([`Compactor::compact`] is that plan, run here, committed);
//! * `visible`: committing a write and, on tables whose reads skip level 0, compacting until
//!   its rows are visible ([`commit_visible_with`]);
//! * `postpone`: moving the rows of postpone-bucket tables (`bucket = -2`) into real buckets,
//!   before [`job`] compacts those (Java's postpone compaction job);
//! * `inline`: compaction inside writers, in the background after flushes, with the write
//!   stall at `num-sorted-run.stop-trigger` (Java `MergeTreeWriter`, `MergeTreeCompactManager`):
//!   [`inline_compaction`] is what the callers that open writers hand to `TableWrite::new`.
//!
//! Invariants: level 0 is never an output; after a unit the output level is still one sorted
//! run (the unit holds every run at or below it); retract rows are dropped only when nothing
//! older than the output remains above it (Java `dropDelete`); memory is bounded per bucket
//! by (runs × batch); a compaction that fails or loses its inputs to a concurrent commit
//! deletes everything it wrote, changelog included.
//!
//! Tables that need lookup (deletion vectors, first-row, `changelog-producer=lookup`,
//! `force-lookup`) pick with force-up-level-0 and compact with lookup into the levels below
//! the output (Java `LookupMergeTreeCompactRewriter`): first-row drops new records of keys
//! found there; the other engines merge the key's newest older copy found there as its oldest
//! record, diff the lookup changelog against it, and mark it in deletion vectors. Their merges
//! follow Java's `LookupMergeFunction` (level-0 records merge with only the newest record above
//! level 0; not first-row), in compaction as in reads.
//!
//! Sort compaction of bucket-unaware append tables (Paimon's `order_strategy`/`order_by`) is
//! not here: it rewrites whole partitions as an OVERWRITE, like Java's, in
//! `crate::ops::SortCompaction`. Bucket-unaware append tables with `clustering.incremental` are
//! compacted by incremental clustering (Java `IncrementalClusterManager`, [`cluster`]): per
//! partition, universal compaction over their levels picks files, whose rows are rewritten sorted
//! by the clustering columns into the output level.
//!
//! Writers' periodic full compaction (`full-compaction.delta-commits`) is
//! `crate::ops::full_compaction`, which runs [`Compactor`] after a write's commit.
//! Record-level expiry drops expired rows from what rewrites read and rewrites files whose
//! statistics show expired rows ([`crate::read::record_expire`]).
//!
//! Not implemented:
//! `EarlyFullCompaction`/off-peak ratios, the `lookup-compact`
//! modes (`gentle` and its `lookup-compact.max-interval`: tidelake always forces level 0 up, as
//! the default `radical`), and lookup compaction of tables with
//! `changelog-producer=full-compaction` and `force-lookup`: those are fully compacted (see
//! [`job`]; deletion vectors with that producer are rejected at create and alter, as in Java).

mod append;
pub mod changelog;
mod cluster;
mod inline;
pub mod job;
mod lookup;
pub mod plan;
mod postpone;
pub mod rewriter;
#[cfg(test)]
mod tests;
mod visible;

pub use inline::inline_compaction;
pub use job::{CompactRequest, Compactor};
pub use plan::{CompactionPlan, CompactionTask};
pub use visible::commit_visible_with;
pub(crate) use visible::landed_but;
