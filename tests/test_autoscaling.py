"""Autoscaling through KEDA, as the plan, the render and the change plan carry it (the HPA arithmetic and
the ScaledObject's shape are in tests/test_hpa.py and tests/test_keda.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.catalog import versions
from components.formulas import hpa, scale_down
from components.specs import keda
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.autoscaling import Autoscaling
from stacks.planning.plan import StackPlan, plan
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
        assert scaler.needs == ("router", "cluster", server_key)
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
    cost = [line for line in plan_lines if line.startswith("- monthly cost:")]
    assert cost == ["- monthly cost: $65,305.47 -> $65,305.47 (+$0.00/month)"]  # the pools bound it, not the count
    assert not [line for line in plan_lines if not line.startswith(("- **ignored**", "- monthly cost:"))]


def test_the_scale_down_window_grows_with_the_modeled_cold_start() -> None:
    fast = _plan(POOL, "cache.model=Qwen/Qwen3-8B").autoscaling
    slow = _plan(POOL).autoscaling  # Qwen3-32B: four times the weights to read and load
    assert fast is not None and slow is not None and slow.cold_start_s > fast.cold_start_s
    assert slow.behavior.scale_down.stabilization_s > fast.behavior.scale_down.stabilization_s
    assert slow.behavior.scale_down.stabilization_s == min(hpa.MAX_STABILIZATION_S, 2 * slow.cold_start_s)
    upstream = _plan(POOL, "autoscaling.scale_down=upstream").autoscaling
    assert upstream is not None and upstream.behavior == scale_down.UPSTREAM_BEHAVIOR


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
    assert "| KEDA | installed by the stack (kedacore/keda" in section
    existing = rendered("gpu-vllm-native-fs-autoscale").summary
    assert "| KEDA | a prerequisite: KEDA 2.20.2 or later on the cluster" in existing
    assert "## Autoscaling" not in rendered(POOL).summary


def _rows(name: str, *sets: str) -> list[dict[str, Any]]:
    return resources(rendered(name, (*ON, *sets)))


def test_gke_scales_the_serving_pool_between_the_nodes_min_replicas_fill_and_all_of_them() -> None:
    [pool] = [r for r in _rows(POOL) if r["type"] == "gcp:container/nodePool:NodePool" and "h100" in r["name"]]
    assert "nodeCount" not in pool["inputs"]
    assert pool["inputs"]["initialNodeCount"] == 1
    assert pool["inputs"]["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 1, "locationPolicy": "ANY"}
    off = [
        r for r in resources(rendered(POOL)) if r["type"] == "gcp:container/nodePool:NodePool" and "h100" in r["name"]
    ]
    assert off[0]["inputs"]["nodeCount"] == 1 and "autoscaling" not in off[0]["inputs"]


def test_a_tpu_slice_scales_whole() -> None:
    stack_plan = _plan("gke-tpu-v7-multi-host")
    bounds = [p.bounds for p in stack_plan.pools if p.bounds]
    assert [(b.min_nodes, b.max_nodes) for b in bounds] == [(2, 2), (0, 2), (0, 2)]  # min_replicas 1: one slice held


def test_keda_runs_hardened_behind_its_network_policy_on_a_created_cluster() -> None:
    rows = _rows(POOL)
    [chart] = [r for r in rows if r["type"] == "kubernetes:helm.sh/v4:Chart" and r["name"] == "llmd-keda-chart"]
    assert chart["inputs"]["chart"] == versions.KEDA_CHART and chart["inputs"]["version"] == versions.KEDA_VERSION
    values = chart["inputs"]["values"]
    assert values["securityContext"]["operator"]["allowPrivilegeEscalation"] is False
    [policy] = [r for r in rows if r["type"] == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and "keda" in r["name"]]
    assert policy["inputs"]["spec"]["podSelector"] == {} and policy["inputs"]["spec"]["policyTypes"] == ["Ingress"]
    scaler = next(r for r in rows if r["type"] == "kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert any("llmd-keda" in d for d in scaler["dependsOn"])  # its CRDs exist first


def test_keda_reads_managed_prometheus_with_a_workload_identity_grant() -> None:
    rows = _rows(POOL, "monitoring.provider=gke-managed-prometheus")
    [member] = [r for r in rows if r["type"] == "gcp:projects/iAMMember:IAMMember"]
    assert member["inputs"]["role"] == "roles/monitoring.viewer"
    assert member["inputs"]["member"].endswith(".svc.id.goog[keda/keda-operator]")


def test_eks_scales_its_node_group_with_the_cluster_autoscaler() -> None:
    rows = _rows("eks-h100-efs")
    [group] = [r for r in rows if r["type"] == "aws:eks/nodeGroup:NodeGroup" and r["name"] == "llmd-eks-h100"]
    assert group["options"]["ignoreChanges"] == ["scalingConfig.desiredSize"]
    [chart] = [r for r in rows if r["name"] == "llmd-cluster-autoscaler-chart"]
    values = chart["inputs"]["values"]
    assert values["autoDiscovery"]["clusterName"] == "llmd-h100"  # the cluster the preset names
    assert values["image"]["tag"] == versions.CLUSTER_AUTOSCALER_TAGS["1.33"]
    [policy] = [r for r in rows if r["type"] == "aws:iam/rolePolicy:RolePolicy" and "autoscaler" in r["name"]]
    scale = json.loads(policy["inputs"]["policy"])["Statement"][1]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/llmd-h100": "owned"}}
    assert not [r for r in resources(rendered("eks-h100-efs")) if "autoscaler" in r["name"]]


def test_every_eks_version_has_its_autoscaler_release() -> None:
    assert set(versions.CLUSTER_AUTOSCALER_TAGS) == set(versions.EKS_VERSIONS)
    assert all(tag.startswith(f"v{minor}.") for minor, tag in versions.CLUSTER_AUTOSCALER_TAGS.items())


def test_on_an_existing_cluster_keda_is_a_prerequisite_not_installed() -> None:
    rows = resources(rendered("gpu-vllm-native-cpu", (*ON, "autoscaling.max_replicas=3")))
    assert not [r for r in rows if r["type"].startswith("llmd:cluster:")]
    assert [r for r in rows if r["type"] == "kubernetes:keda.sh/v1alpha1:ScaledObject"]


def test_managed_prometheus_on_an_existing_cluster_needs_its_project() -> None:
    gmp = "monitoring.provider=gke-managed-prometheus"
    with pytest.raises(ConfigError, match=r"autoscaling\.gcp_project = None: KEDA queries the GKE Managed Prometheus"):
        _plan("gpu-vllm-native-fs-autoscale", gmp)
    source = _auto("gpu-vllm-native-fs-autoscale", gmp, "autoscaling.gcp_project=my-project").source
    assert source.server_address.endswith("/projects/my-project/location/global/prometheus")


def test_the_managed_prometheus_project_is_a_gcp_project_id() -> None:
    with pytest.raises(ConfigError, match=r"autoscaling\.gcp_project = 'My_Project': must be a GCP project id"):
        _plan("gpu-vllm-native-fs-autoscale", "autoscaling.gcp_project=My_Project")
