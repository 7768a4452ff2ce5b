"""Paimon's startup modes (option ``scan.mode``): where a read of a table starts.

As Java Paimon 1.3.1 (``CoreOptions.startupMode``, ``AbstractDataTableScan#createStartingScanner``)
decides it from the read's options over the table's (read options win). Keys are matched
lower-cased (Spark hands its options over lower-cased), mode values case-insensitively.

* ``scan.mode`` (fallback key ``log.scan``) unset or ``default``: ``from-timestamp`` with
  ``scan.timestamp-millis`` / ``scan.timestamp``, ``from-snapshot`` with ``scan.snapshot-id`` /
  ``scan.tag-name`` / ``scan.watermark`` / ``scan.version``, ``from-file-creation-time`` with
  ``scan.file-creation-time-millis``, ``from-creation-timestamp`` with
  ``scan.creation-time-millis``, ``incremental`` with ``incremental-between`` /
  ``incremental-between-timestamp`` / ``incremental-to-auto-tag``, else ``latest-full``.
  ``full`` is ``latest-full``. ``incremental-to-auto-tag`` (the diff from the automatic tag
  before the one named) is refused (UnsupportedError) rather than read as another mode.
* tidelake's own spellings ``snapshot-id``, ``timestamp-ms`` and ``tag`` stand for
  ``scan.snapshot-id``, ``scan.timestamp-millis`` and ``scan.tag-name``.

A streaming read starts at a :class:`Start`: the full state of a snapshot and then the changes
after it, or only the changes after a snapshot. ``from-file-creation-time`` reads the latest
snapshot's data files created at or after ``scan.file-creation-time-millis`` (the engine's
planner filters them, given :meth:`ScanMode.read_options`), then the changes after it;
``from-creation-timestamp`` starts from the first snapshot committed at or after
``scan.creation-time-millis`` when an earlier one exists, and otherwise reads as
``from-file-creation-time`` with that time (Java's ``createCreationTimestampStartingScanner``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    from .table import Table

__all__ = ["MODES", "ScanMode", "Start", "scan_mode", "compacted_snapshot"]

MODES = ("default", "latest-full", "full", "latest", "compacted-full", "from-timestamp",
         "from-creation-timestamp", "from-file-creation-time", "from-snapshot", "from-snapshot-full", "incremental")
"""Every value of Paimon's ``scan.mode``."""

_ALIASES = {"scan.snapshot-id": ("snapshot-id",), "scan.tag-name": ("tag",), "scan.mode": ("log.scan",),
            "scan.timestamp-millis": ("log.scan.timestamp-millis", "timestamp-ms")}
"""Fallback keys: Java's deprecated ``log.scan*`` ones, then tidelake's own spellings."""
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class Start:
    """Where a stream starts: the full state of ``snapshot`` then the changes after it
    (``full``), or the changes after ``snapshot`` only (0: from the first snapshot)."""

    snapshot: int
    full: bool


@dataclass(frozen=True)
class ScanMode:
    """A read's resolved startup mode (never ``default`` or ``full``) and the options it uses."""

    mode: str
    options: dict[str, str]

    def get(self, key: str) -> str | None:
        for name in (key, *_ALIASES.get(key, ())):
            if name in self.options:
                return self.options[name]
        return None

    def integer(self, key: str) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise InvalidArgumentError(f"option {key} must be an integer, got {value!r}") from None

    def timestamp_ms(self) -> int | None:
        """``scan.timestamp-millis``, or ``scan.timestamp`` (local time, as Java parses it)."""
        millis = self.integer("scan.timestamp-millis")
        text = self.get("scan.timestamp")
        if millis is None and text is not None:
            from .table import _epoch_ms

            millis = _epoch_ms(text)
        return millis

    def read_options(self, table: Table) -> dict[str, str]:
        """The read options that make the engine's planner filter data files by creation time
        when this mode reads so (``from-file-creation-time``, and ``from-creation-timestamp``
        without a snapshot at or after its time); empty otherwise. A full state this mode reads
        is planned with them."""
        if self.mode == "from-file-creation-time":
            since = self._required("scan.file-creation-time-millis")
        elif self.mode == "from-creation-timestamp" and self._creation_snapshot(table) is None:
            since = self._required("scan.creation-time-millis")
        else:
            return {}
        return {"scan.mode": "from-file-creation-time", "scan.file-creation-time-millis": str(since)}

    def _creation_snapshot(self, table: Table) -> int | None:
        """``from-creation-timestamp``'s start snapshot: the first committed at or after
        ``scan.creation-time-millis`` when an earlier one exists (Java
        ``TimeTravelUtil.earlierThanTimeMills`` plus one); None: it filters files instead."""
        since = self._required("scan.creation-time-millis")
        snaps = table.snapshots()
        if not snaps or snaps[0].time_millis >= since:
            return None
        return next((s.id for s in snaps if s.time_millis >= since), None)

    def stream_start(self, table: Table) -> Start | None:
        """Where a streaming read starts (Java's continuous starting scanners); None while the
        table has no snapshot and the mode waits for one (``latest-full``, ``compacted-full``,
        ``from-snapshot-full``, the creation-time modes)."""
        snaps = table.snapshots()
        latest = snaps[-1].id if snaps else 0
        if self.mode == "from-creation-timestamp" and (first := self._creation_snapshot(table)) is not None:
            return Start(first - 1, False)
        if self.mode == "from-file-creation-time":
            self._required("scan.file-creation-time-millis")  # (from-creation-timestamp's: above)
        if self.mode in ("latest-full", "from-file-creation-time", "from-creation-timestamp"):
            return Start(latest, True) if latest else None
        if self.mode == "latest":
            return Start(latest, False)
        if self.mode == "compacted-full":
            picked = compacted_snapshot(table, self.options)
            return Start(picked, True) if picked is not None else None
        if self.mode == "from-snapshot-full":
            wanted = self._required("scan.snapshot-id")
            return Start(max(wanted, snaps[0].id), True) if snaps else None
        if self.mode == "from-snapshot":
            for key in ("scan.tag-name", "scan.watermark", "scan.version"):
                if self.get(key) is not None and self.get("scan.snapshot-id") is None:
                    raise InvalidArgumentError(f"scan.mode from-snapshot with {key} is for batch reads; a stream "
                                               "needs scan.snapshot-id")
            wanted = self._required("scan.snapshot-id")
            return Start(max(wanted, snaps[0].id if snaps else wanted) - 1, False)  # from the earliest at most
        if self.mode == "from-timestamp":
            since = self.timestamp_ms()
            if since is None:
                raise InvalidArgumentError("scan.mode from-timestamp needs scan.timestamp-millis or scan.timestamp")
            later = [s.id for s in snaps if s.time_millis >= since]
            return Start(min(later) - 1 if later else latest, False)
        if self.mode == "incremental":
            raise InvalidArgumentError("scan.mode incremental reads the changes between two snapshots in a batch "
                                       "read; a stream cannot use it")
        raise AssertionError(self.mode)

    def batch_snapshot(self, table: Table) -> dict[str, Any]:
        """The snapshot a batch read of a non-incremental mode reads, as :meth:`Table.scan`
        arguments (all None: the latest; Java's static starting scanners). A creation-time
        mode reading the latest snapshot also needs :meth:`read_options`."""
        pinned: dict[str, Any] = {"snapshot_id": None, "tag": None, "timestamp_ms": None}
        if self.mode == "compacted-full":
            pinned["snapshot_id"] = compacted_snapshot(table, self.options)
        elif self.mode == "from-snapshot-full":
            pinned["snapshot_id"] = self._required("scan.snapshot-id")
        elif self.mode == "from-snapshot":
            if self.get("scan.watermark") is not None or self.get("scan.version") is not None:
                raise InvalidArgumentError("scan.watermark and scan.version are not supported; use "
                                           "scan.snapshot-id or scan.tag-name")
            pinned["snapshot_id"], pinned["tag"] = self.integer("scan.snapshot-id"), self.get("scan.tag-name")
        elif self.mode == "from-timestamp":
            pinned["timestamp_ms"] = self.timestamp_ms()
        elif self.mode == "from-creation-timestamp":
            pinned["snapshot_id"] = self._creation_snapshot(table)
        elif self.mode == "incremental":
            raise AssertionError("incremental reads are planned with incremental_range")
        return pinned

    def incremental_range(self, table: Table) -> dict[str, Any]:
        """``incremental-between`` (two tags, else two snapshot ids) or
        ``incremental-between-timestamp`` (two epoch ms or local date-times) as
        :meth:`Table.changes_scan` arguments, with ``incremental-between-scan-mode``."""
        from .table import _epoch_ms

        args: dict[str, Any] = {"mode": self.get("incremental-between-scan-mode")}
        between, by_time = self.get("incremental-between"), self.get("incremental-between-timestamp")
        if between is None and by_time is None and self.get("incremental-to-auto-tag") is not None:
            raise UnsupportedError("incremental-to-auto-tag is not supported: give the two tags as "
                                   "incremental-between 'start,end' (with incremental-between-scan-mode diff)")
        key, text = ("incremental-between", between) if between is not None else \
            ("incremental-between-timestamp", by_time)
        if text is None:
            raise InvalidArgumentError("scan.mode incremental needs incremental-between or "
                                       "incremental-between-timestamp")
        parts = text.split(",")
        if len(parts) != 2:
            raise InvalidArgumentError(f"{key} must be two values 'start,end', got {text!r}")
        start, end = (p.strip() for p in parts)
        if key == "incremental-between-timestamp":
            times = [int(v) if v.lstrip("-").isdigit() else _epoch_ms(v) for v in (start, end)]
            return {**args, "start_timestamp": times[0], "end_timestamp": times[1]}
        tags = {t.name for t in table.tags()}
        if start in tags and end in tags:
            return {**args, "start_tag": start, "end_tag": end}
        if not (start.isdigit() and end.isdigit()):
            raise InvalidArgumentError(f"incremental-between {text!r} names neither two tags nor two snapshot ids")
        if int(end) < int(start):
            raise InvalidArgumentError(f"incremental-between {text!r}: the end snapshot is before the start")
        return {**args, "start_snapshot": int(start), "end_snapshot": int(end)}

    def _required(self, key: str) -> int:
        value = self.integer(key)
        if value is None:
            raise InvalidArgumentError(f"scan.mode {self.mode} needs option {key}")
        return value


def scan_mode(options: Mapping[str, str], table_options: Mapping[str, str] | None = None) -> ScanMode:
    """The startup mode ``options`` (over ``table_options``) select. Raises
    InvalidArgumentError naming an unknown mode."""
    merged = {k.lower(): v for k, v in (table_options or {}).items()}
    merged.update({k.lower(): v for k, v in options.items()})
    probe = ScanMode("default", merged)
    given = probe.get("scan.mode")
    mode = (given or "default").strip().lower()
    if mode not in MODES:
        raise InvalidArgumentError(f"scan.mode must be one of {', '.join(MODES)}, got {given!r}")
    if mode == "default":
        mode = _default_mode(probe)
    elif mode == "full":
        mode = "latest-full"
    return ScanMode(mode, merged)


def _default_mode(probe: ScanMode) -> str:
    def given(*keys: str) -> bool:
        return any(probe.get(k) is not None for k in keys)

    if given("scan.timestamp-millis", "scan.timestamp"):
        return "from-timestamp"
    if given("scan.snapshot-id", "scan.tag-name", "scan.watermark", "scan.version"):
        return "from-snapshot"
    if given("scan.file-creation-time-millis"):
        return "from-file-creation-time"
    if given("scan.creation-time-millis"):
        return "from-creation-timestamp"
    if given("incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag"):
        return "incremental"
    return "latest-full"


def compacted_snapshot(table: Table, options: Mapping[str, Any]) -> int | None:
    """The snapshot ``compacted-full`` reads (None: the table has none): the latest COMPACT
    snapshot or, with ``changelog-producer = full-compaction`` or ``full-compaction.delta-commits``
    set, the latest COMPACT snapshot whose commit identifier is a multiple of the delta commits
    (default 1) or Long.MAX_VALUE (a full compaction); the latest snapshot when none is."""
    snaps = table.snapshots()
    if not snaps:
        return None
    delta = options.get("full-compaction.delta-commits")
    scheduled = delta is not None or str(options.get("changelog-producer", "")).lower() == "full-compaction"
    key = "full-compaction.delta-commits"
    every = ScanMode("compacted-full", {key: str(delta)}).integer(key) if delta is not None else 1
    if every is None or every < 1:
        raise InvalidArgumentError(f"option {key} must be a positive integer, got {delta!r}")
    for snap in reversed(snaps):
        if snap.commit_kind != "COMPACT":
            continue
        if not scheduled or snap.commit_identifier % every == 0 or snap.commit_identifier == _LONG_MAX:
            return snap.id
    return snaps[-1].id
