"""Autoscaling through KEDA, as the plan, the render and the change plan carry it (the HPA arithmetic and
the ScaledObject's shape are in tests/test_hpa.py and tests/test_keda.py)."""

from __future__ import annotations

import pytest

from components.formulas import hpa
from components.specs import keda
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.plan import StackPlan, plan
from stacks.plan_autoscaling import Autoscaling
from stacks.review.diff import diff_renders
from tests.helpers import by_kind, manifests, rendered, resources, validate

ON = ("autoscaling.enabled=true",)
POOL = "gke-h100-lustre"  # one a3-highgpu-8g node: 4 pods of TP 2 by devices


def _plan(name: str, *sets: str) -> StackPlan:
    return plan(loading.load_preset(name, [*ON, *sets]))


def _auto(name: str, *sets: str) -> Autoscaling:
    auto = _plan(name, *sets).autoscaling
    assert auto is not None
    return auto


def test_off_by_default_adds_nothing() -> None:
    off = rendered(POOL)
    assert not [m for m in manifests(off) if m["apiVersion"].startswith("keda.sh/")]
    assert all(not r.get("options", {}).get("ignoreChanges") for r in resources(off))
    assert "featureGates" not in str(plan(loading.load_preset(POOL)).router_values)


def test_max_replicas_defaults_to_what_the_pool_holds_and_one_more_is_one_line() -> None:
    auto = _plan(POOL).autoscaling
    assert auto is not None and auto.max_replicas == 4
    assert "4 pods a node (4 by devices) / 1 pods a replica" in auto.max_from
    assert _auto(POOL, "autoscaling.max_replicas=4").max_replicas == 4
    with pytest.raises(ConfigError) as error:
        _plan(POOL, "autoscaling.max_replicas=5")
    assert str(error.value).count("\n") == 0
    assert "autoscaling.max_replicas = 5" in str(error.value) and "above the 4 replicas the pool holds" in str(
        error.value
    )


def test_memory_can_hold_the_pool_below_its_devices() -> None:
    """A CPU tier so large that two pods fill a node's memory: the pool holds two replicas, not four."""
    auto = _plan(POOL, "cache.tier.cpu=700GiB").autoscaling
    assert auto is not None and auto.max_replicas < 4 and "by memory" in auto.max_from


def test_without_a_pool_the_most_is_required() -> None:
    with pytest.raises(ConfigError, match=r"autoscaling\.max_replicas = None: needs a value where cache\.node_pool"):
        _plan("gpu-vllm-native-cpu")
    assert _auto("gpu-vllm-native-cpu", "autoscaling.max_replicas=6").max_replicas == 6


def test_the_initial_count_lies_within_the_bounds() -> None:
    with pytest.raises(
        ConfigError, match=r"cache\.replicas = 1: the initial count must lie within autoscaling's 2\.\.4"
    ):
        _plan(POOL, "autoscaling.min_replicas=2", "cache.replicas=1")


def test_a_scaled_object_per_role_after_the_router_and_its_workload() -> None:
    stack_plan = _plan("gpu-vllm-lmcache-server-pd", "autoscaling.max_replicas=2")
    scalers = {k: w for k, w in stack_plan.workloads.items() if w.type == keda.WORKLOAD}
    assert set(scalers) == {"autoscaling-prefill", "autoscaling"}
    for key, scaler in scalers.items():
        server_key = key.replace("autoscaling", "model-server")
        assert scaler.needs == ("router", server_key)
        [scaled] = by_kind(scaler.manifests, "ScaledObject")
        validate(scaled)
        target = stack_plan.workloads[server_key].manifests[-1]
        assert scaled["spec"]["scaleTargetRef"]["name"] == target["metadata"]["name"]
        # P/D creates no InferencePool: the queries name the namespace alone.
        assert all("inference_pool" not in t["metadata"]["query"] for t in scaled["spec"]["triggers"])


def test_the_router_exports_the_queue_it_scales_on_and_pulumi_leaves_the_replicas_to_keda() -> None:
    on = rendered(POOL, ON)
    assert "flowControl" in str(plan(loading.load_preset(POOL, list(ON))).router_values)
    [deployment] = [r for r in resources(on) if r["type"] == "kubernetes:apps/v1:Deployment" and "decode" in r["name"]]
    assert deployment["options"]["ignoreChanges"] == ["spec.replicas"]
    [scaled] = by_kind(manifests(on), "ScaledObject")
    assert 'inference_pool="tiered-prefix-cache"' in scaled["spec"]["triggers"][0]["metadata"]["query"]


def test_gke_managed_prometheus_is_read_with_the_operators_identity() -> None:
    stack_plan = _plan(POOL, "monitoring.provider=gke-managed-prometheus")
    [scaler] = [w for w in stack_plan.workloads.values() if w.type == keda.WORKLOAD]
    auth, scaled = scaler.manifests
    assert auth["kind"] == "TriggerAuthentication" and auth["spec"]["podIdentity"]["provider"] == "gcp"
    assert scaled["spec"]["triggers"][0]["authenticationRef"]["name"] == auth["metadata"]["name"]
    assert "monitoring.googleapis.com/v1/projects/" in scaled["spec"]["triggers"][0]["metadata"]["serverAddress"]


def test_a_replica_change_under_autoscaling_is_no_step_and_says_who_owns_it() -> None:
    before, after = rendered(POOL, ON), rendered(POOL, (*ON, "cache.replicas=3"))
    text = diff_renders(POOL, before.resources, after.resources)
    plan_lines = [line for line in text.split("#### Field diff")[0].splitlines() if line.startswith("- ")]
    ignored = [line for line in plan_lines if line.startswith("- **ignored**")]
    assert ignored and all("`spec.replicas` left to its owner" in line for line in ignored)
    assert not [line for line in plan_lines if not line.startswith("- **ignored**")]


def test_the_scale_down_window_grows_with_the_modeled_cold_start() -> None:
    fast = _plan(POOL, "cache.model=Qwen/Qwen3-8B").autoscaling
    slow = _plan(POOL).autoscaling  # Qwen3-32B: four times the weights to read and load
    assert fast is not None and slow is not None and slow.cold_start_s > fast.cold_start_s
    assert slow.behavior.scale_down.stabilization_s > fast.behavior.scale_down.stabilization_s
    assert slow.behavior.scale_down.stabilization_s == min(hpa.MAX_STABILIZATION_S, 2 * slow.cold_start_s)
    upstream = _plan(POOL, "autoscaling.scale_down=upstream").autoscaling
    assert upstream is not None and upstream.behavior == hpa.UPSTREAM_BEHAVIOR


def test_the_summary_shows_the_bounds_the_scale_down_and_the_replay() -> None:
    summary = rendered(POOL, ON).summary
    section = summary.split("## Autoscaling")[1].split("\n## ")[0]
    for row in (
        "| max_replicas from | 1 nodes of node pool h100",
        "| scale-down | window",
        "| peak queue |",
        "| warm CPU tier dropped on the way down |",
        "| first added replica serves |",
    ):
        assert row in section
    assert "## Autoscaling" not in rendered(POOL).summary
