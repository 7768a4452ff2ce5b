//! Schema evolution and type normalisation of decoded columns.
//!
//! A data file is written with the schema of its `_SCHEMA_ID`; readers want the current schema.
//! Fields are matched **by field id** (top-level and inside ROW types); the physical column is
//! looked up by the name the field had in the file's schema, so renames are free. A field the
//! file does not know becomes an all-null column. A field whose type changed is cast.
//!
//! Independently of evolution, every decoder (Parquet, ORC, Avro) has its own idea of Arrow
//! types: timestamp units and zones, decimal widths, list element / map entry names, large or
//! view strings, 32-bit `_VALUE_KIND`... [`evolve`] rebuilds each column so that its Arrow type
//! is exactly the target type (the `tidelake_spec::arrow` mapping of the read field).
//!
//! Invariants: the output of [`evolve`] has the target type and the input's length; values are
//! converted, never reinterpreted, except timestamps whose zone changes: Paimon stores
//! epoch-based values for both TIMESTAMP and TIMESTAMP_LTZ, so only the zone label is replaced.

use std::sync::Arc;

use arrow_array::{
    make_array, Array, ArrayRef, GenericListArray, ListArray, MapArray, OffsetSizeTrait,
    StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_cast::{can_cast_types, cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType as ArrowType, FieldRef};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::error::{Error, Result};

/// Find the field of `fields` carrying `id`.
pub(crate) fn field_by_id(fields: &[DataField], id: i32) -> Option<&DataField> {
    fields.iter().find(|f| f.id == id)
}

fn mismatch(column: &str, what: impl std::fmt::Display) -> Error {
    Error::SchemaMismatch(format!("column '{column}': {what}"))
}

/// Convert `array` — the decoded column of a field of type `file_type` — to a column of the
/// read field's type `read_type`, whose Arrow form is `target`. `column` names the field in
/// messages.
pub(crate) fn evolve(
    array: &ArrayRef,
    file_type: &DataType,
    read_type: &DataType,
    target: &ArrowType,
    column: &str,
) -> Result<ArrayRef> {
    let array = undictionary(array, column)?;
    match (&file_type.kind, &read_type.kind) {
        (TypeKind::Row(file_fields), TypeKind::Row(read_fields)) => {
            evolve_row(&array, file_fields, read_fields, target, column)
        }
        (TypeKind::Array(file_elem), TypeKind::Array(read_elem)) => {
            evolve_list(&array, file_elem, read_elem, target, column)
        }
        (TypeKind::Map(fk, fv), TypeKind::Map(rk, rv)) => {
            evolve_map(&array, (fk, Some(fv)), (rk, Some(rv)), target, column)
        }
        (TypeKind::Multiset(fe), TypeKind::Multiset(re)) => {
            evolve_map(&array, (fe, None), (re, None), target, column)
        }
        (f, r) if is_nested(f) || is_nested(r) => Err(mismatch(
            column,
            format!("cannot read a {} column as {}", kind_name(f), kind_name(r)),
        )),
        _ => convert_leaf(&array, target, column),
    }
}

fn is_nested(kind: &TypeKind) -> bool {
    matches!(
        kind,
        TypeKind::Row(_) | TypeKind::Array(_) | TypeKind::Map(..) | TypeKind::Multiset(_)
    )
}

fn kind_name(kind: &TypeKind) -> &'static str {
    match kind {
        TypeKind::Row(_) => "ROW",
        TypeKind::Array(_) => "ARRAY",
        TypeKind::Map(..) => "MAP",
        TypeKind::Multiset(_) => "MULTISET",
        _ => "scalar",
    }
}

/// Dictionary-encoded columns (possible with Arrow-aware writers) are expanded first.
fn undictionary(array: &ArrayRef, column: &str) -> Result<ArrayRef> {
    match array.data_type() {
        ArrowType::Dictionary(_, value) => {
            let value = value.as_ref().clone();
            cast_with_options(array, &value, &strict())
                .map_err(|e| mismatch(column, format!("cannot decode dictionary: {e}")))
        }
        _ => Ok(array.clone()),
    }
}

fn strict() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

/// Convert a scalar column to `target`.
pub(crate) fn convert_leaf(array: &ArrayRef, target: &ArrowType, column: &str) -> Result<ArrayRef> {
    let source = array.data_type();
    if source == target {
        return Ok(array.clone());
    }
    let fail =
        |e: ArrowError| mismatch(column, format!("cannot convert {source} to {target}: {e}"));
    match (source, target) {
        (ArrowType::Timestamp(unit, zone), ArrowType::Timestamp(to_unit, to_zone)) => {
            let scaled = if unit == to_unit {
                array.clone()
            } else {
                cast_with_options(
                    array,
                    &ArrowType::Timestamp(*to_unit, zone.clone()),
                    &strict(),
                )
                .map_err(fail)?
            };
            if zone == to_zone {
                return Ok(scaled);
            }
            // Same physical i64 values, new zone label only.
            let data = scaled
                .to_data()
                .into_builder()
                .data_type(target.clone())
                .build();
            data.map(make_array).map_err(fail)
        }
        _ if can_cast_types(source, target) => {
            cast_with_options(array, target, &strict()).map_err(fail)
        }
        _ => Err(mismatch(
            column,
            format!("cannot convert {source} to {target}"),
        )),
    }
}

fn evolve_row(
    array: &ArrayRef,
    file_fields: &[DataField],
    read_fields: &[DataField],
    target: &ArrowType,
    column: &str,
) -> Result<ArrayRef> {
    let ArrowType::Struct(target_fields) = target else {
        return Err(mismatch(
            column,
            format!("ROW maps to {target}, expected a struct"),
        ));
    };
    let source = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| {
            mismatch(
                column,
                format!("expected a struct column, found {}", array.data_type()),
            )
        })?;
    if target_fields.len() != read_fields.len() {
        return Err(mismatch(column, "struct arity differs from the ROW type"));
    }
    let mut children = Vec::with_capacity(read_fields.len());
    for (read_field, target_field) in read_fields.iter().zip(target_fields.iter()) {
        let path = format!("{column}.{}", read_field.name);
        let child = field_by_id(file_fields, read_field.id)
            .and_then(|ff| source.column_by_name(&ff.name).map(|c| (ff, c)));
        children.push(match child {
            Some((file_field, child)) => evolve(
                child,
                &file_field.data_type,
                &read_field.data_type,
                target_field.data_type(),
                &path,
            )?,
            None => arrow_array::new_null_array(target_field.data_type(), source.len()),
        });
    }
    StructArray::try_new_with_length(
        target_fields.clone(),
        children,
        source.nulls().cloned(),
        source.len(),
    )
    .map(|s| Arc::new(s) as ArrayRef)
    .map_err(|e| mismatch(column, e))
}

/// Offsets, values and validity of any list-like column, as a 32-bit-offset list.
fn list_parts(
    array: &ArrayRef,
    column: &str,
) -> Result<(OffsetBuffer<i32>, ArrayRef, Option<NullBuffer>)> {
    fn parts<O: OffsetSizeTrait>(
        list: &GenericListArray<O>,
        column: &str,
    ) -> Result<(OffsetBuffer<i32>, ArrayRef, Option<NullBuffer>)> {
        let offsets = list
            .offsets()
            .iter()
            .map(|o| i32::try_from(o.as_usize()))
            .collect::<std::result::Result<Vec<i32>, _>>()
            .map_err(|_| mismatch(column, "list too large for 32-bit offsets"))?;
        Ok((
            OffsetBuffer::new(offsets.into()),
            list.values().clone(),
            list.nulls().cloned(),
        ))
    }
    let normalised;
    let array = match array.data_type() {
        ArrowType::List(_) | ArrowType::LargeList(_) => array,
        ArrowType::FixedSizeList(f, _) | ArrowType::ListView(f) | ArrowType::LargeListView(f) => {
            normalised = cast_with_options(array, &ArrowType::List(f.clone()), &strict())
                .map_err(|e| mismatch(column, e))?;
            &normalised
        }
        other => {
            return Err(mismatch(
                column,
                format!("expected a list column, found {other}"),
            ))
        }
    };
    if let Some(list) = array.as_any().downcast_ref::<ListArray>() {
        return Ok((
            list.offsets().clone(),
            list.values().clone(),
            list.nulls().cloned(),
        ));
    }
    match array.as_any().downcast_ref::<GenericListArray<i64>>() {
        Some(list) => parts(list, column),
        None => Err(mismatch(
            column,
            format!("expected a list column, found {}", array.data_type()),
        )),
    }
}

fn evolve_list(
    array: &ArrayRef,
    file_elem: &DataType,
    read_elem: &DataType,
    target: &ArrowType,
    column: &str,
) -> Result<ArrayRef> {
    let ArrowType::List(target_elem) = target else {
        return Err(mismatch(
            column,
            format!("ARRAY maps to {target}, expected a list"),
        ));
    };
    let (offsets, values, nulls) = list_parts(array, column)?;
    let values = evolve(
        &values,
        file_elem,
        read_elem,
        target_elem.data_type(),
        &format!("{column}[]"),
    )?;
    ListArray::try_new(target_elem.clone(), offsets, values, nulls)
        .map(|l| Arc::new(l) as ArrayRef)
        .map_err(|e| mismatch(column, e))
}

/// MAP (`value` = `Some`) or MULTISET (`value` = `None`: the value is the element count).
fn evolve_map(
    array: &ArrayRef,
    file: (&DataType, Option<&DataType>),
    read: (&DataType, Option<&DataType>),
    target: &ArrowType,
    column: &str,
) -> Result<ArrayRef> {
    let ArrowType::Map(entries_field, sorted) = target else {
        return Err(mismatch(
            column,
            format!("MAP maps to {target}, expected a map"),
        ));
    };
    let ArrowType::Struct(entry_fields) = entries_field.data_type() else {
        return Err(mismatch(column, "map entries are not a struct"));
    };
    let [key_field, value_field] = entry_fields.iter().collect::<Vec<&FieldRef>>()[..] else {
        return Err(mismatch(column, "map entries must have two fields"));
    };
    let (offsets, entries, nulls) = match array.as_any().downcast_ref::<MapArray>() {
        Some(map) => (
            map.offsets().clone(),
            map.entries().clone(),
            map.nulls().cloned(),
        ),
        // A list of key/value records (e.g. Avro maps with non-string keys).
        None => {
            let (offsets, values, nulls) = list_parts(array, column)?;
            let entries = values
                .as_any()
                .downcast_ref::<StructArray>()
                .filter(|s| s.num_columns() == 2)
                .cloned()
                .ok_or_else(|| {
                    mismatch(
                        column,
                        format!("expected a map column, found {}", array.data_type()),
                    )
                })?;
            (offsets, entries, nulls)
        }
    };
    let keys = evolve(
        entries.column(0),
        file.0,
        read.0,
        key_field.data_type(),
        &format!("{column}.key"),
    )?;
    let value_path = format!("{column}.value");
    let values = match (file.1, read.1) {
        (Some(fv), Some(rv)) => evolve(
            entries.column(1),
            fv,
            rv,
            value_field.data_type(),
            &value_path,
        )?,
        _ => convert_leaf(entries.column(1), value_field.data_type(), &value_path)?,
    };
    let entries = StructArray::try_new_with_length(
        entry_fields.clone(),
        vec![keys, values],
        entries.nulls().cloned(),
        entries.len(),
    )
    .map_err(|e| mismatch(column, e))?;
    MapArray::try_new(entries_field.clone(), offsets, entries, nulls, *sorted)
        .map(|m| Arc::new(m) as ArrayRef)
        .map_err(|e| mismatch(column, e))
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{Int32Builder, MapBuilder, StringBuilder};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, TimestampMicrosecondType};
    use arrow_array::{
        BinaryArray, Decimal128Array, Int32Array, Int64Array, LargeStringArray,
        TimestampNanosecondArray,
    };
    use arrow_schema::{Fields, TimeUnit};
    use tidelake_spec::arrow::to_arrow_type;

    use super::*;

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn run(array: ArrayRef, file: &DataType, read: &DataType) -> Result<ArrayRef> {
        let target = to_arrow_type(read).unwrap();
        let out = evolve(&array, file, read, &target, "col")?;
        assert_eq!(out.data_type(), &target);
        assert_eq!(out.len(), array.len());
        Ok(out)
    }

    #[test]
    fn widens_scalars() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)]));
        let out = run(ints, &t(TypeKind::Int), &t(TypeKind::BigInt)).unwrap();
        assert_eq!(
            out.as_primitive::<arrow_array::types::Int64Type>().values(),
            &[1, 0, -3]
        );

        let dec: ArrayRef = Arc::new(
            Decimal128Array::from(vec![12345i128, -1])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        let file = t(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        let read = t(TypeKind::Decimal {
            precision: 20,
            scale: 4,
        });
        let out = run(dec, &file, &read).unwrap();
        let out = out.as_primitive::<arrow_array::types::Decimal128Type>();
        assert_eq!(out.values(), &[1234500, -100]);

        let large: ArrayRef = Arc::new(LargeStringArray::from(vec!["a", "bc"]));
        let out = run(large, &DataType::string(), &DataType::string()).unwrap();
        assert_eq!(out.as_string::<i32>().value(1), "bc");

        let bin: ArrayRef = Arc::new(BinaryArray::from(vec![&b"ab"[..], b"cd"]));
        let out = run(bin, &t(TypeKind::Binary(2)), &t(TypeKind::Binary(2))).unwrap();
        assert_eq!(out.as_fixed_size_binary().value(1), b"cd");
    }

    #[test]
    fn timestamps_rescale_and_relabel_without_shifting() {
        let nanos: ArrayRef = Arc::new(
            TimestampNanosecondArray::from(vec![1_700_000_000_123_456_789, -1_000])
                .with_timezone("+00:00"),
        );
        let read = t(TypeKind::Timestamp(6));
        let out = run(nanos.clone(), &read, &read).unwrap();
        assert_eq!(
            out.data_type(),
            &ArrowType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().values(),
            &[1_700_000_000_123_456, -1]
        );
        let ltz = t(TypeKind::LocalZonedTimestamp(9));
        let out = run(nanos, &ltz, &ltz).unwrap();
        let out = out.as_primitive::<arrow_array::types::TimestampNanosecondType>();
        assert_eq!(out.value(0), 1_700_000_000_123_456_789);
    }

    #[test]
    fn impossible_conversions_are_schema_mismatches() {
        let strings: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["x"]));
        let err = run(strings, &DataType::string(), &t(TypeKind::Int)).unwrap_err();
        assert!(
            matches!(err, Error::SchemaMismatch(ref m) if m.contains("'col'")),
            "{err}"
        );
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        let row = t(TypeKind::Row(vec![DataField::new(
            1,
            "a",
            t(TypeKind::Int),
        )]));
        let err = run(ints, &t(TypeKind::Int), &row).unwrap_err();
        assert!(matches!(err, Error::SchemaMismatch(_)), "{err}");
    }

    #[test]
    fn rows_match_children_by_id() {
        // File ROW<a INT (id 1), gone BIGINT (id 2)>; read ROW<renamed BIGINT (id 1), added STRING (id 3)>.
        let file = t(TypeKind::Row(vec![
            DataField::new(1, "a", t(TypeKind::Int)),
            DataField::new(2, "gone", t(TypeKind::BigInt)),
        ]));
        let read = t(TypeKind::Row(vec![
            DataField::new(1, "renamed", t(TypeKind::BigInt)),
            DataField::new(3, "added", DataType::string()),
        ]));
        let source = StructArray::new(
            Fields::from(vec![
                arrow_schema::Field::new("a", ArrowType::Int32, true),
                arrow_schema::Field::new("gone", ArrowType::Int64, true),
            ]),
            vec![
                Arc::new(Int32Array::from(vec![7, 8])) as ArrayRef,
                Arc::new(Int64Array::from(vec![70, 80])),
            ],
            Some(NullBuffer::from(vec![true, false])),
        );
        let out = run(Arc::new(source), &file, &read).unwrap();
        let out = out.as_struct();
        assert_eq!(
            out.column(0)
                .as_primitive::<arrow_array::types::Int64Type>()
                .value(0),
            7
        );
        assert_eq!(out.column(1).null_count(), 2);
        assert!(out.is_null(1));
    }

    #[test]
    fn lists_and_maps_get_target_field_names() {
        let elem = arrow_schema::Field::new("element", ArrowType::Int32, true);
        let list = ListArray::new(
            Arc::new(elem),
            OffsetBuffer::new(vec![0, 2, 2].into()),
            Arc::new(Int32Array::from(vec![1, 2])),
            Some(NullBuffer::from(vec![true, false])),
        );
        let arr = t(TypeKind::Array(Box::new(t(TypeKind::Int))));
        let read = t(TypeKind::Array(Box::new(t(TypeKind::BigInt))));
        let out = run(Arc::new(list), &arr, &read).unwrap();
        assert_eq!(out.as_list::<i32>().value(0).len(), 2);

        let names = arrow_array::builder::MapFieldNames {
            entry: "key_value".into(),
            key: "key".into(),
            value: "value".into(),
        };
        let mut builder = MapBuilder::new(Some(names), Int32Builder::new(), StringBuilder::new());
        builder.keys().append_value(1);
        builder.values().append_value("one");
        builder.append(true).unwrap();
        builder.append(false).unwrap();
        let map = builder.finish();
        let key = DataType::not_null(TypeKind::Int);
        let mt = t(TypeKind::Map(Box::new(key), Box::new(DataType::string())));
        let out = run(Arc::new(map), &mt, &mt).unwrap();
        let out = out.as_map();
        assert_eq!(out.keys().as_primitive::<Int32Type>().value(0), 1);
        assert!(out.is_null(1));
    }
}
