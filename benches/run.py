"""tidelake benchmarks: ``python benches/run.py [all|write|read|profile] [--quick] [--scale S]``.

* ``write``: bulk insert of ``--rows`` rows into a 4-bucket primary-key table, then 10 upsert
  commits of ``rows/10`` rows (half new keys), for tidelake, the pyarrow floor (sort + one zstd
  Parquet file per commit), pypaimon (Rust ``pypaimon_rust`` path and pure-Python path) and
  deltalake (``write_deltalake`` + ``merge``); then tidelake's bulk load with 1 vs 2 writer
  threads.
* ``read``: the same workload written by tidelake (≥ 11 sorted runs per bucket, checked), read
  back merged by tidelake (``to_arrow`` and ``to_reader(batch_size=65536)``), pypaimon (Rust
  and Python), deltalake (a Delta table built with the same upserts), and the floor
  (``pq.read_table`` of every data file, no merge).
* ``java``: Java Paimon 1.3.1 as a peer (``benches/java_peer.py``): every step of the workload
  (bulk, upserts, merged read, point and 1% range filters, full compaction, small commits) run
  by Paimon's Java API and by tidelake, each cold (a fresh process / JVM) and warm (repeated in
  one process), with the ratios; also part of ``all`` (system ``java_paimon``), skipped with a
  message when Java or Maven is missing.
* ``profile``: ``perf record`` of the timed phases (tidelake, tidelake write-only, pypaimon native:
  bulk, upserts, reads); needs ``perf``. Summaries: ``benches/perf_summary.py``.

Every measurement runs in its own subprocess (``benches/worker.py``) so peak RSS is per system;
each is repeated ``--repeat`` times, systems interleaved, and the median is reported with the
spread (max-min)/median as a noise indicator. See benches/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import java_peer  # noqa: E402
import workload as wl  # noqa: E402

WORKER = HERE / "worker.py"
WRITE_SYSTEMS = ["floor", "tidelake", "tidelake_writeonly", "pypaimon_native", "pypaimon_python", "deltalake"]
THREAD_SYSTEMS = ["1", "2"]
READ_SYSTEMS = ["floor", "tidelake", "tidelake_stream", "pypaimon_native", "pypaimon_native_stream",
                "pypaimon_python", "deltalake"]
SLOW = {"pypaimon_python"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- subprocesses ------------------------------------------------------------------------------

def run_child(args: list[str], ctx: "Ctx", retries: int = 1) -> dict[str, Any]:
    """Run the worker; return its RESULT (with ``peak_rss_mb``, the child's own VmHWM). A failed
    worker is retried once (the work tree may be rebuilt under a running benchmark)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(ctx.logfile, "a") as err:
        err.write(f"\n$ worker.py {' '.join(args)}\n")
        err.flush()
        p = subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=err,
                             text=True, env=env)
        timer = threading.Timer(ctx.timeout, p.kill)
        timer.start()
        try:
            out = p.stdout.read() if p.stdout else ""
            p.wait()
        finally:
            timer.cancel()
        if p.stdout:
            p.stdout.close()
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        if retries > 0:
            log(f"  worker {' '.join(args[:2])} failed (exit {p.returncode}, see {ctx.logfile}); retrying")
            return run_child(args, ctx, retries - 1)
        raise RuntimeError(f"worker {' '.join(args)} failed (exit {p.returncode}); see {ctx.logfile}")
    return json.loads(lines[-1][len("RESULT "):])


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(runs)}
    for key, value in runs[0].items():
        values = [r[key] for r in runs]
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            med = statistics.median(values)
            out[key] = med
            if key.endswith("_s") and med > 0:
                out[key + "_spread"] = (max(values) - min(values)) / med
                out[key + "_all"] = values
        else:
            out[key] = value
    return out


def measure(tasks: list[str], systems: list[str], repeat: int, slow_repeat: int, extra: list[str],
            ctx: "Ctx") -> dict[str, dict[str, Any]]:
    """Run ``tasks`` (worker processes, in order, sharing one scratch dir) for every system,
    ``repeat`` rounds with the systems interleaved; the median of each number per system."""
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
    for r in range(max(repeat, slow_repeat)):
        for s in systems:
            if r >= (slow_repeat if s in SLOW else repeat):
                continue
            t0 = time.perf_counter()
            scratch = ctx.work / f"{'-'.join(tasks)}-{s}"
            merged: dict[str, Any] = {}
            for task in tasks:
                res = run_child([task, s, "--data", str(ctx.data), "--dir", str(scratch), *extra], ctx)
                res[f"{task}_peak_rss_mb"] = res.pop("peak_rss_mb")
                merged.update(res)
            shutil.rmtree(scratch, ignore_errors=True)
            log(f"  {'+'.join(tasks)} {s} run {r + 1}: {summary_line(merged)} ({time.perf_counter() - t0:.0f}s wall)")
            runs[s].append(merged)
    return {s: median_of(v) for s, v in runs.items() if v}


def summary_line(res: dict[str, Any]) -> str:
    parts = [f"{k}={v:.2f}" for k, v in res.items() if k.endswith(("_s", "_mb")) and isinstance(v, float)]
    return " ".join(parts)


class Ctx:
    def __init__(self, a: argparse.Namespace, w: wl.Workload) -> None:
        self.w = w
        self.work = pathlib.Path(a.workdir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.data = self.work / f"data-{w.rows}-{w.upsert_rows}-{w.commits}"
        self.logfile = self.work / "workers.log"
        self.timeout = a.timeout
        self.results: dict[str, Any] = {}


# ---- reports -----------------------------------------------------------------------------------

def fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k"


def mem(r: dict[str, Any], phase: str) -> str:
    anon = r.get(f"{phase}_anon_growth_mb")
    total = f"{r[phase + '_rss_growth_mb']:.0f}"
    return total if anon is None else f"{total} ({anon:.0f})"


def cores(r: dict[str, Any], phase: str) -> str:
    """Average cores busy: CPU seconds / wall seconds."""
    cpu = r.get(f"{phase}_cpu_s")
    return "-" if cpu is None else f"{cpu / r[phase + '_s']:.2f}"


def spread(r: dict[str, Any], key: str) -> str:
    s = r.get(key + "_spread")
    return "" if s is None or r["n"] < 2 else f" ±{s * 50:.0f}%"


def write_report(w: wl.Workload, res: dict[str, dict[str, Any]], threads: dict[str, dict[str, Any]]) -> str:
    lines = [f"### Write: bulk {w.rows:,} rows, then {w.commits} upserts x {w.upsert_rows:,} rows "
             f"({w.buckets} buckets)", "",
             "| system | runs | bulk s | bulk rows/s | bulk vs floor | bulk cores | bulk RSS growth MB (anon) | "
             "bulk peak RSS MB | upserts s (all 10) | upsert rows/s | upsert vs floor | upsert cores | "
             "upsert RSS growth MB (anon) | upsert peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    floor = res.get("floor")
    for s, r in res.items():
        b_rate = w.rows / r["bulk_s"]
        u_rate = w.upsert_total / r["upsert_s"]
        bf = f"{floor['bulk_s'] / r['bulk_s']:.2f}x" if floor else "-"
        uf = f"{floor['upsert_s'] / r['upsert_s']:.2f}x" if floor else "-"
        lines.append(f"| {s} | {r['n']} | {r['bulk_s']:.2f}{spread(r, 'bulk_s')} | {fmt_rate(b_rate)} | {bf} | "
                     f"{cores(r, 'bulk')} | {mem(r, 'bulk')} | {r['bulk_peak_rss_mb']:.0f} | "
                     f"{r['upsert_s']:.2f}{spread(r, 'upsert_s')} | {fmt_rate(u_rate)} | {uf} | {cores(r, 'upsert')} | "
                     f"{mem(r, 'upsert')} | {r['upsert_peak_rss_mb']:.0f} |")
    tl = res.get("tidelake")
    if tl:
        lines += ["", "tidelake speed-up (time ratio, >1 = tidelake faster; CPU-seconds ratio in brackets, "
                  "less sensitive to other load on the machine):", ""]
        for s, r in res.items():
            if s != "tidelake":
                lines.append(f"- vs {s}: bulk {r['bulk_s'] / tl['bulk_s']:.2f}x "
                             f"[{r['bulk_cpu_s'] / tl['bulk_cpu_s']:.2f}x], upserts "
                             f"{r['upsert_s'] / tl['upsert_s']:.2f}x [{r['upsert_cpu_s'] / tl['upsert_cpu_s']:.2f}x]; "
                             f"RSS growth bulk "
                             f"{tl['bulk_rss_growth_mb']:.0f} vs {r['bulk_rss_growth_mb']:.0f} MB, "
                             f"upserts {tl['upsert_rss_growth_mb']:.0f} vs {r['upsert_rss_growth_mb']:.0f} MB")
    if threads:
        lines += ["", f"### tidelake bulk load, writer threads (TableWriter per thread, disjoint halves, "
                  f"one commit)", "", "| threads | runs | bulk s | rows/s | speed-up | cores | CPU s | max GIL wait ms | "
                  "RSS growth MB (anon) |", "|---|---|---|---|---|---|---|---|---|"]
        one = threads.get("1")
        for s, r in threads.items():
            up = f"{one['bulk_s'] / r['bulk_s']:.2f}x" if one else "-"
            lines.append(f"| {r['threads']} | {r['n']} | {r['bulk_s']:.2f}{spread(r, 'bulk_s')} | "
                         f"{fmt_rate(w.rows / r['bulk_s'])} | {up} | {cores(r, 'bulk')} | {r['bulk_cpu_s']:.2f} | "
                         f"{r.get('bulk_max_gil_wait_ms', float('nan')):.0f} | {mem(r, 'bulk')} |")
        lines += ["", "cores = CPU seconds / wall seconds of the whole process; on 2 cores shared with other "
                  "work, 2 threads can only scale if the machine has a free core. max GIL wait = longest "
                  "time a 5 ms Python sampler thread could not run (GIL held elsewhere, or no free CPU)."]
    return "\n".join(lines)


def read_report(w: wl.Workload, setup: dict[str, Any], res: dict[str, dict[str, Any]]) -> str:
    lines = [f"### Read: latest state of the PK table ({setup['final_rows']:,} rows after merging "
             f"{setup['input_rows']:,} stored rows in {len(setup['tidelake_files'])} files; files per bucket "
             f"{setup['files_per_bucket']}; levels {setup['levels']}; Delta: {setup['delta_files']} files)", "",
             "| system | runs | read s | output rows/s | tidelake speed-up vs it [CPU s] | cores | RSS growth MB (anon) | "
             "result MB | peak RSS MB | rows |", "|---|---|---|---|---|---|---|---|---|---|"]
    tl = res.get("tidelake")
    for s, r in res.items():
        speed = f"{r['read_s'] / tl['read_s']:.2f}x [{r['read_cpu_s'] / tl['read_cpu_s']:.2f}x]" if tl else "-"
        result = f"{r['result_mb']:.0f}" if "result_mb" in r else "(streamed)"
        lines.append(f"| {s} | {r['n']} | {r['read_s']:.2f}{spread(r, 'read_s')} | "
                     f"{fmt_rate(r['rows'] / r['read_s'])} | {speed} | {cores(r, 'read')} | "
                     f"{mem(r, 'read')} | {result} | {r['read_peak_rss_mb']:.0f} | {r['rows']:,} |")
    exp = setup["expected"]
    bad = [s for s, r in res.items() if s != "floor" and (r["rows"], r["sum_ver"], r["sum_qty"]) !=
           (exp["rows"], exp["sum_ver"], exp["sum_qty"])]
    lines += ["", "All merged reads match the expected final state (row count and column sums)." if not bad
              else f"**MISMATCH** against the expected final state: {bad}"]
    return "\n".join(lines)


def build_info() -> str:
    """The commit measured and a hash of the extension module actually loaded."""
    import hashlib

    repo = HERE.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = "unknown"
    sos = sorted((repo / "python" / "tidelake").glob("_internal*.so"))
    digest = hashlib.sha256(sos[0].read_bytes()).hexdigest()[:12] if sos else "not built"
    return f"tidelake {head}, extension sha256 {digest}"


def machine_notes() -> str:
    load = os.getloadavg()
    return (f"{datetime.date.today().isoformat()}, {platform.machine()} {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, load average at end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")


# ---- Java Paimon -------------------------------------------------------------------------------

def java_section(a: argparse.Namespace, w: wl.Workload, ctx: Ctx, repeat: int,
                 setup_json: pathlib.Path | None) -> str:
    """The java_paimon comparison (benches/java_peer.py) as a report section."""
    reason = java_peer.missing()
    if reason:
        log(f"java_paimon skipped: {reason}")
        return f"### tidelake vs Java Paimon\n\nSkipped: {reason}."
    if setup_json is not None:
        table = pathlib.Path(json.loads(setup_json.read_text())["tidelake_path"])
    else:
        table = java_peer.read_table(ctx.data)
    log("java_paimon: every step cold and warm, tidelake and Java")
    res = java_peer.measure(w, ctx.data, ctx.work, table, repeat=repeat, small_commits=a.small_commits,
                            timeout=ctx.timeout, logfile=ctx.logfile)
    ctx.results[java_peer.SYSTEM] = res
    return java_peer.report(w, res, a.small_commits)


# ---- profile -----------------------------------------------------------------------------------

PROFILE_TARGETS = [("bulk", "tidelake"), ("upsert", "tidelake"), ("bulk", "tidelake_writeonly"),
                   ("upsert", "tidelake_writeonly"), ("bulk", "pypaimon_native"),
                   ("upsert", "pypaimon_native"), ("read", "tidelake"), ("read", "tidelake_stream"),
                   ("read", "pypaimon_native")]


def profile(ctx: Ctx, setup_json: pathlib.Path) -> None:
    """``perf record`` (2999 Hz, flat: the release build has no frame pointers) of each timed
    phase only: the worker attaches perf to itself around the phase. Reports go to
    WORKDIR/perf/*.txt, sorted by shared object and symbol."""
    perf = shutil.which("perf")
    if not perf:
        log("perf is not installed; nothing to profile")
        return
    out = ctx.work / "perf"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    scratch: dict[str, pathlib.Path] = {}
    for task, system in PROFILE_TARGETS:
        os.environ["TIDELAKE_BENCH_PERF"] = str(out)
        os.environ["TIDELAKE_BENCH_PERF_TAG"] = system
        d = scratch.setdefault(system, ctx.work / f"perf-{system}")
        extra = ["--setup", str(setup_json)] if task == "read" else []
        res = run_child([task, system, "--data", str(ctx.data), "--dir", str(d), *extra], ctx)
        log(f"  profiled {task} {system}: {summary_line(res)}")
    os.environ.pop("TIDELAKE_BENCH_PERF", None)
    for d in scratch.values():
        shutil.rmtree(d, ignore_errors=True)
    import perf_summary

    summaries = []
    for data in sorted(out.glob("*.data")):
        report = data.with_suffix(".txt")
        with open(report, "w") as f:
            subprocess.run([perf, "report", "-i", str(data), "--no-children", "--sort", "dso,symbol",
                            "--stdio", "--percent-limit", "0.5"], stdout=f, stderr=subprocess.DEVNULL,
                           check=False)
        summaries.append(perf_summary.summary(str(report)))
    (out / "summary.txt").write_text("\n\n".join(summaries) + "\n")
    print("\n\n".join(summaries))


# ---- main --------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="all", choices=["all", "write", "read", "java", "profile"])
    ap.add_argument("--quick", action="store_true", help="smoke run: --scale 0.05 --repeat 1")
    ap.add_argument("--scale", type=float, default=None, help="multiply every row count (default 1)")
    ap.add_argument("--rows", type=int, default=None, help="bulk rows (upserts: rows/10 each)")
    ap.add_argument("--commits", type=int, default=10, help="upsert commits")
    ap.add_argument("--repeat", type=int, default=None, help="runs per system (median reported; default 3)")
    ap.add_argument("--slow-repeat", type=int, default=None,
                    help="runs of pypaimon's pure-Python path (default: --repeat; ~2 min each at full scale)")
    ap.add_argument("--systems", default=None, help="comma-separated subset of systems")
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", "/tmp/tidelake-bench"))
    ap.add_argument("--out", default=None, help="write the results JSON here (default WORKDIR/results.json)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before a worker is killed")
    ap.add_argument("--small-commits", type=int, default=None,
                    help=f"one-row commits of the java_paimon comparison's commits step "
                         f"(default {java_peer.SMALL_COMMITS}; --quick: 20)")
    a = ap.parse_args()

    scale = a.scale if a.scale is not None else (0.05 if a.quick else 1.0)
    repeat = a.repeat if a.repeat is not None else (1 if a.quick else 3)
    slow_repeat = a.slow_repeat if a.slow_repeat is not None else repeat
    if a.small_commits is None:
        a.small_commits = 20 if a.quick else java_peer.SMALL_COMMITS
    w = wl.Workload(commits=a.commits).scaled(scale)
    if a.rows:
        w = wl.Workload(rows=a.rows, upsert_rows=max(1, a.rows // 10), commits=a.commits)
    only = set(a.systems.split(",")) if a.systems else None
    ctx = Ctx(a, w)
    ctx.logfile.write_text("")
    started = time.perf_counter()
    build_at_start = build_info()
    log(f"workload: {w}; workdir {ctx.work}; repeat {repeat} (pypaimon_python {slow_repeat})")
    wl.save(w, ctx.data)

    results: dict[str, Any] = {"workload": w.__dict__, "machine": None, "repeat": repeat}
    ctx.results = results
    reports = []
    if a.command in ("all", "write"):
        systems = [s for s in WRITE_SYSTEMS if not only or s in only]
        res = measure(["bulk", "upsert"], systems, repeat, slow_repeat, [], ctx)
        threads = {}
        if not only or "tidelake" in only:
            threads = measure(["threads"], THREAD_SYSTEMS, repeat, slow_repeat, [], ctx)
        results["write"], results["threads"] = res, threads
        reports.append(write_report(w, res, threads))
    setup_json = None
    if a.command in ("all", "read", "profile"):
        log("read setup: writing the tidelake and Delta tables")
        setup = run_child(["read-setup", "-", "--data", str(ctx.data), "--dir", str(ctx.work / "read-tables")], ctx)
        setup_json = ctx.work / "read-setup.json"
        setup_json.write_text(json.dumps(setup))
        runs_min = min(setup["files_per_bucket"].values())
        if runs_min < w.commits + 1:
            raise SystemExit(f"expected >= {w.commits + 1} sorted runs per bucket, got {setup['files_per_bucket']}")
    if a.command in ("all", "read"):
        systems = [s for s in READ_SYSTEMS if not only or s in only]
        res = measure(["read"], systems, repeat, slow_repeat, ["--setup", str(setup_json)], ctx)
        results["read"], results["read_setup"] = res, {k: v for k, v in setup.items() if k != "tidelake_files"}
        reports.append(read_report(w, setup, res))
    if a.command == "java" or (a.command == "all" and (not only or java_peer.SYSTEM in only)):
        reports.append(java_section(a, w, ctx, repeat, setup_json))
    if a.command == "profile":
        profile(ctx, setup_json)
    results["machine"] = machine_notes()
    results["build"] = build_info()
    if results["build"] != build_at_start:
        results["build"] = (f"{build_at_start} at the start, {results['build']} at the end "
                            f"(the extension was rebuilt during the run)")
    results["elapsed_s"] = time.perf_counter() - started
    out = pathlib.Path(a.out) if a.out else ctx.work / "results.json"
    out.write_text(json.dumps(results, indent=1))
    text = "\n\n".join(reports)
    print(f"## tidelake benchmarks — {results['machine']}\n\n{results['build']}. Median of {repeat} runs per system "
          f"(pypaimon_python: {slow_repeat}); ±x% = half the (max-min)/median spread.\n\n{text}\n\n"
          f"Total {results['elapsed_s']:.0f}s; raw results in {out}; worker logs in {ctx.logfile}")


if __name__ == "__main__":
    main()
