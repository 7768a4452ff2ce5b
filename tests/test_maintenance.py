"""Maintenance: snapshot expiration, orphan files, tags, rollback, consumers, partition
expiration and system tables.

The central check is independent of tidelake's own metadata code: the set of files a table
references is recomputed here from the snapshot/tag JSON and the Avro manifests (fastavro),
and compared with the files on disk. After every operation of a random history (writes,
upserts, deletes, compactions, partition drops, tags, consumers, expirations, rollbacks) the
two sets must be equal — nothing referenced is missing, nothing unreferenced is left — and
every retained snapshot and tag must read exactly as it did when it was committed.
"""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys
import time
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidelake
from _peers import new_warehouse, pp_read
from _s3 import Storage, TableFiles
from conftest import assert_same_rows

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.int32()), ("v", pa.string())])
PROTECTED_DIRS = {"schema", "snapshot", "tag", "consumer"}


def now_ms() -> int:
    return int(time.time() * 1000)


# ---- the independent model of what a table references --------------------------------------------


def referenced_files(files: TableFiles) -> set[str]:
    """Names of every file the snapshots and tags of the table stored in ``files`` reference:
    manifest lists, manifests, index manifests and index files, statistics, live data files
    (with extra files) and changelog files."""
    roots = [json.loads(files.read(f)) for f in sorted(files.names())
             if f.startswith("snapshot/snapshot-") or f.startswith("tag/tag-")]
    names: set[str] = set()

    def _avro(name: str) -> list[dict[str, Any]]:
        return list(fastavro.reader(io.BytesIO(files.read(f"manifest/{name}"))))

    for snap in roots:
        live: dict[tuple, dict] = {}
        for key in ("baseManifestList", "deltaManifestList"):
            names.add(snap[key])
            for meta in _avro(snap[key]):
                names.add(meta["_FILE_NAME"])
                for e in _avro(meta["_FILE_NAME"]):
                    f = e["_FILE"]
                    ident = (e["_PARTITION"], e["_BUCKET"], f["_LEVEL"], f["_FILE_NAME"])
                    if e["_KIND"] == 0:
                        live[ident] = f
                    else:
                        live.pop(ident, None)
        for f in live.values():
            names.add(f["_FILE_NAME"])
            names.update(f["_EXTRA_FILES"])
        if snap.get("changelogManifestList"):
            names.add(snap["changelogManifestList"])
            for meta in _avro(snap["changelogManifestList"]):
                names.add(meta["_FILE_NAME"])
                names.update(e["_FILE"]["_FILE_NAME"] for e in _avro(meta["_FILE_NAME"]) if e["_KIND"] == 0)
        if snap.get("indexManifest"):
            names.add(snap["indexManifest"])
            names.update(e["_FILE_NAME"] for e in _avro(snap["indexManifest"]))
        if snap.get("statistics"):
            names.add(snap["statistics"])
    return names


def disk_files(files: TableFiles) -> set[str]:
    """Names of every stored file outside schema/, snapshot/, tag/ and consumer/."""
    return {rel.rsplit("/", 1)[-1] for rel in files.names() if rel.split("/", 1)[0] not in PROTECTED_DIRS}


def stored_text(t: tidelake.Table, rel: str) -> str:
    """The stored text of the table's file ``rel``."""
    return TableFiles.of(t).read(rel).decode()


def assert_files_match(t: tidelake.Table) -> None:
    files = TableFiles.of(t)
    on_disk, referenced = disk_files(files), referenced_files(files)
    assert not referenced - on_disk, f"referenced files are missing: {sorted(referenced - on_disk)}"
    assert not on_disk - referenced, f"unreferenced files are left: {sorted(on_disk - referenced)}"


# ---- a random history ----------------------------------------------------------------------------

KINDS = {
    "pk-fixed-changelog": dict(primary_keys=["k", "p"], partition_keys=["p"], bucket=2,
                               options={"changelog-producer": "input"}),
    "pk-dynamic": dict(primary_keys=["k", "p"], partition_keys=["p"], bucket=-1),
    "append": dict(partition_keys=["p"]),
}

rows = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1)), min_size=1, max_size=6)
ops = st.one_of(
    st.tuples(st.just("write"), rows),
    st.tuples(st.just("write"), rows),
    st.tuples(st.just("delete"), rows),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("drop_partition"), st.integers(0, 1)),
    st.tuples(st.just("tag"), st.integers(0, 30)),
    st.tuples(st.just("delete_tag"), st.integers(0, 30)),
    st.tuples(st.just("consumer"), st.integers(0, 30)),
    st.tuples(st.just("delete_consumer"), st.none()),
    st.tuples(st.just("expire"), st.tuples(st.integers(1, 4), st.integers(1, 6))),
    st.tuples(st.just("expire"), st.tuples(st.integers(1, 4), st.integers(1, 6))),
    st.tuples(st.just("rollback"), st.integers(0, 30)),
)


class History:
    """Runs operations on a table and remembers what each snapshot and tag read."""

    def __init__(self, t: tidelake.Table, kind: str) -> None:
        self.t, self.kind, self.counter = t, kind, 0
        self.snapshot_reads: dict[int, pa.Table] = {}
        self.tag_reads: dict[str, pa.Table] = {}

    def record(self) -> None:
        for s in self.t.snapshots():
            if s.id not in self.snapshot_reads:
                self.snapshot_reads[s.id] = self.t.to_arrow(snapshot_id=s.id)

    def pick(self, ids: list, n: int):
        return sorted(ids)[n % len(ids)] if ids else None

    def run(self, op: str, arg: Any) -> None:
        t = self.t
        if op == "write":
            self.counter += 1
            t.write(pa.table({"k": [k for k, _ in arg], "p": [p for _, p in arg],
                              "v": [f"v{self.counter}"] * len(arg)}, schema=SCHEMA))
        elif op == "delete" and self.kind != "append":
            t.delete_keys(pa.table({"k": [k for k, _ in arg], "p": [p for _, p in arg], "v": [None] * len(arg)},
                              schema=SCHEMA))
        elif op == "compact" and self.kind != "append":
            t.compact(full=arg)
        elif op == "drop_partition":
            t.drop_partitions([{"p": arg}])
        elif op == "tag":
            sid = self.pick([s.id for s in t.snapshots()], arg)
            name = f"tag{len(self.tag_reads)}-{arg}"
            if sid is not None and name not in self.tag_reads:
                t.create_tag(name, sid)
                self.tag_reads[name] = self.snapshot_reads[sid]
        elif op == "delete_tag":
            name = self.pick(list(self.tag_reads), arg)
            if name is not None:
                t.delete_tag(name)
                del self.tag_reads[name]
        elif op == "consumer":
            sid = self.pick([s.id for s in t.snapshots()], arg)
            if sid is not None:
                t.reset_consumer("reader", sid)
        elif op == "delete_consumer":
            t.delete_consumer("reader")
        elif op == "expire":
            retain_min, max_deletes = arg
            before = [s.id for s in t.snapshots()]
            consumer = t.consumers().get("reader")
            t.expire_snapshots(retain_min=retain_min, older_than_ms=now_ms() + 1, max_deletes=max_deletes)
            after = [s.id for s in t.snapshots()]
            if before:
                assert after[-1] == before[-1] and len(after) >= min(retain_min, len(before))
                assert len(before) - len(after) <= max_deletes
                if consumer is not None:
                    assert all(i in after for i in before if i >= consumer)
        elif op == "rollback":
            ids = [s.id for s in t.snapshots()]
            sid = self.pick(ids, arg)
            if sid is not None:
                t.rollback_to(snapshot_id=sid)
                for i in [i for i in self.snapshot_reads if i > sid]:
                    del self.snapshot_reads[i]
                for name in [n for n in self.tag_reads if n not in {x.name for x in t.tags()}]:
                    del self.tag_reads[name]
        self.record()

    def check(self) -> None:
        assert_files_match(self.t)
        for s in self.t.snapshots():
            assert_same_rows(self.t.to_arrow(snapshot_id=s.id), self.snapshot_reads[s.id])
        for tag in self.t.tags():
            assert_same_rows(self.t.to_arrow(tag=tag.name), self.tag_reads[tag.name])


def test_random_histories_keep_exactly_the_referenced_files(storage: Storage):
    @settings(max_examples=30 if storage.kind == "local" else 5, deadline=None)
    @given(kind=st.sampled_from(sorted(KINDS)), history=st.lists(ops, min_size=3, max_size=18))
    def run(kind, history):
        _random_history(tidelake.create_table(storage.fresh(), SCHEMA, storage_options=storage.options,
                                              **KINDS[kind]), kind, history)

    run()


def _random_history(t: tidelake.Table, kind: str, history) -> None:
    h = History(t, kind)
    for op, arg in history:
        h.run(op, arg)
        h.check()
    # Finally expire everything expirable and check again.
    t.delete_consumer("reader")
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1, max_deletes=1000)
    h.check()
    assert len(t.snapshots()) <= 1


# ---- expiration --------------------------------------------------------------------------------------


# Deterministic snapshot ids: no inline compaction after writes (tests that need compaction call
# `compact` themselves).
NO_INLINE = {"num-sorted-run.compaction-trigger": "100", "num-sorted-run.stop-trigger": "200"}


def pk_table(storage: Storage, name: str = "t", options: dict[str, str] | None = None, **kw: Any) -> tidelake.Table:
    return storage.create_table(name, SCHEMA, primary_keys=["k", "p"], bucket=kw.pop("bucket", 1),
                                 options={**NO_INLINE, **(options or {})}, **kw)


def _commits(t: tidelake.Table, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        t.write(pa.table({"k": [i % 3], "p": [i % 2], "v": [f"x{i}"]}, schema=SCHEMA))


def test_expiration_follows_the_table_options_and_writes_earliest(storage):
    t = pk_table(storage, "t")
    _commits(t, 12)
    # defaults: 10 retained at least, 1 h time retention: nothing is old enough
    assert t.expire_snapshots()["snapshots"] == 0
    assert stored_text(t, "snapshot/EARLIEST") == "1"
    result = t.expire_snapshots(older_than_ms=now_ms() + 1)
    assert result["snapshots"] == 2 and result["earliest_snapshot"] == 3
    assert [s.id for s in t.snapshots()] == list(range(3, 13))
    assert stored_text(t, "snapshot/EARLIEST") == "3"
    with pytest.raises(tidelake.InvalidArgumentError):
        t.expire_snapshots(retain_min=5, retain_max=4)
    with pytest.raises(tidelake.InvalidArgumentError):
        t.expire_snapshots(retain_min=0)
    # retain_max expires regardless of time; max_deletes bounds one run
    assert t.expire_snapshots(retain_min=1, retain_max=6, max_deletes=3)["snapshots"] == 3
    assert [s.id for s in t.snapshots()][0] == 6
    assert_files_match(t)


def test_writers_expire_after_commit_unless_write_only(storage):
    opts = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3", "snapshot.time-retained": "1 ms"}
    t = pk_table(storage, "t", options=opts)
    _commits(t, 6)
    assert [s.id for s in t.snapshots()] == [5, 6]
    assert_files_match(t)
    # every commit kind: a compaction, in place or planned and committed, and row-level changes
    t.compact(full=True)
    assert [s.id for s in t.snapshots()] == [6, 7] and t.snapshots()[-1].commit_kind == "COMPACT"
    _commits(t, 1, start=6)
    plan = t.compaction_plan(full=True)
    plan.commit([tidelake.compaction.run_compaction_task(task, storage.options) for task in plan.tasks])
    assert [s.id for s in t.snapshots()] == [8, 9] and t.snapshots()[-1].commit_kind == "COMPACT"
    t.delete("k = 0")
    assert [s.id for s in t.snapshots()] == [9, 10]
    assert_files_match(t)
    w = pk_table(storage, "w", options={**opts, "write-only": "true"})
    _commits(w, 6)
    assert len(w.snapshots()) == 6


def test_consumers_hold_snapshots_and_use_javas_format(storage):
    t = pk_table(storage, "t")
    _commits(t, 6)
    t.reset_consumer("job", 3)
    assert stored_text(t, "consumer/consumer-job") == '{\n  "nextSnapshot" : 3\n}'
    assert t.consumers() == {"job": 3}
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert [s.id for s in t.snapshots()] == [3, 4, 5, 6]
    with pytest.raises(tidelake.TableNotFoundError):
        t.reset_consumer("job", 1)  # expired: Java's reset requires an existing snapshot
    t.delete_consumer("job")
    assert t.consumers() == {}
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert [s.id for s in t.snapshots()] == [6]
    assert_files_match(t)


def test_consumer_expiration_time(storage):
    t = pk_table(storage, "t", options={"consumer.expiration-time": "1 ms"})
    _commits(t, 1)
    t.reset_consumer("old", 1)
    time.sleep(0.01)
    _commits(t, 1, start=1)
    assert t.consumers() == {}


# ---- tags and rollback -------------------------------------------------------------------------------


def test_tags_keep_files_and_deleting_the_last_one_cleans_them(storage):
    t = pk_table(storage, "t")
    _commits(t, 3)
    t.compact(full=True)
    _commits(t, 3, start=3)
    tag = t.create_tag("before-compaction", 3)
    assert (tag.name, tag.snapshot_id) == ("before-compaction", 3)
    text = stored_text(t, "tag/tag-before-compaction")
    assert json.loads(text)["id"] == 3 and "tagCreateTime" not in json.loads(text)
    with pytest.raises(tidelake.TableAlreadyExistsError):
        t.create_tag("before-compaction")
    expected = t.to_arrow(snapshot_id=3)
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert [s.id for s in t.snapshots()] == [7]
    assert_same_rows(t.to_arrow(tag="before-compaction"), expected)
    assert_files_match(t)
    deleted = t.delete_tag("before-compaction")
    assert deleted["data_files"] == 3  # the level-0 files the full compaction replaced
    assert_files_match(t)
    with pytest.raises(tidelake.TableNotFoundError):
        t.delete_tag("before-compaction")


def test_tag_retention_is_written_like_java_and_expires(storage):
    import datetime as dt

    t = pk_table(storage, "t")
    _commits(t, 2)
    t.create_tag("short", time_retained=dt.timedelta(milliseconds=1))
    t.create_tag("long", time_retained=dt.timedelta(days=1))
    d = json.loads(stored_text(t, "tag/tag-long"))
    assert d["tagTimeRetained"] == 86400.0 and len(d["tagCreateTime"]) >= 5
    tags = t.system("tags").to_pylist()
    assert [r["time_retained"] for r in tags] == ["PT24H", "PT0.001S"]
    time.sleep(0.01)
    _commits(t, 1, start=2)  # writers expire tags past their retention after committing
    assert [x.name for x in t.tags()] == ["long"]


def test_rollback_to_snapshot_deletes_newer_snapshots_tags_and_files(storage):
    t = pk_table(storage, "t")
    _commits(t, 3)
    expected = t.to_arrow()
    _commits(t, 3, start=3)
    t.create_tag("late", 5)
    result = t.rollback_to(snapshot_id=3)
    assert result["snapshot_id"] == 3 and result["snapshots"] == 3 and result["tags"] == ["late"]
    assert result["data_files"] == 3
    assert stored_text(t, "snapshot/LATEST") == "3"
    assert [s.id for s in t.snapshots()] == [1, 2, 3] and t.tags() == []
    assert_same_rows(t.to_arrow(), expected)
    assert_files_match(t)
    _commits(t, 1, start=10)  # the table continues from snapshot 3
    assert t.latest_snapshot().id == 4
    with pytest.raises(tidelake.TableNotFoundError):
        t.rollback_to(snapshot_id=99)
    with pytest.raises(tidelake.InvalidArgumentError):
        t.rollback_to()


def test_rollback_to_a_tag_whose_snapshot_expired_recreates_it(storage):
    t = pk_table(storage, "t")
    _commits(t, 2)
    t.create_tag("v1")
    expected = t.to_arrow()
    _commits(t, 4, start=2)
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert [s.id for s in t.snapshots()] == [6]
    t.rollback_to(tag="v1")
    assert [s.id for s in t.snapshots()] == [2]
    assert stored_text(t, "snapshot/EARLIEST") == "2"
    assert stored_text(t, "snapshot/LATEST") == "2"
    assert_same_rows(t.to_arrow(), expected)
    assert_files_match(t)
    # rolling back by the id of an expired, tagged snapshot goes through the tag (Java)
    _commits(t, 1, start=9)
    t.rollback_to(snapshot_id=2)
    assert_same_rows(t.to_arrow(), expected)


# ---- orphan files ------------------------------------------------------------------------------------


def test_orphan_files_of_uncommitted_writers_go_only_after_the_cutoff(storage):
    t = pk_table(storage, "t", partition_keys=["p"], bucket=2)
    _commits(t, 4)
    committed = t.to_arrow()
    w = t.writer()
    w.write(pa.table({"k": list(range(20)), "p": [0, 1] * 10, "v": ["lost"] * 20}, schema=SCHEMA))
    w.prepare_commit()  # never committed
    # a writer process killed after writing its files
    script = (
        "import json, os, sys, pyarrow as pa, tidelake\n"
        "t = tidelake.open_table(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        "w = t.writer()\n"
        "w.write(pa.table({'k': [100, 101], 'p': [0, 1], 'v': ['x', 'y']}, schema=t.schema))\n"
        "w.prepare_commit()\n"
        "os._exit(9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, t.path, json.dumps(t.storage_options)], capture_output=True)
    assert proc.returncode == 9, proc.stderr
    files = TableFiles.of(t)
    junk = ["manifest/manifest-list-junk-0", "index/index-junk-0"]
    for j in junk:
        files.write(j, b"junk")
    keep = ["schema/stray", "snapshot/.snapshot-9.tmp", "README"]
    for k in keep:
        files.write(k, b"keep")
    orphans = disk_files(files) - referenced_files(files) - {"README"}
    assert len(orphans) >= 4 + len(junk)

    assert t.remove_orphan_files() == []  # default cutoff: a day ago
    cutoff = now_ms() + 1
    listed = t.remove_orphan_files(older_than_ms=cutoff, dry_run=True)
    assert {pathlib.Path(p).name for p, _ in listed} == orphans
    assert all(size > 0 for _, size in listed)
    assert orphans <= disk_files(files)  # dry run deleted nothing
    removed = t.remove_orphan_files(older_than_ms=cutoff)
    assert {pathlib.Path(p).name for p, _ in removed} == orphans
    assert set(keep) <= files.names()
    files.delete("README")
    assert_files_match(t)
    assert_same_rows(t.to_arrow(), committed)


# ---- partitions ------------------------------------------------------------------------------------


DT_SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def test_drop_and_expire_partitions(storage):
    t = storage.create_table("t", DT_SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], bucket=1)
    t.write(pa.table({"k": [1, 2, 3], "dt": ["2020-01-01", "2020-01-02", "2999-01-01"], "v": ["a", "b", "c"]},
                     schema=DT_SCHEMA))
    sid = t.drop_partitions([{"dt": "2020-01-02"}])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert sorted(t.to_arrow().column("dt").to_pylist()) == ["2020-01-01", "2999-01-01"]
    with pytest.raises(tidelake.InvalidArgumentError):
        t.drop_partitions([{"v": "a"}])
    with pytest.raises(tidelake.InvalidArgumentError):
        t.expire_partitions()  # partition.expiration-time not set
    assert t.expire_partitions(expiration=24 * 3600 * 1000) == [{"dt": "2020-01-01"}]
    assert t.to_arrow().column("dt").to_pylist() == ["2999-01-01"]
    assert t.system("partitions").column("partition").to_pylist() == ["dt=2999-01-01"]


def test_partitions_expire_after_commits_with_a_formatter(storage):
    opts = {"partition.expiration-time": "7 d", "partition.timestamp-formatter": "yyyyMMdd",
            "partition.timestamp-pattern": "$dt"}
    t = storage.create_table("t", DT_SCHEMA, partition_keys=["dt"], options=opts)
    t.write(pa.table({"k": [1, 2, 3], "dt": ["20200101", "29990101", "not-a-date"], "v": ["a", "b", "c"]},
                     schema=DT_SCHEMA))
    # the writer's after-commit maintenance dropped the old partition; unparsable ones stay
    assert sorted(t.to_arrow().column("dt").to_pylist()) == ["29990101", "not-a-date"]


# ---- system tables --------------------------------------------------------------------------------


JAVA_COLUMNS = {
    "snapshots": ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
                  "base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                  "delta_record_count", "changelog_record_count", "watermark", "next_row_id", "operation",
                  "writer_version"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "files": ["partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
              "file_size_in_bytes", "min_key", "max_key", "min_sequence_number", "max_sequence_number",
              "creation_time", "deleteRowCount", "file_source", "first_row_id"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                  "min_partition_stats", "max_partition_stats", "min_row_id", "max_row_id"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time",
                   "total_buckets"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time", "time_retained"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "audit_log": ["rowkind", "k", "p", "v"],
}


def test_system_tables(storage):
    t = pk_table(storage, "t", partition_keys=["p"], options={"file.format": "parquet"})
    t.write(pa.table({"k": [1, 2, 3], "p": [0, 0, 1], "v": ["a", "b", "c"]}, schema=SCHEMA))
    t.delete_keys(pa.table({"k": [2], "p": [0], "v": [None]}, schema=SCHEMA))
    t.create_tag("t1")
    t.reset_consumer("c", 2)
    for name, columns in JAVA_COLUMNS.items():
        assert t.system(name).column_names == columns, name
    snaps = t.system("snapshots").to_pylist()
    assert [s["snapshot_id"] for s in snaps] == [1, 2] and snaps[0]["commit_kind"] == "APPEND"
    files = t.system("files").to_pylist()
    assert {f["partition"] for f in files} == {"{0}", "{1}"}
    stored = TableFiles.of(t).names()
    assert all(f["file_format"] == "parquet" and f["file_path"].startswith(t.path + "/")
               and f["file_path"][len(t.path) + 1:] in stored for f in files)
    assert {f["min_key"] for f in files} >= {"[1]", "[3]"}
    parts = t.system("partitions").to_pylist()
    assert [(p["partition"], p["file_count"], p["record_count"]) for p in parts] == [("p=0", 2, 3), ("p=1", 1, 1)]
    assert [(b["partition"], b["bucket"]) for b in t.system("buckets").to_pylist()] == [("{0}", 0), ("{1}", 0)]
    assert sum(m["num_added_files"] for m in t.system("manifests").to_pylist()) == 3
    assert t.system("consumers").to_pylist() == [{"consumer_id": "c", "next_snapshot_id": 2}]
    assert t.system("tags").column("snapshot_id").to_pylist() == [2]
    assert dict(zip(*t.system("options").to_pydict().values()))["file.format"] == "parquet"
    # audit_log keeps the delete that compaction has not dropped yet (Java's forceKeepDelete)
    audit = sorted((r["rowkind"], r["k"]) for r in t.system("audit_log").to_pylist())
    assert audit == [("+I", 1), ("+I", 3), ("-D", 2)]
    t.compact(full=True)
    assert sorted((r["rowkind"], r["k"]) for r in t.system("audit_log").to_pylist()) == [("+I", 1), ("+I", 3)]
    with pytest.raises(tidelake.TableNotFoundError):
        t.system("nope")


def test_audit_log_of_append_tables(storage):
    t = storage.create_table("t", SCHEMA)
    t.write(pa.table({"k": [1, 2], "p": [0, 0], "v": ["a", "b"]}, schema=SCHEMA))
    assert t.system("audit_log").column("rowkind").to_pylist() == ["+I", "+I"]


# ---- pypaimon ---------------------------------------------------------------------------------------


def test_pypaimon_reads_every_retained_snapshot_and_tag_after_expiration(tmp_path):
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], bucket=2)
    for i in range(8):
        t.write(pa.table({"k": [i % 5, (i + 1) % 5], "p": [i % 2, 0], "v": [f"a{i}", f"b{i}"]}, schema=SCHEMA))
        if i == 3:
            t.compact(full=True)
    t.create_tag("mid", 4)
    reads = {s.id: t.to_arrow(snapshot_id=s.id) for s in t.snapshots()}
    t.expire_snapshots(retain_min=3, older_than_ms=now_ms() + 1)
    retained = [s.id for s in t.snapshots()]
    assert retained == sorted(reads)[-3:]
    assert_files_match(t)
    for sid in retained:
        assert_same_rows(pp_read(wh, options={"scan.snapshot-id": str(sid)}, schema=SCHEMA), reads[sid])
    assert_same_rows(pp_read(wh, options={"scan.tag-name": "mid"}, schema=SCHEMA), reads[4])
    assert_same_rows(pp_read(wh, schema=SCHEMA), reads[retained[-1]])


# ---- concurrency -----------------------------------------------------------------------------------


def test_expiration_concurrent_with_a_writer_keeps_every_commit_readable(storage):
    t = pk_table(storage, "t", partition_keys=["p"], bucket=2)
    _commits(t, 2)
    script = (
        "import json, sys, time, pyarrow as pa, tidelake\n"
        "t = tidelake.open_table(sys.argv[1], storage_options=json.loads(sys.argv[2]))\n"
        "for i in range(25):\n"
        "    t.write(pa.table({'k': [i, i + 100], 'p': [i % 2, 1], 'v': [f'w{i}', 'x']}, schema=t.schema))\n"
        "    if i % 7 == 6:\n"
        "        t.compact(full=True)\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, t.path, json.dumps(t.storage_options)],
                              stderr=subprocess.PIPE)
    runs = 0
    while writer.poll() is None:
        t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
        runs += 1
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    assert runs > 0
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert_files_match(t)
    rows = t.to_arrow().to_pylist()
    assert sorted(r["k"] for r in rows) == sorted({i % 3 for i in range(2)} | set(range(25)) | {100 + i for i in range(25)})


def test_a_tag_before_an_expired_range_keeps_files_deleted_at_its_start(storage):
    """A file deleted by snapshot `begin` of a later expiration run is still live in older tags."""
    t = pk_table(storage, "t")
    _commits(t, 4)
    t.create_tag("old", 2)
    t.compact(full=True)  # snapshot 5 deletes the level-0 files
    t.create_tag("at-compaction", 5)
    _commits(t, 2, start=4)
    expected = t.to_arrow(tag="old")
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1, max_deletes=4)
    assert t.snapshots()[0].id == 5
    t.expire_snapshots(retain_min=1, older_than_ms=now_ms() + 1)
    assert_files_match(t)
    assert_same_rows(t.to_arrow(tag="old"), expected)
