"""The e2e check of KEDA's replica ownership picks what the HPA would set (pure part)."""

from __future__ import annotations

from e2e.ownership import scaled_targets
from tests.helpers import manifests, rendered


def test_each_scaled_workload_is_scaled_within_its_bounds() -> None:
    objects = manifests(rendered("gpu-vllm-native-fs-autoscale"))
    assert scaled_targets(objects) == [("Deployment", "llm-d-tiered-prefix-cache", "gpu-vllm-decode", 3)]


def test_the_count_never_passes_the_maximum() -> None:
    scaled = {
        "kind": "ScaledObject",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "minReplicaCount": 1, "maxReplicaCount": 2},
    }
    assert scaled_targets([scaled]) == [("Deployment", "ns", "w", 2)]
    assert scaled_targets([{"kind": "Deployment", "metadata": {"name": "w"}}]) == []
