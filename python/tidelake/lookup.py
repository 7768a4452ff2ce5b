"""Point lookups: the latest row of given primary keys (:meth:`Table.lookup`,
:meth:`Table.lookuper`). This module only turns the accepted key shapes into an Arrow table of
the primary-key columns; finding and merging the rows happens in the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from . import _internal

Keys = Any
"""A pyarrow Table or RecordBatch of the primary-key columns, a dict of column name to values,
or a list of keys: tuples of the primary-key values in primary-key order (a single-column key
may also be given as plain values)."""


def key_table(keys: Keys, primary_keys: list[str], schema: pa.Schema) -> Any:
    """``keys`` as an Arrow producer of the primary-key columns (typed as ``schema`` where the
    values are Python objects)."""
    if isinstance(keys, (pa.Table, pa.RecordBatch)) or hasattr(keys, "__arrow_c_stream__") \
            or hasattr(keys, "__arrow_c_array__"):
        return keys
    if not primary_keys:
        return pa.table({})  # the engine refuses tables without a primary key
    if isinstance(keys, Mapping):
        columns = {name: list(values) for name, values in keys.items()}
    elif isinstance(keys, Sequence) and not isinstance(keys, (str, bytes)):
        rows = [k if isinstance(k, tuple) else (k,) for k in keys]
        width = len(primary_keys)
        if any(len(r) != width for r in rows):
            raise InvalidArgumentError(
                f"each lookup key needs {width} value(s), one per primary-key column {primary_keys}")
        columns = {name: [r[i] for r in rows] for i, name in enumerate(primary_keys)}
    else:
        raise InvalidArgumentError(
            f"lookup keys must be a pyarrow Table/RecordBatch, a dict of columns or a list of keys, "
            f"not {type(keys).__name__}")
    arrays = {}
    for name, values in columns.items():
        typ = schema.field(name).type if name in schema.names else None
        try:
            arrays[name] = pa.array(values, type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
            raise InvalidArgumentError(f"lookup key column '{name}': {e}") from e
    return pa.table(arrays) if arrays else pa.table({name: pa.array([]) for name in primary_keys})


class Lookuper:
    """A long-lived point-lookup reader of one table (:meth:`Table.lookuper`). It keeps the
    snapshot's live files and their key ranges, so repeated lookups only read the pages of their
    keys; :meth:`refresh` moves it to the latest snapshot. Safe to share between threads (lookups
    run without the GIL)."""

    def __init__(self, raw: _internal.RawLookuper, primary_keys: list[str], schema: pa.Schema):
        self._raw = raw
        self._primary_keys = primary_keys
        self._schema = schema

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot lookups read (None for a table without snapshots)."""
        return self._raw.snapshot_id

    @property
    def cached_bytes(self) -> int:
        """Bytes the lookuper's cache holds (at most the ``cache_bytes`` it was made with)."""
        return self._raw.cached_bytes

    def refresh(self) -> int | None:
        """Move to the table's latest snapshot (files still live keep what is known of them);
        returns its id."""
        return self._raw.refresh()

    def lookup(self, keys: Keys, columns: list[str] | None = None) -> pa.Table:
        """The latest row of each key; see :meth:`Table.lookup`."""
        return self._raw.lookup(key_table(keys, self._primary_keys, self._schema), columns)
