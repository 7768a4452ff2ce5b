//! Paimon logical data types (`org.apache.paimon.types.*`) and table fields.
//!
//! Invariants: a [`DataType`] carries its own nullability; field ids are unique within a
//! schema (nested ROW fields included) and never reused; VARCHAR/VARBINARY of length
//! [`MAX_LENGTH`] are the unbounded STRING/BYTES types.
//!
//! JSON (de)serialisation of these types lives in [`crate::type_json`]; the Arrow mapping in
//! [`crate::arrow`].

/// Length that marks VARCHAR/VARBINARY as unbounded (STRING/BYTES).
pub const MAX_LENGTH: u32 = i32::MAX as u32;

/// Base of the derived ids of list elements and map keys/values (Java
/// `SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE`): nested types have no field ids of their own,
/// so Parquet files and Iceberg schemas derive them from the enclosing field's id and depth.
const STRUCTURED_TYPE_FIELD_ID_BASE: i32 = i32::MAX / 4;
/// Java `SpecialFields.STRUCTURED_TYPE_FIELD_DEPTH_LIMIT`.
const STRUCTURED_TYPE_FIELD_DEPTH_LIMIT: i32 = 1 << 10;

/// The id of a list element or map value at `depth` below field `parent` (Java
/// `SpecialFields.getArrayElementFieldId` / `getMapValueFieldId`).
pub fn element_id(parent: i32, depth: i32) -> i32 {
    STRUCTURED_TYPE_FIELD_ID_BASE
        .wrapping_add(parent.wrapping_mul(STRUCTURED_TYPE_FIELD_DEPTH_LIMIT))
        .wrapping_add(depth)
}

/// The id of a map key at `depth` below field `parent` (Java `SpecialFields.getMapKeyFieldId`).
pub fn map_key_id(parent: i32, depth: i32) -> i32 {
    STRUCTURED_TYPE_FIELD_ID_BASE
        .wrapping_sub(parent.wrapping_mul(STRUCTURED_TYPE_FIELD_DEPTH_LIMIT))
        .wrapping_sub(depth)
}

/// A Paimon data type with its nullability.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataType {
    pub nullable: bool,
    pub kind: TypeKind,
}

/// The kind of a [`DataType`], nullability aside.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeKind {
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    /// DECIMAL(precision 1..=38, scale 0..=precision).
    Decimal {
        precision: u32,
        scale: u32,
    },
    Char(u32),
    /// VARCHAR(n); n == MAX_LENGTH is STRING.
    VarChar(u32),
    Binary(u32),
    /// VARBINARY(n); n == MAX_LENGTH is BYTES.
    VarBinary(u32),
    /// Days since 1970-01-01.
    Date,
    /// TIME(p): milliseconds of the day.
    Time(u32),
    /// TIMESTAMP(p) without time zone.
    Timestamp(u32),
    /// TIMESTAMP(p) WITH LOCAL TIME ZONE.
    LocalZonedTimestamp(u32),
    Array(Box<DataType>),
    Multiset(Box<DataType>),
    Map(Box<DataType>, Box<DataType>),
    Row(Vec<DataField>),
    Variant,
    Blob,
}

/// A named, id-carrying field of a ROW type or of a table schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataField {
    pub id: i32,
    pub name: String,
    pub data_type: DataType,
    pub description: Option<String>,
    pub default_value: Option<String>,
}

impl DataType {
    pub fn new(kind: TypeKind) -> Self {
        DataType {
            nullable: true,
            kind,
        }
    }

    pub fn not_null(kind: TypeKind) -> Self {
        DataType {
            nullable: false,
            kind,
        }
    }

    pub fn with_nullable(&self, nullable: bool) -> Self {
        DataType {
            nullable,
            kind: self.kind.clone(),
        }
    }

    pub fn string() -> Self {
        DataType::new(TypeKind::VarChar(MAX_LENGTH))
    }

    pub fn bytes() -> Self {
        DataType::new(TypeKind::VarBinary(MAX_LENGTH))
    }
}

impl DataField {
    pub fn new(id: i32, name: impl Into<String>, data_type: DataType) -> Self {
        DataField {
            id,
            name: name.into(),
            data_type,
            description: None,
            default_value: None,
        }
    }
}
