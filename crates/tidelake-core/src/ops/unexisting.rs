//! Removing the data files a table's latest snapshot lists but storage lacks (Java
//! `ListUnexistingFiles` and the `remove_unexisting_files` procedure), so that a table whose
//! files were lost (deleted by hand, a bucket policy, a failed copy) reads again, without the
//! lost rows.
//!
//! [`unexisting_files`] lists them: the live data files of the latest snapshot (every level)
//! that are not in a listing of their bucket directory (one listing per bucket), or, for files
//! at an external path, that storage says do not exist. [`remove_unexisting_files`] commits
//! their removal as Java does: one commit (identifier `Long.MAX_VALUE`) of messages whose
//! `deletedFiles` are those files, which Java and tidelake commit as an OVERWRITE snapshot with
//! conflict checks, then runs the commit's hooks.
//!
//! Invariants: nothing is removed that storage holds; a file compacted or removed by another
//! commit since the listing makes the commit fail with a conflict rather than delete a file
//! twice. Index files (deletion vectors, hash indexes) are not checked, as Java does not.

use std::collections::{BTreeMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::manifest::DataFileMeta;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER;

use crate::commit::{CommitMessage, Committed, FileStoreCommit};
use crate::error::Result;
use crate::layout::TableLayout;
use crate::state::{LiveFiles, Pruning};
use crate::table::Table;

use super::after_commit;

/// How many external-path files are checked at once.
const CONCURRENCY: usize = 16;

/// One live data file storage lacks.
#[derive(Debug, Clone)]
pub struct UnexistingFile {
    /// The file as errors name it (full path or URL).
    pub path: String,
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    pub file: DataFileMeta,
}

/// The live data files of `table`'s latest snapshot that storage lacks (see the module docs),
/// in bucket order; none for a table without snapshots.
pub async fn unexisting_files(table: &Table) -> Result<Vec<UnexistingFile>> {
    let Some(latest) = table.snapshot_manager().latest().await? else {
        return Ok(Vec::new());
    };
    let layout = TableLayout::new(table.schema())?;
    let live = LiveFiles::read(table, &latest, Pruning::all()).await?;
    let io = table.io();
    let mut out = Vec::new();
    for bucket in live.buckets() {
        let dir =
            layout.bucket_path(&layout.decode_partition(&bucket.partition)?, bucket.bucket)?;
        let listed: HashSet<String> = io
            .list_recursive(&dir)
            .await?
            .into_iter()
            .map(|f| f.path)
            .collect();
        let missing = |rel: &str, file: &DataFileMeta| UnexistingFile {
            path: io.display(rel),
            partition: bucket.partition.clone(),
            bucket: bucket.bucket,
            total_buckets: bucket.total_buckets,
            file: file.clone(),
        };
        let mut external = Vec::new();
        for e in &bucket.files {
            let rel = e.file.path(&dir);
            if e.file.external_path.is_some() {
                external.push((rel, e.file.clone()));
            } else if !listed.contains(&rel) {
                out.push(missing(&rel, &e.file));
            }
        }
        let checked: Vec<(String, DataFileMeta, bool)> =
            stream::iter(external.into_iter().map(|(rel, file)| async move {
                io.exists(&rel).await.map(|found| (rel, file, found))
            }))
            .buffered(CONCURRENCY)
            .try_collect()
            .await?;
        for (rel, file, found) in checked {
            if !found {
                out.push(missing(&rel, &file));
            }
        }
    }
    Ok(out)
}

/// Remove [`unexisting_files`] from `table` in one commit (see the module docs); the files
/// removed and the snapshot that removed them (nothing is committed when none is missing).
pub async fn remove_unexisting_files(table: &Table) -> Result<(Vec<UnexistingFile>, Committed)> {
    let missing = unexisting_files(table).await?;
    if missing.is_empty() {
        return Ok((missing, Committed::default()));
    }
    let mut messages: BTreeMap<(Vec<u8>, i32), CommitMessage> = BTreeMap::new();
    for f in &missing {
        messages
            .entry((f.partition.clone(), f.bucket))
            .or_insert_with(|| CommitMessage::new(f.partition.clone(), f.bucket, f.total_buckets))
            .deleted_files
            .push(f.file.clone());
    }
    let committed = FileStoreCommit::new(table.clone(), table.env().uuid_string())?
        .commit_reporting(
            messages.into_values().collect(),
            BATCH_COMMIT_IDENTIFIER,
            &[],
        )
        .await?
        .committed;
    after_commit(table, &committed.ids()).await?;
    Ok((missing, committed))
}
