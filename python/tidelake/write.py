"""Writing: :class:`TableWriter` (files + commit messages, usable in any process) and
:class:`CommitMessage` (picklable), the two phases distributed engines need."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .exceptions import CommitConflictError, InvalidArgumentError, SnapshotExpiredError, UnsupportedError

if TYPE_CHECKING:
    from . import _internal
    from .table import Table

__all__ = ["CommitMessage", "Progress", "TableWriter", "WriteResult", "arrow_input"]

Progress = Callable[[int, "int | None"], object]
"""A progress callback: ``progress(done, total)``. Writes call it with the rows taken so far and
the input's row count (None for a stream of unknown length) after each input batch, on the
caller's thread: an exception it raises (KeyboardInterrupt included) stops the write, which then
commits nothing. Reads call it with the planned rows of the splits read so far and of all splits
(counted before merging, so ``done`` ends at ``total``), from a reader thread: its exceptions
are reported through :func:`sys.unraisablehook` and do not stop the read."""


def arrow_input(data: Any) -> Any:
    """Anything tidelake accepts as rows, as an Arrow producer (C stream or C array).

    Accepted: objects exposing ``__arrow_c_stream__``/``__arrow_c_array__`` (pyarrow Table,
    RecordBatch, RecordBatchReader, polars DataFrame...), pandas DataFrames, a list of dicts
    (rows) or a dict of lists (columns).
    """
    import pyarrow as pa

    # before the Arrow protocols: pandas >= 2.2 exports its index through them as a column
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return data
    if isinstance(data, list):
        return pa.Table.from_pylist(data)
    if isinstance(data, dict):
        return pa.table(data)
    raise InvalidArgumentError(f"cannot write a {type(data).__name__}: give a pyarrow/polars/pandas table or batches")


def _row_count(data: Any) -> int | None:
    """The rows of an Arrow input whose length is known (tables, batches, polars frames)."""
    for attr in ("num_rows", "height"):
        n = getattr(data, attr, None)
        if isinstance(n, int):
            return n
    return None


T = TypeVar("T")

Committed = list[dict[str, int]]
"""What one commit created, as the binding's commit methods return it: one dict per snapshot, in
order, with its ``snapshot_id`` and the metrics the commit counted from the data-file entries it
wrote to the snapshot's delta (``files_added``, ``files_removed``, ``rows_added``,
``rows_removed``, ``bytes_added``, ``bytes_removed``); empty when nothing was committed."""


def snapshot_ids(committed: Committed) -> list[int]:
    """The ids of the snapshots a commit created, in order."""
    return [s["snapshot_id"] for s in committed]


def replayed(attempt: Callable[[], T], table: _internal.RawTable, *, replayable: bool = True) -> T:
    """The one replay policy of operations that write and commit in one call (the engine's
    ``ReplayPolicy``): ``attempt()``, run again from the newest state after a back-off when it
    fails with ``CommitConflictError`` or ``SnapshotExpiredError`` (nothing landed), until the
    table's replays or ``commit.timeout`` are spent. Each attempt cleans up after itself when
    it fails; ``replayable=False`` (input that cannot be read twice) runs it once."""
    started = time.monotonic()
    replay = 0
    while True:
        try:
            return attempt()
        except (CommitConflictError, SnapshotExpiredError):
            elapsed_ms = int((time.monotonic() - started) * 1000)
            wait = table.replay_wait(replay, elapsed_ms) if replayable else None
            if wait is None:
                raise
            time.sleep(wait)
            replay += 1


def replayable(data: Any) -> bool:
    """True when ``data`` can be read again (a table or frame, not a one-shot stream)."""
    import pyarrow as pa

    if isinstance(data, (pa.Table, pa.RecordBatch, list, dict)):
        return True
    return type(data).__module__.split(".")[0] in ("pandas", "polars") and hasattr(data, "columns")


_KINDS = {"write": "insert", "upsert": "upsert", "delete": "delete"}
"""TableWriter methods and the engine's write kinds."""


@dataclass(frozen=True)
class CommitMessage:
    """The files one writer produced for one (partition, bucket); commit with
    :meth:`tidelake.Table.commit`. Picklable."""

    payload: bytes
    commit_user: str


class TableWriter:
    """Writes rows into files of one table; nothing is visible until the messages returned by
    :meth:`prepare_commit` are committed (:meth:`tidelake.Table.commit`).

    Use as a context manager: leaving the block with an exception aborts (deletes the files
    written since the last ``prepare_commit``).
    """

    def __init__(self, table: Table, commit_user: str | None = None, *, overwrite: bool = False,
                 wait_compaction: bool = True) -> None:
        if not overwrite and table._raw.upsert_merge is not None:
            keys = table._raw.upsert_merge[0]
            raise UnsupportedError(f"table {table.path} has 'upsert-key' {keys}: its appends are merges on those "
                                   "keys (Table.write, tidelake.spark.write, INSERT INTO); a writer that appends "
                                   "would add rows of keys the table holds")
        self._table = table
        self.commit_user = commit_user or str(uuid.uuid4())
        # Overwrite writers restore nothing (sequence numbers, bucket index) from the table.
        # One-shot writers wait for their compactions at prepare_commit; long-lived ones
        # (Table.writer) let an unfinished compaction join a later prepare_commit.
        self._raw = table._raw.writer(overwrite, wait_compaction)

    def write(self, data: Any, progress: Progress | None = None) -> None:
        """Insert rows (on primary-key tables: upsert by key; on tables with ``rowkind.field``
        each row's kind comes from that column). ``progress``: see :data:`Progress`."""
        self._write(data, "insert", progress)

    def upsert(self, data: Any, progress: Progress | None = None) -> None:
        """Insert or replace rows by primary key (merged with the table's merge engine)."""
        if not self._table.primary_keys:
            raise UnsupportedError("upsert needs a primary key; this is an append table (use write)")
        self._write(data, "upsert", progress)

    def delete(self, data: Any, progress: Progress | None = None) -> None:
        """Delete rows by primary key; ``data`` needs at least the key columns."""
        self._write(data, "delete", progress)

    def _write(self, data: Any, kind: str, progress: Progress | None) -> None:
        import pyarrow as pa

        data = arrow_input(data)
        if isinstance(data, pa.RecordBatchReader):
            # Pulled here, not through the C stream: what its producer raises (a generator's
            # error, Ctrl-C) reaches the caller as raised.
            done = 0
            for batch in data:
                self._raw.write(batch, kind)
                done += batch.num_rows
                if progress is not None:
                    progress(done, None)
            return
        if progress is None:
            self._raw.write(data, kind)
            return
        total = _row_count(data)
        self._raw.write(data, kind, lambda rows: progress(rows, total))

    def buckets(self, data: Any, kind: str = "write") -> Any:
        """The bucket (a ``pyarrow.Int32Array``) each row of ``data`` goes to when written with
        method ``kind`` (``write``, ``upsert`` or ``delete``) on a fixed-bucket table, without
        writing: distributed jobs route each (partition, bucket) to one task with it."""
        if kind not in _KINDS:
            raise InvalidArgumentError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        return self._raw.buckets(arrow_input(data), _KINDS[kind])

    def _commit_written(self) -> Committed:
        """Flush and commit everything written as one transaction of this writer's user (a
        one-shot write); a commit that fails without landing deletes its files first."""
        return self._raw.commit(self._table._raw, self.commit_user)

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything written so far and return the messages to commit."""
        return [CommitMessage(p, self.commit_user) for p in self._raw.prepare_commit()]

    def abort(self) -> None:
        """Delete the files written since the last ``prepare_commit`` and close."""
        self._raw.abort()

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()


def commit_user_of(messages: list[CommitMessage], commit_user: str | None) -> str:
    users = {m.commit_user for m in messages}
    if commit_user is not None:
        return commit_user
    if len(users) > 1:
        raise InvalidArgumentError(f"messages come from several commit users {sorted(users)}; pass commit_user")
    return users.pop() if users else str(uuid.uuid4())


def check_messages(messages: Any) -> list[CommitMessage]:
    """``messages`` as a list of :class:`CommitMessage` (the engine refuses duplicates)."""
    out = list(messages)
    for m in out:
        if not isinstance(m, CommitMessage):
            raise InvalidArgumentError(f"expected CommitMessage objects, got {type(m).__name__}")
    return out


BATCH_COMMIT_IDENTIFIER = 2**63 - 1
"""Identifier of one-off (batch) commits, as in Paimon."""


def raw_messages(messages: list[CommitMessage]) -> list[bytes]:
    return [m.payload for m in messages]




_METRICS = ("rows_inserted", "rows_updated", "rows_deleted", "files_added", "files_removed", "records_added",
            "records_removed", "bytes_added", "bytes_removed", "duration_s")


class WriteResult(int):
    """What a write, delete, update, merge, overwrite or truncate committed.

    It is the id of the last snapshot committed (an ``int``: compare it, format it, pass it as
    ``snapshot_id=``), or 0, which is falsy, when nothing was committed; :attr:`snapshot_id` says
    the same with None for nothing. The metrics are attributes:

    * ``snapshot_ids``: every snapshot committed, in order (a write can add a COMPACT);
    * ``rows_inserted``, ``rows_updated``, ``rows_deleted``: table rows, None where unknown (an
      upsert does not know whether its keys existed);
    * ``files_added``, ``files_removed``, ``bytes_added``, ``bytes_removed``, ``records_added``,
      ``records_removed``: exact, counted by the commit from the entries it wrote to the
      snapshots' delta manifests (compactions a writer ran count too). On primary-key tables
      records are key-value records: an upsert adds a record without removing the one it
      replaces until compaction;
    * ``duration_s``: wall-clock seconds of the whole call (reading, writing, committing).
    """

    snapshot_ids: tuple[int, ...]
    rows_inserted: int | None
    rows_updated: int | None
    rows_deleted: int | None
    files_added: int
    files_removed: int
    records_added: int
    records_removed: int
    bytes_added: int
    bytes_removed: int
    duration_s: float

    def __new__(cls, snapshot_ids: tuple[int, ...] | list[int], rows_inserted: int | None = None,
                rows_updated: int | None = None, rows_deleted: int | None = None, files_added: int = 0,
                files_removed: int = 0, records_added: int = 0, records_removed: int = 0, bytes_added: int = 0,
                bytes_removed: int = 0, duration_s: float = 0.0) -> WriteResult:
        ids = tuple(int(i) for i in snapshot_ids)
        self = super().__new__(cls, ids[-1] if ids else 0)
        values = (rows_inserted, rows_updated, rows_deleted, files_added, files_removed, records_added,
                  records_removed, bytes_added, bytes_removed, duration_s)
        self.__dict__.update(snapshot_ids=ids, **dict(zip(_METRICS, values)))
        return self

    @property
    def snapshot_id(self) -> int | None:
        """The last snapshot committed, None when nothing was."""
        return self.snapshot_ids[-1] if self.snapshot_ids else None

    def metrics(self) -> dict[str, Any]:
        """Every attribute as a dict (``snapshot_ids`` and the metrics)."""
        return {"snapshot_ids": self.snapshot_ids, **{k: getattr(self, k) for k in _METRICS}}

    def __str__(self) -> str:  # the id, as the snapshot ids callers format (repr: the metrics)
        return int.__repr__(self)

    def __repr__(self) -> str:
        return "WriteResult(" + ", ".join(f"{k}={v!r}" for k, v in self.metrics().items()) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (WriteResult, (self.snapshot_ids, *(getattr(self, k) for k in _METRICS)))


def write_result(committed: Committed, started: float, *, inserted: int | None = None,
                 updated: int | None = None, deleted: int | None = None) -> WriteResult:
    """The :class:`WriteResult` of what a call started at ``started`` (``time.monotonic()``)
    committed, its metrics summed over the snapshots."""
    def total(key: str) -> int:
        return sum(s[key] for s in committed)

    return WriteResult(snapshot_ids(committed), inserted, updated, deleted, total("files_added"),
                       total("files_removed"), total("rows_added"), total("rows_removed"), total("bytes_added"),
                       total("bytes_removed"), time.monotonic() - started)
