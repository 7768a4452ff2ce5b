//! Deletion vectors maintained by compaction (Java `BucketedDvMaintainer`, fed with the file
//! positions `LookupLevels` finds for `LookupChangelogMergeFunctionWrapper`; the index file is
//! Java's `DeletionVectorsIndexFile`).
//!
//! Batch reads of deletion-vector tables read levels >= 1 without merging. A unit that writes
//! level 0 into a level above the max level therefore leaves older copies of its keys in the
//! deeper levels (below the output), and marks each of them in its file's deletion vector
//! instead of rewriting it. [`DeeperPositions`] walks the deeper levels, one forward cursor
//! per level (a level is one sorted run), in step with the unit's merged output, which is in
//! key order: for every output key, retracts included (a deleted key hides its older copy
//! too), the shallowest deeper level holding a live row of the key (one its deletion vector
//! does not delete yet) gives the file and row position to delete. Positions count a file's
//! rows as they stream, deletion vector not applied.
//!
//! [`write_index_file`] then writes the bucket's vectors — each deeper file's previous vector
//! united with its new positions — as one deletion-vector index file, which replaces every
//! previous index file of the bucket in the COMPACT commit (one index file per bucket, as
//! Java). Files of the unit need no vector: those with one are rewritten (see
//! [`super::rewriter`]).
//!
//! Invariant (Java's): among levels >= 1 each key has at most one live row, so one position
//! per output key at most is marked, and the unit's own level >= 1 rows of a key hide no live
//! deeper row. Memory: one decoded batch per deeper level plus the new positions.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_row::Row;
use tidelake_spec::manifest::{DeletionVectorMeta, IndexFileMeta, DELETION_VECTORS_INDEX};

use super::changelog::{KeyCursor, VALUE_OFFSET};
use super::kv_merge::KeyEncoder;
use super::levels::LevelFile;
use crate::error::{Error, Result};
use crate::read::deletion_vector::{write_deletion_vector_file, DeletionVector};
use crate::read::split_read::ReadContext;
use crate::scan::split::SplitFile;
use crate::table::Table;

/// The deeper levels' rows hidden by a unit's output, found in key order.
pub(crate) struct DeeperPositions {
    keys: KeyEncoder,
    /// One cursor per deeper level, shallowest first.
    levels: Vec<LevelCursor>,
    /// New deleted positions per data file.
    marked: BTreeMap<String, DeletionVector>,
}

impl DeeperPositions {
    /// Cursors over `deeper` (files of the levels below the output, each level in key order),
    /// keys at the value columns `key_indices`.
    pub(crate) fn new(reader: Arc<ReadContext>, key_indices: Vec<usize>, deeper: &[LevelFile]) -> DeeperPositions {
        let mut by_level: BTreeMap<i32, VecDeque<SplitFile>> = BTreeMap::new();
        for f in deeper {
            by_level.entry(f.meta.level).or_default().push_back(f.split_file());
        }
        DeeperPositions {
            keys: KeyEncoder::new(key_indices),
            levels: by_level
                .into_values()
                .map(|files| LevelCursor {
                    reader: reader.clone(),
                    files,
                    open: None,
                })
                .collect(),
            marked: BTreeMap::new(),
        }
    }

    /// Mark the deeper live row of every key of `merged` (`[_SEQUENCE_NUMBER, _VALUE_KIND,
    /// columns...]`, keys ascending and after those of earlier calls).
    pub(crate) async fn mark(&mut self, merged: &RecordBatch) -> Result<()> {
        let rows = self.keys.encode(merged, VALUE_OFFSET)?;
        for i in 0..rows.num_rows() {
            let key = rows.row(i);
            for level in &mut self.levels {
                if let Some((file, position)) = level.seek(&mut self.keys, key).await? {
                    self.marked.entry(file).or_default().insert(position);
                    break;
                }
            }
        }
        Ok(())
    }

    /// The new deleted positions per data file.
    pub(crate) fn into_marked(self) -> BTreeMap<String, DeletionVector> {
        self.marked
    }
}

/// A forward cursor over one level's files.
struct LevelCursor {
    reader: Arc<ReadContext>,
    /// Files not opened yet, in key order.
    files: VecDeque<SplitFile>,
    /// The open file: its name, rows (positions count from its first row) and deletion vector.
    open: Option<(String, KeyCursor, Option<DeletionVector>)>,
}

impl LevelCursor {
    /// Move to `key` (never backwards): the file and position of its row in this level if
    /// the row is live.
    async fn seek(&mut self, keys: &mut KeyEncoder, key: Row<'_>) -> Result<Option<(String, u64)>> {
        loop {
            if self.open.is_none() {
                let Some(next) = self.files.pop_front() else {
                    return Ok(None);
                };
                let (rows, deleted) = self.reader.positioned_rows(&next).await?;
                self.open = Some((next.file_name, KeyCursor::new(rows), deleted));
            }
            let (name, cursor, deleted) = self.open.as_mut().expect("opened above");
            match cursor.seek_position(keys, key).await? {
                Some(position) => {
                    let live = !deleted.as_ref().is_some_and(|d| d.contains(position));
                    return Ok(live.then(|| (name.clone(), position)));
                }
                // the key may start the next file
                None if cursor.is_exhausted() => self.open = None,
                None => return Ok(None),
            }
        }
    }
}

/// The bucket's deletion vectors after a unit: each of `deeper`'s previous vector united with
/// its `marked` positions, written as one index file under `index/` (empty vectors left out).
pub(crate) async fn write_index_file(
    table: &Table,
    reader: &ReadContext,
    deeper: &[LevelFile],
    mut marked: BTreeMap<String, DeletionVector>,
) -> Result<IndexFileMeta> {
    let mut vectors = Vec::new();
    for f in deeper {
        let mut dv = match &f.deletion {
            Some(r) => reader.load_deletion_vector(&r.path, r.offset, r.length).await?,
            None => DeletionVector::new(),
        };
        for position in marked.remove(&f.meta.file_name).iter().flat_map(DeletionVector::iter) {
            dv.insert(position);
        }
        if !dv.is_empty() {
            vectors.push((f.meta.file_name.clone(), dv));
        }
    }
    let (bytes, ranges) = write_deletion_vector_file(&vectors);
    let too_large = || Error::invalid("a deletion-vector index file over 2 GiB");
    let dv_ranges = ranges
        .into_iter()
        .map(|(data_file_name, offset, length, cardinality)| {
            Ok(DeletionVectorMeta {
                data_file_name,
                offset: i32::try_from(offset).map_err(|_| too_large())?,
                length: i32::try_from(length).map_err(|_| too_large())?,
                cardinality: Some(i64::try_from(cardinality).map_err(|_| too_large())?),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let file_name = format!("index-{}-0", uuid::Uuid::new_v4());
    let file_size = i64::try_from(bytes.len()).map_err(|_| too_large())?;
    table.io().write(&format!("index/{file_name}"), bytes).await?;
    Ok(IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_string(),
        file_name,
        file_size,
        row_count: dv_ranges.len() as i64,
        dv_ranges: Some(dv_ranges),
        external_path: None,
        global_index: None,
    })
}
