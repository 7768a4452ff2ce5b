//! Oracle GoldenGate JSON (`value.format=ogg-json`): `table` as `SCHEMA.TABLE`, `op_type` `I`,
//! `U`, `D` or `T`, `before` and `after` images (typed JSON values), `primary_keys`.
//!
//! `I` is `+I` of `after`; `U` is `-U` of `before` (completed with `after`'s values for the
//! columns a partial before image leaves out) then `+U` of `after`; `D` is `-D` of `before`;
//! `T` (truncate) carries no rows. Column types are inferred from values.

use serde_json::Value;
use tidelake_spec::row_kind::RowKind;

use super::{
    object_field, overlay, schemaless, str_field, string_list, Parse, Parsed, SourceTable,
};

pub(super) fn parse(message: &Value) -> Parse {
    let op = str_field(message, "op_type")?;
    let before = object_field(message, "before")?;
    let after = object_field(message, "after")?;
    let full_before;
    let images = match op {
        "I" => vec![(RowKind::Insert, after.ok_or("op_type 'I' without 'after'")?)],
        "U" => {
            let after = after.ok_or("op_type 'U' without 'after'")?;
            match before {
                Some(b) => {
                    full_before = overlay(after, b);
                    vec![
                        (RowKind::UpdateBefore, &full_before),
                        (RowKind::UpdateAfter, after),
                    ]
                }
                None => vec![(RowKind::UpdateAfter, after)],
            }
        }
        "D" => vec![(
            RowKind::Delete,
            before.ok_or("op_type 'D' without 'before'")?,
        )],
        "T" => return Ok(Parsed::Ignored("truncate event".into())),
        other => return Err(format!("unknown op_type '{other}'")),
    };
    let table = str_field(message, "table")?;
    let (database, table) = table
        .split_once('.')
        .ok_or_else(|| format!("table '{table}' is not SCHEMA.TABLE"))?;
    let source = SourceTable {
        database: database.to_string(),
        table: table.to_string(),
    };
    let primary_keys = string_list(message.get("primary_keys"), "primary_keys")?;
    schemaless(source, primary_keys, &images).map(Parsed::Change)
}
