"""ClusterAutoscaler: scales an EKS cluster's autoscaled node groups (GKE scales its own pools), through the
upstream chart, with an IRSA role that may scale only this cluster's groups."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.catalog import versions
from components.cluster.addons import upstream_chart
from components.k8s_objects import child_options
from components.specs import eks_cluster, node_autoscaling


@dataclass(frozen=True)
class ClusterAutoscalerArgs:
    cluster_name: str
    region: str
    eks_version: str
    oidc_provider_arn: pulumi.Input[str]
    oidc_issuer: pulumi.Input[str]
    mirror: Any = None  # an image to its mirrored reference (the plan's Mirror.image), or None


class ClusterAutoscaler(pulumi.ComponentResource):
    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llmd:cluster:ClusterAutoscaler", name, None, opts)
        aws_child = pulumi.ResourceOptions(parent=self)
        namespace, account = (
            node_autoscaling.CLUSTER_AUTOSCALER_NAMESPACE,
            node_autoscaling.CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
        )
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=pulumi.Output.all(args.oidc_provider_arn, args.oidc_issuer).apply(
                lambda v: eks_cluster.irsa_policy(v[0], v[1], namespace, account)
            ),
            opts=aws_child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=role.id,
            policy=node_autoscaling.cluster_autoscaler_policy(args.cluster_name),
            opts=aws_child,
        )
        values = node_autoscaling.cluster_autoscaler_values(
            args.cluster_name, args.region, args.eks_version, role.arn, args.mirror
        )
        upstream_chart(
            name,
            versions.CLUSTER_AUTOSCALER_CHART,
            versions.CLUSTER_AUTOSCALER_CHART_REPO,
            versions.CLUSTER_AUTOSCALER_CHART_VERSION,
            namespace,
            values,
            child_options(self, opts, policy),
        )
        self.register_outputs({"roleArn": role.arn})
