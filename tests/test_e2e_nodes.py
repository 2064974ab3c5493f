"""The e2e cluster's nodes: shaped by the described pools, else by what the pods require."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.specs.clusters import POOL_LABEL
from e2e import nodes
from stacks.config import loading
from stacks.planning.hardware import pool_hardware

GOLDEN = Path(__file__).parent / "golden"


def _objects(preset: str) -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all((GOLDEN / preset / "manifests.yaml").read_text()) if o]


def _by_prefix(shapes: list[nodes.NodeShape]) -> dict[str, nodes.NodeShape]:
    return {s.name_prefix: s for s in shapes}


def test_a_described_pool_gives_its_count_labels_taints_devices_and_allocatable_memory() -> None:
    config = loading.load_preset("existing-mi300", [])
    shapes = _by_prefix(nodes.node_shapes(config, _objects("existing-mi300")))
    pool = shapes["pool-mi300"]
    hardware = pool_hardware(config, "mi300")
    assert pool.count == hardware.nodes
    assert pool.labels[POOL_LABEL] == "mi300"
    assert pool.labels["amd.com/gpu.product-name"] == "AMD_Instinct_MI300X_OAM"
    assert pool.taints == [{"key": "amd.com/gpu", "value": "", "effect": "NoSchedule"}]
    assert pool.allocatable["amd.com/gpu"] == "8"
    assert hardware.allocatable is not None
    assert pool.allocatable["memory"] == f"{hardware.allocatable.bytes // 2**20}Mi"
    # The model servers' own selector labels are on the pool's nodes, so the scheduler can place them.
    server = next(o for o in _objects("existing-mi300") if o["kind"] == "Deployment")
    wanted = nodes.required_labels(server["spec"]["template"]["spec"])
    assert wanted.items() <= pool.labels.items()


def test_without_pools_each_accelerator_pod_gets_a_node_with_its_devices() -> None:
    config = loading.load_preset("gpu-vllm-native-cpu", [])
    objects = _objects("gpu-vllm-native-cpu")
    server = next(o for o in objects if o["kind"] == "Deployment" and "decode" in o["metadata"]["name"])
    shapes = [s for s in nodes.node_shapes(config, objects) if s.name_prefix.startswith("for-")]
    assert [s.count for s in shapes] == [server["spec"]["replicas"]]
    devices = nodes.device_requests(server["spec"]["template"]["spec"])
    assert devices == {"nvidia.com/gpu": 2}  # the seed's default deployment: TP=2
    assert shapes[0].allocatable["nvidia.com/gpu"] == "2"
    memory_gib = float(shapes[0].allocatable["memory"].removesuffix("Gi"))
    requested = sum(
        nodes._memory_gib(c["resources"]["requests"]["memory"])
        for c in server["spec"]["template"]["spec"]["containers"]
    )
    assert memory_gib >= requested


def test_required_labels_read_the_selector_and_the_first_in_value_of_required_affinity() -> None:
    spec = {
        "nodeSelector": {"a": "1"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "b", "operator": "In", "values": ["x", "y"]},
                                {"key": "c", "operator": "Exists"},
                                {"key": "d", "operator": "NotIn", "values": ["z"]},
                            ]
                        }
                    ]
                }
            }
        },
    }
    assert nodes.required_labels(spec) == {"a": "1", "b": "x", "c": "true"}


def test_node_objects_are_kwok_nodes_with_status() -> None:
    shape = nodes.NodeShape("pool-x", 2, {"k": "v"}, [{"key": "t", "value": "", "effect": "NoSchedule"}], {"cpu": "4"})
    docs = nodes.node_objects([shape])
    assert [d["metadata"]["name"] for d in docs] == ["pool-x-0", "pool-x-1"]
    assert all(d["metadata"]["annotations"] == nodes.KWOK_ANNOTATION for d in docs)
    assert docs[0]["status"]["allocatable"] == {"cpu": "4"} == docs[0]["status"]["capacity"]
    assert docs[0]["spec"]["taints"][0]["key"] == "t"
    assert docs[1]["metadata"]["labels"]["kubernetes.io/hostname"] == "pool-x-1"


def test_a_described_dra_pool_publishes_its_devices_per_node() -> None:
    config = loading.load_preset("existing-b60", [])
    shapes = nodes.node_shapes(config, _objects("existing-b60"))
    pool = _by_prefix(shapes)["pool-b60"]
    assert pool.dra_devices == {"gpu.intel.com": 4}
    docs = nodes.dra_objects(shapes)
    classes = [d for d in docs if d["kind"] == "DeviceClass"]
    slices = [d for d in docs if d["kind"] == "ResourceSlice"]
    assert [c["metadata"]["name"] for c in classes] == ["gpu.intel.com"]
    assert "device.driver == 'gpu.intel.com'" in classes[0]["spec"]["selectors"][0]["cel"]["expression"]
    assert len(slices) == pool.count
    spec = slices[0]["spec"]
    assert spec["driver"] == "gpu.intel.com" and spec["nodeName"] == "pool-b60-0"
    assert spec["pool"] == {"name": "pool-b60-0", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


def test_a_pod_claiming_dra_devices_gets_a_node_with_them_where_no_pool_is_described() -> None:
    objects = _objects("xpu-vllm-native-cpu")
    templates = nodes.claim_templates(objects)
    assert list(templates.values()) == [{"gpu.intel.com": 4}]
    shapes = nodes.node_shapes(loading.load_preset("xpu-vllm-native-cpu", []), objects)
    generated = [s for s in shapes if s.dra_devices]
    assert [(s.name_prefix, s.count, s.dra_devices) for s in generated] == [
        ("for-xpu-vllm-decode", 1, {"gpu.intel.com": 4})
    ]
    assert not any(s.dra_devices for s in shapes if s.name_prefix == "system")


def test_claimed_devices_add_up_over_claims_and_ignore_unknown_templates() -> None:
    templates = {"a": {"x.example": 2}, "b": {"x.example": 1, "y.example": 1}}
    spec = {"resourceClaims": [{"resourceClaimTemplateName": "a"}, {"resourceClaimTemplateName": "b"}, {"name": "c"}]}
    assert nodes.claimed_devices(spec, templates) == {"x.example": 3, "y.example": 1}


def test_no_dra_objects_without_dra_devices() -> None:
    shapes = nodes.node_shapes(loading.load_preset("dev", []), _objects("dev"))
    assert nodes.dra_objects(shapes) == []


def test_a_deleted_pod_turns_terminal_before_kwok_deletes_it() -> None:
    from e2e import kwok

    delete: dict[str, Any] = {
        "kind": "Stage",
        "metadata": {"name": "pod-delete"},
        "spec": {
            "selector": {"matchExpressions": [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}]},
            "next": {"delete": True},
        },
    }
    ready: dict[str, Any] = {"kind": "Stage", "metadata": {"name": "pod-ready"}, "spec": {}}
    out = kwok.terminal_before_delete([ready, delete])
    assert [s["metadata"]["name"] for s in out] == ["pod-ready", "pod-delete", "pod-terminate"]
    phase = {"key": ".status.phase", "operator": "In", "values": ["Succeeded", "Failed"]}
    assert out[1]["spec"]["selector"]["matchExpressions"][-1] == phase
    terminate = out[2]["spec"]["selector"]["matchExpressions"]
    assert {"key": ".status.phase", "operator": "NotIn", "values": ["Succeeded", "Failed"]} in terminate
    assert "phase: Failed" in out[2]["spec"]["next"]["statusTemplate"]
    assert len(delete["spec"]["selector"]["matchExpressions"]) == 1  # the input is left alone
    assert kwok.terminal_before_delete([ready]) == [ready]


def test_each_group_of_an_exclusive_leaderworkerset_gets_its_own_topology_domain() -> None:
    preset = "tpu-v7-vllm-native-cpu-multi-host"
    objects = _objects(preset)
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    key = lws["metadata"]["annotations"][nodes.EXCLUSIVE_TOPOLOGY]
    replicas, size = lws["spec"]["replicas"], lws["spec"]["leaderWorkerTemplate"]["size"]
    docs = nodes.node_objects(nodes.node_shapes(loading.load_preset(preset, []), objects))
    domains: dict[str, int] = {}
    for node in docs:
        if key in node["metadata"]["labels"]:
            domains[node["metadata"]["labels"][key]] = domains.get(node["metadata"]["labels"][key], 0) + 1
    assert len(domains) == replicas
    assert set(domains.values()) == {size}
    assert len({n["metadata"]["name"] for n in docs}) == len(docs)


def test_a_described_pool_advertises_the_extended_resources_its_pods_request() -> None:
    """MooncakeStore's pods and its client ask for rdma/ib: the pool's nodes advertise it, as the shared RDMA
    device plugin does, beside the accelerator's own devices; the system nodes do not."""
    from e2e import nodes as e2e_nodes
    from stacks.config import loading
    from tests.helpers import manifests, rendered

    config = loading.load_preset("gpu-vllm-mooncake-store-fs")
    shapes = {
        s.name_prefix: s for s in e2e_nodes.node_shapes(config, manifests(rendered("gpu-vllm-mooncake-store-fs")))
    }
    assert shapes["pool-h100"].allocatable["rdma/ib"] == str(e2e_nodes.SHARED_DEVICE_COUNT)
    assert shapes["pool-h100"].allocatable["nvidia.com/gpu"] == "8"
    assert "rdma/ib" not in shapes["system"].allocatable


def test_the_runtime_classes_the_pods_name_are_made() -> None:
    """The LMCache server runs with `runtimeClassName: nvidia`; without that RuntimeClass its pods are refused."""
    from e2e import nodes as e2e_nodes
    from tests.helpers import manifests, rendered

    made = e2e_nodes.runtime_classes(manifests(rendered("gpu-vllm-lmcache-server-pd")))
    assert made == [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
    ]
    assert e2e_nodes.runtime_classes(manifests(rendered("dev"))) == []
