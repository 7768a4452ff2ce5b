//! Partition naming tests: doc examples, Java string forms, escaping safety, fixture directories.

use super::*;
use crate::types::DataType;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn computer(keys: &[(&str, TypeKind)], legacy: bool) -> PartitionComputer {
    let names = keys.iter().map(|(n, _)| n.to_string()).collect();
    let types = keys.iter().map(|(_, k)| DataType::new(k.clone())).collect();
    PartitionComputer::new(names, types, DEFAULT_PARTITION_NAME, legacy).unwrap()
}

fn one(kind: TypeKind, legacy: bool, value: Datum) -> String {
    computer(&[("k", kind)], legacy)
        .partition_spec(&[value])
        .unwrap()
        .remove(0)
        .1
}

fn s(v: &str) -> Datum {
    Datum::String(v.to_string())
}

fn ts(millis: i64, nanos: i32) -> Datum {
    Datum::Timestamp { millis, nanos }
}

const STRING: TypeKind = TypeKind::VarChar(crate::types::MAX_LENGTH);

#[test]
fn doc_examples() {
    assert_eq!(escape_path_name("a b/c:d"), "a b%2Fc%3Ad");
    let c = computer(&[("dt", STRING), ("hr", TypeKind::Int)], true);
    assert_eq!(
        c.partition_path(&[s("2024-05-14"), Datum::Int(3)]).unwrap(),
        "dt=2024-05-14/hr=3"
    );
    assert_eq!(
        c.partition_path(&[Datum::Null, Datum::Null]).unwrap(),
        "dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__"
    );
    assert_eq!(
        c.partition_path(&[s(""), Datum::Int(0)]).unwrap(),
        "dt=__DEFAULT_PARTITION__/hr=0"
    );
    assert_eq!(
        c.partition_path(&[s(" \t\u{3000}"), Datum::Int(0)])
            .unwrap(),
        "dt=__DEFAULT_PARTITION__/hr=0"
    );
    // No-break space is not Java whitespace.
    assert_eq!(one(STRING, true, s("\u{a0}")), "\u{a0}");
    assert_eq!(one(TypeKind::Date, true, Datum::Date(19857)), "19857");
    assert_eq!(one(TypeKind::Date, false, Datum::Date(19857)), "2024-05-14");
    let c = computer(&[("a b/c:d", STRING)], true);
    assert_eq!(c.partition_path(&[s("x=y")]).unwrap(), "a b%2Fc%3Ad=x%3Dy");
    assert_eq!(
        c.partition_spec(&[s("x=y")]).unwrap(),
        vec![("a b/c:d".to_string(), "x=y".to_string())]
    );
}

#[test]
fn custom_default_name_and_no_keys() {
    let c =
        PartitionComputer::new(vec!["p".into()], vec![DataType::string()], "none", true).unwrap();
    assert_eq!(c.partition_path(&[Datum::Null]).unwrap(), "p=none");
    let empty = PartitionComputer::new(vec![], vec![], DEFAULT_PARTITION_NAME, true).unwrap();
    assert_eq!(empty.partition_path(&[]).unwrap(), "");
    assert!(PartitionComputer::new(vec!["".into()], vec![DataType::string()], "d", true).is_err());
    assert!(PartitionComputer::new(vec!["p".into()], vec![], "d", true).is_err());
}

#[test]
fn legacy_timestamps_follow_local_date_time_to_string() {
    let t6 = TypeKind::Timestamp(6);
    let base = 1_704_164_645_000; // 2024-01-02T03:04:05
    assert_eq!(
        one(t6.clone(), true, ts(base + 123, 0)),
        "2024-01-02T03:04:05.123"
    );
    assert_eq!(one(t6.clone(), true, ts(base, 0)), "2024-01-02T03:04:05");
    assert_eq!(
        one(t6.clone(), true, ts(base - 5000, 0)),
        "2024-01-02T03:04"
    );
    assert_eq!(
        one(t6.clone(), true, ts(base - 5000, 5000)),
        "2024-01-02T03:04:00.000005"
    );
    assert_eq!(
        one(t6.clone(), true, ts(base, 1)),
        "2024-01-02T03:04:05.000000001"
    );
    assert_eq!(
        one(t6.clone(), true, ts(base + 100, 0)),
        "2024-01-02T03:04:05.100"
    );
    assert_eq!(one(t6.clone(), true, ts(-1, 0)), "1969-12-31T23:59:59.999");
    assert_eq!(
        one(t6.clone(), true, ts(253_402_300_800_000, 0)),
        "+10000-01-01T00:00"
    );
    assert_eq!(
        one(t6.clone(), true, ts(-62_009_366_400_000, 0)),
        "0005-01-01T00:00"
    );
    assert_eq!(
        one(t6.clone(), true, ts(-62_198_755_200_000, 0)),
        "-0001-01-01T00:00"
    );
    assert_eq!(
        one(TypeKind::LocalZonedTimestamp(3), true, ts(0, 0)),
        "1970-01-01T00:00"
    );
    assert!(computer(&[("k", t6)], true)
        .partition_spec(&[ts(0, -1)])
        .is_err());
}

#[test]
fn sql_cast_timestamps_dates_and_times() {
    let base = 1_704_164_645_000; // 2024-01-02 03:04:05
    assert_eq!(
        one(TypeKind::Timestamp(3), false, ts(base + 123, 0)),
        "2024-01-02 03:04:05.123"
    );
    assert_eq!(
        one(TypeKind::Timestamp(3), false, ts(base + 120, 0)),
        "2024-01-02 03:04:05.120"
    );
    assert_eq!(
        one(TypeKind::Timestamp(3), false, ts(base, 0)),
        "2024-01-02 03:04:05.000"
    );
    assert_eq!(
        one(TypeKind::Timestamp(0), false, ts(base, 0)),
        "2024-01-02 03:04:05"
    );
    assert_eq!(
        one(TypeKind::Timestamp(0), false, ts(base + 500, 0)),
        "2024-01-02 03:04:05.5"
    );
    assert_eq!(
        one(TypeKind::Timestamp(6), false, ts(base, 5000)),
        "2024-01-02 03:04:05.000005"
    );
    assert_eq!(
        one(TypeKind::Timestamp(9), false, ts(base, 5000)),
        "2024-01-02 03:04:05.000005000"
    );
    assert_eq!(
        one(TypeKind::Timestamp(3), false, ts(-1, 0)),
        "1969-12-31 23:59:59.999"
    );
    assert_eq!(one(TypeKind::Date, false, Datum::Date(0)), "1970-01-01");
    assert_eq!(one(TypeKind::Date, false, Datum::Date(-1)), "1969-12-31");
    assert_eq!(one(TypeKind::Date, false, Datum::Date(11016)), "2000-02-29");
    assert_eq!(
        one(TypeKind::Time(0), true, Datum::Time(3_723_000)),
        "3723000"
    );
    assert_eq!(
        one(TypeKind::Time(0), false, Datum::Time(3_723_000)),
        "01:02:03"
    );
    assert_eq!(
        one(TypeKind::Time(3), false, Datum::Time(3_723_500)),
        "01:02:03.5"
    );
    assert_eq!(
        one(TypeKind::Time(3), false, Datum::Time(3_723_000)),
        "01:02:03.0"
    );
    assert_eq!(
        one(TypeKind::Time(3), false, Datum::Time(3_723_045)),
        "01:02:03.045"
    );
    assert_eq!(
        one(TypeKind::Time(0), false, Datum::Time(-1000)),
        "23:59:59"
    );
}

#[test]
fn civil_dates_agree_with_julian_formatting() {
    // Years 1..=9999 (Java's four-digit formatting garbles the others, on purpose).
    for days in (-719_162..2_932_897)
        .step_by(997)
        .chain([-719_162, 2_932_896])
    {
        let (y, m, d) = civil_from_days(i64::from(days));
        assert_eq!(
            sql_date(days),
            format!("{y:04}-{m:02}-{d:02}"),
            "day {days}"
        );
    }
}

#[test]
fn decimals_are_plain_strings() {
    let dec = |p, scale| TypeKind::Decimal {
        precision: p,
        scale,
    };
    assert_eq!(one(dec(10, 2), true, Datum::Decimal(150)), "1.50");
    assert_eq!(one(dec(10, 2), true, Datum::Decimal(-5)), "-0.05");
    assert_eq!(one(dec(10, 0), true, Datum::Decimal(0)), "0");
    assert_eq!(one(dec(10, 3), false, Datum::Decimal(0)), "0.000");
    assert_eq!(
        one(
            dec(38, 10),
            true,
            Datum::Decimal(-99_999_999_999_999_999_999_999_999_999_999_999_999)
        ),
        "-9999999999999999999999999999.9999999999"
    );
}

#[test]
fn floats_follow_java_to_string() {
    let d = |v: f64| java_double_to_string(v);
    assert_eq!(d(1e10), "1.0E10");
    assert_eq!(d(1.5), "1.5");
    assert_eq!(d(0.001), "0.001");
    assert_eq!(d(1e-4), "1.0E-4");
    assert_eq!(d(100.0), "100.0");
    assert_eq!(d(1e7), "1.0E7");
    assert_eq!(d(9_999_999.0), "9999999.0");
    assert_eq!(d(0.1), "0.1");
    assert_eq!(d(-2.5e-5), "-2.5E-5");
    assert_eq!(d(123_456_789.125), "1.23456789125E8");
    assert_eq!(d(f64::MIN_POSITIVE), "2.2250738585072014E-308");
    assert_eq!(d(f64::from_bits(1)), "4.9E-324");
    assert_eq!(d(f64::MAX), "1.7976931348623157E308");
    assert_eq!(d(1e23), "1.0E23");
    assert_eq!(d(f64::NAN), "NaN");
    assert_eq!(d(f64::INFINITY), "Infinity");
    assert_eq!(d(f64::NEG_INFINITY), "-Infinity");
    assert_eq!(d(0.0), "0.0");
    assert_eq!(d(-0.0), "-0.0");
    let f = |v: f32| java_float_to_string(v);
    assert_eq!(f(1.1), "1.1");
    assert_eq!(f(0.3), "0.3");
    assert_eq!(f(1e10), "1.0E10");
    assert_eq!(f(f32::from_bits(1)), "1.4E-45");
    assert_eq!(f(f32::MAX), "3.4028235E38");
    assert_eq!(f(123_456.7), "123456.7");
    assert_eq!(one(TypeKind::Float, true, Datum::Float(1.5)), "1.5");
    assert_eq!(one(TypeKind::Double, false, Datum::Double(1e10)), "1.0E10");
}

#[test]
fn other_atomic_types() {
    assert_eq!(one(TypeKind::Boolean, true, Datum::Boolean(true)), "true");
    assert_eq!(
        one(TypeKind::Boolean, false, Datum::Boolean(false)),
        "false"
    );
    assert_eq!(one(TypeKind::TinyInt, true, Datum::TinyInt(-7)), "-7");
    assert_eq!(
        one(TypeKind::BigInt, true, Datum::BigInt(i64::MIN)),
        "-9223372036854775808"
    );
    assert_eq!(one(TypeKind::Char(3), true, s("ab ")), "ab ");
    assert_eq!(
        one(TypeKind::VarBinary(8), false, Datum::Bytes(b"x/y".to_vec())),
        "x/y"
    );
    let binary = computer(&[("k", TypeKind::Binary(2))], true);
    assert!(matches!(
        binary.partition_spec(&[Datum::Bytes(vec![1])]),
        Err(Error::Unsupported(_))
    ));
    let array = computer(
        &[("k", TypeKind::Array(Box::new(DataType::string())))],
        true,
    );
    assert!(matches!(
        array.partition_spec(&[Datum::Array(vec![])]),
        Err(Error::Unsupported(_))
    ));
    let int = computer(&[("k", TypeKind::Int)], true);
    assert!(matches!(
        int.partition_spec(&[s("1")]),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(int.partition_spec(&[]), Err(Error::Invalid(_))));
}

#[test]
fn escape_char_set_and_java_unescape_quirks() {
    assert_eq!(escape_path_name("\u{0}\u{1f}\u{7f}"), "%00%1F%7F");
    assert_eq!(
        escape_path_name("\"#%'*/:=?\\{}[]^"),
        "%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%7D%5B%5D%5E"
    );
    assert_eq!(
        escape_path_name(" .-_~!@$&()+,;<>|`é日😀"),
        " .-_~!@$&()+,;<>|`é日😀"
    );
    assert_eq!(unescape_path_name("%41%2f%3A"), "A/:");
    assert_eq!(unescape_path_name("%+A"), "\n");
    assert_eq!(unescape_path_name("%-0"), "\u{0}");
    assert_eq!(unescape_path_name("%-1"), "%-1");
    assert_eq!(unescape_path_name("%zz%4"), "%zz%4");
    assert_eq!(unescape_path_name("%%41"), "%A");
    assert_eq!(unescape_path_name("%E9"), "\u{e9}");
}

proptest! {
    #[test]
    fn escaped_segments_are_safe_and_reversible(
        name in "[a-z./=%\u{0}]{1,4}|\\PC{1,6}",
        value in prop_oneof![
            Just("..".to_string()), Just(".".to_string()), Just("/".to_string()),
            "[./=%\u{0}\\\\:a ]{0,8}", "\\PC{0,8}", any::<String>(),
        ],
    ) {
        prop_assert_eq!(unescape_path_name(&escape_path_name(&value)), value.clone());
        let c = PartitionComputer::new(vec![name.clone()], vec![DataType::string()], DEFAULT_PARTITION_NAME, true).unwrap();
        let path = c.partition_path(&[Datum::String(value.clone())]).unwrap();
        for segment in path.split('/') {
            prop_assert!(segment != "." && segment != "..", "{:?}", segment);
            prop_assert!(!segment.contains('\0'), "NUL in {:?}", segment);
            let (n, v) = segment.split_once('=').unwrap();
            prop_assert_eq!(unescape_path_name(n), name.clone());
            let expected = c.partition_spec(&[Datum::String(value.clone())]).unwrap().remove(0).1;
            prop_assert_eq!(unescape_path_name(v), expected);
        }
        prop_assert_eq!(path.matches('/').count(), 0);
    }
}

fn fixture_warehouse() -> PathBuf {
    crate::schema::fixtures::root().join("warehouse/fx.db")
}

/// Every directory below `dir` (recursively).
fn directories(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push(path.clone());
            directories(&path, out);
        }
    }
}

#[test]
fn fixture_partition_directories_round_trip() {
    let root = fixture_warehouse();
    if !root.is_dir() {
        eprintln!("fixtures not found at {}; skipping", root.display());
        return;
    }
    let mut dirs = Vec::new();
    directories(&root, &mut dirs);
    let mut checked = 0;
    for dir in dirs {
        let Some(component) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((name, value)) = component.split_once('=') else {
            continue;
        };
        assert_eq!(
            escape_path_name(&unescape_path_name(name)),
            name,
            "{}",
            dir.display()
        );
        assert_eq!(
            escape_path_name(&unescape_path_name(value)),
            value,
            "{}",
            dir.display()
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "no partition directories under {}",
        root.display()
    );
}

#[test]
fn fixture_partitioned_table_paths_are_recomputed() {
    let table = fixture_warehouse().join("append_partitioned");
    if !table.is_dir() {
        return;
    }
    let c = computer(&[("region", STRING), ("yr", TypeKind::Int)], true);
    for (region, yr) in [
        (s("apac"), Datum::Int(2023)),
        (Datum::Null, Datum::Null),
        (s("eu"), Datum::Null),
    ] {
        let path = c.partition_path(&[region, yr]).unwrap();
        assert!(
            table.join(&path).is_dir(),
            "{path} missing under {}",
            table.display()
        );
    }
}
