//! [`FileStoreCommit`]: turns commit messages into snapshots (Java `FileStoreCommitImpl`:
//! `commit`, `overwritePartition`, `dropPartitions`, `truncateTable`, `filterCommitted`; Java
//! `SnapshotManager.latestSnapshotOfUser`). One attempt and the retry loop live in the
//! sibling module `attempt`.
//!
//! See the [module docs](crate::commit) for the attempt flow and the invariants.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{
    Codec, FileKind, IndexManifestEntry, ManifestEntry, DELETION_VECTORS_INDEX,
};
use tidelake_spec::snapshot::{CommitKind, Snapshot, BATCH_COMMIT_IDENTIFIER};
use tidelake_spec::types::DataType;

use crate::commit::attempt::{AttemptChanges, Request, Source};
use crate::commit::manifest_writer::MetaWriter;
use crate::commit::merge::MergeOptions;
use crate::commit::metrics::{Committed, CommittedSnapshot};
use crate::commit::new_files::{committed_since, common_base, stale_buckets, BucketId};
use crate::commit::overwrite::{
    check_inside, try_upgrade, OverwriteScope, PartitionFilter, PartitionMatcher,
};
use crate::commit::retry_wait::RetryWait;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::state::IndexPaths;
use crate::table::Table;
use crate::write::message::{check_distinct, Changes, CommitMessage};

/// Table options that drive committing, read once from the table's latest schema.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) bucket: i32,
    pub(crate) key_types: Vec<DataType>,
    /// Primary-key tables: LSM overlap checks and overwrite upgrades apply.
    pub(crate) has_primary_key: bool,
    pub(crate) pk_clustering_override: bool,
    pub(crate) bucket_unaware: bool,
    pub(crate) merge: MergeOptions,
    pub(crate) max_retries: u32,
    pub(crate) retry_wait: RetryWait,
    pub(crate) timeout: Option<Duration>,
    pub(crate) ignore_empty_commit: bool,
    pub(crate) overwrite_upgrade: bool,
    pub(crate) max_level: i32,
    /// `deletion-vectors.enabled`.
    pub(crate) deletion_vectors: bool,
    /// A cross-partition-upsert table (see `single_writer`).
    pub(crate) cross_partition: bool,
}

impl Settings {
    fn read(table: &Table, layout: &TableLayout) -> Result<Settings> {
        let schema = table.schema();
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        opts.check_writable().map_err(spec)?;
        tidelake_spec::iceberg::check_schema(schema).map_err(spec)?;
        if opts.row_tracking_enabled().map_err(spec)?
            || opts.data_evolution_enabled().map_err(spec)?
        {
            return Err(Error::Unsupported(
                "committing to row-tracking or data-evolution tables".into(),
            ));
        }
        let flag = |key: &str, default: bool| {
            opts.get_bool(key)
                .map(|v| v.unwrap_or(default))
                .map_err(spec)
        };
        let has_primary_key = !schema.primary_keys.is_empty();
        let bucket = opts.bucket().map_err(spec)?;
        Ok(Settings {
            bucket,
            key_types: layout.key_types(),
            has_primary_key,
            pk_clustering_override: flag("pk-clustering-override", false)?,
            bucket_unaware: bucket == -1 && !has_primary_key,
            merge: MergeOptions {
                target_size: opts.manifest_target_file_size().map_err(spec)?,
                min_count: usize::try_from(opts.manifest_merge_min_count().map_err(spec)?)
                    .unwrap_or(0),
                full_compaction_threshold: opts
                    .manifest_full_compaction_threshold_size()
                    .map_err(spec)?,
                rewrite_all: false,
            },
            max_retries: u32::try_from(opts.commit_max_retries().map_err(spec)?).unwrap_or(0),
            retry_wait: RetryWait::of(opts).map_err(spec)?,
            timeout: opts.commit_timeout().map_err(spec)?,
            ignore_empty_commit: !flag("commit.force-create-snapshot", false)?
                && flag("snapshot.ignore-empty-commit", true)?,
            overwrite_upgrade: flag("overwrite-upgrade", true)?,
            max_level: opts.num_levels().map_err(spec)?.saturating_sub(1),
            deletion_vectors: opts.deletion_vectors_enabled().map_err(spec)?,
            cross_partition: bucket == -1 && schema.cross_partition_update(),
        })
    }
}

/// What [`FileStoreCommit::commit_reporting`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The snapshots created, in order, with their metrics (empty: nothing to commit, or
    /// already committed).
    pub committed: Committed,
    /// (partition, bucket)s that got level-0 files in this commit but no landed compaction.
    pub uncompacted: Vec<(Vec<u8>, i32)>,
}

/// Commits to one table on behalf of one `commit_user`; `Send + Sync`, share it behind an
/// `Arc` to commit from several tasks.
#[derive(Debug)]
pub struct FileStoreCommit {
    pub(crate) table: Table,
    pub(crate) commit_user: String,
    pub(crate) layout: TableLayout,
    pub(crate) index_paths: IndexPaths,
    pub(crate) settings: Settings,
    pub(crate) writer: MetaWriter,
    pub(crate) checked_partitions: Mutex<HashSet<Vec<u8>>>,
    /// Row-level DML: the write was computed from the rows of its messages' base snapshot, so
    /// any file committed since then to a touched bucket with keys in the range of a new file
    /// is a conflict, whatever its sequence numbers (see [`FileStoreCommit::validate_reads`]).
    pub(crate) validate_reads: bool,
    /// Overwrites replace what was read at this snapshot (see
    /// [`FileStoreCommit::overwrite_of_read`]).
    pub(crate) overwrite_read_at: Option<i64>,
}

impl FileStoreCommit {
    /// A committer for `table` (options of its latest schema) writing as `commit_user`.
    pub fn new(table: Table, commit_user: impl Into<String>) -> Result<FileStoreCommit> {
        let layout = TableLayout::new(table.schema())?;
        let settings = Settings::read(&table, &layout)?;
        let opts = table.schema().options();
        let codec = Codec::from_option(opts.manifest_compression())
            .map_err(|e| Error::from_spec("table options", e))?;
        let writer = MetaWriter::new(
            table.io().clone(),
            codec,
            settings.merge.target_size,
            &layout,
        );
        Ok(FileStoreCommit {
            index_paths: IndexPaths::new(table.schema())?,
            table,
            commit_user: commit_user.into(),
            layout,
            settings,
            writer,
            checked_partitions: Mutex::new(HashSet::new()),
            validate_reads: false,
            overwrite_read_at: None,
        })
    }

    /// Make this committer refuse (with [`Error::CommitConflict`]) a primary-key write when a
    /// file committed after the messages' base snapshot to one of its buckets overlaps the key
    /// range of a new file, whatever their sequence numbers: row-level DML (delete or update
    /// by predicate, merge) computed its rows from that snapshot, and landing it over rows it
    /// did not see would silently overwrite them. Append tables are protected by the DELETE
    /// entries of the files they rewrite. Set the messages' base to the snapshot read.
    pub fn validate_reads(mut self) -> FileStoreCommit {
        self.validate_reads = true;
        self
    }

    /// Make this committer's overwrites replace what was read at `snapshot`: an overwrite is
    /// refused (with [`Error::CommitConflict`], nothing committed) when a commit since changed
    /// the data or index files of the partitions it overwrites, so that rows committed there
    /// meanwhile are never replaced by a rewrite that did not read them (stricter than Java's
    /// `commit.strict-mode.last-safe-snapshot`, which lets appends through).
    pub fn overwrite_of_read(mut self, snapshot: i64) -> FileStoreCommit {
        self.overwrite_read_at = Some(snapshot);
        self
    }

    pub fn commit_user(&self) -> &str {
        &self.commit_user
    }

    /// When the only obstacle to committing `messages` of a primary-key write is sequence
    /// order (another writer committed overlapping keys to some of their buckets since their
    /// writers opened): the latest snapshot read, and per such bucket the largest sequence
    /// number committed to it since, above which re-sequenced files land
    /// ([`crate::write::resequence`]). `None` when re-sequencing cannot help or is not safe:
    /// not a plain write (compaction results, removed files or index changes in such a
    /// bucket, files outside the table), row-level changes computed from their base,
    /// cross-partition-upsert tables (whose writers must see each other's keys), an unknown
    /// base, or a file of theirs already committed.
    pub(crate) async fn stale_sequences(
        &self,
        messages: &[CommitMessage],
    ) -> Result<Option<(i64, HashMap<BucketId, i64>)>> {
        let s = &self.settings;
        if !s.has_primary_key || s.cross_partition || self.validate_reads {
            return Ok(None);
        }
        let Some(base) = common_base(messages.iter().map(|m| m.base_snapshot)) else {
            return Ok(None);
        };
        let Some(latest) = self.table.snapshot_manager().latest().await? else {
            return Ok(None);
        };
        let added = Changes::collect(messages, &self.layout)?.append_table;
        // Without the deltas (the base expired or is far behind) these are the bucket's live
        // files: compaction keeps the largest sequence number of what it merged, so their
        // largest is still the one to land above.
        let since = committed_since(&self.table, &self.layout, &latest, Some(base), &added).await?;
        if since.holds_any(&added) {
            return Ok(None);
        }
        let stale = stale_buckets(&since, &added, &s.key_types)?;
        let plain = |m: &CommitMessage| {
            m.compact_before.is_empty()
                && m.compact_after.is_empty()
                && m.deleted_files.is_empty()
                && m.new_index_files.is_empty()
                && m.deleted_index_files.is_empty()
        };
        let touched = messages
            .iter()
            .filter(|m| stale.contains_key(&(m.partition.clone(), m.bucket)));
        if stale.is_empty() || !touched.into_iter().all(plain) {
            return Ok(None);
        }
        Ok(Some((latest.id, stale)))
    }

    /// Delete every file `messages` add (new data, changelog and index files, compaction
    /// outputs that are not merely moved inputs): the files of a write that will never be
    /// committed, e.g. a failed distributed job or a replayed streaming batch. Only call this
    /// once the messages provably did not land ([`FileStoreCommit::filter_committed`]); files
    /// already gone are skipped. Returns how many files were deleted.
    pub async fn discard(&self, messages: &[CommitMessage]) -> Result<usize> {
        let io = self.table.io();
        let mut deleted = 0;
        for m in messages {
            let dir = self
                .layout
                .bucket_path(&self.layout.decode_partition(&m.partition)?, m.bucket)?;
            let moved: HashSet<&str> = m
                .compact_before
                .iter()
                .map(|f| f.file_name.as_str())
                .collect();
            let data = m
                .new_files
                .iter()
                .chain(&m.changelog_files)
                .chain(&m.compact_changelog)
                .chain(
                    m.compact_after
                        .iter()
                        .filter(|f| !moved.contains(f.file_name.as_str())),
                );
            for f in data {
                io.delete(&f.path(&dir)).await?;
                deleted += 1;
            }
            for f in m.new_index_files.iter().chain(&m.compact_new_index_files) {
                io.delete(&self.index_paths.path(&dir, f)).await?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Commit `messages` as transaction `commit_identifier`; returns the snapshot ids created:
    /// an APPEND (or OVERWRITE, when files or deletion vectors are removed) for new files,
    /// then a COMPACT for compaction results. Nothing happens when the identifier was already
    /// committed by this user, or when there is nothing to commit (unless
    /// `commit.force-create-snapshot` is true or `snapshot.ignore-empty-commit` is false).
    pub async fn commit(
        &self,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
        properties: &[(String, String)],
    ) -> Result<Vec<i64>> {
        Ok(self
            .commit_reporting(messages, commit_identifier, properties)
            .await?
            .committed
            .ids())
    }

    /// [`FileStoreCommit::commit`], also telling which buckets got new level-0 files without a
    /// landed compaction of them: on tables whose reads skip level 0 (deletion vectors,
    /// first-row) those rows stay invisible until the bucket is compacted, see
    /// [`crate::compact::commit_visible_with`].
    pub async fn commit_reporting(
        &self,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
        properties: &[(String, String)],
    ) -> Result<CommitOutcome> {
        check_distinct(&messages)?;
        if self.already_committed(commit_identifier).await? {
            return Ok(CommitOutcome::default());
        }
        // Buckets given level-0 files, and whether their message also compacts them.
        let level0: Vec<(&CommitMessage, bool)> = messages
            .iter()
            .filter(|m| m.new_files.iter().any(|f| f.level == 0))
            .map(|m| {
                (
                    m,
                    !m.compact_after.is_empty() || !m.compact_before.is_empty(),
                )
            })
            .collect();
        let target = |m: &CommitMessage| (m.partition.clone(), m.bucket);
        let mut uncompacted: Vec<(Vec<u8>, i32)> = level0
            .iter()
            .filter(|(_, compacted)| !compacted)
            .map(|(m, _)| target(m))
            .collect();
        let changes = Changes::collect(&messages, &self.layout)?;
        let mut committed = Committed::default();
        if !self.settings.ignore_empty_commit
            || !changes.append_table.is_empty()
            || !changes.append_changelog.is_empty()
            || !changes.append_index.is_empty()
        {
            // Java `ConflictDetection.shouldBeOverwriteCommit`.
            let overwrite = changes
                .append_table
                .iter()
                .any(|e| e.kind == FileKind::Delete)
                || changes
                    .append_index
                    .iter()
                    .any(|e| e.index_file.index_type == DELETION_VECTORS_INDEX);
            let kind = if overwrite {
                CommitKind::Overwrite
            } else {
                CommitKind::Append
            };
            let writers = messages.iter().filter(|m| !m.new_files.is_empty());
            let request = Request {
                identifier: commit_identifier,
                kind,
                detect_conflicts: overwrite,
                properties,
                operation: None,
                base: common_base(writers.map(|m| m.base_snapshot)),
                check_new_files: true,
                on_top_of: None,
            };
            let new = AttemptChanges {
                table: changes.append_table,
                changelog: changes.append_changelog,
                index: changes.append_index,
            };
            committed = self
                .try_commit(&mut Source::Fixed(new), &request)
                .await?
                .into();
        }
        if !changes.compact_table.is_empty()
            || !changes.compact_changelog.is_empty()
            || !changes.compact_index.is_empty()
        {
            let compactions = messages
                .iter()
                .filter(|m| !m.compact_before.is_empty() || !m.compact_after.is_empty());
            let request = Request {
                identifier: commit_identifier,
                kind: CommitKind::Compact,
                detect_conflicts: true,
                properties,
                operation: None,
                base: common_base(compactions.map(|m| m.base_snapshot)),
                check_new_files: false,
                on_top_of: None,
            };
            let new = AttemptChanges {
                table: changes.compact_table,
                changelog: changes.compact_changelog,
                index: changes.compact_index,
            };
            if !self
                .commit_compaction(new, &request, &mut committed)
                .await?
            {
                uncompacted.extend(level0.iter().map(|(m, _)| target(m)));
            }
        }
        if committed.is_empty() {
            uncompacted.clear();
        }
        uncompacted.sort();
        uncompacted.dedup();
        Ok(CommitOutcome {
            committed,
            uncompacted,
        })
    }

    /// Commit the data-file entries `table` and the index-file entries `index` as one snapshot
    /// extending exactly snapshot `expected` (`None`: the table has none), or nothing: once
    /// another snapshot is the latest, or another writer creates the next one first, the
    /// commit is refused with [`Error::CommitConflict`] and nothing of it stays visible. The
    /// snapshot is created like every other (`put_if_absent` of its file), so a crash leaves
    /// the table as before or with the whole snapshot. An OVERWRITE when files or deletion
    /// vectors are removed (Java `shouldBeOverwriteCommit`), else an APPEND. Publishing a
    /// stage, [`crate::ops::publish_branch`].
    pub(crate) async fn commit_on_top_of(
        &self,
        expected: Option<i64>,
        table: Vec<ManifestEntry>,
        index: Vec<IndexManifestEntry>,
        properties: &[(String, String)],
    ) -> Result<CommittedSnapshot> {
        let overwrite = table.iter().any(|e| e.kind == FileKind::Delete)
            || index
                .iter()
                .any(|e| e.index_file.index_type == DELETION_VECTORS_INDEX);
        let request = Request {
            identifier: BATCH_COMMIT_IDENTIFIER,
            kind: if overwrite {
                CommitKind::Overwrite
            } else {
                CommitKind::Append
            },
            detect_conflicts: false,
            properties,
            operation: None,
            base: expected,
            check_new_files: false,
            on_top_of: Some(expected),
        };
        let new = AttemptChanges {
            table,
            changelog: Vec::new(),
            index,
        };
        self.try_commit(&mut Source::Fixed(new), &request).await
    }

    /// Commit compaction results; `committed` holds the snapshots this call already created.
    ///
    /// After the new data landed (`committed` not empty), a compaction lost to a concurrent commit
    /// (e.g. another writer compacted the same bucket) loses nothing: it only rewrote committed
    /// rows. Its output files, never referenced, are deleted and the call succeeds, so that
    /// `CommitConflictError` always means "your data did not land". A compaction-only commit
    /// still fails with the conflict.
    ///
    /// Returns whether the compaction landed.
    async fn commit_compaction(
        &self,
        new: AttemptChanges,
        request: &Request<'_>,
        committed: &mut Committed,
    ) -> Result<bool> {
        if committed.is_empty() {
            *committed = self
                .try_commit(&mut Source::Fixed(new), request)
                .await?
                .into();
            return Ok(true);
        }
        let rewritten: HashSet<String> = new
            .table
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| e.file.file_name.clone())
            .collect();
        let outputs: Vec<_> = new
            .table
            .iter()
            .chain(&new.changelog)
            .filter(|e| e.kind == FileKind::Add && !rewritten.contains(&e.file.file_name))
            .map(|e| (e.partition.clone(), e.bucket, e.file.clone()))
            .collect();
        let index_outputs = new
            .index
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .map(|e| self.index_paths.entry_path(e))
            .collect::<Result<Vec<String>>>()?;
        match self.try_commit(&mut Source::Fixed(new), request).await {
            Ok(snapshot) => {
                committed.snapshots.push(snapshot);
                Ok(true)
            }
            Err(Error::CommitConflict(_)) => {
                let io = self.table.io();
                for (partition, bucket, file) in outputs {
                    let dir = self
                        .layout
                        .bucket_path(&self.layout.decode_partition(&partition)?, bucket)?;
                    io.delete(&file.path(&dir)).await?;
                }
                for path in index_outputs {
                    io.delete(&path).await?;
                }
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Replace the partitions `scope` selects with the new files of `messages` in one OVERWRITE
    /// snapshot, followed by a COMPACT snapshot when the messages carry compaction results.
    /// Changelog files are not committed by an overwrite (as in Java).
    pub async fn overwrite(
        &self,
        scope: OverwriteScope,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
        properties: &[(String, String)],
    ) -> Result<Committed> {
        self.overwrite_with(scope, messages, commit_identifier, properties, None)
            .await
    }

    /// Delete every file of the table in one OVERWRITE snapshot (operation `TRUNCATE`).
    pub async fn truncate_table(&self, commit_identifier: i64) -> Result<Committed> {
        self.overwrite_with(
            OverwriteScope::Static(None),
            Vec::new(),
            commit_identifier,
            &[],
            Some("TRUNCATE"),
        )
        .await
    }

    /// Delete every file of the partitions matching any of `partitions` (each a full or
    /// partial spec of partition values) in one OVERWRITE snapshot (operation `TRUNCATE`).
    pub async fn drop_partitions(
        &self,
        partitions: Vec<Vec<(String, Datum)>>,
        commit_identifier: i64,
    ) -> Result<Committed> {
        if partitions.is_empty() {
            return Err(Error::invalid(
                "drop_partitions needs at least one partition",
            ));
        }
        let scope = OverwriteScope::Static(Some(PartitionFilter::AnyOf(partitions)));
        self.overwrite_with(scope, Vec::new(), commit_identifier, &[], Some("TRUNCATE"))
            .await
    }

    async fn overwrite_with(
        &self,
        scope: OverwriteScope,
        messages: Vec<CommitMessage>,
        commit_identifier: i64,
        properties: &[(String, String)],
        operation: Option<&'static str>,
    ) -> Result<Committed> {
        check_distinct(&messages)?;
        if self.already_committed(commit_identifier).await? {
            return Ok(Committed::default());
        }
        let messages = self.drop_compactions_of_previous_files(messages).await?;
        let mut changes = Changes::collect(&messages, &self.layout)?;
        let matcher = match scope {
            OverwriteScope::Dynamic if !self.layout.partition_fields.is_empty() => {
                if changes.append_table.is_empty() {
                    // Java: a dynamic overwrite without new data deletes nothing.
                    return self
                        .compact_after_overwrite(
                            changes,
                            commit_identifier,
                            properties,
                            Committed::default(),
                        )
                        .await;
                }
                Some(PartitionMatcher::of_partitions(
                    changes.append_table.iter().map(|e| e.partition.as_slice()),
                ))
            }
            OverwriteScope::Dynamic | OverwriteScope::Static(None) => None,
            OverwriteScope::Static(Some(filter)) => {
                let mut matcher = PartitionMatcher::new(&self.layout, &filter)?;
                check_inside(&mut matcher, &self.layout, &changes.append_table)?;
                Some(matcher)
            }
        };
        let with_compact = !changes.compact_table.is_empty() || !changes.compact_index.is_empty();
        if !with_compact
            && self.settings.has_primary_key
            && self.settings.overwrite_upgrade
            && !self.settings.pk_clustering_override
        {
            changes.append_table = try_upgrade(
                std::mem::take(&mut changes.append_table),
                &self.settings.key_types,
                self.settings.max_level,
            )?;
        }
        let request = Request {
            identifier: commit_identifier,
            kind: CommitKind::Overwrite,
            detect_conflicts: true,
            properties,
            operation,
            base: None,
            check_new_files: false,
            on_top_of: None,
        };
        let new = AttemptChanges {
            table: std::mem::take(&mut changes.append_table),
            changelog: Vec::new(),
            index: std::mem::take(&mut changes.append_index),
        };
        let overwritten = self
            .try_commit(
                &mut Source::Overwrite {
                    matcher,
                    new,
                    read_at: self.overwrite_read_at,
                },
                &request,
            )
            .await?;
        self.compact_after_overwrite(changes, commit_identifier, properties, overwritten.into())
            .await
    }

    /// An overwrite replaces what its scope held, so a compaction that merged the new files
    /// with files from before (a writer compacting inline against the live table) would bring
    /// the replaced rows back, and its COMPACT would delete files the OVERWRITE already
    /// deleted (a certain conflict). Such compaction results are dropped and their output,
    /// never committed, deleted; the new files are committed as written. Compactions of new
    /// files only are kept (Java's overwrite writers ignore previous files, so theirs are
    /// always of this kind).
    async fn drop_compactions_of_previous_files(
        &self,
        mut messages: Vec<CommitMessage>,
    ) -> Result<Vec<CommitMessage>> {
        let io = self.table.io();
        for m in &mut messages {
            let new: HashSet<&str> = m.new_files.iter().map(|f| f.file_name.as_str()).collect();
            if m.compact_before
                .iter()
                .all(|f| new.contains(f.file_name.as_str()))
            {
                continue;
            }
            // files compaction only moved to another level are not outputs to delete
            let new: HashSet<&str> = new
                .into_iter()
                .chain(m.compact_before.iter().map(|f| f.file_name.as_str()))
                .collect();
            let dir = self
                .layout
                .bucket_path(&self.layout.decode_partition(&m.partition)?, m.bucket)?;
            for f in m.compact_after.iter().chain(&m.compact_changelog) {
                if !new.contains(f.file_name.as_str()) {
                    io.delete(&f.path(&dir)).await?;
                }
            }
            for f in &m.compact_new_index_files {
                io.delete(&self.index_paths.path(&dir, f)).await?;
            }
            m.compact_before.clear();
            m.compact_after.clear();
            m.compact_changelog.clear();
            m.compact_new_index_files.clear();
            m.compact_deleted_index_files.clear();
        }
        Ok(messages)
    }

    async fn compact_after_overwrite(
        &self,
        changes: Changes,
        commit_identifier: i64,
        properties: &[(String, String)],
        mut committed: Committed,
    ) -> Result<Committed> {
        if !changes.compact_table.is_empty() || !changes.compact_index.is_empty() {
            let request = Request {
                identifier: commit_identifier,
                kind: CommitKind::Compact,
                detect_conflicts: true,
                properties,
                operation: None,
                base: None,
                check_new_files: false,
                on_top_of: None,
            };
            let new = AttemptChanges {
                table: changes.compact_table,
                changelog: Vec::new(),
                index: changes.compact_index,
            };
            self.commit_compaction(new, &request, &mut committed)
                .await?;
        }
        Ok(committed)
    }

    /// Java `filterCommitted`: the identifiers not yet committed by this user, i.e. those
    /// above the identifier of the user's newest snapshot (searched from the latest snapshot
    /// back to the earliest; an expired snapshot ends the search).
    pub async fn filter_committed(&self, identifiers: &[i64]) -> Result<Vec<i64>> {
        if identifiers.is_empty() {
            return Ok(Vec::new());
        }
        Ok(match self.latest_snapshot_of_user().await? {
            Some(s) => identifiers
                .iter()
                .copied()
                .filter(|id| *id > s.commit_identifier)
                .collect(),
            None => identifiers.to_vec(),
        })
    }

    async fn already_committed(&self, identifier: i64) -> Result<bool> {
        Ok(identifier != BATCH_COMMIT_IDENTIFIER
            && self.filter_committed(&[identifier]).await?.is_empty())
    }

    async fn latest_snapshot_of_user(&self) -> Result<Option<Snapshot>> {
        let sm = self.table.snapshot_manager();
        let Some(latest) = sm.latest_id().await? else {
            return Ok(None);
        };
        let earliest = sm.earliest_id().await?.unwrap_or(1);
        for id in (earliest..=latest).rev() {
            match sm.snapshot(id).await {
                Ok(s) if s.commit_user == self.commit_user => return Ok(Some(s)),
                Ok(_) => {}
                Err(e) if e.is_missing() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}
