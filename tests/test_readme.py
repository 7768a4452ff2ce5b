"""The README's user snippets run as written (in a fresh directory). The docs site's pages, where
the rest of the user documentation lives, are run by tests/test_docs.py."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks(section: str) -> list[str]:
    """The python blocks under heading ``section`` (any level), up to the next heading."""
    return [code for heading, code in _python_blocks_by_heading() if heading == section]


def _python_blocks_by_heading() -> list[tuple[str, str]]:
    """Every python block of the README with the heading (``##`` or ``###``) it is under."""
    out = []
    heading = ""
    for part in re.split(r"(```python\n.*?```)", README.read_text(), flags=re.S):
        if part.startswith("```python\n"):
            out.append((heading, part[len("```python\n"):-3]))
        else:
            headings = re.findall(r"^#{2,3} (.+)$", part, re.M)
            heading = headings[-1] if headings else heading
    return out


SELF_CONTAINED = ["Quickstart"]
"""Sections whose snippets run on their own, each in a fresh directory."""

WITH_SPARK = ["Spark"]
"""Sections whose snippets run with what a Spark user has at hand: ``spark``, a session."""


def test_every_python_block_is_run():
    headings = {heading for heading, _ in _python_blocks_by_heading()}
    assert headings <= set(SELF_CONTAINED) | set(WITH_SPARK), headings - set(SELF_CONTAINED) - set(WITH_SPARK)


@pytest.mark.parametrize("section", SELF_CONTAINED)
def test_readme_section_runs(section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(section)
    assert blocks, f"no python block under '## {section}'"
    for code in blocks:
        exec(compile(code, f"README.md ({section})", "exec"), {"__name__": "readme"})


@pytest.mark.parametrize("section", WITH_SPARK)
def test_readme_spark_section_runs(section, spark, tmp_path, monkeypatch):
    import tidelake

    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(section)
    assert blocks, f"no python block under '## {section}'"
    ns = {"__name__": "readme", "spark": spark}
    for code in blocks:
        exec(compile(code, f"README.md ({section})", "exec"), ns)
    assert tidelake.open_table(ns["path"]).to_arrow().num_rows == 2

