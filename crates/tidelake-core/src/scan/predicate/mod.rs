//! Filters: the JSON filter model, binding to a schema, vectorised row evaluation and
//! statistics-based pruning. [`parse_filter_text`] compiles the text filter language to the
//! JSON model.
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
use tidelake_spec::schema::TableSchema;
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

    /// The weakest filter on the columns `keep` accepts (by field id) that every row matching
    /// this one matches: leaves on other columns become "true"; `None` when nothing is left.
    pub fn restricted(&self, keep: &dyn Fn(i32) -> bool) -> Option<BoundPredicate> {
        match self {
            BoundPredicate::Leaf(leaf) => keep(leaf.column.id).then(|| self.clone()),
            BoundPredicate::And(children) => {
                let kept: Vec<BoundPredicate> =
                    children.iter().filter_map(|c| c.restricted(keep)).collect();
                (!kept.is_empty()).then_some(BoundPredicate::And(kept))
            }
            BoundPredicate::Or(children) => children
                .iter()
                .map(|c| c.restricted(keep))
                .collect::<Option<Vec<_>>>()
                .map(BoundPredicate::Or),
        }
    }

    /// [`BoundPredicate::restricted`] to the primary-key columns of `schema` (every version of
    /// a key has the key's values, so files, pages and rows may be pruned by it before a merge).
    pub fn restricted_to_key(&self, schema: &TableSchema) -> Option<BoundPredicate> {
        let key_ids: Vec<i32> = schema
            .primary_keys
            .iter()
            .filter_map(|k| schema.field(k))
            .map(|f| f.id)
            .collect();
        self.restricted(&|id| key_ids.contains(&id))
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

mod literal;
#[cfg(test)]
mod tests;
mod text;

pub use text::parse_filter_text;

use literal::{comparable, invalid_literal, literal, non_null_literal, resolve};
