"""Read-only commands: info, snapshots, schema, files, cat, system, tail."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import click

from .. import exceptions as exc
from .. import startup
from ..catalog import Catalog
from ..maintenance import SYSTEM_TABLES
from ..table import Table
from ._app import _JSON, _PATH, _emit_json, _guarded, _open, main
from ._filter import parse_filter
from ._format import _cell, _count, _fmt_time, _human_bytes, _json_value, _print_rows, _print_table, paimon_type
from ._params import _columns, _one_version


def _info_dict(t: Table) -> dict[str, Any]:
    snaps = t.snapshots()
    return {
        "path": t.path,
        "kind": "primary-key" if t.primary_keys else "append",
        "schema_id": t.schema_id,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in t.schema],
        "primary_keys": t.primary_keys,
        "partition_keys": t.partition_keys,
        "options": t.options,
        "snapshots": [s.to_dict() for s in snaps],
        "tags": [tag.to_dict() for tag in t.tags()],
        "branch": t.branch,
        "branches": t.branches(),
    }


def _table_line(catalog: Catalog, identifier: str) -> dict[str, Any]:
    t = catalog.get_table(identifier)
    latest = t.latest_snapshot()
    return {
        "table": identifier,
        "kind": "primary-key" if t.primary_keys else "append",
        "primary_keys": t.primary_keys,
        "partition_keys": t.partition_keys,
        "latest_snapshot": latest.id if latest else None,
        "records": latest.total_record_count if latest else 0,
        "committed": latest.time_millis if latest else None,
    }


def _catalog_of(path: str) -> tuple[str, Catalog, list[str]] | None:
    """What PATH is (``database`` or ``warehouse``), its catalog and database names when it is
    a database directory (``NAME.db``) or a warehouse rather than a table; None otherwise."""
    storage_options = click.get_current_context().find_root().obj[0]
    location = path if "://" in path else os.path.abspath(path)
    parent, _, name = location.rstrip("/").rpartition("/")
    if name.endswith(".db") and parent:
        catalog = Catalog(parent, storage_options=storage_options)
        if name[:-3] in catalog.list_databases():
            return "database", catalog, [name[:-3]]
    catalog = Catalog(location, storage_options=storage_options)
    databases = catalog.list_databases()
    return ("warehouse", catalog, databases) if databases else None


def _print_catalog(path: str, what: str, catalog: Catalog, databases: list[str], as_json: bool) -> None:
    tables = [_table_line(catalog, f"{db}.{name}") for db in databases for name in catalog.list_tables(db)]
    if as_json:
        _emit_json({"path": path, "databases": databases, "tables": tables})
        return
    click.echo(f"{what}: {path}")
    click.echo(f"tables: {len(tables)}")
    _print_table([[d["table"], d["kind"], ", ".join(d["primary_keys"]) or "-", ", ".join(d["partition_keys"]) or "-",
                   d["latest_snapshot"], d["records"], _fmt_time(d["committed"])] for d in tables],
                 ["table", "kind", "primary keys", "partition keys", "snapshot", "records", "committed"])


@main.command(short_help="Schema, keys, options, snapshots and tags of a table (or a database's tables).")
@_PATH
@_JSON
@_guarded
def info(path: str, as_json: bool) -> None:
    """Show the table at PATH: its schema, keys, options, snapshots and tags. When PATH is a
    database directory (``warehouse/NAME.db``) or a warehouse, list its tables instead."""
    try:
        t = _open(path)
    except exc.TableNotFoundError:
        found = _catalog_of(path)
        if found is None:
            raise
        _print_catalog(path, *found, as_json)
        return
    d = _info_dict(t)
    if as_json:
        _emit_json(d)
        return
    click.echo(f"table:          {d['path']}")
    click.echo(f"kind:           {d['kind']}")
    click.echo(f"primary keys:   {', '.join(d['primary_keys']) or '-'}")
    click.echo(f"partition keys: {', '.join(d['partition_keys']) or '-'}")
    click.echo(f"schema id:      {d['schema_id']}")
    click.echo("")
    click.echo("schema:")
    _print_table([[f["name"], f["type"], "" if f["nullable"] else "NOT NULL"] for f in d["schema"]],
                 ["column", "arrow type", "null"])
    click.echo("")
    click.echo("options:")
    _print_table([[k, v] for k, v in d["options"].items()], ["option", "value"])
    click.echo("")
    snaps = d["snapshots"]
    click.echo(f"snapshots: {len(snaps)}")
    _print_table(
        [[s["id"], s["schema_id"], s["commit_kind"], _fmt_time(s["time_millis"]), s["total_record_count"]]
         for s in snaps],
        ["id", "schema", "kind", "committed", "records"],
    )
    click.echo("")
    click.echo(f"tags: {len(d['tags'])}")
    if d["tags"]:
        _print_table([[tg["name"], tg["snapshot_id"]] for tg in d["tags"]], ["tag", "snapshot"])
    click.echo("")
    click.echo(f"branch: {d['branch']}; other branches: {', '.join(d['branches']) or '-'}")


@main.command(short_help="List the snapshots of a table.")
@_PATH
@_JSON
@_guarded
def snapshots(path: str, as_json: bool) -> None:
    """List the snapshots of the table at PATH, oldest first: id, schema, commit kind, commit
    time (UTC) and record counts (total, delta, changelog)."""
    snaps = _open(path).snapshots()
    if as_json:
        _emit_json([s.to_dict() for s in snaps])
        return
    _print_table(
        [[s.id, s.schema_id, s.commit_kind, _fmt_time(s.time_millis), s.total_record_count,
          s.delta_record_count, s.changelog_record_count] for s in snaps],
        ["id", "schema", "kind", "committed", "total", "delta", "changelog"],
    )
    click.echo(f"({len(snaps)} snapshots)")


@main.command(short_help="Show a schema version of a table.")
@_PATH
@click.option("--id", "schema_id", type=int, metavar="N", help="Show schema version N (default: the latest).")
@_JSON
@_guarded
def schema(path: str, schema_id: int | None, as_json: bool) -> None:
    """Show a schema version of the table at PATH: fields with their ids and Paimon types, keys,
    options and comment."""
    t = _open(path)
    versions = t.schemas()
    wanted = t.schema_id if schema_id is None else schema_id
    found = [v for v in versions if v.id == wanted]
    if not found:
        ids = ", ".join(str(v.id) for v in versions)
        raise exc.TableNotFoundError(f"schema {wanted} not found in {t.path}; available schemas: {ids}")
    v = found[0]
    if as_json:
        _emit_json({"id": v.id, "fields": v.fields, "partition_keys": v.partition_keys,
                    "primary_keys": v.primary_keys, "options": v.options, "comment": v.comment,
                    "time_millis": v.time_millis, "highest_field_id": v.highest_field_id})
        return
    click.echo(f"schema id:      {v.id}{'  (latest)' if v.id == t.schema_id else ''}")
    click.echo(f"created:        {_fmt_time(v.time_millis) if v.time_millis else '-'}")
    click.echo(f"primary keys:   {', '.join(v.primary_keys) or '-'}")
    click.echo(f"partition keys: {', '.join(v.partition_keys) or '-'}")
    if v.comment:
        click.echo(f"comment:        {v.comment}")
    click.echo("")
    _print_table([[f["id"], f["name"], paimon_type(f["type"]), f.get("description") or ""] for f in v.fields],
                 ["id", "column", "type", "description"])
    if v.options:
        click.echo("")
        _print_table([[k, val] for k, val in v.options.items()], ["option", "value"])


def _file_rows(t: Table, snapshot_id: int | None, tag: str | None) -> Iterator[dict[str, Any]]:
    scan = t.scan(snapshot_id=snapshot_id, tag=tag)
    for split in scan.splits():
        s = json.loads(split.payload)
        bucket_dir = s.get("bucket_path", "")
        partition = bucket_dir.rsplit("/", 1)[0] if "/" in bucket_dir else ""
        for f in s["files"]:
            dv = f.get("deletion")
            yield {
                "snapshot_id": s.get("snapshot_id"),
                "partition": partition,
                "bucket": s["bucket"],
                "file": f["file_name"],
                "path": f["path"],
                "level": f["level"],
                "rows": f["row_count"],
                "size": f["file_size"],
                "schema_id": f.get("schema_id"),
                "min_sequence_number": f.get("min_sequence_number"),
                "max_sequence_number": f.get("max_sequence_number"),
                "deleted_rows": dv.get("cardinality") if dv else None,
                "deletion_vector": dv.get("path") if dv else None,
            }


@main.command(short_help="List the data files a read sees.")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="List the files of snapshot N "
              "(default: the latest).")
@click.option("--tag", metavar="T", help="List the files of tag T.")
@_JSON
@_guarded
def files(path: str, snapshot_id: int | None, tag: str | None, as_json: bool) -> None:
    """List the data files a read of the table at PATH sees: partition, bucket, file, LSM level,
    rows, size and rows removed by a deletion vector (--json gives sizes in bytes)."""
    _one_version(snapshot=snapshot_id, tag=tag)
    rows = list(_file_rows(_open(path), snapshot_id, tag))
    if as_json:
        _emit_json(rows)
        return
    _print_table([[r["partition"] or "-", r["bucket"], r["file"], r["level"], r["rows"], _human_bytes(r["size"]),
                   r["deleted_rows"]] for r in rows],
                 ["partition", "bucket", "file", "level", "rows", "size", "deleted"])
    click.echo(f"({_count(len(rows), 'file')}, {_count(sum(r['rows'] for r in rows), 'row')}, "
               f"{_human_bytes(sum(r['size'] for r in rows))})")


@main.command(short_help="Print the rows of a table (or of a snapshot, tag or time).")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Read snapshot N (time travel).")
@click.option("--tag", metavar="T", help="Read the snapshot tag T keeps.")
@click.option("--timestamp-ms", "timestamp_ms", type=int, metavar="T",
              help="Read the last snapshot committed at or before T (epoch milliseconds).")
@click.option("--columns", metavar="A,B", help="Comma-separated columns to print, in this order (default: all).")
@click.option("--filter", "filter_text", metavar="EXPR",
              help="Keep rows matching EXPR: 'col OP value' terms (OP: = != < <= > >=, also "
                   "'col in (1, 2)', 'col not in (...)', 'col is [not] null') joined by 'and' / "
                   "'or'; values are numbers, 'quoted' strings, true/false or ISO dates.")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Print at most N rows.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON Lines: one object per row (bytes as hex, decimals and times as strings).")
@_guarded
def cat(path: str, snapshot_id: int | None, tag: str | None, timestamp_ms: int | None, columns: str | None,
        filter_text: str | None, limit: int | None, as_json: bool) -> None:
    """Print the rows of the table at PATH (the latest snapshot, merged), or those of an older
    snapshot, a tag or a point in time. Give at most one of --snapshot, --tag and --timestamp-ms.

    \b
    Examples:
      tidelake cat wh/db.db/orders --columns id,qty --filter "qty >= 50 and region = 'eu'"
      tidelake cat wh/db.db/orders --tag nightly --limit 10 --json
    """
    _one_version(snapshot=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    filters = parse_filter(filter_text) if filter_text is not None else None
    t = _open(path)
    batch_size = max(1, min(limit, 8192)) if limit is not None else None
    reader = t.to_reader(columns=_columns(columns), filter=filters, snapshot_id=snapshot_id, tag=tag,
                         timestamp_ms=timestamp_ms, batch_size=batch_size)
    _print_rows(reader, limit=limit, as_json=as_json)


@main.command(short_help="Print a system table (files, snapshots, manifests, ...).")
@_PATH
@click.argument("name", type=click.Choice(SYSTEM_TABLES), metavar="NAME")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", help="Print at most N rows.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of objects, one per row.")
@_guarded
def system(path: str, name: str, limit: int | None, as_json: bool) -> None:
    """Print Paimon system table NAME (`table$NAME`) of the table at PATH. NAME is one of
    snapshots, schemas, options, files, manifests, partitions, buckets, tags, consumers,
    branches, audit_log, ro, binlog, aggregation_fields, statistics, table_indexes."""
    tbl = _open(path).system(name)
    if limit is not None:
        tbl = tbl.slice(0, limit)
    rows = tbl.to_pylist()
    if as_json:
        _emit_json([{k: _json_value(v) for k, v in r.items()} for r in rows])
        return
    _print_table([[_cell(r[c]) for c in tbl.column_names] for r in rows], tbl.column_names)
    click.echo(f"({_count(len(rows), 'row')})")


TAIL_MODES = ("latest", "latest-full", "compacted-full", "from-snapshot", "from-snapshot-full", "from-timestamp")
"""The streaming ``scan.mode`` values ``tail --scan-mode`` takes (see :mod:`tidelake.startup`)."""


@main.command(short_help="Print the changes of new snapshots as they arrive.")
@_PATH
@click.option("--scan-mode", type=click.Choice(TAIL_MODES), metavar="MODE",
              help="Where to start, as Paimon's scan.mode: latest, latest-full, compacted-full (the full "
                   "state of the latest compaction, then the changes after it), from-snapshot, "
                   "from-snapshot-full (with --from-snapshot), from-timestamp (with --from-timestamp). "
                   "The *-full modes print a snapshot's full state first.")
@click.option("--from-snapshot", type=click.IntRange(min=1), metavar="N",
              help="Start with the changes of snapshot N (default: the earliest retained snapshot "
                   "with --no-follow; only new snapshots with --follow); with --scan-mode "
                   "from-snapshot-full, with the full state of snapshot N.")
@click.option("--from-timestamp", metavar="TIME",
              help="With --scan-mode from-timestamp: start with the first snapshot committed at or after "
                   "TIME (epoch milliseconds, or an ISO-8601 date-time in local time).")
@click.option("--follow/--no-follow", default=True, show_default=True,
              help="Keep polling for new snapshots (Ctrl-C stops), or print what exists and exit.")
@click.option("--interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True, metavar="SECONDS",
              help="Seconds between polls of the latest snapshot in --follow mode.")
@click.option("--max-batches", type=click.IntRange(min=1), metavar="N",
              help="Exit after printing the changes of N snapshots (snapshots without changes, "
                   "e.g. COMPACT, do not count; a full state counts as one).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON Lines: one object per change with _snapshot_id and _row_kind.")
@_guarded
def tail(path: str, scan_mode: str | None, from_snapshot: int | None, from_timestamp: str | None, follow: bool,
         interval: float, max_batches: int | None, as_json: bool) -> None:
    """Print the changes each snapshot of the table at PATH committed, snapshot by snapshot,
    with their _row_kind (+I insert, -U/+U update before/after, -D delete). Tables with a
    changelog producer show their changelog; others the rows APPEND commits wrote."""
    t = _open(path)
    latest = t.latest_snapshot()
    latest_id = latest.id if latest is not None else 0
    start = None
    if from_timestamp is not None and scan_mode is None:
        scan_mode = "from-timestamp"
    if scan_mode is not None:
        options = {"scan.mode": scan_mode}
        if from_snapshot is not None:
            options["scan.snapshot-id"] = str(from_snapshot)
        if from_timestamp is not None:
            options["scan.timestamp-millis" if from_timestamp.isdigit() else "scan.timestamp"] = from_timestamp
        start = startup.scan_mode(options, t.options)
        next_id = None
    elif from_snapshot is not None:
        next_id = from_snapshot
    elif follow:
        next_id = latest_id + 1
    else:
        snaps = t.snapshots()
        next_id = snaps[0].id if snaps else 1
    printed = 0
    try:
        while True:
            if next_id is None and start is not None:  # a --scan-mode start not resolved yet
                begin = start.stream_start(t)
                if begin is not None:
                    next_id = begin.snapshot + 1
                    if begin.full:
                        _print_changes(t, begin.snapshot, _full_state(t, begin.snapshot), as_json, full=True)
                        printed += 1
            while next_id is not None and next_id <= latest_id:
                if max_batches is not None and printed >= max_batches:
                    return
                changes = t.changes(next_id - 1, next_id)
                if changes.num_rows:
                    _print_changes(t, next_id, changes, as_json)
                    printed += 1
                next_id += 1
            if not follow or (max_batches is not None and printed >= max_batches):
                return
            time.sleep(interval)
            latest = t.latest_snapshot()
            latest_id = latest.id if latest is not None else 0
    except KeyboardInterrupt:
        sys.exit(0)


def _full_state(t: Table, snapshot_id: int) -> Any:
    """The rows of snapshot ``snapshot_id`` as changes: each an insert."""
    import pyarrow as pa

    rows = t.to_arrow(snapshot_id=snapshot_id)
    return rows.add_column(0, "_row_kind", pa.array(["+I"] * rows.num_rows, pa.string()))


def _print_changes(t: Table, snapshot_id: int, changes: Any, as_json: bool, *, full: bool = False) -> None:
    rows = changes.to_pylist()
    if as_json:
        for row in rows:
            click.echo(json.dumps({"_snapshot_id": snapshot_id, **{k: _json_value(v) for k, v in row.items()}},
                                  ensure_ascii=False))
        return
    snap = t.snapshot(snapshot_id)
    what = "rows of its full state" if full else "changes"
    click.echo(f"-- snapshot {snapshot_id} ({snap.commit_kind}, {_fmt_time(snap.time_millis)}): "
               f"{len(rows)} {what}")
    _print_table([[_cell(r[c]) for c in changes.column_names] for r in rows], changes.column_names)

