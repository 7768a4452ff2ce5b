"""Statements that create, change or remove tidelake tables and databases, through
:class:`~tidelake.Catalog` and :class:`~tidelake.Table` methods:

* ``CREATE TABLE [IF NOT EXISTS] <t> (cols) USING tidelake [PARTITIONED BY (..)]
  [TBLPROPERTIES ('primary-key'='id', 'bucket'='4', ...)] [LOCATION '...']``, and ``... AS
  SELECT`` (CTAS: the columns are the query's); ``CREATE OR REPLACE TABLE`` / ``REPLACE TABLE``
  (of a warehouse or catalog) drop the old table first. Without ``USING``, a table of a
  database the warehouse or catalog has and Spark has not is tidelake's (as in Paimon's docs).
* ``CREATE DATABASE|SCHEMA [IF NOT EXISTS] <db>`` in the warehouse or catalog.
* ``DROP TABLE [IF EXISTS]``, ``TRUNCATE TABLE``.
* ``ALTER TABLE <t>`` ``ADD COLUMN(S)`` (with ``COMMENT``, ``FIRST`` / ``AFTER c``), ``RENAME
  COLUMN a TO b``, ``DROP COLUMN(S)``, ``ALTER|CHANGE COLUMN c TYPE t`` (widening), ``ALTER
  COLUMN c COMMENT '...'`` / ``SET|DROP NOT NULL`` / ``SET DEFAULT v|DROP DEFAULT`` / ``FIRST`` /
  ``AFTER b``, ``SET
  TBLPROPERTIES``, ``UNSET TBLPROPERTIES [IF EXISTS]``, ``DROP PARTITION (k=v)``, ``RENAME TO``.
  Columns of ADD, RENAME, DROP and ALTER COLUMN (but FIRST / AFTER) may be nested fields, as in
  Spark: ``s.x`` is field ``x`` of struct ``s``, ``l.element.x`` / ``m.value.x`` reach into the
  structs of a list / map (backquote names holding dots).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...exceptions import InvalidArgumentError, TableNotFoundError, UnsupportedError
from ...references import PATH_NAMESPACE, local_path
from ...table import Table, open_or_create_table
from .. import io
from .context import Context
from .references import query_frame

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from sqlglot import exp


# ---- CREATE ------------------------------------------------------------------------------------

def create(ctx: Context, stmt: exp.Create) -> DataFrame | None:
    from sqlglot import exp

    from .. import write

    if stmt.kind in ("DATABASE", "SCHEMA"):
        return _create_database(ctx, stmt)
    props = stmt.args.get("properties")
    prop_list = list(props.expressions) if props is not None else []
    found = {type(p): p for p in prop_list}
    using = found.get(exp.FileFormatProperty)
    schema, query = stmt.this, stmt.args.get("expression")
    ref = schema.this if isinstance(schema, exp.Schema) else schema
    if stmt.kind != "TABLE" or not isinstance(ref, exp.Table):
        return None
    if using is not None and using.name.lower() != PATH_NAMESPACE:
        return None
    if using is None and not _in_tidelake_database(ctx, ref):
        return None
    partitioned = found.get(exp.PartitionedByProperty)
    partition_cols = list(partitioned.this.expressions) if partitioned is not None else []
    table_options = {p.name: p.args["value"].name for p in prop_list if type(p) is exp.Property}
    spec = io.CreateSpec.of_options(table_options)
    if partition_cols:
        spec = io.CreateSpec(spec.primary_keys, [c.name for c in partition_cols], spec.bucket, spec.options)
    frame = None
    if stmt.args.get("replace") and query is not None and any(
            t.name == ref.name and t.db == ref.db for t in query.find_all(exp.Table)):
        raise UnsupportedError(f"REPLACE TABLE {ref.sql('spark')} AS SELECT reading the table it replaces: the old "
                               "table is dropped first; write into a new table, or use INSERT OVERWRITE")
    if query is not None:
        frame = query_frame(ctx, query)
        arrow = io.arrow_schema(frame.schema)
    elif isinstance(schema, exp.Schema) and schema.expressions:
        columns = [c for c in schema.expressions if isinstance(c, exp.ColumnDef)]
        names = {c.name for c in columns}
        columns += [c for c in partition_cols if isinstance(c, exp.ColumnDef) and c.name not in names]
        arrow = _arrow(columns)
    else:
        raise InvalidArgumentError("CREATE TABLE ... USING tidelake needs a column list (id BIGINT, ...) or "
                                   "AS SELECT ...")
    location = found.get(exp.LocationProperty)
    catalog = None
    if location is not None:
        target = local_path(location.this.name)
    elif ctx.is_path(ref):
        target = local_path(ref.name)
    else:
        catalog = ctx.catalog()
        if catalog is None or not ref.db:
            raise InvalidArgumentError(f"CREATE TABLE {ref.sql('spark')} USING tidelake needs a LOCATION, a path "
                                       "(tidelake.`/path`) or db.table with a warehouse (tidelake.spark.sql("
                                       "..., warehouse=) or register(spark, warehouse=))")
        target = f"{ref.db}.{ref.name}"
    if stmt.args.get("replace"):
        if catalog is None:
            raise UnsupportedError("REPLACE TABLE needs a table of a warehouse or catalog (db.t), not a path")
        try:
            catalog.drop_table(target)
        except TableNotFoundError:
            pass
    table, created = open_or_create_table(target, arrow, mode="ignore" if stmt.args.get("exists") else "error",
                                          primary_keys=spec.primary_keys, partition_by=spec.partition_by,
                                          bucket=spec.bucket, options=spec.options,
                                          storage_options=ctx.storage_options, catalog=catalog)
    if frame is None:
        return ctx.result([(table.path, created)], "path string, created boolean")
    snapshot = write(frame, table, "append") if created else None
    return ctx.result([(table.path, created, snapshot)], "path string, created boolean, snapshot_id bigint")


def _in_tidelake_database(ctx: Context, ref: exp.Table) -> bool:
    """Whether ``ref`` is in a database of the warehouse or catalog that Spark does not have:
    there a CREATE TABLE without USING makes a tidelake table, as Paimon's Spark catalog does
    when it is the current one."""
    catalog = ctx.catalog()
    return (catalog is not None and bool(ref.db) and not ctx.is_path(ref) and ref.db in catalog.list_databases()
            and not ctx.spark.catalog.databaseExists(ref.db))


def _arrow(columns: list[exp.ColumnDef]) -> pa.Schema:
    """Spark column definitions as the Arrow schema of a table's columns (a ``COMMENT`` as the
    field's ``description``, which tidelake keeps as the column's comment)."""
    ddl = ", ".join(c.sql("spark") for c in columns)
    schema = io.arrow_schema(io.ddl_schema(ddl))
    for i, column in enumerate(columns):
        comment = column_comment(column)
        if comment is not None:
            schema = schema.set(i, schema.field(i).with_metadata({COMMENT_METADATA: comment}))
    return schema


COMMENT_METADATA = "description"
"""The Arrow field metadata key holding a column's comment in tidelake's schemas."""


def column_comment(column: exp.ColumnDef) -> str | None:
    from sqlglot import exp

    return next((c.kind.name for c in column.args.get("constraints") or []
                 if isinstance(c.kind, exp.CommentColumnConstraint)), None)


def _create_database(ctx: Context, stmt: exp.Create) -> DataFrame | None:
    """``CREATE DATABASE|SCHEMA [IF NOT EXISTS] db`` in the warehouse (as Paimon's Spark catalog
    does when it is the current one); Spark's without a warehouse."""
    catalog = ctx.catalog()
    if catalog is None:
        return None
    name = stmt.this.name or stmt.this.db
    catalog.create_database(name, ignore_if_exists=bool(stmt.args.get("exists")))
    return ctx.result([(name,)], "database string")


# ---- DROP, TRUNCATE ----------------------------------------------------------------------------

def drop(ctx: Context, stmt: exp.Drop) -> DataFrame | None:
    """``DROP TABLE [IF EXISTS] db.t`` of the warehouse or catalog: the table and its files."""
    from sqlglot import exp

    refs = stmt.args.get("tables") or [stmt.this]
    ref = refs[0] if len(refs) == 1 else None
    if str(stmt.args.get("kind", "")).upper() != "TABLE" or not isinstance(ref, exp.Table) or not ref.db:
        return None
    catalog = ctx.catalog()
    if catalog is None or ctx.is_path(ref):
        return None
    identifier = f"{ref.db}.{ref.name}"
    if ref.db not in catalog.list_databases() or ref.name not in catalog.list_tables(ref.db):
        if stmt.args.get("exists"):
            return ctx.result([(identifier, False)], "table string, dropped boolean")
        return None  # Spark's own table, or Spark's error
    catalog.drop_table(identifier)
    return ctx.result([(identifier, True)], "table string, dropped boolean")


def truncate(ctx: Context, stmt: exp.TruncateTable) -> DataFrame | None:
    """``TRUNCATE TABLE <t>``: one OVERWRITE snapshot without rows."""
    refs = stmt.expressions
    table = ctx.table(refs[0]) if len(refs) == 1 else None
    if table is None:
        return None
    return ctx.result([(table.truncate().snapshot_id,)], "snapshot_id bigint")


# ---- ALTER -------------------------------------------------------------------------------------

def alter(ctx: Context, stmt: exp.Alter, nested: list[str] | None = None) -> DataFrame | None:
    """One schema change per action, in order (a rename through the warehouse or catalog).
    ``nested``: the path the column named :data:`_NESTED` stands for (see :func:`alter_nested`)."""
    from sqlglot import exp

    table = ctx.table(stmt.this) if isinstance(stmt.this, exp.Table) else None
    if table is None:
        return None
    for action in stmt.args.get("actions") or []:
        if isinstance(action, exp.Schema):  # ADD COLUMNS (a INT, ...)
            for column in action.expressions:
                table = _add_column(table, column)
        elif isinstance(action, exp.ColumnDef):  # ADD COLUMN a INT [FIRST | AFTER b]
            table = _add_column(table, action)
        elif isinstance(action, exp.RenameColumn):
            table = table.rename_column(_column(action.this, nested), action.args["to"].name)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() in ("COLUMN", "COLUMNS"):
            for dropped in action.args.get("tables") or []:
                for name in (dropped.expressions if isinstance(dropped, exp.Schema) else [dropped]):
                    table = table.drop_column(_column(name, nested))
        elif isinstance(action, exp.AlterColumn) and action.args.get("dtype") is not None:
            table = _change_column(table, action, _column(action.this, nested))
        elif isinstance(action, exp.AlterColumn) and action.args.get("comment") is not None:
            table = table.update_column_comment(_column(action.this, nested), action.args["comment"].name)
        elif isinstance(action, exp.AlterColumn) and action.args.get("allow_null") is not None:
            table = table.update_column_nullability(_column(action.this, nested), bool(action.args["allow_null"]))
        elif isinstance(action, exp.AlterColumn) and action.args.get("default") is not None:
            table = table.update_column_default(_column(action.this, nested), action.args["default"].sql("spark"))
        elif isinstance(action, exp.AlterColumn) and action.args.get("drop"):  # DROP DEFAULT
            table = table.update_column_default(_column(action.this, nested), None)
        elif isinstance(action, exp.AlterSet):
            for props in action.expressions:
                for p in props.expressions:
                    table = table.set_option(p.name, p.args["value"].name)
        elif isinstance(action, exp.DropPartition):
            specs = [{eq.this.name: eq.expression.to_py() for eq in part.expressions}
                     for part in action.expressions]
            table.drop_partitions(specs)
        elif isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
            catalog = ctx.catalog()
            if catalog is None or not stmt.this.db or ctx.is_path(stmt.this):
                raise UnsupportedError("ALTER TABLE ... RENAME TO needs tables of a warehouse or catalog (db.t)")
            catalog.rename_table(f"{stmt.this.db}.{stmt.this.name}",
                                 f"{action.this.db or stmt.this.db}.{action.this.name}")
        else:
            raise UnsupportedError(f"ALTER TABLE ... {action.sql('spark')}: tidelake runs ADD, RENAME, DROP and "
                                   "ALTER COLUMN (type, COMMENT, SET/DROP NOT NULL, SET/DROP DEFAULT, FIRST/AFTER), "
                                   "SET/UNSET TBLPROPERTIES, DROP PARTITION and RENAME TO")
    return ctx.result([(table.path,)], "path string")


_NESTED = "__tidelake_nested_column__"


def _column(expr: exp.Expression, nested: list[str] | None = None) -> str | list[str]:
    """The column ``expr`` names: a name, or the path of a nested field (``s.x``); the
    placeholder :data:`_NESTED` is ``nested``."""
    from sqlglot import exp

    if isinstance(expr, exp.Dot):
        names = [n for part in (expr.this, expr.expression) for n in _names(_column(part))]
    elif isinstance(expr, exp.Column):
        names = [p.name for p in expr.parts]
    else:
        names = [expr.name]
    if names == [_NESTED] and nested is not None:
        names = nested
    return names[0] if len(names) == 1 else names


def _names(column: str | list[str]) -> list[str]:
    return [column] if isinstance(column, str) else column


def _add_column(table: Table, column: exp.Expression) -> Table:
    from sqlglot import exp

    if not isinstance(column, exp.ColumnDef):
        raise UnsupportedError(f"ALTER TABLE ... ADD {column.sql('spark')}: expected a column definition")
    path = _column(column.this)
    leaf = exp.to_identifier(_names(path)[-1], quoted=True)
    bare = exp.ColumnDef(this=leaf, kind=column.args["kind"].copy())
    field = _arrow([bare]).field(0)
    comment = column_comment(column)
    if column.args.get("constraints") and comment is None:
        raise UnsupportedError(f"ALTER TABLE ... ADD {column.sql('spark')}: tidelake adds nullable columns with "
                               "an optional COMMENT")
    position = column.args.get("position")
    where = str(position.args.get("position", "")).upper() if position is not None else ""
    after = position.this.name if position is not None and where == "AFTER" else None
    return table.add_column(path, field.type, first=where == "FIRST", after=after, comment=comment)


def _change_column(table: Table, action: exp.AlterColumn, column: str | list[str]) -> Table:
    """``ALTER COLUMN c TYPE t`` and ``CHANGE COLUMN c [d] t``: a rename (when named) and a
    widening of the type (when it differs)."""
    from sqlglot import exp

    path = _names(column)
    renamed = action.args.get("rename_to")
    if renamed is not None and renamed.name != path[-1]:
        table = table.rename_column(column, renamed.name)
        path = [*path[:-1], renamed.name]
    definition = exp.ColumnDef(this=exp.to_identifier(path[-1], quoted=True), kind=action.args["dtype"].copy())
    wanted = _arrow([definition]).field(0).type
    if _type_at(table.schema, path) != wanted:
        table = table.update_column_type(path[0] if len(path) == 1 else path, wanted)
    return table


def _type_at(schema: pa.Schema, path: list[str]) -> pa.DataType | None:
    """The Arrow type of the column or nested field at ``path`` (``element`` / ``value`` step into
    lists / maps); None when there is none (the change then names the problem)."""
    import pyarrow as pa

    if path[0] not in schema.names:
        return None
    t = schema.field(path[0]).type
    for name in path[1:]:
        if pa.types.is_struct(t) and t.get_field_index(name) >= 0:
            t = t.field(name).type
        elif pa.types.is_list(t) and name == "element":
            t = t.value_type
        elif pa.types.is_map(t) and name == "value":
            t = t.item_type
        else:
            return None
    return t


def _opaque_alter(ctx: Context, pattern: re.Pattern[str], text: str) -> tuple[re.Match[str], Table] | None:
    """An ALTER statement sqlglot does not parse: ``pattern``'s match of ``text`` (its first group
    names the table) and the table; None when ``text`` is not that or the table is not tidelake's."""
    m = pattern.fullmatch(text)
    table = None if m is None else ctx.table_written(m.group(1))
    return None if m is None or table is None else (m, table)


_MOVE = re.compile(r"\s*ALTER\s+TABLE\s+(.+?)\s+(?:ALTER|CHANGE)\s+(?:COLUMN\s+)?(\S+)\s+(FIRST|AFTER\s+(\S+))\s*;?\s*",
                   re.S | re.I)


def move_column(ctx: Context, text: str) -> DataFrame | None:
    """``ALTER TABLE <t> ALTER COLUMN c FIRST|AFTER b`` (which sqlglot does not parse); None when
    ``text`` is not that or the table is not tidelake's."""
    found = _opaque_alter(ctx, _MOVE, text)
    if found is None:
        return None
    m, table = found
    names, after = _split_names(m.group(2)), m.group(4)
    if len(names) != 1:
        raise UnsupportedError(f"ALTER COLUMN {m.group(2)} {m.group(3)}: Paimon moves top-level columns only")
    table = table.move_column(names[0], first=after is None, after=None if after is None else after.strip("`"))
    return ctx.result([(table.path,)], "path string")


_NAME = r"(?:`[^`]*`|[^\s.`]+)"
_ALTER_NESTED = re.compile(rf"\s*ALTER\s+TABLE\s+.+?\s+ALTER\s+(?:COLUMN\s+)?({_NAME}(?:\.{_NAME})+)\s+\S.*",
                           re.S | re.I)


def _split_names(text: str) -> list[str]:
    """The names of a dotted (and maybe backquoted) column reference."""
    return [n[1:-1].replace("``", "`") if n.startswith("`") else n for n in re.findall(_NAME, text)]


def alter_nested(ctx: Context, text: str) -> DataFrame | None:
    """``ALTER TABLE <t> ALTER COLUMN s.x TYPE t | COMMENT '..' | SET/DROP NOT NULL | SET/DROP
    DEFAULT`` (sqlglot parses those of top-level columns only): parsed with the nested column
    replaced by a placeholder; None when ``text`` is not that, or not for a tidelake table."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    m = _ALTER_NESTED.fullmatch(text)
    if m is None:
        return None
    path = _split_names(m.group(1))
    try:
        stmt = sqlglot.parse_one(f"{text[:m.start(1)]}`{_NESTED}`{text[m.end(1):]}", read="spark")
    except ParseError:
        return None
    return alter(ctx, stmt, path) if isinstance(stmt, exp.Alter) else None


_UNSET = re.compile(r"\s*ALTER\s+TABLE\s+(.+?)\s+UNSET\s+TBLPROPERTIES\s+(IF\s+EXISTS\s+)?\((.*)\)\s*;?\s*",
                    re.S | re.I)


def unset_properties(ctx: Context, text: str) -> DataFrame | None:
    """``ALTER TABLE <t> UNSET TBLPROPERTIES [IF EXISTS] ('k', ...)`` (which sqlglot does not
    parse); None when ``text`` is not that or the table is not tidelake's."""
    import sqlglot
    from sqlglot.tokens import TokenType

    found = _opaque_alter(ctx, _UNSET, text)
    if found is None:
        return None
    m, table = found
    keys = [t.text for t in sqlglot.tokenize(m.group(3), read="spark")
            if t.token_type in (TokenType.STRING, TokenType.VAR, TokenType.IDENTIFIER)]
    missing = [k for k in keys if k not in table.options]
    if missing and not m.group(2):
        raise InvalidArgumentError(f"table {table.path} has no properties {missing} to unset (UNSET TBLPROPERTIES "
                                   "IF EXISTS ignores them)")
    for key in keys:
        if key in table.options:
            table = table.remove_option(key)
    return ctx.result([(table.path,)], "path string")
