"""How a template change rolls, chosen from the node pools' capacity (beside the fit checks in hardware.py).

Surge by one pod when one more pod fits the pool (devices and memory per node, nodes), so every
replica keeps serving; otherwise replace one pod at a time (`maxSurge: 0, maxUnavailable: 1`), since
a surge pod that cannot be scheduled stays Pending and the rollout never finishes. Without a described
pool the capacity is unknown, and only the second always finishes.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import ByteSize
from stacks.planning import hardware


@dataclass(frozen=True)
class Capacity:
    """Model-server pods (multi-host: groups) the pool holds: per node by devices and by memory."""

    units: int
    by_devices: int  # per node (multi-host: groups per slice)
    by_memory: int | None  # per node, beside the per-node daemon; None: host memory unknown


@dataclass(frozen=True)
class Rollout:
    max_surge: int
    max_unavailable: int
    replicas: int  # per role
    roles: int
    units: int  # pods (multi-host: groups) of all roles
    capacity: Capacity | None
    tier_dropped: ByteSize | None  # the CPU tier one restart loses (None: it lives outside the pod)
    tier_auto: bool = False
    group_size: int = 1

    @property
    def surges(self) -> bool:
        return self.max_surge > 0

    def describe(self) -> str:
        unit, n = self._unit, self.replicas
        if self.surges:
            how = f"one extra {unit} per role first (maxSurge 1, maxUnavailable 0): all {n} replicas serve"
        else:
            how = f"one {unit} at a time (maxSurge 0, maxUnavailable 1): {n - 1} of {n} replicas serve"
        return f"{how}; {self._room()}; {self._tier()}"

    @property
    def _unit(self) -> str:
        return f"group of {self.group_size} pods" if self.group_size > 1 else "pod"

    def _room(self) -> str:
        if self.capacity is None:
            return "node capacity unknown (no node pool described), so no surge"
        cap = self.capacity
        auto = "; `cache.tier.cpu: auto` sized the tier to fill the nodes" if self.tier_auto else ""
        spare = cap.units - self.units
        if self.group_size > 1:
            return f"the pool holds {cap.units} groups (one per slice), the stack runs {self.units}: {spare} spare"
        memory = f", {cap.by_memory} by memory" if cap.by_memory is not None else ""
        per_node = f"{cap.by_devices} by devices{memory} per node{auto}"
        return f"the pool holds {cap.units} pods ({per_node}), the stack runs {self.units}: {spare} spare"

    def _tier(self) -> str:
        if self.tier_dropped is None:
            return "no restart drops the CPU tier (it lives in the per-node daemon)"
        return f"each restart drops that pod's {self.tier_dropped.human()} CPU tier"


def capacity(
    pool: hardware.PoolHardware, devices: int, group_size: int, pod_memory: ByteSize, daemon: ByteSize
) -> Capacity:
    by_devices = hardware.pods_per_node(pool, devices)
    allocatable = pool.allocatable
    by_memory = None
    if allocatable is not None:
        by_memory = max(0, (allocatable.bytes - daemon.bytes) // pod_memory.bytes)
    per_node = min(by_devices, by_memory) if by_memory is not None else by_devices
    if group_size > 1:  # a group takes a whole slice (exclusive topology), one pod per host
        slices = pool.nodes // group_size
        return Capacity(slices if per_node else 0, 1, by_memory)
    return Capacity(pool.nodes * per_node, by_devices, by_memory)


def choose(
    replicas: int,
    roles: int,
    group_size: int,
    cap: Capacity | None,
    tier_dropped: ByteSize | None,
    tier_auto: bool,
) -> Rollout:
    """Surge when every role can add one pod (multi-host: one group) at once; else one at a time."""
    units = replicas * roles
    surge = cap is not None and units + roles <= cap.units
    return Rollout(
        max_surge=1 if surge else 0,
        max_unavailable=0 if surge else 1,
        replicas=replicas,
        roles=roles,
        units=units,
        capacity=cap,
        tier_dropped=tier_dropped,
        tier_auto=tier_auto,
        group_size=group_size,
    )
