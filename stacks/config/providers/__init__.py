"""The cluster providers, one module each (`cluster_provider.py` is what they answer); `provider_of` resolves a stack's
from `cluster.provider`. Nothing outside this package compares a provider's name."""

from __future__ import annotations

from collections.abc import Callable

from components.catalog.key_lists import spoken
from stacks.config import StackConfig
from stacks.config.providers.cluster_provider import ClusterProvider
from stacks.config.providers.eks_provider import EKS
from stacks.config.providers.existing_provider import EXISTING
from stacks.config.providers.gke_provider import GKE
from stacks.config.providers.stack_provider import STACK

__all__ = ["PROVIDERS", "ClusterProvider", "provider_of", "providers_that"]

PROVIDERS: dict[str, ClusterProvider] = {p.key: p for p in (EXISTING, GKE, EKS, STACK)}


def provider_of(config: StackConfig) -> ClusterProvider:
    return PROVIDERS[config.cluster.provider]


def providers_that(test: Callable[[ClusterProvider], bool]) -> str:
    """The keys of the providers that pass `test`, spoken for a message ("gke or eks")."""
    return spoken(p.key for p in PROVIDERS.values() if test(p))
