//! Iceberg-compatible metadata (Java `org.apache.paimon.iceberg`): for a table whose
//! `metadata.iceberg.storage` is `table-location` or `hadoop-catalog`, each commit's
//! snapshots are also described as Iceberg v2 (or v3) metadata over the same data files, so
//! Iceberg readers (pyiceberg, Spark, Trino, DuckDB, polars) read the table's rows.
//!
//! Modules:
//! * `options`: the `metadata.iceberg.*` options and the metadata directory;
//! * `schema`: Paimon types, partitions and values in Iceberg's terms;
//! * `manifest`: Iceberg manifests and manifest lists (Avro with Iceberg field ids);
//! * `metadata`: `v<N>.metadata.json` and `version-hint.text`;
//! * `sync`: one snapshot's metadata, afresh or incrementally (`IcebergCommitCallback`).
//!
//! Invariants:
//! * it runs after a commit, like Java's commit callback: Paimon snapshot N becomes metadata
//!   version N and Iceberg snapshot N; a snapshot whose previous version is missing (the
//!   first commit, or commits by writers that do not produce Iceberg metadata) is described
//!   afresh, so the metadata always matches the snapshot it names;
//! * Paimon stays the source of truth: nothing here changes a Paimon file, and a failure
//!   leaves the Paimon commit committed (the next commit rebuilds what is missing);
//! * deletion vectors are not exported (Java does so only for format version 3 with 64-bit
//!   bitmaps); writers refuse Iceberg metadata on tables with deletion vectors
//!   (`Options::check_writable`), so Iceberg readers never see deleted rows.

mod manifest;
mod metadata;
mod options;
mod schema;
mod sync;

pub use options::IcebergConfig;

use crate::branch::MAIN_BRANCH;
use crate::error::Result;
use crate::table::Table;

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
