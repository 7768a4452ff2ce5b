//! Manifest lists, manifests and index manifests: Avro container files (paimon-format.md §4)
//! turned into structs and back. No I/O: callers pass and receive whole files as bytes.
//!
//! * [`read_manifest_list`] / [`write_manifest_list`]: [`ManifestFileMeta`] records.
//! * [`read_manifest`] / [`write_manifest`]: [`ManifestEntry`] records (with [`DataFileMeta`]).
//! * [`read_index_manifest`] / [`write_index_manifest`]: [`IndexManifestEntry`] records.
//! * [`merge_entries`] / [`merge_index_entries`]: replaying ADD/DELETE entries into the live
//!   files (an ADD cancelled by a later DELETE of the same file).
//!
//! Invariants:
//! * Reading resolves fields by name against each file's writer schema, like Java: unknown
//!   fields are skipped, missing nullable ones read as `None`, a missing required one is
//!   [`Error::Corrupt`](crate::Error::Corrupt). Record names are ignored. Nullable records
//!   (`["null", record]`, root included, as Java up to 0.8 wrote them) are accepted.
//! * `_VERSION` must be 2 (manifest list, manifest) or 1 (index manifest).
//! * Malformed input of any kind yields `Error::Corrupt` (or `Unsupported` for a valid but
//!   unsupported codec): no panic, no unbounded loop or recursion. Allocations follow the
//!   input's size: lengths and counts are checked against the bytes left, and decompressed
//!   blocks are capped by apache-avro's `max_allocation_bytes` (512 MiB unless the program
//!   sets it first; library code leaves that process-wide setting alone).
//! * Writing produces Java's writer schema (field order, types, record names) and encoding.
//! * BinaryRow fields are kept as the framed bytes stored in Avro (4-byte BE arity + row), so
//!   they round-trip byte for byte; decode them with `binary_row`.

mod avro;
mod data_file;
mod entry;
mod index;
mod list;
mod merge;
mod record;
mod stats;
#[cfg(test)]
mod tests;
mod writer_schema;

pub use avro::{Codec, ContainerWriter};
pub use data_file::{DataFileMeta, FileSource};
pub use entry::{FileIdentifier, FileKind, ManifestEntry, MANIFEST_ENTRY_VERSION};
pub use index::{
    decode_hash_index, encode_hash_index, DeletionVectorMeta, GlobalIndexMeta, IndexFileMeta,
    IndexManifestEntry, DELETION_VECTORS_INDEX, HASH_INDEX, INDEX_MANIFEST_ENTRY_VERSION,
};
pub use list::{ManifestFileMeta, MANIFEST_FILE_META_VERSION};
pub use merge::{merge_entries, merge_entries_from, merge_index_entries};
pub use stats::{SimpleStats, EMPTY_ROW};

use crate::error::Result;
use record::{AvroRecord, AvroValue, Probe};

/// Decodes a manifest list file (`manifest/manifest-list-*`).
pub fn read_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFileMeta>> {
    record::read_records(bytes, "manifest list")
}

/// Decodes a manifest file (`manifest/manifest-*`).
pub fn read_manifest(bytes: &[u8]) -> Result<Vec<ManifestEntry>> {
    record::read_records(bytes, "manifest")
}

/// Decodes the entries of a manifest file that `keep` accepts by their `_PARTITION` (framed
/// BinaryRow) and `_BUCKET`, asked before the rest of the entry is decoded: the `_FILE` of a
/// rejected entry is skipped undecoded (Java filters manifest rows by partition and bucket
/// before converting them to entries, `ManifestFile.read` with a row filter).
pub fn read_manifest_where(
    bytes: &[u8],
    mut keep: impl FnMut(&[u8], i32) -> bool,
) -> Result<Vec<ManifestEntry>> {
    let mut probe = |values: &[AvroValue]| match (&values[2], &values[3]) {
        (AvroValue::Bytes(partition), AvroValue::Int(bucket)) => keep(partition, *bucket),
        // absent or mistyped: decoded in full, so the error names the field
        _ => true,
    };
    let probe = Probe {
        slots: ManifestEntry::PROBED,
        keep: &mut probe,
    };
    record::read_records_probed(bytes, "manifest", Some(probe))
}

/// Decodes an index manifest file (`manifest/index-manifest-*`).
pub fn read_index_manifest(bytes: &[u8]) -> Result<Vec<IndexManifestEntry>> {
    record::read_records(bytes, "index manifest")
}

/// Encodes a manifest list file. pypaimon's `_TOTAL_BUCKETS`/`_EXTRA_FILES` are written
/// only if some entry sets them (see [`ManifestFileMeta`]).
pub fn write_manifest_list(entries: &[ManifestFileMeta], codec: Codec) -> Result<Vec<u8>> {
    record::write_records(entries, list::writer_fields(entries), codec)
}

/// Encodes a manifest file.
pub fn write_manifest(entries: &[ManifestEntry], codec: Codec) -> Result<Vec<u8>> {
    record::write_records(entries, ManifestEntry::FIELDS, codec)
}

/// Encodes an index manifest file.
pub fn write_index_manifest(entries: &[IndexManifestEntry], codec: Codec) -> Result<Vec<u8>> {
    record::write_records(entries, IndexManifestEntry::FIELDS, codec)
}
