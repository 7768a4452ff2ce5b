//! Mapping between Paimon types and Arrow types (`arrow_schema`).
//!
//! Paimon → Arrow matches what the golden fixtures expect (and pypaimon produces), except
//! that BINARY(n) stays fixed-size:
//!
//! | Paimon | Arrow |
//! |---|---|
//! | BOOLEAN, TINYINT..BIGINT, FLOAT, DOUBLE | Boolean, Int8..Int64, Float32, Float64 |
//! | DECIMAL(p, s) | Decimal128(p, s) |
//! | CHAR / VARCHAR / STRING | Utf8 |
//! | BINARY(n) | FixedSizeBinary(n) |
//! | VARBINARY / BYTES | Binary |
//! | DATE | Date32 |
//! | TIME(p), any p | Time32(ms): Paimon stores TIME as milliseconds of the day |
//! | TIMESTAMP(p) | Timestamp(s / ms / us / ns for p = 0 / 1-3 / 4-6 / 7-9, no zone) |
//! | TIMESTAMP(p) WITH LOCAL TIME ZONE | the same unit, zone `"UTC"` |
//! | ARRAY<e> | List(field `item`, nullable as e) |
//! | MAP<k, v> | Map(`entries`: Struct<`key` non-null, `value`>, unsorted) |
//! | MULTISET<e> | Map<e, Int32 non-null> (element → count, as Java's Arrow bridge) |
//! | ROW | Struct |
//! | VARIANT | Struct<`value` Binary non-null, `metadata` Binary non-null> (pypaimon) |
//! | BLOB | LargeBinary (pypaimon) |
//!
//! A field's Arrow nullability is its type's nullability. A top-level field's description
//! becomes the `description` metadata entry (as pypaimon does); nothing else is attached —
//! in particular no `PARQUET:field_id`: such metadata would make our schemas differ from the
//! ones readers produce, and Java's Parquet ids for list elements and map keys/values are
//! derived ids, so the Parquet writer attaches them itself.
//!
//! Arrow → Paimon is the inverse, and also accepts LargeUtf8/Utf8View (STRING),
//! LargeBinary/BinaryView (BYTES), Decimal32/64/256 with precision <= 38, Date64 (DATE),
//! Time32(s)/Time32(ms)/Time64(us)/Time64(ns) (TIME(0/3/6/9)), timestamps in any zone
//! (LTZ), LargeList/ListView/LargeListView (ARRAY) and dictionaries (their value type).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field, Fields, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::schema::assign_field_ids;
use crate::types::{DataField, DataType, TypeKind, MAX_LENGTH};

/// Field metadata key carrying a column description.
pub const DESCRIPTION_METADATA_KEY: &str = "description";
/// Time zone of Arrow timestamps for TIMESTAMP WITH LOCAL TIME ZONE.
pub const LTZ_TIME_ZONE: &str = "UTC";

fn timestamp_unit(precision: u32) -> Result<TimeUnit> {
    match precision {
        0 => Ok(TimeUnit::Second),
        1..=3 => Ok(TimeUnit::Millisecond),
        4..=6 => Ok(TimeUnit::Microsecond),
        7..=9 => Ok(TimeUnit::Nanosecond),
        _ => Err(Error::Invalid(format!(
            "timestamp precision {precision} is not in 0..=9"
        ))),
    }
}

fn unit_precision(unit: &TimeUnit) -> u32 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

fn map_type(key: ArrowType, value: ArrowType, value_nullable: bool) -> ArrowType {
    let entries = Fields::from(vec![
        Field::new("key", key, false),
        Field::new("value", value, value_nullable),
    ]);
    ArrowType::Map(
        Arc::new(Field::new("entries", ArrowType::Struct(entries), false)),
        false,
    )
}

fn variant_fields() -> Fields {
    Fields::from(vec![
        Field::new("value", ArrowType::Binary, false),
        Field::new("metadata", ArrowType::Binary, false),
    ])
}

/// The Arrow type of a Paimon type (see the module table).
pub fn to_arrow_type(data_type: &DataType) -> Result<ArrowType> {
    Ok(match &data_type.kind {
        TypeKind::Boolean => ArrowType::Boolean,
        TypeKind::TinyInt => ArrowType::Int8,
        TypeKind::SmallInt => ArrowType::Int16,
        TypeKind::Int => ArrowType::Int32,
        TypeKind::BigInt => ArrowType::Int64,
        TypeKind::Float => ArrowType::Float32,
        TypeKind::Double => ArrowType::Float64,
        TypeKind::Decimal { precision, scale } => {
            match (u8::try_from(*precision), i8::try_from(*scale)) {
                (Ok(p), Ok(s)) if (1..=38).contains(&p) && s >= 0 && u32::from(p) >= *scale => {
                    ArrowType::Decimal128(p, s)
                }
                _ => return Err(Error::Invalid(format!("invalid type {data_type}"))),
            }
        }
        TypeKind::Char(_) | TypeKind::VarChar(_) => ArrowType::Utf8,
        TypeKind::Binary(length) => match i32::try_from(*length) {
            Ok(length) if length > 0 => ArrowType::FixedSizeBinary(length),
            _ => return Err(Error::Invalid(format!("invalid type {data_type}"))),
        },
        TypeKind::VarBinary(_) => ArrowType::Binary,
        TypeKind::Date => ArrowType::Date32,
        TypeKind::Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
        TypeKind::Timestamp(precision) => ArrowType::Timestamp(timestamp_unit(*precision)?, None),
        TypeKind::LocalZonedTimestamp(precision) => {
            ArrowType::Timestamp(timestamp_unit(*precision)?, Some(Arc::from(LTZ_TIME_ZONE)))
        }
        TypeKind::Array(element) => ArrowType::List(Arc::new(Field::new_list_field(
            to_arrow_type(element)?,
            element.nullable,
        ))),
        TypeKind::Multiset(element) => map_type(to_arrow_type(element)?, ArrowType::Int32, false),
        TypeKind::Map(key, value) => {
            map_type(to_arrow_type(key)?, to_arrow_type(value)?, value.nullable)
        }
        TypeKind::Row(fields) => ArrowType::Struct(
            fields
                .iter()
                .map(|f| {
                    Ok(Field::new(
                        &f.name,
                        to_arrow_type(&f.data_type)?,
                        f.data_type.nullable,
                    ))
                })
                .collect::<Result<Fields>>()?,
        ),
        TypeKind::Variant => ArrowType::Struct(variant_fields()),
        TypeKind::Blob => ArrowType::LargeBinary,
    })
}

/// The Arrow field of a table column: same name, nullability of its type, description as
/// `description` metadata.
pub fn to_arrow_field(field: &DataField) -> Result<Field> {
    let arrow = Field::new(
        &field.name,
        to_arrow_type(&field.data_type)?,
        field.data_type.nullable,
    );
    Ok(
        match field.description.as_deref().filter(|d| !d.is_empty()) {
            Some(description) => arrow.with_metadata(HashMap::from([(
                DESCRIPTION_METADATA_KEY.to_string(),
                description.to_string(),
            )])),
            None => arrow,
        },
    )
}

/// The Arrow schema of table columns, in order.
pub fn to_arrow_schema(fields: &[DataField]) -> Result<Schema> {
    Ok(Schema::new(
        fields
            .iter()
            .map(to_arrow_field)
            .collect::<Result<Vec<_>>>()?,
    ))
}

/// The Paimon type of an Arrow type (see the module docs). ROW fields are numbered 0, 1, ...
/// per struct; [`fields_from_arrow_schema`] gives them table-wide ids. A type nested deeper than
/// [`MAX_NESTING_DEPTH`], or with a field name containing NUL, is [`Error::Invalid`], found
/// without recursing.
pub fn from_arrow_type(arrow: &ArrowType, nullable: bool) -> Result<DataType> {
    check_nesting(arrow)?;
    convert_type(arrow, nullable)
}

/// How many levels of ARRAY / MAP / MULTISET / ROW a column type may nest. Every reader must
/// be able to read a schema back: its JSON nests three levels per ROW level, and JSON readers
/// stop somewhere (serde_json at 128), so 32 levels keep a schema file under 100.
pub const MAX_NESTING_DEPTH: usize = 32;

/// The nested types of `arrow` one level down, with the names of the fields that lead there.
fn nested_fields(arrow: &ArrowType) -> Vec<&Field> {
    match arrow {
        ArrowType::List(element)
        | ArrowType::LargeList(element)
        | ArrowType::ListView(element)
        | ArrowType::LargeListView(element) => vec![element.as_ref()],
        ArrowType::Map(entries, _) => match entries.data_type() {
            ArrowType::Struct(pair) => pair.iter().map(|f| f.as_ref()).collect(),
            _ => Vec::new(),
        },
        ArrowType::Struct(fields) => fields.iter().map(|f| f.as_ref()).collect(),
        _ => Vec::new(),
    }
}

/// Refuse a type nested deeper than [`MAX_NESTING_DEPTH`] or with a nested field name
/// containing NUL; iterative, so a hostile depth cannot exhaust the stack.
fn check_nesting(arrow: &ArrowType) -> Result<()> {
    let mut pending: Vec<(&ArrowType, usize)> = vec![(arrow, 0)];
    while let Some((t, depth)) = pending.pop() {
        let children = nested_fields(t);
        let nested = !children.is_empty() || matches!(t, ArrowType::Dictionary(..));
        if nested && depth >= MAX_NESTING_DEPTH {
            return Err(Error::Invalid(format!(
                "type nested more than {MAX_NESTING_DEPTH} levels deep (ARRAY, MAP and ROW levels); \
                 no reader could read such a schema back"
            )));
        }
        if let ArrowType::Dictionary(_, value) = t {
            pending.push((value, depth + 1));
        }
        for f in children {
            if f.name().contains('\0') {
                return Err(Error::Invalid(format!(
                    "nested field name {:?} contains a NUL character",
                    f.name()
                )));
            }
            pending.push((f.data_type(), depth + 1));
        }
    }
    Ok(())
}

/// [`from_arrow_type`] once the nesting is known to be bounded.
fn convert_type(arrow: &ArrowType, nullable: bool) -> Result<DataType> {
    let decimal = |precision: u8, scale: i8| {
        let scale = u32::try_from(scale)
            .ok()
            .filter(|s| *s <= u32::from(precision));
        match scale {
            Some(scale) if (1..=38).contains(&precision) => Ok(TypeKind::Decimal {
                precision: u32::from(precision),
                scale,
            }),
            _ => Err(Error::Unsupported(format!(
                "Arrow type {arrow} as a Paimon DECIMAL"
            ))),
        }
    };
    let list = |element: &Field| {
        Ok(TypeKind::Array(Box::new(convert_type(
            element.data_type(),
            element.is_nullable(),
        )?)))
    };
    let kind = match arrow {
        ArrowType::Boolean => TypeKind::Boolean,
        ArrowType::Int8 => TypeKind::TinyInt,
        ArrowType::Int16 => TypeKind::SmallInt,
        ArrowType::Int32 => TypeKind::Int,
        ArrowType::Int64 => TypeKind::BigInt,
        ArrowType::Float32 => TypeKind::Float,
        ArrowType::Float64 => TypeKind::Double,
        ArrowType::Decimal32(p, s)
        | ArrowType::Decimal64(p, s)
        | ArrowType::Decimal128(p, s)
        | ArrowType::Decimal256(p, s) => decimal(*p, *s)?,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            TypeKind::VarChar(MAX_LENGTH)
        }
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => {
            TypeKind::VarBinary(MAX_LENGTH)
        }
        ArrowType::FixedSizeBinary(length) => match u32::try_from(*length) {
            Ok(length) if length > 0 => TypeKind::Binary(length),
            _ => return Err(Error::Unsupported(format!("Arrow type {arrow}"))),
        },
        ArrowType::Date32 | ArrowType::Date64 => TypeKind::Date,
        ArrowType::Time32(unit) | ArrowType::Time64(unit) => TypeKind::Time(unit_precision(unit)),
        ArrowType::Timestamp(unit, None) => TypeKind::Timestamp(unit_precision(unit)),
        ArrowType::Timestamp(unit, Some(_)) => TypeKind::LocalZonedTimestamp(unit_precision(unit)),
        ArrowType::List(element)
        | ArrowType::LargeList(element)
        | ArrowType::ListView(element)
        | ArrowType::LargeListView(element) => list(element)?,
        ArrowType::Map(entries, _) => {
            let ArrowType::Struct(pair) = entries.data_type() else {
                return Err(Error::Unsupported(format!(
                    "Arrow map {arrow} without struct entries"
                )));
            };
            let [key, value] = pair.iter().collect::<Vec<_>>()[..] else {
                return Err(Error::Unsupported(format!(
                    "Arrow map {arrow} without key/value"
                )));
            };
            TypeKind::Map(
                Box::new(convert_type(key.data_type(), key.is_nullable())?),
                Box::new(convert_type(value.data_type(), value.is_nullable())?),
            )
        }
        ArrowType::Struct(fields) if is_variant(fields) => TypeKind::Variant,
        ArrowType::Struct(fields) => TypeKind::Row(
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let id = i32::try_from(i)
                        .map_err(|_| Error::Unsupported("struct with too many fields".into()))?;
                    Ok(DataField::new(
                        id,
                        f.name(),
                        convert_type(f.data_type(), f.is_nullable())?,
                    ))
                })
                .collect::<Result<_>>()?,
        ),
        ArrowType::Dictionary(_, value) => return convert_type(value, nullable),
        other => {
            return Err(Error::Unsupported(format!(
                "Arrow type {other} has no Paimon type"
            )))
        }
    };
    Ok(DataType { nullable, kind })
}

/// pypaimon's VARIANT shape: exactly `value` and `metadata`, both non-null Binary.
fn is_variant(fields: &Fields) -> bool {
    let mut names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    names.sort_unstable();
    names == ["metadata", "value"]
        && fields
            .iter()
            .all(|f| f.data_type() == &ArrowType::Binary && !f.is_nullable())
}

/// `err` about the type of column `name`, naming it.
fn in_column(name: &str, err: Error) -> Error {
    match err {
        Error::Invalid(m) => Error::Invalid(format!("column {name:?}: {m}")),
        other => other,
    }
}

/// Table columns for an Arrow schema. Ids are assigned from `next_id` the Java way (each
/// column, then the ROW fields inside it, see [`assign_field_ids`]); on return `next_id` is
/// one past the highest id used. A field's `description` metadata becomes its description.
pub fn fields_from_arrow_schema(schema: &Schema, next_id: &mut i32) -> Result<Vec<DataField>> {
    let fields = schema
        .fields()
        .iter()
        .map(|f| {
            let data_type = from_arrow_type(f.data_type(), f.is_nullable())
                .map_err(|e| in_column(f.name(), e))?;
            let mut field = DataField::new(-1, f.name(), data_type);
            field.description = f.metadata().get(DESCRIPTION_METADATA_KEY).cloned();
            Ok(field)
        })
        .collect::<Result<Vec<_>>>()?;
    assign_field_ids(fields, next_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::{files, tables};
    use crate::schema::TableSchema;

    /// pyarrow's `DataType.__str__` for the types our mapping produces.
    fn pyarrow_type(arrow: &ArrowType) -> String {
        let unit = |u: &TimeUnit| match u {
            TimeUnit::Second => "s",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Microsecond => "us",
            TimeUnit::Nanosecond => "ns",
        };
        match arrow {
            ArrowType::Boolean => "bool".into(),
            ArrowType::Int8 => "int8".into(),
            ArrowType::Int16 => "int16".into(),
            ArrowType::Int32 => "int32".into(),
            ArrowType::Int64 => "int64".into(),
            ArrowType::Float32 => "float".into(),
            ArrowType::Float64 => "double".into(),
            ArrowType::Utf8 => "string".into(),
            ArrowType::Binary => "binary".into(),
            ArrowType::LargeBinary => "large_binary".into(),
            ArrowType::FixedSizeBinary(n) => format!("fixed_size_binary[{n}]"),
            ArrowType::Decimal128(p, s) => format!("decimal128({p}, {s})"),
            ArrowType::Date32 => "date32[day]".into(),
            ArrowType::Time32(u) => format!("time32[{}]", unit(u)),
            ArrowType::Timestamp(u, None) => format!("timestamp[{}]", unit(u)),
            ArrowType::Timestamp(u, Some(tz)) => format!("timestamp[{}, tz={tz}]", unit(u)),
            ArrowType::List(item) => format!("list<{}>", pyarrow_field(item)),
            ArrowType::Struct(fields) => format!(
                "struct<{}>",
                fields
                    .iter()
                    .map(|f| pyarrow_field(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ArrowType::Map(entries, sorted) => {
                assert!(!sorted && entries.name() == "entries");
                let ArrowType::Struct(kv) = entries.data_type() else {
                    panic!("map entries")
                };
                assert_eq!(
                    (kv[0].name().as_str(), kv[1].name().as_str()),
                    ("key", "value")
                );
                format!(
                    "map<{}, {}>",
                    pyarrow_type(kv[0].data_type()),
                    pyarrow_type(kv[1].data_type())
                )
            }
            other => panic!("no pyarrow spelling for {other}"),
        }
    }

    fn pyarrow_field(field: &Field) -> String {
        let not_null = if field.is_nullable() { "" } else { " not null" };
        format!(
            "{}: {}{not_null}",
            field.name(),
            pyarrow_type(field.data_type())
        )
    }

    /// pyarrow's `Schema.to_string()` lines: each field, then `child i, ...` lines for the
    /// children of nested types (indented 2, then 4 more per level).
    fn pyarrow_schema_lines(schema: &Schema) -> Vec<String> {
        fn children(arrow: &ArrowType, indent: usize, out: &mut Vec<String>) {
            let kids: Vec<&Field> = match arrow {
                ArrowType::List(item) => vec![item.as_ref()],
                ArrowType::Struct(fields) => fields.iter().map(|f| f.as_ref()).collect(),
                ArrowType::Map(entries, _) => vec![entries.as_ref()],
                _ => vec![],
            };
            for (i, kid) in kids.iter().enumerate() {
                out.push(format!(
                    "{}child {i}, {}",
                    " ".repeat(indent),
                    pyarrow_field(kid)
                ));
                children(kid.data_type(), indent + 4, out);
            }
        }
        let mut out = Vec::new();
        for field in schema.fields() {
            out.push(pyarrow_field(field));
            children(field.data_type(), 2, &mut out);
        }
        out
    }

    #[test]
    fn fixture_schemas_map_to_the_expected_arrow_schemas() {
        for (table, dir) in tables() {
            let name = table["name"].as_str().expect("name");
            let latest = files(&dir.join("schema"), "schema-")
                .into_iter()
                .map(|p| TableSchema::from_json(&std::fs::read(p).expect("read")).expect("parse"))
                .max_by_key(|s| s.id)
                .expect("a schema");
            let arrow = to_arrow_schema(&latest.fields).expect("to arrow");
            let expected: Vec<String> = table["schema"]["arrow"]
                .as_array()
                .expect("arrow lines")
                .iter()
                .map(|l| l.as_str().expect("line").to_string())
                .collect();
            assert_eq!(pyarrow_schema_lines(&arrow), expected, "{name}");

            // Back to Paimon: same names, nullability and ids (the fixtures were created from
            // Arrow schemas by pypaimon, which numbers fields like Java).
            let mut next_id = 0;
            let back = fields_from_arrow_schema(&arrow, &mut next_id).expect("from arrow");
            if latest.id == 0 {
                assert_eq!(next_id - 1, latest.highest_field_id, "{name}");
                for (got, want) in back.iter().zip(&latest.fields) {
                    assert_eq!(got.id, want.id, "{name}");
                    assert_eq!(got.name, want.name, "{name}");
                    assert_eq!(got.data_type.nullable, want.data_type.nullable, "{name}");
                }
            }
            for (got, want) in back.iter().zip(&latest.fields) {
                assert_eq!(
                    to_arrow_type(&got.data_type).unwrap(),
                    to_arrow_type(&want.data_type).unwrap()
                );
            }
        }
    }

    #[test]
    fn round_trips_through_arrow() {
        let t = DataType::new;
        let nn = DataType::not_null;
        let types = [
            nn(TypeKind::Boolean),
            t(TypeKind::TinyInt),
            t(TypeKind::SmallInt),
            t(TypeKind::Int),
            t(TypeKind::BigInt),
            t(TypeKind::Float),
            t(TypeKind::Double),
            t(TypeKind::Decimal {
                precision: 38,
                scale: 10,
            }),
            t(TypeKind::VarChar(MAX_LENGTH)),
            t(TypeKind::VarBinary(MAX_LENGTH)),
            t(TypeKind::Binary(16)),
            t(TypeKind::Date),
            t(TypeKind::Time(3)),
            t(TypeKind::Timestamp(0)),
            t(TypeKind::Timestamp(3)),
            t(TypeKind::Timestamp(6)),
            t(TypeKind::Timestamp(9)),
            t(TypeKind::LocalZonedTimestamp(3)),
            t(TypeKind::LocalZonedTimestamp(9)),
            t(TypeKind::Array(Box::new(nn(TypeKind::Int)))),
            nn(TypeKind::Map(
                Box::new(nn(TypeKind::VarChar(MAX_LENGTH))),
                Box::new(t(TypeKind::BigInt)),
            )),
            t(TypeKind::Row(vec![
                DataField::new(0, "a", nn(TypeKind::Int)),
                DataField::new(1, "b", t(TypeKind::Array(Box::new(t(TypeKind::Double))))),
            ])),
            t(TypeKind::Variant),
        ];
        for data_type in types {
            let arrow = to_arrow_type(&data_type).unwrap();
            assert_eq!(
                from_arrow_type(&arrow, data_type.nullable).unwrap(),
                data_type,
                "{arrow}"
            );
        }
    }

    #[test]
    fn nesting_is_bounded_without_recursion() {
        let wrap = |t: ArrowType, levels: usize, kind: fn(ArrowType) -> ArrowType| {
            (0..levels).fold(t, |t, _| kind(t))
        };
        let row = |t| ArrowType::Struct(vec![Field::new("f", t, true)].into());
        let list = |t| ArrowType::List(Arc::new(Field::new("item", t, true)));
        let map = |t| map_type(ArrowType::Int32, t, true);
        for kind in [row, list, map] {
            assert!(
                from_arrow_type(&wrap(ArrowType::Int64, MAX_NESTING_DEPTH, kind), true).is_ok()
            );
            let deep = wrap(ArrowType::Int64, MAX_NESTING_DEPTH + 1, kind);
            assert!(
                matches!(from_arrow_type(&deep, true), Err(Error::Invalid(m)) if m.contains("nested"))
            );
        }
        // Far beyond any stack: refused by the iterative check, not a crash.
        let hostile = wrap(ArrowType::Int64, 200_000, list);
        assert!(matches!(
            from_arrow_type(&hostile, true),
            Err(Error::Invalid(_))
        ));
        std::mem::forget(hostile); // dropping it would recurse 200 000 deep

        let nul = ArrowType::Struct(vec![Field::new("a\0b", ArrowType::Int32, true)].into());
        let schema = Schema::new(vec![Field::new("s", nul, true)]);
        let err = fields_from_arrow_schema(&schema, &mut 0).unwrap_err();
        assert!(
            matches!(&err, Error::Invalid(m) if m.contains("NUL") && m.contains("\"s\"")),
            "{err}"
        );
    }

    #[test]
    fn lossy_and_alternative_mappings() {
        let t = DataType::new;
        // Shorter/longer strings and binaries widen to STRING / BYTES.
        assert_eq!(
            to_arrow_type(&t(TypeKind::Char(5))).unwrap(),
            ArrowType::Utf8
        );
        assert_eq!(
            to_arrow_type(&t(TypeKind::VarChar(20))).unwrap(),
            ArrowType::Utf8
        );
        assert_eq!(
            to_arrow_type(&t(TypeKind::VarBinary(3))).unwrap(),
            ArrowType::Binary
        );
        assert_eq!(
            to_arrow_type(&t(TypeKind::Time(9))).unwrap(),
            ArrowType::Time32(TimeUnit::Millisecond)
        );
        assert_eq!(
            to_arrow_type(&t(TypeKind::Blob)).unwrap(),
            ArrowType::LargeBinary
        );
        assert_eq!(
            to_arrow_type(&t(TypeKind::Multiset(Box::new(t(TypeKind::Int))))).unwrap(),
            map_type(ArrowType::Int32, ArrowType::Int32, false)
        );
        for (arrow, kind) in [
            (ArrowType::LargeUtf8, TypeKind::VarChar(MAX_LENGTH)),
            (ArrowType::Utf8View, TypeKind::VarChar(MAX_LENGTH)),
            (ArrowType::LargeBinary, TypeKind::VarBinary(MAX_LENGTH)),
            (ArrowType::BinaryView, TypeKind::VarBinary(MAX_LENGTH)),
            (ArrowType::Time32(TimeUnit::Second), TypeKind::Time(0)),
            (ArrowType::Time64(TimeUnit::Nanosecond), TypeKind::Time(9)),
            (ArrowType::Date64, TypeKind::Date),
            (
                ArrowType::Decimal64(12, 2),
                TypeKind::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
            (
                ArrowType::Timestamp(TimeUnit::Microsecond, Some("Europe/Paris".into())),
                TypeKind::LocalZonedTimestamp(6),
            ),
            (
                ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(ArrowType::Utf8)),
                TypeKind::VarChar(MAX_LENGTH),
            ),
            (
                ArrowType::LargeList(Arc::new(Field::new("x", ArrowType::Int8, false))),
                TypeKind::Array(Box::new(DataType::not_null(TypeKind::TinyInt))),
            ),
        ] {
            assert_eq!(from_arrow_type(&arrow, true).unwrap(), t(kind), "{arrow}");
        }
        for arrow in [
            ArrowType::UInt32,
            ArrowType::Float16,
            ArrowType::Null,
            ArrowType::Decimal256(40, 2),
            ArrowType::Decimal128(10, -2),
            ArrowType::Duration(TimeUnit::Second),
        ] {
            assert!(
                matches!(from_arrow_type(&arrow, true), Err(Error::Unsupported(_))),
                "{arrow}"
            );
        }
        assert!(to_arrow_type(&t(TypeKind::Timestamp(12))).is_err());
        assert!(to_arrow_type(&t(TypeKind::Decimal {
            precision: 50,
            scale: 0
        }))
        .is_err());
    }

    #[test]
    fn descriptions_and_ids() {
        let mut field = DataField::new(4, "a", DataType::not_null(TypeKind::Int));
        field.description = Some("the a".into());
        let arrow = to_arrow_field(&field).unwrap();
        assert!(!arrow.is_nullable());
        assert_eq!(
            arrow.metadata().get("description").map(String::as_str),
            Some("the a")
        );
        assert!(!arrow.metadata().contains_key("PARQUET:field_id"));

        let row = ArrowType::Struct(Fields::from(vec![
            Field::new("x", ArrowType::Int32, true),
            Field::new(
                "z",
                ArrowType::Struct(Fields::from(vec![Field::new(
                    "q",
                    ArrowType::Boolean,
                    true,
                )])),
                true,
            ),
        ]));
        let schema = Schema::new(vec![arrow, Field::new("st", row, true)]);
        let mut next_id = 10;
        let fields = fields_from_arrow_schema(&schema, &mut next_id).unwrap();
        assert_eq!(next_id, 15);
        assert_eq!(fields[0].description.as_deref(), Some("the a"));
        assert_eq!((fields[0].id, fields[1].id), (10, 11));
        let TypeKind::Row(st) = &fields[1].data_type.kind else {
            panic!()
        };
        assert_eq!((st[0].id, st[1].id), (12, 14));
        let TypeKind::Row(z) = &st[1].data_type.kind else {
            panic!()
        };
        assert_eq!(z[0].id, 13);
    }
}
