"""NvidiaDevicePlugin: advertises `nvidia.com/gpu` on EKS GPU nodes (GKE installs its own); its values
come from `specs.clusters.nvidia_device_plugin_values`."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import versions
from components.k8s_objects import child_options


class NvidiaDevicePlugin(pulumi.ComponentResource):
    def __init__(self, name: str, values: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:NvidiaDevicePlugin", name, None, opts)
        k8s.helm.v4.Chart(
            f"{name}-chart",
            k8s.helm.v4.ChartArgs(
                chart="nvidia-device-plugin",
                repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=versions.NVIDIA_DEVICE_PLUGIN_REPO),
                version=versions.NVIDIA_DEVICE_PLUGIN_VERSION,
                namespace="kube-system",
                values=values,
            ),
            opts=child_options(self, opts),
        )
        self.register_outputs({})
