"""CONTRIBUTING.md's touch lists, measured on the code: in a scratch copy of the tree the test adds a real
accelerator (an NVIDIA B200) and a real in-process connector by editing the files the list names and nothing
else, renders and checks a stack that runs each in a subprocess, and counts the code files that differ from
the tree. When the code spreads (a per-accelerator table, a branch on a name, a second registry), the copy
fails to render or the policy pack misreads what it runs, and this test fails (issue 31: an accelerator in at
most 2 code files, an in-process connector in at most 3)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.contributions import add_b200, add_connector
from tests.scratch_tree import ROOT, changed_files, copy_tree, run_json

BOUNDS = {"accelerator": 2, "connector": 3, "workload": 2}


def _lists() -> dict[str, list[str]]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        kind = re.match(r"Add an? (\w+)", heading)
        if kind:
            out[kind.group(1)] = re.findall(r"^\d+\. `([^`]+)`", body, flags=re.M)
    return out


# Renders and checks one preset in the copy; prints what the policy pack reads of the model servers.
PROBE = """
import json, sys
from components.catalog.labels import ACCELERATOR_PROFILE_LABEL, KV_CONNECTOR_LABEL
from policies.checks.inventory import accelerator_of
from policies.resources import Resource, pods
from stacks.config import loading
from stacks.planning.plan import plan
from stacks.review import offline
from stacks.review.check import check
recording = offline.record(plan(loading.load_preset(sys.argv[1], sys.argv[2:])), sys.argv[1])
resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
servers = [
    [p.labels.get(ACCELERATOR_PROFILE_LABEL), p.labels.get(KV_CONNECTOR_LABEL), accelerator_of(resources, p, c)]
    for p in pods(resources) for c in p.containers(init=False) if c.get("name") == "modelserver"
]
findings = [[f.rule.name, f.rule.enforcement, f.violation.message] for f in check(recording)]
print(json.dumps({"servers": servers, "findings": findings}))
"""


def _probe(tree: Path, preset: str, *overrides: str) -> dict[str, list[list[object]]]:
    result: dict[str, list[list[object]]] = run_json(tree, PROBE, preset, *overrides)
    return result


def _listed(kind: str, changed: list[str]) -> None:
    """The files the change touched are the list CONTRIBUTING.md gives, within the bound."""
    listed = [re.sub(r"<name>", "fixture_offload", name) for name in _lists()[kind]]
    assert changed == sorted(listed), (changed, listed)
    assert len(changed) <= BOUNDS[kind]


CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "accelerator": (add_b200, ("cache.accelerator=b200",)),
    "connector": (add_connector, ("cache.connector=fixture-offload",)),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_new_one_touches_the_files_its_list_names_and_runs(kind: str, tmp_path: Path) -> None:
    edit, overrides = CASES[kind]
    tree = copy_tree(tmp_path)
    edit(tree)
    changed = changed_files(tree)
    _listed(kind, changed)
    result = _probe(tree, "gpu-vllm-native-cpu", *overrides)
    mandatory = [f for f in result["findings"] if f[1] == "mandatory"]
    assert mandatory == []
    accelerator, connector = ("b200", "native") if kind == "accelerator" else ("gpu", "fixture-offload")
    # the policy pack reads the new one by its own key (not the H100, not the native connector it derives from)
    assert result["servers"] == [[accelerator, connector, [accelerator, 2]]]
    for _, _, message in result["findings"]:  # an advisory payoff finding judges it by its own profile
        assert f" x {accelerator} " in str(message)


def test_the_workload_list_names_real_files() -> None:
    files = _lists()["workload"]
    assert 1 <= len(files) <= BOUNDS["workload"], files
    for name in files:
        path = ROOT / name
        assert path.parent.is_dir() if "<" in name else path.is_file(), name


def test_every_kind_of_change_has_its_list() -> None:
    assert set(_lists()) == set(BOUNDS)
