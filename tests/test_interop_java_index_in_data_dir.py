"""Index files in the data directories (``index-file-in-data-file-dir = true``) two ways with Java
Paimon 1.3.1 (the ``java`` oracle): deletion-vector index files and dynamic-bucket hash indexes
live in their bucket's directory (``<table>/p=<v>/bucket-<n>/index-<uuid>-<n>``, Java
``IndexInDataFileDirPathFactory``), none in ``<table>/index/``. Java writes such tables and
tidelake continues writing, deleting and compacting them, and the reverse; both read the same
rows. Expiry and orphan cleaning delete dead index files where they are and keep live ones."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, to_arrow

FIELDS = [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "BIGINT")]
ARROW = pa.schema([pa.field("k", pa.int32(), False), pa.field("p", pa.string(), False),
                   pa.field("v", pa.int64())])
IN_DATA_DIR = {"index-file-in-data-file-dir": "true"}
# kind -> (primary keys, options)
KINDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "dv": (["k", "p"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "dynamic": (["k", "p"], {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}),
    "append_dv": ([], {"bucket": "-1", "deletion-vectors.enabled": "true"}),
}


def _scenario(name: str, kind: str, steps: list[dict[str, Any]]) -> Scenario:
    keys, options = KINDS[kind]
    return Scenario(name, FIELDS, steps, primary_keys=keys, partition_keys=["p"],
                    options={**options, **IN_DATA_DIR})


def _rows(start: int, n: int, salt: int) -> dict[str, Any]:
    return {"rows": [[i, f"p{i % 2}", i * 100 + salt] for i in range(start, start + n)]}


def _delete(*keys: int) -> dict[str, Any]:
    return {"rows": [{"kind": "-D", "values": [k, f"p{k % 2}", 0]} for k in keys]}


def _index_files_on_disk(t: tidelake.Table) -> dict[str, pathlib.Path]:
    """Every index file in a bucket directory of ``t``, by name."""
    return {p.name: p for p in pathlib.Path(t.path).rglob("index-*")
            if p.is_file() and p.parent.name.startswith("bucket-")}


def _check_placement(t: tidelake.Table) -> set[str]:
    """Every live index file sits in its bucket's directory at its recorded size, nothing in
    ``index/``. Returns the live index files' names."""
    root = pathlib.Path(t.path)
    assert not (root / "index").exists() or not any((root / "index").iterdir()), list((root / "index").iterdir())
    live = t.system("table_indexes").to_pylist()
    assert live, f"{t.path}: no live index file"
    on_disk = _index_files_on_disk(t)
    for f in live:
        path = on_disk.get(f["file_name"])
        assert path is not None, f"{f['file_name']} is not in a bucket directory"
        assert path.parent.name == f"bucket-{f['bucket']}" and path.parent.parent.name.startswith("p="), path
        assert path.stat().st_size == f["file_size"], path
    return {f["file_name"] for f in live}


def _java_continues(java, wh: str, sc: Scenario, kind: str, label: str) -> tidelake.Table:
    """Java writes more rows (not into a dynamic-bucket table: the oracle's bucket assigner
    starts empty) and compacts every bucket; both read alike, index files stay in place."""
    steps: list[dict[str, Any]] = {"dv": [_rows(20, 5, 7), _delete(21)], "append_dv": [_rows(20, 5, 7)]}.get(kind, [])
    if kind != "append_dv":
        steps.append({"compact": True})
    steps.append(_rows(2, 3, 8) if kind != "dynamic" else {"tag": "java"})
    java.run({**_scenario(sc.name, kind, steps).java_job(wh), "existing": True})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    compare_read(java, t, wh, label)
    _check_placement(t)
    return t


def _tidelake_creates(wh: str, name: str, kind: str) -> tidelake.Table:
    keys, options = KINDS[kind]
    cat = tidelake.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(f"db.{name}", ARROW, primary_keys=keys, partition_keys=["p"],
                            options={**options, **IN_DATA_DIR})


def _tidelake_writes(t: tidelake.Table, kind: str) -> None:
    """Commits that make new index files: upserts (new keys: hash index; updated keys: deletion
    vectors), deletes, a full compaction (which drops deletion vectors) and more upserts and
    deletes after it."""
    for start, salt in ((0, 1), (3, 2), (10, 3)):
        t.write(to_arrow(t.schema, _rows(start, 6, salt)["rows"]))
    t.delete([("k", "=", 4)])
    t.compact(full=True)
    t.write(to_arrow(t.schema, _rows(1, 4, 4)["rows"]))
    t.delete([("k", "=", 7)])


@pytest.mark.parametrize("kind", ["dv", "dynamic"])
def test_java_writes_index_in_data_dir_tidelake_continues(java, tmp_path, kind):
    wh = str(tmp_path / "wh")
    sc = _scenario(f"idx_java_{kind}", kind, [_rows(0, 8, 1), _rows(4, 8, 2), _delete(1, 4), _rows(0, 3, 3)])
    t = java_write(java, wh, sc)
    java_names = _check_placement(t)
    compare_read(java, t, wh, f"A idx {kind} (Java)")
    _tidelake_writes(t, kind)
    ours = _check_placement(t)
    assert ours - java_names, "tidelake wrote index files of its own"
    compare_read(java, t, wh, f"A idx {kind} (tidelake continued)")
    _java_continues(java, wh, sc, kind, f"A idx {kind} (Java again)")


@pytest.mark.parametrize("kind", ["dv", "dynamic", "append_dv"])
def test_tidelake_writes_index_in_data_dir_java_continues(java, tmp_path, kind):
    wh = str(tmp_path / "wh")
    name = f"idx_tl_{kind}"
    t = _tidelake_creates(wh, name, kind)
    _tidelake_writes(t, kind)
    _check_placement(t)
    compare_read(java, t, wh, f"B idx {kind} (tidelake)")
    _java_continues(java, wh, _scenario(name, kind, []), kind, f"B idx {kind} (Java continued)")


@pytest.mark.parametrize("kind", ["dv", "dynamic", "append_dv"])
def test_expiry_and_orphan_cleaning_keep_live_index_files(java, tmp_path, kind):
    wh = str(tmp_path / "wh")
    t = _tidelake_creates(wh, f"idx_gc_{kind}", kind)
    _tidelake_writes(t, kind)
    live = _check_placement(t)
    rows = compare_read(java, t, wh, f"C idx {kind} (written)")
    on_disk = _index_files_on_disk(t)
    assert set(on_disk) > live, "older snapshots reference index files the latest one replaced"
    # an index file a failed writer left behind, in a bucket directory
    stray = next(iter(on_disk.values())).parent / "index-00000000-0000-0000-0000-000000000000-0"
    stray.write_bytes(b"\x01")
    later = int(time.time() * 1000) + 60_000

    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=later)
    assert set(_index_files_on_disk(t)) == live | {stray.name}
    assert _check_placement(t) == live
    assert compare_read(java, t, wh, f"C idx {kind} (expired)") == rows

    orphans = [pathlib.Path(p).name for p, _ in t.remove_orphan_files(older_than_ms=later)]
    assert stray.name in orphans and not live & set(orphans), orphans
    assert set(_index_files_on_disk(t)) == live
    assert compare_read(java, t, wh, f"C idx {kind} (orphans removed)") == rows
