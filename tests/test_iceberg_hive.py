"""Iceberg metadata registered in a Hive Metastore (``metadata.iceberg.storage = hive-catalog``),
two-way with Java Paimon 1.3.1's ``IcebergHiveMetadataCommitter`` on the suite's metastore
(``_hive.py``): the metadata is written where ``hadoop-catalog`` writes it
(``<warehouse>/iceberg/<db>/<table>/metadata``) and the metastore's Iceberg table points at each
new version; the metastore holds the same database and table for a table tidelake writes as for
its twin Java writes (read by Java's client); pyiceberg's Hive catalog reads both by name; each
engine continues the other's table; incomplete configurations are refused before anything
commits."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog

import tidelake

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64()), pa.field("s", pa.string(), metadata={"description": "a note"})])
JAVA_SCHEMA = {"fields": [{"name": "k", "type": "INT NOT NULL"}, {"name": "p", "type": "STRING NOT NULL"},
                          {"name": "v", "type": "BIGINT"}, {"name": "s", "type": "STRING", "description": "a note"}],
               "primary_keys": [], "partition_keys": ["p"]}
STAMPED = {"transient_lastDdlTime", "numFiles", "totalSize", "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE"}


def _options(hms) -> dict[str, str]:
    return {"metadata.iceberg.storage": "hive-catalog", "metadata.iceberg.uri": hms.uri,
            "metadata.iceberg.database": "ice", "bucket": "-1"}


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"k": pa.array(range(start, start + n), pa.int32()), "p": [f"p{i % 2}" for i in range(n)],
                     "v": pa.array(range(n), pa.int64()), "s": [None] * n}, schema=SCHEMA)


def _java_rows(start: int, n: int) -> list[list[Any]]:
    return [[start + i, f"p{i % 2}", i, None] for i in range(n)]


def _hms(java_hive, hms, wh: pathlib.Path, name: str) -> dict[str, Any]:
    """The metastore's Iceberg table ``ice.<name>`` and its database, read by Java's client,
    with what differs by nature (names, times, the metastore's statistics) blanked."""
    answer = java_hive.run({"op": "hms", "catalog": hms.options(wh), "table": f"ice.{name}"})
    table = dict(answer["table"])
    for key in ("createTime", "lastAccessTime"):
        table.pop(key)
    params = {k: v for k, v in table["parameters"].items() if k not in STAMPED}
    table["parameters"] = {k: re.sub(r"/(ours|theirs)/", "/<t>/", v) for k, v in params.items()}
    table["tableName"] = "<t>"
    table["sd"] = {**table["sd"], "location": re.sub(r"/(ours|theirs)$", "/<t>", table["sd"]["location"])}
    return {"database": answer["database"], "table": table}


def _pyiceberg(hms) -> HiveCatalog:
    return HiveCatalog("hms", uri=hms.uri)


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("k", "ascending")])


def test_tidelake_registers_as_java_registers(hive_metastore, java_hive, tmp_path):
    """tidelake writes ``db.ours`` and Java ``db.theirs`` (a filesystem catalog, the same
    options and commits): the metastore then holds the same ``ice`` database and Iceberg tables
    (``EXTERNAL_TABLE``, ``table_type=ICEBERG``, columns, formats, serde, ``metadata_location``
    and ``previous_metadata_location``), and pyiceberg reads both by name."""
    wh = tmp_path / "wh"
    hive_metastore.catalog_options(wh)
    options = _options(hive_metastore)
    cat = tidelake.Catalog(str(wh))
    cat.create_database("db")
    ours = cat.create_table("db.ours", SCHEMA, partition_keys=["p"], options=options)
    ours.write(_rows(0, 10))
    ours.write(_rows(10, 5))
    java_hive.run({"op": "write", "warehouse": str(wh), "table": "db.theirs", "mode": "batch",
                   "schema": {**JAVA_SCHEMA, "options": options},
                   "steps": [{"rows": _java_rows(0, 10)}, {"rows": _java_rows(10, 5)}]})
    mine, theirs = _hms(java_hive, hive_metastore, wh, "ours"), _hms(java_hive, hive_metastore, wh, "theirs")
    assert mine == theirs
    table = mine["table"]
    assert (table["tableType"], table["parameters"]["table_type"], table["parameters"]["EXTERNAL"]) == (
        "EXTERNAL_TABLE", "ICEBERG", "TRUE")
    assert table["parameters"]["metadata_location"].endswith("/iceberg/db/<t>/metadata/v2.metadata.json")
    assert table["parameters"]["previous_metadata_location"].endswith("/iceberg/db/<t>/metadata/v1.metadata.json")
    assert [(c["name"], c["type"], c.get("comment")) for c in table["sd"]["cols"]] == [
        ("k", "int", None), ("p", "string", None), ("v", "bigint", None), ("s", "string", "a note")]
    assert mine["database"]["locationUri"].endswith("/iceberg/db")
    catalog = _pyiceberg(hive_metastore)
    for name in ("ours", "theirs"):
        assert _sorted(catalog.load_table(f"ice.{name}").scan().to_arrow()).equals(
            _sorted(cat.get_table(f"db.{name}").to_arrow())), name


def test_each_engine_continues_the_others_table(hive_metastore, java_hive, tmp_path):
    """Java continues tidelake's table and tidelake Java's: the metastore's table always points
    at the latest version, written from the one before, and pyiceberg reads every row."""
    wh = tmp_path / "wh"
    hive_metastore.catalog_options(wh)
    options = {**_options(hive_metastore), "metadata.iceberg.table": "renamed"}
    cat = tidelake.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options=options)
    t.write(_rows(0, 4))
    java_hive.run({"op": "write", "warehouse": str(wh), "table": "db.t", "existing": True, "mode": "batch",
                   "steps": [{"rows": _java_rows(100, 3)}]})
    t = cat.get_table("db.t")
    t.write(_rows(200, 2))
    answer = java_hive.run({"op": "hms", "catalog": hive_metastore.options(wh), "table": "ice.renamed"})
    params = answer["table"]["parameters"]
    assert params["metadata_location"].endswith("/iceberg/db/t/metadata/v3.metadata.json")
    assert params["previous_metadata_location"].endswith("/iceberg/db/t/metadata/v2.metadata.json")
    ice = _pyiceberg(hive_metastore).load_table("ice.renamed")
    assert ice.metadata.current_snapshot_id == 3
    assert _sorted(ice.scan().to_arrow()).equals(_sorted(t.to_arrow()))
    assert t.to_arrow().num_rows == 9


def test_incomplete_configurations_are_refused_before_anything_commits(hive_metastore, tmp_path):
    """A table opened by path has no catalog name to register (Java needs its catalog's
    identifier); without ``metadata.iceberg.uri`` there is no metastore to register in (Java
    would fall back to an embedded one; tidelake reads no hive-site.xml): both are refused
    before a file is written."""
    loose = tidelake.create_table(tmp_path / "wh" / "db.db" / "loose", SCHEMA, options=_options(hive_metastore))
    with pytest.raises(tidelake.UnsupportedError, match="through its catalog"):
        loose.write(_rows(0, 1))
    assert loose.snapshots() == []
    cat = tidelake.Catalog(str(tmp_path / "wh"))
    no_uri = {k: v for k, v in _options(hive_metastore).items() if k != "metadata.iceberg.uri"}
    t = cat.create_table("db.no_uri", SCHEMA, options=no_uri)
    with pytest.raises(tidelake.InvalidArgumentError, match="metadata.iceberg.uri"):
        t.write(_rows(0, 1))
    assert t.snapshots() == []
    assert not (tmp_path / "wh" / "iceberg").exists()


def test_a_paimon_table_of_the_same_name_is_never_replaced(hive_metastore, java_hive, tmp_path):
    """A Paimon table of a Hive catalog with the default names would be registered over itself
    (Java overwrites its metastore entry): tidelake refuses, after its commit (which stands),
    and the metastore keeps the Paimon table."""
    wh = tmp_path / "wh"
    cat = tidelake.Catalog.from_options(hive_metastore.catalog_options(wh))
    cat.create_database("ice")
    options = {k: v for k, v in _options(hive_metastore).items() if k != "metadata.iceberg.database"}
    t = cat.create_table("ice.p", SCHEMA, options=options)
    with pytest.raises(tidelake.InvalidArgumentError, match="would replace the Paimon table"):
        t.write(_rows(0, 2))
    assert cat.get_table("ice.p").to_arrow().num_rows == 2
    table = java_hive.run({"op": "hms", "catalog": hive_metastore.options(wh), "table": "ice.p"})["table"]
    assert table["parameters"]["table_type"] == "PAIMON" and "metadata_location" not in table["parameters"]


def test_racing_writers_leave_the_metastore_on_the_latest_version(hive_metastore, java_hive, tmp_path):
    """Processes appending at once, each commit followed by its Iceberg version and its
    registration: the metastore's table ends on the latest version (never moved back by a
    writer that finished later), and pyiceberg reads every write that returned."""
    from _workers import iceberg_catalog_appends, race

    wh = tmp_path / "wh"
    hive_metastore.catalog_options(wh)
    cat = tidelake.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]), options=_options(hive_metastore))
    acked = race(tmp_path, iceberg_catalog_appends, 3, str(wh), 5)
    assert len(acked) == 15
    latest = cat.get_table("db.t").snapshots()[-1].id
    params = java_hive.run({"op": "hms", "catalog": hive_metastore.options(wh), "table": "ice.t"})["table"]["parameters"]
    assert params["metadata_location"].endswith(f"/iceberg/db/t/metadata/v{latest}.metadata.json")
    ice = _pyiceberg(hive_metastore).load_table("ice.t")
    assert ice.metadata.current_snapshot_id == latest == t.snapshots()[-1].id
    assert sorted(ice.scan().to_arrow()["id"].to_pylist()) == sorted(acked)
