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
"""

from __future__ import annotations

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
