"""``sink.process-time-zone`` and ``sink.watermark-time-zone``: the zones automatic tags are
named in, two ways with Java Paimon 1.3.1 (the ``java`` oracle), and tidelake alone.

Java's committer runs on the real clock; tidelake's clock is moved (``_internal.set_clock_offset``,
development builds). Expected names are computed from the snapshots' own times in the table's
zone (``zoneinfo``), so the tests do not depend on when they run nor on the machine's zone.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from _java import (
    Scenario,
    compare_read,
    java,  # noqa: F401  (the session's oracle JVM, a fixture)
    java_write,
)
from test_interop_java_tags import FIELDS, SCHEMA, java_tags, write

import tidelake
from tidelake import _internal
from tidelake.exceptions import InvalidArgumentError

# +05:45 all year: hourly tag names differ from those of any whole-hour zone.
ZONE = "Asia/Kathmandu"
HOURLY = {"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
          "sink.process-time-zone": ZONE}
HOUR = dt.timedelta(hours=1)


@pytest.fixture
def offset() -> Iterator[Any]:
    """``offset(hours)``: tidelake's clock runs that many hours ahead of the real one."""

    def at(hours: float) -> None:
        _internal.set_clock_offset(int(hours * 3600 * 1000))

    yield at
    _internal.set_clock_offset(0)


def local(epoch_ms: int, zone: str) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch_ms / 1000, ZoneInfo(zone)).replace(tzinfo=None)


def hour_before(epoch_ms: int) -> str:
    """The hourly tag of a snapshot at ``epoch_ms`` in ZONE: the hour before its own."""
    return (local(epoch_ms, ZONE).replace(minute=0, second=0, microsecond=0) - HOUR).strftime("%Y-%m-%d %H")


def test_java_zone_tags_then_tidelake_continues(java, tmp_path, offset):  # noqa: F811
    """Java names its hourly tag in the table's zone; tidelake, three hours later, names the
    next one in the same zone; Java lists both and reads tidelake's."""
    wh = str(tmp_path)
    sc = Scenario("zone_a", FIELDS, [{"rows": [[1, "a"]]}], primary_keys=["k"],
                  options={"bucket": "1", **HOURLY}, mode="batch")
    t = java_write(java, wh, sc)
    first = t.snapshots()[0].time_millis
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == {hour_before(first): 1}
    offset(3)
    write(t, 2)
    expected = {hour_before(first): 1, hour_before(t.snapshots()[-1].time_millis): 2}
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected
    assert java_tags(java, wh, "db.zone_a") == expected
    compare_read(java, t, wh, "zone tag by tidelake", tag=hour_before(t.snapshots()[-1].time_millis))


def test_tidelake_zone_tags_then_java_continues(java, tmp_path, offset):  # noqa: F811
    """tidelake creates the table and tags five hours in the past; Java continues on the real
    clock from tidelake's tag, in the same zone."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.zone_b", SCHEMA, primary_keys=["k"], bucket=1, options=HOURLY)
    offset(-5)
    write(t, 1)
    offset(0)
    first = t.snapshots()[0].time_millis
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == {hour_before(first): 1}
    java.run({**Scenario("zone_b", FIELDS, [{"rows": [[2, "b"]]}], mode="batch").java_job(wh), "existing": True})
    expected = {hour_before(first): 1, hour_before(t.snapshots()[-1].time_millis): 2}
    assert java_tags(java, wh, "db.zone_b") == expected
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected


def test_watermark_tags_in_the_watermark_zone(java, tmp_path):  # noqa: F811
    """Java's watermarks named in Asia/Shanghai (UTC would give 2026-01-04 and 2026-01-05)."""
    wh = str(tmp_path)
    w1 = int(dt.datetime(2026, 1, 5, 20, tzinfo=dt.timezone.utc).timestamp() * 1000)
    w2 = int(dt.datetime(2026, 1, 6, 20, tzinfo=dt.timezone.utc).timestamp() * 1000)
    sc = Scenario("zone_w", FIELDS, [{"rows": [[1, "a"]], "watermark": w1}, {"rows": [[2, "b"]], "watermark": w2}],
                  primary_keys=["k"], options={"bucket": "1", "sink.watermark-time-zone": "Asia/Shanghai"})
    t = java_write(java, wh, sc)
    t.set_option("tag.automatic-creation", "watermark")
    write(t, 3)
    expected = {"2026-01-05": 1, "2026-01-06": 2}
    assert {tg.name: tg.snapshot_id for tg in t.tags()} == expected
    assert java_tags(java, wh, "db.zone_w") == expected
    compare_read(java, t, wh, "watermark zone tag", tag="2026-01-06")


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Etc/GMT+12", "GMT+14:00", "-12:00"])
def test_batch_tags_are_dated_in_the_process_zone(tmp_path, zone):
    """+14 and -12 hours are 26 hours apart: the two dates always differ."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, options={
        "tag.automatic-creation": "batch", "sink.process-time-zone": zone})
    write(t, 1)
    ms = t.snapshots()[0].time_millis
    py_zone = {"GMT+14:00": "Pacific/Kiritimati", "-12:00": "Etc/GMT+12"}.get(zone, zone)
    assert [tg.name for tg in t.tags()] == [f"batch-write-{local(ms, py_zone).date()}"]


@pytest.mark.parametrize("key,value,mode", [
    ("sink.process-time-zone", "Mars/Olympus", "process-time"),
    ("sink.process-time-zone", "asia/shanghai", "batch"),
    ("sink.watermark-time-zone", "utc", "watermark"),
    ("sink.watermark-time-zone", "+19:00", "watermark"),
])
def test_unknown_zones_fail_the_commit_naming_the_option(tmp_path, key, value, mode):
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, options={"tag.automatic-creation": mode, key: value})
    with pytest.raises(InvalidArgumentError, match=re.escape(f"'{key}' = '{value}'")):
        write(t, 1)
    assert t.snapshots() == []


def test_a_zone_without_automatic_tags_is_not_read(tmp_path):
    """Java reads the zones only to create automatic tags; so does tidelake."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, options={"sink.process-time-zone": "Mars/Olympus"})
    write(t, 1)
    assert len(t.snapshots()) == 1
