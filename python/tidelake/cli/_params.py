"""Argument types and checks: durations, partition specs (typed against the table), version
selectors, columns, confirmation."""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import re
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from .. import exceptions as exc

if TYPE_CHECKING:
    from ..table import Table


def _one_version(**given: Any) -> None:
    named = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None]
    if len(named) > 1:
        raise exc.InvalidArgumentError(f"give at most one of --snapshot, --tag and --timestamp-ms, "
                                       f"not {' and '.join(named)}")


def _columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",")]
    if not all(cols):
        raise exc.InvalidArgumentError(f"bad --columns {text!r}: empty column name")
    return cols


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
        raise exc.InvalidArgumentError(f"bad duration {text!r}: expected a number and a unit, e.g. 30s, 10min, "
                                       f"1h, 2d (units: ms, s, m/min, h, d)")
    return _dt.timedelta(milliseconds=float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()])


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Duration(click.ParamType):
    name = "duration"

    def convert(self, value: Any, param: Any, ctx: Any) -> _dt.timedelta:
        if isinstance(value, _dt.timedelta):
            return value
        try:
            return parse_duration(str(value))
        except exc.InvalidArgumentError as e:
            self.fail(str(e), param, ctx)


class _PartitionSpec(click.ParamType):
    """``k=v[,k=v...]`` as a dict of strings (typed later against the table schema)."""

    name = "k=v[,k=v...]"

    def convert(self, value: Any, param: Any, ctx: Any) -> dict[str, str]:
        if isinstance(value, dict):
            return value
        spec: dict[str, str] = {}
        for part in str(value).split(","):
            k, sep, v = part.partition("=")
            k = k.strip()
            if not sep or not k:
                self.fail(f"bad partition {value!r}: expected k=v[,k=v...]", param, ctx)
            if k in spec:
                self.fail(f"bad partition {value!r}: {k} is given twice", param, ctx)
            spec[k] = v
        return spec


_DURATION = _Duration()
_PARTITION = _PartitionSpec()


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
        raise exc.InvalidArgumentError(f"bad --partition {key}={text}: {key} is {type_}: {e}") from None
    return text


def _typed_partitions(t: Table, specs: tuple[dict[str, str], ...] | list[dict[str, str]]) -> list[dict[str, Any]]:
    """``--partition`` specs with values converted using the table's Arrow schema."""
    keys = t.partition_keys
    if not keys:
        raise exc.InvalidArgumentError(f"--partition: {t.path} is not partitioned")
    null_name = t.effective_options["partition.default-name"]
    out = []
    for spec in specs:
        typed: dict[str, Any] = {}
        for k, text in spec.items():
            if k not in keys:
                raise exc.InvalidArgumentError(f"bad --partition {k}={text}: {k!r} is not a partition key; "
                                               f"partition keys are {', '.join(keys)}")
            typed[k] = None if text == null_name else _typed_value(t.schema.field(k).type, text, k)
        out.append(typed)
    return out


def _spec_text(spec: dict[str, Any]) -> str:
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in spec.items())


def _interactive() -> bool:
    """Whether a confirmation can be asked (stdin is a terminal)."""
    return sys.stdin.isatty()


_PARTITION_OPT_HELP = ("k=v[,k=v...]: one partition (values converted to the column types; the table's "
                       "partition.default-name, __DEFAULT_PARTITION__ by default, is null). Repeat for more "
                       "partitions.")

