"""CacheStack: the whole tiered prefix cache, in dependency order.

Namespace -> HF token Secret -> GAIE CRDs -> router (chart, which creates the InferencePool); then
the plan's workloads in their declaration order, each after what it needs (the shared claim, the
weights, the cache daemons and the image pre-pull before the model servers; monitoring beside them;
the verification Job after them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import labels
from components.inference_pool import InferencePoolCrds, InferencePoolCrdsArgs
from components.manifest import Manifest
from components.router import Router, RouterArgs
from components.specs.workloads import CLUSTER, HF_TOKEN, NAMESPACE, ROUTER, Workload
from components.workload import WorkloadComponent


@dataclass(frozen=True)
class CacheStackArgs:
    namespace: str
    hf_token: pulumi.Input[str]  # a Pulumi secret
    gaie_version: str
    router_release: str
    router_chart: str
    router_version: str
    router_values: dict[str, Any]
    workloads: dict[str, Workload]  # in declaration order (`StackPlan.workloads`)
    gaie_crds_file: str | None = None  # a local copy of the CRD manifests instead of the release asset
    router_policies: list[Manifest] = field(default_factory=list)  # NetworkPolicy of the chart's pods
    # What the model servers need from outside the stack: their node pool, the tier's storage backend.
    serving_needs: list[pulumi.Resource] = field(default_factory=list)
    # False on a serving stack: its cluster stack applied the CRDs, cluster-wide, once for every model.
    crds: bool = True
    namespace_labels: dict[str, str] = field(default_factory=dict)  # e.g. the one its cluster's Gateway admits by
    namespace_annotations: dict[str, str] = field(default_factory=dict)  # the plan's cost stamp (labels.py)


class CacheStack(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: CacheStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cache_stack:CacheStack", name, None, opts)
        self._name = name
        namespace, hf_token = self._namespace(args)
        router = self._router(args, namespace)
        declared: dict[str, list[pulumi.Resource]] = {
            NAMESPACE: [namespace],
            HF_TOKEN: [hf_token],
            ROUTER: [router],
            CLUSTER: list(args.serving_needs),
        }
        self.workloads: dict[str, WorkloadComponent] = {}
        for key, workload in args.workloads.items():
            needs = [r for need in workload.needs for r in declared[need]]
            component = WorkloadComponent(
                f"{name}-{key}", workload, pulumi.ResourceOptions(parent=self, depends_on=needs or None)
            )
            declared[key] = [component]
            self.workloads[key] = component
        self.namespace = namespace.metadata.apply(lambda m: str(m.name))
        self.router_endpoint = router.endpoint
        self.register_outputs({"namespace": self.namespace, "routerEndpoint": self.router_endpoint})

    def _namespace(self, args: CacheStackArgs) -> tuple[k8s.core.v1.Namespace, k8s.core.v1.Secret]:
        """The stack's namespace and the HF token Secret in it (a Pulumi secret end to end)."""
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{self._name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {labels.GUIDE_LABEL: labels.GUIDE, **args.namespace_labels},
                **({"annotations": dict(args.namespace_annotations)} if args.namespace_annotations else {}),
            },
            opts=child,
        )
        hf_token = k8s.core.v1.Secret(
            f"{self._name}-hf-token",
            metadata={"name": labels.HF_TOKEN_SECRET, "namespace": namespace.metadata.apply(lambda m: str(m.name))},
            type="Opaque",
            string_data={labels.HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
            opts=child,
        )
        return namespace, hf_token

    def _router(self, args: CacheStackArgs, namespace: k8s.core.v1.Namespace) -> Router:
        """The Gateway API Inference Extension CRDs (unless the cluster stack applied them), then the router chart
        (which creates the InferencePool)."""
        child = pulumi.ResourceOptions(parent=self)
        before: list[pulumi.Resource] = [namespace]
        if args.crds:
            before.append(
                InferencePoolCrds(
                    f"{self._name}-gaie-crds",
                    InferencePoolCrdsArgs(version=args.gaie_version, file=args.gaie_crds_file),
                    child,
                )
            )
        return Router(
            f"{self._name}-router",
            RouterArgs(
                release=args.router_release,
                namespace=namespace.metadata.apply(lambda m: str(m.name)),
                chart=args.router_chart,
                version=args.router_version,
                values=args.router_values,
                network_policies=args.router_policies,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=before),
        )
