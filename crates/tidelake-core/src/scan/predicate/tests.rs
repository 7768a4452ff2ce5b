use super::*;
use std::collections::HashMap;
use std::path::Path;

use arrow_schema::{Field, Schema};
use proptest::prelude::*;
use serde_json::json;
use tidelake_spec::type_json::field_from_json;
use tidelake_spec::types::MAX_LENGTH;

use crate::test_support::{fixtures, read_arrow_file};

fn t(kind: TypeKind) -> DataType {
    DataType::new(kind)
}

fn field(id: i32, name: &str, kind: TypeKind) -> DataField {
    DataField::new(id, name, t(kind))
}

fn batch_of(fields: &[DataField], columns: &[Vec<Datum>]) -> RecordBatch {
    let arrow_fields: Vec<Field> = fields
        .iter()
        .map(|f| {
            Field::new(
                &f.name,
                crate::datum_arrow::arrow_type_of(&f.data_type).unwrap(),
                true,
            )
        })
        .collect();
    let arrays = fields
        .iter()
        .zip(columns)
        .map(|(f, values)| datums_to_array(values, &f.data_type).unwrap())
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(arrow_fields)), arrays).unwrap()
}

/// Both evaluation paths, checked to agree.
fn evaluate_both(bound: &BoundPredicate, batch: &RecordBatch) -> Vec<bool> {
    let vectorised: Vec<bool> = bound
        .evaluate(batch)
        .unwrap()
        .iter()
        .map(|b| b == Some(true))
        .collect();
    let rows: Vec<bool> = bound.eval(batch, false).unwrap().iter().collect();
    assert_eq!(
        vectorised, rows,
        "kernel and row paths disagree for {bound:?}"
    );
    vectorised
}

// ---- fixtures --------------------------------------------------------------------------

fn latest_fields(table_dir: &Path) -> Vec<DataField> {
    let schema_dir = table_dir.join("schema");
    let latest = std::fs::read_dir(&schema_dir)
        .unwrap()
        .filter_map(|entry| {
            entry
                .unwrap()
                .file_name()
                .to_str()?
                .strip_prefix("schema-")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap();
    let text = std::fs::read(schema_dir.join(format!("schema-{latest}"))).unwrap();
    let schema: Value = serde_json::from_slice(&text).unwrap();
    schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| field_from_json(f).unwrap())
        .collect()
}

/// Rows of `columns` (by name) rendered as datums, sorted: a multiset to compare.
fn rendered_rows(batch: &RecordBatch, columns: &[&str], fields: &[DataField]) -> Vec<String> {
    let mut rows: Vec<String> = (0..batch.num_rows())
        .map(|row| {
            let cells: Vec<String> = columns
                .iter()
                .map(|name| {
                    let ty = &fields.iter().find(|f| f.name == *name).unwrap().data_type;
                    let column = batch.column_by_name(name).unwrap();
                    format!("{:?}", datum_at(column.as_ref(), row, ty).unwrap())
                })
                .collect();
            cells.join(" | ")
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn fixture_filters_bind_and_select_the_expected_rows() {
    let root = fixtures();
    let Ok(text) = std::fs::read(root.join("fixtures.json")) else {
        eprintln!("fixtures not found at {}; skipping", root.display());
        return;
    };
    let doc: Value = serde_json::from_slice(&text).unwrap();
    let mut checked = 0;
    for table in doc["tables"].as_array().unwrap() {
        let Some(cases) = table["expected"]["filtered"].as_array() else {
            continue;
        };
        let name = table["name"].as_str().unwrap();
        let fields = latest_fields(&root.join(table["path"].as_str().unwrap()));
        let latest =
            read_arrow_file(&root.join(table["expected"]["latest"]["file"].as_str().unwrap()));
        for case in cases {
            let predicate = Predicate::from_json(&case["filter"]).unwrap();
            let bound = predicate
                .bind(&fields)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(bound.referenced_fields(), predicate.referenced_fields());
            let mask = BooleanArray::from(evaluate_both(&bound, &latest));
            let selected = arrow_select::filter::filter_record_batch(&latest, &mask).unwrap();
            let expected = read_arrow_file(&root.join(case["file"].as_str().unwrap()));
            let projection: Vec<&str> = case["projection"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            assert_eq!(
                selected.num_rows() as u64,
                case["rows"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(
                rendered_rows(&selected, &projection, &fields),
                rendered_rows(&expected, &projection, &fields),
                "{name}: {}",
                case["name"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} fixture filters found");
}

// ---- parsing ---------------------------------------------------------------------------

#[test]
fn parses_every_op() {
    let parsed = Predicate::from_json(&json!({"op": "and", "args": [
        {"op": "ge", "field": "qty", "value": 50},
        {"op": "is_not_null", "field": "name"},
        {"op": "or", "args": [
            {"op": "in", "field": "a", "values": [1, null]},
            {"op": "not_in", "field": "a", "values": []},
            {"op": "between", "field": "b", "lower": "x", "upper": "y"},
            {"op": "startswith", "field": "name", "value": "ab"},
            {"op": "is_null", "field": "c"}
        ]}
    ]}))
    .unwrap();
    let expected = Predicate::And(vec![
        Predicate::Compare {
            field: "qty".into(),
            op: CompareOp::Ge,
            value: json!(50),
        },
        Predicate::IsNull {
            field: "name".into(),
            negated: true,
        },
        Predicate::Or(vec![
            Predicate::In {
                field: "a".into(),
                values: vec![json!(1), Value::Null],
                negated: false,
            },
            Predicate::In {
                field: "a".into(),
                values: vec![],
                negated: true,
            },
            Predicate::Between {
                field: "b".into(),
                lower: json!("x"),
                upper: json!("y"),
            },
            Predicate::StartsWith {
                field: "name".into(),
                prefix: json!("ab"),
            },
            Predicate::IsNull {
                field: "c".into(),
                negated: false,
            },
        ]),
    ]);
    assert_eq!(parsed, expected);
    assert_eq!(
        parsed.referenced_fields(),
        vec!["qty", "name", "a", "b", "c"]
    );
    for (name, op) in [
        ("eq", CompareOp::Eq),
        ("ne", CompareOp::Ne),
        ("lt", CompareOp::Lt),
        ("le", CompareOp::Le),
        ("gt", CompareOp::Gt),
    ] {
        let parsed = Predicate::from_json(&json!({"op": name, "field": "f", "value": 1})).unwrap();
        assert_eq!(
            parsed,
            Predicate::Compare {
                field: "f".into(),
                op,
                value: json!(1)
            }
        );
        assert_eq!(op.name(), name);
    }
}

#[test]
fn rejects_malformed_filters() {
    let err = |filter: Value| Predicate::from_json(&filter).unwrap_err().to_string();
    assert!(err(json!([])).contains("expected a JSON object"));
    assert!(err(json!({"field": "a"})).contains("missing string key 'op'"));
    assert!(err(json!({"op": "xor", "args": []})).contains("unknown op 'xor'"));
    assert!(
        err(json!({"op": "eq", "field": "a", "value": 1, "vaue": 2}))
            .contains("unexpected key 'vaue'")
    );
    assert!(err(json!({"op": "eq", "field": "a"})).contains("requires key 'value'"));
    assert!(err(json!({"op": "eq", "field": "", "value": 1})).contains("non-empty string"));
    assert!(err(json!({"op": "is_null", "field": 3})).contains("non-empty string"));
    assert!(err(json!({"op": "and", "args": {}})).contains("'args' must be a JSON array"));
    assert!(err(json!({"op": "in", "field": "a", "values": 1}))
        .contains("'values' must be a JSON array"));
    assert!(err(json!({"op": "or", "args": [{"op": "nope"}]})).contains("unknown op 'nope'"));
    assert!(
        err(json!({"op": "between", "field": "a", "lower": 1})).contains("requires key 'upper'")
    );
}

// ---- binding and literals -------------------------------------------------------------

fn bind_one(kind: TypeKind, value: Value) -> Result<Datum> {
    let fields = [field(0, "c", kind)];
    let bound = Predicate::Compare {
        field: "c".into(),
        op: CompareOp::Eq,
        value,
    }
    .bind(&fields)?;
    match bound {
        BoundPredicate::Leaf(BoundLeaf {
            test: LeafTest::Compare { value, .. },
            ..
        }) => Ok(value),
        other => panic!("unexpected {other:?}"),
    }
}

fn ts(millis: i64, nanos: i32) -> Datum {
    Datum::Timestamp { millis, nanos }
}

#[test]
fn converts_literals_of_every_type() {
    let ok = |kind: TypeKind, value: Value| bind_one(kind, value).unwrap();
    assert_eq!(ok(TypeKind::Boolean, json!(true)), Datum::Boolean(true));
    assert_eq!(ok(TypeKind::TinyInt, json!(-128)), Datum::TinyInt(-128));
    assert_eq!(ok(TypeKind::SmallInt, json!(32767)), Datum::SmallInt(32767));
    assert_eq!(ok(TypeKind::Int, json!(5.0)), Datum::Int(5));
    assert_eq!(
        ok(TypeKind::BigInt, json!(i64::MAX)),
        Datum::BigInt(i64::MAX)
    );
    assert_eq!(ok(TypeKind::BigInt, json!(-1e3)), Datum::BigInt(-1000));
    assert_eq!(ok(TypeKind::Float, json!(0.5)), Datum::Float(0.5));
    match ok(TypeKind::Float, json!("NaN")) {
        Datum::Float(v) => assert_eq!(v.to_bits(), NAN_F32.to_bits()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ok(TypeKind::Double, json!("-Infinity")),
        Datum::Double(f64::NEG_INFINITY)
    );
    assert_eq!(ok(TypeKind::Double, json!(0)), Datum::Double(0.0));
    let dec = |p, s| TypeKind::Decimal {
        precision: p,
        scale: s,
    };
    assert_eq!(ok(dec(10, 2), json!("12.340")), Datum::Decimal(1234));
    assert_eq!(ok(dec(10, 2), json!(12.34)), Datum::Decimal(1234));
    assert_eq!(ok(dec(10, 2), json!(-7)), Datum::Decimal(-700));
    assert_eq!(ok(dec(10, 2), json!("1e2")), Datum::Decimal(10_000));
    assert_eq!(ok(dec(10, 2), json!("+.5")), Datum::Decimal(50));
    assert_eq!(ok(dec(10, 2), json!("-0.00")), Datum::Decimal(0));
    assert_eq!(ok(dec(10, 2), json!("12340e-3")), Datum::Decimal(1234));
    assert_eq!(
        ok(dec(10, 2), json!("99999999.99")),
        Datum::Decimal(9_999_999_999)
    );
    let nines = "9".repeat(38);
    assert_eq!(
        ok(dec(38, 0), json!(nines)),
        Datum::Decimal(10i128.pow(38) - 1)
    );
    assert_eq!(
        ok(dec(38, 0), json!(format!("-{nines}"))),
        Datum::Decimal(1 - 10i128.pow(38))
    );
    assert_eq!(
        ok(dec(38, 38), json!("0.1")),
        Datum::Decimal(10i128.pow(37))
    );
    assert_eq!(ok(dec(5, 0), json!("0e999999")), Datum::Decimal(0));
    assert_eq!(
        ok(TypeKind::VarChar(MAX_LENGTH), json!("ä")),
        Datum::String("ä".into())
    );
    assert_eq!(
        ok(TypeKind::VarBinary(MAX_LENGTH), json!("00fF")),
        Datum::Bytes(vec![0, 255])
    );
    assert_eq!(
        ok(TypeKind::Binary(3), json!([1, 2, 255])),
        Datum::Bytes(vec![1, 2, 255])
    );
    assert_eq!(
        ok(TypeKind::VarBinary(MAX_LENGTH), json!("")),
        Datum::Bytes(vec![])
    );
    assert_eq!(ok(TypeKind::Date, json!("2024-05-14")), Datum::Date(19_857));
    assert_eq!(ok(TypeKind::Date, json!("1969-12-31")), Datum::Date(-1));
    assert_eq!(
        ok(TypeKind::Date, json!("0001-01-01")),
        Datum::Date(-719_162)
    );
    assert_eq!(ok(TypeKind::Date, json!(19_857)), Datum::Date(19_857));
    assert_eq!(
        ok(TypeKind::Time(3), json!("12:34:56.789")),
        Datum::Time(45_296_789)
    );
    assert_eq!(
        ok(TypeKind::Time(0), json!("12:34")),
        Datum::Time(45_240_000)
    );
    assert_eq!(
        ok(TypeKind::Time(3), json!("23:59:59.999000000")),
        Datum::Time(86_399_999)
    );
    assert_eq!(ok(TypeKind::Time(3), json!(1000)), Datum::Time(1000));
    let ts6 = TypeKind::Timestamp(6);
    assert_eq!(
        ok(ts6.clone(), json!("2024-01-01T00:00:00")),
        ts(1_704_067_200_000, 0)
    );
    assert_eq!(
        ok(ts6.clone(), json!("2024-01-01")),
        ts(1_704_067_200_000, 0)
    );
    assert_eq!(
        ok(ts6.clone(), json!("2024-01-01 00:00:00.123456789")),
        ts(1_704_067_200_123, 456_789)
    );
    assert_eq!(
        ok(ts6.clone(), json!("2024-01-01t00:00:00.5")),
        ts(1_704_067_200_500, 0)
    );
    assert_eq!(
        ok(ts6.clone(), json!("1969-12-31T23:59:59.999999999")),
        ts(-1, 999_999)
    );
    assert_eq!(ok(ts6.clone(), json!("1969-12-31T23:59")), ts(-60_000, 0));
    assert_eq!(ok(ts6, json!(-5)), ts(-5, 0));
    let ltz = TypeKind::LocalZonedTimestamp(3);
    assert_eq!(
        ok(ltz.clone(), json!("2024-01-01T00:00:00")),
        ts(1_704_067_200_000, 0)
    );
    assert_eq!(
        ok(ltz.clone(), json!("2024-01-01T00:00:00Z")),
        ts(1_704_067_200_000, 0)
    );
    assert_eq!(
        ok(ltz.clone(), json!("2024-01-01T02:00:00+02:00")),
        ts(1_704_067_200_000, 0)
    );
    assert_eq!(
        ok(ltz.clone(), json!("2023-12-31T22:30:00.000001-0130")),
        ts(1_704_067_200_000, 1_000)
    );
    assert_eq!(
        ok(ltz, json!("2024-01-01T05:00:00+05")),
        ts(1_704_067_200_000, 0)
    );
}

#[test]
fn rejects_bad_literals_naming_column_literal_and_type() {
    let err = |kind: TypeKind, value: Value| bind_one(kind, value).unwrap_err().to_string();
    assert_eq!(
        err(TypeKind::Int, json!("5")),
        "invalid literal \"5\" for column 'c' of type INT: expected an integer number"
    );
    assert!(err(TypeKind::Int, json!(5.5)).contains("expected an integer"));
    assert!(err(TypeKind::Int, json!(2_147_483_648i64)).contains("out of range"));
    assert!(err(TypeKind::TinyInt, json!(128)).contains("out of range"));
    assert!(err(TypeKind::BigInt, json!(9_223_372_036_854_775_808u64)).contains("out of range"));
    assert!(err(TypeKind::BigInt, json!(1e300)).contains("out of range"));
    assert!(err(TypeKind::Boolean, json!("true")).contains("true or false"));
    assert!(err(TypeKind::Float, json!(1e39)).contains("out of range"));
    assert!(err(TypeKind::Double, json!("1.5")).contains("NaN"));
    let dec = TypeKind::Decimal {
        precision: 10,
        scale: 2,
    };
    assert!(err(dec.clone(), json!("12.345")).contains("more than 2 fractional digits"));
    assert!(err(dec.clone(), json!(0.1 + 0.2)).contains("fractional digits"));
    assert!(err(dec.clone(), json!("100000000")).contains("out of range for DECIMAL(10, 2)"));
    for bad in ["", ".", "1.2.3", "abc", "1e", "--1", "1 "] {
        assert!(
            err(dec.clone(), json!(bad)).contains("expected a decimal"),
            "{bad}"
        );
    }
    let nines = "9".repeat(39);
    assert!(err(
        TypeKind::Decimal {
            precision: 38,
            scale: 0
        },
        json!(nines)
    )
    .contains("out of range"));
    assert!(err(TypeKind::VarChar(MAX_LENGTH), json!(5)).contains("a JSON string"));
    assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!("0g")).contains("hex"));
    assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!("abc")).contains("hex"));
    assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!([256])).contains("0..=255"));
    assert!(err(TypeKind::Date, json!("2024-02-30")).contains("not a calendar date"));
    assert!(err(TypeKind::Date, json!("2024-5-14")).contains("YYYY-MM-DD"));
    assert!(err(TypeKind::Time(3), json!("24:00:00")).contains("HH:MM"));
    assert!(err(TypeKind::Time(3), json!("12:00:00.0001")).contains("millisecond precision"));
    assert!(err(TypeKind::Time(3), json!("12:00:00.")).contains("HH:MM"));
    assert!(err(TypeKind::Time(3), json!(86_400_000)).contains("0..86400000"));
    assert!(err(TypeKind::Timestamp(6), json!("2024-01-01T00:00:00Z")).contains("no zone"));
    assert!(err(
        TypeKind::Timestamp(6),
        json!("2024-01-01T00:00:00.1234567890")
    )
    .contains("9 fractional"));
    assert!(err(TypeKind::Timestamp(6), json!("2024-01-01X00:00")).contains("timestamp"));
    assert!(err(
        TypeKind::LocalZonedTimestamp(6),
        json!("2024-01-01T00:00+25:00")
    )
    .contains("timestamp"));
    assert!(err(TypeKind::Timestamp(6), json!(true)).contains("epoch milliseconds"));
}

#[test]
fn bind_rejects_unknown_columns_and_bad_ops() {
    let fields = [
        field(0, "a", TypeKind::Int),
        field(1, "b", TypeKind::VarChar(MAX_LENGTH)),
        field(2, "c", TypeKind::Array(Box::new(t(TypeKind::Int)))),
    ];
    let bind = |filter: Value| Predicate::from_json(&filter).unwrap().bind(&fields);
    let err = |filter: Value| bind(filter).unwrap_err().to_string();
    assert_eq!(
        err(json!({"op": "eq", "field": "x", "value": 1})),
        "unknown column 'x' in filter; columns are a, b, c"
    );
    assert!(err(json!({"op": "eq", "field": "A", "value": 1})).contains("unknown column 'A'"));
    assert!(err(json!({"op": "startswith", "field": "a", "value": "1"}))
        .contains("needs a string column"));
    assert!(err(json!({"op": "startswith", "field": "b", "value": 1}))
        .contains("expected a JSON string"));
    assert!(err(json!({"op": "eq", "field": "c", "value": [1]}))
        .contains("only is_null and is_not_null"));
    assert!(err(json!({"op": "in", "field": "c", "values": []})).contains("ARRAY<INT>"));
    assert!(err(json!({"op": "eq", "field": "a", "value": null})).contains("use is_null"));
    assert!(
        err(json!({"op": "between", "field": "a", "lower": 1, "upper": null}))
            .contains("use is_null")
    );
    assert!(err(json!({"op": "in", "field": "a", "values": [1, "x"]})).contains("\"x\""));
    let bound = bind(json!({"op": "and", "args": [
        {"op": "is_null", "field": "c"},
        {"op": "in", "field": "a", "values": [1, null]},
        {"op": "is_not_null", "field": "a"}
    ]}))
    .unwrap();
    assert_eq!(bound.referenced_fields(), vec!["c", "a"]);
    match &bound {
        BoundPredicate::And(children) => match &children[1] {
            BoundPredicate::Leaf(leaf) => {
                assert_eq!(
                    leaf.column,
                    BoundColumn {
                        name: "a".into(),
                        id: 0,
                        data_type: t(TypeKind::Int)
                    }
                );
                assert_eq!(
                    leaf.test,
                    LeafTest::In {
                        values: vec![Datum::Int(1), Datum::Null],
                        negated: false
                    }
                );
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

// ---- evaluation ------------------------------------------------------------------------

fn sample_fields() -> Vec<DataField> {
    vec![
        field(0, "id", TypeKind::Int),
        field(1, "i", TypeKind::Int),
        field(2, "s", TypeKind::VarChar(MAX_LENGTH)),
        field(3, "d", TypeKind::Double),
        field(
            4,
            "dec",
            TypeKind::Decimal {
                precision: 10,
                scale: 2,
            },
        ),
        field(5, "ts", TypeKind::Timestamp(6)),
        field(6, "ltz", TypeKind::LocalZonedTimestamp(3)),
        field(7, "dt", TypeKind::Date),
        field(8, "tm", TypeKind::Time(3)),
        field(9, "b", TypeKind::Boolean),
        field(10, "bin", TypeKind::VarBinary(MAX_LENGTH)),
        field(11, "fb", TypeKind::Binary(2)),
        field(12, "r", TypeKind::Float),
        field(13, "arr", TypeKind::Array(Box::new(t(TypeKind::Int)))),
    ]
}

/// Six rows, written as filter literals; row 2 is null in every column but `id`.
fn sample_batch() -> RecordBatch {
    let data = json!({
        "id": [1, 2, 3, 4, 5, 6],
        "i": [1, null, 3, -4, 5, 0],
        "s": ["apple", null, "banana", "", "apricot", "ä"],
        "d": [1.5, null, "NaN", -0.0, 0.0, "-Infinity"],
        "dec": ["1.00", null, "-2.5", 0, 123.45, "0.99"],
        "ts": ["2024-01-01T00:00:00", null, "1969-12-31T23:59:59.999999", 0,
               "2024-01-01T00:00:00.000001", "1969-12-31"],
        "ltz": [1000, null, -1, 2000, "1970-01-01T00:00:00Z", "1970-01-01T01:00:01+01:00"],
        "dt": ["2024-05-14", null, "1969-12-31", 0, "2024-05-15", "2024-05-13"],
        "tm": [0, null, "12:34:56.789", "23:59:59.999", 1, "12:34:56.789"],
        "b": [true, null, false, true, false, true],
        "bin": ["00", null, "ff", "7f", "", "0001"],
        "fb": ["0001", null, "ff00", "7f00", "0000", [0, 1]],
        "r": [1.5, null, "NaN", -0.0, 0.0, "Infinity"],
        "arr": [[1], null, [], null, [null], []]
    });
    let fields = sample_fields();
    let mut columns: Vec<Vec<Datum>> = fields
        .iter()
        .map(|f| {
            let values = data[&f.name].as_array().unwrap();
            values
                .iter()
                .map(|v| match (&f.data_type.kind, v) {
                    (TypeKind::Array(_), Value::Array(items)) => Datum::Array(
                        items
                            .iter()
                            .map(|i| i.as_i64().map_or(Datum::Null, |i| Datum::Int(i as i32)))
                            .collect(),
                    ),
                    _ => literal(v, f).unwrap(),
                })
                .collect()
        })
        .collect();
    // A NaN with the sign bit set: Arrow orders it first unless normalised.
    columns[3][2] = Datum::Double(-f64::NAN);
    let base = batch_of(&fields, &columns);
    // An extra column the schema does not know about.
    let mut schema_fields: Vec<Field> = base
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    schema_fields.push(Field::new("zzz", ArrowType::Int32, true));
    let mut arrays = base.columns().to_vec();
    arrays.push(Arc::new(arrow_array::Int32Array::from(vec![9; 6])));
    RecordBatch::try_new(Arc::new(Schema::new(schema_fields)), arrays).unwrap()
}

/// Ids of the rows of `batch` matching `filter`, both paths checked.
fn ids(filter: Value, batch: &RecordBatch) -> Vec<i64> {
    let bound = Predicate::from_json(&filter)
        .unwrap()
        .bind(&sample_fields())
        .unwrap();
    let mask = evaluate_both(&bound, batch);
    (1..=6)
        .zip(mask)
        .filter(|(_, m)| *m)
        .map(|(id, _)| id)
        .collect()
}

/// (filter, ids of the sample rows it matches): every op on every type; strings in
/// unsigned byte order; NaN of either sign equal to NaN and above +inf; -0.0 < 0.0;
/// timestamps at sub-millisecond precision and before 1970; NULL rows never compared.
fn sample_cases() -> Vec<(Value, Vec<i64>)> {
    let cases: Value = serde_json::from_str(
        r#"[
        [{"op": "gt", "field": "i", "value": 0}, [1, 3, 5]],
        [{"op": "eq", "field": "i", "value": 0}, [6]],
        [{"op": "ne", "field": "i", "value": 3}, [1, 4, 5, 6]],
        [{"op": "lt", "field": "i", "value": 1}, [4, 6]],
        [{"op": "le", "field": "i", "value": 1}, [1, 4, 6]],
        [{"op": "ge", "field": "i", "value": 3}, [3, 5]],
        [{"op": "in", "field": "i", "values": [1, 5, 7]}, [1, 5]],
        [{"op": "in", "field": "i", "values": [1, null]}, [1]],
        [{"op": "in", "field": "i", "values": []}, []],
        [{"op": "not_in", "field": "i", "values": [1, 5]}, [3, 4, 6]],
        [{"op": "not_in", "field": "i", "values": []}, [1, 3, 4, 5, 6]],
        [{"op": "not_in", "field": "i", "values": [1, null]}, []],
        [{"op": "between", "field": "i", "lower": 0, "upper": 3}, [1, 3, 6]],
        [{"op": "between", "field": "i", "lower": 3, "upper": 0}, []],
        [{"op": "is_null", "field": "i"}, [2]],
        [{"op": "is_not_null", "field": "i"}, [1, 3, 4, 5, 6]],
        [{"op": "is_null", "field": "arr"}, [2, 4]],
        [{"op": "is_not_null", "field": "arr"}, [1, 3, 5, 6]],
        [{"op": "startswith", "field": "s", "value": "ap"}, [1, 5]],
        [{"op": "startswith", "field": "s", "value": ""}, [1, 3, 4, 5, 6]],
        [{"op": "gt", "field": "s", "value": "b"}, [3, 6]],
        [{"op": "lt", "field": "s", "value": "a"}, [4]],
        [{"op": "eq", "field": "s", "value": ""}, [4]],
        [{"op": "ne", "field": "s", "value": "apple"}, [3, 4, 5, 6]],
        [{"op": "between", "field": "s", "lower": "apple", "upper": "apricot"}, [1, 5]],
        [{"op": "eq", "field": "d", "value": "NaN"}, [3]],
        [{"op": "gt", "field": "d", "value": "Infinity"}, [3]],
        [{"op": "gt", "field": "d", "value": 1.0}, [1, 3]],
        [{"op": "eq", "field": "d", "value": 0.0}, [5]],
        [{"op": "eq", "field": "d", "value": -0.0}, [4]],
        [{"op": "lt", "field": "d", "value": 0}, [4, 6]],
        [{"op": "ne", "field": "d", "value": "NaN"}, [1, 4, 5, 6]],
        [{"op": "in", "field": "d", "values": ["NaN", 1.5]}, [1, 3]],
        [{"op": "ge", "field": "r", "value": "Infinity"}, [3, 6]],
        [{"op": "le", "field": "r", "value": 0.0}, [4, 5]],
        [{"op": "gt", "field": "dec", "value": "0.99"}, [1, 5]],
        [{"op": "eq", "field": "dec", "value": 1}, [1]],
        [{"op": "between", "field": "dec", "lower": -2.5, "upper": "0.99"}, [3, 4, 6]],
        [{"op": "gt", "field": "ts", "value": "2024-01-01T00:00:00"}, [5]],
        [{"op": "ge", "field": "ts", "value": "2024-01-01T00:00:00"}, [1, 5]],
        [{"op": "eq", "field": "ts", "value": "2024-01-01T00:00:00.000001"}, [5]],
        [{"op": "gt", "field": "ts", "value": "2024-01-01T00:00:00.0000005"}, [5]],
        [{"op": "lt", "field": "ts", "value": "1970-01-01T00:00:00"}, [3, 6]],
        [{"op": "eq", "field": "ts", "value": "1969-12-31T23:59:59.999999"}, [3]],
        [{"op": "eq", "field": "ts", "value": 0}, [4]],
        [{"op": "gt", "field": "ltz", "value": "1970-01-01T01:00:00.5+01:00"}, [1, 4, 6]],
        [{"op": "eq", "field": "ltz", "value": "1970-01-01T00:00:01Z"}, [1, 6]],
        [{"op": "ge", "field": "dt", "value": "2024-05-14"}, [1, 5]],
        [{"op": "lt", "field": "dt", "value": 0}, [3]],
        [{"op": "eq", "field": "tm", "value": "12:34:56.789"}, [3, 6]],
        [{"op": "gt", "field": "tm", "value": "00:00"}, [3, 4, 5, 6]],
        [{"op": "eq", "field": "b", "value": true}, [1, 4, 6]],
        [{"op": "ne", "field": "b", "value": true}, [3, 5]],
        [{"op": "gt", "field": "bin", "value": "7f"}, [3]],
        [{"op": "lt", "field": "bin", "value": [0, 1]}, [1, 5]],
        [{"op": "eq", "field": "fb", "value": "0001"}, [1, 6]],
        [{"op": "eq", "field": "fb", "value": "00"}, []],
        [{"op": "gt", "field": "fb", "value": "7f"}, [3, 4]],
        [{"op": "and", "args": []}, [1, 2, 3, 4, 5, 6]],
        [{"op": "or", "args": []}, []],
        [{"op": "or", "args": [
            {"op": "is_null", "field": "s"},
            {"op": "and", "args": [
                {"op": "gt", "field": "i", "value": 0},
                {"op": "startswith", "field": "s", "value": "b"}
            ]}
        ]}, [2, 3]]
    ]"#,
    )
    .unwrap();
    let cases = cases.as_array().unwrap();
    let ids = |v: &Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_i64().unwrap())
            .collect()
    };
    cases
        .iter()
        .map(|case| (case[0].clone(), ids(&case[1])))
        .collect()
}

#[test]
fn evaluates_every_op_and_type() {
    let batch = sample_batch();
    for (filter, expected) in sample_cases() {
        assert_eq!(ids(filter.clone(), &batch), expected, "{filter}");
    }
}

#[test]
fn evaluation_is_the_same_on_other_arrow_encodings() {
    let batch = sample_batch();
    let recast = |name: &str, to: ArrowType| -> (Field, ArrayRef) {
        let column = batch.column_by_name(name).unwrap();
        (
            Field::new(name, to.clone(), true),
            arrow_cast::cast(column, &to).unwrap(),
        )
    };
    let utc: Option<Arc<str>> = Some("+00:00".into());
    let variants: Vec<Vec<(Field, ArrayRef)>> = vec![
        vec![
            recast("s", ArrowType::LargeUtf8),
            recast("dec", ArrowType::Decimal128(12, 4)),
            recast(
                "ts",
                ArrowType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None),
            ),
            recast(
                "ltz",
                ArrowType::Timestamp(arrow_schema::TimeUnit::Millisecond, utc),
            ),
            recast("dt", ArrowType::Date64),
            recast("bin", ArrowType::LargeBinary),
            recast(
                "i",
                ArrowType::Dictionary(Box::new(ArrowType::Int8), Box::new(ArrowType::Int32)),
            ),
            recast("tm", ArrowType::Time64(arrow_schema::TimeUnit::Microsecond)),
        ],
        vec![
            recast("s", ArrowType::Utf8View),
            recast("dec", ArrowType::Decimal256(40, 2)),
            recast("bin", ArrowType::BinaryView),
            recast(
                "d",
                ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(ArrowType::Float64)),
            ),
            recast(
                // Zoned timestamps hold UTC instants: only the label changes.
                "ltz",
                ArrowType::Timestamp(arrow_schema::TimeUnit::Microsecond, Some("+05:30".into())),
            ),
        ],
        vec![recast(
            "s",
            ArrowType::Dictionary(Box::new(ArrowType::UInt16), Box::new(ArrowType::Utf8)),
        )],
    ];
    for variant in variants {
        let mut fields: Vec<Field> = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for (f, array) in batch.schema().fields().iter().zip(batch.columns()) {
            match variant.iter().find(|(v, _)| v.name() == f.name()) {
                Some((v, replaced)) => {
                    fields.push(v.clone());
                    arrays.push(replaced.clone());
                }
                None => {
                    fields.push(f.as_ref().clone());
                    arrays.push(array.clone());
                }
            }
        }
        let other = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
        for (filter, expected) in sample_cases() {
            assert_eq!(
                ids(filter.clone(), &other),
                expected,
                "{filter} on {:?}",
                other.schema()
            );
        }
    }
}

#[test]
fn evaluation_needs_the_referenced_columns() {
    let batch = sample_batch().project(&[0, 1]).unwrap();
    let bound = Predicate::from_json(&json!({"op": "eq", "field": "s", "value": "x"}))
        .unwrap()
        .bind(&sample_fields())
        .unwrap();
    let err = bound.evaluate(&batch).unwrap_err().to_string();
    assert_eq!(
        err,
        "filter column 's' is not in the batch; batch columns are id, i"
    );
    let wrong_type = batch_of(&[field(0, "s", TypeKind::Int)], &[vec![Datum::Int(1)]]);
    assert!(bound.evaluate(&wrong_type).is_err());
}

// ---- pruning ---------------------------------------------------------------------------

/// One column's (min, max, null count).
type ColumnStats = (Option<Datum>, Option<Datum>, Option<i64>);
type StatsRow<'a> = (&'a str, Option<Datum>, Option<Datum>, Option<i64>);

struct Stats {
    rows: i64,
    columns: HashMap<String, ColumnStats>,
}

impl StatsProvider for Stats {
    fn min(&self, field: &str) -> Option<Datum> {
        self.columns.get(field)?.0.clone()
    }
    fn max(&self, field: &str) -> Option<Datum> {
        self.columns.get(field)?.1.clone()
    }
    fn null_count(&self, field: &str) -> Option<i64> {
        self.columns.get(field)?.2
    }
    fn row_count(&self) -> i64 {
        self.rows
    }
}

/// Statistics from (column, min, max, null count) rows.
fn stats(rows: i64, columns: &[StatsRow]) -> Stats {
    Stats {
        rows,
        columns: columns
            .iter()
            .map(|(n, lo, hi, nulls)| (n.to_string(), (lo.clone(), hi.clone(), *nulls)))
            .collect(),
    }
}

fn may(filter: Value, stats: &Stats) -> bool {
    Predicate::from_json(&filter)
        .unwrap()
        .bind(&sample_fields())
        .unwrap()
        .may_match(stats)
}

#[test]
fn prunes_with_min_max_and_null_counts() {
    let i = |lo: i32, hi: i32, nulls: Option<i64>| {
        stats(
            10,
            &[("i", Some(Datum::Int(lo)), Some(Datum::Int(hi)), nulls)],
        )
    };
    let f = |op: &str, v: Value| json!({"op": op, "field": "i", "value": v});
    assert!(!may(f("gt", json!(10)), &i(1, 10, Some(0))));
    assert!(may(f("ge", json!(10)), &i(1, 10, Some(0))));
    assert!(!may(f("lt", json!(1)), &i(1, 10, Some(0))));
    assert!(may(f("le", json!(1)), &i(1, 10, Some(0))));
    assert!(!may(f("eq", json!(11)), &i(1, 10, Some(0))));
    assert!(may(f("eq", json!(5)), &i(1, 10, Some(0))));
    assert!(!may(f("ne", json!(5)), &i(5, 5, Some(0))));
    assert!(may(f("ne", json!(5)), &i(5, 6, Some(0))));
    assert!(!may(
        json!({"op": "in", "field": "i", "values": [0, 11, null]}),
        &i(1, 10, None)
    ));
    assert!(may(
        json!({"op": "in", "field": "i", "values": [0, 3]}),
        &i(1, 10, None)
    ));
    assert!(!may(
        json!({"op": "not_in", "field": "i", "values": [4]}),
        &i(4, 4, None)
    ));
    assert!(!may(
        json!({"op": "not_in", "field": "i", "values": [1, null]}),
        &i(1, 10, None)
    ));
    assert!(may(
        json!({"op": "not_in", "field": "i", "values": [4]}),
        &i(4, 5, None)
    ));
    assert!(!may(
        json!({"op": "between", "field": "i", "lower": 11, "upper": 20}),
        &i(1, 10, None)
    ));
    assert!(!may(
        json!({"op": "between", "field": "i", "lower": 5, "upper": 4}),
        &i(1, 10, None)
    ));
    assert!(may(
        json!({"op": "between", "field": "i", "lower": 10, "upper": 20}),
        &i(1, 10, None)
    ));
    // Nulls.
    let is_null = json!({"op": "is_null", "field": "i"});
    let not_null = json!({"op": "is_not_null", "field": "i"});
    assert!(!may(is_null.clone(), &i(1, 10, Some(0))));
    assert!(may(is_null.clone(), &i(1, 10, None)));
    assert!(may(not_null.clone(), &i(1, 10, None)));
    let all_null = stats(10, &[("i", Some(Datum::Null), None, Some(10))]);
    assert!(may(is_null.clone(), &all_null));
    assert!(!may(not_null, &all_null));
    assert!(!may(f("ne", json!(1)), &all_null));
    assert!(!may(is_null, &stats(0, &[])));
    // Unknown or incomparable statistics never prune.
    assert!(may(f("gt", json!(10)), &stats(10, &[])));
    assert!(may(
        f("gt", json!(10)),
        &stats(
            10,
            &[(
                "i",
                Some(Datum::String("z".into())),
                Some(Datum::Date(0)),
                None
            )]
        )
    ));
    assert!(!may(
        f("gt", json!(10)),
        &stats(10, &[("i", None, Some(Datum::BigInt(10)), None)])
    ));
    // Compound.
    let both = json!({"op": "and", "args": [f("gt", json!(0)), f("lt", json!(0))]});
    assert!(!may(both, &i(1, 10, Some(0))));
    let either = json!({"op": "or", "args": [f("gt", json!(10)), f("lt", json!(2))]});
    assert!(may(either, &i(1, 10, Some(0))));
}

#[test]
fn prunes_startswith_with_string_bounds() {
    let s = |lo: &str, hi: &str| {
        stats(
            5,
            &[(
                "s",
                Some(Datum::String(lo.into())),
                Some(Datum::String(hi.into())),
                Some(0),
            )],
        )
    };
    let starts = |p: &str| json!({"op": "startswith", "field": "s", "value": p});
    assert!(may(starts("ap"), &s("apple", "apricot")));
    assert!(may(starts("ap"), &s("a", "b")));
    assert!(may(starts("ap"), &s("apz", "b")));
    assert!(!may(starts("ap"), &s("aq", "b")));
    assert!(!may(starts("ap"), &s("a", "ao")));
    assert!(may(starts("ap"), &s("a", "ap")));
    assert!(!may(starts("b"), &s("a", "az")));
    assert!(may(starts(""), &s("x", "y")));
}

#[test]
fn float_pruning_allows_for_hidden_nan_and_signed_zero() {
    let d = |lo: f64, hi: f64| {
        stats(
            5,
            &[(
                "d",
                Some(Datum::Double(lo)),
                Some(Datum::Double(hi)),
                Some(0),
            )],
        )
    };
    let f = |op: &str, v: Value| json!({"op": op, "field": "d", "value": v});
    // A NaN row (above +inf) may hide from Parquet/Arrow statistics.
    assert!(may(f("gt", json!(10.0)), &d(1.0, 5.0)));
    assert!(may(f("ne", json!(1.0)), &d(1.0, 1.0)));
    assert!(may(f("eq", json!("NaN")), &d(1.0, 5.0)));
    assert!(!may(f("lt", json!(1.0)), &d(1.0, 5.0)));
    assert!(!may(f("eq", json!(6.0)), &d(1.0, 5.0)));
    assert!(!may(
        json!({"op": "between", "field": "d", "lower": 6.0, "upper": 7.0}),
        &d(1.0, 5.0)
    ));
    // 0.0 bounds may stand for -0.0.
    assert!(may(f("lt", json!(0.0)), &d(0.0, 1.0)));
    assert!(may(f("gt", json!(-0.0)), &d(-1.0, -0.0)));
    assert!(!may(f("lt", json!(-0.0)), &d(0.0, 1.0)));
    let r = stats(
        5,
        &[(
            "r",
            Some(Datum::Float(1.0)),
            Some(Datum::Float(2.0)),
            Some(0),
        )],
    );
    assert!(may(json!({"op": "gt", "field": "r", "value": 3}), &r));
    assert!(!may(json!({"op": "lt", "field": "r", "value": 1}), &r));
}

// ---- properties: pruning is conservative, both evaluation paths agree ----------------

fn prop_fields() -> Vec<DataField> {
    vec![
        field(0, "i", TypeKind::Int),
        field(1, "l", TypeKind::BigInt),
        field(2, "f", TypeKind::Double),
        field(3, "r", TypeKind::Float),
        field(4, "s", TypeKind::VarChar(MAX_LENGTH)),
        field(
            5,
            "dec",
            TypeKind::Decimal {
                precision: 6,
                scale: 2,
            },
        ),
        field(6, "ts", TypeKind::Timestamp(6)),
        field(7, "dt", TypeKind::Date),
        field(8, "b", TypeKind::Boolean),
        field(9, "bin", TypeKind::VarBinary(MAX_LENGTH)),
    ]
}

/// Values from small domains (so that literals hit data); `literal` adds timestamps
/// that TIMESTAMP(6) cannot hold, exercising the row-by-row path.
fn value(kind: &TypeKind, literal: bool) -> BoxedStrategy<Datum> {
    use prop::sample::select;
    match kind {
        TypeKind::Int => (-3i32..=3).prop_map(Datum::Int).boxed(),
        TypeKind::BigInt => (-3i64..=3).prop_map(Datum::BigInt).boxed(),
        TypeKind::Double => select(vec![
            -1.5,
            -0.0,
            0.0,
            1.0,
            2.5,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ])
        .prop_map(move |v| Datum::Double(if literal && v.is_nan() { NAN_F64 } else { v }))
        .boxed(),
        TypeKind::Float => select(vec![
            -1.5f32,
            -0.0,
            0.0,
            1.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
        ])
        .prop_map(move |v| Datum::Float(if literal && v.is_nan() { NAN_F32 } else { v }))
        .boxed(),
        TypeKind::VarChar(_) => select(vec!["", "a", "ab", "abc", "b", "ä", "ba", "\u{7f}"])
            .prop_map(|s| Datum::String(s.to_string()))
            .boxed(),
        TypeKind::Decimal { .. } => (-3i128..=3).prop_map(|v| Datum::Decimal(v * 50)).boxed(),
        TypeKind::Timestamp(_) => {
            let nanos = if literal {
                vec![0, 1, 999_000, 999_999]
            } else {
                vec![0, 999_000, 500_000]
            };
            (-2i64..=2, select(nanos))
                .prop_map(|(millis, nanos)| ts(millis, nanos))
                .boxed()
        }
        TypeKind::Date => (-2i32..=2).prop_map(Datum::Date).boxed(),
        TypeKind::Boolean => any::<bool>().prop_map(Datum::Boolean).boxed(),
        _ => select(vec![
            vec![],
            vec![0u8],
            vec![0x7f],
            vec![0x80],
            vec![0x80, 0],
        ])
        .prop_map(Datum::Bytes)
        .boxed(),
    }
}

fn nullable(values: BoxedStrategy<Datum>) -> BoxedStrategy<Datum> {
    prop_oneof![1 => Just(Datum::Null), 4 => values].boxed()
}

fn leaf() -> BoxedStrategy<BoundPredicate> {
    let fields = prop_fields();
    (0..fields.len())
        .prop_flat_map(move |index| {
            let field = fields[index].clone();
            let lit = value(&field.data_type.kind, true);
            let ops = prop::sample::select(vec![
                CompareOp::Eq,
                CompareOp::Ne,
                CompareOp::Lt,
                CompareOp::Le,
                CompareOp::Gt,
                CompareOp::Ge,
            ]);
            let mut tests: Vec<BoxedStrategy<LeafTest>> = vec![
                (ops, lit.clone())
                    .prop_map(|(op, value)| LeafTest::Compare { op, value })
                    .boxed(),
                (
                    prop::collection::vec(nullable(lit.clone()), 0..4),
                    any::<bool>(),
                )
                    .prop_map(|(values, negated)| LeafTest::In { values, negated })
                    .boxed(),
                any::<bool>()
                    .prop_map(|negated| LeafTest::IsNull { negated })
                    .boxed(),
                (lit.clone(), lit)
                    .prop_map(|(lower, upper)| LeafTest::Between { lower, upper })
                    .boxed(),
            ];
            if matches!(field.data_type.kind, TypeKind::VarChar(_)) {
                let prefixes = prop::sample::select(vec!["", "a", "ab", "b", "ä", "c"]);
                tests.push(
                    prefixes
                        .prop_map(|p| LeafTest::StartsWith {
                            prefix: p.to_string(),
                        })
                        .boxed(),
                );
            }
            let column = BoundColumn {
                name: field.name.clone(),
                id: field.id,
                data_type: field.data_type.clone(),
            };
            proptest::strategy::Union::new(tests).prop_map(move |test| {
                BoundPredicate::Leaf(BoundLeaf {
                    column: column.clone(),
                    test,
                })
            })
        })
        .boxed()
}

fn predicate() -> impl Strategy<Value = BoundPredicate> {
    leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(BoundPredicate::And),
            prop::collection::vec(inner, 0..3).prop_map(BoundPredicate::Or),
        ]
    })
}

fn columns() -> impl Strategy<Value = Vec<Vec<Datum>>> {
    (0usize..8).prop_flat_map(|rows| {
        prop_fields()
            .iter()
            .map(|f| prop::collection::vec(nullable(value(&f.data_type.kind, false)), rows))
            .collect::<Vec<_>>()
    })
}

/// Exact statistics of `columns`; with `skip_nan`, min/max ignore NaN as Parquet does.
fn stats_of(columns: &[Vec<Datum>], skip_nan: bool) -> Stats {
    let rows = columns.first().map_or(0, Vec::len) as i64;
    let is_nan = |d: &Datum| {
        matches!(d, Datum::Double(v) if v.is_nan()) || matches!(d, Datum::Float(v) if v.is_nan())
    };
    let columns = prop_fields()
        .iter()
        .zip(columns)
        .map(|(f, values)| {
            let present: Vec<&Datum> = values
                .iter()
                .filter(|d| !(d.is_null() || (skip_nan && is_nan(d))))
                .collect();
            let pick = |want: Ordering| {
                present
                    .iter()
                    .copied()
                    .reduce(|a, b| {
                        if compare_datums(b, a) == Some(want) {
                            b
                        } else {
                            a
                        }
                    })
                    .cloned()
            };
            let nulls = values.iter().filter(|d| d.is_null()).count() as i64;
            (
                f.name.clone(),
                (pick(Ordering::Less), pick(Ordering::Greater), Some(nulls)),
            )
        })
        .collect();
    Stats { rows, columns }
}

fn has_float_leaf(p: &BoundPredicate) -> bool {
    match p {
        BoundPredicate::And(c) | BoundPredicate::Or(c) => c.iter().any(has_float_leaf),
        BoundPredicate::Leaf(leaf) => matches!(
            leaf.column.data_type.kind,
            TypeKind::Float | TypeKind::Double
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn pruning_never_drops_a_matching_row(columns in columns(), predicate in predicate()) {
        let batch = batch_of(&prop_fields(), &columns);
        let matches = evaluate_both(&predicate, &batch);
        if matches.iter().any(|m| *m) {
            prop_assert!(predicate.may_match(&stats_of(&columns, false)), "exact stats pruned a match");
            prop_assert!(predicate.may_match(&stats_of(&columns, true)), "NaN-free stats pruned a match");
        }
        // Single rows (exact partition values): pruning is exact except for float columns.
        for (row, matched) in matches.iter().enumerate() {
            let single: Vec<Vec<Datum>> = columns.iter().map(|c| vec![c[row].clone()]).collect();
            let may = predicate.may_match(&stats_of(&single, false));
            if *matched {
                prop_assert!(may, "row {row} matches but was pruned");
            } else if !has_float_leaf(&predicate) {
                prop_assert!(!may, "row {row} cannot match but was kept");
            }
        }
    }
}

#[test]
fn restricting_to_some_columns_keeps_every_match() {
    let fields = [field(0, "k", TypeKind::Int), field(1, "v", TypeKind::Int)];
    let bind = |filter: Value| {
        Predicate::from_json(&filter)
            .unwrap()
            .bind(&fields)
            .unwrap()
    };
    let on_k = |filter: Value| bind(filter).restricted(&|id| id == 0);
    let k_eq = json!({"op": "eq", "field": "k", "value": 1});
    let v_gt = json!({"op": "gt", "field": "v", "value": 5});
    assert_eq!(on_k(k_eq.clone()), Some(bind(k_eq.clone())));
    assert_eq!(on_k(v_gt.clone()), None);
    // and: the key part stays; or: a branch without the key leaves nothing
    assert_eq!(
        on_k(json!({"op": "and", "args": [k_eq.clone(), v_gt.clone()]})),
        Some(BoundPredicate::And(vec![bind(k_eq.clone())]))
    );
    assert_eq!(
        on_k(json!({"op": "or", "args": [k_eq.clone(), v_gt.clone()]})),
        None
    );
    let k_in = json!({"op": "in", "field": "k", "values": [2, 3]});
    assert_eq!(
        on_k(
            json!({"op": "or", "args": [k_eq.clone(), {"op": "and", "args": [k_in.clone(), v_gt]}]})
        ),
        Some(BoundPredicate::Or(vec![
            bind(k_eq),
            BoundPredicate::And(vec![bind(k_in)])
        ]))
    );
}
