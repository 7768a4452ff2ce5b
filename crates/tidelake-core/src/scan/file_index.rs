//! Data-file indexes (`file-index.*`; Java `FileIndexEvaluator`) in planning and lookups: a file
//! whose bloom filter on a column rules out every value an `=` / `in` filter allows there holds
//! no matching row and is not read.
//!
//! Invariants (skipping never changes a result):
//! * only `=` and `in` leaves consult an index; `and` rules a file out when any child does, `or`
//!   only when every child does, anything else never;
//! * a leaf's column is found by field id in the schema the file was written with, and consulted
//!   only when its type there is the leaf's type (hashes depend on the type);
//! * primary-key tables consult indexes with the filter restricted to key columns (every
//!   version of a key has the key's values, so a file without the key holds no version of it).
//!
//! Index files are immutable: with a read cache on the table's I/O they are decoded once.

use std::sync::Arc;

use tidelake_spec::file_index::{fast_hash, FileIndex};
use tidelake_spec::schema::TableSchema;

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::predicate::{BoundPredicate, CompareOp, LeafTest};
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

/// Whether `filter` has an `=` or `in` leaf, the only ones an index can answer.
pub(crate) fn has_point_leaf(filter: &BoundPredicate) -> bool {
    match filter {
        BoundPredicate::And(c) | BoundPredicate::Or(c) => c.iter().any(has_point_leaf),
        BoundPredicate::Leaf(leaf) => matches!(
            leaf.test,
            LeafTest::Compare {
                op: CompareOp::Eq,
                ..
            } | LeafTest::In { negated: false, .. }
        ),
    }
}

/// Whether rows matching `filter` may be in a file with `index` written under `file_schema`.
pub(crate) fn may_match(
    filter: &BoundPredicate,
    index: &FileIndex,
    file_schema: &TableSchema,
) -> bool {
    match filter {
        BoundPredicate::And(c) => c.iter().all(|p| may_match(p, index, file_schema)),
        BoundPredicate::Or(c) => c.iter().any(|p| may_match(p, index, file_schema)),
        BoundPredicate::Leaf(leaf) => {
            let values = match &leaf.test {
                LeafTest::Compare {
                    op: CompareOp::Eq,
                    value,
                } => std::slice::from_ref(value),
                LeafTest::In {
                    values,
                    negated: false,
                } => values.as_slice(),
                _ => return true,
            };
            let Some(field) = file_schema
                .field_by_id(leaf.column.id)
                .filter(|f| f.data_type.kind == leaf.column.data_type.kind)
            else {
                return true;
            };
            values.iter().filter(|v| !v.is_null()).any(|v| {
                fast_hash(v, &field.data_type)
                    .and_then(|h| index.bloom_may_contain(&field.name, h))
                    .unwrap_or(true)
            })
        }
    }
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
        assert!(may_match(&eq(1, 3), &index, &schema));
        assert!(!may_match(&eq(1, 1_000_003), &index, &schema));
        assert!(
            may_match(&eq(2, 1_000_003), &index, &schema),
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
        assert!(!may_match(&absent_in, &index, &schema));
        assert!(!may_match(
            &BoundPredicate::And(vec![eq(2, 5), eq(1, 1_000_003)]),
            &index,
            &schema
        ));
        assert!(may_match(
            &BoundPredicate::Or(vec![eq(2, 5), eq(1, 1_000_003)]),
            &index,
            &schema
        ));
        let other_type = leaf(
            1,
            TypeKind::Int,
            LeafTest::Compare {
                op: CompareOp::Eq,
                value: Datum::Int(1_000_003),
            },
        );
        assert!(
            may_match(&other_type, &index, &schema),
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
        assert!(may_match(&range, &index, &schema) && !has_point_leaf(&range));
        assert!(has_point_leaf(&BoundPredicate::Or(vec![range, eq(1, 0)])));
    }
}
