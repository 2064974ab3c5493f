"""CONTRIBUTING.md's touch lists, measured on the code: in a scratch copy of the tree the test adds what
contributors add (an accelerator with its own image, an in-process connector with its own image and metrics,
an existing-cluster provider variant: tests/contributions.py) by editing the files the list names and nothing
else, renders and checks a stack that runs each in a subprocess, runs the copy's own tests of the registries
(unedited: a new one needs no test edit), and counts the code files that differ from the tree. When the code
spreads (a per-accelerator table, a branch on a name, a second registry, an image size kept elsewhere), the copy
fails to render, the policy pack misreads what it runs, the copy's tests fail, or the count passes its bound
(issue 40: an accelerator in at most 2 code files, a connector in at most 3, a provider variant in at most 3)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.contributions import FIXTURE_ALERT, FIXTURE_IMAGE, MI355X_IMAGE, add_aks, add_connector, add_mi355x
from tests.scratch_tree import ROOT, changed_files, copy_tree, run_json, run_tests

BOUNDS = {"accelerator": 2, "connector": 3, "provider": 3, "workload": 2, "price": 1}
# What a list's placeholder names in each walk-through.
PLACEHOLDERS = {"connector": ("<name>", "fixture_offload"), "provider": ("<key>", "aks")}
# The copy's tests that hold every accelerator, connector and provider complete (run there, unedited).
REGISTRY_TESTS = ("tests/test_connectors.py", "tests/test_registries.py")


def _lists() -> dict[str, list[str]]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        kind = re.match(r"Add an? (\w+)", heading)
        if kind:
            out[kind.group(1)] = re.findall(r"^\d+\. `([^`]+)`", body, flags=re.M)
    return out


# Renders and checks one preset in the copy; prints what the policy pack reads of the model servers, their
# images and the alerts the stack renders.
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
models = [(p, c) for p in pods(resources) for c in p.containers(init=False) if c.get("name") == "modelserver"]
servers = [
    [p.labels.get(ACCELERATOR_PROFILE_LABEL), p.labels.get(KV_CONNECTOR_LABEL), accelerator_of(resources, p, c)]
    for p, c in models
]
alerts = [
    rule.get("alert") for r in resources if r.type.endswith(":PrometheusRule")
    for group in r.props["spec"]["groups"] for rule in group["rules"]
]
findings = [[f.rule.name, f.rule.enforcement, f.violation.message] for f in check(recording)]
print(json.dumps({
    "servers": servers, "images": sorted({c.get("image") for _, c in models}), "alerts": alerts, "findings": findings,
}))
"""


def _probe(tree: Path, preset: str, *overrides: str) -> dict[str, Any]:
    result: dict[str, Any] = run_json(tree, PROBE, preset, *overrides)
    return result


def _listed(kind: str, changed: list[str]) -> None:
    """The files the change touched are the list CONTRIBUTING.md gives, within the bound."""
    placeholder, value = PLACEHOLDERS.get(kind, ("", ""))
    listed = [name.replace(placeholder, value) if placeholder else name for name in _lists()[kind]]
    assert changed == sorted(listed), (changed, listed)
    assert len(changed) <= BOUNDS[kind]


# kind: (the edit, the overrides of gpu-vllm-native-cpu that run it, the accelerator and connector keys its pods
# carry, the model server's image)
CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...], tuple[str, str], str]] = {
    "accelerator": (add_mi355x, ("cache.accelerator=mi355x",), ("mi355x", "native"), MI355X_IMAGE),
    "connector": (
        add_connector,
        ("cache.connector=fixture-offload", "monitoring.enabled=true"),
        ("gpu", "fixture-offload"),
        FIXTURE_IMAGE,
    ),
    "provider": (add_aks, ("cluster.provider=aks",), ("gpu", "native"), "docker.io/vllm/vllm-openai"),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_new_one_touches_the_files_its_list_names_and_runs(kind: str, tmp_path: Path) -> None:
    edit, overrides, (accelerator, connector), image = CASES[kind]
    tree = copy_tree(tmp_path, with_tests=True)
    edit(tree)
    changed = changed_files(tree)
    _listed(kind, changed)
    result = _probe(tree, "gpu-vllm-native-cpu", *overrides)
    mandatory = [f for f in result["findings"] if f[1] == "mandatory"]
    assert mandatory == []
    # the policy pack reads the new one by its own key (not the H100, not the native connector it derives from)
    assert result["servers"] == [[accelerator, connector, [accelerator, 2]]]
    for _, _, message in result["findings"]:  # an advisory payoff finding judges it by its own profile
        assert f" x {accelerator} " in str(message)
    [served] = result["images"]
    assert str(served).startswith(image), served  # its own image where it brings one
    if kind == "connector":
        assert FIXTURE_ALERT in result["alerts"]  # its own metric family's alert, rendered beside vLLM's
    outcome = run_tests(tree, *REGISTRY_TESTS)  # the copy's own tests, unedited
    assert outcome.returncode == 0, outcome.stdout[-3000:]


def test_the_workload_list_names_real_files() -> None:
    files = _lists()["workload"]
    assert 1 <= len(files) <= BOUNDS["workload"], files
    for name in files:
        path = ROOT / name
        assert path.parent.is_dir() if "<" in name else path.is_file(), name


def test_every_kind_of_change_has_its_list() -> None:
    assert set(_lists()) == set(BOUNDS)
