"""Rescale with Java Paimon 1.3.1 (the ``java`` oracle; Paimon's ``rescale`` is a Flink action
the oracle does not run): Java writes a primary-key table, tidelake rescales one partition after
``bucket`` changed, and Java reads the same rows and writes on into the rescaled partition with
its new bucket count (and into the other once it is rescaled too: Java's writers refuse a
partition whose count is not the option's); tidelake writes and rescales a table Java created,
and Java continues it."""

from __future__ import annotations

import pyarrow as pa

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write

FIELDS = [("k", "INT NOT NULL"), ("p", "INT NOT NULL"), ("v", "STRING")]


def _commit(n: int, salt: int) -> dict:
    return {"rows": [[i, i % 2, f"v{salt}-{i}"] for i in range(salt, salt + n)]}


def _delete(k: int) -> dict:
    return {"rows": [{"kind": "-D", "values": [k, k % 2, None]}]}


def _counts(t: tidelake.Table) -> dict[str, int]:
    return {r["partition"]: r["total_buckets"] for r in t.refresh().system("partitions").to_pylist()}


def _scenario(name: str) -> Scenario:
    return Scenario(name, FIELDS, [_commit(40, 0), _commit(30, 20), _delete(3), _delete(4)],
                    primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "2"}, mode="batch")


def test_java_reads_and_writes_what_tidelake_rescaled(java, tmp_path):
    wh = str(tmp_path)
    sc = _scenario("java_first")
    t = java_write(java, wh, sc)
    before = compare_read(java, t, wh, "java wrote")
    t.set_option("bucket", "4")
    sid = t.rescale(partitions=[{"p": 1}])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert _counts(t) == {"p=0": 2, "p=1": 4}
    assert compare_read(java, t, wh, "tidelake rescaled p=1", pypaimon=True) == before
    # Java writes the rescaled partition with the table's 4 buckets (Java's writers refuse a
    # partition whose count differs from the option's, p=0 here, until it is rescaled too)
    odd = {"rows": [r for r in _commit(20, 100)["rows"] if r[1] == 1]}
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [odd, _delete(21)]})
    after = compare_read(java, tidelake.open_table(t.path), wh, "java wrote after the rescale")
    assert len(after) == len(before) + 10 - 1
    assert _counts(t) == {"p=0": 2, "p=1": 4}
    # tidelake's writers keep p=0's count until it is rescaled
    t = tidelake.open_table(t.path)
    t.write(pa.table({"k": pa.array([1000], pa.int32()), "p": pa.array([0], pa.int32()), "v": ["t"]}))
    assert _counts(t) == {"p=0": 2, "p=1": 4}
    t.rescale(partitions=[{"p": 0}])
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(4, 300)]})
    assert len(compare_read(java, tidelake.open_table(t.path), wh, "java wrote both partitions")) == len(after) + 5
    assert _counts(t) == {"p=0": 4, "p=1": 4}
    buckets = {(f["partition"], f["bucket"]) for f in t.system("files").to_pylist()}
    assert {b for p, b in buckets if p == "{1}"} == {b for p, b in buckets if p == "{0}"} == {0, 1, 2, 3}


def test_java_continues_a_table_tidelake_wrote_and_rescaled(java, tmp_path):
    wh = str(tmp_path)
    sc = _scenario("tidelake_first")
    sc.steps.append({"alter": [{"set": "bucket", "value": "3"}]})
    t = tidelake_write(java, wh, sc)
    before = compare_read(java, t, wh, "tidelake wrote")
    t.rescale()
    assert _counts(t) == {"p=0": 3, "p=1": 3}
    assert compare_read(java, t, wh, "tidelake rescaled all") == before
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(5, 200), {"compact": True}]})
    t = tidelake.open_table(t.path)
    assert len(compare_read(java, t, wh, "java wrote and compacted after the rescale")) == len(before) + 5
    assert _counts(t) == {"p=0": 3, "p=1": 3}
