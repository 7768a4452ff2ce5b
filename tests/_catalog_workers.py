"""What the catalog race tests run in their own processes (importable by module name), and how
their acknowledgements are checked.

A race writer inserts rows ``(k, writer, n)`` under keys no other writer uses, one commit per
write, and appends ``writer n k1,k2,...`` to its acks file after each commit *returned*, so the
file lists exactly the acknowledged writes. Java's writer (interop/java-oracle ``Race.java``)
logs the same lines. After the race, every acknowledged key must be in the table, with the row
its write gave it, in every engine's read.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import pyarrow as pa

RACE_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("writer", pa.string()),
                         pa.field("n", pa.int32())])
"""The race table: a primary-key table on ``k``."""

RACE_FIELDS = [("k", "BIGINT NOT NULL"), ("writer", "STRING"), ("n", "INT")]


def tidelake_writer(catalog_options: dict[str, str], storage_options: dict[str, str] | None, table: str, writer: str,
                    first_key: int, keys_per_write: int, seconds: float, acks: str, go_file: str,
                    pause: float = 0.0) -> dict[str, Any]:
    """Race: commit writes through the catalog until ``seconds`` passed (after ``go_file``),
    ``pause`` seconds apart (so that a slower engine's writer gets the lock too)."""
    import tidelake

    catalog = tidelake.Catalog.from_options(catalog_options, storage_options)
    t = catalog.get_table(table)
    while not os.path.exists(go_file):
        time.sleep(0.01)
    deadline = time.monotonic() + seconds
    acked = failed = 0
    errors: list[str] = []
    n = 0
    with open(acks, "a") as log:
        while time.monotonic() < deadline:
            keys = [first_key + n * keys_per_write + i for i in range(keys_per_write)]
            rows = pa.Table.from_pylist([{"k": k, "writer": writer, "n": n} for k in keys], schema=RACE_SCHEMA)
            try:
                t.upsert(rows)
            except tidelake.TidelakeError as e:
                failed += 1
                errors = (errors + [repr(e)])[:5]
                # a conflict never landed; any other failure may have
                kind = "conflict" if isinstance(e, tidelake.CommitConflictError) else "unknown"
                with open(acks + ".failed", "a") as f:
                    f.write(f"{writer} {n} {','.join(map(str, keys))} {kind}\n")
            else:
                log.write(f"{writer} {n} {','.join(map(str, keys))}\n")
                log.flush()
                acked += 1
            n += 1
            time.sleep(pause)
    return {"acked": acked, "failed": failed, "errors": errors}


def tidelake_compactor(catalog_options: dict[str, str], storage_options: dict[str, str] | None, table: str,
                       seconds: float, go_file: str) -> dict[str, Any]:
    """Compact the table through the catalog (alternating full compactions) until ``seconds``
    passed; a compaction that lost a race (``CommitConflictError``) is counted, not an error."""
    import tidelake

    t = tidelake.Catalog.from_options(catalog_options, storage_options).get_table(table)
    while not os.path.exists(go_file):
        time.sleep(0.01)
    deadline = time.monotonic() + seconds
    compacted = conflicts = rounds = 0
    errors: list[str] = []
    while time.monotonic() < deadline:
        try:
            compacted += t.compact(full=rounds % 2 == 1) is not None
        except tidelake.CommitConflictError:
            conflicts += 1
        except tidelake.TidelakeError as e:
            errors = (errors + [repr(e)])[:5]
        rounds += 1
        time.sleep(0.5)
    return {"compacted": compacted, "conflicts": conflicts, "errors": errors}


def read_acks(paths: list[str]) -> dict[int, tuple[str, int]]:
    """Every acknowledged key: its writer and write number."""
    out: dict[int, tuple[str, int]] = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                writer, n, keys = line.split()
                for k in keys.split(","):
                    assert int(k) not in out, f"key {k} acknowledged twice"
                    out[int(k)] = (writer, int(n))
    return out


def read_unknown(paths: list[str]) -> set[int]:
    """The keys of writes that failed without telling whether they landed (not a conflict)."""
    out: set[int] = set()
    for path in paths:
        if os.path.exists(path + ".failed"):
            with open(path + ".failed") as f:
                for line in f:
                    _, _, keys, kind = line.split()
                    if kind != "conflict":
                        out.update(int(k) for k in keys.split(","))
    return out


def check_acks(rows: list[dict[str, Any]], acks: dict[int, tuple[str, int]], reader: str,
               unknown: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    """Every acknowledged write is in ``rows`` as written, and nothing else is but writes whose
    outcome was unknown (a write that failed with a conflict did not land); no key is there
    twice."""
    by_key: dict[int, tuple[str, int]] = {}
    for r in rows:
        assert r["k"] not in by_key, f"{reader}: key {r['k']} read twice"
        by_key[r["k"]] = (r["writer"], r["n"])
    lost = [k for k, v in acks.items() if by_key.get(k) != v]
    assert not lost, f"{reader}: {len(lost)} of {len(acks)} acknowledged writes lost or changed, e.g. {lost[:5]}"
    phantoms = sorted(set(by_key) - set(acks) - unknown)
    assert not phantoms, f"{reader}: {len(phantoms)} rows of writes never acknowledged, e.g. {phantoms[:5]}"


if __name__ == "__main__":  # python _catalog_workers.py writer|compactor '<json arguments>'
    role = {"writer": tidelake_writer, "compactor": tidelake_compactor}[sys.argv[1]]
    print(json.dumps(role(**json.loads(sys.argv[2]))))
