//! Table options (`options` of a schema file) with Paimon's defaults (Java `CoreOptions`).
//!
//! [`Options`] is an insertion-ordered string map: schema files keep their option order when
//! re-encoded. Raw values are only interpreted by the typed getters, which apply the Java
//! default when a key is absent and return [`Error::Invalid`] naming the key when a value does
//! not parse. Parsing follows Java: booleans are `true`/`false` in any case, enums compare
//! case-insensitively with their string value, memory sizes follow `MemorySize.parse` and
//! durations `TimeUtils.parseDuration` (a bare number is bytes / milliseconds).

use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

pub const BUCKET: &str = "bucket";
/// Options a table with snapshots keeps (Java's `@Immutable` options of `CoreOptions` 1.3.1,
/// `CoreOptions.IMMUTABLE_OPTIONS`): `SchemaManager.checkAlterTableOption` refuses to set or
/// remove them.
pub const IMMUTABLE_OPTIONS: &[&str] = &[
    "aggregation.remove-record-on-delete",
    "bucket-function.type",
    "bucket-key",
    "data-evolution.enabled",
    "data-file.path-directory",
    "force-lookup",
    "ignore-delete",
    IGNORE_UPDATE_BEFORE,
    INDEX_FILE_IN_DATA_FILE_DIR,
    "merge-engine",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "partition",
    "primary-key",
    "rowkind.field",
];
pub const BUCKET_KEY: &str = "bucket-key";
/// The table's location, which catalogs may put among its options (Java `CoreOptions.PATH`).
pub const PATH: &str = "path";
pub const DYNAMIC_PARTITION_OVERWRITE: &str = "dynamic-partition-overwrite";
pub const BUCKET_FUNCTION_TYPE: &str = "bucket-function.type";
pub const FILE_FORMAT: &str = "file.format";
pub const FILE_COMPRESSION: &str = "file.compression";
pub const FILE_COMPRESSION_ZSTD_LEVEL: &str = "file.compression.zstd-level";
pub const MERGE_ENGINE: &str = "merge-engine";
pub const SEQUENCE_FIELD: &str = "sequence.field";
pub const UPSERT_KEY: &str = "upsert-key";
pub const SEQUENCE_FIELD_SORT_ORDER: &str = "sequence.field.sort-order";
pub const IGNORE_DELETE: &str = "ignore-delete";
/// Older spellings Java still reads for `ignore-delete`, in lookup order.
pub const IGNORE_DELETE_FALLBACK_KEYS: [&str; 3] = [
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
];
/// Whether writes drop update-before (`-U`) rows (Java `RowKindFilter`).
pub const IGNORE_UPDATE_BEFORE: &str = "ignore-update-before";
pub const CHANGELOG_PRODUCER: &str = "changelog-producer";
/// Whether commits of tables that need lookup wait for compaction; Java still reads the older
/// `changelog-producer.lookup-wait` when `lookup-wait` is absent.
pub const LOOKUP_WAIT: &str = "lookup-wait";
pub const LOOKUP_WAIT_FALLBACK_KEY: &str = "changelog-producer.lookup-wait";
pub const CHANGELOG_PRODUCER_ROW_DEDUPLICATE: &str = "changelog-producer.row-deduplicate";
/// Value columns `changelog-producer.row-deduplicate` does not compare.
pub const CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS: &str =
    "changelog-producer.row-deduplicate-ignore-fields";
pub const INCREMENTAL_BETWEEN_SCAN_MODE: &str = "incremental-between-scan-mode";
pub const INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT: &str = "incremental-between-tag-to-snapshot";
pub const DELETION_VECTORS_ENABLED: &str = "deletion-vectors.enabled";
/// Whether index files go with the data files of their bucket instead of `index/` (Java
/// `CoreOptions.INDEX_FILE_IN_DATA_FILE_DIR`).
pub const INDEX_FILE_IN_DATA_FILE_DIR: &str = "index-file-in-data-file-dir";
/// Where Iceberg-compatible metadata goes (`disabled` by default).
pub const METADATA_ICEBERG_STORAGE: &str = "metadata.iceberg.storage";
/// Iceberg's table format version of the metadata (2 or 3; 3 exports deletion vectors).
pub const METADATA_ICEBERG_FORMAT_VERSION: &str = "metadata.iceberg.format-version";
pub const DELETION_VECTORS_MERGE_ON_READ: &str = "deletion-vectors.merge-on-read";
pub const DELETION_VECTORS_BITMAP64: &str = "deletion-vectors.bitmap64";
/// Singular "vector", as in Java.
pub const DELETION_VECTOR_INDEX_FILE_TARGET_SIZE: &str = "deletion-vector.index-file.target-size";
pub const PARTITION_DEFAULT_NAME: &str = "partition.default-name";
pub const PARTITION_LEGACY_NAME: &str = "partition.legacy-name";
/// Whether a catalog with a metastore (Hive) registers the table's partitions there.
pub const METASTORE_PARTITIONED_TABLE: &str = "metastore.partitioned-table";
/// A non-partitioned table whose tags a metastore (Hive) shows as partitions of this field.
pub const METASTORE_TAG_TO_PARTITION: &str = "metastore.tag-to-partition";
/// Where data files go under the table directory (Java `CoreOptions.DATA_FILE_PATH_DIRECTORY`).
pub const DATA_FILE_PATH_DIRECTORY: &str = "data-file.path-directory";
pub const ROWKIND_FIELD: &str = "rowkind.field";
pub const PRIMARY_KEY_NULLABLE: &str = "primary-key.nullable";
pub const TARGET_FILE_SIZE: &str = "target-file-size";
pub const CLUSTERING_COLUMNS: &str = "clustering.columns";
/// Older spelling Java still reads for `clustering.columns`.
pub const CLUSTERING_COLUMNS_FALLBACK_KEY: &str = "sink.clustering.by-columns";
pub const CLUSTERING_STRATEGY: &str = "clustering.strategy";
/// Older spelling Java still reads for `clustering.strategy`.
pub const CLUSTERING_STRATEGY_FALLBACK_KEY: &str = "sink.clustering.strategy";
pub const CLUSTERING_INCREMENTAL: &str = "clustering.incremental";
pub const CLUSTERING_HISTORY_PARTITION_IDLE: &str =
    "clustering.history-partition.idle-to-full-sort";
pub const CLUSTERING_HISTORY_PARTITION_LIMIT: &str = "clustering.history-partition.limit";
pub const ZORDER_VAR_LENGTH_CONTRIBUTION: &str = "zorder.var-length-contribution";
pub const LOCAL_SORT_MAX_NUM_FILE_HANDLES: &str = "local-sort.max-num-file-handles";
pub const WRITE_BUFFER_SIZE: &str = "write-buffer-size";
pub const PAGE_SIZE: &str = "page-size";
pub const DATA_FILE_PREFIX: &str = "data-file.prefix";
pub const CHANGELOG_FILE_PREFIX: &str = "changelog-file.prefix";
pub const FILE_SUFFIX_INCLUDE_COMPRESSION: &str = "file.suffix.include.compression";
pub const DATA_FILE_THIN_MODE: &str = "data-file.thin-mode";
/// The file format of manifest lists, manifests and index manifests (Java default `avro`, the
/// only one tidelake reads and writes: [`Options::check_manifest_format`]).
pub const MANIFEST_FORMAT: &str = "manifest.format";
pub const MANIFEST_COMPRESSION: &str = "manifest.compression";
pub const MANIFEST_TARGET_FILE_SIZE: &str = "manifest.target-file-size";
pub const MANIFEST_MERGE_MIN_COUNT: &str = "manifest.merge-min-count";
pub const MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE: &str = "manifest.full-compaction-threshold-size";
pub const NUM_SORTED_RUN_COMPACTION_TRIGGER: &str = "num-sorted-run.compaction-trigger";
pub const NUM_SORTED_RUN_STOP_TRIGGER: &str = "num-sorted-run.stop-trigger";
pub const NUM_LEVELS: &str = "num-levels";
pub const COMPACTION_MIN_FILE_NUM: &str = "compaction.min.file-num";
pub const COMPACTION_DELETE_RATIO_THRESHOLD: &str = "compaction.delete-ratio-threshold";
pub const SOURCE_SPLIT_TARGET_SIZE: &str = "source.split.target-size";
pub const SOURCE_SPLIT_OPEN_FILE_COST: &str = "source.split.open-file-cost";
pub const SNAPSHOT_NUM_RETAINED_MIN: &str = "snapshot.num-retained.min";
pub const SNAPSHOT_NUM_RETAINED_MAX: &str = "snapshot.num-retained.max";
pub const SNAPSHOT_TIME_RETAINED: &str = "snapshot.time-retained";
pub const SNAPSHOT_EXPIRE_LIMIT: &str = "snapshot.expire.limit";
pub const METADATA_STATS_MODE: &str = "metadata.stats-mode";
pub const METADATA_STATS_DENSE_STORE: &str = "metadata.stats-dense-store";
pub const FIELDS_DEFAULT_AGGREGATE_FUNCTION: &str = "fields.default-aggregate-function";
pub const PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE: &str = "partial-update.remove-record-on-delete";
pub const AGGREGATION_REMOVE_RECORD_ON_DELETE: &str = "aggregation.remove-record-on-delete";
pub const COMMIT_MAX_RETRIES: &str = "commit.max-retries";
pub const COMMIT_MIN_RETRY_WAIT: &str = "commit.min-retry-wait";
pub const COMMIT_MAX_RETRY_WAIT: &str = "commit.max-retry-wait";
pub const COMMIT_TIMEOUT: &str = "commit.timeout";
pub const DYNAMIC_BUCKET_TARGET_ROW_NUM: &str = "dynamic-bucket.target-row-num";
pub const CROSS_PARTITION_UPSERT_INDEX_TTL: &str = "cross-partition-upsert.index-ttl";
/// Java gives the cache of the cross-partition key index (`GlobalIndexAssigner`) this size.
pub const LOOKUP_CACHE_MAX_MEMORY_SIZE: &str = "lookup.cache-max-memory-size";
/// Java `FlinkConnectorOptions.POSTPONE_DEFAULT_BUCKET_NUM` (read by Java's compaction job).
pub const POSTPONE_DEFAULT_BUCKET_NUM: &str = "postpone.default-bucket-num";
pub const ROW_TRACKING_ENABLED: &str = "row-tracking.enabled";
pub const DATA_EVOLUTION_ENABLED: &str = "data-evolution.enabled";
pub const WRITE_ONLY: &str = "write-only";
/// Writers fully compact the table at every commit whose identifier is a multiple of this.
pub const FULL_COMPACTION_DELTA_COMMITS: &str = "full-compaction.delta-commits";
/// Where a read starts (Paimon's startup modes).
pub const SCAN_MODE: &str = "scan.mode";
/// The `scan.mode` reading only data files created since a time.
pub const FROM_FILE_CREATION_TIME: &str = "from-file-creation-time";
/// The epoch-ms bound of [`FROM_FILE_CREATION_TIME`].
pub const SCAN_FILE_CREATION_TIME_MILLIS: &str = "scan.file-creation-time-millis";
/// Whether schema changes may turn a nullable column NOT NULL (Java refuses by default).
pub const ALTER_NULL_TO_NOT_NULL_DISABLED: &str = "alter-column-null-to-not-null.disabled";
/// The log system (Kafka) Java's Flink writers also send every change to, for Flink's streaming
/// reads (Java `FlinkConnectorOptions.LOG_SYSTEM`, default `none`).
pub const LOG_SYSTEM: &str = "log.system";
/// Older spelling Java still reads for `write-only`.
pub const WRITE_ONLY_FALLBACK_KEY: &str = "write.compaction-skip";

const MIB: u64 = 1024 * 1024;

/// `merge-engine`: how rows with the same primary key are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MergeEngine {
    Deduplicate,
    PartialUpdate,
    Aggregation,
    FirstRow,
}

/// `changelog-producer`: where changelog files come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangelogProducer {
    None,
    Input,
    Lookup,
    FullCompaction,
}

/// `incremental-between-scan-mode`: what a read of the changes between two snapshots returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IncrementalBetweenScanMode {
    /// `changelog` when the table has a changelog producer, else `delta`.
    Auto,
    /// The rows APPEND commits wrote.
    Delta,
    /// The changelog files.
    Changelog,
    /// The difference between the start and the end snapshot's rows.
    Diff,
}

/// `sequence.field.sort-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    Ascending,
    Descending,
}

/// `bucket-function.type`: how a fixed bucket is computed from the bucket key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BucketFunctionType {
    Default,
    Mod,
    Hive,
}

/// How rows are ordered by several columns (Java `CoreOptions.OrderType` without `none`): the
/// `order_strategy` of sort compaction and the `clustering.strategy` of writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderType {
    /// Lexicographically by the columns.
    Order,
    /// By the Z-order curve of the columns (Java `ZIndexer`).
    ZOrder,
    /// By the Hilbert curve of the columns (Java `HilbertIndexer`; two columns at least).
    Hilbert,
}

impl OrderType {
    /// `clustering.strategy = auto` for `columns` clustering columns (Java
    /// `CoreOptions.clusteringStrategy`): `order` for one, `zorder` for fewer than five,
    /// `hilbert` otherwise.
    pub fn auto(columns: usize) -> OrderType {
        match columns {
            0 | 1 => OrderType::Order,
            2..=4 => OrderType::ZOrder,
            _ => OrderType::Hilbert,
        }
    }
}

/// Implements `as_str` and case-insensitive `FromStr` for an option enum.
macro_rules! option_enum {
    ($ty:ident, $key:expr, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// The option value Paimon writes for this variant.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($ty::$variant => $text),+
                }
            }
        }

        impl FromStr for $ty {
            type Err = Error;

            fn from_str(s: &str) -> Result<Self> {
                $(if s.eq_ignore_ascii_case($text) {
                    return Ok($ty::$variant);
                })+
                Err(Error::Invalid(format!(
                    "option '{}': '{}' is not one of [{}]",
                    $key,
                    s,
                    [$($text),+].join(", ")
                )))
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

option_enum!(MergeEngine, MERGE_ENGINE, {
    Deduplicate => "deduplicate",
    PartialUpdate => "partial-update",
    Aggregation => "aggregation",
    FirstRow => "first-row",
});

option_enum!(ChangelogProducer, CHANGELOG_PRODUCER, {
    None => "none",
    Input => "input",
    Lookup => "lookup",
    FullCompaction => "full-compaction",
});

option_enum!(IncrementalBetweenScanMode, INCREMENTAL_BETWEEN_SCAN_MODE, {
    Auto => "auto",
    Delta => "delta",
    Changelog => "changelog",
    Diff => "diff",
});

option_enum!(SortOrder, SEQUENCE_FIELD_SORT_ORDER, {
    Ascending => "ascending",
    Descending => "descending",
});

option_enum!(OrderType, CLUSTERING_STRATEGY, {
    Order => "order",
    ZOrder => "zorder",
    Hilbert => "hilbert",
});

option_enum!(BucketFunctionType, BUCKET_FUNCTION_TYPE, {
    Default => "default",
    Mod => "mod",
    Hive => "hive",
});

// Declared after `option_enum!` so that the submodules can use it.
mod external_paths;
pub mod known;
mod maintenance;
mod mark_done;
mod merge_fn;
mod record_level;
mod refused;
mod resolved;

pub use external_paths::*;
pub use maintenance::*;
pub use mark_done::*;
pub use record_level::*;

pub use merge_fn::{
    NestedKeyNullStrategy, SequenceGroupOption, PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
};
pub use resolved::{OptionValue, ResolvedOption};

/// Table options: an insertion-ordered map from option key to raw string value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    entries: Vec<(String, String)>,
}

impl FromIterator<(String, String)> for Options {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut options = Options::new();
        for (key, value) in iter {
            options.set(key, value);
        }
        options
    }
}

impl Options {
    pub fn new() -> Self {
        Options::default()
    }

    /// The raw value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`; an existing key keeps its position, a new one goes last.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let position = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(position).1)
    }

    /// Entries in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    // ---- generic typed access ---------------------------------------------------------------

    /// `key` parsed as a Java int; `None` when absent.
    pub fn get_i32(&self, key: &str) -> Result<Option<i32>> {
        self.parse_with(key, |v| v.parse::<i32>().map_err(|e| e.to_string()))
    }

    /// `key` parsed as a Java long; `None` when absent.
    pub fn get_i64(&self, key: &str) -> Result<Option<i64>> {
        self.parse_with(key, |v| v.parse::<i64>().map_err(|e| e.to_string()))
    }

    /// `key` parsed as a boolean (`true`/`false`, any case); `None` when absent.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        self.parse_with(key, |v| {
            if v.eq_ignore_ascii_case("true") {
                Ok(true)
            } else if v.eq_ignore_ascii_case("false") {
                Ok(false)
            } else {
                Err("expected true or false".to_string())
            }
        })
    }

    /// `key` parsed as a memory size in bytes (see [`parse_memory_size`]); `None` when absent.
    pub fn get_memory_size(&self, key: &str) -> Result<Option<u64>> {
        self.parse_with(key, parse_memory_size)
    }

    /// `key` parsed as a duration (see [`parse_duration`]); `None` when absent.
    pub fn get_duration(&self, key: &str) -> Result<Option<Duration>> {
        self.parse_with(key, parse_duration)
    }

    fn parse_with<T>(
        &self,
        key: &str,
        parse: impl FnOnce(&str) -> std::result::Result<T, String>,
    ) -> Result<Option<T>> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => parse(java_trim(raw))
                .map(Some)
                .map_err(|reason| Error::Invalid(format!("option '{key}' = '{raw}': {reason}"))),
        }
    }

    fn get_enum<T: FromStr<Err = Error>>(&self, key: &str, default: T) -> Result<T> {
        self.get(key)
            .map_or(Ok(default), |v| T::from_str(java_trim(v)))
    }

    // ---- bucketing --------------------------------------------------------------------------

    /// `bucket`: number of buckets; -1 dynamic, -2 postpone. Default -1.
    pub fn bucket(&self) -> Result<i32> {
        or_default(self.get_i32(BUCKET), -1)
    }

    /// `bucket-key` split on `,` (names not trimmed, as Java); empty when unset or blank.
    pub fn bucket_key(&self) -> Vec<String> {
        match self.get(BUCKET_KEY) {
            Some(v) if !v.trim().is_empty() => {
                java_split(v).into_iter().map(str::to_string).collect()
            }
            _ => Vec::new(),
        }
    }

    /// `bucket-function.type`, default `default`.
    pub fn bucket_function_type(&self) -> Result<BucketFunctionType> {
        self.get_enum(BUCKET_FUNCTION_TYPE, BucketFunctionType::Default)
    }

    /// `dynamic-bucket.target-row-num`, default 2,000,000.
    pub fn dynamic_bucket_target_row_num(&self) -> Result<i64> {
        or_default(self.get_i64(DYNAMIC_BUCKET_TARGET_ROW_NUM), 2_000_000)
    }

    /// `cross-partition-upsert.index-ttl`: how long a key of a cross-partition-upsert table
    /// stays in the writer's key index (unset: forever).
    pub fn cross_partition_upsert_index_ttl(&self) -> Result<Option<Duration>> {
        self.get_duration(CROSS_PARTITION_UPSERT_INDEX_TTL)
    }

    /// `lookup.cache-max-memory-size`, default 256 MiB.
    pub fn lookup_cache_max_memory_size(&self) -> Result<u64> {
        or_default(
            self.get_memory_size(LOOKUP_CACHE_MAX_MEMORY_SIZE),
            256 * MIB,
        )
    }

    /// `postpone.default-bucket-num`: buckets of a partition of a postpone-bucket table that
    /// has none yet when its postponed rows are compacted. Default 1.
    pub fn postpone_default_bucket_num(&self) -> Result<i32> {
        or_default(self.get_i32(POSTPONE_DEFAULT_BUCKET_NUM), 1)
    }

    // ---- files ------------------------------------------------------------------------------

    /// `file.format`, lower-cased as Java's `fileFormatString()`; default `parquet`.
    pub fn file_format(&self) -> String {
        self.get(FILE_FORMAT).unwrap_or("parquet").to_lowercase()
    }

    /// `file.compression`, default `zstd`.
    pub fn file_compression(&self) -> &str {
        self.get(FILE_COMPRESSION).unwrap_or("zstd")
    }

    /// `file.compression.zstd-level`, default 1.
    pub fn file_compression_zstd_level(&self) -> Result<i32> {
        or_default(self.get_i32(FILE_COMPRESSION_ZSTD_LEVEL), 1)
    }

    /// `file.suffix.include.compression`, default false.
    pub fn file_suffix_include_compression(&self) -> Result<bool> {
        or_default(self.get_bool(FILE_SUFFIX_INCLUDE_COMPRESSION), false)
    }

    /// `data-file.prefix`, default `data-`.
    pub fn data_file_prefix(&self) -> &str {
        self.get(DATA_FILE_PREFIX).unwrap_or("data-")
    }

    /// `changelog-file.prefix`, default `changelog-`.
    pub fn changelog_file_prefix(&self) -> &str {
        self.get(CHANGELOG_FILE_PREFIX).unwrap_or("changelog-")
    }

    /// `data-file.thin-mode` (no `_KEY_` columns in PK data files), default false.
    pub fn data_file_thin_mode(&self) -> Result<bool> {
        or_default(self.get_bool(DATA_FILE_THIN_MODE), false)
    }

    /// `target-file-size` in bytes; default 128 MiB for primary-key tables, 256 MiB otherwise.
    pub fn target_file_size(&self, has_primary_key: bool) -> Result<u64> {
        let default = if has_primary_key {
            128 * MIB
        } else {
            256 * MIB
        };
        or_default(self.get_memory_size(TARGET_FILE_SIZE), default)
    }

    /// `write-buffer-size` in bytes, default 256 MiB.
    pub fn write_buffer_size(&self) -> Result<u64> {
        or_default(self.get_memory_size(WRITE_BUFFER_SIZE), 256 * MIB)
    }

    /// `page-size` in bytes, default 64 KiB.
    pub fn page_size(&self) -> Result<u64> {
        or_default(self.get_memory_size(PAGE_SIZE), 64 * 1024)
    }

    // ---- manifests and statistics -----------------------------------------------------------

    /// `manifest.compression`, default `zstd`.
    pub fn manifest_compression(&self) -> &str {
        self.get(MANIFEST_COMPRESSION).unwrap_or("zstd")
    }

    /// `manifest.target-file-size` in bytes, default 8 MiB.
    pub fn manifest_target_file_size(&self) -> Result<u64> {
        or_default(self.get_memory_size(MANIFEST_TARGET_FILE_SIZE), 8 * MIB)
    }

    /// `manifest.merge-min-count`, default 30.
    pub fn manifest_merge_min_count(&self) -> Result<i32> {
        or_default(self.get_i32(MANIFEST_MERGE_MIN_COUNT), 30)
    }

    /// `manifest.full-compaction-threshold-size` in bytes, default 16 MiB.
    pub fn manifest_full_compaction_threshold_size(&self) -> Result<u64> {
        or_default(
            self.get_memory_size(MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE),
            16 * MIB,
        )
    }

    /// `metadata.stats-mode`, default `truncate(16)`.
    pub fn metadata_stats_mode(&self) -> &str {
        self.get(METADATA_STATS_MODE).unwrap_or("truncate(16)")
    }

    /// Stats mode of one column: `fields.<column>.stats-mode`, else `metadata.stats-mode`.
    pub fn field_stats_mode(&self, column: &str) -> &str {
        self.get(&format!("fields.{column}.stats-mode"))
            .unwrap_or_else(|| self.metadata_stats_mode())
    }

    /// `metadata.stats-dense-store`, default true.
    pub fn metadata_stats_dense_store(&self) -> Result<bool> {
        or_default(self.get_bool(METADATA_STATS_DENSE_STORE), true)
    }

    // ---- merge engine -----------------------------------------------------------------------

    /// `merge-engine`, default `deduplicate`.
    pub fn merge_engine(&self) -> Result<MergeEngine> {
        self.get_enum(MERGE_ENGINE, MergeEngine::Deduplicate)
    }

    /// `upsert-key` split on `,` (names not trimmed, as Java); empty when unset or blank. An
    /// append table with upsert keys has its batch appends merged on them (Java Spark's
    /// `RewriteUpsertTable`; see `tidelake.Table.write`).
    pub fn upsert_key(&self) -> Vec<String> {
        match self.get(UPSERT_KEY) {
            Some(v) if !v.is_empty() => java_split(v).into_iter().map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// `sequence.field` split on `,` with each name trimmed; empty when unset.
    pub fn sequence_field(&self) -> Vec<String> {
        self.get(SEQUENCE_FIELD)
            .map(|v| {
                java_split(v)
                    .into_iter()
                    .map(|s| java_trim(s).to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `sequence.field.sort-order`, default ascending.
    pub fn sequence_field_sort_order(&self) -> Result<SortOrder> {
        self.get_enum(SEQUENCE_FIELD_SORT_ORDER, SortOrder::Ascending)
    }

    /// `ignore-delete` (or its fallback keys), default false.
    pub fn ignore_delete(&self) -> Result<bool> {
        if self.contains_key(IGNORE_DELETE) {
            return or_default(self.get_bool(IGNORE_DELETE), false);
        }
        for key in IGNORE_DELETE_FALLBACK_KEYS {
            if let Some(value) = self.get_bool(key)? {
                return Ok(value);
            }
        }
        Ok(false)
    }

    /// `ignore-update-before`, default false.
    pub fn ignore_update_before(&self) -> Result<bool> {
        or_default(self.get_bool(IGNORE_UPDATE_BEFORE), false)
    }

    /// `lookup-wait` (or its fallback key), default true.
    pub fn lookup_wait(&self) -> Result<bool> {
        let key = if self.contains_key(LOOKUP_WAIT) {
            LOOKUP_WAIT
        } else {
            LOOKUP_WAIT_FALLBACK_KEY
        };
        or_default(self.get_bool(key), true)
    }

    /// `rowkind.field`: string column holding each row's kind, if configured.
    pub fn rowkind_field(&self) -> Option<&str> {
        self.get(ROWKIND_FIELD)
    }

    /// `dynamic-partition-overwrite`: whether an overwrite without a partition replaces only the
    /// partitions written (else the whole table). Default true.
    pub fn dynamic_partition_overwrite(&self) -> Result<bool> {
        or_default(self.get_bool(DYNAMIC_PARTITION_OVERWRITE), true)
    }

    /// `primary-key.nullable`, default false.
    pub fn primary_key_nullable(&self) -> Result<bool> {
        or_default(self.get_bool(PRIMARY_KEY_NULLABLE), false)
    }

    /// `fields.<column>.aggregate-function`, if set.
    pub fn field_aggregate_function(&self, column: &str) -> Option<&str> {
        self.get(&format!("fields.{column}.aggregate-function"))
    }

    /// `fields.default-aggregate-function`, if set.
    pub fn fields_default_aggregate_function(&self) -> Option<&str> {
        self.get(FIELDS_DEFAULT_AGGREGATE_FUNCTION)
    }

    /// `fields.<column>.ignore-retract`, default false.
    pub fn field_ignore_retract(&self, column: &str) -> Result<bool> {
        or_default(
            self.get_bool(&format!("fields.{column}.ignore-retract")),
            false,
        )
    }

    /// `partial-update.remove-record-on-delete`, default false.
    pub fn partial_update_remove_record_on_delete(&self) -> Result<bool> {
        or_default(self.get_bool(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE), false)
    }

    /// `aggregation.remove-record-on-delete`, default false.
    pub fn aggregation_remove_record_on_delete(&self) -> Result<bool> {
        or_default(self.get_bool(AGGREGATION_REMOVE_RECORD_ON_DELETE), false)
    }

    // ---- changelog and deletion vectors -----------------------------------------------------

    /// `changelog-producer`, default `none`.
    pub fn changelog_producer(&self) -> Result<ChangelogProducer> {
        self.get_enum(CHANGELOG_PRODUCER, ChangelogProducer::None)
    }

    /// `changelog-producer.row-deduplicate`, default false.
    pub fn changelog_producer_row_deduplicate(&self) -> Result<bool> {
        or_default(self.get_bool(CHANGELOG_PRODUCER_ROW_DEDUPLICATE), false)
    }

    /// `changelog-producer.row-deduplicate-ignore-fields` split on `,` (names not trimmed, as
    /// Java); empty when unset.
    pub fn changelog_producer_row_deduplicate_ignore_fields(&self) -> Vec<String> {
        self.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS)
            .map(|v| java_split(v).into_iter().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// `incremental-between-scan-mode`, default `auto`.
    pub fn incremental_between_scan_mode(&self) -> Result<IncrementalBetweenScanMode> {
        self.get_enum(
            INCREMENTAL_BETWEEN_SCAN_MODE,
            IncrementalBetweenScanMode::Auto,
        )
    }

    /// `incremental-between-tag-to-snapshot`, default false: changes between two tags are the
    /// difference of their snapshots; when true, the changes the snapshots between them
    /// committed (as for snapshot ids).
    pub fn incremental_between_tag_to_snapshot(&self) -> Result<bool> {
        or_default(self.get_bool(INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT), false)
    }

    /// `deletion-vectors.enabled`, default false.
    pub fn deletion_vectors_enabled(&self) -> Result<bool> {
        or_default(self.get_bool(DELETION_VECTORS_ENABLED), false)
    }

    /// `index-file-in-data-file-dir`, default false.
    pub fn index_file_in_data_file_dir(&self) -> Result<bool> {
        or_default(self.get_bool(INDEX_FILE_IN_DATA_FILE_DIR), false)
    }

    /// `deletion-vectors.merge-on-read`, default false.
    pub fn deletion_vectors_merge_on_read(&self) -> Result<bool> {
        or_default(self.get_bool(DELETION_VECTORS_MERGE_ON_READ), false)
    }

    /// `deletion-vectors.bitmap64`, default false.
    pub fn deletion_vectors_bitmap64(&self) -> Result<bool> {
        or_default(self.get_bool(DELETION_VECTORS_BITMAP64), false)
    }

    /// `deletion-vector.index-file.target-size` in bytes, default 2 MiB.
    pub fn deletion_vector_index_file_target_size(&self) -> Result<u64> {
        or_default(
            self.get_memory_size(DELETION_VECTOR_INDEX_FILE_TARGET_SIZE),
            2 * MIB,
        )
    }

    /// The creation-time bound of `scan.mode` = `from-file-creation-time` (Java
    /// `FileCreationTimeStartingScanner`): reads plan only the data files created at or after
    /// `scan.file-creation-time-millis` (epoch ms); `None` in every other mode. The mode is
    /// given explicitly here: the Python side resolves Paimon's `default` mode and names it.
    pub fn file_creation_time_filter(&self) -> Result<Option<i64>> {
        let mode = self.get(SCAN_MODE).map(str::trim);
        if !mode.is_some_and(|m| m.eq_ignore_ascii_case(FROM_FILE_CREATION_TIME)) {
            return Ok(None);
        }
        match self.get_i64(SCAN_FILE_CREATION_TIME_MILLIS)? {
            Some(ms) => Ok(Some(ms)),
            None => Err(Error::Invalid(format!(
                "{SCAN_MODE} {FROM_FILE_CREATION_TIME} needs {SCAN_FILE_CREATION_TIME_MILLIS}"
            ))),
        }
    }

    /// Whether batch scans hide level-0 files (Java `CoreOptions.batchScanSkipLevel0`):
    /// with deletion vectors enabled, unless `deletion-vectors.merge-on-read`; otherwise
    /// exactly when the merge engine is `first-row`.
    pub fn batch_scan_skip_level0(&self) -> Result<bool> {
        if self.deletion_vectors_enabled()? {
            return Ok(!self.deletion_vectors_merge_on_read()?);
        }
        Ok(self.merge_engine()? == MergeEngine::FirstRow)
    }

    // ---- partitions -------------------------------------------------------------------------

    /// `partition.default-name`, default `__DEFAULT_PARTITION__`.
    pub fn partition_default_name(&self) -> &str {
        self.get(PARTITION_DEFAULT_NAME)
            .unwrap_or("__DEFAULT_PARTITION__")
    }

    /// `data-file.path-directory`: the directory under the table root that holds the
    /// partition and bucket directories (`None`: the root itself, Java's default).
    pub fn data_file_path_directory(&self) -> Option<&str> {
        self.get(DATA_FILE_PATH_DIRECTORY)
    }

    /// `partition.legacy-name`, default true.
    pub fn partition_legacy_name(&self) -> Result<bool> {
        or_default(self.get_bool(PARTITION_LEGACY_NAME), true)
    }

    /// `metastore.partitioned-table`, default false.
    pub fn partitioned_table_in_metastore(&self) -> Result<bool> {
        or_default(self.get_bool(METASTORE_PARTITIONED_TABLE), false)
    }

    // ---- LSM --------------------------------------------------------------------------------

    /// `num-sorted-run.compaction-trigger`, default 5.
    pub fn num_sorted_run_compaction_trigger(&self) -> Result<i32> {
        or_default(self.get_i32(NUM_SORTED_RUN_COMPACTION_TRIGGER), 5)
    }

    /// `num-sorted-run.stop-trigger`, default trigger + 3, never below the trigger.
    pub fn num_sorted_run_stop_trigger(&self) -> Result<i32> {
        let trigger = self.num_sorted_run_compaction_trigger()?;
        let stop = self
            .get_i32(NUM_SORTED_RUN_STOP_TRIGGER)?
            .unwrap_or(trigger.saturating_add(3));
        Ok(stop.max(trigger))
    }

    /// `num-levels`, default trigger + 1.
    pub fn num_levels(&self) -> Result<i32> {
        match self.get_i32(NUM_LEVELS)? {
            Some(levels) => Ok(levels),
            None => Ok(self.num_sorted_run_compaction_trigger()?.saturating_add(1)),
        }
    }

    // ---- append compaction -------------------------------------------------------------------

    /// `compaction.min.file-num`, default 5: files an append bucket gathers before compacting.
    pub fn compaction_min_file_num(&self) -> Result<i32> {
        or_default(self.get_i32(COMPACTION_MIN_FILE_NUM), 5)
    }

    /// `compaction.delete-ratio-threshold`, default 0.2: the share of deleted rows above which
    /// an append file is compacted whatever its size.
    pub fn compaction_delete_ratio_threshold(&self) -> Result<f64> {
        or_default(
            self.parse_with(COMPACTION_DELETE_RATIO_THRESHOLD, |v| {
                v.parse::<f64>().map_err(|e| e.to_string())
            }),
            0.2,
        )
    }

    /// `source.split.target-size` in bytes, default 128 MiB: the size splits of a read are
    /// packed to (Java `CoreOptions.SOURCE_SPLIT_TARGET_SIZE`).
    pub fn split_target_size(&self) -> Result<u64> {
        or_default(self.get_memory_size(SOURCE_SPLIT_TARGET_SIZE), 128 * MIB)
    }

    /// `source.split.open-file-cost` in bytes, default 4 MiB: what opening a file weighs when
    /// splits are packed, however small the file.
    pub fn split_open_file_cost(&self) -> Result<u64> {
        or_default(self.get_memory_size(SOURCE_SPLIT_OPEN_FILE_COST), 4 * MIB)
    }

    /// `row-tracking.enabled`, default false.
    pub fn row_tracking_enabled(&self) -> Result<bool> {
        or_default(self.get_bool(ROW_TRACKING_ENABLED), false)
    }

    /// `data-evolution.enabled`, default false.
    pub fn data_evolution_enabled(&self) -> Result<bool> {
        or_default(self.get_bool(DATA_EVOLUTION_ENABLED), false)
    }

    /// `alter-column-null-to-not-null.disabled`, default true.
    pub fn null_to_not_null_disabled(&self) -> Result<bool> {
        or_default(self.get_bool(ALTER_NULL_TO_NOT_NULL_DISABLED), true)
    }

    /// `write-only` (or `write.compaction-skip`), default false.
    pub fn write_only(&self) -> Result<bool> {
        match self.get_bool(WRITE_ONLY)? {
            Some(value) => Ok(value),
            None => or_default(self.get_bool(WRITE_ONLY_FALLBACK_KEY), false),
        }
    }

    /// `full-compaction.delta-commits`: writers fully compact after the commits whose
    /// identifier is a multiple of it (and after every batch commit); `None` when unset. As
    /// Java's writers (`Math.max(deltaCommits, 1)`), 0 counts as 1; a negative value asks for
    /// nothing.
    pub fn full_compaction_delta_commits(&self) -> Result<Option<u32>> {
        Ok(self
            .get_i32(FULL_COMPACTION_DELTA_COMMITS)?
            .and_then(|n| u32::try_from(n).ok())
            .map(|n| n.max(1)))
    }

    // ---- clustering and sort compaction ------------------------------------------------------

    /// `clustering.columns` (or its fallback key) split on `,` (names not trimmed, as Java);
    /// empty when unset or blank. Java's batch writes of bucket-unaware append tables sort
    /// their rows by these columns.
    pub fn clustering_columns(&self) -> Vec<String> {
        let value = self
            .get(CLUSTERING_COLUMNS)
            .or_else(|| self.get(CLUSTERING_COLUMNS_FALLBACK_KEY))
            .unwrap_or_default();
        java_split(value).into_iter().map(str::to_string).collect()
    }

    /// `clustering.strategy` (or its fallback key) for `columns` clustering columns: `auto`
    /// (the default, spelled exactly so, as Java compares it) is [`OrderType::auto`]; `none`
    /// is `None` (rows are written as they come).
    pub fn clustering_strategy(&self, columns: usize) -> Result<Option<OrderType>> {
        let value = self
            .get(CLUSTERING_STRATEGY)
            .or_else(|| self.get(CLUSTERING_STRATEGY_FALLBACK_KEY))
            .unwrap_or("auto");
        match value {
            "auto" => Ok(Some(OrderType::auto(columns))),
            v if java_trim(v).eq_ignore_ascii_case("none") => Ok(None),
            v => OrderType::from_str(java_trim(v)).map(Some),
        }
    }

    /// `clustering.incremental`, default false: append tables are clustered in their
    /// compaction (incremental clustering) instead of sorting writes.
    pub fn clustering_incremental(&self) -> Result<bool> {
        or_default(self.get_bool(CLUSTERING_INCREMENTAL), false)
    }

    /// `clustering.history-partition.idle-to-full-sort` (no default): partitions without new
    /// files for this long are history partitions, fully clustered by a clustering compaction
    /// of other partitions.
    pub fn clustering_history_partition_idle(&self) -> Result<Option<Duration>> {
        self.get_duration(CLUSTERING_HISTORY_PARTITION_IDLE)
    }

    /// `clustering.history-partition.limit`, default 5: history partitions clustered at once.
    pub fn clustering_history_partition_limit(&self) -> Result<i32> {
        or_default(self.get_i32(CLUSTERING_HISTORY_PARTITION_LIMIT), 5)
    }

    /// `zorder.var-length-contribution`, default 8: the bytes a CHAR, VARCHAR, BINARY or
    /// VARBINARY column contributes to a Z-order key (at least 1).
    pub fn zorder_var_length_contribution(&self) -> Result<usize> {
        let n = or_default(self.get_i32(ZORDER_VAR_LENGTH_CONTRIBUTION), 8)?;
        usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
            Error::Invalid(format!(
                "option '{ZORDER_VAR_LENGTH_CONTRIBUTION}' must be positive, got {n}"
            ))
        })
    }

    /// `local-sort.max-num-file-handles`, default 128: the fan-in of an external merge sort
    /// (at least 2).
    pub fn local_sort_max_num_file_handles(&self) -> Result<usize> {
        let n = or_default(self.get_i32(LOCAL_SORT_MAX_NUM_FILE_HANDLES), 128)?;
        usize::try_from(n).ok().filter(|&n| n >= 2).ok_or_else(|| {
            Error::Invalid(format!(
                "option '{LOCAL_SORT_MAX_NUM_FILE_HANDLES}' must be at least 2, got {n}"
            ))
        })
    }

    // ---- snapshots and commits --------------------------------------------------------------

    /// `snapshot.num-retained.min`, default 10.
    pub fn snapshot_num_retained_min(&self) -> Result<i32> {
        or_default(self.get_i32(SNAPSHOT_NUM_RETAINED_MIN), 10)
    }

    /// `snapshot.num-retained.max`, default `i32::MAX`.
    pub fn snapshot_num_retained_max(&self) -> Result<i32> {
        or_default(self.get_i32(SNAPSHOT_NUM_RETAINED_MAX), i32::MAX)
    }

    /// `snapshot.time-retained`, default 1 hour.
    pub fn snapshot_time_retained(&self) -> Result<Duration> {
        or_default(
            self.get_duration(SNAPSHOT_TIME_RETAINED),
            Duration::from_secs(3600),
        )
    }

    /// `snapshot.expire.limit`, default 50.
    pub fn snapshot_expire_limit(&self) -> Result<i32> {
        or_default(self.get_i32(SNAPSHOT_EXPIRE_LIMIT), 50)
    }

    /// `commit.max-retries`, default 10.
    pub fn commit_max_retries(&self) -> Result<i32> {
        or_default(self.get_i32(COMMIT_MAX_RETRIES), 10)
    }

    /// `commit.min-retry-wait`, default 10 ms.
    pub fn commit_min_retry_wait(&self) -> Result<Duration> {
        or_default(
            self.get_duration(COMMIT_MIN_RETRY_WAIT),
            Duration::from_millis(10),
        )
    }

    /// `commit.max-retry-wait`, default 10 s.
    pub fn commit_max_retry_wait(&self) -> Result<Duration> {
        or_default(
            self.get_duration(COMMIT_MAX_RETRY_WAIT),
            Duration::from_secs(10),
        )
    }

    /// `commit.timeout`; `None` (no timeout) by default.
    pub fn commit_timeout(&self) -> Result<Option<Duration>> {
        self.get_duration(COMMIT_TIMEOUT)
    }
}

/// A typed option value, or `default` when the key is absent.
fn or_default<T>(value: Result<Option<T>>, default: T) -> Result<T> {
    value.map(|v| v.unwrap_or(default))
}

/// Java `String.split(",")`: like `str::split`, minus trailing empty pieces.
fn java_split(s: &str) -> Vec<&str> {
    let mut pieces: Vec<&str> = s.split(',').collect();
    while pieces.last() == Some(&"") {
        pieces.pop();
    }
    pieces
}

/// Java `String.trim()`: strips chars <= U+0020 at both ends.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Splits `text` (already trimmed) into its leading decimal number and its lower-cased unit,
/// as Java `MemorySize.parseBytes` and `TimeUtils.parseDuration` do.
fn split_number_unit(text: &str) -> std::result::Result<(u64, String), String> {
    let text = java_trim(text);
    if text.is_empty() {
        return Err("empty or whitespace-only value".to_string());
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err("value does not start with a number".to_string());
    }
    let number = text[..digits]
        .parse::<i64>()
        .map_err(|_| format!("'{}' overflows a 64-bit number", &text[..digits]))?;
    let unit = java_trim(&text[digits..]).to_lowercase();
    // A parsed run of ASCII digits is never negative.
    Ok((number.unsigned_abs(), unit))
}

/// Parses a memory size like Java `MemorySize.parse`: a number, optional whitespace and an
/// optional unit (`b`/`bytes`, `k`/`kb`/`kibibytes`, `m`/`mb`/`mebibytes`, `g`/`gb`/`gibibytes`,
/// `t`/`tb`/`tebibytes`, any case; all binary multiples). Returns bytes.
pub fn parse_memory_size(text: &str) -> std::result::Result<u64, String> {
    let (number, unit) = split_number_unit(text)?;
    let multiplier: u64 = match unit.as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kibibytes" => 1 << 10,
        "m" | "mb" | "mebibytes" => 1 << 20,
        "g" | "gb" | "gibibytes" => 1 << 30,
        "t" | "tb" | "tebibytes" => 1 << 40,
        other => return Err(format!("unknown memory unit '{other}'")),
    };
    number
        .checked_mul(multiplier)
        .filter(|bytes| *bytes <= i64::MAX as u64)
        .ok_or_else(|| format!("'{text}' overflows a 64-bit number of bytes"))
}

/// Parses a duration like Java `TimeUtils.parseDuration`: a number, optional whitespace and an
/// optional unit, any case: `d`/`day`/`days`, `h`/`hour`/`hours`, `min`/`m`/`minute`/`minutes`,
/// `s`/`sec`/`secs`/`second`/`seconds`, `ms`/`milli`/`millis`/`millisecond`/`milliseconds`,
/// `µs`/`micro`/`micros`/`microsecond`/`microseconds`, `ns`/`nano`/`nanos`/`nanosecond`/
/// `nanoseconds`. A bare number is milliseconds.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let (number, unit) = split_number_unit(text)?;
    let overflow = || format!("'{text}' overflows a duration");
    let duration = match unit.as_str() {
        "d" | "day" | "days" => {
            Duration::from_secs(number.checked_mul(86_400).ok_or_else(overflow)?)
        }
        "h" | "hour" | "hours" => {
            Duration::from_secs(number.checked_mul(3_600).ok_or_else(overflow)?)
        }
        "min" | "m" | "minute" | "minutes" => {
            Duration::from_secs(number.checked_mul(60).ok_or_else(overflow)?)
        }
        "s" | "sec" | "secs" | "second" | "seconds" => Duration::from_secs(number),
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => {
            Duration::from_millis(number)
        }
        "µs" | "micro" | "micros" | "microsecond" | "microseconds" => {
            Duration::from_micros(number)
        }
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => Duration::from_nanos(number),
        other => return Err(format!("unknown time unit '{other}'")),
    };
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options from key/value pairs (shared with the submodules' tests).
    pub(super) fn opts(pairs: &[(&str, &str)]) -> Options {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ignore_update_before_and_row_deduplicate_ignore_fields() {
        assert!(!Options::new().ignore_update_before().unwrap());
        assert!(opts(&[("ignore-update-before", "TRUE")])
            .ignore_update_before()
            .unwrap());
        assert!(opts(&[("ignore-update-before", "yes")])
            .ignore_update_before()
            .is_err());
        assert!(Options::new()
            .changelog_producer_row_deduplicate_ignore_fields()
            .is_empty());
        let o = opts(&[(
            "changelog-producer.row-deduplicate-ignore-fields",
            "ts,note,",
        )]);
        assert_eq!(
            o.changelog_producer_row_deduplicate_ignore_fields(),
            vec!["ts", "note"]
        );
    }

    #[test]
    fn keeps_insertion_order_and_replaces_in_place() {
        let mut o = opts(&[("b", "1"), ("a", "2")]);
        o.set("c", "3");
        o.set("b", "9");
        let keys: Vec<_> = o.iter().collect();
        assert_eq!(keys, vec![("b", "9"), ("a", "2"), ("c", "3")]);
        assert_eq!(o.remove("a").as_deref(), Some("2"));
        assert_eq!(o.len(), 2);
        assert!(!o.contains_key("a"));
    }

    #[test]
    fn lookup_wait_reads_the_current_key_before_the_old_one() {
        assert!(Options::new().lookup_wait().unwrap());
        assert!(!opts(&[("changelog-producer.lookup-wait", "false")])
            .lookup_wait()
            .unwrap());
        let both = opts(&[
            ("changelog-producer.lookup-wait", "false"),
            ("lookup-wait", "true"),
        ]);
        assert!(both.lookup_wait().unwrap());
        assert!(opts(&[("lookup-wait", "maybe")]).lookup_wait().is_err());
    }

    #[test]
    fn defaults() {
        let o = Options::new();
        assert_eq!(o.bucket().unwrap(), -1);
        assert!(o.bucket_key().is_empty());
        assert_eq!(o.file_format(), "parquet");
        assert_eq!(o.file_compression(), "zstd");
        assert_eq!(o.merge_engine().unwrap(), MergeEngine::Deduplicate);
        assert_eq!(o.changelog_producer().unwrap(), ChangelogProducer::None);
        assert!(o.sequence_field().is_empty());
        assert!(!o.ignore_delete().unwrap());
        assert!(!o.deletion_vectors_enabled().unwrap());
        assert_eq!(o.partition_default_name(), "__DEFAULT_PARTITION__");
        assert!(o.partition_legacy_name().unwrap());
        assert_eq!(o.target_file_size(true).unwrap(), 128 * MIB);
        assert_eq!(o.target_file_size(false).unwrap(), 256 * MIB);
        assert_eq!(o.write_buffer_size().unwrap(), 256 * MIB);
        assert_eq!(o.manifest_compression(), "zstd");
        assert_eq!(o.manifest_merge_min_count().unwrap(), 30);
        assert_eq!(o.num_sorted_run_compaction_trigger().unwrap(), 5);
        assert_eq!(o.num_sorted_run_stop_trigger().unwrap(), 8);
        assert_eq!(o.num_levels().unwrap(), 6);
        assert_eq!(o.snapshot_num_retained_min().unwrap(), 10);
        assert_eq!(o.snapshot_num_retained_max().unwrap(), i32::MAX);
        assert_eq!(
            o.snapshot_time_retained().unwrap(),
            Duration::from_secs(3600)
        );
        assert_eq!(o.metadata_stats_mode(), "truncate(16)");
        assert_eq!(o.commit_max_retries().unwrap(), 10);
        assert_eq!(o.commit_timeout().unwrap(), None);
        assert!(!o.batch_scan_skip_level0().unwrap());
    }

    #[test]
    fn full_compaction_delta_commits_as_java_writers_take_it() {
        for (value, expected) in [("3", Some(3)), ("1", Some(1)), ("0", Some(1)), ("-1", None)] {
            let o = opts(&[("full-compaction.delta-commits", value)]);
            assert_eq!(
                o.full_compaction_delta_commits().unwrap(),
                expected,
                "{value}"
            );
        }
        assert_eq!(opts(&[]).full_compaction_delta_commits().unwrap(), None);
        let bad = opts(&[("full-compaction.delta-commits", "often")]);
        assert!(bad.full_compaction_delta_commits().is_err());
    }

    #[test]
    fn typed_values() {
        let o = opts(&[
            ("bucket", "4"),
            ("bucket-key", "a,b"),
            ("file.format", "ORC"),
            ("merge-engine", "Partial-Update"),
            ("sequence.field", "ver, ts"),
            ("changelog-producer", "full-compaction"),
            ("target-file-size", "4kb"),
            ("write-buffer-size", "128 MB"),
            ("num-sorted-run.compaction-trigger", "10"),
            ("num-sorted-run.stop-trigger", "7"),
            ("snapshot.time-retained", "30 min"),
            ("fields.x.aggregate-function", "sum"),
            ("fields.x.ignore-retract", "TRUE"),
            ("fields.x.stats-mode", "full"),
            ("first-row.ignore-delete", "true"),
        ]);
        assert_eq!(o.bucket().unwrap(), 4);
        assert_eq!(o.bucket_key(), vec!["a", "b"]);
        assert_eq!(o.file_format(), "orc");
        assert_eq!(o.merge_engine().unwrap(), MergeEngine::PartialUpdate);
        assert_eq!(o.sequence_field(), vec!["ver", "ts"]);
        let trailing = opts(&[("bucket-key", "a,b,,"), ("sequence.field", ",")]);
        assert_eq!(trailing.bucket_key(), vec!["a", "b"]);
        assert!(trailing.sequence_field().is_empty());
        assert_eq!(
            o.changelog_producer().unwrap(),
            ChangelogProducer::FullCompaction
        );
        assert_eq!(o.target_file_size(true).unwrap(), 4096);
        assert_eq!(o.write_buffer_size().unwrap(), 128 * MIB);
        // stop trigger never below the compaction trigger
        assert_eq!(o.num_sorted_run_stop_trigger().unwrap(), 10);
        assert_eq!(o.num_levels().unwrap(), 11);
        assert_eq!(
            o.snapshot_time_retained().unwrap(),
            Duration::from_secs(1800)
        );
        assert_eq!(o.field_aggregate_function("x"), Some("sum"));
        assert_eq!(o.field_aggregate_function("y"), None);
        assert!(o.field_ignore_retract("x").unwrap());
        assert_eq!(o.field_stats_mode("x"), "full");
        assert_eq!(o.field_stats_mode("y"), "truncate(16)");
        assert!(o.ignore_delete().unwrap());
    }

    #[test]
    fn invalid_values_name_the_key() {
        let o = opts(&[
            ("bucket", "four"),
            ("merge-engine", "nope"),
            ("ignore-delete", "yes"),
        ]);
        let err = o.bucket().unwrap_err().to_string();
        assert!(err.contains("'bucket'"), "{err}");
        assert!(matches!(o.merge_engine(), Err(Error::Invalid(_))));
        assert!(matches!(o.ignore_delete(), Err(Error::Invalid(_))));
    }

    #[test]
    fn batch_scan_skip_level0_follows_java() {
        let dv = opts(&[("deletion-vectors.enabled", "true")]);
        assert!(dv.batch_scan_skip_level0().unwrap());
        let dv_mor = opts(&[
            ("deletion-vectors.enabled", "true"),
            ("deletion-vectors.merge-on-read", "true"),
        ]);
        assert!(!dv_mor.batch_scan_skip_level0().unwrap());
        let first_row = opts(&[("merge-engine", "first-row")]);
        assert!(first_row.batch_scan_skip_level0().unwrap());
        // deletion vectors decide alone when enabled, even for first-row
        let both = opts(&[
            ("merge-engine", "first-row"),
            ("deletion-vectors.enabled", "true"),
            ("deletion-vectors.merge-on-read", "true"),
        ]);
        assert!(!both.batch_scan_skip_level0().unwrap());
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_size("4kb"), Ok(4096));
        assert_eq!(parse_memory_size("128 mb"), Ok(128 * MIB));
        assert_eq!(parse_memory_size(" 1 GB "), Ok(1 << 30));
        assert_eq!(parse_memory_size("7"), Ok(7));
        assert_eq!(parse_memory_size("3 bytes"), Ok(3));
        assert_eq!(parse_memory_size("2t"), Ok(2 << 40));
        assert_eq!(parse_memory_size("1 mebibytes"), Ok(MIB));
        assert!(parse_memory_size("").is_err());
        assert!(parse_memory_size("mb").is_err());
        assert!(parse_memory_size("1 xb").is_err());
        assert!(parse_memory_size("-1 mb").is_err());
        assert!(parse_memory_size("99999999999999999999").is_err());
        assert!(parse_memory_size("9999999999 tb").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1 h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("30 min"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5 SECONDS"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("1 d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(
            parse_duration("3 days"),
            Ok(Duration::from_secs(3 * 86_400))
        );
        assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7 µs"), Ok(Duration::from_micros(7)));
        assert_eq!(parse_duration("9ns"), Ok(Duration::from_nanos(9)));
        assert!(parse_duration("1 fortnight").is_err());
        assert!(parse_duration("h").is_err());
        assert!(parse_duration("   ").is_err());
    }

    #[test]
    fn clustering_options_follow_java() {
        let none = opts(&[]);
        assert!(none.clustering_columns().is_empty());
        assert_eq!(none.clustering_strategy(1).unwrap(), Some(OrderType::Order));
        assert_eq!(
            none.clustering_strategy(4).unwrap(),
            Some(OrderType::ZOrder)
        );
        assert_eq!(
            none.clustering_strategy(5).unwrap(),
            Some(OrderType::Hilbert)
        );
        assert!(!none.clustering_incremental().unwrap());
        assert_eq!(none.zorder_var_length_contribution().unwrap(), 8);
        assert_eq!(none.local_sort_max_num_file_handles().unwrap(), 128);
        let old = opts(&[
            ("sink.clustering.by-columns", "a,b"),
            ("sink.clustering.strategy", "HILBERT"),
        ]);
        assert_eq!(old.clustering_columns(), ["a", "b"]);
        assert_eq!(
            old.clustering_strategy(2).unwrap(),
            Some(OrderType::Hilbert)
        );
        let new = opts(&[
            ("clustering.columns", "c"),
            ("sink.clustering.by-columns", "a,b"),
            ("clustering.strategy", "none"),
        ]);
        assert_eq!(new.clustering_columns(), ["c"]);
        assert_eq!(new.clustering_strategy(1).unwrap(), None);
        assert!(opts(&[("clustering.strategy", "spiral")])
            .clustering_strategy(2)
            .is_err());
        assert!(opts(&[("zorder.var-length-contribution", "0")])
            .zorder_var_length_contribution()
            .is_err());
        assert_eq!(OrderType::from_str("ZOrder").unwrap(), OrderType::ZOrder);
    }
}
