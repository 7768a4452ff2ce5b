//! `RawBatches`: an engine stream exposed to Python as an iterator of `pyarrow.RecordBatch`.
//!
//! Python wraps it in `pyarrow.RecordBatchReader.from_batches`, which keeps the exceptions the
//! iterator raises: errors met while streaming surface as tidelake's typed exceptions, not as
//! generic Arrow errors. Each `__next__` waits for the next batch with the GIL released.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3_arrow::{PyRecordBatch, PySchema};
use tokio::sync::Mutex;

use crate::errors::to_py;
use crate::runtime::block_on;

type BatchStream = BoxStream<'static, tidelake_core::Result<RecordBatch>>;

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawBatches {
    schema: SchemaRef,
    stream: Arc<Mutex<Option<BatchStream>>>,
}

impl RawBatches {
    pub fn new(schema: SchemaRef, stream: BatchStream) -> Self {
        RawBatches { schema, stream: Arc::new(Mutex::new(Some(stream))) }
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
