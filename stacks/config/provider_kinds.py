"""What the config model itself reads of a cluster provider (`cluster.provider`), one record each: the layer and
platform a stack on it defaults to, and the cloud whose registry mirror a cluster stack on it exports.

The provider records (`stacks/config/providers/`) carry these as their `kind`; they take a `StackConfig`, so the
model that defines it cannot import them, and reads its defaults and its mirror checks here instead."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

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
    platform: str = "base"  # `cluster.platform` when the stack sets none
    platform_fixed: bool = False  # the only platform it runs
    reads_cluster_stack: bool = False  # a serving stack's: its cluster stack's outputs (`cluster.stack`)
    mirror: MirrorCloud | None = None  # the cloud of the mirror a created cluster gets

    @property
    def layer(self) -> Literal["all", "serving"]:
        """The stack's layer when it sets none: a stack on another stack's cluster serves only."""
        return "serving" if self.reads_cluster_stack else "all"


EXISTING = ProviderKind("existing")
GKE = ProviderKind("gke", platform="gke", platform_fixed=True, mirror=GCP_MIRROR)
EKS = ProviderKind("eks", mirror=AWS_MIRROR)
STACK = ProviderKind("stack", reads_cluster_stack=True)
PROVIDER_KINDS: dict[str, ProviderKind] = {k.key: k for k in (EXISTING, GKE, EKS, STACK)}
# The clouds a cluster stack's mirror can be of: those of the providers that create one.
MIRROR_CLOUDS: dict[str, MirrorCloud] = {k.mirror.key: k.mirror for k in PROVIDER_KINDS.values() if k.mirror}
