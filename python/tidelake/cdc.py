"""Change data capture: database changelogs in Debezium, Canal, Maxwell or OGG JSON decoded into
changelog batches (:func:`decode`) and synchronised into tables (:func:`sync`), as Paimon's
``kafka_sync_table`` / ``kafka_sync_database`` actions do.

The formats are parsed by the Rust engine (``tidelake_core::cdc``); this module routes source
tables to target tables, creates and evolves them, and commits.

A sync call, for each target table:

1. creates the table on first sight (primary keys from the messages, or ``primary_keys``;
   ``partition_keys``, ``bucket`` and ``options`` given once, at creation);
2. evolves its schema to take the decoded rows: source columns it lacks are added (nullable),
   wider source types widen the column where Paimon allows it, a type change Paimon cannot make
   raises :class:`SchemaMismatchError` before anything of that table is written. Columns the
   source dropped stay, and new rows hold null there;
3. writes every row with its kind (``+I``, ``-U``, ``+U``, ``-D``) and commits once.

The schema change is committed before the data, never after: data is never committed against
a schema that lacks its columns, and if the data commit fails the table only gained nullable
columns (or wider types), which changes no row. With ``commit_identifier`` (and
``commit_user``) each table's commit is exactly-once: a call repeated after a failure skips the
tables whose commit already landed and commits the others.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from . import _internal
from .catalog import Catalog
from .exceptions import InvalidArgumentError, TableAlreadyExistsError, TableNotFoundError
from .table import Table
from .write import BATCH_COMMIT_IDENTIFIER, TableWriter

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["FORMATS", "ROW_KIND_COLUMN", "SourceChanges", "DeadLetter", "Decoded", "SyncResult", "decode", "sync"]

Format = Literal["debezium-json", "canal-json", "maxwell-json", "ogg-json"]
"""The message formats, named as Paimon's ``value.format`` option names them."""
FORMATS: tuple[str, ...] = get_args(Format)
OnError = Literal["fail", "dead_letter"]
"""What a malformed message does: raise, or go to the dead letters."""

ROW_KIND_COLUMN = "_row_kind"
"""The column of decoded batches holding each row's kind (``+I``, ``-U``, ``+U``, ``-D``)."""

Message = str | bytes | None | tuple[str | bytes | None, str | bytes | None]
"""A message value (``None`` or empty: a tombstone), or a ``(key, value)`` pair as Kafka gives
them (Debezium's key names the primary key when the value does not)."""


@dataclass(frozen=True)
class SourceChanges:
    """The decoded rows of one source table."""

    database: str
    table: str
    primary_keys: list[str]
    """Named by the messages (Debezium ``pkNames`` or key, Canal ``pkNames``, Maxwell
    ``primary_key_columns``, OGG ``primary_keys``); empty when none did."""
    batch: pa.RecordBatch
    """:data:`ROW_KIND_COLUMN` then the source columns, typed from the messages (``pa.null()``
    for a column of schemaless messages that only held nulls so far)."""


@dataclass(frozen=True)
class DeadLetter:
    """A malformed message (``on_error="dead_letter"``): its index in the input, its key and
    value as given, and what is wrong with it."""

    index: int
    key: bytes | None
    value: bytes | None
    error: str


@dataclass(frozen=True)
class Decoded:
    tables: list[SourceChanges]
    dead_letters: list[DeadLetter]
    ignored: list[tuple[int, str]]
    """Well-formed messages without row changes (tombstones, DDL, truncates): (index, why)."""


@dataclass
class SyncResult:
    """What :func:`sync` did."""

    snapshots: dict[str, int | None] = field(default_factory=dict)
    """Per target table: the last snapshot committed (None when the commit already existed)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Per target table: the changelog rows written (before images included)."""
    created: list[str] = field(default_factory=list)
    evolved: list[str] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    ignored: list[tuple[int, str]] = field(default_factory=list)


def _bytes(part: str | bytes | None) -> bytes | None:
    if part is None or isinstance(part, bytes):
        return part
    if isinstance(part, (bytearray, memoryview)):
        return bytes(part)
    if isinstance(part, str):
        return part.encode()
    raise InvalidArgumentError(f"a message part must be str, bytes or None, got {type(part).__name__}")


def _pairs(messages: Iterable[Message]) -> list[tuple[bytes | None, bytes | None]]:
    out = []
    for m in messages:
        if isinstance(m, tuple):
            if len(m) != 2:
                raise InvalidArgumentError("a message tuple must be (key, value)")
            out.append((_bytes(m[0]), _bytes(m[1])))
        else:
            out.append((None, _bytes(m)))
    return out


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise InvalidArgumentError(f"unknown CDC format {format!r}; formats are {', '.join(FORMATS)}")


def _decode_pairs(pairs: list[tuple[bytes | None, bytes | None]], format: str, on_error: str) -> Decoded:
    _check_format(format)
    tables, dead, ignored = _internal.cdc_decode(pairs, format, on_error)
    return Decoded(
        tables=[SourceChanges(db, name, list(pks), batch) for db, name, pks, batch in tables],
        dead_letters=[DeadLetter(i, pairs[i][0], pairs[i][1], error) for i, error in dead],
        ignored=list(ignored),
    )


def decode(messages: Iterable[Message], format: Format = "debezium-json", on_error: OnError = "fail") -> Decoded:
    """Decode change messages of ``format`` (one of :data:`FORMATS`) into one
    :class:`SourceChanges` per source table.

    ``on_error="fail"`` raises :class:`InvalidArgumentError` naming the first malformed message's
    index and problem; ``"dead_letter"`` returns malformed messages in
    :attr:`Decoded.dead_letters` and decodes the rest. A malformed message contributes no row.
    """
    return _decode_pairs(_pairs(messages), format, on_error)


TableMapping = str | Mapping[str, str] | Callable[[str, str], str] | None


def _target_name(mapping: TableMapping, database: str, table: str) -> str:
    if mapping is None:
        return f"{database}.{table}"
    if isinstance(mapping, str):
        return mapping.format(database=database, table=table)
    if isinstance(mapping, Mapping):
        return mapping.get(f"{database}.{table}", f"{database}.{table}")
    return mapping(database, table)


def _keys_for(primary_keys: Any, source: SourceChanges) -> list[str]:
    if source.primary_keys:
        return source.primary_keys
    if isinstance(primary_keys, Mapping):
        keys = primary_keys.get(f"{source.database}.{source.table}")
    else:
        keys = primary_keys
    if not keys:
        raise InvalidArgumentError(
            f"the messages of {source.database}.{source.table} name no primary key; pass primary_keys=")
    return list(keys)


def _get_or_create(catalog: Catalog, identifier: str, create: Callable[[], Table]) -> tuple[Table, bool]:
    """The table ``identifier``, or ``create()``'s (its database created first) when missing;
    True if created here."""
    try:
        return catalog.get_table(identifier), False
    except TableNotFoundError:
        pass
    catalog.create_database(identifier.split(".", 1)[0], ignore_if_exists=True)
    try:
        return create(), True
    except TableAlreadyExistsError:  # another sync created it first
        return catalog.get_table(identifier), False


def _target_table(catalog: Catalog, identifier: str, source: SourceChanges, primary_keys: Any,
                  partition_keys: list[str] | None, bucket: int | None, options: dict[str, str] | None,
                  result: SyncResult) -> Table:
    import pyarrow as pa

    def schema() -> pa.Schema:
        # columns that only held nulls have no type yet: sync adds them once they have one
        fields = source.batch.schema
        return pa.schema([f for f in fields if f.name != ROW_KIND_COLUMN and not pa.types.is_null(f.type)])

    def create() -> Table:
        return catalog.create_table(identifier, schema(), primary_keys=_keys_for(primary_keys, source),
                                    partition_keys=partition_keys, bucket=bucket, options=options)

    table, created = _get_or_create(catalog, identifier, create)
    if created:
        result.created.append(identifier)
    return table


def sync(target: Catalog | Table, messages: Iterable[Message], format: Format = "debezium-json", *,
         table_mapping: TableMapping = None, primary_keys: list[str] | Mapping[str, list[str]] | None = None,
         partition_keys: list[str] | None = None, bucket: int | None = None,
         options: dict[str, str] | None = None, commit_identifier: int | None = None,
         commit_user: str | None = None, on_error: OnError = "fail",
         dead_letter_table: Table | str | None = None) -> SyncResult:
    """Apply change messages to tables: one commit per target table.

    Args:
        target: a :class:`Catalog` (whole-database sync: each source table goes to the table
            ``table_mapping`` names, created on first sight) or a :class:`Table` (every source
            table goes into it; it must exist).
        messages: message values, or ``(key, value)`` pairs (see :data:`Message`).
        format: one of :data:`FORMATS`.
        table_mapping: source ``(database, table)`` to a ``"db.table"`` identifier: a format
            string such as ``"ods.{database}_{table}"``, a dict ``{"src_db.src_table": "db.t"}``
            (others keep their names), or a function. Default: the same names.
        primary_keys: for source tables whose messages name no key: a list for all, or a dict
            per ``"src_db.src_table"``.
        partition_keys, bucket, options: of tables created here.
        commit_identifier, commit_user: exactly-once: each table commits as this pair, and a
            table that already has it is skipped (give both, e.g. a stream's batch id and a
            name stable across restarts).
        on_error: ``"fail"`` (a malformed message raises, nothing is written) or
            ``"dead_letter"`` (malformed messages are left out and returned, and written to
            ``dead_letter_table`` when given: an append table created with columns
            ``message_index``, ``message_key``, ``message``, ``error``).

    Raises:
        InvalidArgumentError: a malformed message (``on_error="fail"``), no primary key for a
            new table, a bad mapping.
        SchemaMismatchError: a source type change Paimon cannot apply to the table.
    """
    if (commit_identifier is None) != (commit_user is None):
        raise InvalidArgumentError("give both commit_identifier and commit_user, or neither")
    if isinstance(dead_letter_table, str) and not isinstance(target, Catalog):
        raise InvalidArgumentError("dead_letter_table must be a Table when the target is a Table")
    user = commit_user or str(uuid.uuid4())
    ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else int(commit_identifier)
    pairs = _pairs(messages)
    decoded = _decode_pairs(pairs, format, on_error)
    result = SyncResult(dead_letters=decoded.dead_letters, ignored=decoded.ignored)
    groups: dict[str, list[SourceChanges]] = {}
    tables: dict[str, Table] = {}
    for source in decoded.tables:
        if isinstance(target, Table):
            name = target.path
            tables[name] = target
        elif isinstance(target, Catalog):
            name = _target_name(table_mapping, source.database, source.table)
            if "." not in name:
                raise InvalidArgumentError(f"table_mapping gave {name!r}; expected 'database.table'")
            if name not in tables:
                tables[name] = _target_table(target, name, source, primary_keys, partition_keys, bucket,
                                             options, result)
        else:
            raise InvalidArgumentError(f"target must be a Catalog or a Table, got {type(target).__name__}")
        groups.setdefault(name, []).append(source)
    for name, sources in groups.items():
        _apply(tables[name], name, sources, user, ident, commit_identifier is not None, result)
    if dead_letter_table is not None and decoded.dead_letters:
        _write_dead_letters(target, dead_letter_table, decoded.dead_letters, user, ident,
                            commit_identifier is not None, result)
    return result


def _commit_once(table: Table, write: Callable[[TableWriter], None], user: str, ident: int,
                 exactly_once: bool) -> list[int] | None:
    """Write with ``write`` and commit as (``user``, ``ident``); None when that commit exists."""
    if exactly_once and table.is_committed(ident, user):
        return None
    writer = TableWriter(table, user)
    try:
        write(writer)
        ids = table.commit(writer.prepare_commit(), ident, user)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return ids


def _apply(table: Table, name: str, sources: list[SourceChanges], user: str, ident: int, exactly_once: bool,
           result: SyncResult) -> None:
    if exactly_once and table.is_committed(ident, user):
        result.snapshots[name] = None
        return
    schema_id = table.schema_id
    for source in sources:  # schema first: a failed data commit leaves only nullable columns added
        table._replace(table._raw.cdc_evolve(source.batch.schema))
    if table.schema_id != schema_id:
        result.evolved.append(name)

    def write(writer: TableWriter) -> None:
        for source in sources:
            writer._raw.write(source.batch, "changelog")

    ids = _commit_once(table, write, user, ident, exactly_once)
    result.snapshots[name] = ids[-1] if ids else None
    result.rows[name] = sum(s.batch.num_rows for s in sources)


def _write_dead_letters(target: Catalog | Table, where: Table | str, letters: list[DeadLetter], user: str,
                        ident: int, exactly_once: bool, result: SyncResult) -> None:
    import pyarrow as pa

    data = pa.table({
        "message_index": pa.array([d.index for d in letters], pa.int64()),
        "message_key": pa.array([d.key for d in letters], pa.binary()),
        "message": pa.array([d.value for d in letters], pa.binary()),
        "error": pa.array([d.error for d in letters], pa.string()),
    })
    if isinstance(where, Table):
        table = where
    else:
        assert isinstance(target, Catalog)  # checked by sync
        catalog = target
        table, _ = _get_or_create(catalog, where, lambda: catalog.create_table(where, data.schema))
    ids = _commit_once(table, lambda w: w.write(data), user, ident, exactly_once)
    result.snapshots[where if isinstance(where, str) else where.path] = ids[-1] if ids else None
