"""A real Iceberg REST catalog for the ``rest-catalog`` Iceberg metadata tests: Apache Iceberg's
own REST catalog server (``org.apache.iceberg.rest.RESTCatalogServer`` of iceberg-open-api's test
fixtures, the server of Iceberg's REST compatibility kit; ``make iceberg-rest`` resolves it from
Maven Central with interop/iceberg-rest/pom.xml) over a JDBC catalog in an SQLite file.

The ``iceberg_rest`` fixture starts one server per test session on a free port of 127.0.0.1,
its warehouse and catalog database under the session's tmp dir, and stops it at the end. Tests
share it and keep apart by namespace. Not a test module (leading underscore).
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SERVER = "org.apache.iceberg.rest.RESTCatalogServer"
STARTUP_SECONDS = 120


@dataclass(frozen=True)
class IcebergRest:
    uri: str
    warehouse: pathlib.Path

    def config(self) -> dict:
        with urllib.request.urlopen(f"{self.uri}v1/config", timeout=10) as answer:
            config: dict = json.load(answer)
            return config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def iceberg_rest(tmp_path_factory) -> Iterator[IcebergRest]:
    subprocess.run(["make", "-s", "-C", str(REPO), "iceberg-rest"], check=True)
    classpath = (REPO / "interop" / "iceberg-rest" / "target" / "classpath.txt").read_text().strip()
    home = tmp_path_factory.mktemp("iceberg-rest")
    port = _free_port()
    env = {**os.environ, "CATALOG_WAREHOUSE": str(home / "warehouse"),
           "CATALOG_URI": f"jdbc:sqlite:file:{home / 'catalog.db'}", "CATALOG_REST_PORT": str(port)}
    log = open(home / "server.log", "w")
    server = subprocess.Popen(["java", "-Xmx512m", "-XX:+UseSerialGC", "-cp", classpath, SERVER],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    rest = IcebergRest(uri=f"http://127.0.0.1:{port}/", warehouse=home / "warehouse")
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            try:
                rest.config()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Iceberg REST server did not start: {(home / 'server.log').read_text()}")
                time.sleep(0.5)
        yield rest
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
