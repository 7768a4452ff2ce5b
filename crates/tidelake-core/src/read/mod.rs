//! Reading data: file readers with schema evolution ([`data_file`]), deletion vectors, the
//! column merge of data-evolution tables ([`evolution`]), the split reader ([`split_read`]),
//! which merges primary-key splits with [`crate::lsm`], and the key sets of point lookups
//! ([`key_set`]).

pub mod data_file;
pub mod deletion_vector;
pub mod evolution;
pub mod key_set;
pub mod split_read;
