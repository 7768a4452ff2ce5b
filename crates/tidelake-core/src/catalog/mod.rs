//! Catalogs: tables by database and name, configured with Paimon's catalog options (Java
//! `CatalogFactory`, `AbstractCatalog`, `FileSystemCatalog`, `JdbcCatalog`).
//!
//! * `metastore=filesystem` (the default): the warehouse directories are the catalog;
//! * `metastore=jdbc`: names in Paimon's JDBC tables (SQLite or PostgreSQL, [`jdbc`]), data in
//!   the warehouse;
//! * `metastore=rest`: a Paimon REST catalog server ([`rest`]) keeps the names and creates every
//!   snapshot and schema; tables live at the paths it gives;
//! * `metastore=hive`: a Hive Metastore ([`hive`]) keeps the names, registered as Paimon's Hive
//!   catalog registers them; tables live at the locations it keeps, and it learns of their
//!   schema changes and (for a `metastore.partitioned-table`) their partitions.
//!
//! The JDBC and Hive catalogs take their Paimon commit lock (`lock.enabled`, on by default on
//! object stores, as Java's: [`jdbc::lock`], [`hive::lock`]) around the creation of snapshot
//! and schema files, so Java writers that take it too never race tidelake's; the filesystem
//! catalog takes a JDBC lock named by `lock.type=jdbc` and `uri`. Tables opened here carry that
//! lock (and the Hive catalog's metastore) in their [`CatalogEnvironment`]; a table opened by
//! path does not.
//!
//! Modules: [`identifier`] (`db.t$branch_b$snapshots`), [`filesystem`] (the warehouse layout),
//! [`jdbc`] (the JDBC catalog, its client and lock), [`rest`] (the REST catalog client),
//! [`hive`] (the Hive Metastore catalog, its client and lock).

pub(crate) mod filesystem;
pub(crate) mod hive;
pub mod identifier;
pub(crate) mod jdbc;
pub(crate) mod rest;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use arrow_schema::Schema as ArrowSchema;
use tidelake_spec::catalog_options::{
    CatalogOptions, Metastore, HIVE_LOCK_TYPE, JDBC_LOCK_TYPE, WAREHOUSE,
};
use tidelake_spec::types::DataField;

use crate::branch::MAIN_BRANCH;
use crate::error::{Error, Result};
use crate::io::{paimon_s3, Env, FileIO, StorageOptions};
use crate::schema_change::{
    alter_table, arrow_fields, create_table_of_fields, new_table_schema_of_fields, SchemaChange,
    TableSpec,
};
use crate::snapshot_commit::{CatalogEnvironment, TableLock};
use crate::table::Table;
use filesystem::{check_name, Warehouse};
use hive::lock::HiveLocks;
use hive::HiveCatalog;
pub use identifier::Identifier;
use jdbc::client::JdbcClient;
use jdbc::lock::JdbcLocks;
use jdbc::{JdbcTables, LOCATION_PROPERTY};
use rest::commit::RestTableCommit;
use rest::RestCatalog;

/// Where a catalog keeps its names (and, but for REST, its tables: the warehouse).
#[derive(Clone, Debug)]
enum Registry {
    /// The warehouse directories.
    FileSystem(Warehouse),
    Jdbc(Warehouse, JdbcTables),
    /// The server; tables are opened with `storage`.
    Rest {
        server: RestCatalog,
        storage: StorageOptions,
    },
    /// The metastore; the warehouse is where new databases go.
    Hive(Warehouse, HiveCatalog),
}

/// A catalog's commit lock (Java `CatalogLock`): the lock of each table, shared with Java's
/// writers of the same catalog.
pub(crate) trait CatalogLock: fmt::Debug + Send + Sync {
    /// The lock of table (or branch) `id` (Java `Lock.fromCatalog`: the identifier's database
    /// and object name).
    fn table_lock(&self, id: &Identifier) -> Arc<dyn TableLock>;
}

/// One partition of a table and its totals over the live files (Java `Partition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Partition key to value, as in paths (`partition.default-name` for nulls).
    pub spec: BTreeMap<String, String>,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub file_count: i64,
    /// Epoch milliseconds of the newest file's creation.
    pub last_file_creation_time: i64,
    /// Marked done (Java `markDonePartitions`); only a catalog that keeps partitions knows.
    pub done: bool,
}

/// A table's totals as a catalog that keeps versions records them at each commit (Java
/// `TableSnapshot` of a REST catalog).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableTotals {
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub file_count: i64,
    /// Epoch milliseconds of the newest file's creation.
    pub last_file_creation_time: i64,
}

/// A catalog of databases and tables. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Catalog {
    options: CatalogOptions,
    registry: Registry,
    locks: Option<Arc<dyn CatalogLock>>,
}

/// A catalog option that does not parse.
pub(crate) fn options_error(e: tidelake_spec::Error) -> Error {
    Error::from_spec("catalog options", e)
}

/// `jdbc:sqlite:` next to a local warehouse: the JDBC catalog's default database.
fn default_sqlite_uri(warehouse: &FileIO) -> Result<String> {
    let root = warehouse.local_root().ok_or_else(|| {
        Error::invalid(format!(
            "a JDBC catalog on {} needs 'uri' (jdbc:postgresql://... or jdbc:sqlite:<file>): \
             the default SQLite file sits next to a local warehouse only",
            warehouse.location()
        ))
    })?;
    Ok(format!("jdbc:sqlite:{}.catalog.db", root.display()))
}

/// The Hive Metastore's locks of a Hive catalog (Java `HiveCatalog.defaultLockFactory`).
fn hive_locks(
    hive: &HiveCatalog,
    options: &CatalogOptions,
    env: Env,
) -> Result<Arc<dyn CatalogLock>> {
    Ok(Arc::new(HiveLocks::new(
        hive.client().clone(),
        options,
        env,
    )?))
}

impl Catalog {
    /// The filesystem catalog of the warehouse at `io`.
    pub fn new(io: FileIO) -> Catalog {
        let options = CatalogOptions::default().with(WAREHOUSE, io.location());
        Catalog {
            options,
            registry: Registry::FileSystem(Warehouse::new(io)),
            locks: None,
        }
    }

    /// The catalog Paimon's `options` describe (`metastore`, `warehouse`, `uri`, `jdbc.*`,
    /// `catalog-key`, `lock.enabled`, `lock.type`, `lock-acquire-timeout`,
    /// `lock-check-max-sleep`, `table-default.*`; REST: `token.provider`, `token`,
    /// `header.*`; Hive: `sync-all-properties`; S3 file-system options in Paimon's names,
    /// `s3.endpoint`, `s3.access-key`, ..., see [`paimon_s3`]), its tables opened with
    /// `storage` (which wins over those). Connects to the JDBC database and creates Paimon's
    /// tables there if missing; asks a REST server for its configuration; checks that a Hive
    /// Metastore answers.
    pub async fn from_options(
        options: CatalogOptions,
        storage: &StorageOptions,
    ) -> Result<Catalog> {
        if options.metastore().map_err(options_error)? == Metastore::Rest {
            let (server, options) = RestCatalog::connect(&options).await?;
            return Ok(Catalog {
                options,
                registry: Registry::Rest {
                    server,
                    storage: storage.clone(),
                },
                locks: None,
            });
        }
        let warehouse = options.warehouse().ok_or_else(|| {
            Error::invalid("catalog option 'warehouse' is required (the root of the tables)")
        })?;
        let io = FileIO::open_with(
            warehouse,
            &paimon_s3::storage_options(warehouse, options.iter(), storage)?,
        )?;
        let mut options = options;
        // Java `AbstractCatalog.lockEnabled`: on object stores unless disabled.
        let lock_enabled = options
            .lock_enabled()
            .map_err(options_error)?
            .unwrap_or(io.local_root().is_none());
        let env = io.env().clone();
        let (registry, locks): (Registry, Option<Arc<dyn CatalogLock>>) = match options
            .metastore()
            .map_err(options_error)?
        {
            Metastore::FileSystem => {
                let locks = match (lock_enabled, options.lock_type()) {
                        (true, Some(t)) if t.eq_ignore_ascii_case(JDBC_LOCK_TYPE) => {
                            let uri = options.uri().ok_or_else(|| {
                                Error::invalid(
                                    "lock.type=jdbc needs 'uri', the JDBC URI of the lock's database",
                                )
                            })?;
                            let client =
                                JdbcClient::connect(uri, &options.jdbc_properties()).await?;
                            Some(Arc::new(JdbcLocks::open(client, &options, env).await?) as _)
                        }
                        (true, Some(other)) => {
                            return Err(Error::Unsupported(format!(
                                "lock.type={other}: tidelake's filesystem catalog takes Paimon's JDBC lock (lock.type=jdbc)"
                            )))
                        }
                        // Java's filesystem catalog has no default lock factory either.
                        _ => None,
                    };
                (Registry::FileSystem(Warehouse::new(io)), locks)
            }
            Metastore::Jdbc => {
                let uri = match options.uri() {
                    Some(uri) => uri.to_string(),
                    None => {
                        let uri = default_sqlite_uri(&io)?;
                        options = options.with(tidelake_spec::catalog_options::URI, uri.clone());
                        uri
                    }
                };
                let client = JdbcClient::connect(&uri, &options.jdbc_properties()).await?;
                let tables = JdbcTables::open(client.clone(), options.catalog_key()).await?;
                let locks = if lock_enabled {
                    Some(Arc::new(JdbcLocks::open(client, &options, env).await?) as _)
                } else {
                    None
                };
                (Registry::Jdbc(Warehouse::new(io), tables), locks)
            }
            Metastore::Hive => {
                let hive = HiveCatalog::connect(&options, storage).await?;
                let locks = match (lock_enabled, options.lock_type()) {
                        (false, _) => None,
                        (true, None) => Some(hive_locks(&hive, &options, env)?),
                        (true, Some(t)) if t.eq_ignore_ascii_case(HIVE_LOCK_TYPE) => {
                            Some(hive_locks(&hive, &options, env)?)
                        }
                        (true, Some(other)) => {
                            return Err(Error::Unsupported(format!(
                                "lock.type={other}: tidelake's Hive catalog takes Paimon's Hive lock (lock.type=hive)"
                            )))
                        }
                    };
                (Registry::Hive(Warehouse::new(io), hive), locks)
            }
            Metastore::Rest => {
                return Err(Error::Internal(
                    "a REST catalog reached the warehouse catalogs' set-up".into(),
                ))
            }
        };
        Ok(Catalog {
            options,
            registry,
            locks,
        })
    }

    /// The options the catalog was built from (with the JDBC `uri` it chose, if defaulted).
    pub fn options(&self) -> &CatalogOptions {
        &self.options
    }

    /// The warehouse root (a REST catalog: the server's URI).
    pub fn location(&self) -> &str {
        match &self.registry {
            Registry::FileSystem(w) | Registry::Jdbc(w, _) | Registry::Hive(w, _) => {
                w.io().location()
            }
            Registry::Rest { .. } => self.options.uri().unwrap_or_default(),
        }
    }

    /// Whether commits through this catalog take Paimon's commit lock (JDBC or Hive).
    pub fn lock_enabled(&self) -> bool {
        self.locks.is_some()
    }

    fn database_not_found(&self, name: &str) -> Error {
        Error::not_found("database", format!("'{name}' in {}", self.location()))
    }

    fn table_not_found(&self, id: &Identifier) -> Error {
        Error::not_found("table", format!("'{id}' in {}", self.location()))
    }

    pub async fn list_databases(&self) -> Result<Vec<String>> {
        match &self.registry {
            Registry::FileSystem(w) => w.list_databases().await,
            Registry::Jdbc(_, t) => t.list_databases().await,
            Registry::Rest { server, .. } => server.list_databases().await,
            Registry::Hive(_, h) => h.list_databases().await,
        }
    }

    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        check_name("database", name)?;
        match &self.registry {
            Registry::FileSystem(_) => Ok(self.list_databases().await?.iter().any(|d| d == name)),
            Registry::Jdbc(_, t) => t.database_exists(name).await,
            Registry::Rest { server, .. } => server.database_exists(name).await,
            Registry::Hive(_, h) => h.database_exists(name).await,
        }
    }

    async fn require_database(&self, name: &str) -> Result<()> {
        if self.database_exists(name).await? {
            Ok(())
        } else {
            Err(self.database_not_found(name))
        }
    }

    /// Create a database; `properties` are kept by the JDBC, REST and Hive catalogs
    /// (`location` among them, as Java's), refused by the filesystem catalog (which has nowhere
    /// to keep them).
    pub async fn create_database(
        &self,
        name: &str,
        ignore_if_exists: bool,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        if self.database_exists(name).await? {
            if ignore_if_exists {
                return Ok(());
            }
            return Err(Error::AlreadyExists(format!("database '{name}'")));
        }
        match &self.registry {
            Registry::FileSystem(w) => {
                if let Some(key) = properties.keys().next() {
                    return Err(Error::Unsupported(format!(
                        "database property '{key}': the filesystem catalog keeps no database properties"
                    )));
                }
                w.create_database_dir(name).await
            }
            Registry::Jdbc(w, t) => {
                t.create_database(name, &w.db_location(name), properties)
                    .await
            }
            Registry::Rest { server, .. } => server.create_database(name, properties).await,
            Registry::Hive(w, h) => {
                h.create_database(name, &w.db_location(name), properties)
                    .await
            }
        }
    }

    /// A database's properties (Java `Database.options`).
    pub async fn database_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.require_database(name).await?;
        match &self.registry {
            Registry::FileSystem(w) => Ok(BTreeMap::from([(
                LOCATION_PROPERTY.to_string(),
                w.db_location(name),
            )])),
            Registry::Jdbc(_, t) => t.database_properties(name).await,
            Registry::Rest { server, .. } => server.database_properties(name).await,
            Registry::Hive(_, h) => h.database_properties(name).await,
        }
    }

    /// Set and remove database properties (JDBC, REST and Hive catalogs, as in Java).
    pub async fn alter_database(
        &self,
        name: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<()> {
        self.require_database(name).await?;
        match &self.registry {
            Registry::FileSystem(_) => Err(Error::Unsupported(
                "altering a database: the filesystem catalog keeps no database properties".into(),
            )),
            Registry::Jdbc(_, t) => t.alter_database(name, set, remove).await,
            Registry::Rest { server, .. } => server.alter_database(name, set, remove).await,
            Registry::Hive(_, h) => h.alter_database(name, set, remove).await,
        }
    }

    /// Drop a database; with `cascade` its tables too, else it must be empty. The filesystem
    /// catalog deletes the directory; the JDBC catalog deletes its rows and, as Java's, leaves
    /// the files of its tables in the warehouse unless each was dropped first; a REST server
    /// drops what it keeps; a Hive Metastore drops the database with every table it has there
    /// (Paimon's or not) and deletes the files of the managed ones.
    pub async fn drop_database(&self, name: &str, cascade: bool) -> Result<()> {
        self.require_database(name).await?;
        let tables = self.list_tables(name).await?;
        if !tables.is_empty() && !cascade {
            return Err(Error::invalid(format!(
                "database '{name}' is not empty ({} tables); drop with cascade",
                tables.len()
            )));
        }
        match &self.registry {
            Registry::FileSystem(w) => w.delete_database_dir(name).await,
            Registry::Jdbc(_, t) => t.drop_database(name).await,
            Registry::Rest { server, .. } => server.drop_database(name).await,
            Registry::Hive(_, h) => h.drop_database(name).await,
        }
    }

    /// Tables of a database, sorted.
    pub async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        self.require_database(database).await?;
        match &self.registry {
            Registry::FileSystem(w) => w.list_tables(database).await,
            Registry::Jdbc(_, t) => t.list_tables(database).await,
            Registry::Rest { server, .. } => server.list_tables(database).await,
            Registry::Hive(_, h) => h.list_tables(database).await,
        }
    }

    async fn table_exists(&self, id: &Identifier) -> Result<bool> {
        match &self.registry {
            Registry::FileSystem(w) => w.has_table(&id.database, &id.table).await,
            Registry::Jdbc(_, t) => t.table_exists(&id.database, &id.table).await,
            Registry::Rest { server, .. } => {
                Ok(server.table(&id.database, &id.table).await?.is_some())
            }
            // any table of that name, Paimon's or not (Java `createTableImpl`)
            Registry::Hive(_, h) => h.has_table(id).await,
        }
    }

    /// The lock of a table (or branch): Java binds it to the identifier's object name.
    fn table_lock(&self, id: &Identifier) -> Option<Arc<dyn TableLock>> {
        self.locks.as_ref().map(|l| l.table_lock(id))
    }

    /// What the table's commits go through: the lock, and the metastore that mirrors it.
    fn environment(&self, id: &Identifier) -> CatalogEnvironment {
        let environment = CatalogEnvironment::in_catalog(&id.database, &id.table);
        let environment = match self.table_lock(id) {
            Some(lock) => environment.locked(lock),
            None => environment,
        };
        match &self.registry {
            Registry::Hive(w, h) => environment.mirrored_in(h.sync(id, w.io().env())),
            _ => environment,
        }
    }

    /// Open `db.table`, or a branch of it as `db.table$branch_<name>` (Paimon's identifier),
    /// committing through this catalog (its lock). A system table identifier is refused: see
    /// [`Catalog::split_system_table`].
    pub async fn get_table(&self, identifier: &str) -> Result<Table> {
        let id = Identifier::parse(identifier)?;
        if let Some(system) = &id.system {
            return Err(Error::invalid(format!(
                "'{identifier}' is the system table '{system}', not a table to open"
            )));
        }
        self.open(&id).await
    }

    async fn open(&self, id: &Identifier) -> Result<Table> {
        let branch = id.branch.as_deref().unwrap_or(MAIN_BRANCH);
        let (io, environment) = match &self.registry {
            Registry::Rest { server, storage } => {
                let meta = server
                    .table(&id.database, &id.table)
                    .await?
                    .ok_or_else(|| self.table_not_found(id))?;
                let commit = RestTableCommit::new(
                    server.client().clone(),
                    &id.database,
                    &id.table,
                    &meta.id,
                );
                (
                    server
                        .table_io(id, &meta.path, &self.options, storage)
                        .await?,
                    CatalogEnvironment::in_catalog(&id.database, &id.table)
                        .committing(Arc::new(commit)),
                )
            }
            Registry::FileSystem(w) | Registry::Jdbc(w, _) => {
                if !self.table_exists(id).await? {
                    return Err(self.table_not_found(id));
                }
                (w.table_io(&id.database, &id.table), self.environment(id))
            }
            Registry::Hive(_, h) => {
                let table = h.table(id).await?.ok_or_else(|| self.table_not_found(id))?;
                let location = table.location().ok_or_else(|| {
                    Error::invalid(format!("table '{id}' has no location in the metastore"))
                })?;
                (h.table_io(&location)?, self.environment(id))
            }
        };
        Ok(Table::open_branch(io, branch)
            .await?
            .with_environment(environment))
    }

    /// The partitions this catalog keeps for table `identifier` (a REST server's record of a
    /// `metastore.partitioned-table`), `None` when it keeps none: then they are the table's
    /// own (Java `listPartitionsFromFileSystem`, which Java's Hive catalog lists too).
    pub async fn kept_partitions(&self, identifier: &str) -> Result<Option<Vec<Partition>>> {
        let id = Identifier::parse(identifier)?;
        match &self.registry {
            Registry::Rest { server, .. } => match server.list_partitions(&id).await {
                Err(Error::NotFound { .. }) => Err(self.table_not_found(&id)),
                other => other,
            },
            Registry::FileSystem(_) | Registry::Jdbc(..) | Registry::Hive(..) => Ok(None),
        }
    }

    /// Table `identifier`'s totals as this catalog recorded them at its last commit; `None`
    /// from catalogs that keep no versions (Java `supportsVersionManagement`: REST only).
    pub async fn table_totals(&self, identifier: &str) -> Result<Option<TableTotals>> {
        let id = Identifier::parse(identifier)?;
        match &self.registry {
            Registry::Rest { server, .. } => server.table_totals(&id).await,
            Registry::FileSystem(_) | Registry::Jdbc(..) | Registry::Hive(..) => Ok(None),
        }
    }

    /// The table (or branch) and system table name of `db.t$snapshots` /
    /// `db.t$branch_b$files`.
    pub async fn split_system_table(&self, identifier: &str) -> Result<(Table, String)> {
        let id = Identifier::parse(identifier)?;
        let Some(system) = id.system.clone() else {
            return Err(Error::invalid(format!(
                "'{identifier}' names no system table (db.table$snapshots, ...)"
            )));
        };
        Ok((self.open(&id).await?, system))
    }

    /// The Hive Metastore of a Hive catalog; [`Error::Unsupported`] naming `verb` for other
    /// catalogs.
    pub(crate) fn hive(&self, verb: &str) -> Result<&HiveCatalog> {
        match &self.registry {
            Registry::Hive(_, h) => Ok(h),
            _ => Err(Error::Unsupported(format!(
                "{verb} needs a Hive catalog (metastore=hive), as in Java Paimon"
            ))),
        }
    }

    /// Create `db.table` (the database must exist), with the catalog's `table-default.*`
    /// options under the ones given (Java `copyTableDefaultOptions`).
    pub async fn create_table(
        &self,
        identifier: &str,
        schema: &ArrowSchema,
        spec: &TableSpec,
    ) -> Result<Table> {
        self.create_table_of_fields(identifier, arrow_fields(schema)?, spec)
            .await
    }

    /// [`Catalog::create_table`] with Paimon columns and their ids
    /// ([`crate::schema_change::new_table_schema_of_fields`]).
    pub async fn create_table_of_fields(
        &self,
        identifier: &str,
        fields: Vec<DataField>,
        spec: &TableSpec,
    ) -> Result<Table> {
        let id = Identifier::table(identifier)?;
        self.require_database(&id.database).await?;
        if self.table_exists(&id).await? {
            return Err(Error::AlreadyExists(format!("table '{id}'")));
        }
        let mut spec = spec.clone();
        for (k, v) in self.options.table_defaults() {
            if !spec.options.iter().any(|(key, _)| *key == k) {
                spec.options.push((k, v));
            }
        }
        let (io, location) = match &self.registry {
            Registry::Rest { server, .. } => {
                let schema = new_table_schema_of_fields(fields, &spec, 0)?;
                server.create_table(&id, schema.to_create_json()).await?;
                return self.open(&id).await;
            }
            Registry::FileSystem(w) | Registry::Jdbc(w, _) => {
                let io = w.table_io(&id.database, &id.table);
                let location = io.location().to_string();
                (io, location)
            }
            Registry::Hive(_, h) => {
                let location = h.new_table_location(&id, &spec.options).await?;
                (h.table_io(&location)?, location)
            }
        };
        // Java's JDBC and Hive catalogs write schema-0 under the table's lock.
        let mut created = None;
        let create = async {
            created = Some(create_table_of_fields(io.clone(), fields, &spec).await?);
            Ok(())
        };
        match self.table_lock(&id) {
            Some(lock) => lock.run_locked(Box::pin(create)).await?,
            None => create.await?,
        }
        let table = created.ok_or_else(|| Error::Internal("table creation did not run".into()))?;
        let registered = match &self.registry {
            Registry::Jdbc(_, t) => t.register_table(&id.database, &id.table).await,
            Registry::Hive(_, h) => {
                h.register_table(&id, table.schema(), &location, table.env().now_millis())
                    .await
            }
            Registry::FileSystem(_) | Registry::Rest { .. } => Ok(()),
        };
        if let Err(e) = registered {
            // Java deletes the directory when the catalog cannot register the table.
            let _ = io.delete_dir("").await;
            return Err(e);
        }
        Ok(table.with_environment(self.environment(&id)))
    }

    /// Evolve the schema of `db.table` (under the table's lock, as Java's JDBC catalog; through
    /// the server for a REST catalog; then into the metastore for a Hive catalog).
    pub async fn alter_table(&self, identifier: &str, changes: &[SchemaChange]) -> Result<Table> {
        let table = self.open(&Identifier::table(identifier)?).await?;
        alter_table(&table, changes).await
    }

    /// Drop a table and delete its files (a REST server deletes them itself; a Hive
    /// Metastore's external table keeps them). As Java's `dropTable`, the directories of the
    /// external roots any schema of any branch lists (`data-file.external-paths`) are deleted
    /// with the table's.
    pub async fn drop_table(&self, identifier: &str) -> Result<()> {
        let id = Identifier::table(identifier)?;
        if let Registry::Rest { server, .. } = &self.registry {
            return server.drop_table(&id).await;
        }
        let table = self.open(&id).await?;
        let external_roots = external_roots(&table).await?;
        match &self.registry {
            Registry::Jdbc(_, t) => {
                t.unregister_table(&id.database, &id.table).await?;
            }
            Registry::Hive(_, h) => {
                let hms = h
                    .table(&id)
                    .await?
                    .ok_or_else(|| self.table_not_found(&id))?;
                return h.drop_table(&id, &hms, table.io(), &external_roots).await;
            }
            Registry::FileSystem(_) | Registry::Rest { .. } => {}
        }
        delete_table_dirs(table.io(), &external_roots).await
    }

    /// Rename `from` to `to` (database included): the table directory moves, and the JDBC
    /// catalog's row is renamed first (Java `renameTableImpl`); a REST server renames itself; a
    /// Hive Metastore renames the table (and moves a managed table's directory) itself.
    pub async fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        let (from, to) = (Identifier::table(from)?, Identifier::table(to)?);
        if !self.table_exists(&from).await? {
            return Err(self.table_not_found(&from));
        }
        self.require_database(&to.database).await?;
        if self.table_exists(&to).await? {
            return Err(Error::AlreadyExists(format!("table '{to}'")));
        }
        let (a, b) = (
            (from.database.as_str(), from.table.as_str()),
            (to.database.as_str(), to.table.as_str()),
        );
        match &self.registry {
            Registry::Rest { server, .. } => server.rename_table(&from, &to).await,
            Registry::Jdbc(w, t) => {
                t.rename_table(a, b).await?;
                w.move_table(a, b).await
            }
            Registry::FileSystem(w) => w.move_table(a, b).await,
            Registry::Hive(_, h) => h.rename_table(&from, &to).await,
        }
    }
}

/// Every external root (`data-file.external-paths`) a schema of any branch of `table` lists
/// (Java `AbstractCatalog.dropTable`).
async fn external_roots(table: &Table) -> Result<Vec<String>> {
    let mut roots = std::collections::BTreeSet::new();
    for (name, _) in crate::branch::all_branch_ios(table.io()).await? {
        let branch = table.open_other_branch(&name).await?;
        for schema in branch.schemas().await? {
            roots.extend(
                schema
                    .options
                    .data_file_external_roots()
                    .map_err(|e| Error::from_spec("table options", e))?,
            );
        }
    }
    Ok(roots.into_iter().collect())
}

/// Delete a dropped table's directory and its external roots' (Java `dropTableImpl`).
pub(crate) async fn delete_table_dirs(io: &FileIO, external_roots: &[String]) -> Result<()> {
    io.delete_dir("").await?;
    for root in external_roots {
        io.delete_dir(root).await?;
    }
    Ok(())
}
