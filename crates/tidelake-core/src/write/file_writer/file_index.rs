//! The data-file indexes a writer keeps for each file it writes (`file-index.<type>.*`; Java
//! `DataFileIndexWriter`): per configured column a bloom filter over its non-null values, a
//! bitmap of the rows of each value, a bit-sliced index of its values, or a dictionary with a
//! bit-sliced index of each row's code (row = position in the file), stored in Paimon's file-index format ([`tidelake_spec::file_index`]) embedded in
//! the manifest entry when it is at most `file-index.in-manifest-threshold` bytes, else as
//! `<data file>.index` next to the data file, named in the entry's extra files.
//!
//! The same indexes are built again for files already written by
//! [`crate::ops::RewriteFileIndex`] ([`IndexPlan::for_file`], [`FileIndexes::encode`]).
//!
//! Invariant: every row of the file is added to every index, in file order.

use arrow_array::ArrayRef;
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::bitmap::{bitmap_key, BitmapIndexWriter};
use tidelake_spec::file_index::bsi::{bsi_value, BsiIndexWriter};
use tidelake_spec::file_index::range_bitmap::{range_key, RangeBitmapWriter};
use tidelake_spec::file_index::{
    fast_hash, BloomFilter64, ColumnIndex, FileIndex, INDEX_FILE_SUFFIX,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

use crate::datum_arrow::datum_at;
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Which columns get which index, resolved against the written schema.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexPlan {
    /// (position among the table columns, the index, the column's type).
    indexes: Vec<(usize, ColumnIndex, DataType)>,
    threshold: u64,
}

impl IndexPlan {
    /// The `indexes` on columns of `schema`, embedded up to `threshold` bytes; an unknown
    /// column or a type the index cannot hold is an error (as in Java), and so is an index on
    /// a map column's entries (`column[key]`, which Java indexes and tidelake does not).
    pub(crate) fn new(
        schema: &TableSchema,
        indexes: &[ColumnIndex],
        threshold: u64,
    ) -> Result<IndexPlan> {
        let mut planned = Vec::new();
        for index in indexes.iter().cloned() {
            let (column, kind) = (index.column(), index.index_type());
            if column.ends_with(']') && column.contains('[') {
                return Err(Error::Unsupported(format!(
                    "a {kind} file index on the entries of a map column ('{column}')"
                )));
            }
            let pos = schema
                .fields
                .iter()
                .position(|f| f.name == column)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "file-index.{kind}.columns names '{column}', which is not a column"
                    ))
                })?;
            let ty = schema.fields[pos].data_type.clone();
            if !index.supports(&ty) {
                return Err(Error::Unsupported(format!(
                    "a {kind} file index on column '{column}' of type {ty}"
                )));
            }
            planned.push((pos, index, ty));
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
                let id = current.field(index.column())?.id;
                Some(index.renamed(&file_schema.field_by_id(id)?.name))
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
            .map(|(_, index, ty)| {
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

/// The indexes of the file being written.
pub(crate) struct FileIndexes {
    plan: IndexPlan,
    builders: Vec<Builder>,
}

impl FileIndexes {
    /// Add rows: `values` are the table columns of a written chunk.
    pub(crate) fn update(&mut self, values: &[ArrayRef]) -> Result<()> {
        for ((pos, index, ty), builder) in self.plan.indexes.iter().zip(&mut self.builders) {
            let column = values[*pos].as_ref();
            for row in 0..column.len() {
                let value = if column.is_null(row) {
                    Datum::Null
                } else {
                    datum_at(column, row, ty)?
                };
                let unkeyed = || {
                    Error::invalid(format!(
                        "a {} index cannot hold value {value:?} of column '{}'",
                        index.index_type(),
                        index.column()
                    ))
                };
                match builder {
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
            }
        }
        Ok(())
    }

    /// The indexes in Paimon's file-index format (Java `FileIndexFormat.Writer`).
    pub(crate) fn encode(self) -> Result<Vec<u8>> {
        let mut index = FileIndex::default();
        for ((_, column, _), builder) in self.plan.indexes.iter().zip(self.builders) {
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
