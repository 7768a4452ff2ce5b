//! The `files`, `file_key_ranges`, `manifests`, `partitions`, `buckets` and `table_indexes`
//! system tables, from the latest snapshot's manifests and index manifest (Java `FilesTable`,
//! `FileKeyRangesTable`, `ManifestsTable`, `PartitionsTable`, `BucketsTable`,
//! `TableIndexesTable`), and a table's partitions as a catalog lists them ([`list_partitions`]).
//! Every live file counts, whatever its level or bucket.
//!
//! Strings: partitions of `files`/`buckets` and manifest partition statistics are Java's row
//! cast `{v1, v2}` (SQL `CAST AS STRING` of each value, `null` for nulls); `partitions` uses
//! `k1=v1/k2=v2` with `partition.default-name` for nulls; keys are `Arrays.toString` of the
//! internal values, `[k1, k2]`. Sizes and counts are sums over live files; `last_update_time`
//! is the newest file creation time.
//!
//! Not provided: `files`' `null_value_counts`/`min_value_stats`/`max_value_stats`/`write_cols`
//! and the catalog columns of `partitions` (`created_at`, `created_by`, `updated_by`,
//! `options`, `done`, `deleted_record_count`).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, ListArray, StringArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType as ArrowType, Field, Fields};

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{DeletionVectorMeta, FileSource, ManifestEntry};
use tidelake_spec::partition::PartitionComputer;
use tidelake_spec::types::DataType;

use crate::catalog::{Catalog, Partition};
use crate::error::{Error, Result};
use crate::io::epoch_ms_of_local_wall;
use crate::layout::TableLayout;
use crate::maintenance::refs::MetaCache;
use crate::maintenance::system_tables::{
    ints, longs, strings, table_of, timestamps, Column, SystemTable,
};
use crate::state::{live_index_entries, LiveFiles, Pruning};
use crate::table::Table;

/// Display strings of values of one row type.
struct RowDisplay {
    computer: PartitionComputer,
    types: Vec<DataType>,
}

impl RowDisplay {
    /// `legacy`: Java `toString()` of internal values; otherwise SQL casts.
    fn new(
        names: Vec<String>,
        types: Vec<DataType>,
        null_name: &str,
        legacy: bool,
    ) -> Result<RowDisplay> {
        let computer = PartitionComputer::new(names, types.clone(), null_name, legacy)
            .map_err(|e| Error::from_spec("display", e))?;
        Ok(RowDisplay { computer, types })
    }

    fn values(&self, values: &[Datum]) -> Option<Vec<String>> {
        Some(
            self.computer
                .partition_spec(values)
                .ok()?
                .into_iter()
                .map(|(_, v)| v)
                .collect(),
        )
    }

    fn framed(&self, framed: &[u8]) -> Option<Vec<String>> {
        self.values(&decode_framed(framed, &self.types).ok()?)
    }

    /// Java's row cast: `{v1, v2}`.
    fn row(&self, framed: &[u8]) -> Option<String> {
        Some(format!("{{{}}}", self.framed(framed)?.join(", ")))
    }
}

fn partition_fields(layout: &TableLayout) -> (Vec<String>, Vec<DataType>) {
    (
        layout
            .partition_fields
            .iter()
            .map(|f| f.name.clone())
            .collect(),
        layout.partition_types.clone(),
    )
}

/// How keys of files written with schema `schema_id` print (`None` without primary key).
async fn key_display(table: &Table, schema_id: i64) -> Result<Option<RowDisplay>> {
    let schema = table.schema_by_id(schema_id).await?;
    let fields: Vec<_> = schema
        .trimmed_primary_keys()
        .iter()
        .filter_map(|k| schema.field(k).cloned())
        .collect();
    if fields.is_empty() {
        return Ok(None);
    }
    let names = fields.iter().map(|k| k.name.clone()).collect();
    let types = fields.iter().map(|k| k.data_type.clone()).collect();
    RowDisplay::new(names, types, "null", true).map(Some)
}

/// Live entries of the latest snapshot (the new latest if it expires while read), grouped by
/// (partition, bucket) in key order.
async fn live_files(table: &Table) -> Result<Vec<ManifestEntry>> {
    let Some((_, live)) = LiveFiles::read_latest(table, Pruning::all).await? else {
        return Ok(Vec::new());
    };
    let mut buckets = live.into_buckets();
    buckets.sort_by(|a, b| (&a.partition, a.bucket).cmp(&(&b.partition, b.bucket)));
    Ok(buckets.into_iter().flat_map(|b| b.files).collect())
}

pub(crate) async fn files(table: &Table) -> Result<SystemTable> {
    table_of(file_columns(table).await?)
}

/// Java `FileKeyRangesTable` (Paimon 2.0): the columns of `files` that place a file and its
/// key range, `first_row_id` last.
pub(crate) async fn file_key_ranges(table: &Table) -> Result<SystemTable> {
    const KEPT: [&str; 11] = [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "first_row_id",
    ];
    let columns = file_columns(table).await?;
    table_of(
        columns
            .into_iter()
            .filter(|c| KEPT.contains(&c.name()))
            .collect(),
    )
}

/// The columns of `files`: a row per live file of the latest snapshot.
async fn file_columns(table: &Table) -> Result<Vec<Column>> {
    let layout = TableLayout::new(table.schema())?;
    let (names, types) = partition_fields(&layout);
    let partition = RowDisplay::new(names, types, "null", false)?;
    let entries = live_files(table).await?;
    let mut keys: BTreeMap<i64, Option<RowDisplay>> = BTreeMap::new();
    let (mut min_keys, mut max_keys, mut paths) = (Vec::new(), Vec::new(), Vec::new());
    for e in &entries {
        let f = &e.file;
        if let Entry::Vacant(slot) = keys.entry(f.schema_id) {
            slot.insert(key_display(table, f.schema_id).await?);
        }
        let display = keys.get(&f.schema_id).and_then(Option::as_ref);
        let key = |framed: &[u8]| {
            display
                .and_then(|d| d.framed(framed))
                .map(|v| format!("[{}]", v.join(", ")))
        };
        min_keys.push(key(&f.min_key));
        max_keys.push(key(&f.max_key));
        paths.push(Some(table.io().display(&f.path(&layout.bucket_path(
            &layout.decode_partition(&e.partition)?,
            e.bucket,
        )?))));
    }
    let col = |f: &dyn Fn(&ManifestEntry) -> Option<i64>| entries.iter().map(f).collect();
    Ok(vec![
        strings(
            "partition",
            true,
            entries
                .iter()
                .map(|e| partition.row(&e.partition))
                .collect(),
        ),
        ints(
            "bucket",
            false,
            entries.iter().map(|e| Some(e.bucket)).collect(),
        ),
        strings("file_path", false, paths),
        strings(
            "file_format",
            false,
            entries
                .iter()
                .map(|e| e.file.file_name.rsplit('.').next().map(str::to_string))
                .collect(),
        ),
        longs("schema_id", false, col(&|e| Some(e.file.schema_id))),
        ints(
            "level",
            false,
            entries.iter().map(|e| Some(e.file.level)).collect(),
        ),
        longs("record_count", false, col(&|e| Some(e.file.row_count))),
        longs(
            "file_size_in_bytes",
            false,
            col(&|e| Some(e.file.file_size)),
        ),
        strings("min_key", true, min_keys),
        strings("max_key", true, max_keys),
        longs(
            "min_sequence_number",
            true,
            col(&|e| Some(e.file.min_sequence_number)),
        ),
        longs(
            "max_sequence_number",
            true,
            col(&|e| Some(e.file.max_sequence_number)),
        ),
        timestamps("creation_time", true, col(&|e| e.file.creation_time)),
        longs("deleteRowCount", true, col(&|e| e.file.delete_row_count)),
        strings(
            "file_source",
            true,
            entries
                .iter()
                .map(|e| {
                    e.file.file_source.map(|s| {
                        match s {
                            FileSource::Append => "APPEND",
                            FileSource::Compact => "COMPACT",
                        }
                        .to_string()
                    })
                })
                .collect(),
        ),
        longs("first_row_id", true, col(&|e| e.file.first_row_id)),
    ])
}

pub(crate) async fn manifests(table: &Table) -> Result<SystemTable> {
    let layout = TableLayout::new(table.schema())?;
    let (names, types) = partition_fields(&layout);
    let partition = RowDisplay::new(names, types, "null", false)?;
    let mut metas = Vec::new();
    if let Some(snap) = table.snapshot_manager().latest().await? {
        let mut cache = MetaCache::new(table);
        metas.extend(cache.list(&snap.base_manifest_list).await?.iter().cloned());
        metas.extend(cache.list(&snap.delta_manifest_list).await?.iter().cloned());
    }
    table_of(vec![
        strings(
            "file_name",
            false,
            metas.iter().map(|m| Some(m.file_name.clone())).collect(),
        ),
        longs(
            "file_size",
            false,
            metas.iter().map(|m| Some(m.file_size)).collect(),
        ),
        longs(
            "num_added_files",
            false,
            metas.iter().map(|m| Some(m.num_added_files)).collect(),
        ),
        longs(
            "num_deleted_files",
            false,
            metas.iter().map(|m| Some(m.num_deleted_files)).collect(),
        ),
        longs(
            "schema_id",
            false,
            metas.iter().map(|m| Some(m.schema_id)).collect(),
        ),
        strings(
            "min_partition_stats",
            true,
            metas
                .iter()
                .map(|m| partition.row(&m.partition_stats.min_values))
                .collect(),
        ),
        strings(
            "max_partition_stats",
            true,
            metas
                .iter()
                .map(|m| partition.row(&m.partition_stats.max_values))
                .collect(),
        ),
        longs(
            "min_row_id",
            true,
            metas.iter().map(|m| m.min_row_id).collect(),
        ),
        longs(
            "max_row_id",
            true,
            metas.iter().map(|m| m.max_row_id).collect(),
        ),
    ])
}

/// Sums over a group of live files.
#[derive(Default)]
struct Totals {
    records: i64,
    bytes: i64,
    files: i64,
    last_update: Option<i64>,
    total_buckets: i32,
}

impl Totals {
    fn add(&mut self, e: &ManifestEntry) {
        self.records += e.file.row_count;
        self.bytes += e.file.file_size;
        self.files += 1;
        self.last_update = self.last_update.max(e.file.creation_time);
        self.total_buckets = e.total_buckets;
    }

    /// The record count, size, file count and last-update columns of `groups`, in that order
    /// (shared by the `partitions` and `buckets` tables).
    fn columns<'a>(groups: impl Iterator<Item = &'a Totals> + Clone) -> Vec<Column> {
        vec![
            longs(
                "record_count",
                false,
                groups.clone().map(|t| Some(t.records)).collect(),
            ),
            longs(
                "file_size_in_bytes",
                false,
                groups.clone().map(|t| Some(t.bytes)).collect(),
            ),
            longs(
                "file_count",
                false,
                groups.clone().map(|t| Some(t.files)).collect(),
            ),
            timestamps(
                "last_update_time",
                true,
                groups.map(|t| t.last_update).collect(),
            ),
        ]
    }
}

/// The live files of `table`'s latest snapshot by partition name (`k1=v1/k2=v2`): each
/// partition's spec (`partition.default-name` for nulls) and totals.
async fn partition_groups(
    table: &Table,
) -> Result<BTreeMap<String, (Vec<(String, String)>, Totals)>> {
    let layout = TableLayout::new(table.schema())?;
    let (names, types) = partition_fields(&layout);
    let display = RowDisplay::new(
        names,
        types,
        table.schema().options().partition_default_name(),
        false,
    )?;
    let mut groups: BTreeMap<String, (Vec<(String, String)>, Totals)> = BTreeMap::new();
    for e in live_files(table).await? {
        let spec = display
            .computer
            .partition_spec(&layout.decode_partition(&e.partition)?)
            .map_err(|err| Error::from_spec("partition", err))?;
        let name = spec
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("/");
        groups
            .entry(name)
            .or_insert_with(|| (spec, Totals::default()))
            .1
            .add(&e);
    }
    Ok(groups)
}

pub(crate) async fn partitions(table: &Table) -> Result<SystemTable> {
    let groups = partition_groups(table).await?;
    let totals = groups.values().map(|(_, t)| t);
    let mut columns = vec![strings(
        "partition",
        true,
        groups.keys().map(|k| Some(k.clone())).collect(),
    )];
    columns.extend(Totals::columns(totals.clone()));
    columns.push(ints(
        "total_buckets",
        false,
        totals.map(|t| Some(t.total_buckets)).collect(),
    ));
    table_of(columns)
}

/// The partitions of table `identifier`: those its catalog keeps, or else its own, from the
/// live files of its latest snapshot (Java `Catalog.listPartitions`).
pub async fn list_partitions(catalog: &Catalog, identifier: &str) -> Result<Vec<Partition>> {
    if let Some(kept) = catalog.kept_partitions(identifier).await? {
        return Ok(kept);
    }
    let table = catalog.get_table(identifier).await?;
    Ok(partition_groups(&table)
        .await?
        .into_values()
        .map(|(spec, t)| Partition {
            spec: spec.into_iter().collect(),
            record_count: t.records,
            file_size_in_bytes: t.bytes,
            file_count: t.files,
            last_file_creation_time: t.last_update.map_or(0, epoch_ms_of_local_wall),
            done: false,
        })
        .collect())
}

pub(crate) async fn buckets(table: &Table) -> Result<SystemTable> {
    let layout = TableLayout::new(table.schema())?;
    let (names, types) = partition_fields(&layout);
    let display = RowDisplay::new(names, types, "null", false)?;
    let mut groups: BTreeMap<(Option<String>, i32), Totals> = BTreeMap::new();
    for e in live_files(table).await? {
        groups
            .entry((display.row(&e.partition), e.bucket))
            .or_default()
            .add(&e);
    }
    table_of(
        vec![
            strings(
                "partition",
                true,
                groups.keys().map(|(p, _)| p.clone()).collect(),
            ),
            ints(
                "bucket",
                false,
                groups.keys().map(|(_, b)| Some(*b)).collect(),
            ),
        ]
        .into_iter()
        .chain(Totals::columns(groups.values()))
        .collect(),
    )
}

/// Java `TableIndexesTable`: the live index files (deletion vectors, hash indexes) of the
/// latest snapshot, with each deletion-vector file's ranges (`ARRAY<ROW<f0 data file, f1
/// offset, f2 length, _CARDINALITY>>`, null for other index types).
pub(crate) async fn table_indexes(table: &Table) -> Result<SystemTable> {
    let layout = TableLayout::new(table.schema())?;
    let (names, types) = partition_fields(&layout);
    let display = RowDisplay::new(names, types, "null", false)?;
    let entries = match table.snapshot_manager().latest().await? {
        Some(snap) => live_index_entries(table, &snap).await?,
        None => Vec::new(),
    };
    let files: Vec<_> = entries.iter().map(|e| &e.index_file).collect();
    let mut columns = vec![
        strings(
            "partition",
            true,
            entries.iter().map(|e| display.row(&e.partition)).collect(),
        ),
        ints(
            "bucket",
            false,
            entries.iter().map(|e| Some(e.bucket)).collect(),
        ),
        strings(
            "index_type",
            false,
            files.iter().map(|f| Some(f.index_type.clone())).collect(),
        ),
        strings(
            "file_name",
            false,
            files.iter().map(|f| Some(f.file_name.clone())).collect(),
        ),
        longs(
            "file_size",
            false,
            files.iter().map(|f| Some(f.file_size)).collect(),
        ),
        longs(
            "row_count",
            false,
            files.iter().map(|f| Some(f.row_count)).collect(),
        ),
    ];
    columns.push(dv_ranges(files.iter().map(|f| f.dv_ranges.as_deref()))?);
    table_of(columns)
}

/// The `dv_ranges` column: one list of (file, offset, length, cardinality) rows per index file.
fn dv_ranges<'a>(
    per_file: impl Iterator<Item = Option<&'a [DeletionVectorMeta]>>,
) -> Result<Column> {
    let item_fields = Fields::from(vec![
        Field::new("f0", ArrowType::Utf8, false),
        Field::new("f1", ArrowType::Int32, false),
        Field::new("f2", ArrowType::Int32, false),
        Field::new("_CARDINALITY", ArrowType::Int64, true),
    ]);
    let (mut lengths, mut valid, mut metas) = (Vec::new(), Vec::new(), Vec::new());
    for ranges in per_file {
        lengths.push(ranges.map_or(0, <[_]>::len));
        valid.push(ranges.is_some());
        metas.extend(ranges.unwrap_or_default());
    }
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            metas.iter().map(|m| m.data_file_name.as_str()),
        )),
        Arc::new(Int32Array::from_iter_values(metas.iter().map(|m| m.offset))),
        Arc::new(Int32Array::from_iter_values(metas.iter().map(|m| m.length))),
        Arc::new(Int64Array::from_iter(metas.iter().map(|m| m.cardinality))),
    ];
    let items = StructArray::try_new(item_fields.clone(), arrays, None)
        .map_err(|e| Error::arrow("dv_ranges", e))?;
    let item = Arc::new(Field::new("item", ArrowType::Struct(item_fields), true));
    let list = ListArray::try_new(
        item,
        OffsetBuffer::from_lengths(lengths),
        Arc::new(items),
        Some(NullBuffer::from(valid)),
    )
    .map_err(|e| Error::arrow("dv_ranges", e))?;
    Ok(Column::new(
        Field::new("dv_ranges", list.data_type().clone(), true),
        Arc::new(list),
    ))
}
