//! What writers of postpone-bucket tables (`bucket = -2`, primary key) do differently (Java
//! 1.3.1 `PostponeBucketFileStoreWrite`, `PostponeBucketWriter`, `PostponeBucketRowKeyExtractor`).
//!
//! * Every row goes to bucket [`POSTPONE_BUCKET`] of its partition (`bucket-postpone/`), whose
//!   `_TOTAL_BUCKETS` is -2 too. Batch reads skip that bucket (Java `onlyReadRealBuckets`): the
//!   rows become visible once compaction moves them into real buckets
//!   (`crate::compact::postpone`).
//! * Rows are written as they come, neither sorted nor merged, each with `_SEQUENCE_NUMBER`
//!   [`UNKNOWN_SEQUENCE`] (Java `KeyValue.UNKNOWN_SEQUENCE`; a file's min/max key are its first
//!   and last row's key). What orders them is their position in their file and the files'
//!   creation times, which the compaction replays.
//! * Files are named `<data-file.prefix>-u-<user>-s-<write id>-w-<uuid>-<n>`: Java's compaction
//!   parses the write id ([`file_prefix`]) and fails on any other name. tidelake writers do not
//!   know their commit user when they open, so `<user>` is a fresh UUID per writer.
//! * No statistics (Java sets `metadata.stats-mode = none` for these files, key columns
//!   included). Java writes them as Avro; tidelake writes its data-file format (Parquet), which
//!   Java's compaction reads as well (readers go by file extension).
//! * Writers restore nothing and never compact; postpone writers never conflict with each other
//!   (their commits only add files).

use tidelake_spec::options::{Options, METADATA_STATS_MODE};
use tidelake_spec::schema::TableSchema;

use crate::io::Env;

pub use tidelake_spec::bucket::POSTPONE_BUCKET;

/// `_SEQUENCE_NUMBER` of every row in a postpone-bucket file.
pub const UNKNOWN_SEQUENCE: i64 = -1;

/// Java's file-name prefix of one postpone writer: `<data-file.prefix>-u-<user>-s-<write id>-w-`.
pub fn file_prefix(options: &Options, user: &str, write_id: u32) -> String {
    format!("{}-u-{user}-s-{write_id}-w-", options.data_file_prefix())
}

/// A new writer's prefix ([`file_prefix`] with a fresh user and write id in `0..i32::MAX`, as
/// Java draws them).
pub fn new_file_prefix(options: &Options, env: &Env) -> String {
    let write_id = (env.uuid().as_u128() as u32) % (i32::MAX as u32);
    file_prefix(options, &env.uuid_string(), write_id)
}

/// The table's options as postpone files are written with: no statistics, key columns included.
pub fn file_options(schema: &TableSchema) -> Options {
    let mut options = schema.options().clone();
    options.set(METADATA_STATS_MODE, "none");
    for key in schema.trimmed_primary_keys() {
        options.set(format!("fields._KEY_{key}.stats-mode"), "none");
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_has_the_write_id_java_parses() {
        let options: Options = [("data-file.prefix".to_string(), "d-".to_string())]
            .into_iter()
            .collect();
        assert_eq!(file_prefix(&options, "u1", 42), "d--u-u1-s-42-w-");
        let prefix = new_file_prefix(&Options::default(), &Env::default());
        // Java `PostponeBucketFileStoreWrite.getWriteId`: the int between "-s-" and the next '-'.
        let after = prefix.split("-s-").nth(1).unwrap();
        let id: i32 = after[..after.find('-').unwrap()].parse().unwrap();
        assert!(id >= 0);
        assert!(prefix.starts_with("data--u-") && prefix.ends_with("-w-"));
    }
}
