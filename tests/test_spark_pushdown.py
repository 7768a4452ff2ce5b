"""Why the ``tidelake`` Python data source takes no filters from Spark up to PySpark 4.3, and
that every way of querying a DataFrame again stays exact.

Root cause (a PySpark behaviour, not tidelake's plan caching): in PySpark 4.1-4.3,
``PythonScanBuilder.pushFilters`` plans the read in the filter push-down worker and stores the
result (partitions and read function) on the relation's ``PythonDataSourceV2`` with
``setReadInfo`` (SPARK-51575, which merged push-down and planning into one worker);
``PythonBatch`` takes ``getOrCreateReadInfo``, the stored one. That provider object belongs to
the relation, so it is shared by every scan of it: later queries of the DataFrame or view,
other scans of it in the same query (self-joins), and the plan a cache is built from. A scan
whose query pushes no filter (none at all, or none Spark can serialize to Python) plans
nothing and reads the last stored plan; a scan planned while another scan of the relation
pushes reads the other's plan. Fixed in Spark 5.0 by SPARK-58551 (apache/spark PR 57752): the
read info lives on the scan. No tidelake read is planned with Spark's filters before then
(:func:`tidelake.spark.register` refuses ``filter_pushdown=True``).

The ``PushdownDataSource`` tests below pin that behaviour in the installed PySpark (each
asserts the wrong answer PySpark gives): when one fails, PySpark changed and push-down may be
allowed on that version. The mirrored tests query the registered source the same ways and
assert the right answers.

Why the data source itself cannot prune safely on PySpark <= 4.3 (checked in 4.3.0's
``pyspark/sql/worker/data_source_pushdown_filters.py`` and ``plan_data_source_read.py``): the
push-down worker calls ``reader.pushFilters`` and then, in the same worker, ``partitions()``,
and returns the pickled ``reader.read`` with the partitions; that pair is what the relation
stores and every other scan of it reuses, so neither ``partitions()`` nor the reader instance
is ever asked again. The worker receives the data source, the schema, the filters and runner
confs only (no query id), and the tasks of two scans of one relation in one query (the
self-join test) run the very same stored function on the very same partitions: nothing a task
sees tells it which filters its scan had. So :func:`tidelake.spark.register` switches
push-down on by default only where the read info is kept per scan
(:func:`tidelake.spark.pushdown_is_safe`: PySpark 5.0+, tested below by registering under a
patched version), and on older PySpark the relations that prune are the ones tidelake builds
for one query, with the filter in their options: :func:`tidelake.spark.read` with ``filter=``
and the tables of a ``SELECT`` run by :func:`tidelake.spark.sql` (the ``WHERE`` of the
``SELECT`` that reads the table, not under an outer join). Their tests use a table whose
partition ``a`` is garbage: a pruned read answers, an unpruned one fails, and the same queries
of a healthy copy, repeated with other filters or none, are exact.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest

import tidelake
import tidelake.spark
from _peers import new_warehouse
from tidelake.spark.source import PushdownDataSource

pyspark = pytest.importorskip("pyspark")

import pyarrow as pa  # noqa: E402


def two_partitions(tmp_path) -> str:
    """Table with 3 rows in partition a and 3 in partition b."""
    cat, _ = new_warehouse(tmp_path)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["k", "p"], partition_keys=["p"], bucket=1)
    for p in "ab":
        t.write(pa.table({"k": pa.array([0, 1, 2], pa.int64()), "p": [p] * 3, "v": [f"{p}{i}" for i in range(3)]}))
    return t.path


@pytest.fixture
def pushdown(spark):
    """PySpark's filter push-down on, with the pushing source registered as ``tidelake``."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PushdownDataSource)
    yield spark
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    tidelake.spark.register(spark, check_workers=False)


def test_pyspark_reuses_the_plan_of_the_last_pushdown_for_a_query_without_filters(pushdown, tmp_path):
    df = pushdown.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.count() == 6  # first query: planned without filters
    assert df.where("p = 'b'").count() == 3  # pushes p = 'b': the relation now holds that plan
    assert df.count() == 3  # not 6


def test_pyspark_replans_each_query_that_pushes_a_filter(pushdown, tmp_path):
    df = pushdown.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.where("p = 'a'").count() == 3
    assert df.where("p = 'b'").count() == 3
    assert df.where("k = 1").count() == 2


def test_pyspark_gives_both_scans_of_a_self_join_one_plan(pushdown, tmp_path):
    df = pushdown.read.format("tidelake").load(two_partitions(tmp_path))
    a, b = df.where("p = 'a'").alias("a"), df.where("p = 'b'").alias("b")
    # three pairs match on k; each scan read the plan the other pushed last
    assert a.join(b, "k").count() == 0


def test_pyspark_reuses_a_pushed_plan_for_a_temporary_view(pushdown, tmp_path):
    path = two_partitions(tmp_path)
    pushdown.sql(f"CREATE OR REPLACE TEMPORARY VIEW pushed USING tidelake OPTIONS (path '{path}')")
    assert pushdown.sql("SELECT count(*) AS n FROM pushed WHERE p = 'a'").first().n == 3
    assert pushdown.sql("SELECT count(*) AS n FROM pushed").first().n == 3  # not 6


def test_pyspark_builds_a_cache_from_a_pushed_plan(pushdown, tmp_path):
    df = pushdown.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.where("p = 'a'").count() == 3
    df.cache()
    try:
        assert df.count() == 3  # the cache holds partition a only
        assert df.where("p = 'b'").count() == 0  # and serves every later query
    finally:
        df.unpersist()


# ---- the same queries through the registered source: always exact -------------------------------

def test_filtered_after_unfiltered_and_unfiltered_after_filtered(spark, tmp_path):
    df = spark.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.count() == 6
    assert df.where("p = 'b'").count() == 3
    assert df.count() == 6
    assert df.where("k + 1 = 2").count() == 2  # a filter Spark cannot push


def test_two_different_filters_and_a_self_join(spark, tmp_path):
    df = spark.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.where("p = 'a'").count() == 3
    assert df.where("p = 'b' and k >= 1").count() == 2
    a, b = df.where("p = 'a'").alias("a"), df.where("p = 'b'").alias("b")
    assert a.join(b, "k").count() == 3


def test_temporary_views(spark, tmp_path):
    path = two_partitions(tmp_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW mirrored USING tidelake OPTIONS (path '{path}')")
    assert spark.sql("SELECT count(*) AS n FROM mirrored WHERE p = 'a'").first().n == 3
    assert spark.sql("SELECT count(*) AS n FROM mirrored").first().n == 6
    spark.read.format("tidelake").load(path).where("p = 'b'").createOrReplaceTempView("mirrored_b")
    assert spark.sql("SELECT count(*) AS n FROM mirrored_b").first().n == 3
    assert spark.sql("SELECT count(*) AS n FROM mirrored_b WHERE k = 0").first().n == 1


def test_cached_dataframes(spark, tmp_path):
    df = spark.read.format("tidelake").load(two_partitions(tmp_path))
    assert df.where("p = 'a'").count() == 3
    df.cache()
    try:
        assert df.count() == 6
        assert df.where("p = 'b'").count() == 3
    finally:
        df.unpersist()


# ---- reads tidelake builds per query prune: tidelake.spark.read(filter=) and tidelake.spark.sql ---

def corrupt_partition(path: str, partition: str) -> None:
    """Overwrite every data file of ``partition`` (of column ``p``) with garbage."""
    files = list(pathlib.Path(path, f"p={partition}").rglob("*.parquet"))
    assert files
    for f in files:
        f.write_bytes(b"not parquet" * 100)


def corrupted_and_healthy(tmp_path) -> tuple[str, str]:
    """Two copies of a table with partitions a and b (b merges two writes, so it is read by the
    data source; a is one plain file), partition a of the first overwritten with garbage."""
    path = two_partitions(tmp_path)
    tidelake.open_table(path).write(pa.table({"k": pa.array([2, 3], pa.int64()), "p": ["b", "b"],
                                              "v": ["b2'", "b3"]}))
    healthy = str(tmp_path / "healthy")
    shutil.copytree(path, healthy)
    corrupt_partition(path, "a")
    return path, healthy


def test_the_corrupted_partition_fails_an_unpruned_read(spark, tmp_path):
    corrupted, _ = corrupted_and_healthy(tmp_path)
    with pytest.raises(Exception):
        tidelake.spark.read(spark, corrupted).count()


def test_read_with_a_filter_never_opens_the_files_it_rules_out(spark, tmp_path):
    corrupted, healthy = corrupted_and_healthy(tmp_path)
    df = tidelake.spark.read(spark, corrupted, filter="p = 'b'")
    assert sorted(r.v for r in df.collect()) == ["b0", "b1", "b2'", "b3"]
    assert df.count() == 4
    assert df.where("k >= 2").count() == 2
    assert sorted(tidelake.spark.read(spark, corrupted, columns=["v"], filter="p = 'b' and k < 2").columns) == ["v"]
    assert tidelake.spark.read(spark, corrupted, columns=["v"], filter="p = 'b' and k < 2").count() == 2
    # the same reads of the healthy copy, then unfiltered: every row
    assert tidelake.spark.read(spark, healthy, filter="p = 'b'").count() == 4
    assert tidelake.spark.read(spark, healthy).count() == 7


def test_read_with_a_filter_queried_again(spark, tmp_path):
    _, healthy = corrupted_and_healthy(tmp_path)
    df = tidelake.spark.read(spark, healthy, filter="k >= 1")
    assert df.count() == 5
    assert df.where("p = 'a'").count() == 2  # filtered after unfiltered
    assert df.where("p = 'b'").count() == 3  # two different filters
    assert df.count() == 5
    a, b = df.where("p = 'a'").alias("a"), df.where("p = 'b'").alias("b")
    assert a.join(b, "k").count() == 2
    df.createOrReplaceTempView("read_filtered")
    assert spark.sql("SELECT count(*) AS n FROM read_filtered WHERE p = 'a'").first().n == 2
    assert spark.sql("SELECT count(*) AS n FROM read_filtered").first().n == 5
    df.where("p = 'b'").cache()
    try:
        assert df.where("p = 'b'").count() == 3
        assert df.count() == 5
    finally:
        df.where("p = 'b'").unpersist()


def test_sql_prunes_with_the_where_of_each_select(spark, tmp_path):
    corrupted, healthy = corrupted_and_healthy(tmp_path)

    def count(path: str, tail: str = "") -> int:
        return tidelake.spark.sql(spark, f"SELECT count(*) AS n FROM tidelake.`{path}` {tail}").first().n

    assert count(corrupted, "WHERE p = 'b'") == 4
    assert count(corrupted, "t WHERE t.p = 'b' AND k >= 2") == 2
    assert tidelake.spark.sql(spark, f"SELECT x.k FROM tidelake.`{corrupted}` x JOIN tidelake.`{corrupted}` y "
                                     "ON x.k = y.k WHERE x.p = 'b' AND y.p IN ('b') AND x.k < 1").count() == 1
    # the same statements on the healthy copy, then without WHERE: every row
    assert count(healthy, "WHERE p = 'b'") == 4
    assert count(healthy) == 7
    assert count(healthy, "WHERE p = 'a'") == 3


def test_sql_does_not_prune_what_its_where_does_not_filter(spark, tmp_path):
    _, healthy = corrupted_and_healthy(tmp_path)
    # an outer join: the WHERE also sees null-extended rows (every row matches itself: none is
    # null-extended; pruning y to `v IS NULL` would make all of them so)
    assert tidelake.spark.sql(spark, f"SELECT x.k FROM tidelake.`{healthy}` x LEFT JOIN tidelake.`{healthy}` y "
                                     "ON x.k = y.k AND x.p = y.p WHERE y.v IS NULL").count() == 0
    # a WHERE in a subquery filters the subquery's table, not the outer one
    assert tidelake.spark.sql(spark, f"SELECT count(*) AS n FROM tidelake.`{healthy}` WHERE k IN "
                                     f"(SELECT k FROM tidelake.`{healthy}` WHERE p = 'a')").first().n == 6
    # a string literal against a number column: Spark casts it, tidelake does not prune with it
    assert tidelake.spark.sql(spark, f"SELECT count(*) AS n FROM tidelake.`{healthy}` "
                                     "WHERE k = '1'").first().n == 2


def test_pruning_terms():
    schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("d", pa.date32())])
    from tidelake import expr
    from tidelake.spark.pruning import condition_filter

    assert condition_filter("p = 'b' and k > 1 and k + 1 = 2", schema) == expr.And(
        (expr.Comparison("p", expr.Compare.EQ, "b"), expr.Comparison("k", expr.Compare.GT, 1)))
    assert condition_filter("k = '1' or p = 'b'", schema) is None
    assert condition_filter("k = '1' and p in ('a', 'b')", schema) == expr.InList("p", ("a", "b"))
    assert condition_filter("u.p = 'b' and t.k is null", schema, "T") == expr.IsNull("k")
    assert condition_filter("p = ", schema) is None  # Spark reports what is wrong with it
    assert condition_filter("d >= '2026-11-01' and d = '2026-11' and d in ('2026-13-01')", schema) == \
        expr.Comparison("d", expr.Compare.GE, "2026-11-01")


def test_a_date_partition_is_pruned_by_a_date_string(spark, tmp_path):
    import datetime as dt

    cat, _ = new_warehouse(tmp_path)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("d", pa.date32())])
    t = cat.create_table("db.d", schema, partition_keys=["d"])
    for day in (1, 2):
        t.write(pa.table({"k": pa.array([day], pa.int64()), "d": pa.array([dt.date(2026, 11, day)])}))
    epoch_day = (dt.date(2026, 11, 1) - dt.date(1970, 1, 1)).days  # Paimon's legacy partition name
    corrupt = list(pathlib.Path(t.path, f"d={epoch_day}").rglob("*.parquet"))
    assert corrupt
    for f in corrupt:
        f.write_bytes(b"garbage")
    with pytest.raises(Exception):
        tidelake.spark.read(spark, t.path, filter="k + 0 = 2").count()  # not a term tidelake prunes with
    assert [r.k for r in tidelake.spark.read(spark, t.path, filter="d = '2026-11-02'").collect()] == [2]
    assert [r.k for r in tidelake.spark.read(spark, t.path, filter="d > '2026-11-01'").collect()] == [2]


def test_the_filter_option_is_a_json_tree():
    from tidelake import expr
    from tidelake.spark.source import given_filter

    tree = expr.Comparison("p", expr.Compare.EQ, "b")
    assert given_filter({"filter": expr.filter_json(tree)}) == tree
    assert given_filter({}) is None
    with pytest.raises(tidelake.InvalidArgumentError, match="option filter must be a JSON filter tree"):
        given_filter({"filter": "p = 'b'"})


# ---- the data source: prunes only on a PySpark that plans each scan on its own ---------------

def test_the_data_source_prunes_where_pushdown_is_safe(spark, tmp_path, monkeypatch):
    corrupted, healthy = corrupted_and_healthy(tmp_path)
    assert not tidelake.spark.pushdown_is_safe("4.3.0") and not tidelake.spark.pushdown_is_safe("4.1.1")
    assert tidelake.spark.pushdown_is_safe("5.0.0") and tidelake.spark.pushdown_is_safe("5.0.0.dev1")
    if not tidelake.spark.pushdown_is_safe(pyspark.__version__):
        # PySpark <= 4.3: no push-down, so the data source reads partition a for any filter
        with pytest.raises(Exception):
            spark.read.format("tidelake").load(corrupted).where("p = 'b'").count()
    monkeypatch.setattr(pyspark, "__version__", "5.0.0")
    tidelake.spark.register(spark, check_workers=False)  # push-down on by default
    try:
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
        assert spark.read.format("tidelake").load(corrupted).where("p = 'b'").count() == 4
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW pruned USING tidelake OPTIONS (path '{corrupted}')")
        assert spark.sql("SELECT count(*) AS n FROM pruned WHERE p = 'b'").first().n == 4
        assert spark.read.format("tidelake").load(healthy).count() == 7
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        monkeypatch.undo()
        tidelake.spark.register(spark, check_workers=False)
