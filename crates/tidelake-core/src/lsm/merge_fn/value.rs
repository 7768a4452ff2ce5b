//! What merge functions work on: row kinds, handles to input records, the pool of retained
//! input batches, and per-column accumulators.
//!
//! Invariants:
//! * An [`Acc::Ref`] always points at a **non-null** cell of a batch that is live in the
//!   [`Pool`]; null is always [`Acc::Null`]. So "is null" never needs the pool.
//! * An [`Acc::Val`] holds a value computed by an aggregate function; it is never null and its
//!   variant matches the column type (integers of every width are `Int`, range-checked by the
//!   function that produced them).
//! * Value columns of a pooled batch start at [`VALUE_OFFSET`]: columns 0 and 1 are
//!   `_SEQUENCE_NUMBER` and `_VALUE_KIND`.
//!
//! Comparisons follow Java `InternalRowUtils.compare` (used by min/max and sequence groups):
//! numbers by value, FLOAT/DOUBLE like `Float.compare` (-0.0 < 0.0, every NaN equal and
//! greatest), strings and binaries unsigned byte-wise with the shorter prefix first.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, LargeBinaryArray,
    LargeStringArray, RecordBatch, StringArray, StringViewArray,
};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use tidelake_spec::row_kind::RowKind;

use crate::error::{Error, Result};

/// Number of system columns (`_SEQUENCE_NUMBER`, `_VALUE_KIND`) before the value columns of an
/// input batch.
pub(crate) const VALUE_OFFSET: usize = 2;

/// One input record: a row of a pooled batch with its kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec {
    pub slot: u32,
    pub row: u32,
    pub kind: RowKind,
}

/// A non-null cell of a pooled batch; the column is implied by who holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellRef {
    pub slot: u32,
    pub row: u32,
}

/// A value computed by an aggregate function.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Bool(bool),
    /// TINYINT, SMALLINT, INT or BIGINT, already range-checked for the column's width.
    Int(i64),
    F32(f32),
    F64(f64),
    /// Unscaled DECIMAL value at the column's scale.
    Dec(i128),
    Str(String),
    /// VARBINARY bytes.
    Bin(Vec<u8>),
    /// A length-1 array of the column's (nested) type.
    Nested(ArrayRef),
}

/// The state of one column of a row being merged.
#[derive(Debug, Clone, Default)]
pub(crate) enum Acc {
    #[default]
    Null,
    Ref(CellRef),
    Val(Value),
}

impl Acc {
    pub fn is_null(&self) -> bool {
        matches!(self, Acc::Null)
    }
}

/// Input batches retained while cursors or pending output refer to them, addressed by slot.
#[derive(Default)]
pub(crate) struct Pool {
    slots: Vec<Option<RecordBatch>>,
    free: Vec<u32>,
}

impl Pool {
    pub fn insert(&mut self, batch: RecordBatch) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(batch);
                slot
            }
            None => {
                self.slots.push(Some(batch));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 live batches")
            }
        }
    }

    pub fn release(&mut self, slot: u32) {
        if let Some(entry) = self.slots.get_mut(slot as usize) {
            if entry.take().is_some() {
                self.free.push(slot);
            }
        }
    }

    /// Upper bound (exclusive) of slot ids handed out so far.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn batch(&self, slot: u32) -> &RecordBatch {
        self.slots[slot as usize]
            .as_ref()
            .expect("a referenced slot stays live until released")
    }

    /// Value column `col` (0-based among v0..vn) of the batch in `slot`.
    pub fn value(&self, slot: u32, col: usize) -> &ArrayRef {
        self.batch(slot).column(col + VALUE_OFFSET)
    }

    /// The accumulator for column `col` of record `rec`: `Null` or a reference.
    pub fn input(&self, rec: &Rec, col: usize) -> Acc {
        if self.value(rec.slot, col).is_null(rec.row as usize) {
            Acc::Null
        } else {
            Acc::Ref(CellRef {
                slot: rec.slot,
                row: rec.row,
            })
        }
    }

    /// The array and row holding a non-`Val` accumulator (or a nested `Val`), if any.
    pub fn locate<'a>(&'a self, col: usize, acc: &'a Acc) -> Option<(&'a dyn Array, usize)> {
        match acc {
            Acc::Null => None,
            Acc::Ref(c) => Some((self.value(c.slot, col).as_ref(), c.row as usize)),
            Acc::Val(Value::Nested(a)) => Some((a.as_ref(), 0)),
            Acc::Val(_) => None,
        }
    }
}

/// A borrowed scalar, the common form for comparing and computing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scalar<'a> {
    Bool(bool),
    Int(i64),
    F32(f32),
    F64(f64),
    Dec(i128),
    Bytes(&'a [u8]),
}

/// The scalar of column `col` held by `acc` (`None` when null).
pub(crate) fn scalar<'a>(pool: &'a Pool, col: usize, acc: &'a Acc) -> Result<Option<Scalar<'a>>> {
    Ok(match acc {
        Acc::Null => None,
        Acc::Ref(c) => Some(array_scalar(
            pool.value(c.slot, col).as_ref(),
            c.row as usize,
        )?),
        Acc::Val(v) => Some(match v {
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Int(i) => Scalar::Int(*i),
            Value::F32(f) => Scalar::F32(*f),
            Value::F64(f) => Scalar::F64(*f),
            Value::Dec(d) => Scalar::Dec(*d),
            Value::Str(s) => Scalar::Bytes(s.as_bytes()),
            Value::Bin(b) => Scalar::Bytes(b),
            Value::Nested(a) => {
                return Err(Error::Unsupported(format!(
                    "scalar access to a value of type {}",
                    a.data_type()
                )))
            }
        }),
    })
}

/// The scalar at `row` of `array` (which must be non-null there).
pub(crate) fn array_scalar(array: &dyn Array, row: usize) -> Result<Scalar<'_>> {
    Ok(match array.data_type() {
        ArrowType::Boolean => Scalar::Bool(array.as_boolean().value(row)),
        ArrowType::Int8 => Scalar::Int(array.as_primitive::<Int8Type>().value(row).into()),
        ArrowType::Int16 => Scalar::Int(array.as_primitive::<Int16Type>().value(row).into()),
        ArrowType::Int32 => Scalar::Int(array.as_primitive::<Int32Type>().value(row).into()),
        ArrowType::Int64 => Scalar::Int(array.as_primitive::<Int64Type>().value(row)),
        ArrowType::Float32 => Scalar::F32(array.as_primitive::<Float32Type>().value(row)),
        ArrowType::Float64 => Scalar::F64(array.as_primitive::<Float64Type>().value(row)),
        ArrowType::Decimal128(_, _) => {
            Scalar::Dec(array.as_primitive::<Decimal128Type>().value(row))
        }
        ArrowType::Date32 => Scalar::Int(array.as_primitive::<Date32Type>().value(row).into()),
        ArrowType::Date64 => Scalar::Int(array.as_primitive::<Date64Type>().value(row)),
        ArrowType::Time32(TimeUnit::Second) => {
            Scalar::Int(array.as_primitive::<Time32SecondType>().value(row).into())
        }
        ArrowType::Time32(_) => Scalar::Int(
            array
                .as_primitive::<Time32MillisecondType>()
                .value(row)
                .into(),
        ),
        ArrowType::Time64(TimeUnit::Microsecond) => {
            Scalar::Int(array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        ArrowType::Time64(_) => {
            Scalar::Int(array.as_primitive::<Time64NanosecondType>().value(row))
        }
        ArrowType::Timestamp(unit, _) => Scalar::Int(match unit {
            TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
            TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row),
            TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
            TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
        }),
        ArrowType::Utf8 => Scalar::Bytes(array.as_string::<i32>().value(row).as_bytes()),
        ArrowType::LargeUtf8 => Scalar::Bytes(array.as_string::<i64>().value(row).as_bytes()),
        ArrowType::Utf8View => Scalar::Bytes(array.as_string_view().value(row).as_bytes()),
        ArrowType::Binary => Scalar::Bytes(array.as_binary::<i32>().value(row)),
        ArrowType::LargeBinary => Scalar::Bytes(array.as_binary::<i64>().value(row)),
        ArrowType::BinaryView => Scalar::Bytes(array.as_binary_view().value(row)),
        ArrowType::FixedSizeBinary(_) => Scalar::Bytes(array.as_fixed_size_binary().value(row)),
        other => {
            return Err(Error::Unsupported(format!(
                "merge functions cannot compare or compute values of Arrow type {other}"
            )))
        }
    })
}

/// Java `Float.compare`/`Double.compare` on f64: every NaN equal and greatest, -0.0 < 0.0.
pub(crate) fn java_f64_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

/// Java `InternalRowUtils.compare` on two non-null scalars of the same column.
pub(crate) fn java_cmp(a: &Scalar<'_>, b: &Scalar<'_>) -> Result<Ordering> {
    Ok(match (a, b) {
        (Scalar::Bool(x), Scalar::Bool(y)) => x.cmp(y),
        (Scalar::Int(x), Scalar::Int(y)) => x.cmp(y),
        (Scalar::F32(x), Scalar::F32(y)) => java_f64_cmp(f64::from(*x), f64::from(*y)),
        (Scalar::F64(x), Scalar::F64(y)) => java_f64_cmp(*x, *y),
        (Scalar::Dec(x), Scalar::Dec(y)) => x.cmp(y),
        (Scalar::Bytes(x), Scalar::Bytes(y)) => x.cmp(y),
        _ => {
            return Err(Error::invalid(format!(
                "cannot compare values of different kinds: {a:?} and {b:?}"
            )))
        }
    })
}

/// Java's error for a null in NOT NULL column `i` of a merged row.
pub(crate) fn not_null(i: usize) -> Error {
    Error::invalid(format!("Field {i} can not be null"))
}

/// Java `initRow` on a fresh row, for a -D that removes the whole row (`partial-update` and
/// `aggregation` with `*.remove-record-on-delete`): every column null, then the NOT NULL columns
/// take `rec`'s values (the keys, so the -D is well-formed); a null there is an error.
pub(crate) fn reset_to_not_null(
    row: &mut [Acc],
    nullable: &[bool],
    rec: &Rec,
    pool: &Pool,
) -> Result<()> {
    for (i, acc) in row.iter_mut().enumerate() {
        *acc = if nullable[i] {
            Acc::Null
        } else {
            match pool.input(rec, i) {
                Acc::Null => return Err(not_null(i)),
                input => input,
            }
        };
    }
    Ok(())
}

/// Compare two accumulators of column `col` with Java's nulls-first rule.
pub(crate) fn compare_nulls_first(pool: &Pool, col: usize, a: &Acc, b: &Acc) -> Result<Ordering> {
    match (scalar(pool, col, a)?, scalar(pool, col, b)?) {
        (None, None) => Ok(Ordering::Equal),
        (None, Some(_)) => Ok(Ordering::Less),
        (Some(_), None) => Ok(Ordering::Greater),
        (Some(x), Some(y)) => java_cmp(&x, &y),
    }
}

/// Build an array of type `data_type` from computed values (in order).
pub(crate) fn values_to_array(data_type: &ArrowType, values: &[Value]) -> Result<ArrayRef> {
    fn mismatch(data_type: &ArrowType, v: &Value) -> Error {
        Error::invalid(format!(
            "merge result {v:?} does not fit the column type {data_type}"
        ))
    }
    fn ints<T>(data_type: &ArrowType, values: &[Value]) -> Result<Vec<T>>
    where
        T: TryFrom<i64>,
    {
        values
            .iter()
            .map(|v| match v {
                Value::Int(i) => T::try_from(*i).map_err(|_| mismatch(data_type, v)),
                other => Err(mismatch(data_type, other)),
            })
            .collect()
    }
    let array: ArrayRef = match data_type {
        ArrowType::Boolean => std::sync::Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Ok(Some(*b)),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<BooleanArray>>()?,
        ),
        ArrowType::Int8 => std::sync::Arc::new(Int8Array::from(ints::<i8>(data_type, values)?)),
        ArrowType::Int16 => std::sync::Arc::new(Int16Array::from(ints::<i16>(data_type, values)?)),
        ArrowType::Int32 => std::sync::Arc::new(Int32Array::from(ints::<i32>(data_type, values)?)),
        ArrowType::Int64 => std::sync::Arc::new(Int64Array::from(ints::<i64>(data_type, values)?)),
        ArrowType::Float32 => std::sync::Arc::new(Float32Array::from(
            values
                .iter()
                .map(|v| match v {
                    Value::F32(f) => Ok(*f),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<Vec<_>>>()?,
        )),
        ArrowType::Float64 => std::sync::Arc::new(Float64Array::from(
            values
                .iter()
                .map(|v| match v {
                    Value::F64(f) => Ok(*f),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<Vec<_>>>()?,
        )),
        ArrowType::Decimal128(p, s) => std::sync::Arc::new(
            Decimal128Array::from(
                values
                    .iter()
                    .map(|v| match v {
                        Value::Dec(d) => Ok(*d),
                        other => Err(mismatch(data_type, other)),
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
            .with_precision_and_scale(*p, *s)
            .map_err(|e| Error::arrow("decimal merge result", e))?,
        ),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            let strs = values
                .iter()
                .map(|v| match v {
                    Value::Str(s) => Ok(s.as_str()),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<Vec<_>>>()?;
            match data_type {
                ArrowType::Utf8 => std::sync::Arc::new(StringArray::from(strs)),
                ArrowType::LargeUtf8 => std::sync::Arc::new(LargeStringArray::from(strs)),
                _ => std::sync::Arc::new(StringViewArray::from(strs)),
            }
        }
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
            let bins = values
                .iter()
                .map(|v| match v {
                    Value::Bin(b) => Ok(b.as_slice()),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<Vec<_>>>()?;
            match data_type {
                ArrowType::Binary => std::sync::Arc::new(BinaryArray::from(bins)),
                ArrowType::LargeBinary => std::sync::Arc::new(LargeBinaryArray::from(bins)),
                _ => std::sync::Arc::new(BinaryViewArray::from(bins)),
            }
        }
        _ => {
            let arrays = values
                .iter()
                .map(|v| match v {
                    Value::Nested(a) if a.data_type() == data_type => Ok(a.as_ref()),
                    other => Err(mismatch(data_type, other)),
                })
                .collect::<Result<Vec<&dyn Array>>>()?;
            arrow_select::concat::concat(&arrays)
                .map_err(|e| Error::arrow("concatenating nested merge results", e))?
        }
    };
    Ok(array)
}
