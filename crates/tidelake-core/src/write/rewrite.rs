//! Row-level changes of append tables by file rewrite: the commit messages that remove the data
//! files of planned read [`Split`]s, to be committed together with the messages of a writer
//! that wrote those files' surviving (and updated) rows again.
//!
//! Invariants: every removed file is looked up in the split's own snapshot, so its DELETE entry
//! carries the exact [`DataFileMeta`](tidelake_spec::manifest::DataFileMeta) that snapshot
//! holds; the messages' base is that snapshot. Committed together with the new files, the
//! commit is an OVERWRITE with conflict checks: when another commit removed one of those files
//! meanwhile (a compaction, another row-level change), the commit fails with
//! [`Error::CommitConflict`](crate::Error::CommitConflict) and nothing lands; files other
//! writers added meanwhile are never touched. The deletion vectors of removed files leave with
//! them: the index files holding them are replaced by one holding the bucket's other vectors
//! (`crate::write::deletion::replace_vectors`), so when a commit since changed one of those
//! vectors (more rows deleted from a file that was read) the replaced index file is no longer
//! live and the commit is a conflict too. Files written with a newer schema than the change's
//! table are refused (a conflict: their rows, read and written again at the older schema,
//! would lose the columns added since).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::scan::Split;
use crate::state::{BucketFiles, LiveFiles, Pruning};
use crate::table::Table;
use crate::write::deletion::{replace_vectors, written_or_forgotten, IndexFiles};
use crate::write::message::CommitMessage;

/// The live files of the (partition, bucket)s `keys` in snapshot `snapshot_id`, with their
/// deletion vectors.
pub(crate) async fn live_buckets<'k>(
    table: &Table,
    snapshot_id: i64,
    keys: impl Iterator<Item = &'k (Vec<u8>, i32)>,
) -> Result<Vec<BucketFiles>> {
    let (partitions, buckets): (HashSet<Vec<u8>>, HashSet<i32>) =
        keys.map(|(p, b)| (p.clone(), *b)).unzip();
    let pruning = Pruning::all()
        .partitions(move |p| Ok(partitions.contains(p)))
        .buckets(move |b| buckets.contains(&b))
        .with_index_files();
    let snap = table.snapshot_manager().snapshot(snapshot_id).await?;
    Ok(LiveFiles::read(table, &snap, pruning).await?.into_buckets())
}

/// One message per split removing its files, based on the splits' snapshot (all splits must
/// come from one snapshot of `table`).
pub async fn removal_messages(table: &Table, splits: &[Split]) -> Result<Vec<CommitMessage>> {
    let Some(first) = splits.first() else {
        return Ok(Vec::new());
    };
    let snapshot_id = first.snapshot_id;
    if splits.iter().any(|s| s.snapshot_id != snapshot_id) {
        return Err(Error::invalid(
            "the splits of one rewrite must come from one snapshot",
        ));
    }
    let wanted: HashMap<(Vec<u8>, i32), HashSet<&str>> =
        splits.iter().fold(HashMap::new(), |mut acc, s| {
            acc.entry((s.partition.clone(), s.bucket))
                .or_default()
                .extend(s.files.iter().map(|f| f.file_name.as_str()));
            acc
        });
    let mut loaded = IndexFiles::default();
    let mut messages = Vec::new();
    let built: Result<()> = async {
        for b in live_buckets(table, snapshot_id, wanted.keys()).await? {
            let Some(names) = wanted.get(&(b.partition.clone(), b.bucket)) else {
                continue;
            };
            let mut m = CommitMessage::new(b.partition.clone(), b.bucket, b.total_buckets);
            for e in b
                .files
                .iter()
                .filter(|e| names.contains(e.file.file_name.as_str()))
            {
                if e.file.schema_id > table.schema().id {
                    return Err(Error::CommitConflict(format!(
                        "data file {} of bucket {} was written with schema {}, newer than the schema {} of this \
                         change: rewriting its rows would drop what changed since; run the change again on the \
                         table opened now",
                        e.file.file_name,
                        b.bucket,
                        e.file.schema_id,
                        table.schema().id
                    )));
                }
                m.deleted_files.push(e.file.clone());
            }
            m.base_snapshot = Some(snapshot_id);
            // last: the message is kept (and its index file deleted on a failure) once written
            (m.new_index_files, m.deleted_index_files) =
                replace_vectors(table, &b, BTreeMap::new(), names, &mut loaded).await?;
            messages.push(m);
        }
        let found: usize = messages.iter().map(|m| m.deleted_files.len()).sum();
        let expected: usize = wanted.values().map(HashSet::len).sum();
        if found != expected {
            return Err(Error::invalid(format!(
                "{} of the {expected} files of the splits are not live in snapshot {snapshot_id}",
                expected - found
            )));
        }
        Ok(())
    }
    .await;
    written_or_forgotten(table, built, messages).await
}
