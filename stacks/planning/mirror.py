"""Images pulled fast and once: which pull-through cache serves a created cluster (Artifact Registry on GKE,
ECR on EKS), and the router chart's values that send its images through it.

components/specs/images.py has the registry arithmetic; the plan rewrites every image it renders with
`Mirror.image` (stacks/planning/plan.py `_through_mirror`).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from components.catalog import versions
from components.specs import images
from stacks.config import StackConfig
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.cluster_outputs import mirror_facts
from stacks.config.provider_kinds import MIRROR_CLOUDS, MirrorCloudKey
from stacks.config.providers import provider_of


@dataclass(frozen=True)
class Mirror:
    """The created cluster's pull-through caches: where each upstream registry's images are referenced."""

    region: str
    project: str  # GCP project (Artifact Registry) or AWS account (ECR)
    registries: list[str]  # upstream registries served through the caches
    cloud: MirrorCloudKey = "gke"
    direct: dict[str, str] = dataclasses.field(default_factory=dict)  # registry -> why it is pulled directly
    credentials: dict[str, str] = dataclasses.field(default_factory=dict)  # ECR: registry -> secret ARN

    @property
    def artifact_registry(self) -> bool:
        """Artifact Registry remote repositories (GKE, whose pools stream their images); else ECR rules."""
        return MIRROR_CLOUDS[self.cloud].artifact_registry

    def image(self, image: str) -> str:
        registry, path = images.split_image(image)
        if registry not in self.registries:  # a serving stack's image from a registry its cluster caches not
            return image
        if self.artifact_registry:
            return images.mirrored(image, self.region, self.project)
        return f"{images.ecr_prefix(registry, self.region, self.project)}/{path}"


def mirror_registry(config: StackConfig) -> tuple[str, str] | None:
    """(region, project) of the Artifact Registry mirror: created GKE clusters, unless `images.mirror: off`."""
    provider = provider_of(config)
    facts = provider.mirror(config, set()) if provider.image_streaming else None
    return (facts.region, facts.project) if facts is not None else None


def cluster_mirror(config: StackConfig, registries: set[str]) -> Mirror | None:
    """The pull-through caches of a created cluster: Artifact Registry on GKE, ECR on EKS (for the account);
    a serving stack's are its cluster stack's (the registries they serve; the others are pulled directly)."""
    outputs = config.cluster.outputs
    if outputs is not None:  # `images.mirror: off` here pulls from upstream, past the cluster's caches
        facts = outputs.mirror if config.images.mirror != "off" else None
    else:
        facts = mirror_facts(config, registries)
    return from_facts(facts) if facts is not None else None


def from_facts(facts: MirrorFacts) -> Mirror:
    """The mirror a cluster stack exported (or this stack's own cluster creates)."""
    return Mirror(
        facts.region,
        facts.project,
        list(facts.registries),
        cloud=facts.cloud,
        direct=dict(facts.direct),
        credentials=dict(facts.credentials),
    )


# The router chart's images: (registry, repository) as its values split them, and the Envoy preset's image.
_CHART_IMAGES = (
    tuple(versions.EPP_IMAGE_REPOSITORY.rsplit("/", 1)),
    (versions.CHART_TOKENIZER_REGISTRY, versions.CHART_TOKENIZER_REPOSITORY),
)


def _registry_through(mirror: Mirror, registry: str, repository: str) -> str | None:
    """The registry value that makes the chart's `<registry>/<repository>:<tag>` come through the mirror."""
    upstream = f"{registry}/{repository}"
    mirrored = mirror.image(upstream)
    return None if mirrored == upstream else mirrored.removesuffix(f"/{repository}")


def router_values_through(values: dict[str, Any], mirror: Mirror) -> dict[str, Any]:
    """The chart's images through the mirror: the EPP's and the tokenizer's registries (the chart keeps
    their repositories and tags), the Envoy preset's whole image (the chart takes it as one string)."""
    out = copy.deepcopy(values)
    router = out["router"]
    epp = _registry_through(mirror, *_CHART_IMAGES[0])
    if epp:
        router["epp"].setdefault("image", {})["registry"] = epp
    tokenizer = _registry_through(mirror, *_CHART_IMAGES[1])
    if tokenizer and "tokenizer" in router:
        router["tokenizer"].setdefault("image", {})["registry"] = tokenizer
    envoy = mirror.image(versions.CHART_ENVOY_IMAGE)
    if envoy != versions.CHART_ENVOY_IMAGE and router.get("proxy", {}).get("proxyType", "envoy") == "envoy":
        router.setdefault("proxy", {})["image"] = envoy
    return out


def chart_images() -> list[str]:
    """The images the router chart renders (their registries need a cache too)."""
    return [versions.CHART_ENVOY_IMAGE, *(f"{registry}/{repository}" for registry, repository in _CHART_IMAGES)]
