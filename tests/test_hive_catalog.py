"""Paimon's Hive catalog (``metastore=hive``) on the suite's Hive Metastore (``_hive.py``), checked
against Java's ``HiveCatalog`` (interop/java-oracle on interop/hive's classpath): what tidelake
registers in the metastore (database, table, partitions) is what Java registers for the same
table, read back by Java's own metastore client, also after schema changes; partitions dropped
leave the metastore as Java's catalog leaves it; Java's Hive lock holds tidelake's commits; Hive
tables that are not Paimon's are left alone; errors are typed. The catalog's general behaviour
(databases, tables, branches, Java both ways, Spark SQL) is in ``test_catalogs.py``, the race of
both engines' writers in ``test_catalog_races.py``.
"""

from __future__ import annotations

import json
import pathlib
import threading
import time
from typing import Any

import pyarrow as pa
import pytest

import tidelake

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
    ("flag", pa.bool_()), ("tiny", pa.int8()), ("small", pa.int16()), ("i", pa.int32()), ("f", pa.float32()),
    ("d", pa.float64()), ("dec", pa.decimal128(10, 2)), ("bin", pa.binary()), ("day", pa.date32()),
    ("ts", pa.timestamp("us")), ("ltz", pa.timestamp("ms", tz="UTC")), ("arr", pa.list_(pa.int32())),
    ("m", pa.map_(pa.string(), pa.int64())), ("r", pa.struct([("a", pa.int32()), ("b", pa.string())])),
])
# what the metastore computes or stamps itself, and the table's own name
STAMPED = {"transient_lastDdlTime", "numFiles", "totalSize", "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE"}


def hms(java_hive, options: dict[str, str], table: str) -> dict[str, Any]:
    return java_hive.run({"op": "hms", "catalog": options, "table": table})


def comparable(answer: dict[str, Any], name: str) -> dict[str, Any]:
    """The metastore's record of table ``name`` without what differs between two tables by
    nature (names, times, the metastore's statistics); locations relative to the database."""
    table = dict(answer["table"])
    assert (table["tableName"], table["sd"]["location"].rsplit("/", 1)[1]) == (name, name)
    for key in ("tableName", "createTime", "lastAccessTime"):
        table.pop(key)
    table["parameters"] = {k: v for k, v in table["parameters"].items() if k not in STAMPED}
    table["sd"] = {**table["sd"], "location": "<table>"}
    partitions = []
    for p in answer["partitions"]:
        assert p["sd"]["location"] == f"{answer['table']['sd']['location']}/dt={p['values'][0]}", p
        partitions.append({**p, "tableName": "<table>", "createTime": 0, "lastAccessTime": 0,
                           "parameters": {k: v for k, v in p["parameters"].items() if k not in STAMPED},
                           "sd": {**p["sd"], "location": "<partition>"}})
    return {"table": table, "partitions": sorted(partitions, key=lambda p: p["values"])}


def schema_file(t: tidelake.Table) -> dict[str, Any]:
    """Schema 0 of a table on local storage, as its file holds it."""
    return json.loads(pathlib.Path(t.path, "schema", "schema-0").read_text())


def test_tables_are_registered_as_javas_hive_catalog_registers_them(hive_metastore, java_hive, tmp_path):
    """tidelake creates ``db.ours``; Java creates ``db.theirs`` with the same Paimon schema (read
    from tidelake's schema file); both write the same rows and make the same schema changes; the
    metastore then holds the same table, partitions and database for both."""
    options = {**hive_metastore.catalog_options(tmp_path / "wh"), "lock.enabled": "true"}
    cat = tidelake.Catalog.from_options(options)
    cat.create_database("db")
    ours = cat.create_table("db.ours", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], bucket=2,
                            options={"metastore.partitioned-table": "true", "file.format": "parquet",
                                     "snapshot.num-retained.min": "3"}, comment="orders, both engines")
    first = schema_file(ours)
    java_schema = {"fields": [{"name": f["name"], "type": f["type"]} for f in first["fields"]],
                   "primary_keys": first["primaryKeys"], "partition_keys": first["partitionKeys"],
                   "options": first["options"], "comment": first["comment"]}
    rows = [{"id": 1, "dt": "2026-01-01", "i": 7}, {"id": 2, "dt": "2026-01-02", "r": {"a": 1, "b": "x"}}]
    java_rows = [[1, "2026-01-01", *[None] * 3, 7, *[None] * 10], [2, "2026-01-02", *[None] * 13, [1, "x"]]]
    java_hive.run({"op": "write", "catalog": options, "table": "db.theirs", "mode": "batch", "schema": java_schema,
                   "steps": [{"rows": java_rows}]})
    ours.upsert(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert sorted(r["id"] for r in cat.get_table("db.theirs").to_arrow().to_pylist()) == [1, 2]

    def both() -> tuple[dict[str, Any], dict[str, Any]]:
        mine, theirs = hms(java_hive, options, "db.ours"), hms(java_hive, options, "db.theirs")
        assert mine["database"] == theirs["database"]
        return comparable(mine, "ours"), comparable(theirs, "theirs")

    mine, theirs = both()
    assert mine == theirs
    table = mine["table"]
    assert (table["tableType"], table["sd"]["inputFormat"], table["sd"]["serdeInfo"]["serializationLib"]) == (
        "MANAGED_TABLE", "org.apache.paimon.hive.mapred.PaimonInputFormat", "org.apache.paimon.hive.PaimonSerDe")
    assert [(c["name"], c["type"]) for c in table["partitionKeys"]] == [("dt", "string")]
    assert [(c["name"], c["type"]) for c in table["sd"]["cols"]] == [
        ("id", "bigint"), ("flag", "boolean"), ("tiny", "tinyint"), ("small", "smallint"), ("i", "int"),
        ("f", "float"), ("d", "double"), ("dec", "decimal(10,2)"), ("bin", "binary"), ("day", "date"),
        ("ts", "timestamp"), ("ltz", "timestamp with local time zone"), ("arr", "array<int>"),
        ("m", "map<string,bigint>"), ("r", "struct<a:int,b:string>")]
    assert {k: table["parameters"][k] for k in ("table_type", "primary-key", "partition", "bucket-key", "bucket",
                                                "comment", "metastore.partitioned-table")} == {
        "table_type": "PAIMON", "primary-key": "id,dt", "partition": "dt", "bucket-key": "id", "bucket": "2",
        "comment": "orders, both engines", "metastore.partitioned-table": "true"}
    assert [p["values"] for p in mine["partitions"]] == [["2026-01-01"], ["2026-01-02"]]

    # schema changes: the metastore follows each engine's, the same way
    ours = cat.get_table("db.ours")
    ours.add_column("note", pa.string())
    ours = cat.get_table("db.ours")
    ours.set_option("snapshot.num-retained.max", "20")
    cat.get_table("db.ours").remove_option("snapshot.num-retained.min")
    java_hive.run({"op": "write", "catalog": options, "table": "db.theirs", "existing": True, "mode": "batch",
                   "steps": [{"alter": [{"add": "note", "type": "STRING"}]},
                             {"alter": [{"set": "snapshot.num-retained.max", "value": "20"}]},
                             {"alter": [{"remove": "snapshot.num-retained.min"}]}]})
    mine, theirs = both()
    assert mine == theirs
    assert mine["table"]["sd"]["cols"][-1] == {"name": "note", "type": "string"}
    assert mine["table"]["parameters"]["snapshot.num-retained.max"] == "20"
    assert "snapshot.num-retained.min" not in mine["table"]["parameters"]

    # a partition dropped leaves the metastore; a branch's commits register the main table's
    cat.get_table("db.ours").drop_partitions([{"dt": "2026-01-01"}])
    assert [p["values"] for p in hms(java_hive, options, "db.ours")["partitions"]] == [["2026-01-02"]]
    cat.get_table("db.ours").create_branch("dev")
    dev = cat.get_table("db.ours$branch_dev")
    dev.upsert(pa.Table.from_pylist([{"id": 3, "dt": "2026-01-03"}], schema=dev.schema))
    assert [p["values"] for p in hms(java_hive, options, "db.ours")["partitions"]] == [["2026-01-02"], ["2026-01-03"]]


def test_a_commit_waits_for_the_hive_lock_java_holds(hive_metastore, java_hive, tmp_path):
    """While Java's HiveCatalog holds the table's Hive lock (its commit section), a tidelake
    commit waits for it: with a short ``lock-acquire-timeout`` it fails as a conflict, leaving the
    table as it was; with the default it lands once Java released the lock."""
    options = {**hive_metastore.catalog_options(tmp_path / "wh"), "lock.enabled": "true",
               "lock-check-max-sleep": "100ms"}
    cat = tidelake.Catalog.from_options(options)
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    cat.create_table("db.t", schema, primary_keys=["id"], bucket=1)
    short = tidelake.Catalog.from_options({**options, "lock-acquire-timeout": "500ms"}).get_table("db.t")
    t = cat.get_table("db.t")
    marker = tmp_path / "held"
    hold = 3.0
    failure: list[BaseException] = []

    def hold_lock() -> None:
        try:
            java_hive.run({"op": "hold_lock", "catalog": options, "table": "db.t", "seconds": hold,
                           "marker": str(marker)})
        except BaseException as e:  # reported below instead of leaving the wait spinning
            failure.append(e)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        while not marker.exists():
            assert holder.is_alive() or marker.exists(), f"Java's lock holder ended without the lock: {failure}"
            time.sleep(0.02)
        held = time.monotonic()
        with short.writer() as w:  # one commit: a one-shot write would try again
            w.write(pa.table({"id": [1], "name": ["early"]}, schema=schema))
            messages = w.prepare_commit()
        with pytest.raises(tidelake.CommitConflictError, match="Hive Metastore lock of db.t"):
            short.commit(messages)
        assert cat.get_table("db.t").latest_snapshot() is None
        t.upsert(pa.table({"id": [2], "name": ["waited"]}, schema=schema))
        assert time.monotonic() - held > hold - 0.3, "the commit did not wait for Java's lock"
    finally:
        holder.join(60)
    assert cat.get_table("db.t").to_arrow().to_pylist() == [{"id": 2, "name": "waited"}]


def test_hive_tables_that_are_not_paimons_are_left_alone(hive_metastore, java_hive, tmp_path):
    """Java's Hive catalog lists a plain Hive table as a format table; tidelake does not list it,
    refuses to open it, and does not create a table over its name."""
    options = hive_metastore.catalog_options(tmp_path / "wh")
    java_hive.run({"op": "write", "catalog": options, "table": "db.csv", "mode": "batch", "steps": [],
                   "schema": {"fields": [{"name": "a", "type": "INT"}], "primary_keys": [], "partition_keys": [],
                              "options": {"type": "format-table", "file.format": "csv"}}})
    cat = tidelake.Catalog.from_options(options)
    cat.create_table("db.paimon", pa.schema([("a", pa.int32())]))
    assert cat.list_tables("db") == ["paimon"]
    with pytest.raises(tidelake.UnsupportedError, match="not a Paimon table"):
        cat.get_table("db.csv")
    with pytest.raises(tidelake.TableAlreadyExistsError):
        cat.create_table("db.csv", pa.schema([("a", pa.int32())]))


def test_bad_hive_catalog_options_and_refusals_are_typed_errors(hive_metastore, tmp_path):
    options = hive_metastore.catalog_options(tmp_path / "wh")
    with pytest.raises(tidelake.InvalidArgumentError, match="uri"):
        tidelake.Catalog.from_options({**options, "uri": ""})
    with pytest.raises(tidelake.InvalidArgumentError, match="thrift://host:port"):
        tidelake.Catalog.from_options({**options, "uri": "http://127.0.0.1:9083"})
    with pytest.raises(tidelake.StorageError, match="cannot connect"):
        tidelake.Catalog.from_options({**options, "uri": "thrift://127.0.0.1:1"})
    for key, value in (("table.type", "external"), ("location-in-properties", "true"), ("lock.type", "jdbc")):
        with pytest.raises(tidelake.UnsupportedError, match=key):
            tidelake.Catalog.from_options({**options, key: value, "lock.enabled": "true"})
    cat = tidelake.Catalog.from_options(options)
    with pytest.raises(tidelake.InvalidArgumentError, match="bad-name"):
        cat.create_database("bad-name")  # the metastore's refusal
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("nodb.t")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.create_table("nodb.t", pa.schema([("a", pa.int32())]))
    cat.create_database("db")
    with pytest.raises(tidelake.TableAlreadyExistsError):
        cat.create_database("db")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("db.missing")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.drop_table("db.missing")
    with pytest.raises(tidelake.UnsupportedError, match="path"):
        cat.create_table("db.elsewhere", pa.schema([("a", pa.int32())]), options={"path": str(tmp_path / "x")})


def test_the_cli_works_through_a_hive_catalog(hive_metastore, tmp_path):
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from tidelake import cli

    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
        assert result.exit_code == code, result.output
        return result.output

    options = hive_metastore.catalog_options(tmp_path / "wh")
    flags = [arg for k, v in options.items() for arg in ("-c", f"{k}={v}")]
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}), tmp_path / "in.parquet")
    run(*flags, "catalog", "create-database", "shop", "--property", "comment=the shop")
    assert json.loads(run(*flags, "catalog", "database", "shop", "--json"))["comment"] == "the shop"
    run(*flags, "load", "shop.orders", tmp_path / "in.parquet", "--primary-key", "id")
    assert json.loads(run(*flags, "catalog", "tables", "shop", "--json")) == ["orders"]
    assert [json.loads(line)["id"] for line in run(*flags, "cat", "shop.orders", "--json").splitlines()] == [1, 2]
