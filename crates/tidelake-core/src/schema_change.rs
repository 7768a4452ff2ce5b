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
//! * field ids are never reused: new columns and nested fields get ids above `highestFieldId`,
//!   renames keep ids (of nested fields too, so old files map to the new schema by id);
//! * a change names a column or a nested field by its [`ColumnPath`] (Java's `fieldNames`),
//!   found as Java's `SchemaManager.NestedColumnModifier` finds it;
//! * partition and primary-key columns cannot be dropped, renamed or retyped, nor fields nested
//!   in them changed, and only widening type changes that every old value survives are allowed,
//!   so files written under any older schema stay readable through field ids.

use arrow_schema::Schema as ArrowSchema;
use serde_json::{json, Value};
use tidelake_spec::arrow::{fields_from_arrow_schema, from_arrow_type, to_arrow_type};
use tidelake_spec::bucket::POSTPONE_BUCKET;
use tidelake_spec::options::{
    ChangelogProducer, MergeEngine, Options, ALTER_NULL_TO_NOT_NULL_DISABLED, BUCKET,
    IMMUTABLE_OPTIONS,
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
    create_table_of_fields(io, arrow_fields(schema)?, spec).await
}

/// [`create_table`] with Paimon columns, ids as given (Java's order: see
/// [`new_table_schema_of_fields`]).
pub async fn create_table_of_fields(
    io: FileIO,
    fields: Vec<DataField>,
    spec: &TableSpec,
) -> Result<Table> {
    let table_schema = new_table_schema_of_fields(fields, spec, io.env().now_millis())?;
    let rel = schema_path(0);
    if !io.put_if_absent(&rel, table_schema.to_json()).await? {
        return Err(Error::AlreadyExists(format!("table at {}", io.location())));
    }
    Table::open_io(io).await
}

/// The Paimon columns of an Arrow schema, with ids in order.
pub fn arrow_fields(schema: &ArrowSchema) -> Result<Vec<DataField>> {
    let mut next_id = 0;
    fields_from_arrow_schema(schema, &mut next_id).map_err(|e| match e {
        tidelake_spec::Error::Unsupported(m) => Error::SchemaMismatch(m),
        other => Error::from_spec("table schema", other),
    })
}

/// Schema 0 of a new table, checked as Java checks a new table; the columns' ids must be
/// Java's `Schema.Builder` ids: each top-level column's, then its nested fields', from 0.
pub fn new_table_schema_of_fields(
    fields: Vec<DataField>,
    spec: &TableSpec,
    time_millis: i64,
) -> Result<TableSchema> {
    let spec_err = |e| Error::from_spec("table schema", e);
    let mut fields = fields;
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

/// One change to a table's schema. Changes naming a [`ColumnPath`] reach fields nested in ROW
/// columns too, as Java's `SchemaChange`s with a `fieldNames` path do.
#[derive(Debug, Clone)]
pub enum SchemaChange {
    /// Add a nullable column or nested field (last, or first / after another field of the same
    /// ROW).
    AddColumn {
        path: ColumnPath,
        data_type: arrow_schema::DataType,
        position: ColumnPosition,
        comment: Option<String>,
    },
    /// Rename a column or nested field (its field id, and so its data, stays).
    RenameColumn {
        path: ColumnPath,
        to: String,
    },
    DropColumn {
        path: ColumnPath,
    },
    /// Change a column's or nested field's type to a wider one (INT -> BIGINT, FLOAT ->
    /// DOUBLE, ...); a path ending at an ARRAY's `element` or a MAP's `value` widens that.
    UpdateColumnType {
        path: ColumnPath,
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
    /// Move an existing top-level column (Java `updateColumnPosition`, which moves top-level
    /// columns only): first, last or after another.
    MoveColumn {
        name: String,
        position: ColumnPosition,
    },
    /// Make a column, nested field, ARRAY element or MAP value nullable or NOT NULL (Java
    /// `updateColumnNullability`): a primary-key column cannot become nullable, and a nullable
    /// one becomes NOT NULL only when the table's `alter-column-null-to-not-null.disabled` is
    /// false (existing rows are not checked, as in Java).
    UpdateColumnNullability {
        path: ColumnPath,
        nullable: bool,
    },
    /// Set or clear a column's or nested field's comment (Java `updateColumnComment`).
    UpdateColumnComment {
        path: ColumnPath,
        comment: Option<String>,
    },
    /// Set or clear a column's or nested field's default value (Java
    /// `updateColumnDefaultValue`): the value writers store where a row's is null or missing;
    /// refused unless it converts to the field's type.
    UpdateColumnDefault {
        path: ColumnPath,
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
                path,
                data_type,
                position,
                comment,
            } => {
                let movement = match position {
                    ColumnPosition::Last => Value::Null,
                    moved => moved.to_paimon_json(path.name()),
                };
                json!({"action": "addColumn", "fieldNames": path.names(), "dataType": paimon_type(data_type)?,
                       "comment": comment, "move": movement})
            }
            SchemaChange::RenameColumn { path, to } => {
                json!({"action": "renameColumn", "fieldNames": path.names(), "newName": to})
            }
            SchemaChange::DropColumn { path } => {
                json!({"action": "dropColumn", "fieldNames": path.names()})
            }
            SchemaChange::UpdateColumnType { path, data_type } => json!({
                "action": "updateColumnType", "fieldNames": path.names(),
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
            SchemaChange::UpdateColumnNullability { path, nullable } => json!({
                "action": "updateColumnNullability", "fieldNames": path.names(),
                "newNullability": nullable}),
            SchemaChange::UpdateColumnComment { path, comment } => json!({
                "action": "updateColumnComment", "fieldNames": path.names(), "newComment": comment}),
            SchemaChange::UpdateColumnDefault { path, default } => json!({
                "action": "updateColumnDefaultValue", "fieldNames": path.names(),
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

/// The step from an ARRAY to its elements in a [`ColumnPath`] (Java's Flink and Spark catalogs
/// name it so).
const ARRAY_ELEMENT: &str = "element";
/// The step from a MAP to its values in a [`ColumnPath`].
const MAP_VALUE: &str = "value";

/// The column or nested field a change names (Java's `fieldNames`): `["s", "x"]` is field `x`
/// of ROW column `s`. Through an ARRAY the path steps `element`, through a MAP `value`:
/// `["a", "element", "x"]` is field `x` of the rows of an `ARRAY<ROW>`, and
/// `["a", "element"]` the element type itself (its type and nullability can change). Never
/// empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnPath(Vec<String>);

impl ColumnPath {
    /// The path through `names`, outermost first; refused when empty.
    pub fn new(names: Vec<String>) -> Result<ColumnPath> {
        if names.is_empty() {
            return Err(Error::invalid("a column path needs at least one name"));
        }
        Ok(ColumnPath(names))
    }

    /// The names, outermost first.
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// The top-level column the path starts at.
    pub fn column(&self) -> &str {
        &self.0[0]
    }

    /// The name of the field the path ends at.
    pub fn name(&self) -> &str {
        &self.0[self.0.len() - 1]
    }

    /// Whether the path names a top-level column.
    pub fn is_top_level(&self) -> bool {
        self.0.len() == 1
    }

    /// The path to the field `name` next to this one (in the same ROW, or among the columns).
    fn sibling(&self, name: &str) -> ColumnPath {
        let mut names = self.0.clone();
        let last = names.len() - 1;
        names[last] = name.to_string();
        ColumnPath(names)
    }

    /// The path's first `len` names, dotted.
    fn prefix(&self, len: usize) -> String {
        self.0[..len].join(".")
    }
}

impl From<&str> for ColumnPath {
    fn from(name: &str) -> ColumnPath {
        ColumnPath(vec![name.to_string()])
    }
}

impl From<String> for ColumnPath {
    fn from(name: String) -> ColumnPath {
        ColumnPath(vec![name])
    }
}

impl std::fmt::Display for ColumnPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// Where a [`ColumnPath`] leads (Java `SchemaManager.NestedColumnModifier`).
enum Place<'a> {
    /// Among these fields (the table's columns or a ROW's fields), under the path's last name.
    Among(&'a mut Vec<DataField>),
    /// Into this field's type, this many ARRAY element / MAP value steps down (at least one).
    Inside(&'a mut DataField, usize),
}

/// The ARRAY element / MAP value steps below a type, outermost first, down to the first type
/// that is neither (Java's Flink catalog names them; MULTISET is not stepped into, as in Java).
fn steps(mut ty: &DataType) -> Vec<&'static str> {
    let mut out = Vec::new();
    loop {
        ty = match &ty.kind {
            TypeKind::Array(element) => {
                out.push(ARRAY_ELEMENT);
                element
            }
            TypeKind::Map(_, value) => {
                out.push(MAP_VALUE);
                value
            }
            _ => return out,
        };
    }
}

/// The type `depth` ARRAY element / MAP value steps below `ty` (at most [`steps`]`(ty).len()`).
fn step_into(ty: &mut DataType, depth: usize) -> &mut DataType {
    if depth == 0 {
        return ty;
    }
    match ty.kind {
        TypeKind::Array(ref mut inner) | TypeKind::Map(_, ref mut inner) => {
            step_into(inner, depth - 1)
        }
        _ => ty,
    }
}

/// The names of `fields`, for messages.
fn listed(fields: &[DataField]) -> String {
    fields
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// "does not exist" for the first `len` names of `path`, naming the fields there are.
fn missing(path: &ColumnPath, len: usize, siblings: &[DataField]) -> Error {
    let there = if len == 1 {
        "columns are".to_string()
    } else {
        format!("fields of '{}' are", path.prefix(len - 1))
    };
    Error::invalid(format!(
        "column '{}' does not exist; {there} {}",
        path.prefix(len),
        listed(siblings)
    ))
}

/// The index of `name` among `fields` (the first `len` names of `path` end at it).
fn position_of(fields: &[DataField], name: &str, path: &ColumnPath, len: usize) -> Result<usize> {
    fields
        .iter()
        .position(|f| f.name == name)
        .ok_or_else(|| missing(path, len, fields))
}

/// Run `f` where `path` leads among `fields`, from the path's name at `depth` on.
fn at_path<T>(
    fields: &mut Vec<DataField>,
    path: &ColumnPath,
    depth: usize,
    f: impl FnOnce(Place<'_>) -> Result<T>,
) -> Result<T> {
    let names = path.names();
    if depth + 1 == names.len() {
        return f(Place::Among(fields));
    }
    let i = position_of(fields, &names[depth], path, depth + 1)?;
    let field = &mut fields[i];
    let steps = steps(&field.data_type);
    let stepped = (names.len() - depth - 1).min(steps.len());
    for (k, step) in steps[..stepped].iter().enumerate() {
        if names[depth + 1 + k] != *step {
            return Err(Error::invalid(format!(
                "column '{}' does not exist: the step into '{}' is '{step}'",
                path.prefix(depth + 2 + k),
                path.prefix(depth + 1 + k)
            )));
        }
    }
    if depth + 1 + stepped == names.len() {
        return f(Place::Inside(field, stepped));
    }
    let inner = step_into(&mut field.data_type, stepped);
    let inner_name = path.prefix(depth + 1 + stepped);
    match &mut inner.kind {
        TypeKind::Row(children) => at_path(children, path, depth + 1 + stepped, f),
        _ => Err(Error::invalid(format!(
            "column '{}' does not exist: '{inner_name}' is {inner}, not a ROW",
            path.prefix(depth + 2 + stepped)
        ))),
    }
}

/// Run `f` on the field `path` names and the ARRAY element / MAP value steps below it the
/// change is for (0: the field itself).
fn with_field<T>(
    fields: &mut Vec<DataField>,
    path: &ColumnPath,
    f: impl FnOnce(&mut DataField, usize) -> Result<T>,
) -> Result<T> {
    at_path(fields, path, 0, |place| match place {
        Place::Among(fields) => {
            let i = position_of(fields, path.name(), path, path.names().len())?;
            f(&mut fields[i], 0)
        }
        Place::Inside(field, steps) => f(field, steps),
    })
}

/// Refuses a `what` for an ARRAY element or MAP value (`steps` > 0): only fields have one.
fn field_itself(path: &ColumnPath, steps: usize, what: &str) -> Result<()> {
    if steps > 0 {
        return Err(Error::invalid(format!(
            "'{path}' is an ARRAY element or MAP value: only fields have a {what}"
        )));
    }
    Ok(())
}

/// The fields among which `path` ends, for changes that add, rename or drop fields (which an
/// ARRAY element or MAP value is not).
fn among<'a>(place: Place<'a>, path: &ColumnPath, action: &str) -> Result<&'a mut Vec<DataField>> {
    match place {
        Place::Among(fields) => Ok(fields),
        Place::Inside(..) => Err(Error::invalid(format!(
            "cannot {action} '{path}': it is an ARRAY element or MAP value, not a field"
        ))),
    }
}

/// Apply `changes` to the latest schema of `table` and commit the new schema file (through
/// the table's catalog when it versions schemas itself, after the same checks here).
pub async fn alter_table(table: &Table, changes: &[SchemaChange]) -> Result<Table> {
    for _ in 0..MAX_SCHEMA_RETRIES {
        let current = table.reopen().await?;
        if current.snapshot_manager().latest().await?.is_some() {
            check_option_changes(current.schema(), changes)?;
        }
        let next = apply_changes(current.schema(), changes, table.env().now_millis())?;
        check_bucket_mode(&next)?;
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

/// Refuses a change `action` of a partition or primary-key column, or of a field nested in
/// one.
fn check_not_key(schema: &TableSchema, path: &ColumnPath, action: &str) -> Result<()> {
    let column = path.column();
    if !(schema.partition_keys.iter().any(|k| k == column)
        || schema.primary_keys.iter().any(|k| k == column))
    {
        return Ok(());
    }
    Err(Error::invalid(if path.is_top_level() {
        format!("cannot {action} column '{column}': it is a partition or primary key column")
    } else {
        format!("cannot {action} '{path}': '{column}' is a partition or primary key column")
    }))
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
                path,
                data_type,
                position,
                comment,
            } => {
                check_not_key(&s, path, "add a field to")?;
                check_column_name(path.name()).map_err(type_error)?;
                let mut next_id = highest + 1;
                let one = ArrowSchema::new(vec![arrow_schema::Field::new(
                    path.name(),
                    data_type.clone(),
                    true,
                )]);
                let mut fields =
                    fields_from_arrow_schema(&one, &mut next_id).map_err(type_error)?;
                let mut field = fields.remove(0);
                field.description = comment.clone();
                at_path(&mut s.fields, path, 0, |place| {
                    let fields = among(place, path, "add")?;
                    if fields.iter().any(|f| f.name == path.name()) {
                        return Err(Error::invalid(format!("column '{path}' already exists")));
                    }
                    let at = match position {
                        ColumnPosition::Last => fields.len(),
                        ColumnPosition::First => 0,
                        ColumnPosition::After(other) => {
                            let len = path.names().len();
                            position_of(fields, other, &path.sibling(other), len)? + 1
                        }
                    };
                    fields.insert(at, field);
                    Ok(())
                })?;
                highest = next_id - 1;
            }
            SchemaChange::RenameColumn { path, to } => {
                check_not_key(&s, path, "rename")?;
                check_column_name(to).map_err(type_error)?;
                at_path(&mut s.fields, path, 0, |place| {
                    let fields = among(place, path, "rename")?;
                    let i = position_of(fields, path.name(), path, path.names().len())?;
                    if fields.iter().any(|f| &f.name == to) {
                        return Err(Error::invalid(format!(
                            "cannot rename '{path}' to '{to}': '{to}' already exists"
                        )));
                    }
                    fields[i].name = to.clone();
                    Ok(())
                })?;
            }
            SchemaChange::DropColumn { path } => {
                check_not_key(&s, path, "drop")?;
                at_path(&mut s.fields, path, 0, |place| {
                    let fields = among(place, path, "drop")?;
                    let i = position_of(fields, path.name(), path, path.names().len())?;
                    if fields.len() == 1 {
                        return Err(Error::invalid(if path.is_top_level() {
                            "cannot drop the last column".to_string()
                        } else {
                            format!("cannot drop '{path}': it is the last field of its ROW")
                        }));
                    }
                    fields.remove(i);
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnType { path, data_type } => {
                check_not_key(&s, path, "change the type of")?;
                with_field(&mut s.fields, path, |field, steps| {
                    let old = step_into(&mut field.data_type, steps);
                    let new = from_arrow_type(data_type, old.nullable).map_err(type_error)?;
                    if !is_widening(old, &new) {
                        return Err(Error::SchemaMismatch(format!(
                            "cannot change column '{path}' from {old} to {new}: only widening changes are allowed"
                        )));
                    }
                    *old = new;
                    Ok(())
                })?;
            }
            SchemaChange::SetOption { key, value } => {
                s.options.set(key.clone(), value.clone());
            }
            SchemaChange::RemoveOption { key } => {
                s.options.remove(key);
            }
            SchemaChange::UpdateComment { comment } => s.comment = comment.clone(),
            SchemaChange::MoveColumn { name, position } => {
                let i = position_of(&s.fields, name, &name.as_str().into(), 1)?;
                position.apply(&mut s.fields, i)?;
            }
            SchemaChange::UpdateColumnNullability { path, nullable } => {
                if path.is_top_level() {
                    if *nullable && s.primary_keys.iter().any(|k| k == path.column()) {
                        return Err(Error::invalid(format!(
                            "cannot make primary key column '{path}' nullable"
                        )));
                    }
                } else {
                    check_not_key(&s, path, "change the nullability of")?;
                }
                let refused = s
                    .options
                    .null_to_not_null_disabled()
                    .map_err(|e| Error::from_spec("table options", e))?;
                with_field(&mut s.fields, path, |field, steps| {
                    let old = step_into(&mut field.data_type, steps);
                    if old.nullable && !nullable && refused {
                        return Err(Error::Unsupported(format!(
                            "cannot make nullable column '{path}' NOT NULL: set the table option \
                             '{ALTER_NULL_TO_NOT_NULL_DISABLED}' = 'false' to allow it (existing rows \
                             are not checked)"
                        )));
                    }
                    *old = old.with_nullable(*nullable);
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnComment { path, comment } => {
                with_field(&mut s.fields, path, |field, steps| {
                    field_itself(path, steps, "comment")?;
                    field.description = comment.clone();
                    Ok(())
                })?;
            }
            SchemaChange::UpdateColumnDefault { path, default } => {
                with_field(&mut s.fields, path, |field, steps| {
                    field_itself(path, steps, "default value")?;
                    if let Some(text) = default {
                        let arrow = to_arrow_type(&field.data_type).map_err(type_error)?;
                        default_value(text, &arrow, &path.to_string())?;
                    }
                    field.default_value = default.clone();
                    Ok(())
                })?;
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

/// Java `checkAlterTableOption` / `checkResetTableOption`, which apply once a table has a
/// snapshot: [`IMMUTABLE_OPTIONS`] cannot be set or removed, `bucket` cannot be removed, and a
/// fixed-bucket table may get another count (its partitions keep theirs until rescaled, see
/// `ops::Rescale`) while a table without a count (`-1`), or a postpone-bucket one, keeps its
/// mode.
fn check_option_changes(base: &TableSchema, changes: &[SchemaChange]) -> Result<()> {
    let refuse = |key: &str, why: &str| {
        Err(Error::Unsupported(format!(
            "changing option '{key}' of a table with snapshots: {why}"
        )))
    };
    for change in changes {
        let (key, value) = match change {
            SchemaChange::SetOption { key, value } => (key, Some(value)),
            SchemaChange::RemoveOption { key } => (key, None),
            _ => continue,
        };
        if IMMUTABLE_OPTIONS.contains(&key.as_str()) {
            return refuse(key, "Paimon does not support it");
        }
        if key != BUCKET {
            continue;
        }
        let Some(value) = value else {
            return refuse(key, "Cannot reset bucket.");
        };
        let old = base
            .options()
            .bucket()
            .map_err(|e| Error::from_spec("options", e))?;
        let new: i32 = value.trim().parse().map_err(|_| {
            Error::invalid(format!(
                "option '{BUCKET}' must be an integer, got '{value}'"
            ))
        })?;
        match (old, new) {
            (-1, _) => return refuse(key, "Cannot change bucket when it is -1."),
            (_, -1) => return refuse(key, "Cannot change bucket to -1."),
            (POSTPONE_BUCKET, _) => {
                return refuse(key, "Cannot change bucket for postpone bucket tables.")
            }
            _ => {}
        }
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
    use std::sync::Arc;

    use super::*;

    #[test]
    fn changes_are_javas_schema_change_json() {
        let add = SchemaChange::AddColumn {
            path: "score".into(),
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
            path: "n".into(),
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

    /// `k INT NOT NULL` (id 0, the primary key), `s ROW<a INT (2), b FLOAT (3)>` (1),
    /// `l ARRAY<ROW<x INT (5)>>` (4), `m MAP<STRING, INT>` (6).
    fn nested_table() -> TableSchema {
        use arrow_schema::{DataType as A, Field, Fields};
        let row = |fields: Vec<Field>| A::Struct(Fields::from(fields));
        let schema = ArrowSchema::new(vec![
            Field::new("k", A::Int32, false),
            Field::new(
                "s",
                row(vec![
                    Field::new("a", A::Int32, true),
                    Field::new("b", A::Float32, true),
                ]),
                true,
            ),
            Field::new(
                "l",
                A::List(Arc::new(Field::new(
                    "element",
                    row(vec![Field::new("x", A::Int32, true)]),
                    true,
                ))),
                true,
            ),
            Field::new_map(
                "m",
                "entries",
                Field::new("key", A::Utf8, false),
                Field::new("value", A::Int32, true),
                false,
                true,
            ),
        ]);
        let spec = TableSpec {
            primary_keys: vec!["k".into()],
            ..TableSpec::default()
        };
        new_table_schema_of_fields(arrow_fields(&schema).unwrap(), &spec, 0).unwrap()
    }

    fn path(names: &[&str]) -> ColumnPath {
        ColumnPath::new(names.iter().map(|n| n.to_string()).collect()).unwrap()
    }

    fn apply(base: &TableSchema, changes: Vec<SchemaChange>) -> Result<TableSchema> {
        apply_changes(base, &changes, 1)
    }

    fn row_of<'a>(schema: &'a TableSchema, column: &str) -> &'a [DataField] {
        match &schema.field(column).unwrap().data_type.kind {
            TypeKind::Row(fields) => fields,
            TypeKind::Array(e) => match &e.kind {
                TypeKind::Row(fields) => fields,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    /// Java `SchemaManager.generateTableSchema` with `fieldNames` paths: ids are kept by
    /// renames and widenings, new fields take ids above `highestFieldId`.
    #[test]
    fn nested_fields_change_as_in_java() {
        let base = nested_table();
        assert_eq!(base.highest_field_id, 6);
        let next = apply(
            &base,
            vec![
                SchemaChange::AddColumn {
                    path: path(&["s", "c"]),
                    data_type: arrow_schema::DataType::Utf8,
                    position: ColumnPosition::First,
                    comment: Some("new".into()),
                },
                SchemaChange::AddColumn {
                    path: path(&["s", "d"]),
                    data_type: arrow_schema::DataType::Int64,
                    position: ColumnPosition::After("a".into()),
                    comment: None,
                },
                SchemaChange::RenameColumn {
                    path: path(&["s", "a"]),
                    to: "a2".into(),
                },
                SchemaChange::UpdateColumnType {
                    path: path(&["s", "b"]),
                    data_type: arrow_schema::DataType::Float64,
                },
                SchemaChange::AddColumn {
                    path: path(&["l", "element", "y"]),
                    data_type: arrow_schema::DataType::Boolean,
                    position: ColumnPosition::Last,
                    comment: None,
                },
                SchemaChange::UpdateColumnType {
                    path: path(&["l", "element", "x"]),
                    data_type: arrow_schema::DataType::Int64,
                },
                SchemaChange::UpdateColumnType {
                    path: path(&["m", "value"]),
                    data_type: arrow_schema::DataType::Int64,
                },
                SchemaChange::UpdateColumnComment {
                    path: path(&["s", "b"]),
                    comment: Some("bee".into()),
                },
            ],
        )
        .unwrap();
        let s = row_of(&next, "s");
        let shape: Vec<(i32, &str, String)> = s
            .iter()
            .map(|f| (f.id, f.name.as_str(), f.data_type.to_string()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (7, "c", "STRING".to_string()),
                (2, "a2", "INT".to_string()),
                (8, "d", "BIGINT".to_string()),
                (3, "b", "DOUBLE".to_string()),
            ]
        );
        assert_eq!(s[0].description.as_deref(), Some("new"));
        assert_eq!(s[3].description.as_deref(), Some("bee"));
        let l = row_of(&next, "l");
        assert_eq!(
            l.iter()
                .map(|f| (f.id, f.data_type.to_string()))
                .collect::<Vec<_>>(),
            vec![(5, "BIGINT".to_string()), (9, "BOOLEAN".to_string())]
        );
        assert_eq!(
            next.field("m").unwrap().data_type.to_string(),
            "MAP<STRING NOT NULL, BIGINT>"
        );
        assert_eq!(next.highest_field_id, 9);

        let dropped = apply(
            &next,
            vec![SchemaChange::DropColumn {
                path: path(&["s", "c"]),
            }],
        )
        .unwrap();
        assert_eq!(
            row_of(&dropped, "s")
                .iter()
                .map(|f| f.id)
                .collect::<Vec<_>>(),
            vec![2, 8, 3]
        );
        let not_null = apply(
            &base,
            vec![
                SchemaChange::SetOption {
                    key: ALTER_NULL_TO_NOT_NULL_DISABLED.into(),
                    value: "false".into(),
                },
                SchemaChange::UpdateColumnNullability {
                    path: path(&["s", "a"]),
                    nullable: false,
                },
                SchemaChange::UpdateColumnNullability {
                    path: path(&["l", "element"]),
                    nullable: false,
                },
            ],
        )
        .unwrap();
        assert_eq!(
            row_of(&not_null, "s")[0].data_type.to_string(),
            "INT NOT NULL"
        );
        assert_eq!(
            not_null.field("l").unwrap().data_type.to_string(),
            "ARRAY<ROW<`x` INT> NOT NULL>"
        );
    }

    #[test]
    fn nested_refusals_name_the_problem() {
        let base = nested_table();
        let err = |change: SchemaChange| apply(&base, vec![change]).unwrap_err().to_string();
        let add = |names: &[&str], position| SchemaChange::AddColumn {
            path: path(names),
            data_type: arrow_schema::DataType::Int32,
            position,
            comment: None,
        };
        assert!(err(add(&["s", "a"], ColumnPosition::Last)).contains("'s.a' already exists"));
        assert!(err(add(&["s", "z"], ColumnPosition::After("q".into())))
            .contains("column 's.q' does not exist; fields of 's' are a, b"));
        assert!(err(add(&["k", "z"], ColumnPosition::Last))
            .contains("'k' is a partition or primary key column"));
        assert!(err(add(&["m", "value"], ColumnPosition::Last)).contains("not a field"));
        assert!(err(add(&["q", "z"], ColumnPosition::Last))
            .contains("column 'q' does not exist; columns are k, s, l, m"));
        assert!(err(add(&["l", "x", "z"], ColumnPosition::Last))
            .contains("the step into 'l' is 'element'"));
        assert!(err(add(&["m", "value", "z"], ColumnPosition::Last))
            .contains("'m.value' is INT, not a ROW"));
        let narrow = SchemaChange::UpdateColumnType {
            path: path(&["s", "a"]),
            data_type: arrow_schema::DataType::Int16,
        };
        assert!(err(narrow).contains("cannot change column 's.a' from INT to SMALLINT"));
        let key_type = SchemaChange::UpdateColumnType {
            path: path(&["k"]),
            data_type: arrow_schema::DataType::Int64,
        };
        assert!(err(key_type).contains("partition or primary key column"));
        let rename = SchemaChange::RenameColumn {
            path: path(&["s", "a"]),
            to: "b".into(),
        };
        assert!(err(rename).contains("cannot rename 's.a' to 'b': 'b' already exists"));
        let drop_last = SchemaChange::DropColumn {
            path: path(&["l", "element", "x"]),
        };
        assert!(err(drop_last).contains("last field of its ROW"));
        let not_null = SchemaChange::UpdateColumnNullability {
            path: path(&["s", "b"]),
            nullable: false,
        };
        assert!(err(not_null).contains(ALTER_NULL_TO_NOT_NULL_DISABLED));
        let comment = SchemaChange::UpdateColumnComment {
            path: path(&["l", "element"]),
            comment: None,
        };
        assert!(err(comment).contains("only fields have a comment"));
        assert!(ColumnPath::new(vec![]).is_err());
    }

    #[test]
    fn nested_changes_carry_field_name_paths() {
        let add = SchemaChange::AddColumn {
            path: path(&["s", "x"]),
            data_type: arrow_schema::DataType::Int32,
            position: ColumnPosition::After("a".into()),
            comment: None,
        };
        assert_eq!(
            add.to_paimon_json().unwrap(),
            json!({"action": "addColumn", "fieldNames": ["s", "x"], "dataType": "INT", "comment": null,
                   "move": {"fieldName": "x", "referenceFieldName": "a", "type": "AFTER"}})
        );
        let rename = SchemaChange::RenameColumn {
            path: path(&["s", "a"]),
            to: "b".into(),
        };
        assert_eq!(
            rename.to_paimon_json().unwrap(),
            json!({"action": "renameColumn", "fieldNames": ["s", "a"], "newName": "b"})
        );
    }
}
