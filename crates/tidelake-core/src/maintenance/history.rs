//! A table's history: one row per live snapshot with what its commit changed (the `history()`
//! of the Python API; Delta's `DESCRIBE HISTORY`, built from Paimon's metadata).
//!
//! A snapshot's changes are the [`CommitMetrics`] of the entries of its delta manifest list, as
//! its commit counted them: ADD entries are files added, DELETE entries files removed (a
//! compaction removes its inputs and adds its outputs). Snapshots that expire while the history
//! is read are left out, as by [`SnapshotManager::all`].
//!
//! [`SnapshotManager::all`]: crate::snapshots::SnapshotManager::all

use futures::{stream, StreamExt, TryStreamExt};
use tidelake_spec::snapshot::Snapshot;

use crate::commit::CommitMetrics;
use crate::error::{ErrorKind, Result};
use crate::io::local_wall_ms;
use crate::maintenance::system_tables::{longs, strings, table_of, timestamps, SystemTable};
use crate::state::{read_list, read_manifests};
use crate::table::Table;

/// How many snapshots' delta manifests are read at once.
const PARALLELISM: usize = 8;

/// The history of `table`'s live snapshots, oldest first.
pub async fn history(table: &Table) -> Result<SystemTable> {
    let all = table.snapshot_manager().all().await?;
    let reads = all.clone().into_iter().map(|snap| {
        let table = table.clone();
        async move { delta_of(&table, &snap).await }
    });
    let deltas: Vec<Option<CommitMetrics>> = stream::iter(reads)
        .buffered(PARALLELISM)
        .try_collect()
        .await?;
    let rows: Vec<(&Snapshot, CommitMetrics)> = all
        .iter()
        .zip(deltas)
        .filter_map(|(s, d)| d.map(|d| (s, d)))
        .collect();
    let long = |f: &dyn Fn(&Snapshot, &CommitMetrics) -> Option<i64>| {
        rows.iter().map(|(s, d)| f(s, d)).collect()
    };
    let text = |f: &dyn Fn(&Snapshot) -> Option<String>| rows.iter().map(|(s, _)| f(s)).collect();
    table_of(vec![
        longs("snapshot_id", false, long(&|s, _| Some(s.id))),
        timestamps(
            "commit_time",
            false,
            long(&|s, _| local_wall_ms(s.time_millis)),
        ),
        strings(
            "commit_kind",
            false,
            text(&|s| Some(s.commit_kind.to_string())),
        ),
        strings("commit_user", false, text(&|s| Some(s.commit_user.clone()))),
        longs(
            "commit_identifier",
            false,
            long(&|s, _| Some(s.commit_identifier)),
        ),
        longs("schema_id", false, long(&|s, _| Some(s.schema_id))),
        longs("files_added", false, long(&|_, d| Some(d.files_added))),
        longs("files_removed", false, long(&|_, d| Some(d.files_removed))),
        longs("rows_added", false, long(&|_, d| Some(d.rows_added))),
        longs("rows_removed", false, long(&|_, d| Some(d.rows_removed))),
        longs("bytes_added", false, long(&|_, d| Some(d.bytes_added))),
        longs("bytes_removed", false, long(&|_, d| Some(d.bytes_removed))),
        longs(
            "total_record_count",
            true,
            long(&|s, _| Some(s.total_record_count)),
        ),
        longs(
            "changelog_record_count",
            true,
            long(&|s, _| s.changelog_record_count),
        ),
        longs("watermark", true, long(&|s, _| s.watermark)),
    ])
}

/// What `snap` changed, read back from its delta manifests; None when it expired while being
/// read.
pub(crate) async fn delta_of(table: &Table, snap: &Snapshot) -> Result<Option<CommitMetrics>> {
    let read = async {
        let metas = read_list(table, &snap.delta_manifest_list).await?;
        read_manifests(table, &metas).await
    };
    let entries = match read.await {
        Ok(entries) => entries,
        Err(e) => {
            let e = table
                .snapshot_manager()
                .expired_while_reading(snap.id, e)
                .await;
            return match e.kind() {
                ErrorKind::SnapshotExpired => Ok(None),
                _ => Err(e),
            };
        }
    };
    Ok(Some(CommitMetrics::of(&entries)))
}
