"""Argument conversion for the maintenance methods of :class:`tidelake.Table` (snapshot
expiration, orphan files, tags, rollback, consumers, partitions, system tables), and for the
front-ends that take their arguments as text (the CLI, Spark SQL procedures): durations and
partition specs."""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import json
import re
from typing import TYPE_CHECKING, Any

from . import _internal
from .exceptions import InvalidArgumentError
from .expr import json_literal

if TYPE_CHECKING:
    from .table import Table

__all__ = ["GLOBAL_SYSTEM_TABLES", "SYSTEM_DATABASE", "SYSTEM_TABLES", "duration_ms", "duration_text",
           "partition_specs_json", "parse_duration", "typed_partitions"]

SYSTEM_TABLES: tuple[str, ...] = _internal.SYSTEM_TABLES
"""Names accepted by :meth:`tidelake.Table.system` (Paimon's ``table$name`` system tables)."""

SYSTEM_DATABASE: str = _internal.SYSTEM_DATABASE
"""The database of a catalog's global system tables (Paimon's ``sys``)."""

GLOBAL_SYSTEM_TABLES: tuple[str, ...] = _internal.GLOBAL_SYSTEM_TABLES
"""Names of the catalog-wide system tables, ``sys.<name>`` (Paimon's global system tables):
``all_table_options``, ``tables`` and ``partitions``."""


def duration_ms(value: Any, what: str) -> int | None:
    """A duration given as :class:`datetime.timedelta` or milliseconds, in milliseconds."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidArgumentError(f"{what} must be a datetime.timedelta or milliseconds, got {value!r}")


def partition_specs_json(partitions: Any, partition_keys: list[str]) -> str:
    """``[{"dt": "2024-05-14"}, ...]`` as the JSON the engine binds to the partition types."""
    if isinstance(partitions, dict):
        partitions = [partitions]
    if not isinstance(partitions, (list, tuple)) or not partitions:
        raise InvalidArgumentError("partitions must be a non-empty list of dicts of partition values")
    specs = []
    for spec in partitions:
        if not isinstance(spec, dict) or not spec:
            raise InvalidArgumentError(f"a partition must be a non-empty dict of partition values, got {spec!r}")
        unknown = [k for k in spec if k not in partition_keys]
        if unknown:
            raise InvalidArgumentError(f"{unknown} are not partition keys; partition keys are {partition_keys}")
        specs.append({k: json_literal(v) for k, v in spec.items()})
    return json.dumps(specs)


_DURATION_UNITS = {
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}
_DURATION_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")


def parse_duration(text: str) -> _dt.timedelta:
    """``30s``, ``10min``, ``1h``, ``2d``, ``1 h``, ``500ms`` as a timedelta."""
    m = _DURATION_RE.fullmatch(text)
    if m is None or m.group(2).lower() not in _DURATION_UNITS:
        raise InvalidArgumentError(f"bad duration {text!r}: expected a number and a unit, e.g. 30s, 10min, "
                                   f"1h, 2d (units: ms, s, m/min, h, d)")
    return _dt.timedelta(milliseconds=float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()])


def duration_text(delta: _dt.timedelta) -> str:
    """A timedelta as :func:`parse_duration` reads it: ``1d``, ``2h``, ``10min``, ``30s``, ``500ms``."""
    ms = int(delta.total_seconds() * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _typed_value(type_: Any, text: str, key: str) -> Any:
    """A partition value given as text, converted to the column's Python type."""
    import pyarrow as pa

    try:
        if pa.types.is_boolean(type_):
            if text.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            return text.lower() == "true"
        if pa.types.is_integer(type_):
            return int(text)
        if pa.types.is_floating(type_):
            return float(text)
        if pa.types.is_decimal(type_):
            return _dec.Decimal(text)
        if pa.types.is_date(type_):
            return _dt.date.fromisoformat(text)
        if pa.types.is_timestamp(type_):
            return _dt.datetime.fromisoformat(text)
        if pa.types.is_time(type_):
            return _dt.time.fromisoformat(text)
    except (ValueError, ArithmeticError) as e:
        raise InvalidArgumentError(f"bad --partition {key}={text}: {key} is {type_}: {e}") from None
    return text


def typed_partitions(t: Table, specs: tuple[dict[str, str], ...] | list[dict[str, str]]) -> list[dict[str, Any]]:
    """Partition specs given as text (``--partition k=v``) with values converted using the
    table's Arrow schema; the table's ``partition.default-name`` is null."""
    keys = t.partition_keys
    if not keys:
        raise InvalidArgumentError(f"--partition: {t.path} is not partitioned")
    null_name = t.effective_options["partition.default-name"]
    out = []
    for spec in specs:
        typed: dict[str, Any] = {}
        for k, text in spec.items():
            if k not in keys:
                raise InvalidArgumentError(f"bad --partition {k}={text}: {k!r} is not a partition key; "
                                           f"partition keys are {', '.join(keys)}")
            typed[k] = None if text == null_name else _typed_value(t.schema.field(k).type, text, k)
        out.append(typed)
    return out
