//! The warehouse laid out as Paimon's `FileSystemCatalog` lays it out: `<database>.db/`
//! directories, each holding table directories. Every catalog keeps its tables there (the JDBC
//! catalog adds a registry of names, see [`super::jdbc`]); this module also answers the
//! filesystem catalog's listings.
//!
//! Invariants: database and table names are single path segments (no `/`, no `.`/`..`, no
//! control characters), so an identifier can never address a path outside the warehouse; a
//! table directory holds a table iff its `schema/` holds a schema file.

use crate::error::{Error, Result};
use crate::io::FileIO;

const DB_SUFFIX: &str = ".db";

/// Refuse a database or table name that is not one safe path segment.
pub(crate) fn check_name(kind: &str, name: &str) -> Result<()> {
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

/// A warehouse root.
#[derive(Clone, Debug)]
pub(crate) struct Warehouse {
    io: FileIO,
}

impl Warehouse {
    pub(crate) fn new(io: FileIO) -> Warehouse {
        Warehouse { io }
    }

    pub(crate) fn io(&self) -> &FileIO {
        &self.io
    }

    /// `<database>.db`, relative to the warehouse.
    pub(crate) fn db_dir(name: &str) -> String {
        format!("{name}{DB_SUFFIX}")
    }

    /// The database's location (Java `newDatabasePath`).
    pub(crate) fn db_location(&self, name: &str) -> String {
        self.io.display(&Self::db_dir(name))
    }

    /// The root of table `database.table` (Java `getTableLocation`; it need not exist).
    pub(crate) fn table_io(&self, database: &str, table: &str) -> FileIO {
        self.io
            .child(&format!("{}/{table}", Self::db_dir(database)))
    }

    /// Databases that have a directory, sorted.
    pub(crate) async fn list_databases(&self) -> Result<Vec<String>> {
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

    pub(crate) async fn create_database_dir(&self, name: &str) -> Result<()> {
        self.io.create_dir(&Self::db_dir(name)).await
    }

    pub(crate) async fn delete_database_dir(&self, name: &str) -> Result<()> {
        self.io.delete_dir(&Self::db_dir(name)).await
    }

    /// Tables of a database that have a schema file, sorted.
    pub(crate) async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
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

    /// Whether the table directory holds a table.
    pub(crate) async fn has_table(&self, database: &str, table: &str) -> Result<bool> {
        Ok(!self
            .table_io(database, table)
            .list_dir("schema")
            .await?
            .is_empty())
    }

    /// Move a table's directory (Java `fileIO.rename` of the table path), see [`move_dir`].
    pub(crate) async fn move_table(&self, from: (&str, &str), to: (&str, &str)) -> Result<()> {
        move_dir(&self.table_io(from.0, from.1), &self.table_io(to.0, to.1)).await
    }
}

/// Move the directory `src` is rooted at to `dst`'s root (Java `fileIO.rename`): one rename on
/// local storage; on object stores every object is copied (never over an existing one), then
/// the old ones are deleted, as Hadoop's S3A rename does.
pub(crate) async fn move_dir(src: &FileIO, dst: &FileIO) -> Result<()> {
    if let (Some(a), Some(b)) = (src.local_root(), dst.local_root()) {
        if b.exists() {
            return Err(Error::AlreadyExists(format!(
                "table directory {}",
                dst.location()
            )));
        }
        if let Some(parent) = b.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| io_error(dst.location(), e))?;
        }
        return tokio::fs::rename(a, b)
            .await
            .map_err(|e| io_error(src.location(), e));
    }
    for file in src.list_recursive("").await? {
        let copied = dst
            .put_if_absent(&file.path, src.read(&file.path).await?)
            .await?;
        if !copied {
            return Err(Error::AlreadyExists(format!(
                "{} (renaming {})",
                dst.display(&file.path),
                src.location()
            )));
        }
    }
    src.delete_dir("").await
}

fn io_error(path: &str, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_string(),
        source: object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(e),
        },
    }
}
