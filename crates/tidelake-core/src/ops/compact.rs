//! Compaction as a verb: the [`Compactor`]'s work and commit, then the commit's hooks
//! ([`super::after_commit`]), whether the compaction runs here ([`compact`]) or its tasks ran
//! elsewhere ([`commit_compaction`]); and the compaction of the manifests
//! ([`compact_manifests`]).

use crate::commit::{CommitMessage, Committed, FileStoreCommit};
use crate::compact::job::CompactReport;
use crate::compact::{CompactRequest, CompactionPlan, Compactor};
use crate::error::Result;
use crate::io::failpoint;
use crate::table::Table;
use crate::tasks::Progress;

use super::after_commit;

/// Compact the latest snapshot of `table` as `request` selects
/// ([`Compactor::compact_reporting`], telling `progress` how far it is), then run the commit's
/// hooks. The report holds the metrics of the snapshots created ([`CompactReport::metrics`]).
pub async fn compact(
    table: &Table,
    request: &CompactRequest,
    progress: Option<Progress>,
) -> Result<CompactReport> {
    let report = Compactor::on_latest_schema(table)
        .await?
        .compact_reporting(request, progress)
        .await?;
    after_commit(table, report.snapshot_id.as_slice()).await?;
    Ok(report)
}

/// Commit the results of `plan`'s tasks (run anywhere) as one COMPACT snapshot
/// ([`Compactor::commit_plan`]), then run the commit's hooks. The snapshot with its metrics,
/// none when nothing changed.
pub async fn commit_compaction(
    table: &Table,
    plan: &CompactionPlan,
    messages: Vec<CommitMessage>,
) -> Result<Committed> {
    failpoint!("compact-before-commit");
    let committed = Compactor::on_latest_schema(table)
        .await?
        .commit_plan(plan, messages)
        .await?;
    after_commit(table, &committed.ids()).await?;
    Ok(committed)
}

/// Compact the manifests of `table`'s latest snapshot into a COMPACT snapshot (the
/// `compact_manifest` procedure, [`FileStoreCommit::compact_manifests`]), then run the commit's
/// hooks. Nothing is committed when the manifests are already compact.
pub async fn compact_manifests(table: &Table) -> Result<Committed> {
    let committed = FileStoreCommit::new(table.clone(), table.env().uuid_string())?
        .compact_manifests()
        .await?;
    after_commit(table, &committed.ids()).await?;
    Ok(committed)
}
