"""Sort compaction (``Table.compact(order_by=..., strategy=...)``, Paimon's ``CALL
sys.compact(order_strategy => ..., order_by => ...)``) and ``clustering.columns`` writes on
bucket-unaware append tables: the rows are the same multiset after as before, in one OVERWRITE
snapshot that replaces only the files read (rows appended meanwhile by another process stay);
``order`` leaves files whose ranges of the first column do not overlap; ``zorder`` and ``hilbert`` on (a, b) let a filter on ``b`` alone
prune clearly more files than before; a sort larger than ``write-buffer-size`` spills to local
files and removes them; refusals raise typed exceptions and commit nothing; clustered writes
write sorted files; on deletion-vector tables the vectors leave with the files sorted, appends
made meanwhile stay and deletes racing the sort stay deleted."""

from __future__ import annotations

import pathlib
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tidelake
from conftest import assert_same_rows

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("s", pa.string()), ("p", pa.int32())])


def _rows(n: int, seed: int, p: int = 0) -> pa.Table:
    rng = random.Random(seed)
    a = [rng.randrange(1000) for _ in range(n)]
    b = [rng.randrange(1000) for _ in range(n)]
    return pa.table({"a": a, "b": b, "s": [f"s{x % 97}" for x in a], "p": [p] * n}, schema=SCHEMA)


def _create(path: pathlib.Path, options: dict[str, str] | None = None, partitioned: bool = False,
            **kwargs) -> tidelake.Table:
    return tidelake.create_table(path, SCHEMA, partition_keys=["p"] if partitioned else None,
                                 options={"target-file-size": "48kb", **(options or {})}, **kwargs)


def _files(t: tidelake.Table, flt=None) -> list:
    """The data files a read with filter ``flt`` plans (after pruning)."""
    return t.scan(filter=flt).native_read().files


def _file_rows(t: tidelake.Table, f) -> pa.Table:
    return pq.ParquetFile(pathlib.Path(t.path) / f.path).read()


def _filled(path: pathlib.Path, commits: int = 12, rows: int = 4000, **options: str) -> tidelake.Table:
    t = _create(path, options)
    for i in range(commits):
        t.write(_rows(rows, i))
    return t


def test_order_rewrites_in_one_overwrite_with_disjoint_ranges(tmp_path):
    t = _filled(tmp_path / "t")
    before = t.to_arrow()
    sid = t.compact(order_by=["a"], strategy="order")
    assert t.snapshot(sid).commit_kind == "OVERWRITE" and t.latest_snapshot().id == sid
    assert_same_rows(t.to_arrow(), before)
    ranges = sorted((pc.min(r["a"]).as_py(), pc.max(r["a"]).as_py())
                    for r in (_file_rows(t, f) for f in _files(t)))
    assert len(ranges) > 3
    for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
        assert hi <= lo, ranges  # a value may straddle two files at most at their boundary
    assert len(_files(t, [("a", "=", 500)])) <= 2


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_curves_prune_on_the_second_column(tmp_path, strategy):
    t = _filled(tmp_path / strategy, **{"target-file-size": "12kb"})
    flt = [("b", ">=", 100), ("b", "<", 130)]
    expected = t.to_arrow(filter=flt)
    before = len(_files(t, flt))
    assert before == len(_files(t))  # unsorted: every file spans every b
    t.compact(order_by=["a", "b"], strategy=strategy)
    after, total = len(_files(t, flt)), len(_files(t))
    assert total > 8 and after <= total // 2, (after, total)
    assert_same_rows(t.to_arrow(filter=flt), expected)
    # the first column prunes as well
    assert len(_files(t, [("a", "<", 100)])) <= total // 2


def test_only_selected_partitions_are_rewritten(tmp_path):
    t = _create(tmp_path / "t", partitioned=True)
    for i in range(3):
        for p in (0, 1, 2):
            t.write(_rows(500, i * 10 + p, p))
    before = t.to_arrow()
    files = {p: {f.file_name for f in _files(t, [("p", "=", p)])} for p in (0, 1, 2)}
    sid = t.compact(partitions=[{"p": 1}, {"p": 2}], order_by=["b"])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert_same_rows(t.to_arrow(), before)
    assert {f.file_name for f in _files(t, [("p", "=", 0)])} == files[0]
    for p in (1, 2):
        now = {f.file_name for f in _files(t, [("p", "=", p)])}
        assert now and not now & files[p]
    # nothing selected: nothing committed
    assert t.compact(partitions=[{"p": 9}], order_by=["b"]) is None
    assert t.latest_snapshot().id == sid


def test_deleted_rows_stay_deleted(tmp_path):
    t = _filled(tmp_path / "t", commits=3, rows=1000, **{"deletion-vectors.enabled": "true"})
    t.delete([("a", "<", 500)])
    before = t.to_arrow()
    t.compact(order_by=["a", "b"], strategy="zorder")
    assert_same_rows(t.to_arrow(), before)
    assert pc.min(t.to_arrow()["a"]).as_py() >= 500


def test_a_sort_larger_than_the_write_buffer_spills_and_cleans_up(tmp_path, monkeypatch):
    spill_root = tmp_path / "tmp"
    spill_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(spill_root))
    t = _filled(tmp_path / "t", commits=6, rows=10_000,
                **{"write-buffer-size": "256kb", "local-sort.max-num-file-handles": "3"})
    before = t.to_arrow()
    t.compact(order_by=["a"], strategy="order")
    assert_same_rows(t.to_arrow(), before)
    col = pa.concat_arrays([_file_rows(t, f)["a"].combine_chunks()
                            for f in sorted(_files(t), key=lambda f: _file_rows(t, f)["a"][0].as_py())])
    assert col.to_pylist() == sorted(col.to_pylist())
    assert list(spill_root.iterdir()) == []  # the spilled runs are gone


def test_refusals_are_typed_and_commit_nothing(tmp_path):
    pk = tidelake.create_table(tmp_path / "pk", SCHEMA, primary_keys=["a"], options={"bucket": "1"})
    pk.upsert(_rows(10, 1))
    with pytest.raises(tidelake.UnsupportedError, match="bucket-unaware append"):
        pk.compact(order_by=["b"])
    bucketed = _create(tmp_path / "bucketed", {"bucket": "2", "bucket-key": "a"})
    bucketed.write(_rows(10, 1))
    with pytest.raises(tidelake.UnsupportedError, match="bucket-unaware append"):
        bucketed.compact(order_by=["b"], strategy="zorder")
    t = _create(tmp_path / "t", partitioned=True)
    t.write(_rows(10, 1))
    latest = t.latest_snapshot().id
    with pytest.raises(tidelake.InvalidArgumentError, match="partition cols"):
        t.compact(order_by=["a", "p"])
    with pytest.raises(tidelake.InvalidArgumentError, match="Can't find column nope"):
        t.compact(order_by=["a", "nope"])
    with pytest.raises(tidelake.InvalidArgumentError, match="at least two columns"):
        t.compact(order_by=["a"], strategy="hilbert")
    with pytest.raises(tidelake.InvalidArgumentError, match="spiral"):
        t.compact(order_by=["a"], strategy="spiral")
    with pytest.raises(tidelake.InvalidArgumentError, match="give order_by"):
        t.compact(strategy="zorder")
    with pytest.raises(tidelake.InvalidArgumentError, match="partition"):
        t.compact(partitions=[{"a": 1}], order_by=["b"])
    assert t.refresh().latest_snapshot().id == latest
    inc = _create(tmp_path / "inc", {"clustering.incremental": "true", "clustering.columns": "a,b"})
    inc.write(_rows(10, 1))
    with pytest.raises(tidelake.InvalidArgumentError, match="clustering.incremental"):
        inc.compact(order_by=["a", "b"])
    # Paimon's incremental clustering: one level-0 run is below num-sorted-run.compaction-trigger
    assert inc.compact() is None
    assert inc.latest_snapshot().id == 1


@pytest.mark.parametrize("strategy,columns", [("order", "a"), ("zorder", "a,b"), ("hilbert", "a,b")])
def test_clustering_columns_writes_sort_each_write(tmp_path, strategy, columns):
    t = _create(tmp_path / "t", {"clustering.columns": columns, "clustering.strategy": strategy})
    data = _rows(3000, 7)
    t.write(data)
    (f,) = _files(t)
    written = _file_rows(t, f)
    assert_same_rows(written.select(["a", "b", "s", "p"]), data)
    if strategy == "order":
        assert written["a"].to_pylist() == sorted(data["a"].to_pylist())
    else:
        # a curve: neither the input order nor sorted by a alone, and locally clustered in b
        assert written["a"].to_pylist() != data["a"].to_pylist()
        assert written["a"].to_pylist() != sorted(data["a"].to_pylist())
        first = written.slice(0, 300)
        assert pc.max(first["b"]).as_py() - pc.min(first["b"]).as_py() < 600
    # a second write is sorted on its own
    t.write(_rows(100, 8))
    assert len(_files(t)) == 2 and t.to_arrow().num_rows == 3100


def test_clustering_auto_and_none_strategies(tmp_path):
    auto = _create(tmp_path / "auto", {"clustering.columns": "a"})
    data = _rows(500, 3)
    auto.write(data)
    (f,) = _files(auto)
    assert _file_rows(auto, f)["a"].to_pylist() == sorted(data["a"].to_pylist())
    plain = _create(tmp_path / "plain", {"clustering.columns": "a", "clustering.strategy": "none"})
    plain.write(data)
    (f,) = _files(plain)
    assert _file_rows(plain, f)["a"].to_pylist() == data["a"].to_pylist()
    bad = _create(tmp_path / "bad", {"clustering.columns": "a,nope"})
    with pytest.raises(tidelake.InvalidArgumentError, match="nope"):
        bad.write(data)


def test_rows_appended_while_a_sort_runs_stay(tmp_path):
    """A sort compaction in another process while this one appends: every acknowledged append
    is read afterwards (the sort replaces the files it read, not the partition), and the sort's
    own snapshot lands among the appends."""
    import subprocess
    import sys
    import time

    # the appender commits in a loop: the sort may lose many commit races before it lands
    t = _filled(tmp_path / "t", commits=20, rows=20000,
                **{"write-buffer-size": "1 mb", "commit.max-retries": "1000"})
    before = t.to_arrow().num_rows
    script = ("import sys, tidelake; t = tidelake.open_table(sys.argv[1]); "
              "print(t.compact(order_by=['a', 'b'], strategy='zorder'))")
    sort = subprocess.Popen([sys.executable, "-c", script, t.path], stdout=subprocess.PIPE, text=True)
    appended = []
    while sort.poll() is None or not appended:
        key = 10_000_000 + len(appended)
        appended.append(t.write(pa.table({"a": [key], "b": [key], "s": ["late"], "p": [0]}, schema=SCHEMA)).snapshot_id)
        time.sleep(0.05)
    out, _ = sort.communicate(timeout=300)
    assert sort.returncode == 0, out
    kinds = {s.id: s.commit_kind for s in t.snapshots()}
    sorted_at = max(i for i, k in kinds.items() if k == "OVERWRITE")
    # appends landed while the sort ran (its snapshot came after several of them)
    assert sum(i < sorted_at for i in appended) >= 3, (appended, sorted_at)
    rows = t.to_arrow()
    late = pc.greater_equal(rows["a"], 10_000_000)
    assert sorted(rows.filter(late)["a"].to_pylist()) == [10_000_000 + i for i in range(len(appended))]
    assert rows.num_rows == before + len(appended)


def test_deletion_vectors_leave_with_their_files_and_appends_stay(tmp_path):
    """A sort of a deletion-vector table replaces only the files it read, as without vectors:
    the vectors of those files leave with them (no index file names a removed file) and rows
    appended meanwhile by another process stay."""
    import subprocess
    import sys

    t = _filled(tmp_path / "t", commits=6, rows=4000,
                **{"deletion-vectors.enabled": "true", "commit.max-retries": "1000"})
    t.delete([("a", "<", 300)])
    assert t.system("table_indexes").num_rows > 0
    kept = t.to_arrow()
    script = ("import sys, tidelake; t = tidelake.open_table(sys.argv[1]); "
              "print(t.compact(order_by=['a', 'b'], strategy='zorder'))")
    sort = subprocess.Popen([sys.executable, "-c", script, t.path], stdout=subprocess.PIPE, text=True)
    late = []
    while sort.poll() is None or not late:
        key = 10_000_000 + len(late)
        t.write(pa.table({"a": [key], "b": [key], "s": ["late"], "p": [0]}, schema=SCHEMA))
        late.append(key)
    out, _ = sort.communicate(timeout=300)
    assert sort.returncode == 0, out
    assert t.latest_snapshot().commit_kind in ("APPEND", "OVERWRITE")
    rows = t.to_arrow()
    is_late = pc.greater_equal(rows["a"], 10_000_000)
    assert sorted(rows.filter(is_late)["a"].to_pylist()) == late
    assert_same_rows(rows.filter(pc.invert(is_late)), kept)
    assert t.system("table_indexes").num_rows == 0, "the sorted rows need no vector"
    assert not any(f.has_deletion_vector for f in _files(t))


def _delete_keys(path: str, keys: list[int], out: str) -> None:
    """Delete ``a = k`` for each key (another process) in bursts of five with pauses between,
    recording each acknowledged delete."""
    import time

    t = tidelake.open_table(path)
    with open(out, "w") as acked:
        for i, k in enumerate(keys):
            try:
                t.delete([("a", "=", k)])
            except tidelake.CommitConflictError:
                continue
            acked.write(f"{k}\n")
            acked.flush()
            if i % 5 == 4:
                time.sleep(2)


def test_a_sort_racing_deletes_never_brings_a_deleted_row_back(tmp_path):
    """Deletes by deletion vector in another process while sorts rewrite the same files: every
    delete that was acknowledged stays deleted whichever commit wins (a delete landing while a
    sort runs makes the sort a conflict; a delete planned before the sort landed and committed
    after it is a conflict too; later deletes mark the sorted files). The sort is retried until
    it lands between two bursts of deletes."""
    import multiprocessing
    import time

    t = _filled(tmp_path / "t", commits=8, rows=4000, **{"deletion-vectors.enabled": "true"})
    before = t.to_arrow()
    keys = list(range(0, 1000, 25))
    acked_path = str(tmp_path / "acked")
    deleter = multiprocessing.get_context("spawn").Process(target=_delete_keys,
                                                           args=(t.path, keys, acked_path))
    deleter.start()
    conflicts = 0
    for _ in range(30):
        try:
            t.compact(order_by=["a", "b"], strategy="zorder")
            break
        except tidelake.CommitConflictError:
            conflicts += 1
    else:
        pytest.fail("the sort never landed between the deletes")
    deleter.join(timeout=600)
    assert deleter.exitcode == 0
    acked = {int(x) for x in open(acked_path).read().split()}
    assert len(acked) >= len(keys) // 2, (len(acked), conflicts)
    rows = tidelake.open_table(t.path).to_arrow()
    assert not (acked & set(rows["a"].to_pylist())), f"acknowledged deletes came back ({conflicts} sort conflicts)"
    # every other row is there: the keys whose delete was refused are the only ones in doubt
    refused = pa.array(sorted(set(keys) - acked), pa.int64())
    gone = pa.array(sorted(acked), pa.int64())
    expected = before.filter(pc.invert(pc.is_in(before["a"], gone)))
    assert_same_rows(rows.filter(pc.invert(pc.is_in(rows["a"], refused))),
                     expected.filter(pc.invert(pc.is_in(expected["a"], refused))))
    # the refused sorts and deletes left no file behind (data or deletion-vector index)
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
