"""NvidiaDevicePlugin: advertises `nvidia.com/gpu` on EKS GPU nodes (GKE installs its own)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import versions
from components.k8s_objects import child_options


class NvidiaDevicePlugin(pulumi.ComponentResource):
    def __init__(self, name: str, node_selector: dict[str, str], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:NvidiaDevicePlugin", name, None, opts)
        k8s.helm.v4.Chart(
            f"{name}-chart",
            k8s.helm.v4.ChartArgs(
                chart="nvidia-device-plugin",
                repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=versions.NVIDIA_DEVICE_PLUGIN_REPO),
                version=versions.NVIDIA_DEVICE_PLUGIN_VERSION,
                namespace="kube-system",
                values={
                    "nodeSelector": node_selector,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            ),
            opts=child_options(self, opts),
        )
        self.register_outputs({})
