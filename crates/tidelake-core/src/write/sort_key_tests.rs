//! The sort keys against bytes derived by hand from Java's `ZIndexer`, `ZOrderByteUtils` and
//! `HilbertIndexer`.

use std::sync::Arc;

use arrow_array::types::Decimal128Type;
use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array, Int8Array,
    PrimitiveArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use tidelake_spec::options::{Options, OrderType};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::*;

fn schema(fields: &[(&str, TypeKind)], options: &[(&str, &str)]) -> TableSchema {
    let fields = fields
        .iter()
        .enumerate()
        .map(|(i, (n, k))| DataField::new(i as i32, *n, DataType::new(k.clone())))
        .collect();
    let options: Options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    TableSchema::new(0, fields, vec![], vec![], options).unwrap()
}

fn batch(schema: &TableSchema, columns: Vec<ArrayRef>) -> RecordBatch {
    let arrow = tidelake_spec::arrow::to_arrow_schema(&schema.fields).unwrap();
    RecordBatch::try_new(Arc::new(arrow), columns).unwrap()
}

fn keys(
    fields: &[(&str, TypeKind)],
    options: &[(&str, &str)],
    order: OrderType,
    columns: Vec<ArrayRef>,
) -> Vec<Vec<u8>> {
    let s = schema(fields, options);
    let names: Vec<String> = fields.iter().map(|(n, _)| n.to_string()).collect();
    let order = RowOrder::new(&s, &names, order).unwrap();
    let keys = order.keys(&batch(&s, columns)).unwrap();
    keys.iter().map(|k| k.unwrap().to_vec()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Java `TestZOrderByteUtil.testInterleaveMixedBits`.
#[test]
fn interleave_matches_javas_mixed_bits_case() {
    let columns: [&[u8]; 4] = [
        &[0b0000_0001, 0b1111_1111, 0b0000_0000, 0b0000_1111],
        &[0b0000_0001, 0b0000_0000, 0b1111_1111],
        &[0b0000_0001],
        &[0b0000_0001],
    ];
    assert_eq!(
        interleave_bits(&columns, 9),
        vec![
            0b0000_0000,
            0b0000_0000,
            0b0000_0000,
            0b0000_1111,
            0b1010_1010,
            0b1010_1010,
            0b0101_0101,
            0b0101_0101,
            0b0000_1111
        ]
    );
}

#[test]
fn zorder_of_int_and_long_is_javas() {
    // int 1 -> 80 00 00 00 00 00 00 01, long -1 -> 7f ff ff ff ff ff ff ff; interleaved a, b
    let k = keys(
        &[("a", TypeKind::Int), ("b", TypeKind::BigInt)],
        &[],
        OrderType::ZOrder,
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(Int64Array::from(vec![Some(-1), Some(0)])),
        ],
    );
    assert_eq!(hex(&k[0]), format!("9555{}5557", "55".repeat(12)));
    // null int -> zeros; long 0 -> 80 00 ..: only b's first bit
    assert_eq!(hex(&k[1]), format!("40{}", "00".repeat(15)));
}

#[test]
fn zorder_of_strings_floats_decimals_booleans_timestamps_is_javas() {
    let fields = [("s", TypeKind::VarChar(100))];
    let k = keys(
        &fields,
        &[("zorder.var-length-contribution", "4")],
        OrderType::ZOrder,
        vec![Arc::new(StringArray::from(vec![
            Some("ab"),
            Some("abcdefgh"),
            None,
        ]))],
    );
    // one column: its bytes unchanged, first 4 bytes zero-filled
    assert_eq!(
        k.iter().map(|b| hex(b)).collect::<Vec<_>>(),
        ["61620000", "61626364", "00000000"]
    );
    let single = |kind: TypeKind, column: ArrayRef| {
        keys(&[("c", kind)], &[], OrderType::ZOrder, vec![column])
            .iter()
            .map(|b| hex(b))
            .collect::<Vec<_>>()
    };
    // Java floatToOrderedBytes: bits ^ ((bits >> 31) | Long.MIN_VALUE)
    assert_eq!(
        single(
            TypeKind::Float,
            Arc::new(Float32Array::from(vec![1.0, -1.0, 0.0, f32::NAN]))
        ),
        [
            "bff000007fe00000",
            "400fffff7fe00000",
            "8000000000000000",
            "fff80000fff00000"
        ]
    );
    assert_eq!(
        single(TypeKind::Double, Arc::new(Float64Array::from(vec![1.0]))),
        ["bff000007fe00000"]
    );
    // unscaled BigInteger.toByteArray, truncated or filled to 8
    let decimals: PrimitiveArray<Decimal128Type> =
        PrimitiveArray::from(vec![Some(12345), Some(-1), Some(128), None])
            .with_precision_and_scale(10, 2)
            .unwrap();
    assert_eq!(
        single(
            TypeKind::Decimal {
                precision: 10,
                scale: 2
            },
            Arc::new(decimals)
        ),
        [
            "3039000000000000",
            "ff00000000000000",
            "0080000000000000",
            "0000000000000000"
        ]
    );
    assert_eq!(
        single(
            TypeKind::Boolean,
            Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]))
        ),
        ["8100000000000000", "0000000000000000", "0000000000000000"]
    );
    // epoch milliseconds, floored
    assert_eq!(
        single(
            TypeKind::Timestamp(6),
            Arc::new(TimestampMicrosecondArray::from(vec![-1, 2_999]))
        ),
        ["7fffffffffffffff", "8000000000000002"]
    );
    assert_eq!(
        single(TypeKind::TinyInt, Arc::new(Int8Array::from(vec![-1]))),
        ["7fffffffffffffff"]
    );
}

#[test]
fn zorder_keys_order_each_column() {
    // with one column fixed, the key orders by the other
    let a: Vec<i32> = (-50..50).collect();
    let k = keys(
        &[("a", TypeKind::Int), ("b", TypeKind::Int)],
        &[],
        OrderType::ZOrder,
        vec![
            Arc::new(Int32Array::from(a.clone())),
            Arc::new(Int32Array::from(vec![7; a.len()])),
        ],
    );
    assert!(k.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn hilbert_long_forms_are_javas() {
    let f =
        |kind: TypeKind, column: ArrayRef| hilbert_longs(&column, &DataType::new(kind)).unwrap();
    assert_eq!(
        f(
            TypeKind::TinyInt,
            Arc::new(Int8Array::from(vec![Some(-1), None]))
        ),
        [255, i64::MAX]
    );
    assert_eq!(
        f(
            TypeKind::VarChar(10),
            Arc::new(StringArray::from(vec!["ab", "abcdefghij"]))
        ),
        [0x6162, 0x6162_6364_6566_6768]
    );
    assert_eq!(
        f(
            TypeKind::Boolean,
            Arc::new(BooleanArray::from(vec![true, false]))
        ),
        [i64::MAX, 0]
    );
    let decimals: PrimitiveArray<Decimal128Type> = PrimitiveArray::from(vec![-12_345i128])
        .with_precision_and_scale(10, 2)
        .unwrap();
    assert_eq!(
        f(
            TypeKind::Decimal {
                precision: 10,
                scale: 2
            },
            Arc::new(decimals)
        ),
        [-123]
    );
}

/// Sorted by their Hilbert index, the cells of a grid form a path of unit steps (the defining
/// property of a Hilbert curve), and every key has the same length.
#[test]
fn hilbert_orders_a_grid_along_unit_steps() {
    let side = 16i64;
    let mut cells: Vec<(Vec<u8>, (i64, i64))> = (0..side * side)
        .map(|i| {
            let (x, y) = (i / side, i % side);
            (hilbert_index(&[x, y]), (x, y))
        })
        .collect();
    assert!(cells.iter().all(|(k, _)| k.len() == 16));
    cells.sort();
    for w in cells.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0].1, w[1].1);
        assert_eq!(
            (x0 - x1).abs() + (y0 - y1).abs(),
            1,
            "{:?}",
            (w[0].1, w[1].1)
        );
    }
    // three dimensions too
    let mut cube: Vec<(Vec<u8>, [i64; 3])> = (0..512)
        .map(|i| {
            let p = [i / 64, (i / 8) % 8, i % 8];
            (hilbert_index(&p), p)
        })
        .collect();
    cube.sort();
    for w in cube.windows(2) {
        let d: i64 = (0..3).map(|i| (w[0].1[i] - w[1].1[i]).abs()).sum();
        assert_eq!(d, 1);
    }
}

#[test]
fn order_keys_sort_nulls_first_then_by_columns() {
    let k = keys(
        &[("a", TypeKind::Int), ("b", TypeKind::VarChar(10))],
        &[],
        OrderType::Order,
        vec![
            Arc::new(Int32Array::from(vec![Some(2), None, Some(1), Some(1)])),
            Arc::new(StringArray::from(vec!["a", "z", "b", "a"])),
        ],
    );
    let mut order: Vec<usize> = (0..4).collect();
    order.sort_by(|&i, &j| k[i].cmp(&k[j]));
    assert_eq!(order, [1, 3, 2, 0]);
}

#[test]
fn bad_orders_are_refused() {
    let s = schema(
        &[
            ("a", TypeKind::Int),
            ("l", TypeKind::Array(Box::new(DataType::new(TypeKind::Int)))),
        ],
        &[],
    );
    let err = |columns: &[&str], order| {
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        RowOrder::new(&s, &names, order).unwrap_err().to_string()
    };
    assert!(err(&["x"], OrderType::ZOrder).contains("Can't find column x"));
    assert!(err(&["a"], OrderType::Hilbert).contains("at least two columns"));
    assert!(err(&["a", "l"], OrderType::ZOrder).contains("column l of type"));
    assert!(err(&[], OrderType::Order).contains("could not be empty"));
}
