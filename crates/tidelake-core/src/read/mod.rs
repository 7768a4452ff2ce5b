//! Reading data: file readers with schema evolution ([`data_file`]), the sorted-run merge for
//! primary-key tables ([`merge`]) and its merge functions ([`merge_fn`]), the column merge of
//! data-evolution tables ([`evolution`]).

pub mod data_file;
pub mod deletion_vector;
pub mod evolution;
pub mod merge;
pub mod merge_fn;
pub mod sorted_runs;
pub mod split_read;
