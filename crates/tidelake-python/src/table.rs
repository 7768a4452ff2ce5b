//! `RawTable`: the binding of [`tidelake_core::api::Table`] behind `tidelake.table.Table`.
//!
//! Metadata crosses as dicts of the typed structs' fields ([`crate::metadata`]; the Python
//! layer turns them into dataclasses), schemas and data as Arrow through the C data interface.
//! Every storage call releases the GIL.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PySchema;
use tidelake_core::api::branch::MAIN_BRANCH;
use tidelake_core::api::schema::{
    alter_table, create_table, ColumnPath, ColumnPosition, SchemaChange, TableSpec,
};
use tidelake_core::api::{FileIO, ReadCache, StorageOptions, Table};

use tidelake_core::api::ops::{Changes, Read};
use tidelake_core::api::scan::Split;

use tidelake_core::api::ops::ReplayPolicy;
use tidelake_core::api::Error;
use tidelake_spec::options::{IncrementalBetweenScanMode, OptionValue, ResolvedOption};

use crate::arrow_arg::{FieldArg, SchemaArg};
use crate::errors::{to_py, IntoPyResult};
use crate::metadata::{schema_fields, snapshot_fields, tag_fields};
use crate::runtime::block_on;
use crate::scan::{parse_filter, RawScan};
use crate::stream::RawBatches;

#[pyclass(module = "tidelake._internal", frozen)]
pub struct RawTable {
    pub(crate) table: Table,
}

/// The read cache (bytes) of a table opened or created without saying: what its scans and
/// lookups keep of immutable files (decoded manifests, Parquet footers and page indexes,
/// deletion vectors, file and hash indexes), shared by every scan of the `Table` object.
pub(crate) const DEFAULT_CACHE_BYTES: usize = 64 << 20;

impl RawTable {
    /// `table` reading through a new read cache of `cache_bytes` (none for 0), unless it
    /// already has one (tables derived from a cached table share its cache).
    pub(crate) fn cached(table: Table, cache_bytes: usize) -> RawTable {
        let table = match table.io().read_cache() {
            None if cache_bytes > 0 => {
                table.with_read_cache(Some(Arc::new(ReadCache::new(cache_bytes))))
            }
            _ => table,
        };
        RawTable { table }
    }

    /// [`RawTable::cached`] with the default budget.
    pub(crate) fn new(table: Table) -> RawTable {
        RawTable::cached(table, DEFAULT_CACHE_BYTES)
    }
}

/// The creation spec of a table from binding arguments.
pub(crate) fn table_spec(
    primary_keys: Vec<String>,
    partition_keys: Vec<String>,
    bucket: Option<i32>,
    options: Vec<(String, String)>,
    comment: Option<String>,
) -> TableSpec {
    TableSpec {
        primary_keys,
        partition_keys,
        bucket,
        options,
        comment,
    }
}

/// One schema change from Python: `(op, name, arg, field, position)`; see `Table.alter`.
type PyChange = (
    String,
    Option<NameArg>,
    Option<String>,
    Option<FieldArg>,
    Option<String>,
);

/// The `name` of a [`PyChange`]: one name (a column, an option key) or the path to a nested
/// field (`["s", "x"]`).
#[derive(FromPyObject)]
enum NameArg {
    One(String),
    Path(Vec<String>),
}

impl NameArg {
    fn path(self) -> Result<ColumnPath, Error> {
        match self {
            NameArg::One(name) => Ok(name.into()),
            NameArg::Path(names) => ColumnPath::new(names),
        }
    }

    /// One name, for changes that take no nested path (`what` names the change in messages).
    fn single(self, what: &str) -> Result<String, Error> {
        match self {
            NameArg::One(name) => Ok(name),
            NameArg::Path(mut names) if names.len() == 1 => Ok(names.remove(0)),
            NameArg::Path(names) => Err(Error::invalid(format!(
                "'{what}' takes one name, not the nested path {names:?}"
            ))),
        }
    }
}

/// `"last"` (or none), `"first"` or `"after:<column>"`.
fn column_position(position: Option<&str>) -> ColumnPosition {
    match position {
        None | Some("last") => ColumnPosition::Last,
        Some("first") => ColumnPosition::First,
        Some(after) => {
            ColumnPosition::After(after.strip_prefix("after:").unwrap_or(after).to_string())
        }
    }
}

fn schema_change(change: PyChange) -> Result<SchemaChange, Error> {
    let (op, name, arg, field, position) = change;
    let need = |v: Option<String>, what: &str| {
        v.ok_or_else(|| Error::invalid(format!("'{op}' needs {what}")))
    };
    let name = name.ok_or_else(|| Error::invalid(format!("'{op}' needs a column")));
    let data_type = |field: Option<FieldArg>| {
        field
            .map(|f| f.0.data_type().clone())
            .ok_or_else(|| Error::invalid(format!("'{op}' needs a pyarrow field")))
    };
    Ok(match op.as_str() {
        "add_column" => SchemaChange::AddColumn {
            data_type: data_type(field)?,
            path: name?.path()?,
            position: column_position(position.as_deref()),
            comment: arg,
        },
        "move_column" => SchemaChange::MoveColumn {
            name: name?.single("move_column")?,
            position: column_position(position.as_deref()),
        },
        "update_column_nullability" => SchemaChange::UpdateColumnNullability {
            nullable: match need(arg, "'true' or 'false'")?.as_str() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(Error::invalid(format!(
                        "'{op}' needs 'true' or 'false', got '{other}'"
                    )))
                }
            },
            path: name?.path()?,
        },
        "update_column_comment" => SchemaChange::UpdateColumnComment {
            path: name?.path()?,
            comment: arg,
        },
        "update_column_default" => SchemaChange::UpdateColumnDefault {
            path: name?.path()?,
            default: arg,
        },
        "rename_column" => SchemaChange::RenameColumn {
            to: need(arg, "a new name")?,
            path: name?.path()?,
        },
        "drop_column" => SchemaChange::DropColumn {
            path: name?.path()?,
        },
        "update_column_type" => SchemaChange::UpdateColumnType {
            data_type: data_type(field)?,
            path: name?.path()?,
        },
        "set_option" => SchemaChange::SetOption {
            key: name?.single("set_option")?,
            value: need(arg, "a value")?,
        },
        "remove_option" => SchemaChange::RemoveOption {
            key: name?.single("remove_option")?,
        },
        "update_comment" => SchemaChange::UpdateComment { comment: arg },
        other => return Err(Error::invalid(format!("unknown schema change '{other}'"))),
    })
}

#[pymethods]
impl RawTable {
    /// Create a table at `location` and open it.
    #[staticmethod]
    #[pyo3(signature = (location, schema, primary_keys, partition_keys, bucket, options, comment=None, storage_options=None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        location: String,
        schema: SchemaArg,
        primary_keys: Vec<String>,
        partition_keys: Vec<String>,
        bucket: Option<i32>,
        options: Vec<(String, String)>,
        comment: Option<String>,
        storage_options: Option<StorageOptions>,
    ) -> PyResult<RawTable> {
        let spec = table_spec(primary_keys, partition_keys, bucket, options, comment);
        let schema = schema.0;
        let io = FileIO::open_with(&location, &storage_options.unwrap_or_default()).py()?;
        let table = block_on(py, create_table(io, &schema, &spec))?.py()?;
        Ok(RawTable::new(table))
    }

    /// Apply schema changes; returns the table at its new schema.
    fn alter(&self, py: Python<'_>, changes: Vec<PyChange>) -> PyResult<RawTable> {
        let changes = changes
            .into_iter()
            .map(schema_change)
            .collect::<Result<Vec<_>, _>>()
            .py()?;
        let table = block_on(py, alter_table(&self.table, &changes))?.py()?;
        Ok(RawTable::new(table))
    }

    /// Re-open the table (latest schema).
    fn reload(&self, py: Python<'_>) -> PyResult<RawTable> {
        let table = block_on(py, self.table.reopen())?.py()?;
        Ok(RawTable::new(table))
    }

    /// Open `branch` (`main` by default) of the table at `location` (a path or a URL such as
    /// `s3://bucket/prefix`), reading through a read cache of `cache_bytes` (0: none).
    #[staticmethod]
    #[pyo3(signature = (location, storage_options=None, branch=None, cache_bytes=DEFAULT_CACHE_BYTES))]
    fn open(
        py: Python<'_>,
        location: String,
        storage_options: Option<StorageOptions>,
        branch: Option<String>,
        cache_bytes: usize,
    ) -> PyResult<RawTable> {
        let io = FileIO::open_with(&location, &storage_options.unwrap_or_default()).py()?;
        let branch = branch.unwrap_or_else(|| MAIN_BRANCH.to_string());
        let table = block_on(py, Table::open_branch(io, &branch))?.py()?;
        Ok(RawTable::cached(table, cache_bytes))
    }

    /// Whether the table's catalog takes part in its commits (its lock or commit endpoint).
    #[getter]
    fn commits_through_catalog(&self) -> bool {
        self.table.environment().commits_through_catalog()
    }

    /// Bytes held in the table's read cache (0 without one).
    #[getter]
    fn cached_bytes(&self) -> usize {
        self.table.io().read_cache().map_or(0, |c| c.used_bytes())
    }

    #[getter]
    fn location(&self) -> String {
        self.table.location().to_string()
    }

    /// Java `TableSchema.crossPartitionUpdate`: a primary key that lacks a partition column, so
    /// an upsert may move a key between partitions (one writer's key index must see them all).
    #[getter]
    fn cross_partition_update(&self) -> bool {
        self.table.schema().cross_partition_update()
    }

    /// What a batch append of this table is merged on, `(upsert keys, sequence fields)`, when
    /// its options name an `upsert-key` (Java Spark's `RewriteUpsertTable`); `None`: appends
    /// append.
    #[getter]
    fn upsert_merge(&self) -> Option<(Vec<String>, Vec<String>)> {
        let options = self.table.schema().options();
        let keys = options.upsert_key();
        (!keys.is_empty()).then(|| (keys, options.sequence_field()))
    }

    /// The storage options the table was opened with (re-opening elsewhere needs them).
    #[getter]
    fn storage_options(&self) -> StorageOptions {
        self.table.io().options().clone()
    }

    /// The fields of the latest schema version.
    fn schema_version<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        schema_fields(py, self.table.schema())
    }

    /// The effective value of every option tidelake interprets, defaults applied
    /// (`Options::resolved`): ints, booleans, strings, lists of names, memory sizes in bytes,
    /// durations as `datetime.timedelta`, None when unset without a default.
    fn effective_options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let schema = self.table.schema();
        let resolved = schema
            .options()
            .resolved(!schema.primary_keys.is_empty())
            .map_err(|e| to_py(Error::from_spec(self.table.location(), e)))?;
        let timedelta = py.import("datetime")?.getattr("timedelta")?;
        let dict = PyDict::new(py);
        for ResolvedOption { key, value } in resolved {
            match value {
                OptionValue::Bool(b) => dict.set_item(key, b)?,
                OptionValue::Int(i) => dict.set_item(key, i)?,
                OptionValue::Bytes(n) => dict.set_item(key, n)?,
                OptionValue::Duration(d) => {
                    dict.set_item(key, timedelta.call1((0, d.as_secs(), d.subsec_micros()))?)?
                }
                OptionValue::Text(t) => dict.set_item(key, t)?,
                OptionValue::List(names) => dict.set_item(key, names)?,
                OptionValue::Unset => dict.set_item(key, py.None())?,
            }
        }
        Ok(dict)
    }

    /// The latest schema as a pyarrow.Schema.
    fn arrow_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let schema =
            tidelake_spec::arrow::to_arrow_schema(&self.table.schema().fields).map_err(|e| {
                to_py(tidelake_core::api::Error::from_spec(
                    self.table.location(),
                    e,
                ))
            })?;
        PySchema::new(Arc::new(schema)).into_pyarrow(py)
    }

    /// The fields of every schema version, ascending by id.
    fn schema_versions<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let schemas = block_on(py, self.table.schemas())?.py()?;
        schemas.iter().map(|s| schema_fields(py, s)).collect()
    }

    /// The fields of every snapshot, ascending by id.
    fn snapshots<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let snaps = block_on(py, self.table.snapshot_manager().all())?.py()?;
        snaps.iter().map(|s| snapshot_fields(py, s)).collect()
    }

    /// The fields of one snapshot.
    fn snapshot<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyDict>> {
        let snap = block_on(py, self.table.snapshot_manager().snapshot(id))?.py()?;
        snapshot_fields(py, &snap)
    }

    /// The fields of the newest snapshot committed at or before `timestamp_ms`, or None.
    fn snapshot_at<'py>(
        &self,
        py: Python<'py>,
        timestamp_ms: i64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let snap = block_on(py, self.table.snapshot_manager().at_or_before(timestamp_ms))?.py()?;
        snap.map(|s| snapshot_fields(py, &s)).transpose()
    }

    /// Seconds to wait before replay `replay` (0 = the first) of a refused one-shot operation
    /// that has run for `elapsed_ms`, or None when it has had its replays or `commit.timeout`
    /// (the one replay policy, `ops::ReplayPolicy`).
    fn replay_wait(&self, replay: u32, elapsed_ms: u64) -> PyResult<Option<f64>> {
        let policy = ReplayPolicy::of(&self.table).py()?;
        Ok(policy
            .wait(replay, Duration::from_millis(elapsed_ms))
            .map(|d| d.as_secs_f64()))
    }

    /// The latest snapshot id, or None.
    fn latest_snapshot_id(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        block_on(py, self.table.snapshot_manager().latest_id())?.py()
    }

    /// The fields of every tag, sorted by name.
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let tags = block_on(py, self.table.snapshot_manager().tags())?.py()?;
        tags.iter().map(|(n, t)| tag_fields(py, n, t)).collect()
    }

    /// Plan a batch scan.
    #[pyo3(signature = (columns=None, filter_json=None, snapshot_id=None, tag=None, timestamp_ms=None, batch_size=None, options=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        snapshot_id: Option<i64>,
        tag: Option<String>,
        timestamp_ms: Option<i64>,
        batch_size: Option<usize>,
        options: Option<Vec<(String, String)>>,
    ) -> PyResult<RawScan> {
        let mut read = Read::new(&self.table).options(options.unwrap_or_default());
        read = given(read, parse_filter(filter_json.as_deref())?, Read::filter);
        read = given(read, columns, Read::columns);
        read = given(read, batch_size, Read::batch_size);
        read = given(read, snapshot_id, Read::snapshot_id);
        read = given(read, tag, Read::tag);
        read = given(read, timestamp_ms, Read::timestamp_ms);
        Ok(block_on(py, read.plan())?.py()?.into())
    }

    /// Plan a read of the changes between snapshots (start, end] (by id or by epoch-ms
    /// timestamps) or between two tags, as `mode` says (`auto`, `delta`, `changelog`, `diff`;
    /// default: the table's `incremental-between-scan-mode`, and `diff` between tags unless
    /// `incremental-between-tag-to-snapshot`); `tidelake_core::api::ops::Changes` checks and
    /// resolves the range.
    #[pyo3(signature = (start_snapshot=None, end_snapshot=None, columns=None, filter_json=None, batch_size=None, mode=None, start_tag=None, end_tag=None, start_timestamp_ms=None, end_timestamp_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn changes(
        &self,
        py: Python<'_>,
        start_snapshot: Option<i64>,
        end_snapshot: Option<i64>,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        batch_size: Option<usize>,
        mode: Option<String>,
        start_tag: Option<String>,
        end_tag: Option<String>,
        start_timestamp_ms: Option<i64>,
        end_timestamp_ms: Option<i64>,
    ) -> PyResult<RawScan> {
        let mut changes = Changes::new(&self.table);
        changes = given(
            changes,
            parse_filter(filter_json.as_deref())?,
            Changes::filter,
        );
        if let Some(mode) = mode {
            let mode = mode
                .parse::<IncrementalBetweenScanMode>()
                .map_err(|e| Error::from_spec("changes mode", e))
                .py()?;
            changes = changes.mode(mode);
        }
        changes = given(changes, columns, Changes::columns);
        changes = given(changes, batch_size, Changes::batch_size);
        changes = given(changes, start_snapshot, Changes::start_snapshot);
        changes = given(changes, end_snapshot, Changes::end_snapshot);
        changes = given(changes, start_timestamp_ms, Changes::start_timestamp_ms);
        changes = given(changes, end_timestamp_ms, Changes::end_timestamp_ms);
        changes = given(changes, start_tag, Changes::start_tag);
        changes = given(changes, end_tag, Changes::end_tag);
        Ok(block_on(py, changes.plan())?.py()?.into())
    }

    /// Read one split produced by `RawScan.splits()` (possibly in another process) without
    /// planning again: the read is set up from the split's schema id and the scan's arguments.
    #[pyo3(signature = (split, schema_id, columns=None, filter_json=None, with_row_kind=false, batch_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn read_split(
        &self,
        py: Python<'_>,
        split: &[u8],
        schema_id: i64,
        columns: Option<Vec<String>>,
        filter_json: Option<String>,
        with_row_kind: bool,
        batch_size: Option<usize>,
    ) -> PyResult<RawBatches> {
        let split = Split::from_bytes(split).map_err(to_py)?;
        let filter = parse_filter(filter_json.as_deref())?;
        let table = self.table.clone();
        let reader = block_on(py, async move {
            if with_row_kind {
                let mut changes = Changes::new(&table);
                changes = given(changes, filter, Changes::filter);
                changes = given(changes, columns, Changes::columns);
                changes = given(changes, batch_size, Changes::batch_size);
                changes.split_reader(schema_id).await
            } else {
                let mut read = Read::new(&table);
                read = given(read, filter, Read::filter);
                read = given(read, columns, Read::columns);
                read = given(read, batch_size, Read::batch_size);
                read.split_reader(schema_id).await
            }
        })?
        .py()?;
        Ok(RawBatches::new(
            reader.output_schema(),
            reader.stream(vec![split], None),
        ))
    }
}

/// `builder` with `set` applied to `value` when given: a Python keyword left out keeps the
/// builder's default.
fn given<B, T>(builder: B, value: Option<T>, set: impl FnOnce(B, T) -> B) -> B {
    match value {
        Some(v) => set(builder, v),
        None => builder,
    }
}
