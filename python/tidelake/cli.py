"""The ``tidelake`` command line.

Every command prints a human-readable view by default and JSON with ``--json`` (``cat --json``
prints JSON Lines, one object per row). Errors print one line on stderr (``error: ...``) and
exit non-zero without a traceback:

* exit 1: an unexpected error (commit conflict, storage failure, a bug...);
* exit 2: bad usage: unknown option, bad argument, bad filter or column (``InvalidArgumentError``);
* exit 3: table, snapshot, schema or tag not found;
* exit 4: corrupt metadata or data.

Set ``TIDELAKE_DEBUG=1`` to get the traceback of unexpected errors.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _dec
import functools
import json
import math
import os
import re
import sys
import unicodedata
from typing import Any, Callable, Iterator

import click

from . import exceptions as exc
from .table import Table, open_table

_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (exc.TableNotFoundError, 3),
    (exc.CorruptMetadataError, 4),
    (exc.InvalidArgumentError, 2),
    (exc.TidelakeError, 1),
]


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _fail(err: BaseException, code: int | None = None) -> None:
    """Print ``err`` as one line on stderr and exit with its code."""
    click.echo(f"error: {_one_line(err) or type(err).__name__}", err=True)
    if code is None:
        code = next((c for cls, c in _EXIT_CODES if isinstance(err, cls)), 1)
    sys.exit(code)


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Turn errors inside a command into one-line messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except exc.TidelakeError as e:
            _fail(e)
        except BrokenPipeError:
            # `tidelake cat ... | head`: the reader went away; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:  # noqa: BLE001 - the CLI contract is one line, no traceback
            if os.environ.get("TIDELAKE_DEBUG"):
                raise
            _fail(RuntimeError(f"unexpected {type(e).__name__}: {e}"), 1)

    return wrapper


class _Group(click.Group):
    """A click group whose usage errors are one line too (``error: ...``, exit 2)."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:  # type: ignore[override]
        try:
            return super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            click.echo(f"error: {_one_line(e.format_message())}{hint}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.ClickException as e:
            click.echo(f"error: {_one_line(e.format_message())}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            click.echo("error: aborted", err=True)
            sys.exit(1)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)


# ---- formatting ---------------------------------------------------------------------------------


def _fmt_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _width(text: str) -> int:
    """Terminal columns of ``text`` (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 0 if unicodedata.combining(ch) else 1
               for ch in text)


def _print_table(rows: list[list[Any]], headers: list[str]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else str(v) for v in r] for r in rows]
    widths = [max(_width(r[i]) for r in cells) for i in range(len(headers))]
    for n, r in enumerate(cells):
        click.echo("  ".join(c + " " * (w - _width(c)) for c, w in zip(r, widths)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


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


# ---- the --filter mini-language -----------------------------------------------------------------

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<quoted>`[^`]+`)
    | (?P<temporal>\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w.:-]))
    | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.]))
    | (?P<op><=|>=|==|!=|<>|=|<|>)
    | (?P<punct>[(),])
    | (?P<word>[^\s'"`()<>=!,]+)
    )""", re.VERBOSE)

_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _unquote(text: str) -> str:
    q = text[0]
    body = text[1:-1].replace(q + q, q)
    return re.sub(r"\\(.)", r"\1", body)


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise exc.InvalidArgumentError(f"bad --filter {text!r}: cannot read {text[pos:].strip()!r}")
        kind = m.lastgroup
        raw = m.group(kind)
        start = m.start(kind)
        if kind == "str":
            out.append(("value", _unquote(raw), start))
        elif kind == "quoted":
            out.append(("ident", raw[1:-1], start))
        elif kind == "temporal":
            out.append(("value", raw, start))
        elif kind == "num":
            out.append(("value", float(raw) if re.search(r"[.eE]", raw) else int(raw), start))
        elif kind == "op":
            out.append(("op", _OPS[raw], start))
        elif kind == "punct":
            out.append((raw, raw, start))
        else:
            lower = raw.lower()
            if lower in ("and", "or", "not", "in", "is", "null"):
                out.append((lower, lower, start))
            elif lower in ("true", "false"):
                out.append(("value", lower == "true", start))
            else:
                out.append(("ident", raw, start))
        pos = m.end()
    return out


def parse_filter(text: str) -> list[list[tuple[Any, ...]]]:
    """Parse ``--filter`` into DNF: a list (OR) of lists (AND) of ``(column, op, value)``.

    Terms: ``col OP value`` with OP one of ``= == != <> < <= > >=``; ``col in (v1, v2)``;
    ``col not in (...)``; ``col is null``; ``col is not null``. Terms join with ``and``, which
    binds tighter than ``or``. Values: integers, floats, ``'quoted'`` or ``"quoted"`` strings,
    ``true``/``false``, unquoted ISO dates and timestamps (``2024-05-14``,
    ``2024-05-14T10:00:00``) and bare words (strings). Columns may be `back-quoted`.
    """
    toks = _tokens(text)
    if not toks:
        raise exc.InvalidArgumentError("bad --filter: it is empty")
    i = 0

    def where() -> str:
        return f"at position {toks[i][2] + 1}" if i < len(toks) else "at the end"

    def bad(expected: str) -> exc.InvalidArgumentError:
        return exc.InvalidArgumentError(f"bad --filter {text!r}: expected {expected} {where()}")

    def take(kind: str) -> Any:
        nonlocal i
        if i >= len(toks) or toks[i][0] != kind:
            return None
        i += 1
        return toks[i - 1][1]

    def value() -> Any:
        v = take("value")
        if v is None:
            word = take("ident")
            if word is None:
                raise bad("a value")
            return word
        return v

    def term() -> tuple[Any, ...]:
        col = take("ident")
        if col is None:
            raise bad("a column name")
        if take("is") is not None:
            negate = take("not") is not None
            if take("null") is None:
                raise bad("'null'")
            return (col, "is_not_null" if negate else "is_null")
        negate = take("not") is not None
        if take("in") is not None:
            if take("(") is None:
                raise bad("'('")
            values = [value()]
            while take(",") is not None:
                values.append(value())
            if take(")") is None:
                raise bad("',' or ')'")
            return (col, "not in" if negate else "in", values)
        if negate:
            raise bad("'in' after 'not'")
        op = take("op")
        if op is None:
            raise bad("an operator (= != < <= > >= in, is null)")
        return (col, op, value())

    clauses = []
    while True:
        conj = [term()]
        while take("and") is not None:
            conj.append(term())
        clauses.append(conj)
        if take("or") is None:
            break
    if i != len(toks):
        raise bad("'and', 'or' or the end")
    return clauses


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


# ---- commands -----------------------------------------------------------------------------------


def _open(path: str) -> Table:
    return open_table(path)


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _info_dict(t: Table) -> dict[str, Any]:
    snaps = t.snapshots()
    return {
        "path": t.path,
        "kind": "primary-key" if t.primary_keys else "append",
        "schema_id": t.schema_id,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in t.schema],
        "primary_keys": t.primary_keys,
        "partition_keys": t.partition_keys,
        "options": t.options,
        "snapshots": [s.to_dict() for s in snaps],
        "tags": [tag.to_dict() for tag in t.tags()],
    }


_PATH = click.argument("path", metavar="PATH")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tidelake", prog_name="tidelake")
def main() -> None:
    """tidelake: inspect and read Apache Paimon tables from the shell.

    PATH is a table directory (holding schema/, snapshot/, manifest/...), e.g.
    warehouse/db.db/orders. Exit codes: 0 ok, 1 unexpected error, 2 bad usage or argument,
    3 table/snapshot/schema/tag not found, 4 corrupt metadata or data.
    """


@main.command(short_help="Schema, keys, options, snapshots and tags of a table.")
@_PATH
@_JSON
@_guarded
def info(path: str, as_json: bool) -> None:
    """Show the table at PATH: its schema, keys, options, snapshots and tags."""
    t = _open(path)
    d = _info_dict(t)
    if as_json:
        _emit_json(d)
        return
    click.echo(f"table:          {d['path']}")
    click.echo(f"kind:           {d['kind']}")
    click.echo(f"primary keys:   {', '.join(d['primary_keys']) or '-'}")
    click.echo(f"partition keys: {', '.join(d['partition_keys']) or '-'}")
    click.echo(f"schema id:      {d['schema_id']}")
    click.echo("")
    click.echo("schema:")
    _print_table([[f["name"], f["type"], "" if f["nullable"] else "NOT NULL"] for f in d["schema"]],
                 ["column", "arrow type", "null"])
    click.echo("")
    click.echo("options:")
    _print_table([[k, v] for k, v in d["options"].items()], ["option", "value"])
    click.echo("")
    snaps = d["snapshots"]
    click.echo(f"snapshots: {len(snaps)}")
    _print_table(
        [[s["id"], s["schema_id"], s["commit_kind"], _fmt_time(s["time_millis"]), s["total_record_count"]]
         for s in snaps],
        ["id", "schema", "kind", "committed", "records"],
    )
    click.echo("")
    click.echo(f"tags: {len(d['tags'])}")
    if d["tags"]:
        _print_table([[tg["name"], tg["snapshot_id"]] for tg in d["tags"]], ["tag", "snapshot"])


@main.command(short_help="List the snapshots of a table.")
@_PATH
@_JSON
@_guarded
def snapshots(path: str, as_json: bool) -> None:
    """List the snapshots of the table at PATH, oldest first: id, schema, commit kind, commit
    time (UTC) and record counts (total, delta, changelog)."""
    snaps = _open(path).snapshots()
    if as_json:
        _emit_json([s.to_dict() for s in snaps])
        return
    _print_table(
        [[s.id, s.schema_id, s.commit_kind, _fmt_time(s.time_millis), s.total_record_count,
          s.delta_record_count, s.changelog_record_count] for s in snaps],
        ["id", "schema", "kind", "committed", "total", "delta", "changelog"],
    )
    click.echo(f"({len(snaps)} snapshots)")


@main.command(short_help="Show a schema version of a table.")
@_PATH
@click.option("--id", "schema_id", type=int, metavar="N", help="Show schema version N (default: the latest).")
@_JSON
@_guarded
def schema(path: str, schema_id: int | None, as_json: bool) -> None:
    """Show a schema version of the table at PATH: fields with their ids and Paimon types, keys,
    options and comment."""
    t = _open(path)
    versions = t.schemas()
    wanted = t.schema_id if schema_id is None else schema_id
    found = [v for v in versions if v.id == wanted]
    if not found:
        ids = ", ".join(str(v.id) for v in versions)
        raise exc.TableNotFoundError(f"schema {wanted} not found in {t.path}; available schemas: {ids}")
    v = found[0]
    if as_json:
        _emit_json({"id": v.id, "fields": v.fields, "partition_keys": v.partition_keys,
                    "primary_keys": v.primary_keys, "options": v.options, "comment": v.comment,
                    "time_millis": v.time_millis, "highest_field_id": v.highest_field_id})
        return
    click.echo(f"schema id:      {v.id}{'  (latest)' if v.id == t.schema_id else ''}")
    click.echo(f"created:        {_fmt_time(v.time_millis) if v.time_millis else '-'}")
    click.echo(f"primary keys:   {', '.join(v.primary_keys) or '-'}")
    click.echo(f"partition keys: {', '.join(v.partition_keys) or '-'}")
    if v.comment:
        click.echo(f"comment:        {v.comment}")
    click.echo("")
    _print_table([[f["id"], f["name"], paimon_type(f["type"]), f.get("description") or ""] for f in v.fields],
                 ["id", "column", "type", "description"])
    if v.options:
        click.echo("")
        _print_table([[k, val] for k, val in v.options.items()], ["option", "value"])


@main.command(short_help="List the tags of a table.")
@_PATH
@_JSON
@_guarded
def tags(path: str, as_json: bool) -> None:
    """List the tags of the table at PATH (sorted by name) with the snapshot each one keeps."""
    tag_list = _open(path).tags()
    if as_json:
        _emit_json([tg.to_dict() for tg in tag_list])
        return
    _print_table([[tg.name, tg.snapshot_id, tg.schema_id, _fmt_time(tg.time_millis), tg.create_time,
                   tg.time_retained] for tg in tag_list],
                 ["tag", "snapshot", "schema", "committed", "created", "retained"])
    click.echo(f"({len(tag_list)} tags)")


def _file_rows(t: Table, snapshot_id: int | None, tag: str | None) -> Iterator[dict[str, Any]]:
    scan = t.scan(snapshot_id=snapshot_id, tag=tag)
    for split in scan.splits():
        s = json.loads(split.payload)
        bucket_dir = s.get("bucket_path", "")
        partition = bucket_dir.rsplit("/", 1)[0] if "/" in bucket_dir else ""
        for f in s["files"]:
            dv = f.get("deletion")
            yield {
                "snapshot_id": s.get("snapshot_id"),
                "partition": partition,
                "bucket": s["bucket"],
                "file": f["file_name"],
                "path": f["path"],
                "level": f["level"],
                "rows": f["row_count"],
                "size": f["file_size"],
                "schema_id": f.get("schema_id"),
                "min_sequence_number": f.get("min_sequence_number"),
                "max_sequence_number": f.get("max_sequence_number"),
                "deleted_rows": dv.get("cardinality") if dv else None,
                "deletion_vector": dv.get("path") if dv else None,
            }


@main.command(short_help="List the data files a read sees.")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="List the files of snapshot N "
              "(default: the latest).")
@click.option("--tag", metavar="T", help="List the files of tag T.")
@_JSON
@_guarded
def files(path: str, snapshot_id: int | None, tag: str | None, as_json: bool) -> None:
    """List the data files a read of the table at PATH sees: partition, bucket, file, LSM level,
    rows, size in bytes and rows removed by a deletion vector."""
    _one_version(snapshot=snapshot_id, tag=tag)
    rows = list(_file_rows(_open(path), snapshot_id, tag))
    if as_json:
        _emit_json(rows)
        return
    _print_table([[r["partition"] or "-", r["bucket"], r["file"], r["level"], r["rows"], r["size"],
                   r["deleted_rows"]] for r in rows],
                 ["partition", "bucket", "file", "level", "rows", "size", "deleted"])
    click.echo(f"({len(rows)} files, {sum(r['rows'] for r in rows)} rows, {sum(r['size'] for r in rows)} bytes)")


@main.command(short_help="Print the rows of a table (or of a snapshot, tag or time).")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Read snapshot N (time travel).")
@click.option("--tag", metavar="T", help="Read the snapshot tag T keeps.")
@click.option("--timestamp-ms", "timestamp_ms", type=int, metavar="T",
              help="Read the last snapshot committed at or before T (epoch milliseconds).")
@click.option("--columns", metavar="A,B", help="Comma-separated columns to print, in this order (default: all).")
@click.option("--filter", "filter_text", metavar="EXPR",
              help="Keep rows matching EXPR: 'col OP value' terms (OP: = != < <= > >=, also "
                   "'col in (1, 2)', 'col not in (...)', 'col is [not] null') joined by 'and' / "
                   "'or'; values are numbers, 'quoted' strings, true/false or ISO dates.")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Print at most N rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON Lines: one object per row (bytes as hex, decimals and times as strings).")
@_guarded
def cat(path: str, snapshot_id: int | None, tag: str | None, timestamp_ms: int | None, columns: str | None,
        filter_text: str | None, limit: int | None, as_json: bool) -> None:
    """Print the rows of the table at PATH (the latest snapshot, merged), or those of an older
    snapshot, a tag or a point in time. Give at most one of --snapshot, --tag and --timestamp-ms.

    \b
    Examples:
      tidelake cat wh/db.db/orders --columns id,qty --filter "qty >= 50 and region = 'eu'"
      tidelake cat wh/db.db/orders --tag nightly --limit 10 --json
    """
    _one_version(snapshot=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    filters = parse_filter(filter_text) if filter_text is not None else None
    t = _open(path)
    batch_size = max(1, min(limit, 8192)) if limit is not None else None
    reader = t.to_reader(columns=_columns(columns), filter=filters, snapshot_id=snapshot_id, tag=tag,
                         timestamp_ms=timestamp_ms, batch_size=batch_size)
    names = reader.schema.names
    left = limit
    rows: list[list[Any]] = []
    count = 0
    for batch in reader:
        if left is not None:
            if left <= 0:
                break
            batch = batch.slice(0, left)
            left -= batch.num_rows
        for row in batch.to_pylist():
            count += 1
            if as_json:
                click.echo(json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False))
            else:
                rows.append([_cell(row[n]) for n in names])
    if not as_json:
        _print_table(rows, names)
        click.echo(f"({count} rows)")


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="tidelake")
