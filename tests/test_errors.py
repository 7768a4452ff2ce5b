"""Typed errors: corrupted or truncated metadata and data, bad arguments, misuse.

Every corruption test works on a private copy of a fixture table (``fixture_copy``), damages
one file and checks that reading raises a :class:`tidelake.TidelakeError` subclass whose
message names the damaged file, without crashing the interpreter or hanging. Where
:mod:`tidelake.exceptions` documents a built-in base (``TableNotFoundError`` is a
``FileNotFoundError``, ``InvalidArgumentError`` a ``ValueError``...) that is checked too.

Decisions recorded here:

* A damaged metadata file (snapshot, schema, tag, manifest list, manifest, index manifest,
  deletion-vector index file) or a damaged data file (Parquet, ORC, Avro) is a
  ``CorruptMetadataError``. A *missing* file referenced by committed metadata is a
  ``TableNotFoundError`` (a ``FileNotFoundError``) naming the file.
* Snapshot and tag files are read lazily: opening a table only needs its latest schema, and a
  damaged snapshot N leaves other snapshots readable by id. ``LATEST``/``EARLIEST`` are hints:
  garbage in them is ignored.
"""

from __future__ import annotations

import json
import multiprocessing
import pathlib
import re
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tidelake
from tidelake import _internal
from tidelake.compaction import run_compaction_task
from conftest import FIXTURES

WAREHOUSE = FIXTURES / "warehouse" / "fx.db"


# ---- helpers -----------------------------------------------------------------------------------


def truncate(path: pathlib.Path, keep: int | None = None) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 if keep is None else keep])


def garble(path: pathlib.Path, start: float = 0.5, end: float = 1.0) -> None:
    """XOR a byte range (given as fractions of the file) with 0x5a."""
    data = bytearray(path.read_bytes())
    for i in range(int(len(data) * start), int(len(data) * end)):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def damage(path: pathlib.Path, how: str) -> None:
    {
        "truncate-half": lambda: truncate(path),
        "truncate-10": lambda: truncate(path, 10),
        "empty": lambda: truncate(path, 0),
        "garble-tail": lambda: garble(path),
    }[how]()


def latest_snapshot_json(table_dir: pathlib.Path) -> dict:
    files = sorted((table_dir / "snapshot").glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1]))
    return json.loads(files[-1].read_text())


def raises_naming(exc_type, path: pathlib.Path):
    """pytest.raises(exc_type) whose message contains the file's name and its full path."""
    return pytest.raises(exc_type, match=re.escape(str(path)))


# ---- snapshots, hints and tags ----------------------------------------------------------------


SNAPSHOT_DAMAGE = {
    "truncated": lambda p: truncate(p),
    "empty": lambda p: truncate(p, 0),
    "garbage-json": lambda p: p.write_text('{"version": 3, "id": 5, "schemaId": garbage'),
    "not-an-object": lambda p: p.write_text("[1, 2, 3]"),
    "missing-fields": lambda p: p.write_text('{"version": 3, "id": 5}'),
    "wrong-field-type": lambda p: p.write_text(p.read_text().replace('"schemaId": 0', '"schemaId": "zero"')),
}


@pytest.mark.parametrize("how", sorted(SNAPSHOT_DAMAGE))
def test_damaged_latest_snapshot(fixture_copy, how):
    table_dir = fixture_copy("time_travel")
    snap = table_dir / "snapshot" / "snapshot-5"
    SNAPSHOT_DAMAGE[how](snap)
    table = tidelake.open_table(table_dir)  # only the schema is needed to open
    for read in (table.to_arrow, table.snapshots, table.latest_snapshot, lambda: table.snapshot(5),
                 lambda: table.scan(), lambda: table.changes(4)):
        with raises_naming(tidelake.CorruptMetadataError, snap):
            read()
    # Other snapshots stay readable by id.
    assert table.to_arrow(snapshot_id=4).num_rows == 11
    assert table.snapshot(3).id == 3
    # Writers refuse to build on it, naming it; rolling back past it recovers the table.
    with raises_naming(tidelake.CorruptMetadataError, snap):
        table.write(table.to_arrow(snapshot_id=4).slice(0, 1))
    assert table.rollback_to(snapshot_id=4)["snapshot_id"] == 4
    assert not snap.exists()
    assert table.to_arrow().num_rows == 11
    table.write(table.to_arrow().slice(0, 1))
    assert table.latest_snapshot().id >= 5 and table.to_arrow().num_rows == 11


def test_the_cli_recovers_a_table_whose_newest_snapshot_is_damaged(fixture_copy):
    table_dir = fixture_copy("time_travel")
    snap = table_dir / "snapshot" / "snapshot-5"
    truncate(snap)
    cli = [sys.executable, "-m", "tidelake.cli"]
    doctor = subprocess.run([*cli, "doctor", str(table_dir), "--json"], capture_output=True, text=True)
    assert doctor.returncode == 0, doctor.stderr
    report = json.loads(doctor.stdout)
    assert report["verdict"] == "BAD"
    assert any(str(snap) in r for r in report["reasons"]), report["reasons"]
    assert f"tidelake rollback {table_dir} --snapshot 4" in report["suggestions"]
    done = subprocess.run([*cli, "rollback", str(table_dir), "--snapshot", "4", "--yes"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert tidelake.open_table(table_dir).to_arrow().num_rows == 11


def test_a_snapshot_older_than_the_earliest_has_expired(tmp_path):
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([("k", pa.int64())]), primary_keys=["k"], bucket=1)
    for k in range(4):
        t.write(pa.table({"k": [k]}))
    t.expire_snapshots(retain_min=1, retain_max=2)
    pattern = r"snapshot 1 has expired: table .*; available snapshots are 3 to 4"
    for read in (lambda: t.to_arrow(snapshot_id=1), lambda: t.snapshot(1), lambda: t.changes(0, 4)):
        with pytest.raises(tidelake.SnapshotExpiredError, match=pattern):
            read()
    # ids that never were snapshots, and future ones, are not found
    for sid in (0, 9):
        with pytest.raises(tidelake.TableNotFoundError, match="available snapshots are 3 to 4") as info:
            t.to_arrow(snapshot_id=sid)
        assert not isinstance(info.value, tidelake.SnapshotExpiredError)




@pytest.mark.parametrize("content", ["garbage", "", "3", "99", None])
def test_snapshot_hints_are_only_hints(fixture_copy, content):
    table_dir = fixture_copy("time_travel")
    hint = table_dir / "snapshot" / "LATEST"
    if content is None:
        hint.unlink()
    else:
        hint.write_text(content)
    table = tidelake.open_table(table_dir)
    assert table.latest_snapshot().id == 5
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    assert table.scan().snapshot_id == 5
    assert table.to_arrow().num_rows == 12


def test_damaged_tag(fixture_copy):
    table_dir = fixture_copy("time_travel")
    tag = table_dir / "tag" / "tag-mid"
    tag.write_text("{oops")
    table = tidelake.open_table(table_dir)
    with raises_naming(tidelake.CorruptMetadataError, tag):
        table.tags()
    with raises_naming(tidelake.CorruptMetadataError, tag):
        table.to_arrow(tag="mid")
    assert table.to_arrow(tag="first").num_rows == 8
    assert table.to_arrow().num_rows == 12


# ---- schemas -----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["truncate-half", "empty", "garbage-json", "missing-fields", "bad-type"])
def test_damaged_latest_schema_fails_open(fixture_copy, how):
    table_dir = fixture_copy("schema_evolution")
    schema = table_dir / "schema" / "schema-2"
    if how == "garbage-json":
        schema.write_text('{"fields": "nope"')
    elif how == "missing-fields":
        schema.write_text('{"version": 3, "id": 2}')
    elif how == "bad-type":
        schema.write_text(schema.read_text().replace('"BIGINT', '"NOT_A_TYPE', 1))
    else:
        damage(schema, how)
    with raises_naming(tidelake.CorruptMetadataError, schema):
        tidelake.open_table(table_dir)


def test_damaged_old_schema_fails_reads_that_need_it(fixture_copy):
    table_dir = fixture_copy("schema_evolution")
    old = table_dir / "schema" / "schema-0"
    truncate(old)
    table = tidelake.open_table(table_dir)  # the latest schema is intact
    assert table.schema_id == 2
    with raises_naming(tidelake.CorruptMetadataError, old):
        table.schemas()
    with raises_naming(tidelake.CorruptMetadataError, old):
        table.to_arrow(snapshot_id=1)
    with raises_naming(tidelake.CorruptMetadataError, old):
        table.to_arrow()  # files written under schema 0 are read through it


# ---- manifests ---------------------------------------------------------------------------------


DAMAGE = ["truncate-half", "truncate-10", "empty", "garble-tail"]


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("which", ["baseManifestList", "deltaManifestList"])
def test_damaged_manifest_list(fixture_copy, which, how):
    table_dir = fixture_copy("time_travel")
    path = table_dir / "manifest" / latest_snapshot_json(table_dir)[which]
    damage(path, how)
    table = tidelake.open_table(table_dir)
    with raises_naming(tidelake.CorruptMetadataError, path):
        table.to_arrow()
    with raises_naming(tidelake.CorruptMetadataError, path):
        table.scan()
    if which == "deltaManifestList":
        with raises_naming(tidelake.CorruptMetadataError, path):
            table.changes(4, 5)


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_manifest(fixture_copy, how):
    table_dir = fixture_copy("time_travel")
    manifests = sorted(p for p in (table_dir / "manifest").iterdir()
                       if p.name.startswith("manifest-") and not p.name.startswith("manifest-list-"))
    path = manifests[0]
    damage(path, how)
    table = tidelake.open_table(table_dir)
    with raises_naming(tidelake.CorruptMetadataError, path):
        table.to_arrow()  # every manifest of this table is live at the latest snapshot
    with raises_naming(tidelake.CorruptMetadataError, path):
        table.to_reader(batch_size=2)


@pytest.mark.parametrize("name", ["pk_dynamic_bucket", "append_deletion_vectors"])
def test_damaged_index_manifest(fixture_copy, name):
    table_dir = fixture_copy(name)
    path = table_dir / "manifest" / latest_snapshot_json(table_dir)["indexManifest"]
    truncate(path)
    with raises_naming(tidelake.CorruptMetadataError, path):
        tidelake.open_table(table_dir).to_arrow()


@pytest.mark.parametrize("how", ["truncate-10", "garble-all"])
def test_damaged_deletion_vector_file(fixture_copy, how):
    table_dir = fixture_copy("append_deletion_vectors")
    # The deletion-vector file the latest snapshot uses (the table also holds an older one).
    [split] = tidelake.open_table(table_dir).scan().splits()
    [rel] = {f["deletion"]["path"] for f in json.loads(split.payload)["files"] if f["deletion"]}
    path = table_dir / rel
    if how == "garble-all":
        garble(path, 0.0, 1.0)
    else:
        truncate(path, 10)
    with raises_naming(tidelake.CorruptMetadataError, path):
        tidelake.open_table(table_dir).to_arrow()


def test_hash_index_files_are_not_needed_to_read(fixture_copy):
    """Dynamic-bucket HASH index files only route writes; a reader never opens them."""
    table_dir = fixture_copy("pk_dynamic_bucket")
    expected = tidelake.open_table(table_dir).to_arrow()
    for path in (table_dir / "index").iterdir():
        truncate(path, 3)
    assert tidelake.open_table(table_dir).to_arrow().equals(expected)


def test_missing_files_are_damage_naming_the_file(fixture_copy):
    """A file a live snapshot references but storage lacks is damage (CorruptMetadataError naming
    the file and the way back), never "not found" as for a table or snapshot that is not there."""
    table_dir = fixture_copy("time_travel")
    data = sorted(table_dir.glob("bucket-0/*.parquet"))[0]
    data.unlink()
    table = tidelake.open_table(table_dir)
    with raises_naming(tidelake.CorruptMetadataError, data) as info:
        table.to_arrow()
    assert "missing" in str(info.value) and "rollback" in str(info.value)
    assert not isinstance(info.value, FileNotFoundError)
    with raises_naming(tidelake.CorruptMetadataError, data):
        table.scan().to_arrow()

    table_dir = fixture_copy("pk_bucket1")
    mlist = table_dir / "manifest" / latest_snapshot_json(table_dir)["baseManifestList"]
    mlist.unlink()
    with raises_naming(tidelake.CorruptMetadataError, mlist):
        tidelake.open_table(table_dir).to_arrow()


# ---- data files --------------------------------------------------------------------------------


def _data_file(table_dir: pathlib.Path, suffix: str) -> pathlib.Path:
    return sorted(table_dir.glob(f"**/data-*.{suffix}"))[0]


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("name,suffix", [("time_travel", "parquet"), ("append_basic", "parquet"),
                                         ("append_orc", "orc"), ("pk_avro", "avro")])
def test_damaged_data_file(fixture_copy, name, suffix, how):
    table_dir = fixture_copy(name)
    path = _data_file(table_dir, suffix)
    damage(path, how)
    with raises_naming(tidelake.CorruptMetadataError, path):
        tidelake.open_table(table_dir).to_arrow()


@pytest.mark.parametrize("how", ["to_reader", "split"])
def test_damaged_data_file_while_streaming(fixture_copy, how):
    table_dir = fixture_copy("time_travel")
    path = _data_file(table_dir, "parquet")
    truncate(path)
    table = tidelake.open_table(table_dir)
    with raises_naming(tidelake.CorruptMetadataError, path):
        if how == "to_reader":
            table.to_reader(batch_size=2).read_all()
        else:
            for split in table.scan().splits():
                split.read().read_all()


def test_garbled_orc_never_loses_rows_silently(fixture_copy):
    table_dir = fixture_copy("append_orc")
    expected = tidelake.open_table(table_dir).to_arrow().num_rows
    path = _data_file(table_dir, "orc")
    garble(path, 1 / 3, 2 / 3)  # orc-rust panics decoding the footer metadata
    try:
        got = tidelake.open_table(table_dir).to_arrow().num_rows
    except tidelake.CorruptMetadataError as e:
        assert str(path) in str(e)
    else:
        assert got == expected, f"read {got} of {expected} rows without an error"


def _fuzz_data_files(table_dir: pathlib.Path, suffix: str, trials: int, seed: int) -> list[str]:
    """Flip a few random bytes of a data file, read, restore; return what went wrong.

    On an append table the row count is fixed by the files' metadata, so a read either fails
    with a typed error naming the damaged file or returns every row (values may differ: Parquet
    and ORC pages carry no checksums)."""
    import random

    rnd = random.Random(seed)
    expected = tidelake.open_table(table_dir).to_arrow().num_rows
    files = sorted(table_dir.glob(f"**/data-*.{suffix}"))
    problems = []
    for trial in range(trials):
        path = rnd.choice(files)
        original = path.read_bytes()
        data = bytearray(original)
        start = rnd.randrange(len(data))
        for i in range(start, min(len(data), start + rnd.randrange(1, 16))):
            data[i] ^= rnd.randrange(1, 256)
        path.write_bytes(bytes(data))
        try:
            got = tidelake.open_table(table_dir).to_arrow().num_rows
            if got != expected:
                problems.append(f"trial {trial} ({path.name} @{start}): {got} of {expected} rows, no error")
        except tidelake.TidelakeError as e:
            if path.name not in str(e):
                problems.append(f"trial {trial}: {type(e).__name__} does not name {path.name}: {e}")
        except Exception as e:  # noqa: BLE001 - any other type is the failure being looked for
            problems.append(f"trial {trial}: untyped {type(e).__name__}: {e}")
        finally:
            path.write_bytes(original)
    return problems


def test_fuzzed_parquet_files_fail_typed_or_read_fully(fixture_copy):
    problems = _fuzz_data_files(fixture_copy("append_basic"), "parquet", trials=60, seed=7)
    assert not problems, "\n".join(problems)


def test_fuzzed_orc_files_fail_typed_or_read_fully(fixture_copy):
    problems = _fuzz_data_files(fixture_copy("append_orc"), "orc", trials=60, seed=7)
    assert not problems, "\n".join(problems)


# ---- tables that are not there -----------------------------------------------------------------


def test_missing_table(tmp_path):
    for path in (tmp_path / "nothing", tmp_path):
        with pytest.raises(tidelake.TableNotFoundError, match="no Paimon table") as info:
            tidelake.open_table(path)
        assert isinstance(info.value, FileNotFoundError)
        assert str(path) in str(info.value)


def test_a_file_is_not_a_table(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(tidelake.TableNotFoundError):
        tidelake.open_table(path)


def test_table_without_snapshots_reads_empty(fixture_copy):
    table_dir = fixture_copy("time_travel")
    for p in (table_dir / "snapshot").iterdir():
        p.unlink()
    table = tidelake.open_table(table_dir)
    assert table.latest_snapshot() is None
    assert table.snapshots() == []
    got = table.to_arrow()
    assert got.num_rows == 0 and got.schema.names == ["id", "v", "n"]
    with pytest.raises(tidelake.TableNotFoundError, match="no snapshots"):
        table.to_arrow(snapshot_id=1)


# ---- bad arguments -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tt() -> tidelake.Table:
    return tidelake.open_table(WAREHOUSE / "time_travel")


def _invalid(match: str):
    return pytest.raises(tidelake.InvalidArgumentError, match=match)


def test_invalid_argument_is_a_value_error():
    assert issubclass(tidelake.InvalidArgumentError, ValueError)
    assert issubclass(tidelake.InvalidArgumentError, tidelake.TidelakeError)
    assert issubclass(tidelake.TableNotFoundError, FileNotFoundError)
    assert issubclass(tidelake.CorruptMetadataError, tidelake.TidelakeError)


@pytest.mark.parametrize("call", ["to_arrow", "to_reader", "scan", "changes"])
def test_unknown_filter_column_names_it_and_lists_columns(tt, call):
    fn = {"to_arrow": tt.to_arrow, "to_reader": tt.to_reader, "scan": tt.scan,
          "changes": lambda filter: tt.changes(0, filter=filter)}[call]
    with _invalid(r"unknown column 'nope'.*id, v, n") as info:
        fn(filter=[("n", ">", 1), ("nope", "=", 1)])
    assert isinstance(info.value, ValueError)


def test_unknown_projected_column_names_it_and_lists_columns(tt):
    with _invalid(r"unknown column 'nope'.*id, v, n"):
        tt.to_arrow(columns=["id", "nope"])
    with _invalid(r"unknown column 'nope'.*id, v, n"):
        tt.changes(0, columns=["nope"])


@pytest.mark.parametrize("column,value,expect", [
    ("id", "abc", r"'id'.*BIGINT"),
    ("id", "3", r"'id'.*BIGINT"),
    ("id", 3.5, r"'id'.*BIGINT"),
    ("id", True, r"'id'.*BIGINT"),
    ("n", [1, 2], r"unsupported filter literal \[1, 2\]"),
])
def test_wrong_literal_type(tt, column, value, expect):
    with _invalid(expect):
        tt.to_arrow(filter=[(column, "=", value)])


def test_wrong_literal_types_on_typed_columns():
    pk = tidelake.open_table(WAREHOUSE / "pk_types")
    with _invalid(r"'k_date'.*DATE"):
        pk.to_arrow(filter=[("k_date", "=", "not-a-date")])
    with _invalid(r"'dec10_2'"):
        pk.to_arrow(filter=[("dec10_2", ">", "a lot")])
    with _invalid(r"unsupported filter literal"):
        pk.to_arrow(filter=[("k_int", "=", object())])


@pytest.mark.parametrize("flt,match", [
    ([("id", "~", 1)], r"unknown filter operator '~'"),
    ([("id", "like", "a%")], r"unknown filter operator 'like'"),
    ([("id", "in", 1)], r"needs a list of values"),
    ([("id", "in", "abc")], r"needs a list of values"),
    ([("id", "=", None)], r"use 'is_null'"),
    ([("id",)], r"\(column, op, value\)|unsupported filter"),
    ([1, 2, 3], r"unsupported filter"),
    ([], r"unsupported filter"),
    ({"op": "xx"}, r"unknown op 'xx'"),
    ([[("id", "=", 1)], ("id", "=", 2)], r"unsupported filter"),
])
def test_bad_filters(tt, flt, match):
    with _invalid(match):
        tt.to_arrow(filter=flt)


@pytest.mark.parametrize("kwargs", [
    {"snapshot_id": 1, "tag": "first"},
    {"snapshot_id": 1, "timestamp_ms": 1},
    {"tag": "first", "timestamp_ms": 1},
])
def test_conflicting_time_travel_arguments(tt, kwargs):
    with _invalid(r"at most one of snapshot_id, tag and timestamp_ms"):
        tt.to_arrow(**kwargs)
    with _invalid(r"at most one of snapshot_id, tag and timestamp_ms"):
        tt.scan(**kwargs)


@pytest.mark.parametrize("sid", [0, -1, 6, 42])
def test_snapshot_out_of_range_lists_the_range(tt, sid):
    with pytest.raises(tidelake.TableNotFoundError, match=r"available snapshots are 1 to 5") as info:
        tt.to_arrow(snapshot_id=sid)
    assert isinstance(info.value, FileNotFoundError)
    assert f"snapshot {sid}" in str(info.value)


def test_unknown_tag_and_early_timestamp(tt):
    with pytest.raises(tidelake.TableNotFoundError, match=r"existing tags: \[first, mid\]"):
        tt.scan(tag="nope")
    first = tt.snapshots()[0].time_millis
    with pytest.raises(tidelake.TableNotFoundError, match=str(first - 1)):
        tt.to_arrow(timestamp_ms=first - 1)


@pytest.mark.parametrize("start,end", [(4, 2), (10, None), (1, 42)])
def test_bad_change_ranges(tt, start, end):
    pattern = re.escape(f"({start}, {end if end is not None else 5}]")
    with _invalid(pattern):
        tt.changes(start, end)


def test_empty_change_range_is_empty(tt):
    got = tt.changes(3, 3)
    assert got.num_rows == 0 and got.column_names[0] == "_row_kind"


def test_negative_change_start_is_invalid(tt):
    with _invalid(r"-5"):
        tt.changes(-5, 2)


def test_negative_batch_size_is_invalid(tt):
    with _invalid("batch_size"):
        tt.to_reader(batch_size=-1)


def test_expression_with_unknown_column(tt):
    with _invalid(r"nope"):
        tt.to_arrow(filter=pc.field("nope") > 1)


# ---- fork safety -------------------------------------------------------------------------------


def _read_in_child(split):
    try:
        return "ok", split.read().read_all().num_rows
    except tidelake.TidelakeError as e:
        return type(e).__name__, isinstance(e, RuntimeError), str(e)


def test_forked_child_gets_fork_safety_error(tt):
    splits = tt.scan().splits()  # the runtime is running in this process now
    with multiprocessing.get_context("fork").Pool(1) as pool:
        [result] = pool.map(_read_in_child, splits[:1])
    assert result[0] == "ForkSafetyError" and result[1] is True, result
    assert "spawn" in result[2]


# ---- the error audit ---------------------------------------------------------------------------


def _cross_partition_conflict(tmp_path: pathlib.Path) -> None:
    """A cross-partition-upsert writer that another writer overtook (not re-sequenced)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("d", pa.string())])
    t = tidelake.create_table(str(tmp_path / "x"), schema, primary_keys=["k"], partition_keys=["d"])
    w = t.writer()
    w.write(pa.table({"k": [1], "d": ["a"]}, schema=schema))
    t.write(pa.table({"k": [2], "d": ["b"]}, schema=schema))
    t.commit(w.prepare_commit())


def _with_failpoint(name: str, actions: str, run) -> None:
    _internal.set_failpoint(name, actions)
    try:
        run()
    finally:
        _internal.set_failpoint(name, "off")


def _small_table(tmp_path: pathlib.Path, name: str = "t") -> tidelake.Table:
    t = tidelake.create_table(str(tmp_path / name), pa.schema([pa.field("k", pa.int64(), nullable=False)]),
                              primary_keys=["k"], bucket=1)
    t.write(pa.table({"k": [1, 2]}, schema=t.schema))
    return t


def _expired_read(tmp_path: pathlib.Path) -> None:
    t = _small_table(tmp_path)
    for k in range(3, 6):
        t.write(pa.table({"k": [k]}, schema=t.schema))
    t.expire_snapshots(retain_min=1, retain_max=1)
    t.to_arrow(snapshot_id=1)


def _corrupt(tmp_path: pathlib.Path) -> None:
    t = _small_table(tmp_path)
    truncate(tmp_path / "t" / "snapshot" / "snapshot-1")
    t.to_arrow()


def _failed_expectation(tmp_path: pathlib.Path) -> None:
    with _small_table(tmp_path).stage("audit") as s:
        s.expect(max_rows=1)


# Each of tidelake's exception classes, and a call that must raise exactly it.
ERROR_PATHS = {
    tidelake.TableNotFoundError: lambda p: tidelake.open_table(str(p / "nope")),
    tidelake.SnapshotExpiredError: _expired_read,
    tidelake.TableAlreadyExistsError: lambda p: (_small_table(p), _small_table(p)),
    tidelake.CommitConflictError: _cross_partition_conflict,
    tidelake.ExpectationError: _failed_expectation,
    tidelake.CorruptMetadataError: _corrupt,
    tidelake.SchemaMismatchError: lambda p: _small_table(p).write(pa.table({"k": ["one"]})),
    tidelake.InvalidArgumentError: lambda p: _small_table(p).to_arrow(filter="k ==="),
    tidelake.UnsupportedError: lambda p: _small_table(p).set_option("bucket", "-1"),
    tidelake.StorageError: lambda p: tidelake.open_table(
        str(_small_table(p).path), storage_options={"tidelake.fault.op": "get", "tidelake.fault.nth": "1"}).to_arrow(),
    tidelake.InternalError: lambda p: _with_failpoint(
        "commit-before-snapshot", "panic", lambda: _small_table(p, "u")),
}


def test_every_error_class_has_a_path_that_raises_exactly_it(tmp_path):
    """The audit: every exception class tidelake defines is raised, exactly (not a subclass
    or a parent), by the call that stands for it; the fork-safety error has its own test."""
    defined = {getattr(tidelake.exceptions, n) for n in tidelake.exceptions.__all__} - {
        tidelake.TidelakeError, tidelake.ForkSafetyError}
    assert defined == set(ERROR_PATHS)
    for cls, call in ERROR_PATHS.items():
        where = tmp_path / cls.__name__
        where.mkdir()
        with pytest.raises(tidelake.TidelakeError) as info:
            call(where)
        assert type(info.value) is cls, f"{cls.__name__}: got {type(info.value).__name__}: {info.value}"
        assert "\x1b" not in str(info.value)


@pytest.mark.parametrize("failpoint,operation", [
    ("write-flush", "write"), ("commit-before-snapshot", "write"), ("commit-after-snapshot", "write"),
    ("compact-before-commit", "compact-plan"), ("expire-before-delete", "expire"),
    ("orphans-before-delete", "orphans"),
])
@pytest.mark.parametrize("action,error", [("panic", tidelake.InternalError), ("return", tidelake.StorageError)])
def test_failing_inside_the_engine_leaves_a_consistent_table(tmp_path, failpoint, operation, action, error):
    """At every named failpoint, a panic is an InternalError and a storage failure a
    StorageError; afterwards the table reads every acknowledged row, the same operation succeeds,
    and orphan cleaning leaves nothing unreferenced."""
    t = tidelake.create_table(str(tmp_path / "t"), pa.schema([pa.field("k", pa.int64(), nullable=False)]),
                              primary_keys=["k"], bucket=1, options={"snapshot.num-retained.min": "1",
                                                                     "snapshot.num-retained.max": "1",
                                                                     "write-only": "true"})
    acked = set()
    for k in range(4):
        t.write(pa.table({"k": [k]}, schema=t.schema))
        acked.add(k)
    orphan = tmp_path / "t" / "bucket-0" / "data-orphan.parquet"

    def run() -> None:
        if operation == "write":
            t.write(pa.table({"k": [10]}, schema=t.schema))
            acked.add(10)
        elif operation == "compact-plan":
            plan = t.compaction_plan(full=True)
            plan.commit([run_compaction_task(task) for task in plan.tasks])
        elif operation == "expire":
            t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
        else:
            orphan.write_bytes(b"x")
            t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)

    _internal.set_failpoint(failpoint, action)
    try:
        with pytest.raises(error):
            run()
    finally:
        _internal.set_failpoint(failpoint, "off")
    landed = failpoint == "commit-after-snapshot"  # the snapshot exists; only the answer was lost
    t = tidelake.open_table(t.path)
    assert set(t.to_arrow()["k"].to_pylist()) == acked | ({10} if landed else set())
    run()
    assert set(t.refresh().to_arrow()["k"].to_pylist()) >= acked
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    assert set(t.to_arrow()["k"].to_pylist()) >= acked
