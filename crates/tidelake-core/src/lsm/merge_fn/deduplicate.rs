//! The `deduplicate` engine, mirroring Java `DeduplicateMergeFunction`: the last record (in
//! merge order) wins, whole row and row kind. With `ignore-delete`, -U/-D records are skipped
//! (old files may still hold them), and a key with only skipped records yields nothing.

use super::output::OutputRows;
use super::value::{Pool, Rec};
use super::MergeFunction;
use crate::error::Result;

pub(crate) struct Deduplicate {
    pub ignore_delete: bool,
}

impl MergeFunction for Deduplicate {
    fn merge(&mut self, records: &[Rec], _pool: &Pool, out: &mut OutputRows) -> Result<()> {
        let latest = records
            .iter()
            .rev()
            .find(|r| !(self.ignore_delete && r.kind.is_retract()));
        if let Some(rec) = latest {
            out.push_whole(rec, rec.kind);
        }
        Ok(())
    }
}
