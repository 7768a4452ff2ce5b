"""Exactly-once from Kafka into tables under a killed query: the streaming query (Kafka ->
``tidelake-kafka`` -> ``cdc_sink`` -> catalog) runs in its own process group
(tests/_kafka_query.py) and is killed with SIGKILL again and again, at chosen points of a
batch's commit (before the first table commit, between the tables of one batch, after the last
one before Spark's commit log) and at random times, then restarted from the same checkpoint,
while Debezium inserts, updates and deletes keep arriving on a real broker. At the end every
table equals the model of all produced messages and no (commit user, batch) landed twice."""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys
import time
import uuid

import pytest

import tidelake

pytest.importorskip("pyspark")
pytest.importorskip("confluent_kafka")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource  # noqa: E402

QUERY = pathlib.Path(__file__).resolve().parent / "_kafka_query.py"
TABLES = ("orders", "users")


def changes(src: DebeziumSource, rng: random.Random, count: int, next_id: list[int]) -> list[tuple[bytes, bytes]]:
    """``count`` random changes spread over both tables: inserts, updates and deletes of live rows."""
    out = []
    for _ in range(count):
        table = rng.choice(TABLES)
        rows = src.tables[table].rows
        roll = rng.random()
        if roll < 0.5 or len(rows) < 5:
            next_id[0] += 1
            value = {"status": "new"} if table == "orders" else {"name": f"u{next_id[0]}"}
            out.append(src.insert(table, {"id": next_id[0], **value}))
        elif roll < 0.8:
            key = rng.choice(sorted(rows))
            out.append(src.update(table, key, {"status": f"s{rng.randrange(100)}"} if table == "orders"
                                  else {"name": f"n{rng.randrange(100)}"}))
        else:
            out.append(src.delete(table, rng.choice(sorted(rows))))
    return out


def start_query(kafka, topic: str, warehouse: pathlib.Path, chk: pathlib.Path, mode: str, batch: int = 0):
    proc = subprocess.Popen([sys.executable, str(QUERY), kafka.bootstrap, topic, str(warehouse), str(chk), mode,
                             str(batch)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "started", or "" when it died first
    return proc, line.strip() == "started"


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_killed_and_restarted_query_is_exactly_once(kafka, tmp_path):
    rng = random.Random(19)
    topic = kafka.create_topic(f"eo-{uuid.uuid4().hex[:8]}", partitions=2)
    src = DebeziumSource("shop")
    src.create_table("orders", [Column("id", "int64"), Column("status", "string")])
    src.create_table("users", [Column("id", "int64"), Column("name", "string")])
    next_id = [0]
    warehouse, chk = tmp_path / "wh", tmp_path / "chk"
    kafka.produce(topic, changes(src, rng, 150, next_id))
    # (mode, batch of the run to kill in); "random" is killed by this test after a random delay
    plan = [("between", 2), ("before", 1), ("random", 0), ("after", 1)]
    for mode, batch in plan:
        proc, _ = start_query(kafka, topic, warehouse, chk, "run" if mode == "random" else mode, batch)
        kafka.produce(topic, changes(src, rng, 60, next_id))  # keeps arriving while the query runs
        if mode == "random":
            time.sleep(rng.uniform(1.0, 6.0))
            kill(proc)
        else:
            try:
                proc.wait(timeout=180)
            except subprocess.TimeoutExpired:
                kill(proc)
                pytest.fail(f"the query did not reach its kill point ({mode}, batch {batch}) in 180 s")
        assert proc.returncode == -signal.SIGKILL, f"the query ended by itself ({proc.returncode}) in {mode}"
    kafka.produce(topic, changes(src, rng, 60, next_id))
    proc, started = start_query(kafka, topic, warehouse, chk, "finish")
    assert started and proc.wait(timeout=180) == 0

    kills = (tmp_path / "kills.txt").read_text().splitlines()
    assert len(kills) == 3 and kills[0].startswith("after the first commit"), kills
    catalog = tidelake.Catalog(warehouse)
    for name in TABLES:
        table = catalog.get_table(f"shop.{name}")
        got = {r["id"]: r for r in table.to_arrow().to_pylist()}
        assert got == src.model(name), name
        appends = [s for s in table.snapshots() if s.commit_kind == "APPEND"]
        assert len({s.commit_user for s in appends}) == 1, f"{name}: the restarted query committed as another user"
        batches = [s.commit_identifier for s in appends]
        assert len(batches) == len(set(batches)), f"{name}: a batch was committed twice"
