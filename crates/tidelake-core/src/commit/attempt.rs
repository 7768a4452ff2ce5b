//! One commit attempt and the retry loop around it (Java `FileStoreCommitImpl.tryCommit` /
//! `tryCommitOnce`, `RenamingSnapshotCommit`, `RetryWaiter`, `CommitChangesProvider`,
//! `OverwriteChangesProvider`). The flow is drawn in the [module docs](crate::commit).
//!
//! Invariants: checks run before anything is written, so a detected conflict leaves no file
//! behind; an attempt's files are deleted when it fails before creating the snapshot file or
//! when the snapshot id was provably taken, and kept when the outcome is unknown (the next
//! attempt then looks for its own snapshot first).

use std::collections::HashSet;
use std::time::Duration;

use tidelake_spec::manifest::{
    FileKind, IndexManifestEntry, ManifestEntry, DELETION_VECTORS_INDEX,
};
use tidelake_spec::snapshot::{snapshot_file_name, CommitKind, Snapshot, CURRENT_VERSION};

use crate::commit::conflict::{bucket_counts, partition_display, ConflictChecker};
use crate::commit::dv_conflict::check_deletion_vectors;
use crate::commit::file_store_commit::FileStoreCommit;
use crate::commit::index::combine_index_entries;
use crate::commit::manifest_writer::CreatedFiles;
use crate::commit::merge::Merger;
use crate::commit::metrics::{CommitMetrics, CommittedSnapshot};
use crate::commit::new_files::{added_paths, check, committed_since, missing_files, Verdict};
use crate::commit::overwrite::PartitionMatcher;
use crate::commit::scan::live_entries_of;
use crate::commit::single_writer;
use crate::error::{Error, ErrorKind, Result};
use crate::io::failpoint;
use crate::snapshot_commit::SnapshotCommitRequest;
use crate::snapshots::next_snapshot_id;
use crate::state::PartitionSet;
use crate::state::{data_manifests, live_index_entries, read_list, LiveFiles, Pruning};
use crate::table::list_schema_ids;

const LATEST_HINT: &str = "snapshot/LATEST";
/// Partitions whose bucket count was verified are remembered up to this many (Java
/// `ConflictDetection.FIXED_BUCKET_CHECK_CACHE_MAX_SIZE`).
const CHECKED_PARTITIONS_MAX: usize = 1000;

/// What one snapshot writes: data-file entries, changelog entries, index-file changes.
#[derive(Debug, Clone, Default)]
pub(crate) struct AttemptChanges {
    pub(crate) table: Vec<ManifestEntry>,
    pub(crate) changelog: Vec<ManifestEntry>,
    pub(crate) index: Vec<IndexManifestEntry>,
}

/// Where an attempt's changes come from (Java `CommitChangesProvider`).
pub(crate) enum Source {
    Fixed(AttemptChanges),
    /// Delete the live files of the selected partitions (all when `None`), add the new ones.
    /// With `read_at`, the overwrite replaces what was read at that snapshot: refused when
    /// the selected partitions' data or index files changed since.
    Overwrite {
        matcher: Option<PartitionMatcher>,
        new: AttemptChanges,
        read_at: Option<i64>,
    },
}

/// One commit request: everything except the changes.
pub(crate) struct Request<'a> {
    pub(crate) identifier: i64,
    pub(crate) kind: CommitKind,
    pub(crate) detect_conflicts: bool,
    pub(crate) properties: &'a [(String, String)],
    pub(crate) operation: Option<&'static str>,
    /// The snapshot the messages' writers (or compactions) started from: the oldest of theirs,
    /// `None` when unknown.
    pub(crate) base: Option<i64>,
    /// Check the added data files against the commits since `base` (see
    /// [`new_files`](crate::commit::new_files)).
    pub(crate) check_new_files: bool,
    /// `Some(expected)`: the snapshot may only extend snapshot `expected` (`None`: an empty
    /// table); once the latest snapshot is another, the commit is refused with
    /// [`Error::CommitConflict`] instead of retried on top (publishing a stage,
    /// [`FileStoreCommit::commit_on_top_of`]).
    pub(crate) on_top_of: Option<Option<i64>>,
}

/// Why an attempt did not create its snapshot.
enum Failure {
    /// `snapshot-<id>` already existed, or the snapshot the attempt was based on changed
    /// before it was created: this attempt's files are deleted.
    Lost(i64),
    /// Creating the snapshot file failed without telling whether it exists.
    Uncertain(Box<Uncertain>),
}

/// An attempt whose snapshot file may or may not have been created.
struct Uncertain {
    error: Error,
    id: i64,
    /// The attempt's delta manifest list: a fresh name, so it identifies the attempt exactly.
    delta_manifest_list: String,
    based_on: Option<Snapshot>,
    /// What the attempt's delta changed.
    metrics: CommitMetrics,
}

/// Whether a created snapshot extends the snapshot its attempt was based on.
enum Published {
    Yes,
    /// The id had been used and expired before: the attempt's snapshot file was deleted again
    /// and the commit did not land (see [`FileStoreCommit::verify_published`]).
    Reused,
    /// The base vanished meanwhile and newer snapshots exist: see [`FileStoreCommit::verify_published`].
    Unknown(String),
}

/// How often, and how far apart, a created snapshot whose base vanished looks for the signs
/// that expiration had passed its id (an expiration may still be running).
const REUSE_CHECKS: u32 = 10;
const REUSE_CHECK_WAIT: Duration = Duration::from_millis(200);

/// Commits in flight longer than this verify that their new files still exist before the
/// snapshot is created (orphan-file cleaning deletes unreferenced files by age).
const IN_FLIGHT_CHECK: Duration = Duration::from_secs(10);

fn sum_rows<'a>(entries: impl Iterator<Item = &'a ManifestEntry>) -> i64 {
    entries.fold(0i64, |acc, e| acc.saturating_add(e.file.row_count))
}

/// The `log` target of commit events (Python logger `tidelake.commit`).
const LOG_TARGET: &str = "tidelake.commit";

/// `snapshot/snapshot-<id>`.
fn snapshot_rel(id: i64) -> String {
    format!("snapshot/{}", snapshot_file_name(id))
}

impl FileStoreCommit {
    /// Java `tryCommit`: attempt until a snapshot is created, a conflict is detected, or the
    /// retries (`commit.max-retries`) or the time (`commit.timeout`) run out. The snapshot, with
    /// the metrics of the data-file entries the landed attempt carried.
    pub(crate) async fn try_commit(
        &self,
        source: &mut Source,
        request: &Request<'_>,
    ) -> Result<CommittedSnapshot> {
        let started = self.table.env().stopwatch();
        let result = self.attempt_until_done(source, request).await;
        let (location, kind, ms) = (
            self.table.location(),
            request.kind,
            started.elapsed().as_millis(),
        );
        match &result {
            Ok(CommittedSnapshot { id, .. }) => {
                log::info!(target: LOG_TARGET, "{location}: committed snapshot {id} ({kind}) in {ms} ms")
            }
            Err(e) => {
                log::warn!(target: LOG_TARGET, "{location}: {kind} commit failed after {ms} ms: {e}")
            }
        }
        result
    }

    async fn attempt_until_done(
        &self,
        source: &mut Source,
        request: &Request<'_>,
    ) -> Result<CommittedSnapshot> {
        let started = self.table.env().stopwatch();
        let sm = self.table.snapshot_manager();
        let mut retries: u32 = 0;
        // An earlier attempt whose snapshot may exist.
        let mut pending: Option<Uncertain> = None;
        loop {
            if let Some(uncertain) = pending.take() {
                if let Some(found) = self.find_own(&uncertain).await? {
                    return Ok(found);
                }
            }
            let latest = sm.latest().await?;
            next_snapshot_id(latest.as_ref())?;
            let latest_id = latest.as_ref().map(|l| l.id);
            if let Some(expected) = request.on_top_of.filter(|e| *e != latest_id) {
                let show = |id: Option<i64>| id.map_or("none".to_string(), |i| i.to_string());
                return Err(Error::CommitConflict(format!(
                    "{} moved: its latest snapshot is {}, not {}",
                    self.table.branch_io().location(),
                    show(latest_id),
                    show(expected)
                )));
            }
            let in_flight = retries > 0 || started.elapsed() > IN_FLIGHT_CHECK;
            let attempt = async {
                let changes = self.provide(source, latest.as_ref()).await?;
                let metrics = CommitMetrics::of(&changes.table);
                let outcome = self
                    .try_commit_once(latest.as_ref(), &changes, request, in_flight)
                    .await?;
                Ok::<_, Error>((outcome, metrics))
            };
            let failure = match attempt.await {
                Ok((Ok(id), metrics)) => return Ok(CommittedSnapshot { id, metrics }),
                Ok((Err(failure), _)) => failure,
                // A snapshot expired while the attempt read it: retry on the new latest.
                Err(e) if self.expired_meanwhile(&e, latest.as_ref()).await? => {
                    Failure::Lost(next_snapshot_id(latest.as_ref())?)
                }
                Err(e) => return Err(e),
            };
            if retries >= self.settings.max_retries
                || self.settings.timeout.is_some_and(|t| started.elapsed() > t)
            {
                return match failure {
                    Failure::Lost(id) => Err(Error::CommitConflict(format!(
                        "could not create snapshot {id} of {}: another writer created it first; gave up after {retries} \
                         retries in {} ms (commit.max-retries / commit.timeout)",
                        self.table.location(),
                        started.elapsed().as_millis()
                    ))),
                    Failure::Uncertain(uncertain) => match self.find_own(&uncertain).await? {
                        Some(found) => Ok(found),
                        None => Err(uncertain.error),
                    },
                };
            }
            let location = self.table.location();
            match &failure {
                Failure::Lost(id) => log::info!(
                    target: LOG_TARGET,
                    "{location}: snapshot {id} was taken by another writer; retry {}", retries + 1
                ),
                Failure::Uncertain(u) => log::warn!(
                    target: LOG_TARGET,
                    "{location}: creating a snapshot failed without telling whether it exists ({}); retry {}",
                    u.error,
                    retries + 1
                ),
            }
            if let Failure::Uncertain(uncertain) = failure {
                pending = Some(*uncertain);
            }
            self.table
                .env()
                .sleep(self.settings.retry_wait.before(retries, self.table.env()))
                .await;
            retries += 1;
        }
    }

    /// True when `error` is a missing file and `latest`, which the attempt read, is gone:
    /// an expiration removed it (and its manifests) meanwhile.
    async fn expired_meanwhile(&self, error: &Error, latest: Option<&Snapshot>) -> Result<bool> {
        match latest {
            Some(l) if error.kind() == ErrorKind::NotFound => {
                Ok(!self.table.branch_io().exists(&snapshot_rel(l.id)).await?)
            }
            _ => Ok(false),
        }
    }

    /// The snapshot of an attempt whose outcome was unknown, if it was created (recognised by
    /// its delta manifest list, a name no other attempt uses) and extends its base.
    async fn find_own(&self, attempt: &Uncertain) -> Result<Option<CommittedSnapshot>> {
        let Some(found) = self.read_snapshot(attempt.id).await? else {
            return Ok(None);
        };
        if found.delta_manifest_list != attempt.delta_manifest_list {
            return Ok(None);
        }
        let published = self.publish(attempt.id, attempt.based_on.as_ref()).await?;
        Ok(published.map(|id| CommittedSnapshot {
            id,
            metrics: attempt.metrics,
        }))
    }

    /// Snapshot `id`, `None` when its file does not exist.
    async fn read_snapshot(&self, id: i64) -> Result<Option<Snapshot>> {
        let rel = snapshot_rel(id);
        match self.table.branch_io().read_opt(&rel).await? {
            Some(bytes) => Snapshot::from_json(&bytes)
                .map(Some)
                .map_err(|e| Error::from_spec(self.table.branch_io().display(&rel), e)),
            None => Ok(None),
        }
    }

    /// Whether the snapshot an attempt was based on is still the table's snapshot of that id
    /// (for an attempt on an empty table: whether the table still has none).
    async fn base_unchanged(&self, based_on: Option<&Snapshot>) -> Result<bool> {
        match based_on {
            Some(base) => Ok(self
                .read_snapshot(base.id)
                .await?
                .is_some_and(|s| s.delta_manifest_list == base.delta_manifest_list)),
            None => Ok(self.table.snapshot_manager().latest_id().await?.is_none()),
        }
    }

    /// After `snapshot-<id>` was created from an attempt based on `based_on` (`id - 1`):
    /// whether it extends the newest snapshot, and not an id used before and expired meanwhile.
    ///
    /// Expiration deletes snapshot `k` only once `k - 1` is gone (ascending, see
    /// [`crate::maintenance::expire`]), so when `based_on` still exists unchanged after the
    /// creation, `id` was never used before. When it vanished, the snapshot is still the newest
    /// one if no snapshot above `id` exists: an id used before would have a newer snapshot
    /// (expiration never removes the latest). Otherwise the base expired either just before
    /// this snapshot was created (the id was used before) or just after (it is valid and
    /// others built on it); when `id + 1`'s base names a manifest of this attempt, it is the
    /// latter (no other commit holds those names). When expiration has passed `id`
    /// ([`SnapshotManager::expiration_passed`](crate::snapshots::SnapshotManager::expiration_passed))
    /// and the snapshot file is still this attempt's, it was created after expiration deleted
    /// `id` (a valid snapshot would have been deleted first): the file is deleted again and the
    /// commit did not land. An expiration may still be running, so the signs are looked for a
    /// few times; without them the outcome is unknown.
    async fn verify_published(&self, id: i64, based_on: Option<&Snapshot>) -> Result<Published> {
        if based_on.is_some() && self.base_unchanged(based_on).await? {
            return Ok(Published::Yes);
        }
        let io = self.table.branch_io();
        let sm = self.table.snapshot_manager();
        let next_exists = match id.checked_add(1) {
            Some(next) => io.exists(&snapshot_rel(next)).await?,
            None => false,
        };
        if !next_exists && sm.list_ids().await?.last().is_none_or(|last| *last <= id) {
            return Ok(Published::Yes);
        }
        let own = self.read_snapshot(id).await?.map(|s| s.delta_manifest_list);
        if let Some(own) = &own {
            if next_exists && self.built_on(id, own).await {
                return Ok(Published::Yes);
            }
        }
        for check in 0..REUSE_CHECKS {
            if sm.expiration_passed(id).await? {
                // Read after the sign: a valid snapshot `id` would be gone by now.
                if self.read_snapshot(id).await?.map(|s| s.delta_manifest_list) == own
                    && own.is_some()
                {
                    io.delete(&snapshot_rel(id)).await?;
                }
                return Ok(Published::Reused);
            }
            if check + 1 < REUSE_CHECKS {
                self.table.env().sleep(REUSE_CHECK_WAIT).await;
            }
        }
        Ok(Published::Unknown(format!(
            "snapshot {id} of {} was created, but the snapshot it was based on ({}) was expired meanwhile and newer \
             snapshots exist: whether this commit is visible cannot be told; check the table before writing again",
            self.table.location(),
            based_on.map_or("none".to_string(), |b| b.id.to_string()),
        )))
    }

    /// Whether snapshot `id + 1` was committed on top of this attempt's snapshot `id`, whose
    /// delta manifest list is `own`: its base manifest list names a manifest of `own` (files
    /// only this attempt wrote), so `id` is the valid snapshot others built on, not an id used
    /// before. False when that cannot be seen (the manifests were merged since, or a file is gone).
    async fn built_on(&self, id: i64, own: &str) -> bool {
        let sign = async {
            let Some(next) = (match id.checked_add(1) {
                Some(next_id) => self.read_snapshot(next_id).await?,
                None => None,
            }) else {
                return Ok(false);
            };
            let ours: HashSet<String> = read_list(&self.table, own)
                .await?
                .into_iter()
                .map(|m| m.file_name)
                .collect();
            let base = read_list(&self.table, &next.base_manifest_list).await?;
            Ok::<_, Error>(base.iter().any(|m| ours.contains(&m.file_name)))
        };
        sign.await.unwrap_or(false)
    }

    /// Verify a created snapshot ([`FileStoreCommit::verify_published`]) and point the
    /// `LATEST` hint at it. Racing commits may leave the hint a little behind; it only ever
    /// names a verified snapshot of the chain, and readers probe forward from it, so the latest
    /// snapshot they find never moves back.
    /// `None` when the id had been used before and the snapshot was deleted again (the commit
    /// did not land).
    async fn publish(&self, id: i64, based_on: Option<&Snapshot>) -> Result<Option<i64>> {
        match self.verify_published(id, based_on).await? {
            Published::Yes => {}
            Published::Reused => return Ok(None),
            Published::Unknown(reason) => {
                return Err(Error::Io {
                    path: self.table.branch_io().display(&snapshot_rel(id)),
                    source: object_store::Error::Generic {
                        store: "commit",
                        source: reason.into(),
                    },
                })
            }
        }
        // The hint is best effort: readers verify it (see `SnapshotManager::latest_id`).
        let _ = self
            .table
            .branch_io()
            .write(LATEST_HINT, id.to_string())
            .await;
        Ok(Some(id))
    }

    /// The changes of one attempt against `latest` (overwrites recompute their deletions).
    async fn provide(
        &self,
        source: &mut Source,
        latest: Option<&Snapshot>,
    ) -> Result<AttemptChanges> {
        let (matcher, new, read_at) = match source {
            Source::Fixed(changes) => return Ok(changes.clone()),
            Source::Overwrite {
                matcher,
                new,
                read_at,
            } => (matcher, new, *read_at),
        };
        let Some(latest) = latest else {
            return Ok(new.clone());
        };
        let layout = &self.layout;
        // Java `OverwriteChangesProvider`: postpone-bucket files survive unless the table is one.
        let postpone_table = self.settings.bucket == -2;
        let mut selected = |partition: &[u8]| match matcher.as_mut() {
            Some(m) => m.matches(layout, partition),
            None => Ok(true),
        };
        let pruning = Pruning::all()
            .buckets(|b| postpone_table || b >= 0)
            .partitions(&mut selected);
        let current = LiveFiles::read(&self.table, latest, pruning)
            .await?
            .into_entries();
        let mut index = Vec::new();
        for e in live_index_entries(&self.table, latest).await? {
            if selected(&e.partition)? {
                index.push(IndexManifestEntry {
                    kind: FileKind::Delete,
                    ..e
                });
            }
        }
        if let Some(read) = read_at.filter(|r| *r != latest.id) {
            let snapshot = self.table.snapshot_manager().snapshot(read).await?;
            let pruning = Pruning::all()
                .buckets(|b| postpone_table || b >= 0)
                .partitions(&mut selected);
            let then = LiveFiles::read(&self.table, &snapshot, pruning)
                .await?
                .into_entries();
            let mut then_index = Vec::new();
            for e in live_index_entries(&self.table, &snapshot).await? {
                if selected(&e.partition)? {
                    then_index.push(e.index_file.file_name);
                }
            }
            let names = |files: &[ManifestEntry]| -> HashSet<(Vec<u8>, i32, String)> {
                files
                    .iter()
                    .map(|e| (e.partition.clone(), e.bucket, e.file.file_name.clone()))
                    .collect()
            };
            let index_names: HashSet<&String> =
                index.iter().map(|e| &e.index_file.file_name).collect();
            if names(&current) != names(&then) || index_names != then_index.iter().collect() {
                return Err(Error::CommitConflict(format!(
                    "the overwrite replaces what it read at snapshot {read}, but the files of \
                     the partitions it overwrites changed since (latest snapshot {}, committed \
                     by '{}'); nothing was committed: run it again",
                    latest.id, latest.commit_user
                )));
            }
        }
        let mut table: Vec<ManifestEntry> = current
            .into_iter()
            .map(|e| ManifestEntry {
                kind: FileKind::Delete,
                ..e
            })
            .collect();
        table.extend(new.table.iter().cloned());
        index.extend(new.index.iter().cloned());
        Ok(AttemptChanges {
            table,
            changelog: Vec::new(),
            index,
        })
    }

    /// Java `tryCommitOnce`: check, write the metadata files, create the snapshot file.
    /// `in_flight`: the commit has retried or run long, so its new files are verified to
    /// still exist before they are published.
    async fn try_commit_once(
        &self,
        latest: Option<&Snapshot>,
        changes: &AttemptChanges,
        request: &Request<'_>,
        in_flight: bool,
    ) -> Result<std::result::Result<i64, Failure>> {
        let new_id = next_snapshot_id(latest)?;
        let checker = ConflictChecker {
            layout: &self.layout,
            lsm_key_types: (self.settings.has_primary_key && !self.settings.pk_clustering_override)
                .then_some(self.settings.key_types.as_slice()),
            commit_user: &self.commit_user,
            table_location: self.table.location(),
        };
        let mut verify_files = in_flight;
        match latest {
            None => {
                bucket_counts(&changes.table, |p, new, prev| {
                    Error::invalid(checker.bucket_mismatch(p, new, prev))
                })?;
            }
            Some(latest) if request.detect_conflicts => {
                let partitions = PartitionSet::new(&self.layout, changed_partitions(changes));
                let base = live_entries_of(&self.table, latest, &partitions).await?;
                if request.kind == CommitKind::Compact && already_live(&base, &changes.table) {
                    return Ok(Ok(latest.id));
                }
                let (table, index) = (&changes.table, &changes.index);
                check_deletion_vectors(
                    &self.table,
                    &checker,
                    latest,
                    &base,
                    table,
                    index,
                    request.base,
                )
                .await?;
                // Hand-built messages (no base) are not checked: what they saw is unknown.
                if request.kind == CommitKind::Compact
                    && self.settings.deletion_vectors
                    && request.base.is_some()
                {
                    self.check_newer_sorted_runs(&checker, latest, request.base, table)
                        .await?;
                }
                checker.check(latest, base, &changes.table, request.kind)?;
            }
            Some(latest) if request.kind == CommitKind::Append && self.settings.bucket > 0 => {
                self.check_fixed_buckets(&checker, latest, &changes.table)
                    .await?;
            }
            Some(_) => {}
        }
        let added: Vec<ManifestEntry> = changes
            .table
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .cloned()
            .collect();
        if let (Some(latest), true, false) = (latest, request.check_new_files, added.is_empty()) {
            let base = request.base;
            let since = committed_since(&self.table, &self.layout, latest, base, &added).await?;
            // Messages built by hand (no base) are not sequence-checked: their numbers were not
            // restored from the table.
            let key_types = checker.lsm_key_types.filter(|_| base.is_some());
            let conflict = |reason: String| checker.conflict(latest, reason);
            if let Verdict::Landed(id) = check(
                &self.layout,
                &since,
                base,
                &added,
                key_types,
                self.validate_reads,
                conflict,
            )? {
                return Ok(Ok(id.unwrap_or(latest.id)));
            }
            if let (true, Some(base)) = (self.settings.cross_partition, base) {
                if request.kind != CommitKind::Compact {
                    single_writer::check(&self.table, latest, base, conflict).await?;
                }
            }
            // Without the deltas, files of this write committed and compacted away since would
            // not be recognised (a writer's base is known unless the messages were built by hand).
            verify_files |= base.is_some() && !since.exact();
        }
        if verify_files {
            self.check_files_exist(changes).await?;
        }
        let mut created = CreatedFiles::default();
        let snapshot = match self
            .prepare_snapshot(latest, changes, request, new_id, &mut created)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                created.delete_all(self.table.io()).await;
                return Err(e);
            }
        };
        let io = self.table.io();
        // The base may have expired while this attempt wrote its files, making `new_id` an id
        // used before: such an attempt starts again on the new latest snapshot.
        if !self.base_unchanged(latest).await? {
            created.delete_all(io).await;
            return Ok(Err(Failure::Lost(new_id)));
        }
        let request = SnapshotCommitRequest {
            branch: self.table.branch(),
            branch_io: self.table.branch_io(),
            snapshot: &snapshot,
            delta: &changes.table,
            layout: &self.layout,
        };
        failpoint!("commit-before-snapshot");
        match self.table.environment().commit_snapshot(request).await {
            Ok(true) => {
                failpoint!("commit-after-snapshot");
                match self.publish(new_id, latest).await? {
                    Some(id) => Ok(Ok(id)),
                    None => {
                        created.delete_all(io).await;
                        Ok(Err(Failure::Lost(new_id)))
                    }
                }
            }
            Ok(false) => {
                created.delete_all(io).await;
                Ok(Err(Failure::Lost(new_id)))
            }
            // The catalog refused before creating anything (its lock was not free in time).
            Err(error) if error.kind() == ErrorKind::CommitConflict => {
                created.delete_all(io).await;
                Err(error)
            }
            Err(error) => Ok(Err(Failure::Uncertain(Box::new(Uncertain {
                error,
                id: new_id,
                delta_manifest_list: snapshot.delta_manifest_list,
                based_on: latest.cloned(),
                metrics: CommitMetrics::of(&changes.table),
            })))),
        }
    }

    /// Deletion-vector tables are read without merging levels: a key must have one unmarked
    /// copy above level 0. A compaction planned before another commit added files at level >= 1
    /// to its bucket (another compaction's output) did not look them up, so it could leave a
    /// second copy of their keys: it conflicts (writers then compact again, see
    /// [`crate::compact::commit_visible_with`]).
    async fn check_newer_sorted_runs(
        &self,
        checker: &ConflictChecker<'_>,
        latest: &Snapshot,
        base: Option<i64>,
        own: &[ManifestEntry],
    ) -> Result<()> {
        let since = committed_since(&self.table, &self.layout, latest, base, own).await?;
        match since.newer_sorted_file(own) {
            None => Ok(()),
            Some(((partition, bucket), f)) => Err(checker.conflict(
                latest,
                format!(
                    "file {} (level {}) was added to bucket {bucket} of {} after this compaction was planned{}: \
                     on a deletion-vector table its keys could stay visible twice",
                    f.file_name,
                    f.level,
                    partition_display(&self.layout, partition),
                    base.map_or(String::new(), |b| format!(" (at snapshot {b})")),
                ),
            )),
        }
    }

    /// Fail (nothing written) when a file this attempt adds is gone, e.g. deleted by
    /// orphan-file cleaning while the commit was in flight: publishing it would make the table
    /// unreadable.
    async fn check_files_exist(&self, changes: &AttemptChanges) -> Result<()> {
        let mut paths = added_paths(&self.layout, &changes.table)?;
        paths.extend(added_paths(&self.layout, &changes.changelog)?);
        for e in changes.index.iter().filter(|e| e.kind == FileKind::Add) {
            paths.push(self.index_paths.entry_path(e)?);
        }
        let missing = missing_files(&self.table, paths).await?;
        match missing.first() {
            None => Ok(()),
            Some(first) => Err(Error::CommitConflict(format!(
                "{} file(s) of this commit no longer exist, e.g. {}: deleted while the commit was in flight \
                 (orphan-file cleaning with an `older_than` shorter than the write?); nothing was committed, write again",
                missing.len(),
                self.table.io().display(first)
            ))),
        }
    }

    /// APPEND to a fixed-bucket table: the partitions keep their bucket counts.
    async fn check_fixed_buckets(
        &self,
        checker: &ConflictChecker<'_>,
        latest: &Snapshot,
        delta: &[ManifestEntry],
    ) -> Result<()> {
        let mut expected = bucket_counts(delta, |p, new, prev| {
            Error::invalid(checker.bucket_mismatch(p, new, prev))
        })?;
        {
            let checked = self
                .checked_partitions
                .lock()
                .map_err(|_| Error::invalid("commit state lock poisoned"))?;
            expected.retain(|p, _| !checked.contains(p));
        }
        if expected.is_empty() {
            return Ok(());
        }
        let partitions = PartitionSet::new(&self.layout, expected.keys().map(Vec::as_slice));
        let live = live_entries_of(&self.table, latest, &partitions).await?;
        checker.check_fixed_buckets(latest, &expected, &live)?;
        let mut checked = self
            .checked_partitions
            .lock()
            .map_err(|_| Error::invalid("commit state lock poisoned"))?;
        if checked.len() + expected.len() > CHECKED_PARTITIONS_MAX {
            checked.clear();
        }
        checked.extend(expected.into_keys());
        Ok(())
    }

    /// Write manifests, manifest lists and the index manifest, and build the snapshot.
    async fn prepare_snapshot(
        &self,
        latest: Option<&Snapshot>,
        changes: &AttemptChanges,
        request: &Request<'_>,
        new_id: i64,
        created: &mut CreatedFiles,
    ) -> Result<Snapshot> {
        let schema_id = self.latest_schema_id().await?;
        let base_before = match latest {
            Some(l) => data_manifests(&self.table, l).await?,
            None => Vec::new(),
        };
        let merger = Merger {
            table: &self.table,
            layout: &self.layout,
            writer: &self.writer,
            options: &self.settings.merge,
            schema_id,
        };
        let base_after = merger.merge(base_before, created).await?;
        let (base_list, base_size) = self.writer.write_list(&base_after, created).await?;
        let delta = self
            .writer
            .write_manifests(&changes.table, schema_id, created)
            .await?;
        let (delta_list, delta_size) = self.writer.write_list(&delta, created).await?;
        let changelog = if changes.changelog.is_empty() {
            None
        } else {
            let metas = self
                .writer
                .write_manifests(&changes.changelog, schema_id, created)
                .await?;
            Some(self.writer.write_list(&metas, created).await?)
        };
        let index_manifest = if changes.index.is_empty() {
            latest.and_then(|l| l.index_manifest.clone())
        } else {
            let before = match latest {
                Some(l) => live_index_entries(&self.table, l).await?,
                None => Vec::new(),
            };
            let live = combine_index_entries(before, &changes.index, self.settings.bucket_unaware)?;
            Some(self.writer.write_index_manifest(&live, created).await?)
        };
        let added = sum_rows(changes.table.iter().filter(|e| e.kind == FileKind::Add));
        let deleted = sum_rows(changes.table.iter().filter(|e| e.kind == FileKind::Delete));
        let delta_record_count = added.saturating_sub(deleted);
        let statistics = match latest {
            Some(l) => self.inherited_statistics(l, schema_id).await,
            None => None,
        };
        let time_millis = self.table.env().now_millis();
        Ok(Snapshot {
            version: CURRENT_VERSION,
            id: new_id,
            schema_id,
            base_manifest_list: base_list,
            delta_manifest_list: delta_list,
            total_record_count: latest
                .map_or(0, |l| l.total_record_count)
                .saturating_add(delta_record_count),
            delta_record_count,
            commit_user: self.commit_user.clone(),
            commit_identifier: request.identifier,
            commit_kind: request.kind,
            time_millis,
            base_manifest_list_size: Some(base_size),
            delta_manifest_list_size: Some(delta_size),
            changelog_manifest_list_size: changelog.as_ref().map(|(_, size)| *size),
            changelog_manifest_list: changelog.map(|(name, _)| name),
            index_manifest,
            changelog_record_count: (!changes.changelog.is_empty())
                .then(|| sum_rows(changes.changelog.iter())),
            watermark: latest.and_then(|l| l.watermark),
            statistics,
            next_row_id: latest.and_then(|l| l.next_row_id),
            properties: (!request.properties.is_empty()).then(|| request.properties.to_vec()),
            operation: request.operation.map(str::to_string),
            uuid: Some(self.table.env().uuid_string()),
            writer_version: Some(format!("tidelake-{}", env!("CARGO_PKG_VERSION"))),
        })
    }

    /// The latest schema id, listed anew (a schema change may have happened since opening).
    async fn latest_schema_id(&self) -> Result<i64> {
        list_schema_ids(self.table.branch_io())
            .await?
            .last()
            .copied()
            .ok_or_else(|| {
                Error::not_found(
                    "schema",
                    format!(
                        "no schema file in {}/schema",
                        self.table.branch_io().location()
                    ),
                )
            })
    }

    /// Java inherits the previous statistics file when it was computed for the latest schema.
    async fn inherited_statistics(&self, latest: &Snapshot, schema_id: i64) -> Option<String> {
        let name = latest.statistics.as_ref()?;
        let bytes = self
            .table
            .io()
            .read_opt(&format!("statistics/{name}"))
            .await
            .ok()??;
        let json: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        (json.get("schemaId")?.as_i64()? == schema_id).then(|| name.clone())
    }
}

/// Partitions whose live files the conflict checks must see (Java `changedPartitions`):
/// those of the data-file changes and of deletion-vector or global index changes.
fn changed_partitions(changes: &AttemptChanges) -> impl Iterator<Item = &[u8]> {
    let data = changes.table.iter().map(|e| e.partition.as_slice());
    let index = changes
        .index
        .iter()
        .filter(|e| {
            e.index_file.index_type == DELETION_VECTORS_INDEX || e.index_file.global_index.is_some()
        })
        .map(|e| e.partition.as_slice());
    data.chain(index)
}

/// True when `delta` is already applied to `base`: every file it adds (not merely moves between
/// levels) is live and every file it deletes is gone. A compaction that landed, committed again
/// after an ambiguous failure.
fn already_live(base: &[ManifestEntry], delta: &[ManifestEntry]) -> bool {
    fn name(e: &ManifestEntry) -> &str {
        e.file.file_name.as_str()
    }
    let deleted: HashSet<&str> = delta
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(name)
        .collect();
    let added: HashSet<&str> = delta
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(name)
        .collect();
    let live: HashSet<&str> = base.iter().map(name).collect();
    let mut new = added.difference(&deleted).peekable();
    new.peek().is_some()
        && new.all(|n| live.contains(n))
        && deleted.difference(&added).all(|n| !live.contains(n))
}
