//! The engine side of row-level DML (`tidelake.Table.delete/update/merge`) and of write
//! results: committing a change computed from one snapshot's rows (validated against what was
//! committed since, removing the rewritten files of append tables), and the metrics of the
//! snapshots a write created.

use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict};

use tidelake_core::api::commit::FileStoreCommit;
use tidelake_core::api::compact::commit_visible_with;
use tidelake_core::api::maintenance::changes_of;
use tidelake_core::api::scan::Split;
use tidelake_core::api::write::removal_messages;

use crate::errors::{to_py, IntoPyResult};
use crate::maintenance::after_commit;
use crate::runtime::block_on;
use crate::table::RawTable;
use crate::write::decode_messages;

#[pymethods]
impl RawTable {
    /// Commit a row-level change computed from snapshot `read_snapshot`: the writer's
    /// `messages` plus the removal of the files of `rewritten` splits (append tables), as one
    /// transaction that fails with CommitConflictError when a commit since `read_snapshot`
    /// removed a rewritten file or (primary-key tables) wrote keys in a changed range.
    /// Returns the snapshot ids created.
    fn commit_dml(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        rewritten: Vec<Vec<u8>>,
        read_snapshot: Option<i64>,
        commit_user: String,
        commit_identifier: i64,
    ) -> PyResult<Vec<i64>> {
        let mut messages = decode_messages(messages)?;
        let splits = rewritten
            .iter()
            .map(|b| Split::from_bytes(b))
            .collect::<Result<Vec<_>, _>>()
            .map_err(to_py)?;
        for m in &mut messages {
            // An empty table read (no snapshot): everything committed since counts.
            let read = read_snapshot.unwrap_or(0);
            m.base_snapshot = Some(m.base_snapshot.map_or(read, |b| b.min(read)));
        }
        let table = self.table.clone();
        block_on(py, async move {
            messages.extend(removal_messages(&table, &splits).await?);
            let commit = FileStoreCommit::new(table.clone(), commit_user)?.validate_reads();
            commit_visible_with(&table, commit, messages, commit_identifier, &[]).await
        })?
        .py()
        .and_then(|ids| after_commit(py, &self.table, ids))
    }

    /// What snapshots `ids` changed, summed: `files_added`, `files_removed`, `rows_added`,
    /// `rows_removed` (records of the files), `bytes_added`, `bytes_removed`.
    fn commit_metrics<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyDict>> {
        let table = self.table.clone();
        let d = block_on(py, async move { changes_of(&table, &ids).await })?.py()?;
        [
            ("files_added", d.files_added),
            ("files_removed", d.files_removed),
            ("rows_added", d.rows_added),
            ("rows_removed", d.rows_removed),
            ("bytes_added", d.bytes_added),
            ("bytes_removed", d.bytes_removed),
        ]
        .into_py_dict(py)
    }
}
