//! [`RowLevelPlan`]: a row-level change's capability check, strategy and tasks.
//!
//! The capability check reads the table's resolved options (fallback keys included, e.g.
//! `deduplicate.ignore-delete` for `ignore-delete`), so a delete the table would silently drop
//! is refused with [`Error::Unsupported`], never acknowledged. Tasks group the splits of one
//! snapshot, pruned by the filter, by (partition, bucket): a task holds every planned split of
//! its bucket, so tasks touch disjoint buckets and their changes commit together.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tidelake_spec::options::{MergeEngine, Options};

use super::task::RowLevelTask;
use crate::error::{Error, Result};
use crate::ops::Read;
use crate::scan::predicate::Predicate;
use crate::scan::Split;
use crate::table::Table;

/// How a row-level change removes rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowLevelStrategy {
    /// Primary-key tables: `-D` records for deleted keys, full rows for updated ones.
    RowKinds,
    /// Append tables with `deletion-vectors.enabled`: removed rows' positions are marked in
    /// their files' deletion vectors.
    DeletionVectors,
    /// Other append tables: the files of a split with a removed row are rewritten without it.
    Rewrite,
}

/// The strategy of a change of a table with these options (`primary_key`: it has one), or
/// [`Error::Unsupported`] when its merge engine cannot express it. `what` names the verb in
/// the message; `deletes`: the change deletes rows.
pub fn row_level_strategy(
    options: &Options,
    primary_key: bool,
    what: &str,
    deletes: bool,
) -> Result<RowLevelStrategy> {
    let spec = |e| Error::from_spec("table options", e);
    if !primary_key {
        return Ok(if options.deletion_vectors_enabled().map_err(spec)? {
            RowLevelStrategy::DeletionVectors
        } else {
            RowLevelStrategy::Rewrite
        });
    }
    let engine = options.merge_engine().map_err(spec)?;
    if !matches!(
        engine,
        MergeEngine::Deduplicate | MergeEngine::PartialUpdate
    ) {
        return Err(Error::Unsupported(format!(
            "{what} on a {engine} table: only deduplicate and partial-update tables support row-level changes"
        )));
    }
    if deletes && options.ignore_delete().map_err(spec)? {
        return Err(Error::Unsupported(format!(
            "{what} deletes rows, but the table ignores deletes (ignore-delete=true, or one of its fallback keys)"
        )));
    }
    if deletes
        && engine == MergeEngine::PartialUpdate
        && !options
            .partial_update_remove_record_on_delete()
            .map_err(spec)?
    {
        return Err(Error::Unsupported(format!(
            "{what} deletes rows, but this partial-update table cannot take delete records: set partial-update.remove-record-on-delete=true"
        )));
    }
    Ok(RowLevelStrategy::RowKinds)
}

/// A row-level change to plan: built with [`RowLevelPlan::new`], planned with
/// [`RowLevelPlan::plan`].
#[derive(Clone, Debug)]
pub struct RowLevelPlan {
    table: Table,
    what: String,
    snapshot_id: Option<i64>,
    filter: Option<serde_json::Value>,
    deletes: bool,
}

/// A planned change: the snapshot read (`None`: the table had none, there are no tasks), the
/// strategy and one task per (partition, bucket) with splits the filter may match.
#[derive(Clone, Debug)]
pub struct PlannedRowLevel {
    pub snapshot_id: Option<i64>,
    pub strategy: RowLevelStrategy,
    pub tasks: Vec<RowLevelTask>,
}

impl RowLevelPlan {
    /// The change `what` (`delete`, `update`, `merge`: named in errors) of the latest snapshot
    /// of `table`, every row a candidate, deleting nothing.
    pub fn new(table: &Table, what: impl Into<String>) -> RowLevelPlan {
        RowLevelPlan {
            table: table.clone(),
            what: what.into(),
            snapshot_id: None,
            filter: None,
            deletes: false,
        }
    }

    /// Read snapshot `id` instead of the latest.
    pub fn snapshot_id(mut self, id: i64) -> RowLevelPlan {
        self.snapshot_id = Some(id);
        self
    }

    /// The filter tree (JSON, as [`Predicate::from_json`] reads it) that every row the change
    /// may touch matches: the pushed-down terms and the partition restriction. It prunes the
    /// plan, and primary-key tasks read only the merged rows it keeps.
    pub fn filter(mut self, filter: serde_json::Value) -> RowLevelPlan {
        self.filter = Some(filter);
        self
    }

    /// Whether the change deletes rows (checked against the table's merge engine).
    pub fn deletes(mut self, deletes: bool) -> RowLevelPlan {
        self.deletes = deletes;
        self
    }

    /// The strategy, or [`Error::Unsupported`] when the table cannot take the change (no I/O).
    pub fn strategy(&self) -> Result<RowLevelStrategy> {
        let schema = self.table.schema();
        row_level_strategy(
            schema.options(),
            !schema.primary_keys.is_empty(),
            &self.what,
            self.deletes,
        )
    }

    /// Check the change, plan its snapshot and group the splits into tasks. A snapshot given
    /// that is still the latest is planned as the latest (in the table's latest schema, so a
    /// column added since its commit reads as null and can be filtered on, as in Paimon), an
    /// older one in its own schema.
    pub async fn plan(self) -> Result<PlannedRowLevel> {
        let strategy = self.strategy()?;
        let read = |snapshot_id: Option<i64>| -> Result<Read> {
            let mut read = Read::new(&self.table);
            if let Some(filter) = &self.filter {
                read = read.filter(Predicate::from_json(filter)?);
            }
            if let Some(id) = snapshot_id {
                read = read.snapshot_id(id);
            }
            Ok(read)
        };
        let mut plan = read(None)?.plan().await?.plan;
        if let Some(id) = self.snapshot_id {
            if plan.snapshot.as_ref().map(|s| s.id) != Some(id) {
                plan = read(Some(id))?.plan().await?.plan;
            }
        }
        let snapshot_id = plan.snapshot.as_ref().map(|s| s.id);
        let mut groups: BTreeMap<(Vec<u8>, i32), Vec<Split>> = BTreeMap::new();
        for split in plan.splits {
            groups
                .entry((split.partition.clone(), split.bucket))
                .or_default()
                .push(split);
        }
        let tasks = groups
            .into_values()
            .map(|splits| RowLevelTask {
                location: self.table.location().to_string(),
                branch: self.table.branch().to_string(),
                schema_id: plan.schema.id,
                strategy,
                filter: self.filter.clone(),
                splits,
            })
            .collect();
        Ok(PlannedRowLevel {
            snapshot_id,
            strategy,
            tasks,
        })
    }
}

#[cfg(test)]
mod tests {
    use tidelake_spec::options::{IGNORE_DELETE, IGNORE_DELETE_FALLBACK_KEYS};

    use super::*;
    use crate::error::ErrorKind;

    fn options(pairs: &[(&str, &str)]) -> Options {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn refusal(pairs: &[(&str, &str)], deletes: bool) -> String {
        let err = row_level_strategy(&options(pairs), true, "delete", deletes).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        err.to_string()
    }

    #[test]
    fn append_tables_rewrite_or_mark_deletion_vectors() {
        let plain = row_level_strategy(&options(&[]), false, "delete", true).unwrap();
        assert_eq!(plain, RowLevelStrategy::Rewrite);
        let dv = options(&[("deletion-vectors.enabled", "true")]);
        let marked = row_level_strategy(&dv, false, "update", true).unwrap();
        assert_eq!(marked, RowLevelStrategy::DeletionVectors);
        // a primary-key table with deletion vectors still changes rows by row kind
        let pk = row_level_strategy(&dv, true, "update", true).unwrap();
        assert_eq!(pk, RowLevelStrategy::RowKinds);
    }

    #[test]
    fn ignore_delete_and_every_fallback_key_refuse_deletes_only() {
        let mut keys = vec![IGNORE_DELETE];
        keys.extend(IGNORE_DELETE_FALLBACK_KEYS);
        for key in keys {
            for engine in ["deduplicate", "partial-update"] {
                let pairs = [
                    (key, "true"),
                    ("merge-engine", engine),
                    ("partial-update.remove-record-on-delete", "true"),
                ];
                let message = refusal(&pairs, true);
                assert!(message.contains("ignores deletes"), "{key}: {message}");
                // an update deletes nothing: allowed
                let update = row_level_strategy(&options(&pairs), true, "update", false).unwrap();
                assert_eq!(update, RowLevelStrategy::RowKinds, "{key}");
            }
            // false under the key itself: deletes allowed
            let off = row_level_strategy(&options(&[(key, "false")]), true, "delete", true);
            assert_eq!(off.unwrap(), RowLevelStrategy::RowKinds, "{key}");
        }
        // ignore-delete set wins over its fallback keys
        let pairs = [
            (IGNORE_DELETE, "false"),
            (IGNORE_DELETE_FALLBACK_KEYS[1], "true"),
        ];
        let wins = row_level_strategy(&options(&pairs), true, "delete", true).unwrap();
        assert_eq!(wins, RowLevelStrategy::RowKinds);
    }

    #[test]
    fn merge_engines_without_row_kinds_are_refused() {
        for engine in ["aggregation", "first-row"] {
            let message = refusal(&[("merge-engine", engine)], false);
            assert!(
                message.contains(&format!("delete on a {engine} table")),
                "{message}"
            );
        }
    }

    #[test]
    fn partial_update_deletes_need_remove_record_on_delete() {
        let engine = ("merge-engine", "partial-update");
        let message = refusal(&[engine], true);
        assert!(
            message.contains("partial-update.remove-record-on-delete=true"),
            "{message}"
        );
        let allowed = [engine, ("partial-update.remove-record-on-delete", "true")];
        let ok = row_level_strategy(&options(&allowed), true, "delete", true).unwrap();
        assert_eq!(ok, RowLevelStrategy::RowKinds);
        let update = row_level_strategy(&options(&[engine]), true, "update", false).unwrap();
        assert_eq!(update, RowLevelStrategy::RowKinds);
    }
}
