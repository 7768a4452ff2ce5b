"""``tidelake.spark.sql(spark, text)``: SQL on tidelake tables for Spark users without a JVM jar.

The statement is parsed with sqlglot's Spark dialect and handed to the module that owns it;
what names a tidelake table runs here, through the Python API and :func:`tidelake.spark.write`;
everything else (and any statement sqlglot cannot parse) goes to ``spark.sql`` unchanged.

* :mod:`.references`: ``SELECT`` (any query: joins, CTEs, subqueries) naming tidelake tables,
  with ``VERSION AS OF <snapshot id|'tag'>``, ``TIMESTAMP AS OF <timestamp>`` and system tables
  (``db.`t$snapshots```).
* :mod:`.ddl`: ``CREATE TABLE`` (column list or ``AS SELECT``), ``CREATE OR REPLACE`` /
  ``REPLACE TABLE``, ``CREATE DATABASE``, ``DROP TABLE``, ``TRUNCATE TABLE``, ``ALTER TABLE``.
* :mod:`.show`: ``DESCRIBE``, ``SHOW TABLES``, ``SHOW CREATE TABLE``, ``SHOW TBLPROPERTIES``,
  ``SHOW PARTITIONS``.
* :mod:`.insert`: ``INSERT INTO|OVERWRITE``.
* :mod:`.row_level`: ``DELETE FROM``, ``UPDATE``, ``MERGE INTO``.
* :mod:`.procedures`: ``CALL [sys.]<procedure>(...)``, Paimon's procedures and argument names.

A table is named by path, ``tidelake.`/path/to/t``` (``file:`` URLs too), or as ``db.table``
of the warehouse given to :func:`sql` or to :func:`tidelake.spark.register` (kept in the
session conf :data:`WAREHOUSE_CONF`), or of the catalog given to
:func:`tidelake.spark.register` (``catalog={...}``, Paimon's catalog options, kept in
:data:`CATALOG_CONF`); an identifier that is not a tidelake table of that warehouse or catalog
is Spark's, and one neither knows raises TableNotFoundError naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...references import PATH_NAMESPACE, local_path
from . import ddl, insert, procedures, references, row_level, show
from .context import CATALOG_CONF, WAREHOUSE_CONF, Context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["sql", "WAREHOUSE_CONF", "CATALOG_CONF", "PATH_NAMESPACE", "local_path"]


def sql(spark: SparkSession, text: str, warehouse: str | None = None,
        storage_options: dict[str, str] | None = None) -> DataFrame:
    """Run one SQL statement; see the module docs. Returns a DataFrame: Spark's, or the rows
    Spark's statement would give, or one row describing what a tidelake statement did."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    ctx = Context(spark, warehouse, storage_options)
    try:
        tokens = sqlglot.tokenize(text, read="spark")
    except TokenError:
        return ctx.spark_sql(text)
    first = tokens[0].text.upper() if tokens else ""
    # statements sqlglot keeps as opaque commands
    if first == "CALL":
        return procedures.call(ctx, text[tokens[0].end + 1:])
    if first == "SHOW" or first == "ALTER" and any(t.text.upper() == "UNSET" for t in tokens):
        result = show.show(ctx, text) if first == "SHOW" else ddl.unset_properties(ctx, text)
        return ctx.spark_sql(text) if result is None else result
    if first == "ALTER":
        for opaque in (ddl.move_column, ddl.alter_nested):
            if (done := opaque(ctx, text)) is not None:
                return done
    if first == "REPLACE":  # REPLACE TABLE is CREATE OR REPLACE TABLE
        text = "CREATE OR " + text[tokens[0].start:]
    try:
        statement = sqlglot.parse_one(text, read="spark")
    except ParseError:
        return ctx.spark_sql(text)
    handlers: dict[type, Callable[[Context, Any], DataFrame | None]] = {
        exp.Create: ddl.create, exp.Drop: ddl.drop, exp.TruncateTable: ddl.truncate, exp.Alter: ddl.alter,
        exp.Describe: show.describe, exp.Insert: insert.insert, exp.Delete: row_level.delete_or_update,
        exp.Update: row_level.delete_or_update, exp.Merge: row_level.merge}
    handler = handlers.get(type(statement))
    if handler is None and isinstance(statement, exp.Query):
        handler = references.run_query
    result = handler(ctx, statement) if handler is not None else None
    return ctx.spark_sql(text) if result is None else result
