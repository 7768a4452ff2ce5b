"""PySpark integration: the ``tidelake`` data source, a ``mapInArrow`` writer and a streaming
upsert sink. No JVM jar: rows cross as Arrow and tidelake's Rust engine reads and writes the
files inside Spark's Python workers (which need this package: set ``PYSPARK_PYTHON``).

* :func:`register` makes ``spark.read/readStream.format("tidelake")`` and
  ``df.write/writeStream.format("tidelake")`` available (PySpark 4.x Python Data Source API;
  the ``pyspark_tidelake`` module shipped with the wheel also auto-registers it).
* :func:`read` reads a table as ``spark.read.format("tidelake")`` does, with Spark's own
  Parquet reader for the splits that are plain Parquet files (pinned to the snapshot current
  when it is called; :mod:`tidelake.spark.plain`); with ``filter=`` (a Spark SQL condition)
  it skips the partitions, buckets, files and row groups the condition rules out
  (:mod:`tidelake.spark.pruning`), as the ``SELECT``s of :func:`sql` do with their ``WHERE``.
* :func:`write` writes a DataFrame with ``mode="append" | "overwrite" | "upsert" | "delete"``
  through ``DataFrame.mapInArrow`` (Spark 3.3+). On primary-key tables rows are routed by
  Paimon's bucket hash (computed by the engine) so that each (partition, bucket) has one
  writer task; dynamic-bucket tables get one task per partition, so no key lands in two
  buckets. One atomic commit on the driver.
* :func:`upsert_sink` is a ``foreachBatch`` function for streaming upserts/deletes (Spark
  rejects update mode for Python sinks), exactly-once per (query, batch id).
* :func:`register_kafka` makes ``spark.readStream.format("tidelake-kafka")`` available: Kafka
  topics read through confluent-kafka, for clusters without Spark's Kafka connector
  (:mod:`tidelake.spark.kafka`).
* :func:`cdc_sink` is a ``foreachBatch`` function applying database change messages (Debezium,
  Canal, Maxwell, OGG JSON in a ``value`` column, as Kafka gives) with :func:`tidelake.cdc.sync`,
  exactly-once per (query, batch id).
* :func:`compact` compacts a table with Spark: planned on the driver, one task per bucket on
  the executors, one commit on the driver (:mod:`tidelake.compaction`).
* :func:`sql` runs queries, CREATE TABLE (and AS SELECT) / REPLACE / ALTER / DROP / TRUNCATE /
  DESCRIBE / SHOW / INSERT / CALL / DELETE / UPDATE / MERGE on tidelake tables and passes other
  statements to ``spark.sql`` (:mod:`tidelake.spark.statements`); :func:`delete`,
  :func:`update` and :func:`merge` are row-level DML (:mod:`tidelake.spark.dml`: one task per
  target (partition, bucket) in the executors, one atomic commit on the driver).

Every object Spark pickles holds plain data; the table is opened inside each task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from ..exceptions import InvalidArgumentError, TableNotFoundError, UnsupportedError
from ..table import Table
from ..write import TableWriter
from . import io
from .dml import delete, merge, update
from .plain import read
from .statements import CATALOG_CONF, WAREHOUSE_CONF, sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..cdc import Format

__all__ = ["register", "register_kafka", "read", "write", "upsert_sink", "cdc_sink", "compact", "sql", "delete",
           "update", "merge", "BUCKET_COLUMN"]

BUCKET_COLUMN = "_tidelake_bucket"
"""The routing column :func:`write` adds (and drops before writing) on fixed-bucket tables."""

_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_SHARED_READ_PLANS = (4, 3)
"""The newest PySpark that keeps one read plan per relation (``PythonDataSourceV2.readInfo``,
SPARK-51575); Spark 5.0 keeps it per scan (SPARK-58551)."""


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def pushdown_is_safe(version: str) -> bool:
    """Whether PySpark ``version`` plans each scan's read with its own pushed filters, so that
    the data source may prune with them."""
    return _version(version) > _SHARED_READ_PLANS


def register(spark: SparkSession, filter_pushdown: bool | None = None, warehouse: str | None = None,
             check_workers: bool = True, catalog: dict[str, str] | None = None) -> None:
    """Register the ``tidelake`` format with ``spark`` (PySpark 4.0+).

    ``check_workers`` runs a one-task job first (about a second) that fails with a clear
    UnsupportedError if Spark's Python workers cannot import tidelake (set ``PYSPARK_PYTHON``
    / ``spark.pyspark.python``).

    ``warehouse``: where :func:`sql` looks up ``db.table`` identifiers (session conf
    ``spark.tidelake.warehouse``). ``catalog``: Paimon catalog options instead
    (:meth:`tidelake.Catalog.from_options`: ``metastore``, ``warehouse``, ``uri``, ...; session
    conf ``spark.tidelake.catalog``, JSON), so ``db.table`` resolves in a JDBC, REST or Hive catalog
    and commits go through it.

    With ``filter_pushdown`` the reader also prunes partitions, files and row groups with the
    query's filters; this sets ``spark.sql.python.filterPushdown.enabled`` (without that conf
    Spark fails every read of a source that accepts filters). The default (None) switches it on
    where it is exact (:func:`pushdown_is_safe`: PySpark 5.0+). Refused on PySpark 4.3 and
    older, which keep the read plan of a query with pushed filters on the relation and reuse it
    for the relation's other scans (later queries without pushable filters, the other side of a
    self-join): they would miss rows. There, :func:`read` with ``filter=`` and the queries of
    :func:`sql` prune instead.

    Raises:
        UnsupportedError: the PySpark version has no Python Data Source API (use :func:`write`
            and ``tidelake.open_table`` there), ``filter_pushdown`` on PySpark <= 4.3, or the
            workers cannot import tidelake.
    """
    import pyspark

    try:
        from .source import PushdownDataSource, TidelakeDataSource
    except ImportError as e:  # PySpark < 4.0
        raise UnsupportedError(f"the tidelake Spark source needs PySpark 4.0+ ({e}); "
                               "tidelake.spark.write works from Spark 3.3") from e
    if filter_pushdown is None:
        filter_pushdown = pushdown_is_safe(pyspark.__version__)
    elif filter_pushdown and not pushdown_is_safe(pyspark.__version__):
        raise UnsupportedError(
            f"filter_pushdown=True is refused on PySpark {pyspark.__version__}: it reuses the read plan of a "
            "query with pushed filters for later queries of the same DataFrame or view that have none, so "
            "those would miss rows. Register without it (Spark still applies every filter).")
    if check_workers:
        io.check_workers(spark)
    if warehouse is not None:
        spark.conf.set(WAREHOUSE_CONF, str(warehouse))
    if catalog is not None:
        spark.conf.set(CATALOG_CONF, json.dumps({str(k): str(v) for k, v in catalog.items()}))
    if filter_pushdown:
        spark.conf.set(_PUSHDOWN_CONF, "true")
    spark.dataSource.register(PushdownDataSource if filter_pushdown else TidelakeDataSource)


def register_kafka(spark: SparkSession) -> None:
    """Register the ``tidelake-kafka`` streaming source with ``spark`` (PySpark 4.2+ and
    confluent-kafka on the driver and workers): ``key, value, topic, partition, offset,
    timestamp`` rows of Kafka topics, offsets kept in the query's checkpoint (options in
    :mod:`tidelake.spark.kafka` and docs/cdc.md). With :func:`cdc_sink` the pipeline is
    exactly-once.

    Example::

        tidelake.spark.register_kafka(spark)
        spark.readStream.format("tidelake-kafka").option("bootstrap.servers", "broker:9092") \\
            .option("subscribe", "dbserver1.inventory").option("startingOffsets", "earliest").load() \\
            .writeStream.foreachBatch(tidelake.spark.cdc_sink("/wh")).option("checkpointLocation", "/chk").start()

    Raises:
        UnsupportedError: PySpark without the streaming Python Data Source API.
    """
    try:
        from .kafka import KafkaDataSource
    except ImportError as e:
        raise UnsupportedError(f"the tidelake-kafka source needs PySpark 4.2+ ({e})") from e
    spark.dataSource.register(KafkaDataSource)


class _Bucketer:
    """``mapInArrow`` function appending :data:`BUCKET_COLUMN` (the engine's bucket of each row)."""

    def __init__(self, where: io.Location, kind: str, overwrite: bool) -> None:
        self.where, self.kind, self.overwrite = where, kind, overwrite

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer = TableWriter(self.where.open(), overwrite=self.overwrite)
        try:
            for batch in batches:
                yield batch.append_column(pa.field(BUCKET_COLUMN, pa.int32(), False), writer.buckets(batch, self.kind))
        finally:
            writer.close()


class _TaskWriter:
    """``mapInArrow`` function writing its partition's rows; yields its message payloads."""

    def __init__(self, where: io.Location, commit_user: str, overwrite: bool, kind: str) -> None:
        self.where, self.commit_user, self.overwrite, self.kind = where, commit_user, overwrite, kind

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        payloads = io.write_task(self.where, self.commit_user, self.overwrite, batches, self.kind,
                                 drop=(BUCKET_COLUMN,))
        yield pa.record_batch({"payload": pa.array(payloads, pa.binary())})


def _routed(df: DataFrame, where: io.Location, kind: str, overwrite: bool, shuffle: bool | None,
            num_partitions: int | None) -> DataFrame:
    """``df`` laid out so that each (partition, bucket) is written by one task."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    table = where.open()
    partition_keys = table.partition_keys
    bucket = table.effective_options["bucket"]
    if not table.primary_keys:
        if shuffle:
            raise InvalidArgumentError("shuffle=True needs a primary-key table; append tables are written as they are")
        return df
    if bucket == -2:  # postpone: any task writes any row to bucket-postpone, as Paimon's Spark writer
        if shuffle:
            raise InvalidArgumentError("postpone-bucket tables (bucket = -2) are written as they are; "
                                       "shuffle=True is not allowed")
        return df
    if bucket == -1:
        if shuffle is False:
            raise InvalidArgumentError("dynamic-bucket tables (bucket = -1) must be written with one task per "
                                       "partition (per table when the key lacks a partition column); "
                                       "shuffle=False is not allowed")
        if not partition_keys or table._raw.cross_partition_update:
            # one key index for the table: a cross-partition key may move between partitions
            return df.repartition(1)
        return df.repartition(num_partitions, *partition_keys) if num_partitions else df.repartition(*partition_keys)
    if shuffle is False:
        return df
    routed_schema = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    routed = df.mapInArrow(_Bucketer(where, kind, overwrite), routed_schema)
    n = num_partitions or (None if partition_keys else bucket)
    columns = [*partition_keys, BUCKET_COLUMN]
    return routed.repartition(n, *columns) if n else routed.repartition(*columns)


_CREATE_MODES = {"error": "error", "errorifexists": "error", "ignore": "ignore"}
"""Spark save modes that only say what to do when the table exists; they then append."""


WriteMode = Literal["append", "overwrite", "upsert", "delete", "error", "errorifexists", "ignore"]
""":func:`write`'s modes: how rows are written, or (the last three) what to do when the table exists."""


def _merge_on_upsert_key(df: DataFrame, where: io.Location, keys: list[str], sequence: list[str]) -> int | None:
    """An append to a table with ``upsert-key``, as Paimon's Spark ``RewriteUpsertTable``
    rewrites it: with ``sequence.field`` the latest row of each key (``row_number() = 1`` by
    the sequence fields descending), then a MERGE on the keys (``<=>``) updating matched rows
    when the target's sequence is not newer and inserting the others."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if sequence:
        latest = Window.partitionBy(*[F.col(f"`{k}`") for k in keys]).orderBy(
            *[F.col(f"`{f}`").desc() for f in sequence])
        rank = "__tidelake_rn__"
        df = df.withColumn(rank, F.row_number().over(latest)).filter(F.col(rank) == 1).drop(rank)
    on = " AND ".join(f"target.`{k}` <=> source.`{k}`" for k in keys)
    newer = " AND ".join(f"target.`{f}` <= source.`{f}`" for f in sequence) or None
    builder = merge(where.path, df, on, storage_options=where.storage_options)
    return builder.when_matched_update("*", newer).when_not_matched_insert("*").execute().snapshot_id


def write(df: DataFrame, path: str | Table, mode: WriteMode = "append", *, primary_keys: list[str] | None = None,
          partition_by: list[str] | None = None, bucket: int | None = None, options: dict[str, str] | None = None,
          shuffle: bool | None = None, num_partitions: int | None = None, commit_user: str | None = None,
          commit_identifier: int | None = None, storage_options: dict[str, str] | None = None) -> int | None:
    """Write ``df`` into the table at ``path`` with one atomic commit; returns the new snapshot
    id (None when nothing was committed). Works on Spark 3.3+ (``DataFrame.mapInArrow``).

    A missing table is created from ``df``'s schema with ``primary_keys``, ``partition_by``,
    ``bucket`` and table ``options`` (Paimon's); given for an existing table, the keys must
    match it.

    Args:
        mode: ``append`` (upsert by key on primary-key tables), ``overwrite`` (replace the
            table), ``upsert`` or ``delete`` (rows need the key columns; primary-key tables),
            ``error`` / ``errorifexists`` (TableAlreadyExistsError if the table exists, else
            append) or ``ignore`` (nothing if the table exists, else append), as Spark's save
            modes.
        shuffle: on fixed-bucket primary-key tables, route rows by bucket so each (partition,
            bucket) is written by one task (default True). ``False`` skips that shuffle: every
            task writes level-0 files of every bucket it sees, which is correct (rows of one
            write have no order between tasks either way) but leaves more files to compact.
        num_partitions: Spark partitions after the shuffle (default: the bucket count of an
            unpartitioned table, else ``spark.sql.shuffle.partitions``).
        commit_user, commit_identifier: commit as this pair (exactly-once: if it already
            landed nothing is written and None is returned). Default: a fresh user.
        storage_options: of an object-store table (see :func:`tidelake.open_table`).

    Raises:
        UnsupportedError: upsert/delete on an append table.
        InvalidArgumentError: unknown mode or a disallowed ``shuffle``.
        TableAlreadyExistsError: ``mode="error"`` and the table exists.
        SchemaMismatchError: keys given that differ from the existing table's.
    """
    if mode not in io.WRITE_KINDS and mode not in _CREATE_MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join([*io.WRITE_KINDS, *_CREATE_MODES])}, "
                                   f"got {mode!r}")
    spec = io.CreateSpec(primary_keys, partition_by, bucket, options)
    if isinstance(path, Table):  # opened through a catalog: its commit goes through the catalog too
        table, created = path, False
        where = io.Location(table.path, table.storage_options or None,
                            None if table.branch == "main" else table.branch)
    else:
        where = io.Location(str(path), storage_options)
        table, created = spec.open_or_create(where, io.arrow_schema(df.schema), _CREATE_MODES.get(mode, "append"))
    if mode in _CREATE_MODES:
        if mode == "ignore" and not created:
            return None
        mode = "append"
    if mode in ("upsert", "delete") and not table.primary_keys:
        raise UnsupportedError(f"mode={mode} needs a primary-key table; {path} is an append table")
    if (commit_user is None) != (commit_identifier is None):
        raise InvalidArgumentError("give both commit_user and commit_identifier, or neither")
    if mode == "append" and table._raw.upsert_merge is not None:
        if commit_user is not None:
            raise UnsupportedError("an append to a table with 'upsert-key' is a merge, which commits once per run: "
                                   "commit_user and commit_identifier do not apply")
        return _merge_on_upsert_key(df, where, *table._raw.upsert_merge)
    user = commit_user or io.job_user("write")
    ident = io.JOB_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    if io.is_committed(table, user, ident):
        return None
    kind, overwrite = io.WRITE_KINDS[mode], mode == "overwrite"
    routed = _routed(df, where, kind, overwrite, shuffle, num_partitions)
    # One action only: every action on this DataFrame would run the writes again.
    with io.typed_errors():
        rows = routed.mapInArrow(_TaskWriter(where, user, overwrite, kind), "payload binary").collect()
    payloads = [bytes(r.payload) for r in rows]
    try:
        ids = io.commit(table, payloads, user, ident, overwrite)
    except BaseException:
        io.discard_unless_committed(where, payloads, user, ident)
        raise
    if not ids and io.is_committed(table, user, ident) and payloads:
        # Someone committed this pair concurrently: our files are not part of it.
        io.discard(table, payloads, user)
    return ids[-1] if ids else None


def upsert_sink(path: str, mode: Literal["upsert", "delete", "append", "overwrite"] = "upsert",
                commit_user: str | None = None,
                **write_options: Any) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function writing each micro-batch with :func:`write` in ``mode``
    (``upsert`` by default; ``delete``, ``append`` or ``overwrite`` also work), exactly-once:
    batch ``b`` commits as (``commit_user``, b), so a batch Spark replays after a restart is
    skipped. ``commit_user`` defaults to one derived from the streaming query id, which stays
    the same across restarts from one checkpoint (pass one explicitly under Spark Connect).

    Example::

        counts.writeStream.outputMode("update") \\
            .foreachBatch(tidelake.spark.upsert_sink("/wh/db.db/counts")) \\
            .option("checkpointLocation", "/chk/counts").start()
    """
    if mode not in io.WRITE_KINDS:
        raise InvalidArgumentError(f"mode must be one of {', '.join(io.WRITE_KINDS)}, got {mode!r}")

    def sink(batch: DataFrame, batch_id: int) -> None:
        user = _streaming_commit_user(batch, commit_user, "upsert_sink")
        write(batch, path, mode, commit_user=user, commit_identifier=batch_id, **write_options)

    return sink


def _streaming_commit_user(batch: DataFrame, commit_user: str | None, sink: str) -> str:
    """``commit_user``, or one derived from the streaming query id (the same across restarts
    from one checkpoint)."""
    if commit_user is not None:
        return commit_user
    query = batch.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    if not query:
        raise InvalidArgumentError(f"{sink} could not find the streaming query id; pass commit_user")
    return f"spark-foreach-{query}"


def cdc_sink(target: str, format: Format = "debezium-json", commit_user: str | None = None, *,
             storage_options: dict[str, str] | None = None, **sync_options: Any) -> Callable[[DataFrame, int], None]:
    """A ``foreachBatch`` function applying the change messages of each micro-batch with
    :func:`tidelake.cdc.sync`: one commit per target table, exactly-once (batch ``b`` commits as
    (``commit_user``, b) on every table, so a batch Spark replays after a restart is skipped
    table by table).

    ``target`` is a warehouse directory (whole-database sync into a :class:`tidelake.Catalog`)
    or, when it holds a table, that table. The DataFrame needs a ``value`` column (string or
    binary JSON, e.g. Kafka's) and may have a ``key`` column. ``sync_options`` are those of
    :func:`tidelake.cdc.sync` (``table_mapping``, ``primary_keys``, ``partition_keys``,
    ``bucket``, ``options``, ``on_error``, ``dead_letter_table``). The messages of a micro-batch
    are collected on the driver: bound them with the source's ``maxOffsetsPerTrigger``.

    Example::

        spark.readStream.format("kafka").option("subscribe", "dbserver1.inventory.*").load() \\
            .writeStream.foreachBatch(tidelake.spark.cdc_sink("/wh", "debezium-json")) \\
            .option("checkpointLocation", "/chk/cdc").start()
    """
    from ..cdc import FORMATS

    if format not in FORMATS:
        raise InvalidArgumentError(f"unknown CDC format {format!r}; formats are {', '.join(FORMATS)}")

    def sink(batch: DataFrame, batch_id: int) -> None:
        from ..catalog import Catalog
        from ..cdc import sync

        user = _streaming_commit_user(batch, commit_user, "cdc_sink")
        columns = ["key", "value"] if "key" in batch.columns else ["value"]
        data = io.collect_arrow(batch.select(*columns))
        values = data.column("value").to_pylist()
        keys = data.column("key").to_pylist() if "key" in columns else [None] * len(values)
        messages = list(zip(keys, values))
        dest: Catalog | Table
        try:
            dest = io.Location(str(target), storage_options).open()
        except TableNotFoundError:
            dest = Catalog(str(target), storage_options)
        sync(dest, messages, format, commit_identifier=batch_id, commit_user=user, **sync_options)

    return sink


class _CompactionRunner:
    """``mapPartitions`` function running the compaction tasks (bytes) of its partition; yields
    their results."""

    def __init__(self, storage_options: dict[str, str] | None) -> None:
        self.storage_options = storage_options

    def __call__(self, tasks: Iterable[bytes]) -> Iterator[bytes]:
        from ..compaction import run_compaction_task

        for task in tasks:
            yield run_compaction_task(bytes(task), self.storage_options)


def compact(spark: SparkSession, path: str | Table, full: bool = False, partitions: list[dict[str, Any]] | None = None,
            *, storage_options: dict[str, str] | None = None) -> int | None:
    """Compact the table at ``path`` (or a :class:`tidelake.Table` opened through a catalog,
    whose commit then goes through the catalog) with Spark: the plan is made here, each bucket's task runs
    on an executor (one Spark task per bucket), and the results are committed here as one
    COMPACT snapshot, whose id is returned (None when nothing needed compacting). Arguments as
    :meth:`tidelake.Table.compact`; needs ``SparkContext`` (not Spark Connect).

    Exactly-once: Spark keeps one result per task (a retried or speculative attempt's files are
    never committed; they are orphans for ``remove_orphan_files``), the plan refuses a second
    result for a task, and a call made again after success plans the new snapshot afresh.

    Raises:
        CommitConflictError: a concurrent commit removed files the plan rewrote (nothing is
            committed; call again).
    """
    table = path if isinstance(path, Table) else io.Location(str(path), storage_options).open()
    storage_options = table.storage_options or None
    plan = table.compaction_plan(full, partitions)
    if not plan.tasks:
        return plan.moved_snapshot
    tasks = [t.to_bytes() for t in plan.tasks]
    with io.typed_errors():
        results = spark.sparkContext.parallelize(tasks, len(tasks)).mapPartitions(
            _CompactionRunner(storage_options)).collect()
    return plan.commit(results)
