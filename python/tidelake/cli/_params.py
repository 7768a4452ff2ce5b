"""Argument types and checks: durations, partition specs (typed against the table), version
selectors, columns, confirmation."""

from __future__ import annotations

import datetime as _dt
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from .. import exceptions as exc
from ..maintenance import parse_duration as parse_duration

if TYPE_CHECKING:
    pass


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


def _spec_text(spec: dict[str, Any]) -> str:
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in spec.items())


def _interactive() -> bool:
    """Whether a confirmation can be asked (stdin is a terminal)."""
    return sys.stdin.isatty()


_PARTITION_OPT_HELP = ("k=v[,k=v...]: one partition (values converted to the column types; the table's "
                       "partition.default-name, __DEFAULT_PARTITION__ by default, is null). Repeat for more "
                       "partitions.")

