"""The ``--filter`` option of ``cat``: the engine's text filter language (see
:func:`tidelake.expr.parse_filter_text`), with errors naming the option."""

from __future__ import annotations

from .. import exceptions as exc
from ..expr import Filter, parse_filter_text


def parse_filter(text: str) -> Filter:
    """Parse ``--filter`` into the engine's filter tree (an ``or`` of ``and``s of terms).

    Terms: ``col OP value`` with OP one of ``= == != <> < <= > >=``; ``col in (v1, v2)``;
    ``col not in (...)``; ``col is null``; ``col is not null``. Terms join with ``and``, which
    binds tighter than ``or``. Values: integers, floats, ``'quoted'`` or ``"quoted"`` strings,
    ``true``/``false``, unquoted ISO dates and timestamps (``2024-05-14``,
    ``2024-05-14T10:00:00``) and bare words (strings). Columns may be `back-quoted`.
    """
    try:
        return parse_filter_text(text)
    except exc.InvalidArgumentError as e:
        raise exc.InvalidArgumentError(f"--filter: {e}") from None
