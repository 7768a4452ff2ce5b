"""Row-tracking and data-evolution tables (``row-tracking.enabled``, ``data-evolution.enabled``)
written by Java Paimon 1.3.1: whole-row files (``_FIRST_ROW_ID`` only) read as Java reads
them; a file holding only some columns of its rows (``_WRITE_COLS``, which Java merges with the
other files of the same first row id) makes tidelake's read raise UnsupportedError instead of
returning wrong rows; writing such tables is refused."""

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


def test_a_column_file_makes_the_read_raise_instead_of_returning_wrong_rows(java, tmp_path):
    wh = str(tmp_path)
    sc = _scenario("column_update", [
        {"rows": [[1, "x", 10], [2, "y", 20], [3, "z", 30]]},
        {"columns": ["b"], "first_row_id": 0, "rows": [[11], [21], [31]]},
    ])
    t = java_write(java, wh, sc)
    # Java merges the column file into rows 0..3: that is the correct read.
    assert java_read(java, wh, f"db.{sc.name}")["rows"] == [[1, "x", 11], [2, "y", 21], [3, "z", 31]]
    with pytest.raises(tidelake.UnsupportedError, match=r"only columns \[b\] of its rows 0\.\.3"):
        t.to_arrow()
    with pytest.raises(tidelake.UnsupportedError, match="data-evolution"):
        t.changes(1, 2)
    # the snapshot before the column write holds whole rows only
    assert compare_read(java, t, wh, "data evolution", snapshot_id=1)


@pytest.mark.parametrize("option", ["row-tracking.enabled", "data-evolution.enabled"])
def test_writing_is_refused(tmp_path, option):
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([("id", pa.int32())]), options={option: "true"})
    with pytest.raises(tidelake.UnsupportedError, match="row-tracking or data-evolution"):
        t.write(pa.table({"id": pa.array([1], pa.int32())}))
