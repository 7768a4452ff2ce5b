"""Hostile input and maintenance races (issue #15, scenarios 7 and 8): reserved or NUL column
names, absurdly nested types, a snapshot id at the end of the id space, symbolic links out of
the table, duplicate manifest entries, and reads or orphan cleaning that race an expiration.

Each case ends in a typed exception naming the problem (or in the link's target surviving),
never in a crash, a silently truncated name or a deleted file outside the table.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import tidelake

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
SYSTEM_NAMES = ["_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL", "rowkind", "_ROW_ID", "_KEY_k", "_KEY_"]


def nested(depth: int) -> pa.DataType:
    t: pa.DataType = pa.int64()
    for _ in range(depth):
        t = pa.struct([("f", t)])
    return t


def nested_value(depth: int) -> object:
    v: object = 1
    for _ in range(depth):
        v = {"f": v}
    return v


def pk_table(path: pathlib.Path, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, primary_keys=["k"], bucket=1, options=options or None)


# ---- column names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SYSTEM_NAMES)
def test_system_column_names_are_refused_at_create_add_and_rename(tmp_path, name):
    schema = pa.schema([("k", pa.int64()), (name, pa.string())])
    with pytest.raises(tidelake.InvalidArgumentError, match=name):
        tidelake.create_table(str(tmp_path / "c"), schema, primary_keys=["k"])
    assert not (tmp_path / "c" / "schema" / "schema-0").exists()

    t = pk_table(tmp_path / "t")
    with pytest.raises(tidelake.InvalidArgumentError, match=name):
        t.add_column(name, pa.int32())
    with pytest.raises(tidelake.InvalidArgumentError, match=name):
        t.rename_column("v", name)
    assert t.refresh().schema_id == 0


def test_system_names_inside_a_struct_are_ordinary_field_names(tmp_path):
    # Java checks top-level names only: nested fields never meet the system columns of data files.
    schema = pa.schema([("k", pa.int64()), ("s", pa.struct([("_SEQUENCE_NUMBER", pa.int64())]))])
    t = tidelake.create_table(str(tmp_path / "t"), schema, primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": [1], "s": [{"_SEQUENCE_NUMBER": 7}]}, schema=schema))
    assert t.to_arrow().to_pylist() == [{"k": 1, "s": {"_SEQUENCE_NUMBER": 7}}]


def test_column_names_with_nul_are_refused_not_truncated(tmp_path):
    with pytest.raises(tidelake.InvalidArgumentError, match="NUL"):
        tidelake.create_table(str(tmp_path / "a"), pa.schema([("k", pa.int64()), ("v\0w", pa.string())]))
    with pytest.raises(tidelake.InvalidArgumentError, match="NUL"):
        tidelake.create_table(str(tmp_path / "b"),
                              pa.schema([("k", pa.int64()), ("s", pa.struct([("x\0y", pa.int32())]))]))
    t = pk_table(tmp_path / "t")
    with pytest.raises(tidelake.InvalidArgumentError, match="NUL"):
        t.rename_column("v", "v\0")
    with pytest.raises(tidelake.InvalidArgumentError, match="NUL"):
        t.add_column("n\0", pa.int32())
    assert t.refresh().schema_id == 0


# ---- nesting depth -----------------------------------------------------------------------------------


DEEP_SCRIPT = """
import sys, pyarrow as pa, tidelake
t = pa.int64()
for _ in range(int(sys.argv[2])):
    t = pa.struct([("f", t)])
try:
    tidelake.create_table(sys.argv[1], pa.schema([("k", pa.int64()), ("deep", t)]))
except tidelake.InvalidArgumentError as e:
    print("refused:", e)
"""


def test_a_schema_nested_twenty_thousand_levels_is_refused_without_crashing(tmp_path):
    # In a subprocess: before the fix this killed the interpreter (stack overflow, SIGSEGV).
    proc = subprocess.run([sys.executable, "-c", DEEP_SCRIPT, str(tmp_path / "t"), "20000"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("refused:") and "nested too deeply" in proc.stdout, proc.stdout
    assert not (tmp_path / "t" / "schema").exists()


def test_nesting_is_bounded_before_anything_is_written(tmp_path):
    deepest = 32
    t = tidelake.create_table(str(tmp_path / "ok"), pa.schema([("k", pa.int64()), ("d", nested(deepest))]),
                              primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": [1], "d": [nested_value(deepest)]}, schema=t.schema))
    assert tidelake.open_table(str(tmp_path / "ok")).to_arrow().column("d").to_pylist() == [nested_value(deepest)]

    # 130 levels used to be written and then be unreadable (schema JSON too deep to parse back).
    for depth in (deepest + 1, 130):
        with pytest.raises(tidelake.InvalidArgumentError, match="nested"):
            tidelake.create_table(str(tmp_path / f"d{depth}"), pa.schema([("k", pa.int64()), ("d", nested(depth))]))
        assert not (tmp_path / f"d{depth}").exists() or not any((tmp_path / f"d{depth}").rglob("schema-*"))
    lists = pa.int64()
    for _ in range(deepest + 1):
        lists = pa.list_(lists)
    with pytest.raises(tidelake.InvalidArgumentError, match="nested"):
        t.add_column("l", lists)
    with pytest.raises(tidelake.InvalidArgumentError, match="nested"):
        t.add_column("m", pa.map_(pa.int32(), nested(deepest)))
    assert t.refresh().schema_id == 0


# ---- snapshot ids ------------------------------------------------------------------------------------


def _jump_to_last_snapshot_id(path: pathlib.Path) -> int:
    """Turn snapshot 1 of the table at ``path`` into snapshot i64::MAX (valid otherwise)."""
    last = 2**63 - 1
    snap = json.loads((path / "snapshot" / "snapshot-1").read_text())
    snap["id"] = last
    (path / "snapshot" / f"snapshot-{last}").write_text(json.dumps(snap))
    (path / "snapshot" / "snapshot-1").unlink()
    (path / "snapshot" / "LATEST").write_text(str(last))
    (path / "snapshot" / "EARLIEST").write_text(str(last))
    return last


def test_a_table_at_the_largest_snapshot_id_reads(tmp_path):
    t = pk_table(tmp_path / "t")
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    last = _jump_to_last_snapshot_id(tmp_path / "t")
    t = tidelake.open_table(str(tmp_path / "t"))
    assert t.latest_snapshot().id == last
    assert t.to_arrow().to_pylist() == [{"k": 1, "v": "a"}]
    assert [s.id for s in t.snapshots()] == [last]
    assert t.expire_snapshots()["snapshots"] == 0


def test_no_commit_follows_the_largest_snapshot_id(tmp_path):
    t = pk_table(tmp_path / "t")
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    _jump_to_last_snapshot_id(tmp_path / "t")
    t = tidelake.open_table(str(tmp_path / "t"))
    with pytest.raises(tidelake.CorruptMetadataError, match="9223372036854775807"):
        t.write(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    assert sorted(p.name for p in (tmp_path / "t" / "snapshot").iterdir()) == [
        "EARLIEST", "LATEST", "snapshot-9223372036854775807"]


# ---- symbolic links ----------------------------------------------------------------------------------


def _outside_files(root: pathlib.Path, names: list[str]) -> list[pathlib.Path]:
    """Files outside every table, a day old (older than any orphan cutoff used here)."""
    root.mkdir(parents=True)
    old = time.time() - 86400 * 3
    out = []
    for name in names:
        p = root / name
        p.write_bytes(b"precious")
        os.utime(p, (old, old))
        out.append(p)
    return out


def test_orphan_cleaning_never_follows_links_out_of_the_table(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k"], partition_keys=[], bucket=2)
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table_dir = tmp_path / "t"
    outside = _outside_files(tmp_path / "outside", ["data-0-x.parquet", "manifest-y-0", "index-z-0"])
    # A bucket directory and the index directory that are links to elsewhere, and a link as a file.
    os.symlink(tmp_path / "outside", table_dir / "bucket-7")
    os.symlink(tmp_path / "outside", table_dir / "index")
    os.symlink(outside[1], table_dir / "manifest" / "manifest-link-0")
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert all(p.read_bytes() == b"precious" for p in outside)
    assert t.to_arrow().num_rows == 3


def test_drop_table_removes_links_not_their_targets(tmp_path):
    catalog = tidelake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    outside = _outside_files(tmp_path / "outside", ["a", "b"])
    table_dir = pathlib.Path(t.path.removeprefix("file://"))
    os.symlink(tmp_path / "outside", table_dir / "bucket-9")
    os.symlink(outside[0], table_dir / "manifest" / "link")
    catalog.drop_table("db.t")
    assert not table_dir.exists()
    assert all(p.read_bytes() == b"precious" for p in outside)


# ---- duplicate files ---------------------------------------------------------------------------------


def test_a_file_added_twice_names_the_manifest(tmp_path):
    t = pk_table(tmp_path / "t")
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    snap_dir = tmp_path / "t" / "snapshot"
    snap = json.loads((snap_dir / "snapshot-1").read_text())
    manifest = next(m for m in os.listdir(tmp_path / "t" / "manifest") if not m.startswith("manifest-list"))
    # A hostile snapshot 2 whose base list is snapshot 1's delta list again: every file twice.
    snap.update(id=2, baseManifestList=snap["deltaManifestList"])
    (snap_dir / "snapshot-2").write_text(json.dumps(snap))
    (snap_dir / "LATEST").write_text("2")
    with pytest.raises(tidelake.CorruptMetadataError, match=f"added twice.*manifest/{manifest}"):
        tidelake.open_table(str(tmp_path / "t")).to_arrow()
    # System tables read the same live files, with the same error.
    for name in ("files", "partitions"):
        with pytest.raises(tidelake.CorruptMetadataError, match=f"added twice.*manifest/{manifest}"):
            tidelake.open_table(str(tmp_path / "t")).system(name)


# ---- races with expiration ---------------------------------------------------------------------------


def _expire_all_but_latest(t: tidelake.Table) -> None:
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)


def test_a_read_whose_snapshot_expires_meanwhile_says_so(tmp_path):
    t = pk_table(tmp_path / "t", **{"write-only": "true"})
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    t.write(pa.table({"k": [1], "v": ["b"]}, schema=SCHEMA))
    scan = t.scan()
    splits = scan.splits()
    first = scan.snapshot_id
    t.compact(full=True)  # rewrites both files: the next expiration deletes what `first` reads
    t.write(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    _expire_all_but_latest(t)
    assert first not in [s.id for s in t.snapshots()]
    with pytest.raises(tidelake.SnapshotExpiredError, match=f"snapshot {first} has expired"):
        for split in splits:
            split.read().read_all()
    # Still a TableNotFoundError (and FileNotFoundError) for callers that do not know the new type.
    assert issubclass(tidelake.SnapshotExpiredError, tidelake.TableNotFoundError)
    # A file missing from a snapshot that still exists is damage, not a race.
    latest = t.scan()
    data = [p for p in (tmp_path / "t" / "bucket-0").iterdir() if p.name.startswith("data-")]
    for p in data:
        p.unlink()
    with pytest.raises(tidelake.CorruptMetadataError, match="missing although snapshot"):
        latest.to_arrow()



EXPIRER = """
import sys, time, tidelake
t = tidelake.open_table(sys.argv[1])
for keep in [*range(int(sys.argv[2]), 0, -3), 1]:
    t.expire_snapshots(retain_min=keep, retain_max=keep, older_than_ms=int(time.time() * 1000) + 60_000)
"""

CLEANER = """
import sys, tidelake
t = tidelake.open_table(sys.argv[1])
runs = 0
while True:
    t.remove_orphan_files(older_than_ms=int(sys.argv[2]))
    runs += 1
    if sys.stdin.readline() != "again\\n":
        break
print(runs)
"""


def test_orphan_cleaning_racing_an_expiration_in_another_process_fails_nothing(tmp_path):
    commits = 120
    t = pk_table(tmp_path / "t", **{"write-only": "true"})
    for i in range(commits):
        t.write(pa.table({"k": [i % 5], "v": [str(i)]}, schema=SCHEMA))
    # Every table file is newer than the cutoff, so only the planted junk is ever an orphan;
    # its presence makes each cleaning read every root while the expiration deletes them.
    cutoff = int(time.time() * 1000) - 60_000
    old = time.time() - 3600
    table_dir = tmp_path / "t"
    expirer = subprocess.Popen([sys.executable, "-c", EXPIRER, str(table_dir), str(commits)],
                               stderr=subprocess.PIPE, text=True)
    cleaner = subprocess.Popen([sys.executable, "-c", CLEANER, str(table_dir), str(cutoff)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rounds = 0
    while expirer.poll() is None and cleaner.poll() is None:
        junk = table_dir / "manifest" / f"manifest-junk-{rounds}"
        junk.write_bytes(b"junk")
        os.utime(junk, (old, old))
        cleaner.stdin.write("again\n")
        cleaner.stdin.flush()
        rounds += 1
        time.sleep(0.01)
    out, err = cleaner.communicate("stop\n", timeout=120)
    assert cleaner.returncode == 0, err[-3000:]
    assert expirer.wait(timeout=300) == 0, expirer.stderr.read()[-3000:]
    assert int(out) >= 2, "the cleaner ran while the expiration did"
    t = tidelake.open_table(str(table_dir))
    assert [s.id for s in t.snapshots()] == [commits]
    assert sorted(r["k"] for r in t.to_arrow().to_pylist()) == [0, 1, 2, 3, 4]
    t.remove_orphan_files(older_than_ms=cutoff)
    assert not list((table_dir / "manifest").glob("manifest-junk-*"))


def test_file_uris_in_spark_form_are_absolute_paths(tmp_path, monkeypatch):
    """``file:/abs`` (how Spark and Hadoop write a local path), ``file:///abs`` and the plain path
    name one table; nothing is ever created under the working directory for them."""
    monkeypatch.chdir(tmp_path)
    where = tmp_path / "wh" / "t"
    t = tidelake.create_table(f"file:{where}", SCHEMA)
    assert t.path == str(where)
    t.write(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    for loc in (f"file://{where}", f"file://localhost{where}", str(where)):
        assert tidelake.open_table(loc).to_arrow().num_rows == 1
    assert sorted(os.listdir(tmp_path)) == ["wh"]
    for bad in ("file:t", "file://elsewhere/t"):
        with pytest.raises(tidelake.InvalidArgumentError, match="file: URI"):
            tidelake.create_table(bad, SCHEMA)
    assert sorted(os.listdir(tmp_path)) == ["wh"]
