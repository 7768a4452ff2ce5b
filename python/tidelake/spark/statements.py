"""``tidelake.spark.sql(spark, text)``: SQL on tidelake tables for Spark users without a JVM jar.

The statement is parsed with sqlglot's Spark dialect. What names a tidelake table runs here,
through the Python API and :func:`tidelake.spark.write`; everything else (and any statement
sqlglot cannot parse) goes to ``spark.sql`` unchanged.

* ``SELECT`` (any query) naming tidelake tables, with ``VERSION AS OF <snapshot id|'tag'>``,
  ``TIMESTAMP AS OF <timestamp>`` and system tables (``db.`t$snapshots```): each table is read by
  :func:`tidelake.spark.read` into a temporary view the query names instead; the rest is Spark's.
* ``DESCRIBE``, ``DROP TABLE [IF EXISTS]``, ``TRUNCATE TABLE``, ``ALTER TABLE ... ADD COLUMNS |
  SET TBLPROPERTIES | RENAME TO`` on a tidelake table.
* ``CREATE DATABASE|SCHEMA [IF NOT EXISTS] <db>`` with a warehouse: the database is created in it.
* ``CREATE TABLE [IF NOT EXISTS] <t> (cols) USING tidelake [PARTITIONED BY (..)]
  [TBLPROPERTIES ('primary-key'='id', 'bucket'='4', ...)] [LOCATION '...']``: the table is
  created at ``LOCATION`` (``file:`` URLs resolve to paths) or at ``<t>``.
* ``INSERT INTO|OVERWRITE <t> [(cols)] [BY NAME] SELECT ...|VALUES ...``: the query runs in
  Spark (reading the tidelake tables it names as a SELECT does); its columns map to the table's
  by position (or by name / the column list, missing columns null) and are cast to the table's
  types; one commit.
* ``CALL [sys.]compact|expire_snapshots|create_tag|rollback(...)``: Paimon's procedures, with
  Paimon's argument names (by name ``table => 'db.t'`` or by position).
* ``DELETE FROM``, ``UPDATE``, ``MERGE INTO`` on a tidelake table become a
  :class:`~tidelake.spark.dml.DmlPlan` (plain data) run by :func:`tidelake.spark.delete` /
  ``update`` / ``merge``.

A table is named by path, ``tidelake.`/path/to/t```, or as ``db.table`` of the warehouse given
to :func:`sql` or to :func:`tidelake.spark.register` (kept in the session conf
:data:`WAREHOUSE_CONF`), or of the catalog given to :func:`tidelake.spark.register`
(``catalog={...}``, Paimon's catalog options, kept in :data:`CATALOG_CONF`); an identifier that
is not a tidelake table of that warehouse or catalog is Spark's.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..catalog import Catalog
from ..exceptions import InvalidArgumentError, TableNotFoundError, UnsupportedError
from ..table import Table, open_or_create_table, open_table
from . import io
from .dml import DmlPlan, MergeClause, run_dml

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from sqlglot import exp

__all__ = ["sql", "WAREHOUSE_CONF", "CATALOG_CONF", "PATH_NAMESPACE"]

WAREHOUSE_CONF = "spark.tidelake.warehouse"
"""Session conf holding the warehouse in which ``db.table`` identifiers are looked up."""

CATALOG_CONF = "spark.tidelake.catalog"
"""Session conf holding Paimon catalog options (JSON) in which ``db.table`` identifiers are
looked up (:meth:`tidelake.Catalog.from_options`); it wins over :data:`WAREHOUSE_CONF`."""

PATH_NAMESPACE = "tidelake"
"""``tidelake.`/path``` names the table at a path."""


class _Context:
    def __init__(self, spark: SparkSession, warehouse: str | None, storage_options: dict[str, str] | None) -> None:
        self.spark = spark
        self.explicit_warehouse = warehouse is not None
        self.warehouse = warehouse or spark.conf.get(WAREHOUSE_CONF, None) or None
        self.storage_options = storage_options

    def catalog(self) -> Catalog | None:
        options = self.spark.conf.get(CATALOG_CONF, None)
        if options and not self.explicit_warehouse:
            return Catalog.from_options(json.loads(options), self.storage_options)
        return Catalog(self.warehouse, self.storage_options) if self.warehouse else None

    def table(self, ref: exp.Table) -> Table | None:
        """The tidelake table ``ref`` names, None when it is not one."""
        if ref.db.lower() == PATH_NAMESPACE and not ref.catalog:
            return open_table(local_path(ref.name), self.storage_options)
        catalog = self.catalog()
        if catalog is None or not ref.db:
            return None
        try:
            return catalog.get_table(f"{ref.db}.{ref.name}")
        except TableNotFoundError:
            return None

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


def local_path(location: str) -> str:
    """``file:/x`` and ``file:///x`` as ``/x``; other locations unchanged."""
    parsed = urllib.parse.urlparse(location)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location


def sql(spark: SparkSession, text: str, warehouse: str | None = None,
        storage_options: dict[str, str] | None = None) -> DataFrame:
    """Run one SQL statement; see the module docs. Returns a DataFrame: Spark's, or one row
    describing what a tidelake statement did."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    ctx = _Context(spark, warehouse, storage_options)
    try:
        tokens = sqlglot.tokenize(text, read="spark")
    except TokenError:
        return _spark_sql(ctx, text)
    if tokens and tokens[0].text.upper() == "CALL":  # sqlglot keeps CALL as an opaque command
        return _call(ctx, text[tokens[0].end + 1:])
    try:
        statement = sqlglot.parse_one(text, read="spark")
    except ParseError:
        return _spark_sql(ctx, text)
    handlers: dict[type, Callable[[_Context, Any], DataFrame | None]] = {
        exp.Create: _create, exp.Insert: _insert, exp.Delete: _delete_or_update, exp.Update: _delete_or_update,
        exp.Merge: _merge, exp.Describe: _describe, exp.Drop: _drop, exp.TruncateTable: _truncate,
        exp.Alter: _alter}
    handler = handlers.get(type(statement))
    if handler is None and isinstance(statement, exp.Query):
        handler = _query
    result = handler(ctx, statement) if handler is not None else None
    return _spark_sql(ctx, text) if result is None else result


def _spark_sql(ctx: _Context, text: str) -> DataFrame:
    """Spark's own statement; a table Spark does not find, with neither a warehouse nor a
    catalog given, gets a hint on how to name tidelake tables (TableNotFoundError)."""
    from pyspark.errors import AnalysisException

    try:
        return ctx.spark.sql(text)
    except AnalysisException as e:
        if "TABLE_OR_VIEW_NOT_FOUND" not in str(e) or ctx.catalog() is not None:
            raise
        raise TableNotFoundError(
            f"{str(e).splitlines()[0]} If it is a tidelake table: name it by path (tidelake.`/path/to/t`), "
            "or give its warehouse or catalog (tidelake.spark.register(spark, warehouse=... or catalog={...}), "
            "or tidelake.spark.sql(spark, text, warehouse=...))") from e


# ---- SELECT ------------------------------------------------------------------------------------

def _query(ctx: _Context, stmt: exp.Query) -> DataFrame | None:
    """A query that names tidelake tables: each is read (at the snapshot, tag or time its
    ``VERSION AS OF`` / ``TIMESTAMP AS OF`` selects; a system table ``db.`t$snapshots``` as the
    catalog gives it) into a temporary view, which the query names instead, under the table's
    name as its alias. None when it names no tidelake table."""
    from sqlglot import exp

    views: list[str] = []
    try:
        for ref in list(stmt.find_all(exp.Table)):
            frame = _read_ref(ctx, ref)
            if frame is None:
                continue
            view = f"tidelake_{uuid.uuid4().hex}"
            frame.createOrReplaceTempView(view)
            views.append(view)
            alias = ref.args.get("alias")
            if alias is None:  # named as before: `t.col`, and `db.t.col` as `t.col`
                alias = exp.TableAlias(this=exp.to_identifier(ref.name, quoted=True))
                for column in stmt.find_all(exp.Column):
                    if column.table == ref.name and column.db == ref.db:
                        column.set("db", None)
            ref.replace(exp.Table(this=exp.to_identifier(view), alias=alias))
        # analysed here: the views can go once the DataFrame holds their plans
        return ctx.spark.sql(stmt.sql("spark")) if views else None
    finally:
        for view in views:
            ctx.spark.catalog.dropTempView(view)


def _read_ref(ctx: _Context, ref: exp.Table) -> DataFrame | None:
    """The rows of the tidelake table (or system table) ``ref`` names, None when it names none."""
    from .plain import read

    version = ref.args.get("version")
    if "$" in ref.name and ref.db and ref.db.lower() != PATH_NAMESPACE:
        catalog = ctx.catalog()
        if catalog is None:
            return None
        if version is not None:
            raise UnsupportedError(f"{ref.sql('spark')}: a system table has no time travel")
        try:
            rows = catalog.system_table(f"{ref.db}.{ref.name}")
        except TableNotFoundError:
            return None
        return ctx.spark.createDataFrame(rows)
    table = ctx.table(ref)
    if table is None:
        return None
    return read(ctx.spark, table.path, storage_options=table.storage_options or None,
                **_time_travel(ctx, version, ref))


def _time_travel(ctx: _Context, version: exp.Version | None, ref: exp.Table) -> dict[str, Any]:
    """``VERSION AS OF <snapshot id or tag>`` / ``TIMESTAMP AS OF <timestamp>`` as read arguments
    (Paimon's Spark time travel: a number is a snapshot id, other text a tag; a timestamp in the
    session's time zone)."""
    from sqlglot import exp

    if version is None:
        return {}
    value = version.expression
    if str(version.this).upper() == "TIMESTAMP":
        row = ctx.spark.sql(f"SELECT unix_millis(CAST({value.sql('spark')} AS TIMESTAMP))").first()
        if row is None or row[0] is None:
            raise InvalidArgumentError(f"{ref.sql('spark')}: TIMESTAMP AS OF needs a timestamp")
        return {"timestamp_ms": row[0]}
    if isinstance(value, exp.Literal):
        text = str(value.this)
        return {"snapshot_id": int(text)} if text.isdigit() else {"tag": text}
    raise InvalidArgumentError(f"{ref.sql('spark')}: VERSION AS OF takes a snapshot id or a tag name")


# ---- DESCRIBE, DROP, TRUNCATE, ALTER ---------------------------------------------------------

def _describe(ctx: _Context, stmt: exp.Describe) -> DataFrame | None:
    """``DESCRIBE [TABLE] <t>``: Spark's rows (``col_name``, ``data_type``, ``comment``)."""
    from sqlglot import exp

    table = ctx.table(stmt.this) if isinstance(stmt.this, exp.Table) else None
    if table is None:
        return None
    comments = {f.name: (f.metadata or {}).get(b"comment", b"").decode() or None for f in table.schema}
    rows = [(f.name, f.dataType.simpleString(), comments.get(f.name)) for f in io.spark_schema(table).fields]
    return ctx.result(rows, "col_name string, data_type string, comment string")


def _drop(ctx: _Context, stmt: exp.Drop) -> DataFrame | None:
    """``DROP TABLE [IF EXISTS] db.t`` of the warehouse or catalog: the table and its files."""
    from sqlglot import exp

    refs = stmt.args.get("tables") or [stmt.this]
    ref = refs[0] if len(refs) == 1 else None
    if str(stmt.args.get("kind", "")).upper() != "TABLE" or not isinstance(ref, exp.Table) or not ref.db:
        return None
    catalog = ctx.catalog()
    if catalog is None or ref.db.lower() == PATH_NAMESPACE:
        return None
    identifier = f"{ref.db}.{ref.name}"
    if ref.db not in catalog.list_databases() or ref.name not in catalog.list_tables(ref.db):
        if stmt.args.get("exists"):
            return ctx.result([(identifier, False)], "table string, dropped boolean")
        return None  # Spark's own table, or Spark's error
    catalog.drop_table(identifier)
    return ctx.result([(identifier, True)], "table string, dropped boolean")


def _truncate(ctx: _Context, stmt: exp.TruncateTable) -> DataFrame | None:
    """``TRUNCATE TABLE <t>``: one OVERWRITE snapshot without rows."""
    refs = stmt.expressions
    table = ctx.table(refs[0]) if len(refs) == 1 else None
    if table is None:
        return None
    return ctx.result([(table.truncate().snapshot_id,)], "snapshot_id bigint")


def _alter(ctx: _Context, stmt: exp.Alter) -> DataFrame | None:
    """``ALTER TABLE <t> ADD COLUMNS (...) | SET TBLPROPERTIES (...) | RENAME TO db.u``: one
    schema change each (a rename through the warehouse or catalog)."""
    from pyspark.sql.types import StructType
    from sqlglot import exp

    table = ctx.table(stmt.this) if isinstance(stmt.this, exp.Table) else None
    if table is None:
        return None
    for action in stmt.args.get("actions") or []:
        if isinstance(action, exp.Schema):
            defs = [c for c in action.expressions if isinstance(c, exp.ColumnDef)]
            added = io.arrow_schema(cast(StructType, StructType.fromDDL(", ".join(c.sql("spark") for c in defs))))
            for field in added:
                table = table.add_column(field.name, field.type)
        elif isinstance(action, exp.AlterSet):
            for props in action.expressions:
                for p in props.expressions:
                    table = table.set_option(p.name, p.args["value"].name)
        elif isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
            catalog = ctx.catalog()
            if catalog is None or not stmt.this.db:
                raise UnsupportedError("ALTER TABLE ... RENAME TO needs tables of a warehouse or catalog (db.t)")
            catalog.rename_table(f"{stmt.this.db}.{stmt.this.name}",
                                 f"{action.this.db or stmt.this.db}.{action.this.name}")
        else:
            raise UnsupportedError(f"ALTER TABLE ... {action.sql('spark')}: tidelake runs ADD COLUMNS, "
                                   "SET TBLPROPERTIES and RENAME TO")
    return ctx.result([(table.path,)], "path string")


# ---- CREATE TABLE ------------------------------------------------------------------------------

def _create(ctx: _Context, stmt: exp.Create) -> DataFrame | None:
    from pyspark.sql.types import StructType
    from sqlglot import exp

    if stmt.kind in ("DATABASE", "SCHEMA"):
        return _create_database(ctx, stmt)
    props = stmt.args.get("properties")
    prop_list = list(props.expressions) if props is not None else []
    found = {type(p): p for p in prop_list}
    using = found.get(exp.FileFormatProperty)
    if stmt.kind != "TABLE" or using is None or using.name.lower() != PATH_NAMESPACE:
        return None
    schema = stmt.this
    if not isinstance(schema, exp.Schema) or not schema.expressions:
        raise InvalidArgumentError("CREATE TABLE ... USING tidelake needs a column list: (id BIGINT, ...)")
    columns = [c for c in schema.expressions if isinstance(c, exp.ColumnDef)]
    partitioned = found.get(exp.PartitionedByProperty)
    partition_cols = list(partitioned.this.expressions) if partitioned is not None else []
    names = {c.name for c in columns}
    columns += [c for c in partition_cols if isinstance(c, exp.ColumnDef) and c.name not in names]
    table_options = {p.name: p.args["value"].name for p in prop_list if type(p) is exp.Property}
    spec = io.CreateSpec.of_options(table_options)
    if partition_cols:
        spec = io.CreateSpec(spec.primary_keys, [c.name for c in partition_cols], spec.bucket, spec.options)
    arrow = io.arrow_schema(cast(StructType, StructType.fromDDL(", ".join(c.sql("spark") for c in columns))))
    location = found.get(exp.LocationProperty)
    ref: exp.Table = schema.this
    catalog = None
    if location is not None:
        target = local_path(location.this.name)
    elif ref.db.lower() == PATH_NAMESPACE:
        target = local_path(ref.name)
    else:
        catalog = ctx.catalog()
        if catalog is None or not ref.db:
            raise InvalidArgumentError(f"CREATE TABLE {ref.sql('spark')} USING tidelake needs a LOCATION, a path "
                                       "(tidelake.`/path`) or db.table with a warehouse (tidelake.spark.sql("
                                       "..., warehouse=) or register(spark, warehouse=))")
        target = f"{ref.db}.{ref.name}"
    table, created = open_or_create_table(target, arrow, mode="ignore" if stmt.args.get("exists") else "error",
                                          primary_keys=spec.primary_keys, partition_by=spec.partition_by,
                                          bucket=spec.bucket, options=spec.options,
                                          storage_options=ctx.storage_options, catalog=catalog)
    return ctx.result([(table.path, created)], "path string, created boolean")


def _create_database(ctx: _Context, stmt: exp.Create) -> DataFrame | None:
    """``CREATE DATABASE|SCHEMA [IF NOT EXISTS] db`` in the warehouse (as Paimon's Spark catalog
    does when it is the current one); Spark's without a warehouse."""
    catalog = ctx.catalog()
    if catalog is None:
        return None
    name = stmt.this.name or stmt.this.db
    catalog.create_database(name, ignore_if_exists=bool(stmt.args.get("exists")))
    return ctx.result([(name,)], "database string")


# ---- INSERT ------------------------------------------------------------------------------------

def _insert(ctx: _Context, stmt: exp.Insert) -> DataFrame | None:
    from sqlglot import exp

    from . import write

    target, columns = stmt.this, None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table):
        return None
    table = ctx.table(target)
    if table is None:
        return None
    if target.args.get("partition") is not None:
        raise UnsupportedError("INSERT ... PARTITION (...) is not supported on tidelake tables; put the partition "
                               "values in the query's columns (INSERT OVERWRITE replaces the whole table)")
    query = stmt.expression
    source = (_query(ctx, query) if isinstance(query, exp.Query) else None) or ctx.spark.sql(query.sql("spark"))
    df = _as_table_rows(source, table, columns, bool(stmt.args.get("by_name")))
    snapshot = write(df, table, "overwrite" if stmt.args.get("overwrite") else "append")
    return ctx.result([(snapshot,)], "snapshot_id bigint")


def _as_table_rows(source: DataFrame, table: Table, columns: list[str] | None, by_name: bool) -> DataFrame:
    """``source``'s columns as the table's (Spark's INSERT rules: by position, by name, or the
    given column list; absent columns null), cast to the table's types."""
    from pyspark.sql import functions as F

    fields = io.spark_schema(table).fields
    names = [f.name for f in fields]
    if by_name:
        columns = list(source.columns)
    given = columns if columns is not None else names
    unknown = [c for c in given if c not in names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are not in table {table.path}; its columns are {names}")
    if len(source.columns) != len(given):
        raise InvalidArgumentError(f"the query has {len(source.columns)} columns but {len(given)} are inserted "
                                   f"({given}) into {table.path}")
    by_target = dict(zip(given, range(len(given))))
    return source.select(*[
        (source[by_target[f.name]] if f.name in by_target else F.lit(None)).cast(f.dataType).alias(f.name)
        for f in fields])


# ---- CALL --------------------------------------------------------------------------------------

_PROCEDURES: dict[str, tuple[str, ...]] = {
    "compact": ("table", "partitions", "where", "order_strategy", "order_by", "options", "partition_idle_time",
                "compact_strategy"),
    "expire_snapshots": ("table", "retain_max", "retain_min", "older_than", "max_deletes", "options"),
    "create_tag": ("table", "tag", "snapshot", "time_retained"),
    "rollback": ("table", "version", "snapshot", "tag"),
}
"""Paimon's Spark procedures run here, with their parameters in Paimon's order."""

_CALL = re.compile(r"\s*(?:`?sys`?\.)?`?(\w+)`?\s*\((.*)\)\s*;?\s*", re.S)


def _call(ctx: _Context, text: str) -> DataFrame:
    import sqlglot
    from sqlglot import exp

    m = _CALL.fullmatch(text)
    if m is None:
        raise InvalidArgumentError(f"cannot read the procedure call {text!r}: expected CALL [sys.]name(args)")
    name = m.group(1).lower()
    if name not in _PROCEDURES:
        raise UnsupportedError(f"procedure {name!r} is not supported; tidelake runs {', '.join(_PROCEDURES)}")
    call = sqlglot.parse_one(f"SELECT f({m.group(2)})", read="spark").expressions[0]
    params, args = _PROCEDURES[name], {}
    for i, arg in enumerate(call.expressions):
        key, value = (arg.this.name.lower(), arg.expression) if isinstance(arg, exp.Kwarg) else (
            params[i] if i < len(params) else "", arg)
        if key not in params:
            raise InvalidArgumentError(f"procedure {name} has no argument {key or i + 1!r}; its arguments are "
                                       f"{', '.join(params)}")
        args[key] = value.to_py()
    if "table" not in args:
        raise InvalidArgumentError(f"procedure {name} needs table => 'db.table' (or a path)")
    table = ctx.named(str(args.pop("table")))
    args = {k: v for k, v in args.items() if v not in (None, "")}
    return getattr(_Procedures(ctx, table), name)(**args)


class _Procedures:
    """Paimon's procedures over the Python API; each returns a one-row DataFrame."""

    def __init__(self, ctx: _Context, table: Table) -> None:
        self.ctx, self.table = ctx, table

    def _only(self, name: str, given: dict[str, Any]) -> None:
        if given:
            raise UnsupportedError(f"{name}: argument(s) {', '.join(given)} are not supported by tidelake")

    def compact(self, partitions: str | None = None, compact_strategy: str = "full", **rest: Any) -> DataFrame:
        from ..maintenance import typed_partitions
        from . import compact

        self._only("compact", rest)
        if compact_strategy not in ("full", "minor"):
            raise InvalidArgumentError(f"compact_strategy must be 'full' or 'minor', got {compact_strategy!r}")
        specs = None
        if partitions:
            specs = typed_partitions(self.table, [dict(_key_value(kv) for kv in p.split(","))
                                                   for p in partitions.split(";")])
        snapshot = compact(self.ctx.spark, self.table, full=compact_strategy == "full", partitions=specs)
        return self.ctx.result([(snapshot,)], "snapshot_id bigint")

    def expire_snapshots(self, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: Any = None, max_deletes: int | None = None, **rest: Any) -> DataFrame:
        from ..table import _epoch_ms

        self._only("expire_snapshots", rest)
        done = self.table.expire_snapshots(retain_min, retain_max,
                                           None if older_than is None else _epoch_ms(older_than), max_deletes)
        return self.ctx.result([(done["snapshots"],)], "expired_snapshots bigint")

    def create_tag(self, tag: str, snapshot: int | None = None, time_retained: str | None = None) -> DataFrame:
        from ..maintenance import parse_duration

        made = self.table.create_tag(tag, None if snapshot is None else int(snapshot),
                                     None if time_retained is None else parse_duration(str(time_retained)))
        return self.ctx.result([(made.name, made.snapshot_id)], "tag string, snapshot_id bigint")

    def rollback(self, version: Any = None, snapshot: int | None = None, tag: str | None = None) -> DataFrame:
        if sum(v is not None for v in (version, snapshot, tag)) != 1:
            raise InvalidArgumentError("rollback needs exactly one of version, snapshot or tag")
        if version is not None:  # Paimon's: a snapshot id, else a tag name
            text = str(version)
            snapshot, tag = (int(text), None) if text.isdigit() else (None, text)
        self.table.rollback_to(snapshot_id=None if snapshot is None else int(snapshot), tag=tag)
        latest = self.table.refresh().latest_snapshot()
        return self.ctx.result([(None if latest is None else latest.id,)], "snapshot_id bigint")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InvalidArgumentError(f"bad partition {text!r}: expected k=v[,k=v...][;k=v...]")
    return key.strip(), value.strip()


# ---- DELETE / UPDATE / MERGE -------------------------------------------------------------------

def _target(ctx: _Context, ref: Any) -> Table | None:
    """The table a DELETE, UPDATE or MERGE changes. Those commit by path: refused on a table
    whose catalog takes part in its commits (a JDBC or Hive lock, a REST server, a Hive
    Metastore), which a path commit would bypass."""
    from sqlglot import exp

    table = ctx.table(ref) if isinstance(ref, exp.Table) else None
    if table is not None and table._raw.commits_through_catalog:
        raise UnsupportedError(f"DELETE, UPDATE and MERGE through Spark on {ref.sql('spark')}: its catalog takes "
                               "part in the commits (a JDBC or Hive lock, a REST server, a Hive Metastore) and this "
                               "path does not go through it yet; "
                               "use tidelake.Catalog.get_table(...).delete/update/merge in Python")
    return table


def _text(node: Any) -> str | None:
    return None if node is None else node.sql("spark")


def _assignments(pairs: list[Any]) -> dict[str, str]:
    return {eq.this.name: eq.expression.sql("spark") for eq in pairs}


def _delete_or_update(ctx: _Context, stmt: exp.Delete | exp.Update) -> DataFrame | None:
    from sqlglot import exp

    table = _target(ctx, stmt.this)
    if table is None:
        return None
    where = stmt.args.get("where")
    update = isinstance(stmt, exp.Update)
    return run_dml(ctx.spark, DmlPlan("update" if update else "delete", table.path, table.storage_options or None,
                                      where=_text(where.this if where else None),
                                      assignments=_assignments(stmt.expressions) if update else {},
                                      target_alias=stmt.this.alias or None))


def _merge(ctx: _Context, stmt: exp.Merge) -> DataFrame | None:
    from sqlglot import exp

    table = _target(ctx, stmt.this)
    if table is None:
        return None
    using = stmt.args["using"]
    clauses = []
    for when in stmt.args["whens"].expressions:
        then = when.args["then"]
        condition = _text(when.args.get("condition"))
        if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
            if not when.args.get("matched") and not when.args.get("source"):
                raise UnsupportedError("WHEN NOT MATCHED THEN DELETE is not valid MERGE")
            kind = "matched_delete" if when.args.get("matched") else "not_matched_by_source_delete"
            clauses.append(MergeClause(kind, condition))
        elif isinstance(then, exp.Update) and when.args.get("matched"):
            star = not then.expressions or isinstance(then.expressions[0], exp.Star)
            clauses.append(MergeClause("matched_update", condition, "*" if star else _assignments(then.expressions)))
        elif isinstance(then, exp.Insert) and not when.args.get("matched") and not when.args.get("source"):
            if then.this is None or isinstance(then.this, exp.Star):
                values: dict[str, str] | str = "*"
            else:
                values = dict(zip([c.name for c in then.this.expressions],
                                  [v.sql("spark") for v in then.expression.expressions]))
            clauses.append(MergeClause("not_matched_insert", condition, values))
        else:
            raise UnsupportedError(f"MERGE clause {when.sql('spark')!r} is not supported")
    if isinstance(using, exp.Table):
        bare = using.copy()
        bare.set("alias", None)
        source = f"SELECT * FROM {bare.sql('spark')}"
    elif isinstance(using, exp.Subquery):
        source = using.this.sql("spark")
    else:
        raise UnsupportedError(f"MERGE source {using.sql('spark')!r} is not supported: use a table or a subquery")
    return run_dml(ctx.spark, DmlPlan("merge", table.path, table.storage_options or None,
                                      source=source, source_alias=using.alias or None,
                                      target_alias=stmt.this.alias or None, on=_text(stmt.args.get("on")),
                                      clauses=clauses))
