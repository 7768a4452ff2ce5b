//! ORC data files, streamed stripe by stripe with ranged reads (orc-rust's async reader over
//! [`RangeReader`]): the file tail, then only the streams of the projected columns of each
//! stripe are fetched.
//!
//! ORC timestamps decode at nanosecond or microsecond precision; the caller asks for
//! nanoseconds only when a read field needs them (precision > 6), which keeps values outside
//! the nanosecond range (years before 1677 / after 2262) readable otherwise.

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use orc_rust::arrow_reader::ArrowReaderBuilder;
use orc_rust::projection::ProjectionMask;
use orc_rust::reader::AsyncChunkReader;
use orc_rust::TimestampPrecision;

use super::{select_roots, RangeReader, RawStream};
use crate::error::{Error, Result};
use crate::io::FileIO;

impl AsyncChunkReader for RangeReader {
    fn len(&mut self) -> BoxFuture<'_, std::io::Result<u64>> {
        let size = self.size;
        async move { Ok(size) }.boxed()
    }

    fn get_bytes(
        &mut self,
        offset_from_start: u64,
        length: u64,
    ) -> BoxFuture<'_, std::io::Result<bytes::Bytes>> {
        let range = offset_from_start..offset_from_start.saturating_add(length);
        async move { self.get_range(range).await.map_err(std::io::Error::other) }.boxed()
    }
}

/// Stream the root columns named in `columns` (those present in the file) of an ORC file.
pub(super) async fn open(
    io: &FileIO,
    rel_path: &str,
    columns: &[String],
    batch_size: usize,
    timestamp_nanos: bool,
) -> Result<RawStream> {
    let display = io.display(rel_path);
    let reader = RangeReader::new(io, rel_path).await?;
    let builder = ArrowReaderBuilder::try_new_async(reader)
        .await
        .map_err(|e| Error::corrupt(&display, format!("bad ORC file: {e}")))?;
    let root = builder.file_metadata().root_data_type();
    let indices = select_roots(root.children().iter().map(|c| c.name()), columns);
    let names: Vec<&str> = indices
        .iter()
        .filter_map(|i| root.children().get(*i).map(|c| c.name()))
        .collect();
    let mask = ProjectionMask::named_roots(root, &names);
    let precision = if timestamp_nanos {
        TimestampPrecision::Nanosecond
    } else {
        TimestampPrecision::Microsecond
    };
    let stream = builder
        .with_projection(mask)
        .with_batch_size(batch_size)
        .with_timestamp_precision(precision)
        .build_async();
    Ok(stream
        .map_err(move |e| Error::arrow(format!("reading {display}"), e))
        .boxed())
}
