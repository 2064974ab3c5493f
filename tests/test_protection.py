"""Protected state, cloud create timeouts, and the options resources.json records for reviewers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.catalog.cloud_resources import CLOUD_RESOURCES
from stacks.config import loading
from tests.helpers import rendered, resources

PRESETS = loading.preset_names()
STATE = {
    "gcp:lustre/instance:Instance": "the Lustre instance",
    "kubernetes:core/v1:PersistentVolume": "the Lustre volume",
    "aws:efs/fileSystem:FileSystem": "the EFS file system",
    "gcp:container/cluster:Cluster": "a created GKE cluster",
    "aws:eks/cluster:Cluster": "a created EKS cluster",
}
CLAIM = "llm-d-kv-cache-storage"


def _state(name: str, overrides: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rows = resources(rendered(name, overrides))
    return [
        r
        for r in rows
        if r["type"] in STATE
        or (r["type"] == "kubernetes:core/v1:PersistentVolumeClaim" and str(r["name"]).endswith(CLAIM))
    ]


@pytest.mark.parametrize("name", PRESETS)
def test_lustre_efs_the_tier_claim_and_created_clusters_are_protected(name: str) -> None:
    state = _state(name)
    config = loading.load_preset(name)
    expected = {
        "gcp:lustre/instance:Instance": config.storage.backend == "gcp-lustre",
        "aws:efs/fileSystem:FileSystem": config.storage.backend == "aws-efs",
        "kubernetes:core/v1:PersistentVolumeClaim": config.cache.tier.variant == "fs"
        and config.cache.connector != "mooncake-store",
        "gcp:container/cluster:Cluster": config.cluster.provider == "gke",
        "aws:eks/cluster:Cluster": config.cluster.provider == "eks",
    }
    assert {t for t, present in expected.items() if present} <= {str(r["type"]) for r in state}
    for row in state:
        assert row["options"].get("protect") is True, row["name"]


@pytest.mark.parametrize("name", ["gke-h100-lustre", "eks-h100-efs"])
def test_protect_false_removes_the_protection_on_purpose(name: str) -> None:
    state = _state(name, ("protect=false",))
    assert state
    assert all("protect" not in row["options"] for row in state)


def test_gke_clusters_carry_deletion_protection_unless_switched_off() -> None:
    def cluster(overrides: tuple[str, ...]) -> dict[str, Any]:
        rows = resources(rendered("gke-h100-lustre", overrides))
        inputs: dict[str, Any] = next(r for r in rows if r["type"] == "gcp:container/cluster:Cluster")["inputs"]
        return inputs

    assert cluster(())["deletionProtection"] is True
    assert cluster(("protect=false",))["deletionProtection"] is False


def _minutes(text: str) -> int:
    match = re.fullmatch(r"(\d+)m", text)
    assert match, text
    return int(match.group(1))


@pytest.mark.parametrize("name", ["gke-h100-lustre", "eks-h100-efs", "gke-tpu-v7-multi-host"])
def test_slow_cloud_creations_get_a_create_timeout_above_their_worst_case(name: str) -> None:
    rows = resources(rendered(name))
    worst = {t: r.create_worst_seconds for t, r in CLOUD_RESOURCES.items() if r.create_worst_seconds}
    slow = [r for r in rows if r["type"] in worst]
    assert slow
    for row in slow:
        timeout = _minutes(row["options"]["customTimeouts"]["create"])
        assert timeout * 60 > worst[row["type"]], row["name"]
    lustre = [r for r in slow if r["type"] == "gcp:lustre/instance:Instance"]
    assert all(_minutes(r["options"]["customTimeouts"]["create"]) > 80 for r in lustre)  # P99 80 minutes


def test_no_kubernetes_object_asks_to_be_deleted_before_it_is_replaced() -> None:
    """pulumi-kubernetes deletes first by itself where a fixed name forces it; nothing else should."""
    for name in PRESETS:
        for row in resources(rendered(name)):
            assert "deleteBeforeReplace" not in row["options"], (name, row["name"])


def test_each_cloud_resource_record_is_of_a_type_the_reviewed_renders_create() -> None:
    """components/catalog/cloud_resources.py holds a record per type it knows facts of: none is stale."""
    golden = Path(__file__).resolve().parent / "golden"
    created = {row["type"] for path in golden.glob("*/resources.json") for row in json.loads(path.read_text())}
    assert set(CLOUD_RESOURCES) <= created, set(CLOUD_RESOURCES) - created
    assert {t for t, r in CLOUD_RESOURCES.items() if r.protected} == {
        "gcp:lustre/instance:Instance",
        "aws:efs/fileSystem:FileSystem",
        "gcp:container/cluster:Cluster",
        "aws:eks/cluster:Cluster",
    }
