//! Reading a table's manifest lists, manifests and index manifests (`manifest/`), and the
//! entry replay with this crate's errors. The one place core code decodes them.
//!
//! Invariants: manifests are fetched at most [`MANIFEST_PARALLELISM`] at a time and returned in
//! the order asked for; a decode failure is [`Error::Corrupt`] naming the file. A manifest is
//! kept in the read cache as its file's bytes, not decoded: each read decodes the entries its
//! own filter keeps ([`read_manifest_chunks_where`]), as Java's manifest cache keeps serialized
//! rows and filters them on read. Tables whose `manifest.format` is not Avro are refused
//! ([`check_format`]) before any file is read.

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::manifest::{
    merge_entries_from, merge_index_entries, read_index_manifest, read_manifest_list,
    read_manifest_probed, EntryProbe, IndexManifestEntry, ManifestEntry, ManifestFileMeta,
    SimpleStats,
};
use tidelake_spec::snapshot::Snapshot;

use crate::error::{Error, Result};
use crate::table::Table;

/// Where manifest lists, manifests and index manifests live, relative to the table root.
pub(crate) const MANIFEST_DIR: &str = "manifest";

/// How many manifests are fetched and decoded at once.
const MANIFEST_PARALLELISM: usize = 16;

/// [`Error::Unsupported`] when `table`'s manifests are not Avro files (`manifest.format`).
fn check_format(table: &Table) -> Result<()> {
    table
        .schema()
        .options()
        .check_manifest_format()
        .map_err(|e| Error::from_spec(MANIFEST_DIR, e))
}

/// Read manifest list `name` of `table` (decoded once per read cache, see [`read_cached`]).
pub async fn read_list(table: &Table, name: &str) -> Result<Vec<ManifestFileMeta>> {
    read_cached(table, name, read_manifest_list).await
}

/// Read manifest file `name` of `table` (its bytes kept in the read cache, see
/// [`manifest_bytes`]).
pub async fn read_entries(table: &Table, name: &str) -> Result<Vec<ManifestEntry>> {
    let bytes = manifest_bytes(table, name).await?;
    let mut all = |_: &[u8], _| true;
    decode_entries(
        table,
        name,
        &bytes,
        &mut EntryFilters {
            partition_bucket: &mut all,
            key_stats: None,
        },
    )
}

/// What [`read_manifest_chunks_where`] asks of each entry before decoding its file: whether
/// its (framed partition, bucket) is kept.
pub(crate) type EntryFilter<'a> = dyn FnMut(&[u8], i32) -> bool + Send + 'a;

/// What [`read_manifest_chunks_where`] asks of an entry's file before decoding the rest of its
/// metadata: whether its key statistics (`_KEY_STATS`, with its row count) may match.
pub(crate) type KeyStatsFilter<'a> = dyn FnMut(&SimpleStats, i64) -> bool + Send + 'a;

/// The tests [`read_manifest_chunks_where`] asks of each entry (spec [`EntryProbe`]).
pub(crate) struct EntryFilters<'f, 'a, 'k> {
    pub(crate) partition_bucket: &'f mut EntryFilter<'a>,
    pub(crate) key_stats: Option<&'f mut KeyStatsFilter<'k>>,
}

/// The bytes of manifest `name`, through the table's read cache if its I/O has one (manifests
/// have unique names and are never rewritten, so cached bytes never go stale).
async fn manifest_bytes(table: &Table, name: &str) -> Result<Arc<Bytes>> {
    check_format(table)?;
    let rel = format!("{MANIFEST_DIR}/{name}");
    let cache = table.io().read_cache();
    if let Some(bytes) = cache.and_then(|c| c.get::<Bytes>(&rel)) {
        return Ok(bytes);
    }
    let bytes = Arc::new(table.io().read(&rel).await?);
    if let Some(c) = cache {
        c.insert(&rel, bytes.clone(), bytes.len());
    }
    Ok(bytes)
}

/// The entries of manifest `name` (file bytes `bytes`) that `keep` accepts.
fn decode_entries(
    table: &Table,
    name: &str,
    bytes: &[u8],
    keep: &mut EntryFilters<'_, '_, '_>,
) -> Result<Vec<ManifestEntry>> {
    let mut probe = EntryProbe::new(&mut *keep.partition_bucket);
    if let Some(key_stats) = keep.key_stats.as_deref_mut() {
        probe = probe.key_stats(key_stats);
    }
    read_manifest_probed(bytes, probe)
        .map_err(|e| Error::from_spec(table.io().display(&format!("{MANIFEST_DIR}/{name}")), e))
}

/// Read index manifest `name` of `table` (every entry, unreplayed; decoded once per read
/// cache, see [`read_cached`]).
pub(crate) async fn read_index(table: &Table, name: &str) -> Result<Vec<IndexManifestEntry>> {
    read_cached(table, name, read_index_manifest).await
}

/// Approximate heap bytes of a decoded manifest list or index manifest per byte of its file.
const DECODED_MANIFEST_FACTOR: usize = 4;

/// Read and `decode` file `name` of the manifest directory, through the table's read cache if
/// its I/O has one: manifest lists and index manifests have unique names and are never
/// rewritten, so a decoded one never goes stale.
async fn read_cached<T: Clone + Send + Sync + 'static>(
    table: &Table,
    name: &str,
    decode: fn(&[u8]) -> tidelake_spec::Result<T>,
) -> Result<T> {
    check_format(table)?;
    let rel = format!("{MANIFEST_DIR}/{name}");
    let cache = table.io().read_cache();
    if let Some(decoded) = cache.and_then(|c| c.get::<T>(&rel)) {
        return Ok((*decoded).clone());
    }
    let bytes = table.io().read(&rel).await?;
    let decoded = decode(&bytes).map_err(|e| Error::from_spec(table.io().display(&rel), e))?;
    if let Some(c) = cache {
        // decoded entries take a few times their compressed Avro bytes
        let weight = bytes.len() * DECODED_MANIFEST_FACTOR;
        c.insert(&rel, Arc::new(decoded.clone()), weight);
    }
    Ok(decoded)
}

/// The manifests holding a snapshot's data files: its base list, then its delta list (read
/// concurrently).
pub(crate) async fn data_manifests(
    table: &Table,
    snapshot: &Snapshot,
) -> Result<Vec<ManifestFileMeta>> {
    let (base, delta) = futures::try_join!(
        read_list(table, &snapshot.base_manifest_list),
        read_list(table, &snapshot.delta_manifest_list)
    )?;
    Ok(base.into_iter().chain(delta).collect())
}

/// Decode many manifests concurrently, keeping their order.
pub async fn read_manifests(
    table: &Table,
    metas: &[ManifestFileMeta],
) -> Result<Vec<ManifestEntry>> {
    Ok(read_manifest_chunks(table, metas)
        .await?
        .into_iter()
        .flatten()
        .collect())
}

/// The entries of each of `metas`, fetched concurrently, in order.
pub(crate) async fn read_manifest_chunks(
    table: &Table,
    metas: &[ManifestFileMeta],
) -> Result<Vec<Vec<ManifestEntry>>> {
    let mut all = |_: &[u8], _| true;
    let mut keep = EntryFilters {
        partition_bucket: &mut all,
        key_stats: None,
    };
    read_manifest_chunks_where(table, metas, &mut keep).await
}

/// The entries of each of `metas` that `keep` accepts by partition and bucket (and key
/// statistics), fetched concurrently, in order: a rejected entry's file metadata is skipped,
/// not decoded ([`read_manifest_probed`]), so pruned entries cost little more than their bytes.
pub(crate) async fn read_manifest_chunks_where(
    table: &Table,
    metas: &[ManifestFileMeta],
    keep: &mut EntryFilters<'_, '_, '_>,
) -> Result<Vec<Vec<ManifestEntry>>> {
    let names: Vec<String> = metas.iter().map(|m| m.file_name.clone()).collect();
    let fetches = names.into_iter().map(|name| {
        let table = table.clone();
        async move {
            let bytes = manifest_bytes(&table, &name).await?;
            Ok::<_, Error>((name, bytes))
        }
    });
    let mut fetched = stream::iter(fetches).buffered(MANIFEST_PARALLELISM);
    let mut chunks = Vec::with_capacity(metas.len());
    while let Some((name, bytes)) = fetched.try_next().await? {
        chunks.push(decode_entries(table, &name, &bytes, keep)?);
    }
    Ok(chunks)
}

/// Replay manifest entries in order ([`tidelake_spec::manifest::merge_entries`]): DELETEs
/// cancel their ADDs, unmatched DELETEs stay; a file added twice is [`Error::Corrupt`].
pub fn merge_entries(
    entries: impl IntoIterator<Item = ManifestEntry>,
) -> Result<Vec<ManifestEntry>> {
    merge_sourced(entries.into_iter().map(|e| (None, e)))
}

/// [`merge_entries`] over entries tagged with the manifest they come from (named by the
/// "added twice" error).
pub(crate) fn merge_sourced<'a>(
    entries: impl IntoIterator<Item = (Option<&'a str>, ManifestEntry)>,
) -> Result<Vec<ManifestEntry>> {
    merge_entries_from(entries).map_err(|e| match e {
        tidelake_spec::Error::Corrupt { what, reason } => Error::corrupt(what, reason),
        other => Error::from_spec(MANIFEST_DIR, other),
    })
}

/// Entries tagged with the name of the manifest they were read from.
pub(crate) fn sourced(
    metas: &[ManifestFileMeta],
    chunks: Vec<Vec<ManifestEntry>>,
) -> impl Iterator<Item = (Option<&str>, ManifestEntry)> {
    metas.iter().zip(chunks).flat_map(|(m, chunk)| {
        chunk
            .into_iter()
            .map(move |e| (Some(m.file_name.as_str()), e))
    })
}

/// The live index files of a snapshot (its index manifest replayed,
/// [`tidelake_spec::manifest::merge_index_entries`]).
pub async fn live_index_entries(table: &Table, snap: &Snapshot) -> Result<Vec<IndexManifestEntry>> {
    let Some(name) = &snap.index_manifest else {
        return Ok(Vec::new());
    };
    Ok(merge_index_entries(read_index(table, name).await?))
}
