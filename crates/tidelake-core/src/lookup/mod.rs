//! Point lookups: the latest row of each of some primary keys, without a scan.
//!
//! A [`Lookuper`] holds one snapshot's live files (every split of a batch read, deletion
//! vectors attached) grouped by partition, with each file's decoded key range. A lookup then,
//! per key:
//! 1. finds the key's partition (tables whose primary key holds the partition columns; other
//!    tables, cross-partition upsert tables, look in every partition);
//! 2. finds its bucket with Paimon's bucket hash on fixed-bucket tables
//!    ([`crate::scan::bucket_filter::BucketFilter`], which also keeps buckets of files
//!    bucketed under other key types), and through the buckets' `HASH` index files on
//!    dynamic-bucket tables (`crate::scan::hash_index`); other bucket modes look in every
//!    bucket;
//! 3. keeps the bucket's files whose `[min_key, max_key]` holds the key and whose data-file
//!    index (bloom filters on key columns, `crate::scan::file_index`) does not rule it out.
//!
//! Each bucket's candidate files are read as one split restricted to the bucket's keys
//! ([`KeySet`]: rows of other keys are dropped before the merge; Parquet pages without any of
//! the keys are skipped by the page index) and merged by the table's merge engine exactly as a
//! batch read merges them; a bucket left with one file without retract rows is read without
//! merging. When a key's merged row is just its newest record (`deduplicate`), the files'
//! sequence numbers do not overlap and the read cache holds every candidate file's key column,
//! each key is read from the newest file holding it only, so its older versions are never
//! decoded ([`BucketReads::newest_files`]). Buckets (and those files) are read on tasks of
//! their own ([`CONCURRENT_BUCKETS`] at a time), so a lookup of many keys decodes on every
//! core; a lookup of one bucket is read on the caller's task. The rows are returned in the
//! order of the keys given.
//!
//! A lookuper may keep what it reads of immutable files in a byte-bounded
//! [`crate::io::ReadCache`]; a refresh plans the new snapshot through the same cache, so only
//! new manifests are decoded and files still live keep their footers and key ranges.
//!
//! Invariant: a lookup returns, for every key, the row a batch read of the same snapshot
//! returns for that key (pruning only drops files and pages that cannot hold the key, and every
//! version of a key is kept or dropped together, but for versions older than one that alone
//! decides the key).

mod keys;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use arrow_array::{Int64Array, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::FileIndex;
use tidelake_spec::schema::TableSchema;

use crate::error::{Error, Result};
use crate::io::ReadCache;
use crate::layout::TableLayout;
use crate::lsm::key::compare_keys;
use crate::read::data_file::kept_key_column;
use crate::read::key_set::{integer_keys, rows_in_ascending, KeySet};
use crate::read::split_read::ReadContext;
use crate::scan::bucket_filter::BucketFilter;
use crate::scan::predicate::{BoundColumn, BoundLeaf, BoundPredicate, CompareOp, LeafTest};
use crate::scan::{file_index, hash_index};
use crate::scan::{plan_scan, ScanRequest, SnapshotSelector, Split, SplitFile};
use crate::table::Table;
use crate::tasks::joined;
use keys::LookupKeys;

/// Buckets read concurrently by one lookup.
const CONCURRENT_BUCKETS: usize = 8;

/// A file's smallest and largest key (trimmed primary key), decoded.
type KeyRange = (Vec<Datum>, Vec<Datum>);

/// The live files of one (partition, bucket).
struct PlannedBucket {
    /// Every live file of the bucket (the batch read's split).
    split: Split,
    /// Per file of `split`: its key range (`None` when it cannot be decoded: always read).
    ranges: Vec<Option<KeyRange>>,
    /// The schemas, other than the read schema, the bucket's files were written with.
    file_schemas: Vec<Arc<TableSchema>>,
    /// Per file of `split`: its data-file index, loaded on first use.
    indexes: Vec<tokio::sync::OnceCell<Arc<FileIndex>>>,
    /// The bucket's `HASH` index files (dynamic-bucket tables), loaded on first use.
    key_hashes: tokio::sync::OnceCell<Vec<Arc<hash_index::KeyHashes>>>,
}

/// One snapshot, planned for lookups.
struct PlannedSnapshot {
    table: Table,
    snapshot_id: Option<i64>,
    schema: Arc<TableSchema>,
    /// Partitions (decoded values) sorted in key order, each with its buckets.
    partitions: Vec<(Vec<Datum>, Vec<PlannedBucket>)>,
    /// Whether keys hold the partition values (the partition columns are key columns).
    keyed_partitions: bool,
}

impl PlannedSnapshot {
    /// Plan `selector`'s snapshot of `table`; key ranges of files in `known` are reused.
    async fn plan(
        table: Table,
        selector: SnapshotSelector,
        known: Option<&PlannedSnapshot>,
    ) -> Result<PlannedSnapshot> {
        let plan = plan_scan(
            &table,
            &ScanRequest {
                snapshot: selector,
                filter: None,
                options: Vec::new(),
            },
        )
        .await?;
        let schema = plan.schema.clone();
        check_one_row_per_key(&schema)?;
        let layout = TableLayout::new(&schema)?;
        let key_types = layout.key_types();
        let mut reused: BTreeMap<&str, &Option<KeyRange>> = BTreeMap::new();
        for b in known
            .iter()
            .flat_map(|k| k.partitions.iter().flat_map(|p| &p.1))
        {
            for (f, r) in b.split.files.iter().zip(&b.ranges) {
                reused.insert(&f.file_name, r);
            }
        }
        let mut partitions: Vec<(Vec<Datum>, Vec<PlannedBucket>)> = Vec::new();
        for split in plan.splits {
            let values = layout.decode_partition(&split.partition)?;
            let ranges = split
                .files
                .iter()
                .map(|f| match reused.get(f.file_name.as_str()) {
                    Some(r) => (*r).clone(),
                    None => {
                        let min = decode_framed(&f.min_key, &key_types).ok()?;
                        let max = decode_framed(&f.max_key, &key_types).ok()?;
                        Some((min, max))
                    }
                })
                .collect();
            let mut file_schemas: Vec<Arc<TableSchema>> = Vec::new();
            for f in &split.files {
                if f.schema_id != schema.id
                    && split.branch.is_none()
                    && !file_schemas.iter().any(|s| s.id == f.schema_id)
                {
                    file_schemas.push(table.schema_by_id(f.schema_id).await?);
                }
            }
            let indexes = split.files.iter().map(|_| Default::default()).collect();
            let bucket = PlannedBucket {
                split,
                ranges,
                file_schemas,
                indexes,
                key_hashes: Default::default(),
            };
            match partitions.binary_search_by(|(p, _)| compare_keys(p, &values)) {
                Ok(i) => partitions[i].1.push(bucket),
                Err(i) => partitions.insert(i, (values, vec![bucket])),
            }
        }
        let keyed_partitions = schema
            .partition_keys
            .iter()
            .all(|p| schema.primary_keys.contains(p));
        Ok(PlannedSnapshot {
            table,
            snapshot_id: plan.snapshot.map(|s| s.id),
            schema,
            partitions,
            keyed_partitions,
        })
    }

    /// The buckets that may hold each key, and the files of each that may: (partition index,
    /// bucket index) → (key indices, file mask).
    async fn candidates(&self, keys: &LookupKeys) -> Result<BTreeMap<(usize, usize), Work>> {
        let part_pos = keys.positions(&self.schema.partition_keys);
        let trimmed_pos = keys.positions(&self.schema.trimmed_primary_keys());
        let mut work: BTreeMap<(usize, usize), Work> = BTreeMap::new();
        for (ki, key) in keys.values.iter().enumerate() {
            let partitions: Vec<usize> = if self.keyed_partitions {
                let values: Vec<Datum> = part_pos.iter().map(|&p| key[p].clone()).collect();
                self.partitions
                    .binary_search_by(|(p, _)| compare_keys(p, &values))
                    .into_iter()
                    .collect()
            } else {
                (0..self.partitions.len()).collect()
            };
            let trimmed: Vec<Datum> = trimmed_pos.iter().map(|&p| key[p].clone()).collect();
            let buckets = BucketFilter::new(&self.schema, Some(&key_predicate(keys, key)));
            for pi in partitions {
                for (bi, b) in self.partitions[pi].1.iter().enumerate() {
                    if !bucket_may_hold(buckets.as_ref(), b)
                        || !b.key_index_may_hold(&self.table, buckets.as_ref()).await?
                    {
                        continue;
                    }
                    let holds: Vec<bool> = b
                        .ranges
                        .iter()
                        .map(|r| r.as_ref().is_none_or(|r| in_range(r, &trimmed)))
                        .collect();
                    if !holds.contains(&true) {
                        continue;
                    }
                    let w = work.entry((pi, bi)).or_insert_with(|| Work {
                        keys: Vec::new(),
                        files: vec![false; holds.len()],
                    });
                    w.keys.push(ki as u32);
                    w.files.iter_mut().zip(holds).for_each(|(f, h)| *f |= h);
                }
            }
        }
        Ok(work)
    }
}

impl PlannedBucket {
    /// Whether the bucket's `HASH` index (dynamic-bucket tables) may list a key `buckets`
    /// selects from (`None`, another bucket mode, a fallback-branch bucket or files hashed from
    /// other key bytes: it may).
    async fn key_index_may_hold(
        &self,
        table: &Table,
        buckets: Option<&BucketFilter>,
    ) -> Result<bool> {
        let Some((filter, wanted)) = buckets.and_then(|f| Some((f, f.key_hashes()?))) else {
            return Ok(true);
        };
        if self.split.branch.is_some() {
            return Ok(true);
        }
        let index = self
            .key_hashes
            .get_or_try_init(|| hash_index::load_all(table.io(), &self.split.key_index, true))
            .await?;
        let other_key_types = self.file_schemas.iter().any(|s| !filter.same_key_types(s));
        Ok(hash_index::bucket_may_hold(index, wanted, other_key_types))
    }

    /// The files `w` selected, without those whose data-file index (on key columns) rules
    /// out every key of `w`.
    async fn indexed_files(
        &self,
        state: &PlannedSnapshot,
        keys: &LookupKeys,
        w: &Work,
    ) -> Result<Vec<SplitFile>> {
        let mut files = Vec::new();
        for (i, f) in self.split.files.iter().enumerate() {
            if !w.files[i] {
                continue;
            }
            if let Some(at) = &f.index {
                let index = self.indexes[i]
                    .get_or_try_init(|| file_index::load(state.table.io(), at))
                    .await?;
                let file_schema = state.table.schema_by_id(f.schema_id).await?;
                let mut may_hold = false;
                for k in &w.keys {
                    let key = key_predicate(keys, &keys.values[*k as usize]);
                    if file_index::may_match(&key, index, &file_schema)? {
                        may_hold = true;
                        break;
                    }
                }
                if !may_hold {
                    continue;
                }
            }
            files.push(f.clone());
        }
        Ok(files)
    }
}

/// A file and the keys (indices into a lookup's keys) read from it.
type KeysOfFile = (SplitFile, Vec<u32>);

/// The keys a bucket is read for and which of its files may hold them.
struct Work {
    keys: Vec<u32>,
    files: Vec<bool>,
}

/// Whether `key` lies in `range` (bounds included).
/// A primary key without every partition column keeps one row per key on dynamic-bucket
/// tables only (a global key index moves a key between partitions); with fixed or postponed
/// buckets Paimon (1.3) keeps a row per partition the key was written to, which no lookup of
/// "the row of a key" can answer.
fn check_one_row_per_key(schema: &TableSchema) -> Result<()> {
    let bucket = schema
        .options()
        .bucket()
        .map_err(|e| Error::from_spec("table options", e))?;
    if schema.cross_partition_update() && bucket != -1 {
        return Err(Error::Unsupported(format!(
            "lookups of a table whose primary key {:?} lacks partition columns of {:?} with \
             bucket = {bucket}: such a table keeps a row for each partition a key was written to; \
             read the key's rows with a filter instead",
            schema.primary_keys, schema.partition_keys
        )));
    }
    Ok(())
}

fn in_range(range: &KeyRange, key: &[Datum]) -> bool {
    compare_keys(&range.0, key) != Ordering::Greater
        && compare_keys(key, &range.1) != Ordering::Greater
}

/// Whether bucket `b` may hold a key `buckets` selects from (`None`: every bucket may).
fn bucket_may_hold(buckets: Option<&BucketFilter>, b: &PlannedBucket) -> bool {
    let Some(filter) = buckets else {
        return true;
    };
    if b.split.branch.is_some() {
        return true;
    }
    let selected = filter.selected(b.split.total_buckets);
    selected.is_none_or(|s| s.contains(&b.split.bucket))
        || b.file_schemas.iter().any(|s| !filter.same_key_types(s))
}

/// `key` as a filter: every primary-key column equal to the key's value.
fn key_predicate(keys: &LookupKeys, key: &[Datum]) -> BoundPredicate {
    BoundPredicate::And(
        keys.fields
            .iter()
            .zip(key)
            .map(|(f, v)| eq_leaf(f, v.clone()))
            .collect(),
    )
}

fn eq_leaf(f: &tidelake_spec::types::DataField, value: Datum) -> BoundPredicate {
    BoundPredicate::Leaf(BoundLeaf {
        column: BoundColumn {
            name: f.name.clone(),
            id: f.id,
            data_type: f.data_type.clone(),
        },
        test: LeafTest::Compare {
            op: CompareOp::Eq,
            value,
        },
    })
}

/// A filter every row of the keys `indices` matches, on the columns at `positions`, for
/// skipping pages: `in` on a single column, else one conjunction of equalities per key.
fn pages_predicate(keys: &LookupKeys, positions: &[usize], indices: &[u32]) -> BoundPredicate {
    if let [p] = positions {
        let f = &keys.fields[*p];
        return BoundPredicate::Leaf(BoundLeaf {
            column: BoundColumn {
                name: f.name.clone(),
                id: f.id,
                data_type: f.data_type.clone(),
            },
            test: LeafTest::In {
                values: indices
                    .iter()
                    .map(|&k| keys.values[k as usize][*p].clone())
                    .collect(),
                negated: false,
            },
        });
    }
    BoundPredicate::Or(
        indices
            .iter()
            .map(|&k| {
                BoundPredicate::And(
                    positions
                        .iter()
                        .map(|&p| eq_leaf(&keys.fields[p], keys.values[k as usize][p].clone()))
                        .collect(),
                )
            })
            .collect(),
    )
}

/// A long-lived reader of the latest rows of primary keys at one snapshot, which it can move to
/// the latest ([`Lookuper::refresh`]). Safe to share between threads: lookups read an immutable
/// planned snapshot that a refresh replaces.
pub struct Lookuper {
    state: RwLock<Arc<PlannedSnapshot>>,
}

impl Lookuper {
    /// Plan `snapshot` of `table` for lookups. With `cache_bytes` > 0 (`None`: the table's
    /// `lookup.cache-max-memory-size`, Paimon's lookup cache, 256 MiB by default), what lookups
    /// read of immutable files (Parquet footers and page indexes, files' key columns, deletion
    /// vectors, manifests, hash indexes) is kept in a [`ReadCache`] of that many bytes, shared by
    /// every lookup and kept across refreshes; with 0 nothing is kept (not even in a cache the
    /// table has).
    pub async fn open(
        table: Table,
        snapshot: SnapshotSelector,
        cache_bytes: Option<usize>,
    ) -> Result<Lookuper> {
        let cache_bytes = match cache_bytes {
            Some(bytes) => bytes,
            None => {
                let option = table.schema().options().lookup_cache_max_memory_size();
                let bytes = option.map_err(|e| Error::from_spec("table options", e))?;
                usize::try_from(bytes).unwrap_or(usize::MAX)
            }
        };
        let cache = (cache_bytes > 0).then(|| Arc::new(ReadCache::new(cache_bytes)));
        Lookuper::planned(table.with_read_cache(cache), snapshot).await
    }

    /// Plan `snapshot` of `table`, reading through the table's own read cache, if any.
    async fn planned(table: Table, snapshot: SnapshotSelector) -> Result<Lookuper> {
        let planned = PlannedSnapshot::plan(table, snapshot, None).await?;
        Ok(Lookuper {
            state: RwLock::new(Arc::new(planned)),
        })
    }

    fn current(&self) -> Arc<PlannedSnapshot> {
        self.state
            .read()
            .expect("lookuper state lock poisoned")
            .clone()
    }

    /// Bytes held in the read cache (0 without one).
    pub fn cached_bytes(&self) -> usize {
        self.current()
            .table
            .io()
            .read_cache()
            .map_or(0, |c| c.used_bytes())
    }

    /// The snapshot lookups read (`None` for a table without snapshots).
    pub fn snapshot_id(&self) -> Option<i64> {
        self.current().snapshot_id
    }

    /// Move to the table's latest snapshot and schema; what is known of files still live is
    /// kept. Returns the new snapshot id.
    pub async fn refresh(&self) -> Result<Option<i64>> {
        let old = self.current();
        let table = old.table.reopen().await?;
        let planned = PlannedSnapshot::plan(table, SnapshotSelector::Latest, Some(&old)).await?;
        let id = planned.snapshot_id;
        *self.state.write().expect("lookuper state lock poisoned") = Arc::new(planned);
        Ok(id)
    }

    /// The latest row of each key of `keys` (a batch of exactly the primary-key columns), in
    /// the order of `keys`, keys without a row left out (a key given twice is returned once);
    /// `columns` of the table (all when `None`).
    pub async fn lookup(
        &self,
        keys: &RecordBatch,
        columns: Option<&[String]>,
    ) -> Result<(SchemaRef, RecordBatch)> {
        let state = self.current();
        let schema = state.schema.clone();
        let keys = LookupKeys::new(&schema, keys)?;
        let output: Vec<String> = match columns {
            Some(c) => c.to_vec(),
            None => schema.field_names().iter().map(|n| n.to_string()).collect(),
        };
        let mut read_columns = output.clone();
        for k in &schema.primary_keys {
            if !read_columns.contains(k) {
                read_columns.push(k.clone());
            }
        }
        // checks the columns and gives the output schema
        let base = ReadContext::of(state.table.clone(), &schema)
            .columns(Some(&read_columns))
            .build()?;
        let read_schema = base.output_schema();
        let newest_wins = base.newest_record_wins();
        drop(base);
        let work = if keys.len() == 0 {
            BTreeMap::new()
        } else {
            state.candidates(&keys).await?
        };
        let trimmed = keys.positions(&schema.trimmed_primary_keys());
        let trimmed_names = trimmed
            .iter()
            .map(|&p| keys.fields[p].name.clone())
            .collect();
        let read = Arc::new(BucketReads {
            state,
            keys,
            read_columns,
            trimmed,
            trimmed_names,
            newest_wins,
        });
        // several buckets: each on a task of its own, so that they decode on every core; one
        // bucket (a lookup of one key) is read here, without waking a worker thread
        let batches: Vec<Vec<RecordBatch>> = if work.len() == 1 {
            let ((pi, bi), w) = work.into_iter().next().expect("one bucket");
            vec![read.clone().bucket(pi, bi, w).await?]
        } else {
            let reads = work.into_iter().map(|((pi, bi), w)| {
                let task = tokio::spawn(read.clone().bucket(pi, bi, w));
                joined(task, "reading a bucket of a lookup")
            });
            stream::iter(reads)
                .buffer_unordered(CONCURRENT_BUCKETS)
                .try_collect()
                .await?
        };
        let keys = &read.keys;
        let rows = arrow_select::concat::concat_batches(&read_schema, batches.iter().flatten())
            .map_err(|e| Error::arrow("assembling lookup rows", e))?;
        let order: UInt32Array = keys.order(&rows)?;
        let projection: Vec<usize> = (0..output.len()).collect();
        let ordered = arrow_select::take::take_record_batch(&rows, &order)
            .and_then(|b| b.project(&projection))
            .map_err(|e| Error::arrow("ordering lookup rows", e))?;
        Ok((ordered.schema(), ordered))
    }
}

/// What the bucket reads of one lookup share.
struct BucketReads {
    state: Arc<PlannedSnapshot>,
    keys: LookupKeys,
    /// The output columns and the primary-key columns.
    read_columns: Vec<String>,
    /// Positions (in primary-key order) and names of the trimmed primary-key columns.
    trimmed: Vec<usize>,
    trimmed_names: Vec<String>,
    /// [`ReadContext::newest_record_wins`] of the lookup's reads.
    newest_wins: bool,
}

impl BucketReads {
    /// The merged rows of the keys of `w` in bucket `bi` of partition `pi` (and of no other
    /// key).
    async fn bucket(self: Arc<Self>, pi: usize, bi: usize, w: Work) -> Result<Vec<RecordBatch>> {
        let bucket = &self.state.partitions[pi].1[bi];
        let files = bucket.indexed_files(&self.state, &self.keys, &w).await?;
        let Some(newest) = self.newest_files(&files, &w.keys)? else {
            return self.read(pi, bi, files, w.keys).await;
        };
        // each file on a task of its own, as the runs of a merged read are
        let reads = newest.into_iter().map(|(file, keys)| {
            let task = tokio::spawn(self.clone().read(pi, bi, vec![file], keys));
            joined(task, "reading a file of a lookup")
        });
        let rows: Vec<Vec<RecordBatch>> = stream::iter(reads)
            .buffer_unordered(CONCURRENT_BUCKETS)
            .try_collect()
            .await?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// The merged rows of `keys` (indices into the lookup's keys) in `files` of bucket `bi` of
    /// partition `pi`.
    async fn read(
        self: Arc<Self>,
        pi: usize,
        bi: usize,
        files: Vec<SplitFile>,
        keys: Vec<u32>,
    ) -> Result<Vec<RecordBatch>> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let bucket = &self.state.partitions[pi].1[bi];
        let single = files.len() == 1 && files[0].delete_row_count == Some(0);
        let split = Split {
            raw_convertible: bucket.split.raw_convertible || single,
            files,
            ..bucket.split.clone()
        };
        let mut ctx = self.context()?;
        if !self.trimmed.is_empty() {
            let values = self.keys.take(&self.trimmed, &keys)?;
            let set = KeySet::new(self.trimmed_names.clone(), &values)?;
            let pages = pages_predicate(&self.keys, &self.trimmed, &keys);
            ctx = ctx.with_keys(Arc::new(set), Some(&pages));
        }
        Arc::new(ctx)
            .read_split(&split)
            .await?
            .try_collect::<Vec<RecordBatch>>()
            .await
    }

    fn context(&self) -> Result<ReadContext> {
        ReadContext::of(self.state.table.clone(), &self.state.schema)
            .columns(Some(&self.read_columns))
            .build()
    }

    /// Where the newest record of each of `keys` is, as (file, the keys whose newest record
    /// it holds), newest file first, when that alone decides the lookup: the table's merge keeps
    /// a key's newest record ([`ReadContext::newest_record_wins`]), the files' sequence numbers
    /// do not overlap, none has a deletion vector, and the one integer key column of every file
    /// is in the read cache (an earlier read through it put it there). Then a key's other versions
    /// are never decoded. `None` otherwise (every file is read for every key and merged).
    fn newest_files(&self, files: &[SplitFile], keys: &[u32]) -> Result<Option<Vec<KeysOfFile>>> {
        let ([_], [column]) = (self.trimmed.as_slice(), self.trimmed_names.as_slice()) else {
            return Ok(None);
        };
        if files.len() < 2 || files.iter().any(|f| f.deletion.is_some()) {
            return Ok(None);
        }
        let mut files: Vec<&SplitFile> = files.iter().collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.max_sequence_number));
        if !self.newest_wins
            || files
                .windows(2)
                .any(|w| w[1].max_sequence_number >= w[0].min_sequence_number)
        {
            return Ok(None);
        }
        let io = self.state.table.io();
        let Some(columns) = files
            .iter()
            .map(|f| kept_key_column(io, &f.path, column))
            .collect::<Option<Vec<Int64Array>>>()
        else {
            return Ok(None);
        };
        let values = self.keys.take(&self.trimmed, keys)?;
        let Some(wide) = integer_keys(&values[0])? else {
            return Ok(None);
        };
        // the keys not yet found, by value
        let mut open: BTreeMap<i64, u32> = wide
            .iter()
            .zip(keys)
            .filter_map(|(v, &k)| Some((v?, k)))
            .collect();
        let mut out = Vec::new();
        for (file, ascending) in files.into_iter().zip(columns) {
            if open.is_empty() {
                break;
            }
            let wanted: Vec<i64> = open.keys().copied().collect();
            let found: Vec<u32> = rows_in_ascending(&wanted, &ascending)
                .into_iter()
                .filter_map(|row| open.remove(&ascending.value(row)))
                .collect();
            if !found.is_empty() {
                out.push((file.clone(), found));
            }
        }
        Ok(Some(out))
    }
}

/// The latest row of each key of `keys` at `snapshot` (see [`Lookuper::lookup`]), through the
/// table's read cache, if it has one.
pub async fn lookup(
    table: &Table,
    keys: &RecordBatch,
    columns: Option<&[String]>,
    snapshot: SnapshotSelector,
) -> Result<(SchemaRef, RecordBatch)> {
    Lookuper::planned(table.clone(), snapshot)
        .await?
        .lookup(keys, columns)
        .await
}
