"""Paimon 1.3.1's own REST catalog server (``RESTCatalogServer`` from paimon-core's test jar,
launched by interop/java-oracle's ``RestServer`` on 127.0.0.1) for the REST catalog tests.

The server keeps its databases, tables and latest snapshots in memory, over a filesystem
catalog in its data directory (local, or an ``s3://`` URL): each test gets a fresh server on a
fresh directory (:func:`rest_server`), stopped by closing its standard input. Clients reach it
with the catalog options of :attr:`RestServer.options` (bearer token, the warehouse name it
serves) and whatever options the server was started to give them (``data-token.enabled``, S3
endpoint); :meth:`RestServer.vend_data_token` makes it vend a table's data token.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from _java import oracle_classpath

WAREHOUSE = "tidelake_wh"
STARTUP_SECONDS = 60


@dataclass
class RestServer:
    url: str
    data_dir: Path | str
    token: str
    proc: subprocess.Popen[str]
    lines: list[str]

    @property
    def options(self) -> dict[str, str]:
        """Paimon catalog options that reach this server (Java's and tidelake's alike)."""
        return {"metastore": "rest", "uri": self.url, "warehouse": WAREHOUSE, "token.provider": "bear",
                "token": self.token}

    def latest_snapshot(self, database: str, table: str) -> dict:
        """The snapshot the server holds as the table's latest: what Java's REST client reads."""
        return self.table_snapshot(database, table)["snapshot"]

    def table_snapshot(self, database: str, table: str) -> dict:
        """The server's ``TableSnapshot`` of the table (``GET .../snapshot``): the latest
        snapshot and the totals it keeps from each commit's statistics."""
        request = urllib.request.Request(f"{self.url}/v1/paimon/databases/{database}/tables/{table}/snapshot",
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())["snapshot"]

    def vend_data_token(self, table: str, valid_ms: int, token: dict[str, str]) -> None:
        """From now on, answer token requests for ``table`` (``db.t``) with ``token``, valid for
        ``valid_ms`` milliseconds from now."""
        assert self.proc.stdin is not None
        done = len([line for line in self.lines if line.startswith("DATA-TOKEN SET")])
        words = " ".join(f"{k}={v}" for k, v in token.items())
        self.proc.stdin.write(f"data-token {table} {valid_ms} {words}\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + 30
        while len([line for line in self.lines if line.startswith("DATA-TOKEN SET")]) == done:
            assert time.monotonic() < deadline and self.proc.poll() is None, "the REST server set no token"
            time.sleep(0.01)

    def tokens_served(self, table: str) -> int:
        """How many data-token requests for ``db.t`` the server answered."""
        database, name = table.split(".")
        return sum(1 for line in self.lines if line.strip().endswith(f"/databases/{database}/tables/{name}/token"))

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_rest_server(data_dir: Path | str, options: dict[str, str] | None = None) -> RestServer:
    """A server on a free port over `data_dir` (a local directory or an ``s3://`` URL), once it
    said READY; it gives clients ``options`` among its defaults, but those starting with
    ``server.``, which configure its own file system only (see interop's ``RestServer``)."""
    if isinstance(data_dir, Path):
        data_dir.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", oracle_classpath(),
         "org.tidelake.oracle.RestServer", str(data_dir), WAREHOUSE, token,
         *(f"{k}={v}" for k, v in (options or {}).items())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready: list[str] = []
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY ") and not ready:
                ready.append(line.split()[1])
            seen.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for _ in range(STARTUP_SECONDS * 10):
        if ready or proc.poll() is not None:
            break
        reader.join(0.1)
    if not ready:
        proc.kill()
        raise RuntimeError(f"the REST server did not start: {''.join(seen[-30:])}")
    return RestServer(ready[0], data_dir, token, proc, seen)


@pytest.fixture
def rest_server(tmp_path) -> Iterator[RestServer]:
    server = start_rest_server(tmp_path / "rest-data")
    yield server
    server.stop()
