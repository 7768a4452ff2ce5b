//! Which table option keys exist: every key (and fallback key) of Java Paimon 1.3.1's option
//! classes a table's options may hold (`CoreOptions`, `IcebergOptions`, `RocksDBOptions`,
//! `FlinkConnectorOptions`, `SparkConnectorOptions`, `HiveConnectorOptions`, `KafkaLogOptions`
//! and the ORC/Parquet/CSV/JSON format options), the keys tidelake reads that newer Paimon
//! versions added, and the key families Java builds from names: per-field options
//! (`fields.<field>.aggregate-function`, ...), file indexes (`file-index.<type>.columns`, ...),
//! callback parameters, and what Java passes on to file formats, file systems and Kafka
//! (`parquet.*`, `orc.*`, `fs.*`, `kafka.*`, ...).
//!
//! New tables and option changes are checked here so that a typo (`bukcet`) is an error with a
//! suggestion rather than an option silently stored and ignored; tables whose files already
//! hold other keys (written by Java with options of another version) still open. Keys of the
//! user's own are declared in [`CUSTOM_OPTIONS`], a table option itself (Java ignores both).

use super::Options;
use crate::error::{Error, Result};

/// The table option listing (comma-separated) the keys of the user's own that a table stores:
/// they are accepted without being known, and nothing reads them.
pub const CUSTOM_OPTIONS: &str = "tidelake.custom-options";

/// Exact keys, sorted.
const KEYS: &[&str] = &[
    "aggregation.remove-record-on-delete",
    "alter-column-null-to-not-null.disabled",
    "async-file-write",
    "auto-create",
    "batch-scan-mode",
    "branch",
    "bucket",
    "bucket-append-ordered",
    "bucket-function.type",
    "bucket-key",
    "cache-page-size",
    "changelog-file.compression",
    "changelog-file.format",
    "changelog-file.prefix",
    "changelog-file.stats-mode",
    "changelog-producer",
    "changelog-producer.compaction-interval",
    "changelog-producer.lookup-wait",
    "changelog-producer.row-deduplicate",
    "changelog-producer.row-deduplicate-ignore-fields",
    "changelog.num-retained.max",
    "changelog.num-retained.min",
    "changelog.precommit-compact",
    "changelog.precommit-compact.buffer-size",
    "changelog.precommit-compact.thread-num",
    "changelog.time-retained",
    "clustering.columns",
    "clustering.history-partition.idle-to-full-sort",
    "clustering.history-partition.limit",
    "clustering.incremental",
    "clustering.strategy",
    "commit.callbacks",
    "commit.custom-listeners",
    "commit.force-compact",
    "commit.force-create-snapshot",
    "commit.max-retries",
    "commit.max-retry-wait",
    "commit.min-retry-wait",
    "commit.strict-mode.last-safe-snapshot",
    "commit.timeout",
    "commit.user-prefix",
    "compaction.delete-ratio-threshold",
    "compaction.force-rewrite-all-files",
    "compaction.force-up-level-0",
    "compaction.max-size-amplification-percent",
    "compaction.min.file-num",
    "compaction.offpeak-ratio",
    "compaction.offpeak.end.hour",
    "compaction.offpeak.start.hour",
    "compaction.optimization-interval",
    "compaction.size-ratio",
    "compaction.total-size-threshold",
    "consumer-id",
    "consumer.expiration-time",
    "consumer.ignore-progress",
    "consumer.mode",
    "continuous.discovery-interval",
    "cross-partition-upsert.bootstrap-parallelism",
    "cross-partition-upsert.index-ttl",
    "csv.escape-character",
    "csv.field-delimiter",
    "csv.include-header",
    "csv.line-delimiter",
    "csv.null-literal",
    "csv.quote-character",
    "data-evolution.enabled",
    "data-file.external-paths",
    "data-file.external-paths.specific-fs",
    "data-file.external-paths.strategy",
    "data-file.path-directory",
    "data-file.prefix",
    "data-file.thin-mode",
    "deduplicate.ignore-delete",
    "delete-file.thread-num",
    "delete.force-produce-changelog",
    "deletion-vector.index-file.target-size",
    "deletion-vectors.bitmap64",
    "deletion-vectors.enabled",
    "deletion-vectors.merge-on-read",
    "disable-explicit-type-casting",
    "dynamic-bucket.assigner-parallelism",
    "dynamic-bucket.initial-buckets",
    "dynamic-bucket.max-buckets",
    "dynamic-bucket.target-row-num",
    "dynamic-partition-overwrite",
    "end-input.check-partition-expire",
    "end-input.watermark",
    "field-delimiter",
    "fields.default-aggregate-function",
    "file-index.in-manifest-threshold",
    "file-index.read.enabled",
    "file-operation.thread-num",
    "file-reader-async-threshold",
    "file.block-size",
    "file.compression",
    "file.compression.per.level",
    "file.compression.zstd-level",
    "file.format",
    "file.format.per.level",
    "file.suffix.include.compression",
    "filesystem.job-level-settings.enabled",
    "first-row.ignore-delete",
    "force-lookup",
    "full-compaction.delta-commits",
    "ignore-delete",
    "ignore-update-before",
    "incremental-between",
    "incremental-between-scan-mode",
    "incremental-between-tag-to-snapshot",
    "incremental-between-timestamp",
    "incremental-to-auto-tag",
    "index-file-in-data-file-dir",
    "json.ignore-parse-errors",
    "json.line-delimiter",
    "json.map-null-key-literal",
    "json.map-null-key-mode",
    "kafka.bootstrap.servers",
    "kafka.topic",
    "local-merge-buffer-size",
    "local-sort.max-num-file-handles",
    "log.changelog-mode",
    "log.consistency",
    "log.format",
    "log.ignore-delete",
    "log.key.format",
    "log.scan",
    "log.scan.remove-normalize",
    "log.scan.timestamp-millis",
    "log.system",
    "log.system.partitions",
    "log.system.replication",
    "lookup-compact",
    "lookup-compact.max-interval",
    "lookup-wait",
    "lookup.async",
    "lookup.async-thread-number",
    "lookup.bootstrap-parallelism",
    "lookup.cache",
    "lookup.cache-file-retention",
    "lookup.cache-max-disk-size",
    "lookup.cache-max-memory-size",
    "lookup.cache-rows",
    "lookup.cache-spill-compression",
    "lookup.cache.bloom.filter.enabled",
    "lookup.cache.bloom.filter.fpp",
    "lookup.cache.high-priority-pool-ratio",
    "lookup.continuous.discovery-interval",
    "lookup.dynamic-partition",
    "lookup.dynamic-partition.refresh-interval",
    "lookup.hash-load-factor",
    "lookup.local-file-type",
    "lookup.merge-buffer-size",
    "lookup.merge-records-threshold",
    "lookup.refresh.async",
    "lookup.refresh.async.pending-snapshot-count",
    "lookup.refresh.time-periods-blacklist",
    "manifest.compression",
    "manifest.delete-file-drop-stats",
    "manifest.format",
    "manifest.full-compaction-threshold-size",
    "manifest.merge-min-count",
    "manifest.target-file-size",
    "materialized-table.definition-query",
    "materialized-table.interval-freshness",
    "materialized-table.interval-freshness.time-unit",
    "materialized-table.logical-refresh-mode",
    "materialized-table.refresh-handler-bytes",
    "materialized-table.refresh-handler-description",
    "materialized-table.refresh-mode",
    "materialized-table.refresh-status",
    "merge-engine",
    "metadata.iceberg.compaction.max.file-num",
    "metadata.iceberg.compaction.min.file-num",
    "metadata.iceberg.database",
    "metadata.iceberg.delete-after-commit.enabled",
    "metadata.iceberg.format-version",
    "metadata.iceberg.glue.skip-archive",
    "metadata.iceberg.hadoop-conf-dir",
    "metadata.iceberg.hive-client-class",
    "metadata.iceberg.hive-conf-dir",
    "metadata.iceberg.hive-skip-update-stats",
    "metadata.iceberg.manifest-compression",
    "metadata.iceberg.manifest-legacy-version",
    "metadata.iceberg.previous-versions-max",
    "metadata.iceberg.storage",
    "metadata.iceberg.storage-location",
    "metadata.iceberg.table",
    "metadata.iceberg.uri",
    "metadata.stats-dense-store",
    "metadata.stats-keep-first-n-columns",
    "metadata.stats-mode",
    "metadata.stats-mode.per.level",
    "metastore.partitioned-table",
    "metastore.tag-to-partition",
    "metastore.tag-to-partition.preview",
    "num-levels",
    "num-sorted-run.compaction-trigger",
    "num-sorted-run.stop-trigger",
    "orc.column.encoding.direct",
    "orc.dictionary.key.threshold",
    "orc.timestamp-ltz.legacy.type",
    "orc.write.batch-size",
    "page-size",
    "paimon.respect.minmaxsplitsize.enabled",
    "paimon.split.openfilecost",
    "parquet.enable.dictionary",
    "parquet.variant.shreddingSchema",
    "partial-update.ignore-delete",
    "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group",
    "partition",
    "partition.default-name",
    "partition.end-input-to-done",
    "partition.expiration-batch-size",
    "partition.expiration-check-interval",
    "partition.expiration-max-num",
    "partition.expiration-strategy",
    "partition.expiration-time",
    "partition.idle-time-to-done",
    "partition.idle-time-to-report-statistic",
    "partition.legacy-name",
    "partition.mark-done-action",
    "partition.mark-done-action.custom.class",
    "partition.mark-done-action.http.params",
    "partition.mark-done-action.http.url",
    "partition.mark-done-action.mode",
    "partition.mark-done.recover-from-state",
    "partition.sink-strategy",
    "partition.time-interval",
    "partition.timestamp-formatter",
    "partition.timestamp-pattern",
    "path",
    "postpone.default-bucket-num",
    "precommit-compact",
    "primary-key",
    "primary-key.nullable",
    "query-auth.enabled",
    "read.batch-size",
    "read.changelog",
    "read.shuffle-bucket-with-partition",
    "read.stream.maxBytesPerTrigger",
    "read.stream.maxFilesPerTrigger",
    "read.stream.maxRowsPerTrigger",
    "read.stream.maxTriggerDelayMs",
    "read.stream.minRowsPerTrigger",
    "record-level.expire-time",
    "record-level.time-field",
    "requiredSparkConfsCheck.enabled",
    "rocksdb.block.blocksize",
    "rocksdb.block.cache-size",
    "rocksdb.block.metadata-blocksize",
    "rocksdb.bloom-filter.bits-per-key",
    "rocksdb.bloom-filter.block-based-mode",
    "rocksdb.compaction.level.max-size-level-base",
    "rocksdb.compaction.level.target-file-size-base",
    "rocksdb.compaction.level.use-dynamic-size",
    "rocksdb.compaction.style",
    "rocksdb.compression.type",
    "rocksdb.files.open",
    "rocksdb.log.dir",
    "rocksdb.log.file-num",
    "rocksdb.log.level",
    "rocksdb.log.max-file-size",
    "rocksdb.thread.num",
    "rocksdb.use-bloom-filter",
    "rocksdb.writebuffer.count",
    "rocksdb.writebuffer.number-to-merge",
    "rocksdb.writebuffer.size",
    "row-tracking.enabled",
    "rowkind.field",
    "scan.bounded",
    "scan.bounded.watermark",
    "scan.creation-time-millis",
    "scan.dedicated-split-generation",
    "scan.fallback-branch",
    "scan.file-creation-time-millis",
    "scan.infer-parallelism",
    "scan.infer-parallelism.max",
    "scan.manifest.parallelism",
    "scan.max-snapshot.count",
    "scan.max-splits-per-task",
    "scan.mode",
    "scan.parallelism",
    "scan.partitions",
    "scan.plan-sort-partition",
    "scan.remove-normalize",
    "scan.snapshot-id",
    "scan.split-enumerator.batch-size",
    "scan.split-enumerator.mode",
    "scan.tag-name",
    "scan.timestamp",
    "scan.timestamp-millis",
    "scan.version",
    "scan.watermark",
    "scan.watermark.alignment.group",
    "scan.watermark.alignment.max-drift",
    "scan.watermark.alignment.update-interval",
    "scan.watermark.emit.strategy",
    "scan.watermark.idle-timeout",
    "sequence.field",
    "sequence.field.sort-order",
    "sink.clustering.by-columns",
    "sink.clustering.sample-factor",
    "sink.clustering.sort-in-cluster",
    "sink.clustering.strategy",
    "sink.committer-cpu",
    "sink.committer-memory",
    "sink.committer-operator-chaining",
    "sink.cross-partition.managed-memory",
    "sink.managed.writer-buffer-memory",
    "sink.operator-uid.suffix",
    "sink.parallelism",
    "sink.process-time-zone",
    "sink.savepoint.auto-tag",
    "sink.use-managed-memory-allocator",
    "sink.watermark-time-zone",
    "sink.writer-coordinator.cache-memory",
    "sink.writer-coordinator.enabled",
    "sink.writer-coordinator.page-size",
    "sink.writer-cpu",
    "sink.writer-memory",
    "sink.writer-refresh-detectors",
    "snapshot.clean-empty-directories",
    "snapshot.expire.clean-empty-directories",
    "snapshot.expire.execution-mode",
    "snapshot.expire.limit",
    "snapshot.ignore-empty-commit",
    "snapshot.num-retained.max",
    "snapshot.num-retained.min",
    "snapshot.time-retained",
    "snapshot.watermark-idle-timeout",
    "sort-compaction.local-sample.magnification",
    "sort-compaction.range-strategy",
    "sort-engine",
    "sort-spill-buffer-size",
    "sort-spill-threshold",
    "source.checkpoint-align.enabled",
    "source.checkpoint-align.timeout",
    "source.operator-uid.suffix",
    "source.split.open-file-cost",
    "source.split.target-size",
    "spill-compression",
    "spill-compression.zstd-level",
    "stream-scan-mode",
    "streaming-read-append-overwrite",
    "streaming-read-mode",
    "streaming-read-overwrite",
    "streaming-read.shuffle-bucket-with-partition",
    "streaming.read.snapshot.delay",
    "tag.automatic-completion",
    "tag.automatic-creation",
    "tag.batch.customized-name",
    "tag.callbacks",
    "tag.create-success-file",
    "tag.creation-delay",
    "tag.creation-period",
    "tag.creation-period-duration",
    "tag.default-time-retained",
    "tag.num-retained-max",
    "tag.period-formatter",
    "target-file-size",
    "type",
    "unaware-bucket.compaction.parallelism",
    "upsert-key",
    "write-buffer-for-append",
    "write-buffer-size",
    "write-buffer-spill.max-disk-size",
    "write-buffer-spillable",
    "write-max-writers-to-spill",
    "write-only",
    "write.batch-memory",
    "write.batch-size",
    "write.compaction-skip",
    "write.merge-schema",
    "write.merge-schema.explicit-cast",
    "write.use-v2-write",
    "zorder.var-length-contribution",
];

/// Suffixes of per-field options `fields.<field>.<suffix>`.
const FIELD_SUFFIXES: &[&str] = &[
    "aggregate-function",
    "count-limit",
    "default-value",
    "distinct",
    "ignore-retract",
    "list-agg-delimiter",
    "nested-key",
    "sequence-group",
    "stats-mode",
];

/// Prefixes of keys Java passes on (to formats, file systems, Kafka, a Hive Metastore's
/// table parameters) or builds from names (file indexes); anything may follow them.
const PREFIXES: &[&str] = &[
    "avro.",
    "csv.",
    "file-index.",
    "fs.",
    "hadoop.",
    "hive.",
    "json.",
    "kafka.",
    "metadata.iceberg.rest.",
    "orc.",
    "oss.",
    "parquet.",
    "s3.",
];

/// `<prefix><class name>.param` keys of callbacks.
const CALLBACK_PREFIXES: &[&str] = &["commit.callback.", "tag.callback."];

/// Whether `key` is a table option Paimon knows (see the module docs).
pub fn is_known_key(key: &str) -> bool {
    if KEYS.binary_search(&key).is_ok() || PREFIXES.iter().any(|p| key.starts_with(p)) {
        return true;
    }
    if let Some(rest) = key.strip_prefix("fields.") {
        return rest
            .rsplit_once('.')
            .is_some_and(|(field, suffix)| !field.is_empty() && FIELD_SUFFIXES.contains(&suffix));
    }
    CALLBACK_PREFIXES.iter().any(|p| {
        key.strip_prefix(p)
            .and_then(|rest| rest.strip_suffix(".param"))
            .is_some_and(|class| !class.is_empty())
    })
}

/// The known key closest to `key`, if one is close enough to be a likely typo.
fn closest(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let limit = (key.len() / 4).max(2);
    KEYS.iter()
        .map(|k| {
            (
                strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase()),
                *k,
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

impl Options {
    /// [`Error::Invalid`] naming the first of `keys` that Paimon does not know and these
    /// options do not declare in [`CUSTOM_OPTIONS`], with the closest known key when one is
    /// near.
    pub fn check_known_keys<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let custom: Vec<&str> = self
            .get(CUSTOM_OPTIONS)
            .map(|v| v.split(',').map(str::trim).collect())
            .unwrap_or_default();
        for key in keys {
            if key == CUSTOM_OPTIONS || is_known_key(key) || custom.contains(&key) {
                continue;
            }
            let hint = match closest(key) {
                Some(k) => format!(" (did you mean '{k}'?)"),
                None => String::new(),
            };
            return Err(Error::Invalid(format!(
                "unknown table option '{key}'{hint}: Paimon does not read it; to store a key \
                 of your own, list it in option '{CUSTOM_OPTIONS}' (e.g. '{CUSTOM_OPTIONS}' = \
                 '{key}')"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_and_unique() {
        assert!(KEYS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_key_tidelake_reads_is_known() {
        for key in [
            crate::options::BUCKET,
            crate::options::IGNORE_DELETE,
            crate::options::IGNORE_DELETE_FALLBACK_KEYS[1],
            crate::options::LOOKUP_WAIT_FALLBACK_KEY,
            crate::options::DELETION_VECTORS_MERGE_ON_READ,
            crate::options::PRIMARY_KEY_NULLABLE,
            crate::options::FIELDS_DEFAULT_AGGREGATE_FUNCTION,
            crate::options::INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
        ] {
            assert!(is_known_key(key), "{key}");
        }
    }

    #[test]
    fn families_are_known() {
        for key in [
            "fields.price.aggregate-function",
            "fields.a.b.sequence-group",
            "fields.v.default-value",
            "file-index.bloom-filter.columns",
            "file-index.bloom-filter.c1.fpp",
            "parquet.enable.dictionary",
            "orc.bloom.filter.columns",
            "commit.callback.com.example.Cb.param",
            "read.stream.maxFilesPerTrigger",
        ] {
            assert!(is_known_key(key), "{key}");
        }
        for key in [
            "fields.price.agregate-function",
            "fields..aggregate-function",
            "commit.callback..param",
            "bukcet",
            "owner",
        ] {
            assert!(!is_known_key(key), "{key}");
        }
    }

    #[test]
    fn typos_name_the_key_they_meant() {
        let none = Options::default();
        let message = |key: &str| none.check_known_keys([key]).unwrap_err().to_string();
        assert!(message("bukcet").contains("did you mean 'bucket'?"));
        assert!(message("snapshot.num-retaind.min").contains("'snapshot.num-retained.min'"));
        assert!(message("Merge-Engine").contains("'merge-engine'"));
        assert!(!message("owner").contains("did you mean"));
        assert!(message("owner").contains("'tidelake.custom-options' = 'owner'"));
        assert!(none.check_known_keys(["bucket", "merge-engine"]).is_ok());
    }

    #[test]
    fn declared_custom_keys_are_accepted() {
        let options: Options = [(CUSTOM_OPTIONS, "owner, team")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(options
            .check_known_keys(["owner", "team", CUSTOM_OPTIONS, "bucket"])
            .is_ok());
        assert!(options.check_known_keys(["cost-center"]).is_err());
    }
}
