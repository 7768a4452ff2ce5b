//! [`TableWrite`]: Arrow batches in, data files and [`CommitMessage`]s out (Java
//! `TableWriteImpl` + `KeyValueFileStoreWrite`/`AppendFileStoreWrite` + `MergeTreeWriter`).
//!
//! ```text
//!  batch ─► conform (schema, casts, row kinds) ─► group by partition ─► bucket per row
//!        (cross-partition upserts: per key, in input order, through the writer's key index,
//!        which may send a row, or a `-D` of it, to the key's old partition; see
//!        `cross_partition`)
//!        ─► primary key: per-bucket buffer [_SEQUENCE_NUMBER, _VALUE_KIND, columns...]
//!             └─ flush (buffers over `write-buffer-size`, or prepare_commit), independent
//!                buckets concurrently (one task each, at most the available parallelism):
//!                sort by (key, sequence) ─► fold equal keys with the merge engine ─► level-0 file
//!                (changelog-producer=input: the sorted input also goes to a changelog file)
//!        ─► append: straight into the bucket's rolling file writer; with a row order
//!             (`clustering.columns` of bucket-unaware tables, or [`TableWrite::sorted_by`]),
//!             into the bucket's external sorter instead, which spills its run to local files
//!             past `write-buffer-size` and is written out sorted at `prepare_commit`
//!        ─► postpone bucket (`bucket = -2`): the buffer as it came, unsorted (see `postpone`)
//!        ─► after each level-0 flush: the writer's compaction, which its caller hands it
//!           (unless write-only; see `compaction`), collects / starts the bucket's compaction
//!           in the background and stalls the writer past `num-sorted-run.stop-trigger`
//!  prepare_commit ─► flush everything ─► one CommitMessage per touched (partition, bucket),
//!        with the bucket's finished compactions (batch writers wait for them)
//! ```
//!
//! Invariants:
//! * sequence numbers of a bucket continue from the largest in its live files (all levels) when
//!   the writer first wrote into its partition (see `restore`), one per input row in input
//!   order, so newer writes always win merges;
//! * every data file holds each key at most once, sorted by Java's key order, with exact
//!   statistics and `_DELETE_ROW_COUNT` (the file writer computes them);
//! * buffered rows across all buckets stay under `write-buffer-size`: past it, the largest
//!   buffers are flushed to level-0 files, or the largest sort runs spilled to local files
//!   (memory is bounded by configuration, not input size);
//! * files are only referenced by the messages returned; [`TableWrite::abort`] deletes every
//!   file written since the last `prepare_commit`. A failed bucket flush deletes what it wrote;
//!   the files of the flushes that succeeded beside it stay recorded, for `abort` to delete;
//! * concurrency changes nothing observable: sequence numbers are assigned when rows are
//!   buffered, and each bucket's files and messages are recorded in writer order.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use arrow_select::take::take_record_batch;
use futures::stream::{self, BoxStream, StreamExt};
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DataFileMeta, FileSource};
use tidelake_spec::options::ChangelogProducer;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

use crate::datum_arrow::datums_to_array;
use crate::error::{Error, Result};
use crate::io::failpoint;
use crate::io::Env;
use crate::layout::TableLayout;
use crate::lsm::kv_merge::merge_keeping_sequence;
use crate::lsm::merge::MergeConfig;
use crate::lsm::sorted_buffer::SortedBuffer;
use crate::read::data_file::{SEQUENCE_NUMBER, VALUE_KIND};
use crate::read::record_expire::RecordExpire;
use crate::table::{schema_path, Table};
use crate::tasks;
use crate::write::bucket::{bucket_ids, group_by_partition, key_hashes, key_rows};
use crate::write::compaction::{BucketRef, CompactionFactory, WriterCompaction};
use crate::write::cross_partition::CrossPartitionAssigner;
use crate::write::dynamic_bucket::DynamicBucketAssigner;
use crate::write::external_sort::{sorted, ExternalSorter};
use crate::write::file_writer::{FileLayout, RollingWriter, WriterConfig};
use crate::write::input::{conform, RowKinds};
use crate::write::message::CommitMessage;
use crate::write::postpone::{self, POSTPONE_BUCKET, UNKNOWN_SEQUENCE};
use crate::write::restore::Restore;
use crate::write::sort_key::RowOrder;

/// Rows per batch when merged buffers are written.
const FLUSH_BATCH_SIZE: usize = 8192;

/// How rows find their bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BucketMode {
    /// `bucket = N`: hash of the bucket key.
    Fixed(i32),
    /// `bucket = -1` on a primary-key table: the HASH index.
    Dynamic,
    /// `bucket = -1` on a primary-key table whose key lacks a partition key: the writer's
    /// global key index (see `cross_partition`).
    CrossPartition,
    /// `bucket = -1` on an append table: everything in bucket 0.
    Unaware,
    /// `bucket = -2` on a primary-key table: everything in bucket -2 (see `postpone`).
    Postpone,
}

/// Everything a bucket flush needs, owned, so that independent buckets flush as concurrent tasks.
struct Flusher {
    table: Table,
    schema: Arc<TableSchema>,
    /// Trimmed primary-key columns within the buffered `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`.
    kv_key_columns: Vec<usize>,
    merge: Option<Arc<MergeConfig>>,
    changelog_input: bool,
    /// Postpone-bucket writers: files get Java's postpone name prefix and no statistics, and
    /// buffers are written unsorted.
    postpone: Option<PostponeFiles>,
}

/// How a postpone-bucket writer names and writes its files.
struct PostponeFiles {
    prefix: String,
    options: tidelake_spec::options::Options,
}

/// The files one bucket flush wrote.
#[derive(Default)]
struct Flushed {
    new_files: Vec<DataFileMeta>,
    changelog_files: Vec<DataFileMeta>,
}

/// The input rows a cross-partition write sends to one (partition, bucket).
#[derive(Default)]
struct RoutedRows {
    rows: Vec<u32>,
    /// `_VALUE_KIND` of each row there.
    kinds: Vec<i8>,
    /// Some row came from another partition (its partition columns must be replaced).
    moved: bool,
}

/// The writer of one (partition, bucket).
struct BucketWriter {
    partition: Vec<u8>,
    bucket: i32,
    total_buckets: i32,
    bucket_dir: String,
    next_sequence: i64,
    /// Primary-key tables: buffered rows `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`.
    buffer: Vec<RecordBatch>,
    buffered_bytes: usize,
    /// Append tables: the open file writer.
    append: Option<RollingWriter>,
    /// Append tables with a row order: the rows until they are written, sorted, into `append`
    /// (their bytes in memory count in `buffered_bytes`).
    sorter: Option<ExternalSorter>,
    new_files: Vec<DataFileMeta>,
    changelog_files: Vec<DataFileMeta>,
}

/// Writes batches into one table. Not shared between threads; create one per writer task.
pub struct TableWrite {
    table: Table,
    schema: Arc<TableSchema>,
    arrow_schema: SchemaRef,
    /// `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`.
    kv_schema: SchemaRef,
    layout: TableLayout,
    mode: BucketMode,
    primary_key: bool,
    partition_columns: Vec<usize>,
    bucket_key_columns: Vec<usize>,
    bucket_key_types: Vec<DataType>,
    /// Trimmed primary-key columns (positions in the table columns).
    key_columns: Vec<usize>,
    flusher: Arc<Flusher>,
    /// What the table held in the partitions written (see `restore`).
    restore: Restore,
    /// The oldest snapshot `restore` read from, or the latest at open when older (0: the table
    /// had none); `None` for overwrite writers.
    base_snapshot: Option<i64>,
    dynamic: Option<DynamicBucketAssigner>,
    cross_partition: Option<CrossPartitionAssigner>,
    writers: Vec<BucketWriter>,
    writer_index: HashMap<(Vec<u8>, i32), usize>,
    memory_budget: usize,
    buffered_bytes: usize,
    /// Compaction after flushes and at `prepare_commit` (primary-key tables, unless
    /// `write-only` or overwriting).
    compaction: Option<Box<dyn WriterCompaction>>,
    /// Bucket-unaware append tables: the order rows are written in (see [`RowOrder`]).
    order: Option<Arc<RowOrder>>,
    /// `local-sort.max-num-file-handles`: the fan-in of the sorters' merges.
    sort_fan_in: usize,
}

fn positions(schema: &TableSchema, names: &[String]) -> Vec<usize> {
    names
        .iter()
        .filter_map(|n| schema.fields.iter().position(|f| &f.name == n))
        .collect()
}

impl TableWrite {
    /// A writer for the latest schema of `table`, continuing from its latest snapshot, that
    /// compacts the buckets it writes with what `compaction` builds (unless the table does not
    /// compact in writers: see `compaction`).
    pub async fn new(table: Table, compaction: CompactionFactory) -> Result<TableWrite> {
        TableWrite::open(table, false, None, Some(compaction)).await
    }

    /// A writer that routes rows of a postpone-bucket table into real buckets, as if the table
    /// had `bucket = default_buckets`: partitions that have real buckets keep their count
    /// (`crate::compact::postpone`).
    pub(crate) async fn into_real_buckets(
        table: Table,
        default_buckets: i32,
        compaction: CompactionFactory,
    ) -> Result<TableWrite> {
        TableWrite::open(table, false, Some(default_buckets), Some(compaction)).await
    }

    /// A writer whose output replaces what it overwrites (Java `withIgnorePreviousFiles`): no
    /// sequence numbers, bucket counts or dynamic-bucket index are restored from the table, so
    /// every key is assigned afresh and every touched bucket gets a complete new index file.
    /// It never compacts (Java's overwrite writers neither).
    pub async fn for_overwrite(table: Table) -> Result<TableWrite> {
        TableWrite::open(table, true, None, None).await
    }

    /// [`TableWrite::for_overwrite`] into `buckets` buckets, whatever the table's `bucket`
    /// option says (a rescale).
    pub async fn for_overwrite_into(table: Table, buckets: i32) -> Result<TableWrite> {
        TableWrite::open(table, true, Some(buckets), None).await
    }

    async fn open(
        table: Table,
        ignore_previous: bool,
        buckets: Option<i32>,
        compaction: Option<CompactionFactory>,
    ) -> Result<TableWrite> {
        let schema = table.schema().clone();
        // A table dropped since it was opened: fail before writing files into a directory that
        // no longer holds a table (no commit could ever reference them).
        if !table.branch_io().exists(&schema_path(schema.id)).await? {
            return Err(Error::not_found(
                "table",
                format!(
                    "{} (its schema-{} is gone: was the table dropped?)",
                    table.location(),
                    schema.id
                ),
            ));
        }
        let opts = schema.options();
        let spec_err = |e| Error::from_spec("table options", e);
        opts.check_writable().map_err(spec_err)?;
        tidelake_spec::iceberg::check_schema(&schema).map_err(spec_err)?;
        let primary_key = !schema.primary_keys.is_empty();
        if primary_key {
            // Java's key-value writer refuses to start with a bad record-level expiry
            RecordExpire::of(&schema)?;
        }
        let bucket = match buckets {
            Some(n) => n,
            None => opts.bucket().map_err(spec_err)?,
        };
        let postpone = primary_key && bucket == POSTPONE_BUCKET;
        let compaction = match compaction {
            Some(build)
                if primary_key
                    && !postpone
                    && !schema.options().write_only().map_err(spec_err)? =>
            {
                Some(build(&table)?)
            }
            _ => None,
        };
        let mode = match bucket {
            n if n > 0 => BucketMode::Fixed(n),
            -1 if primary_key && schema.cross_partition_update() => {
                // An overwrite writer starts from an empty index, which is only right for the
                // partitions it replaces: keys living elsewhere would end up twice.
                // Java's schema validation refuses these: keys are routed in arrival order.
                if !opts.sequence_field().is_empty() {
                    return Err(Error::Unsupported(
                        "sequence.field on a cross-partition-upsert table (bucket -1 with a primary key that lacks a \
                         partition key); Java Paimon refuses such tables too".into(),
                    ));
                }
                if ignore_previous {
                    return Err(Error::Unsupported(
                        "overwriting a cross-partition-upsert table (bucket -1 with a primary key that lacks a partition key); \
                         delete the rows and upsert instead".into(),
                    ));
                }
                BucketMode::CrossPartition
            }
            -1 if primary_key => BucketMode::Dynamic,
            -1 => BucketMode::Unaware,
            POSTPONE_BUCKET if postpone => BucketMode::Postpone,
            other => {
                return Err(Error::Unsupported(format!(
                    "writing tables with bucket = {other}"
                )))
            }
        };
        let arrow_schema = Arc::new(
            tidelake_spec::arrow::to_arrow_schema(&schema.fields)
                .map_err(|e| Error::from_spec("table schema", e))?,
        );
        let mut kv_fields = vec![
            Arc::new(Field::new(SEQUENCE_NUMBER, ArrowType::Int64, false)),
            Arc::new(Field::new(VALUE_KIND, ArrowType::Int8, false)),
        ];
        kv_fields.extend(arrow_schema.fields().iter().cloned());
        let kv_schema = Arc::new(Schema::new(kv_fields));
        let layout = TableLayout::new(&schema)?;
        let bucket_keys = schema.bucket_keys();
        let bucket_key_columns = positions(&schema, &bucket_keys);
        let bucket_key_types = bucket_key_columns
            .iter()
            .map(|&i| schema.fields[i].data_type.clone())
            .collect();
        let key_columns = positions(&schema, &schema.trimmed_primary_keys());
        let merge = if primary_key {
            // The full primary key, as Java passes it to merge functions.
            let mut config = MergeConfig::from_options(&schema.fields, &schema.primary_keys, opts)?;
            config.keep_retracts = true;
            Some(Arc::new(config))
        } else {
            None
        };
        // Java's postpone writers write no changelog; their compaction does.
        let changelog_input = primary_key
            && !postpone
            && opts.changelog_producer().map_err(spec_err)? == ChangelogProducer::Input;
        let memory_budget =
            usize::try_from(opts.write_buffer_size().map_err(spec_err)?).unwrap_or(usize::MAX);
        let order = match mode {
            BucketMode::Unaware => RowOrder::clustering(&schema)?.map(Arc::new),
            _ => None,
        };
        let sort_fan_in = opts.local_sort_max_num_file_handles().map_err(spec_err)?;
        let dynamic = match mode {
            BucketMode::Dynamic => {
                let target = opts.dynamic_bucket_target_row_num().map_err(spec_err)?;
                Some(
                    DynamicBucketAssigner::new(
                        &table,
                        u64::try_from(target).unwrap_or(1),
                        ignore_previous,
                    )
                    .await?,
                )
            }
            _ => None,
        };
        let (restore, base_snapshot, cross_partition) = if ignore_previous {
            (Restore::nothing(), None, None)
        } else if mode == BucketMode::CrossPartition {
            let (restore, base, index) = Restore::with_index(&table).await?;
            (restore, Some(base), Some(index))
        } else {
            let latest = table.snapshot_manager().latest_id().await?;
            (Restore::on_demand(), Some(latest.unwrap_or(0)), None)
        };
        let partition_columns = positions(&schema, &schema.partition_keys);
        let flusher = Arc::new(Flusher {
            table: table.clone(),
            schema: schema.clone(),
            // Key columns follow `_SEQUENCE_NUMBER` and `_VALUE_KIND`.
            kv_key_columns: key_columns.iter().map(|&i| i + 2).collect(),
            merge,
            changelog_input,
            postpone: postpone.then(|| PostponeFiles {
                prefix: postpone::new_file_prefix(opts, table.env()),
                options: postpone::file_options(&schema),
            }),
        });
        Ok(TableWrite {
            table,
            schema,
            arrow_schema,
            kv_schema,
            layout,
            mode,
            primary_key,
            partition_columns,
            bucket_key_columns,
            bucket_key_types,
            key_columns,
            flusher,
            restore,
            base_snapshot,
            dynamic,
            cross_partition,
            writers: Vec::new(),
            writer_index: HashMap::new(),
            memory_budget,
            buffered_bytes: 0,
            compaction,
            order,
            sort_fan_in,
        })
    }

    /// Write the rows of each (partition, bucket) in `order` instead of the table's clustering
    /// (sort compaction). Only bucket-unaware append tables have a row order
    /// ([`Error::Unsupported`] otherwise); set before the first write.
    pub fn sorted_by(mut self, order: RowOrder) -> Result<TableWrite> {
        if self.mode != BucketMode::Unaware {
            return Err(Error::Unsupported(
                "sorting the rows of a table that is not a bucket-unaware append table \
                 (bucket = -1 without a primary key)"
                    .into(),
            ));
        }
        self.order = Some(Arc::new(order));
        Ok(self)
    }

    /// Whether `prepare_commit` waits for the compactions it triggers (default true: one-shot
    /// batch writers, Java `BatchTableWrite`); long-lived writers pass false (Java
    /// `StreamTableWrite`): an unfinished compaction joins a later `prepare_commit`.
    pub fn set_wait_compaction(&mut self, wait: bool) {
        if let Some(c) = self.compaction.as_mut() {
            c.set_wait(wait);
        }
    }

    /// Sorted runs of each flushed bucket in this writer's compaction view.
    #[cfg(test)]
    pub(crate) fn view_sorted_runs(&self) -> Vec<usize> {
        self.compaction
            .as_ref()
            .map_or_else(Vec::new, |c| c.sorted_runs())
    }

    /// The snapshot this writer continues from: the latest at open, or an older one a partition
    /// was restored from (0: the table had none; `None`: an overwrite writer, which restores
    /// nothing). Every partition's state is from this snapshot or a newer one.
    pub(crate) fn base_snapshot(&self) -> Option<i64> {
        self.base_snapshot
    }

    /// The schema every written batch is conformed to.
    pub fn schema(&self) -> &Arc<TableSchema> {
        &self.schema
    }

    /// Write one batch; `kinds` says which row kind each row has.
    pub async fn write(&mut self, batch: &RecordBatch, kinds: RowKinds) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if !self.primary_key && kinds != RowKinds::Fixed(0) {
            return Err(Error::Unsupported(
                "updates and deletes on an append table (it has no primary key)".into(),
            ));
        }
        let conformed = conform(batch, &self.schema, &self.arrow_schema, kinds)?
            .without_update_before(&self.schema)?;
        if conformed.batch.num_rows() == 0 {
            return Ok(());
        }
        self.write_rows(&conformed.batch, Arc::new(conformed.kinds))
            .await
    }

    /// Write rows already in the table's Arrow schema (as read back from its data files), with
    /// their `_VALUE_KIND` codes.
    pub(crate) async fn write_rows(&mut self, batch: &RecordBatch, kinds: ArrayRef) -> Result<()> {
        if self.mode == BucketMode::CrossPartition {
            return self.write_cross_partition(batch, &kinds).await;
        }
        let partition_types = self.layout.partition_types.clone();
        let groups = group_by_partition(batch, &self.partition_columns, &partition_types)?;
        self.restore_partitions(groups.iter().map(|g| g.partition.as_slice()))
            .await?;
        for group in groups {
            let (rows, row_kinds) = take_rows(batch, &kinds, &group.rows, "partitioning")?;
            let buckets = self.buckets_of(&group.partition, &rows).await?;
            for (bucket, indices) in split_by_bucket(&buckets) {
                let (part, part_kinds) = take_rows(&rows, &row_kinds, &indices, "bucketing")?;
                let w = self.writer(&group.partition, &group.values, bucket)?;
                self.push(w, part, part_kinds).await?;
            }
        }
        self.flush_over_budget().await
    }

    /// Route rows of a cross-partition-upsert table through its key index, in input order: a
    /// row may go to its key's old partition, or add a `-D` there (see `cross_partition`).
    async fn write_cross_partition(&mut self, batch: &RecordBatch, kinds: &ArrayRef) -> Result<()> {
        // The first write after a commit verifies it right away: its snapshot may expire later.
        if self
            .writers
            .iter()
            .all(|w| w.buffer.is_empty() && w.new_files.is_empty())
        {
            self.advance_cross_partition_base().await?;
        }
        let partition_types = self.layout.partition_types.clone();
        let groups = group_by_partition(batch, &self.partition_columns, &partition_types)?;
        let key_types: Vec<DataType> = self
            .key_columns
            .iter()
            .map(|&i| self.schema.fields[i].data_type.clone())
            .collect();
        let keys = key_rows(batch, &self.key_columns, &key_types)?;
        let index = self
            .cross_partition
            .as_mut()
            .expect("cross-partition mode has a key index");
        let mut row_partition = vec![0u32; batch.num_rows()];
        for g in &groups {
            let id = index.partition_id(&g.partition);
            for &r in g.rows.values() {
                row_partition[r as usize] = id;
            }
        }
        let kind_codes = kinds.as_primitive::<Int8Type>().values();
        let routed = index.route(&row_partition, &keys, kind_codes)?;
        // Rows per (partition, bucket), in input order.
        let mut order: Vec<(u32, i32)> = Vec::new();
        let mut targets: HashMap<(u32, i32), RoutedRows> = HashMap::new();
        for r in routed {
            let target = targets.entry((r.partition, r.bucket)).or_insert_with(|| {
                order.push((r.partition, r.bucket));
                RoutedRows::default()
            });
            target.rows.push(r.row);
            target.kinds.push(r.kind);
            target.moved |= row_partition[r.row as usize] != r.partition;
        }
        for (partition, bucket) in order {
            let RoutedRows {
                rows,
                kinds: row_kinds,
                moved,
            } = targets.remove(&(partition, bucket)).unwrap_or_default();
            let framed = self
                .cross_partition
                .as_ref()
                .expect("cross-partition mode has a key index")
                .partition(partition)
                .to_vec();
            let values = self.layout.decode_partition(&framed)?;
            let mut part = take_record_batch(batch, &UInt32Array::from(rows))
                .map_err(|e| Error::arrow("routing keys", e))?;
            if moved {
                part = self.with_partition(&part, &values)?;
            }
            let w = self.writer(&framed, &values, bucket)?;
            self.push(w, part, Arc::new(Int8Array::from(row_kinds)))
                .await?;
        }
        self.flush_over_budget().await
    }

    /// Move the base of a cross-partition writer past its own commits and compactions (see
    /// `CrossPartitionAssigner::advance_base`).
    async fn advance_cross_partition_base(&mut self) -> Result<()> {
        if let (Some(index), Some(base)) = (self.cross_partition.as_mut(), self.base_snapshot) {
            self.base_snapshot = Some(index.advance_base(&self.table, base).await?);
        }
        Ok(())
    }

    /// `rows` with every partition column set to `values`.
    fn with_partition(&self, rows: &RecordBatch, values: &[Datum]) -> Result<RecordBatch> {
        let mut columns = rows.columns().to_vec();
        for ((&c, value), ty) in self
            .partition_columns
            .iter()
            .zip(values)
            .zip(&self.layout.partition_types)
        {
            columns[c] = datums_to_array(&vec![value.clone(); rows.num_rows()], ty)?;
        }
        RecordBatch::try_new(rows.schema(), columns)
            .map_err(|e| Error::arrow("setting a moved key's old partition", e))
    }

    /// Restore the state of those of `partitions` this writer has not written yet (see
    /// `restore`), moving its base back when the snapshot read is older (a rollback).
    async fn restore_partitions<'a>(
        &mut self,
        partitions: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<()> {
        let read = self
            .restore
            .partitions(&self.table, &self.layout, partitions)
            .await?;
        if let (Some(read), Some(base)) = (read, self.base_snapshot.as_mut()) {
            *base = (*base).min(read);
        }
        Ok(())
    }

    /// The bucket [`TableWrite::write`] puts every row of `batch` in (same conforming, same
    /// per-partition bucket counts), so that a distributed job can route each (partition,
    /// bucket) to a single writer. Fixed-bucket tables only: dynamic buckets depend on the
    /// writer's assigner state and bucket-unaware tables have one bucket.
    pub async fn fixed_buckets(
        &mut self,
        batch: &RecordBatch,
        kinds: RowKinds,
    ) -> Result<Vec<i32>> {
        let BucketMode::Fixed(n) = self.mode else {
            return Err(Error::Unsupported(
                "routing rows by bucket needs a fixed bucket count (table option bucket > 0)"
                    .into(),
            ));
        };
        let mut out = vec![0; batch.num_rows()];
        if batch.num_rows() == 0 {
            return Ok(out);
        }
        let conformed = conform(batch, &self.schema, &self.arrow_schema, kinds)?;
        let groups = group_by_partition(
            &conformed.batch,
            &self.partition_columns,
            &self.layout.partition_types,
        )?;
        self.restore_partitions(groups.iter().map(|g| g.partition.as_slice()))
            .await?;
        for group in groups {
            let rows = take_record_batch(&conformed.batch, &group.rows)
                .map_err(|e| Error::arrow("partitioning", e))?;
            for (&row, bucket) in
                group
                    .rows
                    .values()
                    .iter()
                    .zip(self.fixed_bucket_ids(&group.partition, &rows, n)?)
            {
                out[row as usize] = bucket;
            }
        }
        Ok(out)
    }

    fn fixed_bucket_ids(&self, partition: &[u8], rows: &RecordBatch, n: i32) -> Result<Vec<i32>> {
        let n = self.restore.bucket_count(partition).unwrap_or(n);
        bucket_ids(rows, &self.bucket_key_columns, &self.bucket_key_types, n)
    }

    async fn buckets_of(&mut self, partition: &[u8], rows: &RecordBatch) -> Result<Vec<i32>> {
        match self.mode {
            BucketMode::Fixed(n) => self.fixed_bucket_ids(partition, rows, n),
            BucketMode::Dynamic => {
                let types: Vec<DataType> = self
                    .key_columns
                    .iter()
                    .map(|&i| self.schema.fields[i].data_type.clone())
                    .collect();
                let hashes = key_hashes(rows, &self.key_columns, &types)?;
                self.dynamic
                    .as_mut()
                    .expect("dynamic mode has an assigner")
                    .assign(partition, &hashes)
                    .await
            }
            BucketMode::CrossPartition => Err(Error::Internal(
                "cross-partition rows are routed by write_cross_partition".into(),
            )),
            BucketMode::Unaware => Ok(vec![0; rows.num_rows()]),
            BucketMode::Postpone => Ok(vec![POSTPONE_BUCKET; rows.num_rows()]),
        }
    }

    /// The writer of (partition, bucket), created on first use.
    fn writer(&mut self, partition: &[u8], values: &[Datum], bucket: i32) -> Result<usize> {
        let key = (partition.to_vec(), bucket);
        if let Some(&i) = self.writer_index.get(&key) {
            return Ok(i);
        }
        let restored = self.restore.bucket(partition, bucket);
        let total_buckets = match self.mode {
            BucketMode::Fixed(n) => self.restore.bucket_count(partition).unwrap_or(n),
            BucketMode::Postpone => POSTPONE_BUCKET,
            _ => -1,
        };
        let next_sequence = restored.map_or(0, |r| r.max_sequence + 1);
        let bucket_dir = self.layout.bucket_path(values, bucket)?;
        let append = if self.primary_key {
            None
        } else {
            Some(
                self.flusher
                    .rolling_writer(self.table.env(), &bucket_dir, FileLayout::Append, false)?
                    .with_first_sequence_number(next_sequence),
            )
        };
        let sorter = self.new_sorter();
        self.writers.push(BucketWriter {
            partition: partition.to_vec(),
            bucket,
            total_buckets,
            bucket_dir,
            next_sequence,
            buffer: Vec::new(),
            buffered_bytes: 0,
            append,
            sorter,
            new_files: Vec::new(),
            changelog_files: Vec::new(),
        });
        self.writer_index.insert(key, self.writers.len() - 1);
        Ok(self.writers.len() - 1)
    }

    async fn push(&mut self, w: usize, rows: RecordBatch, kinds: ArrayRef) -> Result<()> {
        let n = rows.num_rows() as i64;
        let writer = &mut self.writers[w];
        if let Some(sorter) = writer.sorter.as_mut() {
            writer.next_sequence += n;
            let bytes = sorter.push(&rows)?;
            writer.buffered_bytes += bytes;
            self.buffered_bytes += bytes;
            return Ok(());
        }
        if let Some(append) = writer.append.as_mut() {
            writer.next_sequence += n;
            return append.write(&rows).await;
        }
        let first = writer.next_sequence;
        writer.next_sequence += n;
        let sequence = if self.mode == BucketMode::Postpone {
            Int64Array::from(vec![UNKNOWN_SEQUENCE; rows.num_rows()])
        } else {
            Int64Array::from_iter_values(first..first + n)
        };
        let mut columns: Vec<ArrayRef> = vec![Arc::new(sequence), kinds];
        columns.extend(rows.columns().iter().cloned());
        let kv = RecordBatch::try_new(self.kv_schema.clone(), columns)
            .map_err(|e| Error::arrow("buffering rows", e))?;
        let bytes = kv.get_array_memory_size();
        writer.buffer.push(kv);
        writer.buffered_bytes += bytes;
        self.buffered_bytes += bytes;
        Ok(())
    }

    /// A sorter for a new (partition, bucket) writer, when rows are written in an order.
    fn new_sorter(&self) -> Option<ExternalSorter> {
        self.order
            .as_ref()
            .map(|order| ExternalSorter::new(order.clone(), self.sort_fan_in))
    }

    /// Flush the largest buffers (spill the largest sort runs) until the total is at most half
    /// the budget.
    async fn flush_over_budget(&mut self) -> Result<()> {
        if self.buffered_bytes <= self.memory_budget {
            return Ok(());
        }
        let mut largest: Vec<usize> = (0..self.writers.len())
            .filter(|&i| self.writers[i].buffered_bytes > 0)
            .collect();
        largest.sort_by_key(|&i| std::cmp::Reverse(self.writers[i].buffered_bytes));
        let mut left = self.buffered_bytes;
        let chosen: Vec<usize> = largest
            .into_iter()
            .take_while(|&i| {
                let over = left > self.memory_budget / 2;
                left -= self.writers[i].buffered_bytes;
                over
            })
            .collect();
        let (runs, buffers): (Vec<usize>, Vec<usize>) = chosen
            .into_iter()
            .partition(|&i| self.writers[i].sorter.is_some());
        for w in runs {
            self.spill_run(w).await?;
        }
        self.flush_buckets(buffers, false).await
    }

    /// Spill the sort run of writer `w` to a local file (on a blocking thread).
    async fn spill_run(&mut self, w: usize) -> Result<()> {
        let writer = &mut self.writers[w];
        let Some(mut sorter) = writer.sorter.take() else {
            return Ok(());
        };
        let task = tokio::task::spawn_blocking(move || sorter.spill().map(|()| sorter));
        let what = format!("spilling the sort run of bucket {}", writer.bucket);
        let sorter = tasks::joined(task, what).await?;
        debug_assert_eq!(sorter.buffered_bytes(), 0);
        self.buffered_bytes -= std::mem::take(&mut writer.buffered_bytes);
        writer.sorter = Some(sorter);
        Ok(())
    }

    /// Flush the buffers of `writers` (closing their append files too when `close_append`),
    /// each bucket on its own task, at most the available parallelism at once: the buffers are
    /// already in memory, each running flush adds its sort order and one open row group. Every
    /// flush runs to its end; the files of those that succeeded are recorded, then the error of
    /// the failed writer with the lowest index is returned.
    async fn flush_buckets(&mut self, writers: Vec<usize>, close_append: bool) -> Result<()> {
        let mut jobs = Vec::new();
        for w in writers {
            let writer = &mut self.writers[w];
            let buffer = std::mem::take(&mut writer.buffer);
            self.buffered_bytes -= std::mem::take(&mut writer.buffered_bytes);
            let (append, sorter) = if close_append {
                (writer.append.take(), writer.sorter.take())
            } else {
                (None, None)
            };
            if buffer.is_empty() && append.is_none() {
                continue;
            }
            let flusher = self.flusher.clone();
            let dir = writer.bucket_dir.clone();
            let bucket = writer.bucket;
            // Forked here, in writer order: file names do not depend on which flush runs first.
            let env = flusher.table.env().fork();
            jobs.push(async move {
                let task =
                    tokio::spawn(
                        async move { flusher.flush(&env, &dir, buffer, append, sorter).await },
                    );
                (
                    w,
                    tasks::joined(task, format!("flushing bucket {bucket}")).await,
                )
            });
        }
        let mut done: Vec<(usize, Result<Flushed>)> = stream::iter(jobs)
            .buffer_unordered(tasks::cores())
            .collect()
            .await;
        done.sort_by_key(|(w, _)| *w);
        let mut first_error = None;
        for (w, result) in done {
            match result {
                Ok(flushed) => {
                    let writer = &mut self.writers[w];
                    writer.new_files.extend(flushed.new_files.iter().cloned());
                    writer.changelog_files.extend(flushed.changelog_files);
                    if let Some(compaction) = self.compaction.as_mut() {
                        let target = BucketRef {
                            partition: &writer.partition,
                            bucket: writer.bucket,
                            total_buckets: writer.total_buckets,
                        };
                        compaction
                            .after_flush(target, &flushed.new_files, &writer.new_files)
                            .await;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Flush everything and return one message per touched (partition, bucket). The writer
    /// stays usable; sequence numbers keep counting.
    pub async fn prepare_commit(&mut self) -> Result<Vec<CommitMessage>> {
        self.flush_buckets((0..self.writers.len()).collect(), true)
            .await?;
        let mut index_updates = match self.dynamic.as_mut() {
            Some(d) => d.flush().await?,
            None => Vec::new(),
        };
        self.advance_cross_partition_base().await?;
        let mut messages = Vec::new();
        for w in &mut self.writers {
            let mut m = CommitMessage::new(w.partition.clone(), w.bucket, w.total_buckets);
            m.base_snapshot = self.base_snapshot;
            m.new_files = std::mem::take(&mut w.new_files);
            m.changelog_files = std::mem::take(&mut w.changelog_files);
            index_updates.retain(|u| {
                if u.partition == w.partition && u.bucket == w.bucket {
                    m.new_index_files.push(u.new_file.clone());
                    m.deleted_index_files.extend(u.old_file.clone());
                    false
                } else {
                    true
                }
            });
            if let Some(compaction) = self.compaction.as_mut() {
                compaction.prepare(&mut m).await;
            }
            if !m.is_empty() {
                messages.push(m);
            }
        }
        if let Some(compaction) = self.compaction.as_mut() {
            compaction.end_cycle();
        }
        if let Some(index) = self.cross_partition.as_mut() {
            index.handed_out(
                messages
                    .iter()
                    .flat_map(|m| m.new_files.iter().map(|f| f.file_name.clone())),
            );
        }
        if !self.primary_key {
            // Append writers were closed; the next write opens new files continuing the sequence.
            for w in 0..self.writers.len() {
                let dir = self.writers[w].bucket_dir.clone();
                let next = self.writers[w].next_sequence;
                self.writers[w].append = Some(
                    self.flusher
                        .rolling_writer(self.table.env(), &dir, FileLayout::Append, false)?
                        .with_first_sequence_number(next),
                );
                self.writers[w].sorter = self.new_sorter();
            }
        }
        Ok(messages)
    }

    /// Delete every file written since the last `prepare_commit`, compaction outputs included
    /// (a running compaction is awaited first).
    pub async fn abort(&mut self) -> Result<()> {
        for w in &mut self.writers {
            if let Some(compaction) = self.compaction.as_mut() {
                compaction.abort(&w.partition, w.bucket).await?;
            }
            // a sorter dropped removes its spilled runs
            w.sorter = None;
            if let Some(append) = w.append.take() {
                append.abort().await?;
            }
            for f in w.new_files.drain(..).chain(w.changelog_files.drain(..)) {
                self.table.io().delete(&f.path(&w.bucket_dir)).await?;
            }
            w.buffer.clear();
            w.buffered_bytes = 0;
        }
        self.buffered_bytes = 0;
        Ok(())
    }
}

impl Flusher {
    /// A writer into `bucket_dir` drawing its ids from `env`.
    fn rolling_writer(
        &self,
        env: &Env,
        bucket_dir: &str,
        layout: FileLayout,
        changelog: bool,
    ) -> Result<RollingWriter> {
        let (opts, prefix) = match &self.postpone {
            Some(p) => (&p.options, p.prefix.as_str()),
            None if changelog => (
                self.schema.options(),
                self.schema.options().changelog_file_prefix(),
            ),
            None => (
                self.schema.options(),
                self.schema.options().data_file_prefix(),
            ),
        };
        let config = WriterConfig::from_options(opts, layout, 0, changelog)?;
        RollingWriter::new(
            self.table.io().with_env(env.clone()),
            bucket_dir.to_string(),
            self.schema.clone(),
            layout,
            0,
            FileSource::Append,
            prefix.to_string(),
            config,
        )
    }

    /// Sort, merge and write one bucket's buffer as level-0 file(s), then close `append`, after
    /// writing `sorter`'s rows into it in their order. On failure every file this flush wrote
    /// is deleted.
    async fn flush(
        &self,
        env: &Env,
        bucket_dir: &str,
        buffer: Vec<RecordBatch>,
        append: Option<RollingWriter>,
        sorter: Option<ExternalSorter>,
    ) -> Result<Flushed> {
        failpoint!("write-flush");
        let mut out = Flushed::default();
        if self.postpone.is_some() && !buffer.is_empty() {
            let data = self
                .rolling_writer(env, bucket_dir, FileLayout::KeyValue, false)?
                .unsorted();
            out.new_files =
                write_all(data, stream::iter(buffer.into_iter().map(Ok)).boxed()).await?;
        } else if !buffer.is_empty() {
            let sorted = SortedBuffer::new(buffer, &self.kv_key_columns)?;
            if self.changelog_input {
                let changelog = self.rolling_writer(env, bucket_dir, FileLayout::KeyValue, true)?;
                out.changelog_files = write_all(changelog, sorted.rows(FLUSH_BATCH_SIZE)).await?;
            }
            match self.write_data(env, bucket_dir, sorted).await {
                Ok(files) => out.new_files = files,
                Err(e) => {
                    // Already failing: a cleanup error cannot be reported better than `e`.
                    for f in &out.changelog_files {
                        let _ = self.table.io().delete(&f.path(bucket_dir)).await;
                    }
                    return Err(e);
                }
            }
        }
        match (append, sorter) {
            (Some(append), Some(sorter)) => out
                .new_files
                .extend(write_all(append, sorted(sorter)).await?),
            (Some(append), None) => out.new_files.extend(append.close().await?),
            (None, _) => {}
        }
        Ok(out)
    }

    /// The level-0 data files of a sorted buffer. Equal keys fold with the merge engine, each
    /// keeping its winning sequence number ([`merge_keeping_sequence`]); a buffer without
    /// repeated keys is written as it is.
    async fn write_data(
        &self,
        env: &Env,
        bucket_dir: &str,
        sorted: SortedBuffer,
    ) -> Result<Vec<DataFileMeta>> {
        let data = self.rolling_writer(env, bucket_dir, FileLayout::KeyValue, false)?;
        let rows = if sorted.has_repeats() {
            let config = self
                .merge
                .clone()
                .expect("primary-key tables have a merge config");
            merge_keeping_sequence(sorted.runs(FLUSH_BATCH_SIZE), config, FLUSH_BATCH_SIZE)
        } else {
            sorted.rows(FLUSH_BATCH_SIZE)
        };
        write_all(data, rows).await
    }
}

/// Write `rows` into `writer` and close it; on any failure the writer's files are deleted.
async fn write_all(
    mut writer: RollingWriter,
    mut rows: BoxStream<'static, Result<RecordBatch>>,
) -> Result<Vec<DataFileMeta>> {
    while let Some(batch) = rows.next().await {
        let written = match batch {
            Ok(batch) => writer.write(&batch).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            writer.abort().await?;
            return Err(e);
        }
    }
    writer.close().await
}

/// The rows at `indices` (ascending) of `batch` and their `kinds`; no copy when that is every row.
fn take_rows(
    batch: &RecordBatch,
    kinds: &ArrayRef,
    indices: &UInt32Array,
    what: &str,
) -> Result<(RecordBatch, ArrayRef)> {
    if indices.len() == batch.num_rows() {
        return Ok((batch.clone(), kinds.clone()));
    }
    let rows = take_record_batch(batch, indices).map_err(|e| Error::arrow(what, e))?;
    let kinds =
        arrow_select::take::take(kinds, indices, None).map_err(|e| Error::arrow(what, e))?;
    Ok((rows, kinds))
}

/// Row indices per bucket, buckets in first-appearance order.
fn split_by_bucket(buckets: &[i32]) -> Vec<(i32, UInt32Array)> {
    let mut order: Vec<i32> = Vec::new();
    let mut rows: HashMap<i32, Vec<u32>> = HashMap::new();
    for (i, b) in buckets.iter().enumerate() {
        rows.entry(*b)
            .or_insert_with(|| {
                order.push(*b);
                Vec::new()
            })
            .push(i as u32);
    }
    order
        .into_iter()
        .map(|b| (b, UInt32Array::from(rows.remove(&b).unwrap_or_default())))
        .collect()
}
