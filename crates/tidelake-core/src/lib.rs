//! `tidelake-core`: the table engine over Paimon's on-disk format.
//!
//! Layers (each module documents its own invariants):
//! * [`io`]: object-store access rooted at a table or warehouse.
//! * [`table`], [`snapshots`]: loading a table, its schemas, snapshots, tags and hints.
//! * [`state`]: a snapshot's manifests replayed into its live files per partition and bucket.
//! * [`scan`]: snapshot → manifests → live files → splits, with pruning.
//! * [`read`]: data-file readers (Parquet, ORC, Avro) with schema evolution, and the sorted-run
//!   merge that turns a primary-key split into its merged rows.
//!
//! This crate never creates an async runtime and never touches Python.

pub mod branch;
pub mod catalog;
pub mod commit;
pub mod compact;
pub mod datum_arrow;
pub mod error;
pub mod io;
pub mod layout;
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
