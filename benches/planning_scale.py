"""Planning at warehouse scale (issue #35 item 2, first bullet): how the cost of planning a read
grows with a table's data files, partitions and history (not run in CI).

    .venv/bin/python benches/planning_scale.py         # 10k/1k/10k, 100k/10k/10k, 1M/10k/1k
    .venv/bin/python benches/planning_scale.py --sizes 10000:1000:10000 --compact-manifests

Each size ``FILES:PARTITIONS[:SNAPSHOTS]`` (snapshots default ``--snapshots``) is one
primary-key table (``id BIGINT`` key, ``p INT`` partition, one fixed bucket, ``write-only`` so
no compaction merges its files, snapshot retention above the run's commit count) built through
tidelake's own write and commit path: SNAPSHOTS commits, each writing one tiny data file (a few
rows) into each of ``FILES / SNAPSHOTS`` partitions taken round-robin, so the table ends with
FILES live data files spread evenly over PARTITIONS and SNAPSHOTS snapshots. Building is timed
(reported, not part of the plan numbers) and cached under ``--workdir`` by size; ``--jobs N``
builds N sizes at once (one process each).

Then, each in a fresh process (cold: nothing cached, as a query engine's planner starts), the
median of ``--repeat`` runs of:

* full plan: ``Table.scan().splits()`` of the latest snapshot;
* one-partition plan: ``scan(filter=[("p", "=", k)])``;
* one-key plan: ``scan(filter=[("id", "=", key)])`` (key statistics prune the files);

reporting wall seconds, CPU seconds and peak RSS (MB) of the planning process (opening the
table included), and the splits and rows planned. With ``--compact-manifests`` each table's
manifests are then compacted (``Table.compact_manifests()``, timed: it rewrites manifests that
commits left in commit order into partition-sorted ones) and the three plans measured again.
At the ``--requests`` (default 3) smallest sizes, each table's metadata (everything outside its
``bucket-N`` directories: planning opens no data file, and a LIST of a prefix is one request
whether or not objects are under it) is copied to a bucket of moto's S3 server on 127.0.0.1
(``benches/s3_requests.py``) and the three plans run once more there, each counting its
requests from opening the table to the splits (by kind and by target: snapshot, manifest list,
manifest...; and repeated GETs of one key); ``--compact-manifests`` counts the compacted
layout too. The Markdown table gives each plan's growth from the smallest size (the issue's targets: a
one-partition plan of the largest table within 10x of the smallest's; a full plan of 1M files
under 2 s and 1 GB). The load average is printed before and after: record it with the numbers.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from s3_requests import request_growth, s3_bench, summary

ROWS_PER_FILE = 4


def create(path: pathlib.Path, commits: int) -> Any:
    """The empty table of every size (see the module doc)."""
    import pyarrow as pa

    import tidelake

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.int32(), nullable=False),
                        ("v", pa.string())])
    return tidelake.create_table(path, schema, primary_keys=["id", "p"], partition_keys=["p"], options={
        # uncompressed data files: planning never opens them, and a zstd context per tiny file
        # was most of the build's CPU
        "bucket": "1", "write-only": "true", "file.compression": "none",
        "snapshot.num-retained.max": str(commits + 10),
        "snapshot.num-retained.min": str(commits + 10), "snapshot.time-retained": "3650 d"})


def start(path: pathlib.Path, files: int, snapshots: int) -> tuple[Any, int, int, float] | None:
    """A build of ``files`` over ``snapshots`` commits at ``path``: None when it is built
    already (its marker exists), else the new empty table, files per commit, commits and the
    start time."""
    if (path / "_built.json").exists():
        return None
    per_commit = max(1, files // snapshots)
    commits = files // per_commit
    return create(path, commits), per_commit, commits, time.monotonic()


def progress(path: pathlib.Path, c: int, commits: int, per_commit: int, began: float) -> None:
    """A build's progress line, every ~20,000 files."""
    if c % max(1, 20_000 // per_commit) == 0:
        print(f"  {path.name}: commit {c}/{commits} ({time.monotonic() - began:.0f} s)", file=sys.stderr)


def finish(path: pathlib.Path, files: int, partitions: int, commits: int, began: float, **extra: Any) -> None:
    """The marker that makes a build reusable, with its shape and build time."""
    (path / "_built.json").write_text(json.dumps({"files": files, "partitions": partitions, "snapshots": commits,
                                                  "build_seconds": time.monotonic() - began, **extra}))


def build(path: pathlib.Path, files: int, partitions: int, snapshots: int) -> None:
    """The table of one size (see the module doc); a marker file makes it reusable."""
    import numpy as np
    import pyarrow as pa

    started = start(path, files, snapshots)
    if started is None:
        return
    t, per_commit, commits, began = started
    schema = t.schema
    # One long-lived writer (a streaming job's): a one-shot write restores the sequence numbers
    # of every bucket of the table first, which makes building quadratic in files.
    w = t.writer()
    for c in range(commits):
        parts = (np.arange(per_commit) + c * per_commit) % partitions
        p = np.repeat(parts, ROWS_PER_FILE).astype(np.int32)
        ids = np.arange(len(p), dtype=np.int64) + c * per_commit * ROWS_PER_FILE
        w.write(pa.table({"id": ids, "p": p, "v": pa.array([f"c{c}"] * len(p))}, schema=schema))
        t.commit(w.prepare_commit(), commit_identifier=c)
        progress(path, c, commits, per_commit, began)
    w.close()
    finish(path, commits * per_commit, partitions, commits, began)


TEMPLATE_P = 1234567891  # distinctive values, found and replaced in a template message's bytes
TEMPLATE_ID = 0x1122334455667700


def build_metadata_only(path: pathlib.Path, files: int, partitions: int, snapshots: int) -> None:
    """The table of one size (see the module doc) with its data files' metadata committed
    through tidelake's own commit path but the files not written: one real tiny file is
    written (ids ``TEMPLATE_ID..+3`` in partition ``TEMPLATE_P``) and its commit message is
    cloned per file with the partition, the four ids and the file name replaced byte for byte
    (fixed-width fields, so the Avro stays valid). Planning opens no data file; reads fail."""
    import uuid

    import pyarrow as pa

    from tidelake.write import CommitMessage

    started = start(path, files, snapshots)
    if started is None:
        return
    t, per_commit, commits, began = started
    schema = t.schema
    w = t.writer()
    w.write(pa.table({"id": [TEMPLATE_ID + i for i in range(ROWS_PER_FILE)], "p": [TEMPLATE_P] * ROWS_PER_FILE,
                      "v": ["x"] * ROWS_PER_FILE}, schema=schema))
    [template] = w.prepare_commit()
    w.abort()
    envelope = json.loads(template.payload)
    data = bytes.fromhex(envelope["data_files"])
    name = next(f for f in (path / f"p={TEMPLATE_P}" / "bucket-0").iterdir()).name
    old_uuid = name[len("data-"):len("data-") + 36].encode()
    le = lambda v, n: v.to_bytes(n, "little", signed=True)  # noqa: E731
    patterns = [le(TEMPLATE_P, 4), le(TEMPLATE_ID, 8), le(TEMPLATE_ID + ROWS_PER_FILE - 1, 8), old_uuid]
    for pat in patterns:
        assert data.count(pat) >= 1, pat
    for c in range(commits):
        messages = []
        for f in range(per_commit):
            n = c * per_commit + f
            part, lo = n % partitions, n * ROWS_PER_FILE
            body = data
            for pat, new in zip(patterns, [le(part, 4), le(lo, 8), le(lo + ROWS_PER_FILE - 1, 8),
                                           str(uuid.UUID(int=n)).encode()]):
                body = body.replace(pat, new)
            env = {**envelope, "data_files": body.hex(), "base_snapshot": c,
                   "partition": envelope["partition"].replace(le(TEMPLATE_P, 4).hex(), le(part, 4).hex())}
            messages.append(CommitMessage(json.dumps(env).encode(), template.commit_user))
        t.commit(messages, commit_identifier=c)
        progress(path, c, commits, per_commit, began)
    finish(path, commits * per_commit, partitions, commits, began, data_files_written=False)


def compact_manifests(path: pathlib.Path) -> float:
    """Seconds ``compact_manifests`` took on the table at ``path`` (once; a marker remembers)."""
    import tidelake

    marker = path / "_compacted.json"
    if not marker.exists():
        began = time.monotonic()
        tidelake.open_table(path).compact_manifests()
        marker.write_text(json.dumps({"seconds": time.monotonic() - began}))
    return float(json.loads(marker.read_text())["seconds"])


PLAN = r"""
import json, sys, time
import tidelake
path, kind, arg = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, sys.argv[4])
from memstat import lifetime_peak_mb
from s3_requests import child_options
recording, options = child_options()
if recording:
    recording.start()
cpu0, t0 = time.process_time(), time.perf_counter()
t = tidelake.open_table(path, storage_options=options)
flt = None if kind == "full" else [("p", "=", int(arg))] if kind == "partition" else [("id", "=", int(arg))]
splits = t.scan(filter=flt).splits()
seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
requests = recording.stop() if recording else {}
rows = sum(s.row_count for s in splits)
print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_mb": lifetime_peak_mb(),
                  "splits": len(splits), "rows": rows, **({"requests": requests} if requests else {})}))
"""


def plan(path: pathlib.Path | str, kind: str, arg: int, repeat: int, java: str | None = None,
         env: dict[str, str] | None = None) -> dict[str, Any]:
    """The median of ``repeat`` cold plans (one process each), by tidelake or, with ``java``
    (the oracle's classpath), by Java Paimon's planner in a fresh JVM (java_peer's flags);
    ``env``: the child's environment (``s3_requests.child_env``: plan on S3, count requests)."""
    here = pathlib.Path(__file__).resolve().parent
    if java is None:
        cmd = [sys.executable, "-c", PLAN, str(path), kind, str(arg), str(here)]
    else:
        sys.path.insert(0, str(here))
        from java_peer import JVM_FLAGS

        cmd = ["java", *JVM_FLAGS, "-cp", java, "org.tidelake.oracle.Main", "bench", "plan", f"table={path}",
               f"kind={kind}", f"arg={arg}"]
    runs = []
    for _ in range(repeat):
        began = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        last = out.stdout.strip().splitlines()[-1]
        run = json.loads(last[len("RESULT "):])["plan"] if java else json.loads(last)
        runs.append({**run, "process_seconds": time.perf_counter() - began})
    best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return {**best, "seconds": statistics.median(r["seconds"] for r in runs)}


SERIES = (("", "tidelake", "-"), ("compacted", "tidelake, manifests compacted", "--"), ("java", "Java Paimon", ":"),
          ("compacted_java", "Java Paimon, manifests compacted", "-."))


def plot(results: list[dict[str, Any]], png: pathlib.Path) -> None:
    """Cold plan seconds against data files (log-log), one panel per plan kind, one line per
    planner and manifest layout measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = (("full", "full plan"), ("partition", "one-partition plan"), ("key", "one-key plan"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    files = [r["size"]["files"] for r in results]
    for ax, (kind, title) in zip(axes, kinds):
        for key, name, style in SERIES:
            rows = [r[key] if key else r for r in results]
            if any(not isinstance(row, dict) or kind not in row for row in rows):
                continue
            ax.plot(files, [row[kind]["seconds"] for row in rows], style, marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("live data files")
        ax.set_ylabel("seconds (cold process)")
        ax.set_title(title)
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def table_path(work: pathlib.Path, size: tuple[int, int, int]) -> pathlib.Path:
    return work / "t_{}_{}_{}".format(*size)


def measure(path: pathlib.Path, repeat: int, java: str | None = None, s3: Any = None) -> dict[str, dict[str, Any]]:
    """The three plans of the table at ``path`` (see :func:`plan`); with ``s3`` (an
    ``s3_requests.S3Bench``), of its metadata copied to that bucket (planning opens no data
    file), counting each plan's object-store requests."""
    meta = json.loads((path / "_built.json").read_text())
    location: pathlib.Path | str = path
    env = None
    if s3 is not None:
        from s3_requests import child_env, metadata

        location = s3.upload(path, metadata)
        env = child_env(s3, location)
    return {"full": plan(location, "full", 0, repeat, java, env),
            "partition": plan(location, "partition", meta["partitions"] // 2, repeat, java, env),
            "key": plan(location, "key", ROWS_PER_FILE * (meta["files"] // 2), repeat, java, env)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000:1000:10000,100000:10000:10000,1000000:10000:1000",
                    help="FILES:PARTITIONS[:SNAPSHOTS],... (default %(default)s)")
    ap.add_argument("--snapshots", type=int, default=10000, help="commits per table without its own (default "
                    "%(default)s)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="tables built at once (default %(default)s)")
    ap.add_argument("--build-only", action="store_true", help="build the tables, plan nothing")
    ap.add_argument("--metadata-only-from", type=int, default=1_000_000, metavar="FILES",
                    help="tables of at least FILES files get metadata without data files (default %(default)s)")
    ap.add_argument("--compact-manifests", action="store_true",
                    help="then compact each table's manifests and plan again")
    ap.add_argument("--java", action="store_true", help="also plan with Java Paimon (interop/java-oracle)")
    ap.add_argument("--java-repeat", type=int, default=1, help="cold JVMs per Java plan (default %(default)s)")
    ap.add_argument("--requests", type=int, default=3, metavar="N",
                    help="count the object-store requests of each plan of the N smallest sizes, on moto's S3 "
                    "server (one run each; 0: none; default %(default)s)")
    ap.add_argument("--plot", metavar="PNG", help="plot plan seconds against files (docs/img/planning_scale.png)")
    ap.add_argument("--from-results", action="store_true", help="only print and plot the last results.json")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    args = ap.parse_args()
    print("load before:", os.getloadavg())
    work = pathlib.Path(args.workdir) / "planning"
    work.mkdir(parents=True, exist_ok=True)
    sizes = []
    for size in args.sizes.split(","):
        parts = [int(x) for x in size.split(":")]
        sizes.append((parts[0], parts[1], parts[2] if len(parts) > 2 else args.snapshots))
    if args.from_results:
        report(json.loads((work / "results.json").read_text()), args.plot)
        return
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs)) as pool:
        builds = [pool.submit(build_metadata_only if s[0] >= args.metadata_only_from else build, table_path(work, s),
                              *s) for s in sizes]
        for b in builds:
            b.result()
    if args.build_only:
        return
    java = None
    if args.java:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        from java_peer import java_classpath

        java = java_classpath()
    results = []
    counted = sorted(sizes)[:args.requests]
    with contextlib.ExitStack() as stack:
        s3 = stack.enter_context(s3_bench()) if counted else None
        for size in sizes:
            path = table_path(work, size)
            row = {"size": json.loads((path / "_built.json").read_text()), **measure(path, args.repeat)}
            if size in counted:
                row["s3"] = measure(path, 1, s3=s3)
            if java:
                row["java"] = measure(path, args.java_repeat, java)
            if args.compact_manifests:
                row["compact_seconds"] = compact_manifests(path)
                row["compacted"] = measure(path, args.repeat)
                if size in counted:
                    row["compacted_s3"] = measure(path, 1, s3=s3)
                if java:
                    row["compacted_java"] = measure(path, args.java_repeat, java)
            results.append(row)
            print(json.dumps(row), file=sys.stderr)
    print("load after:", os.getloadavg())
    (work / "results.json").write_text(json.dumps(results, indent=1))
    report(results, args.plot)


def report(results: list[dict[str, Any]], png: str | None) -> None:
    """The Markdown table of ``results`` (and their plot at ``png``)."""
    if png:
        plot(results, pathlib.Path(png))
    print("\n| files | partitions | snapshots | manifests | planner | plan | seconds | x smallest | CPU s | "
          "peak RSS MB | splits | rows planned |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, layout, planner in (("", "as built", "tidelake"), ("java", "as built", "Java Paimon"),
                                 ("compacted", "compacted", "tidelake"),
                                 ("compacted_java", "compacted", "Java Paimon")):
        for row in results:
            if key and key not in row:
                continue
            plans = row[key] if key else row
            first = results[0][key] if key else results[0]
            for kind in ("full", "partition", "key"):
                r = plans[kind]
                growth = r["seconds"] / first[kind]["seconds"]
                print(f"| {row['size']['files']:,} | {row['size']['partitions']:,} | {row['size']['snapshots']:,} | "
                      f"{layout} | {planner} | {kind} | {r['seconds']:.3f} | {growth:.1f}x | {r['cpu']:.2f} | "
                      f"{r['rss_mb']:.0f} | {r['splits']:,} | {r['rows']:,} |")
    counted = [row for row in results if "s3" in row]
    if not counted:
        return
    print("\n| files | partitions | snapshots | manifests | plan | requests (moto S3) | x smallest | by target | "
          "repeated GETs | seconds on moto |\n|---|---|---|---|---|---|---|---|---|---|")
    for key, layout in (("s3", "as built"), ("compacted_s3", "compacted")):
        for row in counted:
            if key not in row:
                continue
            for kind in ("full", "partition", "key"):
                r = row[key][kind]["requests"]
                targets = ", ".join(f"{n:,} {t}" for t, n in r["targets"].items())
                print(f"| {row['size']['files']:,} | {row['size']['partitions']:,} | {row['size']['snapshots']:,} | "
                      f"{layout} | {kind} | {summary(r)} | {request_growth(r, counted[0][key][kind]['requests'])} | "
                      f"{targets} | {r['repeat_gets']:,} | {row[key][kind]['seconds']:.2f} |")


if __name__ == "__main__":
    main()
