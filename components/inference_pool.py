"""InferencePoolCrds: the Gateway API Inference Extension CRDs (InferencePool v1) at a pinned release."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import versions
from components.k8s_objects import child_options


@dataclass(frozen=True)
class InferencePoolCrdsArgs:
    version: str
    file: str | None = None  # a local copy of the release's manifests (air-gapped clusters, the e2e run)


class InferencePoolCrds(pulumi.ComponentResource):
    def __init__(self, name: str, args: InferencePoolCrdsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:inference_pool:InferencePoolCrds", name, None, opts)
        self.manifests = k8s.yaml.v2.ConfigFile(
            f"{name}-manifests",
            file=args.file or versions.gaie_crds_url(args.version),
            opts=child_options(self, opts),
        )
        self.register_outputs({})
