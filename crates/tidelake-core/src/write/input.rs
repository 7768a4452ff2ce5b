//! Conforming user batches to a table's schema before they are written.
//!
//! Invariants of a conformed batch: it has exactly the table's columns, in schema order, with
//! the exact Arrow types of the schema; no NOT NULL column (primary keys included) holds a
//! null; every cast preserved every value (a cast that would change a value — overflow,
//! truncated fraction, lost precision — is rejected with [`Error::SchemaMismatch`] naming the
//! column). Each row also gets its row kind (`_VALUE_KIND` code). A delete batch is refused on
//! a table whose merge ignores deletes, so no delete is acknowledged and then dropped. A
//! primary-key table with `ignore-update-before` drops its update-before (`-U`) rows before
//! they are written ([`Conformed::without_update_before`], Java's `RowKindFilter`).
//!
//! A column with a default value (the schema field's `defaultValue`) holds it wherever the
//! input is null or the column is not given, as Java's `TableWriteImpl` (after its NOT NULL
//! check) writes every row ([`default_value`]: Java's conversion of the default's text).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int8Array, RecordBatch, Scalar, StringArray, UInt32Array,
};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{DataType as ArrowType, SchemaRef};
use arrow_select::filter::{filter, filter_record_batch};
use tidelake_spec::options::MergeEngine;
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::TableSchema;

use crate::datum_arrow::default_value;
use crate::error::{Error, Result};

/// Where the row kinds of a batch come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKinds {
    /// Every row has this kind (`+I` for writes and upserts, `-D` for deletes).
    Fixed(i8),
    /// Taken from the string column named by the `rowkind.field` option.
    FromField,
}

/// A batch in the table's schema plus one row kind per row.
pub struct Conformed {
    pub batch: RecordBatch,
    pub kinds: Int8Array,
}

/// Conform `batch` to `schema` (whose Arrow form is `arrow_schema`).
///
/// For deletes (`RowKinds::Fixed(-D)`) only the primary-key columns are required; other
/// missing columns become nulls. Other writes to primary-key tables whose rows replace whole
/// rows (deduplicate, first-row) need every column; elsewhere missing nullable columns become
/// nulls (append tables; partial-update and aggregation, where a null changes nothing).
pub fn conform(
    batch: &RecordBatch,
    schema: &TableSchema,
    arrow_schema: &SchemaRef,
    kinds: RowKinds,
) -> Result<Conformed> {
    let is_delete = kinds == RowKinds::Fixed(RowKind::Delete.code());
    if is_delete && ignores_deletes(schema)? {
        // the merge would drop the -D rows: refuse the delete rather than acknowledge it
        return Err(Error::Unsupported(
            "a delete on a table that ignores deletes (ignore-delete=true, or one of its \
             fallback keys): the rows would stay"
                .into(),
        ));
    }
    let input = batch.schema();
    if let Some(extra) = input
        .fields()
        .iter()
        .find(|f| schema.field(f.name()).is_none())
    {
        return Err(Error::SchemaMismatch(format!(
            "column '{}' is not in the table; its columns are {}",
            extra.name(),
            schema.field_names().join(", ")
        )));
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields.len());
    for (field, target) in schema.fields.iter().zip(arrow_schema.fields()) {
        let column = match (input.index_of(&field.name), &field.default_value) {
            (Ok(i), _) => cast_exact(batch.column(i), target.data_type(), &field.name)?,
            (Err(_), Some(text)) => {
                let default = default_value(text, target.data_type(), &field.name)?;
                let everywhere = UInt32Array::from(vec![0; batch.num_rows()]);
                arrow_select::take::take(&default, &everywhere, None)
                    .map_err(|e| Error::arrow("filling default values", e))?
            }
            (Err(_), None) => {
                let is_key = schema.primary_keys.contains(&field.name);
                if !field.data_type.nullable && (!is_delete || is_key) {
                    return Err(Error::SchemaMismatch(format!(
                        "missing column '{}' ({}), which is required",
                        field.name, field.data_type
                    )));
                }
                arrow_array::new_null_array(target.data_type(), batch.num_rows())
            }
        };
        if !target.is_nullable()
            && column.null_count() > 0
            && (!is_delete || schema.primary_keys.contains(&field.name))
        {
            let what = if schema.primary_keys.contains(&field.name) {
                "primary key"
            } else {
                "NOT NULL"
            };
            return Err(Error::SchemaMismatch(format!(
                "{} null value(s) in {what} column '{}'",
                column.null_count(),
                field.name
            )));
        }
        let nulls = column.logical_nulls().filter(|n| n.null_count() > 0);
        let column = match (&field.default_value, nulls) {
            (Some(text), Some(nulls)) => {
                let default = default_value(text, target.data_type(), &field.name)?;
                let given = BooleanArray::new(nulls.into_inner(), None);
                arrow_select::zip::zip(&given, &column, &Scalar::new(default))
                    .map_err(|e| Error::arrow("filling default values", e))?
            }
            _ => column,
        };
        columns.push(column);
    }
    if !is_delete && replaces_whole_rows(schema)? {
        let missing: Vec<String> = schema
            .fields
            .iter()
            .filter(|f| f.default_value.is_none() && input.index_of(&f.name).is_err())
            .map(|f| format!("'{}'", f.name))
            .collect();
        if !missing.is_empty() {
            return Err(Error::SchemaMismatch(format!(
                "missing column(s) {}: a write to this primary-key table replaces whole rows, so the \
                 missing columns would become null; give every column (merge-engine=partial-update \
                 updates only the columns given)",
                missing.join(", ")
            )));
        }
    }
    // Deletes may leave NOT NULL value columns null: Paimon only needs the key of a -D row.
    let out_schema = if is_delete {
        Arc::new(relax_non_key(arrow_schema, schema))
    } else {
        arrow_schema.clone()
    };
    let conformed = RecordBatch::try_new(out_schema, columns)
        .map_err(|e| Error::arrow("conforming input", e))?;
    let kinds = match kinds {
        RowKinds::Fixed(k) => Int8Array::from(vec![k; batch.num_rows()]),
        RowKinds::FromField => kinds_from_field(&conformed, schema)?,
    };
    Ok(Conformed {
        batch: conformed,
        kinds,
    })
}

impl Conformed {
    /// These rows minus the update-before (`-U`) ones when `schema` is a primary-key table
    /// with `ignore-update-before` (Java's writers drop them: `RowKindFilter`); else as they are.
    pub fn without_update_before(self, schema: &TableSchema) -> Result<Conformed> {
        let ignored = !schema.primary_keys.is_empty()
            && schema
                .options()
                .ignore_update_before()
                .map_err(|e| Error::from_spec("table options", e))?;
        let before = RowKind::UpdateBefore.code();
        if !ignored || !self.kinds.values().contains(&before) {
            return Ok(self);
        }
        let keep: BooleanArray = self
            .kinds
            .values()
            .iter()
            .map(|k| Some(*k != before))
            .collect();
        let batch = filter_record_batch(&self.batch, &keep)
            .map_err(|e| Error::arrow("dropping update-before rows", e))?;
        let kinds = filter(&self.kinds, &keep)
            .map_err(|e| Error::arrow("dropping update-before rows", e))?
            .as_primitive::<Int8Type>()
            .clone();
        Ok(Conformed { batch, kinds })
    }
}

/// Whether the table's merge drops delete records (`ignore-delete` under any key Java reads).
fn ignores_deletes(schema: &TableSchema) -> Result<bool> {
    if schema.primary_keys.is_empty() {
        return Ok(false);
    }
    schema
        .options()
        .ignore_delete()
        .map_err(|e| Error::from_spec("table options", e))
}

/// Whether a row written to this table replaces the key's whole row (a primary key with the
/// deduplicate or first-row merge engine), so that a column left out would be stored as null.
fn replaces_whole_rows(schema: &TableSchema) -> Result<bool> {
    if schema.primary_keys.is_empty() {
        return Ok(false);
    }
    let engine = schema
        .options()
        .merge_engine()
        .map_err(|e| Error::from_spec("table options", e))?;
    Ok(matches!(
        engine,
        MergeEngine::Deduplicate | MergeEngine::FirstRow
    ))
}

fn relax_non_key(arrow_schema: &SchemaRef, schema: &TableSchema) -> arrow_schema::Schema {
    let fields: Vec<_> = arrow_schema
        .fields()
        .iter()
        .map(|f| {
            if schema.primary_keys.contains(f.name()) {
                f.clone()
            } else {
                Arc::new(f.as_ref().clone().with_nullable(true))
            }
        })
        .collect();
    arrow_schema::Schema::new_with_metadata(fields, arrow_schema.metadata().clone())
}

/// Cast `array` to `to`, failing unless every value survives unchanged.
fn cast_exact(array: &ArrayRef, to: &ArrowType, column: &str) -> Result<ArrayRef> {
    let from = array.data_type();
    if from == to {
        return Ok(array.clone());
    }
    let mismatch = |why: String| {
        Error::SchemaMismatch(format!(
            "column '{column}': cannot write {from} as {to}: {why}"
        ))
    };
    if parses_strings(from, to) {
        return Err(mismatch(
            "strings are not parsed into other types; convert them first".into(),
        ));
    }
    if !can_cast_types(from, to) {
        return Err(mismatch("no conversion exists".into()));
    }
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let cast = cast_with_options(array, to, &strict).map_err(|e| mismatch(e.to_string()))?;
    if !is_lossless(from, to) {
        let back = cast_with_options(&cast, from, &strict).map_err(|e| mismatch(e.to_string()))?;
        if back.as_ref() != array.as_ref() {
            return Err(mismatch("some values would change (lossy cast)".into()));
        }
    }
    Ok(cast)
}

/// Whether casting `from` to `to` would parse strings (e.g. `"12"` into INT): accepted or not
/// depending on the values, so never done implicitly.
fn parses_strings(from: &ArrowType, to: &ArrowType) -> bool {
    use ArrowType::*;
    let is_string = |t: &ArrowType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    match (from, to) {
        (Dictionary(_, v), t) => parses_strings(v, t),
        (f, t) if is_string(f) => !is_string(t),
        (
            List(a) | LargeList(a) | ListView(a) | LargeListView(a) | FixedSizeList(a, _),
            List(b) | LargeList(b),
        )
        | (Map(a, _), Map(b, _)) => parses_strings(a.data_type(), b.data_type()),
        (Struct(a), Struct(b)) => a.iter().any(|fa| {
            b.iter()
                .find(|fb| fb.name() == fa.name())
                .is_some_and(|fb| parses_strings(fa.data_type(), fb.data_type()))
        }),
        _ => false,
    }
}

/// Conversions that can never change a value, so they need no round-trip check.
fn is_lossless(from: &ArrowType, to: &ArrowType) -> bool {
    use ArrowType::*;
    let int_rank = |t: &ArrowType| match t {
        Int8 => Some(1),
        Int16 => Some(2),
        Int32 => Some(3),
        Int64 => Some(4),
        _ => None,
    };
    match (from, to) {
        (a, b) if int_rank(a).is_some() && int_rank(b).is_some() => int_rank(a) < int_rank(b),
        (Float16 | Float32, Float64)
        | (Float16, Float32)
        | (Int8 | Int16 | Int32, Float64)
        | (Int8 | Int16, Float32) => true,
        (LargeUtf8 | Utf8View, Utf8) | (LargeBinary | BinaryView, Binary) => true,
        (Dictionary(_, v), t) => v.as_ref() == t,
        // all values are null
        (Null, _) => true,
        _ => false,
    }
}

fn kinds_from_field(batch: &RecordBatch, schema: &TableSchema) -> Result<Int8Array> {
    let name = schema
        .options()
        .rowkind_field()
        .ok_or_else(|| Error::invalid("the table has no 'rowkind.field' option"))?;
    let column = batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| {
            Error::SchemaMismatch(format!("rowkind.field '{name}' must be a STRING column"))
        })?;
    column
        .iter()
        .map(|v| match v.and_then(RowKind::from_short_string) {
            Some(kind) => Ok(kind.code()),
            None => Err(Error::SchemaMismatch(format!(
                "column '{name}' (rowkind.field) holds {v:?}; expected +I, -U, +U or -D"
            ))),
        })
        .collect::<Result<Vec<i8>>>()
        .map(Int8Array::from)
}
