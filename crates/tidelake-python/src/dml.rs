//! The engine side of row-level DML (`tidelake.Table.delete/update/merge`) and of write
//! results: the rows of append splits with their file positions, deletion-vector messages
//! deleting rows by position, committing a change computed from one snapshot's rows (validated
//! against what was committed since, removing the rewritten files of append tables).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3_arrow::input::AnyRecordBatch;

use tidelake_core::api::ops::{Read, TableCommit};
use tidelake_core::api::scan::Split;
use tidelake_core::api::write::{deletion_messages, row_places};
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::stream::RawBatches;
use crate::table::RawTable;
use crate::write::{committed_py, decode_messages};

/// A split (bytes), the indexes of some of its files and each one's row positions.
type SplitPositions = (Vec<u8>, Vec<usize>, Vec<Vec<u64>>);

#[pymethods]
impl RawTable {
    /// Stream the rows of one append split (from `RawScan.splits()`, schema `schema_id`) with
    /// `_FILE_INDEX` (the row's file in the split) and `_ROW_POSITION` (its position in the
    /// file) appended, deletion vectors applied: what `deletion_messages` takes.
    fn read_split_positions(
        &self,
        py: Python<'_>,
        split: &[u8],
        schema_id: i64,
    ) -> PyResult<RawBatches> {
        let split = Split::from_bytes(split).map_err(to_py)?;
        let reader = block_on(py, Read::new(&self.table).split_reader(schema_id))?.py()?;
        let rows = reader.read_positioned(&split).map_err(to_py)?;
        Ok(RawBatches::new(reader.positioned_schema(), rows))
    }

    /// The (partition, bucket) of one split (bytes): its framed partition row, bucket and the
    /// bucket count its files were written with.
    #[staticmethod]
    fn split_place<'py>(
        py: Python<'py>,
        split: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, i32, i32)> {
        let split = Split::from_bytes(split).map_err(to_py)?;
        Ok((
            PyBytes::new(py, &split.partition),
            split.bucket,
            split.total_buckets,
        ))
    }

    /// The columns a fixed bucket is hashed from (`bucket-key`, else the primary key without
    /// the partition columns).
    #[getter]
    fn bucket_keys(&self) -> Vec<String> {
        self.table.schema().bucket_keys()
    }

    /// Where each row of `data` (the table's partition and bucket-key columns, by name) lives:
    /// (framed partition row, fixed bucket or -1), as `split_place` names a split's.
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

    /// Commit messages (bytes) deleting rows through deletion vectors: `deletes` holds, per
    /// split of one snapshot, the indexes of its files and each one's row positions. The index
    /// files are written now (`discard` deletes them).
    fn deletion_messages<'py>(
        &self,
        py: Python<'py>,
        deletes: Vec<SplitPositions>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let deletes = deletes
            .into_iter()
            .map(|(split, files, positions)| {
                Ok((
                    Split::from_bytes(&split)?,
                    files.into_iter().zip(positions).collect(),
                ))
            })
            .collect::<tidelake_core::api::Result<Vec<_>>>()
            .map_err(to_py)?;
        let table = self.table.clone();
        let messages =
            block_on(py, async move { deletion_messages(&table, deletes).await })?.py()?;
        messages
            .iter()
            .map(|m| Ok(PyBytes::new(py, &m.to_bytes().map_err(to_py)?)))
            .collect()
    }

    /// Commit a row-level change computed from snapshot `read_snapshot`: the writer's
    /// `messages` plus the removal of the files of `rewritten` splits (append tables), as one
    /// transaction that fails with CommitConflictError when a commit since `read_snapshot`
    /// removed a rewritten file or (primary-key tables) wrote keys in a changed range.
    /// Returns the snapshots created ([`committed_py`]).
    fn commit_dml<'py>(
        &self,
        py: Python<'py>,
        messages: Vec<Vec<u8>>,
        rewritten: Vec<Vec<u8>>,
        read_snapshot: Option<i64>,
        commit_user: String,
        commit_identifier: i64,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let messages = decode_messages(messages)?;
        let splits = rewritten
            .iter()
            .map(|b| Split::from_bytes(b))
            .collect::<Result<Vec<_>, _>>()
            .map_err(to_py)?;
        let commit =
            TableCommit::new(self.table.clone(), commit_user).identifier(commit_identifier);
        let committed = block_on(py, async move {
            commit.row_level(messages, &splits, read_snapshot).await
        })?
        .py()?;
        committed_py(py, &committed)
    }
}
