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


@catalog.command("migrate-table", short_help="Turn a Hive table into a Paimon table in place.")
@click.argument("source", metavar="DB.TABLE")
@click.option("--target", metavar="DB.NEW", help="Migrate into this table (created if missing); the Hive "
                                                  "table keeps its name.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", callback=_key_values,
              help="An option of the new Paimon table (repeatable).")
@click.option("--keep-origin", is_flag=True, help="Keep the (then empty) Hive table in the metastore.")
@_guarded
def migrate_table(source: str, target: str | None, options: dict[str, str] | None, keep_origin: bool) -> None:
    """Move the files of Hive table DB.TABLE (Parquet, ORC or Avro; Hive catalog) into a Paimon
    append table, Paimon's migrate_table procedure. Stop the Hive table's writers first."""
    table = _required().migrate_table(source, target=target, options=options, delete_origin=not keep_origin)
    click.echo(f"migrated {source} to {target or source} ({table.path})")


@catalog.command("migrate-database", short_help="Migrate every Hive table of a database into Paimon tables.")
@click.argument("database", metavar="DB")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", callback=_key_values,
              help="An option of the new Paimon tables (repeatable).")
@_guarded
def migrate_database(database: str, options: dict[str, str] | None) -> None:
    """Migrate every table of Hive database DB (Hive catalog) in place, as migrate-table does one,
    Paimon's migrate_database procedure; a table that fails is reported and the others go on."""
    migrated, failed = _required().migrate_database(database, options=options)
    for table in migrated:
        click.echo(f"migrated {table}")
    for table, error in failed:
        click.echo(f"failed {table}: {error}")


_CLONE_FROM = click.option("--from", "clone_from", type=click.Choice(["hive", "paimon"]), default="hive",
                           show_default=True, help="What the source tables are: Hive tables or Paimon tables.")
_TARGET_CATALOG = click.option("--target-catalog", "target_catalog", multiple=True, metavar="KEY=VALUE",
                               callback=_key_values,
                               help="Options of the target's catalog (repeatable; default: the same catalog).")
_CLONE_OPTIONS = click.option("--option", "options", multiple=True, metavar="KEY=VALUE", callback=_key_values,
                              help="An option of a new target table cloned from Hive (repeatable).")
_WHERE = click.option("--where", metavar="FILTER", help="Only the partitions this filter on partition columns selects.")


@catalog.command("clone-table", short_help="Copy a Hive or Paimon table into a Paimon table.")
@click.argument("source", metavar="DB.TABLE")
@click.argument("target", metavar="DB.TARGET")
@_TARGET_CATALOG
@_CLONE_OPTIONS
@_WHERE
@_CLONE_FROM
@_guarded
def clone_table(source: str, target: str, target_catalog: dict[str, str] | None, options: dict[str, str] | None,
                where: str | None, clone_from: str) -> None:
    """Copy table DB.TABLE (a Hive table of a Hive catalog, or with --from paimon a Paimon table)
    into Paimon table DB.TARGET, replacing the partitions copied, Paimon's clone procedure; the
    source stays as it is."""
    into = Catalog.from_options(target_catalog) if target_catalog else None
    snapshot = _required().clone_table(source, target, target_catalog=into, options=options, where=where,
                                       clone_from=clone_from)
    click.echo(f"cloned {source} to {target}" + (f" (snapshot {snapshot})" if snapshot is not None else
                                                 " (nothing to copy)"))


@catalog.command("clone-tables", short_help="Copy the tables of a database or catalog into Paimon tables.")
@click.option("--database", metavar="DB", help="The source database (default: every database).")
@click.option("--target-database", metavar="DB", help="The target database (with --database).")
@click.option("--include", "included", multiple=True, metavar="DB.TABLE", help="Only this table (repeatable).")
@click.option("--exclude", "excluded", multiple=True, metavar="DB.TABLE", help="Not this table (repeatable).")
@_TARGET_CATALOG
@_CLONE_OPTIONS
@_WHERE
@_CLONE_FROM
@_guarded
def clone_tables(database: str | None, target_database: str | None, included: tuple[str, ...],
                 excluded: tuple[str, ...], target_catalog: dict[str, str] | None, options: dict[str, str] | None,
                 where: str | None, clone_from: str) -> None:
    """Copy every table of database --database (into --target-database) or of the catalog (to the
    same names) into Paimon tables, Paimon's clone procedure; the sources stay as they are."""
    into = Catalog.from_options(target_catalog) if target_catalog else None
    cloned = _required().clone_tables(database, target_database=target_database, target_catalog=into,
                                      included_tables=list(included), excluded_tables=list(excluded),
                                      options=options, where=where, clone_from=clone_from)
    for source, target, snapshot in cloned:
        click.echo(f"cloned {source} to {target}" + (f" (snapshot {snapshot})" if snapshot is not None else
                                                     " (nothing to copy)"))
