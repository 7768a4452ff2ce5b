"""One measurement in its own process: ``python benches/worker.py TASK SYSTEM --data D --dir T``.

Run by ``benches/run.py``; never imported by the parent (so each system's imports, threads and
allocations stay in its own process, and peak RSS is per system). Prints one line
``RESULT {json}`` on stdout.

Memory method (Linux): before a timed phase the worker runs ``gc.collect()``, records VmRSS and
resets the kernel's high-water mark by writing ``5`` to ``/proc/self/clear_refs``; after the
phase it reads VmHWM. ``rss_growth_mb = VmHWM(after) - VmRSS(before)`` is the peak extra
resident memory the phase needed (the input data is already loaded and is not counted).
``anon_growth_mb`` is the same for anonymous memory only (RssAnon sampled every 5 ms by a
thread), which leaves out shared-library pages faulted in on first use. The RESULT also holds
``peak_rss_mb``, this process's lifetime peak (``memstat.lifetime_peak_mb``: VmHWM, not the
parent's ``ru_maxrss``, which starts at the parent's size).
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import threading
import resource
import tempfile
import time
from typing import Any, Callable

import pyarrow as pa

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import workload as wl  # noqa: E402
from memstat import lifetime_peak_mb, reset_hwm, status_kb  # noqa: E402

MB = 1024 * 1024


# ---- memory ------------------------------------------------------------------------------------

def _cpu_s() -> float:
    """User + system CPU seconds of this process, all threads."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class _AnonSampler(threading.Thread):
    """Samples RssAnon (heap, not file-backed pages such as shared-library code faulted in on
    first use) every 5 ms and keeps the maximum. Each wake-up needs the GIL, so the longest
    gap between wake-ups bounds how long another thread held the GIL (plus any wait for a
    CPU on a busy machine): a GIL-releasing extension keeps it near the 5 ms period."""

    PERIOD = 0.005

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak_kb = status_kb("RssAnon")
        self.max_gap = 0.0

    def run(self) -> None:
        last = time.perf_counter()
        while not self.stop.wait(self.PERIOD):
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last)
            last = now
            self.peak_kb = max(self.peak_kb, status_kb("RssAnon"))


class Phase:
    """Times a block and measures its peak RSS growth. With ``TIDELAKE_BENCH_PERF=DIR`` set,
    ``perf record`` samples this process during the block into ``DIR/<tag>-<name>.data``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.perf: subprocess.Popen[bytes] | None = None

    def _start_perf(self) -> None:
        out = os.environ.get("TIDELAKE_BENCH_PERF")
        if not out:
            return
        tag = os.environ.get("TIDELAKE_BENCH_PERF_TAG", "run")
        self.perf = subprocess.Popen(["perf", "record", "-F", "2999", "-p", str(os.getpid()), "-o",
                                      f"{out}/{tag}-{self.name}.data"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # let perf attach

    def _stop_perf(self) -> None:
        if self.perf is not None:
            self.perf.send_signal(signal.SIGINT)
            self.perf.wait()

    def __enter__(self) -> "Phase":
        gc.collect()
        self._start_perf()
        self.hwm_reset = reset_hwm()
        self.rss_before_kb = status_kb("VmRSS")
        self.anon_before_kb = status_kb("RssAnon")
        self.sampler = _AnonSampler()
        self.sampler.start()
        self.cpu0 = _cpu_s()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu_s = _cpu_s() - self.cpu0
        self.hwm_kb = status_kb("VmHWM")
        self.sampler.stop.set()
        self.sampler.join()
        self.growth_mb = (self.hwm_kb - self.rss_before_kb) / 1024
        anon_peak = max(self.sampler.peak_kb, status_kb("RssAnon"))
        self.anon_growth_mb = (anon_peak - self.anon_before_kb) / 1024
        self._stop_perf()

    def report(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}_s": self.seconds, f"{prefix}_rss_growth_mb": self.growth_mb,
                f"{prefix}_anon_growth_mb": self.anon_growth_mb, f"{prefix}_cpu_s": self.cpu_s,
                f"{prefix}_max_gil_wait_ms": max(0.0, self.sampler.max_gap - _AnonSampler.PERIOD) * 1000,
                f"{prefix}_hwm_reset": self.hwm_reset}


# ---- writers -----------------------------------------------------------------------------------
#
# Each system's write benchmark runs in two processes: ``bulk`` (create the table, load the bulk
# rows, commit) and then ``upsert`` (open that table, one commit per upsert batch), so the
# upserts' memory is measured in a process whose allocator holds nothing from the bulk load.

class Writer:
    """One system's table: ``create`` + ``bulk`` in the first process, ``open`` + ``upsert``
    in the second."""

    def create(self, target: pathlib.Path, w: wl.Workload) -> None:
        raise NotImplementedError

    def open(self, target: pathlib.Path, w: wl.Workload) -> None:
        raise NotImplementedError

    def bulk(self, t: Any) -> None:
        raise NotImplementedError

    def upsert(self, t: Any, i: int) -> None:
        raise NotImplementedError

    def info(self, target: pathlib.Path) -> dict[str, Any]:
        return {}


class FloorWriter(Writer):
    """pyarrow: sort by key, one zstd(1) Parquet file per commit. No buckets, no merge."""

    def create(self, target: pathlib.Path, w: wl.Workload) -> None:
        target.mkdir(parents=True, exist_ok=True)
        self.target = target

    open = create

    def _put(self, t: Any, i: int) -> None:
        import pyarrow.parquet as pq

        pq.write_table(t.sort_by(wl.KEY), self.target / f"part-{i:02d}.parquet", compression="zstd",
                       compression_level=1)

    def bulk(self, t: Any) -> None:
        self._put(t, 0)

    def upsert(self, t: Any, i: int) -> None:
        self._put(t, i + 1)


class TidelakeWriter(Writer):
    def __init__(self, options: dict[str, str] | None = None) -> None:
        self.options = options or {}

    def create(self, target: pathlib.Path, w: wl.Workload) -> None:
        import tidelake

        self.t = tidelake.create_table(target, wl.SCHEMA, primary_keys=[wl.KEY], bucket=w.buckets,
                                       options=self.options)

    def open(self, target: pathlib.Path, w: wl.Workload) -> None:
        import tidelake

        self.t = tidelake.open_table(target)

    def bulk(self, t: Any) -> None:
        self.t.write(t)

    def upsert(self, t: Any, i: int) -> None:
        self.t.upsert(t)

    def info(self, target: pathlib.Path) -> dict[str, Any]:
        kinds = [s.commit_kind for s in self.t.snapshots()]
        return {"files_on_disk": len(glob.glob(f"{target}/bucket-*/*.parquet")),
                "compact_snapshots": kinds.count("COMPACT"), "snapshots": len(kinds)}


class PypaimonWriter(Writer):
    def __init__(self, native: bool) -> None:
        self.native = native
        self.used_native: list[bool] = []

    def _wrap(self, table: Any) -> Any:
        if self.native:
            table = table.copy({"write.native.enabled": "true", "commit.native.enabled": "true"})
        return table

    def create(self, target: pathlib.Path, w: wl.Workload) -> None:
        from pypaimon import CatalogFactory, Schema

        catalog = CatalogFactory.create({"warehouse": str(target)})
        catalog.create_database("db", True)
        catalog.create_table("db.t", Schema.from_pyarrow_schema(wl.SCHEMA, primary_keys=[wl.KEY],
                                                                options={"bucket": str(w.buckets)}), False)
        self.table = self._wrap(catalog.get_table("db.t"))

    def open(self, target: pathlib.Path, w: wl.Workload) -> None:
        from pypaimon import CatalogFactory

        self.table = self._wrap(CatalogFactory.create({"warehouse": str(target)}).get_table("db.t"))

    def bulk(self, t: Any) -> None:
        builder = self.table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(t)
            self.used_native.append(type(writer).__name__ == "NativeTableWrite"
                                    and getattr(writer, "_python_writer", None) is None)
            commit.commit(writer.prepare_commit())
        finally:
            writer.close()
            commit.close()
        if self.native and not all(self.used_native):
            raise RuntimeError("pypaimon fell back to its Python writer")

    def upsert(self, t: Any, i: int) -> None:
        self.bulk(t)

    def info(self, target: pathlib.Path) -> dict[str, Any]:
        return {"files_on_disk": len(glob.glob(f"{target}/db.db/t/bucket-*/*.parquet")),
                "native_used": self.native and all(self.used_native)}


def _delta_props() -> Any:
    from deltalake import WriterProperties

    return WriterProperties(compression="ZSTD", compression_level=1)


def delta_merge(path: str, t: Any) -> None:
    from deltalake import DeltaTable

    (DeltaTable(path).merge(t, predicate="t.id = s.id", source_alias="s", target_alias="t",
                            writer_properties=_delta_props())
     .when_matched_update_all().when_not_matched_insert_all().execute())


class DeltaWriter(Writer):
    """deltalake: ``write_deltalake`` for the bulk, ``merge`` (update all / insert all) per upsert."""

    def create(self, target: pathlib.Path, w: wl.Workload) -> None:
        self.path = str(target)

    open = create

    def bulk(self, t: Any) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.path, t, writer_properties=_delta_props())

    def upsert(self, t: Any, i: int) -> None:
        delta_merge(self.path, t)

    def info(self, target: pathlib.Path) -> dict[str, Any]:
        from deltalake import DeltaTable

        return {"live_files": len(DeltaTable(self.path).file_uris())}


WRITERS: dict[str, Callable[[], Writer]] = {
    "floor": FloorWriter,
    "tidelake": TidelakeWriter,
    "tidelake_writeonly": lambda: TidelakeWriter({"write-only": "true"}),
    "pypaimon_native": lambda: PypaimonWriter(native=True),
    "pypaimon_python": lambda: PypaimonWriter(native=False),
    "deltalake": DeltaWriter,
}


def write_task(phase: str, system: str, data: str, target: pathlib.Path) -> dict[str, Any]:
    writer = WRITERS[system]()
    if phase == "bulk":
        w, bulk, _ = wl.load(data, upserts=False)
        shutil.rmtree(target, ignore_errors=True)
        writer.create(target, w)
        with Phase("bulk") as p:
            writer.bulk(bulk)
    else:
        w, _, upserts = wl.load(data, bulk=False)
        writer.open(target, w)
        with Phase("upsert") as p:
            for i, up in enumerate(upserts):
                writer.upsert(up, i)
    return {**p.report(phase), **writer.info(target)}


def write_threads(data: str, target: pathlib.Path, threads: int) -> dict[str, Any]:
    """Bulk load by ``threads`` TableWriters in as many Python threads (disjoint key halves,
    one commit). Scales only if the binding releases the GIL while it sorts and encodes."""
    import uuid

    import tidelake

    w, bulk, _ = wl.load(data, upserts=False)
    shutil.rmtree(target, ignore_errors=True)
    t = tidelake.create_table(target, wl.SCHEMA, primary_keys=[wl.KEY], bucket=w.buckets)
    n = bulk.num_rows
    parts = [bulk.slice(i * n // threads, (i + 1) * n // threads - i * n // threads) for i in range(threads)]
    user = str(uuid.uuid4())
    messages: list[list[Any]] = [[] for _ in range(threads)]
    thread_cpu = [0.0] * threads
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            c0 = time.thread_time()
            writer = t.writer(commit_user=user)
            writer.write(parts[i])
            messages[i] = writer.prepare_commit()
            writer.close()
            thread_cpu[i] = time.thread_time() - c0
        except BaseException as e:  # surfaced below
            errors.append(e)

    with Phase(f"threads{threads}") as p:
        pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        if errors:
            raise errors[0]
        t.commit([m for ms in messages for m in ms], commit_user=user)
    rows = t.to_arrow(columns=[wl.KEY]).num_rows
    if rows != w.rows:
        raise RuntimeError(f"{rows} rows after the threaded load, expected {w.rows}")
    # thread_time() of a thread blocked in Rust with the GIL released still counts its own
    # CPU: the calling thread runs the future (tokio block_on).
    return {**p.report("bulk"), "threads": threads, "thread_cpu_s": thread_cpu}


# ---- readers -----------------------------------------------------------------------------------

def _checksum(t: Any) -> dict[str, Any]:
    import pyarrow.compute as pc

    return {"rows": t.num_rows, "result_mb": t.nbytes / MB, "sum_ver": pc.sum(t["ver"]).as_py(),
            "sum_qty": pc.sum(t["qty"]).as_py()}


def read_task(system: str, setup: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if system == "floor":
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = setup["tidelake_files"]
        with Phase("read") as p:
            result = pa.concat_tables([pq.read_table(f) for f in files])
        out["files"] = len(files)
    elif system == "tidelake":
        import tidelake

        t = tidelake.open_table(setup["tidelake_path"])
        with Phase("read") as p:
            result = t.to_arrow()
    elif system == "tidelake_stream":
        import tidelake

        t = tidelake.open_table(setup["tidelake_path"])
        rows = sum_ver = sum_qty = 0
        import pyarrow.compute as pc

        with Phase("read") as p:
            for batch in t.to_reader(batch_size=65536):
                rows += batch.num_rows
                sum_ver += pc.sum(batch["ver"]).as_py() or 0
                sum_qty += pc.sum(batch["qty"]).as_py() or 0
        result = None
        out.update(rows=rows, sum_ver=sum_ver, sum_qty=sum_qty)
    elif system.startswith("pypaimon"):
        from pypaimon.read.table_read import TableRead
        from pypaimon.table.file_store_table import FileStoreTable

        fallbacks: list[str] = []
        original = TableRead._native_fallback

        def record(self: Any, reason: Any, *a: Any, **k: Any) -> Any:
            fallbacks.append(str(reason))
            return original(self, reason, *a, **k)

        TableRead._native_fallback = record  # type: ignore[method-assign]
        table = FileStoreTable.from_path(setup["tidelake_path"])
        native = "native" in system
        if native:
            table = table.copy({"read.native.enabled": "true"})
        rb = table.new_read_builder()
        if system.endswith("_stream"):
            import pyarrow.compute as pc

            rows = sum_ver = sum_qty = 0
            with Phase("read") as p:
                splits = rb.new_scan().plan().splits()
                for batch in rb.new_read().to_arrow_batch_reader(splits):
                    rows += batch.num_rows
                    sum_ver += pc.sum(batch["ver"]).as_py() or 0
                    sum_qty += pc.sum(batch["qty"]).as_py() or 0
            result = None
            out.update(rows=rows, sum_ver=sum_ver, sum_qty=sum_qty)
        else:
            with Phase("read") as p:
                splits = rb.new_scan().plan().splits()
                result = rb.new_read().to_arrow(splits)
        if native and fallbacks:
            raise RuntimeError(f"pypaimon native read fell back to Python: {fallbacks}")
        out["native_used"] = native and not fallbacks
    elif system == "deltalake":
        from deltalake import DeltaTable

        with Phase("read") as p:
            result = DeltaTable(setup["delta_path"]).to_pyarrow_table()
    else:
        raise SystemExit(f"unknown read system {system}")
    if result is not None:
        out.update(_checksum(result))
    return {**out, **p.report("read")}


def read_tables(scale: float, workdir: str | None, prefix: str,
                options: dict[str, str] | None = None) -> tuple[dict[str, Any], pa.Table]:
    """The read benchmark's tables built afresh in ``workdir`` (a new temporary directory by
    default) at ``scale``, the tidelake table with ``options``: their :func:`read_setup` and the
    expected final rows."""
    w = wl.Workload().scaled(scale)
    work = pathlib.Path(workdir or tempfile.mkdtemp(prefix=prefix))
    data = wl.save(w, work / "data")
    print(f"building the tables in {work} ...", flush=True)
    shutil.rmtree(work / "tables", ignore_errors=True)
    setup = read_setup(str(data), work / "tables", options)
    _, bulk, upserts = wl.load(data)
    return setup, wl.final_state(bulk, upserts)


def read_setup(data: str, target: pathlib.Path, options: dict[str, str] | None = None) -> dict[str, Any]:
    """Build the tables the read benchmark reads: the PK table written by tidelake (bulk +
    upserts, ``write-only`` so nothing is compacted) and a Delta table with the same final content (bulk + merges)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    w, bulk, upserts = wl.load(data)
    tl_path = target / "tidelake"
    t = wl.write_runs(tl_path, w, bulk, upserts, options)
    delta_path = target / "delta"
    write_deltalake(str(delta_path), bulk, writer_properties=_delta_props())
    for up in upserts:
        delta_merge(str(delta_path), up)
    # Files per bucket, cross-checked against pypaimon's plan of the same snapshot.
    from pypaimon.table.file_store_table import FileStoreTable

    files = sorted(glob.glob(f"{tl_path}/bucket-*/*.parquet"))
    per_bucket: dict[str, int] = {}
    for f in files:
        per_bucket[pathlib.Path(f).parent.name] = per_bucket.get(pathlib.Path(f).parent.name, 0) + 1
    splits = FileStoreTable.from_path(str(tl_path)).new_read_builder().new_scan().plan().splits()
    planned = sorted(os.path.basename(f.file_name) for s in splits for f in s.files)
    levels = sorted({f.level for s in splits for f in s.files})
    if planned != sorted(os.path.basename(f) for f in files):
        raise RuntimeError("the files on disk are not the files of the latest snapshot")
    input_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    expected = wl.final_state(bulk, upserts)
    got = t.to_arrow().sort_by(wl.KEY)
    if not got.equals(expected.cast(got.schema)):
        raise RuntimeError("tidelake's merged read differs from the expected final state")
    return {"tidelake_path": str(tl_path), "delta_path": str(delta_path), "tidelake_files": files,
            "files_per_bucket": per_bucket, "levels": levels, "input_rows": input_rows,
            "final_rows": expected.num_rows, "expected": _checksum(expected),
            "delta_files": len(DeltaTable(str(delta_path)).file_uris())}


# ---- entry -------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["bulk", "upsert", "threads", "read", "read-setup"])
    ap.add_argument("system")
    ap.add_argument("--data", required=True, help="workload directory (workload.py save)")
    ap.add_argument("--dir", required=True, help="scratch directory for this measurement")
    ap.add_argument("--setup", help="read-setup result JSON (read task)")
    a = ap.parse_args()
    target = pathlib.Path(a.dir)
    if a.task in ("bulk", "upsert"):
        result = write_task(a.task, a.system, a.data, target)
    elif a.task == "threads":
        try:
            result = write_threads(a.data, target, int(a.system))
        finally:
            shutil.rmtree(target, ignore_errors=True)
    elif a.task == "read-setup":
        shutil.rmtree(target, ignore_errors=True)
        result = read_setup(a.data, target)
    else:
        result = read_task(a.system, json.loads(pathlib.Path(a.setup).read_text()))
    result["peak_rss_mb"] = lifetime_peak_mb()
    print("RESULT " + json.dumps(result), flush=True)
    sys.stderr.flush()
    # Skip interpreter teardown: deltalake 1.6.6 sometimes aborts in it ("terminate called
    # without an active exception"), and nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
