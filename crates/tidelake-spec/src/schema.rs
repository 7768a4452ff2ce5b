//! `schema/schema-N` files: a table's columns, keys and options (Java `TableSchema`,
//! `SchemaSerializer`).
//!
//! Reading applies Java's compatibility rules: a missing `version` means 1; version <= 1
//! without `bucket` means `bucket=1`; version <= 2 without `file.format` means `orc`; a
//! missing `timeMillis` means 0. A JSON null `comment` (pypaimon writes one) is no comment
//! (Java would read the text "null").
//!
//! Writing follows Java's member order (`version`, `id`, `fields`, `highestFieldId`,
//! `partitionKeys`, `primaryKeys`, `options`, [`comment`], `timeMillis`), omits a missing
//! comment as Java does, and pretty-prints with 2-space indentation and `"key": value`, i.e.
//! the bytes pypaimon's `json.dumps(indent=2, ensure_ascii=False)` produces. Types use Java's
//! spelling (see [`crate::type_json`]).
//!
//! Invariants checked on read and by [`TableSchema::validate`]: unique top-level names,
//! partition and primary keys name top-level columns, primary keys are not all partition keys,
//! `bucket-key` columns exist, are not partition keys and lie within the primary key, and the
//! `bucket` option is an integer. [`TableSchema::validate`] (create and alter) also checks, as
//! Java's `SchemaValidation`, that `record-level.time-field` names a column of a type
//! record-level expiry accepts ([`crate::options::is_record_time_type`]).

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::options::{is_record_time_type, Options, RECORD_LEVEL_TIME_FIELD};
use crate::type_json::{field_from_json, field_to_json};
use crate::types::{DataField, DataType, TypeKind};

/// Schema file format version written by current Paimon.
pub const CURRENT_VERSION: i32 = 3;
/// Field ids at or above this are Paimon system fields (`_KEY_*`, `_SEQUENCE_NUMBER`, ...).
pub const SYSTEM_FIELD_ID_START: i32 = i32::MAX / 2;

/// Prefix of the key columns of primary-key data files (`_KEY_<column>`; Java
/// `SpecialFields.KEY_FIELD_PREFIX`).
pub const KEY_FIELD_PREFIX: &str = "_KEY_";
/// Name of the sequence-number system column of primary-key data files.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
/// Name of the row-kind system column of primary-key data files (codes of
/// [`crate::row_kind::RowKind`]).
pub const VALUE_KIND: &str = "_VALUE_KIND";
/// Field id of `_SEQUENCE_NUMBER` in data files (Java `SpecialFields.SEQUENCE_NUMBER`).
pub const SEQUENCE_NUMBER_FIELD_ID: i32 = i32::MAX - 1;
/// Field id of `_VALUE_KIND` in data files (Java `SpecialFields.VALUE_KIND`).
pub const VALUE_KIND_FIELD_ID: i32 = i32::MAX - 2;
/// Name of the row-kind column of the `$audit_log` system table.
pub const ROW_KIND: &str = "rowkind";
/// Paimon's system column names (Java `SpecialFields.SYSTEM_FIELD_NAMES`).
pub const SYSTEM_FIELD_NAMES: [&str; 5] =
    [SEQUENCE_NUMBER, VALUE_KIND, "_LEVEL", ROW_KIND, "_ROW_ID"];

const WHAT: &str = "schema";

/// Name and field id of the data-file key column of `field` (Java
/// `SpecialFields.KEY_FIELD_PREFIX` and `KEY_FIELD_ID_START`).
pub fn key_field_name_and_id(field: &DataField) -> (String, i32) {
    (
        format!("{KEY_FIELD_PREFIX}{}", field.name),
        field.id.wrapping_add(SYSTEM_FIELD_ID_START),
    )
}

/// Refuse a name a table column cannot be given (at create, add or rename; Java
/// `SchemaValidation` checks top-level names): a system column name, the `_KEY_` prefix of
/// key columns (either would be confused with Paimon's own columns in data files), or a NUL
/// character (which C-string consumers would truncate). [`Error::Invalid`] naming the column.
pub fn check_column_name(name: &str) -> Result<()> {
    let problem = if SYSTEM_FIELD_NAMES.contains(&name) {
        format!(
            "it is a Paimon system column ({})",
            SYSTEM_FIELD_NAMES.join(", ")
        )
    } else if name.starts_with(KEY_FIELD_PREFIX) {
        format!("names starting with {KEY_FIELD_PREFIX} are reserved for Paimon's key columns")
    } else if name.contains('\0') {
        "it contains a NUL character".to_string()
    } else {
        return Ok(());
    };
    Err(Error::Invalid(format!(
        "column name {name:?} is not allowed: {problem}"
    )))
}

/// One version of a table's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// Schema file format version (not the schema id).
    pub version: i32,
    /// Schema id, the N of `schema-N`.
    pub id: i64,
    pub fields: Vec<DataField>,
    /// Largest field id ever assigned, nested fields and dropped columns included.
    pub highest_field_id: i32,
    pub partition_keys: Vec<String>,
    pub primary_keys: Vec<String>,
    pub options: Options,
    pub comment: Option<String>,
    /// Creation time of this schema version, epoch milliseconds.
    pub time_millis: i64,
}

impl TableSchema {
    /// A current-version schema whose `highest_field_id` is computed from `fields`; no comment,
    /// `time_millis` 0. Fails with [`Error::Invalid`] when the keys or options are inconsistent.
    pub fn new(
        id: i64,
        fields: Vec<DataField>,
        partition_keys: Vec<String>,
        primary_keys: Vec<String>,
        options: Options,
    ) -> Result<Self> {
        let schema = TableSchema {
            version: CURRENT_VERSION,
            id,
            highest_field_id: highest_field_id(&fields),
            fields,
            partition_keys,
            primary_keys,
            options,
            comment: None,
            time_millis: 0,
        };
        schema.validate()?;
        Ok(schema)
    }

    /// Decodes a schema file.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let json: Value = serde_json::from_slice(bytes).map_err(corrupt)?;
        let Value::Object(object) = json else {
            return Err(corrupt("not a JSON object"));
        };
        let version = match object.get("version") {
            None => 1,
            Some(v) => json_i32(v, "version")?,
        };
        let id = json_i64(required(&object, "id")?, "id")?;
        let Value::Array(field_items) = required(&object, "fields")? else {
            return Err(corrupt("'fields' is not an array"));
        };
        let fields = field_items
            .iter()
            .map(|item| {
                field_from_json(item).map_err(|e| match e {
                    Error::Corrupt { reason, .. } => corrupt(reason),
                    other => other,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let highest_field_id = json_i32(required(&object, "highestFieldId")?, "highestFieldId")?;
        let partition_keys = string_list(required(&object, "partitionKeys")?, "partitionKeys")?;
        let primary_keys = string_list(required(&object, "primaryKeys")?, "primaryKeys")?;
        let Value::Object(option_members) = required(&object, "options")? else {
            return Err(corrupt("'options' is not an object"));
        };
        let mut options = Options::new();
        for (key, value) in option_members {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return Err(corrupt(format!("option '{key}' has value {other}"))),
            };
            options.set(key.clone(), text);
        }
        if version <= 1 && !options.contains_key(crate::options::BUCKET) {
            options.set(crate::options::BUCKET, "1");
        }
        if version <= 2 && !options.contains_key(crate::options::FILE_FORMAT) {
            options.set(crate::options::FILE_FORMAT, "orc");
        }
        let comment = match object.get("comment") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(corrupt(format!("'comment' is not a string: {other}"))),
        };
        let time_millis = match object.get("timeMillis") {
            None => 0,
            Some(v) => json_i64(v, "timeMillis")?,
        };
        let schema = TableSchema {
            version,
            id,
            fields,
            highest_field_id,
            partition_keys,
            primary_keys,
            options,
            comment,
            time_millis,
        };
        schema.check().map_err(corrupt)?;
        Ok(schema)
    }

    /// Encodes the schema file (pretty-printed, no trailing newline).
    pub fn to_json(&self) -> String {
        let mut object = Map::new();
        object.insert("version".into(), Value::from(self.version));
        object.insert("id".into(), Value::from(self.id));
        let mut schema = self.to_create_json();
        object.insert("fields".into(), schema["fields"].take());
        object.insert("highestFieldId".into(), Value::from(self.highest_field_id));
        for key in ["partitionKeys", "primaryKeys", "options", "comment"] {
            if let Some(value) = schema.get_mut(key) {
                object.insert(key.into(), value.take());
            }
        }
        object.insert("timeMillis".into(), Value::from(self.time_millis));
        pretty_json(&Value::Object(object))
    }

    /// The schema as Java's `Schema` JSON, what creating a table takes (a REST catalog's
    /// create-table request): fields, partition and primary keys, options, comment if any.
    pub fn to_create_json(&self) -> Value {
        let strings = |items: &[String]| Value::from(items.to_vec());
        let mut object = Map::new();
        object.insert(
            "fields".into(),
            Value::Array(self.fields.iter().map(field_to_json).collect()),
        );
        object.insert("partitionKeys".into(), strings(&self.partition_keys));
        object.insert("primaryKeys".into(), strings(&self.primary_keys));
        let options: Map<String, Value> = self
            .options
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect();
        object.insert("options".into(), Value::Object(options));
        if let Some(comment) = &self.comment {
            object.insert("comment".into(), Value::from(comment.as_str()));
        }
        Value::Object(object)
    }

    /// Checks the invariants listed in the module documentation ([`Error::Invalid`]).
    pub fn validate(&self) -> Result<()> {
        self.check().map_err(Error::Invalid)?;
        self.options.bucket()?;
        self.check_record_time_field()
    }

    /// `record-level.time-field`, when set, names a column of a type record-level expiry
    /// accepts (Java `SchemaValidation`).
    fn check_record_time_field(&self) -> Result<()> {
        if let Some(name) = self.options.record_level_time_field() {
            self.record_time_field(name)?;
        }
        Ok(())
    }

    /// The column `name` as record-level expiry's time field: [`Error::Invalid`] naming
    /// `record-level.time-field` when it is not a column or of a type expiry does not accept.
    pub fn record_time_field(&self, name: &str) -> Result<&DataField> {
        let field = self.field(name).ok_or_else(|| {
            Error::Invalid(format!(
                "option '{RECORD_LEVEL_TIME_FIELD}' names '{name}', which is not a column"
            ))
        })?;
        if !is_record_time_type(&field.data_type.kind) {
            return Err(Error::Invalid(format!(
                "option '{RECORD_LEVEL_TIME_FIELD}': column '{name}' is {}, not INT, BIGINT, \
                 TIMESTAMP or TIMESTAMP_LTZ",
                field.data_type
            )));
        }
        Ok(field)
    }

    fn check(&self) -> std::result::Result<(), String> {
        for (i, field) in self.fields.iter().enumerate() {
            if self.fields[..i].iter().any(|f| f.name == field.name) {
                return Err(format!("duplicate column '{}'", field.name));
            }
        }
        for (role, keys) in [
            ("partition", &self.partition_keys),
            ("primary", &self.primary_keys),
        ] {
            if let Some(missing) = keys.iter().find(|k| self.field(k).is_none()) {
                return Err(format!("{role} key '{missing}' is not a column"));
            }
        }
        if !self.primary_keys.is_empty() && self.trimmed_primary_keys().is_empty() {
            return Err(format!(
                "primary key {:?} must not equal the partition keys {:?}",
                self.primary_keys, self.partition_keys
            ));
        }
        let upsert_key = self.options.upsert_key();
        if !upsert_key.is_empty() && !self.primary_keys.is_empty() {
            return Err(format!(
                "Cannot define 'upsert-key' {upsert_key:?} with 'primary-key' {:?}.",
                self.primary_keys
            ));
        }
        for key in &upsert_key {
            let Some(field) = self.field(key) else {
                return Err(format!("upsert key '{key}' is not a column"));
            };
            if matches!(
                field.data_type.kind,
                TypeKind::Array(_) | TypeKind::Multiset(_) | TypeKind::Map(..) | TypeKind::Row(_)
            ) {
                return Err(format!(
                    "the type {} of upsert key field '{key}' is unsupported (only atomic types)",
                    field.data_type
                ));
            }
        }
        for key in self.options.bucket_key() {
            if self.field(&key).is_none() {
                return Err(format!("bucket key '{key}' is not a column"));
            }
            if self.partition_keys.contains(&key) {
                return Err(format!("bucket key '{key}' is a partition key"));
            }
            if !self.primary_keys.is_empty() && !self.primary_keys.contains(&key) {
                return Err(format!("bucket key '{key}' is not part of the primary key"));
            }
        }
        Ok(())
    }

    /// The table options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Primary keys minus partition keys: the key stored in `_KEY_*` columns.
    pub fn trimmed_primary_keys(&self) -> Vec<String> {
        self.primary_keys
            .iter()
            .filter(|k| !self.partition_keys.contains(k))
            .cloned()
            .collect()
    }

    /// Java `TableSchema.crossPartitionUpdate`: a primary key that lacks a partition key, so
    /// an upsert may move a key to another partition (written with `bucket = -1` only).
    pub fn cross_partition_update(&self) -> bool {
        !self.primary_keys.is_empty()
            && self
                .partition_keys
                .iter()
                .any(|p| !self.primary_keys.contains(p))
    }

    /// Columns hashed for fixed buckets: `bucket-key`, else the trimmed primary key.
    pub fn bucket_keys(&self) -> Vec<String> {
        let keys = self.options.bucket_key();
        if keys.is_empty() {
            self.trimmed_primary_keys()
        } else {
            keys
        }
    }

    /// The top-level column named `name`.
    pub fn field(&self, name: &str) -> Option<&DataField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The top-level column with field id `id`.
    pub fn field_by_id(&self, id: i32) -> Option<&DataField> {
        self.fields.iter().find(|f| f.id == id)
    }

    pub fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.name.as_str()).collect()
    }

    /// The row of all columns (a nullable ROW, as Java's `logicalRowType`).
    pub fn logical_row_type(&self) -> DataType {
        DataType::new(TypeKind::Row(self.fields.clone()))
    }
}

/// Largest non-system field id in `fields`, nested ROW fields included; -1 when none
/// (Java `RowType.currentHighestFieldId`).
pub fn highest_field_id(fields: &[DataField]) -> i32 {
    fn visit(data_type: &DataType, max: &mut i32) {
        match &data_type.kind {
            TypeKind::Row(fields) => fields.iter().for_each(|f| visit_field(f, max)),
            TypeKind::Array(element) | TypeKind::Multiset(element) => visit(element, max),
            TypeKind::Map(key, value) => {
                visit(key, max);
                visit(value, max);
            }
            _ => {}
        }
    }
    fn visit_field(field: &DataField, max: &mut i32) {
        if field.id < SYSTEM_FIELD_ID_START {
            *max = (*max).max(field.id);
        }
        visit(&field.data_type, max);
    }
    let mut max = -1;
    fields.iter().for_each(|f| visit_field(f, &mut max));
    max
}

/// Gives `fields` fresh ids from `next_id` the way Java's `Schema.Builder` does: each
/// top-level column takes the next id, then the ROW fields nested in its type are numbered
/// depth-first with a nested field's own children numbered *before* the field itself
/// (Java `ReassignFieldId`; e.g. `st ROW<x, z ROW<q>>` → st=0, x=1, q=2, z=3). On return
/// `next_id` is one past the highest id given.
pub fn assign_field_ids(fields: Vec<DataField>, next_id: &mut i32) -> Result<Vec<DataField>> {
    fields
        .into_iter()
        .map(|field| {
            let id = take_id(next_id)?;
            let data_type = reassign_type(field.data_type, next_id)?;
            Ok(DataField {
                id,
                data_type,
                ..field
            })
        })
        .collect()
}

fn take_id(next_id: &mut i32) -> Result<i32> {
    let id = *next_id;
    if !(0..SYSTEM_FIELD_ID_START).contains(&id) {
        return Err(Error::Invalid(format!("field id {id} out of range")));
    }
    *next_id += 1;
    Ok(id)
}

fn reassign_type(data_type: DataType, next_id: &mut i32) -> Result<DataType> {
    let kind = match data_type.kind {
        TypeKind::Row(fields) => TypeKind::Row(
            fields
                .into_iter()
                .map(|field| {
                    let data_type = reassign_type(field.data_type, next_id)?;
                    Ok(DataField {
                        id: take_id(next_id)?,
                        data_type,
                        ..field
                    })
                })
                .collect::<Result<_>>()?,
        ),
        TypeKind::Array(element) => TypeKind::Array(Box::new(reassign_type(*element, next_id)?)),
        TypeKind::Multiset(element) => {
            TypeKind::Multiset(Box::new(reassign_type(*element, next_id)?))
        }
        TypeKind::Map(key, value) => {
            let key = reassign_type(*key, next_id)?;
            TypeKind::Map(Box::new(key), Box::new(reassign_type(*value, next_id)?))
        }
        other => other,
    };
    Ok(DataType {
        nullable: data_type.nullable,
        kind,
    })
}

/// `schema-<id>`.
pub fn schema_file_name(id: i64) -> String {
    format!("schema-{id}")
}

/// The id of a `schema-<id>` file name; `None` for anything else (temp files included).
pub fn parse_schema_file_name(name: &str) -> Option<i64> {
    parse_numbered_name(name, "schema-")
}

/// `<prefix><decimal digits>` → the number; rejects signs, suffixes and overflow.
pub(crate) fn parse_numbered_name(name: &str, prefix: &str) -> Option<i64> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Pretty JSON as pypaimon's `json.dumps(indent=2, ensure_ascii=False)` and as our metadata
/// writers produce it: 2-space indent, `"key": value`, no trailing newline.
pub(crate) fn pretty_json(value: &Value) -> String {
    // Serialising a `Value` (string keys only) into a String cannot fail.
    serde_json::to_string_pretty(value).expect("a JSON value always serialises")
}

fn corrupt(reason: impl std::fmt::Display) -> Error {
    Error::corrupt(WHAT, reason)
}

fn required<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a Value> {
    object
        .get(key)
        .ok_or_else(|| corrupt(format!("missing '{key}'")))
}

fn json_i64(value: &Value, key: &str) -> Result<i64> {
    value
        .as_i64()
        .ok_or_else(|| corrupt(format!("'{key}' is not a 64-bit integer: {value}")))
}

fn json_i32(value: &Value, key: &str) -> Result<i32> {
    value
        .as_i64()
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| corrupt(format!("'{key}' is not a 32-bit integer: {value}")))
}

fn string_list(value: &Value, key: &str) -> Result<Vec<String>> {
    let Value::Array(items) = value else {
        return Err(corrupt(format!("'{key}' is not an array")));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(corrupt(format!("'{key}' holds a non-string: {other}"))),
        })
        .collect()
}

/// Shared access to the golden fixtures (`tests/fixtures/paimon-v1` of the repository) for this crate's tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    pub fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/paimon-v1")
    }

    /// `fixtures.json`.
    pub fn manifest() -> Value {
        let path = root().join("fixtures.json");
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_slice(&text).expect("fixtures.json is JSON")
    }

    /// Every table entry of fixtures.json with its directory.
    pub fn tables() -> Vec<(Value, PathBuf)> {
        let manifest = manifest();
        let tables = manifest["tables"].as_array().expect("tables array").clone();
        assert!(!tables.is_empty(), "fixtures.json lists no tables");
        tables
            .into_iter()
            .map(|t| {
                let dir = root().join(t["path"].as_str().expect("table path"));
                (t, dir)
            })
            .collect()
    }

    /// Files of `dir` whose name starts with `prefix`, sorted by name.
    pub fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = entries
            .map(|e| e.expect("dir entry").path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .collect();
        files.sort();
        files
    }

    /// Drops whole lines matching `drop` from pretty-printed JSON, removing the comma the
    /// previous line no longer needs when the dropped line was the last member.
    pub fn drop_lines(text: &str, drop: impl Fn(&str) -> bool) -> String {
        let mut kept: Vec<String> = Vec::new();
        for line in text.split('\n') {
            if drop(line.trim_start()) {
                if !line.ends_with(',') {
                    if let Some(previous) = kept.last_mut() {
                        if previous.ends_with(',') {
                            previous.pop();
                        }
                    }
                }
            } else {
                kept.push(line.to_string());
            }
        }
        kept.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{drop_lines, files, tables};
    use super::*;
    use crate::type_json::type_from_json;
    use crate::types::MAX_LENGTH;

    /// What pypaimon writes that we deliberately write differently, all Java's way:
    /// * `"comment": null` — Java omits a null comment (and would read JSON null as the text
    ///   "null");
    /// * `"nullable": ...` inside nested type objects — Java neither writes nor reads it;
    /// * `TIMESTAMP_LTZ(p)` — Java spells it `TIMESTAMP(p) WITH LOCAL TIME ZONE`.
    ///
    /// Everything else (member order, indentation, escaping) must be byte-identical.
    fn java_form_of_pypaimon_schema(text: &str) -> String {
        let text = drop_lines(text, |l| {
            l.starts_with("\"comment\": null") || l.starts_with("\"nullable\": ")
        });
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(start) = rest.find("TIMESTAMP_LTZ(") {
            let after = &rest[start + "TIMESTAMP_LTZ(".len()..];
            let close = after.find(')').expect("closing parenthesis");
            out.push_str(&rest[..start]);
            out.push_str(&format!(
                "TIMESTAMP({}) WITH LOCAL TIME ZONE",
                &after[..close]
            ));
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn fixture_schemas_re_encode_identically() {
        let mut count = 0;
        for (table, dir) in tables() {
            let schema_files = files(&dir.join("schema"), "schema-");
            assert!(
                !schema_files.is_empty(),
                "{}: no schema files",
                table["name"]
            );
            for path in schema_files {
                let bytes = std::fs::read(&path).expect("read schema");
                let schema = TableSchema::from_json(&bytes)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .expect("file name");
                assert_eq!(
                    parse_schema_file_name(name),
                    Some(schema.id),
                    "{}",
                    path.display()
                );
                let original = String::from_utf8(bytes).expect("UTF-8");
                assert_eq!(
                    schema.to_json(),
                    java_form_of_pypaimon_schema(&original),
                    "{}",
                    path.display()
                );
                // Our own output reads back to the same schema.
                assert_eq!(
                    TableSchema::from_json(schema.to_json().as_bytes()).unwrap(),
                    schema
                );
                count += 1;
            }
        }
        assert!(count >= 25, "only {count} schema files checked");
    }

    #[test]
    fn fixture_schemas_match_manifest() {
        for (table, dir) in tables() {
            let name = table["name"].as_str().expect("name");
            let latest_id = table["schema"]["latest_schema_id"]
                .as_i64()
                .expect("latest id");
            let latest = files(&dir.join("schema"), "schema-")
                .into_iter()
                .map(|p| TableSchema::from_json(&std::fs::read(p).expect("read")).expect("parse"))
                .max_by_key(|s| s.id)
                .expect("a schema");
            assert_eq!(latest.id, latest_id, "{name}");
            let expected = table["schema"]["paimon_fields"]
                .as_array()
                .expect("paimon_fields");
            assert_eq!(latest.fields.len(), expected.len(), "{name}");
            for (field, want) in latest.fields.iter().zip(expected) {
                assert_eq!(
                    i64::from(field.id),
                    want["id"].as_i64().expect("id"),
                    "{name}"
                );
                assert_eq!(field.name, want["name"].as_str().expect("name"), "{name}");
                assert_eq!(
                    field.data_type,
                    type_from_json(&want["type"]).expect("type"),
                    "{name}"
                );
            }
            assert_eq!(
                Value::from(latest.primary_keys.clone()),
                table["primary_keys"],
                "{name}"
            );
            assert_eq!(
                Value::from(latest.partition_keys.clone()),
                table["partition_keys"],
                "{name}"
            );
            for (key, value) in table["options"].as_object().expect("options") {
                assert_eq!(
                    latest.options().get(key),
                    value.as_str(),
                    "{name}: option {key}"
                );
            }
            assert!(
                latest.highest_field_id >= highest_field_id(&latest.fields),
                "{name}"
            );
        }
    }

    #[test]
    fn accessors_on_a_pk_table() {
        let fields = vec![
            DataField::new(0, "dt", DataType::not_null(TypeKind::VarChar(MAX_LENGTH))),
            DataField::new(1, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(2, "v", DataType::new(TypeKind::Int)),
        ];
        let schema = TableSchema::new(
            0,
            fields,
            vec!["dt".into()],
            vec!["dt".into(), "id".into()],
            [("bucket".to_string(), "4".to_string())]
                .into_iter()
                .collect(),
        )
        .unwrap();
        assert_eq!(schema.highest_field_id, 2);
        assert_eq!(schema.trimmed_primary_keys(), vec!["id"]);
        assert_eq!(schema.bucket_keys(), vec!["id"]);
        assert_eq!(schema.field("v").map(|f| f.id), Some(2));
        assert_eq!(schema.field_by_id(1).map(|f| f.name.as_str()), Some("id"));
        assert_eq!(schema.field_names(), vec!["dt", "id", "v"]);
        assert!(schema.field("nope").is_none());
        assert!(matches!(schema.logical_row_type().kind, TypeKind::Row(ref f) if f.len() == 3));
        let text = schema.to_json();
        assert!(!text.contains("comment"));
        assert_eq!(TableSchema::from_json(text.as_bytes()).unwrap(), schema);
        let mut commented = schema.clone();
        commented.comment = Some("ünïcode \"quoted\"\n".to_string());
        assert_eq!(
            TableSchema::from_json(commented.to_json().as_bytes()).unwrap(),
            commented
        );
    }

    #[test]
    fn system_key_and_nul_column_names_are_refused() {
        for name in [
            "_SEQUENCE_NUMBER",
            "_VALUE_KIND",
            "_LEVEL",
            "rowkind",
            "_ROW_ID",
            "_KEY_id",
            "a\0b",
        ] {
            let err = check_column_name(name).unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(m) if m.contains(&format!("{name:?}"))),
                "{err}"
            );
        }
        for name in [
            "k",
            "_sequence_number",
            "ROWKIND",
            "KEY_id",
            "_KEYS",
            "v_KEY_",
        ] {
            check_column_name(name).unwrap();
        }
    }

    #[test]
    fn invalid_keys_are_rejected() {
        let fields = vec![DataField::new(0, "a", DataType::new(TypeKind::Int))];
        let pk_is_partition = TableSchema::new(
            0,
            fields.clone(),
            vec!["a".into()],
            vec!["a".into()],
            Options::new(),
        );
        assert!(matches!(pk_is_partition, Err(Error::Invalid(_))));
        let missing = TableSchema::new(0, fields.clone(), vec![], vec!["b".into()], Options::new());
        assert!(matches!(missing, Err(Error::Invalid(_))));
        let bad_bucket_key: Options = [("bucket-key".to_string(), "zz".to_string())]
            .into_iter()
            .collect();
        assert!(TableSchema::new(0, fields, vec![], vec![], bad_bucket_key).is_err());
    }

    #[test]
    fn record_time_field_must_be_a_column_of_a_time_type() {
        let fields = vec![
            DataField::new(0, "id", DataType::not_null(TypeKind::BigInt)),
            DataField::new(1, "ts", DataType::new(TypeKind::Timestamp(3))),
            DataField::new(2, "s", DataType::new(TypeKind::VarChar(5))),
        ];
        let with = |field: &str| -> Options {
            [(RECORD_LEVEL_TIME_FIELD.to_string(), field.to_string())]
                .into_iter()
                .collect()
        };
        let pk = || vec!["id".to_string()];
        TableSchema::new(0, fields.clone(), vec![], pk(), with("ts")).unwrap();
        TableSchema::new(0, fields.clone(), vec![], pk(), with("id")).unwrap();
        // append tables too, as Java's SchemaValidation
        for (field, says) in [("nope", "not a column"), ("s", "VARCHAR(5)")] {
            let err = TableSchema::new(0, fields.clone(), vec![], vec![], with(field)).unwrap_err();
            assert!(
                matches!(&err, Error::Invalid(m) if m.contains(RECORD_LEVEL_TIME_FIELD) && m.contains(says)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn compatibility_rules() {
        let v1 = br#"{"id": 0, "fields": [], "highestFieldId": -1, "partitionKeys": [],
                      "primaryKeys": [], "options": {}, "comment": null}"#;
        let schema = TableSchema::from_json(v1).unwrap();
        assert_eq!(schema.version, 1);
        assert_eq!(schema.options().get("bucket"), Some("1"));
        assert_eq!(schema.options().get("file.format"), Some("orc"));
        assert_eq!(schema.comment, None);
        assert_eq!(schema.time_millis, 0);
        let v2 = br#"{"version": 2, "id": 1, "fields": [], "highestFieldId": -1,
                      "partitionKeys": [], "primaryKeys": [], "options": {"bucket": "2"},
                      "comment": "c", "timeMillis": 5}"#;
        let schema = TableSchema::from_json(v2).unwrap();
        assert_eq!(schema.options().get("bucket"), Some("2"));
        assert_eq!(schema.options().get("file.format"), Some("orc"));
        assert_eq!(schema.comment.as_deref(), Some("c"));
        let v3 = br#"{"version": 3, "id": 1, "fields": [], "highestFieldId": -1,
                      "partitionKeys": [], "primaryKeys": [], "options": {}}"#;
        let schema = TableSchema::from_json(v3).unwrap();
        assert!(schema.options().is_empty());
    }

    #[test]
    fn corrupt_input_names_schema() {
        let good = TableSchema::new(
            3,
            vec![DataField::new(0, "a", DataType::new(TypeKind::Int))],
            vec![],
            vec![],
            Options::new(),
        )
        .unwrap()
        .to_json();
        let mut inputs: Vec<Vec<u8>> = (0..good.len())
            .step_by(7)
            .map(|n| good.as_bytes()[..n].to_vec())
            .collect();
        inputs.push(b"[]".to_vec());
        inputs.push(good.replace("\"INT\"", "\"INTEGRAL\"").into_bytes());
        inputs.push(good.replace("\"highestFieldId\"", "\"x\"").into_bytes());
        inputs.push(
            good.replace("\"primaryKeys\": []", "\"primaryKeys\": [1]")
                .into_bytes(),
        );
        inputs.push(
            good.replace("\"primaryKeys\": []", "\"primaryKeys\": [\"zz\"]")
                .into_bytes(),
        );
        inputs.push(good.replace("\"id\": 0", "\"id\": \"0\"").into_bytes());
        for input in inputs {
            match TableSchema::from_json(&input) {
                Err(Error::Corrupt { what, .. }) => assert_eq!(what, "schema"),
                other => panic!("{:?} → {other:?}", String::from_utf8_lossy(&input)),
            }
        }
    }

    #[test]
    fn field_ids_follow_java_reassignment() {
        let row = |fields: Vec<DataField>| DataType::new(TypeKind::Row(fields));
        let int = || DataType::new(TypeKind::Int);
        let fields = vec![
            DataField::new(-1, "id", int()),
            DataField::new(
                -1,
                "st",
                row(vec![
                    DataField::new(-1, "x", int()),
                    DataField::new(-1, "z", row(vec![DataField::new(-1, "q", int())])),
                ]),
            ),
            DataField::new(
                -1,
                "nested",
                DataType::new(TypeKind::Array(Box::new(row(vec![DataField::new(
                    -1,
                    "k",
                    int(),
                )])))),
            ),
        ];
        let mut next_id = 0;
        let fields = assign_field_ids(fields, &mut next_id).unwrap();
        assert_eq!(next_id, 7);
        assert_eq!(highest_field_id(&fields), 6);
        let ids: Vec<i32> = fields.iter().map(|f| f.id).collect();
        assert_eq!(ids, vec![0, 1, 5]);
        let TypeKind::Row(st) = &fields[1].data_type.kind else {
            panic!()
        };
        // x=2, then z's child q=3 before z=4 (matches the all_types fixture: z=29, q=28).
        assert_eq!((st[0].id, st[1].id), (2, 4));
        let TypeKind::Row(z) = &st[1].data_type.kind else {
            panic!()
        };
        assert_eq!(z[0].id, 3);
        let TypeKind::Array(element) = &fields[2].data_type.kind else {
            panic!()
        };
        let TypeKind::Row(k) = &element.kind else {
            panic!()
        };
        assert_eq!(k[0].id, 6);
    }

    #[test]
    fn file_names() {
        assert_eq!(schema_file_name(12), "schema-12");
        assert_eq!(parse_schema_file_name("schema-12"), Some(12));
        for bad in [
            "schema-",
            "schema--1",
            "schema-1.tmp",
            ".schema-1.abc.tmp",
            "schema-x",
            "snapshot-1",
        ] {
            assert_eq!(parse_schema_file_name(bad), None, "{bad}");
        }
    }
}
