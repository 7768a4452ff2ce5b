//! Skipping the Parquet pages no matching row can be in, by the page index (column index
//! min/max/null counts, offset index row ranges), as a `RowSelection` per row group.
//!
//! Invariants (pruning never drops a matching row):
//! * the caller restricts the filter to the columns pages may be pruned by (primary-key tables:
//!   key columns only, whose every version of a key has the same value, so pruning before the
//!   merge keeps all versions of a matching key or none);
//! * per consulted column, a page is kept when the filter may match its statistics with every
//!   other column unknown; a matching row lies in a kept page of every consulted column, so
//!   the intersection of the columns' kept rows holds it;
//! * only columns read without type change and of types whose statistics order is the filter's
//!   order (integers, DATE, VARCHAR/STRING) are consulted; a file without page index, or a
//!   column whose statistics are missing, keeps everything;
//! * files with a deletion vector are not pruned (row positions must stay whole);
//! * a filter that is one `in` list (point lookups of many keys) is tested against a page by
//!   binary search over its values sorted once: the same answer as the predicate's (a value
//!   in `[min, max]` exists), in O(log values) per page instead of O(values);
//! * a prune may carry the key set of a point lookup ([`PagePrune::with_key_rows`]): the
//!   Parquet reader then decodes the key columns of the kept pages first and the other columns
//!   only at the rows whose key is in the set (the rows dropped are rows the caller's key set
//!   filter drops anyway).

use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_cast::cast;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::SchemaDescriptor;
use tidelake_spec::datum::Datum;
use tidelake_spec::types::{DataField, DataType, TypeKind};

use std::cmp::Ordering;
use std::sync::Arc;

use crate::datum_arrow::{compare_datums, datum_at};
use crate::read::key_set::KeySet;
use crate::scan::predicate::{BoundLeaf, BoundPredicate, LeafTest, StatsProvider};

/// A filter and the columns pages may be pruned by.
#[derive(Debug, Clone)]
pub struct PagePrune {
    filter: BoundPredicate,
    /// Ids of the columns that may be consulted.
    column_ids: Vec<i32>,
    /// When `filter` is one `in` list whose values all compare with each other: its values,
    /// sorted, without duplicates.
    sorted_in: Option<Vec<Datum>>,
    /// Only the rows of these keys are wanted (the key columns are primary-key columns).
    key_rows: Option<Arc<KeySet>>,
}

impl PagePrune {
    /// Pruning by `filter` on the columns it references (callers restrict it first, see
    /// [`BoundPredicate::restricted`]); `None` when none of them is of a prunable type.
    pub fn new(filter: &BoundPredicate) -> Option<PagePrune> {
        fn collect(p: &BoundPredicate, ids: &mut Vec<i32>) {
            match p {
                BoundPredicate::And(children) | BoundPredicate::Or(children) => {
                    children.iter().for_each(|c| collect(c, ids))
                }
                BoundPredicate::Leaf(leaf) => {
                    let id = leaf.column.id;
                    if prunable(&leaf.column.data_type) && !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        }
        let mut column_ids = Vec::new();
        collect(filter, &mut column_ids);
        (!column_ids.is_empty()).then(|| PagePrune {
            filter: filter.clone(),
            column_ids,
            sorted_in: sorted_in_list(filter),
            key_rows: None,
        })
    }

    /// The same pruning, for a read that wants only the rows of `keys`.
    pub fn with_key_rows(self, keys: Arc<KeySet>) -> PagePrune {
        PagePrune {
            key_rows: Some(keys),
            ..self
        }
    }

    /// The key set whose rows alone are wanted, if any.
    pub(super) fn key_rows(&self) -> Option<&Arc<KeySet>> {
        self.key_rows.as_ref()
    }

    /// Whether a page with `stats` (of one column) may hold a matching row.
    fn may_match(&self, stats: &PageStats<'_>) -> bool {
        let (Some(values), Some(min), Some(max)) = (&self.sorted_in, &stats.min, &stats.max) else {
            return self.filter.may_match(stats);
        };
        if compare_datums(&values[0], min).is_none() {
            return self.filter.may_match(stats);
        }
        // the first value not below `min`, then whether it is not above `max`
        let first = values.partition_point(|v| compare_datums(v, min) == Some(Ordering::Less));
        match values.get(first).map(|v| compare_datums(v, max)) {
            Some(Some(o)) => o != Ordering::Greater,
            Some(None) => self.filter.may_match(stats),
            None => false,
        }
    }

    /// Per row group of `metadata`: `None` to read it whole, else the rows that may match.
    /// `file_fields` name the file's columns, `read_fields` the filter's (matched by id).
    pub(super) fn selections(
        &self,
        metadata: &ParquetMetaData,
        arrow_schema: &Schema,
        file_fields: &[DataField],
        read_fields: &[DataField],
    ) -> Vec<Option<RowSelection>> {
        let groups = metadata.num_row_groups();
        let mut out: Vec<Option<RowSelection>> = vec![None; groups];
        let (Some(column_index), Some(offset_index)) =
            (metadata.column_index(), metadata.offset_index())
        else {
            return out;
        };
        let parquet_schema: &SchemaDescriptor = metadata.file_metadata().schema_descr();
        for id in &self.column_ids {
            let (Some(file_field), Some(read_field)) = (
                file_fields.iter().find(|f| f.id == *id),
                read_fields.iter().find(|f| f.id == *id),
            ) else {
                continue;
            };
            if file_field.data_type.kind != read_field.data_type.kind {
                continue;
            }
            let Ok(converter) =
                StatisticsConverter::try_new(&file_field.name, arrow_schema, parquet_schema)
            else {
                continue;
            };
            for (group, selection) in out.iter_mut().enumerate() {
                let Some(kept) = self.kept_pages(
                    &converter,
                    column_index,
                    offset_index,
                    metadata,
                    group,
                    read_field,
                ) else {
                    continue;
                };
                *selection = Some(match selection.take() {
                    Some(s) => s.intersection(&kept),
                    None => kept,
                });
            }
        }
        out
    }

    /// The rows of row group `group` in pages of `field`'s column the filter may match.
    fn kept_pages(
        &self,
        converter: &StatisticsConverter<'_>,
        column_index: &parquet::file::metadata::ParquetColumnIndex,
        offset_index: &parquet::file::metadata::ParquetOffsetIndex,
        metadata: &ParquetMetaData,
        group: usize,
        field: &DataField,
    ) -> Option<RowSelection> {
        let groups = [group];
        let mins = converter
            .data_page_mins(column_index, offset_index, &groups)
            .ok()?;
        let maxes = converter
            .data_page_maxes(column_index, offset_index, &groups)
            .ok()?;
        let nulls = converter
            .data_page_null_counts(column_index, offset_index, &groups)
            .ok()?;
        let rows = converter
            .data_page_row_counts(offset_index, metadata.row_groups(), &groups)
            .ok()??;
        let (mins, maxes) = (
            as_datums(&mins, &field.data_type)?,
            as_datums(&maxes, &field.data_type)?,
        );
        if mins.len() != rows.len() || maxes.len() != rows.len() || nulls.len() != rows.len() {
            return None;
        }
        let selectors = (0..rows.len()).map(|page| {
            let count = usize::try_from(rows.value(page)).unwrap_or(usize::MAX);
            let stats = PageStats {
                name: &field.name,
                min: mins[page].clone(),
                max: maxes[page].clone(),
                null_count: null_count(&nulls, page),
                row_count: i64::try_from(count).unwrap_or(i64::MAX),
            };
            if self.may_match(&stats) {
                RowSelector::select(count)
            } else {
                RowSelector::skip(count)
            }
        });
        Some(RowSelection::from(selectors.collect::<Vec<_>>()))
    }
}

/// The values of `filter` if it is one non-negated `in` list of non-null values that all
/// compare with each other, sorted and deduplicated.
fn sorted_in_list(filter: &BoundPredicate) -> Option<Vec<Datum>> {
    let BoundPredicate::Leaf(BoundLeaf {
        test: LeafTest::In {
            values,
            negated: false,
        },
        ..
    }) = filter
    else {
        return None;
    };
    let first = values.first()?;
    if values
        .iter()
        .any(|v| v.is_null() || compare_datums(v, first).is_none())
    {
        return None;
    }
    let mut sorted = values.clone();
    sorted.sort_by(|a, b| compare_datums(a, b).unwrap_or(Ordering::Equal));
    sorted.dedup_by(|a, b| compare_datums(a, b) == Some(Ordering::Equal));
    Some(sorted)
}

/// Types whose page statistics compare as the filter compares values.
fn prunable(t: &DataType) -> bool {
    matches!(
        t.kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::Int
            | TypeKind::BigInt
            | TypeKind::Date
            | TypeKind::VarChar(_)
    )
}

/// Page statistics as values of `t` (nulls: unknown); `None` when they cannot be converted.
fn as_datums(array: &ArrayRef, t: &DataType) -> Option<Vec<Option<Datum>>> {
    let target = tidelake_spec::arrow::to_arrow_type(t).ok()?;
    let array = cast(array, &target).ok()?;
    (0..array.len())
        .map(|i| match array.is_null(i) {
            true => Some(None),
            false => datum_at(array.as_ref(), i, t).ok().map(Some),
        })
        .collect()
}

fn null_count(nulls: &UInt64Array, page: usize) -> Option<i64> {
    (!nulls.is_null(page)).then(|| i64::try_from(nulls.value(page)).unwrap_or(i64::MAX))
}

/// One page of one column; every other column is unknown.
struct PageStats<'a> {
    name: &'a str,
    min: Option<Datum>,
    max: Option<Datum>,
    null_count: Option<i64>,
    row_count: i64,
}

impl StatsProvider for PageStats<'_> {
    fn min(&self, field: &str) -> Option<Datum> {
        (field == self.name).then(|| self.min.clone()).flatten()
    }
    fn max(&self, field: &str) -> Option<Datum> {
        (field == self.name).then(|| self.max.clone()).flatten()
    }
    fn null_count(&self, field: &str) -> Option<i64> {
        (field == self.name).then_some(self.null_count).flatten()
    }
    fn row_count(&self) -> i64 {
        self.row_count
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tidelake_spec::types::DataField;

    use super::*;
    use crate::scan::predicate::BoundColumn;

    fn in_list(values: &[i64]) -> BoundPredicate {
        let f = DataField::new(0, "k", DataType::not_null(TypeKind::BigInt));
        BoundPredicate::Leaf(BoundLeaf {
            column: BoundColumn {
                name: f.name.clone(),
                id: f.id,
                data_type: f.data_type.clone(),
            },
            test: LeafTest::In {
                values: values.iter().map(|&v| Datum::BigInt(v)).collect(),
                negated: false,
            },
        })
    }

    proptest! {
        /// The binary search over a sorted `in` list keeps exactly the pages the predicate
        /// keeps (duplicates, values outside every page, one-value pages, unknown bounds).
        #[test]
        fn sorted_in_lists_keep_the_pages_the_predicate_keeps(
            values in prop::collection::vec(-50i64..50, 1..40),
            pages in prop::collection::vec((-60i64..60, 0i64..20, any::<bool>()), 1..30),
        ) {
            let filter = in_list(&values);
            let prune = PagePrune::new(&filter).unwrap();
            prop_assert!(prune.sorted_in.is_some());
            for (min, width, known) in pages {
                let stats = PageStats {
                    name: "k",
                    min: known.then_some(Datum::BigInt(min)),
                    max: Some(Datum::BigInt(min + width)),
                    null_count: Some(0),
                    row_count: 10,
                };
                prop_assert_eq!(prune.may_match(&stats), filter.may_match(&stats));
            }
        }
    }

    #[test]
    fn only_a_plain_in_list_is_sorted() {
        let negated = match in_list(&[1, 2]) {
            BoundPredicate::Leaf(mut leaf) => {
                leaf.test = LeafTest::In {
                    values: vec![Datum::BigInt(1)],
                    negated: true,
                };
                BoundPredicate::Leaf(leaf)
            }
            other => other,
        };
        assert!(sorted_in_list(&negated).is_none());
        assert!(sorted_in_list(&BoundPredicate::Or(vec![in_list(&[1])])).is_none());
        assert_eq!(
            sorted_in_list(&in_list(&[3, 1, 3, 2])),
            Some(vec![Datum::BigInt(1), Datum::BigInt(2), Datum::BigInt(3)])
        );
    }
}
