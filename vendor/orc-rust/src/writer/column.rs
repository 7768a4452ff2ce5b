// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

use std::marker::PhantomData;

use arrow::{
    array::{Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder},
    buffer::NullBuffer,
    compute::filter,
    datatypes::{
        ArrowNativeType, ArrowPrimitiveType, ArrowTimestampType, ByteArrayType, DataType,
        Date32Type, Decimal128Type, Float32Type, Float64Type, GenericBinaryType, GenericStringType,
        Int16Type, Int32Type, Int64Type, Int8Type,
    },
};
use bytes::{BufMut, BytesMut};
use snafu::ResultExt;

use crate::{
    encoding::{
        boolean::BooleanEncoder,
        byte::ByteRleEncoder,
        decimal::UnboundedVarintStreamEncoder,
        float::FloatEncoder,
        integer::{rle_v2::RleV2Encoder, NInt, SignedEncoding, UnsignedEncoding},
        timestamp::TimestampEncoder,
        PrimitiveValueEncoder,
    },
    error::{ArrowSnafu, Result, UnexpectedSnafu},
    memory::EstimateMemory,
    writer::StreamType,
};

use super::{ColumnEncoding, Stream};

/// Encodes a specific column for a stripe. Will encode to an internal memory
/// buffer until it is finished, in which case it returns the stream bytes to
/// be serialized to a writer.
pub trait ColumnStripeEncoder: EstimateMemory {
    /// Encode entire provided [`ArrayRef`] to internal buffer.
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()>;

    /// Column encoding used for streams.
    fn column_encoding(&self) -> ColumnEncoding;

    /// Emit buffered streams to be written to the writer, and reset state
    /// in preparation for next stripe.
    fn finish(&mut self) -> Vec<Stream>;

    /// Encoders of the child columns of a compound type, in column order
    /// (none for primitive types).
    fn children_mut(&mut self) -> &mut [Box<dyn ColumnStripeEncoder>] {
        &mut []
    }
}

// TODO: simplify these generics, probably overcomplicating things here

/// Encoder for primitive ORC types (e.g. int, float). Uses a specific [`PrimitiveValueEncoder`] to
/// encode the primitive values into internal memory. When finished, outputs a DATA stream and
/// optionally a PRESENT stream.
pub struct PrimitiveColumnEncoder<T: ArrowPrimitiveType, E: PrimitiveValueEncoder<T::Native>> {
    encoder: E,
    column_encoding: ColumnEncoding,
    /// Lazily initialized once we encounter an [`Array`] with a [`NullBuffer`].
    present: Option<BooleanEncoder>,
    encoded_count: usize,
    _phantom: PhantomData<T>,
}

impl<T: ArrowPrimitiveType, E: PrimitiveValueEncoder<T::Native>> PrimitiveColumnEncoder<T, E> {
    // TODO: encode knowledge of the ColumnEncoding as part of the type, instead of requiring it
    //       to be passed at runtime
    pub fn new(column_encoding: ColumnEncoding) -> Self {
        Self {
            encoder: E::new(),
            column_encoding,
            present: None,
            encoded_count: 0,
            _phantom: Default::default(),
        }
    }
}

impl<T: ArrowPrimitiveType, E: PrimitiveValueEncoder<T::Native>> EstimateMemory
    for PrimitiveColumnEncoder<T, E>
{
    fn estimate_memory_size(&self) -> usize {
        self.encoder.estimate_memory_size()
            + self
                .present
                .as_ref()
                .map(|p| p.estimate_memory_size())
                .unwrap_or(0)
    }
}

impl<T: ArrowPrimitiveType, E: PrimitiveValueEncoder<T::Native>> ColumnStripeEncoder
    for PrimitiveColumnEncoder<T, E>
{
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        // TODO: return as result instead of panicking here?
        let array = array.as_primitive::<T>();
        // Handling case where if encoding across RecordBatch boundaries, arrays
        // might introduce a NullBuffer
        match (array.nulls(), &mut self.present) {
            // Need to copy only the valid values as indicated by null_buffer
            (Some(null_buffer), Some(present)) => {
                present.extend(null_buffer);
                for index in null_buffer.valid_indices() {
                    let v = array.value(index);
                    self.encoder.write_one(v);
                }
            }
            (Some(null_buffer), None) => {
                // Lazily initiate present buffer and ensure backfill the already encoded values
                let mut present = BooleanEncoder::new();
                present.extend_present(self.encoded_count);
                present.extend(null_buffer);
                self.present = Some(present);
                for index in null_buffer.valid_indices() {
                    let v = array.value(index);
                    self.encoder.write_one(v);
                }
            }
            // Simple direct copy from values buffer, extending present if needed
            (None, _) => {
                let values = array.values();
                self.encoder.write_slice(values);
                if let Some(present) = self.present.as_mut() {
                    present.extend_present(array.len())
                }
            }
        }
        self.encoded_count += array.len() - array.null_count();
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        self.column_encoding
    }

    fn finish(&mut self) -> Vec<Stream> {
        let bytes = self.encoder.take_inner();
        // Return mandatory Data stream and optional Present stream
        let data = Stream {
            kind: StreamType::Data,
            bytes,
        };
        self.encoded_count = 0;
        match &mut self.present {
            Some(present) => {
                let bytes = present.finish();
                let present = Stream {
                    kind: StreamType::Present,
                    bytes,
                };
                vec![data, present]
            }
            None => vec![data],
        }
    }
}

/// Seconds from the ORC epoch of 1 January 2015 to the Unix epoch.
const ORC_EPOCH_UTC_SECONDS_SINCE_UNIX_EPOCH: i64 = 1_420_070_400;

/// Encodes an Arrow timestamp into the DATA and SECONDARY streams used by ORC.
pub struct TimestampColumnEncoder<T: ArrowTimestampType> {
    encoder: TimestampEncoder<T>,
    present: Option<BooleanEncoder>,
    encoded_count: usize,
}

impl<T: ArrowTimestampType> TimestampColumnEncoder<T> {
    pub fn new() -> Self {
        Self {
            encoder: TimestampEncoder::new(
                ORC_EPOCH_UTC_SECONDS_SINCE_UNIX_EPOCH,
                Box::new(RleV2Encoder::<i64, SignedEncoding>::new()),
                Box::new(RleV2Encoder::<i64, UnsignedEncoding>::new()),
            ),
            present: None,
            encoded_count: 0,
        }
    }
}

impl<T: ArrowTimestampType> EstimateMemory for TimestampColumnEncoder<T> {
    fn estimate_memory_size(&self) -> usize {
        self.encoder.estimate_memory_size()
            + self
                .present
                .as_ref()
                .map(|present| present.estimate_memory_size())
                .unwrap_or(0)
    }
}

impl<T: ArrowTimestampType> ColumnStripeEncoder for TimestampColumnEncoder<T> {
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        let array = array.as_primitive::<T>();
        if let Some(null_buffer) = array.nulls() {
            let values = null_buffer
                .valid_indices()
                .map(|index| array.value(index))
                .collect::<Vec<_>>();
            self.encoder.encode(&values)?;

            let encoded_count = self.encoded_count;
            let present = self.present.get_or_insert_with(|| {
                let mut present = BooleanEncoder::new();
                present.extend_present(encoded_count);
                present
            });
            present.extend(null_buffer);
        } else {
            self.encoder.encode(array.values())?;
            if let Some(present) = self.present.as_mut() {
                present.extend_present(array.len());
            }
        }
        self.encoded_count += array.len() - array.null_count();
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::DirectV2
    }

    fn finish(&mut self) -> Vec<Stream> {
        let (data, secondary) = self.encoder.take_inner();
        let mut streams = vec![
            Stream {
                kind: StreamType::Data,
                bytes: data,
            },
            Stream {
                kind: StreamType::Secondary,
                bytes: secondary,
            },
        ];
        self.encoded_count = 0;
        if let Some(present) = self.present.as_mut() {
            streams.push(Stream {
                kind: StreamType::Present,
                bytes: present.finish(),
            });
        }
        streams
    }
}

pub struct BooleanColumnEncoder {
    encoder: BooleanEncoder,
    /// Lazily initialized once we encounter an [`Array`] with a [`NullBuffer`].
    present: Option<BooleanEncoder>,
    encoded_count: usize,
}

impl BooleanColumnEncoder {
    pub fn new() -> Self {
        Self {
            encoder: BooleanEncoder::new(),
            present: None,
            encoded_count: 0,
        }
    }
}

impl EstimateMemory for BooleanColumnEncoder {
    fn estimate_memory_size(&self) -> usize {
        self.encoder.estimate_memory_size()
            + self
                .present
                .as_ref()
                .map(|p| p.estimate_memory_size())
                .unwrap_or(0)
    }
}

impl ColumnStripeEncoder for BooleanColumnEncoder {
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        // TODO: return as result instead of panicking here?
        let array = array.as_boolean();
        // Handling case where if encoding across RecordBatch boundaries, arrays
        // might introduce a NullBuffer
        match (array.nulls(), &mut self.present) {
            // Need to copy only the valid values as indicated by null_buffer
            (Some(null_buffer), Some(present)) => {
                present.extend(null_buffer);
                for index in null_buffer.valid_indices() {
                    let v = array.value(index);
                    self.encoder.extend_boolean(v);
                }
            }
            (Some(null_buffer), None) => {
                // Lazily initiate present buffer and ensure backfill the already encoded values
                let mut present = BooleanEncoder::new();
                present.extend_present(self.encoded_count);
                present.extend(null_buffer);
                self.present = Some(present);
                for index in null_buffer.valid_indices() {
                    let v = array.value(index);
                    self.encoder.extend_boolean(v);
                }
            }
            // Simple direct copy from values buffer, extending present if needed
            (None, _) => {
                let values = array.values();
                self.encoder.extend_bb(values);
                if let Some(present) = self.present.as_mut() {
                    present.extend_present(array.len())
                }
            }
        }
        self.encoded_count += array.len() - array.null_count();
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::Direct
    }

    fn finish(&mut self) -> Vec<Stream> {
        let bytes = self.encoder.finish();
        // Return mandatory Data stream and optional Present stream
        let data = Stream {
            kind: StreamType::Data,
            bytes,
        };
        self.encoded_count = 0;
        match &mut self.present {
            Some(present) => {
                let bytes = present.finish();
                let present = Stream {
                    kind: StreamType::Present,
                    bytes,
                };
                vec![data, present]
            }
            None => vec![data],
        }
    }
}

/// Direct encodes binary/strings.
pub struct GenericBinaryColumnEncoder<T: ByteArrayType>
where
    T::Offset: NInt,
{
    string_bytes: BytesMut,
    length_encoder: RleV2Encoder<T::Offset, UnsignedEncoding>,
    present: Option<BooleanEncoder>,
    encoded_count: usize,
}

impl<T: ByteArrayType> GenericBinaryColumnEncoder<T>
where
    T::Offset: NInt,
{
    pub fn new() -> Self {
        Self {
            string_bytes: BytesMut::new(),
            length_encoder: RleV2Encoder::new(),
            present: None,
            encoded_count: 0,
        }
    }
}

impl<T: ByteArrayType> EstimateMemory for GenericBinaryColumnEncoder<T>
where
    T::Offset: NInt,
{
    fn estimate_memory_size(&self) -> usize {
        self.string_bytes.len()
            + self.length_encoder.estimate_memory_size()
            + self
                .present
                .as_ref()
                .map(|p| p.estimate_memory_size())
                .unwrap_or(0)
    }
}

impl<T: ByteArrayType> ColumnStripeEncoder for GenericBinaryColumnEncoder<T>
where
    T::Offset: NInt,
{
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        if array.is_empty() {
            return Ok(());
        }
        // TODO: return as result instead of panicking here?
        let array = array.as_bytes::<T>();
        // Handling case where if encoding across RecordBatch boundaries, arrays
        // might introduce a NullBuffer
        match (array.nulls(), &mut self.present) {
            // Need to copy only the valid values as indicated by null_buffer
            (Some(null_buffer), Some(present)) => {
                present.extend(null_buffer);
                for index in null_buffer.valid_indices() {
                    self.length_encoder.write_one(array.value_length(index));
                    self.string_bytes.put_slice(array.value(index).as_ref());
                }
            }
            (Some(null_buffer), None) => {
                // Lazily initiate present buffer and ensure backfill the already encoded values
                let mut present = BooleanEncoder::new();
                present.extend_present(self.encoded_count);
                present.extend(null_buffer);
                self.present = Some(present);
                for index in null_buffer.valid_indices() {
                    self.length_encoder.write_one(array.value_length(index));
                    self.string_bytes.put_slice(array.value(index).as_ref());
                }
            }
            // Simple direct copy from values buffer, extending present if needed
            (None, _) => {
                let offsets = array.offsets();
                let first_offset = offsets[0];

                let mut length_to_copy = <T::Offset as num::Zero>::zero();
                let mut prev_offset = first_offset;
                // Derive lengths from offsets then encode them as ints
                for &offset in offsets.iter().skip(1) {
                    let length = offset - prev_offset;
                    self.length_encoder.write_one(length);
                    length_to_copy += length;
                    prev_offset = offset;
                }
                // Copy all string bytes in a single go
                // TODO: this cast to i64 to usize can be cleaned up?
                let first_offset = first_offset.as_i64() as usize;
                let end_offset = first_offset + length_to_copy.as_i64() as usize;
                let string_bytes = &array.value_data()[first_offset..end_offset];
                self.string_bytes.put_slice(string_bytes);

                if let Some(present) = self.present.as_mut() {
                    present.extend_present(array.len())
                }
            }
        }
        self.encoded_count += array.len() - array.null_count();
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::DirectV2
    }

    fn finish(&mut self) -> Vec<Stream> {
        // TODO: throwing away allocations here
        let data_bytes = std::mem::take(&mut self.string_bytes);
        let length_bytes = self.length_encoder.take_inner();
        let data = Stream {
            kind: StreamType::Data,
            bytes: data_bytes.into(),
        };
        let length = Stream {
            kind: StreamType::Length,
            bytes: length_bytes,
        };
        self.encoded_count = 0;
        match &mut self.present {
            Some(present) => {
                let bytes = present.finish();
                let present = Stream {
                    kind: StreamType::Present,
                    bytes,
                };
                vec![data, length, present]
            }
            None => vec![data, length],
        }
    }
}

/// Encodes Arrow decimals as ORC DECIMAL: the unscaled values as unbounded
/// varints in the DATA stream and the scale of each value in the SECONDARY
/// stream, as the Java writer does.
pub struct DecimalColumnEncoder {
    values: PrimitiveColumnEncoder<Decimal128Type, UnboundedVarintStreamEncoder>,
    scales: RleV2Encoder<i32, SignedEncoding>,
    scale: i32,
}

impl DecimalColumnEncoder {
    pub fn new(scale: i32) -> Self {
        Self {
            values: PrimitiveColumnEncoder::new(ColumnEncoding::DirectV2),
            scales: RleV2Encoder::new(),
            scale,
        }
    }
}

impl EstimateMemory for DecimalColumnEncoder {
    fn estimate_memory_size(&self) -> usize {
        self.values.estimate_memory_size() + self.scales.estimate_memory_size()
    }
}

impl ColumnStripeEncoder for DecimalColumnEncoder {
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        self.values.encode_array(array)?;
        for _ in 0..array.len() - array.null_count() {
            self.scales.write_one(self.scale);
        }
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::DirectV2
    }

    fn finish(&mut self) -> Vec<Stream> {
        let mut streams = self.values.finish();
        streams.push(Stream {
            kind: StreamType::Secondary,
            bytes: self.scales.take_inner(),
        });
        streams
    }
}

/// PRESENT stream of a compound column, started at the first null so that
/// columns without nulls carry none.
#[derive(Default)]
struct PresentStream {
    encoder: Option<BooleanEncoder>,
    rows: usize,
}

impl PresentStream {
    fn extend(&mut self, nulls: Option<&NullBuffer>, len: usize) {
        match nulls.filter(|nulls| nulls.null_count() > 0) {
            Some(nulls) => {
                let rows = self.rows;
                self.encoder
                    .get_or_insert_with(|| {
                        let mut present = BooleanEncoder::new();
                        present.extend_present(rows);
                        present
                    })
                    .extend(nulls);
            }
            None => {
                if let Some(present) = self.encoder.as_mut() {
                    present.extend_present(len);
                }
            }
        }
        self.rows += len;
    }

    fn estimate_memory_size(&self) -> usize {
        self.encoder
            .as_ref()
            .map(|present| present.estimate_memory_size())
            .unwrap_or(0)
    }

    fn finish(&mut self) -> Option<Stream> {
        self.rows = 0;
        self.encoder.take().map(|mut present| Stream {
            kind: StreamType::Present,
            bytes: present.finish(),
        })
    }
}

/// The rows of `array` selected by `mask` (all rows without one).
fn filter_rows(array: &ArrayRef, mask: Option<&BooleanArray>) -> Result<ArrayRef> {
    match mask {
        Some(mask) => filter(array, mask).context(ArrowSnafu),
        None => Ok(array.clone()),
    }
}

/// Encodes an Arrow struct as ORC STRUCT. The children hold values only for
/// the rows where the struct is present, as ORC requires.
pub struct StructColumnEncoder {
    children: Vec<Box<dyn ColumnStripeEncoder>>,
    present: PresentStream,
}

impl StructColumnEncoder {
    pub fn new(children: Vec<Box<dyn ColumnStripeEncoder>>) -> Self {
        Self {
            children,
            present: PresentStream::default(),
        }
    }
}

impl EstimateMemory for StructColumnEncoder {
    fn estimate_memory_size(&self) -> usize {
        self.present.estimate_memory_size()
            + self
                .children
                .iter()
                .map(|child| child.estimate_memory_size())
                .sum::<usize>()
    }
}

impl ColumnStripeEncoder for StructColumnEncoder {
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        let array = array.as_struct();
        self.present.extend(array.nulls(), array.len());
        let mask = array
            .nulls()
            .filter(|nulls| nulls.null_count() > 0)
            .map(|nulls| BooleanArray::new(nulls.inner().clone(), None));
        for (child, column) in self.children.iter_mut().zip(array.columns()) {
            child.encode_array(&filter_rows(column, mask.as_ref())?)?;
        }
        Ok(())
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::Direct
    }

    fn finish(&mut self) -> Vec<Stream> {
        self.present.finish().into_iter().collect()
    }

    fn children_mut(&mut self) -> &mut [Box<dyn ColumnStripeEncoder>] {
        &mut self.children
    }
}

/// Encodes Arrow lists and maps as ORC LIST and MAP: the LENGTH of each present
/// row, and the children (the list element, or the map key and value) holding
/// the entries of the present rows only, as ORC requires.
pub struct ListColumnEncoder {
    children: Vec<Box<dyn ColumnStripeEncoder>>,
    lengths: RleV2Encoder<i64, UnsignedEncoding>,
    present: PresentStream,
}

impl ListColumnEncoder {
    /// `children` are one encoder for a list, the key and value encoders for
    /// a map.
    pub fn new(children: Vec<Box<dyn ColumnStripeEncoder>>) -> Self {
        Self {
            children,
            lengths: RleV2Encoder::new(),
            present: PresentStream::default(),
        }
    }

    fn encode_rows<O: ArrowNativeType>(
        &mut self,
        offsets: &[O],
        nulls: Option<&NullBuffer>,
        entries: &[ArrayRef],
    ) -> Result<()> {
        self.present.extend(nulls, offsets.len() - 1);
        let is_present = |row: usize| nulls.map_or(true, |nulls| nulls.is_valid(row));
        let lengths = offsets
            .windows(2)
            .map(|w| w[1].as_usize() - w[0].as_usize());
        let mut spans_absent_rows = false;
        for (row, length) in lengths.clone().enumerate() {
            if is_present(row) {
                self.lengths.write_one(length as i64);
            } else {
                spans_absent_rows |= length > 0;
            }
        }
        // Arrow allows a null row to span entries; ORC has none for it
        let mask = spans_absent_rows.then(|| {
            let mut keep = BooleanBufferBuilder::new(0);
            for (row, length) in lengths.enumerate() {
                keep.append_n(length, is_present(row));
            }
            BooleanArray::new(keep.finish(), None)
        });
        let start = offsets[0].as_usize();
        let len = offsets[offsets.len() - 1].as_usize() - start;
        for (child, entries) in self.children.iter_mut().zip(entries) {
            child.encode_array(&filter_rows(&entries.slice(start, len), mask.as_ref())?)?;
        }
        Ok(())
    }
}

impl EstimateMemory for ListColumnEncoder {
    fn estimate_memory_size(&self) -> usize {
        self.present.estimate_memory_size()
            + self.lengths.estimate_memory_size()
            + self
                .children
                .iter()
                .map(|child| child.estimate_memory_size())
                .sum::<usize>()
    }
}

impl ColumnStripeEncoder for ListColumnEncoder {
    fn encode_array(&mut self, array: &ArrayRef) -> Result<()> {
        match array.data_type() {
            DataType::List(_) => {
                let array = array.as_list::<i32>();
                self.encode_rows(
                    array.value_offsets(),
                    array.nulls(),
                    &[array.values().clone()],
                )
            }
            DataType::LargeList(_) => {
                let array = array.as_list::<i64>();
                self.encode_rows(
                    array.value_offsets(),
                    array.nulls(),
                    &[array.values().clone()],
                )
            }
            DataType::Map(_, _) => {
                let array = array.as_map();
                self.encode_rows(
                    array.value_offsets(),
                    array.nulls(),
                    array.entries().columns(),
                )
            }
            other => UnexpectedSnafu {
                msg: format!("list encoder given {other}"),
            }
            .fail(),
        }
    }

    fn column_encoding(&self) -> ColumnEncoding {
        ColumnEncoding::DirectV2
    }

    fn finish(&mut self) -> Vec<Stream> {
        let mut streams = vec![Stream {
            kind: StreamType::Length,
            bytes: self.lengths.take_inner(),
        }];
        streams.extend(self.present.finish());
        streams
    }

    fn children_mut(&mut self) -> &mut [Box<dyn ColumnStripeEncoder>] {
        &mut self.children
    }
}

pub type FloatColumnEncoder = PrimitiveColumnEncoder<Float32Type, FloatEncoder<f32>>;
pub type DoubleColumnEncoder = PrimitiveColumnEncoder<Float64Type, FloatEncoder<f64>>;
pub type ByteColumnEncoder = PrimitiveColumnEncoder<Int8Type, ByteRleEncoder>;
pub type Int16ColumnEncoder = PrimitiveColumnEncoder<Int16Type, RleV2Encoder<i16, SignedEncoding>>;
pub type Int32ColumnEncoder = PrimitiveColumnEncoder<Int32Type, RleV2Encoder<i32, SignedEncoding>>;
pub type Int64ColumnEncoder = PrimitiveColumnEncoder<Int64Type, RleV2Encoder<i64, SignedEncoding>>;
pub type DateColumnEncoder = PrimitiveColumnEncoder<Date32Type, RleV2Encoder<i32, SignedEncoding>>;
pub type StringColumnEncoder = GenericBinaryColumnEncoder<GenericStringType<i32>>;
pub type LargeStringColumnEncoder = GenericBinaryColumnEncoder<GenericStringType<i64>>;
pub type BinaryColumnEncoder = GenericBinaryColumnEncoder<GenericBinaryType<i32>>;
pub type LargeBinaryColumnEncoder = GenericBinaryColumnEncoder<GenericBinaryType<i64>>;
