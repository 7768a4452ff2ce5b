"""Human and JSON output: tables, times, sizes, cell and JSON values, progress bars."""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal as _dec
import json
import math
import sys
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from ..maintenance import duration_text as _fmt_duration

if TYPE_CHECKING:
    import pyarrow as pa

    from ..table import Table

def _fmt_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _count(n: int, noun: str) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _width(text: str) -> int:
    """Terminal columns of ``text`` (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 0 if unicodedata.combining(ch) else 1
               for ch in text)


class _TablePrinter:
    """Prints rows as an aligned text table as they come: each chunk is printed at once, with
    column widths fitted to the header and the rows seen so far (they only grow), so the first
    rows of a large read show before the rest is read."""

    def __init__(self, headers: list[str]) -> None:
        self._headers = [str(h) for h in headers]
        self._widths: list[int] | None = None

    def print_rows(self, rows: list[list[Any]]) -> None:
        cells = [["-" if v is None else str(v) for v in r] for r in rows]
        header = self._widths is None
        if self._widths is None:
            self._widths = [_width(h) for h in self._headers]
        self._widths = [max([w, *(_width(r[i]) for r in cells)]) for i, w in enumerate(self._widths)]
        lines = [self._line(self._headers), "  ".join("-" * w for w in self._widths)] if header else []
        lines += [self._line(r) for r in cells]
        if lines:
            click.echo("\n".join(lines))

    def _line(self, cells: list[str]) -> str:
        assert self._widths is not None
        return "  ".join(c + " " * (w - _width(c)) for c, w in zip(cells, self._widths)).rstrip()


def _print_rows(reader: pa.RecordBatchReader, *, limit: int | None, as_json: bool) -> None:
    """Print a read's rows as they come (``cat | head`` shows rows before the read ends): an
    aligned table ending with the row count, or JSON Lines with ``as_json``; at most ``limit``."""
    names = reader.schema.names
    printer = _TablePrinter(names)
    left = limit
    count = 0
    for batch in reader:
        if left is not None:
            if left <= 0:
                break
            batch = batch.slice(0, left)
            left -= batch.num_rows
        rows = batch.to_pylist()
        count += len(rows)
        if not rows:
            continue
        if as_json:
            click.echo("\n".join(json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False)
                                 for row in rows))
        else:
            printer.print_rows([[_cell(row[n]) for n in names] for row in rows])
    if not as_json:
        if count == 0:
            printer.print_rows([])
        click.echo(f"({_count(count, 'row')})")


def _print_table(rows: list[list[Any]], headers: list[str]) -> None:
    """Print rows as an aligned text table."""
    _TablePrinter(headers).print_rows(rows)


def paimon_type(t: Any) -> str:
    """A Paimon type JSON (``"INT NOT NULL"`` or a nested ``{"type": "ROW", ...}``) as SQL text."""
    if isinstance(t, str):
        return t
    if not isinstance(t, dict):
        return json.dumps(t)
    base = str(t.get("type", "?"))
    not_null = base.endswith(" NOT NULL") or t.get("nullable") is False
    base = base.removesuffix(" NOT NULL")
    if base in ("ARRAY", "MULTISET"):
        text = f"{base}<{paimon_type(t.get('element'))}>"
    elif base == "MAP":
        text = f"MAP<{paimon_type(t.get('key'))}, {paimon_type(t.get('value'))}>"
    elif base == "ROW":
        text = "ROW<" + ", ".join(f"{f['name']} {paimon_type(f['type'])}" for f in t.get("fields", [])) + ">"
    else:
        text = base
    return text + (" NOT NULL" if not_null else "")


def _json_value(v: Any) -> Any:
    """A JSON-safe form of a value from ``pyarrow``'s ``to_pylist``."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, _dec.Decimal):
        return str(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if hasattr(v, "isoformat"):  # pandas.Timestamp (nanosecond timestamps)
        return v.isoformat()
    return str(v)


def _cell(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return v.replace("\n", "\\n").replace("\t", "\\t")
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(_json_value(v), ensure_ascii=False)
    return str(v)


def _fmt_local_time(value: Any) -> Any:
    """A tag's create time as Paimon writes it (a Java LocalDateTime: ``[y, m, d, h, mi, s, ns]``)."""
    if isinstance(value, list) and 3 <= len(value) <= 7 and all(isinstance(v, int) for v in value):
        year, month, day, hour, minute, second, nanos = [*value, 0, 0, 0, 0][:7]
        try:
            when = _dt.datetime(year, month, day, hour, minute, second, nanos // 1000)
            return when.isoformat(sep=" ", timespec="milliseconds")
        except ValueError:
            pass
    return value


def _fmt_retained(value: Any) -> Any:
    """A tag's retention as Paimon writes it (a Java Duration: seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _fmt_duration(_dt.timedelta(seconds=value))
    return value


def _ms(delta: _dt.timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def _summary(counts: dict[str, Any], keys: tuple[str, ...] = ("data_files", "changelog_files", "manifest_files",
                                                             "index_files", "statistics_files")) -> str:
    parts = [f"{counts[k]} {k.replace('_', ' ')}" for k in keys if counts.get(k)]
    return ", ".join(parts) or "no files"


class _NoBar:
    def update(self, n: int) -> None:
        pass


@contextlib.contextmanager
def _progress(length: int, label: str, show: bool = True) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal (never in scripts or with --json)."""
    if show and length > 1 and sys.stderr.isatty():
        with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
            yield bar
    else:
        yield _NoBar()


def _rel(t: Table, path: str) -> str:
    root = t.path.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path

