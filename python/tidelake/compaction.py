"""Compaction as plan -> task -> commit: :meth:`tidelake.Table.compaction_plan` picks the work on
one snapshot, each :class:`CompactionTask` (plain bytes) runs in any process with
:func:`run_compaction_task`, and :meth:`CompactionPlan.commit` commits their results once.
``Table.compact()`` is the same three steps in one process; :func:`tidelake.spark.compact` runs
the tasks on Spark executors.

Exactly-once: a plan accepts exactly one result per task (a second result of a retried task
is refused) and committing the same results again after an unknown outcome finds them landed,
so no row is ever committed twice. Results of discarded task attempts are never committed;
their files are orphans (``remove_orphan_files`` deletes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import _internal

if TYPE_CHECKING:
    from .table import Table

__all__ = ["CompactionPlan", "CompactionTask", "run_compaction_task"]


@dataclass(frozen=True)
class CompactionTask:
    """The compaction of one (partition, bucket): everything a worker needs (table location and
    branch, schema id, input files, output level), as versioned bytes."""

    data: bytes
    location: str
    branch: str
    bucket: int

    def to_bytes(self) -> bytes:
        return self.data

    @classmethod
    def from_bytes(cls, data: bytes) -> CompactionTask:
        """Decode a task (:class:`~tidelake.InvalidArgumentError` for anything else)."""
        location, branch, bucket = _internal.compaction_task_target(bytes(data))
        return cls(bytes(data), location, branch, bucket)


class CompactionPlan:
    """The tasks compacting one snapshot of a table, committed together by :meth:`commit`
    (in the process that planned it)."""

    def __init__(self, table: Table, raw: _internal.RawCompactionPlan) -> None:
        self._table, self._raw = table, raw
        self.tasks = [CompactionTask.from_bytes(t) for t in raw.tasks()]

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot the tasks were picked on (None: the table had no snapshot)."""
        return self._raw.snapshot_id

    @property
    def moved_snapshot(self) -> int | None:
        """Postpone-bucket tables: the COMPACT snapshot that moved postponed rows into real
        buckets while planning (already committed)."""
        return self._raw.moved_snapshot

    def commit(self, results: list[bytes]) -> int | None:
        """Commit the tasks' results (the bytes :func:`run_compaction_task` returned, one per
        task, any order) as one COMPACT snapshot; returns its id (the planning snapshot of a
        postpone move, or None, when nothing changed).

        Raises:
            InvalidArgumentError: a task without a result, two results for one task, or a
                result that is not of this plan.
            CommitConflictError: a concurrent commit removed files the plan rewrote (the new
                files are deleted; plan again).
        """
        committed = self._table._raw.commit_compaction(self._raw, [bytes(r) for r in results])
        return committed[-1]["snapshot_id"] if committed else self.moved_snapshot


def run_compaction_task(task: CompactionTask | bytes, storage_options: dict[str, str] | None = None) -> bytes:
    """Run one compaction task in this process (the GIL is released meanwhile) and return its
    result for :meth:`CompactionPlan.commit`. ``storage_options`` open the task's table on an
    object store (see :func:`tidelake.open_table`).

    Raises:
        CommitConflictError: the table's schema changed since the plan, or the task's inputs were
            compacted and expired meanwhile (plan again).
    """
    data = task.to_bytes() if isinstance(task, CompactionTask) else bytes(task)
    return _internal.run_compaction_task(data, storage_options)
