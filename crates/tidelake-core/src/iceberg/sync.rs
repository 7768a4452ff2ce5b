//! Writing the Iceberg metadata of one Paimon snapshot (Java `IcebergCommitCallback`):
//! afresh from the snapshot's files, or from the previous version plus the snapshot's delta.
//!
//! Invariants:
//! * version N is written only if absent (put-if-absent), after every manifest and manifest
//!   list it references; `version-hint.text` then names N, or a newer version that appeared
//!   meanwhile (a slower committer never moves the hint back);
//! * an incremental version reuses every manifest the delta does not touch: a commit reads
//!   only the manifests of partitions it removed files from, and appends one manifest for
//!   what it added; small manifests are merged once `metadata.iceberg.compaction.*` say so;
//! * the Iceberg table holds an append table's live files, and a primary-key table's files
//!   that need no merge: Java's rule, files of a raw-convertible split when built afresh and
//!   files at the top LSM level when built incrementally (above level 0 when deletion vectors
//!   are exported);
//! * with deletion vectors exported (format version 3), every version lists the snapshot's
//!   deletion vectors in manifests of deletes: one Puffin file per Paimon index file, named
//!   after it and reused while the index file lives, its blobs Iceberg `deletion-vector-v1`
//!   blobs referencing the data files; the manifests are rebuilt when the snapshot's index
//!   manifest differs from the previous snapshot's and reused otherwise (Java
//!   `createDvManifestFileMetas`, except that Java points Iceberg at the Paimon index file
//!   itself, which Iceberg readers that parse whole Puffin files cannot read);
//! * files are deleted only when no retained version references them: manifests of expired
//!   Iceberg snapshots that the next retained snapshot does not list, and metadata versions
//!   older than `metadata.iceberg.previous-versions-max` allows.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Map};
use tidelake_spec::binary_row::{decode_framed, split_framed};
use tidelake_spec::datum::Datum;
use tidelake_spec::iceberg::{
    check_partition_types, compare_bounds, last_column_id, last_partition_id, partition_spec_json,
    schema_json, to_bound,
};
use tidelake_spec::manifest::{
    DeletionVectorMeta, FileKind, IndexManifestEntry, ManifestEntry as PaimonEntry,
    DELETION_VECTORS_INDEX,
};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::snapshot::Snapshot;
use tidelake_spec::types::DataField;

use super::current::data_file_location;
use super::manifest::{
    self, file_name, DataFile, ManifestEntry, ManifestFile, Status, CONTENT_DATA, CONTENT_DELETES,
};
use super::metadata::{
    metadata_file, metadata_version, IcebergRef, IcebergSnapshot, Summary, TableMetadata,
    VERSION_HINT,
};
use super::options::IcebergConfig;
use super::puffin::{self, Blob};
use crate::catalog::hive::iceberg::{IcebergHiveTable, IcebergVersion};
use crate::error::{Error, ErrorKind, Result};
use crate::iceberg::rest::IcebergRestTable;
use crate::io::FileIO;
use crate::layout::TableLayout;
use crate::read::deletion_vector::read_deletion_vector;
use crate::scan::{plan_scan, ScanRequest, SnapshotSelector};
use crate::state::{live_index_entries, read_list, read_manifests, IndexPaths, LiveFiles, Pruning};
use crate::table::Table;

const APPEND: &str = "append";
/// Files a delta adds, by location: (position in the delta, entry).
type Added = HashMap<String, (usize, PaimonEntry)>;
const OVERWRITE: &str = "overwrite";

fn spec_err(e: tidelake_spec::Error) -> Error {
    Error::from_spec("Iceberg metadata", e)
}

/// Everything one version's writing needs.
pub(super) struct Sync<'a> {
    table: &'a Table,
    cfg: &'a IcebergConfig,
    io: FileIO,
    /// The metadata directory as a location (manifest paths are absolute).
    location: String,
    layout: TableLayout,
    partition: Vec<DataField>,
    /// Names this writer's files (Java `IcebergPathFactory`'s uuid).
    uuid: String,
    written: usize,
    levels: Levels,
    /// `hive-catalog` storage: the metastore table each version is registered as.
    hive: Option<IcebergHiveTable>,
    /// `rest-catalog` storage: the REST catalog's table each version is committed to.
    rest: Option<IcebergRestTable>,
}

/// Which files of the table the Iceberg table holds (Java `shouldAddFileToIceberg`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Levels {
    /// An append table: every file.
    All,
    /// A primary-key table: the files at this (the top) level.
    Top(i32),
    /// A primary-key table whose deletion vectors are exported: every file above level 0.
    AboveZero,
}

impl<'a> Sync<'a> {
    pub(super) fn new(table: &'a Table, cfg: &'a IcebergConfig) -> Result<Sync<'a>> {
        let schema = table.schema();
        let layout = TableLayout::new(schema)?;
        let partition = layout.partition_fields.clone();
        check_partition_types(&partition).map_err(spec_err)?;
        let spec = |e| Error::from_spec("table options", e);
        let levels = match (schema.primary_keys.is_empty(), cfg.deletion_vectors) {
            (true, _) => Levels::All,
            (false, true) => Levels::AboveZero,
            (false, false) => Levels::Top(schema.options().num_levels().map_err(spec)? - 1),
        };
        Ok(Sync {
            table,
            cfg,
            io: cfg.metadata_io(table)?,
            location: cfg.metadata_location(table)?,
            layout,
            partition,
            uuid: table.env().uuid().to_string(),
            written: 0,
            levels,
            hive: cfg.hive_table(table)?,
            rest: cfg.rest_table(table)?,
        })
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.location)
    }

    /// Writes version `snap.id` (Java `createMetadata`).
    pub(super) async fn snapshot(&mut self, snap: &Snapshot) -> Result<()> {
        let id = snap.id;
        if id == 1 {
            // metadata left by a dropped table of the same name (catalog storage)
            self.io.delete_dir("").await?;
        }
        if self.io.exists(&metadata_file(id)).await? {
            return Ok(());
        }
        let base = match id > 1 {
            true => self.io.read_opt(&metadata_file(id - 1)).await?,
            false => None,
        };
        let base = match base {
            Some(bytes) => {
                let what = self.io.display(&metadata_file(id - 1));
                Some(TableMetadata::parse(&bytes, &what)?)
            }
            None => None,
        };
        match base {
            Some(base)
                if base.format_version == self.cfg.format_version
                    && base.current_snapshot().is_some() =>
            {
                match self.with_base(snap, base).await {
                    // a concurrent committer's cleanup removed part of the base: start afresh
                    Err(e) if e.kind() == ErrorKind::NotFound => self.afresh(snap).await,
                    done => done,
                }
            }
            _ => self.afresh(snap).await,
        }
    }

    // ---- data files ------------------------------------------------------------------------

    /// Whether an added file belongs in the Iceberg table (Java `shouldAddFileToIceberg`).
    fn visible(&self, e: &PaimonEntry) -> bool {
        match self.levels {
            Levels::All => true,
            Levels::Top(top) => e.file.level == top,
            Levels::AboveZero => e.file.level > 0,
        }
    }

    /// The Iceberg data file of a Paimon one (Java `IcebergDataFileMeta.create`): partition
    /// values, null counts and bounds of the columns its statistics cover.
    async fn data_file(&self, e: &PaimonEntry, location: String) -> Result<DataFile> {
        let f = &e.file;
        let schema = self.table.schema_by_id(f.schema_id).await?;
        let (null_value_counts, lower_bounds, upper_bounds) = stats(&schema, e)?;
        let format = f.file_name.rsplit_once('.').map_or("", |(_, ext)| ext);
        Ok(DataFile {
            content: CONTENT_DATA,
            file_path: location,
            file_format: format.to_string(),
            partition: self.layout.decode_partition(&e.partition)?,
            record_count: f.row_count,
            file_size_in_bytes: f.file_size,
            null_value_counts,
            lower_bounds,
            upper_bounds,
            referenced_data_file: None,
            content_offset: None,
            content_size_in_bytes: None,
        })
    }

    // ---- deletion vectors ------------------------------------------------------------------

    /// Java `createDvManifestFileMetas`: the deletion vectors of `snap` as manifests of
    /// deletes.
    async fn dv_manifests(&mut self, snap: &Snapshot) -> Result<Vec<ManifestFile>> {
        let id = snap.id;
        let mut entries = Vec::new();
        for e in live_index_entries(self.table, snap).await? {
            let Some(ranges) = e.index_file.dv_ranges.as_deref() else {
                continue;
            };
            if e.index_file.index_type != DELETION_VECTORS_INDEX || ranges.is_empty() {
                continue;
            }
            let (location, size, blobs) = self.puffin(&e, ranges).await?;
            let partition = self.layout.decode_partition(&e.partition)?;
            for b in blobs {
                entries.push(ManifestEntry {
                    status: Status::Added,
                    snapshot_id: id,
                    sequence_number: id,
                    file_sequence_number: id,
                    data_file: DataFile {
                        content: CONTENT_DELETES,
                        file_path: location.clone(),
                        file_format: "puffin".into(),
                        partition: partition.clone(),
                        record_count: b.cardinality,
                        file_size_in_bytes: size,
                        null_value_counts: Vec::new(),
                        lower_bounds: Vec::new(),
                        upper_bounds: Vec::new(),
                        referenced_data_file: Some(b.referenced_data_file),
                        content_offset: Some(b.offset),
                        content_size_in_bytes: Some(b.length),
                    },
                });
            }
        }
        self.write_manifests(entries, id).await
    }

    /// The Puffin file of Paimon deletion-vector index file `e` (holding `ranges`): its
    /// location, size and blobs, written unless an earlier version wrote it.
    async fn puffin(
        &self,
        e: &IndexManifestEntry,
        ranges: &[DeletionVectorMeta],
    ) -> Result<(String, i64, Vec<Blob>)> {
        let name = format!("{}.puffin", e.index_file.file_name);
        let size = |b: &[u8]| i64::try_from(b.len()).unwrap_or(i64::MAX);
        if let Some(bytes) = self.io.read_opt(&name).await? {
            let blobs = puffin::read_blobs(&bytes, &self.io.display(&name))?;
            return Ok((self.path(&name), size(&bytes), blobs));
        }
        if let Some(p) = &e.index_file.external_path {
            return Err(Error::Unsupported(format!(
                "Iceberg deletion vectors of an index file at an external path ({p})"
            )));
        }
        let index = self
            .table
            .io()
            .read(&IndexPaths::new(self.table.schema())?.entry_path(e)?)
            .await?;
        let values = self.layout.decode_partition(&e.partition)?;
        let bucket = self.layout.bucket_path(&values, e.bucket)?;
        let root = self.table.location().trim_end_matches('/');
        let mut vectors = Vec::with_capacity(ranges.len());
        for r in ranges {
            let range = |v: i32| u64::try_from(v).unwrap_or(u64::MAX);
            let dv = read_deletion_vector(&index, range(r.offset), range(r.length))?;
            let cardinality = i64::try_from(dv.cardinality()).unwrap_or(i64::MAX);
            let data_file = format!("{root}/{bucket}/{}", r.data_file_name);
            vectors.push((data_file, cardinality, dv.to_iceberg_blob()));
        }
        let (bytes, blobs) = puffin::write(vectors);
        let length = size(&bytes);
        self.io.write(&name, bytes).await?;
        Ok((self.path(&name), length, blobs))
    }

    /// Whether `snap` has the deletion vectors of the snapshot before it (same index
    /// manifest), so the previous version's manifests of deletes still describe them.
    async fn same_deletion_vectors(&self, snap: &Snapshot) -> Result<bool> {
        match self.table.snapshot_manager().snapshot(snap.id - 1).await {
            Ok(prev) => Ok(prev.index_manifest == snap.index_manifest),
            Err(e) if e.is_missing() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The Puffin files (names) the manifests of deletes among `manifests` list.
    async fn puffins(&self, manifests: &[ManifestFile]) -> Result<HashSet<String>> {
        let mut out = HashSet::new();
        for m in manifests.iter().filter(|m| m.content == CONTENT_DELETES) {
            let entries = match self.read_manifest(m).await {
                Ok(entries) => entries,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            out.extend(
                entries
                    .iter()
                    .map(|e| file_name(&e.data_file.file_path).to_string()),
            );
        }
        Ok(out)
    }

    async fn added(
        &self,
        id: i64,
        files: Vec<(String, PaimonEntry)>,
    ) -> Result<Vec<ManifestEntry>> {
        let mut out = Vec::with_capacity(files.len());
        for (location, e) in files {
            out.push(ManifestEntry {
                status: Status::Added,
                snapshot_id: id,
                sequence_number: id,
                file_sequence_number: id,
                data_file: self.data_file(&e, location).await?,
            });
        }
        Ok(out)
    }

    // ---- manifests -------------------------------------------------------------------------

    /// Writes `entries` as manifests of at most about the manifest target size each (Java
    /// `IcebergManifestFile.rollingWrite`).
    async fn write_manifests(
        &mut self,
        entries: Vec<ManifestEntry>,
        id: i64,
    ) -> Result<Vec<ManifestFile>> {
        let target = usize::try_from(self.cfg.manifest_target_size).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let mut chunk = Vec::new();
        let mut size = 0;
        for e in entries {
            size += estimated_size(&e);
            chunk.push(e);
            if size >= target {
                out.push(self.write_manifest(std::mem::take(&mut chunk), id).await?);
                size = 0;
            }
        }
        if !chunk.is_empty() {
            out.push(self.write_manifest(chunk, id).await?);
        }
        Ok(out)
    }

    async fn write_manifest(
        &mut self,
        entries: Vec<ManifestEntry>,
        id: i64,
    ) -> Result<ManifestFile> {
        self.written += 1;
        let name = format!("{}-m{}.avro", self.uuid, self.written);
        let bytes = manifest::write_manifest(&entries, &self.partition, self.cfg.codec)?;
        let length = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        self.io.write(&name, bytes).await?;
        let count = |s: Status| entries.iter().filter(move |e| e.status == s);
        let files = |s| i32::try_from(count(s).count()).unwrap_or(i32::MAX);
        let rows = |s| count(s).map(|e| e.data_file.record_count).sum::<i64>();
        Ok(ManifestFile {
            manifest_path: self.path(&name),
            manifest_length: length,
            content: match entries.iter().any(|e| e.data_file.content != CONTENT_DATA) {
                true => CONTENT_DELETES,
                false => CONTENT_DATA,
            },
            sequence_number: id,
            min_sequence_number: entries
                .iter()
                .map(|e| e.sequence_number)
                .min()
                .unwrap_or(-1),
            added_snapshot_id: id,
            added_files_count: files(Status::Added),
            existing_files_count: files(Status::Existing),
            deleted_files_count: files(Status::Deleted),
            added_rows_count: rows(Status::Added),
            existing_rows_count: rows(Status::Existing),
            deleted_rows_count: rows(Status::Deleted),
            partitions: manifest::summarize(&entries, &self.partition),
        })
    }

    async fn read_manifest(&self, m: &ManifestFile) -> Result<Vec<ManifestEntry>> {
        let name = m.file_name();
        let bytes = self.io.read(name).await?;
        manifest::read_manifest(&bytes, &self.partition, &self.io.display(name))
    }

    async fn read_list(&self, path: &str) -> Result<Vec<ManifestFile>> {
        let name = file_name(path);
        let bytes = self.io.read(name).await?;
        manifest::read_manifest_list(&bytes, &self.io.display(name))
    }

    async fn write_list(&mut self, files: &[ManifestFile], id: i64) -> Result<String> {
        let name = format!("snap-{id}-{}.avro", self.uuid);
        let bytes =
            manifest::write_manifest_list(files, self.cfg.legacy_manifest_list, self.cfg.codec)?;
        self.io.write(&name, bytes).await?;
        Ok(self.path(&name))
    }

    // ---- versions --------------------------------------------------------------------------

    /// Java `createMetadataWithoutBase`: every visible file of the snapshot, in new manifests.
    async fn afresh(&mut self, snap: &Snapshot) -> Result<()> {
        let id = snap.id;
        let live = LiveFiles::read(self.table, snap, Pruning::all()).await?;
        let keep: Option<HashSet<(Vec<u8>, i32, String)>> = match self.levels {
            Levels::All => None,
            Levels::Top(_) | Levels::AboveZero => {
                let request = ScanRequest {
                    snapshot: SnapshotSelector::Id(id),
                    ..ScanRequest::default()
                };
                let plan = plan_scan(self.table, &request).await?;
                let raw = plan.splits.into_iter().filter(|s| s.raw_convertible);
                Some(
                    raw.flat_map(|s| {
                        let (partition, bucket) = (s.partition, s.bucket);
                        s.files
                            .into_iter()
                            .map(move |f| (partition.clone(), bucket, f.file_name))
                    })
                    .collect(),
                )
            }
        };
        let mut files = Vec::new();
        for e in live.into_entries() {
            let key = (e.partition.clone(), e.bucket, e.file.file_name.clone());
            if keep.as_ref().is_none_or(|k| k.contains(&key)) {
                files.push((data_file_location(self.table, &self.layout, &e)?, e));
            }
        }
        let entries = self.added(id, files).await?;
        let mut manifests = self.write_manifests(entries, id).await?;
        if self.cfg.deletion_vectors {
            manifests.extend(self.dv_manifests(snap).await?);
        }
        let list = self.write_list(&manifests, id).await?;
        let schemas = self.table.schemas().await?;
        let latest = self.table.schema();
        let now = self.table.env().now_millis();
        let metadata = TableMetadata {
            format_version: self.cfg.format_version,
            table_uuid: self.table.env().uuid().to_string(),
            location: self.table.location().to_string(),
            last_sequence_number: id,
            last_updated_ms: now,
            last_column_id: last_column_id(latest),
            schemas: schemas
                .iter()
                .filter(|s| s.id <= latest.id)
                .map(|s| schema_json(s).map_err(spec_err))
                .collect::<Result<_>>()?,
            current_schema_id: latest.id,
            partition_specs: vec![partition_spec_json(&self.partition)],
            default_spec_id: 0,
            last_partition_id: last_partition_id(self.partition.len()),
            sort_orders: vec![json!({"order-id": 0, "fields": []})],
            default_sort_order_id: 0,
            snapshots: vec![IcebergSnapshot {
                sequence_number: id,
                snapshot_id: id,
                timestamp_ms: now,
                summary: Summary::of(APPEND),
                manifest_list: list,
                schema_id: latest.id,
            }],
            current_snapshot_id: id,
            properties: Map::new(),
            refs: Default::default(),
        };
        if self.publish(id, &metadata).await? {
            let in_use = self.puffins(&manifests).await?;
            self.expire_all_before(id, &in_use).await?;
            self.register(id, None).await?;
            if let Some(rest) = &self.rest {
                rest.commit(&metadata).await?;
            }
        }
        Ok(())
    }

    /// Java `createMetadataWithBase`: `base` (version `snap.id - 1`) plus the snapshot's delta.
    async fn with_base(&mut self, snap: &Snapshot, base: TableMetadata) -> Result<()> {
        let id = snap.id;
        let base_list = match base.current_snapshot() {
            Some(s) => self.read_list(&s.manifest_list).await?,
            None => Vec::new(),
        };
        let (base_data, base_deletes): (Vec<ManifestFile>, Vec<ManifestFile>) = base_list
            .into_iter()
            .partition(|m| m.content == CONTENT_DATA);

        let delta = read_manifests(
            self.table,
            &read_list(self.table, &snap.delta_manifest_list).await?,
        )
        .await?;
        let mut removed: HashMap<String, Vec<u8>> = HashMap::new();
        // by location: (delta order, entry)
        let mut added: Added = HashMap::new();
        let mut add_only = true;
        for (order, e) in delta.into_iter().enumerate() {
            let location = data_file_location(self.table, &self.layout, &e)?;
            match e.kind {
                FileKind::Add if self.visible(&e) => {
                    removed.remove(&location);
                    added.insert(location, (order, e));
                }
                FileKind::Add => {}
                FileKind::Delete => {
                    add_only = false;
                    added.remove(&location);
                    removed.insert(location, e.partition);
                }
            }
        }

        let (mut data, operation) = match add_only {
            true => (base_data, APPEND),
            false => {
                self.remove_files(base_data, &removed, &mut added, id)
                    .await?
            }
        };
        let mut added: Vec<(String, (usize, PaimonEntry))> = added.into_iter().collect();
        added.sort_by_key(|(_, (order, _))| *order);
        let added = added.into_iter().map(|(l, (_, e))| (l, e)).collect();
        let new_entries = self.added(id, added).await?;
        data.extend(self.write_manifests(new_entries, id).await?);
        let mut manifests = self.compact(data, id).await?;
        if self.cfg.deletion_vectors {
            if !base_deletes.is_empty() && self.same_deletion_vectors(snap).await? {
                manifests.extend(base_deletes);
            } else {
                manifests.extend(self.dv_manifests(snap).await?);
            }
        }
        let list = self.write_list(&manifests, id).await?;

        let latest = self.table.schema();
        let mut schemas = base.schemas.clone();
        if latest.id > base.current_schema_id {
            for s in self.table.schemas().await? {
                if s.id > base.current_schema_id && s.id <= latest.id {
                    schemas.push(schema_json(&s).map_err(spec_err)?);
                }
            }
        }
        let current_schema_id = latest.id.max(base.current_schema_id);
        let now = self.table.env().now_millis();
        let mut snapshots = base.snapshots.clone();
        snapshots.push(IcebergSnapshot {
            sequence_number: id,
            snapshot_id: id,
            timestamp_ms: now,
            summary: Summary::of(operation),
            manifest_list: list,
            schema_id: current_schema_id,
        });
        let retention = Retention::of(latest, now)?;
        let first_kept = snapshots
            .iter()
            .position(|s| s.snapshot_id == id || !retention.expires(s, id))
            .unwrap_or(snapshots.len() - 1);
        let expired: Vec<IcebergSnapshot> = snapshots.drain(..first_kept).collect();
        let kept: HashSet<i64> = snapshots.iter().map(|s| s.snapshot_id).collect();
        let refs = self
            .table
            .snapshot_manager()
            .tags()
            .await?
            .into_iter()
            .filter(|(_, tag)| kept.contains(&tag.snapshot.id))
            .map(|(name, tag)| (name, IcebergRef::tag(tag.snapshot.id)))
            .collect();
        let metadata = TableMetadata {
            last_sequence_number: id,
            last_updated_ms: now,
            last_column_id: last_column_id(latest).max(base.last_column_id),
            schemas,
            current_schema_id,
            snapshots,
            current_snapshot_id: id,
            refs,
            ..base
        };
        if !self.publish(id, &metadata).await? {
            return Ok(());
        }
        self.delete_old_versions(id).await?;
        // a manifest no longer listed by the next snapshot is listed by no later one
        let next_lists = expired
            .iter()
            .skip(1)
            .chain(metadata.snapshots.first())
            .map(|s| s.manifest_list.clone());
        for (old, next) in expired.iter().zip(next_lists.collect::<Vec<_>>()) {
            self.expire_list(&old.manifest_list, &next).await?;
        }
        self.register(id, Some(id - 1)).await?;
        match &self.rest {
            Some(rest) => rest.commit(&metadata).await,
            None => Ok(()),
        }
    }

    /// Java `createWithDeleteManifestFileMetas`: rewrites the base manifests that list a file
    /// the delta removed (reading only those whose partitions the delta touched), and drops
    /// from `added` what the base already lists (a file moved between levels).
    async fn remove_files(
        &mut self,
        base: Vec<ManifestFile>,
        removed: &HashMap<String, Vec<u8>>,
        added: &mut Added,
        id: i64,
    ) -> Result<(Vec<ManifestFile>, &'static str)> {
        let mut touched: Vec<Vec<Option<Vec<u8>>>> = Vec::new();
        let mut seen = HashSet::new();
        for partition in removed
            .values()
            .chain(added.values().map(|(_, e)| &e.partition))
        {
            if seen.insert(partition.clone()) {
                let values = self.layout.decode_partition(partition)?;
                touched.push(
                    self.partition
                        .iter()
                        .zip(&values)
                        .map(|(f, v)| to_bound(&f.data_type, v))
                        .collect(),
                );
            }
        }
        let mut operation = APPEND;
        let mut out = Vec::with_capacity(base.len());
        for m in base {
            if !touched.iter().any(|p| self.may_contain(&m, p)) {
                out.push(m);
                continue;
            }
            let entries = self.read_manifest(&m).await?;
            let mut reuse = true;
            for e in entries.iter().filter(|e| e.is_live()) {
                let path = &e.data_file.file_path;
                if added.remove(path).is_none() && removed.contains_key(path) {
                    reuse = false;
                }
            }
            if reuse {
                out.push(m);
                continue;
            }
            operation = OVERWRITE;
            let rewritten = entries
                .into_iter()
                .filter(|e| e.is_live())
                .map(|mut e| {
                    e.status = match removed.contains_key(&e.data_file.file_path) {
                        true => Status::Deleted,
                        false => Status::Existing,
                    };
                    e
                })
                .collect();
            out.extend(self.write_manifests(rewritten, id).await?);
        }
        Ok((out, operation))
    }

    /// Whether manifest `m`'s partition summaries admit partition `values` (bounds; `None`:
    /// null).
    fn may_contain(&self, m: &ManifestFile, values: &[Option<Vec<u8>>]) -> bool {
        if m.partitions.len() != values.len() {
            return true;
        }
        self.partition
            .iter()
            .zip(&m.partitions)
            .zip(values)
            .all(|((f, s), v)| {
                let Some(v) = v else { return s.contains_null };
                let (Some(lo), Some(hi)) = (&s.lower_bound, &s.upper_bound) else {
                    return false;
                };
                let ge = compare_bounds(&f.data_type, v, lo).is_none_or(|o| o.is_ge());
                let le = compare_bounds(&f.data_type, v, hi).is_none_or(|o| o.is_le());
                ge && le
            })
    }

    /// Java `compactMetadataIfNeeded`: merges the small manifests once there are enough of
    /// them.
    async fn compact(
        &mut self,
        manifests: Vec<ManifestFile>,
        id: i64,
    ) -> Result<Vec<ManifestFile>> {
        let target = i64::try_from(self.cfg.manifest_target_size).unwrap_or(i64::MAX);
        let (small, large): (Vec<_>, Vec<_>) = manifests
            .iter()
            .cloned()
            .partition(|m| m.manifest_length < target * 2 / 3);
        let total: i64 = small.iter().map(|m| m.manifest_length).sum();
        if small.len() < self.cfg.compact_min_file_num
            || (small.len() < self.cfg.compact_max_file_num && total < target)
        {
            return Ok(manifests);
        }
        let mut entries = Vec::new();
        for m in &small {
            for mut e in self.read_manifest(m).await? {
                if e.file_sequence_number != id && e.status != Status::Existing {
                    match e.status {
                        Status::Deleted => continue,
                        _ => e.status = Status::Existing,
                    }
                }
                entries.push(e);
            }
        }
        let mut out = large;
        out.extend(self.write_manifests(entries, id).await?);
        // manifests written for this version alone are referenced by nothing now
        for m in small.iter().filter(|m| m.sequence_number == id) {
            self.delete_quietly(m.file_name()).await?;
        }
        Ok(out)
    }

    /// Writes version `id` if absent, then points the version hint at it (or at a newer
    /// version a concurrent committer wrote meanwhile). False when another committer wrote
    /// version `id` first (the cleanup is then its own).
    async fn publish(&self, id: i64, metadata: &TableMetadata) -> Result<bool> {
        if !self
            .io
            .put_if_absent(&metadata_file(id), metadata.to_json())
            .await?
        {
            return Ok(false);
        }
        let mut hint = id;
        loop {
            self.io.write(VERSION_HINT, hint.to_string()).await?;
            // a committer of a newer version wrote its hint before it saw ours: put it back
            let mut newest = hint;
            while self.io.exists(&metadata_file(newest + 1)).await? {
                newest += 1;
            }
            if newest == hint {
                return Ok(true);
            }
            hint = newest;
        }
    }

    /// `hive-catalog` storage: the metastore's Iceberg table points at version `id`, written
    /// from version `base` if any (Java `IcebergHiveMetadataCommitter.commitMetadata`).
    async fn register(&self, id: i64, base: Option<i64>) -> Result<()> {
        let Some(hive) = &self.hive else {
            return Ok(());
        };
        let table_location = self.location.trim_end_matches("/metadata");
        let database_location = table_location
            .rsplit_once('/')
            .map_or(table_location, |(parent, _)| parent);
        let previous = base.map(|b| self.path(&metadata_file(b)));
        let version = IcebergVersion {
            schema: self.table.schema(),
            metadata: &self.path(&metadata_file(id)),
            previous: previous.as_deref(),
            table_location,
            database_location,
        };
        hive.register(&version, self.table.env()).await
    }

    async fn delete_quietly(&self, name: &str) -> Result<()> {
        match self.io.delete(name).await {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The metadata versions below `id` in the directory.
    async fn versions_before(&self, id: i64) -> Result<Vec<i64>> {
        let mut versions: Vec<i64> = self
            .io
            .list_dir("")
            .await?
            .iter()
            .filter_map(|f| metadata_version(file_name(&f.path)))
            .filter(|v| *v < id)
            .collect();
        versions.sort_unstable();
        Ok(versions)
    }

    /// Java `deleteApplicableMetadataFiles`.
    async fn delete_old_versions(&self, id: i64) -> Result<()> {
        if !self.cfg.delete_after_commit {
            return Ok(());
        }
        let earliest = id - self.cfg.previous_versions_max;
        for v in self.versions_before(earliest).await? {
            self.delete_quietly(&metadata_file(v)).await?;
        }
        Ok(())
    }

    /// Java `expireAllBefore`: after a version built afresh, nothing older versions list is
    /// referenced any more, but for the Puffin files `in_use` (named after live index files).
    async fn expire_all_before(&self, id: i64, in_use: &HashSet<String>) -> Result<()> {
        let mut lists = HashSet::new();
        let mut manifests = HashSet::new();
        for v in self.versions_before(id).await? {
            let Some(bytes) = self.io.read_opt(&metadata_file(v)).await? else {
                continue;
            };
            let metadata = TableMetadata::parse(&bytes, &self.io.display(&metadata_file(v)))?;
            for s in metadata.snapshots {
                let list = file_name(&s.manifest_list).to_string();
                if !lists.insert(list.clone()) {
                    continue;
                }
                let files = match self.read_list(&list).await {
                    Ok(files) => files,
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                let puffins = self.puffins(&files).await?;
                for p in puffins.difference(in_use) {
                    self.delete_quietly(p).await?;
                }
                for m in files {
                    if manifests.insert(m.file_name().to_string()) {
                        self.delete_quietly(m.file_name()).await?;
                    }
                }
                self.delete_quietly(&list).await?;
            }
        }
        self.delete_old_versions(id).await
    }

    /// Java `expireManifestList`: deletes list `old` and its manifests (and Puffin files)
    /// that `next` does not list.
    async fn expire_list(&self, old: &str, next: &str) -> Result<()> {
        let next = self.read_list(next).await?;
        let files = match self.read_list(old).await {
            Ok(files) => files,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let in_use: HashSet<&str> = next.iter().map(|m| m.manifest_path.as_str()).collect();
        let gone: Vec<ManifestFile> = files
            .into_iter()
            .filter(|m| !in_use.contains(m.manifest_path.as_str()))
            .collect();
        if gone.iter().any(|m| m.content == CONTENT_DELETES) {
            let kept = self.puffins(&next).await?;
            for p in self.puffins(&gone).await?.difference(&kept) {
                self.delete_quietly(p).await?;
            }
        }
        for m in &gone {
            self.delete_quietly(m.file_name()).await?;
        }
        self.delete_quietly(file_name(old)).await
    }
}

/// Java `shouldExpire`: the table's snapshot retention applied to Iceberg snapshots.
struct Retention {
    min: i64,
    max: i64,
    older_than_ms: i64,
}

impl Retention {
    fn of(schema: &TableSchema, now: i64) -> Result<Retention> {
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let time = opts.snapshot_time_retained().map_err(spec)?;
        Ok(Retention {
            min: opts.snapshot_num_retained_min().map_err(spec)?.into(),
            max: opts.snapshot_num_retained_max().map_err(spec)?.into(),
            older_than_ms: now.saturating_sub(i64::try_from(time.as_millis()).unwrap_or(i64::MAX)),
        })
    }

    fn expires(&self, s: &IcebergSnapshot, current: i64) -> bool {
        if s.snapshot_id > current - self.min {
            return false;
        }
        s.snapshot_id <= current - self.max || s.timestamp_ms < self.older_than_ms
    }
}

type Stats = (Vec<(i32, i64)>, Vec<(i32, Vec<u8>)>, Vec<(i32, Vec<u8>)>);

/// The null counts and bounds, by field id, of the columns `e`'s value statistics cover.
fn stats(schema: &Arc<TableSchema>, e: &PaimonEntry) -> Result<Stats> {
    let fields: Vec<&DataField> = match &e.file.value_stats_cols {
        None => schema.fields.iter().collect(),
        Some(cols) => cols.iter().filter_map(|c| schema.field(c)).collect(),
    };
    let s = &e.file.value_stats;
    let types: Vec<_> = fields.iter().map(|f| f.data_type.clone()).collect();
    let arity_matches = |row: &[u8]| split_framed(row).is_ok_and(|(n, _)| n == types.len());
    let mut out: Stats = Default::default();
    if let Some(counts) = &s.null_counts {
        for (f, n) in fields.iter().zip(counts) {
            if let Some(n) = n {
                out.0.push((f.id, *n));
            }
        }
    }
    if types.is_empty() || !arity_matches(&s.min_values) || !arity_matches(&s.max_values) {
        return Ok(out);
    }
    let what = |e| Error::from_spec("data file statistics", e);
    let mins = decode_framed(&s.min_values, &types).map_err(what)?;
    let maxs = decode_framed(&s.max_values, &types).map_err(what)?;
    for ((f, lo), hi) in fields.iter().zip(&mins).zip(&maxs) {
        if let (Some(lo), Some(hi)) = (to_bound(&f.data_type, lo), to_bound(&f.data_type, hi)) {
            out.1.push((f.id, lo));
            out.2.push((f.id, hi));
        }
    }
    Ok(out)
}

/// About the bytes an entry takes in a manifest (for rolling at the target size).
fn estimated_size(e: &ManifestEntry) -> usize {
    let f = &e.data_file;
    let bounds: usize = f
        .lower_bounds
        .iter()
        .chain(&f.upper_bounds)
        .map(|(_, b)| b.len() + 8)
        .sum();
    64 + f.file_path.len()
        + bounds
        + 12 * f.null_value_counts.len()
        + f.partition
            .iter()
            .map(|d| if let Datum::String(s) = d { s.len() } else { 8 })
            .sum::<usize>()
}
