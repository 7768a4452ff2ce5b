"""Row-level DML (Table.delete/update/merge, upsert(partial=True)) and write results.

Each DML call is checked against a plain-Python model over random histories (hypothesis) on
primary-key tables (deduplicate, partial-update) and append tables (bucket-unaware, fixed
buckets), local and on S3; metrics are compared exactly with the model and with the snapshots'
own delta manifests; MERGE clause order follows SQL; a DML racing a writer in another process
never loses that writer's acknowledged rows; Java Paimon and pypaimon read the results.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _java import (
    compare_read,
    java,  # noqa: F401  (the session's oracle JVM, a fixture)
)
from _peers import new_warehouse
from _s3 import Storage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelake

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    pa.field("qty", pa.int64()), pa.field("name", pa.string())])
COLS = SCHEMA.names

KINDS = {
    "append": dict(partition_keys=["p"]),
    "append-fixed": dict(partition_keys=["p"], bucket=2, options={"bucket-key": "id"}),
    "append-dv": dict(options={"deletion-vectors.enabled": "true"}),
    "append-dv-fixed": dict(partition_keys=["p"], bucket=2,
                            options={"bucket-key": "id", "deletion-vectors.enabled": "true"}),
    "dedup": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2),
    "dedup-dv": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=1,
                     options={"deletion-vectors.enabled": "true"}),
    "partial": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=1,
                    options={"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}),
}


def create(storage: Storage | None, tmp_path, kind: str) -> tidelake.Table:
    if storage is None:
        return tidelake.create_table(str(tmp_path / kind), SCHEMA, **KINDS[kind])
    return tidelake.create_table(storage.fresh(kind), SCHEMA, storage_options=storage.options, **KINDS[kind])


def rows_of(t: tidelake.Table) -> list[tuple]:
    return sorted(tuple(r[c] for c in COLS) for r in t.to_arrow().to_pylist())


def table_of(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


# ---- write results --------------------------------------------------------------------------------

def test_write_result_metrics_are_the_snapshots(tmp_path):
    t = create(None, tmp_path, "append")
    r = t.write(table_of([{"id": i, "p": "a", "qty": i, "name": "x"} for i in range(10)]))
    assert isinstance(r, tidelake.WriteResult)
    (snap,) = t.snapshots()
    assert r.snapshot_ids == (snap.id,) and r.snapshot_id == snap.id and int(r) == snap.id and r == snap.id
    assert t.to_arrow(snapshot_id=r).num_rows == 10  # usable as a snapshot id
    h = t.history().to_pylist()[-1]
    assert (r.rows_inserted, r.rows_deleted, r.files_added, r.files_removed, r.bytes_added) == \
        (10, 0, h["files_added"], 0, h["bytes_added"]) and h["files_added"] == 1 and r.bytes_added > 0
    assert r.duration_s > 0
    o = t.write(table_of([{"id": 1, "p": "b", "qty": 1, "name": "y"}]), mode="overwrite")
    assert (o.rows_inserted, o.rows_deleted, o.files_removed) == (1, 10, 1)
    tr = t.truncate()
    assert (tr.rows_deleted, tr.files_removed, tr.files_added) == (1, 1, 0)
    empty = t.write(SCHEMA.empty_table())
    assert not empty and empty.snapshot_id is None and empty == 0 and empty.snapshot_ids == ()
    # an int for callers that used the snapshot id: formatting, arithmetic, pickling
    assert f"{r}" == str(snap.id) and r - 1 == snap.id - 1 and isinstance(r, int)
    import pickle

    back = pickle.loads(pickle.dumps(o))
    assert back == o and back.metrics() == o.metrics() and "rows_deleted=10" in repr(back)


def test_pk_write_result_counts_records_not_rows(tmp_path):
    t = create(None, tmp_path, "dedup")
    rows = [{"id": i, "p": "a", "qty": i, "name": "x"} for i in range(5)]
    r = t.upsert(table_of(rows))
    assert r.rows_inserted is None and r.records_added == 5 and r.files_added >= 1
    d = t.delete_keys(table_of(rows[:2]))
    assert d.records_added == 2 and d.rows_deleted is None
    assert rows_of(t) == sorted(tuple(r.values()) for r in rows[2:])
    with pytest.warns(DeprecationWarning, match="delete_keys"):
        t.delete(table_of(rows[2:3]))
    assert len(rows_of(t)) == 2


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_results_are_what_the_snapshots_manifests_say(tmp_path, kind):
    """The metrics every writing verb returns (counted by its commit) equal what the history reads
    back from its snapshots' delta manifests: writes (APPEND, and the COMPACT of a writer that
    compacted), delete, update, merge, overwrites, truncate and compaction."""
    t = create(None, tmp_path, kind)
    rows = [{"id": i, "p": "ab"[i % 2], "qty": i % 10, "name": "x"} for i in range(12)]
    results = [t.write(table_of(rows)), t.write(table_of(rows[:5])), t.delete("qty < 2"),
               t.update({"name": "'u'"}, "qty >= 8"),
               t.merge(table_of(rows[3:7]), on="target.id = source.id AND target.p = source.p")
               .when_matched_update({"qty": "source.qty + 1"}).when_not_matched_insert("*").execute(),
               t.write(table_of(rows[:3]), mode="overwrite", overwrite_partition="dynamic")]
    t.write(table_of(rows[5:9]))
    report = json.loads(t._raw.compact(True, None, None))
    results += [t.write(table_of(rows[:2]), mode="overwrite"), t.truncate()]
    for res in results:
        assert res.snapshot_ids, res
        check_metrics(t, res)
    compacted = [r for r in t.history().to_pylist() if r["snapshot_id"] == report["snapshot_id"]]
    assert [{k: h[k] for k in report["metrics"]} for h in compacted] == (
        [report["metrics"]] if report["snapshot_id"] is not None else [])
    if kind == "dedup-dv":  # its writers compact their level-0 files before committing
        assert len(results[0].snapshot_ids) == 2


# ---- the model ------------------------------------------------------------------------------------

class Model:
    """The rows a table should hold: a list of dicts (append) or {key: row} (primary key)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pk = "primary_keys" in KINDS[kind]
        self.rows: list[dict] = []

    def write(self, rows: list[dict]) -> None:
        if not self.pk:
            self.rows += [dict(r) for r in rows]
            return
        by_key = {(r["id"], r["p"]): r for r in self.rows}
        for r in rows:
            by_key[(r["id"], r["p"])] = dict(r)
        self.rows = list(by_key.values())

    def sorted(self) -> list[tuple]:
        return sorted(tuple(r[c] for c in COLS) for r in self.rows)


row_st = st.fixed_dictionaries({"id": st.integers(0, 12), "p": st.sampled_from(["a", "b"]),
                                "qty": st.integers(0, 9), "name": st.sampled_from(["x", "y", "z"])})
# (SQL filter, the same as a Python predicate with SQL's NULL semantics, as DNF tuples or None)
FILTERS = [
    ("qty < 4", lambda r: r["qty"] < 4, [("qty", "<", 4)]),
    ("p = 'a' AND name <> 'x'", lambda r: r["p"] == "a" and r["name"] not in ("x", None),
     [("p", "=", "a"), ("name", "!=", "x")]),
    ("id IN (1, 3, 5) OR qty >= 8", lambda r: r["id"] in (1, 3, 5) or r["qty"] >= 8,
     [[("id", "in", [1, 3, 5])], [("qty", ">=", 8)]]),
    ("name LIKE 'y%' AND qty BETWEEN 2 AND 6", lambda r: (r["name"] or "").startswith("y") and 2 <= r["qty"] <= 6,
     None),
]
op_st = st.one_of(
    st.tuples(st.just("write"), st.lists(row_st, min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, len(FILTERS) - 1), st.booleans()),
    st.tuples(st.just("update"), st.integers(0, len(FILTERS) - 1), st.booleans()),
    st.tuples(st.just("merge"), st.lists(row_st, min_size=0, max_size=6, unique_by=lambda r: (r["id"], r["p"]))),
    st.tuples(st.just("partial"), st.lists(row_st, min_size=1, max_size=5, unique_by=lambda r: (r["id"], r["p"]))),
    st.tuples(st.just("compact"), st.booleans()),
)


def check_metrics(t: tidelake.Table, res: tidelake.WriteResult) -> None:
    """A result's file, record and byte counts are exactly those of its snapshots."""
    h = [r for r in t.history().to_pylist() if r["snapshot_id"] in res.snapshot_ids]
    assert len(h) == len(res.snapshot_ids)
    for ours, theirs in (("files_added", "files_added"), ("files_removed", "files_removed"),
                         ("records_added", "rows_added"), ("records_removed", "rows_removed"),
                         ("bytes_added", "bytes_added"), ("bytes_removed", "bytes_removed")):
        assert getattr(res, ours) == sum(r[theirs] for r in h), (ours, res)


def apply(t: tidelake.Table, m: Model, op: tuple) -> None:
    """Run one operation on the table and the model; check the result's row counts."""
    if op[0] == "write":
        rows = op[1] if not m.pk else list({(r["id"], r["p"]): r for r in op[1]}.values())
        t.write(table_of(rows))
        m.write(rows)
    elif op[0] == "delete":
        sql, pred, dnf = FILTERS[op[1]]
        use_dnf = op[2] and dnf is not None
        hit = [r for r in m.rows if pred(r)]
        res = t.delete(dnf if use_dnf else sql)
        check_metrics(t, res)
        m.rows = [r for r in m.rows if not pred(r)]
        assert res.rows_deleted == len(hit), (op, res)
        assert bool(res) == bool(hit)
    elif op[0] == "update":
        sql, pred, dnf = FILTERS[op[1]]
        hit = [r for r in m.rows if pred(r)]
        # a SQL expression or a pyarrow Expression, both over the row
        set_ = {"qty": "qty * 10 + 1", "name": "'u'"} if op[2] else \
            {"qty": pc.add(pc.field("qty"), 100), "name": pc.scalar("u")}
        res = t.update(set_, sql)
        check_metrics(t, res)
        for r in hit:
            r["qty"] = r["qty"] * 10 + 1 if op[2] else r["qty"] + 100
            r["name"] = "u"
        assert res.rows_updated == len(hit), (op, res)
    elif op[0] == "merge":
        merge_model(t, m, op[1])
    elif op[0] == "compact":  # rewrites files (and applies their deletion vectors): rows unchanged
        t.compact(full=op[1])
    elif op[0] == "partial":
        if not m.pk:
            return
        src = [{"id": r["id"], "p": r["p"], "qty": r["qty"]} for r in op[1]]
        res = t.upsert(pa.Table.from_pylist(src, schema=SCHEMA.remove(3)), partial=True)
        by_key = {(r["id"], r["p"]): r for r in m.rows}
        new = 0
        for s in src:
            if (s["id"], s["p"]) in by_key:
                by_key[(s["id"], s["p"])]["qty"] = s["qty"]
            else:
                by_key[(s["id"], s["p"])] = {**s, "name": None}
                new += 1
        m.rows = list(by_key.values())
        assert (res.rows_inserted, res.rows_updated) == (new, len(src) - new)


def merge_model(t: tidelake.Table, m: Model, src: list[dict]) -> None:
    """MERGE with two matched clauses in order (delete small qty, else update), an insert with a
    condition and a not-matched-by-source delete with a condition. The source has one row per
    key; on append tables several target rows can match it (each is changed, as in SQL)."""
    def key(r: dict) -> tuple:
        return (r["id"], r["p"])

    by_src = {key(s): s for s in src}
    matches = {}
    for r in m.rows:
        matches.setdefault(key(r), []).append(r)
    res = (t.merge(table_of(src), on="target.id = source.id AND target.p = source.p")
           .when_matched_delete("source.qty < 3")
           .when_matched_update({"qty": "target.qty + source.qty", "name": "source.name"}, "target.qty <= 7")
           .when_matched_delete()  # never reached by rows the update took
           .when_not_matched_insert("*", "source.name <> 'z'")
           .when_not_matched_by_source_delete("target.qty = 9")
           .execute())
    check_metrics(t, res)
    ins = upd = dele = 0
    out = []
    for r in m.rows:
        s = by_src.get(key(r))
        if s is None:
            if r["qty"] == 9:
                dele += 1
                continue
            out.append(r)
        elif s["qty"] < 3:
            dele += 1
        elif r["qty"] <= 7:
            out.append({**r, "qty": r["qty"] + s["qty"], "name": s["name"]})
            upd += 1
        else:
            dele += 1
    for s in src:
        if key(s) not in matches and s["name"] != "z":
            out.append(dict(s))
            ins += 1
    m.rows = out
    assert (res.rows_inserted, res.rows_updated, res.rows_deleted) == (ins, upd, dele), res


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op_st, min_size=1, max_size=7))
def test_dml_matches_model(storage, tmp_path, kind, ops):
    t = create(storage, tmp_path, kind)
    m = Model(kind)
    for op in ops:
        apply(t, m, op)
        assert rows_of(t) == m.sorted(), op


def test_pk_delete_with_a_not_null_value_column(tmp_path):
    """Delete records carry the whole row: a NOT NULL value column (a table created from a
    Spark DataFrame of non-null expressions) cannot take a key-only record's nulls."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string(), nullable=False)])
    t = tidelake.create_table(str(tmp_path / "t"), schema, primary_keys=["k"], bucket=2)
    t.write(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    assert t.delete("k < 3 OR v = 'zz'").rows_deleted == 2
    (t.merge(pa.table({"k": [3], "v": ["c"]}, schema=schema), on="k").when_matched_delete().execute())
    assert t.to_arrow().num_rows == 0


# ---- merge semantics ------------------------------------------------------------------------------

def test_merge_clauses_apply_in_order_first_match_wins(tmp_path):
    t = create(None, tmp_path, "dedup")
    t.write(table_of([{"id": i, "p": "a", "qty": i, "name": "t"} for i in range(6)]))
    src = table_of([{"id": i, "p": "a", "qty": 100 + i, "name": "s"} for i in (1, 2, 3, 4, 7, 8)])
    res = (t.merge(src, on=["id", "p"])
           .when_matched_update({"name": "'first'"}, condition="target.qty >= 3")
           .when_matched_delete(condition="target.qty >= 2")  # id 2 only: 3 and 4 took the update
           .when_matched_update({"name": "'last'"})            # id 1
           .when_not_matched_insert({"id": "source.id", "p": "source.p", "qty": 0}, condition="source.id = 7")
           .when_not_matched_insert("*")                       # id 8
           .execute())
    got = {r["id"]: (r["qty"], r["name"]) for r in t.to_arrow().to_pylist()}
    assert got == {0: (0, "t"), 1: (1, "last"), 3: (3, "first"), 4: (4, "first"), 5: (5, "t"),
                   7: (0, None), 8: (108, "s")}
    assert (res.rows_inserted, res.rows_updated, res.rows_deleted) == (2, 3, 1)
    assert len(res.snapshot_ids) >= 1 and t.snapshots()[1].id == res.snapshot_ids[0]


def test_merge_target_row_matched_twice_is_an_error(tmp_path):
    t = create(None, tmp_path, "dedup")
    t.write(table_of([{"id": 1, "p": "a", "qty": 1, "name": "t"}]))
    dup = pa.table({"id": [1, 1], "qty": [5, 6]})
    with pytest.raises(tidelake.InvalidArgumentError, match="several source rows"):
        t.merge(dup, on="id").when_matched_update({"qty": "source.qty"}).execute()
    assert len(t.snapshots()) == 1


def test_dml_errors_are_typed(tmp_path):
    t = create(None, tmp_path, "dedup")
    t.write(table_of([{"id": 1, "p": "a", "qty": 1, "name": "t"}]))
    with pytest.raises(tidelake.UnsupportedError, match="primary-key"):
        t.update({"id": 5})
    with pytest.raises(tidelake.InvalidArgumentError, match="cannot parse"):
        t.delete("qty <")
    with pytest.raises(tidelake.InvalidArgumentError, match="unknown column 'nope'"):
        t.delete("nope = 1")
    with pytest.raises(tidelake.InvalidArgumentError, match="ambiguous"):
        t.merge(pa.table({"id": [1], "qty": [1]}), on="id").when_matched_update({"qty": "qty + 1"}).execute()
    p = tidelake.create_table(str(tmp_path / "pu"), SCHEMA, primary_keys=["id", "p"],
                              options={"merge-engine": "partial-update"})
    with pytest.raises(tidelake.UnsupportedError, match="remove-record-on-delete"):
        p.delete("qty > 1")
    p.write(table_of([{"id": 1, "p": "a", "qty": 1, "name": "t"}]))
    with pytest.raises(tidelake.UnsupportedError, match="nulls keep the current value"):
        p.update({"name": None})
    with pytest.raises(tidelake.UnsupportedError, match="nulls keep the current value"):
        p.merge(pa.table({"id": [1], "p": ["a"], "name": pa.array([None], pa.string())}), on=["id", "p"]) \
            .when_matched_update({"name": "source.name"}).execute()
    assert p.to_arrow().to_pylist()[0]["name"] == "t"
    agg = tidelake.create_table(str(tmp_path / "agg"), SCHEMA, primary_keys=["id", "p"],
                                options={"merge-engine": "aggregation"})
    with pytest.raises(tidelake.UnsupportedError, match="aggregation"):
        agg.update({"qty": 1})
    assert len(t.snapshots()) == 1


@pytest.mark.parametrize("options", [
    {"ignore-delete": "true"},
    {"deduplicate.ignore-delete": "TRUE"},
    {"first-row.ignore-delete": "true"},
    {"merge-engine": "Partial-Update", "partial-update.ignore-delete": "true"},
], ids=["plain", "deduplicate", "first-row", "partial-update"])
def test_a_delete_the_table_would_ignore_is_refused(tmp_path, options):
    """``ignore-delete`` under any of the keys Paimon reads for it (case-insensitive values and
    engine names): a delete or a merge's delete is refused, never acknowledged and dropped."""
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["id", "p"], options=options)
    t.write(table_of([{"id": 1, "p": "a", "qty": 1, "name": "t"}, {"id": 2, "p": "a", "qty": 2, "name": "u"}]))
    with pytest.raises(tidelake.UnsupportedError, match="ignores deletes"):
        t.delete([("id", "=", 2)])
    with pytest.raises(tidelake.UnsupportedError, match="ignores deletes"):
        t.merge(pa.table({"id": [2], "p": ["a"]}), on=["id", "p"]).when_matched_delete().execute()
    with pytest.raises(tidelake.UnsupportedError, match="ignores deletes"):
        t.delete_keys(pa.table({"id": pa.array([2], pa.int64()), "p": ["a"]}))
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2]
    assert len(t.snapshots()) == 1
    t.update({"qty": 7}, filter=[("id", "=", 1)])  # what the table can take still works
    assert {r["id"]: r["qty"] for r in t.to_arrow().to_pylist()} == {1: 7, 2: 2}


def test_dml_reads_only_pruned_files(tmp_path):
    """A delete, update or merge touches the files that can hold its rows: the other
    partition's file stays, and its rows are never read (a corrupt file there is not hit)."""
    t = create(None, tmp_path, "append")
    t.write(table_of([{"id": i, "p": "a", "qty": i, "name": "x"} for i in range(5)]))
    t.write(table_of([{"id": i, "p": "b", "qty": i, "name": "x"} for i in range(5)]))
    b_files = [f for f in t.system("files").to_pylist() if f["partition"] and "b" in str(f["partition"])]
    for f in b_files:
        path = os.path.join(t.path, f["file_path"]) if not os.path.isabs(f["file_path"]) else f["file_path"]
        with open(path, "wb") as out:
            out.write(b"not parquet")
    res = t.delete([("p", "=", "a"), ("qty", "<", 2)])
    assert (res.rows_deleted, res.files_removed, res.files_added) == (2, 1, 1)
    res = t.update({"name": "'y'"}, "p = 'a' AND qty = 4")
    assert res.rows_updated == 1
    # a merge reads the target rows with the source's key values only
    src = table_of([{"id": 3, "p": "a", "qty": 30, "name": "m"}, {"id": 9, "p": "a", "qty": 9, "name": "m"}])
    res = t.merge(src, on=["id", "p"]).when_matched_update("*").when_not_matched_insert("*").execute()
    assert (res.rows_updated, res.rows_inserted) == (1, 1)
    with pytest.raises(tidelake.TidelakeError):  # the corrupt files were there all along
        t.delete("p = 'b'")


def test_partitions_restrict_a_dml(tmp_path):
    t = create(None, tmp_path, "dedup")
    t.write(table_of([{"id": i, "p": p, "qty": i, "name": "x"} for i in range(4) for p in "ab"]))
    res = t.update({"name": "'y'"}, "qty >= 2", partitions=[{"p": "b"}])
    assert res.rows_updated == 2
    assert sorted((r["p"], r["id"]) for r in t.to_arrow().to_pylist() if r["name"] == "y") == [("b", 2), ("b", 3)]


def _prepare_task(path: str, snapshot: int, partition: str, out) -> None:
    from tidelake import dml

    t = tidelake.open_table(path)
    out.put(dml.prepare_update(t, {"qty": "qty + 100"}, "qty < 3", snapshot, partitions=[{"p": partition}]))


@pytest.mark.parametrize("kind", ["append", "append-dv-fixed", "dedup"])
def test_prepared_changes_of_tasks_commit_as_one(tmp_path, kind):
    """A distributed update: each task (a process) prepares its partitions' share from one
    snapshot, the driver commits every share in one snapshot, exactly once; a conflicting commit
    in between makes the commit fail with nothing landed and no file left behind."""
    import time

    from tidelake import dml

    t = create(None, tmp_path, kind)
    t.write(table_of([{"id": i, "p": p, "qty": i, "name": "x"} for i in range(5) for p in "ab"]))
    snap = t.latest_snapshot().id
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_prepare_task, args=(t.path, snap, p, q)) for p in "ab"]
    for p in procs:
        p.start()
    changes = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert len(t.snapshots()) == 1 and sum(c.rows_updated for c in changes) == 6
    res = dml.commit_changes(t, changes, commit_user="job", commit_identifier=7)
    assert res.rows_updated == 6 and len(t.snapshots()) == 1 + len(res.snapshot_ids)
    assert not dml.commit_changes(t, changes, commit_user="job", commit_identifier=7)  # a retried driver
    assert sorted(r["qty"] for r in t.to_arrow().to_pylist()) == sorted([100, 101, 102, 3, 4] * 2)

    again = [dml.prepare_delete(t, "qty >= 100", t.latest_snapshot().id, partitions=[{"p": p}]) for p in "ab"]
    if kind.startswith("append"):
        t.delete("p = 'a' AND qty = 3")  # changes a file (or its vector) the prepared delete changes too
    else:
        t.upsert(table_of([{"id": 0, "p": "a", "qty": 5, "name": "late"}]))  # a key the delete saw
    before = len(t.snapshots())
    with pytest.raises(tidelake.CommitConflictError):
        dml.commit_changes(t, again)
    assert len(t.snapshots()) == before
    orphans = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)
    assert orphans == []


# ---- concurrency ----------------------------------------------------------------------------------

def _appender(path: str, start: int, n: int, out) -> None:
    t = tidelake.open_table(path)
    acked = []
    for i in range(start, start + n):
        t.write(table_of([{"id": i, "p": "a", "qty": 1, "name": "w"}]))
        acked.append(i)
    out.put(acked)


def _dml_loop(path: str, n: int, out) -> None:
    t = tidelake.open_table(path)
    done = 0
    for i in range(n):
        try:
            t.update({"qty": "qty + 1"}, "name = 'base'")
            t.delete(f"name = 'base' AND id = {i}")
            done += 1
        except tidelake.CommitConflictError:
            pass
    out.put(done)


def race(targets: list[tuple]) -> list:
    """Run each (function, args) in its own process (each puts one result on the queue given as
    its last argument); their results, once all exited cleanly."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=f, args=(*args, q)) for f, args in targets]
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


@pytest.mark.parametrize("kind", ["append", "dedup"])
def test_dml_racing_a_writer_keeps_acknowledged_rows(tmp_path, kind):
    t = create(None, tmp_path, kind)
    t.write(table_of([{"id": 1000 + i, "p": "a", "qty": 0, "name": "base"} for i in range(20)]))
    results = race([(_appender, (t.path, 0, 15)), (_dml_loop, (t.path, 8))])
    acked = next(r for r in results if isinstance(r, list))
    rows = t.refresh().to_arrow().to_pylist()
    written = sorted(r["id"] for r in rows if r["name"] == "w")
    assert written == acked == list(range(15))
    assert all(r["qty"] == 1 for r in rows if r["name"] == "w")  # never touched by the update


def test_a_rewrite_through_a_handle_older_than_the_files_schema_is_refused(tmp_path):
    """Another process adds a column and appends rows with it: an update through a handle opened
    before would write those rows again without the column; it is refused as a conflict, and
    the refreshed handle updates them keeping it."""
    t = create(None, tmp_path, "append")
    old = tidelake.open_table(t.path)
    other = tidelake.open_table(t.path)
    other.add_column("note", pa.string())
    other.write(pa.table({"id": [1], "p": ["a"], "qty": [0], "name": ["n"], "note": ["kept"]}))
    with pytest.raises(tidelake.CommitConflictError, match="newer than the schema 0 of this change"):
        old.update({"qty": 5}, "id = 1")
    assert [(r["qty"], r["note"]) for r in tidelake.open_table(t.path).to_arrow().to_pylist()] == [(0, "kept")]
    assert old.refresh().update({"qty": 5}, "id = 1").rows_updated == 1
    assert [(r["qty"], r["note"]) for r in tidelake.open_table(t.path).to_arrow().to_pylist()] == [(5, "kept")]


def test_update_computed_before_a_concurrent_write_is_redone(tmp_path, monkeypatch):
    """A write acknowledged between the DML's read and its commit, with lower sequence numbers
    than the DML's (its writer numbered its rows before another commit raised them), must not be
    overwritten by an update computed without it: the commit conflicts and the update is redone."""
    from tidelake import dml

    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["id", "p"], bucket=1)
    t.write(table_of([{"id": i, "p": "a", "qty": 0, "name": "x"} for i in range(1, 6)]))
    early = t.writer()
    early.write(table_of([{"id": 3, "p": "a", "qty": 50, "name": "early"}]))  # numbered now
    t.write(table_of([{"id": i, "p": "a", "qty": 0, "name": "x"} for i in range(6, 16)]))  # raises the numbers
    real_commit = dml._commit
    attempts = []

    def commit_after_the_concurrent_write(table, changes, *args):
        if not attempts:
            t.commit(early.prepare_commit())  # acknowledged after the DML read
            early.close()
        attempts.append(changes[0].read_snapshot)
        return real_commit(table, changes, *args)

    monkeypatch.setattr(dml, "_commit", commit_after_the_concurrent_write)
    res = t.update({"qty": "qty + 1"}, "qty < 10")
    assert len(attempts) == 2 and attempts[1] > attempts[0]
    got = {r["id"]: (r["qty"], r["name"]) for r in t.to_arrow().to_pylist()}
    assert got[3] == (50, "early")
    assert all(got[i] == (1, "x") for i in got if i != 3) and res.rows_updated == 14


@pytest.mark.parametrize("dv", [False, True], ids=["rewrite", "deletion-vectors"])
def test_append_rewrite_conflicting_with_a_compaction_is_redone(tmp_path, monkeypatch, dv):
    """A compaction that removed the files a delete rewrites (or marks in their deletion
    vectors) lands first: the delete's commit conflicts (its files are discarded) and it is
    redone on the compacted files."""
    from tidelake import dml

    options = {"bucket-key": "id", **({"deletion-vectors.enabled": "true"} if dv else {})}
    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, bucket=1, options=options)
    for i in range(4):
        t.write(table_of([{"id": i * 10 + j, "p": "a", "qty": j, "name": "x"} for j in range(10)]))
    if dv:
        t.delete("qty = 0")  # the files carry vectors: the compaction rewrites them
    real_commit = dml._commit
    attempts = []

    def commit_after_a_compaction(table, changes, *args):
        if not attempts:
            assert t.compact(full=True) is not None
        attempts.append(changes[0].read_snapshot)
        return real_commit(table, changes, *args)

    monkeypatch.setattr(dml, "_commit", commit_after_a_compaction)
    res = t.delete("qty >= 5")
    assert len(attempts) == 2 and res.rows_deleted == 20
    kept = range(1 if dv else 0, 5)
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [i * 10 + j for i in range(4) for j in kept]
    import time

    orphans = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True)
    assert orphans == []  # the lost attempt's files were discarded


def _dv_dml_loop(path: str, n: int, out) -> None:
    """Deletes one base row and bumps every base row per round; reports what was acknowledged."""
    t = tidelake.open_table(path)
    deleted, updates = [], 0
    for i in range(n):
        try:
            t.update({"qty": "qty + 1"}, "name = 'base'")
            updates += 1
        except tidelake.CommitConflictError:
            pass
        try:
            if t.delete(f"name = 'base' AND id = {1000 + i}").rows_deleted == 1:
                deleted.append(1000 + i)
        except tidelake.CommitConflictError:
            pass
    out.put(("dml", deleted, updates))


def _compactor(path: str, n: int, out) -> None:
    t = tidelake.open_table(path)
    done = 0
    for i in range(n):
        try:
            done += t.compact(full=i % 2 == 0) is not None
        except tidelake.CommitConflictError:
            pass
    out.put(("compact", done))


@pytest.mark.parametrize("kind", ["append-dv", "append-dv-fixed"])
def test_dv_dml_racing_appends_and_compactions_loses_nothing(tmp_path, kind):
    """Deletes and updates by deletion vector race an appender and a compactor (processes): every
    acknowledged append is there, every acknowledged delete gone, and each surviving base row was
    bumped exactly once per acknowledged update (a lost or doubled vector would show)."""
    t = create(None, tmp_path, kind)
    t.write(table_of([{"id": 1000 + i, "p": "ab"[i % 2], "qty": 0, "name": "base"} for i in range(20)]))
    results = race([(_appender, (t.path, 0, 12)), (_dv_dml_loop, (t.path, 8)), (_compactor, (t.path, 8))])
    acked = next(r for r in results if isinstance(r, list))
    _, deleted, updates = next(r for r in results if isinstance(r, tuple) and r[0] == "dml")
    rows = t.refresh().to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows if r["name"] == "w") == acked == list(range(12))
    assert all(r["qty"] == 1 for r in rows if r["name"] == "w")
    base = sorted((r["id"], r["qty"]) for r in rows if r["name"] == "base")
    assert base == [(1000 + i, updates) for i in range(20) if 1000 + i not in deleted]
    assert updates > 0 and deleted


def test_append_dml_with_deletion_vectors_removes_no_file(tmp_path):
    """On an append table with deletion vectors a delete or update rewrites no data file: it
    writes deletion vectors (merged with the file's existing one on the next change), an update
    adds the new rows; a compaction then applies the vectors."""
    t = create(None, tmp_path, "append-dv-fixed")
    t.write(table_of([{"id": i, "p": "ab"[i % 2], "qty": i, "name": "x"} for i in range(40)]))
    files = {f["file_path"] for f in t.system("files").to_pylist()}
    res = t.delete("qty < 10")
    assert (res.rows_deleted, res.files_removed, res.files_added) == (10, 0, 0)
    res = t.update({"name": "'u'"}, "qty >= 30")
    assert (res.rows_updated, res.files_removed) == (10, 0) and res.files_added > 0
    res = t.delete("qty = 20 OR qty = 11")  # files that already carry a vector
    assert (res.rows_deleted, res.files_removed) == (2, 0)
    assert files <= {f["file_path"] for f in t.system("files").to_pylist()}
    want = sorted((i, "u" if i >= 30 else "x") for i in range(10, 40) if i not in (11, 20))
    assert sorted((r["id"], r["name"]) for r in t.to_arrow().to_pylist()) == want
    index = [e for e in os.listdir(os.path.join(t.path, "index")) if e.startswith("index-")]
    assert index  # the vectors are index files
    t.compact(full=True)
    assert sorted((r["id"], r["name"]) for r in t.to_arrow().to_pylist()) == want
    assert not files & {f["file_path"] for f in t.system("files").to_pylist()}


# ---- other readers ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(KINDS))
def test_java_and_pypaimon_read_dml_results(java, tmp_path, kind):  # noqa: F811
    cat, wh = new_warehouse(tmp_path / "wh")
    kw = KINDS[kind]
    t = cat.create_table("db.t", SCHEMA, kw.get("primary_keys"), kw.get("partition_keys"), kw.get("bucket"),
                         kw.get("options"))
    t.write(table_of([{"id": i, "p": "ab"[i % 2], "qty": i, "name": "x"} for i in range(20)]))
    t.delete("qty < 3")
    t.update({"name": "'u'", "qty": "qty * 2"}, [("p", "=", "a")])
    (t.merge(table_of([{"id": i, "p": "b", "qty": 1, "name": "m"} for i in range(15, 25)]), on=["id", "p"])
     .when_matched_update("*").when_not_matched_insert("*").execute())
    if kind == "partial":  # a row deleted, then partially written again: its other columns are gone
        t.delete([("id", "=", 5)])
        t.upsert(pa.table({"id": pa.array([5], pa.int64()), "p": ["b"], "qty": pa.array([50], pa.int64())}),
                 partial=True)
        assert [r for r in t.to_arrow().to_pylist() if r["id"] == 5] == [{"id": 5, "p": "b", "qty": 50, "name": None}]
    # pypaimon 2.1 refuses partial-update.remove-record-on-delete (NotImplementedError): Java only
    compare_read(java, t, wh, kind, pypaimon=kind != "partial")


# ---- SQL expressions ----------------------------------------------------------------------------

def test_sql_expressions_evaluate_as_sql(tmp_path):
    import datetime as dt

    schema = pa.schema([("id", pa.int32()), ("d", pa.date32()), ("s", pa.string()), ("x", pa.float64())])
    t = tidelake.create_table(str(tmp_path / "t"), schema)
    t.write(pa.table({"id": [1, 2, 3, 4], "d": [dt.date(2024, 5, i) for i in (1, 2, 3, 4)],
                      "s": ["ab", None, "cd", "ef"], "x": [1.5, 2.5, None, 4.0]}, schema=schema))
    res = t.update({"s": "CASE WHEN id = 1 THEN 'one' WHEN x > 2 THEN s || '!' ELSE COALESCE(s, 'none') END",
                    "x": "CAST(id AS DOUBLE) * 10 + COALESCE(x, 0)"},
                   "d BETWEEN '2024-05-01' AND '2024-05-03' AND (s IS NULL OR s LIKE '%b' OR id IN (3))")
    assert res.rows_updated == 3
    got = {r["id"]: (r["s"], r["x"]) for r in t.to_arrow().to_pylist()}
    assert got == {1: ("one", 11.5), 2: (None, 22.5), 3: ("cd", 30.0), 4: ("ef", 4.0)}
    # NULL || '!' is NULL, as in SQL (row 2: x > 2, s NULL)
    assert t.delete("NOT (d >= '2024-05-02') OR x IS NULL").rows_deleted == 1
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [2, 3, 4]
    with pytest.raises(tidelake.InvalidArgumentError, match="cannot be read as date32"):
        t.delete("d = 'yesterday'")
    with pytest.raises(tidelake.InvalidArgumentError, match="not supported"):
        t.delete("id IN (SELECT 1)")


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_dml_filters_on_a_column_added_since_the_latest_commit(tmp_path, kind):
    """The latest snapshot is read in the latest schema (as Paimon reads it): a column added
    after it reads as null and can be filtered and set before anything was written with it."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    layout = {"primary_keys": ["id"], "bucket": 1} if kind == "pk" else {}
    t = tidelake.create_table(str(tmp_path / kind), schema, **layout)
    t.write(pa.Table.from_pylist([{"id": i, "v": f"v{i}"} for i in range(4)], schema=schema))
    t.add_column("c", pa.int64())
    assert t.update({"c": "id * 10"}, "c is null and id < 2").rows_updated == 2
    assert t.delete("c is null and id = 3").rows_deleted == 1
    assert sorted((r["id"], r["c"]) for r in tidelake.open_table(t.path).to_arrow().to_pylist()) == [
        (0, 0), (1, 10), (2, None)]


# ---- DML selects the rows a read selects ------------------------------------------------------------

AGREE_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.float64()), ("s", pa.string()),
                          ("d", pa.decimal128(10, 2))])
AGREE_FILTERS = [
    [("x", ">", 0.0)],            # NaN is greater than every number in Java's (and the engine's) order
    [("x", "<", 1.0)],
    [("x", "!=", 1.5)],           # null never matches; NaN does
    [("x", "=", float("nan"))],
    [("s", "not in", ["a", "b"])],
    [("d", ">=", Decimal("1.01"))],
    [("d", "<", Decimal("1"))],
    [[("x", "is_null")], [("s", "=", "bb")]],
]


@pytest.mark.parametrize("kind", ["append", "append-dv", "dedup"])
@pytest.mark.parametrize("flt", AGREE_FILTERS, ids=[str(f) for f in AGREE_FILTERS])
def test_a_delete_removes_exactly_the_rows_a_read_with_its_filter_returns(tmp_path, kind, flt):
    """Filters over plain columns are evaluated by the engine's predicate in DML as in reads,
    so nulls, NaN and casts select the same rows."""
    options = {k: v for k, v in KINDS[kind].items() if k != "partition_keys"}
    if kind == "dedup":
        options = {"primary_keys": ["id"], "bucket": 1}
    t = tidelake.create_table(str(tmp_path / "t"), AGREE_SCHEMA, **options)
    xs = [1.0, -2.0, float("nan"), None, 1.5, 0.5]
    ss = ["a", "b", None, "bb", "c", "a"]
    ds = [Decimal("1.00"), Decimal("0.50"), None, Decimal("2.25"), Decimal("0.99"), Decimal("1.01")]
    t.write(pa.table({"id": list(range(6)), "x": xs, "s": ss, "d": ds}, schema=AGREE_SCHEMA))
    selected = sorted(t.to_arrow(filter=flt)["id"].to_pylist())
    result = t.delete(filter=flt)
    assert result.rows_deleted == len(selected)
    assert sorted(t.to_arrow()["id"].to_pylist()) == sorted(set(range(6)) - set(selected))
