//! Compacting a table: plan the latest snapshot's live files per (partition, bucket), pick a
//! unit per bucket, rewrite, and commit everything as one COMPACT snapshot (Java: a dedicated
//! compaction job, `MergeTreeCompactManager.triggerCompaction` per bucket, then
//! `FileStoreCommit` with the `CompactIncrement`s).
//!
//! * Every live file is planned, level 0 included even where batch reads hide it
//!   (deletion-vector and first-row tables); the postpone bucket (-2) is skipped: on
//!   postpone-bucket tables [`super::postpone`] first moves its rows into real buckets, in a
//!   COMPACT snapshot of its own.
//! * Strategy (Java `KeyValueFileStoreWrite.createCompactStrategy`): universal compaction, or
//!   force-up-level-0 when `compaction.force-up-level-0` is set or the table needs lookup
//!   (deletion vectors, first-row, `changelog-producer=lookup`, `force-lookup`). Those tables
//!   compact with lookup as Java does, into the levels below the unit's output
//!   ([`UnitTask::deeper`]): first-row units drop their new records of keys found there; the
//!   other engines merge each level-0 key's newest older copy found there into the output and
//!   mark it in deletion vectors on deletion-vector tables ([`super::lookup`]; their units
//!   always drop retracts, Java's `forceDropDelete`). Only tables that need lookup and have
//!   `changelog-producer=full-compaction` (with `force-lookup`; deletion vectors with it are
//!   rejected at create and alter, as in Java) get every pick widened to a full compaction,
//!   which leaves no older copy behind.
//! * Changelog (`changelog-producer=full-compaction`/`lookup`): the rewriter writes changelog
//!   files next to the data files ([`super::changelog`]); they go into the COMPACT
//!   snapshot's changelog manifest list (`compact_changelog`).
//! * `full`: Java `pickFullCompaction` — every run to the max level, or, when the bucket
//!   already is one run at the max level, only its files that have a deletion vector or whose
//!   statistics show rows record-level expiry expires ([`crate::read::record_expire`]; the schemas
//!   of the files are loaded with the buckets for that).
//! * `drop_delete` (Java): the output level is not 0 and at least the highest non-empty level;
//!   always in units that maintain deletion vectors.
//! * Deletion-vector index files of a bucket are deleted by the commit once none of the data
//!   files they cover stays live (every file with a deletion vector in a unit is rewritten,
//!   which applies it); a unit that marked rows below its output replaces them all by one new
//!   index file holding every live vector of the bucket.
//!
//! Failure: if any bucket fails, or the commit fails for a known reason (e.g. a concurrent
//! commit removed an input file: [`Error::CommitConflict`]), every file written is deleted and
//! the error returned. A storage error during the commit leaves them (the outcome is unknown).
//! A commit that loses the snapshot-id race while its inputs are still live is retried and
//! rebased by [`FileStoreCommit`].

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use futures::stream::{self, StreamExt};
use serde::Serialize;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DataFileMeta, IndexFileMeta};
use tidelake_spec::options::{ChangelogProducer, MergeEngine, Options};
use tidelake_spec::snapshot::{Snapshot, BATCH_COMMIT_IDENTIFIER};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::append::AppendCompaction;
use super::changelog::{ChangelogMode, ChangelogSpec};
use super::cluster::IncrementalCluster;
use super::plan::CompactionPlan;
use super::postpone::{redistribute, Redistributed};
use super::rewriter::{delete_files, Rewriter, UnitResult, UnitTask};
use crate::commit::{CommitMessage, CommitMetrics, Committed, FileStoreCommit};
use crate::datum_arrow::datums_to_array;
use crate::error::{Error, ErrorKind, Result};
use crate::layout::TableLayout;
use crate::lsm::levels::{LevelFile, Levels};
use crate::lsm::merge::MergeConfig;
use crate::lsm::picker::{pick_full, CompactUnit, FullPick, UniversalCompaction};
use crate::read::split_read::DEFAULT_BATCH_SIZE;
use crate::scan::predicate::Predicate;
use crate::scan::Split;
use crate::snapshots::SnapshotManager;
use crate::state::{IndexPaths, LiveFiles, Pruning};
use crate::table::Table;
use crate::tasks::{self, Progress};
use crate::write::postpone::POSTPONE_BUCKET;

/// Buckets rewritten concurrently: at most 4, and no more than the cores, since a rewrite is
/// CPU-bound (decode, merge, encode) and each one in flight holds its output's open row group.
fn bucket_parallelism() -> usize {
    tasks::cores().min(4)
}

/// What to compact.
#[derive(Debug, Clone, Default)]
pub struct CompactRequest {
    /// Compact every bucket fully (one run at the max level) instead of picking by strategy.
    pub full: bool,
    /// Only partitions matching this filter (on partition columns); `None`: every partition.
    pub partitions: Option<Predicate>,
}

/// What one bucket's compaction did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketReport {
    /// Partition values as display strings (`[]` when unpartitioned).
    pub partition: Vec<(String, String)>,
    pub bucket: i32,
    pub output_level: i32,
    /// Files removed from their level / added at the output level (upgrades count in both).
    pub files_before: usize,
    pub files_after: usize,
    pub bytes_before: i64,
    pub bytes_after: i64,
    /// Files moved to the output level without rewriting.
    pub upgraded: usize,
}

/// The outcome of [`Compactor::compact`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactReport {
    /// The COMPACT snapshot, `None` when no bucket needed compaction.
    pub snapshot_id: Option<i64>,
    pub buckets: Vec<BucketReport>,
    /// What the call's COMPACT snapshots changed (a postpone move's included), summed.
    pub metrics: CommitMetrics,
}

/// The live files of one (partition, bucket).
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub bucket_dir: String,
    pub files: Vec<LevelFile>,
    /// Deletion-vector index files of the bucket.
    pub dv_index: Vec<IndexFileMeta>,
    /// The snapshot the files were listed from (`None`: the bucket had no files).
    pub base_snapshot: Option<i64>,
}

impl Bucket {
    /// A split reading `files` of the bucket row by row as they are (no merge; deletion
    /// vectors applied), at the snapshot the bucket was listed from.
    pub(crate) fn raw_split(&self, files: &[LevelFile]) -> Split {
        Split {
            snapshot_id: self.base_snapshot.unwrap_or_default(),
            partition: self.partition.clone(),
            bucket: self.bucket,
            total_buckets: self.total_buckets,
            bucket_path: self.bucket_dir.clone(),
            files: files.iter().map(LevelFile::split_file).collect(),
            raw_convertible: true,
            branch: None,
            before_files: None,
            key_index: Vec::new(),
        }
    }
}

/// A bucket with its unit, rewritten.
pub(crate) struct Done {
    pub bucket: Bucket,
    pub task: UnitTask,
    pub result: UnitResult,
}

/// Compaction settings of a table, read from its latest schema.
#[derive(Debug)]
pub struct Compactor {
    table: Table,
    layout: TableLayout,
    index_paths: IndexPaths,
    num_levels: i32,
    universal: UniversalCompaction,
    force_up_level0: bool,
    need_lookup: bool,
    /// First-row tables compact with lookup into the levels below the output (not widened).
    first_row_lookup: bool,
    /// Other tables that need lookup, but those with `changelog-producer=full-compaction`:
    /// compact with lookup into the levels below the output (not widened).
    lookup: bool,
    /// `deletion-vectors.enabled`.
    deletion_vectors: bool,
    /// `bucket = -2`: compaction first moves the postponed rows into real buckets.
    postpone: bool,
    engine: Engine,
    /// `num-sorted-run.stop-trigger`.
    stop_trigger: usize,
    /// Bounds the units rewriting at once ([`Compactor::spawn_unit`]).
    slots: Arc<Semaphore>,
}

/// How units are rewritten: merged LSM runs, appended files, or clustered files.
#[derive(Debug, Clone)]
enum Engine {
    KeyValue(Arc<Rewriter>),
    Append(Arc<AppendCompaction>),
    /// Bucket-unaware append tables with `clustering.incremental` ([`super::cluster`]).
    Cluster(Arc<IncrementalCluster>),
}

impl Compactor {
    /// A compactor of `table` at its latest schema: one built on a handle opened before a
    /// schema change refuses the files written since ([`newer_schema`]).
    pub async fn on_latest_schema(table: &Table) -> Result<Compactor> {
        Compactor::new(table.reopen().await?)
    }

    /// Compaction of `table`'s buckets: LSM trees of primary-key tables, small files of append
    /// tables ([`super::append`]).
    pub fn new(table: Table) -> Result<Compactor> {
        let schema = table.schema().clone();
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        if schema.primary_keys.is_empty() {
            let engine = if opts.bucket().map_err(spec)? == -1
                && opts.clustering_incremental().map_err(spec)?
            {
                Engine::Cluster(Arc::new(IncrementalCluster::new(
                    table.clone(),
                    universal_compaction(opts)?,
                )?))
            } else {
                Engine::Append(Arc::new(AppendCompaction::new(table.clone())?))
            };
            return Ok(Compactor {
                layout: TableLayout::new(&schema)?,
                index_paths: IndexPaths::new(&schema)?,
                num_levels: opts.num_levels().map_err(spec)?,
                universal: UniversalCompaction {
                    max_size_amp: 0,
                    size_ratio: 0,
                    trigger: usize::MAX,
                },
                force_up_level0: false,
                need_lookup: false,
                first_row_lookup: false,
                lookup: false,
                deletion_vectors: opts.deletion_vectors_enabled().map_err(spec)?,
                postpone: false,
                engine,
                stop_trigger: usize::MAX,
                slots: Arc::new(Semaphore::new(bucket_parallelism())),
                table,
            });
        }
        let changelog = ChangelogSpec::from_options(opts)?;
        let first_row_lookup = changelog.is_some_and(|c| c.mode == ChangelogMode::FirstRowLookup);
        let layout = TableLayout::new(&schema)?;
        let universal = universal_compaction(opts)?;
        let flag = |key: &str| opts.get_bool(key).map(|v| v.unwrap_or(false)).map_err(spec);
        let deletion_vectors = opts.deletion_vectors_enabled().map_err(spec)?;
        let need_lookup = deletion_vectors
            || opts.merge_engine().map_err(spec)? == MergeEngine::FirstRow
            || opts.changelog_producer().map_err(spec)? == ChangelogProducer::Lookup
            || flag("force-lookup")?;
        let lookup = need_lookup && changelog.is_none_or(|c| c.mode == ChangelogMode::Lookup);
        // Java passes the full primary key (partition columns included) to merge functions.
        let mut merge = merge_config(&schema.fields, &schema.primary_keys, opts)?;
        merge.keep_retracts = true;
        let num_levels = opts.num_levels().map_err(spec)?;
        let rewriter = Rewriter::new(
            table.clone(),
            layout.key_types(),
            merge,
            changelog,
            lookup,
            lookup && deletion_vectors,
            DEFAULT_BATCH_SIZE,
        )?;
        Ok(Compactor {
            table,
            layout,
            index_paths: IndexPaths::new(&schema)?,
            num_levels,
            universal,
            force_up_level0: flag("compaction.force-up-level-0")?,
            need_lookup,
            first_row_lookup,
            lookup,
            deletion_vectors,
            postpone: opts.bucket().map_err(spec)? == POSTPONE_BUCKET,
            engine: Engine::KeyValue(Arc::new(rewriter)),
            stop_trigger: usize::try_from(opts.num_sorted_run_stop_trigger().map_err(spec)?)
                .unwrap_or(usize::MAX),
            slots: Arc::new(Semaphore::new(bucket_parallelism())),
        })
    }

    /// Compact the latest snapshot's buckets selected by `request` and commit the result as
    /// one COMPACT snapshot (see the module docs for failure handling).
    pub async fn compact(&self, request: &CompactRequest) -> Result<CompactReport> {
        self.compact_reporting(request, None).await
    }

    /// [`Compactor::compact`], telling `progress` how far the rewrites are: [`Compactor::plan`],
    /// every task run here ([`Compactor::run_task`]'s rewrite, a few at a time), then
    /// [`Compactor::commit_plan`].
    pub async fn compact_reporting(
        &self,
        request: &CompactRequest,
        progress: Option<Progress>,
    ) -> Result<CompactReport> {
        let plan = self.plan(request).await?;
        let (committed, buckets) = self.execute(&plan, progress).await?;
        let mut report = CompactReport {
            snapshot_id: committed.last_id().or(plan.moved_commit.last_id()),
            buckets,
            metrics: plan.moved_commit.metrics().plus(committed.metrics()),
        };
        report.buckets.splice(0..0, plan.moved);
        Ok(report)
    }

    /// The tasks compacting the latest snapshot's buckets selected by `request` (see
    /// [`super::plan`]). Postpone-bucket tables first get their postponed rows moved into real
    /// buckets, committed at once (their own COMPACT snapshot, [`CompactionPlan::moved`]).
    pub async fn plan(&self, request: &CompactRequest) -> Result<CompactionPlan> {
        let moved = if self.postpone {
            let selected = |partitions: &[Vec<u8>]| match &request.partitions {
                Some(filter) => self.select_partitions(filter, partitions),
                None => Ok(partitions.iter().cloned().collect()),
            };
            redistribute(&self.table, selected).await?
        } else {
            Redistributed {
                committed: Committed::default(),
                buckets: Vec::new(),
            }
        };
        let sm = self.table.snapshot_manager();
        let latest = sm
            .read_latest(|snap| async move { self.live_buckets(&snap).await })
            .await?;
        let (snapshot_id, mut buckets) = match latest {
            Some((snap, buckets)) => (Some(snap.id), buckets),
            None => (None, Vec::new()),
        };
        let mut history = Vec::new();
        if let Some(filter) = &request.partitions {
            let partitions: Vec<Vec<u8>> = buckets.iter().map(|b| b.partition.clone()).collect();
            let selected = self.select_partitions(filter, &partitions)?;
            let others;
            (buckets, others) = buckets
                .into_iter()
                .partition(|b| selected.contains(&b.partition));
            if let Engine::Cluster(cluster) = &self.engine {
                history =
                    cluster.history_partitions(others, self.table.env().local_now_millis())?;
            }
        }
        let mut plan = self.plan_buckets(snapshot_id, buckets, request.full)?;
        // incremental clustering: idle partitions not selected are clustered fully
        plan.tasks
            .extend(self.plan_buckets(snapshot_id, history, true)?.tasks);
        plan.moved_commit = moved.committed;
        plan.moved = moved.buckets;
        Ok(plan)
    }

    /// Fully compact every bucket of the latest snapshot (Java `pickFullCompaction`: a bucket
    /// that already is one run at the max level, without deletion vectors, is left alone); the
    /// COMPACT snapshots, none when no bucket needed it.
    pub(crate) async fn compact_full(&self) -> Result<Committed> {
        let request = CompactRequest {
            full: true,
            partitions: None,
        };
        let plan = self.plan(&request).await?;
        let mut committed = plan.moved_commit.clone();
        committed.extend(self.execute(&plan, None).await?.0);
        Ok(committed)
    }

    /// Compact the (partition, bucket)s in `targets` of the latest snapshot as the table's pick
    /// says (not full); the COMPACT snapshot, none when none needed compaction.
    pub(crate) async fn compact_targets(&self, targets: &[(Vec<u8>, i32)]) -> Result<Committed> {
        let sm = self.table.snapshot_manager();
        let Some((snap, mut buckets)) = sm
            .read_latest(|snap| async move { self.live_buckets(&snap).await })
            .await?
        else {
            return Ok(Committed::default());
        };
        buckets.retain(|b| {
            targets
                .iter()
                .any(|(p, n)| *p == b.partition && *n == b.bucket)
        });
        let plan = self.plan_buckets(Some(snap.id), buckets, false)?;
        Ok(self.execute(&plan, None).await?.0)
    }

    /// Run `plan`'s tasks in this process and commit their messages: what was committed, and
    /// the buckets that changed.
    async fn execute(
        &self,
        plan: &CompactionPlan,
        progress: Option<Progress>,
    ) -> Result<(Committed, Vec<BucketReport>)> {
        let work = plan
            .tasks
            .iter()
            .map(|t| (t.bucket.clone(), t.unit.clone()))
            .collect();
        let done = self.rewrite_all(work, progress).await?;
        let report = |d: &Done| self.report(d);
        let buckets = match done.iter().map(report).collect::<Result<Vec<_>>>() {
            Ok(b) => b,
            Err(e) => {
                // Already failing: cleanup errors are secondary to `e`.
                let _ = delete_written(self, &done).await;
                return Err(e);
            }
        };
        let messages = done.iter().map(Done::message).collect();
        let committed = self.commit_plan(plan, messages).await?;
        // units whose files all stay where they are changed nothing
        let buckets = buckets
            .into_iter()
            .filter(|b| b.files_before > 0 || b.files_after > 0)
            .collect();
        Ok((committed, buckets))
    }

    /// Commit compaction messages as one COMPACT snapshot (none when all are empty); on a
    /// known failure the files they added are deleted.
    pub(crate) async fn commit(&self, messages: Vec<CommitMessage>) -> Result<Committed> {
        let messages: Vec<CommitMessage> = messages.into_iter().filter(|m| !m.is_empty()).collect();
        if messages.is_empty() {
            return Ok(Committed::default());
        }
        let user = format!("tidelake-compact-{}", self.table.env().uuid());
        let outcome = match FileStoreCommit::new(self.table.clone(), user) {
            Ok(commit) => {
                commit
                    .commit_reporting(messages.clone(), BATCH_COMMIT_IDENTIFIER, &[])
                    .await
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(outcome) => Ok(outcome.committed),
            Err(e) => {
                if e.kind() != ErrorKind::Io {
                    // Already failing: cleanup errors are secondary to `e`.
                    let _ = self.delete_added(&messages).await;
                }
                Err(e)
            }
        }
    }

    /// Delete the files compaction `messages` added: data files that are not inputs kept
    /// (upgrades), changelog and new index files.
    async fn delete_added(&self, messages: &[CommitMessage]) -> Result<()> {
        let mut first_error = None;
        for m in messages {
            let values = self.layout.decode_partition(&m.partition)?;
            let bucket_dir = self.layout.bucket_path(&values, m.bucket)?;
            let kept: HashSet<&str> = m
                .compact_before
                .iter()
                .map(|f| f.file_name.as_str())
                .collect();
            let added: Vec<DataFileMeta> = m
                .compact_after
                .iter()
                .filter(|f| !kept.contains(f.file_name.as_str()))
                .chain(&m.compact_changelog)
                .cloned()
                .collect();
            if let Err(e) = delete_files(&self.table, &bucket_dir, &added).await {
                first_error.get_or_insert(e);
            }
            for index in &m.compact_new_index_files {
                let path = self.index_paths.path(&bucket_dir, index);
                if let Err(e) = self.table.io().delete(&path).await {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// Where the table's index files live.
    pub(crate) fn index_paths(&self) -> &IndexPaths {
        &self.index_paths
    }

    /// A bucket without live files.
    pub(crate) fn empty_bucket(
        &self,
        partition: &[u8],
        bucket: i32,
        total_buckets: i32,
    ) -> Result<Bucket> {
        let values = self.layout.decode_partition(partition)?;
        Ok(Bucket {
            partition: partition.to_vec(),
            bucket,
            total_buckets,
            bucket_dir: self.layout.bucket_path(&values, bucket)?,
            files: Vec::new(),
            dv_index: Vec::new(),
            base_snapshot: None,
        })
    }

    /// The framed partitions among `partitions` that `filter` (on partition columns) selects.
    fn select_partitions(
        &self,
        filter: &Predicate,
        partitions: &[Vec<u8>],
    ) -> Result<HashSet<Vec<u8>>> {
        let fields = &self.layout.partition_fields;
        let bound = filter.bind(fields).map_err(|e| {
            Error::invalid(format!(
                "a partition filter may only use partition columns: {e}"
            ))
        })?;
        let mut partitions: Vec<&[u8]> = partitions.iter().map(Vec::as_slice).collect();
        partitions.sort_unstable();
        partitions.dedup();
        // One row per partition, one column per partition field.
        let values = partitions
            .iter()
            .map(|p| self.layout.decode_partition(p))
            .collect::<Result<Vec<_>>>()?;
        let columns = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let column: Vec<Datum> = values
                    .iter()
                    .map(|v| v.get(i).cloned().unwrap_or(Datum::Null))
                    .collect();
                datums_to_array(&column, &f.data_type)
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let schema = tidelake_spec::arrow::to_arrow_schema(fields)
            .map_err(|e| Error::from_spec("partition columns", e))?;
        let batch = RecordBatch::try_new_with_options(
            Arc::new(schema),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(partitions.len())),
        )
        .map_err(|e| Error::arrow("partition values", e))?;
        let verdicts = bound.evaluate(&batch)?;
        Ok(partitions
            .into_iter()
            .zip(verdicts.values().iter())
            .filter(|(_, keep)| *keep)
            .map(|(p, _)| p.to_vec())
            .collect())
    }

    /// [`Self::live_buckets`] of the latest snapshot (`None` without snapshots); a snapshot
    /// that expires while it is read is replaced by the new latest.
    pub(crate) async fn latest_buckets(&self) -> Result<Option<Vec<Bucket>>> {
        let sm = self.table.snapshot_manager();
        let read = sm
            .read_latest(|snap| async move { self.live_buckets(&snap).await })
            .await?;
        Ok(read.map(|(_, buckets)| buckets))
    }

    /// The live files of `snap` per (partition, bucket), level 0 included.
    pub(crate) async fn live_buckets(&self, snap: &Snapshot) -> Result<Vec<Bucket>> {
        let pruning = Pruning::all().skip_postpone().with_index_files();
        let live = LiveFiles::read(&self.table, snap, pruning).await?;
        let load_schemas = match &self.engine {
            Engine::KeyValue(rewriter) => rewriter.expires_records(),
            // a full clustering compares the clustering columns of the files' schema
            Engine::Cluster(_) => true,
            Engine::Append(_) => false,
        };
        if load_schemas {
            // picking judges files by their own schema
            let ids: BTreeSet<i64> = live
                .buckets()
                .iter()
                .flat_map(|b| b.files.iter().map(|e| e.file.schema_id))
                .collect();
            for id in ids {
                self.table.schema_by_id(id).await?;
            }
        }
        let mut buckets = Vec::with_capacity(live.buckets().len());
        for b in live.into_buckets() {
            let bucket_dir = self
                .layout
                .bucket_path(&self.layout.decode_partition(&b.partition)?, b.bucket)?;
            let mut deletion_vectors = b.deletion_vectors;
            let files = b
                .files
                .into_iter()
                .map(|e| LevelFile {
                    path: e.file.path(&bucket_dir),
                    deletion: deletion_vectors.remove(&e.file.file_name),
                    meta: e.file,
                })
                .collect();
            buckets.push(Bucket {
                partition: b.partition,
                bucket: b.bucket,
                total_buckets: b.total_buckets,
                bucket_dir,
                files,
                dv_index: b.dv_index,
                base_snapshot: Some(snap.id),
            });
        }
        Ok(buckets)
    }

    /// Whether `file` holds rows record-level expiry expires, by its statistics (its schema
    /// was loaded with the bucket, [`Self::live_buckets`]).
    fn holds_expired(&self, file: &LevelFile) -> Result<bool> {
        let Engine::KeyValue(rewriter) = &self.engine else {
            return Ok(false);
        };
        if !rewriter.expires_records() {
            return Ok(false);
        }
        let schema = self
            .table
            .cached_schema(file.meta.schema_id)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "schema {} of {} was not loaded before picking",
                    file.meta.schema_id, file.path
                ))
            })?;
        Ok(rewriter.holds_expired(&file.meta, &schema))
    }

    /// The unit to run on a bucket's files, if any (see the module docs).
    pub(crate) fn pick(&self, files: &[LevelFile], full: bool) -> Result<Option<UnitTask>> {
        match &self.engine {
            Engine::Append(append) => return Ok(append.pick(files, full)),
            Engine::Cluster(cluster) => return cluster.pick(files, full),
            Engine::KeyValue(_) => {}
        }
        let levels = Levels::new(files.to_vec(), self.num_levels)?;
        let runs = levels.run_stats();
        let num_levels = levels.number_of_levels();
        let max_level = levels.max_level();
        let unit = if full {
            match pick_full(num_levels, &runs) {
                None => return Ok(None),
                Some(FullPick::AllRuns(unit)) => unit,
                Some(FullPick::MaxLevelRun) => {
                    // Java `pickFullCompaction`: the max-level files with a deletion vector
                    // or with rows record-level expiry expires
                    let mut files = Vec::new();
                    for f in levels.all_files() {
                        if f.deletion.is_some() || self.holds_expired(f)? {
                            files.push(f.clone());
                        }
                    }
                    return Ok((!files.is_empty()).then_some(UnitTask {
                        output_level: max_level,
                        max_level,
                        files,
                        whole_levels: false,
                        drop_delete: true,
                        deeper: Vec::new(),
                    }));
                }
            }
        } else {
            let picked = if self.force_up_level0 || self.need_lookup {
                self.universal.pick_force_up_level0(num_levels, &runs)
            } else {
                self.universal.pick(num_levels, &runs)
            };
            match picked {
                None => return Ok(None),
                Some(_) if self.need_lookup && !self.first_row_lookup && !self.lookup => {
                    CompactUnit {
                        output_level: max_level,
                        runs: runs.len(),
                    }
                }
                Some(unit) => unit,
            }
        };
        let files = levels.files_of(&unit);
        // Java: nothing to do for no file, or a lone file already at the output level.
        match files.as_slice() {
            [] => return Ok(None),
            [only] if only.meta.level == unit.output_level => return Ok(None),
            _ => {}
        }
        Ok(Some(UnitTask {
            output_level: unit.output_level,
            max_level,
            drop_delete: (self.lookup && self.deletion_vectors)
                || (unit.output_level != 0
                    && unit.output_level >= levels.non_empty_highest_level()),
            files,
            whole_levels: true,
            deeper: if self.first_row_lookup || self.lookup {
                levels
                    .all_files()
                    .filter(|f| f.meta.level > unit.output_level)
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            },
        }))
    }

    /// Run every (bucket, unit), a few at a time; all or nothing.
    pub(crate) async fn rewrite_all(
        &self,
        work: Vec<(Bucket, UnitTask)>,
        progress: Option<Progress>,
    ) -> Result<Vec<Done>> {
        let total = work.len();
        let tell = |done: usize| {
            if let Some(p) = &progress {
                p(done, total);
            }
        };
        tell(0);
        let runs = work
            .into_iter()
            .map(|(bucket, task)| joined(self.spawn_unit(bucket, task)));
        let mut finished = 0;
        let outcomes: Vec<Result<Done>> = stream::iter(runs)
            .buffer_unordered(bucket_parallelism())
            .inspect(|_| {
                finished += 1;
                tell(finished);
            })
            .collect()
            .await;
        let mut done = Vec::with_capacity(outcomes.len());
        let mut first_error = None;
        for outcome in outcomes {
            match outcome {
                Ok(d) => done.push(d),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            None => Ok(done),
            Some(e) => {
                // Already failing: cleanup errors are secondary to `e`.
                let _ = delete_written(self, &done).await;
                Err(e)
            }
        }
    }

    /// Rewrite one bucket's unit in a tokio task; at most [`bucket_parallelism`] units of this
    /// compactor rewrite at once (the others wait for a slot). On error the unit's files are
    /// deleted (see [`Rewriter::run`]); an input gone with the snapshot the unit was planned on
    /// is a [`Error::CommitConflict`] ([`inputs_gone`]), and so is a unit holding a file written
    /// with a newer schema than this compactor's ([`newer_schema`]).
    pub(crate) fn spawn_unit(&self, bucket: Bucket, task: UnitTask) -> JoinHandle<Result<Done>> {
        let engine = self.engine.clone();
        let slots = self.slots.clone();
        let sm = self.table.snapshot_manager();
        let newer = newer_schema(&self.table, &task);
        tokio::spawn(async move {
            if let Some(refused) = newer {
                return Err(refused);
            }
            let _slot = slots
                .acquire_owned()
                .await
                .map_err(|_| Error::invalid("the compaction slots were closed"))?;
            let run = match &engine {
                Engine::KeyValue(rewriter) => rewriter.run(&bucket.bucket_dir, &task).await,
                Engine::Append(append) => append.run(&bucket, &task).await,
                Engine::Cluster(cluster) => cluster.run(&bucket, &task).await,
            };
            let result = match run {
                Ok(result) => result,
                Err(e) => return Err(inputs_gone(&sm, bucket.base_snapshot, e).await),
            };
            Ok(Done {
                bucket,
                task,
                result,
            })
        })
    }

    /// How many sorted runs `files` form (level-0 files count one each, other levels one).
    pub(crate) fn sorted_runs(&self, files: &[LevelFile]) -> Result<usize> {
        Ok(Levels::new(files.to_vec(), self.num_levels)?
            .run_stats()
            .len())
    }

    /// Whether writers always wait for compaction at `prepare_commit` (Java
    /// `prepareCommitWaitCompaction`): tables that need lookup, unless
    /// `lookup-wait` (formerly `changelog-producer.lookup-wait`) is false.
    pub(crate) fn lookup_wait(&self) -> Result<bool> {
        let wait = self
            .table
            .schema()
            .options()
            .lookup_wait()
            .map_err(|e| Error::from_spec("table options", e))?;
        Ok(self.need_lookup && wait)
    }

    /// `num-sorted-run.stop-trigger`: writers stall while a bucket has more sorted runs.
    pub(crate) fn stop_trigger(&self) -> usize {
        self.stop_trigger
    }

    fn report(&self, d: &Done) -> Result<BucketReport> {
        let values = self.layout.decode_partition(&d.bucket.partition)?;
        let bytes = |files: &[DataFileMeta]| files.iter().map(|f| f.file_size).sum();
        Ok(BucketReport {
            partition: self.layout.partition_spec(&values)?,
            bucket: d.bucket.bucket,
            output_level: d.task.output_level,
            files_before: d.result.before.len(),
            files_after: d.result.after.len(),
            bytes_before: bytes(&d.result.before),
            bytes_after: bytes(&d.result.after),
            upgraded: d.result.upgraded,
        })
    }
}

/// Java `UniversalCompaction` as the table's options configure it.
fn universal_compaction(opts: &Options) -> Result<UniversalCompaction> {
    let spec = |e| Error::from_spec("table options", e);
    let option_u64 = |key: &str, default: u64| -> Result<u64> {
        match opts.get_i64(key).map_err(spec)? {
            None => Ok(default),
            Some(v) => u64::try_from(v)
                .map_err(|_| Error::invalid(format!("{key} must not be negative, got {v}"))),
        }
    };
    let trigger = opts.num_sorted_run_compaction_trigger().map_err(spec)?;
    Ok(UniversalCompaction {
        max_size_amp: option_u64("compaction.max-size-amplification-percent", 200)?,
        size_ratio: option_u64("compaction.size-ratio", 1)?,
        trigger: usize::try_from(trigger).unwrap_or(1).max(1),
    })
}

/// The merge configuration of compaction: every table column, keyed by the primary key.
fn merge_config(
    fields: &[tidelake_spec::types::DataField],
    keys: &[String],
    opts: &Options,
) -> Result<MergeConfig> {
    MergeConfig::from_options(fields, keys, opts)
}

impl Done {
    /// The commit message of the rewritten bucket; deletion-vector index files whose data
    /// files all left the bucket are deleted with it.
    pub(crate) fn message(&self) -> CommitMessage {
        let d = self;
        let b = &d.bucket;
        let mut m = CommitMessage::new(b.partition.clone(), b.bucket, b.total_buckets);
        m.base_snapshot = b.base_snapshot;
        let gone: HashSet<&str> = d
            .result
            .before
            .iter()
            .map(|f| f.file_name.as_str())
            .collect();
        let back: HashSet<&str> = d
            .result
            .after
            .iter()
            .map(|f| f.file_name.as_str())
            .collect();
        let live: HashSet<&str> = b
            .files
            .iter()
            .map(|f| f.meta.file_name.as_str())
            .filter(|name| !gone.contains(name) || back.contains(name))
            .collect();
        m.compact_deleted_index_files = b
            .dv_index
            .iter()
            .filter(|index| {
                d.result.index.is_some()
                    || index
                        .dv_ranges
                        .iter()
                        .flatten()
                        .all(|r| !live.contains(r.data_file_name.as_str()))
            })
            .cloned()
            .collect();
        m.compact_new_index_files = d.result.index.iter().cloned().collect();
        m.compact_before = d.result.before.clone();
        m.compact_after = d.result.after.clone();
        m.compact_changelog = d.result.changelog.clone();
        m
    }
}

/// A unit holding a file written with a newer schema than `table`'s refused as a conflict:
/// rewriting it with `table`'s schema would drop the columns added since (a writer or
/// compaction opened before another process changed the schema; plan again at the latest).
fn newer_schema(table: &Table, task: &UnitTask) -> Option<Error> {
    let schema_id = table.schema().id;
    let newer = task
        .files
        .iter()
        .chain(&task.deeper)
        .map(|f| &f.meta)
        .find(|m| m.schema_id > schema_id)?;
    Some(Error::CommitConflict(format!(
        "{} was written with schema {}, newer than the schema {schema_id} of this compaction of {}: \
         rewriting it would drop what changed since; compact again at the latest schema",
        newer.file_name,
        newer.schema_id,
        table.location()
    )))
}

/// `err` from rewriting a unit planned on snapshot `base`: when it is a missing input and `base`
/// expired meanwhile, a concurrent compaction replaced the inputs and expiration deleted them,
/// which is a conflict (nothing was committed; planning again sees the new files).
pub(crate) async fn inputs_gone(sm: &SnapshotManager, base: Option<i64>, err: Error) -> Error {
    let Some(id) = base else { return err };
    match sm.expired_while_reading(id, err).await {
        Error::SnapshotExpired { detail, .. } => Error::CommitConflict(format!(
            "the inputs of a compaction planned on snapshot {id} were replaced by a concurrent compaction and \
             expired meanwhile: {detail}"
        )),
        err => err,
    }
}

/// The outcome of a task of [`Compactor::spawn_unit`].
pub(crate) async fn joined(handle: JoinHandle<Result<Done>>) -> Result<Done> {
    tasks::joined(handle, "a compaction task").await
}

/// Delete every file the rewritten units wrote (data, changelog, deletion-vector index).
pub(crate) async fn delete_written(c: &Compactor, done: &[Done]) -> Result<()> {
    let table = c.table();
    let mut first_error = None;
    for d in done {
        if let Err(e) = delete_files(table, &d.bucket.bucket_dir, &d.result.written).await {
            first_error.get_or_insert(e);
        }
        if let Some(index) = &d.result.index {
            let path = c.index_paths().path(&d.bucket.bucket_dir, index);
            if let Err(e) = table.io().delete(&path).await {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
