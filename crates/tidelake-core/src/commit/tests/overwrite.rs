//! Overwrite semantics: static partition (spec and predicate), dynamic, whole table, truncate,
//! drop partitions, and the level upgrade of overwritten primary-key files.

use tidelake_spec::snapshot::{CommitKind, BATCH_COMMIT_IDENTIFIER as BATCH};

use super::*;
use crate::commit::{OverwriteScope, PartitionFilter};
use crate::error::Error;
use crate::scan::predicate::Predicate;

/// A partitioned append table holding a1, a2 in dt=a, b1 in dt=b, c1 in dt=c.
async fn three_partitions(dir: &Path) -> (Table, FileStoreCommit) {
    let table = create_table(dir, true, false, &[("bucket", "-1")]).await;
    let c = committer(&table, "u");
    let messages = vec![
        add(part("a"), -1, vec![file("a1", 1), file("a2", 2)]),
        add(part("b"), -1, vec![file("b1", 4)]),
        add(part("c"), -1, vec![file("c1", 8)]),
    ];
    c.commit(messages, BATCH, &[]).await.unwrap();
    (table, c)
}

fn spec(dt: &str) -> Vec<(String, Datum)> {
    vec![("dt".to_string(), Datum::String(dt.to_string()))]
}

#[tokio::test]
async fn static_partition_overwrite_replaces_only_that_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (table, c) = three_partitions(dir.path()).await;
    let scope = OverwriteScope::Static(Some(PartitionFilter::Spec(spec("a"))));
    let ids = c
        .overwrite(
            scope,
            vec![add(part("a"), -1, vec![file("a9", 16)])],
            BATCH,
            &[],
        )
        .await
        .unwrap()
        .ids();
    assert_eq!(ids, vec![2]);
    let snap = snapshot(&table, 2).await;
    assert_eq!(snap.commit_kind, CommitKind::Overwrite);
    assert_eq!(
        (snap.delta_record_count, snap.total_record_count),
        (16 - 3, 28)
    );
    assert_eq!(live_names(&table).await, names(["a9", "b1", "c1"]));

    // New files outside the static partition are refused.
    let scope = OverwriteScope::Static(Some(PartitionFilter::Spec(spec("a"))));
    let result = c
        .overwrite(
            scope,
            vec![add(part("b"), -1, vec![file("b9", 1)])],
            BATCH,
            &[],
        )
        .await;
    assert!(
        matches!(result, Err(Error::Invalid(ref m)) if m.contains("outside")),
        "{result:?}"
    );
    // So are filters on other columns.
    let scope = OverwriteScope::Static(Some(PartitionFilter::Spec(vec![(
        "v".into(),
        Datum::BigInt(1),
    )])));
    assert!(matches!(
        c.overwrite(scope, Vec::new(), BATCH, &[]).await,
        Err(Error::Invalid(_))
    ));
}

#[tokio::test]
async fn predicate_overwrite_selects_partitions_by_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (table, c) = three_partitions(dir.path()).await;
    let filter =
        Predicate::from_json(&serde_json::json!({"op": "in", "field": "dt", "values": ["b", "c"]}))
            .unwrap();
    let scope = OverwriteScope::Static(Some(PartitionFilter::Predicate(filter)));
    c.overwrite(
        scope,
        vec![add(part("c"), -1, vec![file("c9", 1)])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    assert_eq!(live_names(&table).await, names(["a1", "a2", "c9"]));
    let on_values =
        Predicate::from_json(&serde_json::json!({"op": "eq", "field": "v", "value": 1})).unwrap();
    let scope = OverwriteScope::Static(Some(PartitionFilter::Predicate(on_values)));
    assert!(matches!(
        c.overwrite(scope, Vec::new(), BATCH, &[]).await,
        Err(Error::Invalid(_))
    ));
}

#[tokio::test]
async fn dynamic_overwrite_replaces_the_partitions_written() {
    let dir = tempfile::tempdir().unwrap();
    let (table, c) = three_partitions(dir.path()).await;
    let messages = vec![
        add(part("b"), -1, vec![file("b9", 1)]),
        add(part("d"), -1, vec![file("d9", 1)]),
    ];
    c.overwrite(OverwriteScope::Dynamic, messages, BATCH, &[])
        .await
        .unwrap();
    assert_eq!(
        live_names(&table).await,
        names(["a1", "a2", "c1", "b9", "d9"])
    );
    // Without new files nothing is replaced and no snapshot is made.
    assert!(c
        .overwrite(OverwriteScope::Dynamic, Vec::new(), BATCH, &[])
        .await
        .unwrap()
        .is_empty());
    assert_eq!(latest(&table).await.id, 2);
}

#[tokio::test]
async fn whole_table_overwrite_truncate_and_drop_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let (table, c) = three_partitions(dir.path()).await;
    c.drop_partitions(vec![spec("a"), spec("zzz")], BATCH)
        .await
        .unwrap();
    assert_eq!(live_names(&table).await, names(["b1", "c1"]));
    let snap = latest(&table).await;
    assert_eq!(
        (snap.commit_kind, snap.operation.as_deref()),
        (CommitKind::Overwrite, Some("TRUNCATE"))
    );
    assert!(matches!(
        c.drop_partitions(Vec::new(), BATCH).await,
        Err(Error::Invalid(_))
    ));

    let messages = vec![add(part("x"), -1, vec![file("x1", 3)])];
    c.overwrite(OverwriteScope::Static(None), messages, BATCH, &[])
        .await
        .unwrap();
    assert_eq!(live_names(&table).await, names(["x1"]));
    assert_eq!(latest(&table).await.total_record_count, 3);

    c.truncate_table(BATCH).await.unwrap();
    assert!(live_names(&table).await.is_empty());
    let snap = latest(&table).await;
    assert_eq!(
        (snap.total_record_count, snap.operation.as_deref()),
        (0, Some("TRUNCATE"))
    );
    // Truncating an empty table still records a snapshot, as Java does.
    c.truncate_table(BATCH).await.unwrap();
    assert_eq!(latest(&table).await.id, snap.id + 1);
}

#[tokio::test]
async fn overwriting_a_primary_key_table_upgrades_disjoint_files() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), false, true, &[("bucket", "2")]).await;
    let c = committer(&table, "u");
    c.commit(
        vec![add(no_part(), 2, vec![pk_file("old", 0, 1, 9)])],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let disjoint = add(
        no_part(),
        2,
        vec![pk_file("n1", 0, 1, 5), pk_file("n2", 0, 6, 9)],
    );
    let overlapping = CommitMessage {
        new_files: vec![pk_file("m1", 0, 1, 5), pk_file("m2", 0, 5, 9)],
        ..CommitMessage::new(no_part(), 1, 2)
    };
    c.overwrite(
        OverwriteScope::Static(None),
        vec![disjoint, overlapping],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    let plan = plan_scan(&table, &ScanRequest::default()).await.unwrap();
    let mut levels: Vec<(String, i32)> = plan
        .splits
        .iter()
        .flat_map(|s| s.files.iter().map(|f| (f.file_name.clone(), f.level)))
        .collect();
    levels.sort();
    // Default num-levels is 6, so the highest level is 5.
    let expected = [("m1", 0), ("m2", 0), ("n1", 5), ("n2", 5)].map(|(n, l)| (n.to_string(), l));
    assert_eq!(levels, expected.to_vec());
}
