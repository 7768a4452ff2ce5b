"""The ``tidelake`` Spark source and ``tidelake.spark.write`` on a real local SparkSession:
batch writes and reads equal tidelake's own (and pypaimon's) view of the table, overwrite /
upsert / delete semantics, time travel, projection, opt-in filter push-down, task retries and
aborts leaving no committed or orphaned files, bucket routing and pickling.

One session for all Spark tests (``spark`` fixture in conftest: ``local[2,3]``, session time
zone America/Los_Angeles, 500-row Arrow batches).
"""

from __future__ import annotations

import datetime as dt
import decimal
import pickle

import pyarrow as pa
import pytest

import tidelake
import tidelake.spark
from _peers import new_warehouse, pp_read
from conftest import assert_same_rows
from tidelake import expr
from tidelake.expr.spark_filters import spark_filter
from tidelake.spark import io as spark_io
from tidelake.spark import source as spark_source
from tidelake.spark.source import BatchWriter, TidelakeDataSource
from tidelake.startup import ScanMode

pyspark = pytest.importorskip("pyspark")

UTC = dt.timezone.utc
D = decimal.Decimal

TYPES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("ltz", pa.timestamp("us", tz="UTC")),
    ("ntz", pa.timestamp("us")),
    ("dec", pa.decimal128(10, 2)),
    ("big", pa.decimal128(38, 10)),
    ("d", pa.date32()),
    ("s", pa.string()),
    ("bin", pa.binary()),
    ("arr", pa.list_(pa.int32())),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.struct([("k", pa.string())])))])),
])


def typed_rows(start: int, n: int) -> pa.Table:
    rows = [{
        "id": i,
        "ltz": dt.datetime(2024, 3, 10, 9, 30, tzinfo=UTC) + dt.timedelta(hours=i, microseconds=i),
        "ntz": dt.datetime(2024, 11, 3, 1, 30) + dt.timedelta(minutes=i),
        "dec": D(i) / 4 if i % 5 else None,
        "big": D("12345678901234567890.0123456789") + i,
        "d": dt.date(1969, 12, 31) + dt.timedelta(days=i),
        "s": None if i % 7 == 0 else f"s{i}é",
        "bin": bytes([i % 256, 0]),
        "arr": [i, None, -i],
        "st": {"x": i, "y": [{"k": f"k{i}"}]},
    } for i in range(start, start + n)]
    return pa.Table.from_pylist(rows, schema=TYPES)


def spark_df(spark, table: pa.Table, partitions: int = 2):
    from pyspark.sql.pandas.types import from_arrow_schema

    # TIMESTAMP without zone is TIMESTAMP_NTZ (Spark's default would read it as local time)
    schema = from_arrow_schema(table.schema, prefer_timestamp_ntz=True)
    return spark.createDataFrame(table, schema=schema).repartition(partitions)


def read(spark, path: str, **options) -> pa.Table:
    reader = spark.read.format("tidelake")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(path).toArrow()


def orphans(path: str) -> list:
    """Files in the table directory that no snapshot references (whatever their age)."""
    return tidelake.open_table(path).remove_orphan_files(older_than_ms=2**62, dry_run=True)


def kv_table(wh_path, name="t", pk=True, bucket=2, partition=False, **options):
    cat, wh = new_warehouse(wh_path)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
    t = cat.create_table(f"db.{name}", schema, primary_keys=(["k", "p"] if partition else ["k"]) if pk else None,
                         partition_keys=["p"] if partition else None, bucket=bucket, options=options or None)
    return t, wh


def kv(keys, p="a", tag="v") -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "p": [p] * len(keys),
                     "v": [f"{tag}{k}" for k in keys]})


# ---- batch write + read -----------------------------------------------------------------------

@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_round_trip_all_types_equals_tidelake_and_pypaimon(spark, tmp_path, pk):
    cat, wh = new_warehouse(tmp_path)
    t = cat.create_table("db.t", TYPES, primary_keys=["id"] if pk else None, bucket=2 if pk else None)
    data = typed_rows(0, 4000)
    spark_df(spark, data, 3).write.format("tidelake").mode("append").save(t.path)

    ours = tidelake.open_table(t.path).to_arrow()
    assert_same_rows(ours, data)
    got = read(spark, t.path)
    # Spark's read: exact values, timestamps with zone as UTC instants, TIMESTAMP as NTZ
    assert got.schema.field("ltz").type == pa.timestamp("us", tz="UTC")
    assert got.schema.field("ntz").type == pa.timestamp("us")
    assert_same_rows(got.cast(TYPES), data)
    theirs = pp_read(wh, "db.t", None, schema=ours.schema)
    assert_same_rows(theirs.select(ours.schema.names).cast(ours.schema), ours)
    # 4000 rows in 500-row Spark batches from 3 tasks: one file per task and bucket, and one
    # row group per file, not one per Spark batch
    import pyarrow.parquet as pq

    files = tidelake.open_table(t.path).system("files").to_pylist()
    assert len(files) <= 3 * (2 if pk else 1)
    assert all(pq.ParquetFile(f["file_path"]).num_row_groups == 1 for f in files)
    assert max(f["record_count"] for f in files) > 500


def test_object_store_tables_through_storage_options(spark, s3_server):
    """``storage.*`` source options and ``write(storage_options=...)`` reach every Spark-side
    open of a table on S3 (the moto server): planner, tasks and the commit worker."""
    opts = s3_server.options
    path = f"s3://{s3_server.new_bucket()}/db.db/t"
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
    t = tidelake.create_table(path, schema, primary_keys=["k"], bucket=2, storage_options=opts)
    writer = spark_df(spark, kv(range(100))).write.format("tidelake").mode("append")
    for k, v in opts.items():
        writer = writer.option(f"storage.{k}", v)
    writer.save(path)
    tidelake.spark.write(spark_df(spark, kv(range(50, 120), tag="w")), path, mode="upsert", storage_options=opts)
    expected = pa.concat_tables([kv(range(50)), kv(range(50, 120), tag="w")])
    assert_same_rows(t.to_arrow(), expected)
    assert_same_rows(read(spark, path, **{f"storage.{k}": v for k, v in opts.items()}), expected)


def test_pk_upsert_semantics_and_overwrite(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    spark_df(spark, kv(range(100))).write.format("tidelake").mode("append").save(t.path)
    spark_df(spark, kv(range(50, 150), tag="w")).write.format("tidelake").mode("append").save(t.path)
    got = read(spark, t.path)
    expected = pa.concat_tables([kv(range(50)), kv(range(50, 150), tag="w")])
    assert_same_rows(got, expected)
    assert [s.commit_kind for s in tidelake.open_table(t.path).snapshots()] == ["APPEND", "APPEND"]

    spark_df(spark, kv(range(7), tag="o")).write.format("tidelake").mode("overwrite").save(t.path)
    assert_same_rows(read(spark, t.path), kv(range(7), tag="o"))
    assert tidelake.open_table(t.path).latest_snapshot().commit_kind == "OVERWRITE"


def test_time_travel_by_snapshot_tag_and_timestamp(spark, tmp_path):
    t, _ = kv_table(tmp_path, pk=False, bucket=-1)
    t.write(kv([1, 2]))
    t.create_tag("first")
    first = t.latest_snapshot()
    t.write(kv([3]))
    assert_same_rows(read(spark, t.path, **{"snapshot-id": 1}), kv([1, 2]))
    assert_same_rows(read(spark, t.path, tag="first"), kv([1, 2]))
    assert_same_rows(read(spark, t.path, **{"timestamp-ms": first.time_millis}), kv([1, 2]))
    assert_same_rows(read(spark, t.path), kv([1, 2, 3]))
    with pytest.raises(Exception, match="TableNotFoundError|snapshot"):
        read(spark, t.path, **{"snapshot-id": 9})


def test_time_travel_reads_in_the_schema_of_its_snapshot(spark, tmp_path):
    """As in Paimon, a pinned read has the columns its snapshot was written with (the read used
    to take the latest schema and failed on the column added since)."""
    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2]))
    t.create_tag("first")
    t = t.add_column("extra", pa.int32())
    t.write(pa.table({"k": pa.array([3], pa.int64()), "p": ["a"], "v": ["v3"], "extra": pa.array([7], pa.int32())}))
    for pinned in ({"snapshot-id": 1}, {"tag": "first"}):
        got = read(spark, t.path, **pinned)
        assert got.schema.names == ["k", "p", "v"]
        assert_same_rows(got, kv([1, 2]))
    assert_same_rows(read(spark, t.path), t.to_arrow())
    assert read(spark, t.path).column("extra").to_pylist().count(7) == 1


def test_user_schema_projects_and_casts(spark, tmp_path):
    t, _ = kv_table(tmp_path, pk=False, bucket=-1)
    t.write(kv([1, 2, 3]))
    got = spark.read.format("tidelake").schema("v string, k bigint").load(t.path).toArrow()
    assert got.schema.names == ["v", "k"]
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [{"v": f"v{k}", "k": k} for k in (1, 2, 3)]
    with pytest.raises(Exception, match="nope"):
        spark.read.format("tidelake").schema("nope int").load(t.path).collect()


def test_reads_send_large_batches_to_spark(tmp_path):
    """Spark pays a fixed cost per Arrow batch, so its reads use READ_BATCH_ROWS-row batches,
    not the engine's default of 8,192 (Split.read's batch_size)."""
    t, _ = kv_table(tmp_path, bucket=1)
    t.write(kv(range(50_000)))
    t.write(kv(range(0, 50_000, 2), tag="w"))  # two sorted runs: the merged read
    (split,) = t.scan().splits()
    assert max(b.num_rows for b in split.read()) == 8_192
    assert [b.num_rows for b in split.read(batch_size=20_000)] == [20_000, 20_000, 10_000]
    assert spark_io.READ_BATCH_ROWS > 8_192
    target = spark_io.arrow_schema(spark_io.spark_schema(t))
    batches = list(spark_io.rows_of_split(split, target, False))
    assert [b.num_rows for b in batches] == [min(spark_io.READ_BATCH_ROWS, 50_000)]
    merged = pa.Table.from_batches(batches).sort_by("k")
    assert merged.column("v").to_pylist()[:4] == ["w0", "v1", "w2", "v3"]


def test_empty_table_reads_empty(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    df = spark.read.format("tidelake").load(t.path)
    assert df.columns == ["k", "p", "v"]
    assert df.count() == 0


def test_sql_temporary_view_insert_and_select(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW tl_view USING tidelake OPTIONS (path '{t.path}')")
    spark.sql("INSERT INTO tl_view SELECT id AS k, 'a' AS p, 'x' AS v FROM range(5)")
    assert spark.sql("SELECT count(*) AS n, max(k) AS m FROM tl_view").collect()[0].asDict() == {"n": 5, "m": 4}


def test_views_and_dataframes_read_the_snapshot_of_each_query(spark, tmp_path):
    """PySpark plans a relation's read once and reuses it for every later query of the view or
    DataFrame: each query must still see the snapshot latest when it started."""
    t, _ = kv_table(tmp_path, partition=True, bucket=1)
    t.write(kv(range(3), p="a"))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW tl_live USING tidelake OPTIONS (path '{t.path}')")
    df = spark.read.format("tidelake").load(t.path)

    def counts():
        view = spark.sql("SELECT count(*) AS n FROM tl_live").collect()[0].n
        filtered = spark.sql("SELECT count(*) AS n FROM tl_live WHERE k > 0").collect()[0].n
        return view, filtered, df.count()

    assert counts() == (3, 2, 3)
    t.write(kv(range(3, 6), p="a"))
    assert counts() == (6, 5, 6)
    # more splits than the slots planned at the first query: still all read
    for p in "bcde":
        t.write(kv(range(10), p=p))
    assert counts() == (46, 41, 46)
    assert_same_rows(spark.sql("SELECT * FROM tl_live").toArrow(), tidelake.open_table(t.path).to_arrow())
    # pinned reads stay pinned
    assert spark.read.format("tidelake").option("snapshot-id", 1).load(t.path).count() == 3


def test_a_query_reads_the_snapshot_of_its_start(tmp_path, monkeypatch):
    """Every task of one query resolves the same snapshot: the newest committed at or before the
    query's start time (from its UUIDv7 id), whatever lands while it runs."""
    import time
    import uuid

    t, _ = kv_table(tmp_path, bucket=2)
    t.write(kv(range(4)))
    started = int(time.time() * 1000)
    time.sleep(0.01)
    t.write(kv(range(4, 8)))
    reader = spark_source.BatchReader({"path": t.path}, spark_io.spark_schema(t))
    slots = reader.partitions()
    assert all(isinstance(s, spark_source.LatestPartition) for s in slots)

    def rows():
        return sum(b.num_rows for s in slots for b in spark_source.read_partition(s, reader.schema))

    qid = str(uuid.UUID(int=(started << 80) | (7 << 76) | (2 << 62) | 12345))

    class Task:  # what TaskContext.get() is in a task of a query started at `started`
        def getLocalProperty(self, key):
            return qid if key == "spark.sql.execution.query.id" else None

    assert rows() == 8  # no task context: the latest snapshot
    monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls: Task()))
    assert spark_source.query_time_ms() == started
    assert rows() == 4


# ---- create on first write ------------------------------------------------------------------

def events(spark, start: int, n: int, partitions: int = 2):
    return spark.range(start, start + n, 1, partitions).selectExpr(
        "id", "concat('d', cast(id % 3 as string)) AS dt", "cast(id * 2 as int) AS qty")


def test_first_write_creates_the_table_from_the_dataframe(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/created"
    (events(spark, 0, 40).write.format("tidelake").mode("append").option("primary-key", "id")
     .option("partition-by", "dt").option("bucket", "4").option("changelog-producer", "input").save(path))
    t = tidelake.open_table(path)
    assert (t.primary_keys, t.partition_keys, t.effective_options["bucket"]) == (["id"], ["dt"], 4)
    assert t.options["changelog-producer"] == "input" and "primary-key" not in t.options
    assert t.schema.names == ["id", "dt", "qty"] and not t.schema.field("id").nullable
    expected = events(spark, 0, 40).toArrow()
    assert_same_rows(t.to_arrow(), expected.cast(t.schema))
    assert_same_rows(pp_read(wh, "db.created").select(t.schema.names).cast(t.schema), t.to_arrow())
    # later writes append (upsert by key) to the existing table; keys that differ are refused
    events(spark, 30, 20).write.format("tidelake").mode("append").save(path)
    assert t.refresh().to_arrow().num_rows == 50
    with pytest.raises(Exception, match="primary keys"):
        events(spark, 0, 5).write.format("tidelake").mode("append").option("primary-key", "qty").save(path)
    # overwrite creates too, and replaces
    events(spark, 0, 10).write.format("tidelake").mode("overwrite").save(f"{wh}/db.db/fresh")
    events(spark, 100, 5).write.format("tidelake").mode("overwrite").save(f"{wh}/db.db/fresh")
    fresh = tidelake.open_table(f"{wh}/db.db/fresh")
    assert fresh.primary_keys == [] and sorted(fresh.to_arrow()["id"].to_pylist()) == list(range(100, 105))


def test_spark_write_save_modes_and_create_arguments(spark, tmp_path):
    _, wh = new_warehouse(tmp_path)
    path = f"{wh}/db.db/w"
    assert tidelake.spark.write(events(spark, 0, 10), path, "error", primary_keys=["id"], partition_by=["dt"],
                                bucket=2, options={"snapshot.num-retained.min": "3"}) == 1
    t = tidelake.open_table(path)
    assert (t.primary_keys, t.partition_keys, t.effective_options["bucket"]) == (["id"], ["dt"], 2)
    assert t.options["snapshot.num-retained.min"] == "3"
    with pytest.raises(tidelake.TableAlreadyExistsError):
        tidelake.spark.write(events(spark, 0, 10), path, "errorifexists")
    assert tidelake.spark.write(events(spark, 50, 10), path, "ignore") is None
    assert tidelake.spark.write(events(spark, 5, 10), path, "append", primary_keys=["id"]) == 2
    assert sorted(t.refresh().to_arrow()["id"].to_pylist()) == list(range(15))
    with pytest.raises(tidelake.SchemaMismatchError, match="partition keys"):
        tidelake.spark.write(events(spark, 0, 1), path, partition_by=["qty"])
    assert tidelake.spark.write(events(spark, 7, 2), path, "overwrite") == 3
    assert sorted(t.refresh().to_arrow()["id"].to_pylist()) == [7, 8]
    # ignore on a missing table writes it
    assert tidelake.spark.write(events(spark, 0, 3), f"{wh}/db.db/w2", "ignore") == 1
    assert tidelake.open_table(f"{wh}/db.db/w2").to_arrow().num_rows == 3


def test_spark_refuses_errorifexists_and_ignore_for_python_sources(spark, tmp_path):
    """Spark rejects these save modes before any Python runs: tidelake.spark.write has them."""
    from pyspark.errors import AnalysisException

    for mode in ("errorifexists", "ignore"):
        with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            events(spark, 0, 1).write.format("tidelake").mode(mode).save(str(tmp_path / mode))
        assert not (tmp_path / mode).exists()


# ---- filter push-down -------------------------------------------------------------------------

def test_filter_pushdown_is_opt_in_and_prunes(spark, tmp_path):
    t, _ = kv_table(tmp_path, partition=True, bucket=1)
    for p in "abc":
        t.write(kv(range(10), p=p))
    # without the conf: the plain source (no pushFilters) reads and filters fine
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"
    plain = spark.read.format("tidelake").load(t.path).where("p = 'b' and k >= 5").toArrow()
    assert_same_rows(plain, kv(range(5, 10), p="b"))

    # refused on PySpark 4.3: a plan made with pushed filters would serve later unfiltered queries
    with pytest.raises(tidelake.UnsupportedError, match="miss rows"):
        tidelake.spark.register(spark, filter_pushdown=True)
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled", "false") == "false"
    # the reader itself prunes with the pushed terms: only partition b is planned, at execution
    reader = tidelake.spark.source.PushdownReader({"path": t.path}, spark.read.format("tidelake")
                                                   .load(t.path).schema)
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, StringStartsWith

    passed = [EqualTo(("p",), "b"), GreaterThanOrEqual(("k",), 5), StringStartsWith(("v",), "v")]
    assert list(reader.pushFilters(passed)) == passed  # Spark re-applies every filter
    assert reader.filters == [expr.Comparison("p", expr.Compare.EQ, "b"), expr.Comparison("k", expr.Compare.GE, 5)]
    slots = reader.partitions()
    assert sum(len(task) for s in slots for task in spark_source.latest_tasks(s)[s.slot::s.slots]) == 1


def test_pyspark_reuses_a_filtered_read_plan_which_is_why_pushdown_is_refused(spark, tmp_path):
    """PySpark 4.3 stores the read planned with one query's pushed filters on the relation and
    reuses it for the next query of that DataFrame without filters: rows go missing. If this
    starts failing, PySpark no longer does that and register() may allow push-down again."""
    t, _ = kv_table(tmp_path, partition=True, bucket=1)
    for p in "ab":
        t.write(kv(range(3), p=p))
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(tidelake.spark.source.PushdownDataSource)
    try:
        df = spark.read.format("tidelake").load(t.path)
        assert df.where("p = 'b'").count() == 3
        assert df.count() == 3  # not 6: the plan pruned to partition b was reused
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        tidelake.spark.register(spark, check_workers=False)
    assert spark.read.format("tidelake").load(t.path).count() == 6


def test_filter_terms():
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, Not

    assert spark_filter(EqualTo(("a",), 1)) == expr.Comparison("a", expr.Compare.EQ, 1)
    assert spark_filter(In(("a",), (1, 2))) == expr.InList("a", (1, 2))
    assert spark_filter(IsNull(("a",))) == expr.IsNull("a")
    assert spark_filter(GreaterThan(("a", "b"), 1)) is None  # nested field
    assert spark_filter(GreaterThan(("ts",), dt.datetime(2024, 1, 1))) is None  # zone semantics left to Spark
    assert spark_filter(Not(EqualTo(("a",), 1))) is None


# ---- failures, retries, aborts ------------------------------------------------------------------

def _fail_first_attempt_of_task_1(batches):
    from pyspark import TaskContext

    ctx = TaskContext.get()
    for b in batches:
        yield b
    if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
        raise RuntimeError("injected task failure")


def test_task_retry_commits_each_row_once_and_leaves_no_orphans(spark, tmp_path):
    # a tiny write buffer makes the failing attempt flush files before it fails
    t, _ = kv_table(tmp_path, **{"write-buffer-size": "1 kb"})
    df = spark_df(spark, kv(range(2000)), 3)
    df.mapInArrow(_fail_first_attempt_of_task_1, df.schema).write.format("tidelake").mode("append").save(t.path)
    assert_same_rows(tidelake.open_table(t.path).to_arrow(), kv(range(2000)))
    assert orphans(t.path) == []


def _always_fail_task_1(batches):
    import time

    from pyspark import TaskContext

    ctx = TaskContext.get()
    for b in batches:
        yield b
    if ctx.partitionId() == 1:
        if ctx.attemptNumber() == 2:
            time.sleep(1.5)  # let the other tasks finish: a task still running at abort leaves orphans
        raise RuntimeError("injected permanent failure")


def test_failed_job_aborts_and_deletes_every_written_file(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    t.write(kv([1]))
    df = spark_df(spark, kv(range(100, 400)), 3)
    with pytest.raises(Exception, match="injected permanent failure"):
        df.mapInArrow(_always_fail_task_1, df.schema).write.format("tidelake").mode("append").save(t.path)
    assert len(tidelake.open_table(t.path).snapshots()) == 1
    assert orphans(t.path) == []  # abort() deleted what the successful tasks wrote
    with pytest.raises(Exception, match="injected permanent failure"):
        tidelake.spark.write(df.mapInArrow(_always_fail_task_1, df.schema), t.path)
    # mapInArrow has no abort hook: nothing is committed; the files of tasks that succeeded are
    # orphans for remove_orphan_files
    assert len(tidelake.open_table(t.path).snapshots()) == 1
    assert_same_rows(tidelake.open_table(t.path).to_arrow(), kv([1]))


def _writer_messages(path: str, batches: list[pa.Table], overwrite=False):
    writer = pickle.loads(pickle.dumps(BatchWriter({"path": path}, overwrite)))  # as Spark ships it
    messages = [writer.write(iter(b.to_batches())) for b in batches]
    return writer, messages


def test_abort_after_a_commit_that_landed_keeps_the_files(tmp_path):
    """Spark calls abort() when commit() raised, even if the snapshot was published."""
    t, _ = kv_table(tmp_path)
    writer, messages = _writer_messages(t.path, [kv(range(10)), kv(range(10, 20))])
    writer.commit(messages)
    writer.abort(messages)  # e.g. commit raised after publishing
    assert_same_rows(tidelake.open_table(t.path).to_arrow(), kv(range(20)))
    assert orphans(t.path) == []


def test_abort_without_commit_deletes_the_files(tmp_path):
    t, _ = kv_table(tmp_path)
    writer, messages = _writer_messages(t.path, [kv(range(10)), kv(range(10, 20))])
    assert len(orphans(t.path)) == 4  # 2 tasks x 2 buckets, not committed yet
    writer.abort([messages[0], None])  # Spark passes None for a failed task
    writer.abort(messages)
    assert orphans(t.path) == []
    assert tidelake.open_table(t.path).latest_snapshot() is None


def test_dynamic_bucket_commit_refuses_two_tasks_in_one_partition(tmp_path):
    t, _ = kv_table(tmp_path, bucket=-1)
    writer, messages = _writer_messages(t.path, [kv(range(10)), kv(range(5, 15))])
    messages[1].task = 1
    with pytest.raises(tidelake.InvalidArgumentError, match="dynamic-bucket"):
        writer.commit(messages)
    writer.abort(messages)
    assert orphans(t.path) == []


# ---- tidelake.spark.write (mapInArrow) --------------------------------------------------------

def test_write_modes_upsert_delete_overwrite(spark, tmp_path):
    t, wh = kv_table(tmp_path, bucket=3, partition=True)
    path = t.path
    df = spark_df(spark, pa.concat_tables([kv(range(60), p="a"), kv(range(30), p="b")]), 4)
    sid = tidelake.spark.write(df, path)
    assert sid == 1
    tidelake.spark.write(spark_df(spark, kv(range(50, 70), p="a", tag="u")), path, mode="upsert")
    tidelake.spark.write(spark_df(spark, kv(range(0, 10), p="b").select(["k", "p"])), path, mode="delete")
    expected = pa.concat_tables([kv(range(50), p="a"), kv(range(50, 70), p="a", tag="u"), kv(range(10, 30), p="b")])
    assert_same_rows(read(spark, path), expected)
    assert_same_rows(pp_read(wh, "db.t", None, schema=tidelake.open_table(path).schema), expected)
    # one writer task per (partition, bucket): each bucket got exactly one new file per commit
    files = tidelake.open_table(path).system("files").to_pylist()
    per_bucket = {}
    for f in files:
        per_bucket.setdefault((f["partition"], f["bucket"]), []).append(f)
    assert all(len(fs) <= 3 for fs in per_bucket.values())

    tidelake.spark.write(spark_df(spark, kv([1], p="c")), path, mode="overwrite")
    assert_same_rows(read(spark, path), kv([1], p="c"))
    with pytest.raises(tidelake.InvalidArgumentError, match="mode"):
        tidelake.spark.write(df, path, mode="merge")


def test_write_no_shuffle_is_correct(spark, tmp_path):
    t, _ = kv_table(tmp_path, bucket=2)
    tidelake.spark.write(spark_df(spark, kv(range(300)), 3), t.path, shuffle=False)
    tidelake.spark.write(spark_df(spark, kv(range(100, 200), tag="n"), 3), t.path, shuffle=False)
    expected = pa.concat_tables([kv(range(100)), kv(range(100, 200), tag="n"), kv(range(200, 300))])
    assert_same_rows(tidelake.open_table(t.path).to_arrow(), expected)


def test_write_upsert_on_append_table_is_refused(spark, tmp_path):
    t, _ = kv_table(tmp_path, pk=False, bucket=-1)
    with pytest.raises(tidelake.UnsupportedError, match="primary-key"):
        tidelake.spark.write(spark_df(spark, kv([1])), t.path, mode="upsert")


def test_dynamic_bucket_write_has_no_duplicate_keys(spark, tmp_path):
    t, wh = kv_table(tmp_path, bucket=-1, partition=True, **{"dynamic-bucket.target-row-num": "50"})
    for tag in ("x", "y"):  # the same keys from 4 input partitions, twice: each key in one bucket
        df = spark_df(spark, pa.concat_tables([kv(range(300), p="a", tag=tag), kv(range(200), p="b", tag=tag)]), 4)
        tidelake.spark.write(df, t.path)
    got = tidelake.open_table(t.path).to_arrow()
    assert got.num_rows == 500
    assert_same_rows(got, pa.concat_tables([kv(range(300), p="a", tag="y"), kv(range(200), p="b", tag="y")]))
    buckets = {}
    for f in tidelake.open_table(t.path).system("files").to_pylist():
        buckets.setdefault(f["partition"], set()).add(f["bucket"])
    assert all(len(b) > 1 for b in buckets.values())  # several buckets per partition were used
    assert_same_rows(pp_read(wh, "db.t", None, schema=got.schema), got)
    with pytest.raises(tidelake.InvalidArgumentError, match="dynamic-bucket"):
        tidelake.spark.write(spark_df(spark, kv([1])), t.path, shuffle=False)


def test_cross_partition_write_keeps_each_key_in_one_partition(spark, tmp_path):
    """Key `k` without the partition column `p` (bucket -1): one task writes, with one key index,
    so a key that moves partition within the input or across writes is never in two."""
    cat, _ = new_warehouse(tmp_path)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.string())])
    t = cat.create_table("db.x", schema, primary_keys=["k"], partition_keys=["p"], bucket=-1)
    tidelake.spark.write(spark_df(spark, pa.concat_tables([kv(range(100), p="a"), kv(range(100, 150), p="b")]), 4),
                         t.path)
    tidelake.spark.write(spark_df(spark, kv(range(50, 120), p="c", tag="m"), 4), t.path)  # keys move to c
    got = tidelake.open_table(t.path).to_arrow()
    assert sorted(got["k"].to_pylist()) == list(range(150))  # each key exactly once
    assert_same_rows(got, pa.concat_tables([kv(range(50), p="a"), kv(range(50, 120), p="c", tag="m"),
                                            kv(range(120, 150), p="b")]))
    writer, messages = _writer_messages(t.path, [kv(range(200, 210), p="a"), kv(range(300, 310), p="b")])
    messages[1].task = 1
    with pytest.raises(tidelake.InvalidArgumentError, match="2 Spark tasks wrote cross-partition table"):
        writer.commit(messages)
    writer.abort(messages)


def test_write_exactly_once_identity(spark, tmp_path):
    t, _ = kv_table(tmp_path, pk=False, bucket=-1)
    df = spark_df(spark, kv(range(10)))
    assert tidelake.spark.write(df, t.path, commit_user="job", commit_identifier=7) == 1
    assert tidelake.spark.write(df, t.path, commit_user="job", commit_identifier=7) is None
    assert tidelake.open_table(t.path).to_arrow().num_rows == 10
    assert orphans(t.path) == []


def test_bucket_routing_matches_the_engine(tmp_path):
    t, _ = kv_table(tmp_path, bucket=4, partition=True)
    data = pa.concat_tables([kv(range(200), p="a"), kv(range(100), p="b")])
    buckets = t._raw.writer(False).buckets(data, "insert").to_pylist()
    assert set(buckets) == {0, 1, 2, 3}
    t.write(data)
    routed: dict[tuple[str, int], int] = {}
    for p, b in zip(data.column("p").to_pylist(), buckets):
        routed[("{" + p + "}", b)] = routed.get(("{" + p + "}", b), 0) + 1
    written = {(f["partition"], f["bucket"]): f["record_count"] for f in t.system("files").to_pylist()}
    assert routed == written
    append, _ = kv_table(tmp_path / "x", pk=False, bucket=-1)
    with pytest.raises(tidelake.UnsupportedError, match="fixed bucket"):
        append._raw.writer(False).buckets(data, "insert")


# ---- pickling and registration ------------------------------------------------------------------

def test_everything_spark_pickles_is_plain_data(spark, tmp_path):
    from pyspark import cloudpickle
    from pyspark.sql.types import StructType

    t, _ = kv_table(tmp_path)
    t.write(kv([1, 2]))
    source = TidelakeDataSource({"path": t.path})
    schema = source.schema()
    assert isinstance(schema, StructType)
    reader = cloudpickle.loads(cloudpickle.dumps(source.reader(schema)))
    parts = cloudpickle.loads(cloudpickle.dumps(reader.partitions()))
    assert all(isinstance(p, spark_source.LatestPartition) for p in parts)
    assert all(isinstance(v, (int, list, type(None), spark_io.Location)) for p in parts for v in vars(p).values())
    rows = pa.Table.from_batches([b for p in parts for b in reader.read(p)])
    assert_same_rows(rows, kv([1, 2]))
    for obj in (source.writer(schema, False), source.streamReader(schema),
                TidelakeDataSource({"path": t.path, "checkpointlocation": "/c"}).streamWriter(schema, False)):
        clone = cloudpickle.loads(cloudpickle.dumps(obj))
        plain = (str, bool, int, dict, tuple, type(None), StructType, spark_io.Location, ScanMode)
        assert [(k, type(v)) for k, v in vars(clone).items() if not isinstance(v, plain)] == []


def test_auto_registration_shim(spark, tmp_path):
    import pkgutil

    import pyspark_tidelake

    assert pyspark_tidelake.DefaultSource is TidelakeDataSource
    assert "pyspark_tidelake" in {m.name for m in pkgutil.iter_modules()}
    # a session nobody registered the source with finds it through the pyspark_* lookup
    t, _ = kv_table(tmp_path, pk=False, bucket=-1)
    t.write(kv([1, 2, 3]))
    assert spark.newSession().read.format("tidelake").load(t.path).count() == 3


def test_task_errors_surface_as_tidelake_errors(spark, tmp_path):
    t, _ = kv_table(tmp_path)
    df = spark.range(3).selectExpr("id AS k", "'a' AS p", "'x' AS v", "1 AS zz")
    with pytest.raises(tidelake.SchemaMismatchError, match="'zz' is not in the table") as info:
        tidelake.spark.write(df, t.path)
    assert "in a Spark task" in str(info.value) and info.value.__cause__ is not None


def test_workers_without_tidelake_are_a_clear_error(spark, monkeypatch):
    import shutil
    import subprocess

    other = shutil.which("python3", path="/usr/bin:/bin")
    if other is None or subprocess.run([other, "-c", "import tidelake"], capture_output=True).returncode == 0:
        pytest.skip("needs a python3 without tidelake on this machine")
    # Python workers of RDD jobs run the driver's pythonExec (PYSPARK_PYTHON at start-up)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", other)
    with pytest.raises(tidelake.UnsupportedError, match="PYSPARK_PYTHON .* spark.pyspark.python") as info:
        spark_io.check_workers(spark)
    assert "No module named" in str(info.value)
    monkeypatch.undo()
    spark_io.check_workers(spark)  # this interpreter has it


def test_missing_path_is_a_clear_error(spark):
    with pytest.raises(Exception, match="table path"):
        spark.read.format("tidelake").load().collect()
    with pytest.raises(tidelake.InvalidArgumentError, match="checkpointLocation"):
        spark_io.stream_user(None)
