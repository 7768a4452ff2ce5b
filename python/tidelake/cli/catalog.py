"""``tidelake catalog ...``: the databases and tables of the catalog given with ``--catalog``
or ``--catalog-file`` (Paimon's catalog options)."""

from __future__ import annotations

import click

from .. import exceptions as exc
from ..catalog import Catalog
from ._app import _JSON, _catalog, _emit_json, _guarded, _key_values, main
from ._format import _print_table


def _required() -> Catalog:
    catalog = _catalog()
    if catalog is None:
        raise exc.InvalidArgumentError("no catalog: give --catalog KEY=VALUE ... or --catalog-file FILE "
                                       "(e.g. --catalog metastore=jdbc --catalog warehouse=... --catalog uri=jdbc:...)")
    return catalog


@main.group(short_help="Databases and tables of the catalog (--catalog / --catalog-file).")
def catalog() -> None:
    """List, create, rename and drop the databases and tables of the catalog given with
    --catalog KEY=VALUE (repeatable) or --catalog-file FILE, Paimon's catalog options.

    \b
    Example:
      tidelake -c metastore=jdbc -c warehouse=/data/wh -c uri=jdbc:sqlite:/data/catalog.db catalog tables sales
    """


@catalog.command(short_help="List the databases.")
@_JSON
@_guarded
def databases(as_json: bool) -> None:
    """List the databases of the catalog, one name a line."""
    names = _required().list_databases()
    if as_json:
        _emit_json(names)
        return
    for name in names:
        click.echo(name)


@catalog.command(short_help="List the tables of a database.")
@click.argument("database")
@_JSON
@_guarded
def tables(database: str, as_json: bool) -> None:
    """List the tables of DATABASE in the catalog, one name a line."""
    names = _required().list_tables(database)
    if as_json:
        _emit_json(names)
        return
    for name in names:
        click.echo(name)


@catalog.command("database", short_help="Show a database's properties.")
@click.argument("database")
@_JSON
@_guarded
def database(database: str, as_json: bool) -> None:
    """Show the properties the catalog keeps for DATABASE."""
    props = _required().database_properties(database)
    if as_json:
        _emit_json(props)
        return
    _print_table([[k, v] for k, v in sorted(props.items())], ["property", "value"])


@catalog.command("create-database", short_help="Create a database.")
@click.argument("database")
@click.option("--if-not-exists", is_flag=True, help="Do nothing if it exists.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", callback=_key_values,
              help="A database property (JDBC, REST or Hive catalog; repeatable).")
@_guarded
def create_database(database: str, if_not_exists: bool, properties: dict[str, str] | None) -> None:
    """Create DATABASE in the catalog, with optional properties."""
    _required().create_database(database, ignore_if_exists=if_not_exists, properties=properties)
    click.echo(f"created database {database}")


@catalog.command("drop-database", short_help="Drop a database.")
@click.argument("database")
@click.option("--cascade", is_flag=True, help="Drop a database that still has tables.")
@_guarded
def drop_database(database: str, cascade: bool) -> None:
    """Drop DATABASE from the catalog; --cascade drops its tables too."""
    _required().drop_database(database, cascade=cascade)
    click.echo(f"dropped database {database}")


@catalog.command("drop-table", short_help="Drop a table and delete its files.")
@click.argument("table", metavar="DB.TABLE")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@_guarded
def drop_table(table: str, yes: bool) -> None:
    """Drop DB.TABLE from the catalog and delete its files (asks first unless --yes)."""
    if not yes:
        click.confirm(f"drop {table} and delete its files?", abort=True)
    _required().drop_table(table)
    click.echo(f"dropped table {table}")


@catalog.command("rename-table", short_help="Rename a table.")
@click.argument("source", metavar="DB.TABLE")
@click.argument("target", metavar="DB.NEW")
@_guarded
def rename_table(source: str, target: str) -> None:
    """Rename the table DB.TABLE to DB.NEW in the catalog."""
    _required().rename_table(source, target)
    click.echo(f"renamed {source} to {target}")
