//! BinaryRow codec tests: worked byte examples (Java variants) and property-based round trips.

use super::*;
use crate::types::MAX_LENGTH;
use proptest::collection::vec;
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    let digits: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

fn t(kind: TypeKind) -> DataType {
    DataType::new(kind)
}

fn string() -> DataType {
    DataType::string()
}

fn s(v: &str) -> Datum {
    Datum::String(v.to_string())
}

/// Asserts the framed encoding and that it decodes back to the same values.
fn check_framed(values: Vec<Datum>, types: Vec<DataType>, expected_hex: &str) {
    let bytes = encode_framed(&values, &types).unwrap();
    assert_eq!(bytes, hex(expected_hex), "encoding of {values:?}");
    assert_eq!(decode_framed(&bytes, &types).unwrap(), values);
}

#[test]
fn doc_examples_atomic() {
    let int = || t(TypeKind::Int);
    check_framed(
        vec![Datum::Int(1)],
        vec![int()],
        "00000001 0000000000000000 0100000000000000",
    );
    check_framed(
        vec![Datum::Null],
        vec![int()],
        "00000001 0001000000000000 0000000000000000",
    );
    check_framed(
        vec![s("a")],
        vec![string()],
        "00000001 0000000000000000 6100000000000081",
    );
    check_framed(
        vec![s("abcdefg")],
        vec![string()],
        "00000001 0000000000000000 6162636465666787",
    );
    check_framed(
        vec![s("abcdefgh")],
        vec![string()],
        "00000001 0000000000000000 0800000010000000 6162636465666768",
    );
    check_framed(
        vec![s("2024-05-14")],
        vec![string()],
        "00000001 0000000000000000 0a00000010000000 323032342d30352d3134 000000000000",
    );
    check_framed(
        vec![Datum::Int(1), s("hello")],
        vec![int(), string()],
        "00000002 0000000000000000 0100000000000000 68656c6c6f000085",
    );
}

#[test]
fn doc_examples_decimal_and_timestamp() {
    check_framed(
        vec![Datum::Decimal(125)],
        vec![t(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        })],
        "00000001 0000000000000000 7d00000000000000",
    );
    // Java variant: -128 is the single byte 0x80 (pypaimon writes ff80).
    check_framed(
        vec![Datum::Decimal(-128)],
        vec![t(TypeKind::Decimal {
            precision: 20,
            scale: 2,
        })],
        "00000001 0000000000000000 0100000010000000 80000000000000000000000000000000",
    );
    check_framed(
        vec![Datum::Timestamp {
            millis: 1_704_067_200_000,
            nanos: 5000,
        }],
        vec![t(TypeKind::Timestamp(6))],
        "00000001 0000000000000000 8813000010000000 00f451c28c010000",
    );
}

#[test]
fn doc_example_seven_types() {
    let types = vec![
        t(TypeKind::Boolean),
        t(TypeKind::TinyInt),
        t(TypeKind::SmallInt),
        t(TypeKind::Float),
        t(TypeKind::Double),
        t(TypeKind::Date),
        t(TypeKind::Time(0)),
    ];
    let values = vec![
        Datum::Boolean(true),
        Datum::TinyInt(-1),
        Datum::SmallInt(-2),
        Datum::Float(1.5),
        Datum::Double(2.5),
        Datum::Date(19857),
        Datum::Time(3_723_000),
    ];
    check_framed(
        values,
        types,
        "00000007 0000000000000000 0100000000000000 ff00000000000000 feff000000000000
         0000c03f00000000 0000000000000440 914d000000000000 f8ce380000000000",
    );
}

#[test]
fn doc_example_stats_row() {
    let types = vec![
        t(TypeKind::BigInt),
        string(),
        t(TypeKind::Decimal {
            precision: 25,
            scale: 3,
        }),
        t(TypeKind::Timestamp(6)),
        string(),
    ];
    let values = vec![
        Datum::BigInt(1),
        s("a longer string"),
        Datum::Decimal(-2000),
        Datum::Timestamp {
            millis: 1_704_067_200_000,
            nanos: 0,
        },
        s("+I"),
    ];
    check_framed(
        values,
        types,
        "00000005 0000000000000000 0100000000000000 0f00000030000000 0200000040000000
         0000000050000000 2b49000000000082 61206c6f6e67657220737472696e6700
         f830000000000000 0000000000000000 00f451c28c010000",
    );
}

#[test]
fn null_non_compact_decimal_and_timestamp_reserve_their_chunk() {
    let ts = vec![t(TypeKind::Timestamp(6))];
    let bytes = encode_row(&[Datum::Null], &ts).unwrap();
    assert_eq!(
        bytes,
        hex("0001000000000000 0000000010000000 0000000000000000")
    );
    assert_eq!(decode_row(&bytes, &ts).unwrap(), vec![Datum::Null]);

    let dec = vec![t(TypeKind::Decimal {
        precision: 38,
        scale: 0,
    })];
    let bytes = encode_row(&[Datum::Null], &dec).unwrap();
    assert_eq!(
        bytes,
        hex("0001000000000000 0000000010000000 00000000000000000000000000000000")
    );
    // Compact ones do not.
    let compact = vec![
        t(TypeKind::Timestamp(3)),
        t(TypeKind::Decimal {
            precision: 18,
            scale: 0,
        }),
    ];
    assert_eq!(
        encode_row(&[Datum::Null, Datum::Null], &compact).unwrap(),
        hex("0003000000000000 0000000000000000 0000000000000000")
    );
}

#[test]
fn pypaimon_null_timestamp_layout_is_readable() {
    // pypaimon writes a zero slot and no chunk; readers must accept it.
    let ts = vec![t(TypeKind::Timestamp(6))];
    assert_eq!(
        decode_row(&hex("0001000000000000 0000000000000000"), &ts).unwrap(),
        vec![Datum::Null]
    );
}

#[test]
fn decimal_bytes_are_minimal_twos_complement() {
    let cases: [(i128, &str); 8] = [
        (0, "00"),
        (-1, "ff"),
        (127, "7f"),
        (128, "0080"),
        (-128, "80"),
        (-129, "ff7f"),
        (-2000, "f830"),
        (
            99_999_999_999_999_999_999_999_999_999_999_999_999,
            "4b3b4ca85a86c47a098a223fffffffff",
        ),
    ];
    for (v, bytes) in cases {
        assert_eq!(unscaled_bytes(v), hex(bytes), "{v}");
    }
}

#[test]
fn empty_row_and_bitset_widths() {
    assert_eq!(
        encode_framed(&[], &[]).unwrap(),
        hex("00000000 0000000000000000")
    );
    assert_eq!(
        decode_framed(&hex("00000000 0000000000000000"), &[]).unwrap(),
        vec![]
    );
    assert_eq!(null_bits_width(56), 8);
    assert_eq!(null_bits_width(57), 16);
    assert_eq!(null_bits_width(120), 16);
    assert_eq!(null_bits_width(121), 24);
}

#[test]
fn row_kind_is_byte_zero() {
    let bytes = encode_row_with_kind(&[Datum::Int(1)], &[t(TypeKind::Int)], 3).unwrap();
    assert_eq!(bytes[0], 3);
    assert_eq!(
        decode_row_with_kind(&bytes, &[t(TypeKind::Int)]).unwrap().0,
        3
    );
    assert!(matches!(
        encode_row_with_kind(&[], &[], 4),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn nested_array_layout() {
    let types = vec![t(TypeKind::Array(Box::new(t(TypeKind::Int))))];
    let values = vec![Datum::Array(vec![
        Datum::Int(1),
        Datum::Null,
        Datum::Int(3),
    ])];
    let row = encode_row(&values, &types).unwrap();
    // Array: count 3, null bits (element 1), three 4-byte elements, padded to 24 bytes.
    assert_eq!(
        row,
        hex("0000000000000000 1800000010000000
             03000000 02000000 01000000 00000000 03000000 00000000")
    );
    assert_eq!(decode_row(&row, &types).unwrap(), values);
}

#[test]
fn nested_map_layout() {
    let types = vec![t(TypeKind::Map(
        Box::new(string()),
        Box::new(t(TypeKind::Int)),
    ))];
    let values = vec![Datum::Map(vec![(s("a"), Datum::Int(1))])];
    let row = encode_row(&values, &types).unwrap();
    // Map: key-array size 16, keys [count 1, bits, inline "a"], values [count 1, bits, 1, pad];
    // 36 bytes padded to 40.
    assert_eq!(
        row,
        hex("0000000000000000 2400000010000000
             10000000 01000000 00000000 6100000000000081
             01000000 00000000 01000000 00000000 00000000")
    );
    assert_eq!(decode_row(&row, &types).unwrap(), values);
}

#[test]
fn nested_row_and_multiset() {
    let inner = t(TypeKind::Row(vec![
        DataField::new(1, "a", t(TypeKind::Int)),
        DataField::new(2, "b", t(TypeKind::Timestamp(9))),
    ]));
    let types = vec![inner, t(TypeKind::Multiset(Box::new(string())))];
    let values = vec![
        Datum::Row(vec![Datum::Int(7), Datum::Null]),
        Datum::Map(vec![
            (s("x"), Datum::Int(2)),
            (s("a longer key"), Datum::Int(1)),
        ]),
    ];
    let row = encode_row(&values, &types).unwrap();
    // Nested row at 0x18: 32 bytes, its null TIMESTAMP(9) keeps an 8-byte chunk at its own 0x18.
    // Multiset at 0x38: MAP<STRING, INT> of 60 bytes (key array 40, value array 16), padded.
    assert_eq!(
        row,
        hex("0000000000000000 2000000018000000 3c00000038000000
             0002000000000000 0700000000000000 0000000018000000 0000000000000000
             28000000
             02000000 00000000 7800000000000081 0c00000018000000
             61206c6f6e676572206b6579 00000000
             02000000 00000000 02000000 01000000
             00000000")
    );
    assert_eq!(decode_row(&row, &types).unwrap(), values);
}

#[test]
fn array_elements_canonicalise_nan_but_rows_do_not() {
    let payload_nan = f64::from_bits(0x7ff0_0000_0000_0001);
    let types = vec![
        t(TypeKind::Double),
        t(TypeKind::Array(Box::new(t(TypeKind::Double)))),
    ];
    let values = vec![
        Datum::Double(payload_nan),
        Datum::Array(vec![Datum::Double(payload_nan)]),
    ];
    let row = encode_row(&values, &types).unwrap();
    assert_eq!(&row[8..16], &0x7ff0_0000_0000_0001u64.to_le_bytes());
    assert_eq!(&row[32..40], &f64::NAN.to_bits().to_le_bytes());
}

#[test]
fn mismatches_and_unsupported() {
    let int = vec![t(TypeKind::Int)];
    assert!(matches!(
        encode_row(&[s("x")], &int),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(encode_row(&[], &int), Err(Error::Invalid(_))));
    let dec = vec![t(TypeKind::Decimal {
        precision: 3,
        scale: 0,
    })];
    assert!(matches!(
        encode_row(&[Datum::Decimal(1000)], &dec),
        Err(Error::Invalid(_))
    ));
    assert!(encode_row(&[Datum::Decimal(-999)], &dec).is_ok());
    let ts = vec![t(TypeKind::Timestamp(6))];
    let bad_nanos = Datum::Timestamp {
        millis: 0,
        nanos: 1_000_000,
    };
    assert!(matches!(
        encode_row(&[bad_nanos], &ts),
        Err(Error::Invalid(_))
    ));
    let variant = vec![t(TypeKind::Variant)];
    assert!(matches!(
        encode_row(&[Datum::Bytes(vec![])], &variant),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(
        decode_row(&[0u8; 16], &variant),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn compact_timestamp_drops_nanos_like_java() {
    let ts = vec![t(TypeKind::Timestamp(3))];
    let row = encode_row(
        &[Datum::Timestamp {
            millis: -5,
            nanos: 999,
        }],
        &ts,
    )
    .unwrap();
    assert_eq!(
        decode_row(&row, &ts).unwrap(),
        vec![Datum::Timestamp {
            millis: -5,
            nanos: 0
        }]
    );
}

#[test]
fn corrupt_inputs_are_errors() {
    let types = vec![string()];
    // Truncated fixed part.
    assert!(matches!(
        decode_row(&[0u8; 15], &types),
        Err(Error::Corrupt { .. })
    ));
    // Offset past the end.
    assert!(matches!(
        decode_row(&hex("0000000000000000 0800000040000000"), &types),
        Err(Error::Corrupt { .. })
    ));
    // Inline length above 7.
    assert!(matches!(
        decode_row(&hex("0000000000000000 00000000000000ff"), &types),
        Err(Error::Corrupt { .. })
    ));
    // Invalid UTF-8.
    assert!(matches!(
        decode_row(&hex("0000000000000000 ff00000000000081"), &types),
        Err(Error::Corrupt { .. })
    ));
    // Frame arity mismatch and negative arity.
    assert!(matches!(
        decode_framed(&hex("00000002 0000000000000000 0000000000000000"), &types),
        Err(Error::Corrupt { .. })
    ));
    assert!(matches!(
        split_framed(&hex("ffffffff")),
        Err(Error::Corrupt { .. })
    ));
    assert!(matches!(
        split_framed(&hex("0000")),
        Err(Error::Corrupt { .. })
    ));
}

// ------------------------------------------------------------------------------------------
// Property tests
// ------------------------------------------------------------------------------------------

fn leaf_kind() -> impl Strategy<Value = TypeKind> {
    prop_oneof![
        Just(TypeKind::Boolean),
        Just(TypeKind::TinyInt),
        Just(TypeKind::SmallInt),
        Just(TypeKind::Int),
        Just(TypeKind::BigInt),
        Just(TypeKind::Float),
        Just(TypeKind::Double),
        (1u32..=38)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(precision, scale)| TypeKind::Decimal { precision, scale }),
        (1u32..10).prop_map(TypeKind::Char),
        Just(TypeKind::VarChar(MAX_LENGTH)),
        (1u32..10).prop_map(TypeKind::Binary),
        Just(TypeKind::VarBinary(MAX_LENGTH)),
        Just(TypeKind::Date),
        (0u32..=3).prop_map(TypeKind::Time),
        (0u32..=9).prop_map(TypeKind::Timestamp),
        (0u32..=9).prop_map(TypeKind::LocalZonedTimestamp),
    ]
}

fn leaf_type() -> impl Strategy<Value = DataType> {
    (leaf_kind(), any::<bool>()).prop_map(|(kind, nullable)| DataType { nullable, kind })
}

fn data_type() -> impl Strategy<Value = DataType> {
    leaf_type().prop_recursive(3, 24, 4, |inner| {
        let nested = prop_oneof![
            inner.clone().prop_map(|e| TypeKind::Array(Box::new(e))),
            inner.clone().prop_map(|e| TypeKind::Multiset(Box::new(e))),
            (inner.clone(), inner.clone())
                .prop_map(|(k, v)| TypeKind::Map(Box::new(k), Box::new(v))),
            vec(inner, 0..4).prop_map(|types| {
                let fields = types
                    .into_iter()
                    .enumerate()
                    .map(|(i, ty)| DataField::new(i as i32, format!("f{i}"), ty))
                    .collect();
                TypeKind::Row(fields)
            }),
        ];
        (nested, any::<bool>()).prop_map(|(kind, nullable)| DataType { nullable, kind })
    })
}

fn float_value() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(f32::NAN),
        Just(-0.0f32),
        Just(f32::INFINITY),
        Just(f32::MIN_POSITIVE),
        any::<u32>().prop_map(f32::from_bits),
    ]
}

fn double_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(-0.0f64),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        any::<u64>().prop_map(f64::from_bits),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "\\PC{1,7}",
        "[a-z]{1,7}",
        "[a-z]{8,40}",
        "\\PC{8,30}"
    ]
}

fn datum_for(ty: &DataType) -> BoxedStrategy<Datum> {
    let value = non_null_datum(ty);
    if ty.nullable {
        prop_oneof![1 => Just(Datum::Null), 4 => value].boxed()
    } else {
        value
    }
}

fn decimal_value(precision: u32) -> BoxedStrategy<i128> {
    let max = 10i128.pow(precision) - 1;
    prop_oneof![Just(max), Just(-max), Just(0i128), Just(-1i128), -max..=max].boxed()
}

fn timestamp_value(precision: u32) -> BoxedStrategy<Datum> {
    let millis = prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(-1i64), any::<i64>()];
    if precision <= 3 {
        millis
            .prop_map(|millis| Datum::Timestamp { millis, nanos: 0 })
            .boxed()
    } else {
        (millis, 0..NANOS_PER_MILLI)
            .prop_map(|(millis, nanos)| Datum::Timestamp { millis, nanos })
            .boxed()
    }
}

fn non_null_datum(ty: &DataType) -> BoxedStrategy<Datum> {
    match &ty.kind {
        TypeKind::Boolean => any::<bool>().prop_map(Datum::Boolean).boxed(),
        TypeKind::TinyInt => any::<i8>().prop_map(Datum::TinyInt).boxed(),
        TypeKind::SmallInt => any::<i16>().prop_map(Datum::SmallInt).boxed(),
        TypeKind::Int => prop_oneof![Just(i32::MIN), Just(i32::MAX), any::<i32>()]
            .prop_map(Datum::Int)
            .boxed(),
        TypeKind::BigInt => prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()]
            .prop_map(Datum::BigInt)
            .boxed(),
        TypeKind::Float => float_value().prop_map(Datum::Float).boxed(),
        TypeKind::Double => double_value().prop_map(Datum::Double).boxed(),
        TypeKind::Decimal { precision, .. } => {
            decimal_value(*precision).prop_map(Datum::Decimal).boxed()
        }
        TypeKind::Char(_) | TypeKind::VarChar(_) => text().prop_map(Datum::String).boxed(),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
            vec(any::<u8>(), 0..24).prop_map(Datum::Bytes).boxed()
        }
        TypeKind::Date => any::<i32>().prop_map(Datum::Date).boxed(),
        TypeKind::Time(_) => (0..86_400_000).prop_map(Datum::Time).boxed(),
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => timestamp_value(*p),
        TypeKind::Array(elem) => vec(datum_for(elem), 0..5).prop_map(Datum::Array).boxed(),
        TypeKind::Multiset(elem) => vec((datum_for(elem), any::<i32>().prop_map(Datum::Int)), 0..4)
            .prop_map(Datum::Map)
            .boxed(),
        TypeKind::Map(k, v) => vec((datum_for(k), datum_for(v)), 0..4)
            .prop_map(Datum::Map)
            .boxed(),
        TypeKind::Row(fields) => {
            let parts: Vec<_> = fields.iter().map(|f| datum_for(&f.data_type)).collect();
            parts.prop_map(Datum::Row).boxed()
        }
        TypeKind::Variant | TypeKind::Blob => Just(Datum::Null).boxed(),
    }
}

fn row_case(
    types: impl Strategy<Value = Vec<DataType>>,
) -> impl Strategy<Value = (Vec<DataType>, Vec<Datum>)> {
    types.prop_flat_map(|types| {
        let values: Vec<_> = types.iter().map(datum_for).collect();
        (Just(types), values)
    })
}

/// Equality with floats compared bitwise, except that any NaN equals any NaN.
fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Float(x), Datum::Float(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Datum::Double(x), Datum::Double(y)) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Datum::Array(x), Datum::Array(y)) | (Datum::Row(x), Datum::Row(y)) => all_same(x, y),
        (Datum::Map(x), Datum::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        }
        _ => a == b,
    }
}

fn all_same(a: &[Datum], b: &[Datum]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip_random_schemas((types, values) in row_case(vec(data_type(), 0..8))) {
        let bytes = encode_row(&values, &types).unwrap();
        prop_assert_eq!(bytes.len() % 8, 0);
        let decoded = decode_row(&bytes, &types).unwrap();
        prop_assert!(all_same(&values, &decoded), "{:?} != {:?}", values, decoded);
        // Encoding is a function of the decoded value: byte-stable.
        prop_assert_eq!(encode_row(&decoded, &types).unwrap(), bytes.clone());
        let framed = serialize_framed(&bytes, types.len());
        prop_assert!(all_same(&values, &decode_framed(&framed, &types).unwrap()));
    }

    #[test]
    fn round_trip_wide_rows((types, values) in row_case(vec(leaf_type(), 50..130))) {
        let bytes = encode_row(&values, &types).unwrap();
        prop_assert!(all_same(&values, &decode_row(&bytes, &types).unwrap()));
    }

    #[test]
    fn decoding_random_bytes_never_panics(
        types in vec(data_type(), 0..6),
        bytes in vec(any::<u8>(), 0..256),
    ) {
        let _ = decode_row(&bytes, &types);
        let _ = decode_framed(&bytes, &types);
    }

    #[test]
    fn decoding_damaged_rows_never_panics(
        (types, values) in row_case(vec(data_type(), 1..6)),
        cut in any::<prop::sample::Index>(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let bytes = encode_row(&values, &types).unwrap();
        let truncated = &bytes[..cut.index(bytes.len())];
        prop_assert!(decode_row(truncated, &types).is_err() || truncated.len() >= fixed_part_size(types.len()));
        let mut damaged = bytes.clone();
        for (at, mask) in flips {
            let i = at.index(damaged.len());
            damaged[i] ^= mask;
        }
        let _ = decode_row(&damaged, &types);
    }
}
