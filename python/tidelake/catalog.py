"""Catalogs: tables by ``database.table``, configured with Paimon's catalog options.

* ``Catalog(warehouse)`` or ``Catalog.from_options({"warehouse": ...})``: the filesystem catalog
  (``<warehouse>/<database>.db/<table>/``), Paimon's default;
* ``Catalog.from_options({"metastore": "jdbc", "uri": "jdbc:postgresql://...", ...})``: Paimon's
  JDBC catalog (PostgreSQL or SQLite); without ``uri``, a SQLite file next to a local warehouse;
* ``Catalog.from_options({"metastore": "rest", "uri": "http://host:port", "warehouse": name,
  "token.provider": "bear", "token": ...})``: a Paimon REST catalog server;
* ``Catalog.from_options({"metastore": "hive", "uri": "thrift://host:9083", "warehouse": ...})``:
  Paimon's Hive catalog, tables registered in a Hive Metastore as Java's ``HiveCatalog`` does.

With ``lock.enabled`` (the default on object stores for the JDBC and Hive catalogs, as in Java),
commits and schema changes of tables opened here take Paimon's JDBC lock, or its Hive lock (the
metastore's table lock), which Java writers take too.
Tables of a REST catalog commit through the server's commit endpoint, and their schema changes
go to the server, so the server decides between every engine's committers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _internal
from ._metadata import Partition
from .exceptions import InvalidArgumentError
from .expr import filter_json, to_filter
from .maintenance import GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE
from .table import Table, _option_pairs, _schema_of, _storage_options

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Catalog"]


class Catalog:
    """Databases and tables of one warehouse, compatible with Paimon's catalogs: Java and
    pypaimon open the tables this catalog creates, and the reverse."""

    def __init__(self, warehouse: str | os.PathLike[str], storage_options: dict[str, str] | None = None) -> None:
        """The filesystem catalog of ``warehouse`` (a directory or an object-store URL);
        ``storage_options`` as for :func:`tidelake.open_table`."""
        self._raw = _internal.RawCatalog(os.fspath(warehouse), _storage_options(storage_options))

    @classmethod
    def from_options(cls, options: Mapping[str, str], storage_options: dict[str, str] | None = None) -> Catalog:
        """The catalog Paimon's catalog ``options`` describe, with Paimon's option names:

        * ``metastore``: ``filesystem`` (default), ``jdbc``, ``rest`` or ``hive``;
        * ``warehouse`` (required): where the tables' files live (REST: the name of the
          warehouse the server serves);
        * REST: ``uri`` (``http://host:port``), ``token.provider`` (``bear``) and ``token``,
          ``header.<name>`` HTTP headers; the server's configuration adds the rest (its
          ``prefix``);
        * ``uri``: the JDBC URL (``jdbc:postgresql://host:port/db``, ``jdbc:sqlite:/path/file.db``);
          ``jdbc.user``, ``jdbc.password`` and other ``jdbc.*`` connection properties;
          ``catalog-key`` (default ``jdbc``) names this catalog's rows;
        * Hive: ``uri`` (``thrift://host:port``, comma-separated for several metastores),
          ``sync-all-properties`` (default true: every table option becomes a table parameter);
          new databases go to ``<warehouse>/<name>.db``;
        * ``lock.enabled`` (default: true on object stores), ``lock-acquire-timeout`` (8 min),
          ``lock-check-max-sleep`` (8 s): Paimon's JDBC commit lock, or for a Hive catalog its
          Hive lock; the filesystem catalog takes the JDBC lock with ``lock.type=jdbc`` and the
          lock database's ``uri``;
        * ``table-default.<key>``: options of every table created here.

        ``storage_options`` configure the warehouse's object store, as for
        :func:`tidelake.open_table`. Raises InvalidArgumentError for a bad option,
        UnsupportedError for a metastore, JDBC database or option tidelake does not speak,
        StorageError when the database, server or metastore cannot be reached or refuses the
        token.
        """
        if not isinstance(options, Mapping):
            raise TypeError(f"options must be a mapping, got {type(options).__name__}")
        catalog = cls.__new__(cls)
        catalog._raw = _internal.RawCatalog.from_options([(str(k), str(v)) for k, v in options.items()],
                                                         _storage_options(storage_options))
        return catalog

    @property
    def warehouse(self) -> str:
        return self._raw.location

    @property
    def options(self) -> dict[str, str]:
        """The catalog options, with the defaults chosen (e.g. the SQLite ``uri``)."""
        return dict(self._raw.options)

    @property
    def lock_enabled(self) -> bool:
        """Whether commits of this catalog's tables take Paimon's JDBC or Hive lock."""
        return self._raw.lock_enabled

    def __repr__(self) -> str:
        return f"<tidelake.Catalog {self.warehouse!r}>"

    def list_databases(self) -> list[str]:
        return self._raw.list_databases()

    def create_database(self, name: str, ignore_if_exists: bool = False,
                        properties: dict[str, str] | None = None) -> None:
        """Raises TableAlreadyExistsError if it exists (unless ``ignore_if_exists``).
        ``properties`` are kept by the JDBC, REST and Hive catalogs (a Hive Metastore keeps
        ``comment``, ``owner`` and ``location`` in their own fields)."""
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        self._raw.create_database(name, ignore_if_exists, props)

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's properties (``location`` among them)."""
        return dict(self._raw.database_properties(name))

    def alter_database(self, name: str, set: dict[str, str] | None = None,
                       remove: list[str] | None = None) -> None:
        """Set and remove database properties (JDBC, REST and Hive catalogs)."""
        self._raw.alter_database(name, {str(k): str(v) for k, v in (set or {}).items()},
                                 [str(k) for k in (remove or [])])

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """Drop a database; a non-empty one needs ``cascade=True``. The JDBC catalog, as Java's,
        forgets the tables of a database dropped with ``cascade`` but leaves their files: drop
        the tables first to delete them. A Hive Metastore drops every table of the database
        (Paimon's or not) and deletes the files of its managed tables."""
        self._raw.drop_database(name, cascade)

    def list_tables(self, database: str) -> list[str]:
        return self._raw.list_tables(database)

    def get_table(self, identifier: str) -> Table:
        """Open ``"database.table"``, or a branch of it as ``"database.table$branch_NAME"``
        (Paimon's identifier). Its commits and schema changes go through this catalog (its
        lock). Raises TableNotFoundError."""
        return Table(self._raw.get_table(identifier))

    def list_partitions(self, identifier: str) -> list[Partition]:
        """The partitions of ``"db.table"`` with their record, file and byte counts: those a
        REST server keeps for a ``metastore.partitioned-table``, or else the table's own, from
        the live files of its latest snapshot (Paimon's ``Catalog.listPartitions``)."""
        return [Partition(**p) for p in self._raw.list_partitions(identifier)]

    def system_table(self, identifier: str) -> pa.Table:
        """A system table by Paimon's identifier, ``"db.t$snapshots"`` or
        ``"db.t$branch_b$files"``, as a pyarrow.Table (see :meth:`Table.system`); or a global
        one (:data:`tidelake.maintenance.GLOBAL_SYSTEM_TABLES`): ``"sys.all_table_options"``
        (a row per option of every table, its ``path`` among them), ``"sys.tables"`` (a row per
        table; the record, file and byte totals only from a REST catalog, which records them at
        each commit, as in Paimon) or ``"sys.partitions"`` (a row per partition of every
        partitioned table, as :meth:`list_partitions` gives them)."""
        database, _, name = identifier.partition(".")
        if database == SYSTEM_DATABASE and name in GLOBAL_SYSTEM_TABLES:
            return self._raw.global_system_table(name)
        raw, name = self._raw.split_system_table(identifier)
        return Table(raw).system(name)

    def create_table(self, identifier: str, schema: pa.Schema, primary_keys: list[str] | None = None,
                     partition_keys: list[str] | None = None, bucket: int | None = None,
                     options: dict[str, str] | None = None, comment: str | None = None) -> Table:
        """Create ``"database.table"`` (the database must exist); see :func:`tidelake.create_table`."""
        raw = self._raw.create_table(identifier, _schema_of(schema), list(primary_keys or []),
                                     list(partition_keys or []), bucket,
                                     _option_pairs(options), comment)
        return Table(raw)

    def drop_table(self, identifier: str) -> None:
        """Delete a table and all its files."""
        self._raw.drop_table(identifier)

    def rename_table(self, from_identifier: str, to_identifier: str) -> None:
        """Rename a table (to another database too); its directory moves. Stop its writers
        first."""
        self._raw.rename_table(from_identifier, to_identifier)

    def migrate_table(self, source: str, *, target: str | None = None, options: dict[str, str] | None = None,
                      delete_origin: bool = True) -> Table:
        """Turn Hive table ``source`` (``"database.table"`` of Parquet, ORC or Avro files, in
        this Hive catalog's metastore) into a Paimon append table, moving its files (Paimon's
        ``migrate_table`` procedure). The new table takes the source's name unless ``target``
        names another (created with ``options`` when missing; an existing one must be an
        append table with ``bucket = -1`` and the same partition keys). ``delete_origin=False``
        keeps the (then empty) Hive table in the metastore. Stop the Hive table's writers
        first: as in Java, a failure moves the files back, but the migration is not one atomic
        step."""
        raw = self._raw.migrate_table(source, target, _option_pairs(options),
                                      delete_origin)
        return Table(raw)

    def migrate_database(self, database: str, *, options: dict[str, str] | None = None,
                         ) -> tuple[list[str], list[tuple[str, str]]]:
        """Migrate every table of Hive database ``database`` in place, one after another, as
        :meth:`migrate_table` migrates one (Paimon's ``migrate_database`` procedure): every table
        of the metastore's database is tried, and one that fails (a Paimon table, an
        unsupported format, ...) is skipped and the others go on, as in Java. Returns the tables
        migrated and those that failed, with their error's message."""
        return self._raw.migrate_database(database, _option_pairs(options))

    def clone_table(self, source: str, target: str, *, target_catalog: Catalog | None = None,
                    options: dict[str, str] | None = None, where: Any = None,
                    clone_from: str = "hive") -> int | None:
        """Copy table ``source`` (``"database.table"``) of this catalog into Paimon table
        ``target`` of ``target_catalog`` (this catalog by default), replacing the target's rows
        of the partitions copied, so a clone can be run again (Paimon's ``clone`` procedure).
        ``where`` (a filter on partition columns, e.g. ``"dt >= '2026-01-01'"``) selects the
        partitions copied. The source is left as it is. Returns the id of the snapshot made, or
        None when there was nothing to copy.

        ``clone_from="hive"``: a Hive table of Parquet, ORC or Avro files in this Hive catalog's
        metastore; its files are copied. A missing target is created as an append table with the
        source's columns, partition keys and file format, and ``options``; an existing one must
        be an append table with ``bucket = -1`` and the same partition keys.

        ``clone_from="paimon"``: a Paimon table of any catalog; its latest rows are read and
        written anew (no file is copied). A missing target is created as Java creates it: the
        source's columns, keys and options, with ``bucket = -2`` (postpone) for a primary-key
        table, whose rows readers then see once the target is compacted; an existing one must
        have the source's columns. ``options`` are refused."""
        (database, table), (target_database, target_table) = _split(source), _split(target)
        cloned = self.clone_tables(database, table, target_database=target_database, target_table=target_table,
                                   target_catalog=target_catalog, options=options, where=where,
                                   clone_from=clone_from)
        return cloned[0][2]

    def clone_tables(self, database: str | None = None, table: str | None = None, *,
                     target_database: str | None = None, target_table: str | None = None,
                     target_catalog: Catalog | None = None, included_tables: list[str] | None = None,
                     excluded_tables: list[str] | None = None, options: dict[str, str] | None = None,
                     where: Any = None, clone_from: str = "hive") -> list[tuple[str, str, int | None]]:
        """Paimon's ``clone`` procedure, with its arguments, over one table, a database or the
        whole catalog: each table as :meth:`clone_table` clones one. With ``database`` and
        ``table``, into ``target_database.target_table`` (both required); with ``database``
        alone, each of its tables goes to ``target_database`` (required) of ``target_catalog``
        under its own name; with neither, every table of every database goes to the same name in
        ``target_catalog`` (no target named). Tables named ``"database.table"`` in ``excluded_tables`` are
        skipped; when ``included_tables`` is given, only those are taken (from Hive: every
        table of the metastore; from Paimon: the catalog's Paimon tables). Tables are cloned
        one after another; the first failure stops the clone (the tables cloned before it stay
        cloned). Returns (source, target, snapshot id or None) for each table cloned."""
        return self._raw.clone_tables((target_catalog or self)._raw, clone_from, database, table,
                                      target_database, target_table, list(included_tables or []),
                                      list(excluded_tables or []), _option_pairs(options),
                                      filter_json(to_filter(where)))


def _split(identifier: str) -> tuple[str, str]:
    """``"database.table"`` as (database, table)."""
    database, dot, table = identifier.partition(".")
    if not dot or not database or not table:
        raise InvalidArgumentError(f"expected 'database.table', got {identifier!r}")
    return database, table
