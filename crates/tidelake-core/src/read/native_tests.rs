//! How planned splits divide into native and engine reads, on synthetic plans (no I/O).
//! `tests/test_native_read.py` checks on real tables that the units read the engine's rows.

use std::sync::Arc;

use tidelake_spec::binary_row::encode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::*;

const MIB: i64 = 1 << 20;

fn schema(key: TypeKind, primary_key: bool, options: &[(&str, &str)]) -> TableSchema {
    let fields = vec![
        DataField::new(0, "k", DataType::not_null(key)),
        DataField::new(1, "v", DataType::string()),
    ];
    let mut opts = Options::new();
    for (k, v) in options {
        opts.set(*k, *v);
    }
    let pk = if primary_key {
        vec!["k".into()]
    } else {
        vec![]
    };
    TableSchema::new(0, fields, vec![], pk, opts).unwrap()
}

/// A file of keys `min..=max` (INT keys) at `level` with sequence numbers `seq`.
fn file(name: &str, min: i32, max: i32, level: i32, seq: (i64, i64)) -> SplitFile {
    let t = [DataType::not_null(TypeKind::Int)];
    SplitFile {
        path: format!("bucket-0/{name}.parquet"),
        file_name: format!("{name}.parquet"),
        file_size: MIB,
        row_count: i64::from(max - min + 1),
        schema_id: 0,
        level,
        min_sequence_number: seq.0,
        max_sequence_number: seq.1,
        delete_row_count: Some(0),
        min_key: encode_framed(&[Datum::Int(min)], &t).unwrap(),
        max_key: encode_framed(&[Datum::Int(max)], &t).unwrap(),
        deletion: None,
        first_row_id: None,
        write_cols: None,
        index: None,
        holds_partition_columns: true,
    }
}

fn split(files: Vec<SplitFile>, raw: bool) -> Split {
    Split {
        snapshot_id: 1,
        partition: vec![],
        bucket: 0,
        total_buckets: 1,
        bucket_path: "bucket-0".into(),
        files,
        raw_convertible: raw,
        branch: None,
        before_files: None,
        key_index: vec![],
    }
}

/// The units of `splits` with joined deletes (every native route; see [`engine_deletes`]).
fn units(schema: TableSchema, splits: Vec<Split>) -> Vec<ReadUnit> {
    units_with(schema, splits, Deletes::Joined)
}

fn engine_deletes(schema: TableSchema, splits: Vec<Split>) -> Vec<ReadUnit> {
    units_with(schema, splits, Deletes::Engine)
}

fn units_with(schema: TableSchema, splits: Vec<Split>, deletes: Deletes) -> Vec<ReadUnit> {
    let plan = ScanPlan {
        snapshot: None,
        schema: Arc::new(schema),
        splits,
    };
    native_units(
        &plan,
        Packing {
            target_size: 128 * MIB as u64,
            open_file_cost: 4 * MIB as u64,
        },
        deletes,
    )
    .unwrap()
}

/// Each unit as (kind, its files' names); BaseDelta as "base" then "delta".
fn shape(units: &[ReadUnit]) -> Vec<(&'static str, Vec<String>)> {
    let names = |files: &[NativeFile]| {
        files
            .iter()
            .map(|f| f.file_name.replace(".parquet", ""))
            .collect()
    };
    let mut out = Vec::new();
    for u in units {
        match u {
            ReadUnit::Files { files } => out.push(("files", names(files))),
            ReadUnit::BaseDelta { base, delta, merge } => {
                assert_eq!(
                    merge.files.iter().map(|f| &f.file_name).collect::<Vec<_>>(),
                    delta.iter().map(|f| &f.file_name).collect::<Vec<_>>(),
                    "the merged split is the delta"
                );
                assert!(!merge.raw_convertible);
                out.push(("base", names(base)));
                out.push(("delta", names(delta)));
            }
            ReadUnit::Engine { split } => out.push((
                "engine",
                split
                    .files
                    .iter()
                    .map(|f| f.file_name.replace(".parquet", ""))
                    .collect(),
            )),
        }
    }
    out
}

fn owned(v: &[(&'static str, &[&str])]) -> Vec<(&'static str, Vec<String>)> {
    v.iter()
        .map(|(k, names)| (*k, names.iter().map(|n| n.to_string()).collect()))
        .collect()
}

#[test]
fn one_file_sections_of_a_deduplicate_bucket_are_native() {
    // a | b c overlap | d: a and d are sections of their own; b and c need the merge
    let files = vec![
        file("a", 0, 4, 0, (1, 1)),
        file("b", 5, 9, 0, (2, 2)),
        file("c", 7, 12, 0, (3, 3)),
        file("d", 20, 30, 0, (4, 4)),
    ];
    let got = units(schema(TypeKind::Int, true, &[]), vec![split(files, false)]);
    assert_eq!(
        shape(&got),
        owned(&[("files", &["a", "d"]), ("engine", &["b", "c"])])
    );
    // files that may hold retracts are read with them dropped
    let mut retracting = file("a", 0, 4, 0, (1, 1));
    retracting.delete_row_count = Some(3);
    let got = units(
        schema(TypeKind::Int, true, &[]),
        vec![split(vec![retracting], false)],
    );
    let ReadUnit::Files { files } = &got[0] else {
        panic!("{got:?}")
    };
    assert!(files[0].drop_retracts);
}

#[test]
fn other_merge_engines_leave_every_section_of_a_merged_bucket_to_the_engine() {
    let files = vec![file("a", 0, 4, 0, (1, 1)), file("b", 5, 9, 0, (2, 2))];
    for engine in ["partial-update", "aggregation"] {
        let s = schema(TypeKind::Int, true, &[("merge-engine", engine)]);
        let got = units(s, vec![split(files.clone(), false)]);
        assert_eq!(shape(&got), owned(&[("engine", &["a", "b"])]), "{engine}");
    }
    // with sequence.field one-file sections are still exact (one record per key)
    let seq = schema(TypeKind::Int, true, &[("sequence.field", "v")]);
    let got = units(seq, vec![split(files, false)]);
    assert_eq!(shape(&got), owned(&[("files", &["a", "b"])]));
}

#[test]
fn a_delta_newer_than_its_base_is_read_as_base_minus_delta_keys_plus_merged_delta() {
    let files = vec![
        file("b1", 0, 9, 5, (1, 10)),
        file("b2", 10, 19, 5, (11, 20)),
        file("b3", 30, 39, 5, (21, 30)),
        file("d1", 3, 12, 0, (31, 35)),
        file("d2", 5, 6, 1, (36, 40)),
    ];
    let got = units(
        schema(TypeKind::Int, true, &[]),
        vec![split(files.clone(), false)],
    );
    assert_eq!(
        shape(&got),
        owned(&[
            ("files", &["b3"]),
            ("base", &["b1", "b2"]),
            ("delta", &["d1", "d2"]),
        ])
    );
    // unless the foreign reader joins, the engine merges the base with the delta
    let got = engine_deletes(
        schema(TypeKind::Int, true, &[]),
        vec![split(files.clone(), false)],
    );
    assert_eq!(
        shape(&got),
        owned(&[("files", &["b3"]), ("engine", &["b1", "d1", "d2", "b2"])])
    );
    // a delta file older than a base file (a late writer): merged by the engine
    let mut late = files.clone();
    late[3].min_sequence_number = 20;
    let got = units(schema(TypeKind::Int, true, &[]), vec![split(late, false)]);
    assert_eq!(
        shape(&got),
        owned(&[("files", &["b3"]), ("engine", &["b1", "d1", "d2", "b2"])])
    );
    // sequence.field or ignore-delete: the newest record may not win
    for opt in [("sequence.field", "v"), ("ignore-delete", "true")] {
        let got = units(
            schema(TypeKind::Int, true, &[opt]),
            vec![split(files.clone(), false)],
        );
        assert_eq!(shape(&got)[1].0, "engine", "{opt:?}");
    }
    // overlapping files at the top level are no sorted run
    let mut overlap = files.clone();
    overlap[1] = file("b2", 9, 19, 5, (11, 20));
    let got = units(
        schema(TypeKind::Int, true, &[]),
        vec![split(overlap, false)],
    );
    assert_eq!(shape(&got)[1].0, "engine");
    // only level-0 files: no base
    let l0 = vec![file("x", 0, 9, 0, (1, 1)), file("y", 5, 12, 0, (2, 2))];
    let got = units(schema(TypeKind::Int, true, &[]), vec![split(l0, false)]);
    assert_eq!(shape(&got), owned(&[("engine", &["x", "y"])]));
}

#[test]
fn floating_point_keys_are_never_anti_joined() {
    let t = [DataType::not_null(TypeKind::Double)];
    let f = |name: &str, min: f64, max: f64, level: i32, seq: i64| SplitFile {
        min_key: encode_framed(&[Datum::Double(min)], &t).unwrap(),
        max_key: encode_framed(&[Datum::Double(max)], &t).unwrap(),
        ..file(name, 0, 0, level, (seq, seq))
    };
    let files = vec![f("b", 0.0, 9.0, 5, 1), f("d", 3.0, 4.0, 0, 2)];
    let got = units(
        schema(TypeKind::Double, true, &[]),
        vec![split(files, false)],
    );
    assert_eq!(shape(&got), owned(&[("engine", &["b", "d"])]));
}

#[test]
fn raw_splits_are_native_but_for_files_a_foreign_reader_cannot_read() {
    let mut old_schema = file("old", 0, 0, 0, (1, 1));
    old_schema.schema_id = 7;
    let mut orc = file("o", 0, 0, 0, (2, 2));
    orc.file_name = "o.orc".into();
    let mut dv = file("dv", 0, 0, 0, (3, 3));
    dv.deletion = Some(DeletionFileRef {
        path: "index/x".into(),
        offset: 1,
        length: 10,
        cardinality: Some(2),
    });
    let files = vec![file("a", 0, 0, 0, (0, 0)), old_schema, orc, dv];
    let got = units(
        schema(TypeKind::Int, false, &[]),
        vec![split(files.clone(), true)],
    );
    assert_eq!(
        shape(&got),
        owned(&[("files", &["a", "dv"]), ("engine", &["old", "o.orc"])])
    );
    let ReadUnit::Engine { split } = &got[1] else {
        panic!()
    };
    assert!(split.raw_convertible);
    let ReadUnit::Files { files: native } = &got[0] else {
        panic!()
    };
    assert!(native[1].deletion.is_some() && !native[1].drop_retracts);
    // unless the foreign reader joins, the engine applies the deletion vector
    let got = engine_deletes(
        schema(TypeKind::Int, false, &[]),
        vec![self::split(files, true)],
    );
    assert_eq!(
        shape(&got),
        owned(&[("files", &["a"]), ("engine", &["old", "o.orc", "dv"])])
    );
    // a fallback-branch or a diff split is the engine's alone
    let mut other_branch = self::split(vec![file("a", 0, 0, 0, (0, 0))], true);
    other_branch.branch = Some("b".into());
    let got = units(schema(TypeKind::Int, false, &[]), vec![other_branch]);
    assert_eq!(shape(&got), owned(&[("engine", &["a"])]));
}

#[test]
fn sections_and_splits_pack_to_the_target_size() {
    assert_eq!(
        pack_ordered(vec![3u64, 3, 3, 9, 1, 1], |w| *w, 6),
        vec![vec![3, 3], vec![3], vec![9], vec![1, 1]]
    );
    // every file weighs at least the open-file cost
    let small = |n: &str| SplitFile {
        file_size: 10,
        ..file(n, 0, 0, 0, (0, 0))
    };
    let splits: Vec<Split> = (0..10)
        .map(|i| split(vec![small(&i.to_string())], true))
        .collect();
    let packing = Packing {
        target_size: 100,
        open_file_cost: 30,
    };
    assert_eq!(
        pack_splits(&splits, packing),
        vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]
    );
    // Engine sections of one bucket are packed the same way
    let files: Vec<SplitFile> = (0..6)
        .flat_map(|i| {
            let k = i * 10;
            [
                file(&format!("x{i}"), k, k + 5, 0, (1, 1)),
                file(&format!("y{i}"), k + 2, k + 7, 0, (2, 2)),
            ]
        })
        .collect();
    let plan = ScanPlan {
        snapshot: None,
        schema: Arc::new(schema(
            TypeKind::Int,
            true,
            &[("merge-engine", "partial-update")],
        )),
        splits: vec![split(files, false)],
    };
    let packing = Packing {
        target_size: 4 * MIB as u64,
        open_file_cost: 0,
    };
    let got = native_units(&plan, packing, Deletes::Engine).unwrap();
    assert_eq!(got.len(), 3, "six 2 MiB sections in 4 MiB splits");
}
