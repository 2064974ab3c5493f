"""A node pool to create, as plain data (the pool record the plan, the cost and the summary read), and what the
GKE and EKS argument builders share: taint effects as the clouds spell them, a kubeconfig's YAML. The clouds'
own arguments are in gke_cluster.py and eks_cluster.py; the NVIDIA device plugin's in device_plugin.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from components.catalog.labels import NODE_POOL_LABEL
from components.catalog.machines import MachineType
from components.specs.node_autoscaling import NodeBounds

Args = dict[str, Any]
POOL_LABEL = NODE_POOL_LABEL  # created pools label their nodes with their key


@dataclass(frozen=True)
class PoolSpec:
    """A node pool to create, resolved from the stack config and the machine catalog."""

    key: str
    name: str  # the cloud-side name
    machine: MachineType
    node_count: int
    tpu_topology: str | None = None
    spot: bool = False
    reservation: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    image_streaming: bool = False  # GKE: stream images from Artifact Registry instead of pulling them whole
    bounds: NodeBounds | None = None  # node autoscaling matched to KEDA's replica bounds (None: a fixed count)

    @property
    def node_labels(self) -> dict[str, str]:
        return {POOL_LABEL: self.key, **self.labels}


# Kubernetes taint effects as the GKE and EKS node-pool APIs spell them.
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


def cloud_taints(taints: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**t, "effect": TAINT_EFFECTS[t["effect"]]} for t in taints]


def kubeconfig(name: str, server: str, ca_data: str | None, user: Args) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data or ""}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [{"name": name, "user": user}],
        },
        sort_keys=False,
    )
