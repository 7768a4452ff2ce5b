//! `RawCatalog`: the binding of the filesystem catalog behind `tidelake.Catalog`.

use pyo3::prelude::*;
use tidelake_core::api::catalog::Catalog;
use tidelake_core::api::{FileIO, StorageOptions};

use crate::arrow_arg::SchemaArg;
use crate::errors::IntoPyResult;
use crate::runtime::block_on;
use crate::table::{table_spec, RawTable};

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawCatalog {
    catalog: Catalog,
}

#[pymethods]
impl RawCatalog {
    #[new]
    #[pyo3(signature = (warehouse, storage_options=None))]
    fn new(warehouse: &str, storage_options: Option<StorageOptions>) -> PyResult<RawCatalog> {
        let io = FileIO::open_with(warehouse, &storage_options.unwrap_or_default()).py()?;
        Ok(RawCatalog {
            catalog: Catalog::new(io),
        })
    }

    #[getter]
    fn location(&self) -> String {
        self.catalog.location().to_string()
    }

    fn list_databases(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        block_on(py, self.catalog.list_databases())?.py()
    }

    fn create_database(
        &self,
        py: Python<'_>,
        name: String,
        ignore_if_exists: bool,
    ) -> PyResult<()> {
        block_on(py, self.catalog.create_database(&name, ignore_if_exists))?.py()
    }

    fn drop_database(&self, py: Python<'_>, name: String, cascade: bool) -> PyResult<()> {
        block_on(py, self.catalog.drop_database(&name, cascade))?.py()
    }

    fn list_tables(&self, py: Python<'_>, database: String) -> PyResult<Vec<String>> {
        block_on(py, self.catalog.list_tables(&database))?.py()
    }

    fn get_table(&self, py: Python<'_>, identifier: String) -> PyResult<RawTable> {
        let table = block_on(py, self.catalog.get_table(&identifier))?.py()?;
        Ok(RawTable::new(table))
    }

    #[pyo3(signature = (identifier, schema, primary_keys, partition_keys, bucket, options, comment=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_table(
        &self,
        py: Python<'_>,
        identifier: String,
        schema: SchemaArg,
        primary_keys: Vec<String>,
        partition_keys: Vec<String>,
        bucket: Option<i32>,
        options: Vec<(String, String)>,
        comment: Option<String>,
    ) -> PyResult<RawTable> {
        let spec = table_spec(primary_keys, partition_keys, bucket, options, comment);
        let schema = schema.0;
        let table = block_on(py, self.catalog.create_table(&identifier, &schema, &spec))?.py()?;
        Ok(RawTable::new(table))
    }

    fn drop_table(&self, py: Python<'_>, identifier: String) -> PyResult<()> {
        block_on(py, self.catalog.drop_table(&identifier))?.py()
    }
}
