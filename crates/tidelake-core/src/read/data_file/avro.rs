//! Avro data files, streamed block by block with ranged reads (arrow-avro's async reader over
//! [`RangeReader`]). Avro is row-oriented, so every block is fetched whole; projection only
//! saves decoding work.
//!
//! Paimon's Avro layout: a top-level record whose fields are the file's columns; nullable
//! columns are `["null", T]` unions; `_VALUE_KIND` is an Avro `int`; timestamps use the
//! `timestamp-*` logical types even for TIMESTAMP without zone (the caller relabels zones).

use arrow_avro::errors::AvroError;
use arrow_avro::reader::async_reader::read_header_info;
use arrow_avro::reader::{AsyncAvroFileReader, AsyncFileReader};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use serde_json::Value;

use super::{select_roots, RangeReader, RawStream};
use crate::error::{Error, Result};
use crate::io::FileIO;

impl AsyncFileReader for RangeReader {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, std::result::Result<bytes::Bytes, AvroError>> {
        async move {
            self.get_range(range)
                .await
                .map_err(|e| AvroError::External(Box::new(e)))
        }
        .boxed()
    }
}

/// Top-level field names of an Avro record schema (JSON form).
fn record_field_names(schema_json: &str) -> Option<Vec<String>> {
    let schema: Value = serde_json::from_str(schema_json).ok()?;
    let fields = schema.get("fields")?.as_array()?;
    fields
        .iter()
        .map(|f| f.get("name")?.as_str().map(str::to_string))
        .collect()
}

/// Stream the top-level fields named in `columns` (those present in the file) of an Avro file.
pub(super) async fn open(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
) -> Result<RawStream> {
    let display = io.display(rel_path);
    let bad = |e: AvroError| Error::corrupt(&display, format!("bad Avro file: {e}"));
    let mut reader = RangeReader::new(io, rel_path).await?;
    let size = reader.size;
    let header = read_header_info(&mut reader, size, None)
        .await
        .map_err(bad)?;
    let writer_schema = header.writer_schema().map_err(bad)?;
    let names = record_field_names(&writer_schema.json_string).ok_or_else(|| {
        Error::corrupt(
            &display,
            "Avro writer schema is not a record with named fields",
        )
    })?;
    let projection = select_roots(names.iter().map(String::as_str), columns);
    let stream = AsyncAvroFileReader::builder(reader, size, batch_size)
        .with_projection(projection)
        .build_with_header(header)
        .map_err(bad)?;
    Ok(stream
        .map_err(move |e| Error::arrow(format!("reading {display}"), e))
        .boxed())
}
