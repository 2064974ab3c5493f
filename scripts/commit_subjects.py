"""Commit subjects of at most 72 characters (the Linux and Git convention: `git log --oneline` and every forge show
the subject alone, truncated past about 72), the why and the figures in the body. Standard library only.

Two callers, one rule:
- the commit-msg hook (`.githooks/commit-msg`, which `./run` makes git use): `--message FILE`, the message being
  committed, refused with one line;
- CI (`.ci/run`): `--history`, every commit after the marker (`.githooks/subjects-since`: the commit the rule starts
  after, recorded in the repository, so "new" means the same in any full clone, on any branch).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_SUBJECT = 72
MARKER = ROOT / ".githooks" / "subjects-since"


def subject(message: str) -> str:
    """The subject as git reads it (`%s`): the first paragraph, its lines joined by spaces, after the comment lines
    (`#`, which git strips) and leading blank lines."""
    lines = [line.rstrip() for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[0].strip():
        lines.pop(0)
    paragraph = []
    for line in lines:
        if not line.strip():
            break
        paragraph.append(line.strip())
    return " ".join(paragraph)


def problem(message: str) -> str | None:
    """Why a commit message's subject is refused (None: it is not)."""
    title = subject(message)
    if not title:
        return None  # an empty message: git refuses it itself
    if len(title) > MAX_SUBJECT:
        return (
            f"commit subject is {len(title)} characters, more than {MAX_SUBJECT}: {title[:MAX_SUBJECT]}... "
            "(shorten it; the why and the figures go in the body, after a blank line)"
        )
    return None


def marker() -> str:
    """The commit the rule starts after, from `.githooks/subjects-since` (its first word that is a commit hash)."""
    found = re.search(r"\b[0-9a-f]{40}\b", MARKER.read_text())
    if found is None:
        raise SystemExit(f"{MARKER.relative_to(ROOT)}: no 40-character commit hash in it")
    return found.group(0)


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def history_problems(base: str, head: str = "HEAD") -> list[str]:
    """One line for each commit after `base` up to `head` whose subject is refused; a `base` the clone does not
    hold, or one `head` does not descend from, is one line too (never a silent pass)."""
    if _git("cat-file", "-e", f"{base}^{{commit}}").returncode != 0:
        shallow = _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        why = "the clone is shallow: fetch its history (git fetch --unshallow)" if shallow else "not in this clone"
        return [f"the marker commit {base} ({MARKER.name}) is {why}"]
    if _git("merge-base", "--is-ancestor", base, head).returncode != 0:
        return [f"{head} does not descend from the marker commit {base} ({MARKER.name})"]
    log = _git("log", "--format=%H%x00%B%x01", f"{base}..{head}")
    if log.returncode != 0:
        return [f"git log {base}..{head}: {log.stderr.strip()}"]
    out = []
    for entry in log.stdout.split("\x01"):
        commit, _, message = entry.strip("\n").partition("\x00")
        found = problem(message) if commit else None
        if found:
            out.append(f"{commit[:12]}: {found}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--message", type=Path, help="the message file git hands the commit-msg hook")
    which.add_argument("--history", action="store_true", help="every commit after the marker, up to HEAD")
    args = parser.parse_args(argv)
    if args.message is not None:
        found = problem(args.message.read_text(encoding="utf-8", errors="replace"))
        problems = [found] if found else []
    else:
        problems = history_problems(marker())
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
