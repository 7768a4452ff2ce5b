//! A decoupled changelog lifecycle (Java `ExpireSnapshotsImpl` with `changelogDecoupled`,
//! `ExpireChangelogImpl`): snapshot expiry keeps `changelog/changelog-N` and the changelog
//! files, changelog expiry removes them by the changelog retention, change reads over expired
//! snapshots read the long-lived changelogs, and orphan cleaning keeps what they reference.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tidelake_core::api::commit::FileStoreCommit;
use tidelake_core::api::maintenance::{
    create_tag, delete_tag, expire_snapshots, remove_orphan_files, ExpireConfig,
};
use tidelake_core::api::scan::plan_changes;
use tidelake_core::api::schema::{create_table, TableSpec};
use tidelake_core::api::write::RowKinds;
use tidelake_core::api::{ErrorKind, FileIO, Table};
use tidelake_core::test_support::{files_under, snapshot_ids};

/// A `changelog-producer=input` primary-key table with `commits` one-row commits, keeping one
/// snapshot and four long-lived changelogs.
async fn table_with_commits(
    dir: &std::path::Path,
    options: &[(&str, &str)],
    commits: i64,
) -> Table {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let mut opts: Vec<(String, String)> = vec![
        ("write-only".into(), "true".into()),
        ("snapshot.num-retained.min".into(), "1".into()),
        ("snapshot.num-retained.max".into(), "2".into()),
        ("snapshot.time-retained".into(), "1 ms".into()),
        ("changelog.num-retained.min".into(), "4".into()),
        ("changelog.num-retained.max".into(), "4".into()),
    ];
    opts.extend(options.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let spec = TableSpec {
        primary_keys: vec!["k".into()],
        partition_keys: vec![],
        bucket: Some(1),
        options: opts,
        comment: None,
    };
    let io = FileIO::open(dir.to_str().unwrap()).unwrap();
    create_table(io.clone(), &schema, &spec).await.unwrap();
    let table = Table::open_io(io).await.unwrap();
    for commit in 1..=commits {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![commit % 3])),
                Arc::new(Int64Array::from(vec![commit])),
            ],
        )
        .unwrap();
        let mut write = table.new_write().build().await.unwrap();
        write.write(&batch, RowKinds::Fixed(0)).await.unwrap();
        let messages = write.prepare_commit().await.unwrap();
        FileStoreCommit::new(table.clone(), "test")
            .unwrap()
            .commit(messages, commit, &[])
            .await
            .unwrap();
    }
    table
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
