"""Which node labels say which accelerator a node has: each (label, value) the catalog knows mapped to the one
profile whose nodes carry it. The plan reads it to decide whether the nodes a model server selects already pin its
device or it must require its GPU product (stacks/planning/gpu_product_affinity.py), and the policy rule
`identity-labels` to hold a pod's profile to the nodes it selects (policies/checks/identity.py). Computed on each
call from the profiles and machines, so a profile added at run time (a test's) is in it."""

from __future__ import annotations

from components.catalog import labels
from components.catalog.accelerators import ACCELERATORS, AcceleratorProfile
from components.catalog.machines import MACHINES


def product_labels() -> set[str]:
    """The labels whose value names a device (not a machine): a value of one that a profile does not list is
    another device, known or not. GKE's two, and each GPU product's vendor label."""
    named = {p.product.label for p in ACCELERATORS.values() if p.product}
    return {labels.GKE_ACCELERATOR_LABEL, labels.GKE_TPU_ACCELERATOR_LABEL, *named}


def node_pins() -> dict[tuple[str, str], str]:
    """(node label, value) -> the profile key whose nodes alone carry it: a GPU's product (GPU Feature Discovery's),
    GKE's guest accelerator and the instance type (a profile's `GpuProduct`, and the catalog's machines), a TPU
    slice's accelerator type."""
    out: dict[tuple[str, str], str] = {}
    for machine in MACHINES.values():
        out[(labels.INSTANCE_TYPE_LABEL, machine.key)] = machine.accelerator
        if machine.gke_accelerator:
            out[(labels.GKE_ACCELERATOR_LABEL, machine.gke_accelerator)] = machine.accelerator
    for profile in ACCELERATORS.values():
        if profile.tpu_accelerator:
            out[(labels.GKE_TPU_ACCELERATOR_LABEL, profile.tpu_accelerator)] = profile.key
        product = profile.product
        if product is None:
            continue
        out[(product.label, product.value)] = profile.key
        out.update({(labels.GKE_ACCELERATOR_LABEL, v): profile.key for v in product.gke_accelerators})
        out.update({(labels.INSTANCE_TYPE_LABEL, v): profile.key for v in product.instance_types})
    return out


def values_pinning(profile: str, label: str) -> list[str]:
    """The values of `label` that pin `profile`, sorted (none: the label does not tell its nodes)."""
    return sorted(v for (key, v), pinned in node_pins().items() if key == label and pinned == profile)


def device_peers(profile: AcceleratorProfile) -> list[str]:
    """The other profiles that request the same devices (an extended resource or DRA class): the device a pod
    requests does not say which of them it runs on."""
    own = profile.device_resource or profile.dra_device_class
    return sorted(
        p.key
        for p in ACCELERATORS.values()
        if p.key != profile.key and (p.device_resource or p.dra_device_class) == own
    )
