"""`./run`, the one entry point the README gives: its help lists every command it runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _help() -> str:
    result = subprocess.run(["bash", str(ROOT / "run"), "--help"], capture_output=True, text=True, check=True)
    return result.stdout


def test_help_lists_every_command_of_the_wrapper_and_the_cli() -> None:
    wrapper = set(re.findall(r"^  (\w+)\) ", (ROOT / "run").read_text(), flags=re.MULTILINE))
    cli_help = subprocess.run(
        [sys.executable, "-m", "stacks", "--help"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"\{([a-z,]+)\}", cli_help)
    assert match
    cli = set(match.group(1).split(","))
    listed = set(re.findall(r"^  (\w+)", _help(), flags=re.MULTILINE))
    assert {"test", "lint", "bench", "golden"} <= wrapper
    assert wrapper | cli <= listed


def test_help_needs_no_setup(tmp_path: Path) -> None:
    """A newcomer's first `./run --help` answers at once, without building a .venv."""
    (tmp_path / "run").write_text((ROOT / "run").read_text())
    result = subprocess.run(["bash", str(tmp_path / "run"), "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert "render NAME" in result.stdout
    assert not (tmp_path / ".venv").exists()
