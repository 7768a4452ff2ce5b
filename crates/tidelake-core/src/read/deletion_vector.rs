//! Deletion vectors: the set of deleted row positions of one data file, and the
//! `DELETION_VECTORS` index file that stores them (format spec §10.4).
//!
//! Index file layout: one version byte (`1`), then one record per data file:
//!
//! ```text
//! size: i32 BE | blob (size bytes) | crc: i32 BE        (32-bit vector)
//! blob = magic 1581511376 as i32 BE + portable RoaringBitmap
//! size: i32 BE | blob (size bytes) | crc: i32 BE        (64-bit vector)
//! blob = magic 1681511377 as i32 LE + u64 LE count + (u32 LE key + portable RoaringBitmap)*
//! ```
//!
//! `crc` is the CRC-32 of the blob. The index manifest's `(offset, length)` points at `size`;
//! `length` is `size` for 32-bit vectors and `4 + size + 4` for 64-bit ones (Java's
//! `DeletionVector.read`). The format of each record is told apart by its magic.
//!
//! Invariants: positions are 0-based row numbers within the data file; a decoded vector has
//! passed its CRC check (Java skips the check; we reject a mismatch as corruption).

use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Error, Result};

/// Magic of a 32-bit (RoaringBitmap) deletion vector, stored big-endian.
const MAGIC_32: u32 = 1_581_511_376;
/// Magic of a 64-bit (RoaringTreemap) deletion vector, stored little-endian.
const MAGIC_64: u32 = 1_681_511_377;
/// First byte of every deletion-vector index file.
const INDEX_FILE_VERSION: u8 = 1;

/// The deleted row positions of one data file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeletionVector {
    bitmap: Bitmap,
}

#[derive(Clone, Debug, PartialEq)]
enum Bitmap {
    /// Java `BitmapDeletionVector` (positions < 2^32).
    Bits32(RoaringBitmap),
    /// Java `Bitmap64DeletionVector`.
    Bits64(RoaringTreemap),
}

impl Default for Bitmap {
    fn default() -> Self {
        Bitmap::Bits32(RoaringBitmap::new())
    }
}

impl DeletionVector {
    /// An empty vector (32-bit; it widens itself if a position needs 64 bits).
    pub fn new() -> Self {
        Self::default()
    }

    /// Mark `pos` deleted; returns `false` if it already was.
    pub fn insert(&mut self, pos: u64) -> bool {
        match &mut self.bitmap {
            Bitmap::Bits32(b) => match u32::try_from(pos) {
                Ok(p) => b.insert(p),
                Err(_) => {
                    let mut wide: RoaringTreemap = b.iter().map(u64::from).collect();
                    let added = wide.insert(pos);
                    self.bitmap = Bitmap::Bits64(wide);
                    added
                }
            },
            Bitmap::Bits64(b) => b.insert(pos),
        }
    }

    /// Whether row `pos` (0-based within the data file) is deleted.
    pub fn contains(&self, pos: u64) -> bool {
        match &self.bitmap {
            Bitmap::Bits32(b) => u32::try_from(pos).is_ok_and(|p| b.contains(p)),
            Bitmap::Bits64(b) => b.contains(pos),
        }
    }

    /// Number of deleted rows.
    pub fn cardinality(&self) -> u64 {
        match &self.bitmap {
            Bitmap::Bits32(b) => b.len(),
            Bitmap::Bits64(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.cardinality() == 0
    }

    /// Number of deleted rows among positions `start..end`.
    pub fn count_in_range(&self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        match &self.bitmap {
            Bitmap::Bits32(b) => {
                let Ok(lo) = u32::try_from(start) else {
                    return 0;
                };
                let hi = u32::try_from(end - 1).unwrap_or(u32::MAX);
                b.range_cardinality(lo..=hi)
            }
            Bitmap::Bits64(b) => b.rank(end - 1) - if start == 0 { 0 } else { b.rank(start - 1) },
        }
    }

    /// Deleted positions in ascending order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u64> + '_> {
        match &self.bitmap {
            Bitmap::Bits32(b) => Box::new(b.iter().map(u64::from)),
            Bitmap::Bits64(b) => Box::new(b.iter()),
        }
    }

    /// The blob (magic + bitmap) of this vector in Java's 32-bit format, or `None` if a
    /// position exceeds Java's 32-bit limit (`Integer.MAX_VALUE`).
    fn blob_32(&self) -> Option<Vec<u8>> {
        let limit = i32::MAX as u64;
        let narrow;
        let bitmap = match &self.bitmap {
            Bitmap::Bits32(b) if b.max().is_none_or(|m| u64::from(m) <= limit) => b,
            Bitmap::Bits64(b) if b.max().is_none_or(|m| m <= limit) => {
                narrow = b
                    .iter()
                    .filter_map(|p| u32::try_from(p).ok())
                    .collect::<RoaringBitmap>();
                &narrow
            }
            _ => return None,
        };
        let mut blob = Vec::with_capacity(4 + bitmap.serialized_size());
        blob.extend_from_slice(&MAGIC_32.to_be_bytes());
        // Writing into a Vec cannot fail.
        let _ = bitmap.serialize_into(&mut blob);
        Some(blob)
    }

    /// The blob (magic + bitmap) of this vector in Java's 64-bit format.
    fn blob_64(&self) -> Vec<u8> {
        let wide: RoaringTreemap = self.iter().collect();
        let mut blob = Vec::with_capacity(4 + wide.serialized_size());
        blob.extend_from_slice(&MAGIC_64.to_le_bytes());
        // Writing into a Vec cannot fail.
        let _ = wide.serialize_into(&mut blob);
        blob
    }

    /// This vector as a 64-bit record (`size | blob | crc`), which is also Iceberg's
    /// `deletion-vector-v1` Puffin blob (Java `Bitmap64DeletionVector.serializeTo`: same
    /// magic, portable 64-bit Roaring layout and CRC).
    pub fn to_iceberg_blob(&self) -> Vec<u8> {
        framed(&self.blob_64())
    }
}

/// `size: i32 BE | blob | crc: i32 BE`.
fn framed(blob: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(blob.len() + 8);
    out.extend_from_slice(&(blob.len() as u32).to_be_bytes());
    out.extend_from_slice(blob);
    out.extend_from_slice(&crc32fast::hash(blob).to_be_bytes());
    out
}

impl FromIterator<u64> for DeletionVector {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut dv = DeletionVector::new();
        for pos in iter {
            dv.insert(pos);
        }
        dv
    }
}

fn corrupt(offset: u64, reason: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("deletion vector at offset {offset}"), reason)
}

fn read_be_u32(bytes: &[u8], at: usize, offset: u64) -> Result<u32> {
    bytes
        .get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| corrupt(offset, "truncated index file"))
}

/// Decode the deletion vector whose record starts at `offset` of a deletion-vector index
/// file (`offset`/`length` as in the index manifest's `_DELETIONS_VECTORS_RANGES`).
pub fn read_deletion_vector(
    index_file_bytes: &[u8],
    offset: u64,
    length: u64,
) -> Result<DeletionVector> {
    let start = usize::try_from(offset).map_err(|_| corrupt(offset, "offset out of range"))?;
    let size = read_be_u32(index_file_bytes, start, offset)?;
    let magic_bytes = read_be_u32(index_file_bytes, start + 4, offset)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s >= 4 && *s <= i32::MAX as usize)
        .ok_or_else(|| corrupt(offset, format!("invalid bitmap size {size}")))?;
    let is_64 = if magic_bytes == MAGIC_32 {
        false
    } else if magic_bytes.swap_bytes() == MAGIC_64 {
        true
    } else {
        return Err(corrupt(
            offset,
            format!("invalid deletion vector magic {magic_bytes}"),
        ));
    };
    let expected_len = if is_64 { size as u64 + 8 } else { size as u64 };
    if expected_len != length {
        return Err(corrupt(
            offset,
            format!("size {size} does not match the index manifest length {length}"),
        ));
    }
    let blob = index_file_bytes
        .get(start + 4..start + 4 + size)
        .ok_or_else(|| corrupt(offset, "truncated index file"))?;
    let crc = read_be_u32(index_file_bytes, start + 4 + size, offset)?;
    let actual = crc32fast::hash(blob);
    if crc != actual {
        return Err(corrupt(
            offset,
            format!("CRC mismatch: stored {crc:#010x}, computed {actual:#010x}"),
        ));
    }
    let mut payload = &blob[4..];
    let bitmap = if is_64 {
        Bitmap::Bits64(
            RoaringTreemap::deserialize_from(&mut payload)
                .map_err(|e| corrupt(offset, format!("bad 64-bit roaring bitmap: {e}")))?,
        )
    } else {
        Bitmap::Bits32(
            RoaringBitmap::deserialize_from(&mut payload)
                .map_err(|e| corrupt(offset, format!("bad roaring bitmap: {e}")))?,
        )
    };
    Ok(DeletionVector { bitmap })
}

/// One entry of the index manifest's `_DELETIONS_VECTORS_RANGES` for a written vector:
/// `(data file name, offset, length, cardinality)`.
pub type DeletionVectorRange = (String, u64, u64, u64);

/// Encode a deletion-vector index file holding `vectors` (data file name → vector), in order.
///
/// Vectors whose positions are at most `i32::MAX` use Java's default 32-bit format; a vector
/// with a larger position is written in the 64-bit format (Java reads both, telling them apart by
/// magic). Returns the file bytes and, per vector, its range for the index manifest.
pub fn write_deletion_vector_file(
    vectors: &[(String, DeletionVector)],
) -> (Vec<u8>, Vec<DeletionVectorRange>) {
    let mut out = vec![INDEX_FILE_VERSION];
    let mut ranges = Vec::with_capacity(vectors.len());
    for (file, dv) in vectors {
        let offset = out.len() as u64;
        let (blob, is_64) = match dv.blob_32() {
            Some(blob) => (blob, false),
            None => (dv.blob_64(), true),
        };
        let size = blob.len() as u64;
        out.extend_from_slice(&framed(&blob));
        let length = if is_64 { size + 8 } else { size };
        ranges.push((file.clone(), offset, length, dv.cardinality()));
    }
    (out, ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of the format spec §10.4 (deleted rows 1, 3, 7).
    const SPEC_EXAMPLE: &str = "01 0000001a 5e43f2d0 3a300000 01000000 0000 0200 10000000 \
                                0100 0300 0700 c1a4f369";

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn decodes_spec_example() {
        let bytes = hex(SPEC_EXAMPLE);
        let dv = read_deletion_vector(&bytes, 1, 26).unwrap();
        assert_eq!(dv.iter().collect::<Vec<_>>(), vec![1, 3, 7]);
        assert_eq!(dv.cardinality(), 3);
        assert!(dv.contains(3) && !dv.contains(2) && !dv.contains(u64::MAX));
        assert_eq!(dv.count_in_range(2, 8), 2);
        assert_eq!(dv.count_in_range(0, 1), 0);
    }

    #[test]
    fn encoder_matches_spec_bytes() {
        let dv: DeletionVector = [1u64, 3, 7].into_iter().collect();
        let (bytes, ranges) = write_deletion_vector_file(&[("f.parquet".into(), dv)]);
        assert_eq!(bytes, hex(SPEC_EXAMPLE));
        assert_eq!(ranges, vec![("f.parquet".to_string(), 1, 26, 3)]);
    }

    #[test]
    fn rejects_bad_crc_and_length() {
        let mut bytes = hex(SPEC_EXAMPLE);
        assert!(read_deletion_vector(&bytes, 1, 27).is_err());
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let err = read_deletion_vector(&bytes, 1, 26).unwrap_err();
        assert!(err.to_string().contains("CRC"), "{err}");
        assert!(read_deletion_vector(&bytes[..10], 1, 26).is_err());
        assert!(read_deletion_vector(&bytes, 2, 26).is_err());
    }

    #[test]
    fn round_trip_mixed_widths() {
        let small: DeletionVector = (0..5000u64).filter(|p| p % 3 == 0).collect();
        let dense: DeletionVector = (0..70_000u64).collect();
        let wide: DeletionVector = [5u64, 1 << 33, (1 << 40) + 7].into_iter().collect();
        let beyond_java_int: DeletionVector = [1u64, 1 << 31].into_iter().collect();
        let empty = DeletionVector::new();
        let input = vec![
            ("a".to_string(), small),
            ("b".to_string(), dense),
            ("c".to_string(), wide),
            ("d".to_string(), empty),
            ("e".to_string(), beyond_java_int),
        ];
        let (bytes, ranges) = write_deletion_vector_file(&input);
        assert_eq!(bytes[0], 1);
        assert_eq!(ranges.len(), input.len());
        for ((name, dv), (rname, off, len, card)) in input.iter().zip(&ranges) {
            assert_eq!(name, rname);
            assert_eq!(*card, dv.cardinality());
            let back = read_deletion_vector(&bytes, *off, *len).unwrap();
            assert_eq!(
                back.iter().collect::<Vec<_>>(),
                dv.iter().collect::<Vec<_>>()
            );
        }
        // 64-bit records' manifest lengths cover size + blob + crc.
        for (i, (_, off, len, _)) in ranges.iter().enumerate() {
            let at = *off as usize;
            let size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
            let wide = i == 2 || i == 4;
            assert_eq!(
                *len,
                u64::from(size) + if wide { 8 } else { 0 },
                "record {i}"
            );
        }
    }

    #[test]
    fn widening_insert_and_ranges() {
        let mut dv = DeletionVector::new();
        assert!(dv.insert(10));
        assert!(!dv.insert(10));
        assert!(dv.insert(1 << 35));
        assert!(dv.contains(10) && dv.contains(1 << 35));
        assert_eq!(dv.cardinality(), 2);
        assert_eq!(dv.count_in_range(0, 11), 1);
        assert_eq!(dv.count_in_range(11, 1 << 36), 1);
        assert_eq!(dv.count_in_range(5, 5), 0);
    }
}
