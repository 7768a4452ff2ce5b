"""Model-based test of the write path: random sequences of creates, upserts, deletes, overwrites,
truncates, column additions and (time-travel) reads against a plain-dict model.

Runs on local storage and on the S3 server (``storage`` fixture). Profiles: the default runs 200
examples of ~10 steps locally and 15 on S3; ``HYPOTHESIS_PROFILE=nightly`` runs many more and
longer sequences on both.
"""

from __future__ import annotations

import os

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition, rule,
                                 run_state_machine_as_test)

import tidelake
from _s3 import Storage
from conftest import assert_same_rows

settings.register_profile("nightly", max_examples=3000, stateful_step_count=30, deadline=None,
                          suppress_health_check=list(HealthCheck))
DEFAULT = settings(max_examples=200, stateful_step_count=10, deadline=None,
                   suppress_health_check=list(HealthCheck))
S3_EXAMPLES = 15

PARTS = ["a", "b/c"]
KEYS = st.integers(0, 7)
NEW_COLUMN_TYPES = [pa.int64(), pa.string()]


class LakeModel(RuleBasedStateMachine):
    """The table and the model of its rows: ``key -> row dict`` (key = (p, k) or (k,))."""

    def __init__(self, storage: Storage) -> None:
        super().__init__()
        self.storage = storage
        self.t: tidelake.Table | None = None
        self.model: dict = {}
        self.snaps: dict[int, tuple[pa.Schema, list[dict]]] = {}

    # ---- helpers ---------------------------------------------------------------------------------

    def key(self, row: dict) -> tuple:
        return (row["p"], row["k"]) if self.partitioned else (row["k"],)

    def value_columns(self) -> list[str]:
        return [n for n in self.t.schema.names if n not in ("k", "p")]

    def merge(self, state: dict, rows: list[dict]) -> None:
        for r in rows:
            kk = self.key(r)
            old = state.get(kk)
            if self.engine == "partial-update" and old is not None:
                state[kk] = {c: (r.get(c) if r.get(c) is not None else old.get(c)) for c in self.t.schema.names}
            else:
                state[kk] = {c: r.get(c) for c in self.t.schema.names}

    def record(self) -> None:
        """Remember the model for every snapshot created since the last record (a write may
        create an APPEND and a COMPACT snapshot with the same content)."""
        latest = self.t.latest_snapshot()
        if latest is None:
            return
        start = max(self.snaps, default=0) + 1
        for sid in range(start, latest.id + 1):
            self.snaps[sid] = (self.t.schema, [dict(r) for r in self.model.values()])

    def table_of(self, schema: pa.Schema, rows: list[dict]) -> pa.Table:
        return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)

    def rows_strategy(self):
        cols = {c: (st.none() | st.integers(-5, 5)) if self.t.schema.field(c).type == pa.int64()
                else (st.none() | st.sampled_from(["x", "y", "zz", ""])) for c in self.value_columns()}
        cols["k"] = KEYS
        if self.partitioned:
            cols["p"] = st.sampled_from(PARTS)
        return st.lists(st.fixed_dictionaries(cols), min_size=1, max_size=6)

    # ---- rules ---------------------------------------------------------------------------------

    @initialize(bucket=st.sampled_from([1, 2, -1]), partitioned=st.booleans(),
                engine=st.sampled_from(["deduplicate", "partial-update"]))
    def create(self, bucket, partitioned, engine):
        self.partitioned, self.engine = partitioned, engine
        fields = [pa.field("k", pa.int32(), nullable=False), ("v", pa.int64()), ("s", pa.string())]
        if partitioned:
            fields.insert(0, pa.field("p", pa.string(), nullable=False))
        opts = {"merge-engine": engine} if engine != "deduplicate" else {}
        if bucket == -1:  # small dynamic buckets: keys spread over several, through the HASH index
            opts["dynamic-bucket.target-row-num"] = "3"
        self.t = tidelake.create_table(self.storage.fresh(), pa.schema(fields),
                                       primary_keys=["p", "k"] if partitioned else ["k"],
                                       partition_keys=["p"] if partitioned else None, bucket=bucket, options=opts,
                                       storage_options=self.storage.options)

    @rule(data=st.data())
    def upsert(self, data):
        rows = data.draw(self.rows_strategy())
        self.t.upsert(self.table_of(self.t.schema, rows))
        self.merge(self.model, rows)  # duplicate keys in one batch: later rows win (merged in order)
        self.record()

    @precondition(lambda self: self.t is not None and self.engine == "deduplicate")
    @rule(data=st.data())
    def delete(self, data):
        keys = data.draw(st.lists(st.tuples(st.sampled_from(PARTS), KEYS), min_size=1, max_size=4))
        rows = [{"p": p, "k": k} for p, k in keys]
        schema = pa.schema([self.t.schema.field(c) for c in (["p", "k"] if self.partitioned else ["k"])])
        self.t.delete_keys(self.table_of(schema, rows))
        for r in rows:
            self.model.pop(self.key(r), None)
        self.record()

    @rule(data=st.data(), one_partition=st.booleans())
    def overwrite(self, data, one_partition):
        rows = data.draw(self.rows_strategy())
        if one_partition and self.partitioned:
            p = rows[0]["p"]
            rows = [dict(r, p=p) for r in rows]
            self.t.write(self.table_of(self.t.schema, rows), mode="overwrite", overwrite_partition={"p": p})
            kept = {kk: r for kk, r in self.model.items() if r["p"] != p}
        else:
            self.t.write(self.table_of(self.t.schema, rows), mode="overwrite")
            kept = {}
        self.merge(kept, rows)
        self.model = kept
        self.record()

    @rule()
    def truncate(self):
        self.t.truncate()
        self.model = {}
        self.record()

    @precondition(lambda self: self.t is not None and len(self.t.schema) < 6)
    @rule(type_index=st.integers(0, len(NEW_COLUMN_TYPES) - 1))
    def add_column(self, type_index):
        name = f"c{len(self.t.schema)}"
        self.t.add_column(name, NEW_COLUMN_TYPES[type_index])
        for r in self.model.values():
            r[name] = None

    @rule()
    def read_latest(self):
        expected = self.table_of(self.t.schema, list(self.model.values()))
        assert_same_rows(self.t.to_arrow(), expected)

    @precondition(lambda self: self.t is not None and bool(self.snaps))
    @rule(data=st.data())
    def read_at_earlier_snapshot(self, data):
        sid = data.draw(st.sampled_from(sorted(self.snaps)))
        schema, rows = self.snaps[sid]
        assert_same_rows(self.t.to_arrow(snapshot_id=sid), self.table_of(schema, rows))

    @invariant()
    def snapshot_ids_are_contiguous(self):
        if self.t is not None:
            assert [s.id for s in self.t.snapshots()] == list(range(1, len(self.t.snapshots()) + 1))

    def teardown(self):
        if self.t is not None:
            self.read_latest()
            # a freshly opened table (another process) sees the same
            again = tidelake.open_table(self.t.path, storage_options=self.storage.options)
            assert_same_rows(again.to_arrow(), self.t.to_arrow())


def _selected_settings(storage: Storage) -> settings:
    if os.environ.get("HYPOTHESIS_PROFILE") == "nightly":
        return settings.get_profile("nightly")
    return DEFAULT if storage.kind == "local" else settings(DEFAULT, max_examples=S3_EXAMPLES)


def test_lake_model(storage: Storage):
    run_state_machine_as_test(lambda: LakeModel(storage), settings=_selected_settings(storage))
