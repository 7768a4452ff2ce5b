"""CDC ingestion throughput and memory (issue #19): Debezium JSON events synced into a table with
``tidelake.cdc.sync`` vs the plain upsert path writing the same changes from Arrow vs Spark
parsing the same JSON itself.

    .venv/bin/python benches/cdc.py                          # 100,000 events in batches of 10,000
    .venv/bin/python benches/cdc.py --events 20000           # quicker
    .venv/bin/python benches/cdc.py --paths cdc.sync,spark   # some paths only

The events (``examples/cdc_stream.py``: Debezium MySQL connector shape, schema envelope, Kafka
key) change one source table ``id BIGINT, name STRING, qty INT, price DECIMAL(10,2), updated
TIMESTAMP(6)``: 50% inserts, 35% updates (before + after image), 15% deletes. The workload is
generated once and saved (Arrow IPC, JSON lines); each path then runs in a fresh process (peak
RSS = that process's ``VmHWM``), on a fresh table with 4 buckets, one commit per batch unless
said otherwise:

* ``cdc.sync``: JSON bytes -> decode (Rust) -> schema check -> write with row kinds -> commit;
* ``decode only``: ``cdc.decode`` of the same bytes (the parsing share of the above);
* ``decode only (no envelope)``: the same events without Kafka Connect's schema envelope
  (``schemas.enable=false``: the payload only, types inferred), to show what the envelope costs;
* ``upsert (Arrow)``: the same changes prepared as Arrow beforehand (the after images upserted,
  the deleted keys deleted, one writer and one commit per batch): what a hand-written pipeline
  that already has typed rows pays;
* ``spark``: what a Spark user without ``tidelake.cdc`` writes: ``spark.read.text`` of each
  batch's JSON lines, ``from_json`` with the envelope's schema, Debezium's Decimal (base64
  big-endian bytes) and MicroTimestamp decoded with SQL functions, the last change per key (by
  binlog position), then ``tidelake.spark.write`` of the upserts and of the deletes (two
  commits per batch); ``local[2]``, driver 2g, session start-up not timed. Its peak RSS is the
  driver JVM's (the Python driver and workers come on top).

Every table is checked equal to the source's rows at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

import tidelake
from tidelake import cdc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from cdc_stream import Column, DebeziumSource, decimal_column, micro_timestamp_column, money  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("qty", pa.int32()),
                    ("price", pa.decimal128(10, 2)), ("updated", pa.timestamp("us"))])


def workload(events: int, batch: int, seed: int = 5):
    """Batches of (Debezium messages, upsert rows, deleted keys) and the source."""
    rng = random.Random(seed)
    src = DebeziumSource("bench")
    src.create_table("items", [Column("id", "int64"), Column("name", "string"), Column("qty", "int32"),
                               decimal_column("price", 10, 2), micro_timestamp_column("updated")])
    rows = src.tables["items"].rows
    t0 = dt.datetime(2026, 1, 1)
    out = []
    next_id = 0
    for start in range(0, events, batch):
        messages, upserts, deletes = [], {}, set()
        for i in range(start, min(events, start + batch)):
            roll = rng.random()
            if roll < 0.5 or len(rows) < 100:
                row = {"id": next_id, "name": f"item {next_id}", "qty": rng.randrange(1000),
                       "price": money(rng.randrange(10**7)), "updated": t0 + dt.timedelta(seconds=i)}
                next_id += 1
                messages.append(src.insert("items", row))
            elif roll < 0.85:
                key = rng.choice(list(rows)) if len(rows) < 1000 else rng.randrange(next_id)
                if key not in rows:
                    continue
                messages.append(src.update("items", key, {"qty": rng.randrange(1000),
                                                          "updated": t0 + dt.timedelta(seconds=i)}))
                row = rows[key]
            else:
                key = rng.randrange(next_id)
                if key not in rows:
                    continue
                messages.append(src.delete("items", key))
                upserts.pop(key, None)
                deletes.add(key)
                continue
            upserts[row["id"]] = dict(row)
            deletes.discard(row["id"])
        up = pa.Table.from_pylist(list(upserts.values()), schema=SCHEMA)
        dl = pa.table({"id": pa.array(sorted(deletes), pa.int64())})
        out.append((messages, up, dl))
    return src, out


def state(table: tidelake.Table) -> dict:
    return {r["id"]: r for r in table.to_arrow().to_pylist()}


PATHS = ("decode only", "decode only (no envelope)", "cdc.sync", "upsert (Arrow)", "spark")


def save(work: pathlib.Path, events: int, batch: int) -> tuple[int, int]:
    """Generate the workload into ``work``; (events, JSON bytes)."""
    src, batches = workload(events, batch)
    for i, (messages, up, dl) in enumerate(batches):
        pairs = pa.table({"key": pa.array([k for k, _ in messages], pa.binary()),
                          "value": pa.array([v for _, v in messages], pa.binary())})
        for name, data in (("messages", pairs), ("upserts", up), ("deletes", dl)):
            with pa.ipc.new_file(work / f"{i:04d}.{name}.arrow", data.schema) as f:
                f.write_table(data)
        (work / f"{i:04d}.jsonl").write_bytes(b"\n".join(v for _, v in messages) + b"\n")
    expected = [{c: v.get(c) for c in SCHEMA.names} for _, v in sorted(src.model("items").items())]
    with pa.ipc.new_file(work / "expected.arrow", SCHEMA) as f:
        f.write_table(pa.Table.from_pylist(expected, schema=SCHEMA))
    return sum(len(m) for m, _, _ in batches), sum(len(v) for m, _, _ in batches for _, v in m)


def load(path: pathlib.Path) -> pa.Table:
    with pa.ipc.open_file(path) as f:
        return f.read_all()


def batch_count(work: pathlib.Path) -> int:
    return len(list(work.glob("*.jsonl")))


def messages(work: pathlib.Path, i: int) -> list[tuple[bytes, bytes]]:
    data = load(work / f"{i:04d}.messages.arrow")
    return list(zip(data.column("key").to_pylist(), data.column("value").to_pylist()))


def spark_path(work: pathlib.Path, out: pathlib.Path) -> tuple[float, int]:
    """The ``spark`` path; (seconds, the JVM's peak RSS in kB)."""
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    import tidelake.spark

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "2g").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    image = "struct<id:bigint,name:string,qty:int,price:string,updated:bigint>"
    envelope = f"struct<payload:struct<before:{image},after:{image},op:string,source:struct<pos:bigint>>>"
    latest = Window.partitionBy("id").orderBy(F.col("pos").desc())

    def columns(img: str) -> list:
        price = F.conv(F.hex(F.unbase64(F.col(f"{img}.price"))), 16, 10).cast("decimal(20,0)") / 100
        return [F.col(f"{img}.id").alias("id"), F.col(f"{img}.name").alias("name"), F.col(f"{img}.qty").alias("qty"),
                price.cast("decimal(10,2)").alias("price"),
                F.timestamp_micros(F.col(f"{img}.updated")).cast("timestamp_ntz").alias("updated")]

    start = time.perf_counter()
    for i in range(batch_count(work)):
        parsed = spark.read.text(str(work / f"{i:04d}.jsonl")) \
            .select(F.from_json("value", envelope).alias("e")).select("e.payload.*") \
            .withColumn("id", F.coalesce(F.col("after.id"), F.col("before.id"))) \
            .withColumn("pos", F.col("source.pos")) \
            .withColumn("n", F.row_number().over(latest)).where("n = 1").cache()
        tidelake.spark.write(parsed.where("op != 'd'").select(*columns("after")), str(out), "upsert")
        tidelake.spark.write(parsed.where("op = 'd'").select("id"), str(out), "delete")
        parsed.unpersist()
    seconds = time.perf_counter() - start
    jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    status = pathlib.Path(f"/proc/{jvm}/status").read_text()
    spark.stop()
    return seconds, int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:")))


def child(path: str, work: pathlib.Path) -> dict:
    """Run one path in this (fresh) process; its seconds and peak RSS. Batches are read from
    disk as they are applied (Arrow IPC, not timed apart: milliseconds), so the peak is one
    batch's worth plus what the path keeps."""
    n = batch_count(work)
    expected = {r["id"]: r for r in load(work / "expected.arrow").to_pylist()}
    out = work / f"out-{PATHS.index(path)}"
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    if path == "decode only":
        for i in range(n):
            cdc.decode(messages(work, i))
    elif path == "decode only (no envelope)":  # all batches stripped beforehand (not timed)
        bare = [[(k, json.dumps(json.loads(v)["payload"]).encode()) for k, v in messages(work, i)] for i in range(n)]
        start = time.perf_counter()
        for m in bare:
            cdc.decode(m)
    elif path == "cdc.sync":
        catalog = tidelake.Catalog(out)
        for i in range(n):
            cdc.sync(catalog, messages(work, i), bucket=4, commit_identifier=i, commit_user="bench")
        seconds = time.perf_counter() - start
        assert state(catalog.get_table("bench.items")) == expected
    elif path == "upsert (Arrow)":
        table = tidelake.create_table(out, SCHEMA, primary_keys=["id"], bucket=4)
        for i in range(n):
            with table.writer(wait_compaction=True) as w:
                w.upsert(load(work / f"{i:04d}.upserts.arrow"))
                w.delete(load(work / f"{i:04d}.deletes.arrow"))
                table.commit(w.prepare_commit(), i, w.commit_user)
        seconds = time.perf_counter() - start
        assert state(table) == expected
    else:
        table = tidelake.create_table(out, SCHEMA, primary_keys=["id"], bucket=4)
        seconds, rss_kb = spark_path(work, out)
        assert state(table.refresh()) == expected
        return {"seconds": seconds, "peak_rss_mb": rss_kb / 1024}
    if path.startswith("decode"):
        seconds = time.perf_counter() - start
    status = pathlib.Path("/proc/self/status").read_text()
    rss_kb = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmHWM:")))
    return {"seconds": seconds, "peak_rss_mb": rss_kb / 1024}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of: {', '.join(PATHS)}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, pathlib.Path(args.work))))
        return 0
    paths = [p.strip() for p in args.paths.split(",")]
    unknown = set(paths) - set(PATHS)
    if unknown:
        ap.error(f"unknown paths {sorted(unknown)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        gen = time.perf_counter()
        n, size = save(work, args.events, args.batch)
        print(f"{n} events ({size / 1e6:.0f} MB of JSON) in {batch_count(work)} batches, generated in "
              f"{time.perf_counter() - gen:.0f} s")
        results = {}
        for path in paths:
            done = subprocess.run([sys.executable, __file__, "--child", path, "--work", tmp], check=True,
                                  stdout=subprocess.PIPE, text=True)
            results[path] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  {path}: {results[path]['seconds']:.2f} s", flush=True)
    print("\n| path | seconds | events/s | peak RSS MB |\n|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['seconds']:.2f} | {n / r['seconds']:,.0f} | {r['peak_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
