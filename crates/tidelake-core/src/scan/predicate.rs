//! Filters: the JSON filter model, binding to a schema, vectorised row evaluation and
//! statistics-based pruning.
//!
//! Life cycle: [`Predicate::from_json`] parses the filter tree (literals stay JSON);
//! [`Predicate::bind`] resolves columns by name against a schema and converts every literal to
//! a [`Datum`] of its column's type; the [`BoundPredicate`] then filters rows
//! ([`BoundPredicate::evaluate`]) and prunes files/partitions ([`BoundPredicate::may_match`]).
//!
//! Literal formats accepted by [`Predicate::bind`], per column type (anything else is an error
//! naming the column, the literal and the type):
//! * BOOLEAN: `true`/`false`. TINYINT..BIGINT: integral JSON numbers (`5`, `5.0`), in range.
//! * FLOAT/DOUBLE: JSON numbers, or `"NaN"`, `"Infinity"`, `"-Infinity"` (also `"inf"`).
//! * DECIMAL(p, s): a decimal string (`"-12.345"`, `"1e3"`) parsed exactly, or a JSON number
//!   (a float is read at its shortest round-trip digits). Digits beyond the scale must be
//!   zeros (`"1.005"` on DECIMAL(10, 2) is an error, never rounded); the value must fit p.
//! * CHAR/VARCHAR/STRING: JSON strings. BINARY/VARBINARY/BYTES: a hex string (`"00ff"`) or
//!   an array of byte values (`[0, 255]`).
//! * DATE: `"YYYY-MM-DD"` or an integer of days since 1970-01-01.
//! * TIME: `"HH:MM[:SS[.fff]]"` (up to 9 fraction digits, nothing below the millisecond) or
//!   an integer of milliseconds of the day.
//! * TIMESTAMP(p): `"YYYY-MM-DD[(T| )HH:MM[:SS[.f{1,9}]]]"`, the wall clock, no zone; or an
//!   integer of epoch milliseconds. TIMESTAMP(p) WITH LOCAL TIME ZONE: the same, read as UTC,
//!   or with a `Z`/`±HH[:MM]` suffix. Literals keep full nanosecond precision whatever p is.
//! * JSON null only inside `in`/`not_in` lists (elsewhere use `is_null`/`is_not_null`).
//!
//! Semantics (Java Paimon's `LeafPredicate` functions, `CompareUtils.compareLiteral`):
//! * SQL three-valued logic with unknown read as false at the end: a comparison, IN, BETWEEN
//!   or STARTSWITH on a NULL value never matches, so `ne`/`not_in` skip NULL rows, and a
//!   `not_in` list holding a NULL matches nothing. There is no NOT node, so folding unknown
//!   into false at every leaf is exact for AND/OR.
//! * Values compare with [`compare_datums`]: FLOAT/DOUBLE as Java `Float.compare`, so NaN
//!   equals NaN and is above +inf, and -0.0 < 0.0 (`eq 0.0` does not match -0.0); strings and
//!   bytes unsigned byte-wise; timestamps at full nanosecond precision.
//!
//! Invariants:
//! * [`BoundPredicate::may_match`] never returns false when a row described by the
//!   statistics could match. Unknown statistics count as "may match". FLOAT/DOUBLE bounds are
//!   widened because writers differ: Parquet/Arrow statistics ignore NaN and may record 0.0
//!   for -0.0, so a NaN is assumed possible beyond the max and zero bounds cover both signs.
//!   `row_count` must be exact (an empty file matches nothing).
//! * Evaluation finds batch columns by name (extra columns are ignored) and gives the same
//!   answer on every Arrow encoding of a column: comparisons run as Arrow kernels when the
//!   literal is exactly representable in the column's Arrow type, else row by row.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType as ArrowType;
use serde_json::Value;
use tidelake_spec::datum::Datum;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::datum_arrow::{compare_datums, datum_at, datums_to_array};
use crate::error::{Error, Result};

/// Java's canonical NaN (`Float.NaN`): positive quiet NaN, the greatest value in Arrow's
/// total order, unlike NaNs with the sign bit set.
const NAN_F32: f32 = f32::from_bits(0x7fc0_0000);
/// Java's canonical NaN (`Double.NaN`).
const NAN_F64: f64 = f64::from_bits(0x7ff8_0000_0000_0000);

const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_MILLI: u32 = 1_000_000;

/// A binary comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    /// The filter JSON name (`eq`, `ne`, `lt`, `le`, `gt`, `ge`).
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }

    fn from_name(name: &str) -> Option<CompareOp> {
        Some(match name {
            "eq" => CompareOp::Eq,
            "ne" => CompareOp::Ne,
            "lt" => CompareOp::Lt,
            "le" => CompareOp::Le,
            "gt" => CompareOp::Gt,
            "ge" => CompareOp::Ge,
            _ => return None,
        })
    }

    /// Whether `value op literal` holds given `value.cmp(literal)`.
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            CompareOp::Eq => ordering == Ordering::Equal,
            CompareOp::Ne => ordering != Ordering::Equal,
            CompareOp::Lt => ordering == Ordering::Less,
            CompareOp::Le => ordering != Ordering::Greater,
            CompareOp::Gt => ordering == Ordering::Greater,
            CompareOp::Ge => ordering != Ordering::Less,
        }
    }
}

/// An unbound filter: column names and JSON literals, as parsed from the filter JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// All children hold (an empty AND is true).
    And(Vec<Predicate>),
    /// Some child holds (an empty OR is false).
    Or(Vec<Predicate>),
    Compare {
        field: String,
        op: CompareOp,
        value: Value,
    },
    /// `field IN values` (or NOT IN); values may contain JSON null.
    In {
        field: String,
        values: Vec<Value>,
        negated: bool,
    },
    /// `field IS NULL` (or IS NOT NULL).
    IsNull { field: String, negated: bool },
    /// `lower <= field <= upper`.
    Between {
        field: String,
        lower: Value,
        upper: Value,
    },
    /// String column starts with `prefix` (byte-wise).
    StartsWith { field: String, prefix: Value },
}

const OPS: &str =
    "and, or, eq, ne, lt, le, gt, ge, is_null, is_not_null, in, not_in, between, startswith";

impl Predicate {
    /// Parse the filter JSON tree: `{"op": "and"|"or", "args": [...]}`,
    /// `{"op": "eq"|"ne"|"lt"|"le"|"gt"|"ge", "field", "value"}`,
    /// `{"op": "is_null"|"is_not_null", "field"}`, `{"op": "in"|"not_in", "field", "values"}`,
    /// `{"op": "between", "field", "lower", "upper"}`, `{"op": "startswith", "field", "value"}`.
    /// Unknown ops and unexpected keys are errors; literals are checked by [`Predicate::bind`].
    pub fn from_json(json: &Value) -> Result<Predicate> {
        let invalid = |reason: String| Error::invalid(format!("invalid filter {json}: {reason}"));
        let Value::Object(object) = json else {
            return Err(invalid("expected a JSON object".to_string()));
        };
        let Some(Value::String(op)) = object.get("op") else {
            return Err(invalid("missing string key 'op'".to_string()));
        };
        let op = op.as_str();
        let allowed: &[&str] = match op {
            "and" | "or" => &["op", "args"],
            "is_null" | "is_not_null" => &["op", "field"],
            "in" | "not_in" => &["op", "field", "values"],
            "between" => &["op", "field", "lower", "upper"],
            "startswith" => &["op", "field", "value"],
            _ if CompareOp::from_name(op).is_some() => &["op", "field", "value"],
            _ => {
                return Err(invalid(format!(
                    "unknown op '{op}' (expected one of {OPS})"
                )))
            }
        };
        if let Some(key) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unexpected key '{key}' for op '{op}' (expected keys: {})",
                allowed.join(", ")
            )));
        }
        let required = |key: &str| -> Result<&Value> {
            object
                .get(key)
                .ok_or_else(|| invalid(format!("op '{op}' requires key '{key}'")))
        };
        let field = || -> Result<String> {
            match required("field")? {
                Value::String(name) if !name.is_empty() => Ok(name.clone()),
                _ => Err(invalid("'field' must be a non-empty string".to_string())),
            }
        };
        let list = |key: &str| -> Result<&Vec<Value>> {
            required(key)?
                .as_array()
                .ok_or_else(|| invalid(format!("'{key}' must be a JSON array")))
        };
        let predicate = match op {
            "and" | "or" => {
                let args = list("args")?
                    .iter()
                    .map(Predicate::from_json)
                    .collect::<Result<_>>()?;
                if op == "and" {
                    Predicate::And(args)
                } else {
                    Predicate::Or(args)
                }
            }
            "is_null" | "is_not_null" => Predicate::IsNull {
                field: field()?,
                negated: op == "is_not_null",
            },
            "in" | "not_in" => Predicate::In {
                field: field()?,
                values: list("values")?.clone(),
                negated: op == "not_in",
            },
            "between" => Predicate::Between {
                field: field()?,
                lower: required("lower")?.clone(),
                upper: required("upper")?.clone(),
            },
            "startswith" => Predicate::StartsWith {
                field: field()?,
                prefix: required("value")?.clone(),
            },
            _ => match CompareOp::from_name(op) {
                Some(compare) => Predicate::Compare {
                    field: field()?,
                    op: compare,
                    value: required("value")?.clone(),
                },
                None => {
                    return Err(invalid(format!(
                        "unknown op '{op}' (expected one of {OPS})"
                    )))
                }
            },
        };
        Ok(predicate)
    }

    /// Resolve columns by (case-sensitive) name in `fields` and convert every literal to a
    /// datum of its column's type. Errors (all [`Error::Invalid`]): unknown column, a literal
    /// of the wrong JSON shape or out of the type's range, a DECIMAL literal with more
    /// fractional digits than the scale, a NULL literal outside an IN list, a comparison on a
    /// non-atomic column (ARRAY, MAP, MULTISET, ROW, VARIANT, BLOB: only null checks), and
    /// `startswith` on a non-string column.
    pub fn bind(&self, fields: &[DataField]) -> Result<BoundPredicate> {
        let bind_all = |children: &[Predicate]| -> Result<Vec<BoundPredicate>> {
            children.iter().map(|child| child.bind(fields)).collect()
        };
        let (field, test) = match self {
            Predicate::And(children) => return Ok(BoundPredicate::And(bind_all(children)?)),
            Predicate::Or(children) => return Ok(BoundPredicate::Or(bind_all(children)?)),
            Predicate::IsNull { field, negated } => (
                resolve(fields, field)?,
                LeafTest::IsNull { negated: *negated },
            ),
            Predicate::Compare { field, op, value } => {
                let field = comparable(fields, field, op.name())?;
                let value = non_null_literal(value, field, op.name())?;
                (field, LeafTest::Compare { op: *op, value })
            }
            Predicate::In {
                field,
                values,
                negated,
            } => {
                let name = if *negated { "not_in" } else { "in" };
                let field = comparable(fields, field, name)?;
                let values = values
                    .iter()
                    .map(|value| literal(value, field))
                    .collect::<Result<_>>()?;
                (
                    field,
                    LeafTest::In {
                        values,
                        negated: *negated,
                    },
                )
            }
            Predicate::Between {
                field,
                lower,
                upper,
            } => {
                let field = comparable(fields, field, "between")?;
                let lower = non_null_literal(lower, field, "between")?;
                let upper = non_null_literal(upper, field, "between")?;
                (field, LeafTest::Between { lower, upper })
            }
            Predicate::StartsWith { field, prefix } => {
                let field = resolve(fields, field)?;
                if !matches!(
                    field.data_type.kind,
                    TypeKind::Char(_) | TypeKind::VarChar(_)
                ) {
                    return Err(Error::invalid(format!(
                        "startswith needs a string column, but column '{}' has type {}",
                        field.name, field.data_type
                    )));
                }
                let Value::String(prefix) = prefix else {
                    return Err(invalid_literal(prefix, field, "expected a JSON string"));
                };
                (
                    field,
                    LeafTest::StartsWith {
                        prefix: prefix.clone(),
                    },
                )
            }
        };
        let column = BoundColumn {
            name: field.name.clone(),
            id: field.id,
            data_type: field.data_type.clone(),
        };
        Ok(BoundPredicate::Leaf(BoundLeaf { column, test }))
    }

    /// Names of the columns this filter reads, each once, in order of first appearance.
    pub fn referenced_fields(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_fields(&mut names);
        names
    }

    fn collect_fields(&self, names: &mut Vec<String>) {
        match self {
            Predicate::And(children) | Predicate::Or(children) => children
                .iter()
                .for_each(|child| child.collect_fields(names)),
            Predicate::Compare { field, .. }
            | Predicate::In { field, .. }
            | Predicate::IsNull { field, .. }
            | Predicate::Between { field, .. }
            | Predicate::StartsWith { field, .. } => push_unique(names, field),
        }
    }
}

fn push_unique(names: &mut Vec<String>, name: &str) {
    if !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
}

/// A column of the schema a predicate was bound to.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundColumn {
    pub name: String,
    /// The schema field id (stable across renames).
    pub id: i32,
    pub data_type: DataType,
}

/// What a leaf checks on its column's value.
#[derive(Debug, Clone, PartialEq)]
pub enum LeafTest {
    Compare {
        op: CompareOp,
        value: Datum,
    },
    /// Values may hold [`Datum::Null`] (which never equals anything).
    In {
        values: Vec<Datum>,
        negated: bool,
    },
    IsNull {
        negated: bool,
    },
    Between {
        lower: Datum,
        upper: Datum,
    },
    StartsWith {
        prefix: String,
    },
}

/// A single-column condition.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundLeaf {
    pub column: BoundColumn,
    pub test: LeafTest,
}

/// A filter bound to a schema: typed literals, ready to evaluate and to prune with.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundPredicate {
    And(Vec<BoundPredicate>),
    Or(Vec<BoundPredicate>),
    Leaf(BoundLeaf),
}

/// Statistics of a set of rows (a data file, a partition, a manifest), by column name.
///
/// `min`/`max` are bounds in [`compare_datums`] order of the non-null values (`None` or
/// [`Datum::Null`] = unknown); `null_count` is `None` when unknown; `row_count` is exact.
pub trait StatsProvider {
    fn min(&self, field: &str) -> Option<Datum>;
    fn max(&self, field: &str) -> Option<Datum>;
    fn null_count(&self, field: &str) -> Option<i64>;
    fn row_count(&self) -> i64;
}

impl BoundPredicate {
    /// One boolean per row of `batch` (no nulls): true where the filter matches.
    /// Columns are looked up by name; a referenced column missing from the batch is an error.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        Ok(BooleanArray::new(self.eval(batch, true)?, None))
    }

    /// Whether some row described by `stats` may match; false only when none can.
    pub fn may_match(&self, stats: &dyn StatsProvider) -> bool {
        match self {
            BoundPredicate::And(children) => children.iter().all(|child| child.may_match(stats)),
            BoundPredicate::Or(children) => children.iter().any(|child| child.may_match(stats)),
            BoundPredicate::Leaf(leaf) => leaf.may_match(stats),
        }
    }

    /// Names of the columns this filter reads, each once, in order of first appearance.
    pub fn referenced_fields(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.collect_fields(&mut names);
        names
    }

    fn collect_fields(&self, names: &mut Vec<String>) {
        match self {
            BoundPredicate::And(children) | BoundPredicate::Or(children) => children
                .iter()
                .for_each(|child| child.collect_fields(names)),
            BoundPredicate::Leaf(leaf) => push_unique(names, &leaf.column.name),
        }
    }

    /// `vectorised = false` forces the row-by-row path (tests check both paths agree).
    fn eval(&self, batch: &RecordBatch, vectorised: bool) -> Result<BooleanBuffer> {
        let rows = batch.num_rows();
        match self {
            BoundPredicate::And(children) => {
                let mut result = BooleanBuffer::new_set(rows);
                for child in children {
                    result = &result & &child.eval(batch, vectorised)?;
                }
                Ok(result)
            }
            BoundPredicate::Or(children) => {
                let mut result = BooleanBuffer::new_unset(rows);
                for child in children {
                    result = &result | &child.eval(batch, vectorised)?;
                }
                Ok(result)
            }
            BoundPredicate::Leaf(leaf) => leaf.eval(batch, vectorised),
        }
    }
}

impl BoundLeaf {
    fn eval(&self, batch: &RecordBatch, vectorised: bool) -> Result<BooleanBuffer> {
        let name = &self.column.name;
        let column = batch.column_by_name(name).ok_or_else(|| {
            let names: Vec<&str> = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            Error::invalid(format!(
                "filter column '{name}' is not in the batch; batch columns are {}",
                names.join(", ")
            ))
        })?;
        let column = normalize(column)?;
        if vectorised {
            if let Some(result) = self.eval_kernels(&column)? {
                return Ok(result);
            }
        }
        let ty = &self.column.data_type;
        let matches = (0..column.len())
            .map(|row| Ok(self.test.accepts(&datum_at(column.as_ref(), row, ty)?)))
            .collect::<Result<Vec<bool>>>()?;
        Ok(BooleanBuffer::from(matches))
    }

    /// The leaf with Arrow kernels, or `None` when some literal has no exact scalar in the
    /// column's Arrow type (the caller then goes row by row).
    fn eval_kernels(&self, column: &ArrayRef) -> Result<Option<BooleanBuffer>> {
        let rows = column.len();
        let ty = &self.column.data_type;
        let compare = |op: CompareOp, literal: &Datum| -> Result<Option<BooleanBuffer>> {
            match scalar_for(literal, ty, column.data_type()) {
                Some(scalar) => kernel(op, column, &scalar).map(Some),
                None => Ok(None),
            }
        };
        let result = match &self.test {
            LeafTest::IsNull { negated } => {
                let valid = match column.logical_nulls() {
                    Some(nulls) => nulls.inner().clone(),
                    None => BooleanBuffer::new_set(rows),
                };
                if *negated {
                    valid
                } else {
                    !&valid
                }
            }
            LeafTest::Compare { op, value } => match compare(*op, value)? {
                Some(result) => result,
                None => return Ok(None),
            },
            LeafTest::In {
                values,
                negated: false,
            } => {
                let mut result = BooleanBuffer::new_unset(rows);
                for value in values.iter().filter(|v| !v.is_null()) {
                    match compare(CompareOp::Eq, value)? {
                        Some(matches) => result = &result | &matches,
                        None => return Ok(None),
                    }
                }
                result
            }
            LeafTest::In {
                values,
                negated: true,
            } => {
                if values.iter().any(Datum::is_null) {
                    BooleanBuffer::new_unset(rows)
                } else {
                    let mut result = match column.logical_nulls() {
                        Some(nulls) => nulls.inner().clone(),
                        None => BooleanBuffer::new_set(rows),
                    };
                    for value in values {
                        match compare(CompareOp::Ne, value)? {
                            Some(matches) => result = &result & &matches,
                            None => return Ok(None),
                        }
                    }
                    result
                }
            }
            LeafTest::Between { lower, upper } => {
                match (
                    compare(CompareOp::Ge, lower)?,
                    compare(CompareOp::Le, upper)?,
                ) {
                    (Some(above), Some(below)) => &above & &below,
                    _ => return Ok(None),
                }
            }
            LeafTest::StartsWith { prefix } => {
                let starts = |valid: bool, value: &str| valid && value.starts_with(prefix.as_str());
                match column.data_type() {
                    ArrowType::Utf8 => {
                        let strings = column.as_string::<i32>();
                        BooleanBuffer::collect_bool(rows, |i| {
                            starts(strings.is_valid(i), strings.value(i))
                        })
                    }
                    ArrowType::LargeUtf8 => {
                        let strings = column.as_string::<i64>();
                        BooleanBuffer::collect_bool(rows, |i| {
                            starts(strings.is_valid(i), strings.value(i))
                        })
                    }
                    ArrowType::Utf8View => {
                        let strings = column.as_string_view();
                        BooleanBuffer::collect_bool(rows, |i| {
                            starts(strings.is_valid(i), strings.value(i))
                        })
                    }
                    _ => return Ok(None),
                }
            }
        };
        Ok(Some(result))
    }

    fn may_match(&self, stats: &dyn StatsProvider) -> bool {
        let rows = stats.row_count();
        if rows == 0 {
            return false;
        }
        let name = self.column.name.as_str();
        let null_count = stats.null_count(name);
        if let LeafTest::IsNull { negated } = self.test {
            return if negated {
                null_count != Some(rows)
            } else {
                null_count != Some(0)
            };
        }
        if null_count == Some(rows) {
            return false;
        }
        let known = |d: Option<Datum>| d.filter(|d| !d.is_null());
        let (mut min, mut max) = (known(stats.min(name)), known(stats.max(name)));
        let nan = match self.column.data_type.kind {
            TypeKind::Float => Some(Datum::Float(NAN_F32)),
            TypeKind::Double => Some(Datum::Double(NAN_F64)),
            _ => None,
        };
        if nan.is_some() {
            // Zero bounds may have lost their sign: widen to -0.0 below and +0.0 above
            // (a `0.0` pattern matches both zeros).
            min = min.map(|d| match d {
                Datum::Float(0.0) => Datum::Float(-0.0),
                Datum::Double(0.0) => Datum::Double(-0.0),
                other => other,
            });
            max = max.map(|d| match d {
                Datum::Float(0.0) => Datum::Float(0.0),
                Datum::Double(0.0) => Datum::Double(0.0),
                other => other,
            });
        }
        self.test.may_match_range(min.as_ref(), max.as_ref())
            || nan.is_some_and(|nan| self.test.accepts(&nan))
    }
}

impl LeafTest {
    /// Whether a row holding `value` matches (NULL only matches IS NULL).
    fn accepts(&self, value: &Datum) -> bool {
        let cmp = |literal: &Datum| {
            if literal.is_null() {
                None
            } else {
                compare_datums(value, literal)
            }
        };
        let holds = |op: CompareOp, literal: &Datum| cmp(literal).is_some_and(|o| op.holds(o));
        if value.is_null() {
            return matches!(self, LeafTest::IsNull { negated: false });
        }
        match self {
            LeafTest::IsNull { negated } => *negated,
            LeafTest::Compare { op, value: literal } => holds(*op, literal),
            LeafTest::In {
                values,
                negated: false,
            } => values.iter().any(|literal| holds(CompareOp::Eq, literal)),
            LeafTest::In {
                values,
                negated: true,
            } => values.iter().all(|literal| holds(CompareOp::Ne, literal)),
            LeafTest::Between { lower, upper } => {
                holds(CompareOp::Ge, lower) && holds(CompareOp::Le, upper)
            }
            LeafTest::StartsWith { prefix } => {
                matches!(value, Datum::String(s) if s.starts_with(prefix.as_str()))
            }
        }
    }

    /// Whether some non-null value in `[min, max]` (a missing bound is unbounded) may match.
    fn may_match_range(&self, min: Option<&Datum>, max: Option<&Datum>) -> bool {
        // `Some` only when the bound is known and comparable with the literal.
        let order = |bound: Option<&Datum>, literal: &Datum| compare_datums(bound?, literal);
        let min_above = |literal: &Datum| order(min, literal) == Some(Ordering::Greater);
        let min_at_or_above = |literal: &Datum| order(min, literal).is_some_and(|o| o.is_ge());
        let max_below = |literal: &Datum| order(max, literal) == Some(Ordering::Less);
        let max_at_or_below = |literal: &Datum| order(max, literal).is_some_and(|o| o.is_le());
        let only = |literal: &Datum| {
            order(min, literal) == Some(Ordering::Equal)
                && order(max, literal) == Some(Ordering::Equal)
        };
        let may_equal =
            |literal: &Datum| !literal.is_null() && !min_above(literal) && !max_below(literal);
        match self {
            LeafTest::IsNull { .. } => true,
            LeafTest::Compare { op, value } => match op {
                CompareOp::Eq => may_equal(value),
                CompareOp::Ne => !only(value),
                CompareOp::Lt => !min_at_or_above(value),
                CompareOp::Le => !min_above(value),
                CompareOp::Gt => !max_at_or_below(value),
                CompareOp::Ge => !max_below(value),
            },
            LeafTest::In {
                values,
                negated: false,
            } => values.iter().any(may_equal),
            LeafTest::In {
                values,
                negated: true,
            } => !values.iter().any(|v| v.is_null() || only(v)),
            LeafTest::Between { lower, upper } => {
                compare_datums(lower, upper) != Some(Ordering::Greater)
                    && !max_below(lower)
                    && !min_above(upper)
            }
            LeafTest::StartsWith { prefix } => {
                // Strings with the prefix p are >= p and below every larger string without it.
                let literal = Datum::String(prefix.clone());
                let min_ok = match min {
                    Some(Datum::String(m)) => {
                        m.as_str() <= prefix.as_str() || m.starts_with(prefix.as_str())
                    }
                    _ => true,
                };
                min_ok && !max_below(&literal)
            }
        }
    }
}

/// Decode dictionaries and give every NaN Java's canonical bits, so that Arrow's total order
/// on floats equals `Float.compare`.
fn normalize(column: &ArrayRef) -> Result<ArrayRef> {
    let column = match column.data_type() {
        ArrowType::Dictionary(_, values) => arrow_cast::cast(column, values)
            .map_err(|e| Error::arrow("decoding a dictionary column for a filter", e))?,
        _ => column.clone(),
    };
    let normalized: ArrayRef = match column.data_type() {
        ArrowType::Float32 => {
            let floats = column.as_primitive::<Float32Type>();
            if !floats.values().iter().any(|v| v.is_nan()) {
                return Ok(column);
            }
            Arc::new(floats.unary::<_, Float32Type>(|v| if v.is_nan() { NAN_F32 } else { v }))
        }
        ArrowType::Float64 => {
            let floats = column.as_primitive::<Float64Type>();
            if !floats.values().iter().any(|v| v.is_nan()) {
                return Ok(column);
            }
            Arc::new(floats.unary::<_, Float64Type>(|v| if v.is_nan() { NAN_F64 } else { v }))
        }
        _ => column,
    };
    Ok(normalized)
}

/// `literal` as a one-row array of exactly `arrow_type` when that holds it exactly (checked
/// by reading it back), else `None`.
fn scalar_for(literal: &Datum, ty: &DataType, arrow_type: &ArrowType) -> Option<ArrayRef> {
    let array = datums_to_array(std::slice::from_ref(literal), ty).ok()?;
    if array.data_type() == arrow_type {
        return Some(array);
    }
    let cast = arrow_cast::cast(&array, arrow_type).ok()?;
    let back = datum_at(cast.as_ref(), 0, ty).ok()?;
    (compare_datums(&back, literal) == Some(Ordering::Equal) && !back.is_null()).then_some(cast)
}

/// `column op scalar` with unknown (null) read as false.
fn kernel(op: CompareOp, column: &ArrayRef, scalar: &ArrayRef) -> Result<BooleanBuffer> {
    let scalar = Scalar::new(scalar.clone());
    let compared = match op {
        CompareOp::Eq => arrow_ord::cmp::eq(column, &scalar),
        CompareOp::Ne => arrow_ord::cmp::neq(column, &scalar),
        CompareOp::Lt => arrow_ord::cmp::lt(column, &scalar),
        CompareOp::Le => arrow_ord::cmp::lt_eq(column, &scalar),
        CompareOp::Gt => arrow_ord::cmp::gt(column, &scalar),
        CompareOp::Ge => arrow_ord::cmp::gt_eq(column, &scalar),
    }
    .map_err(|e| Error::arrow(format!("evaluating filter op '{}'", op.name()), e))?;
    Ok(match compared.nulls() {
        Some(nulls) => compared.values() & nulls.inner(),
        None => compared.values().clone(),
    })
}

// ---- binding -------------------------------------------------------------------------------

fn resolve<'a>(fields: &'a [DataField], name: &str) -> Result<&'a DataField> {
    fields.iter().find(|f| f.name == name).ok_or_else(|| {
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        Error::invalid(format!(
            "unknown column '{name}' in filter; columns are {}",
            names.join(", ")
        ))
    })
}

/// The field named `name`, which must have an atomic (orderable) type for `op`.
fn comparable<'a>(fields: &'a [DataField], name: &str, op: &str) -> Result<&'a DataField> {
    let field = resolve(fields, name)?;
    match field.data_type.kind {
        TypeKind::Array(_)
        | TypeKind::Multiset(_)
        | TypeKind::Map(_, _)
        | TypeKind::Row(_)
        | TypeKind::Variant
        | TypeKind::Blob => Err(Error::invalid(format!(
            "cannot apply '{op}' to column '{name}' of type {}: only is_null and is_not_null \
             apply to this type",
            field.data_type
        ))),
        _ => Ok(field),
    }
}

fn invalid_literal(value: &Value, field: &DataField, reason: &str) -> Error {
    Error::invalid(format!(
        "invalid literal {value} for column '{}' of type {}: {reason}",
        field.name, field.data_type
    ))
}

fn non_null_literal(value: &Value, field: &DataField, op: &str) -> Result<Datum> {
    if value.is_null() {
        return Err(Error::invalid(format!(
            "'{op}' on column '{}' has a null literal, which never matches; use is_null or \
             is_not_null",
            field.name
        )));
    }
    literal(value, field)
}

/// The JSON literal `value` as a datum of `field`'s type (JSON null → [`Datum::Null`]).
fn literal(value: &Value, field: &DataField) -> Result<Datum> {
    if value.is_null() {
        return Ok(Datum::Null);
    }
    convert_literal(value, &field.data_type.kind)
        .map_err(|reason| invalid_literal(value, field, &reason))
}

fn convert_literal(value: &Value, kind: &TypeKind) -> std::result::Result<Datum, String> {
    let range = || "out of range for the column type".to_string();
    let datum = match (kind, value) {
        (TypeKind::Boolean, Value::Bool(b)) => Datum::Boolean(*b),
        (TypeKind::TinyInt, Value::Number(n)) => {
            Datum::TinyInt(i8::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::SmallInt, Value::Number(n)) => {
            Datum::SmallInt(i16::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Int, Value::Number(n)) => {
            Datum::Int(i32::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::BigInt, Value::Number(n)) => {
            Datum::BigInt(i64::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Float, Value::Number(_) | Value::String(_)) => {
            let wide = float_literal(value)?;
            // `as` rounds to the nearest f32; only finite values that overflow are rejected.
            let narrow = wide as f32;
            if wide.is_finite() && narrow.is_infinite() {
                return Err(range());
            }
            Datum::Float(if narrow.is_nan() { NAN_F32 } else { narrow })
        }
        (TypeKind::Double, Value::Number(_) | Value::String(_)) => {
            let wide = float_literal(value)?;
            Datum::Double(if wide.is_nan() { NAN_F64 } else { wide })
        }
        (TypeKind::Decimal { precision, scale }, Value::Number(n)) => {
            // Integers are exact; a JSON float is taken at its shortest round-trip digits.
            let text = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => i.to_string(),
                (None, Some(u), _) => u.to_string(),
                (None, None, Some(f)) => format!("{f}"),
                _ => return Err("expected a decimal number".to_string()),
            };
            Datum::Decimal(parse_decimal(&text, *precision, *scale)?)
        }
        (TypeKind::Decimal { precision, scale }, Value::String(text)) => {
            Datum::Decimal(parse_decimal(text, *precision, *scale)?)
        }
        (TypeKind::Char(_) | TypeKind::VarChar(_), Value::String(s)) => Datum::String(s.clone()),
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Value::String(hex)) => {
            Datum::Bytes(parse_hex(hex)?)
        }
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), Value::Array(items)) => {
            let bytes = items
                .iter()
                .map(|item| item.as_u64().and_then(|b| u8::try_from(b).ok()));
            Datum::Bytes(
                bytes
                    .collect::<Option<Vec<u8>>>()
                    .ok_or("byte arrays must hold integers 0..=255")?,
            )
        }
        (TypeKind::Date, Value::String(s)) => Datum::Date(parse_date(s)?),
        (TypeKind::Date, Value::Number(n)) => {
            Datum::Date(i32::try_from(integral(n)?).map_err(|_| range())?)
        }
        (TypeKind::Time(_), Value::String(s)) => {
            let (millis, sub_milli) = parse_time(s)?;
            if sub_milli != 0 {
                return Err("TIME values have millisecond precision".to_string());
            }
            Datum::Time(millis)
        }
        (TypeKind::Time(_), Value::Number(n)) => {
            let millis = integral(n)?;
            if !(0..i128::from(MILLIS_PER_DAY)).contains(&millis) {
                return Err("milliseconds of day must be in 0..86400000".to_string());
            }
            Datum::Time(i32::try_from(millis).map_err(|_| range())?)
        }
        (TypeKind::Timestamp(_), Value::String(s)) => parse_timestamp(s, false)?,
        (TypeKind::LocalZonedTimestamp(_), Value::String(s)) => parse_timestamp(s, true)?,
        (TypeKind::Timestamp(_) | TypeKind::LocalZonedTimestamp(_), Value::Number(n)) => {
            Datum::Timestamp {
                millis: i64::try_from(integral(n)?).map_err(|_| range())?,
                nanos: 0,
            }
        }
        _ => return Err(format!("expected {}", expected_shape(kind))),
    };
    Ok(datum)
}

/// What a literal of `kind` looks like, for error messages.
fn expected_shape(kind: &TypeKind) -> &'static str {
    match kind {
        TypeKind::Boolean => "true or false",
        TypeKind::TinyInt | TypeKind::SmallInt | TypeKind::Int | TypeKind::BigInt => {
            "an integer number"
        }
        TypeKind::Float | TypeKind::Double => "a number or \"NaN\", \"Infinity\", \"-Infinity\"",
        TypeKind::Decimal { .. } => "a number or a decimal string like \"12.34\"",
        TypeKind::Char(_) | TypeKind::VarChar(_) => "a JSON string",
        TypeKind::Binary(_) | TypeKind::VarBinary(_) => {
            "a hex string like \"0aff\" or an array of byte values"
        }
        TypeKind::Date => "a date string \"YYYY-MM-DD\" or days since 1970-01-01",
        TypeKind::Time(_) => "a time string \"HH:MM:SS[.fff]\" or milliseconds of day",
        TypeKind::Timestamp(_) => {
            "a timestamp string \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]]\" or epoch milliseconds"
        }
        TypeKind::LocalZonedTimestamp(_) => {
            "a timestamp string \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM]\" (no zone = UTC) \
             or epoch milliseconds"
        }
        _ => "no literal (only is_null and is_not_null apply)",
    }
}

/// An integral JSON number (`5` or `5.0`; not `5.5`).
fn integral(n: &serde_json::Number) -> std::result::Result<i128, String> {
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e38 => Ok(f as i128),
        Some(f) if f.is_finite() && f.fract() == 0.0 => {
            Err("out of range for the column type".to_string())
        }
        _ => Err("expected an integer number".to_string()),
    }
}

fn float_literal(value: &Value) -> std::result::Result<f64, String> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| "expected a number".to_string()),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "nan" => Ok(NAN_F64),
            "inf" | "+inf" | "infinity" | "+infinity" => Ok(f64::INFINITY),
            "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
            _ => Err("expected a number or \"NaN\", \"Infinity\", \"-Infinity\"".to_string()),
        },
        _ => Err("expected a number".to_string()),
    }
}

/// The unscaled value of decimal text (`[+-]digits[.digits][e[+-]digits]`) at `scale`,
/// exactly: digits beyond the scale must be zeros and the value must fit `precision`.
fn parse_decimal(text: &str, precision: u32, scale: u32) -> std::result::Result<i128, String> {
    let malformed = || "expected a decimal number like \"-12.345\"".to_string();
    let out_of_range = || format!("out of range for DECIMAL({precision}, {scale})");
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (
            &unsigned[..at],
            unsigned[at + 1..].parse::<i64>().map_err(|_| malformed())?,
        ),
        None => (unsigned, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(malformed());
    }
    let digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .map(|b| b - b'0')
        .collect();
    let frac_len = i64::try_from(frac_part.len()).map_err(|_| malformed())?;
    // unscaled = digits * 10^shift
    let shift = exponent
        .saturating_sub(frac_len)
        .saturating_add(i64::from(scale));
    let (kept, dropped) = if shift >= 0 {
        (digits.as_slice(), &[][..])
    } else {
        let drop = usize::try_from(shift.unsigned_abs()).unwrap_or(usize::MAX);
        digits.split_at(digits.len().saturating_sub(drop))
    };
    if dropped.iter().any(|&d| d != 0) {
        return Err(format!(
            "more than {scale} fractional digits for DECIMAL({precision}, {scale})"
        ));
    }
    let limit = 10i128.checked_pow(precision).ok_or_else(out_of_range)?;
    let mut unscaled: i128 = 0;
    let push = |value: i128, digit: u8| {
        value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(digit)))
            .filter(|v| *v < limit)
    };
    for &digit in kept {
        unscaled = push(unscaled, digit).ok_or_else(out_of_range)?;
    }
    if unscaled != 0 {
        for _ in 0..shift.max(0) {
            unscaled = push(unscaled, 0).ok_or_else(out_of_range)?;
        }
    }
    Ok(if negative { -unscaled } else { unscaled })
}

fn parse_hex(text: &str) -> std::result::Result<Vec<u8>, String> {
    let malformed = || "expected an even number of hex digits".to_string();
    let pairs = text.as_bytes().chunks(2);
    pairs
        .map(|pair| match pair {
            [high, low] => Some((hex_digit(*high)? << 4) | hex_digit(*low)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(malformed)
}

fn hex_digit(c: u8) -> Option<u8> {
    char::from(c)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Parse exactly `width` ASCII digits.
fn digits(text: &str, width: usize) -> Option<u32> {
    (text.len() == width && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok())?
}

/// `YYYY-MM-DD` as days since 1970-01-01.
fn parse_date(text: &str) -> std::result::Result<i32, String> {
    let malformed = || "expected a date \"YYYY-MM-DD\"".to_string();
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(malformed());
    };
    let (year, month, day) = (
        digits(year, 4).ok_or_else(malformed)?,
        digits(month, 2).ok_or_else(malformed)?,
        digits(day, 2).ok_or_else(malformed)?,
    );
    let year = i32::try_from(year).map_err(|_| malformed())?;
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| format!("{text} is not a calendar date"))?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or_else(malformed)?;
    i32::try_from(date.signed_duration_since(epoch).num_days()).map_err(|_| malformed())
}

/// `HH:MM[:SS[.fffffffff]]` as (millis of day, nano-of-milli).
fn parse_time(text: &str) -> std::result::Result<(i32, u32), String> {
    let malformed = || "expected a time \"HH:MM[:SS[.fffffffff]]\"".to_string();
    let (clock, fraction) = match text.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (text, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let (hour, minute, second) = match (parts.as_slice(), fraction) {
        ([h, m], None) => (digits(h, 2), digits(m, 2), Some(0)),
        ([h, m, s], _) => (digits(h, 2), digits(m, 2), digits(s, 2)),
        _ => return Err(malformed()),
    };
    let (hour, minute, second) = (
        hour.filter(|h| *h < 24).ok_or_else(malformed)?,
        minute.filter(|m| *m < 60).ok_or_else(malformed)?,
        second.filter(|s| *s < 60).ok_or_else(malformed)?,
    );
    let nanos = match fraction {
        None => 0,
        Some(f) if f.len() > 9 => return Err("at most 9 fractional digits".to_string()),
        Some(f) => {
            let value = digits(f, f.len())
                .filter(|_| !f.is_empty())
                .ok_or_else(malformed)?;
            // len <= 9 was checked, so the exponent is in 0..=8.
            value * 10u32.pow(9 - f.len() as u32)
        }
    };
    let millis = (hour * 3600 + minute * 60 + second) * 1000 + nanos / NANOS_PER_MILLI;
    let millis = i32::try_from(millis).map_err(|_| malformed())?;
    Ok((millis, nanos % NANOS_PER_MILLI))
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS[.f{1,9}]]][Z|±HH[:MM]]` as a timestamp datum. Without a zone
/// the text is the wall clock (TIMESTAMP) or UTC (TIMESTAMP WITH LOCAL TIME ZONE); a zone is
/// only allowed when `zoned`.
fn parse_timestamp(text: &str, zoned: bool) -> std::result::Result<Datum, String> {
    let malformed = || {
        "expected a timestamp \"YYYY-MM-DD[THH:MM[:SS[.fffffffff]]]\"".to_string()
            + if zoned {
                " with optional Z or ±HH:MM"
            } else {
                ""
            }
    };
    let (date, rest) = text.split_at_checked(10).ok_or_else(malformed)?;
    let days = i64::from(parse_date(date)?);
    let (millis_of_day, nanos, offset_seconds) = if rest.is_empty() {
        (0, 0, 0)
    } else {
        let rest = rest.strip_prefix(['T', 't', ' ']).ok_or_else(malformed)?;
        let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
        let (clock, zone) = rest.split_at(zone_at);
        let (millis, nanos) = parse_time(clock)?;
        if !zone.is_empty() && !zoned {
            return Err(
                "TIMESTAMP literals take no zone offset; give the local date-time".to_string(),
            );
        }
        (millis, nanos, parse_offset(zone).ok_or_else(malformed)?)
    };
    let millis = days * MILLIS_PER_DAY + i64::from(millis_of_day) - offset_seconds * 1000;
    let nanos = i32::try_from(nanos).map_err(|_| malformed())?;
    Ok(Datum::Timestamp { millis, nanos })
}

/// `""`, `Z`, `±HH`, `±HHMM` or `±HH:MM` as seconds east of UTC.
fn parse_offset(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body = zone.get(1..)?;
    let (hours, minutes) = match body.len() {
        2 => (body, "00"),
        4 => body.split_at_checked(2)?,
        5 if body.as_bytes()[2] == b':' => (body.get(..2)?, body.get(3..)?),
        _ => return None,
    };
    let (hours, minutes) = (digits(hours, 2)?, digits(minutes, 2)?);
    (hours <= 18 && minutes < 60).then(|| sign * i64::from(hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use arrow_schema::{Field, Schema};
    use proptest::prelude::*;
    use serde_json::json;
    use tidelake_spec::type_json::field_from_json;
    use tidelake_spec::types::MAX_LENGTH;

    fn t(kind: TypeKind) -> DataType {
        DataType::new(kind)
    }

    fn field(id: i32, name: &str, kind: TypeKind) -> DataField {
        DataField::new(id, name, t(kind))
    }

    fn batch_of(fields: &[DataField], columns: &[Vec<Datum>]) -> RecordBatch {
        let arrow_fields: Vec<Field> = fields
            .iter()
            .map(|f| {
                Field::new(
                    &f.name,
                    crate::datum_arrow::arrow_type_of(&f.data_type).unwrap(),
                    true,
                )
            })
            .collect();
        let arrays = fields
            .iter()
            .zip(columns)
            .map(|(f, values)| datums_to_array(values, &f.data_type).unwrap())
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(arrow_fields)), arrays).unwrap()
    }

    /// Both evaluation paths, checked to agree.
    fn evaluate_both(bound: &BoundPredicate, batch: &RecordBatch) -> Vec<bool> {
        let vectorised: Vec<bool> = bound
            .evaluate(batch)
            .unwrap()
            .iter()
            .map(|b| b == Some(true))
            .collect();
        let rows: Vec<bool> = bound.eval(batch, false).unwrap().iter().collect();
        assert_eq!(
            vectorised, rows,
            "kernel and row paths disagree for {bound:?}"
        );
        vectorised
    }

    // ---- fixtures --------------------------------------------------------------------------

    fn fixtures_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/paimon-v1")
    }

    fn latest_fields(table_dir: &Path) -> Vec<DataField> {
        let schema_dir = table_dir.join("schema");
        let latest = std::fs::read_dir(&schema_dir)
            .unwrap()
            .filter_map(|entry| {
                entry
                    .unwrap()
                    .file_name()
                    .to_str()?
                    .strip_prefix("schema-")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap();
        let text = std::fs::read(schema_dir.join(format!("schema-{latest}"))).unwrap();
        let schema: Value = serde_json::from_slice(&text).unwrap();
        schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| field_from_json(f).unwrap())
            .collect()
    }

    fn read_ipc(path: &Path) -> RecordBatch {
        let file = std::fs::File::open(path).unwrap();
        let reader = arrow_ipc::reader::FileReader::try_new(file, None).unwrap();
        let schema = reader.schema();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        arrow_select::concat::concat_batches(&schema, &batches).unwrap()
    }

    /// Rows of `columns` (by name) rendered as datums, sorted: a multiset to compare.
    fn rendered_rows(batch: &RecordBatch, columns: &[&str], fields: &[DataField]) -> Vec<String> {
        let mut rows: Vec<String> = (0..batch.num_rows())
            .map(|row| {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|name| {
                        let ty = &fields.iter().find(|f| f.name == *name).unwrap().data_type;
                        let column = batch.column_by_name(name).unwrap();
                        format!("{:?}", datum_at(column.as_ref(), row, ty).unwrap())
                    })
                    .collect();
                cells.join(" | ")
            })
            .collect();
        rows.sort();
        rows
    }

    #[test]
    fn fixture_filters_bind_and_select_the_expected_rows() {
        let root = fixtures_root();
        let Ok(text) = std::fs::read(root.join("fixtures.json")) else {
            eprintln!("fixtures not found at {}; skipping", root.display());
            return;
        };
        let doc: Value = serde_json::from_slice(&text).unwrap();
        let mut checked = 0;
        for table in doc["tables"].as_array().unwrap() {
            let Some(cases) = table["expected"]["filtered"].as_array() else {
                continue;
            };
            let name = table["name"].as_str().unwrap();
            let fields = latest_fields(&root.join(table["path"].as_str().unwrap()));
            let latest =
                read_ipc(&root.join(table["expected"]["latest"]["file"].as_str().unwrap()));
            for case in cases {
                let predicate = Predicate::from_json(&case["filter"]).unwrap();
                let bound = predicate
                    .bind(&fields)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(bound.referenced_fields(), predicate.referenced_fields());
                let mask = BooleanArray::from(evaluate_both(&bound, &latest));
                let selected = arrow_select::filter::filter_record_batch(&latest, &mask).unwrap();
                let expected = read_ipc(&root.join(case["file"].as_str().unwrap()));
                let projection: Vec<&str> = case["projection"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_str().unwrap())
                    .collect();
                assert_eq!(
                    selected.num_rows() as u64,
                    case["rows"].as_u64().unwrap(),
                    "{name}"
                );
                assert_eq!(
                    rendered_rows(&selected, &projection, &fields),
                    rendered_rows(&expected, &projection, &fields),
                    "{name}: {}",
                    case["name"]
                );
                checked += 1;
            }
        }
        assert!(checked >= 20, "only {checked} fixture filters found");
    }

    // ---- parsing ---------------------------------------------------------------------------

    #[test]
    fn parses_every_op() {
        let parsed = Predicate::from_json(&json!({"op": "and", "args": [
            {"op": "ge", "field": "qty", "value": 50},
            {"op": "is_not_null", "field": "name"},
            {"op": "or", "args": [
                {"op": "in", "field": "a", "values": [1, null]},
                {"op": "not_in", "field": "a", "values": []},
                {"op": "between", "field": "b", "lower": "x", "upper": "y"},
                {"op": "startswith", "field": "name", "value": "ab"},
                {"op": "is_null", "field": "c"}
            ]}
        ]}))
        .unwrap();
        let expected = Predicate::And(vec![
            Predicate::Compare {
                field: "qty".into(),
                op: CompareOp::Ge,
                value: json!(50),
            },
            Predicate::IsNull {
                field: "name".into(),
                negated: true,
            },
            Predicate::Or(vec![
                Predicate::In {
                    field: "a".into(),
                    values: vec![json!(1), Value::Null],
                    negated: false,
                },
                Predicate::In {
                    field: "a".into(),
                    values: vec![],
                    negated: true,
                },
                Predicate::Between {
                    field: "b".into(),
                    lower: json!("x"),
                    upper: json!("y"),
                },
                Predicate::StartsWith {
                    field: "name".into(),
                    prefix: json!("ab"),
                },
                Predicate::IsNull {
                    field: "c".into(),
                    negated: false,
                },
            ]),
        ]);
        assert_eq!(parsed, expected);
        assert_eq!(
            parsed.referenced_fields(),
            vec!["qty", "name", "a", "b", "c"]
        );
        for (name, op) in [
            ("eq", CompareOp::Eq),
            ("ne", CompareOp::Ne),
            ("lt", CompareOp::Lt),
            ("le", CompareOp::Le),
            ("gt", CompareOp::Gt),
        ] {
            let parsed =
                Predicate::from_json(&json!({"op": name, "field": "f", "value": 1})).unwrap();
            assert_eq!(
                parsed,
                Predicate::Compare {
                    field: "f".into(),
                    op,
                    value: json!(1)
                }
            );
            assert_eq!(op.name(), name);
        }
    }

    #[test]
    fn rejects_malformed_filters() {
        let err = |filter: Value| Predicate::from_json(&filter).unwrap_err().to_string();
        assert!(err(json!([])).contains("expected a JSON object"));
        assert!(err(json!({"field": "a"})).contains("missing string key 'op'"));
        assert!(err(json!({"op": "xor", "args": []})).contains("unknown op 'xor'"));
        assert!(
            err(json!({"op": "eq", "field": "a", "value": 1, "vaue": 2}))
                .contains("unexpected key 'vaue'")
        );
        assert!(err(json!({"op": "eq", "field": "a"})).contains("requires key 'value'"));
        assert!(err(json!({"op": "eq", "field": "", "value": 1})).contains("non-empty string"));
        assert!(err(json!({"op": "is_null", "field": 3})).contains("non-empty string"));
        assert!(err(json!({"op": "and", "args": {}})).contains("'args' must be a JSON array"));
        assert!(err(json!({"op": "in", "field": "a", "values": 1}))
            .contains("'values' must be a JSON array"));
        assert!(err(json!({"op": "or", "args": [{"op": "nope"}]})).contains("unknown op 'nope'"));
        assert!(err(json!({"op": "between", "field": "a", "lower": 1}))
            .contains("requires key 'upper'"));
    }

    // ---- binding and literals -------------------------------------------------------------

    fn bind_one(kind: TypeKind, value: Value) -> Result<Datum> {
        let fields = [field(0, "c", kind)];
        let bound = Predicate::Compare {
            field: "c".into(),
            op: CompareOp::Eq,
            value,
        }
        .bind(&fields)?;
        match bound {
            BoundPredicate::Leaf(BoundLeaf {
                test: LeafTest::Compare { value, .. },
                ..
            }) => Ok(value),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn ts(millis: i64, nanos: i32) -> Datum {
        Datum::Timestamp { millis, nanos }
    }

    #[test]
    fn converts_literals_of_every_type() {
        let ok = |kind: TypeKind, value: Value| bind_one(kind, value).unwrap();
        assert_eq!(ok(TypeKind::Boolean, json!(true)), Datum::Boolean(true));
        assert_eq!(ok(TypeKind::TinyInt, json!(-128)), Datum::TinyInt(-128));
        assert_eq!(ok(TypeKind::SmallInt, json!(32767)), Datum::SmallInt(32767));
        assert_eq!(ok(TypeKind::Int, json!(5.0)), Datum::Int(5));
        assert_eq!(
            ok(TypeKind::BigInt, json!(i64::MAX)),
            Datum::BigInt(i64::MAX)
        );
        assert_eq!(ok(TypeKind::BigInt, json!(-1e3)), Datum::BigInt(-1000));
        assert_eq!(ok(TypeKind::Float, json!(0.5)), Datum::Float(0.5));
        match ok(TypeKind::Float, json!("NaN")) {
            Datum::Float(v) => assert_eq!(v.to_bits(), NAN_F32.to_bits()),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ok(TypeKind::Double, json!("-Infinity")),
            Datum::Double(f64::NEG_INFINITY)
        );
        assert_eq!(ok(TypeKind::Double, json!(0)), Datum::Double(0.0));
        let dec = |p, s| TypeKind::Decimal {
            precision: p,
            scale: s,
        };
        assert_eq!(ok(dec(10, 2), json!("12.340")), Datum::Decimal(1234));
        assert_eq!(ok(dec(10, 2), json!(12.34)), Datum::Decimal(1234));
        assert_eq!(ok(dec(10, 2), json!(-7)), Datum::Decimal(-700));
        assert_eq!(ok(dec(10, 2), json!("1e2")), Datum::Decimal(10_000));
        assert_eq!(ok(dec(10, 2), json!("+.5")), Datum::Decimal(50));
        assert_eq!(ok(dec(10, 2), json!("-0.00")), Datum::Decimal(0));
        assert_eq!(ok(dec(10, 2), json!("12340e-3")), Datum::Decimal(1234));
        assert_eq!(
            ok(dec(10, 2), json!("99999999.99")),
            Datum::Decimal(9_999_999_999)
        );
        let nines = "9".repeat(38);
        assert_eq!(
            ok(dec(38, 0), json!(nines)),
            Datum::Decimal(10i128.pow(38) - 1)
        );
        assert_eq!(
            ok(dec(38, 0), json!(format!("-{nines}"))),
            Datum::Decimal(1 - 10i128.pow(38))
        );
        assert_eq!(
            ok(dec(38, 38), json!("0.1")),
            Datum::Decimal(10i128.pow(37))
        );
        assert_eq!(ok(dec(5, 0), json!("0e999999")), Datum::Decimal(0));
        assert_eq!(
            ok(TypeKind::VarChar(MAX_LENGTH), json!("ä")),
            Datum::String("ä".into())
        );
        assert_eq!(
            ok(TypeKind::VarBinary(MAX_LENGTH), json!("00fF")),
            Datum::Bytes(vec![0, 255])
        );
        assert_eq!(
            ok(TypeKind::Binary(3), json!([1, 2, 255])),
            Datum::Bytes(vec![1, 2, 255])
        );
        assert_eq!(
            ok(TypeKind::VarBinary(MAX_LENGTH), json!("")),
            Datum::Bytes(vec![])
        );
        assert_eq!(ok(TypeKind::Date, json!("2024-05-14")), Datum::Date(19_857));
        assert_eq!(ok(TypeKind::Date, json!("1969-12-31")), Datum::Date(-1));
        assert_eq!(
            ok(TypeKind::Date, json!("0001-01-01")),
            Datum::Date(-719_162)
        );
        assert_eq!(ok(TypeKind::Date, json!(19_857)), Datum::Date(19_857));
        assert_eq!(
            ok(TypeKind::Time(3), json!("12:34:56.789")),
            Datum::Time(45_296_789)
        );
        assert_eq!(
            ok(TypeKind::Time(0), json!("12:34")),
            Datum::Time(45_240_000)
        );
        assert_eq!(
            ok(TypeKind::Time(3), json!("23:59:59.999000000")),
            Datum::Time(86_399_999)
        );
        assert_eq!(ok(TypeKind::Time(3), json!(1000)), Datum::Time(1000));
        let ts6 = TypeKind::Timestamp(6);
        assert_eq!(
            ok(ts6.clone(), json!("2024-01-01T00:00:00")),
            ts(1_704_067_200_000, 0)
        );
        assert_eq!(
            ok(ts6.clone(), json!("2024-01-01")),
            ts(1_704_067_200_000, 0)
        );
        assert_eq!(
            ok(ts6.clone(), json!("2024-01-01 00:00:00.123456789")),
            ts(1_704_067_200_123, 456_789)
        );
        assert_eq!(
            ok(ts6.clone(), json!("2024-01-01t00:00:00.5")),
            ts(1_704_067_200_500, 0)
        );
        assert_eq!(
            ok(ts6.clone(), json!("1969-12-31T23:59:59.999999999")),
            ts(-1, 999_999)
        );
        assert_eq!(ok(ts6.clone(), json!("1969-12-31T23:59")), ts(-60_000, 0));
        assert_eq!(ok(ts6, json!(-5)), ts(-5, 0));
        let ltz = TypeKind::LocalZonedTimestamp(3);
        assert_eq!(
            ok(ltz.clone(), json!("2024-01-01T00:00:00")),
            ts(1_704_067_200_000, 0)
        );
        assert_eq!(
            ok(ltz.clone(), json!("2024-01-01T00:00:00Z")),
            ts(1_704_067_200_000, 0)
        );
        assert_eq!(
            ok(ltz.clone(), json!("2024-01-01T02:00:00+02:00")),
            ts(1_704_067_200_000, 0)
        );
        assert_eq!(
            ok(ltz.clone(), json!("2023-12-31T22:30:00.000001-0130")),
            ts(1_704_067_200_000, 1_000)
        );
        assert_eq!(
            ok(ltz, json!("2024-01-01T05:00:00+05")),
            ts(1_704_067_200_000, 0)
        );
    }

    #[test]
    fn rejects_bad_literals_naming_column_literal_and_type() {
        let err = |kind: TypeKind, value: Value| bind_one(kind, value).unwrap_err().to_string();
        assert_eq!(
            err(TypeKind::Int, json!("5")),
            "invalid literal \"5\" for column 'c' of type INT: expected an integer number"
        );
        assert!(err(TypeKind::Int, json!(5.5)).contains("expected an integer"));
        assert!(err(TypeKind::Int, json!(2_147_483_648i64)).contains("out of range"));
        assert!(err(TypeKind::TinyInt, json!(128)).contains("out of range"));
        assert!(err(TypeKind::BigInt, json!(9_223_372_036_854_775_808u64)).contains("out of range"));
        assert!(err(TypeKind::BigInt, json!(1e300)).contains("out of range"));
        assert!(err(TypeKind::Boolean, json!("true")).contains("true or false"));
        assert!(err(TypeKind::Float, json!(1e39)).contains("out of range"));
        assert!(err(TypeKind::Double, json!("1.5")).contains("NaN"));
        let dec = TypeKind::Decimal {
            precision: 10,
            scale: 2,
        };
        assert!(err(dec.clone(), json!("12.345")).contains("more than 2 fractional digits"));
        assert!(err(dec.clone(), json!(0.1 + 0.2)).contains("fractional digits"));
        assert!(err(dec.clone(), json!("100000000")).contains("out of range for DECIMAL(10, 2)"));
        for bad in ["", ".", "1.2.3", "abc", "1e", "--1", "1 "] {
            assert!(
                err(dec.clone(), json!(bad)).contains("expected a decimal"),
                "{bad}"
            );
        }
        let nines = "9".repeat(39);
        assert!(err(
            TypeKind::Decimal {
                precision: 38,
                scale: 0
            },
            json!(nines)
        )
        .contains("out of range"));
        assert!(err(TypeKind::VarChar(MAX_LENGTH), json!(5)).contains("a JSON string"));
        assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!("0g")).contains("hex"));
        assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!("abc")).contains("hex"));
        assert!(err(TypeKind::VarBinary(MAX_LENGTH), json!([256])).contains("0..=255"));
        assert!(err(TypeKind::Date, json!("2024-02-30")).contains("not a calendar date"));
        assert!(err(TypeKind::Date, json!("2024-5-14")).contains("YYYY-MM-DD"));
        assert!(err(TypeKind::Time(3), json!("24:00:00")).contains("HH:MM"));
        assert!(err(TypeKind::Time(3), json!("12:00:00.0001")).contains("millisecond precision"));
        assert!(err(TypeKind::Time(3), json!("12:00:00.")).contains("HH:MM"));
        assert!(err(TypeKind::Time(3), json!(86_400_000)).contains("0..86400000"));
        assert!(err(TypeKind::Timestamp(6), json!("2024-01-01T00:00:00Z")).contains("no zone"));
        assert!(err(
            TypeKind::Timestamp(6),
            json!("2024-01-01T00:00:00.1234567890")
        )
        .contains("9 fractional"));
        assert!(err(TypeKind::Timestamp(6), json!("2024-01-01X00:00")).contains("timestamp"));
        assert!(err(
            TypeKind::LocalZonedTimestamp(6),
            json!("2024-01-01T00:00+25:00")
        )
        .contains("timestamp"));
        assert!(err(TypeKind::Timestamp(6), json!(true)).contains("epoch milliseconds"));
    }

    #[test]
    fn bind_rejects_unknown_columns_and_bad_ops() {
        let fields = [
            field(0, "a", TypeKind::Int),
            field(1, "b", TypeKind::VarChar(MAX_LENGTH)),
            field(2, "c", TypeKind::Array(Box::new(t(TypeKind::Int)))),
        ];
        let bind = |filter: Value| Predicate::from_json(&filter).unwrap().bind(&fields);
        let err = |filter: Value| bind(filter).unwrap_err().to_string();
        assert_eq!(
            err(json!({"op": "eq", "field": "x", "value": 1})),
            "unknown column 'x' in filter; columns are a, b, c"
        );
        assert!(err(json!({"op": "eq", "field": "A", "value": 1})).contains("unknown column 'A'"));
        assert!(err(json!({"op": "startswith", "field": "a", "value": "1"}))
            .contains("needs a string column"));
        assert!(err(json!({"op": "startswith", "field": "b", "value": 1}))
            .contains("expected a JSON string"));
        assert!(err(json!({"op": "eq", "field": "c", "value": [1]}))
            .contains("only is_null and is_not_null"));
        assert!(err(json!({"op": "in", "field": "c", "values": []})).contains("ARRAY<INT>"));
        assert!(err(json!({"op": "eq", "field": "a", "value": null})).contains("use is_null"));
        assert!(
            err(json!({"op": "between", "field": "a", "lower": 1, "upper": null}))
                .contains("use is_null")
        );
        assert!(err(json!({"op": "in", "field": "a", "values": [1, "x"]})).contains("\"x\""));
        let bound = bind(json!({"op": "and", "args": [
            {"op": "is_null", "field": "c"},
            {"op": "in", "field": "a", "values": [1, null]},
            {"op": "is_not_null", "field": "a"}
        ]}))
        .unwrap();
        assert_eq!(bound.referenced_fields(), vec!["c", "a"]);
        match &bound {
            BoundPredicate::And(children) => match &children[1] {
                BoundPredicate::Leaf(leaf) => {
                    assert_eq!(
                        leaf.column,
                        BoundColumn {
                            name: "a".into(),
                            id: 0,
                            data_type: t(TypeKind::Int)
                        }
                    );
                    assert_eq!(
                        leaf.test,
                        LeafTest::In {
                            values: vec![Datum::Int(1), Datum::Null],
                            negated: false
                        }
                    );
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    // ---- evaluation ------------------------------------------------------------------------

    fn sample_fields() -> Vec<DataField> {
        vec![
            field(0, "id", TypeKind::Int),
            field(1, "i", TypeKind::Int),
            field(2, "s", TypeKind::VarChar(MAX_LENGTH)),
            field(3, "d", TypeKind::Double),
            field(
                4,
                "dec",
                TypeKind::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            field(5, "ts", TypeKind::Timestamp(6)),
            field(6, "ltz", TypeKind::LocalZonedTimestamp(3)),
            field(7, "dt", TypeKind::Date),
            field(8, "tm", TypeKind::Time(3)),
            field(9, "b", TypeKind::Boolean),
            field(10, "bin", TypeKind::VarBinary(MAX_LENGTH)),
            field(11, "fb", TypeKind::Binary(2)),
            field(12, "r", TypeKind::Float),
            field(13, "arr", TypeKind::Array(Box::new(t(TypeKind::Int)))),
        ]
    }

    /// Six rows, written as filter literals; row 2 is null in every column but `id`.
    fn sample_batch() -> RecordBatch {
        let data = json!({
            "id": [1, 2, 3, 4, 5, 6],
            "i": [1, null, 3, -4, 5, 0],
            "s": ["apple", null, "banana", "", "apricot", "ä"],
            "d": [1.5, null, "NaN", -0.0, 0.0, "-Infinity"],
            "dec": ["1.00", null, "-2.5", 0, 123.45, "0.99"],
            "ts": ["2024-01-01T00:00:00", null, "1969-12-31T23:59:59.999999", 0,
                   "2024-01-01T00:00:00.000001", "1969-12-31"],
            "ltz": [1000, null, -1, 2000, "1970-01-01T00:00:00Z", "1970-01-01T01:00:01+01:00"],
            "dt": ["2024-05-14", null, "1969-12-31", 0, "2024-05-15", "2024-05-13"],
            "tm": [0, null, "12:34:56.789", "23:59:59.999", 1, "12:34:56.789"],
            "b": [true, null, false, true, false, true],
            "bin": ["00", null, "ff", "7f", "", "0001"],
            "fb": ["0001", null, "ff00", "7f00", "0000", [0, 1]],
            "r": [1.5, null, "NaN", -0.0, 0.0, "Infinity"],
            "arr": [[1], null, [], null, [null], []]
        });
        let fields = sample_fields();
        let mut columns: Vec<Vec<Datum>> = fields
            .iter()
            .map(|f| {
                let values = data[&f.name].as_array().unwrap();
                values
                    .iter()
                    .map(|v| match (&f.data_type.kind, v) {
                        (TypeKind::Array(_), Value::Array(items)) => Datum::Array(
                            items
                                .iter()
                                .map(|i| i.as_i64().map_or(Datum::Null, |i| Datum::Int(i as i32)))
                                .collect(),
                        ),
                        _ => literal(v, f).unwrap(),
                    })
                    .collect()
            })
            .collect();
        // A NaN with the sign bit set: Arrow orders it first unless normalised.
        columns[3][2] = Datum::Double(-f64::NAN);
        let base = batch_of(&fields, &columns);
        // An extra column the schema does not know about.
        let mut schema_fields: Vec<Field> = base
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        schema_fields.push(Field::new("zzz", ArrowType::Int32, true));
        let mut arrays = base.columns().to_vec();
        arrays.push(Arc::new(arrow_array::Int32Array::from(vec![9; 6])));
        RecordBatch::try_new(Arc::new(Schema::new(schema_fields)), arrays).unwrap()
    }

    /// Ids of the rows of `batch` matching `filter`, both paths checked.
    fn ids(filter: Value, batch: &RecordBatch) -> Vec<i64> {
        let bound = Predicate::from_json(&filter)
            .unwrap()
            .bind(&sample_fields())
            .unwrap();
        let mask = evaluate_both(&bound, batch);
        (1..=6)
            .zip(mask)
            .filter(|(_, m)| *m)
            .map(|(id, _)| id)
            .collect()
    }

    /// (filter, ids of the sample rows it matches): every op on every type; strings in
    /// unsigned byte order; NaN of either sign equal to NaN and above +inf; -0.0 < 0.0;
    /// timestamps at sub-millisecond precision and before 1970; NULL rows never compared.
    fn sample_cases() -> Vec<(Value, Vec<i64>)> {
        let cases: Value = serde_json::from_str(
            r#"[
            [{"op": "gt", "field": "i", "value": 0}, [1, 3, 5]],
            [{"op": "eq", "field": "i", "value": 0}, [6]],
            [{"op": "ne", "field": "i", "value": 3}, [1, 4, 5, 6]],
            [{"op": "lt", "field": "i", "value": 1}, [4, 6]],
            [{"op": "le", "field": "i", "value": 1}, [1, 4, 6]],
            [{"op": "ge", "field": "i", "value": 3}, [3, 5]],
            [{"op": "in", "field": "i", "values": [1, 5, 7]}, [1, 5]],
            [{"op": "in", "field": "i", "values": [1, null]}, [1]],
            [{"op": "in", "field": "i", "values": []}, []],
            [{"op": "not_in", "field": "i", "values": [1, 5]}, [3, 4, 6]],
            [{"op": "not_in", "field": "i", "values": []}, [1, 3, 4, 5, 6]],
            [{"op": "not_in", "field": "i", "values": [1, null]}, []],
            [{"op": "between", "field": "i", "lower": 0, "upper": 3}, [1, 3, 6]],
            [{"op": "between", "field": "i", "lower": 3, "upper": 0}, []],
            [{"op": "is_null", "field": "i"}, [2]],
            [{"op": "is_not_null", "field": "i"}, [1, 3, 4, 5, 6]],
            [{"op": "is_null", "field": "arr"}, [2, 4]],
            [{"op": "is_not_null", "field": "arr"}, [1, 3, 5, 6]],
            [{"op": "startswith", "field": "s", "value": "ap"}, [1, 5]],
            [{"op": "startswith", "field": "s", "value": ""}, [1, 3, 4, 5, 6]],
            [{"op": "gt", "field": "s", "value": "b"}, [3, 6]],
            [{"op": "lt", "field": "s", "value": "a"}, [4]],
            [{"op": "eq", "field": "s", "value": ""}, [4]],
            [{"op": "ne", "field": "s", "value": "apple"}, [3, 4, 5, 6]],
            [{"op": "between", "field": "s", "lower": "apple", "upper": "apricot"}, [1, 5]],
            [{"op": "eq", "field": "d", "value": "NaN"}, [3]],
            [{"op": "gt", "field": "d", "value": "Infinity"}, [3]],
            [{"op": "gt", "field": "d", "value": 1.0}, [1, 3]],
            [{"op": "eq", "field": "d", "value": 0.0}, [5]],
            [{"op": "eq", "field": "d", "value": -0.0}, [4]],
            [{"op": "lt", "field": "d", "value": 0}, [4, 6]],
            [{"op": "ne", "field": "d", "value": "NaN"}, [1, 4, 5, 6]],
            [{"op": "in", "field": "d", "values": ["NaN", 1.5]}, [1, 3]],
            [{"op": "ge", "field": "r", "value": "Infinity"}, [3, 6]],
            [{"op": "le", "field": "r", "value": 0.0}, [4, 5]],
            [{"op": "gt", "field": "dec", "value": "0.99"}, [1, 5]],
            [{"op": "eq", "field": "dec", "value": 1}, [1]],
            [{"op": "between", "field": "dec", "lower": -2.5, "upper": "0.99"}, [3, 4, 6]],
            [{"op": "gt", "field": "ts", "value": "2024-01-01T00:00:00"}, [5]],
            [{"op": "ge", "field": "ts", "value": "2024-01-01T00:00:00"}, [1, 5]],
            [{"op": "eq", "field": "ts", "value": "2024-01-01T00:00:00.000001"}, [5]],
            [{"op": "gt", "field": "ts", "value": "2024-01-01T00:00:00.0000005"}, [5]],
            [{"op": "lt", "field": "ts", "value": "1970-01-01T00:00:00"}, [3, 6]],
            [{"op": "eq", "field": "ts", "value": "1969-12-31T23:59:59.999999"}, [3]],
            [{"op": "eq", "field": "ts", "value": 0}, [4]],
            [{"op": "gt", "field": "ltz", "value": "1970-01-01T01:00:00.5+01:00"}, [1, 4, 6]],
            [{"op": "eq", "field": "ltz", "value": "1970-01-01T00:00:01Z"}, [1, 6]],
            [{"op": "ge", "field": "dt", "value": "2024-05-14"}, [1, 5]],
            [{"op": "lt", "field": "dt", "value": 0}, [3]],
            [{"op": "eq", "field": "tm", "value": "12:34:56.789"}, [3, 6]],
            [{"op": "gt", "field": "tm", "value": "00:00"}, [3, 4, 5, 6]],
            [{"op": "eq", "field": "b", "value": true}, [1, 4, 6]],
            [{"op": "ne", "field": "b", "value": true}, [3, 5]],
            [{"op": "gt", "field": "bin", "value": "7f"}, [3]],
            [{"op": "lt", "field": "bin", "value": [0, 1]}, [1, 5]],
            [{"op": "eq", "field": "fb", "value": "0001"}, [1, 6]],
            [{"op": "eq", "field": "fb", "value": "00"}, []],
            [{"op": "gt", "field": "fb", "value": "7f"}, [3, 4]],
            [{"op": "and", "args": []}, [1, 2, 3, 4, 5, 6]],
            [{"op": "or", "args": []}, []],
            [{"op": "or", "args": [
                {"op": "is_null", "field": "s"},
                {"op": "and", "args": [
                    {"op": "gt", "field": "i", "value": 0},
                    {"op": "startswith", "field": "s", "value": "b"}
                ]}
            ]}, [2, 3]]
        ]"#,
        )
        .unwrap();
        let cases = cases.as_array().unwrap();
        let ids = |v: &Value| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_i64().unwrap())
                .collect()
        };
        cases
            .iter()
            .map(|case| (case[0].clone(), ids(&case[1])))
            .collect()
    }

    #[test]
    fn evaluates_every_op_and_type() {
        let batch = sample_batch();
        for (filter, expected) in sample_cases() {
            assert_eq!(ids(filter.clone(), &batch), expected, "{filter}");
        }
    }

    #[test]
    fn evaluation_is_the_same_on_other_arrow_encodings() {
        let batch = sample_batch();
        let recast = |name: &str, to: ArrowType| -> (Field, ArrayRef) {
            let column = batch.column_by_name(name).unwrap();
            (
                Field::new(name, to.clone(), true),
                arrow_cast::cast(column, &to).unwrap(),
            )
        };
        let utc: Option<Arc<str>> = Some("+00:00".into());
        let variants: Vec<Vec<(Field, ArrayRef)>> = vec![
            vec![
                recast("s", ArrowType::LargeUtf8),
                recast("dec", ArrowType::Decimal128(12, 4)),
                recast(
                    "ts",
                    ArrowType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None),
                ),
                recast(
                    "ltz",
                    ArrowType::Timestamp(arrow_schema::TimeUnit::Millisecond, utc),
                ),
                recast("dt", ArrowType::Date64),
                recast("bin", ArrowType::LargeBinary),
                recast(
                    "i",
                    ArrowType::Dictionary(Box::new(ArrowType::Int8), Box::new(ArrowType::Int32)),
                ),
                recast("tm", ArrowType::Time64(arrow_schema::TimeUnit::Microsecond)),
            ],
            vec![
                recast("s", ArrowType::Utf8View),
                recast("dec", ArrowType::Decimal256(40, 2)),
                recast("bin", ArrowType::BinaryView),
                recast(
                    "d",
                    ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(ArrowType::Float64)),
                ),
                recast(
                    // Zoned timestamps hold UTC instants: only the label changes.
                    "ltz",
                    ArrowType::Timestamp(
                        arrow_schema::TimeUnit::Microsecond,
                        Some("+05:30".into()),
                    ),
                ),
            ],
            vec![recast(
                "s",
                ArrowType::Dictionary(Box::new(ArrowType::UInt16), Box::new(ArrowType::Utf8)),
            )],
        ];
        for variant in variants {
            let mut fields: Vec<Field> = Vec::new();
            let mut arrays: Vec<ArrayRef> = Vec::new();
            for (f, array) in batch.schema().fields().iter().zip(batch.columns()) {
                match variant.iter().find(|(v, _)| v.name() == f.name()) {
                    Some((v, replaced)) => {
                        fields.push(v.clone());
                        arrays.push(replaced.clone());
                    }
                    None => {
                        fields.push(f.as_ref().clone());
                        arrays.push(array.clone());
                    }
                }
            }
            let other = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
            for (filter, expected) in sample_cases() {
                assert_eq!(
                    ids(filter.clone(), &other),
                    expected,
                    "{filter} on {:?}",
                    other.schema()
                );
            }
        }
    }

    #[test]
    fn evaluation_needs_the_referenced_columns() {
        let batch = sample_batch().project(&[0, 1]).unwrap();
        let bound = Predicate::from_json(&json!({"op": "eq", "field": "s", "value": "x"}))
            .unwrap()
            .bind(&sample_fields())
            .unwrap();
        let err = bound.evaluate(&batch).unwrap_err().to_string();
        assert_eq!(
            err,
            "filter column 's' is not in the batch; batch columns are id, i"
        );
        let wrong_type = batch_of(&[field(0, "s", TypeKind::Int)], &[vec![Datum::Int(1)]]);
        assert!(bound.evaluate(&wrong_type).is_err());
    }

    // ---- pruning ---------------------------------------------------------------------------

    /// One column's (min, max, null count).
    type ColumnStats = (Option<Datum>, Option<Datum>, Option<i64>);
    type StatsRow<'a> = (&'a str, Option<Datum>, Option<Datum>, Option<i64>);

    struct Stats {
        rows: i64,
        columns: HashMap<String, ColumnStats>,
    }

    impl StatsProvider for Stats {
        fn min(&self, field: &str) -> Option<Datum> {
            self.columns.get(field)?.0.clone()
        }
        fn max(&self, field: &str) -> Option<Datum> {
            self.columns.get(field)?.1.clone()
        }
        fn null_count(&self, field: &str) -> Option<i64> {
            self.columns.get(field)?.2
        }
        fn row_count(&self) -> i64 {
            self.rows
        }
    }

    /// Statistics from (column, min, max, null count) rows.
    fn stats(rows: i64, columns: &[StatsRow]) -> Stats {
        Stats {
            rows,
            columns: columns
                .iter()
                .map(|(n, lo, hi, nulls)| (n.to_string(), (lo.clone(), hi.clone(), *nulls)))
                .collect(),
        }
    }

    fn may(filter: Value, stats: &Stats) -> bool {
        Predicate::from_json(&filter)
            .unwrap()
            .bind(&sample_fields())
            .unwrap()
            .may_match(stats)
    }

    #[test]
    fn prunes_with_min_max_and_null_counts() {
        let i = |lo: i32, hi: i32, nulls: Option<i64>| {
            stats(
                10,
                &[("i", Some(Datum::Int(lo)), Some(Datum::Int(hi)), nulls)],
            )
        };
        let f = |op: &str, v: Value| json!({"op": op, "field": "i", "value": v});
        assert!(!may(f("gt", json!(10)), &i(1, 10, Some(0))));
        assert!(may(f("ge", json!(10)), &i(1, 10, Some(0))));
        assert!(!may(f("lt", json!(1)), &i(1, 10, Some(0))));
        assert!(may(f("le", json!(1)), &i(1, 10, Some(0))));
        assert!(!may(f("eq", json!(11)), &i(1, 10, Some(0))));
        assert!(may(f("eq", json!(5)), &i(1, 10, Some(0))));
        assert!(!may(f("ne", json!(5)), &i(5, 5, Some(0))));
        assert!(may(f("ne", json!(5)), &i(5, 6, Some(0))));
        assert!(!may(
            json!({"op": "in", "field": "i", "values": [0, 11, null]}),
            &i(1, 10, None)
        ));
        assert!(may(
            json!({"op": "in", "field": "i", "values": [0, 3]}),
            &i(1, 10, None)
        ));
        assert!(!may(
            json!({"op": "not_in", "field": "i", "values": [4]}),
            &i(4, 4, None)
        ));
        assert!(!may(
            json!({"op": "not_in", "field": "i", "values": [1, null]}),
            &i(1, 10, None)
        ));
        assert!(may(
            json!({"op": "not_in", "field": "i", "values": [4]}),
            &i(4, 5, None)
        ));
        assert!(!may(
            json!({"op": "between", "field": "i", "lower": 11, "upper": 20}),
            &i(1, 10, None)
        ));
        assert!(!may(
            json!({"op": "between", "field": "i", "lower": 5, "upper": 4}),
            &i(1, 10, None)
        ));
        assert!(may(
            json!({"op": "between", "field": "i", "lower": 10, "upper": 20}),
            &i(1, 10, None)
        ));
        // Nulls.
        let is_null = json!({"op": "is_null", "field": "i"});
        let not_null = json!({"op": "is_not_null", "field": "i"});
        assert!(!may(is_null.clone(), &i(1, 10, Some(0))));
        assert!(may(is_null.clone(), &i(1, 10, None)));
        assert!(may(not_null.clone(), &i(1, 10, None)));
        let all_null = stats(10, &[("i", Some(Datum::Null), None, Some(10))]);
        assert!(may(is_null.clone(), &all_null));
        assert!(!may(not_null, &all_null));
        assert!(!may(f("ne", json!(1)), &all_null));
        assert!(!may(is_null, &stats(0, &[])));
        // Unknown or incomparable statistics never prune.
        assert!(may(f("gt", json!(10)), &stats(10, &[])));
        assert!(may(
            f("gt", json!(10)),
            &stats(
                10,
                &[(
                    "i",
                    Some(Datum::String("z".into())),
                    Some(Datum::Date(0)),
                    None
                )]
            )
        ));
        assert!(!may(
            f("gt", json!(10)),
            &stats(10, &[("i", None, Some(Datum::BigInt(10)), None)])
        ));
        // Compound.
        let both = json!({"op": "and", "args": [f("gt", json!(0)), f("lt", json!(0))]});
        assert!(!may(both, &i(1, 10, Some(0))));
        let either = json!({"op": "or", "args": [f("gt", json!(10)), f("lt", json!(2))]});
        assert!(may(either, &i(1, 10, Some(0))));
    }

    #[test]
    fn prunes_startswith_with_string_bounds() {
        let s = |lo: &str, hi: &str| {
            stats(
                5,
                &[(
                    "s",
                    Some(Datum::String(lo.into())),
                    Some(Datum::String(hi.into())),
                    Some(0),
                )],
            )
        };
        let starts = |p: &str| json!({"op": "startswith", "field": "s", "value": p});
        assert!(may(starts("ap"), &s("apple", "apricot")));
        assert!(may(starts("ap"), &s("a", "b")));
        assert!(may(starts("ap"), &s("apz", "b")));
        assert!(!may(starts("ap"), &s("aq", "b")));
        assert!(!may(starts("ap"), &s("a", "ao")));
        assert!(may(starts("ap"), &s("a", "ap")));
        assert!(!may(starts("b"), &s("a", "az")));
        assert!(may(starts(""), &s("x", "y")));
    }

    #[test]
    fn float_pruning_allows_for_hidden_nan_and_signed_zero() {
        let d = |lo: f64, hi: f64| {
            stats(
                5,
                &[(
                    "d",
                    Some(Datum::Double(lo)),
                    Some(Datum::Double(hi)),
                    Some(0),
                )],
            )
        };
        let f = |op: &str, v: Value| json!({"op": op, "field": "d", "value": v});
        // A NaN row (above +inf) may hide from Parquet/Arrow statistics.
        assert!(may(f("gt", json!(10.0)), &d(1.0, 5.0)));
        assert!(may(f("ne", json!(1.0)), &d(1.0, 1.0)));
        assert!(may(f("eq", json!("NaN")), &d(1.0, 5.0)));
        assert!(!may(f("lt", json!(1.0)), &d(1.0, 5.0)));
        assert!(!may(f("eq", json!(6.0)), &d(1.0, 5.0)));
        assert!(!may(
            json!({"op": "between", "field": "d", "lower": 6.0, "upper": 7.0}),
            &d(1.0, 5.0)
        ));
        // 0.0 bounds may stand for -0.0.
        assert!(may(f("lt", json!(0.0)), &d(0.0, 1.0)));
        assert!(may(f("gt", json!(-0.0)), &d(-1.0, -0.0)));
        assert!(!may(f("lt", json!(-0.0)), &d(0.0, 1.0)));
        let r = stats(
            5,
            &[(
                "r",
                Some(Datum::Float(1.0)),
                Some(Datum::Float(2.0)),
                Some(0),
            )],
        );
        assert!(may(json!({"op": "gt", "field": "r", "value": 3}), &r));
        assert!(!may(json!({"op": "lt", "field": "r", "value": 1}), &r));
    }

    // ---- properties: pruning is conservative, both evaluation paths agree ----------------

    fn prop_fields() -> Vec<DataField> {
        vec![
            field(0, "i", TypeKind::Int),
            field(1, "l", TypeKind::BigInt),
            field(2, "f", TypeKind::Double),
            field(3, "r", TypeKind::Float),
            field(4, "s", TypeKind::VarChar(MAX_LENGTH)),
            field(
                5,
                "dec",
                TypeKind::Decimal {
                    precision: 6,
                    scale: 2,
                },
            ),
            field(6, "ts", TypeKind::Timestamp(6)),
            field(7, "dt", TypeKind::Date),
            field(8, "b", TypeKind::Boolean),
            field(9, "bin", TypeKind::VarBinary(MAX_LENGTH)),
        ]
    }

    /// Values from small domains (so that literals hit data); `literal` adds timestamps
    /// that TIMESTAMP(6) cannot hold, exercising the row-by-row path.
    fn value(kind: &TypeKind, literal: bool) -> BoxedStrategy<Datum> {
        use prop::sample::select;
        match kind {
            TypeKind::Int => (-3i32..=3).prop_map(Datum::Int).boxed(),
            TypeKind::BigInt => (-3i64..=3).prop_map(Datum::BigInt).boxed(),
            TypeKind::Double => select(vec![
                -1.5,
                -0.0,
                0.0,
                1.0,
                2.5,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ])
            .prop_map(move |v| Datum::Double(if literal && v.is_nan() { NAN_F64 } else { v }))
            .boxed(),
            TypeKind::Float => select(vec![
                -1.5f32,
                -0.0,
                0.0,
                1.0,
                f32::NAN,
                -f32::NAN,
                f32::INFINITY,
            ])
            .prop_map(move |v| Datum::Float(if literal && v.is_nan() { NAN_F32 } else { v }))
            .boxed(),
            TypeKind::VarChar(_) => select(vec!["", "a", "ab", "abc", "b", "ä", "ba", "\u{7f}"])
                .prop_map(|s| Datum::String(s.to_string()))
                .boxed(),
            TypeKind::Decimal { .. } => (-3i128..=3).prop_map(|v| Datum::Decimal(v * 50)).boxed(),
            TypeKind::Timestamp(_) => {
                let nanos = if literal {
                    vec![0, 1, 999_000, 999_999]
                } else {
                    vec![0, 999_000, 500_000]
                };
                (-2i64..=2, select(nanos))
                    .prop_map(|(millis, nanos)| ts(millis, nanos))
                    .boxed()
            }
            TypeKind::Date => (-2i32..=2).prop_map(Datum::Date).boxed(),
            TypeKind::Boolean => any::<bool>().prop_map(Datum::Boolean).boxed(),
            _ => select(vec![
                vec![],
                vec![0u8],
                vec![0x7f],
                vec![0x80],
                vec![0x80, 0],
            ])
            .prop_map(Datum::Bytes)
            .boxed(),
        }
    }

    fn nullable(values: BoxedStrategy<Datum>) -> BoxedStrategy<Datum> {
        prop_oneof![1 => Just(Datum::Null), 4 => values].boxed()
    }

    fn leaf() -> BoxedStrategy<BoundPredicate> {
        let fields = prop_fields();
        (0..fields.len())
            .prop_flat_map(move |index| {
                let field = fields[index].clone();
                let lit = value(&field.data_type.kind, true);
                let ops = prop::sample::select(vec![
                    CompareOp::Eq,
                    CompareOp::Ne,
                    CompareOp::Lt,
                    CompareOp::Le,
                    CompareOp::Gt,
                    CompareOp::Ge,
                ]);
                let mut tests: Vec<BoxedStrategy<LeafTest>> = vec![
                    (ops, lit.clone())
                        .prop_map(|(op, value)| LeafTest::Compare { op, value })
                        .boxed(),
                    (
                        prop::collection::vec(nullable(lit.clone()), 0..4),
                        any::<bool>(),
                    )
                        .prop_map(|(values, negated)| LeafTest::In { values, negated })
                        .boxed(),
                    any::<bool>()
                        .prop_map(|negated| LeafTest::IsNull { negated })
                        .boxed(),
                    (lit.clone(), lit)
                        .prop_map(|(lower, upper)| LeafTest::Between { lower, upper })
                        .boxed(),
                ];
                if matches!(field.data_type.kind, TypeKind::VarChar(_)) {
                    let prefixes = prop::sample::select(vec!["", "a", "ab", "b", "ä", "c"]);
                    tests.push(
                        prefixes
                            .prop_map(|p| LeafTest::StartsWith {
                                prefix: p.to_string(),
                            })
                            .boxed(),
                    );
                }
                let column = BoundColumn {
                    name: field.name.clone(),
                    id: field.id,
                    data_type: field.data_type.clone(),
                };
                proptest::strategy::Union::new(tests).prop_map(move |test| {
                    BoundPredicate::Leaf(BoundLeaf {
                        column: column.clone(),
                        test,
                    })
                })
            })
            .boxed()
    }

    fn predicate() -> impl Strategy<Value = BoundPredicate> {
        leaf().prop_recursive(2, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(BoundPredicate::And),
                prop::collection::vec(inner, 0..3).prop_map(BoundPredicate::Or),
            ]
        })
    }

    fn columns() -> impl Strategy<Value = Vec<Vec<Datum>>> {
        (0usize..8).prop_flat_map(|rows| {
            prop_fields()
                .iter()
                .map(|f| prop::collection::vec(nullable(value(&f.data_type.kind, false)), rows))
                .collect::<Vec<_>>()
        })
    }

    /// Exact statistics of `columns`; with `skip_nan`, min/max ignore NaN as Parquet does.
    fn stats_of(columns: &[Vec<Datum>], skip_nan: bool) -> Stats {
        let rows = columns.first().map_or(0, Vec::len) as i64;
        let is_nan = |d: &Datum| {
            matches!(d, Datum::Double(v) if v.is_nan())
                || matches!(d, Datum::Float(v) if v.is_nan())
        };
        let columns = prop_fields()
            .iter()
            .zip(columns)
            .map(|(f, values)| {
                let present: Vec<&Datum> = values
                    .iter()
                    .filter(|d| !(d.is_null() || (skip_nan && is_nan(d))))
                    .collect();
                let pick = |want: Ordering| {
                    present
                        .iter()
                        .copied()
                        .reduce(|a, b| {
                            if compare_datums(b, a) == Some(want) {
                                b
                            } else {
                                a
                            }
                        })
                        .cloned()
                };
                let nulls = values.iter().filter(|d| d.is_null()).count() as i64;
                (
                    f.name.clone(),
                    (pick(Ordering::Less), pick(Ordering::Greater), Some(nulls)),
                )
            })
            .collect();
        Stats { rows, columns }
    }

    fn has_float_leaf(p: &BoundPredicate) -> bool {
        match p {
            BoundPredicate::And(c) | BoundPredicate::Or(c) => c.iter().any(has_float_leaf),
            BoundPredicate::Leaf(leaf) => matches!(
                leaf.column.data_type.kind,
                TypeKind::Float | TypeKind::Double
            ),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn pruning_never_drops_a_matching_row(columns in columns(), predicate in predicate()) {
            let batch = batch_of(&prop_fields(), &columns);
            let matches = evaluate_both(&predicate, &batch);
            if matches.iter().any(|m| *m) {
                prop_assert!(predicate.may_match(&stats_of(&columns, false)), "exact stats pruned a match");
                prop_assert!(predicate.may_match(&stats_of(&columns, true)), "NaN-free stats pruned a match");
            }
            // Single rows (exact partition values): pruning is exact except for float columns.
            for (row, matched) in matches.iter().enumerate() {
                let single: Vec<Vec<Datum>> = columns.iter().map(|c| vec![c[row].clone()]).collect();
                let may = predicate.may_match(&stats_of(&single, false));
                if *matched {
                    prop_assert!(may, "row {row} matches but was pruned");
                } else if !has_float_leaf(&predicate) {
                    prop_assert!(!may, "row {row} cannot match but was kept");
                }
            }
        }
    }
}
