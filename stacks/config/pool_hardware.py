"""A node pool's hardware as the config describes it, or its machine type has it: the accelerator, devices
and host memory per node, and what of that memory the kubelet leaves to pods. The cluster stack's exports
(`cluster_outputs.py`) and the plan's fit checks (`stacks/planning/hardware.py`) both read it."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.machines import MACHINES
from components.units import ByteSize, GiB, MiB
from stacks.config import StackConfig

# GKE's memory reservation for the kubelet and system daemons: 25% of the first 4 GiB, 20% of the
# next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB, plus a 100 MiB eviction threshold.
_RESERVATION = ((4 * GiB, 0.25), (4 * GiB, 0.20), (8 * GiB, 0.10), (112 * GiB, 0.06))
_ABOVE, _EVICTION = 0.02, 100 * MiB


def allocatable_memory(total: ByteSize) -> ByteSize:
    remaining, reserved = total.bytes, 0.0
    for band, share in _RESERVATION:
        taken = min(remaining, band)
        reserved += taken * share
        remaining -= taken
    reserved += remaining * _ABOVE + _EVICTION
    return ByteSize(int(total.bytes - reserved))


@dataclass(frozen=True)
class PoolHardware:
    key: str
    accelerator: str | None
    devices_per_node: int | None
    host_memory: ByteSize | None
    nodes: int
    machine_type: str | None
    described: str | None = None  # how errors name it, where it is not a pool of the stack

    @property
    def allocatable(self) -> ByteSize | None:
        return allocatable_memory(self.host_memory) if self.host_memory else None

    def describe(self) -> str:
        if self.described:
            return self.described
        return f"node pool {self.key}" + (f" ({self.machine_type})" if self.machine_type else "")


def pool_hardware(config: StackConfig, key: str) -> PoolHardware:
    pool = config.node_pools[key]
    machine = MACHINES.get(pool.machine_type or "")
    return PoolHardware(
        key=key,
        accelerator=pool.accelerator or (machine.accelerator if machine else None),
        devices_per_node=pool.accelerators_per_node or (machine.devices_per_node if machine else None),
        host_memory=pool.host_memory or (machine.host_memory if machine else None),
        nodes=pool.node_count * pool.slices,
        machine_type=pool.machine_type,
    )
