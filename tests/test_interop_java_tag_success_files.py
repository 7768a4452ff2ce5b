"""``tag.create-success-file`` two ways with Java Paimon 1.3.1 (the ``java`` oracle).

Java's ``SuccessFileTagCallback`` writes ``tag/tag-success-file/<tag>_SUCCESS`` (under the
branch for a branch's tags) when a tag is created and deletes it when the tag is deleted; the
oracle reads a success file through that class (the path is Java's) and ``SuccessFile``. The
directory's name starts with ``tag-``, yet neither side lists it as a tag.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pyarrow as pa

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import JavaOracle, Scenario, compare_read, java_read, java_write

FIELDS = [("k", "INT NOT NULL"), ("v", "STRING")]
SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
OPTIONS = {"bucket": "1", "tag.create-success-file": "true"}


def java_tags(java: JavaOracle, wh: str, table: str) -> dict[str, int]:
    answer = java_read(java, wh, f"{table}$tags")
    names = answer["fields"]
    return {r[names.index("tag_name")]: r[names.index("snapshot_id")] for r in answer["rows"]}


def java_success_file(java: JavaOracle, wh: str, table: str, tag: str, **extra: Any) -> dict[str, Any]:
    return java.run({"op": "success_file", "warehouse": wh, "table": table, "tag": tag, **extra})


def success_dir(t: tidelake.Table) -> pathlib.Path:
    return pathlib.Path(t.path) / "tag" / "tag-success-file"


def write(t: tidelake.Table, k: int) -> None:
    t.write(pa.table({"k": [k], "v": [f"v{k}"]}, schema=SCHEMA))


def test_java_tags_then_tidelake_continues(java, tmp_path):
    """Java creates tags with success files; tidelake creates and deletes tags: the success
    files are where Java reads them, Java lists the same tags and reads tidelake's tag."""
    wh = str(tmp_path)
    sc = Scenario("tsf_a", FIELDS, [{"rows": [[1, "a"]]}, {"tag": "j1"}, {"rows": [[2, "b"]]}, {"tag": "j2"}],
                  primary_keys=["k"], options=OPTIONS, mode="batch")
    t = java_write(java, wh, sc)
    assert sorted(p.name for p in success_dir(t).iterdir()) == ["j1_SUCCESS", "j2_SUCCESS"]
    assert sorted(tg.name for tg in t.tags()) == ["j1", "j2"]
    write(t, 3)
    t.create_tag("t3")
    t.delete_tag("j1")
    assert sorted(p.name for p in success_dir(t).iterdir()) == ["j2_SUCCESS", "t3_SUCCESS"]
    ours = json.loads((success_dir(t) / "t3_SUCCESS").read_text())
    theirs = java_success_file(java, wh, "db.tsf_a", "t3")
    assert theirs == {"exists": True, **ours} and ours["creationTime"] == ours["modificationTime"]
    assert java_success_file(java, wh, "db.tsf_a", "j1") == {"exists": False}
    assert java_tags(java, wh, "db.tsf_a") == {"j2": 2, "t3": 3}
    compare_read(java, t, wh, "tag created by tidelake", tag="t3")


def test_tidelake_tags_then_java_continues(java, tmp_path):
    """tidelake creates the table and tags; Java deletes one and creates another; both list the
    same tags and the success files follow, Java's written in the layout tidelake reads."""
    wh = str(tmp_path)
    cat = tidelake.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.tsf_b", SCHEMA, primary_keys=["k"], bucket=1,
                         options={"tag.create-success-file": "true"})
    write(t, 1)
    t.create_tag("t1")
    write(t, 2)
    t.create_tag("t2")
    created = json.loads((success_dir(t) / "t1_SUCCESS").read_text())
    java.run({**Scenario("tsf_b", FIELDS, [{"delete_tag": "t1"}, {"rows": [[3, "c"]]}, {"tag": "j3"}],
                         mode="batch").java_job(wh), "existing": True})
    assert sorted(p.name for p in success_dir(t).iterdir()) == ["j3_SUCCESS", "t2_SUCCESS"]
    assert sorted(tg.name for tg in t.tags()) == ["j3", "t2"]
    assert java_tags(java, wh, "db.tsf_b") == {"t2": 2, "j3": 3}
    # Recreating a deleted tag writes a fresh file; Java's and tidelake's JSON agree.
    t.create_tag("t1", snapshot_id=1)
    again = json.loads((success_dir(t) / "t1_SUCCESS").read_text())
    assert again["creationTime"] >= created["creationTime"]
    assert java_success_file(java, wh, "db.tsf_b", "t1") == {"exists": True, **again}
    compare_read(java, t, wh, "tag recreated by tidelake", tag="t1")


def test_branch_tags_have_their_success_files_under_the_branch(java, tmp_path):
    wh = str(tmp_path)
    sc = Scenario("tsf_c", FIELDS, [{"rows": [[1, "a"]]}, {"tag": "j1"}, {"create_branch": "b", "from_tag": "j1"}],
                  primary_keys=["k"], options=OPTIONS, mode="batch")
    t = java_write(java, wh, sc)
    b = tidelake.Catalog(wh).get_table("db.tsf_c$branch_b")
    write(b, 2)
    b.create_tag("bt")
    branch_dir = pathlib.Path(t.path) / "branch" / "branch-b" / "tag" / "tag-success-file"
    assert [p.name for p in branch_dir.iterdir()] == ["bt_SUCCESS"]
    assert not (success_dir(t) / "bt_SUCCESS").exists()
    assert java_success_file(java, wh, "db.tsf_c", "bt", branch="b")["exists"]
    b.delete_tag("bt")
    assert not java_success_file(java, wh, "db.tsf_c", "bt", branch="b")["exists"]


def test_without_the_option_no_success_file(java, tmp_path):
    """Negative: neither side writes success files for a table without the option."""
    wh = str(tmp_path)
    sc = Scenario("tsf_d", FIELDS, [{"rows": [[1, "a"]]}, {"tag": "j1"}], primary_keys=["k"],
                  options={"bucket": "1"}, mode="batch")
    t = java_write(java, wh, sc)
    t.create_tag("t1")
    assert not success_dir(t).exists()
    assert java_success_file(java, wh, "db.tsf_d", "t1") == {"exists": False}
