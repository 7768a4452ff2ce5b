"""Marking partitions done (``partition.mark-done-action``), two-way with Java Paimon 1.3.1:
the ``_SUCCESS`` file a batch write with ``partition.end-input-to-done`` leaves in each
partition it wrote (Java: Spark's ``markDoneIfNeeded``, reproduced by the oracle's batch
writes), and the ``mark_partition_done`` procedure through Python, the CLI and
``tidelake.spark.sql``. Markers are compared with Java's byte layout and parsed with Java's
``SuccessFile``; actions tidelake does not implement are refused before anything is written."""

from __future__ import annotations

import json
import pathlib
import re
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write
from _rest import rest_server  # noqa: F401  (a fresh Paimon REST server, a fixture)
from tidelake import cli

OPTIONS = {"bucket": "1", "partition.mark-done-action": "success-file",
           "partition.end-input-to-done": "true"}
FIELDS = [("id", "BIGINT NOT NULL"), ("dt", "STRING NOT NULL"), ("v", "INT")]
SCHEMA = pa.schema([("id", pa.int64(), False), ("dt", pa.string(), False), ("v", pa.int32())])


def _rows(dt: str, n: int = 3) -> pa.Table:
    return pa.table({"id": list(range(n)), "dt": [dt] * n, "v": list(range(n))}, schema=SCHEMA)


def _marker(t: tidelake.Table, partition: str) -> pathlib.Path:
    return pathlib.Path(t.path) / partition / "_SUCCESS"


def _java_marker(java, wh: str, name: str, partition: str) -> dict:
    return java.run({"op": "success_file", "warehouse": wh, "table": f"db.{name}", "partition": partition})


def _layout(text: str) -> str:
    """A marker's bytes with its two times blanked: what must equal Java's."""
    return re.sub(r"\d+", "N", text)


def test_java_marks_tidelake_continues(java, tmp_path):
    """Java writes dt=a (and marks it); tidelake writes dt=b, then dt=a again: its markers have
    Java's bytes, Java's SuccessFile reads them, and rewriting dt=a keeps Java's creation time."""
    wh = str(tmp_path)
    sc = Scenario("md_java", FIELDS, [{"rows": [[1, "a", 1], [2, "a", 2]]}], ["id", "dt"], ["dt"], OPTIONS,
                  mode="batch")
    t = java_write(java, wh, sc)
    java_text = _marker(t, "dt=a").read_text()
    created = _java_marker(java, wh, sc.name, "dt=a")
    assert created["exists"] and created["creationTime"] == created["modificationTime"]
    before = int(time.time() * 1000)
    t.write(_rows("b"))
    ours = _java_marker(java, wh, sc.name, "dt=b")
    assert ours["exists"] and before <= ours["creationTime"] == ours["modificationTime"] <= time.time() * 1000
    assert _layout(_marker(t, "dt=b").read_text()) == _layout(java_text)
    json.loads(_marker(t, "dt=b").read_text())
    time.sleep(0.01)
    t.write(_rows("a", 1))
    again = _java_marker(java, wh, sc.name, "dt=a")
    assert again["creationTime"] == created["creationTime"] < again["modificationTime"]
    compare_read(java, t, wh, "mark-done java->tidelake")


def test_tidelake_marks_java_continues(java, tmp_path):
    """tidelake creates the table and writes dt=a (one-shot write) and dt=b (writer + commit):
    Java reads both markers; Java then writes dt=c into the same table and marks it; the rows
    agree."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.md_ours", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=OPTIONS)
    t.write(_rows("a"))
    w = t.writer()
    w.write(_rows("b"))
    t.commit(w.prepare_commit(), commit_user=w.commit_user)
    w.close()
    for p in ("dt=a", "dt=b"):
        found = _java_marker(java, wh, "md_ours", p)
        assert found["exists"] and found["creationTime"] == found["modificationTime"], (p, found)
    sc = Scenario("md_ours", FIELDS, [{"rows": [[7, "c", 7]]}], ["id", "dt"], ["dt"], OPTIONS, mode="batch")
    java.run({**sc.java_job(wh), "existing": True})
    assert _marker(t, "dt=c").exists()
    compare_read(java, cat.get_table("db.md_ours"), wh, "mark-done tidelake->java")


def test_no_marker_without_end_input_or_for_streaming_commits(tmp_path):
    """Without ``partition.end-input-to-done`` a write marks nothing, and commits with a
    stream identifier (a streaming job: its input does not end) never mark."""
    plain = tidelake.create_table(str(tmp_path / "plain"), SCHEMA, partition_keys=["dt"],
                                  options={"partition.mark-done-action": "success-file"})
    plain.write(_rows("a"))
    assert not _marker(plain, "dt=a").exists()
    t = tidelake.create_table(str(tmp_path / "stream"), SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                              options=OPTIONS)
    w = t.writer()
    w.write(_rows("a"))
    t.commit(w.prepare_commit(), commit_identifier=1, commit_user=w.commit_user)
    w.close()
    assert t.to_arrow().num_rows == 3 and not _marker(t, "dt=a").exists()


def test_mark_partition_done_procedure_python_cli_java(java, tmp_path):
    """``Table.mark_partition_done`` and ``tidelake mark-partition-done`` write the marker Java's
    procedure writes (Java's SuccessFile reads it), keep the creation time of Java's marker and
    refresh its modification time; partial specs and unpartitioned tables are refused."""
    wh = str(tmp_path)
    sc = Scenario("md_proc", FIELDS, [{"rows": [[1, "a", 1]]}], ["id", "dt"], ["dt"],
                  {"bucket": "1", "partition.mark-done-action": "success-file"}, mode="batch")
    t = java_write(java, wh, sc)
    assert not _marker(t, "dt=a").exists()
    t.mark_partition_done([{"dt": "a"}])
    ours = _java_marker(java, wh, sc.name, "dt=a")
    assert ours["exists"] and ours["creationTime"] == ours["modificationTime"]
    time.sleep(0.01)
    java.run({"op": "mark_done", "warehouse": wh, "table": f"db.{sc.name}", "partitions": [{"dt": "a"}]})
    theirs = _java_marker(java, wh, sc.name, "dt=a")
    assert theirs["creationTime"] == ours["creationTime"] < theirs["modificationTime"]
    java.run({"op": "mark_done", "warehouse": wh, "table": f"db.{sc.name}", "partitions": [{"dt": "x"}]})
    time.sleep(0.01)
    result = CliRunner().invoke(cli.main, ["mark-partition-done", t.path, "--partition", "dt=x", "--partition",
                                           "dt=y"], prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "marked dt=x; dt=y done"
    x = _java_marker(java, wh, sc.name, "dt=x")
    assert x["creationTime"] < x["modificationTime"]
    assert _java_marker(java, wh, sc.name, "dt=y")["exists"]
    two = tidelake.create_table(str(tmp_path / "two"), pa.schema([("a", pa.int32()), ("b", pa.int32())]),
                                partition_keys=["a", "b"])
    with pytest.raises(tidelake.InvalidArgumentError, match="'b' is missing"):
        two.mark_partition_done([{"a": 1}])
    flat = tidelake.create_table(str(tmp_path / "flat"), SCHEMA)
    with pytest.raises(tidelake.InvalidArgumentError, match="not partition keys"):
        flat.mark_partition_done([{"dt": "a"}])


def _data_files(t: tidelake.Table) -> list[pathlib.Path]:
    return [f for f in pathlib.Path(t.path).rglob("*") if f.is_file() and "bucket-" in str(f.parent)]


@pytest.mark.parametrize("action", ["done-partition", "success-file,mark-event"])
def test_catalog_actions_on_a_table_opened_by_path_are_refused(java, tmp_path, action):
    """``done-partition`` and ``mark-event`` go through the table's catalog (Java: its
    ``PartitionHandler``, which a table opened by path has not): tidelake refuses writes and
    the procedure on such a table opened by path, naming the option, before committing or
    marking anything, and leaves no file behind."""
    wh = str(tmp_path)
    opts = {**OPTIONS, "partition.mark-done-action": action, "metastore.partitioned-table": "true"}
    sc = Scenario(f"md_refused_{len(action)}", FIELDS, [], ["id", "dt"], ["dt"], opts, mode="batch")
    java.run(sc.java_job(wh))
    t = tidelake.open_table(str(tmp_path / "db.db" / sc.name))
    with pytest.raises(tidelake.UnsupportedError, match="'partition.mark-done-action' asks for '(done-partition|mark-event)'"):
        t.write(_rows("a"))
    with pytest.raises(tidelake.UnsupportedError, match="through its catalog"):
        t.mark_partition_done([{"dt": "a"}])
    assert t.snapshots() == [] and not _marker(t, "dt=a").exists() and _data_files(t) == []


def test_filesystem_catalog_ignores_catalog_actions_as_java(java, tmp_path):
    """Through a filesystem catalog (whose Java ``createPartitions`` / ``markDonePartitions`` do
    nothing) ``mark-event`` is a no-op next to ``success-file``; ``done-partition`` asks for
    ``metastore.partitioned-table`` as Java's ``createPartitionHandler`` does; HTTP reports and
    user classes are refused by name."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    event = cat.create_table("db.event", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={**OPTIONS, "partition.mark-done-action": "success-file,mark-event"})
    event.write(_rows("a"))
    assert _marker(event, "dt=a").exists() and event.to_arrow().num_rows == 3
    java.run({"op": "mark_done", "warehouse": wh, "table": "db.event", "partitions": [{"dt": "b"}]})
    assert _marker(event, "dt=b").exists()
    done = cat.create_table("db.done", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                            options={**OPTIONS, "partition.mark-done-action": "done-partition"})
    with pytest.raises(tidelake.InvalidArgumentError, match="should enable 'metastore.partitioned-table'"):
        done.write(_rows("a"))
    assert done.snapshots() == [] and _data_files(done) == []
    with pytest.raises(Exception, match="metastore.partitioned-table"):
        java.run({"op": "mark_done", "warehouse": wh, "table": "db.done", "partitions": [{"dt": "a"}]})
    with pytest.raises(tidelake.UnsupportedError, match="'custom'"):
        cat.create_table("db.custom", SCHEMA, partition_keys=["dt"],
                         options={"partition.mark-done-action": "success-file,custom"}).write(_rows("a"))


HIVE_OPTIONS = {**OPTIONS, "partition.mark-done-action": "success-file,done-partition,mark-event",
                "metastore.partitioned-table": "true"}


def _hms(java_hive, catalog: dict[str, str], table: str, events: list[dict[str, str]]) -> tuple[list, list]:
    """The metastore's partitions of ``table`` (values, location's last segment) and whether
    each of ``events`` has a load-done event, read by Java's metastore client."""
    answer = java_hive.run({"op": "hms", "catalog": catalog, "table": table, "events": events})
    parts = sorted((p["values"], p["sd"]["location"].rsplit("/", 1)[1]) for p in answer["partitions"])
    return parts, answer["events"]


def test_hive_catalog_marks_as_javas_hive_catalog(hive_metastore, java_hive, tmp_path):
    """Through a Hive catalog, ``success-file,done-partition,mark-event``: Java writes
    ``db.theirs`` and tidelake ``db.ours`` (same options, same batch writes with
    ``partition.end-input-to-done``); the metastore then holds the same partitions for both
    (``dt=a`` and ``dt=a.done`` at ``<table>/dt=a.done``) and the same load-done events, read by
    Java's client. Each engine's ``mark_partition_done`` on the other's table adds the marks the
    other would; both read the same rows."""
    catalog = hive_metastore.catalog_options(tmp_path / "wh")
    cat = tidelake.Catalog.from_options(catalog)
    cat.create_database("db")
    ours = cat.create_table("db.ours", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                            options=HIVE_OPTIONS)
    schema = {"fields": [{"name": n, "type": ty} for n, ty in FIELDS], "primary_keys": ["id", "dt"],
              "partition_keys": ["dt"], "options": HIVE_OPTIONS}
    java_hive.run({"op": "write", "catalog": catalog, "table": "db.theirs", "mode": "batch", "schema": schema,
                   "steps": [{"rows": [[0, "a", 0], [1, "a", 1], [2, "a", 2]]}]})
    ours.write(_rows("a"))
    events = [{"dt": "a"}, {"dt": "b"}]
    expected = ([(["a"], "dt=a"), (["a.done"], "dt=a.done")], [True, False])
    assert _hms(java_hive, catalog, "db.ours", events) == _hms(java_hive, catalog, "db.theirs", events) == expected
    assert _marker(ours, "dt=a").exists()

    # the procedure, each engine on the other's table
    cat.get_table("db.theirs").mark_partition_done([{"dt": "b"}])
    java_hive.run({"op": "mark_done", "catalog": catalog, "table": "db.ours", "partitions": [{"dt": "b"}]})
    expected = ([(["a"], "dt=a"), (["a.done"], "dt=a.done"), (["b.done"], "dt=b.done")], [True, True])
    assert _hms(java_hive, catalog, "db.ours", events) == _hms(java_hive, catalog, "db.theirs", events) == expected
    # marking again is harmless (the done partition exists, the event is recorded again)
    ours.mark_partition_done([{"dt": "b"}])
    assert _hms(java_hive, catalog, "db.ours", events) == expected
    assert cat.get_table("db.theirs").to_arrow().sort_by("id").equals(ours.to_arrow().sort_by("id"))


def test_hive_mark_event_needs_a_metastore_partitioned_table(hive_metastore, java_hive, tmp_path):
    """``mark-event`` on a Hive table whose partitions the metastore does not keep: the
    metastore refuses the event (its table has no partition columns), for Java's procedure and
    tidelake's alike; tidelake's write stands (the mark follows the commit) and the error says
    what the metastore refused."""
    catalog = hive_metastore.catalog_options(tmp_path / "wh")
    cat = tidelake.Catalog.from_options(catalog)
    cat.create_database("db")
    t = cat.create_table("db.flat", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={**OPTIONS, "partition.mark-done-action": "mark-event"})
    with pytest.raises(Exception, match="(?i)partition"):
        java_hive.run({"op": "mark_done", "catalog": catalog, "table": "db.flat", "partitions": [{"dt": "a"}]})
    with pytest.raises(tidelake.InvalidArgumentError, match="markPartitionForEvent"):
        t.write(_rows("a"))
    assert cat.get_table("db.flat").to_arrow().num_rows == 3


def test_rest_catalog_sends_partition_done_events(rest_server, tmp_path):
    """Through Paimon's REST catalog, ``mark-event`` posts Java's ``MarkDonePartitionsRequest``
    to ``.../tables/<t>/partitions/mark`` after each batch write and for the procedure, one
    partition per request as Java's action does; the server accepts them for a
    ``metastore.partitioned-table`` and answers 501 otherwise, which Java ignores, and so does
    tidelake (the write stands)."""
    cat = tidelake.Catalog.from_options(rest_server.options)
    cat.create_database("db")
    options = {**OPTIONS, "partition.mark-done-action": "mark-event"}
    for name, extra in (("kept", {"metastore.partitioned-table": "true"}), ("plain", {})):
        cat.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                         options={**options, **extra})

    def posted(name: str, count: int) -> list[tuple[str, dict]]:
        """The first ``count`` requests to mark partitions of ``name`` the server printed (its
        output is read by a thread: waits for them)."""
        deadline = time.monotonic() + 30
        while True:
            marks = [line.split(" ", 3) for line in rest_server.lines if line.startswith("SERVED-MARK ")]
            found = [(status, json.loads(body)) for _, status, body, path in marks
                     if path.strip().endswith(f"/databases/db/tables/{name}/partitions/mark")]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.01)

    kept = cat.get_table("db.kept")
    kept.write(_rows("a"))
    assert posted("kept", 1) == [("200", {"partitionSpecs": [{"dt": "a"}]})]
    kept.mark_partition_done([{"dt": "b"}, {"dt": "c"}])
    assert posted("kept", 3)[1:] == [("200", {"partitionSpecs": [{"dt": p}]}) for p in "bc"]
    plain = cat.get_table("db.plain")
    plain.write(_rows("a"))
    assert posted("plain", 1) == [("501", {"partitionSpecs": [{"dt": "a"}]})]
    assert cat.get_table("db.plain").to_arrow().num_rows == 3


class _Reports:
    """An HTTP endpoint for ``http-report``: records each POST (content type, JSON body) and
    answers ``{"result": <answer>}``."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.received: list[tuple[str, dict]] = []
        self.answer = "SUCCESS"
        reports = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                reports.received.append((self.headers["Content-Type"], json.loads(body.decode("utf-8"))))
                answer = json.dumps({"result": reports.answer}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/done"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_http_report_as_javas(java, tmp_path):
    """``http-report`` posts Java's report (``params``, ``table``, ``path``, ``partition``) with
    Java's content type, after each batch write and for the procedure: tidelake's requests equal
    Java's for the same table; an answer other than ``SUCCESS`` is an error naming it (the
    write stands); a missing URL is refused before anything commits."""
    reports = _Reports()
    try:
        wh = str(tmp_path)
        opts = {**OPTIONS, "partition.mark-done-action": "success-file,http-report",
                "partition.mark-done-action.http.url": reports.url,
                "partition.mark-done-action.http.params": "team=orders"}
        sc = Scenario("md_http", FIELDS, [{"rows": [[1, "a", 1]]}], ["id", "dt"], ["dt"], opts, mode="batch")
        t = java_write(java, wh, sc)
        java.run({"op": "mark_done", "warehouse": wh, "table": f"db.{sc.name}", "partitions": [{"dt": "b"}]})
        java_reports = list(reports.received)
        reports.received.clear()
        t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
        t.write(_rows("a"))
        t.mark_partition_done([{"dt": "b"}])
        assert reports.received == java_reports
        content_type, body = java_reports[0]
        assert content_type == "text/plain; charset=UTF-8"
        assert body == {"params": "team=orders", "table": f"db.{sc.name}", "path": body["path"], "partition": "dt=a/"}
        assert body["path"].endswith(f"/db.db/{sc.name}") and _marker(t, "dt=a").exists()
        by_path = tidelake.open_table(t.path)
        by_path.mark_partition_done([{"dt": "c"}])
        assert reports.received[-1][1]["table"] == f"db.{sc.name}", "named from the path, as Java does"

        reports.answer = "FAIL"
        with pytest.raises(tidelake.TidelakeError, match="should be 'SUCCESS' but is 'FAIL'"):
            t.write(_rows("d"))
        assert "d" in tidelake.Catalog(wh).get_table(f"db.{sc.name}").to_arrow()["dt"].to_pylist()
        no_url = tidelake.create_table(str(tmp_path / "no_url"), SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                       options={**OPTIONS, "partition.mark-done-action": "http-report"})
        with pytest.raises(tidelake.InvalidArgumentError, match="'partition.mark-done-action.http.url' must be set"):
            no_url.write(_rows("a"))
        assert no_url.snapshots() == [] and _data_files(no_url) == []
    finally:
        reports.server.shutdown()


def test_mark_partition_done_spark_call(spark, tmp_path):
    """``CALL sys.mark_partition_done(table => ..., partitions => 'dt=a;dt=b')`` with Paimon's
    argument names and result column marks each partition."""
    import tidelake.spark

    t = tidelake.create_table(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"],
                              options={"partition.mark-done-action": "success-file"})
    rows = tidelake.spark.sql(spark, f"CALL sys.mark_partition_done(table => '{t.path}', "
                                     "partitions => 'dt=a;dt=b')").collect()
    assert [r.asDict() for r in rows] == [{"result": True}]
    for p in ("dt=a", "dt=b"):
        marker = json.loads(_marker(t, p).read_text())
        assert marker["creationTime"] == marker["modificationTime"] > 0
    with pytest.raises(tidelake.InvalidArgumentError, match="partitions =>"):
        tidelake.spark.sql(spark, f"CALL sys.mark_partition_done(table => '{t.path}')")
