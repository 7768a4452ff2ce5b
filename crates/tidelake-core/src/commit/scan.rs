//! What a commit reads from the latest snapshot: the live files of some partitions (Java
//! `CommitScanner.readAllEntriesFromChangedPartitions`), with manifests skipped when their
//! partition statistics show they cannot hold any of those partitions
//! ([`crate::state::LiveFiles`] with partition pruning).

use tidelake_spec::manifest::ManifestEntry;
use tidelake_spec::snapshot::Snapshot;

use crate::error::Result;
use crate::state::{LiveFiles, PartitionSet, Pruning};
use crate::table::Table;

/// The live files of the partitions in `partitions` (Java `readAllEntriesFromChangedPartitions`).
pub(crate) async fn live_entries_of(
    table: &Table,
    snapshot: &Snapshot,
    partitions: &PartitionSet,
) -> Result<Vec<ManifestEntry>> {
    if partitions.is_empty() {
        return Ok(Vec::new());
    }
    let pruning = Pruning::all()
        .manifests(|m| partitions.may_be_in(m))
        .partitions(|p| Ok(partitions.contains(p)));
    Ok(LiveFiles::read(table, snapshot, pruning)
        .await?
        .into_entries())
}
