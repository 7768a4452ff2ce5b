"""Mixed-engine soak: one Java writer process (interop/java-oracle ``Race.java``), two tidelake
writer processes and a tidelake compactor process commit to one primary-key table at once
through a catalog that arbitrates between them (Paimon's JDBC lock, a REST catalog server's
commit endpoint, or Paimon's Hive lock in a Hive Metastore), for as long as asked;
then every write either engine acknowledged must be in the table, as written, in both engines'
reads, and both engines must read the same rows.

Run by ``test_catalog_races.py`` (about 15 s per case), or by hand for longer::

    python tests/catalog_soak.py --seconds 600                  # JDBC catalog on SQLite
    python tests/catalog_soak.py --seconds 600 --postgres       # on a PostgreSQL cluster started for the run
    python tests/catalog_soak.py --seconds 600 --rest           # through Paimon's REST catalog server
    python tests/catalog_soak.py --seconds 600 --s3             # the JDBC lock, the warehouse on a moto S3 server
    python tests/catalog_soak.py --seconds 600 --hive           # Hive catalog, a metastore started for the run
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import threading
from typing import Any

import tidelake
from _catalog_workers import RACE_SCHEMA, check_acks, read_acks, read_unknown
from _java import JavaOracle

TESTS = pathlib.Path(__file__).resolve().parent


def _spawn(role: str, args: dict[str, Any]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(TESTS / "_catalog_workers.py"), role, json.dumps(args)],
                            stdout=subprocess.PIPE, text=True)


def run_soak(work: pathlib.Path, java_options: dict[str, str], tidelake_options: dict[str, str],
             storage_options: dict[str, str] | None, seconds: float, *, create: bool = True,
             pause: float = 0.05, java_classpath: str | None = None) -> dict[str, Any]:
    """Race on ``db.race`` (created by tidelake unless ``create`` is false) for ``seconds``,
    tidelake's writers ``pause`` seconds apart, Java's on ``java_classpath`` (the oracle's own if
    not given); check every acknowledged write in both engines' reads; return the counts."""
    cat = tidelake.Catalog.from_options(tidelake_options, storage_options)
    if create:
        cat.create_database("db", ignore_if_exists=True)
        cat.create_table("db.race", RACE_SCHEMA, primary_keys=["k"], bucket=2)
    go = str(work / "go")
    acks = [str(work / f"acks-{w}") for w in ("java", "tl0", "tl1")]
    common = {"catalog_options": tidelake_options, "storage_options": storage_options, "table": "db.race",
              "seconds": seconds, "go_file": go}
    procs = [_spawn("writer", {**common, "writer": name, "first_key": (i + 1) * 1_000_000_000, "keys_per_write": 3,
                               "acks": acks[i + 1], "pause": pause}) for i, name in enumerate(("tl0", "tl1"))]
    procs.append(_spawn("compactor", common))
    java = JavaOracle(java_classpath)
    try:
        java_answer: dict[str, Any] = {}
        job = {"op": "race", "catalog": java_options, "table": "db.race", "writer": "java", "first_key": 0,
               "keys_per_write": 3, "seconds": seconds, "acks": acks[0]}
        racer = threading.Thread(target=lambda: java_answer.update(java.run(job)))
        racer.start()
        open(go, "w").close()
        racer.join(seconds + 300)
        *writers, compactor = [json.loads(p.communicate(timeout=seconds + 300)[0]) for p in procs]
        acked, unknown = read_acks(acks), read_unknown(acks)
        table = cat.get_table("db.race")
        ours = table.to_arrow().to_pylist()
        counts = {"java": java_answer, "tidelake": writers, "compactor": compactor, "acked": len(acked),
                  "unknown": len(unknown), "rows": len(ours), "snapshots": table.latest_snapshot().id}
        print(counts)
        check_acks(ours, acked, "tidelake", unknown)
        answer = java.run({"op": "read", "catalog": java_options, "table": "db.race"})
        theirs = [dict(zip(answer["fields"], r)) for r in answer["rows"]]
        check_acks(theirs, acked, "java", unknown)
        assert sorted(map(json.dumps, ours)) == sorted(map(json.dumps, theirs)), "the engines read different rows"
    finally:
        java.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--postgres", action="store_true", help="the JDBC catalog on a PostgreSQL server")
    parser.add_argument("--rest", action="store_true", help="Paimon's REST catalog server")
    parser.add_argument("--hive", action="store_true", help="Paimon's Hive catalog on a Hive Metastore")
    parser.add_argument("--s3", action="store_true", help="the JDBC catalog's warehouse on a moto S3 server")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="catalog-soak-") as tmp:
        work = pathlib.Path(tmp)
        if args.rest:
            from _rest import start_rest_server

            server = start_rest_server(work / "rest-data")
            try:
                counts = run_soak(work, server.options, server.options, None, args.seconds, pause=0.2)
            finally:
                server.stop()
        elif args.hive:
            from _hive import hive_metastore_server, hive_oracle_classpath

            with hive_metastore_server(work / "metastore") as hms:
                options = hive_options(hms.options(work / "wh"))
                counts = run_soak(work, options, options, None, args.seconds, pause=0.2,
                                  java_classpath=hive_oracle_classpath())
        elif args.s3:
            from _s3 import moto_server

            with moto_server() as s3:
                options = jdbc_s3_options(work, s3)
                counts = run_soak(work, options, options, None, args.seconds, pause=S3_PAUSE)
        elif args.postgres:
            from _postgres import postgres_server

            with postgres_server() as pg:
                jdbc = {"uri": pg.jdbc_uri(pg.new_database()), **pg.credentials}
                counts = _run_jdbc(work, jdbc, args.seconds)
        else:
            counts = _run_jdbc(work, {"uri": f"jdbc:sqlite:{work}/catalog.db"}, args.seconds)
    print(json.dumps(counts, indent=2))
    return 0


def jdbc_options(work: pathlib.Path, jdbc: dict[str, str]) -> dict[str, str]:
    """A JDBC catalog with Paimon's lock on, for both engines."""
    return {"metastore": "jdbc", "warehouse": str(work / "wh"), "catalog-key": "race", "lock.enabled": "true",
            "lock-check-max-sleep": "200ms", **jdbc}


S3_PAUSE = 1.0
"""tidelake writers' pause between commits on S3: Java's optimistic attempt outside the lock
takes many more requests there (Hadoop's S3A client), and at 0.2 s pauses it was starved
through its 10 retries."""


def jdbc_s3_options(work: pathlib.Path, s3: Any) -> dict[str, str]:
    """The JDBC lock on SQLite with the warehouse on ``s3`` (an S3Server): one set of catalog
    options, Paimon's S3 file-system options included, for both engines."""
    return {**jdbc_options(work, {"uri": f"jdbc:sqlite:{work}/catalog.db"}),
            "warehouse": f"s3://{s3.new_bucket()}/wh", **s3.paimon_options}


def hive_options(hive: dict[str, str]) -> dict[str, str]:
    """A Hive catalog with Paimon's Hive lock on, for both engines."""
    return {**hive, "lock.enabled": "true", "lock-check-max-sleep": "200ms"}


def _run_jdbc(work: pathlib.Path, jdbc: dict[str, str], seconds: float) -> dict[str, Any]:
    options = jdbc_options(work, jdbc)
    return run_soak(work, options, options, None, seconds)


if __name__ == "__main__":
    sys.exit(main())
