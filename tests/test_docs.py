"""The docs site (``mkdocs.yml``, pages in ``docs/``): every page's code runs as written, and
the site builds with ``mkdocs build --strict`` (what ``make docs`` runs) without a warning.

The convention every page follows, so that a page is its own test:

* every ```` ```python```` block runs, in page order, in one namespace per page, with a fresh
  empty temporary directory as the working directory (blocks create the tables they use);
* every ```` ```sh```` block holds only ``tidelake ...`` command lines (blank lines and ``#``
  comments allowed), run in order by click's ``CliRunner`` in that same directory after the
  python blocks above it; each must exit 0;
* blocks fenced ```` ```text```` or ```` ```console```` are output or transcripts, not run;
* a block of any other language (or none) fails :func:`test_every_block_is_run_or_output`.

A line ``--8<-- "path"`` (pymdownx.snippets, as the site renders it) stands for the file at
``path`` from the repository root, ``--8<-- "path:name"`` for its lines between the markers
``--8<-- [start:name]`` and ``--8<-- [end:name]``, so included text follows the convention too.

Pages that need services (Spark, an S3 server, a Kafka broker) get them from the fixtures of
``conftest.py`` through :data:`SERVICE_PAGES`: what a reader has at hand (a Spark session, a
DataFrame, an S3 endpoint, messages) is put in the page's namespace before it runs, and what
the page did is checked after it.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RUN = {"python", "sh"}
OUTPUT = {"text", "console"}
_FENCE = re.compile(r"^```(\S*)\n(.*?)^```[ \t]*$", re.M | re.S)
_SNIPPET = re.compile(r'^--8<-- "([^":]+)(?::([\w-]+))?"[ \t]*$', re.M)


def pages() -> list[str]:
    """Every page of the site, relative to ``docs/``."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))


def _snippet(path: str, section: str | None) -> str:
    text = (ROOT / path).read_text()
    if section is None:
        return text
    start = re.search(rf"^.*--8<-- \[start:{section}\].*\n", text, re.M)
    end = re.search(rf"^.*--8<-- \[end:{section}\]", text, re.M)
    assert start and end, f"no section {section} in {path}"
    return text[start.end():end.start()]


def page_text(page: str) -> str:
    """The page as the site renders it: snippet lines replaced by the text they name."""
    return _SNIPPET.sub(lambda m: _snippet(m.group(1), m.group(2)), (DOCS / page).read_text())


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # the page line of the block's first code line


def blocks(page: str) -> list[Block]:
    text = page_text(page)
    found = [Block(m.group(1), m.group(2), text.count("\n", 0, m.start(2)) + 1) for m in _FENCE.finditer(text)]
    fences = len(re.findall(r"^[ \t]*```", text, re.M))
    assert fences == 2 * len(found), f"docs/{page}: a fence that is indented or not closed"
    return found


@dataclass
class Ran:
    """What running a page gave: its namespace and each command line with its output."""

    ns: dict[str, Any]
    commands: list[tuple[str, str]] = field(default_factory=list)


def run_page(page: str, ns: dict[str, Any], edit: Callable[[str], str] = lambda code: code) -> Ran:
    """Run the page's blocks in order (the working directory is the caller's); ``edit`` rewrites
    each block's code first (a service's real address for the one the page shows)."""
    from click.testing import CliRunner

    from tidelake import cli

    ran = Ran(ns)
    for block in blocks(page):
        code = edit(block.code)
        if block.lang == "python":
            exec(compile("\n" * (block.line - 1) + code, str(DOCS / page), "exec"), ns)
        elif block.lang == "sh":
            for line in code.splitlines():
                args = shlex.split(line, comments=True)
                if not args:
                    continue
                assert args[0] == "tidelake", f"docs/{page}: not a tidelake command: {line}"
                result = CliRunner().invoke(cli.main, args[1:], prog_name="tidelake")
                assert result.exit_code == 0, (f"docs/{page}", line, result.output, result.exception)
                ran.commands.append((line, result.stdout))
    return ran


def test_every_block_is_run_or_output():
    for page in pages():
        for block in blocks(page):
            assert block.lang in RUN | OUTPUT, \
                f"docs/{page}:{block.line}: ```{block.lang}: neither run (python, sh) nor output (text, console)"
            if block.lang == "sh":
                commands = [shlex.split(line, comments=True) for line in block.code.splitlines()]
                assert all(not args or args[0] == "tidelake" for args in commands), \
                    f"docs/{page}:{block.line}: a sh block holds only tidelake command lines"


def test_site_builds_without_warnings(tmp_path):
    """``make docs``: the strict build (a warning fails it) of every page and link."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about MkDocs 2
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "WARNING" not in out.stderr, out.stderr
    assert (tmp_path / "site" / "index.html").exists()


# Pages run on their own (no service) with the checks of what they did, if any.

def _check_getting_started(ran: Ran, tmp_path: pathlib.Path) -> None:
    import tidelake

    t = tidelake.open_table("warehouse/shop.db/orders")
    # main fast-forwarded to branch dev (made from tag monday): tuesday's tag went with its history
    assert t.to_arrow().num_rows > 0 and {tag.name for tag in t.tags()} == {"monday"}
    assert "dev" not in t.branches()
    assert tidelake.open_table("lake/stock").to_arrow().num_rows == 3   # row-level changes


def _check_cli(ran: Ran, tmp_path: pathlib.Path) -> None:
    cat = next(out for line, out in ran.commands if line.startswith("tidelake cat "))
    assert cat.splitlines()[-1] == "(2 rows)"  # ids 2 and 3: qty >= 50 in eu


CHECKS: dict[str, Callable[[Ran, pathlib.Path], None]] = {
    "getting-started.md": _check_getting_started,
    "cli.md": _check_cli,
}


# Pages that need services: what a reader has at hand before the page, and the checks after it.

def _storage(s3_server, monkeypatch, tmp_path) -> tuple[dict, Callable[[str], str], Callable[[Ran], None]]:
    import pyarrow as pa

    import tidelake

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    s3 = s3_server.client()
    if "lake" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket="lake")
        lake = tidelake.Catalog("s3://lake", storage_options=s3_server.options)
        lake.create_database("shop")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.string(), nullable=False),
                            ("qty", pa.int32())])
        lake.create_table("shop.orders", schema, primary_keys=["id", "day"], partition_keys=["day"])

    def check(ran: Ran) -> None:
        assert ran.ns["t"].path == "s3://lake/shop.db/orders"
        assert ran.ns["t"].to_arrow().num_rows == 0

    return {}, lambda code: code.replace("http://127.0.0.1:9000", s3_server.endpoint), check


def _orders(tmp_path: pathlib.Path):
    """The table a Spark or CDC reader already has: some orders, by key and day."""
    import pyarrow as pa

    import tidelake

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("day", pa.string(), nullable=False),
                        ("qty", pa.int32()), ("region", pa.string())])
    rows = pa.table({"id": [1, 2, 3], "day": ["2026-11-22", "2026-11-22", "2026-11-23"], "qty": [10, 60, 75],
                     "region": ["eu", "us", "eu"]}, schema=schema)
    return tidelake.write_table(str(tmp_path / "orders"), rows, primary_keys=["id", "day"], partition_by=["day"],
                                bucket=4)


def _finish_streams(spark, before: set[str], started: int) -> None:
    """Let the ``started`` streaming queries the page started (those not in ``before``, the ids
    active before it) process what they have, fail on any error, and stop them."""
    queries = [q for q in spark.streams.active if q.id not in before]
    try:
        assert len(queries) == started, [q.name for q in queries]
        for query in queries:
            query.processAllAvailable()
            assert query.exception() is None
    finally:
        for query in queries:
            query.stop()


def _spark(spark, monkeypatch, tmp_path):
    import pyarrow as pa

    import tidelake

    orders = _orders(tmp_path)
    spark.createDataFrame([(9, "2026-11-23", 4)], "id long, dt string, qty int").createOrReplaceTempView("staging")
    totals_path = str(tmp_path / "totals")
    tidelake.create_table(totals_path, pa.schema([pa.field("day", pa.string(), nullable=False), ("qty", pa.int64())]),
                          primary_keys=["day"], bucket=1)
    active = {q.id for q in spark.streams.active}
    given = {"spark": spark, "path": orders.path, "df": spark.createDataFrame(orders.to_pandas()),
             "new_path": str(tmp_path / "new_orders"), "wh": str(tmp_path / "wh"), "chk": str(tmp_path / "chk"),
             "chk2": str(tmp_path / "chk2"), "totals_path": totals_path}

    def check(ran: Ran) -> None:
        _finish_streams(spark, active, 2)
        expected = orders.to_arrow().group_by("day").aggregate([("qty", "sum")])
        got = {r["day"]: r["qty"] for r in tidelake.open_table(totals_path).to_arrow().to_pylist()}
        assert got == {r["day"]: r["qty_sum"] for r in expected.to_pylist()}
        assert tidelake.open_table(str(tmp_path / "wh" / "db.db" / "orders")).to_arrow().num_rows == 1
        assert orders.snapshots()[-1].commit_kind == "COMPACT"   # tidelake.spark.compact

    return given, lambda code: code, check


def _debezium(op: str, before: dict | None, after: dict | None) -> str:
    return json.dumps({"op": op, "before": before, "after": after,
                       "source": {"db": "inventory", "table": "customers"}})


def _cdc(spark, kafka, monkeypatch, tmp_path):
    import tidelake

    changes = [("c", None, {"id": 1, "name": "ann"}), ("c", None, {"id": 2, "name": "bob"}),
               ("u", {"id": 1, "name": "ann"}, {"id": 1, "name": "anne"}), ("d", {"id": 2, "name": "bob"}, None)]
    # (key, value) pairs as a Kafka topic holds them: the key names the primary key
    messages = [(json.dumps({"id": (after or before)["id"]}), _debezium(op, before, after))
                for op, before, after in changes]
    stream_dir = tmp_path / "cdc-in"
    stream_dir.mkdir()
    (stream_dir / "part-0.json").write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in messages))
    catalog = tidelake.Catalog("warehouse")
    catalog.create_database("ods")
    topic = f"dbserver1.inventory.{tmp_path.name}"  # one topic per run: the page reads from the earliest offset
    kafka.create_topic(topic)
    kafka.produce(topic, [(k.encode(), v.encode()) for k, v in messages])
    active = {q.id for q in spark.streams.active}
    given = {"spark": spark, "catalog": catalog, "messages": messages, "batch_id": 1, "warehouse": "warehouse",
             "stream": spark.readStream.schema("key string, value string").json(str(stream_dir)),
             "chk": str(tmp_path / "chk-cdc"), "kafka_chk": str(tmp_path / "chk-kafka")}

    def check(ran: Ran) -> None:
        _finish_streams(spark, active, 2)
        # cdc.sync's table in the catalog, and the table the file stream's and the Kafka stream's
        # cdc_sink write the same messages into
        for table in (catalog.get_table("ods.inventory_customers"),
                      tidelake.Catalog("warehouse").get_table("inventory.customers")):
            assert table.to_arrow().to_pylist() == [{"id": 1, "name": "anne"}], table.path

    def edit(code: str) -> str:
        return code.replace("broker:9092", kafka.bootstrap).replace('"dbserver1.inventory"', repr(topic))

    return given, edit, check


SERVICE_PAGES: dict[str, tuple[tuple[str, ...], Callable[..., Any]]] = {
    "storage.md": (("s3_server",), _storage),
    "spark.md": (("spark",), _spark),
    "cdc.md": (("spark", "kafka"), _cdc),
}
"""page -> (the fixtures it needs, a function of them (and monkeypatch, tmp_path) returning the
names given to the page, an edit of its code, and the checks after it)."""


def test_service_pages_exist():
    assert set(SERVICE_PAGES) <= set(pages())
    assert set(CHECKS) <= set(pages())


@pytest.mark.parametrize("page", [p for p in pages() if p not in SERVICE_PAGES])
def test_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = run_page(page, {"__name__": "docs"})
    if page in CHECKS:
        CHECKS[page](ran, tmp_path)


@pytest.mark.parametrize("page", sorted(SERVICE_PAGES))
def test_service_page_runs(page, request, tmp_path, monkeypatch):
    fixtures, setup = SERVICE_PAGES[page]
    services = [request.getfixturevalue(name) for name in fixtures]
    work = tmp_path / "work"  # the page's directory; what is given lives beside it
    work.mkdir()
    monkeypatch.chdir(work)
    given, edit, check = setup(*services, monkeypatch, tmp_path)
    ran = run_page(page, {"__name__": "docs", **given}, edit)
    check(ran)


def test_cli_reference_lists_every_command():
    import click

    from tidelake import cli

    table = page_text("cli.md")
    missing = [name for name, command in cli.main.commands.items() if f"`{name} " not in table]
    assert not missing, f"commands missing from docs/cli.md's command table: {missing}"
    for name, group in cli.main.commands.items():
        if isinstance(group, click.Group):
            listed = re.search(rf"`{name} \[([a-z|\\-]+)\]", table)
            assert listed and set(listed.group(1).replace("\\", "").split("|")) == set(group.commands), name
