//! Paimon's JDBC catalog (Java `JdbcCatalog`, `JdbcUtils`): table names and database
//! properties kept in two SQL tables, `paimon_tables` and `paimon_database_properties`, keyed by
//! `catalog-key`, with the same columns and rows Java writes, so Java opens what tidelake
//! registers and the reverse. Schemas, snapshots and data stay in the warehouse, laid out as the
//! filesystem catalog lays them out.
//!
//! Modules: `client` (the SQLite / PostgreSQL connection), `lock` (the commit lock,
//! `paimon_distributed_locks`).
//!
//! Invariants: a database exists iff it has a row in either table (Java
//! `JdbcUtils.databaseExists`); a table exists iff it has a `paimon_tables` row; a database
//! created here has the properties `exists=true` and `location=<warehouse>/<db>.db`, as Java's.

pub(crate) mod client;
pub(crate) mod lock;

use std::collections::BTreeMap;

use client::{Arg, JdbcClient};

use crate::error::{Error, Result};

pub(crate) const TABLES: &str = "paimon_tables";
pub(crate) const DATABASE_PROPERTIES: &str = "paimon_database_properties";
/// The property marking a database that has no table yet (Java `DATABASE_EXISTS_PROPERTY`).
const EXISTS_PROPERTY: &str = "exists";
/// Java `Catalog.DB_LOCATION_PROP`.
pub(crate) const LOCATION_PROPERTY: &str = "location";

const CREATE_TABLES: &str = "CREATE TABLE paimon_tables(catalog_key VARCHAR(255) NOT NULL,\
    database_name VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL, \
    PRIMARY KEY (catalog_key, database_name, table_name))";
const CREATE_DATABASE_PROPERTIES: &str = "CREATE TABLE paimon_database_properties(\
    catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,\
    property_key VARCHAR(255),property_value VARCHAR(1000),\
    PRIMARY KEY (catalog_key, database_name, property_key))";

/// The catalog's rows in the shared tables.
#[derive(Clone, Debug)]
pub(crate) struct JdbcTables {
    client: JdbcClient,
    key: String,
}

impl JdbcTables {
    /// Create the two tables if missing (Java `initializeCatalogTablesIfNeed`).
    pub(crate) async fn open(client: JdbcClient, catalog_key: &str) -> Result<JdbcTables> {
        client.create_table_if_absent(TABLES, CREATE_TABLES).await?;
        client
            .create_table_if_absent(DATABASE_PROPERTIES, CREATE_DATABASE_PROPERTIES)
            .await?;
        Ok(JdbcTables {
            client,
            key: catalog_key.to_string(),
        })
    }

    async fn column(&self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<String>> {
        let rows = self.client.query(sql, args).await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect())
    }

    /// Java `listDatabases`: the databases of either table, sorted.
    pub(crate) async fn list_databases(&self) -> Result<Vec<String>> {
        let key = Arg::Text(&self.key);
        let mut dbs = self
            .column(
                "SELECT DISTINCT database_name FROM paimon_tables WHERE catalog_key = ?",
                &[key],
            )
            .await?;
        dbs.extend(
            self.column(
                "SELECT DISTINCT database_name FROM paimon_database_properties WHERE catalog_key = ?",
                &[key],
            )
            .await?,
        );
        dbs.sort();
        dbs.dedup();
        Ok(dbs)
    }

    pub(crate) async fn database_exists(&self, name: &str) -> Result<bool> {
        let args = [Arg::Text(&self.key), Arg::Text(name)];
        let in_tables = "SELECT database_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ? LIMIT 1";
        let in_properties = "SELECT database_name FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ?";
        Ok(!self.column(in_tables, &args).await?.is_empty()
            || !self.column(in_properties, &args).await?.is_empty())
    }

    /// The database's rows: `exists` and `location` first, then `properties`.
    pub(crate) async fn create_database(
        &self,
        name: &str,
        location: &str,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        let mut all = BTreeMap::from([
            (EXISTS_PROPERTY.to_string(), "true".to_string()),
            (LOCATION_PROPERTY.to_string(), location.to_string()),
        ]);
        all.extend(properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.insert_properties(name, &all).await
    }

    /// One multi-row insert (Java `insertProperties`): all of them or none.
    async fn insert_properties(
        &self,
        database: &str,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        if properties.is_empty() {
            return Ok(());
        }
        let rows = vec!["(?, ?, ?, ?)"; properties.len()].join(", ");
        let sql = format!(
            "INSERT INTO paimon_database_properties (catalog_key, database_name, property_key, property_value) VALUES {rows}"
        );
        let args: Vec<Arg<'_>> = properties
            .iter()
            .flat_map(|(k, v)| {
                [
                    Arg::Text(&self.key),
                    Arg::Text(database),
                    Arg::Text(k),
                    Arg::Text(v),
                ]
            })
            .collect();
        self.client.execute(&sql, &args).await.map(|_| ())
    }

    /// The stored properties of a database (with `exists`).
    async fn stored_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        let rows = self
            .client
            .query(
                "SELECT property_key, property_value FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ?",
                &[Arg::Text(&self.key), Arg::Text(name)],
            )
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let mut r = r.into_iter();
                Some((r.next()??, r.next().flatten().unwrap_or_default()))
            })
            .collect())
    }

    /// Java `getDatabaseImpl`: the properties without `exists`.
    pub(crate) async fn database_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        let mut props = self.stored_properties(name).await?;
        props.remove(EXISTS_PROPERTY);
        Ok(props)
    }

    /// Java `alterDatabaseImpl`: set and remove properties.
    pub(crate) async fn alter_database(
        &self,
        name: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<()> {
        let existing = self.stored_properties(name).await?;
        let (updates, inserts): (BTreeMap<_, _>, BTreeMap<_, _>) = set
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .partition(|(k, _)| existing.contains_key(k));
        self.insert_properties(name, &inserts).await?;
        for (k, v) in &updates {
            self.client
                .execute(
                    "UPDATE paimon_database_properties SET property_value = ? WHERE catalog_key = ? AND database_name = ? AND property_key = ?",
                    &[Arg::Text(v), Arg::Text(&self.key), Arg::Text(name), Arg::Text(k)],
                )
                .await?;
        }
        for k in remove.iter().filter(|k| existing.contains_key(*k)) {
            self.client
                .execute(
                    "DELETE FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ? AND property_key = ?",
                    &[Arg::Text(&self.key), Arg::Text(name), Arg::Text(k)],
                )
                .await?;
        }
        Ok(())
    }

    /// Java `dropDatabaseImpl`: the database's table rows and properties.
    pub(crate) async fn drop_database(&self, name: &str) -> Result<()> {
        let args = [Arg::Text(&self.key), Arg::Text(name)];
        self.client
            .execute(
                "DELETE FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
                &args,
            )
            .await?;
        self.client
            .execute(
                "DELETE FROM paimon_database_properties WHERE catalog_key = ? AND database_name = ?",
                &args,
            )
            .await?;
        Ok(())
    }

    /// The tables of a database, sorted.
    pub(crate) async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        let mut tables = self
            .column(
                "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ?",
                &[Arg::Text(&self.key), Arg::Text(database)],
            )
            .await?;
        tables.sort();
        Ok(tables)
    }

    pub(crate) async fn table_exists(&self, database: &str, table: &str) -> Result<bool> {
        let rows = self
            .column(
                "SELECT table_name FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                &[Arg::Text(&self.key), Arg::Text(database), Arg::Text(table)],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// Register a table (Java `DO_COMMIT_CREATE_TABLE_SQL`); a second registration of the same
    /// name is [`Error::AlreadyExists`].
    pub(crate) async fn register_table(&self, database: &str, table: &str) -> Result<()> {
        let inserted = self
            .client
            .execute(
                "INSERT INTO paimon_tables (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                &[Arg::Text(&self.key), Arg::Text(database), Arg::Text(table)],
            )
            .await;
        match inserted {
            Ok(1) => Ok(()),
            _ if self.table_exists(database, table).await? => {
                Err(Error::AlreadyExists(format!("table '{database}.{table}'")))
            }
            Ok(n) => Err(Error::Internal(format!(
                "registering {database}.{table} changed {n} rows of {TABLES}"
            ))),
            Err(e) => Err(e),
        }
    }

    /// Whether a row was deleted.
    pub(crate) async fn unregister_table(&self, database: &str, table: &str) -> Result<bool> {
        let n = self
            .client
            .execute(
                "DELETE FROM paimon_tables WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                &[Arg::Text(&self.key), Arg::Text(database), Arg::Text(table)],
            )
            .await?;
        Ok(n > 0)
    }

    /// Java `JdbcUtils.updateTable`.
    pub(crate) async fn rename_table(&self, from: (&str, &str), to: (&str, &str)) -> Result<()> {
        let updated = self
            .client
            .execute(
                "UPDATE paimon_tables SET database_name = ?, table_name = ? WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                &[Arg::Text(to.0), Arg::Text(to.1), Arg::Text(&self.key), Arg::Text(from.0), Arg::Text(from.1)],
            )
            .await;
        match updated {
            Ok(1) => Ok(()),
            Ok(_) => Err(Error::not_found(
                "table",
                format!("'{}.{}'", from.0, from.1),
            )),
            Err(_) if self.table_exists(to.0, to.1).await? => {
                Err(Error::AlreadyExists(format!("table '{}.{}'", to.0, to.1)))
            }
            Err(e) => Err(e),
        }
    }
}
