//! Racing committers: tokio tasks with separate `FileStoreCommit`s, and separate OS processes
//! (this test binary re-run as a child), must produce contiguous snapshot ids and lose no file.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use tidelake_spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER as BATCH};

use super::*;

const CHILD_DIR_ENV: &str = "TIDELAKE_COMMIT_TEST_CHILD_DIR";
const CHILD_NAME_ENV: &str = "TIDELAKE_COMMIT_TEST_CHILD_NAME";
const COMMITS_PER_WRITER: usize = 12;

/// Check ids 1..=n exist, every file is live and the record count adds up.
async fn assert_complete(table: &Table, expected: &BTreeSet<String>) {
    let ids = table.snapshot_manager().list_ids().await.unwrap();
    assert_eq!(
        ids,
        (1..=i64::try_from(expected.len()).unwrap()).collect::<Vec<_>>()
    );
    assert_eq!(&live_names(table).await, expected);
    assert_eq!(
        latest(table).await.total_record_count,
        i64::try_from(expected.len()).unwrap()
    );
    // Attempts that lost the race deleted what they wrote: every metadata file is referenced.
    let mut referenced = BTreeSet::new();
    for id in ids {
        let snap = snapshot(table, id).await;
        for list_name in [&snap.base_manifest_list, &snap.delta_manifest_list] {
            referenced.extend(
                list(table, list_name)
                    .await
                    .into_iter()
                    .map(|m| m.file_name),
            );
            referenced.insert(list_name.clone());
        }
    }
    let on_disk: BTreeSet<String> = table
        .io()
        .list_dir("manifest")
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(on_disk, referenced, "orphan or missing metadata files");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_get_contiguous_ids_and_lose_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        true,
        false,
        &[("bucket", "-1"), ("manifest.merge-min-count", "4")],
    )
    .await;
    let mut tasks = Vec::new();
    for writer in 0..4 {
        let c = committer(&table, &format!("writer-{writer}"));
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..COMMITS_PER_WRITER {
                let name = format!("w{writer}-{i}");
                let dt = if i % 2 == 0 { "even" } else { "odd" };
                let message = add(
                    part(dt),
                    -1,
                    vec![written(&c.table, &format!("dt={dt}"), &name).await],
                );
                ids.extend(
                    c.commit(vec![message], i64::try_from(i).unwrap(), &[])
                        .await
                        .unwrap(),
                );
            }
            ids
        }));
    }
    let mut all_ids = Vec::new();
    for task in tasks {
        all_ids.extend(task.await.unwrap());
    }
    all_ids.sort_unstable();
    assert_eq!(
        all_ids,
        (1..=48).collect::<Vec<i64>>(),
        "every commit made exactly one snapshot"
    );
    let expected: BTreeSet<String> = (0..4)
        .flat_map(|w| (0..COMMITS_PER_WRITER).map(move |i| format!("w{w}-{i}")))
        .collect();
    assert_complete(&table, &expected).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_compactions_of_one_file_let_exactly_one_win() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    committer(&table, "w")
        .commit(vec![add(no_part(), -1, vec![file("f", 1)])], BATCH, &[])
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for n in 0..4 {
        let c = committer(&table, &format!("compactor-{n}"));
        tasks.push(tokio::spawn(async move {
            let message = compact(
                no_part(),
                0,
                -1,
                vec![file("f", 1)],
                vec![file(&format!("c{n}"), 1)],
            );
            c.commit(vec![message], BATCH, &[]).await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(ids) => {
                assert_eq!(ids, vec![2]);
                won += 1;
            }
            Err(crate::error::Error::CommitConflict(_)) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(live_names(&table).await.len(), 1);
    assert_eq!(latest(&table).await.commit_kind, CommitKind::Compact);
}

/// The body of a child process: commit `COMMITS_PER_WRITER` files to the table in the
/// directory named by the environment. Does nothing when run as an ordinary test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_committer() {
    let (Ok(dir), Ok(name)) = (std::env::var(CHILD_DIR_ENV), std::env::var(CHILD_NAME_ENV)) else {
        return;
    };
    let table = Table::open(&dir).await.unwrap();
    let c = committer(&table, &name);
    for i in 0..COMMITS_PER_WRITER {
        let files = vec![written(&table, "", &format!("{name}-{i}")).await];
        assert_eq!(
            c.commit(vec![add(no_part(), -1, files)], BATCH, &[])
                .await
                .unwrap()
                .len(),
            1
        );
    }
}

#[tokio::test]
async fn concurrent_processes_get_contiguous_ids_and_lose_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, false, &[("bucket", "-1")]).await;
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["proc-a", "proc-b", "proc-c"]
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "commit::tests::concurrency::child_process_committer",
                    "--test-threads",
                    "1",
                ])
                .env(CHILD_DIR_ENV, dir.path())
                .env(CHILD_NAME_ENV, name)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child committer failed");
    }
    let expected: BTreeSet<String> = ["proc-a", "proc-b", "proc-c"]
        .iter()
        .flat_map(|n| (0..COMMITS_PER_WRITER).map(move |i| format!("{n}-{i}")))
        .collect();
    assert_complete(&table, &expected).await;
}
