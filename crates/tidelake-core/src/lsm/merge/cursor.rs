//! Run cursors: the current batch of each sorted run with its keys encoded for comparison.
//!
//! Keys (and user `sequence.field` columns) are encoded with [`KeyCodec`]s, so comparing them
//! is Java's comparator (see [`crate::lsm::key`]). Packed keys, when the codec packs, are kept
//! per cursor and also in a flat array for the loser tree (see [`compare`]).
//!
//! A batch is validated when loaded: `_SEQUENCE_NUMBER` Int64 and `_VALUE_KIND` Int8 without
//! nulls, kinds in 0..=3, and the same column types as the first batch of the merge.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_row::Rows;
use arrow_schema::{DataType as ArrowType, SchemaRef};
use futures::stream::BoxStream;
use tidelake_spec::row_kind::RowKind;

use crate::error::{Error, Result};
use crate::lsm::key::KeyCodec;
use crate::lsm::merge_fn::value::{Rec, VALUE_OFFSET};

/// One sorted run and its position.
pub(super) struct Cursor {
    pub stream: BoxStream<'static, Result<RecordBatch>>,
    /// `None` once the run is exhausted.
    pub head: Option<Head>,
}

/// The batch a cursor is on.
pub(super) struct Head {
    pub slot: u32,
    pub pos: usize,
    pub len: usize,
    /// The row-encoded keys; `None` when they were packed straight from the values.
    pub keys: Option<Rows>,
    /// The keys as integers ([`KeyCodec::encode_packed`]), when the key is fixed-width and short.
    pub packed: Option<Vec<u128>>,
    pub seq_keys: Option<Rows>,
    pub seq: ScalarBuffer<i64>,
    pub kinds: ScalarBuffer<i8>,
}

impl Head {
    /// Order of the key at `pos` against `other`'s key at `other_pos`.
    #[inline]
    pub fn key_cmp(&self, pos: usize, other: &Head, other_pos: usize) -> Ordering {
        match (&self.packed, &other.packed) {
            (Some(a), Some(b)) => a[pos].cmp(&b[other_pos]),
            _ => self.key_row(pos).cmp(other.key_row(other_pos)),
        }
    }

    /// Whether the current key is `key`.
    pub fn key_is(&self, key: &OwnedKey) -> bool {
        match (&self.packed, key.packed) {
            (Some(a), Some(b)) => a[self.pos] == b,
            _ => self.key_row(self.pos) == key.bytes.as_slice(),
        }
    }

    /// The row-encoded key at `pos` (heads without packed keys always have them).
    fn key_row(&self, pos: usize) -> &[u8] {
        self.keys
            .as_ref()
            .expect("keys that do not pack are row-encoded")
            .row(pos)
            .data()
    }

    pub fn rec(&self) -> Rec {
        Rec {
            slot: self.slot,
            row: u32::try_from(self.pos).expect("batch rows fit in u32"),
            kind: RowKind::from_code(self.kinds[self.pos]).expect("kinds validated on load"),
        }
    }

    fn is_add(&self) -> bool {
        let kind = self.kinds[self.pos];
        kind == RowKind::Insert.code() || kind == RowKind::UpdateAfter.code()
    }
}

/// A copy of one key, kept while its cursor moves on.
#[derive(Default)]
pub(super) struct OwnedKey {
    bytes: Vec<u8>,
    packed: Option<u128>,
}

impl OwnedKey {
    /// Become the current key of `head`.
    pub fn set(&mut self, head: &Head) {
        self.bytes.clear();
        if let Some(keys) = &head.keys {
            self.bytes.extend_from_slice(keys.row(head.pos).data());
        }
        self.packed = head.packed.as_ref().map(|p| p[head.pos]);
    }
}

/// Merge order of two cursors (Java `SortMergeReaderWithMinHeap`'s comparator): key, user
/// sequence fields, `_SEQUENCE_NUMBER`, retracts before adds; exhausted cursors last; ties by
/// run index so the order is total.
///
/// `current` is empty, or holds each cursor's current packed key ([`EXHAUSTED`] once it is
/// exhausted): then distinct keys are ordered from that flat array alone, without touching
/// the cursors (the tree's hot path), and only equal ones take the full comparison.
#[inline]
pub(super) fn compare(cursors: &[Cursor], current: &[u128], a: usize, b: usize) -> Ordering {
    if let (Some(x), Some(y)) = (current.get(a), current.get(b)) {
        if x != y {
            return x.cmp(y);
        }
    }
    compare_heads(cursors, a, b)
}

/// The packed key [`compare`] sees for an exhausted cursor: no smaller than any real key, and
/// a real key equal to it falls through to the full comparison, which puts exhausted last.
pub(super) const EXHAUSTED: u128 = u128::MAX;

/// [`compare`] from the cursors themselves.
fn compare_heads(cursors: &[Cursor], a: usize, b: usize) -> Ordering {
    match (&cursors[a].head, &cursors[b].head) {
        (Some(x), Some(y)) => x
            .key_cmp(x.pos, y, y.pos)
            .then_with(|| match (&x.seq_keys, &y.seq_keys) {
                (Some(sx), Some(sy)) => sx.row(x.pos).cmp(&sy.row(y.pos)),
                _ => Ordering::Equal,
            })
            .then_with(|| x.seq[x.pos].cmp(&y.seq[y.pos]))
            .then_with(|| x.is_add().cmp(&y.is_add()))
            .then(a.cmp(&b)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(&b),
    }
}

/// Turns input batches into [`Head`]s.
pub(super) struct Encoder {
    input_schema: SchemaRef,
    key_indices: Vec<usize>,
    sequence_indices: Vec<usize>,
    keys: KeyCodec,
    sequence: Option<KeyCodec>,
}

impl Encoder {
    /// An encoder for batches shaped like `input_schema`.
    pub fn new(
        input_schema: SchemaRef,
        key_indices: &[usize],
        sequence_indices: &[usize],
        sequence_descending: bool,
    ) -> Result<Self> {
        let value_columns = input_schema.fields().len().saturating_sub(VALUE_OFFSET);
        let types = |indices: &[usize]| -> Result<Vec<ArrowType>> {
            indices
                .iter()
                .map(|&i| {
                    if i >= value_columns {
                        return Err(Error::invalid(format!(
                            "merge config: column {i} out of range, the runs have {value_columns} value columns"
                        )));
                    }
                    Ok(input_schema.field(i + VALUE_OFFSET).data_type().clone())
                })
                .collect()
        };
        let keys = KeyCodec::new(types(key_indices)?)?;
        let sequence = if sequence_indices.is_empty() {
            None
        } else {
            Some(KeyCodec::with_order(
                types(sequence_indices)?,
                sequence_descending,
            )?)
        };
        Ok(Encoder {
            input_schema,
            key_indices: key_indices.to_vec(),
            sequence_indices: sequence_indices.to_vec(),
            keys,
            sequence,
        })
    }

    /// Whether every [`Head`] this encoder makes has packed keys ([`Head::packed`]).
    pub fn packs_keys(&self) -> bool {
        self.keys.packs_keys()
    }

    /// Validate `batch` and encode its keys; `slot` is where the pool will keep it.
    pub fn head(&self, batch: &RecordBatch, slot: u32) -> Result<Head> {
        self.validate(batch)?;
        let columns = |indices: &[usize]| -> Vec<ArrayRef> {
            indices
                .iter()
                .map(|&i| batch.column(i + VALUE_OFFSET).clone())
                .collect()
        };
        let (keys, packed) = self.keys.encode_packed(&columns(&self.key_indices))?;
        let seq_keys = match &self.sequence {
            None => None,
            Some(c) => Some(c.encode(&columns(&self.sequence_indices))?),
        };
        Ok(Head {
            slot,
            pos: 0,
            len: batch.num_rows(),
            keys,
            packed,
            seq_keys,
            seq: batch.column(0).as_primitive::<Int64Type>().values().clone(),
            kinds: batch.column(1).as_primitive::<Int8Type>().values().clone(),
        })
    }

    fn validate(&self, batch: &RecordBatch) -> Result<()> {
        let expected = self.input_schema.fields();
        let actual = batch.schema();
        let same_shape = actual.fields().len() == expected.len()
            && actual
                .fields()
                .iter()
                .zip(expected.iter())
                .all(|(a, e)| a.data_type() == e.data_type());
        if !same_shape {
            return Err(Error::invalid(format!(
                "sorted runs disagree on columns: expected {expected:?}, got {:?}",
                actual.fields()
            )));
        }
        let seq = batch.column(0);
        let kinds = batch.column(1);
        if seq.null_count() > 0 || kinds.null_count() > 0 {
            return Err(Error::invalid(
                "_SEQUENCE_NUMBER and _VALUE_KIND must not be null",
            ));
        }
        if let Some(bad) = kinds
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .find(|k| !(0..=3).contains(*k))
        {
            return Err(Error::invalid(format!("invalid _VALUE_KIND {bad}")));
        }
        Ok(())
    }
}

/// Check the system columns of the first batch, which fixes the shape of all others.
pub(super) fn check_input_schema(schema: &SchemaRef) -> Result<()> {
    let fields = schema.fields();
    if fields.len() < VALUE_OFFSET
        || fields[0].data_type() != &ArrowType::Int64
        || fields[1].data_type() != &ArrowType::Int8
    {
        return Err(Error::invalid(format!(
            "sorted-run batches must start with _SEQUENCE_NUMBER (Int64) and _VALUE_KIND (Int8), got {fields:?}"
        )));
    }
    Ok(())
}
