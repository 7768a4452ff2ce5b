//! `tidelake.cdc`'s engine calls: decoding change messages and evolving a table to take a decoded
//! batch (`RawWriter.write(batch, "changelog")` writes it with its row kinds).

use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatch;
use tidelake_core::api::cdc::{decode, evolve, Format, Message, OnError};

use crate::arrow_arg::SchemaArg;
use crate::errors::IntoPyResult;
use crate::runtime::block_on;
use crate::table::RawTable;

/// One decoded source table: (database, table, primary keys, pyarrow RecordBatch).
type PyTableChanges = (String, String, Vec<String>, Py<PyAny>);

/// A message as `(key, value)` bytes.
type PyMessage = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Messages by index and what is said about them (a dead letter's error, why one was ignored).
type Notes = Vec<(usize, String)>;

/// Decode `(key, value)` messages of `format` with the `on_error` policy; returns the decoded
/// tables, the dead letters `(index, error)` and the ignored messages `(index, reason)`.
#[pyfunction]
pub fn cdc_decode(
    py: Python<'_>,
    messages: Vec<PyMessage>,
    format: &str,
    on_error: &str,
) -> PyResult<(Vec<PyTableChanges>, Notes, Notes)> {
    let format = Format::parse(format).py()?;
    let on_error = OnError::parse(on_error).py()?;
    let decoded = py
        .detach(|| {
            decode(
                messages.iter().map(|(k, v)| Message {
                    key: k.as_deref(),
                    value: v.as_deref(),
                }),
                format,
                on_error,
            )
        })
        .py()?;
    let tables = decoded
        .tables
        .into_iter()
        .map(|t| {
            let batch = PyRecordBatch::new(t.batch).into_pyarrow(py)?.unbind();
            Ok((t.source.database, t.source.table, t.primary_keys, batch))
        })
        .collect::<PyResult<_>>()?;
    let dead = decoded
        .dead_letters
        .into_iter()
        .map(|d| (d.index, d.error))
        .collect();
    Ok((tables, dead, decoded.ignored))
}

#[pymethods]
impl RawTable {
    /// The table at a schema that takes decoded rows of `schema` (columns added, types
    /// widened; the row-kind column is not a table column).
    fn cdc_evolve(&self, py: Python<'_>, schema: SchemaArg) -> PyResult<RawTable> {
        let table = block_on(py, evolve(&self.table, &schema.0))?.py()?;
        Ok(RawTable::new(table))
    }
}
