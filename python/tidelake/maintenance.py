"""Argument conversion for the maintenance methods of :class:`tidelake.Table` (snapshot
expiration, orphan files, tags, rollback, consumers, partitions, system tables)."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from ._filters import json_literal
from .exceptions import InvalidArgumentError

__all__ = ["SYSTEM_TABLES", "duration_ms", "partition_specs_json"]

SYSTEM_TABLES = ("snapshots", "schemas", "options", "files", "manifests", "partitions", "buckets", "tags",
                 "consumers", "branches", "audit_log")
"""Names accepted by :meth:`tidelake.Table.system` (Paimon's ``table$name`` system tables)."""


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
