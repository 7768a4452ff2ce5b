"""Sustained ingestion (issue #35): many upsert commits into one primary-key table with its
default compaction, and whether throughput, sorted runs and memory stay flat as the table grows.

    .venv/bin/python benches/sustained_ingestion.py                       # 10M rows / 1,000 commits
    .venv/bin/python benches/sustained_ingestion.py --mode writer         # one long-lived writer
    .venv/bin/python benches/sustained_ingestion.py --peer java           # Java Paimon, same stream
    .venv/bin/python benches/sustained_ingestion.py --rows 100000000      # the issue's full scale
    .venv/bin/python benches/sustained_ingestion.py --quick --png /tmp/s.png
    .venv/bin/python benches/sustained_ingestion.py --plot a.json b.json --png s.png   # runs together

The table: ``id BIGINT`` primary key, ``ver``, ``qty`` (BIGINT), ``price`` (DOUBLE), 16 fixed
buckets, every other option at its default (so a bucket's writer compacts as Java Paimon's does:
universal compaction once a bucket has ``num-sorted-run.compaction-trigger`` = 5 sorted runs).
The stream: ``--commits`` batches of ``rows / commits`` rows, the first all new keys, then half
updates of keys drawn uniformly from those already written and half new keys (seeded: every run
and every engine gets the same batches). Engines:

* ``--mode upsert`` (default): one ``Table.upsert`` call per batch; each call's writer compacts
  inline and waits for it (a one-shot write);
* ``--mode writer``: one long-lived ``Table.writer()`` (Java's ``StreamTableWrite``): per batch
  ``upsert``, ``prepare_commit`` and the commit; compaction runs in the background and joins the
  ``prepare_commit`` after it finishes;
* ``--peer java``: the same batches through Java Paimon 1.3.1's streaming writer
  (``interop/java-oracle`` Bench.java ``sustained``: one ``StreamTableWrite`` and
  ``StreamTableCommit``, ``prepareCommit(false, i)`` then ``commit(i, ...)``, as a Flink sink
  runs them; JVM flags as benches/java_peer.py's). Python writes the batches once as a raw
  column file (:func:`save_stream`); Java decodes each batch into rows before its timer.

A batch is generated (Java: decoded) before its timer; the timed part is its write + commit.
Per window of ``--window`` commits (default 100), one line of:

* ``rows/s (timed)``: the window's rows / the wall seconds of its timed parts, and rows per CPU
  second of the process (all threads) over those parts;
* ``rows/s (window)``: the same over the whole window, from the end of one commit's bookkeeping to
  the next, minus only the calling thread's own batch generation and file listing (wall, and
  that thread's CPU): what background compaction does between commits counts here, so it is
  not hidden; the window's CPU is the process's, all threads;
* wall seconds of the write / prepare-commit (flush, and the compaction it joins or waits for) /
  commit phases (upsert mode: the whole call is "write"), the process CPU seconds of each
  (tidelake), and CPU seconds of threads other than the caller's (compaction, file writing);
* sorted runs per bucket, from the table's live files (read after every commit, excluded as
  above): a bucket's runs = its level-0 files + its non-empty levels above 0; ``max`` is the
  largest seen after any commit of the window, ``mean`` the mean over buckets after its last;
* write amplification so far: bytes of the data files compaction wrote / bytes of the data files
  the flushes wrote. tidelake: from the commits' snapshots (the first an APPEND, any other a
  COMPACT; upsert mode: the call's ``bytes_added`` less the new ``COMPACT`` live files), checked
  against the live files' ``file_source``; Java: the commit messages' ``compactIncrement``
  ``compactAfter`` vs ``newFilesIncrement`` ``newFiles`` file sizes;
* peak RSS MB of the process so far (``VmHWM``, benches/memstat.py; Java: the JVM's) and the
  1-minute load average at the window's end (the machine is shared: record it with the numbers).

After the run, the compaction picks of either engine, read from its table's snapshots
(:func:`compaction_picks`; the Java peer's table is kept at ``<workdir>/sustained/java-table``):
per window, how many bucket compactions ran, the sorted runs and MB each merged, the share of
bytes written into the max level and the write amplification in rows (file formats aside).
Each commit's record carries ``end_s`` (``time.perf_counter``, CLOCK_MONOTONIC), so samples of
``perf record -k mono`` can be placed in their commit.

With ``--s3`` the table lives in a bucket of moto's S3 server on 127.0.0.1 instead
(``benches/s3_requests.py``) and each commit's timed part also counts its object-store
requests (by kind; the per-commit records keep them by target): the report adds requests per
commit per window. In ``--mode writer``, background compaction's requests count in the commit
they overlap. moto is slow: use a smaller ``--rows`` / ``--commits``.

The summary lines give the issue's target, rows/s of the last window within 1.3x of the first's,
for each of the four rates. Every run checks that every key written is live once and reports the
sum of ``ver`` over the live rows (the same for every engine: the stream is seeded). ``--out``
(JSON) keeps every commit's record and every window; ``--png`` plots rows per CPU second (whole
window) and sorted runs per window.
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
from s3_requests import KINDS, Recording, S3Bench, metadata, s3_bench  # noqa: E402

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


def observe(files: Files, i: int, mode: str, committed: list[dict[str, int]]) -> tuple[int, int, list[int]]:
    """(ingested bytes, compaction bytes, runs per bucket) of commit ``i``, checked against the
    live files. ``committed``: the commit's snapshots with their metrics (upsert mode: one
    entry, the call's total); the first is the APPEND of the batch, the others COMPACTs."""
    appended, compacted, runs = files.observe()
    if mode == "upsert":
        total = committed[0]["bytes_added"]
        if committed[0]["snapshots"] == 1 and (appended, compacted) != (total, 0):
            raise AssertionError(f"commit {i}: live files added {appended} + {compacted} bytes, "
                                 f"the commit says {total}")
        return total - compacted, compacted, runs
    ingested, compaction = committed[0]["bytes_added"], sum(s["bytes_added"] for s in committed[1:])
    # a compaction committed with this batch may already have merged away some of its files
    if compacted != compaction or appended > ingested:
        raise AssertionError(f"commit {i}: live files added {appended} + {compacted} bytes, "
                             f"the commit says {ingested} + {compaction}")
    return ingested, compaction, runs


def compaction_picks(path: pathlib.Path) -> list[dict[str, Any]]:
    """What every compaction of the table at ``path`` (tidelake's or Java's) rewrote, from its
    snapshots' delta manifests: one record per bucket of each COMPACT snapshot, with the commit
    it belongs to (the APPEND snapshots before it, less one), the sorted runs it merged (its
    removed level-0 files + the distinct levels above 0 of the others), bytes and rows in and
    out and the output level. Several compactions of a bucket within one commit are one record (both
    engines hand one increment per ``prepare_commit``; intermediate outputs never land).
    Reads Paimon's manifest Avro files directly (fastavro): a bench-only view of the deltas."""
    import fastavro

    def avro(name: str) -> list[dict[str, Any]]:
        with open(path / "manifest" / name, "rb") as f:
            return list(fastavro.reader(f))

    ids = sorted(int(p.name.split("-")[1]) for p in (path / "snapshot").glob("snapshot-*"))
    picks: list[dict[str, Any]] = []
    appends = 0
    for sid in ids:
        snap = json.loads((path / "snapshot" / f"snapshot-{sid}").read_text())
        if snap["commitKind"] != "COMPACT":
            appends += 1
            continue
        buckets: dict[int, dict[str, Any]] = {}
        for meta in avro(snap["deltaManifestList"]):
            for e in avro(meta["_FILE_NAME"]):
                f = e["_FILE"]
                b = buckets.setdefault(e["_BUCKET"], {"commit": appends - 1, "bucket": e["_BUCKET"],
                                                      "before": [], "after": []})
                b["before" if e["_KIND"] == 1 else "after"].append((f["_LEVEL"], f["_FILE_SIZE"], f["_ROW_COUNT"]))
        for b in buckets.values():
            before, after = b.pop("before"), b.pop("after")
            b.update(runs_in=sum(1 for f in before if f[0] == 0) + len({f[0] for f in before if f[0] > 0}),
                     bytes_in=sum(f[1] for f in before), bytes_out=sum(f[1] for f in after),
                     rows_in=sum(f[2] for f in before), rows_out=sum(f[2] for f in after),
                     output_level=max((f[0] for f in after), default=-1))
            picks.append(b)
    return picks


def pick_windows(picks: list[dict[str, Any]], window: int, commits: int) -> list[dict[str, Any]]:
    """The picks per window of ``window`` commits: how many bucket compactions, the sorted runs
    and MB each merged (mean), the share of the bytes written into the max level, and the rows
    compaction wrote per row flushed so far (write amplification in rows: the file format's
    sizes left out)."""
    out = []
    rewritten = 0
    for start in range(0, commits, window):
        chunk = [p for p in picks if start <= p["commit"] < start + window]
        n = len(chunk) or 1
        top = max((p["output_level"] for p in picks), default=0)
        written = sum(p["bytes_out"] for p in chunk) or 1
        rewritten += sum(p["rows_out"] for p in chunk)
        out.append({"commits": min(start + window, commits), "compactions": len(chunk),
                    "runs_per_compaction": sum(p["runs_in"] for p in chunk) / n,
                    "mb_in_per_compaction": sum(p["bytes_in"] for p in chunk) / n / 2**20,
                    "max_level_share": sum(p["bytes_out"] for p in chunk if p["output_level"] == top) / written,
                    "rows_rewritten": rewritten})
    return out


def run(path: pathlib.Path, rows: int, commits: int, mode: str = "upsert", s3: S3Bench | None = None) -> dict[str, Any]:
    """Ingest ``commits`` upserts of ``rows // commits`` rows into a fresh table at ``path``:
    one ``Table.upsert`` call each (``mode="upsert"``), or through one long-lived
    ``Table.writer()``, ``upsert`` + ``prepare_commit`` + commit per batch (``"writer"``).
    With ``s3``, the table is in its bucket instead, and each record also counts the
    object-store requests of its timed part (its metadata is copied to ``path`` afterwards, for
    :func:`compaction_picks`). Returns one record per commit (see :func:`windows`)."""
    import pyarrow.compute as pc

    import tidelake
    from tidelake.write import raw_messages

    shutil.rmtree(path, ignore_errors=True)
    size = rows // commits
    stream = Batches(size)
    location = s3.table("sustained") if s3 else str(path)
    recording = Recording(s3.server.endpoint, location) if s3 else None
    table = tidelake.create_table(location, stream.schema, primary_keys=["id"], options={"bucket": str(BUCKETS)},
                                  storage_options=s3.options if s3 else None)
    files = Files(table)
    writer = table.writer() if mode == "writer" else None
    records: list[dict[str, Any]] = []
    mark, mark_cpu = time.perf_counter(), time.process_time()
    for i in range(commits):
        x0, xc0 = time.perf_counter(), time.thread_time()
        batch = stream.batch(i)
        excluded, excluded_cpu = time.perf_counter() - x0, time.thread_time() - xc0
        if recording:
            recording.start()
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        if writer is None:
            result = table.upsert(batch)
            t1 = t2 = t3 = time.perf_counter()
            committed = [{"bytes_added": result.bytes_added, "snapshots": len(result.snapshot_ids)}]
            c1 = c2 = time.process_time()
        else:
            writer.upsert(batch)
            t1, c1 = time.perf_counter(), time.process_time()
            messages = writer.prepare_commit()
            t2, c2 = time.perf_counter(), time.process_time()
            # the binding's commit: Table.commit's snapshots with the metrics it drops
            committed = table._raw.commit(raw_messages(messages), writer.commit_user, i)
            t3 = time.perf_counter()
        c3 = time.process_time()
        record = {"write_s": t1 - t0, "prepare_s": t2 - t1, "commit_s": t3 - t2, "timed_cpu_s": c3 - c0,
                  "main_cpu_s": time.thread_time() - m0,
                  "phase_cpu_s": [c1 - c0, c2 - c1, c3 - c2]}
        if recording:
            record["requests"] = recording.stop()
        x0, xc0 = time.perf_counter(), time.thread_time()
        ingested, compaction, runs = observe(files, i, mode, committed)
        record.update(ingested=ingested, compaction=compaction, runs=runs,
                      snapshots=committed[0]["snapshots"] if writer is None else len(committed),
                      peak_rss_mb=lifetime_peak_mb(), load_1m=os.getloadavg()[0])
        excluded += time.perf_counter() - x0
        excluded_cpu += time.thread_time() - xc0
        now, now_cpu = time.perf_counter(), time.process_time()
        # end_s: CLOCK_MONOTONIC, to place `perf record -k mono` samples in their commit
        record.update(cycle_s=now - mark - excluded, cycle_cpu_s=now_cpu - mark_cpu - excluded_cpu, end_s=now)
        mark, mark_cpu = now, now_cpu
        records.append(record)
    if writer is not None:
        writer.close()
    final = table.to_arrow(columns=["id", "ver"])
    if final.num_rows != stream.next_key:
        raise AssertionError(f"{final.num_rows} live rows, {stream.next_key} keys written")
    if s3:
        s3.download(location, path, metadata)
    return {"rows": size * commits, "commits": commits, "rows_per_commit": size, "buckets": BUCKETS,
            "mode": mode, "storage": "moto S3" if s3 else "local", "live_rows": final.num_rows,
            "keys_written": stream.next_key,
            "sum_ver": pc.sum(final["ver"]).as_py(), "per_commit": records, "picks": compaction_picks(path)}


def windows(result: dict[str, Any], window: int) -> list[dict[str, Any]]:
    """The per-commit records of a run (tidelake or the Java peer: the same fields) summed per
    window of ``window`` commits. A record: ``write_s``, ``prepare_s``, ``commit_s`` (the timed
    phases: wall seconds), ``timed_cpu_s`` (process CPU over them, all threads),
    ``main_cpu_s`` (the calling thread's CPU over them), ``cycle_s`` / ``cycle_cpu_s`` (wall and
    process CPU from the end of the previous commit's bookkeeping to the end of this one's,
    minus the calling thread's own batch generation/decoding and file listing: what background
    compaction does between commits counts here), ``ingested`` / ``compaction`` (bytes),
    ``runs`` (per bucket), ``snapshots``, ``peak_rss_mb``, ``load_1m``; tidelake's also
    ``phase_cpu_s``, the process CPU of each timed phase (upsert mode: all in the first)."""
    size = result["rows_per_commit"]
    out: list[dict[str, Any]] = []
    ingested = compaction = 0
    records = result["per_commit"]
    for start in range(0, len(records), window):
        chunk = records[start:start + window]
        rows = len(chunk) * size
        sums = {k: sum(r[k] for r in chunk) for k in ("write_s", "prepare_s", "commit_s", "timed_cpu_s",
                                                      "main_cpu_s", "cycle_s", "cycle_cpu_s")}
        ingested += sum(r["ingested"] for r in chunk)
        compaction += sum(r["compaction"] for r in chunk)
        timed = sums["write_s"] + sums["prepare_s"] + sums["commit_s"]
        phases = [sum(r["phase_cpu_s"][k] for r in chunk) for k in range(3)] if "phase_cpu_s" in chunk[0] else None
        out.append({"commits": start + len(chunk), "rows": (start + len(chunk)) * size,
                    "rows_per_s": rows / timed, "rows_per_cpu_s": rows / sums["timed_cpu_s"],
                    "window_rows_per_s": rows / sums["cycle_s"], "window_rows_per_cpu_s": rows / sums["cycle_cpu_s"],
                    "seconds": timed, **sums, "other_threads_cpu_s": sums["cycle_cpu_s"] - sums["main_cpu_s"],
                    "phase_cpu_s": phases,
                    "runs_max": max(max(r["runs"]) for r in chunk),
                    "runs_mean": sum(chunk[-1]["runs"]) / len(chunk[-1]["runs"]),
                    "compactions": sum(1 for r in chunk if r["snapshots"] > 1),
                    "write_amplification": compaction / ingested, "ingested_mb": ingested / 2**20,
                    "compaction_mb": compaction / 2**20, "peak_rss_mb": chunk[-1]["peak_rss_mb"],
                    "load_1m": chunk[-1]["load_1m"], **request_window(chunk)})
    return out


def request_window(chunk: list[dict[str, Any]]) -> dict[str, Any]:
    """The object-store requests of a window's commits (runs on S3 only): per commit, the mean
    of each kind and the largest total; nothing for a local run."""
    if "requests" not in chunk[0]:
        return {}
    kinds = {k: sum(r["requests"]["kinds"].get(k, 0) for r in chunk) / len(chunk) for k in KINDS}
    return {"requests_per_commit": sum(r["requests"]["requests"] for r in chunk) / len(chunk),
            "requests_per_commit_kinds": kinds,
            "requests_per_commit_max": max(r["requests"]["requests"] for r in chunk)}


ENGINES = {"upsert": "tidelake, one Table.upsert per batch", "writer": "tidelake, one long-lived Table.writer()",
           "java": "Java Paimon 1.3.1, one StreamTableWrite/StreamTableCommit"}


def report(result: dict[str, Any]) -> str:
    ws = result["windows"]
    first = ws[0]
    on = " (table on moto's S3 server)" if result.get("storage") == "moto S3" else ""
    lines = [f"{ENGINES[result['mode']]}{on}:", "",
             "| commits | rows | rows/s (timed) | vs first | rows/CPU s (timed) | vs first | rows/s (window) | "
             "vs first | rows/CPU s (window) | vs first | write / prepare / commit s | CPU s of each | "
             "other threads CPU s | "
             "sorted runs/bucket max | mean | commits that compacted | write amp. (cumulative) | peak RSS MB | "
             "load 1m |", "|---" * 19 + "|"]
    for w in ws:
        ratios = [f"{w[k]:,.0f} | {w[k] / first[k]:.2f}x" for k in ("rows_per_s", "rows_per_cpu_s",
                                                                    "window_rows_per_s", "window_rows_per_cpu_s")]
        lines.append(f"| {w['commits']:,} | {w['rows']:,} | {' | '.join(ratios)} | "
                     f"{w['write_s']:.1f} / {w['prepare_s']:.1f} / {w['commit_s']:.1f} | "
                     f"{' / '.join(f'{c:.1f}' for c in w['phase_cpu_s']) if w['phase_cpu_s'] else 'n/a'} | "
                     f"{w['other_threads_cpu_s']:.1f} | {w['runs_max']} | {w['runs_mean']:.1f} | "
                     f"{w['compactions']} | {w['write_amplification']:.2f} | {w['peak_rss_mb']:.0f} | "
                     f"{w['load_1m']:.1f} |")
    if "requests_per_commit" in first:
        lines += ["", "Object-store requests of the timed calls (moto's S3 server on 127.0.0.1), per commit:", "",
                  "| commits | requests per commit (mean) | vs first | max | " + " | ".join(KINDS) + " |",
                  "|---" * (4 + len(KINDS)) + "|"]
        for w in ws:
            lines.append(f"| {w['commits']:,} | {w['requests_per_commit']:.1f} | "
                         f"{w['requests_per_commit'] / first['requests_per_commit']:.2f}x | "
                         f"{w['requests_per_commit_max']:,} | "
                         + " | ".join(f"{w['requests_per_commit_kinds'][k]:.1f}" for k in KINDS) + " |")
    lines.append("")
    for key, unit in (("rows_per_s", "rows/s (timed calls)"), ("rows_per_cpu_s", "rows per CPU second (timed calls)"),
                      ("window_rows_per_s", "rows/s (whole window)"),
                      ("window_rows_per_cpu_s", "rows per CPU second (whole window)")):
        ratio = first[key] / ws[-1][key]
        lines.append(f"First window {first[key]:,.0f} {unit}, last {ws[-1][key]:,.0f}: the last is {ratio:.2f}x "
                     f"slower (target: within {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'}).")
    lines += ["", "Compaction picks (from the snapshots' deltas; one per bucket and commit that compacted):", "",
              "| commits | bucket compactions | sorted runs merged (mean) | MB read each (mean) | "
              "share of bytes written into the max level | write amp. in rows (cumulative) |", "|---" * 6 + "|"]
    lines += [f"| {p['commits']:,} | {p['compactions']} | {p['runs_per_compaction']:.2f} | "
              f"{p['mb_in_per_compaction']:.3f} | {p['max_level_share']:.0%} | "
              f"{p['rows_rewritten'] / (p['commits'] * result['rows_per_commit']):.2f} |"
              for p in result["pick_windows"]]
    lines.append("")
    lines.append(f"Write amplification after {ws[-1]['commits']:,} commits: {ws[-1]['write_amplification']:.2f}. "
                 f"{result['live_rows']:,} live rows (sum of ver {result.get('sum_ver', 'n/a')}).")
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], png: pathlib.Path) -> None:
    """Rows per CPU second of each whole window, and sorted runs per bucket (max), of one or
    more runs (engines/modes), one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    runs = ax.twinx()
    for n, result in enumerate(results):
        ws = result["windows"]
        x = [w["commits"] for w in ws]
        color = f"C{n}"
        ax.plot(x, [w["window_rows_per_cpu_s"] for w in ws], marker="o", color=color,
                label=f"{ENGINES[result['mode']]}: rows / CPU s")
        runs.step(x, [w["runs_max"] for w in ws], where="post", color=color, linestyle=":", alpha=0.6)
    ax.set_xlabel("commits")
    ax.set_ylabel("rows per CPU second (window, all threads)")
    ax.set_ylim(bottom=0)
    runs.set_ylabel("sorted runs per bucket, max (dotted)")
    runs.set_ylim(bottom=0)
    r = results[0]
    ax.set_title(f"Sustained upserts: {r['rows']:,} rows in {r['commits']:,} commits, {r['buckets']} buckets",
                 fontsize=10)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def save_stream(path: pathlib.Path, rows: int, commits: int) -> pathlib.Path:
    """The stream's batches as one raw column file for the Java peer (Bench.java ``sustained``):
    int64 commits, int64 rows per batch, then per batch id, ver, qty (int64) and price
    (float64) columns; little-endian. Written once per (rows, commits)."""
    import numpy as np

    size = rows // commits
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = Batches(size)
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as f:
        f.write(np.array([commits, size], dtype="<i8").tobytes())
        for i in range(commits):
            b = stream.batch(i)
            for name, dtype in (("id", "<i8"), ("ver", "<i8"), ("qty", "<i8"), ("price", "<f8")):
                f.write(b[name].to_numpy().astype(dtype).tobytes())
    partial.rename(path)
    return path


def run_java(workdir: pathlib.Path, rows: int, commits: int, timeout: float) -> dict[str, Any]:
    """The same stream through Java Paimon's streaming writer (Bench.java's ``sustained`` step,
    JVM flags as benches/java_peer.py's); the same per-commit records as :func:`run`."""
    import java_peer

    if reason := java_peer.missing():
        raise SystemExit(f"--peer java: {reason}")
    data = save_stream(workdir / f"stream-{rows}-{commits}.cols", rows, commits)
    scratch, table = workdir / "java", workdir / "java-table"
    for d in (scratch, table):
        shutil.rmtree(d, ignore_errors=True)
    cmd = java_peer.command(java_peer.SYSTEM, "sustained", [f"buckets={BUCKETS}", f"table={table}"], 1, data,
                            scratch, java_peer.java_classpath())
    res = java_peer.run_process(cmd, workdir / "java.log", timeout)["sustained"]
    shutil.rmtree(scratch, ignore_errors=True)
    size = rows // commits
    keys = size + (commits - 1) * (size // 2)
    if res["rows"] != keys:
        raise AssertionError(f"Java: {res['rows']} live rows, {keys} keys written")
    return {"rows": size * commits, "commits": commits, "rows_per_commit": size, "buckets": BUCKETS,
            "mode": "java", "live_rows": res["rows"], "keys_written": keys, "sum_ver": res["sum_ver"],
            "per_commit": res["per_commit"], "picks": compaction_picks(table), "jvm": " ".join(java_peer.JVM_FLAGS)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows in all (default %(default)s)")
    ap.add_argument("--commits", type=int, default=1000, help="upsert commits (default %(default)s)")
    ap.add_argument("--window", type=int, default=100, help="commits per reported window (default %(default)s)")
    ap.add_argument("--mode", choices=("upsert", "writer"), default="upsert",
                    help="tidelake: one Table.upsert per batch, or one long-lived Table.writer() (default %(default)s)")
    ap.add_argument("--peer", choices=("java",), help="run the stream through Java Paimon's streaming writer instead")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 20,000 rows, 20 commits, windows of 5")
    ap.add_argument("--s3", action="store_true", help="tidelake: the table on moto's S3 server (127.0.0.1), "
                    "counting each commit's object-store requests (use a smaller --rows/--commits: moto is slow)")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", tempfile.gettempdir() +
                                                        "/tidelake-bench"))
    ap.add_argument("--timeout", type=float, default=7200, help="the Java peer's time limit, s (default %(default)s)")
    ap.add_argument("--out", help="write the result as JSON here")
    ap.add_argument("--png", help="plot rows per CPU s and sorted runs per window here")
    ap.add_argument("--plot", nargs="+", metavar="JSON", help="only plot these --out results together into --png")
    args = ap.parse_args()
    if args.plot:
        if not args.png:
            ap.error("--plot needs --png")
        plot([json.loads(pathlib.Path(f).read_text()) for f in args.plot], pathlib.Path(args.png))
        return
    rows, commits, window = (20_000, 20, 5) if args.quick else (args.rows, args.commits, args.window)
    if commits < 1 or window < 1 or rows < commits:
        ap.error("need commits >= 1, window >= 1 and rows >= commits")
    before = uptime()
    print(f"uptime before: {before}", file=sys.stderr)
    began = time.monotonic()
    work = pathlib.Path(args.workdir) / "sustained"
    if args.peer == "java":
        result = run_java(work, rows, commits, args.timeout)
    elif args.s3:
        with s3_bench() as s3:
            result = run(work / "table", rows, commits, args.mode, s3)
    else:
        result = run(work / "table", rows, commits, args.mode)
    result.update(windows=windows(result, window), pick_windows=pick_windows(result["picks"], window, commits),
                  uptime_before=before, uptime_after=uptime(),
                  total_s=time.monotonic() - began)
    for w in result["windows"]:
        print(f"  commit {w['commits']}: {w['window_rows_per_cpu_s']:,.0f} rows/CPU s, runs max {w['runs_max']}, "
              f"WA {w['write_amplification']:.2f}, RSS {w['peak_rss_mb']:.0f} MB, load {w['load_1m']:.1f}",
              file=sys.stderr)
    print(report(result))
    print(f"\nTotal {result['total_s']:.0f} s. uptime before: {before}; after: {result['uptime_after']}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
    if args.png:
        plot([result], pathlib.Path(args.png))


if __name__ == "__main__":
    main()
