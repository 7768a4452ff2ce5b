//! The state of a snapshot: which data files are live, per partition and bucket, with their
//! deletion vectors. Every part of the engine that needs "the files of a snapshot" (scan
//! planning, commit checks, writer restore, compaction, maintenance and system tables) gets
//! them here.
//!
//! * `manifests`: reading manifest lists, manifests and index manifests, and the ADD/DELETE
//!   replay (its rules are format knowledge, kept in `tidelake_spec::manifest::merge`).
//! * `live_files`: [`LiveFiles`], built from them with partition/bucket/level [`Pruning`].
//! * `partition_set`: [`PartitionSet`], the partitions a commit or a writer reads the live
//!   files of.
//! * `deletion`: where a data file's deletion vector lives ([`DeletionFileRef`]).
//! * `index_paths`: where index files live ([`IndexPaths`]), in `index/` or with their bucket's
//!   data files.
//!
//! Layering: depends on spec, io, the table and its snapshots only; scan, read, write, commit,
//! compact and maintenance depend on it.

mod deletion;
mod index_paths;
mod live_files;
mod manifests;
mod partition_set;
#[cfg(test)]
mod tests;

pub(crate) use deletion::index_file_refs;
pub use deletion::DeletionFileRef;
pub(crate) use index_paths::{IndexPaths, INDEX_DIR};
pub(crate) use live_files::{BucketFiles, LiveFiles, Pruning};
pub(crate) use manifests::{data_manifests, read_index, MANIFEST_DIR};
pub use manifests::{live_index_entries, merge_entries, read_entries, read_list, read_manifests};
pub(crate) use partition_set::PartitionSet;
