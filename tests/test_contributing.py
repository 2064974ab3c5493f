"""CONTRIBUTING.md's touch lists, measured on the code: in a scratch copy of the tree the test adds what contributors
add (an accelerator with its own image; the B200 on a created GKE pool with its machine type and price row; an
in-process connector with its own tier setting, image, metrics and preset; an existing-cluster provider variant; a
storage backend a cloud creates: tests/contributions.py) by editing the files the list names and nothing else,
renders and checks a stack that runs each in a subprocess, runs the copy's own tests (unedited: a new one needs no
test edit), and counts the code files that differ from the tree: the count each list's heading states. When the code
spreads (a per-accelerator table, a branch on a name, a second registry, an image size kept elsewhere, a rule that
reads a connector's own settings, a metric list kept by hand), the copy fails to render, the policy pack misreads
what it runs, the copy's tests fail, or the count passes its bound."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.contributions import (
    B200_MACHINE,
    B200_PRICE,
    FIXTURE_ALERT,
    FIXTURE_IMAGE,
    FIXTURE_METRICS,
    FIXTURE_PRESET,
    FIXTURE_TIER_SETTING,
    FSX_KEY,
    MI355X_IMAGE,
    add_aks,
    add_b200_pool,
    add_connector,
    add_fsx_lustre,
    add_mi355x,
)
from tests.scratch_tree import ROOT, changed_files, copy_tree, run_json, run_tests

BOUNDS = {"accelerator": 2, "pool": 4, "connector": 3, "provider": 3, "backend": 4, "price": 1, "workload": 2}
# What a list's placeholder names in each walk-through.
PLACEHOLDERS = {"connector": ("<name>", "fixture_offload"), "provider": ("<key>", "aks"), "backend": ("<cloud>", "eks")}
# The copy's tests that hold every accelerator, connector and provider complete (run there, unedited).
REGISTRY_TESTS = ("tests/test_connectors.py", "tests/test_registries.py")
# The copy's tests that run every preset, on the connector's own (unedited): every mandatory rule sees its CPU tier
# (the router's index and the memory limit against its stamp), its alerts read metrics its engine defines, and the
# engine accepts its kv-transfer config.
PRESET_TESTS = ("tests/test_cpu_tier_stamp.py", "tests/test_observability.py", "tests/test_engine_contracts.py")


def _lists() -> dict[str, list[str]]:
    return {kind: files for kind, (_, files) in _sections().items()}


def _sections() -> dict[str, tuple[int, list[str]]]:
    """Each touch list: (the code files its heading says it takes, the files it lists)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out: dict[str, tuple[int, list[str]]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        kind = re.match(r"Add an? (\w+)[^(]*\((\d+) code files?", heading)
        if kind:
            out[kind.group(1)] = (int(kind.group(2)), re.findall(r"^\d+\. `([^`]+)`", body, flags=re.M))
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
from policies.resources import kv_transfer_config
stack_plan = plan(loading.load_preset(sys.argv[1], sys.argv[2:]))
recording = offline.record(stack_plan, sys.argv[1])
resources = [Resource(r.type, r.name, r.inputs) for r in recording.resources]
models = [(p, c) for p in pods(resources) for c in p.containers(init=False) if c.get("name") == "modelserver"]
extras = [(kv_transfer_config(c) or {}).get("kv_connector_extra_config") or {} for _, c in models]
settings = sorted({key for extra in extras for key in extra})
servers = [
    [p.labels.get(ACCELERATOR_PROFILE_LABEL), p.labels.get(KV_CONNECTOR_LABEL), accelerator_of(resources, p, c)]
    for p, c in models
]
alerts = [
    rule.get("alert") for r in resources if r.type.endswith(":PrometheusRule")
    for group in r.props["spec"]["groups"] for rule in group["rules"]
]
findings = [[f.rule.name, f.rule.enforcement, f.violation.message] for f in check(recording)]
claims = [r.props["spec"].get("storageClassName") for r in resources if r.type.endswith(":PersistentVolumeClaim")]
cost = stack_plan.cost
print(json.dumps({
    "servers": servers, "images": sorted({c.get("image") for _, c in models}), "alerts": alerts, "findings": findings,
    "settings": settings, "priced": [[line.price.item, line.usd_per_hour] for line in cost.lines],
    "unpriced": [u.what for u in cost.unpriced],
    "types": sorted({r.type for r in resources}), "claims": claims,
}))
"""


def _probe(tree: Path, preset: str, *overrides: str) -> dict[str, Any]:
    result: dict[str, Any] = run_json(tree, PROBE, preset, *overrides)
    return result


def _listed(kind: str, changed: list[str]) -> None:
    """The files the change touched are the list CONTRIBUTING.md gives, as many as its heading says, within the
    bound (no test among them: a new one needs no test edit)."""
    placeholder, value = PLACEHOLDERS.get(kind, ("", ""))
    stated, files = _sections()[kind]
    listed = [name.replace(placeholder, value) if placeholder else name for name in files]
    assert changed == sorted(listed), (changed, listed)
    assert len(changed) == stated <= BOUNDS[kind]
    assert not [name for name in changed if name.startswith("tests/")]


# kind: (the edit, the preset and overrides that run it, the accelerator and connector keys its pods carry, the
# model server's image)
CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...], tuple[str, str], str]] = {
    "accelerator": (
        add_mi355x,
        ("gpu-vllm-native-cpu", "cache.accelerator=mi355x"),
        ("mi355x", "native"),
        MI355X_IMAGE,
    ),
    "pool": (
        add_b200_pool,
        ("gke-h100-lustre", "cache.accelerator=b200", f"node_pools.h100.machine_type={B200_MACHINE}"),
        ("b200", "native"),
        "/docker-io/vllm/vllm-openai:",
    ),
    "connector": (
        add_connector,
        (FIXTURE_PRESET, "monitoring.enabled=true"),
        ("gpu", "fixture-offload"),
        FIXTURE_IMAGE,
    ),
    "provider": (
        add_aks,
        ("gpu-vllm-native-cpu", "cluster.provider=aks"),
        ("gpu", "native"),
        "docker.io/vllm/vllm-openai",
    ),
    "backend": (
        add_fsx_lustre,
        ("eks-h100-efs", f"storage.backend={FSX_KEY}", "storage.size=2400Gi"),
        ("gpu", "native"),
        "docker.io/vllm/vllm-openai",
    ),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_new_one_touches_the_files_its_list_names_and_runs(kind: str, tmp_path: Path) -> None:
    edit, stack, (accelerator, connector), image = CASES[kind]
    tree = copy_tree(tmp_path, with_tests=True)
    edit(tree)
    changed = changed_files(tree)
    _listed(kind, changed)
    result = _probe(tree, *stack)
    mandatory = [f for f in result["findings"] if f[1] == "mandatory"]
    assert mandatory == []
    # the policy pack reads the new one by its own key (not the H100, not the native connector it derives from)
    assert result["servers"] == [[accelerator, connector, [accelerator, 2]]]
    for _, _, message in result["findings"]:  # an advisory payoff finding judges it by its own profile
        assert f" x {accelerator} " in str(message)
    [served] = result["images"]
    assert image in str(served), served  # its own image where it brings one (on GKE, through the stack's mirror)
    if kind == "pool":  # its pool priced by its own row (one node), nothing of it unpriced
        assert [B200_MACHINE, B200_PRICE * 1] in result["priced"], result["priced"]
        assert not [what for what in result["unpriced"] if B200_MACHINE in what]
    if kind == "connector":
        assert FIXTURE_ALERT in result["alerts"]  # its own metric family's alert, rendered beside vLLM's
        assert result["settings"] == [FIXTURE_TIER_SETTING]  # its tier under a name of its own, nothing else
        # the copy's tests of every preset, on its own: the rule matrix, the alerts' metrics, the engine's contract
        selected = ("-k", f"{FIXTURE_PRESET} or every_connector_of_the_registry", "-v", "-v")  # -v -v: the count
        on_preset = run_tests(tree, *PRESET_TESTS, *selected)
        assert on_preset.returncode == 0, on_preset.stdout[-3000:]
        ran = re.findall(r"(\d+) passed", on_preset.stdout)
        assert ran and int(ran[-1]) >= 7, on_preset.stdout[-1000:]
    if kind == "backend":  # its own file system, created on the cloud it names; the tier's claim on its class
        assert "aws:fsx/lustreFileSystem:LustreFileSystem" in result["types"]
        assert "aws:efs/fileSystem:FileSystem" not in result["types"]
        assert "fsx-sc" in result["claims"]
    outcome = run_tests(tree, *REGISTRY_TESTS)  # the copy's own tests, unedited
    assert outcome.returncode == 0, outcome.stdout[-3000:]


def test_the_fixture_connectors_metrics_are_its_engines_not_the_seeds() -> None:
    """What makes the connector case bite: its alert and panel read vLLM metrics no seed names."""
    seeds = "\n".join(p.read_text() for p in sorted((ROOT / "tests/fixtures/upstream/seeds").glob("*.txt")))
    for metric in FIXTURE_METRICS:
        assert metric.removesuffix("_total").split(":", 1)[1] not in seeds, metric


def test_the_workload_list_names_real_files() -> None:
    files = _lists()["workload"]
    assert 1 <= len(files) <= BOUNDS["workload"], files
    for name in files:
        path = ROOT / name
        assert path.parent.is_dir() if "<" in name else path.is_file(), name


def test_every_kind_of_change_has_its_list() -> None:
    assert set(_lists()) == set(BOUNDS)
