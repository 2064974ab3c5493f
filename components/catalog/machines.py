"""Machine types of accelerator node pools: what one node offers the model servers.

Host memory is the machine's; allocatable memory (what pods may request) is derived from it the
way GKE reserves memory for the kubelet and system daemons (see `sizing.allocatable_memory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.units import GB, ByteSize, GiB


@dataclass(frozen=True)
class MachineType:
    key: str
    cloud: str  # gke | eks | existing
    accelerator: str  # the AcceleratorProfile key it serves
    devices_per_node: int
    host_memory: ByteSize
    gke_accelerator: str | None = None  # guest accelerator type (GPU) on GKE
    tpu_topology: str | None = None  # the single-host slice topology
    efa: bool = False


MACHINES: dict[str, MachineType] = {
    m.key: m
    for m in (
        MachineType("a3-highgpu-8g", "gke", "gpu", 8, ByteSize(1872 * GB), gke_accelerator="nvidia-h100-80gb"),
        MachineType("p5.48xlarge", "eks", "gpu", 8, ByteSize(2048 * GiB), efa=True),
        MachineType("ct5p-hightpu-4t", "gke", "tpu-v5p", 4, ByteSize(448 * GB), tpu_topology="2x2x1"),
        MachineType("ct6e-standard-8t", "gke", "tpu-v6", 8, ByteSize(1440 * GB), tpu_topology="2x4"),
        MachineType("tpu7x-standard-4t", "gke", "tpu-v7", 4, ByteSize(960 * GB), tpu_topology="2x2x1"),
    )
}
