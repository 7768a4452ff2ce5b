"""``tidelake doctor``: a table's health and the maintenance commands it calls for."""

from __future__ import annotations

import shlex
import sys
import time
from collections import Counter
from typing import Any

import click

from ..table import Table
from ._app import _JSON, _PATH, _emit_json, _guarded, _open, main
from ._format import _human_bytes, _print_table
from ._params import _now_ms

_MAX_SNAPSHOTS = 1000
_MAX_MANIFESTS = 500
_MAX_SMALL_SHARE = 0.5
_MAX_PLANNING_SECONDS = 5.0


def _n(count: int, noun: str) -> str:
    return f"{count} {noun} has" if count == 1 else f"{count} {noun}s have"


def _partition_text(t: Table, raw: str) -> str:
    """``{2024-01-01, 1}`` (the files system table) as ``dt=2024-01-01/p=1``."""
    keys = t.partition_keys
    if not keys:
        return "-"
    values = raw.strip("{}").split(", ")
    if len(values) != len(keys):
        return raw
    return "/".join(f"{k}={v}" for k, v in zip(keys, values))


def _buckets_per_partition(rows: list[dict[str, Any]]) -> str:
    """``4``, or ``1-4`` when partitions have different bucket counts (dynamic buckets)."""
    per = Counter(b["partition"] for b in rows)
    low, high = min(per.values(), default=0), max(per.values(), default=0)
    return str(low) if low == high else f"{low}-{high}"


def _diagnose(t: Table, shown_path: str, check_orphans: bool, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The health of ``t`` from its data files (the ``files`` system table's rows, each given a
    ``partition_text``)."""
    pk = bool(t.primary_keys)
    options = t.effective_options
    trigger = options["num-sorted-run.compaction-trigger"]
    stop = options["num-sorted-run.stop-trigger"]
    target = options["target-file-size"]
    small_limit = target // 4

    started = time.perf_counter()
    t.scan()
    planning = time.perf_counter() - started

    buckets: dict[tuple[str, int], dict[str, Any]] = {}
    for f in files:
        f["partition_text"] = _partition_text(t, f["partition"])
        b = buckets.setdefault((f["partition"], f["bucket"]), {
            "partition": f["partition_text"], "bucket": f["bucket"], "files": 0,
            "level0_files": 0, "levels": set(), "small_files": 0, "rows": 0, "bytes": 0})
        b["files"] += 1
        b["rows"] += f["record_count"]
        b["bytes"] += f["file_size_in_bytes"]
        b["small_files"] += f["file_size_in_bytes"] < small_limit
        if f["level"] == 0:
            b["level0_files"] += 1
        else:
            b["levels"].add(f["level"])
    rows = []
    for b in sorted(buckets.values(), key=lambda b: (b["partition"], b["bucket"])):
        levels = b.pop("levels")
        b["sorted_runs"] = b["level0_files"] + len(levels)
        rows.append(b)

    n_snapshots = len(t.snapshots())
    n_manifests = t.system("manifests").num_rows
    small = sum(b["small_files"] for b in rows)
    share = small / len(files) if files else 0.0
    orphans = t.remove_orphan_files(_now_ms() - 86_400_000, dry_run=True) if check_orphans else None

    reasons: list[tuple[str, str]] = []
    suggest: list[str] = []
    quoted = shlex.quote(shown_path)
    if pk:
        stalled = [b for b in rows if b["sorted_runs"] > stop]
        busy = [b for b in rows if b["sorted_runs"] > trigger]
        worst = max(rows, key=lambda b: b["sorted_runs"], default=None)
        where = f"; most: {worst['sorted_runs']} in {worst['partition']} bucket {worst['bucket']}" if worst else ""
        if stalled:
            reasons.append(("BAD", f"{_n(len(stalled), 'bucket')} more than {stop} sorted runs "
                                   f"(num-sorted-run.stop-trigger: writers stall){where}"))
        elif busy:
            reasons.append(("WARN", f"{_n(len(busy), 'bucket')} more than {trigger} sorted runs "
                                    f"(num-sorted-run.compaction-trigger){where}"))
        if stalled or busy:
            suggest.append(f"tidelake compact {quoted}")
    if share > _MAX_SMALL_SHARE and small > len(rows):
        reasons.append(("WARN", f"{share:.0%} of data files are small (< {_human_bytes(small_limit)}, a quarter "
                                f"of target-file-size {_human_bytes(target)})"))
        if pk:
            suggest.append(f"tidelake compact {quoted} --full")
    if n_snapshots > _MAX_SNAPSHOTS:
        reasons.append(("WARN", f"{n_snapshots} snapshots (more than {_MAX_SNAPSHOTS})"))
        suggest.append(f"tidelake expire-snapshots {quoted}")
    if n_manifests > _MAX_MANIFESTS:
        reasons.append(("WARN", f"{n_manifests} manifest files (more than {_MAX_MANIFESTS}) slow down planning"))
    if planning > _MAX_PLANNING_SECONDS:
        reasons.append(("WARN", f"planning a read took {planning:.1f} s (more than {_MAX_PLANNING_SECONDS:.0f} s)"))
    if orphans:
        reasons.append(("WARN", f"{len(orphans)} orphan files ({_human_bytes(sum(s for _, s in orphans))}) "
                                f"older than 1 day"))
        suggest.append(f"tidelake remove-orphans {quoted}")
    verdict = "BAD" if any(level == "BAD" for level, _ in reasons) else "WARN" if reasons else "OK"
    if f"tidelake compact {quoted} --full" in suggest:  # it covers the plain compaction
        suggest = [s for s in suggest if s != f"tidelake compact {quoted}"]
    return {
        "path": t.path,
        "kind": "primary-key" if pk else "append",
        "snapshots": n_snapshots,
        "manifests": n_manifests,
        "planning_seconds": round(planning, 4),
        "files": len(files),
        "partitions": len({b["partition"] for b in rows}),
        "buckets_per_partition": _buckets_per_partition(rows),
        "small_files": small,
        "small_file_share": round(share, 4),
        "target_file_size": target,
        "orphan_files": None if orphans is None else len(orphans),
        "orphan_bytes": None if orphans is None else sum(s for _, s in orphans),
        "thresholds": {"compaction_trigger": trigger, "stop_trigger": stop, "small_file_bytes": small_limit,
                       "small_file_share": _MAX_SMALL_SHARE, "snapshots": _MAX_SNAPSHOTS,
                       "manifests": _MAX_MANIFESTS, "planning_seconds": _MAX_PLANNING_SECONDS},
        "buckets": rows,
        "verdict": verdict,
        "reasons": [f"{level}: {text}" for level, text in reasons],
        "suggestions": list(dict.fromkeys(suggest)),
    }


_MAX_PROBLEMS_SHOWN = 10
VERIFY_VIOLATIONS_EXIT = 5
"""Exit code of ``tidelake doctor --verify`` when it finds violations."""


def _verify(shown_path: str, t: Table, as_json: bool) -> None:
    """``doctor --verify``: the consistency check; exits with :data:`VERIFY_VIOLATIONS_EXIT` on
    violations."""
    report = t.verify()
    if as_json:
        _emit_json({"path": shown_path, **report.to_dict()})
    else:
        click.echo(f"table:        {shown_path}")
        latest = "-" if report.latest is None else report.latest
        click.echo(f"snapshots:    {report.snapshots_checked} replayed, latest {latest}")
        click.echo("")
        if report.ok:
            click.echo("verify: OK (no violations)")
        else:
            count = len(report.violations)
            click.echo(f"verify: {count} violation{'' if count == 1 else 's'}")
            _print_table([[v.cls, v.kind, "-" if v.snapshot is None else v.snapshot, v.path, v.detail]
                          for v in report.violations], ["class", "kind", "snapshot", "path", "detail"])
    if not report.ok:
        sys.exit(VERIFY_VIOLATIONS_EXIT)


def _report_damage(shown_path: str, damage: dict[str, Any], as_json: bool) -> None:
    """Report a table whose newest snapshot cannot be read or lacks files (verdict BAD) and the
    way back: a rollback to the last good snapshot, or restoring the files."""
    problems = damage["problems"]
    reasons = [f"BAD: damaged: {p}: {why}" if p else f"BAD: damaged: {why}" for p, why in problems]
    if len(reasons) > _MAX_PROBLEMS_SHOWN:
        reasons = [*reasons[:_MAX_PROBLEMS_SHOWN], f"BAD: ... and {len(reasons) - _MAX_PROBLEMS_SHOWN} more"]
    good = damage["last_good"]
    if good is not None:
        suggestions = [f"tidelake rollback {shlex.quote(shown_path)} --snapshot {good}"]
    else:
        suggestions = ["restore the missing files from a backup: no recent snapshot has all its files"]
    d = {"path": shown_path, "verdict": "BAD", "latest_snapshot": damage["latest"], "last_good_snapshot": good,
         "damaged_files": [{"path": p, "reason": why} for p, why in problems],
         "reasons": reasons, "suggestions": suggestions}
    if as_json:
        _emit_json(d)
        return
    click.echo(f"table:        {shown_path}")
    click.echo(f"snapshots:    latest {damage['latest']}, last good {good if good is not None else '-'}")
    click.echo("")
    click.echo("verdict: BAD")
    for reason in reasons:
        click.echo(f"  - {reason.removeprefix('BAD: ')}")
    click.echo("suggested:")
    for s in suggestions:
        click.echo(f"  {s}")


@main.command(short_help="Check a table's health; suggest maintenance commands.")
@_PATH
@click.option("--skip-orphans", is_flag=True, help="Do not list the table directory for orphan files.")
@click.option("--html", "html_file", metavar="FILE",
              help="Also write the diagnosis with charts to FILE, a self-contained HTML page (needs matplotlib).")
@click.option("--png", "png_file", metavar="FILE",
              help="Also write the charts to FILE, a PNG image (needs matplotlib).")
@click.option("--verify", is_flag=True,
              help="Check consistency instead: replay the snapshot chain and check the format's invariants.")
@_JSON
@_guarded
def doctor(path: str, skip_orphans: bool, html_file: str | None, png_file: str | None, verify: bool,
           as_json: bool) -> None:
    """Check the health of the table at PATH and suggest maintenance commands. Reports, per
    bucket, data files, level-0 files and sorted runs (each level-0 file is a run, plus one per
    non-empty level >= 1); the share of small files (< 1/4 of target-file-size, default 128mb
    for primary-key and 256mb for append tables); manifest files; snapshots; orphan files older
    than 1d; and the time to plan a read.

    \b
    Verdict (exit 0 whatever it is):
      BAD   the newest snapshot does not decode or lacks files (a truncated or missing
            data, index or metadata file); the suggestion names the last good snapshot
            to roll back to;
            a bucket has more sorted runs than num-sorted-run.stop-trigger (default
            compaction-trigger + 3): writers stall.
      WARN  a bucket has more sorted runs than num-sorted-run.compaction-trigger (default 5);
            more than 50% of data files are small (and more than one per bucket);
            more than 1000 snapshots; more than 500 manifest files; planning takes more
            than 5 s; orphan files exist.
      OK    none of the above.

    \b
    With --verify, a consistency check instead (nothing is changed):
      files             files of the newest snapshots exist at their recorded sizes
                        and metadata decodes;
      replay            each snapshot's delta manifests, replayed in order against
                        the previous snapshot, add no live file and delete no file
                        that is not live, and yield its base + delta live files;
      lsm               in the newest snapshot: min <= max sequence number, no
                        negative level, no key-range overlap within a level >= 1
                        of a bucket (primary-key tables);
      deletion_vectors  every deletion vector names a live file of its bucket and
                        no position >= that file's row count;
      buckets           file keys hash to their bucket (fixed-bucket primary-key
                        tables);
      index             hash index files hold their recorded number of hashes,
                        each hash in one bucket, and the hashes of every file's
                        min and max key in its bucket's index (dynamic-bucket
                        tables); data files' file indexes exist and decode;
      iceberg           the Iceberg metadata (metadata.iceberg.storage) describes
                        the newest snapshot: its version, current snapshot and
                        data files (live files with their row counts and sizes,
                        all of them for append tables).
    Each violation is listed with its class, kind, snapshot, file and detail.
    Exit 0: no violation; 5: violations found; 1-4: the check failed (see
    `tidelake --help`).
    """
    t = _open(path)
    if verify:
        _verify(path, t, as_json)
        return
    damage = t.find_damage()
    if damage["problems"]:
        _report_damage(path, damage, as_json)
        return
    files = t.system("files").to_pylist()
    d = _diagnose(t, path, not skip_orphans, files)
    if html_file is not None or png_file is not None:
        from . import doctor_report

        snapshots = [s.to_dict() for s in t.snapshots()]
        if html_file is not None:
            doctor_report.write_html(html_file, d, files, snapshots)
        if png_file is not None:
            doctor_report.write_png(png_file, d, files, snapshots)
    if as_json:
        _emit_json(d)
        return
    partitions = f"{d['partitions']} partitions, " if t.partition_keys else ""
    click.echo(f"table:        {d['path']} ({d['kind']}, {partitions}{d['buckets_per_partition']} "
               f"buckets{' per partition' if partitions else ''})")
    click.echo(f"snapshots:    {d['snapshots']}")
    click.echo(f"manifests:    {d['manifests']}")
    click.echo(f"planning:     {d['planning_seconds']:.3f} s")
    small = _human_bytes(d["thresholds"]["small_file_bytes"])
    click.echo(f"data files:   {d['files']}, {d['small_files']} small (< {small}): {d['small_file_share']:.0%}")
    if d["orphan_files"] is not None:
        click.echo(f"orphan files: {d['orphan_files']} ({_human_bytes(d['orphan_bytes'])}, older than 1d)")
    click.echo("")
    _print_table([[b["partition"], b["bucket"], b["files"], b["level0_files"], b["sorted_runs"], b["small_files"],
                   b["rows"], _human_bytes(b["bytes"])] for b in d["buckets"]],
                 ["partition", "bucket", "files", "level-0", "runs", "small", "rows", "size"])
    click.echo("")
    click.echo(f"verdict: {d['verdict']}")
    for reason in d["reasons"]:
        click.echo(f"  - {reason}")
    if d["suggestions"]:
        click.echo("suggested:")
        for s in d["suggestions"]:
            click.echo(f"  {s}")

