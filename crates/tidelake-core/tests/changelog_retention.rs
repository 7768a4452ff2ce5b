//! A decoupled changelog lifecycle (Java `ExpireSnapshotsImpl` with `changelogDecoupled`,
//! `ExpireChangelogImpl`): snapshot expiry keeps `changelog/changelog-N` and the changelog
//! files, changelog expiry removes them by the changelog retention, change reads over expired
//! snapshots read the long-lived changelogs, and orphan cleaning keeps what they reference.

use tidelake_core::api::maintenance::{
    create_tag, delete_tag, expire_snapshots, remove_orphan_files, ExpireConfig,
};
use tidelake_core::api::scan::plan_changes;
use tidelake_core::api::{ErrorKind, Table};
use tidelake_core::test_support::{files_under, one_row_commits, snapshot_ids};

/// A primary-key table with `commits` one-row commits, keeping one snapshot and four
/// long-lived changelogs.
async fn table_with_commits(
    dir: &std::path::Path,
    options: &[(&str, &str)],
    commits: i64,
) -> Table {
    let mut opts = vec![
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "2"),
        ("snapshot.time-retained", "1 ms"),
        ("changelog.num-retained.min", "4"),
        ("changelog.num-retained.max", "4"),
    ];
    opts.extend_from_slice(options);
    one_row_commits(dir, &opts, 3, commits).await
}

/// The table's retention a minute from now: every commit is older than the 1 ms retained.
fn later(table: &Table) -> ExpireConfig {
    ExpireConfig::from_options(table.schema().options(), table.env().now_millis() + 60_000).unwrap()
}

fn changelog_dir(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("changelog"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn changelog_files(dir: &std::path::Path) -> usize {
    files_under(&dir.join("bucket-0"))
        .iter()
        .filter(|f| f.starts_with("changelog-"))
        .count()
}

#[tokio::test]
async fn expired_snapshots_stay_readable_as_changelogs_until_the_changelog_retention() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_commits(dir.path(), &[("changelog-producer", "input")], 6).await;
    assert_eq!(changelog_files(dir.path()), 6);
    let config = later(&table);
    assert!(
        config.changelog.is_some(),
        "the changelog outlives the snapshots"
    );
    let result = expire_snapshots(&table, &config).await.unwrap();
    // Snapshots 1..=5 go, each kept as changelog-N; then the changelog retention (four counted
    // from snapshot 6) expires changelogs 1 and 2.
    assert_eq!(snapshot_ids(dir.path()), vec![6]);
    assert_eq!(result.changelogs_kept, 5);
    assert_eq!(result.changelogs_expired, 2);
    assert_eq!(
        changelog_dir(dir.path()),
        vec![
            "EARLIEST",
            "LATEST",
            "changelog-3",
            "changelog-4",
            "changelog-5"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("changelog/EARLIEST")).unwrap(),
        "3"
    );
    assert_eq!(
        changelog_files(dir.path()),
        4,
        "changelog files of 3..=6 stay"
    );

    let plan = plan_changes(&table, 2, None, None).await.unwrap();
    let ids: Vec<i64> = plan.splits.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, vec![3, 4, 5, 6]);
    let err = plan_changes(&table, 1, None, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotExpired);

    let orphans = remove_orphan_files(&table, i64::MAX, true).await.unwrap();
    assert!(
        orphans.iter().all(|f| !f.path.contains("changelog")),
        "{orphans:?}"
    );
}

#[tokio::test]
async fn without_a_producer_the_deltas_and_appended_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_commits(dir.path(), &[], 6).await;
    let config = later(&table);
    expire_snapshots(&table, &config).await.unwrap();
    assert_eq!(snapshot_ids(dir.path()), vec![6]);
    let plan = plan_changes(&table, 2, None, None).await.unwrap();
    let ids: Vec<i64> = plan.splits.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, vec![3, 4, 5, 6]);
    let orphans = remove_orphan_files(&table, i64::MAX, true).await.unwrap();
    assert!(orphans.is_empty(), "{orphans:?}");
}

#[tokio::test]
async fn a_coupled_changelog_goes_with_its_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_commits(
        dir.path(),
        &[
            ("changelog-producer", "input"),
            ("changelog.num-retained.min", "1"),
            ("changelog.num-retained.max", "2"),
        ],
        4,
    )
    .await;
    let config = later(&table);
    assert_eq!(config.changelog, None);
    let result = expire_snapshots(&table, &config).await.unwrap();
    assert_eq!(result.changelogs_kept, 0);
    assert!(changelog_dir(dir.path()).is_empty());
    assert_eq!(changelog_files(dir.path()), 1);
}

#[tokio::test]
async fn deleting_a_tag_keeps_what_a_long_lived_changelog_reads() {
    let dir = tempfile::tempdir().unwrap();
    let table = table_with_commits(dir.path(), &[], 6).await;
    create_tag(&table, "t3", Some(3), None).await.unwrap();
    expire_snapshots(&table, &later(&table)).await.unwrap();
    assert_eq!(snapshot_ids(dir.path()), vec![6]);
    // The tag shares snapshot 3's manifest lists with changelog-3, which is still kept.
    delete_tag(&table, "t3").await.unwrap();
    let plan = plan_changes(&table, 2, None, None).await.unwrap();
    let ids: Vec<i64> = plan.splits.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(ids, vec![3, 4, 5, 6]);
}
