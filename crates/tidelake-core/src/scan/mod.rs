//! Scan planning: from a snapshot to the splits a reader needs.
//!
//! * [`predicate`]: the filter model (JSON in, bound to a schema, evaluated on batches and on
//!   file statistics).
//! * [`plan`]: snapshot selection, manifest replay, pruning and split generation.
//! * [`split`]: the serialisable unit of reading work.
//! * `fallback`: `scan.fallback-branch` (partitions missing from a branch read from another).

mod fallback;
pub mod plan;
pub mod predicate;
pub mod split;

pub use plan::{plan_changes, plan_scan, resolve_snapshot, ScanPlan, ScanRequest, SnapshotSelector};
pub use split::{DeletionFileRef, Split, SplitFile};
