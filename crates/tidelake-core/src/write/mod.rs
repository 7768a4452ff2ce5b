//! Writing data files and commit messages.
//!
//! * [`input`]: conforming user batches to the table schema (safe casts, key checks).
//! * [`bucket`]: partition grouping and bucket routing of Arrow batches.
//! * [`compaction`]: the compaction a writer drives, handed to it by its caller.
//! * [`deletion`]: deletion-vector messages deleting rows of append tables by position.
//! * [`dynamic_bucket`]: key-hash → bucket assignment for dynamic-bucket tables.
//! * [`cross_partition`]: the key index of cross-partition-upsert tables (keys that move partition).
//! * `external_sort`: the rows of one (partition, bucket) sorted with bounded memory, spilling
//!   to local files (clustered writes, sort compaction).
//! * [`file_writer`]: rolling Parquet writers producing `DataFileMeta`.
//! * [`message`]: the commit message a writer hands to the committer.
//! * [`postpone`]: what writers of postpone-bucket tables (`bucket = -2`) do differently.
//! * `resequence`: a write's own files rewritten with higher sequence numbers, so that it can
//!   land after commits made since its writer opened.
//! * [`sort_key`]: the orders of clustering and sort compaction (`order`, `zorder`,
//!   `hilbert`) as one byte key per row.
//! * `restore`: what a writer continues from (sequence numbers, bucket counts), read per
//!   partition when the writer first writes into it.
//! * [`rewrite`]: messages removing the files of read splits (row-level changes of append
//!   tables rewrite files).
//! * [`table_write`]: the table writer: buffers, sort/merge, files, commit messages.

pub mod bucket;
pub mod compaction;
pub mod cross_partition;
pub mod deletion;
pub mod dynamic_bucket;
pub(crate) mod external_sort;
pub mod file_writer;
pub mod input;
pub mod message;
pub mod postpone;
pub(crate) mod resequence;
mod restore;
pub mod rewrite;
pub mod sort_key;
pub mod table_write;
