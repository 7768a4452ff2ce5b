//! Snapshot expiration (Java `ExpireSnapshotsImpl`, `SnapshotDeletion`, `FileDeletionBase`).
//!
//! Which snapshots go (Java `expire()`): with `earliest..=latest` present, keep at most
//! `retain_max` (snapshots below `latest - retain_max + 1` always go) and at least
//! `retain_min`; never reach the smallest consumer `nextSnapshot`; expire at most `max_deletes`
//! per run; and stop at the first snapshot `id` whose successor was committed at or after the
//! `older_than_ms` cutoff (a snapshot only goes once the next one is old enough). The result is
//! a range `[begin, end)`; `end` becomes the earliest snapshot.
//!
//! What goes with them (candidates), Java's plan:
//! * data files the delta lists of `[begin, end]` mark DELETE (an ADD of the same file in the
//!   same delta, a level upgrade, cancels it), with their extra files — Java skips `begin`'s
//!   delta; including it also collects what an interrupted earlier run left (those files are
//!   checked for existence instead of deleted again, so the counts are what this run removed);
//! * extra files a DELETE names that the same delta's ADD of the same file no longer does (a
//!   file index replaced by a rewrite; Java leaves them to orphan cleaning);
//! * changelog files of the expired snapshots;
//! * manifest lists, manifests, index manifests, index files and statistics of the expired
//!   snapshots.
//!
//! What is protected (deviation from Java, which trusts file-history invariants and checks
//! only the nearest tag): every name referenced by the live files of `end`, by the deltas of
//! every later snapshot — re-listed after planning so commits made meanwhile count — and by
//! the tags that can share files with the expired range (from the last tag before `begin` up
//! to `end`, plus any tag past the latest snapshot), with their changelog files; (deviation
//! from Java, which does not) everything every other branch references, listed after the
//! snapshot files are deleted; and, when the changelog is not decoupled (any more), everything
//! remaining long-lived changelogs reference.
//!
//! The range and its order are the protocol committers rely on (see [`crate::snapshots`]):
//! * the range starts at the *true* earliest snapshot
//!   ([`SnapshotManager::true_earliest_id`]: the `EARLIEST` hint only when its predecessor is
//!   gone, else a listing), so leftovers of an interrupted run go first;
//! * retention counts from the *published* latest snapshot
//!   ([`SnapshotManager::published_latest_id`]: the `LATEST` hint when its snapshot exists),
//!   so a snapshot a committer has created but not yet verified never makes expiration delete
//!   that commit's parent;
//! * (D) snapshot files are deleted strictly in ascending id order, one at a time, each delete
//!   finished before the next starts: `snapshot-k` is deleted only once `snapshot-(k-1)` is
//!   gone. A committer that created `snapshot-N` and still finds `snapshot-(N-1)` afterwards
//!   therefore knows `N` was never expired;
//! * `EARLIEST` is written after the snapshot files below it are deleted (Java's order), so a
//!   hint `k` whose snapshot exists means everything below `k` is gone.
//!
//! Crash safety: all reads happen first; then the snapshot files go (oldest first, every
//! remaining snapshot stays readable), then `EARLIEST`, and only then the unreferenced files.
//! A crash leaves at most unreferenced files, which orphan cleaning removes, and a stale
//! `EARLIEST`, which the next run detects (its snapshot is gone) and replaces by a listing.
//!
//! Cost: O(expired snapshots), not O(history). A run that expires nothing reads the two hints,
//! checks three or four snapshot files and reads one: no listing. A run that expires reads the
//! expired snapshots, the deltas of the retained snapshots after the new earliest (the
//! protection above), the tags, and one listing of `branch/` (plus every root of each branch
//! there is).
//!
//! A decoupled changelog lifecycle (Java `changelogDecoupled`: `changelog.num-retained.*` /
//! `changelog.time-retained` above the snapshot retention, [`ExpireConfig::changelog`]): each
//! expired snapshot is written to `changelog/changelog-N` ([`crate::changelogs`]) just before
//! its snapshot file is deleted, and what that long-lived changelog reads is not a candidate:
//! its changelog list, manifests and files; without a changelog producer (the deltas are the
//! changelog) also its base and delta lists with their manifests and the data files written by
//! appends that the deltas delete (Java `SnapshotDeletion` with `changelogDecoupled`). The
//! long-lived changelogs are then expired by the changelog retention in the same
//! [`expire_snapshots`] call ([`super::changelog_expire`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use tidelake_spec::manifest::{FileKind, FileSource, ManifestEntry};
use tidelake_spec::options::{ChangelogProducer, Options};
use tidelake_spec::snapshot::{Snapshot, Tag};

use crate::changelogs::ChangelogStore;
use crate::error::{Error, Result};
use crate::io::failpoint;
use crate::layout::TableLayout;
use crate::maintenance::changelog_expire::expire_changelogs;
use crate::maintenance::consumers::min_next_snapshot;
use crate::maintenance::refs::{
    count_unreferenced, data_files, delete_unreferenced, metadata_files_of, or_missing,
    protect_long_lived_changelogs, protect_other_branches, Candidate, DataScope, DeletedFiles,
    FileCategory, Lists, MetaCache, References,
};
use crate::snapshots::{snapshot_path, write_hint, SnapshotManager, EARLIEST_HINT_PATH};
use crate::table::Table;

/// What to retain; [`ExpireConfig::from_options`] gives Paimon's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpireConfig {
    /// `snapshot.num-retained.min` (10).
    pub retain_min: i64,
    /// `snapshot.num-retained.max` (`i32::MAX`).
    pub retain_max: i64,
    /// Snapshots whose successor was committed before this epoch-ms time may go
    /// (now − `snapshot.time-retained`, 1 h).
    pub older_than_ms: i64,
    /// `snapshot.expire.limit` (50).
    pub max_deletes: i64,
    /// The changelog retention when the changelog outlives the snapshots (Java
    /// `ExpireConfig.isChangelogDecoupled`); `None`: changelog files go with their snapshots.
    pub changelog: Option<ChangelogRetention>,
}

/// How long long-lived changelogs are kept (Java `ExpireChangelogImpl.expire`): the same
/// rules as [`ExpireConfig`] applied to `changelog/changelog-N`, counted from the latest
/// snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangelogRetention {
    /// `changelog.num-retained.min` (default: the snapshot one).
    pub retain_min: i64,
    /// `changelog.num-retained.max` (default: the snapshot one).
    pub retain_max: i64,
    /// Long-lived changelogs committed before this epoch-ms time may go (now −
    /// `changelog.time-retained`, default: the snapshot one).
    pub older_than_ms: i64,
    /// `snapshot.expire.limit`, as Java.
    pub max_deletes: i64,
}

fn millis_before(now_ms: i64, retained: std::time::Duration) -> i64 {
    now_ms.saturating_sub(i64::try_from(retained.as_millis()).unwrap_or(i64::MAX))
}

impl ExpireConfig {
    /// The table options' retention, relative to `now_ms`.
    pub fn from_options(opts: &Options, now_ms: i64) -> Result<ExpireConfig> {
        let spec = |e| Error::from_spec("table options", e);
        ExpireConfig {
            retain_min: i64::from(opts.snapshot_num_retained_min().map_err(spec)?),
            retain_max: i64::from(opts.snapshot_num_retained_max().map_err(spec)?),
            older_than_ms: millis_before(now_ms, opts.snapshot_time_retained().map_err(spec)?),
            max_deletes: i64::from(opts.snapshot_expire_limit().map_err(spec)?),
            changelog: None,
        }
        .with_table_changelog(opts, now_ms)
    }

    /// This snapshot retention with the changelog retention of the table options `opts`
    /// (Java `CoreOptions.expireConfig`: an unset changelog option takes the snapshot value,
    /// and the changelog is decoupled when one of them exceeds it).
    pub fn with_table_changelog(self, opts: &Options, now_ms: i64) -> Result<ExpireConfig> {
        let spec = |e| Error::from_spec("table options", e);
        let retention = ChangelogRetention {
            retain_min: opts
                .changelog_num_retained_min()
                .map_err(spec)?
                .map_or(self.retain_min, i64::from),
            retain_max: opts
                .changelog_num_retained_max()
                .map_err(spec)?
                .map_or(self.retain_max, i64::from),
            older_than_ms: opts
                .changelog_time_retained()
                .map_err(spec)?
                .map_or(self.older_than_ms, |d| millis_before(now_ms, d)),
            max_deletes: self.max_deletes,
        };
        Ok(ExpireConfig {
            changelog: self.decouples(&retention).then_some(retention),
            ..self
        })
    }

    /// Java `ExpireConfig.changelogDecoupled`: the changelog retention keeps more than this.
    fn decouples(&self, changelog: &ChangelogRetention) -> bool {
        changelog.retain_max > self.retain_max
            || changelog.retain_min > self.retain_min
            || changelog.older_than_ms < self.older_than_ms
    }

    /// The table's configuration as of now.
    pub fn of_table(table: &Table) -> Result<ExpireConfig> {
        ExpireConfig::from_options(table.schema().options(), table.env().now_millis())
    }
}

/// What an expiration did (or, for [`plan_expiration`], would do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireResult {
    /// Snapshot files deleted.
    pub snapshots: u64,
    /// The earliest snapshot afterwards (`None` for a table without snapshots).
    pub earliest: Option<i64>,
    /// Long-lived changelogs written (one per expired snapshot when the changelog is
    /// decoupled).
    pub changelogs_kept: u64,
    /// Long-lived changelogs expired by the changelog retention.
    pub changelogs_expired: u64,
    pub deleted: DeletedFiles,
}

/// What [`expire_snapshots`] would do now with `config`, changing nothing (a dry run): the
/// snapshots it would expire, the earliest afterwards and the files it would delete (the
/// expiry of long-lived changelogs, which follows, is not planned).
pub async fn plan_expiration(table: &Table, config: &ExpireConfig) -> Result<ExpireResult> {
    expire(table, config, true).await
}

/// Expire snapshots of `table` as `config` allows; see the module docs.
pub async fn expire_snapshots(table: &Table, config: &ExpireConfig) -> Result<ExpireResult> {
    let mut result = expire(table, config, false).await?;
    if let Some(retention) = &config.changelog {
        // Java `AbstractFileStoreTable.newExpireRunnable`: changelog expiry follows.
        let (expired, deleted) = expire_changelogs(table, retention).await?;
        result.changelogs_expired = expired;
        result.deleted.add(&deleted);
    }
    if result.snapshots > 0 || result.changelogs_expired > 0 {
        let d = &result.deleted;
        log::info!(
            target: "tidelake.expire",
            "{}: expired {} snapshot(s), earliest now {:?}; kept {} and expired {} long-lived changelog(s); deleted {} data, {} changelog, {} manifest, {} index file(s)",
            table.location(),
            result.snapshots,
            result.earliest,
            result.changelogs_kept,
            result.changelogs_expired,
            d.data_files,
            d.changelog_files,
            d.manifest_files,
            d.index_files
        );
    }
    Ok(result)
}

async fn expire(table: &Table, config: &ExpireConfig, dry_run: bool) -> Result<ExpireResult> {
    if config.retain_min < 1 {
        return Err(Error::invalid(format!(
            "retain_min must be at least 1, got {}",
            config.retain_min
        )));
    }
    if config.retain_max < config.retain_min {
        return Err(Error::invalid(format!(
            "retain_max ({}) must not be less than retain_min ({})",
            config.retain_max, config.retain_min
        )));
    }
    if config.max_deletes < 0 {
        return Err(Error::invalid(format!(
            "max_deletes must not be negative, got {}",
            config.max_deletes
        )));
    }
    let sm = table.snapshot_manager();
    let Some(latest) = sm.published_latest_id().await? else {
        return Ok(ExpireResult::default());
    };
    let Some(earliest) = sm.true_earliest_id().await? else {
        return Ok(ExpireResult::default());
    };
    let end = expire_end(&sm, table, config, earliest, latest).await?;
    if end <= earliest {
        if dry_run {
            return Ok(ExpireResult {
                earliest: Some(earliest),
                ..ExpireResult::default()
            });
        }
        let hint = table.branch_io().read_opt(EARLIEST_HINT_PATH).await?;
        if hint.as_deref() != Some(earliest.to_string().as_bytes()) {
            write_hint(table.branch_io(), EARLIEST_HINT_PATH, earliest).await?;
        }
        return Ok(ExpireResult {
            earliest: Some(earliest),
            ..ExpireResult::default()
        });
    }
    let mut snapshots = Vec::new();
    for id in earliest..=end {
        match sm.snapshot(id).await {
            Ok(s) => snapshots.push(s),
            // Deleted by a concurrent expiration.
            Err(e) if e.is_missing() => {}
            Err(e) => return Err(e),
        }
    }
    let Some(end_snapshot) = snapshots.last().filter(|s| s.id == end).cloned() else {
        // The new earliest snapshot vanished meanwhile: someone else is expiring.
        return Ok(ExpireResult {
            earliest: sm.earliest_id().await?,
            ..ExpireResult::default()
        });
    };
    let expired: Vec<&Snapshot> = snapshots.iter().filter(|s| s.id < end).collect();

    let layout = TableLayout::new(table.schema())?;
    let mut cache = MetaCache::new(table);
    let keep = match config.changelog {
        None => KeepForChangelog::Nothing,
        Some(_) => {
            let opts = table.schema().options();
            let producer = opts
                .changelog_producer()
                .map_err(|e| Error::from_spec("table options", e))?;
            if producer == ChangelogProducer::None {
                KeepForChangelog::Deltas
            } else {
                KeepForChangelog::ChangelogFiles
            }
        }
    };
    let candidates = plan_candidates(&mut cache, &layout, &snapshots, &expired, keep).await?;

    let mut refs = References::default();
    refs.add(&mut cache, &end_snapshot, DataScope::Live).await?;
    let begin = expired.first().map_or(end, |s| s.id);
    let mut protection = Protection::new(begin, end);
    let covered = protection
        .protect_since(&mut cache, &sm, &mut refs, end)
        .await?;
    // Commits and tags created while planning.
    protection
        .protect_since(&mut cache, &sm, &mut refs, covered)
        .await?;

    if dry_run {
        if keep == KeepForChangelog::Nothing {
            protect_long_lived_changelogs(&mut cache, &mut refs, table.branch_io()).await?;
        }
        protect_other_branches(&mut cache, &mut refs, table).await?;
        return Ok(ExpireResult {
            snapshots: expired.len() as u64,
            earliest: Some(end),
            deleted: count_unreferenced(table.io(), candidates, &refs).await?,
            ..ExpireResult::default()
        });
    }
    // Invariant (D): one snapshot file at a time, ascending, each delete done before the next,
    // from the true earliest up; the hint only after the files below it are gone. A decoupled
    // changelog is kept (`changelog/changelog-N`) before its snapshot goes.
    let changelogs = ChangelogStore::new(table.branch_io().clone());
    for s in &expired {
        if keep != KeepForChangelog::Nothing {
            changelogs.write(s).await?;
        }
        table.branch_io().delete(&snapshot_path(s.id)).await?;
    }
    write_hint(table.branch_io(), EARLIEST_HINT_PATH, end).await?;
    failpoint!("expire-before-delete");
    if keep == KeepForChangelog::Nothing {
        // Long-lived changelogs of an earlier decoupled configuration.
        protect_long_lived_changelogs(&mut cache, &mut refs, table.branch_io()).await?;
    }
    protect_other_branches(&mut cache, &mut refs, table).await?;
    let deleted = delete_unreferenced(table.io(), candidates, &refs).await?;
    Ok(ExpireResult {
        snapshots: expired.len() as u64,
        earliest: Some(end),
        changelogs_kept: if keep == KeepForChangelog::Nothing {
            0
        } else {
            expired.len() as u64
        },
        changelogs_expired: 0,
        deleted,
    })
}

/// The counts of a retention (snapshots or long-lived changelogs), and the window over the ids
/// `earliest..=latest` they allow (Java `ExpireSnapshotsImpl.expire` and
/// `ExpireChangelogImpl.expire`).
pub(super) struct RetentionCounts {
    pub retain_min: i64,
    pub retain_max: i64,
    pub max_deletes: i64,
}

impl RetentionCounts {
    /// `(min, max_exclusive)`: ids below `min` go whatever their age (`retain_max`), ids from
    /// `max_exclusive` on stay (`retain_min`, and at most `max_deletes` from `earliest`).
    pub(super) fn range(&self, earliest: i64, latest: i64) -> (i64, i64) {
        let min = latest
            .saturating_sub(self.retain_max)
            .saturating_add(1)
            .max(earliest);
        let max_exclusive = latest
            .saturating_sub(self.retain_min)
            .saturating_add(1)
            .min(earliest.saturating_add(self.max_deletes));
        (min, max_exclusive)
    }
}

/// Java `expire()`: the exclusive end of the range to expire. Consumers are only looked up
/// (a listing) when retention and time would expire something: the common no-op costs no
/// listing.
async fn expire_end(
    sm: &SnapshotManager,
    table: &Table,
    config: &ExpireConfig,
    earliest: i64,
    latest: i64,
) -> Result<i64> {
    let (min, max_exclusive) = RetentionCounts {
        retain_min: config.retain_min,
        retain_max: config.retain_max,
        max_deletes: config.max_deletes,
    }
    .range(earliest, latest);
    let mut end = max_exclusive;
    for id in min..max_exclusive {
        match sm.snapshot(id + 1).await {
            Ok(next) if config.older_than_ms <= next.time_millis => {
                end = id;
                break;
            }
            Ok(_) => {}
            Err(e) if e.is_missing() => {}
            Err(e) => return Err(e),
        }
    }
    // Capping the range at the smallest consumer is the same as stopping the scan there.
    if end > earliest {
        if let Some(next) = min_next_snapshot(table.branch_io()).await? {
            end = end.min(next);
        }
    }
    Ok(end)
}

/// What the long-lived changelogs of the expired snapshots keep (Java `SnapshotDeletion` with
/// `changelogDecoupled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeepForChangelog {
    /// Not decoupled: the changelog goes with its snapshot.
    Nothing,
    /// A changelog producer: the changelog list, its manifests and the changelog files.
    ChangelogFiles,
    /// No changelog producer (the deltas are the changelog): also the base and delta lists
    /// with their manifests, and the data files written by appends (`file_source` APPEND or
    /// unknown) that the deltas delete.
    Deltas,
}

/// Files the expiration may delete: see the module docs. Metadata of the expired snapshots
/// that an interrupted earlier run already deleted is skipped.
async fn plan_candidates(
    cache: &mut MetaCache<'_>,
    layout: &TableLayout,
    including_end: &[Snapshot],
    expired: &[&Snapshot],
    keep: KeepForChangelog,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for (i, s) in including_end.iter().enumerate() {
        let delta = or_missing(cache.list_entries(&s.delta_manifest_list).await)?;
        if keep != KeepForChangelog::Deltas {
            for (e, names) in replaced_extra_files(&delta) {
                let dir = layout.bucket_path(&layout.decode_partition(&e.partition)?, e.bucket)?;
                out.extend(names.into_iter().map(|name| Candidate {
                    path: e.file.aligned_path(&dir, &name),
                    name,
                    category: FileCategory::Data,
                    maybe_gone: i == 0,
                }));
            }
        }
        let mut deleted = deleted_in_delta(delta);
        if keep == KeepForChangelog::Deltas {
            deleted.retain(|e| e.file.file_source.is_some_and(|f| f != FileSource::Append));
        }
        let deleted = data_files(layout, &deleted, FileCategory::Data)?;
        // The first delta's files belong to snapshots expired before: usually gone already.
        out.extend(deleted.into_iter().map(|c| Candidate {
            maybe_gone: i == 0,
            ..c
        }));
    }
    let lists = match keep {
        KeepForChangelog::Nothing => Lists::All,
        KeepForChangelog::ChangelogFiles => Lists::Data,
        KeepForChangelog::Deltas => Lists::None,
    };
    // Consecutive snapshots list mostly the same manifests: each path once (the first, as
    // `delete_unreferenced` would keep it), so memory follows the distinct files.
    let mut seen: HashSet<String> = out.iter().map(|c| c.path.clone()).collect();
    for s in expired {
        if keep == KeepForChangelog::Nothing {
            let changelog = or_missing(cache.changelog_entries(s).await)?;
            out.extend(data_files(layout, &changelog, FileCategory::Changelog)?);
        }
        let metadata = metadata_files_of(cache, s, true, lists).await?;
        out.extend(metadata.into_iter().filter(|c| seen.insert(c.path.clone())));
    }
    Ok(out)
}

/// The extra files a DELETE of one delta names that the same delta's ADD of the same file no
/// longer does (a file index replaced by [`crate::ops::RewriteFileIndex`]), with that DELETE:
/// they go with the snapshot like the files of a DELETE (Java leaves them to orphan cleaning);
/// the data file itself stays.
pub(super) fn replaced_extra_files(
    entries: &[ManifestEntry],
) -> Vec<(&ManifestEntry, Vec<String>)> {
    let added: HashMap<(&[u8], i32, &str), &ManifestEntry> = entries
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(|e| {
            (
                (e.partition.as_slice(), e.bucket, e.file.file_name.as_str()),
                e,
            )
        })
        .collect();
    entries
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .filter_map(|e| {
            let again =
                added.get(&(e.partition.as_slice(), e.bucket, e.file.file_name.as_str()))?;
            let names: Vec<String> = e
                .file
                .extra_files
                .iter()
                .filter(|n| !again.file.extra_files.contains(n))
                .cloned()
                .collect();
            (!names.is_empty()).then_some((e, names))
        })
        .collect()
}

/// Java `planDeletedInDeltaManifest`: DELETE entries of one delta, minus files the same delta
/// adds again (upgrades), by file path.
pub(super) fn deleted_in_delta(entries: Vec<ManifestEntry>) -> Vec<ManifestEntry> {
    let mut by_file: BTreeMap<(Vec<u8>, i32, String), Option<ManifestEntry>> = BTreeMap::new();
    for e in entries {
        let key = (e.partition.clone(), e.bucket, e.file.file_name.clone());
        let value = (e.kind == FileKind::Delete).then_some(e);
        by_file.insert(key, value);
    }
    by_file.into_values().flatten().collect()
}

/// What an expiry of the ids `begin..end` protects besides the end: the files the snapshots
/// after the end add, and the live files of every tag that may share files with the
/// candidates: tags from the last one *before* `begin` (a file `begin`'s delta deletes was live
/// at `begin - 1`) up to `end`, and tags past the latest snapshot. By file-history continuity
/// (a file or manifest referenced at two points is referenced in between) older tags only hold
/// candidates that one holds too.
pub(super) struct Protection {
    begin: i64,
    end: i64,
    /// Tag names already protected.
    tags_seen: HashSet<String>,
}

impl Protection {
    pub(super) fn new(begin: i64, end: i64) -> Self {
        Self {
            begin,
            end,
            tags_seen: HashSet::new(),
        }
    }

    /// Protects what the snapshots after `covered` up to the latest one add and the tags (see
    /// the type); returns the latest id, the `covered` of a next call that catches up with
    /// commits and tags created meanwhile.
    pub(super) async fn protect_since(
        &mut self,
        cache: &mut MetaCache<'_>,
        sm: &SnapshotManager,
        refs: &mut References,
        covered: i64,
    ) -> Result<i64> {
        let latest = sm.latest_id().await?.unwrap_or(covered).max(covered);
        for id in (covered + 1)..=latest {
            let snap = sm.snapshot(id).await?;
            refs.add(cache, &snap, DataScope::Delta).await?;
        }
        let tags: Vec<(String, Arc<Tag>)> = sm.tags().await?;
        let floor = tags
            .iter()
            .map(|(_, t)| t.snapshot.id)
            .filter(|id| *id < self.begin)
            .max()
            .unwrap_or(i64::MIN);
        for (name, tag) in tags {
            let id = tag.snapshot.id;
            if ((floor..self.end).contains(&id) || id > latest) && self.tags_seen.insert(name) {
                refs.add(cache, &tag.snapshot, DataScope::Live).await?;
            }
        }
        Ok(latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidelake_spec::manifest::{DataFileMeta, SimpleStats};

    fn entry(kind: FileKind, name: &str, level: i32) -> ManifestEntry {
        let stats = SimpleStats {
            min_values: vec![],
            max_values: vec![],
            null_counts: None,
        };
        ManifestEntry {
            kind,
            partition: vec![0, 0, 0, 0],
            bucket: 0,
            total_buckets: 1,
            file: DataFileMeta {
                file_name: name.into(),
                file_size: 1,
                row_count: 1,
                min_key: vec![],
                max_key: vec![],
                key_stats: stats.clone(),
                value_stats: stats,
                min_sequence_number: 0,
                max_sequence_number: 0,
                schema_id: 0,
                level,
                extra_files: vec![],
                creation_time: None,
                delete_row_count: None,
                embedded_index: None,
                file_source: None,
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
                write_cols_sequences: None,
            },
        }
    }

    #[test]
    fn upgrades_in_the_same_delta_are_not_deleted() {
        let delta = vec![
            entry(FileKind::Delete, "a", 0),
            entry(FileKind::Add, "a", 5),
            entry(FileKind::Delete, "b", 0),
            entry(FileKind::Add, "c", 1),
        ];
        let names: Vec<String> = deleted_in_delta(delta)
            .into_iter()
            .map(|e| e.file.file_name)
            .collect();
        assert_eq!(names, vec!["b".to_string()]);
    }

    #[test]
    fn index_files_a_re_add_no_longer_names_go() {
        let with = |kind, extras: &[&str]| {
            let mut e = entry(kind, "a", 0);
            e.file.extra_files = extras.iter().map(|x| x.to_string()).collect();
            e
        };
        let delta = vec![
            with(FileKind::Delete, &["a.index", "a.other"]),
            with(FileKind::Add, &["a.other", "a-1.index"]),
            entry(FileKind::Delete, "b", 0),
        ];
        let replaced: Vec<Vec<String>> = replaced_extra_files(&delta)
            .into_iter()
            .map(|(_, names)| names)
            .collect();
        assert_eq!(replaced, vec![vec!["a.index".to_string()]]);
        // an upgrade keeps its extra files
        let upgrade = vec![
            with(FileKind::Delete, &["a.index"]),
            with(FileKind::Add, &["a.index"]),
        ];
        assert!(replaced_extra_files(&upgrade).is_empty());
    }
}
