"""Native reads (:meth:`tidelake.scan.Scan.native_read`): the data files a foreign reader reads
itself, read here with pyarrow as Spark's Parquet reader reads them (value columns by name,
``_VALUE_KIND`` retracts dropped, deleted positions dropped, base rows anti-joined on the
primary key with the delta files' keys), plus the engine's splits, give exactly the engine's
rows, on tables shaped to reach every kind of unit, on the Java-written fixtures, and time
travel; splits the engine reads are packed by ``source.split.target-size``."""

from __future__ import annotations

import json
import pathlib
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tidelake
from conftest import FIXTURES, assert_same_rows, fixture_tables
from tidelake.scan import NativeFile, NativeRead, Scan, Split

ADDS = pa.array([0, 2], pa.int8())  # +I, +U: the row kinds a batch read keeps


def file_names(split: Split) -> list[str]:
    return [f["file_name"] for f in json.loads(split.payload)["files"]]


def read_files(root: str, files: list[NativeFile], columns: list[str], native: NativeRead) -> pa.Table:
    """``files`` read as a foreign reader would: by column name, retracts and deleted
    positions dropped."""
    deleted: dict[str, set[int]] = {}
    with_dv = [f for f in files if f.has_deletion_vector]
    if with_dv:
        positions = native.deleted_positions(with_dv)
        for name, pos in zip(positions["file_name"].to_pylist(), positions["position"].to_pylist()):
            deleted.setdefault(name, set()).add(pos)
    parts = []
    for f in files:
        t = pq.ParquetFile(f"{root}/{f.path}").read()
        t = t.append_column("_pos", pa.array(range(t.num_rows), pa.int64()))
        keep = pc.invert(pc.is_in(t["_pos"], pa.array(sorted(deleted.get(f.file_name, ())), pa.int64())))
        if f.drop_retracts:
            keep = pc.and_(keep, pc.is_in(t["_VALUE_KIND"], ADDS))
        parts.append(t.filter(keep).select(columns))
    return pa.concat_tables(parts) if parts else None


def native_rows(table: tidelake.Table, scan: Scan, **packing) -> tuple[pa.Table, NativeRead]:
    native = scan.native_read(**packing)
    columns = scan.schema.names
    parts = []
    if native.files:
        parts.append(read_files(table.path, native.files, columns, native))
    if native.base:
        base = read_files(table.path, native.base, columns, native)
        keys = pa.concat_tables([pq.ParquetFile(f"{table.path}/{f.path}").read(columns=table.primary_keys)
                                 for f in native.delta])
        parts.append(base.join(keys, table.primary_keys, join_type="left anti").select(columns))
    parts.extend(s.read().read_all() for s in native.engine)
    parts = [p.cast(scan.schema) for p in parts if p is not None]
    return (pa.concat_tables(parts) if parts else scan.schema.empty_table()), native


def assert_native_exact(table: tidelake.Table, **scan) -> NativeRead:
    """Both divisions of the scan (deleted rows removed by the reader's joins, or by the
    engine) give the engine's rows; returns the one with joins (every kind of unit)."""
    planned = table.scan(**scan)
    want = planned.to_arrow()
    for joins in (False, True):
        got, native = native_rows(table, planned, joins=joins)
        assert_same_rows(got, want)
    return native


def kv(keys, tag: str) -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "v": [f"{tag}{k}" for k in keys]})


def new_table(tmp_path, name: str, **options: str) -> tidelake.Table:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
    opts = {"bucket": "1", "write-only": "true", **options}
    return tidelake.create_table(str(tmp_path / name), schema, primary_keys=["k"], options=opts)


def test_level0_files_with_disjoint_key_ranges_are_read_natively(tmp_path):
    t = new_table(tmp_path, "l0")
    for start in (0, 100, 200):  # time-ordered keys: L0 files that never overlap
        t.write(kv(range(start, start + 50), "a"))
    t.write(kv(range(300, 340), "b"))
    t.write(kv(range(320, 360), "c"))  # overlaps the previous file: those two are merged
    t.delete_keys(pa.table({"k": pa.array(range(500, 510), pa.int64())}))  # a file of retracts only
    native = assert_native_exact(t)
    assert sorted(f.row_count for f in native.files) == [10, 50, 50, 50]
    assert [f.drop_retracts for f in native.files if f.row_count == 10] == [True]
    assert [s.row_count for s in native.engine] == [80]


def base_and_delta(tmp_path, name: str, touched: int = 25_000, **options: str) -> tidelake.Table:
    """A compacted base of several max-level files (keys 0..20,000), then upserts, inserts and
    deletes of keys below ``touched``."""
    t = new_table(tmp_path, name, **{"target-file-size": "64 kb", **options})
    rng = random.Random(7)
    t.write(kv(range(20_000), "base"))
    t.compact(full=True)
    t.write(kv(rng.sample(range(touched), touched // 10), "new"))
    t.delete_keys(pa.table({"k": pa.array(rng.sample(range(min(touched, 20_000)), 300), pa.int64())}))
    return t


def test_a_delta_over_a_compacted_base_is_read_as_base_minus_its_keys_plus_the_merged_delta(tmp_path):
    t = base_and_delta(tmp_path, "bd")
    native = assert_native_exact(t)
    assert native.base and native.delta and native.engine
    assert not t.scan().native_read().base  # without joins the engine merges base and delta
    merged = {name for s in native.engine for name in file_names(s)}
    assert {f.file_name for f in native.delta} <= merged
    assert not {f.file_name for f in native.base} & merged
    # max-level files that no delta file's key range reaches are sections of their own
    native = assert_native_exact(base_and_delta(tmp_path, "local", touched=5_000))
    assert native.files and native.base and native.delta


@pytest.mark.parametrize("option", [{"ignore-delete": "true"}, {"sequence.field": "k"}])
def test_a_delta_that_may_lose_to_its_base_is_merged(tmp_path, option):
    # ignore-delete is set after the writes: a delete batch on such a table is refused, but
    # files written before still hold delete records the read must skip. Paimon refuses that
    # change on a table with snapshots since 1.x; a schema file written by an older writer has it
    late = "ignore-delete" in option
    t = base_and_delta(tmp_path, "merged", **({} if late else option))
    if late:
        latest = t.schemas()[-1].id
        schema = json.loads((t_dir := pathlib.Path(t.path)).joinpath(f"schema/schema-{latest}").read_text())
        schema.update(id=latest + 1, options={**schema["options"], "ignore-delete": "true"})
        (t_dir / f"schema/schema-{latest + 1}").write_text(json.dumps(schema))
        t = t.refresh()
    native = assert_native_exact(t)
    assert not native.base


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_other_merge_engines_merge_every_multi_file_bucket(tmp_path, engine):
    options = {"merge-engine": engine}
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "max"
    t = new_table(tmp_path, engine, **options)
    t.write(kv(range(100), "a"))
    t.write(kv(range(200, 300), "b"))
    native = assert_native_exact(t)
    assert not native.files and not native.base


@pytest.mark.parametrize("deleted", [0.01, 0.10])
def test_deletion_vectors_are_positions_to_drop(tmp_path, deleted):
    t = new_table(tmp_path, "dv", **{"deletion-vectors.enabled": "true", "write-only": "false"})
    n = 5_000
    t.write(kv(range(n), "a"))
    t.compact(full=True)
    rng = random.Random(3)
    t.write(kv(rng.sample(range(n), int(n * deleted)), "b"))  # lookup compaction marks the old rows deleted
    t.compact()
    native = assert_native_exact(t)
    assert not native.engine and any(f.has_deletion_vector for f in native.files)
    without_joins = t.scan().native_read()  # the engine applies the deletion vectors
    assert without_joins.engine and not any(f.has_deletion_vector for f in without_joins.files)
    positions = native.deleted_positions([f for f in native.files if f.has_deletion_vector])
    assert positions.num_rows == int(n * deleted)
    assert sum(f.deleted_rows or 0 for f in native.files) == positions.num_rows


def test_append_tables_and_their_deletion_vectors(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = tidelake.create_table(str(tmp_path / "append"), schema, options={"deletion-vectors.enabled": "true"})
    t.write(kv(range(100), "a"))
    t.write(kv(range(100, 200), "b"))
    t.delete("k in (3, 17, 150, 151)")
    native = assert_native_exact(t)
    assert not native.engine and any(f.has_deletion_vector for f in native.files)


def test_time_travel_to_an_older_schema_reads_through_the_engine(tmp_path):
    t = new_table(tmp_path, "evolved")
    t.write(kv(range(10), "a"))
    t.add_column("x", pa.int32())
    t.write(pa.table({"k": pa.array([50], pa.int64()), "v": ["z"], "x": pa.array([1], pa.int32())}))
    # latest schema: the old file was written with schema 0, so the engine reads it
    native = assert_native_exact(t.refresh())
    assert [f.row_count for f in native.files] == [1]
    assert_native_exact(t, snapshot_id=1)


@pytest.mark.parametrize("fixture", fixture_tables(), ids=lambda f: f["name"])
def test_java_written_tables(fixture):
    t = tidelake.open_table(str(FIXTURES / fixture["path"]))
    assert_native_exact(t)


def test_engine_splits_are_packed_by_the_split_target_size(tmp_path):
    t = new_table(tmp_path, "packed", bucket="4")
    for tag in "abc":  # overlapping L0 files in every bucket
        t.write(kv(range(1_000), tag))
    scan = t.scan()
    whole = scan.native_read()
    assert len(whole.engine) == 4  # one per bucket: each bucket's overlapping files are one section
    assert [len(task) for task in scan._raw.packed_splits()] == [4]  # 4 small splits, one task
    assert len(scan._raw.packed_splits(target_size=1, open_file_cost=1)) == 4
    got, _ = native_rows(t, scan, target_size=1)
    assert_same_rows(got, scan.to_arrow())
