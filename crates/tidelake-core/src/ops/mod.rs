//! The operations layer: user verbs that own their whole transaction, from the commit through
//! what follows every commit, so that every caller (the Python binding, Rust `api` users) gets
//! the same table afterwards (compaction, publishing a staged branch as one snapshot), and the
//! reads ([`Read`], [`Changes`]) that own the validation and resolution of their snapshot
//! selectors.
//!
//! Invariants: a writing verb here that returns `Ok` committed, then ran [`after_commit`] on the
//! snapshots it created: the table's Iceberg metadata, then the maintenance Java's committers
//! run after each commit (expiring tags, partitions, consumers and snapshots), for every commit
//! kind (APPEND, OVERWRITE, row-level, COMPACT). If the hook fails, the commit stands (it is
//! acknowledged by the snapshot) and the error says what did not follow it. A read's selectors
//! are checked in one place, its builder, before any I/O.

mod clone;
mod compact;
mod from_hive;
mod full_compaction;
mod import;
mod mark_done;
mod post_commit;
mod publish;
mod purge;
mod read;
#[cfg(test)]
mod read_tests;
mod replay;
mod rescale;
mod rewrite_file_index;
mod row_level;
mod sort_compaction;
mod table_commit;
mod unexisting;

pub use clone::{CloneFrom, ClonePaimonTable, CloneTables, ClonedTable};
pub use compact::{commit_compaction, compact, compact_manifests};

pub use from_hive::{CloneHiveTable, MigrateDatabase, MigrateTable, MigratedDatabase};
pub use mark_done::mark_partitions_done;
use mark_done::{check_written_done, mark_written_done, written_partitions};
pub use post_commit::after_commit;
pub use publish::publish_branch;
pub use purge::{purge_files, Purged};
pub use read::{Changes, PlannedRead, Read, SplitReader};
pub use replay::{ReplayPolicy, REPLAYS};
pub use rescale::Rescale;
pub use rewrite_file_index::RewriteFileIndex;
pub use row_level::{
    commit_row_level, matching, row_level_strategy, PlannedRowLevel, PreparedChange,
    RowLevelChange, RowLevelPlan, RowLevelStrategy, RowLevelTask, PREPARED_CHANGE_VERSION,
    ROW_LEVEL_TASK_VERSION,
};
pub use sort_compaction::SortCompaction;
pub use table_commit::TableCommit;
pub use unexisting::{remove_unexisting_files, unexisting_files, UnexistingFile};
