//! Index manifests: `IndexManifestEntry` (Java `org.apache.paimon.manifest.IndexManifestEntry`,
//! `IndexManifestEntrySerializer`) with its `IndexFileMeta`, `DeletionVectorMeta` and
//! `GlobalIndexMeta` (Java `org.apache.paimon.index.*`).
//!
//! Invariants: `_VERSION` is 1. On disk the index file's fields are flattened into the entry
//! record; in memory they are grouped as Java groups them. Java types the deletion-vector
//! array items and `_GLOBAL_INDEX` as nullable records (`["null", record]`); we write that,
//! and read pypaimon's non-nullable item records as well (a null item is rejected).

use super::entry::FileKind;
use super::record::{nested_record, AvroRecord, AvroValue, Field, Fields, ToAvro, Ty};
use crate::error::{Error, Result};

/// `_VERSION` of index-manifest entries (Java's permanent format identifier).
pub const INDEX_MANIFEST_ENTRY_VERSION: i32 = 1;

/// Index type of dynamic-bucket hash indexes.
pub const HASH_INDEX: &str = "HASH";
/// Index type of deletion-vector files.
pub const DELETION_VECTORS_INDEX: &str = "DELETION_VECTORS";

/// The key hashes a `HASH` index file holds: consecutive big-endian int32s, no header (Java
/// `HashIndexFile`, `IntFileUtils`). A length that is not a multiple of 4 is
/// [`Error::Corrupt`] naming `what`.
pub fn decode_hash_index(what: &str, bytes: &[u8]) -> Result<Vec<i32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::corrupt(
            what,
            format!("hash index length {} is not a multiple of 4", bytes.len()),
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// The bytes of a `HASH` index file holding `hashes` (see [`decode_hash_index`]).
pub fn encode_hash_index(hashes: &[i32]) -> Vec<u8> {
    hashes.iter().flat_map(|h| h.to_be_bytes()).collect()
}

/// Where one data file's deletion vector sits in a DV index file (Java `DeletionVectorMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeletionVectorMeta {
    /// `f0`: the data file name.
    pub data_file_name: String,
    /// `f1`: offset of the vector's `size` field in the index file.
    pub offset: i32,
    /// `f2`: length (blob only for 32-bit bitmaps, whole record for 64-bit, see §10.4).
    pub length: i32,
    /// `_CARDINALITY`: number of deleted rows.
    pub cardinality: Option<i64>,
}

impl AvroRecord for DeletionVectorMeta {
    const FIELDS: &'static [Field] = &[
        Field::required("f0", Ty::String),
        Field::required("f1", Ty::Int),
        Field::required("f2", Ty::Int),
        Field::nullable("_CARDINALITY", Ty::Long),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        Ok(DeletionVectorMeta {
            data_file_name: f.get()?,
            offset: f.get()?,
            length: f.get()?,
            cardinality: f.get()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            self.data_file_name.to_avro(),
            self.offset.to_avro(),
            self.length.to_avro(),
            self.cardinality.to_avro(),
        ]
    }
}
nested_record!(DeletionVectorMeta);

/// Row range and field of a global index file (Java `GlobalIndexMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlobalIndexMeta {
    /// `_ROW_RANGE_START`.
    pub row_range_start: i64,
    /// `_ROW_RANGE_END`.
    pub row_range_end: i64,
    /// `_INDEX_FIELD_ID`.
    pub index_field_id: i32,
    /// `_EXTRA_FIELD_IDS`.
    pub extra_field_ids: Option<Vec<i32>>,
    /// `_INDEX_META`.
    pub index_meta: Option<Vec<u8>>,
    /// `_SOURCE_META`.
    pub source_meta: Option<Vec<u8>>,
}

impl AvroRecord for GlobalIndexMeta {
    const FIELDS: &'static [Field] = &[
        Field::required("_ROW_RANGE_START", Ty::Long),
        Field::required("_ROW_RANGE_END", Ty::Long),
        Field::required("_INDEX_FIELD_ID", Ty::Int),
        Field::nullable(
            "_EXTRA_FIELD_IDS",
            Ty::Array {
                item: &Ty::Int,
                nullable_items: false,
            },
        ),
        Field::nullable("_INDEX_META", Ty::Bytes),
        Field::nullable("_SOURCE_META", Ty::Bytes),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        Ok(GlobalIndexMeta {
            row_range_start: f.get()?,
            row_range_end: f.get()?,
            index_field_id: f.get()?,
            extra_field_ids: f.get()?,
            index_meta: f.opt_bytes()?,
            source_meta: f.opt_bytes()?,
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        vec![
            self.row_range_start.to_avro(),
            self.row_range_end.to_avro(),
            self.index_field_id.to_avro(),
            self.extra_field_ids.to_avro(),
            self.index_meta
                .clone()
                .map_or(AvroValue::Null, AvroValue::Bytes),
            self.source_meta
                .clone()
                .map_or(AvroValue::Null, AvroValue::Bytes),
        ]
    }
}
nested_record!(GlobalIndexMeta);

/// One index file (Java `IndexFileMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexFileMeta {
    /// `_INDEX_TYPE`: [`HASH_INDEX`], [`DELETION_VECTORS_INDEX`] or a global index type.
    pub index_type: String,
    /// `_FILE_NAME`: in `index/`, or with `index-file-in-data-file-dir` in its bucket directory.
    pub file_name: String,
    /// `_FILE_SIZE` in bytes.
    pub file_size: i64,
    /// `_ROW_COUNT`: hashes (HASH) or deletion vectors (DV) in the file.
    pub row_count: i64,
    /// `_DELETIONS_VECTORS_RANGES`, in file order (DV only).
    pub dv_ranges: Option<Vec<DeletionVectorMeta>>,
    /// `_EXTERNAL_PATH`.
    pub external_path: Option<String>,
    /// `_GLOBAL_INDEX`.
    pub global_index: Option<GlobalIndexMeta>,
}

/// One record of an index manifest (Java `IndexManifestEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexManifestEntry {
    /// `_KIND`: ADD or DELETE.
    pub kind: FileKind,
    /// `_PARTITION`: framed BinaryRow.
    pub partition: Vec<u8>,
    /// `_BUCKET`.
    pub bucket: i32,
    /// The index file (flattened into the entry record on disk).
    pub index_file: IndexFileMeta,
}

impl AvroRecord for IndexManifestEntry {
    const FIELDS: &'static [Field] = &[
        Field::required("_VERSION", Ty::Int),
        Field::required("_KIND", Ty::Int),
        Field::required("_PARTITION", Ty::Bytes),
        Field::required("_BUCKET", Ty::Int),
        Field::required("_INDEX_TYPE", Ty::String),
        Field::required("_FILE_NAME", Ty::String),
        Field::required("_FILE_SIZE", Ty::Long),
        Field::required("_ROW_COUNT", Ty::Long),
        Field::nullable(
            "_DELETIONS_VECTORS_RANGES",
            Ty::Array {
                item: &Ty::Record(DeletionVectorMeta::FIELDS),
                nullable_items: true,
            },
        ),
        Field::nullable("_EXTERNAL_PATH", Ty::String),
        Field::nullable("_GLOBAL_INDEX", Ty::Record(GlobalIndexMeta::FIELDS)),
    ];

    fn from_fields(f: &mut Fields) -> Result<Self> {
        let version: i32 = f.get()?;
        if version != INDEX_MANIFEST_ENTRY_VERSION {
            return Err(Error::corrupt(
                "index manifest",
                format_args!("_VERSION {version}, expected {INDEX_MANIFEST_ENTRY_VERSION}"),
            ));
        }
        Ok(IndexManifestEntry {
            kind: FileKind::from_byte(f.get()?)?,
            partition: f.bytes()?,
            bucket: f.get()?,
            index_file: IndexFileMeta {
                index_type: f.get()?,
                file_name: f.get()?,
                file_size: f.get()?,
                row_count: f.get()?,
                dv_ranges: f.get()?,
                external_path: f.get()?,
                global_index: f.get()?,
            },
        })
    }

    fn to_fields(&self) -> Vec<AvroValue> {
        let file = &self.index_file;
        vec![
            AvroValue::Int(INDEX_MANIFEST_ENTRY_VERSION),
            AvroValue::Int(self.kind.to_byte()),
            AvroValue::Bytes(self.partition.clone()),
            self.bucket.to_avro(),
            file.index_type.to_avro(),
            file.file_name.to_avro(),
            file.file_size.to_avro(),
            file.row_count.to_avro(),
            file.dv_ranges.to_avro(),
            file.external_path.to_avro(),
            file.global_index.to_avro(),
        ]
    }
}

#[cfg(test)]
mod hash_index_tests {
    use super::*;

    #[test]
    fn hash_index_files_are_big_endian_int32s() {
        // Java writes key 1 of an INT key as 5759f99e (see the format doc, 7.4)
        let bytes = encode_hash_index(&[0x5759_f99e_u32 as i32, -1]);
        assert_eq!(bytes, [0x57, 0x59, 0xf9, 0x9e, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            decode_hash_index("f", &bytes).unwrap(),
            vec![0x5759_f99e_u32 as i32, -1]
        );
        let err = decode_hash_index("index/x", &bytes[..5]).unwrap_err();
        assert!(err.to_string().contains("index/x"), "{err}");
    }
}
