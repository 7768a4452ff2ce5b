//! `RawBatches`: an engine stream exposed to Python as an iterator of `pyarrow.RecordBatch`.
//!
//! Python wraps it in `pyarrow.RecordBatchReader.from_batches`, which keeps the exceptions the
//! iterator raises: errors met while streaming surface as tidelake's typed exceptions, not as
//! generic Arrow errors. Each `__next__` waits for the next batch with the GIL released.
//!
//! [`pyarrow_table`] hands collected batches over as one `pyarrow.Table`.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::exceptions::PyStopIteration;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};
use tokio::sync::Mutex;

use crate::errors::to_py;
use crate::runtime::block_on;

type BatchStream = BoxStream<'static, tidelake_core::api::Result<RecordBatch>>;

/// `batches` as a `pyarrow.Table`, imported through the Arrow C stream interface.
/// (`PyTable::into_pyarrow` calls `pyarrow.table()`, whose pandas check imports pandas: 0.2-0.3 s
/// on the first call of a process.)
pub(crate) fn pyarrow_table(
    py: Python<'_>,
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
) -> PyResult<Bound<'_, PyAny>> {
    let table = PyTable::try_new(batches, schema)?;
    py.import(intern!(py, "pyarrow"))?
        .getattr(intern!(py, "RecordBatchReader"))?
        .call_method1(intern!(py, "from_stream"), (table,))?
        .call_method0(intern!(py, "read_all"))
}

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawBatches {
    schema: SchemaRef,
    stream: Arc<Mutex<Option<BatchStream>>>,
}

impl RawBatches {
    pub fn new(schema: SchemaRef, stream: BatchStream) -> Self {
        RawBatches {
            schema,
            stream: Arc::new(Mutex::new(Some(stream))),
        }
    }
}

#[pymethods]
impl RawBatches {
    /// The pyarrow schema of every batch.
    fn arrow_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.schema.clone()).into_pyarrow(py)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = self.stream.clone();
        let item = block_on(py, async move {
            let mut guard = stream.lock().await;
            let next = match guard.as_mut() {
                Some(s) => s.next().await,
                None => None,
            };
            if !matches!(next, Some(Ok(_))) {
                // End of stream or an error: the stream is finished either way.
                *guard = None;
            }
            next
        })?;
        match item {
            Some(Ok(batch)) => PyRecordBatch::new(batch).into_pyarrow(py),
            Some(Err(e)) => Err(to_py(e)),
            None => Err(PyStopIteration::new_err(())),
        }
    }
}
