//! Compaction as plan -> task -> commit: tasks through their byte form, run elsewhere, one
//! result per task committed once.

use super::*;

/// A plan's tasks survive their byte form, run on a compactor of a table opened again (another
/// worker), and their messages (also through bytes) commit once: the same rows, every bucket
/// fully compacted, as the one-call compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_tasks_run_elsewhere_and_commit_once() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let before = read(&table, &[]).await;
    let driver = Compactor::new(table.clone()).unwrap();
    let plan = driver
        .plan(&CompactRequest {
            full: true,
            partitions: None,
        })
        .await
        .unwrap();
    assert_eq!(
        plan.snapshot_id,
        Some(table.snapshot_manager().latest().await.unwrap().unwrap().id)
    );
    assert!(
        plan.tasks.len() > 1,
        "one task per bucket: {}",
        plan.tasks.len()
    );
    let worker = Compactor::new(table.reopen().await.unwrap()).unwrap();
    let mut messages = Vec::new();
    for task in &plan.tasks {
        let bytes = task.to_bytes().unwrap();
        let shipped = CompactionTask::from_bytes(&bytes).unwrap();
        assert_eq!(format!("{shipped:?}"), format!("{task:?}"));
        assert_eq!(
            shipped.to_bytes().unwrap(),
            bytes,
            "encoding is deterministic"
        );
        let message = worker.run_task(&shipped).await.unwrap();
        messages.push(CommitMessage::from_bytes(&message.to_bytes().unwrap()).unwrap());
    }
    let id = driver
        .commit_plan(&plan, messages.clone())
        .await
        .unwrap()
        .last_id()
        .expect("a COMPACT snapshot");
    let snap = table.snapshot_manager().snapshot(id).await.unwrap();
    assert_eq!(snap.commit_kind, CommitKind::Compact);
    assert_eq!(read(&table, &[]).await, before);
    assert_fully_compacted(&table, 5).await;
    // committing the same results again (a driver retrying after an unknown outcome) finds
    // them landed: no second snapshot
    assert_eq!(
        driver.commit_plan(&plan, messages).await.unwrap().last_id(),
        Some(id)
    );
    assert_eq!(
        table.snapshot_manager().latest().await.unwrap().unwrap().id,
        id
    );
    assert_eq!(read(&table, &[]).await, before);
}

/// A retried task's second result, a missing result, and a result of another task are refused
/// before anything is committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_commits_exactly_one_result_per_task() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let before = read(&table, &[]).await;
    let latest = table.snapshot_manager().latest().await.unwrap().unwrap().id;
    let compactor = Compactor::new(table.clone()).unwrap();
    let plan = compactor
        .plan(&CompactRequest {
            full: true,
            partitions: None,
        })
        .await
        .unwrap();
    let mut messages = Vec::new();
    for task in &plan.tasks {
        messages.push(compactor.run_task(task).await.unwrap());
    }
    let retried = compactor.run_task(&plan.tasks[0]).await.unwrap();
    let refused = |messages: Vec<CommitMessage>| {
        let (compactor, plan) = (&compactor, &plan);
        async move { compactor.commit_plan(plan, messages).await.unwrap_err() }
    };
    let twice = refused([messages.clone(), vec![retried.clone()]].concat()).await;
    assert_eq!(twice.kind(), ErrorKind::Invalid, "{twice}");
    assert!(
        twice.to_string().contains("two compaction results"),
        "{twice}"
    );
    let missing = refused(messages[1..].to_vec()).await;
    assert!(
        missing.to_string().contains("results were given"),
        "{missing}"
    );
    let mut foreign = messages.clone();
    foreign[0].compact_before = messages[1].compact_before.clone();
    foreign[0].bucket = messages[0].bucket;
    let err = refused(foreign).await;
    assert_eq!(err.kind(), ErrorKind::Invalid, "{err}");
    assert_eq!(
        table.snapshot_manager().latest().await.unwrap().unwrap().id,
        latest
    );
    // the retried attempt's result instead of the first one commits as well
    let mut chosen = messages;
    chosen[0] = retried;
    compactor
        .commit_plan(&plan, chosen)
        .await
        .unwrap()
        .last_id()
        .expect("commits");
    assert_eq!(read(&table, &[]).await, before);
    assert_fully_compacted(&table, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_tasks_reject_bad_bytes_and_other_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), &[]).await;
    history(&table, false).await;
    let compactor = Compactor::new(table.clone()).unwrap();
    let plan = compactor
        .plan(&CompactRequest {
            full: true,
            partitions: None,
        })
        .await
        .unwrap();
    let bytes = plan.tasks[0].to_bytes().unwrap();
    for bad in [&b"{}"[..], b"not json", &bytes[..bytes.len() / 2]] {
        let err = CompactionTask::from_bytes(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Invalid, "{err}");
    }
    let newer =
        String::from_utf8(bytes.clone())
            .unwrap()
            .replacen("\"version\":1", "\"version\":2", 1);
    let err = CompactionTask::from_bytes(newer.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
    let mut stale = plan.tasks[0].clone();
    stale.schema_id += 1;
    let err = compactor.run_task(&stale).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CommitConflict, "{err}");
}
