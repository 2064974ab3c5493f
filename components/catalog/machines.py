"""Machine types of accelerator node pools: what one node offers the model servers.

Host memory is the machine's; allocatable memory (what pods may request) is derived from it the
way GKE reserves memory for the kubelet and system daemons (see `sizing.allocatable_memory`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.catalog.accelerators import ACCELERATORS
from components.catalog.key_lists import literal_of
from components.units import GB, ByteSize, GiB

# The providers whose cluster stacks create node pools of a machine type (stacks/config/provider_kinds.py: those
# with a mirror cloud; tests/test_registries.py holds the two equal). An existing cluster's pools are described.
MACHINE_CLOUDS = ("gke", "eks")
if TYPE_CHECKING:  # mypy cannot evaluate a Literal built from a registry (key_lists.literal_of)
    MachineCloud = str
else:
    MachineCloud = literal_of(MACHINE_CLOUDS)


@dataclass(frozen=True)
class MachineType:
    key: str
    cloud: MachineCloud
    accelerator: str  # the AcceleratorProfile key it serves
    devices_per_node: int
    host_memory: ByteSize
    gke_accelerator: str | None = None  # guest accelerator type (GPU) on GKE
    tpu_topology: str | None = None  # the single-host slice topology
    efa: bool = False

    @property
    def needs_nvidia_device_plugin(self) -> bool:
        """Its nodes advertise `nvidia.com/gpu` only through the NVIDIA device plugin: EKS GPU nodes (GKE installs
        its own plugin with the driver)."""
        return self.cloud == "eks" and ACCELERATORS[self.accelerator].vendor == "nvidia"


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


@dataclass(frozen=True)
class SystemMachineType:
    """A machine type of a created cluster's system pool (router, monitoring, system pods)."""

    key: str
    cloud: MachineCloud
    vcpus: int
    memory: ByteSize


# The system machine types a stack may name. A new one is added here with its vCPUs and memory (GCE
# general-purpose machine types, EC2 M instances: from the providers' machine type tables).
SYSTEM_MACHINES: dict[str, SystemMachineType] = {
    m.key: m
    for m in (
        *(SystemMachineType(f"e2-standard-{n}", "gke", n, ByteSize(4 * n * GB)) for n in (4, 8, 16, 32)),
        *(SystemMachineType(f"n2-standard-{n}", "gke", n, ByteSize(4 * n * GB)) for n in (4, 8, 16, 32)),
        *(SystemMachineType(f"n2d-standard-{n}", "gke", n, ByteSize(4 * n * GB)) for n in (4, 8, 16, 32)),
        *(
            SystemMachineType(f"{family}.{size}", "eks", n, ByteSize(4 * n * GiB))
            for family in ("m5", "m6i", "m6a", "m7i")
            for size, n in (("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16), ("8xlarge", 32))
        ),
    )
}
