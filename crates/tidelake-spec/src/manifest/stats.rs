//! `SimpleStats` (Java `org.apache.paimon.stats.SimpleStats`): min/max rows and null counts of
//! some columns, as stored in manifests (partition stats, key stats, value stats).
//!
//! Invariant: `min_values`/`max_values` are framed BinaryRows exactly as stored (4-byte BE
//! arity, then the row); this module never interprets them.

use super::record::{nested_record, AvroRecord, AvroValue, Field, Fields, ToAvro, Ty};
use crate::error::Result;

/// Per-column statistics (Java `SimpleStats`, Avro record with `_MIN_VALUES`, `_MAX_VALUES`,
/// `_NULL_COUNTS`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimpleStats {
    /// Framed BinaryRow of per-column minimums (null where unknown).
    pub min_values: Vec<u8>,
    /// Framed BinaryRow of per-column maximums (null where unknown).
    pub max_values: Vec<u8>,
    /// One entry per covered column; `None` inside = unknown. Java always writes an array.
    pub null_counts: Option<Vec<Option<i64>>>,
}

/// The framed empty BinaryRow (arity 0): 4 zero bytes of arity + 8 zero header bytes.
pub const EMPTY_ROW: [u8; 12] = [0; 12];

impl SimpleStats {
    /// Java's `SimpleStats.EMPTY_STATS`: two empty rows and an empty null-count array.
    pub fn empty() -> SimpleStats {
        SimpleStats {
            min_values: EMPTY_ROW.to_vec(),
            max_values: EMPTY_ROW.to_vec(),
            null_counts: Some(Vec::new()),
        }
    }
}

impl AvroRecord for SimpleStats {
    const FIELDS: &'static [Field] = &[
        Field::required("_MIN_VALUES", Ty::Bytes),
        Field::required("_MAX_VALUES", Ty::Bytes),
        Field::nullable(
            "_NULL_COUNTS",
            Ty::Array {
                item: &Ty::Long,
                nullable_items: true,
            },
        ),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        Ok(SimpleStats {
            min_values: f.bytes()?,
            max_values: f.bytes()?,
            null_counts: f.get()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            AvroValue::Bytes(self.min_values.clone()),
            AvroValue::Bytes(self.max_values.clone()),
            self.null_counts.to_avro(),
        ]
    }
}
nested_record!(SimpleStats);
