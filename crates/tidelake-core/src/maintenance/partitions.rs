//! Dropping and expiring partitions (Java `NormalPartitionExpire`,
//! `PartitionValuesTimeExpireStrategy`, `PartitionUpdateTimeExpireStrategy`,
//! `FileStoreCommit.dropPartitions`), and the partitions a metastore keeps for a
//! `metastore.partitioned-table` of a Hive catalog: registered after each commit that adds files
//! to them, removed after they are dropped (Java `AddPartitionCommitCallback`,
//! `HiveCatalog.dropPartitions`).
//!
//! A partition is dropped by an OVERWRITE snapshot (operation `TRUNCATE`) that deletes its live
//! files; the files themselves go when that snapshot's predecessors expire.
//!
//! Expiration (`partition.expiration-time` set): among the partitions with live files in the
//! latest snapshot, those older than now − expiration-time, by
//! * `values-time` (default): the time extracted from the partition values (their Java
//!   `toString()` forms, i.e. the legacy partition names; a null value never expires) with
//!   `partition.timestamp-pattern` / `partition.timestamp-formatter`;
//! * `update-time`: the newest creation time of the partition's files;
//!
//! sorted by their comma-joined values, at most `partition.expiration-max-num` (100), dropped
//! `partition.expiration-batch-size` at a time (all at once by default). Times are local, as
//! Java's `LocalDateTime.now()`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;
use serde_json::Value;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::FileKind;
use tidelake_spec::options::PartitionExpirationStrategy;
use tidelake_spec::partition::PartitionComputer;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::branch::{list_branches, MAIN_BRANCH};
use crate::commit::FileStoreCommit;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::maintenance::time_format::PartitionTimeExtractor;
use crate::scan::predicate::{BoundPredicate, CompareOp, LeafTest, Predicate};
use crate::snapshot_commit::{MetastoreSync, PartitionSpec};
use crate::state::{read_entries, read_list, LiveFiles, Pruning};
use crate::table::Table;

/// How partitions are judged old.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExpireStrategy {
    ValuesTime(PartitionTimeExtractor),
    UpdateTime,
}

/// Partition expiration settings of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionExpireConfig {
    pub expiration: Duration,
    pub strategy: ExpireStrategy,
    pub max_num: usize,
    pub batch_size: Option<usize>,
}

impl PartitionExpireConfig {
    /// The table options' settings, `expiration` replacing `partition.expiration-time`;
    /// `None` when neither is set.
    pub fn from_options(
        opts: &tidelake_spec::options::Options,
        expiration: Option<Duration>,
    ) -> Result<Option<PartitionExpireConfig>> {
        let spec = |e| Error::from_spec("table options", e);
        let Some(expiration) = expiration.or(opts.partition_expiration_time().map_err(spec)?)
        else {
            return Ok(None);
        };
        let strategy = match opts.partition_expiration_strategy().map_err(spec)? {
            PartitionExpirationStrategy::ValuesTime => {
                ExpireStrategy::ValuesTime(PartitionTimeExtractor::new(
                    opts.partition_timestamp_pattern(),
                    opts.partition_timestamp_formatter(),
                )?)
            }
            PartitionExpirationStrategy::UpdateTime => ExpireStrategy::UpdateTime,
        };
        Ok(Some(PartitionExpireConfig {
            expiration,
            strategy,
            max_num: usize::try_from(opts.partition_expiration_max_num().map_err(spec)?)
                .unwrap_or(0),
            batch_size: opts
                .partition_expiration_batch_size()
                .map_err(spec)?
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0),
        }))
    }
}

/// One partition with live files: its values and newest file creation time.
struct LivePartition {
    values: Vec<Datum>,
    last_creation_ms: Option<i64>,
}

/// The partitions with live files in the latest snapshot, by framed partition.
async fn live_partitions(
    table: &Table,
    layout: &TableLayout,
) -> Result<BTreeMap<Vec<u8>, LivePartition>> {
    let mut out: BTreeMap<Vec<u8>, LivePartition> = BTreeMap::new();
    let Some((_, live)) = LiveFiles::read_latest(table, Pruning::all).await? else {
        return Ok(out);
    };
    for e in live.entries() {
        let created = e.file.creation_time;
        match out.get_mut(&e.partition) {
            Some(p) => p.last_creation_ms = p.last_creation_ms.max(created),
            None => {
                let values = layout.decode_partition(&e.partition)?;
                out.insert(
                    e.partition.clone(),
                    LivePartition {
                        values,
                        last_creation_ms: created,
                    },
                );
            }
        }
    }
    Ok(out)
}

/// A partition chosen for expiration.
struct Expired {
    /// Values joined by `,`: the order partitions are expired in.
    joined: String,
    spec: Vec<(String, String)>,
    values: Vec<Datum>,
}

/// Drop the partitions of `table` that `config` says expired at local time `now`; returns them
/// as (key, value) pairs in drop order.
pub async fn expire_partitions(
    table: &Table,
    config: &PartitionExpireConfig,
    now: NaiveDateTime,
) -> Result<Vec<Vec<(String, String)>>> {
    let layout = TableLayout::new(table.schema())?;
    if layout.partition_fields.is_empty() {
        return Ok(Vec::new());
    }
    let cutoff = now
        - chrono::Duration::from_std(config.expiration)
            .map_err(|e| Error::invalid(format!("partition.expiration-time: {e}")))?;
    let keys: Vec<String> = layout
        .partition_fields
        .iter()
        .map(|f| f.name.clone())
        .collect();
    // Java's `toString()` of the internal values: the legacy partition names.
    let strings = PartitionComputer::new(
        keys.clone(),
        layout.partition_types.clone(),
        table.schema().options().partition_default_name(),
        true,
    )
    .map_err(|e| Error::from_spec("partition columns", e))?;
    let mut expired: Vec<Expired> = Vec::new();
    for p in live_partitions(table, &layout).await?.into_values() {
        let Ok(spec) = strings.partition_spec(&p.values) else {
            continue;
        };
        let time = match &config.strategy {
            _ if p.values.iter().any(Datum::is_null) => None,
            ExpireStrategy::ValuesTime(extractor) => extractor.extract(
                &keys,
                &spec.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
            ),
            ExpireStrategy::UpdateTime => p
                .last_creation_ms
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map(|t| t.naive_utc()),
        };
        if time.is_some_and(|t| cutoff > t) {
            let joined = spec
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(",");
            expired.push(Expired {
                joined,
                spec,
                values: p.values,
            });
        }
    }
    expired.sort_by(|a, b| a.joined.cmp(&b.joined));
    expired.truncate(config.max_num);
    let batch = config.batch_size.unwrap_or(expired.len()).max(1);
    for chunk in expired.chunks(batch) {
        let specs = chunk
            .iter()
            .map(|e| keys.iter().cloned().zip(e.values.iter().cloned()).collect())
            .collect();
        drop_partitions(table, specs).await?;
    }
    Ok(expired.into_iter().map(|e| e.spec).collect())
}

/// Drop every partition matching one of `specs` (full or partial `(key, value)` specs) in one
/// OVERWRITE snapshot (operation `TRUNCATE`), then from the metastore that keeps the table's
/// partitions, if any ([`unregister_partitions`]); returns the new snapshot ids.
pub async fn drop_partitions(table: &Table, specs: Vec<Vec<(String, Datum)>>) -> Result<Vec<i64>> {
    let commit = FileStoreCommit::new(table.clone(), table.env().uuid_string())?;
    let ids = commit
        .drop_partitions(specs, BATCH_COMMIT_IDENTIFIER)
        .await?
        .ids();
    unregister_partitions(table, &ids).await?;
    Ok(ids)
}

/// The metastore that keeps `table`'s partitions and has to hear of commits `ids` (any): its
/// catalog's (Hive), if the main branch is a partitioned `metastore.partitioned-table` (Java `AbstractFileStore.createCommitCallbacks` and
/// `HiveCatalog.metastorePartitioned`, which reads the main table's schema).
async fn partition_keeper<'a>(
    table: &'a Table,
    ids: &[i64],
) -> Result<Option<&'a Arc<dyn MetastoreSync>>> {
    let Some(metastore) = table.environment().metastore().filter(|_| !ids.is_empty()) else {
        return Ok(None);
    };
    let main;
    let schema = if table.branch() == MAIN_BRANCH {
        table.schema()
    } else {
        main = table.open_other_branch(MAIN_BRANCH).await?;
        main.schema()
    };
    let kept = !schema.partition_keys.is_empty()
        && schema
            .options()
            .partitioned_table_in_metastore()
            .map_err(|e| Error::from_spec("table options", e))?;
    Ok(kept.then_some(metastore))
}

/// The partitions of the `kind` entries of snapshots `ids`' deltas, by framed partition.
async fn delta_partitions(
    table: &Table,
    ids: &[i64],
    kind: FileKind,
) -> Result<BTreeMap<Vec<u8>, PartitionSpec>> {
    let layout = TableLayout::new(table.schema())?;
    let mut partitions = BTreeMap::new();
    for &id in ids {
        let snapshot = table.snapshot_manager().snapshot(id).await?;
        for manifest in read_list(table, &snapshot.delta_manifest_list).await? {
            for entry in read_entries(table, &manifest.file_name).await? {
                if entry.kind == kind && !partitions.contains_key(&entry.partition) {
                    let spec =
                        layout.partition_spec(&layout.decode_partition(&entry.partition)?)?;
                    partitions.insert(entry.partition, spec);
                }
            }
        }
    }
    Ok(partitions)
}

/// Tell the metastore that keeps `table`'s partitions those snapshots `ids` added files to
/// (Java `AddPartitionCommitCallback`): after every commit.
pub(crate) async fn register_partitions(table: &Table, ids: &[i64]) -> Result<()> {
    let Some(metastore) = partition_keeper(table, ids).await? else {
        return Ok(());
    };
    let added = delta_partitions(table, ids, FileKind::Add).await?;
    metastore
        .add_partitions(&added.into_values().collect::<Vec<_>>())
        .await
}

/// Remove from the metastore that keeps `table`'s partitions those snapshots `ids` dropped,
/// unless another branch still has them (Java `HiveCatalog.dropPartitions`,
/// `removePartitionsExistsInOtherBranches`).
async fn unregister_partitions(table: &Table, ids: &[i64]) -> Result<()> {
    let Some(metastore) = partition_keeper(table, ids).await? else {
        return Ok(());
    };
    let mut dropped = delta_partitions(table, ids, FileKind::Delete).await?;
    let mut branches = list_branches(table.io()).await?;
    branches.push(MAIN_BRANCH.to_string());
    for branch in branches.iter().filter(|b| *b != table.branch()) {
        let other = match table.open_other_branch(branch).await {
            Ok(other) => other,
            // a branch without a schema yet
            Err(Error::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        for live in live_partitions(&other, &TableLayout::new(other.schema())?)
            .await?
            .keys()
        {
            dropped.remove(live);
        }
    }
    metastore
        .drop_partitions(&dropped.into_values().collect::<Vec<_>>())
        .await
}

/// Partition specs from JSON `[{"key": literal, ...}, ...]`, literals typed like filter
/// literals (a JSON null selects the null partition value).
pub fn partition_specs_from_json(
    layout: &TableLayout,
    json: &Value,
) -> Result<Vec<Vec<(String, Datum)>>> {
    let Value::Array(specs) = json else {
        return Err(Error::invalid(format!(
            "partition specs must be a JSON list of objects, got {json}"
        )));
    };
    specs
        .iter()
        .map(|spec| {
            let Value::Object(pairs) = spec else {
                return Err(Error::invalid(format!(
                    "a partition spec must be an object, got {spec}"
                )));
            };
            if pairs.is_empty() {
                return Err(Error::invalid(
                    "a partition spec must name at least one partition column",
                ));
            }
            pairs
                .iter()
                .map(|(key, value)| Ok((key.clone(), typed_value(layout, key, value)?)))
                .collect()
        })
        .collect()
}

/// `value` as a datum of partition column `key`, through the filter literal binding.
fn typed_value(layout: &TableLayout, key: &str, value: &Value) -> Result<Datum> {
    if value.is_null() {
        return Ok(Datum::Null);
    }
    let leaf = Predicate::Compare {
        field: key.to_string(),
        op: CompareOp::Eq,
        value: value.clone(),
    };
    match leaf
        .bind(&layout.partition_fields)
        .map_err(|e| Error::invalid(format!("partition spec: {e}")))?
    {
        BoundPredicate::Leaf(l) => match l.test {
            LeafTest::Compare { value, .. } => Ok(value),
            other => Err(Error::invalid(format!(
                "partition value {value} of '{key}' bound to {other:?}"
            ))),
        },
        other => Err(Error::invalid(format!(
            "partition value {value} of '{key}' bound to {other:?}"
        ))),
    }
}
