//! Unit tests of [`LiveFiles`]: replay, pruning (before the replay, exact), grouping order and
//! deletion-vector attachment.

use std::sync::atomic::{AtomicUsize, Ordering};

use tidelake_spec::manifest::{
    DataFileMeta, DeletionVectorMeta, FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry,
    ManifestFileMeta, SimpleStats, DELETION_VECTORS_INDEX, HASH_INDEX,
};

use super::*;
use crate::error::ErrorKind;

fn file(name: &str, level: i32) -> DataFileMeta {
    let stats = SimpleStats {
        min_values: Vec::new(),
        max_values: Vec::new(),
        null_counts: None,
    };
    DataFileMeta {
        file_name: name.to_string(),
        file_size: 10,
        row_count: 1,
        min_key: Vec::new(),
        max_key: Vec::new(),
        key_stats: stats.clone(),
        value_stats: stats,
        min_sequence_number: 0,
        max_sequence_number: 0,
        schema_id: 0,
        level,
        extra_files: Vec::new(),
        creation_time: None,
        delete_row_count: None,
        embedded_index: None,
        file_source: None,
        value_stats_cols: None,
        external_path: None,
        first_row_id: None,
        write_cols: None,
        write_cols_sequences: None,
    }
}

fn add(partition: u8, bucket: i32, name: &str, level: i32) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Add,
        partition: vec![partition],
        bucket,
        total_buckets: 4,
        file: file(name, level),
    }
}

fn delete(partition: u8, bucket: i32, name: &str, level: i32) -> ManifestEntry {
    ManifestEntry {
        kind: FileKind::Delete,
        ..add(partition, bucket, name, level)
    }
}

fn live(entries: Vec<ManifestEntry>, mut pruning: Pruning<'_>) -> crate::Result<LiveFiles> {
    LiveFiles::from_entries(entries.into_iter().map(|e| (Some("m-0"), e)), &mut pruning)
}

/// (partition, bucket, file names) per bucket.
fn layout(live: &LiveFiles) -> Vec<(u8, i32, Vec<&str>)> {
    live.buckets()
        .iter()
        .map(|b| {
            (
                b.partition[0],
                b.bucket,
                b.files.iter().map(|e| e.file.file_name.as_str()).collect(),
            )
        })
        .collect()
}

fn snapshot_entries() -> Vec<ManifestEntry> {
    vec![
        add(1, 0, "a", 0),
        add(2, 0, "b", 0),
        add(1, 1, "c", 0),
        add(1, 0, "d", 1),
        add(2, -2, "p", 0),
        delete(1, 0, "a", 0),
        add(1, 0, "e", 0),
        delete(2, 0, "x", 0),
    ]
}

#[test]
fn replays_and_groups_in_order_of_first_live_file() {
    let live = live(snapshot_entries(), Pruning::all()).unwrap();
    // "a" is deleted, the unmatched DELETE of "x" is not a live file.
    assert_eq!(
        layout(&live),
        [
            (2, 0, vec!["b"]),
            (1, 1, vec!["c"]),
            (1, 0, vec!["d", "e"]),
            (2, -2, vec!["p"])
        ]
    );
    assert_eq!(live.entries().count(), 5);
    assert!(live.entries().all(|e| e.kind == FileKind::Add));
    assert_eq!(live.buckets()[0].total_buckets, 4);
    let names: Vec<String> = live
        .into_entries()
        .into_iter()
        .map(|e| e.file.file_name)
        .collect();
    assert_eq!(names, ["b", "c", "d", "e", "p"]);
}

#[test]
fn added_twice_is_corrupt_and_names_the_manifest() {
    let err = live(vec![add(1, 0, "a", 0), add(1, 0, "a", 0)], Pruning::all()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains("file a is added twice in bucket 0 (both by manifest manifest/m-0)"),
        "{err}"
    );
}

#[test]
fn prunes_partitions_asking_once_per_partition() {
    let asked = AtomicUsize::new(0);
    let pruning = Pruning::all().partitions(|p| {
        asked.fetch_add(1, Ordering::SeqCst);
        Ok(p == [1])
    });
    let live = live(snapshot_entries(), pruning).unwrap();
    assert_eq!(layout(&live), [(1, 1, vec!["c"]), (1, 0, vec!["d", "e"])]);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "one verdict per distinct partition"
    );
}

#[test]
fn partition_filter_errors_propagate() {
    let pruning =
        Pruning::all().partitions(|_| Err(crate::Error::invalid("undecodable partition")));
    let err = live(snapshot_entries(), pruning).unwrap_err();
    assert!(err.to_string().contains("undecodable partition"), "{err}");
}

#[test]
fn prunes_buckets_postpone_and_level0() {
    let live_of = |pruning| {
        layout(&live(snapshot_entries(), pruning).unwrap())
            .into_iter()
            .map(|(p, b, f)| (p, b, f.join(",")))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        live_of(Pruning::all().buckets(|b| b == 0)),
        [(2, 0, "b".to_string()), (1, 0, "d,e".to_string())]
    );
    assert_eq!(
        live_of(Pruning::all().skip_postpone()),
        [
            (2, 0, "b".to_string()),
            (1, 1, "c".to_string()),
            (1, 0, "d,e".to_string())
        ]
    );
    assert_eq!(
        live_of(Pruning::all().skip_level0(true)),
        [(1, 0, "d".to_string())]
    );
    assert_eq!(live_of(Pruning::all().skip_level0(false)).len(), 4);
}

#[test]
fn pruning_before_replay_drops_add_and_delete_together() {
    // The DELETE of "a" in partition 1 is pruned with its ADD: nothing of partition 1 remains,
    // and the partition-2 file that shares the name is untouched.
    let entries = vec![add(1, 0, "a", 0), add(2, 0, "a", 0), delete(1, 0, "a", 0)];
    let live = live(entries, Pruning::all().partitions(|p| Ok(p == [2]))).unwrap();
    assert_eq!(layout(&live), [(2, 0, vec!["a"])]);
}

fn dv_index(
    partition: u8,
    bucket: i32,
    name: &str,
    index_type: &str,
    ranges: &[(&str, i32)],
) -> IndexManifestEntry {
    IndexManifestEntry {
        kind: FileKind::Add,
        partition: vec![partition],
        bucket,
        index_file: IndexFileMeta {
            index_type: index_type.to_string(),
            file_name: name.to_string(),
            file_size: 100,
            row_count: ranges.len() as i64,
            dv_ranges: Some(
                ranges
                    .iter()
                    .map(|(f, offset)| DeletionVectorMeta {
                        data_file_name: f.to_string(),
                        offset: *offset,
                        length: 8,
                        cardinality: Some(2),
                    })
                    .collect(),
            ),
            external_path: None,
            global_index: None,
        },
    }
}

#[test]
fn attaches_deletion_vectors_to_their_buckets() {
    let mut live = live(snapshot_entries(), Pruning::all()).unwrap();
    live.attach_index(
        &IndexPaths::default(),
        [
            dv_index(
                1,
                0,
                "index-1",
                DELETION_VECTORS_INDEX,
                &[("d", 1), ("e", 9)],
            ),
            dv_index(1, 1, "index-hash", HASH_INDEX, &[("c", 1)]),
            // a bucket without live files
            dv_index(3, 0, "index-3", DELETION_VECTORS_INDEX, &[("z", 1)]),
        ],
    )
    .unwrap();
    let bucket = live
        .buckets()
        .iter()
        .find(|b| b.partition == [1] && b.bucket == 0)
        .unwrap();
    let dv = bucket.deletion_vector("e").unwrap();
    assert_eq!(
        (dv.path.as_str(), dv.offset, dv.length, dv.cardinality),
        ("index/index-1", 9, 8, Some(2))
    );
    assert!(bucket.deletion_vector("d").is_some());
    assert_eq!(
        bucket
            .dv_index
            .iter()
            .map(|f| f.file_name.as_str())
            .collect::<Vec<_>>(),
        ["index-1"]
    );
    let hashed = live
        .buckets()
        .iter()
        .find(|b| b.partition == [1] && b.bucket == 1)
        .unwrap();
    assert!(
        hashed.deletion_vector("c").is_none() && hashed.dv_index.is_empty(),
        "hash indexes are not deletion vectors"
    );
    let hash_files: Vec<&str> = hashed
        .hash_index
        .iter()
        .map(|f| f.file_name.as_str())
        .collect();
    assert_eq!(hash_files, ["index-hash"]);
    assert!(bucket.hash_index.is_empty());
    assert_eq!(
        live.buckets().len(),
        4,
        "no bucket is created for index files alone"
    );
    assert!(live
        .buckets()
        .iter()
        .all(|b| b.deletion_vector("z").is_none()));
}

#[test]
fn corrupt_deletion_vector_range_is_an_error() {
    let mut live = live(snapshot_entries(), Pruning::all()).unwrap();
    let err = live
        .attach_index(
            &IndexPaths::default(),
            [dv_index(
                1,
                0,
                "index-1",
                DELETION_VECTORS_INDEX,
                &[("d", -1)],
            )],
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string()
            .contains("negative deletion vector offset for d"),
        "{err}"
    );
}

#[test]
fn data_files_are_where_their_external_path_says() {
    let mut f = file("data-1.parquet", 0);
    assert_eq!(f.path("p=1/bucket-0"), "p=1/bucket-0/data-1.parquet");
    f.external_path = Some("s3://elsewhere/data-1.parquet".to_string());
    assert_eq!(f.path("p=1/bucket-0"), "s3://elsewhere/data-1.parquet");
    // extra files (file indexes) live next to their data file
    assert_eq!(
        f.aligned_path("p=1/bucket-0", "data-1.parquet.index"),
        "s3://elsewhere/data-1.parquet.index"
    );
    f.external_path = None;
    assert_eq!(
        f.aligned_path("p=1/bucket-0", "data-1.parquet.index"),
        "p=1/bucket-0/data-1.parquet.index"
    );
}

fn manifest(buckets: Option<(i32, i32)>, levels: Option<(i32, i32)>) -> ManifestFileMeta {
    ManifestFileMeta {
        file_name: "manifest-1".to_string(),
        file_size: 1,
        num_added_files: 1,
        num_deleted_files: 0,
        partition_stats: SimpleStats {
            min_values: Vec::new(),
            max_values: Vec::new(),
            null_counts: None,
        },
        schema_id: 0,
        min_bucket: buckets.map(|b| b.0),
        max_bucket: buckets.map(|b| b.1),
        min_level: levels.map(|l| l.0),
        max_level: levels.map(|l| l.1),
        min_row_id: None,
        max_row_id: None,
        total_buckets: None,
        extra_files: None,
    }
}

#[test]
fn manifests_are_skipped_only_when_their_ranges_hold_no_kept_entry() {
    let all = Pruning::all();
    assert!(all.keep_manifest(&manifest(Some((-2, -2)), Some((0, 0)))));

    let level0 = Pruning::all().skip_level0(true);
    assert!(!level0.keep_manifest(&manifest(Some((0, 3)), Some((0, 0)))));
    assert!(level0.keep_manifest(&manifest(Some((0, 3)), Some((0, 1)))));
    assert!(
        level0.keep_manifest(&manifest(Some((0, 3)), None)),
        "no level statistics: read it"
    );

    let postpone = Pruning::all().skip_postpone();
    assert!(!postpone.keep_manifest(&manifest(Some((-2, -2)), Some((0, 0)))));
    assert!(postpone.keep_manifest(&manifest(Some((-2, 0)), Some((0, 0)))));
    assert!(postpone.keep_manifest(&manifest(None, None)));

    let bucket3 = Pruning::all().buckets(|b| b == 3);
    assert!(!bucket3.keep_manifest(&manifest(Some((0, 2)), None)));
    assert!(bucket3.keep_manifest(&manifest(Some((2, 5)), None)));
    assert!(bucket3.keep_manifest(&manifest(None, None)));
    assert!(
        bucket3.keep_manifest(&manifest(Some((4, 5000)), None)),
        "too wide to check bucket by bucket"
    );

    let by_caller = Pruning::all().manifests(|m| m.file_name != "manifest-1");
    assert!(!by_caller.keep_manifest(&manifest(Some((0, 0)), Some((1, 1)))));
}

#[test]
fn skipping_a_manifest_drops_what_entry_pruning_drops() {
    // Entries of a manifest that only holds level-0 files, as a manifest list would describe it:
    // reading it and pruning its entries leaves nothing, as skipping it does.
    let level0_only = vec![add(1, 0, "a", 0), delete(1, 0, "b", 0)];
    let meta = manifest(Some((0, 0)), Some((0, 0)));
    assert!(!Pruning::all().skip_level0(true).keep_manifest(&meta));
    assert!(live(level0_only, Pruning::all().skip_level0(true))
        .unwrap()
        .buckets()
        .is_empty());
}
