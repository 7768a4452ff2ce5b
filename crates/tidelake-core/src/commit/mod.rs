//! Committing: turning writers' [`CommitMessage`]s into snapshots, safely under concurrent
//! committers on storage without a lock service (paimon-format.md §8; Java
//! `FileStoreCommitImpl`).
//!
//! Modules:
//! * [`message`]: the commit message (Java `CommitMessageImpl`) and its versioned bytes;
//! * [`file_store_commit`]: [`FileStoreCommit`], its public operations, exactly-once;
//! * `attempt`: one commit attempt and the retry loop around it;
//! * `conflict`: conflict detection (Java `ConflictDetection` and subclasses);
//! * `overwrite`: overwrite scopes, partition matching, level upgrade;
//! * `merge`: merging manifests into the new base list (Java `ManifestFileMerger`);
//! * `manifest_writer`, `index`: manifest / list / index-manifest files of an attempt;
//! * `scan`: the reads a commit does on the latest snapshot.
//!
//! One commit attempt (Java `tryCommitOnce`); a commit is one or two of these loops (APPEND or
//! OVERWRITE for new files, then COMPACT for compaction results, same identifier):
//!
//! ```text
//!   L = latest snapshot (or none) ──► own snapshot in (previous L, L]? ──yes──► done (its id)
//!              │ no
//!              ▼
//!   changes for this attempt (overwrite: DELETE every live file of the scope in L, + new)
//!              │
//!              ▼
//!   checks against L: COMPACT/OVERWRITE ─ base files of touched partitions ⊕ delta:
//!     no double ADD, no orphan DELETE, LSM levels ≥ 1 disjoint, bucket count kept;
//!     APPEND ─ fixed-bucket tables keep each partition's bucket count
//!              │ conflict ──► Error::CommitConflict (final, nothing written)
//!              ▼
//!   write: merged base list (L.base + L.delta), delta manifests + list, changelog manifests
//!          + list, index manifest (complete live set)          ── error ──► delete them, fail
//!              │
//!              ▼
//!   put_if_absent(snapshot/snapshot-(L+1)) ── created ──► LATEST hint (best effort), done
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
//!   both own one id; ids stay contiguous;
//! * a file written by an attempt is deleted only when that attempt provably lost
//!   (`snapshot-(L+1)` was created by someone else) or failed before trying;
//! * exactly-once: a (commit user, identifier) already present in a snapshot is not committed
//!   again (identifier `i64::MAX`, batch commits, excepted), see
//!   [`FileStoreCommit::filter_committed`].

mod attempt;
mod conflict;
pub mod file_store_commit;
mod index;
mod manifest_writer;
mod merge;
pub mod message;
mod new_files;
mod overwrite;
mod scan;
#[cfg(test)]
mod tests;

pub use file_store_commit::FileStoreCommit;
pub use message::{CommitMessage, COMMIT_MESSAGE_VERSION};
pub use overwrite::{OverwriteScope, PartitionFilter};
