"""Group a flat ``perf report --sort dso,symbol --stdio`` into cost categories.

``python benches/perf_summary.py REPORT.txt...`` prints, per report, the share of samples
(self time) in each category and the top symbols of each. The release build has no frame
pointers, so costs are attributed to the function that was executing (memcmp/memmove are
shown on their own: in the writer they come mostly from the key sort and the copies).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

CATEGORIES: list[tuple[str, str]] = [
    ("memcmp (row-key comparisons: writer sort, dedup, merge)", r"__memcmp|memcmp"),
    ("sort (slice::sort of row indices)", r"core::slice::sort|sort_unstable_by|smallsort|quicksort|heapsort"),
    ("parquet dictionary encoding (Interner hash tables)", r"Interner|hashbrown::raw|ahash|RawTable"),
    ("zstd compress", r"ZSTD_compress|ZSTD_encode|HUF_compress|HIST_|FSE_(compress|build|normalize|write)|"
                      r"ZSTD_(create|free|reset)CCtx|ZSTD_CCtx|ZSTD_(ldm|fillHashTable|fillDoubleHashTable)|"
                      r"ZSTD_(row|lazy|btlazy|dfast)|ZSTD_compressBlock|ZSTD_(buildCTable|entropy|seqToCodes)"),
    ("zstd decompress", r"ZSTD_decompress|ZSTD_decode|HUF_decompress|HUF_.*[dD]ecode|ZSTD_(create|free)DCtx|"
                        r"FSE_decode|ZSTD_buildFSETable|ZSTD_DCtx"),
    ("parquet encode (levels, pages, other)", r"parquet::.*(arrow_writer|column::writer|[eE]ncoder|put_)|BitWriter"),
    ("parquet decode", r"parquet::"),
    ("arrow take/concat/filter (copies)", r"arrow_select|take_bytes|take_native|concat"),
    ("memmove/memcpy/memset", r"memmove|memcpy|memset"),
    ("k-way merge (read/compaction)", r"tidelake_core::lsm::(merge|key|kv_merge|levels|picker|sorted_runs)|merge_fn|loser_tree|"
                                      r"cursor::compare|"
                                      r"tidelake_core::compact"),
    ("data-file stats", r"file_writer::stats|ColumnStats"),
    ("bucket routing / key hashing", r"write::bucket|split_by_bucket|hash_row|murmur|RowEncoder"),
    ("arrow row format (key encoding)", r"arrow_row"),
    ("malloc/free", r"malloc|_int_free|cfree|realloc|unlink_chunk|__libc_free|_int_realloc|sysmalloc|"
                    r"malloc_consolidate"),
    ("kernel (page faults, file I/O, scheduling)", r"\[kernel"),
    ("Python interpreter", r"libpython"),
    ("arrow compute (pyarrow)", r"libarrow"),
]

LINE = re.compile(r"^\s*([0-9.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*(?:-\s+-\s*)?$")


def parse(path: str) -> tuple[int, list[tuple[float, str, str]]]:
    samples = 0
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("# Samples:"):
                m = re.search(r"# Samples:\s*([0-9.]+)([KM]?)", line)
                if m:
                    samples = int(float(m.group(1)) * {"": 1, "K": 1000, "M": 1_000_000}[m.group(2)])
                continue
            if line.startswith("#") or not line.strip():
                continue
            m = LINE.match(line)
            if m:
                rows.append((float(m.group(1)), m.group(2), m.group(3).strip()))
    return samples, rows


def categorize(rows: list[tuple[float, str, str]]) -> dict[str, list[tuple[float, str]]]:
    out: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for pct, dso, sym in rows:
        label = f"{dso} {sym}"
        for name, pattern in CATEGORIES:
            if re.search(pattern, label):
                out[name].append((pct, sym))
                break
        else:
            out["other"].append((pct, f"{dso}: {sym}"))
    return out


def summary(path: str, top: int = 2) -> str:
    samples, rows = parse(path)
    cats = categorize(rows)
    listed = sum(p for p, _, _ in rows)
    lines = [f"{path}: {samples} samples; {listed:.0f}% in symbols above the report's 0.5% cut"]
    for name, items in sorted(cats.items(), key=lambda kv: -sum(p for p, _ in kv[1])):
        total = sum(p for p, _ in items)
        if total < 1.0:
            continue
        syms = "; ".join(f"{s[:70]} {p:.1f}%" for p, s in sorted(items, reverse=True)[:top])
        lines.append(f"  {total:5.1f}%  {name}  [{syms}]")
    return "\n".join(lines)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(summary(p))
        print()
