"""CONTRIBUTING.md's touch lists name files that exist, and each stays within the redesign's bound
(issue #22: an accelerator in at most 2 code files (issue 31), a connector in at most 5, a workload in at most 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = {"accelerator": 2, "connector": 5, "workload": 2}


def _lists() -> dict[str, list[str]]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        kind = re.match(r"Add an? (\w+)", heading)
        if kind:
            out[kind.group(1)] = re.findall(r"^\d+\. `([^`]+)`", body, flags=re.M)
    return out


def test_every_kind_of_change_has_its_list() -> None:
    assert set(_lists()) == set(BOUNDS)


@pytest.mark.parametrize("kind", sorted(BOUNDS))
def test_each_list_is_within_its_bound_and_names_real_files(kind: str) -> None:
    files = _lists()[kind]
    assert 1 <= len(files) <= BOUNDS[kind], files
    for name in files:
        path = ROOT / name
        if "<" in name:  # a file to create: its folder exists
            assert path.parent.is_dir(), name
        else:
            assert path.is_file(), name
