"""Write-audit-publish: :meth:`Table.stage <tidelake.Table.stage>` opens a :class:`Stage`, a
branch forked from the table's latest snapshot that takes the writes, is audited, then is
published into the table as ONE new snapshot or discarded.

Invariants:

* nothing written to a stage is visible in the table before publishing; a crash while writing
  leaves the table untouched and the stage's branch listed by :meth:`Table.branches
  <tidelake.Table.branches>` (publish it with :meth:`Table.publish_stage
  <tidelake.Table.publish_stage>`, or discard it with :meth:`Table.delete_branch
  <tidelake.Table.delete_branch>`);
* publishing is the engine's ``publish_branch``: one commit (``put_if_absent`` of the next
  snapshot) holding the stage's live files, refused with :class:`~tidelake.CommitConflictError`
  when anything was committed to the table since the fork (the branch is then kept); so the
  table is either exactly as before or exactly the stage, and no acknowledged write of a racing
  writer is lost;
* expectations run on the staged state just before publishing; one failing raises
  :class:`~tidelake.ExpectationError` and the stage is discarded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import ExpectationError, InvalidArgumentError, TidelakeError
from .table import ChangesMode, Table

if TYPE_CHECKING:
    from types import TracebackType

    import pyarrow as pa

    from . import _internal

_log = logging.getLogger("tidelake.stage")


@dataclass(frozen=True)
class _Expectation:
    min_rows: int | None
    max_rows: int | None
    not_null: tuple[str, ...]
    check: Callable[[pa.Table], Any] | None
    name: str


class Stage(Table):
    """A table opened on a stage branch: reads, writes, upserts and deletes act on the stage;
    :meth:`changes` and :meth:`to_arrow` audit it, :meth:`expect` declares what must hold before
    it is published (:meth:`publish`); :meth:`abandon` discards it. As a context manager it
    publishes when the block ends normally and discards the stage when it ends by an exception
    (which propagates)."""

    def __init__(self, raw: _internal.RawTable, target: Table, base: int | None) -> None:
        super().__init__(raw)
        self._target = target
        self._base = base
        self._expectations: list[_Expectation] = []
        self._done = False

    @property
    def base_snapshot_id(self) -> int | None:
        """The table's snapshot the stage forked from (``None``: the table had none)."""
        return self._base

    def changes(self, start_snapshot: int | None = None, end_snapshot: int | None = None,
                columns: list[str] | None = None, filter: Any = None, *, start_timestamp: Any = None,
                end_timestamp: Any = None, start_tag: str | None = None, end_tag: str | None = None,
                mode: ChangesMode | None = None) -> pa.Table:
        """What the stage changed since its fork: the difference between the fork and the staged
        rows (``-D`` for a row gone, the new row for one added or changed; ``mode="diff"`` of
        :meth:`Table.changes <tidelake.Table.changes>`). With a range, :meth:`Table.changes
        <tidelake.Table.changes>` of the stage's branch."""
        ranged = (start_snapshot, end_snapshot, start_timestamp, end_timestamp, start_tag, end_tag) != (None,) * 6
        if ranged:
            return super().changes(start_snapshot, end_snapshot, columns, filter, start_timestamp=start_timestamp,
                                   end_timestamp=end_timestamp, start_tag=start_tag, end_tag=end_tag, mode=mode)
        if self.latest_snapshot_id() in (None, self._base):
            return super().to_arrow(columns, filter).slice(0, 0).add_column(0, "_row_kind", _no_kinds())
        return super().changes(self._base or 0, None, columns, filter, mode="diff")

    def expect(self, *, min_rows: int | None = None, max_rows: int | None = None, not_null: Sequence[str] = (),
               check: Callable[[pa.Table], Any] | None = None, name: str | None = None) -> Stage:
        """Declare an expectation, checked on the staged state when the stage is published (or by
        :meth:`audit`): the staged table holds between ``min_rows`` and ``max_rows`` rows; the
        rows the stage added or changed have no null in the ``not_null`` columns; ``check``
        (called with :meth:`changes`) does not return ``False`` nor raise. Returns the stage."""
        for bound, label in ((min_rows, "min_rows"), (max_rows, "max_rows")):
            if bound is not None and (not isinstance(bound, int) or bound < 0):
                raise InvalidArgumentError(f"{label} must be a non-negative integer, got {bound!r}")
        if isinstance(not_null, str):
            not_null = [not_null]
        unknown = sorted(set(not_null) - set(self.schema.names))
        if unknown:
            raise InvalidArgumentError(f"not_null names unknown columns {unknown}; the columns are {self.schema.names}")
        if check is not None and not callable(check):
            raise InvalidArgumentError(f"check must be callable, got {type(check).__name__}")
        label = name or f"expectation {len(self._expectations) + 1}"
        self._expectations.append(_Expectation(min_rows, max_rows, tuple(not_null), check, label))
        return self

    def audit(self) -> None:
        """Check every expectation now; raises :class:`~tidelake.ExpectationError` naming the
        first that fails (the stage is kept: this is the check, not the publish)."""
        if not self._expectations:
            return
        diff = self.changes()
        staged = None
        for e in self._expectations:
            if e.min_rows is not None or e.max_rows is not None:
                staged = self.to_arrow([self.schema.names[0]]).num_rows if staged is None else staged
                if e.min_rows is not None and staged < e.min_rows:
                    self._fail(e, f"the staged table has {staged} rows, fewer than min_rows={e.min_rows}")
                if e.max_rows is not None and staged > e.max_rows:
                    self._fail(e, f"the staged table has {staged} rows, more than max_rows={e.max_rows}")
            if e.not_null:
                import pyarrow.compute as pc

                new = diff.filter(pc.not_equal(diff["_row_kind"], "-D"))
                nulls = {c: new[c].null_count for c in e.not_null if new[c].null_count}
                if nulls:
                    self._fail(e, f"null values in the rows the stage added or changed: {nulls}")
            if e.check is not None:
                try:
                    verdict = e.check(diff)
                except AssertionError as err:
                    self._fail(e, f"check raised AssertionError: {err}")
                if verdict is False:
                    self._fail(e, f"check {getattr(e.check, '__name__', 'function')} returned False")

    def _fail(self, e: _Expectation, why: str) -> None:
        raise ExpectationError(f"stage {self.branch!r} of {self._target.path}: {e.name} failed: {why}")

    def publish(self) -> int | None:
        """Check the expectations, then publish the stage into the table as one snapshot and
        delete its branch; returns the snapshot id (``None``: the stage changed nothing). A
        failed expectation discards the stage and raises :class:`~tidelake.ExpectationError`;
        :class:`~tidelake.CommitConflictError` when the table moved since the fork (the stage's
        branch is then kept, to be inspected)."""
        self._check_open()
        try:
            self.audit()
        except ExpectationError:
            self.abandon()
            raise
        published = self._target.publish_stage(self.branch)
        self._done = True
        return published

    def abandon(self) -> None:
        """Delete the stage's branch; the table is left as it is."""
        self._check_open()
        self._done = True
        self._target.delete_branch(self.branch)

    def _check_open(self) -> None:
        if self._done:
            raise InvalidArgumentError(f"stage {self.branch!r} was already published or discarded")

    def __enter__(self) -> Stage:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._done:
            return
        if kind is None:
            self.publish()
            return
        try:
            self.abandon()
        except TidelakeError as err:  # the block's exception is the one to see
            _log.warning("could not discard stage %r of %s: %s", self.branch, self._target.path, err)


def _no_kinds() -> pa.Array:
    import pyarrow as pa

    return pa.array([], pa.string())
