"""Running out of resources (issue #34): a real small filesystem (a tmpfs the test mounts) that
fills up during a write, a compaction and a commit, and a process with a low open-files limit.

Each case ends in a typed exception (StorageError) or in success, never in a half-committed
table: afterwards every acknowledged write reads back, the failed operation left no files
behind, and once space is freed the same operations succeed.
"""

from __future__ import annotations

import os
import pathlib
import resource
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import tidelake

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
FS_BYTES = 16 * 1024 * 1024


@pytest.fixture
def small_fs(tmp_path: pathlib.Path):
    """A 16 MiB tmpfs mounted for the test (the machine's root may mount; CI runs as root)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _rows(keys: range, width: int, tag: str) -> pa.Table:
    # values that do not compress: each row carries its own random-looking bytes
    return pa.table({"k": list(keys), "v": [os.urandom(width // 2).hex()[:width] + tag for _ in keys]},
                    schema=SCHEMA)


def _fill(mount: pathlib.Path, leave: int) -> pathlib.Path:
    """A filler file leaving about ``leave`` bytes free on ``mount``."""
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    filler = mount / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def _state(t: tidelake.Table) -> dict[int, str]:
    rows = tidelake.open_table(t.path).to_arrow()
    return dict(zip(rows["k"].to_pylist(), rows["v"].to_pylist()))


def _unreferenced(t: tidelake.Table) -> list[tuple[str, int]]:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)


def test_a_full_disk_during_writes_compactions_and_commits(small_fs):
    t = tidelake.create_table(str(small_fs / "t"), SCHEMA, primary_keys=["k"], bucket=2,
                              options={"write-only": "true"})
    acked: dict[int, str] = {}
    for tag in ("a", "a2"):  # two sorted runs per bucket: a full compaction rewrites them
        first = _rows(range(0, 2000), 200, tag)
        t.write(first)
        acked |= dict(zip(first["k"].to_pylist(), first["v"].to_pylist()))

    # a write whose data does not fit
    filler = _fill(small_fs, leave=64 * 1024)
    with pytest.raises(tidelake.StorageError):
        t.write(_rows(range(2000, 6000), 200, "b"))
    assert _state(t) == acked
    assert _unreferenced(t) == []

    # a compaction whose output does not fit
    with pytest.raises(tidelake.StorageError):
        t.compact(full=True)
    assert _state(t) == acked
    assert _unreferenced(t) == []

    # commits that find the disk full at every point: between the data files and the snapshot
    outcomes = set()
    for leave in (4 * 1024, 8 * 1024, 12 * 1024, 16 * 1024, 24 * 1024, 32 * 1024):
        filler.unlink()
        filler = _fill(small_fs, leave=leave)
        change = _rows(range(leave, leave + 20), 100, f"c{leave}")
        try:
            t.upsert(change)
            acked |= dict(zip(change["k"].to_pylist(), change["v"].to_pylist()))
            outcomes.add("landed")
        except tidelake.StorageError:
            outcomes.add("refused")
        assert _state(t) == acked, f"{leave} bytes free"
        assert t.refresh().latest_snapshot() is not None  # the newest snapshot decodes
        assert _unreferenced(t) == [], f"{leave} bytes free"
    assert "refused" in outcomes

    # space freed: everything works again
    filler.unlink()
    more = _rows(range(6000, 6500), 200, "d")
    t.write(more)
    acked |= dict(zip(more["k"].to_pylist(), more["v"].to_pylist()))
    t.compact(full=True)
    assert _state(t) == acked


_FEW_FILES = textwrap.dedent("""
    import resource, sys
    import pyarrow as pa
    import tidelake
    t = tidelake.open_table(sys.argv[1])
    n = 40_000
    batch = pa.table({"k": list(range(n)), "p": [i % 200 for i in range(n)], "v": ["x"] * n}, schema=t.schema)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    for step in ("write", "write", "read", "compact", "read"):
        try:
            if step == "write":
                t.write(batch)
            elif step == "read":
                assert t.to_arrow().num_rows in (0, n)
            else:
                t.compact(full=True)
            print(step, "ok")
        except tidelake.StorageError as e:
            print(step, "refused:", str(e).splitlines()[0])
""")


def test_a_low_open_files_limit_is_a_typed_error_and_no_damage(tmp_path):
    """Writes to 200 partitions, reads and a full compaction in a process allowed very few open
    files: each lands or raises StorageError (never a crash or an untyped error), and the table
    is consistent either way and works again without the limit."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.int64(), nullable=False),
                        ("v", pa.string())])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for limit in (7, 12, 64):
        t = tidelake.create_table(str(tmp_path / f"t{limit}"), schema, primary_keys=["k", "p"], partition_keys=["p"],
                                  bucket=1)
        done = subprocess.run([sys.executable, "-c", _FEW_FILES, t.path, str(limit)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr  # no crash, no untyped error
        print(limit, done.stdout.split("\n"))
        rows = tidelake.open_table(t.path).to_arrow()
        assert rows.num_rows in (0, 40_000)
        assert _unreferenced(t.refresh()) == []
        t.write(pa.table({"k": [1], "p": [1], "v": ["after"]}, schema=schema))
        t.compact(full=True)
        assert tidelake.open_table(t.path).to_arrow().num_rows in (1, 40_000)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 64  # this process was not limited
