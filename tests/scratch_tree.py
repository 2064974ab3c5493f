"""A scratch copy of the program, edited as a contributor would, and run in a subprocess: what the touch-list
test (test_contributing.py) and the registry-list test (test_registry_lists.py) measure a change on."""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# What the copy needs to render and check a preset: the program and its project files.
PROGRAM = ("components", "stacks", "policies", "__main__.py", "Pulumi.yaml", "pyproject.toml")


def copy_tree(tmp_path: Path, with_tests: bool = False) -> Path:
    """The program (and its tests, without the goldens) under `tmp_path`."""
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "golden")
    for name in (*PROGRAM, "tests") if with_tests else PROGRAM:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=ignore)
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


def insert(path: Path, anchor: str, text: str, before: bool = False) -> None:
    """Add `text` beside the one occurrence of `anchor` (the place CONTRIBUTING.md says the entry goes)."""
    source = path.read_text()
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved"
    path.write_text(source.replace(anchor, text + anchor if before else anchor + text))


def changed_files(tree: Path) -> list[str]:
    """The code files of the copy that differ from the tree's, or are new."""
    out = []
    for path in sorted(tree.rglob("*.py")):
        name = path.relative_to(tree).as_posix()
        if "__pycache__" in name:
            continue
        original = ROOT / name
        if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
            out.append(name)
    return out


def run_json(tree: Path, code: str, *args: str) -> Any:
    """Runs `code` in the copy (its own imports, not this tree's) and reads the JSON it prints."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tree,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def run_tests(tree: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    """pytest on the copy's own test files (as they are there: a contributor's change edits none)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths],
        cwd=tree,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
