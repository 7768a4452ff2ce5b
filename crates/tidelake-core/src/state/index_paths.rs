//! Where index files (deletion vectors, dynamic-bucket hash indexes) live (Java
//! `FileStorePathFactory.indexFileFactory`, `IndexInDataFileDirPathFactory`):
//! * by default in the table's `index/` directory: `index/<name>`;
//! * with `index-file-in-data-file-dir`, with the data files of their (partition, bucket):
//!   `<bucket directory>/<name>`, or, when new data files go to external roots
//!   (`data-file.external-paths`), under one of them like a data file
//!   ([`DataPath`]), that full path recorded as the file's `_EXTERNAL_PATH`.
//!
//! An index file with an external path is always there; one without is found from its name,
//! its bucket and the option (immutable, so the table's current schema decides for every
//! snapshot).
//!
//! Invariant: every reader, writer and deleter of index files (scans, writers, commits,
//! compaction, maintenance, Iceberg sync) locates them through [`IndexPaths`].

use std::sync::Arc;

use tidelake_spec::manifest::{IndexFileMeta, IndexManifestEntry};
use tidelake_spec::schema::TableSchema;

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::layout::{DataPath, NewFilePath, TableLayout};

/// Where index files live, relative to the table root, without the option.
pub(crate) const INDEX_DIR: &str = "index";

/// Where the index files of a table live (see the module docs); by default in `index/`.
#[derive(Clone, Debug, Default)]
pub(crate) struct IndexPaths {
    /// With `index-file-in-data-file-dir`: the bucket directories, and the roots new data files
    /// go to (empty: the table directory).
    in_data_dir: Option<(TableLayout, Arc<[String]>)>,
}

impl IndexPaths {
    /// The index file locations of tables with schema `schema`.
    pub(crate) fn new(schema: &TableSchema) -> Result<IndexPaths> {
        let options = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let in_data_dir = match options.index_file_in_data_file_dir().map_err(spec)? {
            false => None,
            true => Some((
                TableLayout::new(schema)?,
                options.data_file_write_roots().map_err(spec)?.into(),
            )),
        };
        Ok(IndexPaths { in_data_dir })
    }

    /// Where index file `file` of the bucket whose directory (relative to the table root) is
    /// `bucket_dir` lives: relative to the table root, or its external path.
    pub(crate) fn path(&self, bucket_dir: &str, file: &IndexFileMeta) -> String {
        match (&file.external_path, &self.in_data_dir) {
            (Some(p), _) => p.clone(),
            (None, None) => format!("{INDEX_DIR}/{}", file.file_name),
            (None, Some(_)) => in_dir(bucket_dir, &file.file_name),
        }
    }

    /// [`Self::path`] of index file `file` of (framed partition `partition`, `bucket`).
    pub(crate) fn bucket_file_path(
        &self,
        partition: &[u8],
        bucket: i32,
        file: &IndexFileMeta,
    ) -> Result<String> {
        let bucket_dir = match (&file.external_path, &self.in_data_dir) {
            (None, Some((layout, _))) => {
                layout.bucket_path(&layout.decode_partition(partition)?, bucket)?
            }
            _ => String::new(),
        };
        Ok(self.path(&bucket_dir, file))
    }

    /// [`Self::path`] of the file of index manifest entry `e`.
    pub(crate) fn entry_path(&self, e: &IndexManifestEntry) -> Result<String> {
        self.bucket_file_path(&e.partition, e.bucket, &e.index_file)
    }

    /// Where new index file `name` of the bucket whose directory is `bucket_dir` is written,
    /// and its `_EXTERNAL_PATH`.
    pub(crate) fn new_path(
        &self,
        io: &FileIO,
        bucket_dir: &str,
        name: &str,
    ) -> Result<NewFilePath> {
        Ok(match &self.in_data_dir {
            None => NewFilePath {
                path: format!("{INDEX_DIR}/{name}"),
                external: None,
            },
            Some((_, roots)) => DataPath::new(io, bucket_dir, roots.clone())?.next(name),
        })
    }
}

/// `name` in directory `dir` (relative to the table root; empty for the root).
fn in_dir(dir: &str, name: &str) -> String {
    match dir.trim_matches('/') {
        "" => name.to_string(),
        dir => format!("{dir}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use tidelake_spec::binary_row::encode_framed;
    use tidelake_spec::datum::Datum;
    use tidelake_spec::manifest::{FileKind, HASH_INDEX};
    use tidelake_spec::options::Options;
    use tidelake_spec::types::{DataField, DataType, TypeKind};

    use super::*;

    fn schema(options: &[(&str, &str)]) -> TableSchema {
        let field = |id, name: &str, kind| DataField {
            id,
            name: name.into(),
            data_type: DataType::not_null(kind),
            description: None,
            default_value: None,
        };
        let fields = vec![
            field(0, "k", TypeKind::BigInt),
            field(1, "dt", TypeKind::Int),
        ];
        let mut opts = Options::new();
        for (k, v) in options {
            opts.set(*k, *v);
        }
        TableSchema::new(
            0,
            fields,
            vec!["dt".into()],
            vec!["k".into(), "dt".into()],
            opts,
        )
        .unwrap()
    }

    fn file(name: &str, external: Option<&str>) -> IndexFileMeta {
        IndexFileMeta {
            index_type: HASH_INDEX.into(),
            file_name: name.into(),
            file_size: 4,
            row_count: 1,
            dv_ranges: None,
            external_path: external.map(str::to_string),
            global_index: None,
        }
    }

    fn entry(dt: i32, bucket: i32, index_file: IndexFileMeta) -> IndexManifestEntry {
        let partition =
            encode_framed(&[Datum::Int(dt)], &[DataType::not_null(TypeKind::Int)]).unwrap();
        IndexManifestEntry {
            kind: FileKind::Add,
            partition,
            bucket,
            index_file,
        }
    }

    #[test]
    fn by_default_index_files_live_in_the_index_directory() {
        let io = FileIO::open("/tmp/tl-table").unwrap();
        for paths in [
            IndexPaths::default(),
            IndexPaths::new(&schema(&[])).unwrap(),
            IndexPaths::new(&schema(&[("index-file-in-data-file-dir", "false")])).unwrap(),
        ] {
            assert_eq!(
                paths.path("dt=1/bucket-0", &file("index-a-0", None)),
                "index/index-a-0"
            );
            let e = entry(1, 0, file("index-a-1", None));
            assert_eq!(paths.entry_path(&e).unwrap(), "index/index-a-1");
            let new = paths.new_path(&io, "dt=1/bucket-0", "index-b-0").unwrap();
            assert_eq!(
                new,
                NewFilePath {
                    path: "index/index-b-0".into(),
                    external: None
                }
            );
        }
    }

    #[test]
    fn in_data_dir_index_files_live_in_their_bucket_directory() {
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let paths = IndexPaths::new(&schema(&[("index-file-in-data-file-dir", "TRUE")])).unwrap();
        assert_eq!(
            paths.path("dt=7/bucket-3", &file("index-a-0", None)),
            "dt=7/bucket-3/index-a-0"
        );
        let e = entry(7, 3, file("index-a-1", None));
        assert_eq!(paths.entry_path(&e).unwrap(), "dt=7/bucket-3/index-a-1");
        let new = paths.new_path(&io, "dt=7/bucket-3", "index-b-0").unwrap();
        assert_eq!(
            new,
            NewFilePath {
                path: "dt=7/bucket-3/index-b-0".into(),
                external: None
            }
        );
    }

    #[test]
    fn in_data_dir_with_external_roots_index_files_go_there_and_record_it() {
        let io = FileIO::open("/tmp/tl-table").unwrap();
        let paths = IndexPaths::new(&schema(&[
            ("index-file-in-data-file-dir", "true"),
            ("data-file.external-paths", "file:/tmp/tl-ext-a"),
            ("data-file.external-paths.strategy", "round-robin"),
        ]))
        .unwrap();
        let new = paths.new_path(&io, "dt=7/bucket-3", "index-b-0").unwrap();
        assert_eq!(new.path, "file:/tmp/tl-ext-a/dt=7/bucket-3/index-b-0");
        assert_eq!(new.external.as_deref(), Some(new.path.as_str()));
    }

    #[test]
    fn an_external_path_is_where_the_file_is_whatever_the_option() {
        let external = "file:/tmp/tl-ext-a/dt=7/bucket-3/index-a-0";
        for options in [&[][..], &[("index-file-in-data-file-dir", "true")][..]] {
            let paths = IndexPaths::new(&schema(options)).unwrap();
            let f = file("index-a-0", Some(external));
            assert_eq!(paths.path("dt=7/bucket-3", &f), external);
            assert_eq!(paths.entry_path(&entry(7, 3, f)).unwrap(), external);
        }
    }

    #[test]
    fn a_bad_option_value_names_the_option() {
        let err = IndexPaths::new(&schema(&[("index-file-in-data-file-dir", "yes")])).unwrap_err();
        assert!(
            err.to_string().contains("index-file-in-data-file-dir"),
            "{err}"
        );
    }
}
