"""Automatic tags (``tag.automatic-creation``) created by tidelake's committer, and the tag verbs
rename and replace (Python, CLI).

Time passes by moving the engine's wall clock (``_internal.set_clock_offset``, development
builds): each test puts "now" at 10:00 local time of a fixed day, so the expected tag names do
not depend on when the test runs. The two-way checks with Java are in test_interop_java.py.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from tidelake import _internal
from tidelake.cli import main as cli

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
DAY0 = dt.datetime(2026, 3, 10, 10, 0)  # local time


class Clock:
    """Moves the engine's clock to local wall-clock times."""

    def at(self, local: dt.datetime) -> None:
        target_ms = int(local.astimezone().timestamp() * 1000)
        _internal.set_clock_offset(target_ms - int(time.time() * 1000))


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()
    _internal.set_clock_offset(0)



def write(t: tidelake.Table, k: int) -> None:
    t.write(pa.table({"k": [k], "v": [f"v{k}"]}, schema=SCHEMA), mode="append")


def tags(t: tidelake.Table) -> dict[str, int]:
    return {tag.name: tag.snapshot_id for tag in t.tags()}


AUTO = {"tag.automatic-creation": "process-time"}


def opts(**extra: str) -> dict[str, str]:
    return {**AUTO, **extra}


def test_process_time_daily_tags_the_previous_day_then_each_period(tmp_path, clock):
    """The first snapshot is tagged with the day before its own; later snapshots are tagged
    once their time passes the end of the day after the last tag, with the day before theirs."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"], bucket=1, options=opts())
    clock.at(DAY0)
    write(t, 1)
    assert tags(t) == {"2026-03-09": 1}
    clock.at(DAY0 + dt.timedelta(hours=13))  # 23:00 the same day: nothing new
    write(t, 2)
    assert tags(t) == {"2026-03-09": 1}
    clock.at(DAY0 + dt.timedelta(days=1))
    write(t, 3)
    assert tags(t) == {"2026-03-09": 1, "2026-03-10": 3}
    clock.at(DAY0 + dt.timedelta(days=4))  # days skipped: one tag, of the day before
    write(t, 4)
    assert tags(t) == {"2026-03-09": 1, "2026-03-10": 3, "2026-03-13": 4}
    assert t.to_arrow(tag="2026-03-10").num_rows == 3
    tag = json.loads((tmp_path / "t" / "tag" / "tag-2026-03-10").read_text())
    assert "tagCreateTime" not in tag and tag["id"] == 3


def test_names_follow_period_and_formatter(tmp_path, clock):
    clock.at(DAY0 + dt.timedelta(minutes=30))
    cases = {
        "hourly": ({"tag.creation-period": "hourly"}, "2026-03-10 09"),
        "compact": ({"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes_and_spaces"},
                    "2026031009"),
        "nodash": ({"tag.period-formatter": "without_dashes"}, "20260309"),
        "two": ({"tag.creation-period": "two-hours"}, "2026-03-10 08"),
        "dur": ({"tag.creation-period-duration": "15 min"}, "202603101015"),
    }
    for name, (extra, tag) in cases.items():
        t = tidelake.create_table(tmp_path / name, SCHEMA, options=opts(**extra))
        write(t, 1)
        assert tags(t) == {tag: 1}, name


def test_delay_waits_past_the_period_end(tmp_path, clock):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, options=opts(**{"tag.creation-delay": "12 h"}))
    clock.at(DAY0)
    write(t, 1)
    clock.at(DAY0 + dt.timedelta(hours=23))  # 09:00 next day: 21:00 after the delay
    write(t, 2)
    assert tags(t) == {"2026-03-09": 1}
    clock.at(DAY0 + dt.timedelta(hours=26))  # 12:00: the delay has passed
    write(t, 3)
    assert tags(t) == {"2026-03-09": 1, "2026-03-10": 3}


def test_automatic_completion_tags_every_skipped_period_in_turn(tmp_path, clock):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, options=opts(**{"tag.automatic-completion": "true"}))
    clock.at(DAY0)
    write(t, 1)
    clock.at(DAY0 + dt.timedelta(days=3))
    write(t, 2)
    write(t, 3)
    assert tags(t) == {"2026-03-09": 1, "2026-03-10": 2, "2026-03-11": 3}


def test_num_retained_max_drops_the_oldest_automatic_tags_only(tmp_path, clock):
    t = tidelake.create_table(tmp_path / "t", SCHEMA,
                              options=opts(**{"tag.num-retained-max": "2", "tag.default-time-retained": "30 d"}))
    clock.at(DAY0)
    write(t, 1)
    t.create_tag("manual")
    for day in (1, 2, 3):
        clock.at(DAY0 + dt.timedelta(days=day))
        write(t, day + 1)
    assert tags(t) == {"manual": 1, "2026-03-11": 3, "2026-03-12": 4}
    created = next(tg for tg in t.tags() if tg.name == "2026-03-12")
    assert created.create_time[:4] == [2026, 3, 13, 10] and created.time_retained == 30 * 86400


def test_watermark_mode_without_watermark_creates_nothing(tmp_path, clock):
    """tidelake commits carry the latest watermark; a table never given one gets no tags."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, options={"tag.automatic-creation": "watermark"})
    clock.at(DAY0)
    write(t, 1)
    clock.at(DAY0 + dt.timedelta(days=2))
    write(t, 2)
    assert tags(t) == {}


def test_batch_tags_the_latest_snapshot_of_each_day(tmp_path, clock):
    t = tidelake.create_table(tmp_path / "t", SCHEMA,
                              options={"tag.automatic-creation": "batch", "tag.num-retained-max": "2"})
    clock.at(DAY0)
    write(t, 1)
    write(t, 2)
    assert tags(t) == {"batch-write-2026-03-10": 2}
    t.create_tag("manual")
    clock.at(DAY0 + dt.timedelta(days=1))
    write(t, 3)  # three tags: the oldest (by snapshot, then file time) goes
    assert tags(t) == {"manual": 2, "batch-write-2026-03-11": 3}
    custom = tidelake.create_table(tmp_path / "c", SCHEMA, options={"tag.automatic-creation": "batch",
                                                                     "tag.batch.customized-name": "nightly"})
    write(custom, 1)
    write(custom, 2)
    assert tags(custom) == {"nightly": 2}


def test_bad_tag_options_are_refused_naming_them(tmp_path):
    for extra, match in [({"tag.creation-period": "weekly"}, "tag.creation-period"),
                         ({"tag.creation-delay": "1 d"}, "tag.creation-delay"),
                         ({"sink.process-time-zone": "Mars/Olympus"}, "sink.process-time-zone")]:
        with pytest.raises((tidelake.InvalidArgumentError, tidelake.UnsupportedError), match=match):
            t = tidelake.create_table(tmp_path / f"t{len(match)}", SCHEMA, options=opts(**extra))
            write(t, 1)


# ---- rename and replace ---------------------------------------------------------------------------


def test_rename_and_replace_tag(tmp_path):
    t = tidelake.create_table(tmp_path / "t", SCHEMA)
    write(t, 1)
    write(t, 2)
    t.create_tag("a", snapshot_id=1)
    t.rename_tag("a", "b")
    assert tags(t) == {"b": 1}
    assert t.to_arrow(tag="b").num_rows == 1
    with pytest.raises(tidelake.TableNotFoundError, match="'a'"):
        t.rename_tag("a", "c")
    t.create_tag("c")
    with pytest.raises(tidelake.TableAlreadyExistsError, match="'c'"):
        t.rename_tag("b", "c")
    replaced = t.replace_tag("b", time_retained=dt.timedelta(hours=1))
    assert (replaced.snapshot_id, replaced.time_retained) == (2, 3600)
    assert tags(t) == {"b": 2, "c": 2}
    assert t.replace_tag("b", snapshot_id=1).time_retained is None
    with pytest.raises(tidelake.TableNotFoundError, match="'zzz'"):
        t.replace_tag("zzz")


def test_cli_rename_and_replace_tag(tmp_path):
    t = tidelake.create_table(tmp_path / "t", SCHEMA)
    write(t, 1)
    write(t, 2)
    path = str(tmp_path / "t")
    runner = CliRunner()
    assert runner.invoke(cli, ["tags", "create", path, "x", "--snapshot", "1"]).exit_code == 0
    out = runner.invoke(cli, ["tags", "replace", path, "x", "--retain", "2h"])
    assert out.exit_code == 0 and "now on snapshot 2" in out.output, out.output
    out = runner.invoke(cli, ["tags", "rename", path, "x", "y"])
    assert out.exit_code == 0 and "renamed tag x to y" in out.output, out.output
    assert tags(t) == {"y": 2}
    assert runner.invoke(cli, ["tags", "rename", path, "x", "y"]).exit_code == 3
