//! A Paimon table opened from storage on one branch: its location, schema history and snapshot
//! manager.
//!
//! Invariants: a table (or branch) exists iff its `schema/` directory holds at least one
//! `schema-N` file; the latest schema is the highest N (Java `SchemaManager.latest`); schema
//! files are immutable, so every loaded schema is cached for the lifetime of the [`Table`].
//! Data, manifest, index and statistics files live under [`Table::io`] (the table root, shared
//! by all branches); snapshots, schemas, tags, changelogs and consumers under
//! [`Table::branch_io`] (see [`crate::branch`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::schema::{parse_schema_file_name, schema_file_name, TableSchema};

use crate::branch::{branch_io, MAIN_BRANCH};
use crate::error::{Error, Result};
use crate::io::{Env, FileIO};
use crate::snapshot_commit::CatalogEnvironment;
use crate::snapshots::SnapshotManager;

pub(crate) const SCHEMA_DIR: &str = "schema";

/// An opened table. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Table {
    io: FileIO,
    branch: String,
    branch_io: FileIO,
    schema: Arc<TableSchema>,
    schema_cache: Arc<Mutex<HashMap<i64, Arc<TableSchema>>>>,
    /// How its snapshot and schema files are created (its catalog's lock or commit endpoint).
    environment: CatalogEnvironment,
}

impl Table {
    /// Open the table rooted at `location`.
    pub async fn open(location: &str) -> Result<Table> {
        Table::open_io(FileIO::open(location)?).await
    }

    /// Open the main branch of the table rooted at `io`.
    pub async fn open_io(io: FileIO) -> Result<Table> {
        Table::open_branch(io, MAIN_BRANCH).await
    }

    /// Open `branch` of the table rooted at `io`; a branch that does not exist is
    /// [`Error::NotFound`] naming it.
    pub async fn open_branch(io: FileIO, branch: &str) -> Result<Table> {
        let meta = branch_io(&io, branch)?;
        let ids = if io.root_is_file() {
            Vec::new()
        } else {
            list_schema_ids(&meta).await?
        };
        let Some(&latest) = ids.last() else {
            if branch != MAIN_BRANCH && !list_schema_ids(&io).await?.is_empty() {
                let existing = crate::branch::list_branches(&io).await?;
                return Err(Error::not_found(
                    "branch",
                    format!(
                        "branch '{branch}' of table {}; existing branches: [{}]",
                        io.location(),
                        existing.join(", ")
                    ),
                ));
            }
            return Err(Error::not_found(
                "table",
                format!(
                    "no Paimon table at {} (no schema/schema-N file)",
                    io.location()
                ),
            ));
        };
        let schema = Arc::new(read_schema(&meta, latest).await?);
        let cache = HashMap::from([(latest, schema.clone())]);
        Ok(Table {
            io,
            branch: branch.to_string(),
            branch_io: meta,
            schema,
            schema_cache: Arc::new(Mutex::new(cache)),
            environment: CatalogEnvironment::default(),
        })
    }

    /// The same branch opened again (latest schema), in the same catalog environment.
    pub async fn reopen(&self) -> Result<Table> {
        let table = Table::open_branch(self.io.clone(), &self.branch).await?;
        Ok(table.with_environment(self.environment.clone()))
    }

    /// Branch `branch` of the same table, in its catalog environment.
    pub async fn open_other_branch(&self, branch: &str) -> Result<Table> {
        let table = Table::open_branch(self.io.clone(), branch).await?;
        Ok(table.with_environment(self.environment.for_branch(branch)))
    }

    /// The same table committing through `environment` (see [`crate::snapshot_commit`]).
    pub fn with_environment(self, environment: CatalogEnvironment) -> Table {
        Table {
            environment,
            ..self
        }
    }

    /// How this table's snapshot and schema files are created.
    pub fn environment(&self) -> &CatalogEnvironment {
        &self.environment
    }

    /// The table root: data, manifest, index and statistics files (shared by all branches).
    pub fn io(&self) -> &FileIO {
        &self.io
    }

    /// The same table reading through `cache` (see [`crate::io::ReadCache`]; `None`: without
    /// one).
    pub fn with_read_cache(&self, cache: Option<Arc<crate::io::ReadCache>>) -> Table {
        Table {
            io: self.io.with_read_cache(cache),
            ..self.clone()
        }
    }

    /// The same table with another clock and id generator for what it writes (see
    /// [`crate::io::env`]).
    pub fn with_env(&self, env: Env) -> Table {
        Table {
            io: self.io.with_env(env.clone()),
            branch_io: self.branch_io.with_env(env),
            ..self.clone()
        }
    }

    /// The clock and id generator of this table.
    pub fn env(&self) -> &Env {
        self.io.env()
    }

    /// The branch's root: its `snapshot/`, `schema/`, `tag/`, `changelog/` and `consumer/`
    /// directories (the table root for the main branch).
    pub fn branch_io(&self) -> &FileIO {
        &self.branch_io
    }

    /// The branch this table was opened on (`main` by default).
    pub fn branch(&self) -> &str {
        &self.branch
    }

    pub fn location(&self) -> &str {
        self.io.location()
    }

    /// The table's full name as Java's `FileStoreTable.fullName` gives it: `db.table` (with
    /// `$branch_<b>` off the main branch) from its catalog, else from a `<db>.db/<table>`
    /// path, else the directory's name alone (Java `SchemaManager.identifierFromPath`).
    pub fn full_name(&self) -> String {
        let location = self.location().trim_end_matches('/');
        let (database, table) = match self.environment.name() {
            Some((database, table)) => (Some(database), table),
            None => {
                let mut segments = location.rsplit('/');
                let table = segments.next().unwrap_or(location);
                let database = segments.next().and_then(|d| d.strip_suffix(".db"));
                (database, table)
            }
        };
        let object = match self.branch() {
            MAIN_BRANCH => table.to_string(),
            branch => format!("{table}$branch_{branch}"),
        };
        match database {
            Some(database) => format!("{database}.{object}"),
            None => object,
        }
    }

    /// The latest schema, as of opening the table.
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    pub fn snapshot_manager(&self) -> SnapshotManager {
        SnapshotManager::new(self.branch_io.clone())
    }

    /// Schema `id`, loaded once and cached.
    pub async fn schema_by_id(&self, id: i64) -> Result<Arc<TableSchema>> {
        if let Some(s) = self.cached_schema(id) {
            return Ok(s);
        }
        let schema = Arc::new(read_schema(&self.branch_io, id).await?);
        self.schema_cache
            .lock()
            .expect("schema cache lock poisoned")
            .insert(id, schema.clone());
        Ok(schema)
    }

    /// Schema `id` if it was read before ([`Self::schema_by_id`]).
    pub(crate) fn cached_schema(&self, id: i64) -> Option<Arc<TableSchema>> {
        self.schema_cache
            .lock()
            .expect("schema cache lock poisoned")
            .get(&id)
            .cloned()
    }

    /// Every schema version, ascending by id.
    pub async fn schemas(&self) -> Result<Vec<Arc<TableSchema>>> {
        let ids = list_schema_ids(&self.branch_io).await?;
        stream::iter(ids.into_iter().map(|id| self.schema_by_id(id)))
            .buffered(16)
            .try_collect()
            .await
    }
}

/// Ids of the schema files under `io` (a table or branch root), ascending.
pub(crate) async fn list_schema_ids(io: &FileIO) -> Result<Vec<i64>> {
    let mut ids: Vec<i64> = io
        .list_dir(SCHEMA_DIR)
        .await?
        .iter()
        .filter_map(|f| parse_schema_file_name(f.path.rsplit('/').next().unwrap_or("")))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// `schema/schema-<id>` relative to a table or branch root.
pub(crate) fn schema_path(id: i64) -> String {
    format!("{SCHEMA_DIR}/{}", schema_file_name(id))
}

async fn read_schema(io: &FileIO, id: i64) -> Result<TableSchema> {
    let rel = schema_path(id);
    let bytes = io.read_opt(&rel).await?.ok_or_else(|| {
        Error::not_found("schema", format!("schema {id} of table {}", io.location()))
    })?;
    TableSchema::from_json(&bytes).map_err(|e| Error::from_spec(io.display(&rel), e))
}
