//! `RawTable`: the binding of [`tidelake_core::table::Table`] behind `tidelake.table.Table`.
//!
//! Metadata crosses as Paimon's own JSON (the Python layer turns it into dataclasses), schemas
//! and data as Arrow through the C data interface. Every storage call releases the GIL.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_arrow::PySchema;
use tidelake_core::table::Table;



use pyo3_arrow::PyRecordBatchReader;
use tidelake_core::read::split_read::{read_splits, ReadContext, DEFAULT_BATCH_SIZE};
use tidelake_core::scan::{plan_changes, plan_scan, ScanRequest, Split};
use tidelake_core::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::scan::{parse_filter, selector, RawScan};
use crate::stream::StreamReader;

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

    /// Plan a batch scan.
    #[pyo3(signature = (columns=None, filter_json=None, snapshot_id=None, tag=None, timestamp_ms=None, batch_size=None, options=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        snapshot_id: Option<i64>,
        tag: Option<String>,
        timestamp_ms: Option<i64>,
        batch_size: Option<usize>,
        options: Option<Vec<(String, String)>>,
    ) -> PyResult<RawScan> {
        let filter = parse_filter(filter_json.as_deref())?;
        let request = ScanRequest {
            snapshot: selector(snapshot_id, tag, timestamp_ms)?,
            filter: filter.clone(),
            options: options.unwrap_or_default(),
        };
        let table = self.table.clone();
        let batch_size = batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        block_on(py, async move {
            let plan = plan_scan(&table, &request).await?;
            let ctx = ReadContext::new(table, &plan.schema, columns.as_deref(), filter.as_ref(), batch_size, false)?;
            Ok::<_, Error>(RawScan { ctx: Arc::new(ctx), plan })
        })?
        .py()
    }

    /// Plan a read of the changes committed by snapshots (start, end].
    #[pyo3(signature = (start_snapshot, end_snapshot=None, columns=None, filter_json=None, batch_size=None))]
    fn changes(
        &self,
        py: Python<'_>,
        start_snapshot: i64,
        end_snapshot: Option<i64>,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        batch_size: Option<usize>,
    ) -> PyResult<RawScan> {
        let filter = parse_filter(filter_json.as_deref())?;
        let table = self.table.clone();
        let batch_size = batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        block_on(py, async move {
            let plan = plan_changes(&table, start_snapshot, end_snapshot).await?;
            let ctx = ReadContext::new(table, &plan.schema, columns.as_deref(), filter.as_ref(), batch_size, true)?;
            Ok::<_, Error>(RawScan { ctx: Arc::new(ctx), plan })
        })?
        .py()
    }

    /// Read one split produced by `RawScan.splits()` (possibly in another process) without
    /// planning again: the read is set up from the split's schema id and the scan's arguments.
    #[pyo3(signature = (split, schema_id, columns=None, filter_json=None, with_row_kind=false, batch_size=None))]
    fn read_split<'py>(
        &self,
        py: Python<'py>,
        split: &[u8],
        schema_id: i64,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        with_row_kind: bool,
        batch_size: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let split = Split::from_bytes(split).map_err(to_py)?;
        let filter = parse_filter(filter_json.as_deref())?;
        let table = self.table.clone();
        let batch_size = batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
        let ctx = block_on(py, async move {
            let schema = table.schema_by_id(schema_id).await?;
            ReadContext::new(table, &schema, columns.as_deref(), filter.as_ref(), batch_size, with_row_kind)
        })?
        .py()?;
        let ctx = Arc::new(ctx);
        let reader = StreamReader::new(ctx.output_schema(), read_splits(ctx, vec![split]));
        PyRecordBatchReader::new(Box::new(reader)).into_pyarrow(py)
    }
}
