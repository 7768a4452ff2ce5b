"""tidelake: a lake-table engine for Python and Spark that speaks Apache Paimon's format."""

from __future__ import annotations

import logging as _logging

from ._internal import __version__, reset_logging
from ._metadata import Partition, SchemaVersion, Snapshot, Tag
from .catalog import Catalog
from .dml import MergeBuilder
from .exceptions import (
    CommitConflictError,
    CorruptMetadataError,
    ExpectationError,
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
from .query import sql, sql_reader
from .stage import Stage
from .table import Table, create_table, open_table, write_table
from .write import CommitMessage, TableWriter, WriteResult

# Events (commits and their retries, expiry, compaction) go to the "tidelake" loggers; silent
# unless the application configures logging.
_logging.getLogger("tidelake").addHandler(_logging.NullHandler())

__all__ = [
    "__version__",
    "reset_logging",
    "open_table",
    "create_table",
    "write_table",
    "sql",
    "sql_reader",
    "Catalog",
    "TableWriter",
    "CommitMessage",
    "WriteResult",
    "MergeBuilder",
    "Table",
    "Stage",
    "Snapshot",
    "Tag",
    "Partition",
    "SchemaVersion",
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
