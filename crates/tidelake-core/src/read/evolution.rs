//! Reads of data-evolution tables (`data-evolution.enabled`, append tables with row tracking;
//! Java 1.3.1 `DataEvolutionSplitRead`, `DataEvolutionSplitGenerator.split`,
//! `DataEvolutionSplitReadProvider`).
//!
//! A data-evolution write replaces some columns of existing rows: its files hold only those
//! columns (`_WRITE_COLS`) and carry the `_FIRST_ROW_ID` of the rows they update. A read takes
//! the files of one row range (same first row id, same row count) together: each column comes
//! from the newest file (largest max sequence number) that holds it, row by row in file order;
//! a column no file holds is null (an error when it is NOT NULL). Files without a first row id
//! are whole rows, read alone, first.
//!
//! Invariants: row ranges of a split never overlap (else [`Error::Corrupt`], as Java refuses);
//! the files of one range have its row count; filters are applied to merged rows only (the
//! planner does not prune data-evolution files by statistics); `_WRITE_COLS` names columns as
//! the file's schema called them, matched to the read by field id (renames are safe). Memory:
//! one row range (the read columns of its files) at a time. Deletion vectors are not part of
//! data evolution (Java rejects them) and are not applied here.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_select::concat::concat_batches;
use futures::TryStreamExt;
use tidelake_spec::types::DataField;

use crate::error::{Error, Result};
use crate::read::data_file::{output_schema, read_data_file, FileFormat, SystemColumns};
use crate::scan::split::SplitFile;
use crate::table::Table;

/// Whether a split's files need merging by row range (Java `DataEvolutionSplitReadProvider`:
/// several files sharing a first row id), or hold some columns only.
pub(crate) fn needs_merge(files: &[SplitFile]) -> bool {
    if files.iter().any(|f| f.write_cols.is_some()) {
        return true;
    }
    let mut ids: Vec<i64> = files.iter().filter_map(|f| f.first_row_id).collect();
    let with_ids = ids.len();
    ids.sort_unstable();
    ids.dedup();
    with_ids == files.len() && ids.len() < with_ids
}

/// The files grouped by row range, in row-id order (files without a first row id first, each
/// alone), each range's newest file first.
pub(crate) fn row_ranges(mut files: Vec<SplitFile>) -> Result<Vec<Vec<SplitFile>>> {
    files.sort_by(|a, b| {
        let id = |f: &SplitFile| f.first_row_id.unwrap_or(i64::MIN);
        id(a)
            .cmp(&id(b))
            .then(b.max_sequence_number.cmp(&a.max_sequence_number))
    });
    let mut ranges: Vec<Vec<SplitFile>> = Vec::new();
    let mut next_free = i64::MIN;
    for f in files {
        let Some(first) = f.first_row_id else {
            ranges.push(vec![f]);
            continue;
        };
        match ranges.last_mut() {
            Some(range) if range[0].first_row_id == Some(first) => range.push(f),
            _ => {
                if first < next_free {
                    return Err(Error::corrupt(
                        f.path.clone(),
                        format!("its rows from row id {first} overlap the rows of another file of the split"),
                    ));
                }
                next_free = first.saturating_add(f.row_count);
                ranges.push(vec![f]);
            }
        }
    }
    Ok(ranges)
}

/// The rows of one row range as one batch of `read_fields` (see the module docs).
pub(crate) async fn read_range(
    table: &Table,
    range: &[SplitFile],
    read_fields: &[DataField],
    batch_size: usize,
) -> Result<RecordBatch> {
    let rows = range.first().map_or(0, |f| f.row_count);
    // Which file provides each read field: the newest that holds it.
    let mut provider: Vec<Option<usize>> = vec![None; read_fields.len()];
    let mut held: Vec<Vec<DataField>> = Vec::with_capacity(range.len());
    for (i, f) in range.iter().enumerate() {
        if f.row_count != rows {
            return Err(Error::corrupt(
                f.path.clone(),
                format!(
                    "it holds {} rows from row id {:?}, another file of those rows {rows}",
                    f.row_count, f.first_row_id
                ),
            ));
        }
        let schema = table.schema_by_id(f.schema_id).await?;
        let fields: Vec<DataField> = match &f.write_cols {
            None => schema.fields.clone(),
            Some(cols) => schema
                .fields
                .iter()
                .filter(|d| cols.contains(&d.name))
                .cloned()
                .collect(),
        };
        for (j, wanted) in read_fields.iter().enumerate() {
            if provider[j].is_none() && fields.iter().any(|d| d.id == wanted.id) {
                provider[j] = Some(i);
            }
        }
        held.push(fields);
    }
    let mut columns: Vec<Option<ArrayRef>> = vec![None; read_fields.len()];
    for (i, f) in range.iter().enumerate() {
        let wanted: Vec<usize> = (0..read_fields.len())
            .filter(|&j| provider[j] == Some(i))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let fields: Vec<DataField> = wanted.iter().map(|&j| read_fields[j].clone()).collect();
        let format = FileFormat::from_file_name(&f.file_name)?;
        // no page pruning: the files of a range line up row by row
        let stream = read_data_file(
            table.io(),
            &f.path,
            format,
            &held[i],
            &fields,
            SystemColumns::None,
            None,
            batch_size,
            None,
        )
        .await?;
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        let all = concat_batches(&output_schema(&fields, SystemColumns::None)?, &batches)
            .map_err(|e| Error::arrow("merging data-evolution files", e))?;
        if all.num_rows() as i64 != rows {
            return Err(Error::corrupt(
                f.path.clone(),
                format!("it has {} rows, its metadata says {rows}", all.num_rows()),
            ));
        }
        for (k, &j) in wanted.iter().enumerate() {
            columns[j] = Some(all.column(k).clone());
        }
    }
    let schema = output_schema(read_fields, SystemColumns::None)?;
    let columns = columns
        .into_iter()
        .zip(read_fields)
        .zip(schema.fields())
        .map(|((column, field), arrow)| match column {
            Some(c) => Ok(c),
            None if field.data_type.nullable => {
                Ok(new_null_array(arrow.data_type(), rows as usize))
            }
            None => Err(Error::corrupt(
                range[0].path.clone(),
                format!(
                    "no file of its rows holds the NOT NULL column '{}'",
                    field.name
                ),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new_with_options(
        Arc::clone(&schema),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows as usize)),
    )
    .map_err(|e| Error::arrow("merging data-evolution files", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(
        name: &str,
        first: Option<i64>,
        rows: i64,
        seq: i64,
        cols: Option<&[&str]>,
    ) -> SplitFile {
        SplitFile {
            path: name.into(),
            file_name: name.into(),
            file_size: 1,
            row_count: rows,
            schema_id: 0,
            level: 0,
            min_sequence_number: seq,
            max_sequence_number: seq,
            delete_row_count: Some(0),
            min_key: Vec::new(),
            max_key: Vec::new(),
            deletion: None,
            first_row_id: first,
            write_cols: cols.map(|c| c.iter().map(|s| s.to_string()).collect()),
            index: None,
            holds_partition_columns: false,
        }
    }

    #[test]
    fn ranges_group_by_first_row_id_newest_first() {
        let files = vec![
            file("b-old", Some(3), 2, 1, None),
            file("a-new", Some(0), 3, 5, Some(&["v"])),
            file("a-old", Some(0), 3, 2, None),
            file("plain", None, 4, 0, None),
            file("b-new", Some(3), 2, 7, Some(&["w"])),
        ];
        assert!(needs_merge(&files));
        let names: Vec<Vec<String>> = row_ranges(files)
            .unwrap()
            .iter()
            .map(|r| r.iter().map(|f| f.file_name.clone()).collect())
            .collect();
        assert_eq!(
            names,
            [
                vec!["plain"],
                vec!["a-new", "a-old"],
                vec!["b-new", "b-old"]
            ]
        );
        assert!(!needs_merge(&[
            file("x", Some(0), 1, 0, None),
            file("y", Some(1), 1, 0, None)
        ]));
        let overlapping = vec![
            file("x", Some(0), 5, 0, None),
            file("y", Some(3), 1, 0, None),
        ];
        assert!(matches!(
            row_ranges(overlapping),
            Err(Error::Corrupt { .. })
        ));
    }
}
