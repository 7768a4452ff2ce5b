//! Paimon's data-file indexes (`file-index.*` options; Java `FileIndexFormat`,
//! `BloomFilterFileIndex`, `BloomFilter64`, `FastHash`).
//!
//! An index file holds, per column, index bodies by index type (`bloom-filter`, ...):
//!
//! ```text
//! magic i64 | version i32 (1) | head length i32 | column count i32 |
//!   per column: name (Java modified UTF-8, u16 length) | index count i32 |
//!     per index: type (UTF) | start i32 (from the file start) | length i32 |
//! redundant length i32 (0) | redundant bytes | bodies...
//! ```
//!
//! A bloom-filter body is the number of hash functions (i32, big-endian) followed by the bit
//! set, bit `i` in byte `i / 8` under mask `1 << (i % 8)`. Values hash to 64 bits: strings and
//! binaries by xxHash64 (seed 0) of their bytes, integers (TINYINT..BIGINT, DATE, TIME, a
//! FLOAT's/DOUBLE's IEEE bits) by Thomas Wang's 64-bit mix of the sign-extended value,
//! timestamps by that mix of epoch millis (precision <= 3) or micros. A hash sets or tests
//! `numHash` bits at `(h1 + i * h2)` (i = 1..=numHash, i32 wrapping, negatives bit-flipped)
//! modulo the bit count, where `h1`/`h2` are the low/high 32 bits.
//!
//! The other index types' bodies: [`bitmap`] (`bitmap`), [`bsi`] (`bsi`) and [`range_bitmap`]
//! (`range-bitmap`).
//!
//! Invariant: a value added to a filter always tests positive ([`BloomFilter64::test_hash`]);
//! types Java does not hash (BOOLEAN, DECIMAL, nested) have no [`fast_hash`].

pub mod bitmap;
pub mod bsi;
pub mod range_bitmap;

use std::collections::BTreeMap;
use std::hash::Hasher;

use roaring::RoaringBitmap;

use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::types::{DataType, TypeKind};

/// `FileIndexFormat.MAGIC`.
const MAGIC: i64 = 1_493_475_289_347_502;
const VERSION: i32 = 1;
/// The index type name of bloom filters.
pub const BLOOM_FILTER: &str = "bloom-filter";
/// Suffix of an index file next to its data file (`<data file>.index`).
pub const INDEX_FILE_SUFFIX: &str = ".index";

/// The name of the index file a rewrite of data file `data_file`'s index stores, next to it
/// (Java `DataFilePathFactory.dataFileToFileIndexPath` and `createNewFileIndexFilePath`):
/// `<data file>.index` when it has no index file yet, else the successor of its `previous` one
/// (`<stem>-<n + 1>.index` after `<stem>-<n>.index`, `<stem>-1.index` after any other
/// `<stem>.index`), so that a rewrite never overwrites the index file a snapshot refers to.
pub fn next_index_file_name(data_file: &str, previous: Option<&str>) -> String {
    let Some(previous) = previous else {
        return format!("{data_file}{INDEX_FILE_SUFFIX}");
    };
    let stem = previous.rfind('.').map_or(previous, |dot| &previous[..dot]);
    if let Some((head, n)) = stem.rsplit_once('-') {
        if let Ok(n) = n.parse::<i32>() {
            return format!("{head}-{}{INDEX_FILE_SUFFIX}", n.wrapping_add(1));
        }
    }
    format!("{stem}-1{INDEX_FILE_SUFFIX}")
}

/// `file-index.in-manifest-threshold`: indexes up to this size are embedded in the manifest
/// entry, larger ones written to `<data file>.index` (Java default 500 bytes).
pub fn in_manifest_threshold(options: &Options) -> Result<u64> {
    Ok(options
        .get_memory_size("file-index.in-manifest-threshold")?
        .unwrap_or(500))
}

/// A column with a bloom-filter index (`file-index.bloom-filter.columns`) and its sizing
/// (`file-index.bloom-filter.<column>.items`, default 1,000,000; `.fpp`, default 0.1).
#[derive(Debug, Clone, PartialEq)]
pub struct BloomFilterColumn {
    pub column: String,
    pub items: u64,
    pub fpp: f64,
}

/// The columns `file-index.<index type>.columns` names.
fn indexed_columns(options: &Options, index_type: &str) -> Vec<String> {
    options
        .get(&format!("file-index.{index_type}.columns"))
        .into_iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// A map column's entry (`column[key]`, Java `FileIndexOptions.topLevelIndexOfNested`): the
/// map column and the key; `None` for a plain column.
pub fn map_entry(column: &str) -> Option<(&str, &str)> {
    let start = column.find('[')?;
    let key = column[start + 1..].strip_suffix(']')?;
    Some((&column[..start], key))
}

/// The option `key` of the `index_type` index on `column`
/// (`file-index.<type>.<column>.<key>`): for a map column's entry, the map column's option
/// (`file-index.<type>.<map>.<key>`) when the entry has none of its own (Java merges the map's
/// options under each entry's).
fn column_option_key(options: &Options, index_type: &str, column: &str, key: &str) -> String {
    let own = format!("file-index.{index_type}.{column}.{key}");
    match map_entry(column) {
        Some((map, _)) if options.get(&own).is_none() => {
            format!("file-index.{index_type}.{map}.{key}")
        }
        _ => own,
    }
}

/// The bloom-filter columns `options` ask writers for.
fn bloom_filter_columns(options: &Options) -> Result<Vec<BloomFilterColumn>> {
    indexed_columns(options, BLOOM_FILTER)
        .into_iter()
        .map(|column| {
            let key = |k: &str| column_option_key(options, BLOOM_FILTER, &column, k);
            let items = match options.get_i64(&key("items"))? {
                Some(n) if n > 0 => n as u64,
                Some(n) => {
                    return Err(Error::Invalid(format!(
                        "{} must be positive, got {n}",
                        key("items")
                    )))
                }
                None => 1_000_000,
            };
            let fpp = match options.get(&key("fpp")) {
                Some(v) => v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && *f < 1.0)
                    .ok_or_else(|| {
                        Error::Invalid(format!("{} must be in (0, 1), got '{v}'", key("fpp")))
                    })?,
                None => 0.1,
            };
            Ok(BloomFilterColumn { column, items, fpp })
        })
        .collect()
}

/// An index writers keep on a column, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnIndex {
    BloomFilter(BloomFilterColumn),
    Bitmap(bitmap::BitmapColumn),
    /// `bsi` on the named column (the index has no options).
    Bsi(String),
    RangeBitmap(range_bitmap::RangeBitmapColumn),
}

impl ColumnIndex {
    /// The indexed column.
    pub fn column(&self) -> &str {
        match self {
            ColumnIndex::BloomFilter(c) => &c.column,
            ColumnIndex::Bitmap(c) => &c.column,
            ColumnIndex::Bsi(c) => c,
            ColumnIndex::RangeBitmap(c) => &c.column,
        }
    }

    /// The same index on column `name` (the column as a file written with an older schema
    /// names it).
    pub fn renamed(&self, name: &str) -> ColumnIndex {
        let mut out = self.clone();
        match &mut out {
            ColumnIndex::BloomFilter(c) => c.column = name.to_string(),
            ColumnIndex::Bitmap(c) => c.column = name.to_string(),
            ColumnIndex::Bsi(c) => *c = name.to_string(),
            ColumnIndex::RangeBitmap(c) => c.column = name.to_string(),
        }
        out
    }

    /// Whether Java builds this index on a column of `ty`.
    pub fn supports(&self, ty: &DataType) -> bool {
        match self {
            ColumnIndex::BloomFilter(_) => hashable(ty),
            ColumnIndex::Bitmap(_) => bitmap::bitmap_indexable(ty),
            ColumnIndex::Bsi(_) => bsi::bsi_indexable(ty),
            ColumnIndex::RangeBitmap(_) => range_bitmap::range_bitmap_indexable(ty),
        }
    }

    /// The index type name (`bloom-filter`, `bitmap`, `bsi`, `range-bitmap`).
    pub fn index_type(&self) -> &'static str {
        match self {
            ColumnIndex::BloomFilter(_) => BLOOM_FILTER,
            ColumnIndex::Bitmap(_) => bitmap::BITMAP,
            ColumnIndex::Bsi(_) => bsi::BSI,
            ColumnIndex::RangeBitmap(_) => range_bitmap::RANGE_BITMAP,
        }
    }
}

/// Whether `options` ask for an index that answers more than `=` / `in` (`bitmap`, `bsi`,
/// `range-bitmap`: null tests, negations, ranges).
pub fn answers_beyond_points(options: &Options) -> bool {
    [bitmap::BITMAP, bsi::BSI, range_bitmap::RANGE_BITMAP]
        .iter()
        .any(|t| !indexed_columns(options, t).is_empty())
}

/// Every index `options` ask writers for (`file-index.<type>.columns`; Java knows no other
/// types than these four).
pub fn column_indexes(options: &Options) -> Result<Vec<ColumnIndex>> {
    let mut out: Vec<ColumnIndex> = bloom_filter_columns(options)?
        .into_iter()
        .map(ColumnIndex::BloomFilter)
        .collect();
    out.extend(
        bitmap::bitmap_columns(options)?
            .into_iter()
            .map(ColumnIndex::Bitmap),
    );
    out.extend(bsi::bsi_columns(options).into_iter().map(ColumnIndex::Bsi));
    out.extend(
        range_bitmap::range_bitmap_columns(options)?
            .into_iter()
            .map(ColumnIndex::RangeBitmap),
    );
    Ok(out)
}

/// The entries of `map` in the order a Java `HashMap<String, _>` holding them iterates (Java
/// writes the columns of an index file, and the index types of a column, from `HashMap`s):
/// by bucket, `(h ^ h >>> 16) & (capacity - 1)` of the key's `String.hashCode` `h`, with the
/// capacity a default map grows to (16, doubled past a 0.75 load); keys sharing a bucket in
/// `map`'s order (Java's: insertion order, which rarely matters).
fn java_hash_order<V>(map: &BTreeMap<String, V>) -> Vec<(&String, &V)> {
    let mut capacity: usize = 16;
    while map.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |key: &str| {
        let h = key.encode_utf16().fold(0i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        });
        let h = h as u32;
        (h ^ (h >> 16)) as usize & (capacity - 1)
    };
    let mut entries: Vec<(&String, &V)> = map.iter().collect();
    entries.sort_by_key(|(key, _)| bucket(key));
    entries
}

/// An index type and its body, as [`FileIndex::encode`] writes them.
type IndexBody<'a> = (&'a String, &'a Vec<u8>);

/// The indexes of one data file: per column, index type -> body bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileIndex {
    pub columns: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Error::corrupt("file index", "truncated"))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn utf(&mut self) -> Result<String> {
        let len = u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes"));
        decode_modified_utf8(self.take(usize::from(len))?)
    }
}

/// Java's `DataInput.readUTF` bytes as a string.
fn decode_modified_utf8(bytes: &[u8]) -> Result<String> {
    let bad = || Error::corrupt("file index", "a name is not modified UTF-8");
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (unit, width) = match b {
            0x01..=0x7f => (u16::from(b), 1),
            0xc0..=0xdf => {
                let c = *bytes.get(i + 1).ok_or_else(bad)?;
                ((u16::from(b & 0x1f) << 6) | u16::from(c & 0x3f), 2)
            }
            0xe0..=0xef => {
                let (c, d) = (
                    *bytes.get(i + 1).ok_or_else(bad)?,
                    *bytes.get(i + 2).ok_or_else(bad)?,
                );
                (
                    (u16::from(b & 0x0f) << 12) | (u16::from(c & 0x3f) << 6) | u16::from(d & 0x3f),
                    3,
                )
            }
            _ => return Err(bad()),
        };
        units.push(unit);
        i += width;
    }
    String::from_utf16(&units).map_err(|_| bad())
}

/// Java's `DataOutput.writeUTF` bytes of `s` (without the length).
fn encode_modified_utf8(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007f => out.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                out.push(0xc0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                out.push(0xe0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    out
}

fn put_utf(out: &mut Vec<u8>, s: &str) -> Result<()> {
    let bytes = encode_modified_utf8(s);
    let len = u16::try_from(bytes.len())
        .map_err(|_| Error::Invalid(format!("file index name '{s}' is too long")))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&bytes);
    Ok(())
}

fn to_i32(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| Error::Invalid("file index larger than 2 GiB".into()))
}

impl FileIndex {
    /// Decode an index file (or an embedded index: the same bytes).
    pub fn decode(bytes: &[u8]) -> Result<FileIndex> {
        let mut c = Cursor { bytes, pos: 0 };
        if c.i64()? != MAGIC {
            return Err(Error::corrupt("file index", "not a file index (bad magic)"));
        }
        let version = c.i32()?;
        if version != VERSION {
            return Err(Error::Unsupported(format!(
                "file index version {version} (only {VERSION} is supported)"
            )));
        }
        let _head_length = c.i32()?;
        let mut columns = BTreeMap::new();
        for _ in 0..c.i32()? {
            let column = c.utf()?;
            let mut indexes = BTreeMap::new();
            for _ in 0..c.i32()? {
                let kind = c.utf()?;
                let (start, length) = (c.i32()?, c.i32()?);
                let body = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(length).ok())
                    .and_then(|(s, l)| bytes.get(s..s.checked_add(l)?))
                    .ok_or_else(|| {
                        Error::corrupt(
                            "file index",
                            format!("index {kind} of {column} out of bounds"),
                        )
                    })?;
                indexes.insert(kind, body.to_vec());
            }
            columns.insert(column, indexes);
        }
        Ok(FileIndex { columns })
    }

    /// The index file's bytes (Java `FileIndexFormat.Writer`).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let columns: Vec<(&String, Vec<IndexBody<'_>>)> = java_hash_order(&self.columns)
            .into_iter()
            .map(|(column, indexes)| (column, java_hash_order(indexes)))
            .collect();
        let mut names = Vec::new();
        for (column, indexes) in &columns {
            put_utf(&mut names, column)?;
            for (kind, _) in indexes {
                put_utf(&mut names, kind)?;
            }
        }
        let entries: usize = columns.iter().map(|(_, i)| i.len()).sum();
        let head = 8 + 4 + 4 + 4 + entries * 8 + columns.len() * 4 + 4 + names.len();
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC.to_be_bytes());
        out.extend_from_slice(&VERSION.to_be_bytes());
        out.extend_from_slice(&to_i32(head)?.to_be_bytes());
        out.extend_from_slice(&to_i32(columns.len())?.to_be_bytes());
        let mut start = head;
        for (column, indexes) in &columns {
            put_utf(&mut out, column)?;
            out.extend_from_slice(&to_i32(indexes.len())?.to_be_bytes());
            for (kind, body) in indexes {
                put_utf(&mut out, kind)?;
                out.extend_from_slice(&to_i32(start)?.to_be_bytes());
                out.extend_from_slice(&to_i32(body.len())?.to_be_bytes());
                start += body.len();
            }
        }
        out.extend_from_slice(&0i32.to_be_bytes());
        for (_, body) in columns.iter().flat_map(|(_, i)| i) {
            out.extend_from_slice(body);
        }
        Ok(out)
    }

    /// The bloom filter of `column`, if the file has one.
    pub fn bloom_filter(&self, column: &str) -> Result<Option<BloomFilter64>> {
        self.columns
            .get(column)
            .and_then(|i| i.get(BLOOM_FILTER))
            .map(|body| BloomFilter64::decode(body))
            .transpose()
    }

    /// Whether a value hashing to `hash` may be in `column`: `None` when the column has no
    /// (readable) bloom filter, `Some(false)` only when the filter rules the value out.
    pub fn bloom_may_contain(&self, column: &str, hash: u64) -> Option<bool> {
        let body = self.columns.get(column)?.get(BLOOM_FILTER)?;
        let num_hash = i32::from_be_bytes(body.get(..4)?.try_into().ok()?);
        let bits = &body[4..];
        (num_hash >= 1 && !bits.is_empty() && bits.len() <= (i32::MAX / 8) as usize)
            .then(|| test_bits(num_hash, bits, hash))
    }
}

/// Java `BloomFilter64` with its file-index serialisation.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomFilter64 {
    num_hash: i32,
    bits: Vec<u8>,
}

impl BloomFilter64 {
    /// An empty filter sized for `items` values at false-positive rate `fpp` (Java's sizing:
    /// bits rounded up past a multiple of 8).
    pub fn new(items: u64, fpp: f64) -> Result<BloomFilter64> {
        if !(fpp > 0.0 && fpp < 1.0) || items == 0 {
            return Err(Error::Invalid(format!(
                "bloom filter needs items > 0 and 0 < fpp < 1, got items {items}, fpp {fpp}"
            )));
        }
        let ln2 = std::f64::consts::LN_2;
        let raw = (-(items as f64) * fpp.ln() / (ln2 * ln2)) as i32;
        let num_bits = raw + (8 - raw % 8);
        let num_hash = ((f64::from(num_bits) / items as f64 * ln2).round() as i32).max(1);
        Ok(BloomFilter64 {
            num_hash,
            bits: vec![0; (num_bits / 8) as usize],
        })
    }

    fn decode(body: &[u8]) -> Result<BloomFilter64> {
        if body.len() <= 4 {
            return Err(Error::corrupt("bloom filter index", "too short"));
        }
        let num_hash = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
        if num_hash < 1 || body.len() - 4 > (i32::MAX / 8) as usize {
            return Err(Error::corrupt("bloom filter index", "bad header"));
        }
        Ok(BloomFilter64 {
            num_hash,
            bits: body[4..].to_vec(),
        })
    }

    /// The index body: hash count then bit set.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.num_hash.to_be_bytes().to_vec();
        out.extend_from_slice(&self.bits);
        out
    }

    pub fn add_hash(&mut self, hash: u64) {
        for p in positions(self.num_hash, self.bits.len(), hash).collect::<Vec<_>>() {
            self.bits[p / 8] |= 1 << (p % 8);
        }
    }

    /// False only when no value with this hash was added.
    pub fn test_hash(&self, hash: u64) -> bool {
        test_bits(self.num_hash, &self.bits, hash)
    }
}

/// The bits a hash sets in a filter of `num_hash` functions over `bytes` bytes of bits.
fn positions(num_hash: i32, bytes: usize, hash: u64) -> impl Iterator<Item = usize> {
    let num_bits = (bytes * 8) as i32;
    let (h1, h2) = (hash as i32, (hash >> 32) as i32);
    (1..=num_hash).map(move |i| {
        let combined = h1.wrapping_add(i.wrapping_mul(h2));
        let combined = if combined < 0 { !combined } else { combined };
        (combined % num_bits) as usize
    })
}

fn test_bits(num_hash: i32, bits: &[u8], hash: u64) -> bool {
    positions(num_hash, bits.len(), hash).all(|p| bits[p / 8] & (1 << (p % 8)) != 0)
}

/// Thomas Wang's 64-bit integer mix (Java `FastHash.getLongHash`).
fn long_hash(key: i64) -> u64 {
    let mut key = (!key).wrapping_add(key << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key = key.wrapping_add(key << 31);
    key as u64
}

fn xx_hash(bytes: &[u8]) -> u64 {
    let mut h = twox_hash::XxHash64::with_seed(0);
    h.write(bytes);
    h.finish()
}

/// Whether bloom filters can hash values of `ty` (Java `FastHash`).
pub fn hashable(ty: &DataType) -> bool {
    matches!(
        ty.kind,
        TypeKind::Char(_)
            | TypeKind::VarChar(_)
            | TypeKind::Binary(_)
            | TypeKind::VarBinary(_)
            | TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Float
            | TypeKind::Double
            | TypeKind::Date
            | TypeKind::Time(_)
            | TypeKind::Timestamp(_)
            | TypeKind::LocalZonedTimestamp(_)
    )
}

/// The 64-bit hash Java's bloom filter index gives `value` of type `ty`; `None` for nulls,
/// types it does not hash and values of another kind.
pub fn fast_hash(value: &Datum, ty: &DataType) -> Option<u64> {
    Some(match (value, &ty.kind) {
        (Datum::String(s), TypeKind::Char(_) | TypeKind::VarChar(_)) => xx_hash(s.as_bytes()),
        (Datum::Bytes(b), TypeKind::Binary(_) | TypeKind::VarBinary(_)) => xx_hash(b),
        (Datum::TinyInt(v), TypeKind::TinyInt) => long_hash(i64::from(*v)),
        (Datum::SmallInt(v), TypeKind::SmallInt) => long_hash(i64::from(*v)),
        (Datum::Int(v), TypeKind::Int) => long_hash(i64::from(*v)),
        (Datum::BigInt(v), TypeKind::BigInt) => long_hash(*v),
        (Datum::Float(v), TypeKind::Float) => long_hash(i64::from(java_float_bits(*v) as i32)),
        (Datum::Double(v), TypeKind::Double) => long_hash(java_double_bits(*v) as i64),
        (Datum::Date(v), TypeKind::Date) => long_hash(i64::from(*v)),
        (Datum::Time(v), TypeKind::Time(_)) => long_hash(i64::from(*v)),
        (
            Datum::Timestamp { millis, nanos },
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
        ) => long_hash(timestamp_key(*millis, *nanos, *p)),
        _ => return None,
    })
}

/// Java `Float.floatToIntBits`: the IEEE bits, every NaN the canonical NaN.
fn java_float_bits(v: f32) -> u32 {
    if v.is_nan() {
        f32::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// Java `Double.doubleToLongBits`: the IEEE bits, every NaN the canonical NaN.
fn java_double_bits(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// The long file indexes key a timestamp of precision `precision` by: epoch millis up to
/// precision 3 (`Timestamp.getMillisecond`), else epoch micros (`toMicros`).
fn timestamp_key(millis: i64, nanos: i32, precision: u32) -> i64 {
    if precision <= 3 {
        millis
    } else {
        millis.wrapping_mul(1000) + i64::from(nanos / 1000)
    }
}

/// Java `RoaringBitmap32.serialize()`: Roaring's portable format after `runOptimize` (run
/// containers where they are smaller).
fn java_roaring_bytes(mut bitmap: RoaringBitmap) -> Vec<u8> {
    bitmap.optimize();
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    bitmap
        .serialize_into(&mut out)
        .expect("writing to a Vec cannot fail");
    out
}

/// The bytes of a hex string (the Java-written index bodies of the tests' `testdata/`).
#[cfg(test)]
pub(crate) fn test_hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_entries_take_their_own_options_over_the_maps() {
        assert_eq!(map_entry("attrs[a.b]"), Some(("attrs", "a.b")));
        assert_eq!(map_entry("attrs"), None);
        assert_eq!(map_entry("attrs[a"), None);
        let mut options = Options::new();
        options.set("file-index.bloom-filter.columns", "m[a],m[b],n");
        options.set("file-index.bloom-filter.m.items", "50");
        options.set("file-index.bloom-filter.m[b].items", "300");
        let items: Vec<(String, u64)> = bloom_filter_columns(&options)
            .unwrap()
            .into_iter()
            .map(|c| (c.column, c.items))
            .collect();
        assert_eq!(
            items,
            [
                ("m[a]".into(), 50),
                ("m[b]".into(), 300),
                ("n".into(), 1_000_000)
            ]
        );
    }

    #[test]
    fn columns_and_index_types_are_in_java_hash_map_order() {
        // what Java's new HashMap<>() of these keys iterates (buckets of 16: bloom-filter 0,
        // bitmap 7, bsi 9, range-bitmap 13; v 6, name 8, id 11)
        let order = |ks: &[&str]| {
            let map: BTreeMap<String, ()> = ks.iter().map(|k| (k.to_string(), ())).collect();
            java_hash_order(&map)
                .into_iter()
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&["id", "name", "v"]), ["v", "name", "id"]);
        assert_eq!(
            order(&["bitmap", "bloom-filter", "bsi", "range-bitmap"]),
            ["bloom-filter", "bitmap", "bsi", "range-bitmap"]
        );
    }

    #[test]
    fn rewritten_index_files_are_named_as_java_names_them() {
        let data = "data-5c1e-0.parquet";
        assert_eq!(
            next_index_file_name(data, None),
            "data-5c1e-0.parquet.index"
        );
        // DataFilePathFactory.createNewFileIndexFilePath
        let first = next_index_file_name(data, Some("data-5c1e-0.parquet.index"));
        assert_eq!(first, "data-5c1e-0.parquet-1.index");
        assert_eq!(
            next_index_file_name(data, Some(&first)),
            "data-5c1e-0.parquet-2.index"
        );
        assert_eq!(next_index_file_name(data, Some("x.index")), "x-1.index");
        assert_eq!(
            next_index_file_name(data, Some("a-b-9.index")),
            "a-b-10.index"
        );
    }

    #[test]
    fn hashes_and_filters_are_javas() {
        // computed with Java Paimon 1.3.1 (FastHash, BloomFilter64)
        for (v, java) in [
            (0i64, 0i64),
            (-1, 6_614_246_905_173_314_819),
            (123_456_789, -1_864_789_099_685_094_664),
            (i64::MIN, 4_316_648_529_147_585_864),
        ] {
            assert_eq!(long_hash(v) as i64, java, "long hash of {v}");
        }
        assert_eq!(xx_hash(b"abc") as i64, 4_952_883_123_889_572_249);
        assert_eq!(xx_hash(b"") as i64, -1_205_034_819_632_174_695);
        let mut bloom = BloomFilter64::new(10, 0.1).unwrap();
        for v in 0..10 {
            bloom.add_hash(long_hash(v));
        }
        assert_eq!(bloom.encode(), [0, 0, 0, 3, 153, 232, 229, 244, 192, 13]);
    }

    #[test]
    fn added_values_test_positive_and_files_round_trip() {
        let ty = DataType::not_null(TypeKind::BigInt);
        let mut bloom = BloomFilter64::new(100, 0.01).unwrap();
        for v in 0..100i64 {
            bloom.add_hash(fast_hash(&Datum::BigInt(v), &ty).unwrap());
        }
        assert!((0..100i64).all(|v| bloom.test_hash(fast_hash(&Datum::BigInt(v), &ty).unwrap())));
        let misses = (1000..11000i64)
            .filter(|v| bloom.test_hash(fast_hash(&Datum::BigInt(*v), &ty).unwrap()))
            .count();
        assert!(misses < 500, "{misses} false positives of 10,000");
        let mut index = FileIndex::default();
        index
            .columns
            .entry("id".into())
            .or_default()
            .insert(BLOOM_FILTER.into(), bloom.encode());
        index
            .columns
            .entry("naïve \u{0}𝄞".into())
            .or_default()
            .insert(BLOOM_FILTER.into(), vec![0, 0, 0, 1, 255]);
        let decoded = FileIndex::decode(&index.encode().unwrap()).unwrap();
        assert_eq!(decoded, index);
        assert_eq!(decoded.bloom_filter("id").unwrap(), Some(bloom));
        let hash = |v: i64| fast_hash(&Datum::BigInt(v), &ty).unwrap();
        assert_eq!(decoded.bloom_may_contain("id", hash(7)), Some(true));
        assert_eq!(decoded.bloom_may_contain("other", hash(7)), None);
        let ruled_out =
            (1000..11000i64).filter(|v| decoded.bloom_may_contain("id", hash(*v)) == Some(false));
        assert_eq!(ruled_out.count(), 10_000 - misses);
        assert!(FileIndex::decode(b"not an index").is_err());
    }
}

/// Every index type over every key kind against bytes Java Paimon 1.3.1 wrote for the same rows
/// (`testdata/java_types.txt`: name and hex per line), and its answers against the rows.
#[cfg(test)]
mod java_types {
    use super::bitmap::{bitmap_key, BitmapColumn, BitmapIndex, BitmapIndexWriter};
    use super::bsi::{bsi_value, BsiIndex, BsiIndexWriter, BsiOp};
    use super::range_bitmap::{range_key, RangeBitmapColumn, RangeBitmapIndex, RangeBitmapWriter};
    use super::*;

    const DS: [f64; 8] = [1.5, -0.0, 0.0, f64::NAN, -1.5, 1.5, f64::NEG_INFINITY, 0.0];

    /// The 30 rows of each case (as the Java generator makes them) and the column type.
    fn case(name: &str) -> (DataType, Vec<Datum>) {
        let rows = |f: &dyn Fn(i64) -> Datum| (0..30).map(f).collect::<Vec<_>>();
        let null_or = |null: bool, v: Datum| if null { Datum::Null } else { v };
        let ty = |k| DataType::new(k);
        let kind = name.split_once('_').expect("type_case").1;
        match kind {
            "double" => (
                ty(TypeKind::Double),
                rows(&|i| null_or(i % 9 == 8, Datum::Double(DS[(i % 9 % 8) as usize]))),
            ),
            "float" => (
                ty(TypeKind::Float),
                rows(&|i| null_or(i % 9 == 8, Datum::Float(DS[(i % 9 % 8) as usize] as f32))),
            ),
            "ts3" => (
                ty(TypeKind::Timestamp(3)),
                rows(&|i| {
                    let millis = -3000 + (i % 7) * 1000;
                    null_or(i % 5 == 4, Datum::Timestamp { millis, nanos: 0 })
                }),
            ),
            "ts6" => (
                ty(TypeKind::Timestamp(6)),
                rows(&|i| {
                    let (millis, nanos) = (-3 + i % 7, (i % 3) as i32 * 1000);
                    null_or(i % 5 == 4, Datum::Timestamp { millis, nanos })
                }),
            ),
            "decimal" => (
                ty(TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                }),
                rows(&|i| null_or(i % 6 == 5, Datum::Decimal(i128::from((i % 7) * 125 - 300)))),
            ),
            "tiny" => (
                ty(TypeKind::TinyInt),
                rows(&|i| null_or(i % 6 == 5, Datum::TinyInt((i % 5 - 2) as i8))),
            ),
            "small" => (
                ty(TypeKind::SmallInt),
                rows(&|i| Datum::SmallInt((i * 1000 % 7001 - 3000) as i16)),
            ),
            "bool" => (
                ty(TypeKind::Boolean),
                rows(&|i| null_or(i % 4 == 3, Datum::Boolean(i % 3 == 0))),
            ),
            "date" => (
                ty(TypeKind::Date),
                rows(&|i| Datum::Date((i % 4 * 365 - 400) as i32)),
            ),
            other => panic!("no case {other}"),
        }
    }

    use super::test_hex as hex;

    /// Rows (positions) of `values` whose key satisfies `holds`.
    fn rows_where<K>(
        values: &[Datum],
        key: impl Fn(&Datum) -> Option<K>,
        holds: impl Fn(&K) -> bool,
    ) -> Vec<u32> {
        (0..values.len() as u32)
            .filter(|&r| key(&values[r as usize]).is_some_and(|k| holds(&k)))
            .collect()
    }

    const OPS: [BsiOp; 5] = [BsiOp::Eq, BsiOp::Lt, BsiOp::Le, BsiOp::Gt, BsiOp::Ge];

    fn holds(op: BsiOp, o: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match op {
            BsiOp::Eq => o == Equal,
            BsiOp::Lt => o == Less,
            BsiOp::Le => o != Greater,
            BsiOp::Gt => o == Greater,
            BsiOp::Ge => o != Less,
        }
    }

    #[test]
    fn every_type_is_javas_bytes_and_answers_exactly() {
        let cases = include_str!("file_index/testdata/java_types.txt");
        for line in cases.lines() {
            let (name, java) = line.split_once(' ').expect("name hex");
            let java = hex(java);
            let (ty, values) = case(name);
            let ours = match name.split_once('_').expect("index_type").0 {
                "bitmap" => {
                    let column = BitmapColumn {
                        column: "c".into(),
                        version: 2,
                        index_block_size: 16 * 1024,
                    };
                    let mut w = BitmapIndexWriter::new(&ty, &column).unwrap();
                    values.iter().for_each(|v| w.add(bitmap_key(v, &ty)));
                    let index = BitmapIndex::decode(&java, &ty).unwrap();
                    for probe in values.iter().filter_map(|v| bitmap_key(v, &ty)) {
                        let got: Vec<u32> = index.rows(Some(&probe)).unwrap().iter().collect();
                        assert_eq!(
                            got,
                            rows_where(&values, |v| bitmap_key(v, &ty), |k| *k == probe),
                            "{name}"
                        );
                    }
                    w.encode().unwrap()
                }
                "bsi" => {
                    let mut w = BsiIndexWriter::new(&ty, "c").unwrap();
                    values.iter().for_each(|v| w.add(bsi_value(v, &ty)));
                    let index = BsiIndex::decode(&java).unwrap();
                    for probe in values.iter().filter_map(|v| bsi_value(v, &ty)) {
                        for op in OPS {
                            let got: Vec<u32> = index.compare(op, probe).unwrap().iter().collect();
                            let want = rows_where(
                                &values,
                                |v| bsi_value(v, &ty),
                                |k| holds(op, k.cmp(&probe)),
                            );
                            assert_eq!(got, want, "{name} {op:?} {probe}");
                        }
                    }
                    w.encode().unwrap()
                }
                _ => {
                    let column = RangeBitmapColumn {
                        column: "c".into(),
                        chunk_size: None,
                    };
                    let mut w = RangeBitmapWriter::new(&ty, &column).unwrap();
                    values.iter().for_each(|v| w.add(range_key(v, &ty)));
                    let index = RangeBitmapIndex::decode(&java, &ty).unwrap();
                    for probe in values.iter().filter_map(|v| range_key(v, &ty)) {
                        for op in OPS {
                            let got: Vec<u32> = index.compare(op, &probe).iter().collect();
                            let want = rows_where(
                                &values,
                                |v| range_key(v, &ty),
                                |k| holds(op, k.java_cmp(&probe)),
                            );
                            assert_eq!(got, want, "{name} {op:?} {probe:?}");
                        }
                    }
                    w.encode().unwrap()
                }
            };
            assert_eq!(ours, java, "{name}: tidelake's bytes differ from Java's");
        }
    }
}
