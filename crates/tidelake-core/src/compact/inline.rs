//! Compaction inside writers (Java `MergeTreeWriter` with `MergeTreeCompactManager`): at
//! `prepare_commit`, each bucket a writer wrote to is compacted when its sorted runs — the
//! latest snapshot's live files plus the new level-0 files — call for it (the table's pick,
//! as [`Compactor::compact`] without `full`), and the result joins the bucket's message as
//! its `CompactIncrement`.
//!
//! Committing such a message lands the new files first (APPEND), then the compaction
//! (COMPACT); a compaction that lost its inputs to a concurrent commit is dropped by the commit
//! while the write stays landed. Off with `write-only=true` and for overwrite writers.
//!
//! Failure: compaction in a writer is best effort. A failed compaction deletes what it wrote
//! and leaves the messages as they were, so it never fails the write; the next commit or a
//! dedicated compaction tries again. Not implemented: Java's asynchronous compaction and
//! its write stall at `num-sorted-run.stop-trigger` (tidelake compacts synchronously at
//! `prepare_commit`, so runs never pile up past the trigger across commits).

use std::collections::HashMap;

use super::job::{Bucket, Compactor};
use super::levels::LevelFile;
use crate::commit::CommitMessage;
use crate::error::Result;

/// Compact the buckets `messages` add files to and put each result into its message; on
/// failure `messages` are unchanged (see the module docs).
pub(crate) async fn compact_written(compactor: &Compactor, messages: &mut [CommitMessage]) {
    // Best effort by design: a failure only means no compaction this time.
    if let Ok(results) = compactions(compactor, messages).await {
        for (i, compacted) in results {
            let m = &mut messages[i];
            m.compact_before = compacted.compact_before;
            m.compact_after = compacted.compact_after;
            m.compact_changelog = compacted.compact_changelog;
            m.compact_new_index_files = compacted.compact_new_index_files;
            m.compact_deleted_index_files = compacted.compact_deleted_index_files;
        }
    }
}

/// The compaction message of each message's bucket that needs one, by message position.
async fn compactions(
    compactor: &Compactor,
    messages: &[CommitMessage],
) -> Result<Vec<(usize, CommitMessage)>> {
    let live = match compactor.table().snapshot_manager().latest().await? {
        Some(snap) => compactor.live_buckets(&snap).await?,
        None => Vec::new(),
    };
    let mut live: HashMap<(Vec<u8>, i32), Bucket> = live
        .into_iter()
        .map(|b| ((b.partition.clone(), b.bucket), b))
        .collect();
    let mut work = Vec::new();
    let mut positions = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        // the postpone bucket (-2) is never compacted here
        if m.bucket == -2 || m.new_files.is_empty() || !m.compact_before.is_empty() || !m.compact_after.is_empty() {
            continue;
        }
        let mut bucket = match live.remove(&(m.partition.clone(), m.bucket)) {
            Some(b) => b,
            None => compactor.empty_bucket(&m.partition, m.bucket, m.total_buckets)?,
        };
        bucket.files.extend(m.new_files.iter().map(|f| LevelFile {
            path: format!("{}/{}", bucket.bucket_dir, f.file_name),
            meta: f.clone(),
            deletion: None,
        }));
        if let Some(task) = compactor.pick(&bucket.files, false)? {
            positions.insert((m.partition.clone(), m.bucket), i);
            work.push((bucket, task));
        }
    }
    let done = compactor.rewrite_all(work, None).await?;
    Ok(done
        .iter()
        .filter_map(|d| {
            let at = positions.get(&(d.bucket.partition.clone(), d.bucket.bucket))?;
            Some((*at, d.message()))
        })
        .collect())
}
