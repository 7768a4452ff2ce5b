"""SQL without Spark (``tidelake.sql``, ``tidelake sql``; DuckDB runs the query): the fixture reads
answered through SQL equal ``to_arrow``'s, time travel by snapshot id, tag and timestamp,
system tables, joins/CTEs/subqueries/aggregates, what is pushed into tidelake's planner, the
command line, and the typed errors."""

from __future__ import annotations

import datetime as dt
import json
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

import tidelake
from conftest import FIXTURES, assert_same_rows, fixture_tables
from tidelake import cli
from tidelake.expr import to_json
from tidelake.maintenance import SYSTEM_TABLES

TABLES = fixture_tables()
WAREHOUSE = FIXTURES / "warehouse"


def _duckdb_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type DuckDB returns for a column of type ``t``: its BLOB, TIMESTAMPTZ (µs)
    and TIME (µs) hold the same values in wider types."""
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_timestamp(t) and t.tz is not None and t.unit in ("s", "ms", "us"):
        return pa.timestamp("us", "Etc/UTC")
    if pa.types.is_time32(t):
        return pa.time64("us")
    return t


def assert_same_as_read(got: pa.Table, want: pa.Table) -> None:
    """``got`` (from DuckDB) holds ``want``'s rows, in DuckDB's types for ``want``'s."""
    assert [f.type for f in got.schema] == [_duckdb_type(f.type) for f in want.schema]
    assert_same_rows(got.cast(want.schema), want)  # a safe cast: no value changes


def _where(tree: dict) -> str:
    """A fixture's JSON filter tree as SQL."""
    ops = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    op = tree["op"]
    if op in ("and", "or"):
        return "(" + f" {op.upper()} ".join(_where(a) for a in tree["args"]) + ")"
    if op in ("is_null", "is_not_null"):
        return f"`{tree['field']}` IS {'NOT ' if op == 'is_not_null' else ''}NULL"
    value = tree["value"]
    literal = repr(value) if isinstance(value, str) else str(value).upper() if isinstance(value, bool) else value
    return f"`{tree['field']}` {ops[op]} {literal}"


def _local_time(ms: int) -> str:
    """Epoch ms as the local date-time text ``TIMESTAMP AS OF`` reads (naive = local time)."""
    return dt.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")


@pytest.mark.parametrize("spec", TABLES, ids=[t["name"] for t in TABLES])
def test_fixture_reads_through_sql_equal_to_arrow(spec):
    table = tidelake.open_table(FIXTURES / spec["path"])
    name = f"fx.{spec['name']}"

    def query(text: str) -> pa.Table:
        return tidelake.sql(text, warehouse=WAREHOUSE)

    assert_same_as_read(query(f"SELECT * FROM {name}"), table.to_arrow())
    for snap in spec["snapshots"]:
        assert_same_as_read(query(f"SELECT * FROM {name} VERSION AS OF {snap['id']}"),
                            table.to_arrow(snapshot_id=snap["id"]))
    for tag in spec["expected"]["tags"]:
        assert_same_as_read(query(f"SELECT * FROM {name} VERSION AS OF '{tag}'"), table.to_arrow(tag=tag))
    for read in spec["expected"]["timestamp_reads"]:
        ms = read["scan.timestamp-millis"]
        assert table.scan(timestamp_ms=ms).snapshot_id == read["resolves_to_snapshot"]
        assert_same_as_read(query(f"SELECT * FROM {name} TIMESTAMP AS OF '{_local_time(ms)}'"),
                            table.to_arrow(timestamp_ms=ms))
    for f in spec["expected"]["filtered"]:
        columns = ", ".join(f"`{c}`" for c in f["projection"])
        assert_same_as_read(query(f"SELECT {columns} FROM {name} WHERE {_where(f['filter'])}"),
                            table.to_arrow(columns=f["projection"], filter=f["filter"]))


@pytest.fixture
def wh(tmp_path: pathlib.Path) -> pathlib.Path:
    """A warehouse with ``db.orders`` (primary key, 2 buckets, partitioned by region; 3
    snapshots, tag ``first`` at snapshot 1) and ``db.regions`` (append-only)."""
    catalog = tidelake.Catalog(tmp_path)
    catalog.create_database("db")
    orders = catalog.create_table("db.orders", pa.schema([("id", pa.int64()), ("region", pa.string()),
                                                          ("qty", pa.int64())]),
                                  primary_keys=["id", "region"], partition_keys=["region"], bucket=2)
    orders.write(pa.table({"id": list(range(100)), "region": ["eu", "us"] * 50, "qty": list(range(100))}))
    orders.create_tag("first", 1)
    orders.upsert(pa.table({"id": [0, 1], "region": ["eu", "us"], "qty": [1000, 1001]}))
    orders.delete([("id", "<", 10)])
    regions = catalog.create_table("db.regions", pa.schema([("region", pa.string()), ("name", pa.string())]))
    regions.write(pa.table({"region": ["eu", "us"], "name": ["Europe", "United States"]}))
    return tmp_path


def test_time_travel_by_snapshot_tag_and_timestamp(wh):
    orders = tidelake.Catalog(wh).get_table("db.orders")
    snapshots = orders.snapshots()
    assert [s.id for s in snapshots] == [1, 2, 3]

    def count(suffix: str) -> int:
        return tidelake.sql(f"SELECT count(*) AS n FROM db.orders {suffix}", warehouse=wh)["n"][0].as_py()

    assert (count(""), count("VERSION AS OF 1"), count("VERSION AS OF 3"), count("VERSION AS OF 'first'")) == (
        90, 100, 90, 100)
    assert tidelake.sql("SELECT qty FROM db.orders VERSION AS OF 2 WHERE id = 0", warehouse=wh).to_pylist() == [
        {"qty": 1000}]
    at = snapshots[1].time_millis
    assert count(f"TIMESTAMP AS OF '{_local_time(at)}'") == 100  # snapshot 2: the upsert, before the delete
    assert count(f"TIMESTAMP AS OF {snapshots[-1].time_millis // 1000 + 1}") == 90  # epoch seconds, as Spark
    with pytest.raises(tidelake.TableNotFoundError, match="no snapshot"):
        count(f"TIMESTAMP AS OF {snapshots[0].time_millis // 1000 - 1}")
    # two versions of one table in one query: the rows the delete removed
    removed = tidelake.sql("SELECT id FROM db.orders VERSION AS OF 2 EXCEPT SELECT id FROM db.orders ORDER BY id",
                           warehouse=wh)
    assert removed["id"].to_pylist() == list(range(10))


def test_system_tables_by_catalog_identifier_and_by_path(wh):
    orders = tidelake.Catalog(wh).get_table("db.orders")
    for name in SYSTEM_TABLES:
        got = tidelake.sql(f"SELECT * FROM db.`orders${name}`", warehouse=wh)
        want = orders.system(name)
        assert got.column_names == want.column_names, name
        assert got.num_rows == want.num_rows, name
    snapshots = tidelake.sql(f"SELECT snapshot_id, commit_kind FROM tidelake.`{wh}/db.db/orders$snapshots` "
                             "ORDER BY snapshot_id")
    assert snapshots.to_pylist() == [{"snapshot_id": i, "commit_kind": "APPEND"} for i in (1, 2, 3)]
    tags = tidelake.sql("SELECT tag_name, snapshot_id FROM db.`orders$tags`", warehouse=wh)
    assert tags.to_pylist() == [{"tag_name": "first", "snapshot_id": 1}]


def test_joins_ctes_subqueries_and_aggregates(wh):
    catalog = tidelake.Catalog(wh)
    rows = catalog.get_table("db.orders").to_arrow().to_pylist()
    got = tidelake.sql("""
        WITH big AS (SELECT * FROM db.orders WHERE qty >= 50)
        SELECT r.name, count(*) AS n, sum(o.qty) AS total
        FROM big o JOIN db.regions r ON o.region = r.region
        WHERE o.id IN (SELECT id FROM db.orders VERSION AS OF 'first' WHERE id % 2 = 0 OR region = 'us')
        GROUP BY r.name ORDER BY r.name""", catalog=catalog)
    keep = [r for r in rows if r["qty"] >= 50]
    want = [{"name": name, "n": len(part), "total": sum(r["qty"] for r in part)}
            for name, part in (("Europe", [r for r in keep if r["region"] == "eu"]),
                               ("United States", [r for r in keep if r["region"] == "us"]))]
    assert got.to_pylist() == want
    # db.t.col names the column as Spark does; a table without a database is default.t
    assert tidelake.sql("SELECT db.orders.id FROM db.orders WHERE db.orders.id = 42", warehouse=wh).num_rows == 1
    tidelake.Catalog(wh).create_database("default")
    tidelake.Catalog(wh).create_table("default.t", pa.schema([("x", pa.int64())])).write(pa.table({"x": [7]}))
    assert tidelake.sql("SELECT x FROM t", catalog={"warehouse": str(wh)}).to_pylist() == [{"x": 7}]


def _spy_scans(monkeypatch) -> list[tuple]:
    """The (columns, filter tree) of every scan tidelake plans."""
    seen: list[tuple] = []
    scan = tidelake.Table.scan

    def spy(self, columns=None, filter=None, *args, **kw):
        seen.append((columns, None if filter is None else to_json(filter)))
        return scan(self, columns, filter, *args, **kw)

    monkeypatch.setattr(tidelake.Table, "scan", spy)
    return seen


def test_columns_and_filters_are_pushed_into_the_planner(wh, monkeypatch):
    seen = _spy_scans(monkeypatch)
    got = tidelake.sql("SELECT id FROM db.orders WHERE region = 'eu' AND id IN (20, 22, 23)", warehouse=wh)
    assert sorted(got["id"].to_pylist()) == [20, 22]
    columns, pushed = seen[-1]
    assert set(columns) == {"id", "region"}
    terms = pushed["args"] if pushed["op"] == "and" else [pushed]
    assert {"op": "eq", "field": "region", "value": "eu"} in terms
    assert any(t["op"] == "in" and sorted(t["values"]) == [20, 22, 23] for t in
               [a for t in terms for a in (t["args"] if t["op"] == "and" else [t])])
    # a join's key filter reaches the other side's scan too
    seen.clear()
    tidelake.sql("SELECT o.qty, r.name FROM db.orders o JOIN db.regions r ON o.region = r.region "
                 "WHERE r.region = 'us'", warehouse=wh)
    orders_scan = next(p for c, p in seen if c is not None and "qty" in c)
    assert orders_scan == {"op": "eq", "field": "region", "value": "us"}


def test_streaming_reader_and_one_snapshot_per_reference(wh, monkeypatch):
    reader = tidelake.sql_reader("SELECT * FROM db.orders", warehouse=wh)
    assert isinstance(reader, pa.RecordBatchReader)
    assert_same_rows(reader.read_all().sort_by("id"),
                     tidelake.Catalog(wh).get_table("db.orders").to_arrow().sort_by("id"))
    registered: list[str] = []
    import duckdb

    register = duckdb.DuckDBPyConnection.register

    def spy(self, name, rows):
        registered.append(name)
        return register(self, name, rows)

    monkeypatch.setattr(duckdb.DuckDBPyConnection, "register", spy)
    got = tidelake.sql("SELECT count(*) AS n FROM db.orders a JOIN db.orders b ON a.id = b.id "
                       "JOIN db.orders VERSION AS OF 1 c ON c.id = a.id", warehouse=wh)
    assert got["n"].to_pylist() == [90]
    assert registered == ["db.orders", "db.orders VERSION AS OF 1"]


def _run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.main, [str(a) for a in args], prog_name="tidelake")
    return result.exit_code, result.stdout, result.stderr


def test_cli_prints_rows_like_cat(wh):
    code, out, _ = _run("sql", "SELECT id, qty FROM db.orders WHERE id < 13 ORDER BY id", "--warehouse", wh)
    assert code == 0
    assert out.splitlines() == ["id  qty", "--  ---", "10  10", "11  11", "12  12", "(3 rows)"]
    code, out, _ = _run("sql", "SELECT snapshot_id FROM db.`orders$snapshots` ORDER BY 1", "-w", wh, "--json")
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == [{"snapshot_id": i} for i in (1, 2, 3)]
    code, out, _ = _run("-c", f"warehouse={wh}", "sql", "SELECT count(*) AS n FROM db.orders VERSION AS OF 'first'")
    assert code == 0 and out.splitlines()[-2:] == ["100", "(1 row)"]
    code, out, _ = _run("sql", f"SELECT id FROM tidelake.`{wh}/db.db/orders` ORDER BY id", "--limit", 2)
    assert code == 0 and out.splitlines() == ["id", "--", "10", "11", "(2 rows)"]


@pytest.mark.parametrize("args,code,message", [
    (["SELECT * FROM db.nope", "-w", "{wh}"], 3, "db.nope"),
    (["SELECT * FROM db.orders VERSION AS OF 9", "-w", "{wh}"], 3, "snapshot 9"),
    (["SELECT nope FROM db.orders", "-w", "{wh}"], 2, 'column "nope" not found'),
    (["SELECT * FROM db.orders"], 3, "no warehouse or catalog"),
    (["DELETE FROM db.orders", "-w", "{wh}"], 1, "not DELETE"),
    (["SELECT * FROM db.orders", "-w", "{wh}", "-c", "warehouse={wh}"], 2, "not both"),
])
def test_cli_errors_are_one_line_with_exit_codes(wh, args, code, message):
    args = [a.format(wh=wh) for a in args]
    if "-c" in args:  # the catalog is a root option
        i = args.index("-c")
        args = [args[i], args[i + 1], "sql", *args[:i], *args[i + 2:]]
    else:
        args = ["sql", *args]
    got, out, err = _run(*args)
    assert (got, out) == (code, "")
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1


def test_errors_are_typed_and_name_the_problem(wh, tmp_path):
    with pytest.raises(tidelake.TableNotFoundError, match="db.missing"):
        tidelake.sql("SELECT * FROM db.orders JOIN db.missing USING (id)", warehouse=wh)
    with pytest.raises(tidelake.TableNotFoundError, match="no warehouse or catalog"):
        tidelake.sql("SELECT * FROM db.orders")
    with pytest.raises(tidelake.TableNotFoundError, match="tag 'nope'"):
        tidelake.sql("SELECT * FROM db.orders VERSION AS OF 'nope'", warehouse=wh)
    with pytest.raises(tidelake.TableNotFoundError, match="system table"):
        tidelake.sql("SELECT * FROM db.`orders$nope`", warehouse=wh)
    with pytest.raises(tidelake.TableNotFoundError):
        tidelake.sql(f"SELECT * FROM tidelake.`{tmp_path}/nothing`")
    with pytest.raises(tidelake.UnsupportedError, match="no time travel"):
        tidelake.sql("SELECT * FROM db.`orders$files` VERSION AS OF 1", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="ISO-8601"):
        tidelake.sql("SELECT * FROM db.orders TIMESTAMP AS OF 'yesterday'", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="Binder Error.*qtty"):
        tidelake.sql("SELECT qtty FROM db.orders", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="bad SQL"):
        tidelake.sql("SELEC id FROM db.orders", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="bad SQL"):
        tidelake.sql("SELECT (id FROM db.orders", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="one SQL query"):
        tidelake.sql("SELECT 1; SELECT 2", warehouse=wh)
    with pytest.raises(tidelake.InvalidArgumentError, match="not both"):
        tidelake.sql("SELECT 1", warehouse=wh, catalog={"warehouse": str(wh)})
    for statement in ("INSERT INTO db.orders VALUES (1, 'eu', 1)", "CREATE TABLE db.x (a INT)", "DROP TABLE db.orders",
                      "UPDATE db.orders SET qty = 0", "ALTER TABLE db.orders ADD COLUMNS (b INT)",
                      "CALL sys.compact(table => 'db.orders')"):
        with pytest.raises(tidelake.UnsupportedError, match="runs queries"):
            tidelake.sql(statement, warehouse=wh)
    assert tidelake.Catalog(wh).get_table("db.orders").latest_snapshot_id() == 3  # nothing was written


def test_a_damaged_table_raises_tidelakes_error_through_duckdb(wh):
    table = tidelake.Catalog(wh).get_table("db.orders")
    for path in pathlib.Path(table.path).glob("region=eu/bucket-*/*.parquet"):
        path.unlink()
    with pytest.raises(tidelake.CorruptMetadataError, match="missing"):
        tidelake.sql("SELECT sum(qty) FROM db.orders WHERE region = 'eu'", warehouse=wh)
    # the other partition is pruned before any file is opened
    got = tidelake.sql("SELECT sum(qty) AS s FROM db.orders WHERE region = 'us'", warehouse=wh)
    assert got["s"].to_pylist() == [pc.sum(table.to_arrow(snapshot_id=3, filter=[("region", "=", "us")])["qty"])
                                    .as_py()]


def test_branches_by_identifier_and_by_path(wh):
    orders = tidelake.Catalog(wh).get_table("db.orders")
    dev = orders.create_branch("dev", from_snapshot=1)
    dev.upsert(pa.table({"id": [0], "region": ["eu"], "qty": [-1]}))
    want = dev.to_arrow().sort_by("id")
    assert want.num_rows == 100 and orders.to_arrow().num_rows == 90
    assert_same_rows(tidelake.sql("SELECT * FROM db.`orders$branch_dev` ORDER BY id", warehouse=wh), want)
    assert_same_rows(tidelake.sql(f"SELECT * FROM tidelake.`{orders.path}$branch_dev` ORDER BY id"), want)
    assert tidelake.sql("SELECT snapshot_id FROM db.`orders$branch_dev$snapshots` ORDER BY 1",
                        warehouse=wh).to_pylist() == [{"snapshot_id": s.id} for s in dev.snapshots()]
