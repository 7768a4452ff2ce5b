"""A real Hive Metastore for the Hive catalog tests: Hive's standalone metastore 3.1.3 on an
embedded Derby database (``make hive`` resolves it from Maven Central with interop/hive/pom.xml,
which also holds Paimon 1.3.1's HiveCatalog for the Java oracle's Hive jobs).

The ``hive_metastore`` fixture makes the metastore's database once per test session with Hive's
schema tool (Derby's schema scripts unpacked by ``make hive``; the metastore's lock tables, which
Paimon's Hive lock needs, exist only in a database made that way), under the session's tmp dir,
starts the metastore on a free port of 127.0.0.1, and stops it by its PID at the end. Tests share
it: :meth:`HiveMetastore.catalog_options` starts each from an empty metastore (every database but
``default`` dropped).

``java_hive`` is the session's Java oracle JVM on the Hive classpath. Not a test module (leading
underscore).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
HIVE = REPO / "interop" / "hive"
ORACLE_JAR = REPO / "interop" / "java-oracle" / "target" / "java-oracle.jar"
METASTORE_HOME = HIVE / "target" / "metastore-home" / "apache-hive-metastore-3.1.3-bin"
HIVE_VERSION = "3.1.3"
STARTUP_SECONDS = 120
JAVA = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
log = logging.getLogger("tidelake.tests.hive")


def hive_classpath() -> str:
    """The classpath of the metastore and of Paimon's HiveCatalog (``make hive``: a no-op when up
    to date)."""
    subprocess.run(["make", "-s", "-C", str(REPO), "hive"], check=True)
    return (HIVE / "target" / "classpath.txt").read_text().strip()


def hive_oracle_classpath() -> str:
    """The Java oracle (interop/java-oracle) with Paimon's HiveCatalog and Hive's client jars in
    place of its own classpath, for jobs through a Hive catalog."""
    subprocess.run(["make", "-s", "-C", str(REPO), "java-oracle"], check=True)
    return f"{ORACLE_JAR}:{hive_classpath()}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _site(derby: pathlib.Path, warehouse: pathlib.Path) -> str:
    properties = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={derby};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "false",
        "metastore.schema.verification": "true",
        "metastore.warehouse.dir": f"file:{warehouse}",
        "metastore.thrift.bind.host": "127.0.0.1",
        "metastore.event.db.notification.api.auth": "false",
        # the standalone jar lacks Hive's own expression proxy and some of its default tasks
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": ",".join(
            f"org.apache.hadoop.hive.metastore.{task}"
            for task in ("events.EventCleanerTask", "RuntimeStatsCleanerTask", "MaterializationsRebuildLockCleanerTask")),
    }
    body = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in properties.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


@dataclass
class HiveMetastore:
    uri: str
    workdir: pathlib.Path
    proc: subprocess.Popen[bytes]
    start_seconds: float

    def options(self, warehouse: os.PathLike[str] | str) -> dict[str, str]:
        """Paimon catalog options of a Hive catalog of this metastore (Java's and tidelake's alike)."""
        return {"metastore": "hive", "uri": self.uri, "warehouse": str(warehouse)}

    def catalog_options(self, warehouse: os.PathLike[str] | str) -> dict[str, str]:
        """:meth:`options`, on an emptied metastore (the previous test's databases dropped)."""
        import tidelake

        options = self.options(warehouse)
        catalog = tidelake.Catalog.from_options(options)
        for database in catalog.list_databases():
            if database != "default":
                catalog.drop_database(database, cascade=True)
        return options

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def hive_metastore_server(workdir: pathlib.Path) -> Iterator[HiveMetastore]:
    """A metastore with a fresh Derby database under ``workdir``, until the block ends."""
    classpath = hive_classpath()
    conf = workdir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "metastore-site.xml").write_text(_site(workdir / "metastore_db", workdir / "hive-warehouse"))
    started = time.monotonic()
    java = [*JAVA, f"-Dderby.stream.error.file={workdir / 'derby.log'}", "-cp", f"{conf}:{classpath}"]
    schema = subprocess.run([*java, "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool", "-dbType", "derby",
                             "-initSchema"], env={**os.environ, "METASTORE_HOME": str(METASTORE_HOME)},
                            capture_output=True, text=True)
    if schema.returncode != 0:
        raise RuntimeError(f"Hive's schema tool failed: {schema.stdout[-3000:]}{schema.stderr[-3000:]}")
    port = _free_port()
    with (workdir / "metastore.log").open("wb") as out:
        proc = subprocess.Popen([*java, "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    hms = HiveMetastore(f"thrift://127.0.0.1:{port}", workdir, proc, 0.0)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the Hive Metastore exited: see {workdir / 'metastore.log'}")
            if time.monotonic() - started > STARTUP_SECONDS:
                raise TimeoutError(f"the Hive Metastore did not listen within {STARTUP_SECONDS} s")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        hms.start_seconds = time.monotonic() - started
        yield hms
    finally:
        hms.stop()


@pytest.fixture(scope="session")
def java_hive() -> Iterator[Any]:
    """The session's Java oracle JVM for jobs through a Hive catalog (Paimon's HiveCatalog)."""
    from _java import JavaOracle

    oracle = JavaOracle(hive_oracle_classpath())
    yield oracle
    oracle.close()


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: Any) -> Iterator[HiveMetastore]:
    workdir = tmp_path_factory.mktemp("hive-metastore")
    with hive_metastore_server(workdir) as hms:
        log.warning("Hive Metastore %s on %s ready in %.1f s (schema tool included; logs in %s)", HIVE_VERSION,
                    hms.uri, hms.start_seconds, workdir)
        yield hms
