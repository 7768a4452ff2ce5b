//! Helpers for aggregate functions over ARRAY and MAP values: reading the elements of an
//! accumulator, encoding elements into byte rows for equality and ordering (`arrow_row`,
//! ascending, nulls first, so equal values have equal bytes), gathering picked elements and
//! wrapping them into a one-element list or map value.
//!
//! Element order: Java builds these results from `HashMap`/`HashSet`, whose iteration order
//! is an implementation detail; here results keep first-insertion order.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_empty_array, Array, ArrayRef, LargeListArray, ListArray, MapArray, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType as ArrowType, Field};
use arrow_select::interleave::interleave;

use super::Cx;
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{Acc, Value};

/// The Arrow type of the column, from a non-null accumulator.
pub(crate) fn column_type(cx: &Cx<'_>, acc: &Acc) -> Option<ArrowType> {
    cx.pool
        .locate(cx.col, acc)
        .map(|(array, _)| array.data_type().clone())
}

/// The elements of a list accumulator (`None` when null).
pub(crate) fn list_values(cx: &Cx<'_>, acc: &Acc) -> Result<Option<ArrayRef>> {
    let Some((array, row)) = cx.pool.locate(cx.col, acc) else {
        return match acc {
            Acc::Null => Ok(None),
            _ => Err(Error::invalid("list aggregate on a non-list value")),
        };
    };
    Ok(Some(match array.data_type() {
        ArrowType::List(_) => array.as_list::<i32>().value(row),
        ArrowType::LargeList(_) => array.as_list::<i64>().value(row),
        other => {
            return Err(Error::invalid(format!(
                "expected a list column, found {other}"
            )))
        }
    }))
}

/// The entries (key, value struct) of a map accumulator (`None` when null).
pub(crate) fn map_entries(cx: &Cx<'_>, acc: &Acc) -> Result<Option<StructArray>> {
    let Some((array, row)) = cx.pool.locate(cx.col, acc) else {
        return match acc {
            Acc::Null => Ok(None),
            _ => Err(Error::invalid("map aggregate on a non-map value")),
        };
    };
    match array.data_type() {
        ArrowType::Map(_, _) => Ok(Some(array.as_map().value(row))),
        other => Err(Error::invalid(format!(
            "expected a map column, found {other}"
        ))),
    }
}

/// Byte rows of `columns` (one row per element): equal rows are equal values, and byte order
/// is ascending nulls-first value order.
pub(crate) fn encode(columns: &[ArrayRef]) -> Result<Rows> {
    let fields = columns
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let converter =
        RowConverter::new(fields).map_err(|e| Error::arrow("encoding nested values", e))?;
    converter
        .convert_columns(columns)
        .map_err(|e| Error::arrow("encoding nested values", e))
}

/// Elements `picks` (`(source, index)`) of `sources`, all of type `data_type`.
pub(crate) fn gather(
    sources: &[&ArrayRef],
    picks: &[(usize, usize)],
    data_type: &ArrowType,
) -> Result<ArrayRef> {
    if picks.is_empty() {
        return Ok(new_empty_array(data_type));
    }
    let arrays: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
    interleave(&arrays, picks).map_err(|e| Error::arrow("gathering nested elements", e))
}

/// The element type of a list type.
pub(crate) fn element_type(list_type: &ArrowType) -> Result<&ArrowType> {
    match list_type {
        ArrowType::List(f) | ArrowType::LargeList(f) => Ok(f.data_type()),
        other => Err(Error::invalid(format!(
            "expected a list type, found {other}"
        ))),
    }
}

/// A one-element list value of `list_type` holding `values`.
pub(crate) fn make_list(list_type: &ArrowType, values: ArrayRef) -> Result<Acc> {
    let err = |e| Error::arrow("building a list value", e);
    let array: ArrayRef = match list_type {
        ArrowType::List(f) => Arc::new(
            ListArray::try_new(
                f.clone(),
                OffsetBuffer::from_lengths([values.len()]),
                values,
                None,
            )
            .map_err(err)?,
        ),
        ArrowType::LargeList(f) => Arc::new(
            LargeListArray::try_new(
                f.clone(),
                OffsetBuffer::from_lengths([values.len()]),
                values,
                None,
            )
            .map_err(err)?,
        ),
        other => {
            return Err(Error::invalid(format!(
                "expected a list type, found {other}"
            )))
        }
    };
    Ok(Acc::Val(Value::Nested(array)))
}

/// The entries field and its (key, value) fields of a map type.
pub(crate) fn map_fields(map_type: &ArrowType) -> Result<(&Arc<Field>, bool)> {
    match map_type {
        ArrowType::Map(entries, sorted) => Ok((entries, *sorted)),
        other => Err(Error::invalid(format!(
            "expected a map type, found {other}"
        ))),
    }
}

/// A one-element map value of `map_type` with `keys` and `values`.
pub(crate) fn make_map(map_type: &ArrowType, keys: ArrayRef, values: ArrayRef) -> Result<Acc> {
    let err = |e| Error::arrow("building a map value", e);
    let (entries_field, sorted) = map_fields(map_type)?;
    let ArrowType::Struct(entry_fields) = entries_field.data_type() else {
        return Err(Error::invalid(format!(
            "map entries must be a struct, found {map_type}"
        )));
    };
    let len = keys.len();
    let entries =
        StructArray::try_new(entry_fields.clone(), vec![keys, values], None).map_err(err)?;
    let map = MapArray::try_new(
        entries_field.clone(),
        OffsetBuffer::from_lengths([len]),
        entries,
        None,
        sorted,
    )
    .map_err(err)?;
    Ok(Acc::Val(Value::Nested(Arc::new(map))))
}
