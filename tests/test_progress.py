"""Progress callbacks of long reads and writes (:data:`tidelake.write.Progress`): writes report the
rows taken after each input batch and stop, committing nothing, when the callback raises; reads
report planned rows per split, end at the total, and survive a failing callback."""

from __future__ import annotations

import pathlib
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tidelake

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": list(range(lo, hi)), "v": [f"v{i}" for i in range(lo, hi)]}, schema=SCHEMA)


def _three_batches() -> pa.Table:
    return pa.Table.from_batches([b for t in (_rows(0, 10), _rows(10, 35), _rows(35, 40)) for b in t.to_batches()])


def _data_files(path: pathlib.Path) -> set[str]:
    return {str(p) for p in path.rglob("*.parquet")}


@pytest.mark.parametrize("keyed", [True, False])
def test_write_reports_rows_after_each_batch(tmp_path: pathlib.Path, keyed: bool):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"] if keyed else None,
                              bucket=2 if keyed else None)
    calls: list[tuple[int, int | None]] = []
    t.write(_three_batches(), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(10, 40), (35, 40), (40, 40)]
    assert t.to_arrow().num_rows == 40

    calls.clear()
    stream = pa.RecordBatchReader.from_batches(SCHEMA, _rows(100, 107).to_batches())
    t.write(stream, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(7, None)]


def test_upsert_delete_keys_and_write_table_report_progress(tmp_path: pathlib.Path):
    calls: list[tuple[int, int | None]] = []

    def record(done: int, total: int | None) -> None:
        calls.append((done, total))

    t = tidelake.write_table(tmp_path / "t", _rows(0, 5), primary_keys=["id"], bucket=1, progress=record)
    t.upsert(_rows(3, 9), progress=record)
    t.delete_keys(_rows(0, 2), progress=record)
    assert calls == [(5, 5), (6, 6), (2, 2)]
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(2, 9))
    with pytest.raises(tidelake.InvalidArgumentError, match="partial"):
        t.upsert(_rows(0, 1), partial=True, progress=record)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_a_raising_progress_stops_the_write_and_commits_nothing(tmp_path: pathlib.Path, mode: str):
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=2,
                              options={"write-buffer-size": "1 kb", "write-buffer-spillable": "false"})
    t.write(_rows(0, 3))
    files_before = _data_files(tmp_path / "t")
    snapshot_before = t.latest_snapshot()

    def stop_after_two_batches(done: int, total: int | None) -> None:
        if done >= 35:
            raise _Stop(f"stop at {done}")

    with pytest.raises(_Stop, match="stop at 35"):
        t.write(_three_batches(), mode=mode, progress=stop_after_two_batches)  # type: ignore[arg-type]
    assert t.refresh().latest_snapshot() == snapshot_before
    assert t.to_arrow()["id"].to_pylist() == [0, 1, 2]
    # the files the stopped writer had flushed were deleted with it
    assert _data_files(tmp_path / "t") == files_before


def _read_table(tmp_path: pathlib.Path) -> tidelake.Table:
    t = tidelake.create_table(tmp_path / "t", SCHEMA, primary_keys=["id"], bucket=4)
    t.write(_rows(0, 300))
    t.upsert(_rows(100, 200))
    return t


def _splits(t: tidelake.Table, how: str) -> list[tidelake.scan.Split]:
    # the expression's pushable part prunes files as the read does
    return t.scan(filter=[("id", "<", 50)] if how == "expression" else None).splits()


@pytest.mark.parametrize("how", ["to_arrow", "to_reader", "expression", "to_pandas"])
def test_read_reports_planned_rows_per_split(tmp_path: pathlib.Path, how: str):
    t = _read_table(tmp_path)
    splits = _splits(t, how)
    total = sum(s.row_count for s in splits)
    # before merging: the upserted keys are counted twice (the upsert's file has no id < 50)
    assert total == (300 if how == "expression" else 400)
    calls: list[tuple[int, int]] = []

    def record(done: int, all_rows: int) -> None:
        calls.append((done, all_rows))

    if how == "to_arrow":
        rows = t.to_arrow(progress=record).num_rows
    elif how == "to_reader":
        rows = t.to_reader(progress=record).read_all().num_rows
    elif how == "expression":
        rows = t.to_arrow(filter=pc.field("id") < 50, progress=record).num_rows
    else:
        rows = len(t.to_pandas(progress=record))
    assert rows == (50 if how == "expression" else 300)
    assert calls[0] == (0, total)
    assert calls[-1] == (total, total)
    assert len(calls) == 1 + len(splits)  # the start, then once per split
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert {a for _, a in calls} == {total}


def test_a_failing_read_progress_does_not_stop_the_read(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch):
    t = _read_table(tmp_path)
    reported: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def broken(done: int, total: int) -> None:
        raise ValueError(f"display broke at {done}")

    assert t.to_arrow(progress=broken).num_rows == 300
    assert t.to_reader(progress=broken).read_all().num_rows == 300
    splits = len(t.scan().splits())
    assert len(reported) == 2 * (1 + splits)
    assert all(isinstance(e, ValueError) for e in reported)
