//! The curated public API of the core: what a caller outside the crate (the Python binding,
//! integration tests) may use, as paimon-rust's `table/` module is for its crate.
//!
//! A caller opens or creates a [`Table`], then works through the groups below: [`scan`]
//! (snapshot → splits), [`read`] (splits → Arrow batches), [`write`] (Arrow batches → commit
//! messages; [`Table::new_write`] builds writers), [`commit`] (messages → one snapshot),
//! [`compact`], [`maintenance`], [`cdc`], [`lookup`], [`branch`] and [`catalog`]; [`ops`] holds
//! the verbs that own their transaction (commit, then the hooks every commit runs). Everything
//! else in the crate is internal: modules that nothing outside needs are `pub(crate)` in
//! `lib.rs`, and `tests/public_api.rs` keeps the binding on this module.
//!
//! Invariants: this module holds no engine logic of its own, only re-exports and builders that
//! wire internal pieces together the one way the engine means them to be used (a writer always
//! gets the table's inline compaction, for example); the layering check keeps it above every
//! other module, so nothing inside the crate depends on it.

pub use crate::error::{Error, ErrorKind, Result};
pub use crate::io::env::set_clock_offset;
pub use crate::io::{set_failpoint, FileIO, ReadCache, StorageOptions, FAILPOINTS};
pub use crate::table::Table;
pub use crate::tasks::{panic_message, Progress};

use crate::compact::inline_compaction;
use crate::write::table_write::TableWrite;

/// Scans: which snapshot, which splits (with pruning by filters and partitions).
pub mod scan {
    pub use crate::scan::plan::plan_diff;
    pub use crate::scan::predicate::{parse_filter_text, Predicate};
    pub use crate::scan::{
        plan_changes, plan_scan, resolve_snapshot, ScanPlan, ScanRequest, SnapshotSelector, Split,
    };
}

/// Reads: splits to Arrow batches (merge-on-read, deletion vectors, schema evolution) by the
/// builders [`ops::Read`] and [`ops::Changes`]; here what other readers need.
pub mod read {
    pub use crate::read::split_read::DEFAULT_BATCH_SIZE;

    /// What of a planned scan readers other than the engine read natively.
    pub mod native {
        pub use crate::read::native::{
            deleted_positions, native_units, pack_splits, Deletes, NativeFile, Packing, ReadUnit,
        };
    }
}

/// Writes: Arrow batches to data files and commit messages.
pub mod write {
    pub use crate::write::bucket::row_places;
    pub use crate::write::deletion::deletion_messages;
    pub use crate::write::input::RowKinds;
    pub use crate::write::rewrite::removal_messages;
    pub use crate::write::table_write::TableWrite;

    pub use super::WriteBuilder;
}

/// Commits: commit messages to one snapshot (conflicts, retries, exactly-once).
pub mod commit {
    pub use crate::commit::{CommitMessage, FileStoreCommit, OverwriteScope, PartitionFilter};
}

/// Compaction: plans, tasks and the compactor that runs them ([`ops::compact`] is the verb).
pub mod compact {
    pub use crate::compact::job::{BucketReport, CompactReport};
    pub use crate::compact::{CompactRequest, CompactionPlan, CompactionTask, Compactor};
}

/// Creating and altering tables.
pub mod schema {
    pub use crate::layout::TableLayout;
    pub use crate::schema_change::{
        alter_table, create_table, ColumnPath, ColumnPosition, SchemaChange, TableSpec,
    };
}

/// Expiration, orphans, tags, branches, rollback, partitions, consumers and system tables.
pub mod maintenance {
    pub use crate::maintenance::branches::{
        create_branch, delete_branch, fast_forward, BranchStart,
    };
    pub use crate::maintenance::changelog_expire::expire_changelogs;
    pub use crate::maintenance::consumers::{consumers, delete_consumer, reset_consumer};
    pub use crate::maintenance::damage::{find_damage, Damage, Problem, ProblemKind};
    pub use crate::maintenance::file_tables::list_partitions;
    pub use crate::maintenance::global_tables::{
        global_system_table, GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE,
    };
    pub use crate::maintenance::history::history;
    pub use crate::maintenance::partitions::{
        drop_partitions, expire_partitions, partition_specs_from_json, PartitionExpireConfig,
    };
    pub use crate::maintenance::system_tables::{system_table, SYSTEM_TABLES};
    pub use crate::maintenance::tags::{
        create_tag, delete_tag, expired_tags, rename_tag, replace_tag,
    };
    pub use crate::maintenance::verify::{verify, VerifyReport, Violation, ViolationKind};
    pub use crate::maintenance::{
        expire_snapshots, maintain, plan_expiration, remove_orphan_files, rollback_to,
        ChangelogRetention, DeletedFiles, ExpireConfig, RollbackTarget,
    };
}

/// Verbs that own their transaction: commits of written files ([`ops::TableCommit`]),
/// compaction (sort compaction: [`ops::SortCompaction`]), the publish of a staged branch ([`ops::publish_branch`]) and the migration of a Hive table or database ([`ops::MigrateTable`], [`ops::MigrateDatabase`]) and the clone of Hive or Paimon tables ([`ops::CloneTables`]), each followed by the hooks every commit runs ([`ops::after_commit`]: Iceberg
/// metadata, then maintenance); reads of a snapshot ([`ops::Read`]) and of changes
/// ([`ops::Changes`]), which validate and resolve their selectors.
pub mod ops {
    pub use crate::commit::{CommitMetrics, Committed, CommittedSnapshot};
    pub use crate::ops::{
        after_commit, commit_compaction, compact, compact_manifests, mark_partitions_done,
        publish_branch, purge_files, remove_unexisting_files, unexisting_files, Changes, CloneFrom,
        CloneHiveTable, ClonePaimonTable, CloneTables, ClonedTable, MigrateDatabase, MigrateTable,
        MigratedDatabase, PlannedRead, Purged, Read, ReplayPolicy, Rescale, RewriteFileIndex,
        SortCompaction, SplitReader, TableCommit, UnexistingFile, REPLAYS,
    };
    /// Row-level DML: plan -> tasks (bytes) -> prepared changes (bytes) -> one commit.
    pub use crate::ops::{
        commit_row_level, matching, row_level_strategy, PlannedRowLevel, PreparedChange,
        RowLevelChange, RowLevelPlan, RowLevelStrategy, RowLevelTask, PREPARED_CHANGE_VERSION,
        ROW_LEVEL_TASK_VERSION,
    };
}

/// Database changelog messages (Debezium, Canal, Maxwell, OGG) decoded and written.
pub mod cdc {
    pub use crate::cdc::changelog::{evolve, write_changes};
    pub use crate::cdc::{decode, Format, Message, OnError};
}

/// The latest rows of given primary keys, without a scan.
pub mod lookup {
    pub use crate::lookup::{lookup, Lookuper};
}

/// Branches of a table.
pub mod branch {
    pub use crate::branch::{list_branches, MAIN_BRANCH};
}

/// Catalogs: tables of a warehouse by database and name.
pub mod catalog {
    pub use crate::catalog::{Catalog, Identifier, Partition};
    pub use tidelake_spec::catalog_options::CatalogOptions;
}

impl Table {
    /// A builder of writers of this table (paimon-rust `Table::new_write_builder`).
    pub fn new_write(&self) -> WriteBuilder {
        WriteBuilder {
            table: self.clone(),
            overwrite: false,
            wait_compaction: true,
        }
    }
}

/// How a new [`TableWrite`] writes: continuing from the latest snapshot (the default) or
/// replacing what it overwrites; with its compaction waited for at `prepare_commit` (the
/// default: one-shot writers) or not (long-lived writers).
pub struct WriteBuilder {
    table: Table,
    overwrite: bool,
    wait_compaction: bool,
}

impl WriteBuilder {
    /// A writer whose output replaces what it overwrites (see [`TableWrite::for_overwrite`]).
    pub fn overwrite(mut self, overwrite: bool) -> WriteBuilder {
        self.overwrite = overwrite;
        self
    }

    /// Whether `prepare_commit` waits for the compactions it triggers (see
    /// [`TableWrite::set_wait_compaction`]).
    pub fn wait_compaction(mut self, wait: bool) -> WriteBuilder {
        self.wait_compaction = wait;
        self
    }

    /// The writer: the table's inline compaction unless it overwrites; refused when the table's
    /// Iceberg metadata could not be written after its commits.
    pub async fn build(self) -> Result<TableWrite> {
        crate::iceberg::check_table(&self.table)?;
        let mut write = if self.overwrite {
            TableWrite::for_overwrite(self.table).await?
        } else {
            TableWrite::new(self.table, inline_compaction).await?
        };
        write.set_wait_compaction(self.wait_compaction);
        Ok(write)
    }
}
