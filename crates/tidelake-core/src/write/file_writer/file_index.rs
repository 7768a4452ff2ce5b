//! The data-file indexes a writer keeps for each file it writes (`file-index.<type>.*`; Java
//! `DataFileIndexWriter`): per configured column a bloom filter over its non-null values, a
//! bitmap of the rows of each value, a bit-sliced index of its values, or a dictionary with a
//! bit-sliced index of each row's code (row = position in the file), or any of these over the
//! values of one key of a map column (`column[key]`), stored in Paimon's file-index format
//! ([`tidelake_spec::file_index`]) embedded in
//! the manifest entry when it is at most `file-index.in-manifest-threshold` bytes, else as
//! `<data file>.index` next to the data file, named in the entry's extra files.
//!
//! The same indexes are built again for files already written by
//! [`crate::ops::RewriteFileIndex`] ([`IndexPlan::for_file`], [`FileIndexes::encode`]).
//!
//! Invariant: every row of the file is added to every index, in file order.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::bitmap::{bitmap_key, BitmapIndexWriter};
use tidelake_spec::file_index::bsi::{bsi_value, BsiIndexWriter};
use tidelake_spec::file_index::range_bitmap::{range_key, RangeBitmapWriter};
use tidelake_spec::file_index::{
    fast_hash, map_entry, BloomFilter64, ColumnIndex, FileIndex, INDEX_FILE_SUFFIX,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataType, TypeKind};

use crate::datum_arrow::datum_at;
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Which columns get which index, resolved against the written schema.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexPlan {
    indexes: Vec<Planned>,
    threshold: u64,
}

/// One index of the plan.
#[derive(Debug, Clone)]
struct Planned {
    /// Position among the table columns.
    pos: usize,
    index: ColumnIndex,
    /// The indexed values' type: the column's, or a map column's value type.
    ty: DataType,
    /// For an index on a map column's entries (`column[key]`), the key whose values it holds.
    entry: Option<String>,
}

impl IndexPlan {
    /// The `indexes` on columns of `schema`, embedded up to `threshold` bytes; an unknown
    /// column or a type the index cannot hold is an error (as in Java). An index on a map
    /// column's entries (`column[key]`, Java `MapFileIndexMaintainer`) holds each row's value
    /// of that key (null when the row's map is null or lacks the key); the map's keys must be
    /// strings, as Java requires.
    pub(crate) fn new(
        schema: &TableSchema,
        indexes: &[ColumnIndex],
        threshold: u64,
    ) -> Result<IndexPlan> {
        let mut planned = Vec::new();
        for index in indexes.iter().cloned() {
            let (column, kind) = (index.column(), index.index_type());
            let (name, entry) = match map_entry(column) {
                Some((map, key)) => (map, Some(key.to_string())),
                None => (column, None),
            };
            let pos = schema
                .fields
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "file-index.{kind}.columns names '{column}', which is not a column"
                    ))
                })?;
            let ty = match (&entry, &schema.fields[pos].data_type.kind) {
                (None, _) => schema.fields[pos].data_type.clone(),
                (Some(_), TypeKind::Map(key, value))
                    if matches!(key.kind, TypeKind::Char(_) | TypeKind::VarChar(_)) =>
                {
                    value.as_ref().clone()
                }
                (Some(_), _) => {
                    return Err(Error::invalid(format!(
                        "file-index.{kind}.columns names '{column}': an index on map entries \
                         needs a map column with CHAR, VARCHAR or STRING keys, '{name}' is {}",
                        schema.fields[pos].data_type
                    )))
                }
            };
            if !index.supports(&ty) {
                return Err(Error::Unsupported(format!(
                    "a {kind} file index on column '{column}' of type {ty}"
                )));
            }
            planned.push(Planned {
                pos,
                index,
                ty,
                entry,
            });
        }
        Ok(IndexPlan {
            indexes: planned,
            threshold,
        })
    }

    /// The `indexes` (on columns of the table's `current` schema) of a file written with
    /// `file_schema`: each column found by field id and indexed under its name in the file
    /// (Java `RewriteFileIndexSink.SchemaCache`), those the file lacks left out. An index on a
    /// column `current` lacks is an error, as in [`Self::new`].
    pub(crate) fn for_file(
        current: &TableSchema,
        file_schema: &TableSchema,
        indexes: &[ColumnIndex],
        threshold: u64,
    ) -> Result<IndexPlan> {
        // the checks of `new` on the current schema: unknown columns, unsupported types
        IndexPlan::new(current, indexes, threshold)?;
        let renamed: Vec<ColumnIndex> = indexes
            .iter()
            .filter_map(|index| {
                let (column, entry) = match map_entry(index.column()) {
                    Some((map, key)) => (map, Some(key)),
                    None => (index.column(), None),
                };
                let name = &file_schema.field_by_id(current.field(column)?.id)?.name;
                Some(match entry {
                    Some(key) => index.renamed(&format!("{name}[{key}]")),
                    None => index.renamed(name),
                })
            })
            .collect();
        IndexPlan::new(file_schema, &renamed, threshold)
    }

    /// `file-index.in-manifest-threshold`: encoded indexes up to this size are embedded.
    pub(crate) fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The empty indexes of a new file (`None` when no index is asked for).
    pub(crate) fn start(&self) -> Result<Option<FileIndexes>> {
        if self.indexes.is_empty() {
            return Ok(None);
        }
        let builders = self
            .indexes
            .iter()
            .map(|Planned { index, ty, .. }| {
                Ok(match index {
                    ColumnIndex::BloomFilter(c) => {
                        Builder::Bloom(BloomFilter64::new(c.items, c.fpp)?)
                    }
                    ColumnIndex::Bitmap(c) => Builder::Bitmap(BitmapIndexWriter::new(ty, c)?),
                    ColumnIndex::Bsi(c) => Builder::Bsi(BsiIndexWriter::new(ty, c)?),
                    ColumnIndex::RangeBitmap(c) => {
                        Builder::RangeBitmap(RangeBitmapWriter::new(ty, c)?)
                    }
                })
            })
            .collect::<tidelake_spec::error::Result<_>>()
            .map_err(|e| Error::from_spec("table options", e))?;
        Ok(Some(FileIndexes {
            plan: self.clone(),
            builders,
        }))
    }
}

/// One index being built.
enum Builder {
    Bloom(BloomFilter64),
    Bitmap(BitmapIndexWriter),
    Bsi(BsiIndexWriter),
    RangeBitmap(RangeBitmapWriter),
}

impl Builder {
    /// Add the value at `row` of `values` (`None`: a null).
    fn add(&mut self, planned: &Planned, values: &dyn Array, row: Option<usize>) -> Result<()> {
        let ty = &planned.ty;
        let value = match row {
            Some(row) => datum_at(values, row, ty)?,
            None => Datum::Null,
        };
        let unkeyed = || {
            Error::invalid(format!(
                "a {} index cannot hold value {value:?} of column '{}'",
                planned.index.index_type(),
                planned.index.column()
            ))
        };
        match self {
            Builder::Bloom(filter) => {
                if let Some(hash) = fast_hash(&value, ty) {
                    filter.add_hash(hash);
                }
            }
            Builder::Bitmap(bitmap) if value.is_null() => bitmap.add(None),
            Builder::Bitmap(bitmap) => {
                bitmap.add(Some(bitmap_key(&value, ty).ok_or_else(unkeyed)?))
            }
            Builder::Bsi(bsi) if value.is_null() => bsi.add(None),
            Builder::Bsi(bsi) => bsi.add(Some(bsi_value(&value, ty).ok_or_else(unkeyed)?)),
            Builder::RangeBitmap(range) if value.is_null() => range.add(None),
            Builder::RangeBitmap(range) => {
                range.add(Some(range_key(&value, ty).ok_or_else(unkeyed)?))
            }
        }
        Ok(())
    }
}

/// The indexes of the file being written.
pub(crate) struct FileIndexes {
    plan: IndexPlan,
    builders: Vec<Builder>,
}

impl FileIndexes {
    /// Add rows: `values` are the table columns of a written chunk.
    pub(crate) fn update(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (planned, builder) in self.plan.indexes.iter().zip(&mut self.builders) {
            let column = values[planned.pos].as_ref();
            match &planned.entry {
                None => {
                    for row in 0..column.len() {
                        builder.add(planned, column, (!column.is_null(row)).then_some(row))?;
                    }
                }
                Some(key) => {
                    let map = column.as_map_opt().ok_or_else(|| {
                        Error::Internal(format!(
                            "column '{}' of a map-entry index is not a map",
                            planned.index.column()
                        ))
                    })?;
                    let (keys, entries) = (map.keys(), map.values().as_ref());
                    let keys = keys.as_string_opt::<i32>().ok_or_else(|| {
                        Error::Internal(format!(
                            "the keys of map column '{}' are not strings",
                            planned.index.column()
                        ))
                    })?;
                    for row in 0..column.len() {
                        // the row's entry of `key` (maps hold each key once)
                        let at = match map.is_null(row) {
                            true => None,
                            false => {
                                let (start, end) =
                                    (map.value_offsets()[row], map.value_offsets()[row + 1]);
                                (start..end)
                                    .map(|i| i as usize)
                                    .find(|&i| keys.is_valid(i) && keys.value(i) == key)
                            }
                        };
                        builder.add(planned, entries, at.filter(|&i| !entries.is_null(i)))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The indexes in Paimon's file-index format (Java `FileIndexFormat.Writer`).
    pub(crate) fn encode(self) -> Result<Vec<u8>> {
        let mut index = FileIndex::default();
        for (Planned { index: column, .. }, builder) in self.plan.indexes.iter().zip(self.builders)
        {
            let body = match builder {
                Builder::Bloom(filter) => Ok(filter.encode()),
                Builder::Bitmap(bitmap) => bitmap.encode(),
                Builder::Bsi(bsi) => bsi.encode(),
                Builder::RangeBitmap(range) => range.encode(),
            }
            .map_err(|e| Error::from_spec("file index", e))?;
            index
                .columns
                .entry(column.column().to_string())
                .or_default()
                .insert(column.index_type().to_string(), body);
        }
        index
            .encode()
            .map_err(|e| Error::from_spec("file index", e))
    }

    /// Store the indexes of data file `data_path` (root-relative): the embedded bytes, or the
    /// name of the index file written next to it.
    pub(super) async fn finish(
        self,
        io: &FileIO,
        data_path: &str,
        created: &mut Vec<String>,
    ) -> Result<(Option<Vec<u8>>, Vec<String>)> {
        let threshold = self.plan.threshold;
        let bytes = self.encode()?;
        if bytes.len() as u64 <= threshold {
            return Ok((Some(bytes), Vec::new()));
        }
        let path = format!("{data_path}{INDEX_FILE_SUFFIX}");
        created.push(path.clone());
        io.write(&path, bytes).await?;
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        Ok((None, vec![name]))
    }
}
