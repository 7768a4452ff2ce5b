//! Tests of the sorted-run merge and the merge functions, with hand-built batches.

mod bench;
mod engines;
mod model;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, Int8Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{Field, Schema};
use futures::executor::block_on;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use tidelake_spec::options::Options;
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

use super::{merge_sorted_runs, MergeConfig};
use crate::error::Result;

pub(super) fn kind_code(kind: &str) -> i8 {
    match kind {
        "+I" => 0,
        "-U" => 1,
        "+U" => 2,
        "-D" => 3,
        other => panic!("bad kind {other}"),
    }
}

/// An input batch: sequence numbers, kinds and value columns (named v0, v1, ...).
pub(super) fn input(seqs: &[i64], kinds: &[&str], values: Vec<ArrayRef>) -> RecordBatch {
    let mut fields = vec![
        Field::new("_SEQUENCE_NUMBER", arrow_schema::DataType::Int64, false),
        Field::new("_VALUE_KIND", arrow_schema::DataType::Int8, false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(seqs.to_vec())),
        Arc::new(Int8Array::from(
            kinds.iter().map(|k| kind_code(k)).collect::<Vec<_>>(),
        )),
    ];
    for (i, v) in values.into_iter().enumerate() {
        fields.push(Field::new(format!("v{i}"), v.data_type().clone(), true));
        columns.push(v);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("valid test batch")
}

pub(super) fn run(batches: Vec<RecordBatch>) -> BoxStream<'static, Result<RecordBatch>> {
    futures::stream::iter(batches.into_iter().map(Ok)).boxed()
}

pub(super) fn merge(
    runs: Vec<Vec<RecordBatch>>,
    config: MergeConfig,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    let runs = runs.into_iter().map(run).collect();
    block_on(merge_sorted_runs(runs, Arc::new(config), batch_size).try_collect())
}

/// Output rows as "kind|v0|v1|...".
pub(super) fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let options = FormatOptions::default().with_null("null");
    let mut out = Vec::new();
    for b in batches {
        let formatters: Vec<_> = b
            .columns()
            .iter()
            .skip(1)
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).expect("formattable"))
            .collect();
        let kinds = b
            .column(0)
            .as_any()
            .downcast_ref::<Int8Array>()
            .expect("kinds");
        for r in 0..b.num_rows() {
            let mut s = ["+I", "-U", "+U", "-D"][kinds.value(r) as usize].to_string();
            for f in &formatters {
                s.push('|');
                s.push_str(&f.value(r).to_string());
            }
            out.push(s);
        }
    }
    out
}

pub(super) fn field(name: &str, kind: TypeKind, nullable: bool) -> DataField {
    DataField::new(0, name, DataType { nullable, kind })
}

pub(super) fn string() -> TypeKind {
    TypeKind::VarChar(MAX_LENGTH)
}

pub(super) fn config(
    fields: &[DataField],
    keys: &[&str],
    options: &[(&str, &str)],
) -> Result<MergeConfig> {
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let options: Options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    MergeConfig::from_options(fields, &keys, &options)
}

mod order {
    //! Key order, sequence order, batching and streaming behaviour (deduplicate engine).
    use super::*;
    use arrow_array::{Float64Array, Int32Array, StringArray};

    fn kv_fields() -> Vec<DataField> {
        vec![
            field("k", TypeKind::BigInt, false),
            field("v", string(), true),
        ]
    }

    fn kv(seqs: &[i64], kinds: &[&str], keys: &[i64], vals: &[Option<&str>]) -> RecordBatch {
        input(
            seqs,
            kinds,
            vec![
                Arc::new(Int64Array::from(keys.to_vec())),
                Arc::new(StringArray::from(vals.to_vec())),
            ],
        )
    }

    fn dedup() -> MergeConfig {
        config(&kv_fields(), &["k"], &[]).unwrap()
    }

    #[test]
    fn last_record_wins_and_deletes_drop_keys() {
        let r1 = vec![kv(
            &[0, 1, 2, 3],
            &["+I"; 4],
            &[1, 2, 3, 4],
            &[Some("a"), Some("b"), Some("c"), Some("d")],
        )];
        let r2 = vec![kv(
            &[4, 5, 6],
            &["+U", "-D", "+I"],
            &[2, 3, 5],
            &[Some("B"), Some("c"), Some("e")],
        )];
        let out = merge(vec![r1.clone(), r2.clone()], dedup(), 100).unwrap();
        assert_eq!(rows(&out), ["+I|1|a", "+U|2|B", "+I|4|d", "+I|5|e"]);
        // keep_retracts shows the delete
        let mut keep = dedup();
        keep.keep_retracts = true;
        let out = merge(vec![r1, r2], keep, 100).unwrap();
        assert_eq!(
            rows(&out),
            ["+I|1|a", "+U|2|B", "-D|3|c", "+I|4|d", "+I|5|e"]
        );
    }

    #[test]
    fn lone_retract_passes_through_like_java_reducer() {
        let r1 = vec![kv(&[0], &["-D"], &[1], &[Some("x")])];
        let r2 = vec![kv(&[1], &["+I"], &[2], &[Some("y")])];
        let mut keep = dedup();
        keep.keep_retracts = true;
        assert_eq!(
            rows(&merge(vec![r1.clone(), r2.clone()], keep, 10).unwrap()),
            ["-D|1|x", "+I|2|y"]
        );
        assert_eq!(rows(&merge(vec![r1, r2], dedup(), 10).unwrap()), ["+I|2|y"]);
    }

    #[test]
    fn sequence_number_orders_records_not_run_order() {
        // the older record sits in the later run
        let r1 = vec![kv(&[9], &["+I"], &[1], &[Some("new")])];
        let r2 = vec![kv(&[3], &["+I"], &[1], &[Some("old")])];
        let r3 = vec![kv(&[5], &["+I"], &[1], &[Some("mid")])];
        assert_eq!(
            rows(&merge(vec![r1, r2, r3], dedup(), 10).unwrap()),
            ["+I|1|new"]
        );
    }

    #[test]
    fn ignore_delete_skips_retracts() {
        let c = config(&kv_fields(), &["k"], &[("ignore-delete", "TRUE")]).unwrap();
        assert!(c.ignore_delete);
        let r1 = vec![kv(&[0, 1], &["+I", "+I"], &[1, 2], &[Some("a"), Some("b")])];
        let r2 = vec![kv(&[2, 3], &["-D", "-U"], &[1, 2], &[None, None])];
        assert_eq!(
            rows(&merge(vec![r1, r2], c.clone(), 10).unwrap()),
            ["+I|1|a", "+I|2|b"]
        );
        // only retracts for a key: nothing
        let r1 = vec![kv(&[0], &["-D"], &[1], &[None])];
        let r2 = vec![kv(&[1], &["-D"], &[1], &[None])];
        let mut keep = c;
        keep.keep_retracts = true;
        assert!(rows(&merge(vec![r1, r2], keep, 10).unwrap()).is_empty());
        // fallback key
        let c = config(
            &kv_fields(),
            &["k"],
            &[("deduplicate.ignore-delete", "true")],
        )
        .unwrap();
        assert!(c.ignore_delete);
    }

    #[test]
    fn empty_runs_and_batches_and_single_row_batches() {
        let r1 = vec![
            kv(&[], &[], &[], &[]),
            kv(&[0], &["+I"], &[1], &[Some("a")]),
            kv(&[], &[], &[], &[]),
            kv(&[1], &["+I"], &[3], &[Some("c")]),
        ];
        let r2 = vec![];
        let r3 = vec![
            kv(&[2], &["+I"], &[2], &[Some("b")]),
            kv(&[3], &["+I"], &[3], &[Some("C")]),
        ];
        let out = merge(vec![r1, r2, r3], dedup(), 1).unwrap();
        assert!(out.iter().all(|b| b.num_rows() == 1));
        assert_eq!(rows(&out), ["+I|1|a", "+I|2|b", "+I|3|C"]);
        assert!(merge(vec![], dedup(), 4).unwrap().is_empty());
        assert!(merge(vec![vec![], vec![]], dedup(), 4).unwrap().is_empty());
        assert!(merge(vec![vec![kv(&[], &[], &[], &[])]], dedup(), 4)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn batch_size_caps_output_and_one_run_is_sliced() {
        let keys: Vec<i64> = (0..10).collect();
        let vals: Vec<Option<&str>> = vec![Some("x"); 10];
        let seqs: Vec<i64> = (0..10).collect();
        let r = vec![kv(&seqs, &["+I"; 10], &keys, &vals)];
        let out = merge(vec![r], dedup(), 4).unwrap();
        assert_eq!(
            out.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        assert_eq!(rows(&out).len(), 10);
        assert!(merge(vec![vec![]], dedup(), 0).is_err());
        let r = vec![kv(&[0], &["+I"], &[0], &[None])];
        assert!(merge(vec![r], dedup(), 0).is_err());
    }

    #[test]
    fn interleaved_and_overlapping_runs() {
        let r1 = vec![kv(
            &[0, 1, 2],
            &["+I"; 3],
            &[1, 4, 7],
            &[Some("a1"), Some("a4"), Some("a7")],
        )];
        let r2 = vec![
            kv(&[3, 4], &["+I"; 2], &[2, 4], &[Some("b2"), Some("b4")]),
            kv(&[5], &["+I"], &[8], &[Some("b8")]),
        ];
        let r3 = vec![kv(
            &[6, 7, 8],
            &["+I"; 3],
            &[3, 4, 9],
            &[Some("c3"), Some("c4"), Some("c9")],
        )];
        for bs in [1, 2, 3, 100] {
            let out = merge(vec![r1.clone(), r2.clone(), r3.clone()], dedup(), bs).unwrap();
            assert_eq!(
                rows(&out),
                ["+I|1|a1", "+I|2|b2", "+I|3|c3", "+I|4|c4", "+I|7|a7", "+I|8|b8", "+I|9|c9"],
                "batch size {bs}"
            );
        }
    }

    #[test]
    fn stretches_of_every_length_from_one_run() {
        // Run 0 holds keys 0..4000 except every multiple of 7 below 200 and a few scattered
        // keys; run 1 holds exactly those plus key 3000 (shared, newer): run 0 wins stretches
        // of 6 rows, then of ~1000 rows, across input and output batch boundaries.
        let lone: Vec<i64> = (0..200)
            .step_by(7)
            .chain([1200, 2201, 2202, 3999])
            .collect();
        let keys0: Vec<i64> = (0..4000).filter(|k| !lone.contains(k)).collect();
        let mut keys1 = lone.clone();
        keys1.push(3000);
        keys1.sort();
        let batch = |keys: &[i64], first_seq: i64, tag: &str| {
            let seqs: Vec<i64> = (first_seq..).take(keys.len()).collect();
            let vals: Vec<Option<String>> =
                keys.iter().map(|k| Some(format!("{tag}{k}"))).collect();
            let vals: Vec<Option<&str>> = vals.iter().map(|v| v.as_deref()).collect();
            kv(&seqs, &vec!["+I"; keys.len()], keys, &vals)
        };
        let run0: Vec<RecordBatch> = keys0.chunks(1500).map(|c| batch(c, 0, "a")).collect();
        let run1 = vec![batch(&keys1, 10_000, "b")];
        for bs in [1, 5, 999, 8192] {
            let out = merge(vec![run0.clone(), run1.clone()], dedup(), bs).unwrap();
            let expected: Vec<String> = (0..4000)
                .map(|k| match lone.contains(&k) || k == 3000 {
                    true => format!("+I|{k}|b{k}"),
                    false => format!("+I|{k}|a{k}"),
                })
                .collect();
            assert_eq!(rows(&out), expected, "batch size {bs}");
            assert!(out.iter().all(|b| b.num_rows() <= bs));
        }
    }

    #[test]
    fn float_keys_follow_java_float_compare() {
        let fields = vec![
            field("k", TypeKind::Double, false),
            field("v", TypeKind::Int, true),
        ];
        let c = config(&fields, &["k"], &[]).unwrap();
        let other_nan = f64::from_bits(0xfff8_0000_0000_0001); // negative-signed NaN payload
        let f = |seqs: &[i64], keys: Vec<f64>, vals: Vec<i32>| {
            input(
                seqs,
                &vec!["+I"; seqs.len()],
                vec![
                    Arc::new(Float64Array::from(keys)),
                    Arc::new(Int32Array::from(vals)),
                ],
            )
        };
        let r1 = vec![f(
            &[0, 1, 2, 3],
            vec![f64::NEG_INFINITY, -0.0, 0.0, f64::NAN],
            vec![1, 2, 3, 4],
        )];
        let r2 = vec![f(&[4, 5, 6], vec![-0.0, 1.5, other_nan], vec![20, 50, 40])];
        let out = rows(&merge(vec![r1, r2], c, 10).unwrap());
        assert_eq!(
            out,
            [
                "+I|-inf|1",
                "+I|-0.0|20",
                "+I|0.0|3",
                "+I|1.5|50",
                "+I|NaN|40"
            ]
        );
    }

    #[test]
    fn string_keys_compare_bytewise() {
        let fields = vec![field("k", string(), false), field("v", TypeKind::Int, true)];
        let c = config(&fields, &["k"], &[]).unwrap();
        let s = |seqs: &[i64], keys: Vec<&str>| {
            let n = keys.len();
            input(
                seqs,
                &vec!["+I"; n],
                vec![
                    Arc::new(StringArray::from(keys)),
                    Arc::new(Int32Array::from_iter_values(seqs.iter().map(|s| *s as i32))),
                ],
            )
        };
        let r1 = vec![s(&[0, 1, 2, 3], vec!["", "a", "abc", "é"])];
        let r2 = vec![s(&[4, 5, 6], vec!["ab", "abc", "z"])];
        let r3 = vec![s(&[7, 8], vec!["a\u{0}", "\u{10FFFF}"])];
        let out = rows(&merge(vec![r1, r2, r3], c, 3).unwrap());
        assert_eq!(
            out,
            [
                "+I||0",
                "+I|a|1",
                "+I|a\u{0}|7",
                "+I|ab|4",
                "+I|abc|5",
                "+I|z|6",
                "+I|é|3",
                "+I|\u{10FFFF}|8"
            ]
        );
    }

    #[test]
    fn composite_and_nullable_keys_sort_nulls_first() {
        let fields = vec![
            field("a", TypeKind::Int, true),
            field("b", string(), true),
            field("v", TypeKind::Int, true),
        ];
        let c = config(&fields, &["a", "b"], &[]).unwrap();
        let mk = |seqs: &[i64], a: Vec<Option<i32>>, b: Vec<Option<&str>>| {
            let v: Vec<i32> = seqs.iter().map(|s| *s as i32).collect();
            input(
                seqs,
                &vec!["+I"; seqs.len()],
                vec![
                    Arc::new(Int32Array::from(a)),
                    Arc::new(StringArray::from(b)),
                    Arc::new(Int32Array::from(v)),
                ],
            )
        };
        let r1 = vec![mk(
            &[0, 1, 2],
            vec![None, Some(1), Some(1)],
            vec![Some("x"), None, Some("b")],
        )];
        let r2 = vec![mk(
            &[3, 4, 5],
            vec![None, None, Some(1)],
            vec![None, Some("x"), Some("a")],
        )];
        let out = rows(&merge(vec![r1, r2], c, 10).unwrap());
        assert_eq!(
            out,
            [
                "+I|null|null|3",
                "+I|null|x|4",
                "+I|1|null|1",
                "+I|1|a|5",
                "+I|1|b|2"
            ]
        );
    }

    #[test]
    fn user_sequence_field_orders_before_sequence_number() {
        // like fixture pk_sequence_field: greatest event time wins, ties go to the later write
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("ts", TypeKind::BigInt, true),
            field("v", string(), true),
        ];
        let mk = |seqs: &[i64], keys: Vec<i64>, ts: Vec<Option<i64>>, v: Vec<&str>| {
            input(
                seqs,
                &vec!["+I"; seqs.len()],
                vec![
                    Arc::new(Int64Array::from(keys)),
                    Arc::new(Int64Array::from(ts)),
                    Arc::new(StringArray::from(v)),
                ],
            )
        };
        let r1 = vec![mk(
            &[0, 1, 2, 3],
            vec![0, 1, 2, 3],
            vec![Some(5), Some(9), None, Some(1)],
            vec!["first", "late-big", "a-null", "x"],
        )];
        let r2 = vec![mk(
            &[4, 5, 6, 7],
            vec![0, 1, 2, 3],
            vec![Some(5), Some(3), Some(1), None],
            vec!["second", "newer-small", "b-one", "y-null"],
        )];
        let asc = config(&fields, &["k"], &[("sequence.field", "ts")]).unwrap();
        assert_eq!(asc.sequence_indices, [1]);
        let out = rows(&merge(vec![r1.clone(), r2.clone()], asc, 10).unwrap());
        assert_eq!(
            out,
            [
                "+I|0|5|second",
                "+I|1|9|late-big",
                "+I|2|1|b-one",
                "+I|3|1|x"
            ]
        );
        // descending: smallest wins; nulls still sort first (lose)
        let desc = config(
            &fields,
            &["k"],
            &[
                ("sequence.field", "ts"),
                ("sequence.field.sort-order", "DESCENDING"),
            ],
        )
        .unwrap();
        let out = rows(&merge(vec![r1, r2], desc, 10).unwrap());
        assert_eq!(
            out,
            [
                "+I|0|5|second",
                "+I|1|3|newer-small",
                "+I|2|1|b-one",
                "+I|3|1|x"
            ]
        );
    }

    #[test]
    fn sequence_field_splits_like_java_and_the_scan() {
        // Java CoreOptions.sequenceField: String.split(",") (no trailing empty names), trimmed;
        // the scan reads the same columns (Options::sequence_field), so the merge must agree.
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("ts", TypeKind::BigInt, true),
            field("v", string(), true),
        ];
        let c = config(&fields, &["k"], &[("sequence.field", " ts ,v,")]).unwrap();
        assert_eq!(c.sequence_indices, [1, 2]);
        let err = config(
            &fields,
            &["k"],
            &[("sequence.field.sort-order", "sideways")],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("sequence.field.sort-order"),
            "{err}"
        );
    }

    #[test]
    fn rejects_malformed_input() {
        let good = kv(&[0], &["+I"], &[1], &[Some("a")]);
        let mut bad_kind = good.clone();
        let mut cols = bad_kind.columns().to_vec();
        cols[1] = Arc::new(Int8Array::from(vec![7]));
        bad_kind = RecordBatch::try_new(bad_kind.schema(), cols).unwrap();
        assert!(merge(vec![vec![bad_kind]], dedup(), 10).is_err());
        let other = input(&[1], &["+I"], vec![Arc::new(Int64Array::from(vec![2]))]);
        assert!(merge(vec![vec![good.clone()], vec![other]], dedup(), 10).is_err());
        let mut out_of_range = dedup();
        out_of_range.key_indices = vec![5];
        assert!(merge(vec![vec![good]], out_of_range, 10).is_err());
        let e = config(&kv_fields(), &["missing"], &[]).unwrap_err();
        assert!(e.to_string().contains("missing"));
        assert!(config(&kv_fields(), &["k"], &[("merge-engine", "nope")]).is_err());
        assert!(config(&kv_fields(), &["k"], &[("ignore-delete", "yes")]).is_err());
    }

    #[test]
    fn errors_from_runs_propagate() {
        let failing: BoxStream<'static, Result<RecordBatch>> =
            futures::stream::iter(vec![Err(crate::error::Error::invalid("boom"))]).boxed();
        let out: Result<Vec<RecordBatch>> =
            block_on(merge_sorted_runs(vec![failing], Arc::new(dedup()), 10).try_collect());
        assert!(out.unwrap_err().to_string().contains("boom"));
    }
}
