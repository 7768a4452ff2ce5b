"""What every statement handler shares: the session, where ``db.table`` identifiers are looked
up (the warehouse or catalog of :func:`tidelake.spark.sql` / :func:`tidelake.spark.register`),
how a table reference becomes a :class:`~tidelake.Table`, and Spark's own statements run with
tidelake's errors for tables neither side knows."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from ...catalog import Catalog
from ...exceptions import InvalidArgumentError, TableNotFoundError
from ...references import find_table, is_path, local_path
from ...table import Table, open_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from sqlglot import exp

WAREHOUSE_CONF = "spark.tidelake.warehouse"
"""Session conf holding the warehouse in which ``db.table`` identifiers are looked up."""

CATALOG_CONF = "spark.tidelake.catalog"
"""Session conf holding Paimon catalog options (JSON) in which ``db.table`` identifiers are
looked up (:meth:`tidelake.Catalog.from_options`); it wins over :data:`WAREHOUSE_CONF`."""

_NOT_FOUND = re.compile(r"\[(?:TABLE_OR_VIEW|SCHEMA)_NOT_FOUND\] The (?:table or view|schema) (\S+) cannot be found")


class Context:
    """One statement's session, warehouse or catalog, and storage options."""

    def __init__(self, spark: SparkSession, warehouse: str | None, storage_options: dict[str, str] | None) -> None:
        self.spark = spark
        self.explicit_warehouse = warehouse is not None
        self.warehouse = warehouse or spark.conf.get(WAREHOUSE_CONF, None) or None
        self.storage_options = storage_options
        self._catalog: Catalog | None = None

    def catalog(self) -> Catalog | None:
        """The catalog ``db.table`` identifiers name tables of; None without one."""
        if self._catalog is None:
            options = self.spark.conf.get(CATALOG_CONF, None)
            if options and not self.explicit_warehouse:
                self._catalog = Catalog.from_options(json.loads(options), self.storage_options)
            elif self.warehouse:
                self._catalog = Catalog(self.warehouse, self.storage_options)
        return self._catalog

    def where(self) -> str:
        """The warehouse or catalog, for messages."""
        catalog = self.catalog()
        return "no tidelake warehouse or catalog" if catalog is None else f"tidelake catalog {catalog.warehouse}"

    def is_path(self, ref: exp.Table) -> bool:
        return is_path(ref)

    def table(self, ref: exp.Table) -> Table | None:
        """The tidelake table ``ref`` names, None when it is not one."""
        try:
            return find_table(ref, None if is_path(ref) else self.catalog(), self.storage_options)
        except TableNotFoundError:
            if is_path(ref):
                raise
            return None

    def table_written(self, text: str) -> Table | None:
        """:meth:`table` of a table reference as written in a statement (``db.t``,
        ``tidelake.`/path```), None when it is not a tidelake table."""
        from sqlglot import exp

        return self.table(exp.to_table(text, dialect="spark"))

    def named(self, text: str) -> Table:
        """A procedure's ``table`` argument: a path, or ``db.table`` of the warehouse."""
        if "/" in text:
            return open_table(local_path(text), self.storage_options)
        catalog = self.catalog()
        if catalog is None:
            raise InvalidArgumentError(f"table {text!r} is an identifier but no warehouse is set: pass warehouse= "
                                       "to tidelake.spark.sql or tidelake.spark.register, or name it by path")
        return catalog.get_table(text)

    def result(self, rows: list[tuple], ddl: str) -> DataFrame:
        return self.spark.createDataFrame(rows, ddl)

    def spark_sql(self, text: str) -> DataFrame:
        """Spark's own statement. A table or database Spark does not find raises
        TableNotFoundError naming it: with neither a warehouse nor a catalog given, with a hint
        on how to name tidelake tables; else saying it is in neither."""
        from pyspark.errors import AnalysisException

        try:
            return self.spark.sql(text)
        except AnalysisException as e:
            first = str(e).splitlines()[0]
            found = _NOT_FOUND.search(first)
            if found is None:
                raise
            if self.catalog() is None:
                raise TableNotFoundError(
                    f"{first} If it is a tidelake table: name it by path (tidelake.`/path/to/t`), or give its "
                    "warehouse or catalog (tidelake.spark.register(spark, warehouse=... or catalog={...}), or "
                    "tidelake.spark.sql(spark, text, warehouse=...))") from e
            raise TableNotFoundError(f"{found.group(1)} is neither in the {self.where()} nor in Spark's catalog "
                                     f"({first})") from e
