//! A filesystem catalog laid out as Paimon's (`FileSystemCatalog`): a warehouse directory
//! holding `<database>.db/` directories, each holding table directories.
//!
//! Invariants: database and table names are single path segments (no `/`, no `.`/`..`, no
//! control characters), so an identifier can never address a path outside the warehouse; a
//! table exists iff its directory holds a schema file.

use arrow_schema::Schema as ArrowSchema;

use crate::branch::{split_branch_suffix, MAIN_BRANCH};
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::schema_change::{create_table, TableSpec};
use crate::table::Table;

const DB_SUFFIX: &str = ".db";

/// A warehouse of databases and tables.
#[derive(Clone, Debug)]
pub struct Catalog {
    io: FileIO,
}

fn check_name(kind: &str, name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.starts_with('.')
        || name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        return Err(Error::invalid(format!("invalid {kind} name '{name}'")));
    }
    Ok(())
}

/// Split `db.table` into its two names.
pub fn parse_identifier(identifier: &str) -> Result<(String, String)> {
    let (db, table) = identifier.split_once('.').ok_or_else(|| {
        Error::invalid(format!(
            "table identifier '{identifier}' must be 'database.table'"
        ))
    })?;
    check_name("database", db)?;
    check_name("table", table)?;
    Ok((db.to_string(), table.to_string()))
}

impl Catalog {
    pub fn new(io: FileIO) -> Catalog {
        Catalog { io }
    }

    pub fn location(&self) -> &str {
        self.io.location()
    }

    fn db_dir(name: &str) -> String {
        format!("{name}{DB_SUFFIX}")
    }

    pub async fn list_databases(&self) -> Result<Vec<String>> {
        let mut dbs: Vec<String> = self
            .io
            .list_subdirs("")
            .await?
            .into_iter()
            .filter_map(|d| d.strip_suffix(DB_SUFFIX).map(str::to_string))
            .collect();
        dbs.sort();
        Ok(dbs)
    }

    pub async fn database_exists(&self, name: &str) -> Result<bool> {
        check_name("database", name)?;
        Ok(self.list_databases().await?.iter().any(|d| d == name))
    }

    pub async fn create_database(&self, name: &str, ignore_if_exists: bool) -> Result<()> {
        check_name("database", name)?;
        if self.database_exists(name).await? {
            if ignore_if_exists {
                return Ok(());
            }
            return Err(Error::AlreadyExists(format!("database '{name}'")));
        }
        self.io.create_dir(&Self::db_dir(name)).await
    }

    /// Drop a database; with `cascade` its tables too, else it must be empty.
    pub async fn drop_database(&self, name: &str, cascade: bool) -> Result<()> {
        if !self.database_exists(name).await? {
            return Err(Error::not_found(
                "database",
                format!("'{name}' in {}", self.location()),
            ));
        }
        let tables = self.list_tables(name).await?;
        if !tables.is_empty() && !cascade {
            return Err(Error::invalid(format!(
                "database '{name}' is not empty ({} tables); drop with cascade",
                tables.len()
            )));
        }
        self.io.delete_dir(&Self::db_dir(name)).await
    }

    /// Tables of a database, sorted.
    pub async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        check_name("database", database)?;
        let db = Self::db_dir(database);
        let mut tables = Vec::new();
        for t in self.io.list_subdirs(&db).await? {
            if !self
                .io
                .list_dir(&format!("{db}/{t}/schema"))
                .await?
                .is_empty()
            {
                tables.push(t);
            }
        }
        tables.sort();
        Ok(tables)
    }

    /// The storage handle of table `db.table` (it need not exist).
    pub fn table_io(&self, identifier: &str) -> Result<FileIO> {
        let (db, table) = parse_identifier(identifier)?;
        Ok(self.io.child(&format!("{}/{table}", Self::db_dir(&db))))
    }

    /// Open `db.table`, or a branch of it as `db.table$branch_<name>` (Paimon's identifier).
    pub async fn get_table(&self, identifier: &str) -> Result<Table> {
        let (table, branch) = split_branch_suffix(identifier);
        Table::open_branch(self.table_io(table)?, branch.unwrap_or(MAIN_BRANCH)).await
    }

    /// Create `db.table`; the database must exist.
    pub async fn create_table(
        &self,
        identifier: &str,
        schema: &ArrowSchema,
        spec: &TableSpec,
    ) -> Result<Table> {
        let (db, _) = parse_identifier(identifier)?;
        if !self.database_exists(&db).await? {
            return Err(Error::not_found(
                "database",
                format!("'{db}' in {}", self.location()),
            ));
        }
        create_table(self.table_io(identifier)?, schema, spec).await
    }

    pub async fn drop_table(&self, identifier: &str) -> Result<()> {
        let table = self.get_table(identifier).await?;
        table.io().delete_dir("").await
    }
}
