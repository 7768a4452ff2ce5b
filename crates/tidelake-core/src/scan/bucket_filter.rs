//! Bucket pruning: the buckets a filter can match (Java `BucketSelectConverter` for fixed
//! buckets; for dynamic buckets through their `HASH` index, which Java does not do).
//!
//! * A fixed-bucket table (`bucket > 0`) puts a row in `bucket_of(bucket-key row,
//!   total_buckets)`. When a filter pins every bucket-key column to a finite set of values (`=`
//!   and `in`, under `and`/`or`), only the buckets of those value combinations can hold
//!   matching rows; the other buckets' files are not planned.
//! * A dynamic-bucket table (`bucket = -1`, primary key holding every partition column) puts a
//!   key in the bucket whose `HASH` index file lists the hash of its trimmed primary key
//!   (`crate::write::dynamic_bucket`). When a filter pins every trimmed primary-key column, only
//!   buckets whose index holds one of the pinned keys' hashes can hold matching rows
//!   ([`BucketFilter::key_hashes`], checked by `super::hash_index`).
//! * The key rows a filter pins ([`pinned_rows`]) also restrict point scans to those keys'
//!   rows (`crate::read::split_read`).
//!
//! Invariants (pruning never changes a result):
//! * the value set derived per column is a superset of the values any matching row has there
//!   (a leaf: its own values; `and`: the intersection of the children that pin the column;
//!   `or`: the union when every child pins it, else unpinned), so the combinations cover every
//!   matching row;
//! * only types whose equal values have equal BinaryRow bytes are pinned (booleans, integers,
//!   dates, VARCHAR/STRING, VARBINARY/BYTES); floats (`-0.0 = 0.0`), decimals, CHAR/BINARY
//!   padding and timestamps are left unpinned;
//! * a file written under a schema whose key types differ from the filter's schema is always
//!   kept (its bucket was hashed from other bytes), as is every file of another bucket mode
//!   (unaware, postpone, cross-partition: a key may live in any partition's any bucket) and
//!   every bucket of a dynamic-bucket table without a `HASH` index file.

use std::collections::BTreeSet;

use tidelake_spec::binary_row::encode_row;
use tidelake_spec::bucket::{bucket_of_hash, hash_row};
use tidelake_spec::datum::Datum;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use super::predicate::{BoundPredicate, CompareOp, LeafTest};

/// Most key combinations a filter may pin before pruning is not worth it.
const MAX_COMBINATIONS: usize = 4096;

/// How the table's rows find their bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `bucket > 0`: the hash of the bucket key modulo the bucket count.
    Fixed,
    /// `bucket = -1` with the partition in the key: the `HASH` index.
    Dynamic,
}

/// The key rows a filter pins, hashed, for selecting each partition's buckets.
#[derive(Debug)]
pub(crate) struct BucketFilter {
    mode: Mode,
    /// The hashed fields of the filter's schema (bucket key, or trimmed primary key), in key
    /// order.
    fields: Vec<DataField>,
    /// Java `BinaryRow.hashCode` of each pinned key row; `None` when a value cannot be
    /// encoded (nothing is pruned then).
    hashes: Option<Vec<i32>>,
}

impl BucketFilter {
    /// The filter's bucket selection on `schema`; `None` when it selects every bucket (no
    /// filter, a bucket mode without pruning, or some key column not pinned).
    pub(crate) fn new(
        schema: &TableSchema,
        filter: Option<&BoundPredicate>,
    ) -> Option<BucketFilter> {
        let filter = filter?;
        let bucket = schema.options().bucket().ok()?;
        let (mode, keys) = if bucket > 0 {
            (Mode::Fixed, schema.bucket_keys())
        } else if bucket == -1
            && !schema.primary_keys.is_empty()
            && !schema.cross_partition_update()
        {
            (Mode::Dynamic, schema.trimmed_primary_keys())
        } else {
            return None;
        };
        let fields: Vec<DataField> = keys
            .iter()
            .map(|k| schema.field(k).cloned())
            .collect::<Option<_>>()?;
        let rows = pinned_rows(&fields, filter)?;
        let types: Vec<DataType> = fields.iter().map(|f| f.data_type.clone()).collect();
        let hashes = rows
            .iter()
            .map(|row| encode_row(row, &types).ok().map(|bytes| hash_row(&bytes)))
            .collect();
        Some(BucketFilter {
            mode,
            fields,
            hashes,
        })
    }

    /// The buckets of a fixed-bucket partition with `total_buckets` buckets that may hold
    /// matching rows; `None` for all of them (not a fixed-bucket table, no fixed bucket count,
    /// or a value that cannot be encoded).
    pub(crate) fn selected(&self, total_buckets: i32) -> Option<BTreeSet<i32>> {
        if self.mode != Mode::Fixed || total_buckets <= 0 {
            return None;
        }
        let hashes = self.hashes.as_ref()?;
        Some(
            hashes
                .iter()
                .map(|h| bucket_of_hash(*h, total_buckets))
                .collect(),
        )
    }

    /// The trimmed primary-key hashes of the pinned keys of a dynamic-bucket table: a bucket
    /// whose `HASH` index holds none of them holds no matching row. `None` for other tables
    /// (or a value that cannot be encoded).
    pub(crate) fn key_hashes(&self) -> Option<&[i32]> {
        match self.mode {
            Mode::Dynamic => self.hashes.as_deref(),
            Mode::Fixed => None,
        }
    }

    /// Whether files written under `file_schema` were bucketed from the same key bytes.
    pub(crate) fn same_key_types(&self, file_schema: &TableSchema) -> bool {
        let keys = match self.mode {
            Mode::Fixed => file_schema.bucket_keys(),
            Mode::Dynamic => file_schema.trimmed_primary_keys(),
        };
        keys.len() == self.fields.len()
            && keys.iter().zip(&self.fields).all(|(k, f)| {
                file_schema
                    .field(k)
                    .is_some_and(|g| g.id == f.id && g.data_type.kind == f.data_type.kind)
            })
    }
}

/// The rows over `fields` that `filter` pins: every combination of the values it allows each
/// field ([`pinned`]), a superset of the `fields` values of any row it matches; `None` when a
/// field is not pinned, is of a type whose equal values may differ in bytes
/// ([`hashes_by_value`]), or there are more than [`MAX_COMBINATIONS`] combinations. Values
/// are of the fields' types (bound filters hold them so), without nulls.
pub(crate) fn pinned_rows(
    fields: &[DataField],
    filter: &BoundPredicate,
) -> Option<Vec<Vec<Datum>>> {
    if fields.is_empty() || !fields.iter().all(|f| hashes_by_value(&f.data_type)) {
        return None;
    }
    let mut rows: Vec<Vec<Datum>> = vec![Vec::new()];
    for f in fields {
        let values = pinned(filter, f.id)?;
        if rows.len().saturating_mul(values.len()) > MAX_COMBINATIONS {
            return None;
        }
        rows = rows
            .iter()
            .flat_map(|row| {
                values
                    .iter()
                    .map(move |v| [row.as_slice(), std::slice::from_ref(v)].concat())
            })
            .collect();
    }
    Some(rows)
}

/// Whether equal values of type `t` always have equal BinaryRow bytes.
fn hashes_by_value(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::Boolean
            | TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Date
            | TypeKind::VarChar(_)
            | TypeKind::VarBinary(_)
    )
}

/// The values column `id` can have in a row `filter` matches; `None` when unbounded.
fn pinned(filter: &BoundPredicate, id: i32) -> Option<Vec<Datum>> {
    match filter {
        BoundPredicate::Leaf(leaf) if leaf.column.id == id => match &leaf.test {
            LeafTest::Compare {
                op: CompareOp::Eq,
                value,
            } => Some(without_nulls(std::slice::from_ref(value))),
            LeafTest::In {
                values,
                negated: false,
            } if values.len() <= MAX_COMBINATIONS => Some(without_nulls(values)),
            _ => None,
        },
        BoundPredicate::Leaf(_) => None,
        BoundPredicate::And(children) => children
            .iter()
            .filter_map(|c| pinned(c, id))
            .reduce(|a, b| a.into_iter().filter(|v| b.contains(v)).collect()),
        BoundPredicate::Or(children) => {
            let mut union: Vec<Datum> = Vec::new();
            for c in children {
                for v in pinned(c, id)? {
                    if !union.contains(&v) {
                        union.push(v);
                    }
                }
            }
            Some(union)
        }
    }
}

/// `values` without nulls (a null never equals anything), each once.
fn without_nulls(values: &[Datum]) -> Vec<Datum> {
    let mut out: Vec<Datum> = Vec::new();
    for v in values.iter().filter(|v| !v.is_null()) {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::predicate::{BoundColumn, BoundLeaf};

    fn leaf(id: i32, test: LeafTest) -> BoundPredicate {
        let column = BoundColumn {
            name: format!("c{id}"),
            id,
            data_type: DataType::new(TypeKind::BigInt),
        };
        BoundPredicate::Leaf(BoundLeaf { column, test })
    }

    fn eq(id: i32, v: i64) -> BoundPredicate {
        leaf(
            id,
            LeafTest::Compare {
                op: CompareOp::Eq,
                value: Datum::BigInt(v),
            },
        )
    }

    fn is_in(id: i32, vs: &[i64]) -> BoundPredicate {
        leaf(
            id,
            LeafTest::In {
                values: vs
                    .iter()
                    .map(|v| Datum::BigInt(*v))
                    .chain([Datum::Null])
                    .collect(),
                negated: false,
            },
        )
    }

    fn big(vs: &[i64]) -> Option<Vec<Datum>> {
        Some(vs.iter().map(|v| Datum::BigInt(*v)).collect())
    }

    #[test]
    fn and_intersects_or_unites_and_anything_else_unpins() {
        use BoundPredicate::{And, Or};
        assert_eq!(pinned(&eq(1, 5), 1), big(&[5]));
        assert_eq!(pinned(&eq(1, 5), 2), None);
        assert_eq!(pinned(&is_in(1, &[3, 4, 3]), 1), big(&[3, 4]));
        assert_eq!(
            pinned(
                &And(vec![is_in(1, &[3, 4]), eq(2, 1), is_in(1, &[4, 5])]),
                1
            ),
            big(&[4])
        );
        assert_eq!(pinned(&And(vec![eq(1, 3), eq(1, 4)]), 1), big(&[]));
        assert_eq!(
            pinned(&Or(vec![eq(1, 3), is_in(1, &[4, 5])]), 1),
            big(&[3, 4, 5])
        );
        assert_eq!(pinned(&Or(vec![eq(1, 3), eq(2, 4)]), 1), None);
        assert_eq!(
            pinned(
                &leaf(
                    1,
                    LeafTest::In {
                        values: vec![Datum::BigInt(1)],
                        negated: true
                    }
                ),
                1
            ),
            None
        );
        assert_eq!(
            pinned(
                &leaf(
                    1,
                    LeafTest::Compare {
                        op: CompareOp::Ge,
                        value: Datum::BigInt(1)
                    }
                ),
                1
            ),
            None
        );
    }
}
