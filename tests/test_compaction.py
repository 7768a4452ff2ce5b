"""Compaction (`Table.compact`): reads are identical before and after minor and full compactions
for every merge engine; a full compaction leaves one sorted run at the max level per bucket;
pypaimon reads compacted tables identically; the level-0-only fixtures `pk_first_row` and
`pk_deletion_vectors` become visible (their logical content) once compacted; concurrent
compactions either win or fail with CommitConflictError without leaving files behind; a
deletion-vector table compacts level 0 into a middle level, hiding older copies below with
deletion vectors that pypaimon reads too; minor units of lookup tables merge the older copies
below them (partial-update, aggregation with lookup changelog; pypaimon reads them); random
histories with compactions at random points (hypothesis, with and without deletion vectors);
changes() of every changelog producer (with and without deletion vectors) against a dict
model, over a base that later compactions stop above; a killed compaction process changes
nothing.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import threading

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tidelake
from conftest import FIXTURES, assert_same_rows, load_arrow
from _peers import data_files, pp_catalog
from _s3 import Storage

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])


def _create(path: pathlib.Path | str, options: dict[str, str], partitioned: bool = True,
            storage_options: dict[str, str] | None = None) -> tidelake.Table:
    opts = {"bucket": "2", "write-only": "true", "num-sorted-run.compaction-trigger": "3", **options}
    return tidelake.create_table(path, SCHEMA, primary_keys=["id", "dt"] if partitioned else ["id"],
                                 partition_keys=["dt"] if partitioned else None, options=opts,
                                 storage_options=storage_options)


def _on(storage: Storage, options: dict[str, str], partitioned: bool = True) -> tidelake.Table:
    """A fresh ``_create`` table on ``storage``."""
    return _create(storage.fresh(), options, partitioned, storage.options)


def _rows(dt: str, ids, value) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [value(i) for i in ids]}, schema=SCHEMA)


def _history(t: tidelake.Table, deletes: bool) -> None:
    """Overlapping commits over two partitions: upserts with nulls, and deletes."""
    for r in range(6):
        for dt in ("a", "b"):
            t.upsert(_rows(dt, range(r, r + 12), lambda i, r=r: None if i % 3 == 0 else i * 10 + r))
        if deletes and r % 2 == 1:
            t.delete_keys(pa.table({"id": [r + 1, r + 4, 100], "dt": ["a"] * 3}))


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("dt", "ascending"), ("id", "ascending")])


def _live_files(warehouse: pathlib.Path, ident: str):
    """(partition, bucket, level, file name) of every live file, level 0 included (pypaimon)."""
    table = pp_catalog(str(warehouse)).get_table(ident)
    scan = table.new_read_builder().new_scan()
    scan.file_scanner.skip_level0 = False
    return [(tuple(e.partition.values), e.bucket, e.file.level, e.file.file_name)
            for e in scan.file_scanner.plan_files()]


def _pp_read(warehouse: pathlib.Path, ident: str) -> pa.Table:
    table = pp_catalog(str(warehouse)).get_table(ident)
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return out if out is not None else SCHEMA.empty_table()


def _assert_one_run_at_max_level(warehouse: pathlib.Path, ident: str, max_level: int) -> None:
    files = _live_files(warehouse, ident)
    assert files, "no live files"
    assert {level for _, _, level, _ in files} == {max_level}, files


ENGINES = {
    "deduplicate": ({}, True, True),
    # no deletes: pypaimon reads partial-update only without retract options
    "partial-update": ({"merge-engine": "partial-update"}, False, True),
    # unpartitioned: the aggregation read keys its merge by the trimmed key
    "aggregation": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, True, False),
    "first-row": ({"merge-engine": "first-row"}, False, True),
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_compaction_keeps_rows_and_levels(tmp_path: pathlib.Path, engine: str) -> None:
    options, deletes, partitioned = ENGINES[engine]
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = _create(tmp_path / "db.db" / "t", options, partitioned)
    _history(t, deletes)
    # first-row batch reads hide level 0: compare the logical content through merge-on-read
    logical = None if engine == "first-row" else _sorted(t.to_arrow())

    minor = t.compact()
    assert minor is not None
    assert t.snapshot(minor).commit_kind == "COMPACT"
    if logical is not None:
        assert _sorted(t.to_arrow()).equals(logical)
    _history(t, deletes)
    before = _sorted(t.to_arrow())

    full = t.compact(full=True)
    assert full is not None
    after = _sorted(t.to_arrow())
    if engine == "first-row":
        # the first write of each key: round max(0, id - 11) of the first history
        first = [{"id": i, "dt": dt, "v": None if i % 3 == 0 else i * 10 + max(0, i - 11)}
                 for dt in ("a", "b") for i in range(17)]
        assert after.to_pylist() == first
    else:
        assert after.equals(before)
    # num-levels defaults to trigger + 1 = 4
    _assert_one_run_at_max_level(tmp_path, "db.t", 3)
    assert t.compact(full=True) is None, "nothing left to compact"
    assert_same_rows(_sorted(_pp_read(tmp_path, "db.t")), after)


@pytest.mark.parametrize("name", ["pk_first_row", "pk_deletion_vectors"])
def test_level0_fixtures_become_visible(tmp_path: pathlib.Path, name: str) -> None:
    src = FIXTURES / "warehouse" / "fx.db" / name
    dst = tmp_path / "fx.db" / name
    shutil.copytree(src, dst)
    expected = load_arrow(f"expected/{name}/latest.arrow")
    t = tidelake.open_table(dst)
    assert t.to_arrow().num_rows == 0, "level 0 is hidden before compaction"
    snapshot = t.compact(full=True)
    assert snapshot is not None
    assert_same_rows(t.to_arrow(), expected)
    _assert_one_run_at_max_level(tmp_path, f"fx.{name}", 5)
    assert_same_rows(_pp_read(tmp_path, f"fx.{name}").select(expected.schema.names), expected, check_types=False)
    # no deletion vector is needed: a single run at the max level holds each key once
    assert t.snapshot(snapshot).raw.get("indexManifest") is None


def test_progress_counts_the_buckets(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _on(storage, {})
    _history(t, True)
    calls: list[tuple[int, int]] = []
    reported: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        raise RuntimeError("a failing progress display does not fail the compaction")

    before = _sorted(t.to_arrow())
    assert t.compact(full=True, progress=progress) is not None
    assert calls == [(i, 4) for i in range(5)]  # 2 partitions x 2 buckets
    assert _sorted(t.to_arrow()).equals(before)
    # each failure is reported (sys.unraisablehook), none stops the compaction
    assert len(reported) == 5 and all(isinstance(e, RuntimeError) for e in reported)


def test_partitions_and_errors(storage: Storage) -> None:
    t = _on(storage, {})
    _history(t, True)
    before = _sorted(t.to_arrow())
    assert t.compact(full=True, partitions=[{"dt": "zz"}]) is None
    assert t.compact(full=True, partitions=[{"dt": "b"}]) is not None
    assert _sorted(t.to_arrow()).equals(before)
    with pytest.raises(tidelake.InvalidArgumentError):
        t.compact(partitions=[{"v": 1}])
    with pytest.raises(tidelake.InvalidArgumentError):
        t.compact(partitions={"dt": "a"})
    append = storage.create_table("append", SCHEMA)
    append.write(_rows("a", range(3), lambda i: i))
    # one small append file: nothing to merge (append compaction: test_compaction_tasks.py)
    assert append.compact() is None and append.compact(full=True) is None


def _referenced_files(t: tidelake.Table) -> set[str]:
    """Data files referenced by any snapshot (bucket dir/file name)."""
    names = set()
    for s in t.snapshots():
        for split in t.scan(snapshot_id=s.id).splits():
            payload = json.loads(split.payload)
            names.update(f"{payload['bucket_path']}/{f['file_name']}" for f in payload["files"])
    return names


def test_concurrent_compactions_win_or_conflict_cleanly(storage: Storage) -> None:
    t = _on(storage, {})
    _history(t, True)
    before = _sorted(t.to_arrow())
    outcomes: list[object] = []

    def run() -> None:
        try:
            outcomes.append(tidelake.open_table(t.path, storage_options=storage.options).compact(full=True))
        except tidelake.CommitConflictError as e:
            outcomes.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(outcomes) == 4
    assert any(isinstance(o, int) for o in outcomes), outcomes
    t = tidelake.open_table(t.path, storage_options=storage.options)
    assert _sorted(t.to_arrow()).equals(before)
    # losers deleted their files: everything stored is referenced by some snapshot
    assert data_files(t) == _referenced_files(t)


step = st.one_of(
    st.tuples(st.just("upsert"), st.dictionaries(st.integers(0, 30), st.one_of(st.none(), st.integers(0, 99)),
                                                 min_size=1, max_size=20)),
    st.tuples(st.just("delete"), st.sets(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("compact"), st.booleans()),
)


def test_deletion_vectors_hide_older_copies_below_a_middle_level(tmp_path: pathlib.Path) -> None:
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = _create(tmp_path / "db.db" / "t", {"bucket": "1", "deletion-vectors.enabled": "true"}, partitioned=False)
    model = {i: i for i in range(400)}
    t.upsert(_rows("a", sorted(model), model.get))
    assert t.compact() is not None
    top = _live_files(tmp_path, "db.t")
    assert [level for _, _, level, _ in top] == [3], top  # num-levels = trigger + 1 = 4

    updates = {3: 300, 17: None, 450: 4500}
    t.upsert(_rows("a", sorted(updates), updates.get))
    t.delete_keys(pa.table({"id": [11, 12, 999], "dt": ["a"] * 3}))
    assert t.to_arrow().num_rows == 400, "level 0 is hidden before compaction"
    snapshot = t.compact()
    assert snapshot is not None
    model.update(updates)
    for k in (11, 12):
        del model[k]
    files = _live_files(tmp_path, "db.t")
    assert sorted(level for _, _, level, _ in files) == [2, 3], files
    assert top[0] in files, "the top file stays, its older copies hidden by a deletion vector"
    assert t.snapshot(snapshot).raw.get("indexManifest") is not None
    expected = _rows("a", sorted(model), model.get).to_pylist()
    assert _sorted(t.to_arrow()).to_pylist() == expected
    assert _sorted(_pp_read(tmp_path, "db.t")).to_pylist() == expected


def _examples(storage: Storage, local: int) -> settings:
    """Hypothesis settings: ``local`` examples on local storage, a third of them on S3."""
    return settings(max_examples=local if storage.kind == "local" else max(2, local // 3), deadline=None)


def test_random_histories_read_the_same_after_compaction(storage: Storage) -> None:
    """With deletion vectors, batch reads skip level 0: they show the model as of the last
    compaction (which takes every level-0 file)."""
    @_examples(storage, 15)
    @given(steps=st.lists(step, min_size=1, max_size=12), trigger=st.integers(2, 5), dv=st.booleans())
    def run(steps, trigger, dv) -> None:
        options = {"bucket": "1", "num-sorted-run.compaction-trigger": str(trigger)}
        if dv:
            options["deletion-vectors.enabled"] = "true"
        _random_history(_on(storage, options), steps, dv)

    run()


def _random_history(t: tidelake.Table, steps, dv: bool) -> None:
    model: dict[int, int | None] = {}
    visible: dict[int, int | None] = {}
    for kind, arg in steps:
        if kind == "upsert":
            model.update(arg)
            t.upsert(_rows("a", sorted(arg), arg.get))
        elif kind == "delete":
            for k in arg:
                model.pop(k, None)
            t.delete_keys(pa.table({"id": sorted(arg), "dt": ["a"] * len(arg)}))
        elif t.latest_snapshot() is not None:
            before = _sorted(t.to_arrow())
            t.compact(full=arg)
            visible = dict(model)
            if not dv:
                assert _sorted(t.to_arrow()).equals(before)
        shown = visible if dv else model
        expected = _rows("a", sorted(shown), shown.get)
        if t.latest_snapshot() is not None:
            assert _sorted(t.to_arrow()).to_pylist() == expected.to_pylist()


# ---- changelog producers: changes() against a dict model -------------------------------------

MODEL_ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}
# first-row supports only the none and lookup producers (Paimon's schema validation); deletion
# vectors (not with first-row nor full-compaction, as Paimon) for the none and lookup producers
COMBINATIONS = [(e, p, False) for e in MODEL_ENGINES for p in ("none", "input", "lookup", "full-compaction")
                if not (e == "first-row" and p in ("input", "full-compaction"))]
COMBINATIONS += [(e, p, True) for e in MODEL_ENGINES if e != "first-row" for p in ("none", "lookup")]
ABSENT = object()


def _merged(engine: str, old, v):
    """The key's value after an upsert of ``v`` (``old`` is ABSENT for a new key)."""
    if old is ABSENT or engine == "deduplicate":
        return v
    if engine == "partial-update":
        return old if v is None else v
    if engine == "aggregation":
        return old if v is None else v if old is None else old + v
    return old  # first-row


def _expected_changelog(engine: str, compacted: dict, model: dict, touched: set, dedupe: bool) -> list:
    """Java's changelog of a compaction to the max level: per key written since the last one,
    the value before (as of that compaction) against the value now."""
    out = []
    for k in sorted(touched):
        old, new = compacted.get(k, ABSENT), model.get(k, ABSENT)
        if old is ABSENT and new is not ABSENT:
            out.append(("+I", k, new))
        elif engine == "first-row" or old is ABSENT:
            continue
        elif new is ABSENT:
            out.append(("-D", k, old))
        elif not (dedupe and old == new):
            out += [("-U", k, old), ("+U", k, new)]
    return out


def _changes(t: tidelake.Table, start: int, end: int) -> list:
    rows = t.changes(start, end).to_pylist()
    return [(r["_row_kind"], r["id"], r["v"]) for r in rows]


model_step = st.one_of(
    st.tuples(st.just("upsert"), st.dictionaries(st.integers(0, 20), st.one_of(st.none(), st.integers(0, 99)),
                                                 min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.sets(st.integers(0, 20), min_size=1, max_size=5)),
    st.tuples(st.just("compact"), st.booleans()),
)


@pytest.mark.parametrize("engine,producer,dv", COMBINATIONS)
def test_changelog_producers_match_a_dict_model(storage: Storage, engine, producer, dv) -> None:
    """Random histories with compactions at random points: reads equal the model and do not
    change by compacting (with deletion vectors: the model as of the last compaction);
    changes() equals the model's changes: the written rows (none, input) or the diff of
    consecutive full states (lookup, full-compaction: Java's changelog). Compactions that stop
    above the max level (level 0 over older levels) compact tables that need lookup with
    lookup into the levels below."""

    @_examples(storage, 6)
    @given(steps=st.lists(model_step, min_size=1, max_size=10), dedupe=st.booleans())
    def run(steps, dedupe) -> None:
        # trigger 2: num-levels 3, max level 2
        opts = {**MODEL_ENGINES[engine], "bucket": "1", "num-sorted-run.compaction-trigger": "2",
                "changelog-producer": producer, "changelog-producer.row-deduplicate": str(dedupe).lower(),
                "deletion-vectors.enabled": str(dv).lower()}
        _changelog_history(_on(storage, opts, partitioned=False), engine, producer, steps, dedupe, dv)

    run()


def _changelog_history(t: tidelake.Table, engine: str, producer: str, steps, dedupe: bool, dv: bool) -> None:
    deletes = engine == "deduplicate"
    # a base of 300 keys at the max level, big enough that later compactions of level 0 stop
    # above it and (tables that need lookup) look its older copies up
    t.upsert(_rows("a", range(300), lambda i: i))
    t.compact(full=True)
    model: dict = {i: i for i in range(300)}
    visible: dict = dict(model)  # deletion vectors: batch reads hide level 0
    compacted: dict = dict(model)
    touched: set = set()
    for kind, arg in steps:
        no_level0 = False
        start = t.latest_snapshot().id
        if kind == "upsert":
            for k in sorted(arg):
                model[k] = _merged(engine, model.get(k, ABSENT), arg[k])
            touched |= set(arg)
            t.upsert(_rows("a", sorted(arg), arg.get))
            expected = [("+I", k, arg[k]) for k in sorted(arg)]
        elif kind == "delete":
            if not deletes:
                continue
            for k in arg:
                model.pop(k, None)
            touched |= arg
            t.delete_keys(pa.table({"id": sorted(arg)}))
            expected = [("-D", k, None) for k in sorted(arg)]
        else:
            before = t.to_arrow().sort_by("id")
            t.compact(full=arg)
            if engine != "first-row" and not dv:  # level 0 of those is visible once compacted
                assert t.to_arrow().sort_by("id").equals(before)
            expected = []
            levels = set(t.system("files").column("level").to_pylist())
            at_max, no_level0 = levels == {2}, 0 not in levels
            # lookup: every compaction takes all of level 0; full-compaction: one to the max level
            produced = at_max if producer == "full-compaction" else no_level0
            if producer in ("lookup", "full-compaction") and produced and touched:
                expected = _expected_changelog(engine, compacted, model, touched, dedupe)
                compacted, touched = dict(model), set()
        end = t.latest_snapshot().id
        if producer in ("lookup", "full-compaction") and kind != "compact":
            expected = []
        assert _changes(t, start, end) == expected, (kind, arg)
        # batch reads of first-row and deletion-vector tables hide level 0
        if kind == "compact" and no_level0:
            visible = dict(model)
        if engine != "first-row" or (kind == "compact" and no_level0):
            shown = visible if dv else model
            assert [(r["id"], r["v"]) for r in t.to_arrow().sort_by("id").to_pylist()] == sorted(shown.items())


@pytest.mark.parametrize("producer", ["input", "full-compaction"])
def test_first_row_tables_reject_other_changelog_producers(tmp_path: pathlib.Path, producer: str) -> None:
    """As Java's SchemaValidation: first-row tables take changelog-producer none or lookup
    only, at create and at alter."""
    with pytest.raises(tidelake.InvalidArgumentError, match=f"first-row .* not {producer}"):
        _create(tmp_path / "created", {"merge-engine": "first-row", "changelog-producer": producer})
    assert not (tmp_path / "created" / "schema").exists() or not any((tmp_path / "created" / "schema").iterdir())
    t = _create(tmp_path / "altered", {"merge-engine": "first-row", "changelog-producer": "lookup"})
    with pytest.raises(tidelake.InvalidArgumentError, match=f"first-row .* not {producer}"):
        t.set_option("changelog-producer", producer)
    assert tidelake.open_table(tmp_path / "altered").options["changelog-producer"] == "lookup"


@pytest.mark.parametrize(("options", "message"), [
    ({"changelog-producer": "full-compaction"}, "deletion-vectors.enabled supports only .* not full-compaction"),
    ({"merge-engine": "first-row"}, "deletion-vectors.enabled is not supported with merge-engine=first-row"),
], ids=["full-compaction", "first-row"])
def test_deletion_vector_tables_reject_what_paimon_rejects(tmp_path: pathlib.Path, options, message) -> None:
    """As Java's SchemaValidation: deletion vectors take changelog-producer none, input or
    lookup and not the first-row engine, at create and at alter."""
    with pytest.raises(tidelake.InvalidArgumentError, match=message):
        _create(tmp_path / "created", {"deletion-vectors.enabled": "true", **options})
    t = _create(tmp_path / "altered", options)
    with pytest.raises(tidelake.InvalidArgumentError, match=message):
        t.set_option("deletion-vectors.enabled", "true")
    assert "deletion-vectors.enabled" not in tidelake.open_table(tmp_path / "altered").options


_COMPACT_CHILD = """
import sys, tidelake
t = tidelake.open_table(sys.argv[1])
print("start", flush=True)
t.compact(full=True)
print("done", flush=True)
"""


def test_killed_compaction_leaves_the_table_unchanged(tmp_path: pathlib.Path) -> None:
    """A compaction process killed at several points of its run (files partly written, or
    already committed) leaves the table readable with the same rows and either no new snapshot
    or a complete COMPACT one; the next compaction succeeds, with the changelog of one."""
    import subprocess
    import sys
    import time

    src = tmp_path / "src"
    t = _create(src, {"bucket": "1", "changelog-producer": "lookup", "target-file-size": "256kb"}, partitioned=False)
    for r in range(6):
        t.upsert(_rows("a", range(r * 20_000, r * 20_000 + 60_000), lambda i, r=r: i * 10 + r))
    expected = _sorted(t.to_arrow())
    probe = tmp_path / "probe"
    shutil.copytree(src, probe)
    began = time.monotonic()
    assert tidelake.open_table(probe).compact(full=True) is not None
    duration = time.monotonic() - began
    for n, fraction in enumerate((0.05, 0.3, 0.6, 0.9)):
        path = tmp_path / f"kill{n}"
        shutil.copytree(src, path)
        latest = tidelake.open_table(path).latest_snapshot().id
        child = subprocess.Popen([sys.executable, "-c", _COMPACT_CHILD, str(path)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "start"
        time.sleep(duration * fraction)
        child.kill()
        child.wait()
        t = tidelake.open_table(path)
        assert _sorted(t.to_arrow()).equals(expected), fraction
        now = t.latest_snapshot()
        assert now.id == latest or (now.id == latest + 1 and now.commit_kind == "COMPACT"), fraction
        t.compact(full=True)
        assert _sorted(t.to_arrow()).equals(expected), fraction
        # the changelog is that of one clean compaction, nothing doubled
        assert t.changes(latest).equals(tidelake.open_table(probe).changes(latest)), fraction


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_writers_produce_the_lookup_changelog_at_each_commit(storage: Storage, engine: str) -> None:
    """Without write-only, a lookup table's writer compacts after every write (Java's
    force-up-level-0 for lookup), so each write is followed by a COMPACT snapshot carrying the
    write's changelog."""
    opts = {**MODEL_ENGINES[engine], "bucket": "1", "changelog-producer": "lookup", "write-only": "false"}
    t = _on(storage, opts, partitioned=False)
    t.upsert(_rows("a", [1, 2], lambda i: i * 10))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT"]
    assert _changes(t, 0, 2) == [("+I", 1, 10), ("+I", 2, 20)]
    t.upsert(_rows("a", [2, 3], lambda i: i))
    after = {"deduplicate": 2, "aggregation": 22}[engine]
    assert [s.commit_kind for s in t.snapshots()][2:] == ["APPEND", "COMPACT"]
    assert _changes(t, 2, 4) == [("-U", 2, 20), ("+U", 2, after), ("+I", 3, 3)]
    assert [(r["id"], r["v"]) for r in t.to_arrow().sort_by("id").to_pylist()] == [(1, 10), (2, after), (3, 3)]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_pypaimon_reads_tables_with_compaction_changelog(tmp_path: pathlib.Path, producer: str) -> None:
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = _create(tmp_path / "db.db" / "t", {"changelog-producer": producer})
    _history(t, True)
    assert t.compact(full=True) is not None
    _history(t, True)
    assert t.compact(full=True) is not None
    snapshot = t.latest_snapshot().raw
    assert snapshot["commitKind"] == "COMPACT" and snapshot["changelogRecordCount"] > 0
    assert_same_rows(_sorted(_pp_read(tmp_path, "db.t")), _sorted(t.to_arrow()))


@pytest.mark.parametrize("options,update,merged", [
    # partial-update fills the null of key 1 from its older copy below the output
    ({"merge-engine": "partial-update", "deletion-vectors.enabled": "true"},
     {1: None, 2: 20, 500: 5}, {2: 20, 500: 5}),
    # aggregation sums onto the older copy; its lookup changelog diffs against it
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "changelog-producer": "lookup",
      "deletion-vectors.enabled": "true"},
     {2: 5, 500: 5}, {2: 7, 500: 5}),
], ids=["partial-update-dv", "aggregation-lookup-dv"])
def test_minor_units_of_lookup_tables_merge_the_older_copy(tmp_path: pathlib.Path, options, update, merged) -> None:
    """A minor unit of a table that needs lookup goes above the max level without rewriting
    it: the older copies below merge into its output and are hidden by deletion vectors;
    tidelake and pypaimon read the merged values. (pypaimon has no LookupMergeFunction, so it
    reads non-full results of lookup tables correctly only with deletion vectors.)"""
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    t = _create(tmp_path / "db.db" / "t", {**options, "bucket": "1"}, partitioned=False)
    t.upsert(_rows("a", range(300), lambda i: i))
    t.compact(full=True)
    [deep] = _live_files(tmp_path, "db.t")
    start = t.latest_snapshot().id
    t.upsert(_rows("a", sorted(update), update.get))
    t.compact()
    files = _live_files(tmp_path, "db.t")
    assert deep in files, "the max-level file is not rewritten"
    assert sorted(level for _, _, level, _ in files) == [2, 3], files  # num-levels = trigger + 1 = 4
    model = {i: i for i in range(300)} | merged
    expected = _rows("a", sorted(model), model.get).to_pylist()
    assert _sorted(t.to_arrow()).to_pylist() == expected
    assert _sorted(_pp_read(tmp_path, "db.t")).to_pylist() == expected
    if options.get("changelog-producer") == "lookup":
        assert _changes(t, start, t.latest_snapshot().id) == [("-U", 2, 2), ("+U", 2, 7), ("+I", 500, 5)]


def _sorted_runs(warehouse: pathlib.Path, ident: str) -> dict:
    """Sorted runs per (partition, bucket) of the live files: one per level-0 file, one per
    other level."""
    runs: dict = {}
    for partition, bucket, level, name in _live_files(warehouse, ident):
        runs.setdefault((partition, bucket), set()).add(name if level == 0 else level)
    return {k: len(v) for k, v in runs.items()}


def _data_files_on_disk(root: pathlib.Path) -> int:
    return sum(1 for p in root.rglob("data-*.parquet"))


def _spilling_table(tmp_path: pathlib.Path, options: dict[str, str]) -> tidelake.Table:
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    # a tiny write buffer: every upsert call below spills a level-0 file per bucket
    return _create(tmp_path / "db.db" / "t", {"write-only": "false", "write-buffer-size": "1kb",
                                              "num-sorted-run.compaction-trigger": "3",
                                              "num-sorted-run.stop-trigger": "4", **options})


def test_writers_stall_at_the_stop_trigger(tmp_path: pathlib.Path) -> None:
    """A writer that spills far past the stop trigger before its one prepare_commit compacts
    in the background and stalls at the stop trigger: every bucket ends with at most
    stop-trigger + 1 sorted runs, reads equal the model, and pypaimon reads the same."""
    t = _spilling_table(tmp_path, {})
    model = {}
    with t.writer() as w:
        for r in range(24):
            batch = _rows("a", range(r * 7, r * 7 + 40), lambda i, r=r: i * 100 + r)
            w.upsert(batch)
            model.update({(i, "a"): i * 100 + r for i in range(r * 7, r * 7 + 40)})
        t.commit(w.prepare_commit(), commit_user=w.commit_user)
    assert _data_files_on_disk(tmp_path / "db.db" / "t") > 2 * 24, "the writer did not spill"
    runs = _sorted_runs(tmp_path, "db.t")
    assert runs and max(runs.values()) <= 4 + 1, runs
    assert "COMPACT" in [s.commit_kind for s in t.snapshots()]
    expected = sorted((k[0], v) for k, v in model.items())
    assert [(r["id"], r["v"]) for r in t.to_arrow().sort_by("id").to_pylist()] == expected
    assert_same_rows(_sorted(_pp_read(tmp_path, "db.t")), _sorted(t.to_arrow()))


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["plain", "dv"])
def test_long_lived_writers_collect_compactions_across_commits(tmp_path: pathlib.Path, options) -> None:
    """A long-lived writer over several prepare_commit/commit cycles: reads equal the model
    after each commit, sorted runs stay bounded, closing it leaves no orphan file, and
    pypaimon reads the result."""
    t = _spilling_table(tmp_path, options)
    model = {}
    w = t.writer()
    for cycle in range(6):
        for r in range(5):
            lo = (cycle * 5 + r) * 3
            w.upsert(_rows("b", range(lo, lo + 30), lambda i, c=cycle: i + c))
            model.update({i: i + cycle for i in range(lo, lo + 30)})
        if cycle == 2:
            w.delete(pa.table({"id": [0, 1, 2], "dt": ["b"] * 3}))
            for i in (0, 1, 2):
                model.pop(i)
        t.commit(w.prepare_commit(), commit_identifier=cycle, commit_user=w.commit_user)
        assert [(r["id"], r["v"]) for r in t.to_arrow().sort_by("id").to_pylist()] == sorted(model.items()), cycle
        runs = _sorted_runs(tmp_path, "db.t")
        assert max(runs.values()) <= 4 + 1, (cycle, runs)
    w.close()
    assert t.remove_orphan_files(older_than_ms=2**62, dry_run=True) == []
    assert "COMPACT" in [s.commit_kind for s in t.snapshots()]
    assert_same_rows(_sorted(_pp_read(tmp_path, "db.t")), _sorted(t.to_arrow()))


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["plain", "dv"])
def test_compactions_opened_before_a_schema_change_keep_the_columns_added_since(tmp_path: pathlib.Path,
                                                                                 options) -> None:
    """Another process adds a column and writes it while this one holds a handle opened before:
    neither the compaction of a write through that handle nor ``compact()`` on it rewrites the
    new file with the old schema, which would drop the column's values."""
    tidelake.Catalog(str(tmp_path)).create_database("db")
    path = str(tmp_path / "db.db" / "t")
    opts = {"bucket": "1", "num-sorted-run.compaction-trigger": "2", **options}
    tidelake.create_table(path, SCHEMA, primary_keys=["id"], options=opts).upsert(_rows("a", [1], lambda i: 10))
    old = tidelake.open_table(path)
    other = tidelake.open_table(path)
    other.add_column("note", pa.string())
    other.upsert(pa.table({"id": [2], "dt": ["a"], "v": [20], "note": ["kept"]}))
    # many new rows: their write's compaction (size amplification) rewrites the whole bucket
    new_ids = [0, *range(3, 60)]
    old.upsert(_rows("a", new_ids, lambda i: 10 * i))
    expected = sorted([(1, 10, None), (2, 20, "kept"), *((i, 10 * i, None) for i in new_ids)])

    def rows() -> list[tuple]:
        return [(r["id"], r["v"], r["note"]) for r in tidelake.open_table(path).to_arrow().sort_by("id").to_pylist()]

    assert rows() == expected
    old.compact(full=True)
    assert rows() == expected
    assert tidelake.open_table(path).snapshots()[-1].commit_kind == "COMPACT"
    assert_same_rows(_sorted(_pp_read(tmp_path, "db.t")), _sorted(tidelake.open_table(path).to_arrow()))
