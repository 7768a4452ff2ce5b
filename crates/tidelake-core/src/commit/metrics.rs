//! What a commit changed, counted where the commit happens: [`CommitMetrics`] of the data-file
//! entries a snapshot's delta holds, and [`Committed`], the snapshots one call created with the
//! metrics of each.
//!
//! Invariants: a snapshot's metrics are those of the ADD and DELETE entries of data files its
//! delta manifests hold (exactly the entries the commit wrote there); changelog files and index
//! files (deletion vectors) are not counted. Rows are the files' row counts: for primary-key
//! tables key-value records, so an upsert of an existing key adds a row without removing one
//! until compaction. A call that committed nothing (an identifier already committed by its
//! user, nothing to commit) has no snapshots, so its metrics are all zero.

use serde::Serialize;
use tidelake_spec::manifest::{FileKind, ManifestEntry};

/// Data files and their rows and bytes added and removed by one snapshot (or several, summed).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommitMetrics {
    pub files_added: i64,
    pub files_removed: i64,
    pub rows_added: i64,
    pub rows_removed: i64,
    pub bytes_added: i64,
    pub bytes_removed: i64,
}

impl CommitMetrics {
    /// The metrics of a delta's data-file `entries`.
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a ManifestEntry>) -> CommitMetrics {
        let mut m = CommitMetrics::default();
        for e in entries {
            let (files, rows, bytes) = match e.kind {
                FileKind::Add => (&mut m.files_added, &mut m.rows_added, &mut m.bytes_added),
                FileKind::Delete => (
                    &mut m.files_removed,
                    &mut m.rows_removed,
                    &mut m.bytes_removed,
                ),
            };
            *files = files.saturating_add(1);
            *rows = rows.saturating_add(e.file.row_count);
            *bytes = bytes.saturating_add(e.file.file_size);
        }
        m
    }

    /// Both summed.
    pub fn plus(self, other: CommitMetrics) -> CommitMetrics {
        CommitMetrics {
            files_added: self.files_added.saturating_add(other.files_added),
            files_removed: self.files_removed.saturating_add(other.files_removed),
            rows_added: self.rows_added.saturating_add(other.rows_added),
            rows_removed: self.rows_removed.saturating_add(other.rows_removed),
            bytes_added: self.bytes_added.saturating_add(other.bytes_added),
            bytes_removed: self.bytes_removed.saturating_add(other.bytes_removed),
        }
    }

    /// The metrics as (name, value) pairs, in declaration order (for bindings and reports).
    pub fn fields(&self) -> [(&'static str, i64); 6] {
        [
            ("files_added", self.files_added),
            ("files_removed", self.files_removed),
            ("rows_added", self.rows_added),
            ("rows_removed", self.rows_removed),
            ("bytes_added", self.bytes_added),
            ("bytes_removed", self.bytes_removed),
        ]
    }
}

/// One snapshot a commit created, and what its delta changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CommittedSnapshot {
    pub id: i64,
    pub metrics: CommitMetrics,
}

/// The snapshots one call committed, in order (e.g. an APPEND and the COMPACT of its writer's
/// compaction, an OVERWRITE); none when the call committed nothing.
///
/// When a retried commit finds that its files already landed with an earlier snapshot of its
/// own (a batch commit whose outcome was unknown, a compaction already live), that snapshot is
/// answered with the metrics of the entries this call carried: the same files.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Committed {
    pub snapshots: Vec<CommittedSnapshot>,
}

impl Committed {
    /// The snapshot ids, in order.
    pub fn ids(&self) -> Vec<i64> {
        self.snapshots.iter().map(|s| s.id).collect()
    }

    /// The last snapshot's id, `None` when nothing was committed.
    pub fn last_id(&self) -> Option<i64> {
        self.snapshots.last().map(|s| s.id)
    }

    /// The metrics of every snapshot, summed.
    pub fn metrics(&self) -> CommitMetrics {
        self.snapshots
            .iter()
            .fold(CommitMetrics::default(), |sum, s| sum.plus(s.metrics))
    }

    /// Whether nothing was committed.
    pub fn is_empty(&self) -> bool {
        self.snapshots.is_empty()
    }

    /// Append the snapshots of `later` (committed after these).
    pub fn extend(&mut self, later: Committed) {
        self.snapshots.extend(later.snapshots);
    }
}

impl From<CommittedSnapshot> for Committed {
    fn from(snapshot: CommittedSnapshot) -> Committed {
        Committed {
            snapshots: vec![snapshot],
        }
    }
}
