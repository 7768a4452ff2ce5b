"""``CALL [sys.]<procedure>(...)``: Paimon's Spark procedures with Paimon's names and argument
names (by name ``table => 'db.t'`` or by position, in Paimon's order), each run through the
Python API (:class:`~tidelake.Table` methods; ``compact`` with :func:`tidelake.spark.compact`)
and answering one row of what it did. Arguments tidelake cannot honour are refused by name."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...catalog import Catalog
from ...exceptions import InvalidArgumentError, UnsupportedError
from .context import Context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from ...table import Table

PROCEDURES: dict[str, tuple[str, ...]] = {
    "compact": ("table", "partitions", "where", "order_strategy", "order_by", "options", "partition_idle_time",
                "compact_strategy"),
    "expire_snapshots": ("table", "retain_max", "retain_min", "older_than", "max_deletes", "options"),
    "expire_changelogs": ("table", "retain_max", "retain_min", "older_than", "max_deletes", "delete_all"),
    "expire_partitions": ("table", "expiration_time", "timestamp_formatter", "timestamp_pattern", "expire_strategy",
                          "max_expires", "options"),
    "remove_orphan_files": ("table", "older_than", "dry_run", "parallelism", "mode"),
    "create_tag": ("table", "tag", "snapshot", "time_retained"),
    "create_tag_from_timestamp": ("table", "tag", "timestamp", "time_retained"),
    "delete_tag": ("table", "tag"),
    "rename_tag": ("table", "tag", "target_tag"),
    "replace_tag": ("table", "tag", "snapshot", "time_retained"),
    "rollback": ("table", "version", "snapshot", "tag"),
    "rollback_to_timestamp": ("table", "timestamp"),
    "create_branch": ("table", "branch", "tag"),
    "delete_branch": ("table", "branch"),
    "fast_forward": ("table", "branch"),
    "create_stage": ("table", "branch"),
    "publish_stage": ("table", "branch"),
    "reset_consumer": ("table", "consumerid", "nextsnapshotid"),
    "mark_partition_done": ("table", "partitions"),
    "compact_manifest": ("table", "options"),
    "remove_unexisting_files": ("table", "dry_run", "parallelism"),
    "purge_files": ("table",),
    "rescale": ("table", "bucket_num", "partition", "scan_parallelism", "sink_parallelism"),
    "rewrite_file_index": ("table", "partitions"),
}
"""Paimon's Spark procedures run here, with their parameters (lower case) in Paimon's order, and
tidelake's write-audit-publish pair ``create_stage`` / ``publish_stage`` (:meth:`Table.stage
<tidelake.Table.stage>`, :meth:`Table.publish_stage <tidelake.Table.publish_stage>`), and Paimon's
Flink procedures ``expire_changelogs`` (``delete_all`` is refused), ``rescale`` and
``rewrite_file_index``."""

CATALOG_PROCEDURES: dict[str, tuple[str, ...]] = {
    "migrate_table": ("source_type", "table", "options", "delete_origin", "target_table", "options_map",
                      "parallelism"),
    "migrate_database": ("source_type", "database", "options", "options_map", "parallelism"),
    "clone": ("database", "table", "catalog_conf", "target_database", "target_table", "target_catalog_conf",
              "parallelism", "where", "included_tables", "excluded_tables", "clone_from"),
}
"""Procedures on the catalog rather than on one of its Paimon tables: Paimon's Spark
``migrate_table`` and ``migrate_database`` (a Hive table, or every table of a Hive database, of the
Hive catalog into Paimon tables) and Flink ``clone`` (Hive
or Paimon tables, one or a database's or the catalog's, copied into Paimon tables, of another
catalog with ``target_catalog_conf``), with their parameters in Paimon's order."""

_CALL = re.compile(r"\s*(?:`?sys`?\.)?`?(\w+)`?\s*\((.*)\)\s*;?\s*", re.S)


def call(ctx: Context, text: str) -> DataFrame:
    """``text`` is what follows ``CALL``."""
    import sqlglot
    from sqlglot import exp

    m = _CALL.fullmatch(text)
    if m is None:
        raise InvalidArgumentError(f"cannot read the procedure call {text!r}: expected CALL [sys.]name(args)")
    name = m.group(1).lower()
    known = {**PROCEDURES, **CATALOG_PROCEDURES}
    if name not in known:
        raise UnsupportedError(f"procedure {name!r} is not supported; tidelake runs {', '.join(known)}")
    args = sqlglot.parse_one(f"SELECT f({m.group(2)})", read="spark").expressions[0].expressions if \
        m.group(2).strip() else []
    params, given = known[name], {}
    for i, arg in enumerate(args):
        key, value = (arg.this.name.lower(), arg.expression) if isinstance(arg, exp.Kwarg) else (
            params[i] if i < len(params) else "", arg)
        if key not in params:
            raise InvalidArgumentError(f"procedure {name} has no argument {key or i + 1!r}; its arguments are "
                                       f"{', '.join(params)}")
        given[key] = value.to_py()
    given = {k: v for k, v in given.items() if v not in (None, "")}
    if name in CATALOG_PROCEDURES:
        return getattr(_CatalogProcedures(ctx), name)(**given)
    if "table" not in given:
        raise InvalidArgumentError(f"procedure {name} needs table => 'db.table' (or a path)")
    table = ctx.named(str(given.pop("table")))
    return getattr(_Procedures(ctx, table), name)(**given)


def _flag(value: Any) -> bool:
    """A boolean argument given as a SQL boolean or a string."""
    return str(value).lower() == "true"


def _names(text: Any) -> list[str]:
    """Paimon's comma-separated list of tags or branches."""
    return [n.strip() for n in str(text).split(",") if n.strip()]


def _conf(text: Any) -> dict[str, str]:
    """Paimon's comma-separated ``k=v`` options."""
    pairs = [kv.partition("=") for kv in str(text).split(",") if kv.strip()]
    if any(not sep or not key.strip() for key, sep, _ in pairs):
        raise InvalidArgumentError(f"bad options {text!r}: expected k=v[,k=v...]")
    return {key.strip(): value.strip() for key, _, value in pairs}


class _CatalogProcedures:
    """Paimon's procedures on the catalog (:data:`CATALOG_PROCEDURES`)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _catalog(self, procedure: str, kind: str = "a Hive catalog (metastore=hive)") -> Catalog:
        catalog = self.ctx.catalog()
        if catalog is None:
            raise UnsupportedError(f"{procedure} needs {kind}: tidelake.spark.register(spark, catalog={{...}})")
        return catalog

    def migrate_table(self, table: str | None = None, source_type: str = "hive", options: str | None = None,
                      delete_origin: Any = True, target_table: str | None = None,
                      options_map: dict[str, str] | None = None, parallelism: Any = None) -> DataFrame:
        """Paimon's Spark ``migrate_table``: :meth:`Catalog.migrate_table <tidelake.Catalog.migrate_table>`
        (``parallelism`` is accepted and not needed)."""
        if str(source_type).lower() != "hive":
            raise UnsupportedError(f"migrate_table: source_type {source_type!r} is not supported (only 'hive')")
        if table is None:
            raise InvalidArgumentError("procedure migrate_table needs table => 'db.table'")
        table_options = {**_conf(options or ""), **(options_map or {})}
        self._catalog("migrate_table").migrate_table(str(table), target=target_table, options=table_options,
                                           delete_origin=_flag(delete_origin))
        return self.ctx.result([(True,)], "result boolean")

    def migrate_database(self, database: str | None = None, source_type: str = "hive", options: str | None = None,
                         options_map: dict[str, str] | None = None, parallelism: Any = None) -> DataFrame:
        """Paimon's Spark ``migrate_database``: :meth:`Catalog.migrate_database
        <tidelake.Catalog.migrate_database>`, with Java's result (``parallelism`` is accepted and
        not needed)."""
        if str(source_type).lower() != "hive":
            raise UnsupportedError(f"migrate_database: source_type {source_type!r} is not supported (only 'hive')")
        if database is None:
            raise InvalidArgumentError("procedure migrate_database needs database => 'db'")
        migrated, failed = self._catalog("migrate_database").migrate_database(
            str(database), options={**_conf(options or ""), **(options_map or {})})
        text = f"migrate database is finished, success cnt: {len(migrated)} , failed cnt: {len(failed)}"
        return self.ctx.result([(text,)], "result string")

    def clone(self, database: str | None = None, table: str | None = None, catalog_conf: str | None = None,
              target_database: str | None = None, target_table: str | None = None,
              target_catalog_conf: str | None = None, parallelism: Any = None, where: str | None = None,
              included_tables: str | None = None, excluded_tables: str | None = None,
              clone_from: str = "hive") -> DataFrame:
        """Paimon's (Flink) ``clone`` of a table, a database or the catalog, from Hive or Paimon
        tables: :meth:`Catalog.clone_table <tidelake.Catalog.clone_table>` for each, from this
        catalog (or ``catalog_conf``'s) into this catalog (or ``target_catalog_conf``'s);
        ``parallelism`` is accepted and not needed. One row per table cloned."""
        source = Catalog.from_options(_conf(catalog_conf)) if catalog_conf else self._catalog(
            "clone", "a catalog (or catalog_conf)")
        target = Catalog.from_options(_conf(target_catalog_conf)) if target_catalog_conf else source
        cloned = source.clone_tables(database, table, target_database=target_database, target_table=target_table,
                                     target_catalog=target, included_tables=_names(included_tables or ""),
                                     excluded_tables=_names(excluded_tables or ""), where=where,
                                     clone_from=str(clone_from))
        return self.ctx.result(cloned, "source_table string, target_table string, snapshot_id bigint")


class _Procedures:
    """Paimon's procedures over the Python API; each returns a DataFrame of what it did."""

    def __init__(self, ctx: Context, table: Table) -> None:
        self.ctx, self.table = ctx, table

    def _only(self, name: str, given: dict[str, Any]) -> None:
        if given:
            raise UnsupportedError(f"{name}: argument(s) {', '.join(given)} are not supported by tidelake")

    def _needs(self, name: str, **given: Any) -> None:
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise InvalidArgumentError(f"procedure {name} needs {', '.join(f'{k} =>' for k in missing)}")

    def _partitions(self, text: str) -> list[dict[str, Any]]:
        """Paimon's ``k=v[,k=v...][;k=v...]`` as typed partition specs."""
        from ...maintenance import typed_partitions

        return typed_partitions(self.table, [dict(_key_value(kv) for kv in p.split(",")) for p in text.split(";")])

    def compact(self, partitions: str | None = None, compact_strategy: str = "full", order_strategy: str = "none",
                order_by: str | None = None, **rest: Any) -> DataFrame:
        """With ``order_strategy`` (order, zorder, hilbert) and ``order_by``: sort compaction
        (:meth:`Table.compact` with ``order_by``, run here); otherwise with Spark."""
        from .. import compact

        self._only("compact", rest)
        if compact_strategy not in ("full", "minor"):
            raise InvalidArgumentError(f"compact_strategy must be 'full' or 'minor', got {compact_strategy!r}")
        columns = [c for c in str(order_by or "").split(",") if c]
        if str(order_strategy).lower() == "none":
            if columns:
                raise InvalidArgumentError('order_strategy "none" cannot work with order_by columns.')
        elif not columns:
            raise InvalidArgumentError(f"order_strategy {order_strategy!r} needs order_by columns")
        specs = None
        if partitions:
            specs = self._partitions(partitions)
        if columns:
            snapshot = self.table.compact(partitions=specs, order_by=columns, strategy=str(order_strategy).lower())
        else:
            snapshot = compact(self.ctx.spark, self.table, full=compact_strategy == "full", partitions=specs)
        return self.ctx.result([(snapshot,)], "snapshot_id bigint")

    def expire_snapshots(self, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: Any = None, max_deletes: int | None = None, **rest: Any) -> DataFrame:
        from ...table import _epoch_ms

        self._only("expire_snapshots", rest)
        done = self.table.expire_snapshots(retain_min, retain_max,
                                           None if older_than is None else _epoch_ms(older_than), max_deletes)
        return self.ctx.result([(done["snapshots"],)], "expired_snapshots bigint")

    def expire_changelogs(self, retain_max: int | None = None, retain_min: int | None = None,
                          older_than: Any = None, max_deletes: int | None = None, **rest: Any) -> DataFrame:
        from ...table import _epoch_ms

        self._only("expire_changelogs", rest)
        done = self.table.expire_changelogs(retain_min=retain_min, retain_max=retain_max,
                                            older_than_ms=None if older_than is None else _epoch_ms(older_than),
                                            max_deletes=max_deletes)
        return self.ctx.result([(done["changelogs"],)], "expired_changelogs bigint")

    def expire_partitions(self, expiration_time: str | None = None, timestamp_formatter: str | None = None,
                          timestamp_pattern: str | None = None, expire_strategy: str | None = None,
                          **rest: Any) -> DataFrame:
        """Paimon's arguments that are table options in tidelake must equal the table's."""
        from ...maintenance import parse_duration

        self._only("expire_partitions", rest)
        for key, value in (("partition.timestamp-formatter", timestamp_formatter),
                           ("partition.timestamp-pattern", timestamp_pattern),
                           ("partition.expiration-strategy", expire_strategy)):
            own = self.table.options.get(key) or self.table.effective_options.get(key)
            if value is not None and str(value) != own:
                raise UnsupportedError(f"expire_partitions: {value!r} differs from the table's option {key} "
                                       f"({own!r}); tidelake expires by the table's options: set it with ALTER TABLE "
                                       f"... SET TBLPROPERTIES ('{key}' = '{value}')")
        gone = self.table.expire_partitions(None if expiration_time is None else parse_duration(str(expiration_time)))
        rows = [(",".join(f"{k}={v}" for k, v in p.items()),) for p in gone]
        return self.ctx.result(rows, "expired_partitions string")

    def mark_partition_done(self, partitions: str | None = None) -> DataFrame:
        self._needs("mark_partition_done", partitions=partitions)
        self.table.mark_partition_done(self._partitions(str(partitions)))
        return self.ctx.result([(True,)], "result boolean")

    def compact_manifest(self, **rest: Any) -> DataFrame:
        self._only("compact_manifest", rest)
        self.table.compact_manifests()
        return self.ctx.result([(True,)], "result boolean")

    def rescale(self, bucket_num: Any = None, partition: str | None = None, scan_parallelism: Any = None,
                sink_parallelism: Any = None) -> DataFrame:
        """Paimon's (Flink) ``rescale``: :meth:`Table.rescale`, run here (the parallelisms of
        Paimon's job change nothing); the OVERWRITE snapshot's id."""
        snapshot = self.table.rescale(None if bucket_num is None else int(bucket_num),
                                      self._partitions(partition) if partition else None)
        return self.ctx.result([(snapshot,)], "snapshot_id bigint")

    def rewrite_file_index(self, partitions: str | None = None) -> DataFrame:
        """Paimon's (Flink) ``rewrite_file_index``: :meth:`Table.rewrite_file_index`; the COMPACT
        snapshot's id (null when no file's index changed)."""
        snapshot = self.table.rewrite_file_index(self._partitions(partitions) if partitions else None)
        return self.ctx.result([(snapshot,)], "snapshot_id bigint")

    def remove_unexisting_files(self, dry_run: Any = False, parallelism: Any = None) -> DataFrame:
        """``parallelism`` (Paimon's Spark job size) changes nothing here."""
        paths = self.table.remove_unexisting_files(dry_run=_flag(dry_run))
        return self.ctx.result([(p,) for p in paths], "fileName string")

    def purge_files(self) -> DataFrame:
        self.table.purge_files()
        return self.ctx.result([("Success",)], "result string")

    def remove_orphan_files(self, older_than: Any = None, dry_run: Any = False, parallelism: Any = None,
                            mode: Any = None) -> DataFrame:
        """``parallelism`` and ``mode`` (where Paimon's job runs) change nothing here."""
        from ...table import _epoch_ms

        files = self.table.remove_orphan_files(None if older_than is None else _epoch_ms(older_than),
                                               dry_run=_flag(dry_run))
        return self.ctx.result([(len(files), sum(size for _, size in files))],
                               "deleted_file_count bigint, deleted_file_total_len_in_bytes bigint")

    def create_tag(self, tag: str | None = None, snapshot: int | None = None,
                   time_retained: str | None = None) -> DataFrame:
        from ...maintenance import parse_duration

        self._needs("create_tag", tag=tag)
        made = self.table.create_tag(str(tag), None if snapshot is None else int(snapshot),
                                     None if time_retained is None else parse_duration(str(time_retained)))
        return self.ctx.result([(made.name, made.snapshot_id)], "tag string, snapshot_id bigint")

    def create_tag_from_timestamp(self, tag: str | None = None, timestamp: Any = None,
                                  time_retained: str | None = None) -> DataFrame:
        """The tag is on the snapshot committed at ``timestamp`` (epoch ms) or just before."""
        self._needs("create_tag_from_timestamp", tag=tag, timestamp=timestamp)
        return self.create_tag(tag, self._snapshot_at(timestamp), time_retained)

    def replace_tag(self, tag: str | None = None, snapshot: int | None = None,
                    time_retained: str | None = None) -> DataFrame:
        from ...maintenance import parse_duration

        self._needs("replace_tag", tag=tag)
        made = self.table.replace_tag(str(tag), None if snapshot is None else int(snapshot),
                                      None if time_retained is None else parse_duration(str(time_retained)))
        return self.ctx.result([(made.name, made.snapshot_id)], "tag string, snapshot_id bigint")

    def rename_tag(self, tag: str | None = None, target_tag: str | None = None) -> DataFrame:
        self._needs("rename_tag", tag=tag, target_tag=target_tag)
        self.table.rename_tag(str(tag), str(target_tag))
        return self.ctx.result([(str(tag), str(target_tag))], "tag string, target_tag string")

    def delete_tag(self, tag: str | None = None) -> DataFrame:
        self._needs("delete_tag", tag=tag)
        names = _names(tag)
        for name in names:
            self.table.delete_tag(name)
        return self.ctx.result([(n,) for n in names], "tag string")

    def rollback(self, version: Any = None, snapshot: int | None = None, tag: str | None = None) -> DataFrame:
        if sum(v is not None for v in (version, snapshot, tag)) != 1:
            raise InvalidArgumentError("rollback needs exactly one of version, snapshot or tag")
        if version is not None:  # Paimon's: a snapshot id, else a tag name
            text = str(version)
            snapshot, tag = (int(text), None) if text.isdigit() else (None, text)
        self.table.rollback_to(snapshot_id=None if snapshot is None else int(snapshot), tag=tag)
        latest = self.table.refresh().latest_snapshot()
        return self.ctx.result([(None if latest is None else latest.id,)], "snapshot_id bigint")

    def rollback_to_timestamp(self, timestamp: Any = None) -> DataFrame:
        """To the snapshot committed at ``timestamp`` (epoch ms) or just before."""
        self._needs("rollback_to_timestamp", timestamp=timestamp)
        return self.rollback(snapshot=self._snapshot_at(timestamp))

    def create_branch(self, branch: str | None = None, tag: str | None = None) -> DataFrame:
        self._needs("create_branch", branch=branch)
        self.table.create_branch(str(branch), from_tag=tag)
        return self.ctx.result([(str(branch),)], "branch string")

    def delete_branch(self, branch: str | None = None) -> DataFrame:
        self._needs("delete_branch", branch=branch)
        names = _names(branch)
        for name in names:
            self.table.delete_branch(name)
        return self.ctx.result([(n,) for n in names], "branch string")

    def fast_forward(self, branch: str | None = None) -> DataFrame:
        self._needs("fast_forward", branch=branch)
        latest = self.table.fast_forward(str(branch)).latest_snapshot()
        return self.ctx.result([(None if latest is None else latest.id,)], "snapshot_id bigint")

    def create_stage(self, branch: str | None = None) -> DataFrame:
        """A branch of the latest snapshot to write to (``db.t$branch_<name>``) and publish."""
        self._needs("create_stage", branch=branch)
        base = self.table.stage(str(branch)).base_snapshot_id
        return self.ctx.result([(str(branch), base)], "branch string, base_snapshot_id bigint")

    def publish_stage(self, branch: str | None = None) -> DataFrame:
        """The stage published as one snapshot of the table (``null``: it changed nothing)."""
        self._needs("publish_stage", branch=branch)
        return self.ctx.result([(self.table.publish_stage(str(branch)),)], "snapshot_id bigint")

    def reset_consumer(self, consumerid: str | None = None, nextsnapshotid: int | None = None) -> DataFrame:
        """Without ``nextSnapshotId`` the consumer is deleted, as in Paimon."""
        self._needs("reset_consumer", consumerId=consumerid)
        if nextsnapshotid is None:
            self.table.delete_consumer(str(consumerid))
        else:
            self.table.reset_consumer(str(consumerid), int(nextsnapshotid))
        return self.ctx.result([(str(consumerid), nextsnapshotid)], "consumer_id string, next_snapshot_id bigint")

    def _snapshot_at(self, timestamp: Any) -> int:
        from ...exceptions import TableNotFoundError
        from ...table import _epoch_ms

        at = _epoch_ms(int(timestamp) if str(timestamp).isdigit() else timestamp)
        found = self.table.snapshot_at(at)
        if found is None:
            raise TableNotFoundError(f"{self.table.path} has no snapshot committed at or before {timestamp}")
        return found.id


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InvalidArgumentError(f"bad partition {text!r}: expected k=v[,k=v...][;k=v...]")
    return key.strip(), value.strip()
