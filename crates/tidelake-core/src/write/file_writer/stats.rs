//! Column statistics of a data file, as Java computes them for its format.
//!
//! Java collects nothing per record for Parquet: it reads the file's column-chunk statistics
//! back (`ParquetSimpleStatsExtractor`) and lets each column's collector convert them
//! (`SimpleColStatsCollector.convert`). We compute the exact file-level bounds while writing
//! ([`ColumnStats`]) and apply the same conversion ([`ColumnStats::finish`]):
//!
//! * modes (Java `SimpleColStatsCollector.from`, case-insensitive): `none` → no stats,
//!   `counts` → null count only, `truncate(n)` → bounds with strings/binaries cut to `n`
//!   characters/bytes, the max rounded **up** (last code point / byte incremented; if nothing
//!   can be incremented the column gets no bounds), `full` → exact bounds;
//! * mode per column (Java `StatsCollectorFactories.createStatsFactories`):
//!   `fields.<c>.stats-mode`, else system columns (`_KEY_*`) `truncate(128)`, else
//!   `metadata.stats-mode` (or its per-level / changelog override) for the first
//!   `metadata.stats-keep-first-n-columns` value columns and `none` after them;
//! * nested columns (ARRAY, MAP, MULTISET, ROW, VARIANT) have no top-level Parquet statistics,
//!   so Java gives them *no* stats at all (null bounds and null count): with
//!   `metadata.stats-dense-store` they are left out of `_VALUE_STATS_COLS`;
//! * TIMESTAMP(p > 6) and BLOB get a null count but no bounds (Java cannot read INT96 bounds);
//! * ORC (Java `OrcSimpleStatsExtractor` over ORC's column statistics) and Avro (Java collects
//!   per record, `SimpleStatsCollector`): every column gets its null count; nested, BINARY,
//!   VARBINARY, BLOB and VARIANT columns get no bounds (ORC binary statistics have none, Java's
//!   byte arrays and nested values are not `Comparable`); timestamps of every precision do.
//!   Avro modes count every file column, system ones included, and `_KEY_*` columns take
//!   the table's mode (`StatsCollectorFactories.createStatsFactoriesForAvro`);
//! * FLOAT/DOUBLE: a column holding NaN gets no bounds (null min/max means "unknown" to every
//!   reader, whereas a NaN bound or a bound ignoring NaN would prune NaN rows under one
//!   reader's order or another's); a zero min is stored as -0.0 and a zero max as +0.0 so the
//!   bounds hold whether readers tell signed zeros apart or not.
//!
//! Invariant: every bound is a true bound of the column's non-null values under Java's order
//! (`compare_datums`); unknown is always expressed as a null bound.

use std::cmp::Ordering;
use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrowNativeTypeOp, ArrowPrimitiveType};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use tidelake_spec::binary_row::encode_framed;
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::SimpleStats;
use tidelake_spec::options::{Options, METADATA_STATS_MODE};
use tidelake_spec::types::{DataField, DataType, TypeKind};

use crate::datum_arrow::{compare_datums, datum_at};
use crate::error::{Error, Result};
use crate::read::data_file::FileFormat;

/// Mode of system columns (`_KEY_*`) without an explicit `fields.<c>.stats-mode`.
const SYSTEM_COLUMN_TRUNCATE: usize = 128;

/// How much statistics a column keeps (Java `SimpleColStatsCollector` implementations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatsMode {
    None,
    Counts,
    Truncate(usize),
    Full,
}

impl StatsMode {
    /// Java `SimpleColStatsCollector.from`: `none`, `counts`, `full` or `truncate(<n>)`, any
    /// case, `n` > 0.
    pub(crate) fn parse(text: &str) -> Result<StatsMode> {
        let upper = text.to_ascii_uppercase();
        let invalid = || {
            Error::invalid(format!(
                "stats mode '{text}' is not one of none, counts, full, truncate(<n>)"
            ))
        };
        match upper.as_str() {
            "NONE" => Ok(StatsMode::None),
            "COUNTS" => Ok(StatsMode::Counts),
            "FULL" => Ok(StatsMode::Full),
            _ => {
                let digits = upper
                    .strip_prefix("TRUNCATE(")
                    .and_then(|rest| rest.strip_suffix(')'))
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(invalid)?;
                match digits.parse::<usize>() {
                    Ok(n) if n > 0 => Ok(StatsMode::Truncate(n)),
                    _ => Err(invalid()),
                }
            }
        }
    }

    fn keeps_bounds(self) -> bool {
        matches!(self, StatsMode::Truncate(_) | StatsMode::Full)
    }
}

/// Which columns get which stats mode, from table options.
#[derive(Debug, Clone)]
pub(crate) struct StatsConfig {
    default: StatsMode,
    /// Explicit `fields.<c>.stats-mode` entries.
    fields: HashMap<String, StatsMode>,
    /// `metadata.stats-keep-first-n-columns`; negative = all.
    keep_first_n: i64,
    /// `metadata.stats-dense-store`.
    pub(crate) dense: bool,
}

impl StatsConfig {
    /// `default_mode` is the resolved `metadata.stats-mode` (after per-level / changelog
    /// overrides).
    pub(crate) fn new(options: &Options, default_mode: &str) -> Result<StatsConfig> {
        let mut fields = HashMap::new();
        for (key, value) in options.iter() {
            if let Some(column) = key
                .strip_prefix("fields.")
                .and_then(|k| k.strip_suffix(".stats-mode"))
            {
                fields.insert(column.to_string(), StatsMode::parse(value)?);
            }
        }
        Ok(StatsConfig {
            default: StatsMode::parse(default_mode)
                .map_err(|e| Error::invalid(format!("option '{METADATA_STATS_MODE}': {e}")))?,
            fields,
            keep_first_n: options
                .get_i64("metadata.stats-keep-first-n-columns")
                .map_err(|e| Error::from_spec("table options", e))?
                .unwrap_or(-1),
            dense: options
                .metadata_stats_dense_store()
                .map_err(|e| Error::from_spec("table options", e))?,
        })
    }

    /// Mode of each value column, in order.
    pub(crate) fn value_modes(&self, names: &[&str]) -> Vec<StatsMode> {
        let mut counted = 0i64;
        names
            .iter()
            .map(|name| {
                let mode = match self.fields.get(*name) {
                    Some(mode) => *mode,
                    None if self.keep_first_n >= 0 && counted >= self.keep_first_n => {
                        StatsMode::None
                    }
                    None => self.default,
                };
                counted += 1;
                mode
            })
            .collect()
    }

    /// Mode of each column of an Avro file (system columns included), in order: as
    /// [`StatsConfig::value_modes`], every column counting towards
    /// `metadata.stats-keep-first-n-columns`, explicit field modes included.
    pub(crate) fn avro_modes(&self, names: &[&str]) -> Vec<StatsMode> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| match self.fields.get(*name) {
                Some(mode) => *mode,
                None if self.keep_first_n >= 0 && i as i64 >= self.keep_first_n => StatsMode::None,
                None => self.default,
            })
            .collect()
    }

    /// Mode of a system column such as `_KEY_id`.
    pub(crate) fn system_mode(&self, name: &str) -> StatsMode {
        self.fields
            .get(name)
            .copied()
            .unwrap_or(StatsMode::Truncate(SYSTEM_COLUMN_TRUNCATE))
    }
}

/// Statistics of one column in Java's `SimpleColStats` shape; `Datum::Null` bounds are
/// unknown, a `None` count too. All three unknown is Java's `NONE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColStats {
    pub min: Datum,
    pub max: Datum,
    pub null_count: Option<i64>,
}

impl ColStats {
    pub(crate) const NONE: ColStats = ColStats {
        min: Datum::Null,
        max: Datum::Null,
        null_count: None,
    };

    fn is_none(&self) -> bool {
        self.min.is_null() && self.max.is_null() && self.null_count.is_none()
    }
}

fn is_nested(ty: &DataType) -> bool {
    matches!(
        ty.kind,
        TypeKind::Array(_)
            | TypeKind::Map(..)
            | TypeKind::Multiset(_)
            | TypeKind::Row(_)
            | TypeKind::Variant
    )
}

/// Whether Java keeps any statistics (a null count at least) for a column of this type.
fn has_file_stats(ty: &DataType, format: FileFormat) -> bool {
    format != FileFormat::Parquet || !is_nested(ty)
}

/// Whether Java can derive bounds for a column of this type.
fn has_bounds(ty: &DataType, format: FileFormat) -> bool {
    match (&ty.kind, format) {
        (TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p), FileFormat::Parquet) => *p <= 6,
        (TypeKind::Blob, _) => false,
        (TypeKind::Binary(_) | TypeKind::VarBinary(_), FileFormat::Orc | FileFormat::Avro) => false,
        _ => !is_nested(ty),
    }
}

/// Running statistics of one column over every batch written to a file.
#[derive(Debug)]
pub(crate) struct ColumnStats {
    ty: DataType,
    format: FileFormat,
    /// Whether bounds are tracked (some consumer keeps them and the type has them).
    track_bounds: bool,
    nulls: i64,
    min: Datum,
    max: Datum,
    /// A NaN was seen: the column has no usable bounds.
    saw_nan: bool,
}

impl ColumnStats {
    pub(crate) fn new(ty: DataType, modes: &[StatsMode], format: FileFormat) -> ColumnStats {
        let track_bounds = has_bounds(&ty, format) && modes.iter().any(|m| m.keeps_bounds());
        ColumnStats {
            ty,
            format,
            track_bounds,
            nulls: 0,
            min: Datum::Null,
            max: Datum::Null,
            saw_nan: false,
        }
    }

    pub(crate) fn update(&mut self, array: &dyn Array) -> Result<()> {
        self.nulls += i64::try_from(array.null_count()).unwrap_or(i64::MAX);
        if !self.track_bounds || self.saw_nan {
            return Ok(());
        }
        let extremes = extreme_rows(array)?;
        if extremes.nan {
            self.saw_nan = true;
            self.min = Datum::Null;
            self.max = Datum::Null;
            return Ok(());
        }
        let Some((lo, hi)) = extremes.rows else {
            return Ok(());
        };
        let lo = datum_at(array, lo, &self.ty)?;
        let hi = datum_at(array, hi, &self.ty)?;
        if self.min.is_null() || compare_datums(&lo, &self.min) == Some(Ordering::Less) {
            self.min = lo;
        }
        if self.max.is_null() || compare_datums(&hi, &self.max) == Some(Ordering::Greater) {
            self.max = hi;
        }
        Ok(())
    }

    /// The column's stats under `mode` (Java's format stats, e.g.
    /// `ParquetSimpleStatsExtractor.toFieldStats`, followed by the collector's `convert`).
    pub(crate) fn finish(&self, mode: StatsMode) -> ColStats {
        if !has_file_stats(&self.ty, self.format) {
            return ColStats::NONE;
        }
        let count = ColStats {
            min: Datum::Null,
            max: Datum::Null,
            null_count: Some(self.nulls),
        };
        match mode {
            StatsMode::None => ColStats::NONE,
            StatsMode::Counts => count,
            StatsMode::Full | StatsMode::Truncate(_)
                if self.min.is_null() || self.max.is_null() =>
            {
                count
            }
            StatsMode::Full => ColStats {
                min: widen_zero(self.min.clone(), true),
                max: widen_zero(self.max.clone(), false),
                null_count: Some(self.nulls),
            },
            StatsMode::Truncate(length) => match truncate_max(&self.max, length) {
                Some(max) => ColStats {
                    min: widen_zero(truncate_min(&self.min, length), true),
                    max: widen_zero(max, false),
                    null_count: Some(self.nulls),
                },
                None => count,
            },
        }
    }
}

/// A zero min becomes -0.0 and a zero max +0.0 (see the module docs).
fn widen_zero(bound: Datum, is_min: bool) -> Datum {
    let zero = if is_min { -0.0 } else { 0.0 };
    match bound {
        Datum::Float(v) => Datum::Float(if v == 0.0 { zero as f32 } else { v }),
        Datum::Double(v) => Datum::Double(if v == 0.0 { zero } else { v }),
        other => other,
    }
}

/// A value ≤ `min`: strings cut to `length` characters, binaries to `length` bytes.
fn truncate_min(min: &Datum, length: usize) -> Datum {
    match min {
        Datum::String(s) => match s.char_indices().nth(length) {
            Some((end, _)) => Datum::String(s[..end].to_string()),
            None => min.clone(),
        },
        Datum::Bytes(b) if b.len() > length => Datum::Bytes(b[..length].to_vec()),
        other => other.clone(),
    }
}

/// A value ≥ `max` of at most `length` characters/bytes (Java
/// `TruncateSimpleColStatsCollector.truncateMax`); `None` when no such value exists.
///
/// Java may produce a lone surrogate when incrementing U+D7FF; we step to U+E000 instead,
/// which is equally an upper bound and valid UTF-8.
fn truncate_max(max: &Datum, length: usize) -> Option<Datum> {
    match max {
        Datum::String(s) => {
            let mut chars: Vec<char> = s.chars().take(length + 1).collect();
            if chars.len() <= length {
                return Some(max.clone());
            }
            chars.truncate(length);
            while let Some(last) = chars.pop() {
                let next = match u32::from(last) + 1 {
                    0xD800 => 0xE000,
                    n => n,
                };
                if let Some(c) = char::from_u32(next) {
                    chars.push(c);
                    return Some(Datum::String(chars.into_iter().collect()));
                }
            }
            None
        }
        Datum::Bytes(b) if b.len() > length => {
            let mut cut = b[..length].to_vec();
            while let Some(last) = cut.pop() {
                if last != u8::MAX {
                    cut.push(last + 1);
                    return Some(Datum::Bytes(cut));
                }
            }
            None
        }
        other => Some(other.clone()),
    }
}

/// Rows holding a smallest and a largest non-null value of an array.
struct Extremes {
    rows: Option<(usize, usize)>,
    /// The array holds a NaN (floats only); `rows` is then meaningless.
    nan: bool,
}

/// Positions of the extremes of `array` under Java's order.
fn extreme_rows(array: &dyn Array) -> Result<Extremes> {
    fn never<T>(_: T) -> bool {
        false
    }
    Ok(match array.data_type() {
        ArrowType::Boolean => {
            let a = array.as_boolean();
            let mut rows: Option<(usize, usize)> = None;
            for i in (0..a.len()).filter(|i| a.is_valid(*i)) {
                let (lo, hi) = rows.get_or_insert((i, i));
                if !a.value(i) && a.value(*lo) {
                    *lo = i;
                }
                if a.value(i) && !a.value(*hi) {
                    *hi = i;
                }
            }
            Extremes { rows, nan: false }
        }
        ArrowType::Int8 => primitive::<Int8Type>(array, never),
        ArrowType::Int16 => primitive::<Int16Type>(array, never),
        ArrowType::Int32 => primitive::<Int32Type>(array, never),
        ArrowType::Int64 => primitive::<Int64Type>(array, never),
        ArrowType::Date32 => primitive::<Date32Type>(array, never),
        ArrowType::Time32(TimeUnit::Millisecond) => {
            primitive::<Time32MillisecondType>(array, never)
        }
        ArrowType::Decimal128(..) => primitive::<Decimal128Type>(array, never),
        ArrowType::Float32 => primitive::<Float32Type>(array, |v: f32| v.is_nan()),
        ArrowType::Float64 => primitive::<Float64Type>(array, |v: f64| v.is_nan()),
        ArrowType::Timestamp(TimeUnit::Second, _) => primitive::<TimestampSecondType>(array, never),
        ArrowType::Timestamp(TimeUnit::Millisecond, _) => {
            primitive::<TimestampMillisecondType>(array, never)
        }
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            primitive::<TimestampMicrosecondType>(array, never)
        }
        ArrowType::Timestamp(TimeUnit::Nanosecond, _) => {
            primitive::<TimestampNanosecondType>(array, never)
        }
        ArrowType::Utf8 => {
            let a = array.as_string::<i32>();
            bytes_like(a, |i| a.value(i).as_bytes())
        }
        ArrowType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            bytes_like(a, |i| a.value(i).as_bytes())
        }
        ArrowType::Utf8View => {
            let a = array.as_string_view();
            bytes_like(a, |i| a.value(i).as_bytes())
        }
        ArrowType::Binary => {
            let a = array.as_binary::<i32>();
            bytes_like(a, |i| a.value(i))
        }
        ArrowType::LargeBinary => {
            let a = array.as_binary::<i64>();
            bytes_like(a, |i| a.value(i))
        }
        ArrowType::BinaryView => {
            let a = array.as_binary_view();
            bytes_like(a, |i| a.value(i))
        }
        ArrowType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            bytes_like(a, |i| a.value(i))
        }
        other => {
            return Err(Error::Unsupported(format!(
                "statistics of Arrow {other} columns"
            )))
        }
    })
}

fn primitive<T: ArrowPrimitiveType>(
    array: &dyn Array,
    is_nan: impl Fn(T::Native) -> bool,
) -> Extremes {
    let a = array.as_primitive::<T>();
    let values = a.values();
    let mut rows: Option<(usize, usize)> = None;
    for i in (0..a.len()).filter(|i| a.is_valid(*i)) {
        let v = values[i];
        if is_nan(v) {
            return Extremes { rows, nan: true };
        }
        let (lo, hi) = rows.get_or_insert((i, i));
        if v.compare(values[*lo]) == Ordering::Less {
            *lo = i;
        }
        if v.compare(values[*hi]) == Ordering::Greater {
            *hi = i;
        }
    }
    Extremes { rows, nan: false }
}

/// Strings and binaries: unsigned byte-wise order, a prefix first.
fn bytes_like<'a>(array: &'a dyn Array, value: impl Fn(usize) -> &'a [u8]) -> Extremes {
    let mut rows: Option<(usize, &[u8], usize, &[u8])> = None;
    for i in (0..array.len()).filter(|i| array.is_valid(*i)) {
        let v = value(i);
        match &mut rows {
            None => rows = Some((i, v, i, v)),
            Some((lo, lo_v, hi, hi_v)) => {
                if v < *lo_v {
                    (*lo, *lo_v) = (i, v);
                }
                if v > *hi_v {
                    (*hi, *hi_v) = (i, v);
                }
            }
        }
    }
    Extremes {
        rows: rows.map(|(lo, _, hi, _)| (lo, hi)),
        nan: false,
    }
}

/// Java `SimpleStatsConverter.toBinaryAllMode`: one stats field per column.
pub(crate) fn all_mode(stats: &[ColStats], types: &[DataType]) -> Result<SimpleStats> {
    let mins: Vec<Datum> = stats.iter().map(|s| s.min.clone()).collect();
    let maxs: Vec<Datum> = stats.iter().map(|s| s.max.clone()).collect();
    Ok(SimpleStats {
        min_values: encode_framed(&mins, types).map_err(|e| Error::from_spec("min stats", e))?,
        max_values: encode_framed(&maxs, types).map_err(|e| Error::from_spec("max stats", e))?,
        null_counts: Some(stats.iter().map(|s| s.null_count).collect()),
    })
}

/// Java `SimpleStatsConverter.toBinary`: with `dense`, columns without any stats are left out
/// and the rest named (the name list is `None` when no column was left out); otherwise every
/// column, unnamed.
pub(crate) fn value_stats(
    stats: Vec<ColStats>,
    fields: &[DataField],
    dense: bool,
) -> Result<(Option<Vec<String>>, SimpleStats)> {
    let types: Vec<DataType> = fields.iter().map(|f| f.data_type.clone()).collect();
    if !dense {
        return Ok((None, all_mode(&stats, &types)?));
    }
    let kept: Vec<(ColStats, &DataField)> = stats
        .into_iter()
        .zip(fields)
        .filter(|(s, _)| !s.is_none())
        .collect();
    let names =
        (kept.len() != fields.len()).then(|| kept.iter().map(|(_, f)| f.name.clone()).collect());
    let (stats, types): (Vec<ColStats>, Vec<DataType>) = kept
        .into_iter()
        .map(|(s, f)| (s, f.data_type.clone()))
        .unzip();
    Ok((names, all_mode(&stats, &types)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, StringArray};
    use tidelake_spec::types::MAX_LENGTH;

    fn s(v: &str) -> Datum {
        Datum::String(v.to_string())
    }

    #[test]
    fn parses_java_modes() {
        assert_eq!(StatsMode::parse("none").unwrap(), StatsMode::None);
        assert_eq!(StatsMode::parse("Counts").unwrap(), StatsMode::Counts);
        assert_eq!(StatsMode::parse("FULL").unwrap(), StatsMode::Full);
        assert_eq!(
            StatsMode::parse("truncate(16)").unwrap(),
            StatsMode::Truncate(16)
        );
        for bad in [
            "truncate(0)",
            "truncate()",
            "truncate(x)",
            "trunc(3)",
            " full",
        ] {
            assert!(StatsMode::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn truncation_rounds_the_max_up() {
        assert_eq!(truncate_min(&s("abcdef"), 3), s("abc"));
        assert_eq!(truncate_max(&s("abcdef"), 3), Some(s("abd")));
        assert_eq!(truncate_max(&s("abc"), 3), Some(s("abc")));
        assert_eq!(truncate_max(&s("a\u{10FFFF}z"), 2), Some(s("b")));
        assert_eq!(truncate_max(&s("\u{10FFFF}\u{10FFFF}z"), 2), None);
        assert_eq!(truncate_max(&s("\u{D7FF}xy"), 1), Some(s("\u{E000}")));
        assert_eq!(truncate_min(&s("日本語です"), 2), s("日本"));
        assert_eq!(truncate_max(&s("日本語です"), 2), Some(s("日\u{672D}")));
        let b = |v: &[u8]| Datum::Bytes(v.to_vec());
        assert_eq!(truncate_max(&b(&[1, 0xFF, 7]), 2), Some(b(&[2])));
        assert_eq!(truncate_max(&b(&[0xFF, 0xFF, 7]), 2), None);
        assert_eq!(truncate_min(&b(&[1, 2, 3]), 2), b(&[1, 2]));
    }

    #[test]
    fn nan_and_zero_handling() {
        let ty = DataType::new(TypeKind::Double);
        let mut stats = ColumnStats::new(ty.clone(), &[StatsMode::Full], FileFormat::Parquet);
        stats
            .update(&Float64Array::from(vec![Some(0.0), None, Some(3.0)]))
            .unwrap();
        let full = stats.finish(StatsMode::Full);
        assert_eq!(full.min, Datum::Double(-0.0));
        assert!(matches!(full.min, Datum::Double(v) if v.is_sign_negative()));
        assert_eq!(full.null_count, Some(1));
        stats
            .update(&Float64Array::from(vec![f64::NAN, 1.0]))
            .unwrap();
        assert_eq!(
            stats.finish(StatsMode::Full),
            ColStats {
                min: Datum::Null,
                max: Datum::Null,
                null_count: Some(1)
            }
        );
    }

    #[test]
    fn strings_without_an_upper_bound_keep_only_counts() {
        let ty = DataType::new(TypeKind::VarChar(MAX_LENGTH));
        let mut stats = ColumnStats::new(ty, &[StatsMode::Truncate(1)], FileFormat::Parquet);
        let long = "\u{10FFFF}\u{10FFFF}";
        stats
            .update(&StringArray::from(vec![Some("a"), Some(long)]))
            .unwrap();
        assert_eq!(
            stats.finish(StatsMode::Truncate(1)),
            ColStats {
                min: Datum::Null,
                max: Datum::Null,
                null_count: Some(0)
            }
        );
        assert_eq!(stats.finish(StatsMode::Full).max, s(long));
    }

    #[test]
    fn dense_store_names_only_partial_lists() {
        let fields = vec![
            DataField::new(0, "a", DataType::new(TypeKind::Int)),
            DataField::new(
                1,
                "b",
                DataType::new(TypeKind::Array(Box::new(DataType::new(TypeKind::Int)))),
            ),
        ];
        let a = ColStats {
            min: Datum::Int(1),
            max: Datum::Int(2),
            null_count: Some(0),
        };
        let (names, stats) = value_stats(vec![a.clone(), ColStats::NONE], &fields, true).unwrap();
        assert_eq!(names, Some(vec!["a".to_string()]));
        assert_eq!(stats.null_counts, Some(vec![Some(0)]));
        let two_ints = vec![fields[0].clone(), fields[0].clone()];
        let (names, _) = value_stats(vec![a.clone(), a.clone()], &two_ints, true).unwrap();
        assert_eq!(names, None);
        let (names, stats) = value_stats(vec![a, ColStats::NONE], &fields, false).unwrap();
        assert_eq!(names, None);
        assert_eq!(stats.null_counts, Some(vec![Some(0), None]));
    }

    #[test]
    fn keep_first_n_and_field_modes() {
        let mut options = Options::new();
        options.set("metadata.stats-keep-first-n-columns", "1");
        options.set("fields.c.stats-mode", "full");
        options.set("fields._KEY_a.stats-mode", "none");
        let config = StatsConfig::new(&options, "truncate(16)").unwrap();
        assert_eq!(
            config.value_modes(&["a", "b", "c"]),
            vec![StatsMode::Truncate(16), StatsMode::None, StatsMode::Full]
        );
        assert_eq!(config.system_mode("_KEY_a"), StatsMode::None);
        assert_eq!(config.system_mode("_KEY_b"), StatsMode::Truncate(128));
        assert!(config.dense);
    }
}
