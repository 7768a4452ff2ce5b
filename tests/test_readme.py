"""The README's user snippets run as written (in a fresh directory)."""

from __future__ import annotations

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks(section: str) -> list[str]:
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end if end != -1 else None], re.S)


@pytest.mark.parametrize("section", ["Quickstart", "Row-level changes"])
def test_readme_section_runs(section, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(section)
    assert blocks, f"no python block under '## {section}'"
    for code in blocks:
        exec(compile(code, f"README.md ({section})", "exec"), {"__name__": "readme"})
