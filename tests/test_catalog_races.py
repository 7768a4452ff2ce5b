"""Java and tidelake writers racing on one table through Paimon's JDBC commit lock, as
separate processes (``catalog_soak.py``: one Java writer, two tidelake writers and a tidelake
compactor, about 15 s per case, ``TIDELAKE_CATALOG_SOAK_SECONDS`` changes it): every write
either engine acknowledged must then be in the table, in both engines' reads, and both engines
read the same rows.

On local storage both engines use the JDBC catalog (SQLite and PostgreSQL); on S3 (the moto
server) Java uses its JDBC catalog and tidelake the filesystem catalog with ``lock.type=jdbc``
naming the same lock database, as a team whose Java jobs own the catalog would.
"""

from __future__ import annotations

import os

import pytest

import tidelake
from _catalog_workers import RACE_FIELDS
from _java import JavaOracle
from catalog_soak import jdbc_options, run_soak

SECONDS = float(os.environ.get("TIDELAKE_CATALOG_SOAK_SECONDS", "15"))


def check(counts: dict, min_acks: int) -> None:
    """Every writer got writes acknowledged; the only failures were conflicts (a tidelake write
    that would land ordered before a newer one, after its retries), which did not land."""
    writers = [counts["java"], *counts["tidelake"]]
    assert all(w["acked"] >= min_acks for w in writers), counts
    assert not counts["java"]["errors"] and not counts["compactor"]["errors"], counts
    assert all(e.startswith("CommitConflictError") for w in counts["tidelake"] for e in w["errors"]), counts


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_java_and_tidelake_writers_share_the_jdbc_lock(backend, tmp_path, request):
    if backend == "sqlite":
        jdbc = {"uri": f"jdbc:sqlite:{tmp_path}/catalog.db"}
    else:
        pg = request.getfixturevalue("postgres")
        jdbc = {"uri": pg.jdbc_uri(pg.new_database()), **pg.credentials}
    options = jdbc_options(tmp_path, jdbc)
    counts = run_soak(tmp_path, options, options, None, SECONDS)
    check(counts, min_acks=3)
    assert counts["compactor"]["compacted"] >= 1, counts


def java_s3_options(s3_server) -> dict[str, str]:
    """Paimon's S3 options (paimon-s3) for the moto server."""
    return {"s3.endpoint": s3_server.endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
            "s3.path.style.access": "true", "s3.region": "us-east-1"}


def test_java_jdbc_catalog_and_tidelake_filesystem_catalog_share_the_lock_on_s3(tmp_path, s3_server):
    warehouse = f"s3://{s3_server.new_bucket()}/wh"
    lock = {"uri": f"jdbc:sqlite:{tmp_path}/locks.db", "catalog-key": "race", "lock.enabled": "true",
            "lock-check-max-sleep": "200ms"}
    java_options = {"metastore": "jdbc", "warehouse": warehouse, **lock, **java_s3_options(s3_server)}
    tidelake_options = {"warehouse": warehouse, "lock.type": "jdbc", **lock}
    # Java creates and registers the table in its JDBC catalog; tidelake finds it in the warehouse
    java = JavaOracle()
    try:
        java.run({"op": "write", "catalog": java_options, "table": "db.race", "mode": "batch",
                  "schema": {"fields": [{"name": n, "type": t} for n, t in RACE_FIELDS], "primary_keys": ["k"],
                             "partition_keys": [], "options": {"bucket": "2"}}, "steps": []})
    finally:
        java.close()
    cat = tidelake.Catalog.from_options(tidelake_options, s3_server.options)
    assert cat.lock_enabled and cat.list_tables("db") == ["race"]
    counts = run_soak(tmp_path, java_options, tidelake_options, s3_server.options, SECONDS, create=False)
    check(counts, min_acks=2)  # moto on a shared 2-core machine commits slowly
