//! Writing the metadata files of one commit attempt: manifests (rolled at
//! `manifest.target-file-size`, Java `ManifestFile.write` / `ManifestAvroWriter`), manifest
//! lists (never rolled, Java `ManifestList.write`) and index manifests (Java
//! `IndexManifestFile.writeWithoutRolling`).
//!
//! Invariants:
//! * every file gets a fresh name `<prefix>-<writer uuid>-<counter>` (Java
//!   `FileStorePathFactory`), so a write never replaces a file some snapshot references;
//! * every name written is recorded in the attempt's [`CreatedFiles`], so a failed attempt
//!   can delete exactly what it wrote and nothing else;
//! * a manifest's [`ManifestFileMeta`] is computed from its entries as Java's writer does:
//!   ADD/DELETE counts, partition statistics (min/max/null counts of every partition column),
//!   max schema id (the latest schema id for an empty manifest), bucket and level ranges, and a
//!   row-id range only when every entry has a first row id.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use tidelake_spec::binary_row::{decode_framed, encode_framed};
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{
    write_index_manifest, write_manifest, write_manifest_list, Codec, FileKind, IndexManifestEntry,
    ManifestEntry, ManifestFileMeta, SimpleStats,
};
use tidelake_spec::types::DataType;

use crate::datum_arrow::compare_datums;
use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::layout::TableLayout;

/// Directory of manifests, manifest lists and index manifests, relative to the table root.
const MANIFEST_DIR: &str = "manifest";
/// Records between two size checks of a rolling manifest (Java
/// `RollingFileWriter.CHECK_ROLLING_RECORD_CNT`).
const ROLLING_CHECK_RECORDS: usize = 1000;

/// Files one commit attempt wrote (names relative to `manifest/`), for clean-up on failure.
#[derive(Debug, Default)]
pub(crate) struct CreatedFiles {
    names: Vec<String>,
}

impl CreatedFiles {
    /// Delete every recorded file, best effort: a file left behind is an unreferenced orphan.
    pub(crate) async fn delete_all(self, io: &FileIO) {
        for name in self.names {
            // An orphan manifest is harmless (nothing references it); ignoring the error keeps
            // the original failure as the one reported.
            let _ = io.delete(&format!("{MANIFEST_DIR}/{name}")).await;
        }
    }
}

/// Writes manifests, manifest lists and index manifests for one committer.
#[derive(Debug)]
pub(crate) struct MetaWriter {
    io: FileIO,
    codec: Codec,
    target_size: u64,
    partition_types: Vec<DataType>,
    uuid: String,
    counter: AtomicU64,
}

impl MetaWriter {
    pub(crate) fn new(
        io: FileIO,
        codec: Codec,
        target_size: u64,
        layout: &TableLayout,
    ) -> MetaWriter {
        MetaWriter {
            uuid: io.env().uuid_string(),
            io,
            codec,
            target_size,
            partition_types: layout.partition_types.clone(),
            counter: AtomicU64::new(0),
        }
    }

    fn new_name(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, AtomicOrdering::Relaxed);
        format!("{prefix}-{}-{n}", self.uuid)
    }

    async fn put(&self, name: &str, bytes: Vec<u8>, created: &mut CreatedFiles) -> Result<i64> {
        let size = i64::try_from(bytes.len())
            .map_err(|_| Error::invalid("manifest larger than 2^63 bytes"))?;
        // Record before writing: a write that fails half-way may still leave a file behind.
        created.names.push(name.to_string());
        self.io
            .write(&format!("{MANIFEST_DIR}/{name}"), bytes)
            .await?;
        Ok(size)
    }

    /// Write `entries` into one or more manifests, in order, rolling to a new file once the
    /// current one reaches the target size (checked every [`ROLLING_CHECK_RECORDS`] records,
    /// as Java does). No entries, no manifest.
    pub(crate) async fn write_manifests(
        &self,
        entries: &[ManifestEntry],
        schema_id: i64,
        created: &mut CreatedFiles,
    ) -> Result<Vec<ManifestFileMeta>> {
        let encode = |chunk: &[ManifestEntry]| {
            write_manifest(chunk, self.codec)
                .map_err(|e| Error::from_spec("manifest being written", e))
        };
        let header = encode(&[])?.len();
        let mut metas = Vec::new();
        let mut start = 0;
        let mut estimate = 0u64;
        let mut pos = 0;
        while pos < entries.len() {
            let end = (pos + ROLLING_CHECK_RECORDS).min(entries.len());
            let chunk_size = encode(&entries[pos..end])?.len().saturating_sub(header);
            estimate = estimate.saturating_add(u64::try_from(chunk_size).unwrap_or(u64::MAX));
            pos = end;
            if estimate >= self.target_size || pos == entries.len() {
                let file = &entries[start..pos];
                let name = self.new_name("manifest");
                let size = self.put(&name, encode(file)?, created).await?;
                metas.push(self.file_meta(name, size, file, schema_id)?);
                start = pos;
                estimate = 0;
            }
        }
        Ok(metas)
    }

    /// Write one manifest list; returns its name and size.
    pub(crate) async fn write_list(
        &self,
        metas: &[ManifestFileMeta],
        created: &mut CreatedFiles,
    ) -> Result<(String, i64)> {
        let bytes = write_manifest_list(metas, self.codec)
            .map_err(|e| Error::from_spec("manifest list being written", e))?;
        let name = self.new_name("manifest-list");
        let size = self.put(&name, bytes, created).await?;
        Ok((name, size))
    }

    /// Write one index manifest holding `entries`; returns its name.
    pub(crate) async fn write_index_manifest(
        &self,
        entries: &[IndexManifestEntry],
        created: &mut CreatedFiles,
    ) -> Result<String> {
        let bytes = write_index_manifest(entries, self.codec)
            .map_err(|e| Error::from_spec("index manifest being written", e))?;
        let name = self.new_name("index-manifest");
        self.put(&name, bytes, created).await?;
        Ok(name)
    }

    /// The manifest-list record of a manifest holding `entries` (Java
    /// `ManifestAvroWriter.FileWriter.result`).
    fn file_meta(
        &self,
        file_name: String,
        file_size: i64,
        entries: &[ManifestEntry],
        latest_schema_id: i64,
    ) -> Result<ManifestFileMeta> {
        let added = entries.iter().filter(|e| e.kind == FileKind::Add).count();
        let count =
            |n: usize| i64::try_from(n).map_err(|_| Error::invalid("too many manifest entries"));
        let schema_id = entries
            .iter()
            .map(|e| e.file.schema_id)
            .max()
            .unwrap_or(latest_schema_id);
        let row_ids: Option<Vec<(i64, i64)>> = entries
            .iter()
            .map(|e| {
                e.file.first_row_id.map(|first| {
                    (
                        first,
                        first.saturating_add(e.file.row_count.saturating_sub(1)),
                    )
                })
            })
            .collect();
        let row_ids = row_ids.filter(|r| !r.is_empty());
        Ok(ManifestFileMeta {
            file_name,
            file_size,
            num_added_files: count(added)?,
            num_deleted_files: count(entries.len() - added)?,
            partition_stats: self.partition_stats(entries)?,
            schema_id,
            min_bucket: entries.iter().map(|e| e.bucket).min(),
            max_bucket: entries.iter().map(|e| e.bucket).max(),
            min_level: entries.iter().map(|e| e.file.level).min(),
            max_level: entries.iter().map(|e| e.file.level).max(),
            min_row_id: row_ids
                .as_ref()
                .and_then(|r| r.iter().map(|(lo, _)| *lo).min()),
            max_row_id: row_ids
                .as_ref()
                .and_then(|r| r.iter().map(|(_, hi)| *hi).max()),
            total_buckets: None,
            extra_files: None,
        })
    }

    /// Min/max/null counts of every partition column over the entries (Java
    /// `SimpleStatsCollector` on the partition type, full mode).
    fn partition_stats(&self, entries: &[ManifestEntry]) -> Result<SimpleStats> {
        let arity = self.partition_types.len();
        let mut mins: Vec<Datum> = vec![Datum::Null; arity];
        let mut maxs: Vec<Datum> = vec![Datum::Null; arity];
        let mut nulls: Vec<i64> = vec![0; arity];
        // Decode each distinct partition once; null counts count entries, not partitions.
        let mut distinct: Vec<(&[u8], i64)> = Vec::new();
        let mut index: HashMap<&[u8], usize> = HashMap::new();
        for e in entries {
            match index.get(e.partition.as_slice()) {
                Some(&i) => distinct[i].1 += 1,
                None => {
                    index.insert(e.partition.as_slice(), distinct.len());
                    distinct.push((e.partition.as_slice(), 1));
                }
            }
        }
        for (bytes, weight) in distinct {
            let values = decode_framed(bytes, &self.partition_types).map_err(|err| {
                Error::invalid(format!(
                    "a partition does not match the table's partition columns: {err}"
                ))
            })?;
            for (i, v) in values.iter().enumerate() {
                if v.is_null() {
                    nulls[i] += weight;
                    continue;
                }
                if mins[i].is_null() || compare_datums(v, &mins[i]) == Some(Ordering::Less) {
                    mins[i] = v.clone();
                }
                if maxs[i].is_null() || compare_datums(v, &maxs[i]) == Some(Ordering::Greater) {
                    maxs[i] = v.clone();
                }
            }
        }
        let stat_types: Vec<DataType> = self
            .partition_types
            .iter()
            .map(|t| t.with_nullable(true))
            .collect();
        let encode = |values: &[Datum]| {
            encode_framed(values, &stat_types)
                .map_err(|e| Error::from_spec("partition statistics", e))
        };
        Ok(SimpleStats {
            min_values: encode(&mins)?,
            max_values: encode(&maxs)?,
            null_counts: Some(nulls.into_iter().map(Some).collect()),
        })
    }
}
