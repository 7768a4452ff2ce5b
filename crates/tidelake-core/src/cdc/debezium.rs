//! Debezium JSON (`value.format=debezium-json`): `{"before", "after", "source", "op"}`, alone or
//! inside the `{"schema", "payload"}` envelope of Kafka Connect's JSON converter.
//!
//! Ops: `c` (create) and `r` (snapshot read) are `+I` of `after`; `u` is `-U` of `before` (when
//! the connector sends it) then `+U` of `after`; `d` is `-D` of `before`; `t` (truncate) and `m`
//! (logical decoding message) carry no rows. The source table is `source.db` and
//! `source.table`; primary keys come from a `pkNames` field or from the message key's fields.
//!
//! With the envelope, column types follow the schema of `after` (or `before`), mapped as
//! Paimon's Flink CDC does (`DebeziumSchemaUtils`), except where Paimon loses data: `float64`
//! is DOUBLE (Paimon: FLOAT), a Decimal without precision is DECIMAL(38, scale) (Paimon:
//! DECIMAL(20, 0)), NanoTimestamp is TIMESTAMP(9), Time and NanoTime are TIME (Paimon: INT /
//! BIGINT), and VariableScaleDecimal, whose scale changes per value, is its exact decimal
//! text (STRING). ZonedTimestamp is TIMESTAMP(6) holding the UTC wall-clock time (Paimon
//! converts to the server time zone). TIME columns hold milliseconds, as Paimon stores them.
//! Without the envelope, types are inferred from the JSON values.

use arrow_schema::{DataType as ArrowType, TimeUnit};
use base64::Engine;
use serde_json::{Map, Value};
use tidelake_spec::row_kind::RowKind;

use super::value::{decimal_to_string, parse_text, Cell, MAX_DECIMAL_PRECISION};
use super::{
    kind_of, object_field, schemaless, str_field, string_list, Change, Parse, Parsed, SourceTable,
};

/// How a column's JSON values become cells.
#[derive(Debug, Clone, PartialEq)]
enum Conv {
    /// JSON numbers, booleans or strings stored as the given type.
    Plain,
    /// Base64 bytes.
    Bytes,
    /// Base64 little-endian bits (`io.debezium.data.Bits`), stored most significant byte first.
    Bits,
    /// Base64 big-endian two's-complement unscaled value (or a JSON number / string with
    /// `decimal.format=numeric`).
    Decimal {
        scale: i8,
    },
    /// `{"scale": s, "value": base64}`.
    VariableScaleDecimal,
    Date,
    /// Time of day in this many nanoseconds per unit.
    Time(i64),
    /// Timestamp in this many nanoseconds per unit.
    Timestamp(i64),
    /// ISO-8601 text with an offset.
    ZonedTimestamp,
    /// Structs, arrays, maps and geometries, kept as JSON text.
    JsonText,
}

const MILLIS: i64 = 1_000_000;
const MICROS: i64 = 1_000;
const NANOS: i64 = 1;
const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;

/// The Arrow type and conversion of a field of a Kafka Connect schema.
fn column_type(field: &Value) -> std::result::Result<(ArrowType, Conv), String> {
    let kind = str_field(field, "type")?;
    let logical = field.get("name").and_then(Value::as_str);
    let param = |name: &str| {
        field
            .get("parameters")
            .and_then(|p| p.get(name))
            .and_then(Value::as_str)
    };
    let ms = ArrowType::Time32(TimeUnit::Millisecond);
    Ok(match logical {
        Some("org.apache.kafka.connect.data.Decimal") => {
            let scale: i8 = param("scale")
                .unwrap_or("0")
                .parse()
                .map_err(|_| "Decimal field with a bad 'scale' parameter".to_string())?;
            let precision: u8 = match param("connect.decimal.precision") {
                Some(p) => p
                    .parse()
                    .map_err(|_| "Decimal field with a bad precision parameter".to_string())?,
                None => MAX_DECIMAL_PRECISION,
            };
            if precision > MAX_DECIMAL_PRECISION || scale < 0 || scale as u8 > precision {
                (ArrowType::Utf8, Conv::VariableScaleDecimal)
            } else {
                (
                    ArrowType::Decimal128(precision, scale),
                    Conv::Decimal { scale },
                )
            }
        }
        Some("io.debezium.data.VariableScaleDecimal") => {
            (ArrowType::Utf8, Conv::VariableScaleDecimal)
        }
        Some("io.debezium.time.Date" | "org.apache.kafka.connect.data.Date") => {
            (ArrowType::Date32, Conv::Date)
        }
        Some("io.debezium.time.Time" | "org.apache.kafka.connect.data.Time") => {
            (ms, Conv::Time(MILLIS))
        }
        Some("io.debezium.time.MicroTime") => (ms, Conv::Time(MICROS)),
        Some("io.debezium.time.NanoTime") => (ms, Conv::Time(NANOS)),
        Some("io.debezium.time.Timestamp" | "org.apache.kafka.connect.data.Timestamp") => (
            ArrowType::Timestamp(TimeUnit::Millisecond, None),
            Conv::Timestamp(MILLIS),
        ),
        Some("io.debezium.time.MicroTimestamp") => (
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
            Conv::Timestamp(MICROS),
        ),
        Some("io.debezium.time.NanoTimestamp") => (
            ArrowType::Timestamp(TimeUnit::Nanosecond, None),
            Conv::Timestamp(NANOS),
        ),
        Some("io.debezium.time.ZonedTimestamp") => (
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
            Conv::ZonedTimestamp,
        ),
        Some("io.debezium.data.Bits") => (ArrowType::Binary, Conv::Bits),
        _ => match kind {
            "int8" => (ArrowType::Int8, Conv::Plain),
            "int16" => (ArrowType::Int16, Conv::Plain),
            "int32" => (ArrowType::Int32, Conv::Plain),
            "int64" => (ArrowType::Int64, Conv::Plain),
            "float32" | "float" => (ArrowType::Float32, Conv::Plain),
            "float64" | "double" => (ArrowType::Float64, Conv::Plain),
            "boolean" => (ArrowType::Boolean, Conv::Plain),
            "string" => (ArrowType::Utf8, Conv::Plain),
            "bytes" => (ArrowType::Binary, Conv::Bytes),
            "struct" | "array" | "map" => (ArrowType::Utf8, Conv::JsonText),
            other => return Err(format!("unknown Kafka Connect type '{other}'")),
        },
    })
}

fn base64(v: &Value) -> std::result::Result<Vec<u8>, String> {
    let text = v
        .as_str()
        .ok_or_else(|| format!("expected base64 text, got {}", kind_of(v)))?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("invalid base64 {text:?}: {e}"))
}

/// A big-endian two's-complement integer.
fn signed_be(bytes: &[u8]) -> std::result::Result<i128, String> {
    if bytes.len() > 16 {
        return Err(format!(
            "a {}-byte decimal does not fit 38 digits",
            bytes.len()
        ));
    }
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut full = [if negative { 0xff } else { 0 }; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    Ok(i128::from_be_bytes(full))
}

fn int_of(v: &Value) -> std::result::Result<i64, String> {
    v.as_i64()
        .ok_or_else(|| format!("expected an integer, got {v}"))
}

fn convert(v: &Value, t: &ArrowType, conv: &Conv) -> std::result::Result<Cell, String> {
    if v.is_null() {
        return Ok(Cell::Null);
    }
    Ok(match conv {
        Conv::Plain => match (t, v) {
            (ArrowType::Boolean, Value::Bool(b)) => Cell::Bool(*b),
            (ArrowType::Utf8, Value::String(s)) => Cell::Str(s.clone()),
            (ArrowType::Float32 | ArrowType::Float64, Value::Number(n)) => {
                Cell::Float(n.as_f64().ok_or_else(|| format!("bad number {n}"))?)
            }
            // Kafka Connect writes NaN and infinities as strings
            (ArrowType::Float32 | ArrowType::Float64, Value::String(s)) => parse_text(s, t)?,
            (ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 | ArrowType::Int64, n) => {
                let i = int_of(n)?;
                let fits = match t {
                    ArrowType::Int8 => i8::try_from(i).is_ok(),
                    ArrowType::Int16 => i16::try_from(i).is_ok(),
                    ArrowType::Int32 => i32::try_from(i).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(format!("{i} does not fit {t}"));
                }
                Cell::Int(i)
            }
            (t, v) => return Err(format!("expected a {t} value, got {}", kind_of(v))),
        },
        Conv::Bytes => Cell::Bytes(base64(v)?),
        Conv::Bits => Cell::Bytes(base64(v)?.into_iter().rev().collect()),
        Conv::Decimal { scale } => {
            let unscaled = match v {
                Value::String(_) => signed_be(&base64(v)?)?,
                Value::Number(n) => match parse_text(&n.to_string(), t)? {
                    Cell::Decimal(u, _) => u,
                    other => return Err(format!("bad decimal {other:?}")),
                },
                other => return Err(format!("expected a decimal, got {}", kind_of(other))),
            };
            if let ArrowType::Decimal128(p, _) = t {
                if unscaled.unsigned_abs().to_string().len() > *p as usize {
                    return Err(format!(
                        "decimal {} has more than {p} digits",
                        decimal_to_string(unscaled, *scale)
                    ));
                }
            }
            Cell::Decimal(unscaled, *scale)
        }
        Conv::VariableScaleDecimal => match v {
            Value::Object(o) => {
                let scale = o
                    .get("scale")
                    .and_then(Value::as_i64)
                    .and_then(|s| i8::try_from(s).ok())
                    .ok_or("VariableScaleDecimal without a valid 'scale'")?;
                let value = o
                    .get("value")
                    .ok_or("VariableScaleDecimal without 'value'")?;
                Cell::Str(decimal_to_string(signed_be(&base64(value)?)?, scale))
            }
            // a Decimal too wide for DECIMAL(38): base64 unscaled bytes, kept as text
            Value::String(_) => {
                Cell::Str(base64(v).and_then(|b| signed_be(&b).map(|u| decimal_to_string(u, 0)))?)
            }
            other => {
                return Err(format!(
                    "expected a VariableScaleDecimal, got {}",
                    kind_of(other)
                ))
            }
        },
        Conv::Date => {
            Cell::Date(i32::try_from(int_of(v)?).map_err(|_| format!("date {v} out of range"))?)
        }
        Conv::Time(per) => Cell::Time(
            int_of(v)?
                .checked_mul(*per)
                .filter(|n| (0..NANOS_PER_DAY).contains(n))
                .ok_or_else(|| format!("time {v} is not a time of day"))?,
        ),
        Conv::Timestamp(per) => Cell::Timestamp(
            int_of(v)?
                .checked_mul(*per)
                .ok_or_else(|| format!("timestamp {v} out of range"))?,
        ),
        Conv::ZonedTimestamp => match parse_text(
            v.as_str()
                .ok_or_else(|| format!("expected ISO-8601 text, got {v}"))?,
            &ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        )? {
            // Paimon keeps six fractional digits
            Cell::Timestamp(n) => Cell::Timestamp(n - n.rem_euclid(MICROS)),
            other => other,
        },
        Conv::JsonText => Cell::Str(v.to_string()),
    })
}

/// The primary keys a Debezium key message names: its payload's field names.
fn key_fields(key: &Value) -> Vec<String> {
    let payload = match key.get("payload") {
        Some(p) if key.get("schema").is_some() => p,
        _ => key,
    };
    payload
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

pub(super) fn parse(key: Option<&Value>, message: &Value) -> Parse {
    let (schema, payload) = match (message.get("schema"), message.get("payload")) {
        (Some(schema), Some(payload)) => (Some(schema), payload),
        _ => (None, message),
    };
    if payload.is_null() {
        return Ok(Parsed::Ignored("tombstone (null payload)".into()));
    }
    let op = str_field(payload, "op")?;
    let before = object_field(payload, "before")?;
    let after = object_field(payload, "after")?;
    let images: Vec<(RowKind, &Map<String, Value>)> = match op {
        "c" | "r" => vec![(RowKind::Insert, after.ok_or("op 'c'/'r' without 'after'")?)],
        "u" => {
            let after = after.ok_or("op 'u' without 'after'")?;
            match before {
                Some(b) => vec![(RowKind::UpdateBefore, b), (RowKind::UpdateAfter, after)],
                None => vec![(RowKind::UpdateAfter, after)],
            }
        }
        "d" => vec![(RowKind::Delete, before.ok_or("op 'd' without 'before'")?)],
        "t" => return Ok(Parsed::Ignored("truncate event".into())),
        "m" => return Ok(Parsed::Ignored("logical decoding message".into())),
        other => return Err(format!("unknown op '{other}'")),
    };
    let source_info = payload.get("source").ok_or("no 'source' field")?;
    let source = SourceTable {
        database: str_field(source_info, "db")?.to_string(),
        table: str_field(source_info, "table")?.to_string(),
    };
    let mut primary_keys = string_list(message.get("pkNames"), "pkNames")?;
    if primary_keys.is_empty() {
        primary_keys = key.map(key_fields).unwrap_or_default();
    }
    let Some(schema) = schema else {
        return schemaless(source, primary_keys, &images).map(Parsed::Change);
    };
    let row_schema = schema
        .get("fields")
        .and_then(Value::as_array)
        .and_then(|fields| {
            let image = |name| {
                fields
                    .iter()
                    .find(|f| f.get("field").and_then(Value::as_str) == Some(name))
                    .filter(|f| f.get("fields").is_some())
            };
            image("after").or_else(|| image("before"))
        })
        .ok_or("the schema has no 'after' or 'before' struct")?;
    let fields = row_schema
        .get("fields")
        .and_then(Value::as_array)
        .ok_or("the row schema has no 'fields'")?;
    let mut columns = Vec::with_capacity(fields.len());
    let mut convs = Vec::with_capacity(fields.len());
    for f in fields {
        let name = str_field(f, "field")?;
        let (t, conv) = column_type(f).map_err(|e| format!("field '{name}': {e}"))?;
        columns.push((name.to_string(), t));
        convs.push(conv);
    }
    let mut rows = Vec::with_capacity(images.len());
    for (kind, image) in images {
        if let Some(extra) = image.keys().find(|k| !columns.iter().any(|(c, _)| c == *k)) {
            return Err(format!("column '{extra}' is not in the message's schema"));
        }
        let cells = columns
            .iter()
            .zip(&convs)
            .map(|((name, t), conv)| {
                convert(image.get(name).unwrap_or(&Value::Null), t, conv)
                    .map_err(|e| format!("column '{name}': {e}"))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        rows.push((kind, cells));
    }
    Ok(Parsed::Change(Change {
        source,
        primary_keys,
        columns,
        rows,
    }))
}
