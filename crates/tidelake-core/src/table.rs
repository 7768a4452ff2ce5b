//! A Paimon table opened from storage: its location, schema history and snapshot manager.
//!
//! Invariants: a table exists iff its `schema/` directory holds at least one `schema-N` file;
//! the latest schema is the highest N (Java `SchemaManager.latest`); schema files are immutable,
//! so every loaded schema is cached for the lifetime of the [`Table`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::schema::{parse_schema_file_name, schema_file_name, TableSchema};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::snapshots::SnapshotManager;

const SCHEMA_DIR: &str = "schema";

/// An opened table. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Table {
    io: FileIO,
    schema: Arc<TableSchema>,
    schema_cache: Arc<Mutex<HashMap<i64, Arc<TableSchema>>>>,
}

impl Table {
    /// Open the table rooted at `location`.
    pub async fn open(location: &str) -> Result<Table> {
        Table::open_io(FileIO::open(location)?).await
    }

    /// Open the table rooted at `io`.
    pub async fn open_io(io: FileIO) -> Result<Table> {
        let ids = if io.root_is_file() { Vec::new() } else { list_schema_ids(&io).await? };
        let Some(&latest) = ids.last() else {
            return Err(Error::not_found(
                "table",
                format!("no Paimon table at {} (no schema/schema-N file)", io.location()),
            ));
        };
        let schema = Arc::new(read_schema(&io, latest).await?);
        let cache = HashMap::from([(latest, schema.clone())]);
        Ok(Table { io, schema, schema_cache: Arc::new(Mutex::new(cache)) })
    }

    pub fn io(&self) -> &FileIO {
        &self.io
    }

    pub fn location(&self) -> &str {
        self.io.location()
    }

    /// The latest schema, as of opening the table.
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    pub fn snapshot_manager(&self) -> SnapshotManager {
        SnapshotManager::new(self.io.clone())
    }

    /// Schema `id`, loaded once and cached.
    pub async fn schema_by_id(&self, id: i64) -> Result<Arc<TableSchema>> {
        if let Some(s) = self.cached_schema(id) {
            return Ok(s);
        }
        let schema = Arc::new(read_schema(&self.io, id).await?);
        self.schema_cache
            .lock()
            .expect("schema cache lock poisoned")
            .insert(id, schema.clone());
        Ok(schema)
    }

    fn cached_schema(&self, id: i64) -> Option<Arc<TableSchema>> {
        self.schema_cache.lock().expect("schema cache lock poisoned").get(&id).cloned()
    }

    /// Every schema version, ascending by id.
    pub async fn schemas(&self) -> Result<Vec<Arc<TableSchema>>> {
        let ids = list_schema_ids(&self.io).await?;
        stream::iter(ids.into_iter().map(|id| self.schema_by_id(id)))
            .buffered(16)
            .try_collect()
            .await
    }
}

async fn list_schema_ids(io: &FileIO) -> Result<Vec<i64>> {
    let mut ids: Vec<i64> = io
        .list_dir(SCHEMA_DIR)
        .await?
        .iter()
        .filter_map(|f| parse_schema_file_name(f.path.rsplit('/').next().unwrap_or("")))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

async fn read_schema(io: &FileIO, id: i64) -> Result<TableSchema> {
    let rel = format!("{SCHEMA_DIR}/{}", schema_file_name(id));
    let bytes = io.read_opt(&rel).await?.ok_or_else(|| {
        Error::not_found("schema", format!("schema {id} of table {}", io.location()))
    })?;
    TableSchema::from_json(&bytes).map_err(|e| Error::from_spec(io.display(&rel), e))
}
