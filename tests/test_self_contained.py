"""The repository check of ``make test`` (tools/self_contained.py): clean on this repository, and
each kind of reference outside a repository found in a small git repository made here."""

from __future__ import annotations

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
CHECK = REPO / "tools" / "self_contained.py"


def run(root: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)


def test_this_repository_names_nothing_outside_itself() -> None:
    done = run(REPO)
    assert done.returncode == 0, done.stdout


BAD = {
    "crates/c/Cargo.toml": ("[package]\n", None),
    "crates/c/src/lib.rs": ('let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/x");\n', "../../../shared/x"),  # self-contained: ok
    "tests/conftest.py": ("import pathlib\nREPO = pathlib.Path(__file__).resolve().parents[1]\nF = REPO.parent / 'shared'\n",
                          "1 level(s) above"),
    "examples/demo.py": ("import pathlib\nHERE = pathlib.Path(__file__).resolve().parent\nX = HERE.parents[1] / 'f'\n",
                         "1 level(s) above"),
    "docs/x.md": ("fixtures live in `../shared/fixtures` beside the clone\n", "../shared/fixtures"),  # self-contained: ok
    "bench.md": ("measured with `/work/bench/lk5.py`\n", "/work/bench/lk5.py"),  # self-contained: ok
    "run.sh": ("cp ~/notes.txt . && cp $HOME/.m2/settings.xml .\n", "~/notes.txt"),  # self-contained: ok
}

GOOD = {
    "ok.sh": 'cd "$(dirname "$0")/.." && ls ~/.cache/tidelake $HOME/.m2\n',
    "tests/ok.py": "import pathlib\nREPO = pathlib.Path(__file__).resolve().parents[1]\nX = REPO / 'a/../b'\n"
                   "HOSTILE = ['../../escape']  # self-contained: ok\n",
    "crates/c/src/inner.rs": 'let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");\n',  # self-contained: ok
}


def test_each_kind_of_outside_path_is_found(tmp_path: pathlib.Path) -> None:
    for name, text in {**{k: v[0] for k, v in BAD.items()}, **GOOD}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    done = run(tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()[:-1]
    for name, (_, what) in BAD.items():
        if what is not None:
            assert any(line.startswith(f"{name}:") and what in line for line in lines), (name, done.stdout)
    assert not [line for line in lines if line.split(":")[0] in GOOD], done.stdout
    assert len(lines) == 6, done.stdout
