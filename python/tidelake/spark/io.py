"""What every Spark entry point shares: options, schemas, task writes and commit identities.

Everything here runs in whatever Python process Spark chooses (planner, executor, commit
worker) and takes plain data only (paths, option dicts, payload bytes): the engine's table
handle is opened inside the call, never pickled.

Commit identities (Paimon's exactly-once contract, see :meth:`tidelake.Table.commit`):

* a batch job commits as a fresh user ``spark-<kind>-<uuid>`` with identifier
  :data:`JOB_IDENTIFIER`, so the driver can always tell whether that commit landed;
* a streaming sink commits as ``spark-stream-<digest of the checkpoint location>`` with the
  micro-batch id as identifier, so a replayed batch is a no-op.

Invariant: files written by an attempt are deleted only when its commit provably did not land
(:func:`discard_unless_committed`); Spark calls ``abort`` even after a commit call that raised
once the snapshot was published.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from .. import _internal
from .. import exceptions as errors
from ..exceptions import InvalidArgumentError
from ..table import Table, open_or_create_table, open_table
from ..write import CommitMessage, TableWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

JOB_IDENTIFIER = 1
"""Commit identifier of one-off Spark jobs (each job has its own commit user)."""

ROW_KIND = "_row_kind"
"""The changelog column streaming reads add with ``option("row-kind", "true")``."""

WRITE_KINDS = {"append": "write", "overwrite": "write", "upsert": "upsert", "delete": "delete"}
"""Spark write modes and the :class:`~tidelake.TableWriter` method each uses."""


READ_BATCH_ROWS = 65_536
"""Rows per Arrow batch a Spark read sends to the JVM. Every batch costs Spark's Python worker
and JVM a fixed amount: a merged 2M-row read took 1.37 s of CPU (JVM + Python worker) in
8,192-row batches, 1.12 s in 65,536-row ones and no less in 131,072-row ones (benches/LOG.md,
Spark section)."""


STORAGE_PREFIX = "storage."
"""Source options with this prefix are the table's storage options, e.g.
``option("storage.aws_endpoint", "http://...")`` (see :func:`tidelake.open_table`)."""


@dataclass(frozen=True)
class Location:
    """Where a table is: its path, storage options and branch (``None``: main), the plain data
    Spark-side objects keep instead of a table handle."""

    path: str
    storage_options: dict[str, str] | None = None
    branch: str | None = None

    def open(self) -> Table:
        return open_table(self.path, storage_options=self.storage_options, branch=self.branch)


def location(options: dict[str, str]) -> Location:
    """The table of a source's options: ``load(path)``/``save(path)``/``path``, plus the
    ``storage.*`` options."""
    path = options.get("path")
    if not path:
        raise InvalidArgumentError("the tidelake source needs a table path: .load(path), .save(path) or "
                                   "option('path', ...). Spark gives none for a table of its catalog created with "
                                   "a column list or AS SELECT: create it as CREATE TABLE t USING tidelake "
                                   "LOCATION '/path' (no columns) over an existing table, or use "
                                   "tidelake.spark.sql")
    storage = {k[len(STORAGE_PREFIX):]: v for k, v in options.items() if k.startswith(STORAGE_PREFIX)}
    return Location(path, storage or None)


READ_ONLY_OPTIONS = frozenset({"path", "checkpointlocation", "row-kind", "snapshot-id", "tag", "timestamp-ms",
                               "scan.mode", "consumer-id", "consumer.ignore-progress", "maxsnapshotspertrigger",
                               "maxrowspertrigger", "read.stream.maxfilespertrigger", "read.stream.maxbytespertrigger",
                               "read.stream.maxrowspertrigger", "read.stream.minrowspertrigger",
                               "read.stream.maxtriggerdelayms",
                               "skip-plain-splits", "filter"})
"""Source options that are not table options of a table a write creates."""


@dataclass(frozen=True)
class CreateSpec:
    """How a write creates its table when it does not exist: Paimon's ``primary-key``,
    ``partition`` (or ``partition-by``) and ``bucket`` options, and every other option as a
    table option."""

    primary_keys: list[str] | None = None
    partition_by: list[str] | None = None
    bucket: int | None = None
    options: dict[str, str] | None = None

    @classmethod
    def of_options(cls, options: dict[str, str]) -> CreateSpec:
        def names(*keys: str) -> list[str] | None:
            given = [options[k] for k in keys if options.get(k)]
            return [c.strip() for c in given[0].split(",") if c.strip()] if given else None

        rest = {k: v for k, v in options.items()
                if k not in READ_ONLY_OPTIONS and not k.startswith(STORAGE_PREFIX)
                and k not in ("primary-key", "partition", "partition-by", "bucket")}
        return cls(names("primary-key"), names("partition-by", "partition"), int_option(options, "bucket"),
                   rest or None)

    def open_or_create(self, where: Location, schema: pa.Schema, mode: str) -> tuple[Table, bool]:
        """The table at ``where``, created with ``schema`` if absent (``mode`` as
        :func:`tidelake.table.open_or_create_table`'s)."""
        return open_or_create_table(where.path, schema, mode=mode, primary_keys=self.primary_keys,
                                    partition_by=self.partition_by, bucket=self.bucket, options=self.options,
                                    storage_options=where.storage_options)


def flag(options: dict[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(f"option {key} must be true or false, got {options[key]!r}")
    return value == "true"


def int_option(options: dict[str, str], key: str) -> int | None:
    if key not in options:
        return None
    try:
        return int(options[key])
    except ValueError:
        raise InvalidArgumentError(f"option {key} must be an integer, got {options[key]!r}") from None


def time_travel(options: dict[str, str]) -> dict[str, Any]:
    """The ``snapshot-id`` / ``tag`` / ``timestamp-ms`` options as :meth:`Table.scan` arguments."""
    return {"snapshot_id": int_option(options, "snapshot-id"), "tag": options.get("tag"),
            "timestamp_ms": int_option(options, "timestamp-ms")}


def is_pinned(pinned: dict[str, Any] | None) -> bool:
    """Whether :func:`time_travel` arguments pin a snapshot."""
    return pinned is not None and any(v is not None for v in pinned.values())


def spark_schema(table: Table, with_row_kind: bool = False, pinned: dict[str, Any] | None = None) -> StructType:
    """The Spark schema of a table's rows (TIMESTAMP without zone maps to TIMESTAMP_NTZ). A read
    pinned to a snapshot (``pinned``, as :func:`time_travel` gives) has the schema that snapshot
    was written in, as in Paimon; otherwise the latest schema."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    arrow = table.scan(**pinned).schema if pinned is not None and is_pinned(pinned) else table.schema
    schema = from_arrow_schema(arrow, prefer_timestamp_ntz=True)
    if with_row_kind:
        return StructType([StructField(ROW_KIND, StringType(), False), *schema.fields])
    return schema


def arrow_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark checks batches from ``read()`` against."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)  # PySpark 3.x: time zone-aware timestamps are labelled UTC


def ddl_schema(ddl: str) -> StructType:
    """The Spark schema of column definitions ``a BIGINT NOT NULL, b STRING`` (``StructType.fromDDL``,
    PySpark 4.0+; on 3.x the JVM's parser of the active session)."""
    from pyspark.sql.types import StructType

    if hasattr(StructType, "fromDDL"):
        return cast(StructType, StructType.fromDDL(ddl))
    from pyspark.sql.types import _parse_datatype_string

    return cast(StructType, _parse_datatype_string(ddl))


def collect_arrow(frame: DataFrame) -> pa.Table:
    """The rows of ``frame`` as a pyarrow Table on the driver (``DataFrame.toArrow``, PySpark
    4.0+; its Arrow collect on 3.x)."""
    if hasattr(frame, "toArrow"):
        return cast(pa.Table, frame.toArrow())
    batches = frame._collect_as_arrow()  # type: ignore[operator]
    return pa.Table.from_batches(batches) if batches else arrow_schema(frame.schema).empty_table()


def projection(table: Table, schema: StructType) -> list[str] | None:
    """The table columns to read for Spark schema ``schema`` (None: all, in table order)."""
    names = [n for n in schema.names if n != ROW_KIND]
    if names == table.schema.names:
        return None
    unknown = [n for n in names if n not in table.schema.names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} of the given schema are not in table {table.path}; "
                                   f"its columns are {table.schema.names}")
    return names


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to exactly ``target`` (column order, types, time zones, nullability)."""
    columns = [batch.column(f.name).cast(f.type) for f in target]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def rows_of_split(split: Any, target: pa.Schema, changes: bool) -> Iterator[pa.RecordBatch]:
    """Stream a split as batches of ``target`` (up to :data:`READ_BATCH_ROWS` rows each).
    Change splits carry ``_row_kind``: kept when ``target`` has it, else only inserts and
    update-afters are kept; a snapshot's full state gets ``+I`` when ``target`` asks for row
    kinds."""
    import pyarrow.compute as pc

    want_kind = ROW_KIND in target.names
    for batch in split.read(READ_BATCH_ROWS):
        if changes and not want_kind:
            batch = batch.filter(pc.is_in(batch.column(ROW_KIND), pa.array(["+I", "+U"])))
        elif want_kind and not changes:
            kinds = pa.array(["+I"] * batch.num_rows, pa.string())
            batch = pa.RecordBatch.from_arrays([kinds, *batch.columns], names=[ROW_KIND, *batch.schema.names])
        if batch.num_rows:
            yield conform(batch, target)


def drop_columns(batch: pa.RecordBatch, names: Iterable[str]) -> pa.RecordBatch:
    drop = [n for n in names if n in batch.schema.names]
    return batch.drop_columns(drop) if drop else batch


def write_task(where: Location, commit_user: str, overwrite: bool, batches: Iterable[pa.RecordBatch],
               kind: str = "write", drop: Iterable[str] = ()) -> list[bytes]:
    """Write ``batches`` with one engine writer (it buffers them into large files; Spark's
    batches are small) and return the commit-message payloads. On any failure the files this
    attempt wrote are deleted before the error propagates."""
    drop = tuple(drop)
    w = TableWriter(where.open(), commit_user, overwrite=overwrite)
    try:
        method = getattr(w, kind)
        for batch in batches:
            method(drop_columns(batch, drop))
        payloads = [m.payload for m in w.prepare_commit()]
    except BaseException:
        w.abort()
        raise
    w.close()
    return payloads


def job_user(kind: str) -> str:
    return f"spark-{kind}-{uuid.uuid4().hex}"


def stream_user(checkpoint: str | None) -> str:
    """The commit user of a streaming sink: stable for one checkpoint location."""
    if not checkpoint:
        raise InvalidArgumentError("a tidelake streaming sink needs option('checkpointLocation', ...) "
                                   "for exactly-once commits")
    digest = hashlib.sha256(checkpoint.rstrip("/").encode()).hexdigest()[:24]
    return f"spark-stream-{digest}"


def messages(payloads: list[bytes], commit_user: str) -> list[CommitMessage]:
    """Task payloads (what crosses Spark) as the commit messages of ``commit_user``."""
    return [CommitMessage(p, commit_user) for p in payloads]


def is_committed(table: Table, commit_user: str, identifier: int) -> bool:
    return table.is_committed(identifier, commit_user)


def commit(table: Table, payloads: list[bytes], commit_user: str, identifier: int, overwrite: bool) -> list[int]:
    """Commit payloads atomically as (commit_user, identifier); a no-op returning [] when that
    pair already landed. ``overwrite`` replaces the whole table."""
    return table.commit(messages(payloads, commit_user), identifier, commit_user, overwrite=overwrite)


def discard(table: Table, payloads: list[bytes], commit_user: str) -> None:
    """Delete the files of payloads that will never be committed."""
    if payloads:
        table.discard(messages(payloads, commit_user))


def discard_unless_committed(where: Location, payloads: list[bytes], commit_user: str, identifier: int) -> bool:
    """Delete the payloads' files unless (commit_user, identifier) landed; True if deleted."""
    table = where.open()
    if not payloads or is_committed(table, commit_user, identifier):
        return False
    discard(table, payloads, commit_user)
    return True


def check_dynamic_bucket_writers(table: Table, tasks: list[tuple[int, list[bytes]]]) -> None:
    """Refuse a commit in which several tasks (``(task id, payloads)`` pairs) wrote the same
    partition of a dynamic-bucket table (any partition, for cross-partition tables): each task
    assigned new keys to buckets on its own, so keys could be duplicated across buckets (or
    partitions) and the tasks' bucket indexes would overwrite each other."""
    if not table.primary_keys or table.effective_options["bucket"] != -1:
        return
    if table._raw.cross_partition_update:
        writers = sorted({task for task, payloads in tasks if payloads})
        if len(writers) > 1:
            raise InvalidArgumentError(
                f"{len(writers)} Spark tasks wrote cross-partition table {table.path} (bucket = -1, a "
                "primary key without the partition column); each had its own key index, so a key could "
                "land in two partitions; write with tidelake.spark.write(df, path), which uses one task")
        return
    owner: dict[bytes, int] = {}
    for task, payloads in tasks:
        for p in payloads:
            partition, _ = _internal.message_target(p)
            if owner.setdefault(partition, task) != task:
                raise InvalidArgumentError(
                    f"several Spark tasks wrote the same partition of dynamic-bucket table {table.path} "
                    "(bucket = -1), which would duplicate keys across buckets; write with "
                    "tidelake.spark.write(df, path), which routes each partition to one task")


_TASK_ERROR = re.compile(r"tidelake\.exceptions\.(\w+): ([^\n]*)")


@contextlib.contextmanager
def typed_errors() -> Iterator[None]:
    """Re-raise a Spark job failure caused by a tidelake error in a task (Spark wraps it in
    its own exception, the Python traceback deep inside) as that tidelake error, with Spark's
    exception as its cause."""
    try:
        yield
    except errors.TidelakeError:
        raise
    except Exception as e:
        found = _TASK_ERROR.findall(str(e))
        kind = getattr(errors, found[-1][0], None) if found else None
        if isinstance(kind, type) and issubclass(kind, errors.TidelakeError):
            raise kind(f"{found[-1][1]} (in a Spark task)") from e
        raise


def _probe_worker(_: Any) -> str:
    from .. import _internal as engine  # noqa: F401  (the import is the check)

    return sys.executable


def check_workers(spark: Any) -> None:
    """Run a one-task job to check that Spark's Python workers can import tidelake (with the
    engine); without a SparkContext (Spark Connect) nothing is checked."""
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect has none
        return
    try:
        sc.parallelize([0], 1).map(_probe_worker).collect()
    except Exception as e:
        lines = [ln for ln in str(e).splitlines() if "Error" in ln and "tidelake" in ln] or str(e).splitlines()[:1]
        raise errors.UnsupportedError(
            f"Spark's Python workers cannot import tidelake ({lines[-1].strip()}). Set PYSPARK_PYTHON (or the "
            f"spark.pyspark.python conf) to an interpreter with tidelake installed, e.g. {sys.executable}, "
            "before the SparkSession starts") from e
