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


def _command_line_section() -> str:
    text = README.read_text()
    start = text.index("### Command line\n")
    return text[start:text.index("\n## ", start)]


def test_cli_reference_lists_every_command():
    import click

    from tidelake import cli

    table = _command_line_section()
    missing = [name for name, command in cli.main.commands.items() if f"`{name} " not in table]
    assert not missing, f"commands missing from the README's command table: {missing}"
    for name, group in cli.main.commands.items():
        if isinstance(group, click.Group):
            listed = re.search(rf"`{name} \[([a-z|\\-]+)\]", table)
            assert listed and set(listed.group(1).replace("\\", "").split("|")) == set(group.commands), name


def test_cli_examples_run(tmp_path, monkeypatch):
    """The README's shell examples run as written on input files of those names."""
    import shlex

    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from tidelake import cli

    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"id": [1, 2], "qty": [10, 70], "region": ["eu", "us"]}), "day1.parquet")
    pcsv.write_csv(pa.table({"id": [2, 3], "qty": [80, 55], "region": ["eu", "eu"]}), "day2.csv")
    block = re.search(r"```sh\n(.*?)```", _command_line_section(), re.S)
    assert block is not None
    outputs = []
    for line in block.group(1).strip().splitlines():
        args = shlex.split(line)
        assert args[0] == "tidelake"
        result = CliRunner().invoke(cli.main, args[1:], prog_name="tidelake")
        assert result.exit_code == 0, (line, result.output)
        outputs.append(result.stdout)
    assert outputs[1].splitlines()[-1] == "(2 rows)"  # ids 2 and 3: qty >= 50 in eu
