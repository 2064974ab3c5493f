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
from components.specs.clusters import nvidia_device_plugin_pools, nvidia_device_plugin_values
from components.specs.servers.base import FILES_STORAGE_CLAIM
from components.units import GiB
from stacks.deploy.protection import lifecycle_transform
from stacks.planning.plan import StackPlan
from stacks.planning.workload_builders import lustre_volume_name

STACK_NAME = "llmd"


@dataclass(frozen=True)
class StackOutputs:
    namespace: pulumi.Output[str]
    router_endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str] | None  # secret; None on an existing cluster


def _gke(stack_plan: StackPlan) -> GkeCluster:
    config = stack_plan.config
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
            pools=stack_plan.pools,
        ),
    )


def _eks(stack_plan: StackPlan) -> EksCluster:
    config = stack_plan.config
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
            pools=stack_plan.pools,
            pull_through=stack_plan.mirror is not None
            and stack_plan.mirror.cloud == "eks"
            and bool(stack_plan.mirror.registries),
        ),
    )


def compose(stack_plan: StackPlan, hf_token: pulumi.Input[str]) -> StackOutputs:
    config = stack_plan.config
    pulumi.runtime.register_resource_transform(lifecycle_transform(config.protect))
    cluster: GkeCluster | EksCluster | None = None
    if config.cluster.provider == "gke":
        cluster = _gke(stack_plan)
    elif config.cluster.provider == "eks":
        cluster = _eks(stack_plan)
    if cluster is not None:
        # Every mirrored image on a created cluster comes through its caches: they exist first.
        mirror = _mirror(stack_plan)
        before = [cluster, *([mirror] if mirror else [])]
        provider = k8s.Provider("k8s", kubeconfig=cluster.kubeconfig, opts=pulumi.ResourceOptions(depends_on=before))
    else:
        # The kubeconfig may be the file's content (`pulumi config set --secret --path llmd:cluster.kubeconfig`).
        kubeconfig = pulumi.Output.secret(config.cluster.kubeconfig) if config.cluster.kubeconfig else None
        provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=config.cluster.context)
    stack = _cache_stack(stack_plan, hf_token, _serving_needs(stack_plan, cluster, provider), provider)
    return StackOutputs(
        namespace=stack.namespace,
        router_endpoint=stack.router_endpoint,
        kubeconfig=cluster.kubeconfig if cluster is not None else None,
    )


def _mirror(stack_plan: StackPlan) -> ArtifactRegistryMirror | EcrPullThroughCache | None:
    mirror = stack_plan.mirror
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
        needs += _autoscalers(stack_plan, cluster, after_cluster)
    if config.storage.backend == "gcp-lustre" and config.cluster.gke is not None:
        needs.append(_lustre(stack_plan, after_cluster))
    if config.storage.backend == "aws-efs" and isinstance(cluster, EksCluster):
        needs.append(_efs(stack_plan, cluster, after_cluster))
    return needs


def _autoscalers(
    stack_plan: StackPlan, cluster: GkeCluster | EksCluster, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """KEDA (its CRDs before any ScaledObject), its read of GKE Managed Prometheus, and on EKS the Cluster
    Autoscaler for the autoscaled node groups (GKE scales its pools itself)."""
    config, mirror = stack_plan.config, stack_plan.mirror
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
    if isinstance(cluster, EksCluster) and eks is not None and any(p.bounds for p in stack_plan.pools):
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


def _lustre(stack_plan: StackPlan, opts: pulumi.ResourceOptions) -> LustreStorage:
    config = stack_plan.config
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
            volume_name=lustre_volume_name(config),
            claim=(config.namespace, FILES_STORAGE_CLAIM),
        ),
        opts,
    )


def _efs(stack_plan: StackPlan, cluster: EksCluster, opts: pulumi.ResourceOptions) -> EfsStorage:
    return EfsStorage(
        f"{STACK_NAME}-efs",
        EfsArgs(
            name=stack_plan.config.cluster.name,
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
        ),
        pulumi.ResourceOptions(providers=[provider]),
    )
