"""Commands that create tables and load files into them: create, load.

Input files are read by pyarrow (Parquet, CSV, newline-delimited JSON); the format follows the
file extension unless ``--format`` says otherwise. ``load`` writes every file through one
writer and commits once, so a load lands completely or not at all.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

import click
import pyarrow as pa

from .. import exceptions as exc
from ..table import WRITE_MODES, WriteTableMode, create_table, write_table
from ._app import _JSON, _PATH, _catalog, _emit_json, _guarded, _open, main
from ._format import _count, _progress

_FORMATS = ("parquet", "csv", "json")
_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json",
               ".ndjson": "json"}


def _format_of(file: str, given: str | None) -> str:
    if given is not None:
        return given
    suffixes = [s.lower() for s in pathlib.Path(file).suffixes if s.lower() not in (".gz", ".bz2", ".zst")]
    fmt = _EXTENSIONS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise exc.InvalidArgumentError(f"cannot tell the format of {file!r} from its extension; "
                                       f"give --format ({', '.join(_FORMATS)})")
    return fmt


def _batches(file: str, fmt: str) -> pa.RecordBatchReader:
    """The rows of one input file, streamed where the format allows (Parquet and CSV)."""
    if not os.path.exists(file):
        raise exc.InvalidArgumentError(f"no such input file: {file}")
    try:
        if fmt == "json":  # pyarrow reads newline-delimited JSON whole
            import pyarrow.json as pj

            return pj.read_json(file).to_reader()
        import pyarrow.dataset as ds

        return ds.dataset(file, format=fmt).scanner().to_reader()
    except (pa.ArrowInvalid, OSError) as e:
        raise exc.InvalidArgumentError(f"cannot read {file} as {fmt}: {e}") from None


def _schema_of_files(files: tuple[str, ...], fmt: str | None) -> pa.Schema:
    schemas = [_batches(f, _format_of(f, fmt)).schema for f in files]
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise exc.SchemaMismatchError(f"the input files' schemas do not agree: {e}") from None


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the unified schema of all input files: columns in its order, widened to
    its types, nulls for the columns this file lacks."""
    if batch.schema == schema:
        return batch
    columns = []
    for field in schema:
        i = batch.schema.get_field_index(field.name)
        columns.append(batch.column(i).cast(field.type) if i >= 0 else pa.nulls(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _location(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def _storage_options() -> dict[str, str] | None:
    return click.get_current_context().find_root().obj[0]


def _options(values: tuple[str, ...]) -> dict[str, str]:
    pairs = [v.partition("=") for v in values]
    bad = [v for v, (_, eq, _) in zip(values, pairs) if not eq]
    if bad:
        raise exc.InvalidArgumentError(f"bad --option {bad[0]!r}: expected KEY=VALUE")
    return {k: v for k, _, v in pairs}


def _branch() -> str | None:
    """The branch of ``--branch``, None for main."""
    branch: str | None = click.get_current_context().find_root().obj[1]
    return branch


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


_TABLE_OPTIONS = [
    click.option("--primary-key", "primary_key", metavar="A,B", help="Primary-key columns (a primary-key table)."),
    click.option("--partition-by", "partition_by", metavar="A,B", help="Partition columns."),
    click.option("--bucket", type=int, metavar="N",
                 help="Fixed bucket count, or -1 (dynamic/unaware, the default) or -2 (postpone)."),
    click.option("--option", "table_options", multiple=True, metavar="KEY=VALUE",
                 help="A Paimon table option, e.g. merge-engine=partial-update (repeatable)."),
]
_FORMAT = click.option("--format", "fmt", type=click.Choice(_FORMATS),
                       help="Input format (default: from each file's extension).")


def _with_table_options(fn: Any) -> Any:
    for option in reversed(_TABLE_OPTIONS):
        fn = option(fn)
    return fn


@main.command(short_help="Create a table with the schema of a data file.")
@_PATH
@click.option("--schema-from", "schema_from", required=True, metavar="FILE",
              help="A Parquet, CSV or JSON-lines file whose columns and types the table takes.")
@_FORMAT
@_with_table_options
@_JSON
@_guarded
def create(path: str, schema_from: str, fmt: str | None, primary_key: str | None, partition_by: str | None,
           bucket: int | None, table_options: tuple[str, ...], as_json: bool) -> None:
    """Create an empty table at PATH with the columns of FILE (no rows are loaded; use `load`).

    \b
    Example:
      tidelake create wh/db.db/orders --schema-from orders.parquet --primary-key id --partition-by dt
    """
    if _branch() is not None:
        raise exc.InvalidArgumentError("create makes a new table; a branch of a table is made with "
                                       "`tidelake branches create PATH NAME`")
    schema, catalog = _schema_of_files((schema_from,), fmt), _catalog()
    if catalog is not None:
        t = catalog.create_table(path, schema, _names(primary_key), _names(partition_by), bucket,
                                 _options(table_options))
    else:
        t = create_table(_location(path), schema, _names(primary_key), _names(partition_by), bucket,
                         _options(table_options), storage_options=_storage_options())
    if as_json:
        _emit_json({"path": t.path, "schema": [{"name": f.name, "type": str(f.type)} for f in t.schema],
                    "primary_keys": t.primary_keys, "partition_keys": t.partition_keys})
        return
    click.echo(f"created {t.path} ({_count(len(t.schema), 'column')}; primary keys: "
               f"{', '.join(t.primary_keys) or '-'}; partition keys: {', '.join(t.partition_keys) or '-'})")


@main.command(short_help="Load Parquet, CSV or JSON files into a table (one commit).")
@_PATH
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_FORMAT
@click.option("--mode", type=click.Choice(WRITE_MODES), default="append", show_default=True,
              help="append: add rows (upsert by key on primary-key tables); overwrite: replace the table's "
                   "rows; error: fail if the table exists; ignore: do nothing if it exists.")
@_with_table_options
@_JSON
@_guarded
def load(path: str, files: tuple[str, ...], fmt: str | None, mode: WriteTableMode, primary_key: str | None,
         partition_by: str | None, bucket: int | None, table_options: tuple[str, ...], as_json: bool) -> None:
    """Load FILE... into the table at PATH in one atomic commit, creating the table from the
    files' schema if it does not exist (with the given keys, buckets and options). Columns are
    matched by name and cast safely to the table's types.

    \b
    Example:
      tidelake load wh/db.db/orders day1.parquet day2.parquet --primary-key id
    """
    formats = [_format_of(f, fmt) for f in files]
    schema = _schema_of_files(files, fmt)
    rows = 0

    def stream(bar: Any) -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for file, file_fmt in zip(files, formats):
            for batch in _batches(file, file_fmt):
                rows += batch.num_rows
                yield _conform(batch, schema)
            bar.update(1)

    with _progress(len(files), "loading files", show=not as_json) as bar:
        reader = pa.RecordBatchReader.from_batches(schema, stream(bar))
        if _branch() is not None:  # a branch of an existing table: nothing is created
            t = _open(path)
            if mode == "error":
                raise exc.TableAlreadyExistsError(f"{t.path} exists (branch {_branch()}); load with --mode "
                                                  "append or overwrite")
            if mode != "ignore":
                t.write(reader, mode="overwrite" if mode == "overwrite" else "append")
        else:
            catalog = _catalog()
            t = write_table(path if catalog else _location(path), reader, mode=mode,
                            primary_keys=_names(primary_key), partition_by=_names(partition_by), bucket=bucket,
                            options=_options(table_options) or None, storage_options=_storage_options(),
                            catalog=catalog)
    latest = t.latest_snapshot()
    if as_json:
        _emit_json({"path": t.path, "files": len(files), "rows": rows,
                    "snapshot": latest.id if latest else None})
        return
    click.echo(f"loaded {_count(rows, 'row')} from {_count(len(files), 'file')} into {t.path}"
               + (f" (snapshot {latest.id})" if latest else ""))
