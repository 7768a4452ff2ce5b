"""The ``tidelake`` command line.

Every command prints a human-readable view by default and JSON with ``--json`` (``cat --json``
prints JSON Lines, one object per row). Errors print one line on stderr (``error: ...``) and
exit non-zero without a traceback:

* exit 1: an unexpected error (commit conflict, storage failure, a bug...), an existing tag, an
  unsupported operation (e.g. compacting a row-tracking table) or a declined confirmation;
* exit 2: bad usage: unknown option, bad argument, bad filter or column (``InvalidArgumentError``);
* exit 3: table, snapshot, schema or tag not found;
* exit 4: corrupt metadata or data;
* exit 5: ``doctor --verify`` found broken invariants (violations);
* exit 6: ``maintain`` ran jobs and one or more failed; exit 7: ``maintain``'s time budget left
  jobs unrun.

Maintenance commands (``compact``, ``expire-snapshots``, ``remove-orphans``, ``rollback``,
``tags create``...) change the table; ``rollback`` asks for confirmation unless ``--yes``.
Durations are ``30s``, ``10min``, ``1h``, ``2d`` (``ms``, ``s``, ``m``/``min``, ``h``, ``d``;
spaces allowed). Partition specs are ``k=v[,k=v...]`` with values converted to the partition
column's type.

Set ``TIDELAKE_DEBUG=1`` to get the traceback of unexpected errors.

The package is split by command group: ``_app`` (the root group, error handling, shared
options), ``inspect`` (read-only views), ``refs`` (tags, branches, consumers, rollback),
``maintenance`` (compaction, expiration, partitions), ``maintain`` (the maintenance
autopilot), ``load`` (create, load), ``query`` (sql), ``catalog`` (a catalog's databases and
tables), ``doctor``, ``ui`` (the read-only web page); ``_format`` and ``_params`` hold output
formatting and argument types. Importing the package registers every command.
"""

from __future__ import annotations

import click as click

from . import catalog, doctor, inspect, load, maintain, maintenance, query, refs, ui  # noqa: F401 - importing registers the commands
from ._app import main as main
from ._filter import parse_filter as parse_filter
from ._format import _json_value as _json_value
from ._format import paimon_type as paimon_type
from ._params import _PARTITION as _PARTITION
from ._params import parse_duration as parse_duration
