//! Row-level changes of append tables with `deletion-vectors.enabled`: rows are deleted by
//! marking their positions in their data files' deletion vectors instead of rewriting the files
//! (Java `AppendDeleteFileMaintainer`: `BucketedAppendDeleteFileMaintainer` for fixed buckets,
//! `UnawareAppendDeleteFileMaintainer` for bucket-unaware tables). An update marks the old rows
//! and writes the new ones as new files (the caller's writer).
//!
//! Per touched (partition, bucket) one message replaces index files: the new index file holds
//! the touched files' vectors (their vector at the read snapshot united with the new positions)
//! and every other live vector of the index files it replaces. Which files it replaces follows
//! the commit's index rules ([`crate::commit`]): on fixed buckets, the bucket's index file (one
//! per bucket); on bucket-unaware tables, the index files holding a touched file's vector.
//!
//! Invariants: positions are row numbers within the data file (counted over every row of the
//! file, deletion vector not applied: [`crate::read::split_read::ReadContext::read_positioned`]);
//! every touched file is live in the splits' snapshot, which is the messages' base; vectors of
//! files no longer live are dropped, so the new index file names live files only. Committed,
//! the change is an OVERWRITE with conflict checks: a concurrent commit that replaced one of the
//! index files (another row-level change, a compaction) or removed a touched file makes it a
//! [`Error::CommitConflict`](crate::Error::CommitConflict), and nothing lands.

use std::collections::{BTreeMap, HashMap, HashSet};

use tidelake_spec::manifest::{DeletionVectorMeta, IndexFileMeta, DELETION_VECTORS_INDEX};

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::read::deletion_vector::{write_deletion_vector_file, DeletionVector};
use crate::read::split_read::decode_deletion_vector;
use crate::scan::Split;
use crate::state::{BucketFiles, DeletionFileRef, IndexPaths};
use crate::table::Table;
use crate::write::message::CommitMessage;
use crate::write::rewrite::live_buckets;

/// Rows to delete from one planned split: (index of the file in `split.files`, its row
/// positions).
pub type SplitDeletes = (Split, Vec<(usize, Vec<u64>)>);

/// The messages deleting the given rows through deletion vectors (see the module docs). Every
/// split must come from one snapshot of `table`, an append table with deletion vectors enabled.
pub async fn deletion_messages(
    table: &Table,
    deletes: Vec<SplitDeletes>,
) -> Result<Vec<CommitMessage>> {
    let Some(snapshot_id) = deletes.first().map(|(s, _)| s.snapshot_id) else {
        return Ok(Vec::new());
    };
    if deletes.iter().any(|(s, _)| s.snapshot_id != snapshot_id) {
        return Err(Error::invalid(
            "the splits of one row-level change must come from one snapshot",
        ));
    }
    let opts = table.schema().options();
    let enabled = opts
        .deletion_vectors_enabled()
        .map_err(|e| Error::invalid(e.to_string()))?;
    if !table.schema().primary_keys.is_empty() || !enabled {
        return Err(Error::Unsupported(
            "deleting rows by deletion vector needs an append table with deletion-vectors.enabled=true".into(),
        ));
    }
    // New positions per (partition, bucket) and data file.
    let mut marked: HashMap<(Vec<u8>, i32), BTreeMap<String, DeletionVector>> = HashMap::new();
    for (split, files) in &deletes {
        let bucket = marked
            .entry((split.partition.clone(), split.bucket))
            .or_default();
        for (index, positions) in files {
            let file = split.files.get(*index).ok_or_else(|| {
                Error::invalid(format!(
                    "file {index} of a split that has {} files",
                    split.files.len()
                ))
            })?;
            if let Some(&bad) = positions.iter().find(|&&p| p >= file.row_count as u64) {
                return Err(Error::invalid(format!(
                    "row position {bad} of data file {}, which has {} rows",
                    file.file_name, file.row_count
                )));
            }
            let dv = bucket.entry(file.file_name.clone()).or_default();
            for &p in positions {
                dv.insert(p);
            }
        }
    }
    let live = live_buckets(table, snapshot_id, marked.keys()).await?;
    let mut loaded = IndexFiles::default();
    let mut messages = Vec::new();
    let built: Result<()> = async {
        for b in live {
            let Some(new) = marked.remove(&(b.partition.clone(), b.bucket)) else {
                continue;
            };
            let live: HashSet<&str> = b.files.iter().map(|e| e.file.file_name.as_str()).collect();
            if let Some(gone) = new.keys().find(|n| !live.contains(n.as_str())) {
                return Err(Error::invalid(format!(
                    "data file {gone} is not live in snapshot {snapshot_id}"
                )));
            }
            let mut m = CommitMessage::new(b.partition.clone(), b.bucket, b.total_buckets);
            m.base_snapshot = Some(snapshot_id);
            (m.new_index_files, m.deleted_index_files) =
                replace_vectors(table, &b, new, &HashSet::new(), &mut loaded).await?;
            messages.push(m);
        }
        if let Some((_, files)) = marked.into_iter().next() {
            let name = files.into_keys().next().unwrap_or_default();
            return Err(Error::invalid(format!(
                "data file {name} is not live in snapshot {snapshot_id}"
            )));
        }
        Ok(())
    }
    .await;
    written_or_forgotten(table, built, messages).await
}

/// `messages` when `built` succeeded; otherwise the index files they wrote are deleted (what
/// cannot be is left to orphan cleaning) and the error returned.
pub(crate) async fn written_or_forgotten(
    table: &Table,
    built: Result<()>,
    messages: Vec<CommitMessage>,
) -> Result<Vec<CommitMessage>> {
    let Err(e) = built else {
        return Ok(messages);
    };
    let paths = IndexPaths::new(table.schema())?;
    for m in &messages {
        for f in &m.new_index_files {
            let deleted = match paths.bucket_file_path(&m.partition, m.bucket, f) {
                Ok(path) => table.io().delete(&path).await,
                Err(e) => Err(e),
            };
            if let Err(gone) = deleted {
                log::warn!(target: "tidelake.commit", "{}: could not delete index file {} of a failed change: {gone}", table.location(), f.file_name);
            }
        }
    }
    Err(e)
}

/// The index changes of bucket `b` (new index files, replaced ones) when data files of the
/// bucket gain the positions of `marked` or leave the bucket (`removed`): the index files
/// holding a vector of such a file (on fixed buckets: the bucket's index file) are replaced by
/// one file holding every vector they held of files that stay, united with `marked`; no new
/// file when no vector is left, no change when no such file has a vector.
pub(crate) async fn replace_vectors(
    table: &Table,
    b: &BucketFiles,
    mut marked: BTreeMap<String, DeletionVector>,
    removed: &HashSet<&str>,
    loaded: &mut IndexFiles,
) -> Result<(Vec<IndexFileMeta>, Vec<IndexFileMeta>)> {
    if marked.is_empty() && !removed.iter().any(|n| b.deletion_vector(n).is_some()) {
        return Ok((Vec::new(), Vec::new()));
    }
    let bucket_unaware = table.schema().options().bucket().unwrap_or(-1) == -1;
    let live: HashSet<&str> = b.files.iter().map(|e| e.file.file_name.as_str()).collect();
    let touched = |name: &str| marked.contains_key(name) || removed.contains(name);
    let replaced: Vec<IndexFileMeta> = b
        .dv_index
        .iter()
        .filter(|index| {
            !bucket_unaware
                || index
                    .dv_ranges
                    .iter()
                    .flatten()
                    .any(|r| touched(&r.data_file_name))
        })
        .cloned()
        .collect();
    let carried: HashSet<&str> = replaced
        .iter()
        .flat_map(|i| i.dv_ranges.iter().flatten())
        .map(|r| r.data_file_name.as_str())
        .filter(|n| live.contains(n) && !removed.contains(n))
        .collect();
    for name in carried {
        if let Some(r) = b.deletion_vector(name) {
            let old = loaded.vector(table, r).await?;
            let dv = marked.entry(name.to_string()).or_default();
            for p in old.iter() {
                dv.insert(p);
            }
        }
    }
    let vectors: Vec<(String, DeletionVector)> = marked
        .into_iter()
        .filter(|(_, dv)| !dv.is_empty())
        .collect();
    let new = if vectors.is_empty() {
        Vec::new()
    } else {
        let layout = TableLayout::new(table.schema())?;
        let dir = layout.bucket_path(&layout.decode_partition(&b.partition)?, b.bucket)?;
        vec![write_index_file(table, &dir, vectors).await?]
    };
    Ok((new, replaced))
}

/// Index files read while merging vectors, each read once.
#[derive(Default)]
pub(crate) struct IndexFiles {
    bytes: HashMap<String, bytes::Bytes>,
}

impl IndexFiles {
    async fn vector(&mut self, table: &Table, r: &DeletionFileRef) -> Result<DeletionVector> {
        if !self.bytes.contains_key(&r.path) {
            let bytes = table.io().read(&r.path).await?;
            self.bytes.insert(r.path.clone(), bytes);
        }
        decode_deletion_vector(table, &r.path, &self.bytes[&r.path], r.offset, r.length)
    }
}

/// Write `vectors` (empty ones left out) as one deletion-vector index file of the bucket whose
/// directory is `bucket_dir` (where [`IndexPaths`] puts it).
pub(crate) async fn write_index_file(
    table: &Table,
    bucket_dir: &str,
    mut vectors: Vec<(String, DeletionVector)>,
) -> Result<IndexFileMeta> {
    vectors.retain(|(_, dv)| !dv.is_empty());
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
    let file_name = format!("index-{}-0", table.env().uuid());
    let file_size = i64::try_from(bytes.len()).map_err(|_| too_large())?;
    let path = IndexPaths::new(table.schema())?.new_path(table.io(), bucket_dir, &file_name)?;
    table.io().write(&path.path, bytes).await?;
    Ok(IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_string(),
        file_name,
        file_size,
        row_count: dv_ranges.len() as i64,
        dv_ranges: Some(dv_ranges),
        external_path: path.external,
        global_index: None,
    })
}
