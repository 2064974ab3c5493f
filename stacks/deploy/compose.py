"""StackConfig -> Pulumi resources, in dependency order: the cluster and its node pools (when created),
the Kubernetes provider from its kubeconfig, the filesystem tier's backend, then the cache stack."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.cache_stack import CacheStack, CacheStackArgs
from components.cluster.addons import Keda, NvidiaDevicePlugin
from components.specs import keda
from components.specs.clusters import PoolSpec
from components.specs.device_plugin import nvidia_device_plugin_pools, nvidia_device_plugin_values
from stacks.config import StackConfig
from stacks.config.cluster_facts import KUBECONFIG_OUTPUT
from stacks.config.providers import provider_of
from stacks.deploy.cloud_side import STACK_NAME as STACK_NAME  # the stack's resource prefix, named here too
from stacks.deploy.cloud_side import CloudSide, CreatedCluster
from stacks.deploy.eks_side import EKS_SIDE
from stacks.deploy.gke_side import GKE_SIDE
from stacks.deploy.protection import lifecycle_transform
from stacks.planning.gateway_route import namespace_labels
from stacks.planning.mirror import Mirror
from stacks.planning.plan import StackPlan

# The created clusters' clouds, by provider key.
CLOUD_SIDES: dict[str, CloudSide] = {side.key: side for side in (GKE_SIDE, EKS_SIDE)}


@dataclass(frozen=True)
class StackOutputs:
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str] | None  # secret; None on an existing cluster


@dataclass(frozen=True)
class ClusterSide:
    """What a stack that creates or reaches a cluster holds: the cluster (None: an existing one) and the
    Kubernetes provider every object goes through."""

    cluster: CreatedCluster | None
    provider: k8s.Provider


def cluster_side(
    config: StackConfig, pools: list[PoolSpec], mirror: Mirror | None, parent: pulumi.Resource | None = None
) -> ClusterSide:
    """The cluster and its pools (when created, with the registry caches before any object) and the provider:
    the created cluster's kubeconfig, a cluster stack's (through a StackReference), or the existing one's."""
    side = CLOUD_SIDES.get(provider_of(config).key)
    child = pulumi.ResourceOptions(parent=parent)
    cluster = side.cluster(config, pools, mirror) if side is not None else None
    if cluster is not None:
        # Every mirrored image on a created cluster comes through its caches: they exist first.
        assert side is not None, "a created cluster has its cloud's side"
        caches = side.caches(mirror) if mirror is not None else None
        before = [cluster, *([caches] if caches else [])]
        provider = k8s.Provider(
            "k8s", kubeconfig=cluster.kubeconfig, opts=pulumi.ResourceOptions(depends_on=before, parent=parent)
        )
    elif provider_of(config).reads_cluster_stack and _exports_kubeconfig(config):
        reference = pulumi.StackReference(f"{STACK_NAME}-cluster", stack_name=config.cluster.stack, opts=child)
        provider = k8s.Provider("k8s", kubeconfig=reference.require_output(KUBECONFIG_OUTPUT), opts=child)  # a secret
    else:
        # The kubeconfig may be the file's content (`pulumi config set --secret --path llmd:cluster.kubeconfig`).
        kubeconfig = pulumi.Output.secret(config.cluster.kubeconfig) if config.cluster.kubeconfig else None
        provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=config.cluster.context, opts=child)
    return ClusterSide(cluster, provider)


def _exports_kubeconfig(config: StackConfig) -> bool:
    """Whether the cluster stack exports a kubeconfig (else it and its serving stacks use the ambient one)."""
    outputs = config.cluster.outputs
    return outputs is not None and outputs.kubeconfig_exported


def compose(
    stack_plan: StackPlan, hf_token: pulumi.Input[str], parent: pulumi.ComponentResource | None = None
) -> StackOutputs:
    """Every resource of the stack; under `parent` (a component of the package, whose own options carry the
    lifecycle transform to its children) or at the stack's root (the transform registered for the whole stack)."""
    config = stack_plan.config
    if parent is None:
        pulumi.runtime.register_resource_transform(lifecycle_transform(config.protect))
    side = cluster_side(config, stack_plan.pools, stack_plan.mirror, parent)
    cluster, provider = side.cluster, side.provider
    needs = _serving_needs(stack_plan, cluster, provider, parent)
    stack = _cache_stack(stack_plan, hf_token, needs, provider, parent)
    return StackOutputs(
        namespace=stack.namespace,
        router_endpoint=stack.router_endpoint,
        kubeconfig=cluster.kubeconfig if cluster is not None else None,
    )


def _serving_needs(
    stack_plan: StackPlan, cluster: CreatedCluster | None, provider: k8s.Provider, parent: pulumi.Resource | None
) -> list[pulumi.Resource]:
    """What the model servers wait for: their node pool, the device plugin, the filesystem tier's backend."""
    config = stack_plan.config
    after_cluster = pulumi.ResourceOptions(providers=[provider], depends_on=[cluster] if cluster else [], parent=parent)
    needs: list[pulumi.Resource] = []
    if cluster is not None and config.cache.node_pool:
        needs += cluster.node_pools[config.cache.node_pool]
    gpu_pools = nvidia_device_plugin_pools(stack_plan.pools)
    if cluster is not None and gpu_pools:  # one DaemonSet over every GPU pool's nodes
        needs.append(
            NvidiaDevicePlugin(
                f"{STACK_NAME}-nvidia-device-plugin", nvidia_device_plugin_values(gpu_pools), after_cluster
            )
        )
    if cluster is not None and stack_plan.autoscaling is not None:
        needs += autoscalers(config, stack_plan.pools, stack_plan.mirror, cluster, after_cluster)
    return needs + file_system(config, cluster, stack_plan.provisioned_mibps, after_cluster)


def file_system(
    config: StackConfig, cluster: CreatedCluster | None, provisioned_mibps: int | None, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """The filesystem tier's backend a created cluster gets from its cloud (its side's builder for the stack's
    `storage.backend`: Managed Lustre on GKE, EFS on EKS); none for a class the cluster has."""
    side = CLOUD_SIDES.get(provider_of(config).key)
    build = side.file_systems.get(config.storage.backend) if side is not None else None
    return [build(config, cluster, provisioned_mibps, opts)] if build is not None and cluster is not None else []


def autoscalers(
    config: StackConfig,
    pools: list[PoolSpec],
    mirror: Mirror | None,
    cluster: CreatedCluster,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """KEDA (its CRDs before any ScaledObject) and what the cloud adds for it: the read of GKE Managed
    Prometheus, on EKS the Cluster Autoscaler for the autoscaled node groups (GKE scales its pools itself)."""
    to_mirror = mirror.image if mirror is not None else None
    out: list[pulumi.Resource] = [Keda(f"{STACK_NAME}-keda", keda.chart_values(mirror=to_mirror), opts)]
    side = CLOUD_SIDES.get(provider_of(config).key)
    return out + (side.autoscaling(config, pools, mirror, cluster, opts) if side is not None else [])


def _cache_stack(
    stack_plan: StackPlan,
    hf_token: pulumi.Input[str],
    serving_needs: list[pulumi.Resource],
    provider: k8s.Provider,
    parent: pulumi.Resource | None,
) -> CacheStack:
    config = stack_plan.config
    return CacheStack(
        STACK_NAME,
        CacheStackArgs(
            namespace=config.namespace,
            hf_token=hf_token,
            gaie_version=config.router.gaie_version,
            gaie_crds_file=config.router.gaie_crds_file,
            router_release=config.router.release,
            router_chart=config.router.chart_file or config.router.chart,
            router_version=config.router.version,
            router_values=stack_plan.router_values,
            router_policies=stack_plan.router_policies,
            workloads=stack_plan.workloads,
            serving_needs=serving_needs,
            crds=config.effective_layer != "serving",
            namespace_labels=namespace_labels(config),
            namespace_annotations=stack_plan.namespace_annotations,
        ),
        pulumi.ResourceOptions(providers=[provider], parent=parent),
    )
