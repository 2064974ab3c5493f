"""The e2e's seeded tier violation: each model server's CPU-tier stamp halved, and the pack's rule firing on
exactly the stacks whose router sizes its index by that tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.catalog import labels
from e2e import seeds

GOLDEN = Path(__file__).parent / "golden"


def _deployment(stamp: object) -> dict[str, Any]:
    container = {"args": ["--kv-transfer-config", '{"kv_connector_extra_config":{"cpu_bytes_to_use":1000}}']}
    metadata = {"annotations": {labels.CPU_TIER_BYTES_ANNOTATION: stamp}} if stamp is not None else {}
    return {"kind": "Deployment", "metadata": metadata, "spec": {"template": {"spec": {"containers": [container]}}}}


def test_the_stamp_is_halved_and_the_input_left_alone() -> None:
    obj = _deployment("1001")
    out = seeds.halve_tier(obj)
    assert out is not None
    assert out["metadata"]["annotations"][labels.CPU_TIER_BYTES_ANNOTATION] == "500"
    assert obj["metadata"]["annotations"][labels.CPU_TIER_BYTES_ANNOTATION] == "1001"
    assert out["spec"] == obj["spec"]  # the connector's own setting is not what the rule reads


# No stamp, a daemon's 0, and what is not a whole number (identity-labels reports those).
@pytest.mark.parametrize("stamp", [None, "0", "-2", "1.5", 1000])
def test_a_workload_without_a_positive_stamp_is_not_changed(stamp: object) -> None:
    assert seeds.halve_tier(_deployment(stamp)) is None


@pytest.mark.parametrize(
    ("preset", "fires"),
    [("dev", True), ("existing-mi300", True), ("gpu-sglang-native-cpu", True), ("gpu-vllm-lmcache-server-pd", False)],
)
def test_the_rule_fires_on_the_halved_render_where_the_router_tracks_a_tier(preset: str, fires: bool) -> None:
    resources = (GOLDEN / preset / "resources.json").read_text()
    violations = seeds.tier_violations(resources)
    assert bool(violations) is fires
    assert all("lruCapacityPerServer" in v for v in violations)
