"""Data files below ``data-file.path-directory`` two ways with Java Paimon 1.3.1 (the ``java``
oracle): every bucket directory is ``<table>/<dir>/p=<v>/bucket-<n>/`` (Java
``FileStorePathFactory.relativeBucketPath``). Java writes such a table and tidelake reads it
alike and continues writing, deleting and compacting it, and the reverse; orphan cleaning looks
for stray files in the bucket directories below the data directory only, as Java's does."""

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
DATA_DIR = "warm/data"
# kind -> (primary keys, options)
KINDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "pk": (["k", "p"], {"bucket": "2", "data-file.path-directory": DATA_DIR}),
    "append": ([], {"bucket": "-1", "data-file.path-directory": DATA_DIR}),
}


def _scenario(name: str, kind: str, steps: list[dict[str, Any]]) -> Scenario:
    keys, options = KINDS[kind]
    return Scenario(name, FIELDS, steps, primary_keys=keys, partition_keys=["p"], options=options)


def _rows(start: int, n: int, salt: int) -> dict[str, Any]:
    return {"rows": [[i, f"p{i % 2}", i * 100 + salt] for i in range(start, start + n)]}


def _check_placement(t: tidelake.Table) -> set[str]:
    """Every live data file is in its bucket directory below the data directory, at its recorded
    size; no bucket directory is elsewhere. Returns the live files' names."""
    root = pathlib.Path(t.path)
    data = root / DATA_DIR
    files = t.system("files").to_pylist()
    assert files, f"{t.path}: no live data file"
    for f in files:
        path = pathlib.Path(f["file_path"])
        assert path.parent.name == f"bucket-{f['bucket']}" and path.parent.parent.parent == data, path
        assert path.stat().st_size == f["file_size_in_bytes"], path
    elsewhere = [p for p in root.rglob("bucket-*") if data not in p.parents]
    assert not elsewhere, elsewhere
    return {pathlib.Path(f["file_path"]).name for f in files}


def _java_more(kind: str) -> list[dict[str, Any]]:
    """Java's next steps: more rows, and a compaction of every bucket of the primary-key table
    (Java's batch writer of an unaware-bucket table has no compaction of its own)."""
    return [_rows(20, 5, 7)] + ([{"compact": True}] if kind == "pk" else [])


def _tidelake_writes(t: tidelake.Table, kind: str) -> None:
    for start, salt in ((0, 1), (3, 2), (10, 3)):
        t.write(to_arrow(t.schema, _rows(start, 6, salt)["rows"]))
    t.delete([("k", "=", 4)])
    t.compact(full=True)
    t.write(to_arrow(t.schema, _rows(1, 4, 4)["rows"]))


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_java_writes_below_the_data_directory_tidelake_continues(java, tmp_path, kind):
    wh = str(tmp_path / "wh")
    name = f"dd_java_{kind}"
    steps = [_rows(0, 8, 1), _rows(4, 8, 2)] + ([{"compact": True}] if kind == "pk" else [])
    t = java_write(java, wh, _scenario(name, kind, steps))
    java_files = _check_placement(t)
    compare_read(java, t, wh, f"A data dir {kind} (Java)")
    _tidelake_writes(t, kind)
    assert _check_placement(t) - java_files, "tidelake wrote files of its own"
    compare_read(java, t, wh, f"A data dir {kind} (tidelake continued)")
    java.run({**_scenario(name, kind, _java_more(kind)).java_job(wh), "existing": True})
    t = tidelake.Catalog(wh).get_table(f"db.{name}")
    _check_placement(t)
    compare_read(java, t, wh, f"A data dir {kind} (Java again)")


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_tidelake_writes_below_the_data_directory_java_continues(java, tmp_path, kind):
    wh = str(tmp_path / "wh")
    name = f"dd_tl_{kind}"
    keys, options = KINDS[kind]
    cat = tidelake.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(f"db.{name}", ARROW, primary_keys=keys, partition_keys=["p"], options=options)
    _tidelake_writes(t, kind)
    live = _check_placement(t)
    rows = compare_read(java, t, wh, f"B data dir {kind} (tidelake)")

    # a failed writer's file in a bucket directory below the data directory is an orphan; a file
    # in a bucket-like directory outside it is not the table's (Java lists the data directory only)
    bucket_dir = next((pathlib.Path(t.path) / DATA_DIR).rglob("bucket-*"))
    stray = bucket_dir / "data-00000000-0000-0000-0000-000000000000-0.parquet"
    stray.write_bytes(b"x")
    outside = pathlib.Path(t.path) / "p=p0" / "bucket-0" / "data-11111111-1111-1111-1111-111111111111-0.parquet"
    outside.parent.mkdir(parents=True)
    outside.write_bytes(b"x")
    later = int(time.time() * 1000) + 60_000
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=later)
    orphans = {pathlib.Path(p).name for p, _ in t.remove_orphan_files(older_than_ms=later)}
    assert stray.name in orphans and outside.name not in orphans and not live & orphans, orphans
    assert not stray.exists() and outside.exists()
    outside.unlink()
    outside.parent.rmdir()
    outside.parent.parent.rmdir()
    assert _check_placement(t) == live
    assert compare_read(java, t, wh, f"B data dir {kind} (orphans removed)") == rows

    java.run({**_scenario(name, kind, _java_more(kind)).java_job(wh), "existing": True})
    _check_placement(t)
    compare_read(java, t, wh, f"B data dir {kind} (Java continued)")
