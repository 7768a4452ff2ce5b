"""Crash harness: writer, compactor and expirer processes die (SIGABRT, from the test-only fault
injection of the storage layer) at seeded random storage operations, before or right after the
operation reaches storage. After every crash:

* the table opens and every snapshot still present reads exactly the rows it committed;
* no committed row is lost (a crashed operation either committed completely or not at all);
* the next write plus ``remove_orphan_files`` leave a tidy table that still reads correctly.

A crash between two storage operations looks, to storage, like a crash before the next one, so
aborting at operation boundaries covers every state a killed process can leave behind.
Reproduce a run with ``TIDELAKE_CRASH_SEED``; the count of crashes is printed.
``TIDELAKE_CRASHES`` sets how many crash points the local run reaches (100 by default).
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import tidelake
from _s3 import Storage
from conftest import assert_same_rows

SEED = int(os.environ.get("TIDELAKE_CRASH_SEED", "20261122"))
# CI-sized; benches/crash_campaign.py runs the same harness with TIDELAKE_CRASHES=1000.
CRASHES = {"local": int(os.environ.get("TIDELAKE_CRASHES", "100")), "s3": 6}
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])
OPTIONS = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4", "snapshot.time-retained": "1 ms",
           "num-sorted-run.compaction-trigger": "3", "commit.max-retries": "3"}
# Crash points are drawn from the first N operations of their kind (a victim does ~20-45
# storage operations, a few puts, deletes only when it expires or cleans up).
NTH_RANGE = {"any": 45, "put": 12, "delete": 8}
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def as_table(model: dict) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "dt": dt, "v": v} for (k, dt), v in sorted(model.items())], schema=SCHEMA)


def apply(model: dict, op: dict) -> dict:
    """The table state after ``op`` commits."""
    out = dict(model)
    if op["kind"] in ("write", "delete"):
        for k in op["keys"]:
            if op["kind"] == "write":
                out[(k, op["dt"])] = op["v"]
            else:
                out.pop((k, op["dt"]), None)
    return out


def random_op(rng: random.Random, step: int) -> dict:
    kind = rng.choices(["write", "delete", "compact", "expire"], weights=[5, 1, 2, 2])[0]
    lo = rng.randrange(0, 200)
    return {"kind": kind, "dt": rng.choice(["a", "b", "c"]), "v": step, "keys": list(range(lo, lo + rng.randrange(1, 40)))}


def run_victim(location: str, options: dict | None, op: dict, fault: dict) -> int:
    """Run ``op`` in a new process whose storage aborts per ``fault``; its exit code."""
    storage_options = dict(options or {}) | {f"tidelake.fault.{k}": str(v) for k, v in fault.items()}
    args = json.dumps({"location": location, "storage_options": storage_options, "op": op})
    code = f"import sys; sys.path.insert(0, {TESTS_DIR!r}); import _workers; _workers.crash_victim(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, args], capture_output=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    assert proc.returncode in (0, -signal.SIGABRT), proc.stderr.decode()[-2000:]
    return proc.returncode


def check_snapshots(t: tidelake.Table, states: dict[int, dict]) -> None:
    for s in t.snapshots():
        assert s.id in states, f"snapshot {s.id} ({s.commit_kind}) is not a state anybody committed"
        assert_same_rows(t.to_arrow(snapshot_id=s.id), as_table(states[s.id]))


def test_crash_points(storage: Storage, capsys):
    rng = random.Random(f"{SEED}-{storage.kind}")
    location = storage.location("t")
    t = tidelake.create_table(location, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], bucket=2,
                              options=OPTIONS, storage_options=storage.options)
    model: dict = {}
    states: dict[int, dict] = {}
    crashes = completed = orphans = committed_by_victims = 0
    step = 0
    while crashes < CRASHES[storage.kind]:
        step += 1
        assert step < 4 * CRASHES[storage.kind], "too few operations hit their crash point"
        op = random_op(rng, step)
        kind = rng.choice(["any", "any", "put", "delete"])
        fault = {"action": "abort", "op": kind, "nth": rng.randrange(1, NTH_RANGE[kind]),
                 "when": rng.choice(["before", "after"])}
        before = t.latest_snapshot()
        code = run_victim(location, storage.options, op, fault)
        crashes += code != 0
        completed += code == 0

        t = tidelake.open_table(location, storage_options=storage.options)
        after = apply(model, op)
        latest = t.latest_snapshot()
        new = [s for s in t.snapshots() if before is None or s.id > before.id]
        if latest is not None and (before is None or latest.id > before.id):
            for s in new:  # a crashed op commits completely (APPEND, then maybe COMPACT) or not at all
                states[s.id] = after
            model = after
            committed_by_victims += 1
        elif code == 0:
            assert op["kind"] in ("compact", "expire") or after == model, f"completed {op} committed nothing"
        check_snapshots(t, states)
        assert_same_rows(t.to_arrow(), as_table(model))

        # recovery: the next write, then orphan cleanup, leave a tidy table
        if step % 5 == 0 or code != 0:
            rec = {"kind": "write", "dt": "a", "v": -step, "keys": [1000 + step]}
            t.upsert(pa.table({"k": pa.array(rec["keys"], pa.int64()), "dt": ["a"], "v": pa.array([-step])},
                              schema=SCHEMA))
            model = apply(model, rec)
            for s in t.snapshots():
                states.setdefault(s.id, model)
            removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 3_600_000)
            orphans += len(removed)
            assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 3_600_000, dry_run=True) == []
            check_snapshots(t, states)
            assert_same_rows(t.to_arrow(), as_table(model))
    with capsys.disabled():  # the count belongs in every CI log, not only in failures
        print(f"\n{storage.kind}: {crashes} crash points (seed {SEED}), {completed} operations ran to completion, "
              f"{committed_by_victims} crashed-or-not operations committed, {orphans} orphan files cleaned")


def test_injected_storage_errors_are_typed_and_leave_a_consistent_table(tmp_path):
    """Every put of an upsert failing in turn (before it lands, or after it landed with the
    response lost): a typed StorageError with nothing committed, or success with everything
    committed (a lost response to the snapshot put is recognised as the commit's own)."""
    location = str(tmp_path / "t")
    t = tidelake.create_table(location, SCHEMA, primary_keys=["k", "dt"], bucket=1, options={"write-only": "true"})
    model = {(k, "a"): 0 for k in range(10)}
    t.write(as_table(model))
    outcomes = {"error": 0, "landed": 0}
    for when in ("before", "after"):
        for nth in range(1, 12):
            faulty = tidelake.open_table(location, storage_options={
                "tidelake.fault.op": "put", "tidelake.fault.nth": str(nth), "tidelake.fault.when": when})
            change = {(k, "a"): nth for k in range(nth, nth + 3)}
            try:
                faulty.upsert(as_table(change))
                landed = True
            except tidelake.StorageError as e:
                assert "injected fault on put" in str(e)
                landed = False
            if landed:
                model |= change
            outcomes["landed" if landed else "error"] += 1
            # an error means nothing was committed; success means all of it was
            assert_same_rows(tidelake.open_table(location).to_arrow(), as_table(model))
    # puts of the data file, manifest and lists fail the write; a failed snapshot put is retried
    # (and recognised as its own when it had landed), a failed LATEST hint is ignored
    assert outcomes["error"] >= 6 and outcomes["landed"] >= 6, outcomes

    # reads: every GET failing in turn is a StorageError or a complete, correct result
    errors = 0
    for nth in range(1, 10):
        try:
            faulty = tidelake.open_table(location, storage_options={"tidelake.fault.op": "get",
                                                                    "tidelake.fault.nth": str(nth)})
            assert_same_rows(faulty.to_arrow(), as_table(model))
        except tidelake.StorageError as e:
            assert "injected fault on get" in str(e)
            errors += 1
    assert errors >= 5
