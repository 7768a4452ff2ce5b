//! Paimon schemas, partitions and values in Iceberg's terms (Java `IcebergSchema`,
//! `IcebergDataField`, `IcebergPartitionField`, `IcebergConversions`), for tables whose
//! `metadata.iceberg.storage` asks for Iceberg-compatible metadata (written by
//! `tidelake_core`'s `iceberg` module after each commit).
//!
//! Invariants:
//! * [`check_schema`] refuses a schema with a column or partition column that has no Iceberg
//!   form here; writers call it before they write anything and schema changes before they
//!   commit, so no snapshot is ever committed whose Iceberg metadata cannot be written;
//! * Iceberg field ids are Paimon's field ids; list elements and map keys/values get the ids
//!   Paimon's Parquet files carry ([`element_id`], [`map_key_id`]), so Iceberg readers match
//!   columns by id;
//! * partition fields are identity transforms of the partition columns, with field ids from
//!   [`FIRST_PARTITION_FIELD_ID`] on, in partition-key order;
//! * a bound is Iceberg's single-value binary form of the value (little-endian numbers,
//!   UTF-8 strings, big-endian two's-complement unscaled decimals, microseconds for
//!   timestamps); values with no such form get no bound, which Iceberg readers accept.

use std::cmp::Ordering;

use serde_json::{json, Value as Json};

use crate::datum::Datum;
use crate::error::{Error, Result};
use crate::options::METADATA_ICEBERG_STORAGE;
use crate::schema::TableSchema;
use crate::types::{element_id, map_key_id, DataField, DataType, TypeKind};

/// Java `IcebergPartitionField.FIRST_FIELD_ID`.
pub const FIRST_PARTITION_FIELD_ID: i32 = 1000;

fn unsupported(ty: &DataType, why: &str) -> Error {
    Error::Unsupported(format!("Iceberg metadata for a {ty} column: {why}"))
}

/// The Iceberg type of `ty` (Java `IcebergDataField.toTypeObject`): nested ids derive from
/// `field_id`, the enclosing top-level or ROW field, at `depth`.
fn type_json(ty: &DataType, field_id: i32, depth: i32) -> Result<Json> {
    let name = |s: &str| Ok(Json::String(s.to_string()));
    match &ty.kind {
        TypeKind::Boolean => name("boolean"),
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int => name("int"),
        TypeKind::BigInt => name("long"),
        TypeKind::Float => name("float"),
        TypeKind::Double => name("double"),
        TypeKind::Date => name("date"),
        TypeKind::Char(_) | TypeKind::VarChar(_) => name("string"),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => name("binary"),
        TypeKind::Decimal { precision, scale } => name(&format!("decimal({precision}, {scale})")),
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) => {
            if !(4..=9).contains(p) {
                return Err(unsupported(
                    ty,
                    "Paimon's Iceberg compatibility only supports timestamps of precision 4 to 9",
                ));
            }
            let zoned = matches!(ty.kind, TypeKind::LocalZonedTimestamp(_));
            let base = if zoned { "timestamptz" } else { "timestamp" };
            name(&if *p >= 7 {
                format!("{base}_ns")
            } else {
                base.to_string()
            })
        }
        TypeKind::Array(element) => Ok(json!({
            "type": "list",
            "element-id": element_id(field_id, depth + 1),
            "element-required": !element.nullable,
            "element": type_json(element, field_id, depth + 1)?,
        })),
        TypeKind::Map(key, value) => Ok(json!({
            "type": "map",
            "key-id": map_key_id(field_id, depth + 1),
            "key": type_json(key, field_id, depth + 1)?,
            "value-id": element_id(field_id, depth + 1),
            "value-required": !value.nullable,
            "value": type_json(value, field_id, depth + 1)?,
        })),
        TypeKind::Row(fields) => Ok(json!({
            "type": "struct",
            "fields": fields.iter().map(field_json).collect::<Result<Vec<_>>>()?,
        })),
        _ => Err(unsupported(ty, "Iceberg has no such type")),
    }
}

fn field_json(f: &DataField) -> Result<Json> {
    let ty = type_json(&f.data_type, f.id, 0).map_err(|e| match e {
        Error::Unsupported(m) => Error::Unsupported(format!("column '{}': {m}", f.name)),
        other => other,
    })?;
    let mut field = json!({
        "id": f.id,
        "name": f.name,
        "required": !f.data_type.nullable,
        "type": ty,
    });
    if let Some(doc) = &f.description {
        field["doc"] = Json::String(doc.clone());
    }
    Ok(field)
}

/// The Iceberg schema of Paimon schema `schema` (its id is the Iceberg schema id).
pub fn schema_json(schema: &TableSchema) -> Result<Json> {
    Ok(json!({
        "type": "struct",
        "schema-id": schema.id,
        "fields": schema.fields.iter().map(field_json).collect::<Result<Vec<_>>>()?,
    }))
}

/// The highest top-level field id of `schema` (Java `IcebergSchema.highestFieldId`).
pub fn last_column_id(schema: &TableSchema) -> i32 {
    schema.fields.iter().map(|f| f.id).max().unwrap_or(0)
}

/// The partition spec (`spec-id` 0) of a table partitioned by `fields`.
pub fn partition_spec_json(fields: &[DataField]) -> Json {
    json!({
        "spec-id": 0,
        "fields": fields.iter().zip(FIRST_PARTITION_FIELD_ID..).map(|(f, id)| json!({
            "name": f.name,
            "transform": "identity",
            "source-id": f.id,
            "field-id": id,
        })).collect::<Vec<_>>(),
    })
}

/// The last partition field id of a spec over `n` fields (Java: the highest id, or 999).
pub fn last_partition_id(n: usize) -> i32 {
    FIRST_PARTITION_FIELD_ID - 1 + i32::try_from(n).unwrap_or(i32::MAX - FIRST_PARTITION_FIELD_ID)
}

/// Iceberg's single-value binary form of `value` of type `ty` (Java
/// `IcebergConversions.toByteBuffer`); `None` for nulls and values without one.
pub fn to_bound(ty: &DataType, value: &Datum) -> Option<Vec<u8>> {
    Some(match (&ty.kind, value) {
        (_, Datum::Boolean(b)) => vec![u8::from(*b)],
        (_, Datum::TinyInt(v)) => i32::from(*v).to_le_bytes().to_vec(),
        (_, Datum::SmallInt(v)) => i32::from(*v).to_le_bytes().to_vec(),
        (_, Datum::Int(v)) | (_, Datum::Date(v)) => v.to_le_bytes().to_vec(),
        (_, Datum::BigInt(v)) => v.to_le_bytes().to_vec(),
        (_, Datum::Float(v)) => v.to_le_bytes().to_vec(),
        (_, Datum::Double(v)) => v.to_le_bytes().to_vec(),
        (_, Datum::String(s)) => s.as_bytes().to_vec(),
        (_, Datum::Bytes(b)) => b.clone(),
        (_, Datum::Decimal(unscaled)) => minimal_be_bytes(*unscaled),
        // Java writes microseconds for precision 4..=6 only (and refuses others)
        (
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
            Datum::Timestamp { millis, nanos },
        ) if (4..=6).contains(p) => {
            let micros = millis
                .checked_mul(1000)?
                .checked_add(i64::from(*nanos / 1000))?;
            micros.to_le_bytes().to_vec()
        }
        _ => return None,
    })
}

/// Java `BigInteger.toByteArray`: the shortest big-endian two's complement.
fn minimal_be_bytes(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut start = 0;
    while start < bytes.len() - 1 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// Compares two bounds of a partition column of type `ty` as values (`None`: not comparable
/// here, so callers treat the pair as overlapping).
pub fn compare_bounds(ty: &DataType, a: &[u8], b: &[u8]) -> Option<Ordering> {
    fn le<const N: usize>(b: &[u8]) -> Option<[u8; N]> {
        b.try_into().ok()
    }
    match &ty.kind {
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int | TypeKind::Date => {
            Some(i32::from_le_bytes(le(a)?).cmp(&i32::from_le_bytes(le(b)?)))
        }
        TypeKind::BigInt => Some(i64::from_le_bytes(le(a)?).cmp(&i64::from_le_bytes(le(b)?))),
        TypeKind::Float => f32::from_le_bytes(le(a)?).partial_cmp(&f32::from_le_bytes(le(b)?)),
        TypeKind::Double => f64::from_le_bytes(le(a)?).partial_cmp(&f64::from_le_bytes(le(b)?)),
        TypeKind::Boolean | TypeKind::Char(_) | TypeKind::VarChar(_) => Some(a.cmp(b)),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => Some(a.cmp(b)),
        TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_) => {
            Some(i64::from_le_bytes(le(a)?).cmp(&i64::from_le_bytes(le(b)?)))
        }
        TypeKind::Decimal { .. } => Some(decimal_from_be_bytes(a)?.cmp(&decimal_from_be_bytes(b)?)),
        _ => None,
    }
}

/// The value of a big-endian two's complement of at most 16 bytes (a decimal bound, or an
/// unscaled decimal in Avro).
pub fn decimal_from_be_bytes(b: &[u8]) -> Option<i128> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - b.len()..].copy_from_slice(b);
    Some(i128::from_be_bytes(full))
}

/// The bytes of Iceberg's Avro `fixed` for a decimal of `precision` digits (Iceberg
/// `TypeUtil.decimalRequiredBytes`): the fewest that hold `10^precision - 1` signed.
pub fn decimal_required_bytes(precision: u32) -> usize {
    let max = 10f64.powi(i32::try_from(precision).unwrap_or(i32::MAX));
    (1..=16)
        .find(|n| 2f64.powi(8 * n - 1) >= max)
        .map_or(16, |n| n as usize)
}

/// The Avro schema of one partition column inside a manifest's `partition` record (field id
/// `id`), Iceberg's Avro form of the column's type (decimals as `fixed`, timestamps as
/// microseconds); `None` for types this module does not write as partition values (Java
/// refuses nanosecond timestamps too).
pub fn partition_avro_type(ty: &DataType) -> Option<Json> {
    let t = match &ty.kind {
        TypeKind::Boolean => json!("boolean"),
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int => json!("int"),
        TypeKind::BigInt => json!("long"),
        TypeKind::Float => json!("float"),
        TypeKind::Double => json!("double"),
        TypeKind::Char(_) | TypeKind::VarChar(_) => json!("string"),
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => json!("bytes"),
        TypeKind::Date => json!({"type": "int", "logicalType": "date"}),
        TypeKind::Decimal { precision, scale } => json!({
            "type": "fixed",
            "name": format!("decimal_{precision}_{scale}"),
            "size": decimal_required_bytes(*precision),
            "logicalType": "decimal",
            "precision": precision,
            "scale": scale,
        }),
        TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p) if (4..=6).contains(p) => json!({
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": matches!(ty.kind, TypeKind::LocalZonedTimestamp(_)),
        }),
        _ => return None,
    };
    Some(if ty.nullable { json!(["null", t]) } else { t })
}

/// Checks every partition column has an Avro form here.
pub fn check_partition_types(fields: &[DataField]) -> Result<()> {
    for f in fields {
        if partition_avro_type(&f.data_type).is_none() {
            return Err(Error::Unsupported(format!(
                "Iceberg metadata for a table partitioned by column '{}' of type {}",
                f.name, f.data_type
            )));
        }
    }
    Ok(())
}

/// Whether `schema`'s options ask for Iceberg metadata (`metadata.iceberg.storage` set and
/// not `disabled`).
pub fn asks_for_iceberg(schema: &TableSchema) -> bool {
    let storage = schema
        .options()
        .get(METADATA_ICEBERG_STORAGE)
        .map(str::trim);
    storage.is_some_and(|v| !v.is_empty() && !v.eq_ignore_ascii_case("disabled"))
}

/// [`Error::Unsupported`] naming the first column of `schema` without an Iceberg form (Java
/// refuses the same types), when its options ask for Iceberg metadata; `Ok` otherwise.
pub fn check_schema(schema: &TableSchema) -> Result<()> {
    if !asks_for_iceberg(schema) {
        return Ok(());
    }
    let why = |e: Error| match e {
        Error::Unsupported(m) => Error::Unsupported(format!(
            "{m} (remove '{METADATA_ICEBERG_STORAGE}' or the column to write this table)"
        )),
        other => other,
    };
    schema_json(schema).map_err(why)?;
    let partition: Vec<DataField> = schema
        .partition_keys
        .iter()
        .filter_map(|k| schema.field(k).cloned())
        .collect();
    check_partition_types(&partition).map_err(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    #[test]
    fn bounds_are_iceberg_single_values() {
        assert_eq!(
            to_bound(&ty(TypeKind::Int), &Datum::Int(1)),
            Some(vec![1, 0, 0, 0])
        );
        assert_eq!(
            to_bound(&ty(TypeKind::SmallInt), &Datum::SmallInt(-1)),
            Some(vec![0xff; 4])
        );
        assert_eq!(
            to_bound(&ty(TypeKind::BigInt), &Datum::BigInt(258)),
            Some(vec![2, 1, 0, 0, 0, 0, 0, 0])
        );
        assert_eq!(
            to_bound(&ty(TypeKind::VarChar(10)), &Datum::String("é".into())),
            Some("é".as_bytes().to_vec())
        );
        let dec = ty(TypeKind::Decimal {
            precision: 10,
            scale: 2,
        });
        assert_eq!(to_bound(&dec, &Datum::Decimal(127)), Some(vec![0x7f]));
        assert_eq!(to_bound(&dec, &Datum::Decimal(128)), Some(vec![0, 0x80]));
        assert_eq!(
            to_bound(&dec, &Datum::Decimal(-129)),
            Some(vec![0xff, 0x7f])
        );
        assert_eq!(to_bound(&dec, &Datum::Decimal(-1)), Some(vec![0xff]));
        let ts = Datum::Timestamp {
            millis: 1,
            nanos: 2000,
        };
        assert_eq!(
            to_bound(&ty(TypeKind::Timestamp(6)), &ts),
            Some(1002i64.to_le_bytes().to_vec())
        );
        assert_eq!(to_bound(&ty(TypeKind::Timestamp(9)), &ts), None);
        assert_eq!(to_bound(&ty(TypeKind::Int), &Datum::Null), None);
    }

    #[test]
    fn nested_types_carry_parquet_ids() {
        let list = ty(TypeKind::Array(Box::new(ty(TypeKind::Int))));
        let t = type_json(&list, 7, 0).unwrap();
        assert_eq!(t["element-id"], json!(element_id(7, 1)));
        assert_eq!(t["element"], json!("int"));
        let ts3 = ty(TypeKind::Timestamp(3));
        assert!(matches!(type_json(&ts3, 1, 0), Err(Error::Unsupported(_))));
    }

    fn table(options: &[(&str, &str)], extra: DataType, partition: &[&str]) -> TableSchema {
        let field = |id, name: &str, data_type| DataField {
            id,
            name: name.into(),
            data_type,
            description: None,
            default_value: None,
        };
        TableSchema::new(
            0,
            vec![field(0, "k", ty(TypeKind::Int)), field(1, "x", extra)],
            partition.iter().map(|p| p.to_string()).collect(),
            vec![],
            options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn schemas_without_an_iceberg_form_are_refused_only_when_asked() {
        let ice = [("metadata.iceberg.storage", "table-location")];
        for (extra, partition, needle) in [
            (ty(TypeKind::Time(0)), &[][..], "column 'x'"),
            (ty(TypeKind::Timestamp(3)), &[][..], "precision 4 to 9"),
            (
                ty(TypeKind::Timestamp(9)),
                &["x"][..],
                "partitioned by column 'x'",
            ),
        ] {
            let err = check_schema(&table(&ice, extra.clone(), partition)).unwrap_err();
            assert!(
                matches!(&err, Error::Unsupported(m) if m.contains(needle)
                    && m.contains("metadata.iceberg.storage")),
                "{extra}: {err}"
            );
            let off = [("metadata.iceberg.storage", "disabled")];
            assert!(check_schema(&table(&off, extra.clone(), partition)).is_ok());
            assert!(check_schema(&table(&[], extra, partition)).is_ok());
        }
        assert!(check_schema(&table(&ice, ty(TypeKind::Timestamp(6)), &[])).is_ok());
    }

    #[test]
    fn bounds_compare_as_values() {
        let int = ty(TypeKind::Int);
        let (a, b) = (
            to_bound(&int, &Datum::Int(-1)).unwrap(),
            to_bound(&int, &Datum::Int(2)).unwrap(),
        );
        assert_eq!(compare_bounds(&int, &a, &b), Some(Ordering::Less));
        assert_eq!(compare_bounds(&int, &a, &[1]), None);
        let dec = ty(TypeKind::Decimal {
            precision: 20,
            scale: 2,
        });
        let bound = |v| to_bound(&dec, &Datum::Decimal(v)).unwrap();
        for (x, y) in [
            (-129, 1),
            (127, 128),
            (-1, 0),
            (1 << 70, 1 << 71),
            (-(1 << 70), 5),
        ] {
            assert_eq!(
                compare_bounds(&dec, &bound(x), &bound(y)),
                Some(Ordering::Less)
            );
        }
        let ts = ty(TypeKind::Timestamp(6));
        let at = |millis| to_bound(&ts, &Datum::Timestamp { millis, nanos: 0 }).unwrap();
        assert_eq!(compare_bounds(&ts, &at(-5), &at(3)), Some(Ordering::Less));
    }

    #[test]
    fn decimals_take_the_bytes_iceberg_gives_their_precision() {
        let sizes: Vec<usize> = [1, 2, 3, 9, 10, 18, 19, 38]
            .into_iter()
            .map(decimal_required_bytes)
            .collect();
        assert_eq!(sizes, vec![1, 1, 2, 4, 5, 8, 9, 16]);
        let ts9 = ty(TypeKind::Timestamp(9));
        assert!(partition_avro_type(&ts9).is_none());
        let ltz = partition_avro_type(&ty(TypeKind::LocalZonedTimestamp(6))).unwrap();
        assert!(ltz.to_string().contains(r#""adjust-to-utc":true"#), "{ltz}");
    }
}
