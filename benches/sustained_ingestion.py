"""Sustained ingestion (issue #35): many upsert commits into one primary-key table with its
default compaction, and whether throughput, sorted runs and memory stay flat as the table grows.

    .venv/bin/python benches/sustained_ingestion.py                       # 10M rows / 1,000 commits
    .venv/bin/python benches/sustained_ingestion.py --rows 100000000      # the issue's full scale
    .venv/bin/python benches/sustained_ingestion.py --quick --png /tmp/s.png

The table: ``id BIGINT`` primary key, ``ver``, ``qty`` (BIGINT), ``price`` (DOUBLE), 16 fixed
buckets, every other option at its default (so a bucket's writer compacts as Java Paimon's does:
universal compaction once a bucket has ``num-sorted-run.compaction-trigger`` = 5 sorted runs,
inline, inside the commit call). ``--commits`` calls of ``Table.upsert``, each of
``rows / commits`` rows: the first all new keys, then half updates of keys drawn uniformly from
those already written and half new keys. A batch is generated before its call; only the call is
timed.

Per window of ``--window`` commits (default 100), one line of:

* ``rows/s``: the window's rows / the seconds its upsert calls took, and rows per CPU second of
  those calls (this process, all threads: steadier than wall time on a shared machine);
* sorted runs per bucket, from the table's live files (``table.system("files")``, read after
  every commit, untimed): a bucket's runs = its level-0 files + its non-empty levels above 0;
  ``max`` is the largest seen after any commit of the window, ``mean`` the mean over buckets
  after its last commit;
* write amplification so far: bytes of the data files compaction wrote / bytes of the data files
  the upserts themselves wrote. Compaction bytes are the ``COMPACT`` files (``file_source``)
  that appear in the live files after a call; ingested bytes are the bytes the call's commits
  added (``WriteResult.bytes_added``, counted from the delta manifests) minus those. When a
  call committed one snapshot (no compaction) the two sources must agree, and are checked;
* peak RSS MB of this process so far (``VmHWM``, benches/memstat.py) and the 1-minute load
  average at the window's end (the machine is shared: record it with the numbers).

The summary line gives the issue's target: rows/s of the last window within 1.3x of the
first's. ``--out`` (JSON) keeps every window; ``--png`` plots rows/s and sorted runs per window.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from memstat import lifetime_peak_mb  # noqa: E402

BUCKETS = 16
TARGET_RATIO = 1.3


def uptime() -> str:
    """``uptime``'s line (load averages), as recorded with every result."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Batches:
    """The upsert stream: batch ``i`` of ``size`` rows, half new keys and half updates of keys
    already written (the first batch all new), ``ver = i``."""

    def __init__(self, size: int, seed: int = 35) -> None:
        import numpy as np
        import pyarrow as pa

        self.np, self.pa = np, pa
        self.size = size
        self.rng = np.random.default_rng(seed)
        self.next_key = 0
        self.schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ver", pa.int64()),
                                 ("qty", pa.int64()), ("price", pa.float64())])

    def batch(self, i: int) -> Any:
        np = self.np
        new = self.size if self.next_key == 0 else self.size // 2
        ids = np.arange(self.next_key, self.next_key + new, dtype=np.int64)
        if new < self.size:
            ids = np.concatenate([ids, self.rng.integers(0, self.next_key, self.size - new, dtype=np.int64)])
        self.next_key += new
        return self.pa.table({"id": ids, "ver": np.full(self.size, i, dtype=np.int64),
                              "qty": self.rng.integers(0, 1000, self.size, dtype=np.int64),
                              "price": self.rng.random(self.size)}, schema=self.schema)


class Files:
    """The table's live data files, read after each commit: new files by source, runs per bucket."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.seen: set[str] = set()

    def observe(self) -> tuple[int, int, list[int]]:
        """(bytes of new APPEND files, bytes of new COMPACT files, sorted runs of each bucket)."""
        files = self.table.system("files").select(["bucket", "file_path", "level", "file_size_in_bytes",
                                                   "file_source"]).to_pylist()
        appended = compacted = 0
        level0 = [0] * BUCKETS
        levels: list[set[int]] = [set() for _ in range(BUCKETS)]
        for f in files:
            if f["file_path"] not in self.seen:
                self.seen.add(f["file_path"])
                if f["file_source"] == "COMPACT":
                    compacted += f["file_size_in_bytes"]
                else:
                    appended += f["file_size_in_bytes"]
            if f["level"] == 0:
                level0[f["bucket"]] += 1
            else:
                levels[f["bucket"]].add(f["level"])
        return appended, compacted, [level0[b] + len(levels[b]) for b in range(BUCKETS)]


def run(path: pathlib.Path, rows: int, commits: int, window: int) -> dict[str, Any]:
    """Ingest ``commits`` upserts of ``rows // commits`` rows into a fresh table at ``path``."""
    import tidelake

    shutil.rmtree(path, ignore_errors=True)
    size = rows // commits
    stream = Batches(size)
    table = tidelake.create_table(path, stream.schema, primary_keys=["id"], options={"bucket": str(BUCKETS)})
    files = Files(table)
    windows: list[dict[str, Any]] = []
    ingested = compaction = 0
    seconds = cpu = 0.0
    runs_max = 0
    compactions = 0
    for i in range(commits):
        batch = stream.batch(i)
        t0, c0 = time.perf_counter(), time.process_time()
        result = table.upsert(batch)
        seconds += time.perf_counter() - t0
        cpu += time.process_time() - c0
        appended, compacted, runs = files.observe()
        if len(result.snapshot_ids) == 1 and (appended, compacted) != (result.bytes_added, 0):
            raise AssertionError(f"commit {i}: live files added {appended} + {compacted} bytes, "
                                 f"the commit says {result.bytes_added}")
        compactions += len(result.snapshot_ids) - 1
        ingested += result.bytes_added - compacted
        compaction += compacted
        runs_max = max(runs_max, max(runs))
        if (i + 1) % window == 0 or i + 1 == commits:
            n = i + 1 - (windows[-1]["commits"] if windows else 0)
            windows.append({"commits": i + 1, "rows": (i + 1) * size, "rows_per_s": n * size / seconds,
                            "rows_per_cpu_s": n * size / cpu,
                            "seconds": seconds, "runs_max": runs_max, "runs_mean": sum(runs) / BUCKETS,
                            "compactions": compactions, "write_amplification": compaction / ingested,
                            "ingested_mb": ingested / 2**20, "compaction_mb": compaction / 2**20,
                            "peak_rss_mb": lifetime_peak_mb(), "load_1m": os.getloadavg()[0]})
            w = windows[-1]
            print(f"  commit {w['commits']}: {w['rows_per_s']:,.0f} rows/s, runs max {w['runs_max']}, "
                  f"WA {w['write_amplification']:.2f}, RSS {w['peak_rss_mb']:.0f} MB, load {w['load_1m']:.1f}",
                  file=sys.stderr, flush=True)
            seconds, cpu, runs_max, compactions = 0.0, 0.0, 0, 0
    live = table.to_arrow(columns=["id"]).num_rows
    if live != stream.next_key:
        raise AssertionError(f"{live} live rows, {stream.next_key} keys written")
    return {"rows": size * commits, "commits": commits, "rows_per_commit": size, "buckets": BUCKETS,
            "live_rows": live, "windows": windows}


def report(result: dict[str, Any]) -> str:
    ws = result["windows"]
    lines = ["| commits | rows | rows/s | vs first | rows/CPU s | vs first | sorted runs/bucket max | mean | "
             "commits that compacted | write amp. (cumulative) | peak RSS MB | load 1m |", "|---" * 12 + "|"]
    for w in ws:
        lines.append(f"| {w['commits']:,} | {w['rows']:,} | {w['rows_per_s']:,.0f} | "
                     f"{w['rows_per_s'] / ws[0]['rows_per_s']:.2f}x | {w['rows_per_cpu_s']:,.0f} | "
                     f"{w['rows_per_cpu_s'] / ws[0]['rows_per_cpu_s']:.2f}x | {w['runs_max']} | {w['runs_mean']:.1f} | "
                     f"{w['compactions']} | {w['write_amplification']:.2f} | {w['peak_rss_mb']:.0f} | "
                     f"{w['load_1m']:.1f} |")
    lines.append("")
    for key, unit in (("rows_per_s", "rows/s"), ("rows_per_cpu_s", "rows per CPU second")):
        ratio = ws[0][key] / ws[-1][key]
        lines.append(f"First window {ws[0][key]:,.0f} {unit}, last {ws[-1][key]:,.0f}: the last is {ratio:.2f}x "
                     f"slower (target: within {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'}).")
    lines.append(f"{result['live_rows']:,} live rows.")
    return "\n".join(lines)


def plot(result: dict[str, Any], png: pathlib.Path) -> None:
    """rows per wall and per CPU second and sorted runs per bucket (max) per window, one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = result["windows"]
    x = [w["commits"] for w in ws]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(x, [w["rows_per_s"] for w in ws], marker="o", label="rows / wall s (window)")
    ax.plot(x, [w["rows_per_cpu_s"] for w in ws], marker="s", label="rows / CPU s (window)")
    ax.set_xlabel("commits")
    ax.set_ylabel("rows per second")
    ax.set_ylim(bottom=0)
    runs = ax.twinx()
    runs.step(x, [w["runs_max"] for w in ws], where="post", color="tab:gray", linestyle="--",
              label="sorted runs/bucket (max)")
    runs.set_ylabel("sorted runs per bucket")
    runs.set_ylim(bottom=0)
    ax.set_title(f"Sustained upserts: {result['rows']:,} rows in {result['commits']:,} commits, "
                 f"{result['buckets']} buckets")
    fig.legend(loc="upper right", bbox_to_anchor=(0.88, 0.88))
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows in all (default %(default)s)")
    ap.add_argument("--commits", type=int, default=1000, help="upsert commits (default %(default)s)")
    ap.add_argument("--window", type=int, default=100, help="commits per reported window (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 20,000 rows, 20 commits, windows of 5")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    ap.add_argument("--out", help="write the result as JSON here")
    ap.add_argument("--png", help="plot rows/s and sorted runs per window here")
    args = ap.parse_args()
    rows, commits, window = (20_000, 20, 5) if args.quick else (args.rows, args.commits, args.window)
    if commits < 1 or window < 1 or rows < commits:
        ap.error("need commits >= 1, window >= 1 and rows >= commits")
    before = uptime()
    print(f"uptime before: {before}", file=sys.stderr)
    began = time.monotonic()
    result = run(pathlib.Path(args.workdir) / "sustained" / "table", rows, commits, window)
    result.update(uptime_before=before, uptime_after=uptime(), total_s=time.monotonic() - began)
    print(report(result))
    print(f"\nTotal {result['total_s']:.0f} s. uptime before: {before}; after: {result['uptime_after']}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
    if args.png:
        plot(result, pathlib.Path(args.png))


if __name__ == "__main__":
    main()
