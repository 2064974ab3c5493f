"""Commit subjects of at most 72 characters: the rule (scripts/commit_subjects.py), the commit-msg hook `./run`
makes git use (set once, only at a checkout's top, silently elsewhere), and the history check CI runs on every
commit after the marker the repository records (.githooks/subjects-since)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from scripts import commit_subjects
from scripts.commit_subjects import MAX_SUBJECT, problem, subject

ROOT = Path(__file__).resolve().parents[1]


def test_the_subject_is_the_first_paragraph_as_git_reads_it() -> None:
    message = "# Please enter the commit message\n\nFix the router rule\nfor pooled tiers\n\nThe why.\n# a comment\n"
    assert subject(message) == "Fix the router rule for pooled tiers"
    assert subject("# only comments\n\n") == ""


def test_72_characters_pass_and_73_are_refused() -> None:
    assert MAX_SUBJECT == 72
    assert problem("x" * 72 + "\n\n" + "a body line far longer than the subject may be, " * 4) is None
    refused = problem("x" * 73)
    assert refused is not None and refused.startswith("commit subject is 73 characters, more than 72: ")
    assert problem("x" * 40 + "\n" + "y" * 40) is not None  # two lines, one paragraph: git's subject is both
    assert problem("") is None  # git refuses an empty message itself


def test_the_marker_is_a_commit_of_this_history() -> None:
    assert len(commit_subjects.marker()) == 40


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip


def _copy(tree: Path) -> None:
    """What the hook and the check need of the repository: `./run`, the hooks and the script."""
    (tree / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "run", tree / "run")
    shutil.copytree(ROOT / ".githooks", tree / ".githooks")
    shutil.copy2(ROOT / "scripts" / "commit_subjects.py", tree / "scripts" / "commit_subjects.py")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git checkout of the hook's files, `./run --help` run twice in it."""
    tree, env = tmp_path / "tree", _git_env(tmp_path)
    _copy(tree)
    assert _run(["git", "init", "-q"], tree, env).returncode == 0
    first, second = (_run(["bash", "run", "--help"], tree, env) for _ in range(2))
    assert first.returncode == second.returncode == 0
    assert first.stderr == second.stderr == "" and first.stdout == second.stdout
    return tree, env


def test_run_points_git_at_the_hooks_once(checkout: tuple[Path, dict[str, str]]) -> None:
    tree, env = checkout
    assert _run(["git", "config", "--get-all", "core.hooksPath"], tree, env).stdout == ".githooks\n"


def test_the_hook_refuses_a_long_subject_and_takes_72(checkout: tuple[Path, dict[str, str]]) -> None:
    tree, env = checkout
    assert _run(["git", "add", "-A"], tree, env).returncode == 0
    refused = _run(["git", "commit", "-q", "-m", "s" * 73, "-m", "the body"], tree, env)
    assert refused.returncode != 0
    assert "commit subject is 73 characters, more than 72" in refused.stderr
    taken = _run(["git", "commit", "-q", "-m", "s" * 72, "-m", "the body"], tree, env)
    assert taken.returncode == 0, taken.stderr


def test_the_history_check_reads_every_commit_after_the_marker(checkout: tuple[Path, dict[str, str]]) -> None:
    tree, env = checkout
    _run(["git", "add", "-A"], tree, env)
    _run(["git", "commit", "-q", "--no-verify", "-m", "an old subject, " * 6], tree, env)  # before the rule
    base = _run(["git", "rev-parse", "HEAD"], tree, env).stdout.strip()
    (tree / ".githooks" / "subjects-since").write_text(f"{base}\n")
    check = ["python3", "scripts/commit_subjects.py", "--history"]
    _run(["git", "commit", "-q", "--allow-empty", "-m", "a short subject"], tree, env)
    assert _run(check, tree, env).returncode == 0
    _run(["git", "commit", "-q", "--allow-empty", "--no-verify", "-m", "a new subject, " * 6], tree, env)
    after = _run(check, tree, env)
    assert after.returncode == 1
    assert after.stderr.count("\n") == 1 and "commit subject is 89 characters" in after.stderr
    (tree / ".githooks" / "subjects-since").write_text("0" * 40 + "\n")  # a marker the clone does not hold
    unknown = _run(check, tree, env)
    assert unknown.returncode == 1 and f"the marker commit {'0' * 40} (subjects-since) is not in this clone" in (
        unknown.stderr
    )


def test_run_is_silent_outside_a_checkout_and_below_another_ones_top(tmp_path: Path) -> None:
    env = _git_env(tmp_path)
    alone = tmp_path / "alone"
    _copy(alone)
    result = _run(["bash", "run", "--help"], alone, env)
    assert (result.returncode, result.stderr) == (0, "")
    assert not (alone / ".git").exists()
    outer = tmp_path / "outer"
    _copy(outer / "inner")
    _run(["git", "init", "-q"], outer, env)
    result = _run(["bash", "run", "--help"], outer / "inner", env)
    assert (result.returncode, result.stderr) == (0, "")
    assert _run(["git", "config", "--get", "core.hooksPath"], outer, env).stdout == ""
