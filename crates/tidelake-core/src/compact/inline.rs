//! Compaction inside a writer's commit (Java `MergeTreeWriter` asking its
//! `MergeTreeCompactManager` to `triggerCompaction(false)` after each flush, unless
//! `write-only`): the buckets a commit writes are compacted when their sorted runs call for
//! it, and the result travels in the same commit messages as `compact_before`/`compact_after`,
//! so the commit makes an APPEND snapshot and then a COMPACT one (Java does the same).
//!
//! The bucket's levels are the latest snapshot's live files plus the message's new level-0
//! files. Nothing happens for append tables, `write-only` tables, and tables whose compaction
//! tidelake does not support (changelog produced by compaction). A failure deletes whatever
//! the compaction wrote and leaves the messages unchanged.

use std::collections::HashSet;

use super::job::Compactor;
use super::levels::LevelFile;
use crate::commit::CommitMessage;
use crate::error::{Error, ErrorKind, Result};
use crate::table::Table;

/// Add inline compaction results of the buckets `messages` write to `messages`.
pub async fn compact_new_files(table: &Table, messages: &mut [CommitMessage]) -> Result<()> {
    let opts = table.schema().options();
    let write_only = opts.write_only().map_err(|e| Error::from_spec("table options", e))?;
    if table.schema().primary_keys.is_empty() || write_only {
        return Ok(());
    }
    let touched: HashSet<(Vec<u8>, i32)> = messages
        .iter()
        .filter(|m| !m.new_files.is_empty() && m.bucket != -2)
        .map(|m| (m.partition.clone(), m.bucket))
        .collect();
    if touched.is_empty() {
        return Ok(());
    }
    let compactor = match Compactor::new(table.clone()) {
        Ok(c) => c,
        Err(e) if e.kind() == ErrorKind::Unsupported => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut buckets = match table.snapshot_manager().latest().await? {
        Some(snap) => {
            compactor
                .live_buckets(&snap, |p, b| touched.contains(&(p.to_vec(), b)))
                .await?
        }
        None => Vec::new(),
    };
    let mut work = Vec::new();
    for m in messages.iter().filter(|m| touched.contains(&(m.partition.clone(), m.bucket))) {
        let position = buckets
            .iter()
            .position(|b| b.partition == m.partition && b.bucket == m.bucket);
        let mut bucket = match position {
            Some(i) => buckets.swap_remove(i),
            None => compactor.empty_bucket(&m.partition, m.bucket, m.total_buckets)?,
        };
        for f in &m.new_files {
            bucket.files.push(LevelFile {
                meta: f.clone(),
                path: format!("{}/{}", bucket.bucket_dir, f.file_name),
                deletion: None,
            });
        }
        if let Some(task) = compactor.pick(&bucket.files, false)? {
            work.push((bucket, task));
        }
    }
    for done in compactor.rewrite_all(work).await? {
        let b = &done.bucket;
        if let Some(m) = messages
            .iter_mut()
            .find(|m| m.partition == b.partition && m.bucket == b.bucket)
        {
            let compacted = done.message();
            m.compact_before.extend(compacted.compact_before);
            m.compact_after.extend(compacted.compact_after);
            m.compact_deleted_index_files
                .extend(compacted.compact_deleted_index_files);
        }
    }
    Ok(())
}
