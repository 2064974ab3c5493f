"""WorkloadComponent: the one component for a workload of the plan (`components.specs.workloads.Workload`).

It registers under the workload's own type token, so its URN (and every child's) stays what it was
when each workload had its own class. It declares the manifests in order (each depending on the ones
before it) and registers its objects as outputs, with whatever the workload exports beside them.
"""

from __future__ import annotations

import pulumi

from components.k8s_objects import declare_all
from components.specs.workloads import Workload


class WorkloadComponent(pulumi.ComponentResource):
    objects: list[str]  # `Kind/name` of each object, in declaration order

    def __init__(self, name: str, workload: Workload, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(workload.type.token, name, None, opts)
        self.resources = declare_all(self, name, workload.manifests, opts, workload.ignore_changes)
        self.objects = [f"{m['kind']}/{m['metadata']['name']}" for m in workload.manifests]
        self.register_outputs({"objects": self.objects, **workload.outputs})
