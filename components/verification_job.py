"""VerificationJob: the seed's verification steps as a Job that `pulumi up` waits on (Pulumi awaits Jobs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class VerificationJobArgs:
    manifests: list[dict[str, Any]]  # components.specs.verification: script ConfigMap, RBAC, Job


class VerificationJob(pulumi.ComponentResource):
    def __init__(self, name: str, args: VerificationJobArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:verification:VerificationJob", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.register_outputs({})
