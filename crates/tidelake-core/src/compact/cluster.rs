//! Incremental clustering: the compaction of bucket-unaware append tables with
//! `clustering.incremental` = true (Java 1.3.1 `IncrementalClusterManager`,
//! `IncrementalClusterStrategy`, driven by Flink's `CompactAction.buildForIncrementalClustering`).
//!
//! Each partition's files (bucket 0) form an LSM tree of sorted runs, as Java's
//! `constructPartitionLevels` builds it: every level-0 file is its own run, in the order Java's
//! batch split generator lists them (by `_MIN_SEQUENCE_NUMBER`, ties in manifest order), then one
//! run per non-empty level, by level. Picking per partition:
//! * by strategy: Java `UniversalCompaction` (`compaction.max-size-amplification-percent`,
//!   `compaction.size-ratio`, `num-sorted-run.compaction-trigger`) with `num-levels` levels
//!   ([`UniversalCompaction::pick`]);
//! * full (Java `pickFullCompaction` of the cluster strategy, [`pick_full_cluster`]): every run
//!   into the max level, unless the partition already is one run at the max level whose (first
//!   file's) schema clusters by the same `clustering.columns`.
//!
//! Rewrite: the picked files are read with their deletion vectors applied and their rows written
//! sorted by the clustering curve (`clustering.columns` in the `clustering.strategy` order,
//! `auto`: order/zorder/hilbert by column count; an external sort bounded by
//! `write-buffer-size`), rolled at `target-file-size`, as ordinary new files of the partition
//! which then take the unit's output level (Java `IncrementalClusterManager.upgrade`). The
//! commit is one COMPACT snapshot (through the [`super::job::Compactor`]): the picked files as
//! compact-before, the sorted ones at the output level as compact-after; deletion vectors of
//! the picked files go with them (Java `AppendDeleteFileMaintainer.notifyRemovedDeletionVector`,
//! see [`super::append::rewrite_index`]).
//!
//! Failure: a failed rewrite deletes what it wrote; the commit's failures are the compactor's.
//!
//! History partitions (Java `HistoryPartitionCluster`): when a partition filter selects what to
//! compact and `clustering.history-partition.idle-to-full-sort` is set, partitions the filter
//! leaves out that have files below the max level, none of them created within that duration
//! (by `_CREATION_TIME`, local time), are clustered fully too, at most
//! `clustering.history-partition.limit` of them: the longest idle first (Java takes that many in
//! hash order when more are idle).

use std::sync::Arc;

use futures::TryStreamExt;
use tidelake_spec::options::OrderType;
use tidelake_spec::schema::TableSchema;

use super::append::rewrite_index;
use super::job::Bucket;
use super::rewriter::{delete_files, UnitResult, UnitTask};
use crate::error::{Error, Result};
use crate::layout::TableLayout;
use crate::lsm::levels::{LevelFile, LevelRun};
use crate::lsm::picker::{CompactUnit, RunStat, UniversalCompaction};
use crate::read::split_read::ReadContext;
use crate::table::Table;
use crate::write::input::RowKinds;
use crate::write::sort_key::RowOrder;
use crate::write::table_write::TableWrite;

/// The incremental clustering of one table, at its latest schema.
#[derive(Debug)]
pub(crate) struct IncrementalCluster {
    table: Table,
    schema: Arc<TableSchema>,
    /// Reads every column of the latest schema, deletion vectors applied.
    reader: Arc<ReadContext>,
    universal: UniversalCompaction,
    /// `num-levels` (Java reads it as is: not raised to hold deeper files).
    num_levels: i32,
    /// `clustering.columns`.
    columns: Vec<String>,
    /// `clustering.strategy` for those columns.
    order: OrderType,
}

impl IncrementalCluster {
    /// The clustering of `table` (bucket-unaware, `clustering.incremental`); its clustering
    /// columns and strategy must make an order ([`Error::Invalid`] otherwise).
    pub(crate) fn new(table: Table, universal: UniversalCompaction) -> Result<IncrementalCluster> {
        let schema = table.schema().clone();
        let opts = schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let columns = opts.clustering_columns();
        if columns.is_empty() {
            return Err(Error::invalid(
                "incremental clustering ('clustering.incremental' = 'true') needs \
                 'clustering.columns'",
            ));
        }
        let Some(order) = opts.clustering_strategy(columns.len()).map_err(spec)? else {
            return Err(Error::invalid(
                "incremental clustering cannot sort with 'clustering.strategy' = 'none'",
            ));
        };
        // the columns must exist and be orderable
        RowOrder::new(&schema, &columns, order)?;
        let reader = Arc::new(ReadContext::whole_rows(table.clone(), &schema)?);
        Ok(IncrementalCluster {
            num_levels: opts.num_levels().map_err(spec)?,
            universal,
            columns,
            order,
            table,
            schema,
            reader,
        })
    }

    /// The unit of one partition's files, if any (see the module docs). For `full`, the
    /// schemas of the files must be loaded ([`Table::cached_schema`]).
    pub(crate) fn pick(&self, files: &[LevelFile], full: bool) -> Result<Option<UnitTask>> {
        let ordered = run_order(files);
        let runs = runs_of(&ordered);
        let stats: Vec<RunStat> = runs.iter().map(LevelRun::stat).collect();
        let unit = if full {
            let same_keys = match runs.as_slice() {
                [only] => match only.files.first() {
                    Some(first) => self.clusters_alike(first)?,
                    None => false,
                },
                _ => false,
            };
            pick_full_cluster(self.num_levels, &stats, same_keys)
        } else {
            self.universal.pick(self.num_levels, &stats)
        };
        let Some(unit) = unit else {
            return Ok(None);
        };
        let files: Vec<LevelFile> = runs[..unit.runs]
            .iter()
            .flat_map(|r| r.files.iter().cloned())
            .collect();
        Ok(Some(UnitTask {
            output_level: unit.output_level,
            max_level: self.num_levels - 1,
            files,
            whole_levels: true,
            drop_delete: false,
            deeper: Vec::new(),
        }))
    }

    /// The buckets among `others` (of partitions a partition filter left out) that are history
    /// partitions at local time `now_ms` (see the module docs), longest idle first.
    pub(crate) fn history_partitions(
        &self,
        others: Vec<Bucket>,
        now_ms: i64,
    ) -> Result<Vec<Bucket>> {
        let opts = self.schema.options();
        let spec = |e| Error::from_spec("table options", e);
        let Some(idle) = opts.clustering_history_partition_idle().map_err(spec)? else {
            return Ok(Vec::new());
        };
        if self.schema.partition_keys.is_empty() {
            return Ok(Vec::new());
        }
        let limit =
            usize::try_from(opts.clustering_history_partition_limit().map_err(spec)?).unwrap_or(0);
        let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
        let before = now_ms.saturating_sub(idle_ms);
        let max_level = self.num_levels - 1;
        let mut idle: Vec<(i64, Bucket)> = others
            .into_iter()
            .filter_map(|b| {
                let last = b
                    .files
                    .iter()
                    .filter(|f| f.meta.level < max_level)
                    .map(|f| f.meta.creation_time.unwrap_or(i64::MIN))
                    .max()?;
                (last < before).then_some((last, b))
            })
            .collect();
        idle.sort_by_key(|(last, _)| *last);
        Ok(idle.into_iter().take(limit).map(|(_, b)| b).collect())
    }

    /// Whether `file`'s schema has this table's clustering columns.
    fn clusters_alike(&self, file: &LevelFile) -> Result<bool> {
        let id = file.meta.schema_id;
        let schema = self.table.cached_schema(id).ok_or_else(|| {
            Error::Internal(format!(
                "schema {id} of {} was not loaded before picking",
                file.path
            ))
        })?;
        Ok(schema.options().clustering_columns() == self.columns)
    }

    /// Sort `task`'s files of `bucket` into new files at the unit's output level (see the
    /// module docs); on error nothing it wrote remains.
    pub(crate) async fn run(&self, bucket: &Bucket, task: &UnitTask) -> Result<UnitResult> {
        if task.files.is_empty() {
            return Ok(UnitResult::default());
        }
        let order = RowOrder::new(&self.schema, &self.columns, self.order)?;
        let mut write = TableWrite::for_overwrite(self.table.clone())
            .await?
            .sorted_by(order)?;
        let split = bucket.raw_split(&task.files);
        let sorted = async {
            let mut rows = self.reader.read_split(&split).await?;
            while let Some(batch) = rows.try_next().await? {
                write.write(&batch, RowKinds::Fixed(0)).await?;
            }
            write.prepare_commit().await
        }
        .await;
        let messages = match sorted {
            Ok(messages) => messages,
            Err(e) => {
                // Already failing: the writer's cleanup error is secondary to `e`.
                let _ = write.abort().await;
                return Err(e);
            }
        };
        let written: Vec<_> = messages
            .iter()
            .flat_map(|m| m.new_files.iter().cloned())
            .collect();
        if let Some(stray) = messages
            .iter()
            .find(|m| m.partition != bucket.partition || m.bucket != bucket.bucket)
        {
            let detail = format!(
                "clustering bucket {} of a partition wrote into bucket {} of {}",
                bucket.bucket,
                stray.bucket,
                if stray.partition == bucket.partition {
                    "the same partition"
                } else {
                    "another partition"
                }
            );
            let layout = TableLayout::new(&self.schema)?;
            for m in &messages {
                let dir = layout.bucket_path(&layout.decode_partition(&m.partition)?, m.bucket)?;
                // Already failing: cleanup errors are secondary.
                let _ = delete_files(&self.table, &dir, &m.new_files).await;
            }
            return Err(Error::Internal(detail));
        }
        let mut result = UnitResult {
            before: task.files.iter().map(|f| f.meta.clone()).collect(),
            // Java `IncrementalClusterManager.upgrade`: the sorted files enter at the output level
            after: written
                .iter()
                .map(|f| {
                    let mut f = f.clone();
                    f.level = task.output_level;
                    f
                })
                .collect(),
            written,
            ..UnitResult::default()
        };
        rewrite_index(&self.table, &self.reader, bucket, task, &mut result).await?;
        Ok(result)
    }
}

/// `files` in Java's run order: level 0 by `_MIN_SEQUENCE_NUMBER` (a stable sort: ties keep
/// their listing order, as Java's batch split generator), then the other levels by level.
fn run_order(files: &[LevelFile]) -> Vec<LevelFile> {
    let mut ordered = files.to_vec();
    ordered.sort_by_key(|f| {
        (
            f.meta.level,
            if f.meta.level == 0 {
                f.meta.min_sequence_number
            } else {
                0
            },
        )
    });
    ordered
}

/// The sorted runs of `ordered` ([`run_order`]): one per level-0 file, one per other level.
fn runs_of(ordered: &[LevelFile]) -> Vec<LevelRun<'_>> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < ordered.len() {
        let level = ordered[start].meta.level;
        let end = if level == 0 {
            start + 1
        } else {
            start
                + ordered[start..]
                    .iter()
                    .take_while(|f| f.meta.level == level)
                    .count()
        };
        runs.push(LevelRun {
            level,
            files: &ordered[start..end],
        });
        start = end;
    }
    runs
}

/// Java `IncrementalClusterStrategy.pickFullCompaction`: nothing without runs, nor for a single
/// run at the max level clustered by the table's columns (`same_keys`); else every run into
/// the max level.
pub(crate) fn pick_full_cluster(
    num_levels: i32,
    runs: &[RunStat],
    same_keys: bool,
) -> Option<CompactUnit> {
    let max_level = num_levels - 1;
    match runs {
        [] => None,
        [only] if only.level == max_level && same_keys => None,
        _ => Some(CompactUnit {
            output_level: max_level,
            runs: runs.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::levels::tests::level_file;

    fn file(name: &str, level: i32, size: i64, min_seq: i64) -> LevelFile {
        let mut f = level_file(name, level, size, min_seq);
        f.meta.min_sequence_number = min_seq;
        f
    }

    fn names(files: &[LevelFile]) -> Vec<&str> {
        files.iter().map(|f| f.meta.file_name.as_str()).collect()
    }

    #[test]
    fn runs_follow_java_level_order() {
        // level 0 oldest first (ties keep the listing order), then levels ascending
        let files = vec![
            file("c", 0, 10, 5),
            file("x", 3, 100, 0),
            file("a", 0, 10, 0),
            file("y", 1, 50, 0),
            file("b", 0, 10, 0),
            file("z", 3, 100, 9),
        ];
        let ordered = run_order(&files);
        assert_eq!(names(&ordered), ["a", "b", "c", "y", "x", "z"]);
        let runs = runs_of(&ordered);
        let shape: Vec<(i32, usize)> = runs.iter().map(|r| (r.level, r.files.len())).collect();
        assert_eq!(shape, [(0, 1), (0, 1), (0, 1), (1, 1), (3, 2)]);
        assert_eq!(runs[4].stat().size, 200);
    }

    #[test]
    fn full_pick_skips_one_clustered_max_level_run() {
        let run = |level, size| RunStat { level, size };
        assert_eq!(pick_full_cluster(6, &[], true), None);
        assert_eq!(pick_full_cluster(6, &[run(5, 10)], true), None);
        // other clustering columns: the max-level run is clustered again
        assert_eq!(
            pick_full_cluster(6, &[run(5, 10)], false),
            Some(CompactUnit {
                output_level: 5,
                runs: 1
            })
        );
        assert_eq!(
            pick_full_cluster(6, &[run(3, 10)], true),
            Some(CompactUnit {
                output_level: 5,
                runs: 1
            })
        );
        assert_eq!(
            pick_full_cluster(6, &[run(0, 1), run(5, 10)], true),
            Some(CompactUnit {
                output_level: 5,
                runs: 2
            })
        );
    }

    #[test]
    fn strategy_pick_takes_oldest_level0_first() {
        // Java IncrementalClusterStrategyTest-like: trigger 3, five level-0 files of equal
        // size: size amplification picks everything into the max level
        let universal = UniversalCompaction {
            max_size_amp: 200,
            size_ratio: 1,
            trigger: 3,
        };
        let files: Vec<LevelFile> = (0..5)
            .map(|i| file(&format!("f{i}"), 0, 10, 4 - i))
            .collect();
        let ordered = run_order(&files);
        assert_eq!(names(&ordered), ["f4", "f3", "f2", "f1", "f0"]);
        let stats: Vec<RunStat> = runs_of(&ordered).iter().map(LevelRun::stat).collect();
        assert_eq!(
            universal.pick(4, &stats),
            Some(CompactUnit {
                output_level: 3,
                runs: 5
            })
        );
        // a large max-level run: size ratio groups the small level-0 runs, output right
        // below the next run's level
        let mut files = files;
        files.push(file("big", 3, 1000, 0));
        let ordered = run_order(&files);
        let stats: Vec<RunStat> = runs_of(&ordered).iter().map(LevelRun::stat).collect();
        assert_eq!(
            universal.pick(4, &stats),
            Some(CompactUnit {
                output_level: 2,
                runs: 5
            })
        );
    }
}
