"""Automatic tags and the tag verbs, two ways with Java Paimon 1.3.1 (the ``java`` oracle).

Java's committer runs on the real clock; tidelake's clock is moved (``_internal.set_clock_offset``,
development builds) so its commits fall in other periods. Expected names are computed from the
snapshots' own times, so the tests do not depend on when they run. Java lists tags through its
``$tags`` system table and reads a tag with ``scan.tag-name``.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, compare_read, java_read, java_write
from tidelake import _internal

FIELDS = [("k", "INT NOT NULL"), ("v", "STRING")]
SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])


@pytest.fixture
def shift() -> Iterator[Any]:
    """``shift(local_datetime)``: tidelake's clock reads that local time now."""

    def at(local: dt.datetime) -> None:
        _internal.set_clock_offset(int(local.astimezone().timestamp() * 1000) - int(time.time() * 1000))

    yield at
    _internal.set_clock_offset(0)


def local_day(epoch_ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(epoch_ms / 1000).date()


def java_tags(java: JavaOracle, wh: str, table: str) -> dict[str, int]:
    answer = java_read(java, wh, f"{table}$tags")
    names = answer["fields"]
    return {r[names.index("tag_name")]: r[names.index("snapshot_id")] for r in answer["rows"]}


def write(t: tidelake.Table, k: int) -> None:
    t.write(pa.table({"k": [k], "v": [f"v{k}"]}, schema=SCHEMA))


def test_java_auto_tags_then_tidelake_continues(java, tmp_path, shift):
    """Java creates a process-time daily table and writes (tagging the day before); tidelake
    writes a day later: its tag has Java's name, Java lists it and reads the same rows."""
    wh = str(tmp_path)
    sc = Scenario("auto_a", FIELDS, [{"rows": [[1, "a"]]}], primary_keys=["k"],
                  options={"bucket": "1", "tag.automatic-creation": "process-time"}, mode="batch")
    t = java_write(java, wh, sc)
    day = local_day(t.snapshots()[0].time_millis)
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == {str(day - dt.timedelta(days=1)): 1}
    shift(dt.datetime.combine(day + dt.timedelta(days=1), dt.time(10)))
    write(t, 2)
    write(t, 3)
    expected = {str(day - dt.timedelta(days=1)): 1, str(day): 2}
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected
    assert java_tags(java, wh, "db.auto_a") == expected
    compare_read(java, t, wh, "auto tag by tidelake", tag=str(day))


def test_tidelake_auto_tags_then_java_continues(java, tmp_path, shift):
    """tidelake creates a daily table with num-retained-max 2 and writes on two past days; Java
    continues from tidelake's last tag on the real clock and drops the oldest; tidelake writes
    the next day and drops the next oldest; both list the same tags."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.auto_b", SCHEMA, primary_keys=["k"], bucket=1,
                         options={"tag.automatic-creation": "process-time", "tag.num-retained-max": "2"})
    today = dt.date.today()
    for back in (3, 2):
        shift(dt.datetime.combine(today - dt.timedelta(days=back), dt.time(10)))
        write(t, back)
    _internal.set_clock_offset(0)  # Java writes on the real clock
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == {str(today - dt.timedelta(days=4)): 1,
                                                             str(today - dt.timedelta(days=3)): 2}
    java.run({**Scenario("auto_b", FIELDS, [{"rows": [[9, "j"]]}], mode="batch").java_job(wh), "existing": True})
    day = local_day(t.snapshots()[-1].time_millis)
    assert java_tags(java, wh, "db.auto_b") == {str(today - dt.timedelta(days=3)): 2,
                                                str(day - dt.timedelta(days=1)): 3}
    shift(dt.datetime.combine(day + dt.timedelta(days=1), dt.time(10)))
    write(t, 10)
    expected = {str(day - dt.timedelta(days=1)): 3, str(day): 4}
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected
    assert java_tags(java, wh, "db.auto_b") == expected
    compare_read(java, t, wh, "auto tag by tidelake after java", tag=str(day))


def test_watermark_tags_from_java_watermarks(java, tmp_path):
    """Java commits with watermarks (stream mode) to a table without automatic tags; once the
    table asks for watermark tags, tidelake's next commit tags Java's snapshots by their
    watermarks (UTC), as Java would, and Java lists those tags."""
    wh = str(tmp_path)
    w1 = int(dt.datetime(2026, 1, 5, 10, tzinfo=dt.timezone.utc).timestamp() * 1000)
    w2 = int(dt.datetime(2026, 1, 7, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    sc = Scenario("auto_w", FIELDS, [{"rows": [[1, "a"]], "watermark": w1}, {"rows": [[2, "b"]], "watermark": w2}],
                  primary_keys=["k"], options={"bucket": "1"})
    t = java_write(java, wh, sc)
    assert [s.watermark for s in t.snapshots()][-1] == w2
    t.set_option("tag.automatic-creation", "watermark")
    write(t, 3)
    expected = {"2026-01-04": 1, "2026-01-06": 2}
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected
    assert java_tags(java, wh, "db.auto_w") == expected
    compare_read(java, t, wh, "watermark tag", tag="2026-01-06")


def test_renamed_and_replaced_tags_read_by_java(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("tag_verbs", FIELDS, [{"rows": [[1, "a"]]}, {"rows": [[2, "b"]]}, {"tag": "t1"},
                                        {"rows": [[3, "c"]]}], primary_keys=["k"], options={"bucket": "1"},
                  mode="batch")
    t = java_write(java, wh, sc)
    t.rename_tag("t1", "renamed")
    t.create_tag("moving", snapshot_id=1)
    t.replace_tag("moving", time_retained=dt.timedelta(days=1))
    assert java_tags(java, wh, "db.tag_verbs") == {"renamed": 2, "moving": 3}
    compare_read(java, t, wh, "renamed tag", tag="renamed")
    compare_read(java, t, wh, "replaced tag", tag="moving")
