//! `hll_sketch`, `theta_sketch` and `rbm32` (Java `FieldHllSketchAgg`, `FieldThetaSketchAgg`,
//! `FieldRoaringBitmap32Agg`): VARBINARY columns holding serialized sketches or bitmaps,
//! aggregated as their union, re-serialized.
//!
//! * HLL (Java `HllSketchUtil.union`): a union sized by the input sketch's `lg_k` takes both
//!   sketches; the result is an HLL_4 sketch in compact form (Java `toCompactByteArray`).
//! * Theta (Java `ThetaSketch.union`): a default union (lg_k 12, seed 9001) of both compact
//!   sketches; the result is an ordered compact sketch (Java `CompactSketch.toByteArray`).
//! * RoaringBitmap (Java `RoaringBitmap32`): bitmaps in the portable RoaringBitmap format,
//!   or-ed.
//!
//! The serialization is the Apache DataSketches one (the `datasketches` crate, a port of the
//! Java library) and the RoaringBitmap portable format (the `roaring` crate), so Java reads
//! what these write and the reverse. A null on either side yields the other side unchanged;
//! none of these functions can retract. Bytes that do not decode are
//! [`Error::Invalid`] naming the function.

use datasketches::hll::{HllSketch, HllType, HllUnion};
use datasketches::theta::{CompactThetaSketch, ThetaUnionBuilder};
use roaring::RoaringBitmap;

use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{scalar, Acc, Scalar, Value};

/// Which serialized structure a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Hll,
    Theta,
    Rbm32,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Hll => "hll_sketch",
            Kind::Theta => "theta_sketch",
            Kind::Rbm32 => "rbm32",
        }
    }

    /// The union of `acc` and `input`, serialized as Java serializes it.
    pub(crate) fn union(self, acc: &[u8], input: &[u8]) -> Result<Vec<u8>> {
        let bad = |e: &dyn std::fmt::Display| {
            Error::invalid(format!(
                "aggregate function '{}': bad value: {e}",
                self.name()
            ))
        };
        match self {
            Kind::Hll => {
                let acc = HllSketch::deserialize(acc).map_err(|e| bad(&e))?;
                let input = HllSketch::deserialize(input).map_err(|e| bad(&e))?;
                let mut union = HllUnion::new(input.lg_config_k()).map_err(|e| bad(&e))?;
                union.update(&input);
                union.update(&acc);
                Ok(union.to_sketch(HllType::Hll4).serialize())
            }
            Kind::Theta => {
                let acc = CompactThetaSketch::deserialize(acc).map_err(|e| bad(&e))?;
                let input = CompactThetaSketch::deserialize(input).map_err(|e| bad(&e))?;
                let mut union = ThetaUnionBuilder::default().build().map_err(|e| bad(&e))?;
                union.update(&acc).map_err(|e| bad(&e))?;
                union.update(&input).map_err(|e| bad(&e))?;
                Ok(union.to_sketch(true).serialize())
            }
            Kind::Rbm32 => {
                let mut acc = RoaringBitmap::deserialize_from(acc).map_err(|e| bad(&e))?;
                acc |= RoaringBitmap::deserialize_from(input).map_err(|e| bad(&e))?;
                let mut out = Vec::with_capacity(acc.serialized_size());
                acc.serialize_into(&mut out).map_err(|e| bad(&e))?;
                Ok(out)
            }
        }
    }
}

/// The union aggregate of one sketch / bitmap kind.
pub(crate) struct Union(pub Kind);

fn bytes<'a>(cx: &'a Cx<'_>, acc: &'a Acc, kind: Kind) -> Result<Option<&'a [u8]>> {
    match scalar(cx.pool, cx.col, acc)? {
        None => Ok(None),
        Some(Scalar::Bytes(b)) => Ok(Some(b)),
        Some(other) => Err(Error::invalid(format!(
            "aggregate function '{}' on a non-binary value {other:?}",
            kind.name()
        ))),
    }
}

impl AggFn for Union {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        let (Some(a), Some(i)) = (bytes(cx, &acc, self.0)?, bytes(cx, &input, self.0)?) else {
            return Ok(if acc.is_null() { input } else { acc });
        };
        Ok(Acc::Val(Value::Bin(self.0.union(a, i)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hll_union_counts_distinct_values_of_both() {
        let sketch = |values: std::ops::Range<i64>| {
            let mut s = HllSketch::new(12, HllType::Hll4).unwrap();
            values.for_each(|v| s.update(v));
            s.serialize()
        };
        let merged = Kind::Hll.union(&sketch(0..100), &sketch(50..200)).unwrap();
        let estimate = HllSketch::deserialize(&merged).unwrap().estimate();
        assert!((estimate - 200.0).abs() < 4.0, "{estimate}");
        assert!(Kind::Hll.union(b"nope", &sketch(0..1)).is_err());
    }

    #[test]
    fn theta_union_is_exact_below_k() {
        let sketch = |values: std::ops::Range<i64>| {
            let mut s = datasketches::theta::ThetaSketchBuilder::default()
                .build()
                .unwrap();
            values.for_each(|v| s.update(v));
            s.compact(true).serialize()
        };
        let merged = Kind::Theta
            .union(&sketch(0..100), &sketch(50..200))
            .unwrap();
        let merged = CompactThetaSketch::deserialize(&merged).unwrap();
        assert_eq!(merged.estimate(), 200.0);
        assert!(merged.is_ordered());
    }

    #[test]
    fn rbm32_union_is_the_or() {
        let bitmap = |values: &[u32]| {
            let mut out = Vec::new();
            values
                .iter()
                .copied()
                .collect::<RoaringBitmap>()
                .serialize_into(&mut out)
                .unwrap();
            out
        };
        let merged = Kind::Rbm32
            .union(&bitmap(&[1, 5, 1 << 20]), &bitmap(&[5, 7]))
            .unwrap();
        let merged = RoaringBitmap::deserialize_from(&merged[..]).unwrap();
        assert_eq!(merged.iter().collect::<Vec<_>>(), vec![1, 5, 7, 1 << 20]);
    }
}
