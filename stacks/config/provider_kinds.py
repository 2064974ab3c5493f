"""What the config model itself reads of a cluster provider (`cluster.provider`), one record each: the layer and
platform a stack on it defaults to, and the cloud whose registry mirror a cluster stack on it exports.

The provider records (`stacks/config/providers/`) carry these as their `kind`; they take a `StackConfig`, so the
model that defines it cannot import them, and reads its defaults and its mirror checks here instead."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from components.catalog.key_lists import literal_of, spoken
from stacks.config import formats


def _aws_account(value: str) -> str:
    if not re.fullmatch(r"[0-9]{12}", value, re.ASCII):
        raise ValueError("must be a 12-digit AWS account (cloud eks)")
    return value


@dataclass(frozen=True)
class MirrorCloud:
    """A cloud's pull-through caches, as a cluster stack exports them (`MirrorFacts.cloud` is its key)."""

    key: str
    region: Callable[[str], str]  # the format check of the mirror's region
    project: Callable[[str], str]  # ... and of where it lives (a GCP project, an AWS account)
    # Artifact Registry remote repositories (the image path rewritten per repository); else ECR pull-through rules,
    # which alone pull some registries directly and read credentials for others.
    artifact_registry: bool


GCP_MIRROR = MirrorCloud("gke", formats.gcp_region, formats.gcp_project, artifact_registry=True)
AWS_MIRROR = MirrorCloud("eks", formats.aws_region, _aws_account, artifact_registry=False)


@dataclass(frozen=True)
class ProviderKind:
    key: str  # the config's `cluster.provider`
    does: str  # what a stack on it does, for `cluster.provider`'s description
    platform: str = "base"  # `cluster.platform` when the stack sets none
    platform_fixed: bool = False  # the only platform it runs
    reads_cluster_stack: bool = False  # a serving stack's: its cluster stack's outputs (`cluster.stack`)
    mirror: MirrorCloud | None = None  # the cloud of the mirror a created cluster gets

    @property
    def layer(self) -> Literal["all", "serving"]:
        """The stack's layer when it sets none: a stack on another stack's cluster serves only."""
        return "serving" if self.reads_cluster_stack else "all"


_CREATES = "create the cluster too"
EXISTING = ProviderKind("existing", "deploy to a cluster you have")
GKE = ProviderKind("gke", _CREATES, platform="gke", platform_fixed=True, mirror=GCP_MIRROR)
EKS = ProviderKind("eks", _CREATES, mirror=AWS_MIRROR)
STACK = ProviderKind(
    "stack",
    "serve on the cluster of a cluster stack (`layer: cluster`) named by cluster.stack",
    reads_cluster_stack=True,
)
PROVIDER_KINDS: dict[str, ProviderKind] = {k.key: k for k in (EXISTING, GKE, EKS, STACK)}
# The clouds a cluster stack's mirror can be of: those of the providers that create one.
MIRROR_CLOUDS: dict[str, MirrorCloud] = {k.mirror.key: k.mirror for k in PROVIDER_KINDS.values() if k.mirror}
# The providers a cluster stack runs on (what its `llmdCluster` names): all but those that read one.
CLUSTER_STACK_PROVIDERS = tuple(k.key for k in PROVIDER_KINDS.values() if not k.reads_cluster_stack)

if TYPE_CHECKING:  # mypy cannot evaluate a Literal built from a registry (key_lists.literal_of)
    ProviderKey = str
    MirrorCloudKey = str
    ClusterStackProviderKey = str
else:
    ProviderKey = literal_of(PROVIDER_KINDS)  # `cluster.provider`
    MirrorCloudKey = literal_of(MIRROR_CLOUDS)  # `llmdCluster`'s mirror.cloud
    ClusterStackProviderKey = literal_of(CLUSTER_STACK_PROVIDERS)  # `llmdCluster`'s provider


def provider_description(default: str) -> str:
    """`cluster.provider`'s description: each provider's `does`, providers that do the same named together."""
    groups: dict[str, list[str]] = {}
    for kind in PROVIDER_KINDS.values():
        groups.setdefault(kind.does, []).append(kind.key)
    return "; ".join([*(f"{spoken(keys)}: {does}" for does, keys in groups.items()), f"default {default}"])
