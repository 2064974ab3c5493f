"""A template change replayed on a stack's nodes, the way the Deployment and LeaderWorkerSet controllers roll.

Independent of how the plan chose the strategy: it reads the rendered objects (replicas, strategy,
the pods' requests, the per-node daemons' requests) and the node pool's hardware, resolves the
strategy as Kubernetes does (unset: Deployment 25%/25%, LeaderWorkerSet maxSurge 0 / maxUnavailable 1;
surge percentages round up, unavailable ones down), and steps the controller: create new pods up to
replicas + maxSurge, schedule them first-fit on the nodes, delete old pods while more than
replicas - maxUnavailable stay available. The rollout completes, or stops making progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from components.catalog.accelerators import ACCELERATORS
from components.units import ByteSize

Manifest = dict[str, Any]


@dataclass
class Node:
    devices: int
    memory: int
    used_devices: int = 0
    used_memory: int = 0

    def fits(self, pod: Pod) -> bool:
        return self.used_devices + pod.devices <= self.devices and self.used_memory + pod.memory <= self.memory

    def take(self, pod: Pod, sign: int = 1) -> None:
        self.used_devices += sign * pod.devices
        self.used_memory += sign * pod.memory


@dataclass(frozen=True)
class Pod:
    """One schedulable unit: a pod, or (LeaderWorkerSet) a whole group on its own slice."""

    devices: int
    memory: int


@dataclass
class Workload:
    name: str
    replicas: int
    max_surge: int
    max_unavailable: int
    pod: Pod
    old: list[int] = field(default_factory=list)  # node index of each old pod
    new_ready: list[int] = field(default_factory=list)
    new_pending: int = 0
    min_available: int = 0

    @property
    def done(self) -> bool:
        return not self.old and len(self.new_ready) == self.replicas


@dataclass(frozen=True)
class Result:
    completed: bool
    min_available: dict[str, int]
    steps: int


def _resolve(value: int | str | None, replicas: int, default: int | str, round_up: bool) -> int:
    value = default if value is None else value
    if isinstance(value, str) and value.endswith("%"):
        exact = replicas * int(value[:-1]) / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def strategy(workload: Manifest) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as the controller resolves them."""
    replicas = int(workload["spec"]["replicas"])
    if workload["kind"] == "LeaderWorkerSet":
        config = workload["spec"].get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {})
        defaults: tuple[int | str, int | str] = (0, 1)
    else:
        config = workload["spec"].get("strategy", {}).get("rollingUpdate", {})
        defaults = ("25%", "25%")
    surge = _resolve(config.get("maxSurge"), replicas, defaults[0], round_up=True)
    unavailable = _resolve(config.get("maxUnavailable"), replicas, defaults[1], round_up=False)
    if surge == 0 and unavailable == 0:  # the API server's rule; the controller then moves one at a time
        unavailable = 1
    return surge, unavailable


def _memory(containers: list[Manifest]) -> int:
    return sum(ByteSize.parse(c.get("resources", {}).get("requests", {}).get("memory", "0")).bytes for c in containers)


DEVICE_RESOURCES = {a.device_resource for a in ACCELERATORS.values() if a.device_resource}


def pod_requests(template: Manifest, claim_devices: int) -> Pod:
    """Memory and accelerator devices (extended resources such as nvidia.com/gpu, or a DRA claim) of a pod."""
    containers = template["spec"]["containers"]
    # Accelerator devices only: a pod's other extended resources (MooncakeStore's rdma/ib) are not its devices.
    devices = sum(
        int(v)
        for c in containers
        for k, v in c.get("resources", {}).get("requests", {}).items()
        if k in DEVICE_RESOURCES
    )
    if template["spec"].get("resourceClaims"):
        devices += claim_devices
    return Pod(devices, _memory(containers))


def claim_devices(objects: list[Manifest]) -> int:
    for obj in objects:
        if obj["kind"] == "ResourceClaimTemplate":
            return sum(int(r["exactly"]["count"]) for r in obj["spec"]["spec"]["devices"]["requests"])
    return 0


def accelerator_workloads(objects: list[Manifest]) -> list[Manifest]:
    """The workloads whose pods request accelerators: the model servers."""
    devices = claim_devices(objects)
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment" and pod_requests(obj["spec"]["template"], devices).devices:
            out.append(obj)
        if obj["kind"] == "LeaderWorkerSet":
            out.append(obj)
    return out


def daemon_memory(objects: list[Manifest]) -> int:
    """Memory the per-node DaemonSets take on every node."""
    return sum(_memory(o["spec"]["template"]["spec"]["containers"]) for o in objects if o["kind"] == "DaemonSet")


def _place(nodes: list[Node], pod: Pod) -> int | None:
    for index, node in enumerate(nodes):
        if node.fits(pod):
            node.take(pod)
            return index
    return None


def _step(nodes: list[Node], w: Workload) -> bool:
    """One controller sync; whether anything changed."""
    before = (len(w.old), len(w.new_ready), w.new_pending)
    total = len(w.old) + len(w.new_ready) + w.new_pending
    room = w.replicas + w.max_surge - total
    w.new_pending += max(0, min(room, w.replicas - len(w.new_ready) - w.new_pending))
    while w.new_pending:  # pods bound in this sync are ready by the next
        index = _place(nodes, w.pod)
        if index is None:
            break
        w.new_pending -= 1
        w.new_ready.append(index)
    available = len(w.old) + len(w.new_ready)
    removable = min(len(w.old), available - (w.replicas - w.max_unavailable))
    for _ in range(max(0, removable)):
        nodes[w.old.pop()].take(w.pod, -1)
    w.min_available = min(w.min_available, len(w.old) + len(w.new_ready))
    return before != (len(w.old), len(w.new_ready), w.new_pending)


def simulate(nodes: list[Node], workloads: list[Workload], max_steps: int = 1000) -> Result:
    """Place every old pod, then roll every workload at once (Pulumi updates them in parallel)."""
    for w in workloads:
        for _ in range(w.replicas):
            index = _place(nodes, w.pod)
            assert index is not None, f"{w.name}: the running pods do not fit the nodes"
            w.old.append(index)
        w.min_available = w.replicas
    steps = 0
    while not all(w.done for w in workloads) and steps < max_steps:
        steps += 1
        progressed = [_step(nodes, w) for w in workloads]
        if not any(progressed):
            break
    return Result(all(w.done for w in workloads), {w.name: w.min_available for w in workloads}, steps)
