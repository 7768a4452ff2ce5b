//! Scan planning: snapshot → manifest lists → manifests → live files → pruned splits.
//!
//! Mirrors Java `AbstractFileStoreScan` + `MergeTreeSplitGenerator`:
//! 1. resolve the snapshot (latest, id, tag or timestamp) and the schema to read with;
//! 2. read the base and delta manifest lists, skip manifests whose partition statistics cannot
//!    match the filter, decode the rest in parallel and replay their entries in list order
//!    ([`merge_entries`]: ADD then DELETE of the same file identifier cancel out);
//! 3. drop entries of pruned partitions, of the postpone bucket, of level 0 where batch reads
//!    hide it (deletion-vector and first-row tables), and files whose key (primary-key tables) or
//!    value (append tables) statistics cannot match;
//! 4. group what remains by (partition, bucket) into [`Split`]s, attaching deletion vectors from
//!    the snapshot's index manifest. Data-evolution tables are not pruned by file statistics
//!    (Java `DataEvolutionFileStoreScan`): files of one row range are read together
//!    (`crate::read::evolution`); a change read of a file holding only some columns of its
//!    rows (`_WRITE_COLS`) fails with [`Error::Unsupported`].
//!
//! No data file is opened while planning.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{
    read_index_manifest, read_manifest, read_manifest_list, FileIdentifier, FileKind, IndexFileMeta, IndexManifestEntry,
    ManifestEntry, ManifestFileMeta, SimpleStats, DELETION_VECTORS_INDEX,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::{CommitKind, Snapshot};
use tidelake_spec::types::DataField;

use super::bucket_filter::BucketFilter;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::scan::fallback::add_fallback_splits;
use crate::scan::predicate::{BoundPredicate, Predicate, StatsProvider};
use crate::scan::split::{DeletionFileRef, Split, SplitFile};
use crate::table::Table;

/// How many manifests are fetched and decoded at once.
const MANIFEST_PARALLELISM: usize = 16;
const MANIFEST_DIR: &str = "manifest";
const INDEX_DIR: &str = "index";

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
pub async fn resolve_snapshot(table: &Table, selector: &SnapshotSelector) -> Result<Option<Snapshot>> {
    let sm = table.snapshot_manager();
    match selector {
        SnapshotSelector::Latest => sm.latest().await,
        SnapshotSelector::Id(id) => sm.snapshot(*id).await.map(Some),
        SnapshotSelector::Tag(name) => Ok(Some(sm.tag(name).await?.snapshot)),
        SnapshotSelector::TimestampMs(ts) => match sm.at_or_before(*ts).await? {
            Some(s) => Ok(Some(s)),
            None => Err(Error::not_found(
                "snapshot",
                format!("no snapshot of {} was committed at or before {ts} ms", table.location()),
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
        let filter = request.filter.as_ref().map(|p| p.bind(&schema.fields)).transpose()?;
        let planner = Planner::new(table, &schema, filter)?;
        let planned = sm.read_latest(|snap| planner.plan(snap)).await?;
        let (snapshot, splits) = planned.map_or((None, Vec::new()), |(snap, splits)| (Some(snap), splits));
        return Ok(ScanPlan { snapshot, schema, splits });
    }
    let snapshot = resolve_snapshot(table, &request.snapshot).await?;
    let schema = match &snapshot {
        None => table.schema().clone(),
        Some(s) => table.schema_by_id(s.schema_id).await?,
    };
    let schema = with_options(schema, &request.options);
    let Some(snap) = snapshot else {
        return Ok(ScanPlan { snapshot: None, schema, splits: Vec::new() });
    };
    let filter = request.filter.as_ref().map(|p| p.bind(&schema.fields)).transpose()?;
    let planner = Planner::new(table, &schema, filter)?;
    let splits = match planner.plan(snap.clone()).await {
        Ok(splits) => splits,
        Err(e) => return Err(sm.expired_while_reading(snap.id, e).await),
    };
    Ok(ScanPlan { snapshot: Some(snap), schema, splits })
}

/// Plan a read of the changes that snapshots `(start_exclusive, end_inclusive]` committed, in
/// snapshot order (Java's follow-up scanners): with a changelog producer, the changelog files of
/// snapshots that have a changelog manifest list; otherwise the data files that APPEND snapshots
/// added (COMPACT and OVERWRITE snapshots carry no new changes). Splits are per (snapshot,
/// partition, bucket) and are read without merging.
pub async fn plan_changes(table: &Table, start_exclusive: i64, end_inclusive: Option<i64>) -> Result<ScanPlan> {
    if start_exclusive < 0 {
        return Err(Error::invalid(format!("the start snapshot of a change range must be >= 0, got {start_exclusive}")));
    }
    let schema = table.schema().clone();
    let sm = table.snapshot_manager();
    let Some(latest) = sm.latest_id().await? else {
        return Ok(ScanPlan { snapshot: None, schema, splits: Vec::new() });
    };
    let end = end_inclusive.unwrap_or(latest);
    if end > latest || start_exclusive > end {
        return Err(Error::invalid(format!(
            "change range ({start_exclusive}, {end}] is outside the table's snapshots (latest is {latest})"
        )));
    }
    let earliest = sm.earliest_id().await?.unwrap_or(1);
    if start_exclusive + 1 < earliest {
        return Err(Error::not_found(
            "snapshot",
            format!("snapshot {} of {} has expired; available snapshots are {earliest} to {latest}", start_exclusive + 1, table.location()),
        ));
    }
    let uses_changelog = schema.options().changelog_producer().map_err(|e| Error::from_spec("table options", e))?
        != tidelake_spec::options::ChangelogProducer::None;
    let planner = Planner::new(table, &schema, None)?;
    let mut splits = Vec::new();
    let mut end_snapshot = None;
    for id in (start_exclusive + 1)..=end {
        let snap = sm.snapshot(id).await?;
        let list = if uses_changelog {
            snap.changelog_manifest_list.clone()
        } else if snap.commit_kind == CommitKind::Append {
            Some(snap.delta_manifest_list.clone())
        } else {
            None
        };
        if let Some(list) = list {
            let metas = read_list(table, &list).await?;
            let entries: Vec<ManifestEntry> =
                read_manifests(table, &metas).await?.into_iter().filter(|e| e.kind == FileKind::Add).collect();
            for e in &entries {
                refuse_column_files(&planner.layout, e)?;
            }
            splits.extend(planner.splits(id, entries, &HashMap::new())?);
        }
        end_snapshot = Some(snap);
    }
    Ok(ScanPlan { snapshot: end_snapshot, schema, splits })
}

/// [`Error::Unsupported`] for a change read of a data file that holds only some columns of its
/// rows (`_WRITE_COLS` set: Java writers with a write type, on `data-evolution.enabled`
/// tables): such a file changes columns of existing rows, which no row-level change (+I/-D)
/// describes; batch reads merge it with the other files of its rows
/// (`crate::read::evolution`).
fn refuse_column_files(layout: &TableLayout, e: &ManifestEntry) -> Result<()> {
    let Some(columns) = &e.file.write_cols else { return Ok(()) };
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

/// Replay manifest entries in order (Java `FileEntry.mergeEntries`): an ADD must not repeat an
/// identifier already present; a DELETE removes the matching ADD, or is kept when its ADD is not
/// among `entries` (it lives in an older manifest). Prefer [`read_merged`] where the manifests
/// are at hand: its "added twice" error names them.
pub fn merge_entries(entries: impl IntoIterator<Item = ManifestEntry>) -> Result<Vec<ManifestEntry>> {
    merge_sourced(entries.into_iter().map(|e| (None, e)))
}

/// [`merge_entries`] over entries tagged with the manifest they come from.
fn merge_sourced<'a>(entries: impl IntoIterator<Item = (Option<&'a str>, ManifestEntry)>) -> Result<Vec<ManifestEntry>> {
    let mut slots: Vec<Option<ManifestEntry>> = Vec::new();
    let mut index: HashMap<FileIdentifier, (usize, Option<&'a str>)> = HashMap::new();
    for (manifest, entry) in entries {
        let id = entry.identifier();
        match entry.kind {
            FileKind::Add => {
                if let Some((_, first)) = index.get(&id) {
                    let by = match (first, manifest) {
                        (Some(a), Some(b)) if *a == b => format!(" (both by manifest {MANIFEST_DIR}/{a})"),
                        (Some(a), Some(b)) => format!(" (by manifests {MANIFEST_DIR}/{a} and {MANIFEST_DIR}/{b})"),
                        _ => String::new(),
                    };
                    return Err(Error::corrupt(
                        "manifest",
                        format!("file {} is added twice in bucket {}{by}", id.file_name, id.bucket),
                    ));
                }
                index.insert(id, (slots.len(), manifest));
                slots.push(Some(entry));
            }
            FileKind::Delete => match index.remove(&id) {
                Some((pos, _)) => slots[pos] = None,
                None => {
                    index.insert(id, (slots.len(), manifest));
                    slots.push(Some(entry));
                }
            },
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Read manifests `metas` and replay their entries in order ([`merge_entries`]); a file added
/// twice is a [`Error::Corrupt`] naming the manifests that add it.
pub async fn read_merged(table: &Table, metas: &[ManifestFileMeta]) -> Result<Vec<ManifestEntry>> {
    let chunks = read_manifest_chunks(table, metas).await?;
    merge_sourced(
        metas
            .iter()
            .zip(chunks)
            .flat_map(|(m, chunk)| chunk.into_iter().map(move |e| (Some(m.file_name.as_str()), e))),
    )
}

/// The live index files of a snapshot (its index manifest lists the complete set; DELETE
/// entries, if any, cancel earlier ADDs of the same file).
pub async fn live_index_entries(table: &Table, snap: &Snapshot) -> Result<Vec<IndexManifestEntry>> {
    let Some(name) = &snap.index_manifest else { return Ok(Vec::new()) };
    let rel = format!("{MANIFEST_DIR}/{name}");
    let bytes = table.io().read(&rel).await?;
    let entries = read_index_manifest(&bytes).map_err(|e| Error::from_spec(table.io().display(&rel), e))?;
    let mut live: Vec<IndexManifestEntry> = Vec::new();
    for e in entries {
        match e.kind {
            FileKind::Add => live.push(e),
            FileKind::Delete => live.retain(|l| l.index_file.file_name != e.index_file.file_name),
        }
    }
    Ok(live)
}

/// The deletion vectors one index entry holds, as (data file name, where its vector lives);
/// empty for index types other than deletion vectors.
pub(crate) fn deletion_file_refs(e: &IndexManifestEntry) -> Result<Vec<(String, DeletionFileRef)>> {
    index_file_refs(&e.index_file)
}

/// The deletion vectors a deletion-vector index file holds, per data file name (none for
/// other index types).
pub(crate) fn index_file_refs(index_file: &IndexFileMeta) -> Result<Vec<(String, DeletionFileRef)>> {
    if index_file.index_type != DELETION_VECTORS_INDEX {
        return Ok(Vec::new());
    }
    let path = match &index_file.external_path {
        Some(p) => p.clone(),
        None => format!("{INDEX_DIR}/{}", index_file.file_name),
    };
    index_file
        .dv_ranges
        .iter()
        .flatten()
        .map(|r| {
            let bad = |what: &str| {
                Error::corrupt(&path, format!("negative deletion vector {what} for {}", r.data_file_name))
            };
            let dv = DeletionFileRef {
                path: path.clone(),
                offset: u64::try_from(r.offset).map_err(|_| bad("offset"))?,
                length: u64::try_from(r.length).map_err(|_| bad("length"))?,
                cardinality: r.cardinality,
            };
            Ok((r.data_file_name.clone(), dv))
        })
        .collect()
}

/// Read manifest list `name` of `table`.
pub async fn read_list(table: &Table, name: &str) -> Result<Vec<ManifestFileMeta>> {
    let rel = format!("{MANIFEST_DIR}/{name}");
    let bytes = table.io().read(&rel).await?;
    read_manifest_list(&bytes).map_err(|e| Error::from_spec(table.io().display(&rel), e))
}

/// Read manifest file `name` of `table`.
pub async fn read_entries(table: &Table, name: &str) -> Result<Vec<ManifestEntry>> {
    let rel = format!("{MANIFEST_DIR}/{name}");
    let bytes = table.io().read(&rel).await?;
    read_manifest(&bytes).map_err(|e| Error::from_spec(table.io().display(&rel), e))
}

/// Decode many manifests concurrently, keeping their order.
pub async fn read_manifests(table: &Table, metas: &[ManifestFileMeta]) -> Result<Vec<ManifestEntry>> {
    Ok(read_manifest_chunks(table, metas).await?.into_iter().flatten().collect())
}

/// The entries of each of `metas`, decoded concurrently, in order.
async fn read_manifest_chunks(table: &Table, metas: &[ManifestFileMeta]) -> Result<Vec<Vec<ManifestEntry>>> {
    let names: Vec<String> = metas.iter().map(|m| m.file_name.clone()).collect();
    let reads = names.into_iter().map(|name| {
        let table = table.clone();
        async move { read_entries(&table, &name).await }
    });
    stream::iter(reads).buffered(MANIFEST_PARALLELISM).try_collect().await
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
    fn decode(stats: &SimpleStats, fields: &[&'a DataField], row_count: i64) -> Option<RowStats<'a>> {
        let types: Vec<_> = fields.iter().map(|f| f.data_type.clone()).collect();
        let mins = decode_framed(&stats.min_values, &types).ok()?;
        let maxs = decode_framed(&stats.max_values, &types).ok()?;
        let nulls = match &stats.null_counts {
            Some(n) if n.len() == fields.len() => n.clone(),
            _ => vec![None; fields.len()],
        };
        Some(RowStats { names: fields.iter().map(|f| f.name.as_str()).collect(), mins, maxs, nulls, row_count })
    }

    fn position(&self, field: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == field)
    }

    /// Exact statistics of one partition (every value is both min and max).
    fn exact(fields: &'a [DataField], values: Vec<Datum>) -> RowStats<'a> {
        let nulls = values.iter().map(|v| Some(i64::from(v.is_null()))).collect();
        RowStats {
            names: fields.iter().map(|f| f.name.as_str()).collect(),
            mins: values.clone(),
            maxs: values,
            nulls,
            row_count: 1,
        }
    }
}

impl StatsProvider for RowStats<'_> {
    fn min(&self, field: &str) -> Option<Datum> {
        self.position(field).map(|i| self.mins[i].clone()).filter(|d| !d.is_null())
    }
    fn max(&self, field: &str) -> Option<Datum> {
        self.position(field).map(|i| self.maxs[i].clone()).filter(|d| !d.is_null())
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
    filter: Option<BoundPredicate>,
    /// The fixed buckets the filter can match ([`BucketFilter`]); `None` for all.
    buckets: Option<BucketFilter>,
    has_primary_key: bool,
    skip_level0: bool,
    /// `data-evolution.enabled`: no pruning by file statistics.
    data_evolution: bool,
}

impl<'a> Planner<'a> {
    fn new(table: &'a Table, schema: &'a TableSchema, filter: Option<BoundPredicate>) -> Result<Self> {
        let opts = schema.options();
        let has_primary_key = !schema.primary_keys.is_empty();
        let skip_level0 =
            has_primary_key && opts.batch_scan_skip_level0().map_err(|e| Error::from_spec("table options", e))?;
        let data_evolution = opts.data_evolution_enabled().map_err(|e| Error::from_spec("table options", e))?;
        let buckets = BucketFilter::new(schema, filter.as_ref());
        Ok(Planner { table, schema, layout: TableLayout::new(schema)?, filter, buckets, has_primary_key, skip_level0, data_evolution })
    }

    /// The splits of `snap` (its live files, deletion vectors applied).
    async fn plan(&self, snap: Snapshot) -> Result<Vec<Split>> {
        let entries = self.live_entries(&snap).await?;
        let deletion = self.deletion_files(&snap).await?;
        self.splits(snap.id, entries, &deletion)
    }

    fn partition_fields(&self) -> Vec<&DataField> {
        self.layout.partition_fields.iter().collect()
    }

    fn manifest_may_match(&self, meta: &ManifestFileMeta) -> bool {
        let Some(filter) = &self.filter else { return true };
        if self.layout.partition_fields.is_empty() {
            return true;
        }
        let count = meta.num_added_files + meta.num_deleted_files;
        match RowStats::decode(&meta.partition_stats, &self.partition_fields(), count) {
            Some(stats) => filter.may_match(&stats),
            None => true,
        }
    }

    async fn live_entries(&self, snap: &Snapshot) -> Result<Vec<ManifestEntry>> {
        let (base, delta) = futures::try_join!(
            read_list(self.table, &snap.base_manifest_list),
            read_list(self.table, &snap.delta_manifest_list)
        )?;
        let metas: Vec<ManifestFileMeta> =
            base.into_iter().chain(delta).filter(|m| self.manifest_may_match(m)).collect();
        let entries = read_merged(self.table, &metas).await?;
        let mut live = Vec::with_capacity(entries.len());
        let mut partition_verdicts: HashMap<Vec<u8>, bool> = HashMap::new();
        let mut bucket_sets: HashMap<i32, Option<BTreeSet<i32>>> = HashMap::new();
        for e in entries {
            if e.kind != FileKind::Add || e.bucket == -2 || (self.skip_level0 && e.file.level == 0) {
                continue;
            }
            let keep = match partition_verdicts.get(&e.partition) {
                Some(k) => *k,
                None => {
                    let k = self.partition_may_match(&e.partition)?;
                    partition_verdicts.insert(e.partition.clone(), k);
                    k
                }
            };
            if keep && self.bucket_may_match(&e, &mut bucket_sets).await? && self.file_may_match(&e).await? {
                live.push(e);
            }
        }
        Ok(live)
    }

    fn partition_may_match(&self, partition: &[u8]) -> Result<bool> {
        let Some(filter) = &self.filter else { return Ok(true) };
        if self.layout.partition_fields.is_empty() {
            return Ok(true);
        }
        let values = self.layout.decode_partition(partition)?;
        Ok(filter.may_match(&RowStats::exact(&self.layout.partition_fields, values)))
    }

    /// Prune by bucket: `sets` caches the selected buckets per bucket count.
    async fn bucket_may_match(&self, e: &ManifestEntry, sets: &mut HashMap<i32, Option<BTreeSet<i32>>>) -> Result<bool> {
        let Some(filter) = &self.buckets else { return Ok(true) };
        let selected = sets.entry(e.total_buckets).or_insert_with(|| filter.selected(e.total_buckets));
        if selected.as_ref().is_none_or(|s| s.contains(&e.bucket)) {
            return Ok(true);
        }
        if e.file.schema_id == self.schema.id {
            return Ok(false);
        }
        // a file bucketed from other key bytes is kept
        Ok(!filter.same_key_types(&*self.table.schema_by_id(e.file.schema_id).await?))
    }

    /// Prune by key statistics (primary-key tables: every version of a key is in range) or
    /// value statistics (append tables). Statistics are read in the file's own schema and
    /// addressed by the current column names through field ids.
    async fn file_may_match(&self, e: &ManifestEntry) -> Result<bool> {
        let Some(filter) = &self.filter else { return Ok(true) };
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
            (&file.key_stats, keys.iter().filter_map(|k| file_schema.field(k)).collect())
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
            .filter_map(|f| self.schema.field_by_id(f.id).map(|cur| DataField { name: cur.name.clone(), ..(*f).clone() }))
            .collect();
        if renamed.len() != stat_fields.len() {
            return Ok(true);
        }
        let refs: Vec<&DataField> = renamed.iter().collect();
        Ok(match RowStats::decode(stats, &refs, file.row_count) {
            Some(s) => filter.may_match(&s),
            None => true,
        })
    }

    /// Deletion vectors of the snapshot, by (partition, bucket, data file name).
    async fn deletion_files(&self, snap: &Snapshot) -> Result<HashMap<(Vec<u8>, i32, String), DeletionFileRef>> {
        let mut out = HashMap::new();
        for e in live_index_entries(self.table, snap).await? {
            for (data_file, dv) in deletion_file_refs(&e)? {
                out.insert((e.partition.clone(), e.bucket, data_file), dv);
            }
        }
        Ok(out)
    }

    fn splits(
        &self,
        snapshot_id: i64,
        entries: Vec<ManifestEntry>,
        deletion: &HashMap<(Vec<u8>, i32, String), DeletionFileRef>,
    ) -> Result<Vec<Split>> {
        let mut groups: Vec<((Vec<u8>, i32), Vec<ManifestEntry>)> = Vec::new();
        let mut index: HashMap<(Vec<u8>, i32), usize> = HashMap::new();
        for e in entries {
            let key = (e.partition.clone(), e.bucket);
            match index.get(&key) {
                Some(&i) => groups[i].1.push(e),
                None => {
                    index.insert(key.clone(), groups.len());
                    groups.push((key, vec![e]));
                }
            }
        }
        let mut splits = Vec::with_capacity(groups.len());
        for ((partition, bucket), mut entries) in groups {
            if !self.has_primary_key {
                // Java `AppendOnlySplitGenerator`: an append bucket's files in write order (a
                // compaction's output comes back where its inputs were)
                entries.sort_by_key(|e| e.file.min_sequence_number);
            }
            let values = self.layout.decode_partition(&partition)?;
            let bucket_path = self.layout.bucket_path(&values, bucket)?;
            let total_buckets = entries[0].total_buckets;
            let files: Vec<SplitFile> = entries
                .iter()
                .map(|e| {
                    let path = match &e.file.external_path {
                        Some(p) => p.clone(),
                        None => format!("{bucket_path}/{}", e.file.file_name),
                    };
                    let dv = deletion.get(&(partition.clone(), bucket, e.file.file_name.clone())).cloned();
                    SplitFile::new(path, &e.file, dv)
                })
                .collect();
            let raw_convertible = !self.has_primary_key
                || self.skip_level0
                || (files.len() == 1 && files[0].delete_row_count == Some(0));
            splits.push(Split { snapshot_id, partition, bucket, total_buckets, bucket_path, files, raw_convertible, branch: None });
        }
        Ok(splits)
    }
}
