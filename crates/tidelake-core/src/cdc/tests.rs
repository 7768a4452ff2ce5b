//! Decoder tests over payloads shaped as the connectors emit them.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::RecordBatch;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use serde_json::json;

use super::*;

fn run(format: Format, messages: &[serde_json::Value]) -> Decoded {
    let texts: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
    decode(
        texts.iter().map(|t| Message {
            key: None,
            value: Some(t.as_bytes()),
        }),
        format,
        OnError::DeadLetter,
    )
    .unwrap()
}

fn kinds(batch: &RecordBatch) -> Vec<&str> {
    batch
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(Option::unwrap)
        .collect()
}

fn field(
    name: &str,
    t: &str,
    logical: Option<&str>,
    params: serde_json::Value,
) -> serde_json::Value {
    let mut f = json!({"field": name, "type": t, "optional": true});
    if let Some(l) = logical {
        f["name"] = json!(l);
    }
    if !params.is_null() {
        f["parameters"] = params;
    }
    f
}

/// Every Debezium logical type, inside the schema envelope.
#[test]
fn debezium_envelope_maps_every_logical_type() {
    let fields = vec![
        field("id", "int32", None, json!(null)),
        field("tiny", "int8", None, json!(null)),
        field("small", "int16", None, json!(null)),
        field("big", "int64", None, json!(null)),
        field("f", "float", None, json!(null)),
        field("d", "double", None, json!(null)),
        field("b", "boolean", None, json!(null)),
        field("s", "string", None, json!(null)),
        field("raw", "bytes", None, json!(null)),
        field(
            "price",
            "bytes",
            Some("org.apache.kafka.connect.data.Decimal"),
            json!({"scale": "2", "connect.decimal.precision": "10"}),
        ),
        field(
            "vsd",
            "struct",
            Some("io.debezium.data.VariableScaleDecimal"),
            json!(null),
        ),
        field("day", "int32", Some("io.debezium.time.Date"), json!(null)),
        field("t_ms", "int32", Some("io.debezium.time.Time"), json!(null)),
        field(
            "t_us",
            "int64",
            Some("io.debezium.time.MicroTime"),
            json!(null),
        ),
        field(
            "t_ns",
            "int64",
            Some("io.debezium.time.NanoTime"),
            json!(null),
        ),
        field(
            "ts_ms",
            "int64",
            Some("io.debezium.time.Timestamp"),
            json!(null),
        ),
        field(
            "ts_us",
            "int64",
            Some("io.debezium.time.MicroTimestamp"),
            json!(null),
        ),
        field(
            "ts_ns",
            "int64",
            Some("io.debezium.time.NanoTimestamp"),
            json!(null),
        ),
        field(
            "zoned",
            "string",
            Some("io.debezium.time.ZonedTimestamp"),
            json!(null),
        ),
        field(
            "bits",
            "bytes",
            Some("io.debezium.data.Bits"),
            json!({"length": "16"}),
        ),
        field("doc", "string", Some("io.debezium.data.Json"), json!(null)),
        field("yr", "int32", Some("io.debezium.time.Year"), json!(null)),
    ];
    let row_schema = json!({"type": "struct", "fields": fields, "optional": true, "name": "srv.inv.products.Value"});
    let envelope_schema = json!({"type": "struct", "fields": [
        merge(&row_schema, json!({"field": "before"})),
        merge(&row_schema, json!({"field": "after"})),
        {"field": "source", "type": "struct", "fields": []},
        {"field": "op", "type": "string"},
    ]});
    let after = json!({
        "id": 1, "tiny": -8, "small": 300, "big": 9_000_000_000i64, "f": 1.5, "d": 2.25, "b": true,
        "s": "héllo", "raw": "AQID", "price": "MDk=", "vsd": {"scale": 3, "value": "/w=="},
        "day": 19782, "t_ms": 3_600_000, "t_us": 3_600_123_000i64, "t_ns": 3_600_123_000_000i64,
        "ts_ms": 1_709_168_523_500i64, "ts_us": 1_709_168_523_500_001i64,
        "ts_ns": 1_709_168_523_500_000_123i64, "zoned": "2024-02-29T02:02:03.25+01:00",
        "bits": "AQI=", "doc": "{\"a\":1}", "yr": 2024
    });
    let message = json!({"schema": envelope_schema, "payload": {
        "before": null, "after": after, "op": "c", "ts_ms": 1,
        "source": {"connector": "mysql", "db": "inv", "table": "products"}
    }});
    let decoded = run(Format::DebeziumJson, &[message]);
    assert!(
        decoded.dead_letters.is_empty(),
        "{:?}",
        decoded.dead_letters
    );
    let t = &decoded.tables[0];
    assert_eq!(
        t.source,
        SourceTable {
            database: "inv".into(),
            table: "products".into()
        }
    );
    let b = &t.batch;
    let col = |n: &str| b.column_by_name(n).unwrap().clone();
    let ty = |n: &str| b.schema().field_with_name(n).unwrap().data_type().clone();
    assert_eq!(kinds(b), ["+I"]);
    assert_eq!(ty("tiny"), ArrowType::Int8);
    assert_eq!(ty("small"), ArrowType::Int16);
    assert_eq!(
        col("big").as_primitive::<Int64Type>().value(0),
        9_000_000_000
    );
    assert_eq!(col("f").as_primitive::<Float32Type>().value(0), 1.5);
    assert_eq!(col("d").as_primitive::<Float64Type>().value(0), 2.25);
    assert!(col("b").as_boolean().value(0));
    assert_eq!(col("s").as_string::<i32>().value(0), "héllo");
    assert_eq!(col("raw").as_binary::<i32>().value(0), [1, 2, 3]);
    // 0x3039 = 12345 unscaled, scale 2
    assert_eq!(ty("price"), ArrowType::Decimal128(10, 2));
    assert_eq!(
        col("price").as_primitive::<Decimal128Type>().value(0),
        12345
    );
    // 0xff = -1 unscaled, scale 3
    assert_eq!(col("vsd").as_string::<i32>().value(0), "-0.001");
    assert_eq!(col("day").as_primitive::<Date32Type>().value(0), 19782);
    assert_eq!(ty("t_us"), ArrowType::Time32(TimeUnit::Millisecond));
    assert_eq!(
        col("t_ms").as_primitive::<Time32MillisecondType>().value(0),
        3_600_000
    );
    assert_eq!(
        col("t_us").as_primitive::<Time32MillisecondType>().value(0),
        3_600_123
    );
    assert_eq!(
        col("t_ns").as_primitive::<Time32MillisecondType>().value(0),
        3_600_123
    );
    assert_eq!(
        col("ts_ms")
            .as_primitive::<TimestampMillisecondType>()
            .value(0),
        1_709_168_523_500
    );
    assert_eq!(
        col("ts_us")
            .as_primitive::<TimestampMicrosecondType>()
            .value(0),
        1_709_168_523_500_001
    );
    assert_eq!(
        col("ts_ns")
            .as_primitive::<TimestampNanosecondType>()
            .value(0),
        1_709_168_523_500_000_123
    );
    // 02:02:03.25 at +01:00 is 01:02:03.25 UTC
    assert_eq!(
        ty("zoned"),
        ArrowType::Timestamp(TimeUnit::Microsecond, None)
    );
    assert_eq!(
        col("zoned")
            .as_primitive::<TimestampMicrosecondType>()
            .value(0),
        1_709_168_523_250_000
    );
    assert_eq!(col("bits").as_binary::<i32>().value(0), [2, 1]);
    assert_eq!(col("doc").as_string::<i32>().value(0), "{\"a\":1}");
    assert_eq!(col("yr").as_primitive::<Int32Type>().value(0), 2024);
}

fn merge(base: &serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    let mut out = base.clone();
    for (k, v) in extra.as_object().unwrap() {
        out[k] = v.clone();
    }
    out
}

/// Without the envelope: types inferred, keys from the message key, updates with before
/// images, deletes, truncates and tombstones.
#[test]
fn debezium_without_envelope_uses_keys_and_before_images() {
    let messages = [
        (
            json!({"id": 1}),
            Some(
                json!({"op": "r", "before": null, "after": {"id": 1, "name": "a", "qty": 2}, "source": {"db": "shop", "table": "items"}}),
            ),
        ),
        (
            json!({"id": 1}),
            Some(
                json!({"op": "u", "before": {"id": 1, "name": "a", "qty": 2}, "after": {"id": 1, "name": "b", "qty": 2.5}, "source": {"db": "shop", "table": "items"}}),
            ),
        ),
        (
            json!({"id": 1}),
            Some(
                json!({"op": "d", "before": {"id": 1, "name": "b", "qty": 2.5}, "after": null, "source": {"db": "shop", "table": "items"}}),
            ),
        ),
        (json!({"id": 1}), None),
        (
            json!(null),
            Some(json!({"op": "t", "source": {"db": "shop", "table": "items"}})),
        ),
    ];
    let texts: Vec<(String, Option<String>)> = messages
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_ref().map(|v| v.to_string())))
        .collect();
    let decoded = decode(
        texts.iter().map(|(k, v)| Message {
            key: Some(k.as_bytes()),
            value: v.as_deref().map(str::as_bytes),
        }),
        Format::DebeziumJson,
        OnError::Fail,
    )
    .unwrap();
    assert_eq!(
        decoded.ignored.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [3, 4]
    );
    let t = &decoded.tables[0];
    assert_eq!(t.primary_keys, ["id"]);
    assert_eq!(kinds(&t.batch), ["+I", "-U", "+U", "-D"]);
    // integers then a fraction in one column: DOUBLE
    let qty = t
        .batch
        .column_by_name("qty")
        .unwrap()
        .as_primitive::<Float64Type>();
    assert_eq!(qty.values().to_vec(), [2.0, 2.0, 2.5, 2.5]);
}

#[test]
fn canal_multi_row_messages_updates_and_ddl() {
    let types = json!({"id": "int(11)", "name": "varchar(20)", "price": "decimal(10,2)", "ok": "tinyint(1)", "at": "datetime(3)", "big": "bigint(20) unsigned"});
    let decoded = run(
        Format::CanalJson,
        &[
            json!({"data": [{"id": "1", "name": "a", "price": "1.50", "ok": "1", "at": "2024-02-29 01:02:03.500", "big": "18446744073709551615"},
                        {"id": "2", "name": null, "price": "2.00", "ok": "0", "at": null, "big": "0"}],
               "database": "db", "table": "t", "isDdl": false, "type": "INSERT", "pkNames": ["id"], "mysqlType": types, "old": null}),
            json!({"data": null, "database": "db", "table": "t", "isDdl": true, "type": "ALTER", "sql": "ALTER TABLE t ADD c INT"}),
            json!({"data": [{"id": "1", "name": "x", "price": "1.50", "ok": "1", "at": "2024-02-29 01:02:03.500", "big": "1"},
                        {"id": "2", "name": "y", "price": "3.00", "ok": "0", "at": null, "big": "0"}],
               "old": [{"name": "a", "big": "18446744073709551615"}, {"name": null, "price": "2.00"}],
               "database": "db", "table": "t", "isDdl": false, "type": "UPDATE", "pkNames": ["id"], "mysqlType": types}),
            json!({"data": [{"id": "2", "name": "y", "price": "3.00", "ok": "0", "at": null, "big": "0"}],
               "database": "db", "table": "t", "isDdl": false, "type": "DELETE", "pkNames": ["id"], "mysqlType": types}),
        ],
    );
    assert_eq!(decoded.ignored.len(), 1);
    assert!(
        decoded.dead_letters.is_empty(),
        "{:?}",
        decoded.dead_letters
    );
    let b = &decoded.tables[0].batch;
    assert_eq!(kinds(b), ["+I", "+I", "-U", "+U", "-U", "+U", "-D"]);
    let ty = |n: &str| b.schema().field_with_name(n).unwrap().data_type().clone();
    assert_eq!(ty("id"), ArrowType::Int32);
    assert_eq!(ty("ok"), ArrowType::Boolean);
    assert_eq!(ty("big"), ArrowType::Decimal128(20, 0));
    assert_eq!(ty("at"), ArrowType::Timestamp(TimeUnit::Millisecond, None));
    let names: Vec<Option<&str>> = b
        .column_by_name("name")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .collect();
    assert_eq!(
        names,
        [
            Some("a"),
            None,
            Some("a"),
            Some("x"),
            None,
            Some("y"),
            Some("y")
        ]
    );
    let price = b
        .column_by_name("price")
        .unwrap()
        .as_primitive::<Decimal128Type>();
    assert_eq!(price.values().to_vec(), [150, 200, 150, 150, 200, 300, 300]);
    let big = b
        .column_by_name("big")
        .unwrap()
        .as_primitive::<Decimal128Type>();
    assert_eq!(big.value(2), 18446744073709551615);
}

#[test]
fn maxwell_and_ogg() {
    let decoded = run(
        Format::MaxwellJson,
        &[
            json!({"database": "test", "table": "e", "type": "insert", "ts": 1, "xid": 8, "commit": true, "data": {"id": 1, "m": 4.2}, "primary_key_columns": ["id"]}),
            json!({"database": "test", "table": "e", "type": "update", "data": {"id": 1, "m": 5.5}, "old": {"m": 4.2}, "primary_key_columns": ["id"]}),
            json!({"database": "test", "table": "e", "type": "delete", "data": {"id": 1, "m": 5.5}, "primary_key_columns": ["id"]}),
            json!({"database": "test", "table": "e", "type": "table-alter", "sql": "alter table e add x int"}),
            json!({"database": "test", "table": "e", "type": "bootstrap-start", "data": {}}),
        ],
    );
    assert_eq!(decoded.ignored.len(), 2);
    let b = &decoded.tables[0].batch;
    assert_eq!(kinds(b), ["+I", "-U", "+U", "-D"]);
    assert_eq!(
        b.column_by_name("m")
            .unwrap()
            .as_primitive::<Float64Type>()
            .values()
            .to_vec(),
        [4.2, 4.2, 5.5, 5.5]
    );

    let decoded = run(
        Format::OggJson,
        &[
            json!({"table": "GG.TCUSTORD", "op_type": "I", "op_ts": "2024-02-29 01:02:03.000000", "pos": "1", "primary_keys": ["ID"], "after": {"ID": 7, "NAME": "a", "QTY": 1}}),
            json!({"table": "GG.TCUSTORD", "op_type": "U", "primary_keys": ["ID"], "before": {"ID": 7, "QTY": 1}, "after": {"ID": 7, "NAME": "a", "QTY": 2}}),
            json!({"table": "GG.TCUSTORD", "op_type": "D", "primary_keys": ["ID"], "before": {"ID": 7, "NAME": "a", "QTY": 2}}),
        ],
    );
    let t = &decoded.tables[0];
    assert_eq!(
        t.source,
        SourceTable {
            database: "GG".into(),
            table: "TCUSTORD".into()
        }
    );
    assert_eq!(kinds(&t.batch), ["+I", "-U", "+U", "-D"]);
    // the partial before image is completed with the after image
    let names: Vec<Option<&str>> = t
        .batch
        .column_by_name("NAME")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .collect();
    assert_eq!(names, [Some("a"); 4]);
}

fn malformed_debezium() -> Vec<String> {
    let ok = |id: i64| {
        json!({"op": "c", "after": {"id": id, "v": "x"}, "source": {"db": "d", "table": "t"}})
            .to_string()
    };
    vec![
        ok(1),
        "{not json".into(),
        json!({"op": "c", "after": {"id": 2}}).to_string(),
        json!({"op": "z", "after": {"id": 3}, "source": {"db": "d", "table": "t"}}).to_string(),
        json!({"op": "c", "after": {"id": "four", "v": "x"}, "source": {"db": "d", "table": "t"}})
            .to_string(),
        json!([1, 2]).to_string(),
        ok(5),
    ]
}

#[test]
fn malformed_messages_fail_with_their_index_or_become_dead_letters() {
    let texts = malformed_debezium();
    let messages = || {
        texts.iter().map(|t| Message {
            key: None,
            value: Some(t.as_bytes()),
        })
    };
    let err = decode(messages(), Format::DebeziumJson, OnError::Fail).unwrap_err();
    assert!(matches!(err, Error::Invalid(_)));
    assert!(
        err.to_string()
            .contains("message 1 is malformed: invalid JSON"),
        "{err}"
    );

    let decoded = decode(messages(), Format::DebeziumJson, OnError::DeadLetter).unwrap();
    let letters: Vec<(usize, &str)> = decoded
        .dead_letters
        .iter()
        .map(|d| (d.index, d.error.as_str()))
        .collect();
    assert_eq!(
        letters.iter().map(|l| l.0).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert!(letters[1].1.contains("no 'source' field"));
    assert!(letters[2].1.contains("unknown op 'z'"));
    // a string in a column earlier messages made BIGINT conflicts; nothing of it is kept
    assert!(letters[3].1.contains("column 'id'"), "{}", letters[3].1);
    assert!(letters[4].1.contains("expected a JSON object"));
    let ids = decoded.tables[0]
        .batch
        .column_by_name("id")
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    assert_eq!(ids, [1, 5]);
}

#[test]
fn bad_values_for_declared_types_are_the_message_problem() {
    let decoded = run(
        Format::CanalJson,
        &[
            json!({"data": [{"id": "1"}, {"id": "x"}], "database": "d", "table": "t", "type": "INSERT", "mysqlType": {"id": "int"}}),
            json!({"data": [{"id": "2"}], "database": "d", "table": "t", "type": "INSERT", "mysqlType": {"id": "int"}}),
        ],
    );
    assert_eq!(decoded.dead_letters.len(), 1);
    assert!(
        decoded.dead_letters[0]
            .error
            .contains("\"x\" is not a valid Int32"),
        "{:?}",
        decoded.dead_letters
    );
    // the whole multi-row message is rejected, not half of it
    assert_eq!(decoded.tables[0].batch.num_rows(), 1);
}

#[test]
fn write_order_keeps_each_keys_changes_in_order() {
    let decoded = run(
        Format::MaxwellJson,
        &[
            json!({"database": "d", "table": "t", "type": "insert", "data": {"id": 1, "v": 1}}),
            json!({"database": "d", "table": "t", "type": "insert", "data": {"id": 2, "v": 1}}),
            json!({"database": "d", "table": "t", "type": "update", "data": {"id": 1, "v": 2}, "old": {"v": 1}}),
            json!({"database": "d", "table": "t", "type": "delete", "data": {"id": 2, "v": 1}}),
            json!({"database": "d", "table": "t", "type": "insert", "data": {"id": 3, "v": 1}}),
        ],
    );
    let order = changelog::write_order(&decoded.tables[0].batch, &["id".to_string()]).unwrap();
    let order: Vec<(&str, Vec<u32>)> = order
        .iter()
        .map(|(k, rows)| (k.short_string(), rows.values().to_vec()))
        .collect();
    // rows: 0 +I id1, 1 +I id2, 2 -U id1, 3 +U id1, 4 -D id2, 5 +I id3
    assert_eq!(
        order,
        [
            ("+I", vec![0, 1, 5]),
            ("-U", vec![2]),
            ("-D", vec![4]),
            ("+U", vec![3])
        ]
    );
}

#[test]
fn times_outside_a_day_are_refused() {
    let schema = json!({"type": "struct", "fields": [
        {"field": "after", "type": "struct", "fields": [field("t", "int64", Some("io.debezium.time.MicroTime"), json!(null))]},
    ]});
    let decoded = run(
        Format::DebeziumJson,
        &[json!({"schema": schema, "payload": {
        "op": "c", "after": {"t": 86_400_000_000i64}, "source": {"db": "d", "table": "t"}}})],
    );
    assert!(
        decoded.dead_letters[0].error.contains("column 't'"),
        "{:?}",
        decoded.dead_letters
    );
}

/// JSON floats decode to the nearest double, as the source wrote them (serde_json's default
/// fast parser is off by one ulp on some inputs).
#[test]
fn floats_round_trip_exactly() {
    let text = "0.49831104197894716";
    let decoded = run(
        Format::MaxwellJson,
        &[json!({"database": "d", "table": "t", "type": "insert",
        "data": {"id": 1, "w": serde_json::Value::from(text.parse::<f64>().unwrap())}})],
    );
    let message = format!(
        r#"{{"database": "d", "table": "t", "type": "insert", "data": {{"id": 1, "w": {text}}}}}"#
    );
    let raw = decode(
        [Message {
            key: None,
            value: Some(message.as_bytes()),
        }],
        Format::MaxwellJson,
        OnError::Fail,
    )
    .unwrap();
    for d in [decoded, raw] {
        let w = d.tables[0]
            .batch
            .column_by_name("w")
            .unwrap()
            .as_primitive::<Float64Type>()
            .value(0);
        assert_eq!(w, text.parse::<f64>().unwrap());
    }
}
