"""A :class:`pyarrow.dataset.Dataset` facade over one snapshot of a tidelake table, for engines
that scan pyarrow datasets lazily (DuckDB's replacement scans, ``con.register``, Acero).

Such engines call :meth:`TableDataset.scanner` with the columns they need and the filter they
could translate. The columns become tidelake's projection (plus the columns the filter reads);
the filter's comparisons, ranges and lists go into tidelake's planner (pruning buckets, files,
pages and rows, see :mod:`tidelake.expr.substrait`) and the whole filter is applied exactly, by
pyarrow, to the merged rows. Every call plans a new read of the
same pinned snapshot, so the dataset can be scanned any number of times. The dataset's schema
is the snapshot's: the latest schema for the latest snapshot, its own for an older one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from .expr.substrait import pushable_filter

if TYPE_CHECKING:
    from .scan import Scan
    from .table import Table

__all__ = ["TableDataset"]


class TableDataset(ds.Dataset):
    """One snapshot of a table as a pyarrow Dataset; see :meth:`Table.to_pyarrow_dataset`."""

    def __init__(self, table: Table, scan: Scan, *, pinned: bool) -> None:  # noqa: D107 (no super().__init__)
        """The snapshot and schema of ``scan``; ``pinned``: it is the latest snapshot, read in the
        latest schema while it stays the latest (:meth:`Table.pinned_scan`), else time travel."""
        self._table = table
        self._snapshot_id = scan.snapshot_id
        self._schema = scan.schema
        self._pinned = pinned

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot every scan reads (None for a table without snapshots)."""
        return self._snapshot_id

    def __repr__(self) -> str:
        return f"<tidelake.TableDataset {self._table.path!r} snapshot={self._snapshot_id}>"

    def scanner(self, columns: list[str] | None = None, filter: Any = None, batch_size: int | None = None,
                **_ignored: Any) -> ds.Scanner:
        """A scanner of this snapshot: ``columns`` are read from the table (with those
        ``filter`` needs), ``filter`` (a :class:`pyarrow.compute.Expression`) is applied to the
        merged rows. Other pyarrow scan options (threads, readahead) do not apply."""
        read = None if columns is None else _with_filter_columns(list(columns), filter, self._schema)
        if read == []:  # nothing to read but the row count: the narrowest scan is one column
            read = self._schema.names[:1]
        if self._snapshot_id is None:
            empty = self._schema.empty_table()
            return ds.Scanner.from_batches(empty.to_reader(), columns=columns, filter=filter)
        pushed = None if filter is None else pushable_filter(filter, self._schema)
        if self._pinned:
            scan = self._table.pinned_scan(self._snapshot_id, read, pushed, batch_size=batch_size)
        else:
            scan = self._table.scan(columns=read, filter=pushed, snapshot_id=self._snapshot_id, batch_size=batch_size)
        reader = scan.to_reader()
        return ds.Scanner.from_batches(reader, columns=columns, filter=filter)

    def to_table(self, columns: list[str] | None = None, filter: Any = None, **kw: Any) -> pa.Table:
        return self.scanner(columns, filter, **kw).to_table()

    def to_batches(self, columns: list[str] | None = None, filter: Any = None, **kw: Any) -> Any:
        return self.scanner(columns, filter, **kw).to_batches()

    def to_reader(self, columns: list[str] | None = None, filter: Any = None, **kw: Any) -> pa.RecordBatchReader:
        return self.scanner(columns, filter, **kw).to_reader()

    def head(self, num_rows: int, columns: list[str] | None = None, filter: Any = None, **kw: Any) -> pa.Table:
        return self.scanner(columns, filter, **kw).head(num_rows)

    def count_rows(self, filter: Any = None, **kw: Any) -> int:
        return self.scanner([], filter, **kw).count_rows()


def _with_filter_columns(columns: list[str], filter: Any, schema: pa.Schema) -> list[str]:
    """``columns`` plus the columns ``filter`` reads, found by binding it to empty tables."""
    if filter is None:
        return columns
    needed = list(columns)
    for name in schema.names:
        if name in needed:
            continue
        others = [n for n in schema.names if n != name]
        try:
            ds.dataset(schema.empty_table().select(others)).to_table(filter=filter)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, KeyError):
            needed.append(name)
    return needed
