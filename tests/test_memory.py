"""Streaming reads keep memory bounded.

A primary-key table (2 buckets) is written with pypaimon: 10 commits of 20,000 rows with
overlapping keys and a ~1 KB string column, so every bucket holds 10 overlapping sorted runs
that the reader must merge. The rows decode to ~200 MB across the runs (~110 MB after the
merge). A fresh subprocess then streams the table with ``to_reader(batch_size=1024)`` without
keeping batches, and its peak RSS growth (Linux ``VmHWM``, reset just before the read) must stay
well below the decoded size. ``to_arrow()`` in the same setting is the control: its growth is at
least the result's size, which shows the measurement sees the allocations.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

ROWS_PER_COMMIT = 40_000
COMMITS = 10
PAYLOAD_BYTES = 1_000
STEP = ROWS_PER_COMMIT // 2  # commit c writes ids [c*STEP, c*STEP + ROWS_PER_COMMIT)

def _expected() -> tuple[int, int]:
    """(row count, sum of ``ver``) of the merged table: each id keeps its last commit."""
    n = (COMMITS - 1) * STEP + ROWS_PER_COMMIT
    ids = np.arange(n)
    last = np.minimum(ids // STEP, COMMITS - 1)
    return n, int(last.sum())


@pytest.fixture(scope="module")
def big_table(tmp_path_factory) -> pathlib.Path:
    from pypaimon import CatalogFactory, Schema

    warehouse = tmp_path_factory.mktemp("mem") / "warehouse"
    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", True)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ver", pa.int32()),
                        pa.field("payload", pa.string())])
    catalog.create_table("db.big", Schema.from_pyarrow_schema(schema, primary_keys=["id"],
                                                               options={"bucket": "2"}), False)
    table = catalog.get_table("db.big")
    rng = np.random.default_rng(1)
    filler = "x" * (PAYLOAD_BYTES - 32)
    for c in range(COMMITS):
        ids = np.arange(c * STEP, c * STEP + ROWS_PER_COMMIT, dtype=np.int64)
        prefix = rng.integers(0, 2**63 - 1, size=(ROWS_PER_COMMIT, 2)).astype(np.uint64)
        payload = [f"{a:016x}{b:016x}" + filler for a, b in prefix]  # unique, compressible
        data = pa.table({"id": ids, "ver": np.full(ROWS_PER_COMMIT, c, dtype=np.int32),
                         "payload": payload}, schema=schema)
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    return warehouse / "db.db" / "big"


MEASURE = textwrap.dedent("""
    import json, sys

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024

    import pyarrow as pa, pyarrow.compute as pc, tidelake

    table = tidelake.open_table(sys.argv[1])
    table.to_arrow(filter=[("id", "<", 0)])          # start the runtime, read the metadata
    with open("/proc/self/clear_refs", "w") as f:    # reset the peak RSS (VmHWM) to the current RSS
        f.write("5")
    before = status("VmHWM")
    rows = ver_sum = max_batch = nbytes = 0
    if sys.argv[2] == "reader":
        for batch in table.to_reader(batch_size=1024):
            rows += batch.num_rows
            ver_sum += pc.sum(batch.column("ver")).as_py() or 0
            max_batch = max(max_batch, batch.num_rows)
            nbytes += batch.nbytes
            del batch
    else:
        result = table.to_arrow()
        rows, nbytes = result.num_rows, result.nbytes
        ver_sum = pc.sum(result.column("ver")).as_py()
    after = status("VmHWM")
    print(json.dumps({"rows": rows, "ver_sum": ver_sum, "max_batch": max_batch, "nbytes": nbytes,
                      "growth": after - before}))
""")


def _measure(path: pathlib.Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path), mode], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_streaming_read_keeps_peak_rss_bounded(big_table):
    rows, ver_sum = _expected()
    decoded_input = COMMITS * ROWS_PER_COMMIT * (PAYLOAD_BYTES + 8 + 4)  # every run, decoded

    streamed = _measure(big_table, "reader")
    assert streamed["rows"] == rows
    assert streamed["ver_sum"] == ver_sum  # the merge kept each key's last version
    assert 0 < streamed["max_batch"] <= 1024
    decoded_output = streamed["nbytes"]
    assert decoded_output > 100 * 2**20
    print(f"\nstreamed {rows} rows, {decoded_output / 2**20:.0f} MiB decoded "
          f"({decoded_input / 2**20:.0f} MiB across the sorted runs); "
          f"peak RSS growth {streamed['growth'] / 2**20:.1f} MiB")
    assert streamed["growth"] < decoded_output / 4, (
        f"peak RSS grew {streamed['growth'] / 2**20:.0f} MiB while streaming "
        f"{decoded_output / 2**20:.0f} MiB")

    # Control: materialising the same read grows the RSS by at least the result's size.
    materialised = _measure(big_table, "table")
    assert materialised["rows"] == rows and materialised["ver_sum"] == ver_sum
    print(f"to_arrow(): peak RSS growth {materialised['growth'] / 2**20:.1f} MiB")
    assert materialised["growth"] > 0.9 * materialised["nbytes"]
    assert streamed["growth"] < materialised["growth"] / 3
