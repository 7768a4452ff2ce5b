"""Postpone-bucket tables (``bucket = -2``): writes land in ``bucket-postpone`` unseen by batch
reads, and compaction moves them into real buckets (later writes win, deletes apply), as Java
Paimon 1.3.1 does. Java is the oracle both ways: it writes and compacts (its Flink job's
compaction, replayed on its core API by the oracle), tidelake reads and compacts, and each reads
what the other wrote."""

from __future__ import annotations

import multiprocessing as mp
import os
import pathlib
import re
import shutil
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_changes, compare_read, java_write, tidelake_write
from _workers import postpone_writer, release_when_ready

SCHEMA = pa.schema([("k", pa.int32()), ("p", pa.string()), ("v", pa.int64())])
KV = [("k", "INT NOT NULL"), ("p", "STRING"), ("v", "BIGINT")]


def _create(path: pathlib.Path, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], bucket=-2,
                                 options=options or None)


def _rows(*rows: tuple[int, str, int]) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "p": p, "v": v} for k, p, v in rows], schema=SCHEMA)


def _visible(t: tidelake.Table) -> dict[tuple[int, str], int]:
    return {(r["k"], r["p"]): r["v"] for r in t.refresh().to_arrow().to_pylist()}


def _files(t: tidelake.Table) -> list[dict[str, Any]]:
    return t.refresh().system("files").to_pylist()


def _keys_per_bucket(t: tidelake.Table) -> dict[tuple[str, int], set[int]]:
    """Every key stored in each real (partition, bucket), deletes included, read from the files."""
    out: dict[tuple[str, int], set[int]] = {}
    for f in _files(t):
        if f["bucket"] >= 0:
            keys = pq.ParquetFile(f["file_path"]).read(columns=["_KEY_k"]).column(0).to_pylist()
            out.setdefault((str(f["partition"]), f["bucket"]), set()).update(keys)
    return out


# ---- tidelake alone ------------------------------------------------------------------------------


def test_writes_land_unsorted_in_the_postpone_bucket_unseen_by_batch_reads(tmp_path):
    t = _create(tmp_path / "t")
    sid = t.write(_rows((5, "a", 50), (1, "a", 10), (3, "b", 30), (1, "a", 11)))
    assert t.to_arrow().num_rows == 0  # Java's batch reads only see real buckets
    files = _files(t)
    assert {(f["bucket"], f["level"], f["min_sequence_number"], f["max_sequence_number"]) for f in files} == {(-2, 0, -1, -1)}
    for f in files:
        # Java's compaction parses the write id between "-s-" and "-w-" of the name.
        assert re.fullmatch(r"data--u-[0-9a-f-]{36}-s-\d+-w-[0-9a-f-]{36}-0\.parquet", os.path.basename(f["file_path"]))
        assert "/bucket-postpone/" in f["file_path"]
    a = next(f for f in files if str(f["partition"]) == "{a}")
    stored = pq.ParquetFile(a["file_path"]).read().to_pylist()
    # as written: neither sorted nor merged, sequence numbers unknown (-1)
    assert [(r["k"], r["v"], r["_SEQUENCE_NUMBER"]) for r in stored] == [(5, 50, -1), (1, 10, -1), (1, 11, -1)]
    assert t.latest_snapshot().commit_kind == "APPEND" and t.latest_snapshot().id == sid


def test_compaction_moves_rows_to_buckets_later_writes_win_and_deletes_apply(tmp_path):
    t = _create(tmp_path / "t", **{"postpone.default-bucket-num": "3"})
    t.write(_rows(*[(k, "a", k) for k in range(20)], (1, "b", 1)))
    t.write(_rows((3, "a", 300), (4, "a", 400)))
    t.delete_keys(_rows((5, "a", 0), (1, "b", 0)))
    t.write(_rows((3, "a", 301)))
    sid = t.compact()
    assert sid is not None and t.refresh().latest_snapshot().commit_kind == "COMPACT"
    expected = {(k, "a"): k for k in range(20) if k != 5}
    expected.update({(3, "a"): 301, (4, "a"): 400})
    assert _visible(t) == expected
    assert t.to_arrow(filter=[("k", "=", 3), ("p", "=", "a")]).to_pylist() == [{"k": 3, "p": "a", "v": 301}]
    files = _files(t)
    assert all(f["bucket"] >= 0 for f in files), "postpone files stay live after compaction"
    assert {f["bucket"] for f in files} == {0, 1, 2}  # postpone.default-bucket-num
    # the same rows in a fixed 3-bucket table land in the same buckets
    fixed = tidelake.create_table(str(tmp_path / "fixed"), SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], bucket=3)
    fixed.write(_rows(*[(k, "a", v) for (k, _), v in expected.items()]))
    assert {b: keys for (p, b), keys in _keys_per_bucket(fixed).items()} == {
        b: keys - {5} for (p, b), keys in _keys_per_bucket(t).items() if p == "{a}"}
    assert t.compact() is None  # nothing left to move or compact


def test_a_partition_keeps_its_bucket_count_and_sequence_numbers_continue(tmp_path):
    t = _create(tmp_path / "t", **{"postpone.default-bucket-num": "2"})
    t.write(_rows(*[(k, "a", k) for k in range(10)]))
    t.compact()
    assert {f["bucket"] for f in _files(t)} == {0, 1}
    top = max(f["max_sequence_number"] for f in _files(t))
    t.set_option("postpone.default-bucket-num", "4")
    t = t.refresh()
    t.write(_rows(*[(k, "a", k + 100) for k in range(5)], *[(k, "b", k) for k in range(10)]))
    t.compact(full=True)
    by_partition: dict[str, set[int]] = {}
    for f in _files(t):
        by_partition.setdefault(str(f["partition"]), set()).add(f["bucket"])
    assert by_partition == {"{a}": {0, 1}, "{b}": {0, 1, 2, 3}}
    assert min(f["min_sequence_number"] for f in _files(t) if str(f["partition"]) == "{a}") <= top
    assert _visible(t) == {**{(k, "a"): (k + 100 if k < 5 else k) for k in range(10)}, **{(k, "b"): k for k in range(10)}}


def test_postpone_writers_never_conflict_and_the_newer_file_wins(tmp_path):
    """Two long-lived writers write the same key; the one opened first commits last. Both land
    (a fixed-bucket table would refuse the second: its sequence numbers are older), and
    compaction replays the files by creation time: the last written value wins."""
    t = _create(tmp_path / "t")
    first, second = t.writer(), t.writer()
    second.write(_rows((1, "a", 2)))
    t.commit(second.prepare_commit())
    time.sleep(0.01)
    first.write(_rows((1, "a", 1), (2, "a", 1)))
    t.commit(first.prepare_commit())
    first.write(_rows((2, "a", 3)))
    t.commit(first.prepare_commit())
    first.close()
    second.close()
    t.compact()
    assert _visible(t) == {(1, "a"): 1, (2, "a"): 3}


def test_rows_postponed_before_a_schema_change_move_with_the_new_schema(tmp_path):
    t = _create(tmp_path / "t")
    t.write(_rows((1, "a", 1), (2, "a", 2)))
    t = t.add_column("w", pa.string()).rename_column("v", "value")
    t.write(pa.table({"k": pa.array([2], pa.int32()), "p": ["a"], "value": pa.array([20], pa.int64()), "w": ["x"]}))
    t.compact()
    assert sorted(t.refresh().to_arrow().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "p": "a", "value": 1, "w": None}, {"k": 2, "p": "a", "value": 20, "w": "x"}]


def test_partition_selection_and_overwrite(tmp_path):
    t = _create(tmp_path / "t")
    t.write(_rows((1, "a", 1), (2, "b", 2)))
    t.compact(partitions=[{"p": "a"}])
    assert _visible(t) == {(1, "a"): 1}
    assert {(str(f["partition"]), f["bucket"]) for f in _files(t)} == {("{a}", 0), ("{b}", -2)}
    t.write(_rows((3, "b", 3)), mode="overwrite", overwrite_partition={"p": "b"})
    t.compact()
    assert _visible(t) == {(1, "a"): 1, (3, "b"): 3}  # the overwrite dropped the postponed (2, b)


def test_cli_compact_moves_postponed_rows(tmp_path):
    from click.testing import CliRunner

    from tidelake import cli

    t = _create(tmp_path / "t")
    t.write(_rows((1, "a", 1), (2, "b", 2)))
    result = CliRunner().invoke(cli.main, ["compact", t.path, "--json"], prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert _visible(t) == {(1, "a"): 1, (2, "b"): 2}


def test_spark_writes_postponed_rows(spark, tmp_path):
    import tidelake.spark

    t = _create(tmp_path / "t")
    rows = _rows(*[(k, "ab"[k % 2], k) for k in range(40)])
    df = spark.createDataFrame(rows.to_pandas()).repartition(3)
    tidelake.spark.write(df, t.path, mode="upsert")
    assert t.refresh().to_arrow().num_rows == 0
    t.compact()
    assert _visible(t) == {(k, "ab"[k % 2]): k for k in range(40)}


def test_a_bad_default_bucket_count_is_refused(tmp_path):
    t = _create(tmp_path / "t", **{"postpone.default-bucket-num": "0"})
    t.write(_rows((1, "a", 1)))
    with pytest.raises(tidelake.InvalidArgumentError, match="postpone.default-bucket-num"):
        t.compact()
    assert [f["bucket"] for f in _files(t)] == [-2]


def test_append_tables_cannot_postpone(tmp_path):
    with pytest.raises(tidelake.InvalidArgumentError):
        tidelake.create_table(str(tmp_path / "t"), SCHEMA, bucket=-2)


# ---- concurrency ---------------------------------------------------------------------------------


def test_compactions_racing_postpone_writers_lose_no_acknowledged_write(tmp_path):
    """Three writer processes commit postponed upserts of keys each owns (every key rewritten
    each round) while two processes compact over and over. Postpone writers never conflict;
    every acknowledged write is visible after a last compaction, with each key's last value."""
    t = _create(tmp_path / "t", **{"postpone.default-bucket-num": "2"})
    go, stop, ready = str(tmp_path / "go"), str(tmp_path / "stop"), tmp_path / "ready"
    ready.mkdir()
    ctx = mp.get_context("spawn")
    with ctx.Pool(5) as pool:
        writers = [pool.apply_async(postpone_writer, (t.path, w, 15, go, str(ready))) for w in range(3)]
        compactors = [pool.apply_async(_compact_until, (t.path, go, stop, str(ready), c)) for c in range(2)]
        release_when_ready(str(ready), 5, go)
        acks = [a for w in writers for a in w.get(timeout=300)]
        open(stop, "w").close()
        counts = [c.get(timeout=300) for c in compactors]
    print(f"compactors: {counts}")
    assert all(a["ids"] for a in acks), "a postpone write did not land"
    assert sum(c["compacted"] for c in counts) > 0
    tidelake.open_table(t.path).compact()
    expected: dict[tuple[int, str], int] = {}
    for a in sorted(acks, key=lambda a: a["round"]):
        for k in a["keys"]:
            expected[(k, "a")] = a["value"]
    assert _visible(tidelake.open_table(t.path)) == expected
    assert not any(f["bucket"] == -2 for f in _files(tidelake.open_table(t.path)))


def _compact_until(path: str, go: str, stop: str, ready: str, n: int) -> dict[str, int]:
    from _workers import start_together

    start_together(ready, f"compactor{n}", go)
    done = {"compacted": 0, "conflicts": 0, "nothing": 0}
    while not os.path.exists(stop):
        try:
            sid = tidelake.open_table(path).compact()
            done["compacted" if sid is not None else "nothing"] += 1
        except tidelake.CommitConflictError:
            done["conflicts"] += 1
        time.sleep(0.01)
    return done


# ---- Java Paimon, both ways ----------------------------------------------------------------------


def _steps() -> list[dict[str, Any]]:
    return [
        {"rows": [[3, "a", 30], [1, "a", 10], [2, "b", 20], [1, "a", 11], [7, "b", 70]]},
        {"rows": [{"kind": "-D", "values": [3, "a", 30]}, [5, "a", 50]]},
        {"rows": [[2, "b", 21], [8, "a", 80], [9, "b", 90]]},
        {"rows": [{"kind": "-D", "values": [9, "b", 90]}, [1, "a", 12]]},
    ]


def _expected(steps: list[dict[str, Any]]) -> dict[tuple[int, str], int]:
    out: dict[tuple[int, str], int] = {}
    for step in steps:
        for r in step.get("rows", []):
            if isinstance(r, list):
                out[(r[0], r[1])] = r[2]
            else:
                out.pop((r["values"][0], r["values"][1]), None)
    return out


def _scenario(name: str, steps: list[dict[str, Any]], mode: str = "stream", **options: str) -> Scenario:
    return Scenario(name, KV, steps, primary_keys=["k", "p"], partition_keys=["p"],
                    options={"bucket": "-2", "postpone.default-bucket-num": "2", **options}, mode=mode)


def _java_compact(java, warehouse: str, sc: Scenario) -> None:
    java.run({**sc.java_job(warehouse, with_steps=False), "existing": True, "steps": [{"compact_postpone": True}]})


def _java_more(java, warehouse: str, sc: Scenario, steps: list[dict[str, Any]]) -> None:
    java.run({**sc.java_job(warehouse, with_steps=False), "existing": True, "steps": steps})


SUM = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}


@pytest.mark.parametrize("mode,producer,engine", [("stream", "none", {}), ("batch", "none", {}),
                                                  ("stream", "input", {}), ("stream", "lookup", {}),
                                                  ("stream", "none", SUM)])
def test_java_writes_postponed_rows_and_both_compactions_agree(java, tmp_path, mode, producer, engine):
    """Java writes a postpone-bucket table; nothing is visible to either reader. A copy is
    compacted by Java's postpone compaction, the original by tidelake's: same rows, same keys in
    the same buckets, each read equally by Java and tidelake. Java then writes again into the
    tidelake-compacted table, tidelake compacts again, and Java still reads what tidelake reads."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    name = f"java_postpone_{mode}_{producer}{'_sum' if engine else ''}"
    sc = _scenario(name, _steps(), mode, **{"changelog-producer": producer, **engine})
    t = java_write(java, ours, sc)
    assert compare_read(java, t, ours, "postpone") == []
    shutil.copytree(ours, theirs)
    _java_compact(java, theirs, sc)
    assert t.compact() is not None
    j = tidelake.Catalog(theirs).get_table(f"db.{sc.name}")
    assert compare_read(java, t, ours, "postpone compacted by tidelake", pypaimon=True) == compare_read(
        java, j, theirs, "postpone compacted by Java", pypaimon=True)
    if not engine:
        assert _visible(t) == _expected(sc.steps)
    assert _keys_per_bucket(t) == _keys_per_bucket(j)
    last = t.refresh().latest_snapshot().id
    changes = [sorted(x.changes(last - 1, last).to_pylist(), key=str) for x in (t, j)]
    assert changes[0] == changes[1]
    more = [{"rows": [[1, "a", 13], [4, "b", 40]]}, {"rows": [{"kind": "-D", "values": [8, "a", 80]}]}]
    _java_more(java, ours, sc, more)
    assert t.refresh().compact() is not None
    compare_read(java, t.refresh(), ours, "postpone, Java wrote after tidelake compacted")
    if not engine:
        assert _visible(t) == _expected(sc.steps + more)
    for s in t.refresh().snapshots():
        compare_read(java, t.refresh(), ours, "postpone", snapshot_id=s.id)
        if s.id > 1:  # postponed rows stream as they are written (no changelog producer)
            compare_changes(java, t.refresh(), ours, "postpone", s.id - 1, s.id)


def test_tidelake_writes_postponed_rows_java_compacts_them_as_tidelake_does(java, tmp_path):
    """tidelake writes a postpone-bucket table (Java reads nothing either); Java's compaction of a
    copy and tidelake's of the original agree; then tidelake writes more (a new partition too)
    into both and both compact again: equal reads and bucket contents."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    sc = _scenario("tidelake_postpone", _steps())
    t = tidelake_write(java, ours, sc)
    assert compare_read(java, t, ours, "postpone") == []
    shutil.copytree(ours, theirs)
    j = tidelake.Catalog(theirs).get_table(f"db.{sc.name}")
    more = [{"rows": [[1, "a", 14], [6, "c", 60], [2, "b", 22]]}, {"rows": [{"kind": "-D", "values": [5, "a", 0]}]}]
    for round_steps in ([], more):
        for warehouse, table in ((ours, t), (theirs, j)):
            for step in round_steps:
                _commit_step(table.refresh(), step)
        _java_compact(java, theirs, sc)
        assert t.refresh().compact() is not None
        t, j = t.refresh(), j.refresh()
        assert compare_read(java, t, ours, "postpone by tidelake") == compare_read(java, j, theirs, "postpone by Java")
        assert _keys_per_bucket(t) == _keys_per_bucket(j)
    assert _visible(t) == _expected(sc.steps + more)


def _commit_step(t: tidelake.Table, step: dict[str, Any]) -> None:
    inserts = [r for r in step["rows"] if isinstance(r, list)]
    deletes = [r["values"] for r in step["rows"] if not isinstance(r, list)]
    with t.writer() as w:
        if inserts:
            w.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in inserts], schema=t.schema))
        if deletes:
            w.delete(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in deletes], schema=t.schema))
        t.commit(w.prepare_commit())
