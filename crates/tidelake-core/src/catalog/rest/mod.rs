//! Paimon's REST catalog (Java `RESTCatalog`, `RESTApi`, the `paimon-open-api` spec): the
//! server keeps databases and tables and creates every snapshot; tidelake writes data and
//! manifest files to the table path the server gives, then asks the server to commit.
//!
//! Modules: `client` (HTTP, paths, errors), `commit` (the commit endpoint as a
//! [`SnapshotCommit`](crate::snapshot_commit::SnapshotCommit)), `token` (data tokens: the
//! server's credentials for a table's files).
//!
//! Invariants: the options in force are the server's `defaults`, then the client's, then the
//! server's `overrides` (Java `ConfigResponse.merge`), and paths use the merged `prefix`; a
//! table is opened at the `path` of its `GET table` answer, committing through the server with
//! the table's `id` (the server refuses a commit for another table of the same name); schema
//! changes of such a table go to the server too (`POST` alter-table), never straight to a schema
//! file the server would not know; with `data-token.enabled` in the merged options, the table's
//! files are reached with the server's data tokens (`token`).

pub(crate) mod client;
pub(crate) mod commit;
pub(crate) mod token;

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use tidelake_spec::catalog_options::{CatalogOptions, REST_PREFIX, TOKEN, TOKEN_PROVIDER};

use crate::error::{Error, Result};
use crate::io::{paimon_s3, Env, FileIO, S3Credentials, StorageOptions};
use client::{RestClient, RestError};
use token::TokenCredentials;

use super::identifier::Identifier;
use super::{Partition, TableTotals};

/// Java `AuthProviderEnum.BEAR`: the one token provider spoken here.
const BEAR_TOKEN_PROVIDER: &str = "bear";

/// `GET database` (Java `GetDatabaseResponse`, the fields used here).
#[derive(Debug, Deserialize)]
struct GetDatabaseResponse {
    #[serde(default)]
    location: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, String>,
}

/// `GET table` (Java `GetTableResponse`, the fields used here).
#[derive(Debug, Deserialize)]
pub(crate) struct TableMetadata {
    /// The table's UUID: every commit names it.
    pub(crate) id: String,
    /// Where the table's files are.
    pub(crate) path: String,
}

/// Java `Partition` as JSON.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RestPartition {
    spec: BTreeMap<String, String>,
    record_count: i64,
    file_size_in_bytes: i64,
    file_count: i64,
    last_file_creation_time: i64,
    #[serde(default)]
    done: bool,
}

impl From<RestPartition> for Partition {
    fn from(p: RestPartition) -> Partition {
        Partition {
            spec: p.spec,
            record_count: p.record_count,
            file_size_in_bytes: p.file_size_in_bytes,
            file_count: p.file_count,
            last_file_creation_time: p.last_file_creation_time,
            done: p.done,
        }
    }
}

/// A REST catalog server and the options it merged.
#[derive(Clone, Debug)]
pub(crate) struct RestCatalog {
    client: RestClient,
    /// `data-token.enabled`: tables' files are reached with the server's data tokens.
    data_tokens: bool,
}

/// Java `Catalog.DB_LOCATION_PROP`.
const LOCATION_PROPERTY: &str = "location";

fn is_not_found(e: &RestError) -> bool {
    e.is(StatusCode::NOT_FOUND)
}

/// Java `Identifier` as JSON.
fn identifier_json(database: &str, object: &str) -> Value {
    json!({"database": database, "object": object})
}

impl RestCatalog {
    /// Ask the server at `uri` for its configuration (`GET /v1/config?warehouse=`) and return
    /// the catalog with the merged options (defaults < `options` < overrides).
    pub(crate) async fn connect(options: &CatalogOptions) -> Result<(RestCatalog, CatalogOptions)> {
        let uri = options.uri().ok_or_else(|| {
            Error::invalid("a REST catalog needs 'uri' (http://host:port of the catalog server)")
        })?;
        let headers = |options: &CatalogOptions| -> Result<BTreeMap<String, String>> {
            let mut headers = options.headers();
            match (options.get(TOKEN_PROVIDER), options.get(TOKEN)) {
                (Some(p), _) if !p.eq_ignore_ascii_case(BEAR_TOKEN_PROVIDER) => {
                    return Err(Error::Unsupported(format!(
                        "REST catalog '{TOKEN_PROVIDER}' = '{p}': tidelake speaks bearer tokens ('bear')"
                    )))
                }
                (Some(_), None) => {
                    return Err(Error::invalid(format!(
                        "REST catalog '{TOKEN_PROVIDER}' = 'bear' needs '{TOKEN}'"
                    )))
                }
                (_, Some(token)) => {
                    let (k, v) = RestClient::bearer(token);
                    headers.insert(k, v);
                }
                (None, None) => {}
            }
            Ok(headers)
        };
        let client = RestClient::new(uri, &headers(options)?)?;
        let config = client.config(options.warehouse()).await?;
        let merged = config.merge(options.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let merged: CatalogOptions = merged.into_iter().collect();
        let client = RestClient::new(uri, &headers(&merged)?)?.with_prefix(merged.get(REST_PREFIX));
        let data_tokens = merged.data_token_enabled().map_err(super::options_error)?;
        Ok((
            RestCatalog {
                client,
                data_tokens,
            },
            merged,
        ))
    }

    pub(crate) fn client(&self) -> &RestClient {
        &self.client
    }

    pub(crate) async fn list_databases(&self) -> Result<Vec<String>> {
        let mut all = self
            .client
            .get_all(
                &self.client.path(&["databases"]),
                "databases",
                "listing databases",
            )
            .await?;
        all.sort();
        Ok(all)
    }

    async fn database(&self, name: &str) -> std::result::Result<GetDatabaseResponse, RestError> {
        self.client
            .get(
                &self.client.path(&["databases", name]),
                &format!("loading database '{name}'"),
            )
            .await
    }

    pub(crate) async fn database_exists(&self, name: &str) -> Result<bool> {
        match self.database(name).await {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(e.into_error()),
        }
    }

    pub(crate) async fn create_database(
        &self,
        name: &str,
        properties: &BTreeMap<String, String>,
    ) -> Result<()> {
        let body = json!({"name": name, "options": properties});
        self.client
            .post_command(
                &self.client.path(&["databases"]),
                &body,
                &format!("creating database '{name}'"),
            )
            .await
    }

    /// The database's options with its `location` (Java `RESTCatalog.getDatabase`).
    pub(crate) async fn database_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        let db = self.database(name).await.map_err(RestError::into_error)?;
        let mut options = db.options;
        if let Some(location) = db.location {
            options.insert(LOCATION_PROPERTY.to_string(), location);
        }
        Ok(options)
    }

    pub(crate) async fn alter_database(
        &self,
        name: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<()> {
        let body = json!({"removals": remove, "updates": set});
        self.client
            .post_command(
                &self.client.path(&["databases", name]),
                &body,
                &format!("altering database '{name}'"),
            )
            .await
    }

    /// Drop a database (the server drops its tables too: the caller checks emptiness).
    pub(crate) async fn drop_database(&self, name: &str) -> Result<()> {
        self.client
            .delete(
                &self.client.path(&["databases", name]),
                &format!("dropping database '{name}'"),
            )
            .await
    }

    pub(crate) async fn list_tables(&self, database: &str) -> Result<Vec<String>> {
        let mut all = self
            .client
            .get_all(
                &self.client.path(&["databases", database, "tables"]),
                "tables",
                &format!("listing the tables of '{database}'"),
            )
            .await?;
        all.sort();
        Ok(all)
    }

    /// The server's record of a table (`object`: `t` or `t$branch_b`), `None` if it has none.
    pub(crate) async fn table(
        &self,
        database: &str,
        object: &str,
    ) -> Result<Option<TableMetadata>> {
        let path = self.client.path(&["databases", database, "tables", object]);
        match self
            .client
            .get(&path, &format!("loading table '{database}.{object}'"))
            .await
        {
            Ok(t) => Ok(Some(t)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e.into_error()),
        }
    }

    /// The files of table `id` at `location`: the catalog's S3 options under `storage`, and the
    /// server's data tokens when it vends them.
    pub(crate) async fn table_io(
        &self,
        id: &Identifier,
        location: &str,
        catalog: &CatalogOptions,
        storage: &StorageOptions,
    ) -> Result<FileIO> {
        let mut options = paimon_s3::storage_options(location, catalog.iter(), storage)?;
        if !self.data_tokens {
            return FileIO::open_with(location, &options);
        }
        let (credentials, token_options) =
            TokenCredentials::fetch(&self.client, id, location, Env::default()).await?;
        options.extend(token_options);
        let credentials: S3Credentials = Arc::new(credentials);
        FileIO::open_signed(location, &options, &credentials)
    }

    /// The partitions the server keeps for a table (Java `RESTCatalog.listPartitions`), `None`
    /// when it keeps none for it (501: not a `metastore.partitioned-table`).
    pub(crate) async fn list_partitions(&self, id: &Identifier) -> Result<Option<Vec<Partition>>> {
        let path =
            self.client
                .path(&["databases", &id.database, "tables", &id.table, "partitions"]);
        let what = format!("listing the partitions of '{id}'");
        let pages = match self.client.get_pages(&path, "partitions", &what).await {
            Ok(pages) => pages,
            Err(e) if e.is(StatusCode::NOT_IMPLEMENTED) => return Ok(None),
            Err(e) => return Err(e.into_error()),
        };
        let partitions = pages
            .into_iter()
            .map(|p| {
                serde_json::from_value::<RestPartition>(p)
                    .map(Partition::from)
                    .map_err(|e| {
                        Error::Internal(format!("{what}: a partition the server sent: {e}"))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(partitions))
    }

    /// The server's record of a table's latest snapshot (Java `RESTCatalog.loadSnapshot`),
    /// `None` when it has none or does not keep them.
    pub(crate) async fn table_totals(&self, id: &Identifier) -> Result<Option<TableTotals>> {
        #[derive(Deserialize)]
        struct Answer {
            snapshot: TableTotals,
        }
        let path = self
            .client
            .path(&["databases", &id.database, "tables", &id.table, "snapshot"]);
        let what = format!("loading the snapshot of '{id}'");
        match self.client.get::<Answer>(&path, &what).await {
            Ok(answer) => Ok(Some(answer.snapshot)),
            Err(e) if e.is(StatusCode::NOT_FOUND) || e.is(StatusCode::NOT_IMPLEMENTED) => Ok(None),
            Err(e) => Err(e.into_error()),
        }
    }

    /// Create a table from its schema (Java `Schema` as JSON: fields, keys, options, comment).
    pub(crate) async fn create_table(&self, id: &Identifier, schema: Value) -> Result<()> {
        let body = json!({
            "identifier": identifier_json(&id.database, &id.table),
            "schema": schema,
        });
        self.client
            .post_command(
                &self.client.path(&["databases", &id.database, "tables"]),
                &body,
                &format!("creating table '{id}'"),
            )
            .await
    }

    /// Drop a table; the server deletes its files.
    pub(crate) async fn drop_table(&self, id: &Identifier) -> Result<()> {
        self.client
            .delete(
                &self
                    .client
                    .path(&["databases", &id.database, "tables", &id.table]),
                &format!("dropping table '{id}'"),
            )
            .await
    }

    pub(crate) async fn rename_table(&self, from: &Identifier, to: &Identifier) -> Result<()> {
        let body = json!({
            "source": identifier_json(&from.database, &from.table),
            "destination": identifier_json(&to.database, &to.table),
        });
        self.client
            .post_command(
                &self.client.path(&["tables", "rename"]),
                &body,
                &format!("renaming table '{from}' to '{to}'"),
            )
            .await
    }
}
