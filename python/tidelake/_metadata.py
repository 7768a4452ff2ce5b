"""Plain-Python views of Paimon metadata (snapshots, tags, schemas), built from Paimon's JSON."""

from __future__ import annotations

import json
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
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        d = json.loads(text)
        return cls(
            id=d["id"],
            schema_id=d["schemaId"],
            commit_kind=d["commitKind"],
            time_millis=d["timeMillis"],
            total_record_count=d.get("totalRecordCount"),
            delta_record_count=d.get("deltaRecordCount"),
            changelog_record_count=d.get("changelogRecordCount"),
            commit_user=d["commitUser"],
            commit_identifier=d["commitIdentifier"],
            watermark=d.get("watermark"),
            raw=d,
        )

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
class Tag:
    """A named, retained snapshot (``tag/tag-NAME``)."""

    name: str
    snapshot_id: int
    schema_id: int
    time_millis: int
    create_time: Any = None
    time_retained: Any = None

    @classmethod
    def from_json(cls, name: str, text: str) -> Tag:
        d = json.loads(text)
        return cls(
            name=name,
            snapshot_id=d["id"],
            schema_id=d["schemaId"],
            time_millis=d["timeMillis"],
            create_time=d.get("tagCreateTime"),
            time_retained=d.get("tagTimeRetained"),
        )

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

    @classmethod
    def from_json(cls, text: str) -> SchemaVersion:
        d = json.loads(text)
        return cls(
            id=d["id"],
            fields=d["fields"],
            partition_keys=list(d.get("partitionKeys", [])),
            primary_keys=list(d.get("primaryKeys", [])),
            options=dict(d.get("options", {})),
            comment=d.get("comment"),
            time_millis=d.get("timeMillis", 0),
            highest_field_id=d.get("highestFieldId", 0),
        )
