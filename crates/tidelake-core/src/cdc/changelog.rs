//! Decoded changelog batches applied to a table: the schema changes the table needs before it
//! can take a batch, and the batch written with each row's kind.
//!
//! Schema evolution follows the source: a column the table lacks is added (nullable, last); a
//! column whose source type got wider is widened when Paimon allows that change
//! ([`is_widening`]); a source type the table's column already holds needs nothing (the write
//! casts exactly); anything else is refused with [`Error::SchemaMismatch`]. Columns the source
//! dropped stay in the table and new rows hold null there.
//!
//! Writes: the engine writes batches of one row kind, so a changelog batch is split into
//! fixed-kind writes. Rows of one key must reach the table in their order, rows of different
//! keys need not: the `n`-th change of every key goes into round `n`, each round is written
//! one kind at a time, and rounds are written in order. A batch of distinct keys is at most four
//! writes, whatever its kinds.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType as ArrowType, Schema as ArrowSchema, SchemaRef};
use arrow_select::take::take_record_batch;
use tidelake_spec::arrow::{from_arrow_type, to_arrow_type};
use tidelake_spec::row_kind::RowKind;
use tidelake_spec::schema::TableSchema;

use super::ROW_KIND_COLUMN;
use crate::error::{Error, Result};
use crate::schema_change::{alter_table, is_widening, ColumnPosition, SchemaChange};
use crate::table::Table;
use crate::write::input::RowKinds;
use crate::write::table_write::TableWrite;

/// The changes `table` needs to take rows of the source schema `incoming` (without the
/// row-kind column), in column order; empty when it takes them as it is.
pub fn schema_changes(table: &TableSchema, incoming: &ArrowSchema) -> Result<Vec<SchemaChange>> {
    let mut changes = Vec::new();
    for field in incoming.fields() {
        // a column that only held nulls has no type yet: it is added once it has one
        if field.name() == ROW_KIND_COLUMN || field.data_type() == &ArrowType::Null {
            continue;
        }
        let source = from_arrow_type(field.data_type(), true)
            .map_err(|e| Error::SchemaMismatch(format!("source column '{}': {e}", field.name())))?;
        let Some(column) = table.field(field.name()) else {
            changes.push(SchemaChange::AddColumn {
                path: field.name().as_str().into(),
                data_type: field.data_type().clone(),
                position: ColumnPosition::Last,
                comment: None,
            });
            continue;
        };
        if is_widening(&source, &column.data_type) {
            continue;
        }
        if !is_widening(&column.data_type, &source) {
            return Err(Error::SchemaMismatch(format!(
                "source column '{}' changed to {} but the table holds {}; Paimon cannot change \
                 that type (only widening changes such as INT to BIGINT are allowed)",
                field.name(),
                source,
                column.data_type
            )));
        }
        changes.push(SchemaChange::UpdateColumnType {
            path: field.name().as_str().into(),
            data_type: field.data_type().clone(),
        });
    }
    Ok(changes)
}

/// How many times [`evolve`] recomputes its changes after a concurrent schema change.
const EVOLVE_ATTEMPTS: usize = 5;

/// Bring `table` to a schema that takes rows of `incoming` ([`schema_changes`] on its latest
/// schema) and return it at that schema. Safe against concurrent evolutions of the same
/// table: after a lost race the changes are recomputed from the winner's schema.
pub async fn evolve(table: &Table, incoming: &ArrowSchema) -> Result<Table> {
    let mut attempt = 0;
    loop {
        let latest = table.reopen().await?;
        let changes = schema_changes(latest.schema(), incoming)?;
        if changes.is_empty() {
            return Ok(latest);
        }
        match alter_table(&latest, &changes).await {
            Ok(evolved) => return Ok(evolved),
            Err(e) if attempt + 1 < EVOLVE_ATTEMPTS => {
                log::info!(target: "tidelake.cdc", "schema evolution of {} raced ({e}); retrying", table.location());
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The row kinds of a decoded batch.
fn row_kinds(batch: &RecordBatch) -> Result<Vec<RowKind>> {
    let column = batch
        .column_by_name(ROW_KIND_COLUMN)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| {
            Error::invalid(format!(
                "a changelog batch needs a string column '{ROW_KIND_COLUMN}'"
            ))
        })?;
    column
        .iter()
        .map(|v| {
            v.and_then(RowKind::from_short_string).ok_or_else(|| {
                Error::invalid(format!(
                    "'{ROW_KIND_COLUMN}' holds {v:?}; expected +I, -U, +U or -D"
                ))
            })
        })
        .collect()
}

/// The fixed-kind writes of a changelog batch, in the order they must be written: each the row
/// kind and the indices of its rows (in input order).
pub fn write_order(
    batch: &RecordBatch,
    primary_keys: &[String],
) -> Result<Vec<(RowKind, UInt32Array)>> {
    let kinds = row_kinds(batch)?;
    let mut rounds: Vec<[Vec<u32>; 4]> = Vec::new();
    let mut place = |round: usize, kind: RowKind, row: usize| {
        if rounds.len() <= round {
            rounds.resize_with(round + 1, Default::default);
        }
        rounds[round][kind.code() as usize].push(row as u32);
    };
    if primary_keys.is_empty() {
        // no key to reorder by: consecutive rows of one kind form one write
        let mut round = 0;
        for (row, kind) in kinds.iter().enumerate() {
            if row > 0 && kinds[row - 1] != *kind {
                round += 1;
            }
            place(round, *kind, row);
        }
    } else {
        let columns: Vec<ArrayRef> = primary_keys
            .iter()
            .map(|k| {
                batch.column_by_name(k).cloned().ok_or_else(|| {
                    Error::SchemaMismatch(format!("primary key column '{k}' is not in the batch"))
                })
            })
            .collect::<Result<_>>()?;
        let converter = RowConverter::new(
            columns
                .iter()
                .map(|c| SortField::new(c.data_type().clone()))
                .collect(),
        )
        .map_err(|e| Error::arrow("encoding primary keys", e))?;
        let keys = converter
            .convert_columns(&columns)
            .map_err(|e| Error::arrow("encoding primary keys", e))?;
        let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(batch.num_rows());
        for (row, kind) in kinds.iter().enumerate() {
            let count = seen.entry(keys.row(row).data()).or_insert(0);
            place(*count, *kind, row);
            *count += 1;
        }
    }
    Ok(rounds
        .into_iter()
        .flat_map(|round| {
            RowKind::ALL
                .into_iter()
                .zip(round)
                .filter(|(_, rows)| !rows.is_empty())
                .map(|(kind, rows)| (kind, UInt32Array::from(rows)))
        })
        .collect())
}

/// `batch` without the row-kind column and the untyped all-null columns the table lacks, and
/// with a null column for every table column the source does not send (dropped at the source,
/// or only known to the table).
fn table_columns(batch: &RecordBatch, table: &TableSchema) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (i, f) in batch.schema().fields().iter().enumerate() {
        let untyped_unknown = f.data_type() == &ArrowType::Null && table.field(f.name()).is_none();
        if f.name() != ROW_KIND_COLUMN && !untyped_unknown {
            fields.push(f.clone());
            columns.push(batch.column(i).clone());
        }
    }
    for f in &table.fields {
        if batch.column_by_name(&f.name).is_none() && f.data_type.nullable {
            let t = to_arrow_type(&f.data_type).map_err(|e| Error::from_spec("table schema", e))?;
            fields.push(Arc::new(arrow_schema::Field::new(&f.name, t.clone(), true)));
            columns.push(arrow_array::new_null_array(&t, batch.num_rows()));
        }
    }
    let schema: SchemaRef = Arc::new(ArrowSchema::new(fields));
    RecordBatch::try_new(schema, columns)
        .map_err(|e| Error::arrow("preparing a changelog batch", e))
}

/// Write a changelog batch (with [`ROW_KIND_COLUMN`]) into `write`, each row with its kind.
pub async fn write_changes(write: &mut TableWrite, batch: &RecordBatch) -> Result<()> {
    let schema = write.schema().clone();
    let order = write_order(batch, &schema.primary_keys)?;
    let rows = table_columns(batch, &schema)?;
    for (kind, indices) in order {
        let part = take_record_batch(&rows, &indices)
            .map_err(|e| Error::arrow("splitting a changelog batch", e))?;
        write.write(&part, RowKinds::Fixed(kind.code())).await?;
    }
    Ok(())
}
