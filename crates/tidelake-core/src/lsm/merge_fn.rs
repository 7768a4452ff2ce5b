//! Merge functions: how the records of one primary key (from several sorted runs, in merge
//! order) become one result row. Each mirrors a Java class in
//! `org.apache.paimon.mergetree.compact`:
//!
//! * `deduplicate` — `DeduplicateMergeFunction`
//! * `first_row` — `FirstRowMergeFunction`
//! * `partial_update` — `PartialUpdateMergeFunction`
//! * `aggregate` — `aggregate.AggregateMergeFunction` and the `Field*Agg` functions
//!
//! The merge loop ([`super::merge`]) applies Java's `ReducerMergeFunctionWrapper` itself: a key
//! with a single record is emitted unchanged (kind included) without calling the function, so a
//! `MergeFunction` only ever sees two or more records. Results go to an `OutputRows`; with
//! `keep_retracts = false` results of kind -U/-D are dropped there (Java `DropDeleteReader`).
//!
//! Configuration types and their parsing from table options live in [`config`].

mod aggregate;
pub mod config;
mod deduplicate;
mod first_row;
pub(crate) mod output;
mod partial_update;
pub(crate) mod value;

pub use config::{MergeEngineConfig, PartialUpdateConfig};

use crate::error::Result;
use output::OutputRows;
use value::{Pool, Rec};

/// Merges the records of one key.
pub(crate) trait MergeFunction: Send {
    /// Merge `records` (two or more, same key, in merge order) and push the result, if any,
    /// to `out`.
    fn merge(&mut self, records: &[Rec], pool: &Pool, out: &mut OutputRows) -> Result<()>;
}

/// Instantiate the merge function of `engine`.
pub(crate) fn create(
    engine: &MergeEngineConfig,
    ignore_delete: bool,
) -> Result<Box<dyn MergeFunction>> {
    Ok(match engine {
        MergeEngineConfig::Deduplicate => Box::new(deduplicate::Deduplicate { ignore_delete }),
        MergeEngineConfig::FirstRow => Box::new(first_row::FirstRow { ignore_delete }),
        MergeEngineConfig::PartialUpdate(c) => {
            Box::new(partial_update::PartialUpdate::new(c, ignore_delete)?)
        }
        MergeEngineConfig::Aggregation(c) => Box::new(aggregate::Aggregate::new(c)?),
    })
}
