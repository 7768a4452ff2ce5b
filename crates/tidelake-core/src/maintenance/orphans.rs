//! Removing orphan files: files no snapshot, tag or branch references, left by failed or
//! killed writers and by interrupted maintenance (Java `OrphanFilesClean`,
//! `LocalOrphanFilesClean`).
//!
//! Candidates, found by listing (Java `listPaimonFileDirs`): files directly in `manifest/`,
//! `index/` and `statistics/`; files directly in a bucket directory
//! (`<k=v>/…/bucket-<n>/`, as many `k=v` levels as partition keys; index files too with
//! `index-file-in-data-file-dir`); stray files in
//! `changelog/` (anything but `changelog-<N>` and the hints); files directly in a bucket
//! directory under every root `data-file.external-paths` lists, whatever the strategy (Java
//! lists `<root>/<k=v>/…/bucket-<n>/` too). Never: `schema/`, `snapshot/`,
//! `tag/`, `consumer/`, `branch/`, other directories, or files modified at or after the
//! cutoff — a writer's uncommitted files are protected by their age only.
//!
//! Referenced: every file name any manifest of any root names (added or deleted, data files
//! and extra files), every manifest list, manifest, index manifest, index file and statistics
//! file. Roots: all snapshots, tags and decoupled changelogs (`changelog/changelog-<N>`) of the
//! main branch and of every branch under `branch/branch-<name>/` (manifests and data are
//! shared by branches). Consumers only protect snapshots, which are roots anyway. Roots are
//! listed again after the scan so that a commit landing meanwhile protects its files.
//!
//! Symbolic links (local storage) are never followed: a file reached through a link, or that is
//! one, is left alone, since a link may lead out of the table.
//!
//! Deviation: Java refuses a cutoff in the future; it is accepted here (useful to clean right
//! after killing writers). Empty directories are left in place.

use std::collections::HashSet;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::branch::all_branch_ios;
use crate::changelogs::{changelog_id, CHANGELOG_DIR};
use crate::error::{Error, Result};
use crate::io::failpoint;
use crate::io::{FileIO, FileStatus};
use crate::layout::TableLayout;
use crate::maintenance::refs::{add_root, roots_of, MetaCache, References, STATISTICS_DIR};
use crate::state::{INDEX_DIR, MANIFEST_DIR};
use crate::table::Table;

/// One orphan file, found (and deleted unless it was a dry run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanFile {
    /// Path relative to the table root, or the full path of a file under an external root.
    pub path: String,
    pub size: u64,
}

/// Where a table's bucket directories are, below the table root or an external root:
/// `<data-file.path-directory>/<k=v>/…/bucket-<n>/`.
struct BucketDirs<'a> {
    partition_levels: usize,
    data_dir: Option<&'a str>,
}

impl BucketDirs<'_> {
    /// Whether `path` (relative to the table root) is a file orphan cleaning may consider.
    fn is_candidate(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        let Some((name, dirs)) = parts.split_last() else {
            return false;
        };
        match dirs {
            [dir] if [MANIFEST_DIR, INDEX_DIR, STATISTICS_DIR].contains(dir) => true,
            [dir] if *dir == CHANGELOG_DIR => {
                changelog_id(name).is_none() && *name != "EARLIEST" && *name != "LATEST"
            }
            _ => self.is_bucket_file(path),
        }
    }

    /// Whether `path` is a file directly in a bucket directory.
    fn is_bucket_file(&self, path: &str) -> bool {
        let path = match self.data_dir {
            Some(dir) => match path.strip_prefix(dir).and_then(|p| p.strip_prefix('/')) {
                Some(rest) => rest,
                None => return false,
            },
            None => path,
        };
        let parts: Vec<&str> = path.split('/').collect();
        let Some((name, dirs)) = parts.split_last() else {
            return false;
        };
        let levels = self.partition_levels;
        dirs.len() == levels + 1
            && dirs[..levels].iter().all(|d| d.contains('='))
            && dirs[levels].starts_with("bucket-")
            && !name.is_empty()
    }
}

/// Find (and unless `dry_run` delete) every orphan file last modified before `older_than_ms`.
pub async fn remove_orphan_files(
    table: &Table,
    older_than_ms: i64,
    dry_run: bool,
) -> Result<Vec<OrphanFile>> {
    let layout = TableLayout::new(table.schema())?;
    let dirs = BucketDirs {
        partition_levels: layout.partition_fields.len(),
        data_dir: layout.data_dir(),
    };
    let old = |f: &FileStatus| f.last_modified_ms < older_than_ms;
    // each file, with the handle of the external root it is under (`None`: in the table)
    let mut candidates: Vec<(FileStatus, Option<FileIO>)> = table
        .io()
        .list_recursive("")
        .await?
        .into_iter()
        .filter(|f| old(f) && dirs.is_candidate(&f.path))
        .map(|f| (f, None))
        .collect();
    let roots = table
        .schema()
        .options
        .data_file_external_roots()
        .map_err(|e| Error::from_spec("table options", e))?;
    for root in roots {
        let external = table.io().at(&root)?;
        for f in external.list_recursive("").await? {
            if old(&f) && dirs.is_bucket_file(&f.path) {
                candidates.push((f, Some(external.clone())));
            }
        }
    }
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut cache = MetaCache::new(table);
    let mut refs = References::default();
    let mut done: HashSet<(i64, String)> = HashSet::new();
    // Twice: the second pass adds roots committed while the first one ran.
    for _ in 0..2 {
        for (_, io) in all_branch_ios(table.io()).await? {
            for root in roots_of(&io).await? {
                if done.insert((root.snapshot.id, root.snapshot.base_manifest_list.clone())) {
                    add_root(&mut cache, &mut refs, &root).await?;
                }
            }
        }
    }
    let orphans: Vec<OrphanFile> = candidates
        .into_iter()
        .filter(|(f, external)| {
            f.path
                .rsplit('/')
                .next()
                .is_some_and(|name| !refs.contains(name))
                && !external
                    .as_ref()
                    .unwrap_or(table.io())
                    .through_link(&f.path)
        })
        .map(|(f, external)| OrphanFile {
            path: match external {
                Some(io) => io.display(&f.path),
                None => f.path,
            },
            size: f.size,
        })
        .collect();
    if !dry_run {
        failpoint!("orphans-before-delete");
        let io = table.io();
        let paths: Vec<String> = orphans.iter().map(|f| f.path.clone()).collect();
        stream::iter(paths)
            .map(|path| async move { io.delete(&path).await })
            .buffer_unordered(16)
            .try_collect::<Vec<()>>()
            .await?;
    }
    Ok(orphans)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::error::ErrorKind;
    use crate::io::FileIO;
    use crate::maintenance::refs::Root;
    use crate::schema_change::{create_table, TableSpec};
    use crate::snapshots::snapshot_path;
    use crate::test_support::write_and_commit;

    #[tokio::test]
    async fn a_root_deleted_while_it_is_read_protects_nothing_and_fails_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let io = FileIO::open(dir.path().to_str().unwrap()).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let spec = TableSpec {
            primary_keys: vec![],
            partition_keys: vec![],
            bucket: None,
            options: vec![],
            comment: None,
        };
        let table = create_table(io.clone(), &schema, &spec).await.unwrap();
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
        write_and_commit(&table, &batch, 0, "t").await;

        let root = Root {
            io: io.clone(),
            file: snapshot_path(1),
            snapshot: table.snapshot_manager().snapshot(1).await.unwrap(),
        };
        // Expiration got there first: the manifest lists are gone.
        io.delete(&format!(
            "{MANIFEST_DIR}/{}",
            root.snapshot.base_manifest_list
        ))
        .await
        .unwrap();
        let mut cache = MetaCache::new(&table);
        let mut refs = References::default();
        // While the snapshot exists, its missing metadata is damage: nothing may be deleted.
        let err = add_root(&mut cache, &mut refs, &root).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        // Once it is gone too, it was expired while being read: skipped.
        io.delete(&root.file).await.unwrap();
        add_root(&mut cache, &mut refs, &root).await.unwrap();
    }

    #[test]
    fn only_data_and_metadata_directories_are_candidates() {
        let dirs = |partition_levels, data_dir| BucketDirs {
            partition_levels,
            data_dir,
        };
        assert!(dirs(1, None).is_candidate("manifest/manifest-abc-0"));
        assert!(dirs(0, None).is_candidate("index/index-abc-0"));
        assert!(dirs(0, None).is_candidate("statistics/stat-abc-0"));
        assert!(dirs(1, None).is_candidate("dt=1/bucket-0/data-abc-0.parquet"));
        assert!(dirs(0, None).is_candidate("bucket-postpone/data-x.avro"));
        assert!(dirs(0, None).is_candidate("changelog/.changelog-3.tmp"));
        assert!(!dirs(0, None).is_candidate("changelog/changelog-3"));
        assert!(!dirs(0, None).is_candidate("changelog/LATEST"));
        assert!(!dirs(1, None).is_candidate("bucket-0/data-abc-0.parquet"));
        assert!(!dirs(0, None).is_candidate("dt=1/bucket-0/data-abc-0.parquet"));
        assert!(!dirs(0, None).is_candidate("snapshot/snapshot-1"));
        assert!(!dirs(0, None).is_candidate("schema/schema-0"));
        assert!(!dirs(0, None).is_candidate("tag/tag-a"));
        assert!(!dirs(0, None).is_candidate("consumer/consumer-a"));
        assert!(!dirs(0, None).is_candidate("branch/branch-b/snapshot/snapshot-1"));
        assert!(!dirs(0, None).is_candidate("README"));
        assert!(!dirs(0, None).is_candidate("manifest/sub/x"));
        // `data-file.path-directory`: bucket directories are below it, and only there
        let data = dirs(1, Some("data"));
        assert!(data.is_candidate("data/dt=1/bucket-0/data-abc-0.parquet"));
        assert!(data.is_candidate("manifest/manifest-abc-0"));
        assert!(!data.is_candidate("dt=1/bucket-0/data-abc-0.parquet"));
        assert!(!data.is_candidate("database/dt=1/bucket-0/data-abc-0.parquet"));
        assert!(dirs(0, Some("a/b")).is_bucket_file("a/b/bucket-1/f"));
    }
}
