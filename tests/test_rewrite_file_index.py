"""Rewriting data-file indexes (Paimon's ``rewrite_file_index`` procedure):
:meth:`tidelake.Table.rewrite_file_index`, ``tidelake rewrite-file-index`` and ``CALL
sys.rewrite_file_index`` (in test_spark_sql.py). Files written before ``file-index.*`` options
were set get the indexes writers now build, in one COMPACT snapshot, so that plans skip them;
rows never change, and a compaction of the files meanwhile refuses the rewrite (a race between
processes below). Java reading and rewriting: test_interop_java_rewrite_file_index.py."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from tidelake import cli

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                    pa.field("v", pa.string())])
FILES = 4
KEYS = 40


def _rows(dt: str, keys: list[int]) -> pa.Table:
    return pa.table({"dt": [dt] * len(keys), "k": keys, "v": [f"v{k:03d}" for k in keys]}, schema=SCHEMA)


def _keys(i: int) -> list[int]:
    """File i's keys: those with k % FILES == i, plus both ends, so that every file's statistics
    span the whole key range and only an index can skip it."""
    return sorted({0, KEYS - 1} | {k for k in range(KEYS) if k % FILES == i})


def _table(path: pathlib.Path, pk: bool = False, **options: str) -> tidelake.Table:
    t = tidelake.create_table(str(path), SCHEMA, primary_keys=["dt", "k"] if pk else None, partition_keys=["dt"],
                              bucket=1 if pk else -1, options=options)
    for dt in ("a", "b"):
        for i in range(FILES):
            t.write(_rows(dt, _keys(i)))
    return t


def _planned(t: tidelake.Table, filter: list) -> int:
    """Rows of the files a plan with ``filter`` reads."""
    return sum(s.row_count for s in t.scan(filter=filter).splits())


def _sorted(t: tidelake.Table) -> list[tuple]:
    return sorted((r["dt"], r["k"], r["v"]) for r in t.to_arrow().to_pylist())


def _index_files(t: tidelake.Table) -> set[str]:
    return {p.name for p in pathlib.Path(t.path).glob("dt=*/bucket-*/*.index")}


# k = 5 and v = 'v006' are each in one file of a partition
K5 = [("dt", "=", "a"), ("k", "=", 5)]
V6 = [("dt", "=", "a"), ("v", "=", "v006")]
ONE_FILE = len(_keys(1))


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index_file"])
def test_indexes_added_after_writing_skip_files_once_rewritten(tmp_path, embedded):
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1mb" if embedded else "1b"})
    before = _sorted(t)
    every_file = sum(len(_keys(i)) for i in range(FILES))
    assert _planned(t, K5) == _planned(t, V6) == every_file
    t.set_option("file-index.bloom-filter.columns", "k").set_option("file-index.bitmap.columns", "v")
    t.set_option("file-index.bloom-filter.k.items", "100")
    sid = t.rewrite_file_index()
    assert t.snapshot(sid).commit_kind == "COMPACT"
    assert _planned(t, K5) == _planned(t, V6) == ONE_FILE
    assert _planned(t, [("dt", "=", "a"), ("k", "=", 1000)]) <= ONE_FILE  # within a bloom filter's error
    assert _sorted(t) == before and _sorted(t.refresh()) == before
    assert len(t.system("files")) == 2 * FILES  # the same data files
    assert len(_index_files(t)) == (0 if embedded else 2 * FILES)
    # the indexes are what a writer builds: a file written now has the same kind of index
    assert t.rewrite_file_index() is None  # nothing changes again
    t.write(_rows("a", [5, 6]))
    assert _planned(t, K5) == ONE_FILE + 2
    # and they survive compaction (its writer builds them itself)
    t.compact(full=True)
    assert _sorted(t) == sorted(before + [("a", 5, "v005"), ("a", 6, "v006")])


def test_only_the_partitions_given_are_rewritten(tmp_path):
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b"})
    t.set_option("file-index.bloom-filter.columns", "k")
    t.rewrite_file_index(partitions=[{"dt": "a"}])
    assert _planned(t, K5) == ONE_FILE
    assert _planned(t, [("dt", "=", "b"), ("k", "=", 5)]) == sum(len(_keys(i)) for i in range(FILES))
    assert {n.split(".")[0] for n in _index_files(t)} == {f.split(".")[0] for f in _files(t, "a")}
    t.rewrite_file_index(partitions=[{"dt": "b"}])
    assert _planned(t, [("dt", "=", "b"), ("k", "=", 5)]) == ONE_FILE


def _files(t: tidelake.Table, dt: str) -> list[str]:
    return [f["file_path"].rsplit("/", 1)[1] for f in t.system("files").to_pylist() if f["partition"] == "{" + dt + "}"]


def test_indexes_of_columns_no_longer_configured_are_dropped(tmp_path):
    """The index after a rewrite is exactly what the options ask for; a replaced index file is
    kept for older snapshots (a new name, never overwritten) and goes when they expire."""
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b",
                                  "file-index.bloom-filter.columns": "k"})
    first = _index_files(t)
    assert len(first) == 2 * FILES and _planned(t, K5) == ONE_FILE
    t.set_option("file-index.bitmap.columns", "v").remove_option("file-index.bloom-filter.columns")
    sid = t.rewrite_file_index()
    assert _planned(t, V6) == ONE_FILE and _planned(t, K5) == sum(len(_keys(i)) for i in range(FILES))
    second = _index_files(t) - first
    assert len(second) == 2 * FILES and all(n.endswith(".parquet-1.index") for n in second), second
    # the snapshot before still reads its own indexes
    assert sum(s.row_count for s in t.scan(filter=K5, snapshot_id=sid - 1).splits()) == ONE_FILE
    t.remove_option("file-index.bitmap.columns")
    t.rewrite_file_index()
    assert _planned(t, V6) == sum(len(_keys(i)) for i in range(FILES))
    assert t.rewrite_file_index() is None
    # the replaced index files go when the snapshots that read them expire (the data files stay)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    assert _index_files(t) == set()
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    assert _sorted(t) == sorted((dt, k, f"v{k:03d}") for dt in "ab" for i in range(FILES) for k in _keys(i))


def test_a_tag_keeps_the_index_files_it_reads(tmp_path):
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b",
                                  "file-index.bloom-filter.columns": "k"})
    first = _index_files(t)
    t.create_tag("before")
    t.set_option("file-index.bitmap.columns", "v").remove_option("file-index.bloom-filter.columns")
    t.rewrite_file_index()
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    assert first < _index_files(t)
    assert sum(s.row_count for s in t.scan(filter=K5, tag="before").splits()) == ONE_FILE
    t.delete_tag("before")
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []


def test_a_table_without_index_options_is_left_alone(tmp_path):
    t = _table(tmp_path / "t")
    snapshots = len(t.snapshots())
    assert t.rewrite_file_index() is None
    assert len(t.refresh().snapshots()) == snapshots
    empty = tidelake.create_table(str(tmp_path / "empty"), SCHEMA, options={"file-index.bloom-filter.columns": "k"})
    assert empty.rewrite_file_index() is None and empty.snapshots() == []


def test_a_primary_key_table_skips_by_its_rewritten_key_indexes(tmp_path):
    """Primary-key tables consult indexes of key columns; files of every level are rewritten,
    and merges read the same rows afterwards."""
    t = _table(tmp_path / "t", pk=True, **{"write-only": "true"})  # no compaction by writers
    t.compact(partitions=[{"dt": "b"}], full=True)  # a file at the top level
    t.upsert(_rows("a", [5]).set_column(2, "v", pa.array(["new"])))
    before = _sorted(t)
    assert ("a", 5, "new") in before
    t.set_option("file-index.bitmap.columns", "k")
    t.rewrite_file_index()
    assert _planned(t, K5) == ONE_FILE + 1  # the file with k = 5 and the upsert's
    assert _planned(t, [("dt", "=", "b"), ("k", "=", 5)]) == KEYS  # the compacted file holds it
    assert _sorted(t) == before
    assert t.to_arrow(filter=K5).to_pylist() == [{"dt": "a", "k": 5, "v": "new"}]
    t.compact(full=True)
    assert _sorted(t) == before


def test_a_renamed_column_is_indexed_under_the_name_each_file_has(tmp_path):
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b"})
    t.rename_column("k", "key")
    t.write(pa.table({"dt": ["a"], "key": [5], "v": ["late"]}, schema=t.schema))
    t.set_option("file-index.bloom-filter.columns", "key")
    t.rewrite_file_index()
    assert _planned(t, [("dt", "=", "a"), ("key", "=", 5)]) == ONE_FILE + 1
    assert sorted(r["v"] for r in t.to_arrow(filter=[("key", "=", 5)]).to_pylist()) == ["late", "v005", "v005"]


def test_an_index_on_an_unknown_column_is_refused(tmp_path):
    t = _table(tmp_path / "t")
    t.set_option("file-index.bloom-filter.columns", "nope")
    with pytest.raises(tidelake.InvalidArgumentError, match="nope"):
        t.rewrite_file_index()
    assert t.refresh().latest_snapshot().commit_kind == "APPEND"


def test_rewrite_file_index_from_the_cli(tmp_path):
    t = _table(tmp_path / "t")
    t.set_option("file-index.bloom-filter.columns", "k")
    runner = CliRunner()
    done = runner.invoke(cli.main, ["rewrite-file-index", t.path, "--partition", "dt=a", "--json"])
    assert done.exit_code == 0, done.output
    sid = json.loads(done.output)["snapshot_id"]
    assert t.refresh().snapshot(sid).commit_kind == "COMPACT" and _planned(t, K5) == ONE_FILE
    again = runner.invoke(cli.main, ["rewrite-file-index", t.path, "--partition", "dt=a"])
    assert again.exit_code == 0 and "nothing to rewrite" in again.output, again.output


_REWRITE = """
import sys
import tidelake
from tidelake import _internal
if len(sys.argv) > 2:
    _internal.set_failpoint("rewrite-file-index-before-commit", sys.argv[2])
t = tidelake.open_table(sys.argv[1])
try:
    print("committed", t.rewrite_file_index())
except tidelake.CommitConflictError as e:
    print("conflict", e)
"""


def test_a_compaction_while_the_indexes_are_rebuilt_refuses_the_rewrite(tmp_path):
    """Another process rewrites the indexes and pauses before its commit; this one compacts the
    files away meanwhile: the rewrite is refused, its index files are deleted and the
    compaction's rows stay. Alone, it lands."""
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b"})
    t.set_option("file-index.bloom-filter.columns", "k")
    before = _sorted(t)
    rewrite = subprocess.Popen([sys.executable, "-c", _REWRITE, t.path, "sleep(6000)"], stdout=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 120
    while len(_index_files(t)) < 2 * FILES:  # the rewrite wrote its index files and waits
        assert rewrite.poll() is None and time.monotonic() < deadline, rewrite.communicate()
        time.sleep(0.05)
    t.compact(full=True)
    out, _ = rewrite.communicate(timeout=600)
    assert rewrite.returncode == 0, out
    assert out.startswith("conflict"), out
    assert t.refresh().latest_snapshot().commit_kind == "COMPACT" and _sorted(t) == before
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    # only the compaction's own index files are left (its writer built them: the option was set)
    assert _index_files(t) == {f + ".index" for dt in "ab" for f in _files(t, dt)}
    done = subprocess.run([sys.executable, "-c", _REWRITE, t.path], capture_output=True, text=True, check=True)
    assert done.stdout == "committed None\n", done.stdout


def test_rows_appended_while_the_indexes_are_rebuilt_are_kept(tmp_path):
    """Appends commit while another process rewrites the indexes: the rewrite lands and every
    acknowledged row is read afterwards."""
    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b"})
    t.set_option("file-index.bloom-filter.columns", "k")
    before = _sorted(t)
    rewrite = subprocess.Popen([sys.executable, "-c", _REWRITE, t.path, "sleep(3000)"], stdout=subprocess.PIPE,
                               text=True)
    acknowledged: list[int] = []
    while rewrite.poll() is None or not acknowledged:
        key = 1000 + len(acknowledged)
        t.write(_rows("a", [key]))
        acknowledged.append(key)
        time.sleep(0.05)
    out, _ = rewrite.communicate(timeout=600)
    assert rewrite.returncode == 0 and out.startswith("committed"), out
    rows = _sorted(t.refresh())
    assert [r[1] for r in rows if r[1] >= 1000] == acknowledged
    assert len(rows) == len(before) + len(acknowledged)
    assert _planned(t, K5) == ONE_FILE


def test_a_failure_before_the_commit_leaves_nothing_behind(tmp_path):
    from tidelake import _internal

    t = _table(tmp_path / "t", **{"file-index.in-manifest-threshold": "1b"})
    t.set_option("file-index.bloom-filter.columns", "k")
    snapshots = len(t.snapshots())
    _internal.set_failpoint("rewrite-file-index-before-commit", "return")
    try:
        with pytest.raises(tidelake.StorageError):
            t.rewrite_file_index()
    finally:
        _internal.set_failpoint("rewrite-file-index-before-commit", "off")
    assert len(t.refresh().snapshots()) == snapshots and _index_files(t) == set()
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    assert t.rewrite_file_index() is not None and len(_index_files(t)) == 2 * FILES
