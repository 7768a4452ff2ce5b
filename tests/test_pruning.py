"""Pruning never changes a result: reads with filters that pin bucket-key columns (``=``,
``in``, under and/or) equal the unpruned read filtered by pyarrow, on random primary-key and
append tables with one or two bucket-key columns (hypothesis); and such a filter plans only
the buckets its values hash to."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc
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
