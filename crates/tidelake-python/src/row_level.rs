//! Row-level DML as the engine plans it (`tidelake_core::api::ops::RowLevelPlan`): the plan's
//! tasks and prepared changes cross as versioned bytes, and `RawRowLevelChange` accumulates
//! what Python's evaluation of the user's conditions decided on each task's rows.

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::{PyArray, PyRecordBatch};
use tokio::sync::Mutex;

use tidelake_core::api::ops::{
    commit_row_level, matching, PreparedChange, RowLevelChange, RowLevelPlan, RowLevelStrategy,
    RowLevelTask,
};
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::stream::RawBatches;
use crate::table::RawTable;
use crate::write::committed_py;

/// A plan's snapshot (None: the table had none), strategy name and task bytes.
type PlannedTasks<'py> = (Option<i64>, &'static str, Vec<Bound<'py, PyBytes>>);

/// A finished change's bytes, the snapshot it read and its rows inserted, updated, deleted.
type FinishedChange<'py> = (Bound<'py, PyBytes>, Option<i64>, u64, u64, u64);

/// What a commit made (one dict per snapshot) and the rows inserted, updated and deleted.
type CommittedRows<'py> = (Vec<Bound<'py, PyDict>>, u64, u64, u64);

fn strategy_name(strategy: RowLevelStrategy) -> &'static str {
    match strategy {
        RowLevelStrategy::RowKinds => "row-kinds",
        RowLevelStrategy::DeletionVectors => "deletion-vectors",
        RowLevelStrategy::Rewrite => "rewrite",
    }
}

/// The batches of an Arrow producer.
fn batches(data: AnyRecordBatch) -> PyResult<Vec<RecordBatch>> {
    data.into_reader()?
        .map(|b| b.map_err(|e| to_py(Error::arrow("reading input", e))))
        .collect()
}

/// One task of a row-level plan (its bytes decoded): where it is, for routing.
#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawRowLevelTask {
    task: RowLevelTask,
}

#[pymethods]
impl RawRowLevelTask {
    /// Decode a task's versioned bytes (another version: InvalidArgumentError naming it).
    #[staticmethod]
    fn from_bytes(bytes: &[u8]) -> PyResult<RawRowLevelTask> {
        Ok(RawRowLevelTask {
            task: RowLevelTask::from_bytes(bytes).py()?,
        })
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.task.to_bytes().py()?))
    }

    /// The snapshot its splits come from.
    #[getter]
    fn snapshot_id(&self) -> Option<i64> {
        self.task.snapshot_id()
    }

    /// Its framed partition row (as `RawTable.row_places` names a row's).
    #[getter]
    fn partition<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.task.partition())
    }

    #[getter]
    fn bucket(&self) -> i32 {
        self.task.bucket()
    }

    /// The bucket count its files were written with (as `RawTable.split_place`'s).
    #[getter]
    fn total_buckets(&self) -> i32 {
        self.task.splits.first().map_or(0, |s| s.total_buckets)
    }

    /// `row-kinds`, `deletion-vectors` or `rewrite`.
    #[getter]
    fn strategy(&self) -> &'static str {
        strategy_name(self.task.strategy)
    }
}

/// A row-level change being computed (see `RowLevelChange`); `finish` returns its bytes.
#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawRowLevelChange {
    change: Mutex<Option<RowLevelChange>>,
}

/// The change of a `RawRowLevelChange`'s guard, unless it is finished.
fn open(guard: &mut Option<RowLevelChange>) -> tidelake_core::api::Result<&mut RowLevelChange> {
    guard
        .as_mut()
        .ok_or_else(|| Error::invalid("the row-level change is finished"))
}

#[pymethods]
impl RawRowLevelChange {
    /// The rows a task (bytes) gives to evaluate; `remove` applies to them.
    fn read(&self, py: Python<'_>, task: &[u8]) -> PyResult<RawBatches> {
        let task = RowLevelTask::from_bytes(task).py()?;
        let (schema, rows) = block_on(py, async {
            open(&mut *self.change.lock().await)?.read(&task).await
        })?
        .py()?;
        Ok(RawBatches::new(
            schema,
            futures::stream::iter(rows.into_iter().map(Ok)).boxed(),
        ))
    }

    /// Where `task`'s filter holds on `data` (rows read from that task): the engine's
    /// predicate, as a read with the same filter selects rows; one boolean per row, as the
    /// column `matching` of a record batch.
    fn matching<'py>(
        &self,
        py: Python<'py>,
        task: &[u8],
        data: AnyRecordBatch,
    ) -> PyResult<Bound<'py, PyAny>> {
        let task = RowLevelTask::from_bytes(task).py()?;
        let rows = batches(data)?;
        let masks = block_on(py, async {
            let table = open(&mut *self.change.lock().await)?.table().clone();
            let mut masks = Vec::with_capacity(rows.len());
            for b in &rows {
                masks.push(matching(&table, &task, b).await?);
            }
            Ok::<_, Error>(masks)
        })?
        .py()?;
        let refs: Vec<&dyn Array> = masks.iter().map(|m| m as &dyn Array).collect();
        let mask: ArrayRef = if refs.is_empty() {
            std::sync::Arc::new(BooleanArray::from(Vec::<bool>::new()))
        } else {
            arrow_select::concat::concat(&refs)
                .map_err(|e| to_py(Error::arrow("joining masks", e)))?
        };
        let batch = RecordBatch::try_from_iter([("matching", mask)])
            .map_err(|e| to_py(Error::arrow("a mask as a batch", e)))?;
        PyRecordBatch::new(batch).into_pyarrow(py)
    }

    /// Remove the rows of the last read where the boolean `mask` holds (append tables).
    fn remove(&self, py: Python<'_>, mask: PyArray) -> PyResult<()> {
        let mask = mask
            .as_ref()
            .as_any()
            .downcast_ref::<BooleanArray>()
            .cloned()
            .ok_or_else(|| to_py(Error::invalid("remove takes a boolean mask")))?;
        block_on(py, async {
            open(&mut *self.change.lock().await)?.remove(&mask)
        })?
        .py()
    }

    /// Write new rows (a merge's inserts).
    fn insert(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<()> {
        let rows = batches(data)?;
        block_on(py, async {
            let mut guard = self.change.lock().await;
            let change = open(&mut guard)?;
            for b in &rows {
                change.insert(b).await?;
            }
            Ok(())
        })?
        .py()
    }

    /// Write the new version of updated rows.
    fn update(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<()> {
        let rows = batches(data)?;
        block_on(py, async {
            let mut guard = self.change.lock().await;
            let change = open(&mut guard)?;
            for b in &rows {
                change.update(b).await?;
            }
            Ok(())
        })?
        .py()
    }

    /// Delete the rows with these keys (primary-key tables).
    fn delete_keys(&self, py: Python<'_>, data: AnyRecordBatch) -> PyResult<()> {
        let rows = batches(data)?;
        block_on(py, async {
            let mut guard = self.change.lock().await;
            let change = open(&mut guard)?;
            for b in &rows {
                change.delete_keys(b).await?;
            }
            Ok(())
        })?
        .py()
    }

    /// Write what the change does and return it uncommitted: (its versioned bytes, the
    /// snapshot read, rows inserted, updated, deleted); on an error nothing it wrote is left
    /// behind.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<FinishedChange<'py>> {
        let (bytes, change) = block_on(py, async {
            let change = self
                .change
                .lock()
                .await
                .take()
                .ok_or_else(|| Error::invalid("the row-level change is finished"))?;
            let prepared = change.finish().await?;
            Ok::<_, Error>((prepared.to_bytes()?, prepared))
        })?
        .py()?;
        Ok((
            PyBytes::new(py, &bytes),
            change.read_snapshot,
            change.rows_inserted,
            change.rows_updated,
            change.rows_deleted,
        ))
    }

    /// Drop the change, deleting the files it wrote.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        block_on(py, async {
            match self.change.lock().await.take() {
                Some(change) => change.abort().await,
                None => Ok(()),
            }
        })?
        .py()
    }
}

#[pymethods]
impl RawTable {
    /// Plan a row-level change `what` (`delete`, `update`, `merge`): refused with
    /// UnsupportedError when the table cannot take it (`deletes`: it deletes rows). Returns
    /// (snapshot id or None, strategy name, task bytes per (partition, bucket) the filter tree
    /// `filter_json` may match).
    #[pyo3(signature = (what, *, filter_json=None, snapshot_id=None, deletes=false))]
    fn plan_row_level<'py>(
        &self,
        py: Python<'py>,
        what: String,
        filter_json: Option<String>,
        snapshot_id: Option<i64>,
        deletes: bool,
    ) -> PyResult<PlannedTasks<'py>> {
        let mut plan = RowLevelPlan::new(&self.table, what).deletes(deletes);
        if let Some(text) = filter_json {
            let value: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| to_py(Error::invalid(format!("filter is not valid JSON: {e}"))))?;
            plan = plan.filter(value);
        }
        if let Some(id) = snapshot_id {
            plan = plan.snapshot_id(id);
        }
        let planned = block_on(py, plan.plan())?.py()?;
        let tasks = planned
            .tasks
            .iter()
            .map(|t| Ok(PyBytes::new(py, &t.to_bytes().py()?)))
            .collect::<PyResult<_>>()?;
        Ok((planned.snapshot_id, strategy_name(planned.strategy), tasks))
    }

    /// A row-level change computed from snapshot `read_snapshot` (None: the table had none).
    fn row_level_change(&self, read_snapshot: Option<i64>) -> RawRowLevelChange {
        RawRowLevelChange {
            change: Mutex::new(Some(RowLevelChange::new(self.table.clone(), read_snapshot))),
        }
    }

    /// Commit prepared changes (bytes, one snapshot) as one transaction; when it is refused
    /// (CommitConflictError) or the snapshot expired their files are deleted. Returns (what
    /// was committed as `commit` returns it, rows inserted, updated, deleted).
    fn commit_row_level<'py>(
        &self,
        py: Python<'py>,
        changes: Vec<Vec<u8>>,
        commit_user: String,
        commit_identifier: i64,
    ) -> PyResult<CommittedRows<'py>> {
        let changes = changes
            .iter()
            .map(|b| PreparedChange::from_bytes(b))
            .collect::<Result<Vec<_>, _>>()
            .py()?;
        let counts = changes.iter().fold((0, 0, 0), |(i, u, d), c| {
            (i + c.rows_inserted, u + c.rows_updated, d + c.rows_deleted)
        });
        let table = self.table.clone();
        let committed = block_on(py, async move {
            commit_row_level(&table, &commit_user, commit_identifier, changes).await
        })?
        .py()?;
        Ok((committed_py(py, &committed)?, counts.0, counts.1, counts.2))
    }

    /// The messages (bytes) of a prepared change, e.g. to discard it.
    #[staticmethod]
    fn prepared_change_messages<'py>(
        py: Python<'py>,
        change: &[u8],
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let change = PreparedChange::from_bytes(change).py()?;
        change
            .messages
            .iter()
            .map(|m| Ok(PyBytes::new(py, &m.to_bytes().py()?)))
            .collect()
    }
}
