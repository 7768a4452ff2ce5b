//! Maxwell JSON (`value.format=maxwell-json`): one row per message, `data` the row after the
//! change (typed JSON values), `old` the previous values of the changed columns of an update,
//! `primary_key_columns` the key (with Maxwell's `output_primary_key_columns`).
//!
//! `insert` and `bootstrap-insert` are `+I`; `update` is `-U` (the row with its `old` values)
//! then `+U`; `delete` is `-D`. Bootstrap markers and schema-change messages (`table-create`,
//! `table-alter`, `database-create`, ...) carry no rows. Column types are inferred from values.

use serde_json::Value;
use tidelake_spec::row_kind::RowKind;

use super::{
    object_field, overlay, schemaless, str_field, string_list, Parse, Parsed, SourceTable,
};

pub(super) fn parse(message: &Value) -> Parse {
    let kind = str_field(message, "type")?;
    let data = object_field(message, "data")?;
    let after = || data.ok_or_else(|| format!("'{kind}' message without 'data'"));
    let before;
    let images = match kind {
        "insert" | "bootstrap-insert" => vec![(RowKind::Insert, after()?)],
        "delete" => vec![(RowKind::Delete, after()?)],
        "update" => match object_field(message, "old")? {
            Some(old) => {
                before = overlay(after()?, old);
                vec![
                    (RowKind::UpdateBefore, &before),
                    (RowKind::UpdateAfter, after()?),
                ]
            }
            None => vec![(RowKind::UpdateAfter, after()?)],
        },
        "bootstrap-start" | "bootstrap-complete" => {
            return Ok(Parsed::Ignored(format!("{kind} marker")))
        }
        ddl if ddl.starts_with("table-") || ddl.starts_with("database-") => {
            return Ok(Parsed::Ignored(format!("schema change ({ddl})")))
        }
        other => return Err(format!("unknown type '{other}'")),
    };
    let source = SourceTable {
        database: str_field(message, "database")?.to_string(),
        table: str_field(message, "table")?.to_string(),
    };
    let primary_keys = string_list(message.get("primary_key_columns"), "primary_key_columns")?;
    schemaless(source, primary_keys, &images).map(Parsed::Change)
}
