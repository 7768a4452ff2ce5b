"""Faults between tidelake and the moto S3 server of ``_s3.py``, from two maintained proxies that
``make fault-proxies`` installs and this module starts once per test session on 127.0.0.1:

* Shopify's toxiproxy (``TIDELAKE_TOXIPROXY``, built from the Go module proxy) for TCP faults:
  :meth:`TcpFaults.toxic` adds a toxic (latency, a stalled connection, a reset, data cut off after
  some bytes, ...) through toxiproxy's HTTP API for the duration of a ``with`` block, on every
  connection or on a share of them (``toxicity``);
* Debian's nginx as a reverse proxy for HTTP faults: :meth:`HttpFaults.responding` answers a share
  of the requests (picked at random by ``split_clients`` on the request id, optionally only those
  whose URI matches a regular expression) with an error status, an optional ``Retry-After`` and
  body, for the duration of a ``with`` block (the configuration is rewritten and nginx reloaded);
  :meth:`HttpFaults.refusing` answers requests signed with given access keys with 403, as S3 does
  for a revoked key; its access log counts what reached the proxy, with the access key that signed
  each request (:class:`Tally`).

Both forward to the same moto server, so a table created through the plain endpoint is opened
through a faulty one by swapping ``aws_endpoint`` in its storage options
(:meth:`FaultProxies.options`), and checked through the plain one afterwards.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from _s3 import S3Server, _free_port, _wait_for_port

NGINX = "/usr/sbin/nginx"


@dataclass
class TcpFaults:
    """One toxiproxy proxy in front of the S3 server (see the module docs)."""

    api: str
    endpoint: str
    proxy: str = "s3"

    def _call(self, method: str, path: str, body: dict | None = None) -> None:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.api + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    @contextlib.contextmanager
    def toxic(self, kind: str, *, stream: str = "downstream", toxicity: float = 1.0,
              **attributes: int) -> Iterator[None]:
        """Toxic ``kind`` (toxiproxy's names: ``latency``, ``timeout``, ``reset_peer``,
        ``limit_data``, ``slicer``, ``bandwidth``, ...) with ``attributes`` on the ``stream``
        (``downstream``: server to tidelake, ``upstream``: tidelake to server) of a ``toxicity``
        share of the connections, removed on exit."""
        name = f"{kind}-{uuid.uuid4().hex[:8]}"
        self._call("POST", f"/proxies/{self.proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes})
        try:
            yield
        finally:
            self._call("DELETE", f"/proxies/{self.proxy}/toxics/{name}")

    def reset(self) -> None:
        """Remove every toxic (after a test that failed inside a ``with``)."""
        self._call("POST", "/reset")


@dataclass
class Tally:
    """The requests that reached the HTTP proxy during a :meth:`HttpFaults.responding` or
    :meth:`HttpFaults.refusing` block: ``(status, method, uri)`` in order, and the access key that
    signed each (``-``: none), filled in on exit."""

    requests: list[tuple[int, str, str]] = field(default_factory=list)
    signers: list[str] = field(default_factory=list)

    def faulted(self, status: int) -> int:
        return sum(1 for s, _, _ in self.requests if s == status)


@dataclass
class HttpFaults:
    """nginx in front of the S3 server (see the module docs)."""

    endpoint: str
    port: int
    upstream_port: int
    directory: pathlib.Path
    proc: subprocess.Popen | None = None
    generation: int = 0

    @property
    def _access_log(self) -> pathlib.Path:
        return self.directory / "access.log"

    def _config(self, fault: str, share: float, path: str | None, refused: tuple[str, ...]) -> str:
        d = self.directory
        refused_keys = " ".join(f'"{k}" 1;' for k in refused)
        chosen = "* 1;" if share >= 1 else '* "";' if share <= 0 else f'{share * 100:.2f}% 1; * "";'
        on_path = 'default 1;' if path is None else f'default 0; "~{path}" 1;'
        return f"""
worker_processes 1;
# a reload's old worker ends even while a connection an earlier test left open is mid-request
worker_shutdown_timeout 2s;
pid {d}/nginx.pid;
error_log {d}/error.log error;
events {{ worker_connections 1024; }}
http {{
    map $http_authorization $signer {{ default "-"; "~Credential=(?<key>[^/]+)/" $key; }}
    map $signer $refused {{ default ""; {refused_keys} }}
    log_format requests '$status $request_method $request_uri $signer';
    access_log {d}/access.log requests;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    client_max_body_size 0;
    keepalive_requests 1000000;
    default_type application/xml;
    split_clients "${{request_id}}" $chosen {{ {chosen} }}
    map $request_uri $on_path {{ {on_path} }}
    map "$chosen$on_path" $fault {{ "11" 1; default ""; }}
    upstream moto {{ server 127.0.0.1:{self.upstream_port}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{self.port};
        location = /__generation {{ return 200 "{self.generation}"; }}
        location / {{
            if ($refused) {{ return 403 '<Error><Code>InvalidAccessKeyId</Code></Error>'; }}
            if ($fault) {{ {fault} }}
            proxy_pass http://moto;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
            proxy_buffering off;
        }}
    }}
}}
"""

    def _write(self, fault: str = "return 500;", share: float = 0.0, path: str | None = None,
               refused: tuple[str, ...] = ()) -> pathlib.Path:
        conf = self.directory / "nginx.conf"
        conf.write_text(self._config(fault, share, path, refused))
        return conf

    def _apply(self, fault: str = "return 500;", share: float = 0.0, path: str | None = None,
               refused: tuple[str, ...] = ()) -> None:
        """Rewrite the configuration and reload nginx; returns once the new one answers."""
        assert self.proc is not None
        self.generation += 1
        self._write(fault, share, path, refused)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while True:
            # until the new worker answers and the old one is gone (both accept while it drains)
            with contextlib.suppress(OSError, http.client.HTTPException):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/__generation")
                if conn.getresponse().read().decode() == str(self.generation) and self._workers() == 1:
                    return
            assert self.proc.poll() is None, (self.directory / "error.log").read_text()
            assert time.monotonic() < deadline, "nginx did not take its new configuration"
            time.sleep(0.02)

    def _workers(self) -> int:
        """How many worker processes the nginx master has."""
        assert self.proc is not None
        count = 0
        for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    count += 1
        return count

    @contextlib.contextmanager
    def responding(self, status: int, *, share: float = 1.0, retry_after: int | None = None,
                   body: str = "", path: str | None = None) -> Iterator[Tally]:
        """Answer a ``share`` of the requests (those whose URI matches the regular expression
        ``path``, if given) with ``status``, ``Retry-After: retry_after`` and ``body`` instead of
        forwarding them; the :class:`Tally` of every request is filled in on exit."""
        header = "" if retry_after is None else f"add_header Retry-After {retry_after} always; "
        with self._tallied(lambda: self._apply(f"{header}return {status} '{body}';", share, path)) as tally:
            yield tally

    @contextlib.contextmanager
    def refusing(self, *keys: str) -> Iterator[Tally]:
        """Answer every request signed with one of the access keys ``keys`` with 403
        ``InvalidAccessKeyId`` (a revoked key) instead of forwarding it (none: forward all); the
        :class:`Tally` of every request is filled in on exit."""
        with self._tallied(lambda: self._apply(refused=keys)) as tally:
            yield tally

    @contextlib.contextmanager
    def _tallied(self, configure) -> Iterator[Tally]:
        """Apply a configuration (``configure``), and the plain one on exit, counting requests."""
        configure()
        start = self._access_log.stat().st_size if self._access_log.exists() else 0
        tally = Tally()
        try:
            yield tally
        finally:
            self._apply()
            with open(self._access_log, "rb") as log:
                log.seek(start)
                for line in log.read().decode().splitlines():
                    code, method, uri, signer = line.split(" ", 3)
                    if uri != "/__generation":
                        tally.requests.append((int(code), method, uri))
                        tally.signers.append(signer)


@dataclass
class FaultProxies:
    server: S3Server
    tcp: TcpFaults
    http: HttpFaults

    def options(self, endpoint: str, **client: str) -> dict[str, str]:
        """Storage options reaching the S3 server through ``endpoint`` (``self.tcp.endpoint`` or
        ``self.http.endpoint``), plus ``client`` options (retries, timeouts)."""
        return {**self.server.options, "aws_endpoint": endpoint, **client}


@contextlib.contextmanager
def toxiproxy(upstream_port: int) -> Iterator[TcpFaults]:
    binary = os.environ.get("TIDELAKE_TOXIPROXY", os.path.expanduser("~/.cache/tidelake/toxiproxy-2.12.0/server"))
    assert os.access(binary, os.X_OK), f"toxiproxy is not installed at {binary} (make fault-proxies installs it)"
    api_port, listen = _free_port(), _free_port()
    log = open(os.devnull, "w")
    proc = subprocess.Popen([binary, "-host", "127.0.0.1", "-port", str(api_port), "-seed", "34"],
                            stdout=log, stderr=log)
    try:
        _wait_for_port(api_port, proc, "toxiproxy")
        faults = TcpFaults(f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{listen}")
        faults._call("POST", "/proxies", {"name": faults.proxy, "listen": f"127.0.0.1:{listen}",
                                          "upstream": f"127.0.0.1:{upstream_port}"})
        yield faults
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@contextlib.contextmanager
def nginx(upstream_port: int) -> Iterator[HttpFaults]:
    assert os.access(NGINX, os.X_OK), "nginx is not installed (make fault-proxies installs it)"
    directory = pathlib.Path(tempfile.mkdtemp(prefix="tidelake-nginx-"))
    port = _free_port()
    faults = HttpFaults(f"http://127.0.0.1:{port}", port, upstream_port, directory)
    try:
        conf = faults._write()
        command = [NGINX, "-p", str(directory), "-c", str(conf), "-e", str(directory / "error.log"),
                   "-g", "daemon off;"]
        faults.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_port(port, faults.proc, "nginx")
        yield faults
    finally:
        if faults.proc is not None:
            faults.proc.terminate()
            faults.proc.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def fault_proxies(s3_server: S3Server) -> Iterator[FaultProxies]:
    """toxiproxy and nginx in front of the session's S3 server (see the module docs)."""
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with toxiproxy(port) as tcp, nginx(port) as web:
        yield FaultProxies(s3_server, tcp, web)


@pytest.fixture
def faults(fault_proxies: FaultProxies) -> Iterator[FaultProxies]:
    """The session's proxies, every toxic removed after the test."""
    yield fault_proxies
    fault_proxies.tcp.reset()
