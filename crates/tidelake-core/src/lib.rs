//! `tidelake-core`: the table engine over Paimon's on-disk format (Paimon knowledge without
//! I/O lives in `tidelake-spec`, below everything here).
//!
//! Layers, lowest first. A module uses modules of its own layer (without cycles) and of the
//! layers below it, never above; `tests/layering.rs` checks this table against the code.
//!
//! | layer | modules | role |
//! |-------|---------|------|
//! | base | `error`, `tasks`, `io`, `datum_arrow`, `layout`, `versioned` | errors, task helpers, object-store access, values as Arrow, partition and bucket layout (where new data files go), versioned byte forms |
//! | metadata | `snapshots`, `changelogs`, `snapshot_commit`, `branch`, `table`, `schema_change`, `catalog` | snapshots, tags and hints; long-lived changelogs (expired snapshots kept for their changes); how a catalog creates snapshot and schema files (its lock or commit endpoint) and what its metastore learns of them; where branches live; opening, creating and altering tables; catalogs (filesystem, JDBC, REST, Hive) |
//! | state | `state` | a snapshot's manifests replayed into its live files per partition and bucket |
//! | plan | `scan`, `lsm` | snapshot → splits with pruning; the LSM tree: key order, sorted runs, levels, merges |
//! | data | `read`, `write`, `cdc` | data files and splits read; batches written to files and commit messages; database changelog messages decoded and written with row kinds |
//! | lookup | `lookup` | the latest rows of given primary keys, without a scan |
//! | commit | `commit` | commit messages → one snapshot (conflicts, retries, exactly-once) |
//! | compact | `compact` | keeping buckets' LSM trees shallow |
//! | maintenance | `maintenance`, `iceberg` | expiration, orphans, tags, branches, rollback, system tables, the partitions a metastore keeps; Iceberg-compatible metadata after commits |
//! | ops | `ops` | user verbs owning their transaction: commit, then every commit's hooks (metastore partitions, Iceberg metadata, maintenance) |
//! | api | `api` | the curated public API: re-exports and builders, what the binding uses |
//! | tests | `test_support` | what tests share: fixtures, temporary tables, write-and-commit, read-back (tests and feature `test-support` only) |
//!
//! The Python binding (`tidelake-python`) sits above all of them and uses only [`api`]. This
//! crate never creates an async runtime and never touches Python.

pub mod api;
pub(crate) mod branch;
pub(crate) mod catalog;
pub(crate) mod cdc;
pub(crate) mod changelogs;
pub(crate) mod commit;
pub(crate) mod compact;
pub mod datum_arrow;
pub(crate) mod error;
pub(crate) mod iceberg;
pub mod io;
pub(crate) mod layout;
pub(crate) mod lookup;
pub(crate) mod lsm;
pub(crate) mod maintenance;
pub(crate) mod ops;
pub mod read;
pub(crate) mod scan;
pub(crate) mod schema_change;
pub(crate) mod snapshot_commit;
pub(crate) mod snapshots;
pub(crate) mod state;
pub(crate) mod table;
mod tasks;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
mod versioned;
pub mod write;

pub use error::{Error, ErrorKind, Result};
pub use tasks::{panic_message, Progress};
