"""Paimon's ``rewrite_file_index`` procedure between Java and tidelake: a table written without
file indexes gets them after ``file-index.*`` options are set, rewritten by tidelake
(:meth:`tidelake.Table.rewrite_file_index`) or by Java's own ``FileIndexProcessor`` (the logic
of Flink's procedure, run by the oracle's ``rewrite_file_index`` job without Flink), embedded in
the manifest or as ``.index`` files; each reads and skips files by the other's indexes, and both
rewrites store the same bytes for every file.

Every file's statistics span the whole range of each column, so only an index skips a file.
Java's verdicts come from its ``FileIndexPredicate`` (the oracle's ``file_index`` job)."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest

import tidelake

from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, compare_read, java_read, java_write, tidelake_write

FILES = 4
KEYS = 60


def _row(x: int, dt: str) -> list[Any]:
    return [x, f"k{x:03d}", dt]


def _steps() -> list[dict]:
    """FILES commits to partitions a and b; commit i holds the x with x % FILES == i plus both
    ends."""
    return [{"rows": [_row(x, dt) for dt in "ab" for x in sorted({0, KEYS - 1} | set(range(i, KEYS, FILES)))]}
            for i in range(FILES)]


def _scenario(name: str, pk: bool, **options: str) -> Scenario:
    return Scenario(name, [("id", "INT NOT NULL"), ("name", "STRING"), ("dt", "STRING NOT NULL")], _steps(),
                    primary_keys=["id", "dt"] if pk else [], partition_keys=["dt"],
                    options={"bucket": "1" if pk else "-1", "write-only": "true", **options}, mode="batch")


def _one_file() -> int:
    return len({0, KEYS - 1} | set(range(2, KEYS, FILES)))


def _j(field: str, op: str, value: Any) -> dict:
    return {"op": op, "field": field, "value": value}


# x = 42 is in commit 2's file of each partition
NAME = ([("dt", "=", "a"), ("name", "=", "k042")],
        {"op": "and", "args": [_j("dt", "=", "a"), _j("name", "=", "k042")]})
ID = ([("dt", "=", "a"), ("id", "=", 42)], {"op": "and", "args": [_j("dt", "=", "a"), _j("id", "=", 42)]})


def _indexes(java: JavaOracle, path: str) -> dict[str, tuple[str, str | None]]:
    """Per data file of the latest snapshot: how its index is stored and its bytes (hex), as
    Java reads them."""
    answer = java.run({"op": "file_index", "path": path, "filter": _j("dt", "=", "-")})
    return {f["file"]: (f["index"], f["hex"]) for f in answer["files"]}


def _remaining(java: JavaOracle, path: str, java_filter: dict) -> list[int]:
    """The row counts of the files Java's index reader keeps under ``java_filter``."""
    answer = java.run({"op": "file_index", "path": path, "filter": java_filter})
    return sorted(f["rows"] for f in answer["files"] if f["remain"])


def _planned(t: tidelake.Table, filter: list) -> int:
    return sum(s.row_count for s in t.scan(filter=filter).splits())


def _copy(t: tidelake.Table, wh: str, name: str) -> tidelake.Table:
    """The table's directory copied as db.<name> (the same data files)."""
    shutil.copytree(t.path, pathlib.Path(wh) / "db.db" / name)
    return tidelake.Catalog(wh).get_table(f"db.{name}")


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index_file"])
def test_tidelake_and_java_rewrite_the_same_indexes(java, tmp_path, pk, embedded):
    """tidelake writes the table without indexes; the options are set; tidelake rewrites it and
    Java rewrites a copy: the same bytes for every file, stored alike, and each side reads and
    skips files of both."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _scenario(f"rfi_{pk}_{embedded}", pk))
    every_file = sum(len(s["rows"]) for s in _steps()) // 2
    assert _planned(t, ID[0]) == every_file
    assert set(_indexes(java, t.path).values()) == {("none", None)}
    threshold = "1mb" if embedded else "1b"
    t.set_option("file-index.in-manifest-threshold", threshold).set_option("file-index.bitmap.columns", "id")
    t.set_option("file-index.bloom-filter.columns", "id,name").set_option("file-index.bloom-filter.id.items", "200")
    t.set_option("file-index.bloom-filter.name.items", "200")
    theirs = _copy(t, wh, f"rfi_{pk}_{embedded}_java")

    assert t.snapshot(t.rewrite_file_index()).commit_kind == "COMPACT"
    done = java.run({"op": "rewrite_file_index", "path": theirs.path})
    assert done["files"] == 2 * FILES
    assert theirs.refresh().latest_snapshot().commit_kind == "COMPACT"

    ours_idx, theirs_idx = _indexes(java, t.path), _indexes(java, theirs.path)
    assert ours_idx == theirs_idx, "tidelake's rewrite stores what Java's stores"
    assert {how for how, _ in ours_idx.values()} == {"embedded" if embedded else "file"}
    for table in (t, theirs):
        compare_read(java, table, wh, "rewritten file index")
        compare_read(java, table, wh, "rewritten file index", filter=ID[0], java_filter=ID[1])
        assert _planned(table, ID[0]) == _one_file(), table.path
        # an index knows nothing of partitions: file 2 of each partition remains
        assert _remaining(java, table.path, ID[1]) == [_one_file()] * 2
        if not pk:  # primary-key tables consult indexes of key columns only
            compare_read(java, table, wh, "rewritten file index", filter=NAME[0], java_filter=NAME[1])
            assert _planned(table, NAME[0]) == _one_file()
    # Java's rewrite is what tidelake would store: rewriting it again changes nothing
    assert theirs.rewrite_file_index() is None


def test_java_rewrites_after_an_index_is_replaced_tidelake_reads(java, tmp_path):
    """Java writes with a bloom filter on id (index files), the options move to a bitmap on
    name; Java's rewrite drops the index of id and writes the next index file. tidelake skips by
    it, and its own rewrite finds nothing to change."""
    wh = str(tmp_path)
    t = java_write(java, wh, _scenario("rfi_replace", False, **{"file-index.bloom-filter.columns": "id",
                                                                 "file-index.in-manifest-threshold": "1b"}))
    first = {p.name for p in pathlib.Path(t.path).glob("dt=*/bucket-0/*.index")}
    assert len(first) == 2 * FILES and _planned(t, ID[0]) == _one_file()
    t.set_option("file-index.bitmap.columns", "name").remove_option("file-index.bloom-filter.columns")
    java.run({"op": "rewrite_file_index", "path": t.path, "partitions": [{"dt": "a"}]})
    t = t.refresh()
    second = {p.name for p in pathlib.Path(t.path).glob("dt=*/bucket-0/*.index")} - first
    assert len(second) == FILES and all(n.endswith(".parquet-1.index") for n in second), second
    assert _planned(t, NAME[0]) == _one_file() and _planned(t, ID[0]) == sum(len(s["rows"]) for s in _steps()) // 2
    compare_read(java, t, wh, "java rewrite", filter=NAME[0], java_filter=NAME[1])
    assert t.rewrite_file_index(partitions=[{"dt": "a"}]) is None
    # partition b still has Java's original index; tidelake replaces it with the bitmap
    t.rewrite_file_index()
    assert _planned(t, [("dt", "=", "b"), ("name", "=", "k042")]) == _one_file()
    assert _remaining(java, t.path, {"op": "and", "args": [_j("dt", "=", "b"), _j("name", "=", "k042")]}) == \
        [_one_file()] * 2
    compare_read(java, t, wh, "tidelake rewrite of java's")


def test_files_whose_index_would_not_change(java, tmp_path):
    """Java 1.3.1 commits every file it rewrites, also one whose entry comes out identical (no
    index configured, or the same embedded index): the snapshot DELETEs and re-ADDs the same
    entry, which Java's own readers then read as gone. tidelake's rewrite leaves such files out
    of its commit (none here: nothing is committed)."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _scenario("rfi_unchanged", False))
    theirs = _copy(t, wh, "rfi_unchanged_java")
    rows = compare_read(java, t, wh, "no index options")
    snapshots = len(t.snapshots())
    assert t.rewrite_file_index() is None and len(t.refresh().snapshots()) == snapshots
    assert compare_read(java, t, wh, "no index options, rewritten by tidelake") == rows
    java.run({"op": "rewrite_file_index", "path": theirs.path})
    assert theirs.refresh().latest_snapshot().commit_kind == "COMPACT"
    # Java's scans drop every ADD whose entry a DELETE names: the table reads empty to Java;
    # tidelake replays entries in order (the re-ADD after the DELETE stands) and reads the rows
    assert java_read(java, wh, "db.rfi_unchanged_java")["rows"] == []
    assert theirs.to_arrow().num_rows == len(rows)


def test_files_written_before_a_rename_are_indexed_under_their_own_name(java, tmp_path):
    """Java's processor finds a column by field id and indexes it under the name the file has;
    tidelake's does the same, byte for byte, and skips old and new files alike by them."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _scenario("rfi_renamed", False, **{"file-index.in-manifest-threshold": "1b"}))
    t.rename_column("id", "key")
    t.write(t.to_arrow(filter=[("key", "=", 42)]))  # a file of the new schema
    t.set_option("file-index.bloom-filter.columns", "key")
    theirs = _copy(t, wh, "rfi_renamed_java")
    t.rewrite_file_index()
    java.run({"op": "rewrite_file_index", "path": theirs.path})
    assert _indexes(java, t.path) == _indexes(java, theirs.refresh().path)
    key = ([("dt", "=", "a"), ("key", "=", 42)], {"op": "and", "args": [_j("dt", "=", "a"), _j("key", "=", 42)]})
    for table in (t, theirs):
        assert _planned(table, key[0]) == _one_file() + 1
        compare_read(java, table, wh, "renamed, rewritten", filter=key[0], java_filter=key[1])
