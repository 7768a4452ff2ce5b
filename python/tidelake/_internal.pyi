"""Type stubs for ``tidelake._internal``, the PyO3 binding of the Rust engine.

The binding holds no table logic: ``tidelake.table`` and ``tidelake.scan`` wrap it. Metadata
crosses as Paimon's own JSON text, data as pyarrow objects (through the Arrow C data
interface), filters as JSON filter trees (see ``tidelake.expr``) and splits as opaque bytes.
Every storage call releases the GIL. Engine errors raise the typed exceptions of
``tidelake.exceptions`` (``TableNotFoundError``, ``CorruptMetadataError``,
``InvalidArgumentError``...).

Kept in sync with ``crates/tidelake-python/src`` by ``tests/test_read_api.py``, which checks
that every name and parameter here exists at runtime and vice versa.
"""

from typing import Any, Callable, Literal, Protocol, final

import pyarrow as pa

__all__ = ["__version__", "SYSTEM_TABLES", "GLOBAL_SYSTEM_TABLES", "SYSTEM_DATABASE", "RawBatches", "RawCatalog", "RawScan", "RawTable", "RawWriter", "RawCompactionPlan",
           "RawLookuper", "RawRowLevelTask", "RawRowLevelChange", "cdc_decode", "message_target", "pack_split_payloads",
           "parse_filter_text", "reset_logging", "run_compaction_task", "compaction_task_target", "set_failpoint",
           "set_clock_offset"]

__version__: str
"""The crate version of the extension (``CARGO_PKG_VERSION``)."""

SYSTEM_TABLES: tuple[str, ...]
"""The names of the system tables ``RawTable.system_table`` serves."""

GLOBAL_SYSTEM_TABLES: tuple[str, ...]
"""The names of the global system tables ``RawCatalog.global_system_table`` serves."""

SYSTEM_DATABASE: str
"""The database of the global system tables (``sys``)."""

class _ArrowSchemaExportable(Protocol):
    """Anything exporting an Arrow schema through the PyCapsule interface (pa.Schema, pa.Field)."""

    def __arrow_c_schema__(self) -> Any: ...

class _ArrowArrayExportable(Protocol):
    """Anything exporting one Arrow array / record batch (pa.RecordBatch...)."""

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]: ...

class _ArrowStreamExportable(Protocol):
    """Anything exporting an Arrow C stream (pa.Table, pa.RecordBatchReader, polars...)."""

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

_Change = tuple[str, str | list[str] | None, str | None, pa.Field | _ArrowSchemaExportable | None, str | None]
"""One schema change for :meth:`RawTable.alter`: ``(op, name, arg, field, position)``; a column
``name`` is a name or the path of names to a nested field (``["s", "x"]``; options, moves: one
name). op is one of ``add_column`` (name, field for the type, arg=comment, position
``first``/``last``/``after:SIBLING``),
``rename_column`` (name → arg), ``drop_column`` (name), ``update_column_type`` (name, field),
``set_option`` (name=key, arg=value), ``remove_option`` (name=key), ``update_comment`` (arg),
``move_column`` (name, position), ``update_column_nullability`` (name, arg ``true``/``false``),
``update_column_comment`` (name, arg=comment or None), ``update_column_default`` (name,
arg=default value text or None)."""

@final
class RawCatalog:
    """A catalog: filesystem (``<warehouse>/<database>.db/<table>/``), JDBC, REST or Hive."""

    def __new__(cls, warehouse: str, storage_options: dict[str, str] | None = None) -> RawCatalog:
        """Open (without creating anything) the warehouse directory or URL ``warehouse``."""

    @staticmethod
    def from_options(options: list[tuple[str, str]], storage_options: dict[str, str] | None = None) -> RawCatalog:
        """The catalog of Paimon's catalog options; connects to its JDBC database, REST server or
        Hive Metastore."""

    @property
    def location(self) -> str:
        """The warehouse root."""

    @property
    def options(self) -> list[tuple[str, str]]: ...
    @property
    def lock_enabled(self) -> bool: ...
    def list_databases(self) -> list[str]: ...
    def create_database(self, name: str, ignore_if_exists: bool, properties: dict[str, str] | None = None) -> None: ...
    def database_properties(self, name: str) -> dict[str, str]: ...
    def alter_database(self, name: str, set: dict[str, str], remove: list[str]) -> None: ...
    def drop_database(self, name: str, cascade: bool) -> None: ...
    def list_tables(self, database: str) -> list[str]: ...
    def get_table(self, identifier: str) -> RawTable:
        """Open ``"database.table"``; ``TableNotFoundError`` if absent."""

    def list_partitions(self, identifier: str) -> list[dict[str, Any]]:
        """The fields of each ``tidelake.Partition`` of ``"db.t"``."""

    def split_system_table(self, identifier: str) -> tuple[RawTable, str]:
        """The table of ``"db.t$snapshots"`` and the system table's name."""

    def global_system_table(self, name: str) -> pa.Table:
        """Global system table ``sys.<name>``."""

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema | _ArrowSchemaExportable,
        primary_keys: list[str],
        partition_keys: list[str],
        bucket: int | None,
        options: list[tuple[str, str]],
        comment: str | None = None,
    ) -> RawTable:
        """Create ``"database.table"`` (the database must exist) and open it."""

    def drop_table(self, identifier: str) -> None: ...
    def rename_table(self, from_identifier: str, to_identifier: str) -> None: ...
    def migrate_table(self, source: str, target: str | None, options: list[tuple[str, str]],
                      delete_origin: bool) -> RawTable: ...
    def migrate_database(self, database: str,
                         options: list[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]: ...
    def clone_tables(self, target_catalog: RawCatalog, clone_from: str, database: str | None, table: str | None,
                     target_database: str | None, target_table: str | None, included_tables: list[str],
                     excluded_tables: list[str], options: list[tuple[str, str]],
                     where_json: str | None) -> list[tuple[str, str, int | None]]: ...

@final
class RawTable:
    """An opened Paimon table. Obtain one with :meth:`RawTable.open` or :meth:`RawTable.create`;
    not constructible."""

    @staticmethod
    def create(
        location: str,
        schema: pa.Schema | _ArrowSchemaExportable,
        primary_keys: list[str],
        partition_keys: list[str],
        bucket: int | None,
        options: list[tuple[str, str]],
        comment: str | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> RawTable:
        """Create a table at ``location`` (writes ``schema/schema-0``) and open it."""

    def alter(self, changes: list[_Change]) -> RawTable:
        """Apply schema changes; returns the table at its new schema."""

    def cdc_evolve(self, schema: pa.Schema) -> RawTable:
        """The table at a schema that takes decoded CDC rows of ``schema`` (columns added,
        types widened where Paimon allows; ``SchemaMismatchError`` otherwise)."""

    def reload(self) -> RawTable:
        """Re-open the table (latest schema)."""

    @staticmethod
    def open(location: str, storage_options: dict[str, str] | None = None, branch: str | None = None,
             cache_bytes: int = ...) -> RawTable:
        """Open the table at ``location`` (a local path or an object-store URL), keeping up to
        ``cache_bytes`` (default 64 MiB; 0: nothing) of what its reads decode of immutable files.

        Raises ``TableNotFoundError`` if nothing there looks like a Paimon table and
        ``CorruptMetadataError`` if the latest schema cannot be parsed.
        """

    @property
    def cached_bytes(self) -> int:
        """Bytes held in the table's read cache."""

    @property
    def location(self) -> str:
        """The table's root location."""

    @property
    def storage_options(self) -> dict[str, str]:
        """The storage options the table was opened with."""

    @property
    def upsert_merge(self) -> tuple[list[str], list[str]] | None:
        """``(upsert keys, sequence fields)`` a batch append is merged on (``upsert-key``), or
        None."""

    @property
    def cross_partition_update(self) -> bool:
        """Whether the primary key lacks a partition column (upserts may move keys between
        partitions; Java ``TableSchema.crossPartitionUpdate``)."""

    def schema_version(self) -> dict[str, Any]:
        """The fields of the latest schema version (``tidelake.SchemaVersion``'s keywords)."""

    def arrow_schema(self) -> pa.Schema:
        """The latest schema as a pyarrow schema."""

    def effective_options(self) -> dict[str, Any]:
        """The effective value of every option the engine interprets, defaults applied (ints,
        booleans, strings, lists, sizes in bytes, durations as ``datetime.timedelta``, None when
        unset without a default)."""

    def schema_versions(self) -> list[dict[str, Any]]:
        """The fields of every schema version, ascending by id."""

    def snapshots(self) -> list[dict[str, Any]]:
        """The fields of every snapshot (``tidelake.Snapshot``'s keywords), ascending by id."""

    def snapshot_at(self, timestamp_ms: int) -> dict[str, Any] | None:
        """The fields of the newest snapshot committed at or before the time, or None."""

    def snapshot(self, id: int) -> dict[str, Any]:
        """The fields of one snapshot; ``TableNotFoundError`` naming the range if absent."""

    def latest_snapshot_id(self) -> int | None:
        """The latest snapshot id, or None for a table never written to."""

    def replay_wait(self, replay: int, elapsed_ms: int) -> float | None:
        """Seconds to wait before replay ``replay`` (0 = the first) of a refused one-shot
        operation that has run ``elapsed_ms``; None once its replays or ``commit.timeout`` are
        spent."""

    def tags(self) -> list[dict[str, Any]]:
        """The fields of every tag (``tidelake.Tag``'s keywords), sorted by name."""

    def deleted_positions(self, files_json: str) -> pa.Table:
        """The deleted positions of native files (a JSON list of the ``files`` entries of
        :meth:`RawScan.native_units`) as a table ``(file_name, position)``."""

    def scan(
        self,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        batch_size: int | None = None,
        options: list[tuple[str, str]] | None = None,
    ) -> RawScan:
        """Plan a batch scan of one snapshot (latest unless one of ``snapshot_id``, ``tag`` or
        ``timestamp_ms`` is given; at most one may be). ``options`` override table options for
        this read only."""

    def lookup(
        self,
        keys: Any,
        columns: list[str] | None = None,
        snapshot_id: int | None = None,
    ) -> pa.Table:
        """The latest row of each key of ``keys`` (an Arrow producer of exactly the primary-key
        columns), in key order, keys without a row left out."""

    def lookuper(self, snapshot_id: int | None = None, cache_bytes: int | None = None) -> RawLookuper:
        """A long-lived lookuper of one snapshot (the latest by default) that caches up to
        ``cache_bytes`` of what it reads of immutable files (None: the table's
        ``lookup.cache-max-memory-size``)."""

    def changes(
        self,
        start_snapshot: int | None = None,
        end_snapshot: int | None = None,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        batch_size: int | None = None,
        mode: Literal["auto", "delta", "changelog", "diff"] | None = None,
        start_tag: str | None = None,
        end_tag: str | None = None,
        start_timestamp_ms: int | None = None,
        end_timestamp_ms: int | None = None,
    ) -> RawScan:
        """Plan a read of the changes between snapshots ``(start_snapshot, end_snapshot]`` (up to
        the latest by default; either end may be given as an epoch-ms timestamp instead: the
        newest snapshot committed at or before it) or two tags, as ``mode`` says; rows carry a
        leading ``_row_kind`` column. Conflicting or missing range arguments raise
        ``InvalidArgumentError``."""

    def read_split(
        self,
        split: bytes,
        schema_id: int,
        columns: list[str] | None = None,
        filter_json: str | None = None,
        with_row_kind: bool = False,
        batch_size: int | None = None,
    ) -> RawBatches:
        """Read one split produced by :meth:`RawScan.splits` (possibly planned in another
        process) in the schema ``schema_id``, without planning again."""

    def writer(self, overwrite: bool = False, wait_compaction: bool = True) -> RawWriter:
        """A new writer of this table's latest schema; ``wait_compaction``: ``prepare_commit``
        waits for the compactions it triggers (one-shot writers)."""

    def commit(
        self,
        messages: list[bytes],
        commit_user: str,
        commit_identifier: int,
        properties: list[tuple[str, str]] = ...,
    ) -> list[dict[str, int]]:
        """Commit messages from :meth:`RawWriter.prepare_commit` as transaction
        ``commit_identifier`` of ``commit_user`` with snapshot ``properties`` (none by default);
        returns the new snapshots, one dict each, in order: ``snapshot_id`` and the metrics the
        commit counted from the data-file entries it wrote to the snapshot's delta
        (``files_added``, ``files_removed``, ``rows_added``, ``rows_removed`` (records),
        ``bytes_added``, ``bytes_removed``); empty when there was nothing to commit or it was
        already committed. Every commit method below returns the same."""

    def overwrite(
        self,
        messages: list[bytes],
        commit_user: str,
        commit_identifier: int,
        partition_json: str | None = None,
        dynamic: bool = False,
    ) -> list[dict[str, int]]:
        """Overwrite: ``partition_json`` (a filter tree on partition columns) selects what is
        replaced, ``dynamic`` replaces exactly the partitions written; neither: the table. The
        new snapshots, as :meth:`commit`."""

    def truncate(self, commit_user: str) -> list[dict[str, int]]:
        """Remove every row (an OVERWRITE snapshot with no files); the new snapshots, as
        :meth:`commit`."""

    def plan_row_level(
        self,
        what: str,
        *,
        filter_json: str | None = None,
        snapshot_id: int | None = None,
        deletes: bool = False,
    ) -> tuple[int | None, str, list[bytes]]:
        """Plan a row-level change ``what`` (``delete``, ``update``, ``merge``; ``deletes``: it
        deletes rows), refused with UnsupportedError when the table cannot take it: (snapshot id
        or None, strategy ``row-kinds``/``deletion-vectors``/``rewrite``, task bytes per
        (partition, bucket) the filter tree may match)."""

    def row_level_change(self, read_snapshot: int | None) -> RawRowLevelChange:
        """A row-level change computed from snapshot ``read_snapshot`` (None: the table had none)."""

    def commit_row_level(
        self, changes: list[bytes], commit_user: str, commit_identifier: int
    ) -> tuple[list[dict[str, int]], int, int, int]:
        """Commit prepared changes (bytes, one snapshot) as one transaction; refused
        (CommitConflictError) or expired snapshot: their files are deleted. Returns (one dict
        per snapshot created, as ``commit`` returns them; rows inserted, updated, deleted)."""

    @staticmethod
    def prepared_change_messages(change: bytes) -> list[bytes]:
        """The commit messages (bytes) of a prepared change, e.g. to discard it."""

    @property
    def bucket_keys(self) -> list[str]:
        """The columns a fixed bucket is hashed from."""

    def row_places(self, data: Any) -> list[tuple[bytes, int]]:
        """Where each row of ``data`` (the partition and bucket-key columns, by name) lives:
        (framed partition row, fixed bucket or -1), as a row-level task names its own."""

    def discard(self, messages: list[bytes]) -> int:
        """Delete every file the messages add (data, changelog, index files): the files of a
        write whose commit provably did not land. Returns how many files were deleted."""

    def filter_committed(self, commit_user: str, identifiers: list[int]) -> list[int]:
        """Which of ``identifiers`` ``commit_user`` has not committed yet."""

    # ---- maintenance (see tidelake.Table) ----

    def compact(
        self,
        full: bool = False,
        partitions_json: str | None = None,
        progress: Callable[[int, int], object] | None = None,
    ) -> str:
        """Compact the LSM buckets (universal compaction; ``full`` rewrites every bucket to the
        max level) in one COMPACT snapshot; returns a JSON report (snapshot id, per bucket
        output level, files and bytes before/after, and ``metrics``: what the call's snapshots
        changed, as :meth:`commit` counts them). ``progress(done, total)`` is called as
        buckets are rewritten (its exceptions are ignored)."""

    def sort_compact(self, columns: list[str], strategy: str | None = None,
                     partitions_json: str | None = None) -> int | None:
        """Sort-compact the selected partitions by ``columns`` (``strategy``: order, zorder or
        hilbert; default by the column count) in one OVERWRITE snapshot; its id, None when
        nothing was selected."""

    def rescale(self, bucket_num: int | None = None, partitions_json: str | None = None) -> int | None:
        """Rewrite the selected partitions into ``bucket_num`` buckets (default: the table's
        ``bucket``) in one OVERWRITE snapshot; its id."""

    def rewrite_file_index(self, partitions_json: str | None = None) -> int | None:
        """Rebuild the file indexes of the selected partitions' live data files from the
        ``file-index.*`` options in one COMPACT snapshot; its id, None when none changed."""

    def compaction_plan(self, full: bool = False, partitions_json: str | None = None) -> RawCompactionPlan:
        """The compaction :meth:`compact` would run, as per-bucket tasks (not run)."""

    def commit_compaction(self, plan: RawCompactionPlan, messages: list[bytes]) -> list[dict[str, int]]:
        """Commit one result per task of ``plan`` as one COMPACT snapshot (as :meth:`commit`
        returns it; empty when nothing changed)."""

    def expire_snapshots(
        self,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than_ms: int | None = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, int | None]:
        """Expire snapshots per Paimon's retention options (or with dry_run count what would go);
        returns counts of deleted files."""

    def expire_changelogs(
        self,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than_ms: int | None = None,
        max_deletes: int | None = None,
    ) -> dict[str, int]:
        """Expire long-lived changelogs (Paimon's procedure defaults for unset arguments);
        returns counts of expired changelogs and deleted files."""

    def remove_orphan_files(self, older_than_ms: int | None = None, dry_run: bool = False) -> list[tuple[str, int]]:
        """Delete (or list) unreferenced files older than the cutoff; returns (path, size)."""

    def create_tag(
        self, name: str, snapshot_id: int | None = None, time_retained_ms: int | None = None
    ) -> dict[str, Any]:
        """Create tag ``name`` at a snapshot (latest by default); returns its fields."""

    @property
    def branch(self) -> str:
        """The branch the table is opened on."""

    def create_branch(self, name: str, snapshot_id: int | None = None, tag: str | None = None) -> None:
        """Create branch ``name`` from a snapshot, a tag, or empty (neither)."""

    @property
    def commits_through_catalog(self) -> bool:
        """Whether the table's catalog takes part in its commits (a lock, a commit endpoint, or a
        metastore that learns of them)."""

    def open_branch(self, name: str) -> RawTable:
        """Branch ``name`` of this table, committing through the same catalog."""

    def branches(self) -> list[str]:
        """Every branch but ``main``, sorted."""

    def delete_branch(self, name: str) -> None: ...

    def publish_branch(self, name: str) -> list[dict[str, int]]:
        """Publish branch ``name`` into this branch as one snapshot (as :meth:`commit` returns
        it; empty: nothing to publish)."""

    def fast_forward(self, name: str) -> RawTable:
        """Fast-forward this branch to ``name``; returns the table re-opened."""

    def replace_tag(
        self, name: str, snapshot_id: int | None = None, time_retained_ms: int | None = None
    ) -> dict[str, Any]:
        """Point existing tag ``name`` at a snapshot (latest by default); returns its fields."""

    def rename_tag(self, name: str, target: str) -> None:
        """Rename tag ``name`` to ``target``."""

    def delete_tag(self, name: str) -> dict[str, int]:
        """Delete a tag and the files only it protected; returns counts."""

    def expired_tags(self) -> list[str]:
        """The tags whose retention has passed now (local time); nothing is deleted."""

    def rollback_to(self, snapshot_id: int | None = None, tag: str | None = None) -> dict[str, Any]:
        """Roll the table back to a snapshot or tag."""

    def find_damage(self) -> dict[str, Any]:
        """Undecodable snapshots and missing or truncated files of the newest snapshots:
        ``{"latest", "last_good", "problems": [(path, reason)]}``."""

    def verify(self) -> dict[str, Any]:
        """The consistency check replaying the snapshot chain: ``{"latest", "snapshots_checked",
        "state_snapshot", "violations": [{"kind", "class", "snapshot", "path", "detail"}]}``."""

    def consumers(self) -> list[tuple[str, int]]:
        """Consumer ids with their next snapshot."""

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> None:
        """Set a consumer's next snapshot."""

    def delete_consumer(self, consumer_id: str) -> None:
        """Delete a consumer."""

    def drop_partitions(self, specs_json: str) -> list[int]:
        """Drop the partitions matching any of the specs; returns the snapshot ids."""

    def compact_manifests(self) -> int | None:
        """Compact the latest snapshot's manifests into a COMPACT snapshot; its id, or None."""

    def unexisting_files(self) -> list[str]:
        """The live data files of the latest snapshot that storage lacks, by path."""

    def remove_unexisting_files(self) -> tuple[list[str], int | None]:
        """Remove the live data files storage lacks in one commit: their paths, the snapshot id."""

    def purge_files(self) -> dict[str, Any]:
        """Purge the table: branches, tags, consumers, rows, changelogs, older snapshots and
        orphans go; what went (branches, tags, consumers, snapshot_id, snapshots_expired,
        deleted, orphan_files)."""

    def mark_partition_done(self, specs_json: str) -> None:
        """Mark the partitions of the full specs done by partition.mark-done-action."""

    def expire_partitions(self, expiration_ms: int | None = None) -> list[list[tuple[str, str]]]:
        """Drop partitions older than the expiration time; returns the dropped specs."""

    def system_table(self, name: str) -> pa.Table:
        """A system table (snapshots, schemas, options, files, manifests, partitions, buckets,
        tags, consumers, audit_log)."""

    def history(self) -> pa.Table:
        """One row per live snapshot with the files, rows and bytes its commit added/removed."""

@final
class RawRowLevelTask:
    """One task of a row-level plan (its versioned bytes decoded)."""

    @staticmethod
    def from_bytes(bytes: bytes) -> RawRowLevelTask:
        """Decode a task; another format version is InvalidArgumentError naming it."""

    def to_bytes(self) -> bytes: ...
    @property
    def snapshot_id(self) -> int | None: ...
    @property
    def partition(self) -> bytes:
        """Its framed partition row (as :meth:`RawTable.row_places` names a row's)."""

    @property
    def bucket(self) -> int: ...
    @property
    def total_buckets(self) -> int:
        """The bucket count its files were written with."""

    @property
    def strategy(self) -> str:
        """``row-kinds``, ``deletion-vectors`` or ``rewrite``."""

@final
class RawRowLevelChange:
    """A row-level change being computed from one snapshot, task by task."""

    def read(self, task: bytes) -> RawBatches:
        """The rows a task gives to evaluate (deletion-vector tasks: with ``_FILE_INDEX`` and
        ``_ROW_POSITION``); :meth:`remove` applies to them."""

    def matching(self, task: bytes, data: _ArrowStreamExportable | _ArrowArrayExportable) -> pa.RecordBatch:
        """Where the task's filter holds on ``data`` (rows read from it), by the engine's
        predicate as a read with that filter selects rows: the boolean column ``matching``."""

    def remove(self, mask: Any) -> None:
        """Append tables: remove the rows of the last read where the boolean ``mask`` holds."""

    def insert(self, data: _ArrowStreamExportable | _ArrowArrayExportable) -> None:
        """Write new rows (counted inserted)."""

    def update(self, data: _ArrowStreamExportable | _ArrowArrayExportable) -> None:
        """Write the new version of updated rows (counted updated)."""

    def delete_keys(self, data: _ArrowStreamExportable | _ArrowArrayExportable) -> None:
        """Primary-key tables: delete the rows with these keys."""

    def finish(self) -> tuple[bytes, int | None, int, int, int]:
        """The change written but uncommitted: (its bytes, snapshot read, rows inserted,
        updated, deleted); on an error nothing it wrote is left behind."""

    def abort(self) -> None:
        """Drop the change, deleting the files it wrote."""

@final
class RawWriter:
    """Writes batches into new data files of one table; created by :meth:`RawTable.writer`."""

    def write(
        self,
        data: pa.RecordBatch | pa.Table | pa.RecordBatchReader | _ArrowArrayExportable | _ArrowStreamExportable,
        kind: str,
        progress: Callable[[int], object] | None = None,
    ) -> None:
        """Write every batch of an Arrow producer with row kind ``kind``: ``insert``,
        ``upsert`` or ``delete``; inserts into a table with ``rowkind.field`` take each row's kind
        from that column; ``changelog``: decoded CDC batches, each row's kind in ``_row_kind``.
        ``progress(rows)`` after each batch, on this thread; its exceptions stop the write."""

    def buckets(
        self,
        data: pa.RecordBatch | pa.Table | pa.RecordBatchReader | _ArrowArrayExportable | _ArrowStreamExportable,
        kind: str,
    ) -> pa.Int32Array:
        """The bucket :meth:`write` would put each row in (fixed-bucket tables only;
        ``UnsupportedError`` otherwise), for routing each (partition, bucket) to one writer."""

    def prepare_commit(self) -> list[bytes]:
        """Flush and return the commit messages (opaque, versioned bytes)."""

    def commit(self, table: RawTable, commit_user: str) -> list[dict[str, int]]:
        """Flush and append everything written as one transaction of ``commit_user`` (a one-shot
        write); the new snapshots, as :meth:`RawTable.commit`. A commit that fails without
        landing deletes its files."""

    def abort(self) -> None:
        """Delete every file written since the last ``prepare_commit`` and close the writer."""

    def close(self) -> None:
        """Close the writer: files already handed out by ``prepare_commit`` are kept; a running
        compaction is awaited and, like everything written since, deleted."""

@final
class RawScan:
    """A planned read (batch scan or change scan). Created by :meth:`RawTable.scan` and
    :meth:`RawTable.changes`; not constructible."""

    @property
    def snapshot_id(self) -> int | None:
        """The snapshot read (for change scans the last one), or None for an empty table."""

    @property
    def schema_id(self) -> int:
        """Id of the schema rows are read in."""

    def arrow_schema(self) -> pa.Schema:
        """The pyarrow schema of the rows this scan yields."""

    def splits(self) -> list[bytes]:
        """The planned splits, each serialised to opaque bytes."""

    def split_row_counts(self) -> list[int]:
        """Row count of each split before merging, in the order of :meth:`splits`."""

    def native_units(self, target_size: int | None = None, open_file_cost: int | None = None, *,
                     joins: bool = False) -> str:
        """The scan's read units as a JSON list: ``files`` (data files read natively),
        ``base_delta`` (base files less the delta's keys, plus the engine's merge of the delta)
        and ``engine`` (splits only the engine reads, packed to ``target_size`` bytes, default
        ``source.split.target-size``; each file, or each key-range section of a merged bucket,
        weighs at least ``open_file_cost``). Files with a deletion vector and ``base_delta``
        units only when ``joins`` (the reader removes their deleted rows by joins); else the
        engine reads them."""

    def packed_splits(self, target_size: int | None = None, open_file_cost: int | None = None) -> list[list[int]]:
        """Indexes of :meth:`splits` packed into tasks of about ``target_size`` bytes, in order."""

    def batches(self, progress: Callable[[int, int], object] | None = None) -> RawBatches:
        """Stream every split's rows; ``progress(rows, total)`` in planned rows as splits are read."""

    def to_table(self, progress: Callable[[int, int], object] | None = None) -> pa.Table:
        """Read every split into one table; ``progress`` as for :meth:`batches`."""

    def read_split(self, split: bytes) -> RawBatches:
        """Stream the rows of one split produced by :meth:`splits`."""

def pack_split_payloads(payloads: list[bytes], target_size: int, open_file_cost: int) -> list[list[int]]:
    """Split payloads packed into tasks as :meth:`RawScan.packed_splits` packs a scan's."""

@final
class RawBatches:
    """An engine stream of record batches; errors raise tidelake's typed exceptions. Wrapped in
    ``pyarrow.RecordBatchReader.from_batches`` by :mod:`tidelake.scan`; not constructible."""

    def arrow_schema(self) -> pa.Schema:
        """The pyarrow schema of every batch."""

    def __iter__(self) -> RawBatches: ...
    def __next__(self) -> pa.RecordBatch: ...

def message_target(message: bytes) -> tuple[bytes, int]:
    """The (framed partition BinaryRow, bucket) a commit message from
    :meth:`RawWriter.prepare_commit` writes to."""


class RawLookuper:
    """A long-lived point-lookup reader (see :meth:`RawTable.lookuper`); thread-safe."""

    @property
    def snapshot_id(self) -> int | None: ...
    @property
    def cached_bytes(self) -> int: ...
    def refresh(self) -> int | None:
        """Move to the latest snapshot; its id."""
    def lookup(self, keys: Any, columns: list[str] | None = None) -> pa.Table:
        """As :meth:`RawTable.lookup`, at the lookuper's snapshot."""


class RawCompactionPlan:
    """A planned compaction (see :meth:`RawTable.compaction_plan`)."""

    @property
    def snapshot_id(self) -> int | None: ...
    @property
    def moved_snapshot(self) -> int | None: ...
    def tasks(self) -> list[bytes]:
        """Every task's byte form."""


def compaction_task_target(task: bytes) -> tuple[str, str, int]:
    """(table location, branch, bucket) of a compaction task's bytes."""


def run_compaction_task(task: bytes, storage_options: dict[str, str] | None = None) -> bytes:
    """Run a compaction task here; its commit-message bytes."""


def cdc_decode(
    messages: list[tuple[bytes | None, bytes | None]], format: str, on_error: str
) -> tuple[list[tuple[str, str, list[str], pa.RecordBatch]], list[tuple[int, str]], list[tuple[int, str]]]:
    """Decode ``(key, value)`` change messages: the decoded source tables (database, table,
    primary keys, batch), the dead letters (index, error) and the ignored messages (index,
    reason)."""

def reset_logging() -> None:
    """Make tidelake's events see the current levels and handlers of the ``tidelake`` loggers
    (levels are cached when tidelake first logs; call this after changing them later)."""

def set_failpoint(name: str, actions: str) -> None:
    """Make a named failpoint of the engine (``write-flush``, ``commit-before-snapshot``,
    ``commit-after-snapshot``, ``compact-before-commit``, ``expire-before-delete``,
    ``orphans-before-delete``) do ``actions`` (``panic``, ``sleep(ms)``, ``return``, ``off``,
    ``1*return``...): tests only; ``UnsupportedError`` in release wheels."""


def set_clock_offset(offset_ms: int) -> None:
    """Move the engine's wall clock (snapshot times, tag times, expiry cut-offs) ``offset_ms``
    away from the system's: tests only; ``UnsupportedError`` in release wheels."""


def parse_filter_text(text: str) -> str:
    """The JSON filter tree of a text filter (``n >= 5 and s in ('a', 'b') or t is null``);
    raises ``InvalidArgumentError`` naming the position where reading stopped."""
