//! [`Split`]: the unit of reading work, one (partition, bucket) of one snapshot.
//!
//! A split is self-contained and serialisable (JSON), so a driver can plan and ship splits to
//! executors that read them independently. Invariants: every file of a split lives in the
//! same bucket directory; for primary-key tables a split holds *all* live files of its bucket
//! that the read may see, so merging the split alone gives the bucket's merged rows.

use serde::{Deserialize, Serialize};
use tidelake_spec::file_index::INDEX_FILE_SUFFIX;
use tidelake_spec::manifest::DataFileMeta;

use crate::error::{Error, Result};
pub use crate::state::DeletionFileRef;

/// One data file to read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitFile {
    /// Path relative to the table root, or an absolute external path.
    pub path: String,
    pub file_name: String,
    pub file_size: i64,
    pub row_count: i64,
    pub schema_id: i64,
    pub level: i32,
    pub min_sequence_number: i64,
    pub max_sequence_number: i64,
    pub delete_row_count: Option<i64>,
    /// Framed BinaryRows of the first and last key (primary-key tables).
    pub min_key: Vec<u8>,
    pub max_key: Vec<u8>,
    pub deletion: Option<DeletionFileRef>,
    /// `_FIRST_ROW_ID` (row tracking): the row id of the file's first row.
    #[serde(default)]
    pub first_row_id: Option<i64>,
    /// `_WRITE_COLS` (data evolution): the only columns the file holds; `None`: all.
    #[serde(default)]
    pub write_cols: Option<Vec<String>>,
    /// The file's data-file index (`file-index.*`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<FileIndexRef>,
    /// The file is known to hold its partition's columns (set by the planner: a migrated Hive
    /// file holds none, readers take them from the partition); `false` when unknown.
    #[serde(default)]
    pub holds_partition_columns: bool,
}

/// Where a data file's index is: embedded in its manifest entry, or a file next to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FileIndexRef {
    Embedded(Vec<u8>),
    /// Path of the index file, like [`SplitFile::path`].
    File(String),
}

impl FileIndexRef {
    /// The index of data file `meta` stored at `path`, if it has one (Java
    /// `FileIndexEvaluator`: the embedded bytes, else the one extra file named `*.index`, in the
    /// data file's directory).
    pub fn of(path: &str, meta: &DataFileMeta) -> Option<FileIndexRef> {
        if let Some(bytes) = &meta.embedded_index {
            return Some(FileIndexRef::Embedded(bytes.clone()));
        }
        let name = meta
            .extra_files
            .iter()
            .find(|f| f.ends_with(INDEX_FILE_SUFFIX))?;
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        Some(FileIndexRef::File(if dir.is_empty() {
            name.clone()
        } else {
            format!("{dir}/{name}")
        }))
    }
}

impl SplitFile {
    pub fn new(path: String, meta: &DataFileMeta, deletion: Option<DeletionFileRef>) -> Self {
        SplitFile {
            file_name: meta.file_name.clone(),
            file_size: meta.file_size,
            row_count: meta.row_count,
            schema_id: meta.schema_id,
            level: meta.level,
            min_sequence_number: meta.min_sequence_number,
            max_sequence_number: meta.max_sequence_number,
            delete_row_count: meta.delete_row_count,
            min_key: meta.min_key.clone(),
            max_key: meta.max_key.clone(),
            deletion,
            first_row_id: meta.first_row_id,
            write_cols: meta.write_cols.clone(),
            index: FileIndexRef::of(&path, meta),
            holds_partition_columns: false,
            path,
        }
    }
}

/// A unit of reading work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub snapshot_id: i64,
    /// Framed BinaryRow of the partition values.
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub total_buckets: i32,
    /// Bucket directory relative to the table root.
    pub bucket_path: String,
    pub files: Vec<SplitFile>,
    /// True when the files can be read without merging (see [`crate::scan::plan`]).
    pub raw_convertible: bool,
    /// The branch whose schemas the files were written with, when not the read table's own
    /// (`scan.fallback-branch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Diff splits (`incremental-between-scan-mode` = `diff`): the start snapshot's files of
    /// this bucket that the end snapshot no longer has, while `files` holds the end's files
    /// the start lacks; read as the difference of the two ([`crate::read::diff`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_files: Option<Vec<SplitFile>>,
    /// The bucket's dynamic-bucket `HASH` index files (paths like [`SplitFile::path`]), for
    /// lookups that skip buckets without their keys (`crate::scan::hash_index`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_index: Vec<String>,
}

impl Split {
    pub fn row_count(&self) -> i64 {
        self.files.iter().map(|f| f.row_count).sum()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a split always serialises")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Split> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid(format!("not a tidelake split: {e}")))
    }
}
