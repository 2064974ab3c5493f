"""CacheStack: the whole tiered prefix cache, in dependency order.

Namespace -> HF token Secret -> GAIE CRDs -> router (chart, which creates the InferencePool);
shared storage, the weights, the Mooncake services, the LMCache server and the image pre-pull ->
model servers (after everything they read or mount, their images on every node) -> monitoring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalog import labels
from components.image_prepull import ImagePrepull, ImagePrepullArgs
from components.inference_pool import InferencePoolCrds, InferencePoolCrdsArgs
from components.lmcache_server import LMCacheServer, LMCacheServerArgs
from components.manifest import Manifest
from components.model_cache import ModelCache, ModelCacheArgs
from components.model_server import ModelServer, ModelServerArgs
from components.monitoring import Monitoring, MonitoringArgs
from components.mooncake import MooncakeArgs, MooncakeClient, MooncakeMaster
from components.router import Router, RouterArgs
from components.storage import SharedStorage, SharedStorageArgs
from components.verification_job import VerificationJob, VerificationJobArgs


@dataclass(frozen=True)
class CacheStackArgs:
    namespace: str
    hf_token: pulumi.Input[str]  # a Pulumi secret
    gaie_version: str
    router_release: str
    router_chart: str
    router_version: str
    router_values: dict[str, Any]
    model_servers: dict[str, list[Manifest]]  # by role; "decode" for single-role stacks
    gaie_crds_file: str | None = None  # a local copy of the CRD manifests instead of the release asset
    storage_claim: Manifest | None = None
    model_cache: list[Manifest] = field(default_factory=list)  # [dedicated claim], fetch script, fetch Job
    lmcache_server: list[Manifest] = field(default_factory=list)
    mooncake_master: list[Manifest] = field(default_factory=list)
    mooncake_client: list[Manifest] = field(default_factory=list)
    monitoring: list[Manifest] = field(default_factory=list)
    verification: list[Manifest] = field(default_factory=list)
    router_policies: list[Manifest] = field(default_factory=list)  # NetworkPolicy of the chart's pods
    prepull: list[Manifest] = field(default_factory=list)  # [NetworkPolicy], the image pre-pull DaemonSet
    # What the model servers need from outside the stack: their node pool, the tier's storage backend.
    serving_needs: list[pulumi.Resource] = field(default_factory=list)


class CacheStack(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]

    def __init__(self, name: str, args: CacheStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cache_stack:CacheStack", name, None, opts)
        self._name = name
        namespace, hf_token = self._namespace(args)
        router = self._router(args, namespace)
        serving_needs = self._serving_needs(args, [namespace, hf_token, *args.serving_needs], namespace)
        servers = [
            ModelServer(
                f"{name}-model-server" if role == "decode" else f"{name}-model-server-{role}",
                ModelServerArgs(manifests=manifests),
                pulumi.ResourceOptions(parent=self, depends_on=serving_needs),
            )
            for role, manifests in args.model_servers.items()
        ]
        self._observers(args, serving_needs, [router, *servers])
        self.namespace = namespace.metadata.apply(lambda m: str(m.name))
        self.router_endpoint = router.endpoint
        self.register_outputs({"namespace": self.namespace, "routerEndpoint": self.router_endpoint})

    def _namespace(self, args: CacheStackArgs) -> tuple[k8s.core.v1.Namespace, k8s.core.v1.Secret]:
        """The stack's namespace and the HF token Secret in it (a Pulumi secret end to end)."""
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{self._name}-namespace",
            metadata={"name": args.namespace, "labels": {labels.GUIDE_LABEL: labels.GUIDE}},
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
        """The Gateway API Inference Extension CRDs, then the router chart (which creates the InferencePool)."""
        child = pulumi.ResourceOptions(parent=self)
        crds = InferencePoolCrds(
            f"{self._name}-gaie-crds", InferencePoolCrdsArgs(version=args.gaie_version, file=args.gaie_crds_file), child
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
            pulumi.ResourceOptions(parent=self, depends_on=[crds, namespace]),
        )

    def _serving_needs(
        self, args: CacheStackArgs, needs: list[pulumi.Resource], namespace: k8s.core.v1.Namespace
    ) -> list[pulumi.Resource]:
        """What the model servers start after: the tier's claim, the weights, the Mooncake and LMCache daemons,
        their images on every node of the pool."""
        name, serving_needs = self._name, list(needs)
        if args.storage_claim is not None:
            serving_needs.append(
                SharedStorage(
                    f"{name}-storage",
                    SharedStorageArgs(manifests=[args.storage_claim]),
                    pulumi.ResourceOptions(parent=self, depends_on=[namespace, *args.serving_needs]),
                )
            )
        if args.model_cache:  # the weights are on the volume before any model server starts
            serving_needs.append(
                ModelCache(
                    f"{name}-model-cache",
                    ModelCacheArgs(manifests=args.model_cache),
                    pulumi.ResourceOptions(parent=self, depends_on=list(serving_needs)),
                )
            )
        if args.mooncake_master:
            master = MooncakeMaster(
                f"{name}-mooncake-master", MooncakeArgs(args.mooncake_master), pulumi.ResourceOptions(parent=self)
            )
            serving_needs.append(master)
            if args.mooncake_client:
                serving_needs.append(
                    MooncakeClient(
                        f"{name}-mooncake-client",
                        MooncakeArgs(args.mooncake_client),
                        pulumi.ResourceOptions(parent=self, depends_on=[master]),
                    )
                )
        if args.lmcache_server:
            serving_needs.append(
                LMCacheServer(
                    f"{name}-lmcache-server",
                    LMCacheServerArgs(manifests=args.lmcache_server),
                    pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
                )
            )
        if args.prepull:  # on the pool's nodes (its node pool first), while the weights are fetched
            serving_needs.append(
                ImagePrepull(
                    f"{name}-image-prepull",
                    ImagePrepullArgs(manifests=args.prepull),
                    pulumi.ResourceOptions(parent=self, depends_on=[namespace, *args.serving_needs]),
                )
            )
        return serving_needs

    def _observers(
        self, args: CacheStackArgs, serving_needs: list[pulumi.Resource], serving: list[pulumi.Resource]
    ) -> None:
        """Monitoring beside the servers; the verification Job after everything it exercises is up (Pulumi
        awaits Deployment readiness)."""
        if args.monitoring:
            Monitoring(
                f"{self._name}-monitoring",
                MonitoringArgs(manifests=args.monitoring),
                pulumi.ResourceOptions(parent=self, depends_on=serving_needs),
            )
        if args.verification:
            VerificationJob(
                f"{self._name}-verification",
                VerificationJobArgs(manifests=args.verification),
                pulumi.ResourceOptions(parent=self, depends_on=serving),
            )
