//! `tidelake-core`: the table engine over Paimon's on-disk format (Paimon knowledge without
//! I/O lives in `tidelake-spec`, below everything here).
//!
//! Layers, lowest first. A module uses modules of its own layer (without cycles) and of the
//! layers below it, never above; `tests/layering.rs` checks this table against the code.
//!
//! | layer | modules | role |
//! |-------|---------|------|
//! | base | `error`, `tasks`, `io`, `datum_arrow`, `layout` | errors, task helpers, object-store access, values as Arrow, partition and bucket layout |
//! | metadata | `snapshots`, `branch`, `table`, `schema_change`, `catalog` | snapshots, tags and hints; where branches live; opening, creating and altering tables |
//! | state | `state` | a snapshot's manifests replayed into its live files per partition and bucket |
//! | plan | `scan`, `lsm` | snapshot → splits with pruning; the LSM tree: key order, sorted runs, levels, merges |
//! | data | `read`, `write`, `cdc` | data files and splits read; batches written to files and commit messages; database changelog messages decoded and written with row kinds |
//! | lookup | `lookup` | the latest rows of given primary keys, without a scan |
//! | commit | `commit` | commit messages → one snapshot (conflicts, retries, exactly-once) |
//! | compact | `compact` | keeping buckets' LSM trees shallow |
//! | maintenance | `maintenance`, `iceberg` | expiration, orphans, tags, branches, rollback, system tables; Iceberg-compatible metadata after commits |
//!
//! The Python binding (`tidelake-python`) sits above all of them. This crate never creates an
//! async runtime and never touches Python.

pub mod branch;
pub mod catalog;
pub mod cdc;
pub mod commit;
pub mod compact;
pub mod datum_arrow;
pub mod error;
pub mod iceberg;
pub mod io;
pub mod layout;
pub mod lookup;
pub mod lsm;
pub mod maintenance;
pub mod read;
pub mod scan;
pub mod schema_change;
pub mod snapshots;
pub mod state;
pub mod table;
mod tasks;
pub mod write;

pub use error::{Error, ErrorKind, Result};
pub use tasks::panic_message;
