"""StackConfig -> Pulumi resources, in dependency order: the cluster and its node pools (when created),
the Kubernetes provider from its kubeconfig, the filesystem tier's backend, then the cache stack."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.cache_stack import CacheStack, CacheStackArgs
from components.cloud_storage import EfsArgs, EfsStorage, LustreArgs, LustreStorage
from components.cluster.addons import Keda, NvidiaDevicePlugin
from components.cluster.autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.cluster.ecr import EcrPullThroughCache, EcrPullThroughCacheArgs
from components.cluster.eks import EksCluster, EksClusterArgs
from components.cluster.gke import GkeCluster, GkeClusterArgs
from components.cluster.registry import ArtifactRegistryMirror, ArtifactRegistryMirrorArgs
from components.specs import keda
from components.specs.clusters import PoolSpec, nvidia_device_plugin_pools, nvidia_device_plugin_values
from components.specs.servers.base import FILES_STORAGE_CLAIM
from components.units import GiB
from stacks.config import StackConfig
from stacks.config.cluster_facts import KUBECONFIG_OUTPUT
from stacks.deploy.protection import lifecycle_transform
from stacks.planning.gateway_route import namespace_labels
from stacks.planning.mirror import Mirror
from stacks.planning.plan import StackPlan
from stacks.planning.workload_builders import lustre_volume_name

STACK_NAME = "llmd"


@dataclass(frozen=True)
class StackOutputs:
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str] | None  # secret; None on an existing cluster


def _gke(config: StackConfig, pools: list[PoolSpec]) -> GkeCluster:
    gke = config.cluster.gke
    assert gke is not None, "checked at config load"
    return GkeCluster(
        f"{STACK_NAME}-gke",
        GkeClusterArgs(
            name=config.cluster.name,
            project=gke.project,
            region=gke.region,
            zone=gke.zone,
            network=gke.network,
            subnetwork=gke.subnetwork,
            release_channel=gke.release_channel,
            master_cidr=gke.master_ipv4_cidr,
            system_machine_type=gke.system_machine_type,
            system_node_count=gke.system_node_count,
            cloud_nat=gke.cloud_nat,
            deletion_protection=gke.deletion_protection or config.protect,
            lustre_csi=config.storage.backend == "gcp-lustre",
            pools=pools,
        ),
    )


def _eks(config: StackConfig, pools: list[PoolSpec], mirror: Mirror | None) -> EksCluster:
    eks = config.cluster.eks
    assert eks is not None, "checked at config load"
    return EksCluster(
        f"{STACK_NAME}-eks",
        EksClusterArgs(
            name=config.cluster.name,
            region=eks.region,
            version=eks.version,
            vpc_cidr=eks.vpc_cidr,
            availability_zones=list(eks.availability_zones),
            system_instance_type=eks.system_instance_type,
            system_node_count=eks.system_node_count,
            deletion_protection=config.protect,
            pools=pools,
            pull_through=mirror is not None and mirror.cloud == "eks" and bool(mirror.registries),
        ),
    )


@dataclass(frozen=True)
class ClusterSide:
    """What a stack that creates or reaches a cluster holds: the cluster (None: an existing one) and the
    Kubernetes provider every object goes through."""

    cluster: GkeCluster | EksCluster | None
    provider: k8s.Provider


def cluster_side(config: StackConfig, pools: list[PoolSpec], mirror: Mirror | None) -> ClusterSide:
    """The cluster and its pools (when created, with the registry caches before any object) and the provider:
    the created cluster's kubeconfig, a cluster stack's (through a StackReference), or the existing one's."""
    cluster: GkeCluster | EksCluster | None = None
    if config.cluster.provider == "gke":
        cluster = _gke(config, pools)
    elif config.cluster.provider == "eks":
        cluster = _eks(config, pools, mirror)
    if cluster is not None:
        # Every mirrored image on a created cluster comes through its caches: they exist first.
        caches = _mirror(mirror)
        before = [cluster, *([caches] if caches else [])]
        provider = k8s.Provider("k8s", kubeconfig=cluster.kubeconfig, opts=pulumi.ResourceOptions(depends_on=before))
    elif config.cluster.provider == "stack" and _exports_kubeconfig(config):
        reference = pulumi.StackReference(f"{STACK_NAME}-cluster", stack_name=config.cluster.stack)
        provider = k8s.Provider("k8s", kubeconfig=reference.require_output(KUBECONFIG_OUTPUT))  # a secret
    else:
        # The kubeconfig may be the file's content (`pulumi config set --secret --path llmd:cluster.kubeconfig`).
        kubeconfig = pulumi.Output.secret(config.cluster.kubeconfig) if config.cluster.kubeconfig else None
        provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=config.cluster.context)
    return ClusterSide(cluster, provider)


def _exports_kubeconfig(config: StackConfig) -> bool:
    """Whether the cluster stack exports a kubeconfig (else it and its serving stacks use the ambient one)."""
    outputs = config.cluster.outputs
    return outputs is not None and outputs.kubeconfig_exported


def compose(stack_plan: StackPlan, hf_token: pulumi.Input[str]) -> StackOutputs:
    config = stack_plan.config
    pulumi.runtime.register_resource_transform(lifecycle_transform(config.protect))
    side = cluster_side(config, stack_plan.pools, stack_plan.mirror)
    cluster, provider = side.cluster, side.provider
    stack = _cache_stack(stack_plan, hf_token, _serving_needs(stack_plan, cluster, provider), provider)
    return StackOutputs(
        namespace=stack.namespace,
        router_endpoint=stack.router_endpoint,
        kubeconfig=cluster.kubeconfig if cluster is not None else None,
    )


def _mirror(mirror: Mirror | None) -> ArtifactRegistryMirror | EcrPullThroughCache | None:
    if mirror is None or (mirror.cloud == "eks" and not mirror.registries):
        return None
    if mirror.cloud == "eks":
        return EcrPullThroughCache(
            f"{STACK_NAME}-mirror", EcrPullThroughCacheArgs(mirror.region, mirror.registries, mirror.credentials)
        )
    return ArtifactRegistryMirror(
        f"{STACK_NAME}-mirror", ArtifactRegistryMirrorArgs(mirror.project, mirror.region, mirror.registries)
    )


def _serving_needs(
    stack_plan: StackPlan, cluster: GkeCluster | EksCluster | None, provider: k8s.Provider
) -> list[pulumi.Resource]:
    """What the model servers wait for: their node pool, the device plugin, the filesystem tier's backend."""
    config = stack_plan.config
    after_cluster = pulumi.ResourceOptions(providers=[provider], depends_on=[cluster] if cluster else [])
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
    return needs + file_system(config, cluster, after_cluster)


def file_system(
    config: StackConfig, cluster: GkeCluster | EksCluster | None, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """The filesystem tier's backend a created cluster gets: Managed Lustre on GKE, EFS on EKS."""
    if config.storage.backend == "gcp-lustre" and config.cluster.gke is not None:
        return [_lustre(config, opts)]
    if config.storage.backend == "aws-efs" and isinstance(cluster, EksCluster):
        return [_efs(config, cluster, opts)]
    return []


def autoscalers(
    config: StackConfig,
    pools: list[PoolSpec],
    mirror: Mirror | None,
    cluster: GkeCluster | EksCluster,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """KEDA (its CRDs before any ScaledObject), its read of GKE Managed Prometheus, and on EKS the Cluster
    Autoscaler for the autoscaled node groups (GKE scales its pools itself)."""
    to_mirror = mirror.image if mirror is not None else None
    out: list[pulumi.Resource] = [Keda(f"{STACK_NAME}-keda", keda.chart_values(mirror=to_mirror), opts)]
    gke = config.cluster.gke
    if gke is not None and config.monitoring.provider == "gke-managed-prometheus":
        out.append(
            gcp.projects.IAMMember(
                f"{STACK_NAME}-keda-metrics-reader",
                project=gke.project,
                role=keda.GMP_READER_ROLE,
                member=keda.gke_operator_member(gke.project),
                opts=pulumi.ResourceOptions(depends_on=[cluster]),
            )
        )
    eks = config.cluster.eks
    if isinstance(cluster, EksCluster) and eks is not None and any(p.bounds for p in pools):
        out.append(
            ClusterAutoscaler(
                f"{STACK_NAME}-cluster-autoscaler",
                ClusterAutoscalerArgs(
                    cluster_name=config.cluster.name,
                    region=eks.region,
                    eks_version=eks.version,
                    oidc_provider_arn=cluster.oidc_provider_arn,
                    oidc_issuer=cluster.oidc_issuer,
                    mirror=to_mirror,
                ),
                opts,
            )
        )
    return out


def _lustre(config: StackConfig, opts: pulumi.ResourceOptions) -> LustreStorage:
    gke = config.cluster.gke
    assert gke is not None, "checked at config load"
    return LustreStorage(
        f"{STACK_NAME}-lustre",
        LustreArgs(
            name=config.cluster.name,
            project=gke.project,
            region=gke.region,
            zone=gke.zone,
            network=gke.network,
            capacity_gib=config.storage.size.bytes // GiB,
            throughput=config.storage.lustre.per_unit_storage_throughput,
            filesystem=config.storage.lustre.filesystem,
            volume_name=lustre_volume_name(claim_namespace(config)),
            claim=(claim_namespace(config), FILES_STORAGE_CLAIM),
        ),
        opts,
    )


def claim_namespace(config: StackConfig) -> str:
    """The namespace whose tier claim binds the Lustre volume: the stack's own, or on a cluster stack the
    serving stack's it names (storage.claim_namespace)."""
    return config.storage.claim_namespace if config.effective_layer == "cluster" else config.namespace


def _efs(config: StackConfig, cluster: EksCluster, opts: pulumi.ResourceOptions) -> EfsStorage:
    return EfsStorage(
        f"{STACK_NAME}-efs",
        EfsArgs(
            name=config.cluster.name,
            vpc_id=cluster.vpc_id,
            subnet_ids=list(cluster.private_subnet_ids),
            node_security_group_id=cluster.node_security_group_id,
            cluster_name=cluster.cluster_name,
            oidc_provider_arn=cluster.oidc_provider_arn,
            oidc_issuer=cluster.oidc_issuer,
        ),
        opts,
    )


def _cache_stack(
    stack_plan: StackPlan,
    hf_token: pulumi.Input[str],
    serving_needs: list[pulumi.Resource],
    provider: k8s.Provider,
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
        ),
        pulumi.ResourceOptions(providers=[provider]),
    )
