"""``tidelake maintain`` and :mod:`tidelake.maintain`: the plan a policy makes of a table's state,
the jobs run next to live writer processes (local and S3) keeping every acknowledged write,
the JSON-lines log, ``--dry-run`` changing nothing, policy files, the time budget, failed jobs
and compaction through Spark."""

from __future__ import annotations

import datetime as dt
import functools
import json
import multiprocessing as mp
import os
import pathlib
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
import tidelake.spark as tidelake_spark
from _s3 import Storage
from _workers import concurrent_upserts, release_when_ready
from conftest import assert_same_rows
from tidelake import cli, maintain

SCHEMA = pa.schema([("k", pa.int64()), ("w", pa.int32()), ("c", pa.int32())])
DAY = 86_400


def cli_run(*args: object, code: int = 0):
    result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    return result


def log_lines(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def listing(root: pathlib.Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime in ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def plant_orphan(table: pathlib.Path, age_seconds: int, name: str = "data-orphan.parquet") -> pathlib.Path:
    """A file in a bucket directory that no snapshot references, last modified ``age_seconds`` ago."""
    bucket = next(table.rglob("bucket-0"))
    orphan = bucket / name
    orphan.write_bytes(b"x" * 100)
    then = time.time() - age_seconds
    os.utime(orphan, (then, then))
    return orphan


def messy_table(path: pathlib.Path) -> tidelake.Table:
    """A partitioned table that needs every kind of job: 6 commits in one bucket (over the
    compaction trigger), snapshots beyond a short retention, an expired tag, a partition older
    than partition.expiration-time and an orphan file two days old."""
    t = tidelake.create_table(path, pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.int64())]),
                              primary_keys=["k", "dt"], partition_keys=["dt"], bucket=1,
                              options={"write-only": "true", "snapshot.num-retained.min": "2",
                                       "snapshot.time-retained": "1 ms", "partition.expiration-time": "1 d"})
    today = dt.date.today().isoformat()
    t.upsert(pa.table({"k": [0], "dt": ["2020-01-01"], "v": [0]}, schema=t.schema))
    for i in range(6):
        t.upsert(pa.table({"k": [i, i + 100], "dt": [today, today], "v": [i, i]}, schema=t.schema))
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    t.create_tag("kept")
    plant_orphan(path, 2 * DAY)
    time.sleep(1.1)  # the tag's retention (its create time has second precision) has passed
    return t


ALL_KINDS = ["expire-tags", "expire-partitions", "compact", "expire-snapshots", "remove-orphans"]


def test_dry_run_changes_nothing(tmp_path):
    path = tmp_path / "t"
    t = messy_table(path)
    before = listing(path)
    snapshots, tags = [s.id for s in t.snapshots()], [tag.name for tag in t.tags()]

    plan = maintain.plan(str(path))
    assert [j.kind for j in plan.jobs] == ALL_KINDS
    assert plan.jobs[0].param("tags") == ("short",)
    report = maintain.run(str(path), dry_run=True)
    assert report.dry_run and [r.status for r in report.results] == ["skipped"] * 5 and report.log_path is None
    out = cli_run("maintain", path, "--dry-run").stdout
    for kind in ALL_KINDS:
        assert kind in out
    assert "compact-manifests" in out  # the note: the engine merges manifests at every commit
    assert json.loads(cli_run("maintain", path, "--dry-run", "--json").stdout)["jobs"] == \
        [j.to_dict() for j in plan.jobs]

    assert listing(path) == before  # not a byte, not an mtime, and no log written
    t = tidelake.open_table(path)
    assert [s.id for s in t.snapshots()] == snapshots and [tag.name for tag in t.tags()] == tags


def test_jobs_run_as_planned_and_again_do_nothing(tmp_path):
    path = tmp_path / "t"
    t = messy_table(path)
    expected = t.to_arrow(filter="dt != '2020-01-01'")
    orphan = plant_orphan(path, 2 * DAY, "data-old.parquet")
    young = plant_orphan(path, 60, "data-young.parquet")  # a writer's file not yet committed

    seen = []
    report = maintain.run(str(path), progress=lambda done, total, r: seen.append((done, total, r and r.job.kind)))
    assert report.ok and [r.job.kind for r in report.ran] == ALL_KINDS
    assert seen[0] == (0, 5, None) and seen[-1][:2] == (5, 5)
    by_kind = {r.job.kind: r for r in report.results}
    assert by_kind["expire-partitions"].result == [{"dt": "2020-01-01"}]
    assert by_kind["compact"].after["files"] < by_kind["compact"].before["files"]
    assert by_kind["expire-snapshots"].after["snapshots"] < by_kind["expire-snapshots"].before["snapshots"]
    assert by_kind["remove-orphans"].result["files"] == 2
    assert not orphan.exists() and young.exists()

    t = tidelake.open_table(path)
    assert [tag.name for tag in t.tags()] == ["kept"]
    assert_same_rows(t.to_arrow(), expected)
    log = log_lines(path / ".tidelake" / "maintain.jsonl")
    assert [(e["kind"], e["status"]) for e in log] == [(k, "done") for k in ALL_KINDS]
    assert all(e["before"]["rows"] is not None and e["after"]["bytes"] is not None for e in log)

    again = maintain.run(str(path))  # idempotent: only the partition check, which drops nothing
    assert [(r.job.kind, r.result) for r in again.results] == [("expire-partitions", [])]
    assert_same_rows(tidelake.open_table(path).to_arrow(), expected)


def _maintain_process(path: str, log: pathlib.Path, storage_options: dict | None) -> subprocess.CompletedProcess:
    opts = [a for k, v in (storage_options or {}).items() for a in ("-o", f"{k}={v}")]
    return subprocess.run([sys.executable, "-m", "tidelake.cli", *opts, "maintain", path, "--log", str(log),
                           "--json"], capture_output=True, text=True, timeout=300)


def test_maintain_next_to_live_writers(storage: Storage, tmp_path):
    """``tidelake maintain`` processes run over and over while writer processes commit: every
    acknowledged write is read back, and the log lists the jobs the runs reported."""
    workers, commits, rows = 3, 15, 50
    t = storage.create_table("t", SCHEMA, primary_keys=["k"], bucket=2,
                             options={"write-only": "true", "snapshot.num-retained.min": "3",
                                      "snapshot.time-retained": "1 ms",
                                      # four committers on a slow S3 can lose Paimon's default 10 races
                                      "commit.max-retries": "100"})
    if storage.kind == "local":
        t.upsert(pa.table({"k": [-1], "w": [-1], "c": [-1]}, schema=SCHEMA))
        orphan = plant_orphan(pathlib.Path(t.path), 2 * DAY)
    log = tmp_path / "maintain.jsonl"
    ready, go = tmp_path / "ready", str(tmp_path / "go")
    ready.mkdir()
    reported: list[dict] = []
    during_writes: list[str] = []  # the jobs of runs that started before the writers were done
    with mp.get_context("spawn").Pool(workers) as pool:
        pending = pool.starmap_async(concurrent_upserts, [(t.path, w, commits, rows, go, str(ready), storage.options)
                                                          for w in range(workers)])
        release_when_ready(str(ready), workers, go)
        while True:
            writers_done = pending.ready()
            out = _maintain_process(t.path, log, storage.options)
            assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
            results = json.loads(out.stdout)["results"]
            reported += results
            if writers_done:
                break
            during_writes += [r["kind"] for r in results if r["status"] == "done"]
        records = [r for per_worker in pending.get(timeout=10) for r in per_worker]
    # one run expires at most snapshot.expire.limit (10) snapshots, as Paimon's: runs after the
    # writers stopped catch up with what they committed during the last one
    for _ in range(workers * commits // 10 + 1):
        if "expire-snapshots" not in [j.kind for j in maintain.plan(t.path, storage_options=storage.options).jobs]:
            break
        out = _maintain_process(t.path, log, storage.options)
        assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
        reported += json.loads(out.stdout)["results"]

    landed = [r for r in records if r["conflict"] is None]
    # writers of their own keys never conflict
    assert [r["conflict"] for r in records if r["conflict"] is not None] == []
    expected = pa.Table.from_pylist([{"k": k, "w": r["worker"], "c": r["commit"]} for r in landed for k in r["keys"]],
                                    schema=SCHEMA)
    t = tidelake.open_table(t.path, storage_options=storage.options)
    assert_same_rows(t.to_arrow(filter="k >= 0"), expected)

    print(f"jobs while writers committed: {during_writes}; in all: {[r['kind'] for r in reported]}")
    assert "compact" in during_writes and "expire-snapshots" in during_writes
    kinds = {r["kind"] for r in reported if r["status"] == "done"}
    assert {"compact", "expire-snapshots"} <= kinds, reported
    assert all(r["status"] == "done" for r in reported), reported
    logged = log_lines(log)
    assert [(e["table"], e["kind"], e["status"], e["after"]) for e in logged] == \
        [(r["table"], r["kind"], r["status"], r["after"]) for r in reported]
    for e in logged:
        if e["kind"] == "compact":
            assert e["after"]["rows"] >= e["before"]["rows"]  # writers only add keys
    if storage.kind == "local":
        assert "remove-orphans" in kinds and not orphan.exists()
    assert [j.kind for j in maintain.plan(t.path, storage_options=storage.options).jobs] in ([], ["compact"])


def test_policy_file(tmp_path):
    cat = tidelake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    for name in ("a", "b"):
        t = cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], bucket=1, options={"write-only": "true"})
        for i in range(7):
            t.upsert(pa.table({"k": [i], "w": [0], "c": [i]}, schema=SCHEMA))
    policy = tmp_path / "policy.toml"
    policy.write_text('compact = false\nsnapshot-retain-min = 3\nsnapshot-time-retained = "1ms"\n'
                      '[tables."db.b"]\ncompact = true\nexpire-snapshots = false\n')
    plan = maintain.plan(str(tmp_path / "wh"), policy=maintain.Policy.from_file(policy))
    assert [(j.name, j.kind) for j in plan.jobs] == [("db.a", "expire-snapshots"), ("db.b", "compact")]
    assert "keep at least 3" in plan.jobs[0].reason

    out = json.loads(cli_run("maintain", tmp_path / "wh", "--policy", policy, "--json").stdout)
    assert [(r["name"], r["kind"], r["status"]) for r in out["results"]] == \
        [("db.a", "expire-snapshots", "done"), ("db.b", "compact", "done")]
    assert len(cat.get_table("db.a").snapshots()) == 3
    assert len(log_lines(tmp_path / "wh" / ".tidelake" / "maintain.jsonl")) == 2

    as_json = tmp_path / "policy.json"
    as_json.write_text(json.dumps({"remove_orphans": False, "orphan_older_than": "2d", "expire_tags": False}))
    assert maintain.Policy.from_file(as_json) == maintain.Policy(remove_orphans=False, expire_tags=False,
                                                                 orphan_older_than=dt.timedelta(days=2))
    for text, complaint in (('compact = "yes"\n', "compact must be true or false"),
                            ('retain = 3\n', "unknown setting 'retain'"),
                            ('orphan-older-than = "10min"\n', "at least 1h"),
                            ('[tables."db.a"]\nsnapshot-retain-min = 0\n', "positive integer"),
                            ("compact = \n", "bad policy file")):
        policy.write_text(text)
        err = cli_run("maintain", tmp_path / "wh", "--policy", policy, code=2).stderr
        assert complaint in err, err
    with pytest.raises(tidelake.InvalidArgumentError, match="snapshot_retain_max"):
        maintain.plan(str(tmp_path / "wh"), policy={"snapshot_retain_max": -1})


def test_time_budget(tmp_path):
    wh = tmp_path / "wh"
    cat = tidelake.Catalog(str(wh))
    cat.create_database("db")
    for name in ("a", "b", "c"):
        t = cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], bucket=1, options={"write-only": "true"})
        for i in range(6):
            t.upsert(pa.table({"k": [i], "w": [0], "c": [i]}, schema=SCHEMA))
    policy = {"expire_snapshots": False}
    before = listing(wh)
    out = cli_run("maintain", wh, "--time-budget", "0s", "--json", code=7).stdout
    assert [r["status"] for r in json.loads(out)["results"]] == ["skipped"] * 3
    assert {k: v for k, v in listing(wh).items() if not k.startswith(".tidelake")} == before

    def slow_progress(done: int, total: int, result: maintain.JobResult | None) -> None:
        if done == 1:
            time.sleep(3)  # the first job used the whole budget

    report = maintain.run(str(wh), policy=policy, time_budget="2s", progress=slow_progress)
    assert [r.status for r in report.results] == ["done", "skipped", "skipped"]
    assert report.skipped[0].error == "time budget used up"
    kinds = [e["status"] for e in log_lines(wh / ".tidelake" / "maintain.jsonl")]
    assert kinds == ["skipped"] * 3 + ["done", "skipped", "skipped"]
    assert [j.name for j in maintain.plan(str(wh), policy=policy).jobs] == ["db.b", "db.c"]

    report = maintain.run(cat, policy=policy, concurrency=2, time_budget=dt.timedelta(minutes=10))
    assert [r.status for r in report.results] == ["done", "done"]
    with pytest.raises(tidelake.InvalidArgumentError, match="concurrency"):
        maintain.run(cat, concurrency=0)


def test_a_missing_target_is_not_found(tmp_path):
    (tmp_path / "empty").mkdir()
    for where in (tmp_path / "nothing", tmp_path / "empty"):
        err = cli_run("maintain", where, code=3).stderr
        assert "no table or warehouse at" in err
    assert not (tmp_path / "nothing").exists()


def test_a_failed_job_is_reported_and_the_others_run(tmp_path):
    path = tmp_path / "t"
    t = tidelake.create_table(path, SCHEMA, primary_keys=["k"], bucket=1,
                              options={"write-only": "true", "snapshot.num-retained.min": "2",
                                       "snapshot.time-retained": "1 ms"})
    for i in range(6):
        t.upsert(pa.table({"k": [i], "w": [0], "c": [i]}, schema=SCHEMA))
    next(path.rglob("bucket-0/data-*")).unlink()  # compaction cannot read it
    out = json.loads(cli_run("maintain", path, "--json", code=6).stdout)
    assert [(r["kind"], r["status"]) for r in out["results"]] == [("compact", "failed"), ("expire-snapshots", "done")]
    assert out["results"][0]["error"]
    assert [e["status"] for e in log_lines(path / ".tidelake" / "maintain.jsonl")] == ["failed", "done"]


def test_spark_runs_the_compaction_jobs(spark, tmp_path):
    path = tmp_path / "t"
    t = tidelake.create_table(path, SCHEMA, primary_keys=["k"], bucket=2, options={"write-only": "true"})
    for i in range(6):
        t.upsert(pa.table({"k": [i, i + 10], "w": [0, 0], "c": [i, i]}, schema=SCHEMA))
    expected = t.to_arrow()

    report = maintain.run(str(path), spark=functools.partial(tidelake_spark.compact, spark))
    assert [(r.job.kind, r.status) for r in report.results] == [("compact", "done")]
    sid = report.results[0].result["snapshot_id"]
    t = tidelake.open_table(path)
    assert t.snapshot(sid).commit_kind == "COMPACT"
    assert_same_rows(t.to_arrow(), expected)

    for i in range(6):
        t.upsert(pa.table({"k": [i], "w": [1], "c": [i]}, schema=SCHEMA))
    out = json.loads(cli_run("maintain", path, "--spark", "local[1]", "--json").stdout)  # the fixture's session
    assert [(r["kind"], r["status"]) for r in out["results"]] == [("compact", "done")]
    assert tidelake.open_table(path).latest_snapshot().commit_kind == "COMPACT"


def test_the_documented_policy_file_is_valid(tmp_path):
    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "maintain.md").read_text()
    toml = page.split('pathlib.Path("policy.toml").write_text("""', 1)[1].split('""")', 1)[0]
    (tmp_path / "policy.toml").write_text(toml)
    policy = maintain.Policy.from_file(tmp_path / "policy.toml")
    assert policy.snapshot_retain_min == 20 and policy.orphan_older_than == dt.timedelta(days=3)
    events = policy.for_table("db.events")
    assert not events.compact and events.partition_expiration_time == dt.timedelta(days=90)
    assert events.snapshot_retain_min == 20  # the overrides keep the rest


def test_postpone_bucket_tables_are_planned_without_moving_rows(tmp_path):
    path = tmp_path / "t"
    t = tidelake.create_table(path, SCHEMA, primary_keys=["k"], bucket=-2)
    t.upsert(pa.table({"k": [1, 2], "w": [0, 0], "c": [0, 0]}, schema=SCHEMA))
    plan = maintain.plan(str(path))  # the engine's plan would commit the move: not called
    assert [(j.kind, j.param("files")) for j in plan.jobs] == [("compact", 1)]
    assert len(tidelake.open_table(path).snapshots()) == 1
    report = maintain.run(str(path))
    assert [(r.job.kind, r.status) for r in report.results] == [("compact", "done")]
    t = tidelake.open_table(path)
    assert t.latest_snapshot().commit_kind == "COMPACT" and t.to_arrow().num_rows == 2
    assert maintain.plan(str(path)).jobs == []


def test_a_tag_created_again_after_planning_is_kept(tmp_path):
    path = tmp_path / "t"
    t = tidelake.create_table(path, SCHEMA, primary_keys=["k"], bucket=1)
    t.upsert(pa.table({"k": [1], "w": [0], "c": [0]}, schema=SCHEMA))
    t.create_tag("nightly", time_retained=dt.timedelta(milliseconds=1))
    time.sleep(1.1)

    def recreate(done: int, total: int, result: maintain.JobResult | None) -> None:
        if done == 0:  # planned, no job started yet: someone tags again under the same name
            t.delete_tag("nightly")
            t.create_tag("nightly", time_retained=dt.timedelta(days=1))

    report = maintain.run(str(path), progress=recreate)
    assert [(r.job.kind, r.job.param("tags"), r.status, r.result) for r in report.results] == \
        [("expire-tags", ("nightly",), "done", {})]
    assert [tag.name for tag in t.tags()] == ["nightly"]
