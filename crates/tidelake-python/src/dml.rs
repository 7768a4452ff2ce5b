//! The engine side of distributing row-level DML (`tidelake.spark` merges): which columns
//! place a row in a fixed bucket and the (partition, bucket) of each source row, as a
//! row-level task names its own (`RawRowLevelTask`). The change itself is `row_level.rs`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::input::AnyRecordBatch;

use tidelake_core::api::write::row_places;
use tidelake_core::api::Error;

use crate::errors::to_py;
use crate::table::RawTable;

#[pymethods]
impl RawTable {
    /// The columns a fixed bucket is hashed from (`bucket-key`, else the primary key without
    /// the partition columns).
    #[getter]
    fn bucket_keys(&self) -> Vec<String> {
        self.table.schema().bucket_keys()
    }

    /// Where each row of `data` (the table's partition and bucket-key columns, by name) lives:
    /// (framed partition row, fixed bucket or -1), as a row-level task names its own.
    fn row_places<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
    ) -> PyResult<Vec<(Bound<'py, PyBytes>, i32)>> {
        let schema = self.table.schema();
        let mut out = Vec::new();
        for batch in data.into_reader()? {
            let batch = batch.map_err(|e| to_py(Error::arrow("reading input", e)))?;
            for (partition, bucket) in row_places(schema, &batch).map_err(to_py)? {
                out.push((PyBytes::new(py, &partition), bucket));
            }
        }
        Ok(out)
    }
}
