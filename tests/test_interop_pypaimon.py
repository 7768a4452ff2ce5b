"""Tables tidelake writes read the same in pypaimon 2.1.0 (the official Paimon Python client), in
tidelake, and in a plain-Python model of the expected rows — and the reverse: tables pypaimon
writes (and tables both write into) read the same in tidelake.

Each test creates its tables in a fresh Catalog warehouse; pypaimon opens them through its own
filesystem catalog (``CatalogFactory.create({'warehouse': d}).get_table('db.t')``).

Known pypaimon limitations the comparisons account for (see tests/fixtures/README.md,
"Discrepancies with pypaimon"):

* pypaimon's primary-key read cuts TIMESTAMP(7..9) to microseconds: on PK tables both sides are
  truncated to µs before comparing (the model and tidelake are also compared at full ns).
* pypaimon reads BINARY(n) back as variable-length binary: its result is cast to tidelake's
  schema (``fixed_size_binary[n]``) before comparing; values must be identical.
* first-row tables: Java and pypaimon batch scans hide level-0 files (which is all a
  non-compacting writer produces), so their batch read is empty on both sides; the logical
  content is compared through pypaimon's *streaming* initial plan, which includes level 0.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import pathlib
import random
import shutil
import zlib

import fastavro
import pyarrow as pa
import pytest

import tidelake
from _peers import (conform_to, model_table, new_warehouse, pp_create, pp_read, pp_stream_initial,
                    pp_table, pp_write, truncate_ns_to_us)
from conftest import FIXTURES, assert_same_rows, canon

D = decimal.Decimal
UTC = dt.timezone.utc


def check_peer(t: tidelake.Table, wh: str, expected: pa.Table | None = None, *, snapshot_id: int | None = None,
               ns_to_us: bool | None = None, ident: str = "db.t") -> pa.Table:
    """pypaimon's read == tidelake's read (== ``expected`` if given). Returns tidelake's read."""
    ours = t.to_arrow(snapshot_id=snapshot_id)
    if expected is not None:
        assert_same_rows(ours, expected.select(ours.schema.names), check_types=False)
    opts = {"scan.snapshot-id": str(snapshot_id)} if snapshot_id is not None else None
    theirs = pp_read(wh, ident, opts, schema=ours.schema)
    theirs = conform_to(theirs, ours.schema)  # BINARY(n): pypaimon returns binary (values equal)
    if ns_to_us is None:
        ns_to_us = bool(t.primary_keys)
    if ns_to_us:  # pypaimon's PK read truncates TIMESTAMP(9) to µs
        assert_same_rows(truncate_ns_to_us(theirs), truncate_ns_to_us(ours))
    else:
        assert_same_rows(theirs, ours)
    return ours


# ---- all types -----------------------------------------------------------------------------------

ALL_TYPES = pa.schema([
    ("id", pa.int32()),
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()),
    ("dec10_2", pa.decimal128(10, 2)), ("dec38_10", pa.decimal128(38, 10)),
    ("s", pa.string()), ("bin", pa.binary()), ("fbin", pa.binary(4)), ("b", pa.bool_()),
    ("d", pa.date32()),
    ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ts9", pa.timestamp("ns")),
    ("ltz3", pa.timestamp("ms", tz="UTC")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("tm", pa.time32("ms")),
    ("arr_i", pa.list_(pa.int32())), ("arr_s", pa.list_(pa.string())),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.struct([("q", pa.bool_())]))])),
    ("mp", pa.map_(pa.string(), pa.int64())), ("mp_i", pa.map_(pa.int32(), pa.string())),
    ("nested", pa.list_(pa.struct([("k", pa.string()), ("vals", pa.list_(pa.float64()))]))),
])


def all_types_rows(start: int, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(start, start + n):
        if i % 7 == 3:  # an all-NULL row (but the key)
            rows.append({"id": i})
            continue
        ns = rng.randrange(-2 * 10**18, 4 * 10**18)
        rows.append({
            "id": i,
            "i8": rng.choice([-128, 127, 0, rng.randrange(-128, 128)]),
            "i16": rng.choice([-32768, 32767, rng.randrange(-32768, 32768)]),
            "i32": rng.choice([-2**31, 2**31 - 1, rng.randrange(-2**31, 2**31)]),
            "i64": rng.choice([-2**63, 2**63 - 1, rng.randrange(-2**63, 2**63)]),
            "f32": rng.choice([float("nan"), float("inf"), -0.0, 1.5, -3.25e30]),
            "f64": rng.choice([float("nan"), float("-inf"), -0.0, math.pi, 1e-300, rng.random()]),
            "dec10_2": rng.choice([D("99999999.99"), D("-99999999.99"), D("0.01"), D(rng.randrange(-10**9, 10**9)) / 100]),
            "dec38_10": rng.choice([D("9999999999999999999999999999.9999999999"), D("-0.0000000001"),
                                    D(rng.randrange(-10**37, 10**37)).scaleb(-10)]),
            "s": rng.choice(["", "héllo wörld ✓", "a" * 300, "null", f"s{i}"]),
            "bin": rng.choice([b"", b"\x00\xff" * 5, bytes(rng.randrange(256) for _ in range(20))]),
            "fbin": bytes(rng.randrange(256) for _ in range(4)),
            "b": rng.choice([True, False]),
            "d": rng.choice([dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]),
            "ts0": dt.datetime(1969, 7, 20, 20, 17, 40) + dt.timedelta(seconds=rng.randrange(10**9)),
            "ts3": dt.datetime(1960, 1, 1) + dt.timedelta(milliseconds=rng.randrange(10**13)),
            "ts6": dt.datetime(1900, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**17)),
            "ts9": ns,  # raw int64 ns: sub-µs digits survive
            "ltz3": dt.datetime(2024, 5, 14, 12, 0, tzinfo=UTC) + dt.timedelta(milliseconds=rng.randrange(-10**12, 10**12)),
            "ltz6": dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "tm": rng.randrange(0, 86_400_000),
            "arr_i": rng.choice([[], [None], [1, -2, 2**31 - 1], None]),
            "arr_s": rng.choice([["a", None, ""], [], None]),
            "st": rng.choice([{"x": i, "y": "why", "z": {"q": True}}, {"x": None, "y": None, "z": None}, None]),
            "mp": rng.choice([[("k", 1), ("", None)], [], None]),
            "mp_i": rng.choice([[(1, "one"), (-5, None)], []]),
            "nested": rng.choice([[{"k": "a", "vals": [1.0, float("nan")]}, None, {"k": None, "vals": None}], [], None]),
        })
    return rows


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_all_types(tmp_path, kind):
    cat, wh = new_warehouse(tmp_path)
    pk = ["id"] if kind == "pk" else None
    t = cat.create_table("db.t", ALL_TYPES, primary_keys=pk, bucket=2 if pk else -1)
    model: dict[int, dict] = {}
    appended: list[dict] = []
    for seed, (start, n) in enumerate([(0, 15), (10, 15)]):  # overlapping ids: upserts on PK tables
        rows = all_types_rows(start, n, seed)
        t.write(model_table(rows, ALL_TYPES))
        appended += rows
        model.update({r["id"]: r for r in rows})
    expected = model_table(model.values() if pk else appended, t.schema)
    ours = check_peer(t, wh, expected)
    # full nanoseconds survive in tidelake (pypaimon is compared at µs on PK tables)
    assert sorted(ours.column("ts9").cast(pa.int64()).to_pylist(), key=str) == \
        sorted(expected.column("ts9").cast(pa.int64()).to_pylist(), key=str)
    if kind == "pk":
        check_peer(t, wh, model_table([r for r in appended[:15]], t.schema), snapshot_id=1)


def test_char_varchar_binary_n_into_pypaimon_table(tmp_path):
    """CHAR(5)/VARCHAR(20)/BINARY(4)/TIME and the rest, in a table pypaimon created (tidelake
    cannot declare CHAR/VARCHAR from Arrow): tidelake appends the fixture's rows again."""
    wh = tmp_path / "wh"
    (wh / "db.db").mkdir(parents=True)
    shutil.copytree(FIXTURES / "warehouse" / "fx.db" / "all_types", wh / "db.db" / "t")
    t = tidelake.Catalog(str(wh)).get_table("db.t")
    before = t.to_arrow()
    sid = t.write(before)
    assert sid == t.snapshots()[-1].id
    expected = pa.concat_tables([before, before])
    ours = check_peer(t, str(wh), expected, ns_to_us=False)
    assert ours.schema.field("fbin").type == pa.binary(4)
    vc = [v for v in ours.column("vc").to_pylist() if v is not None]
    assert vc and all(len(v) <= 20 for v in vc)


# ---- partitions ----------------------------------------------------------------------------------

ESCAPED = ["a/b", "x=y", "%", "100%", "sp ace", "ünï©ødé", "q?#*", "a|b~c", "", "  ", "\t", "..", None, "plain"]


@pytest.mark.parametrize("kind", ["append", "pk", "pk-dynamic"])
def test_partition_values_needing_escaping(tmp_path, kind):
    cat, wh = new_warehouse(tmp_path)
    schema = pa.schema([("p", pa.string()), ("dt", pa.date32()), ("id", pa.int64()), ("v", pa.string())])
    pk = ["p", "dt", "id"] if kind != "append" else None
    t = cat.create_table("db.t", schema, primary_keys=pk, partition_keys=["p", "dt"],
                         bucket={"append": -1, "pk": 2, "pk-dynamic": -1}[kind])
    dates = [dt.date(2024, 5, 14), dt.date(1970, 1, 1), None] if kind == "append" else [dt.date(2024, 5, 14), dt.date(1970, 1, 1)]
    if pk:  # NOT NULL key columns: no NULL/empty partitions on the key
        values = [v for v in ESCAPED if v is not None]
    else:
        values = ESCAPED
    rows = [{"p": p, "dt": d, "id": i, "v": f"{p}|{d}"} for i, (p, d) in
            enumerate((p, d) for p in values for d in dates)]
    t.write(model_table(rows, schema))
    model = {(r["p"], r["dt"], r["id"]): r for r in rows}
    upd = [dict(r, v="new") for r in rows[::3]]
    t.write(model_table(upd, schema))
    if pk:
        model.update({(r["p"], r["dt"], r["id"]): r for r in upd})
        expected = list(model.values())
    else:
        expected = rows + upd
    check_peer(t, wh, model_table(expected, schema))
    dirs = {p.name for p in pathlib.Path(t.path).iterdir() if p.name.startswith("p=")}
    # Java's escaping (PartitionPathUtils.escapePathName), exactly as pypaimon lays it out
    assert "p=a%2Fb" in dirs and "p=x%3Dy" in dirs and "p=%25" in dirs and "p=sp ace" in dirs
    if kind == "append":
        assert "p=__DEFAULT_PARTITION__" in dirs
        # a partition filter on an escaped value, in both engines
        got = t.to_arrow(filter=[("p", "=", "a/b")])
        assert sorted(got.column("v").to_pylist()) == sorted(r["v"] for r in expected if r["p"] == "a/b")
    # pypaimon writes into the same escaped partitions (and, dynamic: through our hash index)
    pp_rows = [dict(r, v="pp") for r in rows[:: 4]]
    pp_write(pp_table(wh), model_table(pp_rows, schema))
    if pk:
        model.update({(r["p"], r["dt"], r["id"]): r for r in pp_rows})
        expected = list(model.values())
    else:
        expected = expected + pp_rows
    t.refresh()
    check_peer(t, wh, model_table(expected, schema))
    assert {p.name for p in pathlib.Path(t.path).iterdir() if p.name.startswith("p=")} == dirs


def test_partition_types_lay_out_like_pypaimon(tmp_path):
    """INT/BOOLEAN/DECIMAL/TIMESTAMP/BIGINT/TINYINT partitions (and all-NULL ones): tidelake puts
    the files in exactly the directories pypaimon uses for the same rows, and each reads both."""
    schema = pa.schema([("i", pa.int32()), ("b", pa.bool_()), ("dec", pa.decimal128(10, 2)), ("ts", pa.timestamp("ms")),
                        ("bi", pa.int64()), ("ti", pa.int8()), ("v", pa.string())])
    parts = ["i", "b", "dec", "ts", "bi", "ti"]
    rows = [{"i": -5, "b": True, "dec": D("-1.50"), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000), "bi": 2**40,
             "ti": -1, "v": "x"},
            {"i": None, "b": None, "dec": None, "ts": None, "bi": None, "ti": None, "v": "nulls"},
            {"i": 0, "b": False, "dec": D("0.00"), "ts": dt.datetime(1969, 12, 31, 23, 59, 59), "bi": -1, "ti": 127,
             "v": "y"}]
    cat, wh = new_warehouse(tmp_path)
    ours = cat.create_table("db.ours", schema, partition_keys=parts)
    ours.write(model_table(rows, schema))
    pp_write(pp_create(wh, "db.theirs", schema, partition_keys=parts), model_table(rows, schema))
    theirs = cat.get_table("db.theirs")

    def dirs(t):
        return sorted(str(p.parent.relative_to(t.path)) for p in pathlib.Path(t.path).rglob("data-*.parquet"))

    assert dirs(ours) == dirs(theirs)
    assert any("ts=2024-01-02T03%3A04%3A05.678" in d for d in dirs(ours))
    for ident, t in (("db.ours", ours), ("db.theirs", theirs)):
        check_peer(t, wh, model_table(rows, schema), ident=ident)


# ---- buckets -------------------------------------------------------------------------------------

KV = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int32())])


def key_buckets(table_dir: str, key: str) -> dict:
    """key -> set of bucket numbers holding it, from every data file on disk."""
    import pyarrow.parquet as pq

    out: dict = {}
    for f in pathlib.Path(table_dir).rglob("bucket-*/data-*.parquet"):
        bucket = int(f.parent.name.split("-")[1])
        for k in pq.ParquetFile(f).read(columns=[key]).column(0).to_pylist():
            out.setdefault(k, set()).add(bucket)
    return out


BUCKET_CASES = {
    "pk-bucket1": dict(primary_keys=["k"], bucket=1),
    "pk-bucket4": dict(primary_keys=["k"], bucket=4),
    "pk-dynamic": dict(primary_keys=["k"], bucket=-1, options={"dynamic-bucket.target-row-num": "20"}),
    "append-unaware": dict(bucket=-1),
    "append-bucket-key": dict(bucket=4, options={"bucket-key": "k"}),
}


@pytest.mark.parametrize("case", list(BUCKET_CASES))
def test_buckets_and_mixed_writers(tmp_path, case):
    """tidelake commits 3 overlapping batches, then pypaimon upserts into the same table:
    both engines must agree on every key's bucket (else a key would live twice) and on
    sequence numbers (else the older value would win)."""
    kw = BUCKET_CASES[case]
    pk = bool(kw.get("primary_keys"))
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", KV, **kw)
    model: dict = {}
    appended: list = []
    snaps: dict = {}
    rng = random.Random(zlib.crc32(case.encode()))
    for c in range(3):
        rows = [{"k": rng.randrange(60), "v": f"c{c}-{i}", "n": c} for i in range(40)]
        sid = t.write(model_table(rows, KV))
        appended += rows
        for r in rows:  # duplicates inside a batch: the last one wins
            model[r["k"]] = r
        snaps[sid] = list(model.values()) if pk else list(appended)
    for sid, rows in snaps.items():
        check_peer(t, wh, model_table(rows, KV), snapshot_id=sid)
        # time travel by timestamp resolves to the same snapshot in both engines
        ts = t.snapshot(sid).time_millis
        theirs = pp_read(wh, options={"scan.timestamp-millis": str(ts)}, schema=t.schema)
        assert_same_rows(conform_to(theirs, t.schema), t.to_arrow(timestamp_ms=ts))
    # pypaimon writes into our table
    more = [{"k": k, "v": f"pp-{k}", "n": 9} for k in range(0, 80, 3)]
    pp_write(pp_table(wh), model_table(more, KV))
    appended += more
    model.update({r["k"]: r for r in more})
    t.refresh()
    check_peer(t, wh, model_table(model.values() if pk else appended, KV))
    kb = key_buckets(t.path, "k")
    if pk:
        assert all(len(b) == 1 for b in kb.values()), {k: b for k, b in kb.items() if len(b) > 1}
    if kw["bucket"] > 0:
        # the same rows written by pypaimon into a twin table land in the same buckets
        twin = pp_create(wh, "db.twin", KV, primary_keys=kw.get("primary_keys"),
                         options={"bucket": str(kw["bucket"]), **kw.get("options", {})})
        pp_write(twin, model_table(appended, KV))
        assert key_buckets(str(tmp_path / "db.db" / "twin"), "k") == kb
    if case == "pk-dynamic":
        assert len({b for bs in kb.values() for b in bs}) > 1  # several buckets were opened
        assert any(pathlib.Path(t.path, "index").iterdir())


# ---- merge engines -------------------------------------------------------------------------------

ME = pa.schema([("k", pa.int32()), ("a", pa.int64()), ("b", pa.string()), ("c", pa.float64()), ("d", pa.string())])


def me_batches(seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    out = []
    for c in range(4):
        rows = []
        for i in range(30):
            rows.append({"k": rng.randrange(12),
                         "a": rng.choice([None, rng.randrange(-50, 50)]),
                         "b": rng.choice([None, f"b{c}{i}"]),
                         "c": rng.choice([None, rng.uniform(-5, 5)]),
                         "d": rng.choice([None, f"d{c}{i}"])})
        out.append(rows)
    return out


def fold(batches, engine):
    """The model of every merge engine, applied to batches in order (arrival = sequence)."""
    state: dict = {}
    for rows in batches:
        for r in rows:
            k = r["k"]
            old = state.get(k)
            if engine == "deduplicate" or old is None:
                if engine == "first-row" and old is not None:
                    continue
                state[k] = dict(r)
            elif engine == "first-row":
                continue
            elif engine == "partial-update":
                state[k] = {f: (r[f] if r[f] is not None else old[f]) for f in r}
            elif engine == "aggregation":
                new = dict(old)
                if r["a"] is not None:  # sum
                    new["a"] = r["a"] if old["a"] is None else old["a"] + r["a"]
                if r["b"] is not None:  # max
                    new["b"] = r["b"] if old["b"] is None else max(old["b"], r["b"])
                if r["c"] is not None:  # last_non_null_value (the default too)
                    new["c"] = r["c"]
                if r["d"] is not None:  # listagg
                    new["d"] = r["d"] if old["d"] is None else old["d"] + "," + r["d"]
                state[k] = new
    return list(state.values())


ENGINE_OPTIONS = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                    "fields.b.aggregate-function": "max",
                    "fields.c.aggregate-function": "last_non_null_value",
                    "fields.d.aggregate-function": "listagg"},
    "first-row": {"merge-engine": "first-row"},
}


@pytest.mark.parametrize("engine", list(ENGINE_OPTIONS))
@pytest.mark.parametrize("bucket", [1, 2])
def test_merge_engines(tmp_path, engine, bucket):
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", ME, primary_keys=["k"], bucket=bucket, options=ENGINE_OPTIONS[engine])
    batches = me_batches(zlib.crc32(f"{engine}{bucket}".encode()))
    sids = []
    for i, rows in enumerate(batches):
        sids.append(t.write(model_table(rows, ME)))
    if engine == "first-row":
        expected = model_table(fold(batches, engine), ME)
        # Java/pypaimon batch scans hide level-0 files of first-row tables (so would a reader of
        # an uncompacted table); the writer compacts level 0 away (Java's lookup compaction for
        # first-row), so both engines must see the whole logical content — and agree anyway.
        ours = t.to_arrow()
        theirs = conform_to(pp_read(wh, schema=t.schema), t.schema)
        assert_same_rows(theirs, ours)
        if any(s.commit_kind == "COMPACT" for s in t.snapshots()):
            assert_same_rows(ours, expected, check_types=False)
        # pypaimon's streaming initial plan merges every level, level 0 included
        assert_same_rows(conform_to(pp_stream_initial(wh), t.schema), expected, check_types=False)
        # each APPEND commit's level-0 file holds the first row of each key *within* that commit
        appends = [s.id for s in t.snapshots() if s.commit_kind == "APPEND"]
        assert len(appends) == len(batches)
        for sid, rows in zip(appends, batches):
            got = t.changes(sid - 1, sid).drop_columns(["_row_kind"])
            assert_same_rows(got, model_table(fold([rows], engine), ME), check_types=False)
        return
    for i, sid in enumerate(sids):
        check_peer(t, wh, model_table(fold(batches[: i + 1], engine), ME), snapshot_id=sid)
    check_peer(t, wh, model_table(fold(batches, engine), ME))


# ---- deletes, rowkind.field, sequence.field ----------------------------------------------------------


@pytest.mark.parametrize("bucket", [2, -1])
def test_deletes(tmp_path, bucket):
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", KV, primary_keys=["k"], bucket=bucket)
    model = {k: {"k": k, "v": f"v{k}", "n": 1} for k in range(50)}
    s1 = t.write(model_table(model.values(), KV))
    snaps = {s1: dict(model)}
    s2 = t.delete_keys(pa.table({"k": pa.array(range(0, 50, 3), pa.int64())}))  # keys only
    for k in range(0, 50, 3):
        del model[k]
    snaps[s2] = dict(model)
    # re-insert some deleted keys, delete others, and delete+upsert the same key in one writer
    with t.writer() as w:
        w.upsert(model_table([{"k": 3, "v": "back", "n": 2}, {"k": 4, "v": "gone", "n": 2}], KV))
        w.delete(pa.table({"k": pa.array([4, 5, 1000], pa.int64())}))  # 1000 never existed
        w.upsert(model_table([{"k": 5, "v": "again", "n": 3}], KV))
        s3 = t.commit(w.prepare_commit())[-1]
    model[3] = {"k": 3, "v": "back", "n": 2}
    model.pop(4, None)
    model[5] = {"k": 5, "v": "again", "n": 3}
    snaps[s3] = dict(model)
    for sid, m in snaps.items():
        check_peer(t, wh, model_table(m.values(), KV), snapshot_id=sid)
    check_peer(t, wh, model_table(model.values(), KV))


def test_rowkind_field(tmp_path):
    schema = pa.schema([("k", pa.int32()), ("v", pa.string()), ("op", pa.string())])
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", schema, primary_keys=["k"], bucket=2, options={"rowkind.field": "op"})
    rng = random.Random(5)
    model: dict = {}
    for c in range(4):
        rows = [{"k": rng.randrange(15), "v": f"{c}-{i}", "op": rng.choice(["+I", "+U", "-U", "-D", "+I"])}
                for i in range(25)]
        sid = t.write(model_table(rows, schema))
        for r in rows:
            if r["op"] in ("-D", "-U"):
                model.pop(r["k"], None)
            else:
                model[r["k"]] = r
        check_peer(t, wh, model_table(model.values(), schema), snapshot_id=sid)
    check_peer(t, wh, model_table(model.values(), schema))


@pytest.mark.parametrize("seq_type", [pa.int64(), pa.timestamp("ms")])
def test_sequence_field(tmp_path, seq_type):
    schema = pa.schema([("k", pa.int32()), ("ts", seq_type), ("v", pa.string())])
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", schema, primary_keys=["k"], bucket=2, options={"sequence.field": "ts"})
    rng = random.Random(7)
    best: dict = {}
    for c in range(4):
        rows = [{"k": rng.randrange(10), "ts": rng.randrange(5), "v": f"{c}-{i}"} for i in range(20)]
        if seq_type == pa.timestamp("ms"):
            rows = [dict(r, ts=dt.datetime(2024, 1, 1) + dt.timedelta(minutes=r["ts"])) for r in rows]
        sid = t.write(model_table(rows, schema))
        for r in rows:  # larger sequence.field wins; ties: the later write wins
            old = best.get(r["k"])
            if old is None or r["ts"] >= old["ts"]:
                best[r["k"]] = r
        check_peer(t, wh, model_table(best.values(), schema), snapshot_id=sid)


# ---- overwrite, truncate ---------------------------------------------------------------------------

PV = pa.schema([("p", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.mark.parametrize("kind", ["append", "pk", "pk-dynamic"])
def test_overwrite_and_truncate(tmp_path, kind):
    cat, wh = new_warehouse(tmp_path)
    pk = ["p", "id"] if kind != "append" else None
    t = cat.create_table("db.t", PV, primary_keys=pk, partition_keys=["p"],
                         bucket={"append": -1, "pk": 2, "pk-dynamic": -1}[kind],
                         options={"dynamic-bucket.target-row-num": "3"} if kind == "pk-dynamic" else None)

    def rows(parts, tag, n=5):
        return [{"p": p, "id": i, "v": f"{tag}-{p}{i}"} for p in parts for i in range(n)]

    snaps = {}
    cur = rows("abc", "s1")
    snaps[t.write(model_table(cur, PV))] = cur
    cur = rows("ab", "s2")
    sid = t.write(model_table(cur, PV), mode="overwrite")
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    snaps[sid] = cur
    new_a = rows("a", "s3", 3)
    cur = [r for r in cur if r["p"] != "a"] + new_a
    snaps[t.write(model_table(new_a, PV), mode="overwrite", overwrite_partition={"p": "a"})] = cur
    new_bc = rows("bc", "s4", 2)
    cur = [r for r in cur if r["p"] not in "bc"] + new_bc
    snaps[t.write(model_table(new_bc, PV), mode="overwrite", overwrite_partition="dynamic")] = cur
    snaps[t.truncate()] = []
    cur = rows("d", "s6", 2)
    snaps[t.write(model_table(cur, PV))] = cur
    assert sorted(snaps) == list(range(1, 7))
    for sid, m in snaps.items():
        check_peer(t, wh, model_table(m, PV), snapshot_id=sid)
    check_peer(t, wh, model_table(cur, PV))
    # pypaimon overwrites a partition of our table, then tidelake reads
    pp_write(pp_table(wh), model_table(rows("d", "pp", 1), PV), overwrite={"p": "d"})
    t.refresh()
    check_peer(t, wh, model_table(rows("d", "pp", 1), PV))
    # and tidelake upserts after pypaimon's overwrite (dynamic: through pypaimon's new index)
    more = rows("de", "s8", 4)
    t.write(model_table(more, PV))
    final = more if pk else rows("d", "pp", 1) + more
    check_peer(t, wh, model_table(final, PV))


# ---- schema evolution ------------------------------------------------------------------------------


def test_schema_evolution_then_write(tmp_path):
    schema = pa.schema([("k", pa.int32()), ("a", pa.int32()), ("b", pa.float32()), ("c", pa.string()),
                        ("d", pa.decimal128(10, 2))])
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", schema, primary_keys=["k"], bucket=2)
    r1 = [{"k": i, "a": i * 10, "b": i / 2, "c": f"c{i}", "d": D(i) / 4} for i in range(10)]
    s1 = t.write(model_table(r1, schema))
    t.add_column("e", pa.string())
    t.rename_column("c", "c2")
    t.drop_column("b")
    t.update_column_type("a", pa.int64())
    t.update_column_type("d", pa.decimal128(20, 2))
    t.add_column("f", pa.int16(), first=True)
    assert t.schema.names == ["f", "k", "a", "c2", "d", "e"]
    r2 = [{"f": 1, "k": i, "a": 2**40 + i, "c2": f"new{i}", "d": D("123456789012.5"), "e": "e"} for i in range(5, 15)]
    s2 = t.write(model_table(r2, t.schema))
    model = {r["k"]: {"f": None, "k": r["k"], "a": r["a"], "c2": r["c"], "d": r["d"], "e": None} for r in r1}
    model.update({r["k"]: r for r in r2})
    check_peer(t, wh, model_table(model.values(), t.schema))
    check_peer(t, wh, model_table(r1, schema), snapshot_id=s1)  # in the schema of snapshot 1
    check_peer(t, wh, model_table(model.values(), t.schema), snapshot_id=s2)
    # pypaimon writes in the evolved schema too
    pp_write(pp_table(wh), model_table([{"f": 7, "k": 0, "a": 1, "c2": "pp", "d": D(1), "e": "pp"}], t.schema))
    model[0] = {"f": 7, "k": 0, "a": 1, "c2": "pp", "d": D(1), "e": "pp"}
    t.refresh()
    check_peer(t, wh, model_table(model.values(), t.schema))


# ---- changelog-producer=input ------------------------------------------------------------------------


def test_changelog_producer_input(tmp_path):
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", KV, primary_keys=["k"], bucket=2, options={"changelog-producer": "input"})
    inputs = {}  # snapshot -> [(kind, row)]
    b1 = [{"k": k, "v": f"a{k}", "n": 1} for k in range(6)]
    inputs[t.write(model_table(b1, KV))] = [("+I", r) for r in b1]
    # pypaimon follows the table with a streaming read (changelog follow-up scanner)
    sb = pp_table(wh).new_stream_read_builder().with_include_row_kind(True).with_poll_interval_ms(10)
    pp_read_stream = sb.new_read()
    plans = sb.new_streaming_scan().stream_sync()
    pp_initial = pp_read_stream.to_arrow(next(plans).splits())
    b2 = [{"k": 1, "v": "x", "n": 2}, {"k": 1, "v": "y", "n": 3}, {"k": 9, "v": "z", "n": 2}]  # key 1 twice
    inputs[t.upsert(model_table(b2, KV))] = [("+I", r) for r in b2]
    inputs[t.delete_keys(pa.table({"k": pa.array([2, 3], pa.int64())}))] = [
        ("-D", {"k": 2, "v": None, "n": None}), ("-D", {"k": 3, "v": None, "n": None})]
    schema = pa.schema([("_row_kind", pa.string())] + list(KV))
    assert_same_rows(pp_initial, model_table([{"_row_kind": "+I", **r} for r in b1], schema), check_types=False)
    for sid, recs in inputs.items():
        snap = t.snapshot(sid)
        assert snap.raw.get("changelogManifestList")
        assert snap.changelog_record_count == len(recs)
        got = t.changes(sid - 1, sid)
        # Paimon's input changelog holds every input record (not folded), with its row kind
        exp = model_table([{"_row_kind": kind, **r} for kind, r in recs], schema)
        assert_same_rows(got, exp, check_types=False)
        if sid > 1:
            theirs = pp_read_stream.to_arrow(next(plans).splits())
            assert_same_rows(theirs, exp, check_types=False)
    model = {r["k"]: r for r in b1}
    model.update({r["k"]: r for r in b2})
    del model[2], model[3]
    check_peer(t, wh, model_table(model.values(), KV))


# ---- the reverse: tables pypaimon writes ---------------------------------------------------------------


@pytest.mark.parametrize("bucket", [2, -1])
def test_pypaimon_written_pk_table_reads_the_same(tmp_path, bucket):
    wh = str(tmp_path)
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                        ("v", pa.string()), ("x", pa.float64()), ("ts", pa.timestamp("us"))])
    pt = pp_create(wh, "db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                   options={"bucket": str(bucket)})
    rng = random.Random(11)
    model: dict = {}
    snaps = {}
    for c in range(4):
        rows = [{"p": rng.choice(["a", "b/c", "d e"]), "k": rng.randrange(30), "v": f"{c}-{i}",
                 "x": rng.choice([None, rng.random(), float("nan")]), "ts": dt.datetime(2024, 1, 1, c)}
                for i in range(30)]
        # pypaimon keeps the last of duplicate keys within a commit, as Paimon does
        pp_write(pt, model_table(rows, schema))
        for r in rows:
            model[(r["p"], r["k"])] = r
        snaps[c + 1] = list(model.values())
    t = tidelake.Catalog(wh).get_table("db.t")
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    for sid, rows in snaps.items():
        check_peer(t, wh, model_table(rows, t.schema), snapshot_id=sid)
    # and tidelake continues the table: upserts over pypaimon's keys
    more = [{"p": "a", "k": k, "v": "tl", "x": 1.0, "ts": dt.datetime(2025, 1, 1)} for k in range(0, 40, 2)]
    t.write(model_table(more, t.schema))
    model.update({(r["p"], r["k"]): r for r in more})
    check_peer(t, wh, model_table(model.values(), t.schema))
    # a key never straddles buckets within a partition (our writes used pypaimon's buckets)
    import pyarrow.parquet as pq

    per_part: dict = {}
    for f in pathlib.Path(t.path).rglob("bucket-*/data-*.parquet"):
        for k in pq.ParquetFile(f).read(columns=["k"]).column(0).to_pylist():
            per_part.setdefault((f.parent.parent.name, k), set()).add(f.parent.name)
    assert all(len(b) == 1 for b in per_part.values())


def test_pypaimon_written_append_table_reads_the_same(tmp_path):
    wh = str(tmp_path)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()),
                        ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32()))])
    pt = pp_create(wh, "db.t", schema, partition_keys=["dt"])
    all_rows = []
    for c in range(3):
        rows = [{"dt": ["2024-01-01", "2024-01-02", None][i % 3], "id": c * 100 + i, "v": f"v{i}",
                 "arr": [i, None], "m": [("a", i)]} for i in range(20)]
        pp_write(pt, model_table(rows, schema))
        all_rows += rows
    new_day = [dict(r, v="ow") for r in all_rows[:6] if r["dt"] == "2024-01-01"]
    pp_write(pt, model_table(new_day, schema), overwrite={"dt": "2024-01-01"})
    t = tidelake.Catalog(wh).get_table("db.t")
    expected = [r for r in all_rows if r["dt"] != "2024-01-01"] + new_day
    check_peer(t, wh, model_table(expected, t.schema))
    check_peer(t, wh, model_table(all_rows[:20], t.schema), snapshot_id=1)
    t.write(model_table(all_rows[:4], t.schema))
    check_peer(t, wh, model_table(expected + all_rows[:4], t.schema))


# ---- metadata files: manifests, lists, index manifests, snapshots ------------------------------------

# Java's Avro schemas (paimon-format.md §4; Java ManifestEntry / DataFileMeta / ManifestFileMeta /
# IndexManifestEntry SCHEMA). Optional (nullable) fields included: Java writes them all.
MANIFEST_FIELDS = {"_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"}
FILE_META_FIELDS = {"_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
                    "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID",
                    "_LEVEL", "_EXTRA_FILES", "_CREATION_TIME", "_DELETE_ROW_COUNT",
                    "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
                    "_FIRST_ROW_ID", "_WRITE_COLS"}
STATS_FIELDS = {"_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS"}
LIST_FIELDS = {"_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
               "_PARTITION_STATS", "_SCHEMA_ID", "_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL",
               "_MIN_ROW_ID", "_MAX_ROW_ID"}
INDEX_FIELDS = {"_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME", "_FILE_SIZE",
                "_ROW_COUNT", "_DELETIONS_VECTORS_RANGES"}
# fields pypaimon 2.1 writes that Java's schema does not have (paimon-format.md §4.2)
PYPAIMON_ONLY = {"list": {"_TOTAL_BUCKETS", "_EXTRA_FILES"}, "manifest": set(), "index": set()}
SNAPSHOT_FIELDS = {"version", "id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                   "commitIdentifier", "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount"}


def avro_fields(path: pathlib.Path) -> tuple[set, list]:
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        records = list(r)
        names = {fld["name"] for fld in r.writer_schema["fields"]}
    return names, records


def reference_fields() -> dict:
    """Field sets of pypaimon-written metadata files (the fixtures): ours must be a superset."""
    ref: dict = {"manifest": set(), "list": set(), "index": set()}
    root = FIXTURES / "warehouse" / "fx.db"
    for table in ("pk_dynamic_bucket", "pk_changelog_input", "append_overwrite"):
        for f in (root / table / "manifest").iterdir():
            names, _ = avro_fields(f)
            kind = "index" if f.name.startswith("index-manifest") else "list" if f.name.startswith("manifest-list") else "manifest"
            ref[kind] |= names - PYPAIMON_ONLY[kind]
    return ref


def test_metadata_files_decode_with_fastavro(tmp_path):
    cat, wh = new_warehouse(tmp_path)
    part = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
    tables = {
        "dyn": cat.create_table("db.dyn", part, primary_keys=["p", "k"], partition_keys=["p"], bucket=-1),
        "cl": cat.create_table("db.cl", part, primary_keys=["p", "k"], partition_keys=["p"], bucket=2,
                               options={"changelog-producer": "input"}),
        "app": cat.create_table("db.app", part, partition_keys=["p"]),
    }
    for t in tables.values():
        for c in range(3):
            t.write(model_table([{"p": p, "k": i, "v": f"{c}"} for p in "xy" for i in range(5 * c, 5 * c + 8)], part))
    tables["app"].write(model_table([{"p": "x", "k": 0, "v": "o"}], part), mode="overwrite",
                        overwrite_partition={"p": "x"})
    tables["dyn"].delete_keys(pa.table({"p": ["x"], "k": pa.array([1], pa.int64())}))
    tables["cl"].truncate()
    ref = reference_fields()
    seen = {"manifest": 0, "list": 0, "index": 0, "delete_entries": 0, "changelog_lists": 0}
    for name, t in tables.items():
        root = pathlib.Path(t.path)
        kinds = {}
        for f in sorted((root / "manifest").iterdir()):
            names, records = avro_fields(f)
            if f.name.startswith("index-manifest"):
                kind, required = "index", INDEX_FIELDS
            elif f.name.startswith("manifest-list"):
                kind, required = "list", LIST_FIELDS
            else:
                kind, required = "manifest", MANIFEST_FIELDS
            kinds[f.name] = kind
            assert required <= names, (f.name, required - names)
            assert ref[kind] <= names, (f.name, ref[kind] - names)
            seen[kind] += 1
            for rec in records:
                assert set(rec) == names
                if kind == "manifest":
                    assert rec["_VERSION"] == 2 and rec["_KIND"] in (0, 1)
                    assert FILE_META_FIELDS <= set(rec["_FILE"]), FILE_META_FIELDS - set(rec["_FILE"])
                    for s in ("_KEY_STATS", "_VALUE_STATS"):
                        assert STATS_FIELDS <= set(rec["_FILE"][s])
                    seen["delete_entries"] += rec["_KIND"] == 1
                elif kind == "list":
                    assert (root / "manifest" / rec["_FILE_NAME"]).is_file()
                    assert rec["_FILE_SIZE"] == (root / "manifest" / rec["_FILE_NAME"]).stat().st_size
                elif kind == "index":
                    assert rec["_INDEX_TYPE"] == "HASH"
                    assert (root / "index" / rec["_FILE_NAME"]).stat().st_size == rec["_FILE_SIZE"] == 4 * rec["_ROW_COUNT"]
        for snap_file in sorted((root / "snapshot").glob("snapshot-*")):
            snap = json.loads(snap_file.read_text())
            assert SNAPSHOT_FIELDS <= set(snap), SNAPSHOT_FIELDS - set(snap)
            assert snap["id"] == int(snap_file.name.split("-")[1]) and snap["version"] == 3
            for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
                if snap.get(key):
                    assert kinds[snap[key]] == "list"
                    if key + "Size" in snap:
                        assert snap[key + "Size"] == (root / "manifest" / snap[key]).stat().st_size
            if snap.get("indexManifest"):
                assert kinds[snap["indexManifest"]] == "index"
            seen["changelog_lists"] += bool(snap.get("changelogManifestList"))
        assert (root / "snapshot" / "LATEST").read_text().strip() == str(t.latest_snapshot().id)
    assert seen["index"] and seen["delete_entries"] and seen["changelog_lists"] and seen["manifest"] and seen["list"]
