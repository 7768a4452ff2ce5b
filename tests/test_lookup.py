"""Point lookups (``Table.lookup``, ``Table.lookuper``): the latest row of each key equals a dict
model of the write history and the merged read of the same snapshot, for several merge engines,
deletion-vector tables, ``sequence.field``, partitioned and multi-column keys (seeded random
histories with upserts, deletes and automatic compaction); keys come back in input order, absent
keys omitted; bad keys raise typed errors; a lookuper is shared by a thread pool and refreshes."""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import tidelake
from tidelake import InvalidArgumentError

SCHEMA = pa.schema([
    pa.field("k", pa.int64(), nullable=False),
    pa.field("s", pa.string(), nullable=False),
    pa.field("p", pa.string(), nullable=False),
    pa.field("v", pa.int64()),
    pa.field("w", pa.string()),
    pa.field("ts", pa.int64()),
])
COLUMNS = SCHEMA.names

# engine name -> (table options, whether deletes are written)
ENGINES = {
    "deduplicate": ({}, True),
    "deletion-vectors": ({"deletion-vectors.enabled": "true"}, True),
    "partial-update": ({"merge-engine": "partial-update"}, False),
    "aggregation": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, False),
    "first-row": ({"merge-engine": "first-row"}, False),
    "sequence-field": ({"sequence.field": "ts"}, False),
}


def _key_of(row: dict, keys: list[str]) -> tuple:
    return tuple(row[k] for k in keys)


def _apply(model: dict, engine: str, kind: str, row: dict, keys: list[str]) -> None:
    key = _key_of(row, keys)
    old = model.get(key)
    if kind == "delete":
        model.pop(key, None)
    elif old is None or engine in ("deduplicate", "deletion-vectors"):
        model[key] = dict(row)
    elif engine == "partial-update":
        model[key] = {c: (row[c] if row[c] is not None else old[c]) for c in COLUMNS}
    elif engine == "aggregation":
        merged = {c: (row[c] if row[c] is not None else old[c]) for c in COLUMNS}  # last_non_null_value
        merged["v"] = None if old["v"] is None and row["v"] is None else (old["v"] or 0) + (row["v"] or 0)
        model[key] = merged
    elif engine == "sequence-field":
        if row["ts"] >= old["ts"]:
            model[key] = dict(row)
    # first-row keeps the old row


def _history(tmp_path, engine: str, seed: int, *, two_keys: bool, partitioned: bool, bucket: int = 2):
    """A table written with a random history, its dict model, and the key universe."""
    options, deletes = ENGINES[engine]
    keys = ["k", "s"] if two_keys else ["k"]
    if partitioned:
        keys = keys + ["p"]
    table = tidelake.create_table(
        tmp_path / f"{engine}-{seed}", SCHEMA, primary_keys=keys,
        partition_keys=["p"] if partitioned else None,
        options={"bucket": str(bucket), "num-sorted-run.compaction-trigger": "3", **options})
    rng = random.Random(seed)
    universe = [(k, s, p) for k in range(60) for s in (["a", "long-string-key"] if two_keys else ["a"])
                for p in (["p1", "p2"] if partitioned else ["p1"])]
    model: dict = {}
    ts = 0
    snapshots = []
    for _ in range(rng.randint(4, 9)):
        kind = "delete" if deletes and rng.random() < 0.25 else "upsert"
        batch = {}
        for k, s, p in rng.sample(universe, rng.randint(1, 40)):
            ts += 1
            row = {"k": k, "s": s, "p": p, "v": rng.choice([None, rng.randint(-50, 50)]),
                   "w": rng.choice([None, "x", "y" * rng.randint(1, 20)]),
                   "ts": rng.randint(0, 10_000)}
            batch[_key_of(row, keys)] = row  # one row per key and commit
        rows = list(batch.values())
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        if kind == "delete":
            table.delete_keys(data)
        else:
            table.upsert(data)
        for row in rows:
            _apply(model, engine, kind, row, keys)
        snapshots.append((table.latest_snapshot().id, {k: dict(v) for k, v in model.items()}))
    key_universe = [_key_of({"k": k, "s": s, "p": p}, keys) for k, s, p in universe]
    key_universe += [_key_of({"k": 1000 + i, "s": "a", "p": "p1"}, keys) for i in range(3)]  # never written
    return table, keys, model, snapshots, key_universe


def _sample_keys(rng: random.Random, universe: list[tuple], n: int) -> list[tuple]:
    keys = rng.sample(universe, min(n, len(universe)))
    return keys + rng.sample(keys, min(3, len(keys)))  # some keys twice


def _expected(model: dict, keys: list[tuple], columns: list[str] | None = None) -> list[dict]:
    seen, out = set(), []
    for key in keys:
        if key in model and key not in seen:
            row = model[key]
            out.append({c: row[c] for c in (columns or COLUMNS)})
        seen.add(key)
    return out


def _key_table(keys: list[tuple], names: list[str]) -> pa.Table:
    return pa.table({n: [k[i] for k in keys] for i, n in enumerate(names)}, schema=pa.schema(
        [SCHEMA.field(n) for n in names]))


CASES = [(engine, seed, two_keys, partitioned)
         for engine in ENGINES for seed, two_keys, partitioned in ((1, False, False), (2, True, True))]


@pytest.mark.parametrize("engine,seed,two_keys,partitioned", CASES)
def test_lookup_equals_the_model_and_the_merged_read(tmp_path, engine, seed, two_keys, partitioned):
    table, names, model, snapshots, universe = _history(tmp_path, engine, seed, two_keys=two_keys,
                                                        partitioned=partitioned)
    rng = random.Random(seed * 7)
    merged = {_key_of(r, names): r for r in table.to_arrow().to_pylist()}
    assert merged == model, "the model describes what a read returns"
    for n in (1, 5, 40, len(universe)):
        keys = _sample_keys(rng, universe, n)
        got = table.lookup(_key_table(keys, names))
        assert got.schema == table.schema
        assert got.to_pylist() == _expected(model, keys)
    # every key form: list of tuples, plain list (one-column keys), dict of columns, RecordBatch
    keys = _sample_keys(rng, universe, 12)
    expected = _expected(model, keys)
    assert table.lookup(keys).to_pylist() == expected
    if len(names) == 1:
        assert table.lookup([k[0] for k in keys]).to_pylist() == expected
    assert table.lookup({n: [k[i] for k in keys] for i, n in enumerate(names)}).to_pylist() == expected
    assert table.lookup(_key_table(keys, names).to_batches()[0]).to_pylist() == expected
    # projection, in the order asked, key columns not required
    assert table.lookup(keys, columns=["w", "v"]).to_pylist() == _expected(model, keys, ["w", "v"])
    # time travel: each snapshot's rows
    for snapshot_id, old_model in snapshots[:2]:
        got = table.lookup(keys, snapshot_id=snapshot_id).to_pylist()
        assert got == _expected(old_model, keys)
    # one key against the filtered read
    for key in rng.sample(universe, 5):
        filtered = table.to_arrow(filter=[(n, "=", v) for n, v in zip(names, key)])
        assert table.lookup([key]).to_pylist() == filtered.to_pylist()


def test_lookup_of_an_empty_table_and_of_no_keys(tmp_path):
    table = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    assert table.lookup([1, 2]).num_rows == 0
    assert table.lookup([1]).schema == table.schema
    table.upsert(pa.Table.from_pylist([{"k": 1, "s": "a", "p": "p", "v": 1, "w": None, "ts": 0}],
                                      schema=SCHEMA))
    assert table.lookup([]).num_rows == 0
    assert table.lookup([1, 1, 2]).column("k").to_pylist() == [1]


def test_lookup_reads_only_the_files_and_buckets_of_its_keys(tmp_path):
    """A one-key lookup opens only the file of its bucket whose key range holds the key: every
    other file is made unreadable, and the lookup still answers (a full read fails)."""
    table = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"], options={"bucket": "4"})
    for start in range(0, 400, 100):  # four files per bucket with disjoint key ranges
        rows = [{"k": k, "s": "a", "p": "p", "v": k, "w": None, "ts": 0} for k in range(start, start + 100)]
        table.upsert(pa.Table.from_pylist(rows, schema=SCHEMA))
    files = table.system("files").to_pylist()
    key = 250
    target = [f for f in files if f["min_key"] is not None and f["bucket"] == _bucket_of(table, key)]
    keep = [f for f in target if _in_range(f, key)]
    assert len(keep) == 1
    for f in files:
        if f["file_path"] != keep[0]["file_path"]:
            path = f["file_path"].removeprefix("file:")
            with open(path, "r+b") as fh:  # the footer's length and magic
                fh.seek(-8, 2)
                fh.write(b"garbage!")
    assert table.lookup([key]).to_pylist() == [{"k": key, "s": "a", "p": "p", "v": key, "w": None, "ts": 0}]
    with pytest.raises(tidelake.TidelakeError):
        table.to_arrow()


def _bucket_of(table, key: int) -> int:
    writer = table._raw.writer()
    try:
        return writer.buckets(pa.Table.from_pylist([{"k": key, "s": "a", "p": "p", "v": 0, "w": None, "ts": 0}],
                                                   schema=SCHEMA), "upsert").to_pylist()[0]
    finally:
        writer.abort()


def _in_range(f: dict, key: int) -> bool:
    lo, hi = (int(str(f[c]).strip("[]")) for c in ("min_key", "max_key"))
    return lo <= key <= hi


def test_lookup_rejects_bad_keys(tmp_path):
    table = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k", "s"], options={"bucket": "2"})
    table.upsert(pa.Table.from_pylist([{"k": 1, "s": "a", "p": "p", "v": 1, "w": None, "ts": 0}], schema=SCHEMA))
    with pytest.raises(InvalidArgumentError, match="exactly the primary-key columns"):
        table.lookup(pa.table({"k": [1]}))
    with pytest.raises(InvalidArgumentError, match="exactly the primary-key columns"):
        table.lookup(pa.table({"k": [1], "s": ["a"], "v": [1]}))
    with pytest.raises(InvalidArgumentError, match="null"):
        table.lookup(pa.table({"k": [1, None], "s": ["a", "b"]}))
    with pytest.raises(InvalidArgumentError, match="2 value"):
        table.lookup([(1, "a"), (2,)])
    with pytest.raises(InvalidArgumentError, match="'k'"):
        table.lookup(pa.table({"k": ["not a number"], "s": ["a"]}))
    with pytest.raises(InvalidArgumentError, match="unknown column"):
        table.lookup([(1, "a")], columns=["nope"])
    with pytest.raises(InvalidArgumentError, match="list of keys"):
        table.lookup(42)
    append = tidelake.create_table(tmp_path / "a", SCHEMA)
    with pytest.raises(InvalidArgumentError, match="primary key"):
        append.lookup([1])
    # a key type that casts losslessly is accepted
    assert table.lookup(pa.table({"k": pa.array([1], pa.int32()), "s": ["a"]})).num_rows == 1


def test_lookuper_is_shared_by_threads_and_refreshes(tmp_path):
    table, names, model, _, universe = _history(tmp_path, "deletion-vectors", 3, two_keys=False,
                                                partitioned=True)
    lookuper = table.lookuper()
    first = lookuper.snapshot_id
    assert first == table.latest_snapshot().id

    def check(seed: int) -> int:
        rng = random.Random(seed)
        for _ in range(5):
            keys = _sample_keys(rng, universe, rng.randint(1, 30))
            assert lookuper.lookup(keys).to_pylist() == _expected(model, keys)
        return seed

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(check, range(32))) == list(range(32))

    changed = [{"k": k, "s": "a", "p": "p1", "v": 999, "w": "new", "ts": 0} for k in range(5)]
    table.upsert(pa.Table.from_pylist(changed, schema=SCHEMA))
    keys = [(k, "p1") for k in range(5)]
    assert lookuper.lookup(keys).to_pylist() == _expected(model, keys)  # still the old snapshot
    assert lookuper.refresh() == table.latest_snapshot().id != first
    assert lookuper.lookup(keys).to_pylist() == changed
    assert lookuper.lookup(keys, columns=["v"]).to_pylist() == [{"v": 999}] * 5


def _break_footers(table) -> None:
    for f in table.system("files").to_pylist():
        with open(f["file_path"].removeprefix("file:"), "r+b") as fh:
            fh.seek(-8, 2)
            fh.write(b"garbage!")


def test_a_lookupers_cache_keeps_footers_within_its_budget(tmp_path):
    """A warm lookuper reads footers and page indexes from its cache: with every file's footer
    broken afterwards it still answers, while an uncached lookup fails; the cache stays within
    its byte budget, and a budget too small for any footer still gives right answers."""
    table, names, model, _, universe = _history(tmp_path, "deduplicate", 4, two_keys=True, partitioned=False)
    keys = universe[:-3]
    expected = _expected(model, keys)
    budget = 1 << 20
    cached = table.lookuper(cache_bytes=budget)
    tiny = table.lookuper(cache_bytes=64)
    uncached = table.lookuper(cache_bytes=0)
    for lookuper in (cached, tiny, uncached):
        assert lookuper.lookup(keys).to_pylist() == expected
    assert 0 < cached.cached_bytes <= budget
    assert tiny.cached_bytes <= 64
    assert uncached.cached_bytes == 0
    _break_footers(table)
    assert cached.lookup(keys).to_pylist() == expected
    for lookuper in (tiny, uncached):
        with pytest.raises(tidelake.CorruptMetadataError):
            lookuper.lookup(keys)
    with pytest.raises(tidelake.CorruptMetadataError):
        table.lookup(keys)
    with pytest.raises(InvalidArgumentError, match="cache_bytes"):
        table.lookuper(cache_bytes=-1)


def test_a_lookupers_default_cache_is_the_tables_lookup_cache_size(tmp_path):
    """Without ``cache_bytes`` a lookuper's cache holds the table's
    ``lookup.cache-max-memory-size`` (Paimon's lookup cache option, 256 MiB by default)."""
    table, names, model, _, universe = _history(tmp_path, "deduplicate", 5, two_keys=False, partitioned=False)
    keys = universe[:-3]
    default = table.lookuper()
    assert default.lookup(keys).to_pylist() == _expected(model, keys)
    assert default.cached_bytes > 4096
    small = table.set_option("lookup.cache-max-memory-size", "4 kb").lookuper()
    assert small.lookup(keys).to_pylist() == _expected(model, keys)
    assert small.cached_bytes <= 4096


BATCH_ENGINES = ["deduplicate", "deletion-vectors", "partial-update", "aggregation", "first-row", "sequence-field"]


@pytest.mark.parametrize("engine", BATCH_ENGINES)
@pytest.mark.parametrize("two_keys,partitioned", [(False, False), (True, True)])
def test_a_batch_of_1000_keys_equals_single_key_lookups_and_the_model(tmp_path, engine, two_keys,
                                                                      partitioned):
    """One call with 1,000 keys (many per Parquet page, absent keys, keys given twice, keys of
    every bucket and partition) returns what the model holds and what 1-key lookups return:
    the batch path reads each page once for all its keys and drops nothing it should keep."""
    options, deletes = ENGINES[engine]
    names = ["k", "s"] if two_keys else ["k"]
    if partitioned:
        names = names + ["p"]
    table = tidelake.create_table(
        tmp_path / "t", SCHEMA, primary_keys=names, partition_keys=["p"] if partitioned else None,
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "3", **options})
    rng = random.Random(BATCH_ENGINES.index(engine) * 4 + two_keys * 2 + partitioned)
    parts = ["p1", "p2"] if partitioned else ["p1"]
    strings = ["a", "long-string-key"] if two_keys else ["a"]
    universe = [(k, s, p) for k in range(40_000 // (len(parts) * len(strings))) for s in strings for p in parts]
    model: dict = {}
    ts = 0

    def commit(rows: list[dict], kind: str) -> None:
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        table.delete_keys(data) if kind == "delete" else table.upsert(data)
        for row in rows:
            _apply(model, engine, kind, row, names)

    def row(k: int, s: str, p: str) -> dict:
        nonlocal ts
        ts += 1
        return {"k": k, "s": s, "p": p, "v": rng.choice([None, rng.randint(-50, 50)]),
                "w": rng.choice([None, "x", "y" * rng.randint(1, 20)]), "ts": rng.randint(0, 10_000)}

    commit([row(*u) for u in universe], "upsert")  # files of several pages per bucket
    for _ in range(3):
        kind = "delete" if deletes and rng.random() < 0.4 else "upsert"
        commit([row(*u) for u in rng.sample(universe, 3_000)], kind)
    key = lambda u: _key_of({"k": u[0], "s": u[1], "p": u[2]}, names)  # noqa: E731
    keys = [key(u) for u in rng.sample(universe, 900)]
    keys += [key((100_000 + i, "a", "p1")) for i in range(50)]  # never written
    keys += rng.sample(keys, 50)  # given twice
    rng.shuffle(keys)
    lookuper = table.lookuper()
    got = lookuper.lookup(_key_table(keys, names)).to_pylist()
    assert got == _expected(model, keys)
    assert len(got) > 500
    by_key = {_key_of(r, names): r for r in got}
    for k in rng.sample(keys, 150):
        assert lookuper.lookup([k]).to_pylist() == ([by_key[k]] if k in by_key else [])
    assert table.lookup(keys, columns=["v", "k"]).to_pylist() == _expected(model, keys, ["v", "k"])


def test_a_warm_lookuper_decodes_only_the_newest_record_of_each_key(tmp_path):
    """Once a lookup of many keys has kept each file's key column, a deduplicate table's lookup
    reads a key's other columns only in the newest file holding the key: with every page of the
    oldest file destroyed, warm lookups of keys rewritten later still answer (keys deleted later
    stay absent), while a key only the oldest file holds fails to read."""
    import pyarrow.parquet as pq

    table = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["k"],
                                  options={"bucket": "1", "write-only": "true"})

    def rows(keys: range, v: int) -> pa.Table:
        return pa.Table.from_pylist([{"k": k, "s": "a", "p": "p1", "v": v, "w": f"w{k}", "ts": k}
                                     for k in keys], schema=SCHEMA)

    table.upsert(rows(range(10_000), 1))
    (oldest,) = (f["file_path"].removeprefix("file:") for f in table.system("files").to_pylist())
    table.upsert(rows(range(0, 10_000, 2), 2))
    table.delete_keys(rows(range(0, 10_000, 4), 3))
    evens = list(range(0, 10_000, 2))
    expected = [{"k": k, "v": 2} for k in evens if k % 4 == 2]
    lookuper = table.lookuper()
    assert lookuper.lookup(evens, columns=["k", "v"]).to_pylist() == expected  # keeps key columns
    end = os.path.getsize(oldest) - pq.ParquetFile(oldest).metadata.serialized_size - 8
    with open(oldest, "r+b") as fh:  # everything between the magic and the footer
        fh.seek(4)
        fh.write(b"\xff" * (end - 4))
    assert lookuper.lookup(evens, columns=["k", "v"]).to_pylist() == expected
    assert lookuper.lookup([6, 8, 10]).to_pylist() == [
        {"k": 6, "s": "a", "p": "p1", "v": 2, "w": "w6", "ts": 6}, {"k": 10, "s": "a", "p": "p1", "v": 2, "w": "w10", "ts": 10}]
    with pytest.raises(tidelake.TidelakeError):
        lookuper.lookup([7])


def _destroy_columns(path: str, names: set[str]) -> None:
    """Overwrite every page of the columns ``names`` of Parquet file ``path`` (footer kept)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    with open(path, "r+b") as fh:
        for group in range(meta.num_row_groups):
            for i in range(meta.num_columns):
                column = meta.row_group(group).column(i)
                if column.path_in_schema in names:
                    starts = [column.data_page_offset] + ([column.dictionary_page_offset]
                                                          if column.has_dictionary_page else [])
                    fh.seek(min(starts))
                    fh.write(b"\xff" * column.total_compressed_size)


def test_a_bucket_of_one_file_without_delete_rows_is_read_without_system_columns(tmp_path):
    """A primary-key bucket holding one file that records no delete row needs no merge and no
    row kinds: reads and lookups skip `_SEQUENCE_NUMBER` and `_VALUE_KIND` (destroyed here),
    while a file of delete rows is still read with them (and fails once they are destroyed)."""
    rows = pa.Table.from_pylist([{"k": k, "s": "a", "p": "p1", "v": k, "w": None, "ts": 0}
                                 for k in range(5_000)], schema=SCHEMA)
    plain = tidelake.create_table(tmp_path / "plain", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    plain.upsert(rows)
    deletes = tidelake.create_table(tmp_path / "deletes", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    deletes.delete_keys(rows)
    for table in (plain, deletes):
        (f,) = table.system("files").to_pylist()
        _destroy_columns(f["file_path"].removeprefix("file:"), {"_SEQUENCE_NUMBER", "_VALUE_KIND"})
    plain = tidelake.open_table(tmp_path / "plain", cache_bytes=0)
    assert plain.to_arrow().sort_by("k") == rows
    assert plain.to_arrow(filter=[("k", "=", 7)]).to_pylist() == rows.slice(7, 1).to_pylist()
    assert plain.lookup([3, 9_999]).to_pylist() == rows.slice(3, 1).to_pylist()
    with pytest.raises(tidelake.TidelakeError):
        tidelake.open_table(tmp_path / "deletes", cache_bytes=0).to_arrow()


@pytest.mark.parametrize("key_type", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
def test_warm_lookups_of_every_integer_key_width(tmp_path, key_type):
    """Warm lookups (key columns kept, key values taken from them, newest records only) return
    the key in its own type and the rows a merged read returns, for every integer key width."""
    schema = pa.schema([pa.field("k", key_type, nullable=False), ("v", pa.string())])
    table = tidelake.create_table(tmp_path / "t", schema, primary_keys=["k"],
                                  options={"bucket": "2", "write-only": "true"})
    keys = list(range(-100, 100))
    table.upsert(pa.table({"k": keys, "v": [f"a{k}" for k in keys]}, schema=schema))
    table.upsert(pa.table({"k": keys[::3], "v": [f"b{k}" for k in keys[::3]]}, schema=schema))
    table.delete_keys(pa.table({"k": keys[::5], "v": [None] * len(keys[::5])}, schema=schema))
    merged = {r["k"]: r for r in table.to_arrow().to_pylist()}
    lookuper = table.lookuper()
    wanted = keys + [120, -120]
    for _ in range(2):  # cold, then warm
        got = lookuper.lookup(wanted)
        assert got.schema == schema
        assert got.to_pylist() == [merged[k] for k in wanted if k in merged]
        assert lookuper.lookup(wanted, columns=["k"]).to_pylist() == [{"k": k} for k in wanted if k in merged]
