//! `RawTable.compact`: the binding of [`Compactor`] behind `tidelake.Table.compact`.
//!
//! The partition selection arrives as a filter JSON on partition columns (built by Python from
//! a list of partition dicts); the report goes back as JSON (`snapshot_id` plus per-bucket
//! file and byte counts); progress goes to an optional Python callable.

use std::sync::Arc;

use pyo3::prelude::*;
use tidelake_core::compact::{CompactRequest, Compactor, Progress};
use tidelake_core::scan::predicate::Predicate;
use tidelake_core::Error;

use crate::errors::IntoPyResult;
use crate::runtime::block_on;
use crate::table::RawTable;

#[pymethods]
impl RawTable {
    /// Compact the latest snapshot (every bucket fully with `full`, else by the table's
    /// strategy), optionally only partitions matching `partitions_json`; returns the report as
    /// JSON: `{"snapshot_id": int|null, "buckets": [...]}`. `progress(done, total)` is called
    /// (with the GIL) as buckets are rewritten; its exceptions are ignored.
    #[pyo3(signature = (full=false, partitions_json=None, progress=None))]
    fn compact(
        &self,
        py: Python<'_>,
        full: bool,
        partitions_json: Option<String>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let partitions = partitions_json
            .map(|json| {
                let value: serde_json::Value = serde_json::from_str(&json)
                    .map_err(|e| Error::invalid(format!("bad partition filter: {e}")))?;
                Predicate::from_json(&value)
            })
            .transpose()
            .py()?;
        let compactor = Compactor::new(self.table.clone()).py()?;
        let request = CompactRequest { full, partitions };
        let progress = progress.map(|callback| -> Progress {
            Arc::new(move |done: usize, total: usize| {
                Python::attach(|py| {
                    // A failing progress display must not fail the compaction.
                    let _ = callback.bind(py).call1((done, total));
                });
            })
        });
        let report = block_on(py, compactor.compact_reporting(&request, progress))?.py()?;
        serde_json::to_string(&report)
            .map_err(|e| Error::invalid(format!("cannot encode the compaction report: {e}")))
            .py()
    }
}
