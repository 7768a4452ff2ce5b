//! Cross-partition upserts: `bucket = -1` on a primary-key table whose key lacks a partition
//! key (Java `BucketMode.KEY_DYNAMIC`). A key may move to another partition, so a writer keeps
//! a global index key → (partition, bucket) (Java `GlobalIndexAssigner`, `IndexBootstrap`,
//! `crosspartition.BucketAssigner` and the `ExistingProcessor`s).
//!
//! * Bootstrap: the keys of the writer's base snapshot, read as the table's merged rows
//!   projected to the trimmed primary key, every level included, each with the (partition,
//!   bucket) it lives in. With `cross-partition-upsert.index-ttl`, buckets whose newest file
//!   is older than the TTL are skipped (Java `IndexBootstrap.filterSplit`), and index entries
//!   older than the TTL are forgotten.
//! * Routing, row by row in input order (Java `processInput`): a key in the index stays in its
//!   bucket when its partition is unchanged; a key found in another partition is handled by
//!   the merge engine: deduplicate writes a `-D` of the row (partition columns set to the
//!   old partition) into the old bucket, then the row goes to the new partition as a new key;
//!   partial-update and aggregation send the row to the old partition and bucket (partition
//!   columns replaced); first-row drops it. A new key goes to the lowest bucket of its
//!   partition holding fewer than `dynamic-bucket.target-row-num` keys, else to the lowest
//!   unused bucket id.
//! * Memory: the index lives in an embedded on-disk B-tree ([`redb`]) in a temporary
//!   directory removed with the writer; its page cache is bounded by
//!   `lookup.cache-max-memory-size` (the option Java sizes this index's cache with, default
//!   256 MiB). In memory stay only the partition ids and the key count per (partition,
//!   bucket).
//! * One writer at a time (Java supports nothing else): a writer's key index is only valid
//!   while no other writer adds rows. [`CrossPartitionAssigner::advance_base`] moves the
//!   writer's base past the snapshots that only hold its own earlier commits (and
//!   compactions), and the committer refuses a cross-partition write when any other commit
//!   added rows since that base (`crate::commit::single_writer`).

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use redb::{Database, Durability, ReadableTable, TableDefinition};
use tidelake_spec::manifest::FileKind;
use tidelake_spec::options::MergeEngine;
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::snapshot::{CommitKind, Snapshot};
use tidelake_spec::types::DataType;

use crate::error::{Error, Result};
use crate::io::Env;
use crate::read::split_read::ReadContext;
use crate::scan::plan::{plan_scan, ScanRequest, SnapshotSelector};
use crate::state::{read_list, read_manifests};
use crate::table::Table;
use crate::write::bucket::key_rows;

/// Key (BinaryRow of the trimmed primary key) → (partition id << 32 | bucket, entry time ms).
const KEYS: TableDefinition<&[u8], (u64, i64)> = TableDefinition::new("keys");

fn kv_error(context: &str, e: impl Into<redb::Error>) -> Error {
    let e: redb::Error = e.into();
    Error::Io {
        path: format!("the cross-partition key index ({context})"),
        source: object_store::Error::Generic {
            store: "local",
            source: Box::new(e),
        },
    }
}

fn pack(partition: u32, bucket: i32) -> u64 {
    (u64::from(partition) << 32) | u64::from(bucket as u32)
}

fn unpack(v: u64) -> (u32, i32) {
    ((v >> 32) as u32, v as u32 as i32)
}

/// Where one input row (or the retraction it causes) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routed {
    /// The input row.
    pub row: u32,
    /// Partition id ([`CrossPartitionAssigner::partition`]).
    pub partition: u32,
    pub bucket: i32,
    /// `_VALUE_KIND` code written.
    pub kind: i8,
}

/// The key index of one cross-partition writer.
pub struct CrossPartitionAssigner {
    db: Database,
    /// Holds the database file; removed when the writer is dropped.
    _dir: tempfile::TempDir,
    engine: MergeEngine,
    target_rows: u64,
    ttl_ms: Option<i64>,
    partitions: Vec<Vec<u8>>,
    partition_ids: HashMap<Vec<u8>, u32>,
    /// Keys per bucket of each partition (Java `BucketAssigner`).
    counts: HashMap<u32, BTreeMap<i32, u64>>,
    /// Data files this writer handed out in commit messages and has not yet seen committed.
    own_files: HashSet<String>,
    /// The clock the TTL is measured with.
    env: Env,
}

impl std::fmt::Debug for CrossPartitionAssigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossPartitionAssigner")
            .field("partitions", &self.partitions.len())
            .finish_non_exhaustive()
    }
}

impl CrossPartitionAssigner {
    /// The index of `table` at snapshot `base` (0: empty table); `newest_creation(partition,
    /// bucket)`: the newest `creation_time` of the bucket's files at `base`.
    pub async fn bootstrap(
        table: &Table,
        base: i64,
        newest_creation: impl Fn(&[u8], i32) -> Option<i64>,
    ) -> Result<CrossPartitionAssigner> {
        let schema = table.schema().clone();
        let opts = schema.options();
        let spec_err = |e| Error::from_spec("table options", e);
        let dir = tempfile::Builder::new()
            .prefix("tidelake-key-index-")
            .tempdir()
            .map_err(|e| kv_error("creating its directory", e))?;
        let cache = opts.lookup_cache_max_memory_size().map_err(spec_err)?;
        let db = Database::builder()
            .set_cache_size(usize::try_from(cache).unwrap_or(usize::MAX))
            .create(dir.path().join("keys.redb"))
            .map_err(|e| kv_error("creating it", e))?;
        let ttl_ms = opts
            .cross_partition_upsert_index_ttl()
            .map_err(spec_err)?
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut assigner = CrossPartitionAssigner {
            db,
            _dir: dir,
            engine: opts.merge_engine().map_err(spec_err)?,
            target_rows: u64::try_from(opts.dynamic_bucket_target_row_num().map_err(spec_err)?)
                .unwrap_or(1)
                .max(1),
            ttl_ms,
            partitions: Vec::new(),
            partition_ids: HashMap::new(),
            counts: HashMap::new(),
            own_files: HashSet::new(),
            env: table.env().clone(),
        };
        if base > 0 {
            let now = assigner.env.local_now_millis();
            // Java `IndexBootstrap.filterSplit`: a bucket is read when a file of it is younger
            // than the TTL.
            let fresh = |partition: &[u8], bucket: i32| {
                ttl_ms.is_none_or(|ttl| {
                    newest_creation(partition, bucket).is_some_and(|t| now <= t.saturating_add(ttl))
                })
            };
            assigner.load(table, base, fresh).await?;
        }
        Ok(assigner)
    }

    /// Read the keys of snapshot `base` into the index.
    async fn load(
        &mut self,
        table: &Table,
        base: i64,
        fresh: impl Fn(&[u8], i32) -> bool,
    ) -> Result<()> {
        let schema = table.schema().clone();
        // Java reads every level (`withLevelFilter(level -> true)`); batch reads of deletion-
        // vector and first-row tables hide level 0, merge-on-read shows it.
        let mut options = vec![(
            "deletion-vectors.merge-on-read".to_string(),
            "true".to_string(),
        )];
        if self.engine == MergeEngine::FirstRow {
            options.push(("deletion-vectors.enabled".to_string(), "true".to_string()));
        }
        let plan = plan_scan(
            table,
            &ScanRequest {
                snapshot: SnapshotSelector::Id(base),
                filter: None,
                options,
            },
        )
        .await?;
        let key_names = schema.trimmed_primary_keys();
        let key_types: Vec<DataType> = key_names
            .iter()
            .filter_map(|k| schema.field(k))
            .map(|f| f.data_type.clone())
            .collect();
        let columns: Vec<usize> = (0..key_names.len()).collect();
        let read = std::sync::Arc::new(
            ReadContext::of(table.clone(), &plan.schema)
                .columns(Some(&key_names))
                .build()?,
        );
        let now = self.env.local_now_millis();
        for split in plan.splits.iter().filter(|s| fresh(&s.partition, s.bucket)) {
            let partition = self.partition_id(&split.partition);
            let mut rows = read.read_split(split).await?;
            while let Some(batch) = rows.next().await {
                let keys = key_rows(&batch?, &columns, &key_types)?;
                let tx = self.begin()?;
                {
                    let mut index = tx.open_table(KEYS).map_err(|e| kv_error("loading", e))?;
                    for key in &keys {
                        let old = index
                            .insert(key.as_slice(), (pack(partition, split.bucket), now))
                            .map_err(|e| kv_error("loading", e))?
                            .map(|g| unpack(g.value().0));
                        // A key in two buckets (two writers raced, or an index TTL let a key
                        // be written again): the last one read wins, as later writes will.
                        if let Some((p, b)) = old {
                            log::warn!(
                                target: "tidelake.write",
                                "key found in two buckets ({b} and {}) of a cross-partition table at snapshot {base}",
                                split.bucket
                            );
                            self.decrement(p, b);
                        }
                        *self
                            .counts
                            .entry(partition)
                            .or_default()
                            .entry(split.bucket)
                            .or_default() += 1;
                    }
                }
                tx.commit().map_err(|e| kv_error("loading", e))?;
            }
        }
        Ok(())
    }

    fn begin(&self) -> Result<redb::WriteTransaction> {
        let mut tx = self.db.begin_write().map_err(|e| kv_error("writing", e))?;
        // A scratch index: nothing needs to survive a crash.
        tx.set_durability(Durability::None)
            .map_err(|e| kv_error("writing", e))?;
        Ok(tx)
    }

    /// The id of a framed partition, assigned on first sight.
    pub fn partition_id(&mut self, framed: &[u8]) -> u32 {
        if let Some(&id) = self.partition_ids.get(framed) {
            return id;
        }
        let id = self.partitions.len() as u32;
        self.partitions.push(framed.to_vec());
        self.partition_ids.insert(framed.to_vec(), id);
        id
    }

    /// The framed partition of an id from [`Self::partition_id`].
    pub fn partition(&self, id: u32) -> &[u8] {
        &self.partitions[id as usize]
    }

    fn decrement(&mut self, partition: u32, bucket: i32) {
        if let Some(n) = self
            .counts
            .get_mut(&partition)
            .and_then(|m| m.get_mut(&bucket))
        {
            *n = n.saturating_sub(1);
        }
    }

    /// Java `BucketAssigner.assignBucket` with a single assigner.
    fn assign_bucket(&mut self, partition: u32) -> i32 {
        let target = self.target_rows;
        let buckets = self.counts.entry(partition).or_default();
        let bucket = buckets
            .iter()
            .find(|(_, n)| **n < target)
            .map(|(b, _)| *b)
            .unwrap_or_else(|| {
                (0..)
                    .find(|b| !buckets.contains_key(b))
                    .expect("a free bucket id exists")
            });
        *buckets.entry(bucket).or_default() += 1;
        bucket
    }

    /// Route rows given each row's partition id, key (BinaryRow of the trimmed primary key)
    /// and `_VALUE_KIND`, in input order (see the module docs); updates the index.
    pub fn route(
        &mut self,
        partitions: &[u32],
        keys: &[Vec<u8>],
        kinds: &[i8],
    ) -> Result<Vec<Routed>> {
        let now = self.env.local_now_millis();
        let ttl = self.ttl_ms;
        let mut out = Vec::with_capacity(keys.len());
        let tx = self.begin()?;
        {
            let mut index = tx.open_table(KEYS).map_err(|e| kv_error("writing", e))?;
            for (row, key) in keys.iter().enumerate() {
                let (partition, kind) = (partitions[row], kinds[row]);
                let row = row as u32;
                let found = index
                    .get(key.as_slice())
                    .map_err(|e| kv_error("reading", e))?
                    .map(|g| g.value())
                    .filter(|(_, at)| ttl.is_none_or(|ttl| now.saturating_sub(*at) <= ttl))
                    .map(|(v, _)| unpack(v));
                match found {
                    Some((old_partition, bucket)) if old_partition == partition => {
                        out.push(Routed {
                            row,
                            partition,
                            bucket,
                            kind,
                        });
                        continue;
                    }
                    Some((old_partition, bucket)) => match self.engine {
                        MergeEngine::Deduplicate => {
                            out.push(Routed {
                                row,
                                partition: old_partition,
                                bucket,
                                kind: RowKind::Delete.code(),
                            });
                            self.decrement(old_partition, bucket);
                        }
                        MergeEngine::PartialUpdate | MergeEngine::Aggregation => {
                            out.push(Routed {
                                row,
                                partition: old_partition,
                                bucket,
                                kind,
                            });
                            continue;
                        }
                        MergeEngine::FirstRow => continue,
                    },
                    None => {}
                }
                let bucket = self.assign_bucket(partition);
                index
                    .insert(key.as_slice(), (pack(partition, bucket), now))
                    .map_err(|e| kv_error("writing", e))?;
                out.push(Routed {
                    row,
                    partition,
                    bucket,
                    kind,
                });
            }
        }
        tx.commit().map_err(|e| kv_error("writing", e))?;
        Ok(out)
    }

    /// Remember data files handed out in commit messages (see [`Self::advance_base`]).
    pub fn handed_out(&mut self, files: impl IntoIterator<Item = String>) {
        self.own_files.extend(files);
    }

    /// The newest snapshot from `base` on up to which every snapshot is a compaction or a
    /// commit of only this writer's files, handed out earlier: the index covers everything
    /// committed up to it. Stops at the first commit of another writer (or an expired
    /// snapshot), whose rows the index does not know; committing then is refused.
    pub async fn advance_base(&mut self, table: &Table, base: i64) -> Result<i64> {
        let sm = table.snapshot_manager();
        let Some(latest) = sm.latest_id().await? else {
            return Ok(base);
        };
        let mut advanced = base;
        for id in base + 1..=latest {
            let snap = match sm.snapshot(id).await {
                Ok(s) => s,
                Err(e) if e.is_missing() => break,
                Err(e) => return Err(e),
            };
            if snap.commit_kind != CommitKind::Compact {
                let added = match Self::added_files(table, &snap).await {
                    Ok(added) => added,
                    Err(e) => match sm.expired_while_reading(id, e).await {
                        Error::SnapshotExpired { .. } => break,
                        e => return Err(e),
                    },
                };
                if added.is_empty() || !added.iter().all(|f| self.own_files.contains(f)) {
                    break;
                }
                for f in &added {
                    self.own_files.remove(f);
                }
            }
            advanced = id;
        }
        Ok(advanced)
    }

    /// The data files `snapshot`'s delta adds.
    async fn added_files(table: &Table, snapshot: &Snapshot) -> Result<Vec<String>> {
        let metas = read_list(table, &snapshot.delta_manifest_list).await?;
        Ok(read_manifests(table, &metas)
            .await?
            .into_iter()
            .filter(|e| e.kind == FileKind::Add)
            .map(|e| e.file.file_name)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::env::{ManualClock, RandomIds};
    use std::sync::Arc;

    fn assigner(engine: MergeEngine, target_rows: u64) -> CrossPartitionAssigner {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("k.redb")).unwrap();
        CrossPartitionAssigner {
            db,
            _dir: dir,
            engine,
            target_rows,
            ttl_ms: None,
            partitions: Vec::new(),
            partition_ids: HashMap::new(),
            counts: HashMap::new(),
            own_files: HashSet::new(),
            env: Env::default(),
        }
    }

    fn r(row: u32, partition: u32, bucket: i32, kind: i8) -> Routed {
        Routed {
            row,
            partition,
            bucket,
            kind,
        }
    }

    fn key(k: u8) -> Vec<u8> {
        vec![k]
    }

    const I: i8 = 0;
    const D: i8 = 3;

    #[test]
    fn new_keys_fill_buckets_up_to_the_target() {
        let mut a = assigner(MergeEngine::Deduplicate, 2);
        let p = a.partition_id(b"p0");
        let keys: Vec<Vec<u8>> = (0..5).map(key).collect();
        let routed = a.route(&[p; 5], &keys, &[I; 5]).unwrap();
        let buckets: Vec<i32> = routed.iter().map(|r| r.bucket).collect();
        assert_eq!(buckets, vec![0, 0, 1, 1, 2]);
        // the same keys again stay where they are
        let again = a.route(&[p; 5], &keys, &[I; 5]).unwrap();
        assert_eq!(again, routed);
    }

    #[test]
    fn deduplicate_retracts_the_old_partition() {
        let mut a = assigner(MergeEngine::Deduplicate, 1);
        let (p0, p1) = (a.partition_id(b"p0"), a.partition_id(b"p1"));
        a.route(&[p0, p0], &[key(1), key(2)], &[I, I]).unwrap();
        // key 1 moves: -D in (p0, 0), +I in p1 (its bucket 0); then moves back within the batch
        let routed = a.route(&[p1, p0], &[key(1), key(1)], &[I, I]).unwrap();
        assert_eq!(
            routed,
            vec![
                r(0, p0, 0, D),
                r(0, p1, 0, I),
                r(1, p1, 0, D),
                // bucket 0 of p0 lost key 1, so it has room again
                r(1, p0, 0, I),
            ]
        );
        // a delete with another partition deletes the old row too (Java)
        let routed = a.route(&[p1], &[key(2)], &[D]).unwrap();
        assert_eq!(routed, vec![r(0, p0, 1, D), r(0, p1, 0, D),]);
    }

    #[test]
    fn first_row_keeps_the_old_and_partial_update_updates_it_in_place() {
        let mut a = assigner(MergeEngine::FirstRow, 10);
        let (p0, p1) = (a.partition_id(b"p0"), a.partition_id(b"p1"));
        a.route(&[p0], &[key(1)], &[I]).unwrap();
        assert_eq!(a.route(&[p1], &[key(1)], &[I]).unwrap(), vec![]);
        let mut a = assigner(MergeEngine::PartialUpdate, 10);
        let (p0, p1) = (a.partition_id(b"p0"), a.partition_id(b"p1"));
        a.route(&[p0], &[key(1)], &[I]).unwrap();
        assert_eq!(
            a.route(&[p1], &[key(1)], &[I]).unwrap(),
            vec![r(0, p0, 0, I)]
        );
    }

    #[test]
    fn ttl_forgets_old_entries() {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let mut a = assigner(MergeEngine::Deduplicate, 10);
        a.env = Env::new(clock.clone(), Arc::new(RandomIds));
        a.ttl_ms = Some(1000);
        let (p0, p1) = (a.partition_id(b"p0"), a.partition_id(b"p1"));
        a.route(&[p0], &[key(1)], &[I]).unwrap();
        clock.set(1_001_000);
        let routed = a.route(&[p1], &[key(1)], &[I]).unwrap();
        assert_eq!(
            routed,
            vec![r(0, p0, 0, D), r(0, p1, 0, I)],
            "within the TTL"
        );
        clock.set(2_001_001);
        let routed = a.route(&[p0], &[key(1)], &[I]).unwrap();
        assert_eq!(routed, vec![r(0, p0, 0, I)], "expired: a new key");
    }
}
