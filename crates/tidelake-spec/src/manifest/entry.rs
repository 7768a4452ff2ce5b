//! `ManifestEntry` (Java `org.apache.paimon.manifest.ManifestEntry`, `ManifestEntrySerializer`)
//! and the file identifier that folds ADD/DELETE entries (Java `FileEntry.Identifier`).
//!
//! Invariants: `_VERSION` is 2 on disk (checked on read, written on write); `partition` is
//! the framed BinaryRow exactly as stored, which is what identifiers compare.

use super::data_file::DataFileMeta;
use super::record::{AvroRecord, AvroValue, Field, Fields, ToAvro, Ty};
use crate::error::{Error, Result};

/// `_VERSION` of manifest entries (Java's permanent format identifier).
pub const MANIFEST_ENTRY_VERSION: i32 = 2;

/// Kind of a manifest or index-manifest entry (Java `FileKind`, stored as a TINYINT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// The file is added (0).
    Add = 0,
    /// A previously added file is removed (1).
    Delete = 1,
}

impl FileKind {
    /// The stored byte value.
    pub fn to_byte(self) -> i32 {
        self as i32
    }

    /// Parses the stored byte value.
    pub fn from_byte(v: i32) -> Result<FileKind> {
        match v {
            0 => Ok(FileKind::Add),
            1 => Ok(FileKind::Delete),
            _ => Err(Error::corrupt(
                "manifest",
                format_args!("unknown _KIND {v}"),
            )),
        }
    }
}

/// One record of a manifest file (Java `ManifestEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ManifestEntry {
    /// `_KIND`: ADD or DELETE.
    pub kind: FileKind,
    /// `_PARTITION`: framed BinaryRow of the partition values.
    pub partition: Vec<u8>,
    /// `_BUCKET`.
    pub bucket: i32,
    /// `_TOTAL_BUCKETS`: bucket count the file was written with (-1 dynamic/unaware, -2 postpone).
    pub total_buckets: i32,
    /// `_FILE`.
    pub file: DataFileMeta,
}

/// What makes two entries refer to the same file (Java `FileEntry.Identifier`): a DELETE
/// cancels the ADD with an equal identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileIdentifier {
    /// Framed partition BinaryRow (compared byte-wise, as Java does).
    pub partition: Vec<u8>,
    pub bucket: i32,
    pub level: i32,
    pub file_name: String,
    pub extra_files: Vec<String>,
    pub embedded_index: Option<Vec<u8>>,
    pub external_path: Option<String>,
}

impl ManifestEntry {
    /// The identifier of the file this entry adds or deletes.
    pub fn identifier(&self) -> FileIdentifier {
        FileIdentifier {
            partition: self.partition.clone(),
            bucket: self.bucket,
            level: self.file.level,
            file_name: self.file.file_name.clone(),
            extra_files: self.file.extra_files.clone(),
            embedded_index: self.file.embedded_index.clone(),
            external_path: self.file.external_path.clone(),
        }
    }
}

impl ManifestEntry {
    /// The slots of `_PARTITION` and `_BUCKET` in [`AvroRecord::FIELDS`], which
    /// [`super::read_manifest_where`] tests before decoding the rest.
    pub(super) const PROBED: &'static [usize] = &[2, 3];
    /// The slot of `_FILE` in [`AvroRecord::FIELDS`].
    pub(super) const FILE_SLOT: usize = 5;
}

impl AvroRecord for ManifestEntry {
    const FIELDS: &'static [Field] = &[
        Field::required("_VERSION", Ty::Int),
        Field::required("_KIND", Ty::Int),
        Field::required("_PARTITION", Ty::Bytes),
        Field::required("_BUCKET", Ty::Int),
        Field::required("_TOTAL_BUCKETS", Ty::Int),
        Field::required("_FILE", Ty::Record(DataFileMeta::FIELDS)),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        let version: i32 = f.get()?;
        if version != MANIFEST_ENTRY_VERSION {
            return Err(Error::corrupt(
                "manifest",
                format_args!("_VERSION {version}, expected {MANIFEST_ENTRY_VERSION}"),
            ));
        }
        Ok(ManifestEntry {
            kind: FileKind::from_byte(f.get()?)?,
            partition: f.bytes()?,
            bucket: f.get()?,
            total_buckets: f.get()?,
            file: f.get()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            AvroValue::Int(MANIFEST_ENTRY_VERSION),
            AvroValue::Int(self.kind.to_byte()),
            AvroValue::Bytes(self.partition.clone()),
            self.bucket.to_avro(),
            self.total_buckets.to_avro(),
            self.file.to_avro(),
        ]
    }
}
