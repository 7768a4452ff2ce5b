"""External data paths (``data-file.external-paths``, strategy ``round-robin``) two ways with Java
Paimon 1.3.1 (the ``java`` oracle): Java writes a table whose data files live under two external
roots and tidelake continues writing and compacting it, and tidelake writes such a table and Java
continues; every data file of either writer lands under a root (``<root>/<partition>/bucket-<n>/``,
``_EXTERNAL_PATH`` spelled as Java spells it), none under the table directory, and both read the
same rows."""

from __future__ import annotations

import pathlib
import time

import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write, to_arrow

FIELDS = [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "BIGINT")]


def _roots(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    return [tmp_path / "ext1", tmp_path / "ext2"]


def _scenario(tmp_path: pathlib.Path, name: str, pk: bool, steps: list[dict]) -> Scenario:
    options = {"bucket": "2", "data-file.external-paths": ",".join(f"file://{r}" for r in _roots(tmp_path)),
               "data-file.external-paths.strategy": "round-robin"}
    if pk:
        options["changelog-producer"] = "input"
    else:
        options["bucket-key"] = "k"
    return Scenario(name, FIELDS, steps, primary_keys=["k", "p"] if pk else [], partition_keys=["p"],
                    options=options, mode="batch")


def _rows(start: int, n: int, salt: int) -> dict:
    return {"rows": [[i, f"p{i % 2}", i * 100 + salt] for i in range(start, start + n)]}


def _external_files(tmp_path: pathlib.Path) -> set[pathlib.Path]:
    return {p for r in _roots(tmp_path) if r.exists() for p in r.rglob("*") if p.is_file()}


def _check_placement(tmp_path: pathlib.Path, t: tidelake.Table) -> list[str]:
    """Every live data file is under a root, as Java spells the path; nothing in the table's
    bucket directories. Returns the live files' paths. (Which root a file takes is random per
    writer in both engines, so a few live files may all sit in one root; tests/test_external_paths.py
    checks the round robin over many files.)"""
    live = t.system("files").column("file_path").to_pylist()
    prefixes = tuple(f"file:{r}/p=" for r in _roots(tmp_path))
    assert live and all(p.startswith(prefixes) for p in live), live
    assert not [p for p in pathlib.Path(t.path).rglob("*") if p.is_file() and "bucket-" in str(p)]
    for p in live:
        bucket_dir = pathlib.PurePosixPath(p).parent
        assert bucket_dir.name.startswith("bucket-") and bucket_dir.parent.name in ("p=p0", "p=p1"), p
    return live


def _java_continues(java, tmp_path, sc: Scenario, pk: bool, steps: list, label: str) -> tidelake.Table:
    """Java writes ``steps`` into the existing table; its files stay external, both read alike."""
    wh = str(tmp_path / "wh")
    java.run({**_scenario(tmp_path, sc.name, pk, steps).java_job(wh), "existing": True})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    _check_placement(tmp_path, t)
    compare_read(java, t, wh, label)
    return t


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_java_writes_external_paths_tidelake_continues(java, tmp_path, pk):
    wh = str(tmp_path / "wh")
    kind = "pk" if pk else "append"
    sc = _scenario(tmp_path, f"ext_java_{kind}", pk, [_rows(0, 8, 1), _rows(4, 8, 2), _rows(10, 6, 3)])
    t = java_write(java, wh, sc)
    java_paths = _check_placement(tmp_path, t)
    compare_read(java, t, wh, f"A ext {kind} (Java)")
    # tidelake continues: more commits and a full compaction, all external
    for salt in (4, 5):
        t.write(to_arrow(t.schema, _rows(2 * salt, 8, salt)["rows"]))
    t.compact(full=True)
    ours = _check_placement(tmp_path, t)
    assert set(ours) - set(java_paths), "tidelake wrote files of its own"
    compare_read(java, t, wh, f"A ext {kind} (tidelake continued)")
    _java_continues(java, tmp_path, sc, pk, [_rows(30, 4, 6), {"compact": True}], f"A ext {kind} (Java again)")


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_tidelake_writes_external_paths_java_continues(java, tmp_path, pk):
    wh = str(tmp_path / "wh")
    kind = "pk" if pk else "append"
    sc = _scenario(tmp_path, f"ext_tl_{kind}", pk,
                   [_rows(0, 8, 1), _rows(4, 8, 2), {"compact": True}, _rows(10, 6, 3)])
    t = tidelake_write(java, wh, sc)
    _check_placement(tmp_path, t)
    compare_read(java, t, wh, f"B ext {kind} (tidelake)")
    t = _java_continues(java, tmp_path, sc, pk, [_rows(20, 6, 4), {"compact": True}],
                        f"B ext {kind} (Java continued)")
    # tidelake's expiry deletes what only expired snapshots referenced, in the roots
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    live = {pathlib.Path(p.removeprefix("file:")) for p in _check_placement(tmp_path, t)}
    assert _external_files(tmp_path) == live
    compare_read(java, t, wh, f"B ext {kind} (expired)")
