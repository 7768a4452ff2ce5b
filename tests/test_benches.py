"""The benchmark's Java Paimon peer (benches/java_peer.py, interop/java-oracle Bench.java) at a
tiny scale: every step runs in both systems and their row counts and checksums agree with each
other and with the workload's expected final state, so the peer cannot report a time for work
it did not do."""

from __future__ import annotations

import pathlib
import sys

import pyarrow.compute as pc

from _java import java, oracle_classpath  # noqa: F401  (the oracle fixture: Java and the build)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benches"))

import java_peer  # noqa: E402
import workload as wl  # noqa: E402


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
