//! Creating, deleting and expiring tags (Java `TagManager.createTag/deleteTag`,
//! `TagDeletion`, `TagTimeExpire`, `AbstractFileStoreTable.findSnapshot`).
//!
//! * A tag file is the snapshot's JSON plus, only when a retention is given (explicitly or by
//!   `tag.default-time-retained`), `tagCreateTime` (local time, as Java's `LocalDateTime.now()`)
//!   and `tagTimeRetained`; written once, never replaced ([`Error::AlreadyExists`]).
//! * Deleting a tag whose snapshot still exists, or that shares its snapshot with another tag,
//!   only deletes the tag file. Otherwise the tag was the last thing keeping its files, and
//!   they are deleted unless the neighbours reference them: the previous tag and the nearest
//!   later root (the earliest snapshot or the next tag, whichever is older). By file-history
//!   continuity (a file live at two points is live in between) nothing else on this branch
//!   can; other branches' references are added (unlike Java), listed after the tag file is
//!   deleted. Unlike Java, the tag's changelog files are deleted too (expiration keeps them for
//!   tags, see [`super::expire`]); whatever a long-lived changelog (`changelog/changelog-N`)
//!   references is kept.
//! * Replacing overwrites the tag file (the tag must exist); renaming writes the new name
//!   before deleting the old one.
//! * Expiring: tags whose `tagCreateTime + tagTimeRetained` has passed are deleted as above.
//! * `tag.create-success-file` (Java `SuccessFileTagCallback`, one of the tag callbacks):
//!   creating a tag (manually or automatically) writes `tag/tag-success-file/<tag>_SUCCESS`
//!   under the branch, keeping the creation time of one that exists; deleting a tag (manually,
//!   by expiry, by `tag.num-retained-max`, by purging) deletes it. As in Java, replacing or
//!   renaming a tag, rolling back and fast-forwarding run no callbacks, so they leave success
//!   files as they are.

use std::sync::Arc;
use std::time::Duration;

use chrono::{Datelike, NaiveDateTime, Timelike};
use tidelake_spec::snapshot::{LocalDateTime, Snapshot, Tag};

use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::maintenance::refs::{
    data_files, delete_unreferenced, metadata_files, or_missing, protect_long_lived_changelogs,
    protect_other_branches, DataScope, DeletedFiles, FileCategory, MetaCache, References,
};
use crate::maintenance::success_file;
use crate::snapshots::{check_name, snapshot_path, tag_path, tag_success_path};
use crate::table::Table;

/// `time` as the `LocalDateTime` stored in tags.
fn local_date_time(time: NaiveDateTime) -> LocalDateTime {
    LocalDateTime {
        year: time.year(),
        // chrono guarantees these ranges.
        month: time.month() as u8,
        day: time.day() as u8,
        hour: time.hour() as u8,
        minute: time.minute() as u8,
        second: time.second() as u8,
        nano: time.nanosecond().min(999_999_999),
    }
}

/// A stored `LocalDateTime` as a chrono value (`None` when it is not a valid date).
fn naive(time: &LocalDateTime) -> Option<NaiveDateTime> {
    chrono::NaiveDate::from_ymd_opt(time.year, u32::from(time.month), u32::from(time.day))?
        .and_hms_nano_opt(
            u32::from(time.hour),
            u32::from(time.minute),
            u32::from(time.second),
            time.nano,
        )
}

/// A stored `LocalDateTime` as wall-clock epoch milliseconds (for system tables).
pub(crate) fn local_date_time_millis(time: &LocalDateTime) -> Option<i64> {
    naive(time).map(|t| t.and_utc().timestamp_millis())
}

/// Java `findSnapshot`: snapshot `id`, or the snapshot of a tag with that id once the
/// snapshot itself has expired.
async fn find_snapshot(table: &Table, id: i64) -> Result<Snapshot> {
    let sm = table.snapshot_manager();
    match sm.snapshot(id).await {
        Ok(s) => Ok(s),
        Err(e) if e.is_missing() => sm
            .tags()
            .await?
            .into_iter()
            .map(|(_, t)| t.snapshot.clone())
            .find(|s| s.id == id)
            .ok_or_else(|| {
                Error::not_found(
                    "snapshot",
                    format!(
                        "cannot create tag because snapshot {id} of {} doesn't exist",
                        table.location()
                    ),
                )
            }),
        Err(e) => Err(e),
    }
}

/// Snapshot `snapshot_id` of `table`, the latest by default (`what` names the operation in
/// the error when there is none).
async fn snapshot_or_latest(
    table: &Table,
    snapshot_id: Option<i64>,
    what: &str,
) -> Result<Snapshot> {
    match snapshot_id {
        Some(id) => find_snapshot(table, id).await,
        None => table.snapshot_manager().latest().await?.ok_or_else(|| {
            Error::not_found(
                "snapshot",
                format!("cannot {what} because {} has no snapshot", table.location()),
            )
        }),
    }
}

/// The tag of `snapshot` retained for `time_retained` (`None`: forever; Java writes the create
/// time only for tags with a retention, for readers older than 0.8).
pub(crate) fn new_tag(table: &Table, snapshot: Snapshot, time_retained: Option<Duration>) -> Tag {
    Tag {
        snapshot,
        tag_create_time: time_retained.map(|_| local_date_time(table.env().local_now())),
        tag_time_retained: time_retained,
    }
}

/// `tag.default-time-retained` of `table`.
fn default_time_retained(table: &Table) -> Result<Option<Duration>> {
    table
        .schema()
        .options()
        .tag_default_time_retained()
        .map_err(|e| Error::from_spec("table options", e))
}

/// Write tag file `name` unless it exists; `false` when it did.
pub(crate) async fn put_new_tag(table: &Table, name: &str, tag: &Tag) -> Result<bool> {
    table
        .branch_io()
        .put_if_absent(&tag_path(name), tag.to_json().into_bytes())
        .await
}

/// Whether `table` asks for tag success files (`tag.create-success-file`).
fn success_files(table: &Table) -> Result<bool> {
    table
        .schema()
        .options()
        .tag_create_success_file()
        .map_err(|e| Error::from_spec("table options", e))
}

/// The tag callbacks after tag `name` was created (Java `notifyCreation`): with
/// `tag.create-success-file`, write its success file, keeping the creation time of one that
/// exists.
pub(crate) async fn tag_created(table: &Table, name: &str) -> Result<()> {
    if !success_files(table)? {
        return Ok(());
    }
    let path = tag_success_path(name);
    success_file::mark(table.branch_io(), &path, table.env().now_millis()).await
}

/// The tag callbacks after tag `name` was deleted (Java `notifyDeletion`): with
/// `tag.create-success-file`, delete its success file.
async fn tag_deleted(table: &Table, name: &str) -> Result<()> {
    if !success_files(table)? {
        return Ok(());
    }
    table.branch_io().delete(&tag_success_path(name)).await
}

/// Whether deleting a tag runs the tag callbacks: Java's `deleteTag` does,
/// `deleteAllTagsOfOneSnapshot` (used by batch tags' `tag.num-retained-max`) does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Callbacks {
    Run,
    Skip,
}

/// Create tag `name` of snapshot `snapshot_id` (the latest by default), retained for
/// `time_retained` (`tag.default-time-retained` by default; `None`: forever).
pub async fn create_tag(
    table: &Table,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained: Option<Duration>,
) -> Result<Tag> {
    check_name("tag", name)?;
    let snapshot = snapshot_or_latest(table, snapshot_id, "create tag").await?;
    let time_retained = match time_retained {
        Some(d) => Some(d),
        None => default_time_retained(table)?,
    };
    let tag = new_tag(table, snapshot, time_retained);
    if !put_new_tag(table, name, &tag).await? {
        return Err(Error::AlreadyExists(format!(
            "tag '{name}' of {}",
            table.location()
        )));
    }
    tag_created(table, name).await?;
    Ok(tag)
}

/// Replace existing tag `name` by a tag of snapshot `snapshot_id` (the latest by default)
/// retained for `time_retained` (`None`: forever; unlike creation, no default), as Java's
/// `replaceTag`. The old tag's snapshot keeps its files until expiry or orphan cleaning
/// decides, as in Java.
pub async fn replace_tag(
    table: &Table,
    name: &str,
    snapshot_id: Option<i64>,
    time_retained: Option<Duration>,
) -> Result<Tag> {
    check_name("tag", name)?;
    table.snapshot_manager().tag(name).await?;
    let snapshot = snapshot_or_latest(table, snapshot_id, "replace tag").await?;
    let tag = new_tag(table, snapshot, time_retained);
    table
        .branch_io()
        .write(&tag_path(name), tag.to_json().into_bytes())
        .await?;
    Ok(tag)
}

/// Rename tag `name` to `target` (Java `TagManager.renameTag`): the target is written first
/// (refused when it exists), then the old name deleted, so a crash between the two leaves
/// both names, never neither.
pub async fn rename_tag(table: &Table, name: &str, target: &str) -> Result<()> {
    check_name("tag", name)?;
    check_name("tag", target)?;
    table.snapshot_manager().tag(name).await?;
    let bytes = table.branch_io().read(&tag_path(name)).await?;
    if !table
        .branch_io()
        .put_if_absent(&tag_path(target), bytes)
        .await?
    {
        return Err(Error::AlreadyExists(format!(
            "tag '{target}' of {}",
            table.location()
        )));
    }
    table.branch_io().delete(&tag_path(name)).await
}

/// Delete tag `name` and the files only it kept; see the module docs.
pub async fn delete_tag(table: &Table, name: &str) -> Result<DeletedFiles> {
    delete_tag_with(table, name, Callbacks::Run).await
}

/// Delete the file of tag `name`, then run the tag `callbacks`.
async fn delete_tag_file(table: &Table, name: &str, callbacks: Callbacks) -> Result<()> {
    table.branch_io().delete(&tag_path(name)).await?;
    match callbacks {
        Callbacks::Run => tag_deleted(table, name).await,
        Callbacks::Skip => Ok(()),
    }
}

/// [`delete_tag`], running the tag `callbacks` or not.
pub(crate) async fn delete_tag_with(
    table: &Table,
    name: &str,
    callbacks: Callbacks,
) -> Result<DeletedFiles> {
    check_name("tag", name)?;
    let sm = table.snapshot_manager();
    let tag = sm.tag(name).await?;
    let id = tag.snapshot.id;
    if table.branch_io().exists(&snapshot_path(id)).await? {
        delete_tag_file(table, name, callbacks).await?;
        return Ok(DeletedFiles::default());
    }
    // Every tag, read before the file goes (tags are found by listing).
    let tags: Vec<(String, Arc<Tag>)> = sm.tags().await?;
    delete_tag_file(table, name, callbacks).await?;
    if tags.iter().any(|(n, t)| n != name && t.snapshot.id == id) {
        return Ok(DeletedFiles::default());
    }
    let left = tags
        .iter()
        .map(|(_, t)| &t.snapshot)
        .filter(|s| s.id < id)
        .max_by_key(|s| s.id);
    let right_tag = tags
        .iter()
        .map(|(_, t)| &t.snapshot)
        .filter(|s| s.id > id)
        .min_by_key(|s| s.id);
    let earliest = sm.earliest_id().await?;
    let right = match (earliest, right_tag) {
        (Some(e), Some(t)) if t.id <= e => Some(t.clone()),
        (Some(e), _) => Some(sm.snapshot(e).await?),
        (None, t) => t.cloned(),
    };
    let mut cache = MetaCache::new(table);
    let mut refs = References::default();
    for s in left.into_iter().chain(right.as_ref()) {
        refs.add(&mut cache, s, DataScope::Live).await?;
    }
    let layout = TableLayout::new(table.schema())?;
    let snap = &tag.snapshot;
    let mut candidates = data_files(
        &layout,
        &or_missing(cache.live_entries(snap).await)?,
        FileCategory::Data,
    )?;
    candidates.extend(data_files(
        &layout,
        &or_missing(cache.changelog_entries(snap).await)?,
        FileCategory::Changelog,
    )?);
    candidates.extend(metadata_files(&mut cache, snap, true).await?);
    protect_long_lived_changelogs(&mut cache, &mut refs, table.branch_io()).await?;
    protect_other_branches(&mut cache, &mut refs, table).await?;
    delete_unreferenced(table.io(), candidates, &refs).await
}

/// The tags whose retention has passed at local time `now` (Java `TagTimeExpire`), by name.
pub async fn expired_tags(table: &Table, now: NaiveDateTime) -> Result<Vec<String>> {
    let mut expired = Vec::new();
    for (name, tag) in table.snapshot_manager().tags().await? {
        let (Some(created), Some(retained)) = (
            tag.tag_create_time.as_ref().and_then(naive),
            tag.tag_time_retained,
        ) else {
            continue;
        };
        let Ok(retained) = chrono::Duration::from_std(retained) else {
            continue;
        };
        if created
            .checked_add_signed(retained)
            .is_some_and(|until| now > until)
        {
            expired.push(name);
        }
    }
    Ok(expired)
}

/// Delete the [`expired_tags`] at local time `now`; returns their names.
pub async fn expire_tags(table: &Table, now: NaiveDateTime) -> Result<Vec<String>> {
    let expired = expired_tags(table, now).await?;
    for name in &expired {
        delete_tag(table, name).await?;
    }
    Ok(expired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::maintenance::auto_tags::create_auto_tags;
    use crate::test_support::one_row_commits;
    use tidelake_spec::options::SuccessFile;

    /// The success file of tag `name` of `table`, if any.
    async fn success_file(table: &Table, name: &str) -> Option<SuccessFile> {
        let bytes = table
            .branch_io()
            .read_opt(&tag_success_path(name))
            .await
            .unwrap()?;
        Some(SuccessFile::from_json(&String::from_utf8_lossy(&bytes)).unwrap())
    }

    #[tokio::test]
    async fn success_files_follow_tag_creation_and_deletion_as_java() {
        let dir = tempfile::tempdir().unwrap();
        let table = one_row_commits(dir.path(), &[("tag.create-success-file", "true")], 2, 3).await;
        create_tag(&table, "t1", Some(1), None).await.unwrap();
        assert!(dir.path().join("tag/tag-success-file/t1_SUCCESS").is_file());
        let first = success_file(&table, "t1").await.unwrap();
        assert_eq!(first.creation_time, first.modification_time);
        // The success-file directory is named `tag-*` but is no tag.
        let sm = table.snapshot_manager();
        assert_eq!(sm.tag_names().await.unwrap(), ["t1"]);
        assert_eq!(sm.tags().await.unwrap().len(), 1);

        // Replacing and renaming run no callbacks (Java).
        replace_tag(&table, "t1", Some(2), None).await.unwrap();
        assert_eq!(success_file(&table, "t1").await, Some(first));
        rename_tag(&table, "t1", "t2").await.unwrap();
        assert_eq!(success_file(&table, "t1").await, Some(first));
        assert_eq!(success_file(&table, "t2").await, None);

        // Deleting deletes it; a marker that outlived its tag keeps its creation time.
        delete_tag(&table, "t2").await.unwrap();
        create_tag(&table, "t1", Some(3), None).await.unwrap();
        let again = success_file(&table, "t1").await.unwrap();
        assert_eq!(again.creation_time, first.creation_time);
        assert!(again.modification_time >= first.modification_time);
        delete_tag(&table, "t1").await.unwrap();
        assert_eq!(success_file(&table, "t1").await, None);
        assert!(sm.tag_names().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn without_the_option_no_success_file_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let table = one_row_commits(dir.path(), &[], 2, 1).await;
        create_tag(&table, "t1", None, None).await.unwrap();
        assert!(!dir.path().join("tag/tag-success-file").exists());
    }

    /// Java's batch trimming counts `tag/tag-success-file` as a tag and deletes the tags of
    /// a whole snapshot without callbacks (their success files stay).
    #[tokio::test]
    async fn batch_tags_are_trimmed_counting_as_java() {
        let dir = tempfile::tempdir().unwrap();
        let table = one_row_commits(
            dir.path(),
            &[
                ("tag.create-success-file", "true"),
                ("tag.automatic-creation", "batch"),
                ("tag.batch.customized-name", "batch"),
                ("tag.num-retained-max", "2"),
            ],
            2,
            3,
        )
        .await;
        create_tag(&table, "t1", Some(1), None).await.unwrap();
        create_tag(&table, "t2", Some(2), None).await.unwrap();
        assert_eq!(create_auto_tags(&table, &[3]).await.unwrap(), ["batch"]);
        let sm = table.snapshot_manager();
        assert_eq!(sm.tag_names().await.unwrap(), ["batch"]);
        assert!(success_file(&table, "batch").await.is_some());
        assert!(success_file(&table, "t1").await.is_some());
        assert_eq!(success_file(&table, "t2").await, None);
    }

    #[test]
    fn local_times_round_trip() {
        let t = chrono::NaiveDate::from_ymd_opt(2024, 5, 14)
            .and_then(|d| d.and_hms_nano_opt(3, 4, 5, 6))
            .expect("valid");
        assert_eq!(naive(&local_date_time(t)), Some(t));
    }
}
