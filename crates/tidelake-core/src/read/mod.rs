//! Reading data: file readers with schema evolution ([`data_file`]), deletion vectors, the
//! column merge of data-evolution tables ([`evolution`]), the split reader ([`split_read`]),
//! which merges primary-key splits with [`crate::lsm`], the key sets of point lookups
//! ([`key_set`]), diff reads between two snapshots ([`diff`]) and what of a planned scan
//! readers other than the engine read natively ([`native`]).

pub mod data_file;
pub mod deletion_vector;
pub mod diff;
pub mod evolution;
pub mod key_set;
pub mod native;
pub(crate) mod partition_columns;
pub(crate) mod record_expire;
pub mod split_read;

#[cfg(test)]
mod tests;
