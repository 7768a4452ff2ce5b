"""Paimon's ``clone`` procedure from Paimon tables (``clone_from => 'paimon'``, Java
``ClonePaimonTableUtils``) and over whole databases and catalogs: ``Catalog.clone_table``,
``Catalog.clone_tables``, the CLI and ``CALL sys.clone``. Java Paimon 1.3.1 (the ``java`` oracle)
writes the sources (a primary-key table with deletion vectors, compacted; partitioned and
bucketed append tables); tidelake clones them; Java reads the clones' rows, compacts the
postpone-bucket clone of the primary-key table, and writes on into them, and tidelake does too;
the sources stay as they were. Java's own clone is a Flink job (a Flink mini cluster is not on
the oracle's classpath): the clones' schemas are checked against Java's rules
(``ClonePaimonSchemaFunction``) instead."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write

PK_FIELDS = [("k", "INT NOT NULL"), ("p", "INT NOT NULL"), ("v", "STRING")]
APPEND_FIELDS = [("id", "BIGINT"), ("dt", "STRING"), ("score", "DOUBLE")]


def _pk(name: str) -> Scenario:
    rows = [{"rows": [[i, i % 2, f"a{i}"] for i in range(40)]},
            {"rows": [[i, i % 2, f"b{i}"] for i in range(20, 50)]},
            {"rows": [{"kind": "-D", "values": [3, 1, None]}, {"kind": "-D", "values": [30, 0, None]}]},
            {"compact": True},
            {"rows": [[i, i % 2, f"c{i}"] for i in range(45, 55)]},
            {"rows": [{"kind": "-D", "values": [46, 0, None]}]}]
    return Scenario(name, PK_FIELDS, rows, primary_keys=["k", "p"], partition_keys=["p"],
                    options={"bucket": "2", "deletion-vectors.enabled": "true", "snapshot.num-retained.min": "20"})


def _append(name: str, **options: str) -> Scenario:
    steps = [{"rows": [[i, f"2026-01-0{1 + i % 3}", i * 0.5] for i in range(n, n + 15)]} for n in (0, 100, 200)]
    return Scenario(name, APPEND_FIELDS, steps, partition_keys=["dt"], options=options, mode="batch")


def _source_state(root: pathlib.Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*") if p.is_file())


def _rows(t: tidelake.Table) -> list[dict[str, Any]]:
    return sorted(t.refresh().to_arrow().to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


def _schema(t: tidelake.Table) -> dict[str, Any]:
    s = t.schemas()[-1]
    return {"fields": [(f["name"], f["type"]) for f in s.fields], "partition_keys": s.partition_keys,
            "primary_keys": s.primary_keys, "options": s.options}


def test_java_reads_and_continues_tables_cloned_from_paimon(java, tmp_path):  # noqa: F811
    src_wh, dst_wh = str(tmp_path / "src"), str(tmp_path / "dst")
    pk = java_write(java, src_wh, _pk("pk"))
    app = java_write(java, src_wh, _append("app"))
    bapp = java_write(java, src_wh, _append("bapp", bucket="2", **{"bucket-key": "id"}))
    before = _source_state(tmp_path / "src")
    src, dst = tidelake.Catalog(src_wh), tidelake.Catalog(dst_wh)
    assert pk.latest_snapshot().commit_kind != "OVERWRITE"

    # the primary-key table: a postpone-bucket target (Java's rule), rows unseen until compacted
    sid = src.clone_table("db.pk", "db.pk", target_catalog=dst, clone_from="paimon")
    t = dst.get_table("db.pk")
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    ours = _schema(t)
    theirs = _schema(pk)
    assert ours["fields"] == theirs["fields"]
    assert (ours["partition_keys"], ours["primary_keys"]) == (["p"], ["k", "p"])
    assert ours["options"] == {**{k: v for k, v in theirs["options"].items() if k != "bucket"}, "bucket": "-2"}
    assert t.to_arrow().num_rows == 0
    assert {f["bucket"] for f in t.system("files").to_pylist()} == {-2}
    java.run({"op": "write", "warehouse": dst_wh, "table": "db.pk", "existing": True, "mode": "batch",
              "schema": _pk("pk").schema_json(), "steps": [{"compact_postpone": True}]})
    t = dst.get_table("db.pk")
    assert _rows(t) == _rows(pk)
    assert len(compare_read(java, t, dst_wh, "java compacted the clone")) == pk.to_arrow().num_rows

    # the partitioned append table: one partition, then all of it (replaced, not doubled)
    sid = src.clone_table("db.app", "db.app", target_catalog=dst, clone_from="paimon", where="dt = '2026-01-02'")
    a = dst.get_table("db.app")
    assert a.snapshot(sid).commit_kind == "OVERWRITE"
    assert a.options.get("bucket", "-1") == "-1" and a.partition_keys == ["dt"]
    assert {r["dt"] for r in a.to_arrow().to_pylist()} == {"2026-01-02"}
    src.clone_table("db.app", "db.app", target_catalog=dst, clone_from="paimon")
    src.clone_table("db.app", "db.app", target_catalog=dst, clone_from="paimon")
    assert _rows(a) == _rows(app)
    compare_read(java, dst.get_table("db.app"), dst_wh, "clone of an append table")
    # the bucketed append table keeps its buckets and bucket key
    src.clone_table("db.bapp", "db.bapp", target_catalog=dst, clone_from="paimon")
    b = dst.get_table("db.bapp")
    assert (b.options["bucket"], b.options["bucket-key"]) == ("2", "id")
    assert {f["bucket"] for f in b.system("files").to_pylist()} == {0, 1}
    assert _rows(b) == _rows(bapp)
    compare_read(java, b, dst_wh, "clone of a bucketed append table")

    # tidelake and Java write on into the clones; both read the same rows
    t.write(pa.table({"k": pa.array([1000, 5], pa.int32()), "p": pa.array([0, 1], pa.int32()), "v": ["t", "t5"]}))
    t.compact(full=True)
    java.run({"op": "write", "warehouse": dst_wh, "table": "db.pk", "existing": True, "mode": "batch",
              "schema": _pk("pk").schema_json(),
              "steps": [{"rows": [[2000, 0, "j"], [7, 1, "j7"]]}, {"compact_postpone": True}]})
    t = dst.get_table("db.pk")
    got = {(r["k"], r["p"]): r["v"] for r in t.to_arrow().to_pylist()}
    assert (got[(1000, 0)], got[(2000, 0)], got[(5, 1)], got[(7, 1)]) == ("t", "j", "t5", "j7")
    assert len(compare_read(java, t, dst_wh, "both wrote the clone")) == pk.to_arrow().num_rows + 2
    java.run({"op": "write", "warehouse": dst_wh, "table": "db.app", "existing": True, "mode": "batch",
              "schema": _append("app").schema_json(), "steps": [{"rows": [[999, "2026-01-09", 1.0]]}]})
    a = dst.get_table("db.app")
    a.write(pa.table({"id": [998], "dt": ["2026-01-09"], "score": [2.0]}))
    a.compact(full=True)
    assert len(compare_read(java, dst.get_table("db.app"), dst_wh, "both wrote the append clone")) == 47

    # the sources are as they were
    assert _source_state(tmp_path / "src") == before


def test_databases_and_catalogs_are_cloned_as_java_lists_them(java, tmp_path):  # noqa: F811
    src_wh, dst_wh = str(tmp_path / "src"), str(tmp_path / "dst")
    for name in ("a", "b", "c"):
        java_write(java, src_wh, _append(name))
    java.run({**_append("d").java_job(src_wh), "table": "db2.d"})
    src, dst = tidelake.Catalog(src_wh), tidelake.Catalog(dst_wh)

    cloned = src.clone_tables("db", target_database="copy", target_catalog=dst, excluded_tables=["db.b"],
                              clone_from="paimon")
    assert [(s, t) for s, t, _ in cloned] == [("db.a", "copy.a"), ("db.c", "copy.c")]
    assert all(sid == 1 for _, _, sid in cloned)
    assert dst.list_tables("copy") == ["a", "c"]
    cloned = src.clone_tables(target_catalog=dst, included_tables=["db.b", "db2.d"], clone_from="paimon")
    assert [(s, t) for s, t, _ in cloned] == [("db.b", "db.b"), ("db2.d", "db2.d")]
    assert _rows(dst.get_table("db2.d")) == _rows(src.get_table("db2.d"))
    assert len(java.run({"op": "read", "warehouse": dst_wh, "table": "db2.d"})["rows"]) == 45
    # into a JDBC catalog (any catalog takes clones), read by Java's JdbcCatalog
    jdbc = tidelake.Catalog.from_options({"metastore": "jdbc", "warehouse": str(tmp_path / "jwh")})
    src.clone_tables("db2", target_database="jd", target_catalog=jdbc, clone_from="paimon")
    java_jdbc = {"metastore": "jdbc", "warehouse": str(tmp_path / "jwh"), "uri": jdbc.options["uri"],
                 "lock.enabled": "true"}
    assert len(java.run({"op": "read", "catalog": java_jdbc, "table": "jd.d"})["rows"]) == 45
    # every table of the catalog into the same catalog is each table onto itself: refused
    with pytest.raises(tidelake.InvalidArgumentError, match="target is its source"):
        src.clone_tables(clone_from="paimon")


def test_cli_and_spark_call_clone_from_paimon(java, tmp_path, spark):  # noqa: F811
    from click.testing import CliRunner

    from tidelake import cli
    from tidelake.spark import sql
    from tidelake.spark.statements import CATALOG_CONF

    src_wh, dst_wh = tmp_path / "src", tmp_path / "dst"
    for name in ("a", "b"):
        java_write(java, str(src_wh), _append(name))

    def run(*args: str) -> str:
        result = CliRunner().invoke(cli.main, ["-c", f"warehouse={src_wh}", *args], prog_name="tidelake")
        assert result.exit_code == 0, result.output
        return result.output

    out = run("catalog", "clone-table", "db.a", "x.a", "--from", "paimon", "--target-catalog", f"warehouse={dst_wh}")
    assert "cloned db.a to x.a (snapshot 1)" in out
    out = run("catalog", "clone-tables", "--database", "db", "--target-database", "y", "--exclude", "db.a",
              "--from", "paimon", "--target-catalog", f"warehouse={dst_wh}")
    assert out.strip() == "cloned db.b to y.b (snapshot 1)"
    assert tidelake.Catalog(dst_wh).get_table("y.b").to_arrow().num_rows == 45

    spark.conf.set(CATALOG_CONF, json.dumps({"warehouse": str(src_wh)}))
    try:
        done = sql(spark, f"CALL sys.clone(database => 'db', target_database => 'z', included_tables => 'db.a', "
                          f"target_catalog_conf => 'warehouse={dst_wh}', clone_from => 'paimon')").collect()
        assert [(r.source_table, r.target_table, r.snapshot_id) for r in done] == [("db.a", "z.a", 1)]
        with pytest.raises(tidelake.InvalidArgumentError, match="included or excluded"):
            sql(spark, "CALL sys.clone(database => 'db', table => 'a', target_database => 'x', target_table => 'y', "
                       "included_tables => 'db.a', clone_from => 'paimon')")
    finally:
        spark.conf.unset(CATALOG_CONF)


def test_failures_leave_no_target_and_bad_input_is_refused(java, tmp_path):  # noqa: F811
    src_wh, dst_wh = str(tmp_path / "src"), str(tmp_path / "dst")
    java_write(java, src_wh, _append("app"))
    src, dst = tidelake.Catalog(src_wh), tidelake.Catalog(dst_wh)
    paimon = {"clone_from": "paimon", "target_catalog": dst}

    # a source file that cannot be read: the target created is dropped, nothing is left
    files = [pathlib.Path(f["file_path"].removeprefix("file:"))
             for f in src.get_table("db.app").system("files").to_pylist()]
    broken = files[-1]
    good = broken.read_bytes()
    broken.write_bytes(b"not a data file")
    with pytest.raises(tidelake.TidelakeError):
        src.clone_table("db.app", "copy.app", **paimon)
    assert dst.list_tables("copy") == []
    assert not any(p.is_file() for p in (tmp_path / "dst" / "copy.db").rglob("*"))
    broken.write_bytes(good)

    # Java's argument checks, typed
    with pytest.raises(tidelake.InvalidArgumentError, match="partition"):
        src.clone_table("db.app", "copy.app", where="id = 1", **paimon)
    assert not (tmp_path / "dst" / "copy.db" / "app").exists()
    with pytest.raises(tidelake.InvalidArgumentError, match="no options"):
        src.clone_table("db.app", "copy.app", options={"file.format": "orc"}, **paimon)
    with pytest.raises(tidelake.UnsupportedError, match="clone_from"):
        src.clone_table("db.app", "copy.app", clone_from="iceberg")
    with pytest.raises(tidelake.InvalidArgumentError, match="target database"):
        src.clone_tables("db", **paimon)
    with pytest.raises(tidelake.InvalidArgumentError, match="no target"):
        src.clone_tables(target_database="x", **paimon)
    with pytest.raises(tidelake.InvalidArgumentError, match="needs its database"):
        src.clone_tables(table="app", **paimon)
    with pytest.raises(tidelake.InvalidArgumentError, match="no table"):
        src.clone_tables("db", target_database="x", included_tables=["db.nope"], **paimon)
    with pytest.raises(tidelake.InvalidArgumentError, match="database.table"):
        src.clone_table("app", "copy.app", **paimon)
    with pytest.raises(tidelake.TableNotFoundError):
        src.clone_table("db.missing", "copy.app", **paimon)
    with pytest.raises(tidelake.InvalidArgumentError, match="target is its source"):
        src.clone_table("db.app", "db.app", clone_from="paimon")
    with pytest.raises(tidelake.UnsupportedError, match="Hive catalog"):
        src.clone_tables("db", target_database="x", target_catalog=dst)
    # an existing target of other columns is refused and left as it was
    dst.create_database("copy", ignore_if_exists=True)
    other = dst.create_table("copy.app", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    with pytest.raises(tidelake.InvalidArgumentError, match="columns"):
        src.clone_table("db.app", "copy.app", **paimon)
    assert other.refresh().latest_snapshot_id() is None
    # and then it clones into a new table
    assert src.clone_table("db.app", "copy.ok", **paimon) == 1
