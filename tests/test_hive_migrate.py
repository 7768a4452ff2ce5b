"""Hive tables into Paimon tables: ``Catalog.migrate_table`` (Paimon's ``migrate_table``, Java
``HiveMigrator``) and ``Catalog.clone_table`` (Paimon's ``clone`` from Hive), on the suite's Hive
Metastore (``_hive.py``). Hive tables are registered as Hive registers them (the oracle's
``hive_table`` job, with Hive's input/output formats and serdes) over files pyarrow writes in
Hive's layout (partition columns in directory names only). Java's ``HiveMigrator`` migrates a
twin of each table: both Paimon tables get the same schema, files and statistics, and tidelake
and Java read the same rows from both; failures put every file back; the CLI and
``tidelake.spark.sql`` ``CALL`` reach both procedures, ``clone`` over a database too.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from _hive import hive_metastore, java_hive  # noqa: F401  (fixtures: a Hive Metastore, the oracle on its classpath)
from test_read_api import _Returns

import tidelake
from tidelake.expr import filter_json, to_filter

COLUMNS = [("id", "bigint"), ("name", "string"), ("code", "varchar(8)"), ("price", "decimal(10,2)"),
           ("day", "date"), ("score", "double"), ("ok", "boolean")]
KEYS = [("dt", "string"), ("h", "int")]
PARTITIONS = [("2026-01-01", 1), ("2026-01-01", 2), ("2026-01-02", 1)]


def rows_of(dt: str, h: int, start: int, n: int) -> pa.Table:
    """Hive-layout rows of one partition (no partition columns)."""
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": [None if i % 5 == 0 else f"name-{dt}-{h}-{i}" for i in ids],
        "code": [f"c{i % 7}" for i in ids],
        "price": pa.array([decimal.Decimal(i * 3) / 100 for i in ids], pa.decimal128(10, 2)),
        "day": pa.array([datetime.date(2026, 1, 1) + datetime.timedelta(days=i % 30) for i in ids]),
        "score": [i * 0.5 if i % 4 else None for i in ids],
        "ok": [i % 2 == 0 for i in ids],
    })


def write_hive_table(java: Any, options: dict[str, str], name: str, root: pathlib.Path, fmt: str,
                     partitioned: bool = True) -> pa.Table:
    """A Hive table of ``fmt`` files under ``root``, registered in the metastore: the rows it
    holds, partition columns last (as the Paimon table's schema has them)."""
    write = pq.write_table if fmt == "parquet" else orc.write_table
    partitions, expected = [], []
    specs = PARTITIONS if partitioned else [(None, None)]
    for n, (dt, h) in enumerate(specs):
        directory = root / (f"dt={dt}/h={h}" if partitioned else "")
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(2):
            rows = rows_of(dt or "", h or 0, 1000 * n + 100 * f, 20 + n)
            # Hive's own file names have no extension; the migration adds the format's
            write(rows, str(directory / (f"00000{f}_0" if f == 0 else f"part-{f}.{fmt}")))
            if partitioned:
                rows = rows.append_column("dt", pa.array([dt] * rows.num_rows)).append_column(
                    "h", pa.array([h] * rows.num_rows, pa.int32()))
            expected.append(rows)
        (directory / "_SUCCESS").write_text("")  # hidden: not data
        (directory / ".part-0.crc").write_text("x")
        if partitioned:
            partitions.append({"values": [dt, str(h)], "location": f"file:{directory}"})
    java.run({"op": "hive_table", "catalog": options, "table": name, "format": fmt, "location": f"file:{root}",
                   "columns": [{"name": c, "type": t} for c, t in COLUMNS],
                   "partition_keys": [{"name": c, "type": t} for c, t in KEYS] if partitioned else [],
                   "partitions": partitions, "comment": "sales of the day"})
    return pa.concat_tables(expected)


def sort(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")])


def java_rows(java: Any, options: dict[str, str], table: str) -> list[list[Any]]:
    return sorted(java.run({"op": "read", "catalog": options, "table": table})["rows"], key=str)


def files_of(java: Any, options: dict[str, str], table: str) -> list[dict[str, Any]]:
    """Java's ``$files`` rows of a table (statistics included), without what differs between
    twins (paths, creation times)."""
    answer = java.run({"op": "system_table", "catalog": options, "table": f"{table}$files"})
    rows = [dict(zip(answer["fields"], r)) for r in answer["rows"]]
    drop = ("file_path", "creation_time")
    return sorted(({**{k: v for k, v in r.items() if k not in drop}, "name": os.path.basename(r["file_path"])}
                   for r in rows), key=lambda r: (str(r["partition"]), r["name"]))


def schema_of(t: tidelake.Table) -> dict[str, Any]:
    s = t.schemas()[-1]
    return {"fields": s.fields, "partition_keys": s.partition_keys, "primary_keys": s.primary_keys,
            "options": {k: v for k, v in s.options.items() if k != "bucket"}, "comment": s.comment}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_migrated_tables_match_javas(hive_metastore, java_hive, tmp_path, fmt):  # noqa: F811
    options = hive_metastore.catalog_options(tmp_path / "wh")
    expected = write_hive_table(java_hive, options, "db.ours", tmp_path / "hive" / "ours", fmt)
    write_hive_table(java_hive, options, "db.javas", tmp_path / "hive" / "javas", fmt)
    cat = tidelake.Catalog.from_options(options)

    ours = cat.migrate_table("db.ours", options={"file.format": fmt})
    java_hive.run({"op": "migrate_table", "catalog": options, "table": "db.javas", "options": {"file.format": fmt}})
    javas = cat.get_table("db.javas")

    # both take the source's name and replace it in the metastore
    assert sorted(cat.list_tables("db")) == ["javas", "ours"]
    hms = java_hive.run({"op": "hms", "catalog": options, "table": "db.ours"})["table"]
    assert hms["sd"]["inputFormat"] == "org.apache.paimon.hive.mapred.PaimonInputFormat"
    assert schema_of(ours) == schema_of(javas)
    assert [f["type"] for f in ours.schemas()[-1].fields][:4] == ["BIGINT", "STRING", "VARCHAR(8)", "DECIMAL(10, 2)"]
    assert ours.schemas()[-1].comment == "sales of the day"
    files = files_of(java_hive, options, "db.ours")
    assert files == files_of(java_hive, options, "db.javas")
    names = {r["name"] for r in files}
    assert names == {f"000000_0.{fmt}", f"part-1.{fmt}"} and len(files) == 2 * len(PARTITIONS)
    # the files moved: nothing is left in the Hive directories but the hidden files
    left = [p.name for p in (tmp_path / "hive" / "ours").rglob("*") if p.is_file()]
    assert sorted(left) == sorted([".part-0.crc", "_SUCCESS"] * len(PARTITIONS)) or left == []

    want = sort(expected).select(ours.schema.names)
    assert sort(ours.to_arrow()).cast(want.schema) == want
    assert sort(javas.to_arrow()).cast(want.schema) == want
    assert java_rows(java_hive, options, "db.ours") == java_rows(java_hive, options, "db.javas")
    assert len(java_rows(java_hive, options, "db.ours")) == expected.num_rows
    # partition columns come from the partition: filters on them prune and match
    assert sort(ours.to_arrow(filter="dt = '2026-01-01' and h = 2")).num_rows == 42
    assert ours.scan(filter="h = 1").to_arrow().column("h").to_pylist() == [1] * 84
    # the files hold no partition columns: foreign readers do not read them natively
    assert ours.scan().native_read().files == []

    # tidelake keeps writing and compacting both tables (the one Java migrated too); Java reads
    # them alike
    for t in (ours, javas):
        t.write(pa.table({"id": [9999], "dt": ["2026-01-03"], "h": [7]}))
        t.compact(full=True)
        assert t.refresh().to_arrow().num_rows == expected.num_rows + 1
        assert sort(t.to_arrow(filter="dt = '2026-01-01'")).num_rows == 82
    assert java_rows(java_hive, options, "db.ours") == java_rows(java_hive, options, "db.javas")
    assert len(java_rows(java_hive, options, "db.ours")) == expected.num_rows + 1


def test_an_unpartitioned_table_into_a_named_target_keeping_the_origin(hive_metastore, java_hive, tmp_path):  # noqa: F811
    options = hive_metastore.catalog_options(tmp_path / "wh")
    expected = write_hive_table(java_hive, options, "db.src", tmp_path / "hive" / "src", "parquet",
                                partitioned=False)
    cat = tidelake.Catalog.from_options(options)
    returns = _Returns()  # the binding's results have the stub's types
    returns("RawCatalog", "migrate_table", cat._raw.migrate_table("db.src", "db.dst", [], False))
    target = cat.get_table("db.dst")
    assert cat.list_tables("db") == ["dst"]
    # the Hive table is still in the metastore, now without files
    assert java_hive.run({"op": "hms", "catalog": options, "table": "db.src"})["table"]["tableName"] == "src"
    assert sort(target.to_arrow()) == sort(expected).cast(target.schema)
    assert len(java_rows(java_hive, options, "db.dst")) == expected.num_rows


def test_failures_put_every_file_back(hive_metastore, java_hive, tmp_path):  # noqa: F811
    options = hive_metastore.catalog_options(tmp_path / "wh")
    root = tmp_path / "hive" / "src"
    expected = write_hive_table(java_hive, options, "db.src", root, "parquet")
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    (root / "dt=2026-01-02/h=1/zz-broken").write_bytes(b"not parquet")  # the last file taken
    cat = tidelake.Catalog.from_options(options)
    with pytest.raises(tidelake.TidelakeError):
        cat.migrate_table("db.src")
    after = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.name != "zz-broken")
    assert after == before
    assert cat.list_tables("db") == []  # the target it created is dropped
    assert java_hive.run({"op": "hms", "catalog": options, "table": "db.src"})["table"]["tableName"] == "src"

    # an existing target with other partition keys is refused before any file moves
    (root / "dt=2026-01-02/h=1/zz-broken").unlink()
    cat.create_table("db.other", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    with pytest.raises(tidelake.InvalidArgumentError, match="partition keys"):
        cat.migrate_table("db.src", target="db.other")
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == before
    cat.create_table("db.keyed", pa.schema([("id", pa.int64()), ("dt", pa.string()), ("h", pa.int32())]),
                     primary_keys=["id", "dt", "h"], partition_keys=["dt", "h"])
    with pytest.raises(tidelake.UnsupportedError, match="append tables"):
        cat.migrate_table("db.src", target="db.keyed")
    with pytest.raises(tidelake.InvalidArgumentError, match="Paimon table already"):
        cat.migrate_table("db.keyed")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.migrate_table("db.missing")
    with pytest.raises(tidelake.UnsupportedError, match="Hive catalog"):
        tidelake.Catalog(tmp_path / "fs").migrate_table("db.src")
    # and then it migrates
    assert sort(cat.migrate_table("db.src").to_arrow()).num_rows == expected.num_rows


def test_clone_copies_and_replaces_partitions(hive_metastore, java_hive, tmp_path):  # noqa: F811
    options = hive_metastore.catalog_options(tmp_path / "wh")
    root = tmp_path / "hive" / "src"
    expected = write_hive_table(java_hive, options, "db.src", root, "orc")
    before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    hive = tidelake.Catalog.from_options(options)
    lake = tidelake.Catalog(tmp_path / "lake")
    lake.create_database("copy")

    [(_, _, first)] = _Returns()("RawCatalog", "clone_tables", hive._raw.clone_tables(
        lake._raw, "hive", "db", "src", "copy", "t", [], [], [], filter_json(to_filter("dt = '2026-01-01'"))))
    assert first == hive.clone_table("db.src", "copy.t", target_catalog=lake, where="dt = '2026-01-01'") - 1
    t = lake.get_table("copy.t")
    assert t.options["file.format"] == "orc" and t.partition_keys == ["dt", "h"]
    assert t.snapshot(first).commit_kind == "OVERWRITE"
    assert t.to_arrow().num_rows == 82
    # again, all of it: the partitions copied are replaced, not doubled
    hive.clone_table("db.src", "copy.t", target_catalog=lake)
    hive.clone_table("db.src", "copy.t", target_catalog=lake)
    want = sort(expected).select(t.schema.names)
    assert sort(t.refresh().to_arrow()).cast(want.schema) == want
    assert len(java_rows(java_hive, {"warehouse": str(tmp_path / "lake")}, "copy.t")) == expected.num_rows
    # the source is untouched
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == before
    assert hive.clone_table("db.src", "copy.t", target_catalog=lake, where="dt = '1999-01-01'") is None


def test_cli_and_spark_sql_procedures(hive_metastore, java_hive, tmp_path, spark):  # noqa: F811
    from click.testing import CliRunner

    from tidelake import cli
    from tidelake.spark import sql
    from tidelake.spark.statements import CATALOG_CONF

    options = hive_metastore.catalog_options(tmp_path / "wh")
    flags = [arg for k, v in options.items() for arg in ("-c", f"{k}={v}")]
    for name in ("a", "b", "c"):
        write_hive_table(java_hive, options, f"db.{name}", tmp_path / "hive" / name, "parquet", partitioned=False)

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli.main, [*flags, *args], prog_name="tidelake")
        assert result.exit_code == 0, result.output
        return result.output

    assert "migrated db.a to db.a" in run("catalog", "migrate-table", "db.a", "--option", "file.format=parquet")
    out = run("catalog", "clone-table", "db.b", "copy.b", "--target-catalog", f"warehouse={tmp_path / 'lake'}")
    assert "cloned db.b to copy.b (snapshot 1)" in out
    assert tidelake.Catalog(tmp_path / "lake").get_table("copy.b").to_arrow().num_rows == 40

    spark.conf.set(CATALOG_CONF, json.dumps(options))
    try:
        called = sql(spark, "CALL sys.migrate_table(source_type => 'hive', table => 'db.c', "
                            "options => 'file.format=parquet')").collect()
        assert called[0].result is True
        assert sorted(tidelake.Catalog.from_options(options).list_tables("db")) == ["a", "c"]
        done = sql(spark, f"CALL sys.clone(database => 'db', table => 'b', target_database => 'copy', "
                          f"target_table => 'b2', target_catalog_conf => 'warehouse={tmp_path / 'lake'}')").collect()
        assert done[0].snapshot_id == 1
        with pytest.raises(tidelake.InvalidArgumentError, match="included or excluded"):
            sql(spark, "CALL sys.clone(database => 'db', table => 'b', target_database => 'x', target_table => 'y', "
                       "included_tables => 'db.b')")
        # a database, as Java lists it: every table of the metastore (the migrated ones are
        # Paimon's now, which a clone from Hive refuses, so they are excluded)
        with pytest.raises(tidelake.InvalidArgumentError, match="Paimon table already"):
            sql(spark, f"CALL sys.clone(database => 'db', target_database => 'copy2', "
                       f"target_catalog_conf => 'warehouse={tmp_path / 'lake'}')")
        done = sql(spark, f"CALL sys.clone(database => 'db', target_database => 'copy2', excluded_tables => "
                          f"'db.a,db.c', target_catalog_conf => 'warehouse={tmp_path / 'lake'}')").collect()
        assert [(r.source_table, r.target_table, r.snapshot_id) for r in done] == [("db.b", "copy2.b", 1)]
    finally:
        spark.conf.unset(CATALOG_CONF)


def test_migrate_database_goes_on_past_a_table_it_cannot_migrate(hive_metastore, java_hive, tmp_path, spark):  # noqa: F811
    from click.testing import CliRunner

    from tidelake import cli
    from tidelake.spark import sql
    from tidelake.spark.statements import CATALOG_CONF

    options = hive_metastore.catalog_options(tmp_path / "wh")
    expected = {name: write_hive_table(java_hive, options, f"db.{name}", tmp_path / "hive" / name, "parquet",
                                       partitioned=name != "b")
                for name in ("a", "b", "c")}
    cat = tidelake.Catalog.from_options(options)
    cat.migrate_table("db.c")  # a Paimon table now: Java's database migration tries it and fails
    returns = _Returns()
    migrated, failed = returns("RawCatalog", "migrate_database",
                               cat._raw.migrate_database("db", [("file.format", "parquet")]))
    assert migrated == ["db.a", "db.b"]
    assert [t for t, _ in failed] == ["db.c"] and "Paimon table already" in failed[0][1]
    assert sorted(cat.list_tables("db")) == ["a", "b", "c"]
    for name in ("a", "b"):
        t = cat.get_table(f"db.{name}")
        assert t.options["file.format"] == "parquet"
        assert t.to_arrow().num_rows == expected[name].num_rows
        assert len(java_rows(java_hive, options, f"db.{name}")) == expected[name].num_rows

    # the CLI and CALL sys.migrate_database (Java's result text)
    write_hive_table(java_hive, options, "db2.d", tmp_path / "hive" / "d", "orc", partitioned=False)
    flags = [arg for k, v in options.items() for arg in ("-c", f"{k}={v}")]
    result = CliRunner().invoke(cli.main, [*flags, "catalog", "migrate-database", "db2"], prog_name="tidelake")
    assert result.exit_code == 0 and result.output == "migrated db2.d\n", result.output
    write_hive_table(java_hive, options, "db3.e", tmp_path / "hive" / "e", "orc", partitioned=False)
    spark.conf.set(CATALOG_CONF, json.dumps(options))
    try:
        done = sql(spark, "CALL sys.migrate_database(source_type => 'hive', database => 'db3', "
                          "options => 'file.format=orc')").collect()
        assert done[0].result == "migrate database is finished, success cnt: 1 , failed cnt: 0"
    finally:
        spark.conf.unset(CATALOG_CONF)
    assert cat.get_table("db3.e").options["file.format"] == "orc"
