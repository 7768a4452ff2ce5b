"""A real PostgreSQL server for the JDBC catalog tests: Debian's PostgreSQL (``make postgres``
installs it when missing), a fresh cluster made with ``initdb`` and started with ``pg_ctl`` as
user ``postgres`` on a free port of 127.0.0.1, once per test session, stopped by its PID at the
end; each test gets a database of its own (:meth:`PostgresServer.new_database`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Iterator

import pytest

USER = "paimon"
PASSWORD = "paimonpw"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    assert found, "PostgreSQL is not installed (make postgres installs Debian's package)"
    return os.path.dirname(found[-1])


def _as_postgres(command: list[str]) -> list[str]:
    """``command`` run as user postgres (initdb refuses root)."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@dataclass(frozen=True)
class PostgresServer:
    port: int
    bin_dir: str

    def psql(self, sql: str, database: str = "postgres") -> str:
        env = {**os.environ, "PGPASSWORD": PASSWORD}
        out = subprocess.run([os.path.join(self.bin_dir, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER,
                              "-d", database, "-At", "-c", sql], env=env, check=True, capture_output=True, text=True)
        return out.stdout

    def new_database(self) -> str:
        name = f"c_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        return name

    def jdbc_uri(self, database: str) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    @property
    def credentials(self) -> dict[str, str]:
        """The catalog options that log in (``jdbc.user``, ``jdbc.password``)."""
        return {"jdbc.user": USER, "jdbc.password": PASSWORD}


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    root = tempfile.mkdtemp(prefix="tidelake-pg-")
    data, sock = os.path.join(root, "data"), os.path.join(root, "sock")
    os.makedirs(sock)
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        for p in (sock, pwfile):
            shutil.chown(p, "postgres")
    port = _free_port()
    subprocess.run(_as_postgres([os.path.join(bin_dir, "initdb"), "-D", data, "-U", USER, "--auth=scram-sha-256",
                                 f"--pwfile={pwfile}", "-E", "UTF8", "--no-locale"]),
                   check=True, capture_output=True)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off -c shared_buffers=32MB"
    subprocess.run(_as_postgres([os.path.join(bin_dir, "pg_ctl"), "-D", data, "-l", os.path.join(root, "server.log"),
                                 "-w", "-t", "60", "-o", options, "start"]), check=True, capture_output=True)
    with open(os.path.join(data, "postmaster.pid")) as f:
        pid = int(f.readline())
    try:
        yield PostgresServer(port, bin_dir)
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    with postgres_server() as server:
        yield server
