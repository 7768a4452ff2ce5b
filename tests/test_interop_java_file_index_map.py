"""File indexes on a map column's entries (``file-index.<type>.columns`` naming ``column[key]``,
Java 1.3.1's ``MapFileIndexMaintainer``): an index per key over each row's value of that key
(null when the row's map is null or lacks the key), named ``column[key]`` in the index file, its
options the entry's own (``file-index.<type>.column[key].<option>``) over the map column's
(``file-index.<type>.column.<option>``). Java writes a table with such indexes and tidelake
writes its twin (the same commits): every file's index bytes are the same, embedded or in an
index file, and each engine reads the other's table. A map whose keys are not strings is refused,
as Java refuses it."""

from __future__ import annotations

import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import Scenario, compare_read, java_write, tidelake_write

FIELDS = [("id", "INT NOT NULL"), ("attrs", {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}),
          ("tags", {"type": "MAP", "key": "STRING NOT NULL", "value": "STRING"})]


def _commit(i: int) -> dict:
    """Rows with every key, some keys, an empty map, a null map, null values."""
    rows = []
    for x in range(12):
        n = i * 100 + x
        attrs = [["a", n % 7], ["b", n], ["c", None if x % 5 == 0 else n % 3]][: x % 4]
        tags = None if x % 6 == 0 else [["env", f"e{n % 4}"], ["team", f"t{x}"]]
        rows.append([n, attrs if x % 9 else None, tags])
    return {"rows": rows}


def _scenario(name: str, threshold: str) -> Scenario:
    options = {
        "bucket": "-1", "write-only": "true", "file-index.in-manifest-threshold": threshold,
        "file-index.bloom-filter.columns": "attrs[a],attrs[b],tags[env]",
        "file-index.bloom-filter.attrs.items": "50",
        "file-index.bloom-filter.attrs[b].items": "300",
        "file-index.bitmap.columns": "attrs[c],tags[team]",
        "file-index.bsi.columns": "attrs[b]",
        "file-index.range-bitmap.columns": "attrs[a]",
    }
    return Scenario(name, FIELDS, [_commit(i) for i in range(3)], options=options, mode="batch")


def _index_bytes(java, t: tidelake.Table) -> list[tuple[str, str | None]]:
    """How each data file's index is stored and its bytes, as Java reads them, in commit order."""
    answer = java.run({"op": "file_index", "path": t.path, "filter": {"op": "=", "field": "id", "value": -1}})
    order = {f["file_path"].rsplit("/", 1)[-1]: f["min_sequence_number"] for f in t.system("files").to_pylist()}
    files = sorted(answer["files"], key=lambda f: order[f["file"]])
    return [(f["index"], f["hex"]) for f in files]


@pytest.mark.parametrize("threshold", ["1mb", "1b"])
def test_map_entry_indexes_match_java_byte_for_byte(java, tmp_path, threshold):
    wh = str(tmp_path)
    placement = "embedded" if threshold == "1mb" else "file"
    theirs = java_write(java, wh, _scenario(f"map_java_{placement}", threshold))
    ours = tidelake_write(java, wh, _scenario(f"map_tl_{placement}", threshold))
    theirs_idx, ours_idx = _index_bytes(java, theirs), _index_bytes(java, ours)
    assert len(ours_idx) == 3 and {how for how, _ in ours_idx} == {placement}
    assert ours_idx == theirs_idx, "tidelake's map-entry indexes are Java's bytes"
    rows = compare_read(java, ours, wh, "map entry indexes, tidelake wrote")
    assert compare_read(java, theirs, wh, "map entry indexes, Java wrote") == rows


def test_map_entry_indexes_need_string_keys(tmp_path):
    import pyarrow as pa

    schema = pa.schema([("id", pa.int32()), ("m", pa.map_(pa.int32(), pa.int32()))])
    t = tidelake.create_table(tmp_path / "t", schema, options={"file-index.bloom-filter.columns": "m[1]"})
    with pytest.raises(tidelake.InvalidArgumentError, match=r"m\[1\]"):
        t.write(pa.table({"id": [1], "m": [[(1, 2)]]}, schema=schema))
    assert t.snapshots() == []
    missing = tidelake.create_table(tmp_path / "u", schema, options={"file-index.bitmap.columns": "n[a]"})
    with pytest.raises(tidelake.InvalidArgumentError, match="not a column"):
        missing.write(pa.table({"id": [1], "m": [[(1, 2)]]}, schema=schema))
