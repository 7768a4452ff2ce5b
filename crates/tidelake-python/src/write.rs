//! `RawWriter` and the commit entry points behind `tidelake.Table.write/upsert/delete/commit`.
//!
//! Input batches are pulled from any Arrow producer (C stream or C array) with the GIL held
//! (the producer may be Python code); each batch is then written with the GIL released.
//! Commit messages cross as versioned bytes; what a commit created comes back as one dict per
//! snapshot ([`committed_py`]).

use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyDict};
use std::sync::Arc;

use arrow_array::Int32Array;
use pyo3_arrow::input::AnyRecordBatch;
use pyo3_arrow::PyArray;
use tidelake_core::api::cdc::write_changes;
use tidelake_core::api::commit::{CommitMessage, FileStoreCommit, OverwriteScope, PartitionFilter};
use tidelake_core::api::ops::{Committed, TableCommit};
use tidelake_core::api::scan::Predicate;
use tidelake_core::api::write::{RowKinds, TableWrite};
use tidelake_core::api::Error;
use tidelake_spec::row_kind::RowKind;
use tokio::sync::Mutex;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::table::RawTable;

/// The row kinds of a write of `kind`: inserts into a table with `rowkind.field` take each
/// row's kind from that column (Paimon's contract for such tables).
fn row_kinds(write: &TableWrite, kind: &str) -> Result<RowKinds, Error> {
    match kind {
        "insert" if write.schema().options().rowkind_field().is_some() => Ok(RowKinds::FromField),
        "insert" | "upsert" => Ok(RowKinds::Fixed(RowKind::Insert.code())),
        "delete" => Ok(RowKinds::Fixed(RowKind::Delete.code())),
        other => Err(Error::invalid(format!("unknown write kind '{other}'"))),
    }
}

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawWriter {
    write: Mutex<Option<TableWrite>>,
}

#[pymethods]
impl RawWriter {
    /// Write every batch of an Arrow producer with row kind `kind` (`insert`, `upsert`,
    /// `delete`; inserts into a `rowkind.field` table read each row's kind from that column;
    /// `changelog`: decoded CDC batches, each row's kind in their `_row_kind` column).
    /// `progress(rows)` is called after each input batch with the rows taken so far; it runs on
    /// the caller's thread and its exceptions (KeyboardInterrupt included) stop the write.
    #[pyo3(signature = (data, kind, progress=None))]
    fn write(
        &self,
        py: Python<'_>,
        data: AnyRecordBatch,
        kind: &str,
        progress: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let reader = data.into_reader()?;
        let mut rows = 0usize;
        for batch in reader {
            let batch = batch.map_err(|e| to_py(Error::arrow("reading input", e)))?;
            let batch_rows = batch.num_rows();
            block_on(py, async {
                let mut guard = self.write.lock().await;
                let w = guard
                    .as_mut()
                    .ok_or_else(|| Error::invalid("the writer is closed"))?;
                if kind == "changelog" {
                    return write_changes(w, &batch).await;
                }
                let kinds = row_kinds(w, kind)?;
                w.write(&batch, kinds).await
            })?
            .py()?;
            rows += batch_rows;
            if let Some(p) = &progress {
                p.call1((rows,))?;
            }
            py.check_signals()?; // Ctrl-C stops a long write between batches
        }
        Ok(())
    }

    /// The bucket `write` would put each row of `data` in (fixed-bucket tables), as an
    /// Int32Array: for routing every (partition, bucket) to one writer of a distributed job.
    fn buckets<'py>(
        &self,
        py: Python<'py>,
        data: AnyRecordBatch,
        kind: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut out = Vec::new();
        for batch in data.into_reader()? {
            let batch = batch.map_err(|e| to_py(Error::arrow("reading input", e)))?;
            let buckets = block_on(py, async {
                let mut guard = self.write.lock().await;
                let w = guard
                    .as_mut()
                    .ok_or_else(|| Error::invalid("the writer is closed"))?;
                let kinds = row_kinds(w, kind)?;
                w.fixed_buckets(&batch, kinds).await
            })?
            .py()?;
            out.extend(buckets);
        }
        let array = PyArray::from_array_ref(Arc::new(Int32Array::from(out)));
        py.import("pyarrow")?.getattr("array")?.call1((array,))
    }

    /// Flush and return the commit messages as bytes.
    fn prepare_commit<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let messages = block_on(py, async {
            let mut guard = self.write.lock().await;
            let w = guard
                .as_mut()
                .ok_or_else(|| Error::invalid("the writer is closed"))?;
            w.prepare_commit().await
        })?
        .py()?;
        messages
            .iter()
            .map(|m| Ok(PyBytes::new(py, &m.to_bytes().map_err(to_py)?)))
            .collect()
    }

    /// Flush and append everything written as one transaction of `commit_user` (a one-shot
    /// write); returns the new snapshots ([`committed_py`]). A commit that fails without landing
    /// deletes its files before the error is raised.
    fn commit<'py>(
        &self,
        py: Python<'py>,
        table: &RawTable,
        commit_user: String,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let committed = block_on(py, async {
            let mut guard = self.write.lock().await;
            let w = guard
                .as_mut()
                .ok_or_else(|| Error::invalid("the writer is closed"))?;
            TableCommit::new(table.table.clone(), commit_user)
                .append_written(w)
                .await
        })?
        .py()?;
        committed_py(py, &committed)
    }

    /// Delete every file written since the last `prepare_commit` and close the writer.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        block_on(py, async {
            let mut guard = self.write.lock().await;
            match guard.take() {
                Some(mut w) => w.abort().await,
                None => Ok(()),
            }
        })?
        .py()
    }

    /// Close the writer: files already handed out by `prepare_commit` are kept, a running
    /// compaction is awaited and, like everything written since, deleted.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.abort(py)
    }
}

/// What a commit created, for Python: one dict per snapshot, in order, with its `snapshot_id`
/// and the metrics of its delta (`files_added`, `files_removed`, `rows_added`, `rows_removed`,
/// `bytes_added`, `bytes_removed`; see [`Committed`]); empty when nothing was committed.
pub(crate) fn committed_py<'py>(
    py: Python<'py>,
    committed: &Committed,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    committed
        .snapshots
        .iter()
        .map(|s| {
            let fields = s.metrics.fields();
            std::iter::once(("snapshot_id", s.id))
                .chain(fields)
                .into_py_dict(py)
        })
        .collect()
}

pub(crate) fn decode_messages(messages: Vec<Vec<u8>>) -> PyResult<Vec<CommitMessage>> {
    messages
        .iter()
        .map(|b| CommitMessage::from_bytes(b))
        .collect::<Result<_, _>>()
        .py()
}

fn partition_filter(spec: Option<String>) -> PyResult<Option<PartitionFilter>> {
    spec.map(|json| {
        let value: serde_json::Value = serde_json::from_str(&json)
            .map_err(|e| to_py(Error::invalid(format!("bad partition spec: {e}"))))?;
        Predicate::from_json(&value)
            .map(PartitionFilter::Predicate)
            .py()
    })
    .transpose()
}

#[pymethods]
impl RawTable {
    /// A new writer of this table's latest schema; `overwrite` writers restore nothing from the
    /// table (their files replace what they overwrite); `wait_compaction`: `prepare_commit`
    /// waits for the compactions it triggers (one-shot writers; long-lived ones pass false).
    #[pyo3(signature = (overwrite=false, wait_compaction=true))]
    fn writer(
        &self,
        py: Python<'_>,
        overwrite: bool,
        wait_compaction: bool,
    ) -> PyResult<RawWriter> {
        let table = self.table.clone();
        let open = table
            .new_write()
            .overwrite(overwrite)
            .wait_compaction(wait_compaction)
            .build();
        let write = block_on(py, open)?.py()?;
        Ok(RawWriter {
            write: Mutex::new(Some(write)),
        })
    }

    /// Commit messages as transaction `commit_identifier` of `commit_user`; returns the new
    /// snapshots ([`committed_py`]; empty when there was nothing to commit or it was already
    /// committed).
    #[pyo3(signature = (messages, commit_user, commit_identifier, properties=Vec::new()))]
    fn commit<'py>(
        &self,
        py: Python<'py>,
        messages: Vec<Vec<u8>>,
        commit_user: String,
        commit_identifier: i64,
        properties: Vec<(String, String)>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let messages = decode_messages(messages)?;
        let commit = TableCommit::new(self.table.clone(), commit_user)
            .identifier(commit_identifier)
            .properties(properties);
        committed_py(py, &block_on(py, commit.append(messages))?.py()?)
    }

    /// Overwrite: `partition_json` (a filter on partition columns) selects what is replaced;
    /// `dynamic` replaces exactly the partitions written; neither: the whole table. Returns the
    /// new snapshots ([`committed_py`]).
    #[pyo3(signature = (messages, commit_user, commit_identifier, partition_json=None, dynamic=false))]
    fn overwrite<'py>(
        &self,
        py: Python<'py>,
        messages: Vec<Vec<u8>>,
        commit_user: String,
        commit_identifier: i64,
        partition_json: Option<String>,
        dynamic: bool,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let messages = decode_messages(messages)?;
        let scope = if dynamic {
            OverwriteScope::Dynamic
        } else {
            OverwriteScope::Static(partition_filter(partition_json)?)
        };
        let commit =
            TableCommit::new(self.table.clone(), commit_user).identifier(commit_identifier);
        committed_py(py, &block_on(py, commit.overwrite(scope, messages))?.py()?)
    }

    /// Remove every row (an OVERWRITE snapshot with no files); the new snapshots
    /// ([`committed_py`]).
    fn truncate<'py>(
        &self,
        py: Python<'py>,
        commit_user: String,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let commit = TableCommit::new(self.table.clone(), commit_user);
        committed_py(py, &block_on(py, commit.truncate())?.py()?)
    }

    /// Delete every file the (never committed) messages add; returns how many.
    fn discard(&self, py: Python<'_>, messages: Vec<Vec<u8>>) -> PyResult<usize> {
        let messages = decode_messages(messages)?;
        let commit = FileStoreCommit::new(self.table.clone(), "discard").py()?;
        block_on(py, commit.discard(&messages))?.py()
    }

    /// Which of `identifiers` `commit_user` has not committed yet.
    fn filter_committed(
        &self,
        py: Python<'_>,
        commit_user: String,
        identifiers: Vec<i64>,
    ) -> PyResult<Vec<i64>> {
        let commit = FileStoreCommit::new(self.table.clone(), commit_user).py()?;
        block_on(py, commit.filter_committed(&identifiers))?.py()
    }
}

/// The (framed partition BinaryRow, bucket) a commit message writes to.
#[pyfunction]
pub fn message_target<'py>(
    py: Python<'py>,
    message: Vec<u8>,
) -> PyResult<(Bound<'py, PyBytes>, i32)> {
    let m = CommitMessage::from_bytes(&message).py()?;
    Ok((PyBytes::new(py, &m.partition), m.bucket))
}
