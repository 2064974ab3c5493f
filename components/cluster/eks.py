"""EksCluster: a VPC, an EKS control plane with IRSA, a system node group and accelerator node groups."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components.specs import eks_cluster, images
from components.specs.clusters import PoolSpec

EKS_POLICIES = {
    "cluster": ["arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"],
    "node": [
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    ],
}


@dataclass(frozen=True)
class EksClusterArgs:
    name: str
    region: str
    version: str
    vpc_cidr: str
    availability_zones: list[str]
    system_instance_type: str
    system_node_count: int
    deletion_protection: bool
    pools: list[PoolSpec] = field(default_factory=list)
    pull_through: bool = False  # the nodes fill the stack's ECR pull-through caches on a first pull


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
        self._name, self._child = name, pulumi.ResourceOptions(parent=self)
        self._tags = {"llm-d.ai/stack": args.name}
        vpc, private = self._network(args)
        private_ids = [s.id for s in private]
        roles = self._roles()
        if args.pull_through:
            aws.iam.RolePolicy(
                f"{name}-node-pull-through",
                role=roles["node"].name,
                policy=json.dumps(images.pull_through_policy()),
                opts=self._child,
            )
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            **eks_cluster.eks_cluster_args(
                args.name, args.version, roles["cluster"].arn, private_ids, self._tags, args.deletion_protection
            ),
            opts=self._child,
        )
        aws.eks.Addon(f"{name}-vpc-cni", **eks_cluster.eks_vpc_cni_addon_args(cluster.name), opts=self._child)
        issuer = cluster.identities.apply(lambda ids: str(ids[0].oidcs[0].issuer) if ids and ids[0].oidcs else "")
        oidc = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc", url=issuer, client_id_lists=["sts.amazonaws.com"], tags=self._tags, opts=self._child
        )
        node_security_group = cluster.vpc_config.apply(lambda c: str(c.cluster_security_group_id))
        self.node_pools = self._node_groups(args, cluster, roles, private_ids, node_security_group)
        self.vpc_id = vpc.id
        self.private_subnet_ids = private_ids
        self.node_security_group_id = node_security_group
        self.oidc_provider_arn = oidc.arn
        self.oidc_issuer = issuer
        self.cluster_name = cluster.name
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.endpoint, cluster.certificate_authority.data).apply(
                lambda v: eks_cluster.eks_kubeconfig(args.name, args.region, v[0], v[1])
            )
        )
        self.register_outputs({"kubeconfig": self.kubeconfig, "vpcId": self.vpc_id})

    def _network(self, args: EksClusterArgs) -> tuple[aws.ec2.Vpc, list[aws.ec2.Subnet]]:
        """The VPC: public subnets behind an internet gateway (NAT, load balancers), private subnets
        behind the NAT (nodes, pods), one of each per zone. Returns the VPC and the private subnets."""
        name, tags, child = self._name, self._tags, self._child
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=tags,
            opts=child,
        )
        gateway = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tags, opts=child)
        public_cidrs, private_cidrs = eks_cluster.subnet_cidrs(args.vpc_cidr, len(args.availability_zones))

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
        return vpc, subnets("private", private_cidrs, {"nat_gateway_id": nat.id}, "internal-elb")

    def _roles(self) -> dict[str, aws.iam.Role]:
        roles = {}
        for role, policies in EKS_POLICIES.items():
            principal = "eks.amazonaws.com" if role == "cluster" else "ec2.amazonaws.com"
            roles[role] = aws.iam.Role(
                f"{self._name}-{role}",
                assume_role_policy=eks_cluster.assume_role_policy(principal),
                tags=self._tags,
                opts=self._child,
            )
            for i, arn in enumerate(policies):
                aws.iam.RolePolicyAttachment(
                    f"{self._name}-{role}-{i}", role=roles[role].name, policy_arn=arn, opts=self._child
                )
        return roles

    def _node_groups(
        self,
        args: EksClusterArgs,
        cluster: aws.eks.Cluster,
        roles: dict[str, aws.iam.Role],
        private_ids: list[pulumi.Output[str]],
        node_security_group: pulumi.Output[str],
    ) -> dict[str, list[pulumi.Resource]]:
        """The system node group, then per accelerator pool its placement group and launch template
        (when it needs them) and its node group."""
        name, tags, child = self._name, self._tags, self._child
        node_opts = pulumi.ResourceOptions(parent=self, depends_on=list(roles.values()))
        system_args = eks_cluster.eks_system_node_group_args(
            args.name,
            args.system_instance_type,
            args.system_node_count,
            cluster.name,
            roles["node"].arn,
            private_ids,
            tags,
        )
        out: dict[str, list[pulumi.Resource]] = {
            "system": [aws.eks.NodeGroup(f"{name}-system", **system_args, opts=node_opts)]
        }
        for pool in args.pools:
            placement = (
                aws.ec2.PlacementGroup(f"{name}-{pool.key}", strategy="cluster", tags=tags, opts=child)
                if pool.machine.efa
                else None
            )
            template_args = eks_cluster.eks_launch_template_args(
                pool, node_security_group, placement.name if placement else None
            )
            launch_template = None
            if template_args is not None:
                template = aws.ec2.LaunchTemplate(f"{name}-{pool.key}", tags=tags, opts=child, **template_args)
                launch_template = {"id": template.id, "version": template.latest_version.apply(str)}
            node_group = eks_cluster.eks_accelerator_node_group_args(
                pool, cluster.name, roles["node"].arn, private_ids, launch_template, tags
            )
            # The Cluster Autoscaler owns the desired size of an autoscaled group once it exists.
            owned = pulumi.ResourceOptions(ignore_changes=["scalingConfig.desiredSize"]) if pool.bounds else None
            opts = pulumi.ResourceOptions.merge(node_opts, owned) if owned else node_opts
            out[pool.key] = [aws.eks.NodeGroup(f"{name}-{pool.key}", opts=opts, **node_group)]
        return out
