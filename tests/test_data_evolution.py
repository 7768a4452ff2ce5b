"""Row-tracking and data-evolution tables (``row-tracking.enabled``, ``data-evolution.enabled``)
written by Java Paimon 1.3.1: whole-row files (``_FIRST_ROW_ID`` only) read as Java reads
them; files holding only some columns of their rows (``_WRITE_COLS``) merge with the other files
of the same first row id, each column from the newest file holding it, as Java merges them;
change reads of such files raise UnsupportedError; writing such tables is refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_read, java_write

FIELDS = [("id", "INT"), ("a", "STRING"), ("b", "BIGINT")]
OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _scenario(name: str, steps: list[dict]) -> Scenario:
    return Scenario(name, FIELDS, steps, options=OPTIONS, mode="batch")


def test_whole_row_files_read_as_java_reads_them(java, tmp_path):
    wh = str(tmp_path)
    t = java_write(java, wh, _scenario("rows_only", [{"rows": [[1, "x", 10], [2, "y", 20]]}, {"rows": [[3, "z", 30]]}]))
    files = t.system("files").to_pylist()
    assert sorted(f["first_row_id"] for f in files) == [0, 2]  # row tracking numbered the rows
    assert len(compare_read(java, t, wh, "row tracking")) == 3
    for s in t.snapshots():
        compare_read(java, t, wh, "row tracking", snapshot_id=s.id)


def test_column_files_merge_into_their_rows_as_java_merges_them(java, tmp_path):
    """Java writes whole rows, then files of some columns for existing row ranges (two updates
    of ``b`` for rows 0..3, the newest wins; one of ``a`` for rows 3..5), then more whole rows:
    every read (latest, each snapshot, projections, filters) equals Java's."""
    wh = str(tmp_path)
    sc = _scenario("column_updates", [
        {"rows": [[1, "x", 10], [2, "y", 20], [3, "z", 30]]},
        {"rows": [[4, "u", 40], [5, None, 50]]},
        {"columns": ["b"], "first_row_id": 0, "rows": [[11], [21], [None]]},
        {"columns": ["b"], "first_row_id": 0, "rows": [[12], [22], [32]]},
        {"columns": ["a"], "first_row_id": 3, "rows": [["U"], ["V"]]},
        {"rows": [[6, "w", 60]]},
        {"alter": [{"rename": "b", "to": "bb"}]},  # column files name b: matched by field id
    ])
    t = java_write(java, wh, sc)
    assert java_read(java, wh, f"db.{sc.name}")["rows"] == [
        [1, "x", 12], [2, "y", 22], [3, "z", 32], [4, "U", 40], [5, "V", 50], [6, "w", 60]]
    compare_read(java, t, wh, "data evolution", pypaimon=False)
    for s in t.snapshots():
        compare_read(java, t, wh, "data evolution", snapshot_id=s.id)
    # Java 1.3.1 cannot read these projections (NullPointerException in
    # DataEvolutionRow.getRowKind when the newest file of a range holds none of the read
    # columns): tidelake's equal the columns of its full read, which equals Java's.
    full = t.to_arrow()
    for columns in (["bb", "id"], ["a"]):
        assert t.to_arrow(columns=columns) == full.select(columns)
    assert sorted(t.to_arrow(filter=[("bb", ">", 30)]).column("id").to_pylist()) == [3, 4, 5, 6]
    # changes cannot describe a column update as row changes
    with pytest.raises(tidelake.UnsupportedError, match=r"only columns \[b\] of its rows 0\.\.3"):
        t.changes(2, 3)
    assert t.changes(0, 2).num_rows == 5


@pytest.mark.parametrize("option", ["row-tracking.enabled", "data-evolution.enabled"])
def test_writing_is_refused(tmp_path, option):
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int32())]), options={option: "true"})
    with pytest.raises(tidelake.UnsupportedError, match="row-tracking or data-evolution"):
        t.write(pa.table({"id": pa.array([1], pa.int32())}))
