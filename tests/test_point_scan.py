"""Point scans: a filter that pins every primary-key column (``=``, ``in``, under and/or) reads
only the rows of the keys it pins before the merge (as lookups do), which never changes a
result: such scans and change reads equal the unpinned read filtered by pyarrow, on random
histories of several merge engines (deletion vectors, partial-update, aggregation, first-row,
``sequence.field``, a changelog producer), fixed and dynamic buckets, partitioned or not, one-
or two-column keys (hypothesis)."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lookup import ENGINES, SCHEMA
from test_pruning import _expected

import tidelake

ENGINES = {**ENGINES, "changelog-lookup": ({"changelog-producer": "lookup"}, True)}
KS = list(range(8))
SS = ["a", "long-string-key"]
PS = ["p1", "p2"]
ABSENT_K = 99

row_st = st.fixed_dictionaries({
    "k": st.sampled_from(KS), "s": st.sampled_from(SS), "p": st.sampled_from(PS),
    "v": st.none() | st.integers(-5, 5), "w": st.none() | st.sampled_from(["x", "y"]),
    "ts": st.integers(0, 5),
})
commit_st = st.tuples(st.booleans(), st.lists(row_st, min_size=1, max_size=12))


def _pin(column: str, values: list) -> st.SearchStrategy:
    """``=`` one value or ``in`` a list of them (absent and repeated values included)."""
    return st.one_of(st.tuples(st.just(column), st.just("="), st.sampled_from(values)),
                     st.tuples(st.just(column), st.just("in"), st.lists(st.sampled_from(values), max_size=5)))


other_st = st.one_of(st.tuples(st.just("v"), st.sampled_from([">", "<=", "="]), st.integers(-5, 5)),
                     st.tuples(st.just("w"), st.just("="), st.sampled_from(["x", "y"])))


@st.composite
def pinning_filter(draw, keys: list[str], partitioned: bool) -> list[list[tuple]]:
    """An OR of conjunctions, each pinning every key column (the partition column optionally:
    the trimmed key is what point scans need), with optional predicates on other columns."""
    dnf = []
    for _ in range(draw(st.integers(1, 3))):
        conj = [draw(_pin("k", KS + [ABSENT_K]))]
        if "s" in keys:
            conj.append(draw(_pin("s", SS + ["absent"])))
        if partitioned and draw(st.booleans()):
            conj.append(draw(_pin("p", PS)))
        conj += draw(st.lists(other_st, max_size=2))
        dnf.append(draw(st.permutations(conj)))
    return dnf


def _rows(t: pa.Table) -> list[str]:
    return sorted(map(repr, t.to_pylist()))


counter = itertools.count()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), engine=st.sampled_from(sorted(ENGINES)), dynamic=st.booleans(), two_keys=st.booleans(),
       partitioned=st.booleans(), commits=st.lists(commit_st, min_size=1, max_size=5))
def test_point_scans_equal_filtered_full_reads(tmp_path, data, engine, dynamic, two_keys, partitioned, commits):
    options, deletes = ENGINES[engine]
    keys = (["k", "s"] if two_keys else ["k"]) + (["p"] if partitioned else [])
    bucket = {"bucket": "-1", "dynamic-bucket.target-row-num": "3"} if dynamic else {"bucket": "2"}
    t = tidelake.create_table(tmp_path / f"t{next(counter)}", SCHEMA, primary_keys=keys,
                              partition_keys=["p"] if partitioned else None,
                              options={"num-sorted-run.compaction-trigger": "3", **bucket, **options})
    for delete, rows in commits:
        unique = list({tuple(r[c] for c in keys): r for r in rows}.values())  # one row per key and commit
        batch = pa.Table.from_pylist(unique, schema=SCHEMA)
        t.delete_keys(batch) if delete and deletes else t.upsert(batch)
    full = t.to_arrow()
    for _ in range(3):
        dnf = data.draw(pinning_filter(keys, partitioned))
        assert _rows(t.to_arrow(filter=dnf)) == _rows(_expected(full, dnf)), dnf
        projected = t.to_arrow(columns=["w", "v"], filter=dnf)
        assert _rows(projected) == _rows(_expected(full, dnf).select(["w", "v"])), dnf
        for mode in ["delta", "diff"] + (["changelog"] if "changelog-producer" in options else []):
            changes = t.changes(0, mode=mode)
            assert _rows(t.changes(0, filter=dnf, mode=mode)) == _rows(_expected(changes, dnf)), (mode, dnf)
