"""``tidelake.spark.read``: Spark's own vectorized Parquet reader for the splits that are plain
Parquet files, the engine for the rest (the ``tidelake`` data source on PySpark 4.x,
``mapInArrow`` tasks on 3.x: :mod:`tidelake.spark.mapped`), as one DataFrame.

Through the Python Data Source API every row crosses from a Python worker to the JVM as Arrow
and is converted to rows there, which costs about as much as Spark's whole Parquet read
(benches/README.md, Spark section). Many splits need no engine at all: their rows are exactly
the rows of their data files (:meth:`tidelake._internal.RawScan.plain_files`: no merge, no
deleted rows, the read's schema, Parquet in the table directory). Spark reads those files
itself, value columns only by name (system columns never surface); the data source reads the
other splits of the same snapshot (option :data:`SKIP_PLAIN`).

Invariants:

* Both parts read one snapshot, resolved when :func:`read` is called: the DataFrame is pinned
  to it like a ``snapshot-id`` read (Spark lists a file list once), so later queries of it do
  not see later commits. Call :func:`read` again for newer data. If that snapshot expires
  before a query runs, Spark fails on the missing files.
* The two parts classify splits identically: both take :func:`classified_splits` of the same
  snapshot, projection and filter (option :data:`FILTER`; a split's class depends on the
  columns read), so every split is read by exactly one part.
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

import os
import re
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import expr
from ..exceptions import InvalidArgumentError
from ..scan import Scan, Split
from ..table import Table, open_table
from . import io
from .mapped import has_data_source, read_splits
from .pruning import condition_filter, parse_condition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["read", "read_table", "plain_files", "classified_splits", "spark_readable", "SKIP_PLAIN", "FILTER"]

FILTER = "filter"
"""Data source option: a JSON filter tree (:func:`tidelake.expr.filter_json`) the read is
planned with, pruning only (a superset of the rows it admits is read). Set by :func:`read` on
its data-source part, so that both parts plan the same snapshot with the same filter."""

SKIP_PLAIN = "skip-plain-splits"
"""Data source option: read only the splits :func:`plain_files` does not give (needs a pinned
snapshot). Set by :func:`read` on its data-source part."""

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


def plain_files(table: Table, scan: Scan) -> list[list[str] | None]:
    """Per split of ``scan.splits()``: the ``file:`` URIs of its data files when Spark's
    Parquet reader gives exactly its rows, else None (see the module docs)."""
    found = scan._raw.plain_files()
    root = local_root(table)
    if (root is None or _GLOB.search(root) or scan._raw.schema_id != table.schema_id
            or not all(spark_readable(f.type) for f in scan.schema)):
        return [None] * len(found)

    def uris(paths: list[str] | None) -> list[str] | None:
        if paths is None or any(_GLOB.search(p) or p.rsplit("/", 1)[-1][:1] in "._" for p in paths):
            return None
        return [f"file:{root}/{p}" for p in paths]

    return [uris(paths) for paths in found]


def classified_splits(table: Table, columns: list[str] | None, pinned: dict[str, Any],
                      prune: expr.Filter | None) -> list[tuple[Split, list[str] | None]]:
    """The splits of the pinned read of ``columns`` planned with ``prune``, each with its
    :func:`plain_files` URIs (None: the engine reads it). The one classification both parts of
    :func:`read` use, so that every split is read by exactly one of them."""
    scan = table.scan(columns=columns, filter=prune, **pinned)
    return list(zip(scan.splits(), plain_files(table, scan)))


def read(spark: SparkSession, path: str, columns: list[str] | None = None, snapshot_id: int | None = None,
         tag: str | None = None, timestamp_ms: int | None = None,
         storage_options: dict[str, str] | None = None, *, filter: str | None = None) -> DataFrame:
    """The rows of table ``path`` (``columns`` of them, all by default) at the latest snapshot
    or the one selected, as ``spark.read.format("tidelake")`` gives them, with the splits that
    are plain Parquet files read by Spark's own Parquet reader. The DataFrame reads the
    snapshot resolved now, at every query (see the module docs); the data source part needs
    the ``tidelake`` format registered (:func:`tidelake.spark.register`).

    ``filter``: a Spark SQL condition (``"dt = '2026-11-01' and k > 5"``): the DataFrame holds
    the rows it selects, and the partitions, buckets, files and row groups its simple conjuncts
    rule out are never read (:mod:`tidelake.spark.pruning`), whatever later queries of the
    DataFrame do."""
    table = open_table(path, storage_options=storage_options)
    return read_table(spark, table, columns, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms,
                      where=filter)


def read_table(spark: SparkSession, table: Table, columns: list[str] | None = None, *,
               snapshot_id: int | None = None, tag: str | None = None, timestamp_ms: int | None = None,
               where: str | None = None, prune: expr.Filter | None = None) -> DataFrame:
    """:func:`read` of an open table: the rows ``where`` selects (all without it), pruned with
    ``where`` and with ``prune``, a filter tree admitting a superset of the rows the caller
    keeps (the DataFrame then may hold rows ``prune`` rules out, and misses none it admits)."""
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
    frame = _read_scan(spark, table, scan, schema, prune, travels=any(v is not None for v in (snapshot_id, tag,
                                                                                             timestamp_ms)))
    if where is None:
        return frame
    frame = frame.where(where)
    return frame if wanted == columns else frame.select(*wanted)  # type: ignore[misc]


def _read_scan(spark: SparkSession, table: Table, scan: Scan, schema: StructType, prune: expr.Filter | None, *,
               travels: bool) -> DataFrame:
    """The rows of ``scan`` (of ``table``, planned with ``prune``) as ``schema``: its plain
    splits through Spark's Parquet reader, the others through the engine (the data source
    pinned to the same snapshot and filter, or ``mapInArrow`` tasks on PySpark 3.x)."""
    projection = io.projection(table, schema)
    if scan.snapshot_id is None or (not travels and table.scan(snapshot_id=scan.snapshot_id).schema != scan.schema):
        # an empty table (nothing to pin), or the schema changed after the latest snapshot: a
        # read of the latest has the latest schema, which a pinned read would not (none of its
        # files is plain then anyway)
        if has_data_source():
            return _source(spark, table, schema, prune).load(table.path)
        return read_splits(spark, table.scan(columns=projection, filter=prune).splits(), schema)
    pinned = {"snapshot_id": scan.snapshot_id}
    found = classified_splits(table, projection, pinned, prune)
    files = [uri for _, uris in found if uris is not None for uri in uris]
    plain = spark.read.schema(schema).options(**PARQUET_OPTIONS).parquet(*files) if files else None
    if plain is not None and all(uris is not None for _, uris in found):
        return plain
    if has_data_source():
        engine = (_source(spark, table, schema, prune).option("snapshot-id", str(scan.snapshot_id))
                  .option(SKIP_PLAIN, "true").load(table.path))
    else:
        engine = read_splits(spark, [split for split, uris in found if uris is None], schema)
    return engine if plain is None else plain.unionByName(engine)


def _source(spark: SparkSession, table: Table, schema: StructType, prune: expr.Filter | None) -> DataFrameReader:
    """``spark.read.format("tidelake")`` with ``schema``, the table's storage options and the
    pruning filter."""
    source = spark.read.format("tidelake").schema(schema)
    for key, value in (table.storage_options or {}).items():
        source = source.option(io.STORAGE_PREFIX + key, value)
    if prune is not None:
        source = source.option(FILTER, expr.filter_json(prune))
    return source
