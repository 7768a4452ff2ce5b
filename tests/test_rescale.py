"""Rescale (Paimon's ``rescale`` procedure): :meth:`tidelake.Table.rescale`, ``tidelake
rescale`` and ``CALL sys.rescale`` (in test_spark_sql.py). A partition's rows are rewritten into
another number of buckets in one OVERWRITE snapshot; reads are unchanged, writers keep each
partition's count, and a commit to the partitions while the rows are rewritten refuses the
rescale rather than being replaced (a race between processes below). Java reading and writing
rescaled tables: test_interop_java_rescale.py."""

from __future__ import annotations

import json
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


def _table(path, bucket: int = 2, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], bucket=bucket,
                                 options=options)


def _rows(dt: str, keys: range, v: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(keys), "k": list(keys), "v": [f"{v}{k}" for k in keys]}, schema=SCHEMA)


def _fill(t: tidelake.Table) -> None:
    """Two partitions over several commits, with updates and deletes."""
    for dt in ("a", "b"):
        t.upsert(_rows(dt, range(0, 60), "x"))
        t.upsert(_rows(dt, range(40, 80), "y"))
    t.delete(filter=[("k", "<", 5)])


def _sorted(t: tidelake.Table) -> list[tuple]:
    return sorted((r["dt"], r["k"], r["v"]) for r in t.to_arrow().to_pylist())


def _counts(t: tidelake.Table) -> dict[str, int]:
    return {r["partition"]: r["total_buckets"] for r in t.system("partitions").to_pylist()}


def _buckets(t: tidelake.Table, partition: str) -> set[int]:
    return {f["bucket"] for f in t.system("files").to_pylist() if f["partition"] == "{" + partition + "}"}


def test_rescale_one_partition_then_all(tmp_path):
    t = _table(tmp_path / "t")
    _fill(t)
    before = _sorted(t)
    t.set_option("bucket", "4")  # the partitions written keep 2 buckets until rescaled
    assert _counts(t) == {"dt=a": 2, "dt=b": 2}
    sid = t.rescale(partitions=[{"dt": "a"}])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert _counts(t) == {"dt=a": 4, "dt=b": 2}
    assert _buckets(t, "a") == {0, 1, 2, 3} and _buckets(t, "b") == {0, 1}
    assert _sorted(t) == before
    # writers keep each partition's count; a new partition gets the option's
    t.upsert(pa.concat_tables([_rows("a", range(70, 90), "z"), _rows("b", range(70, 90), "z"),
                               _rows("c", range(0, 10), "z")]))
    assert _counts(t) == {"dt=a": 4, "dt=b": 2, "dt=c": 4}
    after = _sorted(t)
    assert len(after) == len(before) + 2 * 10 + 10
    # the default bucket_num is the table's option
    t.rescale()
    assert _counts(t) == {"dt=a": 4, "dt=b": 4, "dt=c": 4}
    t.rescale(bucket_num=1, partitions=[{"dt": "b"}, {"dt": "c"}])
    assert _counts(t) == {"dt=a": 4, "dt=b": 1, "dt=c": 1}
    assert _sorted(t) == after
    # a key upserted after the rescale lands once, in its new bucket
    t.upsert(_rows("b", range(0, 3), "w"))
    assert [r for r in _sorted(t) if r[0] == "b" and r[1] < 5] == [("b", k, f"w{k}") for k in range(3)]


def test_rescale_a_deletion_vector_table_and_an_append_table(tmp_path):
    dv = _table(tmp_path / "dv", **{"deletion-vectors.enabled": "true"})
    _fill(dv)
    dv.compact(full=True)
    dv.delete(filter=[("k", "in", [10, 11, 50])])  # deletion vectors on the compacted files
    assert dv.system("table_indexes").num_rows > 0
    before = _sorted(dv)
    dv.rescale(bucket_num=3)
    assert _sorted(dv) == before and _counts(dv) == {"dt=a": 3, "dt=b": 3}
    assert dv.system("table_indexes").num_rows == 0  # the rewritten rows need no vector

    append = tidelake.create_table(str(tmp_path / "append"), SCHEMA, partition_keys=["dt"], bucket=2,
                                   options={"bucket-key": "k"})
    append.write(_rows("a", range(0, 50), "x"))
    append.write(_rows("a", range(0, 10), "dup"))  # an append table keeps duplicates
    rows = sorted(map(str, append.to_arrow().to_pylist()))
    append.rescale(bucket_num=5)
    assert sorted(map(str, append.to_arrow().to_pylist())) == rows and _counts(append) == {"dt=a": 5}


def test_rescale_refusals(tmp_path):
    empty = _table(tmp_path / "empty")
    with pytest.raises(tidelake.InvalidArgumentError, match="no snapshot"):
        empty.rescale(bucket_num=4)
    t = _table(tmp_path / "t")
    _fill(t)
    with pytest.raises(tidelake.InvalidArgumentError, match="no data files"):
        t.rescale(bucket_num=4, partitions=[{"dt": "nope"}])
    with pytest.raises(tidelake.InvalidArgumentError, match="bucket_num must be a positive"):
        t.rescale(bucket_num=0)
    dynamic = tidelake.create_table(str(tmp_path / "dynamic"), SCHEMA, primary_keys=["dt", "k"],
                                    partition_keys=["dt"], bucket=-1)
    dynamic.upsert(_rows("a", range(3), "x"))
    with pytest.raises(tidelake.UnsupportedError, match="'bucket' = '-1'"):
        dynamic.rescale(bucket_num=2)
    postpone = _table(tmp_path / "postpone", bucket=-2)
    postpone.upsert(_rows("a", range(20), "x"))
    with pytest.raises(tidelake.InvalidArgumentError, match="needs the resulting bucket_num"):
        postpone.rescale()
    with pytest.raises(tidelake.InvalidArgumentError, match="postpone bucket"):
        postpone.rescale(bucket_num=2)  # its rows are not in real buckets yet: they would be dropped
    postpone.compact()
    postpone.upsert(_rows("b", range(5), "x"))  # b holds postponed rows, a no longer does
    postpone.rescale(bucket_num=3, partitions=[{"dt": "a"}])
    assert _counts(postpone)["dt=a"] == 3
    postpone.compact()
    assert len(_sorted(postpone)) == 25
    # nothing was committed by the refusals
    assert [s.commit_kind for s in t.snapshots()].count("OVERWRITE") == 0


def test_option_changes_follow_javas_rules(tmp_path):
    """Java's ``checkAlterTableOption`` / ``checkResetTableOption``, once a table has a snapshot:
    its immutable options and the bucket mode stay; before the first snapshot, they may change."""
    t = _table(tmp_path / "t")
    t.set_option("merge-engine", "partial-update")  # no snapshot yet: allowed, as in Java
    t.remove_option("merge-engine")
    t.set_option("bucket", "3")
    _fill(t)
    for key, value in (("merge-engine", "first-row"), ("bucket-key", "k"), ("ignore-delete", "true"),
                       ("rowkind.field", "v")):
        with pytest.raises(tidelake.UnsupportedError, match=f"'{key}'"):
            t.set_option(key, value)
    with pytest.raises(tidelake.UnsupportedError, match="Cannot reset bucket"):
        t.remove_option("bucket")
    with pytest.raises(tidelake.UnsupportedError, match="Cannot change bucket to -1"):
        t.set_option("bucket", "-1")
    t.set_option("sequence.field", "v")  # Java lets it change
    assert t.options["sequence.field"] == "v" and t.options["bucket"] == "3"
    append = tidelake.create_table(str(tmp_path / "append"), SCHEMA)
    with pytest.raises(tidelake.InvalidArgumentError, match="bucket-key"):
        append.set_option("bucket", "4")  # a fixed-bucket append table needs its key
    append.set_option("bucket-key", "k")
    append.set_option("bucket", "4")
    append.write(_rows("a", range(3), "x"))
    assert append.to_arrow().num_rows == 3


def test_rescale_from_the_cli(tmp_path):
    t = _table(tmp_path / "t")
    _fill(t)
    before = _sorted(t)
    result = CliRunner().invoke(cli.main, ["rescale", t.path, "--bucket-num", "3", "--partition", "dt=b", "--json"],
                                prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["bucket_counts"] == [2, 3]
    assert _sorted(t) == before
    result = CliRunner().invoke(cli.main, ["rescale", str(tmp_path / "nope"), "--bucket-num", "3"],
                                prog_name="tidelake")
    assert result.exit_code != 0 and "nope" in result.output


_RESCALE = """
import sys, tidelake
t = tidelake.open_table(sys.argv[1])
try:
    print("committed", t.rescale(bucket_num=4, partitions=[{"dt": "a"}]))
except tidelake.CommitConflictError as e:
    print("conflict", e)
"""


def test_rows_upserted_while_a_rescale_runs_are_never_replaced(tmp_path):
    """A rescale in another process while this one upserts into the partition it rewrites: the
    rescale is refused (nothing committed, its files deleted) and every acknowledged upsert is
    read afterwards; without writers it lands."""
    # write-only: a one-row upsert never waits for a compaction, which on a loaded machine gave
    # the rescale time to read and commit between two upserts (then it lands, rightly)
    t = _table(tmp_path / "t", **{"write-buffer-size": "1 mb", "commit.max-retries": "1000", "write-only": "true"})
    for i in range(6):
        t.upsert(_rows("a", range(i * 40_000, (i + 1) * 40_000), "x"))
    before = _sorted(t)
    rescale = subprocess.Popen([sys.executable, "-c", _RESCALE, t.path], stdout=subprocess.PIPE, text=True)
    acknowledged: list[int] = []
    while rescale.poll() is None or not acknowledged:
        key = 10_000_000 + len(acknowledged)
        t.upsert(_rows("a", range(key, key + 1), "late"))
        acknowledged.append(key)
        time.sleep(0.02)
    out, _ = rescale.communicate(timeout=600)
    assert rescale.returncode == 0, out
    assert out.startswith("conflict") and "changed since" in out, out
    assert len(acknowledged) >= 3
    rows = _sorted(t)
    assert [r[1] for r in rows if r[1] >= 10_000_000] == acknowledged
    assert len(rows) == len(before) + len(acknowledged)
    assert _counts(t) == {"dt=a": 2}
    # the refused rescale left no file behind
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    # alone, it lands
    done = subprocess.run([sys.executable, "-c", _RESCALE, t.path], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("committed"), done.stdout
    assert _counts(t.refresh()) == {"dt=a": 4} and _sorted(t) == rows
