//! Iceberg-compatible metadata (Java `org.apache.paimon.iceberg`): for a table whose
//! `metadata.iceberg.storage` is `table-location`, `hadoop-catalog` or `hive-catalog`, each
//! commit's snapshots are also described as Iceberg v2 (or v3) metadata over the same data
//! files, so Iceberg readers (pyiceberg, Spark, Trino, DuckDB, polars) read the table's rows;
//! with `hive-catalog`, each version is also registered as an Iceberg table in a Hive
//! Metastore (`crate::catalog::hive::iceberg`); with `rest-catalog`, committed to an Iceberg
//! REST catalog's table (`rest`).
//!
//! Modules:
//! * `options`: the `metadata.iceberg.*` options and the metadata directory;
//! * `manifest`: Iceberg manifests and manifest lists (Avro with Iceberg field ids);
//! * `metadata`: `v<N>.metadata.json` and `version-hint.text`;
//! * `puffin`: Puffin files of Iceberg deletion vectors;
//! * `rest`: the versions committed to an Iceberg REST catalog;
//! * `current`: reading a snapshot's metadata back (`doctor --verify`);
//! * `sync`: one snapshot's metadata, afresh or incrementally (`IcebergCommitCallback`).
//!
//! Invariants:
//! * it runs after a commit, like Java's commit callback: Paimon snapshot N becomes metadata
//!   version N and Iceberg snapshot N; a snapshot whose previous version is missing (the
//!   first commit, or commits by writers that do not produce Iceberg metadata) is described
//!   afresh, so the metadata always matches the snapshot it names;
//! * Paimon stays the source of truth: nothing here changes a Paimon file, and a failure
//!   leaves the Paimon commit committed (the next commit rebuilds what is missing);
//! * deletion vectors are exported as Iceberg v3 deletion vectors (format version 3; Java
//!   also asks for `deletion-vectors.bitmap64`, here any Paimon vector is converted); writers
//!   refuse deletion vectors with format version 2 (`Options::check_writable`), so Iceberg
//!   readers never see deleted rows;
//! * a table whose columns have no Iceberg form is refused before anything is written
//!   (`tidelake_spec::iceberg::check_schema`, at creation, alteration, writer creation and
//!   commit), so no commit succeeds and then fails to produce its metadata.

mod current;
mod manifest;
mod metadata;
mod options;
mod puffin;
mod rest;
mod sync;

pub use current::{data_file_location, read_state};
pub use options::IcebergConfig;

use crate::branch::MAIN_BRANCH;
use crate::error::Result;
use crate::table::Table;

/// Refuses `table` when it asks for Iceberg metadata that cannot be written where it asks
/// (catalog storage for a table outside a Paimon warehouse; a Hive Metastore without its URI,
/// or for a table opened by path): writers check before they write, so such a table never
/// commits and then fails to produce its metadata.
pub fn check_table(table: &Table) -> Result<()> {
    if let Some(cfg) = IcebergConfig::of(table.schema().options())? {
        cfg.metadata_location(table)?;
        cfg.hive_table(table)?;
        cfg.rest_table(table)?;
    }
    Ok(())
}

/// Writes the Iceberg metadata of snapshots `ids` of `table`, oldest first, if the table's
/// options ask for it (Java `IcebergCommitCallback.call` after each commit). Returns the
/// metadata location, `None` when the table does not ask for Iceberg metadata.
pub async fn after_commit(table: &Table, ids: &[i64]) -> Result<Option<String>> {
    if table.branch() != MAIN_BRANCH {
        return Ok(None);
    }
    let table = table.reopen().await?;
    let Some(cfg) = IcebergConfig::of(table.schema().options())? else {
        return Ok(None);
    };
    let mut sync = sync::Sync::new(&table, &cfg)?;
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    for id in ids {
        let snap = table.snapshot_manager().snapshot(id).await?;
        sync.snapshot(&snap).await?;
    }
    cfg.metadata_location(&table).map(Some)
}
