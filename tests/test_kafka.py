"""The ``tidelake-kafka`` streaming source (tidelake.spark.register_kafka) against a real Kafka
broker (tests/_kafka.py): every record exactly once with its coordinates, micro-batches bounded
by maxOffsetsPerTrigger, and Debezium messages through ``cdc_sink`` equal to the source's model
across restarts of the query."""

from __future__ import annotations

import datetime as dt
import pathlib
import sys
import uuid

import pytest

import tidelake
import tidelake.spark
from tidelake.exceptions import InvalidArgumentError

pytest.importorskip("pyspark")
pytest.importorskip("confluent_kafka")
from tidelake.spark.kafka import KafkaStreamReader, fair_share  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource  # noqa: E402


def kafka_stream(spark, broker, topic: str, **options: str):
    tidelake.spark.register_kafka(spark)
    reader = (spark.readStream.format("tidelake-kafka").option("bootstrap.servers", broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def run_available_now(df, sink, checkpoint: pathlib.Path) -> None:
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    query.awaitTermination(180)
    assert query.exception() is None


def test_every_record_once_with_its_coordinates(spark, kafka, tmp_path):
    topic = kafka.create_topic(f"raw-{uuid.uuid4().hex[:8]}", partitions=3)
    sent = {f"k{i}".encode(): f"value {i}".encode() for i in range(1500)}
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    kafka.produce(topic, sent.items())
    batches: list[list] = []
    df = kafka_stream(spark, kafka, topic, maxOffsetsPerTrigger="400")
    run_available_now(df, lambda b, _id: batches.append(b.collect()), tmp_path / "chk")
    rows = [r for b in batches for r in b]
    assert max(len(b) for b in batches) <= 400 and len(batches) >= 4
    assert sorted(r.key for r in rows) == sorted(sent) and all(sent[r.key] == r.value for r in rows)
    assert len({(r.partition, r.offset) for r in rows}) == len(sent) and {r.topic for r in rows} == {topic}
    assert {r.partition for r in rows} == {0, 1, 2}
    by_partition: dict[int, list[int]] = {}
    for r in rows:
        by_partition.setdefault(r.partition, []).append(r.offset)
    assert all(sorted(offsets) == list(range(len(offsets))) for offsets in by_partition.values())
    assert all(r.timestamp.astimezone(dt.timezone.utc) >= before for r in rows)

    more = {b"late": b"after the restart"}
    kafka.produce(topic, more.items())
    batches.clear()
    run_available_now(df, lambda b, _id: batches.append(b.collect()), tmp_path / "chk")  # resumes
    assert [(r.key, r.value) for b in batches for r in b] == list(more.items())


def test_debezium_through_cdc_sink_equals_the_model(spark, kafka, tmp_path):
    topic = kafka.create_topic(f"cdc-{uuid.uuid4().hex[:8]}", partitions=2)
    src = DebeziumSource("shop")
    src.create_table("orders", [Column("id", "int64"), Column("status", "string")])
    src.create_table("users", [Column("id", "int64"), Column("name", "string")])
    kafka.produce(topic, [src.insert("orders", {"id": i, "status": "new"}) for i in range(50)]
                  + [src.insert("users", {"id": i, "name": f"u{i}"}) for i in range(10)]
                  + [src.update("orders", i, {"status": "paid"}) for i in range(0, 50, 3)]
                  + [src.delete("users", 3)])
    warehouse, chk = tmp_path / "wh", tmp_path / "chk"
    df = kafka_stream(spark, kafka, topic, maxOffsetsPerTrigger="25")
    sink = tidelake.spark.cdc_sink(str(warehouse), "debezium-json")
    run_available_now(df, sink, chk)
    src.add_column("orders", Column("note", "string"))
    kafka.produce(topic, [src.update("orders", 1, {"status": "sent", "note": "n"}), src.delete("orders", 2),
                          src.insert("orders", {"id": 99, "status": "new", "note": "x"}), src.delete("users", 1),
                          src.update("users", 4, {"name": "ada"})])
    run_available_now(df, sink, chk)
    catalog = tidelake.Catalog(warehouse)
    orders = {r["id"]: r for r in catalog.get_table("shop.orders").to_arrow().to_pylist()}
    assert orders == {k: {"note": None, **v} for k, v in src.model("orders").items()}
    users = {r["id"]: r for r in catalog.get_table("shop.users").to_arrow().to_pylist()}
    assert users == src.model("users")


def test_options_are_checked(kafka):
    with pytest.raises(InvalidArgumentError, match="bootstrap.servers"):
        KafkaStreamReader({"subscribe": "t"})
    with pytest.raises(InvalidArgumentError, match="subscribe"):
        KafkaStreamReader({"bootstrap.servers": kafka.bootstrap})
    with pytest.raises(InvalidArgumentError, match="startingOffsets"):
        KafkaStreamReader({"bootstrap.servers": kafka.bootstrap, "subscribe": "t", "startingoffsets": "first"})
    with pytest.raises(InvalidArgumentError, match="maxOffsetsPerTrigger"):
        KafkaStreamReader({"bootstrap.servers": kafka.bootstrap, "subscribe": "t", "maxoffsetspertrigger": "0"})
    missing = KafkaStreamReader({"bootstrap.servers": kafka.bootstrap, "subscribe": "no-such-topic"})
    with pytest.raises(InvalidArgumentError, match="no-such-topic"):
        missing.initialOffset()
    missing.stop()


def test_fair_share_bounds_a_batch():
    avail = {("t", "0"): 5, ("t", "1"): 100, ("t", "2"): 100}
    assert fair_share(avail, 105) == {("t", "0"): 5, ("t", "1"): 50, ("t", "2"): 50}
    assert sum(fair_share(avail, 1).values()) == 1
    assert fair_share(avail, 1000) == avail


def test_a_partition_added_later_is_read_from_its_start(spark, kafka, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = kafka.create_topic(f"grow-{uuid.uuid4().hex[:8]}", partitions=1)
    kafka.produce(topic, [(b"a", b"1")])
    got: list = []
    df = kafka_stream(spark, kafka, topic)
    run_available_now(df, lambda b, _id: got.extend(b.collect()), tmp_path / "chk")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, 2)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(3):
        producer.produce(topic, value=f"new {i}".encode(), partition=1)
    assert producer.flush(30) == 0
    run_available_now(df, lambda b, _id: got.extend(b.collect()), tmp_path / "chk")
    assert sorted((r.partition, r.offset, r.value) for r in got) == [
        (0, 0, b"1"), (1, 0, b"new 0"), (1, 1, b"new 1"), (1, 2, b"new 2")]
