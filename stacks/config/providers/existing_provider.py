"""An existing cluster: reached through a kubeconfig (or the ambient one), its pools described."""

from __future__ import annotations

from stacks.config import StackConfig, provider_kinds
from stacks.config.providers.cluster_provider import ClusterProvider


def exports_kubeconfig(config: StackConfig) -> bool:
    """A cluster stack on an existing cluster exports the kubeconfig it was given, else none."""
    return config.cluster.kubeconfig is not None


EXISTING = ClusterProvider(
    kind=provider_kinds.EXISTING,
    creates=False,
    takes_kubeconfig=True,
    describes_pools=True,
    exports_kubeconfig=exports_kubeconfig,
)
