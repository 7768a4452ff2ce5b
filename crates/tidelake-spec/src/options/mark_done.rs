//! Options that mark partitions done (Java `CoreOptions.PARTITION_MARK_DONE_ACTION` and
//! `PARTITION_MARK_DONE_WHEN_END_INPUT`, Flink's `partition.idle-time-to-done`), and the
//! `_SUCCESS` file the `success-file` action writes (Java `SuccessFile`).
//!
//! Invariants: the action list parses as Java's (comma-separated, default `success-file`,
//! case-insensitive); a `_SUCCESS` file is encoded byte for byte as Java's Jackson pretty
//! printer writes it (`{`, two-space indent, `"key" : value`, `}`, no trailing newline) and
//! decoded ignoring unknown members, as Java does.

use std::str::FromStr;
use std::time::Duration;

use serde_json::Value;

use super::{or_default, Options};
use crate::error::{Error, Result};

pub const PARTITION_MARK_DONE_ACTION: &str = "partition.mark-done-action";
/// Java `CoreOptions.PARTITION_MARK_DONE_WHEN_END_INPUT`.
pub const PARTITION_MARK_DONE_WHEN_END_INPUT: &str = "partition.end-input-to-done";
/// A Flink sink option: how long a partition goes without writes before a streaming job marks
/// it done.
pub const PARTITION_IDLE_TIME_TO_DONE: &str = "partition.idle-time-to-done";
/// Where the `http-report` action posts, and the `params` it sends along.
pub const PARTITION_MARK_DONE_ACTION_URL: &str = "partition.mark-done-action.http.url";
pub const PARTITION_MARK_DONE_ACTION_PARAMS: &str = "partition.mark-done-action.http.params";
/// The name of the file the `success-file` action writes in a partition directory.
pub const SUCCESS_FILE_NAME: &str = "_SUCCESS";

/// One action of `partition.mark-done-action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkDoneAction {
    /// A `_SUCCESS` file in the partition directory.
    SuccessFile,
    /// A `<partition>.done` partition in the metastore.
    DonePartition,
    /// A partition-done event in the metastore.
    MarkEvent,
    /// An HTTP report to `partition.mark-done-action.http.url`.
    HttpReport,
    /// A user class (`partition.mark-done-action.custom.class`).
    Custom,
}

option_enum!(MarkDoneAction, PARTITION_MARK_DONE_ACTION, {
    SuccessFile => "success-file",
    DonePartition => "done-partition",
    MarkEvent => "mark-event",
    HttpReport => "http-report",
    Custom => "custom",
});

impl MarkDoneAction {
    /// Whether tidelake runs the action: not a user class (Java code run in the writer's JVM).
    pub fn tidelake_runs(self) -> bool {
        self != MarkDoneAction::Custom
    }
}

impl Options {
    /// `partition.mark-done-action`: comma-separated actions, default `success-file`.
    pub fn partition_mark_done_actions(&self) -> Result<Vec<MarkDoneAction>> {
        self.get(PARTITION_MARK_DONE_ACTION)
            .unwrap_or("success-file")
            .split(',')
            .map(|action| MarkDoneAction::from_str(action.trim()))
            .collect()
    }

    /// `partition.end-input-to-done`, default false: whether a batch write marks the
    /// partitions it wrote done when it ends.
    pub fn partition_mark_done_when_end_input(&self) -> Result<bool> {
        or_default(self.get_bool(PARTITION_MARK_DONE_WHEN_END_INPUT), false)
    }

    /// `partition.mark-done-action.http.url` (blank: unset).
    pub fn partition_mark_done_http_url(&self) -> Option<&str> {
        self.get(PARTITION_MARK_DONE_ACTION_URL)
            .filter(|url| !url.trim().is_empty())
    }

    /// `partition.mark-done-action.http.params`, if set.
    pub fn partition_mark_done_http_params(&self) -> Option<&str> {
        self.get(PARTITION_MARK_DONE_ACTION_PARAMS)
    }

    /// `partition.idle-time-to-done`, if set.
    pub fn partition_idle_time_to_done(&self) -> Result<Option<Duration>> {
        self.get_duration(PARTITION_IDLE_TIME_TO_DONE)
    }
}

/// The content of a `_SUCCESS` file: when the partition was first and last marked done, in
/// epoch milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuccessFile {
    pub creation_time: i64,
    pub modification_time: i64,
}

impl SuccessFile {
    /// Decode a `_SUCCESS` file (unknown members are ignored).
    pub fn from_json(text: &str) -> Result<SuccessFile> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::Invalid(format!("{SUCCESS_FILE_NAME} file: {e}")))?;
        let member = |name: &str| {
            value.get(name).and_then(Value::as_i64).ok_or_else(|| {
                Error::Invalid(format!(
                    "{SUCCESS_FILE_NAME} file: '{name}' is missing or not an integer"
                ))
            })
        };
        Ok(SuccessFile {
            creation_time: member("creationTime")?,
            modification_time: member("modificationTime")?,
        })
    }

    /// The marker written at epoch milliseconds `now` over `existing` (Java: a new
    /// `SuccessFile(now, now)`, or `existing.updateModificationTime(now)`): a marker keeps the
    /// time it was first written.
    pub fn marked_at(existing: Option<SuccessFile>, now: i64) -> SuccessFile {
        match existing {
            Some(file) => SuccessFile {
                modification_time: now,
                ..file
            },
            None => SuccessFile {
                creation_time: now,
                modification_time: now,
            },
        }
    }

    /// Encode as Java does (Jackson's default pretty printer).
    pub fn to_json(&self) -> String {
        format!(
            "{{\n  \"creationTime\" : {},\n  \"modificationTime\" : {}\n}}",
            self.creation_time, self.modification_time
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::opts;
    use super::*;

    #[test]
    fn actions_parse_as_java() {
        assert_eq!(
            opts(&[]).partition_mark_done_actions().unwrap(),
            [MarkDoneAction::SuccessFile]
        );
        assert_eq!(
            opts(&[(PARTITION_MARK_DONE_ACTION, "Success-File, done-partition")])
                .partition_mark_done_actions()
                .unwrap(),
            [MarkDoneAction::SuccessFile, MarkDoneAction::DonePartition]
        );
        let err = opts(&[(PARTITION_MARK_DONE_ACTION, "success-file,bogus")])
            .partition_mark_done_actions()
            .unwrap_err();
        assert!(err.to_string().contains("'bogus'"), "{err}");
    }

    #[test]
    fn success_file_round_trips_in_java_layout() {
        let file = SuccessFile {
            creation_time: 1,
            modification_time: 1733500000000,
        };
        let json = file.to_json();
        assert_eq!(
            json,
            "{\n  \"creationTime\" : 1,\n  \"modificationTime\" : 1733500000000\n}"
        );
        assert_eq!(SuccessFile::from_json(&json).unwrap(), file);
        let extra = r#"{"modificationTime": 5, "other": "x", "creationTime": 4}"#;
        assert_eq!(
            SuccessFile::from_json(extra).unwrap(),
            SuccessFile {
                creation_time: 4,
                modification_time: 5
            }
        );
        assert!(SuccessFile::from_json(r#"{"creationTime": 4}"#).is_err());
        let first = SuccessFile::marked_at(None, 7);
        assert_eq!((first.creation_time, first.modification_time), (7, 7));
        let again = SuccessFile::marked_at(Some(first), 9);
        assert_eq!((again.creation_time, again.modification_time), (7, 9));
    }
}
