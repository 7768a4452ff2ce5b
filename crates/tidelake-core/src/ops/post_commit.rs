//! What runs after every commit ([`after_commit`]), in one place.

use crate::error::Result;
use crate::iceberg;
use crate::maintenance;
use crate::maintenance::partitions::register_partitions;
use crate::table::Table;

/// The hooks of a commit that created snapshots `ids` of `table`, in Java's order
/// (`TableCommitImpl`: the commit callbacks, then `maintain`): the partitions of `ids` in the
/// metastore that mirrors the table (a Hive catalog's `metastore.partitioned-table`), the Iceberg
/// metadata of `ids` (for tables that ask for it), then [`maintenance::maintain`] (which also
/// creates automatic tags). Maintenance runs even when the commit created nothing, as Java's
/// committer does.
pub async fn after_commit(table: &Table, ids: &[i64]) -> Result<()> {
    register_partitions(table, ids).await?;
    iceberg::after_commit(table, ids).await?;
    maintenance::maintain(table, ids).await?;
    Ok(())
}
