//! The `bsi` file index (Java `BitSliceIndexBitmapFileIndex`, `BitSliceIndexRoaringBitmap`): a
//! column's values as a long each (integers, DATE, TIME, DECIMAL up to precision 18 by unscaled
//! value, timestamps by [`super::timestamp_key`]), split into a bit-sliced index of the
//! non-negative values and one of the absolute values of the negative ones.
//!
//! ```text
//! version u8 (1) | row count i32 | has positive u8 | [positive] | has negative u8 | [negative]
//! a bit-sliced index: version u8 (1) | min i64 | max i64 | rows with a value (Roaring) |
//!   slice count i32 | slices (Roaring): slice i holds the rows whose (value - min) has bit i
//! ```
//!
//! As in Java, `min` is always 0 (the writer's minimum starts at 0) and there are
//! `64 - leading_zeros(max)` slices; Roaring bitmaps are in Java's serialisation
//! ([`super::java_roaring_bytes`]), so the bytes are Java's. `i64::MIN` has no absolute value:
//! Java fails on it, and so does the writer here.
//!
//! Invariant: each comparison returns exactly the rows whose value satisfies it (O'Neil's
//! bit-sliced comparison, with Java's min/max shortcuts).

use roaring::RoaringBitmap;

use super::{java_roaring_bytes, timestamp_key, to_i32, Cursor};
use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::types::{DataType, TypeKind};

/// The index type name of bit-sliced indexes.
pub const BSI: &str = "bsi";

const VERSION_1: u8 = 1;

/// The columns `file-index.bsi.columns` names (the index has no options).
pub fn bsi_columns(options: &crate::options::Options) -> Vec<String> {
    super::indexed_columns(options, BSI)
}

/// Whether Java can build a bsi index on a column of `ty`.
pub fn bsi_indexable(ty: &DataType) -> bool {
    match ty.kind {
        TypeKind::Decimal { precision, .. } => precision <= 18,
        TypeKind::TinyInt
        | TypeKind::SmallInt
        | TypeKind::Int
        | TypeKind::BigInt
        | TypeKind::Date
        | TypeKind::Time(_)
        | TypeKind::Timestamp(_)
        | TypeKind::LocalZonedTimestamp(_) => true,
        _ => false,
    }
}

/// The long a bsi index holds for non-null `value` of type `ty`; `None` for nulls, types it
/// does not index and values of another kind.
pub fn bsi_value(value: &Datum, ty: &DataType) -> Option<i64> {
    Some(match (value, &ty.kind) {
        (Datum::Decimal(v), TypeKind::Decimal { precision, .. }) if *precision <= 18 => {
            i64::try_from(*v).ok()?
        }
        (Datum::TinyInt(v), TypeKind::TinyInt) => i64::from(*v),
        (Datum::SmallInt(v), TypeKind::SmallInt) => i64::from(*v),
        (Datum::Int(v), TypeKind::Int)
        | (Datum::Date(v), TypeKind::Date)
        | (Datum::Time(v), TypeKind::Time(_)) => i64::from(*v),
        (Datum::BigInt(v), TypeKind::BigInt) => *v,
        (
            Datum::Timestamp { millis, nanos },
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
        ) => timestamp_key(*millis, *nanos, *p),
        _ => return None,
    })
}

/// Builds the bsi index of one column of one data file (Java `BitSliceIndexBitmapFileIndex.Writer`).
#[derive(Debug, Default)]
pub struct BsiIndexWriter {
    values: Vec<Option<i64>>,
    positive_max: u64,
    negative_max: u64,
}

impl BsiIndexWriter {
    /// An empty index of column `column` of `ty`; [`Error::Unsupported`] for types Java does
    /// not index.
    pub fn new(ty: &DataType, column: &str) -> Result<BsiIndexWriter> {
        if !bsi_indexable(ty) {
            return Err(Error::Unsupported(format!(
                "a bsi file index on column '{column}' of type {ty}"
            )));
        }
        Ok(BsiIndexWriter::default())
    }

    /// Add the next row's value (`None`: null).
    pub fn add(&mut self, value: Option<i64>) {
        if let Some(v) = value {
            if v < 0 {
                self.negative_max = self.negative_max.max(v.unsigned_abs());
            } else {
                self.positive_max = self.positive_max.max(v as u64);
            }
        }
        self.values.push(value);
    }

    /// The index body.
    pub fn encode(self) -> Result<Vec<u8>> {
        if self.values.contains(&Some(i64::MIN)) {
            return Err(Error::Unsupported(format!(
                "a bsi file index over the value {} (Java cannot index it either)",
                i64::MIN
            )));
        }
        let mut positive = Slices::new(self.positive_max);
        let mut negative = Slices::new(self.negative_max);
        for (row, value) in self.values.iter().enumerate() {
            match value {
                Some(v) if *v < 0 => negative.append(row as u32, v.unsigned_abs()),
                Some(v) => positive.append(row as u32, *v as u64),
                None => {}
            }
        }
        let mut out = vec![VERSION_1];
        out.extend_from_slice(&to_i32(self.values.len())?.to_be_bytes());
        for slices in [positive, negative] {
            let present = !slices.ebm.is_empty();
            out.push(u8::from(present));
            if present {
                slices.write(&mut out)?;
            }
        }
        Ok(out)
    }
}

/// One bit-sliced index (Java `BitSliceIndexRoaringBitmap`); `min` is 0 when written here.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Slices {
    pub(super) min: i64,
    pub(super) max: i64,
    /// Rows with a value.
    pub(super) ebm: RoaringBitmap,
    pub(super) slices: Vec<RoaringBitmap>,
}

impl Slices {
    fn new(max: u64) -> Slices {
        Slices {
            min: 0,
            max: max as i64,
            ebm: RoaringBitmap::new(),
            slices: vec![RoaringBitmap::new(); (64 - max.leading_zeros()) as usize],
        }
    }

    pub(super) fn append(&mut self, row: u32, value: u64) {
        let mut rest = value;
        while rest != 0 {
            self.slices[rest.trailing_zeros() as usize].insert(row);
            rest &= rest - 1;
        }
        self.ebm.insert(row);
    }

    fn write(self, out: &mut Vec<u8>) -> Result<()> {
        out.push(VERSION_1);
        out.extend_from_slice(&self.min.to_be_bytes());
        out.extend_from_slice(&self.max.to_be_bytes());
        out.extend_from_slice(&java_roaring_bytes(self.ebm));
        out.extend_from_slice(&to_i32(self.slices.len())?.to_be_bytes());
        for slice in self.slices {
            out.extend_from_slice(&java_roaring_bytes(slice));
        }
        Ok(())
    }

    fn read(c: &mut Cursor<'_>) -> Result<Slices> {
        let version = c.u8()?;
        if version != VERSION_1 {
            return Err(Error::Unsupported(format!(
                "bit-sliced index version {version} (only 1 is supported)"
            )));
        }
        let (min, max) = (c.i64()?, c.i64()?);
        let ebm = read_roaring(c)?;
        let count = c.i32()?;
        if !(0..=64).contains(&count) {
            return Err(Error::corrupt("bsi index", format!("{count} slices")));
        }
        let slices = (0..count).map(|_| read_roaring(c)).collect::<Result<_>>()?;
        Ok(Slices {
            min,
            max,
            ebm,
            slices,
        })
    }

    /// The rows whose value `op` `predicate` (Java `compare`: min/max shortcuts, then O'Neil).
    pub(super) fn compare(&self, op: BsiOp, predicate: i64) -> RoaringBitmap {
        let (min, max) = (self.min, self.max);
        let all = || self.ebm.clone();
        let shortcut = match op {
            BsiOp::Eq if min == max && min == predicate => Some(true),
            BsiOp::Eq if predicate < min || predicate > max => Some(false),
            BsiOp::Ge if predicate <= min => Some(true),
            BsiOp::Ge if predicate > max => Some(false),
            BsiOp::Gt if predicate < min => Some(true),
            BsiOp::Gt if predicate >= max => Some(false),
            BsiOp::Le if predicate >= max => Some(true),
            BsiOp::Le if predicate < min => Some(false),
            BsiOp::Lt if predicate > max => Some(true),
            BsiOp::Lt if predicate <= min => Some(false),
            _ => None,
        };
        match shortcut {
            Some(true) => return all(),
            Some(false) => return RoaringBitmap::new(),
            None => {}
        }
        let predicate = predicate.wrapping_sub(min);
        let (mut gt, mut lt, mut eq) = (RoaringBitmap::new(), RoaringBitmap::new(), all());
        for (i, slice) in self.slices.iter().enumerate().rev() {
            if (predicate >> i) & 1 == 1 {
                lt |= &eq - slice;
                eq &= slice;
            } else {
                gt |= &eq & slice;
                eq -= slice;
            }
        }
        match op {
            BsiOp::Eq => eq,
            BsiOp::Gt => gt,
            BsiOp::Lt => lt,
            BsiOp::Le => lt | eq,
            BsiOp::Ge => gt | eq,
        }
    }
}

/// The Roaring bitmap at the cursor (the reader consumes exactly its bytes).
pub(super) fn read_roaring(c: &mut Cursor<'_>) -> Result<RoaringBitmap> {
    let rest = c
        .bytes
        .get(c.pos..)
        .ok_or_else(|| Error::corrupt("bsi index", "truncated"))?;
    let mut reader = rest;
    let bitmap = RoaringBitmap::deserialize_from(&mut reader)
        .map_err(|e| Error::corrupt("bsi index", format!("bad bitmap: {e}")))?;
    c.pos += rest.len() - reader.len();
    Ok(bitmap)
}

/// A comparison a bsi index answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BsiOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A decoded bsi index.
#[derive(Debug, Clone)]
pub struct BsiIndex {
    row_count: u32,
    positive: Slices,
    negative: Slices,
}

impl BsiIndex {
    /// Decode an index body.
    pub fn decode(bytes: &[u8]) -> Result<BsiIndex> {
        let mut c = Cursor { bytes, pos: 0 };
        let version = c.u8()?;
        if version != VERSION_1 {
            return Err(Error::Unsupported(format!(
                "bsi index version {version} (only 1 is supported)"
            )));
        }
        let row_count = u32::try_from(c.i32()?)
            .map_err(|_| Error::corrupt("bsi index", "negative row count"))?;
        let mut part = || -> Result<Slices> {
            if c.u8()? != 0 {
                Slices::read(&mut c)
            } else {
                Ok(Slices::default())
            }
        };
        let positive = part()?;
        let negative = part()?;
        Ok(BsiIndex {
            row_count,
            positive,
            negative,
        })
    }

    /// Rows of the file (the index's row count).
    pub fn row_count(&self) -> u32 {
        self.row_count
    }

    /// The rows with a value.
    pub fn not_null(&self) -> RoaringBitmap {
        &self.positive.ebm | &self.negative.ebm
    }

    /// The rows whose value `op` `value` (Java's reader: negative values compare by absolute
    /// value in the negative index). `None` for `i64::MIN`, which no index holds.
    pub fn compare(&self, op: BsiOp, value: i64) -> Option<RoaringBitmap> {
        let abs = value.checked_abs()?;
        let (pos, neg) = (&self.positive, &self.negative);
        Some(if value < 0 {
            match op {
                BsiOp::Eq => neg.compare(BsiOp::Eq, abs),
                BsiOp::Lt => neg.compare(BsiOp::Gt, abs),
                BsiOp::Le => neg.compare(BsiOp::Ge, abs),
                BsiOp::Gt => &pos.ebm | &neg.compare(BsiOp::Lt, abs),
                BsiOp::Ge => &pos.ebm | &neg.compare(BsiOp::Le, abs),
            }
        } else {
            match op {
                BsiOp::Eq | BsiOp::Gt | BsiOp::Ge => pos.compare(op, value),
                BsiOp::Lt | BsiOp::Le => &pos.compare(op, value) | &neg.ebm,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::file_index::test_hex as hex;

    fn build(values: &[Option<i64>]) -> Vec<u8> {
        let mut w = BsiIndexWriter::new(&DataType::new(TypeKind::BigInt), "c").unwrap();
        for v in values {
            w.add(*v);
        }
        w.encode().unwrap()
    }

    #[test]
    fn writes_javas_bytes_and_compares_exactly() {
        // Java Paimon 1.3.1 BitSliceIndexBitmapFileIndex.Writer over these BIGINT rows
        let values = [
            Some(5),
            Some(-3),
            None,
            Some(17),
            Some(1000),
            Some(-70),
            Some(5),
        ];
        let java = hex(include_str!("testdata/bsi_long.hex").trim());
        assert_eq!(build(&values), java);
        let index = BsiIndex::decode(&java).unwrap();
        assert_eq!(index.row_count(), 7);
        for probe in [-71, -70, -69, -4, -3, -2, 0, 4, 5, 6, 17, 999, 1000, 1001] {
            for (op, test) in [
                (BsiOp::Eq, (|a: i64, b: i64| a == b) as fn(i64, i64) -> bool),
                (BsiOp::Lt, |a, b| a < b),
                (BsiOp::Le, |a, b| a <= b),
                (BsiOp::Gt, |a, b| a > b),
                (BsiOp::Ge, |a, b| a >= b),
            ] {
                let expected: Vec<u32> = (0..7u32)
                    .filter(|&r| values[r as usize].is_some_and(|v| test(v, probe)))
                    .collect();
                let got: Vec<u32> = index.compare(op, probe).unwrap().iter().collect();
                assert_eq!(got, expected, "{op:?} {probe}");
            }
        }
        assert_eq!(index.not_null().len(), 6);
        assert!(index.compare(BsiOp::Eq, i64::MIN).is_none());
        let mut w = BsiIndexWriter::new(&DataType::new(TypeKind::BigInt), "c").unwrap();
        w.add(Some(i64::MIN));
        assert!(w.encode().is_err());
        assert!(BsiIndexWriter::new(&DataType::new(TypeKind::Double), "c").is_err());
    }

    #[test]
    fn run_containers_are_sized_from_their_header() {
        let values: Vec<Option<i64>> = (0..20_000).map(|i| Some(i / 7000)).collect();
        let bytes = build(&values);
        let index = BsiIndex::decode(&bytes).unwrap();
        assert_eq!(index.compare(BsiOp::Eq, 2).unwrap().len(), 6000);
        assert_eq!(index.compare(BsiOp::Lt, 1).unwrap().len(), 7000);
    }
}
