//! Reads as verbs: [`Read`] (the rows of one snapshot) and [`Changes`] (the changes of a range
//! of snapshots), builders that own the validation of their selectors and the resolution of
//! them to snapshots, then plan and set up the read ([`PlannedRead`]); [`SplitReader`] reads
//! the planned splits, here or in another process.
//!
//! Invariants: a conflicting or missing selector is [`Error::invalid`] raised here and nowhere
//! else, before any I/O; the positional [`ReadContext`] is assembled only here (and by engine
//! internals that read files for themselves: compaction, lookups, system tables), so every
//! caller outside the crate reads through these builders.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::TryStreamExt;
use tidelake_spec::options::IncrementalBetweenScanMode;
use tidelake_spec::schema::TableSchema;

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::read::split_read::{collect_splits, read_splits, ReadContext, DEFAULT_BATCH_SIZE};
use crate::scan::plan::plan_diff;
use crate::scan::predicate::Predicate;
use crate::scan::{
    plan_changes, plan_scan, resolve_snapshot, ScanPlan, ScanRequest, SnapshotSelector, Split,
};
use crate::table::Table;
use crate::tasks::Progress;
use crate::write::input::RowKinds;
use crate::write::message::CommitMessage;
use crate::write::table_write::TableWrite;

/// What every read has: the columns returned, the filter rows must match and the batch size.
#[derive(Clone, Debug)]
struct Projection {
    columns: Option<Vec<String>>,
    filter: Option<Predicate>,
    batch_size: usize,
}

impl Projection {
    fn new() -> Projection {
        Projection {
            columns: None,
            filter: None,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// The read of `schema`'s rows of `table` (with a leading `_row_kind` column for change
    /// reads).
    fn reader(
        &self,
        table: Table,
        schema: &TableSchema,
        with_row_kind: bool,
    ) -> Result<SplitReader> {
        let ctx = ReadContext::of(table, schema)
            .columns(self.columns.as_deref())
            .filter(self.filter.as_ref())
            .batch_size(self.batch_size)
            .with_row_kind(with_row_kind)
            .build()?;
        Ok(SplitReader { ctx: Arc::new(ctx) })
    }
}

/// A read of one snapshot of a table: the latest unless one of [`Read::snapshot_id`],
/// [`Read::tag`] or [`Read::timestamp_ms`] selects another (at most one may).
#[derive(Clone, Debug)]
pub struct Read {
    table: Table,
    projection: Projection,
    snapshot_id: Option<i64>,
    tag: Option<String>,
    timestamp_ms: Option<i64>,
    options: Vec<(String, String)>,
}

impl Read {
    /// The read of every column of the latest snapshot of `table`.
    pub fn new(table: &Table) -> Read {
        Read {
            table: table.clone(),
            projection: Projection::new(),
            snapshot_id: None,
            tag: None,
            timestamp_ms: None,
            options: Vec::new(),
        }
    }

    /// Return these columns, in this order.
    pub fn columns(mut self, columns: Vec<String>) -> Read {
        self.projection.columns = Some(columns);
        self
    }

    /// Keep the rows `filter` matches (after the merge of primary-key tables); it also prunes
    /// the plan.
    pub fn filter(mut self, filter: Predicate) -> Read {
        self.projection.filter = Some(filter);
        self
    }

    /// The latest rows of the partitions `partitions` selects (every partition with `None`),
    /// as the operations that rewrite whole partitions read them: the filter may only name
    /// partition columns ([`Error::Invalid`] otherwise).
    pub(crate) fn of_partitions(table: &Table, partitions: Option<&Predicate>) -> Result<Read> {
        let read = Read::new(table);
        let Some(filter) = partitions else {
            return Ok(read);
        };
        let layout = TableLayout::new(table.schema())?;
        filter.bind(&layout.partition_fields).map_err(|e| {
            Error::invalid(format!(
                "a partition filter may only use partition columns: {e}"
            ))
        })?;
        Ok(read.filter(filter.clone()))
    }

    /// Rows per batch at most (default [`DEFAULT_BATCH_SIZE`]).
    pub fn batch_size(mut self, rows: usize) -> Read {
        self.projection.batch_size = rows;
        self
    }

    /// Read snapshot `id` (time travel).
    pub fn snapshot_id(mut self, id: i64) -> Read {
        self.snapshot_id = Some(id);
        self
    }

    /// Read the snapshot of tag `name`.
    pub fn tag(mut self, name: impl Into<String>) -> Read {
        self.tag = Some(name.into());
        self
    }

    /// Read the newest snapshot committed at or before this epoch-millisecond time.
    pub fn timestamp_ms(mut self, ms: i64) -> Read {
        self.timestamp_ms = Some(ms);
        self
    }

    /// Table options overridden for this read only (Paimon's dynamic options), e.g.
    /// `deletion-vectors.merge-on-read`.
    pub fn options(mut self, options: Vec<(String, String)>) -> Read {
        self.options = options;
        self
    }

    /// The snapshot selected; more than one selector is [`Error::invalid`].
    fn selector(&self) -> Result<SnapshotSelector> {
        match (self.snapshot_id, &self.tag, self.timestamp_ms) {
            (None, None, None) => Ok(SnapshotSelector::Latest),
            (Some(id), None, None) => Ok(SnapshotSelector::Id(id)),
            (None, Some(t), None) => Ok(SnapshotSelector::Tag(t.clone())),
            (None, None, Some(ts)) => Ok(SnapshotSelector::TimestampMs(ts)),
            _ => Err(Error::invalid(
                "give at most one of snapshot_id, tag and timestamp_ms",
            )),
        }
    }

    /// Plan the read ([`plan_scan`]) and set it up.
    pub async fn plan(self) -> Result<PlannedRead> {
        let request = ScanRequest {
            snapshot: self.selector()?,
            filter: self.projection.filter.clone(),
            options: self.options,
        };
        let plan = plan_scan(&self.table, &request).await?;
        let reader = self.projection.reader(self.table, &plan.schema, false)?;
        Ok(PlannedRead { plan, reader })
    }

    /// The reader of splits planned elsewhere (possibly in another process) in the schema
    /// `schema_id`, without planning again; the snapshot selectors and options are not used.
    pub async fn split_reader(self, schema_id: i64) -> Result<SplitReader> {
        let schema = self.table.schema_by_id(schema_id).await?;
        self.projection.reader(self.table, &schema, false)
    }
}

/// A read of the changes of a table between two snapshots, with a leading `_row_kind` column
/// (`+I`, `-U`, `+U`, `-D`): the range `(start, end]` given by snapshot ids or by timestamps
/// (Paimon's `incremental-between-timestamp`: the snapshots committed after the start time and
/// up to the end time), each end by one of them, up to the latest snapshot when no end is
/// given; or between two tags (both, and nothing else).
#[derive(Clone, Debug)]
pub struct Changes {
    table: Table,
    projection: Projection,
    start_snapshot: Option<i64>,
    end_snapshot: Option<i64>,
    start_timestamp_ms: Option<i64>,
    end_timestamp_ms: Option<i64>,
    start_tag: Option<String>,
    end_tag: Option<String>,
    mode: Option<IncrementalBetweenScanMode>,
}

impl Changes {
    /// The changes of `table`; a start must be given before [`Changes::plan`].
    pub fn new(table: &Table) -> Changes {
        Changes {
            table: table.clone(),
            projection: Projection::new(),
            start_snapshot: None,
            end_snapshot: None,
            start_timestamp_ms: None,
            end_timestamp_ms: None,
            start_tag: None,
            end_tag: None,
            mode: None,
        }
    }

    /// Return these columns (after `_row_kind`), in this order.
    pub fn columns(mut self, columns: Vec<String>) -> Changes {
        self.projection.columns = Some(columns);
        self
    }

    /// Keep the change rows `filter` matches.
    pub fn filter(mut self, filter: Predicate) -> Changes {
        self.projection.filter = Some(filter);
        self
    }

    /// Rows per batch at most (default [`DEFAULT_BATCH_SIZE`]).
    pub fn batch_size(mut self, rows: usize) -> Changes {
        self.projection.batch_size = rows;
        self
    }

    /// Paimon's `incremental-between-scan-mode` (default: the table's option; between tags a
    /// diff unless the table sets `incremental-between-tag-to-snapshot`).
    pub fn mode(mut self, mode: IncrementalBetweenScanMode) -> Changes {
        self.mode = Some(mode);
        self
    }

    /// The range starts after snapshot `id` (0 includes the first snapshot).
    pub fn start_snapshot(mut self, id: i64) -> Changes {
        self.start_snapshot = Some(id);
        self
    }

    /// The range ends at snapshot `id` (included).
    pub fn end_snapshot(mut self, id: i64) -> Changes {
        self.end_snapshot = Some(id);
        self
    }

    /// The range starts after the snapshots committed at or before this epoch-millisecond time.
    pub fn start_timestamp_ms(mut self, ms: i64) -> Changes {
        self.start_timestamp_ms = Some(ms);
        self
    }

    /// The range ends with the newest snapshot committed at or before this epoch-millisecond
    /// time.
    pub fn end_timestamp_ms(mut self, ms: i64) -> Changes {
        self.end_timestamp_ms = Some(ms);
        self
    }

    /// The range starts after the snapshot of tag `name` (with [`Changes::end_tag`]).
    pub fn start_tag(mut self, name: impl Into<String>) -> Changes {
        self.start_tag = Some(name.into());
        self
    }

    /// The range ends at the snapshot of tag `name` (with [`Changes::start_tag`]).
    pub fn end_tag(mut self, name: impl Into<String>) -> Changes {
        self.end_tag = Some(name.into());
        self
    }

    /// The range `(start, end]` of snapshot ids (`end`: the latest when `None`).
    pub fn between_ids(self, start: i64, end: Option<i64>) -> Changes {
        let changes = self.start_snapshot(start);
        match end {
            Some(end) => changes.end_snapshot(end),
            None => changes,
        }
    }

    /// The snapshots committed after `start_ms` and up to `end_ms` (the latest when `None`).
    pub fn between_timestamps(self, start_ms: i64, end_ms: Option<i64>) -> Changes {
        let changes = self.start_timestamp_ms(start_ms);
        match end_ms {
            Some(end) => changes.end_timestamp_ms(end),
            None => changes,
        }
    }

    /// The changes between the snapshots of two tags.
    pub fn between_tags(self, start: impl Into<String>, end: impl Into<String>) -> Changes {
        self.start_tag(start).end_tag(end)
    }

    /// The selected range, checked: tags both or neither and nothing else with them, one start
    /// (snapshot or timestamp, not both) and at most one end, a start id >= 0.
    fn range(&self) -> Result<Range> {
        match (&self.start_tag, &self.end_tag) {
            (Some(start), Some(end)) => {
                let others = [
                    self.start_snapshot,
                    self.end_snapshot,
                    self.start_timestamp_ms,
                    self.end_timestamp_ms,
                ];
                if others.iter().any(Option::is_some) {
                    return Err(Error::invalid(
                        "give tags or snapshots/timestamps, not both",
                    ));
                }
                Ok(Range::Tags(start.clone(), end.clone()))
            }
            (None, None) => {
                let start = match (self.start_snapshot, self.start_timestamp_ms) {
                    (Some(_), Some(_)) => {
                        return Err(Error::invalid(
                            "give start_snapshot or start_timestamp, not both",
                        ))
                    }
                    (Some(id), None) if id < 0 => {
                        return Err(Error::invalid(format!(
                            "start_snapshot must be >= 0, got {id}"
                        )))
                    }
                    (Some(id), None) => Bound::Id(id),
                    (None, Some(ms)) => Bound::TimestampMs(ms),
                    (None, None) => {
                        return Err(Error::invalid(
                            "changes need start_snapshot, start_timestamp or start_tag",
                        ))
                    }
                };
                let end = match (self.end_snapshot, self.end_timestamp_ms) {
                    (Some(_), Some(_)) => {
                        return Err(Error::invalid(
                            "give end_snapshot or end_timestamp, not both",
                        ))
                    }
                    (Some(id), None) => Some(Bound::Id(id)),
                    (None, Some(ms)) => Some(Bound::TimestampMs(ms)),
                    (None, None) => None,
                };
                Ok(Range::Snapshots(start, end))
            }
            _ => Err(Error::invalid("give both start_tag and end_tag")),
        }
    }

    /// The snapshot id of `bound`: a timestamp is the newest snapshot committed at or before it
    /// (0 when none was).
    async fn snapshot_id(&self, bound: Bound) -> Result<i64> {
        match bound {
            Bound::Id(id) => Ok(id),
            Bound::TimestampMs(ms) => Ok(self
                .table
                .snapshot_manager()
                .at_or_before(ms)
                .await?
                .map_or(0, |s| s.id)),
        }
    }

    /// Resolve the range to snapshots, plan the changes as the mode says and set up the read.
    pub async fn plan(self) -> Result<PlannedRead> {
        let table = &self.table;
        let plan = match self.range()? {
            Range::Snapshots(start, end) => {
                let start = self.snapshot_id(start).await?;
                let end = match end {
                    Some(end) => Some(self.snapshot_id(end).await?),
                    None => None,
                };
                plan_changes(table, start, end, self.mode).await?
            }
            Range::Tags(start, end) => {
                let start = resolve_snapshot(table, &SnapshotSelector::Tag(start)).await?;
                let end = resolve_snapshot(table, &SnapshotSelector::Tag(end)).await?;
                let (start, end) = start.zip(end).expect("a tag always has a snapshot");
                if end.id < start.id {
                    return Err(Error::invalid(format!(
                        "the end tag's snapshot {} is older than the start tag's {}",
                        end.id, start.id
                    )));
                }
                let to_snapshot = table
                    .schema()
                    .options()
                    .incremental_between_tag_to_snapshot()
                    .map_err(|e| Error::from_spec("table options", e))?;
                match self.mode {
                    Some(m) if m != IncrementalBetweenScanMode::Diff => {
                        plan_changes(table, start.id, Some(end.id), Some(m)).await?
                    }
                    None if to_snapshot => {
                        plan_changes(table, start.id, Some(end.id), None).await?
                    }
                    _ => plan_diff(table, Some(&start), &end).await?,
                }
            }
        };
        let reader = self
            .projection
            .reader(self.table.clone(), &plan.schema, true)?;
        Ok(PlannedRead { plan, reader })
    }

    /// The reader of change splits planned elsewhere (possibly in another process) in the
    /// schema `schema_id`, without planning again; the range and mode are not used.
    pub async fn split_reader(self, schema_id: i64) -> Result<SplitReader> {
        let schema = self.table.schema_by_id(schema_id).await?;
        self.projection.reader(self.table, &schema, true)
    }
}

/// One end of a change range before it is resolved to a snapshot id.
enum Bound {
    Id(i64),
    TimestampMs(i64),
}

/// A checked change range.
enum Range {
    /// `(start, end]`, up to the latest snapshot without an end.
    Snapshots(Bound, Option<Bound>),
    /// Between the snapshots of two tags.
    Tags(String, String),
}

/// A planned read: the plan (snapshot, schema, splits) and the reader of its splits.
#[derive(Debug)]
pub struct PlannedRead {
    pub plan: ScanPlan,
    pub reader: SplitReader,
}

/// Splits to Arrow batches, as a [`Read`] or [`Changes`] set it up. Cheap to clone and share.
#[derive(Clone, Debug)]
pub struct SplitReader {
    ctx: Arc<ReadContext>,
}

impl SplitReader {
    /// Schema of every batch the reads yield.
    pub fn output_schema(&self) -> SchemaRef {
        self.ctx.output_schema()
    }

    /// The batches of `splits`, streamed one split at a time; `progress` as splits are read.
    pub fn stream(
        &self,
        splits: Vec<Split>,
        progress: Option<Progress>,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        read_splits(self.ctx.clone(), splits, progress)
    }

    /// Write the rows of `splits` into `write` (as inserts) and prepare its commit: the
    /// messages of the files written. When that fails, `write` is aborted (every file it wrote
    /// deleted) and the error returned.
    pub(crate) async fn write_into(
        &self,
        splits: Vec<Split>,
        write: &mut TableWrite,
    ) -> Result<Vec<CommitMessage>> {
        let written = async {
            let mut rows = self.stream(splits, None);
            while let Some(batch) = rows.try_next().await? {
                write.write(&batch, RowKinds::Fixed(0)).await?;
            }
            write.prepare_commit().await
        }
        .await;
        if written.is_err() {
            // Already failing: cleanup errors are secondary to the write's.
            let _ = write.abort().await;
        }
        written
    }

    /// The batches of `splits`, several splits read concurrently; `progress` as for
    /// [`SplitReader::stream`].
    pub async fn collect(
        &self,
        splits: Vec<Split>,
        progress: Option<Progress>,
    ) -> Result<Vec<RecordBatch>> {
        collect_splits(self.ctx.clone(), splits, progress).await
    }

    /// Schema of [`SplitReader::read_positioned`]'s batches.
    pub fn positioned_schema(&self) -> SchemaRef {
        self.ctx.positioned_schema()
    }

    /// The rows of one append split with their file index and position in the file
    /// ([`ReadContext::read_positioned`]).
    pub fn read_positioned(
        &self,
        split: &Split,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        self.ctx.read_positioned(split)
    }
}
