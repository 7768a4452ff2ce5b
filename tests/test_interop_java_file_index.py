"""Paimon's bloom-filter file index (``file-index.bloom-filter.*``) on tables Java writes: the
index embedded in the manifest (small filters, under ``file-index.in-manifest-threshold``) and
as a ``<data file>.index`` file next to the data file (the default 1M-item filter). tidelake's
filtered reads and lookups return Java's rows, and the files whose filter rules the value out
are not planned (each file's min/max statistics hold the value, so only the index can skip
them)."""

from __future__ import annotations

import pathlib

import pytest

from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write

FILES = 5
KEYS = 100


def _steps(pk: bool) -> list[dict]:
    """FILES commits; commit i holds the keys/names x with x % FILES == i, plus both ends (0 and
    KEYS-1), so every file's statistics span the whole range."""
    steps = []
    for i in range(FILES):
        xs = sorted({0, KEYS - 1} | {x for x in range(KEYS) if x % FILES == i})
        steps.append({"rows": [[x, f"k{x:03d}", i] for x in xs]})
    return steps


def _scenario(name: str, pk: bool, items: str | None) -> Scenario:
    options = {"bucket": "1" if pk else "-1", "file-index.bloom-filter.columns": "id,name",
               "write-only": "true"}
    if items is not None:
        options["file-index.bloom-filter.id.items"] = items
        options["file-index.bloom-filter.name.items"] = items
    return Scenario(name, [("id", "INT NOT NULL"), ("name", "STRING"), ("commit_no", "INT")], _steps(pk),
                    primary_keys=["id"] if pk else [], options=options, mode="batch")


CASES = [("append", False, "100"), ("append", False, None), ("pk", True, "100"), ("pk", True, None)]


@pytest.mark.parametrize("kind,pk,items", CASES)
def test_java_bloom_indexes_skip_files_and_reads_match(java, tmp_path, kind, pk, items):
    wh = str(tmp_path)
    placement = "embedded" if items else "index_file"
    t = java_write(java, wh, _scenario(f"bloom_{kind}_{placement}", pk, items))
    assert len(t.system("files").to_pylist()) == FILES
    index_files = list(pathlib.Path(t.path).glob("bucket-*/*.parquet.index"))
    assert len(index_files) == (0 if items else FILES)
    total = t.scan().to_arrow().num_rows
    for x in (42, 7):
        # the key column (id) for both table kinds; the name column only where no merge needs it
        filters = [([("id", "=", x)], {"op": "=", "field": "id", "value": x})]
        if not pk:
            filters.append(([("name", "=", f"k{x:03d}")], {"op": "=", "field": "name", "value": f"k{x:03d}"}))
        for ours, theirs in filters:
            rows = compare_read(java, t, wh, f"A bloom {placement}", filter=ours, java_filter=theirs)
            assert len(rows) == 1
            planned = sum(s.row_count for s in t.scan(filter=ours).splits())
            # only the file of commit x % FILES: 2 boundary keys + KEYS / FILES keys
            assert planned == KEYS // FILES + 2, f"{ours} planned {planned} of {total} rows"
    # absent values inside every file's range: no file planned
    assert t.scan(filter=[("id", "in", [1000, -5])]).splits() == []
    absent = [("id", "=", 1000)] if pk else [("name", "=", "k042x")]
    assert sum(s.row_count for s in t.scan(filter=absent).splits()) == 0
    if pk:
        assert t.lookup([42, 7, 0, 1000]).to_pylist() == [
            {"id": 42, "name": "k042", "commit_no": 2}, {"id": 7, "name": "k007", "commit_no": 2},
            {"id": 0, "name": "k000", "commit_no": FILES - 1}]
        lookuper = t.lookuper()
        assert lookuper.lookup([99, 13]).to_pylist() == [
            {"id": 99, "name": "k099", "commit_no": FILES - 1}, {"id": 13, "name": "k013", "commit_no": 3}]


@pytest.mark.parametrize("kind,pk,items", CASES)
def test_tidelake_writes_bloom_indexes_java_reads(java, tmp_path, kind, pk, items):
    """tidelake's writer writes the index Java would (same placement rule); Java's filtered read
    uses it without error and returns tidelake's rows; tidelake's own reads skip files by it."""
    wh = str(tmp_path)
    placement = "embedded" if items else "index_file"
    t = tidelake_write(java, wh, _scenario(f"tl_bloom_{kind}_{placement}", pk, items))
    assert len(t.system("files").to_pylist()) == FILES
    assert len(list(pathlib.Path(t.path).glob("bucket-*/*.parquet.index"))) == (0 if items else FILES)
    compare_read(java, t, wh, f"B bloom {placement}")
    for x in (42, 7):
        filters = [([("id", "=", x)], {"op": "=", "field": "id", "value": x})]
        if not pk:
            filters.append(([("name", "=", f"k{x:03d}")], {"op": "=", "field": "name", "value": f"k{x:03d}"}))
        for ours, theirs in filters:
            assert len(compare_read(java, t, wh, f"B bloom {placement}", filter=ours, java_filter=theirs)) == 1
            assert sum(s.row_count for s in t.scan(filter=ours).splits()) == KEYS // FILES + 2
    if pk:
        assert t.lookup([42, 1000]).to_pylist() == [{"id": 42, "name": "k042", "commit_no": 2}]
