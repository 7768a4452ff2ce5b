"""Table references of a SQL query (sqlglot's syntax tree, in Spark's dialect as Paimon writes
it) and what they name, shared by the SQL front-ends (:func:`tidelake.sql` over DuckDB,
:func:`tidelake.spark.sql` over Spark); each reads the named rows its own way.

A reference names a tidelake table when it is

* ``tidelake.`/path``` (or an object-store URL): the table at that path;
* ``db.t``: a table of the warehouse or catalog;
* ``db.`t$branch_b```, ``tidelake.`/path$branch_b```: branch ``b`` of a table;
* ``db.`t$snapshots``` or ``tidelake.`/path$snapshots``` (``t$branch_b$snapshots`` on a
  branch): a system table (no time travel); ``sys.all_table_options``: a global one,

and it reads the snapshot its ``VERSION AS OF <id or 'tag'>`` or ``TIMESTAMP AS OF <time>``
selects (Paimon's Spark time travel: a number is a snapshot id, other text a tag name).
:func:`rename` points a reference at the relation an engine registered for it, under the name
the query used as alias, so ``t.col`` and ``db.t.col`` still resolve.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidArgumentError, UnsupportedError
from .maintenance import GLOBAL_SYSTEM_TABLES, SYSTEM_DATABASE
from .table import Table, open_table

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlglot import exp

    from .catalog import Catalog

__all__ = ["PATH_NAMESPACE", "find_system_table", "find_table", "is_path", "local_path", "rename",
           "system_name", "time_travel"]

PATH_NAMESPACE = "tidelake"
"""``tidelake.`/path``` names the table at a path."""


def local_path(location: str) -> str:
    """``file:/x`` and ``file:///x`` as ``/x``; other locations unchanged."""
    parsed = urllib.parse.urlparse(location)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location


def is_path(ref: exp.Table) -> bool:
    """Whether ``ref`` names a table by path (``tidelake.`/path```)."""
    return ref.db.lower() == PATH_NAMESPACE and not ref.catalog


def system_name(ref: exp.Table) -> str | None:
    """The system table ``ref`` names (``snapshots`` of ``db.`t$snapshots``` or
    ``db.`t$branch_b$snapshots```, ``all_table_options`` of ``sys.all_table_options``), None
    if none (``db.`t$branch_b``` is a branch)."""
    if ref.db == SYSTEM_DATABASE and ref.name in GLOBAL_SYSTEM_TABLES and not ref.catalog:
        return ref.name
    if "$" not in ref.name or not ref.db:
        return None
    name = ref.name.rpartition("$")[2]
    return None if name.startswith(_BRANCH) else name


_BRANCH = "branch_"
"""``t$branch_b`` names branch ``b`` of ``t`` (Paimon's identifiers)."""


def _open_path(text: str, storage_options: dict[str, str] | None) -> Table:
    """The table at path ``text``, on the branch a ``$branch_b`` suffix names."""
    path, _, branch = text.partition("$" + _BRANCH)
    return open_table(local_path(path), storage_options, branch=branch or None)


def find_table(ref: exp.Table, catalog: Catalog | None, storage_options: dict[str, str] | None) -> Table | None:
    """The tidelake table ``ref`` names (a path, or ``db.t`` of ``catalog``); None for a
    ``db.t`` without a catalog. Raises TableNotFoundError when the catalog has no such table."""
    if is_path(ref):
        return _open_path(ref.name, storage_options)
    if catalog is None or not ref.db:
        return None
    return catalog.get_table(f"{ref.db}.{ref.name}")


def find_system_table(ref: exp.Table, catalog: Catalog | None,
                      storage_options: dict[str, str] | None) -> pa.Table | None:
    """The rows of the system table ``ref`` names, as :func:`find_table` finds tables. Raises
    UnsupportedError for time travel, which system tables do not have."""
    if ref.args.get("version") is not None:
        raise UnsupportedError(f"{ref.sql('spark')}: a system table has no time travel")
    if is_path(ref):
        path, _, name = ref.name.rpartition("$")
        return _open_path(path, storage_options).system(name)
    if catalog is None:
        return None
    return catalog.system_table(f"{ref.db}.{ref.name}")


def time_travel(ref: exp.Table, timestamp_ms: Callable[[exp.Expression], int | None]) -> dict[str, Any]:
    """``ref``'s ``VERSION AS OF <snapshot id or tag>`` / ``TIMESTAMP AS OF <time>`` as read
    arguments (``snapshot_id``, ``tag`` or ``timestamp_ms``); ``timestamp_ms`` evaluates the
    time as the engine does (None when it is not a time). Empty without time travel."""
    from sqlglot import exp

    version = ref.args.get("version")
    if version is None:
        return {}
    value = version.expression
    if str(version.this).upper() == "TIMESTAMP":
        ms = timestamp_ms(value)
        if ms is None:
            raise InvalidArgumentError(f"{ref.sql('spark')}: TIMESTAMP AS OF needs a timestamp")
        return {"timestamp_ms": ms}
    if isinstance(value, exp.Literal):
        text = str(value.this)
        return {"snapshot_id": int(text)} if text.isdigit() else {"tag": text}
    raise InvalidArgumentError(f"{ref.sql('spark')}: VERSION AS OF takes a snapshot id or a tag name")


def rename(query: exp.Expr, ref: exp.Table, relation: str) -> None:
    """Point ``ref`` (inside ``query``) at ``relation``, aliased as the query named it: its own
    alias, or else the table's name (and ``db.t.col`` becomes ``t.col``)."""
    from sqlglot import exp

    alias = ref.args.get("alias")
    if alias is None:
        alias = exp.TableAlias(this=exp.to_identifier(ref.name, quoted=True))
        for column in query.find_all(exp.Column):
            if column.table == ref.name and column.db == ref.db:
                column.set("db", None)
    ref.replace(exp.Table(this=exp.to_identifier(relation, quoted=True), alias=alias))
