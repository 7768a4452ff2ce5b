"""tidelake demo: open the Paimon tables written by pypaimon (../shared/fixtures) and show
what tidelake reads from them: metadata, the latest rows, time travel and per-snapshot changes.

Run with ``make demo``.
"""

from __future__ import annotations

import pathlib
import sys

import tidelake

ROOT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "paimon-v1" / "warehouse" / "fx.db"


def show(path: pathlib.Path) -> None:
    table = tidelake.open_table(path)
    snaps = table.snapshots()
    kind = f"primary key {table.primary_keys}" if table.primary_keys else "append"
    print(f"== {path.name}: {kind}, partitions {table.partition_keys or '-'}, {len(snaps)} snapshots")
    latest = table.to_arrow()
    print(f"   latest: {latest.num_rows} rows x {latest.num_columns} columns")
    print("   " + latest.slice(0, 3).to_pandas().to_string(max_colwidth=24).replace("\n", "\n   "))
    if len(snaps) > 1:
        first = table.to_arrow(snapshot_id=snaps[0].id)
        print(f"   time travel: snapshot {snaps[0].id} had {first.num_rows} rows")
        changes = table.changes(snaps[-2].id, snaps[-1].id)
        kinds = changes.column("_row_kind").value_counts().to_pylist() if changes.num_rows else []
        summary = ", ".join(f"{k['values']}={k['counts']}" for k in kinds) or "none"
        print(f"   changes in snapshot {snaps[-1].id}: {summary}")


def main() -> int:
    if not ROOT.is_dir():
        print(f"fixtures not found at {ROOT}", file=sys.stderr)
        return 1
    for path in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        try:
            show(path)
        except tidelake.TidelakeError as e:
            print(f"== {path.name}: {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
