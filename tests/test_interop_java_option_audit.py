"""Table options tidelake once accepted and ignored, against Java Paimon 1.3.1 (the ``java``
oracle): each either behaves as Java's now or is refused (see "Options and what tidelake does
with them" in docs/production-options.md).

* ``ignore-update-before``: Java's writers drop update-before (``-U``) rows (``RowKindFilter``);
  an aggregation table then does not retract them. Both writers give the same rows.
* ``changelog-producer.row-deduplicate-ignore-fields``: a lookup changelog does not emit a
  ``-U/+U`` pair for a record whose values differ only in those columns. Java's and tidelake's
  compactions produce the same changelog for the same commits.
* ``manifest.format`` other than Avro: Java writes parquet manifests, which tidelake does not
  read or write; both are refused with an UnsupportedError naming the option.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_changes, compare_read, java_write, tidelake_write
from tidelake.exceptions import UnsupportedError

AGG_FIELDS = [("k", "INT NOT NULL"), ("v", "BIGINT"), ("op", "STRING")]
AGG_OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
               "rowkind.field": "op", "ignore-update-before": "true"}
AGG_STEPS: list[dict[str, Any]] = [
    {"rows": [[1, 10, "+I"], [2, 20, "+I"]]},
    {"rows": [[1, 10, "-U"], [1, 5, "+U"], [2, 20, "-U"]]},
    {"rows": [[3, 7, "-U"], [3, 1, "+I"]]},
]
# the -U rows are dropped: nothing is retracted
AGG_EXPECTED = {1: 15, 2: 20, 3: 1}


def _values(t: tidelake.Table) -> dict[int, int]:
    rows = t.to_arrow(columns=["k", "v"]).to_pylist()
    return {r["k"]: r["v"] for r in rows}


@pytest.mark.parametrize("writer", ["java", "tidelake"])
def test_ignore_update_before_drops_update_before_rows_as_java(java, tmp_path, writer):
    wh = str(tmp_path / "wh")
    sc = Scenario(f"iub_{writer}", AGG_FIELDS, AGG_STEPS, primary_keys=["k"], options=AGG_OPTIONS)
    t = (java_write if writer == "java" else tidelake_write)(java, wh, sc)
    assert _values(t) == AGG_EXPECTED
    compare_read(java, t, wh, f"ignore-update-before ({writer})")


CL_FIELDS = [("k", "INT NOT NULL"), ("v", "BIGINT"), ("ts", "BIGINT")]
CL_OPTIONS = {"bucket": "1", "changelog-producer": "lookup", "changelog-producer.row-deduplicate": "true",
              "changelog-producer.row-deduplicate-ignore-fields": "ts"}
CL_STEPS: list[dict[str, Any]] = [
    {"rows": [[1, 10, 1], [2, 20, 1]]},
    {"rows": [[1, 10, 2], [2, 21, 2]]},  # key 1: only ts changes, no changelog
    {"rows": [[1, 10, 3], [2, 21, 3]]},
]
CL_EXPECTED = sorted([("+I", 1, 10, 1), ("+I", 2, 20, 1), ("-U", 2, 20, 1), ("+U", 2, 21, 2)])


def _changelog(t: tidelake.Table) -> list[tuple[Any, ...]]:
    latest = t.latest_snapshot()
    assert latest is not None
    rows = t.changes(0, latest.id, mode="changelog").to_pylist()
    return sorted((r["_row_kind"], r["k"], r["v"], r["ts"]) for r in rows)


def test_row_deduplicate_ignore_fields_changelog_as_java(java, tmp_path):
    wh = str(tmp_path / "wh")
    by: dict[str, tidelake.Table] = {}
    for writer, write in (("java", java_write), ("tidelake", tidelake_write)):
        by[writer] = write(java, wh, Scenario(f"rdi_{writer}", CL_FIELDS, CL_STEPS, primary_keys=["k"],
                                              options=CL_OPTIONS))
        assert _changelog(by[writer]) == CL_EXPECTED, writer
    t = by["tidelake"]
    latest = t.latest_snapshot()
    assert latest is not None
    compare_changes(java, t, wh, "row-deduplicate-ignore-fields (tidelake)", 0, latest.id)


def test_manifest_formats_other_than_avro_are_refused(java, tmp_path):
    wh = str(tmp_path / "wh")
    options = {"bucket": "1", "manifest.format": "parquet"}
    t = java_write(java, wh, Scenario("mf_java", CL_FIELDS, CL_STEPS[:1], primary_keys=["k"], options=options))
    with pytest.raises(UnsupportedError, match="manifest.format"):
        t.to_arrow()
    with pytest.raises(UnsupportedError, match="manifest.format"):
        t.write(pa.table({"k": pa.array([5], pa.int32()), "v": [1], "ts": [1]}))
    cat = tidelake.Catalog(str(tmp_path / "wh2"))
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([pa.field("k", pa.int32(), False), pa.field("v", pa.int64())])
    own = cat.create_table("db.mf", schema, primary_keys=["k"], options=options)
    with pytest.raises(UnsupportedError, match="manifest.format"):
        own.write(pa.table({"k": pa.array([1], pa.int32()), "v": [1]}))
