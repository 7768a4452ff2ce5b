"""Every fixture table opens and its metadata matches fixtures.json (schemas, snapshots, tags)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pyarrow as pa
import pytest

import tidelake
from conftest import FIXTURES, fixture_tables

TABLES = fixture_tables()


def java_type(t):
    """A fixture (pypaimon) type JSON in Java's spelling, which is what tidelake writes:
    ``TIMESTAMP(p) WITH LOCAL TIME ZONE`` for pypaimon's ``TIMESTAMP_LTZ(p)``, and no
    pypaimon-only ``nullable`` keys inside nested types (Java's parser ignores them)."""
    if isinstance(t, str):
        return re.sub(r"^TIMESTAMP_LTZ\((\d+)\)", r"TIMESTAMP(\1) WITH LOCAL TIME ZONE", t)
    if isinstance(t, dict):
        return {k: java_type(v) for k, v in t.items() if k != "nullable"}
    if isinstance(t, list):
        return [java_type(v) for v in t]
    return t


def ids(tables):
    return [t["name"] for t in tables]


@pytest.mark.parametrize("spec", TABLES, ids=ids(TABLES))
def test_table_metadata(spec):
    table = tidelake.open_table(FIXTURES / spec["path"])
    assert table.primary_keys == spec["primary_keys"]
    assert table.partition_keys == spec["partition_keys"]
    for key, value in spec["options"].items():
        assert table.options[key] == value
    schema_lines = [ln for ln in str(table.schema).split("\n") if not ln.startswith("-- ")]
    assert schema_lines[: len(spec["schema"]["arrow"])] == spec["schema"]["arrow"]
    assert table.schema_id == spec["schema"]["latest_schema_id"]
    fields = table.schemas()[-1].fields
    assert [(f["id"], f["name"], f["type"]) for f in fields] == [
        (f["id"], f["name"], java_type(f["type"])) for f in spec["schema"]["paimon_fields"]
    ]
    assert [f"schema/schema-{s.id}" for s in table.schemas()] == spec["schema"]["schema_files"]

    snaps = table.snapshots()
    assert [s.id for s in snaps] == spec["snapshot_ids"]
    for got, exp in zip(snaps, spec["snapshots"]):
        assert got.commit_kind == exp["commit_kind"]
        assert got.schema_id == exp["schema_id"]
        assert got.time_millis == exp["time_millis"]
        assert got.total_record_count == exp["total_record_count"]
        assert got.delta_record_count == exp["delta_record_count"]
        assert got.changelog_record_count == exp["changelog_record_count"]
    assert table.latest_snapshot().id == spec["latest_snapshot_id"]

    tags = {t.name: t.snapshot_id for t in table.tags()}
    assert tags == {name: tag["snapshot_id"] for name, tag in spec["expected"]["tags"].items()}


@pytest.mark.parametrize("spec", TABLES, ids=ids(TABLES))
def test_metadata_views_hold_what_the_files_hold(spec):
    """The binding builds the views from the engine's typed structs; the files, read here as
    JSON, are the oracle."""
    root = FIXTURES / spec["path"]
    table = tidelake.open_table(root)
    for snap in table.snapshots():
        assert snap.raw == json.loads((root / f"snapshot/snapshot-{snap.id}").read_text())
        assert (snap.commit_user, snap.commit_identifier) == (snap.raw["commitUser"], snap.raw["commitIdentifier"])
    for schema in table.schemas():
        d = json.loads((root / f"schema/schema-{schema.id}").read_text())
        assert (schema.fields, schema.partition_keys, schema.primary_keys, schema.options) == (
            java_type(d["fields"]), d["partitionKeys"], d["primaryKeys"], d["options"])
        assert (schema.time_millis, schema.highest_field_id, schema.comment) == (
            d["timeMillis"], d["highestFieldId"], d.get("comment"))
    for tag in table.tags():
        d = json.loads((root / f"tag/tag-{tag.name}").read_text())
        assert (tag.snapshot_id, tag.schema_id, tag.time_millis) == (d["id"], d["schemaId"], d["timeMillis"])
        assert (tag.create_time, tag.time_retained) == (d.get("tagCreateTime"), d.get("tagTimeRetained"))


def test_created_tags_carry_their_time_and_retention(tmp_path):
    table = tidelake.create_table(tmp_path / "t", pa.schema([("k", "int64")]))
    table.write(pa.table({"k": [1]}))
    tag = table.create_tag("kept", time_retained=dt.timedelta(hours=36))
    assert tag == table.tags()[0]
    assert tag.time_retained == 36 * 3600
    d = json.loads((tmp_path / "t/tag/tag-kept").read_text())
    assert tag.create_time == d["tagCreateTime"] and len(tag.create_time) >= 5


def test_missing_table_raises_typed_error(tmp_path):
    with pytest.raises(tidelake.TableNotFoundError, match="no Paimon table"):
        tidelake.open_table(tmp_path / "nothing-here")


def test_missing_snapshot_lists_range():
    table = tidelake.open_table(FIXTURES / "warehouse/fx.db/time_travel")
    with pytest.raises(tidelake.TableNotFoundError, match=r"available snapshots are 1 to 5"):
        table.snapshot(42)
    with pytest.raises(tidelake.TableNotFoundError, match=r"available snapshots are 1 to 5"):
        table.to_arrow(snapshot_id=42)


def test_missing_tag_lists_tags():
    table = tidelake.open_table(FIXTURES / "warehouse/fx.db/time_travel")
    with pytest.raises(tidelake.TableNotFoundError, match=r"existing tags: \[first, mid\]"):
        table.to_arrow(tag="nope")
