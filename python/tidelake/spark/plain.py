"""``tidelake.spark.read``: Spark's own vectorized Parquet reader for every data file whose rows
it can read to the engine's rows, the engine for the rest (the ``tidelake`` data source on
PySpark 4.x, ``mapInArrow`` tasks on 3.x: :mod:`tidelake.spark.mapped`), as one DataFrame.

Through the Python Data Source API every row crosses from a Python worker to the JVM as Arrow
and is converted to rows there, which costs about as much as Spark's whole Parquet read
(benches/README.md, Spark section). Most of a table needs no engine
(:meth:`tidelake.scan.Scan.native_read`): files of splits read without merging and every
key-range section of a deduplicate table's bucket that is one file. With ``spark_joins`` also
files with deletion vectors (their deleted positions removed by a join) and the base of a bucket
whose other files are all newer (less the delta's keys); by default the engine reads those, as
Spark's joins cost more than the engine's read (benches/README.md, "Merged reads through Spark's
own Parquet reader"). Spark reads the native files itself (:mod:`tidelake.spark.native`), value
columns only by name (system columns never surface); the data source reads the rest of the same
snapshot (option :data:`SKIP_PLAIN`), packed into tasks by size (:func:`engine_tasks`).

Invariants:

* Both parts read one snapshot, resolved when :func:`read` is called: the DataFrame is pinned
  to it like a ``snapshot-id`` read (Spark lists a file list once), so later queries of it do
  not see later commits. Call :func:`read` again for newer data. If that snapshot expires
  before a query runs, Spark fails on the missing files.
* The two parts classify identically: both take :func:`classified_read` of the same snapshot,
  projection, filter (option :data:`FILTER`; the classes depend on the columns read) and joins
  (option :data:`SPARK_JOINS`), so every row is read by exactly one part.
* A filter given to :func:`read` (a Spark SQL condition) prunes both parts and is applied by
  Spark on top: the DataFrame's relations are built for it with the filter in their options, so
  the read info PySpark keeps per relation (``tests/test_spark_pushdown.py``) holds no other
  query's filters.
* Spark's reader is used only where it returns exactly the engine's values: local tables,
  every column of a type it reads as the engine does (:func:`spark_readable`; not
  TIMESTAMP(7-9), TIME, BINARY(n), VARIANT, BLOB), the table's latest schema, file paths Spark
  takes verbatim (no glob characters); dates and timestamps are read without calendar
  rebasing, and a missing or corrupt file is an error whatever the session's settings.
* Same rows and values as the data source; Spark's file reader makes every column nullable,
  so NOT NULL columns of the DataFrame's schema are nullable when any split is plain.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import expr
from .._internal import pack_split_payloads
from ..exceptions import InvalidArgumentError
from ..scan import NativeRead, Scan, Split
from ..table import Table, open_table
from . import io
from .mapped import has_data_source, read_splits
from .native import native_frames
from .pruning import condition_filter, parse_condition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["read", "read_table", "classified_read", "engine_tasks", "split_packing", "spark_readable", "SKIP_PLAIN",
           "SPARK_JOINS", "FILTER"]

FILTER = "filter"
"""Data source option: a JSON filter tree (:func:`tidelake.expr.filter_json`) the read is
planned with, pruning only (a superset of the rows it admits is read). Set by :func:`read` on
its data-source part, so that both parts plan the same snapshot with the same filter."""

SKIP_PLAIN = "skip-plain-splits"
"""Data source option: read only the engine's part of :func:`classified_read` (needs a pinned
snapshot). Set by :func:`read` on its data-source part."""

SPARK_JOINS = "spark-joins"
"""Data source option, with :data:`SKIP_PLAIN`: the Spark part removes deleted rows by joins
(:func:`classified_read` with ``joins``). Set by :func:`read` with ``spark_joins``."""

PARQUET_OPTIONS = {
    # Paimon writes proleptic Gregorian dates and timestamps and no Spark version marker, so
    # Spark's default (EXCEPTION for ancient values) must not apply: read them as written.
    "datetimeRebaseMode": "CORRECTED",
    "int96RebaseMode": "CORRECTED",
    # a file of the snapshot must never be skipped silently
    "ignoreMissingFiles": "false",
    "ignoreCorruptFiles": "false",
}

_GLOB = re.compile(r"[{}\[\]*?\\]")


def spark_readable(t: pa.DataType) -> bool:
    """Whether Spark's Parquet reader reads columns of Arrow type ``t`` (as the engine maps a
    Paimon type) to the values the data source gives."""
    if pa.types.is_struct(t):
        names = {t.field(i).name for i in range(t.num_fields)}
        if names == {"value", "metadata"} and all(pa.types.is_binary(t.field(i).type) for i in range(t.num_fields)):
            return False  # VARIANT
        return all(spark_readable(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return spark_readable(t.key_type) and spark_readable(t.item_type)
    if pa.types.is_list(t):
        return spark_readable(t.value_type)
    if pa.types.is_timestamp(t):
        return t.unit in ("s", "ms", "us")
    return (pa.types.is_boolean(t) or pa.types.is_signed_integer(t) or pa.types.is_float32(t)
            or pa.types.is_float64(t) or pa.types.is_string(t) or pa.types.is_binary(t)
            or pa.types.is_decimal128(t) or pa.types.is_date32(t))


def local_root(table: Table) -> str | None:
    """The table's directory on the local filesystem, None for other stores."""
    location = table.path
    if location.startswith("file:"):
        location = "/" + location[len("file:"):].lstrip("/")
    elif "://" in location:
        return None
    return os.path.abspath(location)




def split_packing(table: Table) -> tuple[int, int]:
    """The table's ``source.split.target-size`` and ``source.split.open-file-cost`` in bytes
    (the engine's resolved values: Paimon's defaults 128 MiB and 4 MiB)."""
    options = table.effective_options
    return options["source.split.target-size"], options["source.split.open-file-cost"]


def engine_tasks(table: Table, splits: list[Split], *, parallelism: int | None = None) -> list[list[Split]]:
    """``splits`` packed into tasks in order, as Paimon packs splits (each file weighs at least
    the open-file cost, a task holds about the target size: :func:`split_packing`), but into
    no fewer tasks than ``parallelism`` (default: this machine's cores) or the splits: as
    Paimon's Spark scan (and Spark's file scan) lower the size per task to the bytes per core,
    the target is halved until there are that many tasks or it reaches the open-file cost."""
    target, cost = split_packing(table)
    payloads = [s.payload for s in splits]
    wanted = min(len(splits), parallelism or os.cpu_count() or 1)
    tasks = pack_split_payloads(payloads, target, cost)
    while len(tasks) < wanted and target > cost:
        target = max(cost, target // 2)
        tasks = pack_split_payloads(payloads, target, cost)
    return [[splits[i] for i in task] for task in tasks]


def _spark_path(path: str) -> bool:
    """Whether Spark's file source takes table-relative ``path`` verbatim (no glob character,
    no hidden or metadata file name, which Spark would skip)."""
    return not _GLOB.search(path) and path.rsplit("/", 1)[-1][:1] not in "._"


def classified_read(table: Table, columns: list[str] | None, pinned: dict[str, Any],
                    prune: expr.Filter | None, *, joins: bool = False) -> NativeRead:
    """The pinned read of ``columns`` planned with ``prune``, divided between Spark's Parquet
    reader (:mod:`tidelake.spark.native`) and the engine (:meth:`tidelake.scan.Scan.native_read`
    with the table's packing and ``joins``): everything goes to the engine where Spark's reader
    would not read the engine's values (see the module docs). The one classification both parts
    of :func:`read` use, so that every row is read by exactly one of them."""
    scan = table.scan(columns=columns, filter=prune, **pinned)
    root = local_root(table)
    if (root is None or _GLOB.search(root) or scan._raw.schema_id != table.schema_id
            or not all(spark_readable(f.type) for f in scan.schema)):
        return NativeRead(engine=scan.splits())
    native = scan.native_read(*split_packing(table), joins=joins)
    if not all(_spark_path(f.path) for f in (*native.files, *native.base, *native.delta)):
        return NativeRead(engine=scan.splits())
    return native


def read(spark: SparkSession, path: str, columns: list[str] | None = None, snapshot_id: int | None = None,
         tag: str | None = None, timestamp_ms: int | None = None,
         storage_options: dict[str, str] | None = None, *, filter: str | None = None,
         spark_joins: bool = False) -> DataFrame:
    """The rows of table ``path`` (``columns`` of them, all by default) at the latest snapshot
    or the one selected, as ``spark.read.format("tidelake")`` gives them, with the splits that
    are plain Parquet files read by Spark's own Parquet reader. The DataFrame reads the
    snapshot resolved now, at every query (see the module docs); the data source part needs
    the ``tidelake`` format registered (:func:`tidelake.spark.register`).

    ``filter``: a Spark SQL condition (``"dt = '2026-11-01' and k > 5"``): the DataFrame holds
    the rows it selects, and the partitions, buckets, files and row groups its simple conjuncts
    rule out are never read (:mod:`tidelake.spark.pruning`), whatever later queries of the
    DataFrame do.

    ``spark_joins``: Spark also reads the files with deletion vectors and the bases of buckets
    with a newer delta, removing deleted rows by broadcast anti-joins (see the module docs);
    slower than the engine on the benchmarks so far, so off by default."""
    table = open_table(path, storage_options=storage_options)
    return read_table(spark, table, columns, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms,
                      where=filter, spark_joins=spark_joins)


def read_table(spark: SparkSession, table: Table, columns: list[str] | None = None, *,
               snapshot_id: int | None = None, tag: str | None = None, timestamp_ms: int | None = None,
               where: str | None = None, prune: expr.Filter | None = None, spark_joins: bool = False) -> DataFrame:
    """:func:`read` of an open table: the rows ``where`` selects (all without it), pruned with
    ``where`` and with ``prune``, a filter tree admitting a superset of the rows the caller
    keeps (the DataFrame then may hold rows ``prune`` rules out, and misses none it admits);
    ``spark_joins`` as there."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    def pinned_scan(prune: expr.Filter | None) -> Scan:
        return table.scan(snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms, filter=prune)

    scan = pinned_scan(prune)
    # the schema of the snapshot read, as a pinned read of the data source has it
    schema = from_arrow_schema(scan.schema, prefer_timestamp_ntz=True)
    wanted = columns
    parsed = None if where is None else parse_condition(where)
    if parsed is not None:
        prune = expr.all_of([prune, condition_filter(parsed, scan.schema)])
        scan = pinned_scan(prune)
        if columns is not None:  # and the columns the condition needs (Spark's names ignore case)
            from sqlglot import exp

            named = {str(c.name).lower() for c in parsed.find_all(exp.Column)}
            columns = [*columns, *(c for c in schema.names if c.lower() in named and c not in columns)]
    if columns is not None:
        unknown = [c for c in columns if c not in schema.names]
        if unknown:
            raise InvalidArgumentError(f"columns {unknown} are not in table {table.path}; its columns are "
                                       f"{schema.names}")
        schema = StructType([schema[c] for c in columns])
    frame = _read_scan(spark, table, scan, schema, prune, joins=spark_joins,
                       travels=any(v is not None for v in (snapshot_id, tag, timestamp_ms)))
    if where is None:
        return frame
    frame = frame.where(where)
    return frame if wanted == columns else frame.select(*wanted)  # type: ignore[misc]


def _read_scan(spark: SparkSession, table: Table, scan: Scan, schema: StructType, prune: expr.Filter | None, *,
               joins: bool, travels: bool) -> DataFrame:
    """The rows of ``scan`` (of ``table``, planned with ``prune``) as ``schema``: the files
    :func:`classified_read` (with ``joins``) gives Spark through its Parquet reader (:mod:`tidelake.spark.native`),
    the rest through the engine (the data source pinned to the same snapshot and filter, or
    ``mapInArrow`` tasks on PySpark 3.x), packed into tasks (:func:`engine_tasks`)."""
    projection = io.projection(table, schema)
    if scan.snapshot_id is None or (not travels and table.scan(snapshot_id=scan.snapshot_id).schema != scan.schema):
        # an empty table (nothing to pin), or the schema changed after the latest snapshot: a
        # read of the latest has the latest schema, which a pinned read would not (none of its
        # files is plain then anyway)
        if has_data_source():
            return _source(spark, table, schema, prune).load(table.path)
        splits = table.scan(columns=projection, filter=prune).splits()
        return read_splits(spark, engine_tasks(table, splits, parallelism=spark.sparkContext.defaultParallelism),
                           schema)
    pinned = {"snapshot_id": scan.snapshot_id}
    found = classified_read(table, projection, pinned, prune, joins=joins)
    frames = []
    if found.files or found.base:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StructType

        keys = StructType([from_arrow_schema(table.schema, prefer_timestamp_ntz=True)[k] for k in table.primary_keys])
        frames = native_frames(spark, str(local_root(table)), found, schema, PARQUET_OPTIONS, keys)
    if found.engine:
        if has_data_source():
            frames.append(_source(spark, table, schema, prune).option("snapshot-id", str(scan.snapshot_id))
                          .option(SKIP_PLAIN, "true").option(SPARK_JOINS, str(joins).lower()).load(table.path))
        else:
            tasks = engine_tasks(table, found.engine, parallelism=spark.sparkContext.defaultParallelism)
            frames.append(read_splits(spark, tasks, schema))
    if not frames:
        return spark.createDataFrame([], schema)
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _source(spark: SparkSession, table: Table, schema: StructType, prune: expr.Filter | None) -> DataFrameReader:
    """``spark.read.format("tidelake")`` with ``schema``, the table's storage options and the
    pruning filter."""
    source = spark.read.format("tidelake").schema(schema)
    for key, value in (table.storage_options or {}).items():
        source = source.option(io.STORAGE_PREFIX + key, value)
    if prune is not None:
        source = source.option(FILTER, expr.filter_json(prune))
    return source
