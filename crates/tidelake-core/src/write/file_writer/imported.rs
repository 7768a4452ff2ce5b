//! Metadata of data files another writer wrote, taken into a table as they are (a Hive
//! table's files, migrated or cloned: Java `FileMetaUtils.constructFileMeta`).
//!
//! Invariants: the metadata is Java's `DataFileMeta.forAppend` of the file: level 0, sequence
//! numbers 0, no key statistics, no file index, `APPEND` source, and value statistics of
//! every column in all-mode (never dense), each as this table's writers compute them for the
//! file's format (`metadata.stats-mode`, `fields.<c>.stats-mode`,
//! `metadata.stats-keep-first-n-columns`), from the file's rows. A column the file does not
//! store (a Hive table's partition columns live in directory names) has no statistics at all,
//! as Java's extractors find none for it; its values come from the partition when read.

use futures::TryStreamExt;
use tidelake_spec::manifest::{DataFileMeta, FileSource, SimpleStats, EMPTY_ROW};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataField;

use super::stats::{all_mode, ColStats, ColumnStats, StatsConfig};
use crate::error::Result;
use crate::io::FileIO;
use crate::read::data_file::{read_data_file, FileFormat, SystemColumns};

/// Rows decoded at a time while describing a file.
const BATCH_ROWS: usize = 8192;

/// The metadata of data file `rel` of `format`, imported as it is into an append table of
/// `schema`; `unstored`: the columns the file does not hold (see the module docs).
pub(crate) async fn imported_file_meta(
    io: &FileIO,
    rel: &str,
    format: FileFormat,
    schema: &TableSchema,
    unstored: &[String],
) -> Result<DataFileMeta> {
    let options = schema.options();
    let config = StatsConfig::new(options, options.metadata_stats_mode())?;
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    let modes = config.value_modes(&names);
    let stored: Vec<(usize, &DataField)> = schema
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| !unstored.contains(&f.name))
        .collect();
    let read_fields: Vec<DataField> = stored.iter().map(|(_, f)| (*f).clone()).collect();
    let mut columns: Vec<ColumnStats> = stored
        .iter()
        .map(|(i, f)| ColumnStats::new(f.data_type.clone(), &modes[*i..=*i], format))
        .collect();
    let mut rows = 0i64;
    let mut batches = read_data_file(
        io,
        rel,
        format,
        &schema.fields,
        &read_fields,
        SystemColumns::None,
        None,
        BATCH_ROWS,
        None,
    )
    .await?;
    while let Some(batch) = batches.try_next().await? {
        rows += i64::try_from(batch.num_rows()).unwrap_or(i64::MAX);
        for (stats, column) in columns.iter_mut().zip(batch.columns()) {
            stats.update(column.as_ref())?;
        }
    }
    let mut finished = columns
        .iter()
        .zip(&stored)
        .map(|(c, (i, _))| c.finish(modes[*i]));
    let value_stats: Vec<ColStats> = schema
        .fields
        .iter()
        .map(|f| match unstored.contains(&f.name) {
            true => ColStats::NONE,
            false => finished.next().unwrap_or(ColStats::NONE),
        })
        .collect();
    let types: Vec<_> = schema.fields.iter().map(|f| f.data_type.clone()).collect();
    let file_name = rel.rsplit('/').next().unwrap_or(rel).to_string();
    Ok(DataFileMeta {
        file_name,
        file_size: i64::try_from(io.size(rel).await?).unwrap_or(i64::MAX),
        row_count: rows,
        min_key: EMPTY_ROW.to_vec(),
        max_key: EMPTY_ROW.to_vec(),
        key_stats: SimpleStats::empty(),
        value_stats: all_mode(&value_stats, &types)?,
        min_sequence_number: 0,
        max_sequence_number: 0,
        schema_id: schema.id,
        level: 0,
        extra_files: Vec::new(),
        creation_time: Some(io.env().local_now_millis()),
        delete_row_count: Some(0),
        embedded_index: None,
        file_source: Some(FileSource::Append),
        value_stats_cols: None,
        external_path: None,
        first_row_id: None,
        write_cols: None,
        write_cols_sequences: None,
    })
}
