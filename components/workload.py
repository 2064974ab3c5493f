"""Workload: the one component for a group of Kubernetes objects the specs built, under its own type token.

Each workload of the stack (the LMCache server, the Mooncake master and client, the model cache, the
image pre-pull, monitoring, the verification Job, the model servers, the tier's claim) is a subclass
that names only its type token, so its URN (and every child's) stays what it was. It declares its
manifests in order (each depending on the ones before it) and registers its objects as outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi

from components.k8s_objects import declare_all
from components.manifest import Manifest


@dataclass(frozen=True)
class WorkloadArgs:
    manifests: list[Manifest]  # in dependency order: what a workload reads comes first


class Workload(pulumi.ComponentResource):
    type_token: ClassVar[str]  # `llmd:<module>:<Component>`: part of every URN below it
    objects: list[str]  # `Kind/name` of each object, in declaration order

    def __init__(self, name: str, args: WorkloadArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.type_token, name, None, opts)
        self.resources = declare_all(self, name, args.manifests, opts)
        self.objects = [f"{m['kind']}/{m['metadata']['name']}" for m in args.manifests]
        self.register_outputs({"objects": self.objects, **self.outputs(args)})

    def outputs(self, args: WorkloadArgs) -> dict[str, Any]:
        """What a workload exports beside its objects (none by default)."""
        return {}
