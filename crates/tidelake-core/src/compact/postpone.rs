//! Compaction of postpone-bucket tables (`bucket = -2`): moving the rows of the postpone
//! bucket into real buckets (Java 1.3.1 `CompactAction.buildForPostponeBucketCompaction` with
//! `PostponeBucketCompactSplitSource`, `RemovePostponeBucketFilesOperator` and
//! `PostponeBucketCommittableRewriter`).
//!
//! ```text
//!  latest snapshot ─► per partition: its postpone files, oldest `_CREATION_TIME` first
//!        ─► each file's rows in file order, row kinds kept, no merge
//!        ─► a fixed-bucket writer (`TableWrite::into_real_buckets`): a partition keeps the
//!           bucket count of its real buckets, else `postpone.default-bucket-num`; sequence
//!           numbers continue each bucket's, one per row in replay order (later writes win),
//!           and the writer compacts the buckets it fills as any writer does
//!        ─► one COMPACT snapshot: the postpone files before; the written files (Java moves
//!           them from new files to compact-after) and the writer's compactions
//! ```
//!
//! Invariants: the replay order is Java's for a single reader (Java keeps the order within each
//! writer's files; across writers it has none); a postpone file is read and removed by the
//! same commit, so rows written concurrently (new postpone files) stay for the next compaction,
//! and a concurrent compaction that removed the same files makes this commit fail
//! ([`Error::CommitConflict`]) without losing anything. On any failure the files written here
//! are deleted, except after a storage error during the commit (the outcome is unknown).

use std::collections::HashSet;
use std::sync::Arc;

use futures::TryStreamExt;
use tidelake_spec::manifest::DataFileMeta;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use super::inline::inline_compaction;
use super::job::{inputs_gone, BucketReport};
use super::rewriter::delete_files;
use crate::commit::{CommitMessage, Committed, FileStoreCommit};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::TableLayout;
use crate::read::split_read::ReadContext;
use crate::scan::split::SplitFile;
use crate::state::{LiveFiles, Pruning};
use crate::table::Table;
use crate::write::postpone::POSTPONE_BUCKET;
use crate::write::table_write::TableWrite;

/// The postpone files of one partition.
struct Postponed {
    partition: Vec<u8>,
    bucket_dir: String,
    files: Vec<DataFileMeta>,
}

/// What [`redistribute`] committed.
pub(crate) struct Redistributed {
    /// The COMPACT snapshot, none when no partition selected by the caller had postponed rows.
    pub committed: Committed,
    /// One entry per changed (partition, bucket), the postpone bucket included.
    pub buckets: Vec<BucketReport>,
}

/// Move the postponed rows of the partitions `selected` accepts into real buckets and commit
/// that as one COMPACT snapshot (see the module docs).
pub(crate) async fn redistribute(
    table: &Table,
    selected: impl Fn(&[Vec<u8>]) -> Result<HashSet<Vec<u8>>>,
) -> Result<Redistributed> {
    let schema = table.schema().clone();
    let spec = |e| Error::from_spec("table options", e);
    let default_buckets = schema
        .options()
        .postpone_default_bucket_num()
        .map_err(spec)?;
    if default_buckets <= 0 {
        return Err(Error::invalid(format!(
            "postpone.default-bucket-num must be positive, got {default_buckets}"
        )));
    }
    let mut write =
        TableWrite::into_real_buckets(table.clone(), default_buckets, inline_compaction).await?;
    let nothing = Redistributed {
        committed: Committed::default(),
        buckets: Vec::new(),
    };
    // The snapshot the writer restored its sequence numbers and bucket counts from.
    let Some(base) = write.base_snapshot().filter(|&id| id > 0) else {
        return Ok(nothing);
    };
    let layout = TableLayout::new(&schema)?;
    let sm = table.snapshot_manager();
    let mut postponed = match postponed_files(table, &layout, base).await {
        Ok(p) => p,
        Err(e) => return Err(inputs_gone(&sm, Some(base), e).await),
    };
    let partitions: Vec<Vec<u8>> = postponed.iter().map(|p| p.partition.clone()).collect();
    let chosen = selected(&partitions)?;
    postponed.retain(|p| chosen.contains(&p.partition));
    if postponed.is_empty() {
        return Ok(nothing);
    }
    let read = Arc::new(ReadContext::whole_rows(table.clone(), &schema)?);
    let replayed = replay(&mut write, &read, &postponed).await;
    let messages = match replayed {
        Ok(()) => write.prepare_commit().await,
        Err(e) => Err(inputs_gone(&sm, Some(base), e).await),
    };
    let mut messages = match messages {
        Ok(m) => m,
        Err(e) => {
            // Already failing: cleanup errors are secondary to `e`.
            let _ = write.abort().await;
            return Err(e);
        }
    };
    let mut written = Vec::new();
    for m in &mut messages {
        match as_compaction(table, &layout, m).await {
            Ok(files) => written.push(files),
            Err(e) => {
                // Already failing: cleanup errors are secondary to `e`.
                for m in &messages {
                    if let Ok(dir) = layout
                        .decode_partition(&m.partition)
                        .and_then(|v| layout.bucket_path(&v, m.bucket))
                    {
                        let ours: Vec<DataFileMeta> = m
                            .new_files
                            .iter()
                            .chain(&m.changelog_files)
                            .cloned()
                            .collect();
                        let _ = delete_files(table, &dir, &ours).await;
                    }
                }
                for (dir, files) in &written {
                    let _ = delete_files(table, dir, files).await;
                }
                return Err(e);
            }
        }
    }
    for p in &postponed {
        let mut m = CommitMessage::new(p.partition.clone(), POSTPONE_BUCKET, POSTPONE_BUCKET);
        m.base_snapshot = Some(base);
        m.compact_before = p.files.clone();
        messages.push(m);
    }
    let buckets = messages
        .iter()
        .map(|m| report(&layout, m))
        .collect::<Result<Vec<_>>>()?;
    let user = format!("tidelake-compact-{}", table.env().uuid());
    let outcome = match FileStoreCommit::new(table.clone(), user) {
        Ok(commit) => {
            commit
                .commit_reporting(messages, BATCH_COMMIT_IDENTIFIER, &[])
                .await
        }
        Err(e) => Err(e),
    };
    match outcome {
        Ok(outcome) => Ok(Redistributed {
            committed: outcome.committed,
            buckets,
        }),
        Err(e) => {
            if e.kind() != ErrorKind::Io {
                for (dir, files) in &written {
                    // Already failing: cleanup errors are secondary to `e`.
                    let _ = delete_files(table, dir, files).await;
                }
            }
            Err(e)
        }
    }
}

/// The live postpone files of snapshot `id` per partition, each partition's oldest first
/// (stable: files created in the same millisecond keep their manifest order, as in Java).
async fn postponed_files(table: &Table, layout: &TableLayout, id: i64) -> Result<Vec<Postponed>> {
    let snap = table.snapshot_manager().snapshot(id).await?;
    let live = LiveFiles::read(
        table,
        &snap,
        Pruning::all().buckets(|b| b == POSTPONE_BUCKET),
    )
    .await?;
    // One postpone bucket per partition: one bucket of live files is one partition.
    let mut out = Vec::with_capacity(live.buckets().len());
    for b in live.into_buckets() {
        let values = layout.decode_partition(&b.partition)?;
        out.push(Postponed {
            bucket_dir: layout.bucket_path(&values, POSTPONE_BUCKET)?,
            partition: b.partition,
            files: b.files.into_iter().map(|e| e.file).collect(),
        });
    }
    for p in &mut out {
        p.files.sort_by_key(|f| f.creation_time);
    }
    Ok(out)
}

/// Write every postponed row into `write`, file after file, in file order.
async fn replay(
    write: &mut TableWrite,
    read: &Arc<ReadContext>,
    postponed: &[Postponed],
) -> Result<()> {
    for p in postponed {
        for f in &p.files {
            let path = f.path(&p.bucket_dir);
            let (mut rows, _) = read.positioned_rows(&SplitFile::new(path, f, None)).await?;
            while let Some(kv) = rows.try_next().await? {
                // `[_SEQUENCE_NUMBER, _VALUE_KIND, columns...]`: the stored sequence is -1.
                let values = kv
                    .project(&(2..kv.num_columns()).collect::<Vec<_>>())
                    .map_err(|e| Error::arrow("replaying postponed rows", e))?;
                write.write_rows(&values, kv.column(1).clone()).await?;
            }
        }
    }
    Ok(())
}

/// Turn a writer's message into the compaction Java's `PostponeBucketCommittableRewriter`
/// makes of it: its new files become compact-after files (new files that its own compaction
/// already rewrote are dropped from both lists and deleted), its changelog the compaction's.
/// Returns the bucket directory and every file the commit may leave unreferenced on failure.
async fn as_compaction(
    table: &Table,
    layout: &TableLayout,
    m: &mut CommitMessage,
) -> Result<(String, Vec<DataFileMeta>)> {
    let values = layout.decode_partition(&m.partition)?;
    let dir = layout.bucket_path(&values, m.bucket)?;
    let new_files = std::mem::take(&mut m.new_files);
    let is_new = |f: &DataFileMeta| new_files.iter().any(|n| n.file_name == f.file_name);
    let (consumed, before): (Vec<DataFileMeta>, Vec<DataFileMeta>) =
        std::mem::take(&mut m.compact_before)
            .into_iter()
            .partition(|f| is_new(f));
    let is_consumed = |f: &DataFileMeta| consumed.iter().any(|c| c.file_name == f.file_name);
    let mut after: Vec<DataFileMeta> = new_files
        .iter()
        .filter(|f| !is_consumed(f))
        .cloned()
        .collect();
    after.append(&mut m.compact_after);
    // A compaction may move a file up a level unchanged: then it is in both lists.
    let orphaned: Vec<DataFileMeta> = consumed
        .iter()
        .filter(|c| !after.iter().any(|a| a.file_name == c.file_name))
        .cloned()
        .collect();
    delete_files(table, &dir, &orphaned).await?;
    m.compact_after = after;
    m.compact_changelog
        .splice(0..0, std::mem::take(&mut m.changelog_files));
    // Files the table had before (moved up a level unchanged) are not ours to delete.
    let mut written: Vec<DataFileMeta> = m
        .compact_after
        .iter()
        .filter(|f| !before.iter().any(|b| b.file_name == f.file_name))
        .cloned()
        .collect();
    written.extend(m.compact_changelog.iter().cloned());
    m.compact_before = before;
    Ok((dir, written))
}

fn report(layout: &TableLayout, m: &CommitMessage) -> Result<BucketReport> {
    let values = layout.decode_partition(&m.partition)?;
    let bytes = |files: &[DataFileMeta]| files.iter().map(|f| f.file_size).sum();
    Ok(BucketReport {
        partition: layout.partition_spec(&values)?,
        bucket: m.bucket,
        output_level: m.compact_after.iter().map(|f| f.level).max().unwrap_or(0),
        files_before: m.compact_before.len(),
        files_after: m.compact_after.len(),
        bytes_before: bytes(&m.compact_before),
        bytes_after: bytes(&m.compact_after),
        upgraded: 0,
    })
}
