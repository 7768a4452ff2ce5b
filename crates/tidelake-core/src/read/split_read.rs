//! Reading splits into Arrow: the layer that ties file readers, the sorted-run merge, filters
//! and projection together.
//!
//! * Append splits: files are streamed one after the other (deletion vectors applied); on
//!   data-evolution tables the files of one row range are merged column-wise
//!   ([`super::evolution`]).
//! * Primary-key splits that are raw-convertible (see [`crate::scan::plan`]): files are streamed
//!   without merging; retract rows are dropped.
//! * Other primary-key splits: files are cut into sections and sorted runs
//!   ([`crate::lsm::sorted_runs`]); each section's runs go through the k-way merge. Tables that
//!   need lookup (not first-row) merge as Java's `LookupMergeFunction`: each level-0 file is a
//!   run and the files above level 0 one run of each key's newest record.
//!
//! The filter is applied to merged rows (Paimon's semantics for primary-key tables), then the
//! requested columns are projected. A filter that pins every trimmed primary-key column (`=`,
//! `in`; point scans) reads only the rows of the keys it pins, as lookups do
//! ([`ReadContext::with_keys`]): key columns decoded first, the others at those keys' rows;
//! the sorted runs of such reads are decoded concurrently, each held whole until merged (only
//! rows of the set's keys, so memory stays bounded by the keys' versions). Otherwise memory is
//! bounded by (runs × batch) per open split, where merged runs decode at most
//! [`RUN_BATCH_SIZE`] rows at a time whatever the output batch size. Streaming reads
//! ([`read_splits`]) open one split at a time, decoded on a thread of their own ahead of the
//! consumer through a bounded channel (see there for why a thread);
//! materialising reads ([`collect_splits`]) read [`COLLECT_SPLITS`] splits concurrently,
//! buffering each whole (the result holds it anyway), so they use more than one core.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use arrow_select::filter::filter_record_batch;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use futures::FutureExt;
use tidelake_spec::datum::Datum;
use tidelake_spec::options::{ChangelogProducer, MergeEngine};
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType};

use crate::datum_arrow::datums_to_array;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::lsm::kv_merge::merge_keeping_sequence;
use crate::lsm::merge::{merge_sorted_runs, MergeConfig};
use crate::lsm::merge_fn::MergeEngineConfig;
use crate::lsm::sorted_runs;
use crate::read::data_file::{read_data_file, FileFormat, PagePrune, SystemColumns};
use crate::read::deletion_vector::{read_deletion_vector, DeletionVector};
use crate::read::evolution;
use crate::read::key_set::KeySet;
use crate::read::partition_columns::{PartitionColumns, SplitValues};
use crate::read::record_expire::RecordExpire;
use crate::scan::bucket_filter::pinned_rows;
use crate::scan::predicate::{BoundPredicate, Predicate};
use crate::scan::split::{DeletionFileRef, Split, SplitFile};
use crate::table::Table;
use crate::tasks::Progress;

/// Partition columns and the values a split's rows get ([`PartitionColumns::fill`]).
type PartitionFill = (Arc<PartitionColumns>, Arc<SplitValues>);

/// `rows` with `fill` applied to every batch.
fn filled(
    rows: BoxStream<'static, Result<RecordBatch>>,
    fill: Option<PartitionFill>,
) -> BoxStream<'static, Result<RecordBatch>> {
    match fill {
        Some((columns, values)) => rows
            .and_then(move |b| futures::future::ready(columns.fill(b, &values)))
            .boxed(),
        None => rows,
    }
}

/// Default rows per output batch.
pub const DEFAULT_BATCH_SIZE: usize = 8192;
/// Rows per decoded batch of each merged sorted run. The benchmark's streamed read (11 runs,
/// 65,536-row output batches) peaks 6 MB lower at 4,096 than at 8,192, for the same CPU time.
const RUN_BATCH_SIZE: usize = 4096;
/// How many splits [`collect_splits`] (materialising) reads concurrently, one per core here.
const COLLECT_SPLITS: usize = 2;
/// Batches [`read_splits`] decodes ahead of its consumer.
const SPLIT_CHANNEL_CAPACITY: usize = 2;

/// Column of [`ReadContext::read_positioned`]: the index of the row's file in its split.
pub const FILE_INDEX_COLUMN: &str = "_FILE_INDEX";
/// Column of [`ReadContext::read_positioned`]: the row's 0-based position in its data file.
pub const ROW_POSITION_COLUMN: &str = "_ROW_POSITION";
/// Row kinds stored in `_VALUE_KIND`.
/// Leading column of change reads.
pub const ROW_KIND_COLUMN: &str = "_row_kind";

/// Everything needed to read the splits of one scan. Cheap to share across tasks.
#[derive(Debug)]
pub struct ReadContext {
    table: Table,
    /// Columns read from files (a superset of the output).
    read_fields: Vec<DataField>,
    /// Positions of the output columns within `read_fields`.
    output_positions: Vec<usize>,
    output_schema: SchemaRef,
    filter: Option<BoundPredicate>,
    /// Pages of data files skipped by `filter` (by `key_filter` on primary-key tables).
    prune: Option<PagePrune>,
    /// Primary-key tables: `filter` on the key columns only, applied to file rows before any
    /// merge (every version of a key has the same key, so a key's versions are all kept or
    /// all dropped).
    key_filter: Option<BoundPredicate>,
    /// Point lookups and point scans: only the rows of these keys, kept before any merge (as
    /// `key_filter`).
    key_set: Option<Arc<KeySet>>,
    merge: Option<Arc<MergeConfig>>,
    key_types: Vec<DataType>,
    batch_size: usize,
    /// Change reads: no merge, every stored row with its kind in a leading `_row_kind` column.
    with_row_kind: bool,
    /// Java `LookupMergeFunction` (tables that need lookup, but first-row): a key's level-0
    /// records merge with only its newest record above level 0.
    lookup_merge: bool,
    /// Compaction rewrites: rows record-level expiry expires are dropped from each file as it
    /// is opened in a run ([`ReadContext::with_record_expire`]).
    record_expire: Option<Arc<RecordExpire>>,
    /// The columns and filter it was built with, to read splits of another branch with.
    columns: Option<Vec<String>>,
    predicate: Option<Predicate>,
    /// The read of another branch's splits (`scan.fallback-branch`), set up on first use.
    branch_read: tokio::sync::OnceCell<Arc<ReadContext>>,
    /// The partition columns among `read_fields`, set from each split's partition.
    partition_columns: Option<Arc<PartitionColumns>>,
}

/// What a [`ReadContext`] reads ([`ReadContext::of`]): by default every column of the schema,
/// every row, batches of [`DEFAULT_BATCH_SIZE`] rows, merged (no row kind).
pub(crate) struct ReadSpec<'a> {
    table: Table,
    schema: &'a TableSchema,
    columns: Option<&'a [String]>,
    filter: Option<&'a Predicate>,
    batch_size: usize,
    with_row_kind: bool,
}

impl<'a> ReadSpec<'a> {
    /// Return these columns, in this order (`None`: every column).
    pub(crate) fn columns(mut self, columns: Option<&'a [String]>) -> Self {
        self.columns = columns;
        self
    }

    /// Keep the rows that match `filter` (`None`: every row).
    pub(crate) fn filter(mut self, filter: Option<&'a Predicate>) -> Self {
        self.filter = filter;
        self
    }

    pub(crate) fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows;
        self
    }

    /// Change reads: no merge, every stored row with its kind in a leading `_row_kind` column.
    pub(crate) fn with_row_kind(mut self, with_row_kind: bool) -> Self {
        self.with_row_kind = with_row_kind;
        self
    }

    pub(crate) fn build(self) -> Result<ReadContext> {
        ReadContext::new(self)
    }
}

impl ReadContext {
    /// A read of `schema`'s rows, set up by [`ReadSpec`]'s methods. Crate-private: reads of
    /// users go through the builders [`crate::ops::Read`] and [`crate::ops::Changes`], which own
    /// the selectors; the engine's own reads (compaction, lookups, system tables) use this.
    pub(crate) fn of(table: Table, schema: &TableSchema) -> ReadSpec<'_> {
        ReadSpec {
            table,
            schema,
            columns: None,
            filter: None,
            batch_size: DEFAULT_BATCH_SIZE,
            with_row_kind: false,
        }
    }

    /// The engine's whole-row reads: [`Self::of`] as it comes.
    pub(crate) fn whole_rows(table: Table, schema: &TableSchema) -> Result<ReadContext> {
        ReadContext::of(table, schema).build()
    }

    fn new(spec: ReadSpec<'_>) -> Result<ReadContext> {
        let ReadSpec {
            table,
            schema,
            columns,
            filter,
            batch_size,
            with_row_kind,
        } = spec;
        let output: Vec<DataField> = match columns {
            None => schema.fields.clone(),
            Some(cols) => cols
                .iter()
                .map(|c| {
                    schema.field(c).cloned().ok_or_else(|| {
                        Error::invalid(format!(
                            "unknown column '{c}'; the table's columns are: {}",
                            schema.field_names().join(", ")
                        ))
                    })
                })
                .collect::<Result<_>>()?,
        };
        let filter_arg = filter;
        let filter = filter.map(|p| p.bind(&schema.fields)).transpose()?;
        let has_pk = !schema.primary_keys.is_empty();
        let opts = schema.options();
        let spec_err = |e| Error::from_spec("table options", e);
        let engine = opts.merge_engine().map_err(spec_err)?;
        let lookup_merge = has_pk
            && engine != MergeEngine::FirstRow
            && (opts.changelog_producer().map_err(spec_err)? == ChangelogProducer::Lookup
                || opts.deletion_vectors_enabled().map_err(spec_err)?
                || opts.force_lookup().map_err(spec_err)?);

        // Columns the merge and the filter need besides the output.
        let mut needed: Vec<String> = output.iter().map(|f| f.name.clone()).collect();
        if let Some(f) = &filter {
            needed.extend(f.referenced_fields());
        }
        if has_pk && with_row_kind {
            // Diff reads compare whole rows (Java compares the full value).
            needed.extend(schema.fields.iter().map(|f| f.name.clone()));
        }
        if has_pk {
            // The full primary key: partition columns are key columns for the merge functions
            // (Java passes the whole key), e.g. aggregation never aggregates them.
            needed.extend(schema.primary_keys.iter().cloned());
            needed.extend(opts.sequence_field());
            if matches!(
                engine,
                MergeEngine::PartialUpdate | MergeEngine::Aggregation
            ) {
                needed.extend(schema.fields.iter().map(|f| f.name.clone()));
            }
        }
        let read_fields: Vec<DataField> = schema
            .fields
            .iter()
            .filter(|f| needed.contains(&f.name))
            .cloned()
            .collect();
        let output_positions = output
            .iter()
            .map(|o| {
                read_fields
                    .iter()
                    .position(|r| r.id == o.id)
                    .expect("output fields are read")
            })
            .collect();
        let mut output_schema = tidelake_spec::arrow::to_arrow_schema(&output)
            .map_err(|e| Error::from_spec("read schema", e))?;
        if with_row_kind {
            let mut fields = vec![Arc::new(Field::new(
                ROW_KIND_COLUMN,
                ArrowType::Utf8,
                false,
            ))];
            fields.extend(output_schema.fields().iter().cloned());
            output_schema = Schema::new_with_metadata(fields, output_schema.metadata().clone());
        }
        let output_schema = Arc::new(output_schema);
        let key_fields: Vec<&DataField> = schema
            .trimmed_primary_keys()
            .iter()
            .filter_map(|k| schema.field(k))
            .collect();
        let key_types = key_fields.iter().map(|f| f.data_type.clone()).collect();
        let merge = if has_pk {
            Some(Arc::new(MergeConfig::from_options(
                &read_fields,
                &schema.primary_keys,
                opts,
            )?))
        } else {
            None
        };
        // Every version of a key has the same key values: pruning by them keeps all or none.
        let key_filter = filter
            .as_ref()
            .filter(|_| has_pk)
            .and_then(|f| f.restricted_to_key(schema));
        let prune = if has_pk {
            key_filter.as_ref()
        } else {
            filter.as_ref()
        }
        .and_then(PagePrune::new);
        let pinned = match (&filter, has_pk) {
            (Some(f), true) => pinned_keys(schema, f),
            _ => None,
        };
        let partition_columns =
            PartitionColumns::new(TableLayout::new(schema)?, &read_fields).map(Arc::new);
        let ctx = ReadContext {
            partition_columns,
            columns: columns.map(<[String]>::to_vec),
            predicate: filter_arg.cloned(),
            branch_read: tokio::sync::OnceCell::new(),
            table,
            read_fields,
            output_positions,
            output_schema,
            filter,
            prune,
            key_filter,
            key_set: None,
            merge,
            key_types,
            batch_size: batch_size.max(1),
            with_row_kind,
            lookup_merge,
            record_expire: None,
        };
        Ok(match pinned {
            Some(keys) => {
                let pages = ctx.key_filter.clone();
                ctx.with_keys(keys, pages.as_ref())
            }
            None => ctx,
        })
    }

    /// Change reads: rows come with their kind.
    pub(super) fn with_row_kind(&self) -> bool {
        self.with_row_kind
    }

    /// The merge of primary-key tables (`None` for append tables).
    pub(super) fn merge_config(&self) -> Option<Arc<MergeConfig>> {
        self.merge.clone()
    }

    /// Whether a key's merged row is just its newest record (`deduplicate` without
    /// `sequence.field` or `ignore-delete`, not a change read): among files whose sequence
    /// numbers do not overlap, the newest file holding the key decides it (its record, or no row
    /// when that record retracts the key).
    pub(crate) fn newest_record_wins(&self) -> bool {
        !self.with_row_kind && self.merge.as_ref().is_some_and(|m| m.newest_record_wins())
    }

    pub(super) fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The same read restricted to the rows of `keys` (primary-key tables; the set's columns
    /// are key columns), with the pages `prune` rules out skipped: `prune` must match every
    /// row of a key of the set.
    pub fn with_keys(mut self, keys: Arc<KeySet>, prune: Option<&BoundPredicate>) -> ReadContext {
        if let Some(p) = prune.and_then(PagePrune::new) {
            self.prune = Some(p.with_key_rows(keys.clone()));
        }
        self.key_set = Some(keys);
        self
    }

    /// The same read dropping the rows `expire` expires from every file a run or the newest
    /// records read ([`Self::section_runs`], [`Self::newest_records`]), "now" read as each
    /// file is opened (Java wraps the compaction rewriter's file reader factory so); files
    /// read with positions ([`Self::positioned_rows`]) keep every row.
    pub(crate) fn with_record_expire(mut self, expire: Option<Arc<RecordExpire>>) -> ReadContext {
        self.record_expire = expire;
        self
    }

    /// The record-level expiry of [`Self::with_record_expire`], if any, with "now" (epoch
    /// seconds of the table's clock).
    pub(crate) fn record_expire_now(&self) -> Option<(Arc<RecordExpire>, i64)> {
        self.record_expire
            .clone()
            .map(|e| (e, self.table.env().now_millis() / 1000))
    }

    /// Schema of every batch the reads yield.
    pub fn output_schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// Stream the rows of one split. A file missing because the split's snapshot expired
    /// meanwhile is [`Error::SnapshotExpired`] (see [`crate::snapshots::SnapshotManager::expired_while_reading`]).
    pub async fn read_split(
        self: &Arc<Self>,
        split: &Split,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        if let Some(branch) = split
            .branch
            .as_deref()
            .filter(|b| *b != self.table.branch())
        {
            let other = self.branch_read(branch).await?;
            let output = self.output_schema.clone();
            let rows = Box::pin(other.read_split(split)).await?;
            return Ok(rows
                .and_then(move |b| {
                    let batch = RecordBatch::try_new(output.clone(), b.columns().to_vec())
                        .map_err(|e| Error::arrow("fallback branch rows", e));
                    futures::future::ready(batch)
                })
                .boxed());
        }
        let (table, id) = (self.table.clone(), split.snapshot_id);
        match self.split_stream(split) {
            Ok(rows) => Ok(rows
                .or_else(move |e| {
                    let table = table.clone();
                    async move { Err(table.snapshot_manager().expired_while_reading(id, e).await) }
                })
                .boxed()),
            Err(e) => Err(table.snapshot_manager().expired_while_reading(id, e).await),
        }
    }

    /// The read of `branch`'s splits: the same columns and filter over that branch's latest
    /// schema.
    async fn branch_read(&self, branch: &str) -> Result<Arc<ReadContext>> {
        let ctx = self
            .branch_read
            .get_or_try_init(|| async {
                let table = Table::open_branch(self.table.io().clone(), branch).await?;
                let schema = table.schema().clone();
                let columns = self.columns.as_deref();
                let ctx = ReadContext::of(table, &schema)
                    .columns(columns)
                    .filter(self.predicate.as_ref())
                    .batch_size(self.batch_size)
                    .with_row_kind(self.with_row_kind)
                    .build()?;
                Ok::<_, Error>(Arc::new(ctx))
            })
            .await?;
        if ctx.table.branch() != branch {
            return Err(Error::invalid(format!(
                "a read cannot mix splits of branches '{}' and '{branch}'",
                ctx.table.branch()
            )));
        }
        Ok(ctx.clone())
    }

    fn split_stream(
        self: &Arc<Self>,
        split: &Split,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        if let Some(before) = &split.before_files {
            let ctx = self.clone();
            let rows = self.with_partition_values(split, self.diff_rows(split, before.clone())?)?;
            return Ok(rows
                .try_filter_map(move |b| futures::future::ready(ctx.finish(b)))
                .boxed());
        }
        let system = if self.merge.is_some() {
            SystemColumns::KeyValue
        } else {
            SystemColumns::None
        };
        let raw: BoxStream<'static, Result<RecordBatch>> = match &self.merge {
            _ if self.with_row_kind => {
                self.chain_files(split.files.clone(), system, self.batch_size)
            }
            None if evolution::needs_merge(&split.files) => {
                self.merge_row_ranges(split.files.clone())?
            }
            None => self.chain_files(split.files.clone(), system, self.batch_size),
            // files that say they hold no retract row are read without the system columns
            Some(_)
                if split.raw_convertible
                    && split.files.iter().all(|f| f.delete_row_count == Some(0)) =>
            {
                self.chain_files(split.files.clone(), SystemColumns::None, self.batch_size)
            }
            Some(_) if split.raw_convertible => {
                let stream = self.chain_files(
                    split.files.clone(),
                    SystemColumns::KeyValue,
                    self.batch_size,
                );
                stream
                    .and_then(|b| futures::future::ready(drop_retracts(b, 1)))
                    .boxed()
            }
            Some(config) => self.merge_split(split, config.clone())?,
        };
        let ctx = self.clone();
        Ok(self
            .with_partition_values(split, raw)?
            .try_filter_map(move |b| futures::future::ready(ctx.finish(b)))
            .boxed())
    }

    /// `rows` of `split` with the partition columns set to its partition's values
    /// ([`PartitionColumns`]).
    fn with_partition_values(
        &self,
        split: &Split,
        rows: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        Ok(filled(rows, self.partition_fill(split)?))
    }

    /// The partition columns to set in `split`'s rows and their values.
    fn partition_fill(&self, split: &Split) -> Result<Option<PartitionFill>> {
        let Some(columns) = self.partition_columns.clone() else {
            return Ok(None);
        };
        let values = Arc::new(columns.values(&split.partition)?);
        Ok(Some((columns, values)))
    }

    /// Data-evolution files merged by row range ([`evolution`]); whole-row ranges of one file
    /// are streamed as they are.
    fn merge_row_ranges(
        self: &Arc<Self>,
        files: Vec<SplitFile>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let ctx = self.clone();
        Ok(stream::iter(evolution::row_ranges(files)?)
            .then(move |range| {
                let ctx = ctx.clone();
                async move {
                    if range.len() == 1 && range[0].write_cols.is_none() {
                        return Ok(ctx.chain_files(range, SystemColumns::None, ctx.batch_size));
                    }
                    let rows =
                        evolution::read_range(&ctx.table, &range, &ctx.read_fields, ctx.batch_size)
                            .await?;
                    let slices: Vec<Result<RecordBatch>> = (0..rows.num_rows())
                        .step_by(ctx.batch_size)
                        .map(|start| {
                            Ok(rows.slice(start, ctx.batch_size.min(rows.num_rows() - start)))
                        })
                        .collect();
                    Ok::<_, Error>(stream::iter(slices).boxed())
                }
            })
            .try_flatten()
            .boxed())
    }

    pub(super) fn merge_split(
        self: &Arc<Self>,
        split: &Split,
        config: Arc<MergeConfig>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let sections = sorted_runs::partition(split.files.clone(), &self.key_types)?;
        let ctx = self.clone();
        let batch_size = self.batch_size;
        let merged = sections
            .into_iter()
            .map(|runs| {
                Ok(merge_sorted_runs(
                    ctx.section_runs(runs)?,
                    config.clone(),
                    batch_size,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(stream::iter(merged)
            .flatten()
            // The merge emits `_VALUE_KIND` first; only +I/+U rows survive a batch read.
            .and_then(|b| futures::future::ready(drop_retracts(b, 0)))
            .boxed())
    }

    /// The merge inputs of one section's sorted runs, as `[_SEQUENCE_NUMBER, _VALUE_KIND,
    /// columns...]` streams. With [`ReadContext::lookup_merge`] every level-0 file is a run and
    /// the files above level 0 become one run of each key's newest record. Reads of a key set
    /// decode their runs concurrently ([`prefetched`]).
    pub(crate) fn section_runs(
        self: &Arc<Self>,
        runs: Vec<Vec<SplitFile>>,
    ) -> Result<Vec<BoxStream<'static, Result<RecordBatch>>>> {
        let streams = if self.lookup_merge {
            let (level0, higher): (Vec<SplitFile>, Vec<SplitFile>) =
                runs.into_iter().flatten().partition(|f| f.level == 0);
            let mut streams: Vec<_> = level0
                .into_iter()
                .map(|f| self.chain_files(vec![f], SystemColumns::KeyValue, self.run_batch_size()))
                .collect();
            if !higher.is_empty() {
                streams.push(self.newest_records(higher)?);
            }
            streams
        } else {
            runs.into_iter()
                .map(|run| self.chain_files(run, SystemColumns::KeyValue, self.run_batch_size()))
                .collect()
        };
        Ok(match self.key_set {
            Some(_) => streams.into_iter().map(prefetched).collect(),
            None => streams,
        })
    }

    /// Each key's newest record among `files` (retracts included), in key order, as
    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`; files that overlap nowhere (one level) are
    /// streamed without merging.
    pub(crate) fn newest_records(
        self: &Arc<Self>,
        files: Vec<SplitFile>,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let sections = sorted_runs::partition(files, &self.key_types)?;
        if sections.iter().all(|s| s.len() == 1) {
            return Ok(self.chain_files(
                sections.into_iter().flatten().flatten().collect(),
                SystemColumns::KeyValue,
                self.run_batch_size(),
            ));
        }
        let merge = self
            .merge
            .as_ref()
            .ok_or_else(|| Error::invalid("newest records of a table without primary key"))?;
        let config = Arc::new(MergeConfig {
            engine: MergeEngineConfig::Deduplicate,
            ignore_delete: false,
            keep_retracts: true,
            ..(**merge).clone()
        });
        let merged: Vec<_> = sections
            .into_iter()
            .map(|section| {
                let runs = section
                    .into_iter()
                    .map(|run| {
                        self.chain_files(run, SystemColumns::KeyValue, self.run_batch_size())
                    })
                    .collect();
                merge_keeping_sequence(runs, config.clone(), self.batch_size)
            })
            .collect();
        Ok(stream::iter(merged).flatten().boxed())
    }

    /// Rows each merge input decodes at a time: every run holds one decoded batch, and pending
    /// output keeps the batches it points into, so keep those small even when output batches
    /// are large.
    fn run_batch_size(&self) -> usize {
        self.batch_size.min(RUN_BATCH_SIZE)
    }

    /// Stream files one after the other, with their system columns, `batch_size` rows at a time.
    pub(super) fn chain_files(
        self: &Arc<Self>,
        files: Vec<SplitFile>,
        system: SystemColumns,
        batch_size: usize,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        let ctx = self.clone();
        stream::iter(files)
            .then(move |f| {
                let ctx = ctx.clone();
                async move {
                    let rows = ctx.open_file(&f, system, batch_size).await?;
                    Ok(match ctx.record_expire_now() {
                        Some((expire, now)) => rows
                            .and_then(move |b| futures::future::ready(expire.retain(b, now)))
                            .boxed(),
                        None => rows,
                    })
                }
            })
            .try_flatten()
            .boxed()
    }

    async fn open_file(
        &self,
        file: &SplitFile,
        system: SystemColumns,
        batch_size: usize,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let file_schema = self.table.schema_by_id(file.schema_id).await?;
        let deletion = match &file.deletion {
            Some(dv) => Some(self.shared_deletion_vector(dv).await?),
            None => None,
        };
        let format = FileFormat::from_file_name(&file.file_name)?;
        let path = self.table.io().display(&file.path);
        let open = read_data_file(
            self.table.io(),
            &file.path,
            format,
            &file_schema.fields,
            &self.read_fields,
            system,
            deletion,
            batch_size,
            self.prune.as_ref(),
        );
        // Reader libraries may panic on damaged files: turn that into an error naming the file
        // (the stream ends after it) instead of unwinding through the scan.
        let mut stream = match AssertUnwindSafe(open).catch_unwind().await {
            Ok(opened) => opened?,
            Err(panic) => return Err(panic_error(&path, panic)),
        };
        // primary-key tables only (set by `new` and `with_keys`), with or without system columns
        if let Some(keys) = &self.key_filter {
            let keys = keys.clone();
            stream = stream
                .try_filter_map(move |b| futures::future::ready(matching_rows(&keys, b)))
                .boxed();
        }
        if let Some(keys) = &self.key_set {
            let keys = keys.clone();
            stream = stream
                .try_filter_map(move |b| futures::future::ready(rows_of_keys(&keys, b)))
                .boxed();
        }
        Ok(AssertUnwindSafe(stream)
            .catch_unwind()
            .map(move |item| item.unwrap_or_else(|panic| Err(panic_error(&path, panic))))
            .boxed())
    }

    /// One file's rows in file order with no deletion vector applied, so that row `i` of the
    /// stream is the file's row position `i`, as `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`;
    /// with the file's deletion vector, if it has one.
    pub(crate) async fn positioned_rows(
        &self,
        file: &SplitFile,
    ) -> Result<(
        BoxStream<'static, Result<RecordBatch>>,
        Option<DeletionVector>,
    )> {
        let deletion = match &file.deletion {
            Some(dv) => Some(
                self.load_deletion_vector(&dv.path, dv.offset, dv.length)
                    .await?,
            ),
            None => None,
        };
        let whole = SplitFile {
            deletion: None,
            ..file.clone()
        };
        let rows = self
            .open_file(&whole, SystemColumns::KeyValue, self.run_batch_size())
            .await?;
        Ok((rows, deletion))
    }

    /// [`ReadContext::load_deletion_vector`], kept in the table's read cache if it has one.
    async fn shared_deletion_vector(&self, dv: &DeletionFileRef) -> Result<Arc<DeletionVector>> {
        let cache = self.table.io().read_cache();
        let key = format!("{}#{}", dv.path, dv.offset);
        if let Some(v) = cache.and_then(|c| c.get::<DeletionVector>(&key)) {
            return Ok(v);
        }
        let v = Arc::new(
            self.load_deletion_vector(&dv.path, dv.offset, dv.length)
                .await?,
        );
        if let Some(c) = cache {
            c.insert(
                &key,
                v.clone(),
                usize::try_from(dv.length).unwrap_or(usize::MAX),
            );
        }
        Ok(v)
    }

    pub(crate) async fn load_deletion_vector(
        &self,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<DeletionVector> {
        let bytes = self.table.io().read(path).await?;
        decode_deletion_vector(&self.table, path, &bytes, offset, length)
    }

    /// Schema of the batches of [`Self::read_positioned`].
    pub fn positioned_schema(&self) -> SchemaRef {
        let mut fields: Vec<_> = self.output_schema.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(
            FILE_INDEX_COLUMN,
            ArrowType::Int32,
            false,
        )));
        fields.push(Arc::new(Field::new(
            ROW_POSITION_COLUMN,
            ArrowType::Int64,
            false,
        )));
        Arc::new(Schema::new(fields))
    }

    /// The rows of an append split with where each one lives: the output columns (filter and
    /// deletion vectors applied) followed by [`FILE_INDEX_COLUMN`], the index of the row's file
    /// in `split.files`, and [`ROW_POSITION_COLUMN`], its 0-based position in that file (what
    /// a deletion vector holds). Positions count every row of a file, so reads that skip rows
    /// before the filter are refused ([`Error::Unsupported`]): primary-key tables, page
    /// pruning, data-evolution row ranges, diff and fallback-branch splits.
    pub fn read_positioned(
        self: &Arc<Self>,
        split: &Split,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        let other_branch = split
            .branch
            .as_deref()
            .is_some_and(|b| b != self.table.branch());
        if self.merge.is_some()
            || self.with_row_kind
            || self.prune.is_some()
            || split.before_files.is_some()
            || other_branch
            || evolution::needs_merge(&split.files)
        {
            return Err(Error::Unsupported(
                "row positions are read from the plain splits of append tables only".into(),
            ));
        }
        let ctx = self.clone();
        let files = split.files.clone().into_iter().enumerate();
        let fill = self.partition_fill(split)?;
        Ok(stream::iter(files)
            .then(move |(index, file)| {
                let (ctx, fill) = (ctx.clone(), fill.clone());
                async move {
                    let index = i32::try_from(index)
                        .map_err(|_| Error::invalid("a split of over 2^31 files"))?;
                    let deletion = match &file.deletion {
                        Some(dv) => Some(ctx.shared_deletion_vector(dv).await?),
                        None => None,
                    };
                    let whole = SplitFile {
                        deletion: None,
                        ..file
                    };
                    let rows = ctx
                        .open_file(&whole, SystemColumns::None, ctx.batch_size)
                        .await?;
                    let rows = filled(rows, fill);
                    let mut start = 0u64;
                    Ok::<_, Error>(rows.try_filter_map(move |batch| {
                        let first = start;
                        start += batch.num_rows() as u64;
                        let out = ctx.finish_positioned(batch, index, first, deletion.as_deref());
                        futures::future::ready(out)
                    }))
                }
            })
            .try_flatten()
            .boxed())
    }

    /// [`Self::finish`] of a file's batch whose first row is at `first`, with the position
    /// columns appended and the rows `deletion` deletes dropped.
    fn finish_positioned(
        &self,
        batch: RecordBatch,
        index: i32,
        first: u64,
        deletion: Option<&DeletionVector>,
    ) -> Result<Option<RecordBatch>> {
        let n = batch.num_rows();
        let positions: Vec<i64> = (0..n as i64).map(|i| first as i64 + i).collect();
        let live = deletion.map(|dv| {
            BooleanArray::from_iter(positions.iter().map(|&p| Some(!dv.contains(p as u64))))
        });
        let (out, mask) = self.project(batch)?;
        let mut columns = out.columns().to_vec();
        columns.push(Arc::new(Int32Array::from(vec![index; n])));
        columns.push(Arc::new(Int64Array::from(positions)));
        let out = RecordBatch::try_new(self.positioned_schema(), columns)
            .map_err(|e| Error::arrow("assembling positioned batch", e))?;
        let mask = match (mask, live) {
            (Some(m), Some(l)) => Some(
                m.iter()
                    .zip(l.iter())
                    .map(|(m, l)| Some(m == Some(true) && l == Some(true)))
                    .collect(),
            ),
            (m, l) => m.or(l),
        };
        keep(out, mask)
    }

    /// Strip system columns, apply the filter and project the output columns.
    fn finish(&self, batch: RecordBatch) -> Result<Option<RecordBatch>> {
        let (out, mask) = self.project(batch)?;
        keep(out, mask)
    }

    /// The output columns of `batch` (system columns stripped) and the filter's mask over them.
    fn project(&self, batch: RecordBatch) -> Result<(RecordBatch, Option<BooleanArray>)> {
        let skip = batch.num_columns() - self.read_fields.len();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.output_schema.fields().len());
        if self.with_row_kind {
            columns.push(row_kind_strings(&batch, skip)?);
        }
        let values = batch
            .project(&(skip..batch.num_columns()).collect::<Vec<_>>())
            .map_err(|e| Error::arrow("projecting values", e))?;
        let mask = match &self.filter {
            Some(f) => Some(f.evaluate(&values)?),
            None => None,
        };
        columns.extend(
            self.output_positions
                .iter()
                .map(|&i| values.column(i).clone()),
        );
        let out = RecordBatch::try_new(self.output_schema.clone(), columns)
            .map_err(|e| Error::arrow("assembling output batch", e))?;
        Ok((out, mask))
    }
}

/// The rows of `out` that `mask` keeps (all without one); `None` when none.
fn keep(out: RecordBatch, mask: Option<BooleanArray>) -> Result<Option<RecordBatch>> {
    let out = match mask {
        Some(m) => filter_record_batch(&out, &m).map_err(|e| Error::arrow("filtering rows", e))?,
        None => out,
    };
    Ok((out.num_rows() > 0).then_some(out))
}

/// The deletion vector at (`offset`, `length`) of the index file at `path` whose content is
/// `bytes`; corruption names the file.
pub(crate) fn decode_deletion_vector(
    table: &Table,
    path: &str,
    bytes: &[u8],
    offset: u64,
    length: u64,
) -> Result<DeletionVector> {
    read_deletion_vector(bytes, offset, length).map_err(|e| match e {
        Error::Corrupt { reason, .. } => Error::corrupt(table.io().display(path), reason),
        other => other,
    })
}

/// The keys `filter` pins on every trimmed primary-key column of `schema` (point scans,
/// [`crate::scan::bucket_filter::pinned_rows`]), a superset of the keys of the rows it matches:
/// reading only their rows before the merge is exact, every version of a key having its key.
/// `None` when the filter leaves a key column free.
fn pinned_keys(schema: &TableSchema, filter: &BoundPredicate) -> Option<Arc<KeySet>> {
    let fields: Vec<DataField> = schema
        .trimmed_primary_keys()
        .iter()
        .map(|k| schema.field(k).cloned())
        .collect::<Option<_>>()?;
    let rows = pinned_rows(&fields, filter)?;
    let columns = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let values: Vec<Datum> = rows.iter().map(|r| r[i].clone()).collect();
            datums_to_array(&values, &f.data_type)
        })
        .collect::<Result<Vec<ArrayRef>>>()
        .ok()?;
    let names = fields.into_iter().map(|f| f.name).collect();
    KeySet::new(names, &columns).ok().map(Arc::new)
}

/// `run` decoded on a task of its own, started now, its batches kept until the merge takes
/// them: for runs of key-set reads (point scans, lookups), which keep only the rows of the set's
/// keys, so that the runs' files (a key's page of each, decompressed and decoded) are read on
/// all cores at once instead of one after the other as the merge first polls each run.
fn prefetched(
    run: BoxStream<'static, Result<RecordBatch>>,
) -> BoxStream<'static, Result<RecordBatch>> {
    let task = tokio::spawn(run.try_collect::<Vec<RecordBatch>>());
    stream::once(async move {
        match task.await {
            Ok(batches) => batches,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => Err(panic_error("a sorted run", panic)),
                Err(e) => Err(Error::Internal(format!("reading a sorted run: {e}"))),
            },
        }
    })
    .map_ok(|batches| stream::iter(batches.into_iter().map(Ok)))
    .try_flatten()
    .boxed()
}

/// The rows of `batch` that `filter` matches (`None` when none).
fn matching_rows(filter: &BoundPredicate, batch: RecordBatch) -> Result<Option<RecordBatch>> {
    let kept = filter_record_batch(&batch, &filter.evaluate(&batch)?)
        .map_err(|e| Error::arrow("filtering rows", e))?;
    Ok((kept.num_rows() > 0).then_some(kept))
}

/// The rows of `batch` whose key is in `keys` (`None` when none).
fn rows_of_keys(keys: &KeySet, batch: RecordBatch) -> Result<Option<RecordBatch>> {
    let kept = filter_record_batch(&batch, &keys.matches(&batch)?)
        .map_err(|e| Error::arrow("filtering rows", e))?;
    Ok((kept.num_rows() > 0).then_some(kept))
}

/// The `_row_kind` strings of a batch whose first `system` columns are system columns
/// (`_SEQUENCE_NUMBER`, `_VALUE_KIND` for primary-key files; none for append files: `+I`).
fn row_kind_strings(batch: &RecordBatch, system: usize) -> Result<ArrayRef> {
    if system < 2 {
        return Ok(Arc::new(StringArray::from(vec![
            RowKind::Insert
                .short_string();
            batch.num_rows()
        ])));
    }
    let kinds = batch
        .column(1)
        .as_any()
        .downcast_ref::<Int8Array>()
        .ok_or_else(|| Error::invalid("_VALUE_KIND column is not TINYINT"))?;
    let names = kinds
        .iter()
        .map(|k| row_kind_name(k.unwrap_or(RowKind::Insert.code())))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(StringArray::from(names)))
}

/// Drop rows whose row kind (column `kind_col`) is -U or -D.
pub(crate) fn drop_retracts(batch: RecordBatch, kind_col: usize) -> Result<RecordBatch> {
    let kinds = batch
        .column(kind_col)
        .as_any()
        .downcast_ref::<Int8Array>()
        .ok_or_else(|| Error::invalid("_VALUE_KIND column is not TINYINT"))?;
    let is_add = |k: Option<i8>| k.and_then(RowKind::from_code).is_some_and(RowKind::is_add);
    if kinds.iter().all(is_add) {
        return Ok(batch);
    }
    let mask = kinds.iter().map(|k| Some(is_add(k))).collect();
    filter_record_batch(&batch, &mask).map_err(|e| Error::arrow("dropping retract rows", e))
}

/// Read many splits in order, streaming: one thread (started on the first poll) decodes them
/// one after the other, ahead of the consumer through a channel of
/// [`SPLIT_CHANNEL_CAPACITY`] batches, so memory stays at one split's open readers plus those
/// batches. Errors (a panic included, as an error naming the split) end the stream: it never
/// ends early without one, which would lose rows.
///
/// A thread of its own rather than a runtime task: a task migrates between worker threads, and
/// glibc gives each allocating thread its own malloc arena, so a merge decoded on several
/// threads spreads its short-lived buffers over several arenas and the process keeps far more
/// memory than the merge ever holds at once. On one thread, with local files read in place
/// ([`crate::io::local_file`]), RSS stays near the live heap. One thread for all the splits:
/// a thread per split would start before the previous one has exited and take a fresh arena.
/// The thread runs on the current runtime's handle, so object-store clients keep their I/O
/// driver.
///
/// `progress` is told the planned rows of the splits read so far (see [`SplitsProgress`]), a
/// split counting once all its batches are in the channel.
pub fn read_splits(
    ctx: Arc<ReadContext>,
    splits: Vec<Split>,
    progress: Option<Progress>,
) -> BoxStream<'static, Result<RecordBatch>> {
    stream::once(async move {
        let (tx, mut rx) =
            tokio::sync::mpsc::channel::<Result<RecordBatch>>(SPLIT_CHANNEL_CAPACITY);
        let handle = tokio::runtime::Handle::current();
        let sender = tx.clone();
        let spawned = std::thread::Builder::new()
            .name("tidelake-read".into())
            .spawn(move || handle.block_on(send_splits(ctx, splits, sender, progress)));
        if let Err(e) = spawned {
            let _ = tx.try_send(Err(Error::Internal(format!(
                "cannot start a reader thread: {e}"
            ))));
        }
        stream::poll_fn(move |cx| rx.poll_recv(cx))
    })
    .flatten()
    .boxed()
}

/// The body of [`read_splits`]' thread.
async fn send_splits(
    ctx: Arc<ReadContext>,
    splits: Vec<Split>,
    tx: tokio::sync::mpsc::Sender<Result<RecordBatch>>,
    progress: Option<Progress>,
) {
    let mut progress = SplitsProgress::start(progress, &splits);
    for split in splits {
        let outcome = AssertUnwindSafe(async {
            match ctx.read_split(&split).await {
                Ok(s) => pump(s, &tx).await,
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    false
                }
            }
        })
        .catch_unwind()
        .await;
        match outcome {
            Ok(true) => progress.finished(&split),
            Ok(false) => return,
            Err(panic) => {
                let where_ = ctx.table.io().display(&split.bucket_path);
                let _ = tx.send(Err(panic_error(&where_, panic))).await;
                return;
            }
        }
    }
}

/// Read many splits into batches, in split order, a few splits concurrently (each on its own
/// task, so they decode on different cores). For materialising reads: unlike [`read_splits`],
/// a split read ahead is not held back by a bounded channel, it is buffered whole, which costs
/// nothing the caller's result does not hold anyway. `progress` is told the planned rows of
/// the splits read so far, in split order.
pub async fn collect_splits(
    ctx: Arc<ReadContext>,
    splits: Vec<Split>,
    progress: Option<Progress>,
) -> Result<Vec<RecordBatch>> {
    let mut progress = SplitsProgress::start(progress, &splits);
    let per_split: Vec<Vec<RecordBatch>> = stream::iter(splits)
        .map(move |split| {
            let ctx = ctx.clone();
            let where_ = ctx.table.io().display(&split.bucket_path);
            let rows = split.row_count();
            tokio::spawn(async move { ctx.read_split(&split).await?.try_collect::<Vec<_>>().await })
                .map(move |joined| {
                    joined
                        .unwrap_or_else(|e| match e.try_into_panic() {
                            Ok(panic) => Err(panic_error(&where_, panic)),
                            Err(e) => Err(Error::invalid(format!(
                                "reading {where_} was cancelled: {e}"
                            ))),
                        })
                        .map(|batches| (rows, batches))
                })
        })
        .buffered(COLLECT_SPLITS)
        .map_ok(|(rows, batches)| {
            progress.add(rows);
            batches
        })
        .try_collect()
        .await?;
    Ok(per_split.into_iter().flatten().collect())
}

/// [`Progress`] of a read in planned rows (the row counts of the files of each split, before
/// merging and filtering): told `(0, total)` at the start, then after each split.
struct SplitsProgress {
    progress: Option<Progress>,
    done: usize,
    total: usize,
}

impl SplitsProgress {
    fn start(progress: Option<Progress>, splits: &[Split]) -> Self {
        let total = splits.iter().map(|s| planned_rows(s.row_count())).sum();
        let this = SplitsProgress {
            progress,
            done: 0,
            total,
        };
        this.tell();
        this
    }

    fn finished(&mut self, split: &Split) {
        self.add(split.row_count());
    }

    fn add(&mut self, rows: i64) {
        self.done += planned_rows(rows);
        self.tell();
    }

    fn tell(&self) {
        if let Some(p) = &self.progress {
            p(self.done, self.total);
        }
    }
}

fn planned_rows(rows: i64) -> usize {
    usize::try_from(rows).unwrap_or(0)
}

/// The error reported when reading `path` panicked.
fn panic_error(path: &str, panic: Box<dyn std::any::Any + Send>) -> Error {
    let msg = crate::tasks::panic_message(&*panic);
    Error::corrupt(path, format!("the file could not be decoded ({msg})"))
}

/// Send a stream's batches into `tx`. `true` when the stream ended cleanly; `false` after
/// an error (sent) or when the receiver is gone.
async fn pump(
    mut stream: BoxStream<'static, Result<RecordBatch>>,
    tx: &tokio::sync::mpsc::Sender<Result<RecordBatch>>,
) -> bool {
    while let Some(item) = stream.next().await {
        let failed = item.is_err();
        if tx.send(item).await.is_err() || failed {
            return false;
        }
    }
    true
}

/// The short string (`+I`, `-U`, `+U`, `-D`) of the `_VALUE_KIND` code `kind`.
pub fn row_kind_name(kind: i8) -> Result<&'static str> {
    RowKind::from_code(kind)
        .map(RowKind::short_string)
        .ok_or_else(|| Error::invalid(format!("unknown row kind {kind}")))
}
