"""Paimon's ``bitmap``, ``bsi`` and ``range-bitmap`` file indexes (``file-index.<type>.*``)
between Java and tidelake: embedded in the manifest (under ``file-index.in-manifest-threshold``)
and as ``<data file>.index`` files.

Every file's min/max statistics span the whole range of each column, so only the indexes can
skip a file: a bitmap gives the rows of each ``name``, a range-bitmap beside it the rows in a
range of ``name``, a bit-sliced index (bsi) the rows in a range of ``n``, and ``and`` intersects
the row sets of two indexes (a file can be skipped though each leaf alone matches a row of it). Java's verdicts come from its own ``FileIndexPredicate``
(the oracle's ``file_index`` job), on files Java and tidelake wrote."""

from __future__ import annotations

import pathlib
from typing import Any

import pyarrow as pa
import pytest

import tidelake

from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, compare_read, java_write, tidelake_write

FILES = 5
KEYS = 100


def _row(x: int, commit: int) -> list[Any]:
    return [x, f"k{x:03d}", x * 10 - 500, commit]


def _steps() -> list[dict]:
    """FILES commits; commit i holds the x with x % FILES == i plus both ends (0 and KEYS-1)."""
    return [{"rows": [_row(x, i) for x in sorted({0, KEYS - 1} | {x for x in range(KEYS) if x % FILES == i})]}
            for i in range(FILES)]


def _rows_of(commits: set[int]) -> int:
    """Rows of the files of these commits."""
    return sum(len(step["rows"]) for i, step in enumerate(_steps()) if i in commits)


def _scenario(name: str, pk: bool, embedded: bool) -> Scenario:
    options = {"bucket": "1" if pk else "-1", "write-only": "true",
               "file-index.bitmap.columns": "id,name" if pk else "name", "file-index.bsi.columns": "n",
               "file-index.range-bitmap.columns": "id" if pk else "name",
               "file-index.in-manifest-threshold": "1mb" if embedded else "1b"}
    return Scenario(name, [("id", "INT NOT NULL"), ("name", "STRING"), ("n", "BIGINT"), ("commit_no", "INT")],
                    _steps(), primary_keys=["id"] if pk else [], options=options, mode="batch")


def _j(field: str, op: str, value: Any) -> dict:
    return {"op": op, "field": field, "value": value}


# (tidelake filter, Java filter, the commits whose file holds a match)
FILTERS: list[tuple[Any, dict, set[int]]] = [
    ([("name", "=", "k042")], _j("name", "=", "k042"), {2}),
    ([("name", "in", ["k041", "k007"])], {"op": "in", "field": "name", "values": ["k041", "k007"]}, {1, 2}),
    ([("name", "=", "k042x")], _j("name", "=", "k042x"), set()),
    # n = 420 is x = 92 only; the statistics of every file span -500..490
    ([("n", ">", 410), ("n", "<", 430)], {"op": "and", "args": [_j("n", ">", 410), _j("n", "<", 430)]}, {2}),
    ([("n", "<", -490)], _j("n", "<", -490), set(range(FILES))),
    # row-level: x = 42 has n = -80; no row has both
    ([("name", "=", "k042"), ("n", ">", 0)], {"op": "and", "args": [_j("name", "=", "k042"), _j("n", ">", 0)]},
     set()),
    ([[("name", "=", "k042")], [("n", "=", 410)]], {"op": "or", "args": [_j("name", "=", "k042"), _j("n", "=", 410)]},
     {1, 2}),
    # the range-bitmap on name: k092 only
    ([("name", ">", "k091"), ("name", "<", "k093")],
     {"op": "and", "args": [_j("name", ">", "k091"), _j("name", "<", "k093")]}, {2}),
]


def _java_verdicts(java: JavaOracle, t: Any, java_filter: dict) -> tuple[list[dict], int]:
    answer = java.run({"op": "file_index", "path": t.path, "filter": java_filter})
    return answer["files"], answer["planned"]


def _index_files(t: Any) -> int:
    return len(list(pathlib.Path(t.path).glob("bucket-*/*.index")))


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index_file"])
def test_java_bitmap_bsi_indexes_skip_files_then_tidelake_writes_and_compacts(java, tmp_path, embedded):
    """(a) Java writes; tidelake's plans skip by Java's indexes; tidelake appends and compacts
    the table, and Java's own index reader skips tidelake's files by tidelake's indexes."""
    wh = str(tmp_path)
    t = java_write(java, wh, _scenario(f"bitmap_java_{embedded}", False, embedded))
    assert len(t.system("files").to_pylist()) == FILES
    assert _index_files(t) == (0 if embedded else FILES)
    for ours, theirs, commits in FILTERS:
        compare_read(java, t, wh, "A bitmap/bsi", filter=ours, java_filter=theirs)
        planned = sum(s.row_count for s in t.scan(filter=ours).splits())
        assert planned == _rows_of(commits), f"{ours}: planned {planned} rows"
    # tidelake appends a file of new rows, then compacts all into one
    t.write(pa.table({"id": pa.array([500, 501], pa.int32()), "name": ["k500", None],
                      "n": pa.array([0, 7], pa.int64()), "commit_no": pa.array([9, 9], pa.int32())},
                     schema=t.schema))
    verdicts, _ = _java_verdicts(java, t, _j("name", "=", "k500"))
    assert len(verdicts) == FILES + 1
    assert [v["rows"] for v in verdicts if v["remain"]] == [2], verdicts
    assert {v["index"] for v in verdicts} == {"embedded" if embedded else "file"}
    verdicts, _ = _java_verdicts(java, t, {"op": "and", "args": [_j("n", ">=", 1), _j("n", "<=", 9)]})
    assert [v["rows"] for v in verdicts if v["remain"]] == [2], "bsi: only tidelake's file holds 7"
    verdicts, _ = _java_verdicts(java, t, {"op": "and", "args": [_j("name", ">", "k499"), _j("name", "<", "k501")]})
    assert [v["rows"] for v in verdicts if v["remain"]] == [2], "range-bitmap: only tidelake's file holds k500"
    t.compact(full=True)
    verdicts, _ = _java_verdicts(java, t, _j("name", "=", "k500"))
    assert [(v["rows"], v["remain"]) for v in verdicts] == [(_rows_of(set(range(FILES))) + 2, True)]
    for theirs in (_j("name", "=", "k042x"), {"op": "is_null", "field": "n"},
                   {"op": "and", "args": [_j("n", ">", 401), _j("n", "<", 409)]},
                   {"op": "and", "args": [_j("name", ">", "k042"), _j("name", "<", "k043")]}):
        verdicts, planned = _java_verdicts(java, t, theirs)
        assert [v["remain"] for v in verdicts] == [False], theirs
        if embedded:
            assert planned == 0, f"Java's scan skips tidelake's file by its embedded index: {theirs}"
    assert _java_verdicts(java, t, {"op": "is_null", "field": "name"})[0][0]["remain"]
    compare_read(java, t, wh, "A bitmap/bsi compacted")
    compare_read(java, t, wh, "A bitmap/bsi compacted", filter=[("name", "=", "k500")],
                 java_filter=_j("name", "=", "k500"))


@pytest.mark.parametrize("pk", [False, True], ids=["append", "pk"])
@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index_file"])
def test_tidelake_writes_bitmap_bsi_indexes_java_reads(java, tmp_path, pk, embedded):
    """(b) tidelake writes the table; Java's filtered reads agree, and Java's index reader keeps
    exactly the files holding a match."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _scenario(f"bitmap_tl_{pk}_{embedded}", pk, embedded))
    assert len(t.system("files").to_pylist()) == FILES
    assert _index_files(t) == (0 if embedded else FILES)
    compare_read(java, t, wh, "B bitmap/bsi")
    filters = FILTERS if not pk else [([("id", "=", 42)], _j("id", "=", 42), {2}),
                                      ([("id", "in", [41, 7])], {"op": "in", "field": "id", "values": [41, 7]}, {1, 2}),
                                      ([("id", ">", 91), ("id", "<", 93)],
                                       {"op": "and", "args": [_j("id", ">", 91), _j("id", "<", 93)]}, {2})]
    for ours, theirs, commits in filters:
        compare_read(java, t, wh, "B bitmap/bsi", filter=ours, java_filter=theirs)
        verdicts, planned = _java_verdicts(java, t, theirs)
        assert sum(v["remain"] for v in verdicts) == len(commits), (theirs, verdicts)
        if embedded and not pk:
            assert planned == len(commits), f"Java's scan skips by tidelake's embedded indexes: {theirs}"
        assert sum(s.row_count for s in t.scan(filter=ours).splits()) == _rows_of(commits), ours
    if pk:
        assert t.lookup([42, 1000]).to_pylist() == [{"id": 42, "name": "k042", "n": -80, "commit_no": 2}]
