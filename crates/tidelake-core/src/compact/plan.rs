//! Compaction as plan -> task -> commit (the shape of lance's `optimize.rs`; Java: a dedicated
//! compaction job whose per-bucket compactions return `CommitMessage`s to one committer).
//!
//! ```text
//!  Compactor::plan(request)      one snapshot → CompactionPlan { tasks: one per (partition, bucket) }
//!  CompactionTask::to_bytes      → any process → CompactionTask::from_bytes
//!  Compactor::run_task(task)     rewrite the task's unit → one CommitMessage (bytes: to_bytes)
//!  Compactor::commit_plan(plan, messages)  one COMPACT snapshot (FileStoreCommit's checks)
//! ```
//!
//! A task carries everything a worker needs: the table (location, branch; storage options are
//! the worker's own), the schema id it was planned with, the bucket (partition, bucket, bucket
//! directory, every live file with its path and deletion vector, the bucket's deletion-vector
//! index files, the snapshot they were listed from) and the unit picked on it (input files,
//! the files below its output for lookup, output and max level, drop-delete). Its byte form is
//! a versioned JSON envelope; file metadata travels as the manifest Avro codec (as in
//! [`CommitMessage::to_bytes`]), so every field survives exactly.
//!
//! Invariants:
//! * a task runs only on the table, branch and schema it was planned on (else
//!   [`Error::CommitConflict`] for a changed schema, [`Error::Invalid`] for another table);
//! * [`Compactor::commit_plan`] takes exactly one message per task, each matching its task's
//!   bucket, base snapshot and inputs, and only compaction changes: a retried worker's second
//!   result, a message of another plan or a write is [`Error::Invalid`], so a plan commits at
//!   most once whatever its workers did;
//! * inputs removed by a concurrent commit after the plan make the commit a
//!   [`Error::CommitConflict`] (and inputs expired before a task ran make the task one,
//!   [`super::job::inputs_gone`]); the files of a plan that did not commit are deleted by the
//!   committer, except after a storage error (outcome unknown). Files of a task attempt whose
//!   result was dropped (a retried Spark task) are orphans, never committed.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use tidelake_spec::manifest::DataFileMeta;

use super::job::{joined, Bucket, BucketReport, Compactor};
use super::rewriter::UnitTask;
use crate::commit::{CommitMessage, Committed};
use crate::error::{Error, Result};
use crate::lsm::levels::LevelFile;
use crate::scan::split::DeletionFileRef;
use crate::table::Table;
use crate::write::message::{
    data_files_from_hex, data_files_hex, from_hex, index_files_from_hex, index_files_hex, to_hex,
};

/// Version of the byte form written by [`CompactionTask::to_bytes`].
pub const COMPACTION_TASK_VERSION: u32 = 1;

/// The compaction of one snapshot: its tasks, and what was committed while planning.
#[derive(Debug, Clone)]
pub struct CompactionPlan {
    /// The snapshot the tasks were picked on (`None`: the table had none).
    pub snapshot_id: Option<i64>,
    pub tasks: Vec<CompactionTask>,
    /// Postpone-bucket tables: the COMPACT snapshot that moved postponed rows into real
    /// buckets while planning (already committed; none when nothing moved), and its buckets.
    pub moved_commit: Committed,
    pub moved: Vec<BucketReport>,
}

/// The compaction of one (partition, bucket): runs in any process ([`Compactor::run_task`]).
#[derive(Debug, Clone)]
pub struct CompactionTask {
    /// Root of the table (as [`Table::location`]).
    pub location: String,
    pub branch: String,
    /// The schema the task was planned with.
    pub schema_id: i64,
    pub(crate) bucket: Bucket,
    pub(crate) unit: UnitTask,
}

/// The JSON envelope of the byte form (see the module docs).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    version: u32,
    location: String,
    branch: String,
    schema_id: i64,
    partition: String,
    bucket: i32,
    total_buckets: i32,
    bucket_dir: String,
    base_snapshot: Option<i64>,
    /// Hex of an Avro manifest of every live file of the bucket.
    files: String,
    /// Per file of `files`: its path and deletion vector.
    paths: Vec<String>,
    deletions: Vec<Option<DeletionFileRef>>,
    /// Hex of an Avro index manifest of the bucket's deletion-vector index files.
    dv_index: String,
    output_level: i32,
    max_level: i32,
    whole_levels: bool,
    drop_delete: bool,
    /// Positions in `files` of the unit's inputs and of the files below its output.
    unit_files: Vec<usize>,
    deeper: Vec<usize>,
}

impl CompactionTask {
    pub fn partition(&self) -> &[u8] {
        &self.bucket.partition
    }

    pub fn bucket(&self) -> i32 {
        self.bucket.bucket
    }

    /// Files the task rewrites or moves.
    pub fn input_files(&self) -> impl Iterator<Item = &DataFileMeta> {
        self.unit.files.iter().map(|f| &f.meta)
    }

    /// The versioned byte form (see the module docs).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let b = &self.bucket;
        let position: HashMap<&str, usize> = b
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.meta.file_name.as_str(), i))
            .collect();
        let positions = |files: &[LevelFile]| {
            files
                .iter()
                .map(|f| {
                    position
                        .get(f.meta.file_name.as_str())
                        .copied()
                        .ok_or_else(|| {
                            Error::invalid(format!(
                                "{} is not a file of the task's bucket",
                                f.meta.file_name
                            ))
                        })
                })
                .collect::<Result<Vec<usize>>>()
        };
        let envelope = Envelope {
            version: COMPACTION_TASK_VERSION,
            location: self.location.clone(),
            branch: self.branch.clone(),
            schema_id: self.schema_id,
            partition: to_hex(&b.partition),
            bucket: b.bucket,
            total_buckets: b.total_buckets,
            bucket_dir: b.bucket_dir.clone(),
            base_snapshot: b.base_snapshot,
            files: data_files_hex(
                &b.partition,
                b.bucket,
                b.total_buckets,
                b.files.iter().map(|f| &f.meta),
            )?,
            paths: b.files.iter().map(|f| f.path.clone()).collect(),
            deletions: b.files.iter().map(|f| f.deletion.clone()).collect(),
            dv_index: index_files_hex(&b.partition, b.bucket, b.dv_index.iter())?,
            output_level: self.unit.output_level,
            max_level: self.unit.max_level,
            whole_levels: self.unit.whole_levels,
            drop_delete: self.unit.drop_delete,
            unit_files: positions(&self.unit.files)?,
            deeper: positions(&self.unit.deeper)?,
        };
        crate::versioned::encode(&envelope, "compaction task")
    }

    /// Decode [`CompactionTask::to_bytes`] output; other versions and malformed input are
    /// [`Error::Invalid`].
    pub fn from_bytes(bytes: &[u8]) -> Result<CompactionTask> {
        let invalid =
            |reason: String| Error::invalid(format!("not a tidelake compaction task: {reason}"));
        let e: Envelope =
            crate::versioned::decode(bytes, "compaction task", COMPACTION_TASK_VERSION)?;
        let partition =
            from_hex(&e.partition).ok_or_else(|| invalid("bad partition hex".to_string()))?;
        let metas = data_files_from_hex(&e.files).map_err(invalid)?;
        if metas.len() != e.paths.len() || metas.len() != e.deletions.len() {
            return Err(invalid(
                "file, path and deletion-vector counts differ".to_string(),
            ));
        }
        let files: Vec<LevelFile> = metas
            .into_iter()
            .zip(e.paths)
            .zip(e.deletions)
            .map(|((meta, path), deletion)| LevelFile {
                meta,
                path,
                deletion,
            })
            .collect();
        let pick = |positions: &[usize]| {
            positions
                .iter()
                .map(|&i| {
                    files
                        .get(i)
                        .cloned()
                        .ok_or_else(|| invalid(format!("file position {i} out of range")))
                })
                .collect::<Result<Vec<LevelFile>>>()
        };
        let unit = UnitTask {
            output_level: e.output_level,
            max_level: e.max_level,
            files: pick(&e.unit_files)?,
            whole_levels: e.whole_levels,
            drop_delete: e.drop_delete,
            deeper: pick(&e.deeper)?,
        };
        let bucket = Bucket {
            partition,
            bucket: e.bucket,
            total_buckets: e.total_buckets,
            bucket_dir: e.bucket_dir,
            files,
            dv_index: index_files_from_hex(&e.dv_index).map_err(invalid)?,
            base_snapshot: e.base_snapshot,
        };
        Ok(CompactionTask {
            location: e.location,
            branch: e.branch,
            schema_id: e.schema_id,
            bucket,
            unit,
        })
    }
}

impl Compactor {
    /// The plan of the buckets of snapshot `snapshot_id` (their live files): one task per
    /// bucket whose pick (full or by strategy) has a unit.
    pub(crate) fn plan_buckets(
        &self,
        snapshot_id: Option<i64>,
        buckets: Vec<Bucket>,
        full: bool,
    ) -> Result<CompactionPlan> {
        let table = self.table();
        let mut tasks = Vec::new();
        for bucket in buckets {
            if let Some(unit) = self.pick(&bucket.files, full)? {
                tasks.push(CompactionTask {
                    location: table.location().to_string(),
                    branch: table.branch().to_string(),
                    schema_id: table.schema().id,
                    bucket,
                    unit,
                });
            }
        }
        Ok(CompactionPlan {
            snapshot_id,
            tasks,
            moved_commit: Committed::default(),
            moved: Vec::new(),
        })
    }

    /// Run `task` (planned on this compactor's table) and return its commit message (empty
    /// when every input stays where it is); on error nothing it wrote remains.
    pub async fn run_task(&self, task: &CompactionTask) -> Result<CommitMessage> {
        check_table(self.table(), task)?;
        let done = joined(self.spawn_unit(task.bucket.clone(), task.unit.clone())).await?;
        Ok(done.message())
    }

    /// Commit the messages of `plan`'s tasks as one COMPACT snapshot (none when none changed
    /// anything); see the module docs for what is accepted. On a known commit failure the
    /// messages' new files are deleted.
    pub async fn commit_plan(
        &self,
        plan: &CompactionPlan,
        messages: Vec<CommitMessage>,
    ) -> Result<Committed> {
        for task in &plan.tasks {
            check_table(self.table(), task)?;
        }
        check_results(plan, &messages)?;
        let (rewritten, written) = messages.iter().fold((0, 0), |(before, after), m| {
            (
                before + m.compact_before.len(),
                after + m.compact_after.len(),
            )
        });
        let committed = self.commit(messages).await?;
        if let Some(id) = committed.last_id() {
            log::info!(
                target: "tidelake.compact",
                "{}: compacted {} bucket(s) into snapshot {id}: {rewritten} file(s) rewritten into {written}",
                self.table().location(),
                plan.tasks.len()
            );
        }
        Ok(committed)
    }
}

/// `task` belongs to `table` as opened now.
fn check_table(table: &Table, task: &CompactionTask) -> Result<()> {
    if task.location != table.location() || task.branch != table.branch() {
        return Err(Error::invalid(format!(
            "the compaction task is for table {} (branch {}), not {} (branch {})",
            task.location,
            task.branch,
            table.location(),
            table.branch()
        )));
    }
    if task.schema_id != table.schema().id {
        return Err(Error::CommitConflict(format!(
            "the table's schema changed from {} to {} since the compaction was planned; plan again",
            task.schema_id,
            table.schema().id
        )));
    }
    Ok(())
}

/// Exactly one compaction-only message per task, on its bucket, base snapshot and inputs.
fn check_results(plan: &CompactionPlan, messages: &[CommitMessage]) -> Result<()> {
    let tasks: HashMap<(&[u8], i32), &CompactionTask> = plan
        .tasks
        .iter()
        .map(|t| ((t.partition(), t.bucket()), t))
        .collect();
    let mut seen = HashSet::new();
    for m in messages {
        let key = (m.partition.as_slice(), m.bucket);
        let Some(task) = tasks.get(&key) else {
            return Err(Error::invalid(format!(
                "a compaction result for bucket {} is not a task of the plan",
                m.bucket
            )));
        };
        if !seen.insert(key) {
            return Err(Error::invalid(format!(
                "two compaction results for bucket {} of one partition (a task's result may be committed once)",
                m.bucket
            )));
        }
        let writes = [&m.new_files, &m.deleted_files, &m.changelog_files];
        if writes.iter().any(|l| !l.is_empty())
            || !m.new_index_files.is_empty()
            || !m.deleted_index_files.is_empty()
        {
            return Err(Error::invalid(format!(
                "the result for bucket {} holds writes, not compaction",
                m.bucket
            )));
        }
        if m.base_snapshot != task.bucket.base_snapshot
            || m.total_buckets != task.bucket.total_buckets
        {
            return Err(Error::invalid(format!(
                "the result for bucket {} is not of this plan's snapshot",
                m.bucket
            )));
        }
        let inputs: HashSet<&str> = task.input_files().map(|f| f.file_name.as_str()).collect();
        if let Some(f) = m
            .compact_before
            .iter()
            .find(|f| !inputs.contains(f.file_name.as_str()))
        {
            return Err(Error::invalid(format!(
                "the result for bucket {} removes {}, which is not an input of its task",
                m.bucket, f.file_name
            )));
        }
    }
    if seen.len() != plan.tasks.len() {
        return Err(Error::invalid(format!(
            "the plan has {} tasks but only {} results were given",
            plan.tasks.len(),
            seen.len()
        )));
    }
    Ok(())
}
