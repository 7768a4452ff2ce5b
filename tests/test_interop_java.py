"""Java Paimon (1.3.1, interop/java-oracle) as a second oracle, both ways.

A) Java writes a table with its own writers (a long-lived ``StreamWriteBuilder`` writer with
   commit identifiers, so Java compacts as it does by default, or one ``BatchWriteBuilder`` per
   commit); tidelake's reads of every snapshot, tag and single-snapshot increment must equal
   Java's own reads of the same.
B) Java creates the same table (so the schema is exactly Java's) and tidelake writes the same
   commits (its long-lived writer compacts by default; some scenarios add full compactions);
   Java's reads must equal tidelake's. pypaimon is the third reader where it reads the type
   exactly (not TIMESTAMP(7..9) on primary-key tables, which it cuts to microseconds).

A mismatch fails. What was compared is printed at the end of the run (conftest).
"""

from __future__ import annotations

import pandas as pd
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_all, compare_read, java_write, tidelake_write, to_arrow

# ---- types ---------------------------------------------------------------------------------------


def _row_type(*fields: tuple[str, object]) -> dict:
    return {"type": "ROW", "fields": [{"id": i, "name": n, "type": t} for i, (n, t) in enumerate(fields)]}


ALL_TYPES = [
    ("id", "INT NOT NULL"),
    ("i8", "TINYINT"), ("i16", "SMALLINT"), ("i64", "BIGINT"),
    ("f32", "FLOAT"), ("f64", "DOUBLE"),
    ("dec10", "DECIMAL(10, 2)"), ("dec18", "DECIMAL(18, 4)"), ("dec38", "DECIMAL(38, 10)"),
    ("c5", "CHAR(5)"), ("vc10", "VARCHAR(10)"), ("s", "STRING"),
    ("bin4", "BINARY(4)"), ("vb", "BYTES"), ("b", "BOOLEAN"),
    ("d", "DATE"), ("tm", "TIME(3)"),
    ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"), ("ts9", "TIMESTAMP(9)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ("arr", {"type": "ARRAY", "element": "INT"}),
    ("arr_s", {"type": "ARRAY", "element": "STRING"}),
    ("st", _row_type(("x", "INT"), ("y", "STRING"), ("t9", "TIMESTAMP(9)"))),
    ("mp", {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}),
    ("nested", {"type": "ARRAY", "element": _row_type(("k", "STRING"), ("vals", {"type": "ARRAY", "element": "DOUBLE"}))}),
]

ROW_1 = [1, -128, -32768, -(2**63), -1.5, 2.2250738585072014e-308, "-12345678.90", "99999999999999.9999",
         "-1234567890123456789012345678.0123456789", "ab", "hello", "unicode ☃ ü", "00ff10ab", "", True,
         "1969-07-20", "23:59:59.999000000", "1969-12-31T23:59:59.000000000", "2024-02-29T12:34:56.789000000",
         "1900-01-01T00:00:00.000001000", "2024-03-09T16:00:00.124456788", "1970-01-01T00:00:00.001000000",
         "2262-04-11T23:47:16.854775000", "1677-09-21T00:12:43.145224193", [1, None, 3], ["a", None, ""],
         [7, "x", "2024-03-09T16:00:00.124456788"], [["k1", 1], ["k2", None]],
         [["e", [1.5, None, "NaN"]], ["f", []]]]
ROW_2 = [2, 127, 32767, 2**63 - 1, "NaN", "-Infinity", "0.01", "0.0000", "0.0000000000", "abcde", "",
         "s", "00000000", "deadbeef", False, "2024-01-01", "00:00:00.000000000", "2024-01-01T00:00:00.000000000",
         "1970-01-01T00:00:00.000000000", "1970-01-01T00:00:00.000000000", "1969-12-31T23:59:59.999999999",
         "2024-01-01T00:00:00.000000000", "2024-01-01T00:00:00.000001000", "2024-01-01T00:00:00.000000001",
         [], [], [None, None, None], [], []]
ROW_3 = [3] + [None] * (len(ALL_TYPES) - 1)


# ---- scenarios ------------------------------------------------------------------------------------

KV = [("k", "INT NOT NULL"), ("p", "STRING"), ("v", "BIGINT"), ("s", "STRING")]


def _kv_rows(n: int, start: int = 0, salt: str = "") -> list[list]:
    return [[i, f"p{i % 2}", i * 10 + start, f"{salt}{i}"] for i in range(start, start + n)]


def _dedup_steps() -> list[dict]:
    """Seven commits of upserts and deletes on 12 keys in two partitions (enough sorted runs
    for Java's and tidelake's default compaction to trigger), with a tag."""
    return [
        {"rows": _kv_rows(8)},
        {"rows": _kv_rows(6, 4, "u")},
        {"rows": [{"kind": "-D", "values": [1, "p1", 0, ""]}, {"kind": "-D", "values": [4, "p0", 0, ""]}]},
        {"tag": "after-delete"},
        {"rows": _kv_rows(3, 0, "w")},
        {"rows": _kv_rows(4, 8, "x")},
        {"rows": [[2, "p0", None, None]]},
        {"rows": _kv_rows(2, 10, "y") + [{"kind": "-D", "values": [9, "p1", 0, ""]}]},
    ]


PARTIAL = [("k", "INT NOT NULL"), ("a", "STRING"), ("g1", "INT"), ("b", "STRING"), ("c", "BIGINT"),
           ("g2", "INT")]
AGG = [("k", "INT NOT NULL"), ("sum_i", "BIGINT"), ("max_d", "DOUBLE"), ("min_s", "STRING"),
       ("last_v", "STRING"), ("last_nn", "STRING"), ("first_v", "INT"), ("first_nn", "INT"),
       ("listagg_s", "STRING"), ("band", "BOOLEAN"), ("bor", "BOOLEAN"), ("prod", "DECIMAL(12, 2)"),
       ("coll", {"type": "ARRAY", "element": "INT"}),
       ("mmap", {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"})]
AGG_FUNCS = {"sum_i": "sum", "max_d": "max", "min_s": "min", "last_v": "last_value",
             "last_nn": "last_non_null_value", "first_v": "first_value", "first_nn": "first_non_null_value",
             "listagg_s": "listagg", "band": "bool_and", "bor": "bool_or", "prod": "product",
             "coll": "collect", "mmap": "merge_map"}
SPECIAL_PARTITIONS = ["a/b", "x=y", "p%q", "h#1", "q?", "&amp", "c:d", "with space", "ünï☃", None, ""]
EVOLVE = [("k", "INT NOT NULL"), ("a", "INT"), ("f", "FLOAT"), ("old", "STRING"), ("gone", "STRING")]

SCENARIOS = [
    Scenario("types_append", ALL_TYPES, [{"rows": [ROW_1, ROW_2]}, {"rows": [ROW_3]}], mode="batch"),
    Scenario("types_pk", ALL_TYPES, [{"rows": [ROW_1, ROW_3]}, {"rows": [ROW_2]},
                                     {"rows": [{"kind": "-D", "values": ROW_3}]}],
             primary_keys=["id"], options={"bucket": "2"}),
    Scenario("dedup", KV, _dedup_steps(), primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "2"}),
    Scenario("dedup_dv", KV, _dedup_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "1", "deletion-vectors.enabled": "true"}),
    Scenario("dynamic_bucket", KV, _dedup_steps(), primary_keys=["k"], options={"bucket": "-1"}),
    Scenario("cl_input", KV, _dedup_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "1", "changelog-producer": "input"}),
    Scenario("cl_lookup", KV, _dedup_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "1", "changelog-producer": "lookup"}),
    Scenario("cl_full", KV, _dedup_steps(), primary_keys=["k", "p"], partition_keys=["p"],
             options={"bucket": "1", "changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"}),
    Scenario("first_row", KV, _dedup_steps()[:2] + _dedup_steps()[4:6] + [{"compact": True}],
             primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"}),
    Scenario("partial_update", PARTIAL, [
        {"rows": [[1, "a1", 1, "b1", 10, 1], [2, "a2", 1, None, None, None]]},
        {"rows": [[1, "a0", 0, None, 20, 5], [2, None, None, "b2", 30, 2]]},
        {"rows": [[1, None, 3, "b-old", 5, 4], [3, "a3", None, "b3", None, None]]},
        {"rows": [[2, "a2'", 7, None, None, None]]},
    ], primary_keys=["k"], options={"bucket": "1", "merge-engine": "partial-update",
                                     "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "b,c"}),
    Scenario("aggregation", AGG, [
        {"rows": [[1, 5, 1.5, "m", "x", "x", 1, None, "a", True, False, "1.50", [1, 2], [["a", 1]]],
                  [2, None, None, None, None, None, None, None, None, None, None, None, None, None]]},
        {"rows": [[1, 7, 0.5, "b", None, None, 2, 9, "b", False, False, "2.00", [2, 3], [["b", 2], ["a", 3]]],
                  [2, 1, 2.5, "z", "y", "y", 4, 4, "c", True, True, "3.00", [5], [["c", 1]]]]},
        {"rows": [[1, -2, 9.0, "c", "z", None, 3, 8, None, True, True, "-1.00", None, None]]},
    ], primary_keys=["k"], options={"bucket": "1", "merge-engine": "aggregation",
                                     **{f"fields.{f}.aggregate-function": a for f, a in AGG_FUNCS.items()},
                                     "fields.coll.distinct": "false"}),
    Scenario("append_overwrite", KV, [
        {"rows": _kv_rows(6)},
        {"rows": _kv_rows(3, 6, "b")},
        {"rows": [[100, "p1", 1, "ow"]], "overwrite": {"p": "p1"}},
        {"tag": "t-overwritten"},
        {"rows": _kv_rows(2, 20, "c")},
        {"rows": [[200, "p0", 2, "all"]], "overwrite": True},
    ], partition_keys=["p"], mode="batch"),
    Scenario("special_partitions", [("k", "INT NOT NULL"), ("p", "STRING"), ("v", "STRING")], [
        {"rows": [[i, p, f"v{i}"] for i, p in enumerate(SPECIAL_PARTITIONS)]},
        {"rows": [[i + 100, p, "again"] for i, p in enumerate(SPECIAL_PARTITIONS)]},
    ], partition_keys=["p"], mode="batch"),
    Scenario("special_partitions_pk", [("k", "INT NOT NULL"), ("p", "STRING NOT NULL"), ("v", "STRING")], [
        {"rows": [[i, p, f"v{i}"] for i, p in enumerate(SPECIAL_PARTITIONS) if p is not None]},
        {"rows": [[i, p, "again"] for i, p in enumerate(SPECIAL_PARTITIONS) if p is not None and i % 2]},
    ], primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "1"}),
    Scenario("schema_evolution", EVOLVE, [
        {"rows": [[1, 10, 1.5, "o1", "g1"], [2, 20, None, None, "g2"]]},
        {"alter": [{"add": "added", "type": "STRING", "arrow": "string"},
                   {"rename": "old", "to": "renamed"}, {"drop": "gone"}]},
        {"rows": [[3, 30, 3.5, "r3", "n3"], [1, 11, 1.25, "r1", None]]},
        {"alter": [{"update_type": "a", "type": "BIGINT", "arrow": "int64"},
                   {"update_type": "f", "type": "DOUBLE", "arrow": "float64"}]},
        {"rows": [[4, 2**40, 0.1, "r4", "n4"]]},
    ], primary_keys=["k"], options={"bucket": "1"}),
    Scenario("append_bucketed", KV, [{"rows": _kv_rows(3, 3 * i, f"c{i}")} for i in range(7)],
             partition_keys=["p"], options={"bucket": "2", "bucket-key": "k"}, mode="batch"),
]

BY_NAME = {sc.name: sc for sc in SCENARIOS}


def _arrow_types(sc: Scenario) -> Scenario:
    """Alter specs name their Arrow types as strings (dataclass defaults stay plain data)."""
    import pyarrow as pa

    for step in sc.steps:
        for c in step.get("alter", []):
            if isinstance(c.get("arrow"), str):
                c["arrow"] = pa.type_for_alias(c["arrow"])
    return sc


def _pypaimon_reads_exactly(sc: Scenario) -> bool:
    """pypaimon 2.1 cuts TIMESTAMP(7..9) of primary-key tables to microseconds, refuses
    sequence groups and fails on MAP columns of aggregation tables."""
    has_ns = any("TIMESTAMP(9" in str(t) or "TIMESTAMP(7" in str(t) for _, t in sc.fields)
    groups = any(k.endswith(".sequence-group") for k in sc.options)
    return not (sc.primary_keys and has_ns) and not groups and sc.options.get("merge-engine") != "aggregation"


# ---- A: Java writes, tidelake reads ------------------------------------------------------------


@pytest.mark.parametrize("name", [sc.name for sc in SCENARIOS])
def test_java_writes_tidelake_reads(java, tmp_path, name):
    sc = _arrow_types(BY_NAME[name])
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    compare_all(java, t, wh, "A java-wrote", pypaimon=_pypaimon_reads_exactly(sc))


def _without(sc: Scenario, names: set[str]) -> Scenario:
    """``sc`` without the columns ``names`` (and their values)."""
    keep = [i for i, (n, _) in enumerate(sc.fields) if n not in names]

    def row(r):
        if isinstance(r, list):
            return [r[i] for i in keep]
        return {**r, "values": row(r["values"])}

    steps = [{**st, "rows": [row(r) for r in st["rows"]]} if "rows" in st else st for st in sc.steps]
    return Scenario(sc.name, [sc.fields[i] for i in keep], steps, sc.primary_keys, sc.partition_keys,
                    sc.options, sc.mode)


# Java's Avro format refuses TIMESTAMP precisions above 6.
AVRO_UNSUPPORTED = {"ts9", "ltz9", "st"}


@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize("name", ["types_append", "types_pk", "dedup"])
def test_java_writes_other_formats(java, tmp_path, name, fmt):
    base = _without(BY_NAME[name], AVRO_UNSUPPORTED) if fmt == "avro" else BY_NAME[name]
    sc = Scenario(f"{name}_{fmt}", base.fields, base.steps, base.primary_keys, base.partition_keys,
                  {**base.options, "file.format": fmt}, base.mode)
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    compare_all(java, t, wh, "A java-wrote")


# file.compression values as Java's writers spell them per format.
CODECS = [("parquet", c) for c in ("snappy", "gzip", "lz4", "uncompressed")] + \
    [("orc", c) for c in ("snappy", "lz4", "zstd", "none")] + [("avro", c) for c in ("snappy", "zstd", "null")]


@pytest.mark.parametrize(("fmt", "codec"), CODECS)
def test_java_writes_codecs(java, tmp_path, fmt, codec):
    base = BY_NAME["dedup"]
    sc = Scenario(f"dedup_{fmt}_{codec}", base.fields, base.steps[:4], base.primary_keys, base.partition_keys,
                  {**base.options, "file.format": fmt, "file.compression": codec}, base.mode)
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    compare_all(java, t, wh, "A java-wrote", changes=False)


def test_tidelake_refuses_brotli(java, tmp_path):
    """Java Paimon 1.3.1 (Hadoop 3.3.6 client) has no Brotli codec and fails on Brotli Parquet
    files: tidelake refuses to write them rather than leave a table Java cannot read."""
    base = _arrow_types(BY_NAME["types_append"])
    sc = Scenario("types_brotli", base.fields, base.steps, options={"file.compression": "brotli"}, mode="batch")
    with pytest.raises(tidelake.UnsupportedError, match="brotli"):
        tidelake_write(java, str(tmp_path), sc)


@pytest.mark.parametrize("codec", ["snappy", "gzip", "lz4", "lz4_raw", "zstd", "uncompressed"])
def test_tidelake_writes_codecs(java, tmp_path, codec):
    base = _arrow_types(BY_NAME["types_append"])
    sc = Scenario(f"types_{codec}", base.fields, base.steps, base.primary_keys, base.partition_keys,
                  {**base.options, "file.compression": codec}, base.mode)
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    compare_all(java, t, wh, "B tidelake-wrote", changes=False)


def test_java_projection_and_filters(java, tmp_path):
    wh = str(tmp_path)
    t = java_write(java, wh, BY_NAME["dedup"])
    compare_read(java, t, wh, "A filter", columns=["s", "k"])
    compare_read(java, t, wh, "A filter", columns=["k", "v"], filter=[("v", ">=", 40)],
                 java_filter={"op": ">=", "field": "v", "value": 40})
    compare_read(java, t, wh, "A filter", filter=[[("p", "=", "p0"), ("k", "<", 5)], [("s", "is_null")]],
                 java_filter={"op": "or", "args": [
                     {"op": "and", "args": [{"op": "=", "field": "p", "value": "p0"},
                                            {"op": "<", "field": "k", "value": 5}]},
                     {"op": "is_null", "field": "s"}]})
    ta = java_write(java, wh, BY_NAME["types_append"])
    compare_read(java, ta, wh, "A filter", columns=["id", "ts9", "dec38"],
                 filter=[("ts9", ">", pd.Timestamp("2000-01-01"))],
                 java_filter={"op": ">", "field": "ts9", "value": "2000-01-01T00:00:00"})


# ---- B: tidelake writes, Java reads -------------------------------------------------------------


def test_tidelake_written_projection_and_filters(java, tmp_path):
    """Java's filters on tidelake's files (INT96 timestamps without bounds, decimals, strings)."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _arrow_types(BY_NAME["types_append"]))
    compare_read(java, t, wh, "B filter", columns=["id", "ts9", "ltz9"],
                 filter=[("ts9", ">", pd.Timestamp("2000-01-01"))],
                 java_filter={"op": ">", "field": "ts9", "value": "2000-01-01T00:00:00"})
    compare_read(java, t, wh, "B filter", columns=["dec38", "s", "id"], filter=[("dec38", "<", 0)],
                 java_filter={"op": "<", "field": "dec38", "value": "0"})
    compare_read(java, t, wh, "B filter", filter=[("vc10", "in", ["hello", ""])],
                 java_filter={"op": "in", "field": "vc10", "values": ["hello", ""]})


@pytest.mark.parametrize("name", [sc.name for sc in SCENARIOS])
def test_tidelake_writes_java_reads(java, tmp_path, name):
    """tidelake writes every scenario into Java's table (``cl_full``'s
    ``full-compaction.delta-commits=1``: its writers fully compact after every commit) and Java
    reads every snapshot and change as tidelake does."""
    sc = _arrow_types(BY_NAME[name])
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    compare_all(java, t, wh, "B tidelake-wrote", pypaimon=_pypaimon_reads_exactly(sc))


@pytest.mark.parametrize("name", ["dedup", "dedup_dv", "cl_lookup", "types_pk", "aggregation", "append_bucketed",
                                  "append_overwrite"])
def test_tidelake_compacts_java_reads(java, tmp_path, name):
    """tidelake's full compaction (and its DV maintenance / changelog; small files merged on
    append tables) after every second commit: Java reads every snapshot as tidelake does."""
    base = _arrow_types(BY_NAME[name])
    steps: list[dict] = []
    for i, s in enumerate(base.steps):
        steps.append(s)
        if "rows" in s and i % 2 == 1:
            steps.append({"compact": True})
    sc = Scenario(f"{name}_compacted", base.fields, steps, base.primary_keys, base.partition_keys, base.options,
                  base.mode)
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
    compare_all(java, t, wh, "B tidelake-compacted", pypaimon=_pypaimon_reads_exactly(sc))


# Branches: main keeps writing after a branch from a tag and an empty one are created and
# written; main reads the partitions it lacks (p9) from `scan.fallback-branch` (the fallback
# branch commits before main's middle snapshot: Java refuses a time travel of main to a time
# before the fallback branch's first snapshot, and so does tidelake).
BRANCHES = Scenario("branches", KV, [
    {"rows": _kv_rows(4)},
    {"tag": "t1"},
    {"create_branch": "dev", "from_tag": "t1"},
    {"create_branch": "fb"},
    {"rows": [[20, "p9", 1, "fb"], [21, "p0", 2, "fb"]], "branch": "fb"},
    {"rows": _kv_rows(2, 4, "m")},
    {"rows": _kv_rows(3, 10, "d"), "branch": "dev"},
    {"alter": [{"set": "scan.fallback-branch", "value": "fb"}]},
    {"rows": _kv_rows(2, 30, "z")},
], partition_keys=["p"], mode="batch")
FAST_FORWARD = Scenario("fast_forward", KV, [
    {"rows": _kv_rows(4)},
    {"tag": "t1"},
    {"rows": _kv_rows(2, 4, "m")},
    {"create_branch": "dev", "from_tag": "t1"},
    {"rows": _kv_rows(3, 10, "d"), "branch": "dev"},
    {"rows": _kv_rows(1, 20, "e"), "branch": "dev"},
    {"fast_forward": "dev"},
    {"rows": _kv_rows(2, 30, "z")},
], primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "1"}, mode="batch")


def _compare_branches(java, t: tidelake.Table, wh: str, label: str) -> dict[str, tidelake.Table]:
    """Every branch of ``t`` (and main) read by tidelake == read by Java (== by pypaimon);
    returns them by name."""
    tables = {"main": t, **{b: tidelake.open_table(t.path, branch=b) for b in t.branches()}}
    for name, b in tables.items():
        # pypaimon (the third reader) ignores `scan.fallback-branch`; Java does not.
        compare_all(java, b, wh, label, pypaimon="scan.fallback-branch" not in b.options)
    return tables


@pytest.mark.parametrize("sc", [BRANCHES, FAST_FORWARD], ids=lambda sc: sc.name)
@pytest.mark.parametrize("writer", ["java", "tidelake"])
def test_branches_both_ways(java, tmp_path, sc, writer):
    wh = str(tmp_path)
    if writer == "java":
        t = java_write(java, wh, sc)
        label = "A java-wrote"
    else:
        t = tidelake_write(java, wh, sc)
        label = "B tidelake-wrote"
        # Java 1.3.1 cannot create a branch from a snapshot; it reads one tidelake created.
        from_snapshot = t.create_branch("from-snapshot", from_snapshot=1)
        from_snapshot.write(to_arrow(from_snapshot.schema, [[40, "p4", 400, "s"]]))
    tables = _compare_branches(java, t, wh, label)
    dev = tidelake.Catalog(wh).get_table(f"db.{sc.name}$branch_dev")  # Paimon's identifier
    assert dev.branch == "dev" and dev.to_arrow().equals(tables["dev"].to_arrow())
    if writer == "tidelake":
        assert [r["k"] for r in tables.pop("from-snapshot").to_arrow().to_pylist() if r["p"] == "p4"] == [40]
    if sc is BRANCHES:
        assert sorted(tables) == ["dev", "fb", "main"]
        # p9 is only in the fallback branch; main's p0 hides the fallback's p0 row.
        main_rows = tables["main"].to_arrow().to_pylist()
        assert [r["k"] for r in main_rows if r["p"] == "p9"] == [20]
        assert 21 not in [r["k"] for r in main_rows]
        assert sorted(r["k"] for r in tables["dev"].to_arrow().to_pylist()) == [0, 1, 2, 3, 10, 11, 12]
    else:
        assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
        assert sorted(r["k"] for r in t.to_arrow().to_pylist()) == [0, 1, 2, 3, 10, 11, 12, 20, 30, 31]


def test_java_reads_table_path(java, tmp_path):
    """The oracle also opens a bare table directory (no catalog)."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, BY_NAME["dedup"])
    answer = java.run({"op": "read", "path": t.path})
    assert len(answer["rows"]) == t.to_arrow().num_rows > 0
    assert tidelake.open_table(t.path).to_arrow().num_rows == len(answer["rows"])


# ---- options tidelake does not implement on write -------------------------------------------------

UNSUPPORTED_ON_WRITE = {
    "commit.callbacks": "org.example.AuditCallback",
    "tag.callbacks": "org.example.TagAudit",
    "file-index.zonemap.columns": "v",
}


@pytest.mark.parametrize("option", list(UNSUPPORTED_ON_WRITE))
def test_unsupported_write_options_refused_reads_work(java, tmp_path, option):
    """A Java table whose options ask writers for behaviour tidelake does not implement (Java
    classes run by Java's writers, a file-index type neither engine has; set by Java once the
    table has rows, as Java cannot write with them here either): tidelake reads it as Java
    does, and every tidelake write path (write, writer, commit, truncate, compact) raises
    UnsupportedError naming the option and changes nothing."""
    base = BY_NAME["dedup"]
    alter = {"alter": [{"set": option, "value": UNSUPPORTED_ON_WRITE[option]}]}
    sc = Scenario(f"opt_{option.replace('.', '_').replace('-', '_')}", base.fields, [*base.steps[:3], alter],
                  base.primary_keys, base.partition_keys, base.options)
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    compare_read(java, t, wh, "A unsupported-option")
    before = [s.id for s in t.snapshots()]
    data = t.to_arrow()
    attempts = {
        "write": lambda: t.write(data),
        "writer": lambda: t.writer().write(data),
        "truncate": lambda: t.truncate(),
        "compact": lambda: t.compact(full=True),
    }
    for what, attempt in attempts.items():
        with pytest.raises(tidelake.UnsupportedError, match=f"'{option}'"):
            attempt()
    assert [s.id for s in tidelake.Catalog(wh).get_table(f"db.{sc.name}").snapshots()] == before


# ---- collect(distinct=true): the same set, Java's order is HashSet order ------------------------


def test_collect_distinct_is_the_same_set(java, tmp_path):
    """Java's ``collect`` with ``distinct=true`` accumulates into a ``java.util.HashSet``, so its
    element order is the set's iteration order (hash buckets), not the input order: tidelake
    returns the same elements, compared here as sorted lists (docs/interop.md)."""
    from _java import java_read
    from _peers import canonical_column

    fields = [("k", "INT NOT NULL"), ("c", {"type": "ARRAY", "element": "INT"}),
              ("cs", {"type": "ARRAY", "element": "STRING"})]
    steps = [{"rows": [[1, [30, 1, 30], ["b", "a"]], [2, [5], None]]},
             {"rows": [[1, [2, 1, 17, 64], ["z", "a", "q"]], [2, None, ["x"]]]},
             {"rows": [[1, [99, 16, 0], ["b", "m"]]]}]
    for who in ("java", "tidelake"):
        sc = _arrow_types(Scenario(f"collect_{who}", fields, steps, ["k"], [], {
            "bucket": "1", "merge-engine": "aggregation", "fields.c.aggregate-function": "collect",
            "fields.c.distinct": "true", "fields.cs.aggregate-function": "collect", "fields.cs.distinct": "true"}))
        wh = str(tmp_path / who)
        t = java_write(java, wh, sc) if who == "java" else tidelake_write(java, wh, sc)
        ours = t.to_arrow().sort_by("k")
        theirs = java_read(java, wh, f"db.{sc.name}")
        java_sets = {r[0]: [sorted(r[1] or []), sorted(r[2] or [])] for r in theirs["rows"]}
        our_sets = {k: [sorted(c or []), sorted(cs or [])]
                    for k, c, cs in zip(ours["k"].to_pylist(), canonical_column(ours["c"]), canonical_column(ours["cs"]))}
        assert our_sets == java_sets == {1: [[0, 1, 2, 16, 17, 30, 64, 99], ["a", "b", "m", "q", "z"]], 2: [[5], ["x"]]}


# ---- dynamic buckets: Java's HASH index prunes tidelake's point reads exactly ---------------------


@pytest.mark.parametrize("key_type", ["INT NOT NULL", "STRING NOT NULL"])
def test_point_reads_of_java_dynamic_bucket_tables(java, tmp_path, key_type):
    """Point scans and lookups of a Java-written dynamic-bucket table skip buckets by the hashes
    Java put in its HASH index files, so tidelake's key hashes must equal Java's: every key is
    found, absent keys are not, and a point scan plans one bucket of the table's several."""
    def key(i: int) -> int | str:
        return i if key_type.startswith("INT") else f"key-{i}"

    # keys written out of order, so every bucket's key range overlaps the others' and only the
    # HASH index can rule a bucket out
    rows = [[key(i * 7 % 40), f"p{i % 2}", i * 10, f"s{i}"] for i in range(40)]
    sc = Scenario(f"dynamic_points_{key_type.split()[0].lower()}",
                  [("k", key_type), ("p", "STRING"), ("v", "BIGINT"), ("s", "STRING")],
                  [{"rows": rows[:25]}, {"rows": rows[20:]}], primary_keys=["k"],
                  options={"bucket": "-1", "dynamic-bucket.target-row-num": "5"})
    t = java_write(java, str(tmp_path), sc)
    buckets = len(t.scan().splits())  # one split per bucket: the table has no partitions
    assert buckets > 2, f"Java spread 40 keys over {buckets} buckets only"
    for row in rows:
        got = t.to_arrow(filter=[("k", "=", row[0])]).to_pylist()
        assert got == [dict(zip(["k", "p", "v", "s"], row))], f"point scan of {row[0]!r}"
        assert t.lookup([row[0]]).to_pylist() == got, f"lookup of {row[0]!r}"
        planned = len(t.scan(filter=[("k", "=", row[0])]).splits())
        assert planned == 1, f"point scan of {row[0]!r} planned {planned} of {buckets} buckets"
    assert t.to_arrow(filter=[("k", "=", key(1000))]).num_rows == 0
    assert t.lookup([key(1000)]).num_rows == 0


# ---- the writers' own compaction: the same picks as Java's batch writer -------------------------

UPSERT_FIELDS = [("id", "BIGINT NOT NULL"), ("qty", "INT"), ("note", "STRING"), ("ver", "BIGINT")]


def _upsert_commits(bulk: int, sizes: list[int], seed: int) -> list[list[list]]:
    """The benchmark's write workload (benches/workload.py) at small scale: ``bulk`` distinct
    keys in random order, then one commit per size, half existing keys drawn at random and half
    new keys, shuffled."""
    import random

    rng = random.Random(seed)

    def rows(ids: list[int], ver: int) -> list[list]:
        return [[k, rng.randrange(10_000), f"note-{rng.randrange(10**12)}", ver] for k in ids]

    ids = list(range(bulk))
    rng.shuffle(ids)
    commits = [rows(ids, 0)]
    next_key = bulk
    for ver, n in enumerate(sizes, 1):
        fresh = list(range(next_key, next_key + n - n // 2))
        batch = rng.sample(range(next_key), n // 2) + fresh
        next_key += len(fresh)
        rng.shuffle(batch)
        commits.append(rows(batch, ver))
    return commits


def _lsm_state(t: tidelake.Table) -> dict[int, list[tuple[int, int]]]:
    """Per bucket, the live files' (level, rows), level 0 first."""
    files = t.system("files").to_pylist()
    state: dict[int, list[tuple[int, int]]] = {}
    for f in files:
        state.setdefault(f["bucket"], []).append((f["level"], f["record_count"]))
    return {b: sorted(v) for b, v in sorted(state.items())}


# Upsert row counts per commit: neighbours differ by far more than the 1% size ratio and the
# files by far less than 200% size amplification, so Java's and tidelake's pick cannot differ by
# their encoders' byte counts (equal counts would sit on the size-ratio threshold).
UPSERT_SIZES = {
    "alternating": [2000, 1000, 3000, 1200, 4000, 800, 2500, 1100, 3500, 900, 2000, 1000],
    "growing": [500, 800, 1300, 2000, 3200, 5000, 8000, 1000, 1600, 2500],
    "shrinking": [6000, 3000, 1500, 800, 400, 200, 5000, 2500, 1200, 600],
}


@pytest.mark.parametrize("sizes", list(UPSERT_SIZES))
def test_upsert_compaction_matches_java(java, tmp_path, sizes):
    """A bulk load, then upsert commits of random keys, each a one-shot batch write with default
    options (universal compaction, which Java's ``BatchTableWrite`` waits for at
    ``prepareCommit``): after every commit tidelake's new snapshots' kinds and each bucket's
    live files (level, rows) equal Java's. tidelake writes with ``write``/``upsert`` as the
    benchmark does; the reads of both tables agree as well."""
    commits = _upsert_commits(20_000, UPSERT_SIZES[sizes], seed=len(sizes))
    sc = _arrow_types(Scenario(f"upserts_{sizes}", UPSERT_FIELDS, [], ["id"], [], {"bucket": "2"},
                               mode="batch"))
    wh_java, wh_ours = str(tmp_path / "java"), str(tmp_path / "tidelake")
    java.run(sc.java_job(wh_java, with_steps=False))
    java.run(sc.java_job(wh_ours, with_steps=False))
    theirs_t = tidelake.Catalog(wh_java).get_table(f"db.{sc.name}")
    ours_t = tidelake.Catalog(wh_ours).get_table(f"db.{sc.name}")
    compactions = 0
    for i, rows in enumerate(commits):
        java.run({**sc.java_job(wh_java), "existing": True, "steps": [{"rows": rows}]})
        data = to_arrow(ours_t.schema, rows)
        if i == 0:
            ours_t.write(data)
        else:
            ours_t.upsert(data)
        theirs_t, ours_t = theirs_t.refresh(), ours_t.refresh()
        kinds = [[s.commit_kind for s in x.snapshots()] for x in (ours_t, theirs_t)]
        assert kinds[0] == kinds[1], f"commit {i}: snapshot kinds tidelake {kinds[0]}, Java {kinds[1]}"
        ours, theirs = _lsm_state(ours_t), _lsm_state(theirs_t)
        assert ours == theirs, f"commit {i}: (level, rows) per bucket: tidelake {ours}, Java {theirs}"
        compactions = kinds[0].count("COMPACT")
    assert compactions >= 2, f"{sizes}: the sequence should make both writers compact, got {compactions}"
    compare_read(java, ours_t, wh_ours, "B tidelake-upserted")
    compare_read(java, theirs_t, wh_java, "A java-upserted")
