//! `tidelake-spec`: Apache Paimon's on-disk model, with no I/O and no async.
//!
//! Every structure here encodes and decodes to the exact bytes Java Paimon reads and writes
//! (see `docs/paimon-format.md` in the shared reference material). Modules:
//!
//! * [`types`], [`type_json`], [`arrow`]: data types, their JSON form and the Arrow mapping.
//! * [`schema`]: `schema/schema-N` files.
//! * [`snapshot`]: `snapshot/snapshot-N` and `tag/tag-NAME` files.
//! * [`datum`], [`binary_row`]: values and the BinaryRow codec.
//! * [`bucket`], [`partition`]: bucket hashing and partition directory names.
//! * [`manifest`]: manifest lists, manifests and index manifests (Avro).
//! * [`file_index`]: data-file indexes (`file-index.*`: bloom filters).
//! * [`options`]: table options with Paimon's defaults.
//! * [`catalog_options`]: catalog options (metastore, warehouse, locks, JDBC, REST) as Java names them.
//! * [`iceberg`]: schemas, partitions and values in Iceberg's terms (Iceberg-compatible metadata).
//! * [`row_kind`]: the change a record carries (`_VALUE_KIND`).

pub mod arrow;
pub mod binary_row;
pub mod bucket;
pub mod catalog_options;
pub mod datum;
pub mod error;
pub mod file_index;
pub mod iceberg;
pub mod manifest;
pub mod options;
pub mod partition;
pub mod row_kind;
pub mod schema;
pub mod snapshot;
pub mod type_json;
pub mod types;

pub use error::{Error, Result};
