//! What the Hive Metastore learns of a Paimon table's changes, as Java's `HiveCatalog` is told:
//! after a schema change of the main branch, the table's columns and parameters
//! (`alterTableImpl`); for a `metastore.partitioned-table`, the partitions that received files in
//! a commit (`createPartitions`) and those dropped (`dropPartitions`); load-done events of
//! partitions marked done (`markDonePartitions`). Which partitions those are, the table's
//! commits work out ([`crate::maintenance::partitions`], [`crate::ops::mark_done`]).
//!
//! Invariants: the metastore only follows the table's files, never leads them: each call comes
//! after the commit or schema file it reports exists; partitions are added with `ifNotExists`
//! and dropped only if present, so reporting one twice is harmless.

use std::collections::BTreeMap;

use async_trait::async_trait;
use tidelake_spec::partition::spec_path;
use tidelake_spec::schema::TableSchema;

use super::client::{HmsClient, METASTORE_TABLE};
use super::model::{HmsTable, DO_NOT_UPDATE_STATS};
use crate::branch::MAIN_BRANCH;
use crate::error::{Error, Result};
use crate::io::Env;
use crate::snapshot_commit::{MetastoreSync, PartitionSpec};

/// `StatsSetupConst.CASCADE`: the environment of Java's alter (with [`DO_NOT_UPDATE_STATS`]).
pub(crate) const CASCADE: &str = "CASCADE";

/// One Paimon table of the metastore.
#[derive(Clone, Debug)]
pub(crate) struct HiveTableSync {
    pub(crate) client: HmsClient,
    pub(crate) database: String,
    pub(crate) table: String,
    /// `sync-all-properties`.
    pub(crate) sync_all: bool,
    /// The clock of partitions' creation times.
    pub(crate) env: Env,
}

impl HiveTableSync {
    async fn hms_table(&self) -> Result<HmsTable> {
        self.client
            .table(&self.database, &self.table)
            .await?
            .map(HmsTable)
            .ok_or_else(|| {
                Error::not_found(
                    "table",
                    format!(
                        "'{}.{}' in {}",
                        self.database,
                        self.table,
                        self.client.uri()
                    ),
                )
            })
    }
}

/// The values of a partition, in key order.
fn values(spec: &PartitionSpec) -> Vec<String> {
    spec.iter().map(|(_, v)| v.clone()).collect()
}

#[async_trait]
impl MetastoreSync for HiveTableSync {
    async fn schema_changed(
        &self,
        branch: &str,
        schema: &TableSchema,
        removed_options: &[String],
    ) -> Result<()> {
        // only the main branch is the metastore's table
        if branch != MAIN_BRANCH {
            return Ok(());
        }
        let mut table = self.hms_table().await?;
        table.update(schema, removed_options, self.sync_all)?;
        let skip_stats = table
            .parameters()
            .get(DO_NOT_UPDATE_STATS)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let context = BTreeMap::from([
            (CASCADE.to_string(), "true".to_string()),
            (DO_NOT_UPDATE_STATS.to_string(), skip_stats.to_string()),
        ]);
        self.client
            .alter_table(&self.database, &self.table, table.0, &context)
            .await
    }

    async fn add_partitions(&self, partitions: &[PartitionSpec]) -> Result<()> {
        if partitions.is_empty() {
            return Ok(());
        }
        let table = self.hms_table().await?;
        let base = table.data_location().unwrap_or_default();
        let now_seconds = i32::try_from(self.env.now_millis() / 1000).unwrap_or(i32::MAX);
        let partitions = partitions
            .iter()
            .map(|spec| {
                let location = format!("{base}/{}", spec_path(spec));
                table.partition(&self.database, &values(spec), &location, now_seconds)
            })
            .collect();
        self.client
            .add_partitions(&self.database, &self.table, partitions)
            .await
    }

    async fn drop_partitions(&self, partitions: &[PartitionSpec]) -> Result<()> {
        for spec in partitions {
            self.client
                .drop_partition(&self.database, &self.table, &values(spec))
                .await?;
        }
        Ok(())
    }

    async fn mark_partitions_done(&self, partitions: &[PartitionSpec]) -> Result<()> {
        for spec in partitions {
            let spec = spec.iter().cloned().collect();
            match self
                .client
                .mark_partition_done(&self.database, &self.table, &spec)
                .await
            {
                // a partition the metastore does not know: Java skips it
                Err(Error::NotFound { what, .. }) if what != METASTORE_TABLE => {}
                Ok(()) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
