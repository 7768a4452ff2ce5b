//! Every manifest list, manifest and index manifest of every fixture table: decoded, checked
//! against fixtures.json and against each other, and re-encoded with every codec.

use std::collections::HashMap;

use super::super::*;
use super::{assert_same_as_apache, fixture_db, fixture_files, FixtureFile, Kind};

const CODECS: [Codec; 4] = [Codec::Null, Codec::Deflate, Codec::Snappy, Codec::Zstd];

/// Arity prefix of a framed BinaryRow.
fn arity(framed: &[u8]) -> u32 {
    assert!(
        framed.len() >= 12,
        "framed BinaryRow too short: {framed:02x?}"
    );
    u32::from_be_bytes([framed[0], framed[1], framed[2], framed[3]])
}

struct TableInfo {
    partition_keys: usize,
    trimmed_pk: usize,
    counts: HashMap<Kind, usize>,
}

fn table_info() -> HashMap<String, TableInfo> {
    let path = fixture_db().join("../../fixtures.json");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("fixtures.json")).expect("JSON");
    let mut out = HashMap::new();
    for t in json["tables"].as_array().expect("tables") {
        let strings = |k: &str| -> Vec<String> {
            t[k].as_array()
                .expect(k)
                .iter()
                .map(|v| v.as_str().expect("string").to_owned())
                .collect()
        };
        let (pk, parts) = (strings("primary_keys"), strings("partition_keys"));
        let disk = &t["on_disk"];
        let count = |k: &str| disk[k].as_u64().expect(k) as usize;
        let counts = HashMap::from([
            (Kind::List, count("manifest_list_files")),
            (Kind::Manifest, count("manifest_files")),
            (Kind::Index, count("index_manifest_files")),
        ]);
        let info = TableInfo {
            partition_keys: parts.len(),
            trimmed_pk: pk.iter().filter(|k| !parts.contains(k)).count(),
            counts,
        };
        out.insert(t["name"].as_str().expect("name").to_owned(), info);
    }
    out
}

fn check_entry(e: &ManifestEntry, info: &TableInfo, at: &str) {
    assert_eq!(
        arity(&e.partition) as usize,
        info.partition_keys,
        "{at}: partition arity"
    );
    let f = &e.file;
    for key in [
        &f.min_key,
        &f.max_key,
        &f.key_stats.min_values,
        &f.key_stats.max_values,
    ] {
        assert_eq!(arity(key) as usize, info.trimmed_pk, "{at}: key arity");
    }
    assert!(
        f.file_name.starts_with("data-") || f.file_name.starts_with("changelog-"),
        "{at}"
    );
    assert!(
        f.row_count > 0 && f.file_size > 0 && f.min_sequence_number <= f.max_sequence_number,
        "{at}"
    );
    assert_eq!(f.level, 0, "{at}: pypaimon writes level 0 only");
    assert!(
        f.creation_time.is_some(),
        "{at}: pypaimon sets _CREATION_TIME"
    );
    let stats_cols = f.value_stats_cols.as_ref().map(Vec::len);
    if let Some(n) = stats_cols {
        assert_eq!(
            arity(&f.value_stats.min_values) as usize,
            n,
            "{at}: value stats arity"
        );
    }
}

fn check_list(
    meta: &ManifestFileMeta,
    manifests: &HashMap<(String, String), (usize, Vec<ManifestEntry>)>,
    table: &str,
    info: &TableInfo,
) {
    let at = format!("{table}: list entry {}", meta.file_name);
    let (size, entries) = manifests
        .get(&(table.to_owned(), meta.file_name.clone()))
        .unwrap_or_else(|| panic!("{at}: manifest missing"));
    assert_eq!(meta.file_size as usize, *size, "{at}: _FILE_SIZE");
    let adds = entries.iter().filter(|e| e.kind == FileKind::Add).count();
    assert_eq!(meta.num_added_files as usize, adds, "{at}");
    assert_eq!(
        meta.num_deleted_files as usize,
        entries.len() - adds,
        "{at}"
    );
    assert_eq!(
        Some(meta.schema_id),
        entries.iter().map(|e| e.file.schema_id).max(),
        "{at}"
    );
    assert_eq!(
        arity(&meta.partition_stats.min_values) as usize,
        info.partition_keys,
        "{at}"
    );
    let bound = |v: Option<i32>, f: fn(&ManifestEntry) -> i32, max: bool| {
        if let Some(v) = v {
            let actual = entries.iter().map(f);
            assert_eq!(
                Some(v),
                if max { actual.max() } else { actual.min() },
                "{at}: bucket/level bound"
            );
        }
    };
    bound(meta.min_bucket, |e| e.bucket, false);
    bound(meta.max_bucket, |e| e.bucket, true);
    bound(meta.min_level, |e| e.file.level, false);
    bound(meta.max_level, |e| e.file.level, true);
    if let Some(total) = meta.total_buckets {
        assert!(
            entries.iter().all(|e| e.total_buckets == total),
            "{at}: _TOTAL_BUCKETS"
        );
    }
}

#[test]
fn decodes_every_fixture_file() {
    let files = fixture_files();
    let info = table_info();
    let mut counts: HashMap<(String, Kind), usize> = HashMap::new();
    let mut manifests = HashMap::new();
    let (mut lists, mut indexes) = (Vec::new(), 0usize);
    for f in &files {
        let at = format!("{}/{}", f.table, f.name);
        *counts.entry((f.table.clone(), f.kind)).or_default() += 1;
        let table = info
            .get(&f.table)
            .unwrap_or_else(|| panic!("{at}: table not in fixtures.json"));
        match f.kind {
            Kind::List => {
                let v = read_manifest_list(&f.bytes).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_same_as_apache(&v, &f.bytes, &at);
                lists.push((f.table.clone(), v));
            }
            Kind::Manifest => {
                let v = read_manifest(&f.bytes).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_same_as_apache(&v, &f.bytes, &at);
                assert!(!v.is_empty(), "{at}: empty manifest");
                v.iter().for_each(|e| check_entry(e, table, &at));
                manifests.insert((f.table.clone(), f.name.clone()), (f.bytes.len(), v));
            }
            Kind::Index => {
                let v = read_index_manifest(&f.bytes).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_same_as_apache(&v, &f.bytes, &at);
                for e in &v {
                    assert_eq!(arity(&e.partition) as usize, table.partition_keys, "{at}");
                    let file = &e.index_file;
                    match file.index_type.as_str() {
                        HASH_INDEX => assert!(file.dv_ranges.is_none(), "{at}"),
                        DELETION_VECTORS_INDEX => {
                            let ranges = file
                                .dv_ranges
                                .as_ref()
                                .unwrap_or_else(|| panic!("{at}: no DV ranges"));
                            assert_eq!(ranges.len() as i64, file.row_count, "{at}");
                            assert!(
                                ranges.iter().all(|r| r.offset >= 1
                                    && r.length > 0
                                    && r.cardinality.is_some()),
                                "{at}"
                            );
                        }
                        other => panic!("{at}: unexpected index type {other}"),
                    }
                }
                indexes += v.len();
            }
        }
    }
    for (name, t) in &info {
        for kind in [Kind::List, Kind::Manifest, Kind::Index] {
            let found = counts.get(&(name.clone(), kind)).copied().unwrap_or(0);
            assert_eq!(
                found, t.counts[&kind],
                "{name}: {kind:?} file count vs fixtures.json"
            );
        }
    }
    for (table, list) in &lists {
        list.iter()
            .for_each(|m| check_list(m, &manifests, table, &info[table]));
    }
    let entries: Vec<&ManifestEntry> = manifests.values().flat_map(|(_, v)| v).collect();
    let deletes = entries
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .count();
    assert!(deletes > 0, "fixtures contain DELETE entries (overwrite)");
    assert!(indexes > 0 && entries.len() > deletes);
    // A DELETE repeats its ADD's identifier (append_overwrite).
    let adds: std::collections::HashSet<FileIdentifier> = entries
        .iter()
        .filter(|e| e.kind == FileKind::Add)
        .map(|e| e.identifier())
        .collect();
    assert!(entries
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .all(|e| adds.contains(&e.identifier())));
    assert!(
        lists
            .iter()
            .flat_map(|(_, l)| l)
            .any(|m| m.total_buckets.is_some()),
        "pypaimon-only field seen"
    );
}

/// The framed BinaryRows of an entry, in a fixed order.
fn binary_rows(e: &ManifestEntry) -> Vec<&[u8]> {
    let f = &e.file;
    vec![
        &e.partition,
        &f.min_key,
        &f.max_key,
        &f.key_stats.min_values,
        &f.key_stats.max_values,
        &f.value_stats.min_values,
        &f.value_stats.max_values,
    ]
}

fn round_trip(f: &FixtureFile, codec: Codec) {
    let at = format!("{}/{} via {codec:?}", f.table, f.name);
    match f.kind {
        Kind::List => {
            let v = read_manifest_list(&f.bytes).expect("decode");
            let bytes = write_manifest_list(&v, codec).expect("encode");
            assert_eq!(read_manifest_list(&bytes).expect("re-decode"), v, "{at}");
            assert_same_as_apache(&v, &bytes, &at);
        }
        Kind::Manifest => {
            let v = read_manifest(&f.bytes).expect("decode");
            let bytes = write_manifest(&v, codec).expect("encode");
            let back = read_manifest(&bytes).expect("re-decode");
            assert_eq!(back, v, "{at}");
            for (a, b) in v.iter().zip(&back) {
                assert_eq!(binary_rows(a), binary_rows(b), "{at}: BinaryRow bytes");
            }
            assert_same_as_apache(&v, &bytes, &at);
        }
        Kind::Index => {
            let v = read_index_manifest(&f.bytes).expect("decode");
            let bytes = write_index_manifest(&v, codec).expect("encode");
            assert_eq!(read_index_manifest(&bytes).expect("re-decode"), v, "{at}");
            assert_same_as_apache(&v, &bytes, &at);
        }
    }
}

#[test]
fn fixture_files_round_trip_with_every_codec() {
    for f in &fixture_files() {
        for codec in CODECS {
            round_trip(f, codec);
        }
    }
}

#[test]
fn binary_rows_are_kept_as_stored_framed_bytes() {
    // The §4.3 example shape: partition dt STRING, key id INT; compare with the raw Avro value.
    let f = fixture_files()
        .into_iter()
        .find(|f| f.table == "pk_partitioned" && f.kind == Kind::Manifest)
        .expect("fixture");
    let ours = read_manifest(&f.bytes).expect("decode");
    let theirs: Vec<_> = apache_avro::Reader::new(&f.bytes[..])
        .expect("reader")
        .collect::<Result<_, _>>()
        .expect("values");
    for (e, t) in ours.iter().zip(&theirs) {
        let apache_avro::types::Value::Record(fields) = t else {
            panic!("record")
        };
        let partition = fields
            .iter()
            .find(|(n, _)| n == "_PARTITION")
            .map(|(_, v)| v.clone());
        assert_eq!(
            partition,
            Some(apache_avro::types::Value::Bytes(e.partition.clone()))
        );
        assert_eq!(arity(&e.partition), 2);
        assert_eq!(arity(&e.file.min_key), 1);
    }
}

#[test]
fn probed_reads_keep_exactly_the_entries_the_probe_accepts() {
    // every fixture manifest, with each of its partitions and buckets rejected in turn: the
    // kept entries equal the full decode's, filtered, and the probe sees every entry once
    for f in fixture_files().iter().filter(|f| f.kind == Kind::Manifest) {
        let all = read_manifest(&f.bytes).expect("decode");
        for rejected in &all {
            let mut asked = 0;
            let kept = read_manifest_where(&f.bytes, |p, b| {
                asked += 1;
                (p, b) != (&rejected.partition[..], rejected.bucket)
            })
            .expect("probed decode");
            let expected: Vec<_> = all
                .iter()
                .filter(|e| (&e.partition, e.bucket) != (&rejected.partition, rejected.bucket))
                .cloned()
                .collect();
            assert_eq!(kept, expected, "{}/{}", f.table, f.name);
            assert_eq!(asked, all.len(), "{}/{}", f.table, f.name);
        }
        let none = read_manifest_where(&f.bytes, |_, _| false).expect("probed decode");
        assert!(none.is_empty(), "{}/{}", f.table, f.name);
    }
}

#[test]
fn key_stats_probes_keep_exactly_the_entries_they_accept() {
    // every fixture manifest, with the files of each key-statistics value rejected in turn:
    // the kept entries equal the full decode's, filtered, and every entry the partition and
    // bucket test keeps is asked about exactly once
    for f in fixture_files().iter().filter(|f| f.kind == Kind::Manifest) {
        let all = read_manifest(&f.bytes).expect("decode");
        for rejected in &all {
            let mut asked = 0;
            let mut entry = |_: &[u8], b: i32| b != -7;
            let mut file = |stats: &SimpleStats, rows: i64| {
                asked += 1;
                (stats, rows) != (&rejected.file.key_stats, rejected.file.row_count)
            };
            let probe = EntryProbe::new(&mut entry).key_stats(&mut file);
            let kept = read_manifest_probed(&f.bytes, probe).expect("probed decode");
            let expected: Vec<_> = all
                .iter()
                .filter(|e| {
                    e.bucket != -7
                        && (&e.file.key_stats, e.file.row_count)
                            != (&rejected.file.key_stats, rejected.file.row_count)
                })
                .cloned()
                .collect();
            assert_eq!(kept, expected, "{}/{}", f.table, f.name);
            let not_probed = all.iter().filter(|e| e.bucket == -7).count();
            assert_eq!(asked, all.len() - not_probed, "{}/{}", f.table, f.name);
        }
    }
}
