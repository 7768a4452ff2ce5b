//! [`RowLevelTask`]: the rows of one (partition, bucket) a row-level change evaluates, as
//! versioned bytes that any process can run.
//!
//! Byte form: a JSON envelope whose leading `version` is [`ROW_LEVEL_TASK_VERSION`] (another
//! version is refused with [`Error::Invalid`] naming it), then the table (location, branch),
//! the schema id the splits were planned with, the strategy, the filter tree and the splits
//! (their own serialisable form, snapshot id included).
//!
//! Invariants: every split of a task comes from one snapshot and one (partition, bucket); a
//! task runs only on the table and branch it was planned on.

use serde::{Deserialize, Serialize};

use super::plan::RowLevelStrategy;
use crate::error::{Error, Result};
use crate::scan::Split;
use crate::table::Table;

/// Version of the byte form written by [`RowLevelTask::to_bytes`].
pub const ROW_LEVEL_TASK_VERSION: u32 = 1;

/// The share of a row-level change in one (partition, bucket) of the plan's snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowLevelTask {
    /// Root of the table (as [`Table::location`]).
    pub location: String,
    pub branch: String,
    /// The schema the splits were planned with.
    pub schema_id: i64,
    pub strategy: RowLevelStrategy,
    /// The plan's filter tree (JSON): primary-key tasks read the merged rows it keeps.
    pub filter: Option<serde_json::Value>,
    pub splits: Vec<Split>,
}

/// The byte form: the version, then the task.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    version: u32,
    task: RowLevelTask,
}

impl RowLevelTask {
    /// The snapshot its splits were planned from.
    pub fn snapshot_id(&self) -> Option<i64> {
        self.splits.first().map(|s| s.snapshot_id)
    }

    /// The framed partition row of its bucket (as [`Split::partition`]).
    pub fn partition(&self) -> &[u8] {
        self.splits.first().map_or(&[], |s| &s.partition)
    }

    /// Its bucket (as [`Split::bucket`]).
    pub fn bucket(&self) -> i32 {
        self.splits.first().map_or(0, |s| s.bucket)
    }

    /// The versioned byte form (see the module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let envelope = Envelope {
            version: ROW_LEVEL_TASK_VERSION,
            task: self.clone(),
        };
        crate::versioned::encode(&envelope, "row-level task")
    }

    /// Decode [`RowLevelTask::to_bytes`] output; another version, malformed input or splits
    /// of several snapshots or buckets are [`Error::Invalid`].
    pub fn from_bytes(bytes: &[u8]) -> Result<RowLevelTask> {
        let invalid =
            |reason: String| Error::invalid(format!("not a tidelake row-level task: {reason}"));
        let envelope: Envelope =
            crate::versioned::decode(bytes, "row-level task", ROW_LEVEL_TASK_VERSION)?;
        let task = envelope.task;
        let place = |s: &Split| (s.snapshot_id, s.partition.clone(), s.bucket);
        if let Some(first) = task.splits.first() {
            if task.splits.iter().any(|s| place(s) != place(first)) {
                return Err(invalid(
                    "its splits come from several snapshots or buckets".to_string(),
                ));
            }
        }
        Ok(task)
    }

    /// Refuse to run on another table or branch than the one planned.
    pub(crate) fn check_table(&self, table: &Table) -> Result<()> {
        if table.location() != self.location || table.branch() != self.branch {
            return Err(Error::invalid(format!(
                "row-level task of {} (branch {}) given table {} (branch {})",
                self.location,
                self.branch,
                table.location(),
                table.branch()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> RowLevelTask {
        let split = Split {
            snapshot_id: 3,
            partition: vec![0, 0, 0, 1],
            bucket: 2,
            total_buckets: 4,
            bucket_path: "bucket-2".into(),
            files: Vec::new(),
            raw_convertible: true,
            branch: None,
            before_files: None,
            key_index: Vec::new(),
        };
        RowLevelTask {
            location: "/tmp/t".into(),
            branch: "main".into(),
            schema_id: 1,
            strategy: RowLevelStrategy::DeletionVectors,
            filter: Some(serde_json::json!({"op": "is_null", "field": "a"})),
            splits: vec![split.clone(), split],
        }
    }

    #[test]
    fn bytes_round_trip() {
        let t = task();
        let back = RowLevelTask::from_bytes(&t.to_bytes().unwrap()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.snapshot_id(), Some(3));
        assert_eq!((back.partition(), back.bucket()), (&[0u8, 0, 0, 1][..], 2));
    }

    #[test]
    fn other_versions_and_garbage_are_refused() {
        let mut value: serde_json::Value =
            serde_json::from_slice(&task().to_bytes().unwrap()).unwrap();
        value["version"] = serde_json::json!(ROW_LEVEL_TASK_VERSION + 1);
        let err = RowLevelTask::from_bytes(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!(
                "row-level task version {} is not supported",
                ROW_LEVEL_TASK_VERSION + 1
            )),
            "{message}"
        );
        let err = RowLevelTask::from_bytes(b"{}").unwrap_err().to_string();
        assert!(err.contains("missing 'version'"), "{err}");
        let mut mixed = task();
        mixed.splits[1].bucket = 3;
        let err = RowLevelTask::from_bytes(&mixed.to_bytes().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("several snapshots or buckets"), "{err}");
    }
}
