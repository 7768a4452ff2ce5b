//! Where a writer puts each new data file of a bucket (Java `DataFilePathFactory.newPath` with
//! its `ExternalPathProvider`): under the table's bucket directory, or, when the table has
//! external roots ([`Options::data_file_write_roots`]), at
//! `<root>/<bucket directory relative to the table>/<name>`, the roots taken in turn from a
//! random one on.
//!
//! Invariants: every writer of data files (appends, primary-key flushes, changelog files,
//! compaction and resequencing output) chooses through a [`DataPath`]; a file written to a root
//! carries that full path as `_EXTERNAL_PATH`, which is then the only place it is looked for
//! ([`DataFileMeta::path`]); roots are checked once, when the [`DataPath`] is made, to be on the
//! table's storage (else [`Error::Unsupported`] naming `data-file.external-paths`).
//!
//! [`Options::data_file_write_roots`]: tidelake_spec::options::Options::data_file_write_roots
//! [`DataFileMeta::path`]: tidelake_spec::manifest::DataFileMeta::path

use std::sync::Arc;

use tidelake_spec::options::DATA_FILE_EXTERNAL_PATHS;

use crate::error::{Error, Result};
use crate::io::FileIO;

/// Where the next data file of one bucket goes (see the module docs).
#[derive(Clone, Debug)]
pub struct DataPath {
    /// The bucket directory, relative to the table root, without surrounding `/`.
    bucket_dir: String,
    /// The external roots, empty for none.
    roots: Arc<[String]>,
    /// The root the last file went to.
    position: usize,
}

/// One new data file's place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFilePath {
    /// Where to write it: relative to the table root, or its external path.
    pub path: String,
    /// `_EXTERNAL_PATH` of its metadata.
    pub external: Option<String>,
}

impl DataPath {
    /// Files of the bucket directory `bucket_dir` (relative to the table root), under the
    /// table or, with `roots`, external; the first root used is random (as Java's).
    pub fn new(io: &FileIO, bucket_dir: &str, roots: Arc<[String]>) -> Result<DataPath> {
        for root in roots.iter() {
            io.at(root).map_err(|e| {
                Error::Unsupported(format!(
                    "option '{DATA_FILE_EXTERNAL_PATHS}': root '{root}' cannot be written by \
                     this table's writers: {e}"
                ))
            })?;
        }
        let start = if roots.is_empty() {
            0
        } else {
            (io.env().uuid().as_u128() % roots.len() as u128) as usize
        };
        Ok(Self::starting_at(bucket_dir, roots, start))
    }

    fn starting_at(bucket_dir: &str, roots: Arc<[String]>, position: usize) -> DataPath {
        DataPath {
            bucket_dir: bucket_dir.trim_matches('/').to_string(),
            roots,
            position,
        }
    }

    /// Where new file `name` goes; with roots, the next root in turn (Java
    /// `ExternalPathProvider.getNextExternalDataPath`).
    pub fn next(&mut self, name: &str) -> NewFilePath {
        let dir = if self.roots.is_empty() {
            self.bucket_dir.clone()
        } else {
            self.position = (self.position + 1) % self.roots.len();
            format!("{}/{}", self.roots[self.position], self.bucket_dir)
        };
        let path = if dir.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", dir.trim_end_matches('/'))
        };
        NewFilePath {
            external: (!self.roots.is_empty()).then(|| path.clone()),
            path,
        }
    }
}

#[cfg(test)]
mod tests {
    use tidelake_spec::options::{
        Options, DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS, DATA_FILE_EXTERNAL_PATHS_STRATEGY,
    };

    use super::*;
    use crate::error::ErrorKind;

    fn roots(pairs: &[(&str, &str)]) -> Arc<[String]> {
        let mut options = Options::new();
        for (k, v) in pairs {
            options.set(*k, *v);
        }
        options.data_file_write_roots().unwrap().into()
    }

    const TWO: &str = "file:/tmp/tl-ext-a,file:///tmp/tl-ext-b/";

    #[test]
    fn round_robin_cycles_through_the_roots() {
        let roots = roots(&[
            (DATA_FILE_EXTERNAL_PATHS, TWO),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "round-robin"),
        ]);
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let mut path = DataPath::new(&io, "dt=1/bucket-0", roots).unwrap();
        let placed: Vec<NewFilePath> = (0..4).map(|i| path.next(&format!("f-{i}"))).collect();
        let dirs: Vec<&str> = placed
            .iter()
            .map(|p| p.path.rsplit_once("/dt=1/bucket-0/").unwrap().0)
            .collect();
        assert_ne!(dirs[0], dirs[1]);
        assert_eq!(dirs[0], dirs[2]);
        assert_eq!(dirs[1], dirs[3]);
        let mut both = dirs[..2].to_vec();
        both.sort_unstable();
        assert_eq!(both, ["file:/tmp/tl-ext-a", "file:/tmp/tl-ext-b"]);
        for p in &placed {
            assert_eq!(p.external.as_deref(), Some(p.path.as_str()));
        }
    }

    #[test]
    fn specific_fs_writes_to_its_roots_only() {
        let roots = roots(&[
            (DATA_FILE_EXTERNAL_PATHS, "s3://b/x,file:/tmp/tl-ext-a"),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "specific-fs"),
            (DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS, "file"),
        ]);
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let mut path = DataPath::new(&io, "bucket-1", roots).unwrap();
        for _ in 0..3 {
            assert_eq!(
                path.next("f").path,
                "file:/tmp/tl-ext-a/bucket-1/f".to_string()
            );
        }
    }

    #[test]
    fn strategy_none_keeps_files_in_the_table() {
        let roots = roots(&[(DATA_FILE_EXTERNAL_PATHS, TWO)]);
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let mut path = DataPath::new(&io, "/bucket-0/", roots).unwrap();
        assert_eq!(
            path.next("f"),
            NewFilePath {
                path: "bucket-0/f".into(),
                external: None
            }
        );
        let mut table = DataPath::new(&io, "bucket-0", Arc::from([])).unwrap();
        assert_eq!(table.next("g").path, "bucket-0/g");
    }

    #[test]
    fn roots_on_other_storage_name_the_option() {
        let roots = roots(&[
            (DATA_FILE_EXTERNAL_PATHS, "s3://b/x"),
            (DATA_FILE_EXTERNAL_PATHS_STRATEGY, "round-robin"),
        ]);
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let err = DataPath::new(&io, "bucket-0", roots).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert!(err.to_string().contains(DATA_FILE_EXTERNAL_PATHS), "{err}");
    }
}
