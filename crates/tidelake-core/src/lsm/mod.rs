//! The log-structured merge tree of primary-key buckets (Java `org.apache.paimon.mergetree`):
//! everything that knows Paimon's key order and how records of one key become one row, shared
//! by reads, writes and compaction (which depend on this module, never on each other for it).
//!
//! * [`key`]: the key order (Java's key comparator) on decoded keys and on Arrow columns.
//! * [`sorted_runs`]: a bucket's files as sections of sorted runs (Java `IntervalPartition`).
//! * [`levels`]: the levels of one bucket (Java `Levels`); [`picker`]: which runs to compact
//!   into which level (Java `UniversalCompaction`, `ForceUpLevel0Compaction`).
//! * [`merge`]: the loser-tree merge of sorted runs, then the merge function per key;
//!   [`merge_fn`]: the merge functions and their configuration.
//! * [`kv_merge`]: the same merge keeping each key's `_SEQUENCE_NUMBER`, for rewriting files.
//! * [`sorted_buffer`]: the (key, sequence) order of a bucket's write buffer.
//!
//! Invariant: every order of keys in the engine is Java's key comparator (nulls first, floats
//! by `Float.compare`, strings and binaries unsigned byte-wise).

pub mod key;
pub mod kv_merge;
pub mod levels;
pub mod merge;
pub mod merge_fn;
pub mod picker;
pub(crate) mod sorted_buffer;
pub mod sorted_runs;
