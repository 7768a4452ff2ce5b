//! Parquet data files, streamed with ranged reads through the object store.
//!
//! Only the leaf columns of the requested root fields are fetched (`ProjectionMask::roots`);
//! the footer and the needed column chunks are read, never the whole file. The embedded
//! `ARROW:schema` (pyarrow writers) is ignored so decoded types depend only on the Parquet
//! schema; the caller normalises types afterwards.

use futures::{StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::{ParquetObjectReader, ParquetRecordBatchStreamBuilder};
use parquet::arrow::ProjectionMask;

use super::{select_roots, RawStream};
use crate::error::{Error, Result};
use crate::io::FileIO;

/// Stream the root columns named in `columns` (those present in the file) of a Parquet file.
pub(super) async fn open(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
) -> Result<RawStream> {
    let display = io.display(rel_path);
    let size = io.size(rel_path).await?;
    let reader =
        ParquetObjectReader::new(io.store().clone(), io.path(rel_path)).with_file_size(size);
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = ParquetRecordBatchStreamBuilder::new_with_options(reader, options)
        .await
        .map_err(|e| Error::parquet(format!("opening {display}"), e))?;
    let roots = {
        let schema = builder.parquet_schema();
        let names = schema.root_schema().get_fields().iter().map(|f| f.name());
        select_roots(names, columns)
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let stream = builder
        .with_projection(mask)
        .with_batch_size(batch_size)
        .build()
        .map_err(|e| Error::parquet(format!("reading {display}"), e))?;
    Ok(stream.map_err(move |e| Error::parquet(format!("reading {display}"), e)).boxed())
}
