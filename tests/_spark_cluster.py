"""A Spark standalone cluster on 127.0.0.1 for tests and ``benches/compaction.py --spark-workers``:
one Master and N Workers started with pyspark's ``bin/spark-class`` (each worker one core), and
drivers run in a child process (a test process already holds the ``local[...]`` SparkContext
of conftest's ``spark``): by default one compacting a table with :func:`tidelake.spark.compact`."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    import pyspark

    return str(pathlib.Path(pyspark.__path__[0]) / "bin" / "spark-class")


def _env() -> dict[str, str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_HOME", None)
    return env


@contextlib.contextmanager
def standalone_cluster(work: pathlib.Path, workers: int = 2, timeout: float = 120) -> Iterator[str]:
    """Start a master and ``workers`` one-core workers; yield the master URL; stop them."""
    port, ui = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    logs = work / "cluster-logs"
    logs.mkdir(parents=True, exist_ok=True)

    def start(name: str, *args: str) -> None:
        out = open(logs / f"{name}.log", "wb")
        procs.append(subprocess.Popen([_spark_class(), *args], env=_env(), stdout=out, stderr=subprocess.STDOUT))

    url = f"spark://127.0.0.1:{port}"
    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui))
        for i in range(workers):
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                  "--cores", "1", "--memory", "1g", "--webui-port", str(free_port()),
                  "--work-dir", str(work / f"worker-{i}"))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
                    state = json.load(r)
                if sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE") >= workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise AssertionError(f"the standalone cluster did not start; logs in {logs}")
            time.sleep(1)
        yield url
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


DRIVER = r'''
import json, sys, time, urllib.request
from pyspark.sql import SparkSession
import tidelake.spark

master, path, ui_port, executors = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spark = (SparkSession.builder.master(master).appName("tidelake-cluster-compact")
         .config("spark.ui.port", ui_port).config("spark.executor.memory", "512m")
         .config("spark.executor.cores", "1").config("spark.cores.max", str(executors)).getOrCreate())
sc = spark.sparkContext
deadline = time.monotonic() + 120
while sc._jsc.sc().getExecutorMemoryStatus().size() < executors + 1:  # the driver counts too
    if time.monotonic() > deadline:
        raise SystemExit("executors did not register")
    time.sleep(0.5)
began = time.perf_counter()
snapshot = tidelake.spark.compact(spark, path, full=True)
seconds = time.perf_counter() - began
api = f"http://127.0.0.1:{ui_port}/api/v1/applications/{sc.applicationId}/executors"
with urllib.request.urlopen(api, timeout=10) as r:
    tasks = {e["id"]: e["completedTasks"] for e in json.load(r) if e["id"] != "driver"}
print("RESULT " + json.dumps({"snapshot": snapshot, "tasks_per_executor": tasks, "seconds": seconds}), flush=True)
spark.stop()
'''


def run_driver(master: str, args: list[str], timeout: float = 600, script: str = DRIVER) -> dict:
    """Run ``script`` (a driver printing one ``RESULT <json>`` line; :data:`DRIVER` by default)
    against ``master`` with ``args``; its JSON answer."""
    proc = subprocess.run([sys.executable, "-c", script, master, *args], env=_env(), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = [ln[len("RESULT "):] for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(results) == 1, (proc.stdout[-2000:], proc.stderr[-4000:])
    return json.loads(results[0])
