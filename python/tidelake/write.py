"""Writing: :class:`TableWriter` (files + commit messages, usable in any process) and
:class:`CommitMessage` (picklable), the two phases distributed engines need."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from .table import Table

__all__ = ["CommitMessage", "TableWriter", "arrow_input"]


def arrow_input(data: Any) -> Any:
    """Anything tidelake accepts as rows, as an Arrow producer (C stream or C array).

    Accepted: objects exposing ``__arrow_c_stream__``/``__arrow_c_array__`` (pyarrow Table,
    RecordBatch, RecordBatchReader, polars DataFrame...), pandas DataFrames, a list of dicts
    (rows) or a dict of lists (columns).
    """
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        return data
    import pyarrow as pa

    module = type(data).__module__
    if module.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, list):
        return pa.Table.from_pylist(data)
    if isinstance(data, dict):
        return pa.table(data)
    raise InvalidArgumentError(f"cannot write a {type(data).__name__}: give a pyarrow/polars/pandas table or batches")


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

    def __init__(self, table: "Table", commit_user: str | None = None) -> None:
        self._table = table
        self.commit_user = commit_user or str(uuid.uuid4())
        self._raw = table._raw.writer()

    def write(self, data: Any) -> None:
        """Insert rows (on primary-key tables: upsert by key)."""
        kind = "rowkind_field" if self._table.options.get("rowkind.field") else "insert"
        self._raw.write(arrow_input(data), kind)

    def upsert(self, data: Any) -> None:
        """Insert or replace rows by primary key (merged with the table's merge engine)."""
        self._raw.write(arrow_input(data), "upsert")

    def delete(self, data: Any) -> None:
        """Delete rows by primary key; ``data`` needs at least the key columns."""
        self._raw.write(arrow_input(data), "delete")

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything written so far and return the messages to commit."""
        return [CommitMessage(p, self.commit_user) for p in self._raw.prepare_commit()]

    def abort(self) -> None:
        """Delete the files written since the last ``prepare_commit`` and close."""
        self._raw.abort()

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> "TableWriter":
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
    out = list(messages)
    for m in out:
        if not isinstance(m, CommitMessage):
            raise InvalidArgumentError(f"expected CommitMessage objects, got {type(m).__name__}")
    return out


BATCH_COMMIT_IDENTIFIER = 2**63 - 1
"""Identifier of one-off (batch) commits, as in Paimon."""


def raw_messages(messages: list[CommitMessage]) -> list[bytes]:
    return [m.payload for m in messages]


