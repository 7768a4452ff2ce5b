"""Structured Streaming with the ``tidelake`` source on a real local SparkSession: start modes,
rate limits, ``Trigger.AvailableNow``, ``_row_kind``, consumers; the exactly-once sink across a
replayed micro-batch (Spark's commit log removed, as after a crash between our commit and
Spark's); the ``foreachBatch`` upsert sink, also across a replay.
"""

from __future__ import annotations

import pathlib
import pickle

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from conftest import assert_same_rows
from tidelake.spark.stream import StreamWriter
from test_spark import kv, kv_table, orphans

pyspark = pytest.importorskip("pyspark")


def run_available_now(df, checkpoint: pathlib.Path, sink=None, path: str | None = None):
    """Run ``df`` to completion with ``Trigger.AvailableNow``; returns the micro-batches the
    ``foreachBatch`` collector saw (batch id, rows sorted by k) unless a tidelake path is given."""
    seen: list[tuple[int, list[dict]]] = []

    def collect(batch, batch_id):
        seen.append((batch_id, sorted(batch.toArrow().to_pylist(), key=lambda r: (r["k"], r.get("_row_kind", "")))))

    w = df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    if path is not None:
        q = w.format("tidelake").start(path)
    else:
        q = w.foreachBatch(sink or collect).start()
    q.awaitTermination(120)
    assert q.exception() is None
    return seen


def stream(spark, path: str, **options):
    r = spark.readStream.format("tidelake")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(path)


def three_snapshots(tmp_path):
    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2]))
    t.write(kv([3], tag="w"))
    t.delete_keys(kv([1]).select(["k"]))
    return t


def keys(rows):
    return [r["k"] for r in rows]


def test_latest_full_reads_the_full_state_then_changes(spark, tmp_path):
    t = three_snapshots(tmp_path)
    seen = run_available_now(stream(spark, t.path), tmp_path / "chk")
    assert [keys(rows) for _, rows in seen] == [[2, 3]]  # the merged state of snapshot 3
    t.write(kv([4, 2], tag="n"))
    t.delete_keys(kv([3]).select(["k"]))
    seen = run_available_now(stream(spark, t.path), tmp_path / "chk")  # resumes from its checkpoint
    assert [[(r["k"], r["v"]) for r in rows] for _, rows in seen] == [[(2, "n2"), (4, "n4")]]  # delete dropped


def test_from_snapshot_with_row_kind_and_one_snapshot_per_batch(spark, tmp_path):
    t = three_snapshots(tmp_path)
    df = stream(spark, t.path, **{"scan.mode": "from-snapshot", "snapshot-id": 1, "row-kind": "true",
                                  "maxSnapshotsPerTrigger": 1})
    assert df.columns == ["_row_kind", "k", "p", "v"]
    seen = run_available_now(df, tmp_path / "chk")
    assert [[(r["_row_kind"], r["k"]) for r in rows] for _, rows in seen] == [
        [("+I", 1), ("+I", 2)], [("+I", 3)], [("-D", 1)]]


def test_latest_and_from_timestamp_and_row_limit(spark, tmp_path):
    t = three_snapshots(tmp_path)
    latest = run_available_now(stream(spark, t.path, **{"scan.mode": "latest"}), tmp_path / "c1")
    assert all(rows == [] for _, rows in latest)  # Spark may run one empty first batch
    second = t.snapshot(2)
    seen = run_available_now(stream(spark, t.path, **{"scan.mode": "from-timestamp", "timestamp-ms":
                                                      second.time_millis, "row-kind": "true"}), tmp_path / "c2")
    assert [[(r["_row_kind"], r["k"]) for r in rows] for _, rows in seen] == [[("-D", 1), ("+I", 3)]]
    # rows: snapshot 1 has 2 rows, 2 and 3 one each: a 2-row limit gives (0,1], (1,3]
    seen = run_available_now(stream(spark, t.path, **{"scan.mode": "from-snapshot", "snapshot-id": 1,
                                                      "maxRowsPerTrigger": 2, "row-kind": "true"}), tmp_path / "c3")
    assert [len(rows) for _, rows in seen] == [2, 2]
    with pytest.raises(Exception, match="scan.mode"):
        run_available_now(stream(spark, t.path, **{"scan.mode": "earliest"}), tmp_path / "c4")


def test_consumer_id_records_progress(spark, tmp_path):
    t = three_snapshots(tmp_path)
    run_available_now(stream(spark, t.path, **{"consumer-id": "etl"}), tmp_path / "c1")
    t.write(kv([9]))
    seen = run_available_now(stream(spark, t.path, **{"consumer-id": "etl"}), tmp_path / "c1")
    assert [keys(rows) for _, rows in seen] == [[9]]
    # Spark commits a batch to the source when it starts the next one: batch 0 (up to snapshot 3)
    assert tidelake.open_table(t.path).consumers() == {"etl": 4}
    # a new checkpoint resumes from the consumer (re-reading the batch not yet committed to it)
    seen = run_available_now(stream(spark, t.path, **{"consumer-id": "etl"}), tmp_path / "c2")
    assert [keys(rows) for _, rows in seen] == [[9]]


def _drop_last_commit_log(checkpoint: pathlib.Path) -> int:
    """Simulate a crash after the sink committed batch N but before Spark logged it."""
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    return last


def test_stream_sink_is_exactly_once_across_a_replayed_batch(spark, tmp_path):
    src, _ = kv_table(tmp_path / "src", pk=False, bucket=-1)
    dst, _ = kv_table(tmp_path / "dst", pk=False, bucket=-1)
    for i in range(3):
        src.write(kv(range(i * 10, i * 10 + 10)))
    chk = tmp_path / "chk"
    df = stream(spark, src.path, **{"scan.mode": "from-snapshot", "snapshot-id": 1, "maxSnapshotsPerTrigger": 1})
    run_available_now(df, chk, path=dst.path)
    assert len(tidelake.open_table(dst.path).snapshots()) == 3
    replayed = _drop_last_commit_log(chk)
    assert replayed == 2
    src.write(kv(range(30, 35)))
    run_available_now(df, chk, path=dst.path)  # re-runs batch 2 (a no-op), then batch 3
    out = tidelake.open_table(dst.path)
    assert_same_rows(out.to_arrow(), kv(range(35)))
    assert len(out.snapshots()) == 4
    assert orphans(dst.path) == []  # the replay's files were deleted


def test_stream_writer_replay_in_process(tmp_path):
    """The sink's contract without Spark: (checkpoint user, batchId) commits once; a replay's
    files are deleted; abort after a landed commit keeps the files."""
    t, _ = kv_table(tmp_path)
    options = {"path": t.path, "checkpointlocation": str(tmp_path / "chk")}
    first = pickle.loads(pickle.dumps(StreamWriter(options, False)))
    msgs = [first.write(iter(kv(range(5)).to_batches()))]
    StreamWriter(options, False).commit(msgs, 0)  # commit runs on a fresh instance
    StreamWriter(options, False).abort(msgs, 0)
    replay = [StreamWriter(options, False).write(iter(kv(range(5), tag="r").to_batches()))]
    StreamWriter(options, False).commit(replay, 0)
    out = tidelake.open_table(t.path)
    assert_same_rows(out.to_arrow(), kv(range(5)))
    assert len(out.snapshots()) == 1
    assert orphans(t.path) == []


def test_complete_mode_overwrites(spark, tmp_path):
    src, _ = kv_table(tmp_path / "src", pk=False, bucket=-1)
    dst_schema = pa.schema([pa.field("p", pa.string(), nullable=False), ("n", pa.int64())])
    dst = tidelake.create_table(str(tmp_path / "counts"), dst_schema, primary_keys=["p"], bucket=1)
    src.write(kv(range(4), p="a"))
    counts = stream(spark, src.path).groupBy("p").count().withColumnRenamed("count", "n")
    q = (counts.writeStream.format("tidelake").outputMode("complete")
         .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start(dst.path))
    q.awaitTermination(120)
    assert q.exception() is None
    assert tidelake.open_table(dst.path).to_arrow().to_pylist() == [{"p": "a", "n": 4}]


@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_foreach_batch_sink_exactly_once(spark, tmp_path, mode):
    src, _ = kv_table(tmp_path / "src", pk=False, bucket=-1)
    dst, _ = kv_table(tmp_path / "dst", pk=mode == "upsert", bucket=2 if mode == "upsert" else -1)
    src.write(kv(range(10)))
    src.write(kv(range(5, 15), tag="w"))
    chk = tmp_path / "chk"
    df = stream(spark, src.path, **{"maxSnapshotsPerTrigger": 1, "scan.mode": "from-snapshot", "snapshot-id": 1})

    def run():
        q = (df.writeStream.foreachBatch(tidelake.spark.upsert_sink(dst.path, mode=mode))
             .option("checkpointLocation", str(chk)).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    assert len(tidelake.open_table(dst.path).snapshots()) == 2
    _drop_last_commit_log(chk)
    src.write(kv(range(3), tag="x"))
    run()  # replays batch 1 (skipped: already committed), then batch 2
    out = tidelake.open_table(dst.path)
    if mode == "upsert":
        expected = pa.concat_tables([kv(range(3), tag="x"), kv(range(3, 5)), kv(range(5, 15), tag="w")])
    else:  # every source row exactly once
        expected = pa.concat_tables([kv(range(10)), kv(range(5, 15), tag="w"), kv(range(3), tag="x")])
    assert_same_rows(out.to_arrow(), expected)
    assert len(out.snapshots()) == 3
    assert orphans(dst.path) == []
