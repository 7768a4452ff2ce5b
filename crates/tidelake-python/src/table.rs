//! `RawTable`: the binding of [`tidelake_core::table::Table`] behind `tidelake.table.Table`.
//!
//! Metadata crosses as Paimon's own JSON (the Python layer turns it into dataclasses), schemas
//! and data as Arrow through the C data interface. Every storage call releases the GIL.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_arrow::PySchema;
use tidelake_core::table::Table;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawTable {
    pub(crate) table: Table,
}

#[pymethods]
impl RawTable {
    /// Open the table at `location`.
    #[staticmethod]
    fn open(py: Python<'_>, location: String) -> PyResult<RawTable> {
        let table = block_on(py, Table::open(&location))?.py()?;
        Ok(RawTable { table })
    }

    #[getter]
    fn location(&self) -> String {
        self.table.location().to_string()
    }

    /// The latest schema as Paimon JSON (`schema/schema-N`).
    fn schema_json(&self) -> String {
        self.table.schema().to_json()
    }

    /// The latest schema as a pyarrow.Schema.
    fn arrow_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema = tidelake_spec::arrow::to_arrow_schema(&self.table.schema().fields)
            .map_err(|e| to_py(tidelake_core::Error::from_spec(self.table.location(), e)))?;
        PySchema::new(Arc::new(schema)).into_pyarrow(py)
    }

    /// Every schema version as Paimon JSON, ascending by id.
    fn schemas_json(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let schemas = block_on(py, self.table.schemas())?.py()?;
        Ok(schemas.iter().map(|s| s.to_json()).collect())
    }

    /// Every snapshot as Paimon JSON, ascending by id.
    fn snapshots_json(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let snaps = block_on(py, self.table.snapshot_manager().all())?.py()?;
        Ok(snaps.iter().map(|s| s.to_json()).collect())
    }

    /// One snapshot as Paimon JSON.
    fn snapshot_json(&self, py: Python<'_>, id: i64) -> PyResult<String> {
        let snap = block_on(py, self.table.snapshot_manager().snapshot(id))?.py()?;
        Ok(snap.to_json())
    }

    /// The latest snapshot id, or None.
    fn latest_snapshot_id(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        block_on(py, self.table.snapshot_manager().latest_id())?.py()
    }

    /// Every tag as (name, Paimon tag JSON), sorted by name.
    fn tags_json(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        let tags = block_on(py, self.table.snapshot_manager().tags())?.py()?;
        Ok(tags.into_iter().map(|(n, t)| (n, t.to_json())).collect())
    }
}
