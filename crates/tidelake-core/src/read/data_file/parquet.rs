//! Parquet data files, streamed with ranged reads through the object store
//! (`ParquetRecordBatchStreamBuilder` over [`RangeReader`], the replacement arrow-rs
//! recommends for the deprecated `ParquetObjectReader`).
//!
//! Only the leaf columns of the requested root fields are fetched (`ProjectionMask::roots`);
//! the footer, the offset index and the needed pages are read, never the whole file. The
//! embedded `ARROW:schema` (pyarrow writers) is ignored so decoded types depend only on the
//! Parquet schema; the caller normalises types afterwards.
//!
//! **Row windows.** The async reader fetches everything a row group's selection needs before
//! decoding it, and writers (ours, Java's with `parquet.block.size` 128 MB) put a whole file in
//! one row group, so a merge holding many files open would hold their compressed columns. A row
//! group whose projected columns exceed [`WINDOW_BYTES`] ([`LOCAL_WINDOW_BYTES`] for local
//! files) is read as consecutive row windows of about that size, each a `RowSelection` of its
//! own stream: with the offset index loaded, parquet fetches only the pages a window's rows
//! fall in (without an offset index it would fetch whole chunks, so such files are read in one
//! window). Windows cover the row group in order, so row positions (deletion vectors) are
//! unchanged.
//!
//! A [`crate::io::FileIO`] with a read cache keeps each file's footer and page index there,
//! so long-lived readers parse them once.
//!
//! **Key rows.** A prune carrying a lookup's key set ([`PagePrune::key_rows`]) becomes a
//! `RowFilter` on the key columns: parquet decodes the key columns of the selected pages, keeps
//! the rows whose key is in the set and decodes the other columns at those rows only, fetching
//! only their pages. Used when every key column is stored under its read name with its read
//! type (else the caller's own key filter does the same work after decoding). With a read
//! cache and one integer key column, the file's key column is decoded whole once and kept there
//! ([`kept_keys`]): later reads of key sets find their rows in it (a gallop per key), take the
//! key's values at those rows from it and decode only the other columns' pages there, each row
//! group in one read.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType as ArrowType, FieldRef};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{stream, FutureExt, Stream, StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, RowFilter, RowSelection, RowSelector,
};
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::arrow::ProjectionMask;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};

use tidelake_spec::types::DataField;

use super::page_prune::PagePrune;
use super::{select_roots, RangeReader, RawStream};
use crate::error::{Error, Result};
use crate::io::{FileIO, ReadCache};
use crate::read::key_set::KeySet;

impl AsyncFileReader for RangeReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.get_range(range)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.get_ranges(&ranges)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let mut reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()))
                .with_prefetch_hint(Some(FOOTER_PREFETCH));
            if let Some(o) = options {
                reader = reader
                    .with_column_index_policy(o.column_index_policy())
                    .with_offset_index_policy(o.offset_index_policy());
            }
            Ok(Arc::new(reader.load_and_finish(self, size).await?))
        }
        .boxed()
    }
}

/// Compressed bytes of projected column data fetched at a time per open file (see the module
/// doc): bounds a merge's memory at about (runs x this) while keeping object-store requests
/// large.
const WINDOW_BYTES: u64 = 4 << 20;
/// The same for local files, read in place: requests cost nothing, so windows are smaller
/// (each window still rebuilds the column readers, so not much smaller: at 512 KiB the
/// benchmark's streamed read took 10-15% more CPU than at 1 MiB).
const LOCAL_WINDOW_BYTES: u64 = 1 << 20;
/// Bytes read from the end of a file for its footer, so that footer and offset index (written
/// just before it) usually come in one request.
const FOOTER_PREFETCH: usize = 64 << 10;

/// Pages to skip: a [`PagePrune`] with the file's fields and the read fields it names.
pub(super) type Prune<'a> = (&'a PagePrune, &'a [DataField], &'a [DataField]);

/// Stream the root columns named in `columns` (those present in the file) of a Parquet file,
/// without the pages `prune` rules out.
pub(super) async fn open(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
    prune: Option<Prune<'_>>,
) -> Result<RawStream> {
    open_windowed(io, rel_path, columns, batch_size, None, prune).await
}

fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new()
        .with_skip_arrow_metadata(true)
        .with_offset_index_policy(PageIndexPolicy::Optional)
}

/// [`open`], reading row groups in windows of about `window_bytes` (see the module doc;
/// default [`LOCAL_WINDOW_BYTES`] or [`WINDOW_BYTES`]).
async fn open_windowed(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
    window_bytes: Option<u64>,
    prune: Option<Prune<'_>>,
) -> Result<RawStream> {
    let display = io.display(rel_path);
    let mut reader = RangeReader::new(io, rel_path).await?;
    let window_bytes = window_bytes.unwrap_or(if reader.is_local() {
        LOCAL_WINDOW_BYTES
    } else {
        WINDOW_BYTES
    });
    let cache = io.read_cache();
    let cached = cache.and_then(|c| c.get::<ArrowReaderMetadata>(rel_path));
    let metadata = match cached {
        Some(metadata) => (*metadata).clone(),
        None => {
            // a cached footer serves later reads with and without pruning
            let options = match (prune, cache) {
                (None, None) => reader_options(),
                _ => reader_options().with_column_index_policy(PageIndexPolicy::Optional),
            };
            let metadata = ArrowReaderMetadata::load_async(&mut reader, options)
                .await
                .map_err(|e| Error::parquet(format!("opening {display}"), e))?;
            if let Some(c) = cache {
                let weight = metadata.metadata().memory_size();
                c.insert(rel_path, Arc::new(metadata.clone()), weight);
            }
            metadata
        }
    };
    let roots = {
        let schema = metadata.parquet_schema();
        let names = schema.root_schema().get_fields().iter().map(|f| f.name());
        select_roots(names, columns)
    };
    let mut mask = ProjectionMask::roots(metadata.parquet_schema(), roots.clone());
    let mut windows = row_windows(metadata.metadata(), &mask, batch_size, window_bytes);
    let mut key_rows = prune.and_then(|(p, file_fields, read_fields)| {
        let keys = p.key_rows()?;
        let mask = key_mask(&metadata, keys, file_fields, read_fields)?;
        Some((keys.clone(), mask))
    });
    let mut key_values: Option<KeyValues> = None;
    if let Some((prune, file_fields, read_fields)) = prune {
        let kept = prune.selections(
            metadata.metadata(),
            metadata.schema(),
            file_fields,
            read_fields,
        );
        let known = match (&key_rows, cache) {
            (Some((keys, key_columns)), Some(cache)) => {
                kept_keys(&reader, &metadata, rel_path, cache, keys, key_columns)
                    .await
                    .map_err(|e| Error::parquet(format!("reading the keys of {display}"), e))?
            }
            _ => None,
        };
        let found = known
            .as_ref()
            .zip(key_rows.as_ref())
            .and_then(|(known, (keys, _))| {
                Some((known, keys.rows_in_ascending(&known.ascending)?))
            });
        match found {
            Some((known, rows)) => {
                // exactly the keys' rows (their pages fetched, one read per row group)
                let groups = metadata.metadata().num_row_groups();
                windows = restrict(
                    (0..groups).map(|g| (g, None)).collect(),
                    &known.selections(&rows),
                );
                key_rows = None;
                if let Some((values, rest)) = known
                    .values_at(&metadata, &roots, &rows)
                    .map_err(|e| Error::arrow(format!("keys of {display}"), e))?
                {
                    mask = ProjectionMask::roots(metadata.parquet_schema(), rest);
                    key_values = Some(values);
                }
            }
            None => windows = restrict(windows, &kept),
        }
    }
    let stream = stream::iter(windows)
        .map(move |(row_group, selection)| {
            let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(
                reader.clone(),
                metadata.clone(),
            )
            .with_projection(mask.clone())
            .with_batch_size(batch_size)
            .with_row_groups(vec![row_group]);
            if let Some(selection) = selection {
                builder = builder.with_row_selection(selection);
            }
            if let Some((keys, mask)) = &key_rows {
                let keys = keys.clone();
                let wanted = ArrowPredicateFn::new(mask.clone(), move |batch| {
                    keys.matches(&batch)
                        .map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e)))
                });
                builder = builder.with_row_filter(RowFilter::new(vec![Box::new(wanted)]));
            }
            builder.build()
        })
        .try_flatten()
        .map_err(move |e| Error::parquet(format!("reading {display}"), e));
    Ok(match key_values {
        Some(values) => with_key_values(stream, values),
        None => stream.boxed(),
    })
}

/// A key column's values at the rows read, taken from its kept column instead of its pages:
/// its place among the columns read, its field, the values.
type KeyValues = (usize, FieldRef, ArrayRef);

/// `stream` (the selected rows, in order, without the key column) with the key column of
/// `values` put back at its place: each batch takes the next of the values.
fn with_key_values(
    stream: impl Stream<Item = Result<RecordBatch>> + Send + 'static,
    values: KeyValues,
) -> RawStream {
    let (at, field, values) = values;
    let mut next = 0;
    stream
        .map(move |batch| {
            let batch = batch?;
            let rows = batch.num_rows();
            let mut fields: Vec<FieldRef> = batch.schema().fields().iter().cloned().collect();
            let mut columns = batch.columns().to_vec();
            fields.insert(at, field.clone());
            columns.insert(at, values.slice(next, rows));
            next += rows;
            let schema = Arc::new(arrow_schema::Schema::new(fields));
            RecordBatch::try_new(schema, columns).map_err(|e| Error::arrow("adding key values", e))
        })
        .boxed()
}

/// A file's one integer key column decoded whole, kept in a read cache so that lookups find
/// their keys' rows without decoding key pages again (only the other columns' pages at those
/// rows).
struct FileKeys {
    /// The key column's name.
    column: String,
    /// Its values, ascending (a data file is sorted by key), as `i64`.
    ascending: Int64Array,
    /// Rows per row group.
    group_rows: Vec<usize>,
}

impl FileKeys {
    /// When the key column is one of the columns `roots` read, and not the only one: its values
    /// at `rows` (ascending positions in the file) and the other roots, whose pages are read.
    fn values_at(
        &self,
        metadata: &ArrowReaderMetadata,
        roots: &[usize],
        rows: &[usize],
    ) -> std::result::Result<Option<(KeyValues, Vec<usize>)>, arrow_schema::ArrowError> {
        let names = metadata.parquet_schema().root_schema().get_fields();
        let root = names.iter().position(|f| f.name() == self.column);
        let Some(at) = root.and_then(|r| roots.iter().position(|&x| x == r)) else {
            return Ok(None);
        };
        if roots.len() < 2 {
            return Ok(None);
        }
        let field = metadata.schema().fields()[roots[at]].clone();
        let positions = UInt64Array::from_iter_values(rows.iter().map(|&r| r as u64));
        let taken = arrow_select::take::take(&self.ascending, &positions, None)?;
        let values = arrow_cast::cast(&taken, field.data_type())?;
        let rest = roots.iter().copied().filter(|&r| r != roots[at]).collect();
        Ok(Some(((at, field, values), rest)))
    }

    /// Per row group: a selection of exactly `rows` (ascending positions in the file).
    fn selections(&self, rows: &[usize]) -> Vec<Option<RowSelection>> {
        let mut found = rows.iter().copied().peekable();
        let mut start = 0;
        self.group_rows
            .iter()
            .map(|&n| {
                let base = start;
                start += n;
                let ranges = std::iter::from_fn(|| found.next_if(|&r| r < base + n))
                    .map(|r| r - base..r - base + 1);
                Some(RowSelection::from_consecutive_ranges(ranges, n))
            })
            .collect()
    }
}

/// The one integer key column `column` of data file `rel_path`, ascending, when a read has kept
/// it in `io`'s read cache (see [`kept_keys`]).
pub fn kept_key_column(io: &FileIO, rel_path: &str, column: &str) -> Option<Int64Array> {
    let known = io.read_cache()?.get::<FileKeys>(rel_path)?;
    (known.column == column).then(|| known.ascending.clone())
}

/// The file's key column from `cache` when `keys` is a set over one integer column
/// (`key_column`), decoded whole and cached first if it weighs at most an eighth of the cache's
/// budget; `None` otherwise (the caller tests the rows of the pages it keeps itself). A reader
/// with a cache reads the same files again (lookups, point scans), so the whole column is
/// decoded once instead of the pages of each read's keys on every read.
async fn kept_keys(
    reader: &RangeReader,
    metadata: &ArrowReaderMetadata,
    rel_path: &str,
    cache: &ReadCache,
    keys: &KeySet,
    key_column: &ProjectionMask,
) -> parquet::errors::Result<Option<Arc<FileKeys>>> {
    let Some(column) = keys.integer_column() else {
        return Ok(None);
    };
    if let Some(known) = cache.get::<FileKeys>(rel_path) {
        if known.column == column {
            return Ok(Some(known));
        }
    }
    let groups = metadata.metadata().row_groups();
    let group_rows: Vec<usize> = groups
        .iter()
        .map(|g| usize::try_from(g.num_rows()).unwrap_or(0))
        .collect();
    let total: usize = group_rows.iter().sum();
    let decoded: u64 = groups
        .iter()
        .flat_map(|g| g.columns().iter().enumerate())
        .filter(|(leaf, _)| key_column.leaf_included(*leaf))
        .map(|(_, c)| u64::try_from(c.uncompressed_size()).unwrap_or(u64::MAX))
        .sum();
    if total == 0 || decoded > (cache.budget() / 8) as u64 {
        return Ok(None);
    }
    let batches: Vec<RecordBatch> =
        ParquetRecordBatchStreamBuilder::new_with_metadata(reader.clone(), metadata.clone())
            .with_projection(key_column.clone())
            .with_batch_size(total)
            .build()?
            .try_collect()
            .await?;
    let parts = batches
        .iter()
        .map(|b| arrow_cast::cast(b.column(0), &ArrowType::Int64))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    let ascending = arrow_select::concat::concat(&parts)?
        .as_primitive::<Int64Type>()
        .clone();
    if ascending.null_count() > 0 || !ascending.values().is_sorted() {
        return Ok(None);
    }
    let weight = ascending.get_array_memory_size();
    let known = Arc::new(FileKeys {
        column: column.to_string(),
        ascending,
        group_rows,
    });
    cache.insert(rel_path, known.clone(), weight);
    Ok(Some(known))
}

/// The root columns of `keys` in the file, when each is stored under its read name with its
/// read type (matched by field id); `None` otherwise.
fn key_mask(
    metadata: &ArrowReaderMetadata,
    keys: &KeySet,
    file_fields: &[DataField],
    read_fields: &[DataField],
) -> Option<ProjectionMask> {
    let stored = keys.columns().iter().all(|name| {
        let read = read_fields.iter().find(|f| &f.name == name);
        let file = read.and_then(|r| file_fields.iter().find(|f| f.id == r.id));
        matches!((read, file), (Some(r), Some(f)) if f.name == r.name && f.data_type.kind == r.data_type.kind)
    });
    let schema = metadata.parquet_schema();
    let names: Vec<&str> = schema
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.name())
        .collect();
    let roots: Vec<usize> = keys
        .columns()
        .iter()
        .filter_map(|k| names.iter().position(|n| n == k))
        .collect();
    (stored && !roots.is_empty() && roots.len() == keys.columns().len())
        .then(|| ProjectionMask::roots(schema, roots))
}

/// The reads that cover every row group in order: `(row group, None)` for a whole row group,
/// `(row group, Some(rows))` for one window of a row group whose projected columns exceed
/// `window_bytes` and that has an offset index. Windows hold a multiple of `batch_size` rows.
fn row_windows(
    metadata: &ParquetMetaData,
    mask: &ProjectionMask,
    batch_size: usize,
    window_bytes: u64,
) -> Vec<(usize, Option<RowSelection>)> {
    let mut out = Vec::new();
    for (index, group) in metadata.row_groups().iter().enumerate() {
        let rows = usize::try_from(group.num_rows()).unwrap_or(0);
        let bytes: u64 = (0..group.num_columns())
            .filter(|&leaf| mask.leaf_included(leaf))
            .map(|leaf| u64::try_from(group.column(leaf).compressed_size()).unwrap_or(0))
            .sum();
        let indexed = metadata
            .offset_index()
            .and_then(|groups| groups.get(index))
            .is_some_and(|columns| !columns.is_empty());
        let count = bytes.div_ceil(window_bytes.max(1));
        if !indexed || count <= 1 || rows == 0 {
            out.push((index, None));
            continue;
        }
        let per_window = usize::try_from(count).map_or(rows, |n| rows.div_ceil(n));
        let per_window = per_window.div_ceil(batch_size).max(1) * batch_size;
        let mut start = 0;
        while start < rows {
            let len = per_window.min(rows - start);
            let selectors = [
                RowSelector::skip(start),
                RowSelector::select(len),
                RowSelector::skip(rows - start - len),
            ];
            let selection: Vec<RowSelector> =
                selectors.into_iter().filter(|s| s.row_count > 0).collect();
            out.push((index, Some(RowSelection::from(selection))));
            start += len;
        }
    }
    out
}

/// `windows` cut to the rows `kept` selects per row group (`None`: all); windows left with no
/// row are dropped.
fn restrict(
    windows: Vec<(usize, Option<RowSelection>)>,
    kept: &[Option<RowSelection>],
) -> Vec<(usize, Option<RowSelection>)> {
    windows
        .into_iter()
        .filter_map(|(group, window)| {
            let Some(Some(rows)) = kept.get(group) else {
                return Some((group, window));
            };
            let selection = match window {
                Some(w) => w.intersection(rows),
                None => rows.clone(),
            };
            selection.selects_any().then_some((group, Some(selection)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::ObjectStoreExt;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use super::*;

    const ROWS: i64 = 50_000;

    /// One row group of `ROWS` rows in pages of 1,000 rows.
    async fn table_io() -> FileIO {
        let ids = Int64Array::from_iter_values(0..ROWS);
        let notes = StringArray::from_iter_values((0..ROWS).map(|i| format!("note-{i:08}")));
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as ArrayRef),
            ("note", Arc::new(notes) as ArrayRef),
        ])
        .unwrap();
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(1000)
            .set_write_batch_size(1000)
            .set_dictionary_enabled(false)
            .build();
        let mut buf = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let store = Arc::new(InMemory::new());
        store
            .put(&Path::from("t/f.parquet"), buf.into())
            .await
            .unwrap();
        FileIO::from_store(store, Path::from("t"), "memory")
    }

    #[tokio::test]
    async fn windows_split_a_row_group_and_keep_row_order() {
        let io = table_io().await;
        let mut reader = RangeReader::new(&io, "f.parquet").await.unwrap();
        let metadata = ArrowReaderMetadata::load_async(&mut reader, reader_options())
            .await
            .unwrap();
        let all = ProjectionMask::all();
        let windows = row_windows(metadata.metadata(), &all, 4096, 64 << 10);
        assert!(windows.len() > 3, "{windows:?}");
        let selected: Vec<usize> = windows
            .iter()
            .map(|(group, sel)| {
                assert_eq!(*group, 0);
                sel.as_ref().unwrap().row_count()
            })
            .collect();
        assert_eq!(selected.iter().sum::<usize>(), ROWS as usize);
        assert!(
            selected[..selected.len() - 1].iter().all(|n| n % 4096 == 0),
            "{selected:?}"
        );
        // Small row groups, and files without an offset index, are read whole.
        assert_eq!(
            row_windows(metadata.metadata(), &all, 4096, u64::MAX).len(),
            1
        );
        let no_index = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
        let plain = ArrowReaderMetadata::load_async(&mut reader, no_index)
            .await
            .unwrap();
        assert_eq!(row_windows(plain.metadata(), &all, 4096, 64 << 10).len(), 1);

        let columns = vec!["id".to_string(), "note".to_string()];
        for window in [u64::MAX, 64 << 10, 1] {
            let stream = open_windowed(&io, "f.parquet", &columns, 4096, Some(window), None)
                .await
                .unwrap();
            let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
            let ids: Vec<i64> = batches
                .iter()
                .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
                .collect();
            assert_eq!(ids, (0..ROWS).collect::<Vec<_>>(), "window {window}");
            let last = batches.last().unwrap().column(1).as_string::<i32>();
            assert_eq!(last.value(last.len() - 1), format!("note-{:08}", ROWS - 1));
        }
    }

    /// The pages a filter rules out are not read (every window of them), the rows left hold
    /// every match; columns the caller does not allow, and mixed or/and filters, prune soundly.
    #[tokio::test]
    async fn pruned_reads_skip_pages_and_keep_every_match() {
        use tidelake_spec::datum::Datum;
        use tidelake_spec::types::{DataType, TypeKind, MAX_LENGTH};

        use crate::scan::predicate::{BoundColumn, BoundLeaf, BoundPredicate, CompareOp, LeafTest};

        let io = table_io().await;
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(1, "note", DataType::new(TypeKind::VarChar(MAX_LENGTH))),
        ];
        let leaf = |f: &DataField, op: CompareOp, value: Datum| {
            let column = BoundColumn {
                name: f.name.clone(),
                id: f.id,
                data_type: f.data_type.clone(),
            };
            BoundPredicate::Leaf(BoundLeaf {
                column,
                test: LeafTest::Compare { op, value },
            })
        };
        let id_eq = |v: i64| leaf(&fields[0], CompareOp::Eq, Datum::BigInt(v));
        let note_eq = |v: i64| {
            leaf(
                &fields[1],
                CompareOp::Eq,
                Datum::String(format!("note-{v:08}")),
            )
        };
        let columns = vec!["id".to_string(), "note".to_string()];
        let read = |filter: BoundPredicate, allowed: Vec<i32>, window: u64| {
            let (io, columns, fields) = (io.clone(), columns.clone(), fields.clone());
            async move {
                let prune = filter
                    .restricted(&|id| allowed.contains(&id))
                    .and_then(|f| PagePrune::new(&f));
                let prune = prune
                    .as_ref()
                    .map(|p| (p, fields.as_slice(), fields.as_slice()));
                let stream = open_windowed(&io, "f.parquet", &columns, 4096, Some(window), prune)
                    .await
                    .unwrap();
                let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
                batches
                    .iter()
                    .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
                    .collect::<Vec<i64>>()
            }
        };
        for window in [u64::MAX, 64 << 10] {
            let ids = read(id_eq(43_210), vec![0, 1], window).await;
            assert_eq!(
                ids,
                (43_000..44_000).collect::<Vec<_>>(),
                "the page of 43210 only"
            );
            let ids = read(note_eq(7), vec![0, 1], window).await;
            assert_eq!(
                ids,
                (0..1000).collect::<Vec<_>>(),
                "pruned by a string column"
            );
            let either = BoundPredicate::Or(vec![id_eq(5), id_eq(49_999)]);
            let ids = read(either, vec![0], window).await;
            assert_eq!(ids, (0..1000).chain(49_000..50_000).collect::<Vec<_>>());
            let both = BoundPredicate::And(vec![id_eq(5), note_eq(2_500)]);
            assert!(
                read(both, vec![0, 1], window).await.is_empty(),
                "no page holds both"
            );
            let absent = leaf(&fields[0], CompareOp::Gt, Datum::BigInt(ROWS));
            assert!(read(absent, vec![0], window).await.is_empty());
            // a column the caller does not allow, or a filter on it, reads everything
            assert_eq!(read(note_eq(7), vec![0], window).await.len(), ROWS as usize);
            let unpinned = BoundPredicate::Or(vec![id_eq(5), note_eq(2_500)]);
            let ids = read(unpinned, vec![0], window).await;
            assert_eq!(ids.len(), ROWS as usize);
        }
    }

    /// A prune carrying a key set reads exactly the rows of those keys (the key column is
    /// decoded first, the other columns at the matching rows only), with every column right;
    /// a key column stored under another name falls back to whole pages.
    /// Kept keys' rows become per-row-group selections of exactly those rows.
    #[test]
    fn kept_key_rows_select_exactly_their_rows_per_row_group() {
        let keys = FileKeys {
            column: "k".into(),
            ascending: Int64Array::from(vec![0i64; 9]),
            group_rows: vec![3, 4, 2],
        };
        let selected: Vec<Vec<bool>> = keys
            .selections(&[0, 2, 3, 6, 8])
            .into_iter()
            .map(|s| {
                s.unwrap()
                    .iter()
                    .flat_map(|r| std::iter::repeat_n(!r.skip, r.row_count))
                    .collect()
            })
            .collect();
        assert_eq!(
            selected,
            vec![
                vec![true, false, true],
                vec![true, false, false, true],
                vec![false, true]
            ]
        );
    }

    #[tokio::test]
    async fn key_rows_read_only_the_rows_of_the_keys() {
        use tidelake_spec::datum::Datum;
        use tidelake_spec::types::{DataType, TypeKind, MAX_LENGTH};

        use crate::scan::predicate::{BoundColumn, BoundLeaf, BoundPredicate, LeafTest};

        let io = table_io().await;
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(1, "note", DataType::new(TypeKind::VarChar(MAX_LENGTH))),
        ];
        let keys: Vec<i64> = vec![3, 999, 1000, 43_210, 43_211, 60_000, 3];
        let filter = BoundPredicate::Leaf(BoundLeaf {
            column: BoundColumn {
                name: "id".into(),
                id: 0,
                data_type: fields[0].data_type.clone(),
            },
            test: LeafTest::In {
                values: keys.iter().map(|&k| Datum::BigInt(k)).collect(),
                negated: false,
            },
        });
        let set = KeySet::new(
            vec!["id".into()],
            &[Arc::new(Int64Array::from(keys.clone())) as ArrayRef],
        )
        .unwrap();
        let prune = PagePrune::new(&filter)
            .unwrap()
            .with_key_rows(Arc::new(set));
        let columns = vec!["id".to_string(), "note".to_string()];
        let read = |file_fields: Vec<DataField>, window: u64| {
            let (io, columns, prune, fields) =
                (io.clone(), columns.clone(), prune.clone(), fields.clone());
            async move {
                let stream = open_windowed(
                    &io,
                    "f.parquet",
                    &columns,
                    4096,
                    Some(window),
                    Some((&prune, &file_fields, &fields)),
                )
                .await
                .unwrap();
                let batches: Vec<RecordBatch> = stream.try_collect().await.unwrap();
                let mut rows = Vec::new();
                for b in &batches {
                    let ids = b.column(0).as_primitive::<Int64Type>();
                    let notes = b.column(1).as_string::<i32>();
                    for i in 0..b.num_rows() {
                        assert_eq!(notes.value(i), format!("note-{:08}", ids.value(i)));
                        rows.push(ids.value(i));
                    }
                }
                rows
            }
        };
        for window in [u64::MAX, 64 << 10] {
            assert_eq!(
                read(fields.clone(), window).await,
                vec![3, 999, 1000, 43_210, 43_211]
            );
            // the file names the key column otherwise: every row, filtered by the caller
            let renamed = vec![
                DataField::new(0, "old_id", DataType::not_null(TypeKind::BigInt)),
                fields[1].clone(),
            ];
            assert_eq!(read(renamed, window).await.len(), ROWS as usize);
        }
    }
}
