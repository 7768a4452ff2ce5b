//! The single-writer check of cross-partition-upsert tables (tidelake's own; Java runs one
//! writer per such table and does not check).
//!
//! A writer of such a table routes keys with an index of the rows committed up to its base
//! snapshot (`crate::write::cross_partition`, which moves the base past the writer's own
//! commits). Rows another writer added since then are unknown to it: a key it moved may
//! have been written into a third partition meanwhile, and committing would leave the key in
//! two partitions, one of them hidden by the other's merge. So the commit is refused when
//! any snapshot after the base, up to the one the commit builds on, is not a compaction.
//!
//! Invariant: a committed cross-partition write was routed with an index of every row
//! committed before it (compactions only rewrite rows, never move keys).

use tidelake_spec::snapshot::{CommitKind, Snapshot};

use crate::error::{Error, Result};
use crate::table::Table;

/// [`Error::CommitConflict`] (built by `conflict`) when a snapshot in `(base, latest]` added
/// rows, or is gone so that what it did is unknown.
pub(crate) async fn check(
    table: &Table,
    latest: &Snapshot,
    base: i64,
    conflict: impl Fn(String) -> Error,
) -> Result<()> {
    let sm = table.snapshot_manager();
    for id in base + 1..=latest.id {
        let snap = match sm.snapshot(id).await {
            Ok(s) => s,
            Err(e) if e.is_missing() => {
                return Err(conflict(format!(
                    "snapshot {id}, committed after this cross-partition writer read its key index at snapshot {base}, \
                     expired before it could be checked; write again with a new writer"
                )))
            }
            Err(e) => return Err(e),
        };
        if snap.commit_kind != CommitKind::Compact {
            return Err(conflict(format!(
                "snapshot {id} ({:?}, by '{}') added rows after this writer read the key index of the \
                 cross-partition-upsert table at snapshot {base}; its keys may have moved partition since: \
                 write again with a new writer (one writer at a time per such table)",
                snap.commit_kind, snap.commit_user
            )));
        }
    }
    Ok(())
}
