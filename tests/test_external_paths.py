"""External data paths (``data-file.external-paths`` with a strategy): tidelake writes every data
file of append and primary-key tables (appends, flushes, changelog files, compaction output)
under the external roots, at ``<root>/<partition>/bucket-<n>/<name>``, never under the table
directory, and finds them there again to read, expire, roll back, clean orphans and drop."""

from __future__ import annotations

import pathlib
import time

import pyarrow as pa
import pytest
from _s3 import TableFiles

import tidelake

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("d", pa.string(), nullable=False),
                    ("v", pa.string())])
FUTURE_MS = int(time.time() * 1000) + 3_600_000


def roots(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    return [tmp_path / "ext1", tmp_path / "ext2"]


def external_options(tmp_path: pathlib.Path, **extra: str) -> dict[str, str]:
    return {"data-file.external-paths": ",".join(f"file://{r}" for r in roots(tmp_path)),
            "data-file.external-paths.strategy": "round-robin", **extra}


def files_under(root: pathlib.Path) -> set[pathlib.Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def external_files(tmp_path: pathlib.Path) -> set[pathlib.Path]:
    return set().union(*(files_under(r) for r in roots(tmp_path)))


def table_data_files(table_dir: pathlib.Path) -> set[pathlib.Path]:
    """Files of the table directory in bucket directories (where data files would be)."""
    return {p for p in table_dir.rglob("*") if p.is_file() and any(s.startswith("bucket-") for s in p.parts)}


def live_paths(t: tidelake.Table) -> set[pathlib.Path]:
    paths = t.system("files").column("file_path").to_pylist()
    assert all(p.startswith("file:/") for p in paths), paths
    return {pathlib.Path(p.removeprefix("file:")) for p in paths}


def batch(keys: range, version: str) -> pa.Table:
    return pa.table({"k": list(keys), "d": [f"p{k % 2}" for k in keys], "v": [f"{version}{k}" for k in keys]},
                    schema=SCHEMA)


def rows(t: tidelake.Table) -> list[tuple]:
    got = t.to_arrow()
    return sorted(zip(*(got[c].to_pylist() for c in SCHEMA.names)))


def create(tmp_path: pathlib.Path, kind: str, **options: str) -> tidelake.Table:
    if kind == "pk":
        return tidelake.create_table(str(tmp_path / "t"), SCHEMA, primary_keys=["k", "d"], partition_keys=["d"],
                                     bucket=2, options=external_options(tmp_path, **options))
    return tidelake.create_table(str(tmp_path / "t"), SCHEMA, partition_keys=["d"], bucket=2,
                                 options=external_options(tmp_path, **{"bucket-key": "k", **options}))


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_every_data_file_lands_under_a_root_and_reads_back(tmp_path, kind):
    t = create(tmp_path, kind, **({"changelog-producer": "input"} if kind == "pk" else {}))
    expected: dict[tuple, str] = {}
    for i in range(4):
        keys = range(i * 5, i * 5 + 10)
        t.write(batch(keys, f"v{i}-"))
        for k in keys:
            if kind == "pk":
                expected[(k, f"p{k % 2}")] = f"v{i}-{k}"
            else:
                expected[(k, f"p{k % 2}", i)] = f"v{i}-{k}"
    t.compact(full=True)
    assert t.effective_options["data-file.external-paths"] == [f"file:{r}" for r in roots(tmp_path)]
    assert t.effective_options["data-file.external-paths.strategy"] == "round-robin"
    want = sorted((k[0], k[1], v) for k, v in expected.items())
    assert rows(t) == want
    assert rows(tidelake.open_table(t.path)) == want
    assert table_data_files(tmp_path / "t") == set()
    written = external_files(tmp_path)
    # `<root>/<partition>/bucket-<n>/<name>`, both roots used
    for p in written:
        root = next(r for r in roots(tmp_path) if p.is_relative_to(r))
        part, bucket, _ = p.relative_to(root).parts
        assert part in ("d=p0", "d=p1") and bucket in ("bucket-0", "bucket-1"), p
    assert all(files_under(r) for r in roots(tmp_path))
    assert live_paths(t) <= written
    if kind == "pk":
        assert any(p.name.startswith("changelog-") for p in written)


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_expiry_rollback_and_orphan_cleaning_delete_in_the_roots(tmp_path, kind):
    t = create(tmp_path, kind)
    t.write(batch(range(10), "a"))
    first = t.latest_snapshot_id()
    t.write(batch(range(5, 15), "b"))
    after_second = external_files(tmp_path)
    t.write(batch(range(20, 30), "c"))
    assert external_files(tmp_path) > after_second
    t.rollback_to(snapshot_id=first + 1)
    assert external_files(tmp_path) == after_second
    assert rows(t) == rows(tidelake.open_table(t.path))

    t.compact(full=True)
    kept = rows(t)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=FUTURE_MS)
    left = external_files(tmp_path)
    assert left == live_paths(t), "expiry leaves exactly the live files in the roots"
    assert rows(t) == kept

    orphan = roots(tmp_path)[0] / "d=p0" / "bucket-0" / "data-orphan-0.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"x")
    found = t.remove_orphan_files(older_than_ms=FUTURE_MS, dry_run=True)
    assert [p for p, _ in found] == [f"file:{roots(tmp_path)[0]}/d=p0/bucket-0/data-orphan-0.parquet"]
    t.remove_orphan_files(older_than_ms=FUTURE_MS)
    assert not orphan.exists()
    assert external_files(tmp_path) == left
    assert rows(t) == kept


def test_a_failed_write_leaves_nothing_in_the_roots(tmp_path):
    t = create(tmp_path, "pk")
    t.write(batch(range(10), "a"))
    before = external_files(tmp_path)
    faulty = tidelake.open_table(t.path, storage_options={
        "tidelake.fault.op": "put", "tidelake.fault.path": "manifest/", "tidelake.fault.nth": "1"})
    with pytest.raises(tidelake.StorageError):
        faulty.write(batch(range(100, 120), "b"))
    assert external_files(tmp_path) == before
    assert faulty.remove_orphan_files(older_than_ms=FUTURE_MS, dry_run=True) == []


def test_strategies(tmp_path):
    """`none` (the default) keeps files in the table; `specific-fs` writes to the roots of its
    scheme only; a root on other storage than the table's, one without a scheme and an unknown
    strategy are refused naming their option, before anything is written."""
    none = tidelake.create_table(str(tmp_path / "none"), SCHEMA, partition_keys=["d"], options={
        "data-file.external-paths": f"file://{tmp_path}/ext1"})
    none.write(batch(range(4), "a"))
    assert table_data_files(tmp_path / "none") and external_files(tmp_path) == set()

    specific = tidelake.create_table(str(tmp_path / "specific"), SCHEMA, partition_keys=["d"], options={
        "data-file.external-paths": f"s3://elsewhere/x,file://{tmp_path}/ext2",
        "data-file.external-paths.strategy": "specific-fs", "data-file.external-paths.specific-fs": "file"})
    specific.write(batch(range(4), "a"))
    assert files_under(tmp_path / "ext2") and not table_data_files(tmp_path / "specific")

    for i, (options, key) in enumerate([
        ({"data-file.external-paths": "s3://elsewhere/x", "data-file.external-paths.strategy": "round-robin"},
         "'data-file.external-paths'"),
        ({"data-file.external-paths": f"file://{tmp_path}/ext3", "data-file.external-paths.strategy": "random"},
         "'data-file.external-paths.strategy'"),
        ({"data-file.external-paths": str(tmp_path / "ext3"), "data-file.external-paths.strategy": "round-robin"},
         "'data-file.external-paths'"),
    ]):
        # an unknown strategy or a root without a scheme already at create, a root elsewhere at
        # the first write
        with pytest.raises((tidelake.UnsupportedError, tidelake.InvalidArgumentError), match=key):
            bad = tidelake.create_table(str(tmp_path / f"bad{i}"), SCHEMA, partition_keys=["d"],
                                        options=options)
            bad.write(batch(range(4), "a"))
        assert not (tmp_path / "ext3").exists()


def test_dropping_the_table_deletes_its_roots(tmp_path):
    catalog = tidelake.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["d"], options=external_options(tmp_path))
    t.write(batch(range(10), "a"))
    assert external_files(tmp_path)
    catalog.drop_table("db.t")
    assert not any(r.exists() for r in roots(tmp_path))


def test_roots_in_the_tables_s3_bucket(s3_server):
    """On S3 the roots are prefixes of the table's bucket: files land there, expiry deletes
    there; a root in another bucket is refused naming the option."""
    bucket, opts = s3_server.new_bucket(), s3_server.options
    ext = [f"s3://{bucket}/ext1", f"s3://{bucket}/ext2"]
    t = tidelake.create_table(f"s3://{bucket}/wh/t", SCHEMA, primary_keys=["k", "d"], partition_keys=["d"], bucket=2,
                              options={"data-file.external-paths": ",".join(ext),
                                       "data-file.external-paths.strategy": "round-robin"},
                              storage_options=opts)
    for i in range(3):
        t.write(batch(range(i * 5, i * 5 + 10), f"v{i}-"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=FUTURE_MS)
    assert rows(t) == sorted((k, f"p{k % 2}", f"v{min(k // 5, 2)}-{k}") for k in range(20))
    live = set(t.system("files").column("file_path").to_pylist())
    stored = {f"{r}/{n}" for r in ext for n in TableFiles(r, opts).names()}
    assert live and stored == live
    assert not [n for n in TableFiles(t.path, opts).names() if "bucket-" in n]
    other = tidelake.create_table(f"s3://{bucket}/wh/u", SCHEMA, partition_keys=["d"], storage_options=opts,
                                  options={"data-file.external-paths": f"s3://{s3_server.new_bucket()}/x",
                                           "data-file.external-paths.strategy": "round-robin"})
    with pytest.raises(tidelake.UnsupportedError, match="'data-file.external-paths'"):
        other.write(batch(range(4), "a"))
