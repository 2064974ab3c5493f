"""ModelServer: every object of one model-server role (ServiceAccount, workload, connector objects)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.k8s_objects import declare_all


@dataclass(frozen=True)
class ModelServerArgs:
    manifests: list[dict[str, Any]]  # in dependency order: what the workload reads comes first


class ModelServer(pulumi.ComponentResource):
    workload_name: str

    def __init__(self, name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:model_server:ModelServer", name, None, opts)
        declare_all(self, name, args.manifests, opts)
        self.workload_name = args.manifests[-1]["metadata"]["name"]
        self.register_outputs({"workloadName": self.workload_name})
