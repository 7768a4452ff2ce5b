//! The `first-row` engine, mirroring Java `FirstRowMergeFunction`: the first record (in merge
//! order) wins. A -U/-D record among two or more records of a key is an error unless
//! `ignore-delete` is set, in which case it is skipped (Java throws `IllegalArgumentException`;
//! a lone retract record never reaches the function and passes through unchanged).

use super::output::OutputRows;
use super::value::{Pool, Rec};
use super::MergeFunction;
use crate::error::{Error, Result};

pub(crate) struct FirstRow {
    pub ignore_delete: bool,
}

impl MergeFunction for FirstRow {
    fn merge(&mut self, records: &[Rec], _pool: &Pool, out: &mut OutputRows) -> Result<()> {
        let mut first: Option<&Rec> = None;
        for rec in records {
            if rec.kind.is_retract() {
                if self.ignore_delete {
                    continue;
                }
                return Err(Error::invalid(
                    "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. \
                     You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records.",
                ));
            }
            first.get_or_insert(rec);
        }
        if let Some(rec) = first {
            out.push_whole(rec, rec.kind);
        }
        Ok(())
    }
}
