"""The commit-safety soak (``tests/soak.py``, which documents the rule it checks) as bounded
tests: about 60 s on local disk and 25 s on the moto S3 server (``TIDELAKE_SOAK_SECONDS``,
``TIDELAKE_SOAK_S3_SECONDS`` change them; ``python tests/soak.py --long`` runs for hours),
plus a test of the checker itself on hand-made histories."""

from __future__ import annotations

import os

import pytest

from soak import LAST_READ, Config, History, Report, run_soak

# time-boxed runs that must reach minimum counts: run with the machine to themselves
pytestmark = pytest.mark.exclusive

LOCAL_SECONDS = float(os.environ.get("TIDELAKE_SOAK_SECONDS", "60"))
S3_SECONDS = float(os.environ.get("TIDELAKE_SOAK_S3_SECONDS", "25"))


def soak(root: str, options: dict | None, work: str, seconds: float, capsys, min_acks: int,
         min_expired: int) -> Report:
    reports = run_soak(root, options, work, seconds)
    with capsys.disabled():  # the counts belong in every CI log, not only in failures
        print("\n" + "\n".join(r.describe() for r in reports))
    (report,) = reports
    assert report.ok, report.describe()
    c = report.counts
    # the run exercised what it claims to: writes raced, maintenance ran and mattered
    assert c["acks"] >= min_acks and c["reads verified"] >= min_acks, c
    assert c["compactor compacted"] >= 1 and c["snapshots expired"] >= min_expired and c["orphans cleaned"] >= 1, c
    assert c["ack oneshot"] and c["ack writer"], c
    return report


def test_soak_local(tmp_path, capsys):
    soak(str(tmp_path / "tables"), None, str(tmp_path / "work"), LOCAL_SECONDS, capsys, min_acks=200,
         min_expired=10)


def test_soak_s3(tmp_path, s3_server, capsys):
    # moto on a shared 2-core machine: 15-45 acknowledged in 25 s over the four tables, so a table
    # may hold only 4-6 snapshots when the round ends (the expirer keeps 3): expiry must have run
    # and removed some, not a count that only a fast machine reaches
    soak(f"s3://{s3_server.new_bucket()}/soak", s3_server.options, str(tmp_path / "work"), S3_SECONDS, capsys,
         min_acks=10, min_expired=1)


# ---- the checker --------------------------------------------------------------------------------


def done(who: str, keys: list[int], value: int | None, ids: list[int], listed: list[list], *, mode: str = "writer",
         outcome: str = "ack", before: int = 0, t: tuple[int, int] = (0, 1)) -> dict:
    return {"phase": "done", "who": who, "op": "upsert" if value is not None else "delete", "mode": mode, "keys": keys,
            "value": value, "latest_before": before, "ids": ids, "outcome": outcome, "t0": t[0], "t1": t[1],
            "snapshots": listed, "latest_after": max([before, *ids, *(s[0] for s in listed)]),
            "error": "" if outcome == "ack" else "commit conflict"}


def history(level0_hidden: bool = False) -> tuple[History, Report]:
    report = Report(Config({}, None, "", 1))
    return History("t", report, {1: 100, 2: 200}, 0, level0_hidden), report


def flagged(report: Report) -> set[str]:
    return {category for category, _ in report.violations}


def test_the_checker_accepts_the_replay_and_flags_each_kind_of_violation():
    h, report = history()
    h.add_writer_log([
        done("a", [1], 11, [2], [[2, "APPEND", "ua", 1, 0]], before=1, t=(0, 10)),
        # one-shot: returned its COMPACT (4); its APPEND (3) is found by the commit user
        done("b", [1, 3], 12, [4], [[3, "APPEND", "ub", 9, 0], [4, "COMPACT", "ub", 9, 0]], mode="oneshot",
             before=2, t=(20, 30)),
        done("x", [2], 13, [], [], outcome="conflict", before=4, t=(32, 38)),
        done("c", [2], None, [5], [[5, "APPEND", "uc", 1, 0]], before=4, t=(40, 50)),
    ])
    h.check_order()
    assert [(w.who, w.lo, w.hi) for w in h.writes] == [("a", 2, 2), ("b", 3, 3), ("c", 5, 5)]
    for s, rows in [(1, {1: 100, 2: 200}), (2, {1: 11, 2: 200}), (4, {1: 12, 2: 200, 3: 12}), (5, {1: 12, 3: 12})]:
        assert h.check_read(s, list(rows), list(rows.values()), "read"), (s, report.describe())
    assert report.ok, report.describe()

    wrong = {"stale": {1: 11, 2: 200, 3: 12}, "lost": {1: 12, 2: 200}, "early": {1: 12, 2: 200},
             "conflict-visible": {1: 12, 2: 13, 3: 12}, "phantom": {1: 12, 2: 200, 3: 12, 7: 1}}
    for category, rows in wrong.items():
        s = 2 if category == "early" else 4
        h2, report = history()
        h2.writes, h2.by_key, h2.by_value, h2.conflicted = h.writes, h.by_key, h.by_value, h.conflicted
        assert not h2.check_read(s, list(rows), list(rows.values()), "read")
        assert flagged(report) == {category}, report.describe()
    h2, report = history()
    assert not h2.check_read(1, [1, 1, 2], [100, 100, 200], "read")
    assert flagged(report) == {"duplicate-key"}

    # a write invoked after another returned but placed before it; a snapshot id listed as two
    # different snapshots; the latest going backwards; an unknown outcome
    h, report = history()
    h.add_writer_log([
        done("a", [1], 11, [3], [[3, "APPEND", "ua", 1, 0]], before=2, t=(0, 10)),
        done("b", [1], 12, [2], [[2, "APPEND", "ub", 1, 0], [3, "APPEND", "uz", 1, 0]], before=1, t=(20, 30)),
        {"phase": "invoke", "who": "c", "op": "upsert", "mode": "oneshot", "keys": [2], "value": 14,
         "latest_before": 3},
    ])
    h.check_order()
    assert flagged(report) == {"order", "snapshot-id-reused", "latest-backwards", "unexpected-error"}
    # the write of unknown outcome may be visible, and hides nothing
    assert h.allowed(2, 4) == {200, 14} and h.allowed(2, 3) == {200}


def test_the_checker_on_tables_whose_level_0_is_hidden():
    """Deletion vectors: a write is certainly visible from the latest snapshot read right after
    it returned; between its APPEND and that, the previous value is allowed too."""
    h, report = history(level0_hidden=True)
    h.add_writer_log([done("a", [1], 11, [3, 4], [[3, "APPEND", "ua", 1, 0], [4, "COMPACT", "ua", 1, 0]], before=2),
                      # a one-shot write whose compaction was dropped: certainly visible from
                      # the newest snapshot listed after it returned
                      done("b", [2], 22, [5], [[5, "APPEND", "ub", 9, 0], [6, "APPEND", "uq", 9, 0]],
                           mode="oneshot", before=4)])
    assert h.allowed(1, 3) == {100, 11} and h.allowed(1, 4) == {11}
    assert h.allowed(2, 5) == {200, 22} and h.allowed(2, 6) == {22}
    assert not h.check_read(6, [2], [200], LAST_READ)
    assert flagged(report) == {"lost", "stale"} and report.counts == {"ack writer": 1, "ack oneshot": 1}
    h.summarize()
    assert report.counts["acked writes lost for good t"] == 2

    # a write whose own COMPACT (4) covered one of its buckets, a concurrent one (5) the other
    h, report = history(level0_hidden=True)
    c = done("c", [1, 3], 13, [3, 4], [[3, "APPEND", "uc", 1, 0], [4, "COMPACT", "uc", 1, 0]], before=2)
    h.add_writer_log([{**c, "latest_after": 5}])
    assert h.allowed(1, 4) == {100, 13} and h.allowed(1, 5) == {13}
    assert report.ok, report.describe()
