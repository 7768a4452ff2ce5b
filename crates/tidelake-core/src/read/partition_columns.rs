//! Partition columns of read rows come from their split's partition, never from the data
//! files (Java `FormatReaderMapping` with `PartitionUtils.trimPartitionFields` and
//! `PartitionSettedRow`): the files of a migrated Hive table do not hold them (Hive keeps them
//! in directory names), and every file Paimon writes holds the partition's values anyway.
//!
//! Invariant: a batch of `[system columns..., read fields...]` keeps its schema; each
//! partition column among the read fields is replaced by the split's value on every row.

use std::sync::Mutex;

use arrow_array::{ArrayRef, RecordBatch};
use tidelake_spec::datum::Datum;
use tidelake_spec::types::DataField;

use crate::datum_arrow::datums_to_array;
use crate::error::{Error, Result};
use crate::layout::TableLayout;

/// The partition columns among a read's fields.
#[derive(Debug)]
pub(crate) struct PartitionColumns {
    layout: TableLayout,
    /// (position in the read fields, position in the partition, the field).
    columns: Vec<(usize, usize, DataField)>,
    read_width: usize,
}

impl PartitionColumns {
    /// `None` when no read field is a partition column.
    pub(crate) fn new(layout: TableLayout, read_fields: &[DataField]) -> Option<PartitionColumns> {
        let columns: Vec<(usize, usize, DataField)> = read_fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                let at = layout.partition_fields.iter().position(|p| p.id == f.id)?;
                Some((i, at, f.clone()))
            })
            .collect();
        (!columns.is_empty()).then_some(PartitionColumns {
            layout,
            columns,
            read_width: read_fields.len(),
        })
    }

    /// The values of a split's framed partition.
    pub(crate) fn values(&self, partition: &[u8]) -> Result<SplitValues> {
        Ok(SplitValues {
            values: self.layout.decode_partition(partition)?,
            columns: Mutex::new(Vec::new()),
        })
    }

    /// `batch` with its partition columns set to `split`'s values (the read fields end the
    /// batch).
    pub(crate) fn fill(&self, batch: RecordBatch, split: &SplitValues) -> Result<RecordBatch> {
        let skip = batch.num_columns() - self.read_width;
        let rows = batch.num_rows();
        let mut columns = batch.columns().to_vec();
        let mut filled = split.columns.lock().unwrap_or_else(|e| e.into_inner());
        if filled.first().is_none_or(|c| c.len() < rows) {
            // built once per split for its largest batch, then sliced
            *filled = self
                .columns
                .iter()
                .map(|(_, at, field)| {
                    let value = split.values.get(*at).cloned().unwrap_or(Datum::Null);
                    datums_to_array(&vec![value; rows], &field.data_type)
                })
                .collect::<Result<_>>()?;
        }
        for ((i, _, _), column) in self.columns.iter().zip(filled.iter()) {
            columns[skip + i] = column.slice(0, rows);
        }
        RecordBatch::try_new(batch.schema(), columns)
            .map_err(|e| Error::arrow("setting partition columns", e))
    }
}

/// One split's partition values, and their columns as last built.
#[derive(Debug)]
pub(crate) struct SplitValues {
    values: Vec<Datum>,
    columns: Mutex<Vec<ArrayRef>>,
}
