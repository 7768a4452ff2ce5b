//! Taking data files written elsewhere into an append table as they are (Java
//! `FileMetaUtils` with `HiveMigrator.MigrateTask`): the file step of migrating a Hive table
//! (files moved) and of cloning one (files copied).
//!
//! Each source is a directory of one partition's files in one format; every file directly in
//! it, except hidden ones (names starting with `_` or `.`, Java's `HIDDEN_PATH_FILTER`) and
//! directories, goes to bucket 0 of its partition under the table, keeping its name when moved
//! (the format's extension added when missing, as Java's `renameFile`; a copy is named as the
//! table's writers name files, since an earlier copy may still be live), and is described from its
//! rows ([`imported_file_meta`]); [`ImportFiles::partitions`] selects sources by partition.
//! One snapshot then adds them all: an APPEND, or, when
//! [`ImportFiles::overwriting`], an OVERWRITE of the partitions imported into (Java's clone).
//!
//! Invariants: only bucket-unaware append tables take files (Java `checkPaimonTable`); nothing
//! is committed unless every file was taken and described; when anything fails, moved files
//! go back where they were and copies are deleted (Java's rollback), unless the commit landed.
//! A file whose name is taken in its bucket directory is never overwritten.

use std::collections::BTreeSet;

use futures::stream::{self, StreamExt};
use tidelake_spec::binary_row::encode_framed;
use tidelake_spec::datum::Datum;

use crate::commit::{CommitMessage, Committed, OverwriteScope, PartitionMatcher};
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::read::data_file::FileFormat;
use crate::scan::predicate::Predicate;
use crate::table::Table;
use crate::write::file_writer::imported_file_meta;

use super::TableCommit;

/// Files taken (moved or copied, then described) at once.
const CONCURRENCY: usize = 4;
/// The bucket imported files go to (Java `bucketPath(partition, 0)`), and the bucket count
/// their entries carry (the table's `bucket`, which must be -1).
const BUCKET: i32 = 0;
const UNAWARE: i32 = -1;

/// How files come into the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transfer {
    Move,
    Copy,
}

/// One directory of data files: the partition they belong to (values in partition-key
/// order; empty for an unpartitioned table), its absolute location, their format.
#[derive(Clone, Debug)]
pub struct ImportSource {
    pub partition: Vec<Datum>,
    pub location: String,
    pub format: FileFormat,
}

/// One file being taken: where it was, where it goes (relative to the table).
struct Taken {
    origin: String,
    target: String,
    partition: Vec<u8>,
}

/// Taking the files of [`ImportSource`]s into a table (see the module docs). Built with
/// [`ImportFiles::new`]; files are moved unless [`ImportFiles::copying`].
pub struct ImportFiles {
    table: Table,
    sources: Vec<ImportSource>,
    transfer: Transfer,
    overwrite: bool,
    unstored: Vec<String>,
    partitions: Option<Predicate>,
}

impl ImportFiles {
    pub fn new(table: &Table) -> ImportFiles {
        ImportFiles {
            table: table.clone(),
            sources: Vec::new(),
            transfer: Transfer::Move,
            overwrite: false,
            unstored: Vec::new(),
            partitions: None,
        }
    }

    pub fn source(mut self, source: ImportSource) -> ImportFiles {
        self.sources.push(source);
        self
    }

    /// Copy the files, leaving the sources as they are.
    pub fn copying(mut self) -> ImportFiles {
        self.transfer = Transfer::Copy;
        self
    }

    /// Replace the rows of the partitions imported into (one OVERWRITE snapshot).
    pub fn overwriting(mut self) -> ImportFiles {
        self.overwrite = true;
        self
    }

    /// Only the sources of partitions `filter` (on partition columns) selects.
    pub fn partitions(mut self, filter: Predicate) -> ImportFiles {
        self.partitions = Some(filter);
        self
    }

    /// The files hold no partition columns (a Hive table's layout): those columns get no
    /// statistics.
    pub fn without_partition_columns(mut self) -> ImportFiles {
        self.unstored = self.table.schema().partition_keys.clone();
        self
    }

    /// Take every file and commit them (see the module docs); `None` when the sources hold
    /// no file.
    pub async fn run(self) -> Result<Option<Committed>> {
        let table = self.table.reopen().await?;
        check_target(&table)?;
        let files = self.list(&table).await?;
        if files.is_empty() {
            return Ok(None);
        }
        let results: Vec<(Option<Taken>, Result<CommitMessage>)> = stream::iter(files)
            .map(|file| self.take(&table, file))
            .buffered(CONCURRENCY)
            .collect()
            .await;
        let mut taken = Vec::new();
        let mut messages = Vec::new();
        let mut failure = None;
        for (file, message) in results {
            taken.extend(file);
            match message {
                Ok(m) => messages.push(m),
                Err(e) => failure = failure.or(Some(e)),
            }
        }
        if let Some(e) = failure {
            self.undo(&table, &taken).await;
            return Err(e);
        }
        let user = format!("tidelake-import-{}", table.env().uuid());
        let commit = TableCommit::new(table.clone(), user);
        let committed = if self.overwrite {
            let layout = TableLayout::new(table.schema())?;
            let partitions: BTreeSet<Vec<u8>> = taken.iter().map(|t| t.partition.clone()).collect();
            let scope = OverwriteScope::of_partitions(&layout, &partitions)?;
            commit.overwrite(scope, messages).await
        } else {
            commit.append(messages).await
        };
        if committed.is_err() && commit.landed().await == Some(false) {
            self.undo(&table, &taken).await;
        }
        committed.map(Some)
    }

    /// Every file to take: (source, origin location, target path), in source order.
    async fn list(&self, table: &Table) -> Result<Vec<(ImportSource, String, String, Vec<u8>)>> {
        let layout = TableLayout::new(table.schema())?;
        let mut selected = PartitionMatcher::of_predicate(&layout, self.partitions.as_ref())?;
        let mut files = Vec::new();
        let mut targets = BTreeSet::new();
        let prefix = table.schema().options().data_file_prefix();
        let uuid = table.env().uuid();
        for source in &self.sources {
            let partition = encode_framed(&source.partition, &layout.partition_types)
                .map_err(|e| Error::from_spec("partition", e))?;
            if let Some(matcher) = &mut selected {
                if !matcher.matches(&layout, &partition)? {
                    continue;
                }
            }
            let bucket_dir = layout.bucket_path(&source.partition, BUCKET)?;
            let location = source.location.trim_end_matches('/');
            let mut listed = table.io().at(location)?.list_dir("").await?;
            listed.sort_by(|a, b| a.path.cmp(&b.path));
            for status in listed {
                let name = status.path.rsplit('/').next().unwrap_or(&status.path);
                if name.starts_with('_') || name.starts_with('.') {
                    continue;
                }
                let extension = format!(".{}", source.format.identifier());
                let target_name = match self.transfer {
                    // a copy's partitions may already hold an earlier copy of the same files
                    Transfer::Copy => format!("{prefix}{uuid}-{}{extension}", files.len()),
                    Transfer::Move if name.ends_with(&extension) => name.to_string(),
                    Transfer::Move => format!("{name}{extension}"),
                };
                let target = format!("{bucket_dir}/{target_name}");
                if !targets.insert(target.clone()) {
                    return Err(Error::AlreadyExists(format!(
                        "two imported files would be {} in table {}",
                        target,
                        table.location()
                    )));
                }
                files.push((
                    source.clone(),
                    format!("{location}/{name}"),
                    target,
                    partition.clone(),
                ));
            }
        }
        Ok(files)
    }

    /// Move or copy one file, then describe it: what was taken (to undo), and its message.
    async fn take(
        &self,
        table: &Table,
        (source, origin, target, partition): (ImportSource, String, String, Vec<u8>),
    ) -> (Option<Taken>, Result<CommitMessage>) {
        let io = table.io();
        let moved = match self.transfer {
            Transfer::Move => io.move_file(&origin, &target).await,
            Transfer::Copy => io.copy_file(&origin, &target).await,
        };
        if let Err(e) = moved {
            return (None, Err(e));
        }
        let taken = Taken {
            origin,
            target,
            partition,
        };
        let meta = imported_file_meta(
            io,
            &taken.target,
            source.format,
            table.schema(),
            &self.unstored,
        )
        .await;
        let message = meta.map(|meta| {
            let mut message = CommitMessage::new(taken.partition.clone(), BUCKET, UNAWARE);
            message.new_files.push(meta);
            message
        });
        (Some(taken), message)
    }

    /// Put moved files back and delete copies (logged when that fails).
    async fn undo(&self, table: &Table, taken: &[Taken]) {
        let io = table.io();
        for t in taken {
            let undone = match self.transfer {
                Transfer::Move => io.move_file(&t.target, &t.origin).await,
                Transfer::Copy => io.delete(&t.target).await,
            };
            if let Err(e) = undone {
                log::warn!(target: "tidelake.import", "{}: could not undo taking {}: {e}", table.location(), t.origin);
            }
        }
    }
}

/// Java `checkPaimonTable`: imported files go to bucket-unaware append tables only.
fn check_target(table: &Table) -> Result<()> {
    let schema = table.schema();
    if !schema.primary_keys.is_empty() {
        return Err(Error::Unsupported(format!(
            "files can be imported into append tables only; {} has a primary key",
            table.location()
        )));
    }
    let bucket = schema
        .options()
        .bucket()
        .map_err(|e| Error::from_spec("table options", e))?;
    if bucket != UNAWARE {
        return Err(Error::Unsupported(format!(
            "files can be imported into bucket-unaware tables (bucket = -1) only; {} has bucket = {bucket}",
            table.location()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Hive-layout Parquet files (no partition column) taken into a partitioned append table:
    //! read with the partition's values, with no statistics for the partition column, not
    //! natively readable; a failed import leaves the files where they were.

    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;

    use super::*;
    use crate::error::ErrorKind;
    use crate::io::FileIO;
    use crate::read::native::{native_units, Deletes, Packing, ReadUnit};
    use crate::schema_change::{create_table, TableSpec};
    use crate::test_support::{int64_column, read_table, string_column};

    fn hive_file(path: &std::path::Path, ids: &[i64]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(ids.to_vec()))],
        )
        .unwrap();
        let mut w =
            ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    async fn table(dir: &std::path::Path) -> Table {
        let io = FileIO::open(dir.join("t").to_str().unwrap()).unwrap();
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("dt", DataType::Utf8, true),
        ]);
        let spec = TableSpec {
            partition_keys: vec!["dt".into()],
            ..TableSpec::default()
        };
        create_table(io, &schema, &spec).await.unwrap()
    }

    fn source(dir: &std::path::Path, dt: &str) -> ImportSource {
        ImportSource {
            partition: vec![Datum::String(dt.into())],
            location: format!("file:{}", dir.join(format!("hive/dt={dt}")).display()),
            format: FileFormat::Parquet,
        }
    }

    #[tokio::test]
    async fn hive_files_read_with_their_partition_values() {
        let dir = tempfile::tempdir().unwrap();
        hive_file(&dir.path().join("hive/dt=a/000000_0"), &[1, 2]);
        hive_file(&dir.path().join("hive/dt=b/000000_0"), &[3]);
        std::fs::write(dir.path().join("hive/dt=b/_SUCCESS"), "").unwrap();
        let t = table(dir.path()).await;
        ImportFiles::new(&t)
            .without_partition_columns()
            .source(source(dir.path(), "a"))
            .source(source(dir.path(), "b"))
            .run()
            .await
            .unwrap()
            .unwrap();
        let t = t.reopen().await.unwrap();
        let batches = read_table(&t, &[], 100).await;
        let mut rows: Vec<(i64, String)> = Vec::new();
        for b in &batches {
            let (ids, dts) = (int64_column(b, "id"), string_column(b, "dt"));
            rows.extend((0..b.num_rows()).map(|i| (ids.value(i), dts.value(i).to_string())));
        }
        rows.sort();
        assert_eq!(rows, [(1, "a".into()), (2, "a".into()), (3, "b".into())]);
        assert!(dir.path().join("t/dt=a/bucket-0/000000_0.parquet").exists());
        assert!(!dir.path().join("hive/dt=a/000000_0").exists());
        assert!(dir.path().join("hive/dt=b/_SUCCESS").exists());
        let planned = crate::ops::Read::new(&t).plan().await.unwrap();
        for split in &planned.plan.splits {
            for f in &split.files {
                assert!(!f.holds_partition_columns, "{}", f.file_name);
            }
        }
        let units = native_units(
            &planned.plan,
            Packing::of(t.schema()).unwrap(),
            Deletes::Joined,
        )
        .unwrap();
        assert!(units.iter().all(|u| !matches!(u, ReadUnit::Files { .. })));
    }

    #[tokio::test]
    async fn a_failed_import_puts_the_files_back() {
        let dir = tempfile::tempdir().unwrap();
        hive_file(&dir.path().join("hive/dt=a/000000_0"), &[1, 2]);
        std::fs::create_dir_all(dir.path().join("hive/dt=b")).unwrap();
        std::fs::write(dir.path().join("hive/dt=b/broken"), "not parquet").unwrap();
        let t = table(dir.path()).await;
        let e = ImportFiles::new(&t)
            .without_partition_columns()
            .source(source(dir.path(), "a"))
            .source(source(dir.path(), "b"))
            .run()
            .await
            .unwrap_err();
        assert_ne!(e.kind(), ErrorKind::Internal, "{e}");
        assert!(dir.path().join("hive/dt=a/000000_0").exists());
        assert!(dir.path().join("hive/dt=b/broken").exists());
        assert!(!dir.path().join("t/dt=a/bucket-0/000000_0.parquet").exists());
        assert!(t
            .reopen()
            .await
            .unwrap()
            .snapshot_manager()
            .latest()
            .await
            .unwrap()
            .is_none());
    }
}
