"""tidelake: a lake-table engine for Python and Spark that speaks Apache Paimon's format."""

from __future__ import annotations

from ._internal import __version__
from ._metadata import SchemaVersion, Snapshot, Tag
from .catalog import Catalog
from .exceptions import (
    CommitConflictError,
    CorruptMetadataError,
    ForkSafetyError,
    InternalError,
    InvalidArgumentError,
    SchemaMismatchError,
    SnapshotExpiredError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TidelakeError,
    UnsupportedError,
)
from .table import Table, create_table, open_table
from .write import CommitMessage, TableWriter

__all__ = [
    "__version__",
    "open_table",
    "create_table",
    "Catalog",
    "TableWriter",
    "CommitMessage",
    "Table",
    "Snapshot",
    "Tag",
    "SchemaVersion",
    "TidelakeError",
    "TableNotFoundError",
    "SnapshotExpiredError",
    "TableAlreadyExistsError",
    "CorruptMetadataError",
    "SchemaMismatchError",
    "CommitConflictError",
    "UnsupportedError",
    "InvalidArgumentError",
    "StorageError",
    "ForkSafetyError",
    "InternalError",
]
