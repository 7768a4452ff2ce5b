//! Lookup into the levels below a unit's output (Java `LookupLevels` as used by
//! `LookupMergeTreeCompactRewriter`, and `BucketedDvMaintainer`; the index file is Java's
//! `DeletionVectorsIndexFile`).
//!
//! Tables that need lookup (deletion vectors, `changelog-producer=lookup`, `force-lookup`)
//! compact level 0 into a level that may have older levels below it. For each key of a
//! rewrite's level-0 files, [`DeeperLookup`] finds the key's newest older copy below the
//! output: the shallowest deeper level holding a live row of the key (one its deletion
//! vector does not delete yet; retracts included). The rewriter merges that row as the key's
//! oldest record, produces the lookup changelog against it, and, on deletion-vector tables,
//! [`DeeperLookup`] marks its position in its file's deletion vector (the merged output
//! supersedes it; batch reads of those tables read levels >= 1 without merging).
//!
//! How: one forward cursor per deeper level (a level is one sorted run), in step with the
//! looked-up keys, which ascend — a streaming merge-join, no per-key random I/O. A level's
//! files are opened in key order, one at a time, and only when a sought key falls in a file's
//! key range (`_MIN_KEY`/`_MAX_KEY` of its metadata): files below the sought keys are skipped
//! without decoding, a file is closed as soon as a key passes its max key. Positions count a
//! file's rows as they stream, deletion vector not applied.
//!
//! [`write_bucket_index_file`] then writes the bucket's vectors — each deeper file's previous vector
//! united with its new positions — as one deletion-vector index file, which replaces every
//! previous index file of the bucket in the COMPACT commit (one index file per bucket, as
//! Java). Files of the unit need no vector: those with one are rewritten (see
//! [`super::rewriter`]).
//!
//! Invariant (Java's): a key's newest copy above level 0 is the only live one among the levels
//! from 1 down of a deletion-vector table, and on other lookup tables it already holds the deeper
//! copies merged, so only the shallowest live deeper row matters. Memory: one decoded batch
//! per deeper level, the rows found for one looked-up batch, and the new positions.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use arrow_array::{Array, RecordBatch};
use arrow_row::{OwnedRow, Row};
use arrow_select::interleave::interleave;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::manifest::IndexFileMeta;
use tidelake_spec::types::DataType;

use super::changelog::{same_batch, KeyCursor, VALUE_OFFSET};
use crate::error::{Error, Result};
use crate::lsm::key::KeyEncoder;
use crate::lsm::levels::LevelFile;
use crate::read::deletion_vector::DeletionVector;
use crate::read::record_expire::RecordExpire;
use crate::read::split_read::ReadContext;
use crate::scan::split::SplitFile;
use crate::table::Table;
use crate::write::deletion::write_index_file;

/// The newest live copies, in the levels below a unit's output, of keys sought in order.
pub(crate) struct DeeperLookup {
    keys: KeyEncoder,
    /// Types of the trimmed primary key (how files store their key range).
    key_types: Vec<DataType>,
    /// One cursor per deeper level, shallowest first.
    levels: Vec<LevelCursor>,
    /// New deleted positions per data file; `None`: rows found are not marked.
    marked: Option<BTreeMap<String, DeletionVector>>,
    /// Files opened so far (the others were skipped by key range or not reached).
    opened: usize,
    /// Record-level expiry of the rewrite's reader with "now" (seconds) when this lookup was
    /// made: [`DeeperLookup::lookup`] finds no expired row (Java's lookup files are read
    /// through the expiring reader), [`DeeperLookup::contains`] (first-row) any.
    expire: Option<(Arc<RecordExpire>, i64)>,
}

impl DeeperLookup {
    /// Cursors over `deeper` (files of the levels below the output, each level in key order);
    /// keys at the value columns `key_indices` (the trimmed primary key, of `key_types`);
    /// `mark`: record the positions of the rows found, for deletion vectors.
    pub(crate) fn new(
        reader: Arc<ReadContext>,
        key_indices: Vec<usize>,
        key_types: Vec<DataType>,
        deeper: &[LevelFile],
        mark: bool,
    ) -> Result<DeeperLookup> {
        let mut by_level: BTreeMap<i32, VecDeque<RangedFile>> = BTreeMap::new();
        for f in deeper {
            let decode = |b: &[u8]| {
                decode_framed(b, &key_types)
                    .map_err(|e| Error::from_spec(format!("key range of {}", f.path), e))
            };
            let file = RangedFile {
                min: decode(&f.meta.min_key)?,
                max: decode(&f.meta.max_key)?,
                range: None,
                file: f.split_file(),
            };
            by_level.entry(f.meta.level).or_default().push_back(file);
        }
        let expire = reader.record_expire_now();
        Ok(DeeperLookup {
            expire,
            keys: KeyEncoder::new(key_indices),
            key_types,
            levels: by_level
                .into_values()
                .map(|files| LevelCursor {
                    reader: reader.clone(),
                    files,
                    open: None,
                })
                .collect(),
            marked: mark.then(BTreeMap::new),
            opened: 0,
        })
    }

    /// The newest live deeper row of every key of `sought` (`[_SEQUENCE_NUMBER, _VALUE_KIND,
    /// columns...]`, keys ascending, each once, after those of earlier calls), as one batch
    /// shaped like the deeper files' rows, in key order; `None` when no key has one.
    pub(crate) async fn lookup(&mut self, sought: &RecordBatch) -> Result<Option<RecordBatch>> {
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut picks: Vec<(usize, usize)> = Vec::new();
        for hit in self.find(sought, true).await?.into_iter().flatten() {
            if !sources.last().is_some_and(|s| same_batch(s, &hit.batch)) {
                sources.push(hit.batch);
            }
            picks.push((sources.len() - 1, hit.row));
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let columns = (0..sources[0].num_columns())
            .map(|c| {
                let arrays: Vec<&dyn Array> =
                    sources.iter().map(|b| b.column(c).as_ref()).collect();
                interleave(&arrays, &picks)
                    .map_err(|e| Error::arrow("rows found below the output level", e))
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new(sources[0].schema(), columns)
            .map(Some)
            .map_err(|e| Error::arrow("rows found below the output level", e))
    }

    /// Which keys of `sought` (as for [`DeeperLookup::lookup`]) have a live deeper row.
    pub(crate) async fn contains(&mut self, sought: &RecordBatch) -> Result<Vec<bool>> {
        Ok(self
            .find(sought, false)
            .await?
            .iter()
            .map(Option::is_some)
            .collect())
    }

    /// The newest live deeper row of each key of `sought`, marked when marking; with
    /// `unexpired`, rows record-level expiry expires are passed over (as absent from their
    /// level).
    async fn find(&mut self, sought: &RecordBatch, unexpired: bool) -> Result<Vec<Option<Hit>>> {
        let rows = self.keys.encode(sought, VALUE_OFFSET)?;
        let mut hits = Vec::with_capacity(rows.num_rows());
        for i in 0..rows.num_rows() {
            let key = rows.row(i);
            let mut found = None;
            for level in &mut self.levels {
                found = level
                    .seek(&mut self.keys, &self.key_types, key, &mut self.opened)
                    .await?;
                if let (Some(hit), Some((expire, now)), true) = (&found, &self.expire, unexpired) {
                    if expire.row_expired(&hit.batch, hit.row, *now)? {
                        found = None;
                        continue;
                    }
                }
                if found.is_some() {
                    break;
                }
            }
            if let (Some(hit), Some(marked)) = (&found, self.marked.as_mut()) {
                marked
                    .entry(hit.file.clone())
                    .or_default()
                    .insert(hit.position);
            }
            hits.push(found);
        }
        Ok(hits)
    }

    /// How many deeper files were decoded so far.
    #[cfg(test)]
    pub(crate) fn opened(&self) -> usize {
        self.opened
    }

    /// The new deleted positions per data file (empty when not marking).
    pub(crate) fn into_marked(self) -> BTreeMap<String, DeletionVector> {
        self.marked.unwrap_or_default()
    }
}

/// A live row found in a deeper level.
struct Hit {
    file: String,
    /// Row position in the file.
    position: u64,
    batch: RecordBatch,
    row: usize,
}

/// A deeper file not opened yet, with its key range (decoded; encoded once keys are).
struct RangedFile {
    file: SplitFile,
    min: Vec<tidelake_spec::datum::Datum>,
    max: Vec<tidelake_spec::datum::Datum>,
    range: Option<(OwnedRow, OwnedRow)>,
}

impl RangedFile {
    fn range(&mut self, keys: &KeyEncoder, types: &[DataType]) -> Result<&(OwnedRow, OwnedRow)> {
        if self.range.is_none() {
            self.range = Some((
                keys.encode_datums(&self.min, types)?,
                keys.encode_datums(&self.max, types)?,
            ));
        }
        Ok(self.range.as_ref().expect("encoded above"))
    }
}

/// The open file of a level: its name, max key, rows (positions count from its first row)
/// and deletion vector.
struct OpenFile {
    name: String,
    max: OwnedRow,
    rows: KeyCursor,
    deleted: Option<DeletionVector>,
}

/// A forward cursor over one level's files.
struct LevelCursor {
    reader: Arc<ReadContext>,
    /// Files not opened yet, in key order.
    files: VecDeque<RangedFile>,
    open: Option<OpenFile>,
}

impl LevelCursor {
    /// Move to `key` (never backwards): the key's row in this level if it is live.
    async fn seek(
        &mut self,
        keys: &mut KeyEncoder,
        types: &[DataType],
        key: Row<'_>,
        opened: &mut usize,
    ) -> Result<Option<Hit>> {
        // a key past the open file's range cannot be in it, nor are the file's other rows sought
        if self.open.as_ref().is_some_and(|f| f.max.row() < key) {
            self.open = None;
        }
        if self.open.is_none() {
            loop {
                let Some(next) = self.files.front_mut() else {
                    return Ok(None);
                };
                let (min, max) = next.range(keys, types)?;
                let (below, above) = (max.row() < key, min.row() > key);
                if below {
                    // below every key still sought: skipped without decoding
                    self.files.pop_front();
                    continue;
                }
                if above {
                    return Ok(None);
                }
                break;
            }
            let next = self.files.pop_front().expect("checked above");
            let max = next.range.expect("encoded above").1;
            let (rows, deleted) = self.reader.positioned_rows(&next.file).await?;
            *opened += 1;
            self.open = Some(OpenFile {
                name: next.file.file_name,
                max,
                rows: KeyCursor::new(rows),
                deleted,
            });
        }
        let open = self.open.as_mut().expect("opened above");
        Ok(match open.rows.seek_positioned(keys, key).await? {
            Some((batch, row, position))
                if !open.deleted.as_ref().is_some_and(|d| d.contains(position)) =>
            {
                Some(Hit {
                    file: open.name.clone(),
                    position,
                    batch,
                    row,
                })
            }
            _ => None,
        })
    }
}

/// The bucket's deletion vectors after a unit: each of `deeper`'s previous vector united with
/// its `marked` positions, written as one index file of the bucket whose directory is
/// `bucket_dir` (empty vectors left out).
pub(crate) async fn write_bucket_index_file(
    table: &Table,
    bucket_dir: &str,
    reader: &ReadContext,
    deeper: &[LevelFile],
    mut marked: BTreeMap<String, DeletionVector>,
) -> Result<IndexFileMeta> {
    let mut vectors = Vec::new();
    for f in deeper {
        let mut dv = match &f.deletion {
            Some(r) => {
                reader
                    .load_deletion_vector(&r.path, r.offset, r.length)
                    .await?
            }
            None => DeletionVector::new(),
        };
        for position in marked
            .remove(&f.meta.file_name)
            .iter()
            .flat_map(DeletionVector::iter)
        {
            dv.insert(position);
        }
        vectors.push((f.meta.file_name.clone(), dv));
    }
    write_index_file(table, bucket_dir, vectors).await
}

/// A unit's lookup, shared by its rewrites' merges (whose inputs are `'static` streams).
pub(crate) type SharedLookup = Arc<tokio::sync::Mutex<DeeperLookup>>;

/// Rows a lookup found, queued for the changelog join until it passes their keys.
pub(crate) type FoundQueue = Arc<Mutex<VecDeque<RecordBatch>>>;

/// The rows `lookup` finds for the keys of `sought` (key-ordered, each key once) as a sorted
/// run; each batch is also queued into `found` when given. The run is pulled by a merge, so
/// its rows of a key are queued before the merge emits the key.
pub(crate) fn found_rows(
    sought: BoxStream<'static, Result<RecordBatch>>,
    lookup: SharedLookup,
    found: Option<FoundQueue>,
) -> BoxStream<'static, Result<RecordBatch>> {
    sought
        .and_then(move |batch| {
            let lookup = lookup.clone();
            let found = found.clone();
            async move {
                let rows = lookup.lock().await.lookup(&batch).await?;
                if let (Some(rows), Some(found)) = (&rows, &found) {
                    lock(found)?.push_back(rows.clone());
                }
                Ok(rows)
            }
        })
        .try_filter_map(|rows| futures::future::ready(Ok(rows)))
        .boxed()
}

/// The queued rows, as a stream that ends whenever the queue is empty (for
/// [`KeyCursor::resumable`]).
pub(crate) fn queued(found: FoundQueue) -> BoxStream<'static, Result<RecordBatch>> {
    futures::stream::poll_fn(move |_| {
        Poll::Ready(lock(&found).map(|mut q| q.pop_front()).transpose())
    })
    .boxed()
}

fn lock(found: &FoundQueue) -> Result<std::sync::MutexGuard<'_, VecDeque<RecordBatch>>> {
    found
        .lock()
        .map_err(|_| Error::invalid("the queue of looked-up rows was poisoned by an earlier panic"))
}
