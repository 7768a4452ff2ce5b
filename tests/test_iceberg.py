"""Iceberg-compatible metadata (``metadata.iceberg.storage``): after each commit tidelake writes
Iceberg metadata over the table's data files, as Java Paimon does, and Iceberg readers (pyiceberg,
polars' ``scan_iceberg``) read the same rows as tidelake, locally and on S3; Java Paimon writing
the same table with the same option yields metadata pyiceberg reads identically."""

from __future__ import annotations

import datetime
import json
import pathlib

import polars as pl
import pyarrow as pa
import pytest
from _java import (
    Scenario,
    java,  # noqa: F401  (the session's oracle JVM, a fixture)
    java_write,
    tidelake_write,
)
from _s3 import Storage, TableFiles
from pyiceberg.table import StaticTable

import tidelake

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.date32()), ("score", pa.float64())])
ICEBERG = {"metadata.iceberg.storage": "table-location"}
ICEBERG_DV = {**ICEBERG, "metadata.iceberg.format-version": "3", "deletion-vectors.enabled": "true"}
DAY = datetime.date(2024, 1, 1)
DAY2 = DAY + datetime.timedelta(days=1)


def _rows(start: int, n: int, days: int = 2) -> pa.Table:
    return pa.table({
        "id": list(range(start, start + n)),
        "name": [None if i % 7 == 0 else f"n{i}" for i in range(start, start + n)],
        "dt": [DAY + datetime.timedelta(days=i % days) for i in range(start, start + n)],
        "score": [i * 0.5 for i in range(start, start + n)],
    }, schema=SCHEMA)


def _sorted(t: pa.Table) -> pa.Table:
    return t.select(SCHEMA.names).sort_by([("id", "ascending")])


def _io_properties(storage: Storage) -> dict[str, str]:
    o = storage.options
    if not o:
        return {}
    return {"s3.endpoint": o["aws_endpoint"], "s3.access-key-id": o["aws_access_key_id"],
            "s3.secret-access-key": o["aws_secret_access_key"], "s3.region": o["aws_region"]}


def _iceberg(location: str, storage: Storage | None = None, version: int | None = None) -> StaticTable:
    """The Iceberg table at ``location``: a version's metadata file, or the one
    ``metadata/version-hint.text`` names."""
    path = f"{location}/metadata/v{version}.metadata.json" if version is not None else location
    return StaticTable.from_metadata(path, properties=_io_properties(storage) if storage else {})


def test_pyiceberg_reads_an_append_table(storage: Storage) -> None:
    t = storage.create_table("append", SCHEMA, partition_keys=["dt"], options={**ICEBERG, "bucket": "-1"})
    for start in (0, 100, 200):
        t.write(_rows(start, 50, days=3))
    ours = _sorted(t.to_arrow())
    ice = _iceberg(t.path, storage)
    assert ice.metadata.current_snapshot_id == t.snapshots()[-1].id == 3
    assert _sorted(ice.scan().to_arrow()).equals(ours)
    # version-hint.text names the latest version; every version is the snapshot of its id
    assert _sorted(_iceberg(t.path, storage, version=3).scan().to_arrow()).equals(ours)
    assert TableFiles.of(t).read("metadata/version-hint.text") == b"3"
    # bounds and partition values are what Iceberg readers prune with: wrong ones lose rows
    for expr, keep in [("score >= 60", lambda r: r["score"] >= 60),
                       ("id < 120 and id > 40", lambda r: 40 < r["id"] < 120),
                       (f"dt = '{DAY2}'", lambda r: r["dt"] == DAY2),
                       ("name = 'n101'", lambda r: r["name"] == "n101")]:
        expected = [r for r in ours.to_pylist() if keep(r)]
        assert _sorted(ice.scan(row_filter=expr).to_arrow()).to_pylist() == expected, expr
    data_files = list(ice.scan(row_filter="score >= 110").plan_files())
    assert 0 < len(data_files) < len(list(ice.scan().plan_files())), "bounds prune the files of the first writes"


def test_overwrites_and_deletes_reach_the_iceberg_table(storage: Storage) -> None:
    t = storage.create_table("pt", SCHEMA, partition_keys=["dt"], options={**ICEBERG, "bucket": "-1"})
    t.write(_rows(0, 40))
    t.write(_rows(40, 40))
    t.write(_rows(1000, 10, days=1), mode="overwrite", overwrite_partition={"dt": DAY})
    t.delete("id = 41")
    ours = _sorted(t.to_arrow())
    assert ours.num_rows == 10 + 39
    ice = _iceberg(t.path, storage)
    assert _sorted(ice.scan().to_arrow()).equals(ours)
    assert ice.metadata.snapshot_by_id(ice.metadata.current_snapshot_id).summary.operation.value == "overwrite"
    t.truncate()
    assert _iceberg(t.path, storage).scan().to_arrow().num_rows == 0


def test_primary_key_tables_show_their_compacted_files(tmp_path: pathlib.Path) -> None:
    """Java's rule: the Iceberg table holds the files at the top LSM level (after a full
    compaction), not the level-0 files of later writes."""
    t = tidelake.create_table(tmp_path / "pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={**ICEBERG, "bucket": "2"})
    t.write(_rows(0, 30))
    t.write(_rows(10, 30).set_column(3, "score", pa.array([-1.0] * 30)))
    t.compact(full=True)
    compacted = _sorted(t.to_arrow())
    assert compacted.num_rows == 40
    assert _sorted(_iceberg(str(tmp_path / "pk")).scan().to_arrow()).equals(compacted)
    t.write(_rows(500, 5))
    assert t.to_arrow().num_rows == 45
    assert _sorted(_iceberg(str(tmp_path / "pk")).scan().to_arrow()).equals(compacted)
    t.compact(full=True)
    assert _sorted(_iceberg(str(tmp_path / "pk")).scan().to_arrow()).equals(_sorted(t.to_arrow()))


def test_metadata_stays_small_as_commits_accumulate(tmp_path: pathlib.Path) -> None:
    """Each commit adds one manifest and reuses the others; small ones are merged once there are
    ``metadata.iceberg.compaction.max.file-num`` of them (or they reach the manifest target
    size); old metadata versions and the manifests of expired Iceberg snapshots are deleted."""
    t = tidelake.create_table(tmp_path / "t", SCHEMA, options={**ICEBERG, "bucket": "-1",
                                                               "metadata.iceberg.compaction.max.file-num": "12",
                                                               "snapshot.num-retained.min": "2",
                                                               "snapshot.num-retained.max": "3"})
    for i in range(25):
        t.write(_rows(i * 10, 10))
    ice = _iceberg(str(tmp_path / "t"))
    assert _sorted(ice.scan().to_arrow()).equals(_sorted(t.to_arrow()))
    manifests = ice.current_snapshot().manifests(ice.io)
    assert len(manifests) < 12
    assert sum(m.existing_files_count for m in manifests) > 0, "merged manifests list existing files"
    meta = tmp_path / "t" / "metadata"
    assert sorted(p.name for p in meta.glob("v*.metadata.json")) == ["v25.metadata.json"]
    assert [s.snapshot_id for s in ice.metadata.snapshots] == [23, 24, 25]
    listed = {pathlib.Path(m.manifest_path).name for s in ice.metadata.snapshots for m in s.manifests(ice.io)}
    on_disk = {p.name for p in meta.glob("*-m*.avro")}
    assert listed == on_disk, "manifests no retained snapshot lists are deleted"


def test_polars_scans_the_iceberg_table(tmp_path: pathlib.Path) -> None:
    t = tidelake.create_table(tmp_path / "t", SCHEMA, partition_keys=["dt"], options={**ICEBERG, "bucket": "-1"})
    t.write(_rows(0, 30))
    t.write(_rows(30, 30))
    got = pl.scan_iceberg(str(tmp_path / "t" / "metadata" / "v2.metadata.json")).filter(pl.col("id") >= 25).collect()
    expected = pl.from_arrow(t.to_arrow(filter="id >= 25"))
    assert isinstance(expected, pl.DataFrame)
    assert got.sort("id").equals(expected.sort("id").select(got.columns))


def test_hadoop_catalog_layout(tmp_path: pathlib.Path) -> None:
    """``hadoop-catalog`` puts the metadata at ``<warehouse>/iceberg/<db>/<table>/metadata``,
    where an Iceberg Hadoop catalog over the warehouse finds it."""
    cat = tidelake.Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"metadata.iceberg.storage": "hadoop-catalog", "bucket": "-1"})
    t.write(_rows(0, 10))
    t.write(_rows(10, 10))
    ice = StaticTable.from_metadata(str(tmp_path / "iceberg" / "db" / "t"))
    assert _sorted(ice.scan().to_arrow()).equals(_sorted(t.to_arrow()))
    assert not (tmp_path / "db.db" / "t" / "metadata").exists()
    outside = tidelake.create_table(tmp_path / "loose", SCHEMA, options={"metadata.iceberg.storage": "hadoop-catalog"})
    with pytest.raises(tidelake.UnsupportedError, match="warehouse"):
        outside.write(_rows(0, 1))
    assert outside.snapshots() == [], "refused before it commits"


def test_unsupported_iceberg_configurations_are_refused(tmp_path: pathlib.Path) -> None:
    # rest-catalog storage needs a table in a warehouse, opened through its catalog
    for options, match in [({"metadata.iceberg.storage": "rest-catalog"}, "metadata.iceberg.storage"),
                           ({**ICEBERG, "deletion-vectors.enabled": "true"}, "format-version' = '3'")]:
        t = tidelake.create_table(tmp_path / f"t{len(match)}", SCHEMA, primary_keys=["id"], options=options)
        with pytest.raises(tidelake.UnsupportedError, match=match):
            t.write(_rows(0, 3))
        assert t.snapshots() == []


JAVA_FIELDS = [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "BIGINT"), ("s", "STRING")]


@pytest.mark.parametrize("kind", ["append", "pk"])
def test_java_and_tidelake_metadata_read_the_same(java, tmp_path: pathlib.Path, kind: str) -> None:  # noqa: F811
    """Java Paimon and tidelake write the same commits into tables with the same Iceberg option;
    pyiceberg reads the same rows from both, and the same as tidelake reads."""
    steps: list[dict] = [{"rows": [[i, f"p{i % 2}", i * 10, f"s{i}"] for i in range(20)]},
                         {"rows": [[i, f"p{i % 2}", i * 100, None] for i in range(10, 30)]}]
    if kind == "pk":
        steps.append({"compact": True})
    steps.append({"rows": [[i, "p1", -i, "late"] for i in range(40, 43)]})
    pk = ["k", "p"] if kind == "pk" else []
    options = {**ICEBERG, "bucket": "2" if kind == "pk" else "-1"}
    reads = {}
    for who, write in (("java", java_write), ("tidelake", tidelake_write)):
        sc = Scenario(f"ice_{kind}_{who}", JAVA_FIELDS, steps, pk, ["p"], options)
        t = write(java, str(tmp_path), sc)
        ice = _iceberg(t.path)
        assert ice.metadata.current_snapshot_id == t.snapshots()[-1].id
        reads[who] = ice.scan().to_arrow().sort_by([("k", "ascending"), ("v", "ascending")])
        if kind == "append":
            assert reads[who].equals(t.to_arrow().sort_by([("k", "ascending"), ("v", "ascending")]))
    assert reads["tidelake"].num_rows > 0
    # a primary-key table's Iceberg rows are its compacted files: the late level-0 rows are not there
    assert (40 in reads["tidelake"]["k"].to_pylist()) == (kind == "append")
    assert reads["tidelake"].to_pylist() == reads["java"].to_pylist()


def test_tidelake_commits_on_java_iceberg_metadata(java, tmp_path: pathlib.Path) -> None:  # noqa: F811
    """tidelake's next version builds on the version Java wrote (its manifests reused and, for
    removed files, rewritten), and pyiceberg reads what tidelake reads."""
    steps: list[dict] = [{"rows": [[i, f"p{i % 3}", i, "j"] for i in range(30)]},
                         {"rows": [[i, f"p{i % 3}", i, "j"] for i in range(30, 40)]}]
    sc = Scenario("ice_java_base", JAVA_FIELDS, steps, [], ["p"], {**ICEBERG, "bucket": "-1"})
    t = java_write(java, str(tmp_path), sc)
    java_version = t.snapshots()[-1].id
    t.write(pa.table({"k": pa.array([100, 101], pa.int32()), "p": ["p0", "p9"], "v": [1, 2], "s": ["t", "t"]}))
    t.delete("p = 'p1'")
    ice = _iceberg(t.path)
    assert ice.metadata.current_snapshot_id == java_version + 2
    assert ice.metadata.snapshot_by_id(java_version) is not None, "Java's snapshot is kept (retention)"
    ours = t.to_arrow().sort_by([("k", "ascending")])
    assert ours.num_rows == 40 + 2 - 13
    assert ice.scan().to_arrow().sort_by([("k", "ascending")]).equals(ours)


def test_concurrent_committers_keep_the_metadata_current(tmp_path: pathlib.Path) -> None:
    """Processes appending at once (each commit followed by its Iceberg version, some built
    afresh when the previous version is not there yet): every write that returned is in the
    Iceberg table the version hint names, which is the latest snapshot's."""
    from _workers import iceberg_appends, race

    t = tidelake.create_table(tmp_path / "t", pa.schema([("id", pa.int64())]), options={**ICEBERG, "bucket": "-1"})
    acked = race(tmp_path, iceberg_appends, 3, str(tmp_path / "t"), 6)
    assert len(acked) == 18
    ice = _iceberg(str(tmp_path / "t"))
    assert ice.metadata.current_snapshot_id == t.snapshots()[-1].id == 18
    assert sorted(ice.scan().to_arrow()["id"].to_pylist()) == sorted(acked)



def test_columns_without_an_iceberg_form_are_refused_before_anything_commits(tmp_path: pathlib.Path) -> None:
    """TIME and TIMESTAMP(p <= 3) have no Iceberg form (Java refuses them too): creating, altering
    into, or writing such a table fails before a snapshot exists, so a retried append cannot
    duplicate rows."""
    schema = pa.schema([("id", pa.int64()), ("at", pa.time32("ms"))])
    rows = pa.table({"id": [1, 2], "at": pa.array([1000, 2000], pa.time32("ms"))})
    with pytest.raises(tidelake.UnsupportedError, match="column 'at'"):
        tidelake.create_table(tmp_path / "created", schema, options=ICEBERG)
    ms = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms"))])
    with pytest.raises(tidelake.UnsupportedError, match="precision 4 to 9"):
        tidelake.create_table(tmp_path / "ts3", ms, options=ICEBERG)

    t = tidelake.create_table(tmp_path / "t", schema, options={"bucket": "-1"})
    t.write(rows)
    with pytest.raises(tidelake.UnsupportedError, match="column 'at'"):
        t.set_option("metadata.iceberg.storage", "table-location")
    assert "metadata.iceberg.storage" not in tidelake.open_table(tmp_path / "t").options
    # a table another engine gave the option (its schema file written as Java writes it)
    schema0 = json.loads((tmp_path / "t" / "schema" / "schema-0").read_text())
    schema0["id"] = 1
    schema0["options"] = {**schema0["options"], **ICEBERG}
    (tmp_path / "t" / "schema" / "schema-1").write_text(json.dumps(schema0))
    t = tidelake.open_table(tmp_path / "t")
    for attempt in range(2):
        with pytest.raises(tidelake.UnsupportedError, match="column 'at'"):
            t.write(rows)
    assert [s.id for s in t.snapshots()] == [1], "nothing committed"
    assert t.to_arrow().num_rows == 2
    with pytest.raises(tidelake.UnsupportedError, match="column 'at'"):
        t.delete("id = 1")
    assert [s.id for s in t.snapshots()] == [1]


def _puffins(t: tidelake.Table) -> list[str]:
    return sorted(p for p in TableFiles.of(t).names() if p.startswith("metadata/") and p.endswith(".puffin"))


def test_deletion_vectors_reach_pyiceberg_as_v3_deletion_vectors(storage: Storage) -> None:
    """An append table with deletion vectors: deletes and updates become Iceberg v3 deletion
    vectors (Puffin files), pyiceberg reads the rows tidelake reads after each step; a
    compaction that applies the vectors leaves none, and their Puffin files go with the
    snapshots that listed them."""
    t = storage.create_table("dv", SCHEMA, partition_keys=["dt"],
                             options={**ICEBERG_DV, "bucket": "-1", "snapshot.num-retained.min": "1",
                                      "snapshot.num-retained.max": "1"})
    t.write(_rows(0, 40))
    t.write(_rows(40, 40))
    steps = [lambda: t.delete("id in (0, 5, 10, 15, 20, 45, 50, 75)"),
             lambda: t.update({"score": -1.0}, "id > 60"),
             lambda: t.delete("name = 'n13' or id = 41"),
             lambda: t.write(_rows(200, 5))]
    for i, step in enumerate(steps):
        step()
        ice = _iceberg(t.path, storage)
        assert ice.metadata.format_version == 3
        ours = _sorted(t.to_arrow())
        assert _sorted(ice.scan().to_arrow()).equals(ours), f"step {i}"
        tasks = list(ice.scan().plan_files())
        assert any(task.delete_files for task in tasks), "deleted rows are deletion vectors, not rewrites"
        assert all(d.file_format.value == "PUFFIN" for task in tasks for d in task.delete_files)
    assert _puffins(t)
    assert _sorted(ice.scan(row_filter="score < 0").to_arrow()).equals(_sorted(t.to_arrow(filter="score < 0")))
    t.compact(full=True)
    ice = _iceberg(t.path, storage)
    assert _sorted(ice.scan().to_arrow()).equals(_sorted(t.to_arrow()))
    assert not any(task.delete_files for task in ice.scan().plan_files())
    t.write(_rows(300, 3))
    assert _puffins(t) == [], "Puffin files of expired Iceberg snapshots are deleted"


def test_primary_key_tables_with_deletion_vectors(tmp_path: pathlib.Path) -> None:
    """Java's rule with deletion vectors: the Iceberg table holds every file above level 0 and
    the deletion vectors that hide the rows later files replaced; pyiceberg reads what tidelake
    reads once the writes are compacted."""
    t = tidelake.create_table(tmp_path / "pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options={**ICEBERG_DV, "bucket": "2"})
    t.write(_rows(0, 30))
    t.compact(full=True)
    ice = _iceberg(str(tmp_path / "pk"))
    assert _sorted(ice.scan().to_arrow()).equals(_sorted(t.to_arrow()))
    t.write(_rows(10, 30).set_column(3, "score", pa.array([-1.0] * 30)))
    t.delete("id = 3")
    t.compact()
    ours = _sorted(t.to_arrow())
    assert ours.num_rows == 39
    ice = _iceberg(str(tmp_path / "pk"))
    assert any(task.delete_files for task in ice.scan().plan_files()), "older copies are hidden by vectors"
    assert _sorted(ice.scan().to_arrow()).equals(ours)
    # metadata built afresh (the previous version gone) carries the same vectors
    for v in (tmp_path / "pk" / "metadata").glob("v*.metadata.json"):
        v.unlink()
    t.write(_rows(500, 2))
    t.compact()
    assert _sorted(_iceberg(str(tmp_path / "pk")).scan().to_arrow()).equals(_sorted(t.to_arrow()))


def _read_by_ranges(ice: StaticTable, columns: list[str]) -> pa.Table:
    """What an Iceberg reader that reads only each deletion vector's byte range (Iceberg Java's
    ``BaseDeleteLoader``: Spark, Trino) reads: every live data file of the current snapshot minus
    the positions of the vectors that reference it (manifests read with fastavro, as pyiceberg
    0.12 does not read ``referenced_data_file`` and the content offsets)."""
    import fastavro
    import pyarrow.parquet as pq
    from pyiceberg.table.deletion_vector import DeletionVector, _extract_vector_payload

    def local(path: str) -> str:
        return path.removeprefix("file://").removeprefix("file:")

    def records(path: str) -> list[dict]:
        with open(local(path), "rb") as f:
            return list(fastavro.reader(f))

    snapshot = ice.current_snapshot()
    assert snapshot is not None
    data_files: list[str] = []
    deleted: dict[str, set[int]] = {}
    for manifest in records(snapshot.manifest_list):
        for entry in records(manifest["manifest_path"]):
            f = entry["data_file"]
            if entry["status"] == 2:
                continue
            if f["content"] == 0:
                data_files.append(local(f["file_path"]))
                continue
            assert f["file_format"].lower() == "puffin" and f["content"] == 1
            with open(local(f["file_path"]), "rb") as fh:
                fh.seek(f["content_offset"])
                blob = fh.read(f["content_size_in_bytes"])
            bitmaps = DeletionVector._deserialize_bitmap(_extract_vector_payload(blob))
            positions = {(key << 32) + pos for key, bitmap in enumerate(bitmaps) for pos in bitmap}
            assert len(positions) == f["record_count"]
            deleted.setdefault(local(f["referenced_data_file"]), set()).update(positions)
    parts = []
    for path in data_files:
        data = pq.ParquetFile(path).read(columns=columns)
        gone = deleted.get(path, set())
        parts.append(data.filter(pa.array([i not in gone for i in range(data.num_rows)], pa.bool_())))
    return pa.concat_tables(parts)


def test_java_and_tidelake_deletion_vectors_delete_the_same_rows(java, tmp_path: pathlib.Path) -> None:  # noqa: F811
    """Java Paimon and tidelake write the same commits into a primary-key table with deletion
    vectors and Iceberg format version 3. Both describe the vectors as Iceberg deletion vectors
    and delete the same rows. Java points Iceberg at Paimon's own index file, which is not a
    Puffin file: pyiceberg (which parses whole Puffin files) refuses it, and a reader of byte
    ranges (Iceberg Java) reads it; tidelake writes Puffin files, which both kinds read."""
    steps: list[dict] = [{"rows": [[i, f"p{i % 2}", i * 10, f"s{i}"] for i in range(30)]},
                         {"compact": True},
                         {"rows": [[i, f"p{i % 2}", i * 100, "new"] for i in range(5, 12)]},
                         {"rows": [{"kind": "-D", "values": [20, "p0", 200, "s20"]}]},
                         {"rows": [[i, f"p{i % 2}", -i, "newer"] for i in range(8, 10)]}]
    options = {**ICEBERG_DV, "deletion-vectors.bitmap64": "true", "bucket": "2"}
    columns = [n for n, _ in JAVA_FIELDS]
    key = [("k", "ascending"), ("p", "ascending")]
    reads = {}
    for who, write in (("java", java_write), ("tidelake", tidelake_write)):
        sc = Scenario(f"ice_dv_{who}", JAVA_FIELDS, steps, ["k", "p"], ["p"], options, mode="batch")
        t = write(java, str(tmp_path), sc)
        ice = _iceberg(t.path)
        assert ice.metadata.format_version == 3
        assert any(task.delete_files for task in ice.scan().plan_files()), who
        reads[who] = _read_by_ranges(ice, columns).sort_by(key)
        assert reads[who].equals(t.to_arrow().select(columns).sort_by(key)), who
    assert reads["tidelake"].to_pylist() == reads["java"].to_pylist()
    assert reads["tidelake"].num_rows == 29
    tidelake_ice = _iceberg(str(tmp_path / "db.db" / "ice_dv_tidelake"))
    assert tidelake_ice.scan().to_arrow().select(columns).sort_by(key).equals(reads["java"])
    with pytest.raises(ValueError, match="magic"):
        _iceberg(str(tmp_path / "db.db" / "ice_dv_java")).scan().to_arrow()


def test_decimal_and_timestamp_partitions(storage: Storage) -> None:
    """Decimal and microsecond-timestamp partition columns are Iceberg identity partitions in
    Iceberg's Avro forms (``fixed`` decimals, ``timestamp-micros``); pyiceberg prunes by them
    with partition filters and reads what tidelake reads."""
    import decimal

    schema = pa.schema([("id", pa.int64()), ("price", pa.decimal128(10, 2)), ("at", pa.timestamp("us")),
                        ("v", pa.string())])
    t = storage.create_table("dec_ts", schema, partition_keys=["price", "at"], options={**ICEBERG, "bucket": "-1"})
    prices = [decimal.Decimal("-1.50"), decimal.Decimal("0.00"), decimal.Decimal("12345678.99")]
    times = [datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999), datetime.datetime(2024, 5, 1, 12, 0, 0, 123_456)]
    for batch in range(2):
        n = 12
        t.write(pa.table({"id": [batch * 100 + i for i in range(n)],
                          "price": pa.array([prices[i % 3] for i in range(n)], pa.decimal128(10, 2)),
                          "at": pa.array([times[(i + batch) % 2] for i in range(n)], pa.timestamp("us")),
                          "v": [f"v{i}" for i in range(n)]}))
    ice = _iceberg(t.path, storage)
    ours = t.to_arrow().sort_by([("id", "ascending")])
    assert ice.scan().to_arrow().sort_by([("id", "ascending")]).equals(ours)
    all_files = len(list(ice.scan().plan_files()))
    for expr, keep in [("price = -1.50", lambda r: r["price"] == prices[0]),
                       ("price > 0", lambda r: r["price"] > 0),
                       ("at < '2000-01-01T00:00:00'", lambda r: r["at"] < datetime.datetime(2000, 1, 1)),
                       ("at = '2024-05-01T12:00:00.123456' and price = 0", lambda r: r["at"] == times[1]
                        and r["price"] == 0)]:
        expected = [r for r in ours.to_pylist() if keep(r)]
        got = ice.scan(row_filter=expr)
        assert got.to_arrow().sort_by([("id", "ascending")]).to_pylist() == expected, expr
        assert len(list(got.plan_files())) < all_files, f"{expr}: partition values prune files"
