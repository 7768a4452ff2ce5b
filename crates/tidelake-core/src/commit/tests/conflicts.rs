//! Logical conflicts: deleting a missing file, LSM overlap, bucket-count changes, adding a
//! live file twice. Each fails at once with `CommitConflict` and writes nothing.

use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER as BATCH;

use super::*;
use crate::error::Error;

fn conflict_message(result: crate::error::Result<Vec<i64>>) -> String {
    match result {
        Err(Error::CommitConflict(message)) => message,
        other => panic!("expected a commit conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn deleting_a_missing_file_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), true, false, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    c.commit(vec![add(part("a"), 1, vec![file("f1", 1)])], BATCH, &[])
        .await
        .unwrap();
    let files_before = manifest_dir_size(&table).await;
    let message = conflict_message(
        c.commit(
            vec![compact(
                part("a"),
                0,
                1,
                vec![file("ghost", 1)],
                vec![file("g2", 1)],
            )],
            BATCH,
            &[],
        )
        .await,
    );
    assert!(
        message.contains("ghost") && message.contains("not previously added"),
        "{message}"
    );
    assert!(message.contains("snapshot 1"), "{message}");
    assert_eq!(table.snapshot_manager().latest_id().await.unwrap(), Some(1));
    assert_eq!(
        manifest_dir_size(&table).await,
        files_before,
        "a detected conflict writes nothing"
    );
}

#[tokio::test]
async fn compacting_an_already_compacted_file_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    committer(&table, "w")
        .commit(
            vec![add(no_part(), -1, vec![file("f1", 1), file("f2", 1)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    let first = committer(&table, "compactor-1");
    let second = committer(&table, "compactor-2");
    first
        .commit(
            vec![compact(
                no_part(),
                0,
                -1,
                vec![file("f1", 1), file("f2", 1)],
                vec![file("c1", 2)],
            )],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    let message = conflict_message(
        second
            .commit(
                vec![compact(
                    no_part(),
                    0,
                    -1,
                    vec![file("f1", 1)],
                    vec![file("c2", 1)],
                )],
                BATCH,
                &[],
            )
            .await,
    );
    assert!(
        message.contains("f1") && message.contains("compactor-1"),
        "{message}"
    );
    assert_eq!(live_names(&table).await, names(["c1"]));
}

#[tokio::test]
async fn lsm_overlap_on_level_one_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    c.commit(
        vec![add(
            no_part(),
            1,
            vec![pk_file("l0-a", 0, 1, 10), pk_file("l0-b", 0, 5, 30)],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    // l0-a moves to level 1 (upgrade: DELETE at level 0, ADD at level 1).
    c.commit(
        vec![compact(
            no_part(),
            0,
            1,
            vec![pk_file("l0-a", 0, 1, 10)],
            vec![pk_file("l0-a", 1, 1, 10)],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    // A level-1 file [5, 30] overlaps [1, 10].
    let overlapping = compact(
        no_part(),
        0,
        1,
        vec![pk_file("l0-b", 0, 5, 30)],
        vec![pk_file("l1-b", 1, 5, 30)],
    );
    let message = conflict_message(c.commit(vec![overlapping], BATCH, &[]).await);
    assert!(
        message.contains("LSM conflicts detected") && message.contains("l1-b"),
        "{message}"
    );
    // Keys compare as numbers, not bytes: [11, 300] is after [1, 10].
    let disjoint = compact(
        no_part(),
        0,
        1,
        vec![pk_file("l0-b", 0, 5, 30)],
        vec![pk_file("l1-c", 1, 11, 300)],
    );
    c.commit(vec![disjoint], BATCH, &[]).await.unwrap();
    assert_eq!(live_names(&table).await, names(["l0-a", "l1-c"]));
    // Touching bounds overlap too (max(a) must be < min(b)).
    let touching = compact(
        no_part(),
        0,
        1,
        vec![pk_file("l1-c", 1, 11, 300)],
        vec![pk_file("l1-d", 1, 10, 300)],
    );
    assert!(conflict_message(c.commit(vec![touching], BATCH, &[]).await).contains("LSM"));
}

#[tokio::test]
async fn bucket_count_changes_are_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), true, false, &[("bucket", "2")]).await;
    let c = committer(&table, "u");
    c.commit(vec![add(part("a"), 2, vec![file("f1", 1)])], BATCH, &[])
        .await
        .unwrap();
    // APPEND to a fixed-bucket table with another bucket count.
    let message = conflict_message(
        committer(&table, "rescaled")
            .commit(vec![add(part("a"), 4, vec![file("f2", 1)])], BATCH, &[])
            .await,
    );
    assert!(
        message.contains("bucket number 4") && message.contains("dt=a"),
        "{message}"
    );
    // Another partition may have its own count.
    c.commit(vec![add(part("b"), 4, vec![file("f3", 1)])], BATCH, &[])
        .await
        .unwrap();
    // COMPACT producing files with a new bucket count.
    let rescale = compact(part("a"), 0, 4, vec![file("f1", 1)], vec![file("f4", 1)]);
    assert!(
        conflict_message(c.commit(vec![rescale], BATCH, &[]).await).contains("changed from 2 to 4")
    );
    // Messages of one first commit must agree.
    let dir = tempfile::tempdir().unwrap();
    let fresh = create_table(dir.path(), true, false, &[("bucket", "2")]).await;
    let result = committer(&fresh, "u")
        .commit(
            vec![
                add(part("a"), 2, vec![file("x", 1)]),
                add(part("a"), 3, vec![file("y", 1)]),
            ],
            BATCH,
            &[],
        )
        .await;
    assert!(matches!(result, Err(Error::Invalid(_))), "{result:?}");
}

#[tokio::test]
async fn adding_a_live_file_again_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let c = committer(&table, "u");
    c.commit(
        vec![add(no_part(), -1, vec![file("f1", 1), file("f2", 1)])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let message = conflict_message(
        c.commit(
            vec![compact(
                no_part(),
                0,
                -1,
                vec![file("f2", 1)],
                vec![file("f1", 1)],
            )],
            BATCH,
            &[],
        )
        .await,
    );
    assert!(message.contains("f1"), "{message}");
    let twice = compact(
        no_part(),
        0,
        -1,
        vec![file("f2", 1)],
        vec![file("n", 1), file("n", 1)],
    );
    assert!(conflict_message(c.commit(vec![twice], BATCH, &[]).await).contains("twice"));
}

#[tokio::test]
async fn bad_partitions_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), true, false, &[]).await;
    let result = committer(&table, "u")
        .commit(vec![add(no_part(), -1, vec![file("f", 1)])], BATCH, &[])
        .await;
    assert!(matches!(result, Err(Error::Invalid(_))), "{result:?}");
}

#[tokio::test]
async fn a_compaction_lost_after_the_data_landed_does_not_fail_the_commit() {
    // New files plus a compaction of a file a concurrent compactor already rewrote: the APPEND
    // lands, the COMPACT is dropped (its output, never referenced, deleted) and the commit
    // succeeds — CommitConflict must only ever mean "the data did not land".
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    committer(&table, "w")
        .commit(
            vec![add(no_part(), -1, vec![file("f1", 1), file("f2", 1)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    committer(&table, "compactor")
        .commit(
            vec![compact(
                no_part(),
                0,
                -1,
                vec![file("f1", 1), file("f2", 1)],
                vec![file("c1", 2)],
            )],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    table.io().write("bucket-0/c2", vec![0u8; 4]).await.unwrap();
    let message = CommitMessage {
        new_files: vec![file("n1", 1)],
        compact_before: vec![file("f1", 1)],
        compact_after: vec![file("c2", 1)],
        ..CommitMessage::new(no_part(), 0, -1)
    };
    let ids = committer(&table, "writer")
        .commit(vec![message], BATCH, &[])
        .await
        .unwrap();
    assert_eq!(ids, vec![3], "only the APPEND snapshot");
    assert_eq!(live_names(&table).await, names(["c1", "n1"]));
    assert!(
        !table.io().exists("bucket-0/c2").await.unwrap(),
        "the lost compaction's output is deleted"
    );
}
