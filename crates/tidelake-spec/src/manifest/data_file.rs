//! `DataFileMeta` (Java `org.apache.paimon.io.DataFileMeta`, `SCHEMA` and
//! `DataFileMetaSerializer`): the description of one data file inside a manifest entry.
//!
//! Invariant: BinaryRow fields (`min_key`, `max_key`, stats rows) are the framed bytes as
//! stored, so a decode/encode round trip reproduces them byte for byte.

use super::record::{nested_record, AvroRecord, AvroValue, Field, Fields, ToAvro, Ty};
use super::stats::SimpleStats;
use crate::error::{Error, Result};

/// Where a data file came from (Java `FileSource`, stored as a TINYINT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSource {
    /// Newly written data (0).
    Append = 0,
    /// Produced by compaction (1).
    Compact = 1,
}

impl FileSource {
    /// The stored byte value.
    pub fn to_byte(self) -> i32 {
        self as i32
    }

    /// Parses the stored byte value.
    pub fn from_byte(v: i32) -> Result<FileSource> {
        match v {
            0 => Ok(FileSource::Append),
            1 => Ok(FileSource::Compact),
            _ => Err(Error::corrupt(
                "manifest",
                format_args!("unknown _FILE_SOURCE {v}"),
            )),
        }
    }
}

/// Metadata of one data file (Java `DataFileMeta`); field order is the Avro order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataFileMeta {
    /// `_FILE_NAME`: file name only, relative to the bucket directory.
    pub file_name: String,
    /// `_FILE_SIZE` in bytes.
    pub file_size: i64,
    /// `_ROW_COUNT`: all rows, retractions included.
    pub row_count: i64,
    /// `_MIN_KEY`: framed BinaryRow of the trimmed primary key of the first row.
    pub min_key: Vec<u8>,
    /// `_MAX_KEY`: framed BinaryRow of the trimmed primary key of the last row.
    pub max_key: Vec<u8>,
    /// `_KEY_STATS`: stats of the trimmed primary-key columns.
    pub key_stats: SimpleStats,
    /// `_VALUE_STATS`: stats of the columns named by `value_stats_cols`.
    pub value_stats: SimpleStats,
    /// `_MIN_SEQUENCE_NUMBER`.
    pub min_sequence_number: i64,
    /// `_MAX_SEQUENCE_NUMBER`.
    pub max_sequence_number: i64,
    /// `_SCHEMA_ID` the file was written with.
    pub schema_id: i64,
    /// `_LEVEL` in the LSM tree (0 for new files and append tables).
    pub level: i32,
    /// `_EXTRA_FILES`: sidecar file names (e.g. `<file>.index`).
    pub extra_files: Vec<String>,
    /// `_CREATION_TIME`: local wall-clock time as epoch milliseconds (timestamp-millis).
    pub creation_time: Option<i64>,
    /// `_DELETE_ROW_COUNT`: number of -U/-D rows; `None` = unknown.
    pub delete_row_count: Option<i64>,
    /// `_EMBEDDED_FILE_INDEX`: small file index stored inline.
    pub embedded_index: Option<Vec<u8>>,
    /// `_FILE_SOURCE`.
    pub file_source: Option<FileSource>,
    /// `_VALUE_STATS_COLS`: `None` = all columns of the file's schema, `[]` = no value stats.
    pub value_stats_cols: Option<Vec<String>>,
    /// `_EXTERNAL_PATH`: absolute path when the file is not under the table root.
    pub external_path: Option<String>,
    /// `_FIRST_ROW_ID` (row tracking).
    pub first_row_id: Option<i64>,
    /// `_WRITE_COLS`: columns physically present (data evolution); `None` = all.
    pub write_cols: Option<Vec<String>>,
    /// `_WRITE_COLS_SEQUENCES`: per-column max sequence numbers.
    pub write_cols_sequences: Option<Vec<i64>>,
}

impl DataFileMeta {
    /// The slots of `_ROW_COUNT` and `_KEY_STATS` in [`AvroRecord::FIELDS`], which
    /// [`super::read_manifest_probed`] tests before decoding the rest.
    pub(super) const KEY_STATS_PROBED: &'static [usize] = &[2, 5];

    /// Where this file lives (Java `DataFilePathFactory.toPath`): its `_EXTERNAL_PATH`, else
    /// `<bucket_dir>/<file_name>` (`bucket_dir` relative to the table root). The one place
    /// readers, writers and deleters resolve a data file.
    pub fn path(&self, bucket_dir: &str) -> String {
        match &self.external_path {
            Some(p) => p.clone(),
            None => join(bucket_dir, &self.file_name),
        }
    }

    /// Where file `name` aligned with this one (one of its `_EXTRA_FILES`, e.g. a file index)
    /// lives: in the same directory (Java `DataFilePathFactory.toAlignedPath`).
    pub fn aligned_path(&self, bucket_dir: &str, name: &str) -> String {
        match self
            .external_path
            .as_deref()
            .and_then(|p| p.rsplit_once('/'))
        {
            Some((dir, _)) => format!("{dir}/{name}"),
            None => join(bucket_dir, name),
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

const STRINGS: Ty = Ty::Array {
    item: &Ty::String,
    nullable_items: false,
};

impl AvroRecord for DataFileMeta {
    const FIELDS: &'static [Field] = &[
        Field::required("_FILE_NAME", Ty::String),
        Field::required("_FILE_SIZE", Ty::Long),
        Field::required("_ROW_COUNT", Ty::Long),
        Field::required("_MIN_KEY", Ty::Bytes),
        Field::required("_MAX_KEY", Ty::Bytes),
        Field::required("_KEY_STATS", Ty::Record(SimpleStats::FIELDS)),
        Field::required("_VALUE_STATS", Ty::Record(SimpleStats::FIELDS)),
        Field::required("_MIN_SEQUENCE_NUMBER", Ty::Long),
        Field::required("_MAX_SEQUENCE_NUMBER", Ty::Long),
        Field::required("_SCHEMA_ID", Ty::Long),
        Field::required("_LEVEL", Ty::Int),
        Field::required("_EXTRA_FILES", STRINGS),
        Field::nullable("_CREATION_TIME", Ty::TimestampMillis),
        Field::nullable("_DELETE_ROW_COUNT", Ty::Long),
        Field::nullable("_EMBEDDED_FILE_INDEX", Ty::Bytes),
        Field::nullable("_FILE_SOURCE", Ty::Int),
        Field::nullable("_VALUE_STATS_COLS", STRINGS),
        Field::nullable("_EXTERNAL_PATH", Ty::String),
        Field::nullable("_FIRST_ROW_ID", Ty::Long),
        Field::nullable("_WRITE_COLS", STRINGS),
        Field::nullable(
            "_WRITE_COLS_SEQUENCES",
            Ty::Array {
                item: &Ty::Long,
                nullable_items: false,
            },
        ),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        Ok(DataFileMeta {
            file_name: f.get()?,
            file_size: f.get()?,
            row_count: f.get()?,
            min_key: f.bytes()?,
            max_key: f.bytes()?,
            key_stats: f.get()?,
            value_stats: f.get()?,
            min_sequence_number: f.get()?,
            max_sequence_number: f.get()?,
            schema_id: f.get()?,
            level: f.get()?,
            extra_files: f.get()?,
            creation_time: f.get()?,
            delete_row_count: f.get()?,
            embedded_index: f.opt_bytes()?,
            file_source: f
                .get::<Option<i32>>()?
                .map(FileSource::from_byte)
                .transpose()?,
            value_stats_cols: f.get()?,
            external_path: f.get()?,
            first_row_id: f.get()?,
            write_cols: f.get()?,
            write_cols_sequences: f.get()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            self.file_name.to_avro(),
            self.file_size.to_avro(),
            self.row_count.to_avro(),
            AvroValue::Bytes(self.min_key.clone()),
            AvroValue::Bytes(self.max_key.clone()),
            self.key_stats.to_avro(),
            self.value_stats.to_avro(),
            self.min_sequence_number.to_avro(),
            self.max_sequence_number.to_avro(),
            self.schema_id.to_avro(),
            self.level.to_avro(),
            self.extra_files.to_avro(),
            self.creation_time.to_avro(),
            self.delete_row_count.to_avro(),
            self.embedded_index
                .clone()
                .map_or(AvroValue::Null, AvroValue::Bytes),
            self.file_source.map(FileSource::to_byte).to_avro(),
            self.value_stats_cols.to_avro(),
            self.external_path.to_avro(),
            self.first_row_id.to_avro(),
            self.write_cols.to_avro(),
            self.write_cols_sequences.to_avro(),
        ]
    }
}
nested_record!(DataFileMeta);
