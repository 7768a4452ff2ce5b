//! Committing: turning writers' [`CommitMessage`]s into snapshots, safely under concurrent
//! committers on storage without a lock service (paimon-format.md §8; Java
//! `FileStoreCommitImpl`).
//!
//! Modules:
//! * [`message`]: the commit message (Java `CommitMessageImpl`) and its versioned bytes;
//! * [`file_store_commit`]: [`FileStoreCommit`], its public operations, exactly-once;
//! * `attempt`: one commit attempt and the retry loop around it;
//! * `conflict`: conflict detection (Java `ConflictDetection` and subclasses);
//! * `dv_conflict`: deletion vectors racing compactions (tidelake's own);
//! * `new_files`: a write's files against the commits since its writer's base: sequence
//!   order, files committed twice, files gone (tidelake's own);
//! * `single_writer`: cross-partition-upsert tables take no write that raced another one;
//! * `overwrite`: overwrite scopes, partition matching, level upgrade;
//! * `merge`: merging manifests into the new base list (Java `ManifestFileMerger`);
//! * `manifest_compaction`: [`FileStoreCommit::compact_manifests`], the `compact_manifest`
//!   procedure's snapshot;
//! * `metrics`: what a commit changed ([`Committed`]), counted from the entries it wrote;
//! * `retry_wait`: the back-off between retries (Java `RetryWaiter`);
//! * `manifest_writer`, `index`: manifest / list / index-manifest files of an attempt;
//! * `scan`: the reads a commit does on the latest snapshot.
//!
//! One commit attempt (Java `tryCommitOnce`); a commit is one or two of these loops (APPEND or
//! OVERWRITE for new files, then COMPACT for compaction results, same identifier):
//!
//! ```text
//!   L = latest snapshot (or none) ──► an earlier attempt's snapshot (same id and delta list)? ──► verify, done
//!              │
//!              ▼
//!   changes for this attempt (overwrite: DELETE every live file of the scope in L, + new)
//!              │
//!              ▼
//!   checks against L: COMPACT/OVERWRITE ─ base files of touched partitions ⊕ delta:
//!     no double ADD, no orphan DELETE, LSM levels ≥ 1 disjoint, bucket count kept,
//!     deletion vectors name live files and none changed under a compaction;
//!     APPEND ─ fixed-bucket tables keep each partition's bucket count;
//!     new files vs the commits since their writers' base: sequence order (primary keys),
//!     already committed (all: done, the earlier commit's id; some: refused)
//!              │ conflict ──► Error::CommitConflict (final, nothing written)
//!              ▼
//!   in flight long (retried, > 10 s)? every new file still exists, else CommitConflict
//!              │
//!              ▼
//!   write: merged base list (L.base + L.delta), delta manifests + list, changelog manifests
//!          + list, index manifest (complete live set)          ── error ──► delete them, fail
//!              │
//!              ▼
//!   L unchanged (not expired meanwhile)? ── no ──► delete them, retry
//!              │
//!              ▼
//!   put_if_absent(snapshot/snapshot-(L+1)) ── created ──► L still unchanged, or nothing above
//!              │                                          L+1: LATEST hint (never backwards), done
//!              │ exists: delete this attempt's files     │ I/O error: keep them (outcome unknown)
//!              ▼                                          ▼
//!   back off (commit.min/max-retry-wait, jitter) and retry, up to commit.max-retries /
//!   commit.timeout, then Error::CommitConflict (or the I/O error) naming the snapshot id
//! ```
//!
//! Invariants:
//! * nothing is referenced before the snapshot file exists: a crash at any point leaves at
//!   most unreferenced files (manifests, lists), never a half-visible commit;
//! * a snapshot file is only ever created with a no-replace put, so two committers can never
//!   both own one id; a snapshot id is used once in a table's life: expiration deletes
//!   `snapshot-k` only after `snapshot-(k-1)` ([`crate::maintenance::expire`]), so an attempt
//!   whose base `L` still exists unchanged after it created `L+1` extended the newest snapshot
//!   (when `L` vanished and snapshots above `L+1` exist, the outcome is reported unknown);
//! * a commit that returns landed exactly once; recognising an earlier attempt is exact (its
//!   delta manifest list), never by commit user and identifier; `CommitConflictError` means
//!   nothing of the commit landed;
//! * in a primary-key table, a write never lands ordered before an already-committed write to
//!   its bucket (sequence numbers checked against the commits since the writer's base);
//! * a file written by an attempt is deleted only when that attempt provably lost
//!   (`snapshot-(L+1)` was created by someone else, or `L` changed) or failed before trying;
//! * exactly-once: a (commit user, identifier) already present in a snapshot is not committed
//!   again (identifier `i64::MAX`, batch commits, excepted: they are recognised by their files),
//!   see [`FileStoreCommit::filter_committed`].

mod attempt;
mod conflict;
mod dv_conflict;
pub mod file_store_commit;
mod index;
mod manifest_compaction;
mod manifest_writer;
mod merge;
mod metrics;
mod new_files;
mod overwrite;
mod retry_wait;
mod scan;
mod single_writer;
#[cfg(test)]
pub(crate) mod tests;

pub use crate::write::message::CommitMessage;
pub use file_store_commit::FileStoreCommit;
pub use metrics::{CommitMetrics, Committed, CommittedSnapshot};
pub(crate) use overwrite::PartitionMatcher;
pub use overwrite::{OverwriteScope, PartitionFilter};
pub(crate) use retry_wait::RetryWait;
