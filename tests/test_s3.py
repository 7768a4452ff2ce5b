"""The core table scenarios on a real S3-compatible server (moto, see ``_s3.py``) and, with the
same assertions, on local storage: create through a catalog, upsert/delete/overwrite, time
travel, tags, compaction, expiration, orphan cleanup, picklable splits, hostile partition
values; plus the two-process race on one snapshot id and moto's conditional-put contract."""

from __future__ import annotations

import json
import multiprocessing as mp
import pathlib
import pickle
import time

import pyarrow as pa
import pytest

import tidelake
from _s3 import Storage
from _workers import race_commits
from conftest import assert_same_rows

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.int64())])


def rows(model: dict) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "dt": dt, "v": v} for (k, dt), v in sorted(model.items())], schema=SCHEMA)


def batch(keys, dt: str, v: int) -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "dt": [dt] * len(keys), "v": pa.array([v] * len(keys))},
                    schema=SCHEMA)


def test_table_lifecycle(storage: Storage, request):
    cat = tidelake.Catalog(storage.root, storage_options=storage.options)
    cat.create_database("db")
    # write-only: the writers leave compaction to the explicit compact() below
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], bucket=2,
                         options={"snapshot.num-retained.min": "100", "write-only": "true"})
    assert cat.list_tables("db") == ["t"]
    assert t.storage_options == (storage.options or {})
    model: dict = {}
    states: dict[int, dict] = {}
    for i in range(4):
        for dt in ("a", "b"):
            t.upsert(batch(range(i * 10, i * 10 + 15), dt, i))
            model.update({(k, dt): i for k in range(i * 10, i * 10 + 15)})
            states[t.latest_snapshot().id] = dict(model)
    t.delete_keys(batch(range(0, 5), "a", 0))
    for k in range(0, 5):
        model.pop((k, "a"))
    t.write(batch(range(100, 103), "b", 9), mode="overwrite", overwrite_partition={"dt": "b"})
    model = {key: v for key, v in model.items() if key[1] != "b"} | {(k, "b"): 9 for k in range(100, 103)}
    states[t.latest_snapshot().id] = dict(model)
    assert_same_rows(t.to_arrow(), rows(model))

    # a fresh handle, by URL and storage options, sees the same; so does every snapshot
    t = tidelake.open_table(t.path, storage_options=storage.options)
    ids = [s.id for s in t.snapshots()]
    assert ids == list(range(1, ids[-1] + 1)) and set(states) <= set(ids)
    for sid, state in states.items():
        assert_same_rows(t.to_arrow(snapshot_id=sid), rows(state))
    tagged = t.create_tag("before-compact").snapshot_id

    # splits carry the storage options to any process
    splits = pickle.loads(pickle.dumps(t.scan().splits()))
    assert_same_rows(pa.concat_tables([s.read().read_all() for s in splits]), rows(model))

    assert t.compact(full=True) is not None
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    assert_same_rows(t.to_arrow(), rows(model))

    latest = t.latest_snapshot().id
    expired = t.expire_snapshots(retain_min=1, retain_max=1, older_than_ms=int(time.time() * 1000) + 60_000)
    assert expired["snapshots"] == latest - 1 and expired["earliest_snapshot"] == latest
    assert [s.id for s in t.snapshots()] == [latest]
    assert_same_rows(t.to_arrow(), rows(model))
    assert_same_rows(t.to_arrow(tag="before-compact"), rows(states[tagged]))
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000) == []
    # a file a killed writer left behind is found and removed
    stray = "dt=a/bucket-0/data-stray-0.parquet"
    if storage.kind == "s3":
        bucket, prefix = storage.root.removeprefix("s3://").split("/", 1)
        request.getfixturevalue("s3_server").client().put_object(Bucket=bucket, Key=f"{prefix}/db.db/t/{stray}",
                                                                 Body=b"x" * 7)
    else:
        (pathlib.Path(t.path) / stray).write_bytes(b"x" * 7)
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert len(removed) == 1 and removed[0][0].endswith(stray) and removed[0][1] == 7, removed
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    assert_same_rows(tidelake.open_table(t.path, storage_options=storage.options).to_arrow(), rows(model))
    cat.drop_table("db.t")
    assert cat.list_tables("db") == []


HOSTILE = ["a/b", "x=y", "..", "../../escape", "%2F", "50%", "nul\x00byte", "ünï/cødé", " ", "#?&"]  # self-contained: ok (names a path traversal must not follow)


def test_hostile_partition_values_stay_inside_the_table(storage: Storage, s3_server):
    t = tidelake.create_table(storage.location("t"), SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                              bucket=1, storage_options=storage.options)
    data = pa.table({"k": pa.array(range(len(HOSTILE)), pa.int64()), "dt": HOSTILE,
                     "v": pa.array(range(len(HOSTILE)), pa.int64())}, schema=SCHEMA)
    t.write(data)
    assert_same_rows(t.to_arrow(), data)
    for i, value in enumerate(HOSTILE):
        assert t.to_arrow(filter=[("dt", "=", value)])["k"].to_pylist() == [i]
    if storage.kind == "s3":
        bucket, prefix = storage.root.removeprefix("s3://").split("/", 1)
        keys = s3_server.keys(bucket)
        table_prefix = f"{prefix}/t/"
        assert keys and all(k.startswith(table_prefix) for k in keys), keys
        data_dirs = {k[len(table_prefix):].split("/")[0] for k in keys if "/bucket-" in k}
    else:
        root = pathlib.Path(storage.location("t"))
        assert all(root in p.parents for p in pathlib.Path(storage.root).rglob("*") if p.is_file())
        data_dirs = {p.relative_to(root).parts[0] for p in root.rglob("bucket-0")}
    # one directory per value, each a single escaped `dt=...` segment
    assert len(data_dirs) == len(HOSTILE) and all(d.startswith("dt=") and "/" not in d for d in data_dirs)


def test_moto_honours_if_none_match(s3_server):
    """The server contract the snapshot commit relies on."""
    from botocore.exceptions import ClientError

    s3, bucket = s3_server.client(), s3_server.new_bucket()
    s3.put_object(Bucket=bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"first"


ROUNDS = 40


def test_two_processes_racing_for_one_snapshot_id_never_both_win(s3_server):
    """Each round both processes commit at the same moment with retries off: for every snapshot
    id at most one of them may see success, and every success is that id's snapshot."""
    location = f"s3://{s3_server.new_bucket()}/t"
    t = tidelake.create_table(location, SCHEMA, options={"commit.max-retries": "0", "write-only": "true"},
                              storage_options=s3_server.options)
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(2) as pool:
        barrier = manager.Barrier(2)
        results = pool.starmap(race_commits, [(location, s3_server.options, w, ROUNDS, barrier) for w in range(2)])
    won = [(sid, w, r) for w, per in enumerate(results) for r, sid in enumerate(per) if sid is not None]
    ids = [sid for sid, _, _ in won]
    assert len(ids) == len(set(ids)), "two committers both created one snapshot"
    snaps = tidelake.open_table(location, storage_options=s3_server.options).snapshots()
    assert [s.id for s in snaps] == sorted(ids) == list(range(1, len(ids) + 1))
    for sid, w, r in won:
        assert snaps[sid - 1].commit_user == f"racer{w}-{r}"
    contested = sum(1 for r in range(ROUNDS) if (results[0][r] is None) != (results[1][r] is None))
    print(f"{ROUNDS} rounds: {len(ids)} commits landed, {2 * ROUNDS - len(ids)} lost the race "
          f"({contested} rounds had exactly one winner)")
    assert len(ids) >= ROUNDS  # every round somebody wins
    got = tidelake.open_table(location, storage_options=s3_server.options).to_arrow()
    assert sorted(got["k"].to_pylist()) == sorted(w * 1000 + r for _, w, r in won)


def test_bad_locations_and_storage_options_are_typed_errors(s3_server, tmp_path):
    bucket = s3_server.new_bucket()
    with pytest.raises(tidelake.InvalidArgumentError, match="aws_endpiont"):
        tidelake.open_table(f"s3://{bucket}/t", storage_options={"aws_endpiont": s3_server.endpoint})
    with pytest.raises(tidelake.InvalidArgumentError, match="does not apply to the local path"):
        tidelake.open_table(str(tmp_path), storage_options={"aws_region": "us-east-1"})
    with pytest.raises(tidelake.InvalidArgumentError, match="storage_options must be a dict"):
        tidelake.open_table(f"s3://{bucket}/t", storage_options=[("aws_region", "x")])
    with pytest.raises(tidelake.UnsupportedError, match="ftp://"):
        tidelake.open_table("ftp://host/t")
    with pytest.raises(tidelake.TableNotFoundError, match=f"s3://{bucket}/missing"):
        tidelake.open_table(f"s3://{bucket}/missing", storage_options=s3_server.options)
    with pytest.raises(tidelake.StorageError):  # no such bucket
        tidelake.open_table("s3://no-such-bucket-here/t", storage_options=s3_server.options)


def test_cli_reads_s3_tables_with_storage_options(s3_server):
    from click.testing import CliRunner

    from tidelake import cli

    location = f"s3://{s3_server.new_bucket()}/t"
    t = tidelake.create_table(location, SCHEMA, storage_options=s3_server.options)
    t.write(batch(range(3), "a", 1))
    args = [a for k, v in s3_server.options.items() for a in ("-o", f"{k}={v}")]
    result = CliRunner().invoke(cli.main, [*args, "info", location, "--json"], prog_name="tidelake")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["snapshots"][-1]["id"] == 1
    bad = CliRunner().invoke(cli.main, ["-o", "aws_region", "info", location], prog_name="tidelake")
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output
