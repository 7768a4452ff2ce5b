//! Storage access: every byte tidelake reads or writes goes through [`FileIO`], a table-rooted
//! view over an [`object_store::ObjectStore`].
//!
//! Invariants:
//! * paths given to [`FileIO`] are relative to the table (or warehouse) root and use `/`, or
//!   are absolute locations with a scheme (`file:/...`, `s3://bucket/...`: external data
//!   files) on the same storage as the root ([`FileIO::at`]); a location on other storage is
//!   [`Error::Unsupported`], never a path under the root;
//! * [`FileIO::put_if_absent`] is the only way snapshot and schema files are created: it never
//!   replaces an existing object (local: hard-link of a temp file; object stores: conditional put),
//!   which is what makes concurrent commits safe without a lock service;
//! * a missing object surfaces as [`Error::NotFound`] with the full path;
//! * a [`FileIO`] and every [`FileIO::child`] of it keep the storage options they were opened
//!   with, so a table can be re-opened elsewhere (splits, workers) with the same settings.
//!
//! Modules: [`location`] (locations and storage options to stores), [`paimon_s3`] (Paimon's
//! S3 catalog options as storage options), `instrumented` (counting and fault injection, test
//! builds only: feature `fault-injection`), [`local_file`] (local data files read in place),
//! [`read_cache`] (what long-lived readers keep of immutable files), [`env`] (the wall clock
//! and fresh ids a [`FileIO`] and every child of it carry).

pub mod env;
#[cfg(feature = "fault-injection")]
pub mod instrumented;

/// The named failpoints inside engine logic ([`failpoint!`]): a writer flushing a bucket;
/// around creating a snapshot file; before committing a compaction plan's results; expiry
/// between deleting snapshot files and the files only they referenced; orphan cleaning before
/// it deletes; a file-index rewrite between writing its index files and committing.
pub const FAILPOINTS: [&str; 7] = [
    "write-flush",
    "commit-before-snapshot",
    "commit-after-snapshot",
    "compact-before-commit",
    "expire-before-delete",
    "orphans-before-delete",
    "rewrite-file-index-before-commit",
];

/// Make failpoint `name` (one of [`FAILPOINTS`]) do `actions`, in the `fail` crate's syntax:
/// `panic`, `sleep(ms)`, `return` (fail as storage fails: an injected [`Error::Io`]), `off`,
/// with counts and chances such as `1*return` or `50%panic`. Development builds only (feature
/// `fault-injection`); elsewhere [`Error::Unsupported`].
pub fn set_failpoint(name: &str, actions: &str) -> Result<()> {
    if !FAILPOINTS.contains(&name) {
        return Err(Error::invalid(format!(
            "unknown failpoint '{name}'; failpoints are {}",
            FAILPOINTS.join(", ")
        )));
    }
    #[cfg(feature = "fault-injection")]
    {
        fail::cfg(name, actions).map_err(|e| Error::invalid(format!("failpoint '{name}': {e}")))
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        Err(Error::Unsupported(format!(
            "failpoint '{name}' = '{actions}': this build has no fault injection (a release build)"
        )))
    }
}

/// A named failpoint inside engine logic (the `fail` crate's `fail_point!`, one of
/// [`FAILPOINTS`]), where a test can make the engine panic, stall, or fail as storage fails
/// ([`set_failpoint`]). Compiled in with feature `fault-injection` only; a no-op otherwise.
/// Used in functions returning [`Result`].
macro_rules! failpoint {
    ($name:literal) => {
        fail::fail_point!($name, |_| Err($crate::error::Error::Io {
            path: format!("failpoint {}", $name),
            source: object_store::Error::Generic {
                store: "failpoint",
                source: format!("injected failure at failpoint {}", $name).into(),
            },
        }))
    };
}
pub(crate) use failpoint;
#[cfg(unix)]
pub mod local_file;
pub mod location;
pub mod paimon_s3;
pub mod read_cache;

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
pub use env::Env;
pub(crate) use env::{epoch_ms_of_local_wall, local_wall_ms};
#[cfg(unix)]
use local_file::LocalFile;
pub use location::{S3Credentials, StorageOptions};
pub use read_cache::ReadCache;

/// An I/O error of the local filesystem as object_store reports it.
fn local_io_error(e: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    }
}

/// The empty object that makes a directory exist on object stores (see [`FileIO::create_dir`]).
pub const DIR_MARKER: &str = ".tidelake-dir";

/// A table-rooted handle on an object store.
#[derive(Clone, Debug)]
pub struct FileIO {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// Human-readable location of the root (`/abs/dir` or `s3://bucket/prefix`), for messages.
    location: String,
    /// The root as a local directory, when the store is the local filesystem.
    local_root: Option<std::path::PathBuf>,
    /// The store as the plain local filesystem, when it is one (see [`FileIO::local_file`]).
    local_fs: Option<Arc<LocalFileSystem>>,
    /// The storage options the store was opened with.
    options: Arc<StorageOptions>,
    /// What readers keep of immutable files under the root, for long-lived readers
    /// ([`FileIO::with_read_cache`]); not passed on to [`FileIO::child`] handles.
    read_cache: Option<Arc<ReadCache>>,
    /// The clock and id generator of everything written through this handle and its children.
    env: Env,
}

/// One object found by [`FileIO::list`].
#[derive(Clone, Debug)]
pub struct FileStatus {
    /// Path relative to the listed directory's root (the [`FileIO`] root).
    pub path: String,
    pub size: u64,
    pub last_modified_ms: i64,
}

impl FileIO {
    /// Open a local path (absolute or relative) or a `file://` URL.
    pub fn open(location: &str) -> Result<Self> {
        Self::open_with(location, &StorageOptions::new())
    }

    /// Open any location [`location`] supports (`s3://bucket/prefix`, ...) with storage options.
    pub fn open_with(location: &str, options: &StorageOptions) -> Result<Self> {
        Self::resolved(location, options, None)
    }

    /// Open an S3 location with storage options, every request signed with `credentials`.
    pub fn open_signed(
        location: &str,
        options: &StorageOptions,
        credentials: &S3Credentials,
    ) -> Result<Self> {
        Self::resolved(location, options, Some(credentials))
    }

    fn resolved(
        location: &str,
        options: &StorageOptions,
        credentials: Option<&S3Credentials>,
    ) -> Result<Self> {
        let r = location::resolve(location, options, credentials)?;
        Ok(FileIO {
            store: r.store,
            root: r.root,
            location: r.location,
            local_root: r.local_root,
            local_fs: r.local_fs,
            options: Arc::new(options.clone()),
            read_cache: None,
            env: Env::default(),
        })
    }

    /// A handle on an existing store (tests, instrumented stores), rooted at `root`.
    pub fn from_store(store: Arc<dyn ObjectStore>, root: Path, location: &str) -> Self {
        FileIO {
            store,
            root,
            location: location.trim_end_matches('/').to_string(),
            local_root: None,
            local_fs: None,
            options: Arc::default(),
            read_cache: None,
            env: Env::default(),
        }
    }

    /// The storage options this handle was opened with.
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// A handle rooted at a sub-directory of this one.
    pub fn child(&self, rel: &str) -> FileIO {
        FileIO {
            store: self.store.clone(),
            root: join_verbatim(self.root.clone(), rel),
            location: format!("{}/{}", self.location, rel.trim_matches('/')),
            local_root: self
                .local_root
                .as_ref()
                .map(|r| r.join(rel.trim_matches('/'))),
            local_fs: self.local_fs.clone(),
            options: self.options.clone(),
            read_cache: None,
            env: self.env.clone(),
        }
    }

    /// This handle with `cache` for what readers derive from immutable files under the root
    /// (`None`: no cache).
    pub fn with_read_cache(&self, cache: Option<Arc<ReadCache>>) -> FileIO {
        FileIO {
            read_cache: cache,
            ..self.clone()
        }
    }

    /// The same handle with another clock and id generator (passed on to children).
    pub fn with_env(&self, env: Env) -> FileIO {
        FileIO {
            env,
            ..self.clone()
        }
    }

    /// The clock and id generator of this handle.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The read cache of this handle, if it has one.
    pub fn read_cache(&self) -> Option<&Arc<ReadCache>> {
        self.read_cache.as_ref()
    }

    /// The root location, for display.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The root as a local directory, `None` on an object store.
    pub fn local_root(&self) -> Option<&std::path::Path> {
        self.local_root.as_deref()
    }

    /// Whether the root is a regular local file (so nothing can be below it).
    pub fn root_is_file(&self) -> bool {
        self.local_root.as_ref().is_some_and(|p| p.is_file())
    }

    /// The underlying store (for readers that stream ranges, e.g. Parquet).
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// A handle rooted at absolute `location` (`file:/...`, `s3://bucket/...`) on the storage
    /// of this one, with its options; [`Error::Unsupported`] when `location` is on other
    /// storage (another scheme, bucket or container).
    pub fn at(&self, location: &str) -> Result<FileIO> {
        let (root, local_root) =
            location::on_same_storage(&self.location, self.local_root.is_some(), location)?;
        Ok(FileIO {
            store: self.store.clone(),
            root,
            location: location.trim_end_matches('/').to_string(),
            local_root,
            local_fs: self.local_fs.clone(),
            options: self.options.clone(),
            read_cache: None,
            env: self.env.clone(),
        })
    }

    /// Absolute object path of a root-relative path or of an absolute location on the same
    /// storage ([`FileIO::at`]).
    pub fn path(&self, rel: &str) -> Result<Path> {
        if is_location(rel) {
            return Ok(self.at(rel)?.root);
        }
        Ok(join_verbatim(self.root.clone(), rel))
    }

    /// Display form of a root-relative path (an absolute location as it is).
    pub fn display(&self, rel: &str) -> String {
        if is_location(rel) {
            return rel.to_string();
        }
        format!("{}/{}", self.location, rel)
    }

    fn io_err(&self, rel: &str, source: object_store::Error) -> Error {
        match source {
            object_store::Error::NotFound { .. } => Error::not_found("file", self.display(rel)),
            source => Error::Io {
                path: self.display(rel),
                source,
            },
        }
    }

    pub async fn read(&self, rel: &str) -> Result<Bytes> {
        let res = self
            .store
            .get(&self.path(rel)?)
            .await
            .map_err(|e| self.io_err(rel, e))?;
        res.bytes().await.map_err(|e| self.io_err(rel, e))
    }

    /// Read a file if it exists.
    pub async fn read_opt(&self, rel: &str) -> Result<Option<Bytes>> {
        match self.read(rel).await {
            Ok(b) => Ok(Some(b)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn exists(&self, rel: &str) -> Result<bool> {
        match self.store.head(&self.path(rel)?).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.io_err(rel, e)),
        }
    }

    /// Open `rel` to be read in place when the store is the plain local filesystem (`None`
    /// otherwise; see [`local_file`]).
    #[cfg(unix)]
    pub fn local_file(&self, rel: &str) -> Option<Result<LocalFile>> {
        let fs = self.local_fs.as_ref()?;
        Some(
            self.path(rel)
                .and_then(|p| LocalFile::open(fs, &p).map_err(|e| self.io_err(rel, e))),
        )
    }

    pub async fn size(&self, rel: &str) -> Result<u64> {
        let meta = self
            .store
            .head(&self.path(rel)?)
            .await
            .map_err(|e| self.io_err(rel, e))?;
        Ok(meta.size)
    }

    /// Write (create or replace) a file. Used for files with unique names and for hints.
    pub async fn write(&self, rel: &str, data: impl Into<Bytes>) -> Result<()> {
        self.store
            .put(&self.path(rel)?, PutPayload::from(data.into()))
            .await
            .map_err(|e| self.io_err(rel, e))?;
        Ok(())
    }

    /// Create a file only if nothing exists at `rel`. Returns `false` if it already existed.
    ///
    /// On object stores this is one conditional PUT (`If-None-Match: *`). A PUT whose response
    /// was lost is retried by the client and then answers "already exists" for our own object:
    /// an existing object with exactly our bytes is therefore reported as created (snapshot and
    /// schema files carry their commit user, identifier and time, so equal bytes are ours).
    pub async fn put_if_absent(&self, rel: &str, data: impl Into<Bytes>) -> Result<bool> {
        let data = data.into();
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&self.path(rel)?, PutPayload::from(data.clone()), opts)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(self
                .read_opt(rel)
                .await?
                .is_some_and(|existing| existing == data)),
            Err(e) => Err(self.io_err(rel, e)),
        }
    }

    pub async fn delete(&self, rel: &str) -> Result<()> {
        match self.store.delete(&self.path(rel)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.io_err(rel, e)),
        }
    }

    /// Copy file `from` to `to` (root-relative paths or absolute locations on this storage),
    /// never over an existing file ([`Error::AlreadyExists`]).
    pub async fn copy_file(&self, from: &str, to: &str) -> Result<()> {
        let (src, dst) = (self.path(from)?, self.path(to)?);
        self.refuse_existing(to, &dst).await?;
        self.store
            .copy(&src, &dst)
            .await
            .map_err(|e| self.io_err(from, e))
    }

    /// Move file `from` to `to` (root-relative paths or absolute locations on this storage),
    /// never over an existing file ([`Error::AlreadyExists`]): one rename on local storage, a
    /// copy and a delete on object stores (as Hadoop's S3A rename).
    pub async fn move_file(&self, from: &str, to: &str) -> Result<()> {
        let (src, dst) = (self.path(from)?, self.path(to)?);
        self.refuse_existing(to, &dst).await?;
        self.store
            .rename(&src, &dst)
            .await
            .map_err(|e| self.io_err(from, e))
    }

    async fn refuse_existing(&self, rel: &str, path: &Path) -> Result<()> {
        match self.store.head(path).await {
            Ok(_) => Err(Error::AlreadyExists(format!("file {}", self.display(rel)))),
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.io_err(rel, e)),
        }
    }

    /// Make directory `rel` exist. Object stores have no directories (a prefix exists once an
    /// object is under it, and object_store cannot write Hadoop's `dir/` marker keys), so there
    /// an empty [`DIR_MARKER`] object is written inside it.
    pub async fn create_dir(&self, rel: &str) -> Result<()> {
        if is_location(rel) {
            return Box::pin(self.at(rel)?.create_dir("")).await;
        }
        let Some(root) = &self.local_root else {
            return self
                .write(
                    &format!("{}/{DIR_MARKER}", rel.trim_matches('/')),
                    Bytes::new(),
                )
                .await;
        };
        let dir = root.join(rel.trim_matches('/'));
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| Error::Io {
                path: dir.display().to_string(),
                source: local_io_error(e),
            })
    }

    /// Delete every object below directory `rel` (and the directory itself on local storage).
    /// Locally this never follows a symbolic link: a link inside the directory is removed,
    /// never what it points to (listings follow links, so nothing listed is deleted here).
    pub async fn delete_dir(&self, rel: &str) -> Result<()> {
        if is_location(rel) {
            return Box::pin(self.at(rel)?.delete_dir("")).await;
        }
        let Some(root) = &self.local_root else {
            for f in self.list_recursive(rel).await? {
                self.delete(&f.path).await?;
            }
            return Ok(());
        };
        let dir = root.join(rel.trim_matches('/'));
        match tokio::fs::remove_dir_all(&dir).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::Io {
                path: dir.display().to_string(),
                source: local_io_error(e),
            }),
        }
    }

    /// Whether `rel`, or a directory between the root and it, is a symbolic link (local
    /// storage; object stores have no links). Listings follow links, so whatever deletes what
    /// it listed skips such paths: they may lead out of the table.
    pub fn through_link(&self, rel: &str) -> bool {
        let Some(root) = &self.local_root else {
            return false;
        };
        let mut path = root.clone();
        rel.split('/').filter(|s| !s.is_empty()).any(|part| {
            path.push(part);
            path.symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        })
    }

    /// One delimited listing of directory `rel`; a missing directory lists as empty.
    async fn list_delimited(&self, rel: &str) -> Result<object_store::ListResult> {
        match self.store.list_with_delimiter(Some(&self.path(rel)?)).await {
            Ok(r) => Ok(r),
            Err(object_store::Error::NotFound { .. }) => Ok(object_store::ListResult {
                objects: Vec::new(),
                common_prefixes: Vec::new(),
            }),
            Err(e) => Err(self.io_err(rel, e)),
        }
    }

    /// List the files directly inside directory `rel` (not recursive).
    pub async fn list_dir(&self, rel: &str) -> Result<Vec<FileStatus>> {
        Ok(self
            .list_delimited(rel)
            .await?
            .objects
            .into_iter()
            .map(|m| self.status(m))
            .collect())
    }

    /// List the sub-directory names directly inside directory `rel`.
    pub async fn list_subdirs(&self, rel: &str) -> Result<Vec<String>> {
        let res = self.list_delimited(rel).await?;
        Ok(res
            .common_prefixes
            .into_iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect())
    }

    /// List every file below directory `rel`, recursively.
    pub async fn list_recursive(&self, rel: &str) -> Result<Vec<FileStatus>> {
        let dir = self.path(rel)?;
        let metas: Vec<_> = match self.store.list(Some(&dir)).try_collect().await {
            Ok(m) => m,
            Err(object_store::Error::NotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(self.io_err(rel, e)),
        };
        Ok(metas.into_iter().map(|m| self.status(m)).collect())
    }

    fn status(&self, meta: object_store::ObjectMeta) -> FileStatus {
        let full = meta.location.as_ref();
        let root = self.root.as_ref();
        let rel = full
            .strip_prefix(root)
            .unwrap_or(full)
            .trim_start_matches('/')
            .to_string();
        FileStatus {
            path: rel,
            size: meta.size,
            last_modified_ms: meta.last_modified.timestamp_millis(),
        }
    }
}

/// Whether `path` is an absolute location with a scheme (`file:/x`, `s3://b/k`) rather than
/// a path relative to a root (whose first segment never holds a `:` before a `/`).
pub fn is_location(path: &str) -> bool {
    tidelake_spec::options::scheme(path).is_some()
}

/// `rel`'s segments joined onto `base`, each verbatim: Paimon's paths are already escaped
/// (partition values by Java's escapePathName); `PathPart::from` would percent-encode `%`,
/// `|`, `~`... a second time, putting files where Java and pypaimon do not look.
fn join_verbatim(mut p: Path, rel: &str) -> Path {
    for part in rel.split('/').filter(|s| !s.is_empty()) {
        p = match PathPart::parse(part) {
            Ok(verbatim) => p.join(verbatim),
            Err(_) => p.join(part),
        };
    }
    p
}

#[cfg(test)]
mod tests;
