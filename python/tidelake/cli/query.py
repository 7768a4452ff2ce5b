"""``tidelake sql QUERY``: a SQL query over the tables of a warehouse (``--warehouse``) or of the
catalog of ``--catalog`` / ``--catalog-file``, run by :func:`tidelake.sql_reader` (DuckDB) and
printed as ``cat`` prints rows."""

from __future__ import annotations

import os

import click

from .. import exceptions as exc
from ..query import sql_reader
from ._app import _catalog, _guarded, main
from ._format import _print_rows


@main.command("sql", short_help="Run a SQL query over tables (DuckDB; time travel, system tables).")
@click.argument("query")
@click.option("-w", "--warehouse", metavar="DIR",
              help="The warehouse whose tables db.t names (a filesystem catalog; or give the root --catalog).")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Print at most N rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON Lines: one object per row (bytes as hex, decimals and times as strings).")
@_guarded
def sql(query: str, warehouse: str | None, limit: int | None, as_json: bool) -> None:
    """Run QUERY, a Spark SQL query as Paimon writes it, and print its rows. Tables are db.t of
    the warehouse (--warehouse) or catalog (--catalog / --catalog-file), or tidelake.`/path/to/t`
    by path; db.t VERSION AS OF 3 (a snapshot), VERSION AS OF 'tag' and TIMESTAMP AS OF
    '2026-05-01 12:00:00' read older snapshots; db.`t$snapshots` (any system table) reads
    metadata. Columns and filters are pushed into tidelake's reads. Needs tidelake[duckdb].

    \b
    Examples:
      tidelake sql "SELECT region, sum(qty) FROM db.orders WHERE qty > 10 GROUP BY region" -w /data/wh
      tidelake sql 'SELECT snapshot_id, commit_kind FROM db.`orders$snapshots`' -w /data/wh --json
    """
    storage_options = click.get_current_context().find_root().obj[0]
    catalog = _catalog()
    if warehouse is not None and catalog is not None:
        raise exc.InvalidArgumentError("give --warehouse or --catalog/--catalog-file, not both")
    if warehouse is not None and "://" not in warehouse:
        warehouse = os.path.abspath(warehouse)
    reader = sql_reader(query, warehouse=warehouse, catalog=catalog, storage_options=storage_options)
    _print_rows(reader, limit=limit, as_json=as_json)
