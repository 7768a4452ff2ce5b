"""The sketch / bitmap aggregate functions against Java Paimon 1.3.1.

Values are serialized DataSketches HLL / Theta sketches and RoaringBitmaps built by Paimon's own
classes (the oracle's ``Sketches``: ``HllSketchUtil.sketchOf``, ``ThetaSketch.sketchOf``,
``RoaringBitmap32.bitmapOf``); the aggregate is their union. Both directions are compared by
what Java decodes from each side's bytes (HLL / Theta estimate, bitmap contents), and every
value tidelake produced is decoded by Java, so Java reads what tidelake serializes.

``rbm64`` stores Java ``Roaring64Bitmap.serialize`` bytes, an unspecified layout no Rust crate
implements: tidelake refuses such tables with UnsupportedError (reads and writes).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pyarrow as pa
import pytest

import tidelake
from _java import java  # noqa: F401  (the session's oracle JVM, a fixture)
from _java import COMPARED, JavaOracle, Scenario, java_read, java_write, tidelake_write

FIELDS = [("k", "INT NOT NULL"), ("h", "BYTES"), ("t", "BYTES"), ("r", "BYTES")]
KINDS = {"h": "hll", "t": "theta", "r": "rbm32"}
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "fields.h.aggregate-function": "hll_sketch",
           "fields.t.aggregate-function": "theta_sketch", "fields.r.aggregate-function": "rbm32"}


def _row(k: int, values: list[int] | None) -> list[Any]:
    if values is None:
        return [k, None, None, None]
    return [k] + [{kind: values} for kind in KINDS.values()]


STEPS = [
    {"rows": [_row(1, [1, 2, 3]), _row(2, None), _row(3, [70000, 1 << 20])]},
    {"rows": [_row(1, [3, 4, 100000]), _row(2, [9])]},
    {"rows": [_row(1, [5, 1, 65536]), _row(2, None), _row(4, [42])]},
    {"rows": [_row(3, list(range(0, 3000, 7)))]},
]


def _built(java: JavaOracle, steps: list[dict]) -> list[dict]:
    """``steps`` with every sketch spec replaced by the hex of Java's bytes for it."""
    def value(v: Any) -> Any:
        return java.run({"op": "sketch", "build": v})["hex"] if isinstance(v, dict) else v

    return [{**st, "rows": [[value(v) for v in r] for r in st["rows"]]} if "rows" in st else st for st in steps]


def _decoded(java: JavaOracle, rows: list[dict[str, Any]]) -> list[tuple]:
    """Rows with each sketch column decoded by Java: estimates rounded to 6 digits, bitmaps as
    their values."""
    def decode(col: str, v: Any) -> Any:
        if v is None:
            return None
        hex_ = v.hex() if isinstance(v, bytes) else v
        answer = java.run({"op": "sketch", "kind": KINDS[col], "hex": hex_})
        return tuple(answer["values"]) if "values" in answer else round(answer["estimate"], 6)

    return sorted(tuple([r["k"]] + [decode(c, r[c]) for c in KINDS]) for r in rows)


def _compare(java: JavaOracle, t: tidelake.Table, wh: str, label: str) -> None:
    """For every snapshot: tidelake's read == Java's read, decoded by Java."""
    ident = f"db.{pathlib.Path(t.path).name}"
    for s in t.snapshots():
        ours = _decoded(java, t.to_arrow(snapshot_id=s.id).to_pylist())
        answer = java_read(java, wh, ident, {"scan.snapshot-id": str(s.id)})
        theirs = _decoded(java, [dict(zip(answer["fields"], r)) for r in answer["rows"]])
        assert ours == theirs, f"{label} {ident} snapshot {s.id}: tidelake {ours} != Java {theirs}"
        COMPARED.append((f"{label} {ident}", f"snapshot {s.id} (decoded by Java)", "tidelake=java", len(ours)))


def _expected_final(java: JavaOracle) -> list[tuple]:
    """The union of every step's values per key (a null input keeps the accumulator), as Java
    decodes its own sketches / bitmaps of those values."""
    per_key: dict[int, set[int] | None] = {}
    for st in STEPS:
        for r in st["rows"]:
            if r[1] is None:
                per_key.setdefault(r[0], None)
            else:
                per_key[r[0]] = (per_key.get(r[0]) or set()) | set(r[1]["hll"])
    rows = []
    for k, vals in per_key.items():
        built = {c: None if vals is None else java.run({"op": "sketch", "build": {kind: sorted(vals)}})["hex"]
                 for c, kind in KINDS.items()}
        rows.append({"k": k, **built})
    return _decoded(java, rows)


def test_java_writes_sketches_tidelake_reads(java, tmp_path):
    sc = Scenario("sketch_agg", FIELDS, STEPS, primary_keys=["k"], options=OPTIONS)
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    _compare(java, t, wh, "A java-wrote sketches")
    assert _decoded(java, t.to_arrow().to_pylist()) == _expected_final(java)


@pytest.mark.parametrize("compact", [False, True], ids=["merge-on-read", "compacted"])
def test_tidelake_writes_sketches_java_reads(java, tmp_path, compact):
    steps = _built(java, STEPS)
    if compact:
        steps = [x for st in steps for x in ([st, {"compact": True}] if "rows" in st else [st])]
    sc = Scenario(f"sketch_agg_{'c' if compact else 'm'}", FIELDS, steps, primary_keys=["k"], options=OPTIONS)
    wh = str(tmp_path)
    t = tidelake_write(java, wh, sc)
    if compact:
        assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
    _compare(java, t, wh, "B tidelake-wrote sketches")
    assert _decoded(java, t.to_arrow().to_pylist()) == _expected_final(java)


def test_rbm64_is_refused_naming_the_function(java, tmp_path):
    sc = Scenario("rbm64_agg", [("k", "INT NOT NULL"), ("b", "BYTES")],
                  [{"rows": [[1, {"rbm64": [1, 1 << 40]}]]}, {"rows": [[1, {"rbm64": [2]}]]}],
                  primary_keys=["k"], options={"bucket": "1", "merge-engine": "aggregation",
                                               "fields.b.aggregate-function": "rbm64"})
    wh = str(tmp_path)
    t = java_write(java, wh, sc)
    with pytest.raises(tidelake.UnsupportedError, match="rbm64"):
        t.to_arrow()
    with pytest.raises(tidelake.UnsupportedError, match="rbm64"):
        t.write(pa.table({"k": pa.array([2], pa.int32()), "b": pa.array([b"\x00"], pa.binary())}))
