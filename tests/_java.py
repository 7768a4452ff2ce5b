"""The Java Paimon oracle (interop/java-oracle) seen from the tests.

Not a test module (leading underscore): imported by test_interop_java. ``make java-oracle``
builds the oracle (a no-op when its sources did not change); one JVM per test session answers
every job (``JavaOracle.run``). Tables are described once (:class:`Scenario`) and written either
by Java's own writers (:meth:`Scenario.java_job`) or by tidelake (:func:`tidelake_write`) into a
table Java created, so both directions share one schema. Every comparison is recorded in
``COMPARED`` and printed at the end of the run (conftest ``pytest_terminal_summary``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import pathlib
import subprocess
import threading
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import tidelake
from _peers import canonical_rows, pp_read, sorted_rows, with_sorted_maps

REPO = pathlib.Path(__file__).resolve().parents[1]
ORACLE = REPO / "interop" / "java-oracle"
PAIMON_JAVA_VERSION = "1.3.1"

# (table, read, readers, rows) of every comparison made in this run.
COMPARED: list[tuple[str, str, str, int]] = []


def oracle_classpath() -> str:
    """The oracle's classpath, built first (``make java-oracle``: a no-op when up to date)."""
    subprocess.run(["make", "-s", "-C", str(REPO), "java-oracle"], check=True)
    target = ORACLE / "target"
    return f"{target / 'java-oracle.jar'}:{(target / 'classpath.txt').read_text().strip()}"


class JavaError(AssertionError):
    """A job the oracle could not do (its Java exception and stack trace)."""


class JavaOracle:
    """One oracle JVM: a JSON job per line in, a JSON answer per line out; on its own classpath,
    or on ``classpath`` (the oracle's jar with other jars: ``_hive.hive_oracle_classpath``)."""

    def __init__(self, classpath: str | None = None) -> None:
        self._proc = subprocess.Popen(
            ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath or oracle_classpath(),
             "org.tidelake.oracle.Main"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self._stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-200]

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise JavaError(f"the oracle exited ({self._proc.poll()}): {''.join(self._stderr[-30:])}")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise JavaError(f"{answer['error']}\n{answer['trace']}")
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=60)


@pytest.fixture(scope="session")
def java():
    oracle = JavaOracle()
    yield oracle
    oracle.close()


# ---- scenarios -----------------------------------------------------------------------------------


@dataclasses.dataclass
class Scenario:
    """A table and the commits written into it.

    ``fields``: (name, Paimon type in schema-file JSON); ``steps`` as the oracle's write job
    takes them (interop/java-oracle Writes.java): ``{"rows": [...]}`` (canonical values; a row
    ``{"kind": "-D", "values": [...]}`` deletes), ``"overwrite"``, ``{"alter": [...]}`` (each
    change also carries ``"arrow"``, the Arrow type tidelake is given; column moves, nullability
    comments and defaults as Writes.java takes them; a column may be a list of names, the path to a
    nested field), ``{"tag": name}``;
    ``{"compact": True}`` is a full compaction of every bucket (besides the compactions both
    writers trigger on their own); ``{"create_branch": name}`` (optionally ``"from_tag"``),
    ``{"fast_forward": name}``, and ``"rows"`` steps with ``"branch": name`` (batch mode). ``mode``: "stream" (one long-lived writer, commit identifiers) or "batch"."""

    name: str
    fields: list[tuple[str, Any]]
    steps: list[dict[str, Any]]
    primary_keys: list[str] = dataclasses.field(default_factory=list)
    partition_keys: list[str] = dataclasses.field(default_factory=list)
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    mode: str = "stream"

    def schema_json(self) -> dict[str, Any]:
        return {"fields": [{"name": n, "type": t} for n, t in self.fields],
                "primary_keys": self.primary_keys, "partition_keys": self.partition_keys,
                "options": self.options}

    def java_job(self, warehouse: str, with_steps: bool = True) -> dict[str, Any]:
        steps = [_for_java(s) for s in self.steps] if with_steps else []
        return {"op": "write", "warehouse": warehouse, "table": f"db.{self.name}", "mode": self.mode,
                "schema": self.schema_json(), "steps": steps}


def _for_java(step: dict[str, Any]) -> dict[str, Any]:
    if "alter" in step:
        return {"alter": [{k: v for k, v in c.items() if k != "arrow"} for c in step["alter"]]}
    return step


def java_write(java: JavaOracle, warehouse: str, sc: Scenario) -> tidelake.Table:
    """Java creates and writes the scenario's table; returns it opened by tidelake."""
    java.run(sc.java_job(warehouse))
    return tidelake.Catalog(warehouse).get_table(f"db.{sc.name}")


def tidelake_write(java: JavaOracle, warehouse: str, sc: Scenario) -> tidelake.Table:
    """Java creates the scenario's table (so its schema is exactly Java's) and tidelake writes
    every step into it."""
    java.run(sc.java_job(warehouse, with_steps=False))
    cat = tidelake.Catalog(warehouse)
    ident = f"db.{sc.name}"
    t = cat.get_table(ident)
    writer = None
    commit_id = 0
    for step in sc.steps:
        if any(k in step for k in ("alter", "tag", "compact", "overwrite", "branch", "create_branch",
                                   "fast_forward")) or sc.mode == "batch":
            if writer is not None:
                writer.close()
                writer = None
        if "alter" in step:
            for c in step["alter"]:
                if "add" in c:
                    t.add_column(c["add"], c["arrow"], first=c.get("first", False), after=c.get("after"))
                elif "rename" in c:
                    t.rename_column(c["rename"], c["to"])
                elif "drop" in c:
                    t.drop_column(c["drop"])
                elif "update_type" in c:
                    t.update_column_type(c["update_type"], c["arrow"])
                elif "move" in c:
                    t.move_column(c["move"], first="after" not in c, after=c.get("after"))
                elif "nullable" in c:
                    t.update_column_nullability(c["nullable"], c["value"])
                elif "comment" in c:
                    t.update_column_comment(c["comment"], c["value"])
                elif "default" in c:
                    t.update_column_default(c["default"], c["value"])
                else:
                    t.set_option(c["set"], c["value"])
            t = cat.get_table(ident)
        elif "tag" in step:
            t.create_tag(step["tag"])
        elif "create_branch" in step:
            t.create_branch(step["create_branch"], from_tag=step.get("from_tag"))
        elif "fast_forward" in step:
            t.fast_forward(step["fast_forward"])
        elif "branch" in step:
            b = tidelake.open_table(t.path, branch=step["branch"])
            _write_rows(b, b.schema, step["rows"], None)
        elif "compact" in step:
            t.compact(full=True)
        elif "overwrite" in step:
            spec = None if step["overwrite"] is True else step["overwrite"]
            t.write(to_arrow(t.schema, _inserts(step["rows"])), mode="overwrite", overwrite_partition=spec)
        elif sc.mode == "batch":
            _write_rows(t, t.schema, step["rows"], None)
        else:
            if writer is None:
                writer = t.writer()
            commit_id += 1
            _write_rows(t, t.schema, step["rows"], writer, commit_id)
    if writer is not None:
        writer.close()
    return cat.get_table(ident)


def _inserts(rows: list[Any]) -> list[list[Any]]:
    assert all(isinstance(r, list) for r in rows), "overwrite takes inserted rows only"
    return rows


def _write_rows(t: tidelake.Table, schema: pa.Schema, rows: list[Any], writer: Any, commit_id: int = 0) -> None:
    """One commit of ``rows``: inserts, then deletes (a row deleted in the commit that inserts
    it is not a case the scenarios use)."""
    inserts = [r for r in rows if isinstance(r, list)]
    deletes = [r["values"] for r in rows if not isinstance(r, list)]
    assert all(r["kind"] == "-D" for r in rows if not isinstance(r, list))
    w = writer if writer is not None else t.writer()
    if inserts:
        w.write(to_arrow(schema, inserts))
    if deletes:
        w.delete(to_arrow(schema, deletes))
    t.commit(w.prepare_commit(), commit_identifier=commit_id if writer is not None else None,
             commit_user=w.commit_user)
    if writer is None:
        w.close()


# ---- canonical values -> Arrow ---------------------------------------------------------------


def _arrow_value(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    if pa.types.is_timestamp(t):
        ts = pd.Timestamp(v)
        return ts.tz_localize("UTC") if t.tz else ts
    if pa.types.is_time(t):
        h, m, s = v.split(":")
        return dt.time(int(h), int(m), int(float(s)), int(round(float(s) % 1 * 1e6)))
    if pa.types.is_decimal(t):
        return decimal.Decimal(v)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return bytes.fromhex(v)
    if pa.types.is_date(t):
        return dt.date.fromisoformat(v)
    if pa.types.is_floating(t) and isinstance(v, str):
        return float(v)
    if pa.types.is_map(t):
        return [(_arrow_value(k, t.key_type), _arrow_value(x, t.item_type)) for k, x in v]
    if pa.types.is_list(t):
        return [_arrow_value(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _arrow_value(x, t.field(i).type) for i, x in enumerate(v)}
    return v


def to_arrow(schema: pa.Schema, rows: list[list[Any]]) -> pa.Table:
    """Canonical rows (in ``schema``'s column order) as an Arrow table of ``schema``."""
    cols = [pa.array([_arrow_value(r[i], f.type) for r in rows], type=f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(cols, schema=schema)


# ---- comparisons -----------------------------------------------------------------------------


def java_read(java: JavaOracle, warehouse: str, table: str, options: dict[str, str] | None = None,
              **job: Any) -> dict[str, Any]:
    return java.run({"op": "read", "warehouse": warehouse, "table": table, "options": options or {}, **job})


def _java_rows(answer: dict[str, Any], schema: pa.Schema, with_kinds: bool,
               fields_by_id: list[dict[str, Any]] | None = None) -> list[str]:
    """Java's rows in ``schema``'s column order when Java read the same columns in another order
    (a streaming read from snapshot N reads N's schema, which a later column move reorders);
    with ``fields_by_id`` (the schema-file fields ``schema`` is of), the fields of Java's ROW
    values matched to those by field id (N's schema may lack, order or name them otherwise)."""
    fields: list[str] = answer["fields"]
    ours = [n for n in schema.names if n in fields]
    order = [fields.index(n) for n in ours] if sorted(ours) == sorted(fields) else list(range(len(fields)))
    types = [schema.field(fields[i]).type for i in order]
    by_name = {f["name"]: f["type"] for f in fields_by_id or []}
    theirs = [f["type"] for f in answer["type"]["fields"]] if fields_by_id is not None else []

    def value(r: list[Any], i: int) -> Any:
        return _by_id(r[i], theirs[i], by_name[fields[i]]) if fields[i] in by_name else r[i]

    rows = [[with_sorted_maps(value(r, i), ty) for i, ty in zip(order, types)] for r in answer["rows"]]
    if with_kinds:
        rows = [[k, *r] for k, r in zip(answer["kinds"], rows)]
    return sorted_rows(rows)


def _by_id(value: Any, theirs: Any, ours: Any) -> Any:
    """A canonical value of schema-file type ``theirs`` as one of type ``ours``: ROW fields
    matched by id, a field ``theirs`` lacks is null."""
    if value is None or not isinstance(ours, dict) or not isinstance(theirs, dict):
        return value
    if "fields" in ours and "fields" in theirs:
        at = {f["id"]: (i, f["type"]) for i, f in enumerate(theirs["fields"])}
        return [_by_id(value[at[f["id"]][0]], at[f["id"]][1], f["type"]) if f["id"] in at else None
                for f in ours["fields"]]
    if "element" in ours and "element" in theirs:
        return [_by_id(v, theirs["element"], ours["element"]) for v in value]
    if "value" in ours and "value" in theirs:
        return [[k, _by_id(v, theirs["value"], ours["value"])] for k, v in value]
    return value


def _mismatch(what: str, ours: list[str], theirs: list[str], who: str) -> str:
    missing = [r for r in theirs if r not in ours][:5]
    extra = [r for r in ours if r not in theirs][:5]
    return (f"{what}: tidelake has {len(ours)} rows, {who} {len(theirs)}; "
            f"only {who}: {missing}; only tidelake: {extra}")


def compare_read(java: JavaOracle, t: tidelake.Table, warehouse: str, label: str, *,
                 snapshot_id: int | None = None, tag: str | None = None, timestamp_ms: int | None = None,
                 columns: list[str] | None = None, filter: Any = None, java_filter: Any = None,
                 pypaimon: bool = False) -> list[str]:
    """tidelake's batch read == Java's (== pypaimon's when asked); returns the canonical rows."""
    opts: dict[str, str] = {}
    if snapshot_id is not None:
        opts["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        opts["scan.tag-name"] = tag
    if timestamp_ms is not None:
        opts["scan.timestamp-millis"] = str(timestamp_ms)
    ours_t = t.to_arrow(columns=columns, filter=filter, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    ours = sorted_rows(canonical_rows(ours_t))
    ident, job = _ident_job(t)
    if columns is not None:
        job["projection"] = columns
    if java_filter is not None:
        job["filter"] = java_filter
    theirs = _java_rows(java_read(java, warehouse, ident, opts, **job), ours_t.schema, False)
    what = f"{label} {ident} {opts or 'latest'}{' ' + str(job) if job else ''}"
    assert ours == theirs, _mismatch(what, ours, theirs, "Java")
    readers = "tidelake=java"
    if pypaimon:
        pp_ident = f"{ident}$branch_{t.branch}" if t.branch != "main" else ident
        pp = pp_read(warehouse, pp_ident, opts or None, schema=ours_t.schema).select(ours_t.schema.names)
        theirs_pp = sorted_rows(canonical_rows(pp))
        assert ours == theirs_pp, _mismatch(what, ours, theirs_pp, "pypaimon")
        readers += "=pypaimon"
    COMPARED.append((f"{label} {ident}", f"{opts or 'latest'}{' ' + str(job) if job else ''}", readers, len(ours)))
    return ours


def _ident_job(t: tidelake.Table) -> tuple[str, dict[str, Any]]:
    """The Java identifier of ``t`` and the read job fields naming its branch."""
    return f"db.{pathlib.Path(t.path).name}", ({"branch": t.branch} if t.branch != "main" else {})


def _batch_scans_hide_files(t: tidelake.Table) -> bool:
    """Java's batch scans (also incremental ones) skip level-0 files of deletion-vector and
    first-row tables and the postpone bucket of postpone-bucket tables; its streaming reads do
    not (without a changelog producer)."""
    o = t.options
    return (o.get("deletion-vectors.enabled", "").lower() == "true" or o.get("merge-engine") == "first-row"
            or o.get("bucket") == "-2")


def compare_changes(java: JavaOracle, t: tidelake.Table, warehouse: str, label: str, start: int, end: int) -> list[str]:
    """tidelake's ``changes(start, end)`` == what Java's streaming read returns for snapshots
    start+1..end and (unless Java's batch scans hide level 0) Java's incremental read
    ``incremental-between`` (start, end], row kinds included."""
    ours_t = t.changes(start, end)
    ours = sorted_rows(canonical_rows(ours_t))
    latest_fields = next(s for s in t.schemas() if s.id == t.schema_id).fields
    ident, on_branch = _ident_job(t)
    reads = {"stream": {"stream": {"from": start + 1, "to": end}}}
    # Java 1.3.1 plans an incremental read of a table with a fallback branch on the fallback
    # branch too, with the same snapshot range (FallbackReadScan.plan), and fails when that
    # branch has fewer snapshots: its streaming read, which ignores the fallback, is the oracle.
    if not _batch_scans_hide_files(t) and "scan.fallback-branch" not in t.options:
        reads["incremental"] = {"options": {"incremental-between": f"{start},{end}"}}
    for how, job in reads.items():
        answer = java.run({"op": "read", "warehouse": warehouse, "table": ident, **on_branch, **job})
        theirs = _java_rows(answer, ours_t.schema, True, latest_fields)
        assert ours == theirs, _mismatch(f"{label} {ident} changes({start}, {end}) vs Java {how}", ours, theirs, "Java")
        COMPARED.append((f"{label} {ident}", f"changes({start},{end}) vs {how} {on_branch or ''}".rstrip(),
                         "tidelake=java", len(ours)))
    return ours


def compare_all(java: JavaOracle, t: tidelake.Table, warehouse: str, label: str, *, changes: bool = True,
                pypaimon: bool = False) -> None:
    """Latest, every snapshot, every tag and (``changes``) every single-snapshot increment."""
    latest = compare_read(java, t, warehouse, label, pypaimon=pypaimon)
    assert latest, f"{label} {t.path}: the latest snapshot reads no rows (the scenario writes some)"
    for s in t.snapshots():
        compare_read(java, t, warehouse, label, snapshot_id=s.id)
        if changes and s.id > 1:
            compare_changes(java, t, warehouse, label, s.id - 1, s.id)
    for tag in t.tags():
        compare_read(java, t, warehouse, label, tag=tag.name)
    snapshots = t.snapshots()
    if len(snapshots) > 1:  # time travel by commit time: the snapshot at or before it
        compare_read(java, t, warehouse, label, timestamp_ms=snapshots[len(snapshots) // 2].time_millis)


def report_lines() -> list[str]:
    if not COMPARED:
        return []
    tables = {c[0] for c in COMPARED}
    lines = [f"Java Paimon {PAIMON_JAVA_VERSION} interop: {len(COMPARED)} reads compared over {len(tables)} tables"]
    lines += [f"  {table:<46} {read:<60} {readers:<24} {rows:>5} rows" for table, read, readers, rows in COMPARED]
    return lines
