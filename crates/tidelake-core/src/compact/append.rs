//! Compaction of append tables (no primary key): small files of a bucket merged into fewer,
//! their deletion vectors applied. Java: `BucketedAppendCompactManager` (fixed buckets),
//! `AppendCompactCoordinator` (bucket-unaware tables, `bucket = -1`) and
//! `AppendOnlyFileStoreWrite.compactRewrite`.
//!
//! Picking, per bucket, over its files ordered by `_MIN_SEQUENCE_NUMBER` (the write order):
//! * fixed buckets, by strategy (Java `pickCompactBefore`): a window slides over the files,
//!   growing by one file at a time; once it holds `compaction.min.file-num` (5) files they
//!   are picked, and while its size reaches `target-file-size` (256 MiB) its oldest file
//!   leaves it. Nothing is picked when no window fills;
//! * fixed buckets, full (Java `FullCompactTask`): with at least 3 files (any number with
//!   deletion vectors enabled), the leading files of `target-file-size` or more without a
//!   deletion vector are skipped and the rest is picked when it holds deletion vectors, or
//!   when it has more small files than large ones and at least 3 files;
//! * bucket-unaware tables (Java `AppendCompactCoordinator`): the candidates are files under
//!   `compaction.file-size`-equivalent size (`target-file-size` × 0.7) and files whose deletion
//!   vector holds more than `compaction.delete-ratio-threshold` (0.2) of their rows. Files
//!   with deletion vectors are always compacted; the other candidates, packed by size with
//!   `source.split.open-file-cost` (4 MiB) per file, when a bin reaches 2 × target size with
//!   two files or more, and the rest when it holds `compaction.min.file-num` files. `full`
//!   compacts every candidate when there are two or more, or any with a deletion vector.
//!
//! Rewrite: the picked files are read in sequence order with their deletion vectors applied
//! (deleted rows dropped) and written as level-0 files (`FileSource::Compact`, rolled at
//! `target-file-size`) numbered from the first input's `_MIN_SEQUENCE_NUMBER`, so the rows of a
//! bucket keep their order (Java starts its counter there too). Deletion vectors of the inputs
//! go with them: the bucket's index files whose data files all left are dropped by the commit
//! ([`super::job::Done::message`]); when other files of the bucket keep vectors, one new index
//! file holding those replaces the bucket's index files.
//!
//! Differences from Java: a bucket-unaware partition compacts as one task whose bins share a
//! rolling writer (Java runs one task per bin; the output files are the same up to where they
//! roll) and keeps the write order instead of Java's by-size order; a bucket-unaware table does
//! not compact its single leftover file after five idle coordinator rounds (a streaming-job
//! rule); a full compaction does not rewrite a lone file without deletion vector (Java does,
//! to the same content). Row-tracking and data-evolution tables are not compacted
//! ([`Error::Unsupported`]), and `compaction.force-rewrite-all-files` is not read. The rules are
//! those of Paimon 1.3.1 (`release-1.3.1`: `pickCompactBefore` picks on the file count alone).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use futures::TryStreamExt;
use tidelake_spec::manifest::FileSource;
use tidelake_spec::options::Options;
use tidelake_spec::schema::TableSchema;

use super::job::Bucket;
use super::lookup::write_bucket_index_file;
use super::rewriter::{UnitResult, UnitTask};
use crate::error::{Error, Result};
use crate::lsm::levels::LevelFile;
use crate::read::split_read::ReadContext;
use crate::table::Table;
use crate::write::file_writer::{FileLayout, RollingWriter, WriterConfig};

/// Java `BucketedAppendCompactManager.FULL_COMPACT_MIN_FILE`.
const FULL_COMPACT_MIN_FILES: usize = 3;

/// Append compaction of one table: its picking rules and its rewrite.
#[derive(Debug)]
pub(crate) struct AppendCompaction {
    table: Table,
    schema: Arc<TableSchema>,
    /// Reads every column of the latest schema, deletion vectors applied.
    reader: Arc<ReadContext>,
    /// `bucket = -1`: the coordinator's rules instead of the bucketed manager's.
    unaware: bool,
    deletion_vectors: bool,
    /// `compaction.min.file-num`.
    min_file_num: usize,
    /// `target-file-size` of append tables.
    target: i64,
    /// Java `compactionFileSize(false)`: `target-file-size` / 10 × 7.
    small: i64,
    /// `source.split.open-file-cost`.
    open_file_cost: i64,
    /// `compaction.delete-ratio-threshold`.
    delete_ratio: f64,
}

impl AppendCompaction {
    pub(crate) fn new(table: Table) -> Result<AppendCompaction> {
        let schema = table.schema().clone();
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        if opts.row_tracking_enabled().map_err(spec)?
            || opts.data_evolution_enabled().map_err(spec)?
        {
            return Err(Error::Unsupported(
                "compacting append tables with row tracking or data evolution".into(),
            ));
        }
        let size = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let target = size(opts.target_file_size(false).map_err(spec)?);
        let reader = Arc::new(ReadContext::whole_rows(table.clone(), &schema)?);
        Ok(AppendCompaction {
            unaware: opts.bucket().map_err(spec)? == -1,
            deletion_vectors: opts.deletion_vectors_enabled().map_err(spec)?,
            min_file_num: usize::try_from(opts.compaction_min_file_num().map_err(spec)?.max(1))
                .unwrap_or(1),
            target,
            small: target / 10 * 7,
            open_file_cost: size(opts.split_open_file_cost().map_err(spec)?),
            delete_ratio: opts.compaction_delete_ratio_threshold().map_err(spec)?,
            table,
            schema,
            reader,
        })
    }

    /// The files of a bucket to merge, in sequence order (see the module docs), as a unit at
    /// level 0.
    pub(crate) fn pick(&self, files: &[LevelFile], full: bool) -> Option<UnitTask> {
        let mut ordered: Vec<&LevelFile> = files.iter().collect();
        ordered.sort_by_key(|f| f.meta.min_sequence_number);
        let picked = if self.unaware {
            self.pick_unaware(&ordered, full)
        } else if full {
            self.pick_full(&ordered)
        } else {
            self.pick_window(&ordered)
        }?;
        let names: HashSet<&str> = picked.iter().map(|f| f.meta.file_name.as_str()).collect();
        Some(UnitTask {
            output_level: 0,
            max_level: 0,
            files: ordered
                .into_iter()
                .filter(|f| names.contains(f.meta.file_name.as_str()))
                .cloned()
                .collect(),
            whole_levels: true,
            drop_delete: false,
            deeper: Vec::new(),
        })
    }

    /// Java `pickCompactBefore`.
    fn pick_window<'a>(&self, files: &[&'a LevelFile]) -> Option<Vec<&'a LevelFile>> {
        let mut window: VecDeque<&LevelFile> = VecDeque::new();
        let mut total = 0i64;
        for f in files {
            window.push_back(f);
            total += f.meta.file_size;
            if window.len() >= self.min_file_num {
                return Some(window.into_iter().collect());
            }
            if total >= self.target {
                if let Some(first) = window.pop_front() {
                    total -= first.meta.file_size;
                }
            }
        }
        None
    }

    /// Java `FullCompactTask` (with its trigger).
    fn pick_full<'a>(&self, files: &[&'a LevelFile]) -> Option<Vec<&'a LevelFile>> {
        if files.is_empty() || (!self.deletion_vectors && files.len() < FULL_COMPACT_MIN_FILES) {
            return None;
        }
        let skip = files
            .iter()
            .take_while(|f| f.meta.file_size >= self.target && f.deletion.is_none())
            .count();
        let rest = &files[skip..];
        let big = rest
            .iter()
            .filter(|f| f.meta.file_size >= self.target)
            .count();
        let compact = if self.deletion_vectors {
            !rest.is_empty()
        } else {
            rest.len() - big > big && rest.len() >= FULL_COMPACT_MIN_FILES
        };
        // a lone file without deletion vector gains nothing from a rewrite
        let useful = rest.len() > 1 || rest.iter().any(|f| f.deletion.is_some());
        (compact && useful).then(|| rest.to_vec())
    }

    /// Java `AppendCompactCoordinator` (one batch round; see the module docs).
    fn pick_unaware<'a>(&self, files: &[&'a LevelFile], full: bool) -> Option<Vec<&'a LevelFile>> {
        let deleted_enough = |f: &LevelFile| {
            f.deletion.as_ref().is_some_and(|d| match d.cardinality {
                None => true,
                Some(c) => c as f64 > f.meta.row_count as f64 * self.delete_ratio,
            })
        };
        let candidates: Vec<&LevelFile> = files
            .iter()
            .copied()
            .filter(|f| f.meta.file_size < self.small || deleted_enough(f))
            .collect();
        let (with_dv, rest): (Vec<&LevelFile>, Vec<&LevelFile>) = candidates
            .into_iter()
            .partition(|f| self.deletion_vectors && f.deletion.is_some());
        let mut picked = with_dv;
        if full {
            if rest.len() > 1 || !picked.is_empty() {
                picked.extend(rest);
            }
        } else if rest.len() > 1 {
            picked.extend(self.pack(rest));
        }
        (!picked.is_empty()).then_some(picked)
    }

    /// Java `SubCoordinator.pack`: bins of files by increasing size.
    fn pack<'a>(&self, mut files: Vec<&'a LevelFile>) -> Vec<&'a LevelFile> {
        files.sort_by_key(|f| f.meta.file_size);
        let mut packed = Vec::new();
        let mut bin: Vec<&LevelFile> = Vec::new();
        let mut total = 0i64;
        for f in files {
            total += f.meta.file_size + self.open_file_cost;
            bin.push(f);
            if bin.len() > 1 && total >= self.target * 2 {
                packed.append(&mut bin);
                total = 0;
            }
        }
        if bin.len() >= self.min_file_num {
            packed.append(&mut bin);
        }
        packed
    }

    /// Merge `task`'s files of `bucket` into new level-0 files (see the module docs); on error
    /// nothing it wrote remains.
    pub(crate) async fn run(&self, bucket: &Bucket, task: &UnitTask) -> Result<UnitResult> {
        let Some(first) = task.files.first() else {
            return Ok(UnitResult::default());
        };
        let opts: &Options = self.schema.options();
        let mut writer = RollingWriter::new(
            self.table.io().clone(),
            bucket.bucket_dir.clone(),
            self.schema.clone(),
            FileLayout::Append,
            0,
            FileSource::Compact,
            opts.data_file_prefix().to_string(),
            WriterConfig::from_options(opts, FileLayout::Append, 0, false)?,
        )?
        .with_first_sequence_number(first.meta.min_sequence_number);
        let split = bucket.raw_split(&task.files);
        let copied = async {
            let mut rows = self.reader.read_split(&split).await?;
            while let Some(batch) = rows.try_next().await? {
                writer.write(&batch).await?;
            }
            Ok::<_, Error>(())
        };
        if let Err(e) = copied.await {
            // Already failing: the writer's cleanup error is secondary to `e`.
            let _ = writer.abort().await;
            return Err(e);
        }
        let written = writer.close().await?;
        let mut result = UnitResult {
            before: task.files.iter().map(|f| f.meta.clone()).collect(),
            after: written.clone(),
            written,
            ..UnitResult::default()
        };
        rewrite_index(&self.table, &self.reader, bucket, task, &mut result).await?;
        Ok(result)
    }
}

/// The deletion vectors of a bucket after `task`'s files were rewritten into `result` (Java
/// `AppendDeleteFileMaintainer`): the vectors of the inputs go with them; when other files of
/// the bucket keep vectors, one new index file holding those ([`UnitResult::index`]) replaces
/// the bucket's index files (see [`super::job::Done::message`]). On error `result`'s written
/// files are deleted.
pub(crate) async fn rewrite_index(
    table: &Table,
    reader: &Arc<ReadContext>,
    bucket: &Bucket,
    task: &UnitTask,
    result: &mut UnitResult,
) -> Result<()> {
    if !task.files.iter().any(|f| f.deletion.is_some()) {
        return Ok(());
    }
    let inputs: HashSet<&str> = task
        .files
        .iter()
        .map(|f| f.meta.file_name.as_str())
        .collect();
    let kept: Vec<LevelFile> = bucket
        .files
        .iter()
        .filter(|f| f.deletion.is_some() && !inputs.contains(f.meta.file_name.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() {
        return Ok(());
    }
    match write_bucket_index_file(table, &bucket.bucket_dir, reader, &kept, BTreeMap::new()).await {
        Ok(index) => {
            result.index = Some(index);
            Ok(())
        }
        Err(e) => {
            // Already failing: cleanup errors are secondary to `e`.
            let _ = super::rewriter::delete_files(table, &bucket.bucket_dir, &result.written).await;
            Err(e)
        }
    }
}
