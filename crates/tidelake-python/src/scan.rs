//! `RawScan`: a planned read (batch scan or change scan) and its splits.
//!
//! Planning happens once, on construction; splits cross as opaque bytes (picklable on the
//! Python side) and can be read back in any process with [`RawScan::read_split`].

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_arrow::PySchema;
use tidelake_core::api::ops::{PlannedRead, SplitReader};
use tidelake_core::api::scan::{Predicate, ScanPlan, Split};
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::progress::py_progress;
use crate::runtime::block_on;
use crate::stream::{pyarrow_table, RawBatches};

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawScan {
    pub(crate) reader: SplitReader,
    pub(crate) plan: ScanPlan,
}

impl From<PlannedRead> for RawScan {
    fn from(read: PlannedRead) -> RawScan {
        RawScan {
            reader: read.reader,
            plan: read.plan,
        }
    }
}

/// The JSON filter tree of a text filter (`n >= 5 and s in ('a', 'b')`, see
/// `tidelake_core::api::scan::parse_filter_text`).
#[pyfunction]
pub fn parse_filter_text(text: &str) -> PyResult<String> {
    tidelake_core::api::scan::parse_filter_text(text)
        .map(|tree| tree.to_string())
        .py()
}

pub(crate) fn parse_filter(filter_json: Option<&str>) -> PyResult<Option<Predicate>> {
    filter_json
        .map(|text| {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| to_py(Error::invalid(format!("filter is not valid JSON: {e}"))))?;
            Predicate::from_json(&value).map_err(to_py)
        })
        .transpose()
}

#[pymethods]
impl RawScan {
    /// Id of the snapshot read (for change scans: the last one), or None for an empty table.
    #[getter]
    fn snapshot_id(&self) -> Option<i64> {
        self.plan.snapshot.as_ref().map(|s| s.id)
    }

    /// Id of the schema rows are read in.
    #[getter]
    fn schema_id(&self) -> i64 {
        self.plan.schema.id
    }

    /// The pyarrow schema of the rows this scan yields.
    fn arrow_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.reader.output_schema()).into_pyarrow(py)
    }

    /// The planned splits, each serialised to bytes.
    fn splits<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.plan
            .splits
            .iter()
            .map(|s| PyBytes::new(py, &s.to_bytes()))
            .collect()
    }

    /// Row count of each split (before merging), for display and balancing.
    fn split_row_counts(&self) -> Vec<i64> {
        self.plan.splits.iter().map(Split::row_count).collect()
    }

    /// The batches of every split, streamed; `progress(rows, total)` as splits are read
    /// (planned rows, see [`py_progress`]).
    #[pyo3(signature = (progress=None))]
    fn batches(&self, progress: Option<Py<PyAny>>) -> RawBatches {
        RawBatches::new(
            self.reader.output_schema(),
            self.reader
                .stream(self.plan.splits.clone(), py_progress(progress)),
        )
    }

    /// A pyarrow.Table of every split (errors raise the typed exceptions); `progress` as for
    /// `batches`.
    #[pyo3(signature = (progress=None))]
    fn to_table<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batches = block_on(
            py,
            self.reader
                .collect(self.plan.splits.clone(), py_progress(progress)),
        )?
        .py()?;
        pyarrow_table(py, batches, self.reader.output_schema())
    }

    /// The batches of one split produced by `splits()`, streamed.
    fn read_split(&self, split: &[u8]) -> PyResult<RawBatches> {
        let split = Split::from_bytes(split).map_err(to_py)?;
        Ok(RawBatches::new(
            self.reader.output_schema(),
            self.reader.stream(vec![split], None),
        ))
    }
}
