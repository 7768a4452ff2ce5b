//! The effective value of every option tidelake interprets: what each typed getter returns
//! for a table, defaults applied. Bindings expose it so that callers (the CLI, Spark) read
//! defaults, sizes and durations from here instead of parsing options again.
//!
//! Invariant: every entry is produced by the typed getter of its key, so this view can never
//! disagree with what the engine does.

use std::time::Duration;

use super::*;

/// A typed option value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    Bool(bool),
    Int(i64),
    /// A memory size, in bytes.
    Bytes(u64),
    Duration(Duration),
    Text(String),
    /// A comma-separated list, split as Java splits it.
    List(Vec<String>),
    /// Not set and without a default (e.g. `commit.timeout`, `rowkind.field`).
    Unset,
}

/// One option and its effective value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedOption {
    pub key: &'static str,
    pub value: OptionValue,
}

impl Options {
    /// The effective value of every option tidelake interprets, in a stable order; an
    /// option whose value does not parse is an [`Error::Invalid`] naming it.
    /// `has_primary_key` selects the defaults that depend on the table kind.
    pub fn resolved(&self, has_primary_key: bool) -> Result<Vec<ResolvedOption>> {
        use OptionValue::{Bool, Bytes, Int, List, Text};
        let text = |s: &str| Text(s.to_string());
        let duration = |d: Option<Duration>| d.map_or(OptionValue::Unset, OptionValue::Duration);
        let entries = vec![
            (BUCKET, Int(self.bucket()?.into())),
            (BUCKET_KEY, List(self.bucket_key())),
            (
                BUCKET_FUNCTION_TYPE,
                text(self.bucket_function_type()?.as_str()),
            ),
            (
                DYNAMIC_BUCKET_TARGET_ROW_NUM,
                Int(self.dynamic_bucket_target_row_num()?),
            ),
            (
                CROSS_PARTITION_UPSERT_INDEX_TTL,
                duration(self.cross_partition_upsert_index_ttl()?),
            ),
            (
                LOOKUP_CACHE_MAX_MEMORY_SIZE,
                Bytes(self.lookup_cache_max_memory_size()?),
            ),
            (
                POSTPONE_DEFAULT_BUCKET_NUM,
                Int(self.postpone_default_bucket_num()?.into()),
            ),
            (FILE_FORMAT, Text(self.file_format())),
            (FILE_COMPRESSION, text(self.file_compression())),
            (
                FILE_COMPRESSION_ZSTD_LEVEL,
                Int(self.file_compression_zstd_level()?.into()),
            ),
            (
                FILE_SUFFIX_INCLUDE_COMPRESSION,
                Bool(self.file_suffix_include_compression()?),
            ),
            (
                DATA_FILE_EXTERNAL_PATHS,
                List(self.data_file_external_roots()?),
            ),
            (
                DATA_FILE_EXTERNAL_PATHS_STRATEGY,
                text(self.external_path_strategy()?.as_str()),
            ),
            (DATA_FILE_PREFIX, text(self.data_file_prefix())),
            (CHANGELOG_FILE_PREFIX, text(self.changelog_file_prefix())),
            (DATA_FILE_THIN_MODE, Bool(self.data_file_thin_mode()?)),
            (
                TARGET_FILE_SIZE,
                Bytes(self.target_file_size(has_primary_key)?),
            ),
            (WRITE_BUFFER_SIZE, Bytes(self.write_buffer_size()?)),
            (SOURCE_SPLIT_TARGET_SIZE, Bytes(self.split_target_size()?)),
            (
                SOURCE_SPLIT_OPEN_FILE_COST,
                Bytes(self.split_open_file_cost()?),
            ),
            (PAGE_SIZE, Bytes(self.page_size()?)),
            (MANIFEST_COMPRESSION, text(self.manifest_compression())),
            (
                MANIFEST_TARGET_FILE_SIZE,
                Bytes(self.manifest_target_file_size()?),
            ),
            (
                MANIFEST_MERGE_MIN_COUNT,
                Int(self.manifest_merge_min_count()?.into()),
            ),
            (
                MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE,
                Bytes(self.manifest_full_compaction_threshold_size()?),
            ),
            (METADATA_STATS_MODE, text(self.metadata_stats_mode())),
            (
                METADATA_STATS_DENSE_STORE,
                Bool(self.metadata_stats_dense_store()?),
            ),
            (MERGE_ENGINE, text(self.merge_engine()?.as_str())),
            (SEQUENCE_FIELD, List(self.sequence_field())),
            (
                SEQUENCE_FIELD_SORT_ORDER,
                text(self.sequence_field_sort_order()?.as_str()),
            ),
            (IGNORE_DELETE, Bool(self.ignore_delete()?)),
            (
                ROWKIND_FIELD,
                self.rowkind_field().map_or(OptionValue::Unset, text),
            ),
            (PRIMARY_KEY_NULLABLE, Bool(self.primary_key_nullable()?)),
            (
                PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
                Bool(self.partial_update_remove_record_on_delete()?),
            ),
            (
                AGGREGATION_REMOVE_RECORD_ON_DELETE,
                Bool(self.aggregation_remove_record_on_delete()?),
            ),
            (
                CHANGELOG_PRODUCER,
                text(self.changelog_producer()?.as_str()),
            ),
            (LOOKUP_WAIT, Bool(self.lookup_wait()?)),
            (
                INCREMENTAL_BETWEEN_SCAN_MODE,
                text(self.incremental_between_scan_mode()?.as_str()),
            ),
            (
                INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
                Bool(self.incremental_between_tag_to_snapshot()?),
            ),
            (
                CHANGELOG_PRODUCER_ROW_DEDUPLICATE,
                Bool(self.changelog_producer_row_deduplicate()?),
            ),
            (
                DELETION_VECTORS_ENABLED,
                Bool(self.deletion_vectors_enabled()?),
            ),
            (
                DELETION_VECTORS_MERGE_ON_READ,
                Bool(self.deletion_vectors_merge_on_read()?),
            ),
            (
                DELETION_VECTORS_BITMAP64,
                Bool(self.deletion_vectors_bitmap64()?),
            ),
            (
                DELETION_VECTOR_INDEX_FILE_TARGET_SIZE,
                Bytes(self.deletion_vector_index_file_target_size()?),
            ),
            (PARTITION_DEFAULT_NAME, text(self.partition_default_name())),
            (PARTITION_LEGACY_NAME, Bool(self.partition_legacy_name()?)),
            (
                NUM_SORTED_RUN_COMPACTION_TRIGGER,
                Int(self.num_sorted_run_compaction_trigger()?.into()),
            ),
            (
                NUM_SORTED_RUN_STOP_TRIGGER,
                Int(self.num_sorted_run_stop_trigger()?.into()),
            ),
            (NUM_LEVELS, Int(self.num_levels()?.into())),
            (ROW_TRACKING_ENABLED, Bool(self.row_tracking_enabled()?)),
            (DATA_EVOLUTION_ENABLED, Bool(self.data_evolution_enabled()?)),
            (WRITE_ONLY, Bool(self.write_only()?)),
            (
                SNAPSHOT_NUM_RETAINED_MIN,
                Int(self.snapshot_num_retained_min()?.into()),
            ),
            (
                SNAPSHOT_NUM_RETAINED_MAX,
                Int(self.snapshot_num_retained_max()?.into()),
            ),
            (
                SNAPSHOT_TIME_RETAINED,
                OptionValue::Duration(self.snapshot_time_retained()?),
            ),
            (
                SNAPSHOT_EXPIRE_LIMIT,
                Int(self.snapshot_expire_limit()?.into()),
            ),
            (COMMIT_MAX_RETRIES, Int(self.commit_max_retries()?.into())),
            (
                COMMIT_MIN_RETRY_WAIT,
                OptionValue::Duration(self.commit_min_retry_wait()?),
            ),
            (
                COMMIT_MAX_RETRY_WAIT,
                OptionValue::Duration(self.commit_max_retry_wait()?),
            ),
            (COMMIT_TIMEOUT, duration(self.commit_timeout()?)),
            (
                PARTITION_EXPIRATION_TIME,
                duration(self.partition_expiration_time()?),
            ),
            (
                PARTITION_EXPIRATION_STRATEGY,
                text(self.partition_expiration_strategy()?.as_str()),
            ),
            (
                PARTITION_EXPIRATION_MAX_NUM,
                Int(self.partition_expiration_max_num()?.into()),
            ),
            (
                TAG_DEFAULT_TIME_RETAINED,
                duration(self.tag_default_time_retained()?),
            ),
            (
                CONSUMER_EXPIRATION_TIME,
                duration(self.consumer_expiration_time()?),
            ),
            (
                CHANGELOG_TIME_RETAINED,
                duration(self.changelog_time_retained()?),
            ),
            (FORCE_LOOKUP, Bool(self.force_lookup()?)),
        ];
        Ok(entries
            .into_iter()
            .map(|(key, value)| ResolvedOption { key, value })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::opts;

    fn value(resolved: &[ResolvedOption], key: &str) -> OptionValue {
        resolved
            .iter()
            .find(|r| r.key == key)
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn defaults_follow_the_table_kind_and_set_values_are_typed() {
        let set = opts(&[
            ("snapshot.time-retained", "30 min"),
            ("num-sorted-run.compaction-trigger", "7"),
            ("sequence.field", "a, b,"),
            ("partition.default-name", "NULLS"),
        ]);
        let r = set.resolved(true).unwrap();
        assert_eq!(
            value(&r, SNAPSHOT_TIME_RETAINED),
            OptionValue::Duration(Duration::from_secs(1800))
        );
        assert_eq!(
            value(&r, NUM_SORTED_RUN_COMPACTION_TRIGGER),
            OptionValue::Int(7)
        );
        assert_eq!(value(&r, NUM_SORTED_RUN_STOP_TRIGGER), OptionValue::Int(10));
        assert_eq!(
            value(&r, SEQUENCE_FIELD),
            OptionValue::List(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            value(&r, PARTITION_DEFAULT_NAME),
            OptionValue::Text("NULLS".into())
        );
        assert_eq!(value(&r, TARGET_FILE_SIZE), OptionValue::Bytes(128 * MIB));
        assert_eq!(value(&r, COMMIT_TIMEOUT), OptionValue::Unset);
        let append = Options::new().resolved(false).unwrap();
        assert_eq!(
            value(&append, TARGET_FILE_SIZE),
            OptionValue::Bytes(256 * MIB)
        );
        assert_eq!(
            value(&append, PARTITION_DEFAULT_NAME),
            OptionValue::Text("__DEFAULT_PARTITION__".into())
        );
        assert_eq!(value(&append, SNAPSHOT_EXPIRE_LIMIT), OptionValue::Int(50));
    }

    #[test]
    fn a_bad_value_names_its_option() {
        let bad = opts(&[("snapshot.expire.limit", "many")]);
        let err = bad.resolved(false).unwrap_err().to_string();
        assert!(err.contains("snapshot.expire.limit"), "{err}");
    }
}
