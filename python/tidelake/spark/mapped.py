"""Reads of planned splits through ``DataFrame.mapInArrow``: the read path that needs no Python
Data Source (PySpark 3.3-3.5, where :func:`tidelake.spark.read` and the queries of
:func:`tidelake.spark.sql` use it; on PySpark 4.x the ``tidelake`` data source reads instead).

The driver plans the snapshot and ships the splits packed into tasks by size
(:func:`tidelake.spark.plain.engine_tasks`), one row of pickled bytes and one Spark task per
packed task; each task reads its splits with the engine (:func:`tidelake.spark.io.rows_of_split`),
so rows and values are the data source's. Invariant: the DataFrame is pinned to the splits
planned when it was built (a later commit is not seen, like a ``snapshot-id`` read); if a file
of them is expired before a query runs, the task fails on it.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from ..scan import Split
from . import io

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["has_data_source", "read_splits", "arrow_frame"]

SPLIT_COLUMN = "split"


def has_data_source() -> bool:
    """Whether the installed PySpark has the Python Data Source API (4.0+)."""
    try:
        import pyspark.sql.datasource  # noqa: F401
    except ImportError:
        return False
    return True


class _SplitReader:
    """``mapInArrow`` function: the rows of the pickled splits of its input, as ``target``."""

    def __init__(self, target: pa.Schema) -> None:
        self.target = target

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for blob in batch.column(SPLIT_COLUMN).to_pylist():
                splits: list[Split] = pickle.loads(blob)
                for split in splits:
                    yield from io.rows_of_split(split, self.target, False)


def read_splits(spark: SparkSession, tasks: Sequence[Sequence[Split]], schema: StructType) -> DataFrame:
    """A DataFrame of the rows of the splits of ``tasks`` as Spark ``schema`` (its columns, by
    name): one Spark task per element of ``tasks``."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    if not tasks:
        return spark.createDataFrame([], schema)
    rows = [(pickle.dumps(list(task)),) for task in tasks]
    seeds = spark.sparkContext.parallelize(rows, len(rows))
    frame = spark.createDataFrame(seeds, StructType([StructField(SPLIT_COLUMN, BinaryType(), False)]))
    return frame.mapInArrow(_SplitReader(io.arrow_schema(schema)), schema)


@dataclass(frozen=True)
class _Rows:
    """``mapInArrow`` function of one task: yields ``data`` (as ``target``), ignoring its input."""

    data: pa.Table
    target: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        for batch in self.data.to_batches():
            yield io.conform(batch, self.target)


def arrow_frame(spark: SparkSession, data: pa.Table) -> DataFrame:
    """A DataFrame of the rows of ``data``, values exactly as given: ``createDataFrame`` of a
    pyarrow Table on PySpark 4.0+; on 3.x (which would go through pandas, turning integer
    columns with nulls into floats) one ``mapInArrow`` task yielding it."""
    import pyspark
    from pyspark.sql.pandas.types import from_arrow_schema

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(data)
    schema = from_arrow_schema(data.schema, prefer_timestamp_ntz=True)
    return spark.range(1, numPartitions=1).mapInArrow(_Rows(data, io.arrow_schema(schema)), schema)
