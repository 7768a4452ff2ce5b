//! [`KeySet`]: the rows of given primary keys, for point lookups.
//!
//! A set of keys encoded in Paimon's key order ([`KeyCodec`]) with a membership test on batches:
//! a row passes when its key columns encode to one of the set's keys. Every version of a key has
//! the same key columns, so filtering file rows by a key set before the merge keeps all versions
//! of a looked-up key and none of any other key.
//!
//! A single integer key column is tested against the keys sorted once, by a merge walk over the
//! rows (in key order within a data file), without encoding rows (what a lookup of many keys
//! spends most of its time on otherwise: every row of every page that may hold a key is
//! tested); other keys by their row encoding in a hash set. On a file's whole key column (kept
//! by a read cache, ascending) an integer set finds its rows by a gallop per key instead.

use std::collections::HashSet;
use std::fmt;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::lsm::key::KeyCodec;

/// Keys over named columns, encoded for exact membership tests.
pub struct KeySet {
    columns: Vec<String>,
    types: Vec<ArrowType>,
    members: Members,
}

/// The keys of a [`KeySet`], in the form its membership test uses.
enum Members {
    /// One integer key column: its keys as `i64`, sorted, without duplicates.
    Integers(Vec<i64>),
    /// Other keys: their row encodings.
    Encoded {
        codec: KeyCodec,
        keys: HashSet<Box<[u8]>>,
    },
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySet")
            .field("columns", &self.columns)
            .field("keys", &self.len())
            .finish()
    }
}

impl KeySet {
    /// The keys of `values` (one array per column of `columns`, of the columns' read types).
    pub fn new(columns: Vec<String>, values: &[ArrayRef]) -> Result<KeySet> {
        if columns.len() != values.len() {
            return Err(Error::Internal(format!(
                "a key set over {} columns given {} arrays",
                columns.len(),
                values.len()
            )));
        }
        let types: Vec<ArrowType> = values.iter().map(|a| a.data_type().clone()).collect();
        let integers = match values {
            [column] => integer_keys(column)?,
            _ => None,
        };
        let members = match integers {
            Some(wide) => {
                let mut sorted = wide.values().to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                Members::Integers(sorted)
            }
            None => {
                let codec = KeyCodec::new(types.clone())?;
                let rows = codec.encode(values)?;
                let keys = rows.iter().map(|r| Box::<[u8]>::from(r.as_ref())).collect();
                Members::Encoded { codec, keys }
            }
        };
        Ok(KeySet {
            columns,
            types,
            members,
        })
    }

    /// The key columns' names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The one key column's name, when the set is of one integer column (tested as `i64`).
    pub fn integer_column(&self) -> Option<&str> {
        match (&self.members, self.columns.as_slice()) {
            (Members::Integers(_), [column]) => Some(column),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match &self.members {
            Members::Integers(sorted) => sorted.len(),
            Members::Encoded { keys, .. } => keys.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The positions of the rows of `column` (ascending, without nulls: a data file's one
    /// integer key column) whose key is in the set, ascending; `None` unless the set is of one
    /// integer column. Each key is found by a gallop from the previous key's row, so a few keys
    /// cost nothing on a long file and the probes of close keys stay in cache.
    pub fn rows_in_ascending(&self, column: &Int64Array) -> Option<Vec<usize>> {
        match &self.members {
            Members::Integers(sorted) => Some(rows_in_ascending(sorted, column)),
            Members::Encoded { .. } => None,
        }
    }

    /// One boolean per row of `batch`: whether its key is in the set. Key columns are found by
    /// name and cast to the set's types if they differ.
    pub fn matches(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let columns = self
            .columns
            .iter()
            .zip(&self.types)
            .map(|(name, ty)| {
                let column = batch.column_by_name(name).ok_or_else(|| {
                    Error::invalid(format!("key column '{name}' is not in the rows read"))
                })?;
                if column.data_type() == ty {
                    Ok(column.clone())
                } else {
                    arrow_cast::cast(column, ty).map_err(|e| Error::arrow("key column", e))
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        match &self.members {
            Members::Integers(sorted) => {
                // one column: checked by `new`
                let wide = arrow_cast::cast(&columns[0], &ArrowType::Int64)
                    .map_err(|e| Error::arrow("key column", e))?;
                Ok(sorted_matches(sorted, wide.as_primitive::<Int64Type>()))
            }
            Members::Encoded { codec, keys } => {
                let rows = codec.encode(&columns)?;
                Ok(rows
                    .iter()
                    .map(|r| Some(keys.contains(r.as_ref())))
                    .collect())
            }
        }
    }
}

/// One key column's values as `i64` when its type is an integer type (a [`KeySet`] of them
/// is tested as such); `None` for other types.
pub(crate) fn integer_keys(values: &ArrayRef) -> Result<Option<Int64Array>> {
    if !is_integer(values.data_type()) {
        return Ok(None);
    }
    let wide =
        arrow_cast::cast(values, &ArrowType::Int64).map_err(|e| Error::arrow("integer keys", e))?;
    Ok(Some(wide.as_primitive::<Int64Type>().clone()))
}

/// The positions of the rows of `column` (ascending, without nulls) whose value is one of
/// `sorted` (ascending, distinct), ascending: [`KeySet::rows_in_ascending`].
pub(crate) fn rows_in_ascending(sorted: &[i64], column: &Int64Array) -> Vec<usize> {
    let values = column.values();
    let mut rows = Vec::new();
    let mut at = 0;
    for &k in sorted {
        at += first_not_below(&values[at..], k);
        while values.get(at) == Some(&k) {
            rows.push(at);
            at += 1;
        }
    }
    rows
}

/// The index of the first of `values` (ascending) not below `v`: a gallop from the start, then
/// a binary search of the stretch it ends in.
fn first_not_below(values: &[i64], v: i64) -> usize {
    let mut end = 1;
    while values.get(end - 1).is_some_and(|&x| x < v) {
        end *= 2;
    }
    let start = end / 2;
    let end = end.min(values.len());
    start + values[start..end].partition_point(|&x| x < v)
}

/// Whether each of `values` is one of `sorted` (ascending, distinct); keys are never null, so
/// a null is not. A merge walk: while `values` ascend (rows of a data file are in key order)
/// each row costs one comparison plus a gallop over the keys it passes, so a batch costs
/// O(rows + keys passed x log) rather than O(rows x log keys); a value below the previous one
/// restarts the walk by binary search.
fn sorted_matches(sorted: &[i64], values: &Int64Array) -> BooleanArray {
    let raw = values.values();
    // the first key not below the values seen so far
    let mut at = 0;
    let mut previous = i64::MIN;
    let found = BooleanBuffer::collect_bool(raw.len(), |i| {
        let v = raw[i];
        if v < previous {
            at = sorted.partition_point(|&k| k < v);
        }
        previous = v;
        at += first_not_below(&sorted[at..], v);
        sorted.get(at) == Some(&v)
    });
    let found = match values.nulls() {
        Some(valid) => &found & valid.inner(),
        None => found,
    };
    BooleanArray::new(found, None)
}

/// Integer types whose values widen to `i64` exactly.
fn is_integer(t: &ArrowType) -> bool {
    matches!(
        t,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 | ArrowType::Int64
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array, StringArray};

    use super::*;

    proptest::proptest! {
        /// The merge walk answers as a binary search per row, for rows in any order (ascending
        /// stretches, steps back, repeats, nulls) and key sets of any density.
        #[test]
        fn merge_walk_matches_binary_search(
            keys in proptest::collection::btree_set(-50i64..50, 0..40),
            rows in proptest::collection::vec(proptest::option::weighted(0.9, -60i64..60), 0..200),
            sort in proptest::bool::ANY,
        ) {
            let sorted: Vec<i64> = keys.into_iter().collect();
            let mut rows = rows;
            if sort {
                rows.sort();
            }
            let values = Int64Array::from(rows.clone());
            let got: Vec<bool> = sorted_matches(&sorted, &values).iter().map(|b| b.unwrap()).collect();
            let want: Vec<bool> = rows
                .iter()
                .map(|r| r.is_some_and(|r| sorted.binary_search(&r).is_ok()))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }

        /// On an ascending column (repeated values included) the galloping search finds the
        /// rows the membership test finds, in order.
        #[test]
        fn rows_in_ascending_are_the_matching_rows(
            keys in proptest::collection::vec(-50i64..50, 0..40),
            rows in proptest::collection::vec(-60i64..60, 0..300),
        ) {
            let mut rows = rows;
            rows.sort();
            let set = KeySet::new(vec!["k".into()], &[Arc::new(Int64Array::from(keys)) as ArrayRef]).unwrap();
            let column = Int64Array::from(rows);
            let want: Vec<usize> = set
                .matches(&batch(vec![("k", Arc::new(column.clone()))]))
                .unwrap()
                .values()
                .set_indices()
                .collect();
            proptest::prop_assert_eq!(set.rows_in_ascending(&column), Some(want));
        }
    }

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    /// Integer keys take the sorted path and match exactly the set's keys, whatever the width
    /// of the column read; other keys go through the row encoding with the same answer.
    #[test]
    fn integer_and_encoded_keys_match_exactly_the_set() {
        let wanted: Vec<i32> = vec![7, -3, 7, 1_000_000, 0];
        let set = KeySet::new(
            vec!["k".into()],
            &[Arc::new(Int32Array::from(wanted.clone())) as ArrayRef],
        )
        .unwrap();
        assert!(matches!(set.members, Members::Integers(_)));
        assert_eq!(set.len(), 4);
        let rows: Vec<i64> = (-10..10).chain([1_000_000, 1_000_001]).collect();
        let expected: Vec<bool> = rows
            .iter()
            .map(|r| wanted.iter().any(|w| i64::from(*w) == *r))
            .collect();
        let wide = batch(vec![("k", Arc::new(Int64Array::from(rows.clone())))]);
        let got: Vec<bool> = set.matches(&wide).unwrap().iter().flatten().collect();
        assert_eq!(got, expected);

        let names = ["b", "a", "zz"];
        let strings = KeySet::new(
            vec!["s".into(), "k".into()],
            &[
                Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
                Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
            ],
        )
        .unwrap();
        assert!(matches!(strings.members, Members::Encoded { .. }));
        let rows = batch(vec![
            ("k", Arc::new(Int32Array::from(vec![2, 1, 1])) as ArrayRef),
            ("s", Arc::new(StringArray::from(names.to_vec())) as ArrayRef),
        ]);
        let got: Vec<bool> = strings.matches(&rows).unwrap().iter().flatten().collect();
        assert_eq!(got, vec![true, true, false]);
    }
}
