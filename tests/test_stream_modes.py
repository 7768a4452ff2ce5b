"""Paimon's startup modes (``scan.mode``, :mod:`tidelake.startup`) and paimon-spark's read
limits (``read.stream.max*PerTrigger``) on the ``tidelake`` Spark source: which snapshot each
mode starts from (Java Paimon 1.3.1's first streaming plan as the oracle), each micro-batch's
rows against ``Table.to_arrow``/``Table.changes`` computed independently, the limits' bounds
with nothing lost or read twice, and the batch modes (``incremental``, ``compacted-full``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, _java_rows, java_read, java_write
from _peers import canonical_rows, sorted_rows
from test_spark import kv, kv_table
from tidelake.exceptions import InvalidArgumentError, UnsupportedError
from tidelake.startup import Start, scan_mode


def _start(t: tidelake.Table, **options: str) -> Start | None:
    return scan_mode(options, t.options).stream_start(t)


def test_modes_resolve_as_java_and_bad_ones_are_named(tmp_path):
    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2]))
    t.write(kv([3]))
    assert scan_mode({}).mode == "latest-full"
    assert scan_mode({"scan.mode": "FULL"}).mode == "latest-full"  # deprecated alias, any case
    assert scan_mode({"log.scan": "latest"}).mode == "latest"  # Java's fallback key
    assert scan_mode({"scan.snapshot-id": "1"}).mode == "from-snapshot"
    assert scan_mode({"scan.tag-name": "x"}).mode == "from-snapshot"
    assert scan_mode({"scan.timestamp": "2024-01-01 00:00:00"}).mode == "from-timestamp"
    assert scan_mode({"incremental-between": "1,2"}).mode == "incremental"
    assert scan_mode({}, {"scan.mode": "latest"}).mode == "latest"  # a table option
    assert scan_mode({"scan.mode": "latest-full"}, {"scan.mode": "latest"}).mode == "latest-full"
    assert _start(t) == Start(2, True)
    assert _start(t, **{"scan.mode": "latest"}) == Start(2, False)
    assert _start(t, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "1"}) == Start(1, True)
    assert _start(t, **{"snapshot-id": "2"}) == Start(1, False)  # tidelake's spelling
    with pytest.raises(InvalidArgumentError, match="'earliest'"):
        scan_mode({"scan.mode": "earliest"})
    assert scan_mode({"scan.file-creation-time-millis": "5"}).mode == "from-file-creation-time"
    assert scan_mode({"scan.creation-time-millis": "5"}).mode == "from-creation-timestamp"
    with pytest.raises(InvalidArgumentError, match="scan.file-creation-time-millis"):
        _start(t, **{"scan.mode": "from-file-creation-time"})
    with pytest.raises(InvalidArgumentError, match="incremental"):
        _start(t, **{"scan.mode": "incremental", "incremental-between": "1,2"})
    with pytest.raises(InvalidArgumentError, match="scan.snapshot-id"):
        _start(t, **{"scan.mode": "from-snapshot-full"})
    with pytest.raises(InvalidArgumentError, match="scan.tag-name"):
        _start(t, **{"scan.tag-name": "x"})


def test_options_that_would_read_other_rows_than_java_are_refused(tmp_path):
    """Java reads ``incremental-to-auto-tag`` as an incremental read (a diff from the automatic
    tag before the one named); streams honour ``streaming-read-overwrite``,
    ``streaming-read-append-overwrite``, ``scan.bounded.watermark`` and
    ``streaming-read-mode = log``. tidelake does none of them, so it refuses them rather than
    read other rows (a full read, a stream skipping OVERWRITE snapshots or never ending)."""
    pytest.importorskip("pyspark")
    from tidelake.spark.stream import _check_stream_options

    t, _ = kv_table(tmp_path)
    t.write(kv([1]))
    auto = scan_mode({"incremental-to-auto-tag": "2024-05-14"})
    assert auto.mode == "incremental"
    with pytest.raises(UnsupportedError, match="incremental-to-auto-tag"):
        auto.incremental_range(t)
    for key, value in [("streaming-read-overwrite", "true"), ("streaming-read-append-overwrite", "TRUE"),
                       ("scan.bounded.watermark", "1000"), ("streaming-read-mode", "log")]:
        for read, table in [({key: value}, {}), ({}, {key: value})]:
            with pytest.raises(UnsupportedError, match=key):
                _check_stream_options(scan_mode(read, table))
    for key, value in [("streaming-read-overwrite", "false"), ("streaming-read-mode", "FILE")]:
        _check_stream_options(scan_mode({key: value}))


def test_java_first_streaming_plan_starts_where_tidelake_does(java, tmp_path):
    """Java writes two COMPACT snapshots (identifiers 3 and 5); its first streaming plan under
    each mode reads the snapshot tidelake starts from, and the same rows."""
    wh = str(tmp_path)
    rows = [{"rows": [[i, i * 10 + s] for i in range(a, b)]} for a, b, s in ((0, 4, 1), (2, 6, 2), (5, 8, 3))]
    steps = [rows[0], rows[1], {"compact": True}, rows[2], {"compact": True}, {"rows": [[0, 99]]}]
    t = java_write(java, wh, Scenario("cf", [("k", "INT NOT NULL"), ("v", "BIGINT")], steps, ["k"], [],
                                      {"bucket": "1"}))
    compacts = [s.id for s in t.snapshots() if s.commit_kind == "COMPACT"]
    assert len(compacts) == 2 and compacts[-1] < t.latest_snapshot().id
    cases = [({"scan.mode": "compacted-full"}, compacts[-1]),
             ({"log.scan": "compacted-full"}, compacts[-1]),
             ({"scan.mode": "compacted-full", "full-compaction.delta-commits": "3"}, compacts[0]),
             ({"scan.mode": "compacted-full", "full-compaction.delta-commits": "2"}, t.latest_snapshot().id),
             ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}, 2),
             ({"scan.mode": "full"}, t.latest_snapshot().id)]
    for options, expected in cases:
        answer = java_read(java, wh, "db.cf", options, stream={"first": True})
        start = _start(t, **options)
        assert start == Start(expected, True) and answer["next_snapshot"] == expected + 1, (options, answer)
        ours = t.to_arrow(snapshot_id=start.snapshot)
        assert sorted_rows(canonical_rows(ours)) == _java_rows(answer, ours.schema, False), options
    answer = java_read(java, wh, "db.cf", {"scan.snapshot-id": "3"}, stream={"first": True})
    assert answer["rows"] == []  # from-snapshot: the first plan only says where the changes start
    assert _start(t, **{"scan.snapshot-id": "3"}) == Start(answer["next_snapshot"] - 1, False)


def _batches(df, checkpoint) -> list[pa.Table]:
    """The micro-batches a ``Trigger.AvailableNow`` run of ``df`` gives, empty ones dropped."""
    seen: list[pa.Table] = []
    q = (df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
         .foreachBatch(lambda batch, _: seen.append(batch.toArrow())).start())
    q.awaitTermination(180)
    assert q.exception() is None
    return [b for b in seen if b.num_rows]


def _stream(spark, path: str, **options):
    r = spark.readStream.format("tidelake").option("row-kind", "true")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(path)


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in table.select(["k", "p", "v"]).to_pylist())


def _changes(t: tidelake.Table, start: int, end: int) -> list[tuple]:
    c = t.changes(start, end)
    return sorted(zip(c["_row_kind"].to_pylist(), *(c[n].to_pylist() for n in ("k", "p", "v"))))


def _kinds(batch: pa.Table) -> list[tuple]:
    return sorted(zip(batch["_row_kind"].to_pylist(), *(batch[n].to_pylist() for n in ("k", "p", "v"))))


def test_full_start_streams_read_the_picked_snapshot_then_the_changes(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2, 3]))
    t.write(kv([2, 4], tag="b"))
    t.compact(full=True)
    compacted = t.latest_snapshot().id
    t.delete_keys(kv([1]).select(["k"]))
    t.write(kv([5, 3], tag="c"))
    latest = t.latest_snapshot().id
    seen = _batches(_stream(spark, t.path, **{"scan.mode": "compacted-full"}), tmp_path / "c1")
    assert _rows(seen[0]) == _rows(t.to_arrow(snapshot_id=compacted))
    assert set(seen[0]["_row_kind"].to_pylist()) == {"+I"}
    assert sorted(x for b in seen[1:] for x in _kinds(b)) == _changes(t, compacted, latest)
    assert _changes(t, compacted, latest)  # the changes after the compaction are read
    # from-snapshot-full with Paimon's key, one split per batch: the full state of 2 in pieces
    seen = _batches(_stream(spark, t.path, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": 2,
                                              "read.stream.maxFilesPerTrigger": 1}), tmp_path / "c2")
    full = t.scan(snapshot_id=2).splits()
    assert len(full) == 2  # two buckets
    assert [b.num_rows for b in seen[:2]] == [s.read().read_all().num_rows for s in full]  # merged rows
    assert sorted(r for b in seen[:2] for r in _rows(b)) == _rows(t.to_arrow(snapshot_id=2))
    assert sorted(x for b in seen[2:] for x in _kinds(b)) == _changes(t, 2, latest)


def test_read_limits_bound_each_batch_and_lose_nothing(spark, tmp_path):
    """Splits of 1..4 rows over two partitions and two buckets: each batch admits splits while
    what it took before is under the limit (paimon-spark's rounding), every row once."""
    t, _ = kv_table(tmp_path, partition=True)
    for i, p in enumerate(("a", "b", "a", "b", "a")):
        t.write(kv(range(i * 10, i * 10 + 2 + i), p=p))
    expected = _changes(t, 0, t.latest_snapshot().id)
    splits = [s.row_count for i in range(1, 6) for s in t.changes_scan(i - 1, i).splits()]
    assert len(splits) >= 7
    for n, (key, limit) in enumerate([("read.stream.maxFilesPerTrigger", 2), ("read.stream.maxRowsPerTrigger", 3),
                                      ("maxRowsPerTrigger", 3), ("read.stream.maxBytesPerTrigger", 1)]):
        seen = _batches(_stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, key: limit}),
                        tmp_path / f"l{n}")
        assert sorted(x for b in seen for x in _kinds(b)) == expected, key  # nothing lost or read twice
        if key.endswith("Files" + "PerTrigger"):
            assert len(seen) == (len(splits) + 1) // 2
        elif key.endswith("BytesPerTrigger"):
            assert [b.num_rows for b in seen] == splits  # one split per batch
        else:  # rows: under the limit before the last split of each batch
            sizes = iter(splits)
            for b in seen:
                taken = last = 0
                while taken < b.num_rows:
                    last = next(sizes)
                    taken += last
                # whole splits; under the limit before the last one; full unless the last batch
                assert taken == b.num_rows and taken - last < limit, (key, [x.num_rows for x in seen])
                assert taken >= limit or b is seen[-1], (key, [x.num_rows for x in seen])


def test_batch_modes(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2]))
    t.write(kv([2, 3], tag="b"))
    t.compact(full=True)
    t.delete_keys(kv([1]).select(["k"]))
    got = spark.read.format("tidelake").option("scan.mode", "incremental").option("incremental-between", "1,4").load(t.path).toArrow()
    changes = t.changes(1, 4)
    kept = changes.filter(pc.is_in(changes["_row_kind"], pa.array(["+I", "+U"])))
    assert _rows(got) == _rows(kept) and _rows(got)
    compacted = next(s.id for s in t.snapshots() if s.commit_kind == "COMPACT")
    got = spark.read.format("tidelake").option("scan.mode", "compacted-full").load(t.path).toArrow()
    assert _rows(got) == _rows(t.to_arrow(snapshot_id=compacted)) != _rows(t.to_arrow())
    with pytest.raises(Exception, match="latest-fulll"):
        spark.read.format("tidelake").option("scan.mode", "latest-fulll").load(t.path).collect()


def test_min_rows_holds_a_batch_back_until_the_delay(tmp_path):
    """``read.stream.minRowsPerTrigger`` + ``maxTriggerDelayMs`` on the reader itself (no Spark):
    the first batch always comes; then fewer rows wait while the last batch is recent; limits
    split a snapshot and the next batch resumes inside it."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from tidelake.spark import io
    from tidelake.spark.stream import StreamReader

    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2, 3]))
    schema = io.spark_schema(t, True)
    options = {"path": t.path, "scan.mode": "from-snapshot", "scan.snapshot-id": "1",
               "read.stream.minrowspertrigger": "3", "read.stream.maxtriggerdelayms": "600000"}
    r = StreamReader(options, schema)
    start = r.initialOffset()
    first = r.latestOffset(start, r.getDefaultReadLimit())
    assert first == {"snapshot": 1}
    t.write(kv([4]))
    assert r.latestOffset(first, r.getDefaultReadLimit()) == first  # 1 row < 3, batch 1 is recent
    assert r.latestOffset(first, ReadAllAvailable()) == {"snapshot": 2}  # Trigger.Once reads all
    t.write(kv([5, 6]))
    assert r.latestOffset(first, r.getDefaultReadLimit()) == {"snapshot": 3}
    r.last_trigger_ms -= 600_001  # the delay has passed: fewer rows go
    t.write(kv([7]))
    assert r.latestOffset({"snapshot": 3}, r.getDefaultReadLimit()) == {"snapshot": 4}
    with pytest.raises(InvalidArgumentError, match="maxTriggerDelayMs"):
        StreamReader({k: v for k, v in options.items() if k != "read.stream.maxtriggerdelayms"}, schema)
    # one split per batch: a batch ends inside snapshot 1 (two buckets) and the next resumes there
    one = StreamReader({"path": t.path, "scan.mode": "from-snapshot", "scan.snapshot-id": "1",
                        "read.stream.maxfilespertrigger": "1"}, schema)
    limit = one.getDefaultReadLimit()
    inside = one.latestOffset({"snapshot": 0}, limit)
    assert inside == {"snapshot": 1, "index": 0}
    assert one.latestOffset(inside, ReadAllAvailable()) == {"snapshot": 4}  # the rest of 1, then 2..4
    one.cap = 1  # Trigger.AvailableNow started at snapshot 1: the rest of 1 still comes
    assert one.latestOffset(inside, ReadAllAvailable()) == {"snapshot": 1}
    one.cap = None
    assert one.latestOffset(inside, limit) == {"snapshot": 1}
    parts = one.partitions({"snapshot": 0}, inside) + one.partitions(inside, {"snapshot": 1})
    assert len(parts) == 2
    keys = [k for p in parts for k in pa.Table.from_batches(list(one.read(p)), io.arrow_schema(schema))["k"].to_pylist()]
    assert sorted(keys) == [1, 2, 3]


def _written_around(tmp_path) -> tuple[tidelake.Table, int, str]:
    """A primary-key table written three times; the epoch ms between the first and second
    write, and its warehouse."""
    import time

    wh = str(tmp_path / "wh")
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.fc", pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())]),
                         primary_keys=["k"], bucket=1, options={"write-only": "true"})
    t.write(pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}))
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    t.write(pa.table({"k": pa.array([2, 4], pa.int32()), "v": ["B", "d"]}))
    t.write(pa.table({"k": pa.array([5], pa.int32()), "v": ["e"]}))
    return t, since, wh


def test_creation_time_modes_read_as_java(java, spark, tmp_path):
    """``from-file-creation-time`` reads the latest snapshot's files created since T (a file
    filter: the first write's rows are gone, the newer files merged alone), in a batch read, a
    Spark read and a stream's first batch, as Java's first plan does; ``from-creation-timestamp``
    starts from the first snapshot committed at or after T, or filters files when none is."""
    t, since, wh = _written_around(tmp_path)
    by_time = {"scan.mode": "from-file-creation-time", "scan.file-creation-time-millis": str(since)}
    ours = t.to_arrow(options=by_time)
    assert sorted(ours["k"].to_pylist()) == [2, 4, 5]
    theirs = java_read(java, wh, "db.fc", by_time)
    assert sorted_rows(canonical_rows(ours)) == _java_rows(theirs, ours.schema, False)
    first = java_read(java, wh, "db.fc", by_time, stream={"first": True})
    assert _java_rows(first, ours.schema, False) == sorted_rows(canonical_rows(ours))
    assert _start(t, **by_time) == Start(first["next_snapshot"] - 1, True)
    got = spark.read.format("tidelake").options(**by_time).load(t.path).toArrow()
    assert sorted(got["k"].to_pylist()) == [2, 4, 5]
    seen = _batches(_stream(spark, t.path, **by_time), tmp_path / "fc")
    assert sorted(seen[0]["k"].to_pylist()) == [2, 4, 5] and len(seen) == 1

    by_creation = {"scan.creation-time-millis": str(since)}
    assert _start(t, **by_creation) == Start(1, False)  # snapshot 2 is the first at or after T
    first = java_read(java, wh, "db.fc", by_creation, stream={"first": True})
    assert first["rows"] == [] and first["next_snapshot"] == 2
    pinned = scan_mode(by_creation, t.options).batch_snapshot(t)
    assert pinned["snapshot_id"] == 2
    assert sorted(t.to_arrow(snapshot_id=2)["k"].to_pylist()) == sorted(
        r[0] for r in java_read(java, wh, "db.fc", by_creation)["rows"])
    too_early = {"scan.creation-time-millis": "1"}  # before every snapshot: files created since then
    assert scan_mode(too_early, t.options).read_options(t) == {
        "scan.mode": "from-file-creation-time", "scan.file-creation-time-millis": "1"}
    assert _start(t, **too_early) == Start(3, True)
