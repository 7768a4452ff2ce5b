//! Merge-engine semantics: first-row, partial-update, aggregation (every function).

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder, StructBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Fields};
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

use super::{config, field, input, merge, rows, string};
use crate::error::Error;

fn i64s(v: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

fn opt_i64s(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

fn opt_i32s(v: &[Option<i32>]) -> ArrayRef {
    Arc::new(Int32Array::from(v.to_vec()))
}

fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

mod first_row {
    use super::*;

    fn fields() -> Vec<DataField> {
        vec![
            field("k", TypeKind::BigInt, false),
            field("v", string(), true),
        ]
    }

    #[test]
    fn first_record_wins() {
        let c = config(&fields(), &["k"], &[("merge-engine", "first-row")]).unwrap();
        let r1 = vec![input(
            &[5, 6],
            &["+I", "+I"],
            vec![i64s(&[1, 2]), strs(&[Some("late1"), Some("b")])],
        )];
        let r2 = vec![input(
            &[1],
            &["+U"],
            vec![i64s(&[1]), strs(&[Some("early1")])],
        )];
        assert_eq!(
            rows(&merge(vec![r1, r2], c, 10).unwrap()),
            ["+U|1|early1", "+I|2|b"]
        );
    }

    #[test]
    fn retract_is_an_error_unless_ignored() {
        let r1 = vec![input(&[0], &["+I"], vec![i64s(&[1]), strs(&[Some("a")])])];
        let r2 = vec![input(&[1], &["-D"], vec![i64s(&[1]), strs(&[Some("a")])])];
        let c = config(&fields(), &["k"], &[("merge-engine", "first-row")]).unwrap();
        let e = merge(vec![r1.clone(), r2.clone()], c, 10).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{e}");
        let c = config(
            &fields(),
            &["k"],
            &[
                ("merge-engine", "first-row"),
                ("first-row.ignore-delete", "true"),
            ],
        )
        .unwrap();
        assert_eq!(rows(&merge(vec![r1, r2], c, 10).unwrap()), ["+I|1|a"]);
    }
}

mod partial_update {
    use super::*;

    fn fields() -> Vec<DataField> {
        vec![
            field("k", TypeKind::BigInt, false),
            field("a", TypeKind::Int, true),
            field("b", string(), true),
        ]
    }

    fn rec(
        seq: i64,
        kind: &str,
        k: i64,
        a: Option<i32>,
        b: Option<&str>,
    ) -> arrow_array::RecordBatch {
        input(
            &[seq],
            &[kind],
            vec![i64s(&[k]), opt_i32s(&[a]), strs(&[b])],
        )
    }

    fn pu(options: &[(&str, &str)]) -> crate::lsm::merge::MergeConfig {
        let mut all = vec![("merge-engine", "partial-update")];
        all.extend_from_slice(options);
        config(&fields(), &["k"], &all).unwrap()
    }

    #[test]
    fn latest_non_null_per_column() {
        let runs = vec![
            vec![rec(0, "+I", 1, Some(1), None)],
            vec![rec(1, "+I", 1, None, Some("x"))],
            vec![rec(2, "+U", 1, Some(3), None)],
        ];
        assert_eq!(rows(&merge(runs, pu(&[]), 10).unwrap()), ["+I|1|3|x"]);
    }

    #[test]
    fn sequence_field_orders_partial_records() {
        // fixture pk_partial_update_seq, key id=0: (ver 10, a=1, b=x) then (ver 5, a=5)
        let fields = vec![
            field("id", TypeKind::BigInt, false),
            field("ver", TypeKind::BigInt, true),
            field("a", TypeKind::Int, true),
            field("b", string(), true),
        ];
        let c = config(
            &fields,
            &["id"],
            &[
                ("merge-engine", "partial-update"),
                ("sequence.field", "ver"),
            ],
        )
        .unwrap();
        let r1 = vec![input(
            &[1],
            &["+I"],
            vec![
                i64s(&[0]),
                opt_i64s(&[Some(10)]),
                opt_i32s(&[Some(1)]),
                strs(&[Some("x")]),
            ],
        )];
        let r2 = vec![input(
            &[2],
            &["+I"],
            vec![
                i64s(&[0]),
                opt_i64s(&[Some(5)]),
                opt_i32s(&[Some(5)]),
                strs(&[None]),
            ],
        )];
        assert_eq!(rows(&merge(vec![r1, r2], c, 10).unwrap()), ["+I|0|10|1|x"]);
    }

    #[test]
    fn retracts_need_configuration() {
        let runs = vec![
            vec![rec(0, "+I", 1, Some(1), Some("x"))],
            vec![rec(1, "-D", 1, None, None)],
        ];
        let e = merge(runs.clone(), pu(&[]), 10).unwrap_err();
        assert!(e.to_string().contains("ignore-delete"), "{e}");
        // ignore-delete
        assert_eq!(
            rows(&merge(runs.clone(), pu(&[("ignore-delete", "true")]), 10).unwrap()),
            ["+I|1|1|x"]
        );
        // remove-record-on-delete: the row disappears (kept as -D with the delete's values)
        let c = pu(&[("partial-update.remove-record-on-delete", "true")]);
        assert!(rows(&merge(runs.clone(), c.clone(), 10).unwrap()).is_empty());
        let mut keep = c.clone();
        keep.keep_retracts = true;
        assert_eq!(rows(&merge(runs, keep, 10).unwrap()), ["-D|1|null|null"]);
        // after a removing -D the row restarts from the -D's NOT NULL columns (Java initRow):
        // nothing of the deleted row, nor the -D's nullable values, comes back
        let runs = vec![
            vec![rec(0, "+I", 1, Some(1), Some("x"))],
            vec![rec(1, "-D", 1, Some(9), Some("x"))],
            vec![rec(2, "+I", 1, None, Some("y"))],
        ];
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|null|y"]);
    }

    #[test]
    fn first_retract_initialises_the_row() {
        // Java initRow on the first record even when ignore-delete then skips it: its NOT NULL
        // columns only (the key), so the skipped delete's nullable values stay out
        let runs = vec![
            vec![rec(0, "-D", 1, Some(5), Some("old"))],
            vec![rec(1, "+I", 1, None, Some("new"))],
        ];
        assert_eq!(
            rows(&merge(runs, pu(&[("ignore-delete", "true")]), 10).unwrap()),
            ["+I|1|null|new"]
        );
        // only retracts: result is -D
        let runs = vec![
            vec![rec(0, "-U", 1, Some(5), None)],
            vec![rec(1, "-D", 1, None, None)],
        ];
        let mut keep = pu(&[("ignore-delete", "true")]);
        keep.keep_retracts = true;
        assert_eq!(rows(&merge(runs, keep, 10).unwrap()), ["-D|1|null|null"]);
    }

    #[test]
    fn not_null_columns_must_not_be_null() {
        let mut fields = fields();
        fields[1].data_type.nullable = false;
        let c = config(&fields, &["k"], &[("merge-engine", "partial-update")]).unwrap();
        let runs = vec![
            vec![rec(0, "+I", 1, Some(1), None)],
            vec![rec(1, "+I", 1, None, Some("x"))],
        ];
        assert!(merge(runs, c, 10)
            .unwrap_err()
            .to_string()
            .contains("can not be null"));
    }

    fn group_fields() -> Vec<DataField> {
        vec![
            field("k", TypeKind::BigInt, false),
            field("g1", TypeKind::BigInt, true),
            field("a", TypeKind::Int, true),
            field("b", TypeKind::Int, true),
            field("g2", TypeKind::BigInt, true),
            field("c", TypeKind::Int, true),
        ]
    }

    #[allow(clippy::too_many_arguments)]
    fn grec(
        seq: i64,
        kind: &str,
        g1: Option<i64>,
        a: Option<i32>,
        b: Option<i32>,
        g2: Option<i64>,
        c: Option<i32>,
    ) -> arrow_array::RecordBatch {
        input(
            &[seq],
            &[kind],
            vec![
                i64s(&[1]),
                opt_i64s(&[g1]),
                opt_i32s(&[a]),
                opt_i32s(&[b]),
                opt_i64s(&[g2]),
                opt_i32s(&[c]),
            ],
        )
    }

    fn grouped(extra: &[(&str, &str)]) -> crate::lsm::merge::MergeConfig {
        let mut options = vec![
            ("merge-engine", "partial-update"),
            ("fields.g1.sequence-group", "a,b"),
            ("fields.g2.sequence-group", "c"),
        ];
        options.extend_from_slice(extra);
        config(&group_fields(), &["k"], &options).unwrap()
    }

    #[test]
    fn sequence_groups_update_independently() {
        let runs = vec![
            vec![grec(0, "+I", Some(2), Some(1), Some(1), Some(1), Some(10))],
            // group 1 older: ignored; group 2 newer: c overwritten even with null
            vec![grec(1, "+I", Some(1), Some(5), None, Some(2), None)],
            // group 1 all-null sequence: skipped entirely
            vec![grec(2, "+I", None, Some(7), Some(7), None, Some(99))],
        ];
        assert_eq!(
            rows(&merge(runs, grouped(&[]), 10).unwrap()),
            ["+I|1|2|1|1|2|null"]
        );
    }

    #[test]
    fn sequence_group_aggregators_and_reversed_input() {
        let c = grouped(&[
            ("fields.a.aggregate-function", "sum"),
            ("fields.b.aggregate-function", "first_value"),
        ]);
        let runs = vec![
            vec![grec(0, "+I", Some(1), Some(1), Some(10), None, None)],
            vec![grec(1, "+I", Some(3), Some(2), Some(30), None, None)],
            // older: a aggregated reversed (sum), b: first_value's aggReversed (Java quirk: once
            // initialised it returns the older input)
            vec![grec(2, "+I", Some(2), Some(4), Some(20), None, None)],
        ];
        assert_eq!(
            rows(&merge(runs, c, 10).unwrap()),
            ["+I|1|3|7|20|null|null"]
        );
    }

    #[test]
    fn sequence_group_retracts() {
        let runs = vec![
            vec![grec(0, "+I", Some(1), Some(1), Some(1), Some(1), Some(10))],
            // newer -U of group 1: its plain columns become null, its sequence field updates
            vec![grec(1, "-U", Some(2), Some(1), Some(1), None, None)],
        ];
        assert_eq!(
            rows(&merge(runs.clone(), grouped(&[]), 10).unwrap()),
            ["+I|1|2|null|null|1|10"]
        );
        // with an aggregator the group column retracts
        let c = grouped(&[("fields.a.aggregate-function", "sum")]);
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|2|0|null|1|10"]);
        // -D of a group listed in remove-record-on-sequence-group removes the row
        let runs = vec![
            vec![grec(0, "+I", Some(1), Some(1), Some(1), Some(1), Some(10))],
            vec![grec(1, "-D", Some(2), None, None, None, None)],
        ];
        let c = grouped(&[("partial-update.remove-record-on-sequence-group", "g1")]);
        assert!(rows(&merge(runs.clone(), c.clone(), 10).unwrap()).is_empty());
        let mut keep = c;
        keep.keep_retracts = true;
        assert_eq!(
            rows(&merge(runs, keep, 10).unwrap()),
            ["-D|1|null|null|null|null|null"] // the key only (Java initRow on a new row)
        );
    }

    #[test]
    fn option_validation() {
        let f = group_fields();
        let bad = |options: &[(&str, &str)]| {
            let mut all = vec![("merge-engine", "partial-update")];
            all.extend_from_slice(options);
            config(&f, &["k"], &all).unwrap_err()
        };
        assert!(bad(&[("fields.a.aggregate-function", "sum")])
            .to_string()
            .contains("sequence group"));
        assert!(bad(&[("fields.g1.sequence-group", "k")])
            .to_string()
            .contains("primary key"));
        assert!(bad(&[
            ("fields.g1.sequence-group", "a"),
            ("fields.g2.sequence-group", "a")
        ])
        .to_string()
        .contains("repeatedly"));
        assert!(bad(&[
            ("ignore-delete", "true"),
            ("partial-update.remove-record-on-delete", "true")
        ])
        .to_string()
        .contains("conflicting"));
        assert!(bad(&[
            ("fields.g1.sequence-group", "a"),
            ("partial-update.remove-record-on-delete", "true")
        ])
        .to_string()
        .contains("conflicting"));
        assert!(bad(&[
            ("fields.g1.sequence-group", "a"),
            ("partial-update.remove-record-on-sequence-group", "a")
        ])
        .to_string()
        .contains("sequence groups"));
        // last_non_null_value needs no group
        let mut ok = vec![
            ("merge-engine", "partial-update"),
            ("fields.default-aggregate-function", "last_non_null_value"),
        ];
        assert!(config(&f, &["k"], &ok).is_ok());
        ok.push(("fields.a.aggregate-function", "hll_sketch"));
        assert!(config(&f, &["k"], &ok).is_err());
    }
}

mod aggregation {
    use super::*;

    /// A `MAP<STRING, ROW<v INT, ts STRING>>` entry; `None` is a null row.
    type KeyTimeEntry<'a> = (&'a str, Option<(i32, Option<&'a str>)>);
    /// A `ROW<id INT, name STRING, ver INT>` element; `None` is a null element.
    type NestedRow<'a> = Option<(Option<i32>, Option<&'a str>, Option<i32>)>;

    fn agg_fields() -> Vec<DataField> {
        let f = |name: &str, kind: TypeKind| field(name, kind, true);
        vec![
            field("id", TypeKind::BigInt, false),
            f("s_total", TypeKind::BigInt),
            f("s_cnt", TypeKind::Int),
            f(
                "s_amt",
                TypeKind::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
            f("mx", TypeKind::Double),
            f("mn", TypeKind::Int),
            f("mx_ts", TypeKind::Timestamp(6)),
            f("last_nn", string()),
            f("last_v", string()),
            f("first_v", string()),
            f("first_nn", string()),
            f("tags", string()),
            f("any_f", TypeKind::Boolean),
            f("all_f", TypeKind::Boolean),
            f("prod", TypeKind::BigInt),
        ]
    }

    fn agg_options() -> Vec<(&'static str, &'static str)> {
        vec![
            ("merge-engine", "aggregation"),
            ("fields.s_total.aggregate-function", "sum"),
            ("fields.s_cnt.aggregate-function", "sum"),
            ("fields.s_amt.aggregate-function", "sum"),
            ("fields.mx.aggregate-function", "max"),
            ("fields.mn.aggregate-function", "min"),
            ("fields.mx_ts.aggregate-function", "max"),
            ("fields.last_v.aggregate-function", "last_value"),
            ("fields.first_v.aggregate-function", "first_value"),
            ("fields.first_nn.aggregate-function", "first_non_null_value"),
            ("fields.tags.aggregate-function", "listagg"),
            ("fields.any_f.aggregate-function", "bool_or"),
            ("fields.all_f.aggregate-function", "bool_and"),
            ("fields.prod.aggregate-function", "product"),
        ]
    }

    #[allow(clippy::type_complexity)]
    fn agg_rec(
        seq: i64,
        kind: &str,
        nums: (
            Option<i64>,
            Option<i32>,
            Option<i128>,
            Option<f64>,
            Option<i32>,
            Option<i64>,
        ),
        texts: [Option<&str>; 5],
        bools: (Option<bool>, Option<bool>),
        prod: Option<i64>,
    ) -> arrow_array::RecordBatch {
        let (s_total, s_cnt, s_amt, mx, mn, ts) = nums;
        input(
            &[seq],
            &[kind],
            vec![
                i64s(&[7]),
                opt_i64s(&[s_total]),
                opt_i32s(&[s_cnt]),
                Arc::new(
                    Decimal128Array::from(vec![s_amt])
                        .with_precision_and_scale(12, 2)
                        .unwrap(),
                ),
                Arc::new(Float64Array::from(vec![mx])),
                opt_i32s(&[mn]),
                Arc::new(TimestampMicrosecondArray::from(vec![ts])),
                strs(&[texts[0]]),
                strs(&[texts[1]]),
                strs(&[texts[2]]),
                strs(&[texts[3]]),
                strs(&[texts[4]]),
                Arc::new(BooleanArray::from(vec![bools.0])),
                Arc::new(BooleanArray::from(vec![bools.1])),
                opt_i64s(&[prod]),
            ],
        )
    }

    #[test]
    fn every_basic_function() {
        let c = config(&agg_fields(), &["id"], &agg_options()).unwrap();
        let runs = vec![
            vec![agg_rec(
                0,
                "+I",
                (
                    Some(10),
                    Some(1),
                    Some(150),
                    Some(1.5),
                    Some(4),
                    Some(1_000),
                ),
                [Some("n1"), Some("l1"), None, None, Some("a")],
                (Some(false), Some(true)),
                Some(2),
            )],
            vec![agg_rec(
                1,
                "+I",
                (None, Some(2), Some(-25), Some(f64::NAN), None, Some(3_000)),
                [None, None, Some("f2"), Some("fn2"), Some(" ")],
                (None, Some(true)),
                Some(3),
            )],
            vec![agg_rec(
                2,
                "+U",
                (Some(5), None, None, Some(-0.0), Some(-1), None),
                [Some("n3"), Some("l3"), Some("f3"), Some("fn3"), Some("b")],
                (Some(true), Some(false)),
                None,
            )],
        ];
        let out = rows(&merge(runs, c, 10).unwrap());
        assert_eq!(
            out,
            ["+I|7|15|3|1.25|NaN|-1|1970-01-01T00:00:00.003|n3|l3|null|fn2|a,b|true|false|6"]
        );
    }

    #[test]
    fn retraction_rules() {
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("s", TypeKind::Int, true),
            field("f", string(), true),
            field("l", string(), true),
        ];
        let rec = |seq: i64, kind: &str, s: Option<i32>, f: Option<&str>, l: Option<&str>| {
            vec![input(
                &[seq],
                &[kind],
                vec![i64s(&[1]), opt_i32s(&[s]), strs(&[f]), strs(&[l])],
            )]
        };
        let base = [
            ("merge-engine", "aggregation"),
            ("fields.s.aggregate-function", "sum"),
            ("fields.f.aggregate-function", "first_value"),
        ];
        let runs = vec![
            rec(0, "+I", Some(5), Some("a"), Some("x")),
            rec(1, "-U", Some(3), Some("a"), Some("x")),
        ];
        // first_value cannot retract
        let e = merge(runs.clone(), config(&fields, &["k"], &base).unwrap(), 10).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e}");
        // ignore-retract on it: sum subtracts, last_non_null_value (default) retracts to null
        let mut opts = base.to_vec();
        opts.push(("fields.f.ignore-retract", "true"));
        let c = config(&fields, &["k"], &opts).unwrap();
        assert_eq!(
            rows(&merge(runs, c.clone(), 10).unwrap()),
            ["+I|1|2|a|null"]
        );
        // retract first: sum negates
        let runs = vec![
            rec(0, "-D", Some(3), None, None),
            rec(1, "+I", Some(1), Some("b"), None),
        ];
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|-2|b|null"]);
        // remove-record-on-delete
        let mut opts = base.to_vec();
        opts.push(("aggregation.remove-record-on-delete", "true"));
        let c = config(&fields, &["k"], &opts).unwrap();
        let runs = vec![
            rec(0, "+I", Some(5), Some("a"), Some("x")),
            rec(1, "-D", Some(1), None, None),
        ];
        assert!(rows(&merge(runs.clone(), c.clone(), 10).unwrap()).is_empty());
        let mut runs2 = runs;
        runs2.push(rec(2, "+I", Some(4), Some("c"), None));
        // Java: aggregation restarts from the -D's NOT NULL columns (the key; sum starts over),
        // first_value stays initialised
        assert_eq!(rows(&merge(runs2, c, 10).unwrap()), ["+I|1|4|null|null"]);
        let mut conflicting = base.to_vec();
        conflicting.push(("aggregation.remove-record-on-delete", "true"));
        conflicting.push(("fields.s.ignore-retract", "true"));
        assert!(config(&fields, &["k"], &conflicting).is_err());
    }

    #[test]
    fn integer_overflow_fails_and_decimal_overflow_is_null() {
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("s", TypeKind::Int, true),
        ];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.s.aggregate-function", "sum"),
            ],
        )
        .unwrap();
        let runs = vec![
            vec![input(
                &[0],
                &["+I"],
                vec![i64s(&[1]), opt_i32s(&[Some(i32::MAX)])],
            )],
            vec![input(&[1], &["+I"], vec![i64s(&[1]), opt_i32s(&[Some(1)])])],
        ];
        assert!(merge(runs, c, 10)
            .unwrap_err()
            .to_string()
            .contains("int overflow"));
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field(
                "d",
                TypeKind::Decimal {
                    precision: 20,
                    scale: 0,
                },
                true,
            ),
        ];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.d.aggregate-function", "product"),
            ],
        )
        .unwrap();
        let dec = |v: i128| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(vec![Some(v)])
                    .with_precision_and_scale(20, 0)
                    .unwrap(),
            )
        };
        let runs = vec![
            vec![input(&[0], &["+I"], vec![i64s(&[1]), dec(10i128.pow(10))])],
            vec![input(&[1], &["+I"], vec![i64s(&[1]), dec(10i128.pow(10))])],
        ];
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|null"]);
    }

    #[test]
    fn listagg_delimiter_and_distinct() {
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("t", string(), true),
        ];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.t.aggregate-function", "listagg"),
                ("fields.t.list-agg-delimiter", ";"),
                ("fields.t.distinct", "true"),
            ],
        )
        .unwrap();
        let t =
            |seq: i64, v: &str| vec![input(&[seq], &["+I"], vec![i64s(&[1]), strs(&[Some(v)])])];
        let runs = vec![t(0, "a;b"), t(1, "b;c; ;a"), t(2, "c"), t(3, "d")];
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|a;b;c;d"]);
    }

    #[test]
    fn default_function_and_option_errors() {
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("s", string(), true),
            field("v", TypeKind::VarChar(10), true),
        ];
        let c = config(&fields, &["k"], &[("merge-engine", "aggregation")]).unwrap();
        let runs = vec![
            vec![input(
                &[0],
                &["+I"],
                vec![i64s(&[1]), strs(&[Some("x")]), strs(&[Some("p")])],
            )],
            vec![input(
                &[1],
                &["+I"],
                vec![i64s(&[1]), strs(&[None]), strs(&[Some("q")])],
            )],
        ];
        assert_eq!(rows(&merge(runs, c, 10).unwrap()), ["+I|1|x|q"]);
        let err = |opts: &[(&str, &str)]| {
            let mut all = vec![("merge-engine", "aggregation")];
            all.extend_from_slice(opts);
            config(&fields, &["k"], &all).unwrap_err()
        };
        assert!(
            matches!(err(&[("fields.s.aggregate-function", "median")]), Error::Unsupported(m) if m.contains("median"))
        );
        // Sketch aggregates take serialized sketches (VARBINARY) only; rbm64's Java
        // serialization has no Rust implementation.
        assert!(matches!(
            err(&[("fields.s.aggregate-function", "theta_sketch")]),
            Error::Invalid(m) if m.contains("VARBINARY")
        ));
        assert!(matches!(
            err(&[("fields.s.aggregate-function", "rbm64")]),
            Error::Unsupported(m) if m.contains("rbm64")
        ));
        assert!(matches!(
            err(&[("fields.s.aggregate-function", "sum")]),
            Error::Invalid(_)
        ));
        assert!(matches!(
            err(&[("fields.v.aggregate-function", "listagg")]),
            Error::Invalid(_)
        ));
        assert!(matches!(
            err(&[("fields.s.aggregate-function", "bool_or")]),
            Error::Invalid(_)
        ));
        assert!(matches!(
            err(&[("fields.default-aggregate-function", "collect")]),
            Error::Invalid(_)
        ));
        assert!(matches!(
            err(&[("fields.s.aggregate-function", "merge_map")]),
            Error::Invalid(_)
        ));
        // key columns are never aggregated, whatever the default
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.default-aggregate-function", "first_value"),
            ],
        )
        .unwrap();
        let crate::lsm::merge_fn::MergeEngineConfig::Aggregation(a) = &c.engine else {
            panic!()
        };
        assert_eq!(a.aggregates[0].function.name(), "primary-key");
        assert_eq!(a.aggregates[1].function.name(), "first_value");
    }

    fn list_of_ints(values: &[Option<Vec<Option<i32>>>]) -> ArrayRef {
        let mut b = ListBuilder::new(Int32Builder::new());
        for v in values {
            match v {
                None => b.append(false),
                Some(items) => {
                    for i in items {
                        b.values().append_option(*i);
                    }
                    b.append(true);
                }
            }
        }
        Arc::new(b.finish())
    }

    #[test]
    fn collect_with_and_without_distinct() {
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field(
                "c",
                TypeKind::Array(Box::new(DataType::new(TypeKind::Int))),
                true,
            ),
            field(
                "d",
                TypeKind::Array(Box::new(DataType::new(TypeKind::Int))),
                true,
            ),
        ];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.c.aggregate-function", "collect"),
                ("fields.d.aggregate-function", "collect"),
                ("fields.d.distinct", "true"),
            ],
        )
        .unwrap();
        let rec = |seq: i64, kind: &str, v: Option<Vec<Option<i32>>>| {
            vec![input(
                &[seq],
                &[kind],
                vec![
                    i64s(&[1]),
                    list_of_ints(std::slice::from_ref(&v)),
                    list_of_ints(&[v]),
                ],
            )]
        };
        let runs = vec![
            rec(0, "+I", Some(vec![Some(1), Some(2), Some(1)])),
            rec(1, "+I", None),
            rec(2, "+I", Some(vec![Some(2), None, Some(3)])),
        ];
        assert_eq!(
            rows(&merge(runs.clone(), c.clone(), 10).unwrap()),
            ["+I|1|[1, 2, 1, 2, null, 3]|[1, 2, null, 3]"]
        );
        let mut runs = runs;
        runs.push(rec(3, "-U", Some(vec![Some(1), Some(3)])));
        assert_eq!(
            rows(&merge(runs, c, 10).unwrap()),
            ["+I|1|[2, 1, 2, null]|[2, null]"]
        );
    }

    fn map_type_fields() -> (DataField, DataField) {
        let map = TypeKind::Map(
            Box::new(DataType::not_null(string())),
            Box::new(DataType::new(TypeKind::Int)),
        );
        let row = TypeKind::Row(vec![
            DataField::new(10, "v", DataType::new(TypeKind::Int)),
            DataField::new(11, "ts", DataType::new(string())),
        ]);
        let keytime = TypeKind::Map(
            Box::new(DataType::not_null(string())),
            Box::new(DataType::new(row)),
        );
        (field("m", map, true), field("kt", keytime, true))
    }

    fn string_int_map(entries: &[(&str, Option<i32>)]) -> ArrayRef {
        let mut b = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        for (k, v) in entries {
            b.keys().append_value(k);
            b.values().append_option(*v);
        }
        b.append(true).unwrap();
        Arc::new(b.finish())
    }

    fn keytime_map(entries: &[KeyTimeEntry<'_>]) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("v", ArrowType::Int32, true),
            Field::new("ts", ArrowType::Utf8, true),
        ]);
        let values = StructBuilder::from_fields(fields, 0);
        let mut b = MapBuilder::new(None, StringBuilder::new(), values);
        for (k, v) in entries {
            b.keys().append_value(k);
            let s = b.values();
            match v {
                Some((n, ts)) => {
                    s.field_builder::<Int32Builder>(0).unwrap().append_value(*n);
                    s.field_builder::<StringBuilder>(1)
                        .unwrap()
                        .append_option(*ts);
                    s.append(true);
                }
                None => {
                    s.field_builder::<Int32Builder>(0).unwrap().append_null();
                    s.field_builder::<StringBuilder>(1).unwrap().append_null();
                    s.append(false);
                }
            }
        }
        b.append(true).unwrap();
        Arc::new(b.finish())
    }

    #[test]
    fn merge_map_and_keytime() {
        let (m, kt) = map_type_fields();
        let fields = vec![field("k", TypeKind::BigInt, false), m, kt];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.m.aggregate-function", "merge_map"),
                ("fields.kt.aggregate-function", "merge_map_with_keytime"),
                ("fields.kt.ignore-retract", "true"),
            ],
        )
        .unwrap();
        let runs = vec![
            vec![input(
                &[0],
                &["+I"],
                vec![
                    i64s(&[1]),
                    string_int_map(&[("a", Some(1)), ("b", Some(2))]),
                    keytime_map(&[
                        ("x", Some((1, Some("2024-01-02")))),
                        ("y", Some((2, Some("2024-01-01")))),
                    ]),
                ],
            )],
            vec![input(
                &[1],
                &["+I"],
                vec![
                    i64s(&[1]),
                    string_int_map(&[("b", Some(20)), ("c", None)]),
                    keytime_map(&[
                        ("x", Some((10, Some("2024-01-01")))),
                        ("y", Some((20, Some("2024-01-03")))),
                        ("z", Some((3, None))),
                    ]),
                ],
            )],
        ];
        assert_eq!(
            rows(&merge(runs.clone(), c.clone(), 10).unwrap()),
            ["+I|1|{a: 1, b: 20, c: null}|{x: {v: 1, ts: 2024-01-02}, y: {v: 20, ts: 2024-01-03}}"]
        );
        let mut runs = runs;
        runs.push(vec![input(
            &[2],
            &["-U"],
            vec![
                i64s(&[1]),
                string_int_map(&[("a", Some(0))]),
                keytime_map(&[("x", None)]),
            ],
        )]);
        assert_eq!(
            rows(&merge(runs, c, 10).unwrap()),
            ["+I|1|{b: 20, c: null}|{x: {v: 1, ts: 2024-01-02}, y: {v: 20, ts: 2024-01-03}}"]
        );
    }

    fn nested_rows(rows: &[NestedRow<'_>]) -> ArrayRef {
        let fields = Fields::from(vec![
            Field::new("id", ArrowType::Int32, true),
            Field::new("name", ArrowType::Utf8, true),
            Field::new("ver", ArrowType::Int32, true),
        ]);
        let mut b = ListBuilder::new(StructBuilder::from_fields(fields, 0));
        for r in rows {
            let s = b.values();
            match r {
                Some((id, name, ver)) => {
                    s.field_builder::<Int32Builder>(0)
                        .unwrap()
                        .append_option(*id);
                    s.field_builder::<StringBuilder>(1)
                        .unwrap()
                        .append_option(*name);
                    s.field_builder::<Int32Builder>(2)
                        .unwrap()
                        .append_option(*ver);
                    s.append(true);
                }
                None => {
                    s.field_builder::<Int32Builder>(0).unwrap().append_null();
                    s.field_builder::<StringBuilder>(1).unwrap().append_null();
                    s.field_builder::<Int32Builder>(2).unwrap().append_null();
                    s.append(false);
                }
            }
        }
        b.append(true);
        Arc::new(b.finish())
    }

    #[test]
    fn nested_update_and_partial_update() {
        let row = DataType::new(TypeKind::Row(vec![
            DataField::new(10, "id", DataType::new(TypeKind::Int)),
            DataField::new(11, "name", DataType::new(string())),
            DataField::new(12, "ver", DataType::new(TypeKind::Int)),
        ]));
        let array = TypeKind::Array(Box::new(row));
        let fields = vec![
            field("k", TypeKind::BigInt, false),
            field("plain", array.clone(), true),
            field("keyed", array.clone(), true),
            field("partial", array, true),
        ];
        let c = config(
            &fields,
            &["k"],
            &[
                ("merge-engine", "aggregation"),
                ("fields.plain.aggregate-function", "nested_update"),
                ("fields.plain.count-limit", "3"),
                ("fields.keyed.aggregate-function", "nested_update"),
                ("fields.keyed.nested-key", "id"),
                ("fields.keyed.nested-sequence-field", "ver"),
                ("fields.keyed.nested-key-null-strategy", "ignore"),
                ("fields.partial.aggregate-function", "nested_partial_update"),
                ("fields.partial.nested-key", "id"),
                ("fields.partial.ignore-retract", "true"),
            ],
        )
        .unwrap();
        let rec = |seq: i64, kind: &str, r: &[NestedRow<'_>]| {
            vec![input(
                &[seq],
                &[kind],
                vec![i64s(&[1]), nested_rows(r), nested_rows(r), nested_rows(r)],
            )]
        };
        let runs = vec![
            rec(
                0,
                "+I",
                &[
                    Some((Some(1), Some("a"), Some(5))),
                    None,
                    Some((Some(2), Some("b"), Some(1))),
                ],
            ),
            rec(
                1,
                "+I",
                &[
                    Some((Some(1), None, Some(3))),
                    Some((None, Some("n"), Some(1))),
                    Some((Some(3), Some("c"), None)),
                ],
            ),
        ];
        assert_eq!(
            rows(&merge(runs.clone(), c.clone(), 10).unwrap()),
            [concat!(
                "+I|1",
                "|[{id: 1, name: a, ver: 5}, {id: 2, name: b, ver: 1}, {id: 1, name: null, ver: 3}]",
                "|[{id: 1, name: a, ver: 5}, {id: 2, name: b, ver: 1}, {id: 3, name: c, ver: null}]",
                "|[{id: 1, name: a, ver: 3}, {id: 2, name: b, ver: 1}, {id: null, name: n, ver: 1}, {id: 3, name: c, ver: null}]"
            )]
        );
        let mut runs = runs;
        runs.push(rec(2, "-U", &[Some((Some(2), Some("b"), Some(1)))]));
        assert_eq!(
            rows(&merge(runs, c, 10).unwrap()),
            [concat!(
                "+I|1",
                "|[{id: 1, name: a, ver: 5}, {id: 1, name: null, ver: 3}]",
                "|[{id: 1, name: a, ver: 5}, {id: 3, name: c, ver: null}]",
                "|[{id: 1, name: a, ver: 3}, {id: 2, name: b, ver: 1}, {id: null, name: n, ver: 1}, {id: 3, name: c, ver: null}]"
            )]
        );
        let _ = MAX_LENGTH;
    }
}
