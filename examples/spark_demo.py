"""tidelake + PySpark pipeline on local storage (first part of ``make demo``).

1. starts Spark (``local[*]``) with the ``tidelake`` source registered;
2. creates a primary-key table ``shop.accounts`` (4 buckets, row kinds from its ``op`` column,
   ``changelog-producer = input``) in a local warehouse;
3. lands a synthetic CDC feed (inserts, updates, deletes) as one Parquet file per micro-batch and
   ingests it with Structured Streaming into the table (``writeStream.format("tidelake")``,
   exactly-once per micro-batch, ``Trigger.AvailableNow``);
4. reads the table back in batch (Spark, tidelake's own reader, pypaimon) and as a changelog stream
   (``readStream.format("tidelake")`` with ``_row_kind``), and travels back to snapshot 1;
5. runs ``tidelake doctor``, compacts with ``tidelake compact --full``, runs ``doctor`` again;
6. prints a summary of every count it verified, and exits non-zero on any mismatch.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import pathlib
import random
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

import tidelake

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent / "demo-spark"
WAREHOUSE = ROOT / "warehouse"
LANDING = ROOT / "landing"
CHECKPOINTS = ROOT / "checkpoints"

BATCHES = 6
FIRST_INSERTS = 4000
PER_BATCH = {"+I": 600, "+U": 900, "-D": 300}

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("name", pa.string()),
    ("balance", pa.decimal128(12, 2)),
    ("updated_at", pa.timestamp("us", tz="UTC")),
    ("op", pa.string()),
])
SPARK_SCHEMA = "id bigint, name string, balance decimal(12,2), updated_at timestamp, op string"


class Mismatch(Exception):
    pass


def check(label: str, got: object, expected: object, verified: list[str]) -> None:
    if got != expected:
        raise Mismatch(f"{label}: got {got!r}, expected {expected!r}")
    verified.append(f"{label}: {got}")


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


def cdc_feed(rng: random.Random) -> list[list[dict[str, Any]]]:
    """Micro-batches of CDC events; a key changes at most once per micro-batch (as a CDC
    source emits after compacting its log), so the outcome does not depend on row order."""
    live: set[int] = set()
    next_id = 0
    batches = []
    base = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.timezone.utc)
    for b in range(BATCHES):
        events = []
        inserts = FIRST_INSERTS if b == 0 else PER_BATCH["+I"]
        touched = rng.sample(sorted(live), PER_BATCH["+U"] + PER_BATCH["-D"]) if b else []
        for k in range(inserts):
            events.append(("+I", next_id + k))
        next_id += inserts
        events += [("+U", i) for i in touched[:PER_BATCH["+U"]]]
        events += [("-D", i) for i in touched[PER_BATCH["+U"]:]]
        rows = []
        for op, i in events:
            rows.append({"id": i, "name": f"user-{i}", "op": op,
                         "balance": decimal.Decimal(rng.randint(0, 10_000_000)) / 100,
                         "updated_at": base + dt.timedelta(minutes=b, microseconds=i)})
            if op == "-D":
                live.discard(i)
            else:
                live.add(i)
        rng.shuffle(rows)
        batches.append(rows)
    return batches


def expected_state(batches: list[list[dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for rows in batches:
        for r in rows:
            if r["op"] == "-D":
                state.pop(r["id"], None)
            else:
                state[r["id"]] = r
    return state


def cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "tidelake.cli", *args], check=True, capture_output=True, text=True)
    return out.stdout


def start_spark() -> SparkSession:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need this interpreter (it has tidelake)
    from pyspark.sql import SparkSession

    import tidelake.spark

    spark = (SparkSession.builder.master("local[*]").appName("tidelake-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tidelake.spark.register(spark)
    return spark


def main() -> int:
    verified: list[str] = []
    started = time.time()
    shutil.rmtree(ROOT, ignore_errors=True)
    LANDING.mkdir(parents=True)
    rng = random.Random(2026)

    section("Spark")
    spark = start_spark()
    print(f"PySpark {spark.version}, master {spark.sparkContext.master}, tidelake {tidelake.__version__}")

    section("create shop.accounts (primary key id, 4 buckets, CDC row kinds from column op)")
    catalog = tidelake.Catalog(str(WAREHOUSE))
    catalog.create_database("shop")
    table = catalog.create_table("shop.accounts", SCHEMA, primary_keys=["id"], bucket=4,
                                 # the stream only writes; compaction is a separate job (the CLI, below)
                                 options={"rowkind.field": "op", "changelog-producer": "input",
                                          "write-only": "true"})
    path = table.path
    print(table)

    section(f"ingest a CDC feed of {BATCHES} micro-batches with Structured Streaming")
    feed = cdc_feed(rng)
    for b, rows in enumerate(feed):
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), LANDING / f"cdc-{b:03d}.parquet")
    events = spark.readStream.schema(SPARK_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(LANDING))
    query = (events.writeStream.format("tidelake")
             .option("checkpointLocation", str(CHECKPOINTS / "ingest"))
             .trigger(availableNow=True).start(path))
    query.awaitTermination()
    for p in query.recentProgress:
        print(f"  micro-batch {p['batchId']}: {p['numInputRows']} events")
    state = expected_state(feed)
    counts = {k: sum(1 for rows in feed for r in rows if r["op"] == k) for k in ("+I", "+U", "-D")}
    print(f"  events: {counts['+I']} inserts, {counts['+U']} updates, {counts['-D']} deletes")
    table = tidelake.open_table(path)
    check("snapshots committed by the stream (one per micro-batch)", len(table.snapshots()), BATCHES, verified)
    query = (events.writeStream.format("tidelake").option("checkpointLocation", str(CHECKPOINTS / "ingest"))
             .trigger(availableNow=True).start(path))
    query.awaitTermination()
    check("snapshots after restarting the query (nothing new to ingest)",
          len(tidelake.open_table(path).snapshots()), BATCHES, verified)

    section("batch read back")
    df = spark.read.format("tidelake").load(path)
    got = {r["id"]: r for r in df.toArrow().to_pylist()}
    check("rows read by Spark", len(got), len(state), verified)
    check("rows equal to the CDC model (every column)",
          sum(1 for i, r in state.items() if got.get(i) == r), len(state), verified)
    own = tidelake.open_table(path).to_arrow()
    check("rows read by tidelake's own reader", own.num_rows, len(state), verified)
    from pypaimon import CatalogFactory  # Apache Paimon's own Python client reads the same table

    pp = CatalogFactory.create({"warehouse": str(WAREHOUSE)}).get_table("shop.accounts").new_read_builder()
    theirs = pp.new_read().to_arrow(pp.new_scan().plan().splits())
    check("rows read by pypaimon equal to tidelake's", theirs.select(own.schema.names).cast(own.schema).sort_by("id")
          .equals(own.sort_by("id")), True, verified)
    total = df.selectExpr("cast(sum(balance) as string) as s").collect()[0]["s"]
    check("sum(balance) in Spark SQL", decimal.Decimal(total), sum(r["balance"] for r in state.values()), verified)
    first = spark.read.format("tidelake").option("snapshot-id", 1).load(path).count()
    check("rows at snapshot 1 (time travel)", first, FIRST_INSERTS, verified)

    section("changelog stream read (_row_kind)")
    seen: dict[str, int] = {}

    def tally(batch: DataFrame, batch_id: int) -> None:
        for r in batch.groupBy("_row_kind").count().collect():
            seen[r["_row_kind"]] = seen.get(r["_row_kind"], 0) + r["count"]

    changelog = (spark.readStream.format("tidelake").option("scan.mode", "from-snapshot").option("snapshot-id", 1)
                 .option("row-kind", "true").option("maxSnapshotsPerTrigger", 2).load(path))
    q = (changelog.writeStream.foreachBatch(tally).option("checkpointLocation", str(CHECKPOINTS / "changelog"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    print(f"  changelog rows by kind: {dict(sorted(seen.items()))}")
    for kind in ("+I", "+U", "-D"):
        check(f"changelog {kind} rows", seen.get(kind, 0), counts[kind], verified)

    section("tidelake doctor (before compaction)")
    print(cli("doctor", path))
    files_before = tidelake.open_table(path).system("files").num_rows
    section("tidelake compact --full")
    print(cli("compact", path, "--full"))
    files_after = tidelake.open_table(path).system("files").num_rows
    if not files_after < files_before:
        raise Mismatch(f"compaction left {files_after} data files (was {files_before})")
    verified.append(f"data files before -> after compaction: {files_before} -> {files_after}")
    section("tidelake doctor (after compaction)")
    print(cli("doctor", path))
    after = {r["id"]: r for r in spark.read.format("tidelake").load(path).toArrow().to_pylist()}
    check("rows equal to the model after compaction", sum(1 for i, r in state.items() if after.get(i) == r),
          len(state), verified)
    check("rows after compaction", len(after), len(state), verified)
    spark.stop()

    section(f"summary (verified, {time.time() - started:.0f} s)")
    for line in verified:
        print(f"  ok  {line}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Mismatch as e:
        print(f"\nDEMO FAILED: {e}", file=sys.stderr)
        sys.exit(1)
