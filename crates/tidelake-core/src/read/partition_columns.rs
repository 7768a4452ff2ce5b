//! Partition columns of read rows come from their split's partition, never from the data
//! files (Java `FormatReaderMapping` with `PartitionUtils.trimPartitionFields` and
//! `PartitionSettedRow`): the files of a migrated Hive table do not hold them (Hive keeps them
//! in directory names), and every file Paimon writes holds the partition's values anyway.
//!
//! Invariant: a batch of `[system columns..., read fields...]` keeps its schema; each
//! partition column among the read fields is replaced by the split's value on every row.

use arrow_array::RecordBatch;
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
    pub(crate) fn values(&self, partition: &[u8]) -> Result<Vec<Datum>> {
        self.layout.decode_partition(partition)
    }

    /// `batch` with its partition columns set to `values` (the read fields end the batch).
    pub(crate) fn fill(&self, batch: RecordBatch, values: &[Datum]) -> Result<RecordBatch> {
        let skip = batch.num_columns() - self.read_width;
        let rows = batch.num_rows();
        let mut columns = batch.columns().to_vec();
        for (i, at, field) in &self.columns {
            let value = values.get(*at).cloned().unwrap_or(Datum::Null);
            columns[skip + i] = datums_to_array(&vec![value; rows], &field.data_type)?;
        }
        RecordBatch::try_new(batch.schema(), columns)
            .map_err(|e| Error::arrow("setting partition columns", e))
    }
}
