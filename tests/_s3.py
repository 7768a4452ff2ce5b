"""A real S3-compatible server for the tests: moto's server mode (pinned in requirements-dev.txt),
started once per test session as a subprocess on 127.0.0.1, plus one fresh bucket per test.

moto honours ``If-None-Match: *`` on PutObject (412 PreconditionFailed when the key exists), which
is what tidelake's snapshot commits rely on; ``test_s3.py`` checks it directly.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    @property
    def options(self) -> dict[str, str]:
        """Storage options for tidelake (object_store configuration keys)."""
        return {"aws_endpoint": self.endpoint, "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
                "aws_region": "us-east-1", "allow_http": "true"}

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


@pytest.fixture(scope="session")
def s3_server():
    port = _free_port()
    log = open(os.devnull, "w")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert proc.poll() is None, "moto server exited"
            assert time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.1)
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@dataclass(frozen=True)
class Storage:
    """Where a test puts its tables: a local directory or a bucket prefix."""

    kind: str
    root: str
    options: dict[str, str] | None

    def location(self, name: str) -> str:
        return f"{self.root}/{name}"


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path) -> Storage:
    """Run a test on local storage and on the S3 server."""
    if request.param == "local":
        return Storage("local", str(tmp_path), None)
    server = request.getfixturevalue("s3_server")
    return Storage("s3", f"s3://{server.new_bucket()}/wh", server.options)
