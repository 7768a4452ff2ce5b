//! Scan planning: snapshot → manifest lists → manifests → live files → pruned splits.
//!
//! Mirrors Java `AbstractFileStoreScan` + `MergeTreeSplitGenerator`:
//! 1. resolve the snapshot (latest, id, tag or timestamp) and the schema to read with;
//! 2. read the base and delta manifest lists, skip manifests whose partition statistics cannot
//!    match the filter, and replay the rest without the entries of pruned partitions, of the
//!    postpone bucket and of level 0 where batch reads hide it (deletion-vector and first-row
//!    tables) ([`crate::state::LiveFiles`]);
//! 3. drop files created before the bound of `scan.mode` = `from-file-creation-time` (Java
//!    `FileCreationTimeStartingScanner`: a file filter, so a primary-key table merges only the
//!    newer files, as in Java), files of buckets the filter cannot match (fixed buckets by the pinned keys' bucket,
//!    dynamic buckets by their `HASH` index, `super::hash_index`), files whose key (primary-key tables)
//!    or value (append tables) statistics cannot match and files whose bloom-filter index rules
//!    out the filter's `=`/`in` values (`super::file_index`; key columns on primary-key tables);
//! 4. group what remains by (partition, bucket) into [`Split`]s, attaching deletion vectors from
//!    the snapshot's index manifest. Data-evolution tables are not pruned by file statistics
//!    (Java `DataEvolutionFileStoreScan`): files of one row range are read together
//!    (`crate::read::evolution`); a change read of a file holding only some columns of its
//!    rows (`_WRITE_COLS`) fails with [`Error::Unsupported`].
//!
//! No data file is opened while planning (index files of files with an index are, when the
//! filter has an `=`/`in` leaf).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::answers_beyond_points;
use tidelake_spec::manifest::{
    DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats,
};
use tidelake_spec::options::{ChangelogProducer, IncrementalBetweenScanMode};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::{CommitKind, Snapshot};
use tidelake_spec::types::DataField;

use super::bucket_filter::BucketFilter;
use super::{file_index, hash_index};
use crate::changelogs::ChangelogStore;
use crate::error::{Error, Result};
use crate::io::epoch_ms_of_local_wall;
use crate::layout::TableLayout;
use crate::scan::fallback::add_fallback_splits;
use crate::scan::predicate::{BoundPredicate, Predicate, StatsProvider};
use crate::scan::split::{FileIndexRef, Split, SplitFile};
use crate::state::{read_list, read_manifests, BucketFiles, IndexPaths, LiveFiles, Pruning};
use crate::table::Table;

/// Which snapshot a read sees.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum SnapshotSelector {
    #[default]
    Latest,
    Id(i64),
    Tag(String),
    /// The newest snapshot committed at or before this epoch-millisecond time.
    TimestampMs(i64),
}

/// What to scan.
#[derive(Clone, Debug, Default)]
pub struct ScanRequest {
    pub snapshot: SnapshotSelector,
    pub filter: Option<Predicate>,
    /// Table options overridden for this read only (Paimon's dynamic options), e.g.
    /// `deletion-vectors.merge-on-read`.
    pub options: Vec<(String, String)>,
}

/// The result of planning.
#[derive(Clone, Debug)]
pub struct ScanPlan {
    /// The snapshot read; `None` for a table without snapshots (the plan is empty).
    pub snapshot: Option<Snapshot>,
    /// The schema rows are returned in: the latest schema for latest reads, the snapshot's
    /// schema for time travel.
    pub schema: Arc<TableSchema>,
    pub splits: Vec<Split>,
}

/// Resolve a selector to a snapshot (`None` only for `Latest` on an empty table).
pub async fn resolve_snapshot(
    table: &Table,
    selector: &SnapshotSelector,
) -> Result<Option<Snapshot>> {
    let sm = table.snapshot_manager();
    match selector {
        SnapshotSelector::Latest => sm.latest().await,
        SnapshotSelector::Id(id) => sm.snapshot(*id).await.map(Some),
        SnapshotSelector::Tag(name) => Ok(Some(sm.tag(name).await?.snapshot)),
        SnapshotSelector::TimestampMs(ts) => match sm.at_or_before(*ts).await? {
            Some(s) => Ok(Some(s)),
            None => Err(Error::not_found(
                "snapshot",
                format!(
                    "no snapshot of {} was committed at or before {ts} ms",
                    table.location()
                ),
            )),
        },
    }
}

/// `schema` with `options` overriding its table options.
fn with_options(schema: Arc<TableSchema>, options: &[(String, String)]) -> Arc<TableSchema> {
    if options.is_empty() {
        return schema;
    }
    let mut copy = (*schema).clone();
    for (k, v) in options {
        copy.options.set(k.clone(), v.clone());
    }
    Arc::new(copy)
}

/// Plan a batch scan (with the splits of the table's `scan.fallback-branch`, if any).
pub async fn plan_scan(table: &Table, request: &ScanRequest) -> Result<ScanPlan> {
    let mut plan = plan_branch(table, request).await?;
    add_fallback_splits(table, request, &mut plan).await?;
    Ok(plan)
}

/// Plan a batch scan of the table's own branch. A latest read whose snapshot expires while it
/// is planned plans the new latest ([`crate::snapshots::SnapshotManager::read_latest`]); time
/// travel to a snapshot that expires meanwhile is [`Error::SnapshotExpired`].
pub(crate) async fn plan_branch(table: &Table, request: &ScanRequest) -> Result<ScanPlan> {
    let sm = table.snapshot_manager();
    if let SnapshotSelector::Latest = request.snapshot {
        let schema = with_options(table.schema().clone(), &request.options);
        let filter = request
            .filter
            .as_ref()
            .map(|p| p.bind(&schema.fields))
            .transpose()?;
        let planner = Planner::new(table, &schema, filter)?;
        let planned = sm.read_latest(|snap| planner.plan(snap)).await?;
        let (snapshot, splits) =
            planned.map_or((None, Vec::new()), |(snap, splits)| (Some(snap), splits));
        return Ok(ScanPlan {
            snapshot,
            schema,
            splits,
        });
    }
    let snapshot = resolve_snapshot(table, &request.snapshot).await?;
    let schema = match &snapshot {
        None => table.schema().clone(),
        Some(s) => table.schema_by_id(s.schema_id).await?,
    };
    let schema = with_options(schema, &request.options);
    let Some(snap) = snapshot else {
        return Ok(ScanPlan {
            snapshot: None,
            schema,
            splits: Vec::new(),
        });
    };
    let filter = request
        .filter
        .as_ref()
        .map(|p| p.bind(&schema.fields))
        .transpose()?;
    let planner = Planner::new(table, &schema, filter)?;
    let splits = match planner.plan(snap.clone()).await {
        Ok(splits) => splits,
        Err(e) => return Err(sm.expired_while_reading(snap.id, e).await),
    };
    Ok(ScanPlan {
        snapshot: Some(snap),
        schema,
        splits,
    })
}

/// Plan a read of the changes between snapshots `start_exclusive` and `end_inclusive` (the
/// latest by default), as `mode` says (`None`: the table's `incremental-between-scan-mode`).
///
/// Snapshots that expired are read from their long-lived changelogs when the table keeps
/// them (a decoupled changelog lifecycle, [`crate::changelogs`]), as Java's streaming reads do.
///
/// * `delta`: the data files APPEND snapshots in `(start, end]` added; `changelog`: the
///   changelog files of those snapshots (tables with a changelog producer); `auto`: changelog
///   when the table has a changelog producer, else delta (Java's follow-up scanners). Splits are
///   per (snapshot, partition, bucket), in snapshot order, read without merging.
/// * `diff` (Java `IncrementalDiffStartingScanner`): the difference between the rows of the
///   start and the end snapshot, whatever happened between them (expired snapshots included):
///   one split per (partition, bucket) whose files differ ([`plan_diff`]).
pub async fn plan_changes(
    table: &Table,
    start_exclusive: i64,
    end_inclusive: Option<i64>,
    mode: Option<IncrementalBetweenScanMode>,
) -> Result<ScanPlan> {
    if start_exclusive < 0 {
        return Err(Error::invalid(format!(
            "the start snapshot of a change range must be >= 0, got {start_exclusive}"
        )));
    }
    let schema = table.schema().clone();
    let sm = table.snapshot_manager();
    let Some(latest) = sm.latest_id().await? else {
        return Ok(ScanPlan {
            snapshot: None,
            schema,
            splits: Vec::new(),
        });
    };
    let end = end_inclusive.unwrap_or(latest);
    if end > latest || start_exclusive > end {
        return Err(Error::invalid(format!(
            "change range ({start_exclusive}, {end}] is outside the table's snapshots (latest is {latest})"
        )));
    }
    let spec = |e| Error::from_spec("table options", e);
    let opts = schema.options();
    let producer = opts.changelog_producer().map_err(spec)?;
    let uses_changelog = match mode
        .map_or_else(|| opts.incremental_between_scan_mode(), Ok)
        .map_err(spec)?
    {
        IncrementalBetweenScanMode::Diff => {
            let start = if start_exclusive == 0 {
                None
            } else {
                Some(sm.snapshot(start_exclusive).await?)
            };
            return plan_diff(table, start.as_ref(), &sm.snapshot(end).await?).await;
        }
        IncrementalBetweenScanMode::Auto => producer != ChangelogProducer::None,
        IncrementalBetweenScanMode::Delta => false,
        IncrementalBetweenScanMode::Changelog if producer == ChangelogProducer::None => {
            return Err(Error::invalid(format!(
                "{} has no changelog (changelog-producer is none): read its changes with mode \
                 'delta' or 'diff'",
                table.location()
            )));
        }
        IncrementalBetweenScanMode::Changelog => true,
    };
    // Java `NextSnapshotFetcher`: a snapshot that expired is read from its long-lived
    // changelog (`changelog/changelog-N`) when the table keeps them.
    let changelogs = ChangelogStore::new(table.branch_io().clone());
    let snapshot_earliest = sm.earliest_id().await?.unwrap_or(1);
    let earliest = match changelogs.earliest_id().await? {
        Some(c) => c.min(snapshot_earliest),
        None => snapshot_earliest,
    };
    if start_exclusive + 1 < earliest {
        return Err(Error::SnapshotExpired {
            id: start_exclusive + 1,
            detail: format!(
                "table {}; available snapshots are {earliest} to {latest} (the 'diff' mode \
                 compares two snapshots without the ones between)",
                table.location()
            ),
        });
    }
    let planner = Planner::new(table, &schema, None)?;
    let mut splits = Vec::new();
    let mut end_snapshot = None;
    for id in (start_exclusive + 1)..=end {
        let snap = if id < snapshot_earliest {
            match changelogs.read(id).await? {
                Some(changelog) => changelog,
                None => sm.snapshot(id).await?,
            }
        } else {
            sm.snapshot(id).await?
        };
        let list = if uses_changelog {
            snap.changelog_manifest_list.clone()
        } else if snap.commit_kind == CommitKind::Append {
            Some(snap.delta_manifest_list.clone())
        } else {
            None
        };
        if let Some(list) = list {
            let read = async { read_manifests(table, &read_list(table, &list).await?).await };
            let entries = match read.await {
                Ok(entries) => entries.into_iter().filter(|e| e.kind == FileKind::Add),
                Err(e) => return Err(sm.expired_while_reading(id, e).await),
            };
            let added = LiveFiles::from_entries(entries.map(|e| (None, e)), &mut Pruning::all())?;
            for e in added.entries() {
                refuse_column_files(&planner.layout, e)?;
            }
            splits.extend(planner.splits(id, added.into_buckets())?);
        }
        end_snapshot = Some(snap);
    }
    Ok(ScanPlan {
        snapshot: end_snapshot,
        schema,
        splits,
    })
}

/// Plan the difference between the rows of `start` (none: an empty table) and `end`, one
/// split per (partition, bucket) whose files differ (a file with a changed deletion vector
/// counts as changed); buckets with the same files are skipped.
///
/// Primary-key tables: the split holds all the bucket's files at the start (`before_files`)
/// and at the end (`files`), so the read compares the merged rows of both. Java keeps only the
/// files one side lacks, which misses a delete whose record lands in a new file while the
/// deleted row stays in a file both sides share (the new file's merge drops the delete); the
/// data diff Paimon documents ("comparing data of end snapshot with data of start snapshot")
/// needs the whole bucket. Append tables: rows are never changed in place, so the start's
/// files the end lacks and the end's files the start lacks are the difference. A diff across a
/// bucket-count change is refused, as in Java.
pub async fn plan_diff(
    table: &Table,
    start: Option<&Snapshot>,
    end: &Snapshot,
) -> Result<ScanPlan> {
    let schema = table.schema().clone();
    if schema
        .options()
        .data_evolution_enabled()
        .map_err(|e| Error::from_spec("table options", e))?
    {
        return Err(Error::Unsupported(
            "diff reads of data-evolution tables (their files change columns of existing rows)"
                .into(),
        ));
    }
    let planner = Planner::new(table, &schema, None)?;
    let before = match start {
        Some(s) => planner.plan(s.clone()).await?,
        None => Vec::new(),
    };
    let after = planner.plan(end.clone()).await?;
    type Identity = (String, Option<(String, u64, u64)>);
    let identity = |f: &SplitFile| -> Identity {
        let dv = f
            .deletion
            .as_ref()
            .map(|d| (d.path.clone(), d.offset, d.length));
        (f.file_name.clone(), dv)
    };
    /// A bucket's split at the start and at the end.
    type Sides = (Option<Split>, Option<Split>);
    let mut by_bucket: HashMap<(Vec<u8>, i32), Sides> = HashMap::new();
    for split in before {
        let at = (split.partition.clone(), split.bucket);
        by_bucket.entry(at).or_default().0 = Some(split);
    }
    for split in after {
        let at = (split.partition.clone(), split.bucket);
        by_bucket.entry(at).or_default().1 = Some(split);
    }
    let mut splits = Vec::new();
    for (old, new) in by_bucket.into_values() {
        if let (Some(o), Some(n)) = (&old, &new) {
            if o.total_buckets != n.total_buckets {
                return Err(Error::Unsupported(format!(
                    "a diff read across a bucket-count change ({} -> {} buckets in {})",
                    o.total_buckets, n.total_buckets, n.bucket_path
                )));
            }
        }
        let old_ids: HashSet<Identity> = old
            .iter()
            .flat_map(|s| s.files.iter().map(identity))
            .collect();
        let new_ids: HashSet<Identity> = new
            .iter()
            .flat_map(|s| s.files.iter().map(identity))
            .collect();
        let Some(mut split) = new.clone().or(old.clone()) else {
            continue;
        };
        if old_ids == new_ids {
            continue;
        }
        let whole_bucket = planner.has_primary_key;
        let gone: Vec<SplitFile> = old
            .map(|s| {
                let kept = |f: &SplitFile| whole_bucket || !new_ids.contains(&identity(f));
                s.files.into_iter().filter(kept).collect()
            })
            .unwrap_or_default();
        let added: Vec<SplitFile> = new
            .map(|s| {
                let kept = |f: &SplitFile| whole_bucket || !old_ids.contains(&identity(f));
                s.files.into_iter().filter(kept).collect()
            })
            .unwrap_or_default();
        split.snapshot_id = end.id;
        split.files = added;
        split.before_files = Some(gone);
        split.raw_convertible = false;
        splits.push(split);
    }
    splits.sort_by(|a, b| (&a.partition, a.bucket).cmp(&(&b.partition, b.bucket)));
    Ok(ScanPlan {
        snapshot: Some(end.clone()),
        schema,
        splits,
    })
}

/// [`Error::Unsupported`] for a change read of a data file that holds only some columns of its
/// rows (`_WRITE_COLS` set: Java writers with a write type, on `data-evolution.enabled`
/// tables): such a file changes columns of existing rows, which no row-level change (+I/-D)
/// describes; batch reads merge it with the other files of its rows
/// (`crate::read::evolution`).
fn refuse_column_files(layout: &TableLayout, e: &ManifestEntry) -> Result<()> {
    let Some(columns) = &e.file.write_cols else {
        return Ok(());
    };
    let rows = match e.file.first_row_id {
        Some(first) => format!("rows {first}..{} by row id", first + e.file.row_count),
        None => format!("{} rows", e.file.row_count),
    };
    let partition = layout
        .decode_partition(&e.partition)
        .and_then(|v| layout.partition_path(&v))
        .unwrap_or_default();
    Err(Error::Unsupported(format!(
        "reading data file {} (partition '{partition}', bucket {}): it holds only columns [{}] of its {rows} \
         (a data-evolution write), which updates columns of existing rows: changes cannot \
         be read as row changes (batch reads of the snapshot merge it)",
        e.file.file_name,
        e.bucket,
        columns.join(", ")
    )))
}

/// Statistics of a stats row, addressed by column name.
struct RowStats<'a> {
    names: Vec<&'a str>,
    mins: Vec<Datum>,
    maxs: Vec<Datum>,
    nulls: Vec<Option<i64>>,
    row_count: i64,
}

impl<'a> RowStats<'a> {
    /// Decode `stats` covering `fields`; `None` when the stats are absent or unreadable.
    fn decode(
        stats: &SimpleStats,
        fields: &[&'a DataField],
        row_count: i64,
    ) -> Option<RowStats<'a>> {
        let types: Vec<_> = fields.iter().map(|f| f.data_type.clone()).collect();
        let mins = decode_framed(&stats.min_values, &types).ok()?;
        let maxs = decode_framed(&stats.max_values, &types).ok()?;
        let nulls = match &stats.null_counts {
            Some(n) if n.len() == fields.len() => n.clone(),
            _ => vec![None; fields.len()],
        };
        Some(RowStats {
            names: fields.iter().map(|f| f.name.as_str()).collect(),
            mins,
            maxs,
            nulls,
            row_count,
        })
    }

    fn position(&self, field: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == field)
    }

    /// Exact statistics of one partition (every value is both min and max).
    fn exact(fields: &'a [DataField], values: Vec<Datum>) -> RowStats<'a> {
        let nulls = values
            .iter()
            .map(|v| Some(i64::from(v.is_null())))
            .collect();
        RowStats {
            names: fields.iter().map(|f| f.name.as_str()).collect(),
            mins: values.clone(),
            maxs: values,
            nulls,
            row_count: 1,
        }
    }
}

/// Whether `filter` may match rows with statistics `stats` of `fields` (true when they are
/// unreadable).
fn stats_may_match(
    filter: &BoundPredicate,
    stats: &SimpleStats,
    fields: &[&DataField],
    row_count: i64,
) -> bool {
    RowStats::decode(stats, fields, row_count).is_none_or(|s| filter.may_match(&s))
}

impl StatsProvider for RowStats<'_> {
    fn min(&self, field: &str) -> Option<Datum> {
        self.position(field)
            .map(|i| self.mins[i].clone())
            .filter(|d| !d.is_null())
    }
    fn max(&self, field: &str) -> Option<Datum> {
        self.position(field)
            .map(|i| self.maxs[i].clone())
            .filter(|d| !d.is_null())
    }
    fn null_count(&self, field: &str) -> Option<i64> {
        self.position(field).and_then(|i| self.nulls[i])
    }
    fn row_count(&self) -> i64 {
        self.row_count
    }
}

struct Planner<'a> {
    table: &'a Table,
    schema: &'a TableSchema,
    layout: TableLayout,
    index_paths: IndexPaths,
    filter: Option<BoundPredicate>,
    /// The filter data-file indexes are consulted with (on key columns for primary-key
    /// tables); `None` when it has no leaf the table's indexes answer
    /// ([`file_index::has_index_leaf`]).
    index_filter: Option<BoundPredicate>,
    /// The filter restricted to the key columns, with the trimmed primary-key fields whose
    /// statistics files carry (`_KEY_STATS`), when it has a key leaf and the table is pruned
    /// by key statistics: asked of each manifest entry before its file metadata is decoded.
    key_filter: Option<(BoundPredicate, Vec<&'a DataField>)>,
    /// The fixed buckets the filter can match ([`BucketFilter`]); `None` for all.
    buckets: Option<BucketFilter>,
    has_primary_key: bool,
    skip_level0: bool,
    /// `data-evolution.enabled`: no pruning by file statistics.
    data_evolution: bool,
    /// `from-file-creation-time`: only data files created at or after this epoch-ms time.
    created_since_ms: Option<i64>,
}

impl<'a> Planner<'a> {
    fn new(
        table: &'a Table,
        schema: &'a TableSchema,
        filter: Option<BoundPredicate>,
    ) -> Result<Self> {
        let opts = schema.options();
        let has_primary_key = !schema.primary_keys.is_empty();
        let skip_level0 = has_primary_key
            && opts
                .batch_scan_skip_level0()
                .map_err(|e| Error::from_spec("table options", e))?;
        let data_evolution = opts
            .data_evolution_enabled()
            .map_err(|e| Error::from_spec("table options", e))?;
        let created_since_ms = opts
            .file_creation_time_filter()
            .map_err(|e| Error::from_spec("read options", e))?;
        let buckets = BucketFilter::new(schema, filter.as_ref());
        let index_filter = filter
            .as_ref()
            .filter(|_| !data_evolution)
            .and_then(|f| {
                if has_primary_key {
                    f.restricted_to_key(schema)
                } else {
                    Some(f.clone())
                }
            })
            .filter(|f| file_index::has_index_leaf(f, answers_beyond_points(opts)));
        // Key columns keep their type and position in every schema version (Paimon refuses to
        // drop or retype them), so the latest schema's key fields read every file's key stats.
        let key_fields: Vec<&DataField> = schema
            .trimmed_primary_keys()
            .iter()
            .filter_map(|k| schema.field(k))
            .collect();
        let key_filter = filter
            .as_ref()
            .filter(|_| has_primary_key && !data_evolution && !key_fields.is_empty())
            .and_then(|f| f.restricted_to_key(schema))
            .map(|f| (f, key_fields));
        Ok(Planner {
            table,
            schema,
            key_filter,
            layout: TableLayout::new(schema)?,
            index_paths: IndexPaths::new(schema)?,
            filter,
            index_filter,
            buckets,
            has_primary_key,
            skip_level0,
            data_evolution,
            created_since_ms,
        })
    }

    /// The splits of `snap` (its live files, deletion vectors applied).
    async fn plan(&self, snap: Snapshot) -> Result<Vec<Split>> {
        let mut pruning = Pruning::all()
            .manifests(|m| self.manifest_may_match(m))
            .partitions(|p| self.partition_may_match(p))
            .skip_postpone()
            .skip_level0(self.skip_level0)
            .with_index_files();
        if let Some((filter, fields)) = &self.key_filter {
            // the test [`Self::file_may_match`] repeats on the files kept (for every schema)
            pruning =
                pruning.key_stats(move |stats, rows| stats_may_match(filter, stats, fields, rows));
        }
        let mut buckets = LiveFiles::read(self.table, &snap, pruning)
            .await?
            .into_buckets();
        let mut bucket_sets: HashMap<i32, Option<BTreeSet<i32>>> = HashMap::new();
        for b in &mut buckets {
            if !self.key_index_may_match(b).await? {
                b.files.clear();
                continue;
            }
            let mut kept = Vec::with_capacity(b.files.len());
            let mut bucket_path = None;
            for e in std::mem::take(&mut b.files) {
                if self.created_in_time(&e.file)
                    && self.bucket_may_match(&e, &mut bucket_sets).await?
                    && self.file_may_match(&e).await?
                    && self.index_may_match(b, &e, &mut bucket_path).await?
                {
                    kept.push(e);
                }
            }
            b.files = kept;
        }
        buckets.retain(|b| !b.files.is_empty());
        self.splits(snap.id, buckets)
    }

    /// Java `FileCreationTimeStartingScanner`'s entry filter: the file's creation time (a
    /// local wall-clock time, `creationTimeEpochMillis`) at or after the bound; a file without
    /// one is kept.
    fn created_in_time(&self, file: &DataFileMeta) -> bool {
        match (self.created_since_ms, file.creation_time) {
            (Some(since), Some(local)) => epoch_ms_of_local_wall(local) >= since,
            _ => true,
        }
    }

    fn partition_fields(&self) -> Vec<&DataField> {
        self.layout.partition_fields.iter().collect()
    }

    fn manifest_may_match(&self, meta: &ManifestFileMeta) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        if self.layout.partition_fields.is_empty() {
            return true;
        }
        let count = meta.num_added_files + meta.num_deleted_files;
        match RowStats::decode(&meta.partition_stats, &self.partition_fields(), count) {
            Some(stats) => filter.may_match(&stats),
            None => true,
        }
    }

    fn partition_may_match(&self, partition: &[u8]) -> Result<bool> {
        let Some(filter) = &self.filter else {
            return Ok(true);
        };
        if self.layout.partition_fields.is_empty() {
            return Ok(true);
        }
        let values = self.layout.decode_partition(partition)?;
        Ok(filter.may_match(&RowStats::exact(&self.layout.partition_fields, values)))
    }

    /// Prune by bucket: `sets` caches the selected buckets per bucket count.
    async fn bucket_may_match(
        &self,
        e: &ManifestEntry,
        sets: &mut HashMap<i32, Option<BTreeSet<i32>>>,
    ) -> Result<bool> {
        let Some(filter) = &self.buckets else {
            return Ok(true);
        };
        let selected = sets
            .entry(e.total_buckets)
            .or_insert_with(|| filter.selected(e.total_buckets));
        if selected.as_ref().is_none_or(|s| s.contains(&e.bucket)) {
            return Ok(true);
        }
        if e.file.schema_id == self.schema.id {
            return Ok(false);
        }
        // a file bucketed from other key bytes is kept
        Ok(!filter.same_key_types(&*self.table.schema_by_id(e.file.schema_id).await?))
    }

    /// The paths of the `HASH` index files of bucket `b`, whose directory is `bucket_dir`.
    fn key_index_paths(&self, b: &BucketFiles, bucket_dir: &str) -> Vec<String> {
        b.hash_index
            .iter()
            .map(|f| self.index_paths.path(bucket_dir, f))
            .collect()
    }

    /// Prune a dynamic-bucket table's bucket by its `HASH` index ([`hash_index`]): false when
    /// the index lists none of the keys the filter pins and no file of the bucket was hashed
    /// from other key bytes.
    async fn key_index_may_match(&self, b: &BucketFiles) -> Result<bool> {
        let Some((filter, wanted)) = self
            .buckets
            .as_ref()
            .and_then(|f| Some((f, f.key_hashes()?)))
        else {
            return Ok(true);
        };
        let bucket_dir = self
            .layout
            .bucket_path(&self.layout.decode_partition(&b.partition)?, b.bucket)?;
        let paths = self.key_index_paths(b, &bucket_dir);
        let index = hash_index::load_all(self.table.io(), &paths, false).await?;
        let mut other_key_types = false;
        for e in &b.files {
            if e.file.schema_id != self.schema.id
                && !filter.same_key_types(&*self.table.schema_by_id(e.file.schema_id).await?)
            {
                other_key_types = true;
                break;
            }
        }
        Ok(hash_index::bucket_may_hold(&index, wanted, other_key_types))
    }

    /// Prune by key statistics (primary-key tables: every version of a key is in range) or
    /// value statistics (append tables). Statistics are read in the file's own schema and
    /// addressed by the current column names through field ids.
    async fn file_may_match(&self, e: &ManifestEntry) -> Result<bool> {
        let Some(filter) = &self.filter else {
            return Ok(true);
        };
        if self.data_evolution {
            // a file's rows may take columns from other files of their row range
            return Ok(true);
        }
        let file = &e.file;
        let file_schema = if file.schema_id == self.schema.id {
            None
        } else {
            Some(self.table.schema_by_id(file.schema_id).await?)
        };
        let file_schema: &TableSchema = file_schema.as_deref().unwrap_or(self.schema);
        let (stats, stat_fields): (&SimpleStats, Vec<&DataField>) = if self.has_primary_key {
            let keys = file_schema.trimmed_primary_keys();
            (
                &file.key_stats,
                keys.iter().filter_map(|k| file_schema.field(k)).collect(),
            )
        } else {
            let cols: Vec<&DataField> = match &file.value_stats_cols {
                None => file_schema.fields.iter().collect(),
                Some(names) => names.iter().filter_map(|n| file_schema.field(n)).collect(),
            };
            (&file.value_stats, cols)
        };
        if stat_fields.is_empty() {
            return Ok(true);
        }
        // Re-address the statistics by the current schema's names (renames keep ids).
        let renamed: Vec<DataField> = stat_fields
            .iter()
            .filter_map(|f| {
                self.schema.field_by_id(f.id).map(|cur| DataField {
                    name: cur.name.clone(),
                    ..(*f).clone()
                })
            })
            .collect();
        if renamed.len() != stat_fields.len() {
            return Ok(true);
        }
        let refs: Vec<&DataField> = renamed.iter().collect();
        Ok(stats_may_match(filter, stats, &refs, file.row_count))
    }

    /// Prune by the file's data-file index ([`file_index`]); `bucket_path`
    /// caches the bucket's directory.
    async fn index_may_match(
        &self,
        b: &BucketFiles,
        e: &ManifestEntry,
        bucket_path: &mut Option<String>,
    ) -> Result<bool> {
        let Some(filter) = &self.index_filter else {
            return Ok(true);
        };
        if e.file.embedded_index.is_none() && e.file.extra_files.is_empty() {
            return Ok(true);
        }
        let dir = match bucket_path {
            Some(dir) => dir,
            None => {
                let values = self.layout.decode_partition(&b.partition)?;
                bucket_path.insert(self.layout.bucket_path(&values, b.bucket)?)
            }
        };
        let path = e.file.path(dir);
        let Some(at) = FileIndexRef::of(&path, &e.file) else {
            return Ok(true);
        };
        let index = file_index::load(self.table.io(), &at).await?;
        let file_schema = self.table.schema_by_id(e.file.schema_id).await?;
        file_index::may_match(filter, &index, &file_schema)
    }

    /// Whether `file` (of the current schema) is known to hold its partition's columns:
    /// primary-key files always do; an append file does when its statistics know every
    /// partition column's null count (a migrated Hive file's say nothing of them, as its
    /// files do not hold them).
    fn holds_partition_columns(&self, file: &DataFileMeta) -> bool {
        if self.has_primary_key || self.layout.partition_fields.is_empty() {
            return true;
        }
        if file.schema_id != self.schema.id {
            return false;
        }
        let Some(null_counts) = &file.value_stats.null_counts else {
            return false;
        };
        let position = |name: &str| match &file.value_stats_cols {
            None => self.schema.fields.iter().position(|f| f.name == name),
            Some(cols) => cols.iter().position(|c| c == name),
        };
        self.layout.partition_fields.iter().all(|p| {
            position(&p.name)
                .and_then(|i| null_counts.get(i).copied().flatten())
                .is_some()
        })
    }

    /// One split per bucket.
    fn splits(&self, snapshot_id: i64, buckets: Vec<BucketFiles>) -> Result<Vec<Split>> {
        let mut splits = Vec::with_capacity(buckets.len());
        for mut b in buckets {
            if !self.has_primary_key {
                // Java `AppendOnlySplitGenerator`: an append bucket's files in write order (a
                // compaction's output comes back where its inputs were)
                b.files.sort_by_key(|e| e.file.min_sequence_number);
            }
            let values = self.layout.decode_partition(&b.partition)?;
            let bucket_path = self.layout.bucket_path(&values, b.bucket)?;
            let files: Vec<SplitFile> = b
                .files
                .iter()
                .map(|e| {
                    let dv = b.deletion_vector(&e.file.file_name).cloned();
                    let mut file = SplitFile::new(e.file.path(&bucket_path), &e.file, dv);
                    file.holds_partition_columns = self.holds_partition_columns(&e.file);
                    file
                })
                .collect();
            let raw_convertible = !self.has_primary_key
                || self.skip_level0
                || (files.len() == 1 && files[0].delete_row_count == Some(0));
            let key_index = self.key_index_paths(&b, &bucket_path);
            let (partition, bucket, total_buckets) = (b.partition, b.bucket, b.total_buckets);
            splits.push(Split {
                snapshot_id,
                partition,
                bucket,
                total_buckets,
                bucket_path,
                files,
                raw_convertible,
                branch: None,
                before_files: None,
                key_index,
            });
        }
        Ok(splits)
    }
}
