"""Module layering of the Python package, as ``crates/tidelake-core/tests/layering.rs`` checks
the Rust core's: every import (module level or inside a function) of every module under
``python/`` is read with :mod:`ast` and checked against the rules below.

* Front-ends (``tidelake.spark``, ``tidelake.polars``, ``tidelake.cli``) adapt other engines and
  interfaces to the API; they never import each other, and nothing else imports them (except
  ``pyspark_tidelake``, Spark's auto-registration hook, which imports ``tidelake.spark``, and
  ``tidelake.cli.maintain``, whose ``--spark`` compacts with ``tidelake.spark.compact``).
* ``tidelake.expr``, the filter tree and its translators, imports nothing of tidelake but its
  exceptions and the binding; its translators import the tree, never each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "python"
FRONT_ENDS = ("tidelake.spark", "tidelake.polars", "tidelake.cli")
EXPR = "tidelake.expr"
EXPR_MAY_IMPORT = ("tidelake.exceptions", "tidelake._internal")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The absolute names of the tidelake modules (or module attributes) ``path`` imports."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            found.add(origin)
            found.update(f"{origin}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in ("tidelake", "pyspark_tidelake")}


MODULES = {_module_name(p): _imports(p) for p in sorted(ROOT.rglob("*.py"))}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _front_end(module: str) -> str | None:
    return next((f for f in FRONT_ENDS if _within(module, f)), None)


def test_the_rules_see_every_layer():
    assert {m for m in MODULES if _front_end(m)} >= {"tidelake.spark", "tidelake.spark.dml", "tidelake.polars",
                                                      "tidelake.cli"}
    assert "tidelake.expr.tree" in MODULES and "pyspark_tidelake" in MODULES
    assert "tidelake.spark.io" in MODULES["tidelake.spark.dml"]  # relative imports resolve


@pytest.mark.parametrize("module", sorted(MODULES))
def test_front_ends_are_imported_by_nothing_but_themselves(module):
    own = _front_end(module)
    # pyspark_tidelake is Spark's auto-registration hook; `tidelake maintain --spark` runs its
    # compaction jobs with tidelake.spark.compact.
    allowed = {"tidelake.spark"} if module in ("pyspark_tidelake", "tidelake.cli.maintain") else set()
    wrong = sorted(i for i in MODULES[module]
                   if _front_end(i) not in (None, own) and _front_end(i) not in allowed)
    assert not wrong, f"{module} imports the front-end(s) {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, EXPR)))
def test_the_filter_tree_depends_on_nothing_above_it(module):
    outside = sorted(i for i in MODULES[module]
                     if not _within(i, EXPR) and not any(_within(i, a) for a in EXPR_MAY_IMPORT)
                     and i != "tidelake")
    assert not outside, f"{module} imports {outside}"
    if module not in (EXPR, f"{EXPR}.tree"):
        siblings = sorted(i for i in MODULES[module]
                          if _within(i, EXPR) and i != EXPR and not _within(i, f"{EXPR}.tree"))
        assert not siblings, f"the translator {module} imports other translators: {siblings}"
