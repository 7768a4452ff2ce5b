//! Executing one compaction unit of one bucket (Java `MergeTreeCompactTask` +
//! `MergeTreeCompactRewriter`): which files are merged and rewritten, which are only moved to
//! the output level, and the streaming rewrite itself.
//!
//! Task (Java `MergeTreeCompactTask.doCompact`): the unit's files are cut into key-disjoint
//! sections ([`sorted_runs::partition`], Java `IntervalPartition`). A section with several
//! runs overlaps and is rewritten; a section with one run is walked file by file: files
//! smaller than `target-file-size` × 0.7 join the rewrite candidates, a larger file first
//! flushes the candidates, then is *upgraded* — committed again at the output level under the
//! same name, without rewriting. A file is rewritten instead of upgraded when it already sits
//! at the output level (only if it has a deletion vector: rewriting applies it), when it would
//! reach the max level with retract rows (`_DELETE_ROW_COUNT` not 0), when it has a
//! deletion vector (tidelake does not carry deletion vectors over; see [`super`]) or rows
//! record-level expiry expires ([`crate::read::record_expire`]; at the output level too), and, in
//! units that look up the levels below their output, when it is a level-0 file (its keys'
//! older copies must be found).
//!
//! Rewrite (Java `MergeTreeCompactRewriter.rewriteCompaction`): the candidate sections, in key
//! order, stream through the sorted-run merge ([`crate::lsm::kv_merge`]) into one rolling writer
//! at the output level (`FileSource::Compact`, files rolled at `target-file-size`); retract
//! results are dropped only with `drop_delete` (Java `DropDeleteReader`). Each input file is
//! read by the reader's [`ReadContext`] with its own schema into the latest schema, deletion
//! vector applied, rows record-level expiry expires dropped. Tables with a compaction-fed
//! changelog producer also get changelog files from rewrites and from upgrades that produce changelog, which then rewrite the file
//! ([`super::changelog`], Java `ChangelogMergeTreeRewriter`).
//!
//! Lookup (Java `LookupMergeTreeCompactRewriter` with `LookupChangelogMergeFunctionWrapper`;
//! tables that need lookup, not first-row, with levels below the output): in a section that
//! holds level-0 files, their keys (read a second time, each key's newest record) are looked
//! up below the output ([`super::lookup`]); the rows found join the run of the section's
//! newest records above level 0, which wins for keys it holds (Java looks up only keys
//! without such a record), so the merge sees each level-0 key's newest older copy as its
//! oldest record, ordered by `sequence.field` and sequence number like any record. The rows
//! found are queued for the changelog join (the merge pulls them before emitting their keys)
//! and, on deletion-vector tables, marked; the unit then writes the bucket's new
//! deletion-vector index file.
//!
//! Invariants: memory is bounded by (runs × batch) per rewrite — files are opened one after
//! the other within a run and nothing buffers a bucket; output files of one rewrite are key
//! ordered and disjoint, and never span an upgraded file (candidates are flushed before each
//! upgrade), so the output level stays one sorted run; when the unit is a subset of one level
//! (`whole_levels == false`) each file is rewritten on its own, so outputs stay inside their
//! input's key range; on any error every file this unit wrote is deleted.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_select::filter::filter_record_batch;
use futures::stream::{BoxStream, TryStreamExt};
use tidelake_spec::manifest::{DataFileMeta, FileSource, IndexFileMeta};
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataType;

use super::changelog::{ChangelogJoin, ChangelogMode, ChangelogSpec, KeyCursor};
use super::lookup::{
    found_rows, queued, write_bucket_index_file, DeeperLookup, FoundQueue, SharedLookup,
};
use crate::error::{Error, Result};
use crate::lsm::kv_merge::merge_keeping_sequence;
use crate::lsm::levels::LevelFile;
use crate::lsm::merge::MergeConfig;
use crate::lsm::merge_fn::MergeEngineConfig;
use crate::lsm::sorted_runs::{self, Sections};
use crate::read::record_expire::RecordExpire;
use crate::read::split_read::{drop_retracts, ReadContext};
use crate::scan::split::SplitFile;
use crate::table::Table;
use crate::write::file_writer::{FileLayout, RollingWriter, WriterConfig};

/// A unit ready to run: the files, where they go and whether retracts may go away.
#[derive(Debug, Clone)]
pub struct UnitTask {
    pub output_level: i32,
    /// The bucket's max level (files with retracts are not upgraded into it).
    pub max_level: i32,
    pub files: Vec<LevelFile>,
    /// The unit holds whole sorted runs (false: some files of the max level only).
    pub whole_levels: bool,
    /// Java `dropDelete`: the output level is not 0 and no older data lies above it (or the
    /// unit maintains deletion vectors, which hide the older data instead).
    pub drop_delete: bool,
    /// Lookup tables: the bucket's files below the output level (outside the unit).
    pub deeper: Vec<LevelFile>,
}

/// What a unit did (Java `CompactResult`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UnitResult {
    /// Files leaving the bucket's LSM tree at their old level.
    pub before: Vec<DataFileMeta>,
    /// Files entering it: new files and upgraded ones.
    pub after: Vec<DataFileMeta>,
    /// Changelog files produced (Java `CompactResult.changelog`).
    pub changelog: Vec<DataFileMeta>,
    /// The new files this unit wrote, changelog included (deleted again if the compaction is
    /// abandoned).
    pub written: Vec<DataFileMeta>,
    /// How many files were upgraded without rewriting.
    pub upgraded: usize,
    /// The bucket's new deletion-vector index file, replacing its previous ones (written
    /// when the unit deleted rows of the levels below its output).
    pub index: Option<IndexFileMeta>,
}

/// Table-wide settings of rewrites.
#[derive(Debug)]
pub struct Rewriter {
    table: Table,
    /// The latest schema: files are read into it and written with it.
    schema: Arc<TableSchema>,
    /// Reads every column of the latest schema with the key-value system columns.
    reader: Arc<ReadContext>,
    key_types: Vec<DataType>,
    /// The merge configuration with `keep_retracts = true`.
    merge: MergeConfig,
    /// How rewrites produce changelog, if they do.
    changelog: Option<ChangelogSpec>,
    /// Rewrites of level 0 merge each key's newest older copy below the output
    /// ([`super::lookup`]; tables that need lookup, not first-row).
    lookup: bool,
    /// ... and mark it in a deletion vector (deletion-vector tables).
    mark_deletions: bool,
    /// Value columns of the trimmed primary key (how files store their key range).
    trimmed_key_indices: Vec<usize>,
    /// Java `compactionFileSize`: `target-file-size` / 10 × 7.
    min_file_size: i64,
    batch_size: usize,
    /// Record-level expiry: rows it expires are dropped from every file a rewrite reads.
    expire: Option<Arc<RecordExpire>>,
}

impl Rewriter {
    pub fn new(
        table: Table,
        key_types: Vec<DataType>,
        merge: MergeConfig,
        changelog: Option<ChangelogSpec>,
        lookup: bool,
        mark_deletions: bool,
        batch_size: usize,
    ) -> Result<Rewriter> {
        let schema = table.schema().clone();
        let trimmed_key_indices = schema
            .trimmed_primary_keys()
            .iter()
            .map(|k| {
                schema
                    .fields
                    .iter()
                    .position(|f| &f.name == k)
                    .ok_or_else(|| Error::invalid(format!("primary key '{k}' is not a column")))
            })
            .collect::<Result<Vec<_>>>()?;
        let expire = RecordExpire::of(&schema)?;
        let reader = Arc::new(
            ReadContext::of(table.clone(), &schema)
                .batch_size(batch_size)
                .build()?
                .with_record_expire(expire.clone()),
        );
        let target = schema
            .options()
            .target_file_size(true)
            .map_err(|e| Error::from_spec("table options", e))?;
        let min_file_size = i64::try_from(target / 10 * 7).unwrap_or(i64::MAX);
        Ok(Rewriter {
            table,
            schema,
            reader,
            key_types,
            merge,
            changelog,
            lookup,
            mark_deletions,
            trimmed_key_indices,
            min_file_size,
            batch_size: batch_size.max(1),
            expire,
        })
    }

    /// Whether `file` (written with `file_schema`) holds rows record-level expiry expires now,
    /// by its statistics ([`RecordExpire::file_expired`]); never without expiry.
    pub(crate) fn holds_expired(&self, file: &DataFileMeta, file_schema: &TableSchema) -> bool {
        self.expire.as_ref().is_some_and(|e| {
            e.file_expired(file, file_schema, self.table.env().now_millis() / 1000)
        })
    }

    /// Whether the table has record-level expiry.
    pub(crate) fn expires_records(&self) -> bool {
        self.expire.is_some()
    }

    /// Run `task` in the bucket directory `bucket_dir`; on error nothing it wrote remains.
    pub async fn run(&self, bucket_dir: &str, task: &UnitTask) -> Result<UnitResult> {
        let mut job = UnitJob {
            rewriter: self,
            bucket_dir,
            task,
            metas: task
                .files
                .iter()
                .map(|f| (f.meta.file_name.as_str(), &f.meta))
                .collect(),
            result: UnitResult::default(),
            deeper: None,
            lookup: None,
        };
        match job.execute().await {
            Ok(()) => Ok(job.result),
            Err(e) => {
                // Already failing: a cleanup error cannot be reported better than `e`.
                let _ = delete_files(&self.table, bucket_dir, &job.result.written).await;
                Err(e)
            }
        }
    }
}

/// Delete data files of a bucket (best effort: all are tried, the first error is returned).
pub(crate) async fn delete_files(
    table: &Table,
    bucket_dir: &str,
    files: &[DataFileMeta],
) -> Result<()> {
    let mut first_error = None;
    for f in files {
        if let Err(e) = table.io().delete(&f.path(bucket_dir)).await {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// One execution of a unit.
struct UnitJob<'a> {
    rewriter: &'a Rewriter,
    bucket_dir: &'a str,
    task: &'a UnitTask,
    metas: HashMap<&'a str, &'a DataFileMeta>,
    result: UnitResult,
    /// First-row lookup into [`UnitTask::deeper`], opened by the first rewrite that needs it.
    deeper: Option<DeeperLookup>,
    /// The lookup into [`UnitTask::deeper`] of other engines, opened likewise.
    lookup: Option<SharedLookup>,
}

impl UnitJob<'_> {
    async fn execute(&mut self) -> Result<()> {
        self.execute_unit().await?;
        if let Some(lookup) = self.lookup.take() {
            let marked = Arc::try_unwrap(lookup)
                .map_err(|_| Error::invalid("the lookup below the output level is still in use"))?
                .into_inner()
                .into_marked();
            if !marked.is_empty() {
                let rw = self.rewriter;
                let index = write_bucket_index_file(
                    &rw.table,
                    self.bucket_dir,
                    &rw.reader,
                    &self.task.deeper,
                    marked,
                )
                .await?;
                self.result.index = Some(index);
            }
        }
        Ok(())
    }

    /// Whether the unit's rewrites of level 0 look their keys up below the output.
    fn looks_up(&self) -> bool {
        self.rewriter.lookup && !self.task.deeper.is_empty()
    }

    async fn execute_unit(&mut self) -> Result<()> {
        let files: Vec<SplitFile> = self.task.files.iter().map(LevelFile::split_file).collect();
        if !self.task.whole_levels {
            for f in files {
                self.rewrite(vec![vec![vec![f]]]).await?;
            }
            return Ok(());
        }
        let mut candidate: Sections = Vec::new();
        for mut section in sorted_runs::partition(files, &self.rewriter.key_types)? {
            if section.len() > 1 {
                candidate.push(section);
                continue;
            }
            for file in section.pop().into_iter().flatten() {
                if file.file_size < self.rewriter.min_file_size {
                    candidate.push(vec![vec![file]]);
                } else {
                    self.flush(std::mem::take(&mut candidate)).await?;
                    self.upgrade(file).await?;
                }
            }
        }
        self.flush(candidate).await
    }

    /// Java `rewrite(candidate)`: a lone single-run section is upgraded file by file.
    async fn flush(&mut self, mut candidate: Sections) -> Result<()> {
        match candidate.as_mut_slice() {
            [] => Ok(()),
            [section] if section.len() == 1 => {
                for file in section.pop().into_iter().flatten() {
                    self.upgrade(file).await?;
                }
                Ok(())
            }
            _ => self.rewrite(candidate).await,
        }
    }

    fn meta(&self, file: &SplitFile) -> Result<DataFileMeta> {
        self.metas
            .get(file.file_name.as_str())
            .map(|m| (*m).clone())
            .ok_or_else(|| {
                Error::invalid(format!("{} is not in the compaction unit", file.file_name))
            })
    }

    /// Java `upgrade(file)`: move the file to the output level without rewriting, unless it
    /// must be rewritten (see the module docs).
    async fn upgrade(&mut self, file: SplitFile) -> Result<()> {
        let meta = self.meta(&file)?;
        let output = self.task.output_level;
        let has_dv = file.deletion.is_some();
        let expired = match &self.rewriter.expire {
            Some(_) => {
                let schema = self.rewriter.table.schema_by_id(meta.schema_id).await?;
                self.rewriter.holds_expired(&meta, &schema)
            }
            None => false,
        };
        if meta.level == output {
            return if has_dv || expired {
                self.rewrite(vec![vec![vec![file]]]).await
            } else {
                Ok(())
            };
        }
        let changelog = self
            .rewriter
            .changelog
            .is_some_and(|c| c.on_upgrade(output, self.task.max_level, meta.level));
        let lookup = meta.level == 0 && self.looks_up();
        if !has_dv
            && !expired
            && !changelog
            && !lookup
            && (output != self.task.max_level || meta.delete_row_count == Some(0))
        {
            self.result.after.push(DataFileMeta {
                level: output,
                ..meta.clone()
            });
            self.result.before.push(meta);
            self.result.upgraded += 1;
            return Ok(());
        }
        self.rewrite(vec![vec![vec![file]]]).await
    }

    /// Java `rewriteCompaction` / `rewriteChangelogCompaction`: merge the sections, in order,
    /// into new files, and produce changelog where the table asks for it (see
    /// [`super::changelog`]).
    async fn rewrite(&mut self, sections: Sections) -> Result<()> {
        let rw = self.rewriter;
        let output = self.task.output_level;
        let max_level = self.task.max_level;
        let levels = sections.iter().flatten().flatten().map(|f| f.level);
        let changelog = rw
            .changelog
            .filter(|c| c.on_rewrite(output, max_level, levels));
        let mut writer = self.writer(false)?;
        let mut changelog_writer = match changelog {
            Some(c) if c.produce => Some(self.writer(true)?),
            _ => None,
        };
        let outcome = self
            .write_sections(sections, changelog, &mut writer, changelog_writer.as_mut())
            .await;
        if let Err(e) = outcome {
            // Already failing: the writers' cleanup errors are secondary to `e`.
            let _ = writer.abort().await;
            if let Some(w) = changelog_writer {
                let _ = w.abort().await;
            }
            return Err(e);
        }
        let written = match writer.close().await {
            Ok(files) => files,
            Err(e) => {
                if let Some(w) = changelog_writer {
                    let _ = w.abort().await;
                }
                return Err(e);
            }
        };
        // recorded at once so a failing changelog close still deletes the data files
        self.result.written.extend(written.iter().cloned());
        if let Some(w) = changelog_writer {
            let files = w.close().await?;
            self.result.written.extend(files.iter().cloned());
            self.result.changelog.extend(files);
        }
        self.result.after.extend(written);
        Ok(())
    }

    /// A rolling writer at the output level: data files, or changelog files.
    fn writer(&self, changelog: bool) -> Result<RollingWriter> {
        let rw = self.rewriter;
        let output = self.task.output_level;
        let opts = rw.schema.options();
        let prefix = if changelog {
            opts.changelog_file_prefix()
        } else {
            opts.data_file_prefix()
        };
        RollingWriter::new(
            rw.table.io().clone(),
            self.bucket_dir.to_string(),
            rw.schema.clone(),
            FileLayout::KeyValue,
            output,
            FileSource::Compact,
            prefix.to_string(),
            WriterConfig::from_options(opts, FileLayout::KeyValue, output, changelog)?,
        )
    }

    /// Stream every section through the merge into `writer` (and its changelog).
    async fn write_sections(
        &mut self,
        sections: Sections,
        changelog: Option<ChangelogSpec>,
        writer: &mut RollingWriter,
        mut changelog_writer: Option<&mut RollingWriter>,
    ) -> Result<()> {
        let rw = self.rewriter;
        let drop_delete = self.task.drop_delete;
        // the changelog needs the retracts; they are dropped from the data files below
        let needs_retracts = changelog.is_some();
        let config = Arc::new(MergeConfig {
            keep_retracts: needs_retracts || !drop_delete,
            ..rw.merge.clone()
        });
        for section in sections {
            let mut before_files = Vec::new();
            for f in section.iter().flatten() {
                self.result.before.push(self.meta(f)?);
                if changelog.is_some_and(|c| c.is_before_level(f.level, self.task.max_level)) {
                    before_files.push(f.clone());
                }
            }
            let found: Option<FoundQueue> = changelog.map(|_| Arc::default());
            let runs = self.section_runs(section, found.clone())?;
            let mut join = match changelog {
                Some(spec) => Some(
                    ChangelogJoin::new(
                        spec,
                        rw.merge.key_indices.clone(),
                        rw.reader.newest_records(before_files)?,
                        found.map(|f| KeyCursor::resumable(queued(f))),
                    )
                    .ignoring_fields(
                        rw.schema
                            .options()
                            .changelog_producer_row_deduplicate_ignore_fields(),
                    ),
                ),
                None => None,
            };
            let first_row = changelog.is_some_and(|c| c.mode == ChangelogMode::FirstRowLookup);
            if first_row && self.deeper.is_none() && !self.task.deeper.is_empty() {
                self.deeper = Some(self.deeper_lookup(false)?);
            }
            let mut merged = merge_keeping_sequence(runs, config.clone(), rw.batch_size);
            while let Some(mut batch) = merged.try_next().await? {
                if let Some(join) = join.as_mut() {
                    let old_keys = match self.deeper.as_mut() {
                        Some(deeper) => Some(deeper.contains(&batch).await?),
                        None => None,
                    };
                    let joined = join.changes(&batch, old_keys.as_deref()).await?;
                    if let (Some(changes), Some(w)) =
                        (joined.changelog, changelog_writer.as_deref_mut())
                    {
                        w.write(&changes).await?;
                    }
                    if let Some(keep) = joined.keep {
                        batch = filter_record_batch(&batch, &keep)
                            .map_err(|e| Error::arrow("first-row lookup", e))?;
                    }
                }
                let batch = if needs_retracts && drop_delete {
                    drop_retracts(batch, 1)?
                } else {
                    batch
                };
                writer.write(&batch).await?;
            }
        }
        Ok(())
    }

    /// A lookup into [`UnitTask::deeper`], marking the rows found when `mark`.
    fn deeper_lookup(&self, mark: bool) -> Result<DeeperLookup> {
        let rw = self.rewriter;
        let keys = rw.trimmed_key_indices.clone();
        DeeperLookup::new(
            rw.reader.clone(),
            keys,
            rw.key_types.clone(),
            &self.task.deeper,
            mark,
        )
    }

    /// The merge inputs of a section ([`ReadContext::section_runs`]); when the unit looks up
    /// and the section holds level-0 files, the rows found below the output for their keys
    /// join the run of the newest records above level 0, which has precedence (Java looks up
    /// only keys without a record above level 0 in the unit), and are queued into `found`.
    fn section_runs(
        &mut self,
        section: Vec<Vec<SplitFile>>,
        found: Option<FoundQueue>,
    ) -> Result<Vec<BoxStream<'static, Result<RecordBatch>>>> {
        let rw = self.rewriter;
        let files = section.iter().flatten();
        let level0: Vec<SplitFile> = files.clone().filter(|f| f.level == 0).cloned().collect();
        if !self.looks_up() || level0.is_empty() {
            return rw.reader.section_runs(section);
        }
        let higher = files.clone().any(|f| f.level > 0);
        let lookup = match &self.lookup {
            Some(l) => l.clone(),
            None => {
                let lookup = self.deeper_lookup(rw.mark_deletions)?;
                self.lookup
                    .insert(Arc::new(tokio::sync::Mutex::new(lookup)))
                    .clone()
            }
        };
        let found = found_rows(rw.reader.newest_records(level0)?, lookup, found);
        // level-0 files first, then the newest records above level 0 (if any)
        let mut runs = rw.reader.section_runs(section)?;
        let run = match runs.pop() {
            Some(newest) if higher => {
                let newest_first = Arc::new(MergeConfig {
                    engine: MergeEngineConfig::Deduplicate,
                    ignore_delete: false,
                    keep_retracts: true,
                    ..rw.merge.clone()
                });
                merge_keeping_sequence(vec![newest, found], newest_first, rw.batch_size)
            }
            level0_run => {
                runs.extend(level0_run);
                found
            }
        };
        runs.push(run);
        Ok(runs)
    }
}
