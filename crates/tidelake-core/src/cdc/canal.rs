//! Canal JSON (`value.format=canal-json`): one message per statement, `data` holding every row
//! it changed (all values as strings), `old` the previous values of the changed columns of
//! each updated row, `pkNames`, and column types in `mysqlType` (or JDBC codes in `sqlType`).
//!
//! `INSERT` rows are `+I`; `UPDATE` rows are `-U` (the row with its `old` values) then `+U`;
//! `DELETE` rows are `-D`. DDL messages (`isDdl: true`) carry no rows. Column types follow
//! the MySQL type as Paimon's `MySqlTypeUtils` maps it (`tinyint(1)` BOOLEAN, unsigned types one
//! size up, `bigint unsigned` DECIMAL(20, 0), `datetime(p)`/`timestamp(p)` TIMESTAMP(p), text,
//! JSON, ENUM and SET STRING, binary types BYTES); untyped columns are STRING.

use arrow_schema::{DataType as ArrowType, TimeUnit};
use serde_json::{Map, Value};
use tidelake_spec::row_kind::RowKind;

use super::value::{parse_text, Cell, MAX_DECIMAL_PRECISION};
use super::{kind_of, overlay, str_field, string_list, Change, Parse, Parsed, SourceTable};

fn timestamp_unit(precision: u32) -> TimeUnit {
    match precision {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        _ => TimeUnit::Microsecond,
    }
}

/// The Arrow type of a MySQL column type such as `int(11) unsigned` or `decimal(10,2)`.
pub(super) fn mysql_type(declared: &str) -> ArrowType {
    let lower = declared.trim().to_ascii_lowercase();
    let unsigned = lower.contains("unsigned") || lower.contains("zerofill");
    let (name, args) = match lower.find('(') {
        Some(open) => {
            let close = lower[open..].find(')').map_or(lower.len(), |c| open + c);
            (lower[..open].trim(), &lower[open + 1..close])
        }
        None => (lower.split_whitespace().next().unwrap_or(""), ""),
    };
    let nums: Vec<u32> = args
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    let first = nums.first().copied();
    match name {
        "tinyint" if first == Some(1) && !unsigned => ArrowType::Boolean,
        "bool" | "boolean" => ArrowType::Boolean,
        "bit" if first.unwrap_or(1) == 1 => ArrowType::Boolean,
        "bit" => ArrowType::Binary,
        "tinyint" if unsigned => ArrowType::Int16,
        "tinyint" => ArrowType::Int8,
        "smallint" if unsigned => ArrowType::Int32,
        "smallint" => ArrowType::Int16,
        "mediumint" => ArrowType::Int32,
        "int" | "integer" if unsigned => ArrowType::Int64,
        "int" | "integer" => ArrowType::Int32,
        "bigint" if unsigned => ArrowType::Decimal128(20, 0),
        "bigint" => ArrowType::Int64,
        "float" => ArrowType::Float32,
        "double" | "real" | "double precision" => ArrowType::Float64,
        "decimal" | "numeric" | "dec" | "fixed" => {
            let precision = first.unwrap_or(10);
            let scale = nums.get(1).copied().unwrap_or(0);
            if precision > MAX_DECIMAL_PRECISION as u32 {
                ArrowType::Utf8
            } else {
                ArrowType::Decimal128(precision as u8, scale as i8)
            }
        }
        "date" => ArrowType::Date32,
        "datetime" | "timestamp" => ArrowType::Timestamp(timestamp_unit(first.unwrap_or(0)), None),
        "time" => ArrowType::Time32(TimeUnit::Millisecond),
        "year" => ArrowType::Int32,
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
            ArrowType::Binary
        }
        _ => ArrowType::Utf8,
    }
}

/// The Arrow type of a `java.sql.Types` code.
fn jdbc_type(code: i64) -> ArrowType {
    match code {
        -7 | 16 => ArrowType::Boolean,
        -6 => ArrowType::Int8,
        5 => ArrowType::Int16,
        4 => ArrowType::Int32,
        -5 => ArrowType::Int64,
        6 | 7 => ArrowType::Float32,
        8 => ArrowType::Float64,
        91 => ArrowType::Date32,
        92 => ArrowType::Time32(TimeUnit::Millisecond),
        93 => ArrowType::Timestamp(TimeUnit::Microsecond, None),
        -2 | -3 | -4 | 2004 => ArrowType::Binary,
        _ => ArrowType::Utf8,
    }
}

fn cell(v: &Value, t: &ArrowType) -> std::result::Result<Cell, String> {
    match v {
        Value::Null => Ok(Cell::Null),
        Value::String(s) => parse_text(s, t),
        Value::Number(_) | Value::Bool(_) => parse_text(&v.to_string(), t),
        other => Err(format!("expected a string value, got {}", kind_of(other))),
    }
}

fn rows_of<'v>(
    message: &'v Value,
    name: &str,
) -> std::result::Result<Vec<&'v Map<String, Value>>, String> {
    match message.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_object()
                    .ok_or_else(|| format!("'{name}' holds {}, not an object", kind_of(i)))
            })
            .collect(),
        Some(other) => Err(format!("'{name}' is {}, not an array", kind_of(other))),
    }
}

pub(super) fn parse(message: &Value) -> Parse {
    if message.get("isDdl").and_then(Value::as_bool) == Some(true) {
        return Ok(Parsed::Ignored("DDL statement".into()));
    }
    let kind = str_field(message, "type")?;
    let data = rows_of(message, "data")?;
    let old = rows_of(message, "old")?;
    let images: Vec<(RowKind, Map<String, Value>)> = match kind {
        "INSERT" => data
            .iter()
            .map(|r| (RowKind::Insert, (*r).clone()))
            .collect(),
        "DELETE" => data
            .iter()
            .map(|r| (RowKind::Delete, (*r).clone()))
            .collect(),
        "UPDATE" => {
            if !old.is_empty() && old.len() != data.len() {
                return Err(format!(
                    "'old' has {} rows but 'data' has {}",
                    old.len(),
                    data.len()
                ));
            }
            let mut images = Vec::with_capacity(2 * data.len());
            for (i, after) in data.iter().enumerate() {
                if let Some(previous) = old.get(i) {
                    images.push((RowKind::UpdateBefore, overlay(after, previous)));
                }
                images.push((RowKind::UpdateAfter, (*after).clone()));
            }
            images
        }
        other => return Err(format!("unknown type '{other}' in a non-DDL message")),
    };
    if images.is_empty() {
        return Err(format!("{kind} message without 'data' rows"));
    }
    let source = SourceTable {
        database: str_field(message, "database")?.to_string(),
        table: str_field(message, "table")?.to_string(),
    };
    let primary_keys = string_list(message.get("pkNames"), "pkNames")?;
    let mut columns: Vec<(String, ArrowType)> = Vec::new();
    match (message.get("mysqlType"), message.get("sqlType")) {
        (Some(Value::Object(types)), _) => {
            for (name, t) in types {
                let t = t
                    .as_str()
                    .ok_or_else(|| format!("mysqlType of '{name}' is not a string"))?;
                columns.push((name.clone(), mysql_type(t)));
            }
        }
        (_, Some(Value::Object(types))) => {
            for (name, code) in types {
                let code = code
                    .as_i64()
                    .ok_or_else(|| format!("sqlType of '{name}' is not an integer"))?;
                columns.push((name.clone(), jdbc_type(code)));
            }
        }
        _ => {}
    }
    for (_, image) in &images {
        for name in image.keys() {
            if !columns.iter().any(|(c, _)| c == name) {
                columns.push((name.clone(), ArrowType::Utf8));
            }
        }
    }
    let rows = images
        .iter()
        .map(|(kind, image)| {
            let cells = columns
                .iter()
                .map(|(name, t)| {
                    cell(image.get(name).unwrap_or(&Value::Null), t)
                        .map_err(|e| format!("column '{name}': {e}"))
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok((*kind, cells))
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(Parsed::Change(Change {
        source,
        primary_keys,
        columns,
        rows,
    }))
}
