"""Plain-Python views of Paimon metadata (snapshots, tags, schemas, partitions).

The binding reads them from the engine's typed structs and hands over their fields (keyword
arguments of these classes); no Paimon JSON is parsed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Snapshot:
    """One committed version of a table (``snapshot/snapshot-N``)."""

    id: int
    schema_id: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None
    delta_record_count: int | None
    changelog_record_count: int | None
    commit_user: str
    commit_identifier: int
    watermark: int | None = None
    #: The snapshot file's JSON object (Paimon's camelCase keys).
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "schema_id": self.schema_id,
            "commit_kind": self.commit_kind,
            "time_millis": self.time_millis,
            "total_record_count": self.total_record_count,
            "delta_record_count": self.delta_record_count,
            "changelog_record_count": self.changelog_record_count,
            "commit_user": self.commit_user,
            "commit_identifier": self.commit_identifier,
            "watermark": self.watermark,
        }


@dataclass(frozen=True)
class Partition:
    """One partition of a table and its totals over the live files (Paimon's ``Partition``), as
    :meth:`Catalog.list_partitions` gives it."""

    #: Partition key to value, as in paths (``partition.default-name`` for nulls).
    spec: dict[str, str]
    record_count: int
    file_size_in_bytes: int
    file_count: int
    #: Epoch milliseconds of the newest file's creation.
    last_file_creation_time: int
    #: Marked done; only a catalog that keeps partitions (a REST server) knows.
    done: bool = False


@dataclass(frozen=True)
class Tag:
    """A named, retained snapshot (``tag/tag-NAME``)."""

    name: str
    snapshot_id: int
    schema_id: int
    time_millis: int
    #: ``tagCreateTime`` as Paimon stores it: ``[year, month, day, hour, minute(, second(, nano))]``.
    create_time: Any = None
    #: ``tagTimeRetained`` in seconds.
    time_retained: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "snapshot_id": self.snapshot_id,
            "schema_id": self.schema_id,
            "time_millis": self.time_millis,
            "create_time": self.create_time,
            "time_retained": self.time_retained,
        }


@dataclass(frozen=True)
class SchemaVersion:
    """One ``schema/schema-N`` file: fields with ids, keys and options."""

    id: int
    fields: list[dict[str, Any]]
    partition_keys: list[str]
    primary_keys: list[str]
    options: dict[str, str]
    comment: str | None
    time_millis: int
    highest_field_id: int



@dataclass(frozen=True)
class Violation:
    """One broken invariant found by :meth:`tidelake.Table.verify`."""

    #: What is wrong: ``missing_file``, ``file_size``, ``undecodable`` (class ``files``);
    #: ``added_twice``, ``deleted_not_live``, ``live_set_mismatch`` (``replay``);
    #: ``sequence_range``, ``level``, ``level_overlap`` (``lsm``); ``deletion_vector_range``,
    #: ``deletion_vector_target`` (``deletion_vectors``); ``wrong_bucket`` (``buckets``);
    #: ``hash_index_count``, ``hash_index_duplicate``, ``hash_index_key``, ``file_index``
    #: (``index``); ``iceberg_snapshot``, ``iceberg_missing_file``, ``iceberg_extra_file``,
    #: ``iceberg_file_stats`` (``iceberg``).
    kind: str
    #: The check that found it: ``files``, ``replay``, ``lsm``, ``deletion_vectors``, ``buckets``,
    #: ``index``, ``iceberg``.
    cls: str
    #: The snapshot it was found in.
    snapshot: int | None
    #: The file concerned (full path or URL; empty when none is).
    path: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "class": self.cls, "snapshot": self.snapshot, "path": self.path,
                "detail": self.detail}


@dataclass(frozen=True)
class VerifyReport:
    """What :meth:`tidelake.Table.verify` found."""

    violations: list[Violation]
    #: The newest snapshot id (None: the table has none).
    latest: int | None
    #: How many snapshots were replayed.
    snapshots_checked: int
    #: The snapshot whose live files the ``lsm``, ``deletion_vectors``, ``buckets``, ``index``
    #: and ``iceberg`` checks looked at (the newest whose manifests read).
    state_snapshot: int | None

    @property
    def ok(self) -> bool:
        """Whether no invariant is broken."""
        return not self.violations

    def kinds(self) -> set[str]:
        """The kinds of the violations found."""
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "latest": self.latest, "snapshots_checked": self.snapshots_checked,
                "state_snapshot": self.state_snapshot, "violations": [v.to_dict() for v in self.violations]}
