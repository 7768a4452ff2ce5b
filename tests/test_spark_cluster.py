"""tidelake through a real Spark standalone cluster (a master and two one-core workers on
127.0.0.1, one cluster for this module): batch writes that create the table, reads and a
temporary view that follows new snapshots, a streaming copy, a task that fails once and is
retried (``spark.task.maxFailures=2``) with every row committed exactly once and no orphaned
file, through both ``df.write.format("tidelake")`` and ``tidelake.spark.write``, distributed
DML (a merge whose source task fails once, a SQL DELETE), and the Spark SQL parity script
(``tests/_sql_parity.py``) answering as on the local SparkSession.

One driver process runs every scenario (a JVM start costs ~10 s) and reports what Spark saw;
the tests check the tables with tidelake itself."""

from __future__ import annotations

import pathlib
import time

import pyarrow as pa
import pytest
from conftest import assert_same_rows

import tidelake

pytest.importorskip("pyspark")
# a standalone cluster's two one-core workers: run with the machine to themselves
pytestmark = pytest.mark.exclusive

DRIVER = r'''
import json, sys, time, urllib.request
from pyspark import TaskContext
from pyspark.sql import SparkSession
import tidelake, tidelake.spark

master, work, ui_port, tests = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
spark = (SparkSession.builder.master(master).appName("tidelake-cluster-tests")
         .config("spark.ui.port", ui_port).config("spark.executor.memory", "512m")
         .config("spark.executor.cores", "1").config("spark.cores.max", "2")
         .config("spark.task.maxFailures", "2").config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500").getOrCreate())
sc = spark.sparkContext
deadline = time.monotonic() + 120
while sc._jsc.sc().getExecutorMemoryStatus().size() < 3:  # two executors and the driver
    if time.monotonic() > deadline:
        raise SystemExit("executors did not register")
    time.sleep(0.5)
tidelake.spark.register(spark)
out = {"started": time.monotonic()}


def rows(start, n, tag):
    return spark.range(start, start + n, 1, 4).selectExpr(
        "id AS k", "concat('p', cast(id % 2 AS string)) AS p", f"concat('{tag}', cast(id AS string)) AS v")


def count(query):
    return spark.sql(query).collect()[0][0]


a = f"{work}/a"
rows(0, 3000, "x").write.format("tidelake").mode("append").option("primary-key", "k").option("bucket", "2").save(a)
spark.sql(f"CREATE TEMPORARY VIEW a USING tidelake OPTIONS (path '{a}')")
out["view_counts"] = [count("SELECT count(*) FROM a")]
out["upsert_snapshot"] = tidelake.spark.write(rows(2000, 2000, "y"), a, "upsert")
out["view_counts"].append(count("SELECT count(*) FROM a"))
out["view_y"] = count("SELECT count(*) FROM a WHERE v LIKE 'y%'")

q = (spark.readStream.format("tidelake").load(a).writeStream.format("tidelake")
     .option("checkpointLocation", f"{work}/chk").trigger(availableNow=True).start(f"{work}/b"))
q.awaitTermination()


def fail_once(batches):
    ctx = TaskContext.get()
    for i, batch in enumerate(batches):
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and i == 1:
            raise RuntimeError("injected failure of a first attempt")
        yield batch


flaky = rows(0, 4000, "r").mapInArrow(fail_once, "k long, p string, v string")
flaky.write.format("tidelake").mode("append").option("primary-key", "k").option("bucket", "2").save(f"{work}/c")
out["write_snapshot"] = tidelake.spark.write(flaky, f"{work}/d", primary_keys=["k"], bucket=2)

def fail_first_attempt(batches):
    ctx = TaskContext.get()
    for batch in batches:
        if ctx.partitionId() == 1 and ctx.attemptNumber() == 0:
            raise RuntimeError("injected failure of a first attempt")
        yield batch


e = f"{work}/e"
rows(0, 400, "x").write.format("tidelake").mode("append").option("primary-key", "k").option("bucket", "2").save(e)
changes = rows(300, 200, "m").mapInArrow(fail_first_attempt, "k long, p string, v string")
merged = (tidelake.spark.merge(e, changes, on="k").when_matched_update({"v": "source.v"})
          .when_not_matched_insert("*").execute())
out["merge"] = [merged.rows_inserted, merged.rows_updated]
out["delete"] = tidelake.spark.sql(spark, f"DELETE FROM tidelake.`{e}` WHERE k < 50 OR v = 'm450'").collect()[0][
    "rows_deleted"]

sys.path.insert(0, tests)
import os, _sql_parity

os.makedirs(f"{work}/parity")
out["parity"] = _sql_parity.run(spark, f"{work}/parity")

api = f"http://127.0.0.1:{ui_port}/api/v1/applications/{sc.applicationId}"
with urllib.request.urlopen(f"{api}/executors", timeout=10) as r:
    out["tasks_per_executor"] = {e["id"]: e["completedTasks"] for e in json.load(r) if e["id"] != "driver"}
with urllib.request.urlopen(f"{api}/stages", timeout=10) as r:
    out["failed_tasks"] = sum(s["numFailedTasks"] for s in json.load(r))
out["seconds"] = time.monotonic() - out.pop("started")
print("RESULT " + json.dumps(out), flush=True)
spark.stop()
'''


ROWS = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())])


def expected_rows(spec: list[tuple[int, int, str]]) -> pa.Table:
    rows: dict[int, str] = {}
    for start, n, tag in spec:
        rows.update({k: f"{tag}{k}" for k in range(start, start + n)})
    keys = sorted(rows)
    return pa.table({"k": keys, "p": [f"p{k % 2}" for k in keys], "v": [rows[k] for k in keys]}, schema=ROWS)


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    from _spark_cluster import free_port, run_driver, standalone_cluster

    base = tmp_path_factory.mktemp("spark-cluster")
    work = base / "tables"
    work.mkdir()
    began = time.monotonic()
    with standalone_cluster(base / "cluster", workers=2) as master:
        up = time.monotonic()
        answer = run_driver(master, [str(work), str(free_port()), str(pathlib.Path(__file__).parent)],
                            script=DRIVER)
    print(f"cluster up in {up - began:.1f} s, driver {time.monotonic() - up:.1f} s, "
          f"scenarios {answer['seconds']:.1f} s")
    return work, answer


def read(path) -> pa.Table:
    t = tidelake.open_table(path)
    return t.to_arrow().select(ROWS.names).cast(ROWS)


def orphans(path) -> list:
    return tidelake.open_table(path).remove_orphan_files(older_than_ms=2**62, dry_run=True)


def test_tasks_ran_in_both_executors(cluster_run):
    _, answer = cluster_run
    per_executor = answer["tasks_per_executor"]
    assert len(per_executor) == 2 and all(n > 0 for n in per_executor.values()), per_executor


def test_writes_create_and_upsert_and_the_view_follows(cluster_run):
    work, answer = cluster_run
    t = tidelake.open_table(work / "a")
    assert (t.primary_keys, t.effective_options["bucket"]) == (["k"], 2)
    assert_same_rows(read(work / "a"), expected_rows([(0, 3000, "x"), (2000, 2000, "y")]))
    # the upsert's commit (writers may compact right after it: write returns the last snapshot)
    upsert = t.snapshot(answer["upsert_snapshot"])
    assert upsert.commit_user.startswith("spark-write-") and upsert.total_record_count == 4000
    assert [s.commit_kind for s in t.snapshots() if s.commit_user == upsert.commit_user][0] == "APPEND"
    assert answer["view_counts"] == [3000, 4000] and answer["view_y"] == 2000


def test_streaming_copy_equals_the_source(cluster_run):
    work, _ = cluster_run
    assert_same_rows(read(work / "b"), read(work / "a"))


@pytest.mark.parametrize("name", ["c", "d"], ids=["datasource", "spark.write"])
def test_a_retried_task_commits_every_row_once(cluster_run, name):
    work, answer = cluster_run
    assert answer["failed_tasks"] >= 2  # one injected failure per write, each retried
    t = tidelake.open_table(work / name)
    assert [s.commit_kind for s in t.snapshots()].count("APPEND") == 1
    assert t.latest_snapshot().total_record_count == 4000
    assert_same_rows(read(work / name), expected_rows([(0, 4000, "r")]))
    assert orphans(work / name) == []


def test_distributed_dml_with_a_retried_task(cluster_run):
    work, answer = cluster_run
    assert answer["merge"] == [100, 100] and answer["delete"] == 51
    want = [(k, f"{'m' if k >= 300 else 'x'}{k}") for k in range(50, 500) if k != 450]
    expect = pa.table({"k": [k for k, _ in want], "p": [f"p{k % 2}" for k, _ in want], "v": [v for _, v in want]},
                      schema=ROWS)
    assert_same_rows(read(work / "e"), expect)
    assert orphans(work / "e") == []


def test_sql_parity_script_answers_as_on_local_spark(cluster_run, spark, tmp_path):
    import _sql_parity

    _, answer = cluster_run
    local = _sql_parity.run(spark, str(tmp_path))
    assert len(answer["parity"]) == len(local) == len(_sql_parity.STATEMENTS)
    for statement, on_cluster, on_local in zip(_sql_parity.STATEMENTS, answer["parity"], local):
        assert on_cluster == on_local, statement
    final = dict(zip(_sql_parity.STATEMENTS, local))
    assert final["SELECT id, qty FROM shop.orders"] == [[1, 5], [2, 7], [3, 1]]  # rolled back to the tag
