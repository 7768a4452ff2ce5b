"""One measurement in its own process: ``python benches/worker.py TASK SYSTEM --data D --dir T``.

Run by ``benches/run.py``; never imported by the parent (so each system's imports, threads and
allocations stay in its own process, and peak RSS is per system). Prints one line
``RESULT {json}`` on stdout.

Memory method (Linux): before a timed phase the worker runs ``gc.collect()``, records VmRSS and
resets the kernel's high-water mark by writing ``5`` to ``/proc/self/clear_refs``; after the
phase it reads VmHWM. ``rss_growth_mb = VmHWM(after) - VmRSS(before)`` is the peak extra
resident memory the phase needed (the input data is already loaded and is not counted).
``anon_growth_mb`` is the same for anonymous memory only (RssAnon sampled every 5 ms by a
thread), which leaves out shared-library pages faulted in on first use. The parent also
reports the child's lifetime peak, ``ru_maxrss`` from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import pathlib
import shutil
import sys
import threading
import resource
import time
from typing import Any, Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import workload as wl  # noqa: E402

MB = 1024 * 1024


# ---- memory ------------------------------------------------------------------------------------

def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _cpu_s() -> float:
    """User + system CPU seconds of this process, all threads."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class _AnonSampler(threading.Thread):
    """Samples RssAnon (heap, not file-backed pages such as shared-library code faulted in on
    first use) every 5 ms and keeps the maximum."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak_kb = _status_kb("RssAnon")

    def run(self) -> None:
        while not self.stop.wait(0.005):
            self.peak_kb = max(self.peak_kb, _status_kb("RssAnon"))


class Phase:
    """Times a block and measures its peak RSS growth."""

    def __enter__(self) -> "Phase":
        gc.collect()
        self.hwm_reset = _reset_hwm()
        self.rss_before_kb = _status_kb("VmRSS")
        self.anon_before_kb = _status_kb("RssAnon")
        self.sampler = _AnonSampler()
        self.sampler.start()
        self.cpu0 = _cpu_s()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu_s = _cpu_s() - self.cpu0
        self.hwm_kb = _status_kb("VmHWM")
        self.sampler.stop.set()
        self.sampler.join()
        self.growth_mb = (self.hwm_kb - self.rss_before_kb) / 1024
        anon_peak = max(self.sampler.peak_kb, _status_kb("RssAnon"))
        self.anon_growth_mb = (anon_peak - self.anon_before_kb) / 1024

    def report(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}_s": self.seconds, f"{prefix}_rss_growth_mb": self.growth_mb,
                f"{prefix}_anon_growth_mb": self.anon_growth_mb, f"{prefix}_cpu_s": self.cpu_s, f"{prefix}_hwm_reset": self.hwm_reset}


# ---- writers -----------------------------------------------------------------------------------

def write_floor(data: str, target: pathlib.Path) -> dict[str, Any]:
    """pyarrow: sort by key, one zstd(1) Parquet file per commit. No buckets, no merge."""
    import pyarrow.parquet as pq

    _, bulk, upserts = wl.load(data)
    target.mkdir(parents=True)

    def put(t: Any, i: int) -> None:
        pq.write_table(t.sort_by(wl.KEY), target / f"part-{i:02d}.parquet", compression="zstd",
                       compression_level=1)

    with Phase() as b:
        put(bulk, 0)
    with Phase() as u:
        for i, t in enumerate(upserts):
            put(t, i + 1)
    return {**b.report("bulk"), **u.report("upsert")}


def write_tidelake(data: str, target: pathlib.Path) -> dict[str, Any]:
    import tidelake

    w, bulk, upserts = wl.load(data)
    t = tidelake.create_table(target, wl.SCHEMA, primary_keys=[wl.KEY], bucket=w.buckets)
    with Phase() as b:
        t.write(bulk)
    with Phase() as u:
        for up in upserts:
            t.upsert(up)
    return {**b.report("bulk"), **u.report("upsert"), "files": len(glob.glob(f"{target}/bucket-*/*.parquet")),
            "snapshots": len(t.snapshots())}


def write_tidelake_threads(data: str, target: pathlib.Path, threads: int) -> dict[str, Any]:
    """Bulk load by ``threads`` TableWriters in as many Python threads (disjoint key halves,
    one commit). Scales only if the binding releases the GIL while it sorts and encodes."""
    import uuid

    import tidelake

    w, bulk, _ = wl.load(data)
    t = tidelake.create_table(target, wl.SCHEMA, primary_keys=[wl.KEY], bucket=w.buckets)
    n = bulk.num_rows
    parts = [bulk.slice(i * n // threads, (i + 1) * n // threads - i * n // threads) for i in range(threads)]
    user = str(uuid.uuid4())
    messages: list[list[Any]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            writer = t.writer(commit_user=user)
            writer.write(parts[i])
            messages[i] = writer.prepare_commit()
            writer.close()
        except BaseException as e:  # surfaced below
            errors.append(e)

    with Phase() as b:
        pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        if errors:
            raise errors[0]
        t.commit([m for ms in messages for m in ms], commit_user=user)
    rows = t.to_arrow(columns=[wl.KEY]).num_rows
    assert rows == w.rows, (rows, w.rows)
    return {**b.report("bulk"), "threads": threads}


def _pypaimon_table(target: pathlib.Path, buckets: int) -> Any:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(target)})
    catalog.create_database("db", True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(wl.SCHEMA, primary_keys=[wl.KEY],
                                                            options={"bucket": str(buckets)}), False)
    return catalog.get_table("db.t")


def write_pypaimon(data: str, target: pathlib.Path, native: bool) -> dict[str, Any]:
    w, bulk, upserts = wl.load(data)
    table = _pypaimon_table(target, w.buckets)
    if native:
        table = table.copy({"write.native.enabled": "true", "commit.native.enabled": "true"})
    used_native = []

    def commit_one(t: Any) -> None:
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(t)
            used_native.append(type(writer).__name__ == "NativeTableWrite"
                               and getattr(writer, "_python_writer", None) is None)
            commit.commit(writer.prepare_commit())
        finally:
            writer.close()
            commit.close()

    with Phase() as b:
        commit_one(bulk)
    with Phase() as u:
        for up in upserts:
            commit_one(up)
    files = len(glob.glob(f"{target}/db.db/t/bucket-*/*.parquet"))
    if native and not all(used_native):
        raise RuntimeError("pypaimon fell back to its Python writer")
    return {**b.report("bulk"), **u.report("upsert"), "native_used": all(used_native), "files": files}


def _delta_props() -> Any:
    from deltalake import WriterProperties

    return WriterProperties(compression="ZSTD", compression_level=1)


def write_deltalake_(data: str, target: pathlib.Path) -> dict[str, Any]:
    from deltalake import DeltaTable, write_deltalake

    _, bulk, upserts = wl.load(data)
    props = _delta_props()
    with Phase() as b:
        write_deltalake(str(target), bulk, writer_properties=props)
    with Phase() as u:
        for up in upserts:
            (DeltaTable(str(target)).merge(up, predicate="t.id = s.id", source_alias="s", target_alias="t",
                                           writer_properties=props)
             .when_matched_update_all().when_not_matched_insert_all().execute())
    return {**b.report("bulk"), **u.report("upsert"), "files": len(DeltaTable(str(target)).file_uris())}


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
        with Phase() as p:
            result = pa.concat_tables([pq.read_table(f) for f in files])
        out["files"] = len(files)
    elif system == "tidelake":
        import tidelake

        t = tidelake.open_table(setup["tidelake_path"])
        with Phase() as p:
            result = t.to_arrow()
    elif system == "tidelake_stream":
        import tidelake

        t = tidelake.open_table(setup["tidelake_path"])
        rows = sum_ver = sum_qty = 0
        import pyarrow.compute as pc

        with Phase() as p:
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
            with Phase() as p:
                splits = rb.new_scan().plan().splits()
                for batch in rb.new_read().to_arrow_batch_reader(splits):
                    rows += batch.num_rows
                    sum_ver += pc.sum(batch["ver"]).as_py() or 0
                    sum_qty += pc.sum(batch["qty"]).as_py() or 0
            result = None
            out.update(rows=rows, sum_ver=sum_ver, sum_qty=sum_qty)
        else:
            with Phase() as p:
                splits = rb.new_scan().plan().splits()
                result = rb.new_read().to_arrow(splits)
        if native and fallbacks:
            raise RuntimeError(f"pypaimon native read fell back to Python: {fallbacks}")
        out["native_used"] = native and not fallbacks
    elif system == "deltalake":
        from deltalake import DeltaTable

        with Phase() as p:
            result = DeltaTable(setup["delta_path"]).to_pyarrow_table()
    else:
        raise SystemExit(f"unknown read system {system}")
    if result is not None:
        out.update(_checksum(result))
    return {**out, **p.report("read")}


def read_setup(data: str, target: pathlib.Path) -> dict[str, Any]:
    """Build the tables the read benchmark reads: the PK table written by tidelake (bulk +
    upserts, no compaction) and a Delta table with the same final content (bulk + merges)."""
    import pyarrow.parquet as pq
    import tidelake
    from deltalake import DeltaTable, write_deltalake

    w, bulk, upserts = wl.load(data)
    tl_path = target / "tidelake"
    t = tidelake.create_table(tl_path, wl.SCHEMA, primary_keys=[wl.KEY], bucket=w.buckets)
    t.write(bulk)
    for up in upserts:
        t.upsert(up)
    delta_path = target / "delta"
    props = _delta_props()
    write_deltalake(str(delta_path), bulk, writer_properties=props)
    for up in upserts:
        (DeltaTable(str(delta_path)).merge(up, predicate="t.id = s.id", source_alias="s", target_alias="t",
                                           writer_properties=props)
         .when_matched_update_all().when_not_matched_insert_all().execute())
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

WRITERS: dict[str, Callable[[str, pathlib.Path], dict[str, Any]]] = {
    "floor": write_floor,
    "tidelake": write_tidelake,
    "pypaimon_native": lambda d, t: write_pypaimon(d, t, native=True),
    "pypaimon_python": lambda d, t: write_pypaimon(d, t, native=False),
    "deltalake": write_deltalake_,
    "tidelake_1thread": lambda d, t: write_tidelake_threads(d, t, 1),
    "tidelake_2threads": lambda d, t: write_tidelake_threads(d, t, 2),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["write", "read", "read-setup"])
    ap.add_argument("system")
    ap.add_argument("--data", required=True, help="workload directory (workload.py save)")
    ap.add_argument("--dir", required=True, help="scratch directory for this measurement")
    ap.add_argument("--setup", help="read-setup result JSON (read task)")
    a = ap.parse_args()
    target = pathlib.Path(a.dir)
    if a.task == "write":
        shutil.rmtree(target, ignore_errors=True)
        try:
            result = WRITERS[a.system](a.data, target)
        finally:
            shutil.rmtree(target, ignore_errors=True)
    elif a.task == "read-setup":
        shutil.rmtree(target, ignore_errors=True)
        result = read_setup(a.data, target)
    else:
        result = read_task(a.system, json.loads(pathlib.Path(a.setup).read_text()))
    print("RESULT " + json.dumps(result), flush=True)
    sys.stderr.flush()
    # Skip interpreter teardown: deltalake 1.6.6 sometimes aborts in it ("terminate called
    # without an active exception"), and nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
