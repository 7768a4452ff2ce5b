//! A Paimon table's Iceberg metadata registered as an Iceberg table in a Hive Metastore
//! (`metadata.iceberg.storage = hive-catalog`, Java `IcebergHiveMetadataCommitter`), so Iceberg
//! engines find it by name: after each metadata version is written, the metastore's table
//! points at it (`metadata_location`, `previous_metadata_location`), its database and table
//! created first when missing.
//!
//! Invariants: the metadata files are written before the metastore learns of them, so the
//! table never points at a missing version; the pointer is read and replaced under the
//! metastore's EXCLUSIVE lock of the Iceberg table (the lock Iceberg's own Hive commits take),
//! and a version older than the one the table already points at is not registered, so
//! committers finishing out of order never move it back (Java neither locks nor checks); a
//! database or table another committer created meanwhile is used, not an error; a Paimon
//! table of the Iceberg table's name (a Paimon table of a Hive catalog with the default names)
//! is never overwritten (Java overwrites it).

use std::collections::BTreeMap;

use tidelake_spec::catalog_options::CatalogOptions;
use tidelake_spec::schema::TableSchema;

use super::client::HmsClient;
use super::current_user;
use super::lock::HiveLocks;
use super::model::{HmsDatabase, HmsTable, NewTable, DO_NOT_UPDATE_STATS, LOCATION};
use super::sync::CASCADE;
use crate::catalog::{CatalogLock, Identifier};
use crate::error::{Error, Result};
use crate::io::Env;

/// Java's alter environment: `CASCADE`, this, and `DO_NOT_UPDATE_STATS`.
const SKIP_GLUE_ARCHIVE: &str = "skipAWSGlueArchive";

/// Where and how the Iceberg table is registered.
#[derive(Clone, Debug)]
pub(crate) struct IcebergHiveTable {
    pub(crate) client: HmsClient,
    pub(crate) database: String,
    pub(crate) table: String,
    /// `metadata.iceberg.hive-skip-update-stats`.
    pub(crate) skip_update_stats: bool,
    /// `metadata.iceberg.glue.skip-archive`.
    pub(crate) glue_skip_archive: bool,
}

/// What one registration points the Iceberg table at.
pub(crate) struct IcebergVersion<'a> {
    /// The Paimon table's latest schema (the Iceberg table's columns).
    pub(crate) schema: &'a TableSchema,
    /// The new `v<N>.metadata.json`, and the version it follows (if written from it).
    pub(crate) metadata: &'a str,
    pub(crate) previous: Option<&'a str>,
    /// The Iceberg table's directory (the metadata directory's parent) and its database's.
    pub(crate) table_location: &'a str,
    pub(crate) database_location: &'a str,
}

impl IcebergHiveTable {
    /// Point the Iceberg table at `version` (see the module invariants).
    pub(crate) async fn register(&self, version: &IcebergVersion<'_>, env: &Env) -> Result<()> {
        if self.client.database(&self.database).await?.is_none() {
            let properties =
                BTreeMap::from([(LOCATION.to_string(), version.database_location.to_string())]);
            let database = HmsDatabase::new(&self.database, &properties);
            match self.client.create_database(database.0).await {
                Err(Error::AlreadyExists(_)) | Ok(()) => {}
                Err(e) => return Err(e),
            }
        }
        if self
            .client
            .table(&self.database, &self.table)
            .await?
            .is_none()
        {
            self.create(version, env).await?;
        }
        // under the metastore's lock of the table, as Iceberg's own Hive commits take it: the
        // version it points at is read and replaced by one writer at a time
        let locks = HiveLocks::new(self.client.clone(), &CatalogOptions::default(), env.clone())?;
        let id = Identifier {
            database: self.database.clone(),
            table: self.table.clone(),
            branch: None,
            system: None,
        };
        let lock = locks.table_lock(&id);
        lock.run_locked(Box::pin(self.point_at(version))).await
    }

    /// Point the existing table at `version` unless it already points at a newer one.
    async fn point_at(&self, version: &IcebergVersion<'_>) -> Result<()> {
        let mut table = self
            .client
            .table(&self.database, &self.table)
            .await?
            .map(HmsTable)
            .ok_or_else(|| {
                Error::not_found("table", format!("'{}.{}'", self.database, self.table))
            })?;
        if table.is_paimon() {
            return Err(Error::invalid(format!(
                "the Iceberg table '{}.{}' would replace the Paimon table of that name in the \
                 Hive Metastore: set 'metadata.iceberg.database' or 'metadata.iceberg.table'",
                self.database, self.table
            )));
        }
        if let Some(current) = table.iceberg_metadata() {
            if metadata_version(&current) > metadata_version(version.metadata) {
                return Ok(());
            }
        }
        table.point_at_iceberg(version.schema, version.metadata, version.previous)?;
        let context = BTreeMap::from([
            (CASCADE.to_string(), "true".to_string()),
            (
                SKIP_GLUE_ARCHIVE.to_string(),
                self.glue_skip_archive.to_string(),
            ),
            (
                DO_NOT_UPDATE_STATS.to_string(),
                self.skip_update_stats.to_string(),
            ),
        ]);
        self.client
            .alter_table(&self.database, &self.table, table.0, &context)
            .await
    }

    /// Java `createTable`; a table another committer created meanwhile is used instead.
    async fn create(&self, version: &IcebergVersion<'_>, env: &Env) -> Result<()> {
        let owner = current_user();
        let new = NewTable {
            database: &self.database,
            name: &self.table,
            location: version.table_location,
            owner: &owner,
            now_seconds: i32::try_from(env.now_millis() / 1000).unwrap_or(i32::MAX),
            sync_all: false,
        };
        let table = HmsTable::iceberg(&new, version.schema, self.skip_update_stats)?;
        match self.client.create_table(table.0).await {
            Err(Error::AlreadyExists(_)) | Ok(()) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The version `N` of a metadata file `.../v<N>.metadata.json` (0 for another name).
fn metadata_version(path: &str) -> i64 {
    path.rsplit('/')
        .next()
        .and_then(|name| name.strip_prefix('v'))
        .and_then(|name| name.strip_suffix(".metadata.json"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_versions_are_read_from_file_names() {
        assert_eq!(
            metadata_version("file:/w/iceberg/db/t/metadata/v12.metadata.json"),
            12
        );
        assert_eq!(metadata_version("s3://b/v3.metadata.json"), 3);
        assert_eq!(metadata_version("s3://b/00001-abc.metadata.json"), 0);
    }
}
