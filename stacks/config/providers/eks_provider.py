"""EKS: a created cluster and its managed node groups, EFS, ECR pull-through cache rules."""

from __future__ import annotations

from collections import Counter

from components.catalog import cluster_extras
from components.catalog.machines import MACHINES
from components.specs import images
from components.specs.eks_cluster import takes_launch_template
from stacks.config import StackConfig, formats, provider_kinds
from stacks.config.cluster_facts import MirrorFacts
from stacks.config.providers.cluster_provider import ClusterBill, ClusterProvider, Extra, per_hour, per_month


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
    gateways, addresses = cluster_extras.EKS_NAT_GATEWAYS, cluster_extras.EKS_NAT_ADDRESSES
    extras = [
        per_hour("NAT gateway", "eks-nat-gateway", gateways, f"{gateways} (in the first zone)", "per gateway-hour"),
        per_hour("the NAT gateway's Elastic IP", "aws-public-ipv4", addresses, f"{addresses}", "per address-hour"),
        *_root_volumes(config, eks.system_node_count),
    ]
    usage = ["NAT gateway data processing: per GB its private nodes send through it"]
    if config.images.mirror != "off" and eks.account_id:  # its pull-through cache rules
        usage.append("ECR storage: per GB-month of the images its pull-through cache rules store")
    return ClusterBill(
        eks.region, "eks-cluster", eks.system_instance_type, eks.system_node_count, count, tuple(extras), tuple(usage)
    )


def _root_volumes(config: StackConfig, system_nodes: int) -> list[Extra]:
    """Each node's root volume: the AMI's (gp3) under a launch template of ours, else EKS's own template's (gp2);
    20 GiB either way (the system node group has no launch template)."""
    nodes: Counter[cluster_extras.EbsVolume] = Counter({cluster_extras.EKS_OWN_TEMPLATE_VOLUME: system_nodes})
    for pool in config.node_pools.values():
        ours = takes_launch_template(MACHINES[str(pool.machine_type)].efa, pool.reservation)
        volume = cluster_extras.EKS_AMI_ROOT_VOLUME if ours else cluster_extras.EKS_OWN_TEMPLATE_VOLUME
        nodes[volume] += pool.node_count * pool.slices
    gib = cluster_extras.EKS_ROOT_VOLUME_GIB
    whose = {
        cluster_extras.EKS_AMI_ROOT_VOLUME: "the AMI's root volume (our launch template sets none)",
        cluster_extras.EKS_OWN_TEMPLATE_VOLUME: "EKS's own launch template's root volume",
    }
    return [
        per_month(
            f"root volume{_s(count)} of {count} node{_s(count)}: {volume}, {gib} GiB each",
            f"ebs-{volume}",
            count,
            gib,
            f"per GB-month provisioned: {whose[volume]}",
        )
        for volume, count in sorted(nodes.items(), reverse=True)
        if count
    ]


def _s(count: int) -> str:
    return "" if count == 1 else "s"


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
    network_policy_enforcer="VPC CNI network policy agent (`enableNetworkPolicy`)",
    ecr_credentials=True,
    mirror=mirror,
    unmirrored=unmirrored,
    bill=bill,
)
