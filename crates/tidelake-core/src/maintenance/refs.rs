//! What snapshots reference, and deleting the files nothing references any more: the shared
//! machinery of expiration, tag deletion, rollback and orphan cleaning (Java
//! `FileDeletionBase`: `manifestSkippingSet`, `addMergedDataFiles`, `planManifestsCleaner`,
//! `cleanDataFiles`; `OrphanFilesClean.collectWithoutDataFileWithManifestFlag`).
//!
//! A snapshot (or a tag, which is a snapshot copy) references:
//! * metadata: its base, delta and changelog manifest lists, every manifest they list, its
//!   index manifest and every index file in it, its statistics file;
//! * data: the data files of its manifests (each with its `_EXTRA_FILES`) and the changelog
//!   files of its changelog manifests.
//!
//! Files are identified by *name*, as Java does (`OrphanFilesClean` compares names,
//! `FileDeletionBase` file names within a bucket): every Paimon file name carries a UUID, so
//! names are unique across the table. A file stored under an external path (`_EXTERNAL_PATH`)
//! is deleted there, its extra files next to it (Java `DataFilePathFactory.toPath` and
//! `toAlignedPath`, [`DataFileMeta::path`](tidelake_spec::manifest::DataFileMeta::path)); an
//! index file where [`IndexPaths`] says it is (`index/`, its bucket directory with
//! `index-file-in-data-file-dir`, or its external path; Java `IndexFileHandler.deleteIndexFile`).
//!
//! Invariant: [`delete_unreferenced`] deletes a candidate only if its name is absent from the
//! [`References`] built from everything that must survive; callers build that set from every
//! retained root before deleting anything.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use tidelake_spec::manifest::{FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta};
use tidelake_spec::snapshot::{Snapshot, Tag};

use crate::branch::all_branch_ios;
use crate::changelogs::{changelog_path, ChangelogStore, CHANGELOG_DIR};
use crate::error::{Error, ErrorKind, Result};
use crate::io::FileIO;
use crate::layout::TableLayout;
use crate::snapshots::{snapshot_path, tag_path, SnapshotManager};
use crate::state::{
    read_entries, read_index, read_list, IndexPaths, LiveFiles, Pruning, MANIFEST_DIR,
};
use crate::table::Table;

pub(crate) const STATISTICS_DIR: &str = "statistics";

/// How many files are read or deleted at once.
const PARALLELISM: usize = 16;

/// Decoded manifest lists, manifests and index manifests, each read at most once per
/// maintenance operation (snapshots share most of their manifests).
pub(crate) struct MetaCache<'a> {
    table: &'a Table,
    lists: HashMap<String, Arc<Vec<ManifestFileMeta>>>,
    manifests: HashMap<String, Arc<Vec<ManifestEntry>>>,
    indexes: HashMap<String, Arc<Vec<IndexManifestEntry>>>,
}

impl<'a> MetaCache<'a> {
    pub(crate) fn new(table: &'a Table) -> Self {
        MetaCache {
            table,
            lists: HashMap::new(),
            manifests: HashMap::new(),
            indexes: HashMap::new(),
        }
    }

    /// Manifest list `name`.
    pub(crate) async fn list(&mut self, name: &str) -> Result<Arc<Vec<ManifestFileMeta>>> {
        if let Some(list) = self.lists.get(name) {
            return Ok(list.clone());
        }
        let list = Arc::new(read_list(self.table, name).await?);
        self.lists.insert(name.to_string(), list.clone());
        Ok(list)
    }

    /// Manifest list `name`, with every manifest it lists read into the cache.
    async fn load_list(&mut self, name: &str) -> Result<Arc<Vec<ManifestFileMeta>>> {
        let metas = self.list(name).await?;
        let missing: Vec<String> = metas
            .iter()
            .map(|m| m.file_name.clone())
            .filter(|n| !self.manifests.contains_key(n))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let table = self.table;
        let fetched: Vec<(String, Vec<ManifestEntry>)> = stream::iter(missing)
            .map(|n| async move { read_entries(table, &n).await.map(|e| (n, e)) })
            .buffer_unordered(PARALLELISM)
            .try_collect()
            .await?;
        for (name, entries) in fetched {
            self.manifests.insert(name, Arc::new(entries));
        }
        Ok(metas)
    }

    /// The cached entries of `metas`, in order, each tagged with its manifest's name.
    fn sourced<'m>(
        &'m self,
        metas: impl Iterator<Item = &'m ManifestFileMeta> + 'm,
    ) -> impl Iterator<Item = (Option<&'m str>, ManifestEntry)> + 'm {
        metas.flat_map(move |m| {
            let entries = self
                .manifests
                .get(&m.file_name)
                .map(|e| e.iter())
                .into_iter()
                .flatten();
            entries.map(move |e| (Some(m.file_name.as_str()), e.clone()))
        })
    }

    /// Every entry of every manifest of list `name`, in list order.
    pub(crate) async fn list_entries(&mut self, name: &str) -> Result<Vec<ManifestEntry>> {
        let metas = self.load_list(name).await?;
        Ok(self.sourced(metas.iter()).map(|(_, e)| e).collect())
    }

    /// Every entry of index manifest `name`.
    pub(crate) async fn index(&mut self, name: &str) -> Result<Arc<Vec<IndexManifestEntry>>> {
        if let Some(entries) = self.indexes.get(name) {
            return Ok(entries.clone());
        }
        let entries = Arc::new(read_index(self.table, name).await?);
        self.indexes.insert(name.to_string(), entries.clone());
        Ok(entries)
    }

    /// The live data files of `snap` ([`LiveFiles`] of its base then delta list, from the
    /// cached manifests), bucket by bucket.
    pub(crate) async fn live_entries(&mut self, snap: &Snapshot) -> Result<Vec<ManifestEntry>> {
        let base = self.load_list(&snap.base_manifest_list).await?;
        let delta = self.load_list(&snap.delta_manifest_list).await?;
        let entries = self.sourced(base.iter().chain(delta.iter()));
        Ok(LiveFiles::from_entries(entries, &mut Pruning::all())?.into_entries())
    }

    /// The changelog files `snap` added.
    pub(crate) async fn changelog_entries(
        &mut self,
        snap: &Snapshot,
    ) -> Result<Vec<ManifestEntry>> {
        match &snap.changelog_manifest_list {
            Some(list) => Ok(self
                .list_entries(list)
                .await?
                .into_iter()
                .filter(|e| e.kind == FileKind::Add)
                .collect()),
            None => Ok(Vec::new()),
        }
    }
}

/// `Ok(T::default())` for a missing file: used where Java tolerates metadata an interrupted
/// earlier run already deleted (`FileDeletionBase.tryReadManifestList`).
pub(crate) fn or_missing<T: Default>(result: Result<T>) -> Result<T> {
    match result {
        Err(Error::NotFound { .. }) => Ok(T::default()),
        other => other,
    }
}

fn tolerate<T: Default>(tolerate_missing: bool, result: Result<T>) -> Result<T> {
    if tolerate_missing {
        or_missing(result)
    } else {
        result
    }
}

/// What kind of file a [`Candidate`] is (for the counts callers report).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FileCategory {
    Data,
    Changelog,
    /// Manifest lists, manifests and index manifests.
    Manifest,
    Index,
    Statistics,
}

/// A file that may be deleted once nothing references it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Candidate {
    /// Path relative to the table root, or an external path.
    pub(crate) path: String,
    /// The name references are compared with.
    pub(crate) name: String,
    pub(crate) category: FileCategory,
    /// An earlier (interrupted or partial) run may have deleted it already: it is counted only
    /// if it still exists, so the counts say what this run removed.
    pub(crate) maybe_gone: bool,
}

/// How many files of each kind a maintenance operation deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletedFiles {
    pub data_files: u64,
    pub changelog_files: u64,
    /// Manifest lists, manifests and index manifests.
    pub manifest_files: u64,
    pub index_files: u64,
    pub statistics_files: u64,
}

impl DeletedFiles {
    /// Add `other`'s counts to these.
    pub(crate) fn add(&mut self, other: &DeletedFiles) {
        self.data_files += other.data_files;
        self.changelog_files += other.changelog_files;
        self.manifest_files += other.manifest_files;
        self.index_files += other.index_files;
        self.statistics_files += other.statistics_files;
    }

    fn count(&mut self, category: FileCategory) {
        let slot = match category {
            FileCategory::Data => &mut self.data_files,
            FileCategory::Changelog => &mut self.changelog_files,
            FileCategory::Manifest => &mut self.manifest_files,
            FileCategory::Index => &mut self.index_files,
            FileCategory::Statistics => &mut self.statistics_files,
        };
        *slot += 1;
    }
}

/// The metadata files of `snap`: lists, their manifests, index manifest, index files and
/// statistics. Missing lists/index manifests yield nothing when `tolerate_missing`.
pub(crate) async fn metadata_files(
    cache: &mut MetaCache<'_>,
    snap: &Snapshot,
    tolerate_missing: bool,
) -> Result<Vec<Candidate>> {
    metadata_files_of(cache, snap, tolerate_missing, Lists::All).await
}

/// Which manifest lists (with their manifests) [`metadata_files_of`] includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lists {
    All,
    /// Base and delta lists, not the changelog list (kept by a long-lived changelog).
    Data,
    /// None: a long-lived changelog keeps all three.
    None,
}

/// [`metadata_files`] with only the manifest lists `lists` selects.
pub(crate) async fn metadata_files_of(
    cache: &mut MetaCache<'_>,
    snap: &Snapshot,
    tolerate_missing: bool,
    lists: Lists,
) -> Result<Vec<Candidate>> {
    let meta = |name: &str, dir: &str, category| Candidate {
        path: format!("{dir}/{name}"),
        name: name.to_string(),
        category,
        maybe_gone: false,
    };
    let mut out = Vec::new();
    let data = lists != Lists::None;
    let selected = [
        Some(&snap.base_manifest_list).filter(|_| data),
        Some(&snap.delta_manifest_list).filter(|_| data),
        snap.changelog_manifest_list
            .as_ref()
            .filter(|_| lists == Lists::All),
    ];
    for list in selected.into_iter().flatten() {
        out.push(meta(list, MANIFEST_DIR, FileCategory::Manifest));
        let metas = tolerate(tolerate_missing, cache.list(list).await)?;
        out.extend(
            metas
                .iter()
                .map(|m| meta(&m.file_name, MANIFEST_DIR, FileCategory::Manifest)),
        );
    }
    if let Some(index) = &snap.index_manifest {
        out.push(meta(index, MANIFEST_DIR, FileCategory::Manifest));
        let entries = tolerate(tolerate_missing, cache.index(index).await)?;
        let paths = IndexPaths::new(cache.table.schema())?;
        for e in entries.iter() {
            out.push(Candidate {
                path: paths.entry_path(e)?,
                name: e.index_file.file_name.clone(),
                category: FileCategory::Index,
                maybe_gone: false,
            });
        }
    }
    if let Some(stats) = &snap.statistics {
        out.push(meta(stats, STATISTICS_DIR, FileCategory::Statistics));
    }
    Ok(out)
}

/// The files of data or changelog `entries`, with their extra files (external ones where
/// they are).
pub(crate) fn data_files(
    layout: &TableLayout,
    entries: &[ManifestEntry],
    category: FileCategory,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    let mut dirs: HashMap<(Vec<u8>, i32), String> = HashMap::new();
    for e in entries {
        let key = (e.partition.clone(), e.bucket);
        let dir = match dirs.get(&key) {
            Some(d) => d.clone(),
            None => {
                let d = layout.bucket_path(&layout.decode_partition(&e.partition)?, e.bucket)?;
                dirs.insert(key, d.clone());
                d
            }
        };
        for (i, name) in std::iter::once(&e.file.file_name)
            .chain(&e.file.extra_files)
            .enumerate()
        {
            out.push(Candidate {
                path: match i {
                    0 => e.file.path(&dir),
                    _ => e.file.aligned_path(&dir, name),
                },
                name: name.clone(),
                category,
                maybe_gone: false,
            });
        }
    }
    Ok(out)
}

/// Which data files of a root count as referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataScope {
    /// Files the delta list adds, plus changelog files: enough for a snapshot whose
    /// predecessor's live files are referenced too.
    Delta,
    /// The live files (base + delta replayed), plus changelog files.
    Live,
    /// Every file any of its manifests names, added or deleted (orphan cleaning).
    All,
}

/// Names of every file some set of roots references.
#[derive(Debug, Default)]
pub(crate) struct References {
    names: HashSet<String>,
    /// Manifests every entry of which is in `names` ([`DataScope::All`]): manifests are
    /// immutable, so each is read once however many roots list it (Java `OrphanFilesClean`
    /// reads each manifest name once too), and its entries are not kept.
    manifests_named: HashSet<String>,
}

impl References {
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Add what `snap` references. Metadata that cannot be read is an error: a reference set
    /// that may be incomplete must never authorise a deletion.
    pub(crate) async fn add(
        &mut self,
        cache: &mut MetaCache<'_>,
        snap: &Snapshot,
        scope: DataScope,
    ) -> Result<()> {
        for c in metadata_files(cache, snap, false).await? {
            self.names.insert(c.name);
        }
        let data = match scope {
            DataScope::Delta => cache
                .list_entries(&snap.delta_manifest_list)
                .await?
                .into_iter()
                .filter(|e| e.kind == FileKind::Add)
                .collect(),
            DataScope::Live => cache.live_entries(snap).await?,
            DataScope::All => {
                self.add_manifests(cache, snap).await?;
                Vec::new()
            }
        };
        let changelog = cache.changelog_entries(snap).await?;
        for e in data.iter().chain(&changelog) {
            self.names.insert(e.file.file_name.clone());
            self.names.extend(e.file.extra_files.iter().cloned());
        }
        Ok(())
    }

    /// Add every file a manifest of `snap`'s base or delta list names, added or deleted,
    /// reading only manifests not named yet.
    async fn add_manifests(&mut self, cache: &mut MetaCache<'_>, snap: &Snapshot) -> Result<()> {
        let base = cache.list(&snap.base_manifest_list).await?;
        let delta = cache.list(&snap.delta_manifest_list).await?;
        let unseen: HashSet<String> = base
            .iter()
            .chain(delta.iter())
            .map(|m| m.file_name.clone())
            .filter(|n| !self.manifests_named.contains(n))
            .collect();
        let table = cache.table;
        let mut fetched = stream::iter(unseen)
            .map(|n| async move { read_entries(table, &n).await.map(|e| (n, e)) })
            .buffer_unordered(PARALLELISM);
        while let Some((name, entries)) = fetched.try_next().await? {
            for e in entries {
                self.names.insert(e.file.file_name);
                self.names.extend(e.file.extra_files);
            }
            self.manifests_named.insert(name);
        }
        Ok(())
    }
}

impl References {
    /// Add what long-lived changelog `changelog` references. Java's snapshot expiry drops the
    /// base and delta lists of a table with a changelog producer (only the changelog list is
    /// kept) and the index manifest and statistics of every table, so those that are gone are
    /// skipped (Java `ChangelogDeletion` checks `manifestList.exists`); its changelog list must
    /// be readable.
    pub(crate) async fn add_changelog(
        &mut self,
        cache: &mut MetaCache<'_>,
        changelog: &Snapshot,
    ) -> Result<()> {
        for c in metadata_files(cache, changelog, true).await? {
            self.names.insert(c.name);
        }
        let mut data = or_missing(cache.list_entries(&changelog.base_manifest_list).await)?;
        data.extend(or_missing(
            cache.list_entries(&changelog.delta_manifest_list).await,
        )?);
        data.extend(cache.changelog_entries(changelog).await?);
        for e in &data {
            self.names.insert(e.file.file_name.clone());
            self.names.extend(e.file.extra_files.iter().cloned());
        }
        Ok(())
    }
}

/// Protect everything the long-lived changelogs of the branch rooted at `io` reference (for
/// deletions that do not otherwise account for them: tag deletion, and snapshot expiry once
/// the changelog is no longer decoupled). One that vanished meanwhile (changelog expiry)
/// protects nothing.
pub(crate) async fn protect_long_lived_changelogs(
    cache: &mut MetaCache<'_>,
    refs: &mut References,
    io: &FileIO,
) -> Result<()> {
    let store = ChangelogStore::new(io.clone());
    for id in store.list_ids().await? {
        if let Some(changelog) = store.read(id).await? {
            let root = Root {
                io: io.clone(),
                file: changelog_path(id),
                snapshot: changelog,
            };
            add_root(cache, refs, &root).await?;
        }
    }
    Ok(())
}

/// A snapshot-format root and the file it was read from (relative to `io`, its branch root).
pub(crate) struct Root {
    pub(crate) io: FileIO,
    pub(crate) file: String,
    pub(crate) snapshot: Snapshot,
}

/// Snapshot-format roots of the branch rooted at `io`: snapshots, tags and decoupled
/// changelogs. Files deleted while listing (concurrent expiration) are skipped.
pub(crate) async fn roots_of(io: &FileIO) -> Result<Vec<Root>> {
    let sm = SnapshotManager::new(io.clone());
    let mut paths: Vec<String> = sm
        .list_ids()
        .await?
        .into_iter()
        .map(snapshot_path)
        .collect();
    let changelogs = ChangelogStore::new(io.clone()).list_ids().await?;
    paths.extend(changelogs.into_iter().map(changelog_path));
    paths.extend(sm.tag_names().await?.iter().map(|name| tag_path(name)));
    let roots: Vec<Option<Root>> = stream::iter(paths)
        .map(|file| async move {
            let Some(bytes) = io.read_opt(&file).await? else {
                return Ok(None);
            };
            let snapshot = if file.starts_with("tag/") {
                Tag::from_json(&bytes).map(|t| t.snapshot)
            } else {
                Snapshot::from_json(&bytes)
            };
            let snapshot = snapshot.map_err(|e| Error::from_spec(io.display(&file), e))?;
            Ok::<_, Error>(Some(Root {
                io: io.clone(),
                file,
                snapshot,
            }))
        })
        .buffered(PARALLELISM)
        .try_collect()
        .await?;
    Ok(roots.into_iter().flatten().collect())
}

/// Add everything `root` references. A root whose metadata vanished because the root itself
/// was deleted meanwhile (snapshot expiration, tag deletion) protects nothing: what it
/// referenced is either referenced by a remaining root too or being deleted by whoever deleted
/// it. Metadata missing from a root that still exists is an error, as any unreadable root.
pub(crate) async fn add_root(
    cache: &mut MetaCache<'_>,
    refs: &mut References,
    root: &Root,
) -> Result<()> {
    let added = if root.file.starts_with(CHANGELOG_DIR) {
        refs.add_changelog(cache, &root.snapshot).await
    } else {
        refs.add(cache, &root.snapshot, DataScope::All).await
    };
    match added {
        Err(e) if e.kind() == ErrorKind::NotFound && !root.io.exists(&root.file).await? => Ok(()),
        other => other,
    }
}

/// Protect everything the branches other than `table`'s reference: data and metadata files
/// are shared by branches, while expiration, tag deletion and rollback only look at their own
/// branch. Callers run this after deleting their snapshot or tag files, so a branch created
/// from one of them meanwhile is either seen here or fails its own check (see
/// [`crate::branch`]).
pub(crate) async fn protect_other_branches(
    cache: &mut MetaCache<'_>,
    refs: &mut References,
    table: &Table,
) -> Result<()> {
    for (name, io) in all_branch_ios(table.io()).await? {
        if name == table.branch() {
            continue;
        }
        for root in roots_of(&io).await? {
            add_root(cache, refs, &root).await?;
        }
    }
    Ok(())
}

/// The candidates (once per path) whose name `refs` does not contain and that exist, unless
/// they are [`Candidate::maybe_gone`] and gone (one existence check each).
async fn unreferenced(
    io: &FileIO,
    candidates: Vec<Candidate>,
    refs: &References,
) -> Result<Vec<Candidate>> {
    let mut seen = HashSet::new();
    let doomed = candidates
        .into_iter()
        .filter(|c| !refs.contains(&c.name) && seen.insert(c.path.clone()));
    let present: Vec<Option<Candidate>> = stream::iter(doomed)
        .map(|c| async move {
            if c.maybe_gone && !io.exists(&c.path).await? {
                return Ok(None);
            }
            Ok(Some(c))
        })
        .buffer_unordered(PARALLELISM)
        .try_collect()
        .await?;
    Ok(present.into_iter().flatten().collect())
}

fn count_categories(categories: impl IntoIterator<Item = FileCategory>) -> DeletedFiles {
    let mut counts = DeletedFiles::default();
    for c in categories {
        counts.count(c);
    }
    counts
}

/// Delete every candidate (once per path) whose name `refs` does not contain.
pub(crate) async fn delete_unreferenced(
    io: &FileIO,
    candidates: Vec<Candidate>,
    refs: &References,
) -> Result<DeletedFiles> {
    let categories: Vec<FileCategory> = stream::iter(unreferenced(io, candidates, refs).await?)
        .map(|c| async move { io.delete(&c.path).await.map(|()| c.category) })
        .buffer_unordered(PARALLELISM)
        .try_collect()
        .await?;
    Ok(count_categories(categories))
}

/// What [`delete_unreferenced`] would delete, deleting nothing.
pub(crate) async fn count_unreferenced(
    io: &FileIO,
    candidates: Vec<Candidate>,
    refs: &References,
) -> Result<DeletedFiles> {
    let doomed = unreferenced(io, candidates, refs).await?;
    Ok(count_categories(doomed.into_iter().map(|c| c.category)))
}
