"""Planned reads: :class:`Scan` and its picklable :class:`Split` units of work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _internal

if TYPE_CHECKING:
    import pyarrow as pa

    from .write import Progress

__all__ = ["Scan", "Split"]


def _reader(batches: _internal.RawBatches) -> pa.RecordBatchReader:
    """A RecordBatchReader over an engine stream; errors keep their tidelake exception types."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_batches(batches.arrow_schema(), batches)


@dataclass(frozen=True)
class Split:
    """One (partition, bucket) of a planned read. Picklable: ship it to any process and read it
    there with :meth:`Split.read` (or :meth:`Scan.read`)."""

    table_path: str
    schema_id: int
    columns: tuple[str, ...] | None
    filter_json: str | None
    with_row_kind: bool
    row_count: int
    payload: bytes
    #: The table's storage options, as sorted ``(key, value)`` pairs (credentials included).
    storage_options: tuple[tuple[str, str], ...] = ()
    #: The branch the table was read on.
    branch: str = "main"

    def read(self, batch_size: int | None = None) -> pa.RecordBatchReader:
        """Stream this split's rows (merged for primary-key tables) in batches of at most
        ``batch_size`` rows (default: the engine's 8,192)."""
        raw = _internal.RawTable.open(self.table_path, dict(self.storage_options), self.branch)
        return _reader(raw.read_split(
            self.payload,
            schema_id=self.schema_id,
            columns=list(self.columns) if self.columns is not None else None,
            filter_json=self.filter_json,
            with_row_kind=self.with_row_kind,
            batch_size=batch_size,
        ))


class Scan:
    """A planned read of one snapshot (or of a range of changes).

    Planning happened when the scan was created: the snapshot is fixed, so every method reads
    the same data. A scan is an Arrow stream producer (``__arrow_c_stream__``): polars, duckdb
    and pyarrow consume it without copies.
    """

    def __init__(self, raw_table: _internal.RawTable, raw_scan: _internal.RawScan,
                 columns: list[str] | None, filter_json: str | None, with_row_kind: bool) -> None:
        self._table = raw_table
        self._raw = raw_scan
        self._columns = tuple(columns) if columns is not None else None
        self._filter_json = filter_json
        self._with_row_kind = with_row_kind

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot read (for change scans, the last one); None for an empty table."""
        return self._raw.snapshot_id

    @property
    def schema(self) -> pa.Schema:
        return self._raw.arrow_schema()

    def splits(self) -> list[Split]:
        """The units of work, for distributed readers."""
        storage_options = tuple(sorted(self._table.storage_options.items()))
        return [
            Split(self._table.location, self._raw.schema_id, self._columns, self._filter_json,
                  self._with_row_kind, count, payload, storage_options, self._table.branch)
            for payload, count in zip(self._raw.splits(), self._raw.split_row_counts())
        ]

    def read(self, split: Split) -> pa.RecordBatchReader:
        """Stream one split's rows."""
        return _reader(self._raw.read_split(split.payload))

    def to_reader(self, progress: Progress | None = None) -> pa.RecordBatchReader:
        """Stream every split's rows. ``progress``: see :data:`tidelake.write.Progress`."""
        return _reader(self._raw.batches(progress))

    def to_arrow(self, progress: Progress | None = None) -> pa.Table:
        """Read everything into a :class:`pyarrow.Table`. ``progress``: see
        :data:`tidelake.write.Progress`."""
        return self._raw.to_table(progress)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)
