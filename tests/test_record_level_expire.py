"""Record-level expiry (``record-level.expire-time`` + ``record-level.time-field``), two-way with
Java Paimon 1.3.1: rows of a primary-key table whose time is older than now minus the expire
time disappear when a compaction rewrites the files holding them (each file filtered before the
merge, so an expired newer version of a key uncovers its older live one), reads before that
still return them, and what one side compacts the other reads row for row.

Times are far in the past (1973, 2001) or the future (2036, 2100) so outcomes do not depend on
when the tests run; the test of a file expiring after it reached the max level moves tidelake's
clock (``_internal.set_clock_offset``, development builds).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, to_arrow
from tidelake import _internal

# (Paimon type, its Arrow type, an expired time, a live time) in canonical scenario values
TIMES: dict[str, tuple[str, pa.DataType, Any, Any]] = {
    "int": ("INT", pa.int32(), 100_000_000, 2_100_000_000),
    "bigint_s": ("BIGINT", pa.int64(), 100_000_000, 4_102_444_800),
    "bigint_ms": ("BIGINT", pa.int64(), 1_000_000_000_000, 4_102_444_800_000),
    "ts3": ("TIMESTAMP(3)", pa.timestamp("ms"), "1973-03-03T09:46:40.000000000", "2100-01-01T00:00:00.000000000"),
    "ltz6": ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC"), "1973-03-03T09:46:40.000000000",
             "2100-01-01T00:00:00.000000000"),
}

# deletion-vector tables compact at every commit (lookup, level 0 forced up): their writes
# already drop expired rows, and batch reads do not see level 0
ENGINES: dict[str, dict[str, str]] = {
    "dedup": {},
    "dv": {"deletion-vectors.enabled": "true"},
    "sum": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}


def _commits(old: Any, new: Any) -> list[list[list[Any]]]:
    """Rows ``[id, ts, v]`` of five commits: the first three Java's (or tidelake's), then two
    more. Key 2's newest version expired while an older one lives; key 1 the reverse."""
    return [
        [[1, old, 1], [2, new, 2], [3, None, 3]],
        [[4, old, 4], [5, new, 5], [1, new, 11]],
        [[2, old, 22]],
        [[6, old, 6], [7, new, 7]],
        [[8, None, 8], [4, new, 44]],
    ]


def _expected(commits: list[list[list[Any]]], engine: str) -> dict[int, int]:
    """``{id: v}`` after a compaction that rewrote every file: expired rows dropped from each
    file before the merge (Java wraps the rewriter's file readers), then merged."""
    old = commits[0][0][1]
    merged: dict[int, int] = {}
    for rows in commits:
        for k, ts, v in rows:
            if ts == old:
                continue
            merged[k] = merged.get(k, 0) + v if engine == "sum" else v
    return merged


def _values(t: tidelake.Table) -> dict[int, int]:
    rows = t.to_arrow().to_pylist()
    return {r["id"]: r["v"] for r in rows}


def _scenario(name: str, kind: str, engine: str, commits: list[list[list[Any]]]) -> Scenario:
    paimon_type = TIMES[kind][0]
    options = {"bucket": "1", "record-level.expire-time": "1 d", "record-level.time-field": "ts",
               **ENGINES[engine]}
    return Scenario(name, [("id", "BIGINT NOT NULL"), ("ts", paimon_type), ("v", "INT")],
                    [{"rows": rows} for rows in commits], ["id"], [], options, mode="batch")


def _write(t: tidelake.Table, rows: list[list[Any]]) -> None:
    t.write(to_arrow(t.schema, rows))


def _compacts(t: tidelake.Table) -> int:
    return sum(s.commit_kind == "COMPACT" for s in t.snapshots())


@pytest.mark.parametrize(("kind", "engine"), [("int", "dedup"), ("bigint_ms", "dedup"), ("bigint_s", "dv"),
                                              ("ts3", "sum"), ("ltz6", "dedup")])
def test_java_writes_tidelake_compacts(java, tmp_path, kind, engine):
    """Java creates the table and writes three commits; tidelake reads every row (expired ones
    too) as Java does, writes two more commits, compacts normally (five sorted runs: every run
    rewritten), then writes expired and live rows again and compacts fully: after each
    compaction the expired rows are gone and Java reads what tidelake reads."""
    wh = str(tmp_path)
    _, _, old, new = TIMES[kind]
    commits = _commits(old, new)
    sc = _scenario(f"rle_{kind}_{engine}", kind, engine, commits[:3])
    t = java_write(java, wh, sc)
    if engine != "dv":
        assert set(_values(t)) == {1, 2, 3, 4, 5}
        assert _values(t)[2] == (24 if engine == "sum" else 22)  # key 2's expired version shows
    compare_read(java, t, wh, "record-level java wrote")

    before = _compacts(t)
    for rows in commits[3:]:
        _write(t, rows)
    t.compact()
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert _compacts(t) > before
    assert _values(t) == _expected(commits, engine)
    compare_read(java, t, wh, "record-level tidelake compacted")

    more = [[9, old, 9], [10, new, 10], [7, old, 77]]
    _write(t, more)
    if engine != "dv":
        assert 9 in _values(t)  # not compacted yet: expired rows are read
    t.compact(full=True)
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert _values(t) == _expected([*commits, more], engine)
    compare_read(java, t, wh, "record-level tidelake full compaction")


@pytest.mark.parametrize(("kind", "engine"), [("bigint_ms", "dedup"), ("int", "dv"), ("ts3", "sum")])
def test_tidelake_writes_java_compacts(java, tmp_path, kind, engine):
    """tidelake creates the table and writes it; Java's full compaction expires the rows
    tidelake's would, and tidelake reads what Java wrote row for row."""
    wh = str(tmp_path)
    _, arrow_type, old, new = TIMES[kind]
    commits = _commits(old, new)
    sc = _scenario(f"rle_rev_{kind}_{engine}", kind, engine, [])
    cat = tidelake.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("id", pa.int64(), False), ("ts", arrow_type), ("v", pa.int32())])
    t = cat.create_table(f"db.{sc.name}", schema, primary_keys=["id"], options=sc.options)
    for rows in commits[:4]:
        _write(t, rows)
    if engine != "dv":
        assert set(_values(t)) == {1, 2, 3, 4, 5, 6, 7}
    compare_read(java, t, wh, "record-level tidelake wrote")
    before = _compacts(t)
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [{"compact": True}]})
    t = cat.get_table(f"db.{sc.name}")
    if engine != "dv":  # tidelake's own commits already compacted the deletion-vector table
        assert _compacts(t) == before + 1
    assert _values(t) == _expected(commits[:4], engine)
    compare_read(java, t, wh, "record-level java compacted")


@pytest.fixture
def clock() -> Iterator[None]:
    yield
    _internal.set_clock_offset(0)


def test_max_level_file_expiring_later_is_rewritten(java, tmp_path, clock):
    """A bucket already compacted into one max-level run whose oldest row expires afterwards:
    the next full compaction rewrites that file (Java ``pickFullCompaction`` with
    ``isExpireFile``) instead of leaving it, and Java reads the result."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("id", pa.int64(), False), ("ts", pa.int32()), ("v", pa.int32())])
    t = cat.create_table("db.later", schema, primary_keys=["id"], bucket=1,
                         options={"record-level.expire-time": "1 h", "record-level.time-field": "ts"})
    now = int(time.time())
    t.write(pa.table({"id": [1, 2, 3], "ts": [now, now + 30 * 86_400, None], "v": [1, 2, 3]}, schema=schema))
    t.compact(full=True)
    assert _values(t) == {1: 1, 2: 2, 3: 3}
    assert {f["level"] for f in t.system("files").to_pylist()} == {5}
    assert t.compact(full=True) is None  # nothing expired: nothing to do
    _internal.set_clock_offset(2 * 3600 * 1000)  # two hours later: row 1 expired
    assert t.compact(full=True) is not None
    t = cat.get_table("db.later")
    assert _values(t) == {2: 2, 3: 3}
    assert {f["level"] for f in t.system("files").to_pylist()} == {5}
    compare_read(java, t, wh, "record-level max-level rewrite")


@pytest.mark.parametrize(("options", "error", "says"), [
    ({"record-level.expire-time": "1 d"}, tidelake.InvalidArgumentError, "'record-level.time-field'"),
    ({"record-level.expire-time": "1 d", "record-level.time-field": "nope"}, tidelake.SchemaMismatchError,
     "not a column"),
    ({"record-level.expire-time": "1 d", "record-level.time-field": "s"}, tidelake.SchemaMismatchError,
     "not INT, BIGINT"),
    ({"record-level.time-field": "s"}, tidelake.SchemaMismatchError, "not INT, BIGINT"),
    ({"record-level.expire-time": "soon", "record-level.time-field": "ts"}, tidelake.InvalidArgumentError,
     "'record-level.expire-time'"),
])
def test_bad_options_are_refused_before_anything_is_written(tmp_path, options, error, says):
    """A time field that is not a column or of another type is refused at create by the schema's
    validation (Java's ``SchemaValidation``), as every invalid schema is; an expire time without
    a time field or that does not parse is refused by the first write, before any file is
    written."""
    schema = pa.schema([("id", pa.int64(), False), ("ts", pa.int64()), ("s", pa.string())])
    path = str(tmp_path / "t")
    with pytest.raises(error, match=says):
        t = tidelake.create_table(path, schema, primary_keys=["id"], bucket=1, options=options)
        t.write(pa.table({"id": [1], "ts": [0], "s": ["a"]}, schema=schema))
    if (tmp_path / "t").exists():
        assert tidelake.open_table(path).snapshots() == []
        assert not list((tmp_path / "t").glob("bucket-*/*"))


def test_append_tables_ignore_the_expiry(tmp_path):
    """Java builds the expiry only in its key-value writer: an append table keeps every row,
    even without a time field."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    t = tidelake.create_table(str(tmp_path / "a"), schema, options={"record-level.expire-time": "1 d"})
    for _ in range(6):
        t.write(pa.table({"id": [1], "ts": [0]}, schema=schema))
    t.compact(full=True)
    assert t.to_arrow().num_rows == 6
