//! `RawCatalog`: the binding of the catalogs behind `tidelake.Catalog` (filesystem, JDBC).

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tidelake_core::api::catalog::{Catalog, CatalogOptions};
use tidelake_core::api::maintenance::{global_system_table, list_partitions};
use tidelake_core::api::ops::{CloneFrom, CloneTables, MigrateDatabase, MigrateTable};
use tidelake_core::api::{FileIO, StorageOptions};

use crate::arrow_arg::SchemaArg;
use crate::errors::IntoPyResult;
use crate::metadata::partition_fields;
use crate::runtime::block_on;
use crate::scan::parse_filter;
use crate::stream::pyarrow_table;
use crate::table::{table_spec, RawTable};

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawCatalog {
    catalog: Catalog,
}

/// What `migrate_database` returns: the tables migrated, and those that failed with their
/// error's message.
type MigratedTables = (Vec<String>, Vec<(String, String)>);

#[pymethods]
impl RawCatalog {
    /// The filesystem catalog of `warehouse`.
    #[new]
    #[pyo3(signature = (warehouse, storage_options=None))]
    fn new(warehouse: &str, storage_options: Option<StorageOptions>) -> PyResult<RawCatalog> {
        let io = FileIO::open_with(warehouse, &storage_options.unwrap_or_default()).py()?;
        Ok(RawCatalog {
            catalog: Catalog::new(io),
        })
    }

    /// The catalog of Paimon's catalog options (in the order given).
    #[staticmethod]
    #[pyo3(signature = (options, storage_options=None))]
    fn from_options(
        py: Python<'_>,
        options: Vec<(String, String)>,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<RawCatalog> {
        let options: CatalogOptions = options.into_iter().collect();
        let storage = storage_options.unwrap_or_default();
        let catalog = block_on(py, Catalog::from_options(options, &storage))?.py()?;
        Ok(RawCatalog { catalog })
    }

    #[getter]
    fn location(&self) -> String {
        self.catalog.location().to_string()
    }

    /// The catalog's options (with the defaults it chose, such as a JDBC `uri`).
    #[getter]
    fn options(&self) -> Vec<(String, String)> {
        self.catalog
            .options()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[getter]
    fn lock_enabled(&self) -> bool {
        self.catalog.lock_enabled()
    }

    fn list_databases(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        block_on(py, self.catalog.list_databases())?.py()
    }

    #[pyo3(signature = (name, ignore_if_exists, properties=None))]
    fn create_database(
        &self,
        py: Python<'_>,
        name: String,
        ignore_if_exists: bool,
        properties: Option<BTreeMap<String, String>>,
    ) -> PyResult<()> {
        let properties = properties.unwrap_or_default();
        let create = self
            .catalog
            .create_database(&name, ignore_if_exists, &properties);
        block_on(py, create)?.py()
    }

    fn database_properties(
        &self,
        py: Python<'_>,
        name: String,
    ) -> PyResult<BTreeMap<String, String>> {
        block_on(py, self.catalog.database_properties(&name))?.py()
    }

    fn alter_database(
        &self,
        py: Python<'_>,
        name: String,
        set: BTreeMap<String, String>,
        remove: Vec<String>,
    ) -> PyResult<()> {
        block_on(py, self.catalog.alter_database(&name, &set, &remove))?.py()
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

    /// The table (or branch) of a system table identifier (`db.t$snapshots`,
    /// `db.t$branch_b$files`) and the system table's name.
    fn split_system_table(
        &self,
        py: Python<'_>,
        identifier: String,
    ) -> PyResult<(RawTable, String)> {
        let (table, name) = block_on(py, self.catalog.split_system_table(&identifier))?.py()?;
        Ok((RawTable::new(table), name))
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

    fn rename_table(
        &self,
        py: Python<'_>,
        from_identifier: String,
        to_identifier: String,
    ) -> PyResult<()> {
        block_on(
            py,
            self.catalog.rename_table(&from_identifier, &to_identifier),
        )?
        .py()
    }

    /// Migrate Hive table `source` into a Paimon table in place (`MigrateTable`).
    #[pyo3(signature = (source, target, options, delete_origin))]
    fn migrate_table(
        &self,
        py: Python<'_>,
        source: String,
        target: Option<String>,
        options: Vec<(String, String)>,
        delete_origin: bool,
    ) -> PyResult<RawTable> {
        let mut migration = MigrateTable::new(source).options(options);
        if let Some(target) = target {
            migration = migration.target(target);
        }
        if !delete_origin {
            migration = migration.keep_origin();
        }
        let table = block_on(py, migration.run(&self.catalog))?.py()?;
        Ok(RawTable::new(table))
    }

    /// Migrate every table of Hive database `database` in place (`MigrateDatabase`): the
    /// tables migrated, and those that failed with their error's message.
    fn migrate_database(
        &self,
        py: Python<'_>,
        database: String,
        options: Vec<(String, String)>,
    ) -> PyResult<MigratedTables> {
        let migration = MigrateDatabase::new(database).options(options);
        let done = block_on(py, migration.run(&self.catalog))?.py()?;
        let failed = done
            .failed
            .into_iter()
            .map(|(table, e)| (table, e.to_string()))
            .collect();
        Ok((done.migrated, failed))
    }

    /// Paimon's `clone` (`CloneTables`) from this catalog into `target_catalog`, from
    /// `clone_from` ("hive" or "paimon"), only the partitions `where_json` selects: each table
    /// cloned as (source, target, the OVERWRITE snapshot's id or `None` when nothing was
    /// copied).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (target_catalog, clone_from, database, table, target_database, target_table,
                        included_tables, excluded_tables, options, where_json))]
    fn clone_tables(
        &self,
        py: Python<'_>,
        target_catalog: PyRef<'_, RawCatalog>,
        clone_from: String,
        database: Option<String>,
        table: Option<String>,
        target_database: Option<String>,
        target_table: Option<String>,
        included_tables: Vec<String>,
        excluded_tables: Vec<String>,
        options: Vec<(String, String)>,
        where_json: Option<String>,
    ) -> PyResult<Vec<(String, String, Option<i64>)>> {
        let mut clone = CloneTables::new(CloneFrom::parse(&clone_from).py()?)
            .included(included_tables)
            .excluded(excluded_tables)
            .options(options);
        if let Some(database) = database {
            clone = clone.database(database);
        }
        if let Some(table) = table {
            clone = clone.table(table);
        }
        if let Some(database) = target_database {
            clone = clone.target_database(database);
        }
        if let Some(table) = target_table {
            clone = clone.target_table(table);
        }
        if let Some(filter) = parse_filter(where_json.as_deref())? {
            clone = clone.partitions(filter);
        }
        let target = target_catalog.catalog.clone();
        let cloned = block_on(py, clone.run(&self.catalog, &target))?.py()?;
        Ok(cloned
            .into_iter()
            .map(|c| {
                let id = c.committed.and_then(|c| c.last_id());
                (c.source, c.target, id)
            })
            .collect())
    }

    /// The partitions of a table (the fields of `tidelake.Partition`): those the catalog
    /// keeps, or else the table's own.
    fn list_partitions<'py>(
        &self,
        py: Python<'py>,
        identifier: String,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let partitions = block_on(py, list_partitions(&self.catalog, &identifier))?.py()?;
        partitions.iter().map(|p| partition_fields(py, p)).collect()
    }

    /// Global system table `sys.<name>` as a pyarrow.Table.
    fn global_system_table<'py>(
        &self,
        py: Python<'py>,
        name: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = block_on(py, global_system_table(&self.catalog, &name))?.py()?;
        pyarrow_table(py, t.batches, t.schema)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let options = PyDict::new(py);
        for (k, v) in self.catalog.options().iter() {
            if !k.contains("password") && k != "token" {
                options.set_item(k, v)?;
            }
        }
        Ok(format!("RawCatalog({})", options.repr()?))
    }
}
