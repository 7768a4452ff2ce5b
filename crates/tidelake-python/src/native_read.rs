//! Native reads of a planned scan (`tidelake_core::api::read::native`): the data files a
//! reader other than the engine (Spark's Parquet reader) reads to the engine's rows, their
//! deleted positions, and splits packed into tasks. Units and files cross as JSON.

use pyo3::prelude::*;
use tidelake_core::api::read::native::{
    deleted_positions, native_units, pack_splits, Deletes, NativeFile, Packing,
};
use tidelake_core::api::scan::Split;
use tidelake_core::api::Error;

use crate::errors::{to_py, IntoPyResult};
use crate::runtime::block_on;
use crate::scan::RawScan;
use crate::stream::pyarrow_table;
use crate::table::RawTable;

/// `Packing` of the table's options, with the sizes given here overriding them.
fn packing(
    scan: &RawScan,
    target_size: Option<u64>,
    open_file_cost: Option<u64>,
) -> PyResult<Packing> {
    let of_table = Packing::of(&scan.plan.schema).py()?;
    Ok(Packing {
        target_size: target_size.unwrap_or(of_table.target_size),
        open_file_cost: open_file_cost.unwrap_or(of_table.open_file_cost),
    })
}

#[pymethods]
impl RawScan {
    /// The scan's read units as a JSON list (`ReadUnit`: `files`, `base_delta`, `engine`),
    /// splits the engine reads packed to `target_size` bytes (default: the table's
    /// `source.split.target-size`), each file (each key-range section of a merged bucket)
    /// weighing at least `open_file_cost`; deletion vectors and base/delta buckets left to the
    /// reader's joins when `joins`, else to the engine.
    #[pyo3(signature = (target_size=None, open_file_cost=None, *, joins=false))]
    fn native_units(
        &self,
        target_size: Option<u64>,
        open_file_cost: Option<u64>,
        joins: bool,
    ) -> PyResult<String> {
        let deletes = if joins {
            Deletes::Joined
        } else {
            Deletes::Engine
        };
        let packing = packing(self, target_size, open_file_cost)?;
        let units = native_units(&self.plan, packing, deletes).py()?;
        serde_json::to_string(&units)
            .map_err(|e| to_py(Error::Internal(format!("read units as JSON: {e}"))))
    }

    /// The indexes of `splits()` packed into tasks of about `target_size` bytes (defaults as
    /// for `native_units`), in order.
    #[pyo3(signature = (target_size=None, open_file_cost=None))]
    fn packed_splits(
        &self,
        target_size: Option<u64>,
        open_file_cost: Option<u64>,
    ) -> PyResult<Vec<Vec<usize>>> {
        Ok(pack_splits(
            &self.plan.splits,
            packing(self, target_size, open_file_cost)?,
        ))
    }
}

/// Split payloads (`Split` bytes) packed into tasks as `RawScan.packed_splits` packs a scan's.
#[pyfunction]
pub fn pack_split_payloads(
    payloads: Vec<Vec<u8>>,
    target_size: u64,
    open_file_cost: u64,
) -> PyResult<Vec<Vec<usize>>> {
    let splits = payloads
        .iter()
        .map(|p| Split::from_bytes(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(to_py)?;
    Ok(pack_splits(
        &splits,
        Packing {
            target_size,
            open_file_cost,
        },
    ))
}

#[pymethods]
impl RawTable {
    /// The deleted positions of native files (a JSON list of `NativeFile`, as in
    /// `RawScan.native_units`) as a pyarrow.Table `(file_name, position)`.
    fn deleted_positions<'py>(
        &self,
        py: Python<'py>,
        files_json: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let files: Vec<NativeFile> = serde_json::from_str(files_json)
            .map_err(|e| to_py(Error::invalid(format!("not a list of native files: {e}"))))?;
        let table = self.table.clone();
        let batch = block_on(py, async move { deleted_positions(&table, &files).await })?.py()?;
        let schema = batch.schema();
        pyarrow_table(py, vec![batch], schema)
    }
}
