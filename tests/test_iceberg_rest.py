"""Iceberg metadata committed to an Iceberg REST catalog (``metadata.iceberg.storage =
rest-catalog``, Java Paimon's ``IcebergRestMetadataCommitter``) on Apache Iceberg's own REST
catalog server (``_iceberg_rest.py``): the metadata is written where ``hadoop-catalog`` writes it
and each version is sent to the catalog's table (created with an empty schema, so schema ids are
one more there; later versions as increments from whatever older snapshot of the table the
catalog holds; a table dropped from the catalog created again). pyiceberg's REST catalog reads every version by name; schema changes,
expiry and a table dropped from the catalog follow; racing writers leave the catalog's table on
the latest version; incomplete configurations are refused before anything commits. Java Paimon
reads the tables (its REST committer is the ``paimon-iceberg`` jar, which Maven Central does not
serve for 1.3.1, so Java does not write them here)."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import compare_read
from conftest import assert_same_rows

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64())])
_names = itertools.count()


def _options(rest, namespace: str, **more: str) -> dict[str, str]:
    return {"metadata.iceberg.storage": "rest-catalog", "metadata.iceberg.rest.uri": rest.uri,
            "metadata.iceberg.rest.clients": "1", "metadata.iceberg.database": namespace, **more}


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"k": pa.array(range(start, start + n), pa.int32()), "p": [f"p{i % 2}" for i in range(n)],
                     "v": pa.array(range(n), pa.int64())}, schema=SCHEMA)


def _namespace() -> str:
    return f"ice{next(_names)}"


def _metadata(tmp_path, db: str, table: str, version: int) -> str:
    return str(tmp_path / "wh" / "iceberg" / db / table / "metadata" / f"v{version}.metadata.json")


def _version(tmp_path, db: str, table: str, version: int) -> pa.Table:
    """The rows of Iceberg metadata version ``version`` as written next to the table."""
    return StaticTable.from_metadata(_metadata(tmp_path, db, table, version)).scan().to_arrow()


def _catalog(rest) -> RestCatalog:
    return RestCatalog("rest", uri=rest.uri)


def test_each_version_reaches_the_rest_catalog(iceberg_rest, java, tmp_path):
    """A partitioned primary-key table: pyiceberg reads the catalog's table after every commit
    (upserts, a delete, a compaction), its snapshots are Paimon's, schema ids one more; Java
    Paimon reads the same rows."""
    ns = _namespace()
    cat = tidelake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                         options=_options(iceberg_rest, ns, bucket="2"))
    rest = _catalog(iceberg_rest)
    t.write(_rows(0, 20))
    t.upsert(_rows(10, 20))
    t.delete([("k", "<", 5)])
    t.compact(full=True)
    ice = rest.load_table(f"{ns}.t")
    assert ice.metadata.current_snapshot_id == t.latest_snapshot().id
    assert_same_rows(ice.scan().to_arrow(), t.to_arrow(), check_types=False)
    # Iceberg readers see a primary-key table's compacted files: the catalog's table is the
    # version Paimon wrote, before and after the next compaction
    t.upsert(_rows(100, 3))
    ice = rest.load_table(f"{ns}.t")
    assert ice.metadata.current_snapshot_id == t.latest_snapshot().id
    assert_same_rows(ice.scan().to_arrow(), _version(tmp_path, "db", "t", t.latest_snapshot().id), check_types=False)
    t.compact(full=True)
    ice = rest.load_table(f"{ns}.t")
    assert_same_rows(ice.scan().to_arrow(), t.to_arrow(), check_types=False)
    assert [s.snapshot_id for s in ice.metadata.snapshots][-1] == t.latest_snapshot().id
    assert len(compare_read(java, t, str(tmp_path / "wh"), "rest-catalog table")) == t.to_arrow().num_rows


def test_tidelake_continues_a_table_java_wrote(iceberg_rest, java, tmp_path):
    """Java Paimon writes a table with ``rest-catalog`` storage (without the ``paimon-iceberg``
    jar it writes the metadata and silently skips the catalog); tidelake continues it through
    its catalog, which creates the catalog's table from the whole version; Java writes on, and
    tidelake's next commit finds the catalog behind (not holding the previous snapshot: Java
    would create the table again) and adds both snapshots: pyiceberg reads every row each
    time."""
    ns = _namespace()
    wh = str(tmp_path / "wh")
    options = _options(iceberg_rest, ns, bucket="-1")
    java_schema = {"fields": [{"name": "k", "type": "INT NOT NULL"}, {"name": "p", "type": "STRING NOT NULL"},
                              {"name": "v", "type": "BIGINT"}], "primary_keys": [], "partition_keys": ["p"],
                   "options": options}
    java_rows = [[1000 + i, f"p{i % 2}", i] for i in range(4)]
    java.run({"op": "write", "warehouse": wh, "table": "db.t", "mode": "batch", "schema": java_schema,
              "steps": [{"rows": java_rows}, {"rows": java_rows}]})
    rest = _catalog(iceberg_rest)
    assert ns not in [n[0] for n in rest.list_namespaces()]
    t = tidelake.Catalog(wh).get_table("db.t")
    t.write(_rows(0, 5))
    assert rest.load_table(f"{ns}.t").metadata.current_snapshot_id == 3
    assert_same_rows(rest.load_table(f"{ns}.t").scan().to_arrow(), t.to_arrow(), check_types=False)
    java.run({"op": "write", "warehouse": wh, "table": "db.t", "existing": True, "mode": "batch",
              "steps": [{"rows": java_rows}]})
    t = tidelake.Catalog(wh).get_table("db.t")
    t.write(_rows(10, 5))
    ice = rest.load_table(f"{ns}.t")
    assert ice.metadata.current_snapshot_id == 5
    assert {s.snapshot_id for s in ice.metadata.snapshots} >= {3, 4, 5}
    assert_same_rows(ice.scan().to_arrow(), t.to_arrow(), check_types=False)
    assert t.to_arrow().num_rows == 22


def test_schema_changes_expiry_and_a_dropped_table_follow(iceberg_rest, tmp_path):
    """A column added (a new schema, one more in the catalog), snapshots expired (removed from
    the catalog's table), the catalog's table dropped behind tidelake's back (created again
    from the whole version at the next commit)."""
    ns = _namespace()
    cat = tidelake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options=_options(iceberg_rest, ns, **{
        "metadata.iceberg.table": "events", "bucket": "-1", "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2"}))
    rest = _catalog(iceberg_rest)
    for i in range(4):
        t.write(_rows(i * 10, 10))
    ice = rest.load_table(f"{ns}.events")
    local = StaticTable.from_metadata(_metadata(tmp_path, "db", "t", 4))
    kept = sorted(s.snapshot_id for s in local.metadata.snapshots)
    assert sorted(s.snapshot_id for s in ice.metadata.snapshots) == kept
    assert kept[0] > 1, "expired snapshots left the catalog's table too"
    t = t.add_column("w", pa.string())
    t.write(pa.table({"k": pa.array([99], pa.int32()), "p": ["p9"], "v": pa.array([1], pa.int64()), "w": ["new"]}))
    ice = rest.load_table(f"{ns}.events")
    assert ice.schema().column_names == ["k", "p", "v", "w"]
    assert ice.metadata.current_schema_id == 2
    assert_same_rows(ice.scan().to_arrow(), t.to_arrow(), check_types=False)
    rest.drop_table(f"{ns}.events")
    t.write(_rows(500, 2))
    ice = rest.load_table(f"{ns}.events")
    assert ice.metadata.current_snapshot_id == t.latest_snapshot().id
    assert_same_rows(ice.scan().to_arrow(), t.to_arrow(), check_types=False)


def test_racing_writers_leave_the_catalog_on_the_latest_version(iceberg_rest, tmp_path):
    """Processes appending at once, each commit followed by its Iceberg version sent to the
    catalog: the catalog's table ends on the latest version (never moved back by a writer that
    finished later), and pyiceberg reads every write that returned."""
    from _workers import iceberg_catalog_appends, race

    ns = _namespace()
    wh = tmp_path / "wh"
    cat = tidelake.Catalog(str(wh))
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("id", pa.int64())]), options=_options(iceberg_rest, ns, bucket="-1"))
    acked = race(tmp_path, iceberg_catalog_appends, 3, str(wh), 5)
    assert len(acked) == 15
    latest = cat.get_table("db.t").latest_snapshot().id
    ice = _catalog(iceberg_rest).load_table(f"{ns}.t")
    assert ice.metadata.current_snapshot_id == latest
    assert sorted(ice.scan().to_arrow()["id"].to_pylist()) == sorted(acked)


def test_incomplete_configurations_are_refused_before_anything_commits(iceberg_rest, tmp_path):
    """A table opened by path has no catalog name (Java needs its catalog's identifier); a
    missing ``metadata.iceberg.rest.uri``; a client property tidelake does not implement
    (OAuth2 credentials): each is refused before a file is written."""
    ns = _namespace()
    loose = tidelake.create_table(tmp_path / "wh" / "db.db" / "loose", SCHEMA, options=_options(iceberg_rest, ns))
    with pytest.raises(tidelake.UnsupportedError, match="through its catalog"):
        loose.write(_rows(0, 1))
    assert loose.snapshots() == []
    cat = tidelake.Catalog(str(tmp_path / "wh"))
    no_uri = {k: v for k, v in _options(iceberg_rest, ns).items() if k != "metadata.iceberg.rest.uri"}
    t = cat.create_table("db.no_uri", SCHEMA, options=no_uri)
    with pytest.raises(tidelake.InvalidArgumentError, match="metadata.iceberg.rest.uri"):
        t.write(_rows(0, 1))
    assert t.snapshots() == []
    oauth = cat.create_table("db.oauth", SCHEMA, options=_options(
        iceberg_rest, ns, **{"metadata.iceberg.rest.credential": "id:secret"}))
    with pytest.raises(tidelake.UnsupportedError, match="metadata.iceberg.rest.credential"):
        oauth.write(_rows(0, 1))
    assert oauth.snapshots() == []
    assert not (tmp_path / "wh" / "iceberg").exists()
    assert ns not in [n[0] for n in _catalog(iceberg_rest).list_namespaces()]
