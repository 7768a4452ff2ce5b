//! `nested_update` (Java `FieldNestedUpdateAgg`) and `nested_partial_update`
//! (`FieldNestedPartialUpdateAgg`) on `ARRAY<ROW>` columns. Null array elements are dropped.
//!
//! * `nested_update` without `nested-key` appends rows up to `count-limit` (an accumulator
//!   already at the limit is kept). With `nested-key`, rows are upserted by key: an existing key
//!   is replaced unless `nested-sequence-field` says the new row is older (compared ascending,
//!   nulls first), and new keys from the input are added only while fewer than `count-limit`
//!   keys exist. Retraction removes equal rows (no key) or the retracted keys.
//! * `nested_partial_update` groups the rows by key and merges each group field by field,
//!   the last non-null value winning. No retraction.
//!
//! Rows whose key has a null follow `nested-key-null-strategy` (merge them, ignore them, or
//! fail).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, StructArray};
use arrow_row::Rows;
use arrow_select::concat::concat;
use arrow_select::interleave::interleave;

use super::elements::{column_type, element_type, encode, gather, list_values, make_list};
use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::config::NestedKeyNullStrategy;
use crate::lsm::merge_fn::value::Acc;

/// Accumulator and input elements concatenated (as a struct array), with the accumulator's
/// element count and the list type.
struct Combined {
    rows: StructArray,
    all: ArrayRef,
    acc_len: usize,
    list_type: arrow_schema::DataType,
}

fn combine(cx: &Cx<'_>, acc: &Acc, input: &Acc) -> Result<Combined> {
    let list_type = column_type(cx, input)
        .or_else(|| column_type(cx, acc))
        .ok_or_else(|| Error::invalid("nested aggregate without a value"))?;
    let a = list_values(cx, acc)?;
    let acc_len = a.as_ref().map_or(0, |v| v.len());
    let parts: Vec<ArrayRef> = a.into_iter().chain(list_values(cx, input)?).collect();
    let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
    let all = concat(&refs).map_err(|e| Error::arrow("concatenating nested rows", e))?;
    let rows = all
        .as_struct_opt()
        .ok_or_else(|| Error::invalid(format!("expected ARRAY<ROW>, found {list_type}")))?
        .clone();
    Ok(Combined {
        rows,
        all,
        acc_len,
        list_type,
    })
}

impl Combined {
    fn project(&self, fields: &[usize]) -> Result<Vec<ArrayRef>> {
        fields
            .iter()
            .map(|&f| {
                self.rows
                    .columns()
                    .get(f)
                    .cloned()
                    .ok_or_else(|| Error::invalid(format!("nested field {f} out of range")))
            })
            .collect()
    }

    fn finish(&self, picks: &[(usize, usize)]) -> Result<Acc> {
        let values = gather(&[&self.all], picks, element_type(&self.list_type)?)?;
        make_list(&self.list_type, values)
    }
}

/// Whether row `i`'s key (columns `key`) takes part, per the null strategy.
fn key_usable(key: &[ArrayRef], i: usize, strategy: NestedKeyNullStrategy) -> Result<bool> {
    if !key.iter().any(|c| c.is_null(i)) {
        return Ok(true);
    }
    match strategy {
        NestedKeyNullStrategy::Merge => Ok(true),
        NestedKeyNullStrategy::Ignore => Ok(false),
        NestedKeyNullStrategy::Error => Err(Error::invalid(
            "Nested key contains null values. Primary key fields must not be null.",
        )),
    }
}

/// Keys in first-insertion order, each with the element index of its current row.
struct KeyedRows<'a> {
    position: std::collections::HashMap<&'a [u8], usize>,
    rows: Vec<Option<usize>>,
}

impl<'a> KeyedRows<'a> {
    fn new() -> Self {
        KeyedRows {
            position: std::collections::HashMap::new(),
            rows: Vec::new(),
        }
    }

    fn get(&self, key: &[u8]) -> Option<usize> {
        self.position.get(key).and_then(|&p| self.rows[p])
    }

    fn put(&mut self, key: &'a [u8], row: usize) {
        match self.position.get(key) {
            Some(&p) => self.rows[p] = Some(row),
            None => {
                self.position.insert(key, self.rows.len());
                self.rows.push(Some(row));
            }
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some(p) = self.position.remove(key) {
            self.rows[p] = None;
        }
    }

    fn len(&self) -> usize {
        self.position.len()
    }

    fn picks(&self) -> Vec<(usize, usize)> {
        self.rows.iter().flatten().map(|&i| (0, i)).collect()
    }
}

pub(crate) struct NestedUpdate {
    pub key: Vec<usize>,
    pub null_strategy: NestedKeyNullStrategy,
    pub sequence: Vec<usize>,
    pub count_limit: usize,
}

/// Everything `nested_update` needs to upsert rows by key.
struct Keyed<'a> {
    rows: &'a StructArray,
    keys: &'a Rows,
    key_columns: &'a [ArrayRef],
    seq: Option<&'a Rows>,
}

impl NestedUpdate {
    fn upsert<'a>(
        &self,
        k: &Keyed<'a>,
        range: std::ops::Range<usize>,
        limit_new_keys: bool,
        map: &mut KeyedRows<'a>,
    ) -> Result<()> {
        for i in range {
            if k.rows.is_null(i) || !key_usable(k.key_columns, i, self.null_strategy)? {
                continue;
            }
            let key = k.keys.row(i).data();
            match map.get(key) {
                Some(existing) => {
                    let newer = match k.seq {
                        None => true,
                        Some(s) => s.row(i) >= s.row(existing),
                    };
                    if newer {
                        map.put(key, i);
                    }
                }
                None if !limit_new_keys || map.len() < self.count_limit => map.put(key, i),
                None => {}
            }
        }
        Ok(())
    }
}

impl AggFn for NestedUpdate {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if input.is_null() {
            return Ok(acc);
        }
        let c = combine(cx, &acc, &input)?;
        let n = c.rows.len();
        if self.key.is_empty() {
            let non_null = |range: std::ops::Range<usize>| range.filter(|&i| !c.rows.is_null(i));
            if acc.is_null() {
                let picks: Vec<_> = non_null(0..n)
                    .take(self.count_limit)
                    .map(|i| (0, i))
                    .collect();
                return c.finish(&picks);
            }
            if c.acc_len >= self.count_limit {
                return Ok(acc);
            }
            let remain = self.count_limit - c.acc_len;
            let picks: Vec<_> = non_null(0..c.acc_len)
                .chain(non_null(c.acc_len..n).take(remain))
                .map(|i| (0, i))
                .collect();
            return c.finish(&picks);
        }
        let key_columns = c.project(&self.key)?;
        let keys = encode(&key_columns)?;
        let seq = if self.sequence.is_empty() {
            None
        } else {
            Some(encode(&c.project(&self.sequence)?)?)
        };
        let keyed = Keyed {
            rows: &c.rows,
            keys: &keys,
            key_columns: &key_columns,
            seq: seq.as_ref(),
        };
        let mut map = KeyedRows::new();
        self.upsert(&keyed, 0..c.acc_len, false, &mut map)?;
        self.upsert(&keyed, c.acc_len..n, true, &mut map)?;
        c.finish(&map.picks())
    }

    fn retract(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some((|| {
            if acc.is_null() || input.is_null() {
                return Ok(acc);
            }
            let c = combine(cx, &acc, &input)?;
            let n = c.rows.len();
            if self.key.is_empty() {
                let whole = encode(std::slice::from_ref(&c.all))?;
                let retracted: std::collections::HashSet<&[u8]> = (c.acc_len..n)
                    .filter(|&i| !c.rows.is_null(i))
                    .map(|i| whole.row(i).data())
                    .collect();
                let picks: Vec<_> = (0..c.acc_len)
                    .filter(|&i| !c.rows.is_null(i) && !retracted.contains(whole.row(i).data()))
                    .map(|i| (0, i))
                    .collect();
                return c.finish(&picks);
            }
            let key_columns = c.project(&self.key)?;
            let keys = encode(&key_columns)?;
            let mut map = KeyedRows::new();
            for i in 0..c.acc_len {
                if !c.rows.is_null(i) && key_usable(&key_columns, i, self.null_strategy)? {
                    map.put(keys.row(i).data(), i);
                }
            }
            for i in c.acc_len..n {
                if !c.rows.is_null(i) && key_usable(&key_columns, i, self.null_strategy)? {
                    map.remove(keys.row(i).data());
                }
            }
            c.finish(&map.picks())
        })())
    }
}

pub(crate) struct NestedPartialUpdate {
    pub key: Vec<usize>,
    pub null_strategy: NestedKeyNullStrategy,
}

impl AggFn for NestedPartialUpdate {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if input.is_null() {
            return Ok(acc);
        }
        let c = combine(cx, &acc, &input)?;
        let key_columns = c.project(&self.key)?;
        let keys = encode(&key_columns)?;
        let width = c.rows.num_columns();
        // per group: the element index of the latest non-null value of each field
        let mut group_of: std::collections::HashMap<&[u8], usize> = Default::default();
        let mut groups: Vec<Vec<Option<usize>>> = Vec::new();
        for i in 0..c.rows.len() {
            if c.rows.is_null(i) || !key_usable(&key_columns, i, self.null_strategy)? {
                continue;
            }
            let g = *group_of.entry(keys.row(i).data()).or_insert_with(|| {
                groups.push(vec![None; width]);
                groups.len() - 1
            });
            for (f, column) in c.rows.columns().iter().enumerate() {
                if !column.is_null(i) {
                    groups[g][f] = Some(i);
                }
            }
        }
        let mut children = Vec::with_capacity(width);
        for (f, column) in c.rows.columns().iter().enumerate() {
            let null = new_null_array(column.data_type(), 1);
            let picks: Vec<(usize, usize)> = groups
                .iter()
                .map(|g| g[f].map_or((1, 0), |i| (0, i)))
                .collect();
            children.push(
                interleave(&[column.as_ref(), null.as_ref()], &picks)
                    .map_err(|e| Error::arrow("building nested rows", e))?,
            );
        }
        let merged = StructArray::try_new(c.rows.fields().clone(), children, None)
            .map_err(|e| Error::arrow("building nested rows", e))?;
        make_list(&c.list_type, Arc::new(merged))
    }
}
