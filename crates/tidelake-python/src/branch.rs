//! Branch entry points of `RawTable` (behind `tidelake.Table.create_branch`, `branches`,
//! `delete_branch`, `fast_forward`, `Table.stage`'s publish). Every call releases the GIL.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tidelake_core::api::branch::list_branches;
use tidelake_core::api::maintenance::{self, BranchStart};
use tidelake_core::api::ops;
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::table::RawTable;
use crate::write::committed_py;

#[pymethods]
impl RawTable {
    /// The branch the table is opened on.
    #[getter]
    fn branch(&self) -> String {
        self.table.branch().to_string()
    }

    /// Create branch `name` from a snapshot id, a tag, or (neither) empty with the latest schema.
    #[pyo3(signature = (name, snapshot_id=None, tag=None))]
    fn create_branch(
        &self,
        py: Python<'_>,
        name: String,
        snapshot_id: Option<i64>,
        tag: Option<String>,
    ) -> PyResult<()> {
        let start = match (snapshot_id, tag) {
            (None, None) => BranchStart::Empty,
            (Some(id), None) => BranchStart::Snapshot(id),
            (None, Some(tag)) => BranchStart::Tag(tag),
            (Some(_), Some(_)) => {
                return Err(to_py(Error::invalid(
                    "give at most one of from_snapshot and from_tag",
                )));
            }
        };
        block_on(py, maintenance::create_branch(&self.table, &name, &start))?.py()
    }

    /// Branch `name` of this table, committing through the same catalog.
    fn open_branch(&self, py: Python<'_>, name: String) -> PyResult<RawTable> {
        let table = block_on(py, self.table.open_other_branch(&name))?.py()?;
        Ok(RawTable::new(table))
    }

    /// Every branch but `main`, sorted.
    fn branches(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        block_on(py, list_branches(self.table.io()))?.py()
    }

    fn delete_branch(&self, py: Python<'_>, name: String) -> PyResult<()> {
        block_on(py, maintenance::delete_branch(&self.table, &name))?.py()
    }

    /// Fast-forward the table's branch to `name`; returns the table re-opened.
    fn fast_forward(&self, py: Python<'_>, name: String) -> PyResult<RawTable> {
        let table = block_on(py, async {
            maintenance::fast_forward(&self.table, &name).await?;
            self.table.reopen().await
        })?
        .py()?;
        Ok(RawTable::new(table))
    }

    /// Publish branch `name` into the table's branch as one snapshot (write-audit-publish);
    /// the snapshot created ([`committed_py`]), none when the branch changed nothing.
    fn publish_branch<'py>(
        &self,
        py: Python<'py>,
        name: String,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let committed = block_on(py, ops::publish_branch(&self.table, &name))?.py()?;
        committed_py(py, &committed)
    }
}
