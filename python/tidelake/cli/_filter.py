"""The ``--filter`` mini-language of ``cat``."""

from __future__ import annotations

import re
from typing import Any

from .. import exceptions as exc

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<quoted>`[^`]+`)
    | (?P<temporal>\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w.:-]))
    | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.]))
    | (?P<op><=|>=|==|!=|<>|=|<|>)
    | (?P<punct>[(),])
    | (?P<word>[^\s'"`()<>=!,]+)
    )""", re.VERBOSE)

_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _unquote(text: str) -> str:
    q = text[0]
    body = text[1:-1].replace(q + q, q)
    return re.sub(r"\\(.)", r"\1", body)


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise exc.InvalidArgumentError(f"bad --filter {text!r}: cannot read {text[pos:].strip()!r}")
        kind = m.lastgroup
        raw = m.group(kind)
        start = m.start(kind)
        if kind == "str":
            out.append(("value", _unquote(raw), start))
        elif kind == "quoted":
            out.append(("ident", raw[1:-1], start))
        elif kind == "temporal":
            out.append(("value", raw, start))
        elif kind == "num":
            out.append(("value", float(raw) if re.search(r"[.eE]", raw) else int(raw), start))
        elif kind == "op":
            out.append(("op", _OPS[raw], start))
        elif kind == "punct":
            out.append((raw, raw, start))
        else:
            lower = raw.lower()
            if lower in ("and", "or", "not", "in", "is", "null"):
                out.append((lower, lower, start))
            elif lower in ("true", "false"):
                out.append(("value", lower == "true", start))
            else:
                out.append(("ident", raw, start))
        pos = m.end()
    return out


def parse_filter(text: str) -> list[list[tuple[Any, ...]]]:
    """Parse ``--filter`` into DNF: a list (OR) of lists (AND) of ``(column, op, value)``.

    Terms: ``col OP value`` with OP one of ``= == != <> < <= > >=``; ``col in (v1, v2)``;
    ``col not in (...)``; ``col is null``; ``col is not null``. Terms join with ``and``, which
    binds tighter than ``or``. Values: integers, floats, ``'quoted'`` or ``"quoted"`` strings,
    ``true``/``false``, unquoted ISO dates and timestamps (``2024-05-14``,
    ``2024-05-14T10:00:00``) and bare words (strings). Columns may be `back-quoted`.
    """
    toks = _tokens(text)
    if not toks:
        raise exc.InvalidArgumentError("bad --filter: it is empty")
    i = 0

    def where() -> str:
        return f"at position {toks[i][2] + 1}" if i < len(toks) else "at the end"

    def bad(expected: str) -> exc.InvalidArgumentError:
        return exc.InvalidArgumentError(f"bad --filter {text!r}: expected {expected} {where()}")

    def take(kind: str) -> Any:
        nonlocal i
        if i >= len(toks) or toks[i][0] != kind:
            return None
        i += 1
        return toks[i - 1][1]

    def value() -> Any:
        v = take("value")
        if v is None:
            word = take("ident")
            if word is None:
                raise bad("a value")
            return word
        return v

    def term() -> tuple[Any, ...]:
        col = take("ident")
        if col is None:
            raise bad("a column name")
        if take("is") is not None:
            negate = take("not") is not None
            if take("null") is None:
                raise bad("'null'")
            return (col, "is_not_null" if negate else "is_null")
        negate = take("not") is not None
        if take("in") is not None:
            if take("(") is None:
                raise bad("'('")
            values = [value()]
            while take(",") is not None:
                values.append(value())
            if take(")") is None:
                raise bad("',' or ')'")
            return (col, "not in" if negate else "in", values)
        if negate:
            raise bad("'in' after 'not'")
        op = take("op")
        if op is None:
            raise bad("an operator (= != < <= > >= in, is null)")
        return (col, op, value())

    clauses = []
    while True:
        conj = [term()]
        while take("and") is not None:
            conj.append(term())
        clauses.append(conj)
        if take("or") is None:
            break
    if i != len(toks):
        raise bad("'and', 'or' or the end")
    return clauses

