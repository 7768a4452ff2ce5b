"""``Table.verify()`` and ``tidelake doctor --verify``: the consistency check replaying the
snapshot chain (``maintenance::verify``).

Healthy tables of every kind, after upserts, deletes and compactions, and every Java-written
fixture pass; then each invariant is broken on purpose (a deleted or truncated data file, a
snapshot whose delta adds live files or deletes dead ones, a deletion vector beyond its file's
rows, overlapping files in one level, a file in the wrong bucket, a deleted, truncated or
miscounted index file, a hash index missing keys' hashes or listing one twice, a missing file
index, Iceberg metadata naming an older snapshot or missing, adding or miscounting a data file)
and reported with its kind and class. The CLI's exit code and JSON are checked too.
"""

from __future__ import annotations

import json
import pathlib
import zlib

import fastavro
import pyarrow as pa
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, fixture_tables

import tidelake
from tidelake import cli
from tidelake.cli.doctor import VERIFY_VIOLATIONS_EXIT

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    pa.field("v", pa.int64())])

KINDS = {
    "append": dict(partition_keys=["p"]),
    "append-dv": dict(options={"deletion-vectors.enabled": "true"}),
    "pk-fixed": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2),
    "pk-dynamic": dict(primary_keys=["id", "p"], partition_keys=["p"]),
    "pk-dv": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=1,
                  options={"deletion-vectors.enabled": "true"}),
    "append-iceberg": dict(partition_keys=["p"], options={"metadata.iceberg.storage": "table-location",
                                                          "bucket": "-1"}),
    "append-dv-iceberg": dict(options={"metadata.iceberg.storage": "table-location", "bucket": "-1",
                                       "metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true"}),
    "pk-iceberg": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2,
                       options={"metadata.iceberg.storage": "table-location"}),
    "pk-file-index": dict(primary_keys=["id", "p"], partition_keys=["p"], bucket=2,
                          options={"file-index.bloom-filter.columns": "v", "file-index.in-manifest-threshold": "1b"}),
    "append-file-index": dict(options={"file-index.bloom-filter.columns": "id,v",
                                       "file-index.bloom-filter.id.items": "100"}),
}


def rows(ids, v: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "p": ["a" if i % 2 else "b" for i in ids], "v": [v] * len(ids)}, schema=SCHEMA)


def busy_table(tmp_path: pathlib.Path, kind: str) -> tidelake.Table:
    """A table of `kind` after several writes, deletes and compactions."""
    t = tidelake.create_table(str(tmp_path / kind), SCHEMA, **KINDS[kind])
    keyed = "primary_keys" in KINDS[kind]
    write = t.upsert if keyed else t.write
    write(rows(range(0, 40), 1))
    write(rows(range(20, 60), 2))
    t.delete("id < 5")
    t.compact()
    write(rows(range(50, 80), 3))
    t.delete("id >= 70")
    t.compact(full=True)
    write(rows(range(0, 10), 4))
    return t


def assert_violation(report, kind: str, cls: str, path_part: str = "") -> None:
    found = [v for v in report.violations if v.kind == kind]
    assert found, f"no {kind} violation in {report.violations}"
    assert all(v.cls == cls for v in found)
    assert any(path_part in v.path for v in found), (path_part, found)
    assert not report.ok


def verify_again(path: pathlib.Path):
    """Verify the table at `path` through a new Table object: the old one's read cache holds the
    manifests as they were before the test changed them."""
    return tidelake.open_table(path).verify()


def live_data_files(t: tidelake.Table) -> list[dict]:
    return t.system("files").to_pylist()


# ---- healthy tables -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_healthy_table_passes(tmp_path, kind):
    t = busy_table(tmp_path, kind)
    report = t.verify()
    assert report.violations == []
    assert report.ok
    latest = t.latest_snapshot().id
    assert report.latest == latest == report.state_snapshot
    assert report.snapshots_checked == len(t.snapshots()) >= 6


@pytest.mark.parametrize("name", sorted(f["name"] for f in fixture_tables()))
def test_java_written_fixtures_pass(name):
    t = tidelake.open_table(FIXTURES / "warehouse" / "fx.db" / name)
    report = t.verify()
    assert report.violations == [], report.violations
    assert report.snapshots_checked >= 1


def test_files_deeper_than_a_lowered_num_levels_are_legal(tmp_path):
    """Java raises the level count to hold the deepest file (``max(num-levels, deepest + 1)``),
    so lowering ``num-levels`` under fully compacted files leaves a healthy table."""
    t = busy_table(tmp_path, "pk-fixed")
    assert max(f["level"] for f in live_data_files(t)) >= 2
    t = t.set_option("num-levels", "2")
    report = verify_again(tmp_path / "pk-fixed")
    assert report.violations == [], report.violations
    write = t.upsert
    write(rows(range(5, 15), 5))
    t.compact()
    assert verify_again(tmp_path / "pk-fixed").violations == []


def test_verify_changes_nothing(tmp_path):
    t = busy_table(tmp_path, "pk-dv")
    before = sorted((p, p.stat().st_size) for p in (tmp_path / "pk-dv").rglob("*") if p.is_file())
    t.verify()
    after = sorted((p, p.stat().st_size) for p in (tmp_path / "pk-dv").rglob("*") if p.is_file())
    assert before == after


# ---- files ----------------------------------------------------------------------------------


def test_a_deleted_data_file_is_reported(tmp_path):
    t = busy_table(tmp_path, "pk-fixed")
    victim = pathlib.Path(live_data_files(t)[0]["file_path"].removeprefix("file:"))
    victim.unlink()
    report = verify_again(tmp_path / "pk-fixed")
    assert_violation(report, "missing_file", "files", victim.name)
    assert {v.kind for v in report.violations} == {"missing_file"}


def test_a_truncated_data_file_is_reported(tmp_path):
    t = busy_table(tmp_path, "append")
    victim = pathlib.Path(live_data_files(t)[0]["file_path"].removeprefix("file:"))
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    report = verify_again(tmp_path / "append")
    assert_violation(report, "file_size", "files", victim.name)
    [v] = report.violations
    assert f"{len(data) // 2} bytes where {len(data)} were written" in v.detail


# ---- replay ---------------------------------------------------------------------------------


def replay_snapshot_again(table_dir: pathlib.Path) -> int:
    """Commit the latest snapshot's manifest lists again as a new snapshot (what a writer that
    re-committed its files would leave): its delta is replayed twice."""
    snapshots = table_dir / "snapshot"
    latest = int((snapshots / "LATEST").read_text())
    snap = json.loads((snapshots / f"snapshot-{latest}").read_text())
    snap["id"] = latest + 1
    (snapshots / f"snapshot-{latest + 1}").write_text(json.dumps(snap))
    (snapshots / "LATEST").write_text(str(latest + 1))
    return latest + 1


def test_a_delta_adding_a_live_file_is_reported(tmp_path):
    t = busy_table(tmp_path, "append")
    added = {r["file_path"].rsplit("/", 1)[-1] for r in live_data_files(t)}
    bad = replay_snapshot_again(tmp_path / "append")
    report = verify_again(tmp_path / "append")
    assert_violation(report, "added_twice", "replay")
    assert {v.kind for v in report.violations} == {"added_twice"}
    assert {v.snapshot for v in report.violations} == {bad}
    assert all(v.path.rsplit("/", 1)[-1] in added for v in report.violations)


def test_a_delta_deleting_a_file_that_is_not_live_is_reported(tmp_path):
    t = busy_table(tmp_path, "pk-fixed")
    t.compact(full=True)  # the latest snapshot deletes the files it compacted
    assert t.latest_snapshot().commit_kind == "COMPACT"
    bad = replay_snapshot_again(tmp_path / "pk-fixed")
    report = verify_again(tmp_path / "pk-fixed")
    assert_violation(report, "deleted_not_live", "replay")
    assert {v.snapshot for v in report.violations if v.kind == "deleted_not_live"} == {bad}
    assert {v.kind for v in report.violations} <= {"deleted_not_live", "added_twice"}


def test_a_base_list_that_disagrees_with_the_replay_is_reported(tmp_path):
    busy_table(tmp_path, "append")
    snapshots = tmp_path / "append" / "snapshot"
    latest = int((snapshots / "LATEST").read_text())
    # the newest snapshot's base list is that of its predecessor's predecessor: the files the
    # previous snapshot added are live after the replay but not in its manifests
    snap = json.loads((snapshots / f"snapshot-{latest}").read_text())
    older = json.loads((snapshots / f"snapshot-{latest - 1}").read_text())
    snap["baseManifestList"] = older["baseManifestList"]
    snap["baseManifestListSize"] = older.get("baseManifestListSize")
    (snapshots / f"snapshot-{latest}").write_text(json.dumps(snap))
    report = verify_again(tmp_path / "append")
    assert_violation(report, "live_set_mismatch", "replay")
    assert {v.snapshot for v in report.violations} == {latest}


# ---- deletion vectors -----------------------------------------------------------------------


def move_first_deleted_position(index_file: pathlib.Path, position: int) -> None:
    """Rewrite the first deletion vector of a deletion-vector index file so that its greatest
    position is `position` (a 32-bit vector of one array container; CRC recomputed)."""
    b = bytearray(index_file.read_bytes())
    assert b[0] == 1
    size = int.from_bytes(b[1:5], "big")
    blob = slice(5, 5 + size)
    assert int.from_bytes(b[5:9], "big") == 1581511376  # 32-bit vector magic
    roaring = 9
    assert int.from_bytes(b[roaring:roaring + 4], "little") == 12346  # no run containers
    assert int.from_bytes(b[roaring + 4:roaring + 8], "little") == 1  # one container
    card = int.from_bytes(b[roaring + 10:roaring + 12], "little") + 1
    values = roaring + 8 + 4 + 4
    last = values + 2 * (card - 1)
    assert int.from_bytes(b[last:last + 2], "little") < position < 1 << 16
    b[last:last + 2] = position.to_bytes(2, "little")
    b[5 + size:9 + size] = zlib.crc32(bytes(b[blob])).to_bytes(4, "big")
    index_file.write_bytes(bytes(b))


def test_a_deletion_vector_beyond_its_files_rows_is_reported(tmp_path):
    t = tidelake.create_table(str(tmp_path / "dv"), SCHEMA, **KINDS["append-dv"])
    t.write(rows(range(0, 20), 1))
    t.delete("id < 3")
    assert t.verify().ok
    [index_file] = (tmp_path / "dv" / "index").glob("index-*")
    move_first_deleted_position(index_file, 60000)
    report = verify_again(tmp_path / "dv")
    assert_violation(report, "deletion_vector_range", "deletion_vectors", index_file.name)
    [v] = report.violations
    assert "deletes position 60000, but the file has 20 rows" in v.detail


# ---- lsm and buckets ------------------------------------------------------------------------


def rewrite_manifest_entries(table_dir: pathlib.Path, change) -> int:
    """Apply `change(record)` to every ADD entry of the table's manifests (with fastavro,
    keeping their schema and codec); returns how many entries it changed (it returns True)."""
    changed = 0
    for manifest in (table_dir / "manifest").glob("manifest-*"):
        if manifest.name.startswith("manifest-list"):
            continue
        with manifest.open("rb") as f:
            reader = fastavro.reader(f)
            schema, codec = reader.writer_schema, reader.codec
            records = list(reader)
        hits = sum(1 for r in records if r["_KIND"] == 0 and change(r))
        if hits:
            changed += hits
            with manifest.open("wb") as f:
                fastavro.writer(f, schema, records, codec=codec)
    return changed


def file_name(f: dict) -> str:
    return f["file_path"].rsplit("/", 1)[-1]


def int_key(text: str) -> int:
    return int(text.strip("[]"))


# fastavro reads deflate, not zstd (the default manifest codec)
AVRO_OPTIONS = {"manifest.compression": "deflate"}


def test_overlapping_files_in_one_level_are_reported(tmp_path):
    t = tidelake.create_table(str(tmp_path / "pk"), SCHEMA, primary_keys=["id"], bucket=1,
                              options={"target-file-size": "1kb", **AVRO_OPTIONS})
    t.upsert(pa.table({"id": range(2000), "p": ["x" * 20] * 2000, "v": range(2000)}, schema=SCHEMA))
    t.compact(full=True)
    files = live_data_files(t)
    top = [f for f in files if f["level"] > 0]
    assert len(top) >= 2 and len({f["level"] for f in top}) == 1, files
    assert t.verify().ok
    first = file_name(min(top, key=lambda f: int_key(f["min_key"])))
    last = file_name(max(top, key=lambda f: int_key(f["max_key"])))
    max_key = []
    rewrite_manifest_entries(tmp_path / "pk", lambda r: r["_FILE"]["_FILE_NAME"] == last
                             and max_key.append(r["_FILE"]["_MAX_KEY"]) is not None)
    assert max_key

    def widen(r) -> bool:  # the first file now spans every key
        if r["_FILE"]["_FILE_NAME"] != first:
            return False
        r["_FILE"]["_MAX_KEY"] = max_key[0]
        return True

    assert rewrite_manifest_entries(tmp_path / "pk", widen) >= 1
    report = verify_again(tmp_path / "pk")
    assert_violation(report, "level_overlap", "lsm", first)
    assert {v.kind for v in report.violations} == {"level_overlap"}


def test_a_file_whose_sequence_numbers_are_reversed_is_reported(tmp_path):
    t = tidelake.create_table(str(tmp_path / "pk"), SCHEMA, primary_keys=["id"], bucket=1, options=AVRO_OPTIONS)
    t.upsert(rows(range(100), 1))
    [f] = live_data_files(t)

    def reverse(r) -> bool:
        meta = r["_FILE"]
        meta["_MIN_SEQUENCE_NUMBER"] = meta["_MAX_SEQUENCE_NUMBER"] + 1
        return True

    assert rewrite_manifest_entries(tmp_path / "pk", reverse) == 1
    report = verify_again(tmp_path / "pk")
    assert_violation(report, "sequence_range", "lsm", file_name(f))
    assert {v.kind for v in report.violations} == {"sequence_range"}


def test_a_file_in_the_wrong_bucket_is_reported(tmp_path):
    t = tidelake.create_table(str(tmp_path / "pk"), SCHEMA, primary_keys=["id"], bucket=4, options=AVRO_OPTIONS)
    t.upsert(rows(range(100), 1))
    assert t.verify().ok
    [f] = [f for f in live_data_files(t) if f["bucket"] == 1]
    name = file_name(f)

    def move(r) -> bool:  # bucket 1's file, listed (and stored) in bucket 3
        if r["_FILE"]["_FILE_NAME"] != name:
            return False
        r["_BUCKET"] = 3
        return True

    assert rewrite_manifest_entries(tmp_path / "pk", move) == 1
    (tmp_path / "pk" / "bucket-3").mkdir(exist_ok=True)
    (tmp_path / "pk" / "bucket-1" / name).rename(tmp_path / "pk" / "bucket-3" / name)
    report = verify_again(tmp_path / "pk")
    assert_violation(report, "wrong_bucket", "buckets", f"bucket-3/{name}")
    assert {v.kind for v in report.violations} == {"wrong_bucket"}
    assert all("belongs in bucket 1 of 4" in v.detail for v in report.violations)


# ---- CLI ------------------------------------------------------------------------------------


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout


def test_the_cli_verifies(tmp_path):
    t = busy_table(tmp_path, "pk-fixed")
    code, out = run_cli("doctor", tmp_path / "pk-fixed", "--verify")
    assert code == 0 and "verify: OK" in out
    code, out = run_cli("doctor", tmp_path / "pk-fixed", "--verify", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True and report["violations"] == []
    assert report["latest"] == t.latest_snapshot().id == report["state_snapshot"]

    victim = pathlib.Path(live_data_files(t)[0]["file_path"].removeprefix("file:"))
    victim.unlink()
    code, out = run_cli("doctor", tmp_path / "pk-fixed", "--verify", "--json")
    assert code == VERIFY_VIOLATIONS_EXIT == 5
    report = json.loads(out)
    assert report["ok"] is False and report["path"] == str(tmp_path / "pk-fixed")
    [v] = report["violations"]
    assert set(v) == {"kind", "class", "snapshot", "path", "detail"}
    assert (v["kind"], v["class"], v["snapshot"]) == ("missing_file", "files", t.latest_snapshot().id)
    assert victim.name in v["path"]
    code, out = run_cli("doctor", tmp_path / "pk-fixed", "--verify")
    assert code == 5 and "1 violation" in out and "missing_file" in out


# ---- index files ----------------------------------------------------------------------------


def dynamic_table(tmp_path: pathlib.Path, **options: str) -> tuple[tidelake.Table, pathlib.Path]:
    """An unpartitioned dynamic-bucket table of 100 keys; its hash index files are returned."""
    t = tidelake.create_table(str(tmp_path / "dyn"), SCHEMA, primary_keys=["id"],
                              options={**AVRO_OPTIONS, **options})
    t.upsert(rows(range(100), 1))
    assert t.verify().ok
    return t, tmp_path / "dyn" / "index"


def hashes(index_file: pathlib.Path) -> list[int]:
    b = index_file.read_bytes()
    return [int.from_bytes(b[i:i + 4], "big", signed=True) for i in range(0, len(b), 4)]


def write_hashes(index_file: pathlib.Path, values: list[int]) -> None:
    index_file.write_bytes(b"".join(v.to_bytes(4, "big", signed=True) for v in values))


def test_a_deleted_or_truncated_hash_index_file_is_reported(tmp_path):
    _, index_dir = dynamic_table(tmp_path)
    [index_file] = index_dir.glob("index-*")
    index_file.write_bytes(index_file.read_bytes()[:-4])
    report = verify_again(tmp_path / "dyn")
    assert_violation(report, "file_size", "files", index_file.name)
    index_file.unlink()
    report = verify_again(tmp_path / "dyn")
    assert_violation(report, "missing_file", "files", index_file.name)


def test_a_hash_index_lacking_the_keys_hashes_is_reported(tmp_path):
    _, index_dir = dynamic_table(tmp_path)
    [index_file] = index_dir.glob("index-*")
    real = hashes(index_file)
    assert len(real) == 100
    bogus = [h for h in range(1000) if h not in real][:100]  # same count and size, other hashes
    write_hashes(index_file, bogus)
    report = verify_again(tmp_path / "dyn")
    assert_violation(report, "hash_index_key", "index", "bucket-0/")
    assert {v.kind for v in report.violations} == {"hash_index_key"}
    assert {"min key", "max key"} <= {w for v in report.violations for w in ("min key", "max key") if w in v.detail}


def test_a_hash_listed_by_two_buckets_is_reported(tmp_path):
    _, index_dir = dynamic_table(tmp_path, **{"dynamic-bucket.target-row-num": "50"})
    files = sorted(index_dir.glob("index-*"), key=lambda f: f.name)
    assert len(files) == 2
    first, second = (hashes(f) for f in files)
    assert not set(first) & set(second)
    write_hashes(files[1], [h for h in second if h != second[1]] + [first[0]])  # one hash moved over
    report = verify_again(tmp_path / "dyn")
    assert_violation(report, "hash_index_duplicate", "index")
    dup = [v for v in report.violations if v.kind == "hash_index_duplicate"]
    assert len(dup) == 1 and f"hash {first[0]}" in dup[0].detail


def test_a_hash_index_whose_row_count_is_wrong_is_reported(tmp_path):
    _, index_dir = dynamic_table(tmp_path)
    [index_file] = index_dir.glob("index-*")
    changed = 0
    for manifest in (tmp_path / "dyn" / "manifest").glob("index-manifest-*"):
        with manifest.open("rb") as f:
            reader = fastavro.reader(f)
            schema, codec = reader.writer_schema, reader.codec
            records = list(reader)
        for r in records:
            if r["_FILE_NAME"] == index_file.name:
                assert r["_ROW_COUNT"] == 100
                r["_ROW_COUNT"] = 99
                changed += 1
        with manifest.open("wb") as f:
            fastavro.writer(f, schema, records, codec=codec)
    assert changed
    report = verify_again(tmp_path / "dyn")
    assert_violation(report, "hash_index_count", "index", index_file.name)
    [v] = report.violations
    assert "holds 100 hashes, but its row count is 99" in v.detail


def test_a_missing_file_index_is_reported(tmp_path):
    t = busy_table(tmp_path, "pk-file-index")
    assert t.verify().ok
    live = {file_name(f) + ".index" for f in live_data_files(t)}
    index_files = sorted(f for f in (tmp_path / "pk-file-index").rglob("*.index") if f.name in live)
    assert len(index_files) >= 2
    index_files[0].unlink()
    index_files[1].write_bytes(b"not an index")
    report = verify_again(tmp_path / "pk-file-index")
    assert_violation(report, "file_index", "index", index_files[0].name)
    assert_violation(report, "file_index", "index", index_files[1].name)
    assert {v.kind for v in report.violations} == {"file_index"}


# ---- Iceberg metadata -----------------------------------------------------------------------


# fastavro reads deflate, not snappy (the default Iceberg manifest codec)
ICEBERG_AVRO = {"metadata.iceberg.storage": "table-location", "metadata.iceberg.manifest-compression": "deflate",
                "bucket": "-1"}


def iceberg_table(tmp_path: pathlib.Path) -> tuple[tidelake.Table, pathlib.Path]:
    t = tidelake.create_table(str(tmp_path / "ice"), SCHEMA, partition_keys=["p"], options=ICEBERG_AVRO)
    for i in range(3):
        t.write(rows(range(10 * i, 10 * i + 10), i))
    assert t.verify().ok
    return t, tmp_path / "ice" / "metadata"


def iceberg_data_manifests(metadata_dir: pathlib.Path, version: int) -> list[pathlib.Path]:
    meta = json.loads((metadata_dir / f"v{version}.metadata.json").read_text())
    [current] = [s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"]]
    with (metadata_dir / current["manifest-list"].rsplit("/", 1)[-1]).open("rb") as f:
        listed = list(fastavro.reader(f))
    return [metadata_dir / m["manifest_path"].rsplit("/", 1)[-1] for m in listed if m.get("content", 0) == 0]


def rewrite_iceberg_manifest(manifest: pathlib.Path, change) -> None:
    with manifest.open("rb") as f:
        reader = fastavro.reader(f)
        schema, codec, meta = reader.writer_schema, reader.codec, reader.metadata
        records = list(reader)
    records = change(records)
    extra = {k: v for k, v in meta.items() if not k.startswith("avro.")}
    with manifest.open("wb") as f:
        fastavro.writer(f, schema, records, codec=codec, metadata=extra)


def test_iceberg_metadata_missing_a_data_file_is_reported(tmp_path):
    t, metadata_dir = iceberg_table(tmp_path)
    latest = t.latest_snapshot().id
    manifests = iceberg_data_manifests(metadata_dir, latest)
    dropped = []
    rewrite_iceberg_manifest(manifests[0], lambda records: dropped.append(records[0]) or records[1:])
    path = dropped[0]["data_file"]["file_path"]
    report = verify_again(tmp_path / "ice")
    assert_violation(report, "iceberg_missing_file", "iceberg", path.rsplit("/", 1)[-1])
    [v] = report.violations
    assert v.path == path and v.snapshot == latest


def test_iceberg_metadata_listing_a_file_twice_or_miscounting_it_is_reported(tmp_path):
    t, metadata_dir = iceberg_table(tmp_path)
    manifest = iceberg_data_manifests(metadata_dir, t.latest_snapshot().id)[0]

    def change(records):
        records[0]["data_file"]["record_count"] += 1
        return records + [records[-1]]

    rewrite_iceberg_manifest(manifest, change)
    report = verify_again(tmp_path / "ice")
    assert_violation(report, "iceberg_file_stats", "iceberg")
    assert_violation(report, "iceberg_extra_file", "iceberg")
    assert {v.kind for v in report.violations} == {"iceberg_file_stats", "iceberg_extra_file"}
    assert any("lists it twice" in v.detail for v in report.violations)


def test_iceberg_metadata_of_an_older_snapshot_is_reported(tmp_path):
    t, metadata_dir = iceberg_table(tmp_path)
    latest = t.latest_snapshot().id
    newest = metadata_dir / f"v{latest}.metadata.json"
    meta = json.loads(newest.read_text())
    meta["current-snapshot-id"] = latest - 1
    newest.write_text(json.dumps(meta))
    report = verify_again(tmp_path / "ice")
    assert_violation(report, "iceberg_snapshot", "iceberg", newest.name)
    [v] = report.violations
    assert f"not {latest}" in v.detail

    newest.unlink()
    (metadata_dir / "version-hint.text").write_text(str(latest - 1))
    report = verify_again(tmp_path / "ice")
    found = [v for v in report.violations if v.kind == "iceberg_snapshot"]
    assert len(found) == 2 and {v.kind for v in report.violations} == {"iceberg_snapshot"}
    assert any(f"names version {latest - 1}" in v.detail for v in found)
    assert any(f"no Iceberg metadata version for snapshot {latest}" in v.detail for v in found)
    # the next commit writes the metadata afresh and the table is consistent again
    t = tidelake.open_table(tmp_path / "ice")
    t.write(rows(range(100, 105), 9))
    assert verify_again(tmp_path / "ice").ok


def test_the_cli_reports_the_new_classes_in_json(tmp_path):
    _, metadata_dir = iceberg_table(tmp_path)
    (metadata_dir / "version-hint.text").write_text("1")
    code, out = run_cli("doctor", tmp_path / "ice", "--verify", "--json")
    assert code == VERIFY_VIOLATIONS_EXIT
    [v] = json.loads(out)["violations"]
    assert (v["kind"], v["class"]) == ("iceberg_snapshot", "iceberg")
