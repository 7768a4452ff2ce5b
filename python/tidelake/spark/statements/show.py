"""Statements that describe tidelake tables, answering the rows (and column names) Spark's own
give: ``DESCRIBE [TABLE] <t>``, ``SHOW TABLES {IN|FROM} <db> [LIKE 'pattern']``, ``SHOW CREATE
TABLE <t>``, ``SHOW TBLPROPERTIES <t> [('key')]`` and ``SHOW PARTITIONS <t>``. The SHOW
statements are read from the statement's text (sqlglot keeps them as opaque commands)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import io
from .context import Context
from .ddl import COMMENT_METADATA

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from sqlglot import exp

    from ...table import Table


def describe(ctx: Context, stmt: exp.Describe) -> DataFrame | None:
    """Spark's rows (``col_name``, ``data_type``, ``comment``), with its ``# Partition
    Information`` section on a partitioned table."""
    from sqlglot import exp

    table = ctx.table(stmt.this) if isinstance(stmt.this, exp.Table) else None
    if table is None:
        return None
    rows = _columns(table)
    if table.partition_keys:
        by_name = {r[0]: r for r in rows}
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment"),
                 *[by_name[k] for k in table.partition_keys]]
    return ctx.result(rows, "col_name string, data_type string, comment string")


def _columns(table: Table) -> list[tuple[str, str, str | None]]:
    comments = {f.name: (f.metadata or {}).get(COMMENT_METADATA.encode(), b"").decode() or None
                for f in table.schema}
    return [(f.name, f.dataType.simpleString(), comments.get(f.name)) for f in io.spark_schema(table).fields]


_SHOW_TABLES = re.compile(r"\s*SHOW\s+TABLES\s+(?:IN|FROM)\s+(\S+?)(?:\s+LIKE\s+'([^']*)')?\s*;?\s*", re.S | re.I)
_SHOW_TABLE = re.compile(r"\s*SHOW\s+(CREATE\s+TABLE|TBLPROPERTIES|PARTITIONS)\s+(.+?)(?:\s*\(\s*'([^']*)'\s*\))?"
                         r"(\s+AS\s+SERDE)?\s*;?\s*", re.S | re.I)


def show(ctx: Context, text: str) -> DataFrame | None:
    """A SHOW statement on tidelake tables; None when it is Spark's."""
    m = _SHOW_TABLES.fullmatch(text)
    if m is not None:
        return _show_tables(ctx, m.group(1).strip("`"), m.group(2))
    m = _SHOW_TABLE.fullmatch(text)
    if m is None:
        return None

    table = ctx.table_written(m.group(2))
    if table is None:
        return None
    what = " ".join(m.group(1).upper().split())
    if what == "TBLPROPERTIES":
        props = _properties(table)
        if m.group(3) is not None:
            key = m.group(3)
            value = props.get(key, f"Table {m.group(2)} does not have property: {key}")
            return ctx.result([(key, value)], "key string, value string")
        return ctx.result(sorted(props.items()), "key string, value string")
    if what == "PARTITIONS":
        rows = [(r["partition"],) for r in table.system("partitions").to_pylist()] if table.partition_keys else []
        return ctx.result(sorted(rows), "partition string")
    return ctx.result([(create_statement(m.group(2), table),)], "createtab_stmt string")


def _show_tables(ctx: Context, database: str, pattern: str | None) -> DataFrame | None:
    """Spark's ``namespace``, ``tableName``, ``isTemporary`` rows of a database of the
    warehouse or catalog; None for a database it does not have."""
    catalog = ctx.catalog()
    if catalog is None or database not in catalog.list_databases():
        return None
    names = catalog.list_tables(database)
    if pattern is not None:  # Spark's: * is any text, | separates alternatives, case-insensitive
        alternatives = "|".join(".*".join(re.escape(p) for p in alt.strip().split("*")) for alt in pattern.split("|"))
        names = [n for n in names if re.fullmatch(alternatives, n, re.I)]
    return ctx.result([(database, n, False) for n in sorted(names)],
                      "namespace string, tableName string, isTemporary boolean")


def _properties(table: Table) -> dict[str, str]:
    """The table's options with its keys, as Paimon's Spark catalog shows them."""
    props = dict(table.options)
    if table.primary_keys:
        props["primary-key"] = ",".join(table.primary_keys)
    return props


def create_statement(name: str, table: Table) -> str:
    """A ``CREATE TABLE`` that makes a table like ``table`` (columns, partitioning, keys and
    options), as ``SHOW CREATE TABLE`` gives it."""
    def quoted(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    nullable = {f.name: f.nullable for f in table.schema}
    columns = []
    for column, data_type, comment in _columns(table):
        text = f"  `{column}` {data_type}"
        if not nullable[column] and column not in table.primary_keys:
            text += " NOT NULL"
        if comment:
            text += f" COMMENT {quoted(comment)}"
        columns.append(text)
    lines = [f"CREATE TABLE {name} (", ",\n".join(columns), ")", "USING tidelake"]
    if table.partition_keys:
        lines.append("PARTITIONED BY (" + ", ".join(f"`{k}`" for k in table.partition_keys) + ")")
    props = _properties(table)
    if props:
        lines.append("TBLPROPERTIES (\n" + ",\n".join(f"  {quoted(k)} = {quoted(v)}" for k, v in sorted(props.items()))
                     + ")")
    return "\n".join(lines) + "\n"

