"""A filesystem catalog laid out as Paimon's: ``<warehouse>/<database>.db/<table>/``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import _internal
from .table import Table, _schema_of, _storage_options

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Catalog"]


class Catalog:
    """Databases and tables under one warehouse directory, compatible with Paimon's
    filesystem catalog (``CatalogFactory.create({"warehouse": ...})`` in pypaimon)."""

    def __init__(self, warehouse: str | os.PathLike[str], storage_options: dict[str, str] | None = None) -> None:
        """``warehouse`` is a directory or an object-store URL; ``storage_options`` as for
        :func:`tidelake.open_table`."""
        self._raw = _internal.RawCatalog(os.fspath(warehouse), _storage_options(storage_options))

    @property
    def warehouse(self) -> str:
        return self._raw.location

    def list_databases(self) -> list[str]:
        return self._raw.list_databases()

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        """Raises TableAlreadyExistsError if it exists (unless ``ignore_if_exists``)."""
        self._raw.create_database(name, ignore_if_exists)

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """Drop a database; a non-empty one needs ``cascade=True``."""
        self._raw.drop_database(name, cascade)

    def list_tables(self, database: str) -> list[str]:
        return self._raw.list_tables(database)

    def get_table(self, identifier: str) -> Table:
        """Open ``"database.table"``, or a branch of it as ``"database.table$branch_NAME"``
        (Paimon's identifier). Raises TableNotFoundError."""
        return Table(self._raw.get_table(identifier))

    def create_table(self, identifier: str, schema: pa.Schema, primary_keys: list[str] | None = None,
                     partition_keys: list[str] | None = None, bucket: int | None = None,
                     options: dict[str, str] | None = None, comment: str | None = None) -> Table:
        """Create ``"database.table"`` (the database must exist); see :func:`tidelake.create_table`."""
        raw = self._raw.create_table(identifier, _schema_of(schema), list(primary_keys or []),
                                     list(partition_keys or []), bucket,
                                     [(str(k), str(v)) for k, v in (options or {}).items()], comment)
        return Table(raw)

    def drop_table(self, identifier: str) -> None:
        """Delete a table and all its files."""
        self._raw.drop_table(identifier)
