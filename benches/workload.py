"""The benchmark workload: one deterministic set of rows shared by every system.

A primary-key table ``id BIGINT NOT NULL`` + five value columns. The bulk load holds
``rows`` distinct keys in random order (so every writer has to sort); each of ``commits``
upsert commits holds ``upsert_rows`` rows, half of them existing keys (drawn at random from
the keys written so far) and half new keys. Generated once per run by the parent, saved as
Arrow IPC files, and read back by every system's subprocess, so all systems see the same bytes;
each file also as a raw little-endian column file (``<name>.cols``, :func:`save_columns`) that
the Java peer (``interop/java-oracle`` Bench.java) decodes without Arrow.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("qty", pa.int32()),
    pa.field("price", pa.float64()),
    pa.field("cat", pa.string()),
    pa.field("note", pa.string()),
    pa.field("ver", pa.int64()),
])
KEY = "id"
CATEGORIES = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])


@dataclasses.dataclass(frozen=True)
class Workload:
    rows: int = 2_000_000
    upsert_rows: int = 200_000
    commits: int = 10
    buckets: int = 4
    seed: int = 20240514

    def scaled(self, scale: float) -> "Workload":
        return dataclasses.replace(self, rows=max(1000, int(self.rows * scale)),
                                   upsert_rows=max(100, int(self.upsert_rows * scale)))

    @property
    def final_rows(self) -> int:
        return self.rows + self.commits * (self.upsert_rows - self.upsert_rows // 2)

    @property
    def upsert_total(self) -> int:
        return self.commits * self.upsert_rows


def _rows(ids: np.ndarray, ver: int, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    note_nums = pa.array(rng.integers(0, 10**12, n, dtype=np.int64))
    note = pc.binary_join_element_wise("note-", pc.cast(note_nums, pa.string()), "")
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "qty": pa.array(rng.integers(0, 10_000, n, dtype=np.int32)),
        "price": pa.array(np.round(rng.random(n) * 1000, 2)),
        "cat": pa.array(CATEGORIES[rng.integers(0, len(CATEGORIES), n)]),
        "note": note,
        "ver": pa.array(np.full(n, ver, dtype=np.int64)),
    }, schema=SCHEMA)


def generate(w: Workload) -> tuple[pa.Table, list[pa.Table]]:
    rng = np.random.default_rng(w.seed)
    bulk = _rows(rng.permutation(w.rows).astype(np.int64), 0, rng)
    upserts = []
    next_key = w.rows
    for c in range(w.commits):
        existing = w.upsert_rows // 2
        new = w.upsert_rows - existing
        old_ids = rng.choice(next_key, existing, replace=False)
        new_ids = np.arange(next_key, next_key + new)
        next_key += new
        ids = np.concatenate([old_ids, new_ids]).astype(np.int64)
        rng.shuffle(ids)
        upserts.append(_rows(ids, c + 1, rng))
    return bulk, upserts


def save(w: Workload, directory: pathlib.Path) -> pathlib.Path:
    """Generate the workload into ``directory`` (skipped if already there for the same spec)."""
    directory.mkdir(parents=True, exist_ok=True)
    spec = directory / "workload.json"
    if (spec.exists() and json.loads(spec.read_text()) == dataclasses.asdict(w)
            and (directory / "bulk.cols").exists()):
        return directory
    bulk, upserts = generate(w)
    for name, t in [("bulk", bulk)] + [(f"upsert-{i:02d}", u) for i, u in enumerate(upserts)]:
        with ipc.new_file(directory / f"{name}.arrow", t.schema) as f:
            f.write_table(t)
        save_columns(t, directory / f"{name}.cols")
    spec.write_text(json.dumps(dataclasses.asdict(w)))
    return directory


def save_columns(t: pa.Table, path: pathlib.Path) -> None:
    """``t`` (no nulls) as raw little-endian columns: int64 row count, then per column in
    schema order its values (int64 / int32 / float64), or for a string column its int32
    offsets (count + 1), the int64 byte length and the UTF-8 bytes."""
    with open(path, "wb") as f:
        f.write(np.int64(t.num_rows).tobytes())
        for col in t.combine_chunks().columns:
            if col.null_count:
                raise ValueError(f"{path.name}: the column file format has no nulls")
            arr = col.chunk(0) if col.num_chunks else pa.array([], col.type)
            if pa.types.is_string(arr.type):
                _, offsets, data = arr.buffers()
                offs = np.frombuffer(offsets, dtype="<i4", count=len(arr) + 1, offset=arr.offset * 4)
                f.write((offs - offs[0]).astype("<i4").tobytes())
                f.write(np.int64(offs[-1] - offs[0]).tobytes())
                f.write(memoryview(data)[offs[0]:offs[-1]])
            else:
                little = np.dtype(arr.type.to_pandas_dtype()).newbyteorder("<")
                f.write(arr.to_numpy(zero_copy_only=False).astype(little).tobytes())


def load(directory: str | os.PathLike[str], bulk: bool = True,
         upserts: bool = True) -> tuple[Workload, pa.Table | None, list[pa.Table]]:
    """The saved workload; ``bulk``/``upserts`` False leaves that part out (None / [])."""
    d = pathlib.Path(directory)
    w = Workload(**json.loads((d / "workload.json").read_text()))

    def read(name: str) -> pa.Table:
        with ipc.open_file(d / f"{name}.arrow") as f:
            return f.read_all().combine_chunks()

    return (w, read("bulk") if bulk else None,
            [read(f"upsert-{i:02d}") for i in range(w.commits)] if upserts else [])


def write_runs(path: str | os.PathLike[str], w: Workload, bulk: pa.Table, upserts: list[pa.Table],
               options: dict[str, str] | None = None):
    """Write the workload with tidelake, ``write-only`` so nothing is compacted: every commit
    stays a level-0 sorted run per bucket; ``options`` are further table options. Returns the
    table."""
    import tidelake

    t = tidelake.create_table(path, SCHEMA, primary_keys=[KEY], bucket=w.buckets,
                              options={"write-only": "true", **(options or {})})
    t.write(bulk)
    for up in upserts:
        t.upsert(up)
    return t


def final_state(bulk: pa.Table, upserts: list[pa.Table]) -> pa.Table:
    """The expected latest state: the last row of each key wins (for checking reads)."""
    allrows = pa.concat_tables([bulk] + upserts)
    order = np.arange(allrows.num_rows)
    allrows = allrows.append_column("_pos", pa.array(order))
    last = allrows.group_by(KEY).aggregate([("_pos", "max")])
    return allrows.take(last["_pos_max"]).drop_columns(["_pos"]).sort_by(KEY)
