"""The write API: input forms, schema conformance and rejection (with nothing left behind),
two-phase writes across processes, exactly-once commits, abort, spilling buffers, sequence
numbers and file rolling."""

from __future__ import annotations

import io
import multiprocessing as mp
import pickle

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tidelake
from _peers import data_files, model_table, new_warehouse, table_files
from _s3 import Storage, TableFiles
from conftest import assert_same_rows

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int32()), ("price", pa.float64())])
ROWS = [{"id": i, "name": f"n{i}", "qty": i * 2, "price": i / 4} for i in range(6)]


def expected(rows=ROWS, schema=SCHEMA) -> pa.Table:
    return model_table(rows, schema)


@pytest.fixture
def pk_table(storage: Storage) -> tidelake.Table:
    return storage.create_table("t", SCHEMA, primary_keys=["id"], bucket=2)


@pytest.fixture
def append_table(storage: Storage) -> tidelake.Table:
    return storage.create_table("a", SCHEMA)


# ---- input forms ---------------------------------------------------------------------------------


def _forms():
    import pandas as pd
    import polars as pl

    t = expected()
    return {
        "pyarrow.Table": lambda: t,
        "RecordBatch": lambda: t.to_batches()[0],
        "RecordBatchReader": lambda: pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=2)),
        "polars": lambda: pl.from_arrow(t),
        "pandas": lambda: pd.DataFrame(ROWS),
        # pandas >= 2.2 exports a filtered frame's index through the Arrow protocols
        "pandas-filtered": lambda: pd.concat([pd.DataFrame(ROWS), pd.DataFrame(ROWS)]).iloc[3:9],
        "list-of-dicts": lambda: [dict(r) for r in ROWS],
        "dict-of-lists": lambda: {k: [r[k] for r in ROWS] for k in SCHEMA.names},
        "reordered-columns": lambda: t.select(["price", "qty", "id", "name"]),
    }


@pytest.mark.parametrize("form", list(_forms()))
@pytest.mark.parametrize("kind", ["pk", "append"])
def test_input_forms(storage, form, kind):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None)
    sid = t.write(_forms()[form]())
    assert sid == 1
    assert_same_rows(t.to_arrow(), expected().cast(t.schema))


def test_safe_widening_casts_are_accepted(pk_table):
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "name": pa.array(["a", "b"], pa.large_string()),
                     "qty": pa.array([1, -2], pa.int8()), "price": pa.array([1.5, 2.25], pa.float32())})
    pk_table.write(data)
    got = pk_table.to_arrow()
    assert got.schema == pk_table.schema
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a", "qty": 1, "price": 1.5}, {"id": 2, "name": "b", "qty": -2, "price": 2.25}]
    # a narrowing cast whose values all fit is exact, hence accepted
    pk_table.write(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"], "qty": pa.array([7], pa.int64()),
                             "price": [0.5]}))
    assert pk_table.to_arrow(filter=[("id", "=", 3)]).column("qty").to_pylist() == [7]


# ---- writes of some columns ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_a_write_that_would_null_the_missing_columns_of_whole_rows_is_refused(storage, engine):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"], bucket=2, options={"merge-engine": engine})
    t.write(expected())
    before, snapshots = table_files(t), len(t.snapshots())
    some = pa.table({"id": [1, 2], "qty": pa.array([70, 80], pa.int32())})
    for write in (t.write, t.upsert):
        with pytest.raises(tidelake.SchemaMismatchError, match=r"missing column\(s\) 'name', 'price'"):
            write(some)
    assert len(t.snapshots()) == snapshots
    assert table_files(t) == before
    assert_same_rows(t.to_arrow(), expected().cast(t.schema))
    if engine == "deduplicate":  # (first-row tables ignore deletes, as Paimon's)
        t.delete_keys(pa.table({"id": [1]}))  # a delete needs only the key
        assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 2, 3, 4, 5]


def test_partial_update_and_append_tables_take_some_columns(storage):
    t = storage.create_table("p", SCHEMA, primary_keys=["id"], bucket=2, options={"merge-engine": "partial-update"})
    t.write(expected())
    t.upsert(pa.table({"id": [1, 2], "qty": pa.array([70, 80], pa.int32())}))
    rows = {r["id"]: r for r in t.to_arrow().to_pylist()}
    assert rows[1] == {"id": 1, "name": "n1", "qty": 70, "price": 0.25}
    a = storage.create_table("a", SCHEMA)
    a.write(pa.table({"id": [9]}))
    assert a.to_arrow().to_pylist() == [{"id": 9, "name": None, "qty": None, "price": None}]


# ---- rejected writes leave nothing behind ----------------------------------------------------------------

BAD_INPUTS = {
    "int64-over-int32": (pa.table({"id": [1, 2], "qty": pa.array([1, 2**31], pa.int64())}), "qty"),
    "float-fraction-into-int": (pa.table({"id": [1], "qty": pa.array([1.5], pa.float64())}), "qty"),
    "string-into-int": (pa.table({"id": [1], "qty": pa.array(["abc"], pa.string())}), "qty"),
    "numeric-string-into-int": (pa.table({"id": [1], "qty": pa.array(["12"], pa.string())}), "qty"),
    "float-into-bigint-key": (pa.table({"id": pa.array([1.25], pa.float64())}), "id"),
    "missing-key": (pa.table({"name": ["x"], "qty": pa.array([1], pa.int32())}), "id"),
    "null-key": (pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", "b"]}), "id"),
    "all-null-key": (pa.table({"id": pa.array([None, None], pa.null()), "name": ["a", "b"]}), "id"),
    "unknown-column": (pa.table({"id": [1], "nope": [1]}), "nope"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
@pytest.mark.parametrize("kind", ["pk", "append"])
def test_rejected_writes_leave_no_trace(storage, case, kind):
    data, column = BAD_INPUTS[case]
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None)
    t.write(expected())
    if kind == "append" and case in ("missing-key", "null-key", "all-null-key"):
        # no key on append tables: "id" is an ordinary nullable column
        assert t.write(data) == 2
        assert t.to_arrow().num_rows == len(ROWS) + data.num_rows
        return
    before = table_files(t)
    with pytest.raises(tidelake.SchemaMismatchError) as e:
        t.write(data)
    assert column in str(e.value)
    if case.endswith("null-key"):
        assert "null value(s) in primary key column 'id'" in str(e.value)
    with pytest.raises(tidelake.SchemaMismatchError):
        t.upsert(data) if kind == "pk" else t.write(data, mode="overwrite")
    assert len(t.snapshots()) == 1
    assert table_files(t) == before


# (a null "id" is only bad where "id" is the primary key)
@pytest.mark.parametrize("bad,kind", [("overflow", "pk"), ("overflow", "append"), ("null-key", "pk")])
def test_failure_late_in_a_stream_leaves_no_trace(storage, bad, kind):
    """One write() of a stream whose last batch is bad: earlier batches were already written
    to files (spilled buffers / append files); all of them must be removed."""
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None,
                              options={"write-buffer-size": "256kb", "target-file-size": "128kb"})
    t.write(expected())
    before = table_files(t)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("qty", pa.int64()), ("price", pa.float64())])
    n = 40_000

    def batches():
        for s in range(0, n, 5000):
            yield pa.record_batch([pa.array(range(s, s + 5000), pa.int64()), pa.array(["x" * 40] * 5000),
                                   pa.array([1] * 5000, pa.int64()), pa.array([0.5] * 5000)], schema=schema)
        if bad == "overflow":
            yield pa.record_batch([pa.array([1], pa.int64()), pa.array(["y"]), pa.array([2**40], pa.int64()),
                                   pa.array([0.5])], schema=schema)
        else:
            yield pa.record_batch([pa.array([None], pa.int64()), pa.array(["y"]), pa.array([1], pa.int64()),
                                   pa.array([0.5])], schema=schema)

    seen = []

    def spy():
        for b in batches():
            seen.append(data_files(t) - before)
            yield b

    with pytest.raises(tidelake.SchemaMismatchError):
        t.write(pa.RecordBatchReader.from_batches(schema, spy()))
    assert any(seen), "files should have been written before the bad batch arrived"
    assert len(t.snapshots()) == 1
    assert table_files(t) == before, sorted(table_files(t) - before)[:5]


def test_write_to_missing_table_raises(tmp_path):
    cat, wh = new_warehouse(tmp_path)
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("db.missing")
    with pytest.raises(tidelake.TableNotFoundError):
        tidelake.open_table(tmp_path / "nothing-here")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"])
    cat.drop_table("db.t")
    with pytest.raises(tidelake.TableNotFoundError):
        t.write(expected())
    assert not (tmp_path / "db.db" / "t").exists() or not data_files(tmp_path / "db.db" / "t")


# ---- two-phase writes ----------------------------------------------------------------------------


def test_two_phase_across_processes(pk_table):
    ctx = mp.get_context("spawn")
    parts = [[{"id": i, "name": f"p{w}", "qty": w, "price": 1.0} for i in range(w * 100, w * 100 + 100)] for w in range(2)]
    parts[1].append({"id": 5, "name": "dup", "qty": 9, "price": 9.0})  # overlaps worker 0's keys
    from _workers import write_part

    with ctx.Pool(2) as pool:
        blobs = pool.starmap(write_part, [(pk_table.path, parts[w], "job-1", pk_table.storage_options) for w in range(2)])
    messages = [m for b in blobs for m in pickle.loads(b)]
    assert all(isinstance(m, tidelake.CommitMessage) for m in messages)
    assert pk_table.snapshots() == []  # nothing visible before the commit
    ids = pk_table.commit(messages, commit_identifier=1)
    assert ids == [1]
    got = pk_table.to_arrow()
    assert got.num_rows == 200
    names = {r["id"]: r["name"] for r in got.to_pylist()}
    assert names[5] in ("p0", "dup")  # two writers wrote key 5 independently; one of them wins
    assert {k: v for k, v in names.items() if k != 5} == {r["id"]: r["name"] for p in parts for r in p if r["id"] != 5}


def test_commit_identifier_is_exactly_once(pk_table):
    w = pk_table.writer(commit_user="stream-1")
    w.write(expected())
    msgs = w.prepare_commit()
    assert pk_table.commit(msgs, commit_identifier=7) == [1]
    assert pk_table.commit(msgs, commit_identifier=7) == []  # re-sent after a "crash": no-op
    assert len(pk_table.snapshots()) == 1
    w.write(expected([{"id": 99, "name": "x", "qty": 1, "price": 1.0}]))
    msgs2 = w.prepare_commit()
    assert pk_table.commit(msgs2, commit_identifier=8) == [2]
    assert pk_table.commit(msgs2, commit_identifier=8) == []
    assert pk_table.commit(msgs, commit_identifier=7) == []
    w.close()
    snap = pk_table.snapshot(2)
    assert (snap.commit_user, snap.commit_identifier) == ("stream-1", 8)
    assert pk_table.to_arrow().num_rows == 7
    # another user may use the same identifier
    w2 = pk_table.writer(commit_user="stream-2")
    w2.write(expected([{"id": 100, "name": "y", "qty": 1, "price": 1.0}]))
    assert pk_table.commit(w2.prepare_commit(), commit_identifier=7) == [3]
    w2.close()


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_abort_deletes_written_files(storage, kind):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None,
                              options={"write-buffer-size": "256kb", "target-file-size": "128kb"})
    t.write(expected())
    before = table_files(t)
    w = t.writer()
    big = model_table([{"id": i, "name": "x" * 40, "qty": 1, "price": 1.0} for i in range(30_000)], SCHEMA)
    w.write(big)
    assert data_files(t) - before, "the write should have produced files already (spill/append)"
    w.abort()
    assert table_files(t) == before
    assert len(t.snapshots()) == 1
    # context-manager exit with an exception aborts too
    with pytest.raises(RuntimeError):
        with t.writer() as w2:
            w2.write(big)
            raise RuntimeError("boom")
    assert table_files(t) == before


# ---- big writes: spills, sequence numbers, rolling ---------------------------------------------------


def _manifest_entries(t: tidelake.Table, sid: int) -> list[dict]:
    """The ADD entries of snapshot ``sid``'s delta manifests (via fastavro)."""
    files = TableFiles.of(t)
    snap = t.snapshot(sid)
    out = []
    for meta in fastavro.reader(io.BytesIO(files.read(f"manifest/{snap.raw['deltaManifestList']}"))):
        out += [e for e in fastavro.reader(io.BytesIO(files.read(f"manifest/{meta['_FILE_NAME']}"))) if e["_KIND"] == 0]
    return out


def test_large_write_spills_and_merges(tmp_path):
    n = 300_000
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=2,
                              options={"write-buffer-size": "1mb"})
    ids = pa.array(range(n), pa.int64())
    first = pa.table({"id": ids, "name": pa.array([f"a{i}" for i in range(n)]),
                      "qty": pa.array([1] * n, pa.int32()), "price": pa.array([0.5] * n)})
    # the same keys again in the same writer: each key's newer value sits in a later spill
    upd_ids = pa.array(range(0, n, 3), pa.int64())
    m = len(upd_ids)
    second = pa.table({"id": upd_ids, "name": pa.array([f"b{i}" for i in range(0, n, 3)]),
                       "qty": pa.array([2] * m, pa.int32()), "price": pa.array([1.5] * m)})
    with t.writer() as w:
        for b in first.to_batches(max_chunksize=20_000):
            w.upsert(b)
        w.upsert(second)
        # a third version of a few keys inside one batch, duplicates in-batch: last wins
        w.upsert(pa.table({"id": pa.array([0, 0, 3], pa.int64()), "name": ["c0", "c1", "c3"],
                           "qty": pa.array([3, 4, 5], pa.int32()), "price": [0.0, 0.0, 0.0]}))
        ids = t.commit(w.prepare_commit())
    # the APPEND snapshot holds the level-0 spills; a COMPACT one may follow (too many runs)
    assert t.snapshot(ids[0]).commit_kind == "APPEND"
    assert all(t.snapshot(i).commit_kind == "COMPACT" for i in ids[1:])
    entries = _manifest_entries(t, ids[0])
    per_bucket: dict = {}
    for e in entries:
        per_bucket.setdefault(e["_BUCKET"], []).append(e["_FILE"])
        assert e["_FILE"]["_LEVEL"] == 0
    assert set(per_bucket) == {0, 1}
    assert all(len(files) >= 3 for files in per_bucket.values()), {b: len(f) for b, f in per_bucket.items()}
    got = t.to_arrow()
    assert got.num_rows == n
    names = dict(zip(got.column("id").to_pylist(), got.column("name").to_pylist()))
    assert names[0] == "c1" and names[3] == "c3" and names[6] == "b6" and names[1] == "a1" and names[299_997] == "b299997" and names[299_999] == "a299999"
    assert sum(1 for v in names.values() if v.startswith("b")) == m - 2


@pytest.mark.parametrize("kind", ["pk", "append-bucketed", "append-unaware"])
def test_sequence_numbers_continue_across_commits(storage, kind):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None,
                              bucket=-1 if kind == "append-unaware" else 2,
                              options={"bucket-key": "id"} if kind == "append-bucketed" else None)
    last_max: dict = {}
    for c in range(4):
        rows = [{"id": i, "name": f"c{c}", "qty": c, "price": 0.0} for i in range(c * 5, c * 5 + 40)]
        t.write(model_table(rows, SCHEMA))
        sid = max(s.id for s in t.snapshots() if s.commit_kind == "APPEND")
        for e in _manifest_entries(t, sid):
            f = e["_FILE"]
            b = e["_BUCKET"]
            assert f["_MIN_SEQUENCE_NUMBER"] > last_max.get(b, -1), (c, b)
            if kind == "pk":  # the file's own _SEQUENCE_NUMBER column agrees with its metadata
                data = TableFiles.of(t).read(f"bucket-{b}/{f['_FILE_NAME']}")
                seqs = pq.ParquetFile(io.BytesIO(data)).read(columns=["_SEQUENCE_NUMBER"]).column(0).to_pylist()
                assert min(seqs) == f["_MIN_SEQUENCE_NUMBER"] and max(seqs) == f["_MAX_SEQUENCE_NUMBER"]
            else:  # append files number their rows consecutively
                assert f["_MAX_SEQUENCE_NUMBER"] - f["_MIN_SEQUENCE_NUMBER"] + 1 == f["_ROW_COUNT"]
            last_max[b] = f["_MAX_SEQUENCE_NUMBER"]
    if kind != "pk":
        return
    # a newly opened table (new writer process) continues too: newer writes win
    t2 = tidelake.open_table(t.path, storage_options=storage.options)
    t2.write(expected([{"id": 0, "name": "final", "qty": 9, "price": 9.0}]))
    assert t2.to_arrow(filter=[("id", "=", 0)]).column("name").to_pylist() == ["final"]
    seq_rows = t.changes(0)
    assert seq_rows.num_rows == 4 * 40 + 1


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_target_file_size_rolls_files(storage, kind):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"] if kind == "pk" else None,
                              bucket=1 if kind == "pk" else -1,
                              options={"target-file-size": "128kb", "file.compression": "none"})
    n = 60_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "name": pa.array([f"name-{i:08d}" for i in range(n)]),
                     "qty": pa.array(range(n), pa.int32()), "price": pa.array([i * 0.5 for i in range(n)])})
    sid = t.write(data)
    files = [e["_FILE"] for e in _manifest_entries(t, sid)]
    assert len(files) >= 4, len(files)
    sizes = sorted(f["_FILE_SIZE"] for f in files)
    assert all(s < 4 * 128 * 1024 for s in sizes), sizes
    assert sum(f["_ROW_COUNT"] for f in files) == n
    if kind == "pk":  # rolled files of one sorted run do not overlap in key
        ranges = sorted((f["_MIN_KEY"], f["_MAX_KEY"]) for f in files)
        assert len(ranges) == len(files)
    assert_same_rows(t.to_arrow(), data.cast(t.schema))


@pytest.mark.parametrize("dictionary", [None, "false"])
def test_parquet_dictionaries_only_where_they_pay(tmp_path, dictionary):
    """Unique columns (sequence numbers, a single-column key, unique values) are written PLAIN,
    repetitive ones with a dictionary, unless parquet.enable.dictionary=false; rows read back."""
    options = {} if dictionary is None else {"parquet.enable.dictionary": dictionary}
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=1, options=options)
    n = 3000
    data = pa.table({"id": pa.array(range(n, 0, -1), pa.int64()), "name": [f"n{i % 4}" for i in range(n)],
                     "qty": pa.array([i % 7 for i in range(n)], pa.int32()), "price": [i * 0.37 for i in range(n)]})
    t.write(data)
    [f] = [f for f in data_files(tmp_path / "t") if f.endswith(".parquet")]
    rg = pq.ParquetFile(tmp_path / "t" / f).metadata.row_group(0)
    has_dictionary = {rg.column(i).path_in_schema: rg.column(i).has_dictionary_page for i in range(rg.num_columns)}
    repetitive = dictionary is None
    assert has_dictionary == {"_KEY_id": False, "_SEQUENCE_NUMBER": False, "_VALUE_KIND": repetitive, "id": False,
                              "name": repetitive, "qty": repetitive, "price": False}
    assert_same_rows(t.to_arrow(), data.cast(t.schema))


# ---- misuse that must not corrupt the table ----------------------------------------------------------


def test_recommitting_batch_messages_does_not_duplicate_files(tmp_path):
    """The same messages committed twice without an identifier: Java would read a table whose
    manifests ADD one file twice as corrupt. The second commit is recognised as landed (a retry
    after an ambiguous failure must be safe): a no-op returning the snapshot that holds it, also
    from another process (pickled messages) and for a primary-key table (files then compacted)."""
    import pickle
    from _peers import pp_read

    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", SCHEMA)
    w = t.writer()
    w.write(expected())
    msgs = w.prepare_commit()
    w.close()
    assert t.commit(msgs) == [1]
    assert t.commit(msgs) == [1]
    assert _commit_in_child(t.path, pickle.dumps(msgs)) == [1]
    with pytest.raises(tidelake.InvalidArgumentError):
        t.commit(msgs + msgs)
    assert [s.id for s in t.snapshots()] == [1]
    assert_same_rows(t.to_arrow(), expected().cast(t.schema))
    assert_same_rows(pp_read(wh, schema=t.schema).cast(t.schema), expected().cast(t.schema))


def test_spark_commit_path_refuses_the_same_message_twice(tmp_path):
    """Spark commits payloads straight through the engine (``spark_io.commit``, no
    ``Table.commit``): the duplicate-message guard is the core's, so that path gets it too, for
    appends and overwrites, and nothing lands."""
    from tidelake.spark import io as spark_io

    cat, _ = new_warehouse(tmp_path)
    t = cat.create_table("db.t", SCHEMA)
    w = t.writer()
    w.write(expected())
    payloads = [m.payload for m in w.prepare_commit()]
    w.close()
    for overwrite in (False, True):
        with pytest.raises(tidelake.InvalidArgumentError, match="twice"):
            spark_io.commit(t, payloads + payloads, w.commit_user, 7, overwrite)
    assert t.snapshots() == []
    assert spark_io.commit(t, payloads, w.commit_user, 7, False) == [1]
    assert_same_rows(t.to_arrow(), expected().cast(t.schema))


def _commit_in_child(path: str, pickled: bytes) -> list[int]:
    import multiprocessing as mp

    from _workers import commit_pickled

    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(commit_pickled, (path, pickled))


def test_unsupported_writes_on_append_tables(append_table):
    append_table.write(expected())
    with pytest.raises(tidelake.UnsupportedError):
        append_table.upsert(expected())
    with pytest.raises(tidelake.UnsupportedError):
        append_table.delete_keys(expected().select(["id"]))
    assert len(append_table.snapshots()) == 1


def test_empty_write_creates_no_snapshot(pk_table):
    assert pk_table.write(SCHEMA.empty_table()).snapshot_id is None
    assert pk_table.upsert(SCHEMA.empty_table()).snapshot_id is None
    assert pk_table.snapshots() == []


def test_static_overwrite_rejects_rows_outside_the_partition(storage):
    schema = pa.schema([("p", pa.string()), ("id", pa.int64())])
    t = storage.create_table("t", schema, partition_keys=["p"])
    t.write(pa.table({"p": ["a", "b"], "id": [1, 2]}))
    before = table_files(t)
    big = pa.table({"p": ["a"] * 50_000 + ["b"], "id": pa.array(range(50_001), pa.int64())})
    with pytest.raises(tidelake.InvalidArgumentError):
        t.write(big, mode="overwrite", overwrite_partition={"p": "a"})
    with pytest.raises(tidelake.InvalidArgumentError):
        t.write(pa.table({"p": [None], "id": [5]}), mode="overwrite", overwrite_partition={"p": "a"})
    assert len(t.snapshots()) == 1
    assert table_files(t) == before
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_commit_after_a_concurrent_schema_change(pk_table):
    """Messages written under schema 0, committed after another handle added a column: the
    files keep their schema id and read back with the new column null."""
    w = pk_table.writer()
    w.write(expected())
    msgs = w.prepare_commit()
    w.close()
    other = tidelake.open_table(pk_table.path, storage_options=pk_table.storage_options)
    other.add_column("extra", pa.string())
    pk_table.commit(msgs)
    got = tidelake.open_table(pk_table.path, storage_options=pk_table.storage_options).to_arrow()
    assert got.schema.names == SCHEMA.names + ["extra"]
    assert got.column("extra").null_count == got.num_rows == len(ROWS)


SPILL_ENGINES = {
    "partial-update": {"merge-engine": "partial-update"},
    "sequence-field": {"sequence.field": "ts"},
    "aggregation": {"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"},
    "changelog-input": {"changelog-producer": "input"},
}


@pytest.mark.parametrize("engine", list(SPILL_ENGINES))
def test_spilled_buffers_merge_with_every_engine(storage, engine):
    """Upserts of one writer spread over several spilled level-0 files per bucket: the read
    applies the merge engine across the spills in write order (sequence numbers)."""
    import random

    opts = SPILL_ENGINES[engine]
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64()), ("ts", pa.int64())])
    t = storage.create_table("t", schema, primary_keys=["id"], bucket=2, options={"write-buffer-size": "256kb", **opts})
    rng = random.Random(engine)
    model: dict = {}
    with t.writer() as w:
        for c in range(4):
            rows = [{"id": rng.randrange(5000), "a": rng.choice([None, f"a{c}-{i}"]),
                     "b": rng.choice([None, rng.randrange(10)]), "ts": rng.randrange(100)} for i in range(15_000)]
            w.upsert(pa.Table.from_pylist(rows, schema=schema))
            for r in rows:
                old = model.get(r["id"])
                if old is None:
                    model[r["id"]] = dict(r)
                elif engine == "partial-update":
                    model[r["id"]] = {f: r[f] if r[f] is not None else old[f] for f in r}
                elif engine == "aggregation":  # sum on b, last_non_null_value elsewhere
                    new = {f: r[f] if r[f] is not None else old[f] for f in r}
                    new["b"] = old["b"] if r["b"] is None else r["b"] + (old["b"] or 0)
                    model[r["id"]] = new
                elif engine == "sequence-field":
                    if r["ts"] >= old["ts"]:
                        model[r["id"]] = dict(r)
                else:
                    model[r["id"]] = dict(r)
        ids = t.commit(w.prepare_commit())
    files = [e["_FILE"] for e in _manifest_entries(t, ids[0])]
    assert len(files) >= 4, len(files)
    assert_same_rows(t.to_arrow(), pa.Table.from_pylist(list(model.values()), schema=t.schema))
    if engine == "changelog-input":  # every input record, unfolded, in the changelog
        assert t.changes(0).num_rows == 60_000


STREAM_CASES = {
    "pk-dynamic": dict(primary_keys=["id"], bucket=-1, options={"dynamic-bucket.target-row-num": "5"}),
    "pk-changelog-input": dict(primary_keys=["id"], bucket=2, options={"changelog-producer": "input"}),
    "append-unaware": dict(bucket=-1),
    "append-bucket-key": dict(bucket=2, options={"bucket-key": "id"}),
}


@pytest.mark.parametrize("case", list(STREAM_CASES))
def test_long_lived_writer_commits_rounds(tmp_path, case):
    """A streaming-style writer: write / prepare_commit / commit(identifier) four times with the
    same writer (sequence numbers, hash index and rolling files carry over between rounds);
    pypaimon reads every round the same."""
    from _peers import conform_to, pp_read

    kw = STREAM_CASES[case]
    cat, wh = new_warehouse(tmp_path)
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.t", schema, **kw)
    pk = bool(kw.get("primary_keys"))
    model: dict = {}
    appended: list = []
    w = t.writer(commit_user="stream")
    for r in range(4):
        rows = [{"id": (r * 7 + i) % 23, "v": f"r{r}-{i}"} for i in range(12)]
        w.write(pa.Table.from_pylist(rows, schema=schema))
        assert t.commit(w.prepare_commit(), commit_identifier=r + 1) == [r + 1]
        model.update({x["id"]: x for x in rows})
        appended += rows
        got = t.to_arrow()
        assert_same_rows(got, pa.Table.from_pylist(list(model.values()) if pk else appended, schema=t.schema))
        assert_same_rows(conform_to(pp_read(wh, schema=t.schema), got.schema), got)
    w.close()
    assert [s.commit_identifier for s in t.snapshots()] == [1, 2, 3, 4]
