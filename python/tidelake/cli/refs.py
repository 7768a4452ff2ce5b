"""Commands on what keeps snapshots: tags, branches, consumers, and rollback to one."""

from __future__ import annotations

import datetime as _dt

import click

from .. import exceptions as exc
from ._app import _JSON, _PATH, _emit_json, _fail, _guarded, _open, _PathGroup, main
from ._format import _fmt_duration, _fmt_local_time, _fmt_retained, _fmt_time, _print_table, _summary
from ._params import _DURATION, _interactive, _one_version


@main.group(cls=_PathGroup, short_help="List, create, replace, rename and delete the tags of a table.")
def tags() -> None:
    """List (the default: `tags PATH` is `tags list PATH`), create, replace, rename and delete
    the tags of the table at PATH. A tag keeps its snapshot and files readable after the snapshot expires."""


@tags.command("list", short_help="List the tags of a table.")
@_PATH
@_JSON
@_guarded
def tags_list(path: str, as_json: bool) -> None:
    """List the tags of the table at PATH (sorted by name) with the snapshot each one keeps."""
    tag_list = _open(path).tags()
    if as_json:
        _emit_json([tg.to_dict() for tg in tag_list])
        return
    _print_table([[tg.name, tg.snapshot_id, tg.schema_id, _fmt_time(tg.time_millis), _fmt_local_time(tg.create_time),
                   _fmt_retained(tg.time_retained)] for tg in tag_list],
                 ["tag", "snapshot", "schema", "committed", "created", "retained"])
    click.echo(f"({len(tag_list)} tags)")


@tags.command("create", short_help="Tag a snapshot (the latest by default).")
@_PATH
@click.argument("name", metavar="NAME")
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Tag snapshot N (default: the latest).")
@click.option("--retain", type=_DURATION, metavar="DURATION",
              help="Let writers expire the tag DURATION after it is created, e.g. 7d (default: the table's "
                   "tag.default-time-retained, else kept until deleted).")
@_JSON
@_guarded
def tags_create(path: str, name: str, snapshot_id: int | None, retain: _dt.timedelta | None, as_json: bool) -> None:
    """Create tag NAME on a snapshot of the table at PATH (the latest by default). The tag keeps
    the snapshot and its files readable (`cat --tag NAME`) after the snapshot expires. Fails with
    exit 1 if the tag exists."""
    tag = _open(path).create_tag(name, snapshot_id, retain)
    if as_json:
        _emit_json(tag.to_dict())
        return
    kept = f", retained {_fmt_duration(retain)}" if retain is not None else ""
    click.echo(f"created tag {tag.name} on snapshot {tag.snapshot_id}{kept}")


@tags.command("replace", short_help="Point an existing tag at another snapshot.")
@_PATH
@click.argument("name", metavar="NAME")
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Tag snapshot N (default: the latest).")
@click.option("--retain", type=_DURATION, metavar="DURATION",
              help="Let writers expire the tag DURATION after now, e.g. 7d (default: kept until deleted).")
@_JSON
@_guarded
def tags_replace(path: str, name: str, snapshot_id: int | None, retain: _dt.timedelta | None, as_json: bool) -> None:
    """Point existing tag NAME of the table at PATH at snapshot N (the latest by default). Exit 3
    if there is no such tag."""
    tag = _open(path).replace_tag(name, snapshot_id, retain)
    if as_json:
        _emit_json(tag.to_dict())
        return
    kept = f", retained {_fmt_duration(retain)}" if retain is not None else ""
    click.echo(f"replaced tag {tag.name}: now on snapshot {tag.snapshot_id}{kept}")


@tags.command("rename", short_help="Rename a tag.")
@_PATH
@click.argument("name", metavar="NAME")
@click.argument("target", metavar="TARGET")
@_guarded
def tags_rename(path: str, name: str, target: str) -> None:
    """Rename tag NAME of the table at PATH to TARGET. Exit 3 if there is no tag NAME, exit 1
    if TARGET exists."""
    _open(path).rename_tag(name, target)
    click.echo(f"renamed tag {name} to {target}")


@tags.command("delete", short_help="Delete a tag.")
@_PATH
@click.argument("name", metavar="NAME")
@_JSON
@_guarded
def tags_delete(path: str, name: str, as_json: bool) -> None:
    """Delete tag NAME of the table at PATH. When its snapshot has expired, the files only the
    tag kept are deleted too. Exit 3 if there is no such tag."""
    counts = _open(path).delete_tag(name)
    if as_json:
        _emit_json({"tag": name, **counts})
        return
    click.echo(f"deleted tag {name} ({_summary(counts)} removed)")


# ---- branches -------------------------------------------------------------------------------------


@main.group(cls=_PathGroup, short_help="List, create, delete, fast-forward and publish branches.")
def branches() -> None:
    """List (the default: `branches PATH` is `branches list PATH`), create, delete,
    fast-forward, stage and publish the branches of the table at PATH. A branch has its own snapshots, schemas and
    tags and shares data files; read or write one with `tidelake --branch NAME ...`."""


@branches.command("list", short_help="List the branches of a table.")
@_PATH
@_JSON
@_guarded
def branches_list(path: str, as_json: bool) -> None:
    """List the branches of the table at PATH besides main, sorted."""
    names = _open(path).branches()
    if as_json:
        _emit_json(names)
        return
    for name in names:
        click.echo(name)
    click.echo(f"({len(names)} branches)")


@branches.command("create", short_help="Create a branch (from a snapshot, a tag, or empty).")
@_PATH
@click.argument("name", metavar="NAME")
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Start from snapshot N.")
@click.option("--tag", metavar="T", help="Start from tag T.")
@_guarded
def branches_create(path: str, name: str, snapshot_id: int | None, tag: str | None) -> None:
    """Create branch NAME of the table at PATH, starting from snapshot N or tag T (at most one),
    else empty with the latest schema."""
    _one_version(snapshot=snapshot_id, tag=tag)
    _open(path).create_branch(name, from_snapshot=snapshot_id, from_tag=tag)
    start = f"snapshot {snapshot_id}" if snapshot_id is not None else f"tag {tag}" if tag is not None else "empty"
    click.echo(f"created branch {name} ({start})")


@branches.command("delete", short_help="Delete a branch.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_delete(path: str, name: str) -> None:
    """Delete branch NAME of the table at PATH; files only it referenced become orphans
    (remove-orphans deletes them). Exit 3 if there is no such branch."""
    _open(path).delete_branch(name)
    click.echo(f"deleted branch {name}")


@branches.command("fast-forward", short_help="Replace a branch's history by another branch's.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_fast_forward(path: str, name: str) -> None:
    """Fast-forward the table at PATH (main, or --branch) to branch NAME: its snapshots, schemas
    and tags from NAME's earliest snapshot on are replaced by NAME's. Stop writers first."""
    t = _open(path).fast_forward(name)
    latest = t.latest_snapshot()
    click.echo(f"fast-forwarded {t.branch} to {name} (latest snapshot {latest.id if latest else '-'})")


@branches.command("stage", short_help="Create a stage: a branch of the latest snapshot to publish later.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_stage(path: str, name: str) -> None:
    """Create branch NAME of the table at PATH from its latest snapshot (write-audit-publish):
    write to it (`--branch NAME`), audit it, then `branches publish` or `branches delete` it."""
    s = _open(path).stage(name)
    base = s.base_snapshot_id
    click.echo(f"created stage {name} (from snapshot {base if base is not None else '- (empty table)'})")


@branches.command("publish", short_help="Publish a stage into the table as one atomic snapshot.")
@_PATH
@click.argument("name", metavar="NAME")
@_guarded
def branches_publish(path: str, name: str) -> None:
    """Publish branch NAME into the table at PATH (main, or --branch) as ONE new snapshot holding
    NAME's files, then delete NAME. Refused (exit code of a conflict, NAME kept) when anything was
    committed to the table since NAME was created."""
    published = _open(path).publish_stage(name)
    click.echo(f"published {name}: " + (f"snapshot {published}" if published is not None else "nothing to publish"))


# ---- rollback -------------------------------------------------------------------------------------


@main.command(short_help="Make an older snapshot or tag the latest state again.")
@_PATH
@click.option("--snapshot", "snapshot_id", type=int, metavar="N", help="Roll back to snapshot N.")
@click.option("--tag", metavar="T", help="Roll back to the snapshot tag T keeps.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed when stdin is not a terminal).")
@_JSON
@_guarded
def rollback(path: str, snapshot_id: int | None, tag: str | None, yes: bool, as_json: bool) -> None:
    """Roll the table at PATH back to snapshot N or tag T: newer snapshots and tags are deleted
    with the files only they referenced. Stop writers first. Asks for confirmation unless --yes;
    without --yes and without a terminal on stdin it fails with exit 2."""
    if (snapshot_id is None) == (tag is None):
        raise exc.InvalidArgumentError("give exactly one of --snapshot and --tag")
    t = _open(path)
    if snapshot_id is not None:
        target = t.snapshot(snapshot_id).id  # the target must read; newer ones may be damaged
        what = f"snapshot {target}"
    else:
        found = [tg for tg in t.tags() if tg.name == tag]
        if not found:
            existing = ", ".join(tg.name for tg in t.tags()) or "none"
            raise exc.TableNotFoundError(f"tag {tag!r} not found in {t.path}; existing tags: [{existing}]")
        target = found[0].snapshot_id
        what = f"tag {tag} (snapshot {target})"
    newer = list(range(target + 1, (t.latest_snapshot_id() or target) + 1))
    newer_tags = [tg.name for tg in t.tags() if tg.snapshot_id > target]
    if not yes:
        if not _interactive():
            raise exc.InvalidArgumentError("rollback needs confirmation: pass --yes (stdin is not a terminal)")
        lost = (f"snapshots {newer[0]}..{newer[-1]}" if len(newer) > 1 else
                f"snapshot {newer[0]}" if newer else "no snapshots")
        if newer_tags:
            lost += f" and tags {', '.join(newer_tags)}"
        if not click.confirm(f"Roll back {t.path} to {what}? This deletes {lost}.", default=False, err=True):
            _fail(RuntimeError("not confirmed; nothing was rolled back"), 1)
    result = t.rollback_to(snapshot_id=snapshot_id, tag=tag)
    if as_json:
        _emit_json(result)
        return
    deleted_tags = result.get("tags") or []
    click.echo(f"rolled back to {what}: deleted {result.get('snapshots', 0)} snapshots"
               f"{', tags ' + ', '.join(deleted_tags) if deleted_tags else ''}; {_summary(result)} removed")


@main.group(cls=_PathGroup, short_help="List, reset and delete streaming consumers.")
def consumers() -> None:
    """List (the default: `consumers PATH` is `consumers list PATH`), reset and delete the
    streaming consumers of the table at PATH. Snapshots a consumer will still read are not
    expired."""


@consumers.command("list", short_help="List the consumers of a table.")
@_PATH
@_JSON
@_guarded
def consumers_list(path: str, as_json: bool) -> None:
    """List the consumers of the table at PATH with the next snapshot each one will read."""
    found = _open(path).consumers()
    if as_json:
        _emit_json(found)
        return
    _print_table([[cid, nxt] for cid, nxt in sorted(found.items())], ["consumer", "next snapshot"])
    click.echo(f"({len(found)} consumers)")


@consumers.command("reset", short_help="Create or move a consumer.")
@_PATH
@click.argument("consumer_id", metavar="ID")
@click.option("--next-snapshot", type=click.IntRange(min=1), required=True, metavar="N",
              help="The next snapshot consumer ID reads; snapshots from N on are not expired.")
@_guarded
def consumers_reset(path: str, consumer_id: str, next_snapshot: int) -> None:
    """Create consumer ID of the table at PATH, or move it, so that it reads snapshot N next."""
    _open(path).reset_consumer(consumer_id, next_snapshot)
    click.echo(f"consumer {consumer_id} reads snapshot {next_snapshot} next")


@consumers.command("delete", short_help="Delete a consumer.")
@_PATH
@click.argument("consumer_id", metavar="ID")
@_guarded
def consumers_delete(path: str, consumer_id: str) -> None:
    """Delete consumer ID of the table at PATH; its snapshots may then expire."""
    _open(path).delete_consumer(consumer_id)
    click.echo(f"deleted consumer {consumer_id}")

