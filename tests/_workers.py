"""Functions run in spawned worker processes (they must be importable by module name)."""

from __future__ import annotations

import os
import pickle
import time
from typing import Any

import pyarrow as pa

import tidelake


def start_together(ready_dir: str, name: str, go_file: str, timeout: float = 60) -> None:
    """In a worker: announce readiness (``ready_dir/ready-<name>``), then wait for ``go_file``
    (see :func:`release_when_ready`), so that every worker starts at the same moment."""
    open(os.path.join(ready_dir, f"ready-{name}"), "w").close()
    _wait_for(go_file, timeout)


def release_when_ready(ready_dir: str, workers: int, go_file: str, timeout: float = 60) -> None:
    """In the parent: wait until ``workers`` processes called :func:`start_together`, then
    create ``go_file``."""
    deadline = time.monotonic() + timeout
    while len(os.listdir(ready_dir)) < workers:  # every process has opened the table
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.01)
    open(go_file, "w").close()


def race(tmp_path: Any, worker: Any, workers: int, *args: Any) -> list[Any]:
    """Run ``worker(table_path..., worker_id, *args, go_file)`` in ``workers`` spawned processes
    released at once (their functions wait for ``go_file``); returns every result, concatenated."""
    import multiprocessing as mp

    go = str(tmp_path / "go")
    with mp.get_context("spawn").Pool(workers) as pool:
        pending = [pool.apply_async(worker, (*args[:1], w, *args[1:], go)) for w in range(workers)]
        time.sleep(2)
        open(go, "w").close()
        return [a for p in pending for a in p.get(timeout=180)]


def write_part(table_path: str, rows: list[dict], commit_user: str, storage_options: dict | None = None) -> bytes:
    """Write ``rows`` with a two-phase writer in this process; return the pickled messages."""
    t = tidelake.open_table(table_path, storage_options=storage_options)
    with t.writer(commit_user=commit_user) as w:
        w.write(pa.Table.from_pylist(rows, schema=t.schema))
        messages = w.prepare_commit()
    return pickle.dumps(messages)


def concurrent_upserts(table_path: str, worker: int, commits: int, rows_per_commit: int, go_file: str,
                       ready_dir: str, storage_options: dict | None = None) -> list[dict[str, Any]]:
    """Wait for ``go_file``, then commit ``commits`` upserts of keys only this worker owns.

    Returns one record per commit: the keys written and whether the commit landed (its
    snapshot id) or raised CommitConflictError.
    """
    t = tidelake.open_table(table_path, storage_options=storage_options)
    start_together(ready_dir, str(worker), go_file)
    out = []
    for c in range(commits):
        base = worker * 1_000_000 + c * rows_per_commit
        keys = list(range(base, base + rows_per_commit))
        data = pa.table({"k": pa.array(keys, pa.int64()),
                         "w": pa.array([worker] * len(keys), pa.int32()),
                         "c": pa.array([c] * len(keys), pa.int32())})
        user = f"worker{worker}-commit{c}"
        rec: dict[str, Any] = {"keys": keys, "worker": worker, "commit": c, "user": user, "ids": None,
                               "conflict": None}
        w = t.writer(commit_user=user)
        try:
            w.upsert(data)
            rec["ids"] = t.commit(w.prepare_commit())
            w.close()
        except tidelake.CommitConflictError as e:
            w.abort()
            rec["conflict"] = str(e)
        out.append(rec)
    return out


def postpone_writer(table_path: str, worker: int, rounds: int, go_file: str, ready_dir: str) -> list[dict[str, Any]]:
    """Wait for ``go_file``, then commit ``rounds`` upserts of the 5 keys this worker owns (in
    partition ``a`` of a postpone-bucket table), each round with new values. Returns per commit
    the keys, the value and the snapshot ids (empty when the commit raised)."""
    t = tidelake.open_table(table_path)
    start_together(ready_dir, str(worker), go_file)
    out = []
    for r in range(rounds):
        keys = [worker * 100 + i for i in range(5)]
        value = worker * 1000 + r
        rec: dict[str, Any] = {"keys": keys, "value": value, "round": (r, worker), "ids": []}
        try:
            rec["ids"] = [t.upsert(pa.table({"k": pa.array(keys, pa.int32()), "p": ["a"] * 5,
                                             "v": pa.array([value] * 5, pa.int64())}, schema=t.schema))]
        except tidelake.CommitConflictError as e:
            rec["conflict"] = str(e)
        out.append(rec)
    return out


def compactor_loop(table_path: str, go_file: str, stop_file: str, ready_dir: str,
                   storage_options: dict | None = None) -> dict[str, int]:
    """Compact the table over and over while writers commit, until ``stop_file`` appears."""
    t = tidelake.open_table(table_path, storage_options=storage_options)
    start_together(ready_dir, "compactor", go_file)
    done = {"compacted": 0, "conflicts": 0, "nothing": 0}
    while not os.path.exists(stop_file):
        try:
            sid = tidelake.open_table(table_path, storage_options=storage_options).compact(full=True)
            done["compacted" if sid is not None else "nothing"] += 1
        except tidelake.CommitConflictError:
            done["conflicts"] += 1
        time.sleep(0.005)
    del t
    return done


def race_commits(location: str, storage_options: dict, worker: int, rounds: int, barrier: Any) -> list[int | None]:
    """Each round: wait for the other racer, then commit one row with retries off. Returns the
    snapshot id won per round, None where CommitConflictError said the race was lost."""
    t = tidelake.open_table(location, storage_options=storage_options)
    out: list[int | None] = []
    for r in range(rounds):
        w = t.writer(commit_user=f"racer{worker}-{r}")
        w.write(pa.table({"k": pa.array([worker * 1000 + r], pa.int64()), "dt": ["x"], "v": pa.array([r], pa.int64())},
                         schema=t.schema))
        messages = w.prepare_commit()
        barrier.wait(timeout=60)
        try:
            ids = t.commit(messages)
            out.append(ids[-1])
            w.close()
        except tidelake.CommitConflictError:
            w.abort()
            out.append(None)
    return out


def crash_victim(args_json: str) -> None:
    """Run one operation of ``test_crash.py`` (in a process whose storage may abort it)."""
    import json

    args = json.loads(args_json)
    t = tidelake.open_table(args["location"], storage_options=args["storage_options"])
    op = args["op"]
    if op["kind"] in ("write", "delete"):
        data = pa.table({"k": pa.array(op["keys"], pa.int64()), "dt": [op["dt"]] * len(op["keys"]),
                         "v": pa.array([op["v"]] * len(op["keys"]), pa.int64())}, schema=t.schema)
        (t.upsert if op["kind"] == "write" else t.delete)(data)
    elif op["kind"] == "compact":
        t.compact(full=True)
    else:
        t.expire_snapshots(retain_min=1, retain_max=2, older_than_ms=int(time.time() * 1000) + 60_000)


def commit_pickled(path: str, pickled: bytes) -> list[int]:
    """Commit pickled commit messages in this process; returns the snapshot ids."""
    return tidelake.open_table(path).commit(pickle.loads(pickled))


def _wait_for(go_file: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(go_file):
        if time.monotonic() > deadline:
            raise TimeoutError("the go flag never appeared")
        time.sleep(0.001)


def _kv(t: tidelake.Table, pairs: dict[int, str]) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "v": v} for k, v in pairs.items()], schema=t.schema)


def slow_upsert(table_path: str, storage_options: dict, pairs: dict[int, str], one_shot: bool = True) -> Any:
    """Upsert ``pairs`` through a table opened with (fault-injecting) ``storage_options``:
    one-shot (returns the snapshot id) or two-phase (returns the ids, or the name of the
    CommitConflictError it raised)."""
    t = tidelake.open_table(table_path, storage_options=storage_options)
    if one_shot:
        return t.upsert(_kv(t, pairs))
    with t.writer() as w:
        w.upsert(_kv(t, pairs))
        messages = w.prepare_commit()
    try:
        return t.commit(messages)
    except tidelake.CommitConflictError:
        return "CommitConflictError"


def commit_rounds(table_path: str, worker: int, rounds: int, go_file: str) -> tuple[list[int], list[int]]:
    """After ``go_file`` appears, commit ``rounds`` one-row writes as commit user "shared";
    returns the keys of the commits that returned and of those that raised
    CommitConflictError."""
    t = tidelake.open_table(table_path)
    _wait_for(go_file)
    acked, conflicted = [], []
    for r in range(rounds):
        key = worker * 1000 + r
        with t.writer(commit_user="shared") as w:
            w.upsert(_kv(t, {key: f"w{worker}"}))
            messages = w.prepare_commit()
        try:
            t.commit(messages, commit_user="shared")
            acked.append(key)
        except tidelake.CommitConflictError:
            conflicted.append(key)
    return acked, conflicted


def upsert_rounds(table_path: str, worker: int, rounds: int, keys: int, go_file: str) -> list[dict[str, Any]]:
    """After ``go_file`` appears, upsert every one of ``keys`` keys with a value unique to this
    write, ``rounds`` times, through two-phase writers; returns per write its value, keys and
    APPEND snapshot id (None when it raised CommitConflictError)."""
    t = tidelake.open_table(table_path)
    _wait_for(go_file)
    out = []
    for r in range(rounds):
        value = f"w{worker}-{r}"
        with t.writer() as w:
            w.upsert(_kv(t, {k: value for k in range(keys)}))
            messages = w.prepare_commit()
        try:
            append_id = t.commit(messages)[0]
        except tidelake.CommitConflictError:
            append_id = None
        out.append({"value": value, "keys": list(range(keys)), "append_id": append_id})
    return out


def cross_partition_rounds(table_path: str, worker: int, rounds: int, keys: int, go_file: str) -> list[dict[str, Any]]:
    """After ``go_file`` appears, write ``keys`` keys of a cross-partition-upsert table (``id``,
    ``dt``, ``v``) into a partition and with a value of this write, ``rounds`` times, through
    two-phase writers: in even rounds keys no one wrote yet (every worker the same ones, each into
    its own partition), in odd rounds the same keys again (moves). Returns per write its
    partition, value, keys and APPEND snapshot id (None when it raised CommitConflictError)."""
    t = tidelake.open_table(table_path)
    _wait_for(go_file)
    out = []
    for r in range(rounds):
        value, partition = f"w{worker}-{r}", f"d{(worker + r) % 3}"
        ids = range(r // 2 * keys, (r // 2 + 1) * keys)
        data = pa.Table.from_pylist([{"id": k, "dt": partition, "v": value} for k in ids], schema=t.schema)
        with t.writer() as w:
            w.upsert(data)
            messages = w.prepare_commit()
        try:
            append_id = t.commit(messages)[0]
        except tidelake.CommitConflictError:
            append_id = None
        out.append({"value": value, "partition": partition, "keys": list(ids), "append_id": append_id})
    return out


def overwrite_and_expire(table_path: str, commits: int, go_file: str, ready_dir: str) -> int:
    """Overwrite the table ``commits`` times with one row (the table's options expire all but
    the latest snapshot after each commit); returns the number of commits."""
    t = tidelake.open_table(table_path)
    start_together(ready_dir, "writer", go_file)
    for i in range(1, commits + 1):
        t.write(pa.table({"p": [i], "v": [i]}, schema=t.schema), mode="overwrite")
    return commits


def branch_creator(table_path: str, attempts: int, go_file: str, ready_dir: str) -> tuple[list[tuple[str, int]], int]:
    """Create branches ``b<i>`` from the latest snapshot while it may be expired meanwhile.
    Returns the (name, snapshot id) of every creation that returned, and how many were refused
    because their snapshot vanished."""
    t = tidelake.open_table(table_path)
    start_together(ready_dir, "creator", go_file)
    created, refused = [], 0
    for i in range(attempts):
        latest = t.latest_snapshot()
        try:
            t.create_branch(f"b{i}", from_snapshot=latest.id)
        except tidelake.TableNotFoundError:
            refused += 1
            continue
        created.append((f"b{i}", latest.id))
    return created, refused


def create_branch_slowly(table_path: str, name: str, snapshot_id: int, go_file: str, ready_dir: str) -> str:
    """Create branch ``name`` from ``snapshot_id``, the branch's first file landing 1.5 s late;
    returns "created" or the error's class name."""
    slow = {"tidelake.fault.op": "put", "tidelake.fault.path": f"branch/branch-{name}/",
            "tidelake.fault.nth": "1", "tidelake.fault.action": "delay:1500"}
    t = tidelake.open_table(table_path, storage_options=slow)
    start_together(ready_dir, "creator", go_file)
    try:
        t.create_branch(name, from_snapshot=snapshot_id)
    except tidelake.TidelakeError as e:
        return type(e).__name__
    return "created"


def write_table_first(location: str, worker: int, go_file: str, ready_dir: str,
                      storage_options: dict | None = None) -> int:
    """Wait for ``go_file``, then ``tidelake.write_table(..., mode="append")`` 10 rows of keys
    only this worker owns, creating the table if no other worker has yet; returns the worker."""
    start_together(ready_dir, str(worker), go_file)
    keys = list(range(worker * 100, worker * 100 + 10))
    tidelake.write_table(location, pa.table({"k": pa.array(keys, pa.int64()), "w": [worker] * 10}),
                         mode="append", primary_keys=["k"], bucket=2, storage_options=storage_options)
    return worker


def iceberg_catalog_appends(warehouse: str, worker: int, rounds: int, go_file: str) -> list[int]:
    """:func:`iceberg_appends` on table ``db.t`` of the filesystem catalog at ``warehouse``
    (Iceberg metadata registered by the catalog's name)."""
    return _append_ids(tidelake.Catalog(warehouse).get_table("db.t"), worker, rounds, go_file)


def iceberg_appends(table_path: str, worker: int, rounds: int, go_file: str) -> list[int]:
    """After ``go_file`` appears, append ``rounds`` one-row writes to an append table whose
    options ask for Iceberg metadata; returns the ids whose write returned."""
    return _append_ids(tidelake.open_table(table_path), worker, rounds, go_file)


def _append_ids(t: tidelake.Table, worker: int, rounds: int, go_file: str) -> list[int]:
    _wait_for(go_file)
    acked = []
    for r in range(rounds):
        key = worker * 1000 + r
        t.write(pa.table({"id": pa.array([key], pa.int64())}))
        acked.append(key)
    return acked

