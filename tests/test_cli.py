"""The ``tidelake`` command line, through the real entry points (``python -m tidelake.cli`` and
the installed ``tidelake`` script) and click's CliRunner, on the Paimon fixtures (read-only) and
on tables created in tmp (the maintenance commands)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from click.testing import CliRunner

import tidelake
from conftest import FIXTURES, fixture_tables
from tidelake import cli
from tidelake.expr import to_filter
from tidelake.maintenance import typed_partitions

WAREHOUSE = FIXTURES / "warehouse" / "fx.db"
TT = str(WAREHOUSE / "time_travel")


def run(*args: str, code: int = 0):
    """Invoke the CLI in-process; check the exit code; return the result."""
    result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
    if code != 0:
        assert "Traceback" not in result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert result.stdout == ""
    return result


def run_process(*args: str, code: int = 0, module: bool = True) -> subprocess.CompletedProcess:
    """Run the real entry point in a new process."""
    if module:
        cmd = [sys.executable, "-m", "tidelake.cli", *map(str, args)]
    else:
        cmd = [str(pathlib.Path(sys.executable).with_name("tidelake")), *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    if code != 0:
        assert "Traceback" not in out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    return out


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def json_rows(table: pa.Table) -> list[dict]:
    """What ``cat --json`` prints for ``table``: the CLI's JSON conversion of each row."""
    return [{k: cli._json_value(v) for k, v in row.items()} for row in table.to_pylist()]


def key(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


# ---- the real entry points ---------------------------------------------------------------------


def test_module_entry_point():
    out = run_process("snapshots", TT, "--json")
    assert [s["id"] for s in json.loads(out.stdout)] == [1, 2, 3, 4, 5]
    out = run_process("cat", TT, "--columns", "n,id", "--filter", "n >= 50")
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["n", "id"]
    expected = tidelake.open_table(TT).to_arrow(filter=[("n", ">=", 50)]).num_rows
    assert lines[-1] == f"({expected} rows)"
    assert len(lines) == expected + 3


def test_installed_script():
    out = run_process("tags", TT, module=False)
    assert "first" in out.stdout and "mid" in out.stdout
    out = run_process("--version", module=False)
    assert tidelake.__version__ in out.stdout


def test_entry_point_errors():
    out = run_process("cat", WAREHOUSE / "no_such_table", code=3)
    assert "no_such_table" in out.stderr
    out = run_process("cat", TT, "--filter", "n >=", code=2)
    assert "--filter" in out.stderr
    run_process("cat", TT, "--filter", "nope = 1", code=2)
    run_process("frobnicate", code=2)


# ---- listings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", fixture_tables(), ids=lambda t: t["name"])
def test_snapshots_and_tags(spec):
    path = FIXTURES / spec["path"]
    snaps = json.loads(run("snapshots", path, "--json").stdout)
    assert [s["id"] for s in snaps] == spec["snapshot_ids"]
    assert [s["commit_kind"] for s in snaps] == [s["commit_kind"] for s in spec["snapshots"]]
    assert [s["total_record_count"] for s in snaps] == [s["total_record_count"] for s in spec["snapshots"]]
    human = run("snapshots", path).stdout.splitlines()
    assert human[0].split() == ["id", "schema", "kind", "committed", "total", "delta", "changelog"]
    assert [ln.split()[0] for ln in human[2:-1]] == [str(i) for i in spec["snapshot_ids"]]
    assert human[-1] == f"({len(spec['snapshot_ids'])} snapshots)"

    tags = json.loads(run("tags", path, "--json").stdout)
    expected_tags = {name: t["snapshot_id"] for name, t in spec["expected"]["tags"].items()}
    assert {t["name"]: t["snapshot_id"] for t in tags} == expected_tags
    human = run("tags", path).stdout.splitlines()
    assert {ln.split()[0]: int(ln.split()[1]) for ln in human[2:-1]} == expected_tags


@pytest.mark.parametrize("spec", fixture_tables(), ids=lambda t: t["name"])
def test_schema(spec):
    path = FIXTURES / spec["path"]
    latest = json.loads(run("schema", path, "--json").stdout)
    assert latest["id"] == spec["schema"]["latest_schema_id"]
    assert [f["name"] for f in latest["fields"]] == [f["name"] for f in spec["schema"]["paimon_fields"]]
    assert [f["id"] for f in latest["fields"]] == [f["id"] for f in spec["schema"]["paimon_fields"]]
    assert latest["primary_keys"] == spec["primary_keys"]
    assert latest["partition_keys"] == spec["partition_keys"]
    human = run("schema", path).stdout
    lines = human.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["id", "column", "type"])
    listed = [ln.split()[1] for ln in lines[header + 2: header + 2 + len(latest["fields"])]]
    assert listed == [f["name"] for f in latest["fields"]]
    for key_name, value in spec["options"].items():
        assert any(ln.split() == [key_name, value] for ln in lines), key_name


def test_schema_versions():
    path = WAREHOUSE / "schema_evolution"
    versions = tidelake.open_table(path).schemas()
    assert len(versions) >= 2
    for v in versions:
        got = json.loads(run("schema", path, "--id", v.id, "--json").stdout)
        assert got["id"] == v.id
        assert [f["name"] for f in got["fields"]] == [f["name"] for f in v.fields]
    first = run("schema", path, "--id", versions[0].id).stdout
    assert "(latest)" not in first.splitlines()[0]
    assert "(latest)" in run("schema", path).stdout.splitlines()[0]
    result = run("schema", path, "--id", 99, code=3)
    assert "schema 99" in result.stderr and "0, 1, 2" in result.stderr


def test_schema_nested_types():
    out = run("schema", WAREHOUSE / "all_types").stdout
    assert "ARRAY<INT>" in out
    assert "MAP<STRING NOT NULL, BIGINT>" in out
    assert "ROW<x INT, y STRING, z ROW<q BOOLEAN>>" in out
    assert "ARRAY<ROW<k STRING, vals ARRAY<DOUBLE>>>" in out
    assert "TIMESTAMP(3) WITH LOCAL TIME ZONE" in out


def _split_files(table: tidelake.Table, **kwargs) -> list[dict]:
    return [f for s in table.scan(**kwargs).splits() for f in json.loads(s.payload)["files"]]


@pytest.mark.parametrize("name", ["pk_partitioned", "append_deletion_vectors", "time_travel", "pk_bucket4",
                                  "append_partitioned"])
def test_files(name):
    path = WAREHOUSE / name
    table = tidelake.open_table(path)
    rows = json.loads(run("files", path, "--json").stdout)
    expected = _split_files(table)
    assert sorted(r["file"] for r in rows) == sorted(f["file_name"] for f in expected)
    assert sum(r["rows"] for r in rows) == sum(f["row_count"] for f in expected)
    for r in rows:
        assert (path / r["path"]).stat().st_size == r["size"]
        assert r["path"] == (f"{r['partition']}/" if r["partition"] else "") + f"bucket-{r['bucket']}/{r['file']}"
    human = run("files", path).stdout.splitlines()
    assert human[0].split() == ["partition", "bucket", "file", "level", "rows", "size", "deleted"]
    assert len(human) == len(rows) + 3
    assert human[-1].startswith(f"({len(rows)} files, {sum(r['rows'] for r in rows)} rows")
    if table.partition_keys:
        assert all("=" in r["partition"] for r in rows)
    if name == "append_deletion_vectors":
        assert sum(r["deleted_rows"] or 0 for r in rows) == sum(r["rows"] for r in rows) - table.to_arrow().num_rows


def test_files_time_travel():
    now = json.loads(run("files", TT, "--json").stdout)
    first = json.loads(run("files", TT, "--snapshot", 1, "--json").stdout)
    tagged = json.loads(run("files", TT, "--tag", "first", "--json").stdout)
    assert first == tagged
    assert {r["file"] for r in first} < {r["file"] for r in now}
    assert sum(r["rows"] for r in first) == 8
    run("files", TT, "--snapshot", 42, code=3)
    run("files", TT, "--snapshot", 1, "--tag", "first", code=2)


def test_info():
    d = json.loads(run("info", TT, "--json").stdout)
    assert d["primary_keys"] == ["id"] and [f["name"] for f in d["schema"]] == ["id", "v", "n"]
    assert [s["id"] for s in d["snapshots"]] == [1, 2, 3, 4, 5]
    out = run("info", TT).stdout
    assert "primary keys:   id" in out and "tags: 2" in out


@pytest.mark.parametrize("where", ["database", "warehouse"])
def test_info_lists_the_tables_of_a_database_or_warehouse(where):
    path = WAREHOUSE if where == "database" else WAREHOUSE.parent
    catalog = tidelake.Catalog(WAREHOUSE.parent)
    names = [f"fx.{n}" for n in catalog.list_tables("fx")]
    got = json.loads(run("info", path, "--json").stdout)
    assert got["databases"] == ["fx"]
    assert [d["table"] for d in got["tables"]] == names
    tt = next(d for d in got["tables"] if d["table"] == "fx.time_travel")
    table = tidelake.open_table(TT)
    assert (tt["kind"], tt["primary_keys"], tt["latest_snapshot"], tt["records"]) == (
        "primary-key", ["id"], table.latest_snapshot().id, table.latest_snapshot().total_record_count)
    human = run("info", path).stdout.splitlines()
    assert human[0] == f"{where}: {path}" and human[1] == f"tables: {len(names)}"
    assert [ln.split()[0] for ln in human[4:]] == names
    run("info", WAREHOUSE / "no_such_table", code=3)


# ---- cat ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", fixture_tables(), ids=lambda t: t["name"])
def test_cat_prints_every_row(spec):
    path = FIXTURES / spec["path"]
    expected = tidelake.open_table(path).to_arrow()
    got = jsonl(run("cat", path, "--json").stdout)
    assert sorted(map(key, got)) == sorted(map(key, json_rows(expected)))
    human = run("cat", path).stdout.splitlines()
    assert human[0].split() == expected.column_names if expected.num_rows else True
    assert human[-1] == f"({expected.num_rows} rows)"
    assert len(human) == expected.num_rows + 3


def test_cat_columns_filter_limit():
    table = tidelake.open_table(TT)
    got = jsonl(run("cat", TT, "--columns", "n,id", "--filter", "n >= 20 and v != 'beta' or id in (1, 2)",
                    "--json").stdout)
    expected = table.to_arrow(columns=["n", "id"], filter=[[("n", ">=", 20), ("v", "!=", "beta")],
                                                          [("id", "in", [1, 2])]])
    assert [list(r) for r in got] == [["n", "id"]] * len(got)
    assert sorted(map(key, got)) == sorted(map(key, json_rows(expected)))
    assert 0 < len(got) < table.to_arrow().num_rows

    limited = jsonl(run("cat", TT, "--limit", 3, "--json").stdout)
    assert len(limited) == 3
    assert run("cat", TT, "--limit", 0).stdout.splitlines()[-1] == "(0 rows)"
    assert run("cat", TT, "--limit", 1).stdout.splitlines()[-1] == "(1 row)"
    assert len(jsonl(run("cat", TT, "--limit", 100, "--json").stdout)) == 12


@pytest.mark.parametrize("as_json", [False, True])
def test_cat_prints_rows_as_they_are_read(monkeypatch, as_json):
    """Each batch is printed as it arrives (a large table's first rows show at once): a read
    failing after its first batch has already printed that batch."""
    first = pa.record_batch({"id": [7, 8], "name": ["seven", "eight"]})

    def batches():
        yield first
        raise tidelake.CorruptMetadataError("the second batch is unreadable")

    def to_reader(self, **kwargs):
        return pa.RecordBatchReader.from_batches(first.schema, batches())

    monkeypatch.setattr(tidelake.Table, "to_reader", to_reader)
    result = CliRunner().invoke(cli.main, ["cat", TT, *(["--json"] if as_json else [])], prog_name="tidelake")
    assert result.exit_code == 4, result.output
    if as_json:
        assert jsonl(result.stdout) == [{"id": 7, "name": "seven"}, {"id": 8, "name": "eight"}]
    else:
        assert [ln.split() for ln in result.stdout.splitlines()] == [
            ["id", "name"], ["--", "-----"], ["7", "seven"], ["8", "eight"]]
    assert "second batch is unreadable" in result.stderr


def test_cat_into_a_pipe_closed_early(tmp_path):
    """`tidelake cat big | head -3`: head gets its rows, cat exits quietly when the pipe closes."""
    path = tmp_path / "big"
    t = tidelake.create_table(path, pa.schema([("id", pa.int64()), ("s", pa.string())]))
    for part in range(4):
        ids = pa.array(range(part * 50_000, (part + 1) * 50_000), pa.int64())
        t.write(pa.table({"id": ids, "s": pa.compute.cast(ids, pa.string())}))
    cat = subprocess.Popen([sys.executable, "-m", "tidelake.cli", "cat", str(path)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    assert cat.stdout is not None and cat.stderr is not None
    head = [cat.stdout.readline().decode() for _ in range(3)]
    cat.stdout.close()
    assert cat.wait(timeout=60) == 0
    assert cat.stderr.read() == b""
    assert head[0].split() == ["id", "s"] and len(head[2].split()) == 2


@pytest.mark.parametrize("args,kwargs", [
    (["--snapshot", "2"], {"snapshot_id": 2}),
    (["--tag", "mid"], {"tag": "mid"}),
    (["--timestamp-ms", "1795316026617"], {"timestamp_ms": 1795316026617}),
])
def test_cat_time_travel(args, kwargs):
    table = tidelake.open_table(TT)
    got = jsonl(run("cat", TT, *args, "--json").stdout)
    expected = table.to_arrow(**kwargs)
    assert sorted(map(key, got)) == sorted(map(key, json_rows(expected)))
    assert len(got) != table.to_arrow().num_rows


def test_cat_typed_values():
    path = WAREHOUSE / "pk_types"
    got = jsonl(run("cat", path, "--filter", "k_date = 2024-01-02 and k_str in ('a', 'b')", "--json").stdout)
    assert sorted((r["k_str"], r["k_int"], r["k_date"]) for r in got) == [("a", 1, "2024-01-02"),
                                                                         ("b", 1, "2024-01-02")]
    a = next(r for r in got if r["k_str"] == "a")
    assert a["ts_ns"] == "2021-07-04T21:56:15.004100200"  # nanoseconds survive
    assert a["bin"] == "f37f0f8585"
    assert a["dec38_10"] == "-8040624041248299716660121091.1989249685"
    human = run("cat", path, "--columns", "k_str,bin", "--filter", "k_str = 'a' and k_int = 1").stdout
    assert "0xf37f0f8585" in human


# ---- the --filter language ---------------------------------------------------------------------


@pytest.mark.parametrize("text,dnf", [
    ("n >= 50", [[("n", ">=", 50)]]),
    ("n>=50 AND v='x'", [[("n", ">=", 50), ("v", "=", "x")]]),
    ("a = 1 or b < 2.5 and c != \"q\"", [[("a", "=", 1)], [("b", "<", 2.5), ("c", "!=", "q")]]),
    ("a <> -3", [[("a", "!=", -3)]]),
    ("a == 1e3", [[("a", "=", 1000.0)]]),
    ("s = 'it''s'", [[("s", "=", "it's")]]),
    ("s = 'a and b'", [[("s", "=", "a and b")]]),
    ("s = word", [[("s", "=", "word")]]),
    ("flag = true", [[("flag", "=", True)]]),
    ("d >= 2024-05-14", [[("d", ">=", "2024-05-14")]]),
    ("ts < 2024-05-14T10:00:00.5+02:00", [[("ts", "<", "2024-05-14T10:00:00.5+02:00")]]),
    ("id in (1, 2,3)", [[("id", "in", [1, 2, 3])]]),
    ("id not in ('a')", [[("id", "not in", ["a"])]]),
    ("x is null or y IS NOT NULL", [[("x", "is_null")], [("y", "is_not_null")]]),
    ("`odd col` = 1", [[("odd col", "=", 1)]]),
])
def test_parse_filter(text, dnf):
    assert cli.parse_filter(text) == to_filter(dnf)


@pytest.mark.parametrize("text", ["", "n >=", "n 5", ">= 5", "n = 1 and", "n = 1 or or m = 2", "id in 1",
                                  "id in (1, 2", "x is", "x is not", "x not = 1", "n = 'unterminated",
                                  "n = 1 m = 2", "(n = 1)"])
def test_parse_filter_errors(text):
    with pytest.raises(tidelake.InvalidArgumentError, match="--filter"):
        cli.parse_filter(text)
    result = run("cat", TT, "--filter", text, code=2)
    assert "--filter" in result.stderr


# ---- help --------------------------------------------------------------------------------------


def _all_commands(group, prefix=""):
    for name, command in group.commands.items():
        yield f"{prefix}{name}", command
        if isinstance(command, cli.click.Group):
            yield from _all_commands(command, f"{prefix}{name} ")


def test_help_is_complete():
    top = run("--help").stdout
    assert set(cli.main.commands) >= {"info", "snapshots", "schema", "tags", "files", "cat", "rollback",
                                      "expire-snapshots", "remove-orphans", "expire-partitions", "drop-partition",
                                      "consumers", "system", "compact", "tail", "doctor"}
    assert set(cli.main.commands["tags"].commands) == {"list", "create", "replace", "rename", "delete"}
    assert set(cli.main.commands["consumers"].commands) == {"list", "reset", "delete"}
    assert "maintain" in top.splitlines()[2]
    for name, command in _all_commands(cli.main):
        parent_help = top if " " not in name else run(name.split()[0], "--help").stdout
        leaf = name.split()[-1]
        line = next((ln for ln in parent_help.splitlines() if ln.split()[:1] == [leaf]), None)
        assert line is not None and not line.rstrip().endswith("..."), f"{name} is not listed in full: {line}"
        text = run(*name.split(), "--help").stdout
        assert command.help and len(command.help.split()) >= 5, name
        if name == "sql":  # a query over the tables of --warehouse or --catalog, not a table at PATH
            assert text.startswith("Usage: tidelake sql [OPTIONS] QUERY"), text.splitlines()[0]
        elif name.split()[0] == "catalog":  # acts on the catalog of --catalog, not on a table at PATH
            assert text.startswith(f"Usage: tidelake {name} [OPTIONS]"), text.splitlines()[0]
            assert "--catalog" in command.help or name != "catalog", "the catalog group must say where it comes from"
        else:
            assert text.startswith(f"Usage: tidelake {name} [OPTIONS] PATH"), text.splitlines()[0]
            assert "PATH" in command.help, f"{name}: the help does not say what PATH is"
        for param in command.params:
            if isinstance(param, cli.click.Option):
                assert param.help, f"{name} {param.opts} has no help"
                for opt in param.opts:
                    assert opt in text, f"{name} --help does not show {opt}"
    assert "Exit codes" in top
    doctor = run("doctor", "--help").stdout
    for needle in ("num-sorted-run.stop-trigger", "num-sorted-run.compaction-trigger", "1000 snapshots", "50%",
                   "BAD", "WARN", "OK"):
        assert needle in doctor, needle


def test_group_without_command_shows_help():
    for args in ([], ["tags"], ["consumers"]):
        out = run(*args).stdout
        assert out.startswith("Usage: tidelake") and "Commands:" in out


def test_version():
    assert tidelake.__version__ in run("--version").stdout


# ---- errors and exit codes ---------------------------------------------------------------------


@pytest.mark.parametrize("args,code,needle", [
    (["cat", str(WAREHOUSE / "missing")], 3, "no Paimon table"),
    (["snapshots", str(WAREHOUSE / "missing")], 3, "no Paimon table"),
    (["files", str(WAREHOUSE / "missing")], 3, "no Paimon table"),
    (["cat", TT, "--snapshot", "42"], 3, "available snapshots are 1 to 5"),
    (["cat", TT, "--tag", "nope"], 3, "existing tags: [first, mid]"),
    (["cat", TT, "--filter", "nope = 1"], 2, "unknown column 'nope'"),
    (["cat", TT, "--filter", "id = 'abc'"], 2, "'id'"),
    (["cat", TT, "--columns", "id,nope"], 2, "unknown column 'nope'"),
    (["cat", TT, "--columns", "id,,n"], 2, "--columns"),
    (["cat", TT, "--snapshot", "1", "--timestamp-ms", "5"], 2, "at most one"),
    (["cat", TT, "--limit", "-1"], 2, "--limit"),
    (["cat", TT, "--snapshot", "x"], 2, "--snapshot"),
    (["cat", TT, "--bogus"], 2, "--bogus"),
    (["cat"], 2, "PATH"),
    (["nope"], 2, "nope"),
])
def test_exit_codes(args, code, needle):
    result = run(*args, code=code)
    assert needle in result.stderr


def test_corrupt_metadata_exits_4(fixture_copy):
    table_dir = fixture_copy("time_travel")
    snap = json.loads((table_dir / "snapshot" / "snapshot-5").read_text())
    mlist = table_dir / "manifest" / snap["baseManifestList"]
    mlist.write_bytes(mlist.read_bytes()[:20])
    result = run("cat", table_dir, code=4)
    assert mlist.name in result.stderr
    run("files", table_dir, code=4)
    run("snapshots", table_dir)  # snapshots themselves are intact
    (table_dir / "schema" / "schema-0").write_text("{")
    run("snapshots", table_dir, code=4)


def test_corrupt_data_file_exits_4(fixture_copy):
    table_dir = fixture_copy("time_travel")
    data = sorted(table_dir.glob("bucket-*/*.parquet"))[0]
    data.write_bytes(data.read_bytes()[:50])
    result = run("cat", table_dir, code=4)
    assert data.name in result.stderr


def test_unexpected_errors_are_one_line(fixture_copy):
    """Whatever goes wrong, no traceback: a damaged data file currently surfaces as an untyped
    pyarrow error (see test_corrupt_data_file_exits_4) and still prints one line."""
    table_dir = fixture_copy("time_travel")
    data = sorted(table_dir.glob("bucket-*/*.parquet"))[0]
    data.write_bytes(data.read_bytes()[:50])
    result = CliRunner().invoke(cli.main, ["cat", str(table_dir)])
    assert result.exit_code in (1, 4)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and data.name in lines[0]


def test_broken_pipe_is_quiet():
    proc = subprocess.Popen([sys.executable, "-m", "tidelake.cli", "cat", str(WAREHOUSE / "append_partitioned"),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the CLI writes anything: its first write fails with EPIPE
    _, err = proc.communicate(timeout=60)
    assert err == b""
    assert proc.returncode == 0


# ---- maintenance -------------------------------------------------------------------------------

DAY = 86_400


def pk_table(path: pathlib.Path, commits: int, bucket: int = 1, partitioned: bool = False) -> tidelake.Table:
    """A primary-key table with one small commit (one level-0 file per bucket) per iteration
    (write-only: writers do not compact)."""
    fields = [("id", pa.int64()), ("v", pa.string())]
    if partitioned:
        fields += [("dt", pa.date32()), ("p", pa.int32())]
    table = tidelake.create_table(path, pa.schema(fields), primary_keys=["id"] + (["dt", "p"] if partitioned else []),
                                  partition_keys=["dt", "p"] if partitioned else None, bucket=bucket,
                                  options={"write-only": "true"})
    for i in range(commits):
        data = {"id": [i, i + 100], "v": [f"v{i}", f"w{i}"]}
        if partitioned:
            data |= {"dt": [_dt.date(2024, 1, 1), _dt.date(2024, 1, 2)], "p": [1, 2]}
        table.write(pa.table(data))
    return table


def append_table(path: pathlib.Path, commits: int) -> tidelake.Table:
    table = tidelake.create_table(path, pa.schema([("id", pa.int64())]))
    for i in range(commits):
        table.write(pa.table({"id": [i]}))
    return table


def snapshot_files(path: pathlib.Path) -> list[str]:
    return sorted(p.name for p in (path / "snapshot").glob("snapshot-*"))


def plant(path: pathlib.Path, days_old: float) -> pathlib.Path:
    path.write_bytes(b"not referenced by any snapshot")
    when = time.time() - days_old * DAY
    os.utime(path, (when, when))
    return path


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("10min", 600), ("1h", 3600), ("2d", 2 * DAY), ("1 h", 3600),
                                          ("500ms", 0.5), ("1.5h", 5400), ("3 minutes", 180), ("0s", 0),
                                          ("2D", 2 * DAY), ("10m", 600)])
def test_parse_duration(text, seconds):
    assert cli.parse_duration(text) == _dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "10", "h", "1 week", "-1h", "1hh", "1h30m", "one hour"])
def test_bad_durations_exit_2(text):
    with pytest.raises(tidelake.InvalidArgumentError, match="duration"):
        cli.parse_duration(text)
    result = run("remove-orphans", TT, "--older-than", text, "--dry-run", code=2)
    assert "--older-than" in result.stderr and "30s, 10min, 1h, 2d" in result.stderr


def test_partition_values_are_typed(tmp_path):
    table = pk_table(tmp_path / "t", 0, partitioned=True)
    spec = cli._PARTITION.convert("dt=2024-01-02,p=7", None, None)
    assert spec == {"dt": "2024-01-02", "p": "7"}
    assert typed_partitions(table, [spec]) == [{"dt": _dt.date(2024, 1, 2), "p": 7}]
    assert typed_partitions(table, [{"p": "__DEFAULT_PARTITION__"}]) == [{"p": None}]
    with pytest.raises(tidelake.InvalidArgumentError, match="p is int32"):
        typed_partitions(table, [{"p": "x"}])
    with pytest.raises(tidelake.InvalidArgumentError, match="not a partition key"):
        typed_partitions(table, [{"id": "1"}])
    # the null partition's name is the table's partition.default-name, resolved by the engine
    renamed = table.set_option("partition.default-name", "NULLS")
    assert typed_partitions(renamed, [{"p": "NULLS"}]) == [{"p": None}]
    with pytest.raises(tidelake.InvalidArgumentError, match="__DEFAULT_PARTITION__"):  # now just a bad date
        typed_partitions(renamed, [{"dt": "__DEFAULT_PARTITION__"}])


def test_tags_create_list_delete(fixture_copy):
    path = fixture_copy("time_travel")
    out = run("tags", "create", path, "nightly", "--snapshot", 4, "--retain", "2d").stdout
    assert out.strip() == "created tag nightly on snapshot 4, retained 2d"
    out = run_process("tags", "create", path, "latest").stdout  # the real entry point; the latest snapshot
    assert out.strip() == "created tag latest on snapshot 5"
    listed = {t["name"]: t for t in json.loads(run("tags", "list", path, "--json").stdout)}
    assert {name: t["snapshot_id"] for name, t in listed.items()} == {"first": 1, "mid": 3, "nightly": 4, "latest": 5}
    assert listed["nightly"]["time_retained"] == 2 * DAY
    human = run("tags", path).stdout.splitlines()  # `tags PATH` is `tags list PATH`
    assert human == run("tags", "list", path).stdout.splitlines()
    row = next(ln.split() for ln in human if ln.startswith("nightly"))
    assert row[1] == "4" and row[-1] == "2d"
    assert jsonl(run("cat", path, "--tag", "nightly", "--json").stdout) == jsonl(
        run("cat", path, "--snapshot", 4, "--json").stdout)

    assert "exists" in run("tags", "create", path, "nightly", code=1).stderr
    assert "snapshot 42" in run("tags", "create", path, "x", "--snapshot", 42, code=3).stderr
    run("tags", "create", path, "x", "--retain", "forever", code=2)

    assert run("tags", "delete", path, "nightly").stdout.startswith("deleted tag nightly")
    assert "nightly" not in run("tags", path).stdout
    assert "nightly" in run("tags", "delete", path, "nightly", code=3).stderr
    run("tags", "delete", path, code=2)


def test_rollback(fixture_copy, monkeypatch):
    path = fixture_copy("time_travel")
    ids = lambda: [s["id"] for s in json.loads(run("snapshots", path, "--json").stdout)]  # noqa: E731
    before = ids()
    # no terminal on stdin and no --yes: refuse, change nothing
    result = run("rollback", path, "--snapshot", 4, code=2)
    assert "--yes" in result.stderr
    assert ids() == before
    run("rollback", path, code=2)
    run("rollback", path, "--snapshot", 2, "--tag", "mid", code=2)
    run("rollback", path, "--snapshot", 42, "--yes", code=3)
    assert "existing tags: [first, mid]" in run("rollback", path, "--tag", "nope", "--yes", code=3).stderr

    # a terminal: ask, and do nothing on "no"
    monkeypatch.setattr(cli.refs, "_interactive", lambda: True)
    declined = CliRunner().invoke(cli.main, ["rollback", str(path), "--snapshot", "4"], input="n\n")
    assert declined.exit_code == 1
    assert "Roll back" in declined.stderr and "snapshot 5" in declined.stderr
    assert declined.stderr.strip().splitlines()[-1] == "error: not confirmed; nothing was rolled back"
    assert ids() == before
    accepted = CliRunner().invoke(cli.main, ["rollback", str(path), "--snapshot", "4"], input="y\n")
    assert accepted.exit_code == 0, accepted.stderr
    assert accepted.stdout.startswith("rolled back to snapshot 4: deleted 1 snapshots")
    assert ids() == [1, 2, 3, 4]

    out = run_process("rollback", path, "--tag", "mid", "--yes").stdout
    assert out.startswith("rolled back to tag mid (snapshot 3): deleted 1 snapshots")
    assert ids() == [1, 2, 3]
    assert snapshot_files(path) == ["snapshot-1", "snapshot-2", "snapshot-3"]
    expected = tidelake.open_table(path).to_arrow(snapshot_id=3)
    assert sorted(map(key, jsonl(run("cat", path, "--json").stdout))) == sorted(map(key, json_rows(expected)))


def test_expire_snapshots_dry_run_says_what_the_real_run_does(tmp_path):
    path = tmp_path / "t"
    t = tidelake.create_table(path, pa.schema([("id", pa.int64())]))
    for n in range(5):
        t.write(pa.table({"id": pa.array(range(n, n + 3), pa.int64())}), mode="overwrite" if n % 2 else "append")
    args = ["expire-snapshots", path, "--retain-min", 2, "--older-than", "0s"]
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    plan = json.loads(run(*args, "--dry-run", "--json").stdout)
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before  # nothing changed
    assert plan["dry_run"] and plan["snapshots"] == 3 and plan["earliest_snapshot"] == 4
    assert plan["data_files"] == 3 and plan["manifest_files"] > 0  # the files of snapshots 1-3, gone in 4
    human = run(*args, "--dry-run").stdout
    assert human.startswith("would expire 3 snapshots, earliest would be 4; would delete 3 data files")
    done = json.loads(run(*args, "--json").stdout)
    assert done == {k: v for k, v in plan.items() if k != "dry_run"}
    assert run(*args, "--dry-run").stdout.startswith("nothing to expire (earliest snapshot 4) (dry run)")


def test_expire_snapshots(tmp_path):
    path = tmp_path / "t"
    append_table(path, 6)
    assert len(snapshot_files(path)) == 6
    out = run("expire-snapshots", path, "--retain-min", 1, "--older-than", "0s", "--max-deletes", 2).stdout
    assert out.startswith("expired 2 snapshots, earliest is now 3")
    assert snapshot_files(path) == ["snapshot-3", "snapshot-4", "snapshot-5", "snapshot-6"]
    out = run_process("expire-snapshots", path, "--retain-min", 2, "--retain-max", 2).stdout
    assert out.startswith("expired 2 snapshots, earliest is now 5")
    assert snapshot_files(path) == ["snapshot-5", "snapshot-6"]
    assert sorted(r["id"] for r in jsonl(run("cat", path, "--json").stdout)) == list(range(6))
    again = json.loads(run("expire-snapshots", path, "--retain-min", 2, "--retain-max", 2, "--json").stdout)
    assert again["snapshots"] == 0 and again["earliest_snapshot"] == 5
    assert run("expire-snapshots", path).stdout.startswith("nothing to expire")  # defaults keep 10
    assert "retain" in run("expire-snapshots", path, "--retain-min", 3, "--retain-max", 2, code=2).stderr
    run("expire-snapshots", path, "--retain-min", 0, code=2)


def test_remove_orphans(tmp_path):
    path = tmp_path / "t"
    append_table(path, 2)
    old = plant(path / "bucket-0" / "data-orphan-old.parquet", days_old=2)
    young = plant(path / "bucket-0" / "data-orphan-young.parquet", days_old=0.1)
    listed = run("remove-orphans", path, "--dry-run").stdout
    assert "bucket-0/data-orphan-old.parquet" in listed and "young" not in listed
    assert listed.splitlines()[-1] == f"(1 orphan file, {old.stat().st_size} B would be deleted (dry run))"
    assert old.exists()
    dry = json.loads(run("remove-orphans", path, "--dry-run", "--older-than", "1h", "--json").stdout)
    assert dry["dry_run"] and dry["count"] == 2
    assert sorted(pathlib.Path(f["path"]).name for f in dry["files"]) == [old.name, young.name]

    out = run_process("remove-orphans", path).stdout
    assert "data-orphan-old.parquet" in out and out.splitlines()[-1].endswith(" B deleted)")
    assert not old.exists() and young.exists()
    assert sorted(r["id"] for r in jsonl(run("cat", path, "--json").stdout)) == [0, 1]
    assert run("remove-orphans", path, "--older-than", "1h").stdout.splitlines()[-1].startswith("(1 orphan file,")
    assert not young.exists()


def test_drop_partition(tmp_path):
    path = tmp_path / "t"
    pk_table(path, 3, partitioned=True)
    out = run("drop-partition", path, "--partition", "dt=2024-01-01,p=1").stdout
    assert out.strip() == "dropped dt=2024-01-01,p=1 in snapshot 4: 6 -> 3 rows"
    rows = jsonl(run("cat", path, "--json").stdout)
    assert {(r["dt"], r["p"]) for r in rows} == {("2024-01-02", 2)}
    assert len(rows) == 3
    result = json.loads(run_process("drop-partition", path, "--partition", "p=2", "--partition", "p=9",
                                    "--json").stdout)
    assert result["partitions"] == [{"p": 2}, {"p": 9}] and result["records_after"] == 0
    assert run("cat", path).stdout.splitlines()[-1] == "(0 rows)"
    assert "p is int32" in run("drop-partition", path, "--partition", "p=x", code=2).stderr
    assert "not a partition key" in run("drop-partition", path, "--partition", "v=1", code=2).stderr
    assert "k=v" in run("drop-partition", path, "--partition", "p", code=2).stderr
    run("drop-partition", path, code=2)
    assert "not partitioned" in run("drop-partition", TT, "--partition", "id=1", code=2).stderr


def test_expire_partitions(tmp_path):
    path = tmp_path / "t"
    table = tidelake.create_table(path, pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    today = _dt.date.today().isoformat()
    table.write(pa.table({"id": [1, 2, 3], "dt": ["2020-01-01", "2020-01-02", today]}))
    assert "partition.expiration-time" in run("expire-partitions", path, code=2).stderr
    out = run("expire-partitions", path, "--older-than", "30 d").stdout.splitlines()
    assert out == ["dt=2020-01-01", "dt=2020-01-02", "(2 partitions expired)"]
    assert [r["dt"] for r in jsonl(run("cat", path, "--json").stdout)] == [today]
    assert json.loads(run("expire-partitions", path, "--older-than", "30d", "--json").stdout) == []


def test_consumers(tmp_path):
    path = tmp_path / "t"
    append_table(path, 3)
    assert run("consumers", path).stdout.splitlines()[-1] == "(0 consumers)"
    out = run("consumers", "reset", path, "etl", "--next-snapshot", 2).stdout
    assert out.strip() == "consumer etl reads snapshot 2 next"
    assert json.loads(run_process("consumers", path, "--json").stdout) == {"etl": 2}
    assert ["etl", "2"] in [ln.split() for ln in run("consumers", "list", path).stdout.splitlines()]
    system = json.loads(run("system", path, "consumers", "--json").stdout)
    assert system == [{"consumer_id": "etl", "next_snapshot_id": 2}]
    run("consumers", "reset", path, "etl", "--next-snapshot", 9, code=3)
    run("consumers", "reset", path, "etl", code=2)
    run("consumers", "delete", path, "etl")
    assert json.loads(run("consumers", path, "--json").stdout) == {}


def test_system_tables():
    snaps = json.loads(run_process("system", TT, "snapshots", "--json").stdout)
    assert [s["snapshot_id"] for s in snaps] == [1, 2, 3, 4, 5]
    assert [s["commit_kind"] for s in snaps] == ["APPEND"] * 5
    files = json.loads(run("system", TT, "files", "--json").stdout)
    listed = json.loads(run("files", TT, "--json").stdout)
    assert sorted(pathlib.Path(f["file_path"]).name for f in files) == sorted(r["file"] for r in listed)
    assert sum(f["record_count"] for f in files) == sum(r["rows"] for r in listed)
    tags = json.loads(run("system", TT, "tags", "--json").stdout)
    assert {t["tag_name"]: t["snapshot_id"] for t in tags} == {"first": 1, "mid": 3}
    human = run("system", TT, "snapshots", "--limit", 2).stdout.splitlines()
    assert human[0].split()[:2] == ["snapshot_id", "schema_id"]
    assert [ln.split()[0] for ln in human[2:-1]] == ["1", "2"] and human[-1] == "(2 rows)"
    assert "'files'" in run("system", TT, "nope", code=2).stderr
    run("system", TT, code=2)


def test_tail_no_follow(tmp_path):
    path = tmp_path / "t"
    table = pk_table(path, 1)  # snapshot 1: +I 0, 100
    table.upsert(pa.table({"id": [0], "v": ["new"]}))  # snapshot 2
    table.delete_keys(pa.table({"id": [100], "v": ["w0"]}))  # snapshot 3
    got = jsonl(run("tail", path, "--no-follow", "--json").stdout)
    assert [(r["_snapshot_id"], r["_row_kind"], r["id"], r["v"]) for r in got] == [
        (1, "+I", 0, "v0"), (1, "+I", 100, "w0"), (2, "+I", 0, "new"), (3, "-D", 100, "w0")]
    human = run_process("tail", path, "--no-follow", "--from-snapshot", 2).stdout.splitlines()
    assert human[0].startswith("-- snapshot 2 (APPEND, ") and human[0].endswith("): 1 changes")
    assert human[1].split() == ["_row_kind", "id", "v"]
    assert human[3].split() == ["+I", "0", "new"]
    assert human[4].startswith("-- snapshot 3 (APPEND, ")
    assert human[7].split() == ["-D", "100", "w0"]
    one = jsonl(run("tail", path, "--no-follow", "--max-batches", 1, "--json").stdout)
    assert {r["_snapshot_id"] for r in one} == {1}
    # --follow with --max-batches stops by itself once enough snapshots were printed
    one = jsonl(run("tail", path, "--from-snapshot", 3, "--max-batches", 1, "--json").stdout)
    assert [(r["_row_kind"], r["id"]) for r in one] == [("-D", 100)]
    run("tail", path, "--no-follow", "--from-snapshot", 0, code=2)
    run("tail", path, "--interval", 0, code=2)


def test_tail_scan_modes(tmp_path):
    """--scan-mode: the *-full modes print a snapshot's full state (as inserts) first, then the
    changes after it; from-timestamp starts at the first snapshot at or after the time."""
    path = tmp_path / "t"
    table = pk_table(path, 2)  # snapshots 1, 2
    table.compact(full=True)  # 3: COMPACT
    table.delete_keys(pa.table({"id": [0], "v": ["v0"]}))  # 4

    def rows(*args):
        return [(r["_snapshot_id"], r["_row_kind"], r["id"])
                for r in jsonl(run("tail", path, "--no-follow", "--json", *args).stdout)]

    state = sorted(table.to_arrow(snapshot_id=3)["id"].to_pylist())
    got = rows("--scan-mode", "compacted-full")
    assert got == [(3, "+I", i) for i in state] + [(4, "-D", 0)]
    got = rows("--scan-mode", "from-snapshot-full", "--from-snapshot", 1)
    first = sorted(table.to_arrow(snapshot_id=1)["id"].to_pylist())
    assert got[:len(first)] == [(1, "+I", i) for i in first] and got[len(first):] == [
        (2, "+I", i) for i in sorted(table.changes(1, 2)["id"].to_pylist())] + [(4, "-D", 0)]
    assert rows("--scan-mode", "latest-full", "--max-batches", 1) == [(4, "+I", i) for i in state if i != 0]
    assert rows("--from-timestamp", table.snapshot(4).time_millis) == [(4, "-D", 0)]
    assert "from-snapshot-full needs option scan.snapshot-id" in run(
        "tail", path, "--no-follow", "--scan-mode", "from-snapshot-full", code=2).stderr
    run("tail", path, "--scan-mode", "incremental", code=2)


def _read_line(proc: subprocess.Popen, timeout: float = 20) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "tail printed nothing"
    return proc.stdout.readline()


def test_tail_follow_and_ctrl_c(tmp_path):
    path = tmp_path / "t"
    table = pk_table(path, 2)
    proc = subprocess.Popen([sys.executable, "-m", "tidelake.cli", "tail", str(path), "--from-snapshot", "3",
                             "--interval", "0.05", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        table.upsert(pa.table({"id": [7], "v": ["live"]}))
        row = json.loads(_read_line(proc))
        assert (row["_snapshot_id"], row["_row_kind"], row["id"], row["v"]) == (3, "+I", 7, "live")
        table.delete_keys(pa.table({"id": [7], "v": ["live"]}))
        row = json.loads(_read_line(proc))
        assert (row["_snapshot_id"], row["_row_kind"], row["id"]) == (4, "-D", 7)
        assert proc.poll() is None  # still following
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == ""


def level_rows(path) -> list[int]:
    return [r["level"] for r in json.loads(run("files", path, "--json").stdout)]


def doctor_json(path, *args) -> dict:
    return json.loads(run("doctor", path, "--json", *args).stdout)


def test_doctor_counts_partitions_and_buckets_per_partition(tmp_path):
    t = tidelake.create_table(tmp_path / "t", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                              primary_keys=["id", "dt"], partition_keys=["dt"], bucket=3)
    t.write(pa.table({"id": list(range(60)), "dt": ["a", "b"] * 30}))
    t.write(pa.table({"id": [1000], "dt": ["c"]}))  # one key: one bucket of partition c has files
    d = doctor_json(tmp_path / "t")
    assert (d["partitions"], d["buckets_per_partition"]) == (3, "1-3")
    assert sorted({b["partition"] for b in d["buckets"]}) == ["dt=a", "dt=b", "dt=c"]
    out = run("doctor", tmp_path / "t").stdout
    assert out.splitlines()[0] == f"table:        {tmp_path / 't'} (primary-key, 3 partitions, 1-3 buckets per partition)"


def test_doctor_html_and_png_reports(tmp_path):
    path = tmp_path / "t"
    pk_table(path, 7)
    page, image = tmp_path / "report.html", tmp_path / "report.png"
    out = run("doctor", path, "--html", page, "--png", image).stdout
    assert "verdict: WARN" in out  # the text report is printed as well
    text = page.read_text()
    assert text.startswith("<!doctype html>") and text.count("<svg") == 4
    assert "<span class='WARN'>WARN</span>" in text and "more than 5 sorted runs" in text
    assert f"tidelake compact {path} --full" in text
    assert "<script" not in text  # self-contained, nothing fetched
    head = image.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (1600, 900)


def test_doctor_charts_without_matplotlib_say_what_to_install(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    path = tmp_path / "t"
    pk_table(path, 1)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    err = run("doctor", path, "--html", tmp_path / "r.html", code=1).stderr
    assert "pip install 'tidelake[doctor]'" in err and not (tmp_path / "r.html").exists()


def test_doctor_and_compact(tmp_path):
    path = tmp_path / "t"
    table = pk_table(path, 7)  # 1 bucket, 7 level-0 files: more runs than compaction-trigger (5)
    out = run("doctor", path).stdout
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["partition", "bucket"])
    assert lines[header].split() == ["partition", "bucket", "files", "level-0", "runs", "small", "rows", "size"]
    assert lines[header + 2].split()[:6] == ["-", "0", "7", "7", "7", "7"]
    assert "verdict: WARN" in lines
    assert any("more than 5 sorted runs" in ln for ln in lines)
    assert any("of data files are small" in ln for ln in lines)
    assert f"  tidelake compact {path} --full" in lines
    assert "snapshots:    7" in lines
    d = doctor_json(path)
    assert d["verdict"] == "WARN" and d["snapshots"] == 7 and d["manifests"] >= 1
    assert [(b["bucket"], b["level0_files"], b["sorted_runs"]) for b in d["buckets"]] == [(0, 7, 7)]
    assert d["planning_seconds"] >= 0 and d["orphan_files"] == 0
    assert d["thresholds"]["compaction_trigger"] == 5 and d["thresholds"]["stop_trigger"] == 8

    for i in range(2):  # 9 runs: more than the stop trigger (8)
        table.write(pa.table({"id": [50 + i], "v": ["x"]}))
    d = doctor_json(path)
    assert d["verdict"] == "BAD" and d["buckets"][0]["sorted_runs"] == 9
    assert any(r.startswith("BAD: 1 bucket has more than 8 sorted runs") for r in d["reasons"])
    plant(path / "bucket-0" / "data-orphan.parquet", days_old=3)
    d = doctor_json(path)
    assert f"tidelake remove-orphans {path}" in d["suggestions"] and d["orphan_files"] == 1
    assert doctor_json(path, "--skip-orphans")["orphan_files"] is None
    run("remove-orphans", path)

    before = sorted(map(key, jsonl(run("cat", path, "--json").stdout)))
    assert level_rows(path).count(0) == 9
    proc = run_process("compact", path)  # universal compaction: 9 runs > trigger
    out = proc.stdout
    assert "compacting buckets" in proc.stderr  # the progress bar (a label when not a terminal)
    assert out.startswith("compacted into snapshot 10: data files 9 -> ")
    assert out.strip().endswith("level-0 files 9 -> 0")
    assert level_rows(path).count(0) == 0
    assert sorted(map(key, jsonl(run("cat", path, "--json").stdout))) == before
    d = doctor_json(path)
    assert d["verdict"] == "OK" and d["reasons"] == [] and d["suggestions"] == []
    assert run("doctor", path).stdout.splitlines()[-1] == "verdict: OK"
    nothing = run("compact", path)
    assert nothing.stdout.startswith("nothing to compact") and "compacting" not in nothing.stderr
    assert json.loads(run("compact", path, "--json").stdout)["snapshot_id"] is None


def test_compact_full_partitions(tmp_path):
    path = tmp_path / "t"
    pk_table(path, 2, bucket=2, partitioned=True)
    files = json.loads(run("files", path, "--json").stdout)
    l0 = lambda part: sum(1 for r in json.loads(run("files", path, "--json").stdout)  # noqa: E731
                          if r["level"] == 0 and r["partition"].endswith(part))
    assert l0("p=1") > 0 and l0("p=2") > 0
    result = json.loads(run("compact", path, "--full", "--partition", "dt=2024-01-01,p=1", "--json").stdout)
    assert result["snapshot_id"] == 3 and result["level0_files_before"] == len(files)
    assert l0("p=1") == 0 and l0("p=2") > 0  # only the chosen partition
    run("compact", path, "--full")
    assert l0("p=2") == 0
    assert "p is int32" in run("compact", path, "--partition", "p=one", code=2).stderr
    append = tmp_path / "a"
    append_table(append, 2)
    # append tables: two small files are fewer than compaction.min.file-num; --full merges them
    assert run("compact", append).stdout.startswith("nothing to compact")
    assert "data files 2 -> 1" in run("compact", append, "--full").stdout


def test_compact_order_by(tmp_path):
    append = tmp_path / "a"
    t = append_table(append, 3)
    out = run("compact", append, "--order-by", "id", "--strategy", "ZORDER").stdout
    assert out.startswith("sorted by id into snapshot 4: data files 3 -> 1")
    assert t.snapshot(4).commit_kind == "OVERWRITE" and sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2]
    done = json.loads(run("compact", append, "--order-by", "id", "--json").stdout)
    assert done == {"snapshot_id": 5, "files_before": 1, "files_after": 1}
    assert "give --order-by too" in run("compact", append, "--strategy", "order", code=2).stderr
    assert "Can't find column nope" in run("compact", append, "--order-by", "nope", code=2).stderr
    pk = tmp_path / "pk"
    pk_table(pk, 1)
    assert "bucket-unaware append" in run("compact", pk, "--order-by", "v", code=1).stderr


def test_doctor_append_and_fixture():
    d = doctor_json(WAREHOUSE / "append_partitioned", "--skip-orphans")
    assert d["kind"] == "append" and d["target_file_size"] == 256 << 20
    assert not any("sorted runs" in r for r in d["reasons"])
    assert all("=" in b["partition"] for b in d["buckets"])
    assert d["verdict"] in ("OK", "WARN")


@pytest.mark.parametrize("args", [["doctor"], ["system", "files"], ["compact"], ["tail", "--no-follow"],
                                  ["expire-snapshots"], ["remove-orphans"], ["tags", "create", "t"],
                                  ["consumers"], ["rollback", "--snapshot", "1", "--yes"],
                                  ["expire-partitions", "--older-than", "1d"]])
def test_maintenance_on_missing_table_exits_3(args):
    cmd, rest = args[0], args[1:]
    if cmd == "tags":
        full = ["tags", "create", str(WAREHOUSE / "missing"), *rest[1:]]
    else:
        full = [cmd, str(WAREHOUSE / "missing"), *rest]
    assert "no Paimon table" in run(*full, code=3).stderr


# ---- create, load ------------------------------------------------------------------------------


def input_files(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    """Three input files in three formats; their columns differ (b.csv lacks v, adds w)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    a, b, c = tmp_path / "a.parquet", tmp_path / "b.csv", tmp_path / "c.jsonl"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "dt": ["x", "x", "y"], "v": [1.0, 2.0, 3.0]}), a)
    pcsv.write_csv(pa.table({"id": [3, 4], "dt": ["y", "z"], "w": ["p", "q"]}), b)
    c.write_text('{"id": 5, "dt": "z", "v": 9.5}\n{"id": 1, "dt": "x", "v": 7.0}\n')
    return [a, b, c]


def test_create_takes_the_schema_of_a_file(tmp_path):
    a, b, _ = input_files(tmp_path)
    out = run("create", tmp_path / "t", "--schema-from", a, "--primary-key", "id", "--partition-by", "dt",
              "--bucket", 2, "--option", "merge-engine=partial-update").stdout
    assert out.startswith(f"created {tmp_path / 't'} (3 columns; primary keys: id; partition keys: dt)")
    t = tidelake.open_table(tmp_path / "t")
    assert t.schema.names == ["id", "dt", "v"] and t.schema.field("id").type == pa.int32()
    assert (t.primary_keys, t.partition_keys, t.options["bucket"], t.options["merge-engine"]) == (
        ["id"], ["dt"], "2", "partial-update")
    assert t.latest_snapshot() is None
    run("create", tmp_path / "t", "--schema-from", b, code=1)  # exists
    run("create", tmp_path / "u", "--schema-from", tmp_path / "none.parquet", code=2)
    run("create", tmp_path / "u", "--schema-from", b, "--option", "nokeyvalue", code=2)


def test_load_files_of_several_formats_in_one_commit(tmp_path):
    files = input_files(tmp_path)
    path = tmp_path / "t"
    got = json.loads(run("load", path, *files, "--primary-key", "id", "--bucket", 2, "--json").stdout)
    assert got == {"path": str(path), "files": 3, "rows": 7, "snapshot": 1}
    t = tidelake.open_table(path)
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"]  # one atomic commit
    assert t.schema.names == ["id", "dt", "v", "w"] and t.schema.field("id").type == pa.int64()
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "dt": "x", "v": 7.0, "w": None}, {"id": 2, "dt": "x", "v": 2.0, "w": None},
                    {"id": 3, "dt": "y", "v": None, "w": "p"}, {"id": 4, "dt": "z", "v": None, "w": "q"},
                    {"id": 5, "dt": "z", "v": 9.5, "w": None}]  # later files upsert earlier rows

    full = tmp_path / "d.jsonl"
    full.write_text('{"id": 5, "dt": "z", "v": 9.5, "w": "r"}\n{"id": 1, "dt": "x", "v": 7.0, "w": "s"}\n')
    out = run("load", path, full, "--mode", "overwrite").stdout
    assert out == f"loaded 2 rows from 1 file into {path} (snapshot 2)\n"
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 5]
    run("load", path, files[0], "--mode", "error", code=1)
    assert len(t.snapshots()) == 2


def test_load_with_branch_writes_that_branch_only(tmp_path):
    files = input_files(tmp_path)
    path = tmp_path / "t"
    run("load", path, files[0], "--primary-key", "id")
    t = tidelake.open_table(path)
    main_rows = t.to_arrow()
    t.create_branch("dev", from_snapshot=1)
    more = tmp_path / "more.jsonl"
    more.write_text('{"id": 42, "dt": "q", "v": 1.5}\n')
    run("--branch", "dev", "load", path, more)
    assert t.to_arrow().equals(main_rows) and len(t.snapshots()) == 1  # main untouched
    dev = tidelake.open_table(path, branch="dev")
    assert len(dev.snapshots()) == 2 and 42 in dev.to_arrow()["id"].to_pylist()
    run("--branch", "dev", "load", path, more, "--mode", "error", code=1)
    run("--branch", "nope", "load", path, more, code=3)
    assert "branches create" in run("--branch", "dev", "create", tmp_path / "u", "--schema-from", files[0],
                                    code=2).stderr
    assert not (tmp_path / "u").exists()


def test_a_failing_load_commits_nothing(tmp_path):
    a, _, _ = input_files(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 9, "dt": "q", "v": 1.0}\n{"id": "not a number"\n')
    path = tmp_path / "t"
    run("create", path, "--schema-from", a)
    assert "bad.jsonl" in run("load", path, a, bad, code=2).stderr
    conflicting = tmp_path / "d.csv"
    conflicting.write_text("id,dt\nabc,x\n")
    assert "schemas do not agree" in run("load", path, a, conflicting, code=1).stderr
    assert tidelake.open_table(path).latest_snapshot() is None
    assert "--format" in run("load", path, tmp_path / "x.txt", code=2).stderr
