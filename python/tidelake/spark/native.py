"""The natively read part of :func:`tidelake.spark.read`: Spark DataFrames, built from Spark's
own vectorized Parquet reader and built-in JVM operators only, of the data files a
:class:`~tidelake.scan.NativeRead` names (:func:`tidelake.spark.plain.classified_read` decides
which; the engine reads the rest).

* Files without a deletion vector: all their rows, less those whose ``_VALUE_KIND`` is -U or
  -D where the file may hold retracts.
* Files with a deletion vector: the same, less the deleted positions, removed by a left-anti
  join on one 64-bit key per row: ``_metadata.row_index`` alone for a file read on its own,
  else ``(xxhash64(file name) & 0x7fffffff) << 32 | row_index`` over files whose hashes differ
  and whose row counts are below 2^32 (Spark computes the hashes, so both sides hash alike;
  files whose hashes collide go to another scan). The deleted side is made from the deletion
  vectors (:meth:`~tidelake.scan.NativeRead.deleted_positions`) and broadcast up to
  :data:`BROADCAST_ROWS` rows.
* Base and delta: the base files' rows (retracts dropped) whose primary key is in no delta file
  (left-anti join on the primary-key columns with the keys of every delta row, retracts
  included); the engine reads the delta's merge. Joined over all base/delta units of the read
  at once: a primary key lives in one bucket of one partition, so a delta key only ever meets
  the base of its own bucket.

Invariant: each frame holds exactly the rows the engine reads of those files, as ``schema``
(columns by name, every column nullable as Spark's file reader makes them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..scan import NativeFile, NativeRead
from .mapped import arrow_frame

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["native_frames", "tagged_groups", "BROADCAST_ROWS", "VALUE_KIND"]

VALUE_KIND = "_VALUE_KIND"
"""The system column of primary-key data files holding each row's kind (0 +I, 1 -U, 2 +U, 3 -D)."""

BROADCAST_ROWS = 4_000_000
"""Deleted positions or delta keys up to this many rows are broadcast to the join; more are
joined by a shuffle (a driver-built broadcast of that size risks the driver's memory)."""

_DELETED_KEY = "_tidelake_deleted_key"
_ROW_INDEX = "_tidelake_row_index"
_FILE_NAME = "_tidelake_file_name"


def native_frames(spark: SparkSession, root: str, native: NativeRead, schema: StructType, options: dict[str, str],
                  primary_keys: StructType) -> list[DataFrame]:
    """DataFrames of the natively read rows of ``native`` (files under directory ``root``) as
    ``schema``, read with the Parquet ``options``; ``primary_keys``: the table's primary-key
    fields (for base/delta units). Empty when ``native`` names no file."""
    from pyspark.sql import functions as F

    def uris(files: list[NativeFile]) -> list[str]:
        return [f"file:{root}/{f.path}" for f in files]

    def read(files: list[NativeFile], extra: StructType | None = None, *, positions: bool = False) -> DataFrame:
        """The rows of ``files`` as ``schema`` (plus ``extra`` fields), retracts dropped, with
        each row's file name and row index when ``positions``."""
        from pyspark.sql.types import ByteType, StructField, StructType

        fields = list(schema.fields) + [f for f in (extra.fields if extra else []) if f.name not in schema.names]
        retracts = any(f.drop_retracts for f in files)
        if retracts:
            fields.append(StructField(VALUE_KIND, ByteType()))
        frame = spark.read.schema(StructType(fields)).options(**options).parquet(*uris(files))
        if positions:  # taken from the file scan itself, before any other operator
            meta = frame.metadataColumn("_metadata") if hasattr(frame, "metadataColumn") else F.col("_metadata")
            frame = frame.select("*", meta.getField("file_name").alias(_FILE_NAME),
                                 meta.getField("row_index").alias(_ROW_INDEX))
        return frame.where(F.col(VALUE_KIND).isin(0, 2)).drop(VALUE_KIND) if retracts else frame

    def maybe_broadcast(frame: DataFrame, rows: int) -> DataFrame:
        return F.broadcast(frame) if rows <= BROADCAST_ROWS else frame

    frames = []
    plain = [f for f in native.files if not f.has_deletion_vector]
    if plain:
        frames.append(read(plain))
    with_dv = [f for f in native.files if f.has_deletion_vector]
    for group in tagged_groups(with_dv, _file_tags(spark, with_dv)):
        deleted = native.deleted_positions(group)
        rows = read(group, positions=True)
        if deleted.num_rows:
            single = len(group) == 1
            keys = arrow_frame(spark, deleted).select(_row_key(F.col("file_name"), F.col("position"), single=single)
                                                      .alias(_DELETED_KEY))
            rows = rows.join(maybe_broadcast(keys, deleted.num_rows),
                             _row_key(F.col(_FILE_NAME), F.col(_ROW_INDEX), single=single) == F.col(_DELETED_KEY),
                             "left_anti")
        frames.append(rows.drop(_FILE_NAME, _ROW_INDEX))
    if native.base:
        keys = spark.read.schema(primary_keys).options(**options).parquet(*uris(native.delta))
        base = read(native.base, primary_keys).join(maybe_broadcast(keys, sum(f.row_count for f in native.delta)),
                                                      primary_keys.names, "left_anti")
        frames.append(base.select(*schema.names))
    return frames


def _row_key(file_name: Column, position: Column, *, single: bool) -> Column:
    """The 64-bit join key of a row (see the module docs); ``single``: its file is read alone."""
    from pyspark.sql import functions as F

    if single:
        return position
    return F.shiftleft(F.xxhash64(file_name).bitwiseAND(0x7FFFFFFF), 32).bitwiseOR(position)


def _file_tags(spark: SparkSession, files: list[NativeFile]) -> list[int]:
    """Spark's hash tag of each file name (the high half of :func:`_row_key`), computed by the
    driver over a local relation (no Spark job)."""
    if not files:
        return []
    import pyarrow as pa
    from pyspark.sql import functions as F

    names = arrow_frame(spark, pa.table({"name": [f.file_name for f in files]}))
    return [r[0] for r in names.select(F.xxhash64("name").bitwiseAND(0x7FFFFFFF)).collect()]


def tagged_groups(files: list[NativeFile], tags: list[int]) -> list[list[NativeFile]]:
    """``files`` (with their hash ``tags``) in groups read by one scan each: no two files of a
    group share a tag, and a file of 2^32 rows or more is a group of its own (its row index
    does not fit the key's low half)."""
    groups: list[tuple[set[int], list[NativeFile]]] = []
    alone: list[list[NativeFile]] = []
    for file, tag in zip(files, tags):
        if file.row_count >= 1 << 32:
            alone.append([file])
            continue
        for seen, members in groups:
            if tag not in seen:
                seen.add(tag)
                members.append(file)
                break
        else:
            groups.append(({tag}, [file]))
    return [members for _, members in groups] + alone
