"""Type stubs for ``tidelake._internal``, the PyO3 binding of the Rust engine.

The binding holds no table logic: ``tidelake.table`` and ``tidelake.scan`` wrap it. Metadata
crosses as Paimon's own JSON text, data as pyarrow objects (through the Arrow C data
interface), filters as JSON filter trees (see ``tidelake._filters``) and splits as opaque bytes.
Every storage call releases the GIL. Engine errors raise the typed exceptions of
``tidelake.exceptions`` (``TableNotFoundError``, ``CorruptMetadataError``,
``InvalidArgumentError``...).

Kept in sync with ``crates/tidelake-python/src`` by ``tests/test_read_api.py``, which checks
that every name and parameter here exists at runtime and vice versa.
"""

from typing import final

import pyarrow as pa

__version__: str
"""The crate version of the extension (``CARGO_PKG_VERSION``)."""

@final
class RawTable:
    """An opened Paimon table. Obtain one with :meth:`RawTable.open`; not constructible."""

    @staticmethod
    def open(location: str) -> RawTable:
        """Open the table at ``location`` (a local path or an object-store URL).

        Raises ``TableNotFoundError`` if nothing there looks like a Paimon table and
        ``CorruptMetadataError`` if the latest schema cannot be parsed.
        """

    @property
    def location(self) -> str:
        """The table's root location."""

    def schema_json(self) -> str:
        """The latest schema as Paimon JSON (the text of ``schema/schema-N``)."""

    def arrow_schema(self) -> pa.Schema:
        """The latest schema as a pyarrow schema."""

    def schemas_json(self) -> list[str]:
        """Every schema version as Paimon JSON, ascending by id."""

    def snapshots_json(self) -> list[str]:
        """Every snapshot as Paimon JSON, ascending by id."""

    def snapshot_json(self, id: int) -> str:
        """One snapshot as Paimon JSON; ``TableNotFoundError`` naming the range if absent."""

    def latest_snapshot_id(self) -> int | None:
        """The latest snapshot id, or None for a table never written to."""

    def tags_json(self) -> list[tuple[str, str]]:
        """Every tag as ``(name, Paimon tag JSON)``, sorted by name."""

    def scan(
        self,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        batch_size: int | None = None,
        options: list[tuple[str, str]] | None = None,
    ) -> RawScan:
        """Plan a batch scan of one snapshot (latest unless one of ``snapshot_id``, ``tag`` or
        ``timestamp_ms`` is given; at most one may be). ``options`` override table options for
        this read only."""

    def changes(
        self,
        start_snapshot: int,
        end_snapshot: int | None = None,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        batch_size: int | None = None,
    ) -> RawScan:
        """Plan a read of the changes committed by snapshots ``(start_snapshot, end_snapshot]``
        (up to the latest by default); rows carry a leading ``_row_kind`` column."""

    def read_split(
        self,
        split: bytes,
        schema_id: int,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        with_row_kind: bool = False,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """Read one split produced by :meth:`RawScan.splits` (possibly planned in another
        process) in the schema ``schema_id``, without planning again."""

@final
class RawScan:
    """A planned read (batch scan or change scan). Created by :meth:`RawTable.scan` and
    :meth:`RawTable.changes`; not constructible."""

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot read (for change scans the last one), or None for an empty table."""

    @property
    def schema_id(self) -> int:
        """Id of the schema rows are read in."""

    def arrow_schema(self) -> pa.Schema:
        """The pyarrow schema of the rows this scan yields."""

    def splits(self) -> list[bytes]:
        """The planned splits, each serialised to opaque bytes."""

    def split_row_counts(self) -> list[int]:
        """Row count of each split before merging, in the order of :meth:`splits`."""

    def to_reader(self) -> pa.RecordBatchReader:
        """Stream every split's rows."""

    def to_table(self) -> pa.Table:
        """Read every split into one table."""

    def read_split(self, split: bytes) -> pa.RecordBatchReader:
        """Stream the rows of one split produced by :meth:`splits`."""
