"""A connector's per-node daemon runs only where the model servers run. Seen under the real engine
(`./run e2e gpu-vllm-mooncake-store-fs`, before the fix): unplaced, the Mooncake Client DaemonSet had a pod
on every node, those on the system nodes stayed Pending (no rdma/ib there) and `pulumi up` waited them out."""

from __future__ import annotations

import dataclasses

import pytest

from components.catalog.accelerators import ACCELERATORS
from components.specs import lmcache, mooncake
from components.specs.workloads import WorkloadType
from stacks.config import loading
from stacks.config.errors import ConfigError
from stacks.planning.plan import plan
from tests.helpers import by_kind

SELECTOR = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("preset", "kind"),
    [("gpu-vllm-mooncake-store-fs", mooncake.CLIENT_WORKLOAD), ("gpu-vllm-lmcache-server", lmcache.SERVER_WORKLOAD)],
)
def test_the_daemon_lands_on_the_serving_nodes_and_tolerates_their_devices(preset: str, kind: WorkloadType) -> None:
    stack_plan = plan(loading.load_preset(preset))
    [daemon] = by_kind(stack_plan.manifests(kind), "DaemonSet")
    pod = daemon["spec"]["template"]["spec"]
    assert (
        pod["nodeSelector"]
        == SELECTOR
        == stack_plan.model_server_manifests[-1]["spec"]["template"]["spec"]["nodeSelector"]
    )
    assert GPU_TOLERATION in pod["tolerations"]


def test_a_tainted_pool_is_tolerated_as_the_model_servers_tolerate_it() -> None:
    taint = ["node_pools.h100.taints=[{key: dedicated, value: llm, effect: NoSchedule}]"]
    stack_plan = plan(loading.load_preset("gpu-vllm-lmcache-server", taint))
    [daemon] = by_kind(stack_plan.manifests(lmcache.SERVER_WORKLOAD), "DaemonSet")
    assert {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"} in daemon["spec"][
        "template"
    ]["spec"]["tolerations"]


@pytest.mark.parametrize(
    ("preset", "kind"),
    [("gpu-vllm-mooncake-store-fs", mooncake.CLIENT_WORKLOAD), ("gpu-vllm-lmcache-server-pd", lmcache.SERVER_WORKLOAD)],
)
def test_model_servers_on_no_pool_place_the_daemon_by_their_gpu_product(preset: str, kind: WorkloadType) -> None:
    """Without `cache.node_pool` the model servers still require their GPU product (gpu_product_affinity.py), and
    the daemon takes that requirement: it lands on the H100 nodes, on no system node."""
    stack_plan = plan(loading.load_preset(preset, ["cache.node_pool=null"]))
    servers = stack_plan.model_server_manifests[-1]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    [daemon] = by_kind(stack_plan.manifests(kind), "DaemonSet")
    assert daemon["spec"]["template"]["spec"]["affinity"]["nodeAffinity"] == servers
    [term] = servers["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
    ]


def test_model_servers_placed_nowhere_stop_a_per_node_daemon_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile with no product to require (and no pool): the daemon would land on every node."""
    monkeypatch.setitem(ACCELERATORS, "gpu", dataclasses.replace(ACCELERATORS["gpu"], product=None))
    with pytest.raises(ConfigError) as error:
        plan(loading.load_preset("gpu-vllm-mooncake-store-fs", ["cache.node_pool=null"]))
    message = str(error.value)
    assert "\n" not in message and "cache.node_pool = None:" in message and "lands on every node" in message


def test_a_connector_without_a_per_node_daemon_needs_no_placement() -> None:
    assert plan(loading.load_preset("gpu-vllm-mooncake-store-cpu")).manifests(mooncake.CLIENT_WORKLOAD) == []
