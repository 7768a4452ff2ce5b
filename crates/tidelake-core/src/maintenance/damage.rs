//! Damage that stops a table from being read or written, and the way back: newest snapshot
//! files that do not decode, and files the newest readable snapshot references that storage
//! lacks or holds at another size (`tidelake doctor`).
//!
//! Snapshots are checked newest first against one listing of the table directory; the first
//! one whose metadata decodes and whose files are all there at their recorded sizes is the
//! last good snapshot, the one `rollback` can return the table to (it removes damaged newer
//! snapshot files too). At most [`MAX_CHECKED`] snapshots are checked.
//!
//! Invariant: nothing is written or deleted. Files outside the table directory (external data
//! paths) are not checked.

use std::collections::HashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::layout::TableLayout;
use crate::state::{IndexPaths, LiveFiles, Pruning};
use crate::table::Table;

/// How many snapshots, newest first, are checked for a good one.
pub const MAX_CHECKED: usize = 100;

/// What is wrong with a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// Storage does not have it.
    Missing,
    /// Storage holds it at another size than its metadata records.
    Size,
    /// It is there but does not decode (a snapshot, manifest list or manifest).
    Undecodable,
}

/// One damaged or missing file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file, as errors name it (full path or URL).
    pub path: String,
    pub reason: String,
    pub kind: ProblemKind,
    /// The snapshot whose check found it first (newest first).
    pub snapshot: i64,
}

/// What [`find_damage`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Problems of the snapshots newer than the last good one, newest first.
    pub problems: Vec<Problem>,
    /// The newest snapshot whose metadata and files are all there (`None`: none of the
    /// snapshots checked, or the table has none).
    pub last_good: Option<i64>,
    /// The newest snapshot id (`None`: the table has no snapshots).
    pub latest: Option<i64>,
}

impl Damage {
    /// Whether the latest snapshot is readable with all its files.
    pub fn is_healthy(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The damage of `table`'s branch, and its last good snapshot; see the module docs.
pub async fn find_damage(table: &Table) -> Result<Damage> {
    let sm = table.snapshot_manager();
    let ids = sm.list_ids().await?;
    let sizes: HashMap<String, u64> = table
        .io()
        .list_recursive("")
        .await?
        .into_iter()
        .map(|f| (f.path, f.size))
        .collect();
    let layout = TableLayout::new(table.schema())?;
    let mut damage = Damage {
        latest: ids.last().copied(),
        ..Damage::default()
    };
    for &id in ids.iter().rev().take(MAX_CHECKED) {
        let mut found = match sm.snapshot(id).await {
            Ok(snap) => {
                match LiveFiles::read(table, &snap, Pruning::all().with_index_files()).await {
                    Ok(live) => missing_files(table, &layout, &live, &sizes)?,
                    Err(e) => vec![problem(e)?],
                }
            }
            Err(e) if e.is_missing() => continue, // expired meanwhile
            Err(e) => vec![problem(e)?],
        };
        if found.is_empty() {
            damage.last_good = Some(id);
            break;
        }
        for p in &mut found {
            p.snapshot = id;
        }
        for p in found {
            if !damage
                .problems
                .iter()
                .any(|q| q.path == p.path && q.reason == p.reason)
            {
                damage.problems.push(p);
            }
        }
    }
    Ok(damage)
}

/// A missing or undecodable file as a problem (its snapshot left for the caller to set); any
/// other error is returned.
pub(crate) fn problem(e: Error) -> Result<Problem> {
    let problem = |path: String, reason: String, kind| Problem {
        path,
        reason,
        kind,
        snapshot: 0,
    };
    if let Some(path) = e.missing_file() {
        return Ok(problem(
            path.to_string(),
            "missing".to_string(),
            ProblemKind::Missing,
        ));
    }
    match e {
        Error::Corrupt { path, reason } => Ok(problem(path, reason, ProblemKind::Undecodable)),
        e if e.kind() == ErrorKind::NotFound => {
            Ok(problem(String::new(), e.to_string(), ProblemKind::Missing))
        }
        e if e.kind() == ErrorKind::Corrupt => Ok(problem(
            String::new(),
            e.to_string(),
            ProblemKind::Undecodable,
        )),
        e => Err(e),
    }
}

/// The data and index files of `live` that `sizes` (path relative to the table root -> size)
/// lacks or holds at another size than recorded.
fn missing_files(
    table: &Table,
    layout: &TableLayout,
    live: &LiveFiles,
    sizes: &HashMap<String, u64>,
) -> Result<Vec<Problem>> {
    let paths = IndexPaths::new(table.schema())?;
    let mut out = Vec::new();
    let mut check = |rel: String, recorded: i64| {
        let (reason, kind) = match sizes.get(&rel) {
            None => ("missing".to_string(), ProblemKind::Missing),
            Some(&size) if i64::try_from(size).ok() != Some(recorded) => (
                format!("{size} bytes where {recorded} were written"),
                ProblemKind::Size,
            ),
            Some(_) => return,
        };
        out.push(Problem {
            path: table.io().display(&rel),
            reason,
            kind,
            snapshot: 0,
        });
    };
    for bucket in live.buckets() {
        let dir =
            layout.bucket_path(&layout.decode_partition(&bucket.partition)?, bucket.bucket)?;
        for e in bucket
            .files
            .iter()
            .filter(|e| e.file.external_path.is_none())
        {
            check(e.file.path(&dir), e.file.file_size);
        }
        for index in bucket.dv_index.iter().chain(&bucket.hash_index) {
            if index.external_path.is_none() {
                check(paths.path(&dir, index), index.file_size);
            }
        }
    }
    Ok(out)
}
