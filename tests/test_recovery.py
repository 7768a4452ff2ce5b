"""Bad input and recovery (issue #34): typo'd option keys and values refused with a suggestion,
custom keys declared, plain-text messages, and failed or interrupted writes that leave nothing
behind and back off before they run again.

Damaged snapshots and missing files (reads, rollback, doctor) are in test_errors.py.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import tidelake

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _pk(path: pathlib.Path, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, primary_keys=["id"], bucket=1, options=options or None)


def _rows(ids: range, v: str = "x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def _unreferenced(t: tidelake.Table) -> list[tuple[str, int]]:
    """Files nothing references, whatever their age."""
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)


# ---- option keys and values --------------------------------------------------------------------


def test_a_typo_in_an_option_key_is_refused_naming_the_key_it_meant(tmp_path):
    typo = r"unknown table option 'bukcet' \(did you mean 'bucket'\?\)"
    with pytest.raises(tidelake.InvalidArgumentError, match=typo):
        tidelake.create_table(str(tmp_path / "t"), SCHEMA, options={"bukcet": "4"})
    assert not (tmp_path / "t").exists()
    catalog = tidelake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    with pytest.raises(tidelake.InvalidArgumentError, match="did you mean 'bucket'"):
        catalog.create_table("db.t", SCHEMA, options={"bukcet": "4"})
    t = _pk(tmp_path / "pk")
    with pytest.raises(tidelake.InvalidArgumentError, match="did you mean 'snapshot.num-retained.min'"):
        t.set_option("snapshot.num-retaind.min", "3")
    assert t.refresh().schema_id == 0
    # Paimon's keys in every family are accepted, fallback keys included
    t.set_option("fields.v.aggregate-function", "last_value")
    t.set_option("deduplicate.ignore-delete", "false")
    t.set_option("file-index.bloom-filter.columns", "v")
    t.set_option("parquet.enable.dictionary", "true")
    assert t.refresh().options["deduplicate.ignore-delete"] == "false"


def test_keys_of_ones_own_are_stored_once_declared(tmp_path):
    with pytest.raises(tidelake.InvalidArgumentError, match="list it in option 'tidelake.custom-options'"):
        _pk(tmp_path / "t", owner="team-a")
    t = _pk(tmp_path / "t", **{"owner": "team-a", "tidelake.custom-options": "owner,cost-center"})
    t.set_option("cost-center", "42")
    assert {k: t.options[k] for k in ("owner", "cost-center")} == {"owner": "team-a", "cost-center": "42"}
    with pytest.raises(tidelake.InvalidArgumentError, match="unknown table option 'region'"):
        t.set_option("region", "eu")


def test_a_table_whose_files_hold_unknown_keys_still_opens_and_writes(tmp_path):
    t = _pk(tmp_path / "t")
    schema_file = tmp_path / "t" / "schema" / "schema-0"
    schema = json.loads(schema_file.read_text())
    schema["options"]["a.newer.paimon.key"] = "1"  # as a newer Paimon may write
    schema_file.write_text(json.dumps(schema))
    t = tidelake.open_table(str(tmp_path / "t"))
    assert t.options["a.newer.paimon.key"] == "1"
    t.write(_rows(range(3)))
    t.set_option("snapshot.num-retained.min", "3")  # other keys still change
    assert t.to_arrow().num_rows == 3


def test_a_bad_option_value_is_an_invalid_argument_in_plain_words(tmp_path):
    with pytest.raises(tidelake.InvalidArgumentError) as info:
        tidelake.create_table(str(tmp_path / "t"), SCHEMA, options={"bucket": "four"})
    assert str(info.value) == "option 'bucket' = 'four': invalid digit found in string"
    t = _pk(tmp_path / "pk")
    with pytest.raises(tidelake.InvalidArgumentError, match="option 'snapshot.time-retained' = 'soon'"):
        t.set_option("snapshot.time-retained", "soon")
    assert t.refresh().schema_id == 0


def test_spark_write_options_are_checked_like_table_options(tmp_path):
    from tidelake.spark.io import CreateSpec, Location

    spec = CreateSpec.of_options({"path": str(tmp_path / "t"), "primary-key": "id", "bukcet": "2"})
    with pytest.raises(tidelake.InvalidArgumentError, match="did you mean 'bucket'"):
        spec.open_or_create(Location(str(tmp_path / "t")), SCHEMA, mode="error")
    ok = CreateSpec.of_options({"path": str(tmp_path / "t"), "primary-key": "id", "bucket": "2",
                                "snapshot-id": "1", "write-only": "true"})
    table, created = ok.open_or_create(Location(str(tmp_path / "t")), SCHEMA, mode="error")
    assert created and table.options["write-only"] == "true"


def test_sql_parse_errors_are_plain_text(tmp_path):
    t = _pk(tmp_path / "t")
    t.write(_rows(range(3)))
    with pytest.raises(tidelake.InvalidArgumentError) as info:
        t.delete(filter="id = = 1")
    assert "\x1b" not in str(info.value)
    assert "id = = 1" in str(info.value)


# ---- writes that fail or are interrupted ------------------------------------------------------


def test_a_refused_one_shot_write_backs_off_and_leaves_no_files(tmp_path):
    """Each attempt is refused (on a cross-partition-upsert table, another writer adding rows
    while it writes is a conflict): the write backs off between its replays as commit retries
    do, then raises, and none of its files remain."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("day", pa.string()), ("v", pa.string())])
    t = tidelake.create_table(str(tmp_path / "t"), schema, primary_keys=["id"], partition_keys=["day"],
                              options={"commit.min-retry-wait": "20 ms"})

    def day_rows(v: str) -> pa.Table:
        return pa.table({"id": list(range(10)), "day": ["d1"] * 10, "v": [v] * 10}, schema=schema)

    t.write(day_rows("first"))
    other = tidelake.open_table(str(tmp_path / "t"))
    attempts: list[float] = []

    def conflict_meanwhile(done: int, total: int | None) -> None:
        attempts.append(time.monotonic())
        other.upsert(day_rows(f"other-{len(attempts)}"))

    with pytest.raises(tidelake.CommitConflictError):
        t.upsert(day_rows("mine"), progress=conflict_meanwhile)
    assert len(attempts) == 6  # the write and its 5 replays
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    for gap, wait in zip(gaps, [0.02, 0.04, 0.08, 0.16, 0.32]):
        assert gap >= wait, (gaps, "waits of commit.min-retry-wait * 2^n")
    assert _unreferenced(t.refresh()) == []
    assert set(t.to_arrow()["v"].to_pylist()) == {"other-6"}

    # commit.timeout bounds the replays too: their waits alone would take 620 ms
    t.set_option("commit.timeout", "300 ms")
    attempts.clear()
    with pytest.raises(tidelake.CommitConflictError):
        t.upsert(day_rows("mine"), progress=conflict_meanwhile)
    assert 1 <= len(attempts) < 6
    assert _unreferenced(t.refresh()) == []


def test_a_one_shot_write_overtaken_while_it_wrote_lands_after_leaving_nothing(tmp_path):
    """A commit to the same keys lands while a one-shot upsert writes: the upsert's files are
    re-sequenced above it and land in the first attempt (its values win, as the later write),
    and the files they replaced are deleted."""
    t = _pk(tmp_path / "t")
    t.write(_rows(range(10)))
    other = tidelake.open_table(str(tmp_path / "t"))
    calls = []

    def overtake(done: int, total: int | None) -> None:
        calls.append(done)
        other.upsert(_rows(range(5, 15), "other"))

    t.upsert(_rows(range(10), "mine"), progress=overtake)
    assert calls == [10]  # one attempt
    got = dict(zip(*t.refresh().to_arrow().select(["id", "v"]).to_pydict().values()))
    assert got == {**{k: "mine" for k in range(10)}, **{k: "other" for k in range(10, 15)}}
    assert _unreferenced(t) == []


_INTERRUPTED_WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    import tidelake
    t = tidelake.open_table(sys.argv[1])
    batches = (pa.record_batch({"id": list(range(i * 20_000, (i + 1) * 20_000)), "v": ["x" * 40] * 20_000},
                               schema=t.schema) for i in range(40))
    print("writing", flush=True)
    try:
        t.upsert(pa.RecordBatchReader.from_batches(t.schema, batches))
    except KeyboardInterrupt:
        sys.exit(130)
""")


def test_ctrl_c_during_a_write_leaves_no_files(tmp_path):
    """Ctrl-C at random points of one-shot writes (while batches are written, flushed,
    compacted and committed): every write either committed or deleted its files."""
    t = _pk(tmp_path / "t", **{"write-buffer-size": "256 kb"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for delay in (0.1, 0.3, 0.6, 0.9, 1.2, 1.6):  # the write takes about 1.5 s here
        proc = subprocess.Popen([sys.executable, "-c", _INTERRUPTED_WRITER, str(tmp_path / "t")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        # 130: stopped (KeyboardInterrupt); 0: it had finished; -SIGINT: it had returned and
        # the signal hit the interpreter's exit
        assert proc.wait(timeout=120) in (0, 130, -signal.SIGINT), proc.stderr.read()
        assert _unreferenced(t.refresh()) == [], f"interrupted after {delay} s"
    rows = t.refresh().to_arrow()
    assert rows.num_rows in (0, 800_000)


def test_a_key_kept_per_partition_is_not_looked_up_as_one_row(tmp_path, caplog):
    """A primary key without the partition column on a fixed-bucket table: accepted, as Java
    Paimon 1.3 accepts it, with a warning that a key written to two partitions keeps a row in
    each (as Java reads it); a point lookup, which answers one row per key, refuses it."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.string(), nullable=False),
                        ("v", pa.string())])
    with caplog.at_level(logging.WARNING, logger="tidelake.schema"):
        tidelake.reset_logging()  # the engine sees the level just set
        t = tidelake.create_table(str(tmp_path / "t"), schema, primary_keys=["id"], partition_keys=["day"], bucket=2)
    assert "keeps a row in each" in caplog.text
    t.write(pa.table({"id": [1], "day": ["d1"], "v": ["old"]}, schema=schema))
    t.write(pa.table({"id": [1], "day": ["d2"], "v": ["new"]}, schema=schema))
    assert sorted(t.to_arrow()["v"].to_pylist()) == ["new", "old"]
    with pytest.raises(tidelake.UnsupportedError, match="keeps a row for each partition"):
        t.lookup([(1,)])
    # with dynamic buckets the key moves between partitions: one row, and lookups answer it
    d = tidelake.create_table(str(tmp_path / "d"), schema, primary_keys=["id"], partition_keys=["day"])
    d.write(pa.table({"id": [1], "day": ["d1"], "v": ["old"]}, schema=schema))
    d.write(pa.table({"id": [1], "day": ["d2"], "v": ["new"]}, schema=schema))
    assert d.lookup([(1,)])["v"].to_pylist() == ["new"]
