//! The writers' periodic full compaction of `full-compaction.delta-commits` (Java:
//! `GlobalFullCompactionSinkWrite` in Flink, the full compaction of Spark's data writers):
//! [`after_write`] runs after a write's commit and before its hooks.
//!
//! Rule ([`due`], Java `FullCompactedStartingScanner.isFullCompactedIdentifier`): with
//! `full-compaction.delta-commits = N`, a commit that created snapshots is followed by a full
//! compaction when its identifier is a multiple of N, or is the batch identifier (`i64::MAX`:
//! Flink's end-of-input checkpoint and Spark's batch writes, which fully compact at every
//! commit). The count is the commit identifier, which every snapshot records: a stream writer
//! that restarts in a new process and resumes its identifiers from the table (as Flink restores
//! its checkpoint ids) keeps the count, with no state of tidelake's own between processes.
//!
//! What is compacted: every bucket of the table that is not one run at the max level yet
//! (Java `pickFullCompaction`), committed as one COMPACT snapshot (with the changelog of
//! `changelog-producer=full-compaction`) after the write's snapshots. Java compacts, in the
//! write's own commit, the buckets its job wrote since the job's last full compaction; the
//! buckets left alone here are those already fully compacted since their last write (whose
//! changelog that compaction wrote), so the table and its changelog read the same. Differences from Java: the COMPACT
//! snapshot is a commit of its own (commit user `tidelake-compact-*`, batch identifier), not a
//! second snapshot of the write's commit; buckets written by other writers are compacted too.
//!
//! Not done, as Java's writers: `write-only` tables, and postpone-bucket tables (`bucket = -2`,
//! whose rows reach real buckets only through their compaction job). Without the option nothing
//! changes (as Spark's writers; Flink also fully compacts `changelog-producer=full-compaction`
//! tables at every checkpoint without it).
//!
//! Failure: the write has landed when this runs. A compaction that lost its inputs to a
//! concurrent commit (or its base snapshot to expiry) is dropped with a warning: the next due
//! commit compacts those buckets, changelog included, since nothing was lost. Any other failure
//! is an error saying the write landed, of a kind no caller takes for "nothing landed".

use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::commit::Committed;
use crate::compact::{landed_but, Compactor};
use crate::error::{Error, ErrorKind, Result};
use crate::table::Table;
use crate::write::postpone::POSTPONE_BUCKET;

/// Whether the commit with `identifier` is followed by a full compaction when the table says
/// `full-compaction.delta-commits = every`.
pub(crate) fn due(identifier: i64, every: u32) -> bool {
    identifier == BATCH_COMMIT_IDENTIFIER || identifier % i64::from(every.max(1)) == 0
}

/// The full compaction that follows `committed`, the snapshots of a write committed with
/// `identifier`, when `table` asks for one (see the module docs); its COMPACT snapshot, none
/// when not due or nothing needed compacting.
pub(crate) async fn after_write(
    table: &Table,
    identifier: i64,
    committed: &Committed,
) -> Result<Committed> {
    let opts = table.schema().options();
    let spec = |e| Error::from_spec("table options", e);
    let Some(every) = opts.full_compaction_delta_commits().map_err(spec)? else {
        return Ok(Committed::default());
    };
    if committed.is_empty()
        || !due(identifier, every)
        || opts.write_only().map_err(spec)?
        || opts.bucket().map_err(spec)? == POSTPONE_BUCKET
    {
        return Ok(Committed::default());
    }
    let compacted = match Compactor::on_latest_schema(table).await {
        Ok(compactor) => compactor.compact_full().await,
        Err(e) => Err(e),
    };
    match compacted {
        Ok(compacted) => Ok(compacted),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::CommitConflict | ErrorKind::SnapshotExpired
            ) =>
        {
            log::warn!(target: "tidelake.commit", "{}: the full compaction of full-compaction.delta-commits after snapshots {:?} lost to a concurrent commit ({e}); the next due commit compacts those buckets", table.location(), committed.ids());
            Ok(Committed::default())
        }
        Err(e) => Err(landed_but(
            table,
            &committed.ids(),
            &format!("its full compaction (full-compaction.delta-commits) failed: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::due;
    use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

    #[test]
    fn due_every_nth_identifier_and_every_batch_commit() {
        let stream: Vec<i64> = (1..=10).filter(|&id| due(id, 3)).collect();
        assert_eq!(stream, vec![3, 6, 9]);
        assert!((1..=5).all(|id| due(id, 1)));
        assert!(due(BATCH_COMMIT_IDENTIFIER, 3));
        assert!(due(BATCH_COMMIT_IDENTIFIER, 1));
        // a zero from a caller that skipped the option's parsing is Java's 1
        assert!(due(7, 0));
    }
}
