//! [`KeySet`]: the rows of given primary keys, for point lookups.
//!
//! A set of keys encoded in Paimon's key order ([`KeyCodec`]) with a membership test on batches:
//! a row passes when its key columns encode to one of the set's keys. Every version of a key has
//! the same key columns, so filtering file rows by a key set before the merge keeps all versions
//! of a looked-up key and none of any other key.
//!
//! A single integer key column is tested by binary search over the keys sorted once, without
//! encoding rows (what a lookup of many keys spends most of its time on otherwise: every row of
//! every page that may hold a key is tested); other keys by their row encoding in a hash set.

use std::collections::HashSet;
use std::fmt;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::DataType as ArrowType;

use crate::error::{Error, Result};
use crate::lsm::key::KeyCodec;

/// Keys over named columns, encoded for exact membership tests.
pub struct KeySet {
    columns: Vec<String>,
    types: Vec<ArrowType>,
    codec: KeyCodec,
    keys: HashSet<Box<[u8]>>,
    /// One integer key column: its keys as `i64`, sorted.
    integers: Option<Vec<i64>>,
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySet")
            .field("columns", &self.columns)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl KeySet {
    /// The keys of `values` (one array per column of `columns`, of the columns' read types).
    pub fn new(columns: Vec<String>, values: &[ArrayRef]) -> Result<KeySet> {
        let types: Vec<ArrowType> = values.iter().map(|a| a.data_type().clone()).collect();
        let codec = KeyCodec::new(types.clone())?;
        let rows = codec.encode(values)?;
        let keys = rows.iter().map(|r| Box::<[u8]>::from(r.as_ref())).collect();
        let integers = match (values, types.as_slice()) {
            ([column], [ty]) if is_integer(ty) => {
                let wide = arrow_cast::cast(column, &ArrowType::Int64)
                    .map_err(|e| Error::arrow("integer keys", e))?;
                let mut sorted = wide.as_primitive::<Int64Type>().values().to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                Some(sorted)
            }
            _ => None,
        };
        Ok(KeySet {
            columns,
            types,
            codec,
            keys,
            integers,
        })
    }

    /// The key columns' names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
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
        if let (Some(sorted), [column]) = (&self.integers, columns.as_slice()) {
            let wide = arrow_cast::cast(column, &ArrowType::Int64)
                .map_err(|e| Error::arrow("key column", e))?;
            let wide = wide.as_primitive::<Int64Type>();
            // keys are never null: a null never matches
            return Ok(wide
                .iter()
                .map(|v| Some(v.is_some_and(|v| sorted.binary_search(&v).is_ok())))
                .collect());
        }
        let rows = self.codec.encode(&columns)?;
        Ok(rows
            .iter()
            .map(|r| Some(self.keys.contains(r.as_ref())))
            .collect())
    }
}

/// Integer types whose values widen to `i64` exactly.
fn is_integer(t: &ArrowType) -> bool {
    matches!(
        t,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 | ArrowType::Int64
    )
}
