//! Expiry of long-lived changelogs (Java `ExpireChangelogImpl.expire`, `ChangelogDeletion`),
//! run by [`super::expire_snapshots`] after the snapshots when the changelog is decoupled.
//!
//! Which go: with long-lived changelogs `earliest..=latest` and the latest snapshot `L`, the
//! range is `[earliest, end)` where `end` is at least `L - retain_max + 1` and at most
//! `L - retain_min + 1`, the smallest consumer `nextSnapshot`, `earliest + max_deletes` and
//! `latest` (the latest long-lived changelog always stays); within that, `end` stops at the
//! first changelog committed at or after the `older_than_ms` cutoff.
//!
//! What goes with them (candidates): the changelog files their changelog lists add, the data
//! files their delta lists delete (tables without a changelog producer kept those past the
//! snapshot expiry), and their changelog, delta and base lists with their manifests, when
//! still there (snapshot expiry drops the base and delta lists of a table with a changelog
//! producer). Index manifests and statistics went with the snapshots.
//!
//! What is protected: everything the long-lived changelog `end` references (Java's skipping
//! set), the live files of the earliest snapshot and the deltas of the later ones, the tags,
//! and every other branch (the same deviations from Java as [`super::expire`]).
//!
//! Order: the `changelog-N` files go first, ascending, then `changelog/EARLIEST`, then the
//! unreferenced files: a crash leaves at most orphans.

use crate::changelogs::ChangelogStore;
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::maintenance::consumers::min_next_snapshot;
use crate::maintenance::expire::{
    deleted_in_delta, ChangelogRetention, Protection, RetentionCounts,
};
use crate::maintenance::refs::{
    data_files, delete_unreferenced, metadata_files_of, or_missing, protect_other_branches,
    Candidate, DataScope, DeletedFiles, FileCategory, Lists, MetaCache, References,
};
use crate::table::Table;

/// Java's bounds before the time check: `(min, max_inclusive)`, the ids the cutoff scan looks
/// at (`min..=max_inclusive`, `max_inclusive` being the end when no changelog is young enough).
fn bounds(
    latest_snapshot: i64,
    earliest: i64,
    latest: i64,
    retention: &ChangelogRetention,
    min_next: Option<i64>,
) -> (i64, i64) {
    let (min, max) = RetentionCounts {
        retain_min: retention.retain_min,
        retain_max: retention.retain_max,
        max_deletes: retention.max_deletes,
    }
    .range(earliest, latest_snapshot);
    (min, max.min(min_next.unwrap_or(i64::MAX)).min(latest))
}

/// Expire long-lived changelogs of `table` as `retention` allows; returns how many went and
/// the files deleted. (Java's `expire_changelogs` procedure; [`super::expire_snapshots`] runs
/// it with the table's retention when the changelog is decoupled.)
pub async fn expire_changelogs(
    table: &Table,
    retention: &ChangelogRetention,
) -> Result<(u64, DeletedFiles)> {
    if retention.retain_max < retention.retain_min {
        return Err(Error::invalid(format!(
            "changelog retain_max ({}) must not be less than retain_min ({})",
            retention.retain_max, retention.retain_min
        )));
    }
    let sm = table.snapshot_manager();
    let store = ChangelogStore::new(table.branch_io().clone());
    let (Some(latest_snapshot), Some(earliest_snapshot)) =
        (sm.published_latest_id().await?, sm.earliest_id().await?)
    else {
        return Ok((0, DeletedFiles::default()));
    };
    let (Some(latest), Some(earliest)) = (store.latest_id().await?, store.earliest_id().await?)
    else {
        return Ok((0, DeletedFiles::default()));
    };
    let min_next = min_next_snapshot(table.branch_io()).await?;
    let (min, max) = bounds(latest_snapshot, earliest, latest, retention, min_next);
    let mut end = max;
    for id in min..=max {
        if let Some(c) = store.read(id).await? {
            if retention.older_than_ms <= c.time_millis {
                end = id;
                break;
            }
        }
    }
    if end <= earliest {
        return Ok((0, DeletedFiles::default()));
    }
    let Some(end_changelog) = store.read(end).await? else {
        // Expired meanwhile by someone else.
        return Ok((0, DeletedFiles::default()));
    };

    let layout = TableLayout::new(table.schema())?;
    let mut cache = MetaCache::new(table);
    let mut expired = Vec::new();
    let mut candidates: Vec<Candidate> = Vec::new();
    for id in earliest..end {
        let Some(c) = store.read(id).await? else {
            continue;
        };
        let changelog = or_missing(cache.changelog_entries(&c).await)?;
        candidates.extend(data_files(&layout, &changelog, FileCategory::Changelog)?);
        let delta = or_missing(cache.list_entries(&c.delta_manifest_list).await)?;
        candidates.extend(data_files(
            &layout,
            &deleted_in_delta(delta),
            FileCategory::Data,
        )?);
        candidates.extend(metadata_files_of(&mut cache, &c, true, Lists::All).await?);
        expired.push(id);
    }

    let mut refs = References::default();
    refs.add_changelog(&mut cache, &end_changelog).await?;
    let snapshot = sm.snapshot(earliest_snapshot).await?;
    refs.add(&mut cache, &snapshot, DataScope::Live).await?;
    Protection::new(earliest, earliest_snapshot)
        .protect_since(&mut cache, &sm, &mut refs, earliest_snapshot)
        .await?;

    for id in &expired {
        store.delete(*id).await?;
    }
    store.write_earliest_hint(end).await?;
    protect_other_branches(&mut cache, &mut refs, table).await?;
    let deleted = delete_unreferenced(table.io(), candidates, &refs).await?;
    Ok((expired.len() as u64, deleted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retention(retain_min: i64, retain_max: i64, max_deletes: i64) -> ChangelogRetention {
        ChangelogRetention {
            retain_min,
            retain_max,
            older_than_ms: i64::MAX,
            max_deletes,
        }
    }

    #[test]
    fn retain_max_counts_from_the_latest_snapshot_and_the_latest_changelog_stays() {
        // Snapshots 8..=10, long-lived changelogs 1..=7, keep at most 5: 6..=10 stay, but the
        // cutoff scan starts at 6 and the end never passes changelog 7.
        assert_eq!(bounds(10, 1, 7, &retention(1, 5, 100), None), (6, 7));
        // Keep at most 8: the scan starts at 3; retain_min 1 allows up to 10, capped at 7.
        assert_eq!(bounds(10, 1, 7, &retention(1, 8, 100), None), (3, 7));
    }

    #[test]
    fn retain_min_consumers_and_the_delete_limit_cap_the_end() {
        assert_eq!(bounds(10, 1, 7, &retention(6, 8, 100), None).1, 5);
        assert_eq!(bounds(10, 1, 7, &retention(1, 8, 100), Some(4)).1, 4);
        assert_eq!(bounds(10, 1, 7, &retention(1, 8, 2), None).1, 3);
    }
}
