"""``tidelake ui``: the read-only web page, served by the real command in a subprocess and
rendered by a real headless browser (Debian's Chromium, ``make chromium``): the rendered DOM
names the tables, snapshots, commit kinds, each bucket's levels and maintain's jobs of a table
with a known history; the screenshot shows the timeline's bars in the commit kinds' colours; no
route changes a file."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from PIL import Image

import tidelake
from tidelake import cli, maintain
from tidelake import exceptions as exc
from tidelake.cli import ui

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])
KINDS = ["APPEND", "APPEND", "COMPACT", "APPEND", "APPEND", "APPEND", "APPEND"]


def _write(t: tidelake.Table, low: int, high: int) -> None:
    t.write(pa.table({"k": list(range(low, high)), "v": ["x"] * (high - low)}, schema=SCHEMA))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """Warehouse ``shop``: ``orders`` (primary key, 2 buckets, no compaction by the writers):
    two appends, a full compaction, four appends (each bucket: 4 level-0 runs over one compacted
    level, above the compaction trigger 3), plus an orphan file two days old; ``events``
    (append-only, one commit)."""
    c = tidelake.Catalog(tmp_path / "wh")
    c.create_database("shop")
    t = c.create_table("shop.orders", SCHEMA, primary_keys=["k"],
                       options={"bucket": "2", "write-only": "true", "num-sorted-run.compaction-trigger": "3"})
    _write(t, 0, 40)
    _write(t, 20, 60)
    t.compact(full=True)
    for i in range(4):
        _write(t, i * 10, i * 10 + 30)
    orphan = Path(t.path) / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"left by a crashed writer")
    two_days_ago = time.time() - 2 * 86400
    os.utime(orphan, (two_days_ago, two_days_ago))
    events = c.create_table("shop.events", pa.schema([("id", pa.int64())]))
    events.write(pa.table({"id": [1, 2, 3]}))
    return tmp_path / "wh"


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


class _Node:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag, self.attrs = tag, attrs
        self.children: list[_Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str | None = None, **attrs: str) -> list[_Node]:
        """Descendants with ``tag`` and the attributes (``None``: present with any value)."""
        out = []
        for c in self.children:
            if isinstance(c, _Node):
                if (tag is None or c.tag == tag) and all(
                        k in c.attrs and (v is None or c.attrs[k] == v) for k, v in attrs.items()):
                    out.append(c)
                out.extend(c.find_all(tag, **attrs))
        return out


class _Tree(HTMLParser):
    """The serialized DOM as a tree (the browser's output is well-formed: end tags for every
    non-void element)."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.root = _Node("#document", {})
        self.stack = [self.root]
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = _Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(_Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def _by_id(dom: _Node, element_id: str) -> _Node:
    found = dom.find_all(id=element_id)
    assert len(found) == 1, element_id
    return found[0]


@contextlib.contextmanager
def _serve(*args: str) -> Iterator[str]:
    """``tidelake ARGS --port 0`` (``ui ...``) in a subprocess: the URL it prints."""
    proc = subprocess.Popen([sys.executable, "-m", "tidelake.cli", *args, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("tidelake ui: ") and " at http://127.0.0.1:" in line, (line, proc.stderr.read())
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def server(warehouse: Path) -> Iterator[str]:
    with _serve("ui", str(warehouse)) as url:
        yield url


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode()


def _chromium(tmp_path: Path, *args: str) -> str:
    binary = shutil.which("chromium")
    assert binary, "Chromium is not installed (make chromium installs Debian's package)"
    out = subprocess.run([binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'chromium-profile'}", *args],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _bars(image: np.ndarray, colour: str) -> list[tuple[int, int, int, int]]:
    """The bars of ``colour`` in a screenshot, left to right: (left, right, top, bottom) of each
    run of adjacent pixel columns holding more than 30 pixels of it (a legend swatch holds 14)."""
    mask = (image == [int(colour[i:i + 2], 16) for i in (1, 3, 5)]).all(axis=2)
    columns = np.flatnonzero(mask.sum(axis=0) > 30)
    bars = []
    for run in np.split(columns, np.flatnonzero(np.diff(columns) > 1) + 1) if len(columns) else []:
        rows = np.flatnonzero(mask[:, run[0]:run[-1] + 1].any(axis=1))
        bars.append((int(run[0]), int(run[-1]), int(rows[0]), int(rows[-1])))
    return bars


def test_the_page_in_a_browser(warehouse: Path, server: str, tmp_path: Path):
    before = _files(warehouse)
    c = tidelake.Catalog(warehouse)
    orders = c.get_table("shop.orders")
    jobs = maintain.plan(orders).jobs
    assert {j.kind for j in jobs} == {"compact", "remove-orphans"}

    index = _Tree(_chromium(tmp_path, "--dump-dom", server)).root
    rows = {r.attrs["data-table"]: r for r in index.find_all("tr", **{"data-table": None})}
    assert set(rows) == {"shop.orders", "shop.events"}
    assert [s.text() for s in rows["shop.orders"].find_all("span", **{"class": "job"})] == [j.kind for j in jobs]
    assert "nothing" in rows["shop.events"].text()
    links = [a.attrs["href"] for a in index.find_all("a")]
    assert "/table/shop.orders" in links and "/table/shop.events" in links

    page = _Tree(_chromium(tmp_path, "--dump-dom", server + "table/shop.orders")).root
    assert _by_id(page, "table-name").text() == "shop.orders"
    assert _by_id(page, "verdict").text() == "WARN"
    snapshots = page.find_all("tr", **{"data-snapshot": None})
    assert [int(s.attrs["data-snapshot"]) for s in snapshots] == list(range(7, 0, -1))
    assert [s.find_all("td")[2].text() for s in snapshots] == KINDS[::-1]
    rects = page.find_all("rect", **{"class": "bar"})
    assert {int(r.attrs["data-snapshot"]) for r in rects} == set(range(1, 8))
    for r in rects:
        assert r.attrs["fill"] == ui.KIND_COLORS[KINDS[int(r.attrs["data-snapshot"]) - 1]]
    assert sum(r.attrs["data-snapshot"] == "3" for r in rects) == 2  # the compaction added and removed

    levels: dict[int, list[int]] = {0: [], 1: []}
    for f in orders.system("files").to_pylist():
        levels[f["bucket"]].append(f["level"])
    for bucket, found in levels.items():
        row = page.find_all("tr", **{"data-bucket": f"-/{bucket}"})
        assert len(row) == 1
        runs = [int(r.attrs["data-level"]) for r in row[0].find_all("span", **{"class": "run"})]
        assert runs == [0] * found.count(0) + sorted({lv for lv in found if lv > 0}) == [0, 0, 0, 0, 3]
    assert _by_id(page, "over-trigger").text() == "2"
    assert _by_id(page, "excess-runs").text() == "4"  # 5 runs in each bucket, trigger 3

    job_rows = _by_id(page, "jobs").find_all("tr", **{"data-job": None})
    assert [(r.attrs["data-job"], r.find_all("td")[1].text()) for r in job_rows] == [(j.kind, j.reason) for j in jobs]

    shot = tmp_path / "page.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,900", server + "table/shop.orders")
    with Image.open(shot) as im:
        assert im.size == (1280, 900)
        image = np.asarray(im.convert("RGB"))
    bars = {kind: _bars(image, ui.KIND_COLORS[kind]) for kind in ("APPEND", "COMPACT")}
    assert len(bars["APPEND"]) == 6 and len(bars["COMPACT"]) == 1, bars
    # One bar per snapshot, in snapshot order, of one width, the commits' sizes alike (~2 KiB).
    drawn = sorted((bar, kind) for kind in bars for bar in bars[kind])
    assert [kind for _, kind in drawn] == KINDS
    widths = [right - left for (left, right, _, _), _ in drawn]
    assert max(widths) - min(widths) <= 2 and min(widths) > 60
    lefts = [left for (left, _, _, _), _ in drawn]
    assert lefts[-1] - lefts[0] > 600  # spread across the chart
    tops = [top for (_, _, top, _), _ in drawn]
    assert max(tops) - min(tops) < 20
    # Only the compaction's bar goes below the axis: the bytes it removed.
    (_, _, _, compact_bottom), = bars["COMPACT"]
    assert compact_bottom > max(bottom for _, _, _, bottom in bars["APPEND"]) + 50

    assert _files(warehouse) == before  # nothing written, nothing deleted: the orphan is still there


def test_every_route_only_reads_and_fetches_nothing(warehouse: Path):
    for source in (tidelake.Catalog(warehouse), tidelake.open_table(warehouse / "shop.db" / "orders")):
        web = ui.app(source)
        assert all(rule.methods <= {"GET", "HEAD", "OPTIONS"} for rule in web.url_map.iter_rules())
        client = web.test_client()
        paths = ["/"] + (["/table/shop.orders", "/table/shop.events"] if isinstance(source, tidelake.Catalog) else [])
        before = _files(warehouse)
        for path in paths:
            response = client.get(path)
            assert response.status_code == 200, path
            page = response.get_data(as_text=True)  # self-contained: nothing to fetch, no script
            assert not any(tag in page for tag in ("<script", "<link", "<img", "<iframe", " src=", "url(")), path
            for method in (client.post, client.put, client.delete):
                assert method(path).status_code == 405
        assert _files(warehouse) == before


def test_a_reload_shows_new_commits(warehouse: Path):
    events = tidelake.open_table(warehouse / "shop.db" / "events")
    for client, path in ((ui.app(events).test_client(), "/"),
                         (ui.app(tidelake.Catalog(warehouse)).test_client(), "/table/shop.events")):
        newest = events.latest_snapshot().id
        assert f'data-snapshot="{newest + 1}"' not in client.get(path).get_data(as_text=True)
        events.write(pa.table({"id": [newest + 10]}))
        assert f'data-snapshot="{newest + 1}"' in client.get(path).get_data(as_text=True)


def test_one_table_a_database_and_what_is_not_there(warehouse: Path, tmp_path: Path):
    one = ui.app(tidelake.open_table(warehouse / "shop.db" / "events")).test_client().get("/")
    assert one.status_code == 200
    text = one.get_data(as_text=True)
    assert 'id="table-name"' in text and 'id="jobs">nothing to do' in text and 'data-snapshot="1"' in text

    shop = ui.app(tidelake.Catalog(warehouse), databases=["shop"]).test_client()
    assert shop.get("/table/shop.nope").status_code == 404
    assert "TableNotFoundError" in shop.get("/table/shop.nope").get_data(as_text=True)
    other = ui.app(tidelake.Catalog(warehouse), databases=["other"]).test_client()
    assert other.get("/table/shop.orders").status_code == 404

    result = CliRunner().invoke(cli.main, ["ui", str(tmp_path / "nothing-here")])
    assert result.exit_code == 3 and result.stderr.startswith("error: ")


def test_the_command_on_a_table_and_on_a_catalog_database(warehouse: Path):
    with _serve("ui", str(warehouse / "shop.db" / "orders")) as url:
        page = _get(url)
        assert '<h1 id="table-name">' + str(warehouse / "shop.db" / "orders") in page and 'data-job="compact"' in page
    with _serve("-c", f"warehouse={warehouse}", "ui", "shop") as url:
        assert 'data-table="shop.orders"' in _get(url) and 'data-table="shop.events"' in _get(url)
        assert 'id="table-name">shop.events<' in _get(url + "table/shop.events")
    with _serve("-c", f"warehouse={warehouse}", "ui", "shop.events") as url:
        assert 'id="table-name">shop.events<' in _get(url)


def test_a_damaged_table_shows_its_damage_and_the_way_back(warehouse: Path):
    t = tidelake.open_table(warehouse / "shop.db" / "events")
    t.write(pa.table({"id": [4]}))
    newest = [f["file_path"] for f in t.system("files").to_pylist()]
    os.remove(max(newest, key=os.path.getmtime))
    page = ui.app(t).test_client().get("/").get_data(as_text=True)
    assert 'id="verdict">BAD' in page and "--snapshot 1" in page


def test_without_flask_it_says_what_to_install(warehouse: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "flask", None)
    with pytest.raises(exc.UnsupportedError, match=r"pip install 'tidelake\[ui\]'"):
        ui.app(tidelake.Catalog(warehouse))


def test_the_timeline_shows_the_newest_snapshots_to_scale():
    history = [{"snapshot_id": i, "commit_kind": "APPEND" if i % 2 else "OVERWRITE", "files_added": 1,
                "files_removed": 0, "bytes_added": 100 * i, "bytes_removed": 0} for i in range(1, 251)]
    chart = ui._timeline(history)
    assert chart["hidden"] == 50 and {b["snapshot"] for b in chart["bars"]} == set(range(51, 251))
    newest = chart["bars"][-1]
    assert newest["snapshot"] == 250 and newest["y"] == chart["top"]
    assert newest["height"] == max(b["height"] for b in chart["bars"]) == chart["axis"] - chart["top"]
    assert chart["bars"][0]["height"] == round(5100 / 25000 * (chart["axis"] - chart["top"]))
    assert [k["kind"] for k in chart["legend"]] == ["APPEND", "OVERWRITE"]
