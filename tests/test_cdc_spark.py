"""tidelake.spark.cdc_sink: Debezium JSON lines streamed by Spark into a catalog, exactly-once
across a replayed micro-batch (Spark's commit log removed, as after a crash between our
commits and Spark's)."""

from __future__ import annotations

import pathlib
import sys

import pytest

import tidelake
import tidelake.spark
from test_spark_stream import _drop_last_commit_log

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource  # noqa: E402

pytest.importorskip("pyspark")


def write_events(directory: pathlib.Path, name: str, events: list[tuple[bytes, bytes]]) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_bytes(b"\n".join(value for _, value in events) + b"\n")


def test_cdc_sink_is_exactly_once_across_a_replayed_batch(spark, tmp_path):
    src = DebeziumSource("shop")
    src.create_table("orders", [Column("id", "int64"), Column("status", "string")])
    src.create_table("users", [Column("id", "int64"), Column("name", "string")])
    incoming, warehouse, chk = tmp_path / "in", tmp_path / "wh", tmp_path / "chk"
    write_events(incoming, "1.json", [src.insert("orders", {"id": i, "status": "new"}) for i in range(5)]
                 + [src.insert("users", {"id": 1, "name": "ada"})])
    df = spark.readStream.option("maxFilesPerTrigger", 1).text(str(incoming))

    def run():
        sink = tidelake.spark.cdc_sink(str(warehouse), "debezium-json", primary_keys=["id"])
        q = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(chk))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None

    run()
    catalog = tidelake.Catalog(warehouse)
    orders = catalog.get_table("shop.orders")
    assert len(orders.snapshots()) == 1
    _drop_last_commit_log(chk)
    src.add_column("orders", Column("note", "string"))
    write_events(incoming, "2.json", [src.update("orders", 1, {"status": "paid", "note": "n"}), src.delete("orders", 2),
                                      src.delete("users", 1)])
    run()  # replays batch 0 (skipped on every table), then batch 1
    assert len(orders.refresh().snapshots()) == 2
    got = {r["id"]: r for r in orders.to_arrow().to_pylist()}
    assert got == {k: {"note": None, **v} for k, v in src.model("orders").items()}
    assert catalog.get_table("shop.users").to_arrow().num_rows == 0
    assert len(catalog.get_table("shop.users").snapshots()) == 2
