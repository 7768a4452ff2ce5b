"""Lazy polars scans of tidelake tables, through polars' IO-plugin API.

:func:`scan_table` returns a :class:`polars.LazyFrame` over one snapshot of a table. When the
frame is collected, polars hands the plugin the projected columns, the predicate, the row limit
and the batch size; the columns and the row limit go to tidelake's reader, and the parts of the
predicate that tidelake's filter language can state exactly (:mod:`tidelake.expr.polars_plan`)
go to its planner (partition, bucket, file, page and key pruning). Polars still applies the
whole predicate to what comes back, so a part that is not pushed down never changes results; a
part that is pushed down must mean exactly what polars means, which is why only plain
column-versus-literal comparisons on types whose literals convert without loss are translated.

The frame is pinned to the snapshot that was latest (or asked for) when it was created: every
collect reads the same data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .expr.polars_plan import pushable_filter

if TYPE_CHECKING:
    import polars as pl

    from .table import Table

__all__ = ["scan_table"]


def scan_table(source: str | Table, *, snapshot_id: int | None = None, tag: str | None = None,
               timestamp: Any = None, storage_options: dict[str, str] | None = None,
               branch: str | None = None) -> pl.LazyFrame:
    """A :class:`polars.LazyFrame` over a tidelake table (a path or an opened :class:`Table`).

    Projection, row limits, batch size and simple predicates are pushed into tidelake's reader.
    Time travel as :meth:`Table.scan` (``snapshot_id``, ``tag`` or ``timestamp``); by default the
    snapshot that is latest now.
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    from .table import Table, open_table

    table = source if isinstance(source, Table) else open_table(source, storage_options, branch=branch)
    pinned = table.scan(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp).snapshot_id
    arrow_schema = table.schema
    polars_schema = pl.from_arrow(arrow_schema.empty_table()).schema  # type: ignore[union-attr]

    def source_batches(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                       batch_size: int | None) -> Iterator[pl.DataFrame]:
        columns = list(with_columns) if with_columns is not None else list(arrow_schema.names)
        read = list(columns)
        tree = None
        if predicate is not None:
            read += [c for c in predicate.meta.root_names() if c not in read]
            tree = pushable_filter(json.loads(predicate.meta.serialize(format="json")), arrow_schema)
        if pinned is None:
            return
        reader = table.scan(columns=read, filter=tree, snapshot_id=pinned, batch_size=batch_size).to_reader()
        remaining = n_rows
        for batch in reader:
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            frame = frame.select(columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            if frame.height:
                yield frame
            if remaining == 0:
                return

    return register_io_source(source_batches, schema=polars_schema)
