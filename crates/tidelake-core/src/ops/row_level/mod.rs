//! Row-level DML (DELETE, UPDATE, MERGE) as plan -> tasks -> prepared changes -> one commit,
//! the shape of distributed compaction ([`crate::compact`]'s plan):
//!
//! ```text
//!  RowLevelPlan::plan()        one snapshot → capability checked, strategy chosen, tasks by (partition, bucket)
//!  RowLevelTask::to_bytes      → any process → RowLevelTask::from_bytes
//!  RowLevelChange::new(task)   read the task's rows; remove / upsert / delete_keys; finish()
//!  PreparedChange::to_bytes    → the driver → commit_row_level(changes): one transaction
//! ```
//!
//! The engine (callers: the Python binding for one-shot and Spark DML) owns every decision
//! that does not depend on the user's expressions: whether the table can take the change, how
//! rows are removed ([`RowLevelStrategy`]), which splits are read, how tasks are grouped, how
//! removed rows become deletion vectors or rewritten files, and the commit. The caller only
//! evaluates its conditions and values on the rows a task reads.
//!
//! Invariants: every task and change of one plan comes from the plan's snapshot, and the commit
//! refuses changes of different snapshots; byte forms carry a leading format version and an
//! unknown version is [`crate::Error::Invalid`] naming it; a change that does not commit
//! (conflict, expired snapshot) leaves none of its files behind.

mod change;
mod plan;
mod task;

pub use change::{
    commit_row_level, matching, PreparedChange, RowLevelChange, PREPARED_CHANGE_VERSION,
};
pub use plan::{row_level_strategy, PlannedRowLevel, RowLevelPlan, RowLevelStrategy};
pub use task::{RowLevelTask, ROW_LEVEL_TASK_VERSION};
