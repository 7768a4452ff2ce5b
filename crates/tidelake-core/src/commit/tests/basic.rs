//! Commit basics: first snapshot, snapshot JSON, live sets over commit sequences, record
//! counts, APPEND + COMPACT pairs, empty commits, changelog, exactly-once, message bytes.

use std::collections::BTreeSet;

use serde_json::Value;
use tidelake_spec::manifest::{FileKind, FileSource};
use tidelake_spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER};

use super::*;
use crate::error::Error;
use crate::write::message::COMMIT_MESSAGE_VERSION;

const BATCH: i64 = BATCH_COMMIT_IDENTIFIER;

#[tokio::test]
async fn first_commit_creates_snapshot_one_with_empty_base_list() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let c = committer(&table, "user-a");
    let ids = c
        .commit(
            vec![add(no_part(), -1, vec![file("f1", 10), file("f2", 5)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(ids, vec![1]);

    let snap = snapshot(&table, 1).await;
    assert!(list(&table, &snap.base_manifest_list).await.is_empty());
    let delta = list(&table, &snap.delta_manifest_list).await;
    assert_eq!(delta.len(), 1);
    assert_eq!(
        (delta[0].num_added_files, delta[0].num_deleted_files),
        (2, 0)
    );
    assert_eq!(
        (delta[0].min_bucket, delta[0].max_bucket, delta[0].min_level),
        (Some(0), Some(0), Some(0))
    );
    let hint = table.io().read("snapshot/LATEST").await.unwrap();
    assert_eq!(&hint[..], b"1");
    assert_eq!(live_names(&table).await, names(["f1", "f2"]));

    // Every member Java requires, with the values of an APPEND.
    let json: Value =
        serde_json::from_slice(&table.io().read("snapshot/snapshot-1").await.unwrap()).unwrap();
    for member in [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "totalRecordCount",
        "deltaRecordCount",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "baseManifestListSize",
        "deltaManifestListSize",
        "uuid",
        "writerVersion",
    ] {
        assert!(
            json.get(member).is_some(),
            "snapshot lacks '{member}': {json}"
        );
    }
    assert_eq!(json["version"], 3);
    assert_eq!(json["commitKind"], "APPEND");
    assert_eq!(json["commitUser"], "user-a");
    assert_eq!(json["commitIdentifier"], BATCH);
    assert_eq!(
        (
            json["totalRecordCount"].as_i64(),
            json["deltaRecordCount"].as_i64()
        ),
        (Some(15), Some(15))
    );
    assert!(json["writerVersion"]
        .as_str()
        .unwrap()
        .starts_with("tidelake-"));
    for absent in [
        "changelogManifestList",
        "indexManifest",
        "properties",
        "nextRowId",
        "operation",
    ] {
        assert!(json.get(absent).is_none(), "unexpected '{absent}'");
    }
}

#[tokio::test]
async fn commit_sequences_keep_the_live_set_and_record_counts() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        true,
        false,
        &[("bucket", "2"), ("manifest.merge-min-count", "2")],
    )
    .await;
    let c = committer(&table, "u");
    let mut model: BTreeSet<String> = BTreeSet::new();
    let mut rows = 0i64;
    for round in 0..6i64 {
        let dt = if round % 2 == 0 { "a" } else { "b" };
        let name = format!("r{round}");
        c.commit(
            vec![add(part(dt), 2, vec![file(&name, round + 1)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
        model.insert(name);
        rows += round + 1;
        assert_eq!(live_names(&table).await, model);
        assert_eq!(latest(&table).await.total_record_count, rows);
    }
    // An append-table delete (DELETE of a live file) is committed as OVERWRITE.
    let delete = CommitMessage {
        deleted_files: vec![file("r0", 1)],
        ..CommitMessage::new(part("a"), 0, 2)
    };
    let ids = c.commit(vec![delete], BATCH, &[]).await.unwrap();
    let snap = snapshot(&table, ids[0]).await;
    assert_eq!(snap.commit_kind, CommitKind::Overwrite);
    assert_eq!(
        (snap.delta_record_count, snap.total_record_count),
        (-1, rows - 1)
    );
    model.remove("r0");
    assert_eq!(live_names(&table).await, model);
    // A compaction of two files of partition b into one.
    let merged = DataFileMeta {
        file_source: Some(FileSource::Compact),
        ..file("b-merged", 2 + 4)
    };
    let ids = c
        .commit(
            vec![compact(
                part("b"),
                0,
                2,
                vec![file("r1", 2), file("r3", 4)],
                vec![merged],
            )],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    let snap = snapshot(&table, ids[0]).await;
    assert_eq!(
        (snap.commit_kind, snap.delta_record_count),
        (CommitKind::Compact, 0)
    );
    for gone in ["r1", "r3"] {
        model.remove(gone);
    }
    model.insert("b-merged".into());
    assert_eq!(live_names(&table).await, model);
    assert_eq!(snap.total_record_count, rows - 1);
    // Snapshot ids are contiguous and the hint follows.
    assert_eq!(
        table.snapshot_manager().list_ids().await.unwrap(),
        (1..=8).collect::<Vec<i64>>()
    );
    assert_eq!(table.snapshot_manager().latest_id().await.unwrap(), Some(8));
}

#[tokio::test]
async fn new_files_and_compaction_make_append_then_compact() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    c.commit(
        vec![add(no_part(), 1, vec![pk_file("a", 0, 1, 10)])],
        1,
        &[],
    )
    .await
    .unwrap();
    let message = CommitMessage {
        new_files: vec![pk_file("b", 0, 5, 20)],
        compact_before: vec![pk_file("a", 0, 1, 10)],
        compact_after: vec![pk_file("a1", 5, 1, 10)],
        ..CommitMessage::new(no_part(), 0, 1)
    };
    let props = vec![("k".to_string(), "v".to_string())];
    let ids = c.commit(vec![message], 2, &props).await.unwrap();
    assert_eq!(ids, vec![2, 3]);
    let (append, compaction) = (snapshot(&table, 2).await, snapshot(&table, 3).await);
    assert_eq!(
        (append.commit_kind, compaction.commit_kind),
        (CommitKind::Append, CommitKind::Compact)
    );
    assert_eq!(
        (append.commit_identifier, compaction.commit_identifier),
        (2, 2)
    );
    assert_eq!(append.properties, Some(props.clone()));
    assert_eq!(live_names(&table).await, names(["a1", "b"]));
}

#[tokio::test]
async fn empty_commits_are_skipped_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[]).await;
    assert_eq!(
        committer(&table, "u")
            .commit(Vec::new(), BATCH, &[])
            .await
            .unwrap(),
        Vec::<i64>::new()
    );
    assert_eq!(table.snapshot_manager().latest_id().await.unwrap(), None);

    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        false,
        false,
        &[("commit.force-create-snapshot", "true")],
    )
    .await;
    assert_eq!(
        committer(&table, "u")
            .commit(Vec::new(), BATCH, &[])
            .await
            .unwrap(),
        vec![1]
    );
    let snap = snapshot(&table, 1).await;
    assert_eq!(
        (snap.commit_kind, snap.total_record_count),
        (CommitKind::Append, 0)
    );
}

#[tokio::test]
async fn changelog_files_get_their_own_list() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        false,
        true,
        &[("bucket", "1"), ("changelog-producer", "input")],
    )
    .await;
    let message = CommitMessage {
        new_files: vec![pk_file("d", 0, 1, 3)],
        changelog_files: vec![file("changelog-1", 3)],
        ..CommitMessage::new(no_part(), 0, 1)
    };
    committer(&table, "u")
        .commit(vec![message], BATCH, &[])
        .await
        .unwrap();
    let snap = snapshot(&table, 1).await;
    assert_eq!(snap.changelog_record_count, Some(3));
    let changelog = list(&table, snap.changelog_manifest_list.as_deref().unwrap()).await;
    let changelog_entries = entries(&table, &changelog).await;
    assert_eq!(changelog_entries.len(), 1);
    assert_eq!(changelog_entries[0].file.file_name, "changelog-1");
    assert_eq!(live_names(&table).await, names(["d"]));
}

#[tokio::test]
async fn a_resent_identifier_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[]).await;
    let c = committer(&table, "stream-job");
    assert_eq!(
        c.commit(vec![add(no_part(), -1, vec![file("x", 1)])], 5, &[])
            .await
            .unwrap(),
        vec![1]
    );
    // Another user's commit in between does not hide ours.
    committer(&table, "other")
        .commit(vec![add(no_part(), -1, vec![file("y", 1)])], 9, &[])
        .await
        .unwrap();

    let restarted = committer(&table, "stream-job");
    assert_eq!(
        restarted.filter_committed(&[4, 5, 6]).await.unwrap(),
        vec![6]
    );
    assert!(restarted
        .commit(vec![add(no_part(), -1, vec![file("x", 1)])], 5, &[])
        .await
        .unwrap()
        .is_empty());
    assert!(restarted
        .commit(vec![add(no_part(), -1, vec![file("old", 1)])], 3, &[])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        restarted
            .commit(vec![add(no_part(), -1, vec![file("z", 1)])], 6, &[])
            .await
            .unwrap(),
        vec![3]
    );
    assert_eq!(live_names(&table).await, names(["x", "y", "z"]));
    // Batch identifiers are never filtered.
    assert_eq!(
        restarted
            .commit(vec![add(no_part(), -1, vec![file("w", 1)])], BATCH, &[])
            .await
            .unwrap(),
        vec![4]
    );
    assert_eq!(
        restarted
            .commit(vec![add(no_part(), -1, vec![file("w2", 1)])], BATCH, &[])
            .await
            .unwrap(),
        vec![5]
    );
    assert_eq!(
        committer(&table, "fresh")
            .filter_committed(&[1, 2])
            .await
            .unwrap(),
        vec![1, 2]
    );
}

#[tokio::test]
async fn index_manifest_lists_every_live_index_file() {
    use tidelake_spec::manifest::{
        read_index_manifest, IndexFileMeta, DELETION_VECTORS_INDEX, HASH_INDEX,
    };
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "-1")]).await;
    let c = committer(&table, "u");
    let hash = |name: &str| IndexFileMeta {
        index_type: HASH_INDEX.to_string(),
        file_name: name.to_string(),
        file_size: 8,
        row_count: 2,
        dv_ranges: None,
        external_path: None,
        global_index: None,
    };
    let with_index = |bucket: i32,
                      file_name: &str,
                      new: IndexFileMeta,
                      deleted: Vec<IndexFileMeta>| CommitMessage {
        new_files: vec![pk_file(file_name, 0, 1, 2)],
        new_index_files: vec![new],
        deleted_index_files: deleted,
        ..CommitMessage::new(no_part(), bucket, -1)
    };
    c.commit(vec![with_index(0, "d0", hash("idx-a"), vec![])], BATCH, &[])
        .await
        .unwrap();
    c.commit(vec![with_index(1, "d1", hash("idx-b"), vec![])], BATCH, &[])
        .await
        .unwrap();
    let ids = c
        .commit(
            vec![with_index(0, "d2", hash("idx-a2"), vec![hash("idx-a")])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    let snap = snapshot(&table, ids[0]).await;
    assert_eq!(
        snap.commit_kind,
        CommitKind::Append,
        "hash index changes keep APPEND"
    );
    let bytes = table
        .io()
        .read(&format!("manifest/{}", snap.index_manifest.unwrap()))
        .await
        .unwrap();
    let index = read_index_manifest(&bytes).unwrap();
    let live: BTreeSet<(i32, String)> = index
        .iter()
        .map(|e| (e.bucket, e.index_file.file_name.clone()))
        .collect();
    assert_eq!(
        live,
        BTreeSet::from([(0, "idx-a2".to_string()), (1, "idx-b".to_string())])
    );
    assert!(index.iter().all(|e| e.kind == FileKind::Add));
    // A writer that loaded idx-a (already replaced by idx-a2) or that creates bucket 1's file
    // (idx-b exists) lost a race: taking the bucket would drop the other writer's keys.
    for stale in [
        with_index(0, "d4", hash("idx-a3"), vec![hash("idx-a")]),
        with_index(1, "d5", hash("idx-b2"), vec![]),
    ] {
        let err = c.commit(vec![stale], BATCH, &[]).await.unwrap_err();
        assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    }
    // A commit without index changes reuses the index manifest.
    let ids = c
        .commit(
            vec![add(no_part(), -1, vec![pk_file("d3", 0, 7, 8)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        snapshot(&table, ids[0]).await.index_manifest,
        snapshot(&table, ids[0] - 1).await.index_manifest
    );
    // Deletion-vector changes turn an APPEND into an OVERWRITE (Java `shouldBeOverwriteCommit`).
    let dv = IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_string(),
        ..hash("dv-0")
    };
    let message = CommitMessage {
        new_index_files: vec![dv],
        ..CommitMessage::new(no_part(), 0, -1)
    };
    let ids = c.commit(vec![message], BATCH, &[]).await.unwrap();
    assert_eq!(
        snapshot(&table, ids[0]).await.commit_kind,
        CommitKind::Overwrite
    );
    // A deletion-vector file replaces its bucket's live one only by deleting it: a commit
    // built on an older state would drop a concurrent compaction's deleted rows.
    let dv = |name: &str| IndexFileMeta {
        index_type: DELETION_VECTORS_INDEX.to_string(),
        ..hash(name)
    };
    let dv_change = |new: Vec<IndexFileMeta>, deleted: Vec<IndexFileMeta>| CommitMessage {
        new_index_files: new,
        deleted_index_files: deleted,
        ..CommitMessage::new(no_part(), 0, -1)
    };
    for stale in [
        dv_change(vec![dv("dv-1")], vec![]),
        dv_change(vec![dv("dv-1")], vec![dv("dv-gone")]),
    ] {
        let err = c.commit(vec![stale], BATCH, &[]).await.unwrap_err();
        assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    }
    c.commit(
        vec![dv_change(vec![dv("dv-1")], vec![dv("dv-0")])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
}

#[test]
fn commit_messages_round_trip_and_reject_other_versions() {
    let message = CommitMessage {
        new_files: vec![pk_file("n", 0, 1, 5)],
        deleted_files: vec![file("d", 1)],
        changelog_files: vec![file("c", 2)],
        compact_before: vec![file("b1", 3), file("b2", 4)],
        compact_after: vec![DataFileMeta {
            external_path: Some("s3://x/y".into()),
            ..file("a", 7)
        }],
        ..CommitMessage::new(part("2024-01-01"), 3, 8)
    };
    let bytes = message.to_bytes().unwrap();
    assert_eq!(CommitMessage::from_bytes(&bytes).unwrap(), message);
    assert!(CommitMessage::new(no_part(), 0, 1).is_empty() && !message.is_empty());

    let mut json: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(json["version"], COMMIT_MESSAGE_VERSION);
    json["version"] = Value::from(COMMIT_MESSAGE_VERSION + 1);
    let err = CommitMessage::from_bytes(&serde_json::to_vec(&json).unwrap()).unwrap_err();
    assert!(
        matches!(err, Error::Invalid(ref m) if m.contains("version")),
        "{err}"
    );
    json["version"] = Value::from(COMMIT_MESSAGE_VERSION);
    json["data_counts"] = serde_json::json!([9, 0, 0, 0, 0, 0]);
    assert!(matches!(
        CommitMessage::from_bytes(&serde_json::to_vec(&json).unwrap()),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        CommitMessage::from_bytes(b"garbage"),
        Err(Error::Invalid(_))
    ));
}
