//! `RawTable.compact`: the binding of [`Compactor`] behind `tidelake.Table.compact` (and of
//! [`ops::SortCompaction`] behind its `order_by`, `RawTable.sort_compact`), of [`ops::Rescale`]
//! behind `tidelake.Table.rescale`, of [`ops::RewriteFileIndex`] behind `tidelake.Table.rewrite_file_index`, and the compaction's plan -> task -> commit form (`RawTable.compaction_plan`, [`run_compaction_task`],
//! `RawTable.commit_compaction`) behind `tidelake.compaction` and `tidelake.spark.compact`.
//!
//! The partition selection arrives as a filter JSON on partition columns (built by Python from
//! a list of partition dicts); the report goes back as JSON (`snapshot_id` plus per-bucket
//! file and byte counts); progress goes to an optional Python callable. Tasks and their
//! results cross as bytes ([`CompactionTask::to_bytes`], [`CommitMessage::to_bytes`]).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tidelake_core::api::commit::CommitMessage;
use tidelake_core::api::compact::{CompactRequest, CompactionPlan, CompactionTask, Compactor};
use tidelake_core::api::ops;
use tidelake_core::api::scan::Predicate;
use tidelake_core::api::{Error, FileIO, StorageOptions, Table};
use tidelake_spec::options::OrderType;

use crate::errors::IntoPyResult;
use crate::progress::py_progress;
use crate::runtime::block_on;
use crate::table::RawTable;
use crate::write::committed_py;

#[pymethods]
impl RawTable {
    /// Compact the latest snapshot (every bucket fully with `full`, else by the table's
    /// strategy), optionally only partitions matching `partitions_json`; returns the report as
    /// JSON: `{"snapshot_id": int|null, "buckets": [...], "metrics": {...}}` (what the call's
    /// snapshots changed, as `CompactReport::metrics`). `progress(done, total)` is called
    /// (with the GIL) as buckets are rewritten (see [`py_progress`]).
    #[pyo3(signature = (full=false, partitions_json=None, progress=None))]
    fn compact(
        &self,
        py: Python<'_>,
        full: bool,
        partitions_json: Option<String>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let request = request(full, partitions_json)?;
        let report = block_on(
            py,
            ops::compact(&self.table, &request, py_progress(progress)),
        )?
        .py()?;
        serde_json::to_string(&report)
            .map_err(|e| Error::invalid(format!("cannot encode the compaction report: {e}")))
            .py()
    }

    /// Sort-compact the partitions matching `partitions_json` (all by default) by `columns` in
    /// `strategy` (`order`, `zorder` or `hilbert`; by default as `clustering.strategy = auto`
    /// picks for that many columns): the OVERWRITE snapshot's id, none when nothing was
    /// selected.
    #[pyo3(signature = (columns, strategy=None, partitions_json=None))]
    fn sort_compact(
        &self,
        py: Python<'_>,
        columns: Vec<String>,
        strategy: Option<&str>,
        partitions_json: Option<String>,
    ) -> PyResult<Option<i64>> {
        let order = match strategy {
            Some(s) => s
                .parse::<OrderType>()
                .map_err(|e| Error::from_spec("order_strategy", e))
                .py()?,
            None => OrderType::auto(columns.len()),
        };
        let mut sort = ops::SortCompaction::new(&self.table, order, columns);
        if let Some(filter) = request(false, partitions_json)?.partitions {
            sort = sort.partitions(filter);
        }
        let committed = block_on(py, sort.run())?.py()?;
        Ok(committed.last_id())
    }

    /// Rescale the partitions matching `partitions_json` (all by default) into `bucket_num`
    /// buckets (by default the table's `bucket`): the OVERWRITE snapshot's id.
    #[pyo3(signature = (bucket_num=None, partitions_json=None))]
    fn rescale(
        &self,
        py: Python<'_>,
        bucket_num: Option<i32>,
        partitions_json: Option<String>,
    ) -> PyResult<Option<i64>> {
        let mut rescale = ops::Rescale::new(&self.table);
        if let Some(n) = bucket_num {
            rescale = rescale.bucket_num(n);
        }
        if let Some(filter) = request(false, partitions_json)?.partitions {
            rescale = rescale.partitions(filter);
        }
        let committed = block_on(py, rescale.run())?.py()?;
        Ok(committed.last_id())
    }

    /// Rewrite the file indexes of the live data files of the partitions matching
    /// `partitions_json` (all by default) as the table's `file-index.*` options ask: the
    /// COMPACT snapshot's id, none when no file's index changed.
    #[pyo3(signature = (partitions_json=None))]
    fn rewrite_file_index(
        &self,
        py: Python<'_>,
        partitions_json: Option<String>,
    ) -> PyResult<Option<i64>> {
        let mut rewrite = ops::RewriteFileIndex::new(&self.table);
        if let Some(filter) = request(false, partitions_json)?.partitions {
            rewrite = rewrite.partitions(filter);
        }
        let committed = block_on(py, rewrite.run())?.py()?;
        Ok(committed.last_id())
    }

    /// Plan the compaction of the latest snapshot (as [`RawTable::compact`] picks it) without
    /// running it. Postpone-bucket tables get their postponed rows moved at once.
    #[pyo3(signature = (full=false, partitions_json=None))]
    fn compaction_plan(
        &self,
        py: Python<'_>,
        full: bool,
        partitions_json: Option<String>,
    ) -> PyResult<RawCompactionPlan> {
        let request = request(full, partitions_json)?;
        let plan = block_on(py, async {
            Compactor::on_latest_schema(&self.table)
                .await?
                .plan(&request)
                .await
        })?
        .py()?;
        Ok(RawCompactionPlan { plan })
    }

    /// Commit the results (commit-message bytes, one per task) of `plan` as one COMPACT
    /// snapshot; the snapshot created ([`committed_py`]), none when nothing changed.
    fn commit_compaction<'py>(
        &self,
        py: Python<'py>,
        plan: &RawCompactionPlan,
        messages: Vec<Vec<u8>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let messages = messages
            .iter()
            .map(|m| CommitMessage::from_bytes(m))
            .collect::<Result<Vec<_>, _>>()
            .py()?;
        let committed = block_on(
            py,
            ops::commit_compaction(&self.table, &plan.plan, messages),
        )?
        .py()?;
        committed_py(py, &committed)
    }
}

/// A planned compaction held by the process that will commit it.
#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawCompactionPlan {
    plan: CompactionPlan,
}

#[pymethods]
impl RawCompactionPlan {
    /// The snapshot the tasks were picked on.
    #[getter]
    fn snapshot_id(&self) -> Option<i64> {
        self.plan.snapshot_id
    }

    /// The COMPACT snapshot that moved postponed rows while planning, if any.
    #[getter]
    fn moved_snapshot(&self) -> Option<i64> {
        self.plan.moved_commit.last_id()
    }

    /// Every task's byte form.
    fn tasks<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        self.plan
            .tasks
            .iter()
            .map(|t| Ok(PyBytes::new(py, &t.to_bytes().py()?)))
            .collect()
    }
}

/// `(location, branch, bucket)` of a task's bytes (checking they decode).
#[pyfunction]
pub fn compaction_task_target(task: Vec<u8>) -> PyResult<(String, String, i32)> {
    let t = CompactionTask::from_bytes(&task).py()?;
    Ok((t.location.clone(), t.branch.clone(), t.bucket()))
}

/// Run a compaction task in this process (opening its table with `storage_options`); returns
/// its commit-message bytes. The GIL is released while it runs.
#[pyfunction]
#[pyo3(signature = (task, storage_options=None))]
pub fn run_compaction_task<'py>(
    py: Python<'py>,
    task: Vec<u8>,
    storage_options: Option<StorageOptions>,
) -> PyResult<Bound<'py, PyBytes>> {
    let task = CompactionTask::from_bytes(&task).py()?;
    let io = FileIO::open_with(&task.location, &storage_options.unwrap_or_default()).py()?;
    let run = async move {
        let table = Table::open_branch(io, &task.branch).await?;
        let message = Compactor::new(table)?.run_task(&task).await?;
        message.to_bytes()
    };
    let bytes = block_on(py, run)?.py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// The request of `full` and a partition filter JSON.
fn request(full: bool, partitions_json: Option<String>) -> PyResult<CompactRequest> {
    let partitions = partitions_json
        .map(|json| {
            let value: serde_json::Value = serde_json::from_str(&json)
                .map_err(|e| Error::invalid(format!("bad partition filter: {e}")))?;
            Predicate::from_json(&value)
        })
        .transpose()
        .py()?;
    Ok(CompactRequest { full, partitions })
}
