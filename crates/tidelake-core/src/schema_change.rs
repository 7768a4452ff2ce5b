//! Creating tables and evolving their schemas (Java `SchemaManager.createTable` /
//! `commitChanges`).
//!
//! Invariants:
//! * `schema/schema-N` files are created with [`FileIO::put_if_absent`], never replaced (under
//!   the table's catalog lock, if it has one: [`crate::snapshot_commit`]); a lost race re-reads
//!   the latest schema and re-applies the changes. A catalog that versions schemas itself (REST)
//!   gets the changes, checked here first, as Java's `SchemaChange` JSON and writes the file;
//!   a catalog that mirrors the table in a metastore (Hive) is told of each new schema, and the
//!   schema file is deleted again when the metastore refuses it, as Java's `HiveCatalog` does;
//! * field ids are never reused: new columns get ids above `highestFieldId`, renames keep ids;
//! * partition and primary-key columns cannot be dropped or renamed, and only widening type
//!   changes that every old value survives are allowed, so files written under any older schema
//!   stay readable through field ids.

use arrow_schema::Schema as ArrowSchema;
use serde_json::{json, Value};
use tidelake_spec::arrow::{fields_from_arrow_schema, from_arrow_type, to_arrow_type};
use tidelake_spec::bucket::POSTPONE_BUCKET;
use tidelake_spec::options::{
    ChangelogProducer, MergeEngine, Options, ALTER_NULL_TO_NOT_NULL_DISABLED, BUCKET,
};
use tidelake_spec::schema::{check_column_name, TableSchema};
use tidelake_spec::type_json::type_to_json;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::branch::{list_branches, MAIN_BRANCH, SCAN_FALLBACK_BRANCH};
use crate::datum_arrow::default_value;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::table::{schema_path, Table};

/// How many times a schema change is re-applied after losing a race.
const MAX_SCHEMA_RETRIES: usize = 10;

/// What a new table looks like.
#[derive(Debug, Clone, Default)]
pub struct TableSpec {
    pub primary_keys: Vec<String>,
    pub partition_keys: Vec<String>,
    /// `bucket` option; `None` keeps Paimon's default (-1: dynamic for primary-key tables,
    /// unaware for append tables).
    pub bucket: Option<i32>,
    pub options: Vec<(String, String)>,
    pub comment: Option<String>,
}

/// Create a table at `io`'s root with an Arrow schema. Fails with [`Error::AlreadyExists`] if a
/// table is there.
pub async fn create_table(io: FileIO, schema: &ArrowSchema, spec: &TableSpec) -> Result<Table> {
    let table_schema = new_table_schema(schema, spec, io.env().now_millis())?;
    let rel = schema_path(0);
    if !io.put_if_absent(&rel, table_schema.to_json()).await? {
        return Err(Error::AlreadyExists(format!("table at {}", io.location())));
    }
    Table::open_io(io).await
}

/// Schema 0 of a new table with an Arrow schema, checked as Java checks a new table.
pub fn new_table_schema(
    schema: &ArrowSchema,
    spec: &TableSpec,
    time_millis: i64,
) -> Result<TableSchema> {
    let mut next_id = 0;
    let spec_err = |e| Error::from_spec("table schema", e);
    let mut fields = fields_from_arrow_schema(schema, &mut next_id).map_err(|e| match e {
        tidelake_spec::Error::Unsupported(m) => Error::SchemaMismatch(m),
        other => Error::from_spec("table schema", other),
    })?;
    for f in &fields {
        check_column_name(&f.name).map_err(type_error)?;
    }
    let mut options: Options = spec.options.iter().cloned().collect();
    if let Some(b) = spec.bucket {
        options.set("bucket", b.to_string());
    }
    if options.get("bucket").is_none() {
        options.set("bucket", "-1");
    }
    // every key must be Paimon's (or declared custom) and every value tidelake interprets
    // must parse: a typo fails here, naming it
    options
        .check_known_keys(options.iter().map(|(k, _)| k))
        .map_err(spec_err)?;
    options
        .resolved(!spec.primary_keys.is_empty())
        .map_err(spec_err)?;
    let pk_nullable = options.primary_key_nullable().map_err(spec_err)?;
    for f in fields
        .iter_mut()
        .filter(|f| spec.primary_keys.contains(&f.name))
    {
        if !pk_nullable {
            f.data_type.nullable = false;
        }
    }
    let mut table_schema = TableSchema::new(
        0,
        fields,
        spec.partition_keys.clone(),
        spec.primary_keys.clone(),
        options,
    )
    .map_err(|e| Error::SchemaMismatch(e.to_string()))?;
    check_bucket_mode(&table_schema)?;
    check_merge_options(&table_schema)?;
    check_iceberg(&table_schema)?;
    table_schema.comment = spec.comment.clone();
    table_schema.time_millis = time_millis;
    Ok(table_schema)
}

/// Java `SchemaValidation.validateFallbackBranch`: `scan.fallback-branch` names an existing
/// branch.
async fn check_fallback_branch(table: &Table, schema: &TableSchema) -> Result<()> {
    let Some(fallback) = schema
        .options()
        .get(SCAN_FALLBACK_BRANCH)
        .filter(|b| !b.trim().is_empty())
    else {
        return Ok(());
    };
    if fallback != MAIN_BRANCH
        && !list_branches(table.io())
            .await?
            .iter()
            .any(|b| b == fallback)
    {
        return Err(Error::invalid(format!(
            "cannot set '{SCAN_FALLBACK_BRANCH}' = '{fallback}' because the branch '{fallback}' does not exist"
        )));
    }
    Ok(())
}

fn check_bucket_mode(schema: &TableSchema) -> Result<()> {
    let bucket = schema
        .options()
        .bucket()
        .map_err(|e| Error::from_spec("options", e))?;
    if bucket == 0 || bucket < -2 {
        return Err(Error::invalid(format!(
            "bucket must be -1 (dynamic/unaware), -2 (postpone) or > 0, got {bucket}"
        )));
    }
    if schema.primary_keys.is_empty() && bucket == POSTPONE_BUCKET {
        return Err(Error::invalid(
            "bucket -2 (postpone) needs a primary key; append tables take -1 or > 0",
        ));
    }
    if schema.primary_keys.is_empty() && bucket > 0 && schema.options().get("bucket-key").is_none()
    {
        return Err(Error::invalid(
            "an append table with a fixed bucket count needs the 'bucket-key' option",
        ));
    }
    if schema.cross_partition_update() && bucket != -1 {
        // accepted, as Java Paimon accepts it since 1.3 (it refused it before)
        log::warn!(
            target: "tidelake.schema",
            "primary key {:?} lacks partition columns of {:?} and bucket = {bucket}: a key written \
             to two partitions keeps a row in each (one row per key needs bucket = -1)",
            schema.primary_keys,
            schema.partition_keys
        );
    }
    Ok(())
}

/// Java `SchemaValidation` of merge options on primary-key tables: first-row tables support only
/// `changelog-producer` none or lookup (their writes never retract, and their compactions
/// always look up); deletion vectors support only the none, input and lookup producers and not
/// the first-row engine (which never deletes old data).
fn check_merge_options(schema: &TableSchema) -> Result<()> {
    if schema.primary_keys.is_empty() {
        return Ok(());
    }
    let opts = schema.options();
    let spec = |e| Error::from_spec("options", e);
    let (engine, producer) = (
        opts.merge_engine().map_err(spec)?,
        opts.changelog_producer().map_err(spec)?,
    );
    if engine == MergeEngine::FirstRow
        && !matches!(
            producer,
            ChangelogProducer::None | ChangelogProducer::Lookup
        )
    {
        return Err(Error::invalid(format!(
            "merge-engine=first-row supports only changelog-producer none or lookup, not {}",
            producer.as_str()
        )));
    }
    if !opts.deletion_vectors_enabled().map_err(spec)? {
        return Ok(());
    }
    if engine == MergeEngine::FirstRow {
        return Err(Error::invalid(
            "deletion-vectors.enabled is not supported with merge-engine=first-row (it never deletes old data)",
        ));
    }
    if producer == ChangelogProducer::FullCompaction {
        return Err(Error::invalid(
            "deletion-vectors.enabled supports only changelog-producer none, input or lookup, not full-compaction",
        ));
    }
    Ok(())
}

/// Java `IcebergCommitCallback`'s schema conversion: a table asking for Iceberg metadata has
/// only columns with an Iceberg form, so that no commit fails after it committed.
fn check_iceberg(schema: &TableSchema) -> Result<()> {
    tidelake_spec::iceberg::check_schema(schema).map_err(|e| Error::from_spec("table schema", e))
}

/// One change to a table's schema.
#[derive(Debug, Clone)]
pub enum SchemaChange {
    /// Add a nullable column (last, or first / after another column).
    AddColumn {
        name: String,
        data_type: arrow_schema::DataType,
        position: ColumnPosition,
        comment: Option<String>,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    DropColumn {
        name: String,
    },
    /// Change a column's type to a wider one (INT -> BIGINT, FLOAT -> DOUBLE, ...).
    UpdateColumnType {
        name: String,
        data_type: arrow_schema::DataType,
    },
    SetOption {
        key: String,
        value: String,
    },
    RemoveOption {
        key: String,
    },
    UpdateComment {
        comment: Option<String>,
    },
    /// Move an existing column (Java `updateColumnPosition`): first, last or after another.
    MoveColumn {
        name: String,
        position: ColumnPosition,
    },
    /// Make a column nullable or NOT NULL (Java `updateColumnNullability`): a primary-key
    /// column cannot become nullable, and a nullable column becomes NOT NULL only when the
    /// table's `alter-column-null-to-not-null.disabled` is false (existing rows are not
    /// checked, as in Java).
    UpdateColumnNullability {
        name: String,
        nullable: bool,
    },
    /// Set or clear a column's comment (Java `updateColumnComment`).
    UpdateColumnComment {
        name: String,
        comment: Option<String>,
    },
    /// Set or clear a column's default value (Java `updateColumnDefaultValue`): the value
    /// writers store where a row's is null or missing; refused unless it converts to the
    /// column's type.
    UpdateColumnDefault {
        name: String,
        default: Option<String>,
    },
}

impl SchemaChange {
    /// The change as Java's `SchemaChange` JSON (its `action` names the kind), as a REST
    /// catalog's alter-table request carries it.
    pub fn to_paimon_json(&self) -> Result<Value> {
        let paimon_type = |t: &arrow_schema::DataType| -> Result<Value> {
            Ok(type_to_json(&from_arrow_type(t, true).map_err(type_error)?))
        };
        Ok(match self {
            SchemaChange::AddColumn {
                name,
                data_type,
                position,
                comment,
            } => {
                let movement = match position {
                    ColumnPosition::Last => Value::Null,
                    moved => moved.to_paimon_json(name),
                };
                json!({"action": "addColumn", "fieldNames": [name], "dataType": paimon_type(data_type)?,
                       "comment": comment, "move": movement})
            }
            SchemaChange::RenameColumn { from, to } => {
                json!({"action": "renameColumn", "fieldNames": [from], "newName": to})
            }
            SchemaChange::DropColumn { name } => {
                json!({"action": "dropColumn", "fieldNames": [name]})
            }
            SchemaChange::UpdateColumnType { name, data_type } => json!({
                "action": "updateColumnType", "fieldNames": [name],
                "newDataType": paimon_type(data_type)?, "keepNullability": true}),
            SchemaChange::SetOption { key, value } => {
                json!({"action": "setOption", "key": key, "value": value})
            }
            SchemaChange::RemoveOption { key } => json!({"action": "removeOption", "key": key}),
            SchemaChange::UpdateComment { comment } => {
                json!({"action": "updateComment", "comment": comment})
            }
            SchemaChange::MoveColumn { name, position } => json!({
                "action": "updateColumnPosition", "move": position.to_paimon_json(name)}),
            SchemaChange::UpdateColumnNullability { name, nullable } => json!({
                "action": "updateColumnNullability", "fieldNames": [name],
                "newNullability": nullable}),
            SchemaChange::UpdateColumnComment { name, comment } => json!({
                "action": "updateColumnComment", "fieldNames": [name], "newComment": comment}),
            SchemaChange::UpdateColumnDefault { name, default } => json!({
                "action": "updateColumnDefaultValue", "fieldNames": [name],
                "newDefaultValue": default}),
        })
    }
}

/// Where an added or moved column goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnPosition {
    Last,
    First,
    After(String),
}

impl ColumnPosition {
    /// Java's `SchemaChange.Move` of column `name` to this position.
    fn to_paimon_json(&self, name: &str) -> Value {
        let (kind, reference) = match self {
            ColumnPosition::Last => ("LAST", None),
            ColumnPosition::First => ("FIRST", None),
            ColumnPosition::After(other) => ("AFTER", Some(other)),
        };
        json!({"fieldName": name, "referenceFieldName": reference, "type": kind})
    }

    /// Move the column at `from` of `fields` here (Java `SchemaManager.applyMove`); moving a
    /// column next to itself is refused, as in Java.
    fn apply(&self, fields: &mut Vec<DataField>, from: usize) -> Result<()> {
        let name = fields[from].name.clone();
        let to = match self {
            ColumnPosition::First => 0,
            ColumnPosition::Last => fields.len() - 1,
            ColumnPosition::After(other) => {
                let reference = fields
                    .iter()
                    .position(|f| &f.name == other)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "cannot move column '{name}' after '{other}': '{other}' does not exist"
                        ))
                    })?;
                if reference == from {
                    return Err(Error::invalid(format!(
                        "cannot move column '{name}' after itself"
                    )));
                }
                if from > reference {
                    reference + 1
                } else {
                    reference
                }
            }
        };
        if to == from && !matches!(self, ColumnPosition::After(_)) {
            return Err(Error::invalid(format!(
                "column '{name}' is already {}",
                if to == 0 { "first" } else { "last" }
            )));
        }
        let field = fields.remove(from);
        fields.insert(to, field);
        Ok(())
    }
}

/// Apply `changes` to the latest schema of `table` and commit the new schema file (through
/// the table's catalog when it versions schemas itself, after the same checks here).
pub async fn alter_table(table: &Table, changes: &[SchemaChange]) -> Result<Table> {
    for _ in 0..MAX_SCHEMA_RETRIES {
        let current = table.reopen().await?;
        let next = apply_changes(current.schema(), changes, table.env().now_millis())?;
        check_merge_options(&next)?;
        check_iceberg(&next)?;
        check_fallback_branch(table, &next).await?;
        if let Some(catalog) = table.environment().snapshot_commit() {
            let json: Vec<Value> = changes
                .iter()
                .map(SchemaChange::to_paimon_json)
                .collect::<Result<_>>()?;
            catalog.alter_schema(table.branch(), &json).await?;
            return table.reopen().await;
        }
        let rel = schema_path(next.id);
        if table
            .environment()
            .put_if_absent(table.branch_io(), &rel, next.to_json())
            .await?
        {
            if let Some(metastore) = table.environment().metastore() {
                let removed: Vec<String> = changes
                    .iter()
                    .filter_map(|c| match c {
                        SchemaChange::RemoveOption { key } => Some(key.clone()),
                        _ => None,
                    })
                    .collect();
                if let Err(e) = metastore
                    .schema_changed(table.branch(), &next, &removed)
                    .await
                {
                    // Java `alterTableImpl`: the metastore refused, the schema goes
                    if let Err(d) = table.branch_io().delete(&rel).await {
                        log::warn!(target: "tidelake.catalog", "deleting {rel} the metastore refused: {d}");
                    }
                    return Err(e);
                }
            }
            return table.reopen().await;
        }
    }
    Err(Error::CommitConflict(format!(
        "schema of {} kept changing concurrently; gave up after {MAX_SCHEMA_RETRIES} attempts",
        table.location()
    )))
}

/// A column's name or type refused: a bad argument stays one ([`Error::Invalid`]: reserved
/// names, nesting too deep), anything else does not fit the table ([`Error::SchemaMismatch`]).
fn type_error(e: tidelake_spec::Error) -> Error {
    match e {
        tidelake_spec::Error::Invalid(m) => Error::Invalid(m),
        other => Error::SchemaMismatch(other.to_string()),
    }
}

fn column_index(schema: &TableSchema, name: &str) -> Result<usize> {
    schema
        .fields
        .iter()
        .position(|f| f.name == name)
        .ok_or_else(|| {
            Error::invalid(format!(
                "column '{name}' does not exist; columns are {}",
                schema.field_names().join(", ")
            ))
        })
}

fn check_not_key(schema: &TableSchema, name: &str, action: &str) -> Result<()> {
    if schema.partition_keys.iter().any(|k| k == name)
        || schema.primary_keys.iter().any(|k| k == name)
    {
        return Err(Error::invalid(format!(
            "cannot {action} column '{name}': it is a partition or primary key column"
        )));
    }
    Ok(())
}

/// The schema that results from `changes` at `time_millis` (pure; id advanced).
pub fn apply_changes(
    base: &TableSchema,
    changes: &[SchemaChange],
    time_millis: i64,
) -> Result<TableSchema> {
    let mut s = base.clone();
    let mut highest = s.highest_field_id;
    for change in changes {
        match change {
            SchemaChange::AddColumn {
                name,
                data_type,
                position,
                comment,
            } => {
                check_column_name(name).map_err(type_error)?;
                if s.field(name).is_some() {
                    return Err(Error::invalid(format!("column '{name}' already exists")));
                }
                let mut next_id = highest + 1;
                let one = ArrowSchema::new(vec![arrow_schema::Field::new(
                    name,
                    data_type.clone(),
                    true,
                )]);
                let mut fields =
                    fields_from_arrow_schema(&one, &mut next_id).map_err(type_error)?;
                let mut field = fields.remove(0);
                field.description = comment.clone();
                highest = next_id - 1;
                let at = match position {
                    ColumnPosition::Last => s.fields.len(),
                    ColumnPosition::First => 0,
                    ColumnPosition::After(other) => column_index(&s, other)? + 1,
                };
                s.fields.insert(at, field);
            }
            SchemaChange::RenameColumn { from, to } => {
                check_not_key(&s, from, "rename")?;
                check_column_name(to).map_err(type_error)?;
                if s.field(to).is_some() {
                    return Err(Error::invalid(format!(
                        "cannot rename '{from}' to '{to}': '{to}' already exists"
                    )));
                }
                let i = column_index(&s, from)?;
                s.fields[i].name = to.clone();
            }
            SchemaChange::DropColumn { name } => {
                check_not_key(&s, name, "drop")?;
                let i = column_index(&s, name)?;
                if s.fields.len() == 1 {
                    return Err(Error::invalid("cannot drop the last column"));
                }
                s.fields.remove(i);
            }
            SchemaChange::UpdateColumnType { name, data_type } => {
                let i = column_index(&s, name)?;
                let old = &s.fields[i].data_type;
                let new = from_arrow_type(data_type, old.nullable).map_err(type_error)?;
                if !is_widening(old, &new) {
                    return Err(Error::SchemaMismatch(format!(
                        "cannot change column '{name}' from {old} to {new}: only widening changes are allowed"
                    )));
                }
                s.fields[i].data_type = new;
            }
            SchemaChange::SetOption { key, value } => {
                if key == BUCKET {
                    check_bucket_change(s.options.get(BUCKET), value)?;
                } else {
                    check_mutable_option(key)?;
                }
                s.options.set(key.clone(), value.clone());
            }
            SchemaChange::RemoveOption { key } => {
                check_mutable_option(key)?;
                s.options.remove(key);
            }
            SchemaChange::UpdateComment { comment } => s.comment = comment.clone(),
            SchemaChange::MoveColumn { name, position } => {
                let i = column_index(&s, name)?;
                position.apply(&mut s.fields, i)?;
            }
            SchemaChange::UpdateColumnNullability { name, nullable } => {
                let i = column_index(&s, name)?;
                if *nullable && s.primary_keys.iter().any(|k| k == name) {
                    return Err(Error::invalid(format!(
                        "cannot make primary key column '{name}' nullable"
                    )));
                }
                let old = &s.fields[i].data_type;
                let refused = s
                    .options
                    .null_to_not_null_disabled()
                    .map_err(|e| Error::from_spec("table options", e))?;
                if old.nullable && !nullable && refused {
                    return Err(Error::Unsupported(format!(
                        "cannot make nullable column '{name}' NOT NULL: set the table option \
                         '{ALTER_NULL_TO_NOT_NULL_DISABLED}' = 'false' to allow it (existing rows \
                         are not checked)"
                    )));
                }
                s.fields[i].data_type = old.with_nullable(*nullable);
            }
            SchemaChange::UpdateColumnComment { name, comment } => {
                let i = column_index(&s, name)?;
                s.fields[i].description = comment.clone();
            }
            SchemaChange::UpdateColumnDefault { name, default } => {
                let i = column_index(&s, name)?;
                if let Some(text) = default {
                    let arrow = to_arrow_type(&s.fields[i].data_type).map_err(type_error)?;
                    default_value(text, &arrow, name)?;
                }
                s.fields[i].default_value = default.clone();
            }
        }
    }
    let set_keys = changes.iter().filter_map(|c| match c {
        SchemaChange::SetOption { key, .. } => Some(key.as_str()),
        _ => None,
    });
    let spec_err = |e| Error::from_spec("options", e);
    s.options.check_known_keys(set_keys).map_err(spec_err)?;
    if changes
        .iter()
        .any(|c| matches!(c, SchemaChange::SetOption { .. }))
    {
        s.options
            .resolved(!s.primary_keys.is_empty())
            .map_err(spec_err)?;
    }
    s.id = base.id + 1;
    s.highest_field_id = highest.max(s.highest_field_id);
    s.time_millis = time_millis;
    s.validate()
        .map_err(|e| Error::SchemaMismatch(e.to_string()))?;
    Ok(s)
}

/// Java `checkAlterTableOption` for `bucket`: a fixed-bucket table may get another count (its
/// partitions keep theirs until rescaled, see `ops::Rescale`); a table without a count
/// (`-1`), or a postpone-bucket one, keeps its mode.
fn check_bucket_change(old: Option<&str>, new: &str) -> Result<()> {
    let parse = |v: &str| {
        v.trim().parse::<i32>().map_err(|_| {
            Error::invalid(format!(
                "option '{BUCKET}' must be a number of buckets, not {v:?}"
            ))
        })
    };
    let (old, new) = (old.map_or(Ok(-1), parse)?, parse(new)?);
    let refused = match (old, new) {
        (-1, _) => "Cannot change bucket when it is -1.",
        (_, -1) => "Cannot change bucket to -1.",
        (POSTPONE_BUCKET, _) => "Cannot change bucket for postpone bucket tables.",
        _ => return Ok(()),
    };
    Err(Error::Unsupported(format!(
        "changing option '{BUCKET}' from {old} to {new}: {refused}"
    )))
}

/// Options that fix the physical layout cannot change after creation (Java rejects them too;
/// `bucket` only in part, see [`check_bucket_change`]).
fn check_mutable_option(key: &str) -> Result<()> {
    const IMMUTABLE: [&str; 4] = ["bucket", "bucket-key", "merge-engine", "sequence.field"];
    if IMMUTABLE.contains(&key) {
        return Err(Error::Unsupported(format!(
            "changing option '{key}' of an existing table"
        )));
    }
    Ok(())
}

/// Whether every value of `old` is representable, unchanged, in `new`.
pub fn is_widening(old: &DataType, new: &DataType) -> bool {
    use TypeKind::*;
    let rank = |k: &TypeKind| match k {
        TinyInt => Some(1),
        SmallInt => Some(2),
        Int => Some(3),
        BigInt => Some(4),
        _ => None,
    };
    match (&old.kind, &new.kind) {
        (a, b) if a == b => true,
        (a, b) if rank(a).is_some() && rank(b).is_some() => rank(a) < rank(b),
        (TinyInt | SmallInt | Int, Double) | (TinyInt | SmallInt, Float) | (Float, Double) => true,
        (
            Decimal {
                precision: p1,
                scale: s1,
            },
            Decimal {
                precision: p2,
                scale: s2,
            },
        ) => s2 >= s1 && p2 - s2 >= p1 - s1,
        (Char(a) | VarChar(a), VarChar(b)) => b >= a,
        (Binary(a) | VarBinary(a), VarBinary(b)) => b >= a,
        (Timestamp(a), Timestamp(b))
        | (LocalZonedTimestamp(a), LocalZonedTimestamp(b))
        | (Time(a), Time(b)) => b >= a,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_javas_schema_change_json() {
        let add = SchemaChange::AddColumn {
            name: "score".into(),
            data_type: arrow_schema::DataType::Float64,
            position: ColumnPosition::After("id".into()),
            comment: Some("c".into()),
        };
        assert_eq!(
            add.to_paimon_json().unwrap(),
            json!({"action": "addColumn", "fieldNames": ["score"], "dataType": "DOUBLE", "comment": "c",
                   "move": {"fieldName": "score", "referenceFieldName": "id", "type": "AFTER"}})
        );
        let widen = SchemaChange::UpdateColumnType {
            name: "n".into(),
            data_type: arrow_schema::DataType::Int64,
        };
        assert_eq!(
            widen.to_paimon_json().unwrap(),
            json!({"action": "updateColumnType", "fieldNames": ["n"], "newDataType": "BIGINT",
                   "keepNullability": true})
        );
        let set = SchemaChange::SetOption {
            key: "k".into(),
            value: "v".into(),
        };
        assert_eq!(
            set.to_paimon_json().unwrap(),
            json!({"action": "setOption", "key": "k", "value": "v"})
        );
        let first = SchemaChange::MoveColumn {
            name: "c".into(),
            position: ColumnPosition::First,
        };
        assert_eq!(
            first.to_paimon_json().unwrap(),
            json!({"action": "updateColumnPosition",
                   "move": {"fieldName": "c", "referenceFieldName": null, "type": "FIRST"}})
        );
    }

    fn names(fields: &[DataField]) -> Vec<&str> {
        fields.iter().map(|f| f.name.as_str()).collect()
    }

    /// Java `SchemaManager.applyMove` on `[a, b, c, d]`.
    #[test]
    fn moves_are_javas() {
        let fields: Vec<DataField> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, n)| DataField::new(i as i32, *n, DataType::new(TypeKind::Int)))
            .collect();
        let moved = |from: usize, to: ColumnPosition| {
            let mut f = fields.clone();
            to.apply(&mut f, from).map(|()| names(&f).join(""))
        };
        assert_eq!(moved(2, ColumnPosition::First).unwrap(), "cabd");
        assert_eq!(moved(1, ColumnPosition::Last).unwrap(), "acdb");
        assert_eq!(moved(0, ColumnPosition::After("c".into())).unwrap(), "bcad");
        assert_eq!(moved(3, ColumnPosition::After("a".into())).unwrap(), "adbc");
        assert_eq!(moved(1, ColumnPosition::After("a".into())).unwrap(), "abcd");
        assert!(moved(0, ColumnPosition::First).is_err());
        assert!(moved(3, ColumnPosition::Last).is_err());
        assert!(moved(1, ColumnPosition::After("b".into())).is_err());
        assert!(moved(1, ColumnPosition::After("x".into())).is_err());
    }
}
