//! The data-file indexes a writer keeps for each file it writes (`file-index.bloom-filter.*`;
//! Java `DataFileIndexWriter`): a bloom filter per configured column over every non-null value
//! of the file, stored in Paimon's file-index format ([`tidelake_spec::file_index`]) embedded
//! in the manifest entry when it is at most `file-index.in-manifest-threshold` bytes, else as
//! `<data file>.index` next to the data file, named in the entry's extra files.

use arrow_array::ArrayRef;
use tidelake_spec::file_index::{
    fast_hash, hashable, BloomFilter64, BloomFilterColumn, FileIndex, BLOOM_FILTER,
    INDEX_FILE_SUFFIX,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

use crate::datum_arrow::datum_at;
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Which columns get which index, resolved against the written schema.
#[derive(Debug, Clone, Default)]
pub(super) struct IndexPlan {
    /// (position among the table columns, column, its type).
    blooms: Vec<(usize, BloomFilterColumn, DataType)>,
    threshold: u64,
}

impl IndexPlan {
    /// Bloom filters on `columns` of `schema`, embedded up to `threshold` bytes; an unknown
    /// column or a type bloom filters cannot hash is an error (as in Java).
    pub(super) fn new(
        schema: &TableSchema,
        columns: &[BloomFilterColumn],
        threshold: u64,
    ) -> Result<IndexPlan> {
        let mut blooms = Vec::new();
        for column in columns.iter().cloned() {
            let pos = schema
                .fields
                .iter()
                .position(|f| f.name == column.column)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "file-index.bloom-filter.columns names '{}', which is not a column",
                        column.column
                    ))
                })?;
            let ty = schema.fields[pos].data_type.clone();
            if !hashable(&ty) {
                return Err(Error::Unsupported(format!(
                    "a bloom-filter file index on column '{}' of type {ty}",
                    column.column
                )));
            }
            blooms.push((pos, column, ty));
        }
        Ok(IndexPlan { blooms, threshold })
    }

    /// The empty indexes of a new file (`None` when no index is asked for).
    pub(super) fn start(&self) -> Result<Option<FileIndexes>> {
        if self.blooms.is_empty() {
            return Ok(None);
        }
        let filters = self
            .blooms
            .iter()
            .map(|(_, c, _)| BloomFilter64::new(c.items, c.fpp))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::from_spec("table options", e))?;
        Ok(Some(FileIndexes {
            plan: self.clone(),
            filters,
        }))
    }
}

/// The indexes of the file being written.
pub(super) struct FileIndexes {
    plan: IndexPlan,
    filters: Vec<BloomFilter64>,
}

impl FileIndexes {
    /// Add rows: `values` are the table columns of a written chunk.
    pub(super) fn update(&mut self, values: &[ArrayRef]) -> Result<()> {
        for ((pos, _, ty), filter) in self.plan.blooms.iter().zip(&mut self.filters) {
            let column = values[*pos].as_ref();
            for row in 0..column.len() {
                if column.is_null(row) {
                    continue;
                }
                if let Some(hash) = fast_hash(&datum_at(column, row, ty)?, ty) {
                    filter.add_hash(hash);
                }
            }
        }
        Ok(())
    }

    /// Store the indexes of data file `data_path` (root-relative): the embedded bytes, or the
    /// name of the index file written next to it.
    pub(super) async fn finish(
        self,
        io: &FileIO,
        data_path: &str,
        created: &mut Vec<String>,
    ) -> Result<(Option<Vec<u8>>, Vec<String>)> {
        let mut index = FileIndex::default();
        for ((_, column, _), filter) in self.plan.blooms.iter().zip(&self.filters) {
            index
                .columns
                .entry(column.column.clone())
                .or_default()
                .insert(BLOOM_FILTER.to_string(), filter.encode());
        }
        let bytes = index
            .encode()
            .map_err(|e| Error::from_spec("file index", e))?;
        if bytes.len() as u64 <= self.plan.threshold {
            return Ok((Some(bytes), Vec::new()));
        }
        let path = format!("{data_path}{INDEX_FILE_SUFFIX}");
        created.push(path.clone());
        io.write(&path, bytes).await?;
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        Ok((None, vec![name]))
    }
}
