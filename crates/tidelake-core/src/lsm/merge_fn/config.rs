//! Merge-engine configuration and its parsing from Paimon table options.
//!
//! Mirrors how Java builds its merge functions: `CoreOptions` (option names, defaults, the
//! `ignore-delete` fallback keys, case-insensitive booleans and enums),
//! `PartialUpdateMergeFunction.Factory` (sequence groups, their aggregators and the conflict
//! checks), `AggregateMergeFunction.getAggFuncName` and the `Field*AggFactory` classes (which
//! function a column gets and which types it accepts).
//!
//! Column positions are indices into the value columns (v0..vn) handed to the merge. Option
//! names refer to columns by name; names absent from the value columns are treated as not
//! projected (skipped), except where the merge cannot work without them (errors say so).

pub use tidelake_spec::options::NestedKeyNullStrategy;
use tidelake_spec::options::{MergeEngine, Options};
use tidelake_spec::types::{DataField, DataType, TypeKind, MAX_LENGTH};

use crate::error::{Error, Result};

/// A table option that does not parse, as a core error.
pub(crate) fn option_error(err: tidelake_spec::Error) -> Error {
    Error::from_spec("table options", err)
}

/// Which merge engine a primary-key table uses (`merge-engine`), with its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeEngineConfig {
    /// `deduplicate` (Java `DeduplicateMergeFunction`): the last record wins.
    Deduplicate,
    /// `first-row` (Java `FirstRowMergeFunction`): the first record wins.
    FirstRow,
    /// `partial-update` (Java `PartialUpdateMergeFunction`).
    PartialUpdate(PartialUpdateConfig),
    /// `aggregation` (Java `AggregateMergeFunction`).
    Aggregation(AggregationConfig),
}

/// Settings of the partial-update engine.
#[derive(Debug, Clone, PartialEq)]
pub struct PartialUpdateConfig {
    /// `partial-update.remove-record-on-delete`.
    pub remove_record_on_delete: bool,
    /// Whether any `fields.<seq>.sequence-group` option is set (Java `fieldSequenceEnabled`,
    /// decided before projection): retracts then go through the sequence-group rules.
    pub sequence_groups_defined: bool,
    /// Projected sequence groups.
    pub sequence_groups: Vec<SequenceGroup>,
    /// Sequence fields named by `partial-update.remove-record-on-sequence-group`.
    pub remove_record_on_sequence_group: Vec<usize>,
    /// Per value column: its aggregate function inside partial-update, if any.
    pub aggregates: Vec<Option<AggregateSpec>>,
    /// Per value column: whether it is nullable (non-nullable columns must never become null).
    pub nullable: Vec<bool>,
}

/// `fields.<s1>,<s2>.sequence-group = <f1>,<f2>`: columns updated only by records whose
/// sequence fields are not older.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceGroup {
    /// The group's sequence fields, in option order (compared ascending, nulls first).
    pub sequence_fields: Vec<usize>,
    /// The columns the group protects (projected ones only).
    pub protected_fields: Vec<usize>,
}

/// Settings of the aggregation engine.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregationConfig {
    /// `aggregation.remove-record-on-delete`.
    pub remove_record_on_delete: bool,
    /// Per value column: its aggregate function.
    pub aggregates: Vec<AggregateSpec>,
    /// Per value column: whether it is nullable.
    pub nullable: Vec<bool>,
}

/// The aggregate function of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSpec {
    /// Column name (for messages).
    pub field: String,
    /// Paimon type of the column.
    pub data_type: DataType,
    pub function: AggregateFunction,
    /// `fields.<f>.ignore-retract`: retractions leave the accumulator unchanged.
    pub ignore_retract: bool,
}

/// Paimon's aggregate functions (Java `Field*Agg`), by option name.
#[derive(Debug, Clone, PartialEq)]
pub enum AggregateFunction {
    /// `sum` (retractable).
    Sum,
    /// `product` (retractable by division).
    Product,
    /// `min`.
    Min,
    /// `max`.
    Max,
    /// `last_value` (retract sets null).
    LastValue,
    /// `last_non_null_value`, the default (retract of a non-null value sets null).
    LastNonNullValue,
    /// `first_value`.
    FirstValue,
    /// `first_non_null_value` (legacy name `first_not_null_value`).
    FirstNonNullValue,
    /// `listagg` with `fields.<f>.list-agg-delimiter` (default ",") and `fields.<f>.distinct`.
    ListAgg { delimiter: String, distinct: bool },
    /// `bool_and`.
    BoolAnd,
    /// `bool_or`.
    BoolOr,
    /// `collect` with `fields.<f>.distinct` (retractable).
    Collect { distinct: bool },
    /// `merge_map` (retractable by key).
    MergeMap,
    /// `merge_map_with_keytime`: `MAP<K, ROW<…>>` keeping per key the row with the greatest
    /// `fields.<f>.ts-field` (a string field of the row; default its last field).
    MergeMapWithKeyTime { ts_field: usize },
    /// `nested_update` on `ARRAY<ROW>` (retractable).
    NestedUpdate {
        key: Vec<usize>,
        null_strategy: NestedKeyNullStrategy,
        sequence: Vec<usize>,
        count_limit: usize,
    },
    /// `hll_sketch`: union of serialized DataSketches HLL sketches (VARBINARY).
    HllSketch,
    /// `theta_sketch`: union of serialized DataSketches Theta sketches (VARBINARY).
    ThetaSketch,
    /// `rbm32`: union of serialized 32-bit RoaringBitmaps (VARBINARY).
    Rbm32,
    /// `nested_partial_update` on `ARRAY<ROW>`.
    NestedPartialUpdate {
        key: Vec<usize>,
        null_strategy: NestedKeyNullStrategy,
    },
    /// `primary-key`: key columns keep the incoming value.
    PrimaryKey,
}

impl AggregateFunction {
    /// The option name of this function.
    pub fn name(&self) -> &'static str {
        match self {
            AggregateFunction::Sum => "sum",
            AggregateFunction::Product => "product",
            AggregateFunction::Min => "min",
            AggregateFunction::Max => "max",
            AggregateFunction::LastValue => "last_value",
            AggregateFunction::LastNonNullValue => "last_non_null_value",
            AggregateFunction::FirstValue => "first_value",
            AggregateFunction::FirstNonNullValue => "first_non_null_value",
            AggregateFunction::ListAgg { .. } => "listagg",
            AggregateFunction::BoolAnd => "bool_and",
            AggregateFunction::BoolOr => "bool_or",
            AggregateFunction::Collect { .. } => "collect",
            AggregateFunction::MergeMap => "merge_map",
            AggregateFunction::MergeMapWithKeyTime { .. } => "merge_map_with_keytime",
            AggregateFunction::NestedUpdate { .. } => "nested_update",
            AggregateFunction::NestedPartialUpdate { .. } => "nested_partial_update",
            AggregateFunction::PrimaryKey => "primary-key",
            AggregateFunction::HllSketch => "hll_sketch",
            AggregateFunction::ThetaSketch => "theta_sketch",
            AggregateFunction::Rbm32 => "rbm32",
        }
    }
}

fn position(fields: &[DataField], name: &str) -> Option<usize> {
    fields.iter().position(|f| f.name == name)
}

/// Parse the merge-engine part of the options.
pub(crate) fn engine_from_options(
    fields: &[DataField],
    key_names: &[String],
    options: &Options,
    ignore_delete: bool,
) -> Result<MergeEngineConfig> {
    match options.merge_engine().map_err(option_error)? {
        MergeEngine::Deduplicate => Ok(MergeEngineConfig::Deduplicate),
        MergeEngine::FirstRow => Ok(MergeEngineConfig::FirstRow),
        MergeEngine::PartialUpdate => partial_update(fields, key_names, options, ignore_delete)
            .map(MergeEngineConfig::PartialUpdate),
        MergeEngine::Aggregation => {
            aggregation(fields, key_names, options).map(MergeEngineConfig::Aggregation)
        }
    }
}

fn aggregation(
    fields: &[DataField],
    key_names: &[String],
    options: &Options,
) -> Result<AggregationConfig> {
    let remove_record_on_delete = options
        .aggregation_remove_record_on_delete()
        .map_err(option_error)?;
    let sequence_fields = options.sequence_field();
    let default_fn = options.fields_default_aggregate_function();
    let mut aggregates = Vec::with_capacity(fields.len());
    for field in fields {
        // AggregateMergeFunction.getAggFuncName
        let name = if sequence_fields.contains(&field.name) {
            "last_value"
        } else if key_names.contains(&field.name) {
            "primary-key"
        } else {
            options
                .field_aggregate_function(&field.name)
                .or(default_fn)
                .unwrap_or("last_non_null_value")
        };
        aggregates.push(aggregate_spec(
            field,
            name,
            options,
            remove_record_on_delete,
        )?);
    }
    Ok(AggregationConfig {
        remove_record_on_delete,
        aggregates,
        nullable: fields.iter().map(|f| f.data_type.nullable).collect(),
    })
}

fn partial_update(
    fields: &[DataField],
    key_names: &[String],
    options: &Options,
    ignore_delete: bool,
) -> Result<PartialUpdateConfig> {
    let remove_record_on_delete = options
        .partial_update_remove_record_on_delete()
        .map_err(option_error)?;
    let remove_on_group = options.partial_update_remove_record_on_sequence_group();

    let mut sequence_groups: Vec<SequenceGroup> = Vec::new();
    let group_options = options.sequence_groups().map_err(option_error)?;
    let sequence_groups_defined = !group_options.is_empty();
    // names of all group sequence fields, and of all protected fields
    let mut all_sequence_names: Vec<&str> = Vec::new();
    let mut protected_names: Vec<&str> = Vec::new();
    let mut owner: Vec<Option<usize>> = vec![None; fields.len()];
    for group_option in &group_options {
        let key = group_option.key.as_str();
        let seq_names: Vec<&str> = group_option
            .sequence_fields
            .iter()
            .map(String::as_str)
            .collect();
        let prot_names: Vec<&str> = group_option
            .protected_fields
            .iter()
            .map(String::as_str)
            .collect();
        for name in seq_names.iter().chain(&prot_names) {
            if key_names.iter().any(|k| k == name) {
                return Err(Error::invalid(format!(
                    "The sequence-group '{key}' contains primary key field '{name}', which is not allowed. \
                     Primary key columns cannot be put in sequence-group."
                )));
            }
        }
        let seq_positions: Vec<Option<usize>> =
            seq_names.iter().map(|n| position(fields, n)).collect();
        let group_id = sequence_groups.len();
        let mut group = SequenceGroup {
            sequence_fields: Vec::new(),
            protected_fields: Vec::new(),
        };
        for name in &prot_names {
            if protected_names.contains(name) {
                return Err(Error::invalid(format!(
                    "Field {name} is defined repeatedly by multiple groups: {key}"
                )));
            }
            protected_names.push(name);
            if let Some(p) = position(fields, name) {
                if seq_positions.iter().any(Option::is_none) {
                    return Err(Error::invalid(format!(
                        "column '{name}' is protected by sequence-group '{key}' whose sequence \
                         fields are not all among the value columns; project them too"
                    )));
                }
                group.protected_fields.push(p);
            }
        }
        for (name, p) in seq_names.iter().zip(&seq_positions) {
            all_sequence_names.push(name);
            if let Some(p) = p {
                group.sequence_fields.push(*p);
            }
        }
        if group.sequence_fields.is_empty() {
            continue;
        }
        if group.sequence_fields.len() != seq_names.len() {
            return Err(Error::invalid(format!(
                "sequence-group '{key}': some of its sequence fields are not among the value columns"
            )));
        }
        for &p in group.protected_fields.iter().chain(&group.sequence_fields) {
            owner[p] = Some(group_id);
        }
        sequence_groups.push(group);
    }
    // drop protected/sequence entries overwritten by a later group ("add self" overwrites)
    for (id, group) in sequence_groups.iter_mut().enumerate() {
        group.protected_fields.retain(|&p| owner[p] == Some(id));
    }

    let aggregation_remove = options
        .aggregation_remove_record_on_delete()
        .map_err(option_error)?;
    let default_fn = options.fields_default_aggregate_function();
    let mut aggregates = Vec::with_capacity(fields.len());
    for field in fields {
        // PartialUpdateMergeFunction.getAggFuncName
        let name = if all_sequence_names.contains(&field.name.as_str()) {
            None
        } else if key_names.contains(&field.name) {
            Some("primary-key")
        } else {
            let name = options.field_aggregate_function(&field.name).or(default_fn);
            if let Some(n) = name {
                if n != "last_non_null_value" && !protected_names.contains(&field.name.as_str()) {
                    return Err(Error::invalid(format!(
                        "Must use sequence group for aggregation functions but not found for field {}.",
                        field.name
                    )));
                }
            }
            name
        };
        aggregates.push(match name {
            Some(n) => Some(aggregate_spec(field, n, options, aggregation_remove)?),
            None => None,
        });
    }

    if remove_record_on_delete && ignore_delete {
        return Err(conflict(
            "ignore-delete",
            "partial-update.remove-record-on-delete",
        ));
    }
    if remove_on_group.is_some() && ignore_delete {
        return Err(conflict(
            "ignore-delete",
            "partial-update.remove-record-on-sequence-group",
        ));
    }
    if remove_record_on_delete && sequence_groups_defined {
        return Err(conflict(
            "sequence-group",
            "partial-update.remove-record-on-delete",
        ));
    }
    let mut remove_record_on_sequence_group = Vec::new();
    if let Some(names) = remove_on_group {
        for name in &names {
            if !all_sequence_names.contains(&name.as_str()) {
                return Err(Error::invalid(format!(
                    "field '{}' defined in 'partial-update.remove-record-on-sequence-group' \
                     option must be part of sequence groups",
                    names.join(",")
                )));
            }
            if let Some(p) = position(fields, name) {
                remove_record_on_sequence_group.push(p);
            }
        }
    }
    Ok(PartialUpdateConfig {
        remove_record_on_delete,
        sequence_groups_defined,
        sequence_groups,
        remove_record_on_sequence_group,
        aggregates,
        nullable: fields.iter().map(|f| f.data_type.nullable).collect(),
    })
}

fn conflict(a: &str, b: &str) -> Error {
    Error::invalid(format!(
        "{a} and {b} have conflicting behavior so should not be enabled at the same time."
    ))
}

fn is_numeric(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Float
            | TypeKind::Double
            | TypeKind::Decimal { .. }
    )
}

fn is_comparable(t: &DataType) -> bool {
    !matches!(
        t.kind,
        TypeKind::Map(..)
            | TypeKind::Multiset(_)
            | TypeKind::Row(_)
            | TypeKind::Array(_)
            | TypeKind::Variant
            | TypeKind::Blob
    )
}

/// Build the spec of aggregate function `name` on `field` (Java `FieldAggregatorFactory.create`
/// and the per-function factories' type checks).
fn aggregate_spec(
    field: &DataField,
    name: &str,
    options: &Options,
    remove_record_on_delete: bool,
) -> Result<AggregateSpec> {
    let f = &field.name;
    let t = &field.data_type;
    let wrong_type = |what: &str| {
        Error::invalid(format!(
            "aggregate function '{name}' on column '{f}': data type must be {what} but was {:?}",
            t.kind
        ))
    };
    let ignore_retract = options.field_ignore_retract(f).map_err(option_error)?;
    if remove_record_on_delete && ignore_retract {
        return Err(conflict(
            "aggregation.remove-record-on-delete",
            &format!("fields.{f}.ignore-retract"),
        ));
    }
    let distinct = || options.field_distinct(f).map_err(option_error);
    let function = match name {
        "sum" | "product" => {
            if !is_numeric(t) {
                return Err(wrong_type("numeric"));
            }
            if name == "sum" {
                AggregateFunction::Sum
            } else {
                AggregateFunction::Product
            }
        }
        "min" | "max" => {
            if !is_comparable(t) {
                return Err(wrong_type("comparable"));
            }
            if name == "min" {
                AggregateFunction::Min
            } else {
                AggregateFunction::Max
            }
        }
        "last_value" => AggregateFunction::LastValue,
        "last_non_null_value" => AggregateFunction::LastNonNullValue,
        "first_value" => AggregateFunction::FirstValue,
        "first_non_null_value" | "first_not_null_value" => AggregateFunction::FirstNonNullValue,
        "primary-key" => AggregateFunction::PrimaryKey,
        "listagg" => {
            if t.kind != TypeKind::VarChar(MAX_LENGTH) {
                return Err(wrong_type("STRING (unbounded VARCHAR)"));
            }
            AggregateFunction::ListAgg {
                delimiter: options.field_list_agg_delimiter(f).to_string(),
                distinct: distinct()?,
            }
        }
        "bool_and" | "bool_or" => {
            if t.kind != TypeKind::Boolean {
                return Err(wrong_type("BOOLEAN"));
            }
            if name == "bool_and" {
                AggregateFunction::BoolAnd
            } else {
                AggregateFunction::BoolOr
            }
        }
        "collect" => {
            if !matches!(t.kind, TypeKind::Array(_)) {
                return Err(wrong_type("ARRAY"));
            }
            AggregateFunction::Collect {
                distinct: distinct()?,
            }
        }
        "merge_map" => {
            if !matches!(t.kind, TypeKind::Map(..)) {
                return Err(wrong_type("MAP"));
            }
            AggregateFunction::MergeMap
        }
        "merge_map_with_keytime" => merge_map_with_keytime(field, options, &wrong_type)?,
        "nested_update" | "nested_partial_update" => nested(field, name, options, &wrong_type)?,
        "hll_sketch" | "theta_sketch" | "rbm32" => {
            if !matches!(t.kind, TypeKind::VarBinary(_)) {
                return Err(wrong_type("VARBINARY"));
            }
            match name {
                "hll_sketch" => AggregateFunction::HllSketch,
                "theta_sketch" => AggregateFunction::ThetaSketch,
                _ => AggregateFunction::Rbm32,
            }
        }
        "rbm64" => {
            return Err(Error::Unsupported(format!(
                "aggregate function 'rbm64' (column '{f}'): its values are Java \
                 Roaring64Bitmap.serialize bytes, an unspecified ART-based layout of the Java \
                 RoaringBitmap library that no Rust crate reads or writes (the roaring crate's \
                 RoaringTreemap uses the portable 64-bit format instead)"
            )))
        }
        other => {
            return Err(Error::Unsupported(format!(
                "unknown aggregate function '{other}' for column '{f}' (or misspelled)"
            )))
        }
    };
    Ok(AggregateSpec {
        field: f.clone(),
        data_type: t.clone(),
        function,
        ignore_retract,
    })
}

fn merge_map_with_keytime(
    field: &DataField,
    options: &Options,
    wrong_type: &dyn Fn(&str) -> Error,
) -> Result<AggregateFunction> {
    let TypeKind::Map(_, value) = &field.data_type.kind else {
        return Err(wrong_type("MAP"));
    };
    let TypeKind::Row(row) = &value.kind else {
        return Err(wrong_type("MAP with ROW values"));
    };
    if row.len() < 2 {
        return Err(wrong_type("MAP with ROW values of at least 2 fields"));
    }
    let ts_field = match options.field_merge_map_ts_field(&field.name) {
        None => row.len() - 1,
        Some(name) => position(row, name).ok_or_else(|| {
            Error::invalid(format!(
                "Timestamp field '{name}' not found in ROW type for field '{}'",
                field.name
            ))
        })?,
    };
    if !matches!(
        row[ts_field].data_type.kind,
        TypeKind::VarChar(_) | TypeKind::Char(_)
    ) {
        return Err(Error::invalid(format!(
            "merge_map_with_keytime on '{}': the timestamp field '{}' must be a string",
            field.name, row[ts_field].name
        )));
    }
    Ok(AggregateFunction::MergeMapWithKeyTime { ts_field })
}

fn nested(
    field: &DataField,
    name: &str,
    options: &Options,
    wrong_type: &dyn Fn(&str) -> Error,
) -> Result<AggregateFunction> {
    let f = &field.name;
    let TypeKind::Array(element) = &field.data_type.kind else {
        return Err(wrong_type("ARRAY<ROW>"));
    };
    let TypeKind::Row(row) = &element.kind else {
        return Err(wrong_type("ARRAY<ROW>"));
    };
    let resolve = |names: &[String]| -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| {
                position(row, n).ok_or_else(|| {
                    Error::invalid(format!("nested field '{n}' of column '{f}' does not exist"))
                })
            })
            .collect()
    };
    let key = resolve(&options.field_nested_key(f))?;
    let strategy = options
        .field_nested_key_null_strategy(f)
        .map_err(option_error)?;
    let null_strategy = strategy.unwrap_or(NestedKeyNullStrategy::Merge);
    if name == "nested_partial_update" {
        if key.is_empty() {
            return Err(Error::invalid(format!(
                "nested_partial_update on '{f}' requires 'fields.{f}.nested-key'"
            )));
        }
        return Ok(AggregateFunction::NestedPartialUpdate { key, null_strategy });
    }
    if strategy.is_some() && key.is_empty() {
        return Err(Error::invalid(
            "Option 'fields.<field-name>.nested-key-null-strategy' requires \
             'fields.<field-name>.nested-key' to be configured.",
        ));
    }
    let sequence = resolve(&options.field_nested_sequence_field(f))?;
    if !sequence.is_empty() && key.is_empty() {
        return Err(Error::invalid(
            "Option 'fields.<field-name>.nested-sequence-field' requires \
             'fields.<field-name>.nested-key' to be configured.",
        ));
    }
    let count_limit = options.field_count_limit(f).map_err(option_error)?;
    Ok(AggregateFunction::NestedUpdate {
        key,
        null_strategy,
        sequence,
        count_limit,
    })
}
