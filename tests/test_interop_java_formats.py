"""ORC and Avro data files written by tidelake, read by Java Paimon 1.3.1 (and pypaimon).

tidelake writes every scenario below into a table Java created with ``file.format`` = orc /
avro (appends, primary keys with deletes, several commits with tidelake's own compactions and
full compactions); Java's reads of every snapshot must equal tidelake's, and every data file
must be in the table's format. The column sets are what each format can hold: ORC takes every
type of the scenarios (DECIMAL and nested types through tidelake's orc-rust patch; CHAR as
string) but VARIANT and BLOB, Java's Avro format refuses TIMESTAMP(p > 6); such columns are
refused by tidelake with UnsupportedError naming the column and the format (tested too), as are
timestamps ORC cannot store exactly (ORC-763).
"""

from __future__ import annotations

import pathlib

import pandas as pd
import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_all, compare_read, java_write, tidelake_write
from _s3 import TableFiles
from test_interop_java import (AVRO_UNSUPPORTED, BY_NAME, _arrow_types, _pypaimon_reads_exactly,
                               _without)

# A MAP with a non-string key and a MULTISET (Avro arrays of key/value records, ORC maps).
MAP_EXTRA = [("imap", {"type": "MAP", "key": "INT NOT NULL", "value": "STRING"}),
              ("mset", {"type": "MULTISET", "element": "STRING"})]


def _orc_safe(sc: Scenario) -> Scenario:
    """``sc`` without timestamps in the second before the epoch at sub-millisecond digits,
    which ORC cannot store exactly (ORC-763; see test_orc_refuses_inexact_timestamps)."""
    def fix(v):
        return "1969-12-31T23:59:58.999999999" if v == "1969-12-31T23:59:59.999999999" else v

    def row(r):
        return [fix(v) for v in r] if isinstance(r, list) else {**r, "values": row(r["values"])}

    steps = [{**st, "rows": [row(r) for r in st["rows"]]} if "rows" in st else st for st in sc.steps]
    return Scenario(sc.name, sc.fields, steps, sc.primary_keys, sc.partition_keys, sc.options, sc.mode)


def _with_map_extras(sc: Scenario) -> Scenario:
    """``sc`` (a types scenario) plus an INT-keyed MAP and a MULTISET column."""
    values = {1: [[[1, "a"], [-2, None]], [["x", 2], ["y", 1]]], 2: [[], []]}

    def row(r):
        if not isinstance(r, list):
            return {**r, "values": row(r["values"])}
        return r + values.get(r[0], [None, None])

    steps = [{**st, "rows": [row(r) for r in st["rows"]]} if "rows" in st else st for st in sc.steps]
    return Scenario(sc.name, sc.fields + MAP_EXTRA, steps, sc.primary_keys, sc.partition_keys, sc.options,
                    sc.mode)


def _in_format(name: str, fmt: str, compact: bool) -> Scenario:
    base = BY_NAME[name]
    if name.startswith("types"):
        base = _with_map_extras(_orc_safe(base) if fmt == "orc" else _without(base, AVRO_UNSUPPORTED))
    steps = base.steps
    if compact:  # full compactions (primary-key scenarios: tidelake does not compact append tables)
        steps = [x for st in steps for x in ([st, {"compact": True}] if "rows" in st else [st])]
    return _arrow_types(Scenario(f"{name}_{fmt}{'_compacted' if compact else ''}", base.fields, steps,
                                 base.primary_keys, base.partition_keys,
                                 {**base.options, "file.format": fmt}, base.mode))


def _data_files(t: tidelake.Table) -> list[pathlib.Path]:
    return [p for p in pathlib.Path(t.path).rglob("*") if p.is_file() and "bucket-" in p.parent.name
            and p.name.startswith(("data-", "changelog-"))]


FORMAT_SCENARIOS = [(n, f) for n in ("types_append", "types_pk", "dedup", "cl_lookup", "aggregation")
                    for f in ("orc", "avro")]


@pytest.mark.parametrize(("name", "fmt", "compact"),
                         [(n, f, c) for n, f in FORMAT_SCENARIOS for c in (False, True)
                          if not (c and BY_NAME[n].primary_keys == [])])
def test_tidelake_writes_format_java_reads(java, tmp_path, name, fmt, compact):
    sc = _in_format(name, fmt, compact)
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    files = _data_files(t)
    assert files and all(p.suffix == f".{fmt}" for p in files), files
    if compact:
        assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
    # pypaimon 2.1 has no MULTISET type.
    pp = _pypaimon_reads_exactly(sc) and not any("MULTISET" in str(ty) for _, ty in sc.fields)
    compare_all(java, t, wh, f"B tidelake-wrote {fmt}", pypaimon=pp)


def test_pypaimon_reads_tidelake_orc_decimals_and_nested(java, tmp_path):
    """pypaimon (and Java) read tidelake's ORC DECIMAL, ROW, ARRAY and MAP columns: the types
    scenario without the MULTISET column pypaimon has no type for."""
    base = _orc_safe(BY_NAME["types_append"])
    sc = _arrow_types(Scenario("types_orc_pypaimon", base.fields, base.steps, base.primary_keys,
                               base.partition_keys, {**base.options, "file.format": "orc"}, base.mode))
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    assert all(p.suffix == ".orc" for p in _data_files(t))
    compare_all(java, t, wh, "B tidelake-wrote orc", pypaimon=True)


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_tidelake_compacts_java_written_format(java, tmp_path, fmt):
    """Java writes an ORC / Avro table; tidelake's full compaction rewrites it in the same format
    and Java reads the result as tidelake does."""
    base = BY_NAME["dedup"]
    sc = _arrow_types(Scenario(f"dedup_{fmt}_java", base.fields, base.steps, base.primary_keys,
                               base.partition_keys, {**base.options, "file.format": fmt}, base.mode))
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    before = set(_data_files(t))
    t.compact(full=True)
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    new = set(_data_files(t)) - before
    assert new and all(p.suffix == f".{fmt}" for p in new), new
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    compare_all(java, t, wh, f"B tidelake-compacted java {fmt}", changes=False)


@pytest.mark.parametrize(("fmt", "codec"), [("orc", "zlib"), ("orc", "snappy"), ("orc", "lz4"), ("orc", "none"),
                                            ("avro", "deflate"), ("avro", "zstd"), ("avro", "null"),
                                            ("avro", "bzip2")])
def test_tidelake_writes_format_codecs(java, tmp_path, fmt, codec):
    base = BY_NAME["dedup"]
    sc = _arrow_types(Scenario(f"dedup_{fmt}_{codec}", base.fields, base.steps[:4], base.primary_keys,
                               base.partition_keys, {**base.options, "file.format": fmt, "file.compression": codec},
                               base.mode))
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    compare_all(java, t, wh, f"B tidelake-wrote {fmt}/{codec}", changes=False)


@pytest.mark.parametrize(("fmt", "column", "type_"), [
    ("orc", "var", "VARIANT"), ("avro", "ts9", "TIMESTAMP(9)"),
    ("avro", "ltz7", "TIMESTAMP(7) WITH LOCAL TIME ZONE")])
def test_unwritable_columns_are_refused(java, tmp_path, fmt, column, type_):
    """A column the format's writer cannot hold: UnsupportedError naming column and format, and
    nothing is written. (Java refuses to create Avro tables with TIMESTAMP(p > 6), so the table
    is created as Parquet and switched to the format by tidelake.)"""
    sc = _arrow_types(Scenario(f"bad_{fmt}_{column}", [("k", "INT NOT NULL"), (column, type_)], [], mode="batch"))
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    t.set_option("file.format", fmt)
    t = tidelake.Catalog(wh).get_table(f"db.{sc.name}")
    data = pa.Table.from_pylist([{"k": 1, column: None}], schema=t.schema)
    label = "ORC" if fmt == "orc" else "Avro"
    with pytest.raises(tidelake.UnsupportedError, match=rf"(?s)'{column}'.*{label}"):
        t.write(data)
    assert t.snapshots() == []


def test_orc_refuses_inexact_timestamps(java, tmp_path):
    """ORC (ORC-763) cannot store a timestamp in the second before the epoch with more than
    millisecond digits exactly: orc-rust refuses it and so does tidelake, writing nothing."""
    sc = _arrow_types(Scenario("orc_ts", [("k", "INT NOT NULL"), ("ts", "TIMESTAMP(9)")], [],
                               options={"file.format": "orc"}, mode="batch"))
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    data = pa.Table.from_pylist([{"k": 1, "ts": pd.Timestamp("1969-12-31T23:59:59.999999999")}], schema=t.schema)
    with pytest.raises(tidelake.UnsupportedError, match="ORC"):
        t.write(data)
    assert t.snapshots() == []


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_filters_on_tidelake_written_format(java, tmp_path, fmt):
    """Java's and tidelake's filters over tidelake's ORC / Avro files (whose stats follow Java's
    per-format rules) select the same rows."""
    wh = str(tmp_path)
    t = tidelake_write(java, wh, _in_format("types_append", fmt, compact=False))
    compare_read(java, t, wh, f"B filter {fmt}", columns=["id", "i64", "ts6"], filter=[("i64", ">", 0)],
                 java_filter={"op": ">", "field": "i64", "value": 0})
    compare_read(java, t, wh, f"B filter {fmt}", filter=[("s", "in", ["unicode ☃ ü", "zzz"])],
                 java_filter={"op": "in", "field": "s", "values": ["unicode ☃ ü", "zzz"]})
    compare_read(java, t, wh, f"B filter {fmt}", columns=["id", "ts6"], filter=[("ts6", "<", pd.Timestamp("1950-01-01"))],
                 java_filter={"op": "<", "field": "ts6", "value": "1950-01-01T00:00:00"})
    # (Java's executeFilter evaluates projected columns only: project what is filtered.)
    compare_read(java, t, wh, f"B filter {fmt}", columns=["id", "vb"], filter=[("vb", "is_null")],
                 java_filter={"op": "is_null", "field": "vb"})


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_format_files_on_every_storage(storage, fmt):
    """ORC / Avro writes, upserts and compaction on local storage and S3 (moto) read back as
    written, from files of the table's format only."""
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("s", pa.string()),
                        pa.field("v", pa.int64())])
    t = storage.create_table(f"t_{fmt}", schema, primary_keys=["k"], options={"bucket": "2", "file.format": fmt})
    n = 5000
    t.write(pa.table({"k": pa.array(range(n), pa.int32()), "s": [f"s{i}" for i in range(n)],
                      "v": pa.array(range(n), pa.int64())}, schema=schema))
    t.write(pa.table({"k": pa.array(range(0, n, 2), pa.int32()), "s": [None] * (n // 2),
                      "v": pa.array([-i for i in range(0, n, 2)], pa.int64())}, schema=schema))
    t.compact(full=True)
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
    assert got == [{"k": i, "s": None if i % 2 == 0 else f"s{i}", "v": -i if i % 2 == 0 else i} for i in range(n)]
    data = [f for f in TableFiles.of(t).names() if "bucket-" in f and f.rsplit("/", 1)[-1].startswith("data-")]
    assert data and all(f.endswith(f".{fmt}") for f in data), data


def test_orc_char_values_read_as_java_reads_them(java, tmp_path):
    """CHAR(n) goes to ORC as a string column (orc-rust has no char type); Java reads it into
    CHAR(n) without trailing spaces, as it reads its own ORC CHAR columns: tidelake writes the
    values so, and both read the same."""
    sc = _arrow_types(Scenario("orc_char", [("k", "INT NOT NULL"), ("c", "CHAR(5)")],
                               [{"rows": [[1, "a  "], [2, "abcde"], [3, ""], [4, None], [5, " b"]]}],
                               options={"file.format": "orc"}, mode="batch"))
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    compare_all(java, t, wh, "B tidelake-wrote orc char", changes=False)
