"""Cluster, node-pool and kubeconfig arguments as plain data (the cluster components pass them on)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.catalog.labels import NODE_POOL_LABEL
from components.catalog.machines import MachineType
from components.specs.node_autoscaling import NodeBounds, eks_scaling_config, gke_autoscaling

Args = dict[str, Any]
POOL_LABEL = NODE_POOL_LABEL  # created pools label their nodes with their key

# GKE image streaming reads images through the Container File System API, which must be enabled.
IMAGE_STREAMING_API = "containerfilesystem.googleapis.com"


@dataclass(frozen=True)
class PoolSpec:
    """A node pool to create, resolved from the stack config and the machine catalog."""

    key: str
    name: str  # the cloud-side name
    machine: MachineType
    node_count: int
    tpu_topology: str | None = None
    spot: bool = False
    reservation: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    image_streaming: bool = False  # GKE: stream images from Artifact Registry instead of pulling them whole
    bounds: NodeBounds | None = None  # node autoscaling matched to KEDA's replica bounds (None: a fixed count)

    @property
    def node_labels(self) -> dict[str, str]:
        return {POOL_LABEL: self.key, **self.labels}


# --- GKE ------------------------------------------------------------------------------------------

# Kubernetes taint effects as the GKE and EKS node-pool APIs spell them.
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


def cloud_taints(taints: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**t, "effect": TAINT_EFFECTS[t["effect"]]} for t in taints]


SHIELDED = {"enable_secure_boot": True, "enable_integrity_monitoring": True}


def gke_cluster_args(
    name: str,
    project: str,
    region: str,
    network: str,
    subnetwork: str | None,
    release_channel: str,
    master_cidr: str,
    lustre: bool,
    deletion_protection: bool,
) -> Args:
    """A regional cluster: private nodes, Workload Identity, Gateway API, Managed Prometheus, and the
    Managed Lustre CSI driver when the Lustre tier is on. Its default pool is replaced by ours.

    Dataplane V2 enforces the stack's NetworkPolicies. It is on whatever `network_policies.enabled` says:
    the datapath is fixed at creation, so tying it to that switch would replace the cluster on a toggle."""
    return {
        "name": name,
        "project": project,
        "location": region,
        "network": network,
        "subnetwork": subnetwork,
        "release_channel": {"channel": release_channel},
        "remove_default_node_pool": True,
        "initial_node_count": 1,
        "deletion_protection": deletion_protection,
        "networking_mode": "VPC_NATIVE",
        "datapath_provider": "ADVANCED_DATAPATH",
        "ip_allocation_policy": {},
        "private_cluster_config": {
            "enable_private_nodes": True,
            "enable_private_endpoint": False,
            "master_ipv4_cidr_block": master_cidr,
        },
        "workload_identity_config": {"workload_pool": f"{project}.svc.id.goog"},
        "enable_shielded_nodes": True,
        "gateway_api_config": {"channel": "CHANNEL_STANDARD"},
        "monitoring_config": {
            "enable_components": ["SYSTEM_COMPONENTS"],
            "managed_prometheus": {"enabled": True},
        },
        "addons_config": {"lustre_csi_driver_config": {"enabled": lustre}},
        "node_config": {"shielded_instance_config": SHIELDED},
    }


def _gke_node_config(machine_type: str, labels: dict[str, str], spot: bool, reservation: str | None) -> Args:
    config: Args = {
        "machine_type": machine_type,
        "labels": labels,
        "spot": spot,
        "shielded_instance_config": SHIELDED,
        "workload_metadata_config": {"mode": "GKE_METADATA"},
        "oauth_scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    if reservation:
        config["reservation_affinity"] = {
            "consume_reservation_type": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": [reservation],
        }
    return config


def gke_system_pool_args(name: str, region: str, machine_type: str, node_count: int) -> Args:
    return {
        "name": name,
        "location": region,
        "node_count": node_count,
        "management": {"auto_repair": True, "auto_upgrade": True},
        "node_config": _gke_node_config(machine_type, {POOL_LABEL: "system"}, False, None),
    }


def gke_accelerator_pool_args(pool: PoolSpec, region: str, zone: str) -> Args:
    node_config = _gke_node_config(pool.machine.key, pool.node_labels, pool.spot, pool.reservation)
    if pool.taints:
        node_config["taints"] = cloud_taints(pool.taints)
    if pool.machine.gke_accelerator:  # GPUs: GKE installs and manages the driver
        node_config["guest_accelerators"] = [
            {
                "type": pool.machine.gke_accelerator,
                "count": pool.machine.devices_per_node,
                "gpu_driver_installation_config": {"gpu_driver_version": "LATEST"},
            }
        ]
        node_config["gvnic"] = {"enabled": True}
    if pool.image_streaming:  # images from the stack's Artifact Registry mirror start before they are pulled
        node_config["gcfs_config"] = {"enabled": True}
    args: Args = {
        "name": pool.name,
        "location": region,
        "node_locations": [zone],  # accelerators are zonal
        **(
            {"initial_node_count": pool.bounds.initial_nodes, "autoscaling": gke_autoscaling(pool.bounds)}
            if pool.bounds
            else {"node_count": pool.node_count}
        ),
        "management": {"auto_repair": True, "auto_upgrade": True},
        "node_config": node_config,
    }
    topology = pool.tpu_topology or pool.machine.tpu_topology
    if topology:  # a TPU slice: hosts placed together in the topology the pods select
        args["placement_policy"] = {"type": "COMPACT", "tpu_topology": topology}
    return args


def gke_kubeconfig(name: str, endpoint: str | None, ca_certificate: str | None) -> str:
    """Authenticates through gke-gcloud-auth-plugin (Application Default Credentials)."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        }
    }
    return _kubeconfig(name, f"https://{endpoint}", ca_certificate, user)


# --- EKS ------------------------------------------------------------------------------------------


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


def eks_launch_template_args(pool: PoolSpec, security_group: Any, placement_group: Any | None) -> Args | None:
    """What a pool's nodes need beyond the node group's own arguments (None: no launch template).

    EFA machines get an EFA interface and the pool's cluster placement group (`placement_group`, the
    group's name; required for them); a reservation targets the EC2 capacity reservation (e.g. a
    Capacity Block for ML)."""
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
    return template or None


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


def nvidia_device_plugin_pools(pools: list[PoolSpec]) -> list[PoolSpec]:
    """The created pools whose nodes need the NVIDIA device plugin to advertise `nvidia.com/gpu` (EKS
    GPU nodes; GKE installs its own plugin with the driver)."""
    return [p for p in pools if p.machine.needs_nvidia_device_plugin]


def nvidia_device_plugin_values(pools: list[PoolSpec]) -> Args:
    """The chart's values: one DaemonSet on the nodes of every such pool, tolerating their taints.
    `affinity` replaces the chart's default, which asks for Node Feature Discovery labels (pci-10de)
    that EKS nodes do not carry."""
    keys = sorted({p.key for p in pools})
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for taint in (t for p in pools for t in p.taints):
        toleration = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
        if toleration not in tolerations:
            tolerations.append(toleration)
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": keys}]}]
                }
            }
        },
        "tolerations": tolerations,
    }


def eks_kubeconfig(name: str, region: str, endpoint: str | None, ca_data: str | None) -> str:
    """Authenticates through `aws eks get-token` (the caller's AWS credentials)."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
        }
    }
    return _kubeconfig(name, str(endpoint), ca_data, user)


def _kubeconfig(name: str, server: str, ca_data: str | None, user: Args) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data or ""}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
            "users": [{"name": name, "user": user}],
        },
        sort_keys=False,
    )
