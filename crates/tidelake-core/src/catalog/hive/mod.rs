//! Paimon's Hive catalog (Java `HiveCatalog`, `HiveCatalogLock`): databases and tables kept in
//! a Hive Metastore, registered there exactly as Java registers them, so Java (and Hive, Spark,
//! Trino through Paimon's Hive connector) and tidelake open the same tables; schemas, snapshots
//! and data stay in the files at each table's location.
//!
//! Modules: `thrift` (the binary protocol as a value tree), `client` (the metastore calls),
//! `model` (the HMS database, table and partition objects of Paimon tables, and what a
//! migration reads of Hive's own tables), `types` (Hive column types), `lock` (the commit
//! lock: metastore table locks), `sync` (what the metastore learns after schema changes and
//! commits), `iceberg` (a Paimon table's Iceberg metadata registered as an Iceberg table).
//!
//! Invariants:
//! * the metastore is the registry: a database exists iff the metastore has it; a table exists
//!   iff the metastore has a Paimon table of that name (other Hive tables are listed by Java as
//!   format tables, and refused here), and it lives at its storage descriptor's location;
//! * a new table's schema-0 is written (under the table's lock) before the metastore registers
//!   it, and its directory is deleted again if the metastore refuses (Java `createTableImpl`);
//!   dropping a managed table deletes its directory after the metastore dropped it, an external
//!   one keeps its files; renaming moves the directory only if the metastore did not;
//! * the files stay the truth for schemas: the metastore's columns and parameters follow each
//!   schema change of the main branch ([`sync`]).

pub(crate) mod client;
pub(crate) mod iceberg;
pub(crate) mod lock;
pub(crate) mod model;
pub(crate) mod sync;
pub(crate) mod thrift;
pub(crate) mod types;

use std::collections::BTreeMap;
use std::sync::Arc;

use tidelake_spec::catalog_options::{CatalogOptions, LOCATION_IN_PROPERTIES, TABLE_TYPE};
use tidelake_spec::schema::TableSchema;

use client::HmsClient;
use model::{HmsDatabase, HmsPartition, HmsTable, NewTable, LOCATION};
use sync::HiveTableSync;

use super::filesystem::move_dir;
use super::identifier::Identifier;
use super::options_error;
use crate::error::{Error, Result};
use crate::io::{paimon_s3, Env, FileIO, StorageOptions};
use crate::snapshot_commit::MetastoreSync;

/// Java `CoreOptions.PATH`: a table at a path of its own (an external table).
const PATH_OPTION: &str = "path";
/// Java `ifPurge` of a dropped table's environment.
const IF_PURGE: &str = "ifPurge";

/// The Hive user tidelake acts as (Java `UserGroupInformation.getCurrentUser()`: Hadoop's
/// `HADOOP_USER_NAME`, else the login name).
pub(crate) fn current_user() -> String {
    ["HADOOP_USER_NAME", "USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .or_else(login_name)
        .unwrap_or_else(|| "tidelake".to_string())
}

/// The name of this process's user in `/etc/passwd` (what Java's login module reads).
#[cfg(unix)]
fn login_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&uid.as_str()))
        .and_then(|f| f.first().map(|n| n.to_string()))
}

#[cfg(not(unix))]
fn login_name() -> Option<String> {
    None
}

/// This machine's name, for the metastore's record of who holds a lock.
pub(crate) fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// A Hive Metastore and how its tables' files are reached.
#[derive(Clone, Debug)]
pub(crate) struct HiveCatalog {
    client: HmsClient,
    /// The catalog options (Paimon's S3 options among them reach the tables' stores).
    options: CatalogOptions,
    storage: StorageOptions,
    sync_all: bool,
}

impl HiveCatalog {
    /// The catalog of `options` (`uri` required), once the metastore answered; refuses the
    /// Hive catalog options tidelake does not implement.
    pub(crate) async fn connect(
        options: &CatalogOptions,
        storage: &StorageOptions,
    ) -> Result<HiveCatalog> {
        let uri = options.uri().ok_or_else(|| {
            Error::invalid(
                "a Hive catalog needs 'uri', the metastore's thrift://host:port \
                 (a hive-site.xml is not read)",
            )
        })?;
        if options
            .get(TABLE_TYPE)
            .is_some_and(|t| !t.eq_ignore_ascii_case("managed"))
        {
            return Err(Error::Unsupported(format!(
                "'{TABLE_TYPE}' = '{}': tidelake creates managed Hive tables only",
                options.get(TABLE_TYPE).unwrap_or_default()
            )));
        }
        if options
            .get(LOCATION_IN_PROPERTIES)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            return Err(Error::Unsupported(format!(
                "'{LOCATION_IN_PROPERTIES}': tidelake keeps table locations in the storage descriptor"
            )));
        }
        let client = HmsClient::new(uri)?;
        client.all_databases().await?;
        Ok(HiveCatalog {
            client,
            options: options.clone(),
            storage: storage.clone(),
            sync_all: options.sync_all_properties().map_err(options_error)?,
        })
    }

    pub(crate) fn client(&self) -> &HmsClient {
        &self.client
    }

    pub(crate) async fn list_databases(&self) -> Result<Vec<String>> {
        let mut names = self.client.all_databases().await?;
        names.sort();
        Ok(names)
    }

    pub(crate) async fn database_exists(&self, name: &str) -> Result<bool> {
        Ok(self.client.database(name).await?.is_some())
    }

    async fn database(&self, name: &str) -> Result<HmsDatabase> {
        self.client
            .database(name)
            .await?
            .map(HmsDatabase)
            .ok_or_else(|| {
                Error::not_found("database", format!("'{name}' in {}", self.client.uri()))
            })
    }

    /// Java `createDatabaseImpl`: at `location` unless the properties name one.
    pub(crate) async fn create_database(
        &self,
        name: &str,
        location: &str,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        let mut properties = properties.clone();
        properties
            .entry(LOCATION.to_string())
            .or_insert_with(|| location.to_string());
        self.client
            .create_database(HmsDatabase::new(name, &properties).0)
            .await
    }

    pub(crate) async fn database_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        Ok(self.database(name).await?.properties())
    }

    /// Java `alterDatabaseImpl`: the parameters changed, then sent as a new database (so
    /// `comment`, `owner` and `location` set here go to their fields).
    pub(crate) async fn alter_database(
        &self,
        name: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<()> {
        let mut parameters = self.database(name).await?.parameters();
        parameters.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        for key in remove {
            parameters.remove(key);
        }
        self.client
            .alter_database(name, HmsDatabase::new(name, &parameters).0)
            .await
    }

    /// Java `dropDatabaseImpl`: the metastore drops the database with its tables and files.
    pub(crate) async fn drop_database(&self, name: &str) -> Result<()> {
        self.client.drop_database(name).await
    }

    /// The Paimon tables of a database, sorted (Java `listTablesImpl`, format tables aside).
    pub(crate) async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        let names = self.client.all_tables(database).await?;
        let mut tables = Vec::new();
        // Java `getBatchGetTableSize`'s default
        for batch in names.chunks(300) {
            for table in self.client.tables(database, batch).await? {
                let table = HmsTable(table);
                if table.is_paimon() {
                    tables.extend(table.name());
                }
            }
        }
        tables.sort();
        Ok(tables)
    }

    /// Every table of a database, Paimon's or not (Java `client.getAllTables`: a clone's Hive
    /// sources), sorted.
    pub(crate) async fn all_tables(&self, database: &str) -> Result<Vec<String>> {
        let mut names = self.client.all_tables(database).await?;
        names.sort();
        Ok(names)
    }

    /// Whether the metastore has any table of that name.
    pub(crate) async fn has_table(&self, id: &Identifier) -> Result<bool> {
        Ok(self.client.table(&id.database, &id.table).await?.is_some())
    }

    /// The Paimon table `id` names (`None` if the metastore has no table of that name; a Hive
    /// table that is not Paimon's is refused).
    pub(crate) async fn table(&self, id: &Identifier) -> Result<Option<HmsTable>> {
        let Some(table) = self.client.table(&id.database, &id.table).await? else {
            return Ok(None);
        };
        let table = HmsTable(table);
        if !table.is_paimon() {
            return Err(Error::Unsupported(format!(
                "'{}.{}' is a Hive table, not a Paimon table (Java reads it as a format table)",
                id.database, id.table
            )));
        }
        Ok(Some(table))
    }

    /// A Hive table that is not Paimon's, with its partitions (a migration's source, Java
    /// `HiveMigrator`): [`Error::NotFound`] when the metastore has no table of that name,
    /// [`Error::InvalidArgument`] for a Paimon table.
    pub(crate) async fn hive_table(
        &self,
        id: &Identifier,
    ) -> Result<(HmsTable, Vec<HmsPartition>)> {
        let Some(table) = self.client.table(&id.database, &id.table).await? else {
            return Err(Error::not_found("Hive table", format!("'{id}'")));
        };
        let table = HmsTable(table);
        if table.is_paimon() {
            return Err(Error::invalid(format!("'{id}' is a Paimon table already")));
        }
        let partitions = self.client.partitions(&id.database, &id.table).await?;
        Ok((table, partitions.into_iter().map(HmsPartition).collect()))
    }

    /// Drop a Hive table that is not Paimon's, its data with it unless it is external (Java
    /// `client.dropTable(db, table, true, true)`).
    pub(crate) async fn drop_hive_table(&self, id: &Identifier) -> Result<()> {
        self.client
            .drop_table(&id.database, &id.table, true, &BTreeMap::new())
            .await
    }

    /// The files of a table at `location`, with the catalog's storage options.
    pub(crate) fn table_io(&self, location: &str) -> Result<FileIO> {
        let storage = paimon_s3::storage_options(location, self.options.iter(), &self.storage)?;
        FileIO::open_with(location, &storage)
    }

    /// Where a new table goes: its database's location, then its name (Java
    /// `getTableLocation(identifier, null)`).
    pub(crate) async fn new_table_location(
        &self,
        id: &Identifier,
        options: &[(String, String)],
    ) -> Result<String> {
        if options.iter().any(|(k, _)| k == PATH_OPTION) {
            return Err(Error::Unsupported(format!(
                "table option '{PATH_OPTION}': tidelake creates Hive tables in their database's location"
            )));
        }
        let location = self
            .database(&id.database)
            .await?
            .location()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "database '{}' has no location in the metastore",
                    id.database
                ))
            })?;
        Ok(format!("{}/{}", location.trim_end_matches('/'), id.table))
    }

    /// Register a new table whose schema-0 is at `location` (Java `createHiveTable`).
    pub(crate) async fn register_table(
        &self,
        id: &Identifier,
        schema: &TableSchema,
        location: &str,
        now_millis: i64,
    ) -> Result<()> {
        let new = NewTable {
            database: &id.database,
            name: &id.table,
            location,
            owner: &current_user(),
            now_seconds: i32::try_from(now_millis / 1000).unwrap_or(i32::MAX),
            sync_all: self.sync_all,
        };
        self.client
            .create_table(HmsTable::new(&new, schema)?.0)
            .await
    }

    /// Java `dropTableImpl`: the metastore drops the table (and the files of a managed one,
    /// then the directory and the external roots go too).
    pub(crate) async fn drop_table(
        &self,
        id: &Identifier,
        table: &HmsTable,
        io: &FileIO,
        external_roots: &[String],
    ) -> Result<()> {
        let context = BTreeMap::from([(IF_PURGE.to_string(), "TRUE".to_string())]);
        let managed = !table.is_external();
        self.client
            .drop_table(&id.database, &id.table, managed, &context)
            .await?;
        if managed {
            super::delete_table_dirs(io, external_roots).await?;
        }
        Ok(())
    }

    /// Java `renameTableImpl`: the metastore renames the table (Hive's alter handler moves a
    /// managed table's directory to the new name's location itself); if it gave the table a new
    /// location but left the files, they are moved here.
    pub(crate) async fn rename_table(&self, from: &Identifier, to: &Identifier) -> Result<()> {
        let table = self
            .table(from)
            .await?
            .ok_or_else(|| Error::not_found("table", format!("'{from}'")))?;
        let old_location = table.location().unwrap_or_default();
        let renamed = table.renamed(&to.database, &to.table);
        self.client
            .alter_table(&from.database, &from.table, renamed.0, &BTreeMap::new())
            .await?;
        let mut moved = self
            .table(to)
            .await?
            .ok_or_else(|| Error::not_found("table", format!("'{to}' after renaming '{from}'")))?;
        let new_location = moved.location().unwrap_or_default();
        let old_io = self.table_io(&old_location)?;
        if moved.is_external()
            || new_location == old_location
            || old_io.list_dir("schema").await?.is_empty()
        {
            return Ok(());
        }
        move_dir(&old_io, &self.table_io(&new_location)?).await?;
        moved.set_location(&new_location);
        self.client
            .alter_table(&to.database, &to.table, moved.0, &BTreeMap::new())
            .await
    }

    /// What the metastore learns of table `id`'s changes (partitions created at `env`'s time).
    pub(crate) fn sync(&self, id: &Identifier, env: &Env) -> Arc<dyn MetastoreSync> {
        Arc::new(HiveTableSync {
            client: self.client.clone(),
            database: id.database.clone(),
            table: id.table.clone(),
            sync_all: self.sync_all,
            env: env.clone(),
        })
    }
}
