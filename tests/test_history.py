"""``Table.history()``: one row per live snapshot with the files, rows and bytes its commit added
and removed, checked against the ``$files`` system table before and after each commit (local and
S3)."""

from __future__ import annotations

import pyarrow as pa

import tidelake
from _s3 import Storage

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _files(t: tidelake.Table) -> dict[str, tuple[int, int]]:
    f = t.system("files")
    return {p: (r, b) for p, r, b in zip(f["file_path"].to_pylist(), f["record_count"].to_pylist(),
                                         f["file_size_in_bytes"].to_pylist())}


def test_history_counts_what_each_commit_changed(storage: Storage):
    t = storage.create_table("h", SCHEMA, primary_keys=["k"], bucket=2, options={"write-only": "true"})
    expected = []
    before = {}
    steps = [
        lambda: t.write(pa.table({"k": list(range(100)), "v": ["a"] * 100}, schema=SCHEMA)),
        lambda: t.upsert(pa.table({"k": list(range(50)), "v": ["b"] * 50}, schema=SCHEMA)),
        lambda: t.delete_keys(pa.table({"k": [1, 2, 3], "v": [None] * 3}, schema=SCHEMA)),
        lambda: t.compact(full=True),
        lambda: t.write(pa.table({"k": [7], "v": ["c"]}, schema=SCHEMA), mode="overwrite"),
    ]
    for step in steps:
        step()
        after = _files(t.refresh())
        added = [after[p] for p in after.keys() - before.keys()]
        removed = [before[p] for p in before.keys() - after.keys()]
        expected.append((len(added), len(removed), sum(r for r, _ in added), sum(r for r, _ in removed),
                         sum(b for _, b in added), sum(b for _, b in removed)))
        before = after
    h = t.history()
    assert h["snapshot_id"].to_pylist() == [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    assert h["commit_kind"].to_pylist() == ["APPEND", "APPEND", "APPEND", "COMPACT", "OVERWRITE"]
    got = list(zip(*(h[c].to_pylist() for c in ("files_added", "files_removed", "rows_added", "rows_removed",
                                                 "bytes_added", "bytes_removed"))))
    assert got == expected
    assert got[3][3] == 153 and got[3][2] == 97  # compaction merged 100 + 50 + 3 records into 97 rows
    assert h["total_record_count"].to_pylist()[-1] == 1
    assert h.schema.field("commit_time").type == pa.timestamp("ms")


def test_history_of_an_empty_table_and_after_expiry(storage: Storage):
    t = storage.create_table("e", SCHEMA)
    assert t.history().num_rows == 0
    for i in range(4):
        t.write(pa.table({"k": [i], "v": ["x"]}, schema=SCHEMA))
    t.expire_snapshots(retain_min=1, retain_max=2)
    h = t.history()
    assert h["snapshot_id"].to_pylist() == [3, 4]
    assert h["rows_added"].to_pylist() == [1, 1]
