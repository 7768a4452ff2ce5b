//! `collect` (Java `FieldCollectAgg`), `merge_map` (`FieldMergeMapAgg`) and
//! `merge_map_with_keytime` (`FieldMergeMapWithKeyTimeAgg`).
//!
//! Values are compared by their `arrow_row` bytes, which are equal exactly when the values are
//! (for floats the bit patterns must match, like Java's `Float.equals` apart from NaN payloads).
//!
//! * `collect`: concatenates arrays. With `distinct`, duplicates are dropped keeping the first
//!   occurrence; for element types Java compares with a generated equaliser (nested and binary
//!   elements) the accumulator is kept as-is and only input elements are checked. Retraction
//!   removes one matching accumulator element per retracted element.
//! * `merge_map`: union of maps, later values win per key. Retraction removes the keys of the
//!   retracted map.
//! * `merge_map_with_keytime`: `MAP<K, ROW>` where a row replaces the existing one of its key
//!   only if its timestamp string is greater (Java `String.compareTo`, UTF-16 order); a null
//!   row removes the key, a row with a null timestamp is ignored. No retraction.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_select::concat::concat;
use tidelake_spec::types::{DataType, TypeKind};

use super::elements::{
    column_type, element_type, encode, gather, list_values, make_list, make_map, map_entries,
};
use super::{AggFn, Cx};
use crate::error::{Error, Result};
use crate::lsm::merge_fn::value::{array_scalar, Acc, Scalar};

fn concat_arrays(parts: &[ArrayRef]) -> Result<ArrayRef> {
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    concat(&refs).map_err(|e| Error::arrow("concatenating nested values", e))
}

pub(crate) struct Collect {
    distinct: bool,
    /// Java uses a generated equaliser (keeping the accumulator as-is) for these elements.
    equaliser: bool,
}

impl Collect {
    pub fn new(t: &DataType, distinct: bool) -> Result<Self> {
        let TypeKind::Array(element) = &t.kind else {
            return Err(Error::invalid(format!(
                "collect needs an ARRAY column, not {:?}",
                t.kind
            )));
        };
        let equaliser = matches!(
            element.kind,
            TypeKind::Array(_)
                | TypeKind::Map(..)
                | TypeKind::Multiset(_)
                | TypeKind::Row(_)
                | TypeKind::Binary(_)
                | TypeKind::VarBinary(_)
        );
        Ok(Collect {
            distinct,
            equaliser,
        })
    }
}

impl AggFn for Collect {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() && input.is_null() {
            return Ok(Acc::Null);
        }
        if (acc.is_null() || input.is_null()) && !self.distinct {
            return Ok(if acc.is_null() { input } else { acc });
        }
        let list_type = column_type(cx, &acc)
            .or_else(|| column_type(cx, &input))
            .ok_or_else(|| Error::invalid("collect on a non-list value"))?;
        let acc_values = list_values(cx, &acc)?;
        let acc_len = acc_values.as_ref().map_or(0, |a| a.len());
        let parts: Vec<ArrayRef> = acc_values
            .into_iter()
            .chain(list_values(cx, &input)?)
            .collect();
        let all = concat_arrays(&parts)?;
        if !self.distinct {
            return make_list(&list_type, all);
        }
        let rows = encode(std::slice::from_ref(&all))?;
        let mut seen = std::collections::HashSet::with_capacity(all.len());
        let mut picks = Vec::with_capacity(all.len());
        for i in 0..all.len() {
            let fresh = seen.insert(rows.row(i).data());
            if fresh || (self.equaliser && i < acc_len) {
                picks.push((0, i));
            }
        }
        let values = gather(&[&all], &picks, element_type(&list_type)?)?;
        make_list(&list_type, values)
    }

    fn agg_reversed(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        self.agg(cx, acc, input)
    }

    fn retract(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some((|| {
            let Some(acc_values) = list_values(cx, &acc)? else {
                return Ok(Acc::Null);
            };
            let retract_values = match list_values(cx, &input)? {
                Some(r) if !r.is_empty() => r,
                _ => return Ok(acc),
            };
            let list_type = column_type(cx, &acc).ok_or_else(|| Error::invalid("collect"))?;
            let acc_len = acc_values.len();
            let all = concat_arrays(&[acc_values, retract_values])?;
            let rows = encode(std::slice::from_ref(&all))?;
            let mut pending: HashMap<&[u8], usize> = HashMap::new();
            for i in acc_len..all.len() {
                *pending.entry(rows.row(i).data()).or_default() += 1;
            }
            let mut picks = Vec::with_capacity(acc_len);
            for i in 0..acc_len {
                match pending.get_mut(rows.row(i).data()) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => picks.push((0, i)),
                }
            }
            let values = gather(&[&all], &picks, element_type(&list_type)?)?;
            make_list(&list_type, values)
        })())
    }
}

/// Keys in first-insertion order with the combined-entry index of their current value.
#[derive(Default)]
struct OrderedEntries<'a> {
    position: HashMap<&'a [u8], usize>,
    entries: Vec<Option<usize>>,
}

impl<'a> OrderedEntries<'a> {
    fn get(&self, key: &[u8]) -> Option<usize> {
        self.position.get(key).and_then(|&p| self.entries[p])
    }

    fn put(&mut self, key: &'a [u8], index: usize) {
        match self.position.get(key) {
            Some(&p) => self.entries[p] = Some(index),
            None => {
                self.position.insert(key, self.entries.len());
                self.entries.push(Some(index));
            }
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some(p) = self.position.remove(key) {
            self.entries[p] = None;
        }
    }

    fn picks(&self) -> Vec<(usize, usize)> {
        self.entries.iter().flatten().map(|&i| (0, i)).collect()
    }
}

/// Accumulator and input entries concatenated, with the accumulator's entry count.
fn combined_entries(cx: &Cx<'_>, acc: &Acc, input: &Acc) -> Result<(StructArray, usize)> {
    let a = map_entries(cx, acc)?;
    let b = map_entries(cx, input)?;
    let acc_len = a.as_ref().map_or(0, |e| e.len());
    let parts: Vec<ArrayRef> = a
        .into_iter()
        .chain(b)
        .map(|e| std::sync::Arc::new(e) as ArrayRef)
        .collect();
    let all = concat_arrays(&parts)?;
    Ok((all.as_struct().clone(), acc_len))
}

fn build_map(
    cx: &Cx<'_>,
    acc: &Acc,
    entries: &StructArray,
    picks: &[(usize, usize)],
) -> Result<Acc> {
    let map_type = column_type(cx, acc).ok_or_else(|| Error::invalid("map aggregate"))?;
    let keys = gather(&[entries.column(0)], picks, entries.column(0).data_type())?;
    let values = gather(&[entries.column(1)], picks, entries.column(1).data_type())?;
    make_map(&map_type, keys, values)
}

pub(crate) struct MergeMap;

impl AggFn for MergeMap {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() || input.is_null() {
            return Ok(if acc.is_null() { input } else { acc });
        }
        let (entries, _) = combined_entries(cx, &acc, &input)?;
        let rows = encode(&[entries.column(0).clone()])?;
        let mut map = OrderedEntries::default();
        for i in 0..entries.len() {
            map.put(rows.row(i).data(), i);
        }
        build_map(cx, &acc, &entries, &map.picks())
    }

    fn retract(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Option<Result<Acc>> {
        Some((|| {
            if acc.is_null() {
                return Ok(Acc::Null);
            }
            match map_entries(cx, &input)? {
                Some(r) if !r.is_empty() => {}
                _ => return Ok(acc),
            }
            let (entries, acc_len) = combined_entries(cx, &acc, &input)?;
            let rows = encode(&[entries.column(0).clone()])?;
            let mut map = OrderedEntries::default();
            for i in 0..acc_len {
                map.put(rows.row(i).data(), i);
            }
            for i in acc_len..entries.len() {
                map.remove(rows.row(i).data());
            }
            build_map(cx, &acc, &entries, &map.picks())
        })())
    }
}

pub(crate) struct MergeMapWithKeyTime {
    pub ts_field: usize,
}

impl AggFn for MergeMapWithKeyTime {
    fn agg(&mut self, cx: &Cx<'_>, acc: Acc, input: Acc) -> Result<Acc> {
        if acc.is_null() {
            return Ok(input);
        }
        if input.is_null() {
            return Ok(acc);
        }
        let (entries, acc_len) = combined_entries(cx, &acc, &input)?;
        let rows = encode(&[entries.column(0).clone()])?;
        let values = entries.column(1).as_struct();
        let ts = values
            .columns()
            .get(self.ts_field)
            .ok_or_else(|| Error::invalid("merge_map_with_keytime: timestamp field missing"))?;
        let timestamp = |i: usize| -> Result<Option<&str>> {
            if ts.is_null(i) {
                return Ok(None);
            }
            match array_scalar(ts.as_ref(), i)? {
                Scalar::Bytes(b) => std::str::from_utf8(b).map(Some).map_err(|e| {
                    Error::invalid(format!("merge_map_with_keytime timestamp not UTF-8: {e}"))
                }),
                other => Err(Error::invalid(format!(
                    "merge_map_with_keytime timestamp is not a string: {other:?}"
                ))),
            }
        };
        let mut map = OrderedEntries::default();
        for i in 0..acc_len {
            map.put(rows.row(i).data(), i);
        }
        for i in acc_len..entries.len() {
            let key = rows.row(i).data();
            if values.is_null(i) {
                map.remove(key);
                continue;
            }
            let Some(new_ts) = timestamp(i)? else {
                continue;
            };
            let replace = match map.get(key) {
                None => true,
                Some(existing) => match timestamp(existing)? {
                    None => true,
                    Some(old_ts) => new_ts.encode_utf16().cmp(old_ts.encode_utf16()).is_gt(),
                },
            };
            if replace {
                map.put(key, i);
            }
        }
        build_map(cx, &acc, &entries, &map.picks())
    }
}
