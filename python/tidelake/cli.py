"""The ``tidelake`` command line.

Every command prints a human-readable view by default and JSON with ``--json`` (``cat --json``
prints JSON Lines, one object per row). Errors print one line on stderr (``error: ...``) and
exit non-zero without a traceback:

* exit 1: an unexpected error (commit conflict, storage failure, a bug...), an existing tag, an
  unsupported operation (e.g. compacting a row-tracking table) or a declined confirmation;
* exit 2: bad usage: unknown option, bad argument, bad filter or column (``InvalidArgumentError``);
* exit 3: table, snapshot, schema or tag not found;
* exit 4: corrupt metadata or data.

Maintenance commands (``compact``, ``expire-snapshots``, ``remove-orphans``, ``rollback``,
``tags create``...) change the table; ``rollback`` asks for confirmation unless ``--yes``.
Durations are ``30s``, ``10min``, ``1h``, ``2d`` (``ms``, ``s``, ``m``/``min``, ``h``, ``d``;
spaces allowed). Partition specs are ``k=v[,k=v...]`` with values converted to the partition
column's type.

Set ``TIDELAKE_DEBUG=1`` to get the traceback of unexpected errors.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal as _dec
import functools
import json
import math
import os
import re
import shlex
import sys
import time
import unicodedata
from typing import Any, Callable, Iterator

import click

from . import exceptions as exc
from .maintenance import SYSTEM_TABLES
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
        except click.exceptions.NoArgsIsHelpError as e:  # `tidelake`, `tidelake tags`: show the help
            click.echo(e.format_message())
            sys.exit(0)
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


def _count(n: int, noun: str) -> str:
    """``1 row``, ``2 rows``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
    if "://" not in path:  # a local path: resolve `..` and symlinked cwd segments for the engine
        path = os.path.abspath(path)
    storage_options, branch = click.get_current_context().find_root().obj
    return open_table(path, storage_options=storage_options, branch=branch)


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
        "branch": t.branch,
        "branches": t.branches(),
    }


_PATH = click.argument("path", metavar="PATH")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _storage_options(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str] | None:
    pairs = [v.partition("=") for v in values]
    bad = [v for v, (_, eq, _) in zip(values, pairs) if not eq]
    if bad:
        raise click.BadParameter(f"{bad[0]!r} is not KEY=VALUE", ctx=ctx, param=param)
    return {k: v for k, _, v in pairs} or None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tidelake", prog_name="tidelake")
@click.option("-o", "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
              callback=_storage_options,
              help="Object-store setting for s3://, gs://, az:// paths, e.g. aws_endpoint=http://... "
                   "(repeatable; AWS_* and other standard environment variables apply too).")
@click.option("-b", "--branch", metavar="NAME", help="Act on branch NAME of the table (default: main).")
@click.pass_context
def main(ctx: click.Context, storage_options: dict[str, str] | None, branch: str | None) -> None:
    """tidelake: inspect, read and maintain Apache Paimon tables from the shell.

    PATH is a table directory (holding schema/, snapshot/, manifest/...), e.g.
    warehouse/db.db/orders, or an object-store URL such as s3://bucket/db.db/orders (see
    --storage-option). Inspect with info, snapshots, schema, tags, files, system, cat, tail and
    doctor; maintain with compact, expire-snapshots, remove-orphans, tags create/delete,
    rollback, drop-partition, expire-partitions, consumers and branches. Durations: 30s, 10min,
    1h, 2d. With --branch NAME every command acts on that branch of the table.

    Exit codes: 0 ok, 1 unexpected error, 2 bad usage or argument,
    3 table/snapshot/schema/tag not found, 4 corrupt metadata or data.
    """
    ctx.obj = (storage_options, branch)


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
    click.echo("")
    click.echo(f"branch: {d['branch']}; other branches: {', '.join(d['branches']) or '-'}")


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


def _fmt_local_time(value: Any) -> Any:
    """A tag's create time as Paimon writes it (a Java LocalDateTime: ``[y, m, d, h, mi, s, ns]``)."""
    if isinstance(value, list) and 3 <= len(value) <= 7 and all(isinstance(v, int) for v in value):
        parts = [*value, 0, 0, 0, 0][:7]
        try:
            return _dt.datetime(*parts[:6], parts[6] // 1000).isoformat(sep=" ", timespec="milliseconds")
        except ValueError:
            pass
    return value


def _fmt_retained(value: Any) -> Any:
    """A tag's retention as Paimon writes it (a Java Duration: seconds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _fmt_duration(_dt.timedelta(seconds=value))
    return value


class _PathGroup(click.Group):
    """A subcommand group whose first argument may be PATH: ``tags PATH`` runs ``tags list PATH``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("subcommand_metavar", "PATH | COMMAND [ARGS]...")
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["list", *args]
        return super().parse_args(ctx, args)


@main.group(cls=_PathGroup, short_help="List, create and delete the tags of a table.")
def tags() -> None:
    """List (the default: `tags PATH` is `tags list PATH`), create and delete the tags of the
    table at PATH. A tag keeps its snapshot and files readable after the snapshot expires."""


@tags.command("list", short_help="List the tags of a table.")
@_PATH
@_JSON
@_guarded
def tags_list(path: str, as_json: bool) -> None:
    """List the tags of the table at PATH (sorted by name) with the snapshot each one keeps."""
    tag_list = _open(path).tags()
    if as_json:
        _emit_json([tg.to_dict() for tg in tag_list])
        return
    _print_table([[tg.name, tg.snapshot_id, tg.schema_id, _fmt_time(tg.time_millis), _fmt_local_time(tg.create_time),
                   _fmt_retained(tg.time_retained)] for tg in tag_list],
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
    click.echo(f"({_count(len(rows), 'file')}, {_count(sum(r['rows'] for r in rows), 'row')}, "
               f"{_count(sum(r['size'] for r in rows), 'byte')})")


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
        click.echo(f"({_count(count, 'row')})")


# ---- maintenance: argument types and helpers ----------------------------------------------------

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


def _ms(delta: _dt.timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _fmt_duration(delta: _dt.timedelta) -> str:
    ms = _ms(delta)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


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
    null_name = t.options.get("partition.default-name", "__DEFAULT_PARTITION__")
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


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


_MEMORY_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
                 "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40,
                 "tb": 1 << 40, "tib": 1 << 40}


def _memory_size(text: str, option: str) -> int:
    """A Paimon memory size (``128 mb``, ``256MB``, ``1gb``, ``1024``) in bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).lower() not in _MEMORY_UNITS:
        raise exc.InvalidArgumentError(f"bad table option {option}={text!r}: expected a memory size like 128mb")
    return int(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]


def _int_option(t: Table, key: str, default: int) -> int:
    text = t.options.get(key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise exc.InvalidArgumentError(f"bad table option {key}={text!r}: expected an integer") from None


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


def _interactive() -> bool:
    """Whether a confirmation can be asked (stdin is a terminal)."""
    return sys.stdin.isatty()


def _rel(t: Table, path: str) -> str:
    root = t.path.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path


_PARTITION_OPT_HELP = ("k=v[,k=v...]: one partition (values converted to the column types; "
                       "__DEFAULT_PARTITION__ is null). Repeat for more partitions.")


# ---- tags -----------------------------------------------------------------------------------------


@tags.command("create", short_help="Tag a snapshot (the latest by default).")
@_PATH
@click.argument("name", metavar="NAME")
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Tag snapshot N (default: the latest).")
@click.option("--retain", type=_DURATION, metavar="DURATION",
              help="Let writers expire the tag DURATION after it is created, e.g. 7d (default: the table's "
                   "tag.default-time-retained, else kept until deleted).")
@_JSON
@_guarded
def tags_create(path: str, name: str, snapshot_id: int | None, retain: _dt.timedelta | None, as_json: bool) -> None:
    """Create tag NAME on a snapshot of the table at PATH (the latest by default). The tag keeps
    the snapshot and its files readable (`cat --tag NAME`) after the snapshot expires. Fails with
    exit 1 if the tag exists."""
    tag = _open(path).create_tag(name, snapshot_id, retain)
    if as_json:
        _emit_json(tag.to_dict())
        return
    kept = f", retained {_fmt_duration(retain)}" if retain is not None else ""
    click.echo(f"created tag {tag.name} on snapshot {tag.snapshot_id}{kept}")


@tags.command("delete", short_help="Delete a tag.")
@_PATH
@click.argument("name", metavar="NAME")
@_JSON
@_guarded
def tags_delete(path: str, name: str, as_json: bool) -> None:
    """Delete tag NAME of the table at PATH. When its snapshot has expired, the files only the
    tag kept are deleted too. Exit 3 if there is no such tag."""
    counts = _open(path).delete_tag(name)
    if as_json:
        _emit_json({"tag": name, **counts})
        return
    click.echo(f"deleted tag {name} ({_summary(counts)} removed)")


# ---- branches -------------------------------------------------------------------------------------


@main.group(cls=_PathGroup, short_help="List, create, delete and fast-forward branches.")
def branches() -> None:
    """List (the default: `branches PATH` is `branches list PATH`), create, delete and
    fast-forward the branches of the table at PATH. A branch has its own snapshots, schemas and
    tags and shares data files; read or write one with `tidelake --branch NAME ...`."""


@branches.command("list", short_help="List the branches of a table.")
@_PATH
@_JSON
@_guarded
def branches_list(path: str, as_json: bool) -> None:
    """List the branches of the table at PATH besides main, sorted."""
    names = _open(path).branches()
    if as_json:
        _emit_json(names)
        return
    for name in names:
        click.echo(name)
    click.echo(f"({len(names)} branches)")


@branches.command("create", short_help="Create a branch (from a snapshot, a tag, or empty).")
@_PATH
@click.argument("name", metavar="NAME")
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Start from snapshot N.")
@click.option("--tag", metavar="T", help="Start from tag T.")
@_guarded
def branches_create(path: str, name: str, snapshot_id: int | None, tag: str | None) -> None:
    """Create branch NAME of the table at PATH, starting from snapshot N or tag T (at most one),
    else empty with the latest schema."""
    _one_version(snapshot=snapshot_id, tag=tag)
    _open(path).create_branch(name, from_snapshot=snapshot_id, from_tag=tag)
    start = f"snapshot {snapshot_id}" if snapshot_id is not None else f"tag {tag}" if tag is not None else "empty"
    click.echo(f"created branch {name} ({start})")


@branches.command("delete", short_help="Delete a branch.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_delete(path: str, name: str) -> None:
    """Delete branch NAME of the table at PATH; files only it referenced become orphans
    (remove-orphans deletes them). Exit 3 if there is no such branch."""
    _open(path).delete_branch(name)
    click.echo(f"deleted branch {name}")


@branches.command("fast-forward", short_help="Replace a branch's history by another branch's.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_fast_forward(path: str, name: str) -> None:
    """Fast-forward the table at PATH (main, or --branch) to branch NAME: its snapshots, schemas
    and tags from NAME's earliest snapshot on are replaced by NAME's. Stop writers first."""
    t = _open(path).fast_forward(name)
    click.echo(f"fast-forwarded {t.branch} to {name} (latest snapshot {t.latest_snapshot().id})")


# ---- rollback -------------------------------------------------------------------------------------


@main.command(short_help="Make an older snapshot or tag the latest state again.")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Roll back to snapshot N.")
@click.option("--tag", metavar="T", help="Roll back to the snapshot tag T keeps.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed when stdin is not a terminal).")
@_JSON
@_guarded
def rollback(path: str, snapshot_id: int | None, tag: str | None, yes: bool, as_json: bool) -> None:
    """Roll the table at PATH back to snapshot N or tag T: newer snapshots and tags are deleted
    with the files only they referenced. Stop writers first. Asks for confirmation unless --yes;
    without --yes and without a terminal on stdin it fails with exit 2."""
    if (snapshot_id is None) == (tag is None):
        raise exc.InvalidArgumentError("give exactly one of --snapshot and --tag")
    t = _open(path)
    if tag is not None:
        found = [tg for tg in t.tags() if tg.name == tag]
        if not found:
            existing = ", ".join(tg.name for tg in t.tags()) or "none"
            raise exc.TableNotFoundError(f"tag {tag!r} not found in {t.path}; existing tags: [{existing}]")
        target = found[0].snapshot_id
        what = f"tag {tag} (snapshot {target})"
    else:
        target = t.snapshot(snapshot_id).id
        what = f"snapshot {target}"
    newer = [s.id for s in t.snapshots() if s.id > target]
    newer_tags = [tg.name for tg in t.tags() if tg.snapshot_id > target]
    if not yes:
        if not _interactive():
            raise exc.InvalidArgumentError("rollback needs confirmation: pass --yes (stdin is not a terminal)")
        lost = (f"snapshots {newer[0]}..{newer[-1]}" if len(newer) > 1 else
                f"snapshot {newer[0]}" if newer else "no snapshots")
        if newer_tags:
            lost += f" and tags {', '.join(newer_tags)}"
        if not click.confirm(f"Roll back {t.path} to {what}? This deletes {lost}.", default=False, err=True):
            _fail(RuntimeError("not confirmed; nothing was rolled back"), 1)
    result = t.rollback_to(snapshot_id=snapshot_id, tag=tag)
    if as_json:
        _emit_json(result)
        return
    deleted_tags = result.get("tags") or []
    click.echo(f"rolled back to {what}: deleted {result.get('snapshots', 0)} snapshots"
               f"{', tags ' + ', '.join(deleted_tags) if deleted_tags else ''}; {_summary(result)} removed")


# ---- expiration and cleanup ---------------------------------------------------------------------


@main.command("expire-snapshots", short_help="Expire old snapshots and the files only they use.")
@_PATH
@click.option("--retain-min", type=click.IntRange(min=1), metavar="N",
              help="Keep at least N snapshots (default: snapshot.num-retained.min, 10).")
@click.option("--retain-max", type=click.IntRange(min=1), metavar="N",
              help="Keep at most N snapshots, however recent (default: snapshot.num-retained.max).")
@click.option("--older-than", type=_DURATION, metavar="DURATION",
              help="Expire only snapshots older than DURATION, e.g. 1h, 7d (default: "
                   "snapshot.time-retained, 1h).")
@click.option("--max-deletes", type=click.IntRange(min=0), metavar="N",
              help="Expire at most N snapshots in this run (default: snapshot.expire.limit, 50).")
@_JSON
@_guarded
def expire_snapshots(path: str, retain_min: int | None, retain_max: int | None,
                     older_than: _dt.timedelta | None, max_deletes: int | None, as_json: bool) -> None:
    """Expire old snapshots of the table at PATH and delete the data, changelog and manifest
    files only they referenced. Snapshots a tag or a consumer needs stay readable. There is no
    dry run: `tidelake snapshots PATH` shows what exists."""
    t = _open(path)
    cutoff = None if older_than is None else _now_ms() - _ms(older_than)
    limit = max_deletes if max_deletes is not None else _int_option(t, "snapshot.expire.limit", 50)
    keep = retain_min if retain_min is not None else _int_option(t, "snapshot.num-retained.min", 10)
    expected = max(0, min(limit, len(t.snapshots()) - keep))
    chunk = max(1, math.ceil(expected / 20))
    total: dict[str, Any] = {}
    left = limit
    with _progress(expected, "expiring snapshots", show=not as_json) as bar:
        while True:
            n = min(chunk, left)
            r = t.expire_snapshots(retain_min, retain_max, cutoff, n)
            for k, v in r.items():
                total[k] = v if k == "earliest_snapshot" else total.get(k, 0) + (v or 0)
            bar.update(r.get("snapshots", 0))
            left -= r.get("snapshots", 0)
            if left <= 0 or r.get("snapshots", 0) < n:
                break
    if as_json:
        _emit_json(total)
        return
    if not total.get("snapshots"):
        click.echo(f"nothing to expire (earliest snapshot {total.get('earliest_snapshot')})")
        return
    click.echo(f"expired {total['snapshots']} snapshots, earliest is now {total.get('earliest_snapshot')}; "
               f"deleted {_summary(total)}")


@main.command("remove-orphans", short_help="Delete files no snapshot or tag references.")
@_PATH
@click.option("--older-than", type=_DURATION, default="1d", show_default=True, metavar="DURATION",
              help="Only files last modified more than DURATION ago (files of running writers are "
                   "younger), e.g. 1h, 2d.")
@click.option("--dry-run", is_flag=True, help="Only list the orphan files; delete nothing.")
@_JSON
@_guarded
def remove_orphans(path: str, older_than: _dt.timedelta, dry_run: bool, as_json: bool) -> None:
    """Delete the files under the table at PATH that no snapshot, tag or branch references (left
    by failed or killed writers) and that are older than --older-than. Lists each orphan with
    its size; --dry-run lists without deleting."""
    t = _open(path)
    found = t.remove_orphan_files(_now_ms() - _ms(older_than), dry_run)
    total = sum(size for _, size in found)
    if as_json:
        _emit_json({"dry_run": dry_run, "older_than": _fmt_duration(older_than), "count": len(found),
                    "bytes": total, "files": [{"path": p, "size": size} for p, size in found]})
        return
    _print_table([[_rel(t, p), size] for p, size in sorted(found)], ["orphan file", "size"])
    verb = "would be deleted (dry run)" if dry_run else "deleted"
    click.echo(f"({len(found)} orphan files, {total} bytes {verb})")


@main.command("expire-partitions", short_help="Drop partitions older than a duration.")
@_PATH
@click.option("--older-than", type=_DURATION, metavar="DURATION",
              help="Drop partitions older than DURATION, e.g. 30d (default: the table's "
                   "partition.expiration-time). Age follows partition.expiration-strategy: the "
                   "partition values (values-time) or the last write (update-time).")
@_JSON
@_guarded
def expire_partitions(path: str, older_than: _dt.timedelta | None, as_json: bool) -> None:
    """Drop the partitions of the table at PATH older than --older-than in one OVERWRITE
    snapshot, and list them."""
    dropped = _open(path).expire_partitions(older_than)
    if as_json:
        _emit_json(dropped)
        return
    for spec in dropped:
        click.echo(_spec_text(spec))
    click.echo(f"({len(dropped)} partitions expired)")


@main.command("drop-partition", short_help="Drop one or more partitions.")
@_PATH
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, required=True, metavar="k=v[,k=v]",
              help=_PARTITION_OPT_HELP + " A partial spec (dt=2024-05-14 of dt,hour) drops every match.")
@_JSON
@_guarded
def drop_partition(path: str, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Drop the partitions of the table at PATH given with --partition in one OVERWRITE snapshot.
    Older snapshots still read them until they expire.

    \b
    Example: tidelake drop-partition wh/db.db/orders --partition dt=2024-05-14,hour=3
    """
    t = _open(path)
    specs = _typed_partitions(t, partitions)
    before = t.latest_snapshot()
    sid = t.drop_partitions(specs)
    after = t.snapshot(sid) if sid is not None else None
    result = {"snapshot_id": sid, "partitions": [{k: _json_value(v) for k, v in s.items()} for s in specs],
              "records_before": before.total_record_count if before else 0,
              "records_after": after.total_record_count if after else None}
    if as_json:
        _emit_json(result)
        return
    click.echo(f"dropped {'; '.join(_spec_text(s) for s in specs)} in snapshot {sid}: "
               f"{result['records_before']} -> {result['records_after']} rows")


# ---- consumers ------------------------------------------------------------------------------------


@main.group(cls=_PathGroup, short_help="List, reset and delete streaming consumers.")
def consumers() -> None:
    """List (the default: `consumers PATH` is `consumers list PATH`), reset and delete the
    streaming consumers of the table at PATH. Snapshots a consumer will still read are not
    expired."""


@consumers.command("list", short_help="List the consumers of a table.")
@_PATH
@_JSON
@_guarded
def consumers_list(path: str, as_json: bool) -> None:
    """List the consumers of the table at PATH with the next snapshot each one will read."""
    found = _open(path).consumers()
    if as_json:
        _emit_json(found)
        return
    _print_table([[cid, nxt] for cid, nxt in sorted(found.items())], ["consumer", "next snapshot"])
    click.echo(f"({len(found)} consumers)")


@consumers.command("reset", short_help="Create or move a consumer.")
@_PATH
@click.argument("consumer_id", metavar="ID")
@click.option("--next-snapshot", type=click.IntRange(min=1), required=True, metavar="N",
              help="The next snapshot consumer ID reads; snapshots from N on are not expired.")
@_guarded
def consumers_reset(path: str, consumer_id: str, next_snapshot: int) -> None:
    """Create consumer ID of the table at PATH, or move it, so that it reads snapshot N next."""
    _open(path).reset_consumer(consumer_id, next_snapshot)
    click.echo(f"consumer {consumer_id} reads snapshot {next_snapshot} next")


@consumers.command("delete", short_help="Delete a consumer.")
@_PATH
@click.argument("consumer_id", metavar="ID")
@_guarded
def consumers_delete(path: str, consumer_id: str) -> None:
    """Delete consumer ID of the table at PATH; its snapshots may then expire."""
    _open(path).delete_consumer(consumer_id)
    click.echo(f"deleted consumer {consumer_id}")


# ---- system tables --------------------------------------------------------------------------------


@main.command(short_help="Print a system table (files, snapshots, manifests, ...).")
@_PATH
@click.argument("name", type=click.Choice(SYSTEM_TABLES), metavar="NAME")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Print at most N rows.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of objects, one per row.")
@_guarded
def system(path: str, name: str, limit: int | None, as_json: bool) -> None:
    """Print Paimon system table NAME (`table$NAME`) of the table at PATH. NAME is one of
    snapshots, schemas, options, files, manifests, partitions, buckets, tags, consumers,
    audit_log."""
    tbl = _open(path).system(name)
    if limit is not None:
        tbl = tbl.slice(0, limit)
    rows = tbl.to_pylist()
    if as_json:
        _emit_json([{k: _json_value(v) for k, v in r.items()} for r in rows])
        return
    _print_table([[_cell(r[c]) for c in tbl.column_names] for r in rows], tbl.column_names)
    click.echo(f"({_count(len(rows), 'row')})")


# ---- compaction -----------------------------------------------------------------------------------


def _level_counts(t: Table) -> tuple[int, int]:
    """(data files, level-0 data files) of the latest snapshot."""
    levels = t.system("files").column("level").to_pylist()
    return len(levels), sum(1 for lv in levels if lv == 0)


@main.command(short_help="Compact a table (LSM trees of primary keys, small append files).")
@_PATH
@click.option("--full", is_flag=True, help="Rewrite every bucket into one sorted run at the top level.")
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, metavar="k=v[,k=v]",
              help="Compact only this partition (default: all). " + _PARTITION_OPT_HELP)
@_JSON
@_guarded
def compact(path: str, full: bool, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Compact the table at PATH into one COMPACT snapshot. Primary-key tables: without --full a
    bucket is compacted only when its sorted runs call for it (num-sorted-run.compaction-trigger,
    size amplification, size ratio); --full rewrites every bucket. Append tables: small files are
    merged as Paimon's append compaction picks them (compaction.min.file-num, target-file-size),
    deleted rows dropped. Reads return the same rows.
    A progress bar of the buckets rewritten goes to stderr."""
    t = _open(path)
    if not hasattr(t, "compact"):
        raise exc.UnsupportedError("compact is not available in this tidelake build")
    specs = _typed_partitions(t, partitions) if partitions else None
    files_before, l0_before = _level_counts(t)
    with contextlib.ExitStack() as stack:
        bars: list = []

        def progress(done: int, total: int) -> None:
            if not bars and total:  # the first call knows how many buckets there are
                bars.append(stack.enter_context(click.progressbar(
                    length=total, label="compacting buckets", file=sys.stderr, show_pos=True)))
            if bars:
                bars[0].update(done - bars[0].pos)

        sid = t.compact(full=full, partitions=specs, progress=progress)
    files_after, l0_after = _level_counts(t) if sid is not None else (files_before, l0_before)
    if as_json:
        _emit_json({"snapshot_id": sid, "files_before": files_before, "files_after": files_after,
                    "level0_files_before": l0_before, "level0_files_after": l0_after})
        return
    if sid is None:
        click.echo("nothing to compact (no bucket needed it; --full rewrites every bucket)")
        return
    click.echo(f"compacted into snapshot {sid}: data files {files_before} -> {files_after}, "
               f"level-0 files {l0_before} -> {l0_after}")


# ---- tail -----------------------------------------------------------------------------------------


@main.command(short_help="Print the changes of new snapshots as they arrive.")
@_PATH
@click.option("--from-snapshot", type=click.IntRange(min=1), metavar="N",
              help="Start with the changes of snapshot N (default: the earliest retained snapshot "
                   "with --no-follow; only new snapshots with --follow).")
@click.option("--follow/--no-follow", default=True, show_default=True,
              help="Keep polling for new snapshots (Ctrl-C stops), or print what exists and exit.")
@click.option("--interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True, metavar="SECONDS",
              help="Seconds between polls of the latest snapshot in --follow mode.")
@click.option("--max-batches", type=click.IntRange(min=1), metavar="N",
              help="Exit after printing the changes of N snapshots (snapshots without changes, "
                   "e.g. COMPACT, do not count).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON Lines: one object per change with _snapshot_id and _row_kind.")
@_guarded
def tail(path: str, from_snapshot: int | None, follow: bool, interval: float, max_batches: int | None,
         as_json: bool) -> None:
    """Print the changes each snapshot of the table at PATH committed, snapshot by snapshot,
    with their _row_kind (+I insert, -U/+U update before/after, -D delete). Tables with a
    changelog producer show their changelog; others the rows APPEND commits wrote."""
    t = _open(path)
    latest = t.latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    if from_snapshot is not None:
        next_id = from_snapshot
    elif follow:
        next_id = latest_id + 1
    else:
        snaps = t.snapshots()
        next_id = snaps[0].id if snaps else 1
    printed = 0
    try:
        while True:
            while next_id <= latest_id:
                changes = t.changes(next_id - 1, next_id)
                if changes.num_rows:
                    _print_changes(t, next_id, changes, as_json)
                    printed += 1
                    if max_batches is not None and printed >= max_batches:
                        return
                next_id += 1
            if not follow:
                return
            time.sleep(interval)
            latest = t.latest_snapshot()
            latest_id = latest.id if latest is not None else 0
    except KeyboardInterrupt:
        sys.exit(0)


def _print_changes(t: Table, snapshot_id: int, changes: Any, as_json: bool) -> None:
    rows = changes.to_pylist()
    if as_json:
        for row in rows:
            click.echo(json.dumps({"_snapshot_id": snapshot_id, **{k: _json_value(v) for k, v in row.items()}},
                                  ensure_ascii=False))
        return
    snap = t.snapshot(snapshot_id)
    click.echo(f"-- snapshot {snapshot_id} ({snap.commit_kind}, {_fmt_time(snap.time_millis)}): "
               f"{len(rows)} changes")
    _print_table([[_cell(r[c]) for c in changes.column_names] for r in rows], changes.column_names)


# ---- doctor ---------------------------------------------------------------------------------------

_MAX_SNAPSHOTS = 1000
_MAX_MANIFESTS = 500
_MAX_SMALL_SHARE = 0.5
_MAX_PLANNING_SECONDS = 5.0


def _n(count: int, noun: str) -> str:
    return f"{count} {noun} has" if count == 1 else f"{count} {noun}s have"


def _partition_text(t: Table, raw: str) -> str:
    """``{2024-01-01, 1}`` (the files system table) as ``dt=2024-01-01/p=1``."""
    keys = t.partition_keys
    if not keys:
        return "-"
    values = raw.strip("{}").split(", ")
    if len(values) != len(keys):
        return raw
    return "/".join(f"{k}={v}" for k, v in zip(keys, values))


def _diagnose(t: Table, shown_path: str, check_orphans: bool) -> dict[str, Any]:
    pk = bool(t.primary_keys)
    trigger = _int_option(t, "num-sorted-run.compaction-trigger", 5)
    stop = _int_option(t, "num-sorted-run.stop-trigger", trigger + 3)
    target_text = t.options.get("target-file-size")
    target = _memory_size(target_text, "target-file-size") if target_text else (128 << 20 if pk else 256 << 20)
    small_limit = target // 4

    started = time.perf_counter()
    t.scan()
    planning = time.perf_counter() - started

    buckets: dict[tuple[str, int], dict[str, Any]] = {}
    files = t.system("files").to_pylist()
    for f in files:
        b = buckets.setdefault((f["partition"], f["bucket"]), {
            "partition": _partition_text(t, f["partition"]), "bucket": f["bucket"], "files": 0,
            "level0_files": 0, "levels": set(), "small_files": 0, "rows": 0, "bytes": 0})
        b["files"] += 1
        b["rows"] += f["record_count"]
        b["bytes"] += f["file_size_in_bytes"]
        b["small_files"] += f["file_size_in_bytes"] < small_limit
        if f["level"] == 0:
            b["level0_files"] += 1
        else:
            b["levels"].add(f["level"])
    rows = []
    for b in sorted(buckets.values(), key=lambda b: (b["partition"], b["bucket"])):
        levels = b.pop("levels")
        b["sorted_runs"] = b["level0_files"] + len(levels)
        rows.append(b)

    n_snapshots = len(t.snapshots())
    n_manifests = t.system("manifests").num_rows
    small = sum(b["small_files"] for b in rows)
    share = small / len(files) if files else 0.0
    orphans = t.remove_orphan_files(_now_ms() - 86_400_000, dry_run=True) if check_orphans else None

    reasons: list[tuple[str, str]] = []
    suggest: list[str] = []
    quoted = shlex.quote(shown_path)
    if pk:
        stalled = [b for b in rows if b["sorted_runs"] > stop]
        busy = [b for b in rows if b["sorted_runs"] > trigger]
        worst = max(rows, key=lambda b: b["sorted_runs"], default=None)
        where = f"; most: {worst['sorted_runs']} in {worst['partition']} bucket {worst['bucket']}" if worst else ""
        if stalled:
            reasons.append(("BAD", f"{_n(len(stalled), 'bucket')} more than {stop} sorted runs "
                                   f"(num-sorted-run.stop-trigger: writers stall){where}"))
        elif busy:
            reasons.append(("WARN", f"{_n(len(busy), 'bucket')} more than {trigger} sorted runs "
                                    f"(num-sorted-run.compaction-trigger){where}"))
        if stalled or busy:
            suggest.append(f"tidelake compact {quoted}")
    if share > _MAX_SMALL_SHARE and small > len(rows):
        reasons.append(("WARN", f"{share:.0%} of data files are small (< {_human_bytes(small_limit)}, a quarter "
                                f"of target-file-size {_human_bytes(target)})"))
        if pk:
            suggest.append(f"tidelake compact {quoted} --full")
    if n_snapshots > _MAX_SNAPSHOTS:
        reasons.append(("WARN", f"{n_snapshots} snapshots (more than {_MAX_SNAPSHOTS})"))
        suggest.append(f"tidelake expire-snapshots {quoted}")
    if n_manifests > _MAX_MANIFESTS:
        reasons.append(("WARN", f"{n_manifests} manifest files (more than {_MAX_MANIFESTS}) slow down planning"))
    if planning > _MAX_PLANNING_SECONDS:
        reasons.append(("WARN", f"planning a read took {planning:.1f} s (more than {_MAX_PLANNING_SECONDS:.0f} s)"))
    if orphans:
        reasons.append(("WARN", f"{len(orphans)} orphan files ({_human_bytes(sum(s for _, s in orphans))}) "
                                f"older than 1 day"))
        suggest.append(f"tidelake remove-orphans {quoted}")
    verdict = "BAD" if any(level == "BAD" for level, _ in reasons) else "WARN" if reasons else "OK"
    if f"tidelake compact {quoted} --full" in suggest:  # it covers the plain compaction
        suggest = [s for s in suggest if s != f"tidelake compact {quoted}"]
    return {
        "path": t.path,
        "kind": "primary-key" if pk else "append",
        "snapshots": n_snapshots,
        "manifests": n_manifests,
        "planning_seconds": round(planning, 4),
        "files": len(files),
        "small_files": small,
        "small_file_share": round(share, 4),
        "target_file_size": target,
        "orphan_files": None if orphans is None else len(orphans),
        "orphan_bytes": None if orphans is None else sum(s for _, s in orphans),
        "thresholds": {"compaction_trigger": trigger, "stop_trigger": stop, "small_file_bytes": small_limit,
                       "small_file_share": _MAX_SMALL_SHARE, "snapshots": _MAX_SNAPSHOTS,
                       "manifests": _MAX_MANIFESTS, "planning_seconds": _MAX_PLANNING_SECONDS},
        "buckets": rows,
        "verdict": verdict,
        "reasons": [f"{level}: {text}" for level, text in reasons],
        "suggestions": list(dict.fromkeys(suggest)),
    }


@main.command(short_help="Check a table's health; suggest maintenance commands.")
@_PATH
@click.option("--skip-orphans", is_flag=True, help="Do not list the table directory for orphan files.")
@_JSON
@_guarded
def doctor(path: str, skip_orphans: bool, as_json: bool) -> None:
    """Check the health of the table at PATH and suggest maintenance commands. Reports, per
    bucket, data files, level-0 files and sorted runs (each level-0 file is a run, plus one per
    non-empty level >= 1); the share of small files (< 1/4 of target-file-size, default 128mb
    for primary-key and 256mb for append tables); manifest files; snapshots; orphan files older
    than 1d; and the time to plan a read.

    \b
    Verdict (exit 0 whatever it is):
      BAD   a bucket has more sorted runs than num-sorted-run.stop-trigger (default
            compaction-trigger + 3): writers stall.
      WARN  a bucket has more sorted runs than num-sorted-run.compaction-trigger (default 5);
            more than 50% of data files are small (and more than one per bucket);
            more than 1000 snapshots; more than 500 manifest files; planning takes more
            than 5 s; orphan files exist.
      OK    none of the above.
    """
    d = _diagnose(_open(path), path, check_orphans=not skip_orphans)
    if as_json:
        _emit_json(d)
        return
    click.echo(f"table:        {d['path']} ({d['kind']}, {len(d['buckets'])} buckets)")
    click.echo(f"snapshots:    {d['snapshots']}")
    click.echo(f"manifests:    {d['manifests']}")
    click.echo(f"planning:     {d['planning_seconds']:.3f} s")
    small = _human_bytes(d["thresholds"]["small_file_bytes"])
    click.echo(f"data files:   {d['files']}, {d['small_files']} small (< {small}): {d['small_file_share']:.0%}")
    if d["orphan_files"] is not None:
        click.echo(f"orphan files: {d['orphan_files']} ({_human_bytes(d['orphan_bytes'])}, older than 1d)")
    click.echo("")
    _print_table([[b["partition"], b["bucket"], b["files"], b["level0_files"], b["sorted_runs"], b["small_files"],
                   b["rows"], _human_bytes(b["bytes"])] for b in d["buckets"]],
                 ["partition", "bucket", "files", "level-0", "runs", "small", "rows", "size"])
    click.echo("")
    click.echo(f"verdict: {d['verdict']}")
    for reason in d["reasons"]:
        click.echo(f"  - {reason}")
    if d["suggestions"]:
        click.echo("suggested:")
        for s in d["suggestions"]:
            click.echo(f"  {s}")


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="tidelake")
