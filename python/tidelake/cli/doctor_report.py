"""``tidelake doctor --html FILE`` / ``--png FILE``: the diagnosis as charts (matplotlib, the
``doctor`` extra): data files per bucket and LSM level, the file-size histogram against the
small-file limit and target-file-size, sorted runs per bucket against the compaction and stop
triggers, and the snapshot timeline. The HTML page is self-contained (inline SVG, no script)."""

from __future__ import annotations

import html
import io
from collections import Counter
from typing import Any

from .. import exceptions as exc
from ._format import _fmt_time, _human_bytes

_MAX_BARS = 60
"""Buckets shown in the per-bucket charts (the busiest ones when there are more)."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise exc.UnsupportedError(f"doctor charts need matplotlib ({e}): pip install 'tidelake[doctor]'") from None
    return plt


def _bucket_label(b: dict[str, Any]) -> str:
    return f"{b['partition']}/{b['bucket']}" if b["partition"] != "-" else str(b["bucket"])


def _busiest(buckets: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    if len(buckets) <= _MAX_BARS:
        return buckets
    keep = sorted(buckets, key=lambda b: b[key], reverse=True)[:_MAX_BARS]
    return [b for b in buckets if any(b is k for k in keep)]


def _files_by_level(ax: Any, d: dict[str, Any], files: list[dict[str, Any]]) -> None:
    buckets = _busiest(d["buckets"], "files")
    index = {(b["partition"], b["bucket"]): i for i, b in enumerate(buckets)}
    counts: Counter[tuple[int, int]] = Counter()
    for f in files:
        i = index.get((f["partition_text"], f["bucket"]))
        if i is not None:
            counts[(f["level"], i)] += 1
    bottom = [0] * len(buckets)
    for level in sorted({lv for lv, _ in counts}):
        heights = [counts[(level, i)] for i in range(len(buckets))]
        ax.bar(range(len(buckets)), heights, bottom=bottom, label=f"level {level}")
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(buckets)), [_bucket_label(b) for b in buckets], rotation=90, fontsize=7)
    ax.set_title("data files per bucket and level" + (" (busiest buckets)" if len(buckets) < len(d["buckets"]) else ""))
    ax.set_ylabel("files")
    if counts:
        ax.legend(fontsize=7)


def _size_histogram(ax: Any, d: dict[str, Any], files: list[dict[str, Any]]) -> None:
    sizes = [max(1, f["file_size_in_bytes"]) for f in files]
    small, target = d["thresholds"]["small_file_bytes"], d["target_file_size"]
    if sizes:
        low, high = min(sizes + [small]), max(sizes + [target])
        edges = [low * (high / low) ** (i / 30) for i in range(31)] if high > low else [low, low * 2]
        ax.hist(sizes, bins=edges, color="#4c72b0")
        ax.set_xscale("log")
    ax.axvline(small, color="#dd8452", linestyle="--", label=f"small (< {_human_bytes(small)})")
    ax.axvline(target, color="#55a868", linestyle="--", label=f"target-file-size {_human_bytes(target)}")
    ax.set_title("data file sizes")
    ax.set_xlabel("bytes (log scale)")
    ax.set_ylabel("files")
    ax.legend(fontsize=7)


def _sorted_runs(ax: Any, d: dict[str, Any]) -> None:
    buckets = _busiest(d["buckets"], "sorted_runs")
    runs = [b["sorted_runs"] for b in buckets]
    trigger, stop = d["thresholds"]["compaction_trigger"], d["thresholds"]["stop_trigger"]
    colors = ["#c44e52" if r > stop else "#dd8452" if r > trigger else "#4c72b0" for r in runs]
    ax.bar(range(len(buckets)), runs, color=colors)
    if d["kind"] == "primary-key":
        ax.axhline(trigger, color="#dd8452", linestyle="--", label=f"compaction trigger ({trigger})")
        ax.axhline(stop, color="#c44e52", linestyle="--", label=f"stop trigger ({stop})")
        ax.legend(fontsize=7)
    ax.set_xticks(range(len(buckets)), [_bucket_label(b) for b in buckets], rotation=90, fontsize=7)
    ax.set_title("sorted runs per bucket")
    ax.set_ylabel("runs")


def _timeline(ax: Any, snapshots: list[dict[str, Any]]) -> None:
    import datetime as _dt

    kinds = sorted({s["commit_kind"] for s in snapshots})
    for kind in kinds:
        points = [s for s in snapshots if s["commit_kind"] == kind]
        ax.scatter([_dt.datetime.fromtimestamp(s["time_millis"] / 1000, tz=_dt.timezone.utc) for s in points],
                   [s["total_record_count"] or 0 for s in points], s=12, label=kind)
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_title("snapshots: records over time (UTC)")
    ax.set_ylabel("records")
    if kinds:
        ax.legend(fontsize=7)


def _figures(d: dict[str, Any], files: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> list[Any]:
    plt = _pyplot()
    out = []
    for draw in (lambda ax: _files_by_level(ax, d, files), lambda ax: _size_histogram(ax, d, files),
                 lambda ax: _sorted_runs(ax, d), lambda ax: _timeline(ax, snapshots)):
        fig, ax = plt.subplots(figsize=(9, 4))
        draw(ax)
        fig.tight_layout()
        out.append(fig)
    return out


def write_png(target: str, d: dict[str, Any], files: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> None:
    """The four charts in one PNG image (2 x 2)."""
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(16, 9))
    _files_by_level(axes[0][0], d, files)
    _size_histogram(axes[0][1], d, files)
    _sorted_runs(axes[1][0], d)
    _timeline(axes[1][1], snapshots)
    fig.suptitle(f"{d['path']}: {d['verdict']}")
    fig.tight_layout()
    fig.savefig(target, format="png", dpi=100)
    plt.close(fig)


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
th{background:#f3f3f3}.OK{color:#2a7d2a}.WARN{color:#b36b00}.BAD{color:#b00020}
code{background:#f3f3f3;padding:.1em .3em}.charts svg{max-width:100%;height:auto;display:block;margin:1em 0}"""


def write_html(target: str, d: dict[str, Any], files: list[dict[str, Any]], snapshots: list[dict[str, Any]]) -> None:
    """A self-contained HTML page: verdict, reasons, suggested commands, summary, per-bucket
    table and the charts."""
    summary = [["snapshots", d["snapshots"]], ["manifest files", d["manifests"]],
               ["planning a read", f"{d['planning_seconds']:.3f} s"], ["data files", d["files"]],
               ["small data files", f"{d['small_files']} ({d['small_file_share']:.0%})"],
               ["partitions", d["partitions"]], ["buckets per partition", d["buckets_per_partition"]]]
    if d["orphan_files"] is not None:
        summary.append(["orphan files (older than 1d)", f"{d['orphan_files']} ({_human_bytes(d['orphan_bytes'])})"])
    if snapshots:
        summary.append(["last commit", _fmt_time(snapshots[-1]["time_millis"])])
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>tidelake doctor: {html.escape(d['path'])}</title>"
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(d['path'])}</h1><p>{html.escape(d['kind'])} table</p>",
        f"<h2>verdict: <span class='{d['verdict']}'>{d['verdict']}</span></h2>",
        "<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in d["reasons"]) + "</ul>" if d["reasons"] else "",
        ("<h3>suggested</h3>" + "".join(f"<p><code>{html.escape(s)}</code></p>" for s in d["suggestions"]))
        if d["suggestions"] else "",
        _table(["", ""], summary),
        "<div class='charts'>" + "".join(_svg(f) for f in _figures(d, files, snapshots)) + "</div>",
        "<h2>buckets</h2>",
        _table(["partition", "bucket", "files", "level-0", "runs", "small", "rows", "size"],
               [[b["partition"], b["bucket"], b["files"], b["level0_files"], b["sorted_runs"], b["small_files"],
                 b["rows"], _human_bytes(b["bytes"])] for b in d["buckets"]]),
        "</body></html>",
    ]
    with open(target, "w", encoding="utf-8") as out:
        out.write("\n".join(parts))
