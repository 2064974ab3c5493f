"""One record per cloud resource type the program creates or reads, by its Pulumi type token: how long its
creation takes at worst (the create timeout above it, stacks/planning/cold_starts.py), whether it holds state
that `protect` keeps (stacks/deploy/protection.py) and the change plan calls data at risk, the inputs whose
change replaces it (stacks/review/changeplan.py), the storage backend it is (the payoff rule's bandwidth,
policies/checks/tier_payoff.py) and what the offline render's mocks answer on its creation
(stacks/review/offline.py). A new cloud resource type is one record here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog.startup_figures import MINUTE


@dataclass(frozen=True)
class CloudResource:
    token: str  # the Pulumi type token, e.g. gcp:lustre/instance:Instance
    # The documented worst case of its creation, in seconds (each create timeout exceeds it by half); None: fast.
    create_worst_seconds: int | None = None
    # It holds data a rename or `pulumi destroy` would delete: protected (`protect`), and a change plan that
    # replaces or removes it says the data is at risk.
    holds_data: bool = False
    protected: bool = False  # `protect` (a created cluster too, whose loss takes every stack on it)
    replace_on: tuple[str, ...] = ()  # the provider schema's replace-on-change (ForceNew) inputs this program sets
    storage_backend: str | None = None  # the `storage.backend` it is (components/catalog/storage_backends.py)
    # What the cloud computes on create, played by the offline render's mocks with recognisably fake values, so
    # that what the program derives from them (kubeconfigs, volume handles, IRSA policies) renders.
    offline_outputs: Mapping[str, Any] = field(default_factory=dict)


LUSTRE = CloudResource(
    "gcp:lustre/instance:Instance",
    create_worst_seconds=80 * MINUTE,  # Google Cloud Managed Lustre: creation P99 40-80 minutes (its docs)
    holds_data=True,
    protected=True,
    replace_on=("instanceId", "location", "filesystem", "network", "project"),
    storage_backend="gcp-lustre",
    offline_outputs={"mountPoint": "10.90.0.2@tcp:/kvcache"},
)
EFS = CloudResource(
    "aws:efs/fileSystem:FileSystem",
    holds_data=True,
    protected=True,
    replace_on=("creationToken", "encrypted", "kmsKeyId", "performanceMode"),
    storage_backend="aws-efs",
)
GKE_CLUSTER = CloudResource(
    "gcp:container/cluster:Cluster",
    create_worst_seconds=30 * MINUTE,  # GKE regional clusters and GPU/TPU node pools: 20-30 minutes is common
    protected=True,
    replace_on=("name", "location", "project", "network"),
    offline_outputs={"endpoint": "203.0.113.10", "masterAuth": {"clusterCaCertificate": "b2ZmbGluZS1yZW5kZXI="}},
)
GKE_NODE_POOL = CloudResource("gcp:container/nodePool:NodePool", create_worst_seconds=30 * MINUTE)
EKS_CLUSTER = CloudResource(
    "aws:eks/cluster:Cluster",
    create_worst_seconds=20 * MINUTE,  # EKS: cluster creation 10-20 minutes, managed GPU node groups 20+
    protected=True,
    replace_on=("name",),
    offline_outputs={
        "endpoint": "https://offline-render.eks.example",
        "certificateAuthority": {"data": "b2ZmbGluZS1yZW5kZXI="},
        "identities": [{"oidcs": [{"issuer": "https://oidc.eks.example/id/OFFLINE"}]}],
        "vpcConfig": {"clusterSecurityGroupId": "sg-offline"},
    },
)
EKS_NODE_GROUP = CloudResource("aws:eks/nodeGroup:NodeGroup", create_worst_seconds=20 * MINUTE)
GLOBAL_ADDRESS = CloudResource("gcp:compute/globalAddress:GlobalAddress", offline_outputs={"address": "10.90.0.0"})
IAM_ROLE = CloudResource("aws:iam/role:Role", offline_outputs={"arn": "arn:aws:iam::000000000000:role/offline-render"})
OIDC_PROVIDER = CloudResource(
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
    offline_outputs={"arn": "arn:aws:iam::000000000000:oidc-provider/oidc.eks.example/id/OFFLINE"},
)
LAUNCH_TEMPLATE = CloudResource("aws:ec2/launchTemplate:LaunchTemplate", offline_outputs={"latestVersion": 1})

CLOUD_RESOURCES: dict[str, CloudResource] = {
    r.token: r
    for r in (
        LUSTRE,
        EFS,
        GKE_CLUSTER,
        GKE_NODE_POOL,
        EKS_CLUSTER,
        EKS_NODE_GROUP,
        GLOBAL_ADDRESS,
        IAM_ROLE,
        OIDC_PROVIDER,
        LAUNCH_TEMPLATE,
    )
}
