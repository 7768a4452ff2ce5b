//! Manifest lists, manifests and index manifests: Avro container files (paimon-format.md §4)
//! turned into structs and back. No I/O: callers pass and receive whole files as bytes.
//!
//! * [`read_manifest_list`] / [`write_manifest_list`]: [`ManifestFileMeta`] records.
//! * [`read_manifest`] / [`write_manifest`]: [`ManifestEntry`] records (with [`DataFileMeta`]);
//!   [`read_manifest_where`] / [`read_manifest_probed`]: only the entries a filter on their
//!   partition, bucket and key statistics keeps, the others skipped undecoded.
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
    read_manifest_probed(bytes, EntryProbe::new(&mut keep))
}

/// A test of a manifest entry's file by its `_KEY_STATS` and `_ROW_COUNT` (see
/// [`EntryProbe::key_stats`]).
pub type KeyStatsProbe<'a> = &'a mut dyn FnMut(&SimpleStats, i64) -> bool;

/// The tests [`read_manifest_probed`] asks of each manifest entry, each as soon as the fields
/// it looks at are read, so a rejected entry's other fields are skipped undecoded.
pub struct EntryProbe<'a> {
    partition_bucket: &'a mut dyn FnMut(&[u8], i32) -> bool,
    key_stats: Option<KeyStatsProbe<'a>>,
}

impl<'a> EntryProbe<'a> {
    /// Keep the entries whose (framed partition, bucket) `keep` accepts.
    pub fn new(keep: &'a mut dyn FnMut(&[u8], i32) -> bool) -> Self {
        EntryProbe {
            partition_bucket: keep,
            key_stats: None,
        }
    }

    /// Of those, keep the entries whose file's `_KEY_STATS` and `_ROW_COUNT` `keep` accepts,
    /// asked before the file's other fields (name, value statistics, ...) are decoded. It sees
    /// ADD and DELETE entries alike: a DELETE carries its ADD's statistics (or none, when
    /// Java drops them), so a verdict that depends only on them never keeps an ADD whose
    /// DELETE it drops.
    pub fn key_stats(mut self, keep: KeyStatsProbe<'a>) -> Self {
        self.key_stats = Some(keep);
        self
    }
}

/// Decodes the entries of a manifest file that `probe` keeps (see [`EntryProbe`]).
pub fn read_manifest_probed(bytes: &[u8], probe: EntryProbe<'_>) -> Result<Vec<ManifestEntry>> {
    let EntryProbe {
        partition_bucket,
        key_stats,
    } = probe;
    let mut entry = |values: &[AvroValue]| match (&values[2], &values[3]) {
        (AvroValue::Bytes(partition), AvroValue::Int(bucket)) => {
            partition_bucket(partition, *bucket)
        }
        // absent or mistyped: decoded in full, so the error names the field
        _ => true,
    };
    let mut file = key_stats.map(|keep| {
        move |values: &[AvroValue]| {
            let (AvroValue::Long(rows), AvroValue::Record(_)) = (&values[2], &values[5]) else {
                return true;
            };
            match record::record_from_avro::<SimpleStats>(values[5].clone(), "manifest") {
                Ok(stats) => keep(&stats, *rows),
                // decoded in full, so the error names the field
                Err(_) => true,
            }
        }
    });
    let nested = file.as_mut().map(|keep| record::NestedProbe {
        slot: ManifestEntry::FILE_SLOT,
        probe: Box::new(Probe {
            slots: DataFileMeta::KEY_STATS_PROBED,
            keep,
            nested: None,
        }),
    });
    let probe = Probe {
        slots: ManifestEntry::PROBED,
        keep: &mut entry,
        nested,
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
