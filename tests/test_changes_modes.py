"""Reading changes between snapshots and tags in every ``incremental-between-scan-mode``:
``diff`` against a dict model of each snapshot's rows over random histories (primary-key tables
of several merge engines, with and without deletion vectors, and append tables; local and S3),
diffs between tags whose snapshots between have expired, and what ``delta``, ``changelog`` and
``auto`` select."""

from __future__ import annotations

import itertools
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelake
from _s3 import Storage

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
_names = itertools.count()

KINDS = {
    "deduplicate": {},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
}

# one step of a history: ("upsert", ids, version) | ("delete", ids) | ("compact",)
STEPS = st.one_of(
    st.tuples(st.just("upsert"), st.lists(st.integers(0, 400), min_size=1, max_size=150), st.integers(0, 3)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 400), min_size=1, max_size=60)),
    st.tuples(st.just("compact")),
)


def _rows(ids: list[int], version: int) -> pa.Table:
    ids = sorted(set(ids))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{(i * 7 + version) % 5}" for i in ids],
                     "n": pa.array([i % 13 + version for i in ids], pa.int64())}, schema=SCHEMA)


def _rows_of(t: tidelake.Table, snapshot_id: int) -> dict[int, tuple]:
    return {r["id"]: (r["v"], r["n"]) for r in t.to_arrow(snapshot_id=snapshot_id).to_pylist()}


def _run(t: tidelake.Table, steps: list[tuple]) -> dict[int, dict[int, tuple]]:
    """Apply ``steps`` (checking the latest rows against a dict model after each); the rows a
    read of each snapshot returns, by snapshot id (on deletion-vector tables a snapshot whose
    level-0 files are not compacted yet hides them, as in Paimon)."""
    model: dict[int, tuple] = {}
    for step in steps:
        if step[0] == "upsert":
            rows = _rows(step[1], step[2])
            t.upsert(rows)
            model.update({r["id"]: (r["v"], r["n"]) for r in rows.to_pylist()})
        elif step[0] == "delete":
            t.delete_keys(pa.table({"id": pa.array(sorted(set(step[1])), pa.int64())}))
            for i in step[1]:
                model.pop(i, None)
        else:
            t.compact(full=True)
        assert {r["id"]: (r["v"], r["n"]) for r in t.to_arrow().to_pylist()} == model
    return {s.id: _rows_of(t, s.id) for s in t.snapshots()}


def _check_diff(diff: pa.Table, before: dict[int, tuple], after: dict[int, tuple]) -> None:
    """``diff`` turns ``before`` into ``after`` and says nothing about unchanged rows."""
    state = dict(before)
    for r in diff.to_pylist():
        if r["_row_kind"] == "-D":
            assert r["id"] in before and r["id"] not in after, r
            assert (r["v"], r["n"]) == before[r["id"]], r  # the row as it was
            del state[r["id"]]
        else:
            assert r["_row_kind"] in ("+I", "+U"), r
            assert before.get(r["id"]) != (r["v"], r["n"]), r  # only rows that changed
            state[r["id"]] = (r["v"], r["n"])
    assert state == after


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEPS, min_size=1, max_size=6), data=st.data())
def test_diff_between_any_two_snapshots_equals_the_model(storage: Storage, kind, steps, data):
    t = storage.create_table(f"diff{next(_names)}", SCHEMA, primary_keys=["id"], bucket=2, options=KINDS[kind])
    states = _run(t, [("upsert", list(range(0, 400, 7)), 0), *steps])
    ids = sorted(states)
    for _ in range(3):
        end = data.draw(st.sampled_from(ids))
        start = data.draw(st.sampled_from([0, *[i for i in ids if i <= end]]))
        diff = t.changes(start, end, mode="diff")
        _check_diff(diff, states.get(start, {}), states[end])


def test_diff_across_many_batches(tmp_path):
    """Buckets of several output batches on each side (the walk refills both sides)."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=1)
    t.write(_rows(list(range(0, 60_000, 2)), 0))
    t.upsert(_rows(list(range(0, 60_000, 3)), 1))  # new keys and changed rows, interleaved
    t.delete_keys(pa.table({"id": pa.array(range(0, 60_000, 10), pa.int64())}))
    t.upsert(_rows(list(range(4, 60_000, 14)), 0))  # unchanged rows again, changed back, re-inserted
    ids = [s.id for s in t.snapshots()]
    for start, end in [(ids[0], ids[-1]), (0, ids[-1]), (ids[1], ids[2])]:
        _check_diff(t.changes(start, end, mode="diff"), _rows_of(t, start) if start else {}, _rows_of(t, end))


def test_diff_sees_a_delete_whose_row_stays_in_a_shared_file(tmp_path):
    """Between two snapshots that share the deleted row's file (no compaction between), the
    delete lives only in the newer files: the diff must still report it, and an upsert of an
    unchanged row must not show."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=1)
    t.write(_rows([1, 2, 3, 4], 0))
    t.create_tag("start")
    t.delete_keys(pa.table({"id": pa.array([3], pa.int64())}))
    t.upsert(_rows([4], 0))  # the same values again
    t.upsert(_rows([2], 1))
    t.create_tag("end")
    got = t.changes(start_tag="start", end_tag="end").sort_by("id").to_pylist()
    assert got == [{"_row_kind": "+I", "id": 2, "v": "v0", "n": 3}, {"_row_kind": "-D", "id": 3, "v": "v1", "n": 3}]


def test_changes_between_tags_after_the_snapshots_between_expired(storage: Storage):
    t = storage.create_table("tags", SCHEMA, primary_keys=["id"], bucket=2)
    t.write(_rows(list(range(100)), 0))
    t.create_tag("monday")
    before = {r["id"]: (r["v"], r["n"]) for r in t.to_arrow().to_pylist()}
    t.upsert(_rows(list(range(50, 150)), 1))
    t.delete_keys(pa.table({"id": pa.array(range(0, 10), pa.int64())}))
    t.compact(full=True)
    t.create_tag("tuesday")
    after = {r["id"]: (r["v"], r["n"]) for r in t.to_arrow().to_pylist()}
    t.write(_rows([999], 2))
    t.expire_snapshots(retain_min=1, older_than_ms=2**62)
    assert [s.id for s in t.snapshots()] == [t.latest_snapshot().id]
    diff = t.changes(start_tag="monday", end_tag="tuesday")
    _check_diff(diff, before, after)
    assert Counter(diff["_row_kind"].to_pylist()) == {"-D": 10, "+I": 100}
    # the snapshots between are gone: the delta of the tags' range cannot be read
    with pytest.raises(tidelake.TableNotFoundError, match="expired"):
        t.changes(start_tag="monday", end_tag="tuesday", mode="delta")
    projected = t.changes(start_tag="monday", end_tag="tuesday", columns=["v"], filter=[("n", ">", 5)])
    assert projected.column_names == ["_row_kind", "v"]
    assert projected.num_rows == sum(1 for r in diff.to_pylist() if r["n"] > 5)


def test_diff_of_an_append_table(tmp_path):
    t = tidelake.create_table(tmp_path / "a", pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1, 2]}))
    t.write(pa.table({"id": [3, 3]}))
    t.write(pa.table({"id": [9]}), mode="overwrite")
    t.write(pa.table({"id": [10]}))

    def kinds(diff: pa.Table) -> Counter:
        return Counter(zip(diff["_row_kind"].to_pylist(), diff["id"].to_pylist()))

    assert kinds(t.changes(0, 2, mode="diff")) == {("+I", 1): 1, ("+I", 2): 1, ("+I", 3): 2}
    assert kinds(t.changes(2, 4, mode="diff")) == {("-D", 1): 1, ("-D", 2): 1, ("-D", 3): 2, ("+I", 9): 1,
                                                   ("+I", 10): 1}
    assert t.changes(4, 4, mode="diff").num_rows == 0


def test_modes_select_delta_or_changelog(tmp_path):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=1,
                              options={"changelog-producer": "lookup"})
    t.write(_rows([1, 2], 0))
    t.upsert(_rows([2], 1))
    auto = t.changes(0)
    assert t.changes(0, mode="changelog").equals(auto)  # a changelog producer: auto is changelog
    assert sorted(zip(auto["_row_kind"].to_pylist(), auto["id"].to_pylist())) == [
        ("+I", 1), ("+I", 2), ("+U", 2), ("-U", 2)]
    delta = t.changes(0, mode="delta")
    assert sorted(zip(delta["_row_kind"].to_pylist(), delta["id"].to_pylist())) == [("+I", 1), ("+I", 2), ("+I", 2)]
    t.set_option("incremental-between-scan-mode", "delta")
    assert sorted(tidelake.open_table(t.path).changes(0)["id"].to_pylist()) == [1, 2, 2]
    assert t.effective_options["incremental-between-scan-mode"] == "delta"

    plain = tidelake.create_table(tmp_path / "p", SCHEMA, primary_keys=["id"], bucket=1)
    plain.write(_rows([1], 0))
    with pytest.raises(tidelake.InvalidArgumentError, match="no changelog"):
        plain.changes(0, mode="changelog")
    with pytest.raises(tidelake.InvalidArgumentError, match="mode must be one of"):
        plain.changes(0, mode="everything")  # type: ignore[arg-type]
    with pytest.raises(tidelake.InvalidArgumentError, match="both start_tag and end_tag"):
        plain.changes(start_tag="x")
    with pytest.raises(tidelake.InvalidArgumentError, match="not both"):
        plain.changes(1, start_tag="x", end_tag="y")
    plain.create_tag("a")
    with pytest.raises(tidelake.TableNotFoundError):
        plain.changes(start_tag="a", end_tag="nope")
