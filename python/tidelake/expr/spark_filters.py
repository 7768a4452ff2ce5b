"""Spark's Python data source filters (``pyspark.sql.datasource.Filter``) as the typed filter
tree, for pruning only: Spark still applies every filter, so a filter that is not translated
(None) never changes results, and a translated one must mean exactly what Spark means.

Translated: ``EqualTo``, ``GreaterThan(OrEqual)``, ``LessThan(OrEqual)``, ``In``, ``IsNull`` and
``IsNotNull`` on a top-level column, with literals that convert exactly. Timestamps are left to
Spark: their zone semantics differ between TIMESTAMP and TIMESTAMP_LTZ columns.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
from typing import Any

from .tree import Compare, Comparison, Filter, InList, IsNull, json_literal

__all__ = ["spark_filter"]

_COMPARE = {"EqualTo": Compare.EQ, "GreaterThan": Compare.GT, "GreaterThanOrEqual": Compare.GE,
            "LessThan": Compare.LT, "LessThanOrEqual": Compare.LE}
"""Spark's comparison filter classes."""


def _pushable_value(value: Any) -> bool:
    if isinstance(value, _dt.datetime):
        return False
    return isinstance(value, (bool, int, float, str, _dt.date, _dec.Decimal))


def spark_filter(f: Any) -> Filter | None:
    """A Spark data source filter as a filter tree node, or None when it is not pushed."""
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if len(attribute) != 1:
        return None
    column, kind = attribute[0], type(f).__name__
    value: Any = getattr(f, "value", None)  # comparisons and In have one; the Filter base has not
    if kind in _COMPARE and _pushable_value(value):
        return Comparison(column, _COMPARE[kind], json_literal(value))
    if kind == "In" and value and all(_pushable_value(v) for v in value):
        return InList(column, tuple(json_literal(v) for v in value))
    if kind == "IsNull":
        return IsNull(column)
    if kind == "IsNotNull":
        return IsNull(column, negated=True)
    return None
