"""Structured Streaming for the ``tidelake`` source: a micro-batch reader and an exactly-once sink.

Reader. An offset is ``{"snapshot": N}``: every change up to snapshot N was delivered; or,
inside a snapshot, ``{"snapshot": N, "index": i}`` (splits 0..i of the changes of snapshot N
delivered, N - 1 complete) or ``{"snapshot": N, "full": true, "index": i}`` (splits 0..i of the
full state of snapshot N delivered). :data:`FULL_PENDING` (-1) means the full state of the
start snapshot is still to come: the start modes that read one (``latest-full``, the default,
``compacted-full``, ``from-snapshot-full``, the creation-time modes) pick it at the first batch,
as Java picks it at the first plan. The first batch of such a stream holds that full state only. A unit (a full state,
or the changes one snapshot committed, ``Table.changes``) is read as its splits, in the
engine's (partition, bucket) order. Start modes (``scan.mode`` and its options):
:mod:`tidelake.startup`.

Read limits, as paimon-spark's: ``read.stream.maxFilesPerTrigger`` (splits, Paimon's "files"),
``read.stream.maxBytesPerTrigger`` (data file bytes) and ``read.stream.maxRowsPerTrigger`` (data
file rows; ``maxRowsPerTrigger`` is tidelake's older name for it) together: a micro-batch admits
splits while everything admitted before is under every limit, so its first split always comes
and rows/bytes may exceed the limit by the last split. ``maxSnapshotsPerTrigger`` (tidelake's)
bounds the snapshots of a batch. ``read.stream.minRowsPerTrigger`` with
``read.stream.maxTriggerDelayMs`` holds a batch back while it has fewer rows and the previous
batch came less than the delay ago (not under ``Trigger.AvailableNow``, which would end the
query on it instead of waiting). Spark hands a Python source a single limit, so the reader keeps
its own and applies them to every call but one asking for everything (``Trigger.Once``).
``Trigger.AvailableNow`` stops at the latest snapshot seen when the query started, limits
applied. Without ``row-kind=true`` only inserts and update-afters are emitted; with it every
change comes with ``_row_kind``. A ``consumer-id`` (unless ``consumer.ignore-progress``) starts
from its next snapshot and stores progress in the table when Spark commits a batch to the source
(which it does as it starts the next batch, so the last batch of a run is recorded by the next
run): expiry keeps unread snapshots (Paimon consumers) and a query with a new checkpoint resumes
from it, possibly re-reading that last batch.

Sink (append and complete output modes). Files are written per task as for batch writes; the
driver commits them as (``spark-stream-<checkpoint digest>``, batchId). A replayed batch (Spark
re-runs the last batch after a crash between our commit and its commit log) finds its pair
committed, deletes the files the replay wrote and returns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from ..exceptions import InvalidArgumentError, UnsupportedError
from ..scan import Split
from ..startup import ScanMode, scan_mode
from ..table import Table
from . import io
from .source import SplitPartition, TaskMessages, all_payloads, read_partition, task_id, task_payloads

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["StreamReader", "StreamWriter", "FULL_PENDING", "LIMIT_OPTIONS"]

FULL_PENDING = -1
"""Offset of a stream whose start snapshot's full state is still to come."""

LIMIT_OPTIONS = {"read.stream.maxfilespertrigger": "files", "read.stream.maxbytespertrigger": "bytes",
                 "read.stream.maxrowspertrigger": "rows", "maxrowspertrigger": "rows",
                 "maxsnapshotspertrigger": "snapshots"}
"""Read-limit options (as Spark hands them over, lower-cased) and what each bounds."""

Offset = dict[str, int]


def _latest_id(table: Table) -> int:
    latest = table.latest_snapshot()
    return latest.id if latest is not None else 0


def _split_bytes(split: Split) -> int:
    return sum(f.get("file_size", 0) for f in json.loads(split.payload).get("files", ()))


_UNSUPPORTED_STREAM_OPTIONS = {
    "streaming-read-overwrite": "the changes of OVERWRITE snapshots",
    "streaming-read-append-overwrite": "the changes of an append table's OVERWRITE snapshots",
    "scan.bounded.watermark": "streams that end at a watermark",
}
"""Stream read options Java honours and this reader does not (any value but ``false``)."""


def _check_stream_options(start: ScanMode) -> None:
    """Refuse (UnsupportedError) the read or table options that would make this stream read
    other rows than Java's: :data:`_UNSUPPORTED_STREAM_OPTIONS` and ``streaming-read-mode = log``
    (a log system, Kafka)."""
    for key, what in _UNSUPPORTED_STREAM_OPTIONS.items():
        value = start.get(key)
        if value is not None and value.strip().lower() != "false":
            raise UnsupportedError(f"option {key} = {value!r}: streams do not read {what}")
    read_mode = start.get("streaming-read-mode")
    if read_mode is not None and read_mode.strip().lower() != "file":
        raise UnsupportedError(f"option streaming-read-mode = {read_mode!r}: streams read the table's files "
                               "only (file)")


@dataclass
class Guard:
    """A micro-batch's read limits (paimon-spark's ``PaimonReadLimitGuard``): a split is admitted
    while what was admitted before it is under every limit."""

    limits: dict[str, int]
    taken: dict[str, int] = field(default_factory=lambda: {"files": 0, "bytes": 0, "rows": 0, "snapshots": 0})

    def enter_snapshot(self) -> bool:
        """Whether the batch may read one more snapshot (``maxSnapshotsPerTrigger``)."""
        if self.taken["snapshots"] >= self.limits.get("snapshots", 1 << 62):
            return False
        self.taken["snapshots"] += 1
        return True

    def admit(self, split: Split) -> bool:
        room = all(self.taken[k] < v for k, v in self.limits.items() if k != "snapshots")
        self.taken["files"] += 1
        self.taken["rows"] += split.row_count
        if "bytes" in self.limits:
            self.taken["bytes"] += _split_bytes(split)
        return room


def _position(snapshot: int, full: bool, index: int, count: int) -> Offset:
    if index >= count - 1:
        return {"snapshot": snapshot}
    return {"snapshot": snapshot, "index": index, **({"full": True} if full else {})}


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader; see the module docs."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.location = io.location(options)
        self.schema = schema
        self.start = scan_mode(options, self._table().options)
        _check_stream_options(self.start)
        self.limits: dict[str, int] = {}
        for key, kind in LIMIT_OPTIONS.items():
            value = io.int_option(options, key)
            if value is None:
                continue
            if value <= 0:
                raise InvalidArgumentError(f"option {key} must be positive, got {value}")
            self.limits[kind] = min(value, self.limits.get(kind, value))
        min_rows = io.int_option(options, "read.stream.minrowspertrigger")
        delay = io.int_option(options, "read.stream.maxtriggerdelayms")
        if (min_rows is None) != (delay is None):
            raise InvalidArgumentError("give both read.stream.minRowsPerTrigger and read.stream.maxTriggerDelayMs, "
                                       "or neither")
        self.min_rows = None if min_rows is None or delay is None else (min_rows, delay)
        self.last_trigger_ms = 0
        self.consumer_id = options.get("consumer-id")
        self.ignore_progress = io.flag(options, "consumer.ignore-progress")
        self.cap: int | None = None

    def _table(self) -> Table:
        return self.location.open()

    def initialOffset(self) -> Offset:
        table = self._table()
        if self.consumer_id and not self.ignore_progress and self.consumer_id in table.consumers():
            return {"snapshot": table.consumers()[self.consumer_id] - 1}
        begin = self.start.stream_start(table)  # checks the options now rather than at the first batch
        if begin is None or begin.full:  # the full state is picked when the first batch is planned
            return {"snapshot": FULL_PENDING}
        return {"snapshot": begin.snapshot}

    def prepareForTriggerAvailableNow(self) -> None:
        self.cap = _latest_id(self._table())

    def getDefaultReadLimit(self) -> ReadLimit:
        # Spark passes one limit to a Python source; the reader applies all of self.limits.
        if "files" in self.limits:
            return ReadMaxFiles(self.limits["files"])
        if "rows" in self.limits:
            return ReadMaxRows(self.limits["rows"])
        if "bytes" in self.limits:
            return ReadMaxBytes(self.limits["bytes"])
        if "snapshots" in self.limits:
            return ReadMaxFiles(self.limits["snapshots"])
        if self.min_rows is not None:
            return ReadMinRows(self.min_rows[0])
        return ReadAllAvailable()

    def _resolve(self, table: Table, start: Offset) -> Offset | None:
        """``start`` with a pending full start resolved (None: no snapshot to start from yet)."""
        if start["snapshot"] != FULL_PENDING:
            return start
        begin = self.start.stream_start(table)
        return None if begin is None else {"snapshot": begin.snapshot, "full": True, "index": -1}

    @staticmethod
    def _units(start: Offset, latest: int) -> Iterator[tuple[int, bool, int]]:
        """The units after ``start`` up to snapshot ``latest``: (snapshot, full, last index
        already delivered). A full state is a batch's last unit."""
        if "index" in start:
            yield start["snapshot"], bool(start.get("full")), start["index"]
            if start.get("full"):
                return
        for snapshot in range(start["snapshot"] + 1, latest + 1):
            yield snapshot, False, -1

    def _splits(self, table: Table, snapshot: int, full: bool) -> list[Split]:
        columns = io.projection(table, self.schema)
        if full:
            return table.scan(columns=columns, snapshot_id=snapshot, options=self.start.read_options(table)).splits()
        return table.changes_scan(snapshot - 1, snapshot, columns=columns).splits()

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        table = self._table()
        latest = _latest_id(table)
        if self.cap is not None:
            latest = min(latest, self.cap)
        begin = self._resolve(table, start)
        if begin is None:
            return start
        limits = {} if isinstance(limit, ReadAllAvailable) else self.limits
        wait = self.min_rows if self.cap is None and not isinstance(limit, ReadAllAvailable) else None
        if not limits and wait is None:
            if begin.get("full"):
                return {"snapshot": begin["snapshot"]}
            if latest > begin["snapshot"] or "index" in begin:  # (the rest of) a snapshot split by a limit
                return {"snapshot": max(latest, begin["snapshot"])}
            return start
        guard = Guard(limits)
        end = self._admitted(table, start, begin, latest, guard)
        now = int(time.time() * 1000)
        if wait is not None and guard.taken["rows"] < wait[0] and now - self.last_trigger_ms <= wait[1]:
            return start  # too few rows, and the last batch is recent: wait (read.stream.minRowsPerTrigger)
        if end != start:
            self.last_trigger_ms = now
        return end

    def _admitted(self, table: Table, start: Offset, begin: Offset, latest: int, guard: Guard) -> Offset:
        """The offset after the splits ``guard`` admits from ``begin`` (``start`` resolved)."""
        end = start
        for snapshot, full, done in self._units(begin, max(latest, begin["snapshot"])):
            if not guard.enter_snapshot():
                break
            splits = self._splits(table, snapshot, full)
            if done + 1 >= len(splits):
                end = {"snapshot": snapshot}
                continue
            for index in range(done + 1, len(splits)):
                if not guard.admit(splits[index]):
                    return end
                end = _position(snapshot, full, index, len(splits))
        return end

    def partitions(self, start: Offset, end: Offset) -> list[InputPartition]:
        table = self._table()
        if start["snapshot"] == FULL_PENDING:  # the batch reads (part of) the full state of end's snapshot
            start = {"snapshot": end["snapshot"], "full": True, "index": -1}
        out: list[InputPartition] = []
        for snapshot, full, done in self._units(start, end["snapshot"]):
            splits = self._splits(table, snapshot, full)
            last = end["index"] if snapshot == end["snapshot"] and "index" in end else len(splits) - 1
            out.extend(SplitPartition([s], changes=not full) for s in splits[done + 1:last + 1])
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition, self.schema)

    def commit(self, end: Offset) -> None:
        if not self.consumer_id or end["snapshot"] <= 0 or end.get("full"):
            return  # nothing delivered yet, or a full state not all delivered
        done = end["snapshot"] - (1 if "index" in end else 0)  # inside a snapshot: its changes are not all read
        self._table().reset_consumer(self.consumer_id, done + 1)


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

