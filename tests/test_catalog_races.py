"""Java and tidelake writers racing on one table through Paimon's JDBC commit lock, as
separate processes (``catalog_soak.py``: one Java writer, two tidelake writers and a tidelake
compactor, about 15 s per case, ``TIDELAKE_CATALOG_SOAK_SECONDS`` changes it): every write
either engine acknowledged must then be in the table, in both engines' reads, and both engines
read the same rows.

Both engines use the JDBC catalog, on SQLite and on PostgreSQL, on local storage and on S3
(moto), Paimon's REST catalog server (``_rest.py``) or Paimon's Hive catalog on the suite's Hive
Metastore (``_hive.py``), on local storage.
"""

from __future__ import annotations

import os

import pytest

from _hive import hive_oracle_classpath
from _rest import rest_server  # noqa: F401  (a fresh Paimon REST server, a fixture)
from catalog_soak import S3_PAUSE, hive_options, jdbc_options, jdbc_s3_options, run_soak

# time-boxed races that must reach minimum counts: run with the machine to themselves
pytestmark = pytest.mark.exclusive

SECONDS = float(os.environ.get("TIDELAKE_CATALOG_SOAK_SECONDS", "15"))


def check(counts: dict, min_acks: int) -> None:
    """Every writer got writes acknowledged; the only failures were conflicts (a tidelake write
    that would land ordered before a newer one, after its retries), which did not land."""
    writers = [counts["java"], *counts["tidelake"]]
    assert all(w["acked"] >= min_acks for w in writers), counts
    assert not counts["java"]["errors"] and not counts["compactor"]["errors"], counts
    # a conflict, or (rarely) an outcome tidelake cannot tell, which the checks allow to have landed
    allowed = ("CommitConflictError", "StorageError")
    assert all(e.startswith(allowed) for w in counts["tidelake"] for e in w["errors"]), counts


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_java_and_tidelake_writers_share_the_jdbc_lock(backend, tmp_path, request):
    if backend == "sqlite":
        jdbc = {"uri": f"jdbc:sqlite:{tmp_path}/catalog.db"}
    else:
        pg = request.getfixturevalue("postgres")
        jdbc = {"uri": pg.jdbc_uri(pg.new_database()), **pg.credentials}
    options = jdbc_options(tmp_path, jdbc)
    # tidelake's writers pause 0.2 s between commits: Java's commit is optimistic outside the lock
    # (it reads the latest snapshot, writes its manifests, then takes the lock and gives up if the
    # next id was taken), so a commit every few ms from others starves it through its 10 retries
    counts = run_soak(tmp_path, options, options, None, SECONDS, pause=0.2)
    check(counts, min_acks=3)
    assert counts["compactor"]["compacted"] >= 1, counts


def test_java_and_tidelake_writers_share_the_jdbc_lock_on_s3(s3_server, tmp_path):
    """The same race on an S3 table: the case Paimon's docs name a lock for, as neither engine's
    commit alone excludes the other's there (Java writes a snapshot on S3 as a check that it
    does not exist, then a put)."""
    options = jdbc_s3_options(tmp_path, s3_server)
    counts = run_soak(tmp_path, options, options, None, 2 * SECONDS, pause=S3_PAUSE)
    check(counts, min_acks=2)
    assert counts["compactor"]["compacted"] >= 1, counts


def test_java_and_tidelake_writers_commit_through_the_rest_server(rest_server, tmp_path):
    """The same race through Paimon's REST server: every commit of either engine is one request
    to its commit endpoint, where the server decides which commit gets each snapshot id."""
    options = rest_server.options
    counts = run_soak(tmp_path, options, options, None, SECONDS, pause=0.2)
    check(counts, min_acks=3)
    assert counts["compactor"]["compacted"] >= 1, counts


def test_java_and_tidelake_writers_share_the_hive_lock(hive_metastore, tmp_path):
    """The same race through Paimon's Hive catalog: both engines take the metastore's EXCLUSIVE
    lock of ``db.race`` around the creation of each snapshot (Java ``HiveCatalogLock``)."""
    options = hive_options(hive_metastore.catalog_options(tmp_path / "wh"))
    counts = run_soak(tmp_path, options, options, None, SECONDS, pause=0.2, java_classpath=hive_oracle_classpath())
    check(counts, min_acks=3)
    assert counts["compactor"]["compacted"] >= 1, counts
