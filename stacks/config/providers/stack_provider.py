"""A cluster stack's cluster (a serving stack): its pools, platform and storage from the cluster stack's
outputs (`stacks/config/cluster_outputs.py`), its file systems the cluster stack's."""

from __future__ import annotations

from stacks.config import provider_kinds
from stacks.config.providers.cluster_provider import ClusterProvider

STACK = ClusterProvider(kind=provider_kinds.STACK, creates=False)
