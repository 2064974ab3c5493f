"""The GPU a model server requires of its node. Every NVIDIA GPU is `nvidia.com/gpu`, so where nothing the pods
select says which one a node has (a created pool's machine type; a described pool's labels: GPU Feature
Discovery's product, GKE's accelerator, the instance type; components/catalog/node_pins.py), they require their
profile's product by the label their platform's GPU nodes carry (`Platform.gpu_product_label`), else by its
vendor labeller's (`GpuProduct.label`): the HBM budget is
sized for that device, and a pod on a smaller GPU would not fit. A described pool whose labels name another
device is refused here, in one line."""

from __future__ import annotations

import dataclasses

from components.catalog.accelerators import ACCELERATORS
from components.catalog.node_pins import node_pins, product_labels, values_pinning
from components.catalog.platforms import PLATFORMS
from components.specs.servers.scheduling import Scheduling
from stacks.config import StackConfig
from stacks.config.errors import ConfigError
from stacks.config.providers import provider_of


def with_product(config: StackConfig, scheduling: Scheduling, accelerator: str | None = None) -> Scheduling:
    """`scheduling` (a described pool's labels, or nothing) with the profile's GPU product required where its
    selector does not pin the device; a created pool's key pins its machine type, which the plan holds to the
    accelerator (tier_fit.py). `accelerator`: a P/D pool's own profile (default: `cache.accelerator`)."""
    if provider_of(config).creates:
        return scheduling
    profile = ACCELERATORS[accelerator or config.cache.accelerator]
    pins, named = node_pins(), product_labels()
    for label, value in scheduling.node_selector.items():
        own = values_pinning(profile.key, label)
        pinned = pins.get((label, value))
        if (pinned is not None and pinned != profile.key) or (label in named and own and value not in own):
            names = f"the nodes of {pinned}" if pinned else "another device"
            raise ConfigError(
                f"node_pools.{config.cache.node_pool}.labels",
                {label: value},
                f"{names}, not of cache.accelerator {profile.key} ({profile.reference_hardware};"
                f" {label}: {' or '.join(own) if own else 'not a label its nodes are told by'})",
            )
    if profile.product is None or any(pins.get(item) == profile.key for item in scheduling.node_selector.items()):
        return scheduling
    named_by = PLATFORMS[config.cluster.effective_platform].gpu_product_label
    values = values_pinning(profile.key, named_by) if named_by else []
    if named_by and values:
        return dataclasses.replace(scheduling, required={named_by: values})
    # the platform names none of this GPU's nodes: its vendor labeller's product
    return dataclasses.replace(scheduling, required={profile.product.label: [profile.product.value]})
