"""KWOK nodes shaped like the stack: from its node pools where it describes them, else from its pods.

Pure: takes the stack config and the offline render's objects, returns Node objects for the API
server. A described pool gives its node count, labels, taints, devices and allocatable memory (the
same arithmetic the config-time fit check uses), so the scheduler places the pods against the same
room the plan assumed. A workload no pool describes gets one node per pod, labelled as its node
selector and required affinity ask, with its device count and room to spare. Two untainted system
nodes carry the router, the Jobs and everything that asks for no accelerator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from components.catalog.accelerators import ACCELERATORS
from components.catalog.machines import MACHINES
from components.specs.clusters import POOL_LABEL
from components.units import GiB
from e2e.quantity import quantity
from stacks.config import StackConfig
from stacks.planning.hardware import pool_hardware

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
# A LeaderWorkerSet's group takes a topology domain (node label) of its own: its nodes get one per group.
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
_WORKLOAD_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet", "DaemonSet")
_SYSTEM = {"cpu": "32", "memory": "128Gi", "pods": "110"}
_SYSTEM_NODES = 2
# Room a generated accelerator node gives besides its pods' requests: the per-node daemons
# (LMCache server, Mooncake client, pre-pull) fit in it.
_SPARE_CPU, _SPARE_MEMORY_GIB = 32, 64


@dataclass
class NodeShape:
    name_prefix: str
    count: int
    labels: dict[str, str]
    taints: list[dict[str, str]] = field(default_factory=list)
    allocatable: dict[str, str] = field(default_factory=dict)
    dra_devices: dict[str, int] = field(default_factory=dict)  # DRA device class -> devices per node


def _pod_template(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec", {})
    template = (
        spec.get("leaderWorkerTemplate", {}).get("workerTemplate")
        if obj.get("kind") == "LeaderWorkerSet"
        else spec.get("template")
    )
    return dict(template) if isinstance(template, dict) else None


def _pods(obj: dict[str, Any]) -> int:
    spec = obj.get("spec", {})
    if obj.get("kind") == "LeaderWorkerSet":
        return int(spec.get("replicas", 1)) * int(spec.get("leaderWorkerTemplate", {}).get("size", 1))
    return int(spec.get("replicas", 1))


def required_labels(pod_spec: dict[str, Any]) -> dict[str, str]:
    """The node labels a pod cannot run without: its node selector and the first value of each `In` term."""
    labels = dict(pod_spec.get("nodeSelector") or {})
    terms = (
        pod_spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    for expression in terms[0].get("matchExpressions", []) if terms else []:
        if expression.get("operator") == "In" and expression.get("values"):
            labels.setdefault(expression["key"], expression["values"][0])
        elif expression.get("operator") == "Exists":
            labels.setdefault(expression["key"], "true")
    return labels


def device_requests(pod_spec: dict[str, Any]) -> dict[str, int]:
    """Extended resources (vendor.example/name) the pod's containers ask for, summed."""
    total: dict[str, int] = {}
    for container in pod_spec.get("containers", []):
        limits = (container.get("resources") or {}).get("limits") or {}
        for name, value in limits.items():
            if "/" in name and not name.startswith("hugepages"):
                total[name] = total.get(name, 0) + int(value)
    return total


def claim_templates(objects: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Each ResourceClaimTemplate's devices by class (its `exactly` requests; `All` counts as one)."""
    out: dict[str, dict[str, int]] = {}
    for obj in objects:
        if obj.get("kind") != "ResourceClaimTemplate":
            continue
        devices: dict[str, int] = {}
        for request in ((obj.get("spec") or {}).get("spec") or {}).get("devices", {}).get("requests") or []:
            exactly = request.get("exactly") or {}
            if exactly.get("deviceClassName"):
                count = (
                    int(exactly.get("count", 1)) if exactly.get("allocationMode", "ExactCount") == "ExactCount" else 1
                )
                devices[exactly["deviceClassName"]] = devices.get(exactly["deviceClassName"], 0) + count
        out[obj["metadata"]["name"]] = devices
    return out


def claimed_devices(pod_spec: dict[str, Any], templates: dict[str, dict[str, int]]) -> dict[str, int]:
    """DRA devices a pod claims through its claim templates, by device class."""
    total: dict[str, int] = {}
    for claim in pod_spec.get("resourceClaims") or []:
        for device_class, count in templates.get(claim.get("resourceClaimTemplateName") or "", {}).items():
            total[device_class] = total.get(device_class, 0) + count
    return total


def _memory_gib(value: str) -> float:
    return (quantity(value) or 0.0) / GiB


def _cpu(value: str) -> float:
    return quantity(value) or 0.0


def _requests(pod_spec: dict[str, Any]) -> tuple[float, float]:
    cpu = memory = 0.0
    for container in pod_spec.get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += _cpu(str(requests.get("cpu", "0")))
        memory += _memory_gib(str(requests.get("memory", "0")))
    return cpu, memory


def _pool_shapes(config: StackConfig, objects: Iterable[dict[str, Any]]) -> list[NodeShape]:
    wanted: dict[str, dict[str, str]] = {}  # pool key -> labels its pods select besides the pool's own
    shared: dict[str, set[str]] = {}  # pool key -> extended resources its pods request besides the devices
    for obj in objects:
        template = _pod_template(obj) if obj.get("kind") in _WORKLOAD_KINDS else None
        if template:
            labels = required_labels(template.get("spec", {}))
            for key, pool in config.node_pools.items():
                if labels.get(POOL_LABEL) == key or (pool.labels and pool.labels.items() <= labels.items()):
                    wanted.setdefault(key, {}).update(labels)
                    shared.setdefault(key, set()).update(_extended_requests(template))
    shapes = []
    for key, pool in config.node_pools.items():
        hardware = pool_hardware(config, key)
        machine = MACHINES.get(pool.machine_type or "")
        allocatable = {"cpu": str(getattr(machine, "vcpus", None) or 208), "pods": "110"}
        if hardware.allocatable:
            allocatable["memory"] = f"{hardware.allocatable.bytes // 2**20}Mi"
        else:
            allocatable["memory"] = "2048Gi"
        resource = _device_resource(hardware.accelerator)
        if resource and hardware.devices_per_node:
            allocatable[resource] = str(hardware.devices_per_node)
        for other in sorted(shared.get(key, set()) - {resource}):
            # As a shared device plugin advertises a node's HCA (k8s-rdma-shared-dev-plugin: 1000 by default).
            allocatable[other] = str(SHARED_DEVICE_COUNT)
        profile = ACCELERATORS.get(hardware.accelerator or "")
        dra = {}
        if profile and profile.dra_device_class and hardware.devices_per_node:
            dra[profile.dra_device_class] = hardware.devices_per_node
        labels = {POOL_LABEL: key, **wanted.get(key, {}), **pool.labels}
        taints = [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in pool.taints]
        shapes.append(NodeShape(f"pool-{key}", hardware.nodes, labels, taints, allocatable, dra))
    return shapes


SHARED_DEVICE_COUNT = 1000


def _extended_requests(template: dict[str, Any]) -> set[str]:
    """The extended resources (`vendor/name`, not hugepages) a pod template's containers request."""
    spec = template.get("spec", {})
    containers = [*spec.get("containers", []), *spec.get("initContainers", [])]
    return {k for c in containers for k in (c.get("resources", {}).get("requests") or {}) if "/" in k}


def _device_resource(accelerator: str | None) -> str | None:
    profile = ACCELERATORS.get(accelerator or "")
    return profile.device_resource if profile else None


def _generated_shapes(config: StackConfig, objects: list[dict[str, Any]]) -> list[NodeShape]:
    shapes, templates = [], claim_templates(objects)
    for obj in objects:
        if obj.get("kind") not in _WORKLOAD_KINDS or obj.get("kind") == "DaemonSet":
            continue
        template = _pod_template(obj) or {}
        spec = template.get("spec", {})
        devices, labels, claims = device_requests(spec), required_labels(spec), claimed_devices(spec, templates)
        if not devices and not labels and not claims:
            continue  # the system nodes take it
        if config.node_pools and any(
            labels.get(POOL_LABEL) == key or (p.labels and p.labels.items() <= labels.items())
            for key, p in config.node_pools.items()
        ):
            continue  # a described pool takes it
        cpu, memory = _requests(spec)
        allocatable = {
            "cpu": str(int(cpu) + _SPARE_CPU),
            "memory": f"{int(memory) + _SPARE_MEMORY_GIB}Gi",
            "pods": "110",
            **{name: str(count) for name, count in devices.items()},
        }
        prefix = f"for-{obj['metadata']['name']}"
        topology = ((obj.get("metadata") or {}).get("annotations") or {}).get(EXCLUSIVE_TOPOLOGY)
        if obj.get("kind") == "LeaderWorkerSet" and topology:
            # One group per topology domain, as GKE gives each multi-host TPU slice its own node pool.
            size = _pods(obj) // max(int(obj["spec"].get("replicas", 1)), 1)
            for group in range(int(obj["spec"].get("replicas", 1))):
                domain = {**labels, topology: f"{prefix}-{group}"[:63]}
                shapes.append(NodeShape(f"{prefix}-{group}", size, domain, [], allocatable, claims))
        else:
            shapes.append(NodeShape(prefix, _pods(obj), labels, [], allocatable, claims))
    return shapes


def node_shapes(config: StackConfig, objects: list[dict[str, Any]]) -> list[NodeShape]:
    system = NodeShape("system", _SYSTEM_NODES, {"llm-d.ai/e2e-role": "system"}, [], dict(_SYSTEM))
    return [system, *_pool_shapes(config, objects), *_generated_shapes(config, objects)]


def _node_names(shape: NodeShape) -> list[str]:
    return [f"{shape.name_prefix}-{index}"[:63].rstrip("-") for index in range(shape.count)]


def dra_objects(shapes: list[NodeShape]) -> list[dict[str, Any]]:
    """What a DRA driver would publish for the nodes' devices: a DeviceClass per class (selecting the
    driver of that name) and one ResourceSlice per node and class, its devices `<class>-<n>`."""
    classes = sorted({c for shape in shapes for c in shape.dra_devices})
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": c},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{c}'"}}]},
        }
        for c in classes
    ]
    for shape in shapes:
        for name in _node_names(shape):
            for device_class, count in sorted(shape.dra_devices.items()):
                prefix = device_class.split(".")[0]
                docs.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "metadata": {"name": f"{name}-{device_class.replace('.', '-')}"[:253]},
                        "spec": {
                            "driver": device_class,
                            "nodeName": name,
                            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": f"{prefix}-{i}"} for i in range(count)],
                        },
                    }
                )
    return docs


def node_objects(shapes: list[NodeShape]) -> list[dict[str, Any]]:
    nodes = []
    for shape in shapes:
        for name in _node_names(shape):
            labels = {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **shape.labels,
            }
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "annotations": dict(KWOK_ANNOTATION), "labels": labels},
                    "spec": {"taints": shape.taints} if shape.taints else {},
                    "status": {
                        "allocatable": dict(shape.allocatable),
                        "capacity": dict(shape.allocatable),
                        "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "kwok"},
                        "phase": "Running",
                    },
                }
            )
    return nodes


def runtime_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RuntimeClasses the stack's pods name (the LMCache server's `nvidia`, which the GPU operator installs
    on a real cluster): without them the API server rejects the pods before the scheduler sees them."""
    names = sorted(
        {
            str(t["spec"]["runtimeClassName"])
            for o in objects
            if (t := _pod_template(o) if o.get("kind") in _WORKLOAD_KINDS else None)
            and t.get("spec", {}).get("runtimeClassName")
        }
    )
    return [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": n}, "handler": n} for n in names
    ]
