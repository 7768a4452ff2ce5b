//! `ManifestFileMeta` (Java `org.apache.paimon.manifest.ManifestFileMeta`,
//! `ManifestFileMetaSerializer`): one record of a manifest list.
//!
//! Invariants: `_VERSION` is 2. `_TOTAL_BUCKETS` and `_EXTRA_FILES` exist only in pypaimon
//! 2.1's writer schema (Java master does not know them). We read them when present; we write
//! Java's exact schema unless some entry sets one of them, in which case both are appended
//! after `_MAX_ROW_ID` as pypaimon does. Either way Java skips unknown fields by name and
//! pypaimon reads them with `dict.get`, so both readers accept our files.

use super::record::{AvroRecord, AvroValue, Field, Fields, ToAvro, Ty};
use super::stats::SimpleStats;
use crate::error::{Error, Result};

/// `_VERSION` of manifest-list records (Java's permanent format identifier).
pub const MANIFEST_FILE_META_VERSION: i32 = 2;

/// Metadata of one manifest file (Java `ManifestFileMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ManifestFileMeta {
    /// `_FILE_NAME`, relative to `manifest/`.
    pub file_name: String,
    /// `_FILE_SIZE` in bytes.
    pub file_size: i64,
    /// `_NUM_ADDED_FILES`: ADD entries in the manifest.
    pub num_added_files: i64,
    /// `_NUM_DELETED_FILES`: DELETE entries in the manifest.
    pub num_deleted_files: i64,
    /// `_PARTITION_STATS`: stats of the partition columns over the entries.
    pub partition_stats: SimpleStats,
    /// `_SCHEMA_ID`: largest schema id of the entries.
    pub schema_id: i64,
    /// `_MIN_BUCKET` (pruning hint; exact bound when set).
    pub min_bucket: Option<i32>,
    /// `_MAX_BUCKET`.
    pub max_bucket: Option<i32>,
    /// `_MIN_LEVEL`.
    pub min_level: Option<i32>,
    /// `_MAX_LEVEL`.
    pub max_level: Option<i32>,
    /// `_MIN_ROW_ID` (row tracking).
    pub min_row_id: Option<i64>,
    /// `_MAX_ROW_ID`.
    pub max_row_id: Option<i64>,
    /// `_TOTAL_BUCKETS` (pypaimon only): the entries' common positive bucket count.
    pub total_buckets: Option<i32>,
    /// `_EXTRA_FILES` (pypaimon only): manifest sidecar files.
    pub extra_files: Option<Vec<String>>,
}

/// Java's manifest-list fields (a prefix of [`ManifestFileMeta::FIELDS`]).
pub(crate) const JAVA_FIELDS: &[Field] = &[
    Field::required("_VERSION", Ty::Int),
    Field::required("_FILE_NAME", Ty::String),
    Field::required("_FILE_SIZE", Ty::Long),
    Field::required("_NUM_ADDED_FILES", Ty::Long),
    Field::required("_NUM_DELETED_FILES", Ty::Long),
    Field::required("_PARTITION_STATS", Ty::Record(SimpleStats::FIELDS)),
    Field::required("_SCHEMA_ID", Ty::Long),
    Field::nullable("_MIN_BUCKET", Ty::Int),
    Field::nullable("_MAX_BUCKET", Ty::Int),
    Field::nullable("_MIN_LEVEL", Ty::Int),
    Field::nullable("_MAX_LEVEL", Ty::Int),
    Field::nullable("_MIN_ROW_ID", Ty::Long),
    Field::nullable("_MAX_ROW_ID", Ty::Long),
];

/// [`JAVA_FIELDS`] plus pypaimon's two extra fields.
const ALL_FIELDS: &[Field] = &[
    JAVA_FIELDS[0],
    JAVA_FIELDS[1],
    JAVA_FIELDS[2],
    JAVA_FIELDS[3],
    JAVA_FIELDS[4],
    JAVA_FIELDS[5],
    JAVA_FIELDS[6],
    JAVA_FIELDS[7],
    JAVA_FIELDS[8],
    JAVA_FIELDS[9],
    JAVA_FIELDS[10],
    JAVA_FIELDS[11],
    JAVA_FIELDS[12],
    Field::nullable("_TOTAL_BUCKETS", Ty::Int),
    Field::nullable(
        "_EXTRA_FILES",
        Ty::Array {
            item: &Ty::String,
            nullable_items: false,
        },
    ),
];

impl ManifestFileMeta {
    /// Whether this record needs pypaimon's extra fields in the writer schema.
    pub(crate) fn has_pypaimon_fields(&self) -> bool {
        self.total_buckets.is_some() || self.extra_files.is_some()
    }
}

/// The writer fields for `entries`: Java's, extended only when needed.
pub(crate) fn writer_fields(entries: &[ManifestFileMeta]) -> &'static [Field] {
    if entries.iter().any(ManifestFileMeta::has_pypaimon_fields) {
        ALL_FIELDS
    } else {
        JAVA_FIELDS
    }
}

impl AvroRecord for ManifestFileMeta {
    const FIELDS: &'static [Field] = ALL_FIELDS;

    fn from_fields(f: &mut Fields) -> Result<Self> {
        let version: i32 = f.get()?;
        if version != MANIFEST_FILE_META_VERSION {
            return Err(Error::corrupt(
                "manifest list",
                format_args!("_VERSION {version}, expected {MANIFEST_FILE_META_VERSION}"),
            ));
        }
        Ok(ManifestFileMeta {
            file_name: f.get()?,
            file_size: f.get()?,
            num_added_files: f.get()?,
            num_deleted_files: f.get()?,
            partition_stats: f.get()?,
            schema_id: f.get()?,
            min_bucket: f.get()?,
            max_bucket: f.get()?,
            min_level: f.get()?,
            max_level: f.get()?,
            min_row_id: f.get()?,
            max_row_id: f.get()?,
            total_buckets: f.get()?,
            extra_files: f.get()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            AvroValue::Int(MANIFEST_FILE_META_VERSION),
            self.file_name.to_avro(),
            self.file_size.to_avro(),
            self.num_added_files.to_avro(),
            self.num_deleted_files.to_avro(),
            self.partition_stats.to_avro(),
            self.schema_id.to_avro(),
            self.min_bucket.to_avro(),
            self.max_bucket.to_avro(),
            self.min_level.to_avro(),
            self.max_level.to_avro(),
            self.min_row_id.to_avro(),
            self.max_row_id.to_avro(),
            self.total_buckets.to_avro(),
            self.extra_files.to_avro(),
        ]
    }
}
