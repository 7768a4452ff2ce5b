//! Parquet data files, streamed with ranged reads through the object store
//! (`ParquetRecordBatchStreamBuilder` over [`RangeReader`], the replacement arrow-rs
//! recommends for the deprecated `ParquetObjectReader`).
//!
//! Only the leaf columns of the requested root fields are fetched (`ProjectionMask::roots`);
//! the footer and the needed column chunks are read, never the whole file. The embedded
//! `ARROW:schema` (pyarrow writers) is ignored so decoded types depend only on the Parquet
//! schema; the caller normalises types afterwards.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStreamBuilder};
use parquet::arrow::ProjectionMask;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use super::{select_roots, RangeReader, RawStream};
use crate::error::{Error, Result};
use crate::io::FileIO;

impl AsyncFileReader for RangeReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        async move {
            self.get_range(range)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let reader = ParquetMetaDataReader::new()
                .with_metadata_options(options.map(|o| o.metadata_options().clone()));
            Ok(Arc::new(reader.load_and_finish(self, size).await?))
        }
        .boxed()
    }
}

/// Stream the root columns named in `columns` (those present in the file) of a Parquet file.
pub(super) async fn open(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
) -> Result<RawStream> {
    let display = io.display(rel_path);
    let reader = RangeReader::new(io, rel_path).await?;
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
    Ok(stream
        .map_err(move |e| Error::parquet(format!("reading {display}"), e))
        .boxed())
}
