"""The benchmark's Java Paimon peer (benches/java_peer.py, interop/java-oracle Bench.java) at a
tiny scale: every step runs in both systems and their row counts and checksums agree with each
other and with the workload's expected final state, so the peer cannot report a time for work
it did not do. Then the issue #35 scripts (benches/sustained_ingestion.py,
benches/streaming_latency.py) in their quick modes, checking the shape and the counts of what
they report (every commit delivered, every key live), not timings; benches/sort_compaction.py
in its quick mode (rows kept, files pruned); benches/maintenance_scale.py in its quick mode
(snapshots expired, orphans removed); and benches/memstat.py, which every benchmark's peak RSS
comes from."""

from __future__ import annotations

import pathlib
import sys

import pyarrow.compute as pc
import pytest

from _java import java, oracle_classpath  # noqa: F401  (the oracle fixture: Java and the build)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benches"))

import java_peer  # noqa: E402
import workload as wl  # noqa: E402

# the quick benchmarks measure: run with the machine to themselves
pytestmark = pytest.mark.exclusive


def test_java_peer_runs_every_step_and_agrees_with_tidelake(java, tmp_path):
    w = wl.Workload(rows=3000, upsert_rows=400, commits=3, buckets=2)
    data = wl.save(w, tmp_path / "data")
    table = java_peer.read_table(data)
    args = java_peer.options(w, table, small_commits=3)
    steps = ",".join(java_peer.STEPS)
    got = {system: java_peer.run_process(
        java_peer.command(system, steps, args, 1, data, tmp_path / system, oracle_classpath()),
        tmp_path / "peer.log", timeout=300) for system in ("tidelake", java_peer.SYSTEM)}

    _, bulk, upserts = wl.load(data)
    final = wl.final_state(bulk, upserts)
    ids = final[wl.KEY]
    lo, hi = w.rows // 3, w.rows // 3 + w.final_rows // 100 - 1
    expected_rows = {"bulk": w.rows, "upsert": w.final_rows, "read": w.final_rows, "point": 1,
                     "range": pc.sum(pc.and_(pc.greater_equal(ids, lo), pc.less_equal(ids, hi))).as_py(),
                     "compact": w.final_rows, "commits": 3}
    assert expected_rows["range"] == hi - lo + 1
    for step in java_peer.STEPS:
        summaries = {system: java_peer.summarize(res[step], warm=False) for system, res in got.items()}
        for system, r in summaries.items():
            assert r["reps"] == 1 and r["wall_s"] > 0 and r["cpu_s"] > 0 and r["peak_rss_mb"] > 0, (system, step)
            assert r["rows"] == expected_rows[step], (system, step, r["rows"])
        assert java_peer.mismatches({step: summaries}) == [], summaries
    read = java_peer.summarize(got["tidelake"]["read"], warm=False)
    assert (read["sum_ver"], read["sum_qty"]) == (pc.sum(final["ver"]).as_py(), pc.sum(final["qty"]).as_py())
    assert len(got[java_peer.SYSTEM]["commits"]["runs"][0]["commit_ms"]) == 3


# ---- the issue #35 scripts in their quick modes: output shape, not timings ----------------------

BENCHES = pathlib.Path(__file__).resolve().parents[1] / "benches"


def run_bench(script: str, tmp_path: pathlib.Path, *args: str, timeout: float = 600) -> tuple[str, dict]:
    """Run ``benches/<script> --quick`` in a child; its stdout (the Markdown report) and its --out JSON."""
    import json
    import os
    import subprocess

    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(BENCHES / script), "--quick", "--workdir", str(tmp_path / "work"),
                           "--out", str(out), "--png", str(tmp_path / "plot.png"), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "load average" in done.stdout  # every result carries the machine's load
    return done.stdout, json.loads(out.read_text())


def test_memstat_lifetime_peak_survives_a_high_water_mark_reset():
    import memstat

    base = memstat.status_kb("VmRSS") / 1024
    block = bytearray(300 * 2**20)  # zero pages: touch every page so it is resident
    for i in range(0, len(block), 4096):
        block[i] = 1
    del block
    assert memstat.reset_hwm()
    assert memstat.lifetime_peak_mb() >= base + 290
    assert memstat.hwm_mb() < base + 290 <= memstat.lifetime_peak_mb()


QUICK_SUM_VER = 131935
"""Sum of ``ver`` over the live rows after the --quick stream (seed 35): each key's last version."""


def check_sustained(stdout: str, result: dict, mode: str) -> None:
    """What every engine's sustained-ingestion run must report, whatever its timings."""
    assert result["mode"] == mode
    windows = result["windows"]
    assert [w["commits"] for w in windows] == [5, 10, 15, 20]
    assert [w["rows"] for w in windows] == [5000, 10000, 15000, 20000]
    # 1,000 new keys, then 500 new keys per commit: every key written is live, once; the batches
    # are seeded (ver = commit number), so every engine ends with the same latest versions
    assert result["live_rows"] == result["keys_written"] == 1000 + 19 * 500
    assert result["sum_ver"] == QUICK_SUM_VER
    assert len(result["per_commit"]) == 20
    for w in windows:
        for key in ("rows_per_s", "rows_per_cpu_s", "window_rows_per_s", "window_rows_per_cpu_s", "peak_rss_mb"):
            assert w[key] > 0, (key, w)
        # the window's cycles include its timed calls (within clock resolution)
        assert w["cycle_s"] >= 0.9 * w["seconds"], w
        assert 1 <= w["runs_max"] <= 10 and 0 < w["runs_mean"] <= w["runs_max"]
    # 16 buckets gain a run per commit: by commit 20 compaction has run and written files
    assert sum(w["compactions"] for w in windows) > 0
    amp = [w["write_amplification"] for w in windows]
    assert amp[-1] > 0 and amp == sorted(amp)  # cumulative: never decreases
    tables = [ln for ln in stdout.splitlines() if ln.startswith("| ")]
    assert len(tables) == 2 * (1 + 4)  # rates and compaction picks: a header and one line per window
    assert stdout.count("target: within 1.3x") == 4


@pytest.mark.parametrize("mode", ["upsert", "writer"])
def test_sustained_ingestion_quick(tmp_path, mode):
    stdout, result = run_bench("sustained_ingestion.py", tmp_path, "--mode", mode)
    check_sustained(stdout, result, mode)
    phases = [w["phase_cpu_s"] for w in result["windows"]]
    if mode == "upsert":  # one call: no separate prepare/commit phase
        assert all(p[0] > 0 and p[1] == 0 for p in phases), phases
        assert all(w["prepare_s"] == 0 for w in result["windows"])
    else:  # the writer's commits carry the batch (APPEND) and what compaction finished (COMPACT)
        assert all(w["write_s"] > 0 and w["prepare_s"] > 0 and w["commit_s"] > 0 for w in result["windows"])
        assert any(r["snapshots"] == 2 for r in result["per_commit"])


@pytest.mark.slow
def test_sustained_ingestion_quick_java_peer(java, tmp_path):
    stdout, result = run_bench("sustained_ingestion.py", tmp_path, "--peer", "java")
    check_sustained(stdout, result, "java")
    assert "Java Paimon" in stdout
    assert all(r["ingested"] > 0 for r in result["per_commit"])


def test_streaming_latency_quick(tmp_path):
    stdout, result = run_bench("streaming_latency.py", tmp_path, "--readers", "python,tail", "--rates", "10",
                               "--intervals", "0.1")
    runs = result["results"]
    assert [(r["reader"], r["interval"], r["rate"]) for r in runs] == [("python", 0.1, 10.0), ("tail", 0.1, 10.0)]
    for r in runs:
        assert r["commits"] == 30 and r["delivered"] == 30 and r["missing"] == [], r
        assert len(r["latencies_s"]) == 30
        assert r["p50_s"] <= r["p99_s"] <= r["max_s"] < 60
    assert len([ln for ln in stdout.splitlines() if ln.startswith("| ")]) == 1 + 2  # header, configurations


@pytest.mark.slow
def test_streaming_latency_quick_spark(tmp_path):
    pytest.importorskip("pyspark")
    stdout, result = run_bench("streaming_latency.py", tmp_path, "--readers", "spark", "--rates", "10")
    [r] = result["results"]
    assert (r["reader"], r["interval"], r["rate"]) == ("spark", None, 10.0)
    assert r["commits"] == 30 and r["delivered"] == 30 and r["missing"] == [], r
    assert r["p50_s"] <= r["p99_s"] <= r["max_s"]
    assert "Spark readStream, default trigger" in stdout


def test_sort_compaction_quick(tmp_path):
    """benches/sort_compaction.py: every strategy keeps the filter's rows; the curves plan fewer
    files for a filter on the second column than the unsorted table does (counts, not timings)."""
    stdout, result = run_bench("sort_compaction.py", tmp_path)
    before = result["before"]
    assert result["rows"] == 200_000 and before["planned"] == before["files"] > 1
    strategies = result["strategies"]
    assert list(strategies) == ["order", "zorder", "hilbert"]
    for name, s in strategies.items():
        assert s["rows"] == before["rows"] > 0, name
    for name in ("zorder", "hilbert"):
        assert strategies[name]["planned"] < strategies[name]["files"], strategies[name]
    assert len([ln for ln in stdout.splitlines() if ln.startswith("| ")]) == 1 + 4  # header, 4 tables


def test_maintenance_scale_quick(tmp_path):
    """benches/maintenance_scale.py: expiry leaves only the latest snapshot with every row, orphan
    cleaning removes exactly the orphans (the script asserts both; counts, not timings)."""
    stdout, result = run_bench("maintenance_scale.py", tmp_path)
    assert [(r["operation"], r["size"]) for r in result] == [
        ("expiry", 20), ("expiry", 40), ("orphan cleaning", 1000), ("orphan cleaning", 2000)]
    assert [r.get("expired") for r in result[:2]] == [19, 39]
    assert [r.get("removed") for r in result[2:]] == [10, 20]
    assert len([ln for ln in stdout.splitlines() if ln.startswith("| ")]) == 1 + 4



def test_s3_requests_counts_exactly_the_bracketed_operation(tmp_path):
    """benches/s3_requests.py, which the scale benchmarks' request counts come from: on moto's
    recorder, a count holds the requests between start and stop only, by kind and by target
    (a few seconds: the quick benchmark modes do not upload their tables)."""
    import time

    import pyarrow as pa
    import s3_requests

    import tidelake

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False)])
    local = tidelake.create_table(tmp_path / "t", schema, partition_keys=["p"])
    for c in range(3):
        local.write(pa.table({"id": [c, c + 10], "p": [0, 1]}, schema=schema))
    (tmp_path / "t" / "_built.json").write_text("{}")  # a benchmark's marker: never uploaded
    with s3_requests.s3_bench() as s3:
        url = s3.upload(tmp_path / "t", s3_requests.metadata)
        table = tidelake.open_table(url, storage_options=s3.options)
        recording = s3_requests.Recording(s3.server.endpoint, url)
        recording.start()
        splits = table.scan(filter=[("p", "=", 1)]).splits()
        counts = recording.stop()
        assert sum(s.row_count for s in splits) == 3
        targets = counts["targets"]
        # three commits, one manifest each; the manifest list's partition statistics keep all three
        assert targets["GET manifest"] == 3 and targets["GET manifest list"] >= 1, counts
        assert "PUT" not in counts["kinds"] and counts["deleted_keys"] == 0
        assert counts["requests"] == sum(counts["kinds"].values()) == sum(targets.values())
        assert s3_requests.summary(counts).startswith(f"{counts['requests']:,} (")
        assert not any(k.endswith(" data") for k in targets)  # the data files were not uploaded
        assert "_built.json" not in {k.rsplit("/", 1)[-1] for k in s3.server.keys(s3.bucket)}

        table.write(pa.table({"id": [99], "p": [2]}, schema=schema))  # not recorded
        recording.start()
        table.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000))
        counts = recording.stop()
        assert counts["deleted_keys"] == counts["kinds"]["DELETE"] > 0 and counts["targets"]["DELETE snapshot"] == 3
        assert "GET data" not in counts["targets"]


def test_s3_requests_reads_entries_that_concurrent_requests_interleaved():
    """moto's recorder appends an entry and its newline as two writes: concurrent requests can
    leave two entries on one line."""
    import s3_requests

    assert list(s3_requests.entries('{"a": 1}{"b": 2}\n\n{"c": [1]}\n')) == [{"a": 1}, {"b": 2}, {"c": [1]}]
    assert list(s3_requests.entries("")) == []
