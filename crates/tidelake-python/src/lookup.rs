//! Point lookups: `RawTable.lookup` and `RawLookuper` (behind `tidelake.Table.lookup` and
//! `Table.lookuper`), over [`tidelake_core::api::lookup`]. Keys arrive as any Arrow producer, rows
//! leave as a pyarrow.Table; every call releases the GIL, so threads look up concurrently.

use std::sync::Arc;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use tidelake_core::api::lookup::{lookup, Lookuper};
use tidelake_core::api::scan::SnapshotSelector;
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::stream::pyarrow_table;
use crate::table::RawTable;

/// The rows of an Arrow producer as one batch.
fn key_batch(keys: AnyRecordBatch) -> PyResult<RecordBatch> {
    let reader = keys.into_reader()?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| to_py(Error::arrow("reading lookup keys", e)))?;
    arrow_select::concat::concat_batches(&schema, &batches)
        .map_err(|e| to_py(Error::arrow("reading lookup keys", e)))
}

#[pymethods]
impl RawTable {
    /// The latest row of each key (see `tidelake_core::api::lookup::Lookuper::lookup`).
    #[pyo3(signature = (keys, columns=None, snapshot_id=None))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        keys: AnyRecordBatch,
        columns: Option<Vec<String>>,
        snapshot_id: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keys = key_batch(keys)?;
        let snapshot = snapshot_id.map_or(SnapshotSelector::Latest, SnapshotSelector::Id);
        let (schema, rows) =
            block_on(py, lookup(&self.table, &keys, columns.as_deref(), snapshot))?.py()?;
        pyarrow_table(py, vec![rows], schema)
    }

    /// A lookuper of the snapshot `snapshot_id` (the latest when None) caching up to
    /// `cache_bytes` of what it reads (None: the table's `lookup.cache-max-memory-size`).
    #[pyo3(signature = (snapshot_id=None, cache_bytes=None))]
    fn lookuper(
        &self,
        py: Python<'_>,
        snapshot_id: Option<i64>,
        cache_bytes: Option<usize>,
    ) -> PyResult<RawLookuper> {
        let snapshot = snapshot_id.map_or(SnapshotSelector::Latest, SnapshotSelector::Id);
        let inner = block_on(
            py,
            Lookuper::open(self.table.clone(), snapshot, cache_bytes),
        )?
        .py()?;
        Ok(RawLookuper {
            inner: Arc::new(inner),
        })
    }
}

/// A long-lived lookuper ([`Lookuper`]), shareable between Python threads.
#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawLookuper {
    inner: Arc<Lookuper>,
}

#[pymethods]
impl RawLookuper {
    /// The snapshot lookups read (None for a table without snapshots).
    #[getter]
    fn snapshot_id(&self) -> Option<i64> {
        self.inner.snapshot_id()
    }

    /// Bytes held in the lookuper's cache.
    #[getter]
    fn cached_bytes(&self) -> usize {
        self.inner.cached_bytes()
    }

    /// Move to the latest snapshot; returns its id.
    fn refresh(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        block_on(py, self.inner.refresh())?.py()
    }

    /// The latest row of each key, in key order.
    #[pyo3(signature = (keys, columns=None))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        keys: AnyRecordBatch,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let keys = key_batch(keys)?;
        let (schema, rows) = block_on(py, self.inner.lookup(&keys, columns.as_deref()))?.py()?;
        pyarrow_table(py, vec![rows], schema)
    }
}
