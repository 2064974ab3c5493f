"""`stacks diff`: a tier-size change shows exactly the fields it moves, and nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stacks.review.diff import dependency_changes, diff_renders
from stacks.review.field_changes import changed_fields
from tests.helpers import rendered

ROOT = Path(__file__).resolve().parents[1]
PRESET = "gpu-vllm-native-cpu"
DEPLOYMENT = ("kubernetes:apps/v1:Deployment", "llmd-model-server-gpu-vllm-decode")
CHART = ("kubernetes:helm.sh/v4:Chart", "llmd-router-chart")
CONTAINER = "inputs.spec.template.spec.containers[0]"
EXPECTED_PATHS = {
    f"{CONTAINER}.args[4]",  # the connector JSON: cpu_bytes_to_use
    f"{CONTAINER}.resources.limits.memory",
    f"{CONTAINER}.resources.requests.memory",
    "inputs.spec.template.spec.volumes[0].emptyDir.sizeLimit",  # /dev/shm
    "inputs.values.router.epp.pluginsConfig.plugins[2].parameters.lruCapacityPerServer",
    "inputs.metadata.annotations.llm-d.ai/cpu-tier-bytes",  # the workload's stamp of the tier one pod holds
}


def test_changed_fields_lists_leaves_that_differ() -> None:
    assert changed_fields({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 2, "c": [1, 2, 3]}}) == [
        ("a.b", 1, 2),
        ("a.c[2]", None, 3),
    ]


def test_tier_change_moves_exactly_tier_memory_and_router_capacity() -> None:
    old = rendered(PRESET).resources
    new = rendered(PRESET, ("cache.tier.cpu=200GiB",)).resources
    text = diff_renders(PRESET, old, new)
    changed = [line for line in text.split("#### Field diff")[1].splitlines() if line.startswith("- ")]
    assert changed == [f"- changed `{DEPLOYMENT[0]}` **{DEPLOYMENT[1]}**", f"- changed `{CHART[0]}` **{CHART[1]}**"]
    paths = {line.split("`")[1] for line in text.splitlines() if line.startswith("  - ")}
    assert paths == EXPECTED_PATHS
    assert "`19200` → `12800`" in text
    assert "`340Gi` → `240Gi`" in text
    assert diff_renders(PRESET, old, old) == ""


def test_diff_between_two_git_revisions(tmp_path: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in tracked:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]

    def commit(message: str) -> None:
        subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
        subprocess.run([*git, "commit", "-qm", message], cwd=tmp_path, check=True)

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    # the pinned Helm the change plan expands the router chart with, beside the copy (never committed)
    (tmp_path / ".tools").symlink_to(ROOT / ".tools")
    with (tmp_path / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("/.tools\n")
    commit("base")
    preset = tmp_path / "stacks" / "presets" / f"{PRESET}.yaml"
    text = preset.read_text()
    assert "    variant: cpu\n" in text
    preset.write_text(text.replace("    variant: cpu\n", "    variant: cpu\n    cpu: 200GiB\n"))
    commit("smaller tier")
    result = subprocess.run(
        [sys.executable, "-m", "stacks", "diff", "--base", "HEAD~1", "--head", "HEAD", PRESET, "dev"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"### {PRESET}" in result.stdout
    assert "### dev" not in result.stdout  # unchanged stacks stay out of the comment
    paths = {line.split("`")[1] for line in result.stdout.splitlines() if line.startswith("  - ")}
    assert paths == EXPECTED_PATHS


def _plan(name: str, override: str) -> list[str]:
    text = diff_renders(name, rendered(name).resources, rendered(name, (override,)).resources)
    plan, _ = text.split("#### Field diff")
    assert "#### Change plan" in plan  # the plan comes above the field diff
    return [line for line in plan.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize(
    "override",
    ["cache.model=Qwen/Qwen3-8B", "cache.tier.cpu=200GiB", "cache.image=docker.io/vllm/vllm-openai:v0.27.0"],
)
def test_model_tier_and_image_changes_roll_the_model_servers_and_replace_nothing(override: str) -> None:
    plan = _plan(PRESET, override)
    assert any(line.startswith("- **rolling**") and DEPLOYMENT[1] in line for line in plan)
    assert "maxSurge 0, maxUnavailable 1" in next(line for line in plan if DEPLOYMENT[1] in line)
    assert not [line for line in plan if line.startswith(("- **removed**", "- **added**"))]
    # The one replacement, seen under the real engine (`./run e2e`): a change that reaches the router's values
    # replaces the chart's EPP ConfigMap (its data is force-new) and rolls the EPP; nothing with state.
    replaced = [line for line in plan if line.startswith("- **replace**")]
    assert all("ConfigMap` llmd-router-chart:" in line and "storage at risk" not in line for line in replaced)
    if override.startswith("cache.image"):
        assert replaced == []  # the router's values do not name the model servers' image


def test_a_replica_change_scales_in_place() -> None:
    plan = _plan(PRESET, "cache.replicas=3")
    assert f"- **scale** `{DEPLOYMENT[0]}` {DEPLOYMENT[1]}: in place, 2 → 3 replicas; no pod restarts" in plan
    assert not [line for line in plan if line.startswith(("- **replace**", "- **rolling**"))]


def test_a_storage_size_change_grows_the_claim_in_place() -> None:
    """The engine's plan (`./run e2e gpu-vllm-native-fs`): a larger claim is an update, not a replacement; a
    new StorageClass still replaces it, which `protect` refuses."""
    plan = _plan("gpu-vllm-native-fs", "storage.size=18000Gi")
    [claim] = [line for line in plan if "PersistentVolumeClaim" in line]
    assert claim.startswith("- **update**") and "allows expansion" in claim
    moved = _plan("gpu-vllm-native-fs", "storage.storage_class=premium-rwx")
    [claim] = [line for line in moved if "PersistentVolumeClaim" in line]
    assert claim.startswith("- **replace** **storage at risk**")
    assert "`spec.storageClassName` forces a replacement, which `protect` refuses" in claim


def test_an_unprotected_replacement_with_a_fixed_name_deletes_first() -> None:
    old, new = (
        rendered("gpu-vllm-native-fs", ("protect=false",)).resources,
        rendered("gpu-vllm-native-fs", ("protect=false", "storage.storage_class=premium-rwx")).resources,
    )
    plan = diff_renders("x", old, new).split("#### Field diff")[0]
    [claim] = [line for line in plan.splitlines() if "PersistentVolumeClaim" in line]
    assert "delete-first: `spec.storageClassName` cannot change in place" in claim


def test_dependencies_show_as_added_and_removed_not_as_shifted_positions() -> None:
    assert dependency_changes(["a", "b", "c"], ["x", "a", "b", "c"]) == ["+ `x`"]
    assert dependency_changes(["a", "b"], ["b"]) == ["- `a`"]
    assert dependency_changes(["a", "b"], ["b", "a"]) == []
    text = diff_renders("existing-mi300", rendered("existing-mi300", ("images.prepull=false",)).resources,
                        rendered("existing-mi300").resources)  # fmt: skip
    assert "  - dependsOn: + `kubernetes:apps/v1:DaemonSet::llmd-image-prepull-image-prepull`" in text
    assert "dependsOn[" not in text


def test_a_surge_of_smaller_pods_beside_old_ones_that_filled_the_pool_may_stall() -> None:
    """Seen under the real engine and scheduler (`./run e2e existing-mi300`): from `cache.tier.cpu: auto`
    (two pods filling the node's memory, no surge) to a 6 GiB tier, the new strategy surges, and the
    small surge pod stayed Pending beside the two large old ones until the await budget ran out."""
    plan = _plan("existing-mi300", "cache.tier.cpu=6GiB")
    (server,) = [line for line in plan if line.startswith("- **rolling**") and "amd-vllm-decode" in line]
    assert "maxSurge 1, maxUnavailable 0" in server and "**may stall**" in server
    assert not [
        line for line in _plan("existing-mi300", "cache.image=docker.io/rocm/vllm:v0.27.0") if "may stall" in line
    ]
