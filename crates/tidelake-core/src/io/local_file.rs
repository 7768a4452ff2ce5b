//! Local data files read in place, on the reading thread.
//!
//! object_store's local store runs every read on tokio's blocking pool. For page-cached bytes
//! the hop costs more than the read, and each pool thread allocates the bytes it read in its
//! own malloc arena, so a merge holding many files open spreads its buffers over many arenas
//! (RSS well above the live heap). Data-file readers therefore read local files with `pread`
//! on their own thread (see `read::data_file`); metadata and every write still go through the
//! object store.
//!
//! Invariants: a [`LocalFile`] is opened at the path object_store itself maps the object path
//! to ([`LocalFileSystem::path_to_filesystem`]), so both see the same file; a read past the end
//! is an error, never a short buffer.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::path::Path;

use super::local_io_error;

/// An open local file and its size at opening.
#[derive(Debug)]
pub struct LocalFile {
    file: File,
    size: u64,
}

impl LocalFile {
    /// Open `location` of `fs` (a missing file is `object_store::Error::NotFound`).
    pub(super) fn open(fs: &LocalFileSystem, location: &Path) -> object_store::Result<LocalFile> {
        let path = fs.path_to_filesystem(location)?;
        let file = File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => object_store::Error::NotFound {
                path: path.display().to_string(),
                source: Box::new(e),
            },
            _ => local_io_error(e),
        })?;
        let size = file.metadata().map_err(local_io_error)?.len();
        Ok(LocalFile { file, size })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The bytes of `range`.
    pub fn read_range(&self, range: Range<u64>) -> object_store::Result<Bytes> {
        let len = usize::try_from(range.end.saturating_sub(range.start))
            .map_err(|e| local_io_error(std::io::Error::other(e)))?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, range.start)
            .map_err(local_io_error)?;
        Ok(Bytes::from(buf))
    }
}
