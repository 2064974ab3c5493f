"""Each `./run` command in a fresh clone's terms: no .tools/, nothing run before it. The change plan expands the
router chart with the pinned Helm (stacks/review/chart_objects.py), so every command that can reach it (the
tests, `diff`, `e2e`'s config changes) installs Helm before it starts; before, only `test` and `diff` did, and a
fresh clone's `./run e2e dev` was a traceback at its first change.

The script runs for real in a scratch copy; its environment's Python is a stand-in that records each call."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "scripts/install_helm.py"

# Each command of `./run --help` with what its Python runs, in order: the expectation is written out here.
COMMANDS = {
    "test": [[INSTALL], ["-m", "pytest", "-q"]],
    "diff": [[INSTALL], ["-m", "stacks", "diff", "--base", "HEAD"]],
    "e2e": [[INSTALL], ["-m", "e2e", "dev"]],
    "render": [["-m", "stacks", "render", "dev", "--out", "x"]],
    "check": [["-m", "stacks", "check", "dev"]],
    "size": [["-m", "stacks", "size", "dev"]],
    "list": [["-m", "stacks", "list"]],
    "keys": [["-m", "stacks", "keys"]],
    "docs": [["-m", "stacks", "docs"]],
    "golden": [["-m", "tests.golden"]],
    "fit-decode": [["benchmarks/device/fit_decode.py", "gpu", "a.json"]],
    "bench": [
        ["benchmarks/render.py"],
        ["benchmarks/tier_replay.py"],
        ["benchmarks/pd_offload.py"],
        ["benchmarks/capacity.py"],
    ],
}
ARGS = {
    "test": ["-q"],
    "diff": ["--base", "HEAD"],
    "e2e": ["dev"],
    "render": ["dev", "--out", "x"],
    "check": ["dev"],
    "size": ["dev"],
    "fit-decode": ["gpu", "a.json"],
}


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The run script and its requirements, with a set-up environment whose tools record their arguments."""
    for name in ("run", "requirements.txt", "requirements-dev.txt"):
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "ruff", "mypy"):
        stand_in = bin_dir / tool
        stand_in.write_text(f'#!/bin/sh\necho "{tool} $*" >> "$CALLS"\n')
        stand_in.chmod(0o755)
    stamp = tmp_path / ".venv" / ".installed"
    stamp.touch()
    later = (tmp_path / "requirements.txt").stat().st_mtime + 10
    os.utime(stamp, (later, later))
    return tmp_path


def _calls(clone: Path, command: str) -> list[list[str]]:
    log = clone / "calls.log"
    log.unlink(missing_ok=True)
    result = subprocess.run(
        ["./run", command, *ARGS.get(command, [])],
        cwd=clone,
        env={**os.environ, "CALLS": str(log)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert not (clone / ".tools").exists()
    return [line.split()[1:] for line in log.read_text().splitlines()]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_installs_helm_first_exactly_where_it_needs_it(clone: Path, command: str) -> None:
    assert _calls(clone, command) == COMMANDS[command]


def test_every_command_of_the_help_is_covered(clone: Path) -> None:
    env = {**os.environ, "CALLS": str(clone / "calls.log")}
    usage = subprocess.run(["./run", "help"], cwd=clone, env=env, capture_output=True, text=True, check=True).stdout
    listed = {line.split()[0] for line in usage.splitlines() if line.startswith("  ") and line.split()}
    assert listed - {"help,"} == {*COMMANDS, "lint"}


def test_lint_runs_the_three_linters_and_no_install(clone: Path) -> None:
    log = clone / "calls.log"
    env = {**os.environ, "CALLS": str(log)}
    subprocess.run(["./run", "lint"], cwd=clone, env=env, check=True, capture_output=True)
    assert log.read_text().splitlines() == ["ruff check .", "ruff format --check .", "mypy ."]
