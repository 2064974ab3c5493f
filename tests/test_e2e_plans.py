"""`stacks diff`'s change plan held to the plans the real engine made for the same changes (`./run e2e dev`,
recorded in tests/fixtures/e2e/), resource by resource, without the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from e2e import compare
from stacks.review.diff import change_plan
from tests.helpers import rendered

FIXTURES = Path(__file__).parent / "fixtures"
PLANS = json.loads((FIXTURES / "e2e" / "dev-engine-plans.json").read_text())
CHART = FIXTURES / "upstream" / "charts" / "llm-d-router-standalone-v0.10.0.tgz"
# What ./run e2e sets besides the preset (the kubeconfig is the provider's alone and changes nothing here).
E2E = (f"router.chart_file={CHART}", "router.version=v0.10.0")


def _override(case: dict[str, str]) -> str:
    return f"{case['key'].removeprefix('llmd:')}={case['value']}"


# The run applies the first four one after another, then previews the last two from the fourth's state.
APPLIED = ["tier-size", "replicas", "image", "model"]
CASES = [(name, APPLIED[:i]) for i, name in enumerate(APPLIED)] + [
    ("release-name", APPLIED),
    ("namespace", APPLIED),
]


@pytest.mark.parametrize(("name", "before"), CASES, ids=[c[0] for c in CASES])
def test_the_change_plan_agrees_with_the_engine(name: str, before: list[str]) -> None:
    base = (*E2E, *(_override(PLANS[b]) for b in before))
    old, new = rendered("dev", base).resources, rendered("dev", (*base, _override(PLANS[name]))).resources
    assert compare.compare_plans(PLANS[name]["steps"], change_plan(old, new)) == []


def test_the_engine_replaced_the_epps_config_on_a_tier_change() -> None:
    """The case that taught the change plan about the chart's own objects."""
    kinds = {compare.urn_key(s["urn"]): s["op"] for s in PLANS["tier-size"]["steps"]}
    config_map = ("kubernetes:core/v1:ConfigMap", "llmd-router-chart:llm-d-tiered-prefix-cache/tiered-prefix-cache-epp")
    assert kinds[config_map] == "replace"
    epp = ("kubernetes:apps/v1:Deployment", "llmd-router-chart:llm-d-tiered-prefix-cache/tiered-prefix-cache-epp")
    assert kinds[epp] == "update"  # it rolls: the values' digest on its pod template changed
