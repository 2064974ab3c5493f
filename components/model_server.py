"""ModelServer: the ServiceAccount and Deployment of one model-server role (vLLM decode pods)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_objects import child_options, declare
from components.specs import model_server as spec_fns
from components.specs.model_server import ModelServerSpec


@dataclass(frozen=True)
class ModelServerArgs:
    spec: ModelServerSpec


class ModelServer(pulumi.ComponentResource):
    deployment_name: pulumi.Output[str]
    pod_labels: dict[str, str]

    def __init__(self, name: str, args: ModelServerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:model_server:ModelServer", name, None, opts)
        spec = args.spec
        service_account = declare(f"{name}-sa", spec_fns.service_account(spec), child_options(self, opts))
        deployment = declare(
            f"{name}-deployment", spec_fns.deployment(spec), child_options(self, opts, service_account)
        )
        self.deployment_name = cast(k8s.apps.v1.Deployment, deployment).metadata.apply(lambda m: str(m.name))
        self.pod_labels = spec.pod_labels
        self.register_outputs({"deploymentName": self.deployment_name})
