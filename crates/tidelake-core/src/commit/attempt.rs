//! One commit attempt and the retry loop around it (Java `FileStoreCommitImpl.tryCommit` /
//! `tryCommitOnce`, `RenamingSnapshotCommit`, `RetryWaiter`, `CommitChangesProvider`,
//! `OverwriteChangesProvider`). The flow is drawn in the [module docs](crate::commit).
//!
//! Invariants: checks run before anything is written, so a detected conflict leaves no file
//! behind; an attempt's files are deleted when it fails before creating the snapshot file or
//! when the snapshot id was provably taken, and kept when the outcome is unknown (the next
//! attempt then looks for its own snapshot first).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tidelake_spec::manifest::{
    FileKind, IndexManifestEntry, ManifestEntry, DELETION_VECTORS_INDEX,
};
use tidelake_spec::schema::parse_schema_file_name;
use tidelake_spec::snapshot::{snapshot_file_name, CommitKind, Snapshot, CURRENT_VERSION};

use crate::commit::conflict::{bucket_counts, ConflictChecker};
use crate::commit::file_store_commit::FileStoreCommit;
use crate::commit::index::combine_index_entries;
use crate::commit::manifest_writer::CreatedFiles;
use crate::commit::merge::Merger;
use crate::commit::overwrite::PartitionMatcher;
use crate::commit::scan::{data_manifests, live_entries_of, read_live_entries, PartitionSet};
use crate::error::{Error, Result};
use crate::scan::plan::live_index_entries;

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
    Overwrite {
        matcher: Option<PartitionMatcher>,
        new: AttemptChanges,
    },
}

/// One commit request: everything except the changes.
pub(crate) struct Request<'a> {
    pub(crate) identifier: i64,
    pub(crate) kind: CommitKind,
    pub(crate) detect_conflicts: bool,
    pub(crate) properties: &'a [(String, String)],
    pub(crate) operation: Option<&'static str>,
}

/// Why an attempt did not create its snapshot.
enum Failure {
    /// `snapshot-<id>` already existed: another writer won; this attempt's files are deleted.
    Lost(i64),
    /// Creating the snapshot file failed without telling whether it exists.
    Uncertain(Error),
}

fn sum_rows<'a>(entries: impl Iterator<Item = &'a ManifestEntry>) -> i64 {
    entries.fold(0i64, |acc, e| acc.saturating_add(e.file.row_count))
}

impl FileStoreCommit {
    /// Java `tryCommit`: attempt until a snapshot is created, a conflict is detected, or the
    /// retries (`commit.max-retries`) or the time (`commit.timeout`) run out.
    pub(crate) async fn try_commit(
        &self,
        source: &mut Source,
        request: &Request<'_>,
    ) -> Result<i64> {
        let started = Instant::now();
        let sm = self.table.snapshot_manager();
        let mut retries: u32 = 0;
        // Latest snapshot id seen by the previous, failed attempt.
        let mut failed_at: Option<Option<i64>> = None;
        loop {
            let latest = sm.latest().await?;
            if let Some(seen) = failed_at {
                if let Some(id) = self
                    .find_own_snapshot(seen, latest.as_ref(), request)
                    .await?
                {
                    return Ok(id);
                }
            }
            let changes = self.provide(source, latest.as_ref()).await?;
            let failure = match self
                .try_commit_once(latest.as_ref(), &changes, request)
                .await?
            {
                Ok(id) => return Ok(id),
                Err(failure) => failure,
            };
            let seen = latest.as_ref().map(|s| s.id);
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
                    Failure::Uncertain(error) => {
                        let latest = sm.latest().await?;
                        match self.find_own_snapshot(seen, latest.as_ref(), request).await? {
                            Some(id) => Ok(id),
                            None => Err(error),
                        }
                    }
                };
            }
            tokio::time::sleep(self.retry_wait(retries)).await;
            retries += 1;
            failed_at = Some(seen);
        }
    }

    /// Java `RetryWaiter`: `min(min_wait * 2^retry, max_wait)` plus up to 20% jitter.
    fn retry_wait(&self, retry: u32) -> Duration {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let factor = 1u64.checked_shl(retry).unwrap_or(u64::MAX);
        let base = millis(self.settings.min_retry_wait)
            .saturating_mul(factor)
            .min(millis(self.settings.max_retry_wait));
        let jitter = uuid::Uuid::new_v4().as_u64_pair().0 % (base / 5).max(1);
        Duration::from_millis(base.saturating_add(jitter))
    }

    /// A snapshot in `(seen, latest]` made by this user with the request's identifier and kind:
    /// an earlier attempt that did succeed.
    async fn find_own_snapshot(
        &self,
        seen: Option<i64>,
        latest: Option<&Snapshot>,
        request: &Request<'_>,
    ) -> Result<Option<i64>> {
        let Some(latest) = latest else {
            return Ok(None);
        };
        let sm = self.table.snapshot_manager();
        let ours = |s: &Snapshot| {
            s.commit_user == self.commit_user
                && s.commit_identifier == request.identifier
                && s.commit_kind == request.kind
        };
        for id in seen.map_or(1, |s| s.saturating_add(1))..=latest.id {
            let found = if id == latest.id {
                ours(latest)
            } else {
                match sm.snapshot(id).await {
                    Ok(s) => ours(&s),
                    Err(Error::NotFound { .. }) => false,
                    Err(e) => return Err(e),
                }
            };
            if found {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    /// The changes of one attempt against `latest` (overwrites recompute their deletions).
    async fn provide(
        &self,
        source: &mut Source,
        latest: Option<&Snapshot>,
    ) -> Result<AttemptChanges> {
        let (matcher, new) = match source {
            Source::Fixed(changes) => return Ok(changes.clone()),
            Source::Overwrite { matcher, new } => (matcher, new),
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
        let current = read_live_entries(
            &self.table,
            latest,
            |_| true,
            |e| Ok((postpone_table || e.bucket >= 0) && selected(&e.partition)?),
        )
        .await?;
        let mut table: Vec<ManifestEntry> = current
            .into_iter()
            .map(|e| ManifestEntry {
                kind: FileKind::Delete,
                ..e
            })
            .collect();
        table.extend(new.table.iter().cloned());
        let mut index = Vec::new();
        for e in live_index_entries(&self.table, latest).await? {
            if selected(&e.partition)? {
                index.push(IndexManifestEntry {
                    kind: FileKind::Delete,
                    ..e
                });
            }
        }
        index.extend(new.index.iter().cloned());
        Ok(AttemptChanges {
            table,
            changelog: Vec::new(),
            index,
        })
    }

    /// Java `tryCommitOnce`: check, write the metadata files, create the snapshot file.
    async fn try_commit_once(
        &self,
        latest: Option<&Snapshot>,
        changes: &AttemptChanges,
        request: &Request<'_>,
    ) -> Result<std::result::Result<i64, Failure>> {
        let new_id = latest.map_or(1, |s| s.id + 1);
        let checker = ConflictChecker {
            layout: &self.layout,
            lsm_key_types: (self.settings.has_primary_key && !self.settings.pk_clustering_override)
                .then_some(self.settings.key_types.as_slice()),
            commit_user: &self.commit_user,
            table_location: self.table.location(),
        };
        match latest {
            None => {
                bucket_counts(&changes.table, |p, new, prev| {
                    Error::invalid(checker.bucket_mismatch(p, new, prev))
                })?;
            }
            Some(latest) if request.detect_conflicts => {
                let partitions = PartitionSet::new(&self.layout, changed_partitions(changes));
                let base = live_entries_of(&self.table, latest, &partitions).await?;
                checker.check(latest, base, &changes.table, request.kind)?;
            }
            Some(latest) if request.kind == CommitKind::Append && self.settings.bucket > 0 => {
                self.check_fixed_buckets(&checker, latest, &changes.table)
                    .await?;
            }
            Some(_) => {}
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
        match io
            .put_if_absent(
                &format!("snapshot/{}", snapshot_file_name(new_id)),
                snapshot.to_json(),
            )
            .await
        {
            Ok(true) => {
                // The hint is best effort: readers verify it (see `SnapshotManager::latest_id`).
                let _ = io.write(LATEST_HINT, new_id.to_string()).await;
                Ok(Ok(new_id))
            }
            Ok(false) => {
                created.delete_all(io).await;
                Ok(Err(Failure::Lost(new_id)))
            }
            Err(e) => Ok(Err(Failure::Uncertain(e))),
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
        let time_millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
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
            uuid: Some(uuid::Uuid::new_v4().to_string()),
            writer_version: Some(format!("tidelake-{}", env!("CARGO_PKG_VERSION"))),
        })
    }

    /// The latest schema id, listed anew (a schema change may have happened since opening).
    async fn latest_schema_id(&self) -> Result<i64> {
        let files = self.table.io().list_dir("schema").await?;
        files
            .iter()
            .filter_map(|f| parse_schema_file_name(f.path.rsplit('/').next().unwrap_or("")))
            .max()
            .ok_or_else(|| {
                Error::not_found(
                    "schema",
                    format!("no schema file in {}/schema", self.table.location()),
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
