"""Pruning never changes a result: reads with filters that pin bucket-key columns (``=``,
``in``, under and/or) equal the unpruned read filtered by pyarrow, on random primary-key and
append tables with one or two bucket-key columns (hypothesis); and such a filter plans only
the buckets its values hash to."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelake

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    pa.field("v", pa.int64()),
])
IDS = list(range(-3, 12))
NAMES = ["", "a", "b", "long name over seven bytes"]


def _create(root, n: int, *, pk: bool, two_keys: bool, buckets: int, partitioned: bool) -> tidelake.Table:
    keys = ["id", "name"] if two_keys else ["id"]
    options = {"bucket": str(buckets)}
    if not pk:
        options["bucket-key"] = ",".join(keys)
    primary = (keys + (["dt"] if partitioned else [])) if pk else None
    return tidelake.create_table(root / f"t{n}", SCHEMA, primary_keys=primary,
                                 partition_keys=["dt"] if partitioned else None, options=options)


rows_st = st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(NAMES), st.sampled_from(["d1", "d2"]),
                             st.none() | st.integers(-5, 5)), min_size=1, max_size=40)
term_st = st.one_of(
    st.tuples(st.just("id"), st.just("="), st.sampled_from(IDS + [99])),
    st.tuples(st.just("id"), st.just("in"), st.lists(st.sampled_from(IDS + [99]), max_size=4)),
    st.tuples(st.just("name"), st.just("="), st.sampled_from(NAMES)),
    st.tuples(st.just("name"), st.just("in"), st.lists(st.sampled_from(NAMES), max_size=3)),
    st.tuples(st.just("v"), st.sampled_from([">", "<=", "="]), st.integers(-5, 5)),
    st.tuples(st.just("dt"), st.just("="), st.sampled_from(["d1", "d2"])),
)
filter_st = st.lists(st.lists(term_st, min_size=1, max_size=3), min_size=1, max_size=3)

_OPS = {"=": pc.equal, ">": pc.greater, "<=": pc.less_equal}


def _expected(table: pa.Table, dnf: list[list[tuple]]) -> pa.Table:
    mask = None
    for conj in dnf:
        part = None
        for col, op, value in conj:
            if op == "in":
                term = pc.is_in(table[col], pa.array(value, table.schema.field(col).type))
            else:
                term = _OPS[op](table[col], pa.scalar(value, table.schema.field(col).type))
            term = pc.fill_null(term, False)
            part = term if part is None else pc.and_(part, term)
        mask = part if mask is None else pc.or_(mask, part)
    return table.filter(mask)


def _sorted(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(t[c].to_pylist() for c in SCHEMA.names)), key=repr)


counter = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pk=st.booleans(), two_keys=st.booleans(), buckets=st.integers(1, 5), partitioned=st.booleans(),
       commits=st.lists(rows_st, min_size=1, max_size=3), dnf=filter_st)
def test_bucket_pruned_reads_equal_filtered_full_reads(tmp_path, pk, two_keys, buckets, partitioned, commits, dnf):
    t = _create(tmp_path, next(counter), pk=pk, two_keys=two_keys, buckets=buckets, partitioned=partitioned)
    for rows in commits:
        t.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
    full = t.to_arrow()
    assert _sorted(t.to_arrow(filter=dnf)) == _sorted(_expected(full, dnf))


def test_a_point_filter_plans_only_the_bucket_of_its_key(tmp_path):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "8"})
    t.write(pa.Table.from_pylist([{"id": i, "name": "n", "dt": dt, "v": i} for i in range(400)
                                  for dt in ("d1", "d2")], schema=SCHEMA))
    assert len(t.scan().splits()) == 16
    for key in (0, 7, 123, 399):
        point = t.scan(filter=[("id", "=", key)])
        assert len(point.splits()) == 2  # one bucket in each partition
        assert sorted(point.to_arrow()["dt"].to_pylist()) == ["d1", "d2"]
    assert len(t.scan(filter=[("id", "in", [1, 2, 3])]).splits()) <= 6
    assert len(t.scan(filter=[("id", "=", 5), ("dt", "=", "d2")]).splits()) == 1
    # a filter that does not pin the bucket key plans every bucket
    assert len(t.scan(filter=[[("id", "=", 5)], [("v", ">", 3)]]).splits()) == 16
    assert len(t.scan(filter=[("id", ">", 5)]).splits()) == 16


# ---- dynamic-bucket tables: buckets found through their HASH index ----------------------------


def _create_dynamic(root, n: int, *, two_keys: bool, partitioned: bool, cross: bool, target: int) -> tidelake.Table:
    """A dynamic-bucket table (``bucket = -1``) with ``target`` keys per bucket; ``cross``: the
    primary key lacks the partition column (cross-partition upserts, no pruning by index)."""
    keys = ["id", "name"] if two_keys else ["id"]
    primary = keys + (["dt"] if partitioned and not cross else [])
    return tidelake.create_table(root / f"d{n}", SCHEMA, primary_keys=primary,
                                 partition_keys=["dt"] if partitioned or cross else None,
                                 options={"bucket": "-1", "dynamic-bucket.target-row-num": str(target)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(two_keys=st.booleans(), partitioned=st.booleans(), cross=st.booleans(), target=st.integers(1, 6),
       commits=st.lists(rows_st, min_size=1, max_size=3), dnf=filter_st,
       keys=st.lists(st.tuples(st.sampled_from(IDS + [99]), st.sampled_from(NAMES)), max_size=5))
def test_dynamic_bucket_pruned_reads_and_lookups_equal_unpruned_ones(tmp_path, two_keys, partitioned, cross, target,
                                                                     commits, dnf, keys):
    t = _create_dynamic(tmp_path, next(counter), two_keys=two_keys, partitioned=partitioned, cross=cross,
                        target=target)
    for rows in commits:
        t.upsert(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA))
    full = t.to_arrow()
    assert _sorted(t.to_arrow(filter=dnf)) == _sorted(_expected(full, dnf))
    # the same through a table without a read cache (hash indexes scanned, not cached)
    uncached = tidelake.open_table(t.path, cache_bytes=0)
    assert _sorted(uncached.to_arrow(filter=dnf)) == _sorted(_expected(full, dnf))
    # lookups of keys of every partition the table has
    pk = t.primary_keys
    parts = ["d1", "d2"] if "dt" in pk else [None]
    wanted = [{"id": i, "name": s, "dt": p} for i, s in keys for p in parts]
    key_rows = pa.Table.from_pylist([{c: w[c] for c in pk} for w in wanted],
                                    schema=pa.schema([SCHEMA.field(c) for c in pk]))
    expected = [r for r in full.to_pylist()
                if any(all(r[c] == w[c] for c in pk) for w in wanted)]
    for table in (t, uncached):
        assert sorted(map(repr, table.lookup(key_rows).to_pylist())) == sorted(map(repr, expected))


def _corrupt_footer(path: str) -> None:
    with open(path, "r+b") as fh:  # the footer's length and magic
        fh.seek(-8, 2)
        fh.write(b"garbage!")


def test_a_point_filter_on_a_dynamic_bucket_table_opens_only_the_bucket_of_its_key(tmp_path):
    """The key's bucket is found through the HASH index: the files of every other bucket are made
    unreadable, and a point scan and a lookup of the key still answer (a full read fails)."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={"bucket": "-1", "dynamic-bucket.target-row-num": "50"})
    # keys ordered so that every bucket's key range spans all keys: key statistics prune nothing
    ids = sorted(range(200), key=lambda i: (i % 4, i))
    t.upsert(pa.Table.from_pylist([{"id": i, "name": "n", "dt": dt, "v": i} for i in ids
                                   for dt in ("d1", "d2")], schema=SCHEMA))
    t.upsert(pa.Table.from_pylist([{"id": i, "name": "m", "dt": "d1", "v": -i} for i in range(0, 200, 7)],
                                  schema=SCHEMA))
    assert len(t.scan().splits()) == 8  # 4 buckets of 50 keys in each partition
    key = 123
    point = t.scan(filter=[("id", "=", key), ("dt", "=", "d1")])
    assert len(point.splits()) == 1
    bucket_dir = f"/dt=d1/bucket-{_bucket(point)}/"
    files = [f["file_path"].removeprefix("file:") for f in t.system("files").to_pylist()]
    assert any(bucket_dir in f for f in files)
    for f in files:
        if bucket_dir not in f:
            _corrupt_footer(f)
    fresh = tidelake.open_table(t.path)
    want = [{"id": key, "name": "n", "dt": "d1", "v": key}]
    assert fresh.to_arrow(filter=[("id", "=", key), ("dt", "=", "d1")]).to_pylist() == want
    assert fresh.to_arrow(filter=[("id", "in", [key, 999]), ("dt", "=", "d1")]).to_pylist() == want
    assert fresh.lookup([(key, "d1")]).to_pylist() == want
    assert fresh.lookuper().lookup([(key, "d1")]).to_pylist() == want
    with pytest.raises(tidelake.TidelakeError):
        fresh.to_arrow()
    with pytest.raises(tidelake.TidelakeError):  # the other partition's bucket of the same key
        fresh.to_arrow(filter=[("id", "=", key)])


def _bucket(scan: tidelake.Scan) -> int:
    import json

    (split,) = scan.splits()
    return json.loads(split.payload)["bucket"]
