//! The `bitmap` file index (Java `BitmapFileIndex`, `BitmapFileIndexMeta`,
//! `BitmapFileIndexMetaV2`): per distinct value of a column, the Roaring bitmap of the rows
//! (positions in the data file) holding it, plus one of the null rows.
//!
//! Values are keyed as Java keys them ([`BitmapKey`]): strings by their UTF-8 bytes, TINYINT /
//! SMALLINT / INT / BIGINT / BOOLEAN as themselves, DATE and TIME as INT, timestamps as the
//! BIGINT of [`super::timestamp_key`], FLOAT / DOUBLE by their IEEE bits with NaN canonical.
//! Keys are written big-endian (a string as an i32 byte length then its bytes). A bitmap
//! holding one row is not stored: its entry's offset is `-1 - row`.
//!
//! ```text
//! V2 (default): version u8 (2) | row count i32 | value count i32 | has null u8 |
//!   [null offset i32 | null bitmap length i32] | block count i32 |
//!   per block: first key | block offset i32 |  bitmaps offset i32 (= blocks' total size) |
//!   blocks: entry count i32 | per entry (in key order): key | offset i32 | length i32 (-1: one row) |
//!   bitmaps: [null bitmap if > 1 row] | bitmaps of more than one row, in entry order
//! V1 (`version = 1`): version u8 (1) | row count i32 | value count i32 | has null u8 |
//!   [null offset i32] | per entry: key | offset i32 | bitmaps
//! ```
//!
//! A block holds entries while its size (4 + per entry 8 + key size) stays within
//! `file-index.bitmap.<column>.index-block-size` (default 16 kb). Bitmaps are in Roaring's
//! portable format after Java's `runOptimize`. The entries of V1 and the bitmaps are in Java's
//! `HashMap` iteration order over the distinct values ([`JavaHashOrder`]), so the bytes are
//! Java's own — except where Java's map would have turned a bucket into a tree (8+ values whose
//! hashes collide in the table), whose order is not reproduced; readers do not depend on it.
//!
//! Invariant: [`BitmapIndex::rows`] of a key is exactly the set of rows the writer was given it.

use std::cmp::Ordering;
use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::{java_double_bits, java_float_bits, java_roaring_bytes, timestamp_key, to_i32, Cursor};
use crate::bucket::java_hash_bytes;
use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::types::{DataType, TypeKind};

/// The index type name of bitmap indexes.
pub const BITMAP: &str = "bitmap";

const VERSION_1: u8 = 1;
const VERSION_2: u8 = 2;

/// A column with a bitmap index (`file-index.bitmap.columns`) and its layout
/// (`file-index.bitmap.<column>.version`, 1 or 2, default 2;
/// `file-index.bitmap.<column>.index-block-size`, default 16 kb).
#[derive(Debug, Clone, PartialEq)]
pub struct BitmapColumn {
    pub column: String,
    pub version: u8,
    pub index_block_size: u64,
}

/// The bitmap columns `options` ask writers for.
pub fn bitmap_columns(options: &Options) -> Result<Vec<BitmapColumn>> {
    super::indexed_columns(options, BITMAP)
        .into_iter()
        .map(|column| {
            let key = |k: &str| super::column_option_key(options, BITMAP, &column, k);
            let version = match options.get_i32(&key("version"))? {
                None => VERSION_2,
                Some(1) => VERSION_1,
                Some(2) => VERSION_2,
                Some(v) => {
                    return Err(Error::Invalid(format!(
                        "{} must be 1 or 2, got {v}",
                        key("version")
                    )))
                }
            };
            let index_block_size = options
                .get_memory_size(&key("index-block-size"))?
                .unwrap_or(16 * 1024);
            Ok(BitmapColumn {
                column,
                version,
                index_block_size,
            })
        })
        .collect()
}

/// How Java keys a column's values (`BitmapTypeVisitor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    Str,
    Byte,
    Short,
    Int,
    Long,
    Float,
    Double,
    Bool,
}

impl KeyKind {
    pub(super) fn of(ty: &DataType) -> Option<KeyKind> {
        Some(match ty.kind {
            TypeKind::Char(_) | TypeKind::VarChar(_) => KeyKind::Str,
            TypeKind::Boolean => KeyKind::Bool,
            TypeKind::TinyInt => KeyKind::Byte,
            TypeKind::SmallInt => KeyKind::Short,
            TypeKind::Int | TypeKind::Date | TypeKind::Time(_) => KeyKind::Int,
            TypeKind::BigInt | TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_) => {
                KeyKind::Long
            }
            TypeKind::Float => KeyKind::Float,
            TypeKind::Double => KeyKind::Double,
            _ => return None,
        })
    }

    pub(super) fn read(self, c: &mut Cursor<'_>) -> Result<BitmapKey> {
        Ok(match self {
            KeyKind::Str => {
                let len = usize::try_from(c.i32()?)
                    .map_err(|_| Error::corrupt("bitmap index", "negative key length"))?;
                BitmapKey::Str(c.take(len)?.to_vec())
            }
            KeyKind::Byte => BitmapKey::Byte(c.u8()? as i8),
            KeyKind::Short => BitmapKey::Short(c.i16()?),
            KeyKind::Int => BitmapKey::Int(c.i32()?),
            KeyKind::Long => BitmapKey::Long(c.i64()?),
            KeyKind::Float => BitmapKey::Float(c.i32()? as u32),
            KeyKind::Double => BitmapKey::Double(c.i64()? as u64),
            KeyKind::Bool => BitmapKey::Bool(c.u8()? != 0),
        })
    }
}

/// Whether Java can build a bitmap index on a column of `ty` (not BINARY, DECIMAL, nested).
pub fn bitmap_indexable(ty: &DataType) -> bool {
    KeyKind::of(ty).is_some()
}

/// A value as a bitmap index keys it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BitmapKey {
    Str(Vec<u8>),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    /// `Float.floatToIntBits`.
    Float(u32),
    /// `Double.doubleToLongBits`.
    Double(u64),
    Bool(bool),
}

/// The key of non-null `value` of a column of type `ty`; `None` for nulls, types bitmap
/// indexes do not support and values of another kind.
pub fn bitmap_key(value: &Datum, ty: &DataType) -> Option<BitmapKey> {
    Some(match (value, &ty.kind) {
        (Datum::String(s), TypeKind::Char(_) | TypeKind::VarChar(_)) => {
            BitmapKey::Str(s.as_bytes().to_vec())
        }
        (Datum::Boolean(b), TypeKind::Boolean) => BitmapKey::Bool(*b),
        (Datum::TinyInt(v), TypeKind::TinyInt) => BitmapKey::Byte(*v),
        (Datum::SmallInt(v), TypeKind::SmallInt) => BitmapKey::Short(*v),
        (Datum::Int(v), TypeKind::Int)
        | (Datum::Date(v), TypeKind::Date)
        | (Datum::Time(v), TypeKind::Time(_)) => BitmapKey::Int(*v),
        (Datum::BigInt(v), TypeKind::BigInt) => BitmapKey::Long(*v),
        (Datum::Float(v), TypeKind::Float) => BitmapKey::Float(java_float_bits(*v)),
        (Datum::Double(v), TypeKind::Double) => BitmapKey::Double(java_double_bits(*v)),
        (
            Datum::Timestamp { millis, nanos },
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
        ) => BitmapKey::Long(timestamp_key(*millis, *nanos, *p)),
        _ => return None,
    })
}

impl BitmapKey {
    /// The key's Java `hashCode()` (`Integer`, `Long`, `Float`, ..., `BinaryString`).
    fn java_hash(&self) -> i32 {
        match self {
            BitmapKey::Str(b) => java_hash_bytes(b),
            BitmapKey::Byte(v) => i32::from(*v),
            BitmapKey::Short(v) => i32::from(*v),
            BitmapKey::Int(v) => *v,
            BitmapKey::Long(v) => (*v as u64 ^ (*v as u64 >> 32)) as i32,
            BitmapKey::Float(bits) => *bits as i32,
            BitmapKey::Double(bits) => (bits ^ (bits >> 32)) as i32,
            BitmapKey::Bool(b) => {
                if *b {
                    1231
                } else {
                    1237
                }
            }
        }
    }

    /// Java's comparator of keys of one kind (`BinaryString` unsigned bytes, `Float.compare`).
    pub(super) fn java_cmp(&self, other: &BitmapKey) -> Ordering {
        match (self, other) {
            (BitmapKey::Str(a), BitmapKey::Str(b)) => a.cmp(b),
            (BitmapKey::Byte(a), BitmapKey::Byte(b)) => a.cmp(b),
            (BitmapKey::Short(a), BitmapKey::Short(b)) => a.cmp(b),
            (BitmapKey::Int(a), BitmapKey::Int(b)) => a.cmp(b),
            (BitmapKey::Long(a), BitmapKey::Long(b)) => a.cmp(b),
            // canonical NaN bits: total order is Float.compare / Double.compare
            (BitmapKey::Float(a), BitmapKey::Float(b)) => {
                f32::from_bits(*a).total_cmp(&f32::from_bits(*b))
            }
            (BitmapKey::Double(a), BitmapKey::Double(b)) => {
                f64::from_bits(*a).total_cmp(&f64::from_bits(*b))
            }
            (BitmapKey::Bool(a), BitmapKey::Bool(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }

    /// Serialised size (`getSerializeSizeMeasure`).
    pub(super) fn size(&self) -> usize {
        match self {
            BitmapKey::Str(b) => 4 + b.len(),
            BitmapKey::Byte(_) | BitmapKey::Bool(_) => 1,
            BitmapKey::Short(_) => 2,
            BitmapKey::Int(_) | BitmapKey::Float(_) => 4,
            BitmapKey::Long(_) | BitmapKey::Double(_) => 8,
        }
    }

    pub(super) fn write(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            BitmapKey::Str(b) => {
                out.extend_from_slice(&to_i32(b.len())?.to_be_bytes());
                out.extend_from_slice(b);
            }
            BitmapKey::Byte(v) => out.push(*v as u8),
            BitmapKey::Short(v) => out.extend_from_slice(&v.to_be_bytes()),
            BitmapKey::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
            BitmapKey::Long(v) => out.extend_from_slice(&v.to_be_bytes()),
            BitmapKey::Float(v) => out.extend_from_slice(&v.to_be_bytes()),
            BitmapKey::Double(v) => out.extend_from_slice(&v.to_be_bytes()),
            BitmapKey::Bool(v) => out.push(u8::from(*v)),
        }
        Ok(())
    }
}

/// The iteration order of Java's `HashMap` the writer fills with `computeIfAbsent`: a table of
/// `capacity` buckets (16, doubled when a call finds more than 3/4 of it used, or when a bucket
/// reaches 8 entries while the table is under 64), each bucket listing its keys newest first.
#[derive(Debug, Default)]
struct JavaHashOrder {
    capacity: usize,
    /// Spread hash (`h ^ h >>> 16`) of each key, in insertion order.
    hashes: Vec<u32>,
    /// Keys per bucket at `capacity`.
    bucket_sizes: Vec<u32>,
}

impl JavaHashOrder {
    fn resize(&mut self) {
        self.capacity = (self.capacity * 2).max(16);
        self.bucket_sizes = vec![0; self.capacity];
        for h in &self.hashes {
            self.bucket_sizes[*h as usize & (self.capacity - 1)] += 1;
        }
    }

    /// A `computeIfAbsent` call: the table grows first when it is over its threshold.
    fn call(&mut self) {
        if self.capacity == 0 || self.hashes.len() > self.capacity / 4 * 3 {
            self.resize();
        }
    }

    /// The call inserts a key with Java hash `hash`.
    fn insert(&mut self, hash: i32) {
        let h = hash as u32;
        let spread = h ^ (h >> 16);
        let bucket = spread as usize & (self.capacity - 1);
        let before = self.bucket_sizes[bucket];
        self.hashes.push(spread);
        self.bucket_sizes[bucket] += 1;
        // treeifyBin on a small table resizes it instead
        if before >= 7 && self.capacity < 64 {
            self.resize();
        }
    }

    /// Insertion indexes in iteration order.
    fn order(&self) -> Vec<usize> {
        let mask = self.capacity.saturating_sub(1);
        let mut order: Vec<usize> = (0..self.hashes.len()).collect();
        order.sort_by_key(|&i| (self.hashes[i] as usize & mask, std::cmp::Reverse(i)));
        order
    }
}

/// Builds the bitmap index of one column of one data file (Java `BitmapFileIndex.Writer`).
#[derive(Debug)]
pub struct BitmapIndexWriter {
    version: u8,
    index_block_size: u64,
    rows: u32,
    nulls: RoaringBitmap,
    slots: HashMap<BitmapKey, usize>,
    bitmaps: Vec<(BitmapKey, RoaringBitmap)>,
    order: JavaHashOrder,
}

impl BitmapIndexWriter {
    /// An empty index of a column of `ty`; [`Error::Unsupported`] for types Java does not index.
    pub fn new(ty: &DataType, column: &BitmapColumn) -> Result<BitmapIndexWriter> {
        if !bitmap_indexable(ty) {
            return Err(Error::Unsupported(format!(
                "a bitmap file index on column '{}' of type {ty}",
                column.column
            )));
        }
        Ok(BitmapIndexWriter {
            version: column.version,
            index_block_size: column.index_block_size,
            rows: 0,
            nulls: RoaringBitmap::new(),
            slots: HashMap::new(),
            bitmaps: Vec::new(),
            order: JavaHashOrder::default(),
        })
    }

    /// Add the next row: its key, or `None` for null.
    pub fn add(&mut self, key: Option<BitmapKey>) {
        let row = self.rows;
        self.rows += 1;
        let Some(key) = key else {
            self.nulls.insert(row);
            return;
        };
        self.order.call();
        match self.slots.entry(key) {
            Slot::Occupied(slot) => {
                self.bitmaps[*slot.get()].1.insert(row);
            }
            Slot::Vacant(slot) => {
                self.order.insert(slot.key().java_hash());
                self.bitmaps
                    .push((slot.key().clone(), RoaringBitmap::from_iter([row])));
                slot.insert(self.bitmaps.len() - 1);
            }
        }
    }

    /// The index body.
    pub fn encode(self) -> Result<Vec<u8>> {
        let row_count = to_i32(self.rows as usize)?;
        let null_rows = self.nulls.len();
        let null_offset = match self.nulls.min() {
            Some(row) if null_rows == 1 => -1 - row as i32,
            _ => 0,
        };
        let null_bytes = java_roaring_bytes(self.nulls);
        let mut offset = if null_rows > 1 { null_bytes.len() } else { 0 };
        let mut bodies = Vec::new();
        let order = self.order.order();
        let mut entries: Vec<Entry> = Vec::with_capacity(order.len());
        let mut bitmaps: Vec<Option<(BitmapKey, RoaringBitmap)>> =
            self.bitmaps.into_iter().map(Some).collect();
        for i in order {
            let (key, bitmap) = bitmaps[i].take().expect("each key once");
            match bitmap.min() {
                Some(row) if bitmap.len() == 1 => entries.push((key, -1 - row as i32, -1)),
                _ => {
                    let bytes = java_roaring_bytes(bitmap);
                    entries.push((key, to_i32(offset)?, to_i32(bytes.len())?));
                    offset += bytes.len();
                    bodies.push(bytes);
                }
            }
        }
        let mut out = vec![self.version];
        out.extend_from_slice(&row_count.to_be_bytes());
        out.extend_from_slice(&to_i32(entries.len())?.to_be_bytes());
        out.push(u8::from(null_rows > 0));
        if null_rows > 0 {
            out.extend_from_slice(&null_offset.to_be_bytes());
        }
        if self.version == VERSION_1 {
            for (key, offset, _) in &entries {
                key.write(&mut out)?;
                out.extend_from_slice(&offset.to_be_bytes());
            }
        } else {
            if null_rows > 0 {
                out.extend_from_slice(&to_i32(null_bytes.len())?.to_be_bytes());
            }
            write_blocks(&mut out, entries, self.index_block_size)?;
        }
        if null_rows > 1 {
            out.extend_from_slice(&null_bytes);
        }
        for body in bodies {
            out.extend_from_slice(&body);
        }
        Ok(out)
    }
}

/// A dictionary entry: the key, its bitmap's offset (`-1 - row` for one row) and length (-1).
type Entry = (BitmapKey, i32, i32);

/// A V2 dictionary block being filled.
struct Block {
    offset: usize,
    size: usize,
    entries: Vec<Entry>,
}

/// V2's dictionary: block directory, then the blocks of entries in key order.
fn write_blocks(out: &mut Vec<u8>, mut entries: Vec<Entry>, limit: u64) -> Result<()> {
    entries.sort_by(|a, b| a.0.java_cmp(&b.0));
    let mut blocks: Vec<Block> = Vec::new();
    for entry in entries {
        let bytes = 8 + entry.0.size();
        match blocks.last_mut() {
            Some(block) if (block.size + bytes) as u64 <= limit => {
                block.size += bytes;
                block.entries.push(entry);
            }
            last => {
                let offset = last.map_or(0, |b| b.offset + b.size);
                if (4 + bytes) as u64 > limit {
                    return Err(Error::Invalid(format!(
                        "bitmap index block size {limit} bytes cannot hold a {bytes}-byte entry"
                    )));
                }
                blocks.push(Block {
                    offset,
                    size: 4 + bytes,
                    entries: vec![entry],
                });
            }
        }
    }
    out.extend_from_slice(&to_i32(blocks.len())?.to_be_bytes());
    for block in &blocks {
        block.entries[0].0.write(out)?;
        out.extend_from_slice(&to_i32(block.offset)?.to_be_bytes());
    }
    let total: usize = blocks.iter().map(|b| b.size).sum();
    out.extend_from_slice(&to_i32(total)?.to_be_bytes());
    for block in blocks {
        out.extend_from_slice(&to_i32(block.entries.len())?.to_be_bytes());
        for (key, offset, length) in block.entries {
            key.write(out)?;
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&length.to_be_bytes());
        }
    }
    Ok(())
}

/// A decoded bitmap index (either version).
#[derive(Debug, Clone)]
pub struct BitmapIndex {
    row_count: u32,
    /// The null entry's offset, when the file has nulls.
    nulls: Option<i32>,
    /// Offset of each key's bitmap (negative: `-1 - row`).
    offsets: HashMap<BitmapKey, i32>,
    /// The bitmaps section.
    body: Vec<u8>,
}

impl BitmapIndex {
    /// Decode the index body of a column of type `ty`.
    pub fn decode(bytes: &[u8], ty: &DataType) -> Result<BitmapIndex> {
        let kind = KeyKind::of(ty).ok_or_else(|| {
            Error::corrupt("bitmap index", format!("a bitmap index on a {ty} column"))
        })?;
        let mut c = Cursor { bytes, pos: 0 };
        let version = c.u8()?;
        if version != VERSION_1 && version != VERSION_2 {
            return Err(Error::Unsupported(format!(
                "bitmap index version {version} (only 1 and 2 are supported)"
            )));
        }
        let row_count = u32::try_from(c.i32()?)
            .map_err(|_| Error::corrupt("bitmap index", "negative row count"))?;
        let count = usize::try_from(c.i32()?)
            .map_err(|_| Error::corrupt("bitmap index", "negative value count"))?;
        let nulls = if c.u8()? != 0 {
            let offset = c.i32()?;
            if version == VERSION_2 {
                c.i32()?; // the null bitmap's length
            }
            Some(offset)
        } else {
            None
        };
        let mut offsets = HashMap::with_capacity(count.min(bytes.len()));
        if version == VERSION_1 {
            for _ in 0..count {
                let key = kind.read(&mut c)?;
                offsets.insert(key, c.i32()?);
            }
        } else {
            let block_count = c.i32()?;
            let mut block_offsets = Vec::new();
            for _ in 0..block_count {
                kind.read(&mut c)?;
                block_offsets.push(c.i32()?);
            }
            let bitmaps_offset = c.i32()?;
            let blocks_start = c.pos;
            for offset in block_offsets {
                let mut b = Cursor {
                    bytes,
                    pos: offset_from(blocks_start, offset)?,
                };
                for _ in 0..b.i32()? {
                    let key = kind.read(&mut b)?;
                    let (offset, _length) = (b.i32()?, b.i32()?);
                    offsets.insert(key, offset);
                }
            }
            c.pos = offset_from(blocks_start, bitmaps_offset)?;
        }
        let body = bytes
            .get(c.pos..)
            .ok_or_else(|| Error::corrupt("bitmap index", "truncated"))?
            .to_vec();
        Ok(BitmapIndex {
            row_count,
            nulls,
            offsets,
            body,
        })
    }

    /// Rows of the file (the index's row count).
    pub fn row_count(&self) -> u32 {
        self.row_count
    }

    /// The rows holding `key` (`None`: the null rows).
    pub fn rows(&self, key: Option<&BitmapKey>) -> Result<RoaringBitmap> {
        let offset = match key {
            None => self.nulls,
            Some(key) => self.offsets.get(key).copied(),
        };
        match offset {
            None => Ok(RoaringBitmap::new()),
            Some(o) if o < 0 => Ok(RoaringBitmap::from_iter([(-1 - o) as u32])),
            Some(o) => {
                let at = self
                    .body
                    .get(o as usize..)
                    .ok_or_else(|| Error::corrupt("bitmap index", "bitmap out of bounds"))?;
                RoaringBitmap::deserialize_from(at)
                    .map_err(|e| Error::corrupt("bitmap index", format!("bad bitmap: {e}")))
            }
        }
    }
}

fn offset_from(start: usize, offset: i32) -> Result<usize> {
    usize::try_from(offset)
        .ok()
        .and_then(|o| start.checked_add(o))
        .ok_or_else(|| Error::corrupt("bitmap index", "negative offset"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::file_index::test_hex as hex;

    fn column(version: u8, index_block_size: u64) -> BitmapColumn {
        BitmapColumn {
            column: "c".into(),
            version,
            index_block_size,
        }
    }

    fn build(ty: &DataType, col: &BitmapColumn, values: &[Datum]) -> Vec<u8> {
        let mut w = BitmapIndexWriter::new(ty, col).unwrap();
        for v in values {
            w.add(bitmap_key(v, ty));
        }
        w.encode().unwrap()
    }

    fn rows_of(index: &BitmapIndex, v: &Datum, ty: &DataType) -> Vec<u32> {
        let key = bitmap_key(v, ty);
        index.rows(key.as_ref()).unwrap().iter().collect()
    }

    // Java Paimon 1.3.1 `BitmapFileIndex.Writer` output (hex) for the rows each case builds.
    const JAVA_INT: &str = include_str!("testdata/bitmap_int.hex");
    const JAVA_STR: &str = include_str!("testdata/bitmap_str.hex");
    const JAVA_V1_LONG: &str = include_str!("testdata/bitmap_v1_long.hex");
    const JAVA_MANY: &str = include_str!("testdata/bitmap_many.hex");

    #[test]
    fn writes_javas_bytes_and_reads_them() {
        let int = DataType::new(TypeKind::Int);
        // 40 rows: i % 7, nulls at 3 and 17, 100 at 5 and -200 at 9 (single-row bitmaps)
        let values: Vec<Datum> = (0..40)
            .map(|i| match i {
                3 | 17 => Datum::Null,
                5 => Datum::Int(100),
                9 => Datum::Int(-200),
                _ => Datum::Int(i % 7),
            })
            .collect();
        let java = hex(JAVA_INT.trim());
        assert_eq!(build(&int, &column(2, 16 * 1024), &values), java);
        let index = BitmapIndex::decode(&java, &int).unwrap();
        assert_eq!(index.row_count(), 40);
        assert_eq!(rows_of(&index, &Datum::Int(100), &int), [5]);
        assert_eq!(rows_of(&index, &Datum::Int(6), &int), [6, 13, 20, 27, 34]);
        assert_eq!(rows_of(&index, &Datum::Int(7), &int), Vec::<u32>::new());
        assert_eq!(
            index.rows(None).unwrap().iter().collect::<Vec<_>>(),
            [3, 17]
        );

        let string = DataType::new(TypeKind::VarChar(u32::MAX >> 1));
        let strs = ["b", "a", "ccc", "a", "déjà", "b", "zz", "a", "", "", "x"];
        let values: Vec<Datum> = strs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == 8 {
                    Datum::Null
                } else {
                    Datum::String(s.to_string())
                }
            })
            .collect();
        let java = hex(JAVA_STR.trim());
        assert_eq!(build(&string, &column(2, 40), &values), java);
        let index = BitmapIndex::decode(&java, &string).unwrap();
        assert_eq!(
            rows_of(&index, &Datum::String("a".into()), &string),
            [1, 3, 7]
        );
        assert_eq!(rows_of(&index, &Datum::String("déjà".into()), &string), [4]);
        assert_eq!(rows_of(&index, &Datum::String("".into()), &string), [9]);
        assert_eq!(index.rows(None).unwrap().iter().collect::<Vec<_>>(), [8]);

        // V1, a run container (4,500 rows of 1) and a 500-row null bitmap
        let long = DataType::new(TypeKind::BigInt);
        let values: Vec<Datum> = (0..5000i64)
            .map(|i| match i {
                _ if i < 4500 => Datum::BigInt(1),
                _ if i % 3 == 0 => Datum::Null,
                _ => Datum::BigInt(i),
            })
            .collect();
        let java = hex(JAVA_V1_LONG.trim());
        assert_eq!(build(&long, &column(1, 16 * 1024), &values), java);
        let index = BitmapIndex::decode(&java, &long).unwrap();
        assert_eq!(index.rows(Some(&BitmapKey::Long(1))).unwrap().len(), 4500);
        assert_eq!(rows_of(&index, &Datum::BigInt(4501), &long), [4501]);
        assert_eq!(index.rows(None).unwrap().len(), 167);

        // 53 distinct values: the map grows past 16 and 32 buckets
        let values: Vec<Datum> = (0..300)
            .map(|i| Datum::Int(if i < 100 { 7 } else { (i * 37) % 53 - 20 }))
            .collect();
        let java = hex(JAVA_MANY.trim());
        assert_eq!(build(&int, &column(2, 16 * 1024), &values), java);
        let index = BitmapIndex::decode(&java, &int).unwrap();
        for probe in -20..33 {
            let expected: Vec<u32> = (0..300u32)
                .filter(|&i| {
                    (if i < 100 {
                        7
                    } else {
                        (i as i32 * 37) % 53 - 20
                    }) == probe
                })
                .collect();
            assert_eq!(
                rows_of(&index, &Datum::Int(probe), &int),
                expected,
                "{probe}"
            );
        }
    }

    #[test]
    fn keys_follow_java() {
        // Java BinaryString.hashCode()
        for (s, java) in [
            ("", 142_593_372),
            ("a", 1_485_273_170),
            ("abcde", 814_637_928),
            ("déjà vu!", -2_050_747_447),
        ] {
            assert_eq!(java_hash_bytes(s.as_bytes()), java, "{s}");
        }
        let f = DataType::new(TypeKind::Float);
        assert_eq!(
            bitmap_key(&Datum::Float(f32::from_bits(0xffc0_0001)), &f),
            bitmap_key(&Datum::Float(f32::NAN), &f)
        );
        assert_ne!(
            bitmap_key(&Datum::Float(-0.0), &f),
            bitmap_key(&Datum::Float(0.0), &f)
        );
        assert!(!bitmap_indexable(&DataType::new(TypeKind::Decimal {
            precision: 10,
            scale: 2
        })));
        assert!(
            BitmapIndexWriter::new(&DataType::new(TypeKind::VarBinary(10)), &column(2, 16))
                .is_err()
        );
        let mut w =
            BitmapIndexWriter::new(&DataType::new(TypeKind::VarChar(10)), &column(2, 8)).unwrap();
        w.add(Some(BitmapKey::Str(b"abc".to_vec())));
        assert!(w.encode().is_err(), "a block too small for one entry");
    }
}
