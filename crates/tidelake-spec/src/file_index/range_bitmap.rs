//! The `range-bitmap` file index (Java `RangeBitmapFileIndex`, `RangeBitmap`,
//! `ChunkedDictionary`, `FixedLengthChunk`, `VariableLengthChunk`, `rangebitmap.BitSliceIndexBitmap`):
//! the distinct values of a column in a sorted dictionary, each coded by its rank, and a
//! bit-sliced index of each row's code, so that `=` and ranges become code comparisons.
//!
//! Values are keyed as [`BitmapKey`]s (Java's `KeyFactory`: as the bitmap index keys them, with
//! DECIMAL up to precision 18 by unscaled value and timestamps only up to precision 6). All
//! integers are big-endian; `[n]` below is an i32 length prefix of what follows.
//!
//! ```text
//! [header] version u8 (1) | row count i32 | value count i32 | [min key | max key] | dictionary length i32
//! dictionary: [header] version u8 (1) | chunk count i32 | offsets length i32 | chunks length i32
//!   | chunk offsets i32... | chunks | keys
//!   chunk: version u8 (1) | first key | first code i32 | keys offset i32 | key count i32 |
//!     fixed-size keys: keys length i32 | key size i32   (keys: the keys after the first)
//!     strings:         offsets length i32 | keys length i32   (keys: an i32 offset per key, then the keys)
//! bit slices: [header] version u8 (1) | slice count u8 | rows-with-a-value length i32 |
//!   slice table length i32 | per slice: offset i32 | length i32
//!   | rows with a value (Roaring) | slices (Roaring): slice i holds the rows whose code has bit i
//! ```
//!
//! A chunk takes keys after its first while they fit in `file-index.range-bitmap.<column>.chunk-size`
//! bytes (default 16 kb; 0 b — one key per chunk — for BOOLEAN, TINYINT, SMALLINT); there are
//! `max(64 - leading_zeros(value count - 1), 1)` slices. The bytes are Java's.
//!
//! Invariant: [`RangeBitmapIndex::compare`] returns exactly the rows whose value compares so.

use std::collections::HashMap;

use roaring::RoaringBitmap;

use super::bitmap::{bitmap_key, BitmapKey, KeyKind};
use super::bsi::{read_roaring, BsiOp, Slices};
use super::{java_roaring_bytes, to_i32, Cursor};
use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::types::{DataType, TypeKind};

/// The index type name of range-bitmap indexes.
pub const RANGE_BITMAP: &str = "range-bitmap";

const VERSION_1: u8 = 1;

/// A column with a range-bitmap index (`file-index.range-bitmap.columns`) and its chunk size
/// (`file-index.range-bitmap.<column>.chunk-size`; `None`: the type's default).
#[derive(Debug, Clone, PartialEq)]
pub struct RangeBitmapColumn {
    pub column: String,
    pub chunk_size: Option<u64>,
}

/// The range-bitmap columns `options` ask writers for.
pub fn range_bitmap_columns(options: &Options) -> Result<Vec<RangeBitmapColumn>> {
    super::indexed_columns(options, RANGE_BITMAP)
        .into_iter()
        .map(|column| {
            let key = super::column_option_key(options, RANGE_BITMAP, &column, "chunk-size");
            let chunk_size = options.get_memory_size(&key)?;
            Ok(RangeBitmapColumn { column, chunk_size })
        })
        .collect()
}

/// How the index keys a column of `ty` (`KeyFactory.create`).
fn key_kind(ty: &DataType) -> Option<KeyKind> {
    match ty.kind {
        TypeKind::Decimal { precision, .. } if precision <= 18 => Some(KeyKind::Long),
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) if p > 6 => None,
        _ => KeyKind::of(ty),
    }
}

/// Whether Java can build a range-bitmap index on a column of `ty`.
pub fn range_bitmap_indexable(ty: &DataType) -> bool {
    key_kind(ty).is_some()
}

/// The key of non-null `value` of a column of type `ty`; `None` for nulls, types the index does
/// not support and values of another kind.
pub fn range_key(value: &Datum, ty: &DataType) -> Option<BitmapKey> {
    key_kind(ty)?;
    match (value, &ty.kind) {
        (Datum::Decimal(v), TypeKind::Decimal { .. }) => {
            Some(BitmapKey::Long(i64::try_from(*v).ok()?))
        }
        _ => bitmap_key(value, ty),
    }
}

/// Builds the range-bitmap index of one column of one data file (Java `RangeBitmap.Appender`).
#[derive(Debug)]
pub struct RangeBitmapWriter {
    kind: KeyKind,
    chunk_size: usize,
    rows: u32,
    values: HashMap<BitmapKey, RoaringBitmap>,
}

impl RangeBitmapWriter {
    /// An empty index of a column of `ty`; [`Error::Unsupported`] for types Java does not index.
    pub fn new(ty: &DataType, column: &RangeBitmapColumn) -> Result<RangeBitmapWriter> {
        let kind = key_kind(ty).ok_or_else(|| {
            Error::Unsupported(format!(
                "a range-bitmap file index on column '{}' of type {ty}",
                column.column
            ))
        })?;
        let default = match kind {
            KeyKind::Bool | KeyKind::Byte | KeyKind::Short => 0,
            _ => 16 * 1024,
        };
        let chunk_size = usize::try_from(column.chunk_size.unwrap_or(default))
            .ok()
            .filter(|s| *s <= i32::MAX as usize)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "range-bitmap chunk size of column '{}' is too large",
                    column.column
                ))
            })?;
        Ok(RangeBitmapWriter {
            kind,
            chunk_size,
            rows: 0,
            values: HashMap::new(),
        })
    }

    /// Add the next row: its key, or `None` for null.
    pub fn add(&mut self, key: Option<BitmapKey>) {
        if let Some(key) = key {
            self.values.entry(key).or_default().insert(self.rows);
        }
        self.rows += 1;
    }

    /// The index body.
    pub fn encode(self) -> Result<Vec<u8>> {
        let mut values: Vec<(BitmapKey, RoaringBitmap)> = self.values.into_iter().collect();
        values.sort_by(|a, b| a.0.java_cmp(&b.0));
        let max_code = values.len() as i64 - 1;
        let count = (64 - (max_code as u64).leading_zeros()).max(1) as usize;
        let mut slices = Slices {
            min: 0,
            max: max_code,
            ebm: RoaringBitmap::new(),
            slices: vec![RoaringBitmap::new(); count],
        };
        for (code, (_, rows)) in values.iter().enumerate() {
            for row in rows {
                slices.append(row, code as u64);
            }
        }
        let keys: Vec<BitmapKey> = values.into_iter().map(|(k, _)| k).collect();
        let dictionary = write_dictionary(&keys, self.kind, self.chunk_size)?;
        let mut header = vec![VERSION_1];
        header.extend_from_slice(&to_i32(self.rows as usize)?.to_be_bytes());
        header.extend_from_slice(&to_i32(keys.len())?.to_be_bytes());
        if let (Some(min), Some(max)) = (keys.first(), keys.last()) {
            min.write(&mut header)?;
            max.write(&mut header)?;
        }
        header.extend_from_slice(&to_i32(dictionary.len())?.to_be_bytes());
        let mut out = with_header(header)?;
        out.extend_from_slice(&dictionary);
        out.extend_from_slice(&write_slices(slices)?);
        Ok(out)
    }
}

/// `header` prefixed by its i32 length.
fn with_header(header: Vec<u8>) -> Result<Vec<u8>> {
    let mut out = to_i32(header.len())?.to_be_bytes().to_vec();
    out.extend_from_slice(&header);
    Ok(out)
}

/// Java `ChunkedDictionary.Appender` over `keys` (sorted; a key's code is its position).
fn write_dictionary(keys: &[BitmapKey], kind: KeyKind, limit: usize) -> Result<Vec<u8>> {
    let variable = kind == KeyKind::Str;
    let (mut offsets, mut chunks, mut all_keys) = (Vec::new(), Vec::new(), Vec::new());
    let mut chunk_count = 0;
    let mut i = 0;
    while i < keys.len() {
        let (first, code) = (&keys[i], i);
        // the keys after the first that fit
        let (mut key_offsets, mut key_bytes) = (Vec::new(), Vec::new());
        let mut size = 0;
        i += 1;
        while let Some(key) = keys.get(i) {
            let fits = if variable {
                key.size() <= limit - key_bytes.len() && 4 <= limit - key_offsets.len()
            } else {
                first.size() <= limit - key_bytes.len()
            };
            if !fits {
                break;
            }
            if variable {
                key_offsets.extend_from_slice(&to_i32(key_bytes.len())?.to_be_bytes());
            }
            key.write(&mut key_bytes)?;
            size += 1;
            i += 1;
        }
        offsets.extend_from_slice(&to_i32(chunks.len())?.to_be_bytes());
        chunks.push(VERSION_1);
        first.write(&mut chunks)?;
        for n in [code, all_keys.len(), size] {
            chunks.extend_from_slice(&to_i32(n)?.to_be_bytes());
        }
        if variable {
            chunks.extend_from_slice(&to_i32(key_offsets.len())?.to_be_bytes());
            chunks.extend_from_slice(&to_i32(key_bytes.len())?.to_be_bytes());
            all_keys.extend_from_slice(&key_offsets);
        } else {
            chunks.extend_from_slice(&to_i32(key_bytes.len())?.to_be_bytes());
            chunks.extend_from_slice(&to_i32(first.size())?.to_be_bytes());
        }
        all_keys.extend_from_slice(&key_bytes);
        chunk_count += 1;
    }
    let mut header = vec![VERSION_1];
    for n in [chunk_count, offsets.len(), chunks.len()] {
        header.extend_from_slice(&to_i32(n)?.to_be_bytes());
    }
    let mut out = with_header(header)?;
    out.extend_from_slice(&offsets);
    out.extend_from_slice(&chunks);
    out.extend_from_slice(&all_keys);
    Ok(out)
}

/// Java `rangebitmap.BitSliceIndexBitmap.Appender.serialize`.
fn write_slices(slices: Slices) -> Result<Vec<u8>> {
    let ebm = java_roaring_bytes(slices.ebm);
    let bodies: Vec<Vec<u8>> = slices.slices.into_iter().map(java_roaring_bytes).collect();
    let mut header = vec![VERSION_1, bodies.len() as u8];
    header.extend_from_slice(&to_i32(ebm.len())?.to_be_bytes());
    header.extend_from_slice(&to_i32(8 * bodies.len())?.to_be_bytes());
    let mut offset = 0;
    for body in &bodies {
        header.extend_from_slice(&to_i32(offset)?.to_be_bytes());
        header.extend_from_slice(&to_i32(body.len())?.to_be_bytes());
        offset += body.len();
    }
    let mut out = with_header(header)?;
    out.extend_from_slice(&ebm);
    for body in bodies {
        out.extend_from_slice(&body);
    }
    Ok(out)
}

/// A decoded range-bitmap index.
#[derive(Debug, Clone)]
pub struct RangeBitmapIndex {
    row_count: u32,
    /// The dictionary: the key of each code.
    keys: Vec<BitmapKey>,
    /// Each row's code.
    codes: Slices,
}

fn bad(reason: &str) -> Error {
    Error::corrupt("range-bitmap index", reason)
}

fn at(bytes: &[u8], pos: usize) -> Cursor<'_> {
    Cursor { bytes, pos }
}

fn index(n: i32) -> Result<usize> {
    usize::try_from(n).map_err(|_| bad("negative length or offset"))
}

impl RangeBitmapIndex {
    /// Decode the index body of a column of type `ty`.
    pub fn decode(bytes: &[u8], ty: &DataType) -> Result<RangeBitmapIndex> {
        let kind =
            key_kind(ty).ok_or_else(|| bad(&format!("a range-bitmap index on a {ty} column")))?;
        let mut c = at(bytes, 0);
        let header_len = index(c.i32()?)?;
        let version = c.u8()?;
        if version != VERSION_1 {
            return Err(Error::Unsupported(format!(
                "range-bitmap index version {version} (only 1 is supported)"
            )));
        }
        let row_count = u32::try_from(c.i32()?).map_err(|_| bad("negative row count"))?;
        let count = index(c.i32()?)?;
        if count > 0 {
            kind.read(&mut c)?;
            kind.read(&mut c)?;
        }
        let dictionary_len = index(c.i32()?)?;
        let dictionary = 4 + header_len;
        let keys = read_dictionary(bytes, dictionary, kind)?;
        if keys.len() != count {
            return Err(bad("dictionary size differs from the value count"));
        }
        let codes = read_slices(bytes, dictionary + dictionary_len, count)?;
        Ok(RangeBitmapIndex {
            row_count,
            keys,
            codes,
        })
    }

    /// Rows of the file (the index's row count).
    pub fn row_count(&self) -> u32 {
        self.row_count
    }

    /// The rows with a value.
    pub fn not_null(&self) -> RoaringBitmap {
        self.codes.ebm.clone()
    }

    /// The rows whose value `op` `key`.
    pub fn compare(&self, op: BsiOp, key: &BitmapKey) -> RoaringBitmap {
        if self.keys.is_empty() {
            return RoaringBitmap::new();
        }
        let found = self.keys.binary_search_by(|k| k.java_cmp(key));
        // a missing key sorts between the codes below its insertion point and the ones from it
        let (op, code) = match (op, found) {
            (BsiOp::Eq, Err(_)) => return RoaringBitmap::new(),
            (BsiOp::Le, Err(c)) => (BsiOp::Lt, c),
            (BsiOp::Gt, Err(c)) => (BsiOp::Ge, c),
            (op, Ok(c) | Err(c)) => (op, c),
        };
        self.codes.compare(op, code as i64)
    }
}

/// The keys of the dictionary at `start`, in code order.
fn read_dictionary(bytes: &[u8], start: usize, kind: KeyKind) -> Result<Vec<BitmapKey>> {
    let mut c = at(bytes, start);
    let header_len = index(c.i32()?)?;
    if c.u8()? != VERSION_1 {
        return Err(Error::Unsupported("range-bitmap dictionary version".into()));
    }
    let (count, offsets_len, chunks_len) = (index(c.i32()?)?, index(c.i32()?)?, index(c.i32()?)?);
    let offsets = start + 4 + header_len;
    let chunks = offsets + offsets_len;
    let keys_base = chunks + chunks_len;
    let mut keys = Vec::new();
    for i in 0..count {
        let offset = index(at(bytes, offsets + 4 * i).i32()?)?;
        let mut h = at(bytes, chunks + offset);
        if h.u8()? != VERSION_1 {
            return Err(Error::Unsupported("range-bitmap chunk version".into()));
        }
        let first = kind.read(&mut h)?;
        let (code, keys_offset, size) = (index(h.i32()?)?, index(h.i32()?)?, index(h.i32()?)?);
        if code != keys.len() {
            return Err(bad("chunk codes out of order"));
        }
        keys.push(first);
        let base = keys_base + keys_offset;
        if kind == KeyKind::Str {
            let offsets_len = index(h.i32()?)?;
            for j in 0..size {
                let key_offset = index(at(bytes, base + 4 * j).i32()?)?;
                keys.push(kind.read(&mut at(bytes, base + offsets_len + key_offset))?);
            }
        } else {
            let (_keys_len, key_size) = (h.i32()?, index(h.i32()?)?);
            for j in 0..size {
                keys.push(kind.read(&mut at(bytes, base + j * key_size))?);
            }
        }
    }
    Ok(keys)
}

/// The bit slices at `start` of an index of `count` values.
fn read_slices(bytes: &[u8], start: usize, count: usize) -> Result<Slices> {
    let mut c = at(bytes, start);
    let header_len = index(c.i32()?)?;
    if c.u8()? != VERSION_1 {
        return Err(Error::Unsupported("range-bitmap bit slices version".into()));
    }
    let slice_count = usize::from(c.u8()?);
    let ebm_len = index(c.i32()?)?;
    c.i32()?; // the slice table's length
    let body = start + 4 + header_len;
    let ebm = read_roaring(&mut at(bytes, body))?;
    let mut slices = Vec::with_capacity(slice_count);
    for _ in 0..slice_count {
        let (offset, _len) = (index(c.i32()?)?, c.i32()?);
        slices.push(read_roaring(&mut at(bytes, body + ebm_len + offset))?);
    }
    Ok(Slices {
        min: 0,
        max: count as i64 - 1,
        ebm,
        slices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::file_index::test_hex as hex;

    fn build(ty: &DataType, chunk_size: Option<u64>, values: &[Datum]) -> Vec<u8> {
        let column = RangeBitmapColumn {
            column: "c".into(),
            chunk_size,
        };
        let mut w = RangeBitmapWriter::new(ty, &column).unwrap();
        for v in values {
            w.add(range_key(v, ty));
        }
        w.encode().unwrap()
    }

    /// Every comparison of `index` against `probes` returns the rows it should.
    fn check(index: &RangeBitmapIndex, ty: &DataType, values: &[Datum], probes: &[Datum]) {
        use std::cmp::Ordering;
        let key = |v: &Datum| range_key(v, ty).unwrap();
        for probe in probes {
            for (op, holds) in [
                (
                    BsiOp::Eq,
                    (|o| o == Ordering::Equal) as fn(Ordering) -> bool,
                ),
                (BsiOp::Lt, |o| o == Ordering::Less),
                (BsiOp::Le, |o| o != Ordering::Greater),
                (BsiOp::Gt, |o| o == Ordering::Greater),
                (BsiOp::Ge, |o| o != Ordering::Less),
            ] {
                let expected: Vec<u32> = (0..values.len() as u32)
                    .filter(|&r| {
                        let v = &values[r as usize];
                        !v.is_null() && holds(key(v).java_cmp(&key(probe)))
                    })
                    .collect();
                let got: Vec<u32> = index.compare(op, &key(probe)).iter().collect();
                assert_eq!(got, expected, "{op:?} {probe:?}");
            }
        }
        let not_null: Vec<u32> = (0..values.len() as u32)
            .filter(|&r| !values[r as usize].is_null())
            .collect();
        assert_eq!(index.not_null().iter().collect::<Vec<_>>(), not_null);
        assert_eq!(index.row_count() as usize, values.len());
    }

    // Java Paimon 1.3.1 `RangeBitmapFileIndex.Writer` output (hex) for the rows each case builds.
    #[test]
    fn writes_javas_bytes_and_compares_exactly() {
        let int = DataType::new(TypeKind::Int);
        let values: Vec<Datum> = (0..60)
            .map(|i| {
                if i % 11 == 3 {
                    Datum::Null
                } else {
                    Datum::Int((i * 7) % 23 - 5)
                }
            })
            .collect();
        let java = hex(include_str!("testdata/range_int.hex").trim());
        assert_eq!(build(&int, Some(16), &values), java);
        let index = RangeBitmapIndex::decode(&java, &int).unwrap();
        let probes: Vec<Datum> = (-7..20).map(Datum::Int).collect();
        check(&index, &int, &values, &probes);

        let string = DataType::new(TypeKind::VarChar(u32::MAX >> 1));
        let strs = [
            "pear", "apple", "-", "fig", "apple", "banana", "kiwi", "", "zucchini", "déjà", "fig",
        ];
        let values: Vec<Datum> = strs
            .iter()
            .map(|s| {
                if *s == "-" {
                    Datum::Null
                } else {
                    Datum::String(s.to_string())
                }
            })
            .collect();
        let java = hex(include_str!("testdata/range_str.hex").trim());
        assert_eq!(build(&string, Some(20), &values), java);
        let index = RangeBitmapIndex::decode(&java, &string).unwrap();
        let probes: Vec<Datum> = [
            "", "a", "apple", "b", "fig", "kiwi", "zz", "zucchini", "déjà",
        ]
        .iter()
        .map(|s| Datum::String(s.to_string()))
        .collect();
        check(&index, &string, &values, &probes);

        let boolean = DataType::new(TypeKind::Boolean);
        let values = [
            Datum::Boolean(true),
            Datum::Null,
            Datum::Boolean(false),
            Datum::Boolean(true),
            Datum::Boolean(true),
        ];
        let java = hex(include_str!("testdata/range_bool.hex").trim());
        assert_eq!(build(&boolean, None, &values), java);
        let index = RangeBitmapIndex::decode(&java, &boolean).unwrap();
        check(
            &index,
            &boolean,
            &values,
            &[Datum::Boolean(false), Datum::Boolean(true)],
        );

        let long = DataType::new(TypeKind::BigInt);
        let values = [Datum::Null, Datum::Null];
        let java = hex(include_str!("testdata/range_nulls.hex").trim());
        assert_eq!(build(&long, None, &values), java);
        let index = RangeBitmapIndex::decode(&java, &long).unwrap();
        check(&index, &long, &values, &[Datum::BigInt(0)]);
    }

    #[test]
    fn types_follow_javas_key_factory() {
        let ts = |p| DataType::new(TypeKind::Timestamp(p));
        assert!(range_bitmap_indexable(&ts(6)) && !range_bitmap_indexable(&ts(9)));
        let dec = |precision| {
            DataType::new(TypeKind::Decimal {
                precision,
                scale: 2,
            })
        };
        assert!(range_bitmap_indexable(&dec(18)) && !range_bitmap_indexable(&dec(19)));
        assert_eq!(
            range_key(&Datum::Decimal(-1234), &dec(10)),
            Some(BitmapKey::Long(-1234))
        );
        assert!(!range_bitmap_indexable(&DataType::new(
            TypeKind::VarBinary(4)
        )));
    }
}
