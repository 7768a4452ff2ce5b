//! Manifest files of commits: base-list merging (minor at `manifest.merge-min-count`, full
//! compaction past the size threshold), rolling at `manifest.target-file-size`, partition
//! statistics, and decoding with an independent Avro reader.

use std::collections::BTreeSet;

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::manifest::FileKind;
use tidelake_spec::snapshot::BATCH_COMMIT_IDENTIFIER as BATCH;

use super::*;

/// Every manifest named by the base and delta lists of `snap`.
async fn data_manifest_names(table: &Table, snap: &Snapshot) -> Vec<String> {
    let mut all = list(table, &snap.base_manifest_list).await;
    all.extend(list(table, &snap.delta_manifest_list).await);
    all.into_iter().map(|m| m.file_name).collect()
}

#[tokio::test]
async fn minor_merge_triggers_at_min_count_and_keeps_the_live_set() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(
        dir.path(),
        true,
        false,
        &[("bucket", "-1"), ("manifest.merge-min-count", "3")],
    )
    .await;
    let c = committer(&table, "u");
    let mut model = BTreeSet::new();
    let mut delta_manifests: BTreeSet<String> = BTreeSet::new();
    for round in 0..7 {
        let name = format!("f{round}");
        c.commit(
            vec![add(
                part(if round % 2 == 0 { "x" } else { "y" }),
                -1,
                vec![file(&name, 1)],
            )],
            BATCH,
            &[],
        )
        .await
        .unwrap();
        model.insert(name);
        let snap = latest(&table).await;
        delta_manifests.extend(
            list(&table, &snap.delta_manifest_list)
                .await
                .into_iter()
                .map(|m| m.file_name),
        );
        let base = list(&table, &snap.base_manifest_list).await;
        // The previous base + delta is merged as soon as it holds 3 small manifests.
        assert!(
            base.len() < 3,
            "round {round}: base list has {} manifests",
            base.len()
        );
        assert_eq!(live_names(&table).await, model);
    }
    let snap = latest(&table).await;
    let base = list(&table, &snap.base_manifest_list).await;
    assert!(
        base.iter().any(|m| !delta_manifests.contains(&m.file_name)),
        "no merged manifest in the base list"
    );

    // A compaction's DELETE cancels with its ADD once both are merged together.
    c.commit(
        vec![compact(
            part("x"),
            0,
            -1,
            vec![file("f0", 1)],
            vec![file("g0", 1)],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    model.remove("f0");
    model.insert("g0".into());
    for round in 0..4 {
        let name = format!("h{round}");
        c.commit(vec![add(part("y"), -1, vec![file(&name, 1)])], BATCH, &[])
            .await
            .unwrap();
        model.insert(name);
        assert_eq!(live_names(&table).await, model);
    }
    let snap = latest(&table).await;
    let base_entries = entries(&table, &list(&table, &snap.base_manifest_list).await).await;
    assert!(
        base_entries.iter().all(|e| e.kind == FileKind::Add),
        "ADD/DELETE pairs merged together cancel"
    );
    assert!(!base_entries.iter().any(|e| e.file.file_name == "f0"));
}

#[tokio::test]
async fn full_compaction_applies_every_delete() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        ("bucket", "-1"),
        ("manifest.full-compaction-threshold-size", "1 b"),
        ("manifest.merge-min-count", "100"),
    ];
    let table = create_table(dir.path(), false, false, &options).await;
    let c = committer(&table, "u");
    for round in 0..4 {
        c.commit(
            vec![add(no_part(), -1, vec![file(&format!("f{round}"), 1)])],
            BATCH,
            &[],
        )
        .await
        .unwrap();
    }
    c.commit(
        vec![compact(
            no_part(),
            0,
            -1,
            vec![file("f1", 1), file("f2", 1)],
            vec![file("m", 2)],
        )],
        BATCH,
        &[],
    )
    .await
    .unwrap();
    c.commit(vec![add(no_part(), -1, vec![file("last", 1)])], BATCH, &[])
        .await
        .unwrap();
    let snap = latest(&table).await;
    let base = entries(&table, &list(&table, &snap.base_manifest_list).await).await;
    let names_in_base: BTreeSet<String> = base.iter().map(|e| e.file.file_name.clone()).collect();
    assert!(base.iter().all(|e| e.kind == FileKind::Add));
    assert_eq!(names_in_base, names(["f0", "f3", "m"]));
    assert_eq!(live_names(&table).await, names(["f0", "f3", "m", "last"]));
}

#[tokio::test]
async fn manifests_roll_at_the_target_size() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        ("bucket", "-1"),
        ("manifest.target-file-size", "8 kb"),
        ("manifest.compression", "null"),
    ];
    let table = create_table(dir.path(), false, false, &options).await;
    let files: Vec<DataFileMeta> = (0..2500)
        .map(|i| file(&format!("data-{i:05}.parquet"), 1))
        .collect();
    committer(&table, "u")
        .commit(vec![add(no_part(), -1, files)], BATCH, &[])
        .await
        .unwrap();
    let snap = latest(&table).await;
    let delta = list(&table, &snap.delta_manifest_list).await;
    assert_eq!(delta.len(), 3, "rolled every 1000 records once past 8 KiB");
    assert_eq!(delta.iter().map(|m| m.num_added_files).sum::<i64>(), 2500);
    assert_eq!(live_names(&table).await.len(), 2500);
    assert_eq!(snap.total_record_count, 2500);
}

#[tokio::test]
async fn manifest_metadata_describes_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), true, false, &[("bucket", "4")]).await;
    let messages = vec![
        CommitMessage {
            new_files: vec![file("p", 1)],
            ..CommitMessage::new(part("2024-05-02"), 3, 4)
        },
        CommitMessage {
            new_files: vec![file("q", 1)],
            ..CommitMessage::new(part("2024-05-01"), 1, 4)
        },
    ];
    committer(&table, "u")
        .commit(messages, BATCH, &[])
        .await
        .unwrap();
    let snap = latest(&table).await;
    let meta = &list(&table, &snap.delta_manifest_list).await[0];
    assert_eq!(
        (meta.min_bucket, meta.max_bucket, meta.schema_id),
        (Some(1), Some(3), 0)
    );
    let types = [DataType::string()];
    let min = decode_framed(&meta.partition_stats.min_values, &types).unwrap();
    let max = decode_framed(&meta.partition_stats.max_values, &types).unwrap();
    assert_eq!(
        (min, max),
        (
            vec![Datum::String("2024-05-01".into())],
            vec![Datum::String("2024-05-02".into())]
        )
    );
    assert_eq!(meta.partition_stats.null_counts, Some(vec![Some(0)]));
    assert_eq!(
        table
            .io()
            .size(&format!("manifest/{}", meta.file_name))
            .await
            .unwrap(),
        meta.file_size as u64
    );
}

#[tokio::test]
async fn metadata_files_decode_with_an_independent_avro_reader() {
    let dir = tempfile::tempdir().unwrap();
    let table = create_table(dir.path(), true, true, &[("bucket", "1")]).await;
    let message = CommitMessage {
        new_files: vec![pk_file("k", 0, 1, 2)],
        ..CommitMessage::new(part("d"), 0, 1)
    };
    committer(&table, "u")
        .commit(vec![message], BATCH, &[])
        .await
        .unwrap();
    let snap = latest(&table).await;
    let mut checked = 0;
    for name in [
        snap.base_manifest_list.clone(),
        snap.delta_manifest_list.clone(),
    ]
    .into_iter()
    .chain(data_manifest_names(&table, &snap).await)
    {
        let bytes = table.io().read(&format!("manifest/{name}")).await.unwrap();
        let reader = apache_avro::Reader::new(&bytes[..]).expect("an Avro container");
        for record in reader {
            record.expect("a record decodes");
        }
        checked += 1;
    }
    assert_eq!(checked, 3);
}

/// (partition, bucket, file names in order) of every split of the latest snapshot's plan.
async fn plan_layout(table: &Table) -> BTreeSet<(Vec<u8>, i32, Vec<String>)> {
    let plan = plan_scan(table, &ScanRequest::default())
        .await
        .expect("plan");
    plan.splits
        .iter()
        .map(|s| {
            let files = s.files.iter().map(|f| f.file_name.clone()).collect();
            (s.partition.clone(), s.bucket, files)
        })
        .collect()
}

#[tokio::test]
async fn full_compaction_sorts_entries_by_partition_then_bucket_and_keeps_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let options = [
        ("bucket", "4"),
        ("manifest.target-file-size", "1 kb"),
        ("manifest.merge-min-count", "1000"),
    ];
    let table = create_table(dir.path(), true, true, &options).await;
    let c = committer(&table, "u");
    // Values of different lengths in shuffled order: the natural (string) order ("105" <
    // "12" < "9") is neither commit order nor the order of their framed bytes.
    let values: Vec<String> = (0..40).map(|i| ((i * 7) % 40 * 3).to_string()).collect();
    let mut next_key = 0;
    let mut pk = |name: String| {
        next_key += 10;
        pk_file(&name, 0, next_key, next_key + 5)
    };
    for round in 0..4 {
        let mut messages = Vec::new();
        for v in &values {
            for bucket in (0..4).rev() {
                messages.push(CommitMessage {
                    new_files: (0..2)
                        .map(|k| pk(format!("f{round}-{v}-{bucket}-{k}")))
                        .collect(),
                    ..CommitMessage::new(part(v), bucket, 4)
                });
            }
        }
        c.commit(messages, BATCH, &[]).await.unwrap();
    }
    // A compaction in every partition: DELETE entries everywhere, so the full compaction
    // below rewrites every manifest.
    let compactions = values
        .iter()
        .map(|v| {
            let gone = pk_file(&format!("f0-{v}-1-0"), 0, 0, 0);
            compact(part(v), 1, 4, vec![gone], vec![pk(format!("c-{v}"))])
        })
        .collect();
    c.commit(compactions, BATCH, &[]).await.unwrap();
    let before = plan_layout(&table).await;
    assert_eq!(before.len(), 40 * 4);

    committer(&table, "u").compact_manifests().await.unwrap();
    let snap = latest(&table).await;
    let base = list(&table, &snap.base_manifest_list).await;
    assert!(
        list(&table, &snap.delta_manifest_list).await.is_empty(),
        "a manifest compaction has an empty delta"
    );
    assert!(
        base.len() >= 2,
        "the rewritten entries roll: {}",
        base.len()
    );
    assert_eq!(plan_layout(&table).await, before, "same splits, same files");

    // Entries follow (partition value, bucket) across the rolled manifests, so each manifest's
    // partition range meets the next one's at most at one value.
    let types = [DataType::string()];
    let value = |framed: &[u8]| match decode_framed(framed, &types).unwrap().remove(0) {
        Datum::String(s) => s,
        other => panic!("partition {other:?}"),
    };
    let order: Vec<(String, i32)> = entries(&table, &base)
        .await
        .iter()
        .map(|e| (value(&e.partition), e.bucket))
        .collect();
    assert_eq!(order.len(), 40 * 4 * 2 * 4);
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "entries sorted");
    for pair in base.windows(2) {
        let max = value(&pair[0].partition_stats.max_values);
        let min = value(&pair[1].partition_stats.min_values);
        assert!(max <= min, "manifest ranges overlap: {max} > {min}");
    }
    let again = committer(&table, "u").compact_manifests().await.unwrap();
    assert_eq!(again, Default::default(), "already partition-sorted");
    assert_eq!(latest(&table).await.id, snap.id);
}
