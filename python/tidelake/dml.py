"""Row-level DML: :meth:`Table.delete <tidelake.Table.delete>`, :meth:`Table.update
<tidelake.Table.update>`, :meth:`Table.merge <tidelake.Table.merge>` (:class:`MergeBuilder`) and
partial upserts.

How a change is made (one atomic commit per call, retried from scratch on a conflict):

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

from .exceptions import CommitConflictError, InvalidArgumentError, SnapshotExpiredError, UnsupportedError
from .expr import And, Filter, IsNull, all_of, filter_json, to_filter
from .expr import arrow as tree_arrow
from .expr import sql as sql_text
from .write import (
    BATCH_COMMIT_IDENTIFIER,
    CommitMessage,
    Committed,
    TableWriter,
    WriteResult,
    check_messages,
    raw_messages,
    replayed,
    write_result,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from .table import Table

__all__ = ["MergeBuilder", "PreparedChange", "prepare_delete", "prepare_update", "commit_changes"]

_TARGET, _SOURCE = "target.", "source."
_IN_LIST_MAX = 10_000
"""Up to this many distinct source key values are pushed into the target scan as an IN list;
more push their [min, max] range."""


# ---- conditions and expressions ------------------------------------------------------------------

@dataclass(frozen=True)
class _Condition:
    """A compiled filter: the tree pushed into the scan (a superset of the rows; None: no
    pruning) and the expression selecting the rows exactly (None: every row)."""

    pushdown: Filter | None
    expression: Any


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
    return _Condition(tree, tree_arrow.to_expression(tree, schema))


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

def _check_row_level(table: Table, what: str, deletes: bool, updates: bool) -> None:
    """Refuse changes the table's merge engine cannot express with row kinds. The options are the
    engine's resolved values (fallback keys such as ``deduplicate.ignore-delete`` included), so a
    delete the table would drop is refused, never acknowledged."""
    if not table.primary_keys:
        return
    options = table.effective_options
    engine = options["merge-engine"]
    if engine not in ("deduplicate", "partial-update"):
        raise UnsupportedError(f"{what} on a {engine} table: only deduplicate and partial-update tables "
                               "support row-level changes")
    if deletes and options["ignore-delete"]:
        raise UnsupportedError(f"{what} deletes rows, but the table ignores deletes (ignore-delete=true, "
                               "or one of its fallback keys)")
    if deletes and engine == "partial-update" and not options["partial-update.remove-record-on-delete"]:
        raise UnsupportedError(f"{what} deletes rows, but this partial-update table cannot take delete records: "
                               "set partial-update.remove-record-on-delete=true")


def _deletion_vectors(table: Table) -> bool:
    """Whether row-level changes of ``table`` (an append table) go through deletion vectors."""
    return not table.primary_keys and table.effective_options["deletion-vectors.enabled"]


class _Change:
    """One DML call's writer, the splits it rewrites or the rows it deletes by position, and its
    row counts; :meth:`commit` makes one transaction of them."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.writer = TableWriter(table)
        self.rewritten: list[bytes] = []
        #: (split, file indexes, row positions per file) deleted through deletion vectors.
        self.deletes: list[tuple[bytes, list[int], list[list[int]]]] = []
        self.inserted = self.updated = self.deleted = 0
        #: The planned splits (payload, schema id) to read instead of planning (a task's share).
        self.splits: tuple[tuple[bytes, int], ...] | None = None

    def replace(self, split: _TargetSplit, changed: pa.Array, new_rows: pa.Table) -> None:
        """Append tables: remove the rows of ``split`` where ``changed`` holds and write
        ``new_rows``, by deletion vector (the rows' positions) or by rewriting the split's files
        with their unchanged rows."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if split.places is None:
            schema = self.table.schema
            kept = _conform(split.rows.filter(pc.invert(changed)).select(schema.names), schema)
            self.upsert(pa.concat_tables([kept, new_rows]))
            self.rewritten.append(split.payload)
            return
        places = split.places.filter(changed)
        files = places.column("_FILE_INDEX").to_numpy()
        positions = places.column("_ROW_POSITION").to_numpy()
        indexes = sorted(set(files.tolist()))
        self.deletes.append((split.payload, indexes, [positions[files == i].tolist() for i in indexes]))
        self.upsert(new_rows)

    def messages(self) -> list[CommitMessage]:
        """The change's commit messages: its deletion vectors' (their index files are written
        now) and the writer's."""
        user = self.writer.commit_user
        deletes = [CommitMessage(p, user) for p in self.table._raw.deletion_messages(self.deletes)] \
            if self.deletes else []
        try:
            return deletes + self.writer.prepare_commit()
        except BaseException:
            if deletes:
                self.table._raw.discard(raw_messages(deletes))
            raise

    def upsert(self, rows: pa.Table) -> None:
        if rows.num_rows:
            self.writer._raw.write(rows, "upsert" if self.table.primary_keys else "insert")

    def delete_keys(self, rows: pa.Table) -> None:
        if rows.num_rows:
            # whole rows: a NOT NULL value column cannot take the nulls of a key-only record
            self.writer._raw.write(rows.select(self.table.schema.names), "delete")

    def commit(self, read_snapshot: int | None) -> Committed:
        messages = raw_messages(self.messages())
        try:
            committed: Committed = self.table._raw.commit_dml(messages, self.rewritten, read_snapshot,
                                                              self.writer.commit_user, BATCH_COMMIT_IDENTIFIER)
        except (CommitConflictError, SnapshotExpiredError):
            self.table._raw.discard(messages)  # nothing landed: the files are garbage
            raise
        return committed


@dataclass(frozen=True)
class PreparedChange:
    """A row-level change computed from snapshot ``read_snapshot`` with its files written but not
    committed (picklable): what one task of a distributed job returns. The changes of every task,
    all prepared from the same snapshot on disjoint partitions, are committed together by
    :func:`commit_changes` (or discarded with :meth:`tidelake.Table.discard` of their
    ``messages``)."""

    read_snapshot: int | None
    messages: tuple[CommitMessage, ...]
    #: Planned splits whose files the change rewrites (append tables).
    rewritten: tuple[bytes, ...]
    rows_inserted: int
    rows_updated: int
    rows_deleted: int


@dataclass(frozen=True)
class _Prepare:
    """Compute the change from this snapshot and return it uncommitted; with ``splits``
    (payload, schema id pairs planned from that snapshot), read only those."""

    snapshot_id: int | None
    splits: tuple[tuple[bytes, int], ...] | None = None


def _finish(table: Table, what: str, body: Callable[[_Change, int | None], None],
            prepare: _Prepare | None) -> WriteResult | PreparedChange:
    if prepare is None:
        return run(table, what, body)
    change = _Change(table)
    change.splits = prepare.splits
    try:
        body(change, prepare.snapshot_id)
        messages = change.messages()
    except BaseException:
        change.writer.abort()
        raise
    change.writer.close()
    return PreparedChange(prepare.snapshot_id, tuple(messages), tuple(change.rewritten), change.inserted,
                          change.updated, change.deleted)


def commit_changes(table: Table, changes: list[PreparedChange], commit_user: str | None = None,
                   commit_identifier: int | None = None) -> WriteResult:
    """Commit prepared changes (one per task, same snapshot) as one transaction. With a
    ``commit_identifier``, committing the same (commit_user, identifier) again is a no-op (a
    retried job driver). Raises :class:`CommitConflictError` (nothing landed) when a commit since
    their snapshot conflicts: prepare them again from the latest snapshot."""
    started = time.monotonic()
    changes = list(changes)
    if any(not isinstance(c, PreparedChange) for c in changes):
        raise InvalidArgumentError("commit_changes takes the PreparedChange objects of prepare_* calls")
    snapshots = {c.read_snapshot for c in changes}
    if len(snapshots) > 1:
        raise InvalidArgumentError(f"the changes were prepared from different snapshots {sorted(map(str, snapshots))}")
    messages = check_messages([m for c in changes for m in c.messages])
    user = commit_user or str(uuid.uuid4())
    ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    payloads = raw_messages(messages)
    try:
        committed: Committed = table._raw.commit_dml(payloads, [r for c in changes for r in c.rewritten],
                                                     snapshots.pop() if snapshots else None, user, ident)
    except (CommitConflictError, SnapshotExpiredError):
        table._raw.discard(payloads)
        raise
    return write_result(committed, started, inserted=sum(c.rows_inserted for c in changes),
                        updated=sum(c.rows_updated for c in changes), deleted=sum(c.rows_deleted for c in changes))


def run(table: Table, what: str, body: Callable[[_Change, int | None], None]) -> WriteResult:
    """Run ``body(change, snapshot)`` on the latest snapshot and commit its change atomically;
    a conflict or an expired snapshot starts again from the new latest (nothing landed)."""
    started = time.monotonic()

    def attempt() -> tuple[_Change, Committed]:
        snapshot = table._raw.latest_snapshot_id()
        change = _Change(table)
        try:
            body(change, snapshot)
            committed = change.commit(snapshot)
        except BaseException:
            change.writer.abort()
            raise
        change.writer.close()
        return change, committed

    change, committed = replayed(attempt, table._raw)
    return write_result(committed, started, inserted=change.inserted, updated=change.updated,
                        deleted=change.deleted)


def _planned(table: Table, snapshot: int, tree: Filter | None,
             splits: tuple[tuple[bytes, int], ...] | None) -> Iterator[tuple[bytes, int]]:
    """The splits to read: ``splits`` when given (a task's share), else those the scan plans."""
    if splits is not None:
        yield from splits
        return
    for split in table.pinned_scan(snapshot, filter=tree).splits():
        yield split.payload, split.schema_id


def _target_batches(table: Table, snapshot: int | None, pushdown: Filter | None, restrict: Filter | None,
                    splits: tuple[tuple[bytes, int], ...] | None = None) -> Iterator[pa.Table]:
    """Primary-key tables: the merged rows the pushdown keeps, streamed batch by batch."""
    import pyarrow as pa

    from .scan import _reader

    if snapshot is None:
        return
    tree = all_of([pushdown, restrict])
    text = filter_json(tree)
    for payload, schema_id in _planned(table, snapshot, tree, splits):
        for batch in _reader(table._raw.read_split(payload, schema_id=schema_id, filter_json=text)):
            yield pa.Table.from_batches([batch])


@dataclass(frozen=True)
class _TargetSplit:
    """The live rows of one planned split of an append table; with deletion vectors, each row's
    place (``_FILE_INDEX``: its file in the split, ``_ROW_POSITION``: its position in the file)."""

    payload: bytes
    rows: pa.Table
    places: pa.Table | None


def _target_splits(table: Table, snapshot: int | None, pushdown: Filter | None, restrict: Filter | None,
                   splits: tuple[tuple[bytes, int], ...] | None = None) -> Iterator[_TargetSplit]:
    """Append tables: every planned split whose files may hold matching rows, with all the live
    rows of those files (without deletion vectors they are rewritten whole)."""

    if snapshot is None:
        return
    from .scan import _reader

    positioned = _deletion_vectors(table)
    for payload, schema_id in _planned(table, snapshot, all_of([pushdown, restrict]), splits):
        if not positioned:
            rows = _reader(table._raw.read_split(payload, schema_id=schema_id)).read_all()
            yield _TargetSplit(payload, rows, None)
            continue
        rows = _reader(table._raw.read_split_positions(payload, schema_id)).read_all()
        places = ["_FILE_INDEX", "_ROW_POSITION"]
        yield _TargetSplit(payload, rows.drop_columns(places), rows.select(places))


# ---- delete and update ----------------------------------------------------------------------------

def delete(table: Table, filter: Any, partitions: Any = None,
           prepare: _Prepare | None = None) -> WriteResult | PreparedChange:
    """See :meth:`tidelake.Table.delete`."""
    _check_row_level(table, "delete", deletes=True, updates=False)
    schema = table.schema
    cond = _compile(filter, {"target": dict(zip(schema.names, schema.types))}, schema)

    def drop(rows: pa.Table) -> pa.Table:
        return schema.empty_table()

    body = _filtered(table, "delete", cond, table._partitions_filter(partitions), _Change.delete_keys, drop)
    return _finish(table, "delete", body, prepare)


def _filtered(table: Table, what: str, cond: _Condition, restrict: Filter | None,
              primary_key: Callable[[_Change, pa.Table], None],
              append: Callable[[pa.Table], pa.Table]) -> Callable[[_Change, int | None], None]:
    """A delete or update of the rows ``cond`` selects: on primary-key tables
    ``primary_key(change, matching rows)`` writes them; on append tables the matching rows of
    each split are replaced by ``append(matching rows)`` (:meth:`_Change.replace`)."""

    def body(change: _Change, snapshot: int | None) -> None:
        import pyarrow.compute as pc

        counted = 0
        if table.primary_keys:
            for rows in _target_batches(table, snapshot, cond.pushdown, restrict, change.splits):
                hit = rows.filter(_mask(rows, cond.expression))
                primary_key(change, hit)
                counted += hit.num_rows
        else:
            for split in _target_splits(table, snapshot, cond.pushdown, restrict, change.splits):
                mask = _mask(split.rows, cond.expression)
                n = pc.sum(mask).as_py() or 0
                if n:
                    change.replace(split, mask, append(split.rows.filter(mask)))
                    counted += n
        if what == "delete":
            change.deleted = counted
        else:
            change.updated = counted

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
    _check_row_level(table, "update", deletes=False, updates=True)
    columns = {"target": dict(zip(schema.names, schema.types))}
    cond = _compile(filter, columns, schema)
    values = {c: _value_expression(v, columns, prefixed=False) for c, v in set.items()}
    restrict = table._partitions_filter(partitions)

    def updated_rows(rows: pa.Table) -> pa.Table:
        import pyarrow.compute as pc

        new = _evaluate(rows, {c: values.get(c, pc.field(c)) for c in schema.names})
        out = _conform(new, schema)
        _check_partial_nulls(table, out, list(set))
        return out

    def update_pk(change: _Change, hit: pa.Table) -> None:
        change.upsert(updated_rows(hit))

    return _finish(table, "update", _filtered(table, "update", cond, restrict, update_pk, updated_rows), prepare)


def prepare_delete(table: Table, filter: Any, snapshot_id: int | None, partitions: Any = None,
                   splits: Any = None) -> PreparedChange:
    """:meth:`tidelake.Table.delete` computed from snapshot ``snapshot_id`` (None: the table had
    none) and left uncommitted: one task's share (``partitions``, or the planned ``splits`` of
    that snapshot: :class:`tidelake.scan.Split` objects or (payload, schema id) pairs) of a
    distributed delete."""
    out = delete(table, filter, partitions, _Prepare(snapshot_id, _split_pairs(splits)))
    assert isinstance(out, PreparedChange)
    return out


def prepare_update(table: Table, set: dict[str, Any], filter: Any, snapshot_id: int | None,
                   partitions: Any = None, splits: Any = None) -> PreparedChange:
    """:meth:`tidelake.Table.update` computed from snapshot ``snapshot_id`` and left uncommitted
    (see :func:`prepare_delete`)."""
    out = update(table, set, filter, partitions, _Prepare(snapshot_id, _split_pairs(splits)))
    assert isinstance(out, PreparedChange)
    return out


def _split_pairs(splits: Any) -> tuple[tuple[bytes, int], ...] | None:
    """``splits`` (:class:`tidelake.scan.Split` objects or (payload, schema id) pairs) as pairs."""
    from .scan import Split

    if splits is None:
        return None
    out = []
    for s in splits:
        if isinstance(s, Split):
            out.append((s.payload, s.schema_id))
        elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], bytes):
            out.append((s[0], int(s[1])))
        else:
            raise InvalidArgumentError(f"splits must be Split objects or (payload, schema id) pairs, got {s!r:.80}")
    return tuple(out)


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
                cols = [c for c in ([t.left, t.right] if isinstance(t, exp.EQ) else []) if isinstance(c, exp.Column)]
                if len(cols) != 2:
                    raise InvalidArgumentError(f"merge on {on!r}: only target.col = source.col equalities joined "
                                               "by AND are supported; put other conditions in the clauses")
                by = {(c.table or "").lower(): c.name for c in cols}
                if set(by) != {"target", "source"}:
                    raise InvalidArgumentError(f"merge on {on!r}: qualify each side with target. and source.")
                pairs.append((by["target"], by["source"]))
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
        terms = []
        for t, s in self._on:
            values = pc.unique(self._source.column(s).drop_null())
            if len(values) == 0:
                return And((IsNull(t), IsNull(t, negated=True)))  # no source key: nothing matches
            if len(values) <= _IN_LIST_MAX:
                terms.append((t, "in", values.to_pylist()))
            else:
                bounds = pc.min_max(values)
                terms += [(t, ">=", bounds["min"].as_py()), (t, "<=", bounds["max"].as_py())]
        return to_filter(terms)

    def execute(self) -> WriteResult:
        """Run the merge: one atomic commit. Returns its :class:`~tidelake.write.WriteResult`
        (``rows_inserted``, ``rows_updated``, ``rows_deleted``)."""
        out = self._execute(None)
        assert isinstance(out, WriteResult)
        return out

    def prepare(self, snapshot_id: int | None, splits: Any = None) -> PreparedChange:
        """The merge computed from snapshot ``snapshot_id`` and left uncommitted: one task's share
        (the builder's ``partitions``, or the planned ``splits`` of that snapshot as in
        :func:`prepare_delete`) of a distributed merge; see :func:`commit_changes`."""
        out = self._execute(_Prepare(snapshot_id, _split_pairs(splits)))
        assert isinstance(out, PreparedChange)
        return out

    def _execute(self, prepare: _Prepare | None) -> WriteResult | PreparedChange:
        if not (self._matched or self._not_matched or self._by_source):
            raise InvalidArgumentError("a merge needs at least one when_* clause")
        deletes = any(c.kind == "delete" for c in self._matched + self._by_source)
        updates = any(c.kind == "update" for c in self._matched)
        _check_row_level(self._table, "merge", deletes=deletes, updates=updates)
        restrict = self._table._partitions_filter(self._partitions)
        if restrict is not None:
            self._source = self._source.filter(self._in_partitions(restrict))
        pushdown = self._pushdown()
        return _finish(self._table, "merge", lambda change, snapshot: self._run(change, snapshot, pushdown, restrict),
                       prepare)

    def _run(self, change: _Change, snapshot: int | None, pushdown: Any, restrict: Any) -> None:
        import numpy as np
        import pyarrow as pa

        table = self._table
        source = self._source.append_column("__s", pa.array(np.arange(self._source.num_rows), pa.int64()))
        matched = np.zeros(self._source.num_rows, dtype=bool)
        if table.primary_keys:
            for rows in _target_batches(table, snapshot, pushdown, restrict, change.splits):
                _, updated, deleted = self._apply(rows, source, matched)
                change.upsert(updated)
                change.delete_keys(deleted)
                change.updated += updated.num_rows
                change.deleted += deleted.num_rows
        else:
            for split in _target_splits(table, snapshot, pushdown, restrict, change.splits):
                changed, updated, deleted = self._apply(split.rows, source, matched)
                if updated.num_rows or deleted.num_rows:
                    change.replace(split, changed, updated)
                    change.updated += updated.num_rows
                    change.deleted += deleted.num_rows
        inserted = self._inserts(source.filter(pa.array(~matched)))
        change.upsert(inserted)
        change.inserted += inserted.num_rows

    def _apply(self, rows: pa.Table, source: pa.Table, matched: Any) -> tuple[pa.Array, pa.Table, pa.Table]:
        """One batch of target rows: (which rows change, their updated rows, the deleted rows)."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        schema = self._table.schema
        n = rows.num_rows
        targets = rows.append_column("__t", pa.array(np.arange(n), pa.int64()))
        left = targets.select([t for t, _ in self._on] + ["__t"])
        right = source.select(list(dict.fromkeys(s for _, s in self._on)) + ["__s"])
        right = right.rename_columns([f"__r_{c}" for c in right.column_names[:-1]] + ["__s"])
        pairs = left.join(right, keys=[t for t, _ in self._on], right_keys=[f"__r_{s}" for _, s in self._on],
                          join_type="inner", use_threads=False).select(["__t", "__s"])
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
