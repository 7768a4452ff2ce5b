"""Commit-safety soak: writers, a compactor, an expirer, an orphan cleaner and readers run at
once, as separate OS processes, on four primary-key tables (fixed bucket, dynamic bucket,
deletion vectors, cross-partition upserts); every acknowledged write is then checked against what every read saw.

Run by ``test_soak.py`` (bounded), or by hand for as long as you like::

    python tests/soak.py --seconds 120            # one round
    python tests/soak.py --long --minutes 180     # rounds of --round-minutes on the same tables
    python tests/soak.py --s3 --seconds 60        # on a moto S3 server started for the run

Every process opens every table and, until the deadline, picks one at random per step:

* writers upsert or delete 1-4 keys out of a small key space (``keys``, 200) with a value
  unique to the write (round, writer, counter), half the time with one-shot ``upsert``/``delete``,
  half with a long-lived ``t.writer()`` plus ``t.commit`` (even writers pass increasing commit
  identifiers, odd ones commit in batch mode); a writer whose commit failed is aborted and
  replaced. Through test-only fault injection, one ``t.commit`` in five is *ambiguous*: its
  first or second snapshot put lands but reports an error (if that error reaches the caller,
  the same messages are committed again, which must be recognised as landed), and one in
  ten is *slow*: 1.5 s pass between reading the latest snapshot and creating the next, so
  that expiry removes snapshots under it. The last writer also runs at the lowest CPU
  priority. Each write is logged before it is invoked and after it returned: keys, value, the
  latest snapshot before the call, monotonic (system-wide) clock at invocation and return, the
  ids returned, the outcome (acknowledged, ``CommitConflictError``, other error), and, read
  right after it returned, those snapshots (down to its APPEND) and the latest snapshot;
* the compactor alternates ``compact()`` and ``compact(full=True)``; the expirer runs
  ``expire_snapshots(retain_min=2, retain_max=3)``; the orphan cleaner runs
  ``remove_orphan_files`` for files older than ``orphan_age_ms`` (10 s);
* readers read the latest snapshot through ``t.scan()`` (which names the snapshot it read),
  or, one time in four, a retained snapshot picked at random, and log (snapshot id, rows).

The rule every read is checked against
--------------------------------------
A write W that returned (acknowledged) is placed at its APPEND snapshot ``a(W)``:

* ``t.commit`` returns every snapshot it created: ``a`` is the first (its APPEND; the others
  are the COMPACTs of the writer's compaction results); a re-sent ambiguous commit that returns
  no id is placed in ``(latest before the call, latest after it]``;
* one-shot ``upsert``/``delete`` return the last snapshot ``r`` only: ``a = r`` if snapshot
  ``r``, read right after the call, is an APPEND, else the newest APPEND before ``r`` by the
  commit user of ``r`` (a one-shot write commits its APPEND and COMPACT under one user).
  When that snapshot was already expired, ``a`` is only known to lie in
  ``(latest before the call, r]`` (counted as "placed in a range"); such a write can neither
  be shown stale nor hide another write whose place overlaps its range.

W is *certainly visible* from ``v(W)``: ``a`` on tables whose level 0 is read; on
deletion-vector tables (level 0 is not read) the latest snapshot read right after it returned
(a write returns only once its rows are visible). Not the COMPACT it returned: that may cover
only some of the write's buckets when a concurrent compaction had already moved the others'
level-0 files up (the writer's own compaction of those found nothing left to do). W is
*possibly visible* from the lowest snapshot it may have landed at.

At snapshot ``s`` the value of key ``k`` must be the value (or absence, for a delete) of one
write W touching ``k`` that is possibly visible at ``s``, such that no write touching ``k``
that is certainly visible at ``s`` landed after it. With exact placements on tables that read
level 0 this is exactly the replay of acknowledged writes in snapshot order: the value of the
write with the highest ``a <= s``. A round starts from the replayed state of the previous round,
at snapshot ``base``; reads before ``base`` are not taken.

Writes that raised ``CommitConflictError`` must not be visible at any snapshot. Writes that
raised anything else, or never returned (a crashed process), may or may not have landed: their
value is allowed from the snapshot after the latest before the call on, they never hide
another write, and they are reported as unexpected errors.

Further invariants: acknowledged writes that did not overlap in time (A returned before B was
invoked) land in that order (``a(A) < a(B)``); every write lands above the latest snapshot it
saw before the call; no two acknowledged writes share an APPEND snapshot; a snapshot id names
one snapshot for the table's life (every read of snapshot N shows the same commit user, kind,
identifier and time); the latest snapshot one process sees never goes backwards; retained ids
are contiguous and every retained snapshot reads correctly; no read has a key twice; a full
compaction after the round, and removing every orphan file, change no read. Maintenance and
reads may only fail with ``CommitConflictError`` (compaction) or an error saying the snapshot
expired (reads).
"""

from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pyarrow as pa

import tidelake

from _workers import release_when_ready, start_together

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
CROSS_PARTITION = "cross_partition"
TABLES: dict[str, tuple[int, dict[str, str]]] = {
    "fixed": (2, {}),
    "dynamic": (-1, {"dynamic-bucket.target-row-num": "60"}),
    "dv": (2, {"deletion-vectors.enabled": "true"}),
    # cross-partition upserts: partition column ``p`` not in the key, each write puts its keys in
    # a partition of its own choosing, so keys keep moving (a key twice is a duplicate-key read)
    CROSS_PARTITION: (-1, {"dynamic-bucket.target-row-num": "60"}),
}
LAST_READ = "last read (after a full compaction and removing every orphan)"
NEVER = 1 << 62
"""Placement bound of a write whose outcome is unknown: it is never certainly visible."""


@dataclass(frozen=True)
class Config:
    """One soak round. ``locations`` maps a table kind (of :data:`TABLES`) to its location;
    ``base`` to the snapshot the round starts from; ``run_dir`` is a local directory for the
    processes' logs and start flags."""

    locations: dict[str, str]
    storage_options: dict[str, str] | None
    run_dir: str
    seconds: float
    seed: int = 20261125
    round: int = 0
    base: dict[str, int] = field(default_factory=dict)
    writers: int = 4
    readers: int = 2
    keys: int = 200
    orphan_age_ms: int = 10_000
    retain_min: int = 2
    retain_max: int = 3


# ---- the processes ------------------------------------------------------------------------------


class _Log:
    """One JSON line per record, flushed at once (a crashed process keeps what it logged)."""

    def __init__(self, cfg: Config, name: str) -> None:
        self._f = open(os.path.join(cfg.run_dir, f"log-{name}.jsonl"), "w", buffering=1)

    def __call__(self, **record: Any) -> None:
        self._f.write(json.dumps(record) + "\n")


def _steps(cfg: Config, name: str) -> Iterator[dict[str, tidelake.Table]]:
    """Open every table, start with the other processes, then yield the tables until the deadline."""
    tables = {kind: tidelake.open_table(loc, storage_options=cfg.storage_options)
              for kind, loc in cfg.locations.items()}
    start_together(os.path.join(cfg.run_dir, "ready"), name, os.path.join(cfg.run_dir, "go"), timeout=300)
    deadline = time.monotonic() + cfg.seconds
    while time.monotonic() < deadline:
        yield tables


def _latest(t: tidelake.Table) -> int | None:
    try:
        s = t.latest_snapshot()
    except tidelake.TidelakeError:
        return None
    return 0 if s is None else s.id


def _observe(t: tidelake.Table, ids: list[int], before: int | None) -> list[list[Any]]:
    """Right after a write returned ``ids``: those snapshots, and the ones below down to the
    write's APPEND (the newest APPEND by the commit user of the last id), as [id, kind, user,
    identifier, time]; expired ones are left out."""
    out: list[list[Any]] = []
    if not ids:
        return out
    user = None
    for sid in range(ids[-1], (before or 0), -1):
        try:
            s = t.snapshot(sid)
        except tidelake.TableNotFoundError:
            break  # expired
        user = user or s.commit_user
        out.append([s.id, s.commit_kind, s.commit_user, s.commit_identifier, s.time_millis])
        if sid <= ids[0] and s.commit_kind == "APPEND" and s.commit_user == user:
            break
    return out


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _faults(mode: str, rng: random.Random) -> dict[str, str]:
    """Test-only fault injection (storage options) for a commit of ``mode``: ``ambiguous``, the
    first or second snapshot put lands but reports an error; ``slow``, the commit's first
    manifest put takes 1.5 s (after it read the latest snapshot, before it creates the next)."""
    if mode == "ambiguous":
        return {"tidelake.fault.op": "put", "tidelake.fault.path": "snapshot/snapshot-", "tidelake.fault.when": "after",
                "tidelake.fault.action": "error", "tidelake.fault.nth": str(rng.randint(1, 2))}
    if mode == "slow":
        return {"tidelake.fault.op": "put", "tidelake.fault.path": "manifest/", "tidelake.fault.action": "delay:1500",
                "tidelake.fault.nth": "1"}
    return {}


def _commit(cfg: Config, t: tidelake.Table, kind: str, messages: list, ident: int | None, faults: dict[str, str],
            rec: dict[str, Any]) -> list[int]:
    """``t.commit``, through a handle with ``faults`` if any; when an injected error reaches the
    caller, the same messages are committed again, as a user would."""
    if not faults:
        return t.commit(messages, commit_identifier=ident)
    faulty = tidelake.open_table(cfg.locations[kind], storage_options={**(cfg.storage_options or {}), **faults})
    try:
        return faulty.commit(messages, commit_identifier=ident)
    except tidelake.StorageError as e:
        if "injected fault" not in str(e):
            raise
        rec["first_error"] = _error(e)
        return t.commit(messages, commit_identifier=ident)


def writer_process(cfg: Config, wid: int) -> None:
    name = f"writer{wid}"
    rng = random.Random(f"{cfg.seed}-{cfg.round}-{name}")
    if wid == cfg.writers - 1 and cfg.writers > 2:
        os.nice(19)  # a slow committer on a busy machine: its commits race expiry for longer
    log = _Log(cfg, name)
    long_lived: dict[str, tidelake.TableWriter] = {}
    identifiers: Counter[str] = Counter()
    n = 0
    for tables in _steps(cfg, name):
        kind = rng.choice(sorted(tables))
        t = tables[kind]
        n += 1
        op = "delete" if rng.random() < 0.2 else "upsert"
        mode = rng.choices(["oneshot", "writer", "ambiguous", "slow"], [10, 7, 2, 1])[0]
        keys = rng.sample(range(cfg.keys), rng.randint(1, 4))
        value = (cfg.round * 100 + wid + 1) * 10**9 + n
        data = pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.int64())})
        if kind == CROSS_PARTITION:  # a delete naming another partition deletes the key too
            data = data.append_column("p", pa.array([f"p{n % 3}"] * len(keys)))
        rec: dict[str, Any] = {"table": kind, "who": f"{name}#{n}", "op": op, "mode": mode, "keys": keys,
                               "value": value if op == "upsert" else None, "latest_before": _latest(t)}
        log(phase="invoke", **rec)
        rec["t0"] = time.monotonic_ns()
        try:
            if mode == "oneshot":
                r = getattr(t, op)(data)
                rec["ids"] = [] if r is None else [r]
            else:
                w = long_lived.get(kind)
                if w is None:
                    w = long_lived[kind] = t.writer(commit_user=f"soak-r{cfg.round}-{name}-{kind}")
                getattr(w, op)(data)
                messages = w.prepare_commit()
                ident = None
                if wid % 2 == 0:
                    identifiers[kind] += 1
                    ident = identifiers[kind]
                rec["ids"] = _commit(cfg, t, kind, messages, ident, _faults(mode, rng), rec)
            rec["outcome"] = "ack"
        except tidelake.CommitConflictError as e:
            rec.update(outcome="conflict", error=str(e))
        except tidelake.TidelakeError as e:
            rec.update(outcome="error", error=_error(e))
        rec["t1"] = time.monotonic_ns()
        if rec["outcome"] != "ack" and kind in long_lived:
            try:
                long_lived.pop(kind).abort()
            except tidelake.TidelakeError as e:
                rec["abort_error"] = _error(e)
        rec["snapshots"] = _observe(t, rec.get("ids", []), rec["latest_before"])
        rec["latest_after"] = _latest(t)
        log(phase="done", **rec)
    for w in long_lived.values():
        w.close()


def reader_process(cfg: Config, rid: int) -> None:
    name = f"reader{rid}"
    rng = random.Random(f"{cfg.seed}-{cfg.round}-{name}")
    log = _Log(cfg, name)
    for tables in _steps(cfg, name):
        kind = rng.choice(sorted(tables))
        t = tables[kind]
        rec: dict[str, Any] = {"table": kind, "travel": rng.random() < 0.25}
        try:
            if rec["travel"]:
                ids = [s.id for s in t.snapshots() if s.id >= cfg.base.get(kind, 0)]
                if not ids:
                    continue
                rec["sid"] = rng.choice(ids)
                rows = t.to_arrow(snapshot_id=rec["sid"])
            else:
                scan = t.scan()
                rec["sid"] = scan.snapshot_id
                rows = scan.to_arrow()
            rec["k"] = rows.column("k").to_pylist()
            rec["v"] = rows.column("v").to_pylist()
        except tidelake.TidelakeError as e:
            rec["error"] = _error(e)
        log(**rec)


def _maintenance(cfg: Config, name: str, pause: float, action: Callable[[tidelake.Table, int], dict[str, Any]]) -> None:
    """Run ``action(table, step)`` on the tables in turn, logging what it returned or raised."""
    log = _Log(cfg, name)
    step = 0
    for tables in _steps(cfg, name):
        kind = sorted(tables)[step % len(tables)]
        rec: dict[str, Any] = {"table": kind}
        try:
            rec.update(action(tables[kind], step))
        except tidelake.CommitConflictError as e:
            rec.update(outcome="conflict", error=str(e))
        except tidelake.TidelakeError as e:
            rec.update(outcome="error", error=_error(e))
        log(**rec)
        step += 1
        time.sleep(pause)


def compactor_process(cfg: Config) -> None:
    def compact(t: tidelake.Table, step: int) -> dict[str, Any]:
        full = (step // len(cfg.locations)) % 2 == 1
        sid = t.compact(full=full)
        return {"outcome": "nothing" if sid is None else "compacted", "full": full, "sid": sid}

    _maintenance(cfg, "compactor", 0.05, compact)


def expirer_process(cfg: Config) -> None:
    def expire(t: tidelake.Table, step: int) -> dict[str, Any]:
        done = t.expire_snapshots(retain_min=cfg.retain_min, retain_max=cfg.retain_max)
        return {"outcome": "expired", "snapshots": done["snapshots"], "data_files": done["data_files"]}

    _maintenance(cfg, "expirer", 0.1, expire)


def orphan_process(cfg: Config) -> None:
    def clean(t: tidelake.Table, step: int) -> dict[str, Any]:
        removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) - cfg.orphan_age_ms)
        return {"outcome": "cleaned", "removed": [p for p, _ in removed]}

    _maintenance(cfg, "orphans", 0.5, clean)


# ---- running a round ----------------------------------------------------------------------------


def create_tables(root: str, storage_options: dict[str, str] | None) -> dict[str, str]:
    """The soak's tables under ``root``; their locations by kind."""
    locations = {}
    for kind, (bucket, options) in TABLES.items():
        cross = kind == CROSS_PARTITION
        schema = SCHEMA.append(pa.field("p", pa.string(), nullable=False)) if cross else SCHEMA
        t = tidelake.create_table(f"{root}/{kind}", schema, primary_keys=["k"], bucket=bucket, options=options,
                                  partition_keys=["p"] if cross else None, storage_options=storage_options)
        locations[kind] = t.path
    return locations


def _spawn(cfg: Config) -> dict[str, int | None]:
    """Run every process of the round; their exit codes by name (None: killed after hanging)."""
    os.makedirs(os.path.join(cfg.run_dir, "ready"))
    ctx = mp.get_context("spawn")
    roles: list[tuple[str, Callable[..., None], tuple]] = (
        [(f"writer{i}", writer_process, (cfg, i)) for i in range(cfg.writers)]
        + [(f"reader{i}", reader_process, (cfg, i)) for i in range(cfg.readers)]
        + [("compactor", compactor_process, (cfg,)), ("expirer", expirer_process, (cfg,)),
           ("orphans", orphan_process, (cfg,))])
    procs = {name: ctx.Process(target=target, args=args, name=name) for name, target, args in roles}
    codes: dict[str, int | None] = {}
    try:
        for p in procs.values():
            p.start()
        release_when_ready(os.path.join(cfg.run_dir, "ready"), len(procs), os.path.join(cfg.run_dir, "go"),
                           timeout=300)
        deadline = time.monotonic() + cfg.seconds + 300  # the last step of each may take a while
        for name, p in procs.items():
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            codes[name] = p.exitcode
    finally:
        for p in procs.values():
            if p.is_alive():
                p.kill()
                p.join()
    return codes


def _read_logs(run_dir: str) -> dict[str, list[dict[str, Any]]]:
    logs = {}
    for f in sorted(os.listdir(run_dir)):
        if f.startswith("log-"):
            with open(os.path.join(run_dir, f)) as lines:
                logs[f[len("log-"):-len(".jsonl")]] = [json.loads(line) for line in lines if line.endswith("\n")]
    return logs


def run_round(cfg: Config, model: dict[str, dict[int, int | None]]) -> "Report":
    """Run one round on tables holding ``model`` (kind -> key -> value) at ``cfg.base``;
    check it, and return the report (``report.model``: the state the round ended with)."""
    started = time.monotonic()
    codes = _spawn(cfg)
    report = Report(cfg)
    for name, code in codes.items():
        if code != 0:
            report.violation("process-exit", "-", f"{name} exited with {code}" if code is not None else f"{name} hung")
    logs = _read_logs(cfg.run_dir)
    for kind in cfg.locations:
        TableCheck(cfg, kind, model[kind], logs, report).run()
    report.count("seconds", round(time.monotonic() - started))
    return report


# ---- checking -----------------------------------------------------------------------------------


class Report:
    """Counts and violations of one round; a violation is (category, table, detail), repeats of
    one detail (several readers seeing the same wrong row) counted once."""

    EXAMPLES = 5

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.counts: Counter[str] = Counter()
        self.violations: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.model: dict[str, dict[int, int | None]] = {}
        self.latest: dict[str, int] = {}

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def violation(self, category: str, table: str, detail: str) -> None:
        self.violations[(category, table)][detail] += 1

    @property
    def ok(self) -> bool:
        return not self.violations

    def describe(self) -> str:
        lines = [f"round {self.cfg.round} ({self.cfg.seconds:g} s, seed {self.cfg.seed}): "
                 + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))]
        for (category, table), details in sorted(self.violations.items()):
            lines.append(f"  {category} [{table}]: {len(details)} ({sum(details.values())} times)")
            lines += [f"    {d}" for d in list(details)[:self.EXAMPLES]]
        return "\n".join(lines)


def _fmt(v: int | None) -> str:
    return "absent" if v is None else str(v)


@dataclass
class Write:
    """One write as the checks see it: placed at an APPEND snapshot in ``[lo, hi]``, certainly
    visible from ``visible`` (:data:`NEVER`: outcome unknown)."""

    value: int | None
    keys: list[int]
    lo: int
    hi: int
    visible: int
    t0: int = 0
    t1: int = 0
    who: str = "the initial state"


class History:
    """What the writers of one table logged, placed as the module docstring says, and the
    checks of reads against it. ``model``: the state at snapshot ``base`` (key -> value)."""

    def __init__(self, kind: str, report: Report, model: dict[int, int | None], base: int,
                 level0_hidden: bool) -> None:
        self.kind, self.report, self.base, self.level0_hidden = kind, report, base, level0_hidden
        self.writes: list[Write] = []  # acknowledged, or of unknown outcome
        self.by_key: dict[int, list[Write]] = {k: [Write(v, [k], 0, 0, 0)] for k, v in model.items()}
        self.by_value: dict[int, Write] = {ws[0].value: ws[0] for ws in self.by_key.values() if ws[0].value is not None}
        self.conflicted: dict[int, str] = {}  # value -> the write that raised CommitConflictError
        self.identities: dict[int, set[tuple]] = defaultdict(set)  # snapshot id -> (kind, user, ...) listed
        self.acked_at: dict[int, str] = {}  # APPEND snapshot -> the write acknowledged there
        self.hidden: dict[str, set[str]] = defaultdict(set)  # when -> acknowledged writes a read did not show
        self.verified: set[tuple[int, int]] = set()
        self._los: dict[int, list[int]] | None = None

    def violation(self, category: str, detail: str) -> None:
        self.report.violation(category, self.kind, detail)

    # -- building --

    def add_writer_log(self, recs: list[dict]) -> None:
        """One writer process's records (``invoke`` before each call, ``done`` after it)."""
        done = {r["who"] for r in recs if r["phase"] == "done"}
        seen_latest = 0
        for r in recs:
            if r["phase"] == "invoke":
                if r["who"] not in done:  # never returned: outcome unknown
                    self.add_unknown(r, "never returned")
                continue
            listed = r["snapshots"]
            for latest in (r["latest_before"], r["latest_after"]):
                if latest is not None:
                    if latest < seen_latest:
                        self.violation("latest-backwards", f"{r['who']} saw latest {latest} after {seen_latest}")
                    seen_latest = max(seen_latest, latest)
            for s in listed:
                self.identities[s[0]].add(tuple(s[1:]))
            self.add_logged(r, {s[0]: s for s in listed})

    def add_unknown(self, r: dict, why: str) -> None:
        self.violation("unexpected-error", f"{r['who']} {r['mode']} {r['op']}: {why}")
        lo = (r["latest_before"] or self.base) + 1
        self.add(Write(r["value"], r["keys"], lo, NEVER, NEVER, r.get("t0", 0), r.get("t1", 0), r["who"]))

    def add_logged(self, r: dict, listed: dict[int, list]) -> None:
        outcome = r["outcome"]
        self.report.count(f"{outcome} {r['mode']}")
        if outcome == "conflict":
            if r["value"] is not None:
                self.conflicted[r["value"]] = r["who"]
            return
        if outcome != "ack":
            self.add_unknown(r, r["error"])
            return
        ids, before = r["ids"], r["latest_before"] or self.base
        if "first_error" in r:
            self.report.count("ambiguous commits re-sent")
        if not ids:
            if "first_error" not in r:
                self.violation("ack-without-snapshot", f"{r['who']} returned no snapshot id")
                self.add_unknown(r, "acknowledged without a snapshot id")
                return
            # a re-sent commit recognised as landed: somewhere after the latest seen before
            ids = [r["latest_after"] or NEVER]
            lo, hi = before + 1, ids[0]
            self.report.count("placed in a range")
        elif r["mode"] != "oneshot":
            lo = hi = ids[0]
            if ids[0] in listed and listed[ids[0]][1] != "APPEND":
                self.violation("not-append", f"{r['who']}: first id {ids[0]} is a {listed[ids[0]][1]}")
        else:
            lo = hi = ids[0]
            r_kind, user = (listed[ids[0]][1], listed[ids[0]][2]) if ids[0] in listed else (None, None)
            compacted = r_kind == "COMPACT"
            if r_kind != "APPEND":
                own = [i for i, s in listed.items() if i < ids[0] and s[1] == "APPEND" and s[2] == user]
                if compacted and own:
                    lo = hi = max(own)
                else:  # the APPEND has expired already: somewhere after the latest seen before
                    lo, hi = before + 1, ids[0] - (1 if compacted else 0)
                    self.report.count("placed in a range")
        newest = max(r["latest_after"] or 0, ids[-1])
        if hi <= before:
            self.violation("landed-below-latest", f"{r['who']} acknowledged at {hi}, latest before the call was {before}")
        visible = newest if self.level0_hidden else hi
        self.add(Write(r["value"], r["keys"], lo, hi, visible, r["t0"], r["t1"], r["who"]))
        if lo == hi:
            if lo in self.acked_at:
                self.violation("duplicate-ack-snapshot", f"{r['who']} and {self.acked_at[lo]} both acknowledged at {lo}")
            self.acked_at[lo] = r["who"]

    def add(self, w: Write) -> None:
        self.writes.append(w)
        if w.value is not None:
            self.by_value[w.value] = w
        for k in w.keys:
            self.by_key.setdefault(k, [Write(None, [k], 0, 0, 0)]).append(w)
        self._los = None

    # -- checks --

    def check_order(self) -> None:
        """Acknowledged writes that did not overlap in time land in the order they ran; a
        snapshot id is one snapshot for the table's life."""
        acked = [w for w in self.writes if w.visible != NEVER]
        by_return = sorted(acked, key=lambda w: w.t1)
        returns = [w.t1 for w in by_return]
        highest: list[Write] = []  # highest[i]: the write placed highest among by_return[:i+1]
        for w in by_return:
            highest.append(w if not highest or w.lo > highest[-1].lo else highest[-1])
        for b in acked:
            i = bisect.bisect_left(returns, b.t0)
            if i and b.hi <= highest[i - 1].lo:
                a = highest[i - 1]
                self.violation("order", f"{a.who} returned (landed at {a.lo}) before {b.who} was invoked, "
                                        f"which landed at {b.lo}..{b.hi}")
        self.report.count("acks", len(acked))
        for sid, identities in self.identities.items():
            if len(identities) > 1:
                self.violation("snapshot-id-reused", f"snapshot {sid} listed as {sorted(identities)}")

    def winners(self, k: int, s: int) -> list[Write]:
        """The writes whose value key ``k`` may show at snapshot ``s``, by placement."""
        if k not in self.by_key:
            return [Write(None, [k], 0, 0, 0)]
        if self._los is None:
            for ws in self.by_key.values():
                ws.sort(key=lambda w: w.lo)
            self._los = {key: [w.lo for w in ws] for key, ws in self.by_key.items()}
        candidates = self.by_key[k][:bisect.bisect_right(self._los[k], s)]
        floor = max(w.lo for w in candidates if w.visible <= s)
        return [w for w in candidates if w.hi >= floor]

    def allowed(self, k: int, s: int) -> set[int | None]:
        """The values key ``k`` may have at snapshot ``s`` (None: absent)."""
        return {w.value for w in self.winners(k, s)}

    def check_read(self, s: int, keys: list[int], values: list[int | None], source: str) -> bool:
        """Check one read of snapshot ``s`` (``source`` names it: "read", "final read", ...);
        False (and violations) if it is wrong."""
        got = dict(zip(keys, values))
        if len(got) != len(keys):
            dup = [k for k, n in Counter(keys).items() if n > 1]
            self.violation("duplicate-key", f"{source} of snapshot {s}: keys {dup[:5]} more than once")
            return False
        if s < self.base:
            return True
        fingerprint = (s, hash(tuple(sorted(got.items()))))
        if fingerprint in self.verified:
            return True
        ok = True
        for k in self.by_key.keys() | got.keys():
            deciding, g = self.winners(k, s), got.get(k)
            if g in {w.value for w in deciding}:
                continue
            ok = False
            writer = self.by_value.get(g) if g is not None else None
            if g is None:
                category = "lost"
            elif g in self.conflicted:
                category, writer = "conflict-visible", Write(g, [k], 0, 0, 0, who=self.conflicted[g])
            elif writer is None:
                category = "phantom"
            elif writer.lo > s:
                category = "early"
            else:
                category = "stale"
            if category in ("lost", "stale"):
                self.hidden["lost for good" if source == LAST_READ else "not visible at some read"].update(
                    w.who for w in deciding if w.visible != 0)
            want = " or ".join(f"{_fmt(w.value)} ({w.who}, at {w.lo}..{w.hi})" for w in deciding[-2:])
            by = f" ({writer.who}, at {writer.lo}..{writer.hi})" if writer else ""
            self.violation(category, f"{source} of snapshot {s}, key {k}: {_fmt(g)}{by}; expected {want}")
        if ok:
            self.verified.add(fingerprint)
        return ok

    def summarize(self) -> None:
        """Count the acknowledged writes some read did not show, and those lost for good."""
        for when, whos in self.hidden.items():
            self.report.count(f"acked writes {when} {self.kind}", len(whos))


class TableCheck:
    """Every check of one table's round, from every process's log and the table itself."""

    def __init__(self, cfg: Config, kind: str, model: dict[int, int | None], logs: dict[str, list[dict]],
                 report: Report) -> None:
        self.cfg, self.kind, self.report = cfg, kind, report
        self.table = tidelake.open_table(cfg.locations[kind], storage_options=cfg.storage_options)
        self.logs = {who: [r for r in recs if r.get("table") == kind] for who, recs in logs.items()}
        self.history = History(kind, report, model, cfg.base.get(kind, 0),
                               self.table.options.get("deletion-vectors.enabled") == "true")

    def violation(self, category: str, detail: str) -> None:
        self.report.violation(category, self.kind, detail)

    def run(self) -> None:
        for who, recs in self.logs.items():
            if who.startswith("writer"):
                self.history.add_writer_log(recs)
        self.history.check_order()
        self.check_reads()
        self.check_maintenance()
        self.check_final()
        self.history.summarize()

    def check_reads(self) -> None:
        for who, recs in self.logs.items():
            if not who.startswith("reader"):
                continue
            seen_latest = 0
            for r in recs:
                if "error" in r:
                    # the snapshot expired before (typed "not found" naming what is there) or
                    # while it was read (an error saying so); anything else is a violation
                    if "expir" in r["error"] or r["error"].startswith("TableNotFoundError: snapshot not found"):
                        self.report.count("reads of an expired snapshot")
                    else:
                        self.violation("read-error", f"{'travel' if r['travel'] else 'latest'} read: {r['error']}")
                    continue
                if r["sid"] is None:
                    continue
                if not r["travel"]:
                    if r["sid"] < seen_latest:
                        self.violation("latest-backwards", f"{who} read latest {r['sid']} after {seen_latest}")
                    seen_latest = max(seen_latest, r["sid"])
                self.history.check_read(r["sid"], r["k"], r["v"], "read")
                self.report.count("reads verified")

    def check_maintenance(self) -> None:
        for who in ("compactor", "expirer", "orphans"):
            for r in self.logs.get(who, []):
                self.report.count(f"{who} {r['outcome']}")
                if r["outcome"] == "error":
                    self.violation("unexpected-error", f"{who}: {r['error']}")
                if who == "expirer":
                    self.report.count("snapshots expired", r.get("snapshots", 0))
                self.report.count("orphan files removed", len(r.get("removed", [])))

    def check_final(self) -> None:
        """Retained ids contiguous, each retained snapshot readable and right; then a full
        compaction and removing every orphan must change no read. Sets the round's final model."""
        t = self.table
        ids = [s.id for s in t.snapshots()]
        if ids and ids != list(range(ids[0], ids[0] + len(ids))):
            self.violation("ids-not-contiguous", f"retained snapshots {ids}")
        for sid in ids:
            self.read_snapshot(sid, "final read")
        if not ids:
            return
        try:
            t.compact(full=True)
            t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
        except tidelake.TidelakeError as e:
            self.violation("unexpected-error", f"final compaction/orphan cleaning: {_error(e)}")
        after = [s.id for s in t.snapshots()]
        for sid in after[:-1]:
            self.read_snapshot(sid, "final read after compaction and orphan cleaning")
        rows = self.read_snapshot(after[-1], LAST_READ)
        if rows is not None:  # checked: the next round starts from it
            self.report.model[self.kind] = dict(zip(rows.column("k").to_pylist(), rows.column("v").to_pylist()))
        self.report.latest[self.kind] = after[-1]
        self.report.count(f"snapshots {self.kind}", ids[-1])

    def read_snapshot(self, sid: int, source: str) -> pa.Table | None:
        try:
            rows = self.table.to_arrow(snapshot_id=sid)
        except tidelake.TidelakeError as e:
            self.violation("unreadable-snapshot", f"{source}: snapshot {sid}: {_error(e)}")
            return None
        ok = self.history.check_read(sid, rows.column("k").to_pylist(), rows.column("v").to_pylist(), source)
        return rows if ok else None


# ---- entry points -------------------------------------------------------------------------------


def run_soak(root: str, storage_options: dict[str, str] | None, work_dir: str, seconds: float,
             rounds: int = 1, seed: int = 20261125, on_round: Callable[[Report], None] | None = None,
             **settings: Any) -> list[Report]:
    """Create the tables under ``root`` and run ``rounds`` rounds of ``seconds`` each on them,
    stopping after the first round with violations. Returns every round's report."""
    locations = create_tables(root, storage_options)
    model: dict[str, dict[int, int | None]] = {kind: {} for kind in locations}
    base = {kind: 0 for kind in locations}
    reports = []
    for n in range(rounds):
        cfg = Config(locations, storage_options, os.path.join(work_dir, f"round-{n}"), seconds, seed, n, base,
                     **settings)
        os.makedirs(cfg.run_dir)
        report = run_round(cfg, model)
        reports.append(report)
        if on_round:
            on_round(report)
        if not report.ok or set(report.model) != set(locations):
            break
        model, base = report.model, dict(report.latest)
    return reports


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60, help="length of a round (default 60)")
    p.add_argument("--long", action="store_true", help="run rounds on the same tables for --minutes")
    p.add_argument("--minutes", type=float, default=60, help="with --long: total time (default 60)")
    p.add_argument("--round-minutes", type=float, default=5, help="with --long: length of a round (default 5)")
    p.add_argument("--s3", action="store_true", help="on a moto S3 server started for the run")
    p.add_argument("--dir", help="where tables (local) and logs go (default: a new temporary directory)")
    p.add_argument("--seed", type=int, default=20261125)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--readers", type=int, default=2)
    p.add_argument("--keys", type=int, default=200)
    args = p.parse_args(argv)
    work = args.dir or tempfile.mkdtemp(prefix="tidelake-soak-")
    seconds, rounds = args.seconds, 1
    if args.long:
        seconds = args.round_minutes * 60
        rounds = max(1, round(args.minutes / args.round_minutes))
    settings = {"writers": args.writers, "readers": args.readers, "keys": args.keys}
    print(f"soak in {work}: {rounds} round(s) of {seconds:g} s", flush=True)

    def run(root: str, options: dict[str, str] | None) -> list[Report]:
        return run_soak(root, options, work, seconds, rounds, args.seed, lambda r: print(r.describe(), flush=True),
                        **settings)

    if args.s3:
        from _s3 import moto_server

        with moto_server() as server:
            reports = run(f"s3://{server.new_bucket()}/soak", server.options)
    else:
        reports = run(os.path.join(work, "tables"), None)
    return 0 if all(r.ok for r in reports) and len(reports) == rounds else 1


if __name__ == "__main__":
    sys.exit(main())
