"""Other engines over tidelake tables: polars' lazy scan (projection, predicates, row limits pushed
into tidelake), pandas and polars frames, and time travel by datetime / ISO string / epoch ms.
Local and S3 (moto)."""

from __future__ import annotations

import datetime as dt
import time

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelake
from _s3 import Storage
from tidelake.expr import polars_plan, substrait, to_filter, to_json
from tidelake.polars import scan_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.string()), ("x", pa.float64()),
                    ("d", pa.date32()), ("ok", pa.bool_())])


def _json(filter):
    """The engine JSON of a filter handed to Table.scan (None: no filter)."""
    tree = to_filter(filter)
    return None if tree is None else to_json(tree)


def _pushed(translated):
    """A translator's tree as engine JSON (None: nothing pushed)."""
    return None if translated is None else to_json(translated)


def _rows(ids, version: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": [None if i % 11 == 0 else f"s{(i + version) % 7}" for i in ids],
        "x": [i / 3 + version for i in ids],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 90) for i in ids],
        "ok": [i % 2 == 0 for i in ids],
    }, schema=SCHEMA)


@pytest.fixture
def table(storage: Storage):
    t = storage.create_table("t", SCHEMA, primary_keys=["id"], bucket=2)
    t.write(_rows(range(200)))
    t.upsert(_rows(range(0, 200, 3), version=1))
    return t


def _expected(t: tidelake.Table) -> pl.DataFrame:
    return pl.from_arrow(t.to_arrow())


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.sort("id").to_dicts() == b.sort("id").to_dicts()


PREDICATES = [
    (pl.col("id") > 150) & (pl.col("s") == "s1"),
    pl.col("s").is_in(["s1", "s2"]) | (pl.col("x") < 1),
    pl.col("d") >= dt.date(2024, 3, 1),
    pl.col("x").is_between(3, 40),
    pl.col("s").is_null() | pl.col("ok"),
    ~(pl.col("id") == 4),
    pl.col("s").str.starts_with("s3"),
    (pl.lit(100) < pl.col("id")) & (pl.col("x") * 2 > 90),
]


@pytest.mark.parametrize("predicate", PREDICATES, ids=range(len(PREDICATES)))
def test_lazy_scan_filters_like_polars(table, predicate):
    lazy = scan_table(table).filter(predicate).select("id", "s", "x")
    _same(lazy.collect(), _expected(table).filter(predicate).select("id", "s", "x"))
    # re-scannable: a second collect of the same frame reads the same rows
    _same(lazy.collect(), _expected(table).filter(predicate).select("id", "s", "x"))


def test_lazy_scan_pushes_projection_filter_and_limit(table, monkeypatch):
    seen = []
    scan = tidelake.Table.scan

    def spy(self, columns=None, filter=None, *args, **kw):
        seen.append((columns, _json(filter)))
        return scan(self, columns, filter, *args, **kw)

    monkeypatch.setattr(tidelake.Table, "scan", spy)
    frame = scan_table(table).filter((pl.col("id") >= 190) & (pl.col("x") * 2 > 1)).select("s").collect()
    assert frame.height == 10
    columns, tree = seen[-1]
    assert columns is not None and set(columns) == {"s", "id", "x"}
    # the comparison with a literal is pushed down; the arithmetic one is left to polars
    assert tree == {"op": "ge", "field": "id", "value": 190}
    assert scan_table(table).head(7).collect().height == 7


def test_predicate_translation_is_exact_or_absent():
    schema = SCHEMA

    def tree(expr):
        import json
        return _pushed(polars_plan.pushable_filter(json.loads(expr.meta.serialize(format="json")), schema))

    assert tree(pl.col("id") == 3) == {"op": "eq", "field": "id", "value": 3}
    assert tree(pl.lit(3) > pl.col("id")) == {"op": "lt", "field": "id", "value": 3}
    assert tree(pl.col("s").is_in(["a", "b"])) == {"op": "in", "field": "s", "values": ["a", "b"]}
    assert tree(pl.col("d") == dt.date(2024, 1, 2)) == {"op": "eq", "field": "d", "value": "2024-01-02"}
    assert tree(pl.col("s").is_null() | (pl.col("id") != 2)) == {
        "op": "or", "args": [{"op": "is_null", "field": "s"}, {"op": "ne", "field": "id", "value": 2}]}
    assert tree(pl.col("id").is_between(3, 9, closed="left")) == {
        "op": "and", "args": [{"op": "ge", "field": "id", "value": 3}, {"op": "lt", "field": "id", "value": 9}]}
    # a literal whose meaning could differ between the engines is not pushed down
    assert tree(pl.col("id") > 2.5) is None
    assert tree(pl.col("x") > float("nan")) is None
    assert tree(pl.col("s").is_in(["a", None])) is None
    # an OR with an untranslatable side, and a NOT, stay with polars
    assert tree((pl.col("id") == 1) | (pl.col("x") * 2 > 3)) is None
    assert tree(~(pl.col("id") == 1)) is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lo=st.integers(-5, 210), width=st.integers(0, 80), names=st.lists(st.sampled_from(["s0", "s3", "s6", "zz"]),
                                                                         max_size=3),
       limit=st.one_of(st.none(), st.integers(0, 50)))
def test_random_pushed_filters_equal_polars(table, lo, width, names, limit):
    predicate = pl.col("id").is_between(lo, lo + width) | pl.col("s").is_in(names)
    got = scan_table(table).filter(predicate)
    want = _expected(table).filter(predicate)
    if limit is None:
        _same(got.collect(), want)
    else:
        frame = got.head(limit).collect()
        assert frame.height == min(limit, want.height)
        assert set(frame["id"]) <= set(want["id"])


def test_frames_and_lazy_scan_of_a_path(table, storage: Storage):
    assert table.to_pandas(filter=[("id", "<", 3)]).sort_values("id")["id"].tolist() == [0, 1, 2]
    assert table.to_polars(columns=["id"]).height == 200
    lazy = scan_table(table.path, storage_options=storage.options)
    assert lazy.select(pl.len()).collect().item() == 200
    assert lazy.collect_schema() == pl.Schema({"id": pl.Int64, "s": pl.String, "x": pl.Float64, "d": pl.Date,
                                               "ok": pl.Boolean})


def test_a_lazy_scan_is_pinned_to_its_snapshot(table):
    lazy = scan_table(table)
    before = lazy.select(pl.len()).collect().item()
    table.write(_rows(range(500, 510)))
    assert lazy.select(pl.len()).collect().item() == before
    assert scan_table(table).select(pl.len()).collect().item() == before + 10
    first = table.snapshots()[0].id
    assert scan_table(table, snapshot_id=first).select(pl.len()).collect().item() == 200


def test_time_travel_by_datetime_iso_string_and_epoch_ms(storage: Storage):
    t = storage.create_table("tt", SCHEMA, primary_keys=["id"], bucket=1)
    t.write(_rows(range(5)))
    time.sleep(0.05)
    t.write(_rows(range(5, 8)))
    first, second = t.snapshots()
    between = first.time_millis + (second.time_millis - first.time_millis) // 2
    assert second.time_millis > first.time_millis
    at = dt.datetime.fromtimestamp(between / 1000, tz=dt.timezone.utc)
    for point in (at, at.astimezone().replace(tzinfo=None), at.isoformat(), between, first.time_millis):
        assert t.to_arrow(timestamp=point).num_rows == 5, point
    assert t.to_arrow(timestamp=second.time_millis).num_rows == 8
    assert t.to_polars(timestamp=dt.datetime.now()).height == 8
    assert scan_table(t, timestamp=at).select(pl.len()).collect().item() == 5
    with pytest.raises(tidelake.InvalidArgumentError, match="ISO-8601"):
        t.to_arrow(timestamp="yesterday")
    with pytest.raises(tidelake.InvalidArgumentError, match="not both"):
        t.to_arrow(timestamp=at, timestamp_ms=between)
    with pytest.raises(tidelake.TidelakeError):
        t.to_arrow(timestamp=first.time_millis - 60_000)


# ---- one-line writes ------------------------------------------------------------------------

def test_write_table_creates_from_any_frame_then_follows_the_mode(storage: Storage):
    import pandas as pd

    loc = storage.location("w")
    t = tidelake.write_table(loc, pd.DataFrame({"id": [1, 2], "s": ["a", "b"]}), primary_keys=["id"],
                             partition_by=None, bucket=2, options={"file.format": "parquet"},
                             storage_options=storage.options)
    assert t.primary_keys == ["id"] and t.options["bucket"] == "2"
    assert t.schema.field("id").type == pa.int64() and not t.schema.field("id").nullable
    with pytest.raises(tidelake.TableAlreadyExistsError):
        tidelake.write_table(loc, pd.DataFrame({"id": [3], "s": ["c"]}), storage_options=storage.options)
    tidelake.write_table(loc, pl.DataFrame({"id": [2, 3], "s": ["B", "c"]}), mode="append",
                         storage_options=storage.options)
    assert sorted(tidelake.open_table(loc, storage.options).to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "s": "a"}, {"id": 2, "s": "B"}, {"id": 3, "s": "c"}]
    tidelake.write_table(loc, pa.table({"id": [9], "s": ["z"]}), mode="ignore", storage_options=storage.options)
    assert t.refresh().to_arrow().num_rows == 3
    stream = pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64()), ("s", pa.string())]),
                                               [pa.record_batch({"id": [7], "s": ["q"]})])
    tidelake.write_table(loc, stream, mode="overwrite", storage_options=storage.options)
    assert t.refresh().to_arrow().to_pylist() == [{"id": 7, "s": "q"}]
    with pytest.raises(tidelake.SchemaMismatchError, match="primary keys"):
        tidelake.write_table(loc, pa.table({"id": [1], "s": ["x"]}), mode="append", primary_keys=["s"],
                             storage_options=storage.options)
    with pytest.raises(tidelake.InvalidArgumentError, match="mode"):
        tidelake.write_table(loc, pa.table({"id": [1]}), mode="upsert", storage_options=storage.options)


def test_write_table_through_a_catalog_and_create_table_from_data(storage: Storage):
    cat = tidelake.Catalog(storage.root, storage_options=storage.options)
    cat.create_database("db")
    frame = pl.DataFrame({"k": [1, 2], "dt": ["a", "b"], "v": [1.5, 2.5]})
    t = tidelake.write_table("db.events", frame, partition_by=["dt"], catalog=cat)
    assert t.partition_keys == ["dt"] and cat.get_table("db.events").to_arrow().num_rows == 2
    made = tidelake.create_table(storage.location("from-data"), frame, primary_keys=["k"],
                                  storage_options=storage.options)
    assert made.schema.names == ["k", "dt", "v"] and made.to_arrow().num_rows == 0


def test_racing_first_writes_create_once_and_keep_every_row(storage: Storage, tmp_path):
    import multiprocessing as mp

    from _workers import release_when_ready, write_table_first

    loc = storage.location("race")
    ready, go = tmp_path / "ready", str(tmp_path / "go")
    ready.mkdir()
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = [pool.apply_async(write_table_first, (loc, w, go, str(ready), storage.options)) for w in range(4)]
        release_when_ready(str(ready), 4, go)
        assert sorted(r.get(timeout=120) for r in results) == [0, 1, 2, 3]
    t = tidelake.open_table(loc, storage.options)
    assert sorted(t.to_arrow().column("k").to_pylist()) == sorted(w * 100 + i for w in range(4) for i in range(10))
    assert len(t.schemas()) == 1


# ---- DuckDB through the pyarrow Dataset facade ------------------------------------------------

QUERIES = [
    ("select id, s from d where id >= 150 and x < 60", lambda r: r["id"] >= 150 and r["x"] < 60, ["id", "s"]),
    ("select id from d where s in ('s1', 's4') or s is null",
     lambda r: r["s"] in ("s1", "s4") or r["s"] is None, ["id"]),
    ("select id, d from d where d between date '2024-02-01' and date '2024-02-10'",
     lambda r: dt.date(2024, 2, 1) <= r["d"] <= dt.date(2024, 2, 10), ["id", "d"]),
]


@pytest.mark.parametrize("sql,keep,columns", QUERIES, ids=range(len(QUERIES)))
def test_duckdb_queries_a_table_dataset(table, sql, keep, columns):
    import duckdb

    d = table.to_pyarrow_dataset()  # noqa: F841 (found by DuckDB's replacement scan)
    want = sorted(tuple(r[c] for c in columns) for r in table.to_arrow().to_pylist() if keep(r))
    assert sorted(duckdb.sql(sql).fetchall()) == want
    assert sorted(duckdb.sql(sql).fetchall()) == want  # scanned again


def _spy_scans(monkeypatch) -> list[tuple]:
    """Record the (columns, filter) of every Table.scan."""
    seen: list[tuple] = []
    scan = tidelake.Table.scan

    def spy(self, columns=None, filter=None, *args, **kw):
        seen.append((columns, _json(filter)))
        return scan(self, columns, filter, *args, **kw)

    monkeypatch.setattr(tidelake.Table, "scan", spy)
    return seen


def test_duckdb_pushes_its_columns_and_filters_into_tidelake(table, monkeypatch):
    import duckdb

    want = sum(r["x"] for r in table.to_arrow().to_pylist()
               if r["id"] < 10 and r["s"] is not None and r["s"] != "s3")  # SQL: NULL <> 's3' is not true
    seen = _spy_scans(monkeypatch)
    d = table.to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("t", d)
    assert con.sql("select sum(x) from t where id < 10 and s <> 's3'").fetchall()[0][0] == pytest.approx(want)
    columns, pushed = seen[-1]
    assert set(columns) == {"x", "id", "s"}
    terms = pushed["args"] if pushed["op"] == "and" else [pushed]
    assert {"op": "lt", "field": "id", "value": 10} in terms  # the planner prunes by it
    assert con.sql("select count(*) from t").fetchall() == [(200,)]
    assert seen[-1][1] is None


def test_expression_filters_push_what_the_planner_can_take(table, monkeypatch):
    import pyarrow.compute as pc

    def pushable_filter(expression, schema):
        return _pushed(substrait.pushable_filter(expression, schema))

    expr = ((pc.field("id") >= 10) & (pc.field("x") * 2 > 8)) | pc.field("s").isin(["s1"])
    assert pushable_filter(expr, SCHEMA) == {"op": "or", "args": [  # implied by expr: a safe prefilter
        {"op": "ge", "field": "id", "value": 10}, {"op": "in", "field": "s", "values": ["s1"]}]}
    assert pushable_filter((pc.field("x") * 2 > 8) | (pc.field("id") < 3), SCHEMA) is None
    expr = (pc.field("id") >= 10) & (pc.field("x") * 2 > 8) & pc.field("s").isin(["s1", "s2"])
    assert pushable_filter(expr, SCHEMA) == {"op": "and", "args": [
        {"op": "ge", "field": "id", "value": 10}, {"op": "in", "field": "s", "values": ["s1", "s2"]}]}
    assert pushable_filter(~(pc.field("id") == 3), SCHEMA) is None
    assert pushable_filter(pc.field("id") > 5.5, SCHEMA) is None  # int column, float literal
    assert pushable_filter(pc.field("ok"), SCHEMA) == {"op": "eq", "field": "ok", "value": True}
    assert pushable_filter(pc.field("d") == pa.scalar(dt.date(2024, 1, 2)), SCHEMA) == {
        "op": "eq", "field": "d", "value": "2024-01-02"}
    assert pushable_filter(pc.field("s").is_null() | (pc.field("x") < 3), SCHEMA) == {"op": "or", "args": [
        {"op": "is_null", "field": "s"}, {"op": "lt", "field": "x", "value": 3.0}]}
    in_list = pc.field("id").isin([1, 2])  # DuckDB's IN: if valid(id) then id in (1, 2) else null
    assert pushable_filter(pc.if_else(pc.is_valid(pc.field("id")), in_list, pa.scalar(None, pa.bool_())),
                           SCHEMA) == {"op": "and", "args": [{"op": "is_not_null", "field": "id"},
                                                             {"op": "in", "field": "id", "values": [1, 2]}]}
    assert pushable_filter(pc.if_else(pc.field("ok"), in_list, pa.scalar(True)), SCHEMA) is None  # else keeps

    seen = _spy_scans(monkeypatch)
    want = [r for r in table.to_arrow().to_pylist() if r["id"] >= 10 and r["x"] * 2 > 8 and r["s"] in ("s1", "s2")]
    got = table.to_arrow(filter=expr)
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(want, key=lambda r: r["id"])
    assert seen[-1][1] == pushable_filter(expr, SCHEMA)


def test_expression_filters_without_substrait_are_applied_unpushed(table, monkeypatch):
    import builtins

    import pyarrow.compute as pc

    pushable_filter = substrait.pushable_filter
    real_import = builtins.__import__

    def no_substrait(name, *args, **kwargs):
        if name.startswith("substrait"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_substrait)
    expr = pc.field("id") < 7
    assert pushable_filter(expr, SCHEMA) is None
    assert sorted(table.to_arrow(filter=expr)["id"].to_pylist()) == list(range(7))


def test_a_dataset_is_pinned_and_answers_pyarrow_calls(table):
    import pyarrow.compute as pc

    d = table.to_pyarrow_dataset()
    table.write(_rows(range(500, 505)))
    assert d.count_rows() == 200 and table.to_pyarrow_dataset().count_rows() == 205
    assert d.count_rows(filter=pc.field("id") < 5) == 5
    assert d.head(3, columns=["id"]).num_rows == 3
    assert d.to_table(columns=["s"], filter=pc.field("id") == 7).to_pylist() == [
        {"s": table.to_arrow(filter=[("id", "=", 7)])["s"][0].as_py()}]
    empty = tidelake.create_table(table.path + "-empty", SCHEMA, storage_options=table.storage_options)
    assert empty.to_pyarrow_dataset().to_table().num_rows == 0


def test_changes_between_timestamps(storage: Storage):
    t = storage.create_table("ch", SCHEMA, primary_keys=["id"], bucket=1)
    for i in range(3):
        t.write(_rows(range(i * 10, i * 10 + 10)))
        time.sleep(0.02)
    s1, s2, s3 = t.snapshots()
    assert t.snapshot_at(s2.time_millis) == s2 and t.snapshot_at(s1.time_millis - 1) is None
    iso = dt.datetime.fromtimestamp(s1.time_millis / 1000, tz=dt.timezone.utc).isoformat()
    between = t.changes(start_timestamp=iso, end_timestamp=s2.time_millis)
    assert sorted(between["id"].to_pylist()) == list(range(10, 20))
    assert set(between["_row_kind"].to_pylist()) == {"+I"}
    assert t.changes(start_timestamp=s1.time_millis).num_rows == 20
    assert t.changes(start_timestamp=s1.time_millis - 1).num_rows == 30  # before every snapshot
    assert t.changes(start_timestamp=s3.time_millis, end_timestamp=dt.datetime.now()).num_rows == 0
    with pytest.raises(tidelake.InvalidArgumentError, match="not both"):
        t.changes(1, start_timestamp=s1.time_millis)
    with pytest.raises(tidelake.InvalidArgumentError, match="start_snapshot, start_timestamp or start_tag"):
        t.changes()
