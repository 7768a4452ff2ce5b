//! Consistency check of a table's branch (`tidelake doctor --verify`, `Table.verify()`): the
//! snapshot chain is replayed and the invariants of Paimon's format are checked, each broken
//! one reported as a [`Violation`] of a [`ViolationKind`].
//!
//! Checks, by class ([`ViolationKind::class`]):
//! * `files`: the files of the newest snapshots exist at their recorded sizes and their
//!   metadata decodes ([`super::damage::find_damage`], reused as is), and so does every index
//!   file the index manifest of the newest readable snapshot lists (`find_damage` skips those
//!   of buckets without live data files); a snapshot, manifest list or manifest that does not
//!   decode during the replay is reported too.
//! * `replay`: every snapshot's delta manifests are replayed in order against the previous
//!   snapshot's live files (the first snapshot of the chain, or one after a gap, starts from its
//!   own base manifest list): an ADD of a live file or a DELETE of a file that is not live is a
//!   violation, and the replayed live set must equal the live set of the snapshot's base + delta
//!   manifests ([`LiveFiles`]). After a mismatch the replay continues from the latter.
//! * `lsm` (newest readable snapshot): `min_sequence_number <= max_sequence_number` for every
//!   file; for primary-key tables, no negative level (a level beyond `num-levels` is legal: Java
//!   raises the level count to hold it) and, per bucket, the files of
//!   one level >= 1 do not overlap in key range ([`overlapping_files`]; not checked under
//!   `pk-clustering-override`).
//! * `deletion_vectors` (newest readable snapshot): every deletion vector of the index
//!   manifest names a live data file of its bucket, and holds no position >= that file's
//!   `row_count`.
//! * `buckets` (newest readable snapshot, fixed-bucket primary-key tables hashing the trimmed
//!   primary key with the default bucket function): the min and max key of every file hash
//!   ([`bucket_of`]) to the file's bucket under its `_TOTAL_BUCKETS`. Keys between them are not
//!   read; that a key lives in one bucket only follows for files whose keys all hash there.
//! * `index` (newest readable snapshot): that its index files exist at their recorded sizes is
//!   the `files` check, and that its deletion vectors name live files the `deletion_vectors`
//!   one; here the contents are checked against the data. Dynamic-bucket tables (`bucket` -1,
//!   a primary key holding every partition key; Java `HashIndexFile`): every `HASH` index file
//!   holds as many hashes as its recorded `row_count`, no hash is listed twice in a partition
//!   (a key hash has one bucket), and the hash of the min and max key of every live data file
//!   ([`hash_row`] of the trimmed primary key, the assigner's hash) is listed by its bucket's
//!   index (a key goes to its hash's bucket, so this holds exactly for every key; keys between
//!   them are not read). Every live data file with a file index (`file-index.*`: embedded, or
//!   an `.index` extra file beside it) has one that exists and decodes.
//! * `iceberg` (newest readable snapshot, main branch of a table with
//!   `metadata.iceberg.storage`): Paimon snapshot N is described by Iceberg metadata version N
//!   (`v<N>.metadata.json`, whose current Iceberg snapshot is N, and `version-hint.text` names
//!   N or newer), whose current snapshot's data files are live data files of snapshot N with
//!   their record counts and sizes, each listed once; for append tables they are all of them
//!   (a primary-key table's Iceberg table lists only files that need no merge, which ones
//!   depending on how the version was built, Java's rule).
//!
//! Invariants: nothing is written or deleted; a violation never aborts the check (only errors
//! other than missing or undecodable files do, e.g. storage failures). Cost: every snapshot's
//! manifest lists and manifests are read (manifests once per read cache), and the deletion
//! vector, hash and file index files of the newest snapshot, and its Iceberg metadata.

use std::collections::{HashMap, HashSet};

use tidelake_spec::binary_row::decode_framed;
use tidelake_spec::binary_row::encode_row;
use tidelake_spec::bucket::{bucket_of, hash_row};
use tidelake_spec::datum::Datum;
use tidelake_spec::manifest::{
    decode_hash_index, FileIdentifier, FileKind, IndexManifestEntry, ManifestEntry,
    DELETION_VECTORS_INDEX, HASH_INDEX,
};
use tidelake_spec::options::BucketFunctionType;
use tidelake_spec::snapshot::Snapshot;
use tidelake_spec::types::DataType;

use super::damage::{find_damage, problem, Problem, ProblemKind};
use crate::error::{Error, Result};
use crate::iceberg::{data_file_location, read_state};
use crate::layout::TableLayout;
use crate::lsm::levels::overlapping_files;
use crate::read::split_read::decode_deletion_vector;
use crate::scan::file_index;
use crate::scan::split::FileIndexRef;
use crate::state::{
    index_file_refs, live_index_entries, merge_entries, read_list, read_manifests, IndexPaths,
    LiveFiles, Pruning,
};
use crate::table::Table;

/// What is wrong; see the module docs for the check behind each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// A file a snapshot references is missing.
    MissingFile,
    /// A file a snapshot references has another size than recorded.
    FileSize,
    /// A snapshot, manifest list or manifest (or a key range in it) does not decode.
    Undecodable,
    /// A delta manifest adds a file that is already live.
    AddedTwice,
    /// A delta manifest deletes a file that is not live.
    DeletedNotLive,
    /// The replayed live files differ from the snapshot's base + delta manifests.
    LiveSetMismatch,
    /// A file's `min_sequence_number` exceeds its `max_sequence_number`.
    SequenceRange,
    /// A file's level is negative.
    Level,
    /// Two files of one level >= 1 of a bucket overlap in key range.
    LevelOverlap,
    /// A deletion vector holds a position >= its data file's row count.
    DeletionVectorRange,
    /// A deletion vector names a data file that is not live in its bucket.
    DeletionVectorTarget,
    /// A file's keys hash to another bucket than the one it is in.
    WrongBucket,
    /// A `HASH` index file holds another number of hashes than its recorded row count.
    HashIndexCount,
    /// A hash is listed twice by the `HASH` index files of a partition.
    HashIndexDuplicate,
    /// A live data file's key hashes to a hash its bucket's `HASH` index lacks.
    HashIndexKey,
    /// A data file's file index is missing or does not decode.
    FileIndex,
    /// The Iceberg metadata does not describe the Paimon snapshot.
    IcebergSnapshot,
    /// A live data file is not in the Iceberg snapshot.
    IcebergMissingFile,
    /// The Iceberg snapshot lists a file that is not a live data file, or lists one twice.
    IcebergExtraFile,
    /// The Iceberg snapshot records another row count or size for a data file.
    IcebergFileStats,
}

impl ViolationKind {
    /// The kind's name (snake case), as the CLI and Python show it.
    pub fn as_str(&self) -> &'static str {
        match self {
            ViolationKind::MissingFile => "missing_file",
            ViolationKind::FileSize => "file_size",
            ViolationKind::Undecodable => "undecodable",
            ViolationKind::AddedTwice => "added_twice",
            ViolationKind::DeletedNotLive => "deleted_not_live",
            ViolationKind::LiveSetMismatch => "live_set_mismatch",
            ViolationKind::SequenceRange => "sequence_range",
            ViolationKind::Level => "level",
            ViolationKind::LevelOverlap => "level_overlap",
            ViolationKind::DeletionVectorRange => "deletion_vector_range",
            ViolationKind::DeletionVectorTarget => "deletion_vector_target",
            ViolationKind::WrongBucket => "wrong_bucket",
            ViolationKind::HashIndexCount => "hash_index_count",
            ViolationKind::HashIndexDuplicate => "hash_index_duplicate",
            ViolationKind::HashIndexKey => "hash_index_key",
            ViolationKind::FileIndex => "file_index",
            ViolationKind::IcebergSnapshot => "iceberg_snapshot",
            ViolationKind::IcebergMissingFile => "iceberg_missing_file",
            ViolationKind::IcebergExtraFile => "iceberg_extra_file",
            ViolationKind::IcebergFileStats => "iceberg_file_stats",
        }
    }

    /// The class of the check that found it: `files`, `replay`, `lsm`, `deletion_vectors`,
    /// `buckets`, `index`, `iceberg`.
    pub fn class(&self) -> &'static str {
        match self {
            ViolationKind::MissingFile | ViolationKind::FileSize | ViolationKind::Undecodable => {
                "files"
            }
            ViolationKind::AddedTwice
            | ViolationKind::DeletedNotLive
            | ViolationKind::LiveSetMismatch => "replay",
            ViolationKind::SequenceRange | ViolationKind::Level | ViolationKind::LevelOverlap => {
                "lsm"
            }
            ViolationKind::DeletionVectorRange | ViolationKind::DeletionVectorTarget => {
                "deletion_vectors"
            }
            ViolationKind::WrongBucket => "buckets",
            ViolationKind::HashIndexCount
            | ViolationKind::HashIndexDuplicate
            | ViolationKind::HashIndexKey
            | ViolationKind::FileIndex => "index",
            ViolationKind::IcebergSnapshot
            | ViolationKind::IcebergMissingFile
            | ViolationKind::IcebergExtraFile
            | ViolationKind::IcebergFileStats => "iceberg",
        }
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The snapshot it was found in (`None`: not tied to one).
    pub snapshot: Option<i64>,
    /// The file concerned (full path or URL; empty when none is).
    pub path: String,
    pub detail: String,
}

/// What [`verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub violations: Vec<Violation>,
    /// The newest snapshot id (`None`: the table has none).
    pub latest: Option<i64>,
    /// How many snapshots were replayed.
    pub snapshots_checked: usize,
    /// The snapshot whose live files the `lsm`, `deletion_vectors`, `buckets`, `index` and
    /// `iceberg` checks looked at: the newest one whose manifests read.
    pub state_snapshot: Option<i64>,
}

impl VerifyReport {
    /// Whether no invariant is broken.
    pub fn is_consistent(&self) -> bool {
        self.violations.is_empty()
    }

    fn push(&mut self, kind: ViolationKind, snapshot: i64, path: String, detail: String) {
        self.violations.push(Violation {
            kind,
            snapshot: Some(snapshot),
            path,
            detail,
        });
    }

    /// A missing or undecodable file found by `snapshot`'s checks; other errors are returned.
    /// A file named by an earlier violation of the same kind is not reported again.
    fn push_error(&mut self, snapshot: i64, e: Error) -> Result<()> {
        let p = problem(e)?;
        let kind = from_problem_kind(p.kind);
        let seen = !p.path.is_empty()
            && self
                .violations
                .iter()
                .any(|v| v.kind == kind && v.path == p.path);
        if !seen {
            self.push(kind, snapshot, p.path, p.reason);
        }
        Ok(())
    }
}

fn from_problem_kind(kind: ProblemKind) -> ViolationKind {
    match kind {
        ProblemKind::Missing => ViolationKind::MissingFile,
        ProblemKind::Size => ViolationKind::FileSize,
        ProblemKind::Undecodable => ViolationKind::Undecodable,
    }
}

/// Live files of a snapshot by identifier.
type LiveSet = HashMap<FileIdentifier, ManifestEntry>;

/// Check `table`'s branch; see the module docs.
pub async fn verify(table: &Table) -> Result<VerifyReport> {
    let damage = find_damage(table).await?;
    let mut report = VerifyReport {
        latest: damage.latest,
        ..VerifyReport::default()
    };
    for Problem {
        path,
        reason,
        kind,
        snapshot,
    } in damage.problems
    {
        report.push(from_problem_kind(kind), snapshot, path, reason);
    }
    let layout = TableLayout::new(table.schema())?;
    let sm = table.snapshot_manager();
    let mut prev: Option<(i64, LiveSet)> = None;
    let mut state: Option<(Snapshot, LiveFiles)> = None;
    for id in sm.list_ids().await? {
        let snap = match sm.snapshot(id).await {
            Ok(snap) => snap,
            Err(e) if e.is_missing() => continue, // expired meanwhile
            Err(e) => {
                if !damage_reported(&report, id) {
                    report.push_error(id, e)?;
                }
                continue;
            }
        };
        report.snapshots_checked += 1;
        let before = prev.take().filter(|(p, _)| *p == id - 1).map(|(_, s)| s);
        match replay(table, &layout, &snap, before, &mut report).await {
            Ok((live_set, live)) => {
                prev = Some((id, live_set));
                if let Some(live) = live {
                    state = Some((snap, live));
                }
            }
            Err(e) => {
                if !damage_reported(&report, id) {
                    report.push_error(id, e)?;
                }
            }
        }
    }
    if let Some((snap, live)) = state {
        report.state_snapshot = Some(snap.id);
        check_state(table, &layout, &snap, &live, &mut report).await?;
    }
    Ok(report)
}

/// Whether `find_damage` already reported an undecodable file of snapshot `id`.
fn damage_reported(report: &VerifyReport, id: i64) -> bool {
    report
        .violations
        .iter()
        .any(|v| v.snapshot == Some(id) && v.kind.class() == "files")
}

/// Replay `snap`'s delta against `before` (the previous snapshot's live files; `None`: start
/// from its base manifest list), reporting violations; returns the live set the next
/// snapshot starts from and, when its base + delta manifests replay, its [`LiveFiles`].
async fn replay(
    table: &Table,
    layout: &TableLayout,
    snap: &Snapshot,
    before: Option<LiveSet>,
    report: &mut VerifyReport,
) -> Result<(LiveSet, Option<LiveFiles>)> {
    let mut live = match before {
        Some(live) => live,
        None => {
            let base =
                read_manifests(table, &read_list(table, &snap.base_manifest_list).await?).await?;
            live_set(
                merge_entries(base)?
                    .into_iter()
                    .filter(|e| e.kind == FileKind::Add),
            )
        }
    };
    let delta = read_manifests(table, &read_list(table, &snap.delta_manifest_list).await?).await?;
    let found = apply_delta(&mut live, delta);
    let replay_failed = !found.is_empty();
    for (kind, e) in found {
        let detail = match kind {
            ViolationKind::AddedTwice => "added by the delta manifests while already live",
            _ => "deleted by the delta manifests while not live",
        };
        report.push(
            kind,
            snap.id,
            entry_path(table, layout, &e),
            detail_of(&e, detail),
        );
    }
    let truth = match LiveFiles::read(table, snap, Pruning::all().with_index_files()).await {
        Ok(truth) => truth,
        // the same file added twice, already reported by the replay
        Err(e) if replay_failed && e.kind() == crate::ErrorKind::Corrupt => {
            return Ok((live, None));
        }
        Err(e) => return Err(e),
    };
    let expected = live_set(truth.entries().cloned());
    let mut mismatch = |set: &LiveSet, other: &LiveSet, why: &str| {
        let mut extra: Vec<&ManifestEntry> = set
            .iter()
            .filter(|(id, _)| !other.contains_key(*id))
            .map(|(_, e)| e)
            .collect();
        extra.sort_by(|a, b| a.file.file_name.cmp(&b.file.file_name));
        for e in extra {
            report.push(
                ViolationKind::LiveSetMismatch,
                snap.id,
                entry_path(table, layout, e),
                detail_of(e, why),
            );
        }
    };
    mismatch(
        &live,
        &expected,
        "live after replaying the previous snapshot and the delta, but not in the base and delta manifests",
    );
    mismatch(
        &expected,
        &live,
        "live in the base and delta manifests, but not after replaying the previous snapshot and the delta",
    );
    Ok((expected, Some(truth)))
}

fn live_set(entries: impl IntoIterator<Item = ManifestEntry>) -> LiveSet {
    entries.into_iter().map(|e| (e.identifier(), e)).collect()
}

/// Apply `delta` to `live` in order: an ADD of a live file ([`ViolationKind::AddedTwice`]) and
/// a DELETE of a file that is not live ([`ViolationKind::DeletedNotLive`]) are returned and
/// leave `live` as it was.
fn apply_delta(
    live: &mut LiveSet,
    delta: impl IntoIterator<Item = ManifestEntry>,
) -> Vec<(ViolationKind, ManifestEntry)> {
    let mut found = Vec::new();
    for e in delta {
        let id = e.identifier();
        match e.kind {
            FileKind::Add if live.contains_key(&id) => found.push((ViolationKind::AddedTwice, e)),
            FileKind::Add => {
                live.insert(id, e);
            }
            FileKind::Delete => {
                if live.remove(&id).is_none() {
                    found.push((ViolationKind::DeletedNotLive, e));
                }
            }
        }
    }
    found
}

/// Where `e`'s file lives, as errors name it.
fn entry_path(table: &Table, layout: &TableLayout, e: &ManifestEntry) -> String {
    let dir = layout
        .decode_partition(&e.partition)
        .and_then(|p| layout.bucket_path(&p, e.bucket));
    match dir {
        Ok(dir) => match &e.file.external_path {
            Some(p) => p.clone(),
            None => table.io().display(&e.file.path(&dir)),
        },
        Err(_) => e.file.file_name.clone(),
    }
}

fn detail_of(e: &ManifestEntry, what: &str) -> String {
    format!(
        "{} (bucket {}, level {}): {what}",
        e.file.file_name, e.bucket, e.file.level
    )
}

/// What the checks of the newest readable snapshot need to know about the table.
struct StateChecks {
    /// Trimmed primary-key types of a primary-key table (`None`: append table).
    key_types: Option<Vec<DataType>>,
    /// Whether levels may not overlap (primary-key tables without `pk-clustering-override`).
    lsm: bool,
    /// Whether files' keys must hash to their bucket.
    fixed_buckets: bool,
    /// Whether buckets are assigned by `HASH` index files (dynamic bucket mode).
    dynamic_buckets: bool,
}

impl StateChecks {
    fn new(table: &Table, layout: &TableLayout) -> Result<StateChecks> {
        let schema = table.schema();
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let has_key = !schema.primary_keys.is_empty();
        let clustering_override = opts
            .get_bool("pk-clustering-override")
            .map_err(spec)?
            .unwrap_or(false);
        Ok(StateChecks {
            key_types: has_key.then(|| layout.key_types()),
            lsm: has_key && !clustering_override,
            fixed_buckets: has_key
                && opts.bucket().map_err(spec)? > 0
                && schema.bucket_keys() == schema.trimmed_primary_keys()
                && opts.bucket_function_type().map_err(spec)? == BucketFunctionType::Default,
            dynamic_buckets: has_key
                && opts.bucket().map_err(spec)? == -1
                && schema
                    .partition_keys
                    .iter()
                    .all(|k| schema.primary_keys.contains(k)),
        })
    }
}

/// The `lsm`, `deletion_vectors`, `buckets`, `index` and `iceberg` checks of `live`, the files
/// of `snap`.
async fn check_state(
    table: &Table,
    layout: &TableLayout,
    snap: &Snapshot,
    live: &LiveFiles,
    report: &mut VerifyReport,
) -> Result<()> {
    let checks = StateChecks::new(table, layout)?;
    let id = snap.id;
    for e in live.entries() {
        let f = &e.file;
        if f.min_sequence_number > f.max_sequence_number {
            let why = format!(
                "min_sequence_number {} > max_sequence_number {}",
                f.min_sequence_number, f.max_sequence_number
            );
            let path = entry_path(table, layout, e);
            report.push(ViolationKind::SequenceRange, id, path, detail_of(e, &why));
        }
        if checks.key_types.is_some() && f.level < 0 {
            let why = format!("negative level {}", f.level);
            let path = entry_path(table, layout, e);
            report.push(ViolationKind::Level, id, path, detail_of(e, &why));
        }
    }
    if let Some(key_types) = &checks.key_types {
        if checks.lsm {
            match overlapping_files(live.entries(), key_types) {
                Ok(pairs) => {
                    for (a, b) in pairs {
                        let why = format!("key range overlaps that of {}", b.file.file_name);
                        let path = entry_path(table, layout, a);
                        report.push(ViolationKind::LevelOverlap, id, path, detail_of(a, &why));
                    }
                }
                Err(e) => report.push_error(id, e)?,
            }
        }
        if checks.fixed_buckets {
            check_buckets(table, layout, id, live, key_types, report)?;
        }
    }
    let index = match live_index_entries(table, snap).await {
        Ok(index) => index,
        Err(e) => return report.push_error(id, e),
    };
    let paths = IndexPaths::new(table.schema())?;
    check_index_files(table, &paths, id, &index, report).await?;
    check_deletion_vectors(table, &paths, snap, live, &index, report).await?;
    if let (Some(key_types), true) = (&checks.key_types, checks.dynamic_buckets) {
        check_hash_index(table, &paths, layout, id, live, &index, key_types, report).await?;
    }
    check_file_indexes(table, layout, id, live, report).await?;
    check_iceberg(table, layout, id, live, report).await
}

/// The `files` check of the index files `index` lists that [`find_damage`] does not look at
/// (those of buckets without live data files, and of other index types): each exists at its
/// recorded size. A file already reported is not reported again.
async fn check_index_files(
    table: &Table,
    paths: &IndexPaths,
    id: i64,
    index: &[IndexManifestEntry],
    report: &mut VerifyReport,
) -> Result<()> {
    for e in index
        .iter()
        .filter(|e| e.index_file.external_path.is_none())
    {
        let f = &e.index_file;
        let rel = match paths.entry_path(e) {
            Ok(rel) => rel,
            Err(err) => {
                report.push_error(id, err)?;
                continue;
            }
        };
        let path = table.io().display(&rel);
        if reported(report, &path) {
            continue;
        }
        let (kind, why) = match table.io().size(&rel).await {
            Ok(size) if i64::try_from(size).ok() == Some(f.file_size) => continue,
            Ok(size) => (
                ViolationKind::FileSize,
                format!("{size} bytes where {} were written", f.file_size),
            ),
            Err(e) if e.is_missing() => (ViolationKind::MissingFile, "missing".to_string()),
            Err(e) => return Err(e),
        };
        report.push(kind, id, path, why);
    }
    Ok(())
}

/// The `index` check of dynamic-bucket `HASH` index files (of `index`) against `live`'s data
/// files.
#[allow(clippy::too_many_arguments)]
async fn check_hash_index(
    table: &Table,
    paths: &IndexPaths,
    layout: &TableLayout,
    id: i64,
    live: &LiveFiles,
    index: &[IndexManifestEntry],
    key_types: &[DataType],
    report: &mut VerifyReport,
) -> Result<()> {
    // per partition: hash -> bucket listing it
    let mut owners: HashMap<&[u8], HashMap<i32, i32>> = HashMap::new();
    // buckets whose index files did not all read
    let mut unreadable: HashSet<(&[u8], i32)> = HashSet::new();
    for e in index
        .iter()
        .filter(|e| e.index_file.index_type == HASH_INDEX)
    {
        let (f, bucket) = (&e.index_file, e.bucket);
        let owner = owners.entry(e.partition.as_slice()).or_default();
        let rel = match paths.entry_path(e) {
            Ok(rel) => rel,
            Err(err) => {
                unreadable.insert((e.partition.as_slice(), bucket));
                report.push_error(id, err)?;
                continue;
            }
        };
        let path = table.io().display(&rel);
        let hashes = match table.io().read(&rel).await {
            Ok(bytes) => decode_hash_index("hash index", &bytes)
                .map_err(|e| Error::from_spec(path.clone(), e)),
            Err(e) => Err(e),
        };
        let hashes = match hashes {
            Ok(hashes) => hashes,
            Err(err) => {
                unreadable.insert((e.partition.as_slice(), bucket));
                // a missing file is reported by the `files` check
                if !err.is_missing() && !reported(report, &path) {
                    report.push_error(id, err)?;
                }
                continue;
            }
        };
        if i64::try_from(hashes.len()).ok() != Some(f.row_count) {
            let why = format!(
                "{} (bucket {bucket}) holds {} hashes, but its row count is {}",
                f.file_name,
                hashes.len(),
                f.row_count
            );
            report.push(ViolationKind::HashIndexCount, id, path.clone(), why);
        }
        let mut twice = hashes
            .iter()
            .filter_map(|&h| owner.insert(h, bucket).map(|other| (h, other)));
        if let Some((h, other)) = twice.next() {
            let why = format!(
                "{} (bucket {bucket}) lists hash {h}, which bucket {other}'s index lists too ({} more hashes listed twice)",
                f.file_name,
                twice.count()
            );
            report.push(ViolationKind::HashIndexDuplicate, id, path, why);
        }
    }
    let empty = HashMap::new();
    for b in live.buckets() {
        if unreadable.contains(&(b.partition.as_slice(), b.bucket)) {
            continue;
        }
        let owner = owners.get(b.partition.as_slice()).unwrap_or(&empty);
        for e in &b.files {
            let at = KeyBounds {
                table,
                layout,
                id,
                key_types,
            };
            at.check(e, ViolationKind::HashIndexKey, report, |which, values| {
                let h = hash_row(&encode_row(&values, key_types)?);
                Ok(match owner.get(&h) {
                    Some(&bucket) if bucket == b.bucket => None,
                    Some(bucket) => Some(format!(
                        "its {which} key's hash {h} belongs to bucket {bucket} in the hash index"
                    )),
                    None => Some(format!(
                        "its {which} key's hash {h} is in no hash index file of the partition"
                    )),
                })
            })?;
        }
    }
    Ok(())
}

/// Whether a violation names `path` already.
fn reported(report: &VerifyReport, path: &str) -> bool {
    report.violations.iter().any(|v| v.path == path)
}

/// The `index` check of data files' file indexes: each exists and decodes.
async fn check_file_indexes(
    table: &Table,
    layout: &TableLayout,
    id: i64,
    live: &LiveFiles,
    report: &mut VerifyReport,
) -> Result<()> {
    for b in live.buckets() {
        let dir = layout.bucket_path(&layout.decode_partition(&b.partition)?, b.bucket)?;
        for e in b.files.iter().filter(|e| e.file.external_path.is_none()) {
            let Some(at) = FileIndexRef::of(&e.file.path(&dir), &e.file) else {
                continue;
            };
            let Err(err) = file_index::load(table.io(), &at).await else {
                continue;
            };
            let p = problem(err)?;
            let path = match &at {
                FileIndexRef::File(rel) => table.io().display(rel),
                FileIndexRef::Embedded(_) => entry_path(table, layout, e),
            };
            let why = format!("its file index: {}", p.reason);
            report.push(ViolationKind::FileIndex, id, path, detail_of(e, &why));
        }
    }
    Ok(())
}

/// The `iceberg` check: snapshot `id`'s Iceberg metadata against its live files `live`.
async fn check_iceberg(
    table: &Table,
    layout: &TableLayout,
    id: i64,
    live: &LiveFiles,
    report: &mut VerifyReport,
) -> Result<()> {
    let state = match read_state(table, id).await {
        Ok(Some(state)) => state,
        Ok(None) => return Ok(()),
        Err(e) => return report.push_error(id, e),
    };
    let path = state.metadata_path.clone();
    if state.hint.is_none_or(|h| h < id) {
        let hint = state.hint.map_or("no readable version".to_string(), |h| {
            format!("version {h}")
        });
        let why = format!("version-hint.text names {hint}, not snapshot {id}'s version {id}");
        report.push(ViolationKind::IcebergSnapshot, id, path.clone(), why);
    }
    let Some(version) = state.version else {
        let why = format!("no Iceberg metadata version for snapshot {id}");
        report.push(ViolationKind::IcebergSnapshot, id, path, why);
        return Ok(());
    };
    if version.current_snapshot != Some(id) {
        let current = version
            .current_snapshot
            .map_or("no snapshot".to_string(), |s| format!("snapshot {s}"));
        let why = format!("its current Iceberg snapshot is {current}, not {id}");
        report.push(ViolationKind::IcebergSnapshot, id, path, why);
        return Ok(());
    }
    let mut paimon: HashMap<String, &ManifestEntry> = HashMap::new();
    for e in live.entries() {
        paimon.insert(data_file_location(table, layout, e)?, e);
    }
    let mut listed: HashSet<&str> = HashSet::new();
    for f in &version.files {
        let at = f.location.clone();
        let Some(e) = paimon.get(&f.location) else {
            let why = format!(
                "the Iceberg snapshot lists it, but it is not a live data file of snapshot {id}"
            );
            report.push(ViolationKind::IcebergExtraFile, id, at, why);
            continue;
        };
        if !listed.insert(&f.location) {
            let why = "the Iceberg snapshot lists it twice".to_string();
            report.push(ViolationKind::IcebergExtraFile, id, at, why);
            continue;
        }
        if (f.record_count, f.file_size) != (e.file.row_count, e.file.file_size) {
            let why = format!(
                "the Iceberg snapshot records {} rows and {} bytes, Paimon {} rows and {} bytes",
                f.record_count, f.file_size, e.file.row_count, e.file.file_size
            );
            report.push(ViolationKind::IcebergFileStats, id, at, detail_of(e, &why));
        }
    }
    if !state.primary_key {
        let mut missing: Vec<(&String, &&ManifestEntry)> = paimon
            .iter()
            .filter(|(at, _)| !listed.contains(at.as_str()))
            .collect();
        missing.sort_by(|a, b| a.0.cmp(b.0));
        for (at, e) in missing {
            let why = format!("live in snapshot {id}, but not in its Iceberg snapshot");
            report.push(
                ViolationKind::IcebergMissingFile,
                id,
                at.clone(),
                detail_of(e, &why),
            );
        }
    }
    Ok(())
}

/// The `buckets` check: the min and max key of every file hash to its bucket.
fn check_buckets(
    table: &Table,
    layout: &TableLayout,
    id: i64,
    live: &LiveFiles,
    key_types: &[DataType],
    report: &mut VerifyReport,
) -> Result<()> {
    let at = KeyBounds {
        table,
        layout,
        id,
        key_types,
    };
    for e in live.entries().filter(|e| e.total_buckets > 0) {
        at.check(e, ViolationKind::WrongBucket, report, |which, values| {
            let b = bucket_of(&values, key_types, e.total_buckets)?;
            Ok((b != e.bucket).then(|| {
                format!(
                    "its {which} key belongs in bucket {b} of {}",
                    e.total_buckets
                )
            }))
        })?;
    }
    Ok(())
}

/// Checks of a file's min and max key (the key bounds its manifest entry records), shared by
/// the `buckets` and the hash index checks.
struct KeyBounds<'a> {
    table: &'a Table,
    layout: &'a TableLayout,
    id: i64,
    key_types: &'a [DataType],
}

impl KeyBounds<'_> {
    /// `judge` each of `e`'s min and max key (`"min"`/`"max"`, its decoded values): `Some(why)`
    /// is a violation of `kind`; a key that does not decode is an error of the manifest entry.
    fn check(
        &self,
        e: &ManifestEntry,
        kind: ViolationKind,
        report: &mut VerifyReport,
        judge: impl Fn(&str, Vec<Datum>) -> tidelake_spec::Result<Option<String>>,
    ) -> Result<()> {
        for (which, key) in [("min", &e.file.min_key), ("max", &e.file.max_key)] {
            match decode_framed(key, self.key_types).and_then(|values| judge(which, values)) {
                Ok(None) => {}
                Ok(Some(why)) => {
                    let path = entry_path(self.table, self.layout, e);
                    report.push(kind, self.id, path, detail_of(e, &why));
                }
                Err(err) => {
                    let path = format!("manifest entry of {}", e.file.file_name);
                    report.push_error(self.id, Error::from_spec(path, err))?;
                }
            }
        }
        Ok(())
    }
}

/// The `deletion_vectors` check of `snap`'s index manifest against its live files `live`.
async fn check_deletion_vectors(
    table: &Table,
    paths: &IndexPaths,
    snap: &Snapshot,
    live: &LiveFiles,
    index: &[IndexManifestEntry],
    report: &mut VerifyReport,
) -> Result<()> {
    let row_counts: HashMap<(&[u8], i32, &str), i64> = live
        .entries()
        .map(|e| {
            let key = (e.partition.as_slice(), e.bucket, e.file.file_name.as_str());
            (key, e.file.row_count)
        })
        .collect();
    let mut reported: HashSet<String> = HashSet::new();
    for entry in index
        .iter()
        .filter(|e| e.index_file.index_type == DELETION_VECTORS_INDEX)
    {
        let refs = match paths
            .entry_path(entry)
            .and_then(|path| index_file_refs(&entry.index_file, &path))
        {
            Ok(refs) => refs,
            Err(e) => {
                report.push_error(snap.id, e)?;
                continue;
            }
        };
        let mut bytes = None;
        for (data_file, dv) in refs {
            let key = (entry.partition.as_slice(), entry.bucket, data_file.as_str());
            let Some(&row_count) = row_counts.get(&key) else {
                report.push(
                    ViolationKind::DeletionVectorTarget,
                    snap.id,
                    table.io().display(&dv.path),
                    format!(
                        "deletion vector of {data_file} (bucket {}), which is not a live data file of its bucket",
                        entry.bucket
                    ),
                );
                continue;
            };
            if bytes.is_none() {
                match table.io().read(&dv.path).await {
                    Ok(b) => bytes = Some(b),
                    Err(e) => {
                        // missing index files are reported by find_damage
                        if reported.insert(dv.path.clone()) && !e.is_missing() {
                            report.push_error(snap.id, e)?;
                        }
                        break;
                    }
                }
            }
            let Some(b) = &bytes else { break };
            let vector = match decode_deletion_vector(table, &dv.path, b, dv.offset, dv.length) {
                Ok(v) => v,
                Err(e) => {
                    report.push_error(snap.id, e)?;
                    continue;
                }
            };
            let rows = u64::try_from(row_count).unwrap_or(0);
            let beyond = vector.iter().find(|&p| p >= rows);
            if let Some(pos) = beyond {
                report.push(
                    ViolationKind::DeletionVectorRange,
                    snap.id,
                    table.io().display(&dv.path),
                    format!(
                        "deletion vector of {data_file} (bucket {}) deletes position {pos}, but the file has {row_count} rows",
                        entry.bucket
                    ),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tidelake_spec::manifest::EMPTY_ROW;
    use tidelake_spec::types::TypeKind;

    use super::*;
    use crate::commit::tests::pk_file;

    fn entry(kind: FileKind, name: &str, level: i32, keys: (i64, i64)) -> ManifestEntry {
        ManifestEntry {
            kind,
            partition: EMPTY_ROW.to_vec(),
            bucket: 0,
            total_buckets: 1,
            file: pk_file(name, level, keys.0, keys.1),
        }
    }

    fn kinds(found: &[(ViolationKind, ManifestEntry)]) -> Vec<(ViolationKind, &str)> {
        found
            .iter()
            .map(|(k, e)| (*k, e.file.file_name.as_str()))
            .collect()
    }

    #[test]
    fn replay_accepts_a_healthy_delta() {
        let mut live = live_set([entry(FileKind::Add, "a", 0, (1, 5))]);
        // compaction: a is upgraded to level 5 (another identifier), b is written and deleted
        let delta = [
            entry(FileKind::Delete, "a", 0, (1, 5)),
            entry(FileKind::Add, "a", 5, (1, 5)),
            entry(FileKind::Add, "b", 0, (2, 3)),
            entry(FileKind::Delete, "b", 0, (2, 3)),
        ];
        assert!(apply_delta(&mut live, delta).is_empty());
        let names: Vec<_> = live
            .values()
            .map(|e| (e.file.file_name.as_str(), e.file.level))
            .collect();
        assert_eq!(names, vec![("a", 5)]);
    }

    #[test]
    fn replay_reports_adds_of_live_and_deletes_of_dead_files() {
        let mut live = live_set([entry(FileKind::Add, "a", 0, (1, 5))]);
        let delta = [
            entry(FileKind::Add, "a", 0, (1, 5)),
            entry(FileKind::Delete, "gone", 0, (1, 5)),
            entry(FileKind::Delete, "a", 1, (1, 5)), // live at level 0, not 1
        ];
        let found = apply_delta(&mut live, delta);
        assert_eq!(
            kinds(&found),
            vec![
                (ViolationKind::AddedTwice, "a"),
                (ViolationKind::DeletedNotLive, "gone"),
                (ViolationKind::DeletedNotLive, "a"),
            ]
        );
        assert_eq!(live.len(), 1);
    }

    #[test]
    fn overlapping_levels_are_found_per_level() {
        let t = [DataType::not_null(TypeKind::BigInt)];
        let files = [
            entry(FileKind::Add, "l0-a", 0, (1, 10)),
            entry(FileKind::Add, "l0-b", 0, (5, 15)), // level 0 may overlap
            entry(FileKind::Add, "l1-a", 1, (1, 10)),
            entry(FileKind::Add, "l1-b", 1, (11, 20)),
            entry(FileKind::Add, "l2-a", 2, (1, 10)),
            entry(FileKind::Add, "l2-b", 2, (10, 20)), // shares key 10
        ];
        let pairs = overlapping_files(&files, &t).unwrap();
        let names: Vec<_> = pairs
            .iter()
            .map(|(a, b)| (a.file.file_name.as_str(), b.file.file_name.as_str()))
            .collect();
        assert_eq!(names, vec![("l2-a", "l2-b")]);
    }

    #[test]
    fn kinds_have_names_and_classes() {
        assert_eq!(ViolationKind::AddedTwice.as_str(), "added_twice");
        assert_eq!(ViolationKind::AddedTwice.class(), "replay");
        assert_eq!(ViolationKind::LevelOverlap.class(), "lsm");
        assert_eq!(
            ViolationKind::DeletionVectorRange.class(),
            "deletion_vectors"
        );
        assert_eq!(ViolationKind::FileSize.class(), "files");
        assert_eq!(ViolationKind::WrongBucket.class(), "buckets");
        assert_eq!(ViolationKind::HashIndexCount.as_str(), "hash_index_count");
        assert_eq!(ViolationKind::FileIndex.class(), "index");
        assert_eq!(
            ViolationKind::IcebergMissingFile.as_str(),
            "iceberg_missing_file"
        );
        assert_eq!(ViolationKind::IcebergSnapshot.class(), "iceberg");
    }
}
