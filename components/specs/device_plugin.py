"""The NVIDIA device plugin's chart values for the created pools whose nodes need it (EKS GPU nodes)."""

from __future__ import annotations

from components.specs.clusters import POOL_LABEL, Args, PoolSpec


def nvidia_device_plugin_pools(pools: list[PoolSpec]) -> list[PoolSpec]:
    """The created pools whose nodes need the NVIDIA device plugin to advertise `nvidia.com/gpu` (EKS
    GPU nodes; GKE installs its own plugin with the driver)."""
    return [p for p in pools if p.machine.needs_nvidia_device_plugin]


def nvidia_device_plugin_values(pools: list[PoolSpec]) -> Args:
    """The chart's values: one DaemonSet on the nodes of every such pool, tolerating their taints.
    `affinity` replaces the chart's default, which asks for Node Feature Discovery labels (pci-10de)
    that EKS nodes do not carry."""
    keys = sorted({p.key for p in pools})
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for taint in (t for p in pools for t in p.taints):
        toleration = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
        if toleration not in tolerations:
            tolerations.append(toleration)
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": keys}]}]
                }
            }
        },
        "tolerations": tolerations,
    }
