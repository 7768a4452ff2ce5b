"""Faults between tidelake and a real S3 server (issue #34): every operation (one-shot and
two-phase write+commit, compaction, expiry, orphan cleaning, read, lookup, a Spark write) runs
under each fault class, through the proxies of ``_faults.py`` in front of the moto server:

=================  =============================================================================
latency            toxiproxy ``latency``: a fifth of the connections answer 200 ms (±100) late
stall              toxiproxy ``timeout``: 10 % of the connections swallow what is sent, forever;
                   the client's request timeout (``s3.connection.request.timeout``) ends them
reset-upload       toxiproxy ``limit_data`` upstream: 30 % of the connections close after 1 kB
                   of request, mid-upload
reset-download     toxiproxy ``reset_peer`` downstream: a third of the connections are reset
                   (RST) once the server answered, so the response of a request the server
                   carried out (a PUT that landed) is lost
truncated          toxiproxy ``limit_data`` downstream: 30 % of the connections close after
                   700 bytes of response, mid-body
500                nginx: 30 % of the requests answered 500
503-retry-after    nginx: 30 % answered 503 with ``Retry-After: 1``
503                nginx: 30 % answered 503 without it
slowdown-commit    nginx: half the requests of snapshot files (the commit's) answered 503
                   ``SlowDown``, as S3 throttles
=================  =============================================================================

Under the fault an operation succeeds or raises a typed error (``StorageError``, or
``CommitConflictError`` when retries ran out), never another exception, and within a time
bound. Afterwards, checked through the plain endpoint: the table opens, its latest snapshot
decodes and reads, every acknowledged write is visible, an unacknowledged one either landed
whole or not at all, and a read that returned under the fault returned exactly the rows.

The same operations run on local storage under the test-only fault injection of the storage
layer (``tidelake.fault.*``: a storage error before an operation reaches storage or after it
landed, and a slow operation), which is what every S3 fault above amounts to once the client's
retries are spent. ``test_retries_*`` measure the client's retry policy (the ``s3.*`` storage
options in docs/storage.md, "Object stores") through the proxies: request counts and elapsed times.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from _faults import FaultProxies
from _s3 import TableFiles

import tidelake

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
TYPED = (tidelake.StorageError, tidelake.CommitConflictError)
# Retries and timeouts of the faulty handles: a stalled request ends after 500 ms, and 8 retries
# make a 30 % error share fail one request in 10^4 or so. (moto closes every connection after
# one request, so a fault picked per connection is picked per request.)
CLIENT = {"s3.attempts.maximum": "8", "s3.retry.interval": "20ms", "s3.connection.request.timeout": "500ms",
          "s3.connection.establish.timeout": "1s"}
# The longest one operation may take under any fault here (bounded retries, timeouts, back-off).
BOUND_S = 30


def rows(pairs: dict[int, str]) -> pa.Table:
    return pa.table({"k": pa.array(list(pairs), pa.int64()), "v": pa.array(list(pairs.values()))}, schema=SCHEMA)


@dataclass
class Lake:
    """One table, a model of what it must hold, and two ways to open it: ``faulty`` (the
    operation under test) and ``clean`` (the checks)."""

    location: str
    clean_options: dict[str, str] | None
    faulty_options: dict[str, str] | None
    model: dict[int, str] = field(default_factory=dict)
    outcomes: list[str] = field(default_factory=list)

    def clean(self) -> tidelake.Table:
        return tidelake.open_table(self.location, storage_options=self.clean_options)

    def faulty(self) -> tidelake.Table:
        return tidelake.open_table(self.location, storage_options=self.faulty_options)

    def visible(self) -> dict[int, str]:
        return {r["k"]: r["v"] for r in self.clean().to_arrow().to_pylist()}

    def check(self, what: str) -> None:
        """The table opens, its latest snapshot decodes and reads the model."""
        t = self.clean()
        latest = t.latest_snapshot()
        assert latest is not None and t.snapshot(latest.id).id == latest.id
        got = {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=latest.id).to_pylist()}
        assert got == self.model, f"after {what}: {len(got)} rows vs {len(self.model)} expected"

    def run(self, what: str, op: Callable[[], object]) -> object | None:
        """Run ``op`` under the fault: its result, or None when it raised a typed error."""
        started = time.monotonic()
        outcome = "ok"
        try:
            return op()
        except TYPED as e:
            outcome = f"{type(e).__name__} ({str(e).splitlines()[0][:200]})"
            return None
        finally:
            elapsed = time.monotonic() - started
            self.outcomes.append(f"{what}: {outcome}, {elapsed:.1f} s")
            assert elapsed < BOUND_S, f"{what} took {elapsed:.1f} s"

    def write(self, what: str, change: dict[int, str], op: Callable[[dict[int, str]], object]) -> None:
        """A write under the fault: acknowledged, it is visible; refused, it landed whole or not
        at all."""
        acknowledged = self.run(what, lambda: op(change)) is not None
        visible = self.visible()
        if acknowledged:
            self.model |= change
        elif visible != self.model:
            assert visible == self.model | change, f"{what} landed in part"
            self.model |= change
        self.check(what)


def one_shot(lake: Lake) -> Callable[[dict[int, str]], object]:
    return lambda change: lake.faulty().upsert(rows(change))


def two_phase(lake: Lake) -> Callable[[dict[int, str]], object]:
    def op(change: dict[int, str]) -> object:
        t = lake.faulty()
        with t.writer() as w:
            w.upsert(rows(change))
            return t.commit(w.prepare_commit())

    return op


def operations(lake: Lake, round_: int) -> None:
    """Every operation once under the fault, each checked afterwards with the fault off."""
    base = 100 * round_
    lake.write("one-shot write", {base + k: f"w{round_}" for k in range(0, 30)}, one_shot(lake))
    lake.write("two-phase write", {base + k: f"p{round_}" for k in range(20, 50)}, two_phase(lake))
    lake.run("compaction", lambda: lake.faulty().compact(full=True))
    lake.check("compaction")
    lake.run("expiry", lambda: lake.faulty().expire_snapshots(retain_min=1, retain_max=2,
                                                              older_than_ms=int(time.time() * 1000) + 60_000))
    lake.check("expiry")
    TableFiles(lake.location, lake.clean_options).write("bucket-0/data-stray-0.parquet", b"x" * 7)
    lake.run("orphan cleaning", lambda: lake.faulty().remove_orphan_files(
        older_than_ms=int(time.time() * 1000) + 60_000))
    lake.check("orphan cleaning")
    read = lake.run("read", lambda: lake.faulty().to_arrow())
    if read is not None:
        assert {r["k"]: r["v"] for r in read.to_pylist()} == lake.model, "a read under the fault returned other rows"
    keys = sorted(lake.model)[::7]
    found = lake.run("lookup", lambda: lake.faulty().lookup(keys))
    if found is not None:
        assert {r["k"]: r["v"] for r in found.to_pylist()} == {k: lake.model[k] for k in keys}


# Commit retries (a snapshot put that failed, or was taken) wait at most 200 ms, within 10 s.
TABLE = {"write-only": "true", "commit.max-retry-wait": "200ms", "commit.timeout": "10s"}


def new_lake(location: str, clean: dict[str, str] | None, faulty: dict[str, str] | None) -> Lake:
    tidelake.create_table(location, SCHEMA, primary_keys=["k"], bucket=1, storage_options=clean, options=TABLE)
    lake = Lake(location, clean, faulty)
    lake.clean().upsert(rows({k: "seed" for k in range(10)}))
    lake.model = {k: "seed" for k in range(10)}
    return lake


TCP = {
    "latency": dict(kind="latency", toxicity=0.2, latency=200, jitter=100),
    "stall": dict(kind="timeout", stream="upstream", toxicity=0.1, timeout=0),
    "reset-upload": dict(kind="limit_data", stream="upstream", toxicity=0.3, bytes=1000),
    "reset-download": dict(kind="reset_peer", toxicity=0.3, timeout=0),
    "truncated": dict(kind="limit_data", toxicity=0.3, bytes=700),
}
SLOWDOWN = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
HTTP = {
    "500": dict(status=500, share=0.3),
    "503-retry-after": dict(status=503, share=0.3, retry_after=1),
    "503": dict(status=503, share=0.3),
    "slowdown-commit": dict(status=503, share=0.5, path="/snapshot/snapshot-", body=SLOWDOWN),
}


@contextlib.contextmanager
def fault(faults: FaultProxies, name: str) -> Iterator[tuple[str, dict]]:
    """Fault ``name`` on: the endpoint to reach the server through, and what the proxy saw."""
    seen: dict = {}
    if name in TCP:
        spec = dict(TCP[name])
        with faults.tcp.toxic(spec.pop("kind"), **spec):
            yield faults.tcp.endpoint, seen
    else:
        with faults.http.responding(**HTTP[name]) as tally:
            yield faults.http.endpoint, seen
        seen["requests"] = len(tally.requests)
        seen["faulted"] = tally.faulted(HTTP[name]["status"])


@pytest.mark.parametrize("name", [*TCP, *HTTP])
def test_operations_under_s3_faults(faults: FaultProxies, name, capsys):
    bucket = faults.server.new_bucket()
    with fault(faults, name) as (endpoint, seen):
        lake = new_lake(f"s3://{bucket}/t", faults.server.options, faults.options(endpoint, **CLIENT))
        operations(lake, 1)
    with capsys.disabled():
        print(f"\n{name}: {'; '.join(lake.outcomes)}" + (f" ({seen['faulted']} of {seen['requests']} requests "
                                                          f"faulted)" if seen else ""))
    if name in HTTP:
        assert seen["faulted"] > 0, "the fault never fired"
    # after the fault, a writer goes on as before
    operations(Lake(lake.location, lake.clean_options, lake.clean_options, lake.model), 2)


LOCAL = {
    "error-before": {"tidelake.fault.action": "error", "tidelake.fault.when": "before"},
    "error-after": {"tidelake.fault.action": "error", "tidelake.fault.when": "after"},
    "slow": {"tidelake.fault.action": "delay:200"},
}


@pytest.mark.parametrize("name", list(LOCAL))
@pytest.mark.parametrize("nth", [1, 2, 4])
def test_operations_under_local_storage_faults(tmp_path, name, nth):
    """The local counterpart: the ``nth`` storage operation of each operation fails before it
    reaches storage, fails after it landed (the response lost), or is slow."""
    faulty = {"tidelake.fault.nth": str(nth), **LOCAL[name]}
    lake = new_lake(str(tmp_path / "t"), None, faulty)
    operations(lake, 1)
    if name != "slow":
        assert any(not o.endswith(": ok") for o in lake.outcomes), lake.outcomes


def test_a_spark_write_under_s3_faults(faults: FaultProxies, spark):
    """A Spark write (tasks and commit) through the 503 proxy: it lands whole or not at all."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    bucket = faults.server.new_bucket()
    with faults.http.responding(503, share=0.3) as tally:
        lake = new_lake(f"s3://{bucket}/t", faults.server.options, faults.options(faults.http.endpoint, **CLIENT))
        import tidelake.spark

        schema = StructType([StructField("k", LongType(), False), StructField("v", StringType())])
        df = spark.createDataFrame([(k, "spark") for k in range(5, 60)], schema).repartition(2)
        change = {k: "spark" for k in range(5, 60)}
        lake.write("spark write", change, lambda _: tidelake.spark.write(
            df, lake.location, storage_options=lake.faulty_options))
    assert tally.faulted(503) > 0
    print(lake.outcomes)


def timed(op: Callable[[], object]) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        op()
        return time.monotonic() - started, None
    except Exception as e:  # noqa: BLE001  (returned to the caller to check)
        return time.monotonic() - started, e


def test_retries_of_a_failing_request_are_bounded_and_back_off(faults: FaultProxies):
    """Every request answered 503: a read raises StorageError after exactly
    ``s3.attempts.maximum`` retries of its first request, having waited
    ``s3.retry.interval``, then between it and twice the previous wait (object_store's jittered
    exponential back-off); ``Retry-After`` is not waited for."""
    lake = new_lake(f"s3://{faults.server.new_bucket()}/t", faults.server.options, None)
    for retry_after, attempts, interval_ms in ((None, 3, 100), (5, 2, 200)):
        options = faults.options(faults.http.endpoint, **{"s3.attempts.maximum": str(attempts),
                                                          "s3.retry.interval": f"{interval_ms}ms"})
        with faults.http.responding(503, retry_after=retry_after) as tally:
            elapsed, error = timed(lambda o=options: tidelake.open_table(lake.location, storage_options=o).to_arrow())
        assert isinstance(error, tidelake.StorageError), error
        assert f"after {attempts} retries" in str(error), str(error)
        assert len(tally.requests) == attempts + 1, tally.requests
        assert len({uri for _, _, uri in tally.requests}) == 1  # one request, retried
        # waits: interval, then each in [interval, 2 * previous]
        least = attempts * interval_ms / 1000
        most = sum(interval_ms * 2 ** i for i in range(attempts)) / 1000
        assert least <= elapsed < most + 2, (elapsed, least, most)


def test_retries_of_a_stalled_request_are_bounded_by_the_request_timeout(faults: FaultProxies):
    """Every connection stalls: opening the table raises StorageError once its first request
    timed out ``s3.attempts.maximum + 1`` times; a write through a handle opened before fails
    typed once its data file PUT did (and the deletes of what it wrote, not retried)."""
    lake = new_lake(f"s3://{faults.server.new_bucket()}/t", faults.server.options, None)
    options = faults.options(faults.tcp.endpoint, **{"s3.attempts.maximum": "2", "s3.retry.interval": "50ms",
                                                     "s3.connection.request.timeout": "500ms"})
    per_request = 3 * 0.5 + 0.05 + 0.1  # three attempts of 500 ms, waits of 50 and at most 100 ms
    writer = tidelake.open_table(lake.location, storage_options=options)
    with faults.tcp.toxic("timeout", stream="upstream", timeout=0):
        elapsed, error = timed(lambda: tidelake.open_table(lake.location, storage_options=options).to_arrow())
        assert isinstance(error, tidelake.StorageError), error
        assert 1.5 <= elapsed < per_request + 1, elapsed
        elapsed, error = timed(lambda: writer.upsert(rows({1: "stalled"})))
        assert isinstance(error, tidelake.StorageError), error
        assert 1.5 <= elapsed < 3 * per_request + 1, elapsed
    lake.check("a stalled write")


@pytest.mark.parametrize("value", ["-1", "many", "5 parsecs"])
def test_bad_retry_options_are_invalid_arguments(s3_server, value):
    location = f"s3://{s3_server.new_bucket()}/t"
    for key in ("s3.attempts.maximum", "fs.s3a.retry.interval", "s3a.connection.request.timeout"):
        with pytest.raises(tidelake.InvalidArgumentError, match=key):
            tidelake.open_table(location, storage_options={**s3_server.options, key: value})
