"""EcrPullThroughCache: an ECR pull-through cache rule per upstream registry the stack pulls from, so each
image is fetched from upstream once per region and every later node pulls it from ECR."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.specs import images


@dataclass(frozen=True)
class EcrPullThroughCacheArgs:
    region: str
    registries: list[str]  # upstream registries ECR caches, e.g. quay.io, registry.k8s.io
    credentials: dict[str, str] = field(default_factory=dict)  # registry -> Secrets Manager secret ARN


class EcrPullThroughCache(pulumi.ComponentResource):
    def __init__(self, name: str, args: EcrPullThroughCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:EcrPullThroughCache", name, None, opts)
        for registry in args.registries:
            aws.ecr.PullThroughCacheRule(
                f"{name}-{images.repository_id(registry)}",
                **images.pull_through_rule_args(registry, args.credentials),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({})
