"""The streaming query of tests/test_kafka_exactly_once.py, run as its own process (and process
group) so the test can kill it with SIGKILL: Kafka (``tidelake-kafka``) -> ``cdc_sink`` -> a
catalog, from a fixed checkpoint.

    python tests/_kafka_query.py BOOTSTRAP TOPIC WAREHOUSE CHECKPOINT MODE [BATCH]

MODE ``finish`` drains the topic (Trigger.AvailableNow) and exits 0; ``run`` runs until killed;
``before``, ``between`` and ``after`` kill this process group themselves in the BATCH-th
micro-batch of this run (counted from 1): before its first table commit (its files written),
after its first table commit (the other tables of that batch not committed), or after the sink
returned (every table committed, Spark's commit log not written). Before killing, the point is
recorded in ``WAREHOUSE/../kills.txt``. Prints ``started`` once the query runs.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys


def die(where: pathlib.Path, what: str) -> None:
    with (where.parent / "kills.txt").open("a") as f:
        f.write(what + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.killpg(os.getpgid(0), signal.SIGKILL)


def main() -> None:
    bootstrap, topic, warehouse, checkpoint, mode = sys.argv[1:6]
    target = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tidelake.spark
    from tidelake.table import Table

    spark = (SparkSession.builder.master("local[2]").appName("kafka-exactly-once")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "1g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tidelake.spark.register_kafka(spark)
    wh = pathlib.Path(warehouse)
    state = {"batch": 0, "commits": 0}
    commit = Table.commit

    def watched_commit(self, *args, **kwargs):
        hit = mode in ("before", "between") and state["batch"] == target and state["commits"] == 0
        if hit and mode == "before":
            die(wh, f"before the first commit of batch {state['id']}")
        ids = commit(self, *args, **kwargs)
        state["commits"] += 1
        if hit:
            die(wh, f"after the first commit of batch {state['id']}")
        return ids

    Table.commit = watched_commit  # type: ignore[method-assign]
    inner = tidelake.spark.cdc_sink(warehouse, "debezium-json")

    def sink(batch, batch_id: int) -> None:
        state["batch"] += 1
        state["commits"] = 0
        state["id"] = batch_id
        inner(batch, batch_id)
        if mode == "after" and state["batch"] == target:
            die(wh, f"after every commit of batch {batch_id}")

    df = (spark.readStream.format("tidelake-kafka").option("bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", "100").load())
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    if mode == "finish":
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"query failed: {query.exception()}")


if __name__ == "__main__":
    main()
