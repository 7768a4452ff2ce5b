"""The :class:`Table` API: metadata, reads and writes of one Paimon table."""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, get_args

from . import _internal
from ._metadata import SchemaVersion, Snapshot, Tag, VerifyReport, Violation
from .exceptions import InvalidArgumentError
from .expr import Filter, Or, filter_json, to_filter
from .lookup import Keys, Lookuper, key_table
from .scan import Scan
from .write import (
    BATCH_COMMIT_IDENTIFIER,
    CommitMessage,
    Committed,
    Progress,
    TableWriter,
    WriteResult,
    arrow_input,
    check_messages,
    commit_user_of,
    raw_messages,
    replayable,
    replayed,
    snapshot_ids,
    write_result,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from .compaction import CompactionPlan
    from .dml import MergeBuilder
    from .stage import Stage


__all__ = ["Table", "open_table", "create_table", "write_table", "open_or_create_table"]


def _schema_of(schema: Any) -> pa.Schema:
    """The Arrow schema of a schema or of data (pyarrow/polars/pandas frames, Arrow producers)."""
    import pyarrow as pa

    if isinstance(schema, pa.Schema):
        return schema
    if type(schema).__module__.startswith("pandas"):
        return pa.Schema.from_pandas(schema, preserve_index=False)
    if isinstance(getattr(schema, "schema", None), pa.Schema):
        return schema.schema
    if hasattr(schema, "__arrow_c_schema__"):
        return pa.schema(schema)
    if hasattr(schema, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(schema).schema
    raise InvalidArgumentError(f"schema must be a pyarrow.Schema or Arrow data, got {type(schema).__name__}")


def _storage_options(storage_options: dict[str, str] | None) -> dict[str, str] | None:
    if storage_options is None:
        return None
    if not isinstance(storage_options, dict):
        raise InvalidArgumentError(f"storage_options must be a dict, got {type(storage_options).__name__}")
    return {str(k): str(v) for k, v in storage_options.items()}


def _option_pairs(options: dict[str, str] | None) -> list[tuple[str, str]]:
    """Table options as the binding takes them (text keys and values, in order)."""
    return [(str(k), str(v)) for k, v in (options or {}).items()]


def create_table(path: str | os.PathLike[str], schema: pa.Schema, primary_keys: list[str] | None = None,
                 partition_keys: list[str] | None = None, bucket: int | None = None,
                 options: dict[str, str] | None = None, comment: str | None = None,
                 storage_options: dict[str, str] | None = None) -> Table:
    """Create a Paimon table at ``path`` (writes ``schema/schema-0``) and open it.

    ``path`` is a local path or an object-store URL (``s3://bucket/prefix``, ``gs://``,
    ``az://``); see :func:`open_table` for ``storage_options``.

    Args:
        schema: the columns, as a :class:`pyarrow.Schema`. Primary-key columns become NOT NULL.
        primary_keys: makes a primary-key table (upserts, deletes, merge engines).
        partition_keys: partition columns.
        bucket: fixed bucket count (> 0), or -1 (the default) for dynamic buckets on
            primary-key tables and bucket-unaware append tables, or -2 (postpone, primary-key
            tables): writes stay invisible until :meth:`Table.compact` moves them into buckets.
        options: Paimon table options (``merge-engine``, ``changelog-producer``, ...).

    Raises:
        TableAlreadyExistsError: a table is already there.
        SchemaMismatchError: a type Paimon cannot store, or inconsistent keys.
    """
    raw = _internal.RawTable.create(os.fspath(path), _schema_of(schema), list(primary_keys or []),
                                    list(partition_keys or []), bucket,
                                    _option_pairs(options), comment,
                                    _storage_options(storage_options))
    return Table(raw)


WriteTableMode = Literal["error", "append", "overwrite", "ignore"]
"""What :func:`write_table` does when the table exists (deltalake's modes)."""
WRITE_MODES: tuple[str, ...] = get_args(WriteTableMode)

ChangesMode = Literal["auto", "delta", "changelog", "diff"]
"""Paimon's ``incremental-between-scan-mode`` values, for :meth:`Table.changes`."""
CHANGES_MODES: tuple[str, ...] = get_args(ChangesMode)


def write_table(target: str | os.PathLike[str], data: Any, *, mode: WriteTableMode = "error",
                primary_keys: list[str] | None = None, partition_by: list[str] | None = None,
                bucket: int | None = None, options: dict[str, str] | None = None,
                storage_options: dict[str, str] | None = None, catalog: Any = None,
                progress: Progress | None = None) -> Table:
    """Write ``data`` to the table at ``target``, creating it from the data's schema first if
    it does not exist; returns the table.

    ``target`` is a path or object-store URL, or a ``"database.table"`` identifier of
    ``catalog``. ``data`` is anything :meth:`Table.write` takes (pandas, polars, pyarrow, any
    Arrow stream). ``mode``, as deltalake's: ``"error"`` (the default) raises
    TableAlreadyExistsError if the table exists, ``"append"`` adds rows (upserts them on a
    primary-key table), ``"overwrite"`` replaces the table's rows, ``"ignore"`` writes nothing if
    the table exists. ``primary_keys``, ``partition_by``, ``bucket`` and ``options`` are used when
    the table is created; given for an existing table, they must match it. ``progress`` as
    for :meth:`Table.write`.
    """
    import pyarrow as pa

    if mode not in WRITE_MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(WRITE_MODES)}; got {mode!r}")
    data = arrow_input(data)
    if not isinstance(getattr(data, "schema", None), pa.Schema):
        data = pa.RecordBatchReader.from_stream(data)  # one stream: its schema, then its rows
    table, created = open_or_create_table(target, _schema_of(data), mode=mode, primary_keys=primary_keys,
                                          partition_by=partition_by, bucket=bucket, options=options,
                                          storage_options=storage_options, catalog=catalog)
    if not created and mode == "ignore":
        return table
    table.write(data, mode="overwrite" if mode == "overwrite" else "append", progress=progress)
    return table


def open_or_create_table(target: str | os.PathLike[str], schema: pa.Schema, *, mode: str,
                         primary_keys: list[str] | None = None, partition_by: list[str] | None = None,
                         bucket: int | None = None, options: dict[str, str] | None = None,
                         storage_options: dict[str, str] | None = None,
                         catalog: Any = None) -> tuple[Table, bool]:
    """The table at ``target`` (as :func:`write_table`'s), created with ``schema`` and the
    other arguments if it does not exist; and whether it was created. With ``mode="error"`` an
    existing table raises TableAlreadyExistsError; with ``"ignore"`` it is returned as it is;
    else given keys must match the table's (SchemaMismatchError)."""
    from .exceptions import SchemaMismatchError, TableAlreadyExistsError

    if catalog is not None:
        def open_it() -> Table:
            return catalog.get_table(str(target))

        def create_it() -> Table:
            return catalog.create_table(str(target), schema, primary_keys, partition_by, bucket, options)
    else:
        def open_it() -> Table:
            return open_table(target, storage_options)

        def create_it() -> Table:
            return create_table(target, schema, primary_keys, partition_by, bucket, options,
                                storage_options=storage_options)
    try:
        return create_it(), True
    except TableAlreadyExistsError:
        if mode == "error":
            raise
    table = open_it()
    if mode == "ignore":
        return table, False
    for what, given, actual in (("primary keys", primary_keys, table.primary_keys),
                                ("partition keys", partition_by, table.partition_keys)):
        if given is not None and list(given) != actual:
            raise SchemaMismatchError(f"{what} {list(given)} differ from the table's {actual}")
    return table, False


def _epoch_ms(timestamp: Any) -> int:
    """Epoch milliseconds of a time-travel point: a datetime (naive = local time, as Paimon's
    ``scan.timestamp``), an ISO-8601 string, or epoch milliseconds."""
    import datetime as dt

    if isinstance(timestamp, bool):
        raise InvalidArgumentError(f"timestamp must be a datetime, an ISO-8601 string or epoch ms, got {timestamp!r}")
    if isinstance(timestamp, int):
        return timestamp
    if isinstance(timestamp, str):
        try:
            timestamp = dt.datetime.fromisoformat(timestamp)
        except ValueError:
            raise InvalidArgumentError(f"timestamp {timestamp!r} is not an ISO-8601 date-time") from None
    if isinstance(timestamp, dt.date) and not isinstance(timestamp, dt.datetime):
        timestamp = dt.datetime.combine(timestamp, dt.time())
    if isinstance(timestamp, dt.datetime):
        aware = timestamp if timestamp.tzinfo is not None else timestamp.astimezone()
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return (aware - epoch) // dt.timedelta(milliseconds=1)
    raise InvalidArgumentError(
        f"timestamp must be a datetime, an ISO-8601 string or epoch ms, got {type(timestamp).__name__}")


def _is_rows(data: Any) -> bool:
    """Whether ``data`` is tabular data (a frame, table or Arrow producer), not a filter."""
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return True
    return type(data).__module__.split(".")[0] in ("pandas", "polars")


def _check_batch_size(batch_size: int | None) -> None:
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
        raise InvalidArgumentError(f"batch_size must be a positive integer, got {batch_size!r}")


def open_table(path: str | os.PathLike[str], storage_options: dict[str, str] | None = None,
               branch: str | None = None, cache_bytes: int = 64 << 20) -> Table:
    """Open the Paimon table at ``path`` (a directory holding ``schema/``, ``snapshot/``...), on
    ``branch`` (default ``main``): reads, writes, tags and maintenance then act on that branch.

    The returned :class:`Table` keeps up to ``cache_bytes`` of what its reads decode of files
    that never change once committed (manifests, Parquet footers and page indexes, deletion
    vectors, file and hash indexes), shared by all its scans and lookups; 0 keeps nothing. Every
    read still resolves the latest snapshot afresh, so commits of other processes are seen.

    ``path`` is a local path or an object-store URL: ``s3://bucket/prefix`` (also ``s3a://``),
    ``gs://bucket/prefix``, ``az://container/prefix``. Credentials and settings come from the
    standard environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_REGION``, ``AWS_ENDPOINT``...)
    and from ``storage_options``, which win: object_store's configuration keys, e.g.
    ``{"aws_endpoint": "http://127.0.0.1:9000", "aws_region": "us-east-1", "allow_http": "true"}``.
    An unknown key raises InvalidArgumentError.

    Raises:
        TableNotFoundError: nothing at ``path`` looks like a Paimon table, or it has no such branch.
        CorruptMetadataError: the latest schema file cannot be parsed.
    """
    if branch is not None and not isinstance(branch, str):
        raise InvalidArgumentError(f"branch must be a string, got {type(branch).__name__}")
    if not isinstance(cache_bytes, int) or cache_bytes < 0:
        raise InvalidArgumentError(f"cache_bytes must be an integer >= 0, got {cache_bytes!r}")
    return Table(_internal.RawTable.open(os.fspath(path), _storage_options(storage_options), branch, cache_bytes))


Column = str | list[str] | tuple[str, ...]
"""A column for schema changes: its name, or the names reaching a nested field (``["s", "x"]``)."""


def _column(name: Column) -> str | list[str]:
    """``name`` as the binding takes it; bad input is an :class:`InvalidArgumentError`."""
    if isinstance(name, str):
        return name
    if isinstance(name, (list, tuple)) and name and all(isinstance(n, str) for n in name):
        return list(name)
    raise InvalidArgumentError(f"a column is a name or a non-empty list of names, got {name!r}")


class Table:
    """A Paimon table. Obtain one with :func:`open_table`."""

    def __init__(self, raw: _internal.RawTable) -> None:
        self._raw = raw

    def _replace(self, raw: _internal.RawTable) -> Table:
        self._raw = raw
        for cached in ("_schema_version", "schema"):
            self.__dict__.pop(cached, None)
        return self

    def refresh(self) -> Table:
        """Re-read the latest schema (after another process altered the table)."""
        return self._replace(self._raw.reload())

    # ---- schema evolution ----------------------------------------------------------------------
    # A column is a name, or a list of names reaching a field nested in ROW (struct) columns, as
    # Paimon's ``fieldNames``: ``["s", "x"]`` is field ``x`` of struct column ``s``; through a list
    # the path steps ``"element"`` and through a map ``"value"`` (``["l", "element", "x"]``).

    def add_column(self, name: Column, type: pa.DataType, *, first: bool = False, after: str | None = None,
                   comment: str | None = None) -> Table:
        """Add a nullable column, or a field to a struct column (``["s", "x"]``), last by default
        or first / after a sibling (a field of the same struct). Existing rows read it as null."""
        import pyarrow as pa

        position = "first" if first else (f"after:{after}" if after else "last")
        path = _column(name)
        leaf = path if isinstance(path, str) else path[-1]
        return self._alter([("add_column", path, comment, pa.field(leaf, type), position)])

    def rename_column(self, old: Column, new: str) -> Table:
        """Rename a column or nested field; data files keep working through field ids."""
        return self._alter([("rename_column", _column(old), new, None, None)])

    def drop_column(self, name: Column) -> Table:
        """Drop a (non-key) column or a nested field."""
        return self._alter([("drop_column", _column(name), None, None, None)])

    def update_column_type(self, name: Column, type: pa.DataType) -> Table:
        """Widen a column's or nested field's type (INT -> BIGINT, FLOAT -> DOUBLE, wider
        DECIMAL...); ``["l", "element"]`` widens a list's elements, ``["m", "value"]`` a map's
        values."""
        import pyarrow as pa

        return self._alter([("update_column_type", _column(name), None, pa.field("_", type), None)])

    def move_column(self, name: str, *, first: bool = False, after: str | None = None, last: bool = False) -> Table:
        """Move a column first, last or after another (Paimon's ``updateColumnPosition``, which
        moves top-level columns only); data files keep working through field ids."""
        if [first, after is not None, last].count(True) != 1:
            raise InvalidArgumentError("move_column needs exactly one of first=True, after='column' or last=True")
        position = "first" if first else ("last" if last else f"after:{after}")
        return self._alter([("move_column", _column(name), None, None, position)])

    def update_column_nullability(self, name: Column, nullable: bool) -> Table:
        """Make a column (or nested field, list element, map value) nullable, or NOT NULL
        (Paimon's ``updateColumnNullability``). A primary-key column stays NOT NULL; a nullable
        column becomes NOT NULL only when the table option
        ``alter-column-null-to-not-null.disabled`` is ``false`` (existing rows are not checked,
        as in Paimon)."""
        return self._alter([("update_column_nullability", _column(name), "true" if nullable else "false", None, None)])

    def update_column_comment(self, name: Column, comment: str | None) -> Table:
        """Set (or, with None, clear) a column's or nested field's comment."""
        return self._alter([("update_column_comment", _column(name), comment, None, None)])

    def update_column_default(self, name: Column, default: Any) -> Table:
        """Set (or, with None, clear) a column's or nested field's default value (Paimon's
        ``updateColumnDefaultValue``): writers store it where a written row's value is null or
        the column is not given, as Java's writers do. ``default`` is a value or its text
        (``5``, ``"2024-01-01"``); it must convert to the column's type."""
        text = None if default is None else (str(default).lower() if isinstance(default, bool) else str(default))
        return self._alter([("update_column_default", _column(name), text, None, None)])

    def set_option(self, key: str, value: str) -> Table:
        return self._alter([("set_option", key, str(value), None, None)])

    def remove_option(self, key: str) -> Table:
        return self._alter([("remove_option", key, None, None, None)])

    def _alter(self, changes: list[tuple]) -> Table:
        return self._replace(self._raw.alter(changes))

    def __repr__(self) -> str:
        kind = "primary-key" if self.primary_keys else "append"
        on = "" if self.branch == "main" else f" on branch {self.branch!r}"
        return f"<tidelake.Table {self.path!r} ({kind}){on}>"

    @property
    def branch(self) -> str:
        """The branch this table is opened on (``main`` unless :func:`open_table` named one)."""
        return self._raw.branch

    @property
    def path(self) -> str:
        """The table's root location."""
        return self._raw.location

    @property
    def storage_options(self) -> dict[str, str]:
        """The storage options the table was opened with (pass them on to re-open it elsewhere)."""
        return self._raw.storage_options

    @cached_property
    def _schema_version(self) -> SchemaVersion:
        return SchemaVersion(**self._raw.schema_version())

    @cached_property
    def schema(self) -> pa.Schema:
        """The latest schema as a :class:`pyarrow.Schema`."""
        return self._raw.arrow_schema()

    @property
    def schema_id(self) -> int:
        """Id of the latest schema."""
        return self._schema_version.id

    @property
    def primary_keys(self) -> list[str]:
        return list(self._schema_version.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self._schema_version.partition_keys)

    @property
    def options(self) -> dict[str, str]:
        """The options the latest schema sets, as raw strings (see :attr:`effective_options`)."""
        return dict(self._schema_version.options)

    @property
    def effective_options(self) -> dict[str, Any]:
        """The effective value of every option tidelake interprets, Paimon's defaults applied:
        ints, booleans, strings, lists of column names, memory sizes in bytes and durations as
        :class:`datetime.timedelta`; None for an option unset and without a default. A value
        that does not parse raises :class:`InvalidArgumentError` naming the option."""
        return self._raw.effective_options()

    def schemas(self) -> list[SchemaVersion]:
        """Every schema version, oldest first."""
        return [SchemaVersion(**s) for s in self._raw.schema_versions()]

    def snapshots(self) -> list[Snapshot]:
        """Every retained snapshot, oldest first."""
        return [Snapshot(**s) for s in self._raw.snapshots()]

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """One snapshot. Raises TableNotFoundError naming the available range if it is absent."""
        return Snapshot(**self._raw.snapshot(snapshot_id))

    def snapshot_at(self, timestamp: Any) -> Snapshot | None:
        """The newest snapshot committed at or before ``timestamp`` (a datetime, naive = local
        time; an ISO-8601 string; or epoch ms), or None if there is none that old."""
        fields = self._raw.snapshot_at(_epoch_ms(timestamp))
        return None if fields is None else Snapshot(**fields)

    def latest_snapshot(self) -> Snapshot | None:
        """The latest snapshot, or None for a table never written to."""
        sid = self.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    def latest_snapshot_id(self) -> int | None:
        """The latest snapshot's id, found without reading the snapshot (None for a table
        never written to)."""
        return self._raw.latest_snapshot_id()

    def tags(self) -> list[Tag]:
        """Every tag, sorted by name."""
        return [Tag(**t) for t in self._raw.tags()]

    # ---- reads --------------------------------------------------------------------------------

    def _expression_filter(self, filter: Any, columns: list[str] | None) -> tuple[Any, list[str] | None]:
        """Split a pyarrow Expression filter from the pushed-down forms.

        Returns (expression or None, columns to read). An Expression is applied by pyarrow after
        the merge, so every column is read and projected afterwards; the terms the planner can
        take (:func:`tidelake.expr.substrait.pushable_filter`) are pushed down as well.
        """
        import pyarrow.compute as pc

        if isinstance(filter, pc.Expression):
            return filter, None
        return None, columns

    def scan(self, columns: list[str] | None = None, filter: Any = None, snapshot_id: int | None = None,
             tag: str | None = None, timestamp_ms: int | None = None, batch_size: int | None = None,
             options: dict[str, str] | None = None, *, timestamp: Any = None) -> Scan:
        """Plan a read of one snapshot (latest by default, or by id, tag or timestamp).

        Args:
            columns: columns to return, in this order (all by default).
            filter: DNF tuples ``[("qty", ">=", 50), ...]`` (a list of lists is OR), a text
                filter ``"qty >= 50 and name in ('a', 'b')"`` (the CLI's ``--filter`` language),
                or a JSON filter tree. For a :class:`pyarrow.compute.Expression` use
                :meth:`to_arrow` or :meth:`to_reader`, which apply it after reading.
            snapshot_id, tag, timestamp: time travel; give at most one. ``timestamp`` reads the
                latest snapshot committed at or before it: a :class:`datetime.datetime` (naive
                means local time, as Paimon's ``scan.timestamp``), an ISO-8601 string, or epoch
                milliseconds (also accepted as ``timestamp_ms``).
            batch_size: rows per batch.
            options: table options overridden for this read only (Paimon's dynamic options),
                e.g. ``{"deletion-vectors.merge-on-read": "true"}``.

        Raises:
            InvalidArgumentError: unknown column, bad filter or conflicting time-travel arguments.
            TableNotFoundError: the snapshot or tag does not exist (the message lists what does).
        """
        _check_batch_size(batch_size)
        if timestamp is not None:
            if timestamp_ms is not None:
                raise InvalidArgumentError("give timestamp or timestamp_ms, not both")
            timestamp_ms = _epoch_ms(timestamp)
        tree = filter_json(to_filter(filter))
        raw = self._raw.scan(columns=columns, filter_json=tree, snapshot_id=snapshot_id, tag=tag,
                             timestamp_ms=timestamp_ms, batch_size=batch_size,
                             options=list((options or {}).items()))
        return Scan(self._raw, raw, columns, tree, with_row_kind=False)

    def pinned_scan(self, snapshot_id: int, columns: list[str] | None = None, filter: Any = None, *,
                    batch_size: int | None = None) -> Scan:
        """Plan a read of snapshot ``snapshot_id`` as a read of the latest snapshot sees it, for a
        job that pinned the latest snapshot when it started (a SQL query, a row-level change):
        in the table's latest schema while it is still the latest snapshot (a column added since
        it was committed reads as null and can be filtered on, as in Paimon), else in its own
        schema, as time travel reads it."""
        latest = self.scan(columns=columns, filter=filter, batch_size=batch_size)
        if latest.snapshot_id == snapshot_id:
            return latest
        return self.scan(columns=columns, filter=filter, snapshot_id=snapshot_id, batch_size=batch_size)

    def to_reader(self, columns: list[str] | None = None, filter: Any = None, snapshot_id: int | None = None,
                  tag: str | None = None, timestamp_ms: int | None = None,
                  batch_size: int | None = None, options: dict[str, str] | None = None, *,
                  timestamp: Any = None, progress: Progress | None = None) -> pa.RecordBatchReader:
        """Stream the rows of one snapshot as a :class:`pyarrow.RecordBatchReader`.

        Arguments as :meth:`scan`; ``filter`` may also be a :class:`pyarrow.compute.Expression`.
        ``progress(rows, total)`` follows the read (:data:`tidelake.write.Progress`).
        """
        expr, read_cols = self._expression_filter(filter, columns)
        if expr is None:
            return self.scan(columns, filter, snapshot_id, tag, timestamp_ms, batch_size, options,
                             timestamp=timestamp).to_reader(progress)
        import pyarrow as pa
        import pyarrow.dataset as ds

        from .expr.substrait import pushable_filter

        reader = self.scan(read_cols, pushable_filter(expr, self.schema), snapshot_id, tag, timestamp_ms, batch_size,
                           options, timestamp=timestamp).to_reader(progress)
        try:
            scanner = ds.Scanner.from_batches(reader, filter=expr, columns=columns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise InvalidArgumentError(f"bad filter expression {expr}: {e}") from e
        return scanner.to_reader()

    def to_arrow(self, columns: list[str] | None = None, filter: Any = None, snapshot_id: int | None = None,
                 tag: str | None = None, timestamp_ms: int | None = None,
                 options: dict[str, str] | None = None, *, timestamp: Any = None,
                 progress: Progress | None = None) -> pa.Table:
        """Read one snapshot into a :class:`pyarrow.Table`. Arguments as :meth:`to_reader`."""
        expr, _ = self._expression_filter(filter, columns)
        if expr is None:
            return self.scan(columns, filter, snapshot_id, tag, timestamp_ms, options=options,
                             timestamp=timestamp).to_arrow(progress)
        return self.to_reader(columns, filter, snapshot_id, tag, timestamp_ms, options=options,
                              timestamp=timestamp, progress=progress).read_all()

    def lookup(self, keys: Keys, columns: list[str] | None = None, snapshot_id: int | None = None) -> pa.Table:
        """The latest row of each primary key in ``keys``, merged as a read merges it (merge
        engine, deletion vectors, ``sequence.field``), in the order of ``keys``; keys without a row
        are left out and a key given twice is returned once.

        Args:
            keys: a pyarrow Table/RecordBatch or dict of exactly the primary-key columns, or a
                list of keys (tuples in primary-key order; plain values for a one-column key).
            columns: columns to return (all by default).
            snapshot_id: the snapshot to read (the latest by default).

        Raises:
            InvalidArgumentError: not a primary-key table, keys without exactly the primary-key
                columns, null or uncastable key values, unknown column.
        """
        keys = key_table(keys, self.primary_keys, self.schema)
        return self._raw.lookup(keys, columns, snapshot_id)

    def lookuper(self, snapshot_id: int | None = None, cache_bytes: int | None = None) -> Lookuper:
        """A long-lived :class:`~tidelake.lookup.Lookuper` for repeated lookups of one snapshot
        (the latest by default). It keeps up to ``cache_bytes`` of what it reads of immutable
        files (Parquet footers and page indexes, files' key columns, deletion vectors,
        manifests); 0 caches nothing; by default the table's ``lookup.cache-max-memory-size``
        (Paimon's lookup cache size, 256 MiB unless set)."""
        if cache_bytes is not None and cache_bytes < 0:
            raise InvalidArgumentError(f"cache_bytes must be >= 0, got {cache_bytes}")
        return Lookuper(self._raw.lookuper(snapshot_id, cache_bytes), self.primary_keys, self.schema)

    def to_pyarrow_dataset(self, snapshot_id: int | None = None, tag: str | None = None,
                           timestamp: Any = None) -> Any:
        """This table as a :class:`pyarrow.dataset.Dataset` pinned to one snapshot (the latest by
        default), for DuckDB (``duckdb.sql("select ... from ds")`` or ``con.register``) and other
        engines that scan datasets lazily: they push their columns into tidelake's read; their
        filters are applied to the merged rows. Re-scannable. An older snapshot (time travel)
        has its own schema, as :meth:`scan` reads it."""
        from .dataset import TableDataset

        travel = snapshot_id is not None or tag is not None or timestamp is not None
        return TableDataset(self, self.scan(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp), pinned=not travel)

    def to_pandas(self, columns: list[str] | None = None, filter: Any = None, **read: Any) -> Any:
        """Read one snapshot into a :class:`pandas.DataFrame`. Arguments as :meth:`to_arrow`."""
        return self.to_arrow(columns, filter, **read).to_pandas()

    def to_polars(self, columns: list[str] | None = None, filter: Any = None, **read: Any) -> Any:
        """Read one snapshot into a :class:`polars.DataFrame`. Arguments as :meth:`to_arrow`;
        :func:`tidelake.polars.scan_table` gives a lazy frame with push-down instead."""
        import polars as pl

        return pl.from_arrow(self.to_arrow(columns, filter, **read))

    def changes(self, start_snapshot: int | None = None, end_snapshot: int | None = None,
                columns: list[str] | None = None, filter: Any = None, *, start_timestamp: Any = None,
                end_timestamp: Any = None, start_tag: str | None = None, end_tag: str | None = None,
                mode: ChangesMode | None = None) -> pa.Table:
        """The changes between two snapshots, with a leading ``_row_kind`` column (``+I``,
        ``-U``, ``+U``, ``-D``).

        The range is ``(start_snapshot, end_snapshot]`` (up to the latest by default;
        ``start_snapshot`` may be 0 to include the first snapshot), or the snapshots committed
        after ``start_timestamp`` and up to ``end_timestamp`` (datetime, ISO-8601 string or
        epoch ms; Paimon's ``incremental-between-timestamp``), or two tags ``start_tag`` and
        ``end_tag``.

        ``mode`` is Paimon's ``incremental-between-scan-mode`` (default: the table's option,
        ``auto``): ``"delta"`` the rows APPEND commits wrote, ``"changelog"`` the changelog files
        (tables with a changelog producer), ``"auto"`` changelog when the table has a producer,
        else delta, and ``"diff"`` the difference between the rows of the start and the end
        snapshot (``-D`` for rows gone, the new row for rows added or changed), which works when
        the snapshots between have expired. Changes between tags are a diff unless ``mode`` says
        otherwise (or the table sets ``incremental-between-tag-to-snapshot``).
        """
        return self.changes_scan(start_snapshot, end_snapshot, columns, filter, start_timestamp=start_timestamp,
                                 end_timestamp=end_timestamp, start_tag=start_tag, end_tag=end_tag,
                                 mode=mode).to_arrow()

    def changes_scan(self, start_snapshot: int | None = None, end_snapshot: int | None = None,
                     columns: list[str] | None = None, filter: Any = None, *, start_timestamp: Any = None,
                     end_timestamp: Any = None, start_tag: str | None = None, end_tag: str | None = None,
                     mode: ChangesMode | None = None) -> Scan:
        """Plan a read of changes; see :meth:`changes`. The engine checks the range (one start,
        tags both or neither and alone) and resolves timestamps and tags to snapshots."""
        if mode is not None and mode not in CHANGES_MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(CHANGES_MODES)}; got {mode!r}")
        tree = filter_json(to_filter(filter))
        raw = self._raw.changes(start_snapshot, end_snapshot=end_snapshot, columns=columns, filter_json=tree,
                                mode=mode, start_tag=start_tag, end_tag=end_tag,
                                start_timestamp_ms=None if start_timestamp is None else _epoch_ms(start_timestamp),
                                end_timestamp_ms=None if end_timestamp is None else _epoch_ms(end_timestamp))
        return Scan(self._raw, raw, columns, tree, with_row_kind=True)

    # ---- writes -------------------------------------------------------------------------------

    def writer(self, commit_user: str | None = None, *, wait_compaction: bool = False) -> TableWriter:
        """A writer for two-phase writes: ``with table.writer() as w: w.write(batch); msgs =
        w.prepare_commit()`` in any process, then :meth:`commit` in one place.

        A long-lived writer (Java ``StreamTableWrite``): compaction it triggers runs in the
        background and joins the ``prepare_commit`` after it finishes (``close`` cancels an
        unfinished one); ``wait_compaction=True`` makes every ``prepare_commit`` wait for it,
        as one-shot writes (:meth:`write`, :meth:`upsert`, :meth:`delete`) do. Tables that
        need lookup (deletion vectors, first-row, ``changelog-producer=lookup``) always wait
        unless ``lookup-wait`` is false."""
        return TableWriter(self, commit_user, wait_compaction=wait_compaction)

    def commit(self, messages: list[CommitMessage], commit_identifier: int | None = None,
               commit_user: str | None = None, *, overwrite: bool = False) -> list[int]:
        """Commit writers' messages atomically; returns the new snapshot ids.

        With a ``commit_identifier`` (e.g. a streaming batch id) re-sending the same
        (commit_user, identifier) is a no-op, which makes streaming writes exactly-once.
        ``overwrite=True`` replaces the whole table with the messages' files (write them with
        ``TableWriter(table, overwrite=True)``). The same message twice is refused.

        Raises:
            CommitConflictError: a concurrent commit conflicts and retries were exhausted.
        """
        messages = check_messages(messages)
        user = commit_user_of(messages, commit_user)
        ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
        if overwrite:
            return snapshot_ids(self._raw.overwrite(raw_messages(messages), user, ident, None, False))
        return snapshot_ids(self._raw.commit(raw_messages(messages), user, ident))

    def is_committed(self, commit_identifier: int, commit_user: str) -> bool:
        """Whether ``commit_user`` committed ``commit_identifier``: a job that lost track of
        its commit (a crash, an ambiguous failure) asks before retrying or cleaning up."""
        return not self._raw.filter_committed(commit_user, [int(commit_identifier)])

    def discard(self, messages: list[CommitMessage]) -> int:
        """Delete the files of messages that will never be committed; returns how many."""
        return self._raw.discard(raw_messages(check_messages(messages)))

    def _write_and_commit(self, data: Any, kind: str, progress: Progress | None) -> WriteResult:
        # A conflict, or a snapshot the writer read expiring under it, means nothing landed (a
        # write that landed but is not visible yet raises neither); data that can be read again
        # is written again by a new writer, which continues from the newest state.
        started = time.monotonic()

        def attempt() -> Committed:
            w = TableWriter(self)
            try:
                getattr(w, kind)(data, progress)
                return w._commit_written()
            finally:
                w.close()  # deletes what an interrupted or failed write left uncommitted

        committed = replayed(attempt, self._raw, replayable=replayable(data))
        return self._result(committed, started, overwrite=False)

    def _result(self, committed: Committed, started: float, overwrite: bool) -> WriteResult:
        """The WriteResult of a write; on append tables without deletion vectors the rows its
        first snapshot added (and an overwrite removed) are table rows."""
        if not committed or self.primary_keys or self.effective_options["deletion-vectors.enabled"]:
            return write_result(committed, started)
        first = committed[0]
        return write_result(committed, started, inserted=first["rows_added"],
                            deleted=first["rows_removed"] if overwrite else 0)

    def write(self, data: Any, mode: Literal["append", "overwrite"] = "append",
              overwrite_partition: Any = None, *, progress: Progress | None = None) -> WriteResult:
        """Write rows and commit; returns a :class:`~tidelake.write.WriteResult` whose
        ``snapshot_id`` is the last snapshot committed: the APPEND, or the COMPACT that follows it
        when the writer compacted (None, and the result is falsy, if nothing was written).

        Args:
            data: a pyarrow Table/RecordBatch/RecordBatchReader, polars or pandas DataFrame, or
                any Arrow producer. Columns are matched by name and cast safely to the table
                schema; lossy casts, unknown or missing required columns and null keys raise
                :class:`SchemaMismatchError` naming the column.
            mode: ``"append"`` (on primary-key tables rows upsert by key; on append tables with
                ``upsert-key`` a row replaces the one of its keys, nulls matching nulls, and with
                ``sequence.field`` only a newer one does, as Paimon's Spark ``INSERT INTO``) or
                ``"overwrite"``.
            overwrite_partition: with ``mode="overwrite"``: ``None`` replaces the whole table, a
                dict ``{"dt": "2024-05-14"}`` (static) replaces the partitions it selects, and
                ``"dynamic"`` replaces exactly the partitions present in ``data``.
            progress: ``progress(rows, total)`` as rows are taken (:data:`tidelake.write.Progress`);
                raising from it stops the write before anything is committed.
        """
        if mode == "append":
            if overwrite_partition is not None:
                raise InvalidArgumentError("overwrite_partition needs mode='overwrite'")
            if self._raw.upsert_merge is not None:
                return self._merge_on_upsert_key(data, progress)
            return self._write_and_commit(data, "write", progress)
        if mode != "overwrite":
            raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', got {mode!r}")
        dynamic = overwrite_partition == "dynamic"
        static = not dynamic and overwrite_partition is not None
        spec = filter_json(self._partition_filter(overwrite_partition)) if static else None
        started = time.monotonic()
        w = TableWriter(self, overwrite=True)
        messages: list[CommitMessage] = []
        try:
            w.write(data, progress)
            messages = w.prepare_commit()
            # The engine refuses files outside a static overwrite's partitions (for every caller).
            committed = self._raw.overwrite(raw_messages(messages), w.commit_user, BATCH_COMMIT_IDENTIFIER, spec,
                                            dynamic)
        except BaseException:
            w.abort()
            if messages and not self.is_committed(BATCH_COMMIT_IDENTIFIER, w.commit_user):
                self.discard(messages)  # refused or failed: its files are garbage
            raise
        w.close()
        return self._result(committed, started, overwrite=True)

    def _merge_on_upsert_key(self, data: Any, progress: Progress | None) -> WriteResult:
        """An append to a table with ``upsert-key`` (Paimon's Spark ``RewriteUpsertTable``): a
        merge on the upsert keys, nulls matching nulls. With ``sequence.field``, the rows of one
        key keep only the latest by it, and a matched row is replaced only by a newer or equal
        one; without, several rows of a key that the table holds are an error, as in a MERGE."""
        import pyarrow as pa

        from .write import arrow_input

        keys, sequence = self._raw.upsert_merge or ([], [])
        source = arrow_input(data)
        rows = source if isinstance(source, pa.Table) else pa.Table.from_batches(list(source), source.schema)
        if progress is not None:
            progress(rows.num_rows, rows.num_rows)
        if sequence:
            rows = _latest_per_key(rows, keys, sequence)
        builder = self.merge(rows, " AND ".join(f'target."{k}" <=> source."{k}"' for k in keys))
        newer = " AND ".join(f'target."{f}" <= source."{f}"' for f in sequence) or None
        return builder.when_matched_update("*", newer).when_not_matched_insert("*").execute()

    def _partition_filter(self, spec: Any) -> Filter:
        """The filter selecting one partition (a dict of partition values)."""
        if not isinstance(spec, dict) or not spec:
            raise InvalidArgumentError("overwrite_partition must be a non-empty dict, 'dynamic' or None")
        unknown = [k for k in spec if k not in self.partition_keys]
        if unknown:
            raise InvalidArgumentError(f"{unknown} are not partition keys; partition keys are {self.partition_keys}")
        terms = [(k, "is_null") if v is None else (k, "=", v) for k, v in spec.items()]
        tree = to_filter(terms)
        assert tree is not None
        return tree

    def upsert(self, data: Any, *, partial: bool = False, progress: Progress | None = None) -> WriteResult:
        """Insert or replace rows by primary key and commit; returns a
        :class:`~tidelake.write.WriteResult`.

        ``data`` needs every non-null column; with ``partial=True`` it may hold the key and any
        subset of the other columns: only those change, the others keep their current values
        (new keys get nulls there). A partial upsert reads the current rows of its keys and is
        one atomic commit (conflict-checked like :meth:`merge`). ``progress`` as for :meth:`write`
        (not with ``partial``).
        """
        if partial:
            if progress is not None:
                raise InvalidArgumentError("progress is not available with partial=True")
            from .dml import upsert_partial

            return upsert_partial(self, data)
        return self._write_and_commit(data, "upsert", progress)

    def delete(self, filter: Any = None, *, partitions: list[dict[str, Any]] | None = None) -> WriteResult:
        """Delete the rows matching ``filter`` in one atomic commit (SQL ``DELETE FROM t WHERE
        ...``); every row when ``filter`` is None. Returns a :class:`~tidelake.write.WriteResult`
        with ``rows_deleted``.

        Args:
            filter: DNF tuples ``[("qty", "<", 5)]`` (a list of lists is OR), a SQL expression
                string ``"qty < 5 AND name LIKE 'a%'"``, or a :class:`pyarrow.compute.Expression`.
                Simple terms of the first two prune partitions, buckets and files before reading.
            partitions: only touch these partitions (a list of partition-value dicts), e.g. one
                task's share of a distributed job.

        Primary-key tables write ``-D`` records for the matching keys (deduplicate tables, and
        partial-update tables with ``partial-update.remove-record-on-delete``); append tables
        rewrite the data files holding matching rows. To delete given keys use
        :meth:`delete_keys`.
        """
        from .dml import delete

        if _is_rows(filter):
            warnings.warn("Table.delete(rows) is Table.delete_keys(rows); delete() takes a filter",
                          DeprecationWarning, stacklevel=2)
            return self.delete_keys(filter)
        result = delete(self, filter, partitions)
        assert isinstance(result, WriteResult)
        return result

    def delete_keys(self, data: Any, *, progress: Progress | None = None) -> WriteResult:
        """Delete rows by primary key (``data`` needs the key columns; other columns are
        ignored) and commit; keys not in the table are no-ops."""
        return self._write_and_commit(data, "delete", progress)

    def update(self, set: dict[str, Any], filter: Any = None, *,
               partitions: list[dict[str, Any]] | None = None) -> WriteResult:
        """Update the rows matching ``filter`` (all rows when None) in one atomic commit (SQL
        ``UPDATE t SET ... WHERE ...``); returns a :class:`~tidelake.write.WriteResult` with
        ``rows_updated``.

        ``set`` maps columns to new values: Python literals, SQL expression strings over the row
        (``{"qty": "qty + 1", "name": "upper(name)"}``; a string literal is ``"'text'"``) or
        :class:`pyarrow.compute.Expression`. ``filter`` and ``partitions`` as :meth:`delete`.
        Primary-key columns cannot be set. Partial-update tables cannot set a column to null.
        """
        from .dml import update

        result = update(self, set, filter, partitions)
        assert isinstance(result, WriteResult)
        return result

    def merge(self, source: Any, on: Any, *, partitions: list[dict[str, Any]] | None = None) -> MergeBuilder:
        """Start a MERGE of ``source`` (anything Arrow-like) into this table (SQL ``MERGE INTO t
        USING s ON ...``): add ``when_matched_update``, ``when_matched_delete``,
        ``when_not_matched_insert`` and ``when_not_matched_by_source_delete`` clauses, then
        ``execute()``; see :class:`tidelake.dml.MergeBuilder`.

        ``on`` is a column name or list of names present in both, or a SQL conjunction of
        equalities ``"target.id = source.id AND target.dt = source.dt"``. The target rows read
        are those with the source's key values (pushed into the scan), unless a
        not-matched-by-source clause needs them all. ``partitions`` restricts the target as in
        :meth:`delete`.
        """
        from .dml import MergeBuilder

        return MergeBuilder(self, source, on, partitions)

    def truncate(self) -> WriteResult:
        """Remove every row (one OVERWRITE snapshot); returns a
        :class:`~tidelake.write.WriteResult`."""
        started = time.monotonic()
        return self._result(self._raw.truncate(str(uuid.uuid4())), started, overwrite=True)

    def compact(self, full: bool = False, partitions: list[dict[str, Any]] | None = None,
                progress: Callable[[int, int], object] | None = None, *,
                order_by: list[str] | None = None, strategy: str | None = None) -> int | None:
        """Compact the table (LSM trees; small files of append tables) and commit one COMPACT
        snapshot; returns its id, or None when nothing needed compacting. Reads return the same
        rows before and after. With ``order_by``, sort-compact instead (see below).

        Args:
            full: rewrite every bucket into a single sorted run at the highest level (also makes
                level-0 data of deletion-vector and first-row tables visible to batch reads).
                Otherwise each bucket is compacted only when its sorted runs call for it
                (Paimon's universal compaction: ``num-sorted-run.compaction-trigger``,
                ``compaction.max-size-amplification-percent``, ``compaction.size-ratio``).
            partitions: only these partitions, each a dict of partition values
                (``[{"dt": "2024-05-14"}]``); all partitions by default.
            progress: called as ``progress(buckets_done, buckets_total)`` before the first
                bucket is rewritten and after each one (from a worker thread; exceptions are
                ignored). Not with ``order_by``.
            order_by: sort compaction (Paimon's ``CALL sys.compact(order_strategy => ...,
                order_by => ...)``) of a bucket-unaware append table: the rows of each selected
                partition are rewritten sorted by these columns (not partition columns) and the
                partitions replaced in one OVERWRITE snapshot, so that filters on the columns
                skip files. Memory stays within ``write-buffer-size`` per partition (rows spill
                to local temporary files); ``full`` changes nothing.
            strategy: the order of ``order_by``: ``"order"`` (by the columns in turn),
                ``"zorder"`` or ``"hilbert"`` (space-filling curves, so that each column prunes;
                Hilbert needs two columns); by default ``order`` for one column, ``zorder`` for
                up to four, ``hilbert`` beyond (Paimon's ``clustering.strategy = auto``).

        Postpone-bucket tables (``bucket=-2``) first get the rows written since the last
        compaction moved into real buckets (a COMPACT snapshot of its own; a partition keeps its
        bucket count, a new one gets ``postpone.default-bucket-num``, default 1).

        Tables with ``changelog-producer=lookup`` or ``full-compaction`` get their changelog
        (-U/+U/-D/+I) from compaction, as in Paimon: lookup tables at every compaction (a full
        one in tidelake, except first-row tables, which compact with lookup), full-compaction
        tables when a bucket is compacted to the top level.

        Append tables get their small files merged as Paimon's append compaction picks them
        (fixed buckets: ``compaction.min.file-num`` files at a time, or with ``full`` every small
        file; bucket-unaware tables: files under 70% of ``target-file-size``), deleted rows of
        deletion vectors dropped; the rows of a bucket keep their order. Bucket-unaware append
        tables with ``clustering.incremental`` are clustered incrementally, as Paimon's
        ``compact`` action does: per partition the files picked by universal compaction over
        their levels (every level-0 file a run; with ``full`` every file, unless the partition
        already is one run at the top level clustered by the same columns) are rewritten sorted
        by ``clustering.columns`` (``clustering.strategy``) into the picked level.

        Raises:
            CommitConflictError: a concurrent commit removed files this compaction rewrote (its
                new files are deleted; retry).
            UnsupportedError: append tables with row tracking or data evolution.
            InvalidArgumentError: first-row tables with ``changelog-producer=full-compaction``;
                for ``order_by``: unknown or partition columns, a ``strategy`` without
                ``order_by``, tables with ``clustering.incremental``; a table with
                ``clustering.incremental`` without ``clustering.columns`` or with
                ``clustering.strategy = none``.
            UnsupportedError: ``order_by`` on a table that is not a bucket-unaware append table.
        """
        import json

        selected = filter_json(self._partitions_filter(partitions))
        if order_by is not None:
            if progress is not None:
                raise InvalidArgumentError("progress is not reported by sort compaction (order_by)")
            if isinstance(order_by, str) or not order_by:
                raise InvalidArgumentError("order_by must be a non-empty list of column names")
            return self._raw.sort_compact(list(order_by), strategy, selected)
        if strategy is not None:
            raise InvalidArgumentError("strategy orders the rows of order_by: give order_by too")
        done = self._raw.compact(full, selected, progress)
        return json.loads(done)["snapshot_id"]

    def _partitions_filter(self, partitions: list[dict[str, Any]] | None) -> Filter | None:
        """The filter selecting ``partitions`` (a list of partition-value dicts)."""
        if partitions is None:
            return None
        if isinstance(partitions, dict) or not all(isinstance(p, dict) and p for p in partitions):
            raise InvalidArgumentError("partitions must be a list of non-empty dicts of partition values")
        return Or(tuple(self._partition_filter(p) for p in partitions))

    def rescale(self, bucket_num: int | None = None, partitions: list[dict[str, Any]] | None = None) -> int:
        """Rewrite the rows of the table, or of ``partitions``, into ``bucket_num`` buckets in one
        OVERWRITE snapshot (Paimon's ``rescale`` procedure); returns its id. Reads return the
        same rows before and after.

        Paimon keeps a bucket count per partition: after ``set_option("bucket", "8")`` the
        partitions written before keep their count until rescaled (``bucket_num`` defaults to
        the table's ``bucket``), and one partition can be given another count alone. The table's
        ``bucket`` option is not changed.

        Args:
            bucket_num: the new number of buckets (required for postpone-bucket tables).
            partitions: only these partitions, each a dict of partition values.

        Raises:
            InvalidArgumentError: a table without a snapshot or a selection without data, a
                ``bucket_num`` below 1, a postpone-bucket table without ``bucket_num`` or whose
                partitions hold rows not yet compacted into real buckets (compact first).
            UnsupportedError: tables with ``bucket = -1`` (dynamic buckets, bucket-unaware).
            CommitConflictError: a commit to the selected partitions landed while the rows were
                rewritten: nothing is committed (its files are deleted), and nothing written
                meanwhile is lost; run it again.
        """
        committed = self._raw.rescale(bucket_num, filter_json(self._partitions_filter(partitions)))
        assert committed is not None
        return committed

    def rewrite_file_index(self, partitions: list[dict[str, Any]] | None = None) -> int | None:
        """Give the live data files of the table, or of ``partitions``, the file indexes its
        ``file-index.*`` options now ask for (Paimon's ``rewrite_file_index`` procedure), without
        rewriting their rows; returns the COMPACT snapshot's id, ``None`` when no file's index
        changed.

        Set ``file-index.bloom-filter.columns``, ``file-index.bitmap.columns`` (or ``bsi``,
        ``range-bitmap``) with :meth:`set_option` first: files written before then get the
        indexes writers now build, so reads skip them as they skip new files. A file's index
        afterwards is exactly what the options ask for (indexes of columns no longer configured
        are dropped), embedded in the manifest up to ``file-index.in-manifest-threshold`` bytes,
        else a new ``.index`` file next to the data file.

        Args:
            partitions: only these partitions, each a dict of partition values.

        Raises:
            InvalidArgumentError: the options name a column the table lacks.
            UnsupportedError: an index on a type it cannot hold.
            CommitConflictError: another commit removed or changed one of the files meanwhile
                (a compaction, an overwrite): nothing is committed and the index files written
                are deleted; run it again.
        """
        return self._raw.rewrite_file_index(filter_json(self._partitions_filter(partitions)))

    def compaction_plan(self, full: bool = False,
                        partitions: list[dict[str, Any]] | None = None) -> CompactionPlan:
        """Plan :meth:`compact` without running it: one :class:`~tidelake.compaction.CompactionTask`
        per bucket to compact, to run anywhere with :func:`tidelake.compaction.run_compaction_task`
        and commit once with :meth:`CompactionPlan.commit` (see :mod:`tidelake.compaction`).
        Arguments as :meth:`compact`."""
        from .compaction import CompactionPlan

        return CompactionPlan(self, self._raw.compaction_plan(full, filter_json(self._partitions_filter(partitions))))

    # ---- maintenance (snapshots, orphan files, tags, rollback, consumers, partitions, system tables) ----

    def expire_snapshots(self, retain_min: int | None = None, retain_max: int | None = None,
                         older_than_ms: int | None = None, max_deletes: int | None = None,
                         dry_run: bool = False) -> dict[str, Any]:
        """Expire old snapshots and delete the files only they referenced (Paimon's
        ``expire_snapshots``). Writers also run this after every commit unless ``write-only``.
        With ``dry_run`` nothing changes and the counts say what would go.

        Args:
            retain_min: keep at least this many snapshots (``snapshot.num-retained.min``, 10).
            retain_max: keep at most this many (``snapshot.num-retained.max``).
            older_than_ms: epoch-ms cutoff; a snapshot goes only once its successor was committed
                before it (default: now - ``snapshot.time-retained``, 1 h).
            max_deletes: expire at most this many snapshots (``snapshot.expire.limit``, 50).

        Snapshots a consumer still needs, and every file a retained snapshot or tag references,
        are kept. When the table's changelog outlives its snapshots (``changelog.num-retained.*``
        / ``changelog.time-retained`` above the snapshot retention), each expired snapshot is
        kept as ``changelog/changelog-N`` with its changelog files (without a changelog producer:
        its delta), which change reads over expired snapshots use; those are then expired by the
        changelog options (see :meth:`expire_changelogs`). Returns counts: ``snapshots``,
        ``data_files``, ``changelog_files``, ``manifest_files``, ``index_files``,
        ``statistics_files``, ``earliest_snapshot``, ``changelogs_kept`` and
        ``changelogs_expired`` (long-lived changelogs written and expired; ``dry_run`` does not
        plan the latter).
        """
        return dict(self._raw.expire_snapshots(retain_min, retain_max, older_than_ms, max_deletes, dry_run))

    def expire_changelogs(self, *, retain_min: int | None = None, retain_max: int | None = None,
                          older_than_ms: int | None = None, max_deletes: int | None = None) -> dict[str, Any]:
        """Expire long-lived changelogs (Paimon's ``expire_changelogs`` procedure): the
        ``changelog/changelog-N`` files snapshot expiry keeps when the changelog outlives the
        snapshots (``changelog.num-retained.*`` / ``changelog.time-retained`` above the snapshot
        retention; :meth:`expire_snapshots` then runs this with those options itself), with the
        changelog and data files only they still reference.

        Args:
            retain_min: keep at least this many, counted from the latest snapshot (default 1).
            retain_max: keep at most this many, counted from the latest snapshot (default: no
                limit).
            older_than_ms: epoch-ms cutoff; a changelog committed at or after it stays, with
                all later ones (default: no time cutoff, so only ``retain_max`` expires).
            max_deletes: expire at most this many (default: no limit).

        The latest long-lived changelog always stays. Returns counts: ``changelogs``,
        ``data_files``, ``changelog_files``, ``manifest_files``, ``index_files`` and
        ``statistics_files``.
        """
        return dict(self._raw.expire_changelogs(retain_min, retain_max, older_than_ms, max_deletes))

    def remove_orphan_files(self, older_than_ms: int | None = None, dry_run: bool = False) -> list[tuple[str, int]]:
        """Delete files no snapshot, tag or branch references (left by failed or killed writers)
        and last modified before ``older_than_ms`` (default: a day ago, so files of writers
        still running are safe). Returns the (path, size) of each orphan; ``dry_run`` only lists.
        """
        return list(self._raw.remove_orphan_files(older_than_ms, dry_run))

    def create_tag(self, name: str, snapshot_id: int | None = None, time_retained: Any = None) -> Tag:
        """Tag a snapshot (the latest by default); its files survive expiration while the tag
        exists. ``time_retained`` (timedelta or ms; default ``tag.default-time-retained``) lets
        writers expire the tag afterwards. Raises TableAlreadyExistsError if the tag exists."""
        from .maintenance import duration_ms

        return Tag(**self._raw.create_tag(name, snapshot_id, duration_ms(time_retained, "time_retained")))

    def replace_tag(self, name: str, snapshot_id: int | None = None, time_retained: Any = None) -> Tag:
        """Point existing tag ``name`` at a snapshot (the latest by default), as Paimon's
        ``replace_tag``: ``time_retained`` (timedelta or ms) is the new tag's retention (default:
        kept until deleted). Raises TableNotFoundError if there is no such tag or snapshot."""
        from .maintenance import duration_ms

        return Tag(**self._raw.replace_tag(name, snapshot_id, duration_ms(time_retained, "time_retained")))

    def rename_tag(self, name: str, target: str) -> None:
        """Rename tag ``name`` to ``target`` (same snapshot and retention). Raises
        TableNotFoundError if there is no tag ``name``, TableAlreadyExistsError if ``target``
        exists."""
        self._raw.rename_tag(name, target)

    def delete_tag(self, name: str) -> dict[str, int]:
        """Delete a tag; when its snapshot has expired, also the files nothing else references.
        Returns counts of deleted files. Raises TableNotFoundError if there is no such tag."""
        return dict(self._raw.delete_tag(name))

    def create_branch(self, name: str, from_snapshot: int | None = None, from_tag: str | None = None) -> Table:
        """Create branch ``name`` of this table's branch: from a snapshot, a tag, or (neither)
        empty with the latest schema. Returns the new branch opened. Data files are shared;
        maintenance on any branch keeps what other branches reference. Raises
        InvalidArgumentError for a bad name (``main``, blank, only digits, with ``/``),
        TableAlreadyExistsError if it exists, TableNotFoundError for a missing snapshot or tag."""
        self._raw.create_branch(name, from_snapshot, from_tag)
        return Table(self._raw.open_branch(name))

    def branches(self) -> list[str]:
        """The table's branches besides ``main``, sorted."""
        return list(self._raw.branches())

    def delete_branch(self, name: str) -> None:
        """Delete a branch (not ``main``, the current one or the ``scan.fallback-branch``); files
        only it referenced become orphans. Raises TableNotFoundError if there is no such branch."""
        self._raw.delete_branch(name)

    def fast_forward(self, name: str) -> Table:
        """Make branch ``name``'s history this branch's: snapshots, schemas and tags from the
        branch's earliest snapshot on are replaced by the branch's (Paimon's ``fast_forward``).
        Stop writers first. Returns this table, re-opened."""
        return self._replace(self._raw.fast_forward(name))

    def stage(self, name: str) -> Stage:
        """Write-audit-publish: create branch ``name`` from this table's latest snapshot (empty
        when it has none) and return it as a :class:`~tidelake.stage.Stage`, where writes go
        until it is published (one atomic snapshot of this table) or discarded. ``with
        t.stage("etl") as s:`` publishes when the block ends normally and discards the stage on
        an exception. Raises as :meth:`create_branch` for the name."""
        from .stage import Stage

        base = self.latest_snapshot_id()
        self._raw.create_branch(name, base, None)
        return Stage(self._raw.open_branch(name), self, base)

    def publish_stage(self, name: str) -> int | None:
        """Publish branch ``name`` (a stage, see :meth:`stage`) into this table as ONE new
        snapshot holding the branch's files, then delete the branch; returns the snapshot id
        (``None``: the branch changed nothing). Raises CommitConflictError, keeping the branch,
        when anything was committed to this table since the branch was created;
        UnsupportedError when the branch altered the schema."""
        published = snapshot_ids(self._raw.publish_branch(name))
        self._raw.delete_branch(name)
        return published[-1] if published else None

    def rollback_to(self, snapshot_id: int | None = None, tag: str | None = None) -> dict[str, Any]:
        """Make a snapshot or tag the latest state again: newer snapshots and tags are deleted
        with the files only they referenced (Paimon's ``rollback_to``). Stop writers first."""
        return dict(self._raw.rollback_to(snapshot_id, tag))

    def find_damage(self) -> dict[str, Any]:
        """What stops this table from being read or written, and the way back. ``problems``:
        (path, reason) pairs, newest snapshot first, for snapshot files that do not decode and
        files the newest snapshots reference that are missing or truncated; ``latest``: the
        newest snapshot id; ``last_good``: the newest snapshot whose files are all there
        (``rollback_to(snapshot_id=last_good)`` recovers the table; None when none of the newest
        100 is). Nothing is changed."""
        return dict(self._raw.find_damage())

    def verify(self) -> VerifyReport:
        """Check this table's consistency by replaying its snapshot chain (``tidelake doctor
        --verify``): files of the newest snapshots exist at their recorded sizes; every
        snapshot's delta manifests, replayed against the previous snapshot, neither add a live
        file nor delete one that is not live, and yield the live files of its base + delta
        manifests; and, in the newest readable snapshot: sequence number ranges, levels within
        ``num-levels`` that do not overlap in key range (primary-key tables), deletion vectors
        naming live files within their row counts, file keys hashing to their bucket
        (fixed-bucket primary-key tables), index files matching their data (dynamic-bucket
        ``HASH`` indexes holding their recorded number of hashes, each hash in one bucket, and
        the hashes of every file's min and max key in its bucket's index; data files' file
        indexes present and decodable), and, where ``metadata.iceberg.storage`` is set, the
        Iceberg metadata describing the newest snapshot (its version, current snapshot and
        data files: live files with their row counts and sizes, all of them for append tables).
        Nothing is changed; broken invariants are returned as
        :class:`~tidelake._metadata.Violation` s, never raised."""
        raw = self._raw.verify()
        violations = [Violation(kind=v["kind"], cls=v["class"], snapshot=v["snapshot"], path=v["path"],
                                detail=v["detail"]) for v in raw["violations"]]
        return VerifyReport(violations=violations, latest=raw["latest"], snapshots_checked=raw["snapshots_checked"],
                            state_snapshot=raw["state_snapshot"])

    def consumers(self) -> dict[str, int]:
        """Streaming consumers and the next snapshot each will read (``consumer/consumer-<id>``)."""
        return dict(self._raw.consumers())

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> None:
        """Create or move a consumer; snapshots from ``next_snapshot`` on are not expired."""
        self._raw.reset_consumer(consumer_id, int(next_snapshot))

    def delete_consumer(self, consumer_id: str) -> None:
        self._raw.delete_consumer(consumer_id)

    def drop_partitions(self, partitions: Any) -> int | None:
        """Drop partitions (``[{"dt": "2024-05-14"}, ...]``, partial specs allowed) in one
        OVERWRITE snapshot; returns its id."""
        from .maintenance import partition_specs_json

        ids = self._raw.drop_partitions(partition_specs_json(partitions, self.partition_keys))
        return ids[-1] if ids else None

    def compact_manifests(self) -> int | None:
        """Rewrite the latest snapshot's manifests as Java's ``compact_manifest`` procedure does:
        every deleted-file entry applied and small manifests merged, committed as a COMPACT
        snapshot that changes no data (planning then opens fewer, smaller manifests); manifests
        not yet partition-sorted are all rewritten sorted by partition and bucket, so a plan of
        a few partitions skips the others' manifests. Returns the new snapshot id, or None when
        the manifests were already compact."""
        return self._raw.compact_manifests()

    def remove_unexisting_files(self, *, dry_run: bool = False) -> list[str]:
        """Remove from the table the data files its latest snapshot lists but storage lacks
        (lost by hand, by a bucket policy, by a failed copy), as Java's
        ``remove_unexisting_files`` procedure does: one commit deleting them, after which the
        table reads again without their rows. Returns their paths; ``dry_run`` only lists
        them."""
        if dry_run:
            return self._raw.unexisting_files()
        paths, _ = self._raw.remove_unexisting_files()
        return paths

    def purge_files(self) -> dict[str, Any]:
        """Empty the table and delete everything that held data, as Java's ``purge_files``
        procedure does: every branch is dropped, every tag and consumer deleted, the rows
        removed by one OVERWRITE snapshot, ``changelog/`` deleted, every older snapshot expired
        and every orphan file removed. The schema and options stay; time travel to anything
        before is gone. Only a table opened on its main branch is purged (and not while
        ``scan.fallback-branch`` names one of its branches).

        Returns what went: ``branches``, ``tags``, ``consumers`` (names), ``snapshot_id`` (the
        emptying snapshot), ``snapshots_expired``, ``deleted`` (file counts of the expiry) and
        ``orphan_files`` (paths relative to the table)."""
        return dict(self._raw.purge_files())

    def mark_partition_done(self, partitions: Any) -> None:
        """Mark partitions done (``[{"dt": "2024-05-14"}, ...]``, every partition column given)
        by the table's ``partition.mark-done-action``, as Java's ``mark_partition_done``
        procedure: ``success-file`` writes or refreshes ``<partition>/_SUCCESS``;
        ``done-partition`` and ``mark-event`` tell the table's catalog (a Hive metastore's
        ``<partition>.done`` partition and load-done event)."""
        from .maintenance import partition_specs_json

        self._raw.mark_partition_done(partition_specs_json(partitions, self.partition_keys))

    def expire_partitions(self, expiration: Any = None) -> list[dict[str, str]]:
        """Drop partitions older than ``expiration`` (timedelta or ms; default
        ``partition.expiration-time``) by ``partition.expiration-strategy``; returns them."""
        from .maintenance import duration_ms

        return [dict(p) for p in self._raw.expire_partitions(duration_ms(expiration, "expiration"))]

    def system(self, name: str) -> pa.Table:
        """A Paimon system table (``table$name``) as a pyarrow.Table, one of
        :data:`tidelake.maintenance.SYSTEM_TABLES`: ``snapshots``, ``schemas``, ``options``,
        ``files``, ``manifests``, ``partitions``, ``buckets``, ``tags``, ``consumers``,
        ``branches``, ``audit_log``, ``ro`` (read-optimized: the rows of fully compacted files
        only), ``binlog``, ``aggregation_fields``, ``statistics`` or ``table_indexes``."""
        return self._raw.system_table(name)

    def history(self) -> pa.Table:
        """One row per live snapshot, oldest first: ``snapshot_id``, ``commit_time`` (local
        time), ``commit_kind`` (APPEND, COMPACT, OVERWRITE), ``commit_user``,
        ``commit_identifier``, ``schema_id``, the files, rows and bytes the commit added and
        removed (``files_added`` ... ``bytes_removed``), ``total_record_count``,
        ``changelog_record_count`` and ``watermark``. On primary-key tables rows are key-value
        records: an upsert adds records, and the compaction that merges them removes the old."""
        return self._raw.history()


def _latest_per_key(rows: pa.Table, keys: list[str], sequence: list[str]) -> pa.Table:
    """One row per key of ``rows``: the first with the greatest ``sequence`` values (nulls
    last), as Paimon's Spark upsert keeps ``row_number() = 1`` ordered by them descending."""
    import numpy as np
    import pyarrow as pa

    indexed = rows.append_column("__i", pa.array(np.arange(rows.num_rows), pa.int64()))
    ordered = indexed.sort_by([(f, "descending") for f in sequence] + [("__i", "ascending")])
    first = ordered.group_by(keys, use_threads=False).aggregate([("__i", "first")])
    return rows.take(pa.array(np.sort(first.column("__i_first").to_numpy())))
