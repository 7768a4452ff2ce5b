"""Record-level expiry (``record-level.expire-time`` + ``record-level.time-field``), two-way
with Java Paimon 1.3.1: rows of a primary-key table whose time field is older than now minus
the expire time disappear when a compaction rewrites them (INT seconds, BIGINT seconds or
milliseconds, null times kept), reads before that still return them, and a compaction of one
side leaves the rows the other side reads."""

from __future__ import annotations

import time

import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write

DAY = 86_400


def _scenario(name: str, time_type: str, scale: int, expire: str = "1 d") -> tuple[Scenario, set[int]]:
    """Two commits of rows old (ten days), fresh and without time; the ids that survive expiry."""
    now = int(time.time())
    old, fresh = (now - 10 * DAY) * scale, now * scale
    steps = [{"rows": [[1, old, 1], [2, fresh, 2], [3, None, 3]]},
             {"rows": [[4, old, 4], [5, fresh, 5], [1, old, 11]]}]
    fields = [("id", "BIGINT NOT NULL"), ("ts", time_type), ("v", "INT")]
    options = {"bucket": "1", "record-level.expire-time": expire, "record-level.time-field": "ts"}
    return Scenario(name, fields, steps, ["id"], [], options, mode="batch"), {2, 3, 5}


def _ids(t: tidelake.Table) -> set[int]:
    return set(t.to_arrow().column("id").to_pylist())


@pytest.mark.parametrize(("time_type", "scale"), [("INT", 1), ("BIGINT", 1000), ("BIGINT", 1)])
def test_java_writes_tidelake_compacts(java, tmp_path, time_type, scale):
    """Java writes expired rows; reads keep them until tidelake's full compaction drops them;
    Java then reads the same rows."""
    wh = str(tmp_path)
    sc, kept = _scenario(f"rle_{time_type.lower()}_{scale}", time_type, scale)
    t = java_write(java, wh, sc)
    assert _ids(t) == {1, 2, 3, 4, 5}
    compare_read(java, t, wh, "record-level before compaction")
    t.compact(full=True)
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert _ids(t) == kept
    compare_read(java, t, wh, "record-level tidelake compacted")


def test_tidelake_writes_java_compacts(java, tmp_path):
    """tidelake writes into the table Java created; Java's full compaction expires the same
    rows tidelake's would, and tidelake reads what Java reads."""
    wh = str(tmp_path)
    sc, kept = _scenario("rle_reverse", "BIGINT", 1000)
    java.run(sc.java_job(wh, with_steps=False))
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    import pyarrow as pa

    for step in sc.steps:
        t.write(pa.table({"id": [r[0] for r in step["rows"]], "ts": [r[1] for r in step["rows"]],
                          "v": [r[2] for r in step["rows"]]}, schema=t.schema))
    assert _ids(t) == {1, 2, 3, 4, 5}
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [{"compact": True}]})
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    assert _ids(t) == kept
    compare_read(java, t, wh, "record-level java compacted")


def test_max_level_file_expiring_later_is_rewritten(tmp_path):
    """A file already at the max level whose rows expire afterwards is rewritten by the next
    full compaction (Java ``pickFullCompaction`` with ``isExpireFile``), not left in place."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64(), False), ("ts", pa.int32()), ("v", pa.int32())])
    t = tidelake.create_table(str(tmp_path / "t"), schema, primary_keys=["id"], bucket=1,
                              options={"record-level.expire-time": "4 s", "record-level.time-field": "ts"})
    now = int(time.time())
    t.write(pa.table({"id": [1, 2], "ts": [now, now + DAY], "v": [1, 2]}, schema=schema))
    t.compact(full=True)
    assert _ids(t) == {1, 2} and {f["level"] for f in t.system("files").to_pylist()} == {5}
    time.sleep(6)
    t.compact(full=True)
    assert _ids(t) == {2}


def test_bad_time_field_is_refused(tmp_path):
    """A time field that is missing, absent from the table or of another type is refused
    (naming the option) by the first write or compaction that would merge rows, as Java's
    key-value writer refuses to start."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string())])
    for options, match in [({}, "record-level.time-field"),
                           ({"record-level.time-field": "nope"}, "not a column"),
                           ({"record-level.time-field": "s"}, "INT, BIGINT or TIMESTAMP")]:
        t = tidelake.create_table(str(tmp_path / f"t{len(options)}{match[:3]}"), schema, primary_keys=["id"],
                                  bucket=1, options={"record-level.expire-time": "1 d", **options})
        with pytest.raises(tidelake.InvalidArgumentError, match=match):
            t.write(pa.table({"id": [1], "s": ["a"]}, schema=schema))
            t.compact(full=True)
