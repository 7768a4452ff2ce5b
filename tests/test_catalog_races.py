"""Java and tidelake writers racing on one table through Paimon's JDBC commit lock, as
separate processes: one Java writer (interop/java-oracle ``Race.java``, its own JVM) and two
tidelake writers commit for a while; every write either engine acknowledged must then be in the
table, in both engines' reads (``_catalog_workers.check_acks``).

On local storage both engines use the JDBC catalog (SQLite and PostgreSQL); on S3 (the moto
server) Java uses its JDBC catalog and tidelake the filesystem catalog with ``lock.type=jdbc``
naming the same lock database, as a team whose Flink jobs own the catalog would.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading

import pytest

import tidelake
from _catalog_workers import RACE_FIELDS, RACE_SCHEMA, check_acks, read_acks
from _java import JavaOracle

SECONDS = float(os.environ.get("TIDELAKE_CATALOG_RACE_SECONDS", "15"))
TESTS = pathlib.Path(__file__).resolve().parent


def java_s3_options(s3_server) -> dict[str, str]:
    """Paimon's S3 options (paimon-s3) for the moto server."""
    return {"s3.endpoint": s3_server.endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
            "s3.path.style.access": "true", "s3.region": "us-east-1"}


def run_race(tmp_path, java_options: dict[str, str], tidelake_options: dict[str, str],
             storage_options: dict[str, str] | None, *, create: bool = True, min_acks: int = 5) -> None:
    """Race one Java and two tidelake writers on ``db.race`` (created by tidelake unless it
    exists) for :data:`SECONDS`, then check every acknowledged write in both engines' reads."""
    seconds = SECONDS
    cat = tidelake.Catalog.from_options(tidelake_options, storage_options)
    if create:
        cat.create_database("db", ignore_if_exists=True)
        cat.create_table("db.race", RACE_SCHEMA, primary_keys=["k"], bucket=2)
    go = str(tmp_path / "go")
    acks = [str(tmp_path / f"acks-{w}") for w in ("java", "tl0", "tl1")]
    writers = []
    for i, name in enumerate(("tl0", "tl1")):
        args = {"catalog_options": tidelake_options, "storage_options": storage_options, "table": "db.race",
                "writer": name, "first_key": (i + 1) * 1_000_000, "keys_per_write": 3, "seconds": seconds,
                "acks": acks[i + 1], "go_file": go}
        writers.append(subprocess.Popen([sys.executable, str(TESTS / "_catalog_workers.py"), json.dumps(args)],
                                        stdout=subprocess.PIPE, text=True))
    java = JavaOracle()
    java_answer: dict = {}
    job = {"op": "race", "catalog": java_options, "table": "db.race", "writer": "java", "first_key": 0,
           "keys_per_write": 3, "seconds": seconds, "acks": acks[0]}
    racer = threading.Thread(target=lambda: java_answer.update(java.run(job)))
    racer.start()
    open(go, "w").close()
    racer.join(seconds + 120)
    results = [json.loads(w.communicate(timeout=seconds + 120)[0]) for w in writers]
    try:
        acked = read_acks(acks)
        table = cat.get_table("db.race")
        check_acks(table.to_arrow().to_pylist(), acked, "tidelake")
        answer = java.run({"op": "read", "catalog": java_options, "table": "db.race"})
        check_acks([dict(zip(answer["fields"], r)) for r in answer["rows"]], acked, "java")
        counts = {"java": java_answer, "tidelake": results, "snapshots": table.latest_snapshot_id()}
        print(counts)
        assert java_answer["acked"] >= min_acks and all(r["acked"] >= min_acks for r in results), counts
        assert not java_answer["errors"] and not any(r["errors"] for r in results), counts
    finally:
        java.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_java_and_tidelake_writers_share_the_jdbc_lock(backend, tmp_path, request):
    if backend == "sqlite":
        jdbc = {"uri": f"jdbc:sqlite:{tmp_path}/catalog.db"}
    else:
        pg = request.getfixturevalue("postgres")
        jdbc = {"uri": pg.jdbc_uri(pg.new_database()), **pg.credentials}
    options = {"metastore": "jdbc", "warehouse": str(tmp_path / "wh"), "catalog-key": "race", "lock.enabled": "true",
               "lock-check-max-sleep": "200ms", **jdbc}
    run_race(tmp_path, options, options, None)


def test_java_jdbc_catalog_and_tidelake_filesystem_catalog_share_the_lock_on_s3(tmp_path, s3_server):
    warehouse = f"s3://{s3_server.new_bucket()}/wh"
    lock = {"uri": f"jdbc:sqlite:{tmp_path}/locks.db", "catalog-key": "race", "lock.enabled": "true",
            "lock-check-max-sleep": "200ms"}
    java_options = {"metastore": "jdbc", "warehouse": warehouse, **lock, **java_s3_options(s3_server)}
    # Java registers the table in its JDBC catalog; tidelake commits to it by path in the warehouse
    # (the filesystem catalog) under the same lock
    tidelake_options = {"warehouse": warehouse, "lock.type": "jdbc", **lock}
    java = JavaOracle()
    try:
        java.run({"op": "write", "catalog": java_options, "table": "db.race", "mode": "batch",
                  "schema": {"fields": [{"name": n, "type": t} for n, t in RACE_FIELDS], "primary_keys": ["k"],
                             "partition_keys": [], "options": {"bucket": "2"}}, "steps": []})
    finally:
        java.close()
    cat = tidelake.Catalog.from_options(tidelake_options, s3_server.options)
    assert cat.lock_enabled and cat.list_tables("db") == ["race"]
    # moto on a shared 2-core machine commits slowly: a few writes per writer
    run_race(tmp_path, java_options, tidelake_options, s3_server.options, create=False, min_acks=3)
