//! Commits, schema changes and branch changes of a table opened through a REST catalog go to
//! the server (Java `CatalogSnapshotCommit` over `RESTCatalog.commitSnapshot`,
//! `RESTCatalog.alterTable`, `createBranch` / `dropBranch` / `fastForward`, `rollbackTo`), as do
//! partitions marked done (`markDonePartitions`).
//!
//! Invariants: a commit names the table's UUID and carries the per-partition statistics of its
//! delta (Java `PartitionEntry.merge(...).toPartitionStatistics`: records, bytes and files
//! added minus deleted, the newest file's creation in epoch milliseconds); the server answering
//! `success: false` means another commit holds that id (nothing was created); any other
//! failure leaves the outcome unknown to the committer.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};
use tidelake_spec::manifest::{FileKind, ManifestEntry};

use super::client::{RestClient, RestError};
use crate::branch::MAIN_BRANCH;
use crate::error::{Error, Result};
use crate::io::epoch_ms_of_local_wall;
use crate::layout::TableLayout;
use crate::snapshot_commit::{
    BranchChange, PartitionSpec, RollbackTarget, SnapshotCommit, SnapshotCommitRequest,
};

/// One table of a REST catalog, as its commits name it.
#[derive(Debug)]
pub(crate) struct RestTableCommit {
    client: RestClient,
    database: String,
    table: String,
    uuid: String,
}

impl RestTableCommit {
    pub(crate) fn new(client: RestClient, database: &str, table: &str, uuid: &str) -> Self {
        RestTableCommit {
            client,
            database: database.to_string(),
            table: table.to_string(),
            uuid: uuid.to_string(),
        }
    }

    /// The REST path of the table (or branch: Java's object name `t$branch_b`), then `tail`.
    fn path(&self, branch: &str, tail: &[&str]) -> String {
        let object = if branch == MAIN_BRANCH {
            self.table.clone()
        } else {
            format!("{}$branch_{branch}", self.table)
        };
        let mut segments = vec!["databases", &self.database, "tables", &object];
        segments.extend_from_slice(tail);
        self.client.path(&segments)
    }
}

/// Running totals of one partition (Java `PartitionEntry`).
#[derive(Default)]
struct PartitionTotals {
    records: i64,
    bytes: i64,
    files: i64,
    last_creation: i64,
}

/// Java `PartitionStatistics` of a commit's delta, one per partition it touches.
fn partition_statistics(layout: &TableLayout, delta: &[ManifestEntry]) -> Result<Vec<Value>> {
    let mut totals: BTreeMap<&[u8], PartitionTotals> = BTreeMap::new();
    for entry in delta {
        let sign = if entry.kind == FileKind::Delete {
            -1
        } else {
            1
        };
        let t = totals.entry(entry.partition.as_slice()).or_default();
        t.records += sign * entry.file.row_count;
        t.bytes += sign * entry.file.file_size;
        t.files += sign;
        let created = entry.file.creation_time.map(epoch_ms_of_local_wall);
        t.last_creation = t.last_creation.max(created.unwrap_or_default());
    }
    totals
        .into_iter()
        .map(|(partition, t)| {
            let spec: serde_json::Map<String, Value> = layout
                .partition_spec(&layout.decode_partition(partition)?)?
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect();
            Ok(json!({
                "spec": spec,
                "recordCount": t.records,
                "fileSizeInBytes": t.bytes,
                "fileCount": t.files,
                "lastFileCreationTime": t.last_creation,
            }))
        })
        .collect()
}

#[async_trait]
impl SnapshotCommit for RestTableCommit {
    async fn commit(&self, request: SnapshotCommitRequest<'_>) -> Result<bool> {
        let snapshot: Value = serde_json::from_str(&request.snapshot.to_json())
            .map_err(|e| Error::Internal(format!("snapshot JSON: {e}")))?;
        let body = json!({
            "tableId": self.uuid,
            "snapshot": snapshot,
            "statistics": partition_statistics(request.layout, request.delta)?,
        });
        let what = format!(
            "committing snapshot {} of '{}.{}'",
            request.snapshot.id, self.database, self.table
        );
        let answer: Value = self
            .client
            .post(&self.path(request.branch, &["commit"]), &body, &what)
            .await
            .map_err(RestError::into_error)?;
        match answer.get("success").and_then(Value::as_bool) {
            Some(success) => Ok(success),
            None => Err(Error::Io {
                path: what,
                source: object_store::Error::Generic {
                    store: "rest",
                    source: format!("the server's answer has no 'success': {answer}").into(),
                },
            }),
        }
    }

    async fn change_branch(&self, change: BranchChange<'_>) -> Result<()> {
        let what = format!("{change:?} of '{}.{}'", self.database, self.table);
        match change {
            BranchChange::Create { name, from_tag } => {
                let body = json!({"branch": name, "fromTag": from_tag});
                let path = self.path(MAIN_BRANCH, &["branches"]);
                self.client.post_command(&path, &body, &what).await
            }
            BranchChange::Drop(name) => {
                let path = self.path(MAIN_BRANCH, &["branches", name]);
                self.client.delete(&path, &what).await
            }
            BranchChange::FastForward(name) => {
                let path = self.path(MAIN_BRANCH, &["branches", name, "forward"]);
                self.client.post_command(&path, &json!({}), &what).await
            }
        }
    }

    async fn rollback(&self, branch: &str, target: &RollbackTarget) -> Result<()> {
        let what = format!(
            "rolling '{}.{}' back to {target:?}",
            self.database, self.table
        );
        // Java `Instant` as JSON
        let instant = match target {
            RollbackTarget::Snapshot(id) => json!({"type": "snapshot", "snapshotId": id}),
            RollbackTarget::Tag(name) => json!({"type": "tag", "tagName": name}),
        };
        let path = self.path(branch, &["rollback"]);
        self.client
            .post_command(&path, &json!({"instant": instant}), &what)
            .await
    }

    async fn mark_partitions_done(&self, partitions: &[PartitionSpec]) -> Result<()> {
        let what = format!(
            "marking partitions of '{}.{}' done",
            self.database, self.table
        );
        // Java `MarkDonePartitionsRequest`: the specs as JSON objects, keys in partition order
        let specs: Vec<serde_json::Map<String, Value>> = partitions
            .iter()
            .map(|spec| {
                spec.iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect()
            })
            .collect();
        let path = self.path(MAIN_BRANCH, &["partitions", "mark"]);
        match self
            .client
            .post_command(&path, &json!({"partitionSpecs": specs}), &what)
            .await
        {
            // not a metastore-partitioned table to the server: Java ignores it
            Err(Error::Unsupported(_)) => Ok(()),
            other => other,
        }
    }

    async fn alter_schema(&self, branch: &str, changes: &[Value]) -> Result<()> {
        let what = format!("altering table '{}.{}'", self.database, self.table);
        self.client
            .post_command(&self.path(branch, &[]), &json!({"changes": changes}), &what)
            .await
    }
}
