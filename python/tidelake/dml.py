"""Row-level DML: :meth:`Table.delete <tidelake.Table.delete>`, :meth:`Table.update
<tidelake.Table.update>`, :meth:`Table.merge <tidelake.Table.merge>` (:class:`MergeBuilder`) and
partial upserts.

How a change is made (one atomic commit per call, retried from scratch on a conflict), the same
way whether one process runs it or Spark distributes it (:mod:`tidelake.spark.dml`):

* the engine plans it (``RawTable.plan_row_level``): it refuses what the table's resolved
  options cannot express (:class:`~tidelake.exceptions.UnsupportedError`), picks the strategy
  below and groups the splits the filter may match into tasks by (partition, bucket), each task
  versioned bytes any process can run; a change reads its tasks' rows, Python evaluates the
  conditions and values on them, and the engine accumulates the outcome
  (``RawRowLevelChange``: removed rows, updated, inserted and deleted-key rows) into a prepared
  change (versioned bytes), committed by ``RawTable.commit_row_level``;
* the rows that can match are read from one snapshot: the filter's simple terms (or the merge
  source's key values) are pushed into the scan, which prunes partitions, buckets and files;
  batches are streamed (append tables: one planned split at a time);
* conditions and set expressions (DNF filters, :class:`pyarrow.compute.Expression`, SQL strings
  through :mod:`tidelake.expr.sql`) are evaluated by pyarrow on those rows;
* primary-key tables get row kinds: ``-D`` records for deleted keys, full rows for updated ones;
* append tables with ``deletion-vectors.enabled`` get the changed rows marked deleted in their
  files' deletion vectors (the read yields each row's file position; the engine merges the new
  positions into the files' current vectors), updated rows written as new files; a commit
  since that replaced one of those vectors or removed one of those files conflicts (nothing
  lands, the call starts again);
* other append tables get the files of every split with a changed row rewritten: the split's
  surviving and updated rows are written again and its files removed in the same commit, which
  conflicts (nothing lands, the call starts again) if another commit removed one of those files;
* the commit is validated against everything committed since the snapshot read (primary-key
  tables: a write to a changed key range conflicts), so a concurrent writer's acknowledged rows
  are never overwritten by a change computed without them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidArgumentError, UnsupportedError
from .expr import And, Filter, IsNull, Or, all_of, filter_json, to_filter
from .expr import arrow as tree_arrow
from .expr import sql as sql_text
from .write import BATCH_COMMIT_IDENTIFIER, WriteResult, replayed, write_result

if TYPE_CHECKING:
    import pyarrow as pa

    from .table import Table

__all__ = ["MergeBuilder", "PreparedChange", "plan", "prepare_delete", "prepare_update", "commit_changes"]

_TARGET, _SOURCE = "target.", "source."
_IN_LIST_MAX = 10_000
"""Up to this many distinct source key values are pushed into the target scan as an IN list;
more push their [min, max] range."""


# ---- conditions and expressions ------------------------------------------------------------------

@dataclass(frozen=True)
class _Condition:
    """A compiled filter: the tree pushed into the scan (a superset of the rows; None: no
    pruning) and the expression selecting the rows exactly (None: every row). ``exact``: the
    tree is the condition itself (a filter over plain columns), so the engine's predicate
    selects the rows, as a read with that filter does."""

    pushdown: Filter | None
    expression: Any
    exact: bool = False


def _resolver(columns: dict[str, dict[str, Any]], prefixed: bool) -> Callable[[str | None, str], tuple[str, Any]]:
    """Resolve ``qualifier.column`` against ``{qualifier: {column: type}}`` to the field names of
    the evaluated table (``qualifier.column`` when ``prefixed``: merges, where two tables meet);
    an unqualified column must be unambiguous."""

    def resolve(qualifier: str | None, name: str) -> tuple[str, Any]:
        if qualifier is not None:
            if qualifier not in columns:
                raise InvalidArgumentError(f"unknown table {qualifier!r} in {qualifier}.{name}; "
                                           f"use {' or '.join(sorted(columns))}")
            if name not in columns[qualifier]:
                raise InvalidArgumentError(f"{qualifier} has no column {name!r}; columns are "
                                           f"{sorted(columns[qualifier])}")
            return (f"{qualifier}.{name}" if prefixed else name), columns[qualifier][name]
        owners = [q for q, cols in columns.items() if name in cols]
        if not owners:
            raise InvalidArgumentError(f"unknown column {name!r}")
        if len(owners) > 1:
            raise InvalidArgumentError(f"column {name!r} is ambiguous: qualify it ({', '.join(sorted(owners))})")
        return (f"{owners[0]}.{name}" if prefixed else name), columns[owners[0]][name]

    return resolve


def _compile(filter: Any, columns: dict[str, dict[str, Any]], schema: pa.Schema | None) -> _Condition:
    """Compile a filter or condition: None, a pyarrow Expression (over the evaluated table's field
    names), a SQL string, or (single-table filters, ``schema`` given) DNF tuples / a filter tree.
    Merge conditions (no ``schema``) use ``qualifier.column`` field names."""
    import pyarrow.compute as pc

    if filter is None:
        return _Condition(None, None)
    if isinstance(filter, pc.Expression):
        return _Condition(None, filter)
    if isinstance(filter, str):
        expr = sql_text.to_expression(filter, _resolver(columns, prefixed=schema is None))
        pushdown = None
        if schema is not None:
            pushdown = sql_text.pushdown_tree(filter, set(schema.names), "target")
        return _Condition(pushdown, expr)
    if schema is None:
        raise InvalidArgumentError(f"a merge condition must be a SQL string or a pyarrow Expression, got {filter!r}")
    tree = to_filter(filter)
    if tree is None:
        return _Condition(None, None)
    tree_arrow.to_expression(tree, schema)  # unknown columns and bad literals named now
    return _Condition(tree, None, exact=True)


def _value_expression(value: Any, columns: dict[str, dict[str, Any]], prefixed: bool) -> Any:
    """A set/insert value: a pyarrow Expression, a SQL string, or a Python literal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(value, pc.Expression):
        return value
    if isinstance(value, str):
        return sql_text.to_expression(value, _resolver(columns, prefixed))
    try:
        return pc.scalar(pa.scalar(value))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise InvalidArgumentError(f"cannot use {value!r} as a value") from None


def _evaluate(table: pa.Table, exprs: dict[str, Any]) -> pa.Table:
    """The columns ``exprs`` computes on the rows of ``table``, in row order."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        return ds.dataset(table).to_table(columns=exprs, use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidArgumentError(f"cannot evaluate {list(exprs.values())}: {e}") from e


def _mask(table: pa.Table, expr: Any) -> pa.Array:
    """Where ``expr`` holds (NULL: does not), as a boolean array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if expr is None:
        return pa.array([True] * table.num_rows, pa.bool_())
    out = _evaluate(table, {"m": expr}).column("m")
    if not pa.types.is_boolean(out.type):
        raise InvalidArgumentError(f"condition {expr} is not boolean (it is {out.type})")
    return pc.fill_null(out, False).combine_chunks()


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns cast to ``schema`` (values computed by expressions may be wider)."""
    import pyarrow as pa

    arrays = []
    for f in schema:
        col = table.column(f.name)
        if col.type != f.type:
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidArgumentError(f"the new values of column {f.name!r} do not fit {f.type}: {e}") from e
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema)


# ---- the operation --------------------------------------------------------------------------------
#
# The engine plans a change (capability from the table's resolved options, strategy, tasks per
# (partition, bucket): ``RawTable.plan_row_level``), reads each task's rows and accumulates what
# happens to them (``RawRowLevelChange``), and commits the prepared changes
# (``RawTable.commit_row_level``). Python evaluates the user's conditions and values on the rows.

_PLACES = ["_FILE_INDEX", "_ROW_POSITION"]
"""Columns the engine appends to the rows of deletion-vector tasks (each row's file and position)."""


@dataclass(frozen=True)
class _Plan:
    """A planned change: the snapshot read (None: the table had none), the engine's strategy
    (``row-kinds``, ``deletion-vectors``, ``rewrite``) and the tasks (versioned bytes)."""

    snapshot: int | None
    strategy: str
    tasks: tuple[bytes, ...]


def _plan(table: Table, what: str, *, deletes: bool, tree: Filter | None, snapshot: int | None = None) -> _Plan:
    """Plan ``what`` on ``snapshot`` (default the latest), raising :class:`UnsupportedError` when
    the table cannot take it (``deletes``: the change deletes rows)."""
    planned, strategy, tasks = table._raw.plan_row_level(what, filter_json=filter_json(tree), snapshot_id=snapshot,
                                                         deletes=deletes)
    return _Plan(planned, strategy, tuple(tasks))


class _Change:
    """One change computed from one planned snapshot: the engine's accumulator, fed task by
    task (:meth:`rows`), then turned into a :class:`PreparedChange` by :meth:`finish`."""

    def __init__(self, table: Table, plan: _Plan) -> None:
        self.table = table
        self.plan = plan
        self.raw = table._raw.row_level_change(plan.snapshot)
        self.task = b""

    @property
    def primary_key(self) -> bool:
        return self.plan.strategy == "row-kinds"

    def rows(self) -> Iterator[pa.Table]:
        """Each task's rows to evaluate (primary-key tables: the merged rows the plan's filter
        keeps; append tables: every live row of its splits); :meth:`remove` applies to the rows
        last yielded."""
        from .scan import _reader

        for task in self.plan.tasks:
            self.task = task
            rows = _reader(self.raw.read(task)).read_all()
            yield rows.drop_columns(_PLACES) if self.plan.strategy == "deletion-vectors" else rows

    def matching(self, rows: pa.Table) -> pa.Array:
        """Where the plan's filter holds on ``rows`` (the rows last yielded by :meth:`rows`), by
        the engine's predicate: the rows a read with that filter returns."""
        return self.raw.matching(self.task, rows).column(0)

    def remove(self, mask: pa.Array) -> None:
        """Append tables: the rows of the last task where ``mask`` holds go."""
        self.raw.remove(mask)

    def finish(self) -> PreparedChange:
        payload, snapshot, inserted, updated, deleted = self.raw.finish()
        return PreparedChange(payload, snapshot, inserted, updated, deleted)


@dataclass(frozen=True)
class PreparedChange:
    """A row-level change computed from snapshot ``read_snapshot`` with its files written but not
    committed (picklable; ``payload`` is the engine's versioned bytes): what one task of a
    distributed job returns. The changes of every task, all prepared from the same snapshot on
    disjoint buckets, are committed together by :func:`commit_changes` (or dropped with
    :meth:`discard`)."""

    payload: bytes
    read_snapshot: int | None
    rows_inserted: int
    rows_updated: int
    rows_deleted: int

    def discard(self, table: Table) -> None:
        """Delete the files of this (never committed) change."""
        from ._internal import RawTable

        table._raw.discard(RawTable.prepared_change_messages(self.payload))


@dataclass(frozen=True)
class _Prepare:
    """Compute the change from this snapshot and return it uncommitted; with ``tasks`` (task
    bytes planned from that snapshot), read only those."""

    snapshot_id: int | None
    tasks: tuple[bytes, ...] | None = None


def _prepared(table: Table, plan: _Plan, body: Callable[[_Change], None]) -> PreparedChange:
    """``body(change)`` on the tasks of ``plan``, finished; on an error nothing is left behind."""
    change = _Change(table, plan)
    try:
        body(change)
    except BaseException:
        change.raw.abort()
        raise
    return change.finish()


def _commit(table: Table, changes: list[PreparedChange], commit_user: str, commit_identifier: int,
            started: float | None = None) -> WriteResult:
    """Commit ``changes`` as one transaction (see :func:`commit_payloads`)."""
    return commit_payloads(table, [c.payload for c in changes], commit_user, commit_identifier, started=started)


def commit_payloads(table: Table, payloads: list[bytes], commit_user: str, commit_identifier: int, *,
                    started: float | None = None) -> WriteResult:
    """Commit prepared changes given as their bytes (:attr:`PreparedChange.payload`) as one
    transaction; when it is refused their files are deleted by the engine. ``started``: the
    call's start (``time.monotonic()``), for its duration."""
    started = time.monotonic() if started is None else started
    committed, inserted, updated, deleted = table._raw.commit_row_level(payloads, commit_user, commit_identifier)
    return write_result(committed, started, inserted=inserted, updated=updated, deleted=deleted)


def _finish(table: Table, what: str, deletes: bool, tree: Filter | None, body: Callable[[_Change], None],
            prepare: _Prepare | None) -> WriteResult | PreparedChange:
    """Run ``what`` now (:func:`run`), or (``prepare``) compute it from that snapshot uncommitted."""
    if prepare is None:
        return run(table, what, deletes, tree, body)
    if prepare.tasks is not None:
        strategies = {_task_strategy(t) for t in prepare.tasks}
        plan = _Plan(prepare.snapshot_id, strategies.pop() if strategies else "row-kinds", prepare.tasks)
    else:
        plan = _plan(table, what, deletes=deletes, tree=tree, snapshot=prepare.snapshot_id)
        if prepare.snapshot_id is None:  # the table had no snapshot: nothing to read
            plan = _Plan(None, plan.strategy, ())
    return _prepared(table, plan, body)


def _task_strategy(task: bytes) -> str:
    from ._internal import RawRowLevelTask

    return str(RawRowLevelTask.from_bytes(task).strategy)


def commit_changes(table: Table, changes: list[PreparedChange], commit_user: str | None = None,
                   commit_identifier: int | None = None) -> WriteResult:
    """Commit prepared changes (one per task, same snapshot) as one transaction. With a
    ``commit_identifier``, committing the same (commit_user, identifier) again is a no-op (a
    retried job driver). Raises :class:`CommitConflictError` (nothing landed, their files
    deleted) when a commit since their snapshot conflicts: prepare them again from the latest
    snapshot."""
    changes = list(changes)
    if any(not isinstance(c, PreparedChange) for c in changes):
        raise InvalidArgumentError("commit_changes takes the PreparedChange objects of prepare_* calls")
    ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    return _commit(table, changes, commit_user or str(uuid.uuid4()), ident)


def run(table: Table, what: str, deletes: bool, tree: Filter | None, body: Callable[[_Change], None]) -> WriteResult:
    """Plan ``what`` on the latest snapshot, run ``body(change)`` on its tasks and commit the
    change atomically; a conflict or an expired snapshot starts again from the new latest
    (nothing landed)."""

    started = time.monotonic()

    def attempt() -> WriteResult:
        change = _prepared(table, _plan(table, what, deletes=deletes, tree=tree), body)
        return _commit(table, [change], str(uuid.uuid4()), BATCH_COMMIT_IDENTIFIER, started)

    return replayed(attempt, table._raw)


# ---- delete and update ----------------------------------------------------------------------------

def delete(table: Table, filter: Any, partitions: Any = None,
           prepare: _Prepare | None = None) -> WriteResult | PreparedChange:
    """See :meth:`tidelake.Table.delete`."""
    schema = table.schema
    cond = _compile(filter, {"target": dict(zip(schema.names, schema.types))}, schema)

    def drop(rows: pa.Table) -> pa.Table:
        return schema.empty_table()

    def delete_pk(change: _Change, hit: pa.Table) -> None:
        change.raw.delete_keys(hit.select(schema.names))  # whole rows: NOT NULL value columns

    body = _filtered(cond, delete_pk, drop)
    tree = all_of([cond.pushdown, table._partitions_filter(partitions)])
    return _finish(table, "delete", True, tree, body, prepare)


def _filtered(cond: _Condition, primary_key: Callable[[_Change, pa.Table], None],
              append: Callable[[pa.Table], pa.Table]) -> Callable[[_Change], None]:
    """A delete or update of the rows ``cond`` selects: on primary-key tables
    ``primary_key(change, matching rows)`` writes them; on append tables the matching rows of
    each task are removed and ``append(matching rows)`` written in their place."""

    def body(change: _Change) -> None:
        import pyarrow.compute as pc

        for rows in change.rows():
            mask = change.matching(rows) if cond.exact else _mask(rows, cond.expression)
            if change.primary_key:
                primary_key(change, rows.filter(mask))
            elif pc.any(mask).as_py():
                change.remove(mask)
                change.raw.update(append(rows.filter(mask)))

    return body


def update(table: Table, set: dict[str, Any], filter: Any, partitions: Any = None,
           prepare: _Prepare | None = None) -> WriteResult | PreparedChange:
    """See :meth:`tidelake.Table.update`."""
    if not isinstance(set, dict) or not set:
        raise InvalidArgumentError("set must be a non-empty dict of column -> value or expression")
    schema = table.schema
    unknown = [c for c in set if c not in schema.names]
    if unknown:
        raise InvalidArgumentError(f"update sets unknown columns {unknown}; columns are {schema.names}")
    keys = [c for c in set if c in table.primary_keys]
    if keys:
        raise UnsupportedError(f"update cannot change primary-key columns {keys}: delete and insert the rows")
    columns = {"target": dict(zip(schema.names, schema.types))}
    cond = _compile(filter, columns, schema)
    values = {c: _value_expression(v, columns, prefixed=False) for c, v in set.items()}

    def updated_rows(rows: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        new = _evaluate(rows, {c: values.get(c, pc.field(c)) for c in schema.names})
        out = _conform(new, schema)
        _check_partial_nulls(table, out, list(set))
        return out

    def update_pk(change: _Change, hit: pa.Table) -> None:
        change.raw.update(updated_rows(hit))

    tree = all_of([cond.pushdown, table._partitions_filter(partitions)])
    return _finish(table, "update", False, tree, _filtered(cond, update_pk, updated_rows), prepare)


def prepare_delete(table: Table, filter: Any, snapshot_id: int | None, partitions: Any = None,
                   tasks: Any = None) -> PreparedChange:
    """:meth:`tidelake.Table.delete` computed from snapshot ``snapshot_id`` (None: the table had
    none) and left uncommitted: one task's share (``partitions``, or ``tasks``: task bytes
    planned from that snapshot, see :func:`plan`) of a distributed delete."""
    out = delete(table, filter, partitions, _Prepare(snapshot_id, _task_bytes(tasks)))
    assert isinstance(out, PreparedChange)
    return out


def prepare_update(table: Table, set: dict[str, Any], filter: Any, snapshot_id: int | None,
                   partitions: Any = None, tasks: Any = None) -> PreparedChange:
    """:meth:`tidelake.Table.update` computed from snapshot ``snapshot_id`` and left uncommitted
    (see :func:`prepare_delete`)."""
    out = update(table, set, filter, partitions, _Prepare(snapshot_id, _task_bytes(tasks)))
    assert isinstance(out, PreparedChange)
    return out


def plan(table: Table, what: str, filter: Any = None, *, deletes: bool, snapshot_id: int | None = None,
         partitions: Any = None) -> tuple[int | None, list[bytes]]:
    """The tasks (versioned bytes, one per (partition, bucket) the rows ``filter`` selects may
    live in) of a distributed ``what`` (``delete``, ``update``, ``merge``; ``deletes``: it
    deletes rows) of snapshot ``snapshot_id`` (default the latest), and that snapshot (None: the
    table has none). Raises :class:`UnsupportedError` when the table cannot take the change."""
    schema = table.schema
    cond = _compile(filter, {"target": dict(zip(schema.names, schema.types))}, schema)
    planned = _plan(table, what, deletes=deletes, tree=all_of([cond.pushdown, table._partitions_filter(partitions)]),
                    snapshot=snapshot_id)
    return planned.snapshot, list(planned.tasks)


def _task_bytes(tasks: Any) -> tuple[bytes, ...] | None:
    """``tasks`` (task bytes of :func:`plan`) as a tuple, checked."""
    if tasks is None:
        return None
    out = tuple(tasks)
    bad = [t for t in out if not isinstance(t, bytes)]
    if bad:
        raise InvalidArgumentError(f"tasks must be the task bytes of tidelake.dml.plan, got {bad[0]!r:.80}")
    return out


def _check_partial_nulls(table: Table, rows: pa.Table, columns: list[str]) -> None:
    """Partial-update tables ignore null values: setting a column to null cannot be expressed."""
    if not table.primary_keys or table.effective_options["merge-engine"] != "partial-update":
        return
    for c in columns:
        if rows.column(c).null_count:
            raise UnsupportedError(f"setting {c!r} to null on a partial-update table (nulls keep the current value)")


# ---- partial upsert -------------------------------------------------------------------------------

def upsert_partial(table: Table, data: Any) -> WriteResult:
    """See :meth:`tidelake.Table.upsert` (``partial=True``)."""
    from .write import arrow_input

    if not table.primary_keys:
        raise UnsupportedError("upsert needs a primary key; this is an append table (use write)")
    source = _source_table(arrow_input(data))
    missing = [k for k in table.primary_keys if k not in source.column_names]
    if missing:
        raise InvalidArgumentError(f"partial upsert needs the primary-key columns; {missing} are missing")
    builder = MergeBuilder(table, source, table.primary_keys)
    given = [c for c in source.column_names if c in table.schema.names]
    set_ = {c: f"source.{c}" for c in given if c not in table.primary_keys}
    values: dict[str, Any] = {c: f"source.{c}" for c in given}
    if not set_:
        builder.when_not_matched_insert(values)
    else:
        builder.when_matched_update(set_).when_not_matched_insert(values)
    return builder.execute()


def _source_table(data: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    return pa.table(data)


# ---- merge ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Clause:
    kind: str  # "update", "delete", "insert"
    condition: Any
    values: dict[str, Any] | None  # compiled set/insert values (None: delete)


def _filler(t: pa.DataType) -> pa.Scalar:
    """A fixed value of type ``t`` that stands for null in a null-safe join key."""
    import pyarrow as pa

    for physical in (pa.int8(), pa.int32(), pa.int64()):  # numbers, strings; dates; times
        try:
            return pa.scalar(0, physical).cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return pa.scalar(b"", t)


def _join_keys(rows: pa.Table, columns: list[str], null_safe: list[bool], prefix: str,
               index: str) -> tuple[pa.Table, list[str]]:
    """``rows``' join columns (and ``index``), renamed ``<prefix>_<i>``, with the key names to
    join on: a null-safe column joins on its value with nulls filled and on whether it is null,
    so that nulls match nulls (a plain join never matches a null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrays, names = [], []
    for i, (c, safe) in enumerate(zip(columns, null_safe)):
        column = rows.column(c)
        if safe:
            arrays += [pc.fill_null(column, _filler(column.type)), pc.is_null(column)]
            names += [f"{prefix}_{i}", f"{prefix}_{i}_null"]
        else:
            arrays.append(column)
            names.append(f"{prefix}_{i}")
    keys = list(names)
    arrays.append(rows.column(index))
    names.append(index)
    return pa.table(arrays, names=names), keys


class MergeBuilder:
    """A MERGE of ``source`` into a table, built with ``when_*`` clauses and run by
    :meth:`execute` (from :meth:`tidelake.Table.merge`).

    Clauses of one kind are tried in the order they were added; the first whose condition holds
    acts on the row (SQL MERGE). A target row matched by several source rows is an error
    (:class:`InvalidArgumentError`), as in SQL. Conditions and values are SQL strings over
    ``target.col`` / ``source.col`` (unqualified names must be unambiguous) or pyarrow
    Expressions over fields named ``"target.col"`` / ``"source.col"``.
    """

    def __init__(self, table: Table, source: Any, on: Any, partitions: Any = None) -> None:
        import pyarrow as pa

        from .write import arrow_input

        self._table = table
        self._source = _source_table(arrow_input(source))
        self._null_safe: set[str] = set()  # target columns joined with <=> (nulls match nulls)
        self._on = self._pairs(on)
        for t, s in self._on:  # join keys of the target's types
            i = self._source.column_names.index(s)
            want = table.schema.field(t).type
            if self._source.schema.types[i] != want:
                try:
                    self._source = self._source.set_column(i, s, self._source.column(i).cast(want))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise InvalidArgumentError(f"merge on: source column {s!r} cannot be read as {want}: {e}") from e
        self._partitions = partitions
        schema = table.schema
        self._columns = {"target": dict(zip(schema.names, schema.types)),
                         "source": dict(zip(self._source.column_names, self._source.schema.types))}
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._by_source: list[_Clause] = []

    def _pairs(self, on: Any) -> list[tuple[str, str]]:
        """(target column, source column) pairs of ``on``: a column name, a list of names (same
        in both), or a SQL conjunction of ``target.a = source.b`` equalities."""
        from sqlglot import exp


        names = self._table.schema.names
        if isinstance(on, str) and on in names:
            on = [on]
        if isinstance(on, (list, tuple)) and on and all(isinstance(c, str) for c in on):
            pairs = [(c, c) for c in on]
        elif isinstance(on, str):
            tree = sql_text.parse(on)
            terms = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
            pairs = []
            for t in terms:
                t = t.unnest()
                sides = [t.left, t.right] if isinstance(t, (exp.EQ, exp.NullSafeEQ)) else []
                cols = [c for c in sides if isinstance(c, exp.Column)]
                if len(cols) != 2:
                    raise InvalidArgumentError(f"merge on {on!r}: only target.col = source.col (or <=>) equalities "
                                               "joined by AND are supported; put other conditions in the clauses")
                by = {(c.table or "").lower(): c.name for c in cols}
                if set(by) != {"target", "source"}:
                    raise InvalidArgumentError(f"merge on {on!r}: qualify each side with target. and source.")
                pairs.append((by["target"], by["source"]))
                if isinstance(t, exp.NullSafeEQ):
                    self._null_safe.add(by["target"])
        else:
            raise InvalidArgumentError(f"merge on must be a column, a list of columns or a SQL string, got {on!r}")
        for t, s in pairs:
            if t not in names:
                raise InvalidArgumentError(f"merge on: the table has no column {t!r}")
            if s not in self._source.column_names:
                raise InvalidArgumentError(f"merge on: the source has no column {s!r}")
        return pairs

    def _values(self, values: Any, kind: str) -> dict[str, Any]:
        import pyarrow.compute as pc

        names = self._table.schema.names
        if values == "*":
            return {c: pc.field(f"source.{c}") for c in names if c in self._source.column_names}
        if not isinstance(values, dict) or not values:
            raise InvalidArgumentError(f"{kind} values must be '*' or a non-empty dict of column -> value")
        unknown = [c for c in values if c not in names]
        if unknown:
            raise InvalidArgumentError(f"{kind} sets unknown columns {unknown}; columns are {names}")
        return {c: _value_expression(v, self._columns, prefixed=True) for c, v in values.items()}

    def _condition(self, condition: Any, only: str | None) -> Any:
        """A clause condition over both tables, or ``only`` one (not-matched clauses)."""
        columns = self._columns if only is None else {only: self._columns[only]}
        return _compile(condition, columns, None).expression

    def when_matched_update(self, set: Any = "*", condition: Any = None) -> MergeBuilder:
        """Update the target row with ``set`` (``"*"``: every column the source has) when
        ``condition`` holds."""
        values = self._values(set, "when_matched_update")
        keys = [c for c in values if c in self._table.primary_keys]
        if keys and set != "*":
            raise UnsupportedError(f"merge cannot change primary-key columns {keys}")
        values = {c: v for c, v in values.items() if c not in self._table.primary_keys}
        self._matched.append(_Clause("update", self._condition(condition, None), values))
        return self

    def when_matched_delete(self, condition: Any = None) -> MergeBuilder:
        """Delete the target row when ``condition`` holds."""
        self._matched.append(_Clause("delete", self._condition(condition, None), None))
        return self

    def when_not_matched_insert(self, values: Any = "*", condition: Any = None) -> MergeBuilder:
        """Insert a source row no target row matched (``"*"``: the source's columns by name)."""
        self._not_matched.append(_Clause("insert", self._condition(condition, "source"),
                                         self._values(values, "when_not_matched_insert")))
        return self

    def when_not_matched_by_source_delete(self, condition: Any = None) -> MergeBuilder:
        """Delete a target row no source row matched (this reads every target row the
        partition restriction keeps)."""
        self._by_source.append(_Clause("delete", self._condition(condition, "target"), None))
        return self

    # -- execution --

    def _pushdown(self) -> Filter | None:
        """The source's key values as a filter on the target (None when every target row may
        matter: not-matched-by-source clauses)."""
        import pyarrow.compute as pc

        if self._by_source:
            return None
        trees: list[Filter | None] = []
        for t, s in self._on:
            column = self._source.column(s)
            values = pc.unique(column.drop_null())
            nulls = t in self._null_safe and column.null_count > 0  # <=>: a null key matches null
            if len(values) == 0:
                # no source key: nothing matches, or only nulls
                trees.append(IsNull(t) if nulls else And((IsNull(t), IsNull(t, negated=True))))
                continue
            if len(values) <= _IN_LIST_MAX:
                tree = to_filter([(t, "in", values.to_pylist())])
            else:
                bounds = pc.min_max(values)
                tree = to_filter([(t, ">=", bounds["min"].as_py()), (t, "<=", bounds["max"].as_py())])
            assert tree is not None
            trees.append(Or((tree, IsNull(t))) if nulls else tree)
        return all_of(trees)

    def execute(self) -> WriteResult:
        """Run the merge: one atomic commit. Returns its :class:`~tidelake.write.WriteResult`
        (``rows_inserted``, ``rows_updated``, ``rows_deleted``)."""
        out = self._execute(None)
        assert isinstance(out, WriteResult)
        return out

    def prepare(self, snapshot_id: int | None, tasks: Any = None) -> PreparedChange:
        """The merge computed from snapshot ``snapshot_id`` and left uncommitted: one task's share
        (the builder's ``partitions``, or ``tasks`` planned from that snapshot as in
        :func:`prepare_delete`) of a distributed merge; see :func:`commit_changes`."""
        out = self._execute(_Prepare(snapshot_id, _task_bytes(tasks)))
        assert isinstance(out, PreparedChange)
        return out

    def _execute(self, prepare: _Prepare | None) -> WriteResult | PreparedChange:
        if not (self._matched or self._not_matched or self._by_source):
            raise InvalidArgumentError("a merge needs at least one when_* clause")
        deletes = any(c.kind == "delete" for c in self._matched + self._by_source)
        restrict = self._table._partitions_filter(self._partitions)
        if restrict is not None:
            self._source = self._source.filter(self._in_partitions(restrict))
        tree = all_of([self._pushdown(), restrict])
        return _finish(self._table, "merge", deletes, tree, self._run, prepare)

    def _run(self, change: _Change) -> None:
        import numpy as np
        import pyarrow as pa

        source = self._source.append_column("__s", pa.array(np.arange(self._source.num_rows), pa.int64()))
        matched = np.zeros(self._source.num_rows, dtype=bool)
        for rows in change.rows():
            changed, updated, deleted = self._apply(rows, source, matched)
            if change.primary_key:
                change.raw.update(updated)
                change.raw.delete_keys(deleted)
            elif updated.num_rows or deleted.num_rows:
                change.remove(changed)
                change.raw.update(updated)
        change.raw.insert(self._inserts(source.filter(pa.array(~matched))))

    def _apply(self, rows: pa.Table, source: pa.Table, matched: Any) -> tuple[pa.Array, pa.Table, pa.Table]:
        """One batch of target rows: (which rows change, their updated rows, the deleted rows)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = self._table.schema
        n = rows.num_rows
        targets = rows.append_column("__t", pa.array(np.arange(n), pa.int64()))
        left, left_keys = _join_keys(targets, [t for t, _ in self._on], self._null_safe_flags(), "__l", "__t")
        right, right_keys = _join_keys(source, [s for _, s in self._on], self._null_safe_flags(), "__r", "__s")
        pairs = left.join(right, keys=left_keys, right_keys=right_keys, join_type="inner",
                          use_threads=False).select(["__t", "__s"])
        t_idx = pairs.column("__t").to_numpy()
        s_idx = pairs.column("__s").to_numpy()
        if len(np.unique(t_idx)) != len(t_idx):
            dup = rows.take([int(t_idx[np.argmax(np.bincount(t_idx))])]).select([t for t, _ in self._on])
            raise InvalidArgumentError(f"merge: a target row ({dup.to_pylist()[0]}) matches several source rows")
        matched[s_idx] = True
        state = np.zeros(n, dtype=np.int8)  # 0 untouched, 1 updated, 2 deleted
        new_rows: list[pa.Table] = []
        if len(t_idx) and self._matched:
            joined = self._joined(rows.take(pa.array(t_idx)), self._source.take(pa.array(s_idx)))
            todo = np.ones(len(t_idx), dtype=bool)
            for clause in self._matched:
                hit = _mask(joined, clause.condition).to_numpy(zero_copy_only=False) & todo
                todo &= ~hit
                if not hit.any():
                    continue
                if clause.kind == "delete":
                    state[t_idx[hit]] = 2
                    continue
                part = joined.filter(pa.array(hit))
                assert clause.values is not None
                exprs = {c: clause.values.get(c, pc.field(f"target.{c}")) for c in schema.names}
                new = _conform(_evaluate(part, exprs), schema)
                _check_partial_nulls(self._table, new, list(clause.values))
                new_rows.append(new)
                state[t_idx[hit]] = 1
        if self._by_source:
            unmatched = np.ones(n, dtype=bool)
            unmatched[t_idx] = False
            idx = np.nonzero(unmatched)[0]
            if len(idx):
                side = self._prefix(rows.take(pa.array(idx)), "target")
                todo = np.ones(len(idx), dtype=bool)
                for clause in self._by_source:
                    hit = _mask(side, clause.condition).to_numpy(zero_copy_only=False) & todo
                    todo &= ~hit
                    state[idx[hit]] = 2
        updated = pa.concat_tables(new_rows) if new_rows else schema.empty_table()
        deleted = rows.filter(pa.array(state == 2)).select(schema.names)
        return pa.array(state != 0), updated, deleted

    def _null_safe_flags(self) -> list[bool]:
        """For each ``on`` pair, whether nulls match (``<=>``)."""
        return [t in self._null_safe for t, _ in self._on]

    def _in_partitions(self, restrict: Filter) -> pa.Array:
        """Which source rows fall in the restricted partitions (read through ``on``): the others
        cannot be told apart from rows of partitions not read, so they take no part."""
        import pyarrow as pa

        by_target = dict(self._on)
        missing = [k for k in self._table.partition_keys if k not in by_target]
        if missing:
            raise InvalidArgumentError(f"a merge restricted to partitions needs the partition columns {missing} in on")
        view = pa.table({k: self._source.column(by_target[k]) for k in self._table.partition_keys})
        return _mask(view, tree_arrow.to_expression(restrict, self._table.schema))

    @staticmethod
    def _prefix(rows: pa.Table, qualifier: str) -> pa.Table:
        return rows.rename_columns([f"{qualifier}.{c}" for c in rows.column_names])

    def _joined(self, target: pa.Table, source: pa.Table) -> pa.Table:
        import pyarrow as pa

        t, s = self._prefix(target, "target"), self._prefix(source, "source")
        return pa.Table.from_arrays(t.columns + s.columns, names=t.column_names + s.column_names)

    def _inserts(self, unmatched: pa.Table) -> pa.Table:
        import pyarrow as pa

        schema = self._table.schema
        if not self._not_matched or unmatched.num_rows == 0:
            return schema.empty_table()
        side = self._prefix(unmatched.drop_columns(["__s"]), "source")
        todo = pa.array([True] * side.num_rows)
        parts = []
        import pyarrow.compute as pc

        for clause in self._not_matched:
            hit = pc.and_(_mask(side, clause.condition), todo)
            todo = pc.and_(todo, pc.invert(hit))
            part = side.filter(hit)
            if part.num_rows == 0:
                continue
            assert clause.values is not None
            exprs = {c: clause.values.get(c, pc.scalar(pa.scalar(None, schema.field(c).type)))
                     for c in schema.names}
            parts.append(_conform(_evaluate(part, exprs), schema))
        return pa.concat_tables(parts) if parts else schema.empty_table()
