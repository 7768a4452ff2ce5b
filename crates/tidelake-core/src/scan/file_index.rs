//! Data-file indexes (`file-index.*`; Java `FileIndexPredicate`, `FileIndexEvaluator`) in
//! planning and lookups: a file whose indexes prove that no row matches the filter is not read.
//!
//! Each index answers a leaf as Java's `FileIndexReader` does ([`Verdict`]): a bloom filter
//! rules a file out for `=` / `in` values it does not hold; a bitmap index gives the rows of
//! `=`, `!=`, `in`, `not in`, `is null`, `is not null`; bsi and range-bitmap indexes those
//! and the rows of `<`, `<=`, `>`, `>=`, `between`. Several indexes on a column are intersected; `and`
//! intersects its children, `or` unites them; a file is skipped when the result is no row.
//!
//! Invariants (skipping never changes a result):
//! * every verdict's rows are a superset of the rows the leaf holds on (row sets of `!=` and
//!   `not in` include the null rows, as Java's; strict comparisons of timestamps that indexes
//!   key truncated to millis or micros are made inclusive);
//! * a leaf's column is found by field id in the schema the file was written with, and consulted
//!   only when its type there is the leaf's type (keys and hashes depend on the type);
//! * primary-key tables consult indexes with the filter restricted to key columns (every
//!   version of a key has the key's values, so a file without the key holds no version of it).
//!
//! Index files are immutable: with a read cache on the table's I/O they are decoded once.

use std::sync::Arc;

use roaring::RoaringBitmap;
use tidelake_spec::datum::Datum;
use tidelake_spec::file_index::bitmap::{bitmap_key, BitmapIndex, BITMAP};
use tidelake_spec::file_index::bsi::{bsi_value, BsiIndex, BsiOp, BSI};
use tidelake_spec::file_index::range_bitmap::{range_key, RangeBitmapIndex, RANGE_BITMAP};
use tidelake_spec::file_index::{fast_hash, FileIndex, BLOOM_FILTER};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataType, TypeKind};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::predicate::{BoundLeaf, BoundPredicate, CompareOp, LeafTest};
use crate::scan::split::FileIndexRef;

/// The decoded index `at`.
pub(crate) async fn load(io: &FileIO, at: &FileIndexRef) -> Result<Arc<FileIndex>> {
    let (bytes, what) = match at {
        FileIndexRef::Embedded(bytes) => {
            return FileIndex::decode(bytes)
                .map(Arc::new)
                .map_err(|e| Error::from_spec("embedded file index", e));
        }
        FileIndexRef::File(path) => (path, io.display(path)),
    };
    let cache = io.read_cache();
    if let Some(index) = cache.and_then(|c| c.get::<FileIndex>(bytes)) {
        return Ok(index);
    }
    let raw = io.read(bytes).await?;
    let index = Arc::new(FileIndex::decode(&raw).map_err(|e| Error::from_spec(what, e))?);
    if let Some(c) = cache {
        c.insert(bytes, index.clone(), raw.len());
    }
    Ok(index)
}

/// Whether `filter` has a leaf worth loading indexes for: an `=` / `in` leaf, or with
/// `beyond_points` (the table asks for bitmap, bsi or range-bitmap indexes) any leaf but
/// `starts with`. Without it a range filter does not load bloom-filter index files, which
/// cannot answer it.
pub(crate) fn has_index_leaf(filter: &BoundPredicate, beyond_points: bool) -> bool {
    match filter {
        BoundPredicate::And(c) | BoundPredicate::Or(c) => {
            c.iter().any(|p| has_index_leaf(p, beyond_points))
        }
        BoundPredicate::Leaf(leaf) => match &leaf.test {
            LeafTest::Compare {
                op: CompareOp::Eq, ..
            }
            | LeafTest::In { negated: false, .. } => true,
            LeafTest::StartsWith { .. } => false,
            _ => beyond_points,
        },
    }
}

/// Whether rows matching `filter` may be in a file with `index` written under `file_schema`.
pub(crate) fn may_match(
    filter: &BoundPredicate,
    index: &FileIndex,
    file_schema: &TableSchema,
) -> Result<bool> {
    Ok(evaluate(filter, index, file_schema)?.remains())
}

/// What the indexes say of a file's rows (Java `FileIndexResult`).
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Any row may match.
    Remain,
    /// Only these rows may match (none: the file is skipped).
    Rows(RoaringBitmap),
}

impl Verdict {
    /// No row matches.
    fn skip() -> Verdict {
        Verdict::Rows(RoaringBitmap::new())
    }

    fn remains(&self) -> bool {
        !matches!(self, Verdict::Rows(rows) if rows.is_empty())
    }

    fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Remain, v) | (v, Verdict::Remain) => v,
            (Verdict::Rows(a), Verdict::Rows(b)) => Verdict::Rows(a & b),
        }
    }

    fn or(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Rows(a), Verdict::Rows(b)) => Verdict::Rows(a | b),
            _ => Verdict::Remain,
        }
    }
}

fn evaluate(filter: &BoundPredicate, index: &FileIndex, schema: &TableSchema) -> Result<Verdict> {
    match filter {
        BoundPredicate::And(children) => {
            let mut verdict = Verdict::Remain;
            for child in children {
                verdict = verdict.and(evaluate(child, index, schema)?);
                if !verdict.remains() {
                    break;
                }
            }
            Ok(verdict)
        }
        BoundPredicate::Or(children) => {
            let mut verdict = Verdict::skip();
            for child in children {
                verdict = verdict.or(evaluate(child, index, schema)?);
                if verdict == Verdict::Remain {
                    break;
                }
            }
            Ok(verdict)
        }
        BoundPredicate::Leaf(leaf) => {
            let Some(field) = schema
                .field_by_id(leaf.column.id)
                .filter(|f| f.data_type.kind == leaf.column.data_type.kind)
            else {
                return Ok(Verdict::Remain);
            };
            let Some(indexes) = index.columns.get(&field.name) else {
                return Ok(Verdict::Remain);
            };
            let mut verdict = Verdict::Remain;
            for (kind, body) in indexes {
                let ty = &field.data_type;
                let what =
                    |e| Error::from_spec(format!("{kind} index of column {}", field.name), e);
                verdict = verdict.and(match kind.as_str() {
                    BLOOM_FILTER => bloom(leaf, index, &field.name, ty),
                    BITMAP => bitmap(leaf, &BitmapIndex::decode(body, ty).map_err(what)?, ty)
                        .map_err(what)?,
                    BSI => ordered(leaf, &BsiIndex::decode(body).map_err(what)?, ty),
                    RANGE_BITMAP => {
                        ordered(leaf, &RangeBitmapIndex::decode(body, ty).map_err(what)?, ty)
                    }
                    _ => Verdict::Remain,
                });
                if !verdict.remains() {
                    break;
                }
            }
            Ok(verdict)
        }
    }
}

/// The values of an `=` / `in` leaf (`negated`: of `!=` / `not in`); callers skip nulls.
fn point_values(test: &LeafTest) -> Option<(&[Datum], bool)> {
    let (values, negated) = match test {
        LeafTest::Compare {
            op: CompareOp::Eq,
            value,
        } => (std::slice::from_ref(value), false),
        LeafTest::Compare {
            op: CompareOp::Ne,
            value,
        } => (std::slice::from_ref(value), true),
        LeafTest::In { values, negated } => (values.as_slice(), *negated),
        _ => return None,
    };
    Some((values, negated))
}

/// Java `BloomFilterFileIndex.Reader`: skip when no `=` / `in` value may be in the file.
fn bloom(leaf: &BoundLeaf, index: &FileIndex, column: &str, ty: &DataType) -> Verdict {
    match point_values(&leaf.test) {
        Some((values, false)) => {
            let may_hold = values.iter().filter(|v| !v.is_null()).any(|v| {
                fast_hash(v, ty)
                    .and_then(|h| index.bloom_may_contain(column, h))
                    .unwrap_or(true)
            });
            if may_hold {
                Verdict::Remain
            } else {
                Verdict::skip()
            }
        }
        _ => Verdict::Remain,
    }
}

/// The rows `0..rows` not in `set`.
fn complement(set: &RoaringBitmap, rows: u32) -> RoaringBitmap {
    let mut all = RoaringBitmap::new();
    all.insert_range(0..rows);
    all - set
}

/// Java `BitmapFileIndex.Reader`.
fn bitmap(
    leaf: &BoundLeaf,
    index: &BitmapIndex,
    ty: &DataType,
) -> tidelake_spec::error::Result<Verdict> {
    if let LeafTest::IsNull { negated } = leaf.test {
        let nulls = index.rows(None)?;
        return Ok(Verdict::Rows(if negated {
            complement(&nulls, index.row_count())
        } else {
            nulls
        }));
    }
    let Some((values, negated)) = point_values(&leaf.test) else {
        return Ok(Verdict::Remain);
    };
    let mut rows = RoaringBitmap::new();
    for v in values.iter().filter(|v| !v.is_null()) {
        let Some(key) = bitmap_key(v, ty) else {
            return Ok(Verdict::Remain);
        };
        rows |= index.rows(Some(&key))?;
    }
    Ok(Verdict::Rows(if negated {
        complement(&rows, index.row_count())
    } else {
        rows
    }))
}

/// What the ordered indexes (bsi, range-bitmap) answer: rows by comparison with a literal.
trait Ordered {
    fn row_count(&self) -> u32;
    fn not_null(&self) -> RoaringBitmap;
    /// The rows whose value `op` `v` (`None`: the index cannot tell).
    fn compare(&self, op: BsiOp, v: &Datum, ty: &DataType) -> Option<RoaringBitmap>;
}

impl Ordered for BsiIndex {
    fn row_count(&self) -> u32 {
        BsiIndex::row_count(self)
    }
    fn not_null(&self) -> RoaringBitmap {
        BsiIndex::not_null(self)
    }
    fn compare(&self, op: BsiOp, v: &Datum, ty: &DataType) -> Option<RoaringBitmap> {
        BsiIndex::compare(self, op, bsi_value(v, ty)?)
    }
}

impl Ordered for RangeBitmapIndex {
    fn row_count(&self) -> u32 {
        RangeBitmapIndex::row_count(self)
    }
    fn not_null(&self) -> RoaringBitmap {
        RangeBitmapIndex::not_null(self)
    }
    fn compare(&self, op: BsiOp, v: &Datum, ty: &DataType) -> Option<RoaringBitmap> {
        Some(RangeBitmapIndex::compare(self, op, &range_key(v, ty)?))
    }
}

/// Java `BitSliceIndexBitmapFileIndex.Reader` and `RangeBitmapFileIndex.Reader` (with
/// `between` as `>=` and `<=`).
fn ordered(leaf: &BoundLeaf, index: &impl Ordered, ty: &DataType) -> Verdict {
    // timestamps are keyed by millis (precision <= 3) or micros: where the column's values or
    // the literal have more, a strict comparison of keys could drop a matching row
    let truncated = |v: &Datum| match (&ty.kind, v) {
        (
            TypeKind::Timestamp(p) | TypeKind::LocalZonedTimestamp(p),
            Datum::Timestamp { nanos, .. },
        ) => *p > 6 || *nanos % if *p <= 3 { 1_000_000 } else { 1_000 } != 0,
        _ => false,
    };
    let compare = |op: BsiOp, v: &Datum| -> Option<RoaringBitmap> {
        let op = match op {
            BsiOp::Lt if truncated(v) => BsiOp::Le,
            BsiOp::Gt if truncated(v) => BsiOp::Ge,
            op => op,
        };
        index.compare(op, v, ty)
    };
    let rows = match &leaf.test {
        LeafTest::IsNull { negated: false } => {
            Some(complement(&index.not_null(), index.row_count()))
        }
        LeafTest::IsNull { negated: true } => Some(index.not_null()),
        LeafTest::Compare { op, value } if !matches!(op, CompareOp::Eq | CompareOp::Ne) => {
            let op = match op {
                CompareOp::Lt => BsiOp::Lt,
                CompareOp::Le => BsiOp::Le,
                CompareOp::Gt => BsiOp::Gt,
                _ => BsiOp::Ge,
            };
            compare(op, value)
        }
        LeafTest::Between { lower, upper } => compare(BsiOp::Ge, lower)
            .zip(compare(BsiOp::Le, upper))
            .map(|(a, b)| a & b),
        test => point_values(test).and_then(|(values, negated)| {
            let mut rows = RoaringBitmap::new();
            for v in values.iter().filter(|v| !v.is_null()) {
                rows |= compare(BsiOp::Eq, v)?;
            }
            Some(if negated {
                index.not_null() - rows
            } else {
                rows
            })
        }),
    };
    rows.map_or(Verdict::Remain, Verdict::Rows)
}

#[cfg(test)]
mod tests {
    use tidelake_spec::datum::Datum;
    use tidelake_spec::file_index::{BloomFilter64, BLOOM_FILTER};
    use tidelake_spec::types::{DataType, TypeKind};

    use super::*;
    use crate::scan::predicate::{BoundColumn, BoundLeaf};

    fn leaf(id: i32, kind: TypeKind, test: LeafTest) -> BoundPredicate {
        BoundPredicate::Leaf(BoundLeaf {
            column: BoundColumn {
                name: format!("now{id}"),
                id,
                data_type: DataType::not_null(kind),
            },
            test,
        })
    }

    fn eq(id: i32, v: i64) -> BoundPredicate {
        leaf(
            id,
            TypeKind::BigInt,
            LeafTest::Compare {
                op: CompareOp::Eq,
                value: Datum::BigInt(v),
            },
        )
    }

    #[test]
    fn blooms_rule_out_files_only_for_point_leaves_on_their_column() {
        let ty = DataType::not_null(TypeKind::BigInt);
        let mut bloom = BloomFilter64::new(10, 0.001).unwrap();
        for v in 0..10 {
            bloom.add_hash(fast_hash(&Datum::BigInt(v), &ty).unwrap());
        }
        let mut index = FileIndex::default();
        index
            .columns
            .entry("then1".into())
            .or_default()
            .insert(BLOOM_FILTER.into(), bloom.encode());
        // the file's schema names field 1 "then1" (renamed since); field 2 has no index
        let schema = TableSchema::from_json(
            br#"{"version": 3, "id": 0, "fields": [
                {"id": 1, "name": "then1", "type": "BIGINT NOT NULL"},
                {"id": 2, "name": "other", "type": "BIGINT"}],
            "highestFieldId": 2, "partitionKeys": [], "primaryKeys": [], "options": {},
            "timeMillis": 0}"#,
        )
        .unwrap();
        assert!(may_match(&eq(1, 3), &index, &schema).unwrap());
        assert!(!may_match(&eq(1, 1_000_003), &index, &schema).unwrap());
        assert!(
            may_match(&eq(2, 1_000_003), &index, &schema).unwrap(),
            "no index on the column"
        );
        let absent_in = leaf(
            1,
            TypeKind::BigInt,
            LeafTest::In {
                values: vec![
                    Datum::Null,
                    Datum::BigInt(1_000_001),
                    Datum::BigInt(1_000_002),
                ],
                negated: false,
            },
        );
        assert!(!may_match(&absent_in, &index, &schema).unwrap());
        assert!(!may_match(
            &BoundPredicate::And(vec![eq(2, 5), eq(1, 1_000_003)]),
            &index,
            &schema
        )
        .unwrap());
        assert!(may_match(
            &BoundPredicate::Or(vec![eq(2, 5), eq(1, 1_000_003)]),
            &index,
            &schema
        )
        .unwrap());
        let other_type = leaf(
            1,
            TypeKind::Int,
            LeafTest::Compare {
                op: CompareOp::Eq,
                value: Datum::Int(1_000_003),
            },
        );
        assert!(
            may_match(&other_type, &index, &schema).unwrap(),
            "hashes depend on the type"
        );
        let range = leaf(
            1,
            TypeKind::BigInt,
            LeafTest::Compare {
                op: CompareOp::Gt,
                value: Datum::BigInt(1_000_003),
            },
        );
        assert!(may_match(&range, &index, &schema).unwrap());
        assert!(has_index_leaf(&range, true) && !has_index_leaf(&range, false));
        assert!(has_index_leaf(
            &BoundPredicate::Or(vec![range, eq(1, 0)]),
            false
        ));
    }

    fn test(id: i32, kind: TypeKind, test: LeafTest) -> BoundPredicate {
        leaf(id, kind, test)
    }

    fn cmp(id: i32, op: CompareOp, value: Datum) -> BoundPredicate {
        let kind = match value {
            Datum::Int(_) => TypeKind::Int,
            Datum::String(_) => TypeKind::VarChar(100),
            _ => TypeKind::Timestamp(6),
        };
        test(id, kind, LeafTest::Compare { op, value })
    }

    #[test]
    fn bitmaps_and_bit_slices_answer_with_rows() {
        use tidelake_spec::file_index::bitmap::{
            bitmap_key, BitmapColumn, BitmapIndexWriter, BITMAP,
        };
        use tidelake_spec::file_index::bsi::{bsi_value, BsiIndexWriter, BSI};
        use tidelake_spec::file_index::range_bitmap::{
            range_key, RangeBitmapColumn, RangeBitmapWriter,
        };
        // rows: s = a b a null c, n = 1 5 -3 null 9, ts (micros) = 10 20 30 40 50
        let s_ty = DataType::new(TypeKind::VarChar(100));
        let n_ty = DataType::new(TypeKind::Int);
        let ts_ty = DataType::new(TypeKind::Timestamp(6));
        let s: Vec<Datum> = ["a", "b", "a", "", "c"]
            .iter()
            .map(|v| {
                if v.is_empty() {
                    Datum::Null
                } else {
                    Datum::String(v.to_string())
                }
            })
            .collect();
        let n = [
            Datum::Int(1),
            Datum::Int(5),
            Datum::Int(-3),
            Datum::Null,
            Datum::Int(9),
        ];
        let ts: Vec<Datum> = (1..=5)
            .map(|i| Datum::Timestamp {
                millis: 0,
                nanos: i * 10_000,
            })
            .collect();
        let column = BitmapColumn {
            column: "s".into(),
            version: 2,
            index_block_size: 16384,
        };
        let mut bitmap = BitmapIndexWriter::new(&s_ty, &column).unwrap();
        s.iter().for_each(|v| bitmap.add(bitmap_key(v, &s_ty)));
        let mut bsi = BsiIndexWriter::new(&n_ty, "n").unwrap();
        n.iter().for_each(|v| bsi.add(bsi_value(v, &n_ty)));
        let range_column = RangeBitmapColumn {
            column: "s".into(),
            chunk_size: None,
        };
        let mut range = RangeBitmapWriter::new(&s_ty, &range_column).unwrap();
        s.iter().for_each(|v| range.add(range_key(v, &s_ty)));
        let mut ts_bsi = BsiIndexWriter::new(&ts_ty, "ts").unwrap();
        ts.iter().for_each(|v| ts_bsi.add(bsi_value(v, &ts_ty)));
        let mut index = FileIndex::default();
        for (col, kind, body) in [
            ("s", BITMAP, bitmap.encode().unwrap()),
            ("s", RANGE_BITMAP, range.encode().unwrap()),
            ("n", BSI, bsi.encode().unwrap()),
            ("ts", BSI, ts_bsi.encode().unwrap()),
        ] {
            index
                .columns
                .entry(col.into())
                .or_default()
                .insert(kind.into(), body);
        }
        let schema = TableSchema::from_json(
            br#"{"version": 3, "id": 0, "fields": [
                {"id": 1, "name": "s", "type": "VARCHAR(100)"},
                {"id": 2, "name": "n", "type": "INT"},
                {"id": 3, "name": "ts", "type": "TIMESTAMP(6)"}],
            "highestFieldId": 3, "partitionKeys": [], "primaryKeys": [], "options": {},
            "timeMillis": 0}"#,
        )
        .unwrap();
        let may = |p: &BoundPredicate| may_match(p, &index, &schema).unwrap();
        let str_ = |v: &str| Datum::String(v.into());
        assert!(may(&cmp(1, CompareOp::Eq, str_("b"))));
        assert!(!may(&cmp(1, CompareOp::Eq, str_("z"))));
        assert!(may(&cmp(1, CompareOp::Ne, str_("a"))));
        let string = TypeKind::VarChar(100);
        assert!(!may(&test(
            1,
            string.clone(),
            LeafTest::In {
                values: vec![Datum::Null, str_("x"), str_("y")],
                negated: false,
            }
        )));
        assert!(may(&test(
            1,
            string.clone(),
            LeafTest::IsNull { negated: false }
        )));
        // ranges on s: the range-bitmap answers, the bitmap beside it does not
        assert!(may(&cmp(1, CompareOp::Gt, str_("b"))));
        assert!(!may(&cmp(1, CompareOp::Gt, str_("c"))));
        assert!(!may(&cmp(1, CompareOp::Lt, str_("a"))));
        assert!(may(&cmp(1, CompareOp::Le, str_("a"))));
        assert!(!may(&test(
            1,
            string.clone(),
            LeafTest::Between {
                lower: str_("bb"),
                upper: str_("bz"),
            }
        )));
        // row-level: s = 'b' is row 1, n = 9 is row 4: no row has both, each alone matches
        let and = |a, b| BoundPredicate::And(vec![a, b]);
        let or = |a, b| BoundPredicate::Or(vec![a, b]);
        assert!(may(&cmp(2, CompareOp::Eq, Datum::Int(9))));
        assert!(!may(&and(
            cmp(1, CompareOp::Eq, str_("b")),
            cmp(2, CompareOp::Eq, Datum::Int(9))
        )));
        assert!(may(&or(
            cmp(1, CompareOp::Eq, str_("b")),
            cmp(2, CompareOp::Eq, Datum::Int(9))
        )));
        assert!(may(&and(
            cmp(1, CompareOp::Eq, str_("a")),
            cmp(2, CompareOp::Lt, Datum::Int(0))
        )));
        assert!(!may(&and(
            cmp(1, CompareOp::Eq, str_("a")),
            cmp(2, CompareOp::Gt, Datum::Int(5))
        )));
        // ranges on the bsi column
        assert!(!may(&cmp(2, CompareOp::Gt, Datum::Int(9))));
        assert!(may(&cmp(2, CompareOp::Ge, Datum::Int(9))));
        assert!(!may(&cmp(2, CompareOp::Lt, Datum::Int(-3))));
        assert!(!may(&cmp(2, CompareOp::Eq, Datum::Int(2))));
        assert!(!may(&test(
            2,
            TypeKind::Int,
            LeafTest::Between {
                lower: Datum::Int(6),
                upper: Datum::Int(8),
            }
        )));
        assert!(may(&test(
            2,
            TypeKind::Int,
            LeafTest::IsNull { negated: false }
        )));
        // timestamps: keys are micros; a literal between two micros compares inclusively
        let at = |nanos| Datum::Timestamp { millis: 0, nanos };
        assert!(!may(&cmp(3, CompareOp::Gt, at(50_000))));
        assert!(
            may(&cmp(3, CompareOp::Gt, at(49_999))),
            "49.999 µs keys as 49"
        );
        assert!(!may(&cmp(3, CompareOp::Lt, at(9_000))));
        // an index of another type of the column answers nothing
        assert!(may(&test(
            2,
            TypeKind::BigInt,
            LeafTest::Compare {
                op: CompareOp::Eq,
                value: Datum::BigInt(2),
            }
        )));
    }
}
