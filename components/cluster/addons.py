"""Cluster add-ons: the NVIDIA device plugin (advertises `nvidia.com/gpu` on EKS GPU nodes; GKE installs its
own; values from `specs.device_plugin.nvidia_device_plugin_values`) and KEDA (the model servers' autoscaler)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import versions
from components.k8s_objects import child_options, declare_all
from components.specs import keda


def upstream_chart(
    name: str, chart: str, repo: str, version: str, namespace: str, values: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.helm.v4.Chart:
    """A pinned chart from its upstream repository (one of `versions.CHART_REPOSITORIES`), named `<name>-chart`."""
    return k8s.helm.v4.Chart(
        f"{name}-chart",
        k8s.helm.v4.ChartArgs(
            chart=chart,
            repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=repo),
            version=version,
            namespace=namespace,
            values=values,
        ),
        opts=opts,
    )


class NvidiaDevicePlugin(pulumi.ComponentResource):
    def __init__(self, name: str, values: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:NvidiaDevicePlugin", name, None, opts)
        upstream_chart(
            name,
            "nvidia-device-plugin",
            versions.NVIDIA_DEVICE_PLUGIN_REPO,
            versions.NVIDIA_DEVICE_PLUGIN_VERSION,
            "kube-system",
            values,
            child_options(self, opts),
        )
        self.register_outputs({})


class Keda(pulumi.ComponentResource):
    """KEDA (kedacore/keda, pinned) in its own namespace behind its NetworkPolicy, with the hardened values
    `specs.keda.chart_values` gives; the model servers' ScaledObjects need its CRDs."""

    def __init__(self, name: str, values: dict[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:Keda", name, None, opts)
        objects = declare_all(self, name, [keda.namespace_manifest(), keda.network_policy()], opts)
        upstream_chart(
            name,
            versions.KEDA_CHART,
            versions.KEDA_CHART_REPO,
            versions.KEDA_VERSION,
            keda.KEDA_NAMESPACE,
            values,
            child_options(self, opts, *objects),
        )
        self.register_outputs({})
