//! What runs after every commit ([`after_commit`]), in one place.

use crate::error::Result;
use crate::iceberg;
use crate::maintenance;
use crate::table::Table;

/// The hooks of a commit that created snapshots `ids` of `table`, in Java's order
/// (`TableCommitImpl`: the commit callbacks, then `maintain`): the Iceberg metadata of `ids`
/// (for tables that ask for it), then [`maintenance::maintain`]. Maintenance runs even when
/// the commit created nothing, as Java's committer does.
pub async fn after_commit(table: &Table, ids: &[i64]) -> Result<()> {
    iceberg::after_commit(table, ids).await?;
    maintenance::maintain(table).await?;
    Ok(())
}
