"""Sort compaction and ``clustering.columns`` with Java Paimon 1.3.1 (the ``java`` oracle): Java
writes a bucket-unaware append table, tidelake sort-compacts it (each strategy, one partition
at a time) and Java reads the same rows, then writes on; tidelake writes a table created with
``clustering.columns`` (sorted files) and Java reads it and continues writing."""

from __future__ import annotations

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write

FIELDS = [("a", "INT"), ("b", "BIGINT"), ("s", "STRING"), ("p", "INT")]


def _commit(n: int, salt: int) -> dict:
    """One commit of ``n`` rows over two partitions, with a null in every column but p."""
    rows = [[(i * 37 + salt) % 101, (i * 53 + salt * 7) % 97, f"s{(i + salt) % 13}", i % 2] for i in range(n)]
    rows.append([None, None, None, salt % 2])
    return {"rows": rows}


@pytest.mark.parametrize("strategy,columns", [("order", ["b"]), ("zorder", ["a", "b"]),
                                              ("hilbert", ["a", "s", "b"])])
def test_java_reads_what_tidelake_sort_compacted(java, tmp_path, strategy, columns):
    wh = str(tmp_path)
    sc = Scenario(f"sorted_{strategy}", FIELDS, [_commit(40, i) for i in range(4)], partition_keys=["p"],
                  options={"bucket": "-1"}, mode="batch")
    t = java_write(java, wh, sc)
    before = compare_read(java, t, wh, f"java wrote, before {strategy}")
    sid = t.compact(partitions=[{"p": 1}], order_by=columns, strategy=strategy)
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert compare_read(java, t, wh, f"tidelake {strategy} p=1", pypaimon=True) == before
    t.compact(order_by=columns, strategy=strategy)
    assert compare_read(java, t, wh, f"tidelake {strategy} all") == before
    # Java writes on over the sorted files
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(5, 9)]})
    after = compare_read(java, tidelake.open_table(t.path), wh, f"java after tidelake {strategy}")
    assert len(after) == len(before) + 6


def test_java_reads_and_writes_a_clustered_table(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("clustered", FIELDS, [_commit(60, i) for i in range(3)], partition_keys=["p"],
                  options={"bucket": "-1", "clustering.columns": "a,b"}, mode="batch")
    t = tidelake_write(java, wh, sc)
    rows = compare_read(java, t, wh, "tidelake clustered writes", pypaimon=True)
    assert len(rows) == 183
    # each file of tidelake's is in z-order, not as written: its first rows have small a and b
    for f in t.scan().native_read().files:
        data = pq.ParquetFile(f"{t.path}/{f.path}").read().filter(pc.is_valid(pc.field("a")))
        first = data.slice(0, 4).to_pylist()
        assert all(r["a"] < 64 and r["b"] < 64 for r in first), first
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [_commit(5, 7)]})
    assert len(compare_read(java, tidelake.open_table(t.path), wh, "java after clustered")) == 189


def test_java_reads_a_sorted_table_whose_deletion_vectors_left_with_their_files(java, tmp_path):
    """A deletion-vector append table with deleted rows, sorted by tidelake: the vectors of the
    files read leave with them (nothing in the index names a removed file), Java reads the same
    rows, then writes on."""
    wh = str(tmp_path)
    sc = Scenario("sorted_dv", FIELDS, [_commit(40, i) for i in range(4)], partition_keys=["p"],
                  options={"bucket": "-1", "deletion-vectors.enabled": "true"}, mode="batch")
    t = tidelake_write(java, wh, sc)
    t.delete([("a", "<", 30)])
    assert t.system("table_indexes").num_rows > 0
    before = compare_read(java, t, wh, "tidelake deleted by vectors")
    t.compact(order_by=["a", "b"], strategy="zorder")
    assert t.system("table_indexes").num_rows == 0
    assert compare_read(java, t, wh, "tidelake sorted a table with vectors", pypaimon=True) == before
    java.run({**sc.java_job(wh, with_steps=False), "existing": True,
              "steps": [_commit(5, 9)]})
    after = compare_read(java, tidelake.open_table(t.path), wh, "java wrote on")
    assert len(after) == len(before) + 6
