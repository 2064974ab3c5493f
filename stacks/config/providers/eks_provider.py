"""EKS: a created cluster and its managed node groups, EFS, ECR pull-through cache rules."""

from __future__ import annotations

from components.specs import images
from stacks.config import StackConfig, formats, provider_kinds
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.providers.cluster_provider import ClusterBill, ClusterProvider, Extra, cluster_nodes


def mirror(config: StackConfig, registries: set[str]) -> MirrorFacts | None:
    """ECR pull-through rules for the account; a registry ECR cannot cache is pulled directly."""
    eks = config.cluster.eks
    if config.images.mirror == "off" or eks is None or not eks.account_id:
        return None
    credentials = {str(k): v for k, v in config.images.ecr_credentials.items()}
    reasons = {r: images.ecr_cached(r, credentials) for r in sorted(registries)}
    return MirrorFacts(
        cloud="eks",
        region=eks.region,
        project=eks.account_id,
        registries=[r for r, why in reasons.items() if why is None],
        direct={r: why for r, why in reasons.items() if why is not None},
        credentials={r: a for r, a in credentials.items() if r in registries},
    )


def bill(config: StackConfig) -> ClusterBill | None:
    eks = config.cluster.eks
    if eks is None:
        return None
    count = f"{eks.system_node_count} (the system node group)"
    every = cluster_nodes(config, eks.system_node_count)
    extras = (
        Extra("NAT gateway and its Elastic IP", "eks-nat-gateway", 1, "per gateway-hour and per public IPv4 hour"),
        Extra(
            f"root volumes of its {every} nodes", "eks-root-volume", every, "per node-hour, the EBS volume its AMI sets"
        ),
    )
    usage = ["NAT gateway data processing: per GB its private nodes send through it"]
    if config.images.mirror != "off" and eks.account_id:  # its pull-through cache rules
        usage.append("ECR storage: per GB-month of the images its pull-through cache rules store")
    return ClusterBill(
        eks.region, "eks-cluster", eks.system_instance_type, eks.system_node_count, count, extras, tuple(usage)
    )


def unmirrored(config: StackConfig) -> str:
    if config.images.mirror == "off":
        return "from the upstream registries (`images.mirror: off`)"
    return "from the upstream registries, pulled whole by each node (set `cluster.eks.account_id` for ECR rules)"


EKS = ClusterProvider(
    kind=provider_kinds.EKS,
    creates=True,
    title="EKS",
    settings="eks",
    name_limit=63,
    # EKS sets eks.amazonaws.com/ node labels itself.
    reserved_label_prefixes=("kubernetes.io", "k8s.io", "eks.amazonaws.com", "karpenter.sh"),
    reservation=formats.ec2_capacity_reservation,
    storage_backends=("aws-efs",),
    network_policy_enforcer="VPC CNI network policy agent (`enableNetworkPolicy`)",
    ecr_credentials=True,
    mirror=mirror,
    unmirrored=unmirrored,
    bill=bill,
)
