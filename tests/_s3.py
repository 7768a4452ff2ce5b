"""A real S3-compatible server for the tests: moto's server mode (pinned in requirements-dev.txt),
started once per test session as a subprocess on 127.0.0.1, plus one fresh bucket per test; the
``storage`` fixture (local | s3) that runs a test on both; and ``TableFiles``, the storage-neutral
view of the objects under a table location that tests use instead of pathlib.

moto honours ``If-None-Match: *`` on PutObject (412 PreconditionFailed when the key exists), which
is what tidelake's snapshot commits rely on; ``test_s3.py`` checks it directly.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, what: str) -> None:
    """Wait until ``proc`` (``what``) accepts connections on ``port`` of 127.0.0.1."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None, f"{what} exited (code {proc.returncode})"
            assert time.monotonic() < deadline, f"{what} did not start"
            time.sleep(0.05)


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    @property
    def options(self) -> dict[str, str]:
        """Storage options for tidelake (object_store configuration keys)."""
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
                "aws_region": "us-east-1", "allow_http": "true"}

    @property
    def paimon_options(self) -> dict[str, str]:
        """The same server in Paimon's S3 file-system catalog options (Java's and tidelake's)."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": "testing", "s3.secret-key": "testing",
                "s3.path.style.access": "true", "s3.endpoint.region": "us-east-1"}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing", region_name="us-east-1")

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


@contextlib.contextmanager
def moto_server(env: dict[str, str] | None = None) -> Iterator[S3Server]:
    """A moto S3 server in a subprocess on a free port of 127.0.0.1, stopped on exit (``env``:
    moto settings such as ``INITIAL_NO_AUTH_ACTION_COUNT``)."""
    port = _free_port()
    log = open(os.devnull, "w")
    server = pathlib.Path(__file__).with_name("_moto_atomic.py")  # conditional writes atomic, as AWS's
    proc = subprocess.Popen([sys.executable, str(server), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=log, env={**os.environ, **(env or {})})
    _wait_for_port(port, proc, "moto server")
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a server holding many objects on a loaded machine
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def s3_server():
    with moto_server() as server:
        yield server


@dataclass(frozen=True)
class Storage:
    """Where a test puts its tables: a local directory or a bucket prefix."""

    kind: str
    root: str
    options: dict[str, str] | None

    def location(self, name: str) -> str:
        return f"{self.root}/{name}"


    def create_table(self, name: str, schema, **kw):
        """``tidelake.create_table`` at ``name`` on this storage."""
        import tidelake

        return tidelake.create_table(self.location(name), schema, storage_options=self.options, **kw)

    def fresh(self, prefix: str = "t") -> str:
        """A location no other table of this test uses (for hypothesis examples)."""
        return self.location(f"{prefix}-{uuid.uuid4().hex[:12]}")

    def copy_in(self, src: pathlib.Path, name: str) -> str:
        """Copy the local table directory ``src`` (e.g. a fixture) to ``name``; its location."""
        dst = self.location(name)
        if self.kind == "local":
            shutil.copytree(src, dst)
        else:
            files = TableFiles(dst, self.options)
            for p in src.rglob("*"):
                if p.is_file():
                    files.write(str(p.relative_to(src)), p.read_bytes())
        return dst


class TableFiles:
    """The files under a table location (local path or ``s3://`` URL with tidelake storage
    options), named by their path relative to it."""

    def __init__(self, location: str | os.PathLike[str], options: dict[str, str] | None = None) -> None:
        self.location = str(location)
        self._s3 = None
        if self.location.startswith("s3://"):
            import boto3

            o = options or {}
            bucket, _, prefix = self.location[len("s3://"):].partition("/")
            self._bucket, self._prefix = bucket, prefix.rstrip("/") + "/"
            self._s3 = boto3.client("s3", endpoint_url=o["aws_endpoint"], aws_access_key_id=o["aws_access_key_id"],
                                    aws_secret_access_key=o["aws_secret_access_key"], region_name=o["aws_region"])

    @classmethod
    def of(cls, table) -> "TableFiles":
        """The files of a ``tidelake.Table``."""
        return cls(table.path, table.storage_options)

    def names(self) -> set[str]:
        """Every file, by relative path."""
        if self._s3 is None:
            root = pathlib.Path(self.location)
            return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
        pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=self._prefix)
        return {o["Key"][len(self._prefix):] for page in pages for o in page.get("Contents", [])}

    def read(self, rel: str) -> bytes:
        if self._s3 is None:
            return (pathlib.Path(self.location) / rel).read_bytes()
        return self._s3.get_object(Bucket=self._bucket, Key=self._prefix + rel)["Body"].read()

    def write(self, rel: str, data: bytes) -> None:
        if self._s3 is None:
            path = pathlib.Path(self.location) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        else:
            self._s3.put_object(Bucket=self._bucket, Key=self._prefix + rel, Body=data)

    def delete(self, rel: str) -> None:
        if self._s3 is None:
            (pathlib.Path(self.location) / rel).unlink()
        else:
            self._s3.delete_object(Bucket=self._bucket, Key=self._prefix + rel)


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path) -> Storage:
    """Run a test on local storage and on the S3 server."""
    if request.param == "local":
        return Storage("local", str(tmp_path), None)
    server = request.getfixturevalue("s3_server")
    return Storage("s3", f"s3://{server.new_bucket()}/wh", server.options)
