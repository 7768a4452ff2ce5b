"""``tidelake ui PATH``: a local, read-only web page (Flask, the ``ui`` extra) over a table or
every table of a warehouse, database or catalog: the snapshot timeline with commit kinds and
sizes (:meth:`Table.history`), each bucket's sorted runs and levels, small-file and compaction
debt (``doctor``'s diagnosis) and the jobs ``maintain`` would run (:func:`tidelake.maintain.plan`).

Invariants: every route is a GET and only reads (no commit, no file written or deleted: the
orphan listings are dry runs, the maintenance plan only plans); each request re-reads the
table, so a reload shows new commits; the page is self-contained (inline CSS and SVG, no
script, nothing fetched from the network), its charts drawn by the Jinja templates from the
geometry computed here.
"""

from __future__ import annotations

import webbrowser
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import click

from .. import exceptions as exc
from .. import maintain as autopilot
from ..catalog import Catalog
from ..table import Table
from ._app import _PATH, _catalog, _guarded, _open, main
from ._format import _fmt_time, _human_bytes
from .doctor import _diagnose
from .doctor_report import _busiest
from .inspect import _catalog_of, _table_line

if TYPE_CHECKING:
    import flask

KIND_COLORS = {"APPEND": "#4c72b0", "COMPACT": "#dd8452", "OVERWRITE": "#c44e52", "ANALYZE": "#8172b3"}
"""Colour of each commit kind in the snapshot timeline (others: :data:`OTHER_KIND_COLOR`)."""
OTHER_KIND_COLOR = "#937860"
LEVEL_COLORS = ["#f2c14e", "#a6d96a", "#66bd63", "#1a9850", "#3288bd", "#5e4fa2"]
"""Colour of the sorted runs of LSM level 0, 1, ...; the last one for the levels beyond."""


def _kind_color(kind: str) -> str:
    return KIND_COLORS.get(kind, OTHER_KIND_COLOR)


_MAX_SNAPSHOTS_SHOWN = 200
"""The newest snapshots drawn in the timeline and listed."""
_MAX_RUNS_SHOWN = 40
"""Sorted runs drawn per bucket (the rest counted)."""

# The timeline's SVG coordinates (viewBox): plot area and the axis between added and removed.
_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 1000, 260, 70, 990, 20, 230
_AXIS = (_TOP + _BOTTOM) // 2


def _timeline(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The snapshot timeline chart: one slot per snapshot (oldest left), a bar up for the bytes
    its commit added and one down for those it removed, coloured by commit kind."""
    shown = history[-_MAX_SNAPSHOTS_SHOWN:]
    peak = max([1, *(h["bytes_added"] for h in shown), *(h["bytes_removed"] for h in shown)])
    half = _AXIS - _TOP
    slot = (_RIGHT - _LEFT) / max(1, len(shown))
    bars, ticks = [], []
    every = max(1, len(shown) // 10)
    for i, h in enumerate(shown):
        x = round(_LEFT + i * slot + slot * 0.1)
        width = max(1, round(slot * 0.8))
        color = _kind_color(h["commit_kind"])
        title = (f"snapshot {h['snapshot_id']} {h['commit_kind']}: +{h['files_added']} files "
                 f"({_human_bytes(h['bytes_added'])}), -{h['files_removed']} files "
                 f"({_human_bytes(h['bytes_removed'])})")
        for value, up in ((h["bytes_added"], True), (h["bytes_removed"], False)):
            if value:
                height = max(1, round(value / peak * half))
                bars.append({"x": x, "y": _AXIS - height if up else _AXIS, "width": width, "height": height,
                             "color": color, "title": title, "snapshot": h["snapshot_id"]})
        if i % every == 0 or i == len(shown) - 1:
            ticks.append({"x": x + width / 2, "label": h["snapshot_id"]})
    kinds = sorted({h["commit_kind"] for h in shown})
    return {"width": _WIDTH, "height": _HEIGHT, "left": _LEFT, "right": _RIGHT, "top": _TOP, "bottom": _BOTTOM,
            "axis": _AXIS, "bars": bars, "ticks": ticks, "peak": _human_bytes(peak),
            "hidden": len(history) - len(shown),
            "legend": [{"kind": k, "color": _kind_color(k)} for k in kinds]}


def _runs(files: list[dict[str, Any]], buckets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each bucket's sorted runs, as the LSM tree holds them: every level-0 file is a run (newest
    first), then one run per non-empty level >= 1 with its files. ``files`` are the ``files``
    system table's rows after :func:`~tidelake.cli.doctor._diagnose` (``partition_text``)."""
    by_bucket: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for f in files:
        by_bucket[(f["partition_text"], f["bucket"])].append(f)
    out = []
    for b in buckets:
        level0 = sorted((f for f in by_bucket[(b["partition"], b["bucket"])] if f["level"] == 0),
                        key=lambda f: f["max_sequence_number"] or 0, reverse=True)
        runs = [{"level": 0, "files": 1, "rows": f["record_count"], "bytes": f["file_size_in_bytes"]} for f in level0]
        levels: dict[int, dict[str, Any]] = {}
        for f in by_bucket[(b["partition"], b["bucket"])]:
            if f["level"] > 0:
                run = levels.setdefault(f["level"], {"level": f["level"], "files": 0, "rows": 0, "bytes": 0})
                run["files"] += 1
                run["rows"] += f["record_count"]
                run["bytes"] += f["file_size_in_bytes"]
        runs += [levels[level] for level in sorted(levels)]
        for run in runs:
            run["color"] = LEVEL_COLORS[min(run["level"], len(LEVEL_COLORS) - 1)]
        out.append({**b, "runs": runs[:_MAX_RUNS_SHOWN], "more_runs": max(0, len(runs) - _MAX_RUNS_SHOWN)})
    return out


def _debt(d: dict[str, Any], files: list[dict[str, Any]]) -> dict[str, Any]:
    """Small-file and compaction debt from the diagnosis: the small files and their bytes, and
    the buckets (and sorted runs) beyond the compaction and stop triggers."""
    small_limit = d["thresholds"]["small_file_bytes"]
    trigger, stop = d["thresholds"]["compaction_trigger"], d["thresholds"]["stop_trigger"]
    lsm = d["kind"] == "primary-key"
    return {
        "small_files": d["small_files"], "small_file_share": d["small_file_share"], "small_limit": small_limit,
        "small_bytes": sum(f["file_size_in_bytes"] for f in files if f["file_size_in_bytes"] < small_limit),
        "lsm": lsm, "trigger": trigger, "stop": stop,
        "over_trigger": sum(b["sorted_runs"] > trigger for b in d["buckets"]) if lsm else 0,
        "over_stop": sum(b["sorted_runs"] > stop for b in d["buckets"]) if lsm else 0,
        "excess_runs": sum(max(0, b["sorted_runs"] - trigger) for b in d["buckets"]) if lsm else 0,
    }


def _plan(t: Table, name: str, policy: autopilot.Policy) -> autopilot.MaintenancePlan:
    """What ``tidelake maintain`` would do to ``t`` (``name``: its ``db.table`` or path; the
    policy's per-table overrides name either)."""
    return autopilot.plan(t, policy=policy.for_table(name, t.path))


def _table_view(t: Table, name: str, policy: autopilot.Policy) -> dict[str, Any]:
    """Everything the table page shows; a damaged table (newest snapshot unreadable or lacking
    files) shows its damage instead, as ``doctor`` does."""
    view: dict[str, Any] = {"name": name, "path": t.path, "kind": "primary-key" if t.primary_keys else "append",
                            "primary_keys": t.primary_keys, "partition_keys": t.partition_keys, "branch": t.branch}
    damage = t.find_damage()
    if damage["problems"]:
        return {**view, "damage": damage}
    files = t.system("files").to_pylist()
    d = _diagnose(t, t.path, True, files)
    history = t.history().to_pylist()
    shown = _busiest(d["buckets"], "sorted_runs")
    return {**view, "damage": None, "diagnosis": d, "debt": _debt(d, files), "plan": _plan(t, name, policy),
            "timeline": _timeline(history), "history": history[::-1][:_MAX_SNAPSHOTS_SHOWN],
            "buckets": _runs(files, shown), "hidden_buckets": len(d["buckets"]) - len(shown)}


def app(source: Table | Catalog, *, name: str | None = None, databases: list[str] | None = None,
        policy: autopilot.Policy | None = None) -> flask.Flask:
    """The read-only web application over ``source``: one table (its page at ``/``, titled
    ``name``, default its path), or the tables of a catalog (``databases``, default all: the
    list at ``/``, each table's page at ``/table/<db.table>``). The maintenance shown is
    :func:`tidelake.maintain.plan`'s under ``policy`` (default: :class:`~tidelake.maintain.Policy`'s).
    Every route is a GET. Needs Flask (``pip install 'tidelake[ui]'``)."""
    try:
        import flask
    except ImportError as e:
        raise exc.UnsupportedError(f"tidelake ui needs Flask ({e}): pip install 'tidelake[ui]'") from None

    policy = policy or autopilot.Policy()
    web = flask.Flask(__name__, static_folder=None, template_folder="ui_templates")
    web.jinja_env.filters["bytes"] = _human_bytes
    web.jinja_env.filters["utc"] = _fmt_time
    web.jinja_env.globals["kind_color"] = _kind_color

    @web.errorhandler(exc.TidelakeError)
    def _error(e: exc.TidelakeError) -> tuple[str, int]:
        status = 404 if isinstance(e, exc.TableNotFoundError) else 500
        return flask.render_template("error.html", error=e, kind=type(e).__name__), status

    if isinstance(source, Table):
        table, title = source, name or source.path

        @web.get("/")
        def table_page() -> str:
            return flask.render_template("table.html", t=_table_view(table.refresh(), title, policy), home=None)

        return web

    catalog = source

    @web.get("/")
    def index() -> str:
        names = databases if databases is not None else catalog.list_databases()
        tables = [_table_line(catalog, f"{db}.{table}") for db in names for table in catalog.list_tables(db)]
        for line in tables:
            line["jobs"] = _plan(catalog.get_table(line["table"]), line["table"], policy).jobs
        return flask.render_template("index.html", warehouse=catalog.warehouse, tables=tables)

    @web.get("/table/<identifier>")
    def catalog_table_page(identifier: str) -> str:
        if databases is not None and identifier.partition(".")[0] not in databases:
            raise exc.TableNotFoundError(f"table {identifier} is not in database(s) {', '.join(databases)}")
        view = _table_view(catalog.get_table(identifier), identifier, policy)
        return flask.render_template("table.html", t=view, home=flask.url_for("index"))

    return web


def _app_of(path: str, policy: autopilot.Policy | None) -> flask.Flask:
    """The application over what PATH names, as the other commands read it: a table (or, with
    ``--catalog``, the table ``db.table`` or the database ``db`` of that catalog), else a
    database directory or warehouse."""
    catalog = _catalog()
    if catalog is not None and "." not in path:
        if path not in catalog.list_databases():
            raise exc.TableNotFoundError(f"no database {path!r} in the catalog")
        return app(catalog, databases=[path], policy=policy)
    try:
        t = _open(path)
    except exc.TableNotFoundError:
        found = None if catalog is not None else _catalog_of(path)
        if found is None:
            raise
        _, catalog, names = found
        return app(catalog, databases=names, policy=policy)
    return app(t, name=path if catalog is not None else None, policy=policy)


@main.command(short_help="Browse tables in a local, read-only web page.")
@_PATH
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port to listen on; 0 picks a free one.")
@click.option("--policy", "policy_file", metavar="FILE", type=click.Path(exists=True, dir_okay=False),
              help="The maintain policy file (.toml or .json) whose plan the page shows (as `maintain --policy`).")
@click.option("--open/--no-open", "open_browser", default=False, show_default=True,
              help="Open the page in the default web browser.")
@_guarded
def ui(path: str, host: str, port: int, policy_file: str | None, open_browser: bool) -> None:
    """Serve a read-only web page over PATH, a table, or a database directory or warehouse (all
    its tables; with --catalog: db.table or a database name), and print its URL. The page shows
    the snapshot timeline (bytes each commit added and removed, by commit kind), each bucket's
    sorted runs and LSM levels, small-file and compaction debt, doctor's verdict and the jobs
    `tidelake maintain` would run (its --dry-run plan). Nothing is changed; each reload re-reads
    the tables. Needs Flask (pip install 'tidelake[ui]'); stop with Ctrl-C."""
    web = _app_of(path, autopilot.Policy.from_file(policy_file) if policy_file else None)
    from werkzeug.serving import make_server  # Flask's server library, there when app() found Flask

    server = make_server(host, port, web)
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{server.server_port}/"
    click.echo(f"tidelake ui: {path} at {url} (read-only; Ctrl-C stops)")
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
