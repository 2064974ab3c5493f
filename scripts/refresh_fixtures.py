"""Refresh tests/fixtures/upstream/ from the team shelf or from GitHub, and record the new hashes.

The table in tests/fixtures/upstream/SOURCES.md is the one list of fixtures: each row names the file,
where it comes from and its sha256. This script copies every listed file (from `--shelf`, where it has
the same relative path, or with `--upstream` from raw.githubusercontent.com at the row's commit), then
rewrites the sha256 column. `--check` only compares the hashes. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "upstream"
SOURCES = FIXTURES / "SOURCES.md"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Row:
    file: str
    repository: str
    path: str
    commit: str
    sha256: str

    @property
    def url(self) -> str | None:
        """The raw file at its commit, when the row names one file of a GitHub repository."""
        fetchable = _REPO.match(self.repository) and _COMMIT.match(self.commit) and re.fullmatch(r"`[^`]+`", self.path)
        if not fetchable:
            return None
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{self.path.strip('`')}"


def rows(text: str) -> list[Row]:
    """The table rows (file in backticks in the first cell); columns as in SOURCES.md's header."""
    out: list[Row] = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        file, repository, path, _version, commit, _date, sha = cells
        out.append(Row(file.strip("`"), repository, path, commit, sha))
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fetch(row: Row, shelf: Path | None) -> None:
    target = FIXTURES / row.file
    target.parent.mkdir(parents=True, exist_ok=True)
    if shelf is not None:
        if not (shelf / row.file).is_file():  # made in this repository (its row says how): kept as it is
            print(f"skipped (not on the shelf): {row.file}", file=sys.stderr)
            return
        shutil.copyfile(shelf / row.file, target)
        return
    if row.url is None:
        print(f"skipped (shelf only): {row.file}", file=sys.stderr)
        return
    with urllib.request.urlopen(row.url, timeout=60) as response:
        target.write_bytes(response.read())


def _record(text: str) -> str:
    """The table with each row's sha256 cell set to its file's current hash."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("| `"):
            row = rows(line)[0]
            new = sha256(FIXTURES / row.file)
            if new != row.sha256:
                print(f"changed: {row.file}", file=sys.stderr)
                lines[i] = line[: line.rstrip().rstrip("|").rstrip().rfind("| ")] + f"| {new} |\n"
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shelf", type=Path, help="a folder with a copy of every listed file (the maintainers' shelf)")
    parser.add_argument("--upstream", action="store_true", help="download from GitHub instead of the shelf")
    parser.add_argument("--check", action="store_true", help="only compare the files with their recorded sha256")
    args = parser.parse_args(argv)
    text = SOURCES.read_text()
    listed = rows(text)
    if args.check:
        stale = [r.file for r in listed if not (FIXTURES / r.file).is_file() or sha256(FIXTURES / r.file) != r.sha256]
        for name in stale:
            print(f"differs from SOURCES.md: {name}", file=sys.stderr)
        return 1 if stale else 0
    if not args.upstream and (args.shelf is None or not args.shelf.is_dir()):
        where = "no --shelf given" if args.shelf is None else f"no shelf at {args.shelf}"
        parser.error(f"{where}: pass --shelf DIR (a folder with every listed file) or --upstream")
    for row in listed:
        _fetch(row, None if args.upstream else args.shelf)
    SOURCES.write_text(_record(text))
    print(f"{len(listed)} fixtures refreshed; review `git diff {FIXTURES.relative_to(ROOT)}`", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
