"""Which GPU a node has, as the node's labels say it: the record an accelerator profile whose device resource
other profiles share (every NVIDIA GPU is `nvidia.com/gpu`) names its nodes by. The model servers require it of
their nodes where nothing else they select pins it (the HBM budget is sized for this device: a pod on a smaller
GPU would not fit), and the policy rule `identity-labels` holds a pod's profile to it. A vendor's own labeller
names the product (NVIDIA's GPU Feature Discovery `labels.GPU_PRODUCT_LABEL`, AMD's node labeller its own)."""

from __future__ import annotations

from dataclasses import dataclass

from components.catalog.labels import GPU_PRODUCT_LABEL
from components.catalog.rates import H200_STEP_COSTS


@dataclass(frozen=True)
class GpuProduct:
    # The vendor labeller's product label and its value on the profile's whole GPUs. NVIDIA's (GPU Feature
    # Discovery's `labels.GPU_PRODUCT_LABEL`): NVML's device name (what nvidia-smi prints), its words joined by
    # dashes; not the `-SHARED` suffix GFD adds to time-sliced GPUs, nor a MIG slice's name: neither holds a whole
    # device's memory.
    label: str
    value: str
    # GKE's `labels.GKE_ACCELERATOR_LABEL` on nodes of this GPU, and the instance types (`INSTANCE_TYPE_LABEL`) of
    # machines of 8 of them, beyond the catalog's own machines of the profile (components/catalog/machines.py),
    # which pin it too.
    gke_accelerators: tuple[str, ...]
    instance_types: tuple[str, ...]
    source: str


_GFD = (
    "GFD's product label is NVML's device name, its words joined by dashes (NVIDIA/k8s-device-plugin"
    " internal/lm/resource.go `getProductName`, `sanitise`)"
)
# The NVIDIA profiles' GPUs (components/catalog/accelerators.py `product`): all three request `nvidia.com/gpu`.
H100_SXM = GpuProduct(
    GPU_PRODUCT_LABEL,
    "NVIDIA-H100-80GB-HBM3",
    gke_accelerators=("nvidia-h100-mega-80gb",),
    instance_types=("a3-megagpu-8g",),
    source=f"{_GFD}; nvidia-smi names the H100 SXM 'NVIDIA H100 80GB HBM3'; GKE's A3 Mega machines carry"
    " nvidia-h100-mega-80gb (A3 High's nvidia-h100-80gb and EC2 P5 are the catalog's machines)",
)
H200_SXM = GpuProduct(
    GPU_PRODUCT_LABEL,
    "NVIDIA-H200",
    gke_accelerators=("nvidia-h200-141gb",),
    instance_types=("a3-ultragpu-8g", "p5e.48xlarge", "p5en.48xlarge"),
    source=f"{_GFD}; nvidia-smi names the H200 SXM 'NVIDIA H200' ({H200_STEP_COSTS}, `machine`); GKE's A3"
    " Ultra machines carry nvidia-h200-141gb; EC2 P5e and P5en have 8 H200s",
)
A100_SXM4_80GB = GpuProduct(
    GPU_PRODUCT_LABEL,
    "NVIDIA-A100-SXM4-80GB",
    gke_accelerators=("nvidia-a100-80gb",),
    instance_types=("a2-ultragpu-8g", "p4de.24xlarge"),
    source=f"{_GFD}; nvidia-smi names it 'NVIDIA A100-SXM4-80GB'; GKE's A2 Ultra machines carry"
    " nvidia-a100-80gb; EC2 P4de has 8 A100 80GB",
)
