"""Typed exceptions raised by tidelake.

Every error tidelake raises derives from :class:`TidelakeError`. Each class also derives from
the closest built-in exception, so ``except FileNotFoundError`` or ``except ValueError`` keep
working for callers that do not know tidelake's types.
"""

from __future__ import annotations

__all__ = [
    "TidelakeError",
    "TableNotFoundError",
    "SnapshotExpiredError",
    "TableAlreadyExistsError",
    "CorruptMetadataError",
    "SchemaMismatchError",
    "CommitConflictError",
    "ExpectationError",
    "UnsupportedError",
    "InvalidArgumentError",
    "StorageError",
    "ForkSafetyError",
    "InternalError",
]


class TidelakeError(Exception):
    """Base class of every tidelake error."""


class TableNotFoundError(TidelakeError, FileNotFoundError):
    """The table, or the snapshot, tag or schema asked for, does not exist."""


class SnapshotExpiredError(TableNotFoundError):
    """The snapshot being read was expired (its files deleted) while it was read.

    Plan the read again: it then sees a newer snapshot. Raise ``snapshot.time-retained`` or
    ``snapshot.num-retained.min`` if long reads keep meeting this.
    """


class TableAlreadyExistsError(TidelakeError, FileExistsError):
    """Something being created (table, tag, database) already exists."""


class CorruptMetadataError(TidelakeError):
    """A metadata or data file is not valid Paimon (truncated, garbled, wrong version)."""


class SchemaMismatchError(TidelakeError, ValueError):
    """Data does not fit the table schema (missing column, lossy cast, null key...)."""


class CommitConflictError(TidelakeError):
    """A concurrent commit won the race and retries were exhausted; re-read and retry."""


class ExpectationError(TidelakeError, AssertionError):
    """An expectation of a write-audit-publish stage failed (row count, nulls, a check over its
    changes); the stage was not published."""


class UnsupportedError(TidelakeError, NotImplementedError):
    """A valid Paimon feature tidelake does not implement."""


class InvalidArgumentError(TidelakeError, ValueError):
    """A bad argument: unknown column in a filter, bad option value, bad snapshot id..."""


class StorageError(TidelakeError, OSError):
    """The storage layer failed (I/O error, permissions, network)."""


class ForkSafetyError(TidelakeError, RuntimeError):
    """tidelake was used in a process forked after its runtime started."""


class InternalError(TidelakeError, RuntimeError):
    """A bug in tidelake (an engine task panicked). The table stays as its last commit left it."""
