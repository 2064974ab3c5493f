"""What a platform (`cluster.platform`, the seed's INFRA_PROVIDER) changes in the pods and the Gateway: one record
per platform, read by the model servers' spec and the Gateway's class, so no spec compares a platform's name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.catalog import labels
from components.catalog.key_lists import literal_of


@dataclass(frozen=True)
class Platform:
    key: str
    # Vendors whose pods turn the platform's NCCL tuner and net plugins off (they misbehave in these pods; the
    # guide's gke overlays set NCCL_TUNER_PLUGIN=none, NCCL_NET_PLUGIN="").
    nccl_plugins_off: tuple[str, ...] = ()
    # Its Lustre mount is root-owned: an init container opens it to the pod's group first (the gke overlays).
    root_owned_lustre: bool = False
    # The Gateway's class is the platform's own managed one (GKE's regional Application Load Balancers).
    managed_gateway: bool = False
    # The node label its GPU nodes name their GPU by, which a model server requires where nothing it selects
    # pins its device: GKE's own accelerator label, which GKE sets on every GPU node (it runs no GPU Feature
    # Discovery of its own); None: the GPU's vendor labeller's (`GpuProduct.label`, e.g. the GPU operator's GFD).
    gpu_product_label: str | None = None


PLATFORMS: dict[str, Platform] = {
    p.key: p
    for p in (
        Platform("base"),
        Platform(
            "gke",
            nccl_plugins_off=("nvidia",),
            root_owned_lustre=True,
            managed_gateway=True,
            gpu_product_label=labels.GKE_ACCELERATOR_LABEL,
        ),
        Platform("amd-ci"),
    )
}

if TYPE_CHECKING:  # mypy cannot evaluate a Literal built from a registry (key_lists.literal_of)
    PlatformKey = str
else:
    PlatformKey = literal_of(PLATFORMS)  # `cluster.platform`
