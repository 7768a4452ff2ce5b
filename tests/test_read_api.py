"""The read API beyond the fixture expectations: stubs, projection, every filter form (checked
against pyarrow applying the same filter to the unfiltered read), pyarrow Expressions, splits
across processes, polars, GIL release and time travel. Filters, splits, changes and time travel
also run on a copy of the fixture tables on the S3 server (``stored`` fixture)."""

from __future__ import annotations

import ast
import datetime as dt
import importlib.metadata
import inspect
import json
import math
import multiprocessing
import pathlib
import pickle
import subprocess
import sys
import threading
import time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tidelake
from tidelake import _internal
from _s3 import Storage
from conftest import FIXTURES, REPO, assert_same_rows, fixture_tables

WAREHOUSE = FIXTURES / "warehouse" / "fx.db"
STUB = pathlib.Path(tidelake.__file__).with_name("_internal.pyi")


def open_fx(name: str) -> tidelake.Table:
    return tidelake.open_table(WAREHOUSE / name)


@pytest.fixture
def stored(storage: Storage):
    """Opens a copy of a fixture table on local storage or on the S3 server."""

    def open_(name: str) -> tidelake.Table:
        return tidelake.open_table(storage.copy_in(WAREHOUSE / name, name), storage_options=storage.options)

    return open_


# ---- stubs ------------------------------------------------------------------------------------


def _stub_module() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def _stub_classes() -> dict[str, ast.ClassDef]:
    """The public classes of the stub (private ones are typing helpers such as Protocols)."""
    return {n.name: n for n in _stub_module().body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")}


def _stub_members(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _decorators(fn: ast.FunctionDef) -> set[str]:
    return {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}


def test_stub_module_names_match_runtime():
    stub_names = set()
    for node in _stub_module().body:
        if isinstance(node, ast.ClassDef):
            stub_names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stub_names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            [target] = node.targets
            assert isinstance(target, ast.Name) and target.id.startswith("_"), \
                f"stub line {node.lineno}: only __all__ and private type aliases may be assigned"
            if target.id == "__all__":
                assert sorted(ast.literal_eval(node.value)) == sorted(_internal.__all__)
        elif isinstance(node, ast.FunctionDef):
            stub_names.add(node.name)
    assert _public(stub_names) == _public(dir(_internal))
    assert "__version__" in stub_names
    assert set(_internal.__all__) == _public(stub_names)


def test_version_is_the_package_version():
    assert isinstance(_internal.__version__, str)
    assert _internal.__version__ == tidelake.__version__ == importlib.metadata.version("tidelake")


def _check_params(where: str, fn: ast.FunctionDef, stub_params: list[ast.arg], runtime) -> None:
    """Stub parameters == runtime parameters: names, order, which are keyword-only, which have
    defaults and the defaults."""
    rt_params = [p for p in inspect.signature(runtime).parameters.values() if p.name != "self"]
    kwonly = fn.args.kwonlyargs
    assert [a.arg for a in [*stub_params, *kwonly]] == [p.name for p in rt_params], f"{where} parameters"
    assert [a.arg for a in kwonly] == [p.name for p in rt_params if p.kind is inspect.Parameter.KEYWORD_ONLY], \
        f"{where} keyword-only parameters"
    defaults = [None] * (len(stub_params) - len(fn.args.defaults)) + list(fn.args.defaults) + list(fn.args.kw_defaults)
    for arg, default, p in zip([*stub_params, *kwonly], defaults, rt_params):
        assert (default is not None) == (p.default is not inspect.Parameter.empty), f"{where}({arg.arg}) default"
        if default is not None:
            # pyo3 shows a non-literal Rust default (e.g. `Vec::new()`) as `...`; so does the stub.
            assert ast.literal_eval(default) == p.default, f"{where}({arg.arg}) default"
        assert arg.annotation is not None, f"{where}({arg.arg}) has no annotation"


@pytest.mark.parametrize("cls_name", sorted(_stub_classes()))
def test_stub_class_members_match_runtime(cls_name):
    stub_cls = _stub_classes()[cls_name]
    runtime_cls = getattr(_internal, cls_name)
    stub = {n: f for n, f in _stub_members(stub_cls).items() if not n.startswith("__")}
    runtime = {n: v for n, v in vars(runtime_cls).items() if not n.startswith("__")}
    assert set(stub) == set(runtime), f"{cls_name}: stub-only {set(stub) - set(runtime)}, " \
                                      f"runtime-only {set(runtime) - set(stub)}"
    # Constructible iff the stub declares __new__ (pyo3 #[new]), with the same parameters.
    new = _stub_members(stub_cls).get("__new__")
    if new is None:
        with pytest.raises(TypeError):
            runtime_cls()
    else:
        assert new.args.args[0].arg == "cls"
        _check_params(f"{cls_name}()", new, new.args.args[1:], runtime_cls)
    for name, fn in stub.items():
        value = runtime[name]
        decos = _decorators(fn)
        where = f"{cls_name}.{name}"
        if "property" in decos:
            assert inspect.isdatadescriptor(value) and not callable(value), f"{where} is not a getter"
            assert fn.returns is not None, f"{where} has no type"
            continue
        if "staticmethod" in decos:
            assert isinstance(value, staticmethod), f"{where} is not a staticmethod"
            _check_params(where, fn, fn.args.args, value)
        else:
            assert inspect.ismethoddescriptor(value), f"{where} is not a method"
            assert fn.args.args[0].arg == "self"
            _check_params(where, fn, fn.args.args[1:], value)
        assert fn.returns is not None, f"{where} has no return annotation"


def _conforms(value: Any, ann: ast.expr) -> bool:
    """Does ``value`` fit the stub annotation ``ann``? (The subset of typing the stub uses.)"""
    if isinstance(ann, ast.Constant) and ann.value is None:
        return value is None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _conforms(value, ann.left) or _conforms(value, ann.right)
    if isinstance(ann, ast.Name) and ann.id == "Any":
        return True
    if isinstance(ann, ast.Name):
        if ann.id in _stub_classes():
            return isinstance(value, getattr(_internal, ann.id))
        builtin = {"str": str, "int": int, "float": float, "bool": bool, "bytes": bytes}[ann.id]
        return isinstance(value, builtin) and (builtin is bool or not isinstance(value, bool))
    if isinstance(ann, ast.Attribute) and isinstance(ann.value, ast.Name) and ann.value.id == "pa":
        return isinstance(value, getattr(pa, ann.attr))
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name):
        args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if ann.value.id == "list":
            return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
        if ann.value.id == "tuple":
            return isinstance(value, tuple) and len(value) == len(args) and all(
                _conforms(v, a) for v, a in zip(value, args))
        if ann.value.id == "dict":
            return isinstance(value, dict) and all(
                _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items())
    raise AssertionError(f"annotation {ast.unparse(ann)} is not understood by this test")


class _Returns:
    """Checks values returned by the binding against the stub's annotations."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, cls_name: str, member: str, value: Any) -> Any:
        ann = _stub_members(_stub_classes()[cls_name])[member].returns
        assert _conforms(value, ann), f"{cls_name}.{member} returned {type(value).__name__}: " \
                                      f"{value!r:.200}, stub says {ast.unparse(ann)}"
        self.seen.add((cls_name, member))
        return value

    def read_members(self, raw: "_internal.RawTable") -> None:
        """Every read member of a RawTable / RawScan."""
        r = self
        r("RawTable", "location", raw.location)
        r("RawTable", "schema_version", raw.schema_version())
        r("RawTable", "arrow_schema", raw.arrow_schema())
        r("RawTable", "schema_versions", raw.schema_versions())
        r("RawTable", "snapshots", raw.snapshots())
        latest = r("RawTable", "latest_snapshot_id", raw.latest_snapshot_id())
        if latest is not None:
            r("RawTable", "snapshot", raw.snapshot(latest))
        r("RawTable", "snapshot_at", raw.snapshot_at(2**62))
        r("RawTable", "tags", raw.tags())
        scan = r("RawTable", "scan", raw.scan(columns=None, filter_json=None, snapshot_id=None, tag=None,
                                               timestamp_ms=None, batch_size=4, options=[]))
        splits = r("RawScan", "splits", scan.splits())
        r("RawScan", "snapshot_id", scan.snapshot_id)
        r("RawScan", "schema_id", scan.schema_id)
        r("RawScan", "arrow_schema", scan.arrow_schema())
        assert len(r("RawScan", "split_row_counts", scan.split_row_counts())) == len(splits)
        batches = r("RawScan", "batches", scan.batches())
        r("RawBatches", "arrow_schema", batches.arrow_schema())
        for batch in batches:
            assert isinstance(batch, pa.RecordBatch)
        r("RawScan", "to_table", scan.to_table())
        units = json.loads(r("RawScan", "native_units", scan.native_units()))
        files = [f for unit in units if unit["kind"] == "files" for f in unit["files"]]
        assert r("RawTable", "deleted_positions", raw.deleted_positions(json.dumps(files))).num_rows == 0
        tasks = r("RawScan", "packed_splits", scan.packed_splits())
        assert sorted(i for task in tasks for i in task) == list(range(len(splits)))
        assert _internal.pack_split_payloads(splits, 128 << 20, 4 << 20) == tasks  # the defaults
        for split in splits[:1]:
            r("RawScan", "read_split", scan.read_split(split))
            r("RawTable", "read_split", raw.read_split(split, scan.schema_id, columns=None, filter_json=None,
                                                        with_row_kind=False, batch_size=None))
        if latest is not None:
            r("RawTable", "changes", raw.changes(0, end_snapshot=None, columns=None, filter_json=None,
                                                 batch_size=None))


@pytest.mark.parametrize("table_name", ["time_travel", "pk_partitioned", "pk_first_row", "all_types"])
def test_stub_read_return_types_hold_at_runtime(table_name):
    returns = _Returns()
    raw = returns("RawTable", "open", _internal.RawTable.open(str(WAREHOUSE / table_name)))
    returns.read_members(raw)
    assert ("RawScan", "to_table") in returns.seen


def test_stub_return_types_hold_at_runtime(tmp_path):
    """Call every member of every class with real arguments and check each result's type."""
    r = _Returns()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string()),
                        pa.field("v", pa.float64())])
    cat = _internal.RawCatalog(str(tmp_path / "wh"))
    r("RawCatalog", "location", cat.location)
    r("RawCatalog", "create_database", cat.create_database("db", False))
    assert r("RawCatalog", "list_databases", cat.list_databases()) == ["db"]
    raw = r("RawCatalog", "create_table", cat.create_table("db.t", schema, ["id", "dt"], ["dt"], 2,
                                                            [("file.format", "parquet")], comment=None))
    assert r("RawCatalog", "list_tables", cat.list_tables("db")) == ["t"]
    raw = r("RawCatalog", "get_table", cat.get_table("db.t"))
    r.read_members(raw)  # an empty table

    writer = r("RawTable", "writer", raw.writer())
    data = pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [0.5, None, 2.0]}, schema=schema)
    r("RawWriter", "write", writer.write(data, "insert"))
    messages = r("RawWriter", "prepare_commit", writer.prepare_commit())
    assert r("RawTable", "filter_committed", raw.filter_committed("me", [1, 2])) == [1, 2]
    assert len(r("RawTable", "commit", raw.commit(messages, "me", 1, properties=[]))) == 1
    assert r("RawTable", "filter_committed", raw.filter_committed("me", [1, 2])) == [2]
    partitions = r("RawCatalog", "list_partitions", cat.list_partitions("db.t"))
    assert sorted((p["spec"]["dt"], p["record_count"]) for p in partitions) == [("a", 2), ("b", 1)]
    writer.write(data.slice(0, 1), "delete")
    ids = r("RawTable", "overwrite", raw.overwrite(writer.prepare_commit(), "me", 2, partition_json=None,
                                                    dynamic=True))
    assert len(ids) == 1
    r("RawWriter", "close", writer.close())
    other = raw.writer()
    buckets = r("RawWriter", "buckets", other.buckets(data, "upsert"))
    assert len(buckets) == 3 and all(0 <= b < 2 for b in buckets.to_pylist())
    other.write(data, "upsert")
    r("RawWriter", "abort", other.abort())
    spare = raw.writer()
    spare.write(data, "insert")
    payloads = spare.prepare_commit()
    partition, bucket = _internal.message_target(payloads[0])
    assert isinstance(partition, bytes) and isinstance(bucket, int)
    assert r("RawTable", "discard", raw.discard(payloads)) == len(payloads)

    raw = r("RawTable", "reload", raw.reload())
    r.read_members(raw)
    keys = pa.table({"dt": ["b", "a", "zz"], "id": [3, 2, 9]})
    found = r("RawTable", "lookup", raw.lookup(keys, columns=["v", "id"], snapshot_id=None))
    assert found.to_pylist() == [{"v": 2.0, "id": 3}]
    lookuper = r("RawTable", "lookuper", raw.lookuper(snapshot_id=None, cache_bytes=1 << 20))
    assert r("RawLookuper", "lookup", lookuper.lookup(keys, columns=None)).to_pylist() == [
        {"id": 3, "dt": "b", "v": 2.0}]
    assert 0 < r("RawLookuper", "cached_bytes", lookuper.cached_bytes) <= 1 << 20
    assert 0 < r("RawTable", "cached_bytes", raw.cached_bytes) <= 64 << 20  # the table's own cache
    assert r("RawLookuper", "snapshot_id", lookuper.snapshot_id) == r("RawLookuper", "refresh", lookuper.refresh())
    assert r("RawTable", "effective_options", raw.effective_options())["bucket"] == 2
    altered = r("RawTable", "alter", raw.alter([("set_option", "snapshot.num-retained.max", "50", None, None),
                                                ("add_column", "w", None, pa.field("w", pa.int32()), "last")]))
    assert altered.arrow_schema().names == ["id", "dt", "v", "w"]
    plan = r("RawTable", "compaction_plan", altered.compaction_plan(full=True, partitions_json=None))
    r("RawCompactionPlan", "snapshot_id", plan.snapshot_id)
    r("RawCompactionPlan", "moved_snapshot", plan.moved_snapshot)
    tasks = r("RawCompactionPlan", "tasks", plan.tasks())
    assert tasks, "the table has files to compact"
    results = [_internal.run_compaction_task(task, None) for task in tasks]
    (compacted,) = r("RawTable", "commit_compaction", altered.commit_compaction(plan, results))
    assert compacted["files_removed"] > 0 and compacted["rows_removed"] == compacted["rows_added"]
    r("RawTable", "compact", altered.compact(full=True, partitions_json=None))
    r("RawTable", "create_tag", altered.create_tag("t1", snapshot_id=None, time_retained_ms=None))
    r("RawTable", "system_table", altered.system_table("files"))
    assert r("RawTable", "history", altered.history()).num_rows == 3
    r("RawTable", "reset_consumer", altered.reset_consumer("c1", 1))
    assert r("RawTable", "consumers", altered.consumers()) == [("c1", 1)]
    r("RawTable", "delete_consumer", altered.delete_consumer("c1"))
    r("RawTable", "expire_partitions", altered.expire_partitions(expiration_ms=86_400_000))
    r("RawTable", "drop_partitions", altered.drop_partitions('[{"dt": "nope"}]'))
    r("RawTable", "mark_partition_done", altered.mark_partition_done('[{"dt": "a"}]'))
    r("RawTable", "unexisting_files", altered.unexisting_files())
    r("RawTable", "remove_unexisting_files", altered.remove_unexisting_files())
    r("RawTable", "compact_manifests", altered.compact_manifests())
    r("RawTable", "expire_snapshots", altered.expire_snapshots(retain_min=1, retain_max=None, older_than_ms=None,
                                                               max_deletes=None))
    r("RawTable", "expire_changelogs", altered.expire_changelogs(retain_min=None, retain_max=None,
                                                                 older_than_ms=None, max_deletes=None))
    r("RawTable", "remove_orphan_files", altered.remove_orphan_files(older_than_ms=None, dry_run=True))
    assert r("RawTable", "branch", altered.branch) == "main"
    r("RawTable", "create_branch", altered.create_branch("b1", snapshot_id=None, tag="t1"))
    assert r("RawTable", "branches", altered.branches()) == ["b1"]
    branch = _internal.RawTable.open(altered.location, storage_options=None, branch="b1")
    r("RawTable", "fast_forward", altered.fast_forward("b1")).reload()
    assert r("RawTable", "publish_branch", altered.publish_branch("b1")) == []  # main is b1 now
    assert branch.branch == "b1"
    r("RawTable", "delete_branch", altered.delete_branch("b1"))
    r("RawTable", "rollback_to", altered.rollback_to(snapshot_id=None, tag="t1"))
    damage = r("RawTable", "find_damage", altered.find_damage())
    assert damage["problems"] == [] and damage["last_good"] == damage["latest"]
    checked = r("RawTable", "verify", altered.verify())
    assert checked["violations"] == [] and checked["latest"] == damage["latest"]
    assert 0 < r("RawTable", "replay_wait", altered.replay_wait(0, 0)) < 1
    assert altered.replay_wait(5, 0) is None  # the 5 replays are spent
    one_shot = altered.writer()
    one_shot.write(pa.Table.from_pylist([{"id": 7, "dt": "c"}], schema=altered.arrow_schema()), "insert")
    assert len(r("RawWriter", "commit", one_shot.commit(altered, "one-shot"))) >= 1
    one_shot.close()
    assert r("RawTable", "expired_tags", altered.expired_tags()) == []  # t1 has no retention
    r("RawTable", "rename_tag", altered.rename_tag("t1", "t2"))
    replaced = altered.replace_tag("t2", snapshot_id=None, time_retained_ms=None)
    assert r("RawTable", "replace_tag", replaced)["name"] == "t2"
    r("RawTable", "delete_tag", altered.delete_tag("t2"))
    r("RawTable", "truncate", altered.truncate("me"))
    assert altered.reload().scan().to_table().num_rows == 0
    purged = r("RawTable", "purge_files", altered.purge_files())
    assert purged["snapshots_expired"] > 0 and purged["snapshot_id"] is not None

    created = r("RawTable", "create", _internal.RawTable.create(str(tmp_path / "plain"), schema, [], [], None, [],
                                                                comment="c"))
    reopened = r("RawTable", "open", _internal.RawTable.open(created.location, storage_options=None))
    assert r("RawTable", "storage_options", reopened.storage_options) == {}
    assert r("RawTable", "cross_partition_update", reopened.cross_partition_update) is False
    assert r("RawTable", "upsert_merge", reopened.upsert_merge) is None
    w = reopened.writer()
    w.write(data, "insert")
    committed = reopened.commit(w.prepare_commit(), "me", 1, properties=[])
    w.close()
    assert [(c["files_added"], c["rows_added"], c["rows_removed"]) for c in committed] == [(1, 3, 0)]
    # a row-level rewrite through the engine's tasks: plan, read, remove every row, commit
    snapshot, strategy, (task,) = r("RawTable", "plan_row_level", reopened.plan_row_level("delete", deletes=True))
    assert (snapshot, strategy) == (committed[-1]["snapshot_id"], "rewrite")
    raw_task = r("RawRowLevelTask", "from_bytes", _internal.RawRowLevelTask.from_bytes(task))
    assert r("RawRowLevelTask", "to_bytes", raw_task.to_bytes()) == task
    assert (r("RawRowLevelTask", "snapshot_id", raw_task.snapshot_id), r("RawRowLevelTask", "bucket", raw_task.bucket),
            r("RawRowLevelTask", "strategy", raw_task.strategy)) == (snapshot, 0, "rewrite")
    r("RawRowLevelTask", "total_buckets", raw_task.total_buckets)
    assert isinstance(r("RawRowLevelTask", "partition", raw_task.partition), bytes)
    change = r("RawTable", "row_level_change", reopened.row_level_change(snapshot))
    n = sum(b.num_rows for b in r("RawRowLevelChange", "read", change.read(task)))
    r("RawRowLevelChange", "remove", change.remove(pa.array([True] * n)))
    payload, read_snapshot, *counts = r("RawRowLevelChange", "finish", change.finish())
    assert read_snapshot == snapshot and counts == [0, 0, n] and n == 3
    r("RawTable", "prepared_change_messages", _internal.RawTable.prepared_change_messages(payload))
    removed, *_ = r("RawTable", "commit_row_level", reopened.commit_row_level([payload], "me", 2))
    assert [(c["files_removed"], c["rows_removed"], c["bytes_removed"]) for c in removed] == [
        (1, 3, committed[0]["bytes_added"])]
    assert r("RawTable", "sort_compact", reopened.sort_compact(["v"], "order", None)) is None  # no rows left
    dv = _internal.RawTable.create(str(tmp_path / "dv"), schema, [], [], None, [("deletion-vectors.enabled", "true")],
                                   comment=None)
    w = dv.writer()
    w.write(data, "insert")
    dv.commit(w.prepare_commit(), "me", 1, properties=[])
    w.close()
    snapshot, strategy, (task,) = dv.plan_row_level("update")
    assert strategy == "deletion-vectors"
    change = dv.row_level_change(snapshot)
    rows = pa.Table.from_batches(list(change.read(task)))
    assert rows.column("_ROW_POSITION").to_pylist() == [0, 1, 2]
    matched = r("RawRowLevelChange", "matching", change.matching(task, rows.drop_columns(["_FILE_INDEX",
                                                                                          "_ROW_POSITION"])))
    assert matched.column(0).to_pylist() == [True] * 3  # the plan has no filter
    change.remove(pa.array([False, True, False]))
    updated = rows.slice(1, 1).select(schema.names)
    r("RawRowLevelChange", "update", change.update(updated))
    r("RawRowLevelChange", "insert", change.insert(updated.slice(0, 0)))
    dv.commit_row_level([change.finish()[0]], "me", 2)
    assert sorted(dv.reload().scan().to_table().column("id").to_pylist()) == sorted(rows.column("id").to_pylist())
    r("RawRowLevelChange", "abort", dv.row_level_change(dv.latest_snapshot_id()).abort())
    pk = _internal.RawTable.create(str(tmp_path / "pk"), schema, ["id"], [], None, [("bucket", "1")], comment=None)
    w = pk.writer()
    w.write(data, "upsert")
    pk.commit(w.prepare_commit(), "me", 1, properties=[])
    rescaled = r("RawTable", "rescale", pk.rescale(1, None))
    assert pk.reload().snapshot(rescaled)["commit_kind"] == "OVERWRITE"
    assert r("RawTable", "rewrite_file_index", pk.rewrite_file_index(None)) is None  # no index asked for
    w.close()
    snapshot, _, (task,) = pk.plan_row_level("delete", deletes=True)
    change = pk.row_level_change(snapshot)
    first = pa.Table.from_batches(list(change.read(task))).slice(0, 1).select(schema.names)
    r("RawRowLevelChange", "delete_keys", change.delete_keys(first))
    pk.commit_row_level([change.finish()[0]], "me", 2)
    assert pk.reload().scan().to_table().num_rows == 2
    assert r("RawTable", "bucket_keys", raw.bucket_keys) == ["id"]
    places = r("RawTable", "row_places", raw.row_places(pa.table({"id": [1, 2], "dt": ["a", "a"]})))
    assert len({p for p, _ in places}) == 1 and all(0 <= b < 2 for _, b in places)
    changes = pa.table({"_row_kind": ["+I", "+I"], "id": [9, 1], "dt": ["c", "a"], "x": ["new", None]})
    evolved = r("RawTable", "cdc_evolve", reopened.cdc_evolve(changes.schema))
    assert evolved.arrow_schema().names == ["id", "dt", "v", "x"]
    cdc_writer = evolved.writer()
    cdc_writer.write(changes, "changelog")
    evolved.commit(cdc_writer.prepare_commit(), "me", 3, properties=[])  # after the DML commits 1 and 2
    cdc_writer.close()
    assert evolved.scan().to_table().column("x").to_pylist() == ["new", None]
    system, name = r("RawCatalog", "split_system_table", cat.split_system_table("db.t$snapshots"))
    assert r("RawCatalog", "global_system_table", cat.global_system_table("tables"))["table_name"].to_pylist() == ["t"]
    assert name == "snapshots" and system.location == raw.location
    assert r("RawTable", "commits_through_catalog", raw.commits_through_catalog) is False
    r("RawCatalog", "rename_table", cat.rename_table("db.t", "db.u"))
    cat.rename_table("db.u", "db.t")
    r("RawCatalog", "drop_table", cat.drop_table("db.t"))
    r("RawCatalog", "drop_database", cat.drop_database("db", False))

    jdbc = r("RawCatalog", "from_options", _internal.RawCatalog.from_options(
        [("metastore", "jdbc"), ("warehouse", str(tmp_path / "jwh")), ("uri", f"jdbc:sqlite:{tmp_path / 'c.db'}")]))
    assert ("metastore", "jdbc") in r("RawCatalog", "options", jdbc.options)
    assert r("RawCatalog", "lock_enabled", jdbc.lock_enabled) is False
    jdbc.create_database("jd", False, {"owner": "me"})
    r("RawCatalog", "alter_database", jdbc.alter_database("jd", {"k": "v"}, ["owner"]))
    props = r("RawCatalog", "database_properties", jdbc.database_properties("jd"))
    assert props.get("k") == "v" and "owner" not in props
    registered = jdbc.create_table("jd.t", schema, ["id", "dt"], ["dt"], 2, [], comment=None)
    assert r("RawTable", "commits_through_catalog", registered.commits_through_catalog) is False
    registered.create_branch("b2", snapshot_id=None, tag=None)
    assert r("RawTable", "open_branch", registered.open_branch("b2")).branch == "b2"
    assert r("RawCatalog", "clone_tables", jdbc.clone_tables(jdbc, "paimon", "jd", "t", "jd", "t_copy", [], [], [],
                                                           None)) == [("jd.t", "jd.t_copy", None)]

    every = {(c, m) for c, cls in _stub_classes().items() for m in _stub_members(cls) if not m.startswith("__")}
    # members that need a Hive Metastore: checked by tests/test_hive_migrate.py with _Returns
    with_metastore = {("RawCatalog", "migrate_table"), ("RawCatalog", "migrate_database")}
    assert every - r.seen - with_metastore == set(), "members not exercised"


# ---- projection --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,columns", [
    ("time_travel", ["n", "id"]),
    ("time_travel", ["v"]),
    ("pk_partitioned", ["id", "hr", "dt"]),
    ("pk_types", ["ts_ns", "k_date", "dec38_10", "k_str"]),
    ("all_types", ["nested", "mp", "id", "fbin", "st"]),
    ("schema_evolution", None),
])
def test_projection_keeps_the_requested_order(name, columns):
    table = open_fx(name)
    full = table.to_arrow()
    columns = columns or list(reversed(full.column_names))
    expected = full.select(columns)
    got = table.to_arrow(columns=columns)
    assert got.column_names == columns
    assert got.schema == expected.schema
    assert_same_rows(got, expected)
    reader = table.to_reader(columns=columns, batch_size=2)
    assert reader.schema.names == columns
    assert_same_rows(reader.read_all(), expected)
    scan = table.scan(columns=columns)
    assert scan.schema.names == columns
    assert_same_rows(pa.concat_tables([s.read().read_all() for s in scan.splits()]) if scan.splits()
                     else scan.to_arrow(), expected)


def test_projection_with_filter_on_an_unprojected_column():
    table = open_fx("time_travel")
    full = table.to_arrow()
    got = table.to_arrow(columns=["v"], filter=[("n", ">", 40)])
    assert_same_rows(got, full.filter(pc.field("n") > 40).select(["v"]))


# ---- DNF filters, checked against pyarrow ------------------------------------------------------


_COMPARE = {"=": pc.equal, "==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
            ">": pc.greater, ">=": pc.greater_equal}


def _term_mask(table: pa.Table, term) -> pa.ChunkedArray:
    """pyarrow's answer for one (col, op, value) term; NULL where SQL says unknown."""
    col, op = table.column(term[0]), term[1]
    value = term[2] if len(term) > 2 else None
    if op in _COMPARE:
        # A literal typed as the column, applied with compute kernels (not a bound Expression:
        # pyarrow 19 mis-compares decimal128(10,2) with a decimal(9,1) Expression literal).
        return _COMPARE[op](col, pa.scalar(value, type=col.type))
    if op in ("in", "not in"):
        hit = pc.is_in(col, value_set=pa.array(list(value), type=col.type))
        # SQL: NULL [NOT] IN (...) is unknown, so nulls never match either way.
        hit = pc.if_else(pc.is_valid(col), hit, pa.scalar(None, pa.bool_()))
        return hit if op == "in" else pc.invert(hit)
    if op == "is_null":
        return pc.is_null(col)
    if op == "is_not_null":
        return pc.is_valid(col)
    raise AssertionError(op)


def _is_term(x) -> bool:
    return isinstance(x, tuple) and isinstance(x[0], str)


def dnf_mask(table: pa.Table, filters) -> pa.ChunkedArray:
    """Which rows of ``table`` a DNF filter keeps, by pyarrow compute (nulls never match)."""
    if _is_term(filters):
        clauses = [[filters]]
    elif all(_is_term(t) for t in filters):
        clauses = [filters]
    else:
        clauses = filters
    out = None
    for clause in clauses:
        conj = None
        for t in clause:
            m = _term_mask(table, t)
            conj = m if conj is None else pc.and_kleene(conj, m)
        out = conj if out is None else pc.or_kleene(out, conj)
    return pc.fill_null(out, False)


def pyarrow_filter(table: pa.Table, filters) -> pa.Table:
    return table.filter(dnf_mask(table, filters))


def check_filter(table: tidelake.Table, filters, *, min_rows: int = 1, max_missing: int = 1) -> pa.Table:
    full = table.to_arrow()
    expected = pyarrow_filter(full, filters)
    got = table.to_arrow(filter=filters)
    assert_same_rows(got, expected)
    assert_same_rows(table.to_reader(filter=filters, batch_size=2).read_all(), expected)
    # Guard against vacuous cases: the filter must keep some rows and drop some.
    assert expected.num_rows >= min_rows, f"{filters} keeps {expected.num_rows} rows"
    assert expected.num_rows <= full.num_rows - max_missing, f"{filters} drops nothing"
    return got


TIME_TRAVEL_FILTERS = [
    ("n", ">=", 50),                                          # a single tuple
    [("n", ">=", 20), ("n", "<", 80)],                        # a conjunction
    [[("id", "<", 3)], [("id", ">", 10)]],                    # OR of ANDs
    [[("id", "<=", 4), ("n", ">", 10)], [("v", "=", "beta")], [("v", "==", "mu")]],
    [("id", "!=", 5)],
    [("v", "in", ["alpha", "beta", "日本"])],
    [("v", "not in", ["alpha", "beta", ""])],
    [("id", "in", [1, 2, 3, 100])],
    [("id", "not in", [1, 2, 3])],
    [("v", ">", "l")],
    [("v", "=", "")],
    [("n", "=", 24)],
]


@pytest.mark.parametrize("filters", TIME_TRAVEL_FILTERS, ids=repr)
def test_dnf_forms_match_pyarrow(filters, stored):
    check_filter(stored("time_travel"), filters)


def test_tuple_and_list_terms_are_equivalent(stored):
    table = stored("time_travel")
    a = table.to_arrow(filter=[("n", ">=", 20), ("id", "<", 9)])
    b = table.to_arrow(filter=[["n", ">=", 20], ["id", "<", 9]])
    c = table.to_arrow(filter=[[("n", ">=", 20), ("id", "<", 9)]])
    assert_same_rows(a, b)
    assert_same_rows(a, c)


def test_effective_options_resolve_paimon_defaults(tmp_path):
    """Table.effective_options: every option the engine interprets, typed, defaults applied
    (the CLI and Spark read defaults here instead of re-implementing them)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    pk = tidelake.create_table(str(tmp_path / "pk"), schema, primary_keys=["k"], bucket=2,
                               options={"snapshot.time-retained": "30 min", "num-sorted-run.compaction-trigger": "7",
                                        "sequence.field": "v,", "write-buffer-size": "64 mb"})
    o = pk.effective_options
    assert o["snapshot.time-retained"] == dt.timedelta(minutes=30)
    assert o["num-sorted-run.compaction-trigger"] == 7
    assert o["num-sorted-run.stop-trigger"] == 10  # trigger + 3
    assert o["sequence.field"] == ["v"]
    assert o["write-buffer-size"] == 64 << 20
    assert o["target-file-size"] == 128 << 20
    assert o["bucket"] == 2
    assert o["merge-engine"] == "deduplicate"
    assert o["deletion-vectors.enabled"] is False
    assert o["commit.timeout"] is None and o["rowkind.field"] is None
    append = tidelake.create_table(str(tmp_path / "append"), schema)
    assert append.effective_options["target-file-size"] == 256 << 20
    assert append.effective_options["partition.default-name"] == "__DEFAULT_PARTITION__"
    assert set(pk.options) < set(o)


def test_text_filters_compile_like_dnf(stored):
    """The text language (the CLI's --filter) is accepted by the API too: one compiler."""
    table = stored("time_travel")
    assert_same_rows(table.to_arrow(filter="n >= 20 AND id < 9"),
                     table.to_arrow(filter=[("n", ">=", 20), ("id", "<", 9)]))
    assert_same_rows(table.to_arrow(filter="id in (1, 3) or n is null"),
                     table.to_arrow(filter=[[("id", "in", [1, 3])], [("n", "is_null")]]))
    with pytest.raises(tidelake.InvalidArgumentError, match="expected a value at position 6"):
        table.to_arrow(filter="n >= and")


ALL_TYPES_FILTERS = [
    [("s", "is_null")],
    [("s", "is_not_null")],
    [("dec10_2", "is_null")],
    [("i8", ">", 0)],
    [("i16", "<", 0)],
    [("i64", ">=", 0)],
    [("f64", "<", -1000.0)],          # -inf matches; NaN does not (in IEEE and in Java order)
    [("f32", ">", 100.0)],            # +inf matches
    [("bool", "=", True)],
    [("bool", "!=", True)],
    [("s", ">=", "iota")],
    [("d", ">", dt.date(2023, 1, 1))],
    [("d", "<=", dt.date(1970, 1, 1))],
    [("d", "in", [dt.date(2024, 3, 28), dt.date(2022, 10, 18), dt.date(2000, 1, 1)])],
    [("ts_ms", ">=", dt.datetime(2024, 3, 1))],
    [("ts_us", "<", dt.datetime(2024, 2, 18, 12, 37, 10, 497875))],
    [("ts_us", "<=", dt.datetime(2024, 2, 18, 12, 37, 10, 497875))],
    [("ts_s", ">", dt.datetime(2030, 1, 1))],
    [("ltz_ms", ">", dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc))],
    [("ltz_us", "<", dt.datetime(2024, 3, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))))],
    [("dec10_2", ">", Decimal("50000000.5"))],
    [("dec10_2", "<=", Decimal("-30269744.97"))],
    [("dec38_10", "<", Decimal("0"))],
    [("dec38_10", ">=", Decimal("3655315880498136678207966193.8312199439"))],
    [("tm", ">", dt.time(9, 0, 0))],
    [[("d", "is_null")], [("ts_ns", "is_null"), ("i32", ">", 0)]],
    [("id", "not in", [1, 2]), ("s", "not in", ["alpha", "x y"])],
]


@pytest.mark.parametrize("filters", ALL_TYPES_FILTERS, ids=repr)
def test_typed_filters_match_pyarrow_all_types(filters):
    check_filter(open_fx("all_types"), filters)


# Floats at the edges: pyarrow (IEEE) says -0.0 == 0.0 and NaN compares false with everything.
# ENGINE BUG (or undecided semantics): tidelake evaluates these with Java's Double.compare order
# (NaN above +inf, -0.0 < 0.0), so its pyarrow-style filter disagrees with pyarrow on them.
# Float filters follow Paimon (Java Double.compare order), not IEEE: NaN equals NaN and is greater
# than every other value, and -0.0 sorts below (and is not equal to) +0.0.
JAVA_FLOAT_FILTERS = [
    ("f64", ">", 0.0),                # keeps the NaN row, which IEEE/pyarrow would drop
    ("f32", "<", 0),                  # keeps the -0.0 row
    ("f32", "=", 0.0),                # drops the -0.0 row
    ("f64", "<", float("inf")),
    ("f64", ">", float("-inf")),
    ("f64", "<", float("nan")),       # everything but NaN and nulls
    ("f64", "=", float("nan")),       # exactly the NaN rows
]


def java_float_key(x: float) -> tuple:
    """Sort key of Java's Double.compare: -0.0 < 0.0, NaN above +inf, NaN == NaN."""
    if math.isnan(x):
        return (2, 0.0)
    return (1, x, math.copysign(1.0, x))


def java_float_filter(full: pa.Table, column: str, op: str, value: float) -> pa.Table:
    compare = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "=": lambda a, b: a == b}[op]
    keep = [v is not None and compare(java_float_key(v), java_float_key(float(value)))
            for v in full.column(column).to_pylist()]
    return full.filter(pa.array(keep))


@pytest.mark.parametrize("term", JAVA_FLOAT_FILTERS, ids=repr)
def test_float_filters_follow_java_order(term):
    table = open_fx("all_types")
    full = table.to_arrow()
    expected = java_float_filter(full, *term)
    assert 0 < expected.num_rows < full.num_rows or term[1] == "="
    assert_same_rows(table.to_arrow(filter=[term]), expected)
    assert_same_rows(table.to_reader(filter=[term], batch_size=2).read_all(), expected)


PK_TYPES_FILTERS = [
    [("k_date", "=", dt.date(2024, 1, 2))],
    [("k_str", "in", ["a", "ü"]), ("k_int", "=", 1)],
    [("k_str", ">", "a")],
    [("ts_ns", ">", dt.datetime(2021, 7, 4, 21, 56, 15, 4100))],   # 21:56:15.004100200 is greater
    [("ts_ms", "<", dt.datetime(2024, 2, 10))],
    [("ltz_us", ">=", dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc))],
    [("dec10_2", "<", Decimal("0"))],
    [("dec38_10", "is_null")],
    [("bool", "is_null")],
    [("i16", "is_not_null"), ("f32", ">", -200.0)],
    [[("k_str", "=", "")], [("i8", "<", -60)]],
]


@pytest.mark.parametrize("filters", PK_TYPES_FILTERS, ids=repr)
def test_typed_filters_match_pyarrow_pk_types(filters):
    check_filter(open_fx("pk_types"), filters)


def _java_hides_level0(spec) -> bool:
    opts = spec["options"]
    dv = opts.get("deletion-vectors.enabled") == "true" and opts.get("deletion-vectors.merge-on-read") != "true"
    return dv or opts.get("merge-engine") == "first-row"


@pytest.mark.parametrize("spec", [t for t in fixture_tables() if t["kind"] == "primary-key"
                                  and not _java_hides_level0(t)], ids=lambda t: t["name"])
def test_pk_filters_apply_to_the_merged_row(spec):
    """A value filter must see the merged row, not individual (older) versions."""
    table = tidelake.open_table(FIXTURES / spec["path"])
    full = table.to_arrow()
    assert full.num_rows > 0
    checked = 0
    for name in full.column_names:
        col = full.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_string(col.type)) or col.null_count == len(col):
            continue
        values = sorted(v for v in col.to_pylist() if v is not None)
        pivot = values[len(values) // 2]
        for op in ("=", "<", ">="):
            flt = [(name, op, pivot)]
            assert_same_rows(table.to_arrow(filter=flt), pyarrow_filter(full, flt))
            checked += 1
    assert checked >= 3


# ---- pyarrow Expression filters ----------------------------------------------------------------


@pytest.mark.parametrize("name,expr,columns", [
    ("time_travel", pc.field("n") >= 50, None),
    ("time_travel", (pc.field("n") >= 20) & (pc.field("v") != "beta"), ["id", "v"]),
    ("time_travel", pc.field("v").is_null() | (pc.field("id") > 9), ["id"]),
    ("pk_types", pc.field("k_date") == pa.scalar(dt.date(2024, 1, 2)), ["k_str", "k_int"]),
    ("all_types", pc.field("dec10_2") > pa.scalar(Decimal("0.00"), pa.decimal128(10, 2)), None),
    ("all_types", pc.utf8_length(pc.field("s")) > 4, ["s"]),
    ("pk_bucket4", pc.bit_wise_and(pc.field("id"), 1) == 0, None),
])
def test_expression_filters_equal_pyarrow(name, expr, columns):
    table = open_fx(name)
    full = table.to_arrow()
    expected = full.filter(expr)
    if columns is not None:
        expected = expected.select(columns)
    assert 0 < expected.num_rows < full.num_rows
    got = table.to_arrow(columns=columns, filter=expr)
    assert got.column_names == expected.column_names
    assert_same_rows(got, expected)
    reader = table.to_reader(columns=columns, filter=expr, batch_size=2)
    assert isinstance(reader, pa.RecordBatchReader)
    assert_same_rows(reader.read_all(), expected)


def test_expression_filter_with_time_travel():
    table = open_fx("time_travel")
    expected = table.to_arrow(snapshot_id=2).filter(pc.field("n") > 30)
    assert_same_rows(table.to_arrow(snapshot_id=2, filter=pc.field("n") > 30), expected)
    assert_same_rows(table.to_arrow(tag="mid", filter=pc.field("n") > 30),
                     table.to_arrow(snapshot_id=3).filter(pc.field("n") > 30))


# ---- splits in other processes -----------------------------------------------------------------


def _read_split(split) -> pa.Table:
    """Runs in a spawned worker: import tidelake fresh, read one split."""
    return split.read().read_all()


@pytest.mark.parametrize("name,kwargs", [
    ("pk_partitioned", {}),
    ("append_partitioned", {"columns": ["yr", "id"], "filter": [("yr", ">=", 2024)]}),
    ("time_travel", {"tag": "mid"}),
])
def test_splits_pickle_and_read_in_spawned_processes(name, kwargs, spawn_pool, stored):
    table = stored(name)
    scan = table.scan(**kwargs)
    splits = scan.splits()
    assert len(splits) >= 2
    blobs = [pickle.dumps(s) for s in splits]
    assert all(pickle.loads(b) == s for b, s in zip(blobs, splits))
    parts = spawn_pool.map(_read_split, splits)
    assert sum(p.num_rows for p in parts) == scan.to_arrow().num_rows
    assert_same_rows(pa.concat_tables(parts), scan.to_arrow())
    assert_same_rows(scan.to_arrow(), table.to_arrow(**kwargs))


def test_change_scan_splits_read_in_spawned_processes(spawn_pool, stored):
    table = stored("pk_changelog_input")
    scan = table.changes_scan(0)
    parts = spawn_pool.map(_read_split, scan.splits())
    got = pa.concat_tables(parts)
    assert got.column_names[0] == "_row_kind"
    assert_same_rows(got, table.changes(0))


@pytest.fixture(scope="module")
def spawn_pool():
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        yield pool


# ---- polars ------------------------------------------------------------------------------------


def test_polars_consumes_a_scan():
    import polars as pl
    table = open_fx("pk_bucket4")
    scan = table.scan()
    expected = scan.to_arrow()
    via_reader = pl.from_arrow(pa.RecordBatchReader.from_stream(scan))
    assert via_reader.columns == expected.column_names
    assert_same_rows(via_reader.to_arrow(), expected, check_types=False)
    direct = pl.DataFrame(scan)  # the Arrow PyCapsule stream interface
    assert direct.shape == (expected.num_rows, expected.num_columns)
    assert sorted(direct.to_dicts(), key=repr) == sorted(expected.to_pylist(), key=repr)


# ---- GIL release -------------------------------------------------------------------------------


def _counter_moves_during(calls: int, fn) -> int:
    """Run ``fn`` ``calls`` times while a pure-Python thread counts; return in how many calls the
    counter advanced *during* the call.

    The counter gives the GIL back after every step (``sleep(0)``), so the caller gets it back
    at once; with a long switch interval the interpreter never forces a switch inside a call
    of a few ms, so the counter can only move during a call if that call releases the GIL.
    """
    counter = [0]
    stop = threading.Event()

    def count():
        n = 0
        while not stop.is_set():
            n += 1
            counter[0] = n
            time.sleep(0)

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.5)
    thread = threading.Thread(target=count, daemon=True)
    thread.start()
    try:
        time.sleep(0.01)
        moved = 0
        for _ in range(calls):
            before = counter[0]
            fn()
            moved += counter[0] > before
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)
    return moved


@pytest.mark.parametrize("how", ["to_arrow", "to_reader", "split"])
def test_reads_release_the_gil(how):
    table = open_fx("pk_partitioned")
    split = table.scan().splits()[0]
    read = {
        "to_arrow": lambda: table.to_arrow(),
        "to_reader": lambda: table.to_reader(batch_size=2).read_all(),
        "split": lambda: split.read().read_all(),
    }[how]
    read()  # warm up the runtime and the OS cache
    calls = 40
    moved = _counter_moves_during(calls, read)
    assert moved >= calls * 0.75, f"the counter thread ran during only {moved} of {calls} {how} calls"


def test_gil_probe_detects_a_gil_holding_call():
    """Control for the probe above: a call of similar length that holds the GIL is caught."""
    table = open_fx("pk_partitioned")
    start = time.perf_counter()
    table.to_arrow()
    budget = max(time.perf_counter() - start, 0.002)

    def hold_gil():
        end = time.perf_counter() + budget
        while time.perf_counter() < end:
            pass

    moved = _counter_moves_during(40, hold_gil)
    assert moved <= 10, f"the probe saw the counter move in {moved} of 40 GIL-holding calls"


# ---- reader threads ----------------------------------------------------------------------------


def _reader_threads() -> int:
    """Threads of this process that decode a streamed read (named by the Rust side)."""
    names = []
    for task in pathlib.Path("/proc/self/task").iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except FileNotFoundError:  # the thread ended while we looked
            pass
    return names.count("tidelake-read")


def _wait_for_reader_threads(n: int) -> int:
    deadline = time.monotonic() + 10
    while _reader_threads() != n and time.monotonic() < deadline:
        time.sleep(0.01)
    return _reader_threads()


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_stream_decodes_on_one_thread_that_ends_with_it(storage):
    """A streamed read of several splits decodes them all on one thread of its own (so its
    buffers stay in one malloc arena); the thread ends when the stream is exhausted, and when
    the reader is dropped half-way while the thread waits to hand over its next batch."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    t = storage.create_table("threads", schema, primary_keys=["id"], bucket=4)
    for ver in range(3):
        t.upsert(pa.table({"id": pa.array(range(0, 4000, ver + 1), pa.int64()),
                           "v": [f"{ver}-{i}" for i in range(0, 4000, ver + 1)]}, schema=schema))
    assert len(t.scan().splits()) == 4
    expected = t.to_arrow()
    assert _wait_for_reader_threads(0) == 0  # to_arrow() starts none

    reader = t.to_reader(batch_size=100)
    batches = [reader.read_next_batch()]
    assert _reader_threads() == 1
    batches.extend(reader)
    assert_same_rows(pa.Table.from_batches(batches, schema=expected.schema), expected)
    assert _wait_for_reader_threads(0) == 0, "the thread outlived its exhausted stream"

    abandoned = t.to_reader(batch_size=100)
    abandoned.read_next_batch()
    time.sleep(0.2)  # let the thread fill the channel and block on the next batch
    assert _reader_threads() == 1
    del abandoned
    assert _wait_for_reader_threads(0) == 0, "a dropped reader left its thread blocked"


# ---- time travel -------------------------------------------------------------------------------


def test_time_travel_by_tag_equals_the_tagged_snapshot(stored):
    table = stored("time_travel")
    tags = table.tags()
    assert [t.name for t in tags] == ["first", "mid"]
    for tag in tags:
        by_tag = table.to_arrow(tag=tag.name)
        assert_same_rows(by_tag, table.to_arrow(snapshot_id=tag.snapshot_id))
        assert table.scan(tag=tag.name).snapshot_id == tag.snapshot_id
    assert table.to_arrow(tag="first").num_rows != table.to_arrow().num_rows


def test_time_travel_by_timestamp_resolves_to_the_last_commit_at_or_before(stored):
    table = stored("time_travel")
    snaps = table.snapshots()
    assert len(snaps) == 5
    for prev, snap in zip([None] + snaps[:-1], snaps):
        assert table.scan(timestamp_ms=snap.time_millis).snapshot_id == snap.id
        assert_same_rows(table.to_arrow(timestamp_ms=snap.time_millis), table.to_arrow(snapshot_id=snap.id))
        if prev is not None:
            assert table.scan(timestamp_ms=snap.time_millis - 1).snapshot_id == prev.id
            assert_same_rows(table.to_arrow(timestamp_ms=snap.time_millis - 1),
                             table.to_arrow(snapshot_id=prev.id))
    assert table.scan(timestamp_ms=snaps[-1].time_millis + 10**9).snapshot_id == snaps[-1].id
    with pytest.raises(tidelake.TableNotFoundError):
        table.scan(timestamp_ms=snaps[0].time_millis - 1)


def test_time_travel_changes_between_tags_match_snapshot_difference(stored):
    table = stored("time_travel")
    first, mid = (t.snapshot_id for t in table.tags())
    changes = table.changes(first, mid)
    assert set(changes.column("_row_kind").to_pylist()) <= {"+I", "-U", "+U", "-D"}
    # Everything upserted between the tags is visible at `mid` with its latest value.
    at_mid = {r["id"]: r for r in table.to_arrow(snapshot_id=mid).to_pylist()}
    upserts = [r for r in changes.to_pylist() if r["_row_kind"] in ("+I", "+U")]
    assert upserts
    last = {}
    for r in upserts:
        last[r["id"]] = {k: v for k, v in r.items() if k != "_row_kind"}
    for key, row in last.items():
        assert at_mid[key] == row


# ---- static types ------------------------------------------------------------------------------


def test_enumerations_are_literal_types_for_type_checkers(tmp_path):
    """A misspelt mode is a type error (mypy --strict with the package's stubs), a right one is not."""
    snippet = tmp_path / "use.py"
    snippet.write_text(
        "import pyarrow as pa\n"
        "import tidelake\n"
        "t = tidelake.open_table('x')\n"
        "t.write(pa.table({'a': [1]}), mode='apend')\n"
        "t.changes(0, mode='diffs')\n"
        "tidelake.write_table('p', pa.table({'a': [1]}), mode='overwrite')\n"
        "t.write(pa.table({'a': [1]}), mode='overwrite')\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental", str(snippet)],
                         cwd=REPO, capture_output=True, text=True)
    errors = [ln for ln in out.stdout.splitlines() if ": error:" in ln]
    assert [int(ln.split(":")[1]) for ln in errors] == [4, 5], out.stdout
    assert all("Literal[" in ln for ln in errors), out.stdout
