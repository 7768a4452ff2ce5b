//! Committing a write so that it is visible when it returns ([`commit_visible_with`]).
//!
//! Tables whose reads skip level 0 (deletion vectors, first-row: `batch_scan_skip_level0`)
//! show a write's rows only once a compaction has moved its level-0 files up; their writers
//! compact before `prepare_commit` (Java `prepareCommitWaitCompaction`). That compaction is
//! best effort: it may have failed, or lost its inputs to a concurrent compaction and been
//! dropped by the commit. Acknowledging such a write would acknowledge rows nobody can read, so
//! the touched buckets are compacted again on the new latest snapshot until a compaction lands
//! (or no level-0 file is left there), within `commit.max-retries` rounds.
//!
//! Invariant: a call that returns `Ok` on such a table left none of the write's level-0 files
//! uncompacted by a landed snapshot, unless `write-only` is true or `lookup-wait` is false (the
//! user left compaction to a compaction job and accepted delayed visibility, as in Java).

use std::time::Duration;

use crate::commit::{CommitMessage, Committed, FileStoreCommit};
use crate::compact::Compactor;
use crate::error::{Error, ErrorKind, Result};
use crate::table::Table;

/// Longest pause between two compaction rounds.
const MAX_WAIT: Duration = Duration::from_millis(500);

/// Commit `messages` as transaction `commit_identifier` through `commit` (e.g. one that
/// [validates reads](FileStoreCommit::validate_reads)), then make the write visible on tables
/// that hide level 0 (see the module docs). Returns every snapshot created, in order, with its
/// metrics (the compactions that made the write visible included).
pub async fn commit_visible_with(
    table: &Table,
    commit: FileStoreCommit,
    messages: Vec<CommitMessage>,
    commit_identifier: i64,
    properties: &[(String, String)],
) -> Result<Committed> {
    let outcome = commit
        .commit_reporting(messages, commit_identifier, properties)
        .await?;
    let mut committed = outcome.committed;
    let opts = table.schema().options();
    let spec = |e| Error::from_spec("table options", e);
    if outcome.uncompacted.is_empty()
        || table.schema().primary_keys.is_empty()
        || !opts.batch_scan_skip_level0().map_err(spec)?
        || opts.write_only().map_err(spec)?
    {
        return Ok(committed);
    }
    // the writer's schema may be older than files written since (see `Compactor::spawn_unit`)
    let compactor = Compactor::on_latest_schema(table).await?;
    if !compactor.lookup_wait()? {
        return Ok(committed);
    }
    let rounds = u32::try_from(opts.commit_max_retries().map_err(spec)?)
        .unwrap_or(0)
        .max(1);
    let mut last_error = None;
    for round in 0..rounds {
        match compactor.compact_targets(&outcome.uncompacted).await {
            Ok(compacted) => {
                committed.extend(compacted);
                return Ok(committed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::CommitConflict | ErrorKind::SnapshotExpired
                ) =>
            {
                last_error = Some(e)
            }
            Err(e) => {
                return Err(landed_unseen(
                    table,
                    &committed.ids(),
                    &format!("compacting its buckets failed: {e}"),
                ))
            }
        }
        table
            .env()
            .sleep(MAX_WAIT.min(Duration::from_millis(10 << round.min(6))))
            .await;
    }
    let reason = last_error.map_or_else(String::new, |e| format!(": {e}"));
    Err(landed_unseen(
        table,
        &committed.ids(),
        &format!("compacting its buckets kept conflicting with concurrent compactions{reason}"),
    ))
}

/// The error of a write that landed as snapshots `ids` but is not visible yet: never a kind a
/// caller would take for "nothing landed" and write again.
fn landed_unseen(table: &Table, ids: &[i64], why: &str) -> Error {
    landed_but(
        table,
        ids,
        &format!(
            "is not visible yet: {why}; it becomes visible at the next compaction of those \
             buckets (e.g. `compact()`)"
        ),
    )
}

/// The error of a write that landed as snapshots `ids` when what should follow it did not
/// (`what`): never a kind a caller would take for "nothing landed" and write again.
pub(crate) fn landed_but(table: &Table, ids: &[i64], what: &str) -> Error {
    Error::Io {
        path: table.location().to_string(),
        source: object_store::Error::Generic {
            store: "commit",
            source: format!(
                "the write landed (snapshots {ids:?}) but {what}; do not write it again"
            )
            .into(),
        },
    }
}
