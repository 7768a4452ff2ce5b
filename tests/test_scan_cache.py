"""A Table object's read cache: what its scans decode of immutable files (manifests, footers,
page indexes, hash indexes) is kept within the budget ``open_table(cache_bytes=...)`` sets, and
never hides a commit: every scan resolves the latest snapshot afresh, so a cached Table sees
what another process committed (appends, upserts, compactions, expirations)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import tidelake

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _rows(ids, v: str) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "v": v} for i in ids], schema=SCHEMA)


def _in_another_process(path: str, code: str) -> None:
    script = textwrap.dedent(f"""
        import pyarrow as pa
        import tidelake
        t = tidelake.open_table({path!r})
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
        def rows(ids, v):
            return pa.Table.from_pylist([{{"id": i, "v": v}} for i in ids], schema=schema)
    """) + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_a_cached_table_sees_commits_of_another_process(tmp_path, bucket):
    path = str(tmp_path / "t")
    tidelake.create_table(path, SCHEMA, primary_keys=["id"],
                          options={"bucket": bucket, "dynamic-bucket.target-row-num": "40"}).upsert(
        _rows(range(100), "a"))
    t = tidelake.open_table(path)
    point = [("id", "=", 7)]
    assert t.to_arrow(filter=point).to_pylist() == [{"id": 7, "v": "a"}]
    assert t.lookup([7]).to_pylist() == [{"id": 7, "v": "a"}]
    assert t._raw.cached_bytes > 0  # manifests, footers and page indexes are kept
    # an upsert of the key and new keys (new buckets of the dynamic table)
    _in_another_process(path, "t.upsert(rows([7, 150, 151], 'b'))")
    assert t.to_arrow(filter=point).to_pylist() == [{"id": 7, "v": "b"}]
    assert t.to_arrow(filter=[("id", "in", [150, 151])]).column("v").to_pylist() == ["b", "b"]
    assert t.lookup([7, 150]).to_pylist() == [{"id": 7, "v": "b"}, {"id": 150, "v": "b"}]
    # a full compaction and an expiration replace every file the cache holds
    _in_another_process(path, """
        t.upsert(rows([7], 'c'))
        t.compact(full=True)
        t.expire_snapshots(retain_max=1, retain_min=1)
    """)
    assert t.to_arrow(filter=point).to_pylist() == [{"id": 7, "v": "c"}]
    assert t.lookup([7]).to_pylist() == [{"id": 7, "v": "c"}]
    assert t.to_arrow().num_rows == 102


def test_the_cache_stays_within_its_budget_and_can_be_off(tmp_path):
    path = str(tmp_path / "t")
    t = tidelake.create_table(path, SCHEMA, primary_keys=["id"], options={"bucket": "4"})
    for start in range(0, 400, 100):
        t.upsert(_rows(range(start, start + 100), "a"))
    small = tidelake.open_table(path, cache_bytes=10_000)  # less than the files' footers need
    off = tidelake.open_table(path, cache_bytes=0)
    for k in (1, 150, 399):
        want = [{"id": k, "v": "a"}]
        assert small.to_arrow(filter=[("id", "=", k)]).to_pylist() == want
        assert off.to_arrow(filter=[("id", "=", k)]).to_pylist() == want
    assert 0 < small._raw.cached_bytes <= 10_000
    assert off._raw.cached_bytes == 0
    with pytest.raises(tidelake.InvalidArgumentError, match="cache_bytes"):
        tidelake.open_table(path, cache_bytes=-1)
