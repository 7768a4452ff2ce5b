//! Property tests (random values through write + read for every codec) and the exact writer
//! schema we produce.

use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::super::list::JAVA_FIELDS;
use super::super::record::{schema_json, AvroRecord};
use super::super::*;
use super::assert_same_as_apache;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..40)
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,24}"
}

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![
        Just(Codec::Null),
        Just(Codec::Deflate),
        Just(Codec::Snappy),
        Just(Codec::Zstd)
    ]
}

fn kind() -> impl Strategy<Value = FileKind> {
    prop_oneof![Just(FileKind::Add), Just(FileKind::Delete)]
}

prop_compose! {
    fn stats()(min_values in bytes(), max_values in bytes(), null_counts in of(vec(of(any::<i64>()), 0..6))) -> SimpleStats {
        SimpleStats { min_values, max_values, null_counts }
    }
}

prop_compose! {
    fn data_file()(
        (file_name, file_size, row_count, min_key, max_key) in (text(), any::<i64>(), any::<i64>(), bytes(), bytes()),
        (key_stats, value_stats) in (stats(), stats()),
        (min_sequence_number, max_sequence_number, schema_id, level) in (any::<i64>(), any::<i64>(), any::<i64>(), any::<i32>()),
        (extra_files, creation_time, delete_row_count, embedded_index) in (vec(text(), 0..3), of(any::<i64>()), of(any::<i64>()), of(bytes())),
        file_source in of(prop_oneof![Just(FileSource::Append), Just(FileSource::Compact)]),
        (value_stats_cols, external_path, first_row_id) in (of(vec(text(), 0..4)), of(text()), of(any::<i64>())),
        (write_cols, write_cols_sequences) in (of(vec(text(), 0..4)), of(vec(any::<i64>(), 0..4))),
    ) -> DataFileMeta {
        DataFileMeta {
            file_name, file_size, row_count, min_key, max_key, key_stats, value_stats,
            min_sequence_number, max_sequence_number, schema_id, level, extra_files, creation_time,
            delete_row_count, embedded_index, file_source, value_stats_cols, external_path,
            first_row_id, write_cols, write_cols_sequences,
        }
    }
}

prop_compose! {
    fn manifest_entry()(kind in kind(), partition in bytes(), bucket in any::<i32>(), total_buckets in any::<i32>(), file in data_file()) -> ManifestEntry {
        ManifestEntry { kind, partition, bucket, total_buckets, file }
    }
}

prop_compose! {
    fn manifest_file_meta()(
        (file_name, file_size, num_added_files, num_deleted_files, partition_stats, schema_id) in
            (text(), any::<i64>(), any::<i64>(), any::<i64>(), stats(), any::<i64>()),
        (min_bucket, max_bucket, min_level, max_level) in (of(any::<i32>()), of(any::<i32>()), of(any::<i32>()), of(any::<i32>())),
        (min_row_id, max_row_id, total_buckets, extra_files) in (of(any::<i64>()), of(any::<i64>()), of(any::<i32>()), of(vec(text(), 0..3))),
    ) -> ManifestFileMeta {
        ManifestFileMeta {
            file_name, file_size, num_added_files, num_deleted_files, partition_stats, schema_id,
            min_bucket, max_bucket, min_level, max_level, min_row_id, max_row_id, total_buckets, extra_files,
        }
    }
}

prop_compose! {
    fn dv_meta()(data_file_name in text(), offset in any::<i32>(), length in any::<i32>(), cardinality in of(any::<i64>())) -> DeletionVectorMeta {
        DeletionVectorMeta { data_file_name, offset, length, cardinality }
    }
}

prop_compose! {
    fn global_index()(
        row_range_start in any::<i64>(), row_range_end in any::<i64>(), index_field_id in any::<i32>(),
        extra_field_ids in of(vec(any::<i32>(), 0..4)), index_meta in of(bytes()), source_meta in of(bytes()),
    ) -> GlobalIndexMeta {
        GlobalIndexMeta { row_range_start, row_range_end, index_field_id, extra_field_ids, index_meta, source_meta }
    }
}

prop_compose! {
    fn index_entry()(
        kind in kind(), partition in bytes(), bucket in any::<i32>(),
        (index_type, file_name, file_size, row_count) in (text(), text(), any::<i64>(), any::<i64>()),
        (dv_ranges, external_path, global_index) in (of(vec(dv_meta(), 0..4)), of(text()), of(global_index())),
    ) -> IndexManifestEntry {
        IndexManifestEntry {
            kind, partition, bucket,
            index_file: IndexFileMeta { index_type, file_name, file_size, row_count, dv_ranges, external_path, global_index },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn manifest_entries_round_trip(entries in vec(manifest_entry(), 0..20), codec in codec()) {
        let bytes = write_manifest(&entries, codec).expect("encode");
        prop_assert_eq!(read_manifest(&bytes).expect("decode"), entries.clone());
        assert_same_as_apache(&entries, &bytes, "manifest");
    }

    #[test]
    fn manifest_list_round_trips(entries in vec(manifest_file_meta(), 0..20), codec in codec()) {
        let bytes = write_manifest_list(&entries, codec).expect("encode");
        prop_assert_eq!(read_manifest_list(&bytes).expect("decode"), entries.clone());
        assert_same_as_apache(&entries, &bytes, "manifest list");
    }

    #[test]
    fn index_manifest_round_trips(entries in vec(index_entry(), 0..20), codec in codec()) {
        let bytes = write_index_manifest(&entries, codec).expect("encode");
        prop_assert_eq!(read_index_manifest(&bytes).expect("decode"), entries.clone());
        assert_same_as_apache(&entries, &bytes, "index manifest");
    }
}

/// 3000 generated entries: more than one block.
fn many_entries() -> Vec<ManifestEntry> {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..3000)
        .map(|_| {
            manifest_entry()
                .new_tree(&mut runner)
                .expect("value")
                .current()
        })
        .collect()
}

#[test]
fn many_entries_span_several_blocks() {
    let entries = many_entries();
    for codec in [Codec::Null, Codec::Zstd] {
        let bytes = write_manifest(&entries, codec).expect("encode");
        assert_eq!(read_manifest(&bytes).expect("decode"), entries);
    }
}

#[test]
fn writing_is_deterministic_with_a_sync_marker_derived_from_the_content() {
    let entries = many_entries();
    let bytes = write_manifest(&entries, Codec::Zstd).expect("encode");
    assert_eq!(
        write_manifest(&entries, Codec::Zstd).expect("encode"),
        bytes
    );
    let marker = &bytes[bytes.len() - 16..];
    assert_ne!(marker, [0u8; 16]);
    let blocks = bytes.windows(16).filter(|w| *w == marker).count();
    assert!(
        blocks >= 3,
        "header and every block end with the marker: {blocks}"
    );
    assert_same_as_apache(&entries, &bytes, "manifest");
    let fewer = write_manifest(&entries[1..], Codec::Zstd).expect("encode");
    assert_ne!(&fewer[fewer.len() - 16..], marker);
}

#[test]
fn codec_option_parsing() {
    assert_eq!(Codec::from_option("zstd").unwrap(), Codec::Zstd);
    assert_eq!("ZSTD".parse::<Codec>().unwrap(), Codec::Zstd);
    assert_eq!(Codec::from_option("none").unwrap(), Codec::Null);
    assert_eq!(Codec::from_option("null").unwrap(), Codec::Null);
    assert_eq!(Codec::from_option("snappy").unwrap(), Codec::Snappy);
    assert_eq!(Codec::from_option("deflate").unwrap(), Codec::Deflate);
    assert!(matches!(
        Codec::from_option("xz"),
        Err(crate::Error::Unsupported(_))
    ));
    assert!(matches!(
        Codec::from_option("lz4"),
        Err(crate::Error::Invalid(_))
    ));
    assert_eq!(Codec::Zstd.avro_name(), "zstandard");
    assert_eq!(Codec::default(), Codec::Zstd);
}

/// Java's `AvroSchemaConverter` output for `ManifestFileMetaSerializer`'s row type.
const JAVA_MANIFEST_LIST_SCHEMA: &str = concat!(
    r#"{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":["#,
    r#"{"name":"_VERSION","type":"int"},{"name":"_FILE_NAME","type":"string"},"#,
    r#"{"name":"_FILE_SIZE","type":"long"},{"name":"_NUM_ADDED_FILES","type":"long"},"#,
    r#"{"name":"_NUM_DELETED_FILES","type":"long"},"#,
    r#"{"name":"_PARTITION_STATS","type":{"type":"record","name":"record__PARTITION_STATS","fields":["#,
    r#"{"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},"#,
    r#"{"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},"#,
    r#"{"name":"_SCHEMA_ID","type":"long"},"#,
    r#"{"name":"_MIN_BUCKET","type":["null","int"],"default":null},"#,
    r#"{"name":"_MAX_BUCKET","type":["null","int"],"default":null},"#,
    r#"{"name":"_MIN_LEVEL","type":["null","int"],"default":null},"#,
    r#"{"name":"_MAX_LEVEL","type":["null","int"],"default":null},"#,
    r#"{"name":"_MIN_ROW_ID","type":["null","long"],"default":null},"#,
    r#"{"name":"_MAX_ROW_ID","type":["null","long"],"default":null}]}"#,
);

#[test]
fn writer_schema_is_javas() {
    assert_eq!(schema_json(JAVA_FIELDS), JAVA_MANIFEST_LIST_SCHEMA);
    let entry = schema_json(ManifestEntry::FIELDS);
    for needle in [
        r#"{"name":"_FILE","type":{"type":"record","name":"record__FILE","fields":[{"name":"_FILE_NAME""#,
        r#"{"name":"_KEY_STATS","type":{"type":"record","name":"record__FILE__KEY_STATS","#,
        r#"{"name":"_EXTRA_FILES","type":{"type":"array","items":"string"}}"#,
        r#"{"name":"_CREATION_TIME","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}"#,
        r#"{"name":"_WRITE_COLS_SEQUENCES","type":["null",{"type":"array","items":"long"}],"default":null}]}}]}"#,
    ] {
        assert!(entry.contains(needle), "{needle} not in {entry}");
    }
    let index = schema_json(IndexManifestEntry::FIELDS);
    for needle in [
        r#"{"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null",{"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":[{"name":"f0","type":"string"}"#,
        r#"{"name":"_GLOBAL_INDEX","type":["null",{"type":"record","name":"record__GLOBAL_INDEX","#,
    ] {
        assert!(index.contains(needle), "{needle} not in {index}");
    }
    for json in [entry, index, schema_json(ManifestFileMeta::FIELDS)] {
        apache_avro::Schema::parse_str(&json).expect("valid Avro schema");
    }
}

#[test]
fn pypaimon_fields_are_written_only_when_set() {
    let mut meta = ManifestFileMeta {
        file_name: "manifest-x-0".into(),
        file_size: 1,
        num_added_files: 1,
        num_deleted_files: 0,
        partition_stats: SimpleStats::empty(),
        schema_id: 0,
        min_bucket: None,
        max_bucket: None,
        min_level: None,
        max_level: None,
        min_row_id: None,
        max_row_id: None,
        total_buckets: None,
        extra_files: None,
    };
    let has_total = |bytes: &[u8]| {
        let reader = apache_avro::Reader::new(bytes).expect("reader");
        let apache_avro::Schema::Record(r) = reader.writer_schema() else {
            panic!("record")
        };
        r.fields.iter().any(|f| f.name == "_TOTAL_BUCKETS")
    };
    let plain = write_manifest_list(std::slice::from_ref(&meta), Codec::Zstd).unwrap();
    assert!(!has_total(&plain));
    meta.total_buckets = Some(4);
    let extended = write_manifest_list(std::slice::from_ref(&meta), Codec::Zstd).unwrap();
    assert!(has_total(&extended));
    assert_eq!(read_manifest_list(&extended).unwrap(), vec![meta]);
}
