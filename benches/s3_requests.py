"""Object-store requests of one benchmarked operation, counted on a real S3 API: moto's server
(started as the S3 tests start it, ``tests/_s3.py``) and its request recorder
(``/moto-api/recorder/{reset,start,stop,download}-recording``: while recording is on, the
server appends every request but the recorder's own to a JSON-lines file).

The benchmarks build their tables locally (Paimon tables hold relative paths), copy them to a
bucket with :meth:`S3Bench.upload`, and run the measured operation in a child process on the
``s3://`` URL, which brackets exactly that operation with :meth:`Recording.start` and
:meth:`Recording.stop`.

Invariant: a count covers exactly the requests received between ``start`` and ``stop``. Kinds:
GET, HEAD, PUT, LIST (one ``ListObjects`` page), DELETE (one ``DeleteObject``, or one
``DeleteObjects`` batch request, whose keys are counted apart as ``deleted_keys``), and any
other method by its name. Each request is also counted by what it touches in the table (the
first path component under the table: ``snapshot``, ``manifest``, ``schema``...; ``data`` for
anything under a ``bucket-N`` directory; manifest lists, index manifests and the
``LATEST``/``EARLIEST`` hints apart), and ``repeat_gets`` counts the GETs of a key already read
in the same recording (ranged reads of one file included).
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import json
import os
import pathlib
import sys
import tempfile
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

KINDS = ("GET", "HEAD", "LIST", "PUT", "DELETE")


class S3Bench:
    """A moto server with its recorder writing to ``recording``, and one bucket."""

    def __init__(self, server: Any, recording: pathlib.Path) -> None:
        self.server = server
        self.recording = recording
        self.bucket = server.new_bucket()
        self._client = server.client()

    @property
    def options(self) -> dict[str, str]:
        """tidelake's storage options for the server."""
        return self.server.options

    def upload(self, src: pathlib.Path, keep: Callable[[str], bool] = lambda rel: True) -> str:
        """Copy the files of the local table ``src`` whose relative path ``keep`` accepts (never
        the benchmarks' ``_*.json`` markers) to a fresh prefix; the table's ``s3://`` URL."""
        prefix = f"{src.name}-{uuid.uuid4().hex[:8]}"
        files = [p for p in src.rglob("*") if p.is_file()]
        rels = [str(p.relative_to(src)) for p in files]
        todo = [(p, rel) for p, rel in zip(files, rels) if keep(rel) and not (rel.startswith("_")
                                                                               and rel.endswith(".json"))]

        def put(item: tuple[pathlib.Path, str]) -> None:
            self._client.put_object(Bucket=self.bucket, Key=f"{prefix}/{item[1]}", Body=item[0].read_bytes())

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(put, todo))
        return f"s3://{self.bucket}/{prefix}"

    def table(self, name: str) -> str:
        """The ``s3://`` URL of a fresh table location in the bucket."""
        return f"s3://{self.bucket}/{name}-{uuid.uuid4().hex[:8]}"

    def download(self, table: str, dst: pathlib.Path, keep: Callable[[str], bool] = lambda rel: True) -> None:
        """Copy the files of the table at ``table`` whose relative path ``keep`` accepts to ``dst``."""
        prefix = table[len(f"s3://{self.bucket}/"):].rstrip("/") + "/"
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for key in (o["Key"] for page in pages for o in page.get("Contents", [])):
            rel = key[len(prefix):]
            if keep(rel):
                (dst / rel).parent.mkdir(parents=True, exist_ok=True)
                (dst / rel).write_bytes(self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read())


@contextlib.contextmanager
def s3_bench() -> Iterator[S3Bench]:
    """A moto server on 127.0.0.1 with its recorder's file in a temporary directory."""
    from _s3 import moto_server

    with tempfile.TemporaryDirectory(prefix="moto-recording-") as tmp:
        recording = pathlib.Path(tmp) / "recording.jsonl"
        with moto_server({"MOTO_RECORDER_FILEPATH": str(recording)}) as server:
            yield S3Bench(server, recording)


def metadata(rel: str) -> bool:
    """Whether a table-relative path is table metadata (not under a ``bucket-N`` directory)."""
    return not any(part.startswith("bucket-") for part in rel.split("/"))


def category(rel: str) -> str:
    """What a table-relative path (or listed prefix) is, for the per-target counts."""
    if not metadata(rel):
        return "data"
    first, _, rest = rel.partition("/")
    name = rest.rsplit("/", 1)[-1]
    if first == "snapshot" and name in ("LATEST", "EARLIEST"):
        return "hint"
    if first == "manifest":
        return ("manifest list" if name.startswith("manifest-list-") else "index manifest"
                if name.startswith("index-manifest-") else "manifest")
    return first or "(table root)"


def entries(recording: str) -> Iterator[dict[str, Any]]:
    """The requests of a recording. Its server's threads each append an entry then a newline
    as two writes, so concurrent requests can leave ``{a}{b}`` on one line and the newlines
    after: entries are read as consecutive JSON values, not lines."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(recording) and recording[at].isspace():
            at += 1
        if at == len(recording):
            return
        entry, at = decoder.raw_decode(recording, at)
        yield entry


class Recording:
    """The recorder of the moto server at ``endpoint``, counting the requests on the table at
    ``table`` (an ``s3://bucket/prefix`` URL)."""

    def __init__(self, endpoint: str, table: str) -> None:
        self.endpoint = endpoint
        bucket, _, prefix = table[len("s3://"):].partition("/")
        self.bucket, self.prefix = bucket, prefix.rstrip("/") + "/"

    def _call(self, action: str) -> bytes:
        req = urllib.request.Request(f"{self.endpoint}/moto-api/recorder/{action}", data=b"", method="POST")
        with urllib.request.urlopen(req) as resp:
            return resp.read()

    def start(self) -> None:
        """Drop what was recorded before and record from now."""
        self._call("reset-recording")
        self._call("start-recording")

    def stop(self) -> dict[str, Any]:
        """Stop recording; the counts of the requests since :meth:`start` (see the module doc)."""
        self._call("stop-recording")
        return self.count(entries(self._call("download-recording").decode()))

    def _rel(self, key: str) -> str:
        return key[len(self.prefix):] if key.startswith(self.prefix) else key

    def count(self, entries: Any) -> dict[str, Any]:
        kinds: collections.Counter[str] = collections.Counter()
        targets: collections.Counter[str] = collections.Counter()
        gets: collections.Counter[str] = collections.Counter()
        deleted = 0
        for e in entries:
            url = urllib.parse.urlsplit(e["url"])
            query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            bucket, _, key = urllib.parse.unquote(url.path).lstrip("/").partition("/")
            method = e["method"]
            if method == "GET" and not key:
                kind, rel = "LIST", self._rel(query.get("prefix", [""])[0])
            elif method == "POST" and "delete" in query:
                body = e.get("body") or ""
                text = base64.b64decode(body).decode() if e.get("body_encoded") else body
                kind, rel = "DELETE", self._rel(text.split("<Key>", 1)[1].split("</Key>", 1)[0]) \
                    if "<Key>" in text else ""
                deleted += text.count("<Key>")
            else:
                kind, rel = method, self._rel(key)
                deleted += kind == "DELETE"
            kinds[kind] += 1
            targets[f"{kind} {category(rel)}"] += 1
            if kind == "GET":
                gets[rel] += 1
        return {"requests": sum(kinds.values()), "kinds": dict(kinds), "targets": dict(sorted(targets.items())),
                "repeat_gets": sum(n - 1 for n in gets.values()), "deleted_keys": deleted}


def child_options() -> tuple[Recording | None, dict[str, str] | None]:
    """In a measured child process: the recording and storage options its parent passed in
    ``TIDELAKE_BENCH_S3`` (JSON ``{"table", "endpoint", "options"}``), or ``(None, None)`` for
    a local table."""
    spec = os.environ.get("TIDELAKE_BENCH_S3")
    if not spec:
        return None, None
    s3 = json.loads(spec)
    return Recording(s3["endpoint"], s3["table"]), s3["options"]


def child_env(bench: S3Bench, table: str) -> dict[str, str]:
    """The environment of a child measuring ``table`` on ``bench`` (see :func:`child_options`)."""
    return {**os.environ, "TIDELAKE_BENCH_S3": json.dumps({"table": table, "endpoint": bench.server.endpoint,
                                                           "options": bench.options})}


def summary(counts: dict[str, Any]) -> str:
    """``12 (9 GET, 2 LIST, 1 HEAD)``: the total and each kind, for a Markdown cell."""
    kinds = counts["kinds"]
    order = [k for k in KINDS if k in kinds] + sorted(k for k in kinds if k not in KINDS)
    return f"{counts['requests']:,} ({', '.join(f'{kinds[k]:,} {k}' for k in order)})"


def request_growth(counts: dict[str, Any], first: dict[str, Any]) -> str:
    """Total requests against the smallest size's, e.g. ``3.1x``."""
    return f"{counts['requests'] / max(1, first['requests']):.1f}x"
