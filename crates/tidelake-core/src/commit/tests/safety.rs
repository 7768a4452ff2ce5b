//! Commit safety under races (issue: commits must never lose, hide or corrupt an acknowledged
//! write): slow committers whose base expires, committers sharing a commit user, sequence
//! order, messages committed twice, files deleted while a commit is in flight.
//!
//! Slow writers are made with the `delay:MS` fault of the instrumented store: the delayed
//! committer opens the same table through a second `FileIO`.

use std::collections::BTreeSet;

use tidelake_spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER as BATCH};

use super::*;
use crate::commit::OverwriteScope;
use crate::error::Error;
use crate::maintenance::{expire_snapshots, ExpireConfig};

/// The table at `dir` opened again with one delayed (`delay_ms`) operation: the first `op` on
/// a path containing `path`.
async fn slow_table(dir: &Path, op: &str, path: &str, delay_ms: u64) -> Table {
    let options = [
        ("tidelake.fault.nth", "1".to_string()),
        ("tidelake.fault.op", op.to_string()),
        ("tidelake.fault.path", path.to_string()),
        ("tidelake.fault.action", format!("delay:{delay_ms}")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let io = FileIO::open_with(dir.to_str().unwrap(), &options).unwrap();
    Table::open_io(io).await.unwrap()
}

/// Expire everything but the newest `keep` snapshots.
async fn expire_keeping(table: &Table, keep: i64) {
    let config = ExpireConfig {
        retain_min: keep,
        retain_max: keep,
        older_than_ms: i64::MAX,
        max_deletes: 1000,
        changelog: None,
    };
    expire_snapshots(table, &config).await.unwrap();
}

/// A message of the writer that restored `base`: `name` holding sequence numbers `seqs`.
fn pk_add(meta: DataFileMeta, base: i64, seqs: std::ops::RangeInclusive<i64>) -> CommitMessage {
    CommitMessage {
        new_files: vec![DataFileMeta {
            min_sequence_number: *seqs.start(),
            max_sequence_number: *seqs.end(),
            ..meta
        }],
        base_snapshot: Some(base),
        ..CommitMessage::new(no_part(), 0, 1)
    }
}

fn hint(dir: &Path) -> i64 {
    std::fs::read_to_string(dir.join("snapshot/LATEST"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Writer S reads latest = 1 and is slow at its first request to a path containing
/// `slow_path`; meanwhile 2..5 are committed and 1..3 expired. S lands at 6, `LATEST` names it,
/// and no snapshot 2 is left behind.
async fn slow_commit_while_its_base_expires(slow_path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let fast = committer(&table, "fast");
    fast.commit(
        vec![add(no_part(), -1, vec![written(&table, "", "f1").await])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let slow_file = written(&table, "", "slow").await;
    let slow = committer(
        &slow_table(dir.path(), "put", slow_path, 1500).await,
        "slow",
    );
    let slow_commit = tokio::spawn(async move {
        slow.commit(vec![add(no_part(), -1, vec![slow_file])], BATCH, &[])
            .await
    });
    crate::io::Env::default()
        .sleep(std::time::Duration::from_millis(300))
        .await;
    for i in 2..=5 {
        let f = written(&table, "", &format!("f{i}")).await;
        assert_eq!(
            fast.commit(vec![add(no_part(), -1, vec![f])], BATCH, &[])
                .await
                .unwrap(),
            vec![i]
        );
    }
    expire_keeping(&table, 2).await;
    assert_eq!(
        table.snapshot_manager().list_ids().await.unwrap(),
        vec![4, 5]
    );
    assert_eq!(slow_commit.await.unwrap().unwrap(), vec![6]);
    assert_eq!(
        table.snapshot_manager().list_ids().await.unwrap(),
        vec![4, 5, 6]
    );
    assert_eq!(hint(dir.path()), 6);
    assert_eq!(
        live_names(&table).await,
        names(["f1", "f2", "f3", "f4", "f5", "slow"])
    );
}

/// Scenario: S is slow writing its manifests, so its base expires before it creates
/// `snapshot-2`. S's snapshot must not land at the expired id 2 (which would move `LATEST` back
/// and hide 3..5): it starts again and lands at 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_base_expired_lands_on_the_newest_snapshot() {
    slow_commit_while_its_base_expires("manifest/manifest-").await;
}

/// Scenario: the base is still there when S checks it, but S's request creating `snapshot-2`
/// is slow and re-creates the expired id 2. S must notice (expiration passed 2), delete that
/// file again and land at 6 (a snapshot 2 left behind would reference expired manifests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_created_at_an_expired_id_is_withdrawn_and_committed_again() {
    slow_commit_while_its_base_expires("snapshot/snapshot-").await;
}

/// Scenario: two committers with the same commit user race on every round; both must land
/// (recognising one's own snapshot is exact, never by user and identifier).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn committers_sharing_a_user_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let mut expected = BTreeSet::new();
    for round in 0..20 {
        let mut tasks = Vec::new();
        for w in 0..2 {
            let name = format!("r{round}-w{w}");
            expected.insert(name.clone());
            let f = written(&table, "", &name).await;
            let c = committer(&table, "shared");
            tasks.push(tokio::spawn(async move {
                c.commit(vec![add(no_part(), -1, vec![f])], BATCH, &[])
                    .await
            }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.extend(t.await.unwrap().unwrap());
        }
        ids.sort_unstable();
        assert_eq!(ids.len(), 2, "round {round}: {ids:?}");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(live_names(&table).await, expected, "round {round}");
    }
}

/// Scenario: a write whose rows would be ordered before an already-committed write to the same
/// bucket is refused; one numbered above it lands.
#[tokio::test]
async fn sequence_numbers_below_a_newer_commit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    c.commit(vec![pk_add(pk_file("a", 0, 1, 5), 0, 0..=9)], BATCH, &[])
        .await
        .unwrap();
    // a writer that also restored snapshot 0 numbered its rows 5..: they would lose to "a"
    let err = c
        .commit(vec![pk_add(pk_file("b", 0, 1, 5), 0, 5..=14)], BATCH, &[])
        .await
        .unwrap_err();
    match err {
        Error::CommitConflict(m) => assert!(
            m.contains("sequence numbers from 5") && m.contains("up to 9"),
            "{m}"
        ),
        other => panic!("expected a conflict, got {other}"),
    }
    assert_eq!(latest(&table).await.id, 1);
    c.commit(vec![pk_add(pk_file("c", 0, 1, 5), 0, 10..=19)], BATCH, &[])
        .await
        .unwrap();
    // a writer that restored snapshot 2 only competes with later commits
    c.commit(vec![pk_add(pk_file("d", 0, 1, 5), 2, 20..=29)], BATCH, &[])
        .await
        .unwrap();
    assert_eq!(live_names(&table).await, names(["a", "c", "d"]));
}

/// Scenario: the same messages committed again (a retry after an ambiguous failure, another
/// process) are recognised as landed, also after their files were compacted away; partly
/// committed messages are refused before anything is written.
#[tokio::test]
async fn messages_committed_again_are_recognised_as_landed() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    let m = pk_add(pk_file("a", 0, 1, 5), 0, 0..=9);
    assert_eq!(
        c.commit(vec![m.clone()], BATCH, &[]).await.unwrap(),
        vec![1]
    );
    assert_eq!(
        committer(&table, "other")
            .commit(vec![m.clone()], BATCH, &[])
            .await
            .unwrap(),
        vec![1]
    );
    let compacted = compact(
        no_part(),
        0,
        1,
        vec![pk_file("a", 0, 1, 5)],
        vec![pk_file("a2", 5, 1, 5)],
    );
    assert_eq!(
        c.commit(vec![compacted.clone()], BATCH, &[]).await.unwrap(),
        vec![2]
    );
    assert_eq!(
        c.commit(vec![m.clone()], BATCH, &[]).await.unwrap(),
        vec![1]
    );
    // the compaction committed again: already applied
    assert_eq!(
        c.commit(vec![compacted], BATCH, &[]).await.unwrap(),
        vec![2]
    );
    let mut partly = m;
    partly.new_files.push(DataFileMeta {
        min_sequence_number: 10,
        max_sequence_number: 12,
        ..pk_file("z", 0, 7, 9)
    });
    match c.commit(vec![partly], BATCH, &[]).await.unwrap_err() {
        Error::Invalid(m) => assert!(m.contains("file a ") && m.contains("snapshot 1"), "{m}"),
        other => panic!("expected a refusal, got {other}"),
    }
    assert_eq!(
        table.snapshot_manager().list_ids().await.unwrap(),
        vec![1, 2]
    );
    assert_eq!(live_names(&table).await, names(["a2"]));
    assert_eq!(latest(&table).await.commit_kind, CommitKind::Compact);
}

/// Scenario: one batch holding the same message twice (a caller that bypasses the Python API,
/// e.g. a Spark job whose task output was collected twice) is refused by commit and overwrite
/// before anything is written: committed, it would ADD each file twice.
#[tokio::test]
async fn the_same_message_twice_in_one_commit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let c = committer(&table, "u");
    let m = add(no_part(), -1, vec![written(&table, "", "f1").await]);
    for err in [
        c.commit(vec![m.clone(), m.clone()], BATCH, &[])
            .await
            .unwrap_err(),
        c.overwrite(
            OverwriteScope::Static(None),
            vec![m.clone(), m.clone()],
            BATCH,
            &[],
        )
        .await
        .unwrap_err(),
    ] {
        match err {
            Error::Invalid(msg) => assert!(msg.contains("f1") && msg.contains("twice"), "{msg}"),
            other => panic!("expected a refusal, got {other}"),
        }
    }
    assert!(table
        .snapshot_manager()
        .list_ids()
        .await
        .unwrap()
        .is_empty());
    assert_eq!(c.commit(vec![m], BATCH, &[]).await.unwrap(), vec![1]);
}

/// Scenario: a file of a commit that is retrying is deleted (orphan cleaning); the commit must
/// not publish it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retrying_commit_does_not_publish_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let fast = committer(&table, "fast");
    fast.commit(
        vec![add(no_part(), -1, vec![written(&table, "", "f1").await])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let doomed = written(&table, "", "doomed").await;
    // the slow committer's snapshot-2 put is delayed; another commit takes id 2 meanwhile
    let slow = committer(
        &slow_table(dir.path(), "put", "snapshot/snapshot-", 800).await,
        "slow",
    );
    let slow_commit = tokio::spawn(async move {
        slow.commit(vec![add(no_part(), -1, vec![doomed])], BATCH, &[])
            .await
    });
    crate::io::Env::default()
        .sleep(std::time::Duration::from_millis(200))
        .await;
    fast.commit(
        vec![add(no_part(), -1, vec![written(&table, "", "f2").await])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    std::fs::remove_file(dir.path().join("bucket-0/doomed")).unwrap();
    match slow_commit.await.unwrap().unwrap_err() {
        Error::CommitConflict(m) => {
            assert!(m.contains("no longer exist") && m.contains("doomed"), "{m}")
        }
        other => panic!("expected a conflict, got {other}"),
    }
    assert_eq!(
        table.snapshot_manager().list_ids().await.unwrap(),
        vec![1, 2]
    );
    assert_eq!(live_names(&table).await, names(["f1", "f2"]));
}

/// Scenario: the snapshot a commit read expires (with its manifests) while the commit reads
/// them: it starts again on the new latest snapshot instead of failing with "file not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_base_expires_while_it_reads_it_starts_again() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let fast = committer(&table, "fast");
    fast.commit(
        vec![add(no_part(), -1, vec![written(&table, "", "f1").await])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let f = written(&table, "", "slow").await;
    // delayed: the slow committer's first read of a manifest list (snapshot 1's)
    let slow = committer(
        &slow_table(dir.path(), "get", "manifest/manifest-list-", 800).await,
        "slow",
    );
    let slow_commit = tokio::spawn(async move {
        slow.commit(vec![add(no_part(), -1, vec![f])], BATCH, &[])
            .await
    });
    crate::io::Env::default()
        .sleep(std::time::Duration::from_millis(200))
        .await;
    for i in 2..=3 {
        let f = written(&table, "", &format!("f{i}")).await;
        fast.commit(vec![add(no_part(), -1, vec![f])], BATCH, &[])
            .await
            .unwrap();
    }
    expire_keeping(&table, 1).await;
    assert_eq!(slow_commit.await.unwrap().unwrap(), vec![4]);
    assert_eq!(live_names(&table).await, names(["f1", "f2", "f3", "slow"]));
}

/// Scenario: row-level DML computed from snapshot 1 ([`FileStoreCommit::validate_reads`]) is
/// refused when a file committed since then overlaps its keys, even with sequence numbers below
/// its own (which an ordinary write may land over); disjoint keys land.
#[tokio::test]
async fn validated_reads_refuse_overlapping_keys_committed_since() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "1")]).await;
    let c = committer(&table, "u");
    c.commit(vec![pk_add(pk_file("a", 0, 1, 9), 0, 0..=8)], BATCH, &[])
        .await
        .unwrap();
    // another writer, numbered before the DML's writer, lands keys 3..=4 after the DML read 1
    c.commit(vec![pk_add(pk_file("b", 0, 3, 4), 1, 9..=10)], BATCH, &[])
        .await
        .unwrap();
    let dml = pk_add(pk_file("dml", 0, 2, 5), 1, 20..=23);
    let err = committer(&table, "dml")
        .validate_reads()
        .commit(vec![dml.clone()], BATCH, &[])
        .await
        .unwrap_err();
    match err {
        Error::CommitConflict(m) => assert!(
            m.contains("file b") && m.contains("after snapshot 1"),
            "{m}"
        ),
        other => panic!("expected a conflict, got {other}"),
    }
    assert_eq!(latest(&table).await.id, 2);
    // without validation the same write is ordered after "b" and lands
    let plain = pk_add(pk_file("plain", 0, 2, 5), 1, 20..=23);
    c.commit(vec![plain], BATCH, &[]).await.unwrap();
    // keys outside every range committed since the read land under validation too
    let disjoint = pk_add(pk_file("far", 0, 50, 60), 1, 30..=40);
    committer(&table, "dml")
        .validate_reads()
        .commit(vec![disjoint], BATCH, &[])
        .await
        .unwrap();
    assert_eq!(live_names(&table).await, names(["a", "b", "plain", "far"]));
}
