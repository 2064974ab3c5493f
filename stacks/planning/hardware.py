"""What a node pool's hardware allows: pods per node, allocatable memory, and whether a stack fits.

The checks run at config load (through `plan`) and end in one line giving both numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from components.catalog.accelerators import ACCELERATORS
from components.specs.clusters import POOL_LABEL
from components.units import ByteSize, GiB
from stacks.config import MAX_NODE_MEMORY
from stacks.config.errors import ConfigError
from stacks.config.pool_hardware import PoolHardware, allocatable_memory, pool_hardware

__all__ = ["POOL_LABEL", "Fit", "PoolHardware", "allocatable_memory", "any_node", "pool_hardware"]


def any_node(accelerator: str) -> PoolHardware:
    """Where model servers run without `cache.node_pool`: some node of the cluster, which has at most the
    accelerator's devices per node (components/catalog/accelerators.py) and the largest node's memory
    (stacks/config.py MAX_NODE_MEMORY)."""
    devices = ACCELERATORS[accelerator].devices_per_node
    return PoolHardware(
        key="",
        accelerator=accelerator,
        devices_per_node=devices,
        host_memory=MAX_NODE_MEMORY,
        nodes=1_000_000,  # the cluster's size is unknown: only a pod that fits no node is rejected
        machine_type=None,
        described=f"any pool (no cache.node_pool; a {accelerator} node has at most {devices} devices and"
        f" {MAX_NODE_MEMORY.human()} of memory)",
    )


@dataclass(frozen=True)
class Fit:
    pods_per_node: int
    per_node: ByteSize
    allocatable: ByteSize | None
    largest_tier: ByteSize | None = None  # where the tier was sized with `auto`


def pods_per_node(hardware: PoolHardware, devices_per_pod: int) -> int:
    if hardware.devices_per_node is None:
        return 1
    if devices_per_pod > hardware.devices_per_node:
        raise ConfigError(
            "cache.tensor_parallelism",
            devices_per_pod,
            f"a pod needs {devices_per_pod} devices, a node of {hardware.describe()} has {hardware.devices_per_node}",
        )
    return hardware.devices_per_node // devices_per_pod


def check_capacity(hardware: PoolHardware, pods: int, per_node: int, replicas: int | None = None) -> None:
    """`replicas`: cache.replicas, where a replica is more than one pod (roles, hosts); the error names it."""
    if hardware.devices_per_node is not None and pods > hardware.nodes * per_node:
        count = f"{pods} pods" if replicas in (None, pods) else f"{replicas} replicas of {pods // replicas} pods"
        raise ConfigError(
            "cache.replicas",
            pods if replicas is None else replicas,
            f"{count} need {-(-pods // per_node)} nodes of {hardware.describe()}, which has {hardware.nodes}",
        )


def check_memory(hardware: PoolHardware, per_pod: ByteSize, pods_on_node: int, daemon: ByteSize, tier: str) -> Fit:
    need = per_pod * pods_on_node + daemon
    allocatable = hardware.allocatable
    if allocatable is not None and need > allocatable:
        daemon_text = f" + {daemon.quantity()} per-node daemon" if daemon.bytes else ""
        raise ConfigError(
            "cache.tier.cpu",
            tier,
            f"{pods_on_node} pods x {per_pod.quantity()}{daemon_text} = {need.ceil_to(GiB).quantity()} per node exceed"
            f" the {allocatable.floor_to(GiB).quantity()} allocatable of {hardware.describe()}",
        )
    return Fit(pods_on_node, need, allocatable)


def largest_fitting_tier(
    hardware: PoolHardware,
    pods_on_node: int,
    memory_for: Callable[[ByteSize], tuple[ByteSize, ByteSize]],
    step: ByteSize,
) -> ByteSize:
    """`tier: auto`: the largest multiple of `step` whose pods (and per-node daemon) fit a node."""
    allocatable = hardware.allocatable
    if allocatable is None:
        raise ConfigError(
            "cache.tier.cpu",
            "auto",
            f"needs the host memory of {hardware.describe()} (node_pools.{hardware.key}.host_memory)",
        )

    def fits(tier: ByteSize) -> bool:
        per_pod, daemon = memory_for(tier)
        return per_pod * pods_on_node + daemon <= allocatable

    low, high = 1, allocatable.bytes // step.bytes  # in steps
    if not fits(step * low):
        per_pod, daemon = memory_for(step)
        need = (per_pod * pods_on_node + daemon).ceil_to(GiB)
        raise ConfigError(
            "cache.tier.cpu",
            "auto",
            f"even a {step.human()} tier needs {need.quantity()} per node, beyond the"
            f" {allocatable.floor_to(GiB).quantity()} allocatable of {hardware.describe()}",
        )
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(step * mid) else (low, mid - 1)
    return step * low
