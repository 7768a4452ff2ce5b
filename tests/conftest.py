"""Shared test helpers: where the Paimon fixtures live and how results are compared."""

from __future__ import annotations

import json
import math
import os
import pathlib
import shutil
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from _faults import fault_proxies, faults  # noqa: F401  (fixtures: fault-injecting proxies before the S3 server)
from _hive import hive_metastore, java_hive  # noqa: F401  (fixtures: a Hive Metastore, the oracle on its classpath)
from _iceberg_rest import iceberg_rest  # noqa: F401  (fixture: an Iceberg REST catalog server)
from _kafka import kafka  # noqa: F401  (fixture: a Kafka broker on 127.0.0.1)
from _postgres import postgres  # noqa: F401  (fixture: a PostgreSQL server on 127.0.0.1)
from _s3 import s3_server, storage  # noqa: F401  (fixtures: the moto S3 server, local|s3 storage)

REPO = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = pathlib.Path(os.environ.get("TIDELAKE_FIXTURES", REPO / "tests" / "fixtures" / "paimon-v1"))


def fixture_manifest() -> dict[str, Any]:
    return json.loads((FIXTURES / "fixtures.json").read_text())


def fixture_tables() -> list[dict[str, Any]]:
    return fixture_manifest()["tables"]


def load_arrow(rel: str) -> pa.Table:
    with ipc.open_file(FIXTURES / rel) as f:
        return f.read_all()


def _canon_value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _canon_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon_value(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_canon_value(x) for x in v)
    return v


def canon(t: pa.Table) -> list[str]:
    """The rows of ``t`` as a sorted multiset of reprs, NaN equal to NaN."""
    return sorted(repr([_canon_value(v) for v in row.values()]) for row in t.to_pylist())


def assert_same_rows(got: pa.Table, expected: pa.Table, *, check_types: bool = True) -> None:
    assert got.schema.names == expected.schema.names
    if check_types:
        assert [f.type for f in got.schema] == [f.type for f in expected.schema]
    g, e = canon(got), canon(expected)
    if g != e:
        missing = [r for r in e if r not in g][:5]
        extra = [r for r in g if r not in e][:5]
        raise AssertionError(f"{len(g)} rows vs {len(e)} expected; missing {missing}; unexpected {extra}")


@pytest.fixture
def fixture_copy(tmp_path: pathlib.Path):
    """Copy a fixture table to a temp dir (for tests that write or corrupt files)."""

    def make(name: str) -> pathlib.Path:
        src = FIXTURES / "warehouse" / "fx.db" / name
        dst = tmp_path / name
        shutil.copytree(src, dst)
        return dst

    return make


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for every Spark test (JVM start ~10 s): ``local[2,3]`` so a failed
    task is retried, UI off, workers on this interpreter, a non-UTC session time zone (Spark
    hands writers timestamps labelled with it), and small Arrow batches so writers see many."""
    import sys

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # workers unpickle functions defined in test modules by reference
    tests = str(pathlib.Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    import tidelake.spark
    from tidelake.spark.mapped import has_data_source

    session = (SparkSession.builder.master("local[2,3]").appName("tidelake-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "America/Los_Angeles")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    if has_data_source():  # PySpark 4.x; the 3.5 lane (tests/test_spark_portable.py) reads without it
        tidelake.spark.register(session)
    yield session
    session.stop()


class _JavaComparisonsOfWorkers:
    """Under pytest-xdist (``make test`` runs two workers) each worker hands the Java comparisons
    it made to the controller, which prints the one report (a worker that crashed hands none)."""

    @staticmethod
    def pytest_testnodedown(node, error):  # noqa: ARG004
        import _java

        _java.COMPARED.extend(tuple(c) for c in getattr(node, "workeroutput", {}).get("java_compared", []))


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_JavaComparisonsOfWorkers())


def pytest_sessionfinish(session):
    import sys

    java = sys.modules.get("_java")
    if hasattr(session.config, "workeroutput") and java is not None:
        session.config.workeroutput["java_compared"] = [list(c) for c in java.COMPARED]


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    """Print what the Java interop tests compared (tables x reads), when any ran."""
    import _java as java

    lines = java.report_lines()
    if lines:
        terminalreporter.section("Java Paimon interop report")
        for line in lines:
            terminalreporter.write_line(line)
