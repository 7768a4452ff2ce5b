"""SQL without Spark: :func:`sql` runs a query over tidelake tables with DuckDB.

The query is Spark SQL as Paimon writes it: sqlglot parses it in Spark's dialect, every table
reference naming a tidelake table (``db.t``, ``tidelake.`/path```, ``db.`t$snapshots```, with
``VERSION AS OF`` / ``TIMESTAMP AS OF``; see :mod:`tidelake.references`) is replaced by a
relation registered on a fresh in-memory DuckDB connection, and DuckDB runs the query,
transpiled by sqlglot to its dialect (joins, CTEs, subqueries, aggregates, window functions).

A table is registered as its :class:`~tidelake.dataset.TableDataset` pinned to the snapshot the
reference selects; a system table as its rows. DuckDB hands each scan of a dataset the columns
it needs and the filters it can push (comparisons, ``BETWEEN``, ``IN``, ``IS [NOT] NULL``,
AND/OR, and the ones it infers across join keys); the dataset turns the columns into tidelake's
projection and the filter, through Substrait, into the planner's filter tree (partitions,
buckets, files, pages and rows pruned), and DuckDB still applies its whole filter to the rows
(``benches/sql_pushdown.py`` measures what is read).

Why DuckDB rather than DataFusion's Python API: DuckDB's scan of a pyarrow dataset is the path
tidelake's ``duckdb`` extra already supports and tests (projection and filter pushdown into
the planner, ``tests/test_engines.py``), so this module adds nothing to the wheel: DuckDB is an
optional dependency, imported only here. DataFusion 55's ``register_dataset`` (measured
2026-12-06) hands the dataset the same columns and filters, but then reads the dataset's
fragments, and pyarrow's fragments are files of a file format, which a merged bucket is not:
DataFusion would need a table provider of its own in Rust, i.e. DataFusion built into the core
and every wheel (its Python wheel alone is 43 MB).

Invariants: all references of one query to the same table at the same version read one
pinned snapshot (one relation); only queries run (writes and DDL raise UnsupportedError); a
reference to a table neither the catalog nor a path has raises TableNotFoundError naming it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import exceptions
from .catalog import Catalog
from .exceptions import InvalidArgumentError, TableNotFoundError, TidelakeError, UnsupportedError
from .references import find_system_table, find_table, is_path, rename, system_name, time_travel
from .table import _epoch_ms

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlglot import exp

__all__ = ["sql", "sql_reader"]

DEFAULT_DATABASE = "default"
"""The database of a table named without one (``FROM t``), as in Paimon's catalogs."""


def sql(query: str, *, warehouse: str | os.PathLike[str] | None = None,
        catalog: Catalog | Mapping[str, str] | None = None,
        storage_options: dict[str, str] | None = None) -> pa.Table:
    """The result of the SQL ``query`` over tidelake tables, as a :class:`pyarrow.Table`.

    ``query`` is one query in Spark's SQL dialect (as Paimon documents it): ``SELECT``, ``WITH``,
    set operations, ``VALUES``. Its tables are named

    * ``db.t`` (``t`` alone: ``default.t``): a table of ``warehouse`` (a filesystem catalog) or
      of ``catalog`` (a :class:`~tidelake.Catalog`, or Paimon's catalog options as a mapping);
      ``db.`t$branch_b``` reads branch ``b``;
    * ``tidelake.`/path/to/t```: the table at a path or object-store URL;
    * ``db.`t$snapshots```, ``tidelake.`/path$files```: a system table (see
      :meth:`tidelake.Table.system`);

    and ``FROM db.t VERSION AS OF 3`` (a snapshot id), ``VERSION AS OF 'tag'`` or
    ``TIMESTAMP AS OF '2026-05-01 12:00:00'`` (local time, or with an offset; a number is
    epoch seconds) reads an older snapshot. Columns and filters are pushed into tidelake's
    reads. Needs the ``duckdb`` extra (``pip install 'tidelake[duckdb]'``).

    Raises:
        TableNotFoundError: a table, snapshot or tag the query names does not exist.
        InvalidArgumentError: the query does not parse or DuckDB rejects it (unknown column,
            type mismatch...), or both ``warehouse`` and ``catalog`` are given.
        UnsupportedError: a statement that is not a query (INSERT, CREATE...).
    """
    return sql_reader(query, warehouse=warehouse, catalog=catalog, storage_options=storage_options).read_all()


def sql_reader(query: str, *, warehouse: str | os.PathLike[str] | None = None,
               catalog: Catalog | Mapping[str, str] | None = None,
               storage_options: dict[str, str] | None = None) -> pa.RecordBatchReader:
    """The result of :func:`sql` as a :class:`pyarrow.RecordBatchReader`, streamed as DuckDB
    produces it (the tables' scans are planned when this returns)."""
    import pyarrow as pa

    duckdb = _duckdb()
    statement = _parse(query)
    connection = duckdb.connect()
    _Resolver(connection, _catalog(warehouse, catalog, storage_options), storage_options).register(statement)
    try:
        reader = pa.RecordBatchReader.from_stream(connection.sql(statement.sql("duckdb")))
    except duckdb.Error as e:
        raise _error(e) from e
    return pa.RecordBatchReader.from_batches(reader.schema, _batches(reader, duckdb.Error))


def _batches(reader: pa.RecordBatchReader, engine_error: type[Exception]) -> Iterator[pa.RecordBatch]:
    """``reader``'s batches, with the errors of a query failing midway raised as tidelake's."""
    import pyarrow as pa

    try:
        yield from reader
    except (engine_error, pa.ArrowException) as e:
        raise _error(e) from e


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise UnsupportedError("tidelake.sql needs DuckDB: pip install 'tidelake[duckdb]'") from None
    return duckdb


def _parse(query: str) -> exp.Expr:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be SQL text, got {type(query).__name__}")
    try:
        statements = [s for s in sqlglot.parse(query, read="spark") if s is not None]
    except SqlglotError as e:
        raise InvalidArgumentError(f"bad SQL: {e}") from None
    if len(statements) != 1:
        raise InvalidArgumentError(f"expected one SQL query, got {len(statements)} statements")
    statement = statements[0]
    if isinstance(statement, (exp.DML, exp.DDL, exp.Drop, exp.Alter, exp.TruncateTable, exp.Command,
                              exp.Describe, exp.Cache, exp.Use, exp.Set)):
        kind = str(statement.this).upper() if isinstance(statement, exp.Command) else statement.key.upper()
        raise UnsupportedError(f"tidelake.sql runs queries (SELECT, WITH, VALUES), not {kind}: write with the "
                               "Table API, the CLI or tidelake.spark.sql")
    if not isinstance(statement, (exp.Query, exp.Values)):
        raise InvalidArgumentError(f"bad SQL: {query!r} is not a query (SELECT, WITH, VALUES)")
    return statement


def _catalog(warehouse: str | os.PathLike[str] | None, catalog: Catalog | Mapping[str, str] | None,
             storage_options: dict[str, str] | None) -> Catalog | None:
    if warehouse is not None and catalog is not None:
        raise InvalidArgumentError("give warehouse or catalog, not both")
    if warehouse is not None:
        return Catalog(warehouse, storage_options)
    if catalog is None or isinstance(catalog, Catalog):
        return catalog
    if isinstance(catalog, Mapping):
        return Catalog.from_options(catalog, storage_options)
    raise InvalidArgumentError(f"catalog must be a tidelake.Catalog or a mapping of options, "
                               f"got {type(catalog).__name__}")


class _Resolver:
    """Registers the relations of one query's tidelake references on ``connection``."""

    def __init__(self, connection: Any, catalog: Catalog | None, storage_options: dict[str, str] | None) -> None:
        self._connection = connection
        self._catalog = catalog
        self._storage_options = storage_options
        self._registered: set[str] = set()

    def register(self, statement: exp.Expr) -> None:
        from sqlglot import exp

        ctes = {c.alias_or_name for c in statement.find_all(exp.CTE)}
        for ref in list(statement.find_all(exp.Table)):
            if not isinstance(ref.this, exp.Identifier) or (not ref.db and ref.name in ctes):
                continue  # a table function (range(3)) or a CTE
            if not ref.db:
                ref.set("db", exp.to_identifier(DEFAULT_DATABASE))
            relation = self._relation(ref)
            rename(statement, ref, relation)

    def _relation(self, ref: exp.Table) -> str:
        """The registered relation of ``ref``, named by the reference as written (with its time
        travel), registered on first use."""
        version = ref.args.get("version")
        name = f"{ref.db}.{ref.name}" + ("" if version is None else f" {version.sql('spark')}")
        if name in self._registered:
            return name
        if not is_path(ref) and self._catalog is None:
            raise TableNotFoundError(f"{ref.db}.{ref.name}: no warehouse or catalog to find it in: pass "
                                     "warehouse= or catalog= (the CLI: --warehouse, --catalog), or name the "
                                     "table by path, tidelake.`/path/to/table`")
        try:
            if system_name(ref) is not None:
                rows: Any = find_system_table(ref, self._catalog, self._storage_options)
            else:
                table = find_table(ref, self._catalog, self._storage_options)
                assert table is not None  # a path, or a catalog is given
                read = time_travel(ref, _timestamp_ms)
                rows = table.to_pyarrow_dataset(snapshot_id=read.get("snapshot_id"), tag=read.get("tag"),
                                                timestamp=read.get("timestamp_ms"))
        except (TableNotFoundError, InvalidArgumentError) as e:
            raise type(e)(f"{ref.sql('spark')}: {e}") from e
        self._connection.register(name, rows)
        self._registered.add(name)
        return name


def _timestamp_ms(value: exp.Expression) -> int | None:
    """A ``TIMESTAMP AS OF`` time: text as an ISO date-time (naive is local time, as Spark's
    session time zone and Paimon's ``scan.timestamp``), a number as epoch seconds (Spark's
    cast of a number to a timestamp)."""
    from sqlglot import exp

    if not isinstance(value, exp.Literal):
        return None
    if value.is_string:
        return _epoch_ms(str(value.this))
    return int(float(str(value.this)) * 1000)


_RAISED_BY_A_READ = re.compile(r"Python exception: tidelake\.exceptions\.(\w+): (.*)", re.S)
"""How DuckDB reports an exception raised by a scan of a registered dataset."""


def _error(error: Exception) -> TidelakeError:
    """A DuckDB error as tidelake's: the tidelake error a table's read raised (DuckDB passes
    on its class name and message only), or else DuckDB's message (``Binder Error: ...``) as
    InvalidArgumentError."""
    raised = _RAISED_BY_A_READ.search(str(error))
    kind = getattr(exceptions, raised.group(1), None) if raised else None
    if raised and isinstance(kind, type) and issubclass(kind, TidelakeError):
        return kind(raised.group(2).strip())
    return InvalidArgumentError(f"SQL error: {error}")
