"""CONTRIBUTING.md's touch lists, measured on the code: in a scratch copy of the tree the test adds a real
accelerator (an NVIDIA B200) and a real in-process connector by editing the files the list names and nothing
else, renders and checks a stack that runs each in a subprocess, and counts the code files that differ from
the tree. When the code spreads (a per-accelerator table, a branch on a name, a second registry), the copy
fails to render or the policy pack misreads what it runs, and this test fails (issue 31: an accelerator in at
most 2 code files, an in-process connector in at most 3)."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = {"accelerator": 2, "connector": 3, "workload": 2}
# What the copy needs to render and check a preset: the program and its project files.
PROGRAM = ("components", "stacks", "policies", "__main__.py", "Pulumi.yaml", "pyproject.toml")


def _lists() -> dict[str, list[str]]:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    out: dict[str, list[str]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        kind = re.match(r"Add an? (\w+)", heading)
        if kind:
            out[kind.group(1)] = re.findall(r"^\d+\. `([^`]+)`", body, flags=re.M)
    return out


def _insert(path: Path, anchor: str, text: str, before: bool = False) -> None:
    """Add `text` beside the one occurrence of `anchor` (the place CONTRIBUTING.md says the entry goes)."""
    source = path.read_text()
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved"
    path.write_text(source.replace(anchor, text + anchor if before else anchor + text))


def _add_b200(tree: Path) -> None:
    _insert(
        tree / "components/catalog/accelerators.py",
        '        AcceleratorProfile(\n            key="amd",',
        """        AcceleratorProfile(
            key="b200",
            memory_bandwidth=8e12,  # B200 data sheet: 8 TB/s HBM3e
            vendor="nvidia",
            variant="gpu",
            reference_hardware="NVIDIA B200 180 GB",
            vllm_image=versions.VLLM_CUDA_IMAGE,
            device_resource="nvidia.com/gpu",
            device_memory=ByteSize(183_359 * MiB),
            device_memory_from="nvidia-smi on a B200: 183,359 MiB",
            load=_H100_LOAD,
            warm_compile_ratio=_GPU_WARM_COMPILE,
            rates=AcceleratorRates(
                Figure(2250 * TFLOPS, "NVIDIA HGX B200 data sheet: 4.5 PFLOPS bf16 with sparsity, half dense"),
                H200_PREFILL,
                HostLink("PCIe Gen5 x16", PCIE5_X16, "the H200 curve: the B200 links at PCIe Gen5 x16", assumed=True),
            ),
        ),
""",
        before=True,
    )
    _insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
        '    ("b200", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
    )


def _add_connector(tree: Path) -> None:
    """An in-process connector: vLLM's OffloadingConnector under another key (what a new connector that
    differs in its flags would start from)."""
    (tree / "components/specs/connectors/fixture_offload.py").write_text(
        '"""A fixture connector: the native OffloadingConnector under its own key."""\n\n'
        "from __future__ import annotations\n\n"
        "from components.specs.connectors.native import Native\n\n\n"
        "class FixtureOffload(Native):\n"
        '    key = "fixture-offload"\n\n\n'
        "FIXTURE_OFFLOAD = FixtureOffload()\n"
    )
    registry = tree / "components/specs/connectors/__init__.py"
    _insert(
        registry,
        "from components.specs.connectors.lmcache_connector import LMCACHE_CONNECTOR\n",
        "from components.specs.connectors.fixture_offload import FIXTURE_OFFLOAD\n",
        before=True,
    )
    _insert(registry, '"mooncake-store", "lmcache-server"', ', "fixture-offload"')  # ConnectorKey, the config's Literal
    _insert(registry, '    "lmcache-server": LMCACHE_SERVER,\n', '    "fixture-offload": FIXTURE_OFFLOAD,\n')
    _insert(
        tree / "components/catalog/support.py",
        '    ("gpu", "vllm", "native", "cpu", "single-host"): _NATIVE_GPU,\n',
        '    ("gpu", "vllm", "fixture-offload", "cpu", "single-host"): _NATIVE_GPU,\n',
    )


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


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PROGRAM:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=ignore)
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


def _changed(tree: Path) -> list[str]:
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


def _probe(tree: Path, preset: str, *overrides: str) -> dict[str, list[list[object]]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, preset, *overrides],
        cwd=tree,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[list[object]]] = json.loads(done.stdout)
    return result


def _listed(kind: str, changed: list[str]) -> None:
    """The files the change touched are the list CONTRIBUTING.md gives, within the bound."""
    listed = [re.sub(r"<name>", "fixture_offload", name) for name in _lists()[kind]]
    assert changed == sorted(listed), (changed, listed)
    assert len(changed) <= BOUNDS[kind]


CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "accelerator": (_add_b200, ("cache.accelerator=b200",)),
    "connector": (_add_connector, ("cache.connector=fixture-offload",)),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_new_one_touches_the_files_its_list_names_and_runs(kind: str, tmp_path: Path) -> None:
    edit, overrides = CASES[kind]
    tree = _copy(tmp_path)
    edit(tree)
    changed = _changed(tree)
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
