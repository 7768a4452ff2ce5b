//! Scan planning: from a snapshot to the splits a reader needs.
//!
//! * [`predicate`]: the filter model (JSON in, bound to a schema, evaluated on batches and on
//!   file statistics).
//! * [`plan`]: snapshot selection, pruning and split generation over the live files
//!   ([`crate::state::LiveFiles`]);
//!   `bucket_filter`: the buckets a filter can match; `hash_index`: dynamic buckets ruled out
//!   by their `HASH` index; `file_index`: files ruled out by their bloom-filter indexes.
//! * [`split`]: the serialisable unit of reading work.
//! * `fallback`: `scan.fallback-branch` (partitions missing from a branch read from another).

pub(crate) mod bucket_filter;
mod fallback;
pub(crate) mod file_index;
pub(crate) mod hash_index;
pub mod plan;
#[cfg(test)]
mod plan_tests;
pub mod predicate;
pub mod split;

pub use plan::{
    plan_changes, plan_scan, resolve_snapshot, ScanPlan, ScanRequest, SnapshotSelector,
};
pub use split::{Split, SplitFile};
