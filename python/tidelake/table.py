"""The :class:`Table` API: metadata, reads and writes of one Paimon table."""

from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING

from . import _internal
from ._metadata import SchemaVersion, Snapshot, Tag

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Table", "open_table"]


def open_table(path: str | os.PathLike[str]) -> "Table":
    """Open the Paimon table at ``path`` (a directory holding ``schema/``, ``snapshot/``...).

    Raises:
        TableNotFoundError: nothing at ``path`` looks like a Paimon table.
        CorruptMetadataError: the latest schema file cannot be parsed.
    """
    return Table(_internal.RawTable.open(os.fspath(path)))


class Table:
    """A Paimon table. Obtain one with :func:`open_table`."""

    def __init__(self, raw: "_internal.RawTable") -> None:
        self._raw = raw

    def __repr__(self) -> str:
        kind = "primary-key" if self.primary_keys else "append"
        return f"<tidelake.Table {self.path!r} ({kind})>"

    @property
    def path(self) -> str:
        """The table's root location."""
        return self._raw.location

    @cached_property
    def _schema_version(self) -> SchemaVersion:
        return SchemaVersion.from_json(self._raw.schema_json())

    @cached_property
    def schema(self) -> "pa.Schema":
        """The latest schema as a :class:`pyarrow.Schema`."""
        return self._raw.arrow_schema()

    @property
    def schema_id(self) -> int:
        """Id of the latest schema."""
        return self._schema_version.id

    @property
    def primary_keys(self) -> list[str]:
        return list(self._schema_version.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self._schema_version.partition_keys)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._schema_version.options)

    def schemas(self) -> list[SchemaVersion]:
        """Every schema version, oldest first."""
        return [SchemaVersion.from_json(s) for s in self._raw.schemas_json()]

    def snapshots(self) -> list[Snapshot]:
        """Every retained snapshot, oldest first."""
        return [Snapshot.from_json(s) for s in self._raw.snapshots_json()]

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """One snapshot. Raises TableNotFoundError naming the available range if it is absent."""
        return Snapshot.from_json(self._raw.snapshot_json(snapshot_id))

    def latest_snapshot(self) -> Snapshot | None:
        """The latest snapshot, or None for a table never written to."""
        sid = self._raw.latest_snapshot_id()
        return None if sid is None else self.snapshot(sid)

    def tags(self) -> list[Tag]:
        """Every tag, sorted by name."""
        return [Tag.from_json(name, text) for name, text in self._raw.tags_json()]
