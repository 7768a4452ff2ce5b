"""The maintenance autopilot behind ``tidelake maintain``: :func:`plan` turns the state of a table,
or of every table of a warehouse, into :class:`Job` s by a :class:`Policy`, and :func:`run`
runs them (a concurrency, a time budget, a JSON-lines log of every job with rows, files and
bytes before and after).

Every job is one of the engine's maintenance operations on the table's latest state at the time
it runs (compaction: the engine's compaction plan; expiry: the engine's expiry with the
table's own retention unless the policy overrides it; orphans: the engine's orphan cleaning
with a safe age), so a plan that went stale does no harm and running twice is idempotent.
Nothing here decides what is safe to delete: the engine keeps every file a retained snapshot,
tag, branch or consumer needs, and orphan cleaning never touches files younger than
:data:`MIN_ORPHAN_AGE` (a writer's uncommitted files are protected by their age).

What the engine does not offer is not planned, and :attr:`MaintenancePlan.notes` says so:
manifest compaction happens at every commit (``manifest.merge-min-count``,
``manifest.full-compaction-threshold-size``), there is no separate job; changelog files expire
with their snapshots, or, with a decoupled changelog lifecycle (``changelog.num-retained.*`` or
``changelog.time-retained`` above the snapshot retention), by those options in the same
``expire-snapshots`` job (the engine keeps each expired snapshot's changelog as
``changelog/changelog-N`` and expires those), so there is no separate job either.
"""

from __future__ import annotations

import concurrent.futures
import datetime as _dt
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .catalog import Catalog
from .exceptions import CommitConflictError, InvalidArgumentError, TableNotFoundError, TidelakeError, UnsupportedError
from .maintenance import duration_ms, duration_text, parse_duration
from .table import Table, open_table

__all__ = ["JOB_KINDS", "MIN_ORPHAN_AGE", "Job", "JobResult", "MaintenancePlan", "MaintenanceReport", "Policy",
           "default_log_path", "plan", "run"]

JOB_KINDS = ("expire-tags", "expire-partitions", "compact", "expire-snapshots", "expire-changelog",
             "remove-orphans", "compact-manifests")
"""Every job kind, in the order a table's jobs run (``expire-changelog`` and
``compact-manifests`` are never planned: see the module docs)."""

MIN_ORPHAN_AGE = _dt.timedelta(hours=1)
"""The youngest a file may be for orphan cleaning to delete it, whatever the policy says."""

_COMPACT_RETRIES = 3
_LOG_NAME = os.path.join(".tidelake", "maintain.jsonl")


def _duration(value: Any, what: str) -> _dt.timedelta | None:
    """A policy duration: timedelta, milliseconds, or text such as ``1d``."""
    if value is None or isinstance(value, _dt.timedelta):
        return value
    if isinstance(value, str):
        return parse_duration(value)
    ms = duration_ms(value, what)
    return None if ms is None else _dt.timedelta(milliseconds=ms)


@dataclass(frozen=True)
class Policy:
    """What :func:`plan` may do. ``None`` values follow each table's own options
    (``snapshot.num-retained.min``/``max``, ``snapshot.time-retained``, ``snapshot.expire.limit``,
    ``partition.expiration-time``); durations are timedeltas, milliseconds or text (``1d``).
    ``tables`` maps a table (``db.name`` in a warehouse, or its path) to overrides of these
    fields for it alone."""

    compact: bool = True
    #: Rewrite every bucket (``compact --full``) rather than those the compaction triggers pick.
    full_compaction: bool = False
    expire_snapshots: bool = True
    snapshot_retain_min: int | None = None
    snapshot_retain_max: int | None = None
    snapshot_time_retained: _dt.timedelta | None = None
    snapshot_expire_limit: int | None = None
    expire_tags: bool = True
    expire_partitions: bool = True
    partition_expiration_time: _dt.timedelta | None = None
    remove_orphans: bool = True
    #: Only files older than this are orphans to delete (at least :data:`MIN_ORPHAN_AGE`).
    orphan_older_than: _dt.timedelta = _dt.timedelta(days=1)
    tables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("snapshot_time_retained", "partition_expiration_time", "orphan_older_than"):
            object.__setattr__(self, name, _duration(getattr(self, name), name))
        for name in ("compact", "full_compaction", "expire_snapshots", "expire_tags", "expire_partitions",
                     "remove_orphans"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidArgumentError(f"policy {name} must be true or false, got {getattr(self, name)!r}")
        for name in ("snapshot_retain_min", "snapshot_retain_max", "snapshot_expire_limit"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise InvalidArgumentError(f"policy {name} must be a positive integer, got {value!r}")
        if self.orphan_older_than is None or self.orphan_older_than < MIN_ORPHAN_AGE:
            raise InvalidArgumentError(f"policy orphan_older_than must be at least {duration_text(MIN_ORPHAN_AGE)} "
                                       f"(files of running writers are younger), got {self.orphan_older_than}")
        if not isinstance(self.tables, Mapping) or not all(isinstance(v, Mapping) for v in self.tables.values()):
            raise InvalidArgumentError("policy tables must map table names to tables of overrides")
        for name, overrides in self.tables.items():
            replace(self, tables={}, **_policy_fields(overrides, f"policy tables.{name!r}"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """A policy from a mapping (a parsed TOML or JSON file); keys as the fields, ``-`` or
        ``_`` alike. Unknown keys are an :class:`~tidelake.InvalidArgumentError`."""
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(f"a policy must be a mapping of settings, got {type(data).__name__}")
        tables = data.get("tables", {})
        rest = {k: v for k, v in data.items() if k != "tables"}
        return cls(**_policy_fields(rest, "policy"), tables=tables)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Policy:
        """A policy from a ``.toml`` or ``.json`` file."""
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise InvalidArgumentError(f"cannot read the policy file {p}: {e.strerror}") from None
        try:
            if p.suffix.lower() == ".json":
                return cls.from_dict(json.loads(text))
            if p.suffix.lower() == ".toml":
                if sys.version_info >= (3, 11):
                    import tomllib
                else:
                    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
                return cls.from_dict(tomllib.loads(text))
        except ValueError as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
            raise InvalidArgumentError(f"bad policy file {p}: {e}") from None
        raise InvalidArgumentError(f"policy file {p}: expected a .toml or .json file")

    def for_table(self, *names: str) -> Policy:
        """This policy with the overrides of the first of ``names`` listed in :attr:`tables`."""
        for name in names:
            if name in self.tables:
                return replace(self, tables={}, **_policy_fields(self.tables[name], f"policy tables.{name!r}"))
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = _plain(value)
        out["tables"] = {k: dict(v) for k, v in self.tables.items()}
        return out


def _plain(value: Any) -> Any:
    """``value`` for JSON: durations as text :meth:`Policy.from_dict` reads back, tuples as lists."""
    if isinstance(value, _dt.timedelta):
        return duration_text(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _policy_fields(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    names = {f.name for f in fields(Policy)} - {"tables"}
    out = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in names:
            raise InvalidArgumentError(f"{where}: unknown setting {key!r}; settings are "
                                       f"{', '.join(sorted(n.replace('_', '-') for n in names))}")
        out[name] = value
    return out


def _as_policy(policy: Policy | Mapping[str, Any] | None) -> Policy:
    if policy is None:
        return Policy()
    if isinstance(policy, Policy):
        return policy
    return Policy.from_dict(policy)


@dataclass(frozen=True)
class Job:
    """One maintenance job on one table. ``params`` are what the job runs with (e.g. the
    snapshot retention) and what planning found (e.g. ``buckets``, ``snapshots``, ``files``)."""

    table: str
    kind: str
    reason: str
    #: The table's ``db.name`` in a warehouse (None for a table given by path).
    name: str | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "name": self.name, "kind": self.kind, "reason": self.reason,
                "params": {k: _plain(v) for k, v in self.params}}


@dataclass(frozen=True)
class MaintenancePlan:
    """The jobs for a target, in the order they run per table, and notes on what was not planned
    and why."""

    jobs: list[Job]
    notes: list[str]
    tables: list[str]
    policy: Policy

    def to_dict(self) -> dict[str, Any]:
        return {"tables": self.tables, "jobs": [j.to_dict() for j in self.jobs], "notes": self.notes,
                "policy": self.policy.to_dict()}


@dataclass(frozen=True)
class JobResult:
    """How one job went: ``status`` ``done``, ``skipped`` (time budget, dry run) or ``failed`` (``error``);
    ``before`` / ``after``: the table's latest snapshot id, snapshot count, rows, data files and
    their bytes; ``result``: what the engine reported."""

    job: Job
    status: str
    seconds: float = 0.0
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    result: Any = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.job.to_dict(), "status": self.status, "seconds": round(self.seconds, 3),
                "before": self.before, "after": self.after, "result": self.result, "error": self.error}


@dataclass(frozen=True)
class MaintenanceReport:
    """What :func:`run` did: one :class:`JobResult` per planned job, in plan order."""

    plan: MaintenancePlan
    results: list[JobResult]
    dry_run: bool
    log_path: str | None

    @property
    def ran(self) -> list[JobResult]:
        return [r for r in self.results if r.status == "done"]

    @property
    def skipped(self) -> list[JobResult]:
        return [r for r in self.results if r.status == "skipped"]

    @property
    def failed(self) -> list[JobResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "log": self.log_path, "tables": self.plan.tables, "notes": self.plan.notes,
                "results": [r.to_dict() for r in self.results],
                "counts": {s: sum(r.status == s for r in self.results) for s in ("done", "skipped", "failed")}}


# ---- targets ----

def _tables(target: str | os.PathLike[str] | Table | Catalog,
            storage_options: dict[str, str] | None) -> list[tuple[str | None, Table]]:
    """The (``db.name`` or None, table) pairs of a target."""
    if isinstance(target, Table):
        return [(None, target)]
    if isinstance(target, (str, os.PathLike)):
        try:
            return [(None, open_table(target, storage_options))]
        except TableNotFoundError:
            target = Catalog(target, storage_options)
    if not isinstance(target, Catalog):
        raise InvalidArgumentError(f"maintain: expected a table path, Table or Catalog, got {type(target).__name__}")
    found: list[tuple[str | None, Table]] = []
    databases = target.list_databases()
    if not databases:
        raise TableNotFoundError(f"no table or warehouse at {target.warehouse}: it holds neither a table's "
                                 f"schema/ nor a database (<name>.db)")
    for db in databases:
        for name in target.list_tables(db):
            found.append((f"{db}.{name}", target.get_table(f"{db}.{name}")))
    return found


# ---- planning ----

def _now_ms() -> int:
    return int(time.time() * 1000)


def _ms(delta: _dt.timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _expire_args(policy: Policy) -> dict[str, Any]:
    retained = policy.snapshot_time_retained
    return {"retain_min": policy.snapshot_retain_min, "retain_max": policy.snapshot_retain_max,
            "older_than_ms": None if retained is None else _now_ms() - _ms(retained),
            "max_deletes": policy.snapshot_expire_limit}


def _expired_tags(t: Table) -> list[str]:
    """Tags whose ``tagTimeRetained`` has passed (the engine's rule, Paimon's ``TagTimeExpire``)."""
    return list(t._raw.expired_tags())


def _compaction_job(t: Table, policy: Policy, job: Callable[..., Job], notes: list[str]) -> Job | None:
    opts = t.effective_options
    if opts["bucket"] == -2:  # planning would already move the postponed rows: look only
        waiting = sum(1 for b in t.system("files").column("bucket").to_pylist() if b == -2)
        if not waiting:
            return None
        return job("compact", f"{waiting} files of a postpone-bucket table wait to be moved into buckets",
                   files=waiting, full=policy.full_compaction)
    try:
        tasks = t.compaction_plan(policy.full_compaction).tasks
    except UnsupportedError as e:
        notes.append(f"{t.path}: compaction not planned: {e}")
        return None
    if not tasks:
        return None
    if policy.full_compaction:
        why = "full compaction (policy full_compaction)"
    elif t.primary_keys:
        why = (f"over num-sorted-run.compaction-trigger={opts['num-sorted-run.compaction-trigger']} or the size "
               f"amplification/ratio triggers")
    else:
        why = "small files to merge (compaction.min.file-num, target-file-size)"
    return job("compact", f"the engine's compaction plan picks {len(tasks)} bucket(s): {why}",
               buckets=len(tasks), full=policy.full_compaction)


def _table_jobs(name: str | None, t: Table, policy: Policy, notes: list[str]) -> list[Job]:
    policy = policy.for_table(*[n for n in (name, t.path) if n])
    opts = t.effective_options

    def job(kind: str, reason: str, **params: Any) -> Job:
        return Job(t.path, kind, reason, name, tuple(params.items()))

    jobs: list[Job] = []
    if policy.expire_tags:
        tags = _expired_tags(t)
        if tags:
            jobs.append(job("expire-tags", f"{len(tags)} tag(s) past their time-retained", tags=tuple(tags)))
    if policy.expire_partitions and t.partition_keys:
        expiration = policy.partition_expiration_time or opts["partition.expiration-time"]
        if expiration is not None:
            source = "policy" if policy.partition_expiration_time else "partition.expiration-time"
            jobs.append(job("expire-partitions", f"partitions older than {duration_text(expiration)} ({source}, "
                                                 f"{opts['partition.expiration-strategy']})", expiration=expiration))
    if policy.compact:
        compact = _compaction_job(t, policy, job, notes)
        if compact is not None:
            jobs.append(compact)
    if policy.expire_snapshots:
        args = _expire_args(policy)
        try:
            would = t.expire_snapshots(**args, dry_run=True)
        except UnsupportedError as e:
            notes.append(f"{t.path}: expire-snapshots/expire-changelog not planned: {e}")
        else:
            if would.get("snapshots"):
                keep = policy.snapshot_retain_min or opts["snapshot.num-retained.min"]
                age = policy.snapshot_time_retained or opts["snapshot.time-retained"]
                jobs.append(job("expire-snapshots", f"{would['snapshots']} snapshot(s) beyond the retention "
                                                    f"(keep at least {keep}, older than {duration_text(age)})",
                                snapshots=would["snapshots"], **{k: v for k, v in args.items() if v is not None}))
    if policy.remove_orphans:
        found = t.remove_orphan_files(_now_ms() - _ms(policy.orphan_older_than), dry_run=True)
        if found:
            jobs.append(job("remove-orphans", f"{len(found)} unreferenced file(s) older than "
                                              f"{duration_text(policy.orphan_older_than)}",
                            files=len(found), bytes=sum(s for _, s in found), older_than=policy.orphan_older_than))
    return jobs


_STANDING_NOTES = [
    "compact-manifests: not a separate job; the engine merges manifests at every commit "
    "(manifest.merge-min-count, manifest.full-compaction-threshold-size)",
    "expire-changelog: not a separate job; changelog files expire with their snapshots, or by "
    "changelog.num-retained.* / changelog.time-retained in the expire-snapshots job",
]


def _plan(tables: list[tuple[str | None, Table]], policy: Policy) -> MaintenancePlan:
    jobs: list[Job] = []
    notes: list[str] = []
    for name, t in tables:
        jobs.extend(_table_jobs(name, t, policy, notes))
    return MaintenancePlan(jobs=jobs, notes=notes + _STANDING_NOTES, tables=[t.path for _, t in tables],
                           policy=policy)


def plan(target: str | os.PathLike[str] | Table | Catalog, *, policy: Policy | Mapping[str, Any] | None = None,
         storage_options: dict[str, str] | None = None) -> MaintenancePlan:
    """The maintenance jobs ``target`` (a table path, a warehouse path, a :class:`~tidelake.Table`
    or a :class:`~tidelake.Catalog`) needs under ``policy`` (a :class:`Policy`, or a mapping as
    :meth:`Policy.from_dict` takes; default: every job, retention from each table's options).
    Nothing is changed (for postpone-bucket tables the compaction job is planned from the files
    waiting in bucket -2, without the engine's plan, which would move them).

    Raises:
        InvalidArgumentError: a bad policy or target.
        TableNotFoundError: no table or warehouse at the path.
    """
    return _plan(_tables(target, storage_options), _as_policy(policy))


# ---- running ----

def _stats(t: Table) -> dict[str, Any]:
    """The table's latest state: snapshot id, live snapshots, rows, data files and bytes."""
    latest = t.latest_snapshot()
    files = t.system("files")
    return {"snapshot_id": None if latest is None else latest.id, "snapshots": len(t.snapshots()),
            "rows": 0 if latest is None else latest.total_record_count, "files": files.num_rows,
            "bytes": sum(files.column("file_size_in_bytes").to_pylist())}


Compactor = Callable[[Table, bool], "int | None"]
"""Compacts a table (fully when the second argument is true), returning the COMPACT snapshot id,
e.g. ``functools.partial(tidelake.spark.compact, spark_session)``."""


def _run_job(t: Table, job: Job, compactor: Compactor | None) -> Any:
    kind = job.kind
    if kind == "expire-tags":
        still = _expired_tags(t)  # a tag deleted, or created again under its name, since planning stays
        return {name: t.delete_tag(name) for name in job.param("tags") if name in still}
    if kind == "expire-partitions":
        return t.expire_partitions(job.param("expiration"))
    if kind == "compact":
        for attempt in range(_COMPACT_RETRIES):
            try:
                full = job.param("full", False)
                return {"snapshot_id": compactor(t, full) if compactor is not None else t.compact(full=full)}
            except CommitConflictError:  # a concurrent commit rewrote the same files: plan again
                if attempt == _COMPACT_RETRIES - 1:
                    raise
    if kind == "expire-snapshots":
        older = job.param("older_than_ms")
        return t.expire_snapshots(job.param("retain_min"), job.param("retain_max"), older,
                                  job.param("max_deletes"))
    if kind == "remove-orphans":
        cutoff = _now_ms() - _ms(job.param("older_than"))
        found = t.remove_orphan_files(cutoff)
        return {"files": len(found), "bytes": sum(s for _, s in found)}
    raise InvalidArgumentError(f"unknown job kind {kind!r}")


def default_log_path(target: str | os.PathLike[str] | Table | Catalog) -> str | None:
    """Where :func:`run` appends its log by default: ``.tidelake/maintain.jsonl`` inside the
    table or warehouse directory (never read by Paimon, never an orphan candidate); None for
    targets on an object store (give ``log_path``)."""
    where = target.path if isinstance(target, Table) else target.warehouse if isinstance(target, Catalog) \
        else os.fspath(target)
    if "://" in where and not where.startswith("file://"):
        return None
    return os.path.join(where.removeprefix("file://"), _LOG_NAME)


class _Log:
    """The JSON-lines log, one line per job, appended as each job finishes (from any thread)."""

    def __init__(self, path: str | None, run_id: str) -> None:
        self.path, self.run_id, self._lock = path, run_id, threading.Lock()

    def append(self, result: JobResult) -> None:
        if self.path is None:
            return
        line = json.dumps({"run": self.run_id, "time": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                           **result.to_dict()}, default=str)
        with self._lock:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())


def _run_table(t: Table, jobs: Iterable[Job], deadline: float | None, compactor: Compactor | None,
               finish: Callable[[JobResult], None]) -> None:
    for job in jobs:
        if deadline is not None and time.monotonic() >= deadline:
            finish(JobResult(job, "skipped", error="time budget used up"))
            continue
        started = time.monotonic()
        before = after = None
        try:
            before = _stats(t)
            result = _run_job(t, job, compactor)
            after = _stats(t)
        except TidelakeError as e:
            finish(JobResult(job, "failed", time.monotonic() - started, before, after,
                             error=f"{type(e).__name__}: {e}"))
            continue
        finish(JobResult(job, "done", time.monotonic() - started, before, after, result=result))


def run(target: str | os.PathLike[str] | Table | Catalog, *, policy: Policy | Mapping[str, Any] | None = None,
        dry_run: bool = False, concurrency: int = 1, time_budget: _dt.timedelta | float | str | None = None,
        log_path: str | os.PathLike[str] | None = None, spark: Compactor | None = None,
        progress: Callable[[int, int, JobResult | None], object] | None = None,
        storage_options: dict[str, str] | None = None) -> MaintenanceReport:
    """Plan (:func:`plan`) and run the maintenance of ``target``.

    Args:
        dry_run: plan only; nothing is changed and nothing logged (every job reported
            ``skipped`` with error ``dry run``).
        concurrency: how many tables are maintained at once (a table's jobs run one after the
            other, in :data:`JOB_KINDS` order).
        time_budget: no job starts once this much time has passed (timedelta, seconds, or text
            such as ``10m``); the jobs left are reported ``skipped``. A running job is not
            interrupted.
        log_path: the JSON-lines file each finished job is appended to (default:
            :func:`default_log_path`; object-store targets log only when given one).
        spark: compaction jobs call this as ``spark(table, full)`` instead of
            :meth:`tidelake.Table.compact`: ``functools.partial(tidelake.spark.compact,
            spark_session)`` runs them on Spark executors (see :data:`Compactor`).
        progress: called as ``progress(done, total, result)``: ``(0, total, None)`` before the
            first job, then with each :class:`JobResult` as it finishes (from a worker thread).

    A job that fails (a :class:`~tidelake.TidelakeError`) is reported ``failed`` with its error
    and the table's other jobs still run; other exceptions propagate.
    """
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise InvalidArgumentError(f"concurrency must be a positive integer, got {concurrency!r}")
    budget = _budget_seconds(time_budget)
    started = time.monotonic()
    tables = _tables(target, storage_options)
    the_plan = _plan(tables, _as_policy(policy))
    if dry_run:
        return MaintenanceReport(the_plan, [JobResult(j, "skipped", error="dry run") for j in the_plan.jobs],
                                 dry_run=True, log_path=None)
    log = _Log(os.fspath(log_path) if log_path is not None else default_log_path(target),
               f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}")
    results: dict[int, JobResult] = {}

    lock = threading.Lock()

    def finish(r: JobResult) -> None:
        log.append(r)
        with lock:
            results[id(r.job)] = r
            done = len(results)
        if progress is not None:
            progress(done, len(the_plan.jobs), r)

    deadline = None if budget is None else started + budget
    if progress is not None:
        progress(0, len(the_plan.jobs), None)
    by_table = {t.path: t for _, t in tables}
    per_table: dict[str, list[Job]] = {}
    for job in the_plan.jobs:
        per_table.setdefault(job.table, []).append(job)
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        for f in [pool.submit(_run_table, by_table[p], jobs, deadline, spark, finish) for p, jobs in per_table.items()]:
            f.result()
    return MaintenanceReport(the_plan, [results[id(j)] for j in the_plan.jobs], dry_run=False, log_path=log.path)


def _budget_seconds(value: _dt.timedelta | float | str | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_duration(value)
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InvalidArgumentError(f"time_budget must be a timedelta, seconds or a duration such as 10m, got {value!r}")
    return float(value)
