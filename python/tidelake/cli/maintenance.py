"""Commands that rewrite or remove data: compact, expire-snapshots, expire-changelogs, remove-orphans,
expire-partitions, drop-partition, compact-manifest, purge-files."""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import sys
from typing import Any

import click

from .. import exceptions as exc
from ..maintenance import typed_partitions
from ..table import Table
from ._app import _JSON, _PATH, _emit_json, _fail, _guarded, _open, main
from ._format import _count, _fmt_duration, _human_bytes, _json_value, _ms, _print_table, _progress, _rel, _summary
from ._params import _DURATION, _PARTITION, _PARTITION_OPT_HELP, _interactive, _now_ms, _spec_text


@main.command("expire-snapshots", short_help="Expire old snapshots and the files only they use.")
@_PATH
@click.option("--retain-min", type=click.IntRange(min=1), metavar="N",
              help="Keep at least N snapshots (default: snapshot.num-retained.min, 10).")
@click.option("--retain-max", type=click.IntRange(min=1), metavar="N",
              help="Keep at most N snapshots, however recent (default: snapshot.num-retained.max).")
@click.option("--older-than", type=_DURATION, metavar="DURATION",
              help="Expire only snapshots older than DURATION, e.g. 1h, 7d (default: "
                   "snapshot.time-retained, 1h).")
@click.option("--max-deletes", type=click.IntRange(min=0), metavar="N",
              help="Expire at most N snapshots in this run (default: snapshot.expire.limit, 50).")
@click.option("--dry-run", is_flag=True, help="Only say what would be expired and deleted; change nothing.")
@_JSON
@_guarded
def expire_snapshots(path: str, retain_min: int | None, retain_max: int | None,
                     older_than: _dt.timedelta | None, max_deletes: int | None, dry_run: bool,
                     as_json: bool) -> None:
    """Expire old snapshots of the table at PATH and delete the data, changelog and manifest
    files only they referenced. Snapshots a tag or a consumer needs stay readable. --dry-run
    counts the snapshots and files that would go."""
    t = _open(path)
    cutoff = None if older_than is None else _now_ms() - _ms(older_than)
    if dry_run:
        plan = t.expire_snapshots(retain_min, retain_max, cutoff, max_deletes, dry_run=True)
        if as_json:
            _emit_json({"dry_run": True, **plan})
        elif not plan.get("snapshots"):
            click.echo(f"nothing to expire (earliest snapshot {plan.get('earliest_snapshot')}) (dry run)")
        else:
            click.echo(f"would expire {_count(plan['snapshots'], 'snapshot')}, earliest would be "
                       f"{plan['earliest_snapshot']}; would delete {_summary(plan)} (dry run)")
        return
    options = t.effective_options
    limit = max_deletes if max_deletes is not None else options["snapshot.expire.limit"]
    keep = retain_min if retain_min is not None else options["snapshot.num-retained.min"]
    expected = max(0, min(limit, len(t.snapshots()) - keep))
    chunk = max(1, math.ceil(expected / 20))
    total: dict[str, Any] = {}
    left = limit
    with _progress(expected, "expiring snapshots", show=not as_json) as bar:
        while True:
            n = min(chunk, left)
            r = t.expire_snapshots(retain_min, retain_max, cutoff, n)
            for k, v in r.items():
                total[k] = v if k == "earliest_snapshot" else total.get(k, 0) + (v or 0)
            bar.update(r.get("snapshots", 0))
            left -= r.get("snapshots", 0)
            if left <= 0 or r.get("snapshots", 0) < n:
                break
    if as_json:
        _emit_json(total)
        return
    if not total.get("snapshots"):
        click.echo(f"nothing to expire (earliest snapshot {total.get('earliest_snapshot')})")
        return
    click.echo(f"expired {_count(total['snapshots'], 'snapshot')}, earliest is now {total.get('earliest_snapshot')}; "
               f"deleted {_summary(total)}")


@main.command("expire-changelogs", short_help="Expire long-lived changelogs and the files only they use.")
@_PATH
@click.option("--retain-min", type=click.IntRange(min=1), metavar="N",
              help="Keep at least N, counted from the latest snapshot (default 1).")
@click.option("--retain-max", type=click.IntRange(min=1), metavar="N",
              help="Keep at most N, counted from the latest snapshot (default: no limit).")
@click.option("--older-than", type=_DURATION, metavar="DURATION",
              help="Expire only changelogs older than DURATION, e.g. 1h, 7d (default: no time cutoff).")
@click.option("--max-deletes", type=click.IntRange(min=0), metavar="N",
              help="Expire at most N changelogs in this run (default: no limit).")
@_JSON
@_guarded
def expire_changelogs(path: str, retain_min: int | None, retain_max: int | None,
                      older_than: _dt.timedelta | None, max_deletes: int | None, as_json: bool) -> None:
    """Expire the long-lived changelogs (changelog/changelog-N, kept by snapshot expiry when the
    changelog outlives the snapshots) of the table at PATH, with the changelog and data files only
    they referenced (Paimon's expire_changelogs procedure). The latest one always stays."""
    t = _open(path)
    cutoff = None if older_than is None else _now_ms() - _ms(older_than)
    r = t.expire_changelogs(retain_min=retain_min, retain_max=retain_max, older_than_ms=cutoff,
                            max_deletes=max_deletes)
    if as_json:
        _emit_json(r)
    elif not r.get("changelogs"):
        click.echo("nothing to expire")
    else:
        click.echo(f"expired {_count(r['changelogs'], 'changelog')}; deleted {_summary(r)}")


@main.command("remove-orphans", short_help="Delete files no snapshot or tag references.")
@_PATH
@click.option("--older-than", type=_DURATION, default="1d", show_default=True, metavar="DURATION",
              help="Only files last modified more than DURATION ago (files of running writers are "
                   "younger), e.g. 1h, 2d.")
@click.option("--dry-run", is_flag=True, help="Only list the orphan files; delete nothing.")
@_JSON
@_guarded
def remove_orphans(path: str, older_than: _dt.timedelta, dry_run: bool, as_json: bool) -> None:
    """Delete the files under the table at PATH that no snapshot, tag or branch references (left
    by failed or killed writers) and that are older than --older-than. Lists each orphan with
    its size; --dry-run lists without deleting."""
    t = _open(path)
    found = t.remove_orphan_files(_now_ms() - _ms(older_than), dry_run)
    total = sum(size for _, size in found)
    if as_json:
        _emit_json({"dry_run": dry_run, "older_than": _fmt_duration(older_than), "count": len(found),
                    "bytes": total, "files": [{"path": p, "size": size} for p, size in found]})
        return
    _print_table([[_rel(t, p), _human_bytes(size)] for p, size in sorted(found)], ["orphan file", "size"])
    verb = "would be deleted (dry run)" if dry_run else "deleted"
    click.echo(f"({_count(len(found), 'orphan file')}, {_human_bytes(total)} {verb})")


@main.command("expire-partitions", short_help="Drop partitions older than a duration.")
@_PATH
@click.option("--older-than", type=_DURATION, metavar="DURATION",
              help="Drop partitions older than DURATION, e.g. 30d (default: the table's "
                   "partition.expiration-time). Age follows partition.expiration-strategy: the "
                   "partition values (values-time) or the last write (update-time).")
@_JSON
@_guarded
def expire_partitions(path: str, older_than: _dt.timedelta | None, as_json: bool) -> None:
    """Drop the partitions of the table at PATH older than --older-than in one OVERWRITE
    snapshot, and list them."""
    dropped = _open(path).expire_partitions(older_than)
    if as_json:
        _emit_json(dropped)
        return
    for spec in dropped:
        click.echo(_spec_text(spec))
    click.echo(f"({_count(len(dropped), 'partition')} expired)")


@main.command("drop-partition", short_help="Drop one or more partitions.")
@_PATH
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, required=True, metavar="k=v[,k=v]",
              help=_PARTITION_OPT_HELP + " A partial spec (dt=2024-05-14 of dt,hour) drops every match.")
@_JSON
@_guarded
def drop_partition(path: str, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Drop the partitions of the table at PATH given with --partition in one OVERWRITE snapshot.
    Older snapshots still read them until they expire.

    \b
    Example: tidelake drop-partition wh/db.db/orders --partition dt=2024-05-14,hour=3
    """
    t = _open(path)
    specs = typed_partitions(t, partitions)
    before = t.latest_snapshot()
    sid = t.drop_partitions(specs)
    after = t.snapshot(sid) if sid is not None else None
    result = {"snapshot_id": sid, "partitions": [{k: _json_value(v) for k, v in s.items()} for s in specs],
              "records_before": before.total_record_count if before else 0,
              "records_after": after.total_record_count if after else None}
    if as_json:
        _emit_json(result)
        return
    click.echo(f"dropped {'; '.join(_spec_text(s) for s in specs)} in snapshot {sid}: "
               f"{result['records_before']} -> {result['records_after']} rows")


@main.command("mark-partition-done", short_help="Mark partitions done (partition.mark-done-action).")
@_PATH
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, required=True, metavar="k=v[,k=v]",
              help=_PARTITION_OPT_HELP + " Every partition column must be given.")
@_JSON
@_guarded
def mark_partition_done(path: str, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Mark the partitions of the table at PATH given with --partition done, by the table's
    partition.mark-done-action (success-file: a _SUCCESS file in each partition directory;
    done-partition, mark-event: through the catalog given with -c, its metastore's marks).

    \b
    Example: tidelake mark-partition-done wh/db.db/orders --partition dt=2024-05-14
    """
    t = _open(path)
    specs = typed_partitions(t, partitions)
    t.mark_partition_done(specs)
    if as_json:
        _emit_json({"partitions": [{k: _json_value(v) for k, v in s.items()} for s in specs]})
        return
    click.echo(f"marked {'; '.join(_spec_text(s) for s in specs)} done")


@main.command("compact-manifest", short_help="Merge the manifests of the latest snapshot.")
@_PATH
@_JSON
@_guarded
def compact_manifest(path: str, as_json: bool) -> None:
    """Rewrite the manifests of the table at PATH as Paimon's compact_manifest procedure does:
    deleted-file entries applied, small manifests merged, in a COMPACT snapshot that changes no
    rows. Nothing is committed when they are already compact.

    \b
    Example: tidelake compact-manifest wh/db.db/orders
    """
    t = _open(path)
    before = len(t.system("manifests"))
    sid = t.compact_manifests()
    after = len(t.system("manifests")) if sid is not None else before
    if as_json:
        _emit_json({"snapshot_id": sid, "manifests_before": before, "manifests_after": after})
        return
    click.echo(f"snapshot {sid}: {before} -> {after} manifests" if sid is not None
               else f"manifests already compact ({before})")


@main.command("purge-files", short_help="Empty a table and delete its history, branches and tags.")
@_PATH
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed when stdin is not a terminal).")
@_JSON
@_guarded
def purge_files(path: str, yes: bool, as_json: bool) -> None:
    """Purge the table at PATH as Paimon's purge_files procedure does: every branch, tag and
    consumer is deleted, every row removed, and every older snapshot, changelog and orphan file
    deleted. The schema and options stay. Asks for confirmation unless --yes; without --yes and
    without a terminal on stdin it fails with exit 2.

    \b
    Example: tidelake purge-files wh/db.db/orders --yes
    """
    t = _open(path)
    if not yes:
        if not _interactive():
            raise exc.InvalidArgumentError("purge-files needs confirmation: pass --yes (stdin is not a terminal)")
        if not click.confirm(f"Purge {t.path}? Every row, snapshot, tag and branch is deleted.", default=False,
                             err=True):
            _fail(RuntimeError("not confirmed; nothing was purged"), 1)
    result = t.purge_files()
    if as_json:
        _emit_json(result)
        return
    click.echo(f"purged: snapshot {result['snapshot_id']}, {result['snapshots_expired']} snapshots expired, "
               f"{len(result['branches'])} branches, {len(result['tags'])} tags, "
               f"{len(result['consumers'])} consumers, {len(result['orphan_files'])} orphan files; "
               f"{_summary(result['deleted'])} removed")


def _level_counts(t: Table) -> tuple[int, int]:
    """(data files, level-0 data files) of the latest snapshot."""
    levels = t.system("files").column("level").to_pylist()
    return len(levels), sum(1 for lv in levels if lv == 0)


@main.command(short_help="Compact a table (LSM trees of primary keys, small append files).")
@_PATH
@click.option("--full", is_flag=True, help="Rewrite every bucket into one sorted run at the top level.")
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, metavar="k=v[,k=v]",
              help="Compact only this partition (default: all). " + _PARTITION_OPT_HELP)
@click.option("--order-by", metavar="COL[,COL]",
              help="Sort compaction of a bucket-unaware append table: rewrite each partition sorted by these "
                   "columns (one OVERWRITE snapshot), so that filters on them skip files.")
@click.option("--strategy", type=click.Choice(["order", "zorder", "hilbert"], case_sensitive=False),
              help="How --order-by sorts: order (column by column), zorder or hilbert (space-filling curves; "
                   "every column prunes). Default: order for one column, zorder up to four, hilbert beyond.")
@_JSON
@_guarded
def compact(path: str, full: bool, partitions: tuple[dict[str, str], ...], order_by: str | None,
            strategy: str | None, as_json: bool) -> None:
    """Compact the table at PATH into one COMPACT snapshot. Primary-key tables: without --full a
    bucket is compacted only when its sorted runs call for it (num-sorted-run.compaction-trigger,
    size amplification, size ratio); --full rewrites every bucket. Append tables: small files are
    merged as Paimon's append compaction picks them (compaction.min.file-num, target-file-size),
    deleted rows dropped. With --order-by, sort compaction instead (Paimon's order_strategy /
    order_by). Reads return the same rows.
    A progress bar of the buckets rewritten goes to stderr."""
    t = _open(path)
    if not hasattr(t, "compact"):
        raise exc.UnsupportedError("compact is not available in this tidelake build")
    specs = typed_partitions(t, partitions) if partitions else None
    if order_by is None and strategy is not None:
        raise exc.InvalidArgumentError("--strategy orders the rows of --order-by: give --order-by too")
    if order_by is not None:
        _sort_compact(t, [c for c in order_by.split(",") if c], strategy, specs, as_json)
        return
    files_before, l0_before = _level_counts(t)
    with contextlib.ExitStack() as stack:
        bars: list = []

        def progress(done: int, total: int) -> None:
            if not bars and total:  # the first call knows how many buckets there are
                bars.append(stack.enter_context(click.progressbar(
                    length=total, label="compacting buckets", file=sys.stderr, show_pos=True)))
            if bars:
                bars[0].update(done - bars[0].pos)

        sid = t.compact(full=full, partitions=specs, progress=progress)
    files_after, l0_after = _level_counts(t) if sid is not None else (files_before, l0_before)
    if as_json:
        _emit_json({"snapshot_id": sid, "files_before": files_before, "files_after": files_after,
                    "level0_files_before": l0_before, "level0_files_after": l0_after})
        return
    if sid is None:
        click.echo("nothing to compact (no bucket needed it; --full rewrites every bucket)")
        return
    click.echo(f"compacted into snapshot {sid}: data files {files_before} -> {files_after}, "
               f"level-0 files {l0_before} -> {l0_after}")


@main.command(short_help="Rewrite a table's rows into another number of buckets.")
@_PATH
@click.option("--bucket-num", type=click.IntRange(min=1),
              help="The new number of buckets (default: the table's 'bucket' option; required for postpone-bucket "
                   "tables).")
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, metavar="k=v[,k=v]",
              help="Rescale only this partition (default: all). " + _PARTITION_OPT_HELP)
@_JSON
@_guarded
def rescale(path: str, bucket_num: int | None, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Rewrite the rows of the table at PATH (or of --partition) into --bucket-num buckets in one
    OVERWRITE snapshot (Paimon's rescale procedure). Each partition keeps its own bucket count:
    after changing the table's 'bucket' option, this moves the partitions written before to it.
    Refused, with nothing committed, when another commit changes those partitions meanwhile."""
    t = _open(path)
    specs = typed_partitions(t, partitions) if partitions else None
    sid = t.rescale(bucket_num=bucket_num, partitions=specs)
    buckets = sorted(set(t.system("partitions").column("total_buckets").to_pylist()))
    if as_json:
        _emit_json({"snapshot_id": sid, "bucket_counts": buckets})
        return
    click.echo(f"rescaled into snapshot {sid}; bucket counts of the table's partitions: {buckets}")


@main.command("rewrite-file-index", short_help="Build the file indexes the table's options ask for.")
@_PATH
@click.option("--partition", "partitions", type=_PARTITION, multiple=True, metavar="k=v[,k=v]",
              help="Rewrite only this partition's indexes (default: all). " + _PARTITION_OPT_HELP)
@_JSON
@_guarded
def rewrite_file_index(path: str, partitions: tuple[dict[str, str], ...], as_json: bool) -> None:
    """Give the data files of the table at PATH (or of --partition) the file indexes its
    'file-index.*' options now ask for, in one COMPACT snapshot, without rewriting rows
    (Paimon's rewrite_file_index procedure). Refused, with nothing committed, when another
    commit removes those files meanwhile."""
    t = _open(path)
    specs = typed_partitions(t, partitions) if partitions else None
    sid = t.rewrite_file_index(partitions=specs)
    if as_json:
        _emit_json({"snapshot_id": sid})
        return
    if sid is None:
        click.echo("nothing to rewrite: every data file already has the indexes the options ask for")
        return
    click.echo(f"rewrote the file indexes into snapshot {sid}")


def _sort_compact(t: Table, order_by: list[str], strategy: str | None, specs: list[dict[str, Any]] | None,
                  as_json: bool) -> None:
    """``compact --order-by``: :meth:`Table.compact` with ``order_by``."""
    files_before = len(t.system("files"))
    sid = t.compact(partitions=specs, order_by=order_by, strategy=strategy and strategy.lower())
    files_after = len(t.system("files")) if sid is not None else files_before
    if as_json:
        _emit_json({"snapshot_id": sid, "files_before": files_before, "files_after": files_after})
        return
    if sid is None:
        click.echo("nothing to sort (no rows in the partitions selected)")
        return
    click.echo(f"sorted by {','.join(order_by)} into snapshot {sid}: data files {files_before} -> {files_after}")

