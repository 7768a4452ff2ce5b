//! Change data capture: database changelog messages in Debezium, Canal, Maxwell or OGG JSON
//! decoded into changelog batches, one per source table, ready to be written with row kinds.
//!
//! [`decode`] parses each message on its own ([`debezium`], [`canal`], [`maxwell`], [`ogg`] each
//! know one format) into the rows it carries, with their row kinds (`+I`; `-U` from the before
//! image and `+U` for updates; `-D`), its source table, the primary keys the message names and
//! the Arrow type of each column (declared by the message where the format declares types,
//! otherwise inferred from the JSON values). Rows of one source table are gathered into one
//! [`TableChanges`] whose batch has the [`ROW_KIND_COLUMN`] first, then the source columns in
//! the order they were first seen, typed with the narrowest type holding every message's values
//! (Arrow's `Null` type for a column of schemaless messages that only ever held null: its type
//! is not known yet).
//!
//! Invariants: every message is accounted for: it adds rows, is ignored for a stated reason
//! (tombstones, DDL, truncate events: [`Decoded::ignored`]), or is malformed; a malformed
//! message (bad JSON, missing fields, a value that does not fit its type, a type that conflicts
//! with earlier messages of its table) either fails the whole decode with an error naming its
//! index ([`OnError::Fail`]) or is returned in [`Decoded::dead_letters`] and contributes nothing
//! ([`OnError::DeadLetter`]); it never half-applies.
//!
//! [`changelog`] turns decoded batches into writes: the schema changes a table needs to take
//! them, and the order of fixed-kind writes that keeps each key's changes in order.

mod canal;
pub mod changelog;
mod debezium;
mod maxwell;
mod ogg;
pub mod value;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use serde_json::{Map, Value};
use tidelake_spec::row_kind::RowKind;

use crate::error::{Error, Result};
use value::{build_column, inferred, merge_types, Cell};

/// The column of decoded batches holding each row's kind (`+I`, `-U`, `+U`, `-D`).
pub const ROW_KIND_COLUMN: &str = "_row_kind";

/// A message format (named as Paimon's `value.format` option names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    DebeziumJson,
    CanalJson,
    MaxwellJson,
    OggJson,
}

impl Format {
    pub const NAMES: [(&'static str, Format); 4] = [
        ("debezium-json", Format::DebeziumJson),
        ("canal-json", Format::CanalJson),
        ("maxwell-json", Format::MaxwellJson),
        ("ogg-json", Format::OggJson),
    ];

    pub fn parse(name: &str) -> Result<Format> {
        Format::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::NAMES.iter().map(|(n, _)| *n).collect();
                Error::invalid(format!(
                    "unknown CDC format '{name}'; formats are {}",
                    names.join(", ")
                ))
            })
    }

    pub fn name(self) -> &'static str {
        Format::NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .expect("every format is named")
    }
}

/// What happens to a malformed message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// The decode fails with [`Error::Invalid`] naming the message's index and its problem.
    Fail,
    /// The message is returned in [`Decoded::dead_letters`] and the others are decoded.
    DeadLetter,
}

impl OnError {
    pub fn parse(name: &str) -> Result<OnError> {
        match name {
            "fail" => Ok(OnError::Fail),
            "dead_letter" => Ok(OnError::DeadLetter),
            other => Err(Error::invalid(format!(
                "on_error must be 'fail' or 'dead_letter', got '{other}'"
            ))),
        }
    }
}

/// One message: its value and, for Debezium, the key it was published with (the source
/// table's primary key, when the value does not name it). A missing or empty value is a
/// tombstone.
#[derive(Debug, Clone, Copy, Default)]
pub struct Message<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// A table of the source database.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceTable {
    pub database: String,
    pub table: String,
}

/// The decoded rows of one source table.
#[derive(Debug, Clone)]
pub struct TableChanges {
    pub source: SourceTable,
    /// Primary keys named by the messages (empty when none did).
    pub primary_keys: Vec<String>,
    /// [`ROW_KIND_COLUMN`] (strings, not null) then the source columns (nullable).
    pub batch: RecordBatch,
}

/// A malformed message: its index in the input and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub index: usize,
    pub error: String,
}

/// What a decode produced.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    /// One entry per source table, in order of first appearance.
    pub tables: Vec<TableChanges>,
    pub dead_letters: Vec<DeadLetter>,
    /// Well-formed messages that carry no row change: (index, why).
    pub ignored: Vec<(usize, String)>,
}

/// The rows one message carries for one table, cells aligned with `columns`.
#[derive(Debug)]
struct Change {
    source: SourceTable,
    primary_keys: Vec<String>,
    columns: Vec<(String, ArrowType)>,
    rows: Vec<(RowKind, Vec<Cell>)>,
}

/// What a format parser makes of one message.
#[derive(Debug)]
enum Parsed {
    Change(Change),
    Ignored(String),
}

/// A format parser's verdict; `Err` describes why the message is malformed.
type Parse = std::result::Result<Parsed, String>;

/// Decode `messages` of `format`.
pub fn decode<'a>(
    messages: impl IntoIterator<Item = Message<'a>>,
    format: Format,
    on_error: OnError,
) -> Result<Decoded> {
    let mut out = Decoded::default();
    let mut tables: Vec<Accumulator> = Vec::new();
    let mut by_source: HashMap<SourceTable, usize> = HashMap::new();
    for (index, message) in messages.into_iter().enumerate() {
        let outcome = parse_message(message, format).and_then(|parsed| match parsed {
            Parsed::Ignored(reason) => {
                out.ignored.push((index, reason));
                Ok(())
            }
            Parsed::Change(change) => {
                let at = *by_source.entry(change.source.clone()).or_insert_with(|| {
                    tables.push(Accumulator::new(change.source.clone()));
                    tables.len() - 1
                });
                tables[at].add(change)
            }
        });
        if let Err(error) = outcome {
            match on_error {
                OnError::Fail => {
                    return Err(Error::invalid(format!(
                        "{} message {index} is malformed: {error}",
                        format.name()
                    )))
                }
                OnError::DeadLetter => out.dead_letters.push(DeadLetter { index, error }),
            }
        }
    }
    out.tables = tables
        .into_iter()
        .map(Accumulator::finish)
        .collect::<Result<_>>()?;
    Ok(out)
}

fn parse_message(message: Message<'_>, format: Format) -> Parse {
    let value = match message.value {
        None => return Ok(Parsed::Ignored("tombstone (no value)".into())),
        Some(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {
            return Ok(Parsed::Ignored("tombstone (no value)".into()))
        }
        Some(bytes) => json(bytes)?,
    };
    if value.is_null() {
        return Ok(Parsed::Ignored("tombstone (null value)".into()));
    }
    if !value.is_object() {
        return Err(format!("expected a JSON object, got {}", kind_of(&value)));
    }
    match format {
        Format::DebeziumJson => {
            let key = match message.key {
                Some(k) if !k.iter().all(u8::is_ascii_whitespace) => Some(json(k)?),
                _ => None,
            };
            debezium::parse(key.as_ref(), &value)
        }
        Format::CanalJson => canal::parse(&value),
        Format::MaxwellJson => maxwell::parse(&value),
        Format::OggJson => ogg::parse(&value),
    }
}

fn json(bytes: &[u8]) -> std::result::Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The string field `name` of `v`.
fn str_field<'v>(v: &'v Value, name: &str) -> std::result::Result<&'v str, String> {
    match v.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(format!("no '{name}' field")),
        Some(other) => Err(format!("'{name}' is {}, not a string", kind_of(other))),
    }
}

/// The object field `name` of `v`, `None` when absent or null.
fn object_field<'v>(
    v: &'v Value,
    name: &str,
) -> std::result::Result<Option<&'v Map<String, Value>>, String> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(format!("'{name}' is {}, not an object", kind_of(other))),
    }
}

/// A list of strings (primary key names), empty when absent or null.
fn string_list(v: Option<&Value>, what: &str) -> std::result::Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("'{what}' holds {}, not a string", kind_of(i)))
            })
            .collect(),
        Some(other) => Err(format!("'{what}' is {}, not an array", kind_of(other))),
    }
}

/// The before image of an update from its after image and the old values of the changed
/// columns (Canal's and Maxwell's `old`, OGG's partial `before`).
fn overlay(after: &Map<String, Value>, old: &Map<String, Value>) -> Map<String, Value> {
    let mut before = after.clone();
    for (k, v) in old {
        before.insert(k.clone(), v.clone());
    }
    before
}

/// A change from untyped JSON images: columns in order of first appearance, types inferred
/// from the values.
fn schemaless(
    source: SourceTable,
    primary_keys: Vec<String>,
    images: &[(RowKind, &Map<String, Value>)],
) -> std::result::Result<Change, String> {
    let mut columns: Vec<(String, ArrowType)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (_, image) in images {
        for name in image.keys() {
            index.entry(name).or_insert_with(|| {
                columns.push((name.clone(), ArrowType::Null));
                columns.len() - 1
            });
        }
    }
    let mut rows = Vec::with_capacity(images.len());
    for (kind, image) in images {
        let mut cells = vec![Cell::Null; columns.len()];
        for (name, v) in image.iter() {
            let i = index[name.as_str()];
            let (t, cell) = inferred(v);
            columns[i].1 = merge_types(&columns[i].1, &t).ok_or_else(|| {
                format!(
                    "column '{name}' holds {} and {t} values in one message",
                    columns[i].1
                )
            })?;
            cells[i] = cell;
        }
        rows.push((*kind, cells));
    }
    Ok(Change {
        source,
        primary_keys,
        columns,
        rows,
    })
}

/// The rows of one source table gathered so far, column-major.
struct Accumulator {
    source: SourceTable,
    primary_keys: Vec<String>,
    columns: Vec<(String, ArrowType)>,
    index: HashMap<String, usize>,
    cells: Vec<Vec<Cell>>,
    kinds: Vec<RowKind>,
}

impl Accumulator {
    fn new(source: SourceTable) -> Self {
        Accumulator {
            source,
            primary_keys: Vec::new(),
            columns: Vec::new(),
            index: HashMap::new(),
            cells: Vec::new(),
            kinds: Vec::new(),
        }
    }

    /// Add a message's rows, or nothing when they conflict with earlier messages.
    fn add(&mut self, change: Change) -> std::result::Result<(), String> {
        if let Some(key) = change
            .primary_keys
            .iter()
            .find(|k| !change.columns.iter().any(|(c, _)| c == *k))
        {
            return Err(format!(
                "primary key '{key}' is not among the row's columns"
            ));
        }
        if !change.primary_keys.is_empty()
            && !self.primary_keys.is_empty()
            && change.primary_keys != self.primary_keys
        {
            return Err(format!(
                "primary keys {:?} of {}.{} differ from {:?} named by earlier messages",
                change.primary_keys, self.source.database, self.source.table, self.primary_keys
            ));
        }
        if change
            .rows
            .iter()
            .any(|(_, r)| r.len() != change.columns.len())
        {
            return Err("a row does not match its columns".into());
        }
        let mut merged = Vec::with_capacity(change.columns.len());
        for (name, t) in &change.columns {
            let known = self.index.get(name).map(|&i| &self.columns[i].1);
            merged.push(match known {
                None => t.clone(),
                Some(k) => merge_types(k, t).ok_or_else(|| {
                    format!("column '{name}' is {t} here but {k} in earlier messages")
                })?,
            });
        }
        if self.primary_keys.is_empty() {
            self.primary_keys = change.primary_keys.clone();
        }
        let before = self.kinds.len();
        let mut slots = Vec::with_capacity(change.columns.len());
        for ((name, _), t) in change.columns.into_iter().zip(merged) {
            let i = match self.index.get(&name) {
                Some(&i) => i,
                None => {
                    self.index.insert(name.clone(), self.columns.len());
                    self.columns.push((name, ArrowType::Null));
                    self.cells.push(vec![Cell::Null; before]);
                    self.columns.len() - 1
                }
            };
            self.columns[i].1 = t;
            slots.push(i);
        }
        for (kind, row) in change.rows {
            self.kinds.push(kind);
            for (slot, cell) in slots.iter().zip(row) {
                self.cells[*slot].push(cell);
            }
            for column in &mut self.cells {
                if column.len() < self.kinds.len() {
                    column.push(Cell::Null);
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<TableChanges> {
        let mut fields = vec![Field::new(ROW_KIND_COLUMN, ArrowType::Utf8, false)];
        let kinds: StringArray = self.kinds.iter().map(|k| Some(k.short_string())).collect();
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(kinds)];
        for ((name, t), cells) in self.columns.into_iter().zip(self.cells) {
            let array = build_column(&cells, &t).map_err(|e| {
                Error::Internal(format!(
                    "decoded column '{name}' of {}.{}: {e}",
                    self.source.database, self.source.table
                ))
            })?;
            fields.push(Field::new(name, t, true));
            arrays.push(array);
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| Error::arrow("building a decoded CDC batch", e))?;
        Ok(TableChanges {
            source: self.source,
            primary_keys: self.primary_keys,
            batch,
        })
    }
}

#[cfg(test)]
mod tests;
