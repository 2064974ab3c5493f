"""EKS's side of a created cluster: the cluster and its node groups, ECR pull-through cache rules, EFS, and the
Cluster Autoscaler for the autoscaled node groups."""

from __future__ import annotations

import pulumi

from components.catalog.storage_backends import AWS_EFS
from components.cloud_storage import EfsArgs, EfsStorage
from components.cluster.autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.cluster.ecr import EcrPullThroughCache, EcrPullThroughCacheArgs
from components.cluster.eks import EksCluster, EksClusterArgs
from components.specs.clusters import PoolSpec
from stacks.config import StackConfig
from stacks.config.backend_choice import mode_of
from stacks.deploy.cloud_side import STACK_NAME, CloudSide, CreatedCluster
from stacks.planning.mirror import Mirror


def cluster(config: StackConfig, pools: list[PoolSpec], mirror: Mirror | None) -> EksCluster:
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
            pull_through=mirror is not None and bool(mirror.registries),
        ),
    )


def caches(mirror: Mirror) -> pulumi.Resource | None:
    """ECR pull-through cache rules; none where ECR caches none of the registries."""
    if not mirror.registries:
        return None
    return EcrPullThroughCache(
        f"{STACK_NAME}-mirror", EcrPullThroughCacheArgs(mirror.region, mirror.registries, mirror.credentials)
    )


def _efs(
    config: StackConfig, cluster: CreatedCluster, provisioned_mibps: int | None, opts: pulumi.ResourceOptions
) -> EfsStorage:
    """EFS, in the throughput mode the stack runs (provisioned: at the plan's MiB/s)."""
    assert isinstance(cluster, EksCluster), "the EKS side creates on an EKS cluster"
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
            throughput_mode=mode_of(config).key,
            provisioned_mibps=provisioned_mibps,
        ),
        opts,
    )


def autoscaling(
    config: StackConfig,
    pools: list[PoolSpec],
    mirror: Mirror | None,
    cluster: CreatedCluster,
    opts: pulumi.ResourceOptions,
) -> list[pulumi.Resource]:
    """The Cluster Autoscaler for the autoscaled node groups."""
    eks = config.cluster.eks
    if not isinstance(cluster, EksCluster) or eks is None or not any(p.bounds for p in pools):
        return []
    return [
        ClusterAutoscaler(
            f"{STACK_NAME}-cluster-autoscaler",
            ClusterAutoscalerArgs(
                cluster_name=config.cluster.name,
                region=eks.region,
                eks_version=eks.version,
                oidc_provider_arn=cluster.oidc_provider_arn,
                oidc_issuer=cluster.oidc_issuer,
                mirror=mirror.image if mirror is not None else None,
            ),
            opts,
        )
    ]


EKS_SIDE = CloudSide("eks", cluster, caches, {AWS_EFS.key: _efs}, autoscaling)
