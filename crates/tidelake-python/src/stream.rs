//! Bridging an async engine stream to Arrow's synchronous `RecordBatchReader`, which crosses
//! into Python through the Arrow C stream interface.
//!
//! Each `next()` blocks on the shared runtime with the GIL released, so other Python threads
//! keep running while batches are decoded.

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use futures::stream::BoxStream;
use futures::StreamExt;
use pyo3::prelude::*;

use crate::runtime::block_on_detached;

/// A blocking reader over an engine stream.
pub struct StreamReader {
    schema: SchemaRef,
    stream: Option<BoxStream<'static, tidelake_core::Result<RecordBatch>>>,
}

impl StreamReader {
    pub fn new(schema: SchemaRef, stream: BoxStream<'static, tidelake_core::Result<RecordBatch>>) -> Self {
        StreamReader { schema, stream: Some(stream) }
    }

    fn pull(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        let stream = self.stream.as_mut()?;
        let item = Python::attach(|py| py.detach(|| block_on_detached(stream.next())));
        match item {
            Err(e) => Some(Err(ArrowError::ExternalError(Box::new(e)))),
            Ok(None) => {
                self.stream = None;
                None
            }
            Ok(Some(Ok(batch))) => Some(Ok(batch)),
            Ok(Some(Err(e))) => {
                self.stream = None;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.pull()
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
