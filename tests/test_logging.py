"""Rust-side events (commits, compactions, expiry) reach Python's ``logging`` under the
``tidelake`` loggers."""

from __future__ import annotations

import logging

import pyarrow as pa

import tidelake


def test_commits_and_expiry_are_logged(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="tidelake")
    tidelake.reset_logging()
    t = tidelake.create_table(tmp_path / "t", pa.schema([("k", pa.int64())]))
    for i in range(3):
        t.write(pa.table({"k": [i]}))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1)
    commits = [r for r in caplog.records if r.name == "tidelake.commit"]
    assert [r.levelno for r in commits] == [logging.INFO] * 4
    assert "committed snapshot 3 (APPEND)" in commits[2].getMessage()
    assert "committed snapshot 4 (COMPACT)" in commits[3].getMessage()
    assert str(tmp_path / "t") in commits[-1].getMessage()
    compactions = [r.getMessage() for r in caplog.records if r.name == "tidelake.compact"]
    assert len(compactions) == 1 and "into snapshot 4: 3 file(s) rewritten into 1" in compactions[0]
    expiry = [r.getMessage() for r in caplog.records if r.name == "tidelake.expire"]
    assert len(expiry) == 1 and "expired 3 snapshot(s)" in expiry[0]


def test_levels_changed_later_apply_after_reset(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tidelake")
    tidelake.reset_logging()
    t = tidelake.create_table(tmp_path / "t", pa.schema([("k", pa.int64())]))
    t.write(pa.table({"k": [1]}))
    assert not [r for r in caplog.records if r.name.startswith("tidelake")]
    caplog.set_level(logging.INFO, logger="tidelake")
    tidelake.reset_logging()
    t.write(pa.table({"k": [2]}))
    assert [r.name for r in caplog.records] == ["tidelake.commit"]
