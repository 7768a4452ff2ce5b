//! ORC data files, streamed stripe by stripe with ranged reads (orc-rust's async reader over
//! [`RangeReader`]): the file tail, then only the streams of the projected columns of each
//! stripe are fetched.
//!
//! ORC timestamps decode at nanosecond or microsecond precision; the caller asks for
//! nanoseconds only when a read field needs them (precision > 6), which keeps values outside
//! the nanosecond range (years before 1677 / after 2262) readable otherwise.
//!
//! ORC CHAR(n) values are stored padded to n characters; as Java's ORC reader
//! (`CharTreeReader`) does, trailing spaces are trimmed on read (also inside ROW, ARRAY, MAP).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, RecordBatch, StringArray, StructArray};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use orc_rust::arrow_reader::ArrowReaderBuilder;
use orc_rust::projection::ProjectionMask;
use orc_rust::reader::AsyncChunkReader;
use orc_rust::schema::DataType as OrcType;
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
        async move {
            // orc-rust asks for empty sections (files without stripe statistics have an empty
            // metadata section); object stores reject empty ranges.
            if range.is_empty() {
                return Ok(bytes::Bytes::new());
            }
            self.get_range(range).await.map_err(std::io::Error::other)
        }
        .boxed()
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
    // Per projected root column (file order, as batches have them): its ORC type.
    let types: Vec<OrcType> = indices
        .iter()
        .filter_map(|i| root.children().get(*i).map(|c| c.data_type().clone()))
        .collect();
    let has_char = types.iter().any(has_char);
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
        .map(move |batch| match batch {
            Ok(batch) if has_char => trim_char_columns(batch, &types),
            other => other,
        })
        .boxed())
}

fn has_char(ty: &OrcType) -> bool {
    match ty {
        OrcType::Char { .. } => true,
        OrcType::Struct { children, .. } => children.iter().any(|c| has_char(c.data_type())),
        OrcType::List { child, .. } => has_char(child),
        OrcType::Map { key, value, .. } => has_char(key) || has_char(value),
        _ => false,
    }
}

fn trim_char_columns(batch: RecordBatch, types: &[OrcType]) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(types)
        .map(|(column, ty)| trim_char(column, ty))
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(batch.schema(), columns)
        .map_err(|e| Error::arrow("trimming ORC CHAR values", e))
}

/// `array` (of ORC type `ty`) with the padding of every CHAR value removed.
fn trim_char(array: &ArrayRef, ty: &OrcType) -> Result<ArrayRef> {
    if !has_char(ty) {
        return Ok(array.clone());
    }
    let err = |e| Error::arrow("trimming ORC CHAR values", e);
    let unexpected = || {
        Error::invalid(format!(
            "ORC column of type {ty:?} decoded as {}",
            array.data_type()
        ))
    };
    Ok(match ty {
        OrcType::Char { .. } => {
            let strings = array.as_string_opt::<i32>().ok_or_else(unexpected)?;
            Arc::new(
                strings
                    .iter()
                    .map(|v| v.map(|s| s.trim_end_matches(' ')))
                    .collect::<StringArray>(),
            )
        }
        OrcType::Struct { children, .. } => {
            let st = array.as_struct_opt().ok_or_else(unexpected)?;
            let columns = st
                .columns()
                .iter()
                .zip(children)
                .map(|(c, child)| trim_char(c, child.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(
                StructArray::try_new(st.fields().clone(), columns, st.nulls().cloned())
                    .map_err(err)?,
            )
        }
        OrcType::List { child, .. } => {
            let (Some(list), arrow_schema::DataType::List(field)) =
                (array.as_list_opt::<i32>(), array.data_type().clone())
            else {
                return Err(unexpected());
            };
            Arc::new(
                ListArray::try_new(
                    field,
                    list.offsets().clone(),
                    trim_char(list.values(), child)?,
                    list.nulls().cloned(),
                )
                .map_err(err)?,
            )
        }
        OrcType::Map { key, value, .. } => {
            let (Some(map), arrow_schema::DataType::Map(field, sorted)) =
                (array.as_map_opt(), array.data_type().clone())
            else {
                return Err(unexpected());
            };
            let entries = map.entries();
            let columns = vec![trim_char(map.keys(), key)?, trim_char(map.values(), value)?];
            let entries =
                StructArray::try_new(entries.fields().clone(), columns, entries.nulls().cloned())
                    .map_err(err)?;
            Arc::new(
                MapArray::try_new(
                    field,
                    map.offsets().clone(),
                    entries,
                    map.nulls().cloned(),
                    sorted,
                )
                .map_err(err)?,
            )
        }
        _ => array.clone(),
    })
}
