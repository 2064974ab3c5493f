"""An EKS cluster's, its VPC's and its node groups' arguments, IAM trust policies, and its kubeconfig, as plain
data (components/cluster/eks.py passes them on)."""

from __future__ import annotations

import json
from typing import Any

from components.specs.clusters import POOL_LABEL, Args, PoolSpec, cloud_taints, kubeconfig
from components.specs.node_autoscaling import eks_scaling_config


def assume_role_policy(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        },
        sort_keys=True,
    )


def irsa_policy(oidc_provider_arn: str, oidc_issuer: str, namespace: str, service_account: str) -> str:
    """Only this Kubernetes ServiceAccount may assume the role (IAM Roles for Service Accounts)."""
    issuer = oidc_issuer.removeprefix("https://")
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": oidc_provider_arn},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {
                        "StringEquals": {
                            f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                            f"{issuer}:aud": "sts.amazonaws.com",
                        }
                    },
                }
            ],
        },
        sort_keys=True,
    )


def subnet_cidrs(vpc_cidr: str, count: int) -> tuple[list[str], list[str]]:
    """Public /20s (NAT, load balancers) and private /18s (nodes, pods) of a /16, one each per zone."""
    a, b = vpc_cidr.split(".")[:2]
    public = [f"{a}.{b}.{16 * i}.0/20" for i in range(count)]
    private = [f"{a}.{b}.{64 * (i + 1)}.0/18" for i in range(count)]
    return public, private


GPU_AMI = "AL2023_x86_64_NVIDIA"  # the EKS-optimized AMI with the NVIDIA driver and container toolkit
SYSTEM_AMI = "AL2023_x86_64_STANDARD"


def eks_cluster_args(
    name: str, version: str, role_arn: Any, subnet_ids: list[Any], tags: dict[str, str], deletion_protection: bool
) -> Args:
    """The control plane in the private subnets; its endpoint reachable from both sides."""
    return {
        "name": name,
        "version": version,
        "deletion_protection": deletion_protection,
        "role_arn": role_arn,
        "vpc_config": {"subnet_ids": subnet_ids, "endpoint_private_access": True, "endpoint_public_access": True},
        "access_config": {
            "authentication_mode": "API_AND_CONFIG_MAP",
            "bootstrap_cluster_creator_admin_permissions": True,
        },
        "tags": tags,
    }


def eks_vpc_cni_addon_args(cluster_name: Any) -> Args:
    """The VPC CNI as a managed add-on with its network policy agent on, so the stack's NetworkPolicies are
    enforced. On whatever `network_policies.enabled` says: the agent alone admits everything, and a toggle
    then changes only the policies. The add-on takes over the CNI EKS installs by itself (OVERWRITE)."""
    return {
        "cluster_name": cluster_name,
        "addon_name": "vpc-cni",
        "configuration_values": json.dumps({"enableNetworkPolicy": "true"}),
        "resolve_conflicts_on_create": "OVERWRITE",
        "resolve_conflicts_on_update": "OVERWRITE",
    }


def eks_system_node_group_args(
    name: str,
    instance_type: str,
    node_count: int,
    cluster_name: Any,
    node_role_arn: Any,
    subnet_ids: list[Any],
    tags: dict[str, str],
) -> Args:
    """The system node group, spread over every zone (it holds no accelerators)."""
    return {
        "cluster_name": cluster_name,
        "node_group_name": f"{name}-system",
        "node_role_arn": node_role_arn,
        "subnet_ids": subnet_ids,
        "instance_types": [instance_type],
        "ami_type": SYSTEM_AMI,
        "scaling_config": {"desired_size": node_count, "min_size": 1, "max_size": node_count},
        "labels": {POOL_LABEL: "system"},
        "tags": tags,
    }


def takes_launch_template(efa: bool, reservation: str | None) -> bool:
    """Whether a pool's node group gets a launch template of ours (`eks_launch_template_args`): an EFA machine or a
    capacity reservation. Without one EKS's own template applies, its root volume among it (the cost reads which)."""
    return efa or bool(reservation)


def eks_launch_template_args(pool: PoolSpec, security_group: Any, placement_group: Any | None) -> Args | None:
    """What a pool's nodes need beyond the node group's own arguments (None: no launch template).

    EFA machines get an EFA interface and the pool's cluster placement group (`placement_group`, the
    group's name; required for them); a reservation targets the EC2 capacity reservation (e.g. a
    Capacity Block for ML). It sets no block device: the nodes boot from the AMI's root volume."""
    if not takes_launch_template(pool.machine.efa, pool.reservation):
        return None
    template: Args = {}
    if pool.machine.efa:
        assert placement_group is not None, "an EFA pool runs in its cluster placement group"
        template["network_interfaces"] = [
            {"device_index": 0, "interface_type": "efa", "security_groups": [security_group]}
        ]
        template["placement"] = {"group_name": placement_group}
    if pool.reservation:
        template["capacity_reservation_specification"] = {
            "capacity_reservation_target": {"capacity_reservation_id": pool.reservation}
        }
    return template


def eks_accelerator_node_group_args(
    pool: PoolSpec,
    cluster_name: Any,
    node_role_arn: Any,
    zone_subnet_ids: list[Any],
    launch_template: dict[str, Any] | None,
    tags: dict[str, str],
) -> Args:
    """An accelerator pool's node group in ONE zone (the first private subnet): a cluster placement
    group and EFA only span one, and the pool's GPUs talk over EFA within it."""
    args: Args = {
        "cluster_name": cluster_name,
        "node_group_name": pool.name,
        "node_role_arn": node_role_arn,
        "subnet_ids": zone_subnet_ids[:1],
        "instance_types": [pool.machine.key],
        "ami_type": GPU_AMI,
        "capacity_type": "SPOT" if pool.spot else "ON_DEMAND",
        "scaling_config": (
            eks_scaling_config(pool.bounds)
            if pool.bounds
            else {"desired_size": pool.node_count, "min_size": 0, "max_size": max(pool.node_count, 1)}
        ),
        "labels": pool.node_labels,
        "taints": cloud_taints(pool.taints),
        "tags": tags,
    }
    if launch_template is not None:
        args["launch_template"] = launch_template
    return args


def eks_kubeconfig(name: str, region: str, endpoint: str | None, ca_data: str | None) -> str:
    """Authenticates through `aws eks get-token` (the caller's AWS credentials)."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
        }
    }
    return kubeconfig(name, str(endpoint), ca_data, user)
