"""Node autoscaling on created clusters, matched to KEDA's replica bounds: a pool's node bounds (GKE node-pool
autoscaling, EKS node-group scaling with the Cluster Autoscaler), the Cluster Autoscaler's values and IAM.

A pool holds at most its `node_count` nodes (what `autoscaling.max_replicas` was fitted to) and at least the
nodes `autoscaling.min_replicas` needs; a TPU slice (a pool per slice) scales whole: 0 or all of its hosts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from components.catalog import versions
from components.specs import security

CLUSTER_AUTOSCALER_NAMESPACE = "kube-system"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"


@dataclass(frozen=True)
class NodeBounds:
    min_nodes: int
    initial_nodes: int
    max_nodes: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_nodes <= self.initial_nodes <= self.max_nodes:
            raise ValueError(f"node bounds {self.min_nodes} <= {self.initial_nodes} <= {self.max_nodes} do not hold")


def pool_bounds(node_count: int, pods_per_node: int, pods_per_replica: int, min_replicas: int) -> NodeBounds:
    """A pool of interchangeable nodes: from the nodes `min_replicas` fill up to all of them; it starts with
    all of them (the initial count is force-new on GKE: it must not follow `cache.replicas`)."""
    need = math.ceil(min_replicas * pods_per_replica / pods_per_node)
    return NodeBounds(min(need, node_count), node_count, node_count)


def slice_bounds(slice_index: int, hosts: int, min_replicas: int) -> NodeBounds:
    """One TPU slice's pool (a replica per slice): held whole for the first `min_replicas` slices, else 0..all."""
    return NodeBounds(hosts if slice_index < min_replicas else 0, hosts, hosts)


def gke_autoscaling(bounds: NodeBounds) -> dict[str, Any]:
    """GKE's node-pool autoscaling (the pool is zonal: totals equal the per-zone counts)."""
    return {
        "total_min_node_count": bounds.min_nodes,
        "total_max_node_count": bounds.max_nodes,
        "location_policy": "ANY",
    }


def eks_scaling_config(bounds: NodeBounds) -> dict[str, int]:
    return {"desired_size": bounds.initial_nodes, "min_size": bounds.min_nodes, "max_size": bounds.max_nodes}


# The Cluster Autoscaler's own least-privilege policy for auto-discovered node groups (kubernetes/autoscaler,
# cluster-autoscaler/cloudprovider/aws/README.md, "Full Cluster Autoscaler Features Policy" without the
# launch-template reads it needs only for scale-from-zero of unmanaged groups).
CLUSTER_AUTOSCALER_ACTIONS = {
    "read": [
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeAutoScalingInstances",
        "autoscaling:DescribeLaunchConfigurations",
        "autoscaling:DescribeScalingActivities",
        "autoscaling:DescribeTags",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:GetInstanceTypesFromInstanceRequirements",
        "eks:DescribeNodegroup",
    ],
    "scale": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
}


def cluster_autoscaler_policy(cluster_name: str) -> str:
    """Reads anywhere; scaling only the groups tagged as this cluster's (EKS tags its managed node groups'
    Auto Scaling groups with `k8s.io/cluster-autoscaler/<cluster>`)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Action": CLUSTER_AUTOSCALER_ACTIONS["read"], "Resource": "*"},
                {
                    "Effect": "Allow",
                    "Action": CLUSTER_AUTOSCALER_ACTIONS["scale"],
                    "Resource": "*",
                    "Condition": {
                        "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}
                    },
                },
            ],
        },
        sort_keys=True,
    )


def cluster_autoscaler_values(
    cluster_name: str, region: str, eks_version: str, role_arn: Any, mirror: Any = None
) -> dict[str, Any]:
    """Auto-discovery of the cluster's node groups, the image of the control plane's minor, the IRSA role on
    its service account, and the program's container hardening."""
    image = f"{versions.CLUSTER_AUTOSCALER_IMAGE_REPOSITORY}:{versions.CLUSTER_AUTOSCALER_TAGS[eks_version]}"
    image = mirror(image) if mirror else image
    repository, _, tag = image.rpartition(":")
    context = {
        **security.container_context(security.Subject({}, {}, {"name": "cluster-autoscaler"})),
        "readOnlyRootFilesystem": True,
    }
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"},
        "rbac": {
            "serviceAccount": {
                "create": True,
                "name": CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
                "annotations": {"eks.amazonaws.com/role-arn": role_arn},
            }
        },
        # A node with a model server's emptyDir (its compile cache) is still one to scale down; the least
        # waste of accelerators picks among similar groups.
        "extraArgs": {
            "skip-nodes-with-local-storage": False,
            "expander": "least-waste",
            "balance-similar-node-groups": True,
        },
        "containerSecurityContext": context,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "600Mi"}},
    }
