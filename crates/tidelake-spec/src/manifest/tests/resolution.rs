//! By-name resolution against foreign writer schemas: reordered, unknown, missing and
//! promoted fields; `_VERSION` checks; required fields.

use super::super::avro::{put_bytes, put_long, ContainerWriter};
use super::super::*;
use crate::Error;

/// A container with `schema` and records given as raw Avro bytes.
fn container(schema: &str, records: &[Vec<u8>], codec: Codec) -> Vec<u8> {
    let mut w = ContainerWriter::new(schema, codec);
    for r in records {
        w.record_buf().extend_from_slice(r);
        w.record_done().expect("block");
    }
    w.finish().expect("finish")
}

const FOREIGN_INDEX_SCHEMA: &str = r#"{"type":"record","name":"Foreign","namespace":"x.y","fields":[
  {"name":"_FILE_NAME","type":"string"},
  {"name":"_UNKNOWN_MAP","type":{"type":"map","values":{"type":"array","items":"double"}}},
  {"name":"_VERSION","type":"int"},
  {"name":"_KIND","type":"int"},
  {"name":"_PARTITION","type":"bytes"},
  {"name":"_EXTRA","type":{"type":"record","name":"Extra","fields":[
     {"name":"fx","type":{"type":"fixed","name":"F3","size":3}},
     {"name":"en","type":{"type":"enum","name":"E","symbols":["A","B"]}},
     {"name":"b","type":"boolean"},
     {"name":"fl","type":"float"},
     {"name":"u","type":["null","string","long"]},
     {"name":"again","type":["null","F3"]},
     {"name":"self","type":{"type":"array","items":"Extra"}}]}},
  {"name":"_BUCKET","type":"int"},
  {"name":"_INDEX_TYPE","type":"string"},
  {"name":"_FILE_SIZE","type":"int"},
  {"name":"_ROW_COUNT","type":["long","null"]},
  {"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":{"type":"record","name":"DV","fields":[
     {"name":"_CARDINALITY","type":["null","long"]},{"name":"f2","type":"int"},{"name":"f1","type":"int"},{"name":"f0","type":"string"}]}}]}
]}"#;

fn foreign_record(version: i64, row_count_null: bool) -> Vec<u8> {
    let mut r = Vec::new();
    put_bytes(&mut r, b"index-1"); // _FILE_NAME
    put_long(&mut r, 1); // map block of 1
    put_bytes(&mut r, b"k");
    put_long(&mut r, -2); // array block of 2 with byte size
    put_long(&mut r, 16);
    r.extend_from_slice(&[0; 16]);
    put_long(&mut r, 0);
    put_long(&mut r, 0); // end of map
    put_long(&mut r, version);
    put_long(&mut r, 1); // _KIND DELETE
    put_bytes(&mut r, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    // _EXTRA: fixed, enum, boolean, float, union long, union fixed, recursive array of one Extra
    r.extend_from_slice(b"abc");
    put_long(&mut r, 1);
    r.push(1);
    r.extend_from_slice(&1.5f32.to_le_bytes());
    put_long(&mut r, 2);
    put_long(&mut r, 99);
    put_long(&mut r, 1);
    r.extend_from_slice(b"xyz");
    put_long(&mut r, 1);
    r.extend_from_slice(b"def");
    put_long(&mut r, 0);
    r.push(0);
    r.extend_from_slice(&[0; 4]);
    put_long(&mut r, 0);
    put_long(&mut r, 0);
    put_long(&mut r, 0); // inner self: empty
    put_long(&mut r, 0); // end of outer self
    put_long(&mut r, 3); // _BUCKET
    put_bytes(&mut r, b"DELETION_VECTORS");
    put_long(&mut r, 35); // _FILE_SIZE as int
    if row_count_null {
        put_long(&mut r, 1);
    } else {
        put_long(&mut r, 0);
        put_long(&mut r, 1);
    }
    put_long(&mut r, 1); // DV ranges: present
    put_long(&mut r, 1);
    put_long(&mut r, 1); // _CARDINALITY present
    put_long(&mut r, 3);
    put_long(&mut r, 26); // f2
    put_long(&mut r, 1); // f1
    put_bytes(&mut r, b"data-1.parquet");
    put_long(&mut r, 0);
    r
}

#[test]
fn resolves_fields_by_name_and_skips_unknown_ones() {
    for codec in [Codec::Null, Codec::Snappy] {
        let bytes = container(
            FOREIGN_INDEX_SCHEMA,
            &[foreign_record(1, false), foreign_record(1, false)],
            codec,
        );
        let entries = read_index_manifest(&bytes).expect("decode");
        let expected = IndexManifestEntry {
            kind: FileKind::Delete,
            partition: EMPTY_ROW.to_vec(),
            bucket: 3,
            index_file: IndexFileMeta {
                index_type: DELETION_VECTORS_INDEX.into(),
                file_name: "index-1".into(),
                file_size: 35,
                row_count: 1,
                dv_ranges: Some(vec![DeletionVectorMeta {
                    data_file_name: "data-1.parquet".into(),
                    offset: 1,
                    length: 26,
                    cardinality: Some(3),
                }]),
                external_path: None,
                global_index: None,
            },
        };
        assert_eq!(entries, vec![expected.clone(), expected]);
    }
}

#[test]
fn version_and_required_fields_are_enforced() {
    let bad_version = container(
        FOREIGN_INDEX_SCHEMA,
        &[foreign_record(2, false)],
        Codec::Null,
    );
    let err = read_index_manifest(&bad_version).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { reason, .. } if reason.contains("_VERSION 2")),
        "{err}"
    );

    let null_required = container(
        FOREIGN_INDEX_SCHEMA,
        &[foreign_record(1, true)],
        Codec::Null,
    );
    let err = read_index_manifest(&null_required).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { reason, .. } if reason.contains("_ROW_COUNT")),
        "{err}"
    );

    let missing = FOREIGN_INDEX_SCHEMA.replace(
        r#"{"name":"_BUCKET","type":"int"},"#,
        r#"{"name":"_BUCKETS","type":"int"},"#,
    );
    let err = read_index_manifest(&container(&missing, &[], Codec::Null)).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { reason, .. } if reason.contains("lacks required field _BUCKET")),
        "{err}"
    );

    let wrong_type = FOREIGN_INDEX_SCHEMA.replace(
        r#"{"name":"_BUCKET","type":"int"}"#,
        r#"{"name":"_BUCKET","type":"string"}"#,
    );
    assert!(matches!(
        read_index_manifest(&container(&wrong_type, &[], Codec::Null)),
        Err(Error::Corrupt { .. })
    ));

    // A manifest list must say 2, an index manifest 1: each rejects the other's records.
    let entry = read_index_manifest(&container(
        FOREIGN_INDEX_SCHEMA,
        &[foreign_record(1, false)],
        Codec::Null,
    ))
    .unwrap();
    let index_bytes = write_index_manifest(&entry, Codec::Null).unwrap();
    assert!(matches!(
        read_manifest_list(&index_bytes),
        Err(Error::Corrupt { .. })
    ));
    assert!(matches!(
        read_manifest(&index_bytes),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn hostile_schemas_are_rejected() {
    let cases = [
        "not json".to_owned(),
        r#""int""#.to_owned(),
        r#"{"type":"record","name":"r","fields":[{"name":"a","type":"Nope"}]}"#.to_owned(),
        r#"{"type":"record","name":"r","fields":[{"name":"a","type":[]}]}"#.to_owned(),
        r#"{"type":"record","name":"r","fields":[{"name":"a","type":{"type":"record","name":"r","fields":[]}}]}"#.to_owned(),
        format!("{}\"int\"{}", "[".repeat(100), "]".repeat(100)),
    ];
    for schema in cases {
        let bytes = container(&schema, &[], Codec::Null);
        assert!(
            matches!(read_manifest(&bytes), Err(Error::Corrupt { .. })),
            "{schema}"
        );
    }
}

#[test]
fn unsupported_codec_is_reported() {
    let good = write_manifest(&[], Codec::Null).unwrap();
    let patched: Vec<u8> = {
        let key = good
            .windows(10)
            .position(|w| w == b"avro.codec")
            .expect("codec key")
            + 10;
        assert_eq!(&good[key..key + 5], b"\x08null");
        let mut v = good[..key].to_vec();
        put_bytes(&mut v, b"xz");
        v.extend_from_slice(&good[key + 5..]);
        v
    };
    assert!(matches!(
        read_manifest(&patched),
        Err(Error::Unsupported(_))
    ));
}

/// The shape older Java releases wrote (root and nested records nullable, no pruning
/// fields): `["null", record]` at the root, `["null", record]` for `_PARTITION_STATS`.
const OLD_JAVA_LIST_SCHEMA: &str = r#"["null",{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[
  {"name":"_VERSION","type":"int"},{"name":"_FILE_NAME","type":"string"},{"name":"_FILE_SIZE","type":"long"},
  {"name":"_NUM_ADDED_FILES","type":"long"},{"name":"_NUM_DELETED_FILES","type":"long"},
  {"name":"_PARTITION_STATS","type":["null",{"type":"record","name":"record__PARTITION_STATS","fields":[
    {"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},
    {"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}],"default":null},
  {"name":"_SCHEMA_ID","type":"long"}]}]"#;

fn old_java_list_record(root_null: bool, stats_null: bool) -> Vec<u8> {
    let mut r = Vec::new();
    if root_null {
        put_long(&mut r, 0);
        return r;
    }
    put_long(&mut r, 1);
    put_long(&mut r, 2);
    put_bytes(&mut r, b"manifest-a-0");
    put_long(&mut r, 1234);
    put_long(&mut r, 3);
    put_long(&mut r, 1);
    if stats_null {
        put_long(&mut r, 0);
    } else {
        put_long(&mut r, 1);
        put_bytes(&mut r, &EMPTY_ROW);
        put_bytes(&mut r, &EMPTY_ROW);
        put_long(&mut r, 1); // null counts present
        put_long(&mut r, 2);
        put_long(&mut r, 0); // null item
        put_long(&mut r, 1);
        put_long(&mut r, 7);
        put_long(&mut r, 0);
    }
    put_long(&mut r, 5);
    r
}

#[test]
fn reads_old_java_nullable_root_and_nested_records() {
    let bytes = container(
        OLD_JAVA_LIST_SCHEMA,
        &[old_java_list_record(false, false)],
        Codec::Snappy,
    );
    let list = read_manifest_list(&bytes).expect("decode");
    let expected = ManifestFileMeta {
        file_name: "manifest-a-0".into(),
        file_size: 1234,
        num_added_files: 3,
        num_deleted_files: 1,
        partition_stats: SimpleStats {
            min_values: EMPTY_ROW.to_vec(),
            max_values: EMPTY_ROW.to_vec(),
            null_counts: Some(vec![None, Some(7)]),
        },
        schema_id: 5,
        min_bucket: None,
        max_bucket: None,
        min_level: None,
        max_level: None,
        min_row_id: None,
        max_row_id: None,
        total_buckets: None,
        extra_files: None,
    };
    assert_eq!(list, vec![expected]);
    for (root_null, stats_null) in [(true, false), (false, true)] {
        let bytes = container(
            OLD_JAVA_LIST_SCHEMA,
            &[old_java_list_record(root_null, stats_null)],
            Codec::Null,
        );
        assert!(
            matches!(read_manifest_list(&bytes), Err(Error::Corrupt { .. })),
            "{root_null} {stats_null}"
        );
    }
}
