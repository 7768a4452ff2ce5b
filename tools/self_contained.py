"""Checks that the repository names no path outside itself (`make test` runs it first).

A clone must run its tests and demos with nothing beside it, so no tracked file may point at a
sibling directory, a parent of the clone or a machine-specific absolute path. Three kinds of
reference are looked for:

* relative paths (`"../x"`, not `dir/../x`), resolved against the directory of the package the file
  belongs to (the nearest directory holding a Cargo.toml, pyproject.toml, pom.xml or Makefile:
  the base `env!("CARGO_MANIFEST_DIR")`, Maven and make resolve against), and against the
  file's own directory; escaping the repository from either is a finding;
* Python paths anchored at `__file__` (`Path(__file__).resolve().parents[2]`, `.parent` chains,
  and names bound to such paths, `REPO.parent / "shared"`) that climb above the repository;
* absolute paths into home or work directories (`/work/`, `/home/`, `/root/`), and `~/` or
  `$HOME/` paths other than the caches tools create on demand.

A line holding `self-contained: ok` (a hostile file name a test feeds the engine) is skipped.
Usage: `python tools/self_contained.py [ROOT]`; exit 1 with one line per finding, 0 when clean.
"""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

# Caches under the home directory that tools create on demand (cargo, rustup, Maven, pip, ...).
ALLOWED_HOME = ("~/.cache", "~/.m2", "~/.cargo", "~/.rustup", "~/.ivy2", "~/.local/share/tidelake")
MANIFESTS = ("Cargo.toml", "pyproject.toml", "pom.xml", "Makefile")
TEXT_SUFFIXES = {".rs", ".py", ".toml", ".md", ".txt", ".sh", ".yml", ".yaml", ".xml", ".json", ".cfg", ".ini", ""}
# Paimon's data (its JSON paths are relative to itself), and this file, whose docs name the patterns.
SKIP_PREFIXES = ("tests/fixtures/", "tools/self_contained.py")
PRAGMA = "self-contained: ok"  # on a line whose path is data (a hostile name in a test), not a reference

RELATIVE = re.compile(r"""(?<![\w./$])((?:\.\./)+(?:\.\.)?[\w.\-/]*)""")
ABSOLUTE = re.compile(r"""(?<![\w.~$])(/(?:work|home|root)/[\w.\-/]*)""")
HOME = re.compile(r"""((?:~|\$HOME|\$\{HOME\}|\$\(HOME\))/[\w.\-/]*)""")


def tracked_files(root: pathlib.Path) -> list[str]:
    """The repository's tracked files (every file below `root` when it is not a git work tree)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]


def escapes(start: pathlib.PurePosixPath, rel: str) -> bool:
    """Whether `rel`, taken from `start` (relative to the repository root), leaves the root."""
    depth = len(start.parts)
    for part in rel.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def package_dir(root: pathlib.Path, rel: pathlib.PurePosixPath) -> pathlib.PurePosixPath:
    """The nearest directory at or above the file's that holds a build manifest."""
    for parent in rel.parents:
        if any((root / parent / m).is_file() for m in MANIFESTS):
            return parent
    return pathlib.PurePosixPath()


class _Anchored(ast.NodeVisitor):
    """Depths (levels below the root) of paths anchored at `__file__`, and those above it."""

    def __init__(self, file_depth: int):
        self.file_depth = file_depth  # the file itself: `Path(__file__)`
        self.names: dict[str, int] = {}
        self.findings: list[tuple[int, str]] = []

    def depth(self, node: ast.AST) -> int | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Call):
            func = node.func
            if any(isinstance(a, ast.Name) and a.id == "__file__" for a in node.args):
                return self.file_depth  # Path(__file__), pathlib.Path(__file__)
            if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute"):
                return self.depth(func.value)
            return None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.depth(node.value)
            return None if inner is None else inner - 1
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            inner = self.depth(node.value.value)
            if inner is not None and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return inner - 1 - node.slice.value
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        d = self.depth(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name) and d is not None:
                self.names[target.id] = d
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            d = self.depth(node)
            if d is not None and d < 0:
                self.findings.append((node.lineno, f"a path {-d} level(s) above the repository"))
                return
        super().generic_visit(node)


def check_file(root: pathlib.Path, rel_name: str) -> list[str]:
    rel = pathlib.PurePosixPath(rel_name)
    if rel_name.startswith(SKIP_PREFIXES) or rel.suffix not in TEXT_SUFFIXES:
        return []
    try:
        text = (root / rel).read_text()
    except (UnicodeDecodeError, OSError):
        return []
    findings = []
    bases = {package_dir(root, rel), rel.parent}
    for lineno, line in enumerate(text.splitlines(), 1):
        if PRAGMA in line:
            continue
        for m in RELATIVE.finditer(line):
            if any(escapes(base, m.group(1)) for base in bases):
                findings.append(f"{rel}:{lineno}: {m.group(1)!r} points outside the repository")
        for m in ABSOLUTE.finditer(line):
            findings.append(f"{rel}:{lineno}: {m.group(1)!r} is an absolute path of one machine")
        for m in HOME.finditer(line):
            home = "~" + m.group(1)[m.group(1).index("/"):]
            if not home.startswith(ALLOWED_HOME):
                findings.append(f"{rel}:{lineno}: {m.group(1)!r} is a home-directory file, not a cache")
    if rel.suffix == ".py":
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return findings
        visitor = _Anchored(len(rel.parts))  # `tests/x.py` is two levels below the root
        visitor.visit(tree)
        findings += [f"{rel}:{lineno}: {what}" for lineno, what in visitor.findings]
    return findings


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1] if len(argv) > 1 else ".").resolve()
    findings = [f for name in tracked_files(root) for f in check_file(root, name)]
    for f in findings:
        print(f)
    if findings:
        print(f"{len(findings)} path(s) outside the repository; a clone must run with nothing beside it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
