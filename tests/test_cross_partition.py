"""Cross-partition upserts: ``bucket = -1`` on a primary-key table whose key lacks a partition
column (the common CDC shape: key ``id``, partitioned by date). A key lives in one partition at a
time; writing it with another partition moves it (deduplicate), or is merged into its old
partition (partial-update, aggregation) or dropped (first-row), as Java Paimon's global index
does. Checked against dict models, against racing writer processes, and against Java Paimon and
pypaimon in both directions."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_all, compare_read, java_write, tidelake_write
from _peers import pp_read
from _workers import cross_partition_rounds, race

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])


def create(path, **options: str) -> tidelake.Table:
    return tidelake.create_table(str(path), SCHEMA, primary_keys=["id"], partition_keys=["dt"], bucket=-1,
                                 options=options)


def rows(*triples: tuple[int, str, str | None]) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "dt": d, "v": v} for i, d, v in triples], schema=SCHEMA)


def visible(t: tidelake.Table) -> list[tuple[int, str, str | None]]:
    """Every row of a freshly opened copy of ``t``, sorted (a key twice would show twice)."""
    data = tidelake.open_table(t.path).to_arrow().to_pylist()
    return sorted((r["id"], r["dt"], r["v"]) for r in data)


def model_rows(model: dict[int, tuple[str, str | None]]) -> list[tuple[int, str, str | None]]:
    return sorted((k, d, v) for k, (d, v) in model.items())


def test_a_key_that_moves_partition_leaves_its_old_one(tmp_path):
    t = create(tmp_path / "t")
    t.upsert(rows((1, "d1", "a"), (2, "d1", "b")))
    t.upsert(rows((1, "d2", "a2")))
    assert visible(t) == [(1, "d2", "a2"), (2, "d1", "b")]
    # within one batch, in input order: the last partition wins
    t.upsert(rows((2, "d2", "x"), (2, "d3", "y"), (2, "d1", "z")))
    assert visible(t) == [(1, "d2", "a2"), (2, "d1", "z")]
    # a delete that names another partition deletes the key's row (Java retracts the old one)
    t.delete_keys(pa.table({"id": pa.array([1], pa.int64()), "dt": ["d9"]}))
    assert visible(t) == [(2, "d1", "z")]
    # and the key can come back anywhere
    t.upsert(rows((1, "d3", "back")))
    assert visible(t) == [(1, "d3", "back"), (2, "d1", "z")]


def test_a_move_commits_the_retraction_and_the_row_together(tmp_path):
    t = create(tmp_path / "t")
    t.upsert(rows((1, "d1", "a")))
    sid = t.upsert(rows((1, "d2", "b")))
    got = sorted((r["_row_kind"], r["id"], r["dt"]) for r in t.changes(sid - 1, sid).to_pylist())
    assert got == [("+I", 1, "d2"), ("-D", 1, "d1")]


def test_first_row_keeps_the_first_partition(tmp_path):
    t = create(tmp_path / "t", **{"merge-engine": "first-row"})
    t.upsert(rows((1, "d1", "first"), (2, "d2", "two")))
    t.upsert(rows((1, "d2", "second"), (3, "d1", "three")))
    t.upsert(rows((1, "d1", "third")))
    assert visible(t) == [(1, "d1", "first"), (2, "d2", "two"), (3, "d1", "three")]
    # a new writer bootstraps the index from the files (level 0 included) and keeps the rule
    w = t.writer()
    w.upsert(rows((2, "d1", "again")))
    t.commit(w.prepare_commit())
    w.close()
    assert visible(t) == [(1, "d1", "first"), (2, "d2", "two"), (3, "d1", "three")]


def test_partial_update_merges_into_the_old_partition(tmp_path):
    t = create(tmp_path / "t", **{"merge-engine": "partial-update"})
    t.upsert(rows((1, "d1", "a")))
    t.upsert(rows((1, "d2", None)))  # partial: v stays; the row stays in d1
    assert visible(t) == [(1, "d1", "a")]
    t.upsert(rows((1, "d3", "b")))
    assert visible(t) == [(1, "d1", "b")]


def test_new_keys_fill_buckets_up_to_the_target_row_num(tmp_path):
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "2"})
    t.upsert(rows(*[(i, "d1", str(i)) for i in range(5)]))
    t.upsert(rows(*[(i, "d2", str(i)) for i in range(5, 8)]))
    files = t.system("files").to_pylist()
    buckets = sorted({(f["partition"], f["bucket"]) for f in files})
    assert buckets == [("{d1}", 0), ("{d1}", 1), ("{d1}", 2), ("{d2}", 0), ("{d2}", 1)], buckets
    # a moved key frees its slot: the next new key of d1 fills bucket 0 again, not bucket 3
    t.upsert(rows((0, "d2", "moved")))
    t.upsert(rows((100, "d1", "new")))
    files = t.system("files").to_pylist()
    assert max(f["bucket"] for f in files if f["partition"] == "{d1}") == 2


def test_index_ttl_forgets_keys_as_java_does(tmp_path):
    """With ``cross-partition-upsert.index-ttl``, buckets whose files are older than the TTL are
    not bootstrapped: a key found only there is taken as new (Java documents the duplicates)."""
    kept = create(tmp_path / "kept")
    ttl = create(tmp_path / "ttl", **{"cross-partition-upsert.index-ttl": "50 ms"})
    for t in (kept, ttl):
        t.upsert(rows((1, "d1", "old")))
    time.sleep(0.3)
    for t in (kept, ttl):
        t.upsert(rows((1, "d2", "new")))
    assert visible(kept) == [(1, "d2", "new")]
    assert visible(ttl) == [(1, "d1", "old"), (1, "d2", "new")]


def test_overwrite_is_refused(tmp_path):
    t = create(tmp_path / "t")
    t.upsert(rows((1, "d1", "a")))
    with pytest.raises(tidelake.UnsupportedError, match="cross-partition"):
        t.write(rows((1, "d2", "b")), mode="overwrite")
    assert visible(t) == [(1, "d1", "a")]


def test_a_sequence_field_is_refused_as_in_java(tmp_path):
    t = create(tmp_path / "t", **{"sequence.field": "v"})
    with pytest.raises(tidelake.UnsupportedError, match="sequence.field on a cross-partition"):
        t.upsert(rows((1, "d1", "a")))


def test_a_writer_that_missed_another_commit_is_refused(tmp_path):
    """Writer A opened before B wrote the new key 5 into d2: A, taking key 5 for new, would put
    it in d3 too (no bucket is written by both, so no sequence check sees it). A's commit is
    refused and B's acknowledged write stays."""
    t = create(tmp_path / "t")
    t.upsert(rows((1, "d1", "a")))
    a = t.writer()
    a.upsert(rows((5, "d3", "from-a")))
    t.upsert(rows((5, "d2", "from-b")))
    with pytest.raises(tidelake.CommitConflictError, match="cross-partition-upsert table at snapshot 1"):
        t.commit(a.prepare_commit())
    a.abort()
    assert visible(t) == [(1, "d1", "a"), (5, "d2", "from-b")]


def test_a_long_lived_writer_keeps_committing_past_expiration_and_compaction(tmp_path):
    """A writer's own commits (and compactions by anyone) do not make it stale: it moves its
    base past them when it writes again, so expiring the snapshot it opened on does not stop it
    (a snapshot of its own that expires before it writes again cannot be verified: then it has
    to be reopened, see test_a_writer_whose_commits_expired_unverified_is_refused)."""
    t = create(tmp_path / "t", **{"num-sorted-run.compaction-trigger": "2"})
    t.upsert(rows((0, "d0", "seed")))
    model = {0: ("d0", "seed")}
    w = t.writer()
    for i in range(6):
        batch = [(1, f"d{i % 3}", f"v{i}"), (2 + i, "d1", "n")]
        w.upsert(rows(*batch))
        t.commit(w.prepare_commit())
        for k, d, v in batch:
            model[k] = (d, v)
        if i == 2:
            t.compact(full=True)
        t.expire_snapshots(retain_min=3, retain_max=3)
        assert visible(t) == model_rows(model)
    w.close()


def test_a_writer_whose_commits_expired_unverified_is_refused(tmp_path):
    t = create(tmp_path / "t")
    w = t.writer()
    w.upsert(rows((1, "d1", "a")))
    t.commit(w.prepare_commit())
    t.upsert(rows((5, "d2", "b")))  # another writer adds key 5; then the history expires
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    w.upsert(rows((5, "d3", "c")))  # taken for a new key: it would be in d2 and d3
    with pytest.raises(tidelake.CommitConflictError, match="expired before it could be checked"):
        t.commit(w.prepare_commit())
    w.abort()
    assert visible(t) == [(1, "d1", "a"), (5, "d2", "b")]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_history_equals_a_dict_model(tmp_path, seed):
    """Seeded random upserts, deletes and key moves across 4 partitions through one-shot writes,
    long-lived writers and fresh writers that bootstrap from the files, with compactions; the
    table equals a dict model ``id -> (partition, value)`` after every step."""
    rng = random.Random(seed)
    t = create(tmp_path / "t", **{"dynamic-bucket.target-row-num": "3"})
    model: dict[int, tuple[str, str | None]] = {}
    w = None
    for step in range(60):
        op = rng.random()
        batch = [(rng.randrange(20), f"d{rng.randrange(4)}", rng.choice([None, f"s{step}-{j}"]))
                 for j in range(rng.randrange(1, 8))]
        if op < 0.15:
            if w is not None:
                w.close()
                w = None
            keys = [(k, d) for k, d, _ in batch]
            t.delete_keys(pa.table({"id": pa.array([k for k, _ in keys], pa.int64()), "dt": [d for _, d in keys]}))
            for k, _ in keys:
                model.pop(k, None)
        elif op < 0.5:  # a long-lived writer, one commit per step
            if w is None:
                w = t.writer()
            w.upsert(rows(*batch))
            t.commit(w.prepare_commit())
            for k, d, v in batch:
                model[k] = (d, v)
        elif op < 0.9:
            if w is not None:
                w.close()
                w = None
            t.upsert(rows(*batch))
            for k, d, v in batch:
                model[k] = (d, v)
        else:
            t.compact(full=True)  # compactions do not make the long-lived writer stale
        assert visible(t) == model_rows(model), f"step {step}"
    if w is not None:
        w.close()


def test_racing_writer_processes_never_leave_a_key_in_two_partitions(tmp_path):
    """Three processes move the same keys between partitions through two-phase writers. Every
    acknowledged write that is the newest for its key is what is visible, each key exactly once;
    the others fail with CommitConflictError."""
    t = create(tmp_path / "t")
    acks = race(tmp_path, cross_partition_rounds, 3, t.path, 10, 5)
    landed = [a for a in acks if a["append_id"] is not None]
    print(f"{len(landed)} of {len(acks)} writes landed, {len(acks) - len(landed)} CommitConflictError")
    assert landed
    assert len({a["append_id"] for a in landed}) == len(landed)
    expected: dict[int, tuple[int, str, str]] = {}
    for a in landed:
        for k in a["keys"]:
            if k not in expected or expected[k][0] < a["append_id"]:
                expected[k] = (a["append_id"], a["partition"], a["value"])
    want = sorted((k, d, v) for k, (_, d, v) in expected.items())
    assert visible(t) == want
    t.compact(full=True)
    assert visible(t) == want


# ---- Java Paimon and pypaimon ----------------------------------------------------------------

FIELDS = [("id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"), ("v", "STRING")]


def _moves() -> list[dict]:
    """Commits that insert 10 keys over 3 partitions, move some (also back and forth within one
    commit), delete some, and bring one back elsewhere."""
    return [
        {"rows": [[i, f"d{i % 3}", f"a{i}"] for i in range(10)]},
        {"rows": [[1, "d2", "b1"], [4, "d0", "b4"], [5, "d5", "b5"]]},
        {"rows": [[2, "d1", "c2"], [2, "d2", "c2x"], [7, "d0", "c7"]]},
        {"rows": [{"kind": "-D", "values": [3, "d0", None]}, {"kind": "-D", "values": [8, "d9", None]}]},
        {"rows": [[3, "d4", "back"], [9, "d1", "d9"]]},
        {"rows": [[0, "d1", "e0"], [6, "d6", "e6"]]},
    ]


def _scenario(name: str, mode: str, **options: str) -> Scenario:
    return Scenario(name, FIELDS, _moves(), primary_keys=["id"], partition_keys=["dt"],
                    options={"bucket": "-1", "dynamic-bucket.target-row-num": "3", **options}, mode=mode)


def _moves_model() -> list[tuple[int, str, str | None]]:
    model: dict[int, tuple[str, str | None]] = {}
    for step in _moves():
        for r in step["rows"]:
            if isinstance(r, list):
                model[r[0]] = (r[1], r[2])
            else:
                model.pop(r["values"][0], None)
    return model_rows(model)


@pytest.mark.parametrize("mode", ["stream", "batch"])
def test_java_and_pypaimon_read_tidelake_cross_partition_writes(java, tmp_path, mode):
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _scenario(f"xp_{mode}", mode))
    assert visible(t) == _moves_model()
    compare_all(java, t, wh, "cross-partition", pypaimon=True)


@pytest.mark.parametrize("mode", ["stream", "batch"])
def test_tidelake_continues_a_java_cross_partition_table(java, tmp_path, mode):
    """Java writes with its global index; tidelake bootstraps from Java's files and moves keys
    on; Java, pypaimon and tidelake read the same rows, each key once."""
    wh = str(tmp_path)
    sc = _scenario(f"jxp_{mode}", mode)
    t = java_write(java, wh, sc)
    assert visible(t) == _moves_model()
    model = {k: (d, v) for k, d, v in _moves_model()}
    more = [(1, "d0", "t1"), (2, "d7", "t2"), (11, "d1", "t11"), (9, "d9", "t9")]
    t.upsert(rows(*more))
    for k, d, v in more:
        model[k] = (d, v)
    t.delete_keys(pa.table({"id": pa.array([4], pa.int64()), "dt": ["d3"]}))
    model.pop(4)
    assert visible(t) == model_rows(model)
    compare_read(java, tidelake.open_table(t.path), wh, "java then tidelake cross-partition", pypaimon=True)
    # Java continues after tidelake, bootstrapping from tidelake's files
    java.run({**sc.java_job(wh, with_steps=False), "existing": True, "steps": [{"rows": [[11, "d2", "j11"]]}]})
    model[11] = ("d2", "j11")
    assert visible(t) == model_rows(model)
    pp = pp_read(wh, f"db.{sc.name}")
    assert sorted((r["id"], r["dt"], r["v"]) for r in pp.to_pylist()) == model_rows(model)


@pytest.mark.parametrize("engine", ["first-row", "partial-update", "aggregation"])
def test_engines_route_moved_keys_as_java_does(java, tmp_path, engine):
    """The same upserts (no deletes: these engines refuse them by default) written by Java's global
    index and by tidelake read the same, in Java, pypaimon and tidelake."""
    wh = str(tmp_path)
    steps = [s for s in _moves() if all(isinstance(r, list) for r in s["rows"])]
    fields = FIELDS if engine != "aggregation" else [("id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"),
                                                     ("v", "BIGINT")]
    if engine == "aggregation":
        steps = [{"rows": [[k, d, len(v or "")] for k, d, v in s["rows"]]} for s in steps]
    options = {"bucket": "-1", "merge-engine": engine, "dynamic-bucket.target-row-num": "3"}
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "sum"
    ours = tidelake_write(java, wh, Scenario(f"ours_{engine.replace('-', '_')}", fields, steps, ["id"], ["dt"],
                                             options))
    theirs = java_write(java, wh, Scenario(f"theirs_{engine.replace('-', '_')}", fields, steps, ["id"], ["dt"],
                                           options))
    assert visible(ours) == visible(theirs)
    assert len({k for k, _, _ in visible(ours)}) == len(visible(ours)), "a key in two partitions"
    compare_all(java, ours, wh, f"cross-partition {engine}", pypaimon=True)


INDEX_MEASURE = textwrap.dedent("""
    import json, sys

    import pyarrow as pa, tidelake

    def peak():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    t = tidelake.open_table(sys.argv[1]).set_option("lookup.cache-max-memory-size", sys.argv[2])
    # a TTL that every file is older than: the writer reads no key (the baseline)
    t = t.set_option("cross-partition-upsert.index-ttl", sys.argv[3]) if sys.argv[3] else t
    t.to_arrow(filter=[("v", "<", 0)])               # start the runtime, read the metadata
    with open("/proc/self/clear_refs", "w") as f:    # reset the peak RSS (VmHWM) to the current RSS
        f.write("5")
    before = peak()
    w = t.writer()                                   # bootstraps the key index from every key
    w.upsert(pa.table({"id": ["k" * 190 + "0000001"], "dt": ["moved"], "v": [1]}, schema=t.schema))
    t.commit(w.prepare_commit())
    w.close()
    print(json.dumps({"growth": peak() - before}))
""")


def test_the_key_index_stays_within_its_cache(tmp_path):
    """A writer bootstraps the index of 120,000 keys of ~200 bytes (~23 MiB of keys) with
    ``lookup.cache-max-memory-size`` 4 MiB: its peak RSS grows by far less than the keys above
    a writer that reads no key (they are on disk); with a 1 GiB cache (control) the index pages
    stay in memory."""
    schema = pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        pa.field("v", pa.int64())])
    n, per = 120_000, 30_000
    key_bytes = n * 197
    t = tidelake.create_table(str(tmp_path / "baseline"), schema, primary_keys=["id"], partition_keys=["dt"],
                              bucket=-1)
    for c in range(n // per):
        ids = [f"{'k' * 190}{i:07d}" for i in range(c * per, (c + 1) * per)]
        t.upsert(pa.table({"id": ids, "dt": [f"d{c}"] * per, "v": list(range(per))}, schema=schema))
    paths = {"baseline": t.path}
    for run in ("small", "big"):  # a copy each: the runs set options on their table
        paths[run] = shutil.copytree(t.path, str(tmp_path / run))

    def growth(run: str, cache: str, ttl: str = "") -> int:
        out = subprocess.run([sys.executable, "-c", INDEX_MEASURE, paths[run], cache, ttl], capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])["growth"]

    time.sleep(0.2)
    base = growth("baseline", "4 mb", "100 ms")
    small, big = growth("small", "4 mb") - base, growth("big", "1 gb") - base
    print(f"\nkey index of {n} keys ({key_bytes / 2**20:.0f} MiB): peak RSS growth above a writer that reads "
          f"no key {small / 2**20:.1f} MiB with a 4 MiB cache, {big / 2**20:.1f} MiB with 1 GiB")
    assert small < key_bytes / 3
    assert big > small + key_bytes / 3
    rows = tidelake.open_table(paths["small"]).to_arrow().to_pylist()
    assert len(rows) == n and [r["dt"] for r in rows if r["id"].endswith("0000001")] == ["moved"]
