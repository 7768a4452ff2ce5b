"""The ``tidelake`` command line.

Every command prints a human-readable view by default and JSON with ``--json``. User errors
(missing table, bad argument, corrupt metadata) print one line on stderr and exit non-zero
without a traceback:

* exit 1: an unexpected tidelake error (commit conflict, storage failure...);
* exit 2: bad usage (click's own code);
* exit 3: table, snapshot or tag not found;
* exit 4: corrupt metadata or data.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from typing import Any, Callable

import click

from . import exceptions as exc
from .table import Table, open_table

_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (exc.TableNotFoundError, 3),
    (exc.CorruptMetadataError, 4),
    (exc.InvalidArgumentError, 2),
    (exc.TidelakeError, 1),
]


def _fail(err: exc.TidelakeError) -> None:
    click.echo(f"error: {err}", err=True)
    for cls, code in _EXIT_CODES:
        if isinstance(err, cls):
            sys.exit(code)


def _fmt_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _print_table(rows: list[list[Any]], headers: list[str]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, r in enumerate(cells):
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


def _open(path: str) -> Table:
    try:
        return open_table(path)
    except exc.TidelakeError as e:
        _fail(e)
        raise  # unreachable: _fail exits


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Turn tidelake errors inside a command into one-line messages and exit codes."""

    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except exc.TidelakeError as e:
            _fail(e)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tidelake", prog_name="tidelake")
def main() -> None:
    """tidelake: inspect and maintain Apache Paimon tables from the shell."""


@main.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@_guarded
def info(path: str, as_json: bool) -> None:
    """Show a table's schema, keys, options, snapshots and tags."""
    t = _open(path)
    d = _info_dict(t)
    if as_json:
        click.echo(json.dumps(d, indent=2))
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


if __name__ == "__main__":  # pragma: no cover
    main()
