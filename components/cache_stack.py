"""CacheStack: one namespace holding the whole tiered prefix cache, in dependency order.

Namespace -> HF token Secret -> GAIE CRDs -> router (chart, which creates the InferencePool)
-> model servers (after the Secret they read) -> monitoring.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import labels
from components.inference_pool import InferencePoolCrds, InferencePoolCrdsArgs
from components.model_server import ModelServer, ModelServerArgs
from components.monitoring import ModelServerMonitoring, ModelServerMonitoringArgs
from components.router import Router, RouterArgs
from components.specs.model_server import ModelServerSpec


@dataclass(frozen=True)
class CacheStackArgs:
    namespace: str
    hf_token: pulumi.Input[str]  # a Pulumi secret
    gaie_version: str
    router_release: str
    router_chart: str
    router_version: str
    router_values: dict[str, Any]
    model_server: ModelServerSpec
    monitor: dict[str, Any] | None = None


class CacheStack(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: CacheStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cache_stack:CacheStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
            opts=child,
        )
        ns_name = namespace.metadata.apply(lambda m: str(m.name))
        hf_token = k8s.core.v1.Secret(
            f"{name}-hf-token",
            metadata={"name": labels.HF_TOKEN_SECRET, "namespace": ns_name},
            type="Opaque",
            string_data={labels.HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
            opts=child,
        )
        crds = InferencePoolCrds(f"{name}-gaie-crds", InferencePoolCrdsArgs(version=args.gaie_version), child)
        router = Router(
            f"{name}-router",
            RouterArgs(
                release=args.router_release,
                namespace=ns_name,
                chart=args.router_chart,
                version=args.router_version,
                values=args.router_values,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=[crds, namespace]),
        )
        ModelServer(
            f"{name}-{args.model_server.deployment_name}",
            ModelServerArgs(spec=args.model_server),
            pulumi.ResourceOptions(parent=self, depends_on=[namespace, hf_token]),
        )
        if args.monitor is not None:
            ModelServerMonitoring(
                f"{name}-monitoring",
                ModelServerMonitoringArgs(monitor=args.monitor),
                pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
            )
        self.namespace = ns_name
        self.router_endpoint = router.endpoint
        self.register_outputs({"namespace": self.namespace, "routerEndpoint": self.router_endpoint})
