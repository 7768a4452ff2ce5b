"""The root ``tidelake`` group: global options, one-line errors with exit codes, shared
arguments and the table opener every command uses."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from .. import exceptions as exc
from ..catalog import Catalog
from ..table import Table, open_table

_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (exc.TableNotFoundError, 3),
    (exc.CorruptMetadataError, 4),
    (exc.InvalidArgumentError, 2),
    (exc.TidelakeError, 1),
]


def _one_line(text: object) -> str:
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


class _PathGroup(click.Group):
    """A subcommand group whose first argument may be PATH: ``tags PATH`` runs ``tags list PATH``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("subcommand_metavar", "PATH | COMMAND [ARGS]...")
        super().__init__(*args, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["list", *args]
        return super().parse_args(ctx, args)


def _catalog() -> Catalog | None:
    """The catalog of ``--catalog`` / ``--catalog-file``, built once per command; None without."""
    root = click.get_current_context().find_root()
    storage_options, _, options = root.obj
    if not options:
        return None
    if "catalog" not in root.meta:
        root.meta["catalog"] = Catalog.from_options(options, storage_options)
    return root.meta["catalog"]


def _open(path: str) -> Table:
    """The table at PATH, or, with a catalog, the table of identifier PATH (``db.table``)."""
    storage_options, branch, _ = click.get_current_context().find_root().obj
    catalog = _catalog()
    if catalog is not None:
        return catalog.get_table(path if branch is None else f"{path}$branch_{branch}")
    if "://" not in path:  # a local path: resolve `..` and symlinked cwd segments for the engine
        path = os.path.abspath(path)
    return open_table(path, storage_options=storage_options, branch=branch)


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


_PATH = click.argument("path", metavar="PATH")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _key_values(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str] | None:
    pairs = [v.partition("=") for v in values]
    bad = [v for v, (_, eq, _) in zip(values, pairs) if not eq]
    if bad:
        raise click.BadParameter(f"{bad[0]!r} is not KEY=VALUE", ctx=ctx, param=param)
    return {k: v for k, _, v in pairs} or None


def _read_catalog_file(path: str) -> dict[str, str]:
    """A catalog config file: a JSON object, or ``key=value`` lines (``#`` comments), as
    Paimon's catalog properties."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        loaded = json.loads(text)
        if not isinstance(loaded, dict):
            raise exc.InvalidArgumentError(f"catalog file {path}: expected a JSON object")
        return {str(k): str(v) for k, v in loaded.items()}
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq:
            raise exc.InvalidArgumentError(f"catalog file {path}, line {number}: expected key=value")
        out[key.strip()] = value.strip()
    return out


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tidelake", prog_name="tidelake")
@click.option("-o", "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
              callback=_key_values,
              help="Object-store setting for s3://, gs://, az:// paths, e.g. aws_endpoint=http://... "
                   "(repeatable; AWS_* and other standard environment variables apply too).")
@click.option("-b", "--branch", metavar="NAME", help="Act on branch NAME of the table (default: main).")
@click.option("-c", "--catalog", "catalog_options", multiple=True, metavar="KEY=VALUE", callback=_key_values,
              help="A Paimon catalog option, e.g. metastore=jdbc, warehouse=..., uri=jdbc:... (repeatable): "
                   "PATH is then a table identifier db.table of that catalog.")
@click.option("--catalog-file", metavar="FILE", type=click.Path(exists=True, dir_okay=False),
              help="Catalog options from FILE (JSON object or key=value lines); --catalog adds to them.")
@click.pass_context
def main(ctx: click.Context, storage_options: dict[str, str] | None, branch: str | None,
         catalog_options: dict[str, str] | None, catalog_file: str | None) -> None:
    """tidelake: inspect, read and maintain Apache Paimon tables from the shell.

    PATH is a table directory (holding schema/, snapshot/, manifest/...), e.g.
    warehouse/db.db/orders, or an object-store URL such as s3://bucket/db.db/orders (see
    --storage-option). Inspect with info, snapshots, schema, tags, files, system, cat, tail and
    doctor; create tables and load Parquet/CSV/JSON files with create and load; maintain with
    compact, expire-snapshots, remove-orphans, tags create/delete, rollback, drop-partition,
    expire-partitions, consumers and branches, or let `maintain` plan and run what a table or a
    warehouse needs; query a warehouse with `sql`; browse a table or warehouse with `ui` (a
    read-only web page). Durations: 30s, 10min, 1h, 2d. With --branch NAME every command acts on
    that branch of the table. With --catalog KEY=VALUE (or --catalog-file) PATH names a table of
    that Paimon catalog, db.table (the filesystem, JDBC, REST or Hive catalog: metastore=...,
    warehouse=..., uri=...); `tidelake catalog` lists, creates, renames and drops its databases
    and tables.

    Exit codes: 0 ok, 1 unexpected error, 2 bad usage or argument,
    3 table/snapshot/schema/tag not found, 4 corrupt metadata or data,
    5 `doctor --verify` found violations, 6 a `maintain` job failed,
    7 `maintain`'s time budget left jobs unrun.
    """
    try:
        options = {**(_read_catalog_file(catalog_file) if catalog_file else {}), **(catalog_options or {})}
    except (exc.TidelakeError, ValueError, OSError) as e:
        raise click.BadParameter(str(e), param_hint="--catalog-file") from e
    ctx.obj = (storage_options, branch, options or None)

