"""Maintenance at size (issue #35 item 2, fourth bullet): how snapshot expiry and orphan cleaning
grow with a table's history and files (not run in CI; distributed compaction at size is
``benches/compaction.py --spark-workers 1,2``).

    .venv/bin/python benches/maintenance_scale.py                                  # defaults below
    .venv/bin/python benches/maintenance_scale.py --snapshots 1000,3000,10000 --files 10000,30000,100000
    .venv/bin/python benches/maintenance_scale.py --quick                          # smoke run, ~20 s

* **expiry**: for each size N of ``--snapshots``, a primary-key table (1 bucket, ``write-only``,
  retention above N) built by N one-row commits through tidelake's own write path, then, in a
  fresh process, ``Table.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=now,
  max_deletes=N)``: every snapshot but the latest expires with the files only it referenced.
  Checked: N - 1 snapshots expired, the latest snapshot still reads its N rows.
* **orphan cleaning**: for each size F of ``--files``, a partitioned append table whose F live
  data files come from F / 1,000 commits of 1,000 one-row files each (one per partition, 1,000
  partitions), plus F / 100 orphan files (copies of a data file under names no snapshot holds,
  spread over the partitions, modified an hour ago), then, in a fresh process,
  ``Table.remove_orphan_files(older_than_ms=now)``. Checked: exactly the orphans are removed and
  the table still reads its F rows.

Each operation reports wall and CPU seconds and the peak RSS of its process (opening the table
included), and its growth from the smallest size; ``--out`` keeps the results as JSON, ``--png``
plots seconds (log-log) and peak RSS (right-hand axis) against size. Tables are built once and
cached under ``--workdir`` by size (the timed step runs on a fresh copy, as it changes the
table). The load
average is printed before and after: record it with the numbers.

Object-store requests: at the ``--requests`` (default 3) smallest sizes of each operation, the
table is also copied to a bucket of moto's S3 server on 127.0.0.1 (``benches/s3_requests.py``)
and the operation run there in a fresh process, its requests recorded from just before opening
the table to just after the operation (the check read after it is not counted) and reported by
kind (GET, HEAD, LIST page, PUT, DELETE) and by target (snapshot, manifest list, manifest,
data...), with GETs of a key already read and the keys deleted. Uploading is most of that
pass's time (~200 objects/s here); ``--quick`` leaves it out unless ``--requests`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from s3_requests import S3Bench, child_env, request_growth, s3_bench, summary

PARTITIONS = 1000
ORPHAN_SHARE = 100
"""One orphan per this many live files."""

STEP = r"""
import json, sys, time
import tidelake
path, op, size, benches = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, benches)
from memstat import lifetime_peak_mb
from s3_requests import child_options
recording, options = child_options()
if recording:
    recording.start()
cpu0, t0 = time.process_time(), time.perf_counter()
t = tidelake.open_table(path, storage_options=options)
now = int(time.time() * 1000)
if op == "expiry":
    out = t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=now, max_deletes=size)
    done = {"expired": out["snapshots"], "files deleted": out["data_files"] + out["manifest_files"]}
else:
    done = {"removed": len(t.remove_orphan_files(older_than_ms=now))}
seconds, cpu, rss = time.perf_counter() - t0, time.process_time() - cpu0, lifetime_peak_mb()
if recording:
    done["requests"] = recording.stop()
rows = tidelake.open_table(path, storage_options=options).to_arrow(columns=["id"]).num_rows
print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_mb": rss, "rows": rows, **done}))
"""


def build_history(path: pathlib.Path, snapshots: int) -> None:
    """The expiry table of ``snapshots`` one-row commits (see the module docs)."""
    import pyarrow as pa

    import tidelake

    marker = path / "_built.json"
    if marker.exists():
        return
    shutil.rmtree(path, ignore_errors=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = tidelake.create_table(path, schema, primary_keys=["id"], options={
        "bucket": "1", "write-only": "true", "snapshot.num-retained.max": str(snapshots + 10),
        "snapshot.num-retained.min": str(snapshots + 10), "snapshot.time-retained": "3650 d"})
    began = time.monotonic()
    for c in range(snapshots):
        t.write(pa.table({"id": pa.array([c], pa.int64()), "v": [f"c{c}"]}, schema=schema))
    marker.write_text(json.dumps({"snapshots": snapshots, "build_seconds": time.monotonic() - began}))


def build_files(path: pathlib.Path, files: int) -> None:
    """The orphan-cleaning table of ``files`` live files plus its orphans (see the module docs)."""
    import numpy as np
    import pyarrow as pa

    import tidelake

    marker = path / "_built.json"
    if marker.exists():
        return
    shutil.rmtree(path, ignore_errors=True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False)])
    t = tidelake.create_table(path, schema, partition_keys=["p"], options={
        "write-only": "true", "snapshot.time-retained": "3650 d"})
    began = time.monotonic()
    commits = max(1, files // PARTITIONS)
    for c in range(commits):
        p = np.arange(PARTITIONS, dtype=np.int32)
        t.write(pa.table({"id": p.astype(np.int64) + c * PARTITIONS, "p": p}, schema=schema))
    live = sorted(path.glob("p=*/bucket-*/*.parquet"))
    hour_ago = time.time() - 3600
    for i in range(len(live) // ORPHAN_SHARE):
        source = live[i * ORPHAN_SHARE]
        orphan = source.with_name(f"data-orphan-{i}.parquet")
        shutil.copyfile(source, orphan)
        os.utime(orphan, (hour_ago, hour_ago))
    marker.write_text(json.dumps({"files": len(live), "orphans": len(live) // ORPHAN_SHARE,
                                  "build_seconds": time.monotonic() - began}))


def step(built: pathlib.Path, op: str, size: int, s3: S3Bench | None = None) -> dict[str, Any]:
    """``op`` on a fresh copy of the table at ``built``, in its own process: a local copy, or
    with ``s3`` a copy in its bucket, counting the operation's requests (the orphans' upload
    times are then their modification times: older than the operation's ``now`` still)."""
    here = str(pathlib.Path(__file__).resolve().parent)
    if s3 is not None:
        location = s3.upload(built)
        out = subprocess.run([sys.executable, "-c", STEP, location, op, str(size), here], check=True,
                             capture_output=True, text=True, env=child_env(s3, location))
        return json.loads(out.stdout.strip().splitlines()[-1])
    copy = built.with_name(built.name + "-run")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(built, copy, copy_function=shutil.copy2)  # keeps the orphans' times
    try:
        out = subprocess.run([sys.executable, "-c", STEP, str(copy), op, str(size), here],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def plot(rows: list[tuple[str, str, int, dict[str, float]]], png: pathlib.Path) -> None:
    """Seconds (log-log) and peak RSS against size, one panel per operation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(dict.fromkeys(op for op, *_ in rows))
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4), squeeze=False)
    for ax, op in zip(axes[0], ops):
        sizes = [size for o, _, size, _ in rows if o == op]
        (seconds,) = ax.plot(sizes, [r["seconds"] for o, _, _, r in rows if o == op], marker="o",
                             label="seconds")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("snapshots" if op == "expiry" else "live data files")
        ax.set_ylabel("seconds")
        rss = ax.twinx()
        (peak,) = rss.plot(sizes, [r["rss_mb"] for o, _, _, r in rows if o == op], marker="s",
                           color="tab:orange", linestyle=":", label="peak RSS MB")
        rss.set_ylabel("peak RSS MB")
        ax.set_title(op)
        ax.legend(handles=[seconds, peak], loc="upper left")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshots", default="1000,3000,10000", help="expiry sizes (default %(default)s)")
    ap.add_argument("--files", default="10000,30000,100000", help="orphan-cleaning sizes (default %(default)s)")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir()
                                                        + "/tidelake-bench") + "/maintenance")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 20/40 snapshots, 1,000/2,000 files")
    ap.add_argument("--requests", type=int, metavar="N",
                    help="also run each operation at its N smallest sizes on moto's S3 server, counting its "
                    "object-store requests (0: none; default 3, with --quick 0: uploading the tables takes a minute)")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--png", help="plot seconds and peak RSS per size here")
    args = ap.parse_args()
    if args.quick:
        args.snapshots, args.files = "20,40", "1000,2000"
    if args.requests is None:
        args.requests = 0 if args.quick else 3
    work = pathlib.Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print("before:", uptime(), flush=True)
    rows = []
    snapshots = [int(s) for s in args.snapshots.split(",") if s]
    files = [int(s) for s in args.files.split(",") if s]
    counted = {"expiry": sorted(snapshots)[:args.requests], "orphans": sorted(files)[:args.requests]}
    with contextlib.ExitStack() as stack:
        s3 = stack.enter_context(s3_bench()) if args.requests else None

        def run(path: pathlib.Path, op: str, size: int) -> dict[str, Any]:
            r = step(path, op, size)
            if size in counted[op]:
                r["s3"] = step(path, op, size, s3)
            return r

        for n in snapshots:
            path = work / f"history-{n}"
            build_history(path, n)
            r = run(path, "expiry", n)
            for res in (r, r.get("s3", r)):
                assert res["expired"] == n - 1 and res["rows"] == n, res
            rows.append(("expiry", f"{n:,} snapshots", n, r))
            print(f"expiry of {n} snapshots: {r}", flush=True)
        for f in files:
            path = work / f"files-{f}"
            build_files(path, f)
            built = json.loads((path / "_built.json").read_text())
            r = run(path, "orphans", f)
            for res in (r, r.get("s3", r)):
                assert res["removed"] == built["orphans"] and res["rows"] == built["files"], (res, built)
            rows.append(("orphan cleaning", f"{built['files']:,} files, {built['orphans']:,} orphans", f, r))
            print(f"orphan cleaning of {f} files: {r}", flush=True)
    print("after:", uptime())
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps([{"operation": op, "table": shape, "size": size, **r}
                                                      for op, shape, size, r in rows], indent=1))
    if args.png:
        plot(rows, pathlib.Path(args.png))
    print("\n| operation | table | seconds | vs smallest | CPU s | peak RSS MB | done |")
    print("|---|---|---|---|---|---|---|")
    first: dict[str, tuple[int, float]] = {}
    for op, shape, size, r in rows:
        base = first.setdefault(op, (size, r["seconds"]))
        done = r.get("expired", r.get("removed"))
        print(f"| {op} | {shape} | {r['seconds']:.3f} | {r['seconds'] / base[1]:.1f}x for {size / base[0]:.0f}x | "
              f"{r['cpu']:.2f} | {r['rss_mb']:.0f} | {done:,} |")
    counted_rows = [(op, shape, size, r["s3"]) for op, shape, size, r in rows if "s3" in r]
    if not counted_rows:
        return
    print("\n| operation | table | requests (moto S3) | vs smallest | by target | repeated GETs | keys deleted | "
          "seconds on moto |\n|---|---|---|---|---|---|---|---|")
    smallest: dict[str, tuple[int, dict[str, Any]]] = {}
    for op, shape, size, r in counted_rows:
        req = r["requests"]
        base_size, base = smallest.setdefault(op, (size, req))
        targets = ", ".join(f"{n:,} {t}" for t, n in req["targets"].items())
        print(f"| {op} | {shape} | {summary(req)} | {request_growth(req, base)} for {size / base_size:.0f}x | "
              f"{targets} | {req['repeat_gets']:,} | {req['deleted_keys']:,} | {r['seconds']:.2f} |")


if __name__ == "__main__":
    main()
