"""Planned reads: :class:`Scan` and its picklable :class:`Split` units of work."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _internal

if TYPE_CHECKING:
    import pyarrow as pa

    from .write import Progress

__all__ = ["Scan", "Split", "NativeFile", "NativeRead"]


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


@dataclass(frozen=True)
class NativeFile:
    """A data file a reader other than the engine (Spark's Parquet reader) reads to the
    engine's rows: its rows by value column name, less those whose ``_VALUE_KIND`` is -U or -D
    when ``drop_retracts``, less the positions :meth:`NativeRead.deleted_positions` gives when
    ``has_deletion_vector``."""

    #: Path relative to the table's root.
    path: str
    file_name: str
    file_size: int
    row_count: int
    drop_retracts: bool
    #: The engine's reference to the file's deletion vector (opaque), None without one.
    deletion: dict[str, Any] | None

    @property
    def has_deletion_vector(self) -> bool:
        return self.deletion is not None

    @property
    def deleted_rows(self) -> int | None:
        """How many positions the deletion vector deletes, when the table recorded it."""
        return None if self.deletion is None else self.deletion.get("cardinality")

    def _json(self) -> dict[str, Any]:
        return {"path": self.path, "file_name": self.file_name, "file_size": self.file_size,
                "row_count": self.row_count, "drop_retracts": self.drop_retracts, "deletion": self.deletion}


@dataclass(frozen=True)
class NativeRead:
    """How a planned scan divides between native reads and the engine (see
    :meth:`Scan.native_read`): its rows are the rows of ``files``, plus the rows of ``base``
    whose primary key is in no file of ``delta``, plus the rows of the ``engine`` splits. Native
    files give all their rows: apply the scan's filter to them (the engine splits apply it)."""

    files: list[NativeFile] = field(default_factory=list)
    base: list[NativeFile] = field(default_factory=list)
    delta: list[NativeFile] = field(default_factory=list)
    engine: list[Split] = field(default_factory=list)
    _table: Any = None

    def deleted_positions(self, files: list[NativeFile]) -> pa.Table:
        """The positions the deletion vectors of ``files`` delete, as a table
        ``(file_name string, position int64)``."""
        return self._table.deleted_positions(json.dumps([f._json() for f in files]))


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
        return [self._split(payload, count) for payload, count in zip(self._raw.splits(), self._raw.split_row_counts())]

    def _split(self, payload: bytes, row_count: int) -> Split:
        storage_options = tuple(sorted(self._table.storage_options.items()))
        return Split(self._table.location, self._raw.schema_id, self._columns, self._filter_json,
                     self._with_row_kind, row_count, payload, storage_options, self._table.branch)

    def native_read(self, target_size: int | None = None, open_file_cost: int | None = None, *,
                    joins: bool = False) -> NativeRead:
        """Which data files of this scan readers other than the engine read natively, and which
        splits only the engine reads (those packed to ``target_size`` bytes, default the table's
        ``source.split.target-size``, each file weighing at least ``open_file_cost``, default
        ``source.split.open-file-cost``). ``joins``: the reader removes deleted rows by joins,
        so files with a deletion vector and base/delta buckets are native too (else the engine
        reads them). Batch scans only."""
        if self._with_row_kind:
            raise ValueError("native reads are for batch scans, not change scans")
        out = NativeRead(_table=self._table)

        def native(files: list[dict[str, Any]]) -> list[NativeFile]:
            return [NativeFile(**f) for f in files]

        def split(raw: dict[str, Any]) -> Split:
            return self._split(json.dumps(raw).encode(), sum(f["row_count"] for f in raw["files"]))

        for unit in json.loads(self._raw.native_units(target_size, open_file_cost, joins=joins)):
            if unit["kind"] == "files":
                out.files.extend(native(unit["files"]))
            elif unit["kind"] == "base_delta":
                out.base.extend(native(unit["base"]))
                out.delta.extend(native(unit["delta"]))
                out.engine.append(split(unit["merge"]))
            else:
                out.engine.append(split(unit["split"]))
        return out

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
