"""``tidelake maintain``: the maintenance autopilot (:mod:`tidelake.maintain`) on a table or a
warehouse: the plan, a progress bar, a summary of each job and exit codes for cron."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import sys
from typing import Any

import click

from .. import exceptions as exc
from .. import maintain as autopilot
from ..maintenance import duration_text
from ._app import _JSON, _PATH, _emit_json, _guarded, _open, main
from ._format import _human_bytes, _print_table, _progress
from ._params import _DURATION

JOBS_FAILED_EXIT = 6
"""Exit code of ``tidelake maintain`` when a job failed."""
BUDGET_EXHAUSTED_EXIT = 7
"""Exit code of ``tidelake maintain`` when the time budget left jobs unrun (and none failed)."""


def _where(job: autopilot.Job, target: str, tables: list[str]) -> str:
    """A job's table as the user names it: ``db.name`` in a warehouse, else as typed."""
    return job.name or (target if tables == [job.table] else job.table)


def _change(before: dict[str, Any] | None, after: dict[str, Any] | None, key: str, fmt: Any = str) -> str:
    if before is None or after is None:
        return "-"
    return f"{fmt(before[key])} -> {fmt(after[key])}"


def _print_plan(plan: autopilot.MaintenancePlan, target: str) -> None:
    if plan.jobs:
        _print_table([[_where(j, target, plan.tables), j.kind, j.reason] for j in plan.jobs],
                     ["table", "job", "reason"])
    click.echo(f"({len(plan.jobs)} job{'' if len(plan.jobs) == 1 else 's'} planned on "
               f"{len(plan.tables)} table{'' if len(plan.tables) == 1 else 's'})")
    for note in plan.notes:
        click.echo(f"note: {note}")


def _spark_compactor(master: str) -> autopilot.Compactor:
    """Compaction through ``tidelake.spark.compact`` on a Spark session at ``master``."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise exc.UnsupportedError("--spark needs pyspark (pip install 'tidelake[spark]')") from None

    from .. import spark as tidelake_spark

    session = SparkSession.builder.master(master).appName("tidelake maintain").getOrCreate()
    return functools.partial(tidelake_spark.compact, session)


@main.command(short_help="Plan and run the maintenance of a table or a warehouse.")
@_PATH
@click.option("--policy", "policy_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False),
              help="A policy file (.toml or .json; see docs/maintain.md). Default: every job, retention "
                   "from each table's own options, orphans older than 1d.")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Maintain N tables at once (a table's jobs run one after the other).")
@click.option("--time-budget", type=_DURATION, metavar="DURATION",
              help="Start no job after DURATION, e.g. 10m; the jobs left are skipped (exit 7).")
@click.option("--log", "log_file", metavar="FILE",
              help="Append each job run to this JSON-lines file (default: .tidelake/maintain.jsonl in the "
                   "table or warehouse directory; needed for object-store targets).")
@click.option("--spark", "spark_master", metavar="MASTER",
              help="Run compaction jobs on Spark at MASTER (e.g. local[4], spark://host:7077) with "
                   "tidelake.spark.compact (needs pyspark).")
@_JSON
@click.pass_context
@_guarded
def maintain(ctx: click.Context, path: str, policy_file: str | None, dry_run: bool, concurrency: int,
             time_budget: _dt.timedelta | None, log_file: str | None, spark_master: str | None,
             as_json: bool) -> None:
    """Plan and run the maintenance of the table at PATH, or of every table of the warehouse at
    PATH: compaction of the buckets the engine's compaction triggers pick, expiry of tags
    past their retention, of partitions (partition.expiration-time), of snapshots (the table's
    snapshot.num-retained.* / snapshot.time-retained) with their changelog files, and removal of
    orphan files older than a safe age (1d by default, never under 1h). Every job uses the
    table's latest state when it starts, so running it again, from cron, next to live writers,
    is safe. Each job run is appended to a JSON-lines log with the table's rows, files and
    bytes before and after. A progress bar goes to stderr on a terminal.

    \b
    Exit codes: 0 every planned job ran (or --dry-run); 6 a job failed (the
    others still ran; see the log); 7 the time budget left jobs unrun; 1-4 as for
    every command (see `tidelake --help`).
    """
    storage_options, branch, catalog = ctx.obj or (None, None, None)
    policy = autopilot.Policy.from_file(policy_file) if policy_file else None
    where: Any = _open(path) if (branch or catalog) else path
    if dry_run:
        plan = autopilot.plan(where, policy=policy, storage_options=storage_options)
        if as_json:
            _emit_json({"dry_run": True, **plan.to_dict()})
        else:
            _print_plan(plan, path)
        return
    compactor = _spark_compactor(spark_master) if spark_master else None
    with contextlib.ExitStack() as stack:
        bars: list[Any] = []

        def progress(done: int, total: int, _result: autopilot.JobResult | None) -> None:
            if not bars:  # the first call knows how many jobs there are
                bars.append(stack.enter_context(_progress(total, "maintaining", show=not as_json)))
            bars[0].update(1 if done else 0)

        report = autopilot.run(where, policy=policy, concurrency=concurrency, time_budget=time_budget,
                               log_path=log_file, spark=compactor, progress=progress,
                               storage_options=storage_options)
    if as_json:
        _emit_json(report.to_dict())
    else:
        if report.results:
            _print_table([[_where(r.job, path, report.plan.tables), r.job.kind, r.status,
                           _change(r.before, r.after, "snapshots"), _change(r.before, r.after, "rows"),
                           _change(r.before, r.after, "files"), _change(r.before, r.after, "bytes", _human_bytes),
                           f"{r.seconds:.1f}s", r.error or ""] for r in report.results],
                         ["table", "job", "status", "snapshots", "rows", "files", "bytes", "time", "error"])
        counts = report.to_dict()["counts"]
        budget = f" (time budget {duration_text(time_budget)})" if time_budget is not None else ""
        click.echo(f"({counts['done']} done, {counts['skipped']} skipped{budget if counts['skipped'] else ''}, "
                   f"{counts['failed']} failed; log: {report.log_path or 'none (give --log)'})")
    if report.failed:
        sys.exit(JOBS_FAILED_EXIT)
    if report.skipped:
        sys.exit(BUDGET_EXHAUSTED_EXIT)
