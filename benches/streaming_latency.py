"""Streaming latency (issue #35): how long after a commit returns its rows reach a streaming
reader, for each way of following a table.

    .venv/bin/python benches/streaming_latency.py                        # 60 s per configuration
    .venv/bin/python benches/streaming_latency.py --duration 30 --rates 1 --readers python,tail
    .venv/bin/python benches/streaming_latency.py --quick --readers python,tail --png /tmp/l.png

One configuration = one reader, one poll setting, one commit rate, on a fresh primary-key table
(``k BIGINT`` key, ``seq``, ``sent_ms``; 1 bucket, default options). A writer process commits
``Table.upsert`` of ``--rows`` rows (keys cycling over 1,000, so most are updates) at a fixed
rate (commit ``i`` starts at ``start + i / rate``, or at once if the previous one ran late) for
``--duration`` seconds; every row carries its commit's number ``seq``, and the writer stamps each
commit's wall-clock time when ``upsert`` **returns** (a row cannot hold the time of the commit
that writes it, so the time is joined to the rows by ``seq``). Latency of a commit = the
wall-clock time this process receives the first row of it from the reader − that return time
(negative when a reader saw the snapshot before the writer's call returned). Readers, each a
subprocess that prints what it delivers, one line per row (or per commit for Spark), as it
gets it:

* ``python``: the Python API, as an application follows a table: poll
  ``Table.latest_snapshot()`` every ``interval`` seconds and read ``Table.changes(last, latest)``
  (tidelake has no push-based reader: following a table is this loop);
* ``tail``: the ``tidelake tail --json --interval SECONDS`` command (the same loop in the CLI),
  its stdout read through a pipe (with ``PYTHONUNBUFFERED=1``: piped Python stdout is
  block-buffered otherwise, which would hold rows back);
* ``spark``: Spark Structured Streaming, ``spark.readStream.format("tidelake")`` with
  ``scan.mode=latest`` into a ``foreachBatch`` sink on the driver; its trigger is Spark's default
  (``processingTime`` 0: the next micro-batch starts as soon as the previous one ends, polling
  for new snapshots every ``spark.sql.streaming.pollingDelay``, 10 ms).

The two polling readers' latency is dominated by their poll interval: each is run with the CLI's
default ``--interval 1.0`` and a tuned ``0.1`` (``--intervals``). Before the writer starts, one
warm-up commit must reach the reader (so Spark's start-up is not measured). Per configuration:
commits written, commits delivered (all must be; a missing one is reported), latency p50, p99
and max, the writer's achieved rate, and the 1-minute load average (the machine is shared:
record it with the numbers). Target (issue #35): p50 under 1 s at 1 commit/s. ``--out`` keeps
every latency as JSON; ``--png`` plots p50/p99 per configuration.

Object-store requests (``--requests``, default after 10, 100 and 1,000 commits; not with
``--quick``): on a table in a bucket of moto's S3 server on 127.0.0.1
(``benches/s3_requests.py``), the Python API follower's requests for one poll that finds no
new snapshot and for one that delivers a commit, recorded around the follower's calls only
(the writer's commits run between recordings), by kind and target.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
READERS = ("python", "tail", "spark")
KEYS = 1000
WARMUP_SEQ = -1
TARGET_P50_S = 1.0


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("k", pa.int64(), nullable=False), ("seq", pa.int64()), ("sent_ms", pa.int64())])


def batch(seq: int, rows: int) -> Any:
    import pyarrow as pa

    keys = [(seq * rows + j) % KEYS for j in range(rows)]
    return pa.table({"k": keys, "seq": [seq] * rows, "sent_ms": [int(time.time() * 1000)] * rows}, schema=schema())


# ---- the child processes (hidden subcommands) --------------------------------------------------

def writer(path: str, rate: float, duration: float, rows: int) -> None:
    """Commit at ``rate`` per second for ``duration`` s; print ``{"seq", "returned"}`` per commit."""
    import tidelake

    t = tidelake.open_table(path)
    start = time.time()
    seq = 0
    while seq < rate * duration:
        delay = start + seq / rate - time.time()
        if delay > 0:
            time.sleep(delay)
        data = batch(seq, rows)
        t.upsert(data)
        print(json.dumps({"seq": seq, "start": start, "returned": time.time()}), flush=True)
        seq += 1


def poll(t: Any, last: int) -> tuple[int, list[int]]:
    """One step of the Python API's follow loop on table ``t`` delivered up to snapshot
    ``last``: the latest snapshot id and the ``seq`` of each row committed since (none when
    there is no new snapshot)."""
    latest = t.latest_snapshot()
    if latest is None or latest.id <= last:
        return last, []
    return latest.id, t.changes(last, latest.id, columns=["seq"]).column("seq").to_pylist()


def python_reader(path: str, interval: float) -> None:
    """The Python API's follow loop: print each delivered row's ``seq``."""
    import tidelake

    t = tidelake.open_table(path)
    latest = t.latest_snapshot()
    last = latest.id if latest is not None else 0
    print("READY", flush=True)
    while True:
        time.sleep(interval)
        last, seqs = poll(t, last)
        for seq in seqs:
            print(seq, flush=True)


def spark_reader(path: str) -> None:
    """Spark Structured Streaming from the table (default trigger): print each micro-batch's seqs."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import tidelake.spark

    spark = (SparkSession.builder.master("local[2]").appName("tidelake-streaming-latency")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tidelake.spark.register(spark)

    def deliver(df: Any, batch_id: int) -> None:
        for seq in sorted({r["seq"] for r in df.select("seq").collect()}):
            print(seq, flush=True)

    from pyspark.errors import StreamingQueryException

    print("READY", flush=True)
    for attempt in range(5):
        checkpoint = tempfile.mkdtemp(prefix="tidelake-latency-chk-")
        q = (spark.readStream.format("tidelake").option("scan.mode", "latest").load(path)
             .writeStream.option("checkpointLocation", checkpoint).foreachBatch(deliver).start())
        try:
            q.awaitTermination()
        except StreamingQueryException as e:
            # On a loaded machine the source's Python planner can miss Spark's fixed 10 s
            # connect-back window at start-up; nothing was delivered yet, so start again.
            if "failed to connect back" not in str(e) or attempt == 4:
                raise
            print(f"restarting the query: {e.getMessage()[:200]}", file=sys.stderr, flush=True)


# ---- one configuration ---------------------------------------------------------------------------

def _pump(stream: Any, out: queue.Queue[tuple[float, str]]) -> None:
    for line in stream:
        out.put((time.time(), line.strip()))
    out.put((time.time(), ""))


def _seq(line: str) -> int | None:
    """The seq of a reader's line: a bare number (python, spark) or a ``tail --json`` object."""
    if line.startswith("{"):
        return int(json.loads(line)["seq"])
    return int(line) if line.lstrip("-").isdigit() else None


def reader_command(reader: str, path: pathlib.Path, interval: float | None) -> list[str]:
    if reader == "tail":
        return [sys.executable, "-m", "tidelake.cli", "tail", str(path), "--json", "--interval", str(interval)]
    extra = ["--interval", str(interval)] if reader == "python" else []
    return [sys.executable, str(pathlib.Path(__file__).resolve()), f"_{reader}-reader", str(path), *extra]


def configuration(work: pathlib.Path, reader: str, interval: float | None, rate: float, duration: float,
                  rows: int, timeout: float) -> dict[str, Any]:
    """Run one configuration; return its latencies and counts."""
    import numpy as np

    import tidelake

    path = work / f"{reader}-{interval}-{rate}"
    shutil.rmtree(path, ignore_errors=True)
    t = tidelake.create_table(path, schema(), primary_keys=["k"], options={"bucket": "1"})
    t.upsert(batch(WARMUP_SEQ - 1, rows))  # a table with a snapshot, which no reader delivers
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = open(path.parent / f"{path.name}.log", "w")  # the reader's stderr (Spark's is long)
    proc = subprocess.Popen(reader_command(reader, path, interval), stdout=subprocess.PIPE, stderr=log, text=True,
                            env=env)
    lines: queue.Queue[tuple[float, str]] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    delivered: dict[int, float] = {}  # seq -> when its first row arrived (stamped by _pump)

    def drain(until: float, want: set[int]) -> None:
        while time.time() < until and not want <= delivered.keys():
            try:
                at, line = lines.get(timeout=0.05)
            except queue.Empty:
                continue
            if line == "":
                raise RuntimeError(f"reader {reader} exited (code {proc.wait()}); see {log.name}")
            seq = _seq(line)
            if seq is not None:
                delivered.setdefault(seq, at)

    try:
        if reader != "tail":
            at, line = lines.get(timeout=timeout)
            if line != "READY":
                raise RuntimeError(f"reader {reader} did not start: {line!r}")
        else:
            time.sleep(2.0)  # the CLI reads the latest snapshot at start-up, then polls
        warmup_end = time.time() + timeout
        while WARMUP_SEQ not in delivered and time.time() < warmup_end:
            t.upsert(batch(WARMUP_SEQ, rows))
            drain(time.time() + 5.0, {WARMUP_SEQ})
        if WARMUP_SEQ not in delivered:
            raise RuntimeError(f"reader {reader} delivered no warm-up commit in {timeout} s")
        w = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), "_writer", str(path),
                              "--rate", str(rate), "--duration", str(duration), "--rows", str(rows)],
                             stdout=subprocess.PIPE, text=True, env=env)
        returned: dict[int, float] = {}
        began = 0.0
        assert w.stdout is not None
        for line in w.stdout:
            rec = json.loads(line)
            returned[rec["seq"]] = rec["returned"]
            began = rec["start"]
        if w.wait() != 0:
            raise RuntimeError(f"writer exited with {w.returncode}")
        elapsed = max(returned.values()) - began if returned else 0.0
        drain(time.time() + timeout, set(returned))  # stops once every commit arrived
    finally:
        proc.kill()
        proc.wait()
        log.close()
    lat = np.array([delivered[s] - returned[s] for s in sorted(returned) if s in delivered])
    missing = sorted(set(returned) - delivered.keys())
    return {"reader": reader, "interval": interval, "rate": rate, "duration": duration, "commits": len(returned),
            "delivered": len(returned) - len(missing), "missing": missing[:10],
            "achieved_rate": len(returned) / elapsed if elapsed > 0 else 0.0,
            "p50_s": float(np.percentile(lat, 50)) if len(lat) else None,
            "p99_s": float(np.percentile(lat, 99)) if len(lat) else None,
            "max_s": float(lat.max()) if len(lat) else None, "latencies_s": lat.tolist(),
            "load_1m": os.getloadavg()[0]}


def follower_requests(s3: Any, sizes: list[int], rows: int) -> list[dict[str, Any]]:
    """The object-store requests of the Python API's follower (:func:`poll`, its table kept
    open as :func:`python_reader` keeps it) on a table on moto's S3 server (``s3``, an
    ``s3_requests.S3Bench``), once the writer made each of ``sizes`` commits (``Table.upsert``:
    its compactions add snapshots): one poll that finds no new snapshot, and one that delivers
    the last of those commits, ``rows`` rows. Only the
    follower's calls are recorded (the commits run between recordings), so each count is
    exactly one poll's."""
    from s3_requests import Recording

    import tidelake

    location = s3.table("follow")
    t = tidelake.create_table(location, schema(), primary_keys=["k"], options={"bucket": "1"},
                              storage_options=s3.options)
    follower = tidelake.open_table(location, storage_options=s3.options)
    recording = Recording(s3.server.endpoint, location)
    out: list[dict[str, Any]] = []
    seq = last = 0
    for size in sizes:
        while seq < size - 1:
            t.upsert(batch(seq, rows))
            seq += 1
        last, _ = poll(follower, last)  # caught up, unrecorded
        recording.start()
        idle = poll(follower, last)
        idle_requests = recording.stop()
        assert idle == (last, []), idle
        t.upsert(batch(seq, rows))
        recording.start()
        last, seqs = poll(follower, last)
        delivery = recording.stop()
        assert seqs == [seq] * rows, (seqs, seq)
        seq += 1
        out.append({"commits": size, "snapshots": last, "idle_poll": idle_requests, "delivery": delivery})
        print(f"  follower at {size} commits: idle poll {idle_requests['kinds']}, delivery {delivery['kinds']}",
              file=sys.stderr, flush=True)
    return out


def follower_report(counts: list[dict[str, Any]]) -> str:
    from s3_requests import request_growth, summary

    lines = ["| commits (snapshots) | idle poll: requests | delivery of one commit: requests | vs smallest | "
             "by target (delivery) | repeated GETs |", "|---|---|---|---|---|---|"]
    for c in counts:
        d = c["delivery"]
        targets = ", ".join(f"{n:,} {t}" for t, n in d["targets"].items())
        lines.append(f"| {c['commits']:,} ({c['snapshots']:,}) | {summary(c['idle_poll'])} | {summary(d)} | "
                     f"{request_growth(d, counts[0]['delivery'])} | {targets} | {d['repeat_gets']} |")
    return "\n".join(lines)


def label(r: dict[str, Any]) -> str:
    if r["reader"] == "tail":
        return f"tidelake tail --interval {r['interval']}"
    if r["reader"] == "python":
        return f"Python API, poll {r['interval']} s"
    return "Spark readStream, default trigger"


def report(results: list[dict[str, Any]]) -> str:
    lines = ["| reader | commits/s | commits | delivered | p50 s | p99 s | max s | achieved commits/s | load 1m |",
             "|---|---|---|---|---|---|---|---|---|"]

    def s(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for r in results:
        lines.append(f"| {label(r)} | {r['rate']:g} | {r['commits']} | {r['delivered']} | {s(r['p50_s'])} | "
                     f"{s(r['p99_s'])} | {s(r['max_s'])} | {r['achieved_rate']:.2f} | {r['load_1m']:.1f} |")
    at1 = [r for r in results if r["rate"] == 1 and r["p50_s"] is not None]
    if at1:
        lines.append("")
        lines.append(f"Target p50 < {TARGET_P50_S:g} s at 1 commit/s: " + "; ".join(
            f"{label(r)} {r['p50_s']:.2f} s ({'met' if r['p50_s'] < TARGET_P50_S else 'NOT met'})" for r in at1))
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], png: pathlib.Path) -> None:
    """p50 and p99 bars per configuration (log scale), one panel per commit rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({r["rate"] for r in results})
    fig, axes = plt.subplots(1, len(rates), figsize=(6 * len(rates), 4), squeeze=False)
    for ax, rate in zip(axes[0], rates):
        rs = [r for r in results if r["rate"] == rate and r["p50_s"] is not None]
        y = list(range(len(rs)))
        floor = 0.001  # log scale: a reader that saw the snapshot before the call returned shows as 1 ms
        ax.barh([i + 0.2 for i in y], [max(r["p99_s"], floor) for r in rs], height=0.4, label="p99")
        ax.barh([i - 0.2 for i in y], [max(r["p50_s"], floor) for r in rs], height=0.4, label="p50")
        ax.set_yticks(y, [label(r) for r in rs])
        ax.set_xscale("log")
        ax.axvline(TARGET_P50_S, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel("seconds from commit return to delivery (log scale)")
        ax.set_title(f"{rate:g} commit(s)/s")
        ax.legend(loc="lower right")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        child = argparse.ArgumentParser()
        child.add_argument("role", choices=["_writer", "_python-reader", "_spark-reader"])
        child.add_argument("path")
        child.add_argument("--rate", type=float)
        child.add_argument("--duration", type=float)
        child.add_argument("--rows", type=int)
        child.add_argument("--interval", type=float)
        c = child.parse_args()
        if c.role == "_writer":
            writer(c.path, c.rate, c.duration, c.rows)
        elif c.role == "_python-reader":
            python_reader(c.path, c.interval)
        else:
            spark_reader(c.path)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readers", default=",".join(READERS), help=f"of {', '.join(READERS)} (default all)")
    ap.add_argument("--rates", default="1,10", help="commits per second, comma-separated (default %(default)s)")
    ap.add_argument("--intervals", default="1.0,0.1",
                    help="poll intervals of the python and tail readers (default %(default)s)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds per configuration (default %(default)s)")
    ap.add_argument("--rows", type=int, default=10, help="rows per commit (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds a reader may take to start")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 3 s per configuration")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    ap.add_argument("--requests", metavar="SNAPSHOTS",
                    help="count the object-store requests of the Python API follower's polls on moto's S3 server "
                    "once the writer made each of these commit counts (default 10,100,1000; with --quick none; "
                    "'' for none)")
    ap.add_argument("--out", help="write the results (every latency) as JSON here")
    ap.add_argument("--png", help="plot p50/p99 per configuration here")
    args = ap.parse_args()
    readers = args.readers.split(",")
    if not readers or any(r not in READERS for r in readers):
        ap.error(f"--readers must name some of {', '.join(READERS)}")
    duration = 3.0 if args.quick else args.duration
    rates = [float(r) for r in args.rates.split(",")]
    intervals = [float(i) for i in args.intervals.split(",")]
    work = pathlib.Path(args.workdir) / "streaming"
    work.mkdir(parents=True, exist_ok=True)
    before = uptime()
    print(f"uptime before: {before}", file=sys.stderr)
    results = []
    for rate in rates:
        for reader in readers:
            for interval in (intervals if reader != "spark" else [None]):
                r = configuration(work, reader, interval, rate, duration, args.rows, args.timeout)
                print(f"  {label(r)} at {rate:g}/s: p50 {r['p50_s']} p99 {r['p99_s']} ({r['delivered']}/"
                      f"{r['commits']} delivered, load {r['load_1m']:.1f})", file=sys.stderr, flush=True)
                results.append(r)
    requests = args.requests if args.requests is not None else "" if args.quick else "10,100,1000"
    follower: list[dict[str, Any]] = []
    if requests:
        from s3_requests import s3_bench

        with s3_bench() as s3:
            follower = follower_requests(s3, [int(n) for n in requests.split(",")], args.rows)
    after = uptime()
    print(report(results))
    if follower:
        print("\nObject-store requests of one poll of the Python API follower (moto's S3 server on 127.0.0.1):\n")
        print(follower_report(follower))
    print(f"\nuptime before: {before}; after: {after}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"uptime_before": before, "uptime_after": after,
                                                      "results": results, "follower_requests": follower}, indent=1))
    if args.png:
        plot(results, pathlib.Path(args.png))


if __name__ == "__main__":
    main()
