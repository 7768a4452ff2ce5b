//! Owned values of Paimon types, as stored in BinaryRows (partitions, keys, stats).
//!
//! Representations follow Paimon's internal data structures: DATE is days since epoch,
//! TIME is milliseconds of day, TIMESTAMP is (epoch millis, nano-of-milli) of the wall clock
//! (LTZ: of the UTC instant), DECIMAL is the unscaled integer.

/// One value of a Paimon type. `Null` is valid for every type.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    Null,
    Boolean(bool),
    TinyInt(i8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Float(f32),
    Double(f64),
    /// Unscaled value; precision and scale come from the column type.
    Decimal(i128),
    /// CHAR / VARCHAR / STRING.
    String(String),
    /// BINARY / VARBINARY / BYTES.
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Milliseconds of the day.
    Time(i32),
    /// TIMESTAMP / TIMESTAMP_LTZ: epoch milliseconds plus nanoseconds within the millisecond (0..999_999).
    Timestamp {
        millis: i64,
        nanos: i32,
    },
    Array(Vec<Datum>),
    Map(Vec<(Datum, Datum)>),
    Row(Vec<Datum>),
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }
}
