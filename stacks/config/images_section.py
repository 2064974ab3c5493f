"""How images reach the nodes: the registry mirror, the pre-pull."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from stacks.config import formats
from stacks.config.fields import Section


class ImagesConfig(Section):
    """How images reach the nodes (docs/cold-starts.md: images pulled fast, and once)."""

    mirror: Literal["auto", "off"] = Field(
        default="auto",
        description="auto: on a created GKE cluster, an Artifact Registry remote repository per upstream registry"
        " (every image referenced through it, image streaming on the accelerator pools); on a created EKS cluster"
        " with cluster.eks.account_id, an ECR pull-through cache rule per upstream registry ECR can cache;"
        " off: pull from upstream",
    )
    prepull: bool = Field(
        default=False,
        description="true: a DaemonSet on the serving pool's nodes pulls every image the serving pods run, on all"
        " nodes at once, and the model servers start after it (for clusters no mirror serves: an existing"
        " cluster, or images.mirror off); needs the serving pods placed (cache.node_pool or the accelerator's"
        " node selector)",
    )
    ecr_credentials: dict[Literal["docker.io", "ghcr.io"], str] = Field(
        default_factory=dict,
        description="ARN of an existing Secrets Manager secret named ecr-pullthroughcache/... per registry that"
        " ECR caches only with a credential (docker.io, ghcr.io); unset: that registry is pulled directly",
    )

    @field_validator("ecr_credentials")
    @classmethod
    def _secret_arns(cls, value: dict[str, str]) -> dict[str, str]:
        for registry, arn in value.items():
            formats.ecr_credential_arn(registry, arn)
        return value

    @field_validator("mirror", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value
