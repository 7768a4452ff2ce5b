"""Catalogs configured with Paimon's catalog options (``tidelake.Catalog.from_options``): the
filesystem catalog, Paimon's JDBC catalog on SQLite and on the suite's PostgreSQL server
(``_postgres.py``), Paimon's own REST catalog server (``_rest.py``) and Paimon's Hive catalog on
the suite's Hive Metastore (``_hive.py``), with Java Paimon (interop/java-oracle) opening what
tidelake registers and the reverse, Paimon's JDBC and Hive commit locks taken by both engines
(``lock.enabled``) and commits through the REST server's endpoint. ``test_hive_catalog.py`` checks
what the Hive Metastore keeps against what Java's Hive catalog writes there."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _rest import rest_server  # noqa: F401  (a fresh Paimon REST server, a fixture)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
FIELDS = [("id", "BIGINT NOT NULL"), ("name", "STRING")]


@pytest.fixture(params=["filesystem", "sqlite", "postgres", "rest", "hive"])
def options(request, tmp_path) -> dict[str, str]:
    """Catalog options of each kind, on a fresh warehouse (and database, and server, and an
    emptied metastore)."""
    wh = str(tmp_path / "wh")
    if request.param == "filesystem":
        return {"warehouse": wh}
    if request.param == "rest":
        return request.getfixturevalue("rest_server").options
    if request.param == "hive":
        return {**request.getfixturevalue("hive_metastore").catalog_options(wh), "lock.enabled": "true"}
    if request.param == "sqlite":
        return {"metastore": "jdbc", "warehouse": wh, "uri": f"jdbc:sqlite:{tmp_path}/catalog.db",
                "catalog-key": "tl", "lock.enabled": "true"}
    pg = request.getfixturevalue("postgres")
    return {"metastore": "jdbc", "warehouse": wh, "uri": pg.jdbc_uri(pg.new_database()), **pg.credentials,
            "catalog-key": "tl", "lock.enabled": "true"}


@pytest.fixture
def oracle(options, request):
    """The Java oracle JVM for ``options``: on Paimon's Hive classpath for a Hive catalog."""
    return request.getfixturevalue("java_hive" if options.get("metastore") == "hive" else "java")


def databases(cat: tidelake.Catalog) -> list[str]:
    """The catalog's databases but the one a Hive Metastore always has."""
    names = cat.list_databases()
    return [d for d in names if d != "default"] if cat.options.get("metastore") == "hive" else names


def sqlite_sql(path, sql: str) -> list[tuple]:
    """Run SQL on a SQLite file in another process, as another engine would: two SQLite
    libraries in one process (Python's and tidelake's) break each other's POSIX file locks."""
    script = ("import json, sqlite3, sys; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
              "print(json.dumps(db.execute(sys.argv[2]).fetchall()))")
    out = subprocess.run([sys.executable, "-c", script, str(path), sql], check=True, capture_output=True, text=True)
    return [tuple(r) for r in json.loads(out.stdout)]


def rows(t: tidelake.Table) -> list[dict]:
    return sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])


def java_rows(java, options: dict[str, str], table: str) -> list[list]:  # noqa: F811
    return sorted(java.run({"op": "read", "catalog": options, "table": table})["rows"])


def test_databases_and_tables_through_the_catalog(options):
    cat = tidelake.Catalog.from_options(options)
    metastore = options.get("metastore", "filesystem")
    keeps_properties = metastore != "filesystem"
    cat.create_database("db", properties={"owner": "ops"} if keeps_properties else None)
    cat.create_database("db", ignore_if_exists=True)
    with pytest.raises(tidelake.TableAlreadyExistsError):
        cat.create_database("db")
    cat.create_database("other")
    assert databases(cat) == ["db", "other"]
    location = cat.database_properties("db")["location"]
    assert location.endswith("wh/db.db") or metastore == "rest"  # the test server answers "/tmp"
    if keeps_properties:
        assert cat.database_properties("db")["owner"] == "ops"
        cat.alter_database("db", set={"owner": "data", "tier": "gold"}, remove=["missing"])
        assert {k: v for k, v in cat.database_properties("db").items() if k != "location"} == {
            "owner": "data", "tier": "gold"}
        cat.alter_database("db", remove=["tier"])
        assert "tier" not in cat.database_properties("db")

    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=1)
    with pytest.raises(tidelake.TableAlreadyExistsError):
        cat.create_table("db.t", SCHEMA)
    with pytest.raises(tidelake.TableNotFoundError):
        cat.create_table("nodb.t", SCHEMA)
    t.upsert(pa.Table.from_pylist([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], schema=SCHEMA))
    assert cat.list_tables("db") == ["t"]
    assert rows(cat.get_table("db.t")) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]

    # schema changes of a table opened here go through the catalog (its lock)
    cat.get_table("db.t").add_column("score", pa.float64())
    assert cat.get_table("db.t").schema.names == ["id", "name", "score"]

    # branches and system tables by Paimon's identifiers
    main = cat.get_table("db.t")
    if metastore == "rest":  # the server creates branches, empty or from a tag of main
        with pytest.raises(tidelake.UnsupportedError, match="tag"):
            main.create_branch("b", from_snapshot=main.latest_snapshot().id)
        main.create_tag("t1")
        created = main.create_branch("b", from_tag="t1")
        with pytest.raises(tidelake.TableAlreadyExistsError):
            main.create_branch("b", from_tag="t1")
    else:
        created = main.create_branch("b", from_snapshot=main.latest_snapshot().id)
    assert created.branch == "b"
    assert created._raw.commits_through_catalog == (cat.lock_enabled or metastore in ("rest", "hive"))
    b = cat.get_table("db.t$branch_b")
    assert b.branch == "b"
    b.upsert(pa.Table.from_pylist([{"id": 3, "name": "c", "score": 1.0}], schema=b.schema))
    assert [r["id"] for r in rows(cat.get_table("db.t$branch_b"))] == [1, 2, 3]
    assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2]
    main_snapshots = cat.system_table("db.t$snapshots").column("snapshot_id").to_pylist()
    branch_snapshots = cat.system_table("db.t$branch_b$snapshots").column("snapshot_id").to_pylist()
    assert branch_snapshots == [*main_snapshots, main_snapshots[-1] + 1]
    with pytest.raises(tidelake.InvalidArgumentError):
        cat.get_table("db.t$snapshots")
    if metastore == "rest":  # main fast-forwarded to the branch, then the branch dropped, by the server
        main.fast_forward("b")
        assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2, 3]
        main.delete_branch("b")
        assert main.branches() == []
        cat.get_table("db.t").upsert(pa.Table.from_pylist([{"id": 4, "name": "d", "score": None}], schema=b.schema))
        assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2, 3, 4]
        # rollbacks go to the server, which serves the older snapshot as the latest from then on:
        # the next commit takes the id after it (the test server rolls back only to snapshots
        # committed through it on this branch, so not to the fast-forwarded one)
        at_4 = cat.get_table("db.t").latest_snapshot().id
        cat.get_table("db.t").upsert(pa.Table.from_pylist([{"id": 5, "name": "e", "score": None}], schema=b.schema))
        assert main.rollback_to(at_4)["snapshot_id"] == at_4
        assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2, 3, 4]
        cat.get_table("db.t").upsert(pa.Table.from_pylist([{"id": 6, "name": "f", "score": None}], schema=b.schema))
        assert cat.get_table("db.t").latest_snapshot().id == at_4 + 1
        assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2, 3, 4, 6]
        assert cat.get_table("db.t").rollback_to(tag="t1")["snapshot_id"] == 1
        assert [r["id"] for r in rows(cat.get_table("db.t"))] == [1, 2]
        with pytest.raises(tidelake.TableNotFoundError, match="snapshot"):
            main.rollback_to(at_4 + 10)
    rename_and_drop(cat)


def rename_and_drop(cat: tidelake.Catalog) -> None:
    cat.rename_table("db.t", "other.moved")
    assert cat.list_tables("db") == [] and cat.list_tables("other") == ["moved"]
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("db.t")
    # Paimon 1.3.1's test REST server moves the files but keeps answering the old path (Java's
    # client cannot open the renamed table there either)
    if cat.options.get("metastore") != "rest":
        assert [r["id"] for r in rows(cat.get_table("other.moved"))] == [1, 2]
    with pytest.raises(tidelake.InvalidArgumentError):
        cat.drop_database("other")
    cat.drop_table("other.moved")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("other.moved")
    cat.drop_database("other")
    cat.drop_database("db")
    assert databases(cat) == []


def test_bad_catalog_options_are_typed_errors(tmp_path):
    with pytest.raises(tidelake.InvalidArgumentError, match="warehouse"):
        tidelake.Catalog.from_options({"metastore": "jdbc"})
    with pytest.raises(tidelake.InvalidArgumentError, match="metastore"):
        tidelake.Catalog.from_options({"metastore": "zookeeper", "warehouse": str(tmp_path)})
    with pytest.raises(tidelake.UnsupportedError, match="mysql"):
        tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": str(tmp_path), "uri": "jdbc:mysql://h/db"})
    with pytest.raises(tidelake.InvalidArgumentError, match="lock-acquire-timeout"):
        tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": str(tmp_path), "lock.enabled": "true",
                                       "lock-acquire-timeout": "soon"})
    with pytest.raises(tidelake.InvalidArgumentError, match="uri"):
        tidelake.Catalog.from_options({"warehouse": str(tmp_path), "lock.enabled": "true", "lock.type": "jdbc"})
    with pytest.raises(tidelake.StorageError):
        tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": str(tmp_path),
                                       "uri": "jdbc:postgresql://127.0.0.1:1/none", "jdbc.user": "x"})


def test_jdbc_catalog_defaults_to_a_sqlite_file_next_to_the_warehouse(tmp_path, java):  # noqa: F811
    cat = tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": str(tmp_path / "wh")})
    uri = cat.options["uri"]
    assert uri == f"jdbc:sqlite:{tmp_path}/wh.catalog.db" and not cat.lock_enabled
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=1).upsert(
        pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=SCHEMA))
    # the rows Java's JdbcCatalog reads (catalog-key 'jdbc', its default)
    db = tmp_path / "wh.catalog.db"
    assert sqlite_sql(db, "SELECT * FROM paimon_tables") == [("jdbc", "db", "t")]
    props = dict(sqlite_sql(db, "SELECT property_key, property_value FROM paimon_database_properties "
                                "WHERE catalog_key = 'jdbc' AND database_name = 'db'"))
    assert props == {"exists": "true", "location": f"{tmp_path}/wh/db.db"}
    assert sqlite_sql(db, "PRAGMA journal_mode") == [("wal",)]  # what Java needs with lock.enabled
    java_options = {"metastore": "jdbc", "warehouse": str(tmp_path / "wh"), "uri": uri, "lock.enabled": "true"}
    assert java_rows(java, java_options, "db.t") == [[1, "a"]]


def test_java_and_tidelake_open_each_others_tables(options, oracle):
    java = oracle
    cat = tidelake.Catalog.from_options(options)
    cat.create_database("db")
    t = cat.create_table("db.ours", SCHEMA, primary_keys=["id"], bucket=2)
    t.upsert(pa.Table.from_pylist([{"id": i, "name": f"t{i}"} for i in range(5)], schema=SCHEMA))
    assert java_rows(java, options, "db.ours") == [[i, f"t{i}"] for i in range(5)]
    # Java commits into the table tidelake registered, through the same catalog (and lock)
    java.run({"op": "write", "catalog": options, "table": "db.ours", "existing": True, "mode": "batch",
              "steps": [{"rows": [[1, "java"], [7, "j7"]]}]})
    assert [(r["id"], r["name"]) for r in rows(cat.get_table("db.ours"))] == [
        (0, "t0"), (1, "java"), (2, "t2"), (3, "t3"), (4, "t4"), (7, "j7")]
    # a table Java creates and registers
    java.run({"op": "write", "catalog": options, "table": "db.theirs", "mode": "batch",
              "schema": {"fields": [{"name": n, "type": ty} for n, ty in FIELDS], "primary_keys": ["id"],
                         "partition_keys": [], "options": {"bucket": "1"}},
              "steps": [{"rows": [[10, "x"], [11, "y"]]}]})
    assert cat.list_tables("db") == ["ours", "theirs"]
    theirs = cat.get_table("db.theirs")
    assert [(r["id"], r["name"]) for r in rows(theirs)] == [(10, "x"), (11, "y")]
    theirs.upsert(pa.Table.from_pylist([{"id": 12, "name": "z"}], schema=SCHEMA))
    assert java_rows(java, options, "db.theirs") == [[10, "x"], [11, "y"], [12, "z"]]


PARTED = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.int64())])


def test_partitions_listed_by_the_catalog_as_java_lists_them(options, oracle):
    """``list_partitions``: the REST server's record for a ``metastore.partitioned-table`` (kept
    from the statistics each commit sends), else the table's own; Java's ``listPartitions``
    through the same catalog gives the same."""
    cat = tidelake.Catalog.from_options(options)
    cat.create_database("db")
    for name, kept in (("kept", "true"), ("own", "false")):
        t = cat.create_table(f"db.{name}", PARTED, primary_keys=["dt", "id"], partition_keys=["dt"], bucket=1,
                             options={"metastore.partitioned-table": kept})
        # the test server records the partitions of a table's first commit only
        t.upsert(pa.Table.from_pylist([{"dt": "a", "id": 1, "v": 1}, {"dt": "a", "id": 2, "v": 2},
                                       {"dt": "b", "id": 1, "v": 3}], schema=PARTED))
        t.upsert(pa.Table.from_pylist([{"dt": "a", "id": 3, "v": 4}], schema=PARTED))
        t.delete(filter=[("dt", "=", "b")])
        ours = sorted(cat.list_partitions(f"db.{name}"), key=lambda p: p.spec["dt"])
        assert all(isinstance(p, tidelake.Partition) for p in ours)
        files = cat.system_table(f"db.{name}$partitions").to_pylist()
        assert [(p.spec, p.record_count, p.file_count, p.file_size_in_bytes) for p in ours] == [
            ({"dt": f["partition"].split("=")[1]}, f["record_count"], f["file_count"], f["file_size_in_bytes"])
            for f in files], (ours, files)
        assert [(p.spec, p.record_count, p.file_count) for p in ours][0] == ({"dt": "a"}, 3, 2)
        theirs = oracle.run({"op": "partitions", "catalog": options, "table": f"db.{name}"})["partitions"]
        assert sorted((p["spec"]["dt"], p["recordCount"], p["fileCount"], p["fileSizeInBytes"],
                       p["lastFileCreationTime"]) for p in theirs) == [
            (p.spec["dt"], p.record_count, p.file_count, p.file_size_in_bytes, p.last_file_creation_time)
            for p in ours]
    with pytest.raises(tidelake.TableNotFoundError):
        cat.list_partitions("db.missing")


def test_global_system_tables_cover_every_table_of_the_catalog(options, request):
    """``sys.tables`` (Paimon 2.0's ``AllTablesTable``): a row per table; the totals only where the
    catalog records them at each commit (REST: the server's, as Java's client reads them; Paimon
    1.3.1's test server stores them shuffled, so they are compared with its record, not with the
    live files). ``sys.partitions``:
    a row per partition of every partitioned table, as ``list_partitions`` gives them.
    ``sys.all_table_options``: every option of every table."""
    cat = tidelake.Catalog.from_options(options)
    for db in ("a", "b"):
        cat.create_database(db)
    parted = cat.create_table("a.parted", PARTED, primary_keys=["dt", "id"], partition_keys=["dt"], bucket=1)
    parted.upsert(pa.Table.from_pylist([{"dt": "x", "id": 1, "v": 1}, {"dt": "y", "id": 2, "v": 2}], schema=PARTED))
    parted.upsert(pa.Table.from_pylist([{"dt": "x", "id": 3, "v": 3}], schema=PARTED))
    plain = cat.create_table("b.plain", SCHEMA, options={"file.format": "orc"})
    plain.write(pa.Table.from_pylist([{"id": 1, "name": "n"}], schema=SCHEMA))
    cat.create_table("b.empty", SCHEMA, partition_keys=["name"])

    tables = {(r["database_name"], r["table_name"]): r for r in cat.system_table("sys.tables").to_pylist()}
    assert set(tables) == {("a", "parted"), ("b", "plain"), ("b", "empty")}
    assert [(tables[k]["table_type"], tables[k]["partitioned"], tables[k]["primary_key"])
            for k in (("a", "parted"), ("b", "plain"), ("b", "empty"))] == [
        ("table", True, True), ("table", False, False), ("table", True, False)]
    for (db, name), row in tables.items():
        files = cat.system_table(f"{db}.{name}$files").to_pylist()
        totals = (row["record_count"], row["file_count"], row["file_size_in_bytes"])
        rest = options.get("metastore") == "rest"
        if rest and files:  # REST: the server's record of each commit's statistics
            kept = request.getfixturevalue("rest_server").table_snapshot(db, name)
            assert totals + (row["last_file_creation_time"],) == (
                kept["recordCount"], kept["fileCount"], kept["fileSizeInBytes"], kept["lastFileCreationTime"])
            assert row["record_count"] == sum(f["record_count"] for f in files)
        elif not rest:  # Java: no totals from a catalog that keeps no versions
            assert totals == (None, None, None)

    partitions = cat.system_table("sys.partitions")
    assert partitions.column_names == ["database_name", "table_name", "partition_name", "record_count",
                                       "file_size_in_bytes", "file_count", "last_file_creation_time", "done"]
    listed = sorted((r["table_name"], r["partition_name"], r["record_count"], r["file_count"], r["done"])
                    for r in partitions.to_pylist())
    assert listed == sorted(("parted", f"dt={p.spec['dt']}", p.record_count, p.file_count, p.done)
                            for p in cat.list_partitions("a.parted"))
    assert [r[:3] for r in listed] == [("parted", "dt=x", 2), ("parted", "dt=y", 1)]

    options_rows = cat.system_table("sys.all_table_options").to_pylist()
    assert {"database_name": "b", "table_name": "plain", "key": "file.format", "value": "orc"} in options_rows
    assert {(r["database_name"], r["table_name"]) for r in options_rows if r["key"] == "path"} == set(tables)
    # the SQL front-end reaches them as sys.<name>
    counted = tidelake.sql("SELECT count(*) AS n FROM sys.tables WHERE partitioned", catalog=cat)
    assert counted["n"].to_pylist() == [2]
    with pytest.raises(tidelake.TableNotFoundError, match="global system tables are"):
        cat._raw.global_system_table("nope")


def _lock_sql(options: dict[str, str], postgres, sql: str) -> None:
    uri = options["uri"]
    if uri.startswith("jdbc:sqlite:"):
        sqlite_sql(uri[len("jdbc:sqlite:"):], sql)
    else:
        postgres.psql(sql, database=uri.rsplit("/", 1)[1])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_commit_waits_for_the_jdbc_lock_another_engine_holds(backend, tmp_path, request):
    """The row Java's JdbcCatalogLock inserts for table db.t (lock id '<catalog-key>.db.t')
    holds tidelake's commit until it is deleted; with a short lock-acquire-timeout the commit
    fails as a conflict, leaving the table as it was."""
    pg = request.getfixturevalue("postgres") if backend == "postgres" else None
    uri = f"jdbc:sqlite:{tmp_path}/c.db" if pg is None else pg.jdbc_uri(pg.new_database())
    options = {"metastore": "jdbc", "warehouse": str(tmp_path / "wh"), "uri": uri, "catalog-key": "tl",
               "lock.enabled": "true", "lock-check-max-sleep": "100ms", **(pg.credentials if pg else {})}
    cat = tidelake.Catalog.from_options(options)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=1)
    _lock_sql(options, pg, "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) "
                           "VALUES ('tl.db.t', 3600)")
    done: list[object] = []
    writer = threading.Thread(target=lambda: done.append(
        t.upsert(pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=SCHEMA))))
    writer.start()
    time.sleep(2)
    assert not done and t.latest_snapshot() is None  # waiting for the lock
    _lock_sql(options, pg, "DELETE FROM paimon_distributed_locks WHERE lock_id = 'tl.db.t'")
    writer.join(30)
    assert done and rows(cat.get_table("db.t")) == [{"id": 1, "name": "a"}]

    short = tidelake.Catalog.from_options({**options, "lock-acquire-timeout": "1s"})
    _lock_sql(options, pg, "INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) "
                           "VALUES ('tl.db.t', 3600)")
    before = cat.get_table("db.t").latest_snapshot()

    def metadata() -> set:
        return {p for d in ("manifest", "snapshot") for p in (tmp_path / "wh/db.db/t" / d).rglob("*")}

    files = metadata()
    with pytest.raises(tidelake.CommitConflictError, match="tl.db.t"):
        short.get_table("db.t").upsert(pa.Table.from_pylist([{"id": 2, "name": "b"}], schema=SCHEMA))
    assert cat.get_table("db.t").latest_snapshot() == before
    # the attempts' manifests are deleted; their data files are orphans, as after any conflict
    assert metadata() == files


def test_the_cli_works_through_a_catalog(tmp_path):
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from tidelake import cli

    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
        assert result.exit_code == code, result.output
        return result.output

    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}), tmp_path / "in.parquet")
    config = tmp_path / "catalog.properties"
    config.write_text(f"# the team's catalog\nmetastore = jdbc\nwarehouse = {tmp_path}/wh\n"
                      f"uri = jdbc:sqlite:{tmp_path}/c.db\n")
    flags = ["--catalog-file", config, "-c", "catalog-key=cli"]
    run(*flags, "catalog", "create-database", "shop", "--property", "owner=ops")
    assert json.loads(run(*flags, "catalog", "databases", "--json")) == ["shop"]
    assert json.loads(run(*flags, "catalog", "database", "shop", "--json"))["owner"] == "ops"
    run(*flags, "load", "shop.orders", tmp_path / "in.parquet", "--primary-key", "id")
    assert json.loads(run(*flags, "catalog", "tables", "shop", "--json")) == ["orders"]
    assert [json.loads(line)["id"] for line in run(*flags, "cat", "shop.orders", "--json").splitlines()] == [1, 2]
    run(*flags, "catalog", "rename-table", "shop.orders", "shop.sales")
    run(*flags, "info", "shop.orders", code=3)
    assert "records" in run(*flags, "info", "shop.sales")
    run(*flags, "catalog", "drop-table", "shop.sales", "--yes")
    run("-c", "metastore=nope", "-c", "warehouse=x", "catalog", "databases", code=2)
    run("catalog", "databases", code=2)  # no catalog given
    # the same table name, through Java's catalog key: nothing else sees it
    other = tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": f"{tmp_path}/wh",
                                           "uri": f"jdbc:sqlite:{tmp_path}/c.db"})
    assert other.list_databases() == []


@pytest.mark.parametrize("backend", ["sqlite", "rest", "hive"])
def test_spark_sql_resolves_tables_through_the_catalog(backend, spark, tmp_path, request):
    import tidelake.spark
    from tidelake.spark.statements import CATALOG_CONF

    options = {"metastore": "jdbc", "warehouse": str(tmp_path / "wh"), "uri": f"jdbc:sqlite:{tmp_path}/c.db",
               "lock.enabled": "true"}
    if backend == "rest":
        options = request.getfixturevalue("rest_server").options
    if backend == "hive":
        options = {**request.getfixturevalue("hive_metastore").catalog_options(tmp_path / "wh"), "lock.enabled": "true"}
    java = request.getfixturevalue("java_hive" if backend == "hive" else "java")
    tidelake.spark.register(spark, check_workers=False, catalog=options)
    try:
        tidelake.spark.sql(spark, "CREATE DATABASE IF NOT EXISTS shop")
        tidelake.spark.sql(spark, "CREATE TABLE shop.t (id BIGINT, name STRING) USING tidelake "
                                  "TBLPROPERTIES ('primary-key'='id', 'bucket'='1')")
        tidelake.spark.sql(spark, "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b')")
        cat = tidelake.Catalog.from_options(options)
        assert cat.list_tables("shop") == ["t"]
        assert java_rows(java, options, "shop.t") == [[1, "a"], [2, "b"]]
        tidelake.spark.sql(spark, "INSERT INTO shop.t VALUES (2, 'b2')")
        # a procedure's commit goes through the catalog too
        compacted = tidelake.spark.sql(spark, "CALL sys.compact(table => 'shop.t')").collect()[0][0]
        latest = cat.get_table("shop.t").latest_snapshot()
        assert (latest.id, latest.commit_kind) == (compacted, "COMPACT")
        if backend == "rest":
            assert request.getfixturevalue("rest_server").latest_snapshot("shop", "t")["id"] == compacted
        assert java_rows(java, options, "shop.t") == [[1, "a"], [2, "b2"]]
        # row-level statements commit by path: refused where the catalog locks commits
        with pytest.raises(tidelake.UnsupportedError, match="catalog"):
            tidelake.spark.sql(spark, "DELETE FROM shop.t WHERE id = 1")
    finally:
        spark.conf.unset(CATALOG_CONF)


def test_bad_rest_catalog_options_are_typed_errors(rest_server):  # noqa: F811
    options = rest_server.options
    with pytest.raises(tidelake.InvalidArgumentError, match="uri"):
        tidelake.Catalog.from_options({**options, "uri": ""})
    with pytest.raises(tidelake.InvalidArgumentError, match="uri"):
        tidelake.Catalog.from_options({**options, "uri": "ftp://127.0.0.1:1"})
    with pytest.raises(tidelake.InvalidArgumentError, match='serves no warehouse "nope"'):
        tidelake.Catalog.from_options({**options, "warehouse": "nope"})
    with pytest.raises(tidelake.StorageError, match="not authorized"):
        tidelake.Catalog.from_options({**options, "token": "wrong"})
    with pytest.raises(tidelake.UnsupportedError, match="token.provider"):
        tidelake.Catalog.from_options({**options, "token.provider": "dlf"})
    with pytest.raises(tidelake.StorageError, match="no answer"):
        tidelake.Catalog.from_options({**options, "uri": "http://127.0.0.1:1"})
    cat = tidelake.Catalog.from_options(options)
    assert cat.options["prefix"] == "paimon"  # the server's defaults, merged
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("nodb.t")
    cat.create_database("db")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.get_table("db.missing")
    with pytest.raises(tidelake.TableNotFoundError):
        cat.drop_table("db.missing")
