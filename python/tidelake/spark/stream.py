"""Structured Streaming for the ``tidelake`` source: a micro-batch reader and an exactly-once sink.

Reader. An offset is ``{"snapshot": N}``: every change up to snapshot N was delivered.
:data:`FULL_PENDING` (-1) means the full state of the first snapshot seen is still to come
(``latest-full``, the default start). A micro-batch (s, e] reads the changes snapshots s+1..e
committed (``Table.changes``), or with ``s == FULL_PENDING`` the full state of snapshot e.
Start modes (option ``scan.mode``): ``latest-full``, ``latest`` (changes after the latest
snapshot), ``from-snapshot`` (changes from ``snapshot-id`` on) and ``from-timestamp`` (changes
from the first snapshot committed at or after ``timestamp-ms``). ``maxSnapshotsPerTrigger`` /
``maxRowsPerTrigger`` bound a micro-batch (at least one snapshot each); ``Trigger.AvailableNow``
stops at the latest snapshot seen when the query started. Without ``row-kind=true`` only
inserts and update-afters are emitted; with it every change comes with ``_row_kind``. A
``consumer-id`` stores progress in the table when Spark commits a batch to the source (which
it does as it starts the next batch, so the last batch of a run is recorded by the next run):
expiry keeps unread snapshots (Paimon consumers) and a query with a new checkpoint resumes
from it, possibly re-reading that last batch.

Sink (append and complete output modes). Files are written per task as for batch writes; the
driver commits them as (``spark-stream-<checkpoint digest>``, batchId). A replayed batch (Spark
re-runs the last batch after a crash between our commit and its commit log) finds its pair
committed, deletes the files the replay wrote and returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from ..exceptions import InvalidArgumentError
from ..table import Table
from . import io
from .source import SplitPartition, TaskMessages, all_payloads, read_partition, task_id, task_payloads

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["StreamReader", "StreamWriter", "FULL_PENDING"]

FULL_PENDING = -1
"""Offset of a ``latest-full`` query that has not yet delivered its first snapshot."""

START_MODES = ("latest-full", "latest", "from-snapshot", "from-timestamp")


def _latest_id(table: Table) -> int:
    latest = table.latest_snapshot()
    return latest.id if latest is not None else 0


def _required(options: dict[str, str], key: str, mode: str) -> int:
    value = io.int_option(options, key)
    if value is None:
        raise InvalidArgumentError(f"scan.mode {mode} needs option {key}")
    return value


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader; see the module docs."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.location = io.location(options)
        self.schema = schema
        self.mode = options.get("scan.mode", "latest-full")
        if self.mode not in START_MODES:
            raise InvalidArgumentError(f"scan.mode must be one of {', '.join(START_MODES)}, got {self.mode!r}")
        self.max_snapshots = io.int_option(options, "maxsnapshotspertrigger")
        self.max_rows = io.int_option(options, "maxrowspertrigger")
        for key, value in (("maxSnapshotsPerTrigger", self.max_snapshots), ("maxRowsPerTrigger", self.max_rows)):
            if value is not None and value <= 0:
                raise InvalidArgumentError(f"option {key} must be positive, got {value}")
        self.consumer_id = options.get("consumer-id")
        self.cap: int | None = None

    def _table(self) -> Table:
        return self.location.open()

    def initialOffset(self) -> dict[str, int]:
        table = self._table()
        if self.consumer_id and self.consumer_id in table.consumers():
            return {"snapshot": table.consumers()[self.consumer_id] - 1}
        latest = _latest_id(table)
        if self.mode == "latest-full":
            return {"snapshot": FULL_PENDING}
        if self.mode == "latest":
            return {"snapshot": latest}
        if self.mode == "from-snapshot":
            return {"snapshot": _required(self.options, "snapshot-id", self.mode) - 1}
        since = _required(self.options, "timestamp-ms", self.mode)
        later = [s.id for s in table.snapshots() if s.time_millis >= since]
        return {"snapshot": (min(later) - 1) if later else latest}

    def prepareForTriggerAvailableNow(self) -> None:
        self.cap = _latest_id(self._table())

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_snapshots is not None:
            return ReadMaxFiles(self.max_snapshots)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        table = self._table()
        latest = _latest_id(table)
        if self.cap is not None:
            latest = min(latest, self.cap)
        begin = start["snapshot"]
        if begin == FULL_PENDING:
            return {"snapshot": latest} if latest > 0 else start
        if latest <= begin:
            return start
        end = latest
        if isinstance(limit, ReadMaxFiles):
            end = min(end, begin + max(1, limit.max_files))
        elif isinstance(limit, ReadMaxRows):
            end = begin + 1
            rows = table.snapshot(end).delta_record_count or 0
            while end < latest:
                more = table.snapshot(end + 1).delta_record_count or 0
                if rows + more > limit.max_rows:
                    break
                rows += more
                end += 1
        return {"snapshot": end}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        table = self._table()
        columns = io.projection(table, self.schema)
        begin, stop = start["snapshot"], end["snapshot"]
        if begin == FULL_PENDING:
            return [SplitPartition([s]) for s in table.scan(columns=columns, snapshot_id=stop).splits()]
        scan = table.changes_scan(begin, stop, columns=columns)
        return [SplitPartition([s], changes=True) for s in scan.splits()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.schema)

    def commit(self, end: dict[str, int]) -> None:
        if self.consumer_id and end["snapshot"] > 0:
            self._table().reset_consumer(self.consumer_id, end["snapshot"] + 1)


class StreamWriter(DataSourceStreamArrowWriter):
    """Exactly-once sink; see the module docs. ``commit`` runs on a fresh instance, so only
    what derives from the options (the commit user) is used there."""

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        self.location = io.location(options)
        self.overwrite = overwrite
        self.commit_user = io.stream_user(options.get("checkpointlocation"))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        return TaskMessages(task_id(), io.write_task(self.location, self.commit_user, self.overwrite, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        table = self.location.open()
        tasks = task_payloads(messages)
        if io.is_committed(table, self.commit_user, batchId):
            io.discard(table, all_payloads(tasks), self.commit_user)  # a replay of a batch that already landed
            return
        io.check_dynamic_bucket_writers(table, tasks)
        io.commit(table, all_payloads(tasks), self.commit_user, batchId, self.overwrite)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        io.discard_unless_committed(self.location, all_payloads(task_payloads(messages)), self.commit_user, batchId)

