"""EksCluster: a VPC, an EKS control plane with IRSA, a system node group and accelerator node groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components.specs import clusters
from components.specs.clusters import PoolSpec

EKS_POLICIES = {
    "cluster": ["arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"],
    "node": [
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    ],
}
GPU_AMI = "AL2023_x86_64_NVIDIA"  # the EKS-optimized AMI with the NVIDIA driver and container toolkit
SYSTEM_AMI = "AL2023_x86_64_STANDARD"


@dataclass(frozen=True)
class EksClusterArgs:
    name: str
    region: str
    version: str
    vpc_cidr: str
    availability_zones: list[str]
    system_instance_type: str
    system_node_count: int
    pools: list[PoolSpec] = field(default_factory=list)


class EksCluster(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str]  # secret
    node_pools: dict[str, list[pulumi.Resource]]
    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    node_security_group_id: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    cluster_name: pulumi.Output[str]

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {"llm-d.ai/stack": args.name}
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=tags,
            opts=child,
        )
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags, opts=child)
        public_cidrs, private_cidrs = clusters.subnet_cidrs(args.vpc_cidr, len(args.availability_zones))

        def subnets(tier: str, cidrs: list[str], route: dict[str, Any], elb_role: str) -> list[aws.ec2.Subnet]:
            """One subnet per zone, all routed through one table (public: the gateway; private: the NAT)."""
            default_route: Any = {"cidr_block": "0.0.0.0/0", **route}
            table = aws.ec2.RouteTable(f"{name}-{tier}", vpc_id=vpc.id, routes=[default_route], tags=tags, opts=child)
            out = []
            for zone, cidr in zip(args.availability_zones, cidrs, strict=True):
                subnet = aws.ec2.Subnet(
                    f"{name}-{tier}-{zone}",
                    vpc_id=vpc.id,
                    cidr_block=cidr,
                    availability_zone=zone,
                    map_public_ip_on_launch=tier == "public",
                    tags={**tags, f"kubernetes.io/role/{elb_role}": "1"},
                    opts=child,
                )
                aws.ec2.RouteTableAssociation(
                    f"{name}-{tier}-{zone}", subnet_id=subnet.id, route_table_id=table.id, opts=child
                )
                out.append(subnet)
            return out

        public = subnets("public", public_cidrs, {"gateway_id": gateway.id}, "elb")
        nat_ip = aws.ec2.Eip(f"{name}-nat", domain="vpc", tags=tags, opts=child)
        nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=nat_ip.id, subnet_id=public[0].id, tags=tags, opts=child)
        private = subnets("private", private_cidrs, {"nat_gateway_id": nat.id}, "internal-elb")

        roles = {}
        for role, policies in EKS_POLICIES.items():
            principal = "eks.amazonaws.com" if role == "cluster" else "ec2.amazonaws.com"
            roles[role] = aws.iam.Role(
                f"{name}-{role}", assume_role_policy=clusters.assume_role_policy(principal), tags=tags, opts=child
            )
            for i, arn in enumerate(policies):
                aws.iam.RolePolicyAttachment(f"{name}-{role}-{i}", role=roles[role].name, policy_arn=arn, opts=child)
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=args.name,
            version=args.version,
            role_arn=roles["cluster"].arn,
            vpc_config={
                "subnet_ids": [s.id for s in private],
                "endpoint_private_access": True,
                "endpoint_public_access": True,
            },
            access_config={
                "authentication_mode": "API_AND_CONFIG_MAP",
                "bootstrap_cluster_creator_admin_permissions": True,
            },
            tags=tags,
            opts=child,
        )
        issuer = cluster.identities.apply(lambda ids: str(ids[0].oidcs[0].issuer) if ids and ids[0].oidcs else "")
        oidc = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc", url=issuer, client_id_lists=["sts.amazonaws.com"], tags=tags, opts=child
        )
        node_security_group = cluster.vpc_config.apply(lambda c: str(c.cluster_security_group_id))
        node_opts = pulumi.ResourceOptions(parent=self, depends_on=list(roles.values()))
        system = aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster.name,
            node_group_name=f"{args.name}-system",
            node_role_arn=roles["node"].arn,
            subnet_ids=[s.id for s in private],
            instance_types=[args.system_instance_type],
            ami_type=SYSTEM_AMI,
            scaling_config={"desired_size": args.system_node_count, "min_size": 1, "max_size": args.system_node_count},
            labels={clusters.POOL_LABEL: "system"},
            tags=tags,
            opts=node_opts,
        )
        self.node_pools = {"system": [system]}
        for pool in args.pools:
            template: dict[str, Any] = {}
            if pool.machine.efa:  # EFA: RDMA between nodes, in one placement group
                placement = aws.ec2.PlacementGroup(f"{name}-{pool.key}", strategy="cluster", tags=tags, opts=child)
                template["network_interfaces"] = [
                    {"device_index": 0, "interface_type": "efa", "security_groups": [node_security_group]}
                ]
                template["placement"] = {"group_name": placement.name}
            if pool.reservation:  # an EC2 capacity reservation (e.g. a Capacity Block for ML)
                template["capacity_reservation_specification"] = {
                    "capacity_reservation_target": {"capacity_reservation_id": pool.reservation}
                }
            launch_template = (
                aws.ec2.LaunchTemplate(f"{name}-{pool.key}", tags=tags, opts=child, **template) if template else None
            )
            node_group: dict[str, Any] = {
                "cluster_name": cluster.name,
                "node_group_name": pool.name,
                "node_role_arn": roles["node"].arn,
                "subnet_ids": [private[0].id],  # one zone: the GPUs of a pool talk over EFA within it
                "instance_types": [pool.machine.key],
                "ami_type": GPU_AMI,
                "capacity_type": "SPOT" if pool.spot else "ON_DEMAND",
                "scaling_config": {
                    "desired_size": pool.node_count,
                    "min_size": 0,
                    "max_size": max(pool.node_count, 1),
                },
                "labels": pool.node_labels,
                "taints": clusters.cloud_taints(pool.taints),
                "tags": tags,
            }
            if launch_template is not None:
                node_group["launch_template"] = {
                    "id": launch_template.id,
                    "version": launch_template.latest_version.apply(str),
                }
            self.node_pools[pool.key] = [aws.eks.NodeGroup(f"{name}-{pool.key}", opts=node_opts, **node_group)]
        self.vpc_id = vpc.id
        self.private_subnet_ids = [s.id for s in private]
        self.node_security_group_id = node_security_group
        self.oidc_provider_arn = oidc.arn
        self.oidc_issuer = issuer
        self.cluster_name = cluster.name
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.endpoint, cluster.certificate_authority.data).apply(
                lambda v: clusters.eks_kubeconfig(args.name, args.region, v[0], v[1])
            )
        )
        self.register_outputs({"kubeconfig": self.kubeconfig, "vpcId": self.vpc_id})
