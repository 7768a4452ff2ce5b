"""Java Paimon as a benchmark peer: every step of the workload run by Paimon 1.3.1's own Java API
(``interop/java-oracle`` Bench.java) and by tidelake, cold and warm, on the same rows.

    .venv/bin/python benches/java_peer.py --scale 0.05     # or: benches/run.py --systems java_paimon

Steps (workload.py's table: PK ``id``, 4 buckets): ``bulk`` (one commit of ``rows`` rows into a
fresh table), ``upsert`` (the ``commits`` upserts, each writer compacting as its defaults say,
on a bulk-loaded table), ``read`` (full merged read of the read table: written by tidelake,
``write-only``, 11 sorted runs per bucket), ``point`` (``id = rows/2``), ``range`` (1% of the
keys, ``rows/3 <= id < rows/3 + final_rows/100``), ``compact`` (full compaction of a copy of the
read table), ``commits`` (``--small-commits`` one-row upsert commits into a fresh table).

Each system runs each step twice: **cold**, one repetition in a fresh process (a fresh JVM: JIT
cold, classes loading); **warm**, ``1 + repeat`` repetitions in one process, the first one
dropped, the median of the others reported. Inputs are decoded before the timer (Java: the raw
column files ``workload.save`` writes, into ``GenericRow``s; tidelake: the Arrow IPC files).
Per repetition: wall time, CPU time of the whole process (Java: GC and JIT threads included) and
peak RSS (the kernel's high-water mark reset before the repetition: for a warm JVM, the heap it
keeps from earlier repetitions counts). JVM flags as a production task: ``JVM_FLAGS``. Write
steps are checked by reading the table back afterwards (untimed); every step's row count and
checksum (sums of ``ver`` and ``qty``) must agree between the systems, or the report says
MISMATCH.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workload as wl  # noqa: E402

SYSTEM = "java_paimon"
JVM_FLAGS = ("-XX:+UseG1GC", "-Xmx4g")  # G1 and a 4 GB heap, like a 4 GB Flink task manager
STEPS = ("bulk", "upsert", "read", "point", "range", "compact", "commits")
SMALL_COMMITS = 500


def missing() -> str | None:
    """Why the Java peer cannot run here (None when it can)."""
    absent = [tool for tool in ("java", "mvn", "make") if shutil.which(tool) is None]
    return f"{', '.join(absent)} not on PATH" if absent else None


def java_classpath() -> str:
    """The oracle's classpath, built first (``make java-oracle``: a no-op when up to date)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from _java import oracle_classpath

    return oracle_classpath()


def options(w: wl.Workload, read_table: pathlib.Path, small_commits: int) -> list[str]:
    """The ``key=value`` options of every step (the same for both systems)."""
    lo = w.rows // 3
    return [f"buckets={w.buckets}", f"commits={w.commits}", f"table={read_table}", f"point={w.rows // 2}",
            f"lo={lo}", f"hi={lo + w.final_rows // 100 - 1}", f"n={small_commits}"]


def run_process(cmd: list[str], logfile: pathlib.Path, timeout: float) -> dict[str, Any]:
    """Run one measuring process (its stderr appended to ``logfile``); its RESULT."""
    with open(logfile, "a") as err:
        err.write(f"\n$ {' '.join(cmd)[:300]}\n")
        err.flush()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise RuntimeError(f"{cmd[0]} {' '.join(cmd[-8:])} timed out after {timeout:.0f}s; see {logfile}")
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd[-8:])} failed (exit {p.returncode}); see {logfile}")
    return json.loads(lines[-1][len("RESULT "):])


def command(system: str, steps: str, args: list[str], reps: int, data: pathlib.Path, scratch: pathlib.Path,
            classpath: str | None) -> list[str]:
    """The process running ``steps`` (comma-separated) ``reps`` times each with ``system``; it
    prints ``RESULT {step: {"runs": [...], "rows": ..., ...}}``."""
    common = [f"data={data}", f"dir={scratch}", f"reps={reps}", *args]
    if system == SYSTEM:
        assert classpath is not None
        return ["java", *JVM_FLAGS, "-cp", classpath, "org.tidelake.oracle.Main", "bench", steps, *common]
    return [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", steps, *common]


def summarize(res: dict[str, Any], *, warm: bool) -> dict[str, Any]:
    """Cold: the one repetition; warm: the median of the repetitions after the first."""
    runs = res["runs"][1:] if warm else res["runs"]
    out = {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
    if "commit_ms" in runs[0]:
        out["commit_ms_p50"] = statistics.median(ms for r in runs for ms in r["commit_ms"])
    check = res if "rows" in res else runs[-1]
    out.update({k: check[k] for k in ("rows", "sum_ver", "sum_qty")}, reps=len(runs))
    return out


def measure(w: wl.Workload, data: pathlib.Path, work: pathlib.Path, read_table: pathlib.Path, *, repeat: int,
            small_commits: int, timeout: float, logfile: pathlib.Path,
            steps: tuple[str, ...] = STEPS) -> dict[str, dict[str, dict[str, Any]]]:
    """``{step: {"<system> <cold|warm>": numbers}}`` for tidelake and Java Paimon."""
    classpath = java_classpath()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    args = options(w, read_table, small_commits)
    for step in steps:
        out[step] = {}
        for system in ("tidelake", SYSTEM):
            for mode, reps in (("cold", 1), ("warm", 1 + repeat)):
                scratch = work / f"peer-{step}-{system}-{mode}"
                shutil.rmtree(scratch, ignore_errors=True)
                t0 = time.perf_counter()
                res = run_process(command(system, step, args, reps, data, scratch, classpath), logfile, timeout)[step]
                shutil.rmtree(scratch, ignore_errors=True)
                out[step][f"{system} {mode}"] = s = summarize(res, warm=mode == "warm")
                print(f"  {step} {system} {mode}: {s['wall_s']:.3f}s cpu {s['cpu_s']:.2f}s "
                      f"peak RSS {s['peak_rss_mb']:.0f} MB rows {s['rows']} ({time.perf_counter() - t0:.0f}s)",
                      file=sys.stderr, flush=True)
    return out


def mismatches(res: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Steps whose row count or checksum differs between the systems or modes."""
    bad = []
    for step, by in res.items():
        sums = {k: (v["rows"], v["sum_ver"], v["sum_qty"]) for k, v in by.items()}
        if len(set(sums.values())) != 1:
            bad.append(f"{step}: {sums}")
    return bad


def report(w: wl.Workload, res: dict[str, dict[str, dict[str, Any]]], small_commits: int) -> str:
    lines = [f"### tidelake vs Java Paimon 1.3.1 (JVM {' '.join(JVM_FLAGS)}), bulk {w.rows:,} rows, "
             f"{w.commits} upserts x {w.upsert_rows:,}, {small_commits} small commits", "",
             "| step | rows | tidelake cold s | tidelake warm s | Java cold s | Java warm s | "
             "speed-up vs Java cold | vs Java warm [CPU s] | peak RSS MB tidelake cold / warm | "
             "peak RSS MB Java cold / warm | RSS tidelake / Java (cold) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for step, by in res.items():
        tc, tw, jc, jw = (by[k] for k in ("tidelake cold", "tidelake warm", "java_paimon cold", "java_paimon warm"))
        if step == "commits":
            fmt = (lambda r: f"{r['commit_ms_p50']:.1f} ms/commit")
            key = "commit_ms_p50"
        else:
            fmt = (lambda r: f"{r['wall_s']:.3f}")
            key = "wall_s"
        lines.append(f"| {step} | {tc['rows']:,} | {fmt(tc)} | {fmt(tw)} | {fmt(jc)} | {fmt(jw)} | "
                     f"{jc[key] / tc[key]:.1f}x | {jw[key] / tw[key]:.1f}x [{jw['cpu_s'] / tw['cpu_s']:.1f}x] | "
                     f"{tc['peak_rss_mb']:.0f} / {tw['peak_rss_mb']:.0f} | {jc['peak_rss_mb']:.0f} / "
                     f"{jw['peak_rss_mb']:.0f} | {tc['peak_rss_mb'] / jc['peak_rss_mb']:.2f} |")
    bad = mismatches(res)
    lines += ["", "Row counts and checksums (sums of ver and qty) agree between the systems on every step."
              if not bad else f"**MISMATCH** between the systems: {bad}",
              "", "Speed-up > 1: tidelake faster. Warm: median of the repetitions after the first in one "
              "process; cold: one repetition in a fresh process (fresh JVM). Peak RSS includes the decoded input."]
    return "\n".join(lines)


# ---- the tidelake side of each step (run as a child process) ----------------------------------

def tidelake_step(step: str, opts: dict[str, str]) -> dict[str, Any]:
    """The tidelake counterpart of Bench.java: the same steps, repetitions and numbers."""
    import gc

    import pyarrow as pa
    import pyarrow.compute as pc

    import tidelake
    import memstat
    import worker

    data, work, reps, buckets = opts["data"], pathlib.Path(opts["dir"]), int(opts["reps"]), int(opts["buckets"])
    work.mkdir(parents=True, exist_ok=True)
    _, bulk, upserts = wl.load(data, bulk=step in ("bulk", "upsert", "commits"), upserts=step == "upsert")

    def create(path: pathlib.Path) -> Any:
        return tidelake.create_table(path, wl.SCHEMA, primary_keys=[wl.KEY], bucket=buckets)

    def checksum(t: pa.Table, into: dict[str, Any]) -> None:
        into.update(rows=t.num_rows, sum_ver=pc.sum(t["ver"]).as_py() or 0, sum_qty=pc.sum(t["qty"]).as_py() or 0)

    if step == "upsert":
        create(work / "base").write(bulk)
    result: dict[str, Any] = {"runs": []}
    last = None
    for r in range(reps):
        target = work / f"{step}-{r}"
        if step in ("bulk", "commits"):
            t = create(target)
        elif step in ("upsert", "compact"):
            shutil.copytree(work / "base" if step == "upsert" else opts["table"], target)
            t = tidelake.open_table(target)
        else:
            t, target = tidelake.open_table(opts["table"]), None
        run: dict[str, Any] = {}
        gc.collect()
        memstat.reset_hwm()
        cpu0, t0 = worker._cpu_s(), time.perf_counter()
        if step == "bulk":
            t.write(bulk)
        elif step == "upsert":
            for up in upserts:
                t.upsert(up)
        elif step == "read":
            checksum(t.to_arrow(), run)
        elif step in ("point", "range"):
            where = ([(wl.KEY, "=", int(opts["point"]))] if step == "point" else
                     [(wl.KEY, ">=", int(opts["lo"])), (wl.KEY, "<=", int(opts["hi"]))])
            checksum(t.to_arrow(filter=where), run)
        elif step == "compact":
            t.compact(full=True)
        elif step == "commits":
            run["commit_ms"] = []
            for i in range(int(opts["n"])):
                c0 = time.perf_counter()
                t.upsert(bulk.slice(i % min(1000, bulk.num_rows), 1))
                run["commit_ms"].append((time.perf_counter() - c0) * 1000)
        run.update(wall_s=time.perf_counter() - t0, cpu_s=worker._cpu_s() - cpu0,
                   peak_rss_mb=memstat.hwm_mb())
        result["runs"].append(run)
        if last is not None:
            shutil.rmtree(last)
        last = target
    if last is not None:
        checksum(tidelake.open_table(last).to_arrow(), result)
        shutil.rmtree(last)
    return result


def read_table(data: pathlib.Path) -> pathlib.Path:
    """The table the read, filter and compaction steps start from: the workload saved in
    ``data`` written by tidelake ``write-only`` (11 sorted runs per bucket), built once (in a
    child process) beside ``data``."""
    target = data.parent / f"{data.name}-read-table"
    if not (target / "snapshot").exists():
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--write-runs", str(data),
                        str(target)], check=True)
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3, help="warm repetitions after the first (median)")
    ap.add_argument("--small-commits", type=int, default=SMALL_COMMITS)
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--workdir", default=os.environ.get("TIDELAKE_BENCH_DIR", "/tmp/tidelake-bench") + "/java-peer")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", default=None, help="write the results JSON here")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--write-runs", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        opts = dict(kv.split("=", 1) for kv in a.child[1:])
        print("RESULT " + json.dumps({s: tidelake_step(s, opts) for s in a.child[0].split(",")}), flush=True)
        return
    if a.write_runs:
        w, bulk, upserts = wl.load(a.write_runs[0])
        wl.write_runs(a.write_runs[1], w, bulk, upserts)
        return
    reason = missing()
    if reason:
        raise SystemExit(f"java_paimon skipped: {reason}")
    w = wl.Workload().scaled(a.scale)
    work = pathlib.Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = wl.save(w, work / f"data-{w.rows}-{w.upsert_rows}-{w.commits}")
    logfile = work / "peer.log"
    table = read_table(data)
    res = measure(w, data, work, table, repeat=a.repeat, small_commits=a.small_commits, timeout=a.timeout,
                  logfile=logfile, steps=tuple(a.steps.split(",")))
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(res, indent=1))
    load = os.getloadavg()
    print(report(w, res, a.small_commits) + f"\n\nload average at end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")
    if mismatches(res):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
