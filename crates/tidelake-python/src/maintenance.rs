//! Maintenance entry points of `RawTable` (behind `tidelake.Table.expire_snapshots`,
//! `remove_orphan_files`, tags, rollback, consumers, partitions and `system`).
//!
//! Results cross as plain Python values (dicts of counts, lists of tuples); system tables as a
//! `pyarrow.Table` through the C data interface. Every call releases the GIL.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tidelake_core::api::maintenance::{
    self, ChangelogRetention, DeletedFiles, ExpireConfig, PartitionExpireConfig, RollbackTarget,
};
use tidelake_core::api::ops;
use tidelake_core::api::schema::TableLayout;
use tidelake_core::api::{Error, Table};
use tidelake_spec::datum::Datum;

use crate::errors::{to_py, IntoPyResult};
use crate::metadata::tag_fields;
use crate::runtime::block_on;
use crate::stream::pyarrow_table;
use crate::table::RawTable;

const DAY_MS: i64 = 86_400_000;

fn counts<'py>(py: Python<'py>, deleted: &DeletedFiles) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("data_files", deleted.data_files)?;
    d.set_item("changelog_files", deleted.changelog_files)?;
    d.set_item("manifest_files", deleted.manifest_files)?;
    d.set_item("index_files", deleted.index_files)?;
    d.set_item("statistics_files", deleted.statistics_files)?;
    Ok(d)
}

fn millis(ms: i64, what: &str) -> PyResult<Duration> {
    u64::try_from(ms).map(Duration::from_millis).map_err(|_| {
        to_py(Error::invalid(format!(
            "{what} must not be negative, got {ms}"
        )))
    })
}

/// Partition specs from JSON `[{"k": v, ...}, ...]`, bound to `table`'s partition types.
fn partition_specs(table: &Table, specs_json: &str) -> PyResult<Vec<Vec<(String, Datum)>>> {
    let json: serde_json::Value = serde_json::from_str(specs_json)
        .map_err(|e| to_py(Error::invalid(format!("bad partition specs: {e}"))))?;
    let layout = TableLayout::new(table.schema()).py()?;
    maintenance::partition_specs_from_json(&layout, &json).py()
}

#[pymethods]
impl RawTable {
    /// Expire snapshots (with `dry_run`, only count what would go); unset arguments come from
    /// the table options. Returns counts.
    #[pyo3(signature = (retain_min=None, retain_max=None, older_than_ms=None, max_deletes=None, dry_run=false))]
    fn expire_snapshots<'py>(
        &self,
        py: Python<'py>,
        retain_min: Option<i64>,
        retain_max: Option<i64>,
        older_than_ms: Option<i64>,
        max_deletes: Option<i64>,
        dry_run: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let defaults = ExpireConfig::of_table(&self.table).py()?;
        let config = ExpireConfig {
            retain_min: retain_min.unwrap_or(defaults.retain_min),
            retain_max: retain_max.unwrap_or(defaults.retain_max),
            older_than_ms: older_than_ms.unwrap_or(defaults.older_than_ms),
            max_deletes: max_deletes.unwrap_or(defaults.max_deletes),
            changelog: None,
        }
        .with_table_changelog(self.table.schema().options(), self.table.env().now_millis())
        .py()?;
        let result = if dry_run {
            block_on(py, maintenance::plan_expiration(&self.table, &config))
        } else {
            block_on(py, maintenance::expire_snapshots(&self.table, &config))
        }?
        .py()?;
        let d = counts(py, &result.deleted)?;
        d.set_item("snapshots", result.snapshots)?;
        d.set_item("earliest_snapshot", result.earliest)?;
        d.set_item("changelogs_kept", result.changelogs_kept)?;
        d.set_item("changelogs_expired", result.changelogs_expired)?;
        Ok(d)
    }

    /// Expire long-lived changelogs (Paimon's `expire_changelogs` procedure, whose defaults
    /// unset arguments take: keep at most `i32::MAX`, at least 1, no time cutoff, no delete
    /// limit). Returns counts.
    #[pyo3(signature = (retain_min=None, retain_max=None, older_than_ms=None, max_deletes=None))]
    fn expire_changelogs<'py>(
        &self,
        py: Python<'py>,
        retain_min: Option<i64>,
        retain_max: Option<i64>,
        older_than_ms: Option<i64>,
        max_deletes: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let retention = ChangelogRetention {
            retain_min: retain_min.unwrap_or(1),
            retain_max: retain_max.unwrap_or(i64::from(i32::MAX)),
            older_than_ms: older_than_ms.unwrap_or(i64::MIN),
            max_deletes: max_deletes.unwrap_or(i64::from(i32::MAX)),
        };
        let (expired, deleted) =
            block_on(py, maintenance::expire_changelogs(&self.table, &retention))?.py()?;
        let d = counts(py, &deleted)?;
        d.set_item("changelogs", expired)?;
        Ok(d)
    }

    /// Find (and unless `dry_run` delete) orphan files older than `older_than_ms` (default: a
    /// day ago); returns (absolute path, size) pairs.
    #[pyo3(signature = (older_than_ms=None, dry_run=false))]
    fn remove_orphan_files(
        &self,
        py: Python<'_>,
        older_than_ms: Option<i64>,
        dry_run: bool,
    ) -> PyResult<Vec<(String, u64)>> {
        let cutoff = older_than_ms.unwrap_or_else(|| self.table.env().now_millis() - DAY_MS);
        let files = block_on(
            py,
            maintenance::remove_orphan_files(&self.table, cutoff, dry_run),
        )?
        .py()?;
        Ok(files
            .into_iter()
            .map(|f| (self.table.io().display(&f.path), f.size))
            .collect())
    }

    /// Create a tag; returns its fields ([`crate::metadata`]).
    #[pyo3(signature = (name, snapshot_id=None, time_retained_ms=None))]
    fn create_tag<'py>(
        &self,
        py: Python<'py>,
        name: String,
        snapshot_id: Option<i64>,
        time_retained_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let retained = time_retained_ms
            .map(|ms| millis(ms, "time_retained"))
            .transpose()?;
        let tag = block_on(
            py,
            maintenance::create_tag(&self.table, &name, snapshot_id, retained),
        )?
        .py()?;
        tag_fields(py, &name, &tag)
    }

    /// Replace an existing tag by one of a snapshot (latest by default); returns its fields.
    #[pyo3(signature = (name, snapshot_id=None, time_retained_ms=None))]
    fn replace_tag<'py>(
        &self,
        py: Python<'py>,
        name: String,
        snapshot_id: Option<i64>,
        time_retained_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let retained = time_retained_ms
            .map(|ms| millis(ms, "time_retained"))
            .transpose()?;
        let tag = block_on(
            py,
            maintenance::replace_tag(&self.table, &name, snapshot_id, retained),
        )?
        .py()?;
        tag_fields(py, &name, &tag)
    }

    /// Rename tag `name` to `target`.
    fn rename_tag(&self, py: Python<'_>, name: String, target: String) -> PyResult<()> {
        block_on(py, maintenance::rename_tag(&self.table, &name, &target))?.py()
    }

    /// Delete a tag and the files only it kept; returns counts.
    fn delete_tag<'py>(&self, py: Python<'py>, name: String) -> PyResult<Bound<'py, PyDict>> {
        let deleted = block_on(py, maintenance::delete_tag(&self.table, &name))?.py()?;
        counts(py, &deleted)
    }

    /// The tags whose retention has passed now (local time), by name; nothing is deleted.
    fn expired_tags(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let now = self.table.env().local_now();
        block_on(py, maintenance::expired_tags(&self.table, now))?.py()
    }

    /// Roll back to a snapshot id or a tag (exactly one).
    #[pyo3(signature = (snapshot_id=None, tag=None))]
    fn rollback_to<'py>(
        &self,
        py: Python<'py>,
        snapshot_id: Option<i64>,
        tag: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let target = match (snapshot_id, tag) {
            (Some(id), None) => RollbackTarget::Snapshot(id),
            (None, Some(name)) => RollbackTarget::Tag(name),
            _ => {
                return Err(to_py(Error::invalid(
                    "rollback_to needs exactly one of snapshot_id and tag",
                )))
            }
        };
        let result = block_on(py, maintenance::rollback_to(&self.table, &target))?.py()?;
        let d = counts(py, &result.deleted)?;
        d.set_item("snapshot_id", result.snapshot_id)?;
        d.set_item("snapshots", result.snapshots)?;
        d.set_item("tags", result.tags)?;
        Ok(d)
    }

    /// Undecodable snapshots and missing or truncated files of the newest snapshots, and the
    /// last good snapshot: `{"latest", "last_good", "problems": [(path, reason)]}`.
    fn find_damage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let damage = block_on(py, maintenance::find_damage(&self.table))?.py()?;
        let d = PyDict::new(py);
        d.set_item("latest", damage.latest)?;
        d.set_item("last_good", damage.last_good)?;
        let problems: Vec<(String, String)> = damage
            .problems
            .into_iter()
            .map(|p| (p.path, p.reason))
            .collect();
        d.set_item("problems", problems)?;
        Ok(d)
    }

    /// The consistency check replaying the snapshot chain: `{"latest", "snapshots_checked",
    /// "state_snapshot", "violations": [{"kind", "class", "snapshot", "path", "detail"}]}`.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let report = block_on(py, maintenance::verify(&self.table))?.py()?;
        let d = PyDict::new(py);
        d.set_item("latest", report.latest)?;
        d.set_item("snapshots_checked", report.snapshots_checked)?;
        d.set_item("state_snapshot", report.state_snapshot)?;
        let violations = report
            .violations
            .into_iter()
            .map(|v| {
                let item = PyDict::new(py);
                item.set_item("kind", v.kind.as_str())?;
                item.set_item("class", v.kind.class())?;
                item.set_item("snapshot", v.snapshot)?;
                item.set_item("path", v.path)?;
                item.set_item("detail", v.detail)?;
                Ok(item)
            })
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("violations", violations)?;
        Ok(d)
    }

    /// Every consumer as (id, next snapshot id), sorted by id.
    fn consumers(&self, py: Python<'_>) -> PyResult<Vec<(String, i64)>> {
        block_on(py, maintenance::consumers(self.table.branch_io()))?.py()
    }

    fn reset_consumer(
        &self,
        py: Python<'_>,
        consumer_id: String,
        next_snapshot: i64,
    ) -> PyResult<()> {
        block_on(
            py,
            maintenance::reset_consumer(&self.table, &consumer_id, next_snapshot),
        )?
        .py()
    }

    fn delete_consumer(&self, py: Python<'_>, consumer_id: String) -> PyResult<()> {
        block_on(py, maintenance::delete_consumer(&self.table, &consumer_id))?.py()
    }

    /// Drop the partitions matching any spec of `specs_json` (`[{"k": v, ...}, ...]`); returns
    /// the new snapshot ids.
    fn drop_partitions(&self, py: Python<'_>, specs_json: String) -> PyResult<Vec<i64>> {
        let specs = partition_specs(&self.table, &specs_json)?;
        block_on(py, maintenance::drop_partitions(&self.table, specs))?.py()
    }

    /// Compact the manifests of the latest snapshot into a COMPACT snapshot (the
    /// `compact_manifest` procedure); its id, none when they were already compact.
    fn compact_manifests(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        let committed = block_on(py, ops::compact_manifests(&self.table))?.py()?;
        Ok(committed.last_id())
    }

    /// The live data files of the latest snapshot that storage lacks, by path.
    fn unexisting_files(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let missing = block_on(py, ops::unexisting_files(&self.table))?.py()?;
        Ok(missing.into_iter().map(|f| f.path).collect())
    }

    /// Remove the live data files storage lacks in one commit (the `remove_unexisting_files`
    /// procedure): their paths and the snapshot id, none when nothing was missing.
    fn remove_unexisting_files(&self, py: Python<'_>) -> PyResult<(Vec<String>, Option<i64>)> {
        let (missing, committed) = block_on(py, ops::remove_unexisting_files(&self.table))?.py()?;
        let paths = missing.into_iter().map(|f| f.path).collect();
        Ok((paths, committed.last_id()))
    }

    /// Purge the table (the `purge_files` procedure): what went, as a dict.
    fn purge_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let purged = block_on(py, ops::purge_files(&self.table))?.py()?;
        let d = PyDict::new(py);
        d.set_item("branches", purged.branches)?;
        d.set_item("tags", purged.tags)?;
        d.set_item("consumers", purged.consumers)?;
        d.set_item("snapshot_id", purged.truncated.last_id())?;
        d.set_item("snapshots_expired", purged.expired.snapshots)?;
        d.set_item("deleted", counts(py, &purged.expired.deleted)?)?;
        let orphans: Vec<String> = purged.orphans.into_iter().map(|f| f.path).collect();
        d.set_item("orphan_files", orphans)?;
        Ok(d)
    }

    /// Mark the partitions of `specs_json` (`[{"k": v, ...}, ...]`, every partition column)
    /// done by the table's `partition.mark-done-action`.
    fn mark_partition_done(&self, py: Python<'_>, specs_json: String) -> PyResult<()> {
        let specs = partition_specs(&self.table, &specs_json)?;
        block_on(py, ops::mark_partitions_done(&self.table, specs))?.py()
    }

    /// Expire partitions by the table options (`expiration_ms` overrides
    /// `partition.expiration-time`); returns the dropped partitions as (key, value) lists.
    #[pyo3(signature = (expiration_ms=None))]
    fn expire_partitions(
        &self,
        py: Python<'_>,
        expiration_ms: Option<i64>,
    ) -> PyResult<Vec<Vec<(String, String)>>> {
        let expiration = expiration_ms
            .map(|ms| millis(ms, "expiration"))
            .transpose()?;
        let config = PartitionExpireConfig::from_options(self.table.schema().options(), expiration)
            .py()?
            .ok_or_else(|| {
                to_py(Error::invalid(
                    "partition.expiration-time is not set; pass an expiration",
                ))
            })?;
        block_on(
            py,
            maintenance::expire_partitions(&self.table, &config, self.table.env().local_now()),
        )?
        .py()
    }

    /// System table `name` as a pyarrow.Table.
    fn system_table<'py>(&self, py: Python<'py>, name: String) -> PyResult<Bound<'py, PyAny>> {
        let t = block_on(py, maintenance::system_table(&self.table, &name))?.py()?;
        pyarrow_table(py, t.batches, t.schema)
    }

    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = block_on(py, maintenance::history(&self.table))?.py()?;
        pyarrow_table(py, t.batches, t.schema)
    }
}
