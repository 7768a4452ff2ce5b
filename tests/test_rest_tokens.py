"""Data tokens of Paimon's REST catalog (``data-token.enabled``): Paimon's own REST server
(``_rest.py``) keeps its tables on S3 and vends the credentials of each table's files; tidelake
signs with those alone (whatever credentials it was configured with), replaces a token before it
expires, and Java Paimon's REST client reads what tidelake wrote with the same tokens.

Clients reach the moto S3 server through the suite's nginx (``_faults.py``), which logs the access
key that signed each request and answers those signed with a revoked key with 403, as S3 does;
the REST server reaches moto directly with credentials of its own."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

import pyarrow as pa
import pytest

import tidelake
from _faults import FaultProxies, fault_proxies  # noqa: F401  (nginx in front of S3, a fixture)
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _rest import RestServer, start_rest_server
from _s3 import s3_server  # noqa: F401  (the session's S3 server, a fixture)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
HOUR_MS = 3_600_000


def token_of(key: str) -> dict[str, str]:
    """A data token carrying access key ``key``, in the option names Java's S3 file system
    requires (its loader refuses a context without ``s3.access-key`` and ``s3.secret-key``)."""
    return {"s3.access-key": key, "s3.secret-key": f"secret-of-{key}"}


@contextlib.contextmanager
def token_server(proxies: FaultProxies) -> Iterator[RestServer]:
    """A REST server with its tables in a fresh bucket, vending data tokens; it gives clients
    the S3 endpoint behind nginx and no credentials, and reaches S3 itself with its own."""
    s3 = proxies.server
    server = start_rest_server(f"s3://{s3.new_bucket()}/wh", {
        "data-token.enabled": "true", "s3.endpoint": proxies.http.endpoint, "s3.path.style.access": "true",
        "s3.endpoint.region": "us-east-1", "server.s3.endpoint": s3.endpoint,
        "server.s3.access-key": "testing", "server.s3.secret-key": "testing"})
    try:
        yield server
    finally:
        server.stop()


def batch(ids: range, name: str) -> pa.Table:
    return pa.Table.from_pylist([{"id": i, "name": f"{name}{i}"} for i in ids], schema=SCHEMA)


def rows(t: tidelake.Table) -> list[tuple]:
    return sorted((r["id"], r["name"]) for r in t.to_arrow().to_pylist())


def test_tidelake_signs_with_the_vended_token_and_java_reads_with_it(fault_proxies, java):  # noqa: F811
    with token_server(fault_proxies) as server:
        server.vend_data_token("db.t", HOUR_MS, token_of("vended"))
        # credentials of its own, which S3 refuses: the token's win
        options = {**server.options, "s3.access-key": "revoked", "s3.secret-key": "x"}
        with fault_proxies.http.refusing("revoked") as tally:
            cat = tidelake.Catalog.from_options(options)
            cat.create_database("db")
            t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=2)
            assert t.path.startswith("s3://")
            t.upsert(batch(range(5), "a"))
            assert rows(cat.get_table("db.t")) == [(i, f"a{i}") for i in range(5)]
            # Java's REST client reads the same rows through the same tokens
            got = java.run({"op": "read", "catalog": server.options, "table": "db.t"})["rows"]
            assert sorted(map(tuple, got)) == [(i, f"a{i}") for i in range(5)]
        assert server.tokens_served("db.t") >= 2  # tidelake's and Java's
        assert set(tally.signers) == {"vended"} and 403 not in {s for s, _, _ in tally.requests}
        # the control: without the server's tokens, the configured credentials are used, and refused
        with fault_proxies.http.refusing("revoked") as control:
            untokened = tidelake.Catalog.from_options({**options, "data-token.enabled": "false"})
            with pytest.raises(tidelake.StorageError):
                untokened.get_table("db.t").to_arrow()
        assert set(control.signers) == {"revoked"} and {s for s, _, _ in control.requests} == {403}


def test_an_expiring_token_is_replaced_before_it_expires(fault_proxies):  # noqa: F811
    with token_server(fault_proxies) as server:
        server.vend_data_token("db.t", 4_000, token_of("first"))
        cat = tidelake.Catalog.from_options(server.options)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=2)
        t.upsert(batch(range(3), "a"))
        served = server.tokens_served("db.t")
        # the server rotates the key and the old one stops working at once
        server.vend_data_token("db.t", HOUR_MS, token_of("second"))
        with fault_proxies.http.refusing("first") as tally:
            time.sleep(2.5)  # past half the first token's life: the next request fetches a new one
            t.upsert(batch(range(2, 6), "b"))  # the same table handle, the same object store
            assert rows(t) == [(0, "a0"), (1, "a1"), (2, "b2"), (3, "b3"), (4, "b4"), (5, "b5")]
        assert server.tokens_served("db.t") > served
        assert set(tally.signers) == {"second"} and 403 not in {s for s, _, _ in tally.requests}


def test_a_revoked_token_is_a_storage_error_and_nothing_is_committed(fault_proxies):  # noqa: F811
    with token_server(fault_proxies) as server:
        server.vend_data_token("db.t", HOUR_MS, token_of("good"))
        cat = tidelake.Catalog.from_options(server.options)
        cat.create_database("db")
        cat.create_table("db.t", SCHEMA, primary_keys=["id"], bucket=1).upsert(batch(range(2), "a"))
        server.vend_data_token("db.t", HOUR_MS, token_of("revoked"))
        with fault_proxies.http.refusing("revoked"):
            with pytest.raises(tidelake.StorageError):
                cat.get_table("db.t").upsert(batch(range(5), "x"))
        server.vend_data_token("db.t", HOUR_MS, token_of("good"))
        assert rows(cat.get_table("db.t")) == [(0, "a0"), (1, "a1")]
        # a token without credentials names what it lacks
        server.vend_data_token("db.t", HOUR_MS, {"s3.endpoint.region": "us-east-1"})
        with pytest.raises(tidelake.InvalidArgumentError, match="data token of table 'db.t' has no access key"):
            cat.get_table("db.t")
