//! Options of table maintenance (Java `CoreOptions`): partition expiration, tag and consumer
//! retention, the changelog's own retention, and `force-lookup`.

use std::str::FromStr;
use std::time::Duration;

use super::{or_default, Options};
use crate::error::{Error, Result};

pub const PARTITION_EXPIRATION_TIME: &str = "partition.expiration-time";
pub const PARTITION_EXPIRATION_STRATEGY: &str = "partition.expiration-strategy";
pub const PARTITION_TIMESTAMP_PATTERN: &str = "partition.timestamp-pattern";
pub const PARTITION_TIMESTAMP_FORMATTER: &str = "partition.timestamp-formatter";
pub const PARTITION_EXPIRATION_MAX_NUM: &str = "partition.expiration-max-num";
pub const PARTITION_EXPIRATION_BATCH_SIZE: &str = "partition.expiration-batch-size";
pub const TAG_DEFAULT_TIME_RETAINED: &str = "tag.default-time-retained";
pub const TAG_AUTOMATIC_CREATION: &str = "tag.automatic-creation";
pub const TAG_CREATION_PERIOD: &str = "tag.creation-period";
pub const TAG_CREATION_PERIOD_DURATION: &str = "tag.creation-period-duration";
pub const TAG_CREATION_DELAY: &str = "tag.creation-delay";
pub const TAG_PERIOD_FORMATTER: &str = "tag.period-formatter";
pub const TAG_NUM_RETAINED_MAX: &str = "tag.num-retained-max";
pub const TAG_AUTOMATIC_COMPLETION: &str = "tag.automatic-completion";
pub const TAG_BATCH_CUSTOMIZED_NAME: &str = "tag.batch.customized-name";
pub const TAG_CREATE_SUCCESS_FILE: &str = "tag.create-success-file";
pub const SINK_PROCESS_TIME_ZONE: &str = "sink.process-time-zone";
pub const SINK_WATERMARK_TIME_ZONE: &str = "sink.watermark-time-zone";
pub const CONSUMER_EXPIRATION_TIME: &str = "consumer.expiration-time";
pub const CHANGELOG_NUM_RETAINED_MIN: &str = "changelog.num-retained.min";
pub const CHANGELOG_NUM_RETAINED_MAX: &str = "changelog.num-retained.max";
pub const CHANGELOG_TIME_RETAINED: &str = "changelog.time-retained";
pub const FORCE_LOOKUP: &str = "force-lookup";

/// `partition.expiration-strategy`: how a partition's age is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionExpirationStrategy {
    /// From the partition values (with `partition.timestamp-pattern`/`-formatter`).
    ValuesTime,
    /// From the partition's last write.
    UpdateTime,
}

option_enum!(PartitionExpirationStrategy, PARTITION_EXPIRATION_STRATEGY, {
    ValuesTime => "values-time",
    UpdateTime => "update-time",
});

/// `tag.automatic-creation`: whether and from which time tags are created automatically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagCreationMode {
    None,
    /// From the commit time of each snapshot.
    ProcessTime,
    /// From the watermark of each snapshot.
    Watermark,
    /// One tag of the latest snapshot after each batch write.
    Batch,
}

option_enum!(TagCreationMode, TAG_AUTOMATIC_CREATION, {
    None => "none",
    ProcessTime => "process-time",
    Watermark => "watermark",
    Batch => "batch",
});

/// `tag.creation-period`: how often automatic tags are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagCreationPeriod {
    Daily,
    Hourly,
    TwoHours,
}

option_enum!(TagCreationPeriod, TAG_CREATION_PERIOD, {
    Daily => "daily",
    Hourly => "hourly",
    TwoHours => "two-hours",
});

/// `tag.period-formatter`: how automatic tag names write their period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TagPeriodFormatter {
    /// `2024-05-14`, `2024-05-14 03`.
    WithDashes,
    /// `20240514`, `20240514 03`.
    WithoutDashes,
    /// `20240514`, `2024051403`.
    WithoutDashesAndSpaces,
}

option_enum!(TagPeriodFormatter, TAG_PERIOD_FORMATTER, {
    WithDashes => "with_dashes",
    WithoutDashes => "without_dashes",
    WithoutDashesAndSpaces => "without_dashes_and_spaces",
});

impl Options {
    /// `tag.automatic-creation`, default `none`.
    pub fn tag_automatic_creation(&self) -> Result<TagCreationMode> {
        self.get_enum(TAG_AUTOMATIC_CREATION, TagCreationMode::None)
    }

    /// `tag.creation-period`, default `daily`.
    pub fn tag_creation_period(&self) -> Result<TagCreationPeriod> {
        self.get_enum(TAG_CREATION_PERIOD, TagCreationPeriod::Daily)
    }

    /// `tag.creation-period-duration`; when set it replaces `tag.creation-period`.
    pub fn tag_creation_period_duration(&self) -> Result<Option<Duration>> {
        self.get_duration(TAG_CREATION_PERIOD_DURATION)
    }

    /// `tag.creation-delay`, default 0: how long after a period ends its tag is created.
    pub fn tag_creation_delay(&self) -> Result<Duration> {
        or_default(self.get_duration(TAG_CREATION_DELAY), Duration::ZERO)
    }

    /// `tag.period-formatter`, default `with_dashes`.
    pub fn tag_period_formatter(&self) -> Result<TagPeriodFormatter> {
        self.get_enum(TAG_PERIOD_FORMATTER, TagPeriodFormatter::WithDashes)
    }

    /// `tag.num-retained-max`; `None` (no limit) by default.
    pub fn tag_num_retained_max(&self) -> Result<Option<i32>> {
        self.get_i32(TAG_NUM_RETAINED_MAX)
    }

    /// `tag.automatic-completion`, default false: create the tags of skipped periods.
    pub fn tag_automatic_completion(&self) -> Result<bool> {
        or_default(self.get_bool(TAG_AUTOMATIC_COMPLETION), false)
    }

    /// `tag.create-success-file`, default false: whether creating a tag writes
    /// `tag/tag-success-file/<tag>_SUCCESS` (Java `SuccessFileTagCallback`).
    pub fn tag_create_success_file(&self) -> Result<bool> {
        or_default(self.get_bool(TAG_CREATE_SUCCESS_FILE), false)
    }

    /// `sink.process-time-zone`, if set (the zone of process-time and batch tags; unset: the
    /// local zone). Java `ZoneId` text, parsed where it is used.
    pub fn sink_process_time_zone(&self) -> Option<&str> {
        self.get(SINK_PROCESS_TIME_ZONE)
    }

    /// `sink.watermark-time-zone`, default `UTC` (the zone of watermark tags). Java `ZoneId`
    /// text, parsed where it is used.
    pub fn sink_watermark_time_zone(&self) -> &str {
        self.get(SINK_WATERMARK_TIME_ZONE).unwrap_or("UTC")
    }

    /// `tag.batch.customized-name`, if set.
    pub fn tag_batch_customized_name(&self) -> Option<&str> {
        self.get(TAG_BATCH_CUSTOMIZED_NAME)
    }

    /// `partition.expiration-time`; `None` (partitions never expire) by default.
    pub fn partition_expiration_time(&self) -> Result<Option<Duration>> {
        self.get_duration(PARTITION_EXPIRATION_TIME)
    }

    /// `partition.expiration-strategy`, default `values-time`.
    pub fn partition_expiration_strategy(&self) -> Result<PartitionExpirationStrategy> {
        self.get_enum(
            PARTITION_EXPIRATION_STRATEGY,
            PartitionExpirationStrategy::ValuesTime,
        )
    }

    /// `partition.timestamp-pattern`, if set.
    pub fn partition_timestamp_pattern(&self) -> Option<&str> {
        self.get(PARTITION_TIMESTAMP_PATTERN)
    }

    /// `partition.timestamp-formatter`, if set.
    pub fn partition_timestamp_formatter(&self) -> Option<&str> {
        self.get(PARTITION_TIMESTAMP_FORMATTER)
    }

    /// `partition.expiration-max-num`, default 100.
    pub fn partition_expiration_max_num(&self) -> Result<i32> {
        or_default(self.get_i32(PARTITION_EXPIRATION_MAX_NUM), 100)
    }

    /// `partition.expiration-batch-size`; `None` (one batch) by default.
    pub fn partition_expiration_batch_size(&self) -> Result<Option<i32>> {
        self.get_i32(PARTITION_EXPIRATION_BATCH_SIZE)
    }

    /// `tag.default-time-retained`; `None` (tags are kept until deleted) by default.
    pub fn tag_default_time_retained(&self) -> Result<Option<Duration>> {
        self.get_duration(TAG_DEFAULT_TIME_RETAINED)
    }

    /// `consumer.expiration-time`; `None` (consumers never expire) by default.
    pub fn consumer_expiration_time(&self) -> Result<Option<Duration>> {
        self.get_duration(CONSUMER_EXPIRATION_TIME)
    }

    /// `changelog.num-retained.min`; `None` (follows the snapshots) by default.
    pub fn changelog_num_retained_min(&self) -> Result<Option<i32>> {
        self.get_i32(CHANGELOG_NUM_RETAINED_MIN)
    }

    /// `changelog.num-retained.max`; `None` (follows the snapshots) by default.
    pub fn changelog_num_retained_max(&self) -> Result<Option<i32>> {
        self.get_i32(CHANGELOG_NUM_RETAINED_MAX)
    }

    /// `changelog.time-retained`; `None` (follows the snapshots) by default.
    pub fn changelog_time_retained(&self) -> Result<Option<Duration>> {
        self.get_duration(CHANGELOG_TIME_RETAINED)
    }

    /// `force-lookup`, default false.
    pub fn force_lookup(&self) -> Result<bool> {
        or_default(self.get_bool(FORCE_LOOKUP), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::opts;

    #[test]
    fn defaults_and_case_insensitive_strategy() {
        let none = Options::new();
        assert_eq!(none.partition_expiration_time().unwrap(), None);
        assert_eq!(
            none.partition_expiration_strategy().unwrap(),
            PartitionExpirationStrategy::ValuesTime
        );
        assert_eq!(none.partition_expiration_max_num().unwrap(), 100);
        assert!(!none.force_lookup().unwrap());
        let set = opts(&[
            ("partition.expiration-time", "7 d"),
            ("partition.expiration-strategy", "Update-Time"),
            ("tag.default-time-retained", "1h"),
            ("changelog.num-retained.max", "20"),
        ]);
        assert_eq!(
            set.partition_expiration_time().unwrap(),
            Some(Duration::from_secs(7 * 86_400))
        );
        assert_eq!(
            set.partition_expiration_strategy().unwrap(),
            PartitionExpirationStrategy::UpdateTime
        );
        assert_eq!(
            set.tag_default_time_retained().unwrap(),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(set.changelog_num_retained_max().unwrap(), Some(20));
        let bad = opts(&[("partition.expiration-strategy", "sometimes")]);
        assert!(bad.partition_expiration_strategy().is_err());
    }
}
